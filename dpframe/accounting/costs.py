"""Privacy amounts: exact fractions inside, plain floats outside.

**The reading rule.** A float the user passes is read as the *simplest*
rational number (smallest denominator) within a relative distance of
:data:`READING_TOLERANCE` (10⁻¹²) of it, and the mechanism is calibrated
with that same rational. So ``0.1`` is 1/10, ``1e-5 / 10`` is 1/10⁶ and
``1.0 / 7`` is 1/7, and splitting a budget into equal float shares always
fits it exactly. The reading never changes what is charged relative to
what is calibrated: both use the rational, so no rounding can overspend.

Amounts are added as exact fractions, so a thousand charges of 0.001 spend
exactly 1. What the user reads back (:class:`Reading`) is made of
:class:`Amount` values: floats that also carry the exact fraction, so they
format with ``:.2f``, convert with ``float()`` and serialise to JSON.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dpframe.noise.calibrate import zcdp_to_approx_epsilon

BudgetKind = Literal["approx", "zcdp", "rdp", "advanced"]

# How far (relative) a float may sit from the rational it is read as: far above
# floating-point error (1e-16 per operation), far below any deliberate difference.
READING_TOLERANCE = Fraction(1, 10**12)


def simplest_within(x: Fraction, tolerance: Fraction) -> Fraction:
    """The rational with the smallest denominator in ``[x(1 − tolerance), x(1 + tolerance)]``, for ``x > 0``.

    Continued fractions of the two ends, followed while they agree (the
    Stern–Brocot descent), give the simplest number between them.

    >>> simplest_within(Fraction(1e-5 / 10), Fraction(1, 10**12))
    Fraction(1, 1000000)
    >>> simplest_within(Fraction(0.1 + 0.2), Fraction(1, 10**12))
    Fraction(3, 10)
    """
    low, high = x * (1 - tolerance), x * (1 + tolerance)
    # Convergents h/k of the shared continued-fraction prefix.
    h0, h1, k0, k1 = 0, 1, 1, 0
    while True:
        a = math.floor(low)
        if a < low:  # low is not an integer: the interval may hold a smaller one
            if a + 1 <= high:
                a += 1
                return Fraction(a * h1 + h0, a * k1 + k0)
        else:
            return Fraction(a * h1 + h0, a * k1 + k0)
        h0, h1, k0, k1 = h1, a * h1 + h0, k1, a * k1 + k0
        low, high = 1 / (high - a), 1 / (low - a)


def exact(value: object, name: str, *, allow_zero: bool = False) -> Fraction:
    """Validate a privacy parameter and return it as an exact fraction (module docstring: the reading rule).

    >>> exact(0.1, "epsilon"), exact(1e-5 / 10, "delta"), exact(1 / 3, "epsilon")
    (Fraction(1, 10), Fraction(1, 1000000), Fraction(1, 3))
    >>> exact(-1, "epsilon")
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be > 0, got -1
    """
    # By exact type: a subclass of Fraction (or an Amount whose exact value is one) would run its own
    # arithmetic inside dpframe -- the noise's scale and the amount charged.
    number: Any = value
    kind = type(number)
    if kind is Amount:
        number = number.exact
        kind = type(number)
    if kind is Fraction:
        if type(number.numerator) is not int or type(number.denominator) is not int:
            raise TypeError(f"{name} must be a number; this Fraction holds {type(number.numerator).__name__} parts")
        result = Fraction(number.numerator, number.denominator)
    elif kind is int or (issubclass(kind, np.integer) and kind in _NUMPY_NUMBERS):
        result = Fraction(int(number))
    elif issubclass(kind, int) and kind is not bool:  # an IntEnum: its int, read by int's own slot
        result = Fraction(int.__int__(number))
    elif kind is float or (issubclass(kind, np.floating) and kind in _NUMPY_NUMBERS) or issubclass(kind, float):
        as_float = float.__float__(number) if issubclass(kind, float) else float(number)
        if not math.isfinite(as_float):
            raise ValueError(f"{name} must be finite, got {value!r}; pass a positive number such as 0.1")
        result = Fraction(as_float)
        if result > 0:
            result = simplest_within(result, READING_TOLERANCE)
    else:
        raise TypeError(f"{name} must be a number (an int, a float or a Fraction), got {kind.__name__}")
    if result < 0 or (result == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return result


# numpy's own number types (a class deriving from one is the analyst's).
_NUMPY_NUMBERS = frozenset(t for t in set(np.sctypeDict.values()) if issubclass(t, (np.integer, np.floating)))


class Amount(float):
    """A privacy amount as a float (for formatting, arithmetic and JSON) that keeps its exact value.

    >>> a = Amount(Fraction(1, 3))
    >>> f"{a:.2f}", a.exact, float(a) == 1 / 3
    ('0.33', Fraction(1, 3), True)
    """

    exact: Fraction

    def __new__(cls, value: Fraction) -> Amount:
        amount = super().__new__(cls, float(value))
        amount.exact = value
        return amount

    def __reduce__(self) -> tuple[object, ...]:
        return (Amount, (self.exact,))


@dataclass(frozen=True)
class Cost:
    """What one release costs: epsilon and delta, or rho for zCDP, as exact fractions.

    A cost is checked wherever one is made (construction, ``+``, ``-``,
    unpickling): each part must be a :class:`~fractions.Fraction` (a
    TypeError otherwise), at least 0, and delta below 1 (ValueError
    otherwise). A Fraction is always finite and exact; an int or a float is
    refused rather than converted, because costs are calibrated with the
    rational that :func:`exact` reads from a float (0.1 is 1/10, not the
    binary float nearest it), and a float would also bring NaN and infinity.
    A negative part would refund the budget, so none is ever made: taking
    more than a cost holds raises.

    >>> Cost(epsilon=Fraction(1, 10)) + Cost(epsilon=Fraction(2, 10))
    Cost(epsilon=Fraction(3, 10), delta=Fraction(0, 1), rho=Fraction(0, 1))
    >>> Cost(epsilon=Fraction(-10))
    Traceback (most recent call last):
    ...
    ValueError: a cost's epsilon must be >= 0, got -10: a release never gives privacy back
    >>> Cost(rho=0.5)
    Traceback (most recent call last):
    ...
    TypeError: a cost's rho must be a Fraction, got float 0.5; write it as one (Fraction(1, 10) for 0.1), or read a float as queries do with dpframe.accounting.costs.exact
    """

    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    rho: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        for name in ("epsilon", "delta", "rho"):
            value = getattr(self, name)
            if not isinstance(value, Fraction):
                raise TypeError(f"a cost's {name} must be a Fraction, got {type(value).__name__} {value!r}; write it "
                                "as one (Fraction(1, 10) for 0.1), or read a float as queries do with "
                                "dpframe.accounting.costs.exact")
            if value.numerator < 0:  # a Fraction's denominator is positive; this skips Fraction's slow comparison
                raise ValueError(f"a cost's {name} must be >= 0, got {value}: a release never gives privacy back")
        if self.delta.numerator >= self.delta.denominator:
            raise ValueError(f"a cost's delta must be < 1, got {self.delta}: δ is the probability that the guarantee "
                             "fails, and δ >= 1 guarantees nothing")

    def __add__(self, other: Cost) -> Cost:
        return Cost(_plus(self.epsilon, other.epsilon), _plus(self.delta, other.delta), _plus(self.rho, other.rho))

    def __sub__(self, other: Cost) -> Cost:
        if not other.fits_in(self):  # a negative part would refund the budget: a bug wherever it happens
            raise ValueError(f"cannot take {other._parts()} from {self._parts()}: it is more in some part, and a cost "
                             "is never negative; compare costs with fits_in instead of subtracting")
        return Cost(_minus(self.epsilon, other.epsilon), _minus(self.delta, other.delta), _minus(self.rho, other.rho))

    def __reduce__(self) -> tuple[object, ...]:
        # Unpickled through __init__, so a pickle cannot hold a cost that construction refuses.
        return (Cost, (self.epsilon, self.delta, self.rho))

    def fits_in(self, other: Cost) -> bool:
        """True when every component of this cost is at most the other's.

        >>> Cost(epsilon=Fraction(1, 2)).fits_in(Cost(epsilon=Fraction(1)))
        True
        """
        return (_at_most(self.epsilon, other.epsilon) and _at_most(self.delta, other.delta)
                and _at_most(self.rho, other.rho))

    @property
    def is_zero(self) -> bool:
        """True for a release that costs nothing."""
        return not (self.epsilon or self.delta or self.rho)

    def describe(self, kind: BudgetKind) -> str:
        """A short human-readable form; on a filtered (``"rdp"``, ``"advanced"``) budget, each part in its own terms.

        >>> Cost(epsilon=Fraction(1, 10)).describe("approx")
        'ε=0.1, δ=0'
        >>> Cost(rho=Fraction(1, 200)).describe("rdp"), Cost(Fraction(1), Fraction(1, 10**6)).describe("rdp")
        ('ρ=0.005', 'ε=1, δ=1e-06')
        """
        if kind == "zcdp":
            return f"ρ={float(self.rho):.6g}"
        if kind in ("rdp", "advanced"):
            return self._parts()
        return f"ε={float(self.epsilon):.6g}, δ={float(self.delta):.3g}"

    def _parts(self) -> str:
        """Each part that is not 0 in its own terms (ε=0 for a cost of nothing)."""
        parts = [f"ε={float(self.epsilon):.6g}" if self.epsilon or not self.rho else "",
                 f"δ={float(self.delta):.3g}" if self.delta else "", f"ρ={float(self.rho):.6g}" if self.rho else ""]
        return ", ".join(part for part in parts if part)


# Most parts of most costs are 0 (a Laplace release has no delta or rho): these skip Fraction's arithmetic,
# which costs microseconds, for them. Exact either way.
def _plus(a: Fraction, b: Fraction) -> Fraction:
    return a if not b else b if not a else a + b


def _minus(a: Fraction, b: Fraction) -> Fraction:
    return a if not b else a - b


def _at_most(a: Fraction, b: Fraction) -> bool:
    return not a or a <= b  # a cost's parts are never negative: 0 is at most any of them


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The ε at which ρ-zCDP implies (ε, δ)-DP, by the tight conversion of Canonne, Kamath & Steinke (2020, Cor. 13).

    It improves on Bun & Steinke's ρ + 2√(ρ ln(1/δ)) (2016, Prop. 1.3),
    which gives 5.7565 here (:func:`dpframe.noise.calibrate.zcdp_to_approx_epsilon`).

    >>> round(zcdp_epsilon(0.5, 1e-6), 4)
    5.2215
    >>> zcdp_epsilon(0, 1e-6)
    0.0
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return zcdp_to_approx_epsilon(rho, delta) if rho > 0 else 0.0


@dataclass(frozen=True, eq=False)
class Reading:
    """A budget amount as the user reads it: ``epsilon``, ``delta`` and ``rho`` are :class:`Amount` floats.

    >>> import json
    >>> r = Reading.of(Cost(epsilon=Fraction(2, 5)), "approx")
    >>> f"{r.epsilon:.2f}", float(r.epsilon), json.dumps(r.as_dict())
    ('0.40', 0.4, '{"epsilon": 0.4, "delta": 0.0, "rho": 0.0}')
    """

    epsilon: Amount
    delta: Amount
    rho: Amount
    kind: BudgetKind

    @classmethod
    def of(cls, cost: Cost, kind: BudgetKind) -> Reading:
        """The reading of an exact cost."""
        return cls(Amount(cost.epsilon), Amount(cost.delta), Amount(cost.rho), kind)

    @property
    def cost(self) -> Cost:
        """The exact amounts."""
        return Cost(self.epsilon.exact, self.delta.exact, self.rho.exact)

    def as_dict(self) -> dict[str, float]:
        """``{"epsilon": ..., "delta": ..., "rho": ...}`` as plain floats (JSON-ready)."""
        return {"epsilon": float(self.epsilon), "delta": float(self.delta), "rho": float(self.rho)}

    def as_approx(self, delta: float) -> tuple[float, float]:
        """``(ε, δ)``: a zCDP amount converted at the chosen ``delta`` (:func:`zcdp_epsilon`); (ε, δ) as is otherwise.

        A Rényi budget's amounts are (ε, δ) already: its spending is what its filter certifies at its δ.

        >>> Reading.of(Cost(rho=Fraction(1, 2)), "zcdp").as_approx(1e-6)[0] > 5
        True
        """
        if self.kind == "zcdp":
            return zcdp_epsilon(float(self.rho), delta), delta
        return float(self.epsilon), float(self.delta)

    def __eq__(self, other: object) -> bool:
        """Exact comparison with another reading or a :class:`Cost`."""
        if isinstance(other, Reading):
            return self.cost == other.cost
        if isinstance(other, Cost):
            return self.cost == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.cost)

    def __str__(self) -> str:
        return self.cost.describe(self.kind)
