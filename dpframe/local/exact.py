"""Exact coins for local randomizers: Bernoulli((a e^ε + b) / (c e^ε + d)) with rational a, b, c, d and ε.

The local mechanisms keep or flip a value with probabilities such as
``e^ε / (e^ε + k − 1)`` or ``1 / (e^ε + 1)``. For rational ``ε ≠ 0`` these are
irrational, so no finite fraction ``num / den`` equals them and
:func:`dpframe.noise.discrete.sample_bernoulli_exp` (which draws
``exp(−num/den)``) cannot be used directly without rejection loops that cost
up to ``min(k, e^ε)`` attempts per report. Instead :func:`bernoulli` compares
a uniform real ``U = 0.u₁u₂u₃…`` (16 random bits per step) with the binary
expansion of the probability ``p``, lazily: ``U < p`` is decided at the first
16-bit digit where they differ, which happens at the first step except with
probability 2⁻¹⁶. The digits of ``p`` are computed exactly from rational
bounds on ``e^ε`` (a Taylor series with its remainder bound, refined until the
digit is certain), so every decision is an exact integer comparison and the
coin has exactly probability ``p``, like the samplers of
:mod:`dpframe.noise.discrete` (Mironov 2012 on why floats would not do).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dpframe.noise.random import RandomSource, _buffered, _draw_bits, current_source

__all__ = ["MAX_LOCAL_EPSILON", "ExpProbability", "bernoulli"]

#: Largest ε a local randomizer accepts: beyond it the truth is reported with
#: probability above 1 − 10⁻²¹ per category, i.e. no privacy at all, and the
#: exact series for e^ε would only grow.
MAX_LOCAL_EPSILON = Fraction(50)

#: Bits of U compared per step: four comparisons per random 64-bit word.
_DIGIT_BITS = 16


@functools.lru_cache(maxsize=256)
def _exp_bounds(x: Fraction, bits: int) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= e^x <= hi`` with ``hi − lo <= 2^-bits`` for ``0 <= x <= 50``.

    All Taylor terms are positive, so a partial sum ``S_N`` is a lower bound;
    the remainder is at most ``T_{N+1} / (1 − x/(N+2))`` once ``N + 2 > x``.

    >>> lo, hi = _exp_bounds(Fraction(1), 60)
    >>> float(lo) <= 2.718281828459045 <= float(hi), hi - lo <= Fraction(1, 2**60)
    (True, True)
    """
    tolerance = Fraction(1, 2**bits)
    total, term, n = Fraction(1), Fraction(1), 0
    while True:
        n += 1
        term = term * x / n
        total += term
        if n + 2 > 2 * x:  # then 1 / (1 − x/(n+2)) <= 2
            tail = 2 * term * x / (n + 1)
            if tail <= tolerance:
                return total, total + tail


@dataclass(frozen=True)
class ExpProbability:
    """The probability ``(a e^ε + b) / (c e^ε + d)``, exact, for rational ``a, b, c, d >= 0`` and ``0 < ε <= 50``.

    >>> p = ExpProbability(Fraction(1), a=1, b=0, c=1, d=2)  # e / (e + 2): GRR with k = 3 at ε = 1
    >>> round(p.value, 6)
    0.576117
    >>> p.digits(0) == int(p.value * 2**16)
    True
    """

    epsilon: Fraction
    a: Fraction | int
    b: Fraction | int
    c: Fraction | int
    d: Fraction | int

    def __post_init__(self) -> None:
        if not 0 < self.epsilon <= MAX_LOCAL_EPSILON:
            raise ValueError(f"epsilon must lie in (0, {MAX_LOCAL_EPSILON}], got {self.epsilon}")
        if min(self.a, self.b, self.c, self.d) < 0 or self.c + self.d == 0:
            raise ValueError("a, b, c, d must be non-negative, with c + d > 0")
        if self.a > self.c or self.b > self.d or (self.a == self.c and self.b == self.d):
            raise ValueError("(a e^ε + b) / (c e^ε + d) must be below 1: need a <= c and b <= d, not both equal")

    def _at(self, t: Fraction) -> Fraction:
        return (self.a * t + self.b) / (self.c * t + self.d)

    @property
    def value(self) -> float:
        """The probability as a float (for estimators and display, never for sampling)."""
        t = math.exp(self.epsilon)
        return float((float(self.a) * t + float(self.b)) / (float(self.c) * t + float(self.d)))

    def scaled_floor(self, bits: int) -> int:
        """``floor(p · 2^bits)``, exactly (cached: a coin needs the same few digits again and again).

        The map t ↦ (a t + b)/(c t + d) is monotone for t > 0, so the bounds on
        e^ε give bounds on p; they are refined until both round to the same
        integer. That ends because p is rational only when a d = b c (then p
        does not depend on ε and is computed exactly), and e^ε is
        transcendental for rational ε ≠ 0 (Lindemann), so otherwise p
        never lies on the dyadic boundary.
        """
        return _scaled_floor(self, bits)

    def digits(self, level: int) -> int:
        """The ``level``-th 16-bit digit of p's binary expansion (level 0: the first 16 bits)."""
        shift = _DIGIT_BITS * (level + 1)
        return self.scaled_floor(shift) - (self.scaled_floor(shift - _DIGIT_BITS) << _DIGIT_BITS)


@functools.lru_cache(maxsize=256)
def _scaled_floor(p: ExpProbability, bits: int) -> int:
    scale = 1 << bits
    if p.a * p.d == p.b * p.c:  # p does not depend on ε
        constant: Fraction = Fraction(p.b) / p.d if p.d else Fraction(p.a) / p.c
        return math.floor(constant * scale)
    precision = bits + 32
    while True:
        lo, hi = _exp_bounds(p.epsilon, precision)
        ends: list[Fraction] = sorted((p._at(lo), p._at(hi)))
        low, high = math.floor(ends[0] * scale), math.floor(ends[1] * scale)
        if low == high:
            return low
        precision *= 2


def bernoulli(probability: ExpProbability, n: int, source: RandomSource | None = None) -> NDArray[np.bool_]:
    """``n`` independent exact Bernoulli(``probability``) draws.

    Each draw compares a uniform real U with p digit by digit (16 bits per
    step, module docstring); the entries still tied after a step continue with
    fresh bits. ``source`` defaults to
    :func:`dpframe.noise.random.current_source` (the secure source).

    >>> from dpframe.testing import seeded_noise
    >>> p = ExpProbability(Fraction(1), a=0, b=1, c=1, d=1)  # 1 / (e + 1) = 0.2689...
    >>> with seeded_noise(0):
    ...     share = bernoulli(p, 200_000).mean()
    >>> bool(abs(share - p.value) < 0.005)
    True
    """
    src = _buffered(current_source() if source is None else source)
    out = np.empty(n, dtype=np.bool_)
    live = np.arange(n)
    level = 0
    while live.size:
        digit = probability.digits(level)
        u = _draw_bits(src, live.size, _DIGIT_BITS)
        out[live] = u < digit
        live = live[(u == digit).nonzero()[0]]
        level += 1
    return out
