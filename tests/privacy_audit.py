"""Empirical privacy audits: lower confidence bounds on the privacy loss between two release samples.

A sample can never prove a mechanism private, but it can prove one *non*-private.
If the mechanism is really (epsilon, delta)-DP, then for every output set S

    P_a(S) <= e^epsilon P_b(S) + delta,

so with Clopper-Pearson bounds ``P_a(S) >= LB_a(S)`` and ``P_b(S) <= UB_b(S)``
(simultaneously over all candidate sets, by a Bonferroni correction),

    log((LB_a(S) - delta) / UB_b(S))   and   LB_a(S) - e^epsilon UB_b(S)

are, with probability >= 1 - alpha, lower bounds on the true epsilon (at this
delta) and on the true hockey-stick divergence (at this epsilon). A correct
mechanism therefore fails an assertion ``bound <= claim`` with probability at
most alpha = 1e-6. The candidate sets are half-lines {y <= k}, {y >= k} (for
additive noise with a log-concave distribution they contain the optimal
distinguishing sets) plus single outputs with enough mass, both directions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import beta

IntArray = np.ndarray[Any, np.dtype[np.int64]]

ALPHA = 1e-6  # overall false-alarm probability of each audit
MIN_SINGLETON_COUNT = 1000  # singletons rarer than this carry no information


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




def ranks(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], cells: int = 400) -> tuple[IntArray, IntArray]:
    """Real-valued releases as integers: their cell among ``cells`` quantiles of the pooled samples.

    Half-lines of the cells are half-lines of the values, so the audit keeps its meaning.
    """
    pooled = np.concatenate([a, b])
    edges = np.unique(np.quantile(pooled, np.linspace(0, 1, cells + 1)[1:-1]))
    return np.searchsorted(edges, a).astype(np.int64), np.searchsorted(edges, b).astype(np.int64)
