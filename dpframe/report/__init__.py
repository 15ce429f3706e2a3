"""Private summaries of a whole frame: ``df.dp.describe()``, its HTML report and the ``describe`` command.

* :mod:`dpframe.report.describe` -- the private twin of ``DataFrame.describe()`` and its budget rule.
* :mod:`dpframe.report.html` -- a self-contained HTML report (tables, ledger, SVG histograms).
* :mod:`dpframe.report.cli` -- ``dpframe describe data.csv --schema schema.json --epsilon 1``.
"""

from __future__ import annotations

from dpframe.report.describe import describe

__all__ = ["describe"]
