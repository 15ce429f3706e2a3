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

from dpframe.noise.calibrate import (
    discrete_gaussian_delta,
    discrete_gaussian_sigma2,
    laplace_scale,
)
from dpframe.noise.discrete import sample_discrete_gaussian, sample_discrete_laplace
from dpframe.testing import NotPrivateWarning, seeded_noise
from privacy_audit import IntArray, epsilon_lower_bound, hockey_stick_lower_bound

N_RELEASES = 1_500_000  # per neighbouring data set
TRUE_COUNT = 100


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


# ---------------------------------------------------------------------------
# integer-candidate quantiles (exact permute-and-flip), epsilon-DP
# ---------------------------------------------------------------------------


def _quantile_releases(epsilon: Fraction, seed: int) -> tuple[IntArray, IntArray]:
    """Median candidates of neighbouring data sets (one value added at the median), 400k each."""
    from dpframe.noise.random import _buffered, current_source
    from dpframe.selection.exponential import sample_permute_and_flip
    from dpframe.selection.quantile import QuantileGrid, integer_quantile_deficits

    grid = QuantileGrid.choose(0, 10, integer=True)
    data = np.array([1, 3, 3, 4, 6, 6, 7, 9])
    out = []
    with seeded_noise(seed):
        for values in (data, np.append(data, 5)):
            deficits = integer_quantile_deficits(grid.positions(values.copy()), grid.cells, 0.5, epsilon, 1)
            out.append(sample_permute_and_flip(deficits, 400_000, _buffered(current_source())))
    return out[0], out[1]


def test_integer_quantile_respects_epsilon() -> None:
    a, b = _quantile_releases(Fraction(1), 21)
    assert epsilon_lower_bound(a, b) <= 1.0


def test_integer_quantile_audit_has_power() -> None:
    # Positive control: releases at epsilon 4 are flagged against a claim of 1.
    a, b = _quantile_releases(Fraction(4), 22)
    assert epsilon_lower_bound(a, b) > 1.0
