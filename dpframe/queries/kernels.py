"""The passes over the data: exact integer aggregates, vectorised and chunked.

These functions read private data and return exact integers; they never
raise on data values (NaN, inf and out-of-range values are clipped or
dropped by rule), so nothing about a record can surface in an error.

Work is done in cache-sized chunks with in-place numpy operations: one pass
over the column, and extra memory of a few chunks regardless of its length.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.noise.mechanism import SumGrid
from dpframe.protection.values import factorized, lookup

# Group or category number of each row, -1 for rows not used; as narrow as the
# data allows (a categorical's int8 codes are used without widening).
Codes = NDArray[np.signedinteger[Any]]

# 2^16 rows per chunk: a chunk of grid integers (each below 2^31 in magnitude)
# sums exactly in float64 (below 2^53), and four float64 chunks fit in L2 cache.
CHUNK = 1 << 16


def as_float_array(series: pd.Series[Any]) -> NDArray[np.float64]:
    """The column as float64 with missing values as NaN (no copy when already float64)."""
    if series.dtype == np.float64:
        return series.to_numpy()
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def never_missing(dtype: Any) -> bool:
    """numpy integer and boolean dtypes cannot hold a missing value (so every row has one).

    >>> never_missing(np.dtype("int64")), never_missing(np.dtype("float64")), never_missing(pd.Int64Dtype())
    (True, False, False)
    """
    return isinstance(dtype, np.dtype) and dtype.kind in "iub"


def present(series: pd.Series[Any]) -> NDArray[np.bool_]:
    """Per row, whether it holds a value: ``series.notna()`` as an array, without pandas' per-call cost where the
    dtype decides it (numpy integers and booleans always hold one; numpy floats are missing where NaN).

    >>> present(pd.Series([1.0, None, 3.0])).tolist(), present(pd.Series(["a", None])).tolist()
    ([True, False, True], [True, False])
    """
    dtype = series.dtype
    if never_missing(dtype):
        return np.ones(len(series), dtype=np.bool_)
    if isinstance(dtype, np.dtype) and dtype.kind == "f":
        missing: NDArray[np.bool_] = np.isnan(series.to_numpy())
        return ~missing
    values: NDArray[np.bool_] = series.notna().to_numpy()
    return values


def _chunks(n: int) -> Iterator[slice]:
    for start in range(0, n, CHUNK):
        yield slice(start, min(start + CHUNK, n))


@dataclass(frozen=True)
class MomentSums:
    """Exact results of one pass: non-missing counts and grid sums, per group."""

    counts: NDArray[np.int64]
    sums: NDArray[np.int64]
    square_sums: NDArray[np.int64] | None


def moment_sums(
    values: NDArray[np.float64],
    center: float,
    grid: SumGrid,
    square_grid: SumGrid | None = None,
    codes: Codes | None = None,
    n_groups: int = 1,
    square_center: float = 0.0,
) -> MomentSums:
    """Count the non-missing values and sum their grid-rounded deviations, exactly.

    Per row: ``d = clip(x - center, grid.lo, grid.hi)`` contributes
    ``rint(d / grid.data_step)``; with ``square_grid`` also
    ``rint(clip(d*d - square_center, square_grid.lo, square_grid.hi) / step2)``
    (the centre of the squares' range halves their sensitivity). Missing values contribute nothing and are
    not counted. With ``codes`` (group of each row, -1 = row not used) the sums
    are per group. A chunk is summed first without looking for missing values
    (NaN survives subtracting and clipping, so one shows in the chunk's sum);
    only a chunk whose sum is NaN is summed again with the mask of them.

    >>> from fractions import Fraction
    >>> from dpframe.noise.mechanism import Privacy
    >>> grid = SumGrid.choose(-2.0, 2.0, 1, Privacy("approx", "laplace", Fraction(1), Fraction(0), Fraction(0)))
    >>> m = moment_sums(np.array([1.0, np.nan, 5.0, -0.5]), 0.0, grid)
    >>> int(m.counts[0]), float(m.sums[0] * grid.data_step)  # 1 + 2 (clipped) - 0.5
    (3, 2.5)
    """
    counts = np.zeros(n_groups, dtype=np.int64)
    sums = np.zeros(n_groups, dtype=np.int64)
    square_sums = np.zeros(n_groups, dtype=np.int64) if square_grid is not None else None
    inv_step = float(1 / grid.data_step)  # a power of two: multiplying is exact
    buf = np.empty(min(CHUNK, len(values)), dtype=np.float64)
    sq = np.empty_like(buf) if square_grid is not None else None

    def chunk_sums(
        x: NDArray[np.float64], group: Codes | None, missing: NDArray[np.bool_] | None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """The chunk's grid sums (integer-valued floats), ``missing`` rows contributing 0."""
        d = buf[: len(x)]
        np.subtract(x, center, out=d)
        np.clip(d, grid.lo, grid.hi, out=d)
        if missing is not None:
            d[missing] = 0.0
        square_total = None
        if sq is not None and square_grid is not None:
            s = sq[: len(d)]
            np.multiply(d, d, out=s)
            np.subtract(s, square_center, out=s)
            np.clip(s, square_grid.lo, square_grid.hi, out=s)
            if missing is not None:
                s[missing] = 0.0
            np.multiply(s, float(1 / square_grid.data_step), out=s)
            np.rint(s, out=s)
            square_total = _group_sum(s, group, n_groups)
        np.multiply(d, inv_step, out=d)
        np.rint(d, out=d)
        return _group_sum(d, group, n_groups), square_total

    # One pass over the (small-integer) codes saves masking every chunk in the common case.
    any_unused = codes is not None and bool((codes < 0).any())
    for part in _chunks(len(values)):
        x = values[part]
        group = None if codes is None else codes[part]
        missing = None
        if any_unused and group is not None:
            unused = group < 0
            if unused.any():
                missing, group = unused, np.where(unused, 0, group)
        total, square_total = chunk_sums(x, group, missing)
        if np.isnan(total).any():
            # A missing value: NaN survives subtracting and clipping, so it shows in the chunk's sum. Only
            # then is the mask of missing values made (rather than for every chunk) and the chunk summed again.
            nan = np.isnan(x)
            missing = nan if missing is None else missing | nan
            total, square_total = chunk_sums(x, group, missing)
        sums += total.astype(np.int64)
        if square_sums is not None and square_total is not None:
            square_sums += square_total.astype(np.int64)
        if missing is not None:
            counts += _group_sum((~missing).astype(np.float64), group, n_groups).astype(np.int64)
        elif group is None:
            counts += len(x)
        else:
            counts += np.bincount(group, minlength=n_groups)
    return MomentSums(counts, sums, square_sums)


@dataclass(frozen=True)
class MomentKernel:
    """:func:`moment_sums` with its grids fixed: a small picklable function of the values (for Dask's workers).

    >>> from fractions import Fraction
    >>> from dpframe.noise.mechanism import Privacy
    >>> grid = SumGrid.choose(-2.0, 2.0, 1, Privacy("approx", "laplace", Fraction(1), Fraction(0), Fraction(0)))
    >>> int(MomentKernel(0.0, grid)(np.array([1.0, np.nan])).counts[0])
    1
    """

    center: float
    grid: SumGrid
    square_grid: SumGrid | None = None
    square_center: float = 0.0

    def __call__(self, values: NDArray[np.float64], codes: Codes | None = None, n_groups: int = 1) -> MomentSums:
        return moment_sums(values, self.center, self.grid, self.square_grid, codes, n_groups, self.square_center)


def _group_sum(
    integers: NDArray[np.float64], group: Codes | None, n_groups: int
) -> NDArray[np.float64]:
    # Exact: a chunk's integer-valued floats sum below 2^53 in any order (NaN if one is NaN).
    if group is None:
        return np.array([integers.sum()])
    return np.bincount(group, weights=integers, minlength=n_groups).astype(np.float64, copy=False)


def histogram_counts(values: NDArray[np.float64], edges: NDArray[np.float64], outer: bool = False) -> NDArray[np.int64]:
    """Rows per bin (numpy's convention: last bin closed); NaN and out-of-range rows are dropped.

    With ``outer``, two more counts: of the values below the first edge (first) and above the last (last).

    >>> histogram_counts(np.array([-1.0, 0.0, 1.0, 2.0, np.nan, 3.0]), np.array([0.0, 1.0, 2.0]), outer=True).tolist()
    [1, 1, 2, 1]
    """
    counts = np.histogram(values, bins=edges)[0].astype(np.int64)
    if not outer:
        return counts
    below, above = np.count_nonzero(values < edges[0]), np.count_nonzero(values > edges[-1])
    return np.concatenate([[below], counts, [above]]).astype(np.int64)


def category_codes(series: pd.Series[Any], keys: pd.Index[Any]) -> Codes:
    """Position of each row's value in ``keys``; -1 for missing, undeclared or unhashable values."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = cast(Codes, series.cat.codes.to_numpy())  # int8 for <= 127 categories; -1 = missing
        if series.cat.categories.equals(keys):
            return codes
        table = np.append(keys.get_indexer(series.cat.categories), -1)  # table[-1] = -1 keeps missing
        return table[codes]
    if series.dtype != object:
        return keys.get_indexer(pd.Index(series)).astype(np.int64, copy=False)
    return lookup(series, keys).astype(np.int64)  # by canonical forms: no type inferred from the whole column


def observed_codes(series: pd.Series[Any]) -> tuple[Codes, pd.Index[Any]]:
    """Codes of each row's value among the values present (-1 for missing or unhashable).

    pandas labels a group of equal values by the first one it meets (``-0.0``
    or ``0.0``; ``True`` or ``1`` in an object column), and which comes first is
    private. So values are made canonical first: floats lose the sign of zero, and
    in object columns each value takes its class of equal values' one form
    (:func:`~dpframe.protection.values.canonical`: ``True``, ``1`` and ``1.0``
    are the key ``1``, also inside tuples), which no other row chose.

    >>> codes, keys = observed_codes(pd.Series([True, 1, -0.0, 0.0, (1.0,)], dtype=object))
    >>> codes.tolist(), [repr(k) for k in keys]
    ([0, 0, 1, 1, 2], ['1', '0', '(1,)'])
    """
    if pd.api.types.is_float_dtype(series.dtype) or pd.api.types.is_complex_dtype(series.dtype):
        series = series + 0.0  # IEEE: -0.0 + 0.0 == +0.0 (a complex one in both parts); NaN stays NaN
    elif series.dtype == object:
        forms, keys = factorized(series)
        return np.asarray(forms, dtype=np.int64), pd.Index(keys, dtype=object, tupleize_cols=False)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)  # one dtype: equal values print alike
    return np.asarray(codes, dtype=np.int64), pd.Index(uniques)


def combine_codes(codes: Sequence[Codes], sizes: Sequence[int]) -> Codes:
    """Row-major cell number of each row in the product of the key sets; -1 if any part is -1."""
    if len(codes) == 1:
        return codes[0]  # callers never modify the codes in place
    combined = codes[0].astype(np.int64)
    invalid = combined < 0
    for part, size in zip(codes[1:], sizes[1:]):
        combined *= size
        combined += part
        invalid |= part < 0
    combined[invalid] = -1
    return combined


def count_cells(
    codes: Sequence[Codes], sizes: Sequence[int], mask: NDArray[np.bool_] | None, n_cells: int
) -> NDArray[np.int64]:
    """Rows per cell of the product of the key sets, ignoring rows with a -1 code or outside ``mask``.

    Works chunk by chunk, so extra memory stays a few chunks whatever the number of rows.
    """
    counts = np.zeros(n_cells + 1, dtype=np.int64)
    for part in _chunks(len(codes[0])):
        cells = combine_codes([c[part] for c in codes], sizes)
        if mask is not None:
            cells = np.where(mask[part], cells, -1)
        counts += np.bincount(cells.astype(np.intp) + 1, minlength=n_cells + 1)  # -1 -> bin 0
    return counts[1:]
