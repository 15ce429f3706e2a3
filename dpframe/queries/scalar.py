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

With ``bounds=None``, a quarter of the budget first finds bounds privately
(:mod:`dpframe.queries.bounds`, its own ledger line) and the query runs with
the rest; every argument is validated, and the whole cost checked against the
budget, before either is charged.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from fractions import Fraction
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.noise.mechanism import NoiseSpec, Privacy, SumGrid
from dpframe.queries import kernels
from dpframe.queries.bounds import (
    BoundsReads, bounds_note, resolve_bounds, schema_bounds, split_privacy, warn_if_clipped, weak_bounds,
)
from dpframe.queries.plan import GroupBounds, Plan, Target, check_bounds, check_numeric, split
from dpframe.results import Clipping, DPFloat, DPInt, Release

LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A post-processed estimate, its noise std, the half-width of its ``LEVEL`` interval, and the range
    ``clamp`` (low, high) each value was clamped to (None: not clamped)."""

    value: NDArray[np.float64]
    std: NDArray[np.float64]
    reach: NDArray[np.float64]
    clamp: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None

    def interval(self, low: float, high: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The interval ``value +- reach``, clipped to where the statistic can lie."""
        return np.clip(self.value - self.reach, low, high), np.clip(self.value + self.reach, low, high)

    def clamped(self, index: pd.Index[Any] | None = None) -> tuple[Any, Any] | None:
        """``clamp`` as a :class:`Release` keeps it: two floats (one value), or two Series on ``index``."""
        if self.clamp is None:
            return None
        low, high = self.clamp
        if index is None:
            return float(low[0]), float(high[0])
        return pd.Series(low, index=index, dtype=float), pd.Series(high, index=index, dtype=float)


def _summable(bounds: tuple[float, float]) -> bool:
    """Whether bounds pass :func:`~dpframe.queries.plan.check_bounds` (ordered, and in the range sums support)."""
    try:
        check_bounds(bounds)
    except ValueError:
        return False
    return True


def _values(target: Target, series: pd.Series[Any], mask: NDArray[np.bool_] | None) -> NDArray[np.float64]:
    values = kernels.as_float_array(series)
    return values if mask is None else values[mask]


def count(target: Target, privacy: Privacy, read: Callable[[], int] | None = None) -> DPInt:
    """Noisy number of rows (of a frame) or of non-missing values (of a series).

    ``read`` (called after the charge) counts exactly elsewhere than in ``target.obj``, which then only gives the
    schema: :mod:`dpframe.dask` counts the partitions of a Dask frame.
    """
    noise = privacy.noise(target.contributions)
    columns = (str(target.obj.name),) if isinstance(target.obj, pd.Series) else ()
    plan = Plan("count", columns, target, privacy, {"count": noise})
    plan.charge()
    mask = target.rows_in_use()
    obj = target.obj
    if read is not None:
        exact = read()
    elif isinstance(obj, pd.Series):
        present = kernels.present(obj)
        exact = int(present.sum() if mask is None else (present & mask).sum())
    else:
        exact = len(obj) if mask is None else int(mask.sum())
    half = noise.halfwidth(LEVEL)
    value = exact + int(noise.sample(1)[0])
    release = Release("count", columns, plan.mechanism, target.spent, noise.std, value - half, value + half)
    return DPInt(value, release)


def public_count(target: Target) -> DPInt:
    """Under bounded DP, the exact number of rows (or values) of the rows protect() made: public, so free.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": range(10)}).dp.protect(epsilon=1.0, neighbours="replace")
    >>> n = p.dp.count()
    >>> int(n), n.std, float(n.cost.epsilon)
    (10, 0.0, 0.0)
    """
    value = target.public_count
    assert value is not None
    columns = (str(target.obj.name),) if isinstance(target.obj, pd.Series) else ()
    kind = target.protection.budget.kind
    free = Privacy("approx" if kind == "advanced" else kind, "laplace", Fraction(0), Fraction(0), Fraction(0))
    plan = Plan("count", columns, target, free, mechanism_name="none: n is public under bounded DP", detail="exact",
                rule="bounded DP (replace-one neighbours): the number of rows is public")
    plan.charge()
    release = Release("count", columns, plan.mechanism, target.spent, 0.0, value, value)
    return DPInt(value, release)


def distinct_count(target: Target, privacy: Privacy) -> DPInt:
    """Noisy number of distinct non-missing values of a series, like ``Series.nunique()``.

    A privacy unit holds at most k = max_contributions rows, and each of its
    rows adds at most one value no other row has: adding or removing the unit
    changes the number of distinct values by at most k, so the noise is a
    count's (sensitivity k; Dwork & Roth, Def. 3.1).

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"zip": [f"z{i % 700}" for i in range(5000)]}).dp.protect(epsilon=1.0)
    >>> n = p["zip"].dp.nunique(epsilon=0.5)
    >>> abs(n - 700) < 30, n.release.query
    (True, 'nunique')
    """
    series = target.series
    noise = privacy.noise(target.contributions)
    plan = Plan("nunique", (str(series.name),), target, privacy, {"distinct values": noise})
    plan.charge()
    mask = target.rows_in_use()
    codes, _ = kernels.observed_codes(series if mask is None else series[mask])
    exact = int(np.unique(codes[codes >= 0]).size)
    half = noise.halfwidth(LEVEL)
    value = exact + int(noise.sample(1)[0])
    release = Release("nunique", (str(series.name),), plan.mechanism, target.spent, noise.std, value - half,
                      value + half)
    return DPInt(value, release)


def bounded_sum(
    target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy, clipping: bool | None = None,
    query: str = "sum", read: Callable[[SumGrid], kernels.MomentSums] | None = None,
    bounds_reads: BoundsReads | None = None,
) -> DPFloat | DPInt:
    """Noisy sum of the values clipped to ``bounds`` (found privately when ``bounds`` is None).

    ``clipping`` (default: with automatic bounds only) counts the values the
    bounds clip (``Release.clipping``) and warns when they are a noticeable share.
    ``read`` (called after the charge) makes the exact grid sums elsewhere (:func:`count`), and
    ``bounds_reads`` the bounds step's counts (:class:`~dpframe.queries.bounds.BoundsReads`).
    The sum of an integer or boolean column is released as an integer (rounded: post-processing; its
    interval widened by the half unit, so it still covers).
    """
    check_numeric(series, "sum")
    k = target.contributions
    bounds = schema_bounds(series) if bounds is None else bounds  # nothing to find, nothing clipped

    def check(rest: Privacy) -> None:
        lo, hi = (-1.0, 1.0) if bounds is None else check_bounds(bounds)
        rest.noise(SumGrid.choose(lo, hi, k, rest).sensitivity)

    total = privacy
    (lo, hi), privacy, clipped = resolve_bounds(target, series, bounds, privacy, "sum", check,
                                                clipping=bounds is None if clipping is None else clipping,
                                                reads=bounds_reads)
    note = "" if bounds is not None else bounds_note((lo, hi), total)
    change = sum_change(target)
    grid = SumGrid.choose(lo, hi, target.contributions, privacy, replace=change)
    noise = privacy.noise(grid.sensitivity)
    step = grid.release_step
    rule = "sequential composition" + {
        "": "", "present": "; bounded DP: a replaced row changes the sum by at most U − L",
        "any": "; bounded DP: a replaced row changes the sum by at most max(U − L, |L|, |U|)"}[change]
    plan = Plan(query, (str(series.name),), target, privacy, {"sum": noise}, {"sum": step}, rule=rule)
    plan.charge()
    sums = read(grid) if read is not None else kernels.moment_sums(_values(target, series, target.rows_in_use()),
                                                                   0.0, grid)
    released = grid.to_release_grid(sums.sums)[0] + noise.sample(1)[0]
    value = float(released) * step
    half = noise.halfwidth(LEVEL) * step
    whole = pd.api.types.is_integer_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype)
    if whole:
        value = float(round(value))
        half = math.ceil(half + 0.5)
    release = Release(
        "sum", plan.columns, plan.mechanism, target.spent, noise.std * step, value - half, value + half, LEVEL, (lo, hi),
        note, clipped, weak_bounds=bounds is None and few_rows(target, total, clipped),
    )
    warn_if_clipped(clipped, "sum", series.name, (value - half, value + half))
    return DPInt(int(value), release) if whole else DPFloat(value, release)


def few_rows(target: Target, privacy: Privacy, clipping: Clipping | None,
             count: tuple[float, float] | None = None) -> bool:
    """:func:`~dpframe.queries.bounds.weak_bounds` of a query spending ``privacy`` whose bounds were found
    automatically, read from its noisy ``count`` (value, noise std) if it has one, else the public number of rows, else
    the total of its noisy clipping counts; False when it has none of them (a sum with ``clipping=False``)."""
    if count is None and target.public_count is not None:
        count = (float(target.public_count), 0.0)
    if count is None and clipping is not None:
        count = (clipping.total, math.sqrt(3) * clipping.std)  # three independent counts
    if count is None:
        return False
    return weak_bounds(*count, split_privacy(privacy)[0], target.contributions)


def sum_change(target: Target) -> Literal["", "present", "any"]:
    """How one neighbour changes a sum (:meth:`SumGrid.choose`): add/remove, or bounded DP with or without public n."""
    if not target.protection.bounded:
        return ""
    return "present" if target.public_count is not None else "any"


def mean_over_public_n(target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy) -> DPFloat:
    """Under bounded DP, with n public: the noisy sum (sensitivity U − L, the whole budget) over n.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1, 3] * 500}).dp.protect(epsilon=1.0, neighbours="replace")
    >>> m = p["x"].dp.mean(bounds=(0, 4), epsilon=1.0)
    >>> bool(abs(m - 2) < 0.05), p.dp.budget.ledger["query"].tolist()
    (True, ['bounded DP', 'mean (public n)'])
    """
    n = target.public_count
    assert n is not None
    total = bounded_sum(target, series, bounds, privacy, clipping=False, query="mean (public n)")
    release = total.release
    note = "bounded DP: the noisy sum of the clipped values over the public number of rows"
    return DPFloat(float(total) / n, replace(release, query="mean", std=release.std / n, lower=release.lower / n,
                                             upper=release.upper / n, note=note))


class Moments:
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
        ddof: int = 1,
        group_bounds: GroupBounds | None = None,
        cells: int = 1,
    ):
        check_numeric(series, query)
        self.lo, self.hi = check_bounds(bounds)
        if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
            raise ValueError(f"ddof must be a non-negative integer, got {ddof!r}")
        self.ddof = int(ddof)
        self.center = (self.lo + self.hi) / 2
        self.half = (self.hi - self.lo) / 2
        names = ["count", "sum", "sum of squares"][: order + 1]
        shares = split(privacy, names)
        # Rows one unit may add to one cell, and the noise for a cell that many rows move by at most Δ.
        k = target.contributions if group_bounds is None else group_bounds.max_rows_per_group

        def noise(share: Privacy, change: int) -> NoiseSpec:
            return share.noise(change) if group_bounds is None else group_bounds.noise(share, change)

        self.grid = SumGrid.choose(-self.half, self.half, k, shares["sum"])
        self.square_grid = (
            SumGrid.choose(-self.half**2 / 2, self.half**2 / 2, k, shares["sum of squares"]) if order == 2 else None
        )
        self.noise: dict[str, NoiseSpec] = {
            "count": noise(shares["count"], k),
            "sum": noise(shares["sum"], self.grid.spread_sensitivity(cells)),
        }
        units = {"count": 1.0, "sum": self.grid.release_step}
        if self.square_grid is not None:
            self.noise["sum of squares"] = noise(shares["sum of squares"], self.square_grid.spread_sensitivity(cells))
            units["sum of squares"] = self.square_grid.release_step
        self.units = units
        self.plan = Plan(query, (str(series.name),), target, privacy, self.noise, units, rule)
        self.target, self.series, self.privacy = target, series, privacy

    def measure(self, read: Callable[[Moments], kernels.MomentSums] | None = None) -> dict[str, NDArray[np.float64]]:
        """Charge, read the data once (or ``read`` the exact sums elsewhere), return the noisy measurements."""
        self.plan.charge()
        if read is not None:
            return self.noisy(read(self))
        values = _values(self.target, self.series, self.target.rows_in_use())
        return self.noisy(self.exact(values))

    @property
    def kernel(self) -> kernels.MomentKernel:
        """:meth:`exact` without this object, whose plan holds the budget: picklable, for Dask's workers."""
        return kernels.MomentKernel(self.center, self.grid, self.square_grid, self.half**2 / 2)

    def exact(
        self, values: NDArray[np.float64], codes: kernels.Codes | None = None, n_groups: int = 1
    ) -> kernels.MomentSums:
        """The one pass over the data: counts, sums of deviations and of centred squares."""
        return self.kernel(values, codes, n_groups)

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

    def linearised(
        self, value: NDArray[np.float64], gradient: dict[str, NDArray[np.float64]], slack: NDArray[np.float64],
        clamp: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None, level: float = LEVEL,
    ) -> Estimate:
        """An estimate whose error is ~ sum of gradient[m] * noise[m] (delta method).

        The interval adds the measurements' exact ``level`` quantiles in
        quadrature: exact when one measurement dominates (e.g. the Laplace noise
        of a sum) or the noise is Gaussian, conservative otherwise.
        """
        stds = self.stds()
        std = np.sqrt(sum((g * stds[m]) ** 2 for m, g in gradient.items()))
        reach = np.sqrt(
            sum((g * self.noise[m].halfwidth(level) * self.units[m]) ** 2 for m, g in gradient.items())
        )
        return Estimate(value, np.asarray(std, dtype=np.float64), np.asarray(reach + slack, dtype=np.float64), clamp)

    @staticmethod
    def _rounding(grid: SumGrid, n: NDArray[np.float64]) -> NDArray[np.float64]:
        # Worst-case effect on an average of rounding each value to the data
        # grid and the sum to the release grid; tiny, but intervals must cover.
        return float(grid.data_step) / 2 + grid.release_step / (2 * n)

    def mean(self, measured: dict[str, NDArray[np.float64]], level: float = LEVEL) -> Estimate:
        """Post-processing: mean estimate (clamped to the bounds), its approximate noise std and rounding slack
        (the interval at ``level``)."""
        n = np.maximum(measured["count"], 1.0)
        deviation = measured["sum"] / n
        estimate = np.clip(self.center + deviation, self.lo, self.hi)
        return self.linearised(estimate, {"sum": 1 / n, "count": -deviation / n}, self._rounding(self.grid, n),
                               (np.full_like(estimate, self.lo), np.full_like(estimate, self.hi)), level)

    def variance(self, measured: dict[str, NDArray[np.float64]]) -> Estimate:
        """Post-processing: variance estimate (clamped to [0, half-width^2]), its approximate noise std and slack."""
        assert self.square_grid is not None
        n = np.maximum(measured["count"], 1.0)
        m1 = measured["sum"] / n
        m2 = measured["sum of squares"] / n + self.half**2 / 2
        correction = n / np.maximum(n - self.ddof, 1.0)
        # Clamp the population variance (at most half-width^2 for clipped data), then correct for ddof.
        estimate = np.clip(m2 - m1**2, 0.0, self.half**2) * correction
        gradient = {
            "sum of squares": correction / n,
            "sum": -2 * m1 * correction / n,
            "count": correction * (-(m2 - self.half**2 / 2) + 2 * m1**2) / n,
        }
        r1 = self._rounding(self.grid, n)
        slack = correction * (self._rounding(self.square_grid, n) + 2 * np.abs(m1) * r1 + r1**2)
        return self.linearised(estimate, gradient, slack, (np.zeros_like(estimate), self.half**2 * correction))


def moment_result(query: str, moments: Moments, measured: dict[str, NDArray[np.float64]]) -> Estimate:
    """The post-processed mean, variance or standard deviation with interval ingredients."""
    if query == "mean":
        return moments.mean(measured)
    variance = moments.variance(measured)
    if query == "var":
        return variance
    # std: the square root of the variance and of its interval's ends (monotone).
    root = np.sqrt(variance.value)
    lower, upper = variance.interval(0.0, math.inf)
    with np.errstate(over="ignore"):  # a variance at 0: the square root's slope, and its spread, are infinite
        spread = variance.std / (2 * np.maximum(root, 1e-300))
    assert variance.clamp is not None
    return Estimate(root, spread, np.maximum(root - np.sqrt(lower), np.sqrt(upper) - root),
                    (np.sqrt(variance.clamp[0]), np.sqrt(variance.clamp[1])))


def value_range(query: str, moments: Moments) -> tuple[float, float]:
    """Where a mean, variance or standard deviation of the clipped data can lie."""
    if query == "mean":
        return moments.lo, moments.hi
    # The ddof-corrected variance of clipped data can exceed half-width^2 slightly.
    return 0.0, math.inf


def with_bounds(
    query: str,
    target: Target,
    series: pd.Series[Any],
    bounds: Any,
    privacy: Privacy,
    order: int,
    rule: str = "sequential composition",
    ddof: int = 1,
    clipping: bool = False,
    reads: BoundsReads | None = None,
    domain: tuple[float, float] | None = None,
    group_bounds: GroupBounds | None = None,
    cells: int = 1,
) -> tuple[Moments, str, Clipping | None]:
    """The query's :class:`Moments` (bounds found privately when ``bounds`` is None, cut to a public ``domain``
    if given), a note, and the clipping.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"x": [10.0, 20.0] * 500}).dp.protect(epsilon=1.0)
    >>> target = Target.of(p)
    >>> with seeded_noise(0):
    ...     moments, note, clipped = with_bounds("mean", target, target.column("x"), None,
    ...                                          target.privacy(1.0, None, None, None), 1, clipping=True)
    >>> (moments.lo, moments.hi), "sparse vector" in note, clipped.noticeable
    ((9.5, 20.0), True, False)
    >>> p.dp.budget.ledger["query"].tolist()
    ['mean with automatic bounds (reserved)', 'bounds for mean', 'clipped values for mean']
    """

    bounds = schema_bounds(series) if bounds is None else bounds

    def check(rest: Privacy) -> None:
        Moments(target, series, (0.0, 1.0) if bounds is None else bounds, rest, query, order, rule, ddof,
                group_bounds, cells)

    (lo, hi), rest, clipped = resolve_bounds(target, series, bounds, privacy, query, check, clipping=clipping,
                                             reads=reads)
    if domain is not None:
        # Cut to the public domain (post-processing): a value beyond a cut end is clipped to the domain's end, as
        # clipping to the domain would. Bounds wholly outside it (data outside the domain), or a cut too narrow
        # to sum exactly (a domain end within ~1e-150 of a bound): the domain itself, checked before the charge.
        cut = max(lo, domain[0]), min(hi, domain[1])
        lo, hi = cut if _summable(cut) else domain
    note = "" if bounds is not None else "; " + bounds_note((lo, hi), privacy)
    return Moments(target, series, (lo, hi), rest, query, order, rule, ddof, group_bounds, cells), note, clipped


def _moment_query(
    query: str, target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy, ddof: int = 1,
    clipping: bool | None = None, read: Callable[[Moments], kernels.MomentSums] | None = None,
    bounds_reads: BoundsReads | None = None, domain: tuple[float, float] | None = None,
) -> DPFloat:
    bounds = schema_bounds(series) if bounds is None else bounds  # nothing to find, nothing clipped
    moments, note, clipped = with_bounds(query, target, series, bounds, privacy, 1 if query == "mean" else 2, ddof=ddof,
                                         clipping=bounds is None if clipping is None else clipping, reads=bounds_reads,
                                         domain=domain)
    measured = moments.measure(read)
    if domain is not None and clipped is not None:
        # The noise interval at half the miss probability, the clipping counts' bounds at the rest (union bound).
        estimate = moments.mean(measured, 1 - (1 - LEVEL) / 2)
        noise_lower, noise_upper = estimate.interval(moments.lo, moments.hi)
        lower, upper = (np.array([end]) for end in clipped.widened(float(noise_lower[0]), float(noise_upper[0]), domain))
        note = ("approximate interval (delta method) of the mean of the values clipped to the domain, widened by "
                "what clipping to the bounds can have moved it (docs/reading-answers.md)" + note)
    else:
        estimate = moment_result(query, moments, measured)
        lower, upper = estimate.interval(*value_range(query, moments))
        note = "approximate interval (delta method)" + note
    # With a domain the interval already includes what any bounds clipped: nothing to mark.
    few = bounds is None and domain is None and few_rows(target, privacy, clipped,
                                                          (float(measured["count"][0]), moments.stds()["count"]))
    release = Release(
        query, moments.plan.columns, moments.plan.mechanism, target.spent, float(estimate.std[0]),
        float(lower[0]), float(upper[0]), LEVEL, (moments.lo, moments.hi), note,
        clipped, estimate.clamped(), domain if clipped is not None else None, weak_bounds=few,
    )
    warn_if_clipped(clipped, query, series.name, None if release.domain else (float(lower[0]), float(upper[0])))
    return DPFloat(float(estimate.value[0]), release)


def mean(
    target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy, clipping: bool | None = None,
    read: Callable[[Moments], kernels.MomentSums] | None = None, bounds_reads: BoundsReads | None = None,
    domain: Any = None,
) -> DPFloat:
    """Noisy mean of the values clipped to ``bounds`` (``clipping`` and the reads: as :func:`bounded_sum`).

    Under bounded DP with a public number of values, :func:`mean_over_public_n`. ``domain=(A, B)``, a public
    range the values lie in, counts the clipped values (``clipping`` must not be False) and widens the interval
    to cover the mean of the values clipped to the domain, the bounds' clipping included
    (:meth:`~dpframe.results.Clipping.widened`); bounds found privately are cut to the domain.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"x": [1.0, 2.0] * 990 + [500.0] * 20}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(1):
    ...     m = mean(Target.of(p), Target.of(p).column("x"), (0.0, 4.0), Target.of(p).privacy(1.0, None, None, None),
    ...              domain=(0.0, 1000.0))
    >>> m.ci[0] < 1.5 + 20 * 498.5 / 2000 < m.ci[1], m.release.domain, m.clipping_bites
    (True, (0.0, 1000.0), False)
    """
    if domain is not None:
        domain = check_bounds(domain)
        if clipping is False:
            raise ValueError("domain= widens the interval by the clipped values' counts: it needs clipping=True")
        clipping = True
    if target.public_count is not None and bounds is not None and not clipping:
        return mean_over_public_n(target, series, bounds, privacy)
    return _moment_query("mean", target, series, bounds, privacy, clipping=clipping, read=read,
                         bounds_reads=bounds_reads, domain=domain)


def var(
    target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy, ddof: int = 1, clipping: bool | None = None,
    read: Callable[[Moments], kernels.MomentSums] | None = None, bounds_reads: BoundsReads | None = None,
) -> DPFloat:
    """Noisy variance of the values clipped to ``bounds`` (``clipping`` and the reads: as :func:`bounded_sum`)."""
    return _moment_query("var", target, series, bounds, privacy, ddof, clipping, read, bounds_reads)


def std(
    target: Target, series: pd.Series[Any], bounds: Any, privacy: Privacy, ddof: int = 1, clipping: bool | None = None,
    read: Callable[[Moments], kernels.MomentSums] | None = None, bounds_reads: BoundsReads | None = None,
) -> DPFloat:
    """Noisy standard deviation: the square root of the noisy variance (``clipping`` and the reads: as
    :func:`bounded_sum`)."""
    return _moment_query("std", target, series, bounds, privacy, ddof, clipping, read, bounds_reads)
