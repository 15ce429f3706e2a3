"""Moments, automatic bounds and quantiles of protected Dask columns: exact partial aggregates.

Every query here is the pandas one (:mod:`dpframe.queries.scalar`, :mod:`dpframe.queries.select`), planned
and charged on the client from the schema (Dask's ``_meta``); only its ``read`` hooks run on Dask, after the
charge, each one pass of a pandas kernel over the partitions whose results add up exactly to what one pass
over the whole column gives (:mod:`dpframe.dask.tables` and :mod:`dpframe.dask.describe` use them too):

* moments (``sum``, ``mean``, ``var``, ``std``): integer grid sums (:func:`kernels.moment_sums`);
* automatic bounds: each partition's :class:`~dpframe.queries.bounds.Buckets` (the bucket counts of its tails,
  or of every value), merged with the outermost cuts (:meth:`Buckets.merged`); the sparse vector's rare
  second look at every value (:meth:`SparseVector.first_above_bounded`) is one more pass of
  :func:`bucket_counts`; the clipped values of declared bounds (``clipping=True``) are three counts;
* quantiles of integer columns: the values per position of the candidate grid
  (:func:`~dpframe.selection.quantile.position_counts`);
* quantiles of other columns: the exponential mechanism needs the sorted cells of a window of ranks around
  ``q n`` (:func:`~dpframe.selection.quantile.rank_windows`). One pass counts the cells per block of
  2^16 cells (a mergeable histogram: it gives ``n`` and the blocks holding the ends of each window); a
  second returns each partition's distinct cells, with their counts, in those blocks, from which the window,
  the rank below it and the rank of its last value follow exactly. At most two blocks per window hold values
  outside it, so what comes back to the client is bounded by ``2 * 2^16`` cells plus the window per level,
  whatever the number of rows.

So for the same seeded noise the answer, its release and the ledger lines are the pandas path's.
Dates and durations are measured in seconds, as on pandas (:mod:`dpframe.queries.temporal`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.dask.shield import computed
from dpframe.noise.mechanism import Privacy, SumGrid
from dpframe.queries import kernels, scalar, select, temporal
from dpframe.queries.bounds import BoundsReads, Buckets, bucket_counts, clipped_counts
from dpframe.queries.plan import Target
from dpframe.results import DPFloat, DPInt
from dpframe.selection.quantile import QuantileGrid, Window, position_counts

# Cells per block of the float quantile grid's first pass (2^32 to 2^33 cells: at most 2^17 blocks).
_BLOCK_BITS = 16


def _numbers(part: pd.Series[Any]) -> pd.Series[Any]:
    """A partition as the pandas queries measure it: dates and durations in seconds."""
    scale = temporal.TimeScale.of(part.dtype)
    return part if scale is None else scale.seconds(part)


def _floats(part: pd.Series[Any]) -> NDArray[np.float64]:
    return kernels.as_float_array(_numbers(part))


def _partials(column: Any, kernel: Callable[[pd.Series[Any]], Any]) -> list[Any]:
    """After the charge: ``kernel`` of each partition, computed by Dask, as a list on the client.

    ``kernel`` is shipped to the workers: it holds grids and numbers, never a target or its budget.
    """
    results = column.map_partitions(lambda part: pd.Series([kernel(part)], dtype=object), meta=(None, "object"))
    return list(computed(results))


def _total(parts: Sequence[NDArray[np.int64]]) -> NDArray[np.int64]:
    """Exact sum of per-partition integer arrays (of one shape)."""
    total: NDArray[np.int64] = np.sum(np.stack(parts), axis=0, dtype=np.int64)
    return total


def grid_sums(column: dd.Series, make: Callable[[NDArray[np.float64]], kernels.MomentSums]) -> kernels.MomentSums:
    """The exact grid sums of ``column``: one pandas kernel pass per partition, added up (integers)."""
    parts = _partials(column, lambda part: make(_floats(part)))
    squares = [p.square_sums for p in parts]
    return kernels.MomentSums(_total([p.counts for p in parts]), _total([p.sums for p in parts]),
                              None if any(s is None for s in squares) else _total(squares))


def bounds_reads(column: dd.Series) -> BoundsReads:
    """The bounds step's reads of a Dask column (:class:`~dpframe.queries.bounds.BoundsReads`)."""

    def whole() -> NDArray[np.int64]:
        return _total(_partials(column, lambda part: bucket_counts(_floats(part))))

    def tails(reach: int) -> Callable[[pd.Series[Any]], tuple[NDArray[np.int64], int, float, float]]:
        def kernel(part: pd.Series[Any]) -> tuple[NDArray[np.int64], int, float, float]:
            b = Buckets.of(_floats(part), reach)
            return b.table, b.count, b.low, b.high  # not the partition's values, which ``b`` keeps to recount

        return kernel

    def buckets(reach: int) -> Buckets:
        parts = _partials(column, tails(reach))
        return Buckets.merged([Buckets(table, count, low, high, whole) for table, count, low, high in parts], whole)

    def clipped(lo: float, hi: float) -> tuple[int, int, int]:
        parts = _partials(column, lambda part: clipped_counts(_floats(part), lo, hi))
        below, n, above = _total([np.array(c, dtype=np.int64) for c in parts])
        return int(below), int(n), int(above)

    return BoundsReads(buckets, clipped)


def quantile_reads(column: dd.Series) -> select.QuantileReads:
    """A quantile's reads of a Dask column (:class:`~dpframe.queries.select.QuantileReads`)."""

    def counts(grid: QuantileGrid) -> NDArray[np.int64]:
        return _total(_partials(column, lambda part: position_counts(
            grid.positions(select.quantile_values(_numbers(part), None, True)), grid.cells)))

    def ranked(grid: QuantileGrid) -> tuple[int, Callable[[Sequence[tuple[int, int]]], list[Window]]]:
        def cells(part: pd.Series[Any]) -> NDArray[np.int64]:
            return grid.to_cells(select.quantile_values(_numbers(part), None, False)).astype(np.int64)

        blocks = (grid.cells + (1 << _BLOCK_BITS) - 1) >> _BLOCK_BITS
        ends = np.cumsum(_total(_partials(column, lambda part: np.bincount(cells(part) >> _BLOCK_BITS,
                                                                           minlength=blocks))))
        return int(ends[-1]), lambda spans: _windows(column, cells, ends, spans)

    return select.QuantileReads(counts, ranked, bounds_reads(column))


def _windows(column: dd.Series, cells: Callable[[pd.Series[Any]], NDArray[np.int64]], ends: NDArray[np.int64],
             spans: Sequence[tuple[int, int]]) -> list[Window]:
    """The :class:`Window` of each span of ranks, from the cells in the blocks holding it (``ends``: the number
    of values up to each block)."""
    # The blocks of ranks a and b - 1: the first block whose end exceeds the rank.
    blocks = [(int(np.searchsorted(ends, a, side="right")), int(np.searchsorted(ends, b - 1, side="right")))
              for a, b in spans]
    ranges = [(first << _BLOCK_BITS, (last + 1) << _BLOCK_BITS) for first, last in blocks]

    def kept(part: pd.Series[Any]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        c = cells(part)
        keep = np.zeros(len(c), dtype=np.bool_)
        for lo, hi in ranges:
            keep |= (c >= lo) & (c < hi)
        found, counts = np.unique(c[keep], return_counts=True)
        return found, counts.astype(np.int64)

    parts = _partials(column, kept)
    values, inverse = np.unique(np.concatenate([v for v, _ in parts] + [np.zeros(0, np.int64)]), return_inverse=True)
    counts = np.zeros(len(values), dtype=np.int64)
    np.add.at(counts, inverse, np.concatenate([c for _, c in parts] + [np.zeros(0, np.int64)]))
    windows = []
    for (a, b), (first, _), (lo, hi) in zip(spans, blocks, ranges):
        inside = (values >= lo) & (values < hi)
        run_end = (int(ends[first - 1]) if first > 0 else 0) + np.cumsum(counts[inside])
        run_start = run_end - counts[inside]
        take = np.clip(np.minimum(run_end, b) - np.maximum(run_start, a), 0, None)
        held = np.flatnonzero(take)
        windows.append(Window(np.repeat(values[inside], take), int(run_start[held[0]]), int(run_end[held[-1]])))
    return windows


class Column:
    """A protected Dask column's queries: the pandas functions on a ``_meta`` target, with Dask reads.

    ``privacy(target)`` resolves the query's privacy arguments on the target the pandas accessor resolves
    them on (after dates become seconds), so argument errors come in the pandas order.
    """

    def __init__(self, column: dd.Series, target: Target):
        self.column, self.target = column, target

    def _in_seconds(self, query: str, bounds: Any) -> tuple[Target, temporal.TimeScale | None, Any]:
        """The target with a date or duration column in seconds, its scale and the bounds in seconds (as pandas)."""
        target, scale = temporal.in_seconds(self.target)
        if scale is None:
            return target, None, bounds
        temporal.refuse(scale, query, target.series.name)
        return target, scale, scale.bounds(bounds)

    def sum(self, bounds: Any, privacy: Callable[[Target], Privacy], clipping: bool | None) -> DPFloat | DPInt:
        """As the pandas ``.dp.sum``."""
        target, scale, bounds = self._in_seconds("sum", bounds)

        def read(grid: SumGrid) -> kernels.MomentSums:
            return grid_sums(self.column, lambda x: kernels.moment_sums(x, 0.0, grid))

        answer = scalar.bounded_sum(target, target.series, bounds, privacy(target), clipping, read=read,
                                    bounds_reads=bounds_reads(self.column))
        return answer if scale is None else scale.answer(answer, "sum")

    def moment(self, query: str, bounds: Any, privacy: Callable[[Target], Privacy], clipping: bool | None, ddof: int = 1) -> DPFloat:
        """``mean``, ``var`` or ``std``, as the pandas ``.dp`` ones."""
        target, scale, bounds = self._in_seconds(query, bounds)
        reads: dict[str, Any] = {"read": lambda moments: grid_sums(self.column, moments.kernel),
                                 "bounds_reads": bounds_reads(self.column)}
        if query == "mean":
            answer = scalar.mean(target, target.series, bounds, privacy(target), clipping, **reads)
        else:
            answer = getattr(scalar, query)(target, target.series, bounds, privacy(target), ddof, clipping, **reads)
        return answer if scale is None else scale.answer(answer, query)

    def quantile(self, q: Any, bounds: Any, epsilon: float | None, rho: float | None, query: str) -> Any:
        """``quantile`` or ``median`` (the exponential mechanism), as the pandas ``.dp`` ones."""
        target, scale, bounds = self._in_seconds(query, bounds)
        answer = select.quantile(target, q, bounds=bounds, epsilon=epsilon, rho=rho, query=query,
                                 read=quantile_reads(self.column))
        return answer if scale is None else scale.answer(answer, query)
