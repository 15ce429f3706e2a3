"""Privacy amplification by Poisson subsampling of privacy units.

Theorem (Balle, Barthe & Gaboardi 2018, "Privacy Amplification by
Subsampling: Tight Analyses via Couplings and Divergences", Thm 8; Li, Qardaji
& Su 2012 for pure DP): let ``S`` keep each privacy unit independently with
probability ``q`` and ``M`` be (ε, δ)-DP under add/remove-one-unit
neighbours. Then ``M ∘ S`` is (ε', δ')-DP with

    ε' = ln(1 + q (e^ε − 1)),    δ' = q δ.

Several releases computed from the *same* sample are a single mechanism on
that sample whose ε is the sum of theirs; since ``ε -> ln(1 + q(e^ε − 1))`` is
concave and 0 at 0, charging each release its own amplified cost adds up to
at least the amplified cost of their sum: charging per release never
under-charges.

zCDP budgets get no amplification here (there is no tight closed form for
Poisson subsampling under zCDP): their releases are charged in full.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpframe.accounting.budget import Cost

# Significant bits of the rounded-up amplified epsilon: far finer than any
# epsilon an analyst writes, far coarser than floating-point error.
_BITS = 40


def poisson_subsampled(cost: Cost, rate: Fraction) -> Cost:
    """What an (ε, δ) release costs when it reads a Poisson sample of the units taken at ``rate``.

    The amplified ε is rounded *up* (floating point can only over-charge)
    and never exceeds ε; δ is scaled exactly. ``rate == 1`` and zCDP costs
    are returned unchanged.

    >>> amplified = poisson_subsampled(Cost(epsilon=Fraction(1)), Fraction(1, 100))
    >>> round(float(amplified.epsilon), 6), amplified.delta
    (0.017037, Fraction(0, 1))
    >>> poisson_subsampled(Cost(epsilon=Fraction(1, 2), delta=Fraction(1, 10**6)), Fraction(1, 10)).delta
    Fraction(1, 10000000)
    """
    if not 0 < rate <= 1:
        raise ValueError(f"a sampling rate lies in (0, 1], got {rate}")
    if rate == 1 or cost.rho:
        return cost
    return Cost(epsilon=_amplified_epsilon(cost.epsilon, rate), delta=cost.delta * rate)


def _amplified_epsilon(epsilon: Fraction, rate: Fraction) -> Fraction:
    if epsilon == 0:
        return epsilon
    # Both inputs nudged up one ulp and the result up by 2^-40 relative: the map is
    # increasing in both, so the float result bounds the exact one from above.
    eps_up = math.nextafter(float(epsilon), math.inf)
    rate_up = math.nextafter(float(rate), math.inf)
    try:
        value = math.log1p(rate_up * math.expm1(eps_up))
    except OverflowError:  # e^ε beyond floating point: no meaningful amplification to claim
        return epsilon
    upper = Fraction(value * (1 + 2.0**-_BITS))
    scale = Fraction(2) ** (_BITS - math.frexp(value)[1])
    rounded = Fraction(math.ceil(upper * scale)) / scale
    return min(rounded, epsilon)
