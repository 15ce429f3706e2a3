"""Composition and conversion of privacy guarantees: the rules behind every total dpframe reports.

Each function states the theorem it implements. They compute with floats and
are meant for planning and reading (the 500-query table of docs/accounting.md);
the ledger's Rényi filter uses them through :class:`RenyiFilter`, which rounds
every stored amount up and every limit down, so floating point can only
over-charge.

References
----------
[DR14]  C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy (2014).
[DRV10] C. Dwork, G. Rothblum, S. Vadhan. Boosting and Differential Privacy. FOCS 2010.
[KOV15] P. Kairouz, S. Oh, P. Viswanath. The Composition Theorem for Differential Privacy. ICML 2015.
[Mir17] I. Mironov. Rényi Differential Privacy. CSF 2017.
[BS16]  M. Bun, T. Steinke. Concentrated Differential Privacy. TCC 2016.
[CKS20] C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy. NeurIPS 2020.
[BBGHS20] B. Balle, G. Barthe, M. Gaboardi, J. Hsu, T. Sato. Hypothesis Testing Interpretations and
        Rényi Differential Privacy. AISTATS 2020.
[MTZ19] I. Mironov, K. Talwar, L. Zhang. Rényi Differential Privacy of the Sampled Gaussian Mechanism. 2019.
[FZ21]  V. Feldman, T. Zrnic. Individual Privacy Accounting via a Rényi Filter. NeurIPS 2021.
[Léc21] M. Lécuyer. Practical Privacy Filters and Odometers with Rényi Differential Privacy. 2021.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

import numpy as np
from scipy.special import gammaln  # type: ignore[import-untyped, unused-ignore]

from dpframe.noise.calibrate import zcdp_rho_for, zcdp_to_approx_epsilon

__all__ = [
    "ORDERS",
    "AdvancedFilter",
    "Filter",
    "RenyiFilter",
    "advanced_composition",
    "advanced_composition_heterogeneous",
    "filter_for",
    "gaussian_rdp",
    "group_privacy",
    "group_privacy_zcdp",
    "laplace_rdp",
    "optimal_composition",
    "poisson_gaussian_rdp",
    "poisson_subsampled_rdp",
    "pure_dp_rdp",
    "pure_to_zcdp",
    "rdp_to_approx",
    "zcdp_rho_for",
    "zcdp_to_approx_epsilon",
]

#: The Rényi orders dpframe accounts on: dense where small budgets convert best (α near 1 … 4),
#: sparse above, up to 256 (large orders only help at very small totals).
ORDERS: tuple[float, ...] = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 32.0,
                             64.0, 128.0, 256.0)


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return value


def _probability(name: str, value: float, *, allow_zero: bool = False) -> float:
    value = float(value)
    if not (0 <= value < 1) or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must lie in {'[0' if allow_zero else '(0'}, 1), got {value!r}")
    return value


def _order(alpha: float) -> float:
    alpha = float(alpha)
    if not alpha > 1 or math.isnan(alpha):
        raise ValueError(f"a Rényi order must be > 1, got {alpha!r}")
    return alpha


def _count(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


# -- (ε, δ) composition ----------------------------------------------------------------------


def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    """``k``-fold adaptive composition of (ε, δ)-DP mechanisms [DRV10; DR14 Thm 3.20].

    The composition is (ε', kδ + δ')-DP with
    ``ε' = √(2k ln(1/δ')) ε + k ε (e^ε − 1)``. The parameters are fixed in
    advance (the mechanisms may be chosen adaptively). The result is never
    above sequential composition's ``kε``: the smaller of the two is returned.

    The book's example: 500 queries at ε = 0.01 with δ' = 10⁻⁵.

    >>> eps, dlt = advanced_composition(0.01, 0, 500, 1e-5)
    >>> round(eps, 2), dlt
    (1.12, 1e-05)
    """
    epsilon, k = _positive("epsilon", epsilon), _count(k)
    delta, delta_prime = _probability("delta", delta, allow_zero=True), _probability("delta_prime", delta_prime)
    bound = math.sqrt(2 * k * math.log(1 / delta_prime)) * epsilon + k * epsilon * math.expm1(epsilon)
    return min(bound, k * epsilon), k * delta + delta_prime


def advanced_composition_heterogeneous(epsilons: Sequence[float], deltas: Sequence[float] | None,
                                       delta_prime: float) -> tuple[float, float]:
    """Composition of mechanisms with different (ε_i, δ_i), fixed in advance [KOV15 Thm 3.5].

    ``ε' = min(Σ ε_i, Σ ε_i (e^ε_i − 1)/(e^ε_i + 1) + √(2 ln(1/δ') Σ ε_i²))`` and
    ``δ' _total = 1 − (1 − δ') Π (1 − δ_i)``. With equal ε_i this is tighter than
    :func:`advanced_composition` (its mean term ε tanh(ε/2) is below ε (e^ε − 1)).

    >>> eps, dlt = advanced_composition_heterogeneous([0.01] * 500, None, 1e-5)
    >>> round(eps, 4), round(dlt, 12)
    (1.098, 1e-05)
    """
    eps = np.asarray([_positive("epsilon", e) for e in epsilons], dtype=float)
    if eps.size == 0:
        raise ValueError("give at least one epsilon")
    dlt = np.zeros_like(eps) if deltas is None else np.asarray(
        [_probability("delta", d, allow_zero=True) for d in deltas], dtype=float)
    if dlt.shape != eps.shape:
        raise ValueError(f"give one delta per epsilon: {eps.size} epsilons, {dlt.size} deltas")
    delta_prime = _probability("delta_prime", delta_prime)
    mean = float(np.sum(eps * np.tanh(eps / 2)))  # ε (e^ε − 1)/(e^ε + 1) = ε tanh(ε/2)
    bound = mean + math.sqrt(2 * math.log(1 / delta_prime) * float(np.sum(eps**2)))
    total_delta = -math.expm1(math.log1p(-delta_prime) + float(np.sum(np.log1p(-dlt))))
    return min(bound, float(np.sum(eps))), total_delta


def _rr_delta(epsilon0: float, k: int, epsilon: float) -> float:
    """Exact δ(ε) of k-fold randomized response at ε₀: the worst case of k ε₀-DP mechanisms [KOV15 Thm 3.3]."""
    j = np.arange(k + 1)
    loss = (k - 2 * j) * epsilon0  # the privacy loss when j of the k answers flip
    log_p = (gammaln(k + 1) - gammaln(j + 1) - gammaln(k - j + 1) - j * np.logaddexp(0, epsilon0)
             - (k - j) * np.logaddexp(0, -epsilon0))
    over = loss > epsilon
    # Σ P(j) (1 − e^{ε − L_j}) over the outcomes whose loss exceeds ε.
    return float(np.sum(np.exp(log_p[over]) * -np.expm1(epsilon - loss[over])))


def optimal_composition(epsilon: float, delta: float, k: int, delta_target: float) -> float:
    """The smallest ε' with ``k``-fold composition of (ε, δ)-DP mechanisms (ε', δ_target)-DP [KOV15 Thm 3.3].

    Kairouz, Oh & Viswanath show that k-fold randomized response is the worst
    case: the composition is (ε', 1 − (1 − δ)^k (1 − δ_RR(ε')))-DP, where
    δ_RR is the exact hockey-stick divergence of k independent ε-randomized
    responses, and no composition theorem can do better. ε' is found by
    bisection (δ_RR decreases in ε'), on the safe side of the floating-point error.

    >>> round(optimal_composition(0.01, 0, 500, 1e-5), 3)
    0.818
    """
    epsilon, k = _positive("epsilon", epsilon), _count(k)
    delta, delta_target = _probability("delta", delta, allow_zero=True), _probability("delta_target", delta_target)
    # What δ_RR(ε') may be, less a relative 1e-9 for the floating-point error of the sums.
    budget = -math.expm1(math.log1p(-delta_target) - k * math.log1p(-delta)) * (1 - 1e-9)
    if budget <= 0:
        raise ValueError(f"delta_target={delta_target!r} is below the k·delta the mechanisms already spend")
    low, high = 0.0, k * epsilon
    if _rr_delta(epsilon, k, low) <= budget:
        return 0.0
    for _ in range(100):
        middle = (low + high) / 2
        if _rr_delta(epsilon, k, middle) <= budget:
            high = middle
        else:
            low = middle
    return high


# -- Rényi DP --------------------------------------------------------------------------------


def gaussian_rdp(sigma: float, alpha: float, sensitivity: float = 1.0) -> float:
    """RDP of the Gaussian mechanism: ``α Δ² / (2σ²)`` at order α [Mir17 Prop 7].

    The discrete Gaussian with integer sensitivity has the same bound (it is
    Δ²/(2σ²)-zCDP, i.e. this bound at every order, [CKS20 Thm 14]).

    >>> gaussian_rdp(2.0, 4.0)
    0.5
    """
    sigma, sensitivity, alpha = _positive("sigma", sigma), _positive("sensitivity", sensitivity), _order(alpha)
    return alpha * sensitivity**2 / (2 * sigma**2)


def laplace_rdp(epsilon: float, alpha: float) -> float:
    """RDP of the (continuous) Laplace mechanism with scale Δ/ε at order α > 1 [Mir17 Prop 6].

    ``(1/(α−1)) ln( α/(2α−1) e^{(α−1)ε} + (α−1)/(2α−1) e^{−αε} )``.
    dpframe's Laplace noise is the *discrete* Laplace; for it use
    :func:`pure_dp_rdp`, which holds for every ε-DP mechanism.

    >>> round(laplace_rdp(1.0, 2.0), 4)
    0.6191
    """
    epsilon, alpha = _positive("epsilon", epsilon), _order(alpha)
    first = math.log(alpha / (2 * alpha - 1)) + (alpha - 1) * epsilon
    second = math.log((alpha - 1) / (2 * alpha - 1)) - alpha * epsilon
    return float(np.logaddexp(first, second)) / (alpha - 1)


def pure_dp_rdp(epsilon: float, alpha: float) -> float:
    """The RDP at order α of *any* ε-DP mechanism [BS16 Prop 3.3]; randomized response attains it.

    ``(1/(α−1)) ln( (sinh(αε) − sinh((α−1)ε)) / sinh(ε) )``, which equals
    ``(1/(α−1)) ln( (e^{αε} + e^{(1−α)ε}) / (1 + e^ε) )``; it is below both
    ε and α ε²/2 (so ε-DP implies ε²/2-zCDP).

    >>> round(pure_dp_rdp(1.0, 2.0), 4)
    0.7353
    >>> pure_dp_rdp(0.1, 3.0) <= min(0.1, 3.0 * 0.1**2 / 2)
    True
    """
    epsilon, alpha = _positive("epsilon", epsilon), _order(alpha)
    if alpha * epsilon > 1:  # no cancellation to fear at this size (and e^{αε} may overflow below)
        # ε plus what is left of the two logarithms once (α − 1)ε is taken out: αε itself may overflow a float,
        # and an infinite curve would make the ledger's Rényi filter fail on an absurd ε instead of refusing it.
        rest = math.log1p(math.exp((1 - 2 * alpha) * epsilon)) - math.log1p(math.exp(-epsilon))
        return epsilon + rest / (alpha - 1)
    # The ratio minus 1, factored so that small ε loses no digits to cancellation:
    # (e^{(α−1)ε} − 1)(e^{αε} − 1) e^{−(α−1)ε} / (1 + e^ε).
    excess = math.expm1((alpha - 1) * epsilon) * math.expm1(alpha * epsilon) * math.exp(-(alpha - 1) * epsilon)
    return math.log1p(excess / (1 + math.exp(epsilon))) / (alpha - 1)


def poisson_gaussian_rdp(rate: float, sigma: float, alpha: float) -> float:
    """RDP of the Poisson-subsampled Gaussian mechanism (sensitivity 1) at order α [MTZ19 Sec. 3.3].

    With each unit kept with probability q and N(0, σ²) noise on a sum of
    sensitivity 1, for integer α (exact):

        A_α = Σ_{k=0}^{α} C(α, k) (1 − q)^{α−k} q^k exp((k² − k) / (2σ²)),   RDP = ln A_α / (α − 1).

    This is D_α(μ₁ ‖ μ₀) for μ₀ = N(0, σ²), μ₁ = (1 − q) μ₀ + q N(1, σ²), the
    larger of the two directions [MTZ19 Thm 5]. A non-integer α is bounded
    by the next integer (Rényi divergence does not decrease with the order).

    >>> round(poisson_gaussian_rdp(0.01, 1.0, 2), 6)
    0.000172
    >>> poisson_gaussian_rdp(1.0, 2.0, 3) == gaussian_rdp(2.0, 3)  # q = 1: the plain Gaussian
    True
    """
    rate, sigma, alpha = float(rate), _positive("sigma", sigma), _order(alpha)
    if not 0 < rate <= 1:
        raise ValueError(f"a sampling rate lies in (0, 1], got {rate!r}")
    order = math.ceil(alpha)
    if rate == 1:
        return gaussian_rdp(sigma, order)
    k = np.arange(order + 1)
    log_terms = (gammaln(order + 1) - gammaln(k + 1) - gammaln(order - k + 1) + (order - k) * math.log1p(-rate)
                 + k * math.log(rate) + (k * k - k) / (2 * sigma**2))
    return float(np.logaddexp.reduce(log_terms)) / (order - 1)


def poisson_subsampled_rdp(rdp: Callable[[int], float], rate: float, alpha: float) -> float:
    """RDP at order α of any mechanism with RDP curve ``rdp`` run on a Poisson sample at ``rate`` [ZW19 Thm 6].

    Zhu & Wang 2019 ("Poisson Subsampled Rényi Differential Privacy", ICML)
    bound both directions of the subsampled mechanism's Rényi divergence, for
    integer α ≥ 2 and any mechanism that is (ℓ, rdp(ℓ))-RDP for ℓ = 2..α:

        ln[(1 − q)^{α−1}(αq − q + 1) + C(α,2) q²(1 − q)^{α−2} e^{rdp(2)}
           + 3 Σ_{ℓ=3}^{α} C(α,ℓ) q^ℓ (1 − q)^{α−ℓ} e^{(ℓ−1) rdp(ℓ)}] / (α − 1).

    Unlike :func:`poisson_gaussian_rdp`, whose larger direction is proven for
    the continuous Gaussian only [MTZ19 Thm 5], this needs nothing of the
    mechanism but its curve, so it holds for the discrete Gaussian
    (``rdp(ℓ) = ℓΔ²/2σ²``, [CKS20]). It is never above the unsampled
    ``rdp(α)`` (joint convexity), so the smaller of the two is returned. A
    non-integer α is bounded by the next integer.

    >>> curve = lambda order: gaussian_rdp(1.0, order)
    >>> exact = poisson_gaussian_rdp(0.01, 1.0, 8)
    >>> exact <= poisson_subsampled_rdp(curve, 0.01, 8) <= 2 * exact   # above MTZ19's Gaussian value, not far
    True
    >>> poisson_subsampled_rdp(curve, 1.0, 3) == gaussian_rdp(1.0, 3)
    True
    """
    rate, alpha = float(rate), _order(alpha)
    if not 0 < rate <= 1:
        raise ValueError(f"a sampling rate lies in (0, 1], got {rate!r}")
    order = max(math.ceil(alpha), 2)
    if rate == 1:
        return rdp(order)
    log_q, log_rest = math.log(rate), math.log1p(-rate)
    terms = [(order - 1) * log_rest + math.log1p(rate * (order - 1)),
             math.log(math.comb(order, 2)) + 2 * log_q + (order - 2) * log_rest + rdp(2)]
    terms += [math.log(3) + math.lgamma(order + 1) - math.lgamma(ell + 1) - math.lgamma(order - ell + 1)
              + ell * log_q + (order - ell) * log_rest + (ell - 1) * rdp(ell) for ell in range(3, order + 1)]
    return min(float(np.logaddexp.reduce(terms)) / (order - 1), rdp(order))


def rdp_to_approx(rdp: Iterable[float], orders: Iterable[float], delta: float) -> tuple[float, float]:
    """The (ε, δ)-DP implied by an RDP curve, through its best order; returns ``(ε, α)`` [CKS20 Prop 12].

    At each order, (α, τ)-RDP implies (ε, δ)-DP with
    ``ε = τ + ln(1 − 1/α) − (ln δ + ln α)/(α − 1)`` (the same bound as
    [BBGHS20 Thm 21] and Asoodeh et al. 2021; tighter than Mironov's
    ``τ + ln(1/δ)/(α − 1)``). Curves compose by adding them order by order
    ([Mir17 Prop 1]), so the total of several releases converts here.

    >>> orders = ORDERS
    >>> curve = [500 * pure_dp_rdp(0.01, a) for a in orders]   # 500 releases at ε = 0.01
    >>> eps, alpha = rdp_to_approx(curve, orders, 1e-5)
    >>> round(eps, 3), alpha
    (0.894, 20.0)
    """
    delta = _probability("delta", delta)
    best = (math.inf, math.nan)
    for tau, alpha in zip(rdp, orders, strict=True):
        alpha = _order(alpha)
        epsilon = tau + math.log1p(-1 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1)
        best = min(best, (max(epsilon, 0.0), alpha))
    return best


# -- zCDP and group privacy ------------------------------------------------------------------


def pure_to_zcdp(epsilon: float) -> float:
    """ε-DP implies ε²/2-zCDP [BS16 Prop 1.4].

    >>> pure_to_zcdp(0.01) * 500   # the zCDP route for 500 releases at ε = 0.01
    0.025
    """
    return _positive("epsilon", epsilon) ** 2 / 2


def group_privacy(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(ε, δ)-DP for one unit is (kε, k e^{(k−1)ε} δ)-DP for groups of ``k`` units [DR14 Thm 2.2; Vadhan 2017 Lemma 2.2].

    >>> group_privacy(0.5, 0, 3)
    (1.5, 0.0)
    >>> round(group_privacy(0.1, 1e-6, 2)[1], 9)   # 2 e^0.1 δ
    2.21e-06
    """
    epsilon, k = _positive("epsilon", epsilon), _count(k)
    delta = _probability("delta", delta, allow_zero=True)
    return k * epsilon, min(1.0, k * math.exp((k - 1) * epsilon) * delta)


def group_privacy_zcdp(rho: float, k: int) -> float:
    """ρ-zCDP for one unit is k²ρ-zCDP for groups of ``k`` units [BS16 Prop 1.9].

    >>> group_privacy_zcdp(0.25, 3)
    2.25
    """
    return _count(k) ** 2 * _positive("rho", rho)


# -- the Rényi filter the ledger keeps ------------------------------------------------------

# Stored amounts live on a grid of 2^-64 (rounded up; limits rounded down), far below any privacy
# parameter and far above floating-point error once the relative margin below is added.
_GRID = 2**64
_MARGIN = 2.0**-40


def _up(value: float, positive: bool = False) -> Fraction:
    # ``positive``: the exact amount is above 0, so at least one grid step even if ``value`` underflowed to 0.
    return Fraction(max(math.ceil(Fraction(value) * (1 + Fraction(_MARGIN)) * _GRID), int(positive)), _GRID)


def _down(value: float, scale: float) -> Fraction:
    return Fraction(math.floor((Fraction(value) - Fraction(scale * _MARGIN)) * _GRID), _GRID)


State = dict[str, Fraction]


class Filter:
    """A privacy filter over a running state of exact amounts (keys to fractions), as the ledger keeps it.

    Subclasses say what a release adds to the state (:meth:`increment`),
    whether the state after it is admitted (:meth:`admits`) and what ε the
    state reads as (:meth:`epsilon`). The ledger reads, checks and writes the
    state in the charge's transaction.
    """

    keys: tuple[str, ...]
    target: Fraction

    def zero(self) -> State:
        """The state before any release."""
        return dict.fromkeys(self.keys, Fraction(0))

    def increment(self, epsilon: Fraction, rho: Fraction) -> State:
        """What a release that is ``epsilon``-DP (pure parts) plus ``rho``-zCDP (Gaussian parts) adds."""
        raise NotImplementedError

    def admits(self, state: State) -> bool:
        """True when the filter lets an interaction end in this state: sequentially or by its own rule."""
        return self.sequential(state) <= self.target or self.admits_own(state)

    def admits_own(self, state: State) -> bool:
        """True when the filter's own rule (Rényi, advanced) admits the state."""
        raise NotImplementedError

    def epsilon(self, state: State) -> float:
        """How far the state has gone, as an ε at the target δ (a reading of progress, not a guarantee)."""
        return min(float(self.sequential(state)), self.epsilon_own(state))

    def epsilon_own(self, state: State) -> float:
        """:meth:`epsilon` by the filter's own rule."""
        raise NotImplementedError

    @staticmethod
    def sequential(state: State) -> Fraction | float:
        """Σ ε of the pure releases, or infinity once a release has a zCDP part (no pure ε bound then).

        Used because a transcript whose pure ε's add up to at most the target
        has privacy loss at most the target everywhere: it adds nothing to δ,
        so either rule may admit a release (see docs/accounting.md).
        """
        return state["epsilon"] if not state["rho"] else math.inf

    @staticmethod
    def add(state: State, extra: State) -> State:
        """The state after a release."""
        return {key: state[key] + extra[key] for key in state}


class RenyiFilter(Filter):
    """An (ε, δ) target kept as Rényi totals over a grid of orders: a privacy *filter* for adaptive releases.

    Each release is charged its RDP curve (``epsilon``: pure ε-DP, the curve
    of :func:`pure_dp_rdp`; ``rho``: ρ-zCDP, the curve αρ), and the totals add
    order by order. A release is admitted while *some* order keeps its total
    within that order's limit

        B(α) = ε − ln(1 − 1/α) + (ln(δ/m) + ln α)/(α − 1),   m = number of orders,

    the RDP level that :func:`rdp_to_approx` converts to exactly (ε, δ/m).

    Why this is valid when releases and their parameters are chosen
    adaptively: for each order α, ``exp((α−1)(L_n − S_n(α)))`` (L the
    privacy loss, S the charged total) is a nonnegative supermartingale
    [FZ21 Thm 3.1]; on the transcripts where order α ends within its limit,
    the pointwise bound behind [CKS20 Prop 12] then gives a hockey-stick
    contribution of at most δ/m. Every transcript this rule admits ends with
    some order within its limit, so summing over the m orders gives
    (ε, δ)-DP. This is Lécuyer's filter over a grid of orders [Léc21], with δ
    shared equally among the orders (a union bound over the grid: it costs
    ln(m)/(α − 1) in ε, 0.15 in the 500-query example of docs/accounting.md).

    A release is also admitted while the releases are all pure and their ε's
    add up to at most ε (sequential composition): those transcripts have
    privacy loss at most ε everywhere and add nothing to δ, so the budget is
    never worse than a sequential one.

    >>> f = RenyiFilter(Fraction(1), Fraction(1, 10**6))
    >>> state, release = f.zero(), f.increment(Fraction(1, 100), Fraction(0))  # a Laplace release at ε = 0.01
    >>> for _ in range(200):
    ...     state = f.add(state, release)
    >>> f.admits(state), round(f.epsilon(state), 2)  # 200 × ε = 0.01 reads as ε = 0.71 (sequentially: 2)
    (True, 0.71)
    """

    def __init__(self, epsilon: Fraction, delta: Fraction, orders: Sequence[float] = ORDERS) -> None:
        if not 0 < delta < 1:
            raise ValueError("a Rényi budget converts to (ε, δ) and needs 0 < delta < 1; e.g. delta=1e-6")
        self.target, self.delta, self.orders = epsilon, delta, tuple(float(_order(a)) for a in orders)
        self.keys = ("epsilon", "rho", *(repr(a) for a in self.orders))
        share = math.log(float(delta) / len(self.orders))
        self._share = share
        self.limits = {
            key: _down(float(epsilon) - math.log1p(-1 / alpha) + (share + math.log(alpha)) / (alpha - 1),
                       1 + float(epsilon) + abs(share))
            for key, alpha in zip(self.keys[2:], self.orders, strict=True)
        }

    def increment(self, epsilon: Fraction, rho: Fraction) -> State:
        """ε and ρ exactly, and the RDP curve, rounded up: the ε-DP bound of :func:`pure_dp_rdp` plus αρ."""
        curve = {key: (_up(pure_dp_rdp(float(epsilon), alpha), True) if epsilon else Fraction(0))
                 + Fraction(alpha) * rho for key, alpha in zip(self.keys[2:], self.orders, strict=True)}
        return {"epsilon": epsilon, "rho": rho, **curve}

    def admits_own(self, state: State) -> bool:
        """True when some order keeps its total within its limit."""
        return any(state[key] <= self.limits[key] for key in self.keys[2:])

    def epsilon_own(self, state: State) -> float:
        """The best order's conversion of the totals at δ/m, rounded up."""
        best = min(float(state[key]) + math.log1p(-1 / alpha) - (self._share + math.log(alpha)) / (alpha - 1)
                   for key, alpha in zip(self.keys[2:], self.orders, strict=True))
        return max(0.0, best + _MARGIN * (1 + abs(best) + abs(self._share)))


class AdvancedFilter(Filter):
    """An (ε, δ) target for adaptively chosen pure ε_i-DP releases, at the rate of advanced composition.

    With L = ln(1/δ), μ_i = ε_i tanh(ε_i/2) and V = Σ ε_i², a release is
    admitted while ``Σ μ_i + L V / ε ≤ ε / 2``. At the boundary this is
    ``ε = Σ μ_i + √((Σ μ_i)² + 2 L V)``, the non-adaptive bound of
    :func:`advanced_composition_heterogeneous` up to the (Σμ)² term, but it
    holds when each ε_i is chosen after seeing the previous answers.

    Why it is valid: given the past, the privacy loss L_i of an ε_i-DP release
    lies in [−ε_i, ε_i] and has mean at most μ_i (the KL divergence of an
    ε-DP pair, the α → 1 limit of :func:`pure_dp_rdp`), so by Hoeffding's
    lemma ``M_n = exp(λ Σ (L_i − μ_i) − λ² V_n / 2)`` is a nonnegative
    supermartingale for any fixed λ. With λ = 2L/ε, fixed by the target, the
    admission rule is exactly ``λ(ε − Σμ) − λ²V/2 ≥ L``, so by Ville's
    inequality P(L_N ≥ ε) ≤ P(M_N ≥ 1/δ) ≤ δ at the stopping time N, which
    implies (ε, δ)-DP. This is the martingale construction of the filters of
    Rogers, Roth, Ullman & Vadhan (2016) and Whitehouse, Ramdas, Rogers & Wu
    (2023, "Fully-Adaptive Composition in Differential Privacy"), with one λ.
    As for :class:`RenyiFilter`, a release is also admitted while the ε's
    add up to at most ε (sequential composition, which adds nothing to δ).

    >>> f = AdvancedFilter(Fraction(11, 10), Fraction(1, 10**5))
    >>> state, release = f.zero(), f.increment(Fraction(1, 100), Fraction(0))
    >>> for _ in range(500):
    ...     state = f.add(state, release)
    >>> f.admits(state), f.admits(f.add(state, f.increment(Fraction(1, 10), Fraction(0))))
    (True, False)
    """

    keys = ("epsilon", "rho", "mean", "square")

    def __init__(self, epsilon: Fraction, delta: Fraction) -> None:
        if not 0 < delta < 1:
            raise ValueError("an advanced-composition budget needs 0 < delta < 1; e.g. delta=1e-6")
        self.target = epsilon
        self._log = _up(math.log(1 / float(delta)))  # rounded up: the rule only gets stricter

    def increment(self, epsilon: Fraction, rho: Fraction) -> State:
        """μ = ε tanh(ε/2) (rounded up) and ε² (exact) of a pure ε-DP release."""
        if rho:
            raise ValueError("an advanced-composition budget composes pure ε-DP releases only; "
                             "pass epsilon= (Laplace noise), or use an accounting='rdp' budget for Gaussian noise")
        return {"epsilon": epsilon, "rho": Fraction(0), "mean": _up(float(epsilon) * math.tanh(float(epsilon) / 2), epsilon > 0),
                "square": epsilon * epsilon}

    def admits_own(self, state: State) -> bool:
        """True when ``Σ μ + L V / ε ≤ ε / 2``."""
        return state["mean"] + self._log * state["square"] / self.target <= self.target / 2

    def epsilon_own(self, state: State) -> float:
        """``Σ μ + √((Σ μ)² + 2 L V)``, rounded up: the target at which this state sits on the boundary."""
        mean, spread = float(state["mean"]), 2 * float(self._log) * float(state["square"])
        return (mean + math.sqrt(mean * mean + spread)) * (1 + _MARGIN)


def filter_for(kind: str, epsilon: Fraction, delta: Fraction) -> Filter:
    """The filter of a budget kept in Rényi (``"rdp"``) or advanced-composition (``"advanced"``) terms."""
    if kind == "rdp":
        return RenyiFilter(epsilon, delta)
    if kind == "advanced":
        return AdvancedFilter(epsilon, delta)
    raise ValueError(f"budgets of kind {kind!r} keep no filter")
