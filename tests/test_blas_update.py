"""paths/blas_update.py on the CPU (torch ops only): the group's T merged from its panels'
T by doubling, and the rest update, against the reflectors applied one at a time."""

from __future__ import annotations

import pytest
import torch

from adaptqr import originals
from adaptqr.paths.blas_update import group_t, rest_update
from adaptqr.qform import panel_t


def _reflectors(B, rows, g, seed):
    """``Vt`` (B, g, rows) unit upper trapezoidal and ``tau`` (B, g) of a real geqrf."""
    gen = torch.Generator().manual_seed(seed)
    h, tau = originals.geqrf(torch.randn(B, rows, g, generator=gen, dtype=torch.float64))
    Vt = h.mT.triu(1)
    Vt.diagonal(dim1=-2, dim2=-1).fill_(1.0)
    return Vt, tau


def _panel_ts(Vt, tau, nb):
    B, g, _ = Vt.shape
    return torch.stack([panel_t(Vt[:, p:p + nb].mT, tau[:, p:p + nb]) for p in range(0, g, nb)], 1)


@pytest.mark.parametrize("G,nb", [(2, 4), (4, 8), (8, 2)])
def test_group_t_is_the_groups_compact_wy(G, nb):
    Vt, tau = _reflectors(3, 50, G * nb, seed=G)
    T = group_t(Vt, _panel_ts(Vt, tau, nb), None)
    torch.testing.assert_close(T, panel_t(Vt.mT, tau), rtol=0, atol=1e-12)


def test_group_t_zeroes_dead_reflectors_whatever_their_panels_t_holds():
    # Columns at or past n_active: tau 0, and a skipped panel's T is unwritten memory.
    Vt, tau = _reflectors(2, 40, 16, seed=7)
    na = torch.tensor([16, 6])
    live = torch.arange(16)[None, :] < na[:, None]
    tau = torch.where(live, tau, 0.0)
    TWg = _panel_ts(Vt, tau, 4)
    TWg[1, 2:] = float("nan")  # matrix 1's panels from column 8 on were skipped
    T = group_t(Vt, TWg, live)
    assert torch.isfinite(T).all()
    torch.testing.assert_close(T, panel_t(Vt.mT, tau), rtol=0, atol=1e-12)


def test_rest_update_applies_q_transpose():
    # H's columns as Ht's rows; the group's panels from column 4, applied to columns 20-30.
    B, m, n, nb, npan, k0 = 2, 36, 30, 4, 4, 4
    gen = torch.Generator().manual_seed(11)
    Ht = torch.randn(B, n, m, generator=gen, dtype=torch.float64)
    Vt, tau = _reflectors(B, m - k0, nb * npan, seed=12)
    Ht[:, k0:k0 + nb * npan, k0:] = Vt  # the reflectors' storage (diagonal: R, not read)
    TW = torch.full((B, n // nb + 1, nb, nb), float("nan"), dtype=torch.float64)
    TW[:, 1:1 + npan] = _panel_ts(Vt, tau, nb)
    C = Ht[:, 20:30, k0:].mT.clone()                       # (B, m - k0, 10)
    want = C.clone()  # Q^T C = H_g ... H_1 C, one reflector at a time
    for j in range(nb * npan):
        v = Vt[:, j, :, None]
        want -= tau[:, j, None, None] * v @ (v.mT @ want)
    before = Ht.clone()
    rest_update(Ht, TW, None, k0, npan, nb, 20, 30)
    torch.testing.assert_close(Ht[:, 20:30, k0:].mT, want, rtol=0, atol=1e-12)
    mask = torch.ones_like(Ht, dtype=torch.bool)
    mask[:, 20:30, k0:] = False
    assert torch.equal(Ht[mask], before[mask])  # nothing else written
