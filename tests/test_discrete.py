"""Distribution tests for the exact samplers in dpframe.noise.discrete.

Every statistical test runs under the seeded switch (deterministic), and its
threshold would also hold on fresh secure randomness except with probability
below 1e-6: chi-square p-values are compared with 1e-7 and moments allowed
>= 6 standard errors.  Sample sizes are 200k-1M, so the chi-square tests have
power against biases of a fraction of a percent in any bin.
"""

from __future__ import annotations

import doctest
import math
import warnings
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

import dpframe.noise.discrete as disc
from dpframe.noise.discrete import (
    sample_bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from dpframe.noise.random import RandomSource, SeededRandomSource, _buffered, current_source
from dpframe.testing import NotPrivateWarning, seeded_noise

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")

P_MIN = 1e-7
Cdf = Callable[[NDArray[np.int64]], NDArray[np.float64]]


@pytest.fixture
def seeded() -> Iterator[SeededRandomSource]:
    with seeded_noise(31337) as source:
        yield source


class CountingSource:
    def __init__(self, inner: RandomSource) -> None:
        self.inner = inner
        self.words_drawn = 0

    def words(self, n: int) -> NDArray[np.uint64]:
        self.words_drawn += n
        return self.inner.words(n)


def forty_bits(x: Fraction) -> Fraction:
    """``x`` rounded up to 40 significant bits with a power-of-two denominator,
    the shape calibrated parameters take."""
    exponent = 40 - (x.numerator.bit_length() - x.denominator.bit_length())
    return Fraction(math.ceil(x * Fraction(2) ** exponent)) / Fraction(2) ** exponent


# --- exact reference distributions ---------------------------------------------


def laplace_cdf(scale: Fraction) -> Cdf:
    """P[X <= k] for the discrete Laplace, in closed form (p = exp(-1/scale)):
    p**(-k) / (1 + p) for k < 0 and 1 - p**(k + 1) / (1 + p) for k >= 0."""
    inv = 1 / float(scale)
    p = math.exp(-inv)

    def cdf(k: NDArray[np.int64]) -> NDArray[np.float64]:
        kf = k.astype(np.float64)
        lower = np.exp(np.minimum(kf, 0) * inv) / (1 + p)
        upper = 1 - np.exp(-(np.maximum(kf, 0) + 1) * inv) / (1 + p)
        return np.where(k < 0, lower, upper)

    return cdf


def laplace_variance(scale: Fraction) -> float:
    p = math.exp(-1 / float(scale))
    return 2 * p / (1 - p) ** 2


def gaussian_pmf_table(sigma2: Fraction) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    sigma = math.sqrt(float(sigma2))
    half = math.ceil(40 * sigma) + 10
    k = np.arange(-half, half + 1)
    w = np.exp(-(k.astype(np.float64) ** 2) / (2 * float(sigma2)))
    return k, w / w.sum()


def gaussian_cdf(sigma2: Fraction) -> Cdf:
    """P[X <= k] for the discrete Gaussian: summed pmf for moderate sigma; for
    large sigma the normal CDF at k + 1/2, which differs from the discrete sum
    by a relative O(1/sigma**2) (midpoint rule), far below sampling error."""
    sigma = math.sqrt(float(sigma2))
    if sigma > 5000:
        return lambda k: stats.norm.cdf((k.astype(np.float64) + 0.5) / sigma)
    support, pmf = gaussian_pmf_table(sigma2)
    cum = np.cumsum(pmf)

    def cdf(k: NDArray[np.int64]) -> NDArray[np.float64]:
        idx = np.clip(k - support[0], -1, support.size - 1)
        return np.where(idx < 0, 0.0, cum[np.maximum(idx, 0)])

    return cdf


def gaussian_variance(sigma2: Fraction) -> float:
    sigma = math.sqrt(float(sigma2))
    if sigma > 5000:
        return float(sigma2)  # the difference is below 1e-300 relative
    k, pmf = gaussian_pmf_table(sigma2)
    return float((pmf * k.astype(np.float64) ** 2).sum())


def chi2_pvalue(x: NDArray[np.int64], cdf: Cdf, spread: float, min_expected: float = 25) -> float:
    """Chi-square goodness of fit of integer samples against a CDF.

    Candidate cut points are integers spread over +-40 * spread; adjacent
    cells are merged until each has at least ``min_expected`` expected
    count (the two tails are cells too).
    """
    n = x.size
    reach = max(40.0 * spread, 60.0)
    cand = np.unique(np.round(np.linspace(-reach, reach, 4001)).astype(np.int64))
    below = cdf(cand - 1)  # P[X < c]
    cuts: list[int] = []
    last = 0.0
    for c, f in zip(cand.tolist(), below.tolist()):
        if (f - last) * n >= min_expected and (1 - f) * n >= min_expected:
            cuts.append(c)
            last = f
    edges = np.array(cuts, dtype=np.int64)
    probs = np.diff(np.concatenate([[0.0], cdf(edges - 1), [1.0]]))
    counts = np.bincount(np.searchsorted(edges, x, side="right"), minlength=edges.size + 1)
    assert counts.sum() == n and edges.size >= 2
    expected = probs * n
    stat = float(((counts - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(stat, df=edges.size))


def check_moments(x: NDArray[np.int64], variance: float, kurtosis: float) -> None:
    n = x.size
    mean = float(x.mean())
    var = float(np.mean(x.astype(np.float64) ** 2))  # the true mean is 0
    assert abs(mean) < 6 * math.sqrt(variance / n)
    # sd of the sample second moment: variance * sqrt((kurtosis - 1) / n)
    assert abs(var / variance - 1) < 6 * math.sqrt((kurtosis - 1) / n)
    assert abs(var / variance - 1) < 0.03


# --- Bernoulli(exp(-gamma)) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("num", "den"),
    [(0, 1), (1, 3), (1, 2), (1, 1), (3, 2), (5, 2), (22, 7), (7, 1), (2**40 + 5, 2**40 + 3),
     (3 * 2**45 + 1, 2**46 + 1), (1, 2**60 + 7), (2**61, 2**60 + 1)],
)
def test_bernoulli_exp_frequency(seeded: RandomSource, num: int, den: int) -> None:
    n = 200_000
    x = sample_bernoulli_exp(np.full(n, num), den)
    assert x.dtype == np.bool_ and x.shape == (n,)
    p = math.exp(-num / den)
    assert abs(x.mean() - p) <= 6 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_bernoulli_exp_mixed_arrays(seeded: RandomSource) -> None:
    nums = np.array([0, 1, 2, 9, 1, 40, 13])
    dens = np.array([5, 1, 3, 4, 2**50, 1, 2**33 + 1])
    reps = 100_000
    x = sample_bernoulli_exp(np.tile(nums, reps), np.tile(dens, reps)).reshape(reps, -1)
    for j, (a, b) in enumerate(zip(nums.tolist(), dens.tolist())):
        p = math.exp(-a / b)
        assert abs(x[:, j].mean() - p) <= 6 * math.sqrt(p * (1 - p) / reps) + 1e-12
    # Broadcasting and shapes.
    y = sample_bernoulli_exp(np.zeros((3, 4), dtype=np.int64), 7)
    assert y.shape == (3, 4) and y.all()
    assert sample_bernoulli_exp(np.array([], dtype=np.int64), 1).shape == (0,)
    # Huge gamma: exp(-2**50) is 0 to any precision, and the loop still ends.
    assert not sample_bernoulli_exp(np.full(1000, 2**50), 1).any()


def test_bernoulli_exp_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        sample_bernoulli_exp(np.array([-1]), 2)
    with pytest.raises(ValueError):
        sample_bernoulli_exp(np.array([1]), 0)
    with pytest.raises(TypeError):
        sample_bernoulli_exp(np.array([0.5]), 2)


@pytest.mark.parametrize(("num", "den"), [(2**20, 2**20 + 1), (2**40 - 1, 2**40 + 1), (1, 2**17 + 3)])
def test_lazy_ratio_resolves_ties_exactly(seeded: RandomSource, num: int, den: int) -> None:
    # Bernoulli(num/den) with den > 2**16 is decided 8 bits at a time; if the
    # tie case (1 in 256) were mishandled, P would be off by ~1/256.
    n = 400_000
    src = current_source()
    hits = disc._bern_ratio(np.full(n, num, dtype=np.int64), den, src)
    hits_arr = disc._bern_ratio(np.full(n, num, dtype=np.int64), np.full(n, den), src)
    p = num / den
    for h in (hits, hits_arr):
        assert abs(h.mean() - p) <= 6 * math.sqrt(p * (1 - p) / n) + 1e-6


def test_scalar_bernoulli_exp_matches(seeded: RandomSource) -> None:
    src = _buffered(current_source())
    for num, den in [(1, 3), (5, 2), (2**70, 2**69 + 1)]:
        n = 4000
        freq = sum(disc._bern_exp_int(num, den, src) for _ in range(n)) / n
        p = math.exp(-num / den)
        assert abs(freq - p) <= 6 * math.sqrt(p * (1 - p) / n) + 1e-12


# --- discrete Laplace ---------------------------------------------------------------

LAPLACE_SCALES = [
    Fraction(1, 2),
    Fraction(1),
    Fraction(37, 10),
    Fraction(1000),
    Fraction(1, 4),
    forty_bits(Fraction(10, 3)),
    forty_bits(Fraction(1, 3)),
    Fraction(2**20),
]


@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_discrete_laplace_distribution(seeded: RandomSource, scale: Fraction) -> None:
    n = 500_000
    x = sample_discrete_laplace(scale, n)
    assert x.dtype == np.int64 and x.shape == (n,)
    assert chi2_pvalue(x, laplace_cdf(scale), float(scale)) > P_MIN
    p = math.exp(-1 / float(scale))
    kurtosis = 6 + (1 - p) ** 2 / p  # of the discrete Laplace; 6 as scale grows
    check_moments(x, laplace_variance(scale), kurtosis)


@pytest.mark.parametrize("tiny", [Fraction(1, 1000), forty_bits(Fraction(1, 1000))], ids=str)
def test_tiny_scales_are_almost_surely_zero(seeded: RandomSource, tiny: Fraction) -> None:
    # P[X != 0] is about 2 exp(-1000) (Laplace) and 2 exp(-500) (Gaussian).
    assert (sample_discrete_laplace(tiny, 100_000) == 0).all()
    assert (sample_discrete_gaussian(tiny, 100_000) == 0).all()


def test_discrete_laplace_million_draws(seeded: RandomSource) -> None:
    scale = Fraction(3)
    x = sample_discrete_laplace(scale, 1_000_000)
    assert chi2_pvalue(x, laplace_cdf(scale), 3.0) > P_MIN
    # Total variation against the exact pmf on the central values.
    values, counts = np.unique(x, return_counts=True)
    cdf = laplace_cdf(scale)
    pmf = cdf(values) - cdf(values - 1)
    tv = 0.5 * (np.abs(counts / x.size - pmf).sum() + (1 - pmf.sum()))
    assert tv < 0.005


def test_discrete_laplace_large_scale_extremes(seeded: RandomSource) -> None:
    # The largest allowed scale stays on the fast path and is exact in shape.
    x = sample_discrete_laplace(Fraction(2**56), 50_000)
    scale = 2.0**56
    assert abs(np.mean(np.abs(x)) / scale - 1) < 6 / math.sqrt(50_000)
    assert stats.kstest(np.abs(x) / scale, "expon").pvalue > P_MIN


# --- discrete Gaussian --------------------------------------------------------------

GAUSSIAN_SIGMA2 = [
    Fraction(1, 4),  # sigma = 0.5
    Fraction(1),
    Fraction(1369, 100),  # sigma = 3.7
    Fraction(10**6),  # sigma = 1000
    Fraction(1, 10),
    forty_bits(Fraction(1, 3)),
    forty_bits(Fraction(1000, 3)),
    forty_bits(Fraction(2**30 + 1, 3)),
    Fraction(2**40),  # sigma = 2**20
]


@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2, ids=str)
def test_discrete_gaussian_distribution(seeded: RandomSource, sigma2: Fraction) -> None:
    n = 500_000
    x = sample_discrete_gaussian(sigma2, n)
    assert x.dtype == np.int64 and x.shape == (n,)
    sigma = math.sqrt(float(sigma2))
    assert chi2_pvalue(x, gaussian_cdf(sigma2), sigma) > P_MIN
    variance = gaussian_variance(sigma2)
    kurtosis = 3.0
    if sigma < 5000:  # for small sigma the kurtosis is large: use the exact one
        k, pmf = gaussian_pmf_table(sigma2)
        kurtosis = float((pmf * k.astype(np.float64) ** 4).sum()) / variance**2
    check_moments(x, variance, kurtosis)


def test_discrete_gaussian_million_draws_tv(seeded: RandomSource) -> None:
    sigma2 = Fraction(9, 4)
    x = sample_discrete_gaussian(sigma2, 1_000_000)
    support, pmf = gaussian_pmf_table(sigma2)
    counts = np.bincount(x - support[0], minlength=support.size)
    assert counts.size == support.size
    tv = 0.5 * np.abs(counts / x.size - pmf).sum()
    assert tv < 0.004
    assert chi2_pvalue(x, gaussian_cdf(sigma2), 1.5) > P_MIN


def test_gaussian_variance_reference_matches_sum() -> None:
    # Sanity check of the reference itself: for sigma >= 3 the discrete
    # Gaussian variance equals sigma2 to ~1e-70.
    assert gaussian_variance(Fraction(9)) == pytest.approx(9.0, rel=1e-12)
    assert gaussian_variance(Fraction(1, 4)) < 0.25


# --- the exact slow path and routing -------------------------------------------------


def test_forced_slow_path_laplace(seeded: RandomSource, monkeypatch: pytest.MonkeyPatch) -> None:
    # With the limit below the scale's numerator the whole batch runs the
    # literal CKS Algorithm 2 on Python ints.
    monkeypatch.setattr(disc, "_FAST_PATH_LIMIT", 30)
    calls: list[int] = []
    original = disc._dlap_int

    def counted(t: int, s: int, src: RandomSource) -> int:
        calls.append(1)
        return original(t, s, src)

    monkeypatch.setattr(disc, "_dlap_int", counted)
    scale = Fraction(37, 10)
    x = sample_discrete_laplace(scale, 30_000)
    assert len(calls) == 30_000
    assert chi2_pvalue(x, laplace_cdf(scale), 3.7) > P_MIN


def test_slow_path_for_huge_representation(seeded: RandomSource) -> None:
    # Numerator and denominator beyond 2**62 (the value is about 4): exact
    # Python-int path without any test hook.
    scale = Fraction(2**70 + 1, 2**68)
    x = sample_discrete_laplace(scale, 20_000)
    assert chi2_pvalue(x, laplace_cdf(scale), 4.0) > P_MIN


def test_forced_slow_path_gaussian(seeded: RandomSource, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disc, "_FAST_PATH_LIMIT", 30)
    sigma2 = Fraction(9, 4)  # CKS Algorithm 3 verbatim, t = floor(sigma) + 1 = 2
    x = sample_discrete_gaussian(sigma2, 20_000)
    assert chi2_pvalue(x, gaussian_cdf(sigma2), 1.5) > P_MIN


def test_gaussian_huge_sigma_takes_slow_path(seeded: RandomSource) -> None:
    sigma2 = Fraction(2**70)  # sigma = 2**35: beyond int64 for the fast path
    x = sample_discrete_gaussian(sigma2, 3000)
    assert stats.kstest(x / 2.0**35, "norm").pvalue > P_MIN


def test_mixed_routing_laplace(seeded: RandomSource, monkeypatch: pytest.MonkeyPatch) -> None:
    # Scale 1000: block w = 1000; with limit 3000 every V > 2 (about 5% of the
    # entries) is finished on Python ints while the rest stay vectorised.
    monkeypatch.setattr(disc, "_FAST_PATH_LIMIT", 3000)
    scale = Fraction(1000)
    x = sample_discrete_laplace(scale, 300_000)
    assert (np.abs(x) > 3000).mean() > 0.02  # plenty of entries took the slow route
    assert chi2_pvalue(x, laplace_cdf(scale), 1000.0) > P_MIN
    check_moments(x, laplace_variance(scale), 6.0)


def test_mixed_routing_gaussian(seeded: RandomSource, monkeypatch: pytest.MonkeyPatch) -> None:
    # sigma2 = 100: offset p/q = 21/2; with limit 900 the tail candidates
    # |Y| > 25 are accepted or rejected on Python ints.
    monkeypatch.setattr(disc, "_FAST_PATH_LIMIT", 900)
    assert disc._gauss_offset(100, 1) == (21, 2)
    slow_calls: list[int] = []
    original = disc._bern_exp_int

    def counted(num: int, den: int, src: RandomSource) -> bool:
        slow_calls.append(1)
        return original(num, den, src)

    monkeypatch.setattr(disc, "_bern_exp_int", counted)
    sigma2 = Fraction(100)
    x = sample_discrete_gaussian(sigma2, 300_000)
    assert len(slow_calls) > 1000
    assert chi2_pvalue(x, gaussian_cdf(sigma2), 10.0) > P_MIN
    check_moments(x, gaussian_variance(sigma2), 3.0)


@pytest.mark.parametrize("sigma2", [Fraction(9, 4), forty_bits(Fraction(1, 3)), Fraction(10**6)], ids=str)
def test_gaussian_acceptance_routes_agree(seeded: RandomSource, sigma2: Fraction) -> None:
    # Conditional on the candidate Y, the vectorised route and the Python-int
    # route accept with the same probability, exp(-(|Y| - c)**2 / (2 sigma2))
    # with c = p/q, whichever route each entry is sent down, and whatever
    # the other entries in the batch are: routing depends only on the
    # parameters and the entry's own |Y|.
    a, b = sigma2.numerator, sigma2.denominator
    p, q = disc._gauss_offset(a, b)
    sigma = math.sqrt(float(sigma2))
    ys = np.unique(np.round(np.array([0, 0.3, 1, 2.5]) * sigma + np.array([0, 1, 2, 3]))).astype(np.int64)
    reps = 10_000
    y = np.repeat(np.concatenate([ys, -ys]), reps)
    src = _buffered(current_source())
    top = int(np.abs(y).max())
    middle = int(ys[len(ys) // 2])
    for ymax in (top, -1, middle):  # all vectorised, all scalar, mixed
        ok = disc._gauss_accept(y, a, b, p, q, ymax, src).reshape(-1, reps)
        for row, yv in zip(ok, np.concatenate([ys, -ys]).tolist()):
            gamma = Fraction((q * abs(yv) - p) ** 2 * b, 2 * q * q * a)
            expected = math.exp(-float(gamma))
            n = reps
            assert abs(row.mean() - expected) <= 6 * math.sqrt(expected * (1 - expected) / n) + 1e-9


def test_gauss_offset_keeps_numbers_small() -> None:
    for sigma2 in [Fraction(1, 4), Fraction(1), forty_bits(Fraction(1, 3)), Fraction(10**6), Fraction(2**40),
                   forty_bits(Fraction(1, 1000))]:
        a, b = sigma2.numerator, sigma2.denominator
        p, q = disc._gauss_offset(a, b)
        c = Fraction(p, q)
        sigma = math.sqrt(float(sigma2))
        assert p >= 1 and q >= 1 and q & (q - 1) == 0
        assert q * q * a <= 2**56
        assert c > Fraction(math.floor(sigma * q), q) - Fraction(1, q)  # c ~ sigma
        if sigma >= 1:
            assert abs(float(c) / sigma - 1) <= 1 / 16 + 1 / sigma


@pytest.mark.parametrize("size", [1, 5, 8])
def test_small_requests_use_the_scalar_path_and_are_exact(seeded: RandomSource, size: int) -> None:
    assert size <= disc._SCALAR_MAX
    calls = 10_000 // size
    lap = np.concatenate([sample_discrete_laplace(Fraction(37, 10), size) for _ in range(calls)])
    assert chi2_pvalue(lap, laplace_cdf(Fraction(37, 10)), 3.7) > P_MIN
    gau = np.concatenate([sample_discrete_gaussian(Fraction(1369, 100), size) for _ in range(calls)])
    assert chi2_pvalue(gau, gaussian_cdf(Fraction(1369, 100)), 3.7) > P_MIN


# --- sources, validation, economy -----------------------------------------------------


def test_seeded_runs_are_identical_and_default_is_random() -> None:
    with pytest.warns(NotPrivateWarning):
        with seeded_noise(3):
            a = sample_discrete_laplace(Fraction(5), 1000)
            g = sample_discrete_gaussian(Fraction(5), 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(3):
            b = sample_discrete_laplace(Fraction(5), 1000)
            h = sample_discrete_gaussian(Fraction(5), 1000)
    assert a.tolist() == b.tolist() and g.tolist() == h.tolist()
    # Without the switch, two runs differ (P[equal] < 1e-300).
    assert sample_discrete_laplace(Fraction(5), 1000).tolist() != sample_discrete_laplace(Fraction(5), 1000).tolist()


def test_explicit_source_is_used() -> None:
    src = CountingSource(SeededRandomSource(1))
    x = sample_discrete_laplace(Fraction(5), 100, src)
    y = sample_discrete_laplace(Fraction(5), 100, SeededRandomSource(1))
    assert src.words_drawn > 0 and x.tolist() == y.tolist()


def test_random_words_per_sample_are_few() -> None:
    # Regression guard on randomness economy (os.urandom is the bottleneck).
    for sampler, param, budget in [
        (sample_discrete_laplace, Fraction(1000), 2.0),
        (sample_discrete_laplace, forty_bits(Fraction(10, 3)), 2.0),
        (sample_discrete_gaussian, forty_bits(Fraction(1000, 3)), 3.0),
        (sample_discrete_gaussian, Fraction(2**40), 4.0),
    ]:
        src = CountingSource(SeededRandomSource(0))
        sampler(param, 100_000, src)
        assert src.words_drawn / 100_000 < budget, (sampler.__name__, param)


@pytest.mark.parametrize("size", [0, 1, 2, 17, 1000])
def test_sizes(size: int) -> None:
    for sampler in (sample_discrete_laplace, sample_discrete_gaussian):
        x = sampler(Fraction(7, 3), size)
        assert x.shape == (size,) and x.dtype == np.int64


def test_validation() -> None:
    for sampler in (sample_discrete_laplace, sample_discrete_gaussian):
        with pytest.raises(TypeError):
            sampler(1.5, 10)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            sampler(True, 10)
        with pytest.raises(ValueError):
            sampler(Fraction(0), 10)
        with pytest.raises(ValueError):
            sampler(Fraction(-1, 2), 10)
        with pytest.raises(ValueError):
            sampler(Fraction(1), -1)
        with pytest.raises(TypeError):
            sampler(Fraction(1), 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sample_discrete_laplace(Fraction(2**56 + 1), 1)
    with pytest.raises(ValueError):
        sample_discrete_gaussian(Fraction(2**112 + 1), 1)
    # Plain ints are exact and accepted.
    assert sample_discrete_laplace(3, 5).shape == (5,)
    assert sample_discrete_gaussian(3, 5).shape == (5,)


def test_doctests() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        result = doctest.testmod(disc)
    assert result.failed == 0 and result.attempted > 0
