"""Shared fixtures of the CPU suite."""

from __future__ import annotations

import os

import pytest

import adaptqr
from adaptqr import log
from adaptqr.registry import REGISTRY

# tests/interpret/ runs in its own TRITON_INTERPRET=1 session (test_interpret_session.py).
collect_ignore = [] if os.environ.get("TRITON_INTERPRET") == "1" else ["interpret"]

#: Variables that change what the dispatcher chooses or records.
DISPATCH_VARS = ("ADAPTQR_LOG", "ADAPTQR_LOG_SIZE", "ADAPTQR_PATH", "ADAPTQR_DETECT")


@pytest.fixture
def clean_dispatch(monkeypatch):
    """No dispatch variable set, the log off and empty, and the paths a test registers
    removed afterwards."""
    for var in DISPATCH_VARS:
        monkeypatch.delenv(var, raising=False)
    before = set(adaptqr.paths_registered())
    log.disable()
    adaptqr.clear_decisions()
    yield
    for name in set(REGISTRY.names()) - before:
        REGISTRY.remove(name)
    log.disable()
    adaptqr.clear_decisions()
