"""Private quantiles on a data-independent grid: integer candidates, or Smith's (2011) intervals.

The output domain is a fixed grid of ``G`` cells over the bounds, chosen from
the bounds and the column's dtype only (:class:`QuantileGrid`), never from the
data: the integers in the bounds for integer columns (every ``s``-th integer
when there are more than 2^16 of them, :data:`MAX_CANDIDATES`), else 2^32 to
2^33 equal cells. Each value is clipped to the bounds.

**Integer columns: candidates** (:func:`sample_integer_quantiles`). With
``n`` values, ``L = #{x < c}``, ``E = #{x = c}`` and ``t = q n``, candidate
``c`` (a grid point) has score u(c) = -min(b(c), d(c) + 3/r), where

* b(c) = |(1 - q) L - q #{x > c}| = |L - q (n - E)| is the *balance* score of
  OpenDP's ``make_quantile_score_candidates`` (values equal to ``c`` count on
  neither side, so a candidate next to the quantile is also penalised by its
  own tied values: on integer data the answer concentrates on the integer
  holding the q-th value),
* d(c) = dist(t, [L, L + E]) is Smith's rank-interval distance (below), never
  above b(c); the cap d + 3/r keeps a candidate holding the q-th value among
  many ties within e^-3 of the best, where the balance score alone would prefer
  an empty integer next to it (values {5 × 200, 10 × 300}: b(10) = 100 but
  b(7) = 50),
* r = ε / (2Δ) is the rate (public).

Adding or removing a unit with up to ``k`` rows moves L by j1, #{x > c} by j2
(j1 + j2 <= k), E by the rest, and t by q k; b and d each move by at most
Δ = k max(q, 1 - q), and so does their minimum: the same sensitivity (and ε
cost) as the interval mechanism. One candidate is chosen by permute-and-flip
(McKenna & Sheldon 2020, as OpenDP's ``make_private_quantile``), ε-DP for
scores of sensitivity Δ and never less accurate than the exponential
mechanism. On 300 Adult ages at ε = 1 the RMSE of the median falls from 0.37
(the interval mechanism below, on the integers) to 0.29, against 0.31 for
OpenDP's candidates (``benchmarks/bench_peers_quantiles.py``).
*Exact*: q is rounded to the nearest multiple of 2^-20 (a public change of
the level, at most 2^-21), so 2^20 u(c) is an integer (at most 2^20 b(c),
below 2^53 in magnitude for fewer than 2^33 values) with integer sensitivity
k max(a, 2^20 - a), and :mod:`dpframe.selection.exponential` samples
permute-and-flip exactly. The counts come from one ``bincount`` of each
value's position on the grid (on a candidate, or between two): O(n + G), no
sort. Above 2^16 integers in the bounds the candidates are every s-th
integer, s = ceil(#integers / 2^16), so G <= 2^16 and the selection costs
about 10 ms.

**Other columns: Smith's intervals** (:func:`sample_quantile_cells`). Each
value is mapped to its cell. With ``n`` values and target rank ``t = q n``,
cell ``k`` has utility

    u(k) = -dist(t, [#{x < k}, #{x <= k}])

(zero for the cell holding the q-th value; for an empty cell the interval is
the single rank #{x <= k}), and the mechanism outputs cell k with probability
∝ exp(ε u(k) / (2Δ)) -- the exponential mechanism with the uniform base
measure on cells (McSherry & Talwar 2007; Smith 2011).

**Sensitivity.** Adding or removing a privacy unit with up to ``k`` rows moves
both ends of the rank interval by j ∈ [0, k] and the target t = q n by q k, so
u(k) moves by at most Δ = k · max(q, 1 − q) (1/2 for the median with one row
per unit, half of the usual bound of 1).

**Sampling.** Consecutive cells with the same utility form a *piece*: each
occupied cell, and each run of empty cells between two occupied ones. A piece
is chosen by the Gumbel-max trick on log(width) − ε d / (2Δ), then a uniform
cell inside it (exact :func:`~dpframe.noise.random.uniform_below`). Only pieces
near rank t can win: the cell holding the q-th value has weight 1, and all
pieces more than R ranks away share a total width below G and weight
exp(-ε R / (2Δ)), below e^-48 of that when R = (ln G + 48) · 2Δ/ε; the
Gumbel noise used here (from 53-bit uniforms) spans less than 42, so such
pieces can never win. The window of ranks [t − R, t + R] is found by
``np.partition`` (expected O(n)); its size depends only on n, G, q and ε.

**Floating point (not exact).** The choice among pieces uses floating-point
logarithms and Gumbel noise from the secure source, so selection
probabilities are those of the exponential mechanism up to floating-point
error (relative ~1e-13, and the 53-bit Gumbel truncation: outcomes e^-40 less
likely than the best are never chosen). The released value is a grid point
chosen from the bounds, so its low-order bits carry nothing about the data.
Everything else (grid, cells, window, ranks) is exact integer arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dpframe.noise.random import RandomSource, _buffered, current_source, uniform_below
from dpframe.selection.exponential import Deficits, _exponential_noise, sample_permute_and_flip

__all__ = ["MAX_CANDIDATES", "QuantileGrid", "Window", "array_windows", "integer_quantile_deficits", "position_counts", "rank_reach",
           "rank_windows", "sample_counted_quantiles", "sample_integer_quantiles", "sample_quantile_cells", "sample_quantile_windows"]

# Pieces whose log-weight is this far below the best can never win: the Gumbel
# noise -log(-log U), U in [2^-54, 1 - 2^-54], spans [-3.62, 37.43] (< 41.1).
_SPREAD = 48.0
_FLOAT_GRID_BITS = 32
_INTEGER_LIMIT = 2**62
#: Most candidates of an integer grid: beyond, every s-th integer (keeps the O(G) work about 10 ms).
MAX_CANDIDATES = 1 << 16
# Integer-candidate levels are rounded to multiples of 2^-_LEVEL_BITS so that scores are exact integers.
_LEVEL_BITS = 20
# The balance score may exceed the interval distance by at most this many 1/rate (see the module text).
_TIE_SLACK = 3
# Below this many values (or when windows cover a quarter of them) sort instead of partitioning.
_SORT_BELOW = 1 << 14


@dataclass(frozen=True)
class QuantileGrid:
    """The data-independent output grid of a quantile: ``cells`` cells over the bounds.

    >>> QuantileGrid.choose(0.0, 125.0, integer=True).cells
    126
    >>> g = QuantileGrid.choose(0, 10**6, integer=True)
    >>> g.cells, g.step, g.value(g.cells - 1)
    (62501, 16.0, 1000000.0)
    >>> g = QuantileGrid.choose(0.0, 1.0, integer=False)
    >>> g.cells == 2**32, g.value(0) == 2.0**-33
    (True, True)
    """

    lo: float
    hi: float
    origin: float
    step: float
    cells: int
    integer: bool

    @classmethod
    def choose(cls, lo: float, hi: float, integer: bool) -> QuantileGrid:
        """Integer columns: every ``s``-th integer in the bounds (s = 1 up to 2^16 of them); else ~2^-32 of the width."""
        first, last = math.ceil(lo), math.floor(hi)
        if integer and first <= last and max(abs(first), abs(last)) < _INTEGER_LIMIT:
            stride = -(-(last - first + 1) // MAX_CANDIDATES)
            return cls(lo, hi, float(first), float(stride), (last - first) // stride + 1, True)
        step = math.ldexp(1.0, math.frexp(hi - lo)[1] - 1 - _FLOAT_GRID_BITS)
        cells = math.ceil((hi - lo) / step)
        return cls(lo, hi, lo, step, cells, False)

    def to_cells(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each (non-missing) value's cell on a float grid, after clipping to the bounds; never raises on data.

        Works in place: ``values`` must be an array the caller owns (it is
        overwritten). Returns integer-valued float64 cells (exact below 2^53),
        which saves a conversion pass.
        """
        floats: NDArray[np.float64] = values.astype(np.float64, copy=False)
        with np.errstate(invalid="ignore", over="ignore"):
            floats -= self.lo
            floats /= self.step  # a power of two: exact
            np.floor(floats, out=floats)
        np.clip(floats, 0, self.cells - 1, out=floats)
        return floats

    def positions(self, values: NDArray[np.int64]) -> NDArray[np.int64]:
        """Each value's position on an integer grid: 2j on candidate j, 2j + 1 between j and j + 1 (or beyond the last).

        Values are clipped to the integers in the bounds first; works in place
        on an array the caller owns; never raises on data.

        >>> QuantileGrid.choose(0, 10, integer=True).positions(np.array([-3, 0, 4, 99])).tolist()
        [0, 0, 8, 20]
        """
        first, stride = int(self.origin), int(self.step)
        np.clip(values, first, math.floor(self.hi), out=values)
        values -= first
        if stride == 1:
            values *= 2
            return values
        offset = values % stride
        values //= stride
        values *= 2
        values += offset != 0
        return values

    def value(self, cell: int) -> float:
        """The released value of a cell: the integer, or the cell's midpoint (within the bounds)."""
        if self.integer:
            return self.origin + cell * self.step
        return min(self.lo + (cell + 0.5) * self.step, self.hi)


def rank_reach(cells: int, rate: float, level: float = 0.95) -> float:
    """Rank error not exceeded with probability ``level``: ln(G / (1 - level)) / rate.

    Data-independent: the best cell has weight 1, and the total weight of the
    cells whose rank is at least x away from t is at most G exp(-rate x).

    >>> round(rank_reach(126, 1.0), 2)
    7.83
    """
    return math.log(cells / (1 - level)) / rate


def position_counts(positions: NDArray[np.int64], grid_cells: int) -> NDArray[np.int64]:
    """Values per position of an integer grid (:meth:`QuantileGrid.positions`): all the candidates' scores need.

    Counts of parts of the values (e.g. a Dask frame's partitions) add up to those of all of them.

    >>> position_counts(np.array([0, 0, 3]), 2).tolist()
    [2, 0, 0, 1]
    """
    return np.bincount(positions, minlength=2 * grid_cells).astype(np.int64, copy=False)


def integer_quantile_deficits(
    positions: NDArray[np.int64], grid_cells: int, q: float, epsilon: Fraction, contributions: int
) -> Deficits:
    """The exact permute-and-flip weights of every candidate for level ``q`` (see the module documentation).

    ``positions`` come from :meth:`QuantileGrid.positions` (2j on candidate j,
    2j + 1 just above it). The sensitivity is ``contributions`` · max(q, 1 − q).

    Values 1, 1, 3, 3, 3 on candidates 0..3, the median: each candidate's score
    below the best, in ranks (scores are kept times 2^20):

    >>> d = integer_quantile_deficits(np.array([2, 2, 6, 6, 6]), 4, 0.5, Fraction(1), 1)
    >>> (d.gaps / (d.unit << 20)).tolist()
    [2.0, 1.0, 0.0, 0.5]
    """
    return _counted_deficits(position_counts(positions, grid_cells), grid_cells, q, epsilon, contributions)


def _counted_deficits(
    counts: NDArray[np.int64], grid_cells: int, q: float, epsilon: Fraction, contributions: int
) -> Deficits:
    """:func:`integer_quantile_deficits` from the :func:`position_counts`."""
    n, one = int(counts.sum()), 1 << _LEVEL_BITS
    below = np.zeros(grid_cells, dtype=np.int64)  # #{x < c_j}
    np.cumsum(counts[:-2].reshape(-1, 2).sum(axis=1), out=below[1:])
    ties = counts[0::2]  # #{x = c_j}
    level = round(q * one)  # q' = level / 2^20, a public rounding
    sensitivity = contributions * max(level, one - level)
    # Every score times 2^20: exact integers (int64, and float64 below 2^53).
    balance = np.abs(below * one - level * (n - ties))
    interval = np.maximum(np.maximum(below * one - level * n, level * n - (below + ties) * one), 0)
    # 3 / rate (public); capping it at 2^53 > balance changes no minimum and keeps int64 sums exact.
    slack = min(int(_TIE_SLACK * 2 * sensitivity / epsilon), 1 << 53)
    scores = -np.minimum(balance, interval + slack).astype(np.float64)
    return Deficits.of(scores, Fraction(sensitivity), epsilon, monotonic=False)


def sample_integer_quantiles(
    positions: NDArray[np.int64],
    grid_cells: int,
    qs: Sequence[float],
    epsilon: Fraction,
    contributions: int,
    source: RandomSource | None = None,
) -> list[int]:
    """One candidate per level ``q``, each by exact permute-and-flip with ``epsilon``.

    >>> from dpframe.testing import seeded_noise
    >>> grid = QuantileGrid.choose(0, 125, integer=True)
    >>> ages = np.array([23, 35, 35, 36, 36, 36, 37, 41, 52, 60] * 30)
    >>> with seeded_noise(0):
    ...     [cell] = sample_integer_quantiles(grid.positions(ages), grid.cells, [0.5], Fraction(1), 1)
    >>> grid.value(cell)
    36.0
    """
    return sample_counted_quantiles(position_counts(positions, grid_cells), grid_cells, qs, epsilon, contributions,
                                    source)


def sample_counted_quantiles(
    counts: NDArray[np.int64],
    grid_cells: int,
    qs: Sequence[float],
    epsilon: Fraction,
    contributions: int,
    source: RandomSource | None = None,
) -> list[int]:
    """:func:`sample_integer_quantiles` from the :func:`position_counts` of the values."""
    src = _buffered(current_source() if source is None else source)
    return [
        int(sample_permute_and_flip(_counted_deficits(counts, grid_cells, q, epsilon, contributions), 1, src)[0])
        for q in qs
    ]


def sample_quantile_cells(
    cells: NDArray[np.float64] | NDArray[np.int64],
    grid_cells: int,
    qs: Sequence[float],
    rates: Sequence[float],
    source: RandomSource | None = None,
) -> list[int]:
    """One exponential-mechanism cell per quantile ``q`` with its ``rate`` = ε_q / (2Δ_q).

    ``cells`` (integer-valued, each in ``[0, grid_cells)``) is reordered in place.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     [cell] = sample_quantile_cells(np.arange(0, 1000, 10), 1000, [0.5], [1.0])
    >>> 470 <= cell <= 530
    True
    """
    return sample_quantile_windows(int(cells.size), grid_cells, qs, rates, array_windows(cells), source)


def array_windows(cells: NDArray[np.float64] | NDArray[np.int64]) -> Callable[[Sequence[tuple[int, int]]], list[Window]]:
    """The :class:`Window` of each span of ranks of ``cells`` (reordered in place: sorted, or partitioned at the spans)."""
    n = int(cells.size)

    def windows(spans: Sequence[tuple[int, int]]) -> list[Window]:
        if n <= _SORT_BELOW or sum(b - a for a, b in spans) * 4 >= n:
            cells.sort()
        else:
            cells.partition(sorted({k for a, b in spans for k in (a, b - 1)}))
        return [Window.of(cells, a, b) for a, b in spans]

    return windows


@dataclass(frozen=True)
class Window:
    """The cells of the ranks ``[a, b)`` of the values, sorted, with the ranks around them: all a level needs.

    ``below`` = #{x < values[0]} and ``up_to`` = #{x <= values[-1]}.
    """

    values: NDArray[np.int64]
    below: int
    up_to: int

    @classmethod
    def of(cls, part: NDArray[np.float64] | NDArray[np.int64], a: int, b: int) -> Window:
        """The window of ``part`` partitioned so that ranks [a, b) hold exactly the values of those ranks."""
        window = np.sort(part[a:b]).astype(np.int64)
        low, high = int(window[0]), int(window[-1])
        return cls(window, a - int(np.count_nonzero(part[:a] == low)), b + int(np.count_nonzero(part[b:] == high)))


def rank_windows(n: int, grid_cells: int, qs: Sequence[float], rates: Sequence[float]) -> list[tuple[float, int, int]]:
    """For each level: the target rank ``t = q n`` and the ranks ``[a, b)`` outside which no cell can win.

    From the exact number of values ``n``, G, q and the rate: they decide only which values are looked at,
    never the distribution of the answer (pieces outside cannot win; the module docstring).

    >>> rank_windows(1000, 2**32, [0.5], [1.0])
    [(500.0, 427, 574)]
    """
    windows = []
    for q, rate in zip(qs, rates):
        t = q * n
        reach = math.ceil((math.log(grid_cells) + _SPREAD) / rate) + 2
        center = min(math.floor(t), n)
        windows.append((t, max(0, center - reach), min(n, center + reach + 1)))
    return windows


def sample_quantile_windows(
    n: int,
    grid_cells: int,
    qs: Sequence[float],
    rates: Sequence[float],
    windows: Callable[[Sequence[tuple[int, int]]], list[Window]],
    source: RandomSource | None = None,
) -> list[int]:
    """:func:`sample_quantile_cells` of ``n`` values known through ``windows(spans)``, the :class:`Window` of each
    span of ranks ``[a, b)`` (:mod:`dpframe.dask` counts them on partitions)."""
    src = _buffered(current_source() if source is None else source)
    if n == 0:
        return [int(uniform_below(grid_cells, src, size=1)[0]) for _ in qs]
    spans = rank_windows(n, grid_cells, qs, rates)
    found = windows([(a, b) for _, a, b in spans])
    return [_sample_window(w, n, grid_cells, t, a, b, rate, src) for w, (t, a, b), rate in zip(found, spans, rates)]


def _sample_window(
    found: Window, n: int, grid_cells: int, t: float, a: int, b: int, rate: float, source: RandomSource
) -> int:
    """Sample a cell, given the window of ranks [a, b)."""
    window, below, up_to = found.values, found.below, found.up_to
    low, high = int(window[0]), int(window[-1])
    starts = np.flatnonzero(np.r_[True, window[1:] != window[:-1]])
    values = window[starts]
    left_rank = (a + starts).astype(np.float64)
    right_rank = np.r_[left_rank[1:], float(b)]
    left_rank[0], right_rank[-1] = below, up_to
    piece_start = [values, values[:-1] + 1]
    piece_width = [np.ones(values.size, dtype=np.int64), values[1:] - values[:-1] - 1]
    piece_gap = [np.maximum(np.maximum(left_rank - t, t - right_rank), 0.0), np.abs(right_rank[:-1] - t)]
    # Outside the window: exact pieces when nothing lies beyond it; otherwise
    # (by the choice of the window) nothing there can win.
    if below == 0 and low > 0:
        piece_start.append(np.array([0]))
        piece_width.append(np.array([low]))
        piece_gap.append(np.array([t]))
    if up_to == n and high < grid_cells - 1:
        piece_start.append(np.array([high + 1]))
        piece_width.append(np.array([grid_cells - 1 - high]))
        piece_gap.append(np.array([n - t]))
    start = np.concatenate(piece_start)
    width = np.concatenate(piece_width)
    gap = np.concatenate(piece_gap)
    keep = width > 0
    start, width, gap = start[keep], width[keep], gap[keep]
    log_weight = np.log(width.astype(np.float64)) - rate * gap
    gumbel = -np.log(_exponential_noise(width.size, source))
    chosen = int(np.argmax(log_weight + gumbel))
    offset = int(uniform_below(int(width[chosen]), source, size=1)[0])
    return int(start[chosen]) + offset
