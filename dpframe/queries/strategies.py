"""Vector queries with L2 sensitivity, and strategies for workloads of range queries.

Two ways of answering many linear queries for less noise than answering each
one separately (Near & Abuah, *Programming Differential Privacy*, ch. 8 and
the matrix mechanism literature); ``docs/strategies.md`` has the theorems.

**Vector counts** (:func:`counts`): ``m`` counts of conditions on one frame,
released together by one Gaussian mechanism calibrated to their **L2**
sensitivity ``k√m`` (one privacy unit's ``k`` rows move each count by at
most ``k``), rather than ``m`` mechanisms composed; :func:`sums` does the same for bounded
sums, each scaled by its own sensitivity. Conditions are computed
on the protected frame, before the charge, by its row-wise operations (which
refuse exact reads and cross-row operations): an error in one is about the
schema, never about a record, and costs nothing.

**Range counts** (:func:`range_counts`): counts of many ranges of one
numeric column over public bins. A *strategy* -- the bins themselves
(``"identity"``) or a ``b``-ary tree of bin groups (``"hierarchical"``, Hay et
al. 2010; Qardaji et al. 2013 for ``b = 16``) -- is measured with exact
discrete noise, the bin counts are estimated from all measurements by least
squares (the matrix mechanism, Li et al. 2010/2015; for the tree this is Hay
et al.'s consistent estimate), and every range is answered from those
estimates: the answers are consistent (a total equals the sum of its parts),
unbiased, and each has the exact variance ``σ² wᵀ(AᵀA)⁻¹w`` of its strategy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.noise.mechanism import NoiseSpec, Privacy, SumGrid
from dpframe.protection.base import Protected, same_rows
from dpframe.protection.rowwise import quiet
from dpframe.queries import kernels
from dpframe.queries.partitioned import check_edges
from dpframe.queries.plan import Plan, Target, check_bounds, check_numeric, normal_quantile
from dpframe.queries.scalar import LEVEL
from dpframe.results import Clipping, Release, with_release

__all__ = ["MAX_BINS", "Strategy", "counts", "range_counts", "sums"]

# Public bins a range-count query may have: the least-squares step inverts a (bins + 2)² matrix.
MAX_BINS = 2048
# Qardaji, Yang & Li (2013) find branching factors around 16 best for range queries with consistency.
DEFAULT_BRANCHING = 16


# ---------------------------------------------------------------------------
# vector counts
# ---------------------------------------------------------------------------


def _vector_noise(privacy: Privacy, m: int, k: int) -> tuple[NoiseSpec, str]:
    """The noise of each of ``m`` counts released together, and the rule, when a unit moves each by ``k``."""
    if privacy.mechanism == "gaussian":
        return privacy.vector_noise(m, k), f"one vector Gaussian release, L2 sensitivity {k}·√{m}"
    return privacy.noise(k * m), f"one Laplace release, L1 sensitivity {k}·{m}"


def counts(target: Target, frame: Any, conditions: Any, privacy: Privacy) -> pd.Series[Any]:
    """Noisy counts of the rows meeting each condition, released as one vector.

    ``conditions`` maps names to boolean conditions on the protected
    ``frame``: protected boolean series (``p["age"] >= 18``) or functions of
    the frame that return one (``lambda d: d["age"] >= 18``).

    >>> import numpy as np, pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": np.arange(10_000) % 90}).dp.protect(epsilon=1.0, delta=1e-6)
    >>> c = p.dp.counts({"adults": lambda d: d["age"] >= 18, "over 65": p["age"] > 65}, epsilon=0.5, delta=1e-7)
    >>> list(c.index), c.attrs["dp"].mechanism
    (['adults', 'over 65'], 'discrete Gaussian')
    """
    if not isinstance(conditions, Mapping) or len(conditions) == 0:
        raise TypeError("conditions must be a non-empty dict {name: condition}, e.g. {'adults': p['age'] >= 18}")
    masks = []
    for name, condition in conditions.items():
        # Computed on the protected frame (its row-wise operations), before any charge.
        cond = condition(frame) if callable(condition) and not isinstance(condition, Protected) else condition
        if not isinstance(cond, Protected) or cond.ndim != 1 or not same_rows([frame, cond]):
            raise TypeError(f"condition {name!r} must be a boolean column computed from this protected frame, "
                            "e.g. p['age'] >= 18 or lambda d: d['age'] >= 18")
        series = Target.of(cond).obj
        if not pd.api.types.is_bool_dtype(series.dtype):
            raise TypeError(f"condition {name!r} has dtype {series.dtype}, not boolean: compare values to make "
                            "one, e.g. p['x'] > 0")
        masks.append(series)
    k, m = target.contributions, len(masks)
    noise, rule = _vector_noise(privacy, m, k)
    plan = Plan("counts", (), target, privacy, {"count": noise}, rule=rule)
    plan.charge()
    in_use = target.rows_in_use()
    rows = np.ones(len(target.obj), dtype=bool) if in_use is None else in_use
    with quiet():  # missing values count as False, as in a filter; nothing about them may show
        exact = np.array([int((mask.fillna(False).to_numpy(dtype=bool) & rows).sum()) for mask in masks],
                         dtype=np.int64)
    noisy = exact + noise.sample(m)
    index = pd.Index(list(conditions), name="condition")
    result = pd.Series(noisy, index=index, name="count", dtype=np.int64)
    half = noise.halfwidth(LEVEL)
    release = Release("counts", (), plan.mechanism, target.spent, noise.std, result - half, result + half, LEVEL,
                      note=rule)
    return with_release(result, release)  # type: ignore[no-any-return]


def sums(target: Target, frame: Any, columns: Any, privacy: Privacy) -> pd.Series[Any]:
    """Noisy sums of several bounded columns, released as one vector.

    ``columns`` maps names to ``(column, (lower, upper))``: a column label of
    ``frame`` or a protected numeric column of it, and its clipping bounds.
    Each sum is computed exactly on its own integer grid (:class:`SumGrid`,
    sensitivity ``s_j`` grid units); scaled by ``s_j``, the m sums have L2
    sensitivity √m, so each gets discrete Gaussian noise with σ_j² = s_j²·m/(2ρ)
    (Laplace: scale s_j·m/ε), one release.

    >>> import numpy as np, pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": np.arange(10_000) % 90, "hours": 40}).dp.protect(epsilon=1.0, delta=1e-6)
    >>> s = p.dp.sums({"age": ("age", (0, 125)), "hours": (p["hours"] * 1.0, (0, 40))}, epsilon=1.0, delta=1e-7)
    >>> bool(abs(s["hours"] - 400_000) < 3_000), list(s.attrs["dp"].std.index)  # σ ≈ 300
    (True, ['age', 'hours'])
    """
    if not isinstance(columns, Mapping) or len(columns) == 0:
        raise TypeError("columns must be a non-empty dict {name: (column, (lower, upper))}")
    parts = []
    for name, spec in columns.items():
        if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence) or len(spec) != 2:
            raise TypeError(f"sum {name!r} must be a pair (column, (lower, upper)), got {spec!r}")
        column, bounds = spec
        if isinstance(column, Protected):
            if column.ndim != 1 or not same_rows([frame, column]):
                raise TypeError(f"sum {name!r}: a protected column must be computed from this frame's rows")
            series = Target.of(column).series
        else:
            series = target.column(column)
        check_numeric(series, "sums")
        parts.append((series, check_bounds(bounds)))
    m, k = len(parts), target.contributions
    grids = [SumGrid.choose(lo, hi, k, privacy.share(Fraction(1, m))) for _, (lo, hi) in parts]
    if privacy.mechanism == "gaussian":
        noises = [privacy.l2_noise(m * grid.sensitivity**2) for grid in grids]
        rule = f"one vector Gaussian release, each sum scaled by its sensitivity: L2 sensitivity √{m}"
    else:
        noises = [privacy.noise(m * grid.sensitivity) for grid in grids]
        rule = f"one Laplace release, each sum scaled by its sensitivity: L1 sensitivity {m}"
    names = [str(name) for name in columns]
    plan = Plan("sums", tuple(names), target, privacy, dict(zip(names, noises)),
                {name: grid.release_step for name, grid in zip(names, grids)}, rule=rule)
    plan.charge()
    in_use = target.rows_in_use()
    values, stds, halves = [], [], []
    for (series, _), grid, noise in zip(parts, grids, noises):
        data = kernels.as_float_array(series)
        exact = kernels.moment_sums(data if in_use is None else data[in_use], 0.0, grid)
        values.append(float(grid.to_release_grid(exact.sums)[0] + noise.sample(1)[0]) * grid.release_step)
        stds.append(noise.std * grid.release_step)
        halves.append(noise.halfwidth(LEVEL) * grid.release_step)
    index = pd.Index(list(columns), name="sum")
    result = pd.Series(values, index=index, name="sum")
    half = pd.Series(halves, index=index)
    release = Release("sums", tuple(names), plan.mechanism, target.spent, pd.Series(stds, index=index),
                      result - half, result + half, LEVEL, note=rule)
    return with_release(result, release)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------
# strategies for range counts
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Strategy:
    """Which sums of the ``leaves`` (bins) are measured: the rows of a 0/1 matrix ``A``, and its estimator.

    Every leaf is in exactly ``levels`` measured sums, so one row changes
    ``levels`` measurements by one: L1 sensitivity ``k·levels``, L2 ``k·√levels``.

    >>> tree = Strategy.hierarchical(5, branching=2)
    >>> tree.matrix.shape, tree.levels
    ((11, 5), 4)
    >>> (tree.estimate(tree.matrix @ np.arange(5.0)).round(6) + 0.0).tolist()  # exact measurements are kept
    [0.0, 1.0, 2.0, 3.0, 4.0]
    """

    name: str
    matrix: NDArray[np.float64]
    levels: int

    @classmethod
    def identity(cls, leaves: int) -> Strategy:
        """Measure each leaf once (a histogram)."""
        return cls("identity", np.eye(leaves), 1)

    @classmethod
    def hierarchical(cls, leaves: int, branching: int = DEFAULT_BRANCHING) -> Strategy:
        """Measure every node of a ``branching``-ary tree over the leaves: the leaves, groups of
        ``branching`` consecutive nodes, ... up to the root (the total). The last group of a level may be smaller.
        """
        rows = [np.eye(leaves)]
        while len(rows[-1]) > 1:
            below = rows[-1]
            rows.append(np.array([below[i:i + branching].sum(axis=0) for i in range(0, len(below), branching)]))
        return cls(f"hierarchical (branching {branching})", np.vstack(rows), len(rows))

    @cached_property
    def _inverse(self) -> NDArray[np.float64]:
        """(AᵀA)⁻¹: the least-squares estimator's covariance, in units of one measurement's noise variance."""
        return np.asarray(np.linalg.inv(self.matrix.T @ self.matrix), dtype=np.float64)

    def estimate(self, measured: NDArray[Any]) -> NDArray[np.float64]:
        """The least-squares leaf counts given noisy ``measured`` sums (equal noise on each: also the best
        linear unbiased estimate, Gauss-Markov; for the tree, Hay et al.'s consistent estimate)."""
        leaves: NDArray[np.float64] = self._inverse @ (self.matrix.T @ measured.astype(np.float64))
        return leaves

    def range_variances(self, starts: NDArray[np.int64], stops: NDArray[np.int64]) -> NDArray[np.float64]:
        """``wᵀ(AᵀA)⁻¹w`` for each range of leaves ``[start, stop)`` (``w`` its 0/1 indicator), per unit
        noise variance: from the prefix sums of (AᵀA)⁻¹, a range being a difference of two prefixes."""
        prefix = np.zeros((self.matrix.shape[1] + 1,) * 2)
        prefix[1:, 1:] = self._inverse.cumsum(axis=0).cumsum(axis=1)
        variances: NDArray[np.float64] = (prefix[stops, stops] + prefix[starts, starts]
                                          - 2 * prefix[starts, stops])
        return np.maximum(variances, 0.0)


@lru_cache(maxsize=8)
def _strategy(name: str, leaves: int, branching: int) -> Strategy:
    # Public structure only (no data): kept so that repeated queries reuse the factorisation.
    return Strategy.identity(leaves) if name == "identity" else Strategy.hierarchical(leaves, branching)


def _edges(bins: Any, bounds: Any) -> NDArray[np.float64]:
    """The public bin edges: a number of equal bins over ``bounds``, or the edges themselves."""
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if not 1 <= bins <= MAX_BINS:
            raise ValueError(f"bins must be between 1 and {MAX_BINS}, got {bins}")
        lo, hi = check_bounds(bounds)
        return np.linspace(lo, hi, int(bins) + 1)
    if bins is None:
        raise ValueError("pass bins=: a number of bins with bounds=(lower, upper), or a list of bin edges; the bins "
                         "must be public (chosen without looking at the data)")
    edges = check_edges(bins)
    if bounds is not None:
        raise ValueError("give either bin edges, or a number of bins with bounds=(lower, upper), not both")
    if len(edges) - 1 > MAX_BINS:
        raise ValueError(f"at most {MAX_BINS} bins, got {len(edges) - 1}; use wider bins")
    return edges


def _endpoint(value: Any, edges: NDArray[np.float64], open_leaf: int) -> int:
    """The leaf where a range starting (or ending) at ``value`` begins (ends): None is the open end."""
    if value is None:
        return open_leaf
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"range ends must be numbers or None (open), got {value!r}") from None
    tolerance = 1e-9 * (edges[-1] - edges[0])
    at = np.flatnonzero(np.abs(edges - x) <= tolerance)
    if len(at) == 0:
        nearest = edges[np.argsort(np.abs(edges - x))[:2]]
        raise ValueError(f"range end {value!r} is not a bin edge (nearest: {sorted(nearest.tolist())}); ranges are "
                         "unions of bins: use bin edges, or None for an open end")
    return int(at[0]) + 1  # leaf 0 holds the values below the first edge


def _ranges(ranges: Any, edges: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Each range ``(low, high)`` as the leaves ``[start, stop)`` it covers."""
    if isinstance(ranges, (str, bytes)) or not isinstance(ranges, Sequence) or len(ranges) == 0:
        raise TypeError("ranges must be a non-empty list of (low, high) pairs; None is an open end")
    starts, stops = [], []
    for item in ranges:
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise TypeError(f"each range must be a pair (low, high), got {item!r}")
        start, stop = _endpoint(item[0], edges, 0), _endpoint(item[1], edges, len(edges) + 1)
        if start >= stop:
            raise ValueError(f"range {item!r} is empty: low must be below high")
        starts.append(start)
        stops.append(stop)
    return np.array(starts, dtype=np.int64), np.array(stops, dtype=np.int64)


def range_counts(
    target: Target,
    ranges: Any,
    bins: Any,
    bounds: Any,
    strategy: str,
    branching: int | None,
    privacy: Privacy,
) -> pd.Series[Any]:
    """Noisy counts of the values in each range ``[low, high)``, from a measured strategy made consistent.

    The bins ``[e0, e1), ..., [e_{n-1}, e_n)`` must be public; two more bins,
    below ``e0`` and from ``e_n`` up, hold the values outside them, so open
    ranges (``None`` for an end) count everyone and closed ranges exclude
    them; their estimates are reported (``Release.clipping``). Missing values
    are not counted. See the module docstring and ``docs/strategies.md``.

    >>> import numpy as np, pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": np.arange(10_000) % 90}).dp.protect(epsilon=1.0)
    >>> r = p["age"].dp.range_counts([(None, 18), (18, 65), (65, None), (None, None)], bins=90, bounds=(0, 90),
    ...                              epsilon=1.0)
    >>> bool(abs(r.iloc[:3].sum() - r.iloc[3]) < 1e-6)  # consistent: the parts add up to the total
    True
    """
    series = target.series
    check_numeric(series, "range_counts")
    edges = _edges(bins, bounds)
    starts, stops = _ranges(ranges, edges)
    leaves = len(edges) + 1
    if strategy not in ("auto", "identity", "hierarchical"):
        raise ValueError(f"strategy must be 'auto', 'identity' or 'hierarchical', got {strategy!r}")
    if strategy == "identity" and branching is not None:
        raise ValueError("branching= is for strategy='hierarchical' (or 'auto')")
    b = DEFAULT_BRANCHING if branching is None else branching
    if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 2:
        raise ValueError(f"branching must be an integer >= 2, got {branching!r}")
    k = target.contributions
    candidates = [_strategy(name, leaves, int(b)) for name in ("identity", "hierarchical")
                  if strategy in ("auto", name)]
    # "auto": the candidate whose answers to this workload have the least total variance -- a function of the
    # public bins, ranges and privacy parameters only, so choosing costs nothing.
    plan_of, noise, rule = min(((c, *_vector_noise(privacy, c.levels, k)) for c in candidates),
                               key=lambda c: c[1].std ** 2 * float(c[0].range_variances(starts, stops).sum()))
    rule = f"{plan_of.name} strategy, each row in {plan_of.levels} measured sums: {rule}"
    plan = Plan("range_counts", (str(series.name),), target, privacy, {"count": noise}, rule=rule)
    plan.charge()
    mask = target.rows_in_use()
    values = kernels.as_float_array(series)
    values = values if mask is None else values[mask]
    values = values[~np.isnan(values)]
    exact = np.bincount(np.searchsorted(edges, values, side="right"), minlength=leaves)
    measured = plan_of.matrix @ exact + noise.sample(len(plan_of.matrix))
    estimate = plan_of.estimate(measured)
    prefix = np.r_[0.0, np.cumsum(estimate)]
    answers = prefix[stops] - prefix[starts]
    stds = noise.std * np.sqrt(plan_of.range_variances(starts, stops))
    reach = normal_quantile(LEVEL) * stds
    lows = np.r_[-np.inf, edges][starts]
    highs = np.r_[edges, np.inf][stops - 1]
    index = pd.IntervalIndex.from_arrays(lows, highs, closed="left", name=series.name)
    result = pd.Series(answers, index=index, name="count")
    outer_std = float(noise.std * math.sqrt(plan_of.range_variances(np.array([0]), np.array([1]))[0]))
    outside = Clipping(float(edges[0]), float(edges[-1]), float(estimate[0]), float(estimate[1:-1].sum()),
                       float(estimate[-1]), outer_std, normal_quantile(LEVEL) * outer_std, False)
    note = (f"{plan_of.name} strategy, least-squares consistent; 95% intervals by the normal approximation of the "
            f"estimates' exact variances; ranges are [low, high), the bins' outside (below {edges[0]:g}, from "
            f"{edges[-1]:g} up) counted only by open ranges")
    release = Release("range_counts", (str(series.name),), plan.mechanism, target.spent,
                      pd.Series(stds, index=index), result - reach, result + reach, LEVEL,
                      (float(edges[0]), float(edges[-1])), note, outside)
    return with_release(result, release)  # type: ignore[no-any-return]
