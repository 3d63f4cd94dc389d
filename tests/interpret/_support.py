"""What the interpreter tests share: the cases' record book and a path's minimal ``info``."""

from __future__ import annotations


class Records(dict):
    """``{name: record}``: :meth:`add` files a record under its ``"name"``."""

    def add(self, record: dict) -> None:
        self[record["name"]] = record


class Info:
    """A path's ``info`` carrying only ``features``."""

    def __init__(self, features=None):
        self.features = features if features is not None else {}
