"""The privacy budget: a thread-safe, shared account with a ledger of releases.

Composition is *basic* (sequential) composition, which stays valid under full
adaptivity (Dwork & Roth, Thm 3.16; for zCDP, Bun & Steinke 2016, Lemma 2.3):
an (epsilon, delta) budget pays the sum of the epsilons and the sum of the
deltas of its releases; a zCDP budget pays the sum of the rhos. Queries over
disjoint partitions (histogram bins, crosstab cells, group-by groups) are
charged once, not once per partition (parallel composition); each query
documents the rule it used in the ledger's ``rule`` column.

Amounts are kept as exact fractions, so a thousand charges of 0.001 spend
exactly 1 and rounding can never let the ledger overspend.
"""

from __future__ import annotations

import math
import numbers
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpframe.errors import BudgetExceededError

BudgetKind = Literal["approx", "zcdp"]


def exact(value: object, name: str, *, allow_zero: bool = False) -> Fraction:
    """Validate a privacy parameter and return it as an exact fraction.

    Floats are read through their shortest decimal form, so ``0.1`` is exactly
    1/10 and ten charges of 0.1 fit a budget of 1.

    >>> exact(0.1, "epsilon")
    Fraction(1, 10)
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if isinstance(value, Fraction):
        result = value
    elif isinstance(value, numbers.Integral):
        result = Fraction(int(value))
    else:
        as_float = float(value)
        if not math.isfinite(as_float):
            raise ValueError(f"{name} must be finite, got {value!r}; pass a positive number such as 0.1")
        result = Fraction(repr(as_float))
    if result < 0 or (result == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return result


@dataclass(frozen=True)
class Cost:
    """What one release costs: epsilon and delta, or rho for zCDP.

    >>> Cost(epsilon=Fraction(1, 10)) + Cost(epsilon=Fraction(2, 10))
    Cost(epsilon=Fraction(3, 10), delta=Fraction(0, 1), rho=Fraction(0, 1))
    """

    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    rho: Fraction = Fraction(0)

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.epsilon + other.epsilon, self.delta + other.delta, self.rho + other.rho)

    def __sub__(self, other: Cost) -> Cost:
        return Cost(self.epsilon - other.epsilon, self.delta - other.delta, self.rho - other.rho)

    def fits_in(self, other: Cost) -> bool:
        """True when every component of this cost is at most the other's.

        >>> Cost(epsilon=Fraction(1, 2)).fits_in(Cost(epsilon=Fraction(1)))
        True
        """
        return self.epsilon <= other.epsilon and self.delta <= other.delta and self.rho <= other.rho

    def describe(self, kind: BudgetKind) -> str:
        """A short human-readable form.

        >>> Cost(epsilon=Fraction(1, 10)).describe("approx")
        'ε=0.1, δ=0'
        """
        if kind == "zcdp":
            return f"ρ={float(self.rho):.6g}"
        return f"ε={float(self.epsilon):.6g}, δ={float(self.delta):.3g}"


@dataclass(frozen=True)
class LedgerEntry:
    """One release: what was asked, how it was answered and what it cost."""

    time: datetime
    query: str
    columns: tuple[str, ...]
    mechanism: str
    cost: Cost
    noise: str
    rule: str
    seeded: bool = False


_LEDGER_COLUMNS = ["time", "query", "columns", "mechanism", "epsilon", "delta", "rho", "noise", "rule", "seeded"]

# Every budget made in this process, so that unpickling a protected frame rejoins
# the live budget instead of forking a fresh copy that could be spent twice. The
# references are strong on purpose: a budget whose frames were all dropped must
# not come back unspent from an old pickle. (Across processes, a pickle still
# carries a snapshot of the spending; a persistent ledger is the cure for that.)
_LIVE_BUDGETS: dict[str, Budget] = {}


@dataclass(eq=False)
class Budget:
    """A privacy budget shared by every frame derived from the same protected data.

    Give either ``epsilon`` (with an optional ``delta``) for pure or approximate
    differential privacy, or ``rho`` for zero-concentrated DP (zCDP).

    >>> b = Budget(epsilon=1.0, delta=1e-6)
    >>> b.remaining.epsilon
    Fraction(1, 1)
    >>> import pandas as pd, dpframe
    >>> p1 = pd.DataFrame({"x": [1, 2]}).dp.protect(budget=b)
    >>> p2 = pd.DataFrame({"y": [3, 4]}).dp.protect(budget=b)   # same people, one budget
    >>> p1.dp.budget is p2.dp.budget
    True
    """

    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None
    _id: str = field(default_factory=lambda: uuid.uuid4().hex, repr=False)
    _total: Cost = field(init=False, repr=False)
    _spent: Cost = field(init=False, repr=False)
    _entries: list[LedgerEntry] = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.rho is not None:
            if self.epsilon is not None or self.delta:
                raise ValueError("give either rho (zCDP) or epsilon/delta, not both")
            self._total = Cost(rho=exact(self.rho, "rho"))
        elif self.epsilon is not None:
            delta = exact(self.delta, "delta", allow_zero=True)
            if delta >= 1:
                raise ValueError(f"delta must be < 1, got {self.delta!r}; typical values are below 1/n, e.g. 1e-6")
            self._total = Cost(epsilon=exact(self.epsilon, "epsilon"), delta=delta)
        else:
            raise ValueError("a budget needs epsilon= (with optional delta=) or rho=; e.g. Budget(epsilon=1.0)")
        self._spent = Cost()
        self._entries = []
        self._lock = threading.Lock()
        _LIVE_BUDGETS[self._id] = self

    def __setattr__(self, name: str, value: Any) -> None:
        # The totals are fixed at creation: changing them afterwards (or in a pickle) must not add budget.
        if name in ("epsilon", "delta", "rho", "_id") and "_total" in self.__dict__:
            raise AttributeError(f"a budget's {name} is fixed when it is created")
        object.__setattr__(self, name, value)

    # -- reading -------------------------------------------------------------
    @property
    def kind(self) -> BudgetKind:
        """``"zcdp"`` for a rho budget, ``"approx"`` for epsilon/delta (pure when delta is 0)."""
        return "zcdp" if self.rho is not None else "approx"

    @property
    def total(self) -> Cost:
        """The whole budget."""
        return self._total

    @property
    def spent(self) -> Cost:
        """What the releases so far have cost."""
        return self._spent

    @property
    def remaining(self) -> Cost:
        """What is left to spend."""
        with self._lock:
            return self._total - self._spent

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per release: time, query, columns, mechanism, cost, noise and composition rule."""
        with self._lock:
            entries = list(self._entries)
        rows = [
            {
                "time": e.time,
                "query": e.query,
                "columns": ", ".join(e.columns),
                "mechanism": e.mechanism,
                "epsilon": float(e.cost.epsilon),
                "delta": float(e.cost.delta),
                "rho": float(e.cost.rho),
                "noise": e.noise,
                "rule": e.rule,
                "seeded": e.seeded,
            }
            for e in entries
        ]
        return pd.DataFrame(rows, columns=_LEDGER_COLUMNS)

    # -- spending --------------------------------------------------------------
    def charge(
        self,
        cost: Cost,
        *,
        query: str,
        columns: tuple[str, ...] = (),
        mechanism: str = "",
        noise: str = "",
        rule: str = "sequential composition",
        seeded: bool = False,
    ) -> LedgerEntry:
        """Atomically check that ``cost`` fits and record it; raise if it does not.

        Called before the data is read. A refused charge records nothing.

        >>> b = Budget(epsilon=1.0)
        >>> _ = b.charge(Cost(epsilon=Fraction(1, 2)), query="count")
        >>> b.charge(Cost(epsilon=Fraction(1)), query="count")
        Traceback (most recent call last):
        ...
        dpframe.errors.BudgetExceededError: count needs ε=1, δ=0 but only ε=0.5, δ=0 remains; nothing was charged
        """
        self._check_currency(cost)
        entry = LedgerEntry(datetime.now(timezone.utc), query, columns, mechanism, cost, noise, rule, seeded)
        with self._lock:
            self._refuse_unless_fits(cost, query)
            self._spent = self._spent + cost
            self._entries.append(entry)
        return entry

    def require(self, cost: Cost, *, query: str) -> None:
        """Raise :class:`BudgetExceededError` unless ``cost`` fits in what remains; charge nothing.

        For queries that charge in several steps: the whole cost is checked
        before the first step is charged.

        >>> Budget(epsilon=1.0).require(Cost(epsilon=Fraction(2)), query="synthesize")
        Traceback (most recent call last):
        ...
        dpframe.errors.BudgetExceededError: synthesize needs ε=2, δ=0 but only ε=1, δ=0 remains; nothing was charged
        """
        with self._lock:
            self._refuse_unless_fits(cost, query)

    def _refuse_unless_fits(self, cost: Cost, query: str) -> None:
        remaining = self._total - self._spent
        if not cost.fits_in(remaining):
            raise BudgetExceededError(
                f"{query} needs {cost.describe(self.kind)} but only {remaining.describe(self.kind)} "
                "remains; nothing was charged"
            )

    def _check_currency(self, cost: Cost) -> None:
        if self.kind == "zcdp" and (cost.epsilon or cost.delta):
            raise TypeError("a zCDP budget is charged in rho; convert the cost first")
        if self.kind == "approx" and cost.rho:
            raise TypeError("an (epsilon, delta) budget cannot be charged in rho")

    # -- sharing: copies and pickles of a protected frame keep this very budget --
    def __copy__(self) -> Budget:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Budget:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        with self._lock:
            state = (self._id, self.epsilon, self.delta, self.rho, self._spent, list(self._entries))
        return (_restore_budget, state)

    # -- display ---------------------------------------------------------------
    def __repr__(self) -> str:
        return (
            f"Budget({self._total.describe(self.kind)}): spent {self._spent.describe(self.kind)}, "
            f"remaining {self.remaining.describe(self.kind)}, {len(self._entries)} release(s)"
        )

    def _repr_html_(self) -> str:
        kind = "zCDP" if self.kind == "zcdp" else ("pure DP" if self._total.delta == 0 else "approximate DP")
        head = (
            f"<p><b>Privacy budget</b> ({kind}): total {self._total.describe(self.kind)} · "
            f"spent {self._spent.describe(self.kind)} · <b>remaining {self.remaining.describe(self.kind)}</b></p>"
        )
        return head + self.ledger.to_html(index=False)


def _restore_budget(
    budget_id: str,
    epsilon: float | None,
    delta: float,
    rho: float | None,
    spent: Cost,
    entries: list[LedgerEntry],
) -> Budget:
    live = _LIVE_BUDGETS.get(budget_id)
    if live is not None:
        return live
    budget = Budget(epsilon=epsilon, delta=delta, rho=rho, _id=budget_id)
    budget._spent = spent
    budget._entries = entries
    return budget
