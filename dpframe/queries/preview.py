"""Accuracy before spending: a query's noise and interval width, from its plan alone.

:func:`preview` runs a query in a dry run (:mod:`dpframe.accounting.dryrun`):
it validates the arguments and builds the plan exactly as the real query
would, and stops where the real query would charge, so nothing is charged
and no data is read. The noise of each measurement is known from the plan
(the mechanism, its scale and the grid it is released on), so its standard
deviation and 95% half-width are exact, as OpenDP's accuracy utilities and
Tumult's accuracy reports give them.

A mean is a ratio: its interval depends on how many values there are.
:meth:`Preview.mean_halfwidth` gives it as a function of that number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from dpframe.accounting.costs import Cost
from dpframe.accounting.dryrun import DryRunStop, dry_run
from dpframe.queries.plan import Plan

LEVEL = 0.95


@dataclass(frozen=True)
class Preview:
    """What a query would cost and how accurate it would be, before it runs.

    ``measurements`` has one row per noisy measurement: its noise standard
    deviation and 95% half-width, in the units of the answer (a count, a sum
    of the clipped values, ...). ``note`` says what could not be known in
    advance (e.g. bounds a query would first choose privately).
    """

    query: str
    mechanism: str
    cost: Cost
    measurements: pd.DataFrame
    note: str = ""

    def mean_halfwidth(self, n: float) -> float:
        """The mean's 95% half-width with ``n`` values, for a mean near the middle of its bounds.

        The mean is the noisy sum of deviations from the bounds' midpoint over
        the noisy count, so its error is about the sum's error divided by ``n``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [30, 40]}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
        >>> accuracy = p["age"].dp.preview("mean", bounds=(0, 100), epsilon=0.5)
        >>> round(accuracy.mean_halfwidth(1000), 2), p.dp.budget.spent.epsilon.exact
        (0.6, Fraction(0, 1))
        """
        if self.query not in ("mean", "groupby mean") or "sum" not in self.measurements.index:
            raise ValueError(f"mean_halfwidth is for a mean; this is a preview of {self.query}")
        if not n > 0:
            raise ValueError(f"n must be > 0, got {n!r}")
        halfwidths = dict(zip(self.measurements.index, self.measurements["95% half-width"].to_numpy(dtype=float)))
        return float(halfwidths["sum"]) / n

    def __repr__(self) -> str:
        cost = self.cost.describe("zcdp" if self.cost.rho else "approx")
        lines = [f"Preview({self.query}: {self.mechanism}, {cost}; nothing charged, no data read)"]
        for name, row in self.measurements.iterrows():
            lines.append(f"  {name}: noise std {row['noise std']:.4g}, 95% half-width {row['95% half-width']:.4g}")
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)


def preview(run: Callable[[], object]) -> Preview:
    """Run ``run`` (a query call) as a dry run and describe the plan it would charge.

    Argument errors are raised as by the real query; a query that has no plan
    of noisy measurements to show (it would first choose something privately,
    e.g. its bounds) gives its cost and a note.
    """
    with dry_run():
        try:
            run()
        except DryRunStop as stop:
            return _describe(stop)
    raise RuntimeError("the query finished without charging: nothing to preview")  # pragma: no cover


def _describe(stop: DryRunStop) -> Preview:
    plan = stop.plan
    columns = ["noise std", "95% half-width"]
    if not isinstance(plan, Plan):
        return Preview(stop.query, "several parts", stop.cost, pd.DataFrame(columns=columns, dtype=float),
                       "this query first chooses part of its answer privately (e.g. bounds=None: its bounds), and "
                       "its accuracy depends on what it finds; declare that part (bounds=, keys=) to preview it")
    rows = {name: [spec.std * plan.unit.get(name, 1.0), spec.halfwidth(LEVEL) * plan.unit.get(name, 1.0)]
            for name, spec in plan.noise.items()}
    note = "" if rows else f"{plan.mechanism}: a selection, with no interval around it"
    table = pd.DataFrame.from_dict(rows, orient="index", columns=columns) if rows else pd.DataFrame(
        columns=columns, dtype=float)
    return Preview(plan.query, plan.mechanism, stop.cost, table, note)
