"""Protected Dask frames: the schema-only pandas target, refusals, stable transformations and the queries."""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any, NoReturn

import dask.dataframe as dd
import pandas as pd
from dask.dataframe.extensions import register_dataframe_accessor, register_series_accessor

from dpframe.accounting.budget import Budget, LedgerLike, budget_for_data, check_name, resolve_ledger, totals
from dpframe.dask import moments, selection, tables, units
from dpframe.dask.describe import describe_frame, describe_series
from dpframe.dask.shield import computed
from dpframe.errors import AlreadyProtectedError, RefusedError
from dpframe.noise.mechanism import Privacy
from dpframe.protection.base import Rows
from dpframe.protection.indexing import column_key
from dpframe.protection.lineage import Lineage, carried
from dpframe.protection.protect import ALREADY_PROTECTED, check_contributions, check_not_reserved, check_unit_column
from dpframe.protection.rowwise import constant, elementwise, is_constant
from dpframe.protection.rules import attribute_refusal, refusal
from dpframe.protection.units import Protection
from dpframe.queries import scalar
from dpframe.queries.hypothesis import ChiSquareResult
from dpframe.queries.plan import GroupBounds, Target
from dpframe.results import DPFloat, DPInt

# What a protected Dask object lets through (as the pandas one): column selection, filters by a condition
# on its own rows, row-wise assign. Everything else is refused with the pandas object's message. Not
# npartitions: it can follow the data's size (read_csv's blocks, a Parquet file's row groups, from_pandas'
# chunksize), so it is refused as the number of rows is.
_ALLOWED = frozenset({"columns", "dtypes", "dtype", "name"})
# Dask's own ways to materialise rows (pandas has none of them): refused as exact reads.
_MATERIALISE = frozenset({"compute", "persist", "to_pandas", "to_delayed", "to_dask_array", "to_records",
                          "partitions", "get_partition", "to_parquet", "to_csv", "to_json", "to_hdf", "to_sql",
                          "to_bag", "to_html", "visualize"})


class _Protected:
    """A Dask frame or series with its protection: exact reads are refused, queries go through ``.dp``."""

    _kind = "ProtectedFrame"
    _rows: Any  # the Dask frame or series: with a privacy unit, all rows, shuffled by unit (dpframe.dask.units)
    _protection: Protection
    # The identity of the row sequence (pandas' Rows): kept by column selection and row-wise operations, new
    # after a filter. Dask lines operands up by row label, and labels need not be unique (a user's index, or
    # the unit after a shuffle): different rows would be joined, duplicating a person's rows.
    _identity: Rows
    # Each column's expression (dpframe.protection.lineage): what earlier releases of it made public.
    _lineage: dict[Hashable, Lineage]

    def __init__(self, rows: Any, protection: Protection, identity: Rows | None = None,
                 lineage: Mapping[Hashable, Lineage] | None = None):
        object.__setattr__(self, "_rows", rows)
        object.__setattr__(self, "_protection", protection)
        object.__setattr__(self, "_identity", Rows() if identity is None else identity)
        labels = rows.columns if isinstance(rows, dd.DataFrame) else [rows.name]
        object.__setattr__(self, "_lineage", carried(lineage or {}, labels))  # unlisted columns: new expressions

    def _same_rows(self, other: _Protected, operation: str) -> None:
        """Refuse, as pandas does, an operand from another protect() or from other rows."""
        if other._protection.key != self._protection.key:
            raise refusal(operation, "mixing", "the two objects come from different protect() calls")
        if other._identity is not self._identity:
            raise refusal(operation, "mixing", "the two objects hold different rows (one was filtered since they "
                                               "were the same frame)")

    @property
    def _rows_in_use(self) -> Any:
        """The rows a query may use, read after its charge: all, or at most ``max_contributions`` per unit."""
        return units.in_use(self._rows, self._protection)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # a protocol probe (numpy's __array_struct__, copy's __deepcopy__): not there
            raise AttributeError(name)
        if name in _ALLOWED:
            return getattr(object.__getattribute__(self, "_rows"), name)
        if name in _MATERIALISE:
            raise refusal(f"{self._kind}.{name}", "exact")
        raise attribute_refusal(self._kind, name)

    def __len__(self) -> int:
        raise refusal(f"len({self._kind})", "exact", "the number of rows is private")

    def __bool__(self) -> bool:
        raise refusal(f"bool({self._kind})", "exact", "a truth value would be read from the rows")

    def __iter__(self) -> Iterator[Any]:
        raise refusal(f"iterating over a {self._kind}", "exact")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NoReturn:
        raise refusal(f"converting a {self._kind} to a numpy array", "exact")

    def __repr__(self) -> str:  # the schema and the budget, as the pandas objects show them: never rows
        meta = self._rows._meta
        schema = (", ".join(f"{c}: {t}" for c, t in meta.dtypes.items()) if isinstance(meta, pd.DataFrame)
                  else f"{meta.name!r}: {meta.dtype}")
        budget = self._protection.budget
        # Not the number of partitions: it can follow the data's size (see _ALLOWED).
        return (f"{self._kind}({schema}; rows hidden; a Dask {type(self._rows).__name__})\nbudget {budget.total} (remaining {budget.remaining}); "
                f"privacy unit: {self._protection.unit_description}")

    @property
    def dp(self) -> DaskQueries:
        """The private queries of this object."""
        return DaskQueries(self)

    def _target(self) -> Target:
        """A pandas target over the schema only (``_meta``, no rows): planning and charging never read data."""
        return Target(self._rows._meta, self._protection, lineage=self._lineage)


class ProtectedDaskFrame(_Protected):
    """A protected Dask DataFrame."""

    def __iter__(self) -> Iterator[Any]:  # the column names, as pandas (public schema)
        return iter(self._rows.columns)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, ProtectedDaskSeries):  # a filter by a condition computed from these rows
            self._same_rows(key, "ProtectedFrame[condition]")
            return ProtectedDaskFrame(self._rows[_mask(key._rows)], self._protection, self._identity.derived(),
                                      self._lineage)
        # The pandas object's check of the key (it reads only the column labels): the same refusals.
        selected = self._rows[column_key(self._rows.columns, key, "p[key]")]
        kind = ProtectedDaskSeries if isinstance(selected, dd.Series) else ProtectedDaskFrame
        return kind(selected, self._protection, self._identity, self._lineage)

    def assign(self, **columns: Any) -> ProtectedDaskFrame:
        """Row-wise new columns: protected Dask series of the same rows, callables of the frame, or constants."""
        plain: dict[str, Any] = {}
        # Untouched columns and assigned protected series keep their expressions; constants are new ones.
        lineage = {label: token for label, token in self._lineage.items() if label not in columns}
        for name, value in columns.items():
            if callable(value):
                value = value(self)
            if is_constant(value):  # the same value in every row, as pandas' assign(c=1)
                plain[name] = constant(value, f"assign({name}=...)")
                continue
            if not isinstance(value, ProtectedDaskSeries):
                raise TypeError(f"assign({name}=...) takes a constant or a row-wise expression of this frame's "
                                "columns")
            self._same_rows(value, f"assign({name}=...)")
            plain[name] = value._rows
            lineage[name] = next(iter(value._lineage.values()))
        return ProtectedDaskFrame(self._rows.assign(**plain), self._protection, self._identity, lineage)


class ProtectedDaskSeries(_Protected):
    """A protected Dask Series: row-wise comparisons and arithmetic stay protected."""

    _kind = "ProtectedSeries"

    def _rowwise(self, other: Any, op: Any, symbol: str) -> ProtectedDaskSeries:
        operation = f"ProtectedSeries {symbol}"
        if isinstance(other, _Protected):
            self._same_rows(other, operation)
            other = other._rows
        else:  # a public series or array would be lined up with the rows (pandas refuses it)
            other = constant(other, operation)
        # The pandas row-wise evaluation per partition: result type from the schema, and a value the operation
        # fails on becomes missing, so no error (nor its message) can depend on a value.
        metas = [self._rows._meta, other._meta if isinstance(other, dd.Series) else other]
        meta = elementwise(op, metas, operation=operation)
        rows = self._rows.map_partitions(_elementwise, other, op=op, operation=operation, dtype=meta.dtype, meta=meta)
        return ProtectedDaskSeries(rows, self._protection, self._identity)

    def abs(self) -> ProtectedDaskSeries:
        """Row-wise absolute values, as pandas' ``abs``."""
        return self._unary(operator.abs, "abs")

    def _unary(self, op: Any, symbol: str) -> ProtectedDaskSeries:
        operation = f"ProtectedSeries {symbol}"
        meta = elementwise(op, [self._rows._meta], operation=operation)
        rows = self._rows.map_partitions(_elementwise, op=op, operation=operation, dtype=meta.dtype, meta=meta)
        return ProtectedDaskSeries(rows, self._protection, self._identity)


@dataclasses.dataclass(frozen=True)
class _Reflected:
    """``op`` with its operands swapped (``2 - s`` is ``s.__rsub__(2)``); picklable, for Dask's workers."""

    op: Callable[[Any, Any], Any]

    def __call__(self, a: Any, b: Any) -> Any:
        return self.op(b, a)


for _name, _symbol in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="),
                       ("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("and_", "&"), ("or_", "|"),
                       ("xor", "^")):
    _dunder = _name.rstrip("_")
    setattr(ProtectedDaskSeries, f"__{_dunder}__",
            functools.partialmethod(ProtectedDaskSeries._rowwise, op=getattr(operator, _name), symbol=_symbol))
    if _symbol not in ("==", "!=", "<", "<=", ">", ">="):  # Python reflects comparisons by itself
        setattr(ProtectedDaskSeries, f"__r{_dunder}__",
                functools.partialmethod(ProtectedDaskSeries._rowwise, op=_Reflected(getattr(operator, _name)),
                                        symbol=_symbol))
for _name, _symbol in (("invert", "~"), ("neg", "-"), ("abs", "abs")):
    setattr(ProtectedDaskSeries, f"__{_name}__",
            functools.partialmethod(ProtectedDaskSeries._unary, op=getattr(operator, _name), symbol=_symbol))


def _elementwise(*operands: Any, op: Any, operation: str, dtype: Any) -> Any:
    """One partition of a row-wise operation, as on pandas (:func:`dpframe.protection.rowwise.elementwise`)."""
    return elementwise(op, operands, operation=operation, dtypes=dtype)


def _mask(condition: Any) -> Any:
    """A protected condition as a plain boolean mask, missing as False, as pandas' filters; refused if not boolean.

    A mask of other values would be taken as row labels, and Dask's error would print them.
    """
    if not pd.api.types.is_bool_dtype(condition.dtype):
        raise TypeError(f"p[condition] needs a boolean condition, got dtype {condition.dtype}; compare values to "
                        "build one (e.g. p['x'] > 0), or convert with .astype('boolean')")
    if condition.dtype == bool:
        return condition
    # In a partition function: Dask's own astype(bool) of a mask made the filter return the mask (dask 2026.8).
    return condition.map_partitions(_as_bool, meta=condition._meta.astype(bool))


def _as_bool(part: Any) -> Any:
    """A nullable boolean partition as numpy booleans, missing as False."""
    return part.fillna(False).astype(bool)


class DaskQueries:
    """``.dp`` of a protected Dask object: queries charged on the client before Dask computes."""

    def __init__(self, obj: _Protected):
        self._obj = obj

    def protect(self, **kwargs: Any) -> NoReturn:
        """Refused, as on pandas: this data is already protected."""
        raise AlreadyProtectedError(ALREADY_PROTECTED)

    def __getattr__(self, name: str) -> NoReturn:
        # A pandas .dp query without a Dask path yet: say so (a bare AttributeError would read as a typo).
        from dpframe.accessor import DataFrameAccessor, SeriesAccessor

        if not name.startswith("_") and (hasattr(DataFrameAccessor, name) or hasattr(SeriesAccessor, name)):
            raise NotImplementedError(
                f".dp.{name} has no Dask path yet (docs/dask.md, Status): nothing was charged. Ask it of data you "
                "can hold in memory as a pandas frame protected with protect(budget=p.dp.budget), so that it "
                "spends this same budget")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def budget(self) -> Budget:
        """The budget these queries spend."""
        return self._obj._protection.budget

    def _series(self, query: str) -> Any:
        if not isinstance(self._obj, ProtectedDaskSeries):
            raise TypeError(f"{query} is about one column: ask it of a protected series, e.g. p['x'].dp")
        return self._obj._rows_in_use

    def count(self, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
              mechanism: str | None = None) -> DPInt:
        """Noisy number of rows (frames) or non-missing values (series), as the pandas ``.dp.count``."""
        target = self._obj._target()
        data = self._obj._rows_in_use
        read = (lambda: int(computed(data.count()))) if isinstance(data, dd.Series) else (
            lambda: int(computed(data.map_partitions(len).sum())))
        return scalar.count(target, target.privacy(epsilon, delta, rho, mechanism), read)

    def _column(self, query: str) -> moments.Column:
        return moments.Column(self._series(query), self._obj._target())

    def sum(self, *, bounds: Any = None, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None, mechanism: str | None = None, clipping: bool | None = None) -> DPFloat | DPInt:
        """Noisy sum of the values clipped to ``bounds`` (found privately if None), as the pandas ``.dp.sum``."""
        return self._column("sum").sum(bounds, _privacy(epsilon, delta, rho, mechanism), clipping)

    def mean(self, *, bounds: Any = None, epsilon: float | None = None, delta: float | None = None,
             rho: float | None = None, mechanism: str | None = None, clipping: bool | None = None) -> DPFloat:
        """Noisy mean of the values clipped to ``bounds`` (found privately if None), as the pandas ``.dp.mean``."""
        return self._column("mean").moment("mean", bounds, _privacy(epsilon, delta, rho, mechanism), clipping)

    def var(self, *, bounds: Any = None, ddof: int = 1, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None, mechanism: str | None = None, clipping: bool | None = None) -> DPFloat:
        """Noisy variance of the values clipped to ``bounds`` (found privately if None), as the pandas ``.dp.var``."""
        return self._column("var").moment("var", bounds, _privacy(epsilon, delta, rho, mechanism), clipping, ddof)

    def std(self, *, bounds: Any = None, ddof: int = 1, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None, mechanism: str | None = None, clipping: bool | None = None) -> DPFloat:
        """Noisy standard deviation of the clipped values, as the pandas ``.dp.std``."""
        return self._column("std").moment("std", bounds, _privacy(epsilon, delta, rho, mechanism), clipping, ddof)

    def quantile(self, q: Any = 0.5, *, bounds: Any = None, epsilon: float | None = None,
                 rho: float | None = None) -> Any:
        """Private quantile(s) of the values clipped to ``bounds``, as the pandas ``.dp.quantile``."""
        return self._column("quantile").quantile(q, bounds, epsilon, rho, "quantile")

    def median(self, *, bounds: Any = None, epsilon: float | None = None, rho: float | None = None) -> DPFloat:
        """Private median (the exponential mechanism), as the pandas ``.dp.median`` with its default method."""
        answer: DPFloat = self._column("median").quantile(0.5, bounds, epsilon, rho, "median")
        return answer

    def describe(self, *, epsilon: float, delta: float | None = None, weights: Any = None,
                 percentiles: Any = (0.25, 0.5, 0.75), bounds: Any = None, keys: Any = None, progress: bool = True,
                 include: Any = "all") -> Any:
        """Private ``describe``, as the pandas ``.dp.describe`` of a frame (``weights``, ``include``) or a series."""
        target = self._obj._target()
        arguments = {"epsilon": epsilon, "delta": delta, "percentiles": percentiles, "bounds": bounds, "keys": keys,
                     "progress": progress}
        data = self._obj._rows_in_use
        if isinstance(data, dd.Series):
            if weights is not None or include != "all":
                raise TypeError("weights= and include= describe the columns of a frame, not a series")
            return describe_series(data, target, **arguments)
        return describe_frame(data, target, include, weights=weights, **arguments)

    def synthesize(self, epsilon: float | None = None, delta: float | None = None, *, rho: float | None = None,
                   n: int | None = None, method: str = "aim", columns: Any = None, marginals: Any = None,
                   bounds: Any = None, categories: Any = None, bins: Any = None, progress: bool = True,
                   random_state: int | None = None) -> pd.DataFrame:
        """A synthetic pandas frame, as the pandas ``p.dp.synthesize`` (declared domains; dpframe/dask/synthesis.py)."""
        from dpframe.dask.synthesis import synthesize

        return synthesize(self._obj, epsilon=epsilon, delta=delta, rho=rho, n=n, method=method, columns=columns,
                          marginals=marginals, bounds=bounds, categories=categories, bins=bins, progress=progress,
                          random_state=random_state)

    def histogram(self, bins: Any = 10, *, bounds: Any = None, epsilon: float | None = None,
                  delta: float | None = None, rho: float | None = None, mechanism: str | None = None) -> pd.Series[Any]:
        """Noisy counts per bin, as the pandas ``.dp.histogram`` (:mod:`dpframe.dask.tables`)."""
        column = self._series("histogram")
        target = self._obj._target()
        return tables.histogram(target, column, bins, bounds, target.privacy(epsilon, delta, rho, mechanism))

    def value_counts(self, subset: Any = None, *, keys: Any = None, normalize: bool = False, sort: bool = True,
                     dropna: bool = True, epsilon: float | None = None, delta: float | None = None,
                     rho: float | None = None, mechanism: str | None = None) -> pd.Series[Any]:
        """Noisy count of each value (series) or combination (frame, of ``subset``), as the pandas ``value_counts``."""
        target = self._obj._target()
        if isinstance(target.obj, pd.Series):
            if subset is not None:
                raise TypeError("value_counts of a series takes no subset")
            columns = [target.obj.name]
        else:
            columns = list(target.obj.columns) if subset is None else list(subset)
        return tables.value_counts(
            target, self._obj._rows_in_use, columns, keys,
            lambda selects: target.privacy(epsilon, delta, rho, mechanism, selects_partitions=selects),
            normalize, sort, dropna)

    def crosstab(self, index: Any, columns: Any, *, keys: Any = None, normalize: bool | str = False,
                 margins: bool = False, epsilon: float | None = None, delta: float | None = None,
                 rho: float | None = None, mechanism: str | None = None) -> pd.DataFrame:
        """Noisy contingency table of two columns, as the pandas ``p.dp.crosstab`` (column names)."""
        target = self._obj._target()
        return tables.crosstab(
            target, self._obj._rows_in_use, index, columns, keys,
            lambda selects: target.privacy(epsilon, delta, rho, mechanism, selects_partitions=selects),
            normalize, margins)

    def groupby(self, by: Any, keys: Any = None, *, max_groups: int | None = None,
                max_rows_per_group: int | None = None) -> Any:
        """Private per-group aggregates, as the pandas ``p.dp.groupby`` (column names; bounds declared).

        ``max_groups`` and ``max_rows_per_group`` are refused (before anything is charged): the two-dimensional
        bounding is not implemented over the partitions of a Dask frame yet.
        """
        if isinstance(self._obj, ProtectedDaskSeries):
            raise TypeError("groupby is asked of a protected frame, e.g. p.dp.groupby('k')")
        if GroupBounds.of(max_groups, max_rows_per_group) is not None:  # argument errors first, as on pandas
            raise RefusedError("max_groups and max_rows_per_group are not available on Dask frames yet: group "
                               "without them (each unit keeps max_contributions rows), or compute() the data "
                               "into pandas and protect that")
        return tables.groupby(self._obj._target(), self._obj._rows_in_use, by, keys)

    def _frame(self, query: str) -> Any:
        if isinstance(self._obj, ProtectedDaskSeries):
            raise TypeError(f"{query} is asked of a protected frame, e.g. p.dp.{query}('c', ...)")
        return self._obj._rows_in_use

    def mode(self, *, epsilon: float | None = None, keys: Any = None, delta: float | None = None,
             rho: float | None = None, mechanism: str | None = None) -> pd.Series[Any]:
        """The most common category, privately selected, as the pandas ``mode``."""
        return selection.categories("mode", self._obj._target(), self._series("mode"), None, keys, epsilon, delta, rho,
                                    mechanism)

    def top_k(self, k: int, *, epsilon: float | None = None, keys: Any = None, delta: float | None = None,
              rho: float | None = None, mechanism: str | None = None) -> pd.Series[Any]:
        """The ``k`` most common categories, privately selected, as the pandas ``top_k``."""
        return selection.categories("top_k", self._obj._target(), self._series("top_k"), k, keys, epsilon, delta, rho,
                                    mechanism)

    def chisquare(self, column: Any, expected: Any = None, *, keys: Any = None, simulations: int = 999,
                  epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
                  mechanism: str | None = None) -> ChiSquareResult:
        """Private chi-squared goodness-of-fit test, as the pandas ``p.dp.chisquare``."""
        return selection.chisquare(self._obj._target(), self._frame("chisquare"), column, expected, keys,
                                   _privacy(epsilon, delta, rho, mechanism), simulations)

    def chi2_contingency(self, index: Any, columns: Any, *, keys: Any = None, simulations: int = 999,
                         epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
                         mechanism: str | None = None) -> ChiSquareResult:
        """Private chi-squared test of independence, as the pandas ``p.dp.chi2_contingency``."""
        return selection.chi2_contingency(self._obj._target(), self._frame("chi2_contingency"), index, columns, keys,
                                          _privacy(epsilon, delta, rho, mechanism), simulations)


def _privacy(epsilon: float | None, delta: float | None, rho: float | None,
             mechanism: str | None) -> Callable[[Target], Privacy]:
    """The query's privacy, resolved on its target when the pandas accessor would (after dates become seconds)."""
    return lambda target: target.privacy(epsilon, delta, rho, mechanism)


def protect(data: Any, *, epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
            name: str | None = None, ledger: LedgerLike = None, accounting: str | None = None,
            privacy_unit: str | None = None, max_contributions: int = 1) -> Any:
    """Protect a Dask frame or series under a named budget (add/remove neighbours).

    With ``privacy_unit="user"`` the guarantee covers all of a user's rows and queries use at most
    ``max_contributions`` of them (:mod:`dpframe.dask.units`: a lazy shuffle by unit, then the per-unit bound).
    """
    if name is None:
        raise ValueError("protect() of a Dask frame needs name=: a budget is found by a fingerprint of the "
                         "data's content, which would take a pass over all of it")
    check_name(name)
    kind, total = totals(epsilon, delta, rho, accounting)
    check_contributions(max_contributions)
    check_not_reserved(data._meta)
    check_unit_column(data, privacy_unit, max_contributions)
    if privacy_unit is not None:
        units.check_unit_dtype(data._meta, privacy_unit)
    # Dask's name of the frame is a token of its graph (the files read, or a hash of in-memory data): the same
    # data protected again under another name meets its first budget, as pandas' content fingerprint does.
    # The row count is not known without a pass (-1).
    columns = list(map(str, data.columns)) if isinstance(data, dd.DataFrame) else [str(data.name)]
    identity = (f"dask {data._name}", -1, ", ".join(columns))
    budget = budget_for_data(resolve_ledger(ledger), kind, total, name=name, data=None, extend=False,
                             identity=identity)
    protection = Protection(budget, max_contributions, privacy_unit)
    if privacy_unit is not None:
        data = units.by_unit(data, privacy_unit)
    return (ProtectedDaskSeries if isinstance(data, dd.Series) else ProtectedDaskFrame)(data, protection)


class _Front:
    """``.dp`` of a plain Dask object: only ``protect``."""

    def __init__(self, obj: Any):
        self._obj = obj

    def protect(self, **kwargs: Any) -> Any:
        """See :func:`protect`."""
        return protect(self._obj, **kwargs)


def register() -> None:
    """Register ``.dp`` on Dask DataFrames and Series (Dask's accessor registration)."""
    # Dask's registration functions are untyped.
    register_dataframe_accessor("dp")(_Front)  # type: ignore[no-untyped-call]
    register_series_accessor("dp")(_Front)  # type: ignore[no-untyped-call]
