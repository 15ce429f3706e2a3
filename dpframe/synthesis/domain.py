"""Column domains: how each column of a frame maps to integer codes ``0..size-1`` and back.

The synthesizers' models work on integer codes. A :class:`ColumnDomain` fixes
one column's codes; :func:`plan_domains` decides every column's domain from
the schema and the arguments alone, and :meth:`DomainPlan.discover` makes the
private measurements a domain may need (a column's bounds, or its categories),
each its own ledger line.

Kinds of column
---------------
* **Categories** (:class:`CategoryDomain`): a categorical dtype (its
  categories), ``bool`` (False, True), the nullable ``boolean`` dtype, or any
  column with ``categories={column: [...]}`` declared -- public, free. Object
  and string columns without declared categories get privately selected
  categories (noisy counts above a threshold, as ``value_counts`` selects
  keys; needs delta > 0 on an (epsilon, delta) budget). Declared or selected
  domains have one extra **other** code for every value outside the list;
  in text columns it decodes as :data:`~dpframe.OTHER` (values that were
  not released are not missing values), in other dtypes as a missing value
  (or, for dtypes that cannot hold one, as a uniformly random listed value).
* **Numbers** (:class:`NumericDomain`): ints, floats and their nullable
  versions, datetimes (any unit, with or without a time zone) and
  timedeltas. Equal-width bins over bounds that are declared
  (``bounds={column: (lower, upper)}``; datetimes as timestamps, timedeltas
  as durations) or found privately (the outermost octaves of a noisy
  histogram, ``_discover_range``; for datetimes the sparse vector,
  :func:`~dpframe.queries.bounds.private_bounds`, in seconds since the
  epoch), or explicit bin edges (``bins={column: [...]}``). Values beyond the
  bounds fall in the end bins. Integer columns get integer-aligned bins, one
  code per integer when the range has at most ``bins`` integers. Decoding
  draws a uniform value (a uniform integer for integer dtypes) within the bin,
  or, for bins found privately, within a fine cell of the bin drawn in
  proportion to its noisy count.
* **Resolution.** Floats, datetimes and timedeltas without declared bounds
  first measure the coarsest resolution their values keep
  (``_discover_step``: whole numbers, tenths, hundredths, thousandths; whole days, hours, minutes or
  seconds); bins then lie on multiples of it and decoding draws multiples.
* **Common values.** Given delta, a float column without declared bounds
  first selects the values many rows hold (partition selection, as for
  text): if nearly all values are among them, they are its categories;
  otherwise each that holds at least half an equal bin's share of the rows
  keeps a code of its own (``NumericDomain.points``) beside the bins, and
  decodes exactly; bins draw no point's value. Values not released of a
  column that is nearly all released values come out as released ones.
* **Bins of columns whose bounds are found privately** follow the data: half
  of the column's share finds the bounds, the rest (after the resolution's
  quarter, if any) a noisy histogram of :data:`FINE_CELLS` x ``bins`` cells
  between them (parallel composition), and the edges are placed at equal
  steps of a curve that is half the noisy cumulative mass and half the width
  (post-processing). Heavy regions (a spike at 0, the body of a skewed
  income) get narrow bins, and no bin is wider than two equal-width bins.
  Columns whose range turns out to hold at most ``bins`` values keep one code
  per value and skip the histogram; what it would have spent is reported as
  unspent.

Missing values have their own (last) code for every dtype that can hold them
(everything except numpy ints and bools), whether or not the data has any:
that is a fact about the data, and so private. AIM and MST drop that code (and
a category's "other" code, which stands for no released value) when its noisy one-way
count is below three noise standard deviations
(:class:`~dpframe.synthesis.measure.Compression`, post-processing), so a
column without missing values gets none unless the noise says otherwise.

Privately found bounds are accurate to a few percent of their magnitude
(see :mod:`dpframe.queries.bounds`): for datetimes (seconds since 1970) that
is about a year, so declare bounds for date columns spanning a short period.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pandas.api.extensions import ExtensionArray

from dpframe.accounting.costs import Cost
from dpframe.noise.mechanism import NoiseSpec, float_below
from dpframe.protection.rowwise import time_unit
from dpframe.queries import kernels
from dpframe.queries.bounds import private_bounds
from dpframe.queries.partitioned import public_order, selection_threshold
from dpframe.queries.plan import Plan, Target, check_bounds, public_keys
from dpframe.queries.temporal import NAT_TICKS, TICKS_PER_SECOND, seconds_array
from dpframe.results import OTHER
from dpframe.synthesis.spending import Share

__all__ = [
    "DEFAULT_BINS",
    "CategoryDomain",
    "ColumnDomain",
    "DomainPlan",
    "NumericDomain",
    "plan_domains",
]

# Bins of a numeric column when the caller gives none for it.
DEFAULT_BINS = 32
# Ledger lines of the discovery measurements read "bounds for synthesize" and "categories for synthesize".
QUERY = "synthesize"

Need = Literal["bounds", "bins", "categories"]
NumericKind = Literal["float", "integer", "datetime", "timedelta"]

_MASKED_INTEGER = (
    pd.Int8Dtype, pd.Int16Dtype, pd.Int32Dtype, pd.Int64Dtype,
    pd.UInt8Dtype, pd.UInt16Dtype, pd.UInt32Dtype, pd.UInt64Dtype,
)
_MASKED_FLOAT = (pd.Float32Dtype, pd.Float64Dtype)
# Integer bounds stay well inside int64 so that ``upper + 1`` and float edges cannot overflow.
_INT_LIMIT = 2**62


def _holds_missing(dtype: Any) -> bool:
    """Whether the dtype can hold a missing value (numpy ints and bools cannot)."""
    return not (isinstance(dtype, np.dtype) and dtype.kind in "iub")


def _kind(name: Any, dtype: Any) -> str:
    """The column's kind from its dtype, or a TypeError saying what to do."""
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    if isinstance(dtype, pd.BooleanDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "b"):
        return "bool"
    if isinstance(dtype, pd.StringDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "O"):
        return "string"
    if isinstance(dtype, pd.DatetimeTZDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "M"):
        return "datetime"
    if isinstance(dtype, np.dtype) and dtype.kind == "m":
        return "timedelta"
    if isinstance(dtype, _MASKED_INTEGER) or (isinstance(dtype, np.dtype) and dtype.kind in "iu"):
        return "integer"
    if isinstance(dtype, _MASKED_FLOAT) or (isinstance(dtype, np.dtype) and dtype.kind == "f"):
        return "float"
    if isinstance(dtype, np.dtype) and dtype.kind == "c":
        raise TypeError(
            f"column {name!r} has dtype {dtype}, and complex numbers cannot be synthesized; "
            "split it into two float columns (np.real and np.imag)"
        )
    raise TypeError(
        f"column {name!r} has dtype {dtype}, which synthesize does not support; convert it to a "
        "supported dtype (numbers, datetimes, timedeltas, bool, strings or categorical), "
        "e.g. astype('category') or astype(str)"
    )


def _draws_other(dtype: Any) -> bool:
    """Whether a category domain of this dtype decodes "other" as a listed value: numbers."""
    return isinstance(dtype, (_MASKED_INTEGER, _MASKED_FLOAT)) or (isinstance(dtype, np.dtype) and dtype.kind in "iuf")


def _holds_text(dtype: Any) -> bool:
    """Whether the dtype holds any text (object and string columns), so that "other" can be a value of its own."""
    return isinstance(dtype, pd.StringDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "O")


def _integer_limits(dtype: Any) -> tuple[int, int]:
    info = np.iinfo(dtype.numpy_dtype if not isinstance(dtype, np.dtype) else dtype)
    return max(int(info.min), -_INT_LIMIT), min(int(info.max), _INT_LIMIT)


def _axis_limit(dtype: Any, kind: str) -> float:
    """The largest magnitude on the column's axis that its dtype can hold (with a margin for rounding)."""
    if kind in ("datetime", "timedelta"):
        return 0.99 * 2.0**63 / TICKS_PER_SECOND[time_unit(dtype)]
    numpy_dtype = dtype if isinstance(dtype, np.dtype) else dtype.numpy_dtype
    return float(np.finfo(numpy_dtype).max)


def _to_axis(value: Any, kind: str, dtype: Any, name: Any) -> Any:
    """A declared bound or edge on the column's numeric axis (seconds for datetimes and timedeltas)."""
    if kind not in ("datetime", "timedelta"):
        return value
    what, example = ("timestamps", "'2020-01-01' or pd.Timestamp") if kind == "datetime" else (
        "durations", "'2h' or pd.Timedelta")
    wrong = f"bounds and bin edges of the {kind} column {name!r} must be {what} (e.g. {example}), got {value!r}"
    if isinstance(value, (bool, int, float, np.number)):
        raise TypeError(wrong)
    try:
        parsed = pd.Timestamp(value) if kind == "datetime" else pd.Timedelta(value)
    except (TypeError, ValueError):
        raise TypeError(wrong) from None
    if pd.isna(parsed):
        raise ValueError(f"bounds and bin edges of {name!r} must not be missing")
    if isinstance(parsed, pd.Timedelta):
        return float(parsed.total_seconds())
    tz = getattr(dtype, "tz", None)
    if tz is not None and parsed.tz is None:
        parsed = parsed.tz_localize(tz)
    elif tz is None and parsed.tz is not None:
        raise TypeError(f"column {name!r} has no time zone, but its bound or edge {value!r} has one")
    return float(parsed.value) / 1e9


def axis_values(series: pd.Series[Any]) -> NDArray[np.float64]:
    """A numeric, datetime or timedelta column on its numeric axis as float64, missing values as NaN.

    Datetimes are seconds since the epoch and timedeltas seconds, whatever the unit (no row loops).

    >>> axis_values(pd.Series(pd.to_datetime(["1970-01-02", None]))).tolist()
    [86400.0, nan]
    """
    if pd.api.types.is_datetime64_any_dtype(series.dtype) or pd.api.types.is_timedelta64_dtype(series.dtype):
        return seconds_array(series)
    return kernels.as_float_array(series)


# ---------------------------------------------------------------------------
# domains
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ColumnDomain(ABC):
    """One column's integer codes ``0..size-1``: how values map to codes and back.

    Concrete kinds: :class:`CategoryDomain` and :class:`NumericDomain`.
    """

    name: Any
    size: int
    dtype: Any
    missing: bool

    @property
    def missing_code(self) -> int | None:
        """The code of missing values (always the last), or None when the dtype cannot hold them."""
        return self.size - 1 if self.missing else None

    @property
    def missing_codes(self) -> tuple[int, ...]:
        """Every code that stands for no released value (the missing code; for categories also "other").

        >>> NumericDomain.from_bounds("x", np.dtype("float64"), 0.0, 1.0, bins=2).missing_codes
        (2,)
        """
        return () if self.missing_code is None else (self.missing_code,)

    def _check_dtype(self, series: pd.Series[Any]) -> None:
        if series.dtype != self.dtype:
            raise TypeError(
                f"the domain of {self.name!r} was planned for dtype {self.dtype}, but the column has dtype {series.dtype}"
            )

    @abstractmethod
    def encode(self, series: pd.Series[Any]) -> NDArray[np.int64]:
        """Every row's code, in ``[0, size)``."""

    @abstractmethod
    def decode(self, codes: NDArray[np.int64], rng: np.random.Generator) -> pd.Series[Any]:
        """Values for codes, with the column's dtype and name and a default index."""

    @abstractmethod
    def labels(self) -> list[str]:
        """A human-readable label per code."""

    def places(self) -> NDArray[np.float64]:
        """Each code's place on the column's axis, NaN for a code with none (a category, missing values): the
        model may measure marginals of several columns over runs of neighbouring codes (:func:`graphical.aim`).

        >>> CategoryDomain.build("c", np.dtype(object), pd.Index(["a", "b"]), other=False).places().tolist()
        [nan, nan, nan]
        """
        return np.full(self.size, np.nan)


@dataclass(frozen=True, eq=False)
class CategoryDomain(ColumnDomain):
    """One code per listed value, then an optional "other" code, then an optional missing code.

    >>> import pandas as pd
    >>> d = CategoryDomain.build("grade", pd.CategoricalDtype(["a", "b"]), pd.Index(["a", "b"]), other=False)
    >>> d.size, d.labels()
    (3, ['a', 'b', '<NA>'])
    >>> codes = d.encode(pd.Series(["b", None, "a"], dtype=d.dtype))
    >>> codes.tolist()
    [1, 2, 0]
    >>> d.decode(codes, np.random.default_rng(0)).tolist()
    ['b', nan, 'a']
    """

    keys: pd.Index[Any]
    other: bool
    table: ExtensionArray  # the value of every code, in the column's dtype (missing for other/missing codes)

    @classmethod
    def build(cls, name: Any, dtype: Any, keys: pd.Index[Any], *, other: bool) -> CategoryDomain:
        """The domain with ``keys`` (already in the column's dtype); a missing code if the dtype holds one."""
        missing = _holds_missing(dtype)
        size = len(keys) + int(other) + int(missing)
        values = list(keys)
        if other and _holds_text(dtype):
            # Values that were not released are not missing values: text says so (a column with no missing
            # values keeps none, and a column none of whose values could be released is not emptied).
            values.append(str(OTHER))
        elif other and missing and not _draws_other(dtype):
            values.append(None)
        elif other:
            values.append(keys[0])  # never used: decode draws a listed value for these dtypes
        if missing:
            values.append(None)
        table = pd.array(values, dtype=dtype)
        return cls(name, size, dtype, missing, keys, other, table)

    @property
    def draws_other(self) -> bool:
        """Whether the "other" code decodes as a random listed value: numbers (whose unreleased values are no
        missing values, and no text can say what they are) and dtypes that hold no missing value.

        >>> CategoryDomain.build("x", np.dtype("float64"), pd.Index([0.0, 1.0]), other=True).draws_other
        True
        >>> CategoryDomain.build("c", np.dtype(object), pd.Index(["a"]), other=True).draws_other
        False
        """
        return self.other and (_draws_other(self.dtype) or not self.missing)

    @property
    def decodes_other_as_text(self) -> bool:
        """Whether the "other" code decodes as the text :data:`~dpframe.OTHER` (text dtypes) rather than missing."""
        return self.other and _holds_text(self.dtype)

    @property
    def other_code(self) -> int | None:
        """The code of values outside the list, or None."""
        return len(self.keys) if self.other else None

    @property
    def missing_codes(self) -> tuple[int, ...]:
        """The missing code, and the "other" code, which stands for no released value (it decodes as
        :data:`~dpframe.OTHER` in text columns, as missing in other dtypes that hold one).

        >>> CategoryDomain.build("c", np.dtype(object), pd.Index(["a", "b"]), other=True).missing_codes
        (2, 3)
        """
        if self.missing_code is None:
            return ()
        return (self.missing_code,) if self.other_code is None or self.draws_other else (self.other_code, self.missing_code)

    def encode(self, series: pd.Series[Any]) -> NDArray[np.int64]:
        """Every row's code (vectorised; unlisted values get the other code)."""
        self._check_dtype(series)
        codes = np.array(kernels.category_codes(series, self.keys), dtype=np.int64)  # a copy: may be a categorical's own codes
        if self.missing:
            codes[series.isna().to_numpy(dtype=bool)] = self.size - 1
        # Unlisted or unhashable values; only possible with an other code when the dtype matches.
        unlisted = len(self.keys) if self.other else self.size - 1
        codes[codes < 0] = unlisted
        return codes

    def decode(self, codes: NDArray[np.int64], rng: np.random.Generator) -> pd.Series[Any]:
        """The values of the codes; the other code decodes as :data:`~dpframe.OTHER` in text columns, as a
        random listed value in numbers (:attr:`draws_other`), else as missing."""
        codes = np.asarray(codes, dtype=np.int64)
        if self.draws_other:
            rows = codes == len(self.keys)
            codes = codes.copy()
            codes[rows] = rng.integers(0, len(self.keys), int(rows.sum()))
        out: pd.Series[Any] = pd.Series(self.table.take(codes), dtype=self.dtype, name=self.name)
        return out

    def labels(self) -> list[str]:
        """Each value as text, then ``"<other>"`` and ``"<NA>"``."""
        out = [str(v) for v in self.keys]
        if self.other:
            out.append("<other>")
        if self.missing:
            out.append("<NA>")
        return out


@dataclass(frozen=True, eq=False)
class NumericDomain(ColumnDomain):
    """Bins of a numeric, datetime or timedelta column, then its exact common values (floats), then an
    optional missing code.

    ``edges`` are on the column's axis (seconds for datetimes, since the epoch,
    and timedeltas); bin ``j`` is ``[edges[j], edges[j+1])``, the last one
    closed, and values beyond the ends fall in the end bins. For integer
    dtypes the edges are integers and bin ``j`` holds the integers
    ``edges[j] .. edges[j+1] - 1``.

    >>> import pandas as pd
    >>> d = NumericDomain.from_bounds("age", np.dtype("int64"), 17, 90, bins=100)
    >>> d.size, d.labels()[:2]  # one code per age
    (74, ['17', '18'])
    >>> ages = pd.Series([17, 45, 90, 120])
    >>> d.encode(ages).tolist()
    [0, 28, 73, 73]
    >>> d.decode(d.encode(ages), np.random.default_rng(0)).tolist()
    [17, 45, 90, 90]
    >>> f = NumericDomain.from_bounds("x", np.dtype("float32"), 0.0, 10.0, bins=4)
    >>> f.labels()
    ['[0, 2.5)', '[2.5, 5)', '[5, 7.5)', '[7.5, 10]', '<NA>']
    >>> f.encode(pd.Series([1.0, None, 9.0], dtype="float32")).tolist()
    [0, 4, 3]
    >>> g = f.with_points([0.0, 3.25])  # values a column holds exactly and often: codes of their own
    >>> g.labels(), g.encode(pd.Series([0.0, 3.25, 3.5], dtype="float32")).tolist()
    (['[0, 2.5)', '[2.5, 5)', '[5, 7.5)', '[7.5, 10]', '0', '3.25', '<NA>'], [4, 5, 1])
    >>> g.decode(np.array([4, 5, 6]), np.random.default_rng(0)).tolist()
    [0.0, 3.25, nan]
    """

    kind: NumericKind
    edges: tuple[float, ...]
    # The resolution the values keep (axis units): whole numbers or decimals of a float column, whole days or hours
    # of times. Edges are multiples of it, and decoding draws multiples of it. None: continuous.
    step: float | None = None
    # Values of a float column held exactly by many rows (selected privately), sorted: codes bins..bins+len-1.
    points: tuple[float, ...] = ()
    # Where values lie within the bins (bins found privately): finer cells whose edges include the bins' and
    # their noisy counts clipped at zero. Decoding picks a cell in proportion, then a value within it.
    fine_edges: tuple[float, ...] = ()
    fine_weights: tuple[float, ...] = ()

    @property
    def bins(self) -> int:
        """The number of bins (codes other than the missing code)."""
        return len(self.edges) - 1

    @classmethod
    def from_bounds(
        cls, name: Any, dtype: Any, lower: float, upper: float, *, bins: int, strict: bool = True
    ) -> NumericDomain:
        """Equal-width bins over ``[lower, upper]`` (on the column's axis).

        For integer dtypes: integer-aligned bins over the integers within the
        bounds (one per integer if there are at most ``bins``). With ``strict``
        (declared bounds), bounds holding no integer of the dtype are an error;
        otherwise (private bounds) the nearest integer is used.
        """
        kind = _numeric_kind(dtype)
        if kind == "integer":
            lo_limit, hi_limit = _integer_limits(dtype)
            a, b = max(math.ceil(lower), lo_limit), min(math.floor(upper), hi_limit)
            if a > b:
                if strict:
                    raise ValueError(
                        f"bounds ({lower:g}, {upper:g}) of {name!r} contain no value of its dtype {dtype}"
                    )
                a = b = min(max(round((lower + upper) / 2), lo_limit), hi_limit)
            count = b - a + 1
            edges = np.unique(np.round(np.linspace(a, b + 1, min(bins, count) + 1)))
        else:
            # Keep the bins inside what the dtype can represent (private bounds may be very wide).
            limit = _axis_limit(dtype, kind)
            if max(lower, -limit) >= min(upper, limit):
                if strict:
                    raise ValueError(f"bounds ({lower:g}, {upper:g}) of {name!r} lie outside the range of its dtype {dtype}")
                lower, upper = -limit / 4, limit / 4  # linspace must not overflow computing the width
            lower, upper = max(lower, -limit / 4), min(upper, limit / 4)
            edges = np.unique(np.linspace(lower, upper, bins + 1))
        return cls._of(name, dtype, kind, edges)

    @classmethod
    def from_edges(cls, name: Any, dtype: Any, edges: Sequence[float]) -> NumericDomain:
        """Bins with the given edges (on the column's axis; at least two, finite, strictly increasing)."""
        kind = _numeric_kind(dtype)
        array = np.asarray(edges, dtype=np.float64)
        if kind == "integer":
            # Bin [e0, e1) holds the integers ceil(e0)..ceil(e1)-1; the last bin is closed.
            lo_limit, hi_limit = _integer_limits(dtype)
            ints = np.append(np.ceil(array[:-1]), np.floor(array[-1]) + 1)
            ints = np.clip(ints, lo_limit, hi_limit + 1)
            if not np.all(np.diff(ints) > 0):
                raise ValueError(
                    f"every bin of the integer column {name!r} must hold at least one integer of its dtype "
                    f"{dtype}; widen or merge bins in {list(edges)!r}"
                )
            array = ints
        return cls._of(name, dtype, kind, array)

    @classmethod
    def _of(
        cls, name: Any, dtype: Any, kind: NumericKind, edges: NDArray[np.float64], step: float | None = None
    ) -> NumericDomain:
        missing = _holds_missing(dtype)
        size = len(edges) - 1 + int(missing)
        return cls(name, size, dtype, missing, kind, tuple(float(e) for e in edges), step)

    def on_steps(self, step: float | None) -> NumericDomain:
        """This (equal-width) domain with its values kept to multiples of ``step``; None: unchanged.

        The edges move onto multiples, and as for integers each bin then holds
        the multiples from its lower edge up to, not including, its upper edge
        (the top edge is one step above the highest value).

        >>> d = NumericDomain.from_bounds("x", np.dtype("float64"), 0.0, 1.0, bins=8).on_steps(1.0)
        >>> d.edges, d.labels()
        ((0.0, 1.0, 2.0), ['0', '1', '<NA>'])
        >>> sorted(set(d.decode(np.array([0, 1, 1, 0]), np.random.default_rng(0)).tolist()))
        [0.0, 1.0]
        """
        if step is None or self.kind == "integer":
            return self
        multiples = np.unique(np.round(np.asarray(self.edges) / step))
        snapped = on_grid(np.append(multiples, multiples[-1] + 1), step)  # the top value gets a bin of its own
        return self._of(self.name, self.dtype, self.kind, snapped, step)

    def with_points(self, points: Sequence[float]) -> NumericDomain:
        """This domain with codes of their own for ``points``, exact values (that a number column holds often)."""
        ordered = tuple(sorted({float(v) for v in points}))
        return NumericDomain(self.name, self.size + len(ordered) - len(self.points), self.dtype, self.missing,
                             self.kind, self.edges, self.step, ordered, self.fine_edges, self.fine_weights)

    def within(self, fine_edges: Sequence[float], noisy: Sequence[float], scale: float) -> NumericDomain:
        """This domain drawing values within each bin from finer cells whose edges include every edge of the
        bins, given their ``noisy`` counts (Laplace noise of scale ``scale``; post-processing of those counts).

        A cell's weight is what its count stands above the noise, ``max(noisy - 3 scale, 0)``, and what the
        bin holds beyond those is spread by width: where the counts are mostly noise the draw stays uniform
        over the bin, and a spike comes back where it was.

        >>> d = NumericDomain.from_bounds("x", np.dtype("int64"), 0, 99, bins=2).within(
        ...     [0, 10, 50, 60, 100], [900.0, -3.0, 50.0, 0.0], scale=1.0)
        >>> values = d.decode(np.array([0] * 1000 + [1] * 1000), np.random.default_rng(0))
        >>> float(values[:1000].lt(10).mean()) > 0.99, float(values[1000:].between(50, 59).mean()) > 0.9
        (True, True)
        """
        fine, counts = np.asarray(fine_edges, dtype=np.float64), np.asarray(noisy, dtype=np.float64)
        weights = np.clip(counts - 3 * scale, 0.0, None)
        width = np.diff(fine)
        for lo, hi in zip(self.edges[:-1], self.edges[1:]):
            cells = slice(int(np.searchsorted(fine, lo)), int(np.searchsorted(fine, hi)))
            # The bin's mass beyond those cells, from the plain sum (its noise averages out; clipping each
            # empty cell first would add 0.4 scale apiece and flatten the spikes).
            rest = max(float(counts[cells].sum() - weights[cells].sum()), 0.0)
            weights[cells] += rest * width[cells] / width[cells].sum()
        return NumericDomain(self.name, self.size, self.dtype, self.missing, self.kind, self.edges, self.step,
                             self.points, tuple(float(e) for e in fine), tuple(float(w) for w in weights))

    def places(self) -> NDArray[np.float64]:
        """A bin's lower edge and a point's value (neighbouring codes have neighbouring places); NaN for the
        missing code.

        >>> NumericDomain.from_bounds("x", np.dtype("float64"), 0.0, 4.0, bins=2).with_points([1.0]).places().tolist()
        [0.0, 2.0, 1.0, nan]
        """
        places = np.full(self.size, np.nan)
        places[: self.bins] = self.edges[:-1]
        places[self.bins : self.bins + len(self.points)] = self.points
        return places

    def _fine_cells(
        self, j: NDArray[np.int64], lo: NDArray[np.float64], hi: NDArray[np.float64], rng: np.random.Generator
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each bin ``j`` narrowed to one of its fine cells, drawn in proportion to their weights (uniformly
        when none has any); ``(lo, hi)`` unchanged without fine cells."""
        if not self.fine_edges:
            return lo, hi
        fine = np.asarray(self.fine_edges)
        first = np.searchsorted(fine, np.asarray(self.edges[:-1]))[j]  # the bins' edges are fine edges
        last = np.searchsorted(fine, np.asarray(self.edges[1:]))[j]
        weights = np.asarray(self.fine_weights)
        # A tiny share by width keeps a bin whose fine counts all fell below zero drawable.
        weights = weights + 1e-9 * max(weights.sum(), 1.0) * np.diff(fine) / (fine[-1] - fine[0])
        cumulative = np.concatenate([[0.0], np.cumsum(weights)])
        target = cumulative[first] + rng.random(len(j)) * (cumulative[last] - cumulative[first])
        cell = np.clip(np.searchsorted(cumulative, target, side="right") - 1, first, last - 1)
        return fine[cell], fine[cell + 1]

    def encode(self, series: pd.Series[Any]) -> NDArray[np.int64]:
        """Every row's bin or point (vectorised); values beyond the ends go to the end bins, missing to the
        missing code."""
        self._check_dtype(series)
        return self.codes_of(axis_values(series))

    def codes_of(self, values: NDArray[np.float64]) -> NDArray[np.int64]:
        """:meth:`encode` of values already on the column's axis (NaN for missing).

        >>> NumericDomain.from_bounds("x", np.dtype("float64"), 0.0, 4.0, bins=2).codes_of(np.array([1.0, np.nan, 9.0]))
        array([0, 2, 1])
        """
        codes = np.searchsorted(np.asarray(self.edges), values, side="right").astype(np.int64) - 1
        np.clip(codes, 0, self.bins - 1, out=codes)
        if self.points:
            points = np.asarray(self.points)
            at = np.minimum(np.searchsorted(points, values), len(points) - 1)
            exact = points[at] == values
            codes[exact] = self.bins + at[exact]
        if self.missing:
            codes[np.isnan(values)] = self.size - 1
        return codes

    def decode(self, codes: NDArray[np.int64], rng: np.random.Generator) -> pd.Series[Any]:
        """A uniformly random value within each code's bin (a point's own value), in the column's dtype;
        missing for the missing code."""
        codes = np.asarray(codes, dtype=np.int64)
        edges = np.asarray(self.edges)
        absent = codes == self.missing_code if self.missing else np.zeros(len(codes), dtype=bool)
        j = np.minimum(codes, self.bins - 1)
        lo, hi = self._fine_cells(j, edges[j], edges[j + 1], rng)
        at_point = (codes >= self.bins) & ~absent
        if self.kind == "integer":
            ints = self._integers_within(lo.astype(np.int64), hi.astype(np.int64), rng)
            ints[at_point] = np.asarray(self.points)[codes[at_point] - self.bins].astype(np.int64)
            if isinstance(self.dtype, np.dtype):
                return pd.Series(ints.astype(self.dtype), name=self.name)
            array = pd.array(ints.astype(self.dtype.numpy_dtype), dtype=self.dtype)
        elif self.kind == "float":
            numpy_dtype = self.dtype if isinstance(self.dtype, np.dtype) else self.dtype.numpy_dtype
            if self.step is not None:
                multiples = on_grid(self._steps_within(lo, hi, rng).astype(np.float64), self.step)
                # Every stepped bin excludes its upper edge: nudge values a narrow dtype rounds onto it.
                floats = _within(multiples, lo, hi, np.ones(len(multiples), dtype=bool), numpy_dtype)
            else:
                floats = _within(rng.uniform(lo, hi), lo, hi, hi < edges[-1], numpy_dtype)
            floats[at_point] = np.asarray(self.points)[codes[at_point] - self.bins]
            if isinstance(self.dtype, np.dtype):
                floats[absent] = np.nan
                return pd.Series(floats, name=self.name)
            array = pd.array(floats, dtype=self.dtype)
        else:
            # Whole units of the dtype within the bin (at least one unit wide).
            unit = time_unit(self.dtype)
            per_second = TICKS_PER_SECOND[unit]
            if self.step is not None:
                # In whole units of the dtype: a float product loses whole seconds of ns times beyond 2116.
                ints = self._steps_within(lo, hi, rng) * int(round(self.step * per_second))
            else:
                low = np.ceil(lo * per_second)
                high = np.maximum(np.ceil(hi * per_second), low + 1)
                ints = rng.integers(low.astype(np.int64), high.astype(np.int64))
            ints[absent] = NAT_TICKS
            letter = "M" if self.kind == "datetime" else "m"
            series = pd.Series(ints.view(f"{letter}8[{unit}]"), name=self.name)
            tz = getattr(self.dtype, "tz", None)
            if tz is not None:
                series = pd.Series(series.dt.tz_localize("UTC").dt.tz_convert(tz), name=self.name)
            return series
        array[absent] = pd.NA
        return pd.Series(array, name=self.name)

    def _integers_within(
        self, lo: NDArray[np.int64], hi: NDArray[np.int64], rng: np.random.Generator
    ) -> NDArray[np.int64]:
        """A uniformly random integer in each ``[lo, hi)``, other than the points where the range holds others:
        a point's rows have its code, so a bin drawing it too would give it rows that are not its own (a year
        not released between released years vanished: 306 rows of 1965 drawn over 1964-1995)."""
        ints = rng.integers(lo, hi)
        if not self.points:
            return ints
        points = np.asarray(self.points, dtype=np.int64)
        # Points within each range, from sorted points: the integers left are the range's minus these.
        inside = np.searchsorted(points, hi, side="left") - np.searchsorted(points, lo, side="left")
        free = hi - lo - inside
        clash = np.isin(ints, points) & (free > 0)
        if clash.any():
            # The k-th free integer of the range: walk past the points at or below each candidate.
            rows = np.flatnonzero(clash)
            kth = rng.integers(0, free[rows])
            value = lo[rows] + kth
            for _ in range(len(points)):
                below = np.searchsorted(points, value, side="right") - np.searchsorted(points, lo[rows], side="left")
                moved = lo[rows] + kth + below
                if np.array_equal(moved, value):
                    break
                value = moved
            ints[rows] = value
        return ints

    def _steps_within(
        self, lo: NDArray[np.float64], hi: NDArray[np.float64], rng: np.random.Generator
    ) -> NDArray[np.int64]:
        """A uniform multiple of the step in each bin ``[lo, hi)`` (edges are multiples), as a number of steps."""
        assert self.step is not None
        first = np.round(lo / self.step)
        after = np.round(hi / self.step)
        return rng.integers(first.astype(np.int64), np.maximum(after, first + 1).astype(np.int64))

    def labels(self) -> list[str]:
        """Each bin as ``[lower, upper)`` (``[lower, upper]`` for the last; integers: ``17`` or ``[17, 19]``)."""
        edges = self.edges
        out = []
        for j in range(self.bins):
            lo, hi = edges[j], edges[j + 1]
            if self.kind == "integer":
                first, last = int(lo), int(hi) - 1
                out.append(str(first) if first == last else f"[{first}, {last}]")
                continue
            if self.step is not None:  # the multiples lo, ..., hi - step
                top = hi - self.step
                out.append(self._format(lo) if top <= lo else f"[{self._format(lo)}, {self._format(top)}]")
                continue
            close = "]" if j == self.bins - 1 else ")"
            out.append(f"[{self._format(lo)}, {self._format(hi)}{close}")
        out += [self._format(point) for point in self.points]
        if self.missing:
            out.append("<NA>")
        return out

    def _format(self, value: float) -> str:
        try:
            if self.kind == "datetime":
                stamp = pd.Timestamp(math.floor(value), unit="s", tz="UTC")
                tz = getattr(self.dtype, "tz", None)
                return str(stamp.tz_convert(tz) if tz is not None else stamp.tz_localize(None))
            if self.kind == "timedelta":
                return str(pd.Timedelta(seconds=value))
        except (OverflowError, ValueError, NotImplementedError):  # beyond what pandas timestamps can show
            return f"{value:.6g}s"
        return f"{value:.6g}"


def on_grid(multiples: NDArray[np.float64], step: float) -> NDArray[np.float64]:
    """Whole numbers of steps as values: ``k / 10`` rather than ``k * 0.1`` for decimal steps, so that each is the
    float nearest the decimal (``7 * 0.1`` is not ``0.7``; ``7 / 10`` is).

    >>> on_grid(np.array([7.0, 3.0]), 0.1).tolist(), on_grid(np.array([7.0]), 2.0).tolist()
    ([0.7, 0.3], [14.0])
    """
    if step < 1:
        return multiples / round(1 / step)
    return multiples * step


def _numeric_kind(dtype: Any) -> NumericKind:
    kind = _kind(None, dtype)
    if kind not in ("float", "integer", "datetime", "timedelta"):
        raise TypeError(f"dtype {dtype} is not numeric, datetime or timedelta")
    return kind  # type: ignore[return-value]


def _within(
    values: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64],
    inner: NDArray[np.bool_], dtype: np.dtype[Any],
) -> NDArray[Any]:
    """``values`` cast to a float dtype, nudged so that rounding keeps them inside their bins."""
    cast = values.astype(dtype)
    if cast.dtype == np.float64:
        return cast
    back = cast.astype(np.float64)
    over = inner & (back >= hi)  # rounded up onto the next bin's edge
    cast[over] = np.nextafter(cast[over], dtype.type(-np.inf))
    under = back < lo
    cast[under] = np.nextafter(cast[under], dtype.type(np.inf))
    return cast


# ---------------------------------------------------------------------------
# planning
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _ColumnPlan:
    name: Any
    dtype: Any
    kind: str
    domain: ColumnDomain | None  # public domain, or None if it needs a measurement
    need: Need | None
    bins: int
    bounds: tuple[float, float] | None = None  # declared bounds whose bins are found privately ("bins")


@dataclass(frozen=True, eq=False)
class DomainPlan:
    """Every column's domain, or the private measurement that will find it; built by :func:`plan_domains`.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> df = pd.DataFrame({"age": [25, 40, 61, 33] * 500, "city": ["Oslo", "Rome"] * 1000})
    >>> plan = plan_domains(df, ["age", "city"], bounds=None, categories=None, bins=16)
    >>> plan.needs
    {'age': 'bounds', 'city': 'categories'}
    >>> p = df.dp.protect(rho=0.1)
    >>> share = Share(rho=Fraction(1, 50), epsilon=Fraction(0), delta=Fraction(0))  # Gaussian, on a zCDP budget
    >>> with seeded_noise(0):
    ...     (age,) = plan_domains(df, ["age"], bounds=None, categories=None, bins=16).discover(
    ...         Target.of(p), share).domains
    >>> age.labels()[:3]
    ['[16, 21]', '[22, 25]', '[26, 28]']
    >>> p.dp.budget.ledger[["query", "columns", "rho"]].values.tolist()
    [['bounds for synthesize', 'age', 0.01], ['bins for synthesize', 'age', 0.01]]
    """

    columns: tuple[Any, ...]
    entries: tuple[_ColumnPlan, ...]

    @property
    def needs(self) -> dict[Any, Need]:
        """The columns that need a private measurement, and which: ``"bounds"`` or ``"categories"``."""
        return {e.name: e.need for e in self.entries if e.need is not None}

    @property
    def discovery_columns(self) -> tuple[Any, ...]:
        """The columns whose domain needs a private measurement, in order."""
        return tuple(self.needs)

    @property
    def selections(self) -> tuple[Any, ...]:
        """The columns whose discovery can spend delta: text categories, and the common values of numbers."""
        return tuple(e.name for e in self.entries if e.need == "categories" or (
            e.need in ("bounds", "bins") and e.kind in ("float", "integer")))

    @property
    def needs_delta(self) -> bool:
        """True when some column's discovery can select values privately (which spends delta)."""
        return bool(self.selections)

    def public_domains(self) -> dict[Any, ColumnDomain]:
        """The domains known without any measurement."""
        return {e.name: e.domain for e in self.entries if e.domain is not None}

    def check_privacy(self, share: Share | None) -> None:
        """Raise a ValueError, before anything is charged, if ``share`` cannot pay for the discovery.

        ``None`` means no budget for discovery: every domain must then be public.
        Selecting categories needs a selection delta (an (epsilon, delta) budget
        with delta > 0). With nothing to discover, ``share`` is not used (and
        :meth:`discover` charges nothing).
        """
        needs = self.needs
        if not needs:
            return
        if share is None:
            advice = "; ".join(_advice(name, need) for name, need in needs.items())
            raise ValueError(f"no budget was given to find the domains of {[str(c) for c in needs]}: {advice}")
        categories = [str(c) for c, need in needs.items() if need == "categories"]
        if categories and share.delta == 0:
            raise ValueError(
                f"the categories of {categories} are not public: declare them with categories={{column: [...]}}, "
                "give the column a categorical dtype, or pass delta>0 (on an epsilon/delta budget) to select "
                "them privately"
            )

    def for_small_frame(self, bins: int) -> DomainPlan:
        """This plan for a frame too small for correlations: equal-width ``bins`` over declared bounds (public:
        their histogram would cost more than it places) and the lower bound as a value of its own, and ``bins``
        bins found privately for the rest.

        Only measurements are taken away, so every check made on this plan before a charge still holds.

        >>> df = pd.DataFrame({"age": [25, 40, 61] * 100, "w": [1.5, 2.5, 3.0] * 100})
        >>> plan = plan_domains(df, ["age", "w"], bounds={"w": (0, 4)}, categories=None, bins=32, follow_data=True)
        >>> plan.needs, plan.for_small_frame(8).needs
        ({'age': 'bounds', 'w': 'bins'}, {'age': 'bounds'})
        >>> plan.for_small_frame(8).public_domains()["w"].labels()[-3:]
        ['[3.5, 4]', '0', '<NA>']
        """
        def small(entry: _ColumnPlan) -> _ColumnPlan:
            if entry.need == "bins":
                assert entry.bounds is not None
                lower, upper = entry.bounds
                domain = NumericDomain.from_bounds(entry.name, entry.dtype, lower, upper, bins=bins)
                # The lower bound is also a value of its own (free: it is public). Counts, hours and amounts often
                # hold it in many rows (mroz: 43% of the wives worked 0 hours), which an equal-width first bin
                # spread over its width: mroz declared 0.217 -> 0.198 (issue 33, 5 seeds), penguins 0.309 ->
                # 0.308; the upper bound too did no better (0.196, 0.312).
                if entry.kind == "float" or (entry.kind == "integer" and domain.edges[1] - domain.edges[0] > 1):
                    domain = domain.with_points([domain.edges[0]])
                return replace(entry, domain=domain, need=None, bins=bins)
            return replace(entry, bins=bins) if entry.need == "bounds" else entry

        return DomainPlan(self.columns, tuple(small(e) for e in self.entries))

    def datetime_ranges(self) -> tuple[Any, ...]:
        """The datetime columns whose range the sparse vector finds (pure epsilon)."""
        return tuple(e.name for e in self.entries if e.need == "bounds" and e.kind == "datetime")

    def shares(self, whole: Share) -> dict[Any, Share]:
        """Each column's part of ``whole``: equal parts of its rho (or epsilon); its delta in equal parts to the
        selections; its sparse-vector epsilon in equal parts to the datetimes' ranges."""
        self.check_privacy(whole)
        needs = self.needs
        if not needs:
            return {}
        selections, datetimes = self.selections, self.datetime_ranges()
        out = {}
        for name in needs:
            each = whole.part(Fraction(1, len(needs)))
            out[name] = replace(
                each, delta=whole.delta / len(selections) if name in selections else Fraction(0),
                svt_epsilon=whole.svt_epsilon / len(datetimes) if name in datetimes else Fraction(0))
        return out

    def discover(self, target: Target, share: Share | None,
                 counts: Callable[[Any], Count] | None = None, rows: float | None = None,
                 values: Callable[[Any], ValueCounts] | None = None) -> Discovery:
        """Charge each needed measurement as its own ledger line; return every column's domain, in order.

        ``counts`` reads a numeric column's histograms after their charges (default: :func:`present_counts`
        of ``target``; the Dask front counts on partitions), and ``values`` a column's
        :data:`ValueCounts` after a selection's charge (default: :func:`present_values`).

        ``share`` is split by :meth:`shares`. Everything is checked (privacy,
        schema, the whole cost against the remaining budget) before the first
        charge; the data is read only after each charge. The result says what
        was spent, which can be less than ``share`` (module docstring).
        """
        self.check_privacy(share)
        for entry in self.entries:
            dtype = target.column(entry.name).dtype
            if dtype != entry.dtype:
                raise TypeError(f"column {entry.name!r} was planned with dtype {entry.dtype} but has dtype {dtype}")
        shares = self.shares(share) if share is not None else {}
        read_values = functools.partial(present_values, target) if values is None else values
        if shares:
            assert share is not None
            target.reserve(share.most(), query=f"finding the domains of {[str(c) for c in shares]}")
        domains: list[ColumnDomain] = []
        parts: list[tuple[Cost, Fraction]] = []
        notes: list[str] = []
        for entry in self.entries:
            if entry.domain is not None:
                domains.append(entry.domain)
            elif entry.need in ("bounds", "bins"):
                count = present_counts(target, entry.name) if counts is None else counts(entry.name)
                domain, spent, note = _discover_bins(target, entry, shares[entry.name], count, rows,
                                                     functools.partial(read_values, entry.name))
                domains.append(domain)
                parts += spent
                notes += [note] if note else []
            else:
                keys = _select(target, entry, shares[entry.name], "categories",
                               functools.partial(read_values, entry.name)).index
                domains.append(CategoryDomain.build(entry.name, entry.dtype, keys, other=True))
                parts.append(shares[entry.name].spent())
        return Discovery(domains, sum((c for c, _ in parts), Cost()), tuple(notes), sum((r for _, r in parts), Fraction(0)))


@dataclass(frozen=True)
class Discovery:
    """The domains of every planned column, and what finding them spent."""

    domains: list[ColumnDomain]
    cost: Cost
    notes: tuple[str, ...] = ()
    rho: Fraction = Fraction(0)  # the Gaussian parts' rho (zCDP budgets and plans): the model gets the rest


# Cells of the noisy histogram per bin, for columns whose bins follow the data.
FINE_CELLS = 16
# The part of a number's share that selects its common values (given a selection delta). On issue 33's raw
# benchmark (six sets of 14,000-54,000 rows, 3 seeds each), values of 2% of the rows that came out with under a
# quarter of their share: 3.0 in all with a quarter, 2.0 with a third, for the same mean 2-way error.
VALUE_SHARE = Fraction(1, 3)


# The support histogram: octaves |x| in [2**(e-1), 2**e) for e in [_LOW, _HIGH] of either sign, and one
# cell for values of magnitude below 2**(_LOW-1) (zero). Beyond 2**_HIGH, values count in the top octave.
_LOW, _HIGH = -40, 51
_OCTAVES = _HIGH - _LOW + 1
# The probability that the noise of some empty cell crosses the threshold (a bound an octave too far).
SUPPORT_FALSE_ALARM = 0.001
# The probability that the noise of an empty octave next to the range crosses the threshold of a next octave.
# At small budgets an octave of a fifth of the rows fell below the first threshold: mroz's experience (0-45
# years) was found within [8, 15] (issue 33; raw 2-way, 5 seeds, 0.285 -> 0.248; 5% gave 0.253). Frames of
# 14,000+ rows stayed within +-0.001 (2 seeds).
NEIGHBOUR_FALSE_ALARM = 0.01
# A non-negative column whose values stood out in this many positive octaves (a range of 32x and more) gets
# fine cells at equal ratios rather than equal widths: votes from 5 to 157,000 put 80% of the rows in the
# first of 512 equal cells (issue 33, movies).
SPREAD_OCTAVES = 6
# Resolutions that values may keep, coarsest first (axis units): whole numbers and decimals of floats; whole days,
# hours, minutes and seconds of times (UTC for zoned datetimes).
_STEPS: dict[str, tuple[float, ...]] = {"float": (1.0, 0.1, 0.01, 0.001), "datetime": (86400.0, 3600.0, 60.0, 1.0),
                                        "timedelta": (86400.0, 3600.0, 60.0, 1.0), "integer": ()}


def _octave_cells(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each (non-missing) value's octave cell, in the order of the values: negatives, zero, positives."""
    _, exponent = np.frexp(np.abs(values))
    exponent = np.where(np.isinf(values), _HIGH, np.clip(exponent, _LOW, _HIGH)).astype(np.int64)
    tiny = np.abs(values) < 2.0 ** (_LOW - 1)
    return np.where(tiny, _OCTAVES, np.where(values > 0, _OCTAVES + 1 + exponent - _LOW, _HIGH - exponent))


def _cell_edges(cell: int, step: float | None) -> tuple[float, float]:
    """The values an octave cell holds, as (lowest, highest); with ``step``, only multiples of it."""
    if cell == _OCTAVES:
        return 0.0, 0.0
    exponent = cell - _OCTAVES - 1 + _LOW if cell > _OCTAVES else _HIGH - cell
    low, high = 2.0 ** (exponent - 1), 2.0**exponent
    if step is not None and low >= step:
        high -= step  # the largest multiple below 2**e
    return (low, high) if cell > _OCTAVES else (-high, -low)


Cells = Callable[[NDArray[np.float64]], NDArray[np.int64]]
# The exact number of a column's non-missing values (on its axis, rows in use) in each of ``size`` cells,
# given how values map to cells: all that discovering a numeric domain reads.
Count = Callable[[Cells, int], NDArray[np.int64]]


# Each value a column holds (rows in use, missing values aside) as canonical keys in a public order, with its
# exact count: all that selecting a column's values reads.
ValueCounts = tuple["pd.Index[Any]", NDArray[np.int64]]


def value_counts_of(column: pd.Series[Any]) -> ValueCounts:
    """:data:`ValueCounts` of a pandas column (of the rows in use).

    Canonical keys (:func:`~dpframe.queries.kernels.observed_codes`): pandas would label equal values (-0.0 and
    0.0; True and 1) by the first row it meets. In :func:`~dpframe.queries.partitioned.public_order`, so that
    the noise each key gets does not depend on where its rows are (the Dask partitions give the same answer).

    >>> keys, counts = value_counts_of(pd.Series([2.5, -0.0, 0.0, None, 2.5]))
    >>> keys.tolist(), counts.tolist()
    ([0.0, 2.5], [2, 2])
    """
    codes, keys = kernels.observed_codes(column)
    counts = np.bincount(codes[codes >= 0], minlength=len(keys)).astype(np.int64)
    order = public_order(keys)
    return keys[order], counts[order]


def added_value_counts(parts: Sequence[ValueCounts]) -> ValueCounts:
    """Several :data:`ValueCounts` of one column (its Dask partitions) as one: equal keys add, exactly.

    >>> added_value_counts([value_counts_of(pd.Series([1.0, 2.0])), value_counts_of(pd.Series([-0.0, 1.0]))])
    (Index([0.0, 1.0, 2.0], dtype='float64'), array([1, 2, 1]))
    """
    keys = parts[0][0].append([k for k, _ in parts[1:]])
    codes, unique = kernels.observed_codes(pd.Series(keys))  # canonical already: only equal keys meet
    totals = np.zeros(len(unique), dtype=np.int64)
    np.add.at(totals, codes, np.concatenate([counts for _, counts in parts]))
    order = public_order(unique)
    return unique[order], totals[order]


def present_values(target: Target, name: Any) -> ValueCounts:
    """:data:`ValueCounts` of a pandas column's rows in use (read when called: after a charge).

    >>> import dpframe
    >>> target = Target.of(pd.DataFrame({"city": ["Rome", "Oslo", "Rome"]}).dp.protect(epsilon=1.0))
    >>> keys, counts = present_values(target, "city")
    >>> keys.tolist(), counts.tolist()
    (['Oslo', 'Rome'], [1, 2])
    """
    column, mask = target.column(name), target.rows_in_use()
    return value_counts_of(column if mask is None else column[mask])


def present_counts(target: Target, name: Any) -> Count:
    """:data:`Count` of a pandas column: its non-missing values of the rows in use, read on the first call
    -- made after a charge -- and kept for the column's other measurements.

    >>> import pandas as pd, dpframe
    >>> target = Target.of(pd.DataFrame({"x": [0.5, None, 3.0]}).dp.protect(epsilon=1.0))
    >>> present_counts(target, "x")(lambda values: (values > 1).astype(np.int64), 2).tolist()
    [1, 1]
    """

    @functools.cache
    def present() -> NDArray[np.float64]:
        values = axis_values(target.column(name))
        mask = target.rows_in_use()
        return values[~np.isnan(values) if mask is None else mask & ~np.isnan(values)]

    def count(cells: Cells, size: int) -> NDArray[np.int64]:
        return np.bincount(cells(present()), minlength=size)

    return count


def _noisy_histogram(
    target: Target, entry: _ColumnPlan, share: Share, count: Count,
    cells: Cells, size: int, what: str,
) -> tuple[NDArray[np.float64], NoiseSpec]:
    """Charge ``share`` (one ledger line); then the noisy count of each of ``size`` cells (``cells`` maps
    the column's values to cells; ``count`` reads them), and the noise."""
    noise = share.noise(target.contributions)
    Plan(f"{what} for {QUERY}", (str(entry.name),), target, share.charged(), {"count": noise},
         rule=share.rule("parallel composition over histogram cells")).charge()
    counts = count(cells, size)
    return (counts + noise.sample(size)).astype(np.float64), noise


def _scale(noise: NoiseSpec) -> float:
    """The noise's scale: Laplace's b, the Gaussian's sigma."""
    return float(noise.param) if noise.mechanism == "laplace" else math.sqrt(float(noise.param))


def _select(target: Target, entry: _ColumnPlan, share: Share, what: str, values: Callable[[], ValueCounts]
            ) -> pd.Series[float]:
    """Charge ``share`` (one ledger line); the column's values whose noisy count clears the selection threshold,
    as their noisy counts indexed by the values (``values`` reads the column's :data:`ValueCounts`).

    Partition selection as ``value_counts`` makes it: noise on the count of each value present (rows in use),
    released at a noisy count of at least ``k + m`` where ``P(noise >= m) <= delta / k``
    (:func:`~dpframe.queries.partitioned.selection_threshold`), so a unit's own values leak with
    probability at most the share's delta. With Gaussian noise this is delta-approximately rho-zCDP
    (:mod:`dpframe.synthesis.spending`). The values come back sorted, not in the data's order.
    """
    k = target.contributions
    noise = share.noise(k)
    threshold = selection_threshold(noise, k, float_below(share.delta))
    Plan(f"{what} for {QUERY}", (str(entry.name),), target, share.charged(), {"count": noise},
         rule=share.rule(f"partition selection: values released at a noisy count >= {threshold} "
                         f"(δ={float(share.delta):.3g})")).charge()
    keys, exact = values()
    noisy = exact + noise.sample(len(keys))
    passed = noisy >= threshold
    return pd.Series(noisy[passed].astype(np.float64), index=pd.Index(keys[passed], dtype=entry.dtype, name=None),
                     dtype=np.float64)


def _discover_range(
    target: Target, entry: _ColumnPlan, share: Share, count: Count, step: float | None
) -> tuple[float, float, str, float | None]:
    """Bounds from a noisy histogram of octaves (of both signs, and zero): ``(lower, upper, note, spread)``.

    ``spread`` is the low edge of the lowest positive octave that stood out when the range is non-negative
    and :data:`SPREAD_OCTAVES` or more positive octaves stood out (values over orders of magnitude: counts of
    votes, budgets, incomes), else None.

    The bounds are the outer edges of the outermost octaves whose noisy count
    clears a threshold that the noise of an empty cell crosses with
    probability :data:`SUPPORT_FALSE_ALARM` at most (a union bound over the
    cells). Unlike a scan that stops at the first noisy count below a
    threshold, a small share cannot make a few percent of the values vanish:
    only octaves holding fewer values than the threshold (about
    ``b ln(cells / 0.002)`` for Laplace noise of scale ``b``, ``4.4 sigma``
    for Gaussian noise) are lost. The range then reaches on, octave by
    octave, to each next octave whose noisy count clears the threshold
    that the noise of one cell crosses with probability
    :data:`NEIGHBOUR_FALSE_ALARM` (``2.3 sigma`` for Gaussian noise), never
    across zero: only two cells are tested at a time, not all of them
    (post-processing of the same counts).
    """
    size = 2 * _OCTAVES + 1
    noisy, noise = _noisy_histogram(target, entry, share, count, _octave_cells, size, "bounds")
    threshold = noise.tail_point(SUPPORT_FALSE_ALARM / size)
    occupied = np.flatnonzero(noisy >= threshold)
    note = ""
    if len(occupied) == 0:
        occupied = np.array([int(np.argmax(noisy))])
        note = (f"no range of {entry.name!r} stood out from the noise (threshold {threshold:.0f} values per "
                "octave): its bounds are those of the fullest octave and of any next one above a lower threshold; "
                "declare bounds for it")
    first, last = int(occupied[0]), int(occupied[-1])
    near = noise.tail_point(NEIGHBOUR_FALSE_ALARM)
    # Never across zero: the zero cell's neighbours are octaves of 2**-40 (a sign the data may not have).
    while first > 0 and first != _OCTAVES and noisy[first - 1] >= near:
        first -= 1
    while last < size - 1 and last != _OCTAVES and noisy[last + 1] >= near:
        last += 1
    lower, upper = _cell_edges(first, step)[0], _cell_edges(last, step)[1]
    if lower == upper:  # one value stood out (only zeros, only ones): keep the next step up as well
        upper = lower + (step or max(abs(lower), 1.0) * 2.0 ** (_LOW - 1))
    lower, upper = _with_zero(lower, upper)
    positive = occupied[occupied > _OCTAVES]
    spread = (_cell_edges(int(positive[0]), step)[0]
              if lower >= 0 and len(positive) >= SPREAD_OCTAVES else None)
    return lower, upper, note, spread


def _geometric(fine: NumericDomain, start: float) -> NumericDomain:
    """``fine``'s range cut at equal ratios from ``start`` (one cell below it), as many cells as ``fine`` has,
    on its grid (integers, or multiples of its step): cells that resolve values spread over many octaves.

    >>> fine = NumericDomain.from_bounds("votes", np.dtype("int64"), 0, 1023, bins=8)
    >>> _geometric(fine, 4.0).labels()
    ['[0, 3]', '[4, 7]', '[8, 15]', '[16, 31]', '[32, 63]', '[64, 127]', '[128, 255]', '[256, 511]', '[512, 1023]']
    """
    first, last = fine.edges[0], fine.edges[-1]
    inner = np.geomspace(max(start, first), last, fine.bins + 1)[:-1]
    if fine.kind == "integer":
        inner = np.ceil(np.round(inner, 6))  # 512.0000000001 is 512
    elif fine.step is not None:
        inner = on_grid(np.round(inner / fine.step), fine.step)
    edges = np.unique(np.concatenate([[first], inner[(inner > first) & (inner < last)], [last]]))
    return NumericDomain._of(fine.name, fine.dtype, fine.kind, edges, fine.step)


def _with_zero(lower: float, upper: float) -> tuple[float, float]:
    """The range reaching to zero when zero lies within a third of its width (post-processing of the bounds)

    The octaves near zero are narrow ([1, 2) holds one integer, [2, 4) two), so each holds few values and
    falls below the threshold even when they are frequent (days 1 to 3 of a month, hours 0 and 1: 3-4% of
    the rows each); reaching to zero widens the bins by a third at most and keeps them.

    >>> _with_zero(4.0, 31.0), _with_zero(1024.0, 2047.0), _with_zero(-64.0, -8.0)
    ((0.0, 31.0), (1024.0, 2047.0), (-64.0, 0.0))
    """
    if 0 < lower and lower <= upper / 4:
        return 0.0, upper
    if upper < 0 and -upper <= -lower / 4:
        return lower, 0.0
    return lower, upper


def _on_step(values: NDArray[np.float64], step: float) -> NDArray[np.bool_]:
    """Whether each value is a whole number of steps; for decimal steps, up to the rounding of a decimal read
    from text (``0.3`` is not exactly 3 hundredths).

    >>> _on_step(np.array([0.3, 0.305, 2.0, 1e20]), 0.01).tolist()
    [True, False, True, True]
    """
    if step >= 1:
        return np.asarray(np.fmod(values, step) == 0)
    steps = values * round(1 / step)
    return np.asarray(np.abs(steps - np.round(steps)) <= 1e-9 * np.maximum(np.abs(steps), 1.0))


def _discover_step(
    target: Target, entry: _ColumnPlan, share: Share, count: Count, selected: pd.Index[Any] | None = None
) -> tuple[float | None, bool]:
    """The coarsest resolution (:data:`_STEPS`) that the values keep, from a noisy count per resolution;
    and, given privately ``selected`` values, whether nearly every value is one of them: ``(step, discrete)``.

    Each value counts once, under the coarsest step it is a multiple of (or
    "finer"), and apart if it is a selected value: parallel composition. A
    step is kept when the noisy count of the values finer than it stays below
    what the noise of one cell exceeds with probability 1% (scaled by
    the square root of the cells summed: exact for Gaussian noise, close for Laplace) and the noisy count of the values
    on it clears that margin: a column with a few percent of finer values may
    be judged whole at small budgets, and its values are then rounded to the
    step; with no signal either way the column stays continuous. The same
    test, with the selected values against the others, decides ``discrete``
    when no step is kept.
    """
    steps = _STEPS[entry.kind]
    classes = len(steps) + 1
    chosen = np.asarray([] if selected is None else selected, dtype=np.float64)

    def cells(values: NDArray[np.float64]) -> NDArray[np.int64]:
        resolution = np.full(len(values), len(steps), dtype=np.int64)
        with np.errstate(invalid="ignore"):
            for index in range(len(steps) - 1, -1, -1):  # finest first: the coarsest step a value keeps wins
                resolution[_on_step(values, steps[index])] = index
        return resolution + classes * np.isin(values, chosen)

    size = classes * (2 if selected is not None else 1)
    noisy, noise = _noisy_histogram(target, entry, share, count, cells, size, "resolution")
    margin = noise.tail_point(0.01)

    def evidence(inside: NDArray[np.float64], outside: NDArray[np.float64]) -> bool:
        # Both sides need evidence: few values outside, and enough inside (with no signal either way,
        # e.g. fifty rows, the column stays continuous rather than rounded).
        return bool(outside.sum() <= margin * math.sqrt(len(outside))
                    and inside.sum() >= margin * math.sqrt(len(inside)))

    by_resolution = noisy.reshape(-1, classes)  # rows: not selected (and selected); columns: resolution
    for index, step in enumerate(steps):
        if evidence(by_resolution[:, : index + 1].ravel(), by_resolution[:, index + 1 :].ravel()):
            return step, False
    if selected is None or len(selected) == 0:
        return None, False
    return None, evidence(by_resolution[1], by_resolution[0])


def _discover_bins(
    target: Target, entry: _ColumnPlan, share: Share, count: Count, rows: float | None,
    values: Callable[[], ValueCounts],
) -> tuple[ColumnDomain, list[tuple[Cost, Fraction]], str]:
    """Private resolution and bounds, then (unless few values) bins following a noisy histogram.

    Half of the column's share finds the range; the resolution (floats and
    times) takes a quarter and the bins the rest. A float column given a
    selection delta first selects its common values privately with
    :data:`VALUE_SHARE` of the share (and all its delta), taken from the
    resolution's and the bins' (the range keeps its half, so no range is lost
    to the selection): if nearly every value is one of them
    (:func:`_discover_step`), they are its domain and the rest of the share is
    left unspent. An integer column selects its common values
    (:data:`VALUE_SHARE`, from the bins' half) only once its range turns out to
    hold more values than bins. A datetime's range is the sparse vector's
    (:meth:`Share.sparse_vector`). Selected values held by at least half an
    equal bin's share of ``rows`` (the noisy row count; all of them when None)
    keep codes of their own (an integer only where its fine cell holds several
    integers). Returns what each line spent.
    """
    spent: list[tuple[Cost, Fraction]] = []
    selected: pd.Series[float] | None = None
    half = Fraction(1, 2)
    # Declared bounds leave the range's half to the rest.
    whole = Fraction(1) if entry.bounds is not None else half
    for_range, rest = share.part(half), share.part(whole, selection=entry.kind == "integer")
    if entry.kind == "float" and share.delta > 0:
        for_values, rest = share.part(VALUE_SHARE, selection=True), share.part(whole - VALUE_SHARE)
        selected = _select(target, entry, for_values, "values", values)
        spent.append(for_values.spent())
    step: float | None = 1.0 if entry.kind == "integer" else None
    if _STEPS[entry.kind]:
        for_step, rest = rest.part(half), rest.part(half)
        step, discrete = _discover_step(target, entry, for_step, count, None if selected is None else selected.index)
        spent.append(for_step.spent())
        if discrete:
            assert selected is not None
            note = (f"{entry.name!r}: nearly every value is one of the {len(selected)} released; values held by too "
                    "few rows to be released, if any, come out as released ones")
            return CategoryDomain.build(entry.name, entry.dtype, selected.index.sort_values(), other=True), spent, note
    if entry.bounds is not None:
        (lower, upper), note = entry.bounds, ""
        # Without the octaves: equal ratios when the declared range spans many of them (counts, incomes).
        start = max(lower, step or 1.0)
        spread = (start if entry.kind in ("integer", "float") and lower >= 0
                  and upper >= start * 2.0**SPREAD_OCTAVES else None)
    elif entry.kind == "datetime":
        # Dates lie far from zero, where octaves are decades wide (2**30 s is 34 years): the sparse
        # vector's grid of 3% steps finds their range better. It needs numbers: seconds.
        column = target.column(entry.name)
        seconds = pd.Series(axis_values(column), index=column.index, name=column.name)
        lower, upper = private_bounds(target, seconds, for_range.sparse_vector(), query=QUERY)
        spent.append(for_range.sparse_vector_spent())
        note, spread = "", None
    else:
        lower, upper, note, spread = _discover_range(target, entry, for_range, count, step)
        spent.append(for_range.spent())
    fine = NumericDomain.from_bounds(
        entry.name, entry.dtype, lower, upper, bins=FINE_CELLS * entry.bins, strict=False
    ).on_steps(step)
    if spread is not None and fine.bins > entry.bins:
        fine = _geometric(fine, spread)
    if fine.bins <= entry.bins:  # few values (or a degenerate range): one code each, no histogram needed
        return fine, spent, note
    if rest.delta > 0:
        for_values, rest = rest.part(VALUE_SHARE / whole, selection=True), rest.part(1 - VALUE_SHARE / whole)
        selected = _select(target, entry, for_values, "values", values)
        spent.append(for_values.spent())
    # Selected values keep codes of their own: within a bin of several steps, a spike (19% of the rows at
    # 0.000 of values kept to thousandths) would be spread over the bin's fine cell.
    # Only values held by half an equal bin's share of the rows or more: a code for each of hundreds of values
    # selected in a smooth column would spread every marginal thin (diamonds' x: 69 codes, 2-way 0.067 -> 0.114).
    floor = 0.0 if rows is None else rows / (2 * entry.bins)
    points = [] if selected is None else [float(v) for v in selected.index[selected.to_numpy() >= floor]]
    if fine.kind == "integer" and points:
        # A fine cell of one integer already draws its value exactly (within its bin, in proportion to the fine
        # counts): only values whose fine cell holds several integers need codes of their own. Fewer codes, the
        # same values: raw 2-way (issue 33, 2 seeds) adult 0.030 -> 0.027, budgetfood 0.028 -> 0.025, baseball
        # 0.078 -> 0.074; bundesliga 0.042 -> 0.046 (its rounds 1-34 now share bins of two).
        fine_edges = np.asarray(fine.edges)
        cell = np.clip(np.searchsorted(fine_edges, points, side="right") - 1, 0, fine.bins - 1)
        outside = (np.asarray(points) < fine_edges[0]) | (np.asarray(points) >= fine_edges[-1])
        points = [v for v, keep in zip(points, (np.diff(fine_edges)[cell] > 1) | outside) if keep]
    with_points = fine.with_points(points)
    # Bins follow the values that are not points: those are counted in cells of their own, left unused.
    noisy, noise = _noisy_histogram(target, entry, rest, count, with_points.codes_of, with_points.size, "bins")
    edges = _edges_following(np.asarray(fine.edges), noisy[: fine.bins], entry.bins)
    # Edges taken from the fine domain's: already integers, or multiples of the step (the top one exclusive).
    # Within its bin, a value is drawn from the fine cells in proportion to their noisy counts (post-processing).
    domain = NumericDomain._of(entry.name, entry.dtype, fine.kind, edges, fine.step).with_points(points).within(
        fine.edges, noisy[: fine.bins].tolist(), _scale(noise))
    return domain, [*spent, rest.spent()], note


def _edges_following(fine_edges: NDArray[np.float64], noisy: NDArray[np.float64], bins: int) -> NDArray[np.float64]:
    """``bins`` bins over ``fine_edges`` at equal steps of half the noisy cumulative mass plus half the width.

    A spike in the first cell gets a bin of its own and takes the place of
    the bins its mass would have had; the rest never exceeds twice the equal width:

    >>> _edges_following(np.arange(9.0), np.array([100.0, 0, 0, 0, 0, 0, 0, -3]), 4).tolist()
    [0.0, 1.0, 4.0, 8.0]
    """
    mass = np.clip(noisy, 0.0, None)
    width = np.full(len(mass), 1.0 / len(mass))
    curve = np.cumsum(0.5 * width + (0.5 * mass / mass.sum() if mass.sum() > 0 else 0.5 * width))
    cuts = np.searchsorted(curve, np.arange(1, bins) / bins * curve[-1], side="left") + 1
    return np.unique(np.concatenate([fine_edges[:1], fine_edges[np.minimum(cuts, len(mass))], fine_edges[-1:]]))


def _advice(name: Any, need: Need) -> str:
    if need == "bounds":
        return f"declare bounds={{{name!r}: (lower, upper)}} or bin edges bins={{{name!r}: [...]}}"
    if need == "bins":
        return f"declare a number of bins={{{name!r}: n}} (equal widths) or bin edges bins={{{name!r}: [...]}}"
    return f"declare categories={{{name!r}: [...]}} or give {name!r} a categorical dtype"


def _check_mapping(mapping: Any, what: str, example: str, columns: Sequence[Any]) -> Mapping[Any, Any]:
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{what} must be a dict {{column: {example}}}, got {type(mapping).__name__}")
    unknown = [key for key in mapping if key not in columns]
    if unknown:
        raise KeyError(f"{what} given for {[str(k) for k in unknown]}, which are not among the columns {list(columns)!r}")
    return mapping


def _check_bins(value: Any, name: Any) -> int | None:
    """The number of bins, or None when ``value`` should be a sequence of edges."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"bins for {name!r} must be a number of bins or a list of edges, got {value!r}")
    if isinstance(value, (int, np.integer)):
        if not 1 <= value <= MAX_BINS:
            raise ValueError(f"bins must be between 1 and {MAX_BINS}, got {value} for {name!r}")
        return int(value)
    return None


# A column's codes are counted in arrays of this size (times the discovery histogram's 16 cells per bin).
MAX_BINS = 100_000


def _check_edges(value: Any, name: Any, kind: str, dtype: Any) -> list[float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray, pd.Index)):
        raise TypeError(f"bins for {name!r} must be a number of bins or a list of bin edges, got {value!r}")
    try:
        edges = np.asarray([_to_axis(v, kind, dtype, name) for v in value], dtype=np.float64)
    except (TypeError, ValueError) as error:
        if kind in ("datetime", "timedelta"):
            raise
        raise TypeError(f"bin edges for {name!r} must be numbers, got {value!r}") from error
    if len(edges) < 2 or not np.all(np.isfinite(edges)) or not np.all(np.diff(edges) > 0):
        raise ValueError(f"bin edges for {name!r} must be at least two finite, strictly increasing values")
    return [float(e) for e in edges]


def _declared_keys(series: pd.Series[Any], declared: Any, kind: str) -> pd.Index[Any]:
    """Declared categories as an index in the column's dtype (validated; no data read)."""
    name, dtype = series.name, series.dtype
    keys = public_keys(series, declared)
    assert keys is not None
    if kind == "category":
        # The declared values must be among the dtype's categories; keep them in the declared order.
        assert isinstance(dtype, pd.CategoricalDtype)
        categories: pd.Index[Any] = dtype.categories
        position = categories.get_indexer(keys)
        if (position < 0).any():
            outside = [str(k) for k, p in zip(keys, position) if p < 0]
            raise ValueError(f"declared categories {outside} of {name!r} are not categories of its dtype")
        chosen: pd.Index[Any] = categories[position]
        return chosen
    if keys.isna().any():
        raise ValueError(f"the declared categories of {name!r} contain a missing value; missing values get their own code")
    try:
        converted: pd.Index[Any] = pd.Index(pd.array(list(keys), dtype=dtype))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError) as error:
        raise TypeError(f"the declared categories of {name!r} cannot be held by its dtype {dtype}: {error}") from None
    if kind in ("integer", "float", "bool"):
        lossless = np.asarray(converted, dtype=np.float64) == np.asarray(keys, dtype=np.float64)
        if not lossless.all():
            raise ValueError(f"the declared categories of {name!r} are not all values of its dtype {dtype}")
    if converted.isna().any() or not converted.is_unique:
        raise ValueError(f"the declared categories of {name!r} become missing or duplicated in its dtype {dtype}")
    return converted


def plan_domains(
    frame: pd.DataFrame,
    columns: Sequence[Any],
    *,
    bounds: Mapping[Any, tuple[float, float]] | None = None,
    categories: Mapping[Any, Sequence[Any]] | None = None,
    bins: int | Mapping[Any, int | Sequence[float]] = DEFAULT_BINS,
    follow_data: bool = False,
) -> DomainPlan:
    """Decide every column's domain from the schema and the arguments only (the data is never read).

    ``follow_data=True`` (synthesize without ``bins=``): a column with declared bounds whose range holds more
    values than bins needs ``"bins"``: its resolution, common values and bins found privately within them.

    ``bounds`` and ``bins`` apply to numeric, datetime and timedelta columns
    (bounds of datetimes as timestamps, of timedeltas as durations);
    ``categories`` to any column. ``bins`` is a number of bins for every
    numeric column, or a dict giving a number or explicit edges per column
    (others get :data:`DEFAULT_BINS`). A column whose domain is not public
    needs ``"bounds"`` or ``"categories"`` measured by :meth:`DomainPlan.discover`.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": [30, 41], "ok": [True, False], "job": ["a", "b"]})
    >>> plan = plan_domains(df, ["age", "ok", "job"], bounds={"age": (0, 99)}, bins=10)
    >>> plan.needs, [d.size for d in plan.public_domains().values()]
    ({'job': 'categories'}, [10, 2])
    >>> plan_domains(df, ["age"], bounds={"agee": (0, 99)})
    Traceback (most recent call last):
    ...
    KeyError: "bounds given for ['agee'], which are not among the columns ['age']"
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"plan_domains needs a DataFrame, got {type(frame).__name__}")
    if isinstance(columns, (str, bytes)):
        raise TypeError("columns must be a list of column names, got a string")
    names = tuple(columns)
    if not names:
        raise ValueError("no columns to synthesize")
    if len(set(names)) != len(names):
        raise ValueError(f"columns {list(names)} contain duplicates")
    for name in names:
        if name not in frame.columns:
            raise KeyError(f"unknown column {name!r}; the frame has columns {list(frame.columns)}")
        if not isinstance(frame[name], pd.Series):
            raise ValueError(f"the frame has several columns named {name!r}; rename them first")
    declared_bounds = _check_mapping(bounds, "bounds", "(lower, upper)", names)
    declared_categories = _check_mapping(categories, "categories", "[values]", names)
    if isinstance(bins, Mapping):
        bin_specs = _check_mapping(bins, "bins", "number or [edges]", names)
        default_bins = DEFAULT_BINS
    else:
        bin_specs = {}
        checked = _check_bins(bins, "every column")
        if checked is None:
            raise TypeError("bins must be a number of bins, or a dict {column: number or [edges]}")
        default_bins = checked
    entries = []
    for name in names:
        series: pd.Series[Any] = frame[name]
        entries.append(
            _plan_column(series, name, declared_bounds.get(name), declared_categories.get(name),
                         bin_specs.get(name), default_bins, follow_data)
        )
    return DomainPlan(names, tuple(entries))


def _plan_column(
    series: pd.Series[Any], name: Any, declared_bounds: Any, declared_categories: Any, bin_spec: Any,
    default_bins: int, follow_data: bool,
) -> _ColumnPlan:
    dtype = series.dtype
    kind = _kind(name, dtype)
    if declared_categories is not None:
        if declared_bounds is not None or bin_spec is not None:
            raise ValueError(f"give {name!r} either categories or bounds/bins, not both")
        keys = _declared_keys(series, declared_categories, kind)
        return _ColumnPlan(name, dtype, kind, CategoryDomain.build(name, dtype, keys, other=True), None, 0)
    if kind in ("category", "bool", "string"):
        if declared_bounds is not None or bin_spec is not None:
            raise ValueError(
                f"bounds and bins apply to numeric, datetime and timedelta columns; {name!r} has dtype {dtype} "
                "(its categories are its domain)"
            )
        if kind == "string":
            return _ColumnPlan(name, dtype, kind, None, "categories", 0)
        public = public_keys(series, None)
        assert public is not None
        return _ColumnPlan(name, dtype, kind, CategoryDomain.build(name, dtype, public, other=False), None, 0)
    count = default_bins if bin_spec is None else _check_bins(bin_spec, name)
    if count is None:
        if declared_bounds is not None:
            raise ValueError(f"give {name!r} either bin edges, or a number of bins with bounds, not both")
        edges = _check_edges(bin_spec, name, kind, dtype)
        return _ColumnPlan(name, dtype, kind, NumericDomain.from_edges(name, dtype, edges), None, 0)
    if declared_bounds is None:
        return _ColumnPlan(name, dtype, kind, None, "bounds", count)
    try:
        lower, upper = declared_bounds
    except (TypeError, ValueError):
        raise TypeError(f"bounds for {name!r} must be a pair (lower, upper), got {declared_bounds!r}") from None
    lo, hi = check_bounds((_to_axis(lower, kind, dtype, name), _to_axis(upper, kind, dtype, name)))
    domain = NumericDomain.from_bounds(name, dtype, lo, hi, bins=count)
    if follow_data and not (kind == "integer" and domain.bins == domain.edges[-1] - domain.edges[0]):
        # Bins within the declared bounds follow the data (found privately) unless bins= says how many.
        return _ColumnPlan(name, dtype, kind, None, "bins", count, (lo, hi))
    return _ColumnPlan(name, dtype, kind, domain, None, count)
