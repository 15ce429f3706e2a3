"""Scalar aggregates: count, sum, mean, variance and standard deviation.

Composition rules (recorded in the ledger):

* ``count``: one measurement, sensitivity = max_contributions.
* ``sum``: one measurement of the clipped values, sensitivity
  max_contributions * max(|lower|, |upper|).
* ``mean``: noisy sum / noisy count (book ch. 6), the budget split equally; the
  sum is of deviations from the midpoint of the bounds, which halves its
  sensitivity (exactly: the deviations are clipped to +/- half the width).
* ``var``/``std``: count, sum of deviations and sum of squared deviations,
  thirds of the budget each (the book's summary-statistics exercise).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.noise.mechanism import NoiseSpec, Privacy, SumGrid
from dpframe.queries import kernels
from dpframe.queries.plan import Plan, Target, check_bounds, check_numeric, normal_quantile, split
from dpframe.results import DPFloat, DPInt, Release

LEVEL = 0.95


def _values(target: Target, series: pd.Series[Any], mask: NDArray[np.bool_] | None) -> NDArray[np.float64]:
    values = kernels.as_float_array(series)
    return values if mask is None else values[mask]


def count(target: Target, privacy: Privacy) -> DPInt:
    """Noisy number of rows (of a frame) or of non-missing values (of a series)."""
    noise = privacy.noise(target.contributions)
    columns = (str(target.obj.name),) if isinstance(target.obj, pd.Series) else ()
    plan = Plan("count", columns, target, privacy, {"count": noise})
    plan.charge()
    mask = target.rows_in_use()
    obj = target.obj
    if isinstance(obj, pd.Series):
        present = obj.notna().to_numpy()
        exact = int(present.sum() if mask is None else (present & mask).sum())
    else:
        exact = len(obj) if mask is None else int(mask.sum())
    half = noise.halfwidth(LEVEL)
    value = exact + int(noise.sample(1)[0])
    release = Release("count", columns, plan.mechanism, privacy.cost, noise.std, value - half, value + half)
    return DPInt(value, release)


def bounded_sum(target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy) -> DPFloat:
    """Noisy sum of the values clipped to ``bounds``."""
    check_numeric(series, "sum")
    lo, hi = check_bounds(bounds)
    grid = SumGrid.choose(lo, hi, target.contributions, privacy)
    noise = privacy.noise(grid.sensitivity)
    step = grid.release_step
    plan = Plan("sum", (str(series.name),), target, privacy, {"sum": noise}, {"sum": step})
    plan.charge()
    values = _values(target, series, target.rows_in_use())
    sums = kernels.moment_sums(values, 0.0, grid)
    released = grid.to_release_grid(sums.sums)[0] + noise.sample(1)[0]
    value = float(released) * step
    half = noise.halfwidth(LEVEL) * step
    release = Release(
        "sum", plan.columns, plan.mechanism, privacy.cost, noise.std * step, value - half, value + half, LEVEL, (lo, hi)
    )
    return DPFloat(value, release)


class _Moments:
    """The shared measurements of mean/var/std: a count and centred grid sums."""

    def __init__(
        self,
        target: Target,
        series: pd.Series[Any],
        bounds: Any,
        privacy: Privacy,
        query: str,
        order: int,
        rule: str = "sequential composition",
    ):
        check_numeric(series, query)
        self.lo, self.hi = check_bounds(bounds)
        self.center = (self.lo + self.hi) / 2
        self.half = (self.hi - self.lo) / 2
        names = ["count", "sum", "sum of squares"][: order + 1]
        shares = split(privacy, names)
        k = target.contributions
        self.grid = SumGrid.choose(-self.half, self.half, k, shares["sum"])
        self.square_grid = (
            SumGrid.choose(-self.half**2 / 2, self.half**2 / 2, k, shares["sum of squares"]) if order == 2 else None
        )
        self.noise: dict[str, NoiseSpec] = {
            "count": shares["count"].noise(k),
            "sum": shares["sum"].noise(self.grid.sensitivity),
        }
        units = {"count": 1.0, "sum": self.grid.release_step}
        if self.square_grid is not None:
            self.noise["sum of squares"] = shares["sum of squares"].noise(self.square_grid.sensitivity)
            units["sum of squares"] = self.square_grid.release_step
        self.units = units
        self.plan = Plan(query, (str(series.name),), target, privacy, self.noise, units, rule)
        self.target, self.series, self.privacy = target, series, privacy

    def measure(self) -> dict[str, NDArray[np.float64]]:
        """Charge, read the data once, and return the noisy measurements in real units."""
        self.plan.charge()
        values = _values(self.target, self.series, self.target.rows_in_use())
        return self.noisy(kernels.moment_sums(values, self.center, self.grid, self.square_grid))

    def noisy(self, exact: kernels.MomentSums) -> dict[str, NDArray[np.float64]]:
        """Add the planned noise to exact measurements and convert them to real units."""
        n_groups = len(exact.counts)
        measured = {
            "count": exact.counts,
            "sum": self.grid.to_release_grid(exact.sums),
        }
        if self.square_grid is not None and exact.square_sums is not None:
            measured["sum of squares"] = self.square_grid.to_release_grid(exact.square_sums)
        return {
            name: (value + self.noise[name].sample(n_groups)).astype(np.float64) * self.units[name]
            for name, value in measured.items()
        }

    def stds(self) -> dict[str, float]:
        """Noise standard deviations of the measurements in real units."""
        return {name: spec.std * self.units[name] for name, spec in self.noise.items()}

    def mean(self, measured: dict[str, NDArray[np.float64]]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Post-processing: mean estimate (clamped to the bounds) and its approximate noise std."""
        n = np.maximum(measured["count"], 1.0)
        deviation = measured["sum"] / n
        estimate = np.clip(self.center + deviation, self.lo, self.hi)
        std = self.stds()
        # Delta method for a ratio of independent noisy quantities.
        spread = np.sqrt(std["sum"] ** 2 + (deviation * std["count"]) ** 2) / n
        return estimate, spread

    def variance(
        self, measured: dict[str, NDArray[np.float64]], ddof: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Post-processing: variance estimate (clamped to [0, half-width^2]) and its approximate noise std."""
        n = np.maximum(measured["count"], 1.0)
        m1 = measured["sum"] / n
        m2 = measured["sum of squares"] / n + self.half**2 / 2
        correction = n / np.maximum(n - ddof, 1.0)
        estimate = np.clip((m2 - m1**2) * correction, 0.0, self.half**2)
        std = self.stds()
        grad_n = (-(m2 - self.half**2 / 2) + 2 * m1**2) / n
        spread = correction * np.sqrt(
            (std["sum of squares"] / n) ** 2 + (2 * m1 * std["sum"] / n) ** 2 + (grad_n * std["count"]) ** 2
        )
        return estimate, spread


def _scalar_result(
    query: str, moments: _Moments, estimate: float, spread: float, lower: float, upper: float
) -> DPFloat:
    z = normal_quantile(LEVEL)
    release = Release(
        query,
        moments.plan.columns,
        moments.plan.mechanism,
        moments.privacy.cost,
        spread,
        max(estimate - z * spread, lower),
        min(estimate + z * spread, upper),
        LEVEL,
        (moments.lo, moments.hi),
        "approximate interval (delta method)",
    )
    return DPFloat(estimate, release)


def mean(target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy) -> DPFloat:
    """Noisy mean of the values clipped to ``bounds``."""
    moments = _Moments(target, series, bounds, privacy, "mean", order=1)
    estimate, spread = moments.mean(moments.measure())
    return _scalar_result("mean", moments, float(estimate[0]), float(spread[0]), moments.lo, moments.hi)


def var(target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy, ddof: int = 1) -> DPFloat:
    """Noisy variance of the values clipped to ``bounds``."""
    moments = _Moments(target, series, bounds, privacy, "var", order=2)
    estimate, spread = moments.variance(moments.measure(), ddof)
    return _scalar_result("var", moments, float(estimate[0]), float(spread[0]), 0.0, moments.half**2)


def std(target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy, ddof: int = 1) -> DPFloat:
    """Noisy standard deviation: the square root of the noisy variance."""
    moments = _Moments(target, series, bounds, privacy, "std", order=2)
    variance, spread = moments.variance(moments.measure(), ddof)
    estimate = math.sqrt(float(variance[0]))
    z = normal_quantile(LEVEL)
    lower = math.sqrt(max(float(variance[0]) - z * float(spread[0]), 0.0))
    upper = math.sqrt(min(float(variance[0]) + z * float(spread[0]), moments.half**2))
    std_of_std = float(spread[0]) / (2 * max(estimate, 1e-300))
    release = Release(
        "std", moments.plan.columns, moments.plan.mechanism, privacy.cost, std_of_std, lower, upper, LEVEL,
        (moments.lo, moments.hi), "approximate interval (from the variance's)",
    )
    return DPFloat(estimate, release)
