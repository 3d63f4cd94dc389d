"""Which path(s) adaptqr took for a call, read from the dispatch decisions log.

The log's record format belongs to the dispatcher; this reader accepts a record that is a
dict or an object and looks for ``paths``, ``path``, ``plan`` or ``route`` in that order,
so a change there degrades the bench's "path" column to ``?`` instead of breaking it.

Example::

    >>> from adaptqr.bench.decisions import paths_of_record
    >>> paths_of_record({"paths": ["small_fused", "householder"]})
    ['small_fused', 'householder']
    >>> paths_of_record({"plan": {"paths": ["reference"]}})
    ['reference']
"""

from __future__ import annotations

from collections.abc import Callable

_KEYS = ("paths", "path", "plan", "route")


def _get(obj, key):
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def paths_of_record(rec, _depth: int = 0) -> list[str] | None:
    """Path names named by one decisions-log record, or None when it names none."""
    if rec is None or _depth > 3:
        return None
    for key in _KEYS:
        v = _get(rec, key)
        if v is None or v == "" or v == []:
            continue
        if isinstance(v, str):
            return [v]
        if isinstance(v, (list, tuple)):
            names = []
            for item in v:
                if isinstance(item, str):
                    names.append(item)
                else:
                    sub = paths_of_record(item, _depth + 1)
                    name = _get(item, "name")
                    names.extend(sub or ([str(name)] if name is not None else []))
            if names:
                return list(dict.fromkeys(names))
            continue
        sub = paths_of_record(v, _depth + 1)
        if sub:
            return sub
        name = _get(v, "name")
        if name is not None:
            return [str(name)]
    return None


def paths_taken(fn: Callable, a) -> list[str] | None:
    """Call ``fn(a)`` once with the decisions log on and return the paths its last record names.

    Returns None when the dispatcher offers no log or the record names no path. The log is
    switched on only around this call, so the timed calls run with it as configured.
    """
    import adaptqr

    decisions = getattr(adaptqr, "decisions", None)
    if decisions is None:
        return None
    log = getattr(adaptqr, "log", None)
    enable = getattr(log, "enable", None)
    disable = getattr(log, "disable", None)
    try:
        if enable is not None:
            enable()
        fn(a)
        recs = decisions()
    except Exception:
        return None
    finally:
        if disable is not None:
            try:
                disable()
            except Exception:
                pass
    if not recs:
        return None
    try:
        last = recs[-1]
    except (TypeError, IndexError, KeyError):
        return None
    return paths_of_record(last)
