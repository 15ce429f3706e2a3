"""Private summaries of a whole frame: ``df.dp.describe()``, its HTML report and the ``describe`` command.

* :mod:`dpframe.report.describe` -- the private twin of ``DataFrame.describe()`` and its budget rule.
* :mod:`dpframe.report.cells` -- released cells as text, with the digits their noise justifies.
* :mod:`dpframe.report.tables` -- released tables as a terminal or a notebook shows them, with intervals and
  marks.
* :mod:`dpframe.report.html` -- a self-contained HTML report (tables, figures, the ledger); needs the
  ``report`` extra (Jinja2 and matplotlib).
* :mod:`dpframe.report.cli` -- ``dpframe describe data.csv --schema schema.json --epsilon 1``.
"""

from __future__ import annotations

import importlib.util

from dpframe.report.describe import describe

__all__ = ["INSTALL_HINT", "describe", "require_report_dependencies"]

INSTALL_HINT = (
    'pip install "dpframe[report]" (from a source checkout of dpframe: pip install -e ".[report]"), '
    "or pip install jinja2 matplotlib"
)
REPORT_DEPENDENCIES = ("jinja2", "matplotlib")


def require_report_dependencies() -> None:
    """Raise an ImportError that says what to install when the HTML report's dependencies are missing.

    Cheap (nothing is imported), so a command can check before it spends any budget.

    >>> require_report_dependencies()  # installed with the report (or test) extra
    """
    missing = [name for name in REPORT_DEPENDENCIES if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"the HTML report needs jinja2 and matplotlib, and {' and '.join(missing)} "
                          f"{'is' if len(missing) == 1 else 'are'} not installed: {INSTALL_HINT}")
