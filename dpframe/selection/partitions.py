"""Private partition selection: which keys of unknown partitions to release.

A group-by over keys that are not public may only show a key if releasing it
is differentially private. Every function here works on arrays the caller has
already computed (per-partition statistics, or per (user, partition) pairs);
none reads a DataFrame. Each one states its privacy map and the paper it comes
from, and draws its randomness from :func:`dpframe.noise.random.current_source`
(the kernel CSPRNG unless the test switch is on).

The neighbouring relation is add/remove one *user* (privacy unit). A user
contributes to at most ``max_partitions`` (L0) partitions, and to each of those
partitions' statistics by at most one: the counts passed to the selection
functions are numbers of **distinct users** per partition, after each user was
bounded to L0 partitions (:func:`bound_user_partitions` does both).

* :func:`truncated_geometric_selection` -- the optimal mechanism for L0 = 1 of
  Desfontaines, Voss, Gipson & Mandayam, "Differentially private partition
  selection", PoPETs 2022 (1), 339-352 (Google's and PipelineDP's
  ``NearTruncatedGeometricPartitionSelection``); for L0 > 1 it runs at
  (epsilon/L0, delta/L0) per partition, as PipelineDP does.
* :func:`laplace_thresholding` and :func:`gaussian_thresholding` -- noisy
  counts compared with a threshold (Korolova, Kenthapadi, Mishra & Ntoulas
  2009; Wilson et al., "Differentially private SQL with bounded user
  contribution", PoPETs 2020), PipelineDP's ``LaplaceThresholding`` and
  ``GaussianThresholding``, here with exact discrete noise.
* :func:`weighted_gaussian_set_union` -- Gopi, Gulhane, Kulkarni, Shen,
  Shokouhi & Yekhanin, "Differentially Private Set Union", ICML 2020, with the
  weighted (L2-normalised) policy: better than the above for L0 > 1.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri

from dpframe.noise.calibrate import (
    _round_up_dyadic,
    discrete_gaussian_sigma2,
    laplace_scale,
    zcdp_rho_for,
)
from dpframe.noise.discrete import sample_discrete_gaussian, sample_discrete_laplace
from dpframe.noise.random import current_source

__all__ = [
    "ThresholdSelection",
    "bound_user_partitions",
    "gaussian_thresholding",
    "gaussian_thresholding_keep_probability",
    "laplace_thresholding",
    "laplace_thresholding_keep_probability",
    "truncated_geometric_keep_probability",
    "truncated_geometric_selection",
    "weighted_gaussian_set_union",
]

# Keep probabilities are multiples of 2**-126, compared with 126 uniform bits (two 63-bit halves): an exact
# Bernoulli draw, fine enough that rounding costs a relative 1 / (delta 2**126) of the keep probability.
_HALF_BITS = 63
_ONE = 1 << (2 * _HALF_BITS)
# The longest keep-probability table built (it reaches 1 after about 2 log(1/delta) / epsilon users).
_MAX_TABLE = 10**6
# Set-union weights live on a grid of 2**-20 so that exact discrete Gaussian noise can be added.
_WEIGHT_GRID = 1 << 20


def _check_budget(epsilon: float, delta: float, max_partitions: int) -> None:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 < epsilon < math.inf:
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}: partition selection needs delta > 0")
    if isinstance(max_partitions, bool) or not isinstance(max_partitions, (int, np.integer)) or max_partitions < 1:
        raise ValueError(f"max_partitions must be an integer >= 1, got {max_partitions!r}")


def _counts(users_per_partition: ArrayLike) -> NDArray[np.int64]:
    counts = np.asarray(users_per_partition)
    if counts.dtype.kind not in "iu" and counts.size:
        raise TypeError(f"users_per_partition must be integer counts, got dtype {counts.dtype}")
    counts = counts.astype(np.int64, copy=False)
    if counts.size and int(counts.min()) < 0:
        raise ValueError("users_per_partition must be non-negative")
    return counts


def _exp_below(x: Fraction) -> Fraction:
    """A rational at most e**x (x >= 0), within a few ulps: floats rounded down, then two ulps off (e**700 for
    larger x, beyond the floats: a smaller ratio only makes the keep probabilities smaller)."""
    lower = min(math.nextafter(float(x), 0.0), 700.0)
    return max(Fraction(1), Fraction(math.nextafter(math.nextafter(math.exp(lower), 0.0), 0.0)))


@functools.lru_cache(maxsize=64)
def _keep_table(epsilon: float, delta: float, max_partitions: int) -> tuple[int, ...]:
    """``pi(n) * 2**126`` for n = 0, 1, ... until it reaches 1 (the last entry), rounded down at each step.

    The recursion of Desfontaines et al. (2022, Sec. 3), with e**eps replaced by a rational r <= e**eps
    and every pi(n) rounded down to the grid: both DP constraints then hold exactly for the
    rounded values, because each bound is increasing in pi(n - 1) and rounding down pi(n) only
    loosens the second constraint.
    """
    ratio = _exp_below(Fraction(epsilon) / max_partitions)
    shift = Fraction(delta) / max_partitions * _ONE  # delta in grid units, exact
    table = [0]
    while table[-1] < _ONE:
        if len(table) > _MAX_TABLE:
            raise ValueError(
                f"epsilon / max_partitions = {epsilon / max_partitions:.3g} is too small for truncated-geometric "
                "partition selection: its keep probability needs more than a million users to reach 1"
            )
        previous = table[-1]
        grow = math.floor(ratio * previous + shift)  # pi(n) <= e^eps pi(n-1) + delta
        slack = _ONE - previous - shift  # 1 - pi(n-1) <= e^eps (1 - pi(n)) + delta
        cap = _ONE - math.ceil(slack / ratio) if slack > 0 else _ONE
        table.append(min(grow, cap, _ONE))
    return tuple(table)


def truncated_geometric_keep_probability(
    users_per_partition: ArrayLike, *, epsilon: float, delta: float, max_partitions: int = 1
) -> NDArray[np.float64]:
    """The probability pi(n) that :func:`truncated_geometric_selection` keeps a partition of n users.

    pi is the largest function with pi(0) = 0 and, for every n >= 1,
    pi(n) <= e^eps pi(n-1) + delta and 1 - pi(n-1) <= e^eps (1 - pi(n)) + delta
    (Desfontaines et al. 2022, Theorem 1 and its closed form), at (eps, delta) =
    (epsilon/L0, delta/L0), computed exactly and rounded down to multiples of 2**-126.

    >>> p = truncated_geometric_keep_probability([0, 1, 2, 100], epsilon=1.0, delta=1e-5)
    >>> p[0], f"{p[1]:.3e}", f"{p[2]:.4e}", p[3]
    (np.float64(0.0), '1.000e-05', '3.7183e-05', np.float64(1.0))
    """
    _check_budget(epsilon, delta, max_partitions)
    counts = _counts(users_per_partition)
    table = _keep_table(float(epsilon), float(delta), int(max_partitions))
    probabilities = np.array([value / _ONE for value in table])  # int / int: correctly rounded
    return probabilities[np.minimum(counts, len(table) - 1)]


def truncated_geometric_selection(
    users_per_partition: ArrayLike, *, epsilon: float, delta: float, max_partitions: int = 1
) -> NDArray[np.bool_]:
    """Which partitions to release: each independently with probability pi(n) of its n distinct users.

    Privacy: (epsilon, delta)-DP for add/remove one user who is in at most ``max_partitions``
    (L0) partitions. For L0 = 1 this is the optimal partition selection of Desfontaines, Voss,
    Gipson & Mandayam, "Differentially private partition selection", PoPETs 2022 (Theorem 1:
    no (eps, delta)-DP mechanism keeps any partition with higher probability). For L0 > 1 each
    partition is selected at (epsilon/L0, delta/L0) and basic composition over the user's L0
    partitions gives (epsilon, delta), as in PipelineDP. The counts must be numbers of distinct
    users after each user was bounded to L0 partitions (:func:`bound_user_partitions`). The draw
    is exact: 126 secure uniform bits compared with pi(n) on a grid of 2**-126.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     truncated_geometric_selection([1, 50, 1000], epsilon=1.0, delta=1e-6).tolist()
    [False, True, True]
    """
    _check_budget(epsilon, delta, max_partitions)
    counts = _counts(users_per_partition)
    table = _keep_table(float(epsilon), float(delta), int(max_partitions))
    index = np.minimum(counts, len(table) - 1)
    high = np.array([value >> _HALF_BITS for value in table], dtype=np.uint64)[index]
    low = np.array([value & ((1 << _HALF_BITS) - 1) for value in table], dtype=np.uint64)[index]
    words = current_source().words(2 * counts.size) >> np.uint64(64 - _HALF_BITS)
    draw_high, draw_low = words[: counts.size], words[counts.size :]
    # U = draw_high 2**63 + draw_low is uniform below 2**126; keep when U < pi(n) 2**126.
    kept: NDArray[np.bool_] = (draw_high < high) | ((draw_high == high) & (draw_low < low))
    return kept


@dataclass(frozen=True)
class ThresholdSelection:
    """Noisy counts, the threshold they were compared with, and which partitions cleared it.

    ``noisy_counts`` of the kept partitions may be released with the selection: the mechanism's
    guarantee covers them.
    """

    keep: NDArray[np.bool_]
    noisy_counts: NDArray[np.int64]
    threshold: int


def _laplace_parameters(epsilon: float, delta: float, max_partitions: int) -> tuple[Fraction, int]:
    """The discrete Laplace scale L0/eps and the threshold 1 + m, m the least with P[Z >= m] <= delta / L0."""
    scale = laplace_scale(int(max_partitions), Fraction(epsilon))
    b = float(scale)

    def log_tail(m: int) -> float:  # log P[Z >= m] = log(p^m / (1 + p)), p = e^(-1/b), for m >= 1
        return -m / b - math.log1p(math.exp(-1.0 / b))

    # A relative margin of 1e-12 on the logarithm covers its floating-point rounding.
    target = math.log(delta / max_partitions) - 1e-12 * abs(math.log(delta / max_partitions))
    m = max(1, math.ceil(b * (-target - math.log1p(math.exp(-1.0 / b)))))
    while m > 1 and log_tail(m - 1) <= target:
        m -= 1
    while log_tail(m) > target:
        m += 1
    return scale, 1 + m


def laplace_thresholding(
    users_per_partition: ArrayLike, *, epsilon: float, delta: float, max_partitions: int = 1
) -> ThresholdSelection:
    """Keep the partitions whose count plus discrete Laplace noise of scale L0/epsilon reaches a threshold.

    Privacy: (epsilon, delta)-DP for add/remove one user in at most L0 partitions. The noisy
    counts of partitions present without the user are epsilon-DP (L1 sensitivity L0, discrete
    Laplace: Ghosh, Roughgarden & Sundararajan 2012); each of the user's at most L0 partitions
    absent without it has count 1 and is kept with probability P[Z >= T - 1] <= delta / L0,
    so the bad event has probability <= delta (Korolova et al. 2009; Wilson et al. 2020;
    PipelineDP's ``LaplaceThresholding``, whose threshold is 1 + (L0/eps) log(1/(2 delta'))
    for continuous noise; here T is the exact discrete analogue).

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     chosen = laplace_thresholding([1, 50], epsilon=1.0, delta=1e-6)
    >>> chosen.threshold, chosen.keep.tolist()
    (15, [False, True])
    """
    _check_budget(epsilon, delta, max_partitions)
    counts = _counts(users_per_partition)
    scale, threshold = _laplace_parameters(float(epsilon), float(delta), int(max_partitions))
    noisy = counts + sample_discrete_laplace(scale, counts.size)
    return ThresholdSelection(noisy >= threshold, noisy, threshold)


def laplace_thresholding_keep_probability(
    users_per_partition: ArrayLike, *, epsilon: float, delta: float, max_partitions: int = 1
) -> NDArray[np.float64]:
    """P[n + Z >= T] for :func:`laplace_thresholding`: p^k / (1+p) with k = T - n >= 1, else 1 - p^(1-k) / (1+p).

    >>> f"{laplace_thresholding_keep_probability([1], epsilon=1.0, delta=1e-6)[0]:.2e}"
    '6.08e-07'
    """
    _check_budget(epsilon, delta, max_partitions)
    counts = _counts(users_per_partition)
    scale, threshold = _laplace_parameters(float(epsilon), float(delta), int(max_partitions))
    b = float(scale)
    k = (threshold - counts).astype(np.float64)
    upper = np.exp(-np.abs(np.where(k >= 1, k, 1 - k)) / b) / (1 + math.exp(-1 / b))
    return np.where(k >= 1, upper, 1 - upper)


def _gaussian_threshold(sigma2: Fraction, weight: int, tail: float) -> int:
    """Smallest integer R with P[weight + X >= R] <= tail for X ~ N_Z(0, sigma2).

    Uses P[X >= m] <= P[N(0, sigma2) >= m - 1] for integers m >= 1: each term exp(-x^2 / 2 sigma2)
    with x >= m is below the integral over [x - 1, x], and the normalising sum over Z is at least
    the Gaussian integral sigma sqrt(2 pi) (Poisson summation; CKS20, Proposition 25).
    """
    sigma = math.sqrt(float(sigma2))
    m = max(1, math.ceil(1 + sigma * -float(ndtri(tail))))
    while float(ndtr(-(m - 1) / sigma)) > tail * (1 - 1e-9):  # float margin for ndtr/ndtri
        m += 1
    return weight + m


def _gaussian_sigma2(epsilon: float, delta: float, sensitivity2: Fraction) -> Fraction:
    """sigma^2 for (epsilon, delta)-DP of multivariate discrete Gaussian noise with squared L2 sensitivity
    ``sensitivity2``, via zCDP: it is sensitivity2 / (2 sigma^2)-zCDP (CKS20, Theorem 14) and rho-zCDP
    implies (epsilon, delta)-DP for the rho of :func:`zcdp_rho_for` (CKS20, Corollary 13)."""
    rho = Fraction(zcdp_rho_for(epsilon, delta))
    return _round_up_dyadic(sensitivity2 / (2 * rho), 40)


def _discrete_gaussian_at_least(sigma2: Fraction) -> tuple[NDArray[np.float64], int]:
    """P[X >= x] for X ~ N_Z(0, sigma2) and x = -reach, ..., reach + 1 (the last is 0), and reach = 40 sigma.

    The normalised pmf summed from the far end, so small tails keep their relative precision; the
    mass beyond 40 sigma (below e^-800) is neglected, as in :mod:`dpframe.noise.calibrate`.
    """
    reach = math.ceil(40 * math.sqrt(float(sigma2))) + 1
    support = np.arange(-reach, reach + 1).astype(np.float64)
    pmf = np.exp(-(support**2) / (2 * float(sigma2)))
    return np.append(np.cumsum(pmf[::-1])[::-1] / pmf.sum(), 0.0), reach


@functools.lru_cache(maxsize=64)
def _gaussian_thresholding_parameters(epsilon: float, delta: float, max_partitions: int) -> tuple[Fraction, int]:
    """sigma^2 for (epsilon, delta/2) and the least threshold T with P[1 + X >= T] <= delta / (2 L0)."""
    if max_partitions == 1:  # one count moves by 1: the exact discrete Gaussian delta (CKS20, Theorem 7)
        sigma2 = discrete_gaussian_sigma2(epsilon, delta / 2, 1)
    else:
        sigma2 = _gaussian_sigma2(epsilon, delta / 2, Fraction(max_partitions))
    at_least, reach = _discrete_gaussian_at_least(sigma2)
    # at_least is non-increasing; the relative margin covers the float sums.
    m = int(np.argmax(at_least <= delta / 2 / max_partitions * (1 - 1e-9))) - reach
    return sigma2, 1 + max(m, 1)


def gaussian_thresholding(
    users_per_partition: ArrayLike, *, epsilon: float, delta: float, max_partitions: int = 1
) -> ThresholdSelection:
    """Keep the partitions whose count plus discrete Gaussian noise reaches a threshold.

    Privacy: (epsilon, delta)-DP for add/remove one user in at most L0 partitions, with delta
    split in halves as PipelineDP's ``GaussianThresholding`` does. The counts of partitions
    present without the user move by at most 1 each, L2 sensitivity sqrt(L0). For L0 = 1 sigma
    is the least for which the discrete Gaussian is (epsilon, delta/2)-DP, computed exactly
    (Canonne, Kamath & Steinke 2020, Theorem 7); for L0 > 1, sigma^2 = L0 / (2 rho) is
    rho-zCDP (their Theorem 14), hence (epsilon, delta/2)-DP (their Corollary 13). Each of the user's at most
    L0 partitions absent without it has count 1 and is kept with probability at most
    delta / (2 L0), so the bad event has probability <= delta / 2.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     chosen = gaussian_thresholding([1, 50], epsilon=1.0, delta=1e-6)
    >>> chosen.threshold, chosen.keep.tolist()
    (23, [False, True])
    """
    _check_budget(epsilon, delta, max_partitions)
    counts = _counts(users_per_partition)
    sigma2, threshold = _gaussian_thresholding_parameters(float(epsilon), float(delta), int(max_partitions))
    noisy = counts + sample_discrete_gaussian(sigma2, counts.size)
    return ThresholdSelection(noisy >= threshold, noisy, threshold)


def gaussian_thresholding_keep_probability(
    users_per_partition: ArrayLike, *, epsilon: float, delta: float, max_partitions: int = 1
) -> NDArray[np.float64]:
    """P[n + X >= T] for :func:`gaussian_thresholding`, summing the discrete Gaussian's pmf (float).

    >>> f"{gaussian_thresholding_keep_probability([1], epsilon=1.0, delta=1e-6)[0]:.2e}"
    '4.20e-07'
    """
    _check_budget(epsilon, delta, max_partitions)
    counts = _counts(users_per_partition)
    sigma2, threshold = _gaussian_thresholding_parameters(float(epsilon), float(delta), int(max_partitions))
    at_least, reach = _discrete_gaussian_at_least(sigma2)
    return at_least[np.clip(threshold - counts + reach, 0, at_least.size - 1)]


def bound_user_partitions(
    user_codes: ArrayLike, partition_codes: ArrayLike, *, max_partitions: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Distinct (user, partition) pairs, each user's cut to ``max_partitions`` chosen uniformly at random.

    Returns the kept pairs as two arrays, sorted by user. ``np.bincount(partitions)`` then counts distinct
    users per partition, the input of the selection functions. A user's choice depends only on
    its own pairs and fresh secure randomness, so adding a user changes no one else's.

    >>> users, parts = bound_user_partitions([0, 0, 0, 1, 1], [5, 5, 6, 6, 7], max_partitions=1)
    >>> sorted(users.tolist()), len(set(zip(users.tolist(), parts.tolist())))
    ([0, 1], 2)
    """
    if isinstance(max_partitions, bool) or not isinstance(max_partitions, (int, np.integer)) or max_partitions < 1:
        raise ValueError(f"max_partitions must be an integer >= 1, got {max_partitions!r}")
    users = np.asarray(user_codes)
    partitions = np.asarray(partition_codes)
    if users.shape != partitions.shape or users.ndim != 1:
        raise ValueError("user_codes and partition_codes must be one-dimensional arrays of the same length")
    for name, codes in (("user_codes", users), ("partition_codes", partitions)):
        if codes.size and (codes.dtype.kind not in "iu" or int(codes.min()) < 0 or int(codes.max()) >= 2**63):
            raise ValueError(f"{name} must be non-negative integer codes (e.g. from pandas.factorize)")
    users, partitions = users.astype(np.int64), partitions.astype(np.int64)
    if users.size == 0:
        return users, partitions
    user_values = partition_values = None
    if (int(users.max()) + 1) * (int(partitions.max()) + 1) > 2**63 - 1:  # make the pair keys fit in int64
        user_values, users = np.unique(users, return_inverse=True)
        partition_values, partitions = np.unique(partitions, return_inverse=True)
    width = int(partitions.max()) + 1
    keys = np.sort(users * width + partitions)  # by user, then partition (np.unique is slower in numpy 2.4)
    pairs = keys[np.r_[True, keys[1:] != keys[:-1]]]
    pair_users, pair_partitions = pairs // width, pairs % width
    starts = np.flatnonzero(np.r_[True, pair_users[1:] != pair_users[:-1]])
    sizes = np.diff(np.r_[starts, pairs.size])
    crowded = np.repeat(sizes > max_partitions, sizes)  # the pairs of users with more than L0 partitions
    keep = ~crowded
    if crowded.any():
        # A random order within each such user: sort by (user, random bits) packed in one int64. Which
        # partitions a user keeps depends only on its own pairs, so even ties (broken by position) are harmless.
        where = np.flatnonzero(crowded)
        crowded_users = pair_users[where]
        dense = np.cumsum(np.r_[0, crowded_users[1:] != crowded_users[:-1]])  # 0, 1, ... by user: small
        spare = 63 - int(dense[-1]).bit_length()
        priority = (current_source().words(where.size) >> np.uint64(64 - spare)).astype(np.int64)
        order = where[np.argsort((dense << np.int64(spare)) | priority)]
        ordered_users = pair_users[order]
        first = np.flatnonzero(np.r_[True, ordered_users[1:] != ordered_users[:-1]])
        rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
        keep[order[rank < max_partitions]] = True
    kept_users, kept_partitions = pair_users[keep], pair_partitions[keep]
    if user_values is None or partition_values is None:
        return kept_users, kept_partitions
    return user_values[kept_users], partition_values[kept_partitions]


@functools.lru_cache(maxsize=64)
def _set_union_parameters(epsilon: float, delta: float, max_partitions: int) -> tuple[Fraction, int]:
    """sigma^2 (grid units) for (epsilon, delta/2) with L2 sensitivity one grid-unit vector, and the threshold
    rho = max over t <= L0 of the least R with P[w_t + X >= R] <= 1 - (1 - delta/2)^(1/t)."""
    sigma2 = _gaussian_sigma2(epsilon, delta / 2, Fraction(_WEIGHT_GRID**2))
    threshold = max(
        _gaussian_threshold(sigma2, _grid_weight(t), -math.expm1(math.log1p(-delta / 2) / t))
        for t in range(1, max_partitions + 1)
    )
    return sigma2, threshold


def _grid_weight(size: int) -> int:
    """floor(2**20 / sqrt(size)), exactly: a user's weight per partition on the grid, L2 norm <= 2**20."""
    return math.isqrt(_WEIGHT_GRID**2 // size)


def weighted_gaussian_set_union(
    user_codes: ArrayLike,
    partition_codes: ArrayLike,
    *,
    n_partitions: int,
    epsilon: float,
    delta: float,
    max_partitions: int,
) -> NDArray[np.bool_]:
    """Which of ``n_partitions`` partitions to release, by weighted Gaussian set union.

    Gopi, Gulhane, Kulkarni, Shen, Shokouhi & Yekhanin, "Differentially Private Set Union"
    (ICML 2020), the weighted Gaussian mechanism: each user keeps at most L0 of its partitions
    (uniformly at random, :func:`bound_user_partitions`) and adds 1/sqrt(t) to each of its t
    kept partitions, so its weight vector has L2 norm <= 1 (weights are rounded down to a grid
    of 2**-20, so the norm stays <= 1). Discrete Gaussian noise is added to the weight of every
    partition with a user, and a partition is kept when it reaches rho. Noise and threshold
    follow the paper's Theorem for the Gaussian policy, with delta split in halves:

    * sigma: the weight histograms of neighbouring data, restricted to partitions present in
      both, differ by a vector of L2 norm <= 1 (each user's weights depend only on its own set),
      so the noise gives (epsilon, delta/2)-DP -- here multivariate discrete Gaussian noise
      calibrated through zCDP (Canonne, Kamath & Steinke 2020, Theorem 14 and Corollary 13)
      instead of the paper's analytic Gaussian;
    * rho = max over 1 <= t <= L0 of the least threshold with
      P[1/sqrt(t) + X >= rho] <= 1 - (1 - delta/2)^(1/t): the added user's partitions absent
      without it (at most t of its t, weight 1/sqrt(t) each) are all dropped with probability
      >= 1 - delta/2.

    Hence (epsilon, delta)-DP for add/remove one user.

    >>> from dpframe.testing import seeded_noise
    >>> users = list(range(300)) + [300]
    >>> parts = [0] * 300 + [1]
    >>> with seeded_noise(0):
    ...     weighted_gaussian_set_union(users, parts, n_partitions=3, epsilon=1.0, delta=1e-6,
    ...                                 max_partitions=4).tolist()
    [True, False, False]
    """
    _check_budget(epsilon, delta, max_partitions)
    if isinstance(n_partitions, bool) or not isinstance(n_partitions, (int, np.integer)) or n_partitions < 0:
        raise ValueError(f"n_partitions must be a non-negative integer, got {n_partitions!r}")
    users, partitions = bound_user_partitions(user_codes, partition_codes, max_partitions=max_partitions)
    if partitions.size and int(partitions.max()) >= n_partitions:
        raise ValueError("partition_codes must be below n_partitions")
    sigma2, threshold = _set_union_parameters(float(epsilon), float(delta), int(max_partitions))
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])  # the pairs come sorted by user
    runs = np.diff(np.r_[starts, users.size])
    sizes = np.repeat(runs, runs)
    weights = np.array([0] + [_grid_weight(t) for t in range(1, max_partitions + 1)], dtype=np.int64)[sizes]
    histogram = np.bincount(partitions, weights=weights, minlength=n_partitions).astype(np.int64)
    present = np.flatnonzero(histogram > 0)
    keep = np.zeros(n_partitions, dtype=np.bool_)
    keep[present] = histogram[present] + sample_discrete_gaussian(sigma2, present.size) >= threshold
    return keep
