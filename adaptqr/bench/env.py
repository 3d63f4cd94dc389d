"""Where a result was measured: device name, library versions, git commit.

Example::

    >>> import torch
    >>> from adaptqr.bench.env import device_name, versions
    >>> device_name(torch.device("cpu")).startswith("cpu")
    True
    >>> {'torch', 'triton', 'cupy'} <= set(versions())
    True
"""

from __future__ import annotations

import os
import platform
import subprocess

import torch


def device_name(device: torch.device) -> str:
    """``NVIDIA H200`` for a CUDA device; ``cpu (<processor>)`` otherwise."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    proc = platform.processor() or platform.machine() or "unknown"
    return f"cpu ({proc})"


def versions() -> dict[str, str | None]:
    """Versions of python, torch, triton, cupy (None when not importable), adaptqr."""
    out: dict[str, str | None] = {"python": platform.python_version(), "torch": torch.__version__}
    for mod in ("triton", "cupy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # cupy without a driver raises other than ImportError
            out[mod] = None
    import adaptqr

    out["adaptqr"] = getattr(adaptqr, "__version__", None)
    out["cuda"] = torch.version.cuda
    return out


def _git(args: list[str], cwd: str) -> str | None:
    try:
        # safe.directory: a copied checkout owned by another user is still ours to read.
        r = subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, capture_output=True, text=True,
                           timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def git_info(cwd: str | None = None) -> dict[str, object]:
    """``{"commit": sha or "unknown", "dirty": bool or None}`` of the adaptqr checkout.

    ``ADAPTQR_COMMIT`` wins when set: whoever copied a working tree to a GPU machine says
    which commit it is, and a stale ``.git`` travelling with the copy would say otherwise
    (the first runs of 2026-11-29's second session recorded the session's first commit).
    Else looks in the checkout the package was imported from, then in the current directory
    (a non-editable install runs from site-packages, next to no git repository).
    """
    from adaptqr import config

    hint = config.commit_hint()
    if hint:
        return {"commit": hint, "dirty": None, "source": "ADAPTQR_COMMIT"}
    if cwd is None:
        import adaptqr

        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(adaptqr.__file__)))
        candidates = [pkg_root, os.getcwd()]
    else:
        candidates = [cwd]
    for where in candidates:
        commit = _git(["rev-parse", "HEAD"], where)
        if commit is not None:
            status = _git(["status", "--porcelain", "--untracked-files=no"], where)
            return {"commit": commit, "dirty": None if status is None else bool(status)}
    return {"commit": "unknown", "dirty": None}
