"""Empirical privacy audit of noisy counts (discrete Laplace and discrete Gaussian).

Two neighbouring data sets have true counts ``n`` and ``n + 1``.  We draw
millions of releases ``count + noise`` from each (exact samplers, seeded so
the test is deterministic) and compute, from the samples alone, a *lower
confidence bound* on how distinguishable the two release distributions are.

Why a lower confidence bound: a sample can never prove a mechanism private,
but it can prove one *non*-private.  If the mechanism is really
(epsilon, delta)-DP, then for every output set S

    P_a(S) <= e^epsilon P_b(S) + delta,

so with Clopper-Pearson bounds ``P_a(S) >= LB_a(S)`` and ``P_b(S) <= UB_b(S)``
(simultaneously over all candidate sets, by a Bonferroni correction),

    log((LB_a(S) - delta) / UB_b(S))   and   LB_a(S) - e^epsilon UB_b(S)

are, with probability >= 1 - alpha, lower bounds on the true epsilon (at
this delta) and on the true hockey-stick divergence (at this epsilon).  A
correct mechanism therefore fails the assertions below with probability at
most alpha = 1e-6, while a mechanism with too little noise is caught as soon
as the samples resolve the gap.  The candidate sets are all half-lines
{y <= k}, {y >= k} (for additive noise with a log-concave distribution these
contain the optimal distinguishing sets) plus all single outputs with enough
mass, in both directions (a vs b and b vs a).

The positive controls run the same audit on a deliberately broken mechanism
whose noise scale is halved and require it to be flagged, so the audit has
demonstrable power rather than passing vacuously.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy.stats import beta

from dpframe.noise.calibrate import (
    discrete_gaussian_delta,
    discrete_gaussian_sigma2,
    laplace_scale,
)
from dpframe.noise.discrete import sample_discrete_gaussian, sample_discrete_laplace
from dpframe.testing import NotPrivateWarning, seeded_noise

IntArray = np.ndarray[Any, np.dtype[np.int64]]

N_RELEASES = 1_500_000  # per neighbouring data set
TRUE_COUNT = 100
ALPHA = 1e-6  # overall false-alarm probability of each audit
MIN_SINGLETON_COUNT = 1000  # singletons rarer than this carry no information


# ---------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------


def _candidate_set_counts(a: IntArray, b: IntArray) -> tuple[IntArray, IntArray]:
    """Counts of the samples of ``a`` and of ``b`` falling in each candidate set.

    Candidate sets: every half-line {y <= k} and {y >= k} over the observed
    range, and every single value y observed at least MIN_SINGLETON_COUNT
    times in either sample.  Returns two aligned integer arrays.
    """
    lo = int(min(a.min(), b.min()))
    hi = int(max(a.max(), b.max()))
    ca = np.bincount(a - lo, minlength=hi - lo + 1)
    cb = np.bincount(b - lo, minlength=hi - lo + 1)
    below_a, below_b = np.cumsum(ca), np.cumsum(cb)  # {y <= k}
    above_a, above_b = np.cumsum(ca[::-1])[::-1], np.cumsum(cb[::-1])[::-1]  # {y >= k}
    single = (ca >= MIN_SINGLETON_COUNT) | (cb >= MIN_SINGLETON_COUNT)
    ka = np.concatenate([below_a, above_a, ca[single]])
    kb = np.concatenate([below_b, above_b, cb[single]])
    return ka.astype(np.int64), kb.astype(np.int64)


def _clopper_pearson(k: IntArray, n: int, level: float) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """One-sided exact binomial bounds, each holding with prob >= 1 - level."""
    kf = k.astype(float)
    lower = np.where(k > 0, beta.ppf(level, np.maximum(kf, 1), n - kf + 1), 0.0)
    upper = np.where(k < n, beta.ppf(1 - level, kf + 1, np.maximum(n - kf, 1)), 1.0)
    return lower, upper


def audit_bounds(
    a: IntArray, b: IntArray, alpha: float = ALPHA
) -> tuple[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]], ...]:
    """Simultaneous (LB_x(S), UB_y(S)) pairs for (x, y) = (a, b) and (b, a).

    Bonferroni: 2 directions x m sets x 2 one-sided bounds, each at level
    alpha / (4 m), so all bounds hold together with probability >= 1 - alpha.
    """
    ka, kb = _candidate_set_counts(a, b)
    level = alpha / (4 * len(ka))
    lb_a, ub_a = _clopper_pearson(ka, len(a), level)
    lb_b, ub_b = _clopper_pearson(kb, len(b), level)
    return (lb_a, ub_b), (lb_b, ub_a)


def epsilon_lower_bound(a: IntArray, b: IntArray, delta: float = 0.0, alpha: float = ALPHA) -> float:
    """Lower confidence bound on the smallest epsilon with (epsilon, delta)-DP.

    max over candidate sets S and both directions of
    log((LB_x(S) - delta) / UB_y(S)); with delta = 0 this is the classic
    pure-DP privacy-loss estimate, made conservative.  Returns 0.0 if no set
    gives evidence of any privacy loss.
    """
    best = 0.0
    for lb_x, ub_y in audit_bounds(a, b, alpha):
        ok = lb_x > delta
        if ok.any():
            best = max(best, float(np.max(np.log((lb_x[ok] - delta) / ub_y[ok]))))
    return best


def hockey_stick_lower_bound(a: IntArray, b: IntArray, epsilon: float, alpha: float = ALPHA) -> float:
    """Lower confidence bound on max_S P_x(S) - e^epsilon P_y(S) (the true delta at epsilon)."""
    return max(
        float(np.max(lb_x - math.exp(epsilon) * ub_y)) for lb_x, ub_y in audit_bounds(a, b, alpha)
    )


# ---------------------------------------------------------------------------
# releases
# ---------------------------------------------------------------------------


def _releases(sampler: Any, param: Fraction, seed: int) -> tuple[IntArray, IntArray]:
    """N_RELEASES noisy counts for each of the neighbouring true counts n, n+1."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(seed):
            a = TRUE_COUNT + sampler(param, N_RELEASES)
            b = TRUE_COUNT + 1 + sampler(param, N_RELEASES)
    return a, b


# ---------------------------------------------------------------------------
# discrete Laplace, epsilon-DP
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [Fraction(1), Fraction(1, 2)])
def test_discrete_laplace_count_respects_epsilon(epsilon: Fraction) -> None:
    scale = laplace_scale(Fraction(1), epsilon)
    a, b = _releases(sample_discrete_laplace, scale, seed=11)
    est = epsilon_lower_bound(a, b)
    assert est <= float(epsilon)
    # The audit is tight: for the discrete Laplace the loss equals epsilon on
    # half of all outputs, so the bound should come close to the claim.
    assert est >= 0.9 * float(epsilon)


def test_discrete_laplace_with_halved_scale_is_flagged() -> None:
    epsilon = Fraction(1, 2)
    broken_scale = laplace_scale(Fraction(1), epsilon) / 2  # really 2*epsilon-DP
    a, b = _releases(sample_discrete_laplace, broken_scale, seed=12)
    est = epsilon_lower_bound(a, b)
    assert est > 1.5 * float(epsilon)  # clearly exceeds the claim


# ---------------------------------------------------------------------------
# discrete Gaussian, (epsilon, delta)-DP
# ---------------------------------------------------------------------------

GAUSS_EPSILON = 1.0
GAUSS_DELTA = 1e-5


def _gaussian_sigma2() -> Fraction:
    return discrete_gaussian_sigma2(GAUSS_EPSILON, GAUSS_DELTA, 1)


def test_discrete_gaussian_count_respects_epsilon_delta() -> None:
    sigma2 = _gaussian_sigma2()
    assert discrete_gaussian_delta(float(sigma2), GAUSS_EPSILON, 1) <= GAUSS_DELTA
    a, b = _releases(sample_discrete_gaussian, sigma2, seed=21)
    assert hockey_stick_lower_bound(a, b, GAUSS_EPSILON) <= GAUSS_DELTA
    assert epsilon_lower_bound(a, b, delta=GAUSS_DELTA) <= GAUSS_EPSILON


def test_discrete_gaussian_with_halved_sigma_is_flagged() -> None:
    sigma2 = _gaussian_sigma2() / 4  # sigma halved
    true_delta = discrete_gaussian_delta(float(sigma2), GAUSS_EPSILON, 1)
    assert true_delta > 500 * GAUSS_DELTA  # ~0.009: what the audit should detect
    a, b = _releases(sample_discrete_gaussian, sigma2, seed=22)
    hs = hockey_stick_lower_bound(a, b, GAUSS_EPSILON)
    assert hs > 100 * GAUSS_DELTA
    assert hs <= true_delta  # still a valid lower bound on the truth
    assert epsilon_lower_bound(a, b, delta=GAUSS_DELTA) > 1.2 * GAUSS_EPSILON
