"""The algebra the CUDA C Gram panel implements (paths/kernels/panel_cuda.py, ``GRAM=1``;
EXPERIMENTS.md H22), step for step in torch on the CPU: CholeskyQR2 of a panel, then
LAPACK ``orhr_col``'s sign-choosing LU of ``Q_top - S``, give geqrf's reflectors, taus, R
and the panel's T; and the kernel's acceptance tests reject the panels they must. The
kernel itself needs a GPU (tests/gpu/test_householder_gpu.py, ``gram_panel``)."""

from __future__ import annotations

import torch

GRAM_TOL, GRAM_TOL2, GRAM_TAU_MAX = 2.0 ** -10, 0.5, 2 - 2.0 ** -12


def _chol(G, tol):
    """Upper R with R^T R = G by the kernel's right-looking steps; ok: every pivot keeps
    more than ``tol`` of its column's squared norm."""
    G, b = G.clone(), G.shape[0]
    d0 = G.diagonal().clone()
    R = torch.zeros_like(G)
    ok = True
    for k in range(b):
        ok = ok and bool(G[k, k] > tol * d0[k])
        R[k, k:] = G[k, k:] / G[k, k].clamp_min(0).sqrt()
        G[k + 1:, k + 1:] -= torch.outer(R[k, k + 1:], R[k, k + 1:])
    return R, ok


def gram_panel(P):
    """``(out, tau, T, ok)``: geqrf's storage of the panel ``P`` (m x b), its taus and T."""
    b = P.shape[1]
    R1, ok1 = _chol(P.T @ P, GRAM_TOL)
    Q1 = torch.linalg.solve_triangular(R1, P, upper=True, left=False)
    R2, ok2 = _chol(Q1.T @ Q1, GRAM_TOL2)
    Q = torch.linalg.solve_triangular(R2, Q1, upper=True, left=False)
    M, s = Q[:b].clone(), torch.empty(b, dtype=P.dtype)
    for j in range(b):  # s_j = -sign(pivot), sign(0) = +1, as dorhr_col
        s[j] = -1.0 if M[j, j] >= 0 else 1.0
        M[j, j] -= s[j]
        M[j + 1:, j] /= M[j, j]
        M[j + 1:, j + 1:] -= torch.outer(M[j + 1:, j], M[j, j + 1:])
    U, L1 = M.triu(), M.tril(-1) + torch.eye(b, dtype=P.dtype)
    V2 = torch.linalg.solve_triangular(U, Q[b:], upper=True, left=False)
    T = torch.linalg.solve_triangular(L1.T, -U * s, upper=True, left=False)  # T L1^T = -U S
    tau = T.diagonal().clone()
    out = torch.cat([M.tril(-1) + (s[:, None] * (R2 @ R1)).triu(), V2])
    return out, tau, T, ok1 and ok2 and bool((tau <= GRAM_TAU_MAX).all())


def _larft(V, tau):
    b = tau.shape[0]
    T = torch.zeros(b, b, dtype=V.dtype)
    for i in range(b):
        T[:i, i] = -tau[i] * T[:i, :i] @ (V[:, :i].T @ V[:, i])
        T[i, i] = tau[i]
    return T


def test_gram_panel_is_geqrf():
    g = torch.Generator().manual_seed(3)
    for m, b, dtype, tol in ((512, 32, torch.float32, 2e-5), (40, 32, torch.float32, 2e-5),
                             (300, 32, torch.float64, 1e-12)):
        P = torch.randn(m, b, generator=g, dtype=dtype)
        out, tau, T, ok = gram_panel(P)
        ref, tau_ref = torch.geqrf(P.double())
        assert ok
        assert float((out.double() - ref).abs().max()) < tol * 10
        assert float((tau.double() - tau_ref).abs().max()) < tol
        V = out.tril(-1) + torch.eye(m, b, dtype=dtype)
        assert torch.allclose(T, _larft(V, tau), atol=tol * 10)


def test_gram_panel_rejects():
    g = torch.Generator().manual_seed(4)
    P = torch.randn(256, 32, generator=g, dtype=torch.float64)
    bad = P.clone()
    bad[:, 9] = bad[:, 3]                          # a repeated column: a zero pivot
    assert not gram_panel(bad)[3]
    bad = P.clone()
    bad[:, 5] = bad[:, 4] + 1e-3 * bad[:, 5]        # nearly dependent: pivot ~1e-6 of its norm
    assert not gram_panel(bad)[3]
    bad = P.clone()
    bad[1:, 0] = 1e-4 * bad[1:, 0]                 # column 0 nearly e_0: tau near 2
    assert not gram_panel(bad)[3]
    assert gram_panel(P)[3]
