"""Query plans: everything decided from the schema and the arguments, before any data is read.

A plan fixes the measurements a query will make, their exact noise and the
cost; :meth:`Plan.charge` then spends the budget. Only after that do the
kernels touch the data. Validation here looks at dtypes, names and arguments
only, so its errors can never reveal a record.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pandas.api.types import is_hashable

from dpframe.accounting.amplification import SampleAccount
from dpframe.accounting.costs import Cost
from dpframe.accounting.dryrun import stop_if_dry_run
from dpframe.accounting.ledger import Line
from dpframe.errors import LedgerError, NotProtectedError, RefusedError
from dpframe.noise.mechanism import NoiseSpec, Privacy, resolve
from dpframe.noise.random import is_seeded
from dpframe.protection.analyst import public_value
from dpframe.protection.base import lineage_of, parts
from dpframe.protection.lineage import Lineage
from dpframe.protection.units import PandasObject, Protection, contribution_mask
from dpframe.queries import kernels


@dataclass
class Reservation:
    """What is left of a reserved release to ask (``asked``); the ledger ``line`` holds what is left charged for it.

    On a Poisson sample, the parts are charged the increments of the amplified
    ε over the running total from ``before``; they add up to the reservation.
    """

    line: int
    asked: Cost
    sample: SampleAccount | None = None
    before: Fraction = Fraction(0)
    drawn: Fraction = Fraction(0)  # the ε of the parts taken so far (unamplified)

    def take(self, cost: Cost) -> Cost:
        """Take a part of ``cost`` (which fits in ``asked``); return what it is charged."""
        charged = cost if self.sample is None else self.sample.part(self.before, self.drawn, cost)
        self.drawn += cost.epsilon
        self.asked = self.asked - cost
        return charged


@dataclass(frozen=True)
class Target:
    """What one query runs on: the rows of a protected object (with their unit record), its protection,
    the account of the Poisson sample the rows come from (None: all units), and the query's receipts.

    Every charge the query makes goes through :meth:`charge` and is kept in
    ``receipts``, so its answer can say what it cost in all (:attr:`spent`):
    on a sample, the amplified increments actually charged. A target serves
    one query; :meth:`fresh` starts another on the same rows.
    """

    obj: PandasObject
    protection: Protection
    sample: SampleAccount | None = None
    receipts: list[Cost] = field(default_factory=list, compare=False)
    reservations: list[Reservation] = field(default_factory=list, compare=False)
    # Under bounded DP: True when these are the very rows protect() made (a column of them included), whose
    # number is public. Targets built any other way leave it False, which never under-charges.
    original_rows: bool = False
    # Each column's lineage (dpframe.protection.lineage), by label: what earlier releases of the same expression
    # made public. A column without one has nothing remembered.
    lineage: Mapping[Any, Lineage] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, obj: Any) -> Target:
        """The target of a protected frame or series (or ``obj`` itself if it is one); a clear error otherwise."""
        if isinstance(obj, Target):
            return obj
        found = parts(obj)
        if found is None:
            raise NotProtectedError(
                "this data is not protected: call df.dp.protect(epsilon=...) first and query the object it returns"
            )
        data, protection, sample = found
        original = protection.origin is not None and getattr(obj, "_rows", None) is protection.origin
        return cls(data, protection, sample, original_rows=original, lineage=lineage_of(obj))

    def fresh(self) -> Target:
        """The same rows for a new query (empty receipts)."""
        return Target(self.obj, self.protection, self.sample, original_rows=self.original_rows, lineage=self.lineage)

    def lineage_of(self, name: Any) -> Lineage | None:
        """The lineage of a column (of the series, for a series target); None if it has none."""
        if isinstance(self.obj, pd.Series):
            return next(iter(self.lineage.values()), None) if len(self.lineage) == 1 else None
        return self.lineage.get(name) if is_hashable(name) else None

    @property
    def series(self) -> pd.Series[Any]:
        """The data of a series target (a TypeError for a frame)."""
        if not isinstance(self.obj, pd.Series):
            raise TypeError("this question is about one column: ask it of a protected series, e.g. p['x'].dp")
        return self.obj

    def column_target(self, name: Any) -> Target:
        """The target of one column of a frame target, for the same query (shared receipts)."""
        token = self.lineage_of(name)
        return Target(self.column(name), self.protection, self.sample, self.receipts, self.reservations,
                      self.original_rows, {} if token is None else {name: token})

    @property
    def _amplified(self) -> SampleAccount | None:
        # zCDP and filter budgets are charged in full (module docstring of dpframe.accounting.amplification).
        return self.sample if self.protection.budget.kind == "approx" else None

    def reserve(self, *costs: Cost, query: str) -> None:
        """Charge the parts of a release of several parts together, before any runs (write-ahead; all or none).

        The parts' own charges (:meth:`charge`) then draw from the reservation
        instead of charging again, each becoming its own ledger line.
        """
        self.refuse_unless_bounded_ok(query)
        total = sum(costs, Cost())
        if total.is_zero or any(total.fits_in(r.asked) for r in self.reservations):
            return  # nothing to charge, or a part of a release already reserved (discovery within synthesize)
        budget = self.protection.budget
        account = self._amplified
        if account is None:
            self._refuse_other_relation(query)
            line = budget._reserve(total, query=query, seeded=is_seeded())
            self.reservations.append(Reservation(line, total))
        else:
            with account.reserving(total) as (charged, before):
                self._refuse_other_relation(query)
                line = budget._reserve(charged, query=query, seeded=is_seeded())
            self.reservations.append(Reservation(line, total, account, before))

    def charge(self, cost: Cost, *, query: str, columns: tuple[str, ...], mechanism: str, noise: str,
               rule: str) -> Cost:
        """Charge a release of ``cost`` on these rows (amplified on a sample); return and record what was charged.

        A part of a reserved release draws from its reservation (already charged).
        """
        self.refuse_unless_bounded_ok(query)
        budget = self.protection.budget
        account = self._amplified
        if self.sample is None:
            note = ""
        elif account is None:
            note = (f"; Poisson sample at rate q={float(self.sample.rate):.4g}, charged in full "
                    f"({budget.kind} budget: no amplification)")
        else:
            note = (f"; Poisson sample at rate q={float(account.rate):.4g}: ε={float(cost.epsilon):.6g} charged "
                    f"as the increase of ln(1 + q(e^E − 1)) over the sample's running total E, δ as qδ")
        reservation = next((r for r in self.reservations if not cost.is_zero and cost.fits_in(r.asked)), None)
        if reservation is not None:
            charged = reservation.take(cost)
            budget._draw(reservation.line, Line(query, charged, columns, mechanism, noise, rule + note, is_seeded()))
        elif account is None:
            self._refuse_other_relation(query)
            budget._charge(cost, query=query, columns=columns, mechanism=mechanism, noise=noise, rule=rule + note,
                           seeded=is_seeded())
            charged = cost
        else:
            with account.charging(cost) as charged:
                self._refuse_other_relation(query)
                budget._charge(charged, query=query, columns=columns, mechanism=mechanism, noise=noise,
                               rule=rule + note, seeded=is_seeded())
        self.receipts.append(charged)
        return charged

    def refuse_unless_bounded_ok(self, query: str) -> None:
        """Under bounded DP, refuse (before any charge) a query whose replace-one sensitivity is not derived.

        Fail closed: its noise would be calibrated for add/remove neighbours,
        and an add/remove ε-DP release is only 2ε-DP for replace-one neighbours.
        """
        if self.protection.bounded and query not in REPLACE_ONE_QUERIES:
            raise RefusedError(
                f"{query!r} is refused under bounded DP (neighbours='replace'): its replace-one sensitivity is not "
                f"derived, and its add/remove noise would under-charge. Bounded DP answers "
                f"{', '.join(sorted(REPLACE_ONE_QUERIES))} (docs/privacy-model.md); protect with add/remove "
                "neighbours for the others"
            )

    def _refuse_other_relation(self, query: str) -> None:
        """Refuse, just before the budget is charged, an add/remove release on a budget since marked bounded."""
        if self.protection.budget_relation_differs:
            raise LedgerError(
                f"{query!r} is refused: this data was protected under add/remove neighbours, but its budget "
                f"({self.protection.budget.id}) has since been kept under replace-one neighbours (bounded DP) by "
                "another protect() call, and a budget never mixes the two relations; nothing was charged"
            )

    @property
    def count_sensitivity(self) -> int:
        """L1 sensitivity of counts over disjoint cells: k (add/remove), 2 (replace one row: one cell -1, one +1)."""
        return 2 * self.contributions if self.protection.bounded else self.contributions

    @property
    def public_count(self) -> int | None:
        """Under bounded DP, the public number of rows of these rows (of values, for a column that cannot hold
        missing values), else None: derived rows, or a column whose missing values are private."""
        if not (self.protection.bounded and self.original_rows):
            return None
        if isinstance(self.obj, pd.Series) and not kernels.never_missing(self.obj.dtype):
            return None
        return len(self.obj)

    @property
    def spent(self) -> Cost:
        """What this query has been charged so far."""
        return sum(self.receipts, Cost())

    @property
    def contributions(self) -> int:
        """Rows one privacy unit may contribute to a query."""
        return self.protection.max_contributions

    def privacy(
        self,
        epsilon: float | None,
        delta: float | None,
        rho: float | None,
        mechanism: str | None,
        *,
        selects_partitions: bool = False,
    ) -> Privacy:
        """The query's privacy arguments, validated against this target's budget."""
        return resolve(
            self.protection.budget, epsilon, delta, rho, mechanism, selects_partitions=selects_partitions
        )

    def rows_in_use(self) -> NDArray[np.bool_] | None:
        """After charging: the rows kept by contribution bounding (None = all)."""
        return contribution_mask(self.obj, self.contributions)

    def column(self, name: Any) -> pd.Series[Any]:
        """A column of a frame target (the series itself for a series target)."""
        if isinstance(self.obj, pd.Series):
            return self.obj
        if name not in self.obj.columns:
            raise KeyError(f"unknown column {name!r}; the frame has columns {list(self.obj.columns)}")
        column: pd.Series[Any] = self.obj[name]
        return column


@dataclass(frozen=True)
class GroupBounds:
    """Two-dimensional contribution bounds of a group-by: each unit keeps at most ``max_groups`` groups (L0) and
    at most ``max_rows_per_group`` rows in each (L∞), instead of ``max_contributions`` rows in all.

    One unit then changes at most L0 cells of a per-group aggregate, each by at
    most the change of L∞ rows, Δ: the vector moves by at most L0·Δ in L1 norm
    and √L0·Δ in L2 norm (docs/contribution-bounds.md). Laplace noise is
    calibrated to the first, Gaussian noise to the second.

    >>> from dpframe.noise.mechanism import Privacy
    >>> bounds = GroupBounds.of(4, 3)
    >>> laplace = Privacy("approx", "laplace", Fraction(1), Fraction(0), Fraction(0))
    >>> bounds.noise(laplace, 3).param  # scale L0·L∞/ε
    Fraction(12, 1)
    >>> gaussian = Privacy("zcdp", "gaussian", Fraction(0), Fraction(0), Fraction(1, 2))
    >>> bounds.noise(gaussian, 3).param  # variance (√L0·L∞)²/(2ρ)
    Fraction(36, 1)
    >>> GroupBounds.of(None, None) is None
    True
    """

    max_groups: int
    max_rows_per_group: int

    @classmethod
    def of(cls, max_groups: Any, max_rows_per_group: Any) -> GroupBounds | None:
        """Validate ``groupby``'s arguments (both or neither, integers >= 1); None for neither."""
        if max_groups is None and max_rows_per_group is None:
            return None
        if max_groups is None or max_rows_per_group is None:
            raise ValueError("give both max_groups and max_rows_per_group (each unit's groups, and its rows in each "
                             "group), or neither (each unit bounded to max_contributions rows)")
        for name, value in (("max_groups", max_groups), ("max_rows_per_group", max_rows_per_group)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        return cls(int(max_groups), int(max_rows_per_group))

    def noise(self, privacy: Privacy, per_group: int) -> NoiseSpec:
        """The noise of each cell when one unit's ``max_rows_per_group`` rows move a cell by at most ``per_group``."""
        if privacy.mechanism == "gaussian":
            return privacy.vector_noise(self.max_groups, per_group)
        return privacy.noise(self.max_groups * per_group)

    def rule(self) -> str:
        """The ledger line's rule: the bounding and the sensitivities it gives."""
        return (f"parallel composition over groups; each unit keeps at most L0={self.max_groups} groups (keyed "
                f"hash) and L∞={self.max_rows_per_group} rows in each (uniform): sensitivity L0·Δ={self.max_groups}Δ "
                f"(L1, Laplace), √L0·Δ=√{self.max_groups}·Δ (L2, Gaussian), Δ the change of L∞ rows in one group "
                f"(a count: {self.max_rows_per_group})")

    def per_group(self, privacy: Privacy) -> Privacy:
        """What each group's selections may spend so that a unit's (at most L0) groups spend ``privacy`` together:
        ε/L0 (basic composition of pure DP), ρ/L0 on a zCDP budget (zCDP adds up; ε = √(2ρ/L0) for the selection).

        >>> laplace = Privacy("approx", "laplace", Fraction(1), Fraction(0), Fraction(0))
        >>> GroupBounds.of(4, 3).per_group(laplace).epsilon
        Fraction(1, 4)
        >>> GroupBounds.of(4, 3).per_group(Privacy("zcdp", "laplace", Fraction(2), Fraction(0), Fraction(2))).epsilon
        Fraction(1, 1)
        """
        return privacy.share(Fraction(1, self.max_groups))

    def selection_rule(self, privacy: Privacy) -> str:
        """The ledger line's rule of a selection per group (quantiles): the bounding and each group's share."""
        share = "ρ/L0 (zCDP adds up over a unit's L0 groups)" if privacy.kind == "zcdp" else (
            "ε/L0 (basic composition over a unit's L0 groups)")
        return (f"parallel composition over groups; each unit keeps at most L0={self.max_groups} groups (keyed hash) "
                f"and L∞={self.max_rows_per_group} rows in each (uniform): each group's selection has rank utility "
                f"sensitivity L∞·max(q, 1−q) and spends {share}")

    def unit_sum_rule(self, lo: float, hi: float) -> str:
        """The ledger line's rule of a sum whose units' sums per group are clipped to ``[lo, hi]``."""
        return (f"parallel composition over groups; each unit keeps at most L0={self.max_groups} groups (keyed hash) "
                f"and all its rows in each, its sum in a group clipped to [{lo:g}, {hi:g}]: sensitivity "
                f"L0·Δ={self.max_groups}Δ (L1, Laplace), √L0·Δ=√{self.max_groups}·Δ (L2, Gaussian), "
                f"Δ = max(|lo|, |hi|) on the summation grid")


@dataclass(frozen=True)
class Plan:
    """The measurements of one query, their noise, and what the query costs."""

    query: str
    columns: tuple[str, ...]
    target: Target
    privacy: Privacy
    noise: Mapping[str, NoiseSpec] = field(default_factory=dict)
    unit: Mapping[str, float] = field(default_factory=dict)
    rule: str = "sequential composition"
    # For mechanisms that are not additive noise (exponential mechanism, sparse
    # vector): their name and a description of their parameters for the ledger.
    mechanism_name: str = ""
    detail: str = ""

    @property
    def mechanism(self) -> str:
        """The mechanism, or the noise distribution(s) used."""
        return self.mechanism_name or " + ".join(sorted({spec.name for spec in self.noise.values()}))

    def charge(self) -> Cost:
        """Spend the measurement's cost, or raise BudgetExceededError having spent nothing; return what was charged."""
        self.target.refuse_unless_bounded_ok(self.query)  # a preview is refused too
        stop_if_dry_run(self.privacy.cost, self.query, self)  # a preview stops here, with the plan
        description = self.detail or "; ".join(
            f"{name} σ={spec.std * self.unit.get(name, 1.0):.4g}" for name, spec in self.noise.items()
        )
        return self.target.charge(
            self.privacy.cost, query=self.query, columns=self.columns, mechanism=self.mechanism, noise=description,
            rule=self.rule,
        )


# Queries whose sensitivity under replace-one neighbours is derived (docs/privacy-model.md): the rest are refused
# under bounded DP. "count" of the original rows is exact and free; counts over cells have L1 sensitivity 2;
# "sum" has max(U − L, |L|, |U|) (U − L with public n); "mean (public n)" is that sum over the public n.
REPLACE_ONE_QUERIES = frozenset({"count", "sum", "mean (public n)", "histogram", "value_counts", "crosstab",
                                 "groupby count", "chisquare", "chi2_contingency"})


def split(privacy: Privacy, names: Sequence[str]) -> dict[str, Privacy]:
    """Equal shares for measurements composed sequentially."""
    weight = Fraction(1, len(names))
    return {name: privacy.share(weight) for name in names}


def check_bounds(bounds: Any) -> tuple[float, float]:
    """Validate ``bounds=(lower, upper)``: two finite numbers, lower < upper.

    >>> check_bounds((0, 125))
    (0.0, 125.0)
    >>> check_bounds((10, 0))
    Traceback (most recent call last):
    ...
    ValueError: bounds must satisfy lower < upper, got (10, 0); did you reverse them?
    """
    if bounds is None:
        raise ValueError("pass bounds=(lower, upper): values are clipped to them, which bounds each person's influence")
    try:
        lo, hi = bounds
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair of numbers (lower, upper), got {bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"bounds must be finite, got {bounds!r}")
    if lo >= hi:
        raise ValueError(f"bounds must satisfy lower < upper, got {bounds!r}; did you reverse them?")
    magnitude = max(abs(lo), abs(hi))
    if not (_SMALLEST_BOUND <= magnitude <= _LARGEST_BOUND and _SMALLEST_BOUND <= (hi - lo) / 2):
        # Squares of deviations and the summation grid must stay representable in float64.
        raise ValueError(
            f"bounds {bounds!r} are outside the supported range: their magnitude and half-width must lie "
            f"between {_SMALLEST_BOUND:g} and {_LARGEST_BOUND:g}; rescale the column (e.g. to thousands)"
        )
    return lo, hi


_SMALLEST_BOUND = 1e-150
_LARGEST_BOUND = 1e150


def check_numeric(series: pd.Series[Any], query: str) -> None:
    """A numeric aggregate needs a numeric (or boolean) column."""
    dtype = series.dtype
    if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
        raise TypeError(
            f"{query} needs a numeric column, but {series.name!r} has dtype {dtype}; "
            "convert it (e.g. astype(float)) or use value_counts for categories"
        )


def public_keys(series: pd.Series[Any], declared: Iterable[Any] | None) -> pd.Index[Any] | None:
    """The public categories of a column: declared, from a categorical dtype, or boolean; else None."""
    if declared is not None:
        if isinstance(declared, (str, bytes)):
            raise TypeError(f"keys for {series.name!r} must be a list of values, got a string")
        keys: pd.Index[Any] = pd.Index(public_value(list(declared), f"keys for {series.name!r}"), tupleize_cols=False)
        if len(keys) == 0:
            raise ValueError(f"the declared keys for {series.name!r} are empty")
        if not keys.is_unique:
            raise ValueError(f"the declared keys for {series.name!r} contain duplicates")
        return keys
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories: pd.Index[Any] = pd.Index(series.cat.categories)
        return categories
    if pd.api.types.is_bool_dtype(series.dtype):
        return pd.Index([False, True])
    return None


def normal_quantile(level: float) -> float:
    """Two-sided standard normal quantile for approximate intervals of ratios."""
    from scipy.special import ndtri

    return float(ndtri(0.5 + level / 2))
