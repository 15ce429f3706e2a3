"""Entering and leaving protection: ``protect()``, Poisson sampling, and the curator's way out.

``protect()`` is where the data owner states what is public about the data:
its schema, the categories of categorical columns (a categorical dtype, or
``categories={column: [...]}``), and the privacy unit. Everything learned
later from the rows is private. Categorical dtypes made *after* protection
must list their categories explicitly, so every categorical column of a
protected frame has public categories.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, overload

import numpy as np
import pandas as pd

from dpframe.accounting.amplification import SampleAccount
from dpframe.accounting.budget import (
    Budget,
    LedgerLike,
    budget_for_data,
    check_name,
    resolve_ledger,
    share_budget,
    totals,
)
from dpframe.accounting.costs import Cost, exact
from dpframe.accounting.ledger import BOUNDED_LINE
from dpframe.errors import AlreadyProtectedError, LargeDeltaWarning, LedgerError, RefusedError, warn
from dpframe.noise.random import uniform_below
from dpframe.protection.analyst import holds_objects, plain_column, public_value
from dpframe.protection.base import UNPROTECTED_MARK, Protected, Rows, parts, wrap
from dpframe.protection.frame import ProtectedFrame
from dpframe.protection.labels import index_of, labelled, plain_index
from dpframe.protection.rules import refusal
from dpframe.protection.series import ProtectedSeries
from dpframe.protection.units import UNIT_LEVEL, Protection, unit_codes, unit_ids

# Sampling rates are exact fractions whose denominators fit the exact uniform sampler.
_RATE_BITS = 62


@overload
def protect(data: pd.DataFrame, *, epsilon: float | None = ..., delta: float = ..., rho: float | None = ...,
            budget: Budget | None = ..., privacy_unit: str | None = ..., max_contributions: int = ...,
            categories: Mapping[Any, Sequence[Any]] | None = ..., name: str | None = ...,
            ledger: LedgerLike = ..., extend: bool = ..., neighbours: str = ...,
            accounting: str | None = ...) -> ProtectedFrame: ...


@overload
def protect(data: pd.Series[Any], *, epsilon: float | None = ..., delta: float = ..., rho: float | None = ...,
            budget: Budget | None = ..., privacy_unit: str | None = ..., max_contributions: int = ...,
            categories: Mapping[Any, Sequence[Any]] | None = ..., name: str | None = ...,
            ledger: LedgerLike = ..., extend: bool = ..., neighbours: str = ...,
            accounting: str | None = ...) -> ProtectedSeries: ...


def protect(
    data: pd.DataFrame | pd.Series[Any],
    *,
    epsilon: float | None = None,
    delta: float = 0.0,
    rho: float | None = None,
    budget: Budget | None = None,
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    categories: Mapping[Any, Sequence[Any]] | None = None,
    name: str | None = None,
    ledger: LedgerLike = None,
    extend: bool = False,
    neighbours: str = "add/remove",
    accounting: str | None = None,
) -> ProtectedFrame | ProtectedSeries:
    """Protected data with a privacy budget; the original stays as it is.

    ``epsilon`` (and ``delta``) or ``rho`` give the budget's total. The budget
    is kept in a persistent ledger (``ledger=``: a path or
    :class:`~dpframe.Ledger`; default: docs/ledger.md) under the data's content
    fingerprint and, with ``name=``, a name: protecting the same data (or
    name) again, in any process, reconnects to its budget and says so
    (:class:`~dpframe.ReconnectedWarning`); a different
    total is refused unless ``extend=True`` raises it. ``budget=`` shares an
    existing :class:`~dpframe.Budget` (tables about the same people); data already
    protected under another budget is refused. With ``privacy_unit="user_id"`` the guarantee covers all of a
    person's rows, and each query uses at most ``max_contributions`` of them.
    ``categories={column: [...]}`` declares a column's public categories (it
    becomes categorical; other values become missing). A categorical dtype
    given here declares its categories too: make sure they do not come from
    the data itself (``astype("category")`` takes them from the data).
    ``accounting="rdp"`` keeps the (epsilon, delta) total in Rényi terms: a
    Rényi filter that composes releases by their Rényi curves
    (docs/accounting.md). A budget whose delta is at least 1/n for the
    data's n privacy units is accepted with a :class:`~dpframe.LargeDeltaWarning`.

    ``neighbours="replace"`` keeps the budget under bounded DP: neighbouring
    data sets differ in one replaced row, and the number of rows is public
    (``p.dp.count()`` is exact and free). Row-level only; queries whose
    replace-one sensitivity dpframe has not derived are refused, and a budget
    never mixes the two relations (``docs/privacy-model.md``).

    >>> import pandas as pd, dpframe
    >>> df = pd.DataFrame({"age": [23, 35, 47, 59], "city": ["Oslo", "Rome", "Oslo", "Lima"]})
    >>> p = dpframe.protect(df, epsilon=1.0, categories={"city": ["Lima", "Oslo", "Rome", "Kyiv"]},
    ...                     ledger=dpframe.Ledger.in_memory())
    >>> list(p.dtypes["city"].categories)
    ['Lima', 'Oslo', 'Rome', 'Kyiv']
    >>> p.dp.budget
    Budget(ε=1, δ=0): spent ε=0, δ=0, remaining ε=1, δ=0, 0 release(s)
    """
    if isinstance(data, Protected):
        raise AlreadyProtectedError(ALREADY_PROTECTED)
    if not isinstance(data, (pd.DataFrame, pd.Series)):
        raise TypeError(f"protect() takes a pandas DataFrame or Series, got {type(data).__name__}")
    if UNPROTECTED_MARK in data.attrs:
        raise refusal("protect() of data from p.dp.unprotected()", "reprotect")
    if budget is not None:
        if (epsilon is not None or rho is not None or delta or name is not None or ledger is not None or extend
                or accounting is not None):
            raise ValueError("pass either budget= or epsilon=/delta=/rho= (with name=, ledger=, extend=, "
                             "accounting=), not both")
        if not isinstance(budget, Budget):
            raise TypeError(f"budget must be a dpframe.Budget, got {type(budget).__name__}")
    else:
        kind, total = totals(epsilon, delta, rho, accounting)
        if not isinstance(extend, bool):
            raise TypeError(f"extend must be True or False, got {extend!r}")
        store = resolve_ledger(ledger)
        if name is not None:
            check_name(name)
    check_contributions(max_contributions)
    check_not_reserved(data)
    if len(data) == 0:
        raise ValueError("cannot protect an empty frame: there is nothing to analyse")
    _check_missing_testable(data)
    units = None
    check_unit_column(data, privacy_unit, max_contributions)
    if privacy_unit is not None:
        if data[privacy_unit].isna().any():
            raise ValueError(f"privacy_unit column {privacy_unit!r} has missing values; every row needs a unit")
        units = data[privacy_unit].to_numpy()
        try:
            pd.factorize(units)  # the units are grouped by value in every query
        except TypeError:
            raise TypeError(f"privacy_unit column {privacy_unit!r} holds values that cannot be compared as ids "
                            "(e.g. lists); convert them first, e.g. with .astype(str)") from None
        units = plain_column(data[privacy_unit]).to_numpy()
    if neighbours not in NEIGHBOURS:
        raise ValueError(f"neighbours must be 'add/remove' (the default) or 'replace' (bounded DP, n public), "
                         f"got {neighbours!r}")
    if neighbours == "replace" and privacy_unit is not None:
        raise ValueError("bounded DP (neighbours='replace') is row-level: replacing a unit of several rows could "
                         "change n, which it makes public; drop privacy_unit= or keep add/remove neighbours")
    declared = _declare_categories(data, categories)
    # Last: every argument was checked before the ledger records anything.
    if budget is None:
        budget = budget_for_data(store, kind, total, name=name, data=data, extend=extend)
        total_delta = total.delta  # a reconnected budget has this total: the recorded one, or extended to it
    else:
        budget = share_budget(budget, data)
        total_delta = budget.total.cost.delta
    _warn_if_delta_large(total_delta, len(data) if units is None else len(pd.unique(units)))
    _keep_one_relation(budget, neighbours)
    rows = Rows()
    protection = Protection(budget, max_contributions, privacy_unit, neighbours=neighbours,
                            origin=rows if neighbours == "replace" else None)
    protected: ProtectedFrame | ProtectedSeries = wrap(_with_units(_plain_objects(declared), units), protection, rows)
    return protected


def _plain_objects(data: Any) -> Any:
    """``data`` with every value of its object columns and row labels plain (:func:`~dpframe.protection.analyst.plain`).

    Values of the curator's own classes could raise from their ``__hash__`` or
    ``__eq__`` in a later operation, and whether one exists would show. A
    column of built-in values -- nearly every column -- is kept as it is.
    """
    frame = data if isinstance(data, pd.DataFrame) else data.to_frame()
    out = frame
    for position in _positions_holding_objects(frame):
        column = frame.iloc[:, position]
        converted = plain_column(column)
        if converted is not column:
            out = out.copy(deep=False) if out is frame else out
            out.isetitem(position, converted)  # type: ignore[arg-type]
    index = out.index
    levels = [index.get_level_values(i) for i in range(index.nlevels)]
    plain_levels = [pd.Index(plain_column(pd.Series(level, dtype=level.dtype)), dtype=level.dtype, name=level.name,
                             tupleize_cols=False)
                    if holds_objects(level.dtype) else level for level in levels]
    if any(new is not old for new, old in zip(plain_levels, levels)):
        out = out.copy(deep=False) if out is frame else out
        out.index = index_of(plain_levels, index.names)
    return out if isinstance(data, pd.DataFrame) else out.iloc[:, 0]


def _positions_holding_objects(frame: pd.DataFrame) -> list[int]:
    """The positions of the columns whose values are Python objects (:func:`holds_objects`), read from the dtypes:
    the other columns need no look at their values."""
    return [position for position, dtype in enumerate(frame.dtypes) if holds_objects(dtype)]


def check_contributions(max_contributions: Any) -> None:
    """Refuse a ``max_contributions`` that is not an integer >= 1 (pandas and Dask protect)."""
    if isinstance(max_contributions, bool) or not isinstance(max_contributions, int) or max_contributions < 1:
        raise ValueError(f"max_contributions must be an integer >= 1, got {max_contributions!r}")


def check_not_reserved(data: pd.DataFrame | pd.Series[Any]) -> None:
    """Refuse a column or index level named ``_dp_unit`` (of a pandas object, or of a Dask one's ``_meta``)."""
    names = list(data.columns) if isinstance(data, pd.DataFrame) else [data.name]
    if UNIT_LEVEL in names or UNIT_LEVEL in data.index.names:
        raise ValueError(f"{UNIT_LEVEL!r} is reserved for dpframe's record of privacy units; rename that column")


def check_unit_column(data: Any, privacy_unit: str | None, max_contributions: int) -> None:
    """Refuse, from the schema, a ``privacy_unit`` that is not a column of ``data`` (a pandas or Dask frame),
    or a ``max_contributions`` without one."""
    if privacy_unit is None:
        if max_contributions != 1:
            raise ValueError("max_contributions needs privacy_unit=: with row-level privacy each row is one unit")
    elif not hasattr(data, "columns") or privacy_unit not in data.columns:
        raise KeyError(f"privacy_unit {privacy_unit!r} is not a column of this frame")


NEIGHBOURS = ("add/remove", "replace")
ALREADY_PROTECTED = ("this data is already protected; query it directly (its budget is .dp.budget), or protect the "
                     "original data with protect(budget=p.dp.budget) to share that budget")


def _keep_one_relation(budget: Budget, neighbours: str) -> None:
    """A budget composes releases under one neighbouring relation: mark a bounded one, refuse a mix.

    Under replace-one neighbours an add/remove release of cost ε is only 2ε-DP,
    and a bounded release (n exact) has no add/remove guarantee at all, so the
    two cannot share a total.
    """
    used = budget.store.count_lines(budget.id) > 0  # a fresh budget: no ledger to read
    bounded = used and bool((budget.ledger["query"] == BOUNDED_LINE).any())
    if neighbours == "replace" and used and not bounded:
        raise LedgerError(
            f"this budget ({budget.id}) already has releases under add/remove neighbours; bounded DP "
            "(neighbours='replace') needs a budget of its own: protect under another name= or ledger="
        )
    if neighbours != "replace" and bounded:
        raise LedgerError(
            f"this budget ({budget.id}) is kept under replace-one neighbours (bounded DP): protect with "
            "neighbours='replace', or use another name= or ledger= for add/remove neighbours"
        )
    if neighbours == "replace" and not bounded:
        budget._charge(Cost(), query=BOUNDED_LINE, mechanism="none", noise="none",
                       rule="this budget is kept under replace-one neighbours (bounded DP): n is public")


def _warn_if_delta_large(delta: Fraction, units: int) -> None:
    """Warn (the curator, at protect) when the budget's δ is at least 1/n for this data's n privacy units.

    Only here: protect() holds the raw data legitimately, and its caller is the
    curator. Queries never compare δ with n (n is private), so their behaviour
    and messages do not depend on it; a query's δ is part of the budget's, so
    a budget with δ < 1/n keeps every query's δ below 1/n too.
    """
    if delta * units >= 1:
        warn(f"the budget's delta ({float(delta):.3g}) is at least 1/n for the number n of privacy units in this "
             "data: a delta that large allows releasing some people's records outright. Use a delta well below "
             "1/n (e.g. 1/n² or less)", LargeDeltaWarning)


def _check_missing_testable(data: pd.DataFrame | pd.Series[Any]) -> None:
    """Refuse (to the curator, at protect) values for which pandas cannot even tell whether they are missing.

    A signaling NaN (``Decimal("sNaN")``) makes ``isna`` raise; once protected,
    every query would then fail or succeed depending on whether one exists.
    """
    frame = data if isinstance(data, pd.DataFrame) else data.to_frame()
    for position, dtype in enumerate(frame.dtypes):  # read from the dtypes once: only object columns are looked at
        if pd.api.types.is_object_dtype(dtype):
            column = frame.columns[position]
            try:
                frame.iloc[:, position].isna()
            except ArithmeticError:
                raise ValueError(f"column {column!r} holds a value for which pandas cannot tell whether it is "
                                 "missing (a signaling NaN, Decimal('sNaN')); replace it before protect()") from None


def _declare_categories(data: Any, categories: Mapping[Any, Sequence[Any]] | None) -> Any:
    if categories is None:
        return data
    if not isinstance(categories, Mapping):
        raise TypeError("categories must be a dict {column: [values, ...]}")
    if not isinstance(data, pd.DataFrame):
        data = data.to_frame()
        return _declare_categories(data, categories).iloc[:, 0]
    declared = {}
    for column, values in categories.items():
        if column not in data.columns:
            raise KeyError(f"categories given for {column!r}, which is not a column")
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence | pd.Index | np.ndarray):
            raise TypeError(f"the categories of {column!r} must be a list of values")
        keys = pd.Index(public_value(list(values), f"categories of {column!r}"))
        if len(keys) == 0 or not keys.is_unique or keys.hasnans:
            raise ValueError(f"the categories of {column!r} must be distinct, non-missing values (at least one)")
        declared[column] = pd.CategoricalDtype(keys)
    return data.astype(declared)


def _with_units(data: Any, units: Any) -> Any:
    """A shallow copy of ``data`` whose index ends with the ``_dp_unit`` record."""
    unit_index: pd.Index[Any] = (
        pd.RangeIndex(len(data), name=UNIT_LEVEL) if units is None else pd.Index(units, name=UNIT_LEVEL)
    )
    marked = data.copy(deep=False)
    original = data.index
    if isinstance(original, pd.RangeIndex) and original.name is None and original.start == 0 and original.step == 1:
        # The default index carries no information: the unit record replaces it.
        marked.index = unit_index
    else:
        levels = [labelled(original.get_level_values(i)) for i in range(original.nlevels)]
        marked.index = index_of([*levels, unit_index], [*original.names, UNIT_LEVEL])
    marked.attrs = {}
    return marked


def poisson_sample(obj: Protected, rate: float | Fraction) -> Any:
    """Keep each privacy unit (all its rows) independently with probability ``rate``.

    Queries on the sample (and on anything derived from it) are charged the
    amplified cost of their running total (:mod:`dpframe.accounting.amplification`);
    a sample of a sample is accounted with the first sample, at its rate
    (conservative). The choice uses the secure
    random source and is never released. A rate whose exact fraction has a
    denominator beyond 2**62 is rounded down, and the rounded rate is the
    one accounted.
    """
    found = parts(obj)
    assert found is not None
    data, protection, sample = found
    if protection.bounded:
        raise RefusedError(
            "p.dp.sample() is refused under bounded DP: Poisson sampling makes the sample's size private, and its "
            "amplification theorem is for add/remove neighbours, not replace-one; protect with add/remove "
            "neighbours to sample"
        )
    q = exact(rate, "rate")
    if not 0 < q <= 1:
        raise ValueError(f"rate must lie in (0, 1], got {rate!r}")
    if q.denominator > 2**_RATE_BITS:
        q = Fraction(math.floor(q * 2**_RATE_BITS), 2**_RATE_BITS)
    codes = unit_codes(unit_ids(data))
    if len(codes) == 0 or q == 1:
        kept = data
    else:
        keep_unit = uniform_below(q.denominator, size=int(codes.max()) + 1) < q.numerator
        kept = data[keep_unit[codes]]
    # A sample of a sample stays in the first sample's account, at its rate: everything drawn
    # from that sample is one mechanism on it (the inner sampling is part of that mechanism).
    return obj._wrap(kept, Rows(sample or SampleAccount(q)), lineage=obj._lineage)


def unprotected(obj: Protected) -> Any:
    """The exact data behind a protected object, for the trusted curator: NOT private.

    Recorded in the ledger (at no cost) as an exact read. The result is a
    plain pandas object marked so that it can neither be protected again nor
    merged back into protected data (the mark lives in ``attrs``: pandas
    drops it in some operations, so treat everything derived from it as
    exact data).
    """
    found = parts(obj)
    assert found is not None
    data, protection, _ = found
    protection.budget._charge(Cost(), query="unprotected", mechanism="none: exact data", noise="none",
                              rule="not a release: the trusted curator's exact copy; nothing derived from it is private")
    if data.index.nlevels > 1:
        dropped = data.droplevel(UNIT_LEVEL)
        plain = dropped.set_axis(plain_index(dropped.index), axis=0)
    elif protection.privacy_unit is None:
        # Row numbers, as before protect(); a RangeIndex stays one, so the fingerprint of the same rows
        # matches their budget again if the mark is lost.
        index = data.index
        numbers = (pd.RangeIndex(index.start, index.stop, index.step) if isinstance(index, pd.RangeIndex)
                   else pd.Index(index.to_numpy()))
        plain = data.set_axis(numbers, axis=0)
    else:
        plain = data.reset_index(drop=True)
    plain = plain.copy()
    plain.attrs = {UNPROTECTED_MARK: protection.key}
    return plain
