"""From a query's privacy parameters to calibrated, exact integer noise.

Every release in dpframe is an integer vector plus exact discrete noise:

* counts are integers already;
* sums are computed exactly on an integer grid (see :class:`SumGrid`), so the
  sensitivity holds exactly despite floating point, and are released on a
  power-of-two grid tied to the noise scale, never to the data.

Pure DP uses the discrete Laplace mechanism; (epsilon, delta)-DP uses the
discrete Gaussian calibrated with Balle & Wang's analytic bound and checked
against its exact discrete privacy profile (CKS20, Thm 7); zCDP uses the
discrete Gaussian with sigma^2 = Delta^2 / (2 rho) (CKS20, Thm 14). A Rényi
budget's releases are calibrated as on a zCDP budget (Laplace by epsilon,
Gaussian by rho) and charged their own terms: epsilon for Laplace, rho for
Gaussian, which its filter turns into Rényi curves.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from dpframe.accounting.budget import Budget
from dpframe.accounting.costs import Cost, exact
from dpframe.errors import BudgetExceededError
from dpframe.noise import calibrate
from dpframe.noise.discrete import (
    MAX_GAUSSIAN_SIGMA2,
    MAX_LAPLACE_SCALE,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

MechanismName = Literal["laplace", "gaussian"]

# Noise is represented with a power-of-two denominator of this many bits: fine
# enough that the rounding (always upwards: more noise) is invisible, coarse
# enough that the exact samplers stay on their fast integer path.
_NOISE_BITS = 40
# Sums are released on a grid this many binary digits finer than their noise:
# fine enough that the one-step rounding allowance in the sensitivity costs
# little (about 2^-bits * sensitivity/std of extra noise), coarse enough that
# the discrete Gaussian's exact privacy check (O(sigma) work) stays fast.
_NOISE_GRID_BITS = {"laplace": 20, "gaussian": 14}
# Values are summed on a grid this many binary digits finer than their range.
_DATA_GRID_BITS = 30
# The release grid's rounding step 2**shift must be an int64.
_MAX_SHIFT = 62
# Below this data step its reciprocal (the factor that puts values on the grid) is no longer a float.
_SMALLEST_STEP = Fraction(2) ** -1020


# The share of the budget's delta a query spends on private key selection when
# it needs one and the analyst gave no delta.
SELECTION_DELTA_SHARE = Fraction(1, 10)


def round_up(value: Fraction, bits: int = _NOISE_BITS) -> Fraction:
    """The smallest fraction >= ``value`` with a power-of-two denominator and ~``bits`` significant bits.

    >>> round_up(Fraction(1, 3), bits=8)
    Fraction(171, 512)
    """
    if value <= 0:
        raise ValueError("noise parameters must be positive")
    exponent = bits - (value.numerator.bit_length() - value.denominator.bit_length())
    scale = Fraction(2) ** exponent
    return Fraction(math.ceil(value * scale)) / scale


def round_down(value: float, bits: int = _NOISE_BITS) -> Fraction:
    """The largest fraction <= ``value`` with a power-of-two denominator and ~``bits`` significant bits."""
    scale = Fraction(2) ** (bits - math.frexp(value)[1])
    return Fraction(math.floor(Fraction(value) * scale)) / scale


def laplace_epsilon(rho: Fraction) -> Fraction:
    """The epsilon of a Laplace release that costs at most ``rho`` in zCDP (eps^2/2 <= rho), rounded down.

    >>> laplace_epsilon(Fraction(1, 2))
    Fraction(1, 1)
    >>> all(laplace_epsilon(r) ** 2 / 2 <= r for r in (Fraction(1, 3), Fraction(10**-9), Fraction(7, 10**5)))
    True
    """
    candidate = round_down(math.sqrt(2 * float(rho)))
    if candidate == 0:
        return candidate
    # The square root was taken in floating point: step down on the same grid until it is exact.
    step = Fraction(2) ** (math.frexp(float(candidate))[1] - _NOISE_BITS)
    while candidate * candidate / 2 > rho:
        candidate -= step
    return candidate


@dataclass(frozen=True)
class NoiseSpec:
    """Exact discrete noise: Laplace with ``scale`` or Gaussian with variance ``sigma2`` (grid units).

    >>> spec = NoiseSpec("laplace", Fraction(10))
    >>> spec.name, spec.halfwidth(0.95), spec.sample(3).dtype
    ('discrete Laplace', 30, dtype('int64'))
    """

    mechanism: MechanismName
    param: Fraction

    def __post_init__(self) -> None:
        # Checked when a query is planned, before any charge: a noise the exact
        # samplers cannot draw must fail here, not after the budget is spent.
        limit = MAX_LAPLACE_SCALE if self.mechanism == "laplace" else MAX_GAUSSIAN_SIGMA2
        if self.param > limit:
            what = "scale" if self.mechanism == "laplace" else "variance"
            raise ValueError(
                f"the privacy parameters are too small for this query: its {self.name} noise would need a "
                f"{what} of {float(self.param):.3g} grid units, beyond the {float(limit):.3g} that exact sampling "
                "supports; use a larger epsilon (or rho), or narrower bounds"
            )

    def sample(self, size: int) -> NDArray[np.int64]:
        """``size`` independent exact draws."""
        if self.mechanism == "laplace":
            return sample_discrete_laplace(self.param, size)
        return sample_discrete_gaussian(self.param, size)

    @property
    def std(self) -> float:
        """Standard deviation of one draw."""
        return _noise_std(self.mechanism, self.param)

    def halfwidth(self, level: float = 0.95) -> int:
        """Smallest integer k with P(|noise| <= k) >= level."""
        return _noise_halfwidth(self.mechanism, self.param, level)

    def tail_point(self, probability: float) -> int:
        """Smallest integer ``m >= 1`` with ``P(noise >= m) <= probability``: a threshold noise alone rarely crosses.

        >>> NoiseSpec("laplace", Fraction(10)).tail_point(1e-6), NoiseSpec("gaussian", Fraction(100)).tail_point(1e-6)
        (133, 49)
        """
        if self.mechanism == "laplace":
            # P[Z >= m] = p^m / (1 + p), p = e^(-1/scale): m >= -scale (log(probability) + log(1 + p)); with log(p)
            # = -1/scale exactly (p may underflow to 0), and +1 against floating-point rounding.
            scale = float(self.param)
            return max(math.ceil(-scale * (math.log(probability) + math.log1p(math.exp(-1.0 / scale)))) + 1, 1)
        return calibrate.discrete_gaussian_tail_point(float(self.param), probability)

    @property
    def name(self) -> str:
        """``"discrete Laplace"`` or ``"discrete Gaussian"``."""
        return "discrete Laplace" if self.mechanism == "laplace" else "discrete Gaussian"


@dataclass(frozen=True)
class Privacy:
    """The privacy a query may spend, resolved against its budget's currency.

    ``epsilon`` is the Laplace mechanism's epsilon; ``delta`` is spent on the
    Gaussian mechanism or on partition selection; ``rho`` is the zCDP cost.
    On a Rényi budget (kind ``"rdp"``) a Laplace release carries both its
    epsilon and rho = epsilon^2 / 2, so steps that split it as on a zCDP
    budget (and are charged rho) stay valid.
    """

    kind: Literal["approx", "zcdp", "rdp"]
    mechanism: MechanismName
    epsilon: Fraction
    delta: Fraction
    rho: Fraction

    @property
    def cost(self) -> Cost:
        """What the budget is charged."""
        if self.kind == "zcdp":
            return Cost(rho=self.rho)
        if self.kind == "rdp":  # each in its own terms; the budget's filter charges their Rényi curves
            return Cost(epsilon=self.epsilon) if self.mechanism == "laplace" else Cost(rho=self.rho)
        return Cost(epsilon=self.epsilon, delta=self.delta)

    def share(self, weight: Fraction) -> Privacy:
        """The privacy of one of several measurements composed sequentially (a ``weight`` share)."""
        if self.kind == "rdp" and self.mechanism == "laplace":
            epsilon = self.epsilon * weight
            return Privacy(self.kind, self.mechanism, epsilon, Fraction(0), epsilon * epsilon / 2)
        if self.kind != "approx":
            rho = self.rho * weight
            epsilon = laplace_epsilon(rho) if self.mechanism == "laplace" else Fraction(0)
            return Privacy(self.kind, self.mechanism, epsilon, Fraction(0), rho)
        return Privacy(self.kind, self.mechanism, self.epsilon * weight, self.delta * weight, Fraction(0))

    def noise(self, sensitivity: int) -> NoiseSpec:
        """Exact noise for a measurement with integer sensitivity (L1 for Laplace, L2 for Gaussian)."""
        return _noise(self, sensitivity)

    def _noise(self, sensitivity: int) -> NoiseSpec:
        if self.mechanism == "laplace":
            return NoiseSpec("laplace", round_up(Fraction(sensitivity) / self.epsilon))
        if self.kind != "approx":
            return NoiseSpec("gaussian", round_up(Fraction(sensitivity**2) / (2 * self.rho)))
        return _vector_noise(self, 1, sensitivity)  # one coordinate: the scalar exact calibration (CKS20 Thm 7)

    def l2_noise(self, l2_squared: int) -> NoiseSpec:
        """Discrete Gaussian noise for each coordinate of one vector release with L2 sensitivity √``l2_squared``.

        zCDP: σ² = Δ₂²/(2ρ): independent discrete Gaussians, shifted by integers
        v_j, have Rényi divergence at most α Σ v_j²/(2σ²) (CKS20 Thm 14 per
        coordinate; divergences of independent coordinates add). (ε, δ): the
        same at the largest ρ whose conversion (CKS20 Cor 13) gives (ε, δ): one
        calibration for the whole vector, with Δ₂² kept exact (k²m for m
        counts) instead of rounding Δ₂ up to an integer.

        >>> privacy = Privacy("zcdp", "gaussian", Fraction(0), Fraction(0), Fraction(1, 2))
        >>> privacy.l2_noise(10).param
        Fraction(10, 1)
        """
        if self.mechanism != "gaussian":
            raise ValueError("the vector Gaussian needs the Gaussian mechanism: pass delta= (or rho= on zCDP)")
        if self.kind != "approx":  # zCDP and Rényi budgets give the Gaussian its rho
            rho = self.rho
        else:
            try:
                rho = Fraction(calibrate.zcdp_rho_for(float_below(self.epsilon), float_below(self.delta)))
            except (ValueError, OverflowError, ZeroDivisionError):
                raise ValueError(
                    f"the Gaussian mechanism cannot be calibrated for ε={float(self.epsilon):.3g}, "
                    f"δ={float(self.delta):.3g}: use a larger epsilon or delta"
                ) from None
        return NoiseSpec("gaussian", round_up(Fraction(l2_squared) / (2 * rho)))

    def vector_noise(self, coordinates: int, per_coordinate: int) -> NoiseSpec:
        """Discrete Gaussian noise for each coordinate of one vector release of which one unit moves at most
        ``coordinates`` entries, each by at most ``per_coordinate`` (L2 sensitivity √coordinates·per_coordinate).

        On an (ε, δ) budget σ is calibrated to the exact privacy profile of that mechanism
        (:func:`~dpframe.noise.calibrate.discrete_gaussian_vector_sigma2`: as small as the analytic
        Gaussian's), where the exact check is affordable; otherwise, and on zCDP and Rényi budgets, as
        :meth:`l2_noise`.

        >>> privacy = Privacy("approx", "gaussian", Fraction(1), Fraction(1, 10**6), Fraction(0))
        >>> round(privacy.vector_noise(4, 5).std, 1), round(privacy.l2_noise(4 * 5**2).std, 1)
        (42.2, 45.3)
        """
        if self.mechanism != "gaussian":
            raise ValueError("the vector Gaussian needs the Gaussian mechanism: pass delta= (or rho= on zCDP)")
        if self.kind != "approx":
            return self.l2_noise(coordinates * per_coordinate**2)
        return _vector_noise(self, coordinates, per_coordinate)

    def real_noise_std(self, sensitivity: float) -> float:
        """The noise std a real-valued measurement with this sensitivity gets (to choose grids)."""
        if self.mechanism == "laplace":
            return math.sqrt(2) * sensitivity / float(self.epsilon)
        if self.kind != "approx":
            return sensitivity / math.sqrt(2 * float(self.rho))
        return calibrate.analytic_gaussian_sigma(float(self.epsilon), float(self.delta), sensitivity)


def largest_rho(epsilon: Fraction, delta: Fraction, what: str) -> Fraction:
    """The largest rho (rounded down) whose tight conversion (CKS20 Cor. 13) gives at most (``epsilon``,
    ``delta``); a ValueError naming ``what`` when the parameters are too small for any.

    >>> round(float(largest_rho(Fraction(1), Fraction(1, 10**6), "synthesize")), 4)
    0.0244
    """
    try:
        return round_down(calibrate.zcdp_rho_for(float_below(epsilon), float_below(delta)))
    except (ValueError, OverflowError, ZeroDivisionError):
        raise ValueError(f"{what} cannot plan its noise with ε={float(epsilon):.3g}, δ={float(delta):.3g}: use a "
                         "larger epsilon and a delta well below 1 (e.g. 1e-6)") from None


def float_below(value: Fraction) -> float:
    """The largest float not above ``value``: calibrating to it can only add noise (or spend less).

    >>> float_below(Fraction(1, 3)) <= Fraction(1, 3) < Fraction(float_below(Fraction(1, 3))) + Fraction(1, 2**53)
    True
    """
    approx = float(value)
    return approx if Fraction(approx) <= value else math.nextafter(approx, 0.0)


# Noise parameters and their statistics depend only on the privacy arguments and the schema (bounds,
# contributions), never on the data: a notebook asks the same few again and again, so they are computed once.
@functools.lru_cache(maxsize=1024)
def _noise(privacy: Privacy, sensitivity: int) -> NoiseSpec:
    return privacy._noise(sensitivity)


@functools.lru_cache(maxsize=1024)
def _vector_noise(privacy: Privacy, coordinates: int, per_coordinate: int) -> NoiseSpec:
    try:
        sigma2 = calibrate.discrete_gaussian_vector_sigma2(float_below(privacy.epsilon), float_below(privacy.delta),
                                                           per_coordinate, coordinates, bits=_NOISE_BITS)
    except (ValueError, OverflowError, ZeroDivisionError):
        raise ValueError(
            f"the Gaussian mechanism cannot be calibrated for ε={float(privacy.epsilon):.3g}, "
            f"δ={float(privacy.delta):.3g}: the parameters are too small; use a larger epsilon or delta"
        ) from None
    return NoiseSpec("gaussian", sigma2)


@functools.lru_cache(maxsize=1024)
def _noise_std(mechanism: MechanismName, param: Fraction) -> float:
    if mechanism == "laplace":
        return math.sqrt(calibrate.discrete_laplace_variance(float(param)))
    return math.sqrt(calibrate.discrete_gaussian_variance(float(param)))


@functools.lru_cache(maxsize=1024)
def _noise_halfwidth(mechanism: MechanismName, param: Fraction, level: float) -> int:
    if mechanism == "laplace":
        return calibrate.discrete_laplace_halfwidth(float(param), level)
    return calibrate.discrete_gaussian_halfwidth(float(param), level)


def selection_delta(budget: Budget) -> Fraction:
    """The delta a query that selects its categories privately takes when none is given: said, never silent.

    A tenth of the budget's delta (or what is left of it), recorded in the
    ledger and in the result's cost. A budget whose delta is spent says so
    (BudgetExceededError), rather than that the categories are not public.

    >>> selection_delta(Budget(epsilon=1.0, delta=1e-5))
    Fraction(1, 1000000)
    """
    total, remaining = budget.total.cost.delta, budget.remaining.cost.delta
    if total > 0 and remaining == 0:
        raise BudgetExceededError(
            f"selecting categories privately needs delta, and this budget's delta ({float(total):g}) is spent; "
            "nothing was charged. Declare the categories (keys=[...] or a categorical dtype), or extend the "
            "budget's delta"
        )
    return min(total * SELECTION_DELTA_SHARE, remaining)


def resolve(
    budget: Budget,
    epsilon: float | None,
    delta: float | None,
    rho: float | None,
    mechanism: str | None,
    *,
    selects_partitions: bool = False,
) -> Privacy:
    """Validate a query's privacy arguments against the budget it will spend from.

    * (epsilon, delta) budgets: ``epsilon`` is required; ``delta > 0`` selects
      the Gaussian mechanism unless ``mechanism="laplace"`` -- or, for queries
      that discover their categories, pays for private partition selection
      (without ``delta=``, such queries spend a tenth of the budget's delta).
    * zCDP budgets: ``rho`` (Gaussian), or ``epsilon`` (Laplace, charged
      rho = epsilon^2 / 2, since epsilon-DP implies epsilon^2/2-zCDP).
    * Rényi budgets: the same arguments as zCDP budgets; a Laplace release
      is charged its epsilon (its Rényi curve is that of an epsilon-DP
      mechanism), a Gaussian one its rho.
    * advanced-composition budgets: ``epsilon`` only (Laplace).

    >>> resolve(Budget(epsilon=1.0), 0.5, None, None, None).mechanism
    'laplace'
    """
    if mechanism not in (None, "laplace", "gaussian"):
        raise ValueError(f"mechanism must be 'laplace' or 'gaussian', got {mechanism!r}")
    if budget.kind == "advanced":
        if rho is not None or delta is not None or mechanism == "gaussian" or epsilon is None:
            raise ValueError("this budget composes pure epsilon-DP releases by advanced composition: pass epsilon= "
                             "only (Laplace noise); for Gaussian noise use an accounting='rdp' budget")
        return Privacy("approx", "laplace", exact(epsilon, "epsilon"), Fraction(0), Fraction(0))
    if budget.kind != "approx":
        what = "zCDP (rho)" if budget.kind == "zcdp" else "kept in Rényi terms"
        if delta is not None:
            raise ValueError(f"this budget is {what}: pass rho= (Gaussian) or epsilon= (Laplace), not delta=")
        if (epsilon is None) == (rho is None):
            raise ValueError(f"this budget is {what}: pass exactly one of rho= (Gaussian) or epsilon= (Laplace)")
        if epsilon is not None:
            if mechanism == "gaussian":
                raise ValueError(f"on a budget {what} the Gaussian mechanism is specified by rho=, not epsilon=")
            eps = exact(epsilon, "epsilon")
            return Privacy(budget.kind, "laplace", eps, Fraction(0), eps * eps / 2)
        assert rho is not None
        r = exact(rho, "rho")
        chosen: MechanismName = "laplace" if mechanism == "laplace" else "gaussian"
        eps = laplace_epsilon(r) if chosen == "laplace" else Fraction(0)
        return Privacy(budget.kind, chosen, eps, Fraction(0), r)

    if rho is not None:
        raise ValueError("this budget is (epsilon, delta): pass epsilon= (and delta= for the Gaussian mechanism)")
    if epsilon is None:
        raise ValueError("pass epsilon=, the share of the budget this query may spend (e.g. epsilon=0.1)")
    eps = exact(epsilon, "epsilon")
    if delta is not None:
        dlt = exact(delta, "delta", allow_zero=True)
    elif selects_partitions and mechanism != "gaussian":
        dlt = selection_delta(budget)
    else:
        dlt = Fraction(0)
    if dlt >= 1:
        raise ValueError(f"delta must be < 1, got {delta!r}")
    if mechanism is None:
        chosen = "gaussian" if dlt > 0 and not selects_partitions else "laplace"
    else:
        chosen = "gaussian" if mechanism == "gaussian" else "laplace"
    if chosen == "gaussian" and dlt == 0:
        raise ValueError("the Gaussian mechanism needs delta > 0: pass delta= (e.g. 1e-7) or use the Laplace mechanism")
    if chosen == "gaussian" and selects_partitions:
        raise ValueError(
            "private partition selection uses the Laplace mechanism: declare the categories to use "
            "mechanism='gaussian', or drop mechanism="
        )
    if chosen == "laplace" and dlt > 0 and not selects_partitions:
        raise ValueError("the Laplace mechanism does not use delta: drop delta= or pass mechanism='gaussian'")
    return Privacy("approx", chosen, eps, dlt, Fraction(0))


def _power_of_two_at_most(value: float) -> Fraction:
    return Fraction(2) ** (math.frexp(value)[1] - 1)


def _data_grid(lo: float, hi: float) -> tuple[Fraction, int]:
    """The data step of a sum of values clipped to ``[lo, hi]`` (a power of two, 2^-30 of the larger bound's
    octave) and the most grid steps one value can hold."""
    magnitude = max(abs(lo), abs(hi))
    if magnitude == 0:
        raise ValueError("bounds (0, 0) leave nothing to sum; widen them")
    data_step = _power_of_two_at_most(magnitude) / 2**_DATA_GRID_BITS
    return data_step, max(abs(round(Fraction(lo) / data_step)), abs(round(Fraction(hi) / data_step)))


@dataclass(frozen=True)
class SumGrid:
    """How a bounded sum is computed exactly and released on a data-independent grid.

    >>> grid = SumGrid.choose(0.0, 125.0, 1, resolve(Budget(epsilon=1.0), 0.5, None, None, None))
    >>> float(grid.data_step) == 2.0**-24, grid.release_step > grid.data_step
    (True, True)

    Each value is clipped to ``[lo, hi]`` and rounded to the nearest multiple of
    ``data_step`` (a power of two ~2^-30 of the range), so the per-row
    contribution is an integer of magnitude at most ``data_bound`` and the sum
    is exact. The exact integer sum is then rounded to a multiple of
    ``2**shift`` data steps (the release grid, ~2^-20 of the noise standard
    deviation); rounding can move neighbouring sums by at most one extra step,
    which ``sensitivity`` includes. The released value is
    ``release_step * (rounded sum + noise)``.
    """

    lo: float
    hi: float
    data_step: Fraction
    data_bound: int
    shift: int
    sensitivity: int

    @functools.cached_property
    def release_step(self) -> float:
        """Real value of one unit of the released integer."""
        return float(self.data_step * 2**self.shift)

    def spread_sensitivity(self, cells: int) -> int:
        """The L1 change of the released sums of several cells (groups) when one unit's rows, ``contributions`` in
        all, may fall in up to ``cells`` of them: each cell's rounding to the release grid can move it by one more
        step (``sensitivity`` counts one), and ``⌊a⌋ + ⌊b⌋ <= ⌊a + b⌋`` bounds the rest.

        >>> grid = SumGrid.choose(0, 100, 3, resolve(Budget(epsilon=1.0), 1.0, None, None, None))
        >>> grid.spread_sensitivity(3) - grid.sensitivity == (2 if grid.shift else 0)
        True
        """
        return self.sensitivity + (cells - 1 if self.shift else 0)

    @classmethod
    def choose(cls, lo: float, hi: float, contributions: int, privacy: Privacy, *,
               replace: Literal["", "present", "any"] = "") -> SumGrid:
        """The grid for a sum of values clipped to ``[lo, hi]``, ``contributions`` rows per unit.

        One unit's rows change the sum by at most ``max(|lo|, |hi|)`` each when
        added or removed. Under replace-one neighbours (bounded DP) a value is
        replaced by another: ``replace="present"`` when every row has a value
        (a change of at most ``hi - lo``), ``"any"`` when a value may also drop
        out or appear (missing values, derived rows: ``max(hi - lo, |lo|, |hi|)``).

        >>> budget_half = resolve(Budget(epsilon=1.0), 0.5, None, None, None)
        >>> [SumGrid.choose(18, 90, 1, budget_half, replace=r).sensitivity for r in ("", "present", "any")]
        [737281, 589825, 737281]
        """
        return _sum_grid(float(lo), float(hi), contributions, privacy, replace)

    @classmethod
    def _choose(cls, lo: float, hi: float, contributions: int, privacy: Privacy,
                replace: Literal["", "present", "any"]) -> SumGrid:
        magnitude = max(abs(lo), abs(hi))
        data_step, data_bound = _data_grid(lo, hi)
        # Rounding to the grid is monotone, so values in [lo, hi] land within [round(lo), round(hi)] steps.
        spread = round(Fraction(hi) / data_step) - round(Fraction(lo) / data_step)
        change = {"": data_bound, "present": spread, "any": max(spread, data_bound)}[replace]
        real_change = {"": magnitude, "present": hi - lo, "any": max(hi - lo, magnitude)}[replace]
        noise_std = privacy.real_noise_std(contributions * real_change)
        bits = _NOISE_GRID_BITS[privacy.mechanism]
        shift = max(0, math.frexp(noise_std / float(data_step))[1] - 1 - bits)
        data_sensitivity = contributions * change
        sensitivity = data_sensitivity if shift == 0 else data_sensitivity // 2**shift + 1
        grid = cls(lo, hi, data_step, data_bound, shift, sensitivity)
        # Checked before any charge: the grid's steps must be ordinary floats and its
        # rounding step an int64 (tiny bounds or a tiny epsilon can break either).
        if shift > _MAX_SHIFT or not math.isfinite(grid.release_step) or data_step < _SMALLEST_STEP:
            raise ValueError(
                f"the sum of values in [{lo:g}, {hi:g}] with this epsilon (or rho) cannot be computed exactly "
                "in floating point: the bounds are too narrow or the privacy parameters too small; rescale "
                "the column or use a larger epsilon"
            )
        return grid

    @classmethod
    def exact(cls, lo: float, hi: float, contributions: int) -> SumGrid:
        """The data grid alone, for exact sums that a mechanism reads but does not release with noise itself.

        No release grid (``shift`` 0): ``sensitivity`` is the exact sum's, in data steps, when a unit adds or
        removes ``contributions`` values. Bounds as :func:`~dpframe.queries.plan.check_bounds` accepts them.

        >>> grid = SumGrid.exact(0.0, 100.0, 2)
        >>> grid.data_step == Fraction(1, 2**24), grid.sensitivity * grid.data_step
        (True, Fraction(200, 1))
        """
        data_step, data_bound = _data_grid(lo, hi)
        return cls(lo, hi, data_step, data_bound, 0, contributions * data_bound)

    def to_release_grid(self, exact_sums: NDArray[np.int64]) -> NDArray[np.int64]:
        """Round exact data-grid sums to the release grid (half to even, in integers)."""
        if self.shift == 0:
            return exact_sums
        step = np.int64(2**self.shift)
        quotient, remainder = np.divmod(exact_sums, step)
        half = step // 2
        up = (remainder > half) | ((remainder == half) & (quotient % 2 == 1))
        rounded: NDArray[np.int64] = quotient + up.astype(np.int64)
        return rounded


@functools.lru_cache(maxsize=1024)
def _sum_grid(lo: float, hi: float, contributions: int, privacy: Privacy,
              replace: Literal["", "present", "any"]) -> SumGrid:
    # A grid depends only on the bounds and the privacy arguments (see _noise); a refused one raises every time.
    return SumGrid._choose(lo, hi, contributions, privacy, replace)
