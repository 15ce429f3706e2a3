"""Noisy clipped gradient descent for linear models: shared by logistic (``method="gd"``/``"sgd"``) and linear
(``method="gd"``) regression.

A generalised linear model's per-row gradient is ``r(x·w, y) · x`` for a
residual ``r`` (logistic: ``σ(x·w) − y``; squared loss: ``x·w − y``), so one
training loop serves both: each step releases the noisy sum of the units'
clipped gradients (:mod:`dpframe.learning._noisy`), averages it by a noisy
unit count, and moves with Nesterov momentum (post-processing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dpframe.learning._base import Data, noisy_count, zcdp_of
from dpframe.learning._noisy import Units, VectorGrid, gaussian_sigma2, noisy, poisson_keep
from dpframe.noise.mechanism import Privacy

# The share of the fit's rho (or, for DP-SGD, of the rho equivalent to its (ε, δ)) spent on the noisy number
# of units that turns noisy gradient sums into averages.
COUNT_SHARE = Fraction(1, 20)
# Nesterov momentum of the updates (post-processing of the noisy gradients): full-batch descent on one-hot
# designs is ill-conditioned, and momentum reaches in 40 steps what plain steps need hundreds for (Adult).
MOMENTUM = 0.9

# A row's residual from its score x·w and its label: the gradient of the loss in x·w.
Residual = Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]


@dataclass(frozen=True)
class Schedule:
    """The noise of a fit, decided before any charge."""

    grid: VectorGrid
    sigma2: Fraction  # per coordinate per step, grid units
    count_rho: Fraction
    rate: Fraction  # 1 for full batches
    detail: str
    rule: str


def check(steps: object, learning_rate: object, clipping_norm: object, given_steps: object) -> int:
    """The number of steps, after checking the descent's public parameters (``given_steps`` names the argument)."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 1 <= steps <= 100_000:
        raise ValueError(f"steps must be a whole number from 1 to 100000, got {given_steps!r}")
    for what, value in (("learning_rate", learning_rate), ("clipping_norm", clipping_norm)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{what} must be a positive number, got {value!r}")
    if not 1e-100 <= clipping_norm <= 1e100:  # type: ignore[operator]
        # Below, the squared norms of gradients near the clipping norm underflow and escape clipping.
        raise ValueError(f"clipping_norm must lie in [1e-100, 1e100] (features are scaled to [-1, 1]), "
                         f"got {clipping_norm!r}")
    return int(steps)


def full_batch(privacy: Privacy, clipping_norm: float, width: int, steps: int, name: str) -> Schedule:
    """Full-batch steps and the unit count sharing the fit's ρ (zCDP composition)."""
    grid = VectorGrid.choose(float(clipping_norm), width)
    rho, conversion = zcdp_of(privacy, name)
    count_rho = rho * COUNT_SHARE
    sigma2 = gaussian_sigma2(grid.sensitivity2 * steps, rho - count_rho)
    sigma = math.sqrt(sigma2) * grid.step
    detail = (f"{steps} full-batch steps; each unit's gradient clipped to L2 norm {clipping_norm:g} and "
              f"rounded to a grid of {grid.step:.3g} (sensitivity {float(grid.sensitivity2) ** 0.5 * grid.step:.4g}"
              f"); σ={sigma:.4g} per coordinate of {width} per step; a noisy unit count "
              f"(ρ={float(count_rho):.3g})")
    return Schedule(grid, sigma2, count_rho, Fraction(1), detail,
                    f"zCDP composition of {steps} steps and the count{conversion}")


def train(data: Data, schedule: Schedule, residual: Residual, steps: int, learning_rate: float,
          l2: float) -> NDArray[np.float64]:
    """Gradient steps from zero on noisy averaged gradients; returns the mean of the second half's iterates."""
    X, y, units = data.X, data.y, data.units
    count = noisy_count(units.count(len(X)), schedule.count_rho)
    scale = schedule.grid.step / (count * float(schedule.rate))
    weights = np.zeros(X.shape[1])
    velocity = np.zeros_like(weights)
    average = np.zeros_like(weights)
    codes = None if units.order is None else _codes_of(units, len(X))
    for t in range(steps):
        ahead = weights + MOMENTUM * velocity  # Nesterov: the gradient is taken at the look-ahead point
        # A diverging model's scores overflow on some rows: a warning then would depend on the data (the clipping
        # zeroes such rows' gradients).
        with np.errstate(over="ignore", invalid="ignore"):
            if schedule.rate == 1:
                total = units.clipped_sum(schedule.grid, X, residual(X @ ahead, y))
            else:
                total = _sampled_sum(schedule, residual, X, y, ahead, units, codes)
        gradient = noisy(total, schedule.sigma2) * scale + l2 * ahead
        velocity = MOMENTUM * velocity - learning_rate * gradient
        weights = weights + velocity
        if t >= steps // 2:
            average += weights
    result: NDArray[np.float64] = average / (steps - steps // 2)
    return result


def _codes_of(units: Units, rows: int) -> NDArray[np.intp]:
    """Each row's unit number 0..units-1 (from the grouping)."""
    assert units.order is not None and units.starts is not None
    codes = np.empty(rows, dtype=np.intp)
    codes[units.order] = np.repeat(np.arange(len(units.starts)), np.diff(np.r_[units.starts, rows]))
    return codes


def _sampled_sum(schedule: Schedule, residual: Residual, X: NDArray[np.float64], y: NDArray[np.float64],
                 weights: NDArray[np.float64], units: Units, codes: NDArray[np.intp] | None) -> NDArray[np.int64]:
    """One DP-SGD step's exact sum: units kept with probability ``rate``, each unit's gradient clipped."""
    if codes is None:
        rows = np.flatnonzero(poisson_keep(len(X), schedule.rate))
        group = Units()
    else:
        kept = poisson_keep(units.count(len(X)), schedule.rate)
        rows = np.flatnonzero(kept[codes])
        group = Units.of(codes[rows])
    batch = X[rows]
    return group.clipped_sum(schedule.grid, batch, residual(batch @ weights, y[rows]))
