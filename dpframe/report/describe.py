"""The private twin of ``DataFrame.describe(include="all")``.

Budget rule (see ``docs/describe.md``)
--------------------------------------
``epsilon`` is split over the described columns in proportion to their
weights (1 each unless ``weights={column: w}`` says otherwise). Within a
column, by statistic:

* numeric: without declared bounds, :data:`BOUNDS_SHARE` (a quarter) finds
  clipping bounds privately -- once, reused by every other statistic. Of the
  rest, half measures count, sum and sum of squares (thirds each; count, mean
  and std all come from these three measurements) and half goes to the
  quantiles (equal shares per level; the median is always included, as in pandas).
* categorical / object / bool: a quarter to the count of non-missing values,
  three quarters to the noisy count of every category (parallel composition);
  ``unique``, ``top`` and ``freq`` are post-processing of those counts.

All shares are exact fractions, so the ledger adds up to ``epsilon`` exactly.
Delta is spent only by categorical columns whose categories are not public
(private selection, as ``value_counts``): ``delta`` (or, without it, a tenth of
the budget's delta) split equally among them.

Everything -- columns, dtypes, bounds, keys, weights, percentiles, epsilon and
whether the total fits the budget -- is checked before anything is charged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pandas as pd

from dpframe.accounting.costs import Cost, exact
from dpframe.noise.mechanism import Privacy, resolve, selection_delta
from dpframe.progress import Progress
from dpframe.queries import kernels, partitioned, scalar, temporal
from dpframe.queries import select as selection
from dpframe.queries.bounds import BOUNDS_SHARE, private_bounds, weak_bounds
from dpframe.queries.partitioned import CellReader, Partitioning, require_selection
from dpframe.queries.plan import Target, check_bounds
from dpframe.queries.scalar import LEVEL, Estimate, Moments, moment_result
from dpframe.results import WEAK_BOUNDS, Release, at_bound, current_release, is_unreliable, with_release

__all__ = [
    "BOUNDS_SHARE",
    "CATEGORY_COUNT_SHARE",
    "MOMENTS_SHARE",
    "NUMERIC_ROWS",
    "OBJECT_ROWS",
    "ColumnReads",
    "column_kind",
    "describe",
    "describe_column",
    "percentile_label",
]

# Of a numeric column's budget after the bounds: the share of count/sum/sum of squares (the rest: quantiles).
MOMENTS_SHARE = Fraction(1, 2)
# Of a categorical column's budget: the share of its count (the rest: the count of every category).
CATEGORY_COUNT_SHARE = Fraction(1, 4)

OBJECT_ROWS = ("count", "unique", "top", "freq")
NUMERIC_ROWS = ("mean", "std", "lower bound")  # then the percentiles, then "upper bound"
QUERY = "describe"


def percentile_label(q: float) -> str:
    """The row label of a percentile, as ``DataFrame.describe`` writes it.

    >>> percentile_label(0.25), percentile_label(0.125), percentile_label(1.0)
    ('25%', '12.5%', '100%')
    """
    return f"{100 * q:.10g}%"


def _fraction_epsilon(value: Fraction) -> float:
    # The query functions validate epsilon with budget.exact(), which keeps a
    # Fraction as it is: passing one keeps the split exact.
    return cast(float, value)


@dataclass
class _Column:
    name: Any
    kind: str  # "numeric" or "object"
    epsilon: Fraction
    # numeric
    bounds: tuple[float, float] | None = None
    bounds_privacy: Privacy | None = None
    moments_privacy: Privacy | None = None
    quantile_epsilon: Fraction = Fraction(0)
    # object
    count_privacy: Privacy | None = None
    counts_privacy: Privacy | None = None
    partitioning: Partitioning | None = None


@dataclass(frozen=True)
class ColumnReads:
    """Where a column's measurements read it when it is not in the target (:mod:`dpframe.dask`).

    A numeric column: ``moments`` as :meth:`~dpframe.queries.scalar.Moments.measure`'s ``read``; ``quantiles``
    (with the bounds step's reads) as :func:`~dpframe.queries.select.quantile`'s. A categorical column:
    ``count`` (its non-missing values) as :func:`~dpframe.queries.scalar.count`'s ``read``; ``cells(target)``,
    given the column's target, the :class:`~dpframe.queries.partitioned.CellReader` of its category counts.
    Called only after the charges.
    """

    moments: Callable[[Moments], kernels.MomentSums]
    quantiles: selection.QuantileReads
    count: Callable[[], int]
    cells: Callable[[Target], CellReader]


def column_kind(series: pd.Series[Any]) -> str:
    """How ``describe`` treats a column, by its dtype: ``"numeric"`` or ``"object"`` (a TypeError for others).

    >>> column_kind(pd.Series([1.5])), column_kind(pd.Series(["a"]))
    ('numeric', 'object')
    """
    dtype = series.dtype
    if (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(dtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
    ):
        return "object"
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return "numeric"
    raise TypeError(
        f"describe supports numeric, date, duration, boolean, categorical and text columns, but {series.name!r} "
        f"has dtype {dtype}; convert it (e.g. periods to their start with .dt.start_time) or leave it out"
    )


def _mapping(value: Any, name: str, columns: list[Any]) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict {{column: ...}}, got {type(value).__name__}")
    unknown = [str(c) for c in value if c not in columns]
    if unknown:
        raise KeyError(f"{name} given for {unknown}, which are not described columns {list(map(str, columns))}")
    return value


def _percentiles(percentiles: Any) -> list[float]:
    if percentiles is None:
        percentiles = []
    levels, scalar_given = selection.check_quantiles(list(percentiles) + [0.5])
    del scalar_given
    return sorted(set(levels))


def _weights(weights: Mapping[Any, Any], columns: list[Any]) -> dict[Any, Fraction]:
    out = {c: Fraction(1) for c in columns}
    for column, weight in weights.items():
        out[column] = exact(weight, f"the weight of {column!r}")
    return out


def _plan(
    obj: pd.DataFrame,
    target: Target,
    epsilon: Any,
    delta: Any,
    weights: Any,
    percentiles: list[float],
    bounds: Any,
    keys: Any,
) -> list[_Column]:
    """Validate every argument and fix every column's privacy; charges nothing."""
    budget = target.protection.budget
    if budget.kind != "approx":
        raise ValueError("describe needs an (epsilon, delta) budget; on a zCDP budget ask the queries one by one")
    eps = exact(epsilon, "epsilon")
    unit = target.protection.privacy_unit
    columns = [c for c in obj.columns if c != unit]
    if not columns:
        raise ValueError("there are no columns to describe (the privacy unit column is not described)")
    if not obj.columns.is_unique:
        raise ValueError("describe needs unique column names")
    kinds = {c: column_kind(obj[c]) for c in columns}
    declared_bounds = _mapping(bounds, "bounds", columns)
    declared_keys = _mapping(keys, "keys", columns)
    w = _weights(_mapping(weights, "weights", columns), columns)
    for column in declared_bounds:
        if kinds[column] != "numeric":
            raise TypeError(f"bounds given for {column!r}, which is not a numeric column")
    for column in declared_keys:
        if kinds[column] != "object":
            raise TypeError(f"keys given for {column!r}, which is not a categorical column; numeric columns take bounds")

    total_weight = sum(w.values(), Fraction(0))
    plans: list[_Column] = []
    selecting: list[_Column] = []
    for column in columns:
        share = eps * w[column] / total_weight
        plan = _Column(column, kinds[column], share)
        if plan.kind == "numeric":
            rest = share
            if column in declared_bounds:
                plan.bounds = check_bounds(declared_bounds[column])
            else:
                plan.bounds_privacy = Privacy("approx", "laplace", share * BOUNDS_SHARE, Fraction(0), Fraction(0))
                rest = share - plan.bounds_privacy.epsilon
            moments = rest * MOMENTS_SHARE if percentiles else rest
            plan.quantile_epsilon = rest - moments
            plan.moments_privacy = resolve(budget, _fraction_epsilon(moments), None, None, "laplace")
            # Builds the measurements (grids, noise) so that their errors come now.
            Moments(target, obj[column], plan.bounds or (0.0, 1.0), plan.moments_privacy, QUERY, 2)
        else:
            count_eps = share * CATEGORY_COUNT_SHARE
            plan.count_privacy = resolve(budget, _fraction_epsilon(count_eps), None, None, "laplace")
            plan.partitioning = Partitioning.of(target, [column], declared_keys.get(column))
            if not plan.partitioning.public:
                selecting.append(plan)
        plans.append(plan)

    # Delta: only for private selection of categories, split equally.
    if delta is not None:
        total_delta = exact(delta, "delta", allow_zero=True)
        if total_delta >= 1:
            raise ValueError(f"delta must be < 1, got {delta!r}")
    else:
        total_delta = selection_delta(budget) if selecting else Fraction(0)
    for plan in plans:
        if plan.kind != "object":
            continue
        assert plan.partitioning is not None
        each = total_delta / len(selecting) if plan in selecting else Fraction(0)
        counts_eps = plan.epsilon - (plan.count_privacy.epsilon if plan.count_privacy else Fraction(0))
        plan.counts_privacy = Privacy("approx", "laplace", counts_eps, each, Fraction(0))
        require_selection(plan.partitioning, plan.counts_privacy)
        plan.counts_privacy.noise(target.contributions)
    parts = [cost for plan in plans for cost in _costs(plan)]
    target.reserve(*parts, query="describe")
    return plans


def _costs(plan: _Column) -> list[Cost]:
    """The costs of a column's measurements, each charged as its own ledger line."""
    privacies = [plan.bounds_privacy, plan.moments_privacy, plan.count_privacy, plan.counts_privacy]
    costs = [p.cost for p in privacies if p is not None]
    if plan.quantile_epsilon > 0:
        costs.append(Cost(epsilon=plan.quantile_epsilon))
    return costs


Cell = dict[str, float]


def _numeric(target: Target, plan: _Column, levels: list[float], reads: ColumnReads | None) -> dict[str, Cell]:
    """Charge and measure one numeric column: {row: {"value", "std", "lower", "upper"}}."""
    assert plan.moments_privacy is not None
    column_target = target.column_target(plan.name)
    series = column_target.series
    if plan.bounds is None:
        assert plan.bounds_privacy is not None
        plan.bounds = private_bounds(column_target, series, plan.bounds_privacy, query=QUERY,
                                     reads=None if reads is None else reads.quantiles.bounds)
    lo, hi = plan.bounds
    moments = Moments(column_target, series, (lo, hi), plan.moments_privacy, QUERY, 2)
    measured = moments.measure(None if reads is None else reads.moments)
    nan = math.nan
    count = float(measured["count"][0])
    count_half = moments.noise["count"].halfwidth(LEVEL)
    out: dict[str, Cell] = {  # a count below 0 is shown as 0 (post-processing); its interval stays
        "count": {"value": max(round(count), 0), "std": moments.stds()["count"], "lower": count - count_half,
                  "upper": count + count_half, "clamp low": 0.0, "clamp high": math.inf},
    }
    mean = moments.mean(measured)
    mean_lo, mean_hi = mean.interval(lo, hi)
    out["mean"] = {"value": float(mean.value[0]), "std": float(mean.std[0]), "lower": float(mean_lo[0]),
                   "upper": float(mean_hi[0]), **_clamp(mean)}
    with np.errstate(over="ignore", divide="ignore"):  # a std clamped to 0 has an unbounded linearised spread
        std = moment_result("std", moments, measured)
    std_lo, std_hi = std.interval(0.0, math.inf)
    out["std"] = {"value": float(std.value[0]), "std": float(std.std[0]), "lower": float(std_lo[0]),
                  "upper": float(std_hi[0]), **_clamp(std)}
    out["lower bound"] = {"value": lo, "std": nan, "lower": nan, "upper": nan}
    out["upper bound"] = {"value": hi, "std": nan, "lower": nan, "upper": nan}
    if levels and plan.quantile_epsilon > 0:
        # Rank intervals for all the percentiles at once (the miss probability split over them), so that they
        # survive the sorting below: when every answer is within R ranks of its target, so are the sorted ones.
        answers = selection.quantile(
            column_target, levels, bounds=(lo, hi), epsilon=_fraction_epsilon(plan.quantile_epsilon),
            query="describe quantiles", read=None if reads is None else reads.quantiles,
            rank_level=1 - (1 - LEVEL) / len(levels),
        )
        assert isinstance(answers, pd.Series)
        reach = float(answers.attrs["dp"].rank_reach.max())
        # Sorted across levels (post-processing), so a higher percentile is never below a lower one.
        for level, value in zip(sorted(levels), np.sort(answers[sorted(levels)].to_numpy(dtype=float))):
            out[percentile_label(level)] = {"value": float(value), "std": nan, "lower": nan, "upper": nan,
                                            "ranks": reach}
    statistics = ["count", "mean", "std"]
    unreliable = [row for row in statistics if _marked(out[row])]
    percentiles = [percentile_label(level) for level in sorted(levels) if plan.quantile_epsilon > 0]
    if "count" in unreliable or "mean" in unreliable:  # the percentiles rest on the same few (or no) values
        unreliable += percentiles
    if plan.bounds_privacy is not None and weak_bounds(count, moments.stds()["count"], plan.bounds_privacy,
                                                       column_target.contributions):
        # Everything clipped to bounds found on too few rows (the count is not): they may lie past the data.
        for row in ["mean", "std", *percentiles]:
            out[row]["weak bounds"] = 1.0
        unreliable += [row for row in ["mean", "std", *percentiles] if row not in unreliable]
    out["unreliable"] = _unreliable_cell(unreliable)
    return out


def _clamp(estimate: Estimate) -> Cell:
    """The range a statistic was clamped to, as the cell's "clamp low" and "clamp high"."""
    low, high = estimate.clamped() or (math.nan, math.nan)
    return {"clamp low": low, "clamp high": high}


def _marked(cell: Cell) -> bool:
    """Whether a statistic's noise is as large as its value or its range, or it was clamped to a bound."""
    clamp = (cell.get("clamp low", math.nan), cell.get("clamp high", math.nan))
    return is_unreliable(cell["value"], cell["lower"], cell["upper"], clamp) or at_bound(cell["value"], clamp)


def _as_time(scale: temporal.TimeScale, row: str, value: Any) -> Any:
    """A describe cell of a date or duration column, from seconds: times, and the std as a duration."""
    if not isinstance(value, (int, float)) or value != value or row in ("count", "unreliable"):
        return value
    try:
        return pd.Timedelta(seconds=value) if row == "std" else scale.point(value)
    except (OverflowError, ValueError):  # pandas' out-of-bounds errors are ValueErrors
        # A released value too noisy for pandas' time types (beyond about 292 years): shown as NaT, not raised
        # after the charge; the 'unreliable' row names it.
        return pd.NaT


def _unreliable_cell(rows: list[str]) -> dict[str, Any]:
    """The ``unreliable`` row: the statistics whose noise is as large as their value or range, or that were clamped to
    a bound, or ``""``."""
    nan = math.nan
    return {"value": ", ".join(rows), "std": nan, "lower": nan, "upper": nan}


def _categorical(target: Target, plan: _Column, reads: ColumnReads | None) -> dict[str, Any]:
    """Charge and measure one categorical column: count, unique, top, freq."""
    assert plan.count_privacy is not None and plan.counts_privacy is not None and plan.partitioning is not None
    column_target = target.column_target(plan.name)
    nan = math.nan
    n = scalar.count(column_target, plan.count_privacy, None if reads is None else reads.count)
    counts = partitioned.value_counts(column_target, plan.partitioning, plan.counts_privacy, False, True,
                                      remainder=False, read=None if reads is None else reads.cells(column_target))
    out: dict[str, Any] = {
        "count": {"value": int(n), "std": n.std, "lower": n.ci[0], "upper": n.ci[1]},
        "unique": {"value": len(counts), "std": nan, "lower": nan, "upper": nan},
    }
    if len(counts):
        release = counts.attrs["dp"]
        label = counts.index[0]
        # The release's intervals are in category order, the counts sorted: look the winner up by label.
        at = int(release.lower.index.get_indexer([label])[0])
        lower, upper = release.lower.iloc[at], release.upper.iloc[at]
        top = label.item() if isinstance(label, np.generic) else label  # a plain value, as pandas shows it
        out["top"] = {"value": top, "std": nan, "lower": nan, "upper": nan}
        out["freq"] = {"value": int(counts.iloc[0]), "std": float(release.std), "lower": float(lower),
                       "upper": float(upper)}
    else:
        out["top"] = {"value": nan, "std": nan, "lower": nan, "upper": nan}
        out["freq"] = {"value": nan, "std": nan, "lower": nan, "upper": nan}
    unreliable = [row for row in ("count", "freq") if not math.isnan(out[row]["lower"]) and _marked(out[row])]
    if "count" in unreliable:  # too few values to tell: the top category is noise too
        unreliable += [row for row in ("top", "freq") if row not in unreliable]
    out["unreliable"] = _unreliable_cell(unreliable)
    return out


def describe(
    protected: Any,
    *,
    epsilon: float,
    delta: float | None = None,
    weights: Mapping[Any, float] | None = None,
    percentiles: Iterable[float] | None = (0.25, 0.5, 0.75),
    bounds: Mapping[Any, tuple[float, float]] | None = None,
    keys: Mapping[Any, Any] | None = None,
    progress: bool = True,
    reads: Callable[[Any], ColumnReads] | None = None,
) -> pd.DataFrame:
    """Private ``describe(include="all")`` of a protected frame, spending exactly ``epsilon``.

    Rows: ``count``, ``unique``, ``top``, ``freq`` (categorical columns),
    ``mean``, ``std``, ``lower bound``, the percentiles, ``upper bound``
    (numeric columns); NaN where a statistic does not apply; and
    ``unreliable``, naming the column's statistics whose noise is as large as
    their value or their range (:func:`~dpframe.results.is_unreliable`) or
    that were clamped to a bound (:func:`~dpframe.results.at_bound`: a count
    at 0, a mean at its bound, a std at 0), or ``""``. Counts are shown at
    least 0 and percentiles sorted (post-processing). The bounds rows
    are the **clipping bounds** used (declared in ``bounds=`` or chosen
    privately), not the data's minimum and maximum. ``unique`` is the number of
    public categories (declared, categorical dtype or boolean) or of privately
    selected ones; ``top`` is the category with the largest noisy count and
    ``freq`` that noisy count. ``result.attrs["dp"]`` is a
    :class:`~dpframe.results.Release` whose ``std``, ``lower`` and ``upper``
    are frames of the result's shape (NaN where there is no interval).
    A progress bar (:mod:`dpframe.progress`) appears in a terminal or a
    notebook when it runs for more than a second (``progress=False`` to
    silence it). ``reads(column)`` reads a column elsewhere (:class:`ColumnReads`).

    >>> import numpy as np, pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> df = pd.DataFrame({"age": np.arange(2000) % 70 + 18, "smoker": np.arange(2000) % 5 == 0})
    >>> p = df.dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     d = p.dp.describe(epsilon=1.0, bounds={"age": (0, 100)})
    >>> list(d.index)
    ['count', 'unique', 'top', 'freq', 'mean', 'std', 'lower bound', '25%', '50%', '75%', 'upper bound', 'unreliable']
    >>> d.loc["unreliable"].tolist()
    ['', '']
    >>> d.loc["top", "smoker"], bool(abs(d.loc["mean", "age"] - 52.5) < 1), d.loc["upper bound", "age"]
    (False, True, 100.0)
    >>> p.dp.budget.spent.epsilon.exact
    Fraction(1, 1)
    """
    target = Target.of(protected)
    if not isinstance(target.obj, pd.DataFrame):
        raise TypeError("describe is a question about a DataFrame; for one column use p[[column]]")
    # Dates and durations are described in seconds, and shown as times (dpframe.queries.temporal).
    target, scales = temporal.frame_in_seconds(target)
    obj = target.obj
    assert isinstance(obj, pd.DataFrame)
    if bounds is not None and scales:
        given = _mapping(bounds, "bounds", list(obj.columns))
        bounds = {c: scales[c].bounds(b) or b if c in scales else b for c, b in given.items()}
    levels = _percentiles(percentiles)
    plans = _plan(obj, target, epsilon, delta, weights, levels, bounds, keys)

    cells: dict[Any, dict[str, Any]] = {}
    with Progress("describe", enabled=progress) as bar:  # large files take a while per column
        for done, plan in enumerate(plans):
            bar(f"column {plan.name}", done / len(plans))
            column_reads = None if reads is None else reads(plan.name)
            if plan.kind == "numeric":
                cells[plan.name] = _numeric(target, plan, levels, column_reads)
            else:
                cells[plan.name] = _categorical(target, plan, column_reads)

    rows: list[str] = []
    if any(p.kind == "object" for p in plans):
        rows += list(OBJECT_ROWS)
    elif plans:
        rows.append("count")
    if any(p.kind == "numeric" for p in plans):
        rows += list(NUMERIC_ROWS) + [percentile_label(q) for q in levels] + ["upper bound"]
    rows.append("unreliable")
    names = [p.name for p in plans]

    def frame(field: str, dtype: Any) -> pd.DataFrame:
        data = {
            name: [cells[name].get(row, {}).get(field, np.nan) for row in rows] for name in names
        }
        return pd.DataFrame(data, index=pd.Index(rows), columns=pd.Index(names), dtype=dtype)

    result = frame("value", object)
    for column, scale in scales.items():
        if column in result.columns:
            result[column] = [_as_time(scale, row, value) for row, value in result[column].items()]
    declared = [str(p.name) for p in plans if p.kind == "numeric" and p.bounds_privacy is None]
    chosen = [str(p.name) for p in plans if p.kind == "numeric" and p.bounds_privacy is not None]
    weak = frame("weak bounds", float)
    few = [str(name) for name in names if weak[name].gt(0).any()]
    note = (
        "lower/upper bound rows are the clipping bounds used (declared: "
        f"{declared or 'none'}; chosen privately by the sparse vector technique: {chosen or 'none'}), "
        "not the data's extremes; percentiles have rank intervals, no value interval (exponential mechanism): "
        "with probability 95% all of a column's percentiles at once have ranks within release.rank_reach of q·n "
        "among its clipped values; "
        "count, mean, std and freq intervals are 95% intervals of the noise; the unreliable row names the "
        "statistics whose noise is as large as their value or range, or that were clamped to a bound (and the "
        "percentiles and top category that rest on such a count or mean)"
        + ("; dates and durations are shown as times, their intervals (in this release) are in seconds "
           "(since 1970-01-01 for dates)" if scales else "")
        + (f"; UNRELIABLE for {', '.join(few)}: {WEAK_BOUNDS}" if few else "")
    )
    mechanisms = sorted({"discrete Laplace"} | ({"sparse vector"} if chosen else set())
                        | ({selection.quantile_mechanism(obj[p.name].dtype) for p in plans if p.kind == "numeric"}
                           if levels else set()))
    release = Release(
        QUERY, tuple(map(str, names)), " + ".join(mechanisms), target.spent, frame("std", float), frame("lower", float),
        frame("upper", float), LEVEL, None, note, clamp=(frame("clamp low", float), frame("clamp high", float)),
        rank_reach=frame("ranks", float), weak_bounds=weak,
    )
    return with_release(result, release)  # type: ignore[no-any-return]


def describe_column(frame: Target, name: Any, **arguments: Any) -> pd.Series[Any]:
    """Private ``Series.describe()``: :func:`describe` of the one-column frame target ``frame``, as a Series.

    ``arguments`` are :func:`describe`'s, with this column's ``bounds`` and ``keys`` (not dicts).
    """
    bounds, keys = arguments.pop("bounds", None), arguments.pop("keys", None)
    table = describe(frame, bounds=None if bounds is None else {name: bounds}, keys=None if keys is None else {name: keys},
                     **arguments)
    release = current_release(table)
    column: pd.Series[Any] = table[name]
    if release is None:
        return column

    def of_column(cells: Any) -> Any:
        return cells[name] if isinstance(cells, pd.DataFrame) else cells

    clamp = None if release.clamp is None else (of_column(release.clamp[0]), of_column(release.clamp[1]))
    described: pd.Series[Any] = with_release(column, replace(
        release, std=of_column(release.std), lower=of_column(release.lower), upper=of_column(release.upper),
        rank_reach=None if release.rank_reach is None else of_column(release.rank_reach),
        clamp=clamp, weak_bounds=of_column(release.weak_bounds)))
    return described
