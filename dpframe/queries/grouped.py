"""The pandas spellings of a private group-by: ``gb["age"].mean(...)``, ``gb.agg({...})``, ``gb.size()``.

A release of several parts -- ``agg`` with several (column, statistic) pairs,
or one statistic of several columns -- splits ``epsilon`` (and ``delta`` or
``rho``, if given) **equally over its parts** and says so in its note
(sequential composition: the parts read the same rows). The whole cost is
reserved before the first part reads any data, so either every part is
released or the budget refuses them all. Every argument -- columns,
statistics, bounds, dtypes -- is checked first.

Groups that are not public (undeclared text categories) are selected
privately once, by the first part that measures a count (a count, sum, mean,
var or std: it spends its share of delta on the selection); the released
groups are then remembered, so every later part answers for those groups and
none selects again. A median per group cannot select (it is pure DP): with
only medians, the groups must be public.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import numpy as np
import pandas as pd

from dpframe.errors import RefusedError
from dpframe.queries.plan import Target, check_bounds, check_numeric
from dpframe.results import Release, current_release, is_other, with_release

if TYPE_CHECKING:
    from dpframe.queries.partitioned import GroupBy

# The statistics a group-by releases; "size" is pandas' name for the count of rows. A median is pure DP
# (the exponential mechanism): with it, agg takes epsilon or rho, not delta or another mechanism.
STATISTICS = ("count", "size", "sum", "mean", "var", "std", "median")
# pandas' statistics with no private counterpart of that name, and the one to use.
_INSTEAD = {
    "min": "a private quantile near 0: gb.quantile(column, 0.01, bounds=(lo, hi), epsilon=...) (an exact minimum "
           "has unbounded sensitivity)",
    "max": "a private quantile near 1: gb.quantile(column, 0.99, bounds=(lo, hi), epsilon=...) (an exact maximum "
           "has unbounded sensitivity)",
    "nunique": "p[p[by] == key][column].dp.nunique(epsilon=...) for each public group",
    "describe": "gb[column].agg(['count', 'mean', 'std'], bounds=(lo, hi), epsilon=...) and gb.quantile(column, "
                "[0.25, 0.5, 0.75], bounds=(lo, hi), epsilon=...) (a minimum and maximum have no private counterpart); "
                "or p[p[by] == key][column].dp.describe(...) for each public group",
    "first": "a private statistic of the group, e.g. 'median' (which row comes first is not public)",
    "last": "a private statistic of the group, e.g. 'median' (which row comes last is not public)",
}


def parts_of(spec: Any) -> list[tuple[Any, str]]:
    """``agg``'s argument as (column, statistic) pairs: ``{"age": "mean", "hours": ["sum", "mean"]}``.

    >>> parts_of({"age": "mean", "hours": ["sum", "std"]})
    [('age', 'mean'), ('hours', 'sum'), ('hours', 'std')]
    """
    if not isinstance(spec, Mapping) or not spec:
        raise TypeError("agg takes a dict {column: statistic or [statistics]}, e.g. {'age': 'mean', 'hours': 'sum'}")
    parts = []
    for column, statistics in spec.items():
        for statistic in [statistics] if isinstance(statistics, str) else list(statistics):
            parts.append((column, _statistic(statistic, column)))
    if len(set(parts)) != len(parts):
        raise ValueError("agg asks for the same statistic of the same column twice")
    return parts


def _statistic(statistic: Any, column: Any) -> str:
    if statistic in _INSTEAD:
        raise ValueError(f"{statistic!r} of {column!r} has no private counterpart of that name: use {_INSTEAD[statistic]}")
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r} for {column!r}: choose from {', '.join(STATISTICS)}")
    return str(statistic)


def named_parts(named: Mapping[str, Any]) -> tuple[list[tuple[Any, str]], list[str]]:
    """pandas' named aggregation, ``agg(mean_mass=("body_mass_g", "mean"))`` (or ``pd.NamedAgg``): the
    (column, statistic) pairs and the names of the result's columns.

    >>> named_parts({"mean_mass": ("body_mass_g", "mean"), "n": pd.NamedAgg("body_mass_g", "count")})
    ([('body_mass_g', 'mean'), ('body_mass_g', 'count')], ['mean_mass', 'n'])
    """
    parts, names = [], []
    for name, spec in named.items():
        if isinstance(spec, pd.NamedAgg):  # pandas 3's also holds args and kwargs for the function
            if getattr(spec, "args", ()) or getattr(spec, "kwargs", {}):
                raise TypeError(f"{name}: a statistic's name takes no arguments here")
            spec = (spec.column, spec.aggfunc)
        if not isinstance(spec, tuple) or len(spec) != 2:
            raise TypeError(f"named aggregation takes name=(column, statistic), e.g. mean_age=('age', 'mean'); "
                            f"got {name}={spec!r}")
        column, statistic = spec
        parts.append((column, _statistic(statistic, column)))
        names.append(name)
    if len(set(parts)) != len(parts):
        raise ValueError("agg asks for the same statistic of the same column twice")
    return parts, names


def _bounds_for(bounds: Any, column: Any) -> Any:
    """A column's bounds: one pair for every column, a dict per column, or None (chosen privately)."""
    if isinstance(bounds, Mapping):
        return bounds.get(column)
    return bounds


def _share(value: float | None, parts: int) -> float | None:
    return None if value is None else value / parts


def aggregate(
    groupby: GroupBy, parts: Sequence[tuple[Any, str]], *, bounds: Any, epsilon: float | None, delta: float | None,
    rho: float | None, mechanism: str | None, names: Sequence[Any] | None = None,
) -> pd.DataFrame:
    """Release every (column, statistic) of ``parts`` per group, each with an equal share of the budget.

    Returns a frame indexed by group: one column per column when each has one
    statistic, else (column, statistic) pairs, like ``DataFrameGroupBy.agg``;
    ``names`` (named aggregation) names them instead.
    """
    selecting = [part for part in parts if part[1] != "median"]
    if len(selecting) < len(parts) and (mechanism is not None or (delta is not None and not selecting)):
        raise ValueError("a median per group is pure DP (the exponential mechanism): with 'median' in agg, give "
                         "epsilon or rho, not mechanism (delta only for the other statistics)")
    groupby._needs_public_groups("agg")
    target = groupby._target
    if not groupby._partitioning.public and not selecting:
        raise ValueError(
            "a median per group needs public groups: declare keys=, use a categorical column, or release the "
            "groups first with groupby(...).count(...) (their categories are then remembered)"
        )
    if isinstance(bounds, Mapping):
        unknown = set(bounds) - {column for column, _ in parts}
        if unknown:
            raise KeyError(f"bounds given for {sorted(map(str, unknown))}, which are not aggregated")
    for column, statistic in parts:
        series = target.column(column)
        if statistic not in ("count", "size"):
            check_numeric(series, statistic)
            given = _bounds_for(bounds, column)
            if given is not None:
                check_bounds(given)
    n = len(parts)
    # epsilon (or rho) in equal shares; delta (a median spends none) in equal shares of the others.
    eps, dlt, rh = _share(epsilon, n), _share(delta, len(selecting)), _share(rho, n)
    privacies = [target.privacy(eps, None, rh, None) if statistic == "median" else groupby._privacy(eps, dlt, rh, mechanism)
                 for _, statistic in parts]
    shared = target.fresh()
    shared.reserve(*(privacy.cost for privacy in privacies), query="groupby agg")
    released: dict[Any, pd.Series[Any]] = {}
    # A part that can select private groups runs first; the groups it releases are the declared keys of the others,
    # so that no part selects again and none answers for a group it did not release.
    private = not groupby._partitioning.public
    keys: Any = groupby._keys
    chosen: pd.Index[Any] | None = None
    for column, statistic in sorted(parts, key=lambda part: part not in selecting):
        if chosen is not None and len(chosen) == 0:  # the selection released no group: nothing to answer for
            answer: pd.Series[Any] = pd.Series([], index=chosen, dtype=float, name=column)
        elif statistic == "size":
            answer = _on(groupby, keys, shared).count(epsilon=eps, delta=_delta(chosen, dlt, mechanism), rho=rh,
                                                      mechanism=mechanism)
        elif statistic == "count":  # as pandas: the values present, read where the group-by reads
            answer = _on(groupby, keys, shared, values_in=column).count(
                epsilon=eps, delta=_delta(chosen, dlt, mechanism), rho=rh, mechanism=mechanism)
        elif statistic == "median":
            answer = _on(groupby, keys, shared).median(column, bounds=_bounds_for(bounds, column), epsilon=eps,
                                                       rho=rh)
        else:
            answer = getattr(_on(groupby, keys, shared), statistic)(
                column, bounds=_bounds_for(bounds, column), epsilon=eps, delta=_delta(chosen, dlt, mechanism),
                rho=rh, mechanism=mechanism)
        released[(column, statistic)] = answer
        if private and chosen is None:
            chosen = answer.index[[not is_other(key) for key in answer.index]]
            keys = (list(chosen) if len(groupby._by) == 1
                    else {by: list(chosen.get_level_values(level).unique()) for level, by in enumerate(groupby._by)})
    released = {part: released[part] for part in parts}
    single = len({column for column, _ in parts}) == n
    labels = (dict(zip(released, names)) if names is not None
              else {key: key[0] if single else key for key in released})
    # The groups the selecting part released (and its "other" entry), not the product of their keys' values.
    first = next(answer for (column, statistic), answer in released.items() if (column, statistic) in selecting)
    return _combined(released, labels, n, shared, first.index if private else None)


def _delta(chosen: pd.Index[Any] | None, delta: float | None, mechanism: str | None) -> float | None:
    """A part's delta: on groups the first part chose (declared from then on), the Laplace mechanism takes none
    (the selection spent it)."""
    return None if chosen is not None and mechanism == "laplace" else delta


def _on(groupby: GroupBy, keys: Any, shared: Target, values_in: Any = None) -> GroupBy:
    """The group-by of one part of a release: its keys and contribution bounds, drawing from the reservation of
    ``shared``, reading the rows (with a value in ``values_in``) where the group-by reads."""
    read = groupby._reader(shared)
    return type(groupby)(groupby._target, groupby._by, keys, shared=shared,
                         read=read.with_values_in(values_in) if values_in is not None else groupby._read,
                         bounds=groupby._bounds)


def _combined(released: dict[Any, pd.Series[Any]], labels: dict[Any, Any], n: int, target: Target,
              groups: pd.Index[Any] | None = None) -> pd.DataFrame:
    """The parts side by side, with a release whose std and interval frames have the frame's shape: on ``groups``,
    or on every part's groups."""
    def frame(part: Callable[[Release], Any]) -> pd.DataFrame:
        columns = {}
        for key, answer in released.items():
            release = current_release(answer)
            value = np.nan if release is None else part(release)
            columns[labels[key]] = value if isinstance(value, pd.Series) else pd.Series(value, index=answer.index)
        return pd.DataFrame({label: column.reindex(groups) for label, column in columns.items()}).astype(float)

    if groups is None:  # in the order the parts released them (the "other" entry last), not sorted by the union
        groups = next(iter(released.values())).index
        for answer in released.values():
            groups = groups.append(answer.index.difference(groups, sort=False))
    # Each part on the groups first: pandas would sort the union of their labels (which fails on mixed types).
    values = pd.DataFrame({labels[key]: answer.reindex(groups) for key, answer in released.items()})  # tuples: a MultiIndex
    releases = [current_release(answer) for answer in released.values()]
    notes = "; ".join(f"{labels[key]}: {r.note}" for key, r in zip(released, releases) if r is not None and r.note)
    mechanisms = " + ".join(sorted({r.mechanism for r in releases if r is not None}))
    std, lower, upper = frame(lambda r: r.std), frame(lambda r: r.lower), frame(lambda r: r.upper)
    low, high = (frame(lambda r: np.nan if r.clamp is None else r.clamp[0]),
                 frame(lambda r: np.nan if r.clamp is None else r.clamp[1]))
    weak = frame(lambda r: r.weak_bounds)
    for part in (std, lower, upper, low, high, weak):
        part.columns = values.columns
    release = Release(
        "groupby agg", tuple(str(label) for label in values.columns), mechanisms, target.spent, std, lower, upper,
        0.95, None,
        f"each of the {n} parts spent 1/{n} of the budget (sequential composition over the same rows)"
        + (f"; {notes}" if notes else ""), clamp=(low, high), weak_bounds=weak,
    )
    return with_release(values, release)  # type: ignore[no-any-return]


# What a statistic of the selected columns is: a Series for one column, a frame for a list of them.
Result = TypeVar("Result", bound="pd.Series[Any] | pd.DataFrame")


class ColumnGroupBy(Generic[Result]):
    """``gb["age"]`` (one column) or ``gb[["age", "hours"]]``: the statistics of those columns per group.

    >>> import pandas as pd, dpframe
    >>> df = pd.DataFrame({"sex": pd.Categorical(["F", "M"] * 500), "age": [30.0, 50.0] * 500})
    >>> gb = df.dp.protect(epsilon=1.0).dp.groupby("sex")
    >>> means = gb["age"].mean(bounds=(0, 100), epsilon=0.5)
    >>> list(means.index), bool(abs(means["M"] - 50) < 5)
    (['F', 'M'], True)
    """

    def __init__(self, groupby: GroupBy, columns: Any):
        self._groupby: GroupBy = groupby
        self._columns = columns
        for column in self._list:
            groupby._target.column(column)  # an unknown column fails here

    @property
    def _list(self) -> list[Any]:
        return list(self._columns) if isinstance(self._columns, list) else [self._columns]

    def _one(self, statistic: str, **arguments: Any) -> Result:
        # Result is a frame exactly when the columns are a list (GroupBy.__getitem__'s overloads).
        if isinstance(self._columns, list):
            return cast(Result, aggregate(self._groupby, [(c, statistic) for c in self._columns], **arguments))
        return cast(Result, getattr(self._groupby, statistic)(self._columns, **arguments))

    def count(self, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
              mechanism: str | None = None) -> Result:
        """Noisy number of non-missing values per group, like ``gb["x"].count()`` (``gb[["x", "y"]]``: a frame,
        the budget split equally)."""
        groupby = self._groupby
        target = groupby._target
        if isinstance(self._columns, list):
            return self._one("count", bounds=None, epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)
        groupby._needs_public_groups(f"[{self._columns!r}].count")
        # The rows with a value: a filter on each row's own value, stable like p[p[column].notna()].
        read = groupby._reader(target).with_values_in(self._columns)
        counts = type(groupby)(read.target, groupby._by, groupby._keys, read=read, bounds=groupby._bounds).count(
            epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)
        return cast(Result, counts.rename(self._columns))  # named by the column, as pandas'; the release holds

    def size(self, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
             mechanism: str | None = None) -> pd.Series[Any]:
        """Noisy number of rows per group, like ``gb.size()``."""
        return self._groupby.count(epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)

    def sum(self, *, bounds: Any = None, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None, mechanism: str | None = None) -> Result:
        """Noisy sum per group (a frame for several columns, the budget split equally)."""
        return self._one("sum", bounds=bounds, epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)

    def mean(self, *, bounds: Any = None, epsilon: float | None = None, delta: float | None = None,
             rho: float | None = None, mechanism: str | None = None) -> Result:
        """Noisy mean per group (a frame for several columns, the budget split equally)."""
        return self._one("mean", bounds=bounds, epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)

    def var(self, *, bounds: Any = None, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None, mechanism: str | None = None) -> Result:
        """Noisy variance per group (a frame for several columns, the budget split equally)."""
        return self._one("var", bounds=bounds, epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)

    def std(self, *, bounds: Any = None, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None, mechanism: str | None = None) -> Result:
        """Noisy standard deviation per group (a frame for several columns, the budget split equally)."""
        return self._one("std", bounds=bounds, epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)

    def median(self, *, bounds: Any = None, epsilon: float | None = None, rho: float | None = None) -> pd.Series[Any]:
        """Private median per group, like ``gb["x"].median()`` (one column)."""
        if isinstance(self._columns, list):
            raise TypeError("median of several columns: ask gb[column].median(...) for each")
        return self._groupby.median(self._columns, bounds=bounds, epsilon=epsilon, rho=rho)

    def agg(self, statistics: Any = None, *, bounds: Any = None, epsilon: float | None = None,
            delta: float | None = None, rho: float | None = None, mechanism: str | None = None,
            **named: str) -> pd.DataFrame:
        """Several statistics of these columns per group, the budget split equally: ``gb["x"].agg(["mean", "std"])``,
        or named as pandas names them, ``gb["x"].agg(average="mean", spread="std")``."""
        if named:
            if statistics is not None or isinstance(self._columns, list):
                raise TypeError("named aggregation of one column takes only name='statistic' pairs")
            parts, labels = named_parts({name: (self._columns, statistic) for name, statistic in named.items()})
            return aggregate(self._groupby, parts, bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                             mechanism=mechanism, names=labels)
        if statistics is None:
            raise TypeError("agg takes statistics: gb[column].agg(['mean', 'std']) or gb[column].agg(name='mean')")
        listed = [statistics] if isinstance(statistics, str) else list(statistics)
        parts = parts_of({c: listed for c in self._list})
        # As pandas: of one column (gb["x"]), the columns are the statistics; of a list, (column, statistic).
        names = None if isinstance(self._columns, list) else [statistic for _, statistic in parts]
        return aggregate(self._groupby, parts, bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                         mechanism=mechanism, names=names)

    def _refused(self, statistic: str) -> Any:
        raise RefusedError(f"gb[column].{statistic}() is refused on protected data: it has no private counterpart "
                           f"of that name. Instead: {_INSTEAD[statistic]}")

    def min(self, *args: Any, **kwargs: Any) -> Any:
        """Refused, with the private quantile to ask instead (an exact minimum has unbounded sensitivity)."""
        return self._refused("min")

    def max(self, *args: Any, **kwargs: Any) -> Any:
        """Refused, with the private quantile to ask instead (an exact maximum has unbounded sensitivity)."""
        return self._refused("max")

    def nunique(self, *args: Any, **kwargs: Any) -> Any:
        """Refused, with the private distinct count to ask instead."""
        return self._refused("nunique")

    def describe(self, *args: Any, **kwargs: Any) -> Any:
        """Refused, with the private statistics to ask instead (pandas' describe per group holds a minimum and a
        maximum, which have none)."""
        return self._refused("describe")
