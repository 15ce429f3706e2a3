"""Tests for dpframe.noise.calibrate: hand-checked values, an independent
re-implementation of Balle & Wang's Algorithm 1, brute-force sums for the
discrete distributions, monotonicity properties and argument validation."""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import log_ndtr, ndtr

from dpframe.noise.calibrate import (
    DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX,
    SIGMA_ROUND_UP,
    analytic_gaussian_sigma,
    discrete_gaussian_delta,
    discrete_gaussian_halfwidth,
    discrete_gaussian_sigma,
    discrete_gaussian_sigma2,
    discrete_gaussian_variance,
    discrete_laplace_halfwidth,
    discrete_laplace_tail,
    discrete_laplace_variance,
    gaussian_delta,
    gaussian_halfwidth,
    laplace_halfwidth,
    laplace_scale,
    zcdp_sigma,
    zcdp_to_approx_epsilon,
)
from dpframe.noise.calibrate import _dg_delta_shift  # noqa: PLC2701 (white-box)

EPSILONS = [1e-3, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0]
DELTAS = [1e-15, 1e-10, 1e-6, 1e-3, 0.1, 0.5]


# ---------------------------------------------------------------------------
# independent reference implementations (deliberately naive)
# ---------------------------------------------------------------------------


def textbook_log_delta(sigma: float, eps: float, sens: float = 1.0) -> float:
    """log of Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D), via log_ndtr."""
    x1 = sens / (2 * sigma) - eps * sigma / sens
    x2 = -sens / (2 * sigma) - eps * sigma / sens
    l1, l2 = float(log_ndtr(x1)), float(log_ndtr(x2))
    return l1 + math.log(-math.expm1(eps + l2 - l1))


def balle_wang_algorithm1(eps: float, delta: float, sens: float = 1.0) -> float:
    """BW18 Algorithm 1, literally: bisection on B+ / B- in the v / u variable."""

    def b_plus(v: float) -> float:
        return float(ndtr(math.sqrt(eps * v)) - math.exp(eps) * ndtr(-math.sqrt(eps * (v + 2))))

    def b_minus(u: float) -> float:
        return float(ndtr(-math.sqrt(eps * u)) - math.exp(eps) * ndtr(-math.sqrt(eps * (u + 2))))

    delta0 = float(ndtr(0.0) - math.exp(eps) * ndtr(-math.sqrt(2 * eps)))
    if delta >= delta0:
        lo, hi = 0.0, 1.0
        while b_plus(hi) <= delta:  # B+ increasing: sup{v: B+(v) <= delta}
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if b_plus(mid) <= delta else (lo, mid)
        alpha = math.sqrt(1 + lo / 2) - math.sqrt(lo / 2)
    else:
        lo, hi = 0.0, 1.0
        while b_minus(hi) > delta:  # B- decreasing: inf{u: B-(u) <= delta}
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if b_minus(mid) <= delta else (mid, hi)
        alpha = math.sqrt(1 + hi / 2) + math.sqrt(hi / 2)
    return alpha * sens / math.sqrt(2 * eps)


def dg_pmf(sigma2: float, half_width: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    x = np.arange(-half_width, half_width + 1)
    w = np.exp(-(x.astype(float) ** 2) / (2 * sigma2))
    return x, w / w.sum()


def dg_delta_brute(sigma2: float, eps: float, sens: int) -> float:
    """CKS20 Thm 7 literally: P[X > t1] - e^eps P[X > t2] with an explicit pmf."""
    x, p = dg_pmf(sigma2, int(60 * math.sqrt(sigma2)) + 60 + sens)
    t1 = eps * sigma2 / sens - sens / 2
    t2 = eps * sigma2 / sens + sens / 2
    return float(p[x > t1].sum() - math.exp(eps) * p[x > t2].sum())


def hockey_stick_brute(sigma2: float, eps: float, shift: int) -> float:
    """sum_y max(0, P[Y + shift = y] - e^eps P[Y = y]) with explicit pmfs."""
    x, p = dg_pmf(sigma2, int(60 * math.sqrt(sigma2)) + 60 + shift)
    p_shifted = np.roll(p, shift)  # P[Y + shift = x]; wraps only ~0 mass
    return float(np.maximum(p_shifted - math.exp(eps) * p, 0.0).sum())


# ---------------------------------------------------------------------------
# Laplace and zCDP: hand-checked closed forms
# ---------------------------------------------------------------------------


def test_laplace_scale_exact() -> None:
    assert laplace_scale(Fraction(1), Fraction(1, 2)) == Fraction(2)
    assert laplace_scale(Fraction(3), Fraction(3, 4)) == Fraction(4)
    assert laplace_scale(2, Fraction(1, 3)) == Fraction(6)
    out = laplace_scale(Fraction(1, 10), Fraction(7, 10))
    assert out == Fraction(1, 7) and isinstance(out, Fraction)


def test_zcdp_sigma_hand_values() -> None:
    # Delta / sqrt(2 rho): 1/sqrt(1) = 1, 3/sqrt(1/4) = 6, 4/sqrt(4) = 2.
    for rho, sens, expected in [(0.5, 1.0, 1.0), (0.125, 3.0, 6.0), (2.0, 4.0, 2.0)]:
        s = zcdp_sigma(rho, sens)
        assert s >= expected  # rounding only ever adds noise
        assert s == pytest.approx(expected, rel=1e-15)
    # rho recovered from sigma never exceeds the requested rho
    for rho in [1e-4, 0.01, 0.3, 1.0, 7.0]:
        s = zcdp_sigma(rho, 1.0)
        assert 1.0 / (2 * s * s) <= rho


# ---------------------------------------------------------------------------
# analytic Gaussian [BW18]
# ---------------------------------------------------------------------------


def test_analytic_sample_value() -> None:
    s = analytic_gaussian_sigma(1.0, 1e-6, 1.0)
    assert s == pytest.approx(4.224678897, rel=1e-8)
    classical = math.sqrt(2 * math.log(1.25 / 1e-6))
    assert classical == pytest.approx(5.29880, rel=1e-5)
    assert s < classical


@pytest.mark.parametrize("eps", [1e-3, 0.01, 0.1, 0.3, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("delta", [1e-15, 1e-10, 1e-6, 1e-3, 0.05])
def test_analytic_smaller_than_classical(eps: float, delta: float) -> None:
    # Dwork-Roth Thm A.1 (valid for eps < 1) is sufficient, never optimal.
    classical = math.sqrt(2 * math.log(1.25 / delta)) / eps
    assert analytic_gaussian_sigma(eps, delta, 1.0) < classical


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_analytic_defining_equation_tight(eps: float, delta: float) -> None:
    sigma = analytic_gaussian_sigma(eps, delta, 1.0)
    root = sigma / (1 + SIGMA_ROUND_UP)
    # Equality (to ~1e-9 relative) at the unrounded root, checked with the
    # independent textbook formula...
    assert math.exp(textbook_log_delta(root, eps)) / delta == pytest.approx(1.0, rel=1e-8)
    # ...the returned sigma satisfies the inequality...
    assert gaussian_delta(sigma, eps, 1.0) <= delta
    # ...and 0.1% less noise does not.
    assert math.exp(textbook_log_delta(0.999 * sigma, eps)) > delta
    assert gaussian_delta(0.999 * sigma, eps, 1.0) > delta


@pytest.mark.parametrize("eps", [0.05, 0.2, 1.0, 3.0, 8.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 1e-3, 0.02, 0.2, 0.45])
def test_analytic_matches_balle_wang_algorithm1(eps: float, delta: float) -> None:
    # Both branches (delta >= delta0 and < delta0) of BW18 Algorithm 1.
    ours = analytic_gaussian_sigma(eps, delta, 2.5)
    ref = balle_wang_algorithm1(eps, delta, 2.5)
    assert ours == pytest.approx(ref, rel=1e-7)
    assert ours >= ref * (1 - 1e-10)


def test_analytic_is_fast() -> None:
    n = 300
    t0 = time.perf_counter()
    for i in range(n):
        analytic_gaussian_sigma(0.01 + i / 10, 10.0 ** -(1 + i % 14), 1.0)
    per_call = (time.perf_counter() - t0) / n
    assert per_call < 2e-3  # typically ~20 microseconds


@settings(max_examples=60, deadline=None)
@given(
    eps=st.floats(1e-3, 50.0),
    ratio=st.floats(1.01, 10.0),
    delta=st.floats(1e-15, 0.5),
)
def test_analytic_decreases_in_epsilon(eps: float, ratio: float, delta: float) -> None:
    assert analytic_gaussian_sigma(min(50.0, eps * ratio), delta, 1.0) <= analytic_gaussian_sigma(
        eps, delta, 1.0
    )


@settings(max_examples=60, deadline=None)
@given(
    eps=st.floats(1e-3, 50.0),
    log_delta=st.floats(math.log(1e-15), math.log(0.5)),
    factor=st.floats(1.01, 100.0),
)
def test_analytic_decreases_in_delta(eps: float, log_delta: float, factor: float) -> None:
    d1 = math.exp(log_delta)
    d2 = min(0.5, d1 * factor)
    assume(d2 > d1 * 1.001)  # deltas equal to rounding give sigmas equal to rounding
    assert analytic_gaussian_sigma(eps, d2, 1.0) <= analytic_gaussian_sigma(eps, d1, 1.0)


@settings(max_examples=60, deadline=None)
@given(
    eps=st.floats(1e-3, 50.0),
    delta=st.floats(1e-15, 0.5),
    sens=st.floats(1e-3, 1e6),
    factor=st.floats(1.001, 1e3),
)
def test_analytic_increases_in_sensitivity(
    eps: float, delta: float, sens: float, factor: float
) -> None:
    small = analytic_gaussian_sigma(eps, delta, sens)
    big = analytic_gaussian_sigma(eps, delta, sens * factor)
    assert big > small
    assert big / small == pytest.approx(factor, rel=1e-12)  # scale invariance


# ---------------------------------------------------------------------------
# discrete Gaussian [CKS20]
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sigma2, eps, sens",
    [
        (16.0, 1.0, 1),
        (1.0, 0.5, 1),
        (0.3, 2.0, 1),
        (0.05, 0.1, 1),
        (100.0, 0.2, 3),
        (4.0, 1.0, 5),
        (2.5, 3.0, 2),
        (1e4, 0.1, 7),
        (2e4, 1e-3, 1),
    ],
)
def test_discrete_delta_matches_brute_force(sigma2: float, eps: float, sens: int) -> None:
    ours = discrete_gaussian_delta(sigma2, eps, sens)
    assert ours == pytest.approx(dg_delta_brute(sigma2, eps, sens), rel=1e-9, abs=1e-15)
    assert ours == pytest.approx(hockey_stick_brute(sigma2, eps, sens), rel=1e-9, abs=1e-15)


def test_discrete_delta_tiny_values_keep_relative_precision() -> None:
    # Small eps, small delta: the two tails P[X > t1], e^eps P[X > t2] agree
    # to ~5 digits, so a naive difference would lose them; the series form
    # must stay positive and track the (cancellation-free) continuous value.
    d = discrete_gaussian_delta(6500.0**2, 1e-3, 1)
    assert 0 < d < 1e-14
    assert d == pytest.approx(gaussian_delta(6500.0, 1e-3, 1.0), rel=1e-5)


@pytest.mark.parametrize("sigma, eps", [(100.0, 0.02), (300.0, 0.01), (1000.0, 0.003), (50.0, 0.5)])
def test_discrete_delta_close_to_continuous_for_large_sigma(sigma: float, eps: float) -> None:
    disc = discrete_gaussian_delta(sigma * sigma, eps, 1)
    cont = gaussian_delta(sigma, eps, 1.0)
    assert disc == pytest.approx(cont, rel=2e-3)


def test_discrete_delta_worst_case_is_full_sensitivity() -> None:
    # CKS20 Thm 7 states delta for |q(x) - q(x')| <= Delta using the shift
    # Delta; confirm shifts 1..Delta never exceed it on a grid.
    for sigma2 in np.exp(np.linspace(math.log(0.05), math.log(400.0), 15)):
        for eps in [0.01, 0.5, 2.0, 10.0]:
            deltas = [_dg_delta_shift(float(sigma2), eps, c) for c in range(1, 9)]
            assert all(a <= b * (1 + 1e-12) + 1e-300 for a, b in zip(deltas, deltas[1:]))


def test_discrete_delta_cap() -> None:
    s = DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX * 1.01
    with pytest.raises(ValueError, match="sigma2"):
        discrete_gaussian_delta(s * s, 1.0, 1)


@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 10.0, 50.0])
@pytest.mark.parametrize("delta", [1e-15, 1e-6, 0.5])
@pytest.mark.parametrize("sens", [1, 3])
def test_discrete_sigma_is_verified(eps: float, delta: float, sens: int) -> None:
    sigma = discrete_gaussian_sigma(eps, delta, sens)
    assert discrete_gaussian_delta(sigma * sigma, eps, sens) <= delta
    analytic = analytic_gaussian_sigma(eps, delta, sens)
    assert analytic <= sigma <= 1.1 * analytic


def test_discrete_delta_saw_tooth_in_sigma() -> None:
    # Why discrete_gaussian_sigma2 re-verifies after rounding: for small sigma
    # the discrete delta can *increase* with sigma (here eps=10, Delta=1).
    d1 = discrete_gaussian_delta(0.2238**2, 10.0, 1)
    d2 = discrete_gaussian_delta(0.2244**2, 10.0, 1)
    assert d2 > d1 > 0


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.0, 5.0, 10.0, 30.0, 50.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.3])
@pytest.mark.parametrize("bits", [12, 40, 52])
def test_discrete_sigma2_is_dyadic_and_verified(eps: float, delta: float, bits: int) -> None:
    s2 = discrete_gaussian_sigma2(eps, delta, 1, bits=bits)
    assert s2.denominator & (s2.denominator - 1) == 0
    assert s2.numerator.bit_length() <= bits + 1
    assert Fraction(float(s2)) == s2  # the check below sees the exact value
    assert s2 >= Fraction(discrete_gaussian_sigma(eps, delta, 1)) ** 2
    assert discrete_gaussian_delta(float(s2), eps, 1) <= delta


def test_discrete_sigma_sample_values() -> None:
    # At eps=1, delta=1e-6 the discrete Gaussian needs ~0.14% more sigma.
    s = discrete_gaussian_sigma(1.0, 1e-6, 1)
    assert s == pytest.approx(4.23078, rel=1e-5)
    assert discrete_gaussian_delta(s * s, 1.0, 1) <= 1e-6
    assert discrete_gaussian_delta((0.999 * s) ** 2, 1.0, 1) > 1e-6


def test_discrete_sigma_zcdp_fallback_above_cap() -> None:
    eps, delta, sens = 1e-3, 1e-6, 100
    sigma = discrete_gaussian_sigma(eps, delta, sens)
    assert sigma > DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX
    assert sigma >= analytic_gaussian_sigma(eps, delta, sens)
    rho = sens**2 / (2 * sigma**2)  # CKS20 Thm 14
    assert zcdp_to_approx_epsilon(rho, delta) <= eps


# ---------------------------------------------------------------------------
# zCDP -> (eps, delta)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rho, delta", [(0.5, 1e-6), (0.01, 1e-10), (5.0, 0.1), (1e-4, 1e-6), (1e-6, 1e-9), (50.0, 1e-12)]
)
def test_zcdp_conversion_is_the_minimum(rho: float, delta: float) -> None:
    alpha = np.exp(np.linspace(math.log(1 + 1e-7), math.log(1e9), 400_001))
    log_inv = -math.log(delta)
    objective = rho * alpha + (log_inv - np.log(alpha)) / (alpha - 1) + np.log1p(-1 / alpha)
    grid_min = max(0.0, float(objective.min()))
    eps = zcdp_to_approx_epsilon(rho, delta)
    # at least as good as a 400k-point grid search, and not implausibly better
    # (the grid's own discretisation error is ~1e-9 relative)
    assert eps <= grid_min * (1 + 1e-12)
    assert eps >= grid_min * (1 - 1e-8)
    assert eps <= rho + 2 * math.sqrt(rho * log_inv)  # tighter than BS16


def test_zcdp_conversion_hand_value() -> None:
    assert zcdp_to_approx_epsilon(0.5, 1e-6) == pytest.approx(5.221534, rel=1e-6)


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5])
def test_zcdp_conversion_never_beats_exact_gaussian_curve(eps: float, delta: float) -> None:
    # The Gaussian at the analytic sigma is exactly (eps, delta)-DP; the zCDP
    # route is only a sufficient condition, so it must report eps' >= eps.
    sigma = analytic_gaussian_sigma(eps, delta, 1.0)
    assert zcdp_to_approx_epsilon(1 / (2 * sigma**2), delta) >= eps


# ---------------------------------------------------------------------------
# distribution facts
# ---------------------------------------------------------------------------


def dlap_pmf(scale: float, half_width: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    p = math.exp(-1 / scale)
    x = np.arange(-half_width, half_width + 1)
    return x, (1 - p) / (1 + p) * p ** np.abs(x)


@pytest.mark.parametrize("scale", [0.1, 0.5, 1.0, 3.7, 20.0, 150.0])
def test_discrete_laplace_facts_vs_brute_force(scale: float) -> None:
    x, pmf = dlap_pmf(scale, int(80 * scale) + 50)
    assert pmf.sum() == pytest.approx(1.0, rel=1e-12)
    assert discrete_laplace_variance(scale) == pytest.approx(float((x**2 * pmf).sum()), rel=1e-10)
    for k in [0, 1, 2, 5, int(3 * scale)]:
        assert discrete_laplace_tail(scale, k) == pytest.approx(
            float(pmf[np.abs(x) > k].sum()), rel=1e-9, abs=1e-300
        )
    for level in [0.01, 0.5, 0.9, 0.95, 0.99, 0.999999]:
        k = discrete_laplace_halfwidth(scale, level)
        assert pmf[np.abs(x) <= k].sum() >= level - 1e-12
        if k > 0:
            assert pmf[np.abs(x) <= k - 1].sum() < level


def test_discrete_laplace_variance_large_scale_is_stable() -> None:
    # 2p/(1-p)^2 = 1/(2 sinh^2(1/(2b))) = 2 b^2 - 1/6 + O(1/b^2)
    for b in [1e3, 1e6, 1e8]:
        assert discrete_laplace_variance(b) == pytest.approx(2 * b * b - 1 / 6, rel=1e-12)


@pytest.mark.parametrize("sigma2", [0.01, 0.2, 0.5, 0.99, 1.0, 2.0, 10.0, 1e3, 1e6])
def test_discrete_gaussian_variance_vs_brute_force(sigma2: float) -> None:
    x, p = dg_pmf(sigma2, int(60 * math.sqrt(sigma2)) + 60)
    brute = float((x.astype(float) ** 2 * p).sum())
    ours = discrete_gaussian_variance(sigma2)
    assert ours == pytest.approx(brute, rel=1e-12)
    assert ours <= sigma2  # CKS20: variance below sigma^2


@pytest.mark.parametrize("sigma2", [0.01, 0.3, 1.0, 4.0, 50.0, 1e4, 4e8])
@pytest.mark.parametrize("level", [0.2, 0.5, 0.9, 0.95, 0.99, 0.999999])
def test_discrete_gaussian_halfwidth_vs_brute_force(sigma2: float, level: float) -> None:
    # sigma2 = 4e8 (sigma = 2e4) exercises the Euler-Maclaurin path.
    x, p = dg_pmf(sigma2, int(40 * math.sqrt(sigma2)) + 40)
    k = discrete_gaussian_halfwidth(sigma2, level)
    # compare tails (1 - coverage) summed from the outside for precision

    def tail(j: int) -> float:
        return float(p[np.abs(x) > j].sum())

    assert tail(k) <= (1 - level) * (1 + 1e-9)
    if k > 0:
        assert tail(k - 1) > (1 - level) * (1 - 1e-9)


@pytest.mark.parametrize("level", [0.1, 0.5, 0.95, 0.999])
def test_continuous_halfwidths(level: float) -> None:
    assert laplace_halfwidth(2.0, level) == pytest.approx(
        float(stats.laplace(scale=2.0).ppf((1 + level) / 2)), rel=1e-10
    )
    assert gaussian_halfwidth(3.0, level) == pytest.approx(
        float(stats.norm(scale=3.0).ppf((1 + level) / 2)), rel=1e-10
    )
    assert gaussian_halfwidth(1.0, 0.95) == pytest.approx(1.959963985, rel=1e-9)


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------

BAD_CALLS: list[tuple[Callable[..., Any], tuple[Any, ...], str]] = [
    (laplace_scale, (Fraction(1), Fraction(0)), "epsilon"),
    (laplace_scale, (Fraction(-1), Fraction(1)), "sensitivity"),
    (laplace_scale, (Fraction(1), "1"), "epsilon"),
    (laplace_scale, (Fraction(1), math.inf), "epsilon"),
    (analytic_gaussian_sigma, (0.0, 1e-6, 1.0), "epsilon"),
    (analytic_gaussian_sigma, (math.inf, 1e-6, 1.0), "epsilon"),
    (analytic_gaussian_sigma, (math.nan, 1e-6, 1.0), "epsilon"),
    (analytic_gaussian_sigma, (1.0, 0.0, 1.0), "delta"),
    (analytic_gaussian_sigma, (1.0, 1.0, 1.0), "delta"),
    (analytic_gaussian_sigma, (1.0, 1e-6, 0.0), "sensitivity"),
    (analytic_gaussian_sigma, (True, 1e-6, 1.0), "epsilon"),
    (gaussian_delta, (0.0, 1.0, 1.0), "sigma"),
    (discrete_gaussian_delta, (-1.0, 1.0, 1), "sigma2"),
    (discrete_gaussian_delta, (1.0, -1.0, 1), "epsilon"),
    (discrete_gaussian_delta, (1.0, 1.0, 0), "sensitivity"),
    (discrete_gaussian_delta, (1.0, 1.0, 1.5), "sensitivity"),
    (discrete_gaussian_sigma, (1.0, 1e-6, 2.0), "sensitivity"),
    (discrete_gaussian_sigma, (1.0, 2.0, 1), "delta"),
    (discrete_gaussian_sigma, (-1.0, 1e-6, 1), "epsilon"),
    (discrete_gaussian_sigma2, (1.0, 1e-6, 1, 60), "bits"),
    (discrete_gaussian_sigma2, (1.0, 0.0, 1), "delta"),
    (zcdp_sigma, (0.0, 1.0), "rho"),
    (zcdp_sigma, (1.0, -2.0), "sensitivity"),
    (zcdp_to_approx_epsilon, (-0.1, 1e-6), "rho"),
    (zcdp_to_approx_epsilon, (0.1, 0.0), "delta"),
    (discrete_laplace_variance, (0.0,), "scale"),
    (discrete_laplace_tail, (1.0, -1), "k"),
    (discrete_laplace_tail, (1.0, 1.5), "k"),
    (discrete_laplace_halfwidth, (1.0, 1.0), "level"),
    (discrete_laplace_halfwidth, (-1.0, 0.9), "scale"),
    (discrete_gaussian_variance, (math.inf,), "sigma2"),
    (discrete_gaussian_halfwidth, (1.0, 0.0), "level"),
    (laplace_halfwidth, (1.0, 1.5), "level"),
    (gaussian_halfwidth, (-1.0, 0.5), "sigma"),
]


@pytest.mark.parametrize("fn, args, name", BAD_CALLS)
def test_bad_arguments_raise_value_error(
    fn: Callable[..., Any], args: tuple[Any, ...], name: str
) -> None:
    with pytest.raises(ValueError, match=name) as info:
        fn(*args)
    assert ";" in str(info.value)  # message says what to do


def test_a_laplace_release_inside_a_zcdp_budget_never_exceeds_its_rho() -> None:
    from fractions import Fraction

    from dpframe.noise.mechanism import laplace_epsilon

    rng = np.random.default_rng(0)
    for numerator, denominator in rng.integers(1, 10**12, size=(2000, 2)):
        rho = Fraction(int(numerator), int(denominator) * 1000)
        epsilon = laplace_epsilon(rho)
        assert epsilon * epsilon / 2 <= rho  # exact, not in floating point
        assert float(epsilon) >= (2 * float(rho)) ** 0.5 * (1 - 1e-9)  # and not needlessly small
