"""Which path(s) adaptqr took for a call, read from the dispatch decisions log (adaptqr.log).

A record (``adaptqr.decisions()[-1]``) has ``plan``: matrix class -> path name, and
``counts``: matrix class -> how many matrices of the batch had it. The paths taken are
the plan's paths of the classes that occurred, with their matrix counts.

Example::

    >>> from adaptqr.bench.decisions import paths_of_record
    >>> paths_of_record({"plan": {"dense": "householder", "rankdef": "tail_skip"},
    ...                  "counts": {"dense": 600, "rankdef": 40}})
    ['householder:600', 'tail_skip:40']
    >>> paths_of_record({"plan": {"dense": "torch"}})
    ['torch']
"""

from __future__ import annotations

from collections.abc import Callable


def paths_of_record(rec) -> list[str] | None:
    """``path:count`` per path taken (most matrices first), or the plan's paths without counts."""
    if rec is None:
        return None
    if not isinstance(rec, dict):
        to_dict = getattr(rec, "to_dict", None)
        rec = to_dict() if to_dict is not None else vars(rec)
    plan = rec.get("plan")
    if not isinstance(plan, dict) or not plan:
        return None
    counts = rec.get("counts")
    if not isinstance(counts, dict):
        return list(dict.fromkeys(str(p) for p in plan.values()))
    per_path: dict[str, int] = {}
    for cls, n in counts.items():
        if n and cls in plan:
            per_path[str(plan[cls])] = per_path.get(str(plan[cls]), 0) + int(n)
    if not per_path:
        return list(dict.fromkeys(str(p) for p in plan.values()))
    return [f"{p}:{n}" for p, n in sorted(per_path.items(), key=lambda kv: -kv[1])]


def paths_taken(fn: Callable, a) -> list[str] | None:
    """Call ``fn(a)`` once with the decisions log on; the paths its record names, or None.

    The log is switched on only around this call (and left as it was), so the timed calls
    run with the log as configured. Reading the record syncs with the host: not a hot path.
    """
    try:
        import adaptqr
        from adaptqr import log
    except ImportError:
        return None
    was_on = log.active()
    try:
        log.enable()
        fn(a)
        recs = adaptqr.decisions()
    except Exception:
        return None
    finally:
        if not was_on:
            log.disable()
    return paths_of_record(recs[-1]) if recs else None
