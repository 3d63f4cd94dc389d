"""Run a test script under the Triton interpreter in a subprocess.

TRITON_INTERPRET=1 must be set before triton is imported and must not leak into other test
files, so each interpreter test file runs its cases in one subprocess that prints one JSON
line per case (a ``"name"`` key each); the test functions assert on the records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run_script(script: str, timeout: float = 600) -> dict[str, dict]:
    """``{name: record}`` from the JSON lines ``script`` prints (it fails the test when the
    script fails, with its stderr)."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       env=env, timeout=timeout)
    assert p.returncode == 0, p.stderr[-4000:]
    return {d["name"]: d for d in map(json.loads, p.stdout.splitlines())}
