"""Automatic clipping bounds, chosen privately with the sparse vector technique.

``sum``, ``mean``, ``var``, ``std``, ``histogram(bins=<int>)`` and the group-by
aggregates accept ``bounds=None``: a share of the query's budget
(:data:`BOUNDS_SHARE`, a quarter) then finds bounds that clip only the few most
extreme values, and the query runs on the rest. The bounds step is its own
ledger line ("bounds for mean", mechanism "sparse vector"), and the bounds it
chose are reported with the answer (``Release.bounds``).

How (Near & Abuah, *Programming Differential Privacy*, ch. 11, done in one pass)
---------------------------------------------------------------------------------
Candidates are a logarithmic grid of both signs, ``+-2**e * (1 + m/32)`` for
``e`` in [-40, 50) and ``m`` in 0..31, plus ``+-2**50`` and 0: from ~1e-12 to
~1.1e15 in steps of at most 3.1%. The statistics of **all** candidates come
from **one** chunked pass: each value's float64 bit pattern, shifted right by
47 bits (rounding up), is its (sign, exponent, top 5 mantissa bits) bucket, and
``np.bincount`` counts the buckets. Cumulative sums of the bucket counts then
give, for every candidate ``t``, how many values the upper bound ``t`` would
clip (values ``> t``) and how many the lower bound ``t`` would clip
(values ``< t``) -- exactly, for the outer side of each sign; values of
magnitude below ~2**-40 count as 0. Nothing is clipped and summed per
candidate, as the book's loop does.

Only the tails are counted (:class:`Buckets`)
---------------------------------------------
On columns of 2**18 rows or more, the pass counts only the values at or
below a cut ``low`` and at or above a cut ``high``, placed from a strided
sample of ~2**14 values so that a few thousand values lie beyond each; the
pass is one chunked comparison (``low < x < high``) that copies the rest,
some 2.5x cheaper than bucketing every value. Counts of the tails are exact
for an upper bound ``t >= high`` (the values it counts as clipped are all
``>= t``, so in the tails) and a lower bound ``t <= low``; for the other candidates they
are lower bounds on the values clipped, i.e. upper bounds on the SVT's
query. With the same noise, a query that is negative on an upper bound of
its answer is negative on its answer; so when the first positive on those
bounds is at an exact candidate, it is the first positive of the exact
answers, and otherwise every value is counted (a second pass) and the same
noise compared with the exact answers
(:meth:`~dpframe.selection.svt.SparseVector.first_above_bounded`). For
every draw of the noise the bounds are those of the whole table: the same
distribution, hence the same privacy and accuracy. The cuts depend on the
data, but they only decide how much is counted, never what is released
(a second pass is rare: every inner candidate has some ``4 * 16 s`` values
beyond it, far beyond the noise; on data with few distinct values, e.g. 0/1,
the tails are most of the data and the pass saves nothing).

The queries and the threshold
-----------------------------
One SVT run (Lyu, Su & Li 2017, Alg. 1 with the budget split of their Alg. 7;
:mod:`dpframe.selection.svt`) with ``c = 2`` positives first scans the lower
bound's candidates downwards from ``+2**50``, with query ``-(values below t)``,
until the first positive; then the upper bound's candidates upwards from the
one just above the lower bound (or above its mirror image ``-lower`` if that is
lower), with query ``-(values above t)``. Choosing the
second scan's queries after the first positive is what Alg. 1 allows (its
proof fixes an outcome vector, which fixes the queries); starting there skips
the candidates below the data, whose answers are hopeless, and keeps the
bounds ordered. A person changes every count by at most ``max_contributions``
and all in the same direction, so the queries are **monotonic** with
sensitivity ``k = max_contributions``: threshold noise ``Lap(k/eps1)``, query
noise ``Lap(c k/eps2)`` (c = 2), discrete Laplace, with
``eps1 =`` :data:`THRESHOLD_SHARE` ``= 3/5`` of the bounds' epsilon and
``eps2`` the rest. Its cost does not depend on the number of candidates
examined, so the grid can be fine. The noise of a query is drawn only if the
scan reaches it (:meth:`~dpframe.selection.svt.SparseVector.first_above_bounded`),
in batches of public sizes (:data:`_LOWER_BATCH`, :data:`_UPPER_BATCH`, then
doubling): how much noise is drawn depends only on where the scans stop, which
they release. The sizes change the cost, never the distribution.

The threshold is set so that the bound clips **almost nothing**: a candidate is
accepted when ``count <= noise - 0.75 * s`` (``s`` = the query noise scale),
i.e. the scan usually runs a few steps past the last value before it fires.
Amin et al. (2019), "Bounding User Contributions: A Bias-Variance Trade-off in
Differential Privacy" (ICML), show that the best clipping bound for a sum
clips about ``1/epsilon`` contributions: beyond that, each further clipped
value adds bias faster than the narrower bound removes noise. With the SVT's
own noise (``s = 20`` counts at epsilon = 1) no bound can be aimed at a
handful of values; erring on the side of clipping too little (overshoot
costs ~3% of noise per grid step) is far cheaper than clipping too much on a
heavy tail (measured on Adult ages and log-normal data, see the accuracy
tests). On data with a sharp maximum (ages, top-coded values) the bound lands
within a few grid steps above the maximum; on heavy tails it clips the
values above roughly the point where about ``s`` values remain.

The tail: why three fifths of the epsilon go to the threshold
-------------------------------------------------------------
Beyond the data every candidate clips 0 values, so the scan stops at the
first query noise ``nu >= margin + rho`` (``rho`` the threshold noise, scale
``r``): each step has probability ``p ~ exp(-(margin + rho)/s) / 2``, and the
overshoot is geometric with mean ``1/p``. A large ``rho`` makes it walk on
geometrically far (32 steps an octave). Over ``rho``, ``P(more than K steps) ~
exp(margin/r) (K/2)**(-s/r) / 2``: a power law whose exponent is the ratio of
the two noise scales, ``s/r = 2 eps1/eps2``. With Alg. 1's even split it is 2:
about 1 run in 1,000 had an upper bound 10x beyond the data (10,000 runs on
Adult ages: bounds up to 4.7e9, P(|error| > 30x the median) = 0.0012), which
dominated the RMSE. With ``eps1 = 1.5 eps2`` it is 3: a 10x overshoot (106
steps) has probability ~3e-5 by the formula, a 2x one ~0.3% (1.6% before).
The price is query noise 1.25x larger (``s = 20`` rather than 16), which
clips a couple more values of a heavy tail (log-normal, n = 30,000: the
median upper bound clips the ~17 largest values rather than ~15) and leaves
sharp maxima (ages) as they were. Measured on 3,000 runs each (bounds only):
2/3 (``s/r = 4``) thins the tail further (2x in 0.1%) but clips ~25 values of
the log-normal tail and makes a bound clip over 3% of 5,000 normal values in
1 run in 750; 3/4 clips more still; a margin of one scale rather than 0.75
widens ages' bounds by a step and thickens the tail.
Alg. 7 of Lyu et al. proves any split ``eps1 + eps2 = eps`` private
(threshold noise ``Delta/eps1``, monotonic query noise ``c Delta/eps2``), so
the cost is unchanged. Every bound is a candidate, so none leaves the grid's
range ``[-2**50, 2**50]``, the public prior range of automatic bounds (an
infinity is clipped to it).

The budget share
----------------
The bounds get :data:`BOUNDS_SHARE` = 1/4 of the query's epsilon (of rho on a
zCDP budget, where the SVT's epsilon is ``sqrt(2 rho/4)``; never delta: SVT is
pure DP, and the query keeps all of delta). Chosen by measurement (median
absolute error of the mean at epsilon = 1, Adult ages and log-normal samples):
with 1/5 the noisier bounds cost more than the saved epsilon (Adult 2.0x the
true-bounds error instead of 1.5x), with 1/3 the query's own noise grows by
1.5x for no better bounds; a finer grid (32 rather than 8 or 16 candidates per
octave), the threshold's share and the 0.75-scale margin were chosen the same
way (see "The tail").

What to expect (epsilon = 1; ratio = median |error| of the mean / with the data's true min and max as bounds)
-------------------------------------------------------------------------------------------------------------
* Adult ages (n = 30,162; true 17..90): bounds around (15.75, 92), ratio ~2
  (1.97 over 10,000 runs, 1.89 with the even split; docs/selection.md has the tails).
  Normal data 1.3, uniform on [0, 1e-3] or [0, 1e12] 1.4-1.5 (measured with the even split).
* Heavy tails (log-normal, n = 5,000-30,000): ratio ~3 (2.7 with the even split); the bound clips the
  ~17 largest values, where the optimum would clip ~3 (Amin et al.), because
  the SVT cannot resolve counts much below its noise (``s``).
* Overshoot: in ~10% of runs a bound lies more than 25% beyond the data, in
  ~0.3% more than 2x and in ~3e-5 more than 10x (a large threshold noise
  delays the positive; see "The tail"); the answer's noise grows in proportion.
* Needs some rows: with fewer than roughly ``15 s`` rows (~300 at epsilon = 1
  and one row per person) an early false positive can put a bound inside the
  data, or past it (measured on ages: 1-1.5% of runs at 5-10 ``s`` rows,
  benchmarks/bench_weak_bounds.py); such answers are marked UNRELIABLE (see
  "Too few rows").
* Data far from 0 relative to its spread: each bound is found to ~3% of its
  own magnitude, so values in ``[1e6, 1e6 + 10]`` get bounds near
  ``(999424, 1015808)`` (about ``(966656, 1048576)`` at epsilon = 1); their
  midpoint serves as the centre of the mean, but the half-width (~8,000-40,000)
  and hence the noise are far larger than the data's spread (ratio ~6000).
  Subtract a public reference value first, or give bounds.
* All-equal data get bounds one grid step apart around the value (all zeros:
  ``(0, 2**-40)``).
* Missing values are ignored; infinities count as values beyond every
  candidate (they are clipped, as with explicit bounds). A histogram drops
  the values beyond its automatic bounds, as with explicit ones.

Too few rows: the UNRELIABLE mark (:func:`weak_bounds`)
-------------------------------------------------------
A candidate past the data (above its maximum for the lower scan, below its
minimum for the upper one) has the query ``-n``: it fires when the query noise
``nu >= n + margin + rho``, with probability ``exp(-(n + margin + rho)/s) / 2``.
The threshold noise has scale ``r = s/3`` (``r/s = eps2/(2 eps1)``), so
``E[exp(-rho/s)] = 1/(1 - 1/9) = 9/8``; with ``margin = 0.75 s`` and at most
``2 * 5763`` queries examined (two scans of the grid), a union bound gives
``P(a bound past the data) <= A exp(-n/s)``, ``A = 11526 * 9/16 * e**-0.75 ~
3063`` -- near 1 below ``8 s`` rows, negligible above ``20 s`` (the measured
rates above are some ten times below it; for ``s`` of a count or two, epsilon in
the tens, the discrete noise's tail and the margin's rounding make ``A`` up to 4x
larger, on a threshold of a few dozen rows). The answer's interval does not show it:
with a bound at 1e14, a mean of 1e14 has an interval of 1e12.

So an answer on automatic bounds is marked UNRELIABLE ("automatic bounds from
too few rows") when a noisy count ``m`` of the values, released with it, is
below ``TRUSTED_ROWS s + sigma**2 / s`` (``sigma`` the count noise's standard
deviation). Post-processing: it reads only the released count and public
parameters. The chance of a bound past the data *and* no mark is, for every
``n`` (Chernoff, ``Z`` the count's noise, independent of the SVT's):
``P(FP) P(n + Z >= T) <= A exp(-n/s) E[exp(Z/s)] exp(-(T - n)/s) =
A E[exp(Z/s)] exp(-T/s)``, and the ``sigma**2 / s`` term pays for
``E[exp(Z/s)]`` (``exp(sigma**2 / (2 s**2))`` for Gaussian noise, at most
``exp(sigma**2 / s**2)`` for sums of Laplace noise of scale under ``0.89 s``,
the case of every count read: one or three counts at ``s/2`` or less, sums of
group counts at ``s/4`` or less each). With ``TRUSTED_ROWS = 15`` the bound is ``3063 e**-15
= 9.4e-4`` wherever the data lie on the grid; 14 would give 2.6e-3, 16 3.5e-4
for some 7% more rows. The mark costs one false alarm where ``n`` is near
``15 s`` (300 rows at epsilon = 1, 900 for each of three columns of a
describe at epsilon = 1) and never fires far above it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.costs import Cost
from dpframe.errors import ClippingWarning, warn
from dpframe.noise.mechanism import Privacy, laplace_epsilon
from dpframe.noise.random import RandomSource
from dpframe.queries import kernels
from dpframe.queries.plan import Plan, Target, check_bounds, check_numeric
from dpframe.results import COUNT_TAIL, Clipping, Release, clipping_bites, with_release
from dpframe.selection.svt import SparseVector, SVTNoise, positive_int

__all__ = [
    "BOUNDS_SHARE",
    "CLIPPING_SHARE",
    "BoundsReads",
    "Buckets",
    "automatic_bounds",
    "bucket_counts",
    "candidates",
    "choose_bounds",
    "clip_counts",
    "clipped_counts",
    "measure_clipping",
    "private_bounds",
    "pure_share",
    "query_share",
    "range_queries",
    "resolve_bounds",
    "split_privacy",
    "warn_if_clipped",
    "weak_bounds",
]

# The share of a query's budget spent on finding its bounds.
BOUNDS_SHARE = Fraction(1, 4)
# The share spent on counting the values the bounds clip (automatic bounds, or clipping=True). A tenth:
# a fifth flags more clipped heavy tails at small epsilon, but it took the auto-bounded mean of Adult's
# ages from 1.6x to 2.2x the error with true bounds (tests/test_bounds.py); a tenth keeps it under 1.9x.
CLIPPING_SHARE = Fraction(1, 10)
# The SVT threshold noise's share of the bounds' epsilon (Lyu et al. Alg. 7; see "The tail" in the module
# docstring).
THRESHOLD_SHARE = Fraction(3, 5)
# The SVT threshold, in query-noise scales: a candidate is accepted when the
# values it clips are fewer than (noise - MARGIN * scale).
MARGIN = Fraction(3, 4)
# Automatic bounds are trusted on at least this many SVT query-noise scales of rows (a noisy count): fewer, and a
# false positive may put a bound past the data unseen by the interval ("Too few rows" in the module docstring).
TRUSTED_ROWS = 15

_MANTISSA_BITS = 5  # 32 candidates per octave
_SHIFT = 52 - _MANTISSA_BITS
_KEYS = 1 << (11 + _MANTISSA_BITS)  # buckets per sign
_LOWEST = -40  # smallest candidate magnitude 2**-40 (~9e-13)
_HIGHEST = 50  # largest 2**50 (~1.1e15)
_KEY_LO = (1023 + _LOWEST) << _MANTISSA_BITS
_KEY_HI = (1023 + _HIGHEST) << _MANTISSA_BITS
_INF_KEY = 2047 << _MANTISSA_BITS  # +-inf and the largest finite values; NaN above
_CHUNK = 1 << 20  # 8 MB of keys: large chunks amortise bincount's per-call cost (2**17 counters)


# The table keeps, per sign, one bucket per candidate key and two lumps: every key below the smallest
# candidate's, and every key above the largest's (up to +-inf; NaN is not counted). The clipped counts of the
# candidates (:func:`clip_counts`) only need cumulative counts at candidate keys, which the lumps keep exact.
_WIDTH = _KEY_HI - _KEY_LO + 3  # buckets per sign in a table
_SMALL = 1 << 11  # fewer values: their distinct keys are counted (a sort), not a counter for each of the 2**17 keys


def _compact(keys: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """The table of :func:`bucket_counts` from the ``counts`` of some distinct (signed) bucket ``keys``."""
    sign, magnitude = keys >> (11 + _MANTISSA_BITS), keys & (_KEYS - 1)
    kept = magnitude <= _INF_KEY  # NaN is not counted
    slot = np.clip(magnitude[kept] - (_KEY_LO - 1), 0, _WIDTH - 1) + sign[kept] * _WIDTH
    table = np.zeros(2 * _WIDTH, dtype=np.int64)
    np.add.at(table, slot, counts[kept])
    return table.reshape(2, _WIDTH)


def bucket_counts(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """Values per (sign, magnitude) bucket: shape ``(2, _WIDTH)``, positives in row 0; NaN is not counted.

    Bucket ``j`` of a sign holds the magnitudes in ``(v(j-1), v(j)]``, where
    ``v(j)`` is the float whose bit pattern is ``j << 47`` (so ``v`` runs through
    ``2**e * (1 + m/32)``); the table keeps the buckets of the candidates' keys
    and lumps the keys below and above them (column 0 and the last). One
    chunked pass: add ``2**47 - 1`` to the bits, shift right by 47 (a
    rounding-up division), count with ``np.bincount`` -- or, for a few values
    (the tails of :meth:`Buckets.of`), count their distinct keys.

    >>> table = bucket_counts(np.array([1.0, 1.01, 1.03125, -2.0, np.nan, 1e-300]))
    >>> [int(k) for k in np.flatnonzero(table[0])], [int(k) for k in np.flatnonzero(table[1])]
    ([0, 1281, 1282], [1313])
    >>> int(table.sum())
    5
    """
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    round_up = np.uint64((1 << _SHIFT) - 1)
    shift = np.uint64(_SHIFT)
    if len(bits) < _SMALL:
        # Wraps around only for negative NaNs with an all-ones payload (they
        # then count as zero); any fixed rule keeps each row in one bucket.
        distinct, counts = np.unique(((bits + round_up) >> shift).view(np.int64), return_counts=True)
        return _compact(distinct, counts)
    buf = np.empty(min(_CHUNK, len(bits)), dtype=np.uint64)

    def chunk_counts(start: int) -> NDArray[np.int64]:
        part = bits[start : start + _CHUNK]
        keys = buf[: len(part)]
        np.add(part, round_up, out=keys)
        np.right_shift(keys, shift, out=keys)
        return np.bincount(keys.view(np.int64), minlength=2 * _KEYS)

    # The first chunk's counters hold the sum (adding them to fresh zeros cost more than the counting).
    counts = chunk_counts(0)
    for start in range(_CHUNK, len(bits), _CHUNK):
        counts += chunk_counts(start)
    full = counts.reshape(2, _KEYS)
    table = np.empty((2, _WIDTH), dtype=np.int64)
    table[:, 0] = full[:, :_KEY_LO].sum(axis=1)
    table[:, 1:-1] = full[:, _KEY_LO : _KEY_HI + 1]
    table[:, -1] = full[:, _KEY_HI + 1 : _INF_KEY + 1].sum(axis=1)  # NaN (above) is not counted
    return table


# The two-tail pass (Buckets.of): columns shorter than this get the whole table (one pass is cheap then).
_TAIL_MIN_ROWS = 1 << 18
_SAMPLE = 1 << 14  # a strided sample of about this many values places the tail cuts
_TAIL_CHUNK = 1 << 16  # rows per chunk of the comparisons: their boolean masks stay in cache


@dataclass(eq=False)
class Buckets:
    """The bucket counts the bounds are chosen from: of every value, or only of the two tails.

    ``table`` counts (as :func:`bucket_counts`) the values at or below ``low``
    and at or above ``high`` -- all non-missing values when ``low = inf`` and
    ``high = -inf``. ``count`` is the number of non-missing values in all.
    An upper bound ``t >= high`` clips (or counts as clipped) only values of
    at least ``high``, and a lower bound ``t <= low`` only values of at most
    ``low``, so :func:`clip_counts` of ``table`` is exact for such candidates; for the others it is a lower bound
    (it counts a subset of the values clipped). ``clipped(whole=True)``
    counts every value, once, when an answer needs the exact counts of an
    inner candidate.

    >>> b = Buckets.of(np.arange(1e6))
    >>> int(b.table.sum()) < 10**5, b.count, b.low < 1e5 < 9e5 < b.high
    (True, 1000000, True)
    >>> tails = b.clipped()[0]
    >>> bool((b.clipped(whole=True)[0] >= tails).all()), b.low, b.high
    (True, inf, -inf)
    """

    table: NDArray[np.int64]
    count: int
    low: float
    high: float
    whole: Callable[[], NDArray[np.int64]]  # the table of every value (another pass), called only when needed
    _clipped: tuple[NDArray[np.int64], tuple[NDArray[np.int64], NDArray[np.int64]]] | None = field(
        default=None, init=False, repr=False)

    @classmethod
    def of(cls, values: NDArray[np.float64], reach: int = 256) -> Buckets:
        """The tails of ``values``: cuts placed (from a strided sample) with ``4 reach`` or more values beyond each.

        ``reach`` is how many values beyond a cut the sparse vector needs to
        know about to decide (almost) every candidate inside the cuts; fewer
        only costs a second pass (:meth:`clipped`), never a different answer.
        One chunked pass of comparisons copies the values outside
        ``(low, high)`` (and NaN, only to count it) -- the cuts themselves
        included, so integer data tied at a cut keep exact counts there;
        short columns, or a reach near the column's length, get the whole
        table at once.
        """
        n = len(values)
        if n < max(_TAIL_MIN_ROWS, 64 * reach):
            return cls.full(values)
        stride = n // _SAMPLE
        sample = values[::stride]
        sample = sample[~np.isnan(sample)]
        m = len(sample)
        if m == 0:
            return cls.full(values)
        rank = min(m, max(16, math.ceil(4 * reach * m / n)))
        low = float(np.partition(sample, rank - 1)[rank - 1])
        high = float(np.partition(sample, m - rank)[m - rank])
        within = np.empty(min(_TAIL_CHUNK, n), dtype=np.bool_)
        upper = np.empty_like(within)
        parts = []
        for start in range(0, n, _TAIL_CHUNK):
            chunk = values[start : start + _TAIL_CHUNK]
            w, u = within[: len(chunk)], upper[: len(chunk)]
            np.greater(chunk, low, out=w)
            np.less(chunk, high, out=u)
            np.logical_and(w, u, out=w)
            np.logical_not(w, out=w)  # outside (low, high), or NaN
            parts.append(chunk[w])
        tails = np.concatenate(parts)
        table = bucket_counts(tails)
        return cls(table, n - (len(tails) - int(table.sum())), low, high, functools.partial(bucket_counts, values))

    @classmethod
    def full(cls, values: NDArray[np.float64]) -> Buckets:
        """Every value counted (:func:`bucket_counts`): exact for every candidate."""
        table = bucket_counts(values)
        return cls(table, int(table.sum()), math.inf, -math.inf, lambda: table)

    @classmethod
    def counted(cls, table: NDArray[np.int64]) -> Buckets:
        """Buckets of a table of every value (:func:`bucket_counts`)."""
        return cls(table, int(table.sum()), math.inf, -math.inf, lambda: table)

    @classmethod
    def merged(cls, parts: Sequence[Buckets], whole: Callable[[], NDArray[np.int64]]) -> Buckets:
        """The buckets of the values of all ``parts`` (e.g. a Dask frame's partitions), exactly.

        Each part counts its values beyond its own cuts; with the outermost cuts of them all, an upper bound
        ``t >= high`` clips only values counted in every part (and a lower bound ``t <= low`` likewise), so the
        summed table is exact beyond the merged cuts and a lower bound on the values clipped inside them, as
        one :meth:`of` of all the values. ``whole`` counts every value when a candidate inside the cuts needs it.

        >>> parts = [Buckets.of(np.arange(1e6)), Buckets.of(np.arange(10.0))]
        >>> b = Buckets.merged(parts, lambda: bucket_counts(np.r_[np.arange(1e6), np.arange(10.0)]))
        >>> b.count, b.low == parts[0].low, b.high == parts[0].high
        (1000010, True, True)
        """
        table = sum((p.table for p in parts), np.zeros((2, _WIDTH), dtype=np.int64))
        return cls(table, sum(p.count for p in parts), min((p.low for p in parts), default=math.inf),
                   max((p.high for p in parts), default=-math.inf), whole)

    def clipped(self, whole: bool = False) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """:func:`clip_counts` of the table, computed once; ``whole=True`` first counts every value if not yet done."""
        if whole and (self.low != math.inf or self.high != -math.inf):
            self.table, self.low, self.high = self.whole(), math.inf, -math.inf
        if self._clipped is None or self._clipped[0] is not self.table:
            self._clipped = (self.table, clip_counts(self.table))
        return self._clipped[1]


@functools.lru_cache(maxsize=1)
def candidates() -> NDArray[np.float64]:
    """The signed candidate bounds, ascending: ``-2**50 .. -2**-40, 0, 2**-40 .. 2**50``.

    >>> grid = candidates()
    >>> len(grid), float(grid[0]), float(grid[-1]), 90.0 in grid, 17.0 in grid
    (5763, -1125899906842624.0, 1125899906842624.0, True, True)
    """
    keys = np.arange(_KEY_LO, _KEY_HI + 1, dtype=np.uint64) << np.uint64(_SHIFT)
    magnitudes = keys.view(np.float64)
    grid = np.concatenate([-magnitudes[::-1], [0.0], magnitudes])
    grid.setflags(write=False)
    return grid


def _upper_counts(table: NDArray[np.int64]) -> NDArray[np.int64]:
    """For each candidate t (ascending): values > t (t > 0), values >= t (t < 0), values > ~2**-40 (t = 0)."""
    pos, neg = table[0], table[1]
    neg_upto = np.cumsum(neg)  # [j] = negatives with magnitude <= v(j)
    pos_above = np.cumsum(pos[::-1])[::-1] - pos  # [j] = positives above v(j)
    keys = np.arange(1, _WIDTH - 1)  # the candidates' buckets, between the two lumps
    negative_side = neg_upto[keys[::-1]] + int(pos.sum())
    zero = pos_above[0]
    return np.concatenate([negative_side, [zero], pos_above[keys]]).astype(np.int64)


def clip_counts(table: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """How many values each candidate would clip as the upper bound, and as the lower bound.

    Both arrays follow :func:`candidates` (ascending). Exact for the outer side
    (an upper bound t > 0 clips the values > t; a lower bound t < 0 the values
    < t); on the inner side values equal to t are counted too (conservative),
    e.g. the lower bound 17 of positive data counts the 17s.

    >>> above, below = clip_counts(bucket_counts(np.array([17.0, 30.0, 90.0, 90.0])))
    >>> grid = list(candidates())
    >>> int(above[grid.index(88.0)]), int(above[grid.index(90.0)]), int(below[grid.index(17.0)])
    (2, 0, 1)
    >>> int(below[grid.index(16.5)]), int(below[grid.index(-1.0)])
    (0, 0)
    """
    above = _upper_counts(table)
    below = _upper_counts(table[::-1])[::-1]  # the upper bound of the negated data, mirrored
    return above, below


def svt_noise(epsilon: Fraction, contributions: int) -> SVTNoise:
    """The SVT noise of the bounds step: c = 2 monotonic queries, sensitivity ``contributions``.

    >>> noise = svt_noise(Fraction(1, 4), 1)  # the bounds' share of epsilon = 1
    >>> noise.threshold, noise.query  # in counts of values
    (Fraction(458129844907, 68719476736), Fraction(20, 1))
    """
    return SVTNoise.calibrate(epsilon, contributions, c=2, monotonic=True, threshold_share=THRESHOLD_SHARE)


# The first batches of the scans' noise: public sizes, never read off the data. The lower scan runs down from
# 2**50 and stops near the data's minimum m: after ~(50 - log2 m) * 32 candidates for m > 0, ~2,900 +
# (40 + log2 |m|) * 32 for m < 0 (4,480 for m = -1,024). The upper scan starts at the lower bound or its mirror
# image and runs up past 0 to the maximum: ~2,900 candidates for data between 1 and 1,000 of either sign. A scan
# that runs on draws doubling batches, so how much noise is drawn (and its time) depends only on where the
# scans stop, which is what they release.
_LOWER_BATCH, _UPPER_BATCH = 4608, 3328


def choose_bounds(
    table: NDArray[np.int64] | Buckets, epsilon: Fraction, contributions: int, source: RandomSource | None = None
) -> tuple[float, float]:
    """Run the SVT over the candidates (see the module docstring) and return ``(lower, upper)``.

    Reads only the bucket counts; charges nothing (:func:`private_bounds` charges).
    With the tails' :class:`Buckets`, the counts of the tails stand for
    those of every value (:meth:`SparseVector.first_above_bounded`: they are
    lower bounds on the values clipped, exact beyond the cuts), and the whole
    table is counted only if a candidate inside the cuts comes out positive:
    the same answer, with the same probabilities, as from the whole table.

    >>> from dpframe.testing import seeded_noise
    >>> ages = np.repeat(np.arange(17.0, 91.0), 400)
    >>> with seeded_noise(2):
    ...     choose_bounds(bucket_counts(ages), Fraction(1), 1)
    (16.0, 90.0)
    """
    grid = candidates()
    top = len(grid) - 1
    buckets = table if isinstance(table, Buckets) else Buckets.counted(table)
    noise = svt_noise(epsilon, contributions)
    margin = math.floor(MARGIN * noise.query)  # 0 when the noise is negligible (huge epsilon)
    run = SparseVector(margin, contributions, epsilon, c=2, monotonic=True, source=source,
                       threshold_share=THRESHOLD_SHARE)
    # Lower bound first: scan downwards from the top, query minus the values below t. Then the upper bound,
    # upwards from just above the lower one -- or above its mirror image -t if it is positive, so that with
    # too few values for the noise (both scans firing at once, near the ends of the grid) the bounds still
    # straddle 0, as two scans from the ends did -- query minus the values above t. Choosing these queries
    # after the first positive is what Alg. 1 allows; the candidates skipped are below the data. The upper
    # scan reads the table afresh: the lower one may have replaced the tails by every value.
    above, below = buckets.clipped()
    downwards = -below[::-1]
    run.draw_ahead(_LOWER_BATCH + _UPPER_BATCH)  # both scans' first noise in one call of the sampler (its fixed cost)
    j = run.first_above_bounded(downwards, grid[::-1] <= buckets.low,
                                lambda: -buckets.clipped(whole=True)[1][::-1], first_batch=_LOWER_BATCH)
    lo_index = 0 if j is None else top - j
    start = min(lo_index, top - lo_index) + 1  # the lower bound, or its mirror image if it is positive
    i = run.first_above_bounded(-buckets.clipped()[0][start:], grid[start:] >= buckets.high,
                                lambda: -buckets.clipped(whole=True)[0][start:], first_batch=_UPPER_BATCH)
    hi_index = top if i is None else start + i
    if lo_index >= hi_index:
        # Crossed (a lower bound found above 0 and an upper one below its mirror image: too few values for
        # the noise): the two, one grid step wider, swapped. Post-processing of the SVT output.
        lo_index, hi_index = max(hi_index - 1, 0), min(lo_index + 1, top)
    # Candidate 0 counts zeros as clipped (the conservative inner side), so on data >= 0 the scan runs
    # on to tiny negative candidates (-9e-13 ...). A bound of the other sign and over 2**20 times
    # smaller than its partner is reported as 0: a fixed relabelling of the SVT's output (still
    # private) that moves no value by more than 2**-20 of the range.
    lo, hi = float(grid[lo_index]), float(grid[hi_index])
    if lo < 0 < hi and -lo * 2**20 <= hi:
        lo = 0.0
    elif lo < 0 < hi and hi * 2**20 <= -lo:
        hi = 0.0
    return lo, hi


def split_privacy(privacy: Privacy, *, clipping: bool = False) -> tuple[Privacy, Privacy | None, Privacy]:
    """The bounds step's privacy, the clipping counts' (with ``clipping=True``), and what is left for the query.

    The bounds step gets :data:`BOUNDS_SHARE` of epsilon (or of rho), the
    clipping counts :data:`CLIPPING_SHARE`; both are pure epsilon-DP (charged
    rho = eps^2/2 on a zCDP budget), and delta, if any, goes entirely to the
    query. The costs add up to ``privacy.cost`` exactly.

    >>> from dpframe.accounting.budget import Budget
    >>> from dpframe.noise.mechanism import resolve
    >>> bounds, counts, rest = split_privacy(resolve(Budget(epsilon=1.0), 1.0, None, None, None), clipping=True)
    >>> bounds.epsilon, counts.epsilon, rest.epsilon
    (Fraction(1, 4), Fraction(1, 10), Fraction(13, 20))
    """
    counted = CLIPPING_SHARE if clipping else Fraction(0)
    return (pure_share(privacy, BOUNDS_SHARE), pure_share(privacy, counted) if clipping else None,
            query_share(privacy, 1 - BOUNDS_SHARE - counted))


def pure_share(privacy: Privacy, weight: Fraction) -> Privacy:
    """A pure epsilon-DP ``weight`` of ``privacy`` (Laplace noise; on a zCDP budget, charged rho = eps^2/2)."""
    if privacy.kind == "rdp" and privacy.mechanism == "laplace":
        return privacy.share(weight)  # a Rényi budget's Laplace query splits its epsilon, charged as pure
    if privacy.kind != "approx":
        rho = privacy.rho * weight
        return Privacy("zcdp", "laplace", laplace_epsilon(rho), Fraction(0), rho)
    return Privacy("approx", "laplace", privacy.epsilon * weight, Fraction(0), Fraction(0))


def query_share(privacy: Privacy, weight: Fraction) -> Privacy:
    """What the main query keeps when other steps take shares: its mechanism, ``weight`` of epsilon (or rho), all of delta."""
    if privacy.kind != "approx":
        return privacy.share(weight)
    return Privacy("approx", privacy.mechanism, privacy.epsilon * weight, privacy.delta, Fraction(0))


@dataclass(frozen=True)
class BoundsReads:
    """Where the bounds step reads the values when they are not in the target (:mod:`dpframe.dask`).

    Both are called only after the charge. ``buckets(reach)`` returns the :class:`Buckets` of the values in
    use (as ``Buckets.of(values, reach)``, or :meth:`Buckets.merged` of parts); ``clipped(lo, hi)`` counts
    the values below ``lo``, the non-missing values and the values above ``hi``.
    """

    buckets: Callable[[int], Buckets]
    clipped: Callable[[float, float], tuple[int, int, int]]


def clipped_counts(values: NDArray[np.float64], lo: float, hi: float) -> tuple[int, int, int]:
    """The values below ``lo``, the non-missing values, and the values above ``hi`` (NaN is missing).

    >>> clipped_counts(np.array([1.0, 5.0, np.nan, 9.0]), 2.0, 8.0)
    (1, 3, 1)
    """
    n_values = len(values) - int(np.count_nonzero(np.isnan(values)))
    return int(np.count_nonzero(values < lo)), n_values, int(np.count_nonzero(values > hi))


def private_bounds(
    target: Target, series: pd.Series[Any], privacy: Privacy, *, query: str = "mean",
    reads: BoundsReads | None = None,
) -> tuple[float, float]:
    """Charge ``privacy`` as its own ledger line ("bounds for <query>") and return private ``(lower, upper)``.

    See :func:`_private_bounds`.

    >>> import pandas as pd, dpframe
    >>> from dpframe.noise.mechanism import resolve
    >>> from dpframe.queries.plan import Target
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"age": [20.0, 35.0, 50.0, 65.0] * 500}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     private_bounds(Target.of(p), Target.of(p).column("age"), resolve(p.dp.budget, 0.5, None, None, None))
    (18.0, 82.0)
    >>> p.dp.budget.ledger[["query", "mechanism", "epsilon"]].values.tolist()
    [['bounds for mean', 'sparse vector', 0.5]]
    """
    return _private_bounds(target, series, privacy, query=query, reads=reads)[0]


def _private_bounds(
    target: Target, series: pd.Series[Any], privacy: Privacy, *, query: str, reads: BoundsReads | None = None
) -> tuple[tuple[float, float], Buckets]:
    """Charge ``privacy`` (ledger line "bounds for <query>"); return private ``(lower, upper)`` and the buckets.

    ``privacy`` is what the bounds step spends (see :func:`split_privacy`);
    its epsilon goes to one SVT run over the candidate grid (module docstring).
    Uses the rows kept by contribution bounding; missing values are ignored. ``reads`` reads the values
    elsewhere (:class:`BoundsReads`).
    """
    check_numeric(series, query)
    epsilon = privacy.epsilon
    if epsilon <= 0:
        raise ValueError("automatic bounds need a positive epsilon")
    k = target.contributions
    noise = svt_noise(epsilon, k)
    grid = candidates()
    plan = Plan(
        f"bounds for {query}", (str(series.name),), target, privacy, mechanism_name="sparse vector",
        detail=(
            f"{len(grid)} candidate bounds ±2^{_LOWEST}..2^{_HIGHEST} (32 per octave) and 0; "
            f"a bound is accepted when the values it clips fall below the noise minus {float(MARGIN):g} "
            f"query-noise scales; {noise.describe()}"
        ),
    )
    plan.charge()
    reach = 16 * int(noise.query)
    if reads is not None:
        buckets = reads.buckets(reach)
    else:
        mask = target.rows_in_use()
        values = kernels.as_float_array(series)
        buckets = Buckets.of(values if mask is None else values[mask], reach=reach)
    return choose_bounds(buckets, epsilon, k), buckets


def measure_clipping(
    target: Target, series: pd.Series[Any], bounds: tuple[float, float], privacy: Privacy, *, query: str,
    table: Buckets | None = None, reads: BoundsReads | None = None,
) -> Clipping:
    """Charge ``privacy`` (its own ledger line) and count, with noise, the values below, within and above ``bounds``.

    The three counts partition the non-missing values in use, so one person
    changes them by at most ``max_contributions`` in all: one discrete Laplace
    draw each at the whole of ``privacy`` (parallel composition). With the
    ``table`` of :func:`bucket_counts` that chose the bounds (which are then
    candidates), the counts come from it at no further pass over the data:
    exact on the outer side of each bound, counting values equal to a bound on
    its inner side as clipped (conservative, as :func:`clip_counts`). Without
    it (declared bounds), the values are compared with the bounds (by ``reads.clipped`` if given).

    >>> import pandas as pd, dpframe
    >>> from dpframe.accounting.budget import Budget
    >>> from dpframe.noise.mechanism import resolve
    >>> from dpframe.queries.plan import Target
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"x": [1.0, 2.0, 50.0, 60.0] * 500}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     c = measure_clipping(Target.of(p), Target.of(p).column("x"), (0.0, 10.0),
    ...                          resolve(p.dp.budget, 1.0, None, None, None), query="mean")
    >>> abs(c.above - 1000) < 20, round(c.share, 1), c.noticeable, c.chosen_privately
    (True, 0.5, True, False)
    """
    lo, hi = bounds
    noise = privacy.noise(target.contributions)
    Plan(f"clipped values for {query}", (str(series.name),), target, privacy, {"below, within, above": noise},
         rule="parallel composition").charge()
    if table is None and reads is not None:
        n_below, n_values, n_above = reads.clipped(lo, hi)
    elif table is None:
        mask = target.rows_in_use()
        values = kernels.as_float_array(series)
        n_below, n_values, n_above = clipped_counts(values if mask is None else values[mask], lo, hi)
    else:
        grid = candidates()
        # Bounds inside the tails' cuts (rare: a degenerate or relabelled choice) need every value counted.
        above, below = table.clipped(whole=not (lo <= table.low and hi >= table.high))
        n_below = int(below[np.searchsorted(grid, lo)])
        n_above = int(above[np.searchsorted(grid, hi)])
        n_values = table.count
    exact = np.array([n_below, n_values - n_below - n_above, n_above], dtype=np.int64)
    noisy = (exact + noise.sample(3)).astype(float)
    return Clipping(lo, hi, below=float(noisy[0]), within=float(noisy[1]), above=float(noisy[2]), std=noise.std,
                    reach=float(noise.halfwidth(0.95)), chosen_privately=table is not None,
                    margin=float(noise.halfwidth(1 - 2 * COUNT_TAIL)))


def automatic_bounds(
    target: Target,
    series: pd.Series[Any],
    privacy: Privacy,
    query: str,
    check: Callable[[Privacy], object],
    *,
    clipping: bool = False,
    reads: BoundsReads | None = None,
) -> tuple[tuple[float, float], Privacy, Clipping | None]:
    """For ``bounds=None``: validate everything, then find bounds; return them, the query's privacy and the clipping.

    ``check(rest)`` must build the query's plan (with any placeholder bounds)
    so that every argument error is raised before anything is charged; then
    the whole cost is charged at once (a reservation, write-ahead), and only
    then are the bounds found. The query's own charge of ``rest`` draws from
    the reservation. With ``clipping=True``, :data:`CLIPPING_SHARE` of the
    budget counts the values the bounds clip (:func:`measure_clipping`, from
    the same pass over the data). ``reads``: as :func:`_private_bounds`.

    >>> import pandas as pd, dpframe
    >>> from dpframe.queries.plan import Target
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"x": [1.0, 2.0, 3.0] * 1000}).dp.protect(epsilon=1.0)
    >>> target = Target.of(p)
    >>> with seeded_noise(0):
    ...     bounds, rest, _ = automatic_bounds(target, target.column("x"), target.privacy(1.0, None, None, None), "sum", print)
    Privacy(kind='approx', mechanism='laplace', epsilon=Fraction(3, 4), delta=Fraction(0, 1), rho=Fraction(0, 1))
    >>> bounds, rest.epsilon, p.dp.budget.spent.epsilon.exact  # all charged first; the query draws rest
    ((0.984375, 3.0), Fraction(3, 4), Fraction(1, 1))
    """
    check_numeric(series, query)
    bounds_privacy, counts_privacy, rest = split_privacy(privacy, clipping=clipping)
    check(rest)
    costs = [bounds_privacy.cost, rest.cost] + ([] if counts_privacy is None else [counts_privacy.cost])
    target.reserve(*costs, query=f"{query} with automatic bounds")
    bounds, table = _private_bounds(target, series, bounds_privacy, query=query, reads=reads)
    if counts_privacy is None:
        return bounds, rest, None
    return bounds, rest, measure_clipping(target, series, bounds, counts_privacy, query=query, table=table)


def schema_bounds(series: pd.Series[Any]) -> tuple[float, float] | None:
    """Bounds the column's type gives: (0, 1) for booleans (True counts as 1), whatever the values; else None.

    >>> schema_bounds(pd.Series([True, False])), schema_bounds(pd.Series([0.5]))
    ((0.0, 1.0), None)
    """
    return (0.0, 1.0) if pd.api.types.is_bool_dtype(series.dtype) else None


def resolve_bounds(
    target: Target,
    series: pd.Series[Any],
    bounds: Any,
    privacy: Privacy,
    query: str,
    check: Callable[[Privacy], object],
    *,
    clipping: bool,
    reads: BoundsReads | None = None,
) -> tuple[tuple[float, float], Privacy, Clipping | None]:
    """A clipped query's bounds, what is left of its privacy, and (with ``clipping``) the counted clipping.

    ``bounds=None``: found privately (:func:`automatic_bounds`); callers first take the type's
    (:func:`schema_bounds`). Declared
    bounds cost nothing, unless ``clipping`` asks to count the values they clip
    with :data:`CLIPPING_SHARE` of the budget; then everything is validated
    (``check(rest)``) and the whole cost reserved before the data is read. ``reads``: as :func:`_private_bounds`.
    """
    if bounds is None:
        return automatic_bounds(target, series, privacy, query, check, clipping=clipping, reads=reads)
    declared = check_bounds(bounds)
    if not clipping:
        return declared, privacy, None
    check_numeric(series, query)
    counts, rest = pure_share(privacy, CLIPPING_SHARE), query_share(privacy, 1 - CLIPPING_SHARE)
    check(rest)
    target.reserve(counts.cost, rest.cost, query=f"{query} with its clipping counted")
    return declared, rest, measure_clipping(target, series, declared, counts, query=query, reads=reads)


def warn_if_clipped(clipping: Clipping | None, query: str, column: Any,
                    interval: tuple[float, float] | None = None) -> None:
    """Warn (:class:`~dpframe.errors.ClippingWarning`) when a noticeable share of the values was clipped, or when
    the clipping may have moved the answer by more than half its ``interval`` (:func:`~dpframe.results.clipping_bites`;
    pass no interval where it already includes the clipping)."""
    if clipping is None:
        return
    bites = interval is not None and clipping_bites(clipping, query, *interval)
    if not (bites or clipping.noticeable):
        return
    how = "chosen privately" if clipping.chosen_privately else "declared"
    moved = "; clipping may move the answer by more than its interval's half-width" if bites else ""
    warn(
        f"{query} of {column!r}: {clipping.describe()} were clipped to the bounds ({clipping.lower:g}, "
        f"{clipping.upper:g}), {how}; the answer and its interval are for the clipped values{moved}. "
        "Declare bounds=(lower, upper) that contain the data, or a domain=(lower, upper) for an interval that "
        "includes the clipping, from what you know of the domain (not from this data), to avoid the bias",
        ClippingWarning,
    )


def weak_bounds(noisy_count: float, count_std: float, privacy: Privacy, contributions: int) -> bool:
    """Whether bounds chosen by the bounds step's ``privacy`` (see :func:`split_privacy`) rest on too few rows to be
    trusted: a released ``noisy_count`` of the values, whose noise has standard deviation ``count_std``, below
    :data:`TRUSTED_ROWS` scales ``s`` of the SVT's query noise plus ``count_std**2 / s`` ("Too few rows" in the module
    docstring). Post-processing: reads a released count and public parameters, never the data.

    >>> from dpframe.accounting.budget import Budget
    >>> from dpframe.noise.mechanism import resolve
    >>> bounds_privacy = split_privacy(resolve(Budget(epsilon=1.0), 1.0, None, None, None))[0]  # s = 20 counts
    >>> weak_bounds(219.0, 14.1, bounds_privacy, 1), weak_bounds(30000.0, 14.1, bounds_privacy, 1)
    (True, False)
    """
    scale = float(svt_noise(privacy.epsilon, contributions).query)
    return bool(noisy_count < TRUSTED_ROWS * scale + count_std**2 / scale)


def bounds_note(bounds: tuple[float, float], privacy: Privacy) -> str:
    """The note on a result whose bounds were chosen automatically.

    >>> from dpframe.accounting.budget import Budget
    >>> from dpframe.noise.mechanism import resolve
    >>> bounds_note((16.5, 90.0), resolve(Budget(epsilon=1.0), 1.0, None, None, None))[:60]
    'bounds (16.5, 90) chosen privately by the sparse vector tech'
    """
    bounds_privacy, _, _ = split_privacy(privacy)
    cost = f"ρ={float(bounds_privacy.rho):.4g}" if bounds_privacy.kind == "zcdp" else f"ε={float(bounds_privacy.epsilon):.4g}"
    return (
        f"bounds ({bounds[0]:.6g}, {bounds[1]:.6g}) chosen privately by the sparse vector technique "
        f"({cost} of this answer's cost; its own ledger line); intervals cover the clipped data's answer"
    )


# ---------------------------------------------------------------------------
# counts of many ranges, paying only for those above a threshold (book 11.4)
# ---------------------------------------------------------------------------


def _check_ranges(ranges: Any) -> list[tuple[float, float]]:
    """Ranges as pairs of floats; an end given as None is open (-inf or inf).

    >>> _check_ranges([(None, 17), (18, 64), (65, None)])
    [(-inf, 17.0), (18.0, 64.0), (65.0, inf)]
    """
    if isinstance(ranges, (str, bytes)) or not isinstance(ranges, Sequence) or len(ranges) == 0:
        raise TypeError("ranges must be a non-empty list of (low, high) pairs; None is an open end")
    checked = []
    for item in ranges:
        try:
            lo, hi = item
            lo = -math.inf if lo is None else float(lo)
            hi = math.inf if hi is None else float(hi)
        except (TypeError, ValueError):
            raise TypeError(f"each range must be a pair of numbers (low, high), got {item!r}") from None
        if (math.isinf(lo) and item[0] is not None) or (math.isinf(hi) and item[1] is not None):
            raise ValueError(f"write an open end of a range as None, not infinity: got {item!r}")
        if not lo <= hi:  # also NaN
            raise ValueError(f"each range must have low <= high, got {item!r}")
        checked.append((lo, hi))
    return checked


def range_queries(
    series: Any,
    ranges: Sequence[tuple[float, float]],
    *,
    threshold: float,
    epsilon: float,
    c: int = 1,
) -> pd.Series[Any]:
    """Noisy counts of the values in each range ``[low, high]`` whose count is above ``threshold``.

    An end given as ``None`` is open: ``(None, 17)`` counts the values up to
    17, ``(65, None)`` those from 65 up.

    The book's range-query application (Near & Abuah, 11.4): half of
    ``epsilon`` goes to SVT (Lyu et al. Alg. 1; range counts are monotonic,
    sensitivity ``k = max_contributions``), which finds up to ``c`` ranges
    above the threshold among any number of ranges; the other half releases
    those counts with discrete Laplace noise of scale ``c k / (epsilon/2)``
    (the ranges may overlap, so the ``c`` counts compose sequentially). The
    cost is ``epsilon`` whatever the number of ranges: two ledger lines. Ranges
    not returned were below the threshold -- or not examined, once ``c`` were
    found. The SVT's own noisy answers are never released.

    >>> import numpy as np, pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"age": np.repeat([25.0, 45.0, 65.0], [3000, 50, 2000])}).dp.protect(epsilon=1.0)
    >>> ranges = [(0, 9), (10, 19), (20, 29), (30, 39), (40, 49), (60, 69)]
    >>> with seeded_noise(0):
    ...     counts = range_queries(p["age"], ranges, threshold=1000, epsilon=1.0, c=2)
    >>> [str(i) for i in counts.index], bool(abs(counts.iloc[0] - 3000) < 50)
    (['[20.0, 29.0]', '[60.0, 69.0]'], True)
    >>> p.dp.budget.ledger["epsilon"].tolist()
    [0.5, 0.5]
    """
    target = Target.of(series)
    series = target.obj
    check_numeric(series, "range_queries")
    checked = _check_ranges(ranges)
    count = min(positive_int(c, "c"), len(checked))
    privacy = target.privacy(epsilon, None, None, "laplace")
    svt_privacy = privacy.share(Fraction(1, 2))
    release_privacy = privacy.share(Fraction(1, 2))
    k = target.contributions
    svt = SVTNoise.calibrate(svt_privacy.epsilon, k, c=count, monotonic=True)
    # Threshold validated before any charge.
    SparseVector.check_threshold(threshold)
    noise = release_privacy.noise(count * k)
    columns = (str(series.name),)
    detect = Plan("range queries (detect)", columns, target, svt_privacy, mechanism_name="sparse vector",
                  detail=f"{len(checked)} ranges, threshold {threshold!r}; {svt.describe()}")
    release = Plan("range queries (release)", columns, target, release_privacy, {"count": noise},
                   rule=f"sequential composition over up to {count} released ranges")
    target.reserve(svt_privacy.cost, release_privacy.cost, query="range_queries")
    detect.charge()
    release.charge()
    mask = target.rows_in_use()
    values = kernels.as_float_array(series)
    if mask is not None:
        values = values[mask]
    values = np.sort(values[~np.isnan(values)])
    lows = np.array([r[0] for r in checked])
    highs = np.array([r[1] for r in checked])
    exact = np.searchsorted(values, highs, side="right") - np.searchsorted(values, lows, side="left")
    found = SparseVector(threshold, k, svt_privacy.epsilon, c=count, monotonic=True).positives(exact)
    noisy = exact[found] + noise.sample(len(found))
    index = pd.IntervalIndex.from_arrays(lows[found], highs[found], closed="both", name=series.name)
    result = pd.Series(noisy, index=index, name="count", dtype=np.int64)
    half = noise.halfwidth(0.95)
    rel = Release(
        "range_queries", columns, f"sparse vector + {noise.name}", target.spent, noise.std,
        result - half, result + half, 0.95, None,
        "ranges above the noisy threshold; the others were below it or not examined",
    )
    return with_release(result, rel)  # type: ignore[no-any-return]
