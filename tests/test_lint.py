"""ruff over the repository, with the rules of pyproject's [tool.ruff] (CI runs it here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_ruff_is_clean():
    root = Path(__file__).parent.parent
    p = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(root)],
                       capture_output=True, text=True, cwd=root)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-1000:]
