"""Dry runs: a query planned to the point of charging, and stopped there.

While :func:`dry_run` is active, any attempt to charge or reserve raises
:class:`DryRunStop` instead, so nothing is charged and, since every query
charges before it reads data, no data is read. The query layer
(:mod:`dpframe.queries.preview`) turns the stop into an accuracy preview.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from dpframe.accounting.costs import Cost

_ACTIVE: ContextVar[bool] = ContextVar("dpframe_dry_run", default=False)


class DryRunStop(Exception):
    """Raised in place of a charge during a dry run; carries what was about to be charged."""

    def __init__(self, cost: Cost, query: str, plan: object | None = None) -> None:
        super().__init__(f"dry run: {query} stopped before charging")
        self.cost, self.query, self.plan = cost, query, plan


@contextmanager
def dry_run() -> Iterator[None]:
    """Within this block, charges stop the query (:class:`DryRunStop`) instead of spending.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1, 2, 3]}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    >>> with dry_run():
    ...     try:
    ...         p.dp.count(epsilon=0.5)
    ...     except DryRunStop as stop:
    ...         print(stop.query, stop.cost.epsilon)
    count 1/2
    >>> p.dp.budget.spent.epsilon.exact
    Fraction(0, 1)
    """
    token = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def stop_if_dry_run(cost: Cost, query: str, plan: object | None = None) -> None:
    """Raise :class:`DryRunStop` if a dry run is active (call before charging anything)."""
    if _ACTIVE.get():
        raise DryRunStop(cost, query, plan)
