"""Runs tests/interpret/ in one pytest session under TRITON_INTERPRET=1 (the variable must be
set before triton is imported, so not in this process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def test_interpreter_session():
    env = dict(os.environ, TRITON_INTERPRET="1")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(TESTS / "interpret")], capture_output=True, text=True, env=env,
                       cwd=TESTS.parent, timeout=3000)
    assert p.returncode == 0, (p.stdout[-6000:] + p.stderr[-2000:])
    print(p.stdout.splitlines()[-1] if p.stdout else "")
