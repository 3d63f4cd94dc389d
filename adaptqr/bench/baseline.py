"""The torch.geqrf baseline: measured like adaptqr, or read from a cache keyed by device and torch version.

torch.geqrf factors a batch as a host loop of cuSOLVER calls (~1 s for 640x512 on an
H200), so remeasuring it every run would dominate the bench. Measured figures are stored
in ``<cache_dir>/<device-slug>__torch-<version>.json``; a file measured on the H200 is
committed so that it need not be remeasured. ``adaptqr bench --baseline-refresh``
remeasures.

Example::

    >>> import tempfile
    >>> from adaptqr.bench import baseline
    >>> tmp = tempfile.TemporaryDirectory()
    >>> d = tmp.name
    >>> path = baseline.save(d, "NVIDIA H200", "2.11.0", {"20x32-dense-c1-s1": {"median_ms": 0.3, "mean_ms": 0.31}})
    >>> baseline.load(d, "NVIDIA H200", "2.11.0")["20x32-dense-c1-s1"]["median_ms"]
    0.3
    >>> baseline.load(d, "NVIDIA H200", "2.12.0")
    {}
    >>> tmp.cleanup()
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import tempfile
from collections.abc import Sequence

import torch

from adaptqr import originals
from adaptqr.bench.memory import MIB, extra_memory_bytes
from adaptqr.bench.timing import StopRule, time_calls

# torch.geqrf is ~1 s a call at 640x512: at least 3 repeats (the stop rule needs them), at
# most 8 s of repeats a case, unless the case is that slow on its own.
BASELINE_RULE = StopRule(max_repeats=50, budget_s=8.0, min_repeats=3)
BASELINE_RULE_QUICK = StopRule(max_repeats=5, budget_s=2.0, min_repeats=3)

SCHEMA = "adaptqr-baseline/1"


def slug(text: str) -> str:
    """``NVIDIA H200`` -> ``nvidia-h200``: safe in file names."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "unknown"


def cache_path(cache_dir: str, device_name: str, torch_version: str) -> str:
    return os.path.join(cache_dir, f"{slug(device_name)}__torch-{slug(torch_version)}.json")


def load(cache_dir: str, device_name: str, torch_version: str) -> dict[str, dict]:
    """Cached entries by case key; empty when there is no file for this device and torch version."""
    path = cache_path(cache_dir, device_name, torch_version)
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"baseline cache {path!r} is unreadable ({e}); delete it or run with "
                         "--baseline-refresh") from None
    # The file name is a slug, so two devices could share it: trust only an exact match.
    if data.get("device") != device_name or data.get("torch") != torch_version:
        return {}
    return dict(data.get("cases", {}))


def save(cache_dir: str, device_name: str, torch_version: str, entries: dict[str, dict]) -> str:
    """Merge ``entries`` into the cache file (new entries win) and write it atomically."""
    os.makedirs(cache_dir, exist_ok=True)
    path = cache_path(cache_dir, device_name, torch_version)
    merged = load(cache_dir, device_name, torch_version)
    merged.update(entries)
    data = {"schema": SCHEMA, "device": device_name, "torch": torch_version, "cases": dict(sorted(merged.items()))}
    fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return path


def measure(inputs: Sequence[torch.Tensor], rule: StopRule = BASELINE_RULE, fn=None) -> dict:
    """Time torch's ``fn`` (default torch.geqrf) on the rotating inputs (warm-up call on each
    first) and one call's extra memory."""
    fn = fn or originals.geqrf
    for a in inputs:
        fn(a)
    t = time_calls(fn, inputs, rule)
    extra = extra_memory_bytes(fn, inputs[0])
    return {
        "mean_ms": t.mean_ms,
        "median_ms": t.median_ms,
        "times_ms": list(t.times_ms),
        "repeats": len(t.times_ms),
        "k": t.k,
        "extra_mib": None if extra is None else extra / MIB,
        "measured": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
