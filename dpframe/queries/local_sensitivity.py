"""Local sensitivity: smooth sensitivity, propose-test-release and sample-and-aggregate.

Global sensitivity asks how much a statistic can change between *any* two
neighbouring data sets; these mechanisms use how much it can change near the
data at hand, without letting that (private) quantity leak. The rules, with
their proofs, are in ``docs/local-sensitivity.md``; in short:

* **Neighbours** are data sets differing by the rows of one privacy unit
  (added or removed, up to ``c = max_contributions`` rows), as everywhere in
  dpframe. All statistics are of the values clipped to the declared
  ``bounds = (lo, hi)``; ``x_1 <= ... <= x_n`` are the sorted clipped values,
  padded with ``x_i = lo`` for ``i < 1`` and ``x_i = hi`` for ``i > n``, and the
  median is the lower median ``x_m``, ``m = floor((n + 1) / 2)`` (``lo`` for no rows).

* **Reach.** Changing ``j`` rows (adding or removing) moves the median at
  most to ``x_{floor((n+1-j)/2)}`` below and ``x_{floor((n+1+j)/2)}`` above
  (adding ``hi``'s or removing the smallest values reaches the top; the
  bottom likewise), and both ends are reached. So every data set within ``k``
  units, and its neighbours, has its median in the reach of ``j = c(k+1)``
  rows, whose width ``A(k)`` bounds the local sensitivity at distance ``k``;
  and ``A(k)`` of a data set is at most ``A(k+1)`` of any neighbour (reaches
  nest by the triangle inequality). :func:`median_reach_widths`.

* **Smooth sensitivity** (Nissim, Raskhodnikova & Smith 2007, Def. 2.1 and
  Lemma 2.3 / Cor. 2.4 construction): ``S(x) = max_k phi(k) A(k)`` with
  ``phi(0) = 1`` and ``phi(k) <= e^beta phi(k+1)`` is a beta-smooth upper
  bound on the local sensitivity (``S >= LS`` and ``S(x) <= e^beta S(y)`` for
  neighbours), computed exactly in O(n) after the sort. Released: the median
  plus ``(S(x)/alpha) L``, L standard Laplace, with ``alpha = eps/2``,
  ``beta = eps / (2 ln(2/delta))``: (eps, delta)-DP (NRS Lemma 2.9).
  Only the (eps, delta) version is offered (see below).

* **Propose-test-release** (Dwork & Lei 2009; Dwork & Roth 2014 §7.3): with a
  proposed bound ``b``, ``d(x) = min{k : A(k) > b}`` is a lower bound on the
  number of units to change before the local sensitivity can exceed ``b``;
  it has sensitivity 1 (from the nesting above). Half of epsilon tests
  ``d(x) + Lap > ln(1/delta) t`` (t the noise scale), the other half releases
  ``f(x) + Lap(b / (eps/2))``; otherwise the query is refused
  (:class:`~dpframe.errors.ProposalRefusedError`), and the refusal is part
  of the release: (eps, delta)-DP in all, charged before the data is read.
  The test and the release use exact discrete Laplace noise on integer grids.

* **Sample-and-aggregate** (Nissim, Raskhodnikova & Smith 2007 §4): each
  privacy unit goes to one of ``k`` blocks, uniformly and independently (the
  secure source), so adding or removing a unit changes one block; an
  arbitrary function of each block, clipped to its bounds, is averaged, and
  the sum of the k outputs has (replace-one) sensitivity ``hi - lo``
  (:class:`~dpframe.noise.mechanism.SumGrid` with exact discrete noise).

The smooth median in floating point would leak through its low-order bits
(Mironov 2012: a release ``fl(median + scale Z)`` near 0 is a multiple of
2^-53 exactly when the median is not 0). So it is released on a public grid
``lo + G k`` (G a power of two <= (hi - lo) 2^-20) as the exact law of
``round_G(median + (S/alpha) L)``: rounding the ideal real-valued release is
post-processing, so the guarantee is exactly the ideal mechanism's, and every
quantity is an exact rational -- the median (a float, clamped), ``S`` (with a
rational ``r >= e^{-beta'}``, ``beta' <= beta``, rounded up to 41 bits), alpha
-- sampled by exact integer samplers (:class:`SmoothNoise`,
:func:`smooth_sensitivity`, :func:`rounded_laplace`). The pure-eps variant
(noise ∝ 1/(1+z^4), NRS Lemma 2.7) has no such exact sampler here and is
refused. The scale is private, so the release carries no interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.costs import exact
from dpframe.errors import ProposalRefusedError
from dpframe.noise.discrete import MAX_LAPLACE_SCALE, _bern_exp_int, sample_bernoulli_exp, sample_discrete_laplace
from dpframe.noise.mechanism import NoiseSpec, Privacy, SumGrid, resolve
from dpframe.noise.random import RandomSource, _buffered, _WordBuffer, current_source, random_bits, uniform_below
from dpframe.protection.analyst import guarded
from dpframe.protection.labels import plain_index
from dpframe.protection.rowwise import quiet
from dpframe.protection.units import UNIT_LEVEL, unit_codes, unit_ids
from dpframe.queries import kernels
from dpframe.queries.plan import Plan, Target, check_bounds, check_numeric, split
from dpframe.results import DPFloat, Release, with_release

__all__ = [
    "PTR_STATISTICS",
    "PTRNoise",
    "SmoothNoise",
    "aggregation_noise",
    "lower_median",
    "mean_widths",
    "median_reach_widths",
    "noisy_means",
    "propose_test_release",
    "ptr_releases",
    "rounded_laplace",
    "sample_and_aggregate",
    "smooth_median",
    "smooth_releases",
    "smooth_sensitivity",
    "stability_distance",
]

LEVEL = 0.95
PTR_STATISTICS = ("median", "mean")
# A distance to instability is capped here (min of two sensitivity-1 functions keeps sensitivity 1).
_DISTANCE_CAP = 2**40
# Release grid of PTR: 2^20 steps per proposed bound; values in units of it must stay int64.
_PTR_GRID_BITS = 20
_INT_LIMIT = 2**62


# ---------------------------------------------------------------------------
# reach of the median and smooth sensitivity
# ---------------------------------------------------------------------------


def _padded(sorted_values: NDArray[np.float64], index: NDArray[np.int64], lo: float, hi: float) -> NDArray[np.float64]:
    """``x_i`` for 1-based ``index``, with ``lo`` below 1 and ``hi`` above n."""
    n = sorted_values.size
    inside = np.clip(index, 1, max(n, 1)) - 1
    values = sorted_values[inside] if n else np.full(index.shape, lo)
    out: NDArray[np.float64] = np.where(index < 1, lo, np.where(index > n, hi, values))
    return out


def lower_median(sorted_values: NDArray[np.float64], lo: float) -> float:
    """``x_m``, ``m = floor((n+1)/2)``; ``lo`` for no values.

    >>> lower_median(np.array([1.0, 2.0, 3.0, 4.0]), 0.0)
    2.0
    """
    n = sorted_values.size
    return float(sorted_values[(n + 1) // 2 - 1]) if n else lo


def median_reach_widths(sorted_values: NDArray[np.float64], lo: float, hi: float, contributions: int,
                        ks: NDArray[np.int64]) -> NDArray[np.float64]:
    """``A(k)``: the width of the medians reachable by changing ``c (k + 1)`` rows, for each k in ``ks``.

    >>> x = np.array([0.0, 0.0, 50.0, 100.0, 100.0])
    >>> median_reach_widths(x, 0.0, 100.0, 1, np.arange(4)).tolist()
    [50.0, 100.0, 100.0, 100.0]
    """
    bottom, top = _reach_ends(sorted_values, lo, hi, contributions, ks)
    widths: NDArray[np.float64] = top - bottom
    return widths


def _reach_ends(sorted_values: NDArray[np.float64], lo: float, hi: float, contributions: int,
                ks: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The lowest and highest median reachable by changing ``c (k + 1)`` rows (data values, or the bounds)."""
    n = sorted_values.size
    j = contributions * (ks + 1)
    return _padded(sorted_values, (n + 1 - j) // 2, lo, hi), _padded(sorted_values, (n + 1 + j) // 2, lo, hi)


def _distances(n: int, contributions: int) -> NDArray[np.int64]:
    """k = 0, 1, ... until c(k+1) rows reach past both ends of n values (then A(k) = hi - lo)."""
    return np.arange(n // contributions + 3, dtype=np.int64)


def mean_widths(n: int, lo: float, hi: float, contributions: int, ks: NDArray[np.int64]) -> NDArray[np.float64]:
    """``A(k)`` of the clipped mean: ``(hi - lo) min(1, c / (n - c k))``, ``hi - lo`` once no rows may be left.

    A data set within k units has at least ``n - c k`` rows, and a unit moves
    the mean of ``m`` rows by at most ``c (hi - lo) / m`` (at most ``hi - lo``).

    >>> mean_widths(10, 0.0, 1.0, 1, np.arange(3)).tolist()
    [0.1, 0.1111111111111111, 0.125]
    """
    rows = (n - contributions * ks).astype(np.float64)
    with np.errstate(divide="ignore"):
        share = np.where(rows > 0, np.minimum(1.0, contributions / np.maximum(rows, 1.0)), 1.0)
    return (hi - lo) * share


def stability_distance(widths: NDArray[np.float64], proposed: float) -> int:
    """``min{k : A(k) > b}`` for nondecreasing ``widths`` (capped): sensitivity 1, by the nesting of reaches.

    >>> stability_distance(np.array([1.0, 2.0, 5.0]), 2.0)
    2
    """
    over = np.flatnonzero(widths > proposed)
    return int(over[0]) if over.size else _DISTANCE_CAP


# ---------------------------------------------------------------------------
# privacy arguments
# ---------------------------------------------------------------------------


def _approximate(target: Target, epsilon: float | None, delta: float | None, query: str) -> Privacy:
    """(eps, delta) with delta > 0, for a mechanism that is neither pure nor zCDP; validated, not charged."""
    budget = target.protection.budget
    if budget.kind != "approx":
        what = "zCDP" if budget.kind == "zcdp" else f"a filter (accounting={budget.kind!r}) that gives releases no δ"
        raise ValueError(
            f"{query} is (ε, δ)-DP and this budget is {what}: use a budget with epsilon and delta"
            + (f", or method='exponential' (pure ε{', charged ε²/2' if budget.kind == 'zcdp' else ''})"
               if query == "median" else "")
        )
    pure = resolve(budget, epsilon, None, None, "laplace")
    if delta is None:
        raise ValueError(f"{query} needs delta > 0: pass delta= (e.g. 1e-6)")
    dlt = exact(delta, "delta")
    if dlt >= 1:
        raise ValueError(f"delta must be < 1, got {delta!r}")
    return Privacy("approx", "laplace", pure.epsilon, dlt, Fraction(0))


def _clipped_sorted(target: Target, series: pd.Series[Any], lo: float, hi: float) -> NDArray[np.float64]:
    """After charging: the non-missing values in use, clipped and sorted."""
    mask = target.rows_in_use()
    values = kernels.as_float_array(series)
    if mask is not None:
        values = values[mask]
    values = np.clip(values[~np.isnan(values)], lo, hi)
    values.sort()
    return values


# ---------------------------------------------------------------------------
# smooth-sensitivity median, exact on a public grid
# ---------------------------------------------------------------------------

# The output grid: a power of two at most (hi - lo) 2^-20, anchored at lo.
_GRID_BITS = 20
# S is rounded up to 41 significant bits (a small exact rational); that costs ln(1 + 2^-40) <= 2^-40 of beta.
_SCALE_BITS = 41
_SCALE_SLACK = Fraction(1, 2**40)
# Beyond this distance the smoothing factor r^k stops decreasing: bounds the size of the exact powers of r.
_MAX_DISTANCE = 2**16
# Decimal's ln and exp are correctly rounded: at 50 digits each step errs by at most 10^-49 relatively.
_DIGITS = 50
_DECIMAL_SLACK = Fraction(1, 10**40)
# Candidates of the maximum are within this of the largest float log r^k A(k) (whose error is below 1e-12).
_LOG_TOLERANCE = 1e-9
_MAX_BETA = 64


def _decimal(q: Fraction) -> Decimal:
    return Decimal(q.numerator) / Decimal(q.denominator)


def _ln_upper(y: Fraction) -> Fraction:
    """A rational ``>= ln(y)`` for ``y >= 1``, within about 10^-40 (correctly rounded Decimal ln, plus its error)."""
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        value = Fraction(_decimal(y).ln())
    return value * (1 + _DECIMAL_SLACK) + _DECIMAL_SLACK


def _exp_neg_upper(t: Fraction) -> Fraction:
    """A rational ``>= e^{-t}`` for ``0 <= t <= 64``, within a relative 10^-38 (correctly rounded Decimal exp)."""
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        value = Fraction((-_decimal(t)).exp())
    return value * (1 + _DECIMAL_SLACK * 65)


def _round_up(num: int, den: int) -> Fraction:
    """``num/den > 0`` rounded up to ``_SCALE_BITS`` significant bits: in ``[s, s (1 + 2^-40))``; integers only.

    >>> _round_up(3, 1), _round_up(2**60 + 1, 2**60) == 1 + Fraction(1, 2**40)
    (Fraction(3, 1), True)
    """
    e = num.bit_length() - den.bit_length()  # 2^(e-1) < num/den < 2^(e+1)
    if (num << max(-e, 0)) < (den << max(e, 0)):
        e -= 1  # now 2^e <= num/den < 2^(e+1)
    unit = e - (_SCALE_BITS - 1)
    scaled_num, scaled_den = (num << max(-unit, 0)), (den << max(unit, 0))
    return -(-scaled_num // scaled_den) * Fraction(2) ** unit


@dataclass(frozen=True)
class SmoothNoise:
    """The exact smooth-sensitivity release: Laplace admissible noise (NRS Lemma 2.9) rounded to a public grid.

    Everything here depends on the privacy parameters and the bounds only:

    * ``alpha = eps/2``; ``beta`` the lemma's ``eps / (2 ln(2/delta))`` (for the ledger);
    * ``ratio`` ``r = a / 2^q`` with ``r >= e^{-beta'}``, ``beta' = beta_low - 2^-40``, where
      ``beta_low <= beta`` is computed with a rational upper bound on ``ln(2/delta)``;
    * ``step`` the grid ``G``, a power of two ``<= (hi - lo) 2^-20``, anchored at ``lo``;
    * ``floor = alpha G``, the least smooth bound used (noise scale at least one grid step).

    Why a smaller beta is safe: NRS Lemma 2.9 makes Laplace noise (alpha, beta)-admissible, and Lemma 2.6
    needs only that ``S`` be beta-smooth, ``S(x) <= e^beta S(y)``. The bound built here is
    ``(beta' + 2^-40)``-smooth (:func:`smooth_sensitivity`) with ``beta' + 2^-40 = beta_low <= beta``, and
    ``e^(beta_low) <= e^beta``, so it is beta-smooth: the release is (eps, delta)-DP for the eps and delta
    charged. ``beta_low`` and ``r`` come from correctly rounded 50-digit Decimal ``ln``/``exp`` widened by
    their error bound, so the inequalities hold exactly; only accuracy (never privacy) is lost, about 2^-12
    of beta to the rounding of r.

    >>> noise = SmoothNoise.of(Privacy("approx", "laplace", Fraction(1), Fraction(1, 10**6), Fraction(0)), 0.0, 100.0)
    >>> noise.alpha, noise.step == Fraction(1, 2**14), round(noise.beta, 5), bool(noise.ratio >= math.exp(-noise.beta))
    (Fraction(1, 2), True, 0.03446, True)
    """

    alpha: Fraction
    beta: float
    ratio: Fraction
    step: Fraction

    @classmethod
    def of(cls, privacy: Privacy, lo: float, hi: float) -> SmoothNoise:
        """For (eps, delta) with ``delta > 0``: ``alpha = eps/2``, ``beta = eps / (2 ln(2/delta))``, made exact."""
        beta_low = privacy.epsilon / (2 * _ln_upper(2 / privacy.delta))
        return cls.smoothing(privacy.epsilon / 2, beta_low, lo, hi)

    @classmethod
    def smoothing(cls, alpha: Fraction, beta: Fraction, lo: float, hi: float) -> SmoothNoise:
        """The exact release for an ``alpha`` and a (lower bound on) ``beta``; errors come from arguments only."""
        # Beyond beta = 64, e^(-64 k) is nothing already: capping (a smaller beta is still safe) keeps r simple.
        smoothing = min(beta, Fraction(_MAX_BETA)) - _SCALE_SLACK
        if smoothing <= 0:
            raise ValueError(f"epsilon is too small next to delta for method='smooth' (β={float(beta):.3g}): "
                             "use a larger epsilon or delta, or method='exponential'")
        span = Fraction(hi) - Fraction(lo)
        step = Fraction(2) ** (math.floor(math.log2(span)) - _GRID_BITS)
        while step * 2**_GRID_BITS > span:  # the float log2 may round up at a power of two
            step /= 2
        if max(span, alpha * step) * 2 / (alpha * step) > MAX_LAPLACE_SCALE:
            raise ValueError(f"epsilon={float(2 * alpha):.3g} is too small for method='smooth': the noise would be "
                             "beyond 2^56 grid steps; use a larger epsilon or method='exponential'")
        # r = a / 2^q rounded up: q bits resolve beta to a relative 2^-12 (only accuracy, never privacy, depends on q).
        bits = max(0, math.ceil(-math.log2(float(smoothing)))) + 12
        ratio = Fraction(math.ceil(_exp_neg_upper(smoothing) * 2**bits), 2**bits)
        return cls(alpha, float(beta), ratio, step)

    @property
    def floor(self) -> Fraction:
        """The least smooth bound used: ``alpha G`` (a noise scale of one grid step)."""
        return self.alpha * self.step

    @property
    def log_ratio(self) -> float:
        """``ln r`` to float precision (for choosing the candidates of the maximum only)."""
        with localcontext() as ctx:
            ctx.prec = _DIGITS
            return float(_decimal(self.ratio).ln())

    @property
    def rule(self) -> str:
        """The admissibility lemma, for the ledger."""
        return "NRS 2007 Lemma 2.9: Laplace is (ε/2, ε/(2 ln(2/δ)))-admissible, (ε, δ)-DP; rounded to a public grid"

    def width(self, smooth: Fraction) -> Fraction:
        """The Laplace scale ``S/alpha`` in grid steps."""
        return smooth / (self.alpha * self.step)


def smooth_sensitivity(sorted_values: NDArray[np.float64], lo: float, hi: float, contributions: int,
                       noise: SmoothNoise) -> Fraction:
    """``U(max(alpha G, max_k r^min(k, K) A(k)))``, ``K = 2^16``, U rounding up to 41 bits: exact, β-smooth.

    Smooth because ``phi(k) = r^min(k, K)`` has ``phi(0) = 1`` and ``phi(k) / phi(k+1) <= 1/r <= e^{beta'}``,
    and ``A`` of a data set is at most ``A(k+1)`` of a neighbour; the constant floor and the monotone rounding
    U keep it so (U costs ``ln(1 + 2^-40) <= 2^-40``): in all ``S(x) <= e^beta S(y)``, and ``S >= A(0) >= LS``.
    Beyond the data's last k, ``A(k) = hi - lo``: the term ``r^min(k,K) (hi - lo)`` is largest at the last k
    computed or at K. The maximiser is found among the k whose float ``log r^k A(k)`` is within 1e-9 of the
    largest (float errors are below 1e-12 there), then evaluated exactly on integers.

    >>> noise = SmoothNoise.smoothing(Fraction(1), Fraction(1, 10), 0.0, 1000.0)
    >>> x = np.arange(1001.0)  # local sensitivity 1, but k units away it is k + 1: the max is near k = 1/beta
    >>> round(float(smooth_sensitivity(x, 0.0, 1000.0, 1, noise)), 3)
    4.066
    """
    ks = _distances(sorted_values.size, contributions)
    ks = np.r_[ks[ks < _MAX_DISTANCE], _MAX_DISTANCE]
    bottom, top = _reach_ends(sorted_values, lo, hi, contributions, ks)
    bottom[-1], top[-1] = lo, hi  # the term r^K (hi - lo)
    with np.errstate(divide="ignore"):
        logs = ks * noise.log_ratio + np.log(top - bottom)
    floor = noise.floor
    best = max(float(logs.max()), math.log(floor))
    a, bits = noise.ratio.numerator, noise.ratio.denominator.bit_length() - 1
    smooth = _round_up(floor.numerator, floor.denominator)
    for k in np.flatnonzero(logs >= best - _LOG_TOLERANCE).tolist():
        width = Fraction(float(top[k])) - Fraction(float(bottom[k]))
        if width > 0:
            smooth = max(smooth, _round_up(a**k * width.numerator, width.denominator << (bits * k)))
    return smooth


def rounded_laplace(center: Fraction, width: Fraction, size: int = 1,
                    source: RandomSource | None = None) -> NDArray[np.int64]:
    """Exact draws of ``K = round(center + width L)``, ``L`` standard Laplace (cells ``[k - 1/2, k + 1/2)``).

    With ``k0`` the cell of ``center``, ``u = k0 + 1/2 - center`` in (0, 1], ``d = 1 - u`` and
    ``q = e^{-1/width}``: ``P(K = k0 + 1 + j) = e^{-u/width} (1 - q) q^j / 2``,
    ``P(K = k0 - 1 - j) = e^{-d/width} (1 - q) q^j / 2`` (j >= 0), and ``K = k0`` otherwise.
    Proof: ``L = s E``, a fair sign and ``E ~ Exp(1)``. With s = +1, K > k0 iff ``E >= u/width``
    (probability ``e^{-u/width}``), and then by memorylessness ``E' = E - u/width ~ Exp(1)`` and
    ``K = k0 + 1 + floor(width E')``, whose ``P(>= j) = q^j``: geometric. s = -1 likewise with ``d``.
    So: a fair bit, an exact Bernoulli(e^{-u/width}) (or e^{-d/width}) coin, and a geometric count
    ``N`` with ratio q, which is ``X`` or ``-X - 1`` for ``X`` discrete Laplace of scale ``width``
    (``P(N = j) ∝ q^j + q^(j+1)``). All three are exact integer samplers.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     k = rounded_laplace(Fraction(7, 3), Fraction(2), 100_000)
    >>> round(float(np.mean(k == 2)), 2)  # 1 - e^(-1/12)/2 - e^(-5/12)/2
    0.21
    """
    src = _buffered(current_source() if source is None else source)
    k0 = math.floor(center + Fraction(1, 2))
    up = k0 + Fraction(1, 2) - center
    upward = random_bits(size, src)
    leaves = np.empty(size, dtype=np.bool_)
    for side, gap in ((upward, up), (~upward, 1 - up)):
        leaves[side] = _bernoulli_exp(gap / width, int(side.sum()), src)
    x = sample_discrete_laplace(width, size, src)
    beyond = 1 + np.where(x >= 0, x, -x - 1)
    out: NDArray[np.int64] = k0 + np.where(leaves, np.where(upward, beyond, -beyond), 0)
    return out


def _bernoulli_exp(gamma: Fraction, size: int, source: _WordBuffer) -> NDArray[np.bool_]:
    """``size`` exact Bernoulli(e^{-gamma}) draws: vectorised within int64, else on Python ints."""
    num, den = gamma.numerator, gamma.denominator
    if num <= _INT_LIMIT and den <= _INT_LIMIT:
        return sample_bernoulli_exp(np.full(size, num, dtype=np.int64), den, source)
    return np.array([_bern_exp_int(num, den, source) for _ in range(size)], dtype=np.bool_)


def smooth_releases(sorted_values: NDArray[np.float64], lo: float, hi: float, contributions: int,
                    noise: SmoothNoise, size: int = 1) -> NDArray[np.float64]:
    """``size`` independent releases ``lo + G round((median - lo)/G + S(x)/(alpha G) L)`` (audits use many)."""
    smooth = smooth_sensitivity(sorted_values, lo, hi, contributions, noise)
    center = (Fraction(lower_median(sorted_values, lo)) - Fraction(lo)) / noise.step
    cells = rounded_laplace(center, noise.width(smooth), size)
    released: NDArray[np.float64] = lo + cells.astype(np.float64) * float(noise.step)
    return released


def smooth_median(target: Target, bounds: Any, epsilon: float | None, delta: float | None) -> DPFloat:
    """The median of the values clipped to ``bounds`` plus Laplace noise scaled to its smooth sensitivity.

    Released on the public grid ``lo + G Z`` (:class:`SmoothNoise`), sampled exactly (:func:`rounded_laplace`).

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"age": list(range(20, 81)) * 50}).dp.protect(epsilon=1.0, delta=1e-6)
    >>> with seeded_noise(1):
    ...     m = smooth_median(Target.of(p["age"]), (0, 125), 0.5, 1e-7)
    >>> bool(abs(m - 50) < 20), float(m * 2**14).is_integer(), m.release.mechanism
    (True, True, 'smooth sensitivity (Nissim, Raskhodnikova & Smith 2007)')
    """
    series = target.series
    check_numeric(series, "median")
    lo, hi = check_bounds(bounds)
    if delta is None:
        raise ValueError("method='smooth' needs delta= (e.g. 1e-6): it is (ε, δ)-DP with Laplace noise released "
                         "exactly on a grid; the pure-ε smooth median (noise ∝ 1/(1+z⁴)) is not offered because it "
                         "cannot be sampled exactly. For pure ε use method='exponential'")
    privacy = _approximate(target, epsilon, delta, "median")
    noise = SmoothNoise.of(privacy, lo, hi)
    plan = Plan("median", (str(series.name),), target, privacy, rule=noise.rule,
                mechanism_name="smooth sensitivity (Nissim, Raskhodnikova & Smith 2007)",
                detail=f"Laplace noise × S(x)/α, α={float(noise.alpha):.4g}, β={noise.beta:.4g} (scale private); "
                       f"sampled exactly on the grid {lo:g} + {float(noise.step):.4g}·k")
    plan.charge()
    values = _clipped_sorted(target, series, lo, hi)
    value = float(smooth_releases(values, lo, hi, target.contributions, noise)[0])
    nan = float("nan")
    note = (f"values clipped to ({lo:g}, {hi:g}); the noise scale is the (private) smooth sensitivity, so no "
            f"interval is given; released exactly on the grid {lo:g} + {float(noise.step):.4g}·k")
    release = Release("median", plan.columns, plan.mechanism, target.spent, nan, nan, nan, LEVEL, (lo, hi), note)
    return DPFloat(value, release)


# ---------------------------------------------------------------------------
# propose-test-release
# ---------------------------------------------------------------------------


def _proposed(sensitivity: Any) -> float:
    try:
        b = float(sensitivity)
    except (TypeError, ValueError):
        raise TypeError(f"sensitivity= (the proposed bound) must be a number, got {sensitivity!r}") from None
    if not (math.isfinite(b) and b > 0):
        raise ValueError(f"sensitivity= (the proposed bound) must be a positive finite number, got {sensitivity!r}")
    return b


def ptr_releases(distance: int, value_units: int, test_noise: NoiseSpec, release_noise: NoiseSpec, threshold: float,
                 size: int = 1) -> NDArray[np.float64]:
    """``size`` independent PTR outcomes in release-grid units: NaN where the test ``distance + noise > threshold`` fails.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     out = ptr_releases(0, 7, NoiseSpec("laplace", Fraction(2)), NoiseSpec("laplace", Fraction(1)), 20.0, 1000)
    >>> int(np.isnan(out).sum())  # distance 0: passes with probability below e^-10
    1000
    """
    passed = distance + test_noise.sample(size) > threshold
    released = (value_units + release_noise.sample(size)).astype(np.float64)
    outcome: NDArray[np.float64] = np.where(passed, released, np.nan)
    return outcome


@dataclass(frozen=True)
class PTRNoise:
    """The noise of a propose-test-release: the release grid ``step``, both noises and the test's threshold."""

    step: float
    test: NoiseSpec
    release: NoiseSpec
    threshold: float

    @classmethod
    def of(cls, proposed: float, lo: float, hi: float, privacy: Privacy) -> PTRNoise:
        """Half of epsilon each; the test passes a distance-0 data set w.p. below delta: P(Z > t ln(1/δ)) < δ.

        The release grid is a data-independent 2^-20 of ``proposed``; rounding to it adds one step of sensitivity.

        >>> noise = PTRNoise.of(1.0, 0.0, 100.0, Privacy("approx", "laplace", Fraction(1), Fraction(1, 10**6), Fraction(0)))
        >>> noise.step == 2.0**-20, float(noise.test.param), round(noise.threshold, 2)
        (True, 2.0, 27.63)
        """
        step = math.ldexp(1.0, math.frexp(proposed)[1] - 1 - _PTR_GRID_BITS)
        if max(abs(lo), abs(hi)) / step >= _INT_LIMIT:
            raise ValueError(f"the proposed sensitivity {proposed:g} is too small for bounds ({lo:g}, {hi:g}): "
                             "propose a larger one or narrower bounds")
        halves = split(privacy, ["test", "release"])
        test = Privacy("approx", "laplace", halves["test"].epsilon, Fraction(0), Fraction(0)).noise(1)
        release = Privacy("approx", "laplace", halves["release"].epsilon, Fraction(0), Fraction(0)).noise(
            math.ceil(proposed / step) + 1)
        # Discrete Laplace with scale t: P(Z >= m) = e^(-m/t) / (1 + e^(-1/t)) < e^(-threshold/t) = delta for m > threshold.
        return cls(step, test, release, float(test.param) * math.log(1 / float(privacy.delta)))


def propose_test_release(target: Target, statistic: str, *, sensitivity: Any, bounds: Any,
                         epsilon: float | None, delta: float | None) -> DPFloat:
    """Propose-test-release of the clipped ``"median"`` or ``"mean"`` with proposed local sensitivity bound.

    Raises :class:`~dpframe.errors.ProposalRefusedError` (its cost charged) when the noisy test fails.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"age": list(range(20, 81)) * 50}).dp.protect(epsilon=1.0, delta=1e-6)
    >>> with seeded_noise(0):
    ...     m = propose_test_release(Target.of(p["age"]), "median", sensitivity=1.0, bounds=(0, 125),
    ...                              epsilon=1.0, delta=1e-7)
    >>> bool(abs(m - 50) < 20), m.release.lower < m < m.release.upper
    (True, True)
    """
    if statistic not in PTR_STATISTICS:
        raise ValueError(f"propose-test-release supports {list(PTR_STATISTICS)}, got {statistic!r}")
    series = target.series
    check_numeric(series, statistic)
    lo, hi = check_bounds(bounds)
    b = _proposed(sensitivity)
    privacy = _approximate(target, epsilon, delta, statistic)
    noise = PTRNoise.of(b, lo, hi, privacy)
    step, test_noise, release_noise, threshold = noise.step, noise.test, noise.release, noise.threshold
    plan = Plan(statistic, (str(series.name),), target, privacy, {"test": test_noise, "release": release_noise},
                {"release": step}, mechanism_name="propose-test-release (Dwork & Lei 2009)",
                rule="propose-test-release: ε/2 tests the distance to instability, ε/2 releases, δ bounds passing "
                     "the test where the local sensitivity may exceed b (sequential composition)",
                detail=f"proposed local sensitivity b={b:.4g}; test: distance + discrete Laplace σ={test_noise.std:.4g}"
                       f" > {threshold:.4g}; release: discrete Laplace σ={release_noise.std * step:.4g}")
    plan.charge()
    values = _clipped_sorted(target, series, lo, hi)
    ks = _distances(values.size, target.contributions)
    if statistic == "median":
        widths = median_reach_widths(values, lo, hi, target.contributions, ks)
        exact_value = lower_median(values, lo)
    else:
        widths = mean_widths(values.size, lo, hi, target.contributions, ks)
        exact_value = float(values.mean()) if values.size else (lo + hi) / 2
    units = float(ptr_releases(stability_distance(widths, b), round(exact_value / step), test_noise, release_noise,
                               threshold)[0])
    if math.isnan(units):
        raise ProposalRefusedError(
            f"propose-test-release refused the {statistic} of {series.name!r}: the noisy test could not show that "
            f"its local sensitivity stays below the proposed {b:g}; ε={float(privacy.epsilon):g}, "
            f"δ={float(privacy.delta):g} was charged (the refusal is itself a private release). Propose a larger "
            "sensitivity, or use a mechanism with global sensitivity (e.g. method='exponential')",
            target.spent,
        )
    value = units * step
    half = release_noise.halfwidth(LEVEL) * step
    note = f"values clipped to ({lo:g}, {hi:g}); passed the test of proposed local sensitivity {b:g}"
    answer = Release(statistic, plan.columns, plan.mechanism, target.spent, release_noise.std * step,
                     value - half - step / 2, value + half + step / 2, LEVEL, (lo, hi), note)
    return DPFloat(value, answer)


# ---------------------------------------------------------------------------
# sample-and-aggregate
# ---------------------------------------------------------------------------

# With blocks=None, this share of the budget counts the units to choose about sqrt(n) blocks.
BLOCK_COUNT_SHARE = Fraction(1, 10)
_MIN_BLOCKS = 2


def _output_bounds(bounds: Any) -> tuple[pd.Index[Any] | None, list[tuple[float, float]]]:
    """``(lo, hi)`` -> (None, one pair); a mapping or a list of pairs -> (their names or positions, pairs)."""
    if isinstance(bounds, Mapping):
        if not bounds:
            raise ValueError("bounds= is an empty mapping: give (lower, upper) for each output of func")
        return pd.Index(list(bounds)), [check_bounds(pair) for pair in bounds.values()]
    if isinstance(bounds, Sequence) and not isinstance(bounds, (str, bytes)) and len(bounds) > 0 and all(
            isinstance(pair, Sequence) and not isinstance(pair, (str, bytes)) for pair in bounds):
        return pd.RangeIndex(len(bounds)), [check_bounds(pair) for pair in bounds]
    return None, [check_bounds(bounds)]


def _block_output(func: Callable[[pd.DataFrame], Any], block: pd.DataFrame, names: pd.Index[Any] | None,
                  los: NDArray[np.float64], his: NDArray[np.float64]) -> NDArray[np.float64]:
    """``func(block)`` clipped to the bounds; the bounds' midpoints if it raises or returns a wrong or missing value.

    ``func`` runs guarded (:func:`~dpframe.protection.analyst.guarded`): its outputs are read as plain floats
    inside the call, and any failure -- an exception, even ``SystemExit``, or an output of the wrong kind --
    gives the fixed default. Nothing about a failure is reported (it depends on the data).
    """

    def outputs(frame: pd.DataFrame) -> list[float]:
        out = func(frame)
        if names is None:
            return [float(out)]
        if isinstance(out, (Mapping, pd.Series)) and not isinstance(names, pd.RangeIndex):
            return [float(out[name]) for name in names]
        listed: list[float] = np.asarray(out, dtype=np.float64).reshape(-1).tolist()
        return listed

    middle = (los + his) / 2
    with quiet():  # a block's warnings would say something about its rows
        values = guarded(outputs)(block)
    if values is None or len(values) != len(middle):
        return middle
    array = np.array(values, dtype=np.float64)
    result: NDArray[np.float64] = np.where(np.isnan(array), middle, np.clip(array, los, his))
    return result


def _plain(obj: pd.DataFrame) -> pd.DataFrame:
    """The frame without its unit record (a position among everyone's rows when no unit was declared), with the
    row labels given at protect() if any: each row's own."""
    if obj.index.nlevels > 1:
        dropped = obj.droplevel(UNIT_LEVEL)
        return dropped.set_axis(plain_index(dropped.index), axis=0)
    return obj.reset_index(drop=True)


def _block(plain: pd.DataFrame, rows: NDArray[np.intp], renumbered: bool) -> pd.DataFrame:
    """One block as func sees it: its rows, numbered from 0 when they have no labels of their own."""
    block = plain.iloc[rows]
    return block.reset_index(drop=True) if renumbered else block


def sample_and_aggregate(target: Target, func: Callable[[pd.DataFrame], Any], *, bounds: Any, privacy: Privacy,
                         blocks: int | None = None) -> DPFloat | pd.Series[Any]:
    """The private average of ``func`` over random disjoint blocks of privacy units, clipped to ``bounds``.

    >>> import numpy as np, pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> df = pd.DataFrame({"x": np.arange(20_000) % 100.0})
    >>> df["y"] = 3 * df["x"] + 1
    >>> p = df.dp.protect(epsilon=1.0)
    >>> slope = lambda b: np.polyfit(b["x"], b["y"], 1)[0]
    >>> with seeded_noise(0):
    ...     s = sample_and_aggregate(Target.of(p), slope, bounds=(0, 10), privacy=Target.of(p).privacy(1.0, None, None, None),
    ...                              blocks=200)
    >>> bool(abs(s - 3) < 0.3), s.release.query
    (True, 'sample_and_aggregate')
    """
    if not callable(func):
        raise TypeError(f"func must be a function of a DataFrame (a block of rows), got {type(func).__name__}")
    if not isinstance(target.obj, pd.DataFrame):
        raise TypeError("sample_and_aggregate applies func to blocks of a frame: ask it of a protected frame, p.dp")
    if blocks is not None and (isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer))
                               or blocks < _MIN_BLOCKS):
        raise ValueError(f"blocks must be an integer >= {_MIN_BLOCKS} (or None to choose about √n), got {blocks!r}")
    names, pairs = _output_bounds(bounds)
    los = np.array([lo for lo, _ in pairs])
    his = np.array([hi for _, hi in pairs])
    counting = None if blocks is not None else privacy.share(BLOCK_COUNT_SHARE)
    rest = privacy if counting is None else privacy.share(1 - BLOCK_COUNT_SHARE)
    outputs = [str(i) for i in range(len(pairs))]
    grids, noise_list = aggregation_noise(pairs, rest)
    noises = dict(zip(outputs, noise_list))
    count_noise = None if counting is None else counting.noise(1)
    if counting is not None:
        target.reserve(counting.cost, rest.cost, query="sample_and_aggregate with its block count")
    k, counted = _block_count(target, blocks, counting, count_noise)
    columns = tuple(str(c) for c in target.obj.columns)  # func may read any of them
    plan = Plan("sample_and_aggregate", columns, target, rest, noises,
                rule="sample-and-aggregate (NRS 2007): each unit in one of k random blocks, so a unit changes one "
                     "block's clipped output; sequential composition over outputs",
                mechanism_name="sample-and-aggregate (Nissim, Raskhodnikova & Smith 2007)",
                detail=f"k={k} blocks; " + "; ".join(f"output {o}: σ={noises[o].std * g.release_step / k:.4g}"
                                                     for o, g in zip(outputs, grids)))
    plan.charge()
    frame = target.obj
    codes = unit_codes(unit_ids(frame)) if counted is None else counted
    block_of_unit = uniform_below(k, size=int(codes.max(initial=-1)) + 1)
    block_of_row = block_of_unit[codes]
    # Rows in a random order within their block: the data's own order can depend on other people's rows
    # (a sort's ties), and func sees it.
    order = np.lexsort((uniform_below(2**62, size=len(block_of_row)), block_of_row))
    ends = np.cumsum(np.bincount(block_of_row, minlength=k))
    plain, renumbered = _plain(frame), frame.index.nlevels == 1
    results = np.array([_block_output(func, _block(plain, order[end - size:end], renumbered), names, los, his)
                        for end, size in zip(ends, np.diff(np.r_[0, ends]))])
    value = noisy_means(results, los, his, grids, [noises[o] for o in outputs])[0]
    steps = np.array([grid.release_step / k for grid in grids])
    std = np.array([noises[o].std for o in outputs]) * steps
    half = (np.array([noises[o].halfwidth(LEVEL) for o in outputs]) * steps
            + np.array([float(grid.data_step) / 2 for grid in grids]) + steps / 2)
    note = (f"mean of func over k={k} random blocks of privacy units, outputs clipped to their bounds (a failing "
            "block counts as their midpoint); the interval is the noise's only, not func's sampling error")
    if names is None:
        return DPFloat(float(value[0]), Release("sample_and_aggregate", columns, plan.mechanism, target.spent,
                                                float(std[0]), float(value[0] - half[0]), float(value[0] + half[0]),
                                                LEVEL, pairs[0], note))
    result = pd.Series(value, index=names)
    release = Release("sample_and_aggregate", columns, plan.mechanism, target.spent, pd.Series(std, index=names),
                      pd.Series(value - half, index=names), pd.Series(value + half, index=names), LEVEL, None, note)
    return with_release(result, release)  # type: ignore[no-any-return]


def aggregation_noise(pairs: Sequence[tuple[float, float]], privacy: Privacy) -> tuple[list[SumGrid], list[NoiseSpec]]:
    """The sum grid and noise of each output (privacy split equally among them).

    Replacing one block's output moves its centred sum by at most hi - lo: the
    grid of two contributions of half-width (hi - lo)/2.
    """
    shares = split(privacy, [str(i) for i in range(len(pairs))])
    grids = [SumGrid.choose(-(hi - lo) / 2, (hi - lo) / 2, 2, shares[str(i)]) for i, (lo, hi) in enumerate(pairs)]
    return grids, [shares[str(i)].noise(grid.sensitivity) for i, grid in enumerate(grids)]


def noisy_means(results: NDArray[np.float64], los: NDArray[np.float64], his: NDArray[np.float64],
                grids: Sequence[SumGrid], noises: Sequence[NoiseSpec], size: int = 1) -> NDArray[np.float64]:
    """``size`` independent noisy means of the k blocks' clipped outputs (``results``: k x d), one row each.

    Exact sums of the outputs' deviations from the bounds' midpoints on each grid, then discrete noise.

    >>> from dpframe.noise.mechanism import resolve
    >>> from dpframe.accounting.budget import Budget
    >>> grid = SumGrid.choose(-0.5, 0.5, 2, resolve(Budget(epsilon=1.0), 1.0, None, None, None))
    >>> noise = NoiseSpec("laplace", Fraction(1))
    >>> means = noisy_means(np.full((1000, 1), 0.75), np.array([0.0]), np.array([1.0]), [grid], [noise], 3)
    >>> means.shape, bool(np.all(np.abs(means - 0.75) < 1e-4))
    ((3, 1), True)
    """
    k = results.shape[0]
    out = np.empty((size, len(grids)))
    for i, (grid, noise) in enumerate(zip(grids, noises)):
        center = (los[i] + his[i]) / 2
        exact_sum = grid.to_release_grid(kernels.moment_sums(np.ascontiguousarray(results[:, i]), center, grid).sums)
        out[:, i] = center + (exact_sum[0] + noise.sample(size)).astype(np.float64) * (grid.release_step / k)
    return out


def _block_count(target: Target, blocks: int | None, counting: Privacy | None,
                 count_noise: NoiseSpec | None) -> tuple[int, NDArray[np.intp] | None]:
    """The number of blocks: ``blocks``, or about √(noisy number of units) (charged, then counted)."""
    if blocks is not None:
        return int(blocks), None
    assert counting is not None and count_noise is not None
    plan = Plan("units for sample_and_aggregate", (), target, counting, {"count": count_noise})
    plan.charge()
    codes = unit_codes(unit_ids(target.obj))
    units = int(np.unique(codes).size)
    noisy = units + int(count_noise.sample(1)[0])
    return max(_MIN_BLOCKS, math.isqrt(max(noisy, 0))), codes
