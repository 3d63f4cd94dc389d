"""What the interpreter tests share: the cases' record book, a path's minimal ``info`` and a
spy on a module's kernel launches."""

from __future__ import annotations


class Records(dict):
    """``{name: record}``: :meth:`add` files a record under its ``"name"``."""

    def add(self, record: dict) -> None:
        self[record["name"]] = record


class Info:
    """A path's ``info`` carrying only ``features``."""

    def __init__(self, features=None):
        self.features = features if features is not None else {}


def launch_spy(monkeypatch, module, name, what):
    """Record ``what(launch keywords)`` for each launch of the kernel ``module.<name>``,
    which still runs; returns the list."""
    seen = []
    real = getattr(module, name)

    class Spy:
        def __getitem__(self, grid):
            def launch(*a, **kw):
                seen.append(what(kw))
                return real[grid](*a, **kw)
            return launch

    monkeypatch.setattr(module, name, Spy())
    return seen
