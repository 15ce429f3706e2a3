"""Noise calibration and the facts about the noise distributions.

Every function here is pure: it maps privacy parameters to noise parameters
(or noise parameters to accuracy facts) and draws no randomness.

Closed forms are used wherever they exist.  The only numerical searches are
1-D root finds on closed-form monotone functions (Balle & Wang's analytic
Gaussian, the tight zCDP -> (epsilon, delta) conversion), each bracketed
analytically so it converges in a few dozen function evaluations, plus
the exact verification of discrete Gaussian parameters [CKS20 Thm 7], which
sums the pmf over ~40 sigma integers.

References
----------
[BW18]  B. Balle, Y.-X. Wang. "Improving the Gaussian Mechanism for
        Differential Privacy: Analytical Calibration and Optimal Denoising".
        ICML 2018, arXiv:1805.06530.
[CKS20] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
        Differential Privacy". NeurIPS 2020, arXiv:2004.00010.
[BS16]  M. Bun, T. Steinke. "Concentrated Differential Privacy:
        Simplifications, Extensions, and Lower Bounds". TCC 2016,
        arXiv:1605.02065.
[GRS12] A. Ghosh, T. Roughgarden, M. Sundararajan. "Universally
        Utility-Maximizing Privacy Mechanisms". SIAM J. Comput. 2012
        (the discrete Laplace / two-sided geometric mechanism).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from scipy.optimize import brentq  # type: ignore[import-untyped, unused-ignore]
from scipy.special import (  # type: ignore[import-untyped, unused-ignore]
    erfc,
    erfcx,
    ndtri,
)

__all__ = [
    "DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX",
    "SIGMA_ROUND_UP",
    "analytic_gaussian_sigma",
    "discrete_gaussian_delta",
    "discrete_gaussian_halfwidth",
    "discrete_gaussian_sigma",
    "discrete_gaussian_sigma2",
    "discrete_gaussian_variance",
    "discrete_gaussian_vector_delta",
    "discrete_gaussian_vector_sigma2",
    "discrete_laplace_halfwidth",
    "discrete_laplace_tail",
    "discrete_laplace_variance",
    "gaussian_delta",
    "gaussian_halfwidth",
    "laplace_halfwidth",
    "laplace_scale",
    "zcdp_sigma",
    "zcdp_to_approx_epsilon",
]

#: Relative amount by which numerically computed Gaussian scales are rounded
#: up.  The root finds are accurate to ~1e-12 relative, so this margin makes
#: floating-point error only ever *add* noise (i.e. err on the private side).
SIGMA_ROUND_UP = 1e-9

#: Largest sigma for which :func:`discrete_gaussian_delta` sums the pmf
#: exactly.  The sum touches ~40*sigma integers, i.e. ~4 million at the cap
#: (tens of milliseconds); above it see :func:`discrete_gaussian_sigma`.
DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX = 1e5

# Above this sigma the discrete Gaussian tail sums in the *accuracy* helpers
# use the Euler-Maclaurin formula instead of explicit summation (its relative
# error there is < 1e-14, i.e. at machine precision; see _dg_upper_sum).
_DG_SUM_SIGMA_MAX = 1e4

# Half-width, in units of sigma, of the window of integers summed for
# discrete Gaussian quantities.  Terms beyond it are smaller than the leading
# term by a factor exp(-20**2 / 2) = exp(-200) ~ 1e-87, far below double
# precision even after multiplying by the (< 1e7) number of neglected terms.
_WINDOW_SIGMAS = 20.0


# ---------------------------------------------------------------------------
# argument validation
# ---------------------------------------------------------------------------


def _finite_float(name: str, value: object, hint: str) -> float:
    if isinstance(value, bool) or not isinstance(
        value, (int, float, Fraction, np.integer, np.floating)
    ):
        raise ValueError(
            f"{name} must be a real number, got {value!r} "
            f"({type(value).__name__}); {hint}"
        )
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}; {hint}")
    return x


def _positive(name: str, value: object, hint: str) -> float:
    x = _finite_float(name, value, hint)
    if not x > 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}; {hint}")
    return x


def _nonnegative(name: str, value: object, hint: str) -> float:
    x = _finite_float(name, value, hint)
    if not x >= 0.0:
        raise ValueError(f"{name} must be >= 0, got {value!r}; {hint}")
    return x


def _open_unit(name: str, value: object, hint: str) -> float:
    x = _finite_float(name, value, hint)
    if not 0.0 < x < 1.0:
        raise ValueError(
            f"{name} must lie strictly between 0 and 1, got {value!r}; {hint}"
        )
    return x


def _int_at_least(name: str, value: object, minimum: int, hint: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}; {hint}")
    try:
        n = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(
            f"{name} must be an integer, got {value!r} "
            f"({type(value).__name__}); {hint}"
        ) from None
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}; {hint}")
    return n


def _positive_fraction(name: str, value: object, hint: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(
        value, (int, Fraction, float, np.integer)
    ):
        raise ValueError(
            f"{name} must be a Fraction or int, got {value!r} "
            f"({type(value).__name__}); {hint}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}; {hint}")
    # Fraction(float) is the exact binary value, so no rounding happens here.
    f = Fraction(int(value)) if isinstance(value, np.integer) else Fraction(value)
    if f <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}; {hint}")
    return f


_EPS_HINT = "pass the privacy-loss parameter epsilon > 0, e.g. 1.0"
_DELTA_HINT = "pass a failure probability such as 1e-6 (use a pure-DP mechanism for delta = 0)"
_SENS_HINT = "pass the query's sensitivity, e.g. 1 for a count"
_RHO_HINT = "pass the zCDP parameter rho > 0, e.g. 0.5"
_SCALE_HINT = "pass the noise scale > 0"
_SIGMA2_HINT = "pass the variance parameter sigma**2 > 0 of the discrete Gaussian"
_LEVEL_HINT = "pass a coverage probability such as 0.95"


# ---------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------


def laplace_scale(sensitivity: Fraction | int, epsilon: Fraction | int) -> Fraction:
    """Scale ``b = sensitivity / epsilon`` of (discrete) Laplace noise for epsilon-DP.

    Computed exactly in rationals so that it can be handed to the exact
    discrete-Laplace sampler without rounding.  Adding Laplace(b) noise
    [Dwork et al. 2006], or discrete Laplace with ``P[x] ∝ exp(-|x|/b)`` to an
    integer-valued query [GRS12; CKS20 Sec. 2], gives epsilon-DP when the
    L1 sensitivity is at most ``sensitivity``.

    >>> laplace_scale(Fraction(1), Fraction(1, 2))
    Fraction(2, 1)
    >>> laplace_scale(3, Fraction(3, 4))
    Fraction(4, 1)
    """
    s = _positive_fraction("sensitivity", sensitivity, _SENS_HINT)
    e = _positive_fraction("epsilon", epsilon, _EPS_HINT)
    return s / e


def laplace_halfwidth(scale: float, level: float) -> float:
    """Half-width ``x`` with ``P[|X| <= x] = level`` for continuous Laplace(scale).

    ``P[|X| > x] = exp(-x/scale)``, so ``x = scale * log(1/(1 - level))``.

    >>> round(laplace_halfwidth(1.0, 0.95), 6)
    2.995732
    """
    b = _positive("scale", scale, _SCALE_HINT)
    q = _open_unit("level", level, _LEVEL_HINT)
    # -log1p(-q) keeps full precision for level close to 0.
    return -b * math.log1p(-q)


def _check_scale_float(scale: float) -> float:
    return _positive("scale", scale, _SCALE_HINT)


def discrete_laplace_variance(scale: float) -> float:
    """Variance ``2p/(1-p)**2`` (``p = exp(-1/scale)``) of the discrete Laplace.

    The distribution is ``P[x] = (1-p)/(1+p) * p**|x|`` on the integers.
    ``1 - p`` is computed as ``-expm1(-1/scale)`` so the formula stays
    accurate for large scales, where it approaches ``2*scale**2``.

    >>> round(discrete_laplace_variance(1.0), 6)
    1.841347
    >>> round(discrete_laplace_variance(1e6) / (2 * 1e12), 9)  # ~ continuous
    1.0
    """
    b = _check_scale_float(scale)
    p = math.exp(-1.0 / b)
    one_minus_p = -math.expm1(-1.0 / b)
    return 2.0 * p / (one_minus_p * one_minus_p)


def discrete_laplace_tail(scale: float, k: int) -> float:
    """Two-sided tail ``P[|X| > k] = 2 p**(k+1) / (1+p)`` of the discrete Laplace.

    Here ``p = exp(-1/scale)``.  Evaluated in log space so that very small
    tails do not lose precision.

    >>> round(discrete_laplace_tail(1.0, 0), 6)
    0.537883
    >>> discrete_laplace_tail(1.0, 2) < discrete_laplace_tail(1.0, 1)
    True
    """
    b = _check_scale_float(scale)
    kk = _int_at_least("k", k, 0, "pass a half-width k >= 0")
    p = math.exp(-1.0 / b)
    return math.exp(math.log(2.0) - (kk + 1) / b - math.log1p(p))


def discrete_laplace_halfwidth(scale: float, level: float) -> int:
    """Smallest integer ``k >= 0`` with ``P[|X| <= k] >= level`` (discrete Laplace).

    Solving ``1 - 2 p**(k+1)/(1+p) >= level`` for ``k`` gives the closed form
    ``k = ceil(scale * log(2 / ((1 - level)(1 + p))) - 1)``; a +-1 check
    against :func:`discrete_laplace_tail` removes floating-point rounding at
    the boundary.

    >>> discrete_laplace_halfwidth(1.0, 0.95)
    3
    >>> discrete_laplace_halfwidth(10.0, 0.5)
    7
    """
    b = _check_scale_float(scale)
    q = _open_unit("level", level, _LEVEL_HINT)
    p = math.exp(-1.0 / b)
    one_minus_level = 1.0 - q
    x = b * (math.log(2.0) - math.log1p(-q) - math.log1p(p)) - 1.0
    k = max(0, math.ceil(x))

    def ok(j: int) -> bool:
        return discrete_laplace_tail(b, j) <= one_minus_level

    while not ok(k):
        k += 1
    while k > 0 and ok(k - 1):
        k -= 1
    return k


# ---------------------------------------------------------------------------
# continuous Gaussian
# ---------------------------------------------------------------------------


def gaussian_halfwidth(sigma: float, level: float) -> float:
    """Half-width ``x`` with ``P[|X| <= x] = level`` for ``X ~ N(0, sigma**2)``.

    ``x = sigma * Phi^{-1}((1 + level)/2)``, evaluated as
    ``-sigma * Phi^{-1}((1 - level)/2)`` so levels close to 1 keep precision.

    >>> round(gaussian_halfwidth(1.0, 0.95), 6)
    1.959964
    """
    s = _positive("sigma", sigma, "pass the standard deviation sigma > 0")
    q = _open_unit("level", level, _LEVEL_HINT)
    return -s * float(ndtri((1.0 - q) / 2.0))


def _log_gaussian_delta(s: float, epsilon: float) -> float:
    """log delta(s) of the Gaussian mechanism, noise N(0, (s*Delta)**2) [BW18 Thm 8].

    delta(s) = Phi(x1) - e^eps Phi(x2), x1 = 1/(2s) - eps*s, x2 = x1 - 1/s.

    Writing Phi(x) = erfcx(-x/sqrt2) exp(-x**2/2) / 2 and using the exact
    identity x2**2 = x1**2 + 2 eps, the e^eps factor cancels analytically:

        delta(s) = exp(-x1**2/2) * (erfcx(u1) - erfcx(u2)) / 2,  u_i = -x_i/sqrt2.

    This avoids the catastrophic cancellation of the textbook form when
    epsilon is small and delta tiny (both terms ~1e-16 and nearly equal):
    the only subtraction left is of two O(1) erfcx values.
    """
    x1 = 0.5 / s - epsilon * s
    x2 = -0.5 / s - epsilon * s
    if x1 > 20.0:
        # delta ~ 1 here; erfcx(u1) would overflow for x1 > ~37.
        d = float(erfc(-x1 / math.sqrt(2.0))) / 2.0 - math.exp(
            epsilon - x2 * x2 / 2.0
        ) * float(erfcx(-x2 / math.sqrt(2.0))) / 2.0
        return math.log(d) if d > 0.0 else -1e300
    diff = float(erfcx(-x1 / math.sqrt(2.0))) - float(erfcx(-x2 / math.sqrt(2.0)))
    if diff <= 0.0:
        # Only reachable for absurd (s, eps) where the difference underflows;
        # a huge negative finite value keeps brentq well defined.
        return -1e300
    return math.log(0.5) - 0.5 * x1 * x1 + math.log(diff)


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Exact delta of the continuous Gaussian mechanism at a given sigma [BW18 Thm 8].

    ``delta = Phi(Delta/(2 sigma) - eps sigma/Delta)
    - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta)``, evaluated in the
    cancellation-free erfcx form described in ``_log_gaussian_delta``.
    Useful for reporting what a given sigma buys at another epsilon.

    >>> f"{gaussian_delta(4.0, 1.0, 1.0):.4e}"
    '2.9243e-06'
    """
    s = _positive("sigma", sigma, "pass the standard deviation sigma > 0")
    eps = _nonnegative("epsilon", epsilon, _EPS_HINT)
    sens = _positive("sensitivity", sensitivity, _SENS_HINT)
    return min(1.0, math.exp(_log_gaussian_delta(s / sens, eps)))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest Gaussian sigma giving (epsilon, delta)-DP [BW18, Algorithm 1].

    Balle & Wang (2018, Thm 8) show that ``N(0, sigma**2)`` noise on a query of
    L2 sensitivity ``Delta`` is (epsilon, delta)-DP iff

        Phi(Delta/(2 sigma) - eps sigma/Delta)
            - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta) <= delta,

    and the left side is strictly decreasing in sigma, so the optimal sigma is
    its unique root.  We find it with :func:`scipy.optimize.brentq` on
    ``log delta(sigma)`` in ``log sigma``, using a cancellation-free erfcx form
    of the left side (see ``_log_gaussian_delta``).  The bracket is analytic:
    dropping the (positive) second term gives the upper end
    ``sigma_hi = Delta (z + sqrt(z**2 + 2 eps)) / (2 eps)`` with
    ``z = -Phi^{-1}(delta)``; halving from there gives the lower end, almost
    always in one step.  A solve takes well under a millisecond.

    The root is then multiplied by ``1 + SIGMA_ROUND_UP`` (``1 + 1e-9``), far
    more than the root's floating-point error (~1e-12 relative), so rounding
    can only add noise, never remove privacy.

    Unlike the classical ``sigma = Delta sqrt(2 ln(1.25/delta)) / eps``
    [Dwork & Roth 2014, Thm A.1], the result is valid for every eps > 0 and is
    always smaller where the classical bound applies (eps < 1).

    >>> s = analytic_gaussian_sigma(1.0, 1e-6, 1.0)
    >>> round(s, 4)
    4.2247
    >>> round((2 * math.log(1.25 / 1e-6)) ** 0.5, 4)  # classical (eps < 1 only)
    5.2988
    """
    eps = _positive("epsilon", epsilon, _EPS_HINT)
    dlt = _open_unit("delta", delta, _DELTA_HINT)
    sens = _positive("sensitivity", sensitivity, _SENS_HINT)
    unit = _analytic_unit_sigma(eps, dlt) * (1.0 + SIGMA_ROUND_UP)
    # Belt and braces: the rounded-up value must satisfy the inequality.
    while _log_gaussian_delta(unit, eps) > math.log(dlt):  # pragma: no cover
        unit *= 1.0 + SIGMA_ROUND_UP
    return sens * unit


def _analytic_unit_sigma(eps: float, dlt: float) -> float:
    """Root s of delta(s) = dlt for sensitivity 1 (no rounding up)."""
    log_target = math.log(dlt)

    def h(log_s: float) -> float:
        return _log_gaussian_delta(math.exp(log_s), eps) - log_target

    z = -float(ndtri(dlt))
    s_hi = (z + math.sqrt(z * z + 2.0 * eps)) / (2.0 * eps)
    hi = math.log(s_hi)
    # Analytically h(hi) < 0; this loop only guards against rounding.
    while h(hi) > 0.0:
        hi += math.log(2.0)
    lo = hi - math.log(2.0)
    # delta(s) -> 1 as s -> 0, so this terminates; the cap is a safeguard.
    for _ in range(2000):
        if h(lo) > 0.0:
            break
        hi = lo  # also a valid (tighter) upper end
        lo -= math.log(2.0)
    else:  # pragma: no cover - unreachable for valid inputs
        raise ArithmeticError("could not bracket the analytic Gaussian sigma")
    if h(hi) == 0.0:
        return math.exp(hi)
    root = float(brentq(h, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps))
    return math.exp(root)


# ---------------------------------------------------------------------------
# discrete Gaussian
# ---------------------------------------------------------------------------


def _dg_log_norm(sigma: float) -> float:
    """log Z, Z = sum_k exp(-k**2 / (2 sigma**2)) over all integers k.

    For sigma >= 1 use the exact Poisson-summation (Jacobi theta) identity
    Z = sigma sqrt(2 pi) (1 + 2 sum_{n>=1} exp(-2 pi**2 sigma**2 n**2)),
    whose n >= 4 terms are < exp(-315) and therefore dropped; for small sigma
    the direct sum converges immediately.
    """
    if sigma >= 1.0:
        q = 2.0 * math.pi**2 * sigma * sigma
        corr = 2.0 * sum(math.exp(-q * n * n) for n in (1, 2, 3))
        return math.log(sigma * math.sqrt(2.0 * math.pi)) + math.log1p(corr)
    k = np.arange(1, 64, dtype=np.float64)
    return math.log1p(2.0 * float(np.sum(np.exp(-k * k / (2.0 * sigma * sigma)))))


def _window(sigma: float) -> int:
    return int(math.ceil(_WINDOW_SIGMAS * sigma)) + 16


def _dg_delta_shift(sigma2: float, epsilon: float, shift: int) -> float:
    """Hockey-stick divergence H_{e^eps}(Y + shift || Y), Y ~ N_Z(0, sigma2).

    Equals P[Y > t] - e^eps P[Y > t + shift] with t = eps sigma2/shift - shift/2
    [CKS20 Thm 7], but is summed as the nonnegative series

        sum_{y > t} p(y) (1 - exp(-(y - t) shift / sigma2)),

    whose terms are each computed to full relative precision with expm1, so
    there is no cancellation between two nearly equal tails.
    """
    sigma = math.sqrt(sigma2)
    c = shift
    t = epsilon * sigma2 / c - c / 2.0
    y0 = math.floor(t) + 1  # first integer strictly above t
    if y0 > 0 and y0 / sigma > 40.0:
        # Every term is below p(y0) <= exp(-800) (Z >= 1) and they decay
        # geometrically, so delta underflows to 0 in double precision.
        return 0.0
    w = _window(sigma)
    m = max(y0, 0)  # where p is largest on {y >= y0}
    lo = max(y0, -w)
    hi = m + w
    if hi < lo:
        return 0.0
    y = np.arange(lo, hi + 1, dtype=np.float64)
    log_z = _dg_log_norm(sigma)
    # (y - t) c / sigma2 written as (c (2y + c) - 2 eps sigma2) / (2 sigma2):
    # c(2y + c) is an exactly representable integer, so no loss near y ~ t.
    excess = (c * (2.0 * y + c) - 2.0 * epsilon * sigma2) / (2.0 * sigma2)
    terms = np.exp(-(y * y) / (2.0 * sigma2) - log_z) * -np.expm1(-excess)
    return float(np.sum(terms[excess > 0.0]))


def discrete_gaussian_delta(sigma2: float, epsilon: float, sensitivity: int) -> float:
    """Exact delta of the discrete Gaussian mechanism [CKS20, Theorem 7].

    Adding ``X ~ N_Z(0, sigma2)`` (``P[x] ∝ exp(-x**2/(2 sigma2))`` on the
    integers) to an integer query with sensitivity ``Delta`` is
    (epsilon, delta)-DP for exactly

        delta = P[X > eps sigma2/Delta - Delta/2]
                - e^eps P[X > eps sigma2/Delta + Delta/2],

    and no smaller delta.  The probabilities are obtained by summing the
    normalised pmf (normalising constant via the Poisson-summation identity)
    over a window of +-20 sigma around the relevant range; the neglected terms
    are below ``exp(-200)`` relative.  The difference is summed term by term
    as a series of nonnegative numbers, so tiny deltas keep full relative
    precision.

    ``epsilon = 0`` is allowed (delta is then the total-variation distance).

    The cost is ~40 sigma array operations, so sigma is capped at
    ``DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX`` (1e5): an exact answer beyond that
    would need an asymptotic expansion whose error we would have to bound, and
    :func:`discrete_gaussian_sigma` instead uses a rigorous zCDP argument
    there.

    >>> f"{discrete_gaussian_delta(16.0, 1.0, 1):.4e}"
    '3.0555e-06'
    >>> f"{gaussian_delta(4.0, 1.0, 1.0):.4e}"  # continuous, same sigma
    '2.9243e-06'
    >>> ratio = discrete_gaussian_delta(1e4, 0.02, 1) / gaussian_delta(100, 0.02, 1)
    >>> round(ratio, 4)  # the gap closes as sigma grows
    1.0
    """
    s2 = _positive("sigma2", sigma2, _SIGMA2_HINT)
    eps = _nonnegative("epsilon", epsilon, _EPS_HINT)
    sens = _int_at_least(
        "sensitivity", sensitivity, 1, "pass the integer sensitivity of the query, e.g. 1"
    )
    sigma = math.sqrt(s2)
    if sigma > DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX:
        raise ValueError(
            f"sigma2 = {s2!r} gives sigma = {sigma:.4g}, above the exact-summation "
            f"limit {DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX:g}; use "
            "discrete_gaussian_sigma (which falls back to a zCDP bound) or a "
            "smaller sensitivity/scale"
        )
    return min(1.0, _dg_delta_shift(s2, eps, sens))


def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: int) -> float:
    """Sigma of discrete Gaussian noise for (epsilon, delta)-DP, verified exactly.

    CKS20 (Sec. 2.2 and Fig. 1) show the privacy of ``N_Z(0, sigma**2)`` is
    essentially that of the continuous ``N(0, sigma**2)``, but not identical,
    so the continuous answer is only a starting point:

    1. ``sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)``
       [BW18];
    2. compute the exact discrete delta at that sigma with
       :func:`discrete_gaussian_delta` [CKS20 Thm 7];
    3. if it exceeds ``delta``, grow sigma by factors ``1 + 1e-6 * 4**j``
       until it holds (normally zero or one step; only tiny sigmas, i.e.
       huge epsilon, where the lattice matters, need more), then bisect back
       towards the last failing value, keeping only verified values.

    So the returned sigma always passes the exact check (at ``sigma * sigma``
    in floating point).  Note that, unlike the continuous case, the discrete
    delta is *not* monotone in sigma when sigma is small (a few units of
    ``Delta`` or less): it saw-tooths upwards between the points where
    ``eps sigma**2 / Delta - Delta/2`` crosses an integer.  Rounding the
    result up can therefore, in that regime, slightly break the guarantee;
    to hand an exact rational to the sampler use
    :func:`discrete_gaussian_sigma2`, which rounds and re-verifies.

    If the analytic sigma exceeds ``DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX`` (the
    exact sum would be too slow), we instead return the larger of the
    analytic sigma and the sigma from the rigorous zCDP route: the discrete
    Gaussian is ``Delta**2/(2 sigma**2)``-zCDP [CKS20 Thm 14] and a
    rho-zCDP mechanism is (``zcdp_to_approx_epsilon(rho, delta)``, delta)-DP
    [CKS20 Cor 13].  This costs some extra noise (about 5-10% more sigma for
    common parameters) but needs no approximation.

    >>> s = discrete_gaussian_sigma(1.0, 1e-6, 1)
    >>> round(s, 4)  # continuous: 4.2247
    4.2308
    >>> discrete_gaussian_delta(s * s, 1.0, 1) <= 1e-6
    True
    """
    eps = _positive("epsilon", epsilon, _EPS_HINT)
    dlt = _open_unit("delta", delta, _DELTA_HINT)
    sens = _int_at_least(
        "sensitivity", sensitivity, 1, "pass the integer sensitivity of the query, e.g. 1"
    )
    return _verified_sigma(eps, dlt, float(sens), float(sens),
                           lambda sigma2: _dg_delta_shift(sigma2, eps, sens), DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX)


# The exact delta series are sums of nonnegative terms, each to about 1e-16 relative: a relative 1e-9 taken off the
# target delta keeps their rounding on the safe side.
_SUM_MARGIN = 1e-9


def _verified_sigma(
    epsilon: float, delta: float, l2: float, zcdp_l2: float, delta_at: Callable[[float], float], sigma_max: float,
) -> float:
    """The smallest sigma near the analytic Gaussian's for L2 sensitivity ``l2`` whose exact discrete delta
    (``delta_at(sigma**2)``) is at most ``delta``; beyond ``sigma_max`` the zCDP route's sigma (for an L2
    sensitivity of ``zcdp_l2``), the larger of it and the analytic one (see :func:`discrete_gaussian_sigma`)."""
    sigma0 = analytic_gaussian_sigma(epsilon, delta, l2)

    def by_zcdp() -> float:
        return max(sigma0, zcdp_sigma(zcdp_rho_for(epsilon, delta), zcdp_l2))

    if sigma0 > sigma_max:
        return by_zcdp()

    def ok(sig: float) -> bool:  # the sums' floating-point error (~1e-14 relative) kept on the safe side
        return sig <= sigma_max and delta_at(sig * sig) <= delta * (1 - _SUM_MARGIN)

    if ok(sigma0):
        return sigma0
    bad = sigma0
    good = math.nan
    for j in range(40):
        cand = sigma0 * (1.0 + 1e-6 * 4.0**j)
        if ok(cand):
            good = cand
            break
        bad = cand
    if math.isnan(good):  # pragma: no cover - needs sigma beyond the cap
        return by_zcdp()
    # Tighten: bisection keeps `good` verified whatever the shape of the
    # discrete delta, so soundness never depends on monotonicity.
    for _ in range(40):
        if good / bad - 1.0 < 1e-7:
            break
        mid = math.sqrt(good * bad)
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def discrete_gaussian_sigma2(
    epsilon: float, delta: float, sensitivity: int, bits: int = 40
) -> Fraction:
    """Exact dyadic ``sigma**2`` for the discrete Gaussian sampler, verified.

    Takes :func:`discrete_gaussian_sigma`, squares it exactly, rounds up to a
    rational with a power-of-two denominator and about ``bits`` significant
    bits (small numerators/denominators keep the exact sampler on its fast
    path), and re-runs the exact CKS20 Thm 7 check *at that very value*
    (``float`` of it is exact because ``bits <= 52``), nudging upwards until
    it passes.  Re-verifying matters because the discrete delta is not
    monotone in sigma for small sigma (see :func:`discrete_gaussian_sigma`).
    Above ``DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX`` the zCDP-based sigma is used,
    which is monotone, so rounding up is enough.

    >>> s2 = discrete_gaussian_sigma2(1.0, 1e-6, 1)
    >>> s2.denominator & (s2.denominator - 1) == 0  # power of two
    True
    >>> s2 >= Fraction(discrete_gaussian_sigma(1.0, 1e-6, 1)) ** 2
    True
    >>> discrete_gaussian_delta(float(s2), 1.0, 1) <= 1e-6
    True
    """
    eps = _positive("epsilon", epsilon, _EPS_HINT)
    dlt = _open_unit("delta", delta, _DELTA_HINT)
    sens = _int_at_least(
        "sensitivity", sensitivity, 1, "pass the integer sensitivity of the query, e.g. 1"
    )
    if isinstance(bits, bool) or not isinstance(bits, int) or not 8 <= bits <= 52:
        raise ValueError(
            f"bits must be an integer between 8 and 52, got {bits!r}; "
            "52 is the most for which float(sigma2) is exact"
        )
    return _verified_sigma2(discrete_gaussian_sigma(eps, dlt, sens), bits,
                            lambda sigma2: _dg_delta_shift(sigma2, eps, sens) <= dlt * (1 - _SUM_MARGIN),
                            DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX)


def _verified_sigma2(sigma: float, bits: int, private_at: Callable[[float], bool], sigma_max: float) -> Fraction:
    """``sigma**2`` rounded up to a dyadic rational of about ``bits`` bits, nudged up until ``private_at`` (the
    exact check) holds at that very value; above ``sigma_max`` the sigma came from the monotone zCDP route, so
    rounding up is enough."""
    s2 = _round_up_dyadic(Fraction(sigma) ** 2, bits)
    if math.sqrt(float(s2)) > sigma_max:
        return s2
    step = Fraction(1, 2**bits)
    for _ in range(200):
        if private_at(float(s2)):
            return s2
        # Out of a saw-tooth: move up geometrically (relative 2**-bits, doubling).
        s2 = _round_up_dyadic(s2 * (1 + step), bits)
        step *= 2
    raise ArithmeticError(  # pragma: no cover - the steps reach 2**200
        "could not find a verified sigma2; please report this"
    )


# Below this relative error the sum of discrete Gaussians is treated through its Gaussian bound (see
# _dg_vector_delta); above it (sigma below about 1.47) the pmfs are convolved directly, which is cheap there.
_THETA_ERROR_MAX = 1e-9


def _theta_error(sigma2: float) -> float:
    """eta = 2 sum_{n>=1} exp(-pi**2 sigma2 n**2): the relative error of Jacobi's theta identity at tau**2 >= sigma2/2."""
    terms = [math.exp(-math.pi**2 * sigma2 * n * n) for n in range(1, 40)]
    return 2.0 * math.fsum(terms) * (1.0 + 1e-12)  # the dropped terms are below exp(-1600 pi**2 sigma2)


def _vector_sigma_max(coordinates: int) -> float:
    """The largest sigma whose vector check stays exact: the scalar check's cap at sigma * sqrt(coordinates)."""
    return DISCRETE_GAUSSIAN_EXACT_SIGMA_MAX / math.sqrt(coordinates)


def _dg_vector_delta(sigma2: float, epsilon: float, shift: int, coordinates: int) -> float:
    """An upper bound, tight to ``_THETA_ERROR_MAX`` relative, on the hockey-stick divergence between independent
    N_Z(0, sigma2) noise on ``coordinates`` integers and the same shifted by ``shift`` in each.

    The privacy loss is a function of the noises' sum S alone, ``(shift (2 S + coordinates shift) - 2 epsilon
    sigma2) / (2 sigma2)`` above epsilon, so delta is a nonnegative series over the pmf of S. That pmf is within
    a factor ((1 + eta) / (1 - eta))**(coordinates - 1) of N_Z(0, coordinates sigma2)'s: convolving a
    kernel exp(-y**2 / (2 k sigma2)) with N_Z(0, sigma2) gives exp(-s**2 / (2 (k+1) sigma2)) times
    sum_y exp(-(y - mu)**2 / (2 tau**2)), tau**2 = k sigma2 / (k + 1) >= sigma2 / 2, which is
    tau sqrt(2 pi) (1 + 2 sum_n exp(-2 pi**2 tau**2 n**2) cos(2 pi n mu)) by Jacobi's theta identity (Poisson
    summation): within 1 +- eta of a constant, eta = :func:`_theta_error`; normalising costs the (1 - eta)
    factor. And on that Gaussian the series is exactly the scalar one, :func:`_dg_delta_shift` at variance
    coordinates * sigma2 and shift coordinates * shift. For small sigma (eta above ``_THETA_ERROR_MAX``) the
    pmf of S is the direct convolution instead (every entry a sum of nonnegative products: no cancellation).
    """
    if coordinates == 1:
        return _dg_delta_shift(sigma2, epsilon, shift)
    eta = _theta_error(sigma2)
    if eta <= _THETA_ERROR_MAX:
        factor = math.exp((coordinates - 1) * (math.log1p(eta) - math.log1p(-eta)))
        return factor * _dg_delta_shift(coordinates * sigma2, epsilon, coordinates * shift)
    sigma = math.sqrt(sigma2)
    w = _window(sigma)
    y = np.arange(-w, w + 1, dtype=np.float64)
    one = np.exp(-(y * y) / (2.0 * sigma2) - _dg_log_norm(sigma))
    pmf = one
    for _ in range(coordinates - 1):
        pmf = np.convolve(pmf, one)
    total = np.arange(-coordinates * w, coordinates * w + 1, dtype=np.float64)
    excess = (shift * (2.0 * total + coordinates * shift) - 2.0 * epsilon * sigma2) / (2.0 * sigma2)
    positive = excess > 0.0
    return float(np.sum(pmf[positive] * -np.expm1(-excess[positive])))


def discrete_gaussian_vector_delta(sigma2: float, epsilon: float, sensitivity: int, coordinates: int) -> float:
    """Delta of independent ``N_Z(0, sigma2)`` noise on an integer vector of which at most ``coordinates``
    entries change, each by at most ``sensitivity``: exact, or (sigma above about 1.47) an upper bound within a
    relative 1e-9 of it.

    The worst neighbours move ``coordinates`` entries by exactly ``sensitivity``:
    the discrete Gaussian location family has a monotone likelihood ratio, so for
    0 <= v <= v' the same (randomised) threshold tests are most powerful against
    N_Z(v) and N_Z(v') (Neyman-Pearson), and N_Z(v') puts less mass below every
    threshold: the trade-off function of N_Z(0) against N_Z(v') is below that
    against N_Z(v) (and |v| is all that matters, by symmetry). A pair with the
    lower trade-off function can be post-processed into the other (Blackwell's
    theorem, as in Dong, Roth & Su 2022, Gaussian DP), coordinate by coordinate, so
    the product is most distinguishable when every moved coordinate moves by
    ``sensitivity``; delta(epsilon) can only grow with distinguishability. For that
    neighbour the privacy loss depends only on the sum of the noises, and delta is
    a series of nonnegative terms over its pmf: the direct convolution of the
    coordinates' pmfs for small sigma; above, the pmf of ``N_Z(0, coordinates *
    sigma2)`` times a factor that Jacobi's theta identity bounds (see
    ``_dg_vector_delta``), which makes it the scalar series at variance
    ``coordinates * sigma2`` and shift ``coordinates * sensitivity``. With
    ``coordinates = 1`` this is :func:`discrete_gaussian_delta` [CKS20 Thm 7].

    >>> one = discrete_gaussian_delta(400.0, 1.0, 5)
    >>> bool(abs(discrete_gaussian_vector_delta(400.0, 1.0, 5, 1) - one) < 1e-15)
    True
    >>> four = discrete_gaussian_vector_delta(1600.0, 1.0, 5, 4)  # sigma doubled for four coordinates
    >>> f"{four:.4e}", f"{gaussian_delta(40.0, 1.0, 10.0):.4e}"  # and the continuous Gaussian at L2 = 2 * 5
    ('2.9236e-06', '2.9243e-06')
    """
    s2 = _positive("sigma2", sigma2, _SIGMA2_HINT)
    eps = _nonnegative("epsilon", epsilon, _EPS_HINT)
    sens = _int_at_least("sensitivity", sensitivity, 1, "pass the integer sensitivity of each coordinate, e.g. 1")
    count = _int_at_least("coordinates", coordinates, 1, "pass how many coordinates one person may move, e.g. 1")
    if math.sqrt(s2) > _vector_sigma_max(count):
        raise ValueError(
            f"sigma2 = {s2!r} with {count} coordinates is above the exact summation's limit (sigma <= "
            f"{_vector_sigma_max(count):.4g}); use discrete_gaussian_vector_sigma2, which falls back to a zCDP bound"
        )
    return min(1.0, _dg_vector_delta(s2, eps, sens, count))


def discrete_gaussian_vector_sigma2(
    epsilon: float, delta: float, sensitivity: int, coordinates: int, bits: int = 40
) -> Fraction:
    """Exact dyadic ``sigma**2`` of discrete Gaussian noise on each coordinate of a vector of which one person
    moves at most ``coordinates`` entries by at most ``sensitivity`` each: (epsilon, delta)-DP, verified by
    :func:`discrete_gaussian_vector_delta` at that very value (as :func:`discrete_gaussian_sigma2` for one
    coordinate, from the analytic Gaussian's sigma at L2 sensitivity ``sqrt(coordinates) * sensitivity``).
    Beyond the convolution's limit, the zCDP route for that L2 sensitivity (CKS20 Thm 14, Cor 13).

    >>> s2 = discrete_gaussian_vector_sigma2(1.0, 1e-6, 5, 4)
    >>> discrete_gaussian_vector_delta(float(s2), 1.0, 5, 4) <= 1e-6
    True
    >>> round(float(s2) ** 0.5, 2), round(analytic_gaussian_sigma(1.0, 1e-6, 10.0), 2)  # as the continuous one
    (42.25, 42.25)
    """
    eps = _positive("epsilon", epsilon, _EPS_HINT)
    dlt = _open_unit("delta", delta, _DELTA_HINT)
    sens = _int_at_least("sensitivity", sensitivity, 1, "pass the integer sensitivity of each coordinate, e.g. 1")
    count = _int_at_least("coordinates", coordinates, 1, "pass how many coordinates one person may move, e.g. 1")
    if count == 1:
        return discrete_gaussian_sigma2(eps, dlt, sens, bits)
    limit = _vector_sigma_max(count)
    l2 = math.sqrt(count) * sens
    # The zCDP route's sigma for the exact L2 norm: it rounds sqrt(count) * sens up to the next float at most.
    sigma = _verified_sigma(eps, dlt, l2, math.nextafter(l2, math.inf),
                            lambda sigma2: _dg_vector_delta(sigma2, eps, sens, count), limit)
    return _verified_sigma2(sigma, bits,
                            lambda sigma2: _dg_vector_delta(sigma2, eps, sens, count) <= dlt * (1 - _SUM_MARGIN), limit)


def _round_up_dyadic(value: Fraction, bits: int) -> Fraction:
    """Smallest k / 2**e >= value, with e chosen so k has about ``bits`` bits."""
    e = bits - (value.numerator.bit_length() - value.denominator.bit_length())
    scale = Fraction(2) ** e
    return Fraction(math.ceil(value * scale)) / scale


def discrete_gaussian_variance(sigma2: float) -> float:
    """Variance of ``N_Z(0, sigma2)`` (``P[x] ∝ exp(-x**2 / (2 sigma2))``).

    It is always below ``sigma2`` [CKS20 Prop 19].  For ``sigma >= 1`` we use
    the exact Poisson-summation (theta function) identity

        Var = sigma2 (1 - 8 pi**2 sigma2 S1 / (1 + 2 S0)),
        S0 = sum_{n>=1} q**(n**2), S1 = sum_{n>=1} n**2 q**(n**2),
        q = exp(-2 pi**2 sigma2),

    in which the correction is ~8 pi**2 sigma2 q; it drops below double
    resolution (2**-53) once sigma >~ 1.5, where the result is ``sigma2``
    to machine precision, which is why no sum over ~sigma points is needed.
    For ``sigma < 1`` the pmf is summed directly (|x| <= 64 suffices:
    exp(-64**2/2) underflows).

    >>> round(discrete_gaussian_variance(0.25), 6)
    0.215013
    >>> discrete_gaussian_variance(100.0)
    100.0
    """
    s2 = _positive("sigma2", sigma2, _SIGMA2_HINT)
    if s2 >= 1.0:
        q = 2.0 * math.pi**2 * s2
        n = (1.0, 2.0, 3.0)
        s0 = sum(math.exp(-q * k * k) for k in n)
        s1 = sum(k * k * math.exp(-q * k * k) for k in n)
        return s2 * (1.0 - 4.0 * math.pi**2 * s2 * 2.0 * s1 / (1.0 + 2.0 * s0))
    k = np.arange(1, 65, dtype=np.float64)
    w = np.exp(-k * k / (2.0 * s2))
    return float(2.0 * np.sum(k * k * w) / (1.0 + 2.0 * np.sum(w)))


def _dg_upper_sum(m: float, sigma: float) -> float:
    """sum_{x >= m} exp(-x**2/(2 sigma**2)) for integer m >= 0 and sigma > _DG_SUM_SIGMA_MAX.

    Euler-Maclaurin: integral + f(m)/2 - f'(m)/12 + f'''(m)/720, remainder
    <= 2 zeta(4)/(2 pi)**4 * int |f''''| ~ 1.4e-3 * O((m/sigma)**4 / sigma**4)
    relative, i.e. < 1e-14 for sigma > 1e4 and m/sigma < 40.
    """
    u = m / sigma
    f = math.exp(-0.5 * u * u)
    integral = sigma * math.sqrt(math.pi / 2.0) * float(erfc(u / math.sqrt(2.0)))
    d1 = -u / sigma * f
    d3 = (3.0 * u - u**3) / sigma**3 * f
    return integral + f / 2.0 - d1 / 12.0 + d3 / 720.0


def discrete_gaussian_halfwidth(sigma2: float, level: float) -> int:
    """Smallest integer ``k`` with ``P[|X| <= k] >= level`` for ``X ~ N_Z(0, sigma2)``.

    By symmetry ``P[|X| > k] = 2 P[X >= k + 1]``, so ``k`` is one below
    :func:`discrete_gaussian_tail_point` at ``(1 - level) / 2`` (tails summed
    from the far end, so levels close to 1 keep precision).

    >>> discrete_gaussian_halfwidth(1.0, 0.95)
    2
    >>> discrete_gaussian_halfwidth(100.0, 0.95)
    20
    """
    s2 = _positive("sigma2", sigma2, _SIGMA2_HINT)
    q = _open_unit("level", level, _LEVEL_HINT)
    return discrete_gaussian_tail_point(s2, (1.0 - q) / 2.0) - 1


# The smallest tail probability a threshold is computed for: below it the pmf's terms underflow.
SMALLEST_TAIL = 1e-250


def discrete_gaussian_tail_point(sigma2: float, probability: float) -> int:
    """Smallest integer ``m >= 1`` with ``P[X >= m] <= probability`` for ``X ~ N_Z(0, sigma2)``.

    Computed in tail space, never through ``1 - probability`` (which keeps only
    about 1e-16 of absolute precision): for ``sigma <= 1e4`` the pmf over
    ``[0, m_max]`` is summed from the far end, where ``m_max`` lies beyond the
    continuous tail point by two sigma and far past it; for larger sigma the
    Euler-Maclaurin tail (:func:`_dg_upper_sum`, accurate to ~1e-14 relative at
    that size) is searched from the continuous quantile. ``probability`` must be at least
    :data:`SMALLEST_TAIL` (a threshold beyond that is refused rather than trusted to underflowing terms).

    >>> discrete_gaussian_tail_point(100.0, 1e-6), discrete_gaussian_tail_point(1.0, 0.2)
    (49, 2)
    """
    s2 = _positive("sigma2", sigma2, _SIGMA2_HINT)
    p = _finite_float("probability", probability, "a tail probability, e.g. 1e-6")
    if not SMALLEST_TAIL <= p < 1:
        raise ValueError(f"probability must lie in [{SMALLEST_TAIL:g}, 1), got {probability!r}: use a larger delta")
    sigma = math.sqrt(s2)
    z = -float(ndtri(p))  # the continuous tail point, in sigmas
    log_z = _dg_log_norm(sigma)
    if sigma <= _DG_SUM_SIGMA_MAX:
        top = int(math.ceil((z + 2.0) * sigma)) + _window(sigma)
        x = np.arange(top + 1, dtype=np.float64)
        pmf = np.exp(-(x * x) / (2.0 * s2) - log_z)
        upper = np.cumsum(pmf[::-1])[::-1]  # upper[j] = P[X >= j] (the rest beyond top is below 1e-87 of it)
        return max(int(np.flatnonzero(upper <= p)[0]), 1)

    def tail_at(m: int) -> float:
        return _dg_upper_sum(float(m), sigma) / math.exp(log_z)

    m = max(1, math.ceil(sigma * z))
    while tail_at(m) > p:
        m += 1
    while m > 1 and tail_at(m - 1) <= p:
        m -= 1
    return m


# ---------------------------------------------------------------------------
# zCDP
# ---------------------------------------------------------------------------


def zcdp_sigma(rho: float, sensitivity: float) -> float:
    """Gaussian sigma ``Delta / sqrt(2 rho)`` for rho-zCDP.

    Holds for continuous Gaussian noise [BS16 Prop 1.6] and for the discrete
    Gaussian with integer sensitivity [CKS20 Thm 14].  The result is nudged up
    by two ulps so that rounding can only increase the noise.

    >>> zcdp_sigma(0.5, 1.0)
    1.0000000000000004
    >>> round(zcdp_sigma(0.125, 3.0), 12)
    6.0
    """
    r = _positive("rho", rho, _RHO_HINT)
    sens = _positive("sensitivity", sensitivity, _SENS_HINT)
    s = sens / math.sqrt(2.0 * r)
    return math.nextafter(math.nextafter(s, math.inf), math.inf)


def _zcdp_eps_at(alpha: float, rho: float, log_inv_delta: float) -> float:
    # rho alpha + log(1/(alpha delta))/(alpha - 1) + log(1 - 1/alpha)
    return (
        rho * alpha
        + (log_inv_delta - math.log(alpha)) / (alpha - 1.0)
        + math.log1p(-1.0 / alpha)
    )


def zcdp_to_approx_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon the tight zCDP conversion gives: rho-zCDP => (eps, delta)-DP.

    Uses the bound of CKS20 Corollary 13 (which improves on BS16 Prop 1.3's
    ``rho + 2 sqrt(rho log(1/delta))``):

        eps = inf_{alpha > 1}  rho alpha + log(1/(alpha delta))/(alpha - 1)
                               + log(1 - 1/alpha).

    The objective's derivative simplifies to
    ``rho - (log(1/delta) - log alpha)/(alpha - 1)**2``, which is increasing in
    alpha and changes sign exactly once, so the minimiser is the root of
    ``rho (alpha-1)**2 = log(1/delta) - log(alpha)``, found by brentq in the
    analytic bracket ``alpha - 1 in [a_lo, sqrt(log(1/delta)/rho)]``.  Any
    alpha yields a valid bound, so the value is exact up to rounding, which we
    push upwards by a relative 1e-12.  The result is clipped at 0.

    >>> round(zcdp_to_approx_epsilon(0.5, 1e-6), 4)
    5.2215
    >>> zcdp_to_approx_epsilon(0.5, 1e-6) < 0.5 + 2 * (0.5 * math.log(1e6)) ** 0.5
    True
    """
    r = _positive("rho", rho, _RHO_HINT)
    dlt = _open_unit("delta", delta, _DELTA_HINT)
    big_l = -math.log(dlt)

    def dobj(a: float) -> float:  # derivative of the objective at alpha = 1 + a
        return r - (big_l - math.log1p(a)) / (a * a)

    a_hi = math.sqrt(big_l / r)
    # At a_lo: r a**2 <= L/8 and log(1+a) < L/2, so dobj(a_lo) < 0.
    a_lo = min(math.sqrt(big_l / (2.0 * r)), math.expm1(big_l / 2.0)) / 2.0
    if dobj(a_hi) <= 0.0:  # pragma: no cover - excluded analytically
        a_star = a_hi
    else:
        a_star = float(brentq(dobj, a_lo, a_hi, xtol=1e-300, rtol=1e-14))
    eps = _zcdp_eps_at(1.0 + a_star, r, big_l)
    return max(0.0, eps * (1.0 + 1e-12))


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """Largest rho (to ~1e-12, rounded down) whose conversion gives <= epsilon: rho-zCDP => (epsilon, delta)-DP.

    >>> round(zcdp_rho_for(1.0, 1e-9), 6)
    0.014973
    >>> zcdp_to_approx_epsilon(zcdp_rho_for(1.0, 1e-9), 1e-9) <= 1.0
    True
    """
    log_inv = -math.log(delta)

    def g(log_r: float) -> float:
        return zcdp_to_approx_epsilon(math.exp(log_r), delta) - epsilon

    # eps(rho) >= rho, and eps(rho) <= rho + 2 sqrt(rho log(1/delta)).
    hi_rho = epsilon
    lo_rho = (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2
    lo, hi = math.log(lo_rho), math.log(hi_rho)
    if g(lo) >= 0.0:
        lo_rho /= 2.0
        lo = math.log(lo_rho)
    root = float(brentq(g, lo, hi, xtol=1e-14, rtol=1e-14))
    return math.exp(root) * (1.0 - 1e-9)

