"""The privacy budget: a handle on a budget kept in the persistent ledger.

Composition is *basic* (sequential) composition, which stays valid under full
adaptivity (Dwork & Roth, Thm 3.16; for zCDP, Bun & Steinke 2016, Lemma 2.3):
an (epsilon, delta) budget pays the sum of the epsilons and the sum of the
deltas of its releases; a zCDP budget pays the sum of the rhos. Queries over
disjoint partitions (histogram bins, crosstab cells, group-by groups) are
charged once, not once per partition (parallel composition); each query
documents the rule it used in the ledger's ``rule`` column.

The totals and the spending live in the ledger (:mod:`dpframe.accounting.ledger`),
not in this object: every read asks the ledger, every charge is a transaction
there, so copies, pickles, threads and other processes all see one account.
Amounts are exact fractions (:mod:`dpframe.accounting.costs`), never negative.

Who may change a budget: charging, reserving and drawing are dpframe's own
(``_charge``, ``_reserve``, ``_draw``, called by queries after they have
fixed their noise), so the analyst's handle ``p.dp.budget`` offers no way to
write a ledger line. Raising a total (:meth:`Budget.extend`) is the
curator's. Within one process this is a convention, as every private
attribute is (docs/privacy-model.md); a service boundary makes it a real one.

``accounting="rdp"`` keeps an (ε, δ) total in Rényi terms instead: each
release is charged its RDP curve over a grid of orders, and a release is
admitted while some order stays within its limit, a privacy filter valid for
adaptively chosen releases (:class:`~dpframe.accounting.composition.RenyiFilter`,
docs/accounting.md). ``accounting="advanced"`` keeps it by advanced
composition of pure ε releases, also as a filter
(:class:`~dpframe.accounting.composition.AdvancedFilter`).
"""

from __future__ import annotations

import os
import weakref
from typing import Any

import pandas as pd

from dpframe.accounting.costs import BudgetKind, Cost, Reading, exact, zcdp_epsilon
from dpframe.accounting.dryrun import stop_if_dry_run
from dpframe.accounting.fingerprint import fingerprint, legacy_fingerprint
from dpframe.accounting.ledger import BudgetRecord, Ledger, Line
from dpframe.errors import ReconnectedWarning, warn

# The δ at which a zCDP budget is also shown as (ε, δ) in its repr and HTML view.
DISPLAY_DELTA = 1e-6

LedgerLike = Ledger | str | os.PathLike[str] | None

# One live handle per budget, so frames, copies and unpickled frames of one process share it.
_HANDLES: weakref.WeakValueDictionary[tuple[str, str], Budget] = weakref.WeakValueDictionary()


ACCOUNTING = ("sequential", "rdp", "advanced")


def totals(epsilon: float | None, delta: float, rho: float | None,
           accounting: str | None = None) -> tuple[BudgetKind, Cost]:
    """Validate a budget's total: ``epsilon`` (with optional ``delta``) or ``rho``; ``accounting="rdp"`` for Rényi terms.

    >>> totals(1.0, 1e-6, None)
    ('approx', Cost(epsilon=Fraction(1, 1), delta=Fraction(1, 1000000), rho=Fraction(0, 1)))
    >>> totals(1.0, 1e-6, None, "rdp")[0]
    'rdp'
    """
    if accounting not in (None, *ACCOUNTING):
        raise ValueError(f"accounting must be one of {', '.join(map(repr, ACCOUNTING))}, got {accounting!r}")
    if accounting in ("rdp", "advanced"):
        if rho is not None or epsilon is None or not delta:
            raise ValueError(f"a budget with accounting={accounting!r} has an (epsilon, delta) total with delta > 0, "
                             "e.g. epsilon=1.0, delta=1e-6: its filter spends delta on composing, not on releases")
        return ("rdp" if accounting == "rdp" else "advanced"), totals(epsilon, delta, None)[1]
    if rho is not None:
        if epsilon is not None or delta:
            raise ValueError("give either rho (zCDP) or epsilon/delta, not both")
        return "zcdp", Cost(rho=exact(rho, "rho"))
    if epsilon is None:
        raise ValueError("a budget needs epsilon= (with optional delta=) or rho=; e.g. Budget(epsilon=1.0)")
    exact_delta = exact(delta, "delta", allow_zero=True)
    if exact_delta >= 1:
        raise ValueError(f"delta must be < 1, got {delta!r}; typical values are below 1/n, e.g. 1e-6")
    return "approx", Cost(epsilon=exact(epsilon, "epsilon"), delta=exact_delta)


def resolve_ledger(ledger: LedgerLike) -> Ledger:
    """A :class:`Ledger` from ``ledger=``: a Ledger, a file path (``":memory:"`` for in memory), or None for the default."""
    if ledger is None:
        return Ledger.default()
    if isinstance(ledger, Ledger):
        return ledger
    if isinstance(ledger, (str, os.PathLike)):
        return Ledger.at(ledger)
    raise TypeError(f"ledger must be a path, a dpframe.Ledger or None, got {type(ledger).__name__}")


class Budget:
    """A privacy budget shared by every frame derived from the same protected data, kept in a ledger.

    Give either ``epsilon`` (with an optional ``delta``) for pure or approximate
    differential privacy, or ``rho`` for zero-concentrated DP (zCDP).
    ``accounting="rdp"`` keeps an (ε, δ) total in Rényi terms (releases then
    pass ``epsilon=`` for Laplace noise or ``rho=`` for Gaussian noise, and are
    composed by their Rényi curves; docs/accounting.md); ``accounting="advanced"``
    composes pure ``epsilon=`` releases by advanced composition. With
    ``name=`` the budget can be found again by name (:meth:`open`); an existing
    name reconnects to that budget. ``ledger=`` chooses the ledger (a path, a
    :class:`~dpframe.Ledger`; default: the user's, see docs/ledger.md).

    >>> import pandas as pd, dpframe
    >>> b = Budget(epsilon=1.0, delta=1e-6, ledger=dpframe.Ledger.in_memory())
    >>> f"{b.remaining.epsilon:.2f}"
    '1.00'
    >>> p1 = pd.DataFrame({"x": [1, 2]}).dp.protect(budget=b)
    >>> p2 = pd.DataFrame({"y": [3, 4]}).dp.protect(budget=b)   # same people, one budget
    >>> p1.dp.budget is p2.dp.budget
    True
    """

    _store: Ledger
    _id: str
    _name: str | None
    _kind: BudgetKind

    def __new__(cls, epsilon: float | None = None, delta: float = 0.0, rho: float | None = None, *,
                name: str | None = None, ledger: LedgerLike = None, accounting: str | None = None) -> Budget:
        kind, total = totals(epsilon, delta, rho, accounting)
        store = resolve_ledger(ledger)
        if name is None:
            return cls._bind(store, store.create(kind, total))
        record, _ = store.open_budget(kind, total, name=check_name(name), fingerprint=None, extend=False)
        return cls._bind(store, record)

    @classmethod
    def open(cls, name: str, *, ledger: LedgerLike = None) -> Budget:
        """The existing budget with this name (or id) in the ledger.

        >>> import dpframe
        >>> ledger = dpframe.Ledger.in_memory()
        >>> _ = Budget(epsilon=1.0, name="census-2020", ledger=ledger)
        >>> Budget.open("census-2020", ledger=ledger).name
        'census-2020'
        """
        store = resolve_ledger(ledger)
        return cls._bind(store, store.lookup(name))

    @classmethod
    def _bind(cls, store: Ledger, record: BudgetRecord) -> Budget:
        key = (store.id, record.id)
        handle = _HANDLES.get(key)
        if handle is None:
            handle = object.__new__(cls)
            handle._store, handle._id, handle._name, handle._kind = store, record.id, record.name, record.kind
            _HANDLES[key] = handle
        return handle

    # -- reading -------------------------------------------------------------
    @property
    def kind(self) -> BudgetKind:
        """``"approx"`` for epsilon/delta (pure when delta is 0), ``"zcdp"`` for rho; ``"rdp"`` or ``"advanced"`` for filters."""
        return self._kind

    @property
    def id(self) -> str:
        """The budget's id in its ledger."""
        return self._id

    @property
    def name(self) -> str | None:
        """The budget's name, if it has one."""
        return self._store.record(self._id).name

    @property
    def store(self) -> Ledger:
        """The ledger the budget is kept in."""
        return self._store

    def _record(self) -> BudgetRecord:
        return self._store.record(self._id)

    @property
    def total(self) -> Reading:
        """The whole budget."""
        return Reading.of(self._record().total, self._kind)

    @property
    def spent(self) -> Reading:
        """What the releases so far have cost (in every process)."""
        return Reading.of(self._record().spent, self._kind)

    @property
    def remaining(self) -> Reading:
        """What is left to spend."""
        record = self._record()
        return Reading.of(record.total - record.spent, self._kind)

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per ledger line: time, query, columns, mechanism, cost, noise and composition rule."""
        return self._store.lines(self._id)

    @property
    def events(self) -> pd.DataFrame:
        """When the budget was created, reconnected to, extended or renamed."""
        return self._store.events(self._id)

    # -- spending: dpframe's own, not the analyst's (module docstring) ------------------
    def _charge(
        self,
        cost: Cost,
        *,
        query: str,
        columns: tuple[str, ...] = (),
        mechanism: str = "",
        noise: str = "",
        rule: str = "sequential composition",
        seeded: bool = False,
    ) -> int:
        """Check that ``cost`` fits and record it durably, in one transaction; raise if it does not. Return its line.

        Called before the data is read. A refused charge records nothing.

        >>> import dpframe
        >>> from fractions import Fraction
        >>> b = Budget(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
        >>> _ = b._charge(Cost(epsilon=Fraction(1, 2)), query="count")
        >>> b._charge(Cost(epsilon=Fraction(1)), query="count")
        Traceback (most recent call last):
        ...
        dpframe.errors.BudgetExceededError: count needs ε=1, δ=0 but only ε=0.5, δ=0 remains; nothing was charged
        """
        stop_if_dry_run(cost, query)  # the backstop: a preview never charges
        self._check_currency(cost)
        line = Line(query, cost, columns, mechanism, noise, rule, seeded)
        return self._store._charge(self._id, [line])[0]

    def _reserve(self, cost: Cost, *, query: str, seeded: bool = False) -> int:
        """Charge the whole cost of a release of several parts as one reserved line, before any of it runs.

        The parts then :meth:`_draw` from it; what a failed release did not
        draw stays charged (write-ahead: a charge is never refunded).
        """
        stop_if_dry_run(cost, query)
        self._check_currency(cost)
        line = Line(f"{query} (reserved)", cost, mechanism="reserved",
                    rule="write-ahead: every part of one release is charged together, before any data is read",
                    seeded=seeded)
        return self._store._reserve(self._id, line)

    def _draw(self, reserved: int, line: Line) -> None:
        """Record a part of a reserved release as its own line, taken from the reserved line (ValueError if more)."""
        self._store._draw(self._id, reserved, line)

    def extend(self, epsilon: float | None = None, delta: float = 0.0, rho: float | None = None) -> None:
        """Raise the total to the given one (never lower it); recorded in the ledger's events.

        The curator's operation, not the analyst's: a larger total is a policy
        decision, and the guarantee for the people in the data becomes the new
        total (docs/ledger.md). A filter budget (``"rdp"``, ``"advanced"``)
        can only be extended before its first release.

        >>> import dpframe
        >>> b = Budget(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
        >>> b.extend(epsilon=2.0)
        >>> float(b.total.epsilon), b.events["event"].tolist()
        (2.0, ['created', 'extended'])
        """
        kind, total = totals(epsilon, delta, rho, self._kind if self._kind in ("rdp", "advanced") else None)
        if kind != self._kind:
            raise ValueError(f"this is a {self._kind} budget: extend it with the same kind of total")
        self._store.extend(self._id, total)

    def allot(self, name: str, *, epsilon: float | None = None, delta: float = 0.0,
              rho: float | None = None) -> Budget:
        """The allotment ``name``: a budget of its own whose every charge is also charged to this one, its cap.

        Each charge (and reservation) of the allotment is written to both in
        one transaction, refused -- nothing written to either -- unless it
        fits both, so whatever the allotments spend, together they never
        spend more than the cap (docs/ledger.md). The cap's ledger shows each
        line under the allotment's name. The same kind of total as the cap's,
        which must be an (epsilon, delta) or a zCDP budget, not a filter; an
        allotment can be a cap in turn. An existing allotment of this name
        reconnects, with the same total (raise it with :meth:`extend`).
        ``protect(data, budget=allotment)`` accepts data protected under its cap.

        >>> import pandas as pd, dpframe
        >>> census = Budget(epsilon=1.0, name="census", ledger=dpframe.Ledger.in_memory())
        >>> alice, bob = census.allot("alice", epsilon=0.75), census.allot("bob", epsilon=0.75)
        >>> df = pd.DataFrame({"x": range(100)})
        >>> _ = df.dp.protect(budget=census)
        >>> _ = df.dp.protect(budget=alice).dp.count(epsilon=0.5)
        >>> df.dp.protect(budget=bob).dp.count(epsilon=0.75)
        Traceback (most recent call last):
        ...
        dpframe.errors.BudgetExceededError: count needs ε=0.75, δ=0: the dataset's shared cap cannot cover it; nothing was charged
        >>> float(census.spent.epsilon), census.ledger["query"].tolist(), alice.cap is census
        (0.5, ['alice: count'], True)
        """
        kind, total = totals(epsilon, delta, rho)
        record, _ = self._store.allot(self._id, check_name(name), kind, total)
        return Budget._bind(self._store, record)

    @property
    def cap(self) -> Budget | None:
        """The budget this one is an allotment of (:meth:`allot`), or None."""
        cap_id = self._store.cap_of(self._id)
        return None if cap_id is None else Budget._bind(self._store, self._store.record(cap_id))

    def rename(self, name: str | None) -> None:
        """Give the budget a unique name (None removes it)."""
        self._store.rename(self._id, None if name is None else check_name(name))

    def _check_currency(self, cost: Cost) -> None:
        if self._kind == "zcdp" and (cost.epsilon or cost.delta):
            raise TypeError("a zCDP budget is charged in rho; convert the cost first")
        if self._kind == "approx" and cost.rho:
            raise TypeError("an (epsilon, delta) budget cannot be charged in rho")
        if self._kind == "rdp" and cost.delta:
            raise TypeError("a Rényi budget is charged in epsilon (pure parts) and rho (zCDP parts), not delta")
        if self._kind == "advanced" and (cost.delta or cost.rho):
            raise TypeError("an advanced-composition budget is charged in pure epsilon only")

    # -- sharing: copies and pickles refer to the ledger entry, never a snapshot of it --
    def __copy__(self) -> Budget:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Budget:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_reconnect, (self._store.id, self._store.location, self._id))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Budget) and (self._store.id, self._id) == (other._store.id, other._id)

    def __hash__(self) -> int:
        return hash((self._store.id, self._id))

    # -- display ---------------------------------------------------------------
    def _summary(self) -> tuple[str, str, str, int]:
        record = self._record()
        total, spent, remaining = amounts_text(self._kind, record.total, record.spent)
        title = f"{record.name!r}: {total}" if record.name else total
        return title, spent, remaining, self._store.count_lines(self._id)

    def __repr__(self) -> str:
        title, spent, remaining, lines = self._summary()
        return f"Budget({title}): spent {spent}, remaining {remaining}, {lines} release(s)"

    def _repr_html_(self) -> str:
        from html import escape

        record = self._record()
        kind = {"zcdp": "zCDP", "rdp": "approximate DP kept in Rényi terms",
                "advanced": "approximate DP by advanced composition"}.get(
            self._kind, "pure DP" if record.total.delta == 0 else "approximate DP")
        title, spent, remaining, _ = self._summary()
        head = (
            f"<p><b>Privacy budget</b> {escape(title)} ({kind}) · spent {escape(spent)} · "
            f"<b>remaining {escape(remaining)}</b><br><small>kept in {escape(repr(self._store))}</small></p>"
        )
        return head + self.ledger.to_html(index=False)


def amounts_text(kind: BudgetKind, total: Cost, spent: Cost) -> tuple[str, str, str]:
    """A budget's total, spent and remaining amounts as its repr shows them (a zCDP remainder also in (ε, δ)).

    >>> from fractions import Fraction
    >>> amounts_text("zcdp", Cost(rho=Fraction(1, 2)), Cost(rho=Fraction(1, 4)))
    ('ρ=0.5', 'ρ=0.25', 'ρ=0.25 (ε=3.542 at δ=1e-06)')
    """
    remaining = (total - spent).describe(kind)
    if kind == "zcdp":
        at = zcdp_epsilon(float(total.rho - spent.rho), DISPLAY_DELTA)
        remaining += f" (ε={at:.4g} at δ={DISPLAY_DELTA:g})"
    shown = total.describe(kind)
    if kind in ("rdp", "advanced"):
        shown += " (Rényi filter)" if kind == "rdp" else " (advanced-composition filter)"
    return shown, spent.describe(kind), remaining


def check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"a budget's name must be a non-empty string, got {name!r}")
    return name


def _identity(data: pd.DataFrame | pd.Series[Any]) -> tuple[str, int, str]:
    """The ledger's record of protected data: its content fingerprint, row count and column names."""
    columns = list(map(str, data.columns)) if isinstance(data, pd.DataFrame) else [str(data.name)]
    return fingerprint(data), len(data), ", ".join(columns)


def budget_for_data(store: Ledger, kind: BudgetKind, total: Cost, *, name: str | None,
                    data: pd.DataFrame | pd.Series[Any] | None, extend: bool,
                    identity: tuple[str, int, str] | None = None) -> Budget:
    """The budget of ``data`` in ``store`` (by name, else by content fingerprint): reconnected, with a warning, or new.

    ``data=None`` (a Dask frame, whose content fingerprint would be a pass over all of it): the ``identity``
    given instead (Dask's token of the frame's graph), so the same files cannot get a second budget by name.
    """
    fingerprint = identity if data is None else _identity(data)
    legacy = None if data is None else lambda: legacy_fingerprint(data)
    record, existed = store.open_budget(kind, total, name=name, fingerprint=fingerprint, extend=extend, legacy=legacy)
    budget = Budget._bind(store, record)
    if existed:
        warn(
            f"reconnected to the budget of this data, {record.label} in {store!r}: {record.spent.describe(kind)} of "
            f"{record.total.describe(kind)} already spent in {store.count_lines(record.id)} ledger line(s)",
            ReconnectedWarning,
        )
    return budget


def share_budget(budget: Budget, data: pd.DataFrame | pd.Series[Any]) -> Budget:
    """``budget`` for ``data`` (``protect(budget=)``), after recording the data under it in the ledger.

    Data already protected under another budget is refused, so a fresh
    ``Budget(...)`` cannot give the same rows a second, unspent budget.

    >>> import dpframe
    >>> ledger = dpframe.Ledger.in_memory()
    >>> df = pd.DataFrame({"x": [1, 2, 3]})
    >>> shared = share_budget(Budget(epsilon=1.0, ledger=ledger), df)
    >>> share_budget(Budget(epsilon=1.0, ledger=ledger), df)
    Traceback (most recent call last):
    ...
    dpframe.errors.LedgerError: this data is already protected under budget ..., not ...; a second budget over the same people would spend twice. Reconnect to it with protect(its total and no name=), or protect(budget=) with that budget
    """
    budget._store.attach(budget._id, _identity(data), lambda: legacy_fingerprint(data))
    return budget


def _reconnect(ledger_id: str, location: str, budget_id: str) -> Budget:
    store = Ledger.find(ledger_id, location)
    return Budget._bind(store, store.record(budget_id))
