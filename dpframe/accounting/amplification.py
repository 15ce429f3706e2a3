"""Privacy amplification by Poisson subsampling of privacy units, accounted per sample.

Theorem (Balle, Barthe & Gaboardi 2018, "Privacy Amplification by
Subsampling: Tight Analyses via Couplings and Divergences", Thm 8; Li, Qardaji
& Su 2012 for pure DP): let ``S`` keep each privacy unit independently with
probability ``q`` and ``M`` be (ε, δ)-DP under add/remove-one-unit
neighbours. Then ``M ∘ S`` is (f(ε), qδ)-DP with

    f(ε) = ln(1 + q (e^ε − 1)).

Everything released from one sample -- and from anything derived from it,
including samples of the sample -- is one mechanism on that sample: fresh
noise per release, so its ε is the sum of the releases' ε (sequential
composition; releases on other data interleaved with it compose concurrently,
Vadhan & Zhang 2023). The amplification applies to that running total ``E``:
a :class:`SampleAccount` charges release *k* the increment
``f(E_k) − f(E_{k−1})``. Charging each release ``f(ε_k)`` on its own would
under-charge, because ``f`` is *convex* (f'' = q(1−q)e^ε / (1 − q + qe^ε)² > 0):
four releases of ε = 1.344 at q = 0.1 cost f(5.38) ≈ 3.1, not 4 f(1.344) ≈ 1.0.
The δ part, ``qδ``, is linear and adds up release by release.

The increments telescope, so the budget is charged exactly the rounded-up
``f(E)`` of the total. zCDP budgets get no amplification here (there is no
tight closed form for Poisson subsampling under zCDP): their releases are
charged in full. So are those of filter budgets (``accounting="rdp"`` or
``"advanced"``), whose filters take each release's unamplified cost
(:func:`dpframe.accounting.composition.poisson_gaussian_rdp` gives the
subsampled Gaussian's Rényi curve for accounting by hand).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction

from dpframe.accounting import process
from dpframe.accounting.costs import Cost
from dpframe.errors import RefusedError

# Significant bits of the rounded-up amplified epsilon: far finer than any
# epsilon an analyst writes, far coarser than floating-point error.
_BITS = 40


def amplified_epsilon(epsilon: Fraction, rate: Fraction) -> Fraction:
    """``ln(1 + rate (e^epsilon − 1))``, rounded up (floating point can only over-charge), at most ``epsilon``.

    Non-decreasing in ``epsilon``, so increments of a running total are never negative.

    >>> round(float(amplified_epsilon(Fraction(1), Fraction(1, 100))), 6)
    0.017037
    >>> amplified_epsilon(Fraction(3), Fraction(1))
    Fraction(3, 1)
    """
    if not 0 < rate <= 1:
        raise ValueError(f"a sampling rate lies in (0, 1], got {rate}")
    if epsilon == 0 or rate == 1:
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


class SampleAccount:
    """The releases computed from one Poisson sample of the units, accounted as one mechanism on it.

    >>> account = SampleAccount(Fraction(1, 10))
    >>> with account.charging(Cost(epsilon=Fraction(1))) as first:
    ...     pass
    >>> with account.charging(Cost(epsilon=Fraction(1))) as second:
    ...     pass
    >>> second.epsilon > first.epsilon  # f is convex: the second ε = 1 costs more than the first
    True
    >>> round(float(first.epsilon + second.epsilon), 6) == round(float(amplified_epsilon(Fraction(2), Fraction(1, 10))), 6)
    True
    """

    def __init__(self, rate: Fraction) -> None:
        if not 0 < rate <= 1:
            raise ValueError(f"a sampling rate lies in (0, 1], got {rate}")
        self.rate = rate
        self._epsilon = Fraction(0)  # the mechanism's ε on the sample so far
        self._charged = Fraction(0)  # the amplified ε charged to the budget so far
        self._lock = threading.RLock()
        # The running total lives in this process's memory: a forked copy would charge
        # its increments from the same E as the parent and under-charge together.
        self._owner = process.current()

    def _check_process(self) -> None:
        if self._owner is not process.current():
            raise RefusedError(
                "a Poisson sample's privacy account belongs to the process that drew the sample, and this is "
                "another process (a fork): its releases would be charged from a stale running total. Draw the "
                "sample in this process with p.dp.sample(rate)"
            )

    def preview(self, *costs: Cost) -> Cost:
        """What releasing ``costs`` one after the other would be charged now (the increments telescope)."""
        epsilon = sum((c.epsilon for c in costs), Fraction(0))
        delta = sum((c.delta for c in costs), Fraction(0))
        self._check_process()
        with self._lock:
            amplified = amplified_epsilon(self._epsilon + epsilon, self.rate)
            return Cost(epsilon=amplified - self._charged, delta=delta * self.rate)

    @contextmanager
    def charging(self, cost: Cost) -> Iterator[Cost]:
        """Yield what a release of ``cost`` is charged; the account records it only if the block succeeds.

        The block charges the budget; the lock keeps concurrent releases from the
        same sample in order, so each increment is taken from the right total.
        """
        with self._lock, self.charging_unlocked(cost) as charged:
            yield charged

    @contextmanager
    def charging_unlocked(self, cost: Cost) -> Iterator[Cost]:
        """:meth:`charging` for a caller that holds the lock."""
        self._check_process()
        total = self._epsilon + cost.epsilon
        amplified = amplified_epsilon(total, self.rate)
        yield Cost(epsilon=amplified - self._charged, delta=cost.delta * self.rate)
        self._epsilon, self._charged = total, amplified

    @contextmanager
    def reserving(self, cost: Cost) -> Iterator[tuple[Cost, Fraction]]:
        """Like :meth:`charging`, for a release of several parts charged at once; also yield the running ε before it.

        Its parts are then charged :meth:`part` of it, increments that add up to the whole.
        """
        with self._lock:
            before = self._epsilon
            with self.charging_unlocked(cost) as charged:
                yield charged, before

    def part(self, before: Fraction, drawn: Fraction, cost: Cost) -> Cost:
        """The share of a reserved release charged to a part of ``cost`` after ``drawn`` of it (ε, unamplified)."""
        start = before + drawn
        epsilon = amplified_epsilon(start + cost.epsilon, self.rate) - amplified_epsilon(start, self.rate)
        return Cost(epsilon=epsilon, delta=cost.delta * self.rate)

    def __reduce__(self) -> tuple[object, ...]:
        # A copy must not start from zero: that would let the same sample be spent twice.
        raise TypeError("a Poisson sample's account cannot be pickled; pickle the frame it was drawn from")
