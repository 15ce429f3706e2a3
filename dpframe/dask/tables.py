"""Tables on protected Dask frames: histogram, value_counts, crosstab and group-by aggregates.

Each query is the pandas one (:mod:`dpframe.queries.partitioned`), planned
and charged on the client from the schema (Dask's ``_meta``) and the
arguments. After the charge it reads its exact aggregates through
:class:`DaskCells` (or, for a histogram, :func:`bin_counts`): one Dask pass
that runs the pandas kernels on every partition and returns a small object
per partition (counts per bin or cell, grid sums per group), added up
exactly on the client. The noise is then added once, by the pandas code.
Automatic bounds (a number of bins, or group-by statistics, without
``bounds``) are the pandas bounds step, reading the column's bucket counts
through :func:`dpframe.dask.moments.bounds_reads`, over the same rows as the
query's own pass.

Cells that are not public (private selection of categories) are observed per
partition. Each partition sends, with its per-cell aggregates, the row
where each of its cells first appears; on the client, the pandas coding of
these few rows (in partition order) numbers the cells exactly as one pandas
pass over all the rows would (the same canonical keys, in the same order),
so even the order in which noise is drawn for the cells is the pandas one.

>>> import pandas as pd, dask.dataframe as dd, dpframe, dpframe.dask
>>> ddf = dd.from_pandas(pd.DataFrame({"x": [1.0, 2.5, 7.0] * 300, "c": ["a", "b", "a"] * 300}), npartitions=3)
>>> p = ddf.dp.protect(epsilon=1.0, delta=1e-6, name="tables doctest", ledger=dpframe.Ledger.in_memory())
>>> p["x"].dp.histogram(bins=[0, 5, 10], epsilon=0.25).index.astype(str).tolist()
['[0.0, 5.0)', '[5.0, 10.0)']
>>> p.dp.groupby("c", keys=["a", "b"])["x"].mean(bounds=(0, 10), epsilon=0.25).index.tolist()
['a', 'b']
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from dask.dataframe.utils import has_known_categories
from numpy.typing import NDArray

from dpframe.dask.shield import computed
from dpframe.dask.moments import bounds_reads, quantile_reads
from dpframe.errors import RefusedError
from dpframe.protection.units import Protection
from dpframe.queries import kernels, partitioned
from dpframe.queries.bounds import BoundsReads
from dpframe.queries.partitioned import CellReader, GroupBy, KeySpec, Partitioning
from dpframe.queries.plan import Target
from dpframe.queries.select import QuantileReads

# Per partition: the aggregates of its cells, one integer array per measurement.
Measure = Callable[[Target, kernels.Codes, int], list[NDArray[np.int64]]]
# The targets of partitions only code rows by key (Partitioning.codes reads target.column): the protection stays
# on the client. Its budget is not for workers (nor picklable with an in-memory ledger); the functions sent to
# them hold only the partitioning, bin edges and summation grids.
_ON_A_WORKER = cast(Protection, None)


def _on_partitions(data: Any, partial: Callable[[Any], Any]) -> list[Any]:
    """``partial`` of every partition (a small object each), computed in one Dask pass, in partition order."""
    results = data.map_partitions(lambda part: pd.Series([partial(part)]), meta=(None, "object"))
    return list(computed(results))


def bin_counts(data: Any) -> Callable[[NDArray[np.float64], bool], NDArray[np.int64]]:
    """The ``read`` of :func:`partitioned.histogram` for a Dask series: exact counts per bin, added over partitions."""

    def read(edges: NDArray[np.float64], outer: bool) -> NDArray[np.int64]:
        parts = _on_partitions(data, lambda part: kernels.histogram_counts(kernels.as_float_array(part), edges, outer))
        return np.sum(parts, axis=0, dtype=np.int64)  # type: ignore[no-any-return]

    return read


def _partial_cells(part: Any, partitioning: Partitioning, measure: Measure) -> tuple[list[NDArray[np.int64]], Any]:
    """One partition's ``measure`` per cell; with cells that are not public, also the rows that name them.

    Row-level protection: every row is in use and a unit of its own (a fresh index, so that no row is taken
    for another's duplicate).
    """
    target = Target(part.reset_index(drop=True), _ON_A_WORKER)
    codes, cells = partitioning.codes(target, None)
    measured = measure(target, codes, len(cells))
    if partitioning.public:  # the codes number the public cells: the same in every partition
        return measured, None
    # The first row of each cell (code >= 0) and, with several columns, of each column's value, even in a row
    # that is in no cell (another column missing): the pandas coding numbers each column's values in the
    # order of their first rows.
    first = ~pd.Series(codes).duplicated().to_numpy() & (codes >= 0)
    if len(partitioning.columns) > 1:
        for column_codes in partitioning.column_codes(target)[0]:
            first |= ~pd.Series(column_codes).duplicated().to_numpy() & (column_codes >= 0)
    rows = np.flatnonzero(first)
    cell, in_cell = codes[rows], codes[rows] >= 0
    per_row = []
    for array in measured:
        values = np.zeros(len(rows), dtype=np.int64)
        values[in_cell] = array[cell[in_cell]]
        per_row.append(values)
    keys = target.obj if isinstance(target.obj, pd.Series) else target.obj[list(partitioning.columns)]
    return per_row, keys.iloc[rows]


def _in_group(part: Any, partitioning: Partitioning, column: Any, group: int) -> pd.Series[Any]:
    """The values of ``column`` in the rows of one public group (by number: the same in every partition)."""
    target = Target(part.reset_index(drop=True), _ON_A_WORKER)
    codes, _ = partitioning.codes(target, None)
    values: pd.Series[Any] = target.column(column)[codes == group]
    return values


def _count(target: Target, codes: kernels.Codes, n: int) -> list[NDArray[np.int64]]:
    return [kernels.count_cells([codes], [n], None, n)]


@dataclass(frozen=True)
class _Sums:
    """The measure of a group-by statistic: ``exact`` of ``column`` per cell (picklable)."""

    column: Any
    exact: kernels.MomentKernel

    def __call__(self, target: Target, codes: kernels.Codes, n: int) -> list[NDArray[np.int64]]:
        sums = self.exact(kernels.as_float_array(target.column(self.column)), codes, n)
        return [sums.counts, sums.sums] + ([] if sums.square_sums is None else [sums.square_sums])


class DaskCells(CellReader):
    """Exact aggregates of cells over the partitions of a Dask frame or series (after the charge).

    ``target`` is the schema-only pandas target the query plans and charges on.
    """

    def __init__(self, target: Target, data: Any):
        if target.protection.bounded:
            # With a privacy unit, ``data`` holds the rows in use already (dpframe.dask.units bounds each unit's
            # rows before any read); replace-one neighbours have no Dask path: fail closed.
            raise RefusedError("tables on Dask are built for add/remove neighbours only")
        super().__init__(target)
        self.data = data

    def _columns(self, columns: Sequence[Any]) -> Any:
        """Only the columns a query reads (Dask then reads no others, e.g. from Parquet)."""
        return self.data if self.data.ndim == 1 else self.data[list(dict.fromkeys(columns))]

    def _cells(self, partitioning: Partitioning, columns: Sequence[Any],
               measure: Measure) -> tuple[list[NDArray[np.int64]], pd.Index[Any]]:
        """``measure`` of every partition's cells, added per cell, and the cells (see the module docstring)."""
        parts = _on_partitions(self._columns(columns), functools.partial(_partial_cells, partitioning=partitioning,
                                                                         measure=measure))
        if partitioning.public:
            return [np.sum(arrays, axis=0, dtype=np.int64) for arrays in zip(*(m for m, _ in parts))], \
                partitioning.index()
        firsts = pd.concat([rows for _, rows in parts], ignore_index=True)
        codes, cells = partitioning.codes(Target(firsts, self.target.protection), None)
        in_cell = codes >= 0
        totals = []
        for arrays in zip(*(m for m, _ in parts)):
            total = np.zeros(len(cells), dtype=np.int64)
            np.add.at(total, codes[in_cell], np.concatenate(arrays)[in_cell])  # integers: exact in any order
            totals.append(total)
        return totals, cells

    def counts(self, partitioning: Partitioning) -> tuple[NDArray[np.int64], pd.Index[Any]]:
        (counts,), cells = self._cells(partitioning, partitioning.columns, _count)
        return counts, cells

    def moments(
        self, partitioning: Partitioning, column: Any, exact: kernels.MomentKernel,
    ) -> tuple[kernels.MomentSums, pd.Index[Any]]:
        arrays, cells = self._cells(partitioning, [*partitioning.columns, column], _Sums(column, exact))
        return kernels.MomentSums(arrays[0], arrays[1], arrays[2] if len(arrays) > 2 else None), cells

    def present(self, columns: Sequence[Any]) -> int:
        present = self._columns(columns).notnull()
        return int(computed((present if present.ndim == 1 else present.all(axis=1)).sum()))

    def missing(self, column: Any) -> int:
        return int(computed(self._columns([column]).isnull().sum()).sum())

    def with_values_in(self, column: Any) -> DaskCells:
        meta = self.target.obj
        target = Target(meta[meta[column].notna()], self.target.protection)  # the schema: no rows
        return DaskCells(target, self.data[self.data[column].notnull()])

    def bounds_reads(self, column: Any) -> BoundsReads:
        return bounds_reads(self.data if self.data.ndim == 1 else self.data[column])

    def group_quantiles(self, partitioning: Partitioning, column: Any) -> Callable[[int], QuantileReads]:
        # A public group's values are a Dask column of their own (filtered in each partition): the quantile reads
        # of dpframe.dask.moments then read it, one pass per group (two for a float column).
        frame = self._columns([*partitioning.columns, column])
        meta = self.target.column(column)
        return lambda group: quantile_reads(frame.map_partitions(_in_group, partitioning, column, group, meta=meta))


def check_keys(target: Target, columns: Sequence[Any], keys: KeySpec) -> None:
    """Refuse (before any charge) a Dask categorical with unknown categories: its ``_meta`` has a placeholder."""
    declared = set(keys) if isinstance(keys, Mapping) else (set(columns) if keys is not None else set())
    for column in columns:
        series = target.column(column)
        if column not in declared and isinstance(series.dtype, pd.CategoricalDtype) and \
                not has_known_categories(series):  # type: ignore[no-untyped-call]
            raise ValueError(f"the categories of {column!r} are unknown to Dask (not in its schema): declare them "
                             f"with keys=[...]; finding them would read the data")


def _refuse_dates(target: Target) -> None:
    if target.series.dtype.kind in "mM":
        raise ValueError("histograms of dates and durations on a Dask frame are not built yet: compute them on "
                         "pandas (docs/dask.md)")


def histogram(target: Target, data: Any, bins: Any, bounds: Any, privacy: Any) -> pd.Series[Any]:
    """``p[col].dp.histogram`` on Dask: :func:`partitioned.histogram` with per-partition bin counts."""
    _refuse_dates(target)
    return partitioned.histogram(target, target.series, bins, bounds, privacy, read=bin_counts(data),
                                 bounds_reads=bounds_reads(data))


def partitioning(target: Target, columns: Sequence[Any], keys: KeySpec) -> Partitioning:
    """The pandas :class:`Partitioning`, after refusing Dask's unknown categories."""
    found = Partitioning.of(target, columns, keys)  # unknown columns and bad keys first, as on pandas
    check_keys(target, columns, keys)
    return found


def groupby(target: Target, data: Any, by: Any, keys: KeySpec) -> GroupBy:
    """``p.dp.groupby`` on Dask: the pandas group-by over the schema, reading the partitions after each charge."""
    names = list(by) if isinstance(by, (list, tuple)) else [by]
    if any(not isinstance(name, str) and not np.isscalar(name) for name in names):
        raise TypeError("on a Dask frame, group by column names: assign a computed key first, "
                        "e.g. p.assign(k=p['x'] > 3).dp.groupby('k')")
    partitioning(target, names, keys)
    return GroupBy(target, by, keys, read=DaskCells(target, data))


def value_counts(target: Target, data: Any, columns: Sequence[Any], keys: KeySpec, privacy: Callable[[bool], Any],
                 normalize: bool, sort: bool, dropna: bool) -> pd.Series[Any]:
    """``value_counts`` on Dask: :func:`partitioned.value_counts` with per-partition cell counts."""
    cells = partitioning(target, columns, keys)
    return partitioned.value_counts(target, cells, privacy(not cells.public), normalize, sort, dropna=dropna,
                                    read=DaskCells(target, data))


def crosstab(target: Target, data: Any, index: Any, columns: Any, keys: KeySpec, privacy: Callable[[bool], Any],
             normalize: bool | str, margins: bool) -> pd.DataFrame:
    """``p.dp.crosstab`` on Dask: :func:`partitioned.crosstab` with per-partition cell counts."""
    for name in (index, columns):
        if not isinstance(name, str) and not np.isscalar(name):
            raise TypeError("on a Dask frame, crosstab takes column names: assign a computed key first, "
                            "e.g. p.assign(k=p['x'] > 3).dp.crosstab('k', 'c')")
    cells = partitioning(target, [index, columns], keys)
    chosen = privacy(not cells.public)
    partitioned.check_table_options(normalize, margins)
    table = partitioned.crosstab(target, index, columns, cells, chosen, read=DaskCells(target, data))
    return partitioned.table_options(table, normalize, margins)
