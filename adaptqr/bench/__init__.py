"""The benchmark harness behind ``adaptqr bench`` and ``adaptqr check``.

Modules, one job each: :mod:`~adaptqr.bench.cases` (which cases, k per case),
:mod:`~adaptqr.bench.timing` (the qr_v2 repeat loop and stop rule),
:mod:`~adaptqr.bench.stats`, :mod:`~adaptqr.bench.memory` (extra device memory),
:mod:`~adaptqr.bench.baseline` (torch.geqrf figures and their cache),
:mod:`~adaptqr.bench.decisions` (paths taken), :mod:`~adaptqr.bench.runner` (a whole run
into a JSON record), :mod:`~adaptqr.bench.report` (table, JSON/CSV, plot, schema),
:mod:`~adaptqr.bench.check` (``adaptqr check``), :mod:`~adaptqr.bench.env`.

Example::

    >>> from adaptqr.bench.cases import resolve   # doctest: +SKIP
    >>> len(resolve("bench"))                     # doctest: +SKIP
    12
"""
