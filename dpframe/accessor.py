"""The ``.dp`` accessor: a thin front door.

On a plain DataFrame or Series (registered with pandas), ``.dp.protect()``
makes protected data. On a :class:`~dpframe.ProtectedFrame` or
:class:`~dpframe.ProtectedSeries`, ``.dp`` asks the private questions: each
method validates its arguments, builds a query (which fixes the noise and the
cost from the schema and arguments alone), and hands it to
:mod:`dpframe.queries`, which charges the budget before reading the data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

import numpy as np
import pandas as pd

from dpframe.accounting.budget import Budget, LedgerLike
from dpframe.protection import protect as protect_data
from dpframe.protection.base import Protected, refuse_protected
from dpframe.protection.frame import ProtectedFrame
from dpframe.protection.protect import poisson_sample, unprotected
from dpframe.protection import split
from dpframe.protection.series import ProtectedSeries
from dpframe.queries import agg, local_sensitivity, partitioned, scalar, temporal
from dpframe.queries import select as selection
from dpframe.queries.covariance import covariance
from dpframe.queries.partitioned import GroupBy, KeySpec, Partitioning
from dpframe.queries.plan import GroupBounds, Target
from dpframe.queries.select import DPChoice
from dpframe.queries.temporal import TimeScale
from dpframe.queries.preview import Preview
from dpframe.queries.preview import preview as preview_query
from dpframe.results import DPFloat, DPInt, Release, current_release, with_release

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from dpframe.local import LocalReports
    from dpframe.queries.hypothesis import ChiSquareResult

Categories = Mapping[Any, Sequence[Any]] | None
PT = TypeVar("PT", ProtectedFrame, ProtectedSeries)
A = TypeVar("A", bound="_Accessor[Any]")


# Queries that can be previewed: those that plan noisy measurements before charging.
PREVIEWABLE = frozenset({"count", "sum", "mean", "var", "std", "histogram", "value_counts", "crosstab", "mode",
                         "top_k", "quantile", "median", "describe"})

class _Accessor(Generic[PT]):
    """What frames and series share: the budget, counting, sampling, and the curator's way out."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def _protect(
        self,
        epsilon: float | None,
        delta: float,
        rho: float | None,
        budget: Budget | None,
        privacy_unit: str | None,
        max_contributions: int,
        categories: Categories,
        name: str | None,
        ledger: LedgerLike,
        extend: bool,
        neighbours: str = "add/remove",
        accounting: str | None = None,
    ) -> Any:
        return protect_data(
            self._obj, epsilon=epsilon, delta=delta, rho=rho, budget=budget, privacy_unit=privacy_unit,
            max_contributions=max_contributions, categories=categories, name=name, ledger=ledger, extend=extend,
            neighbours=neighbours,
            accounting=accounting,
        )

    @property
    def is_protected(self) -> bool:
        """True for protected data (made by ``protect()``, or derived from it).

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"age": [23, 35, 47, 59]})
        >>> df.dp.is_protected, df.dp.protect(epsilon=1.0).dp.is_protected
        (False, True)
        """
        return isinstance(self._obj, Protected)

    @property
    def budget(self) -> Budget:
        """The budget this data spends from (shared with everything derived from the same protect())."""
        return self._target().protection.budget

    def _target(self) -> Target:
        return Target.of(self._obj)

    def _protected(self) -> Any:
        self._target()  # a clear error for data that is not protected
        return self._obj

    def sample(self, rate: float) -> PT:
        """A Poisson sample: each privacy unit (with all its rows) kept independently with probability ``rate``.

        Queries on the sample spend from the same budget, charged the
        amplified cost ``ε' = ln(1 + rate (e^ε − 1))``, ``δ' = rate δ``
        (Balle et al. 2018; zCDP budgets are charged in full). Unlike
        ``DataFrame.sample(n)``, which picks a fixed number of rows, whether
        one person is kept does not depend on anyone else.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": range(10_000)}).dp.protect(epsilon=1.0)
        >>> s = p.dp.sample(0.1)
        >>> n = s.dp.count(epsilon=1.0)
        >>> abs(n - 1000) < 150, round(float(p.dp.budget.spent.epsilon.exact), 4)
        (True, 0.1586)
        """
        sampled: PT = poisson_sample(self._protected(), rate)
        return sampled

    def unprotected(self) -> Any:
        """The exact data, as a plain pandas object -- for the trusted curator only; NOT private.

        Nothing computed from it is covered by the budget. The ledger records
        the exact read (at no cost), and the result can be neither protected
        again nor merged back into protected data.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [31, 45]}).dp.protect(epsilon=1.0)
        >>> p.dp.unprotected()["age"].tolist(), p.dp.budget.ledger["query"].tolist()
        ([31, 45], ['unprotected'])
        """
        return unprotected(self._protected())

    def count(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> DPInt:
        """Noisy number of rows (frames) or non-missing values (series).

        Under bounded DP (``protect(neighbours="replace")``) the number of
        rows protect() made is public: their count is exact and free, with no
        ``epsilon`` needed (``docs/privacy-model.md``).

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": range(1000)}).dp.protect(epsilon=1.0)
        >>> n = p.dp.count(epsilon=0.5)
        >>> abs(n - 1000) < 100, n.mechanism
        (True, 'discrete Laplace')
        """
        target = self._target()
        if target.public_count is not None:  # bounded DP: n is public, the count exact and free
            return scalar.public_count(target)
        return scalar.count(target, target.privacy(epsilon, delta, rho, mechanism))

    def _plain(self, operation: str) -> Any:
        refuse_protected(self._obj, operation)
        return self._obj

    def preview(self, query: str, /, **arguments: Any) -> Preview:
        """What ``query`` with these ``arguments`` would cost and how accurate it would be: nothing charged, no data read.

        ``query`` names a method of this accessor (``"count"``, ``"mean"``,
        ``"histogram"``, ...); the arguments are that method's. They are
        validated as the query would validate them. See
        :mod:`dpframe.queries.preview`.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [30, 40]}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
        >>> accuracy = p.dp.preview("count", epsilon=0.1)
        >>> float(accuracy.measurements.loc["count", "95% half-width"]), p.dp.budget.spent.epsilon.exact
        (30.0, Fraction(0, 1))
        """
        method = getattr(self, query, None) if query in PREVIEWABLE else None
        if method is None:
            raise ValueError(f"cannot preview {query!r} on a {type(self._obj).__name__}: choose one of "
                             f"{sorted(q for q in PREVIEWABLE if hasattr(self, q))}")
        return preview_query(lambda: method(**arguments))

    @property
    def release(self) -> Release | None:
        """How these released values were made and how accurate they are; None when they carry no release.

        Also None when the values changed after release: pandas copies ``attrs``
        through arithmetic, so ``(h / h.sum()).attrs["dp"]`` still holds the
        counts' release, which does not describe the proportions.

        >>> import pandas as pd, dpframe
        >>> h = pd.DataFrame({"x": [1.0, 2.0] * 50}).dp.protect(epsilon=1.0)["x"].dp.histogram(bins=[0, 1.5, 3],
        ...                                                                                 epsilon=0.5)
        >>> h.dp.release.query, (h / h.sum()).dp.release
        ('histogram', None)
        """
        return current_release(self._obj)

    def plot(self, ax: Axes | None = None, **kwargs: Any) -> Axes:
        """Bar chart of a released result (histogram, value counts, crosstab) with 95% error bars.

        Works on results, which carry a :class:`~dpframe.Release` in
        ``.attrs["dp"]``; protected data is refused. Needs matplotlib
        (``pip install "dpframe[plot]"``). See :func:`dpframe.plotting.plot_release`.

        >>> import matplotlib; matplotlib.use("Agg")
        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"a": pd.Categorical(["x", "y"] * 50), "b": [True, False] * 50})
        >>> table = df.dp.protect(epsilon=1.0).dp.crosstab("a", "b", epsilon=0.5)
        >>> len(table.dp.plot().patches)
        4
        """
        from dpframe.plotting import plot_release

        return plot_release(self._plain(".dp.plot()"), ax=ax, **kwargs)


class DataFrameAccessor(_Accessor[ProtectedFrame]):
    """``df.dp.protect()`` on a DataFrame; private questions about a :class:`~dpframe.ProtectedFrame` (``p.dp``).

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": [30, 45, 60]}).dp.protect(epsilon=1.0)
    >>> p.dp.is_protected, p.dp.budget.kind
    (True, 'approx')
    """

    def protect(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        budget: Budget | None = None,
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        categories: Categories = None,
        name: str | None = None,
        ledger: LedgerLike = None,
        extend: bool = False,
        neighbours: str = "add/remove",
        accounting: str | None = None,
    ) -> ProtectedFrame:
        """A :class:`~dpframe.ProtectedFrame` of this data with a privacy budget; see :func:`dpframe.protect`.

        The original stays unprotected. Frames derived from the returned one
        by kept operations (filters, column selections, ``assign``, ...)
        spend from the same budget; the rest is refused.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [23, 35, 47, 59]}).dp.protect(epsilon=1.0, delta=1e-6)
        >>> p.dp.budget
        Budget(ε=1, δ=1e-06): spent ε=0, δ=0, remaining ε=1, δ=1e-06, 0 release(s)
        """
        protected: ProtectedFrame = self._protect(epsilon, delta, rho, budget, privacy_unit, max_contributions,
                                                  categories, name, ledger, extend, neighbours, accounting)
        return protected

    def crosstab(
        self,
        index: Any,
        columns: Any,
        *,
        keys: KeySpec = None,
        normalize: bool | str = False,
        margins: bool = False,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.DataFrame:
        """Noisy contingency table of two columns, like ``pd.crosstab(df[index], df[columns])``.

        ``index`` and ``columns`` are column names or protected series of this
        frame (``p["a"]``, ``p["date"].dt.year``). Keys come from
        ``keys={col: [...]}``, a categorical dtype, booleans, or (with
        ``delta > 0``) private selection of cells. ``margins`` and
        ``normalize`` (``True``/``"all"``, ``"index"``, ``"columns"``) are
        free post-processing of the noisy table, as in pandas.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"a": pd.Categorical(["x", "y"] * 50), "b": [True, False] * 50})
        >>> p = df.dp.protect(epsilon=1.0)
        >>> p.dp.crosstab("a", "b", epsilon=0.5).shape, p.dp.crosstab(p["a"], p["b"], margins=True, epsilon=0.5).shape
        ((2, 2), (3, 3))
        """
        frame, (index, columns) = self._keyed([index, columns])
        target = Target.of(frame)
        partitioning = Partitioning.of(target, [index, columns], keys)
        privacy = target.privacy(epsilon, delta, rho, mechanism, selects_partitions=not partitioning.public)
        partitioned.check_table_options(normalize, margins)
        table = partitioned.crosstab(target, index, columns, partitioning, privacy)
        return partitioned.table_options(table, normalize, margins)

    def _keyed(self, by: Sequence[Any]) -> tuple[ProtectedFrame, list[Any]]:
        """Group keys as columns: names stay; protected series of this data become columns of a derived frame.

        A series is added under its name, or, if that names another column
        (``p["date"].dt.year`` is named "date"), under "<name> key".
        """
        frame: ProtectedFrame = self._protected()
        names: list[Any] = []
        for key in by:
            if isinstance(key, ProtectedSeries):
                name = key.name if key.name is not None else f"key {len(names)}"
                if name in frame.columns:
                    name = f"{name} key"
                frame = frame.assign(**{str(name): key})
                names.append(str(name))
            else:
                names.append(key)
        return frame, names

    def cov(
        self, columns: Sequence[Any] | None = None, *, bounds: Mapping[Any, Any], epsilon: float | None = None,
        delta: float | None = None, rho: float | None = None, mechanism: str | None = None,
    ) -> pd.DataFrame:
        """Noisy covariance matrix of bounded columns, like ``DataFrame.cov()``.

        From noisy sufficient statistics, the budget split equally over them:
        see :mod:`dpframe.queries.covariance`.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [0.0, 1.0] * 5000, "y": [0.0, 2.0] * 5000}).dp.protect(epsilon=10.0)
        >>> c = p.dp.cov(bounds={"x": (0, 1), "y": (0, 2)}, epsilon=5.0)
        >>> bool(abs(c.loc["x", "y"] - 0.5) < 0.05)
        True
        """
        return covariance(self._target(), columns, bounds, epsilon=epsilon, delta=delta, rho=rho,
                          mechanism=mechanism, correlation=False)

    def corr(
        self, columns: Sequence[Any] | None = None, *, bounds: Mapping[Any, Any], epsilon: float | None = None,
        delta: float | None = None, rho: float | None = None, mechanism: str | None = None,
    ) -> pd.DataFrame:
        """Noisy (Pearson) correlation matrix of bounded columns, like ``DataFrame.corr()``.

        See :mod:`dpframe.queries.covariance`.
        """
        return covariance(self._target(), columns, bounds, epsilon=epsilon, delta=delta, rho=rho,
                          mechanism=mechanism, correlation=True)

    def pivot_table(
        self, values: Any = None, index: Any = None, columns: Any = None, *, aggfunc: Any = "mean",
        margins: bool = False, margins_name: str = "All", keys: KeySpec = None, bounds: Any = None,
        epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.DataFrame:
        """A private ``pivot_table``: ``aggfunc`` (count, size, sum, mean, var, std, median, or a dict
        ``{value: statistic}``) of ``values`` per cell.

        One group-by over the ``index`` and ``columns`` keys (one label or a list of them each; parallel
        composition over the cells), unstacked; ``count``/``size`` count rows. ``margins=True`` adds the
        ``All`` row and column of counts and sums (post-processing of the noisy cells: free); a margin of a
        mean needs queries of its own (ask ``p.dp.groupby(index)`` for it).

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"a": pd.Categorical(["x", "y"] * 500), "b": [True, False] * 500, "v": [1.0] * 1000})
        >>> t = df.dp.protect(epsilon=1.0).dp.pivot_table("v", "a", "b", aggfunc="sum", bounds=(0, 2), epsilon=1.0)
        >>> t.shape, t.index.name, t.columns.name
        ((2, 2), 'a', 'b')
        """
        rows, across = _labels(index), _labels(columns)
        if not rows:
            raise TypeError("pivot_table needs index= (a column, or a list of columns)")
        if margins and (isinstance(aggfunc, Mapping) or aggfunc not in ("count", "size", "sum")):
            raise ValueError("margins=True adds up counts and sums of the noisy cells; a margin of another "
                             "statistic needs queries of its own: ask p.dp.groupby(index) for it")
        groups = self.groupby(rows + across, keys=keys)
        if margins:
            _check_margins_name(margins_name, [k for k in groups._partitioning.keys if k is not None])
        if isinstance(aggfunc, Mapping):
            if values is not None:
                raise TypeError("with aggfunc={value: statistic}, the dict names the values: leave values= out")
            cells: Any = groups.agg(dict(aggfunc), bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                                    mechanism=mechanism)
        elif aggfunc in ("count", "size"):
            cells = groups.count(epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)
        elif aggfunc == "median":
            cells = groups.median(values, bounds=bounds, epsilon=epsilon, rho=rho)
        elif aggfunc in ("sum", "mean", "var", "std"):
            cells = getattr(groups, aggfunc)(values, bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                                             mechanism=mechanism)
        else:
            raise ValueError(f"aggfunc must be count, size, sum, mean, var, std, median or a dict of them, got "
                             f"{aggfunc!r}")
        release = current_release(cells)
        levels = list(range(len(rows), len(rows) + len(across)))

        def unstacked(part: Any) -> Any:
            return part.unstack(levels) if levels and isinstance(part, (pd.Series, pd.DataFrame)) else part

        table: pd.DataFrame = unstacked(cells)
        table = table.to_frame() if isinstance(table, pd.Series) else table
        if release is None:
            return table

        def framed(part: Any) -> Any:  # the release's cells in the table's shape (one column: a frame too)
            part = unstacked(part)
            return part.to_frame().set_axis(table.columns, axis=1) if isinstance(part, pd.Series) else part

        # Groups not released (private selection) leave holes in the pivoted table: the note says so.
        holes = int(table.isna().to_numpy().sum()) - int(cells.isna().to_numpy().sum())
        note = "; ".join(filter(None, [release.note, f"{holes} of the table's {table.size} cells are NaN: their "
                                       "groups were not released" if holes else ""]))
        clamp = None if release.clamp is None else (framed(release.clamp[0]), framed(release.clamp[1]))
        pivoted = replace(release, std=framed(release.std), lower=framed(release.lower),
                          upper=framed(release.upper), clamp=clamp, note=note)
        if margins:
            _check_margins_name(margins_name, [table.index, table.columns])  # groups released just now
            return _with_margins(table, pivoted, margins_name)
        return with_release(table, pivoted)  # type: ignore[no-any-return]

    def value_counts(
        self,
        subset: Sequence[Any] | None = None,
        *,
        keys: KeySpec = None,
        normalize: bool = False,
        sort: bool = True,
        dropna: bool = True,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy count of each combination of values, like ``DataFrame.value_counts(subset)``.

        Combinations come from ``keys={col: [...]}``, categorical dtypes,
        booleans, or (with delta) private selection, which ends the result with
        an "other (not released)" entry (see ``Series.dp.value_counts``).

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"a": pd.Categorical(["x", "y"] * 300), "b": [True, True, False] * 200})
        >>> vc = df.dp.protect(epsilon=1.0).dp.value_counts(["a", "b"], epsilon=1.0)
        >>> vc.index.names, len(vc)
        (FrozenList(['a', 'b']), 4)
        """
        target = self._target()
        columns = list(target.obj.columns) if subset is None else list(subset)
        partitioning = Partitioning.of(target, columns, keys)
        privacy = target.privacy(epsilon, delta, rho, mechanism, selects_partitions=not partitioning.public)
        return partitioned.value_counts(target, partitioning, privacy, normalize, sort, dropna=dropna)

    def groupby(self, by: Any, keys: KeySpec = None, *, max_groups: int | None = None,
                max_rows_per_group: int | None = None) -> GroupBy:
        """Group rows by one or more columns for private per-group aggregates (see :class:`GroupBy`).

        ``by`` names columns, or is a protected series of this frame such as
        ``p["date"].dt.year``. pandas' spellings work: ``gb["age"].mean(...)``,
        ``gb.agg({...})``, ``gb.size(...)``, ``gb.mean(["a", "b"], ...)``.

        ``keys`` declares the groups (a list, or a dict per column); otherwise a
        categorical dtype's categories or booleans are used, or -- with delta on
        an (epsilon, delta) budget -- groups are selected privately.

        ``max_groups`` and ``max_rows_per_group`` (both or neither) bound each
        privacy unit in two dimensions instead of to ``max_contributions`` rows:
        at most ``max_groups`` groups (L0; chosen by a hash keyed by the unit and
        a secret of the protection, the same for every query) and at most
        ``max_rows_per_group`` rows in each (L∞; chosen uniformly at random).
        Laplace noise is then calibrated to L0·L∞ rows, Gaussian noise to
        √L0·L∞ (docs/contribution-bounds.md); quantiles per group spend ε/L0
        in each group. Every statistic of the group-by supports them, on
        public groups (``keys=``), and ``sum(column, unit_sum_bounds=(lo, hi))``
        clips each unit's sum in a group instead of each row. count, sum, mean,
        var and std also run, with delta, on groups selected privately first
        (truncated geometric or weighted Gaussian set union over each unit's L0
        observed groups; its own ledger line).

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"k": ["a", "b"] * 200, "x": [1.0, 3.0] * 200}).dp.protect(epsilon=1.0)
        >>> counts = p.dp.groupby("k", keys=["a", "b", "c"]).count(epsilon=0.5)
        >>> list(counts.index)
        ['a', 'b', 'c']
        >>> visits = pd.DataFrame({"uid": [1, 1, 1, 2, 2, 3] * 50, "day": ["mon", "tue", "wed"] * 100})
        >>> u = visits.dp.protect(rho=100.0, privacy_unit="uid", max_contributions=300)
        >>> per_day = u.dp.groupby("day", keys=["mon", "tue", "wed"], max_groups=2, max_rows_per_group=10)
        >>> c = per_day.count(rho=50.0)  # uid 1 and 2 keep 2 days x 10 rows, uid 3 its 1 day: 50 rows
        >>> int(c.sum()) in range(35, 66), "L0=2" in u.dp.budget.ledger["rule"].iloc[-1]
        (True, True)
        """
        bounds = GroupBounds.of(max_groups, max_rows_per_group)  # argument errors before anything is charged
        frame, names = self._keyed(by if isinstance(by, (list, tuple)) else [by])
        return GroupBy(Target.of(frame), names if isinstance(by, (list, tuple)) else names[0], keys, bounds=bounds)

    def partition_by(self, column: Any, *, keys: Sequence[Any] | None = None, epsilon: float | None = None,
                     delta: float = 0.0, rho: float | None = None, other: bool = False) -> dict[Any, ProtectedFrame]:
        """Split into disjoint protected frames, one per public key of ``column``, each with a budget of its own.

        As Tumult Analytics' ``partition_and_create`` (and Polars'
        ``partition_by(as_dict=True)`` on exact data): ``{key: part}``, where
        each part holds the rows whose ``column`` is ``key`` and gets a new
        budget of the given amount (``epsilon=``/``delta=``, or ``rho=`` on a
        zCDP budget), while this frame's budget is charged that amount *once*,
        whatever the number of parts -- parallel composition (McSherry 2009):
        one unit's data can change only one part. The keys must be public:
        ``keys=[...]``, a categorical dtype's categories, or False/True for a
        boolean column; they are never read from the data, and a key with no
        rows still gets a (then empty) part. Rows whose value is not a key
        (missing values included) go to no part, or, with ``other=True``, to
        one more part, under :data:`~dpframe.OTHER`.

        Each privacy unit is kept in one part only: a unit whose rows fall in
        several parts keeps its rows of one of them, chosen by a keyed hash
        of (unit, part) with a secret key from the secure source, and loses
        the others -- so which part it lands in depends on its own rows only.
        A part keeps the privacy unit and ``max_contributions``; it can be
        combined with neither the parent nor another part, and its budget
        cannot be extended. Refused under bounded DP, on a Poisson sample,
        and on filter budgets (``accounting="rdp"``/``"advanced"``).

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"region": ["north", "south"] * 500, "x": range(1000)})
        >>> p = df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
        >>> parts = p.dp.partition_by("region", keys=["north", "south", "west"], epsilon=0.5)
        >>> n = {key: part.dp.count(epsilon=0.5) for key, part in parts.items()}   # 0.5 each, in parallel
        >>> float(p.dp.budget.spent.epsilon), abs(n["north"] - 500) < 50
        (0.5, True)
        """
        return split.partition_by(self._protected(), column, keys, epsilon, delta, rho, other)

    def above_threshold(
        self, queries: Sequence[agg.Expr], *, threshold: float, epsilon: float, c: int = 1
    ) -> int | None | list[int]:
        """Sparse vector: the index of the first query whose answer is above ``threshold`` (indices if ``c > 1``).

        ``queries`` is a list of aggregate queries of :mod:`dpframe.agg`
        (``agg.count(where=...)``, clipped ``agg.sum``/``agg.mean`` and
        arithmetic on them), answered exactly in order on the rows in use
        (each privacy unit limited to max_contributions rows); their
        sensitivity and monotonicity are derived from them. Costs
        ``epsilon`` once, however many queries are examined; None (or fewer
        than ``c`` indices) if none is found. See
        :func:`dpframe.queries.select.above_threshold`.

        >>> import pandas as pd, dpframe
        >>> from dpframe import agg
        >>> from dpframe.testing import seeded_noise
        >>> p = pd.DataFrame({"age": [25, 35, 45, 55, 65] * 200}).dp.protect(epsilon=1.0)
        >>> queries = [agg.count(where="age >= @a") for a in range(100, 0, -10)]
        >>> with seeded_noise(0):
        ...     p.dp.above_threshold(queries, threshold=500, epsilon=0.5)  # first age with >= 500 people at or above it
        6
        >>> p.dp.budget.spent.epsilon.exact
        Fraction(1, 2)
        """
        return selection.above_threshold(self._obj, queries, threshold=threshold, epsilon=epsilon, c=c)

    def select(
        self,
        candidates: Any,
        *,
        score: agg.Expr | Callable[[Any], agg.Expr],
        epsilon: float | None = None,
        rho: float | None = None,
        mechanism: str = "permute_and_flip",
    ) -> DPChoice:
        """Privately choose the public candidate with a (nearly) highest score, an aggregate query.

        ``score`` is an aggregate query of :mod:`dpframe.agg` in which
        ``@candidate`` stands for each candidate, or a function of the
        (public) candidate that returns one; dpframe derives the scores'
        sensitivity and monotonicity. ``mechanism``: ``"permute_and_flip"``
        (default), ``"exponential"`` or ``"report_noisy_max"``.
        See :func:`dpframe.queries.select.select`.

        >>> import pandas as pd, dpframe
        >>> from dpframe import agg
        >>> from dpframe.testing import seeded_noise
        >>> p = pd.DataFrame({"day": ["Mon"] * 50 + ["Fri"] * 150}).dp.protect(epsilon=1.0)
        >>> with seeded_noise(0):
        ...     busiest = p.dp.select(["Mon", "Fri", "Sun"], score=agg.count(where="day == @candidate"), epsilon=0.5)
        >>> busiest.value, busiest.mechanism
        ('Fri', 'permute-and-flip')
        """
        return selection.select(self._obj, candidates, score, epsilon=epsilon, rho=rho, mechanism=mechanism)

    def describe(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        weights: Any = None,
        percentiles: Any = (0.25, 0.5, 0.75),
        bounds: Any = None,
        keys: Any = None,
        progress: bool = True,
        include: Any = "all",
    ) -> pd.DataFrame:
        """Private ``describe(include="all")``: every column's statistics, spending exactly ``epsilon``.

        ``include`` picks the columns by dtype as ``DataFrame.select_dtypes``
        does (``"number"``, ``"object"``, ``["datetime"]``, ...; the schema
        decides, not the data); ``"all"`` (the default) describes every column.

        ``bounds={col: (lo, hi)}`` declares clipping bounds (otherwise found
        privately once per numeric column), ``keys={col: [...]}`` declares
        categories, ``weights={col: w}`` shifts the budget between columns.
        Intervals are in ``result.attrs["dp"]``. See
        :func:`dpframe.report.describe.describe` and ``docs/describe.md``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [1.0, 2.0] * 500, "c": ["a", "b"] * 500}).dp.protect(epsilon=1.0)
        >>> d = p.dp.describe(epsilon=0.5, bounds={"x": (0, 3)}, keys={"c": ["a", "b"]})
        >>> d.shape, p.dp.budget.spent.epsilon.exact
        ((12, 2), Fraction(1, 2))
        """
        from dpframe.report.describe import describe

        frame: ProtectedFrame = self._protected()
        if include != "all":
            frame = frame.select_dtypes(include=include)
        return describe(
            Target.of(frame), epsilon=epsilon, delta=delta, weights=weights, percentiles=percentiles, bounds=bounds,
            keys=keys, progress=progress,
        )

    def synthesize(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        n: int | None = None,
        method: str = "aim",
        columns: Any = None,
        marginals: Any = None,
        bounds: Any = None,
        categories: Any = None,
        bins: Any = None,
        progress: bool = True,
        random_state: int | None = None,
    ) -> pd.DataFrame:
        """A differentially private synthetic copy: same columns and dtypes, a noisy number of rows.

        The result is post-processing of noisy measurements: unprotected and
        free to share. ``method="aim"`` (default) fits a graphical model to
        one-way marginals and to two- and three-way marginals chosen
        adaptively (McKenna et al. 2022); ``"mst"`` to a spanning tree of
        pairs (McKenna et al. 2021), faster; ``"marginals"`` samples
        independent noisy marginals (the book's ch. 15; ``marginals=[("a",
        "b"), ...]`` for joint ones). Numeric and date columns are binned
        within ``bounds={col: (lo, hi)}`` (otherwise found privately) into
        ``bins`` bins (default 32; an int, or ``{col: n or [edges]}``): equal widths when ``bins=``
        is given, else edges that follow a noisy histogram; text columns use ``categories={col: [...]}``, a
        categorical dtype, or categories selected privately (needs delta).
        Missing values are a value of their own. ``n=`` fixes the row count.
        ``random_state`` makes everything reproducible -- tests only, NOT
        private. See ``docs/synthesis.md``.

        >>> import numpy as np, pandas as pd, dpframe
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"age": rng.integers(18, 80, 2000), "smoker": rng.random(2000) < 0.3})
        >>> p = df.dp.protect(epsilon=1.0, delta=1e-6)
        >>> syn = p.dp.synthesize(epsilon=1.0, delta=1e-6, bounds={"age": (18, 80)}, progress=False)
        >>> list(syn.dtypes.astype(str)), 1800 < len(syn) < 2200, p.dp.budget.spent.epsilon.exact
        (['int64', 'bool'], True, Fraction(1, 1))
        """
        from dpframe.synthesis.synthesize import synthesize

        return synthesize(
            self._target(), epsilon=epsilon, delta=delta, rho=rho, n=n, method=method, columns=columns,
            marginals=marginals, bounds=bounds, categories=categories, bins=bins, progress=progress,
            random_state=random_state,
        )

    def k_anonymity(self, *, quasi_identifiers: Any) -> int:
        """The k of this frame: its smallest equivalence class on the quasi-identifiers.

        NOT differentially private, and spends no privacy budget: an audit tool
        (see :func:`dpframe.anonymity.k_anonymity` and ``docs/anonymity.md``).
        Refused on protected data: the k is read exactly from the rows.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"zip": [1, 1, 2, 2, 2], "sex": ["F", "F", "M", "M", "F"]})
        >>> df.dp.k_anonymity(quasi_identifiers=["zip", "sex"])
        1 (k-anonymity; not differentially private; no privacy budget spent)
        """
        from dpframe.anonymity import k_anonymity

        return k_anonymity(self._plain(".dp.k_anonymity()"), quasi_identifiers)

    def anonymize(self, *, k: int, quasi_identifiers: Any, **options: Any) -> Any:
        """The least lossy generalization of this frame that is k-anonymous (optionally l-diverse / t-close).

        NOT differentially private, and spends no privacy budget; refused on
        protected data (it returns rows). Options (``hierarchies``,
        ``suppression``, ``metric``, ``sensitive``, ``l``, ``t``, ...) are those
        of :func:`dpframe.anonymity.anonymize`; see ``docs/anonymity.md``.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"age": [31, 35, 38, 52, 57], "sex": ["F", "M", "F", "M", "F"]})
        >>> res = df.dp.anonymize(k=2, quasi_identifiers=["age", "sex"], metric="height")
        >>> res.levels, res.suppressed, res.data["age"].tolist()
        ({'age': 1, 'sex': 1}, 0, [30, 30, 30, 50, 50])
        """
        from dpframe.anonymity import anonymize

        return anonymize(self._plain(".dp.anonymize()"), k=k, quasi_identifiers=quasi_identifiers, **options)

    def sample_and_aggregate(
        self,
        func: Any,
        *,
        bounds: Any,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        blocks: int | None = None,
    ) -> DPFloat | pd.Series[Any]:
        """Any statistic ``func(frame) -> float`` (or vector), privately: sample-and-aggregate (NRS 2007).

        The privacy units are split at random into ``blocks`` disjoint blocks
        (``None``: about √n, from a noisy count of units with a tenth of the
        budget); ``func`` runs on each block, its outputs are clipped to
        ``bounds`` -- ``(lo, hi)``, or a list or dict of pairs for a vector --
        and their mean is released with noise of sensitivity (hi - lo)/blocks.
        A block on which ``func`` fails counts as the bounds' midpoint. See
        :mod:`dpframe.queries.local_sensitivity`.

        >>> import numpy as np, pandas as pd, dpframe
        >>> df = pd.DataFrame({"x": np.arange(10_000) % 50.0})
        >>> df["y"] = 2 * df["x"] + 5
        >>> p = df.dp.protect(epsilon=1.0)
        >>> with dpframe.testing.seeded_noise(0):  # seeded: unseeded, |error| >= 0.2 in about 8% of runs
        ...     fit = p.dp.sample_and_aggregate(lambda b: np.polyfit(b["x"], b["y"], 1), bounds=[(0, 4), (0, 10)],
        ...                                     epsilon=1.0, blocks=100)
        >>> bool(abs(fit[0] - 2) < 0.2), len(fit)
        (True, 2)
        """
        target = self._target()
        privacy = target.privacy(epsilon, delta, rho, mechanism)
        return local_sensitivity.sample_and_aggregate(target, func, bounds=bounds, privacy=privacy, blocks=blocks)

    def chisquare(
        self, column: Any, expected: Any = None, *, keys: KeySpec = None, simulations: int = 999,
        epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
        mechanism: str | None = None,
    ) -> ChiSquareResult:
        """Private chi-squared goodness-of-fit test of ``column`` against public proportions, like ``scipy.stats.chisquare``.

        ``expected`` gives the null's proportions (or counts, rescaled): a dict
        by category (whose keys are the categories), or a list in the order of
        the public categories (``keys=``, a categorical dtype or booleans);
        None is uniform. The noisy counts are released once (charged like
        ``value_counts``); the p-value is a Monte Carlo test under the null that
        includes the noise, so it stays valid (see
        :mod:`dpframe.queries.hypothesis` and ``docs/hypothesis-tests.md``).

        >>> import numpy as np, pandas as pd, dpframe
        >>> rng = np.random.default_rng(0)
        >>> p = pd.DataFrame({"c": rng.choice(["a", "b", "c"], 3000, p=[0.5, 0.3, 0.2])}).dp.protect(epsilon=1.0)
        >>> result = p.dp.chisquare("c", expected={"a": 0.5, "b": 0.3, "c": 0.2}, epsilon=1.0)
        >>> result.pvalue > 1e-4, list(result.table.index), result.dof
        (True, ['a', 'b', 'c'], 2)
        """
        from dpframe.queries import hypothesis

        return hypothesis.chisquare(self._target(), column, expected, keys,
                                    lambda t: t.privacy(epsilon, delta, rho, mechanism), simulations)

    def chi2_contingency(
        self, index: Any, columns: Any, *, keys: KeySpec = None, simulations: int = 999,
        epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
        mechanism: str | None = None,
    ) -> ChiSquareResult:
        """Private chi-squared test of independence of two columns, like ``scipy.stats.chi2_contingency``.

        Both columns need public categories (``keys={col: [...]}``, categorical
        dtypes or booleans). The noisy crosstab is released once (charged like
        ``crosstab``); the p-value is a Monte Carlo test under independence
        with margins estimated from the noisy table, noise included (see
        ``docs/hypothesis-tests.md``).

        >>> import numpy as np, pandas as pd, dpframe
        >>> rng = np.random.default_rng(0)
        >>> a = rng.random(3000) < 0.4
        >>> df = pd.DataFrame({"a": a, "b": np.where(a, rng.random(3000) < 0.7, rng.random(3000) < 0.3)})
        >>> result = df.dp.protect(epsilon=1.0).dp.chi2_contingency("a", "b", epsilon=1.0)
        >>> result.pvalue < 0.01, result.table.shape
        (True, (2, 2))
        """
        from dpframe.queries import hypothesis

        return hypothesis.chi2_contingency(self._target(), index, columns, keys,
                                           lambda t: t.privacy(epsilon, delta, rho, mechanism), simulations)

    def counts(
        self,
        conditions: Mapping[Any, Any],
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy counts of the rows meeting each of several conditions, released as one vector.

        ``conditions`` maps names to boolean conditions on this frame
        (``p["age"] >= 18``, or ``lambda d: d["age"] >= 18``), computed by its
        row-wise operations before the charge. With the Gaussian mechanism
        (``delta=``, or ``rho=`` on zCDP) the m counts get one release
        calibrated to their L2 sensitivity k√m -- about √m times less noise
        than m Gaussian counts composed on an (ε, δ) budget. See
        :func:`dpframe.queries.strategies.counts` and ``docs/strategies.md``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": range(100)}).dp.protect(epsilon=1.0, delta=1e-6)
        >>> c = p.dp.counts({"minors": p["age"] < 18, "adults": lambda d: d["age"] >= 18}, epsilon=1.0, delta=1e-7)
        >>> c.index.tolist(), p.dp.budget.ledger["query"].tolist()
        (['minors', 'adults'], ['counts'])
        """
        from dpframe.queries.strategies import counts

        target = self._target()
        return counts(target, self._protected(), conditions, target.privacy(epsilon, delta, rho, mechanism))

    def sums(
        self,
        columns: Mapping[Any, Any],
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy sums of several columns, each clipped to its bounds, released as one vector.

        ``columns`` maps names to ``(column, (lower, upper))``, the column a label
        or a protected numeric column of this frame. With the Gaussian mechanism
        the sums, each scaled by its sensitivity, get one release at L2
        sensitivity √m. See :func:`dpframe.queries.strategies.sums`.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [30, 50] * 500, "hours": [40] * 1000}).dp.protect(epsilon=1.0, delta=1e-6)
        >>> s = p.dp.sums({"age": ("age", (0, 125)), "hours": ("hours", (0, 99))}, epsilon=1.0, delta=1e-7)
        >>> s.index.tolist(), s.attrs["dp"].mechanism
        (['age', 'hours'], 'discrete Gaussian')
        """
        from dpframe.queries.strategies import sums

        target = self._target()
        return sums(target, self._protected(), columns, target.privacy(epsilon, delta, rho, mechanism))


class SeriesAccessor(_Accessor[ProtectedSeries]):
    """``s.dp.protect()`` on a Series; private questions about a :class:`~dpframe.ProtectedSeries` (``s.dp``).

    >>> import pandas as pd, dpframe
    >>> s = pd.Series([1.0, 2.0, 3.0] * 100, name="x").dp.protect(epsilon=1.0)
    >>> abs(s.dp.mean(bounds=(0, 4), epsilon=0.5) - 2) < 0.2
    True
    """

    def protect(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        budget: Budget | None = None,
        categories: Categories = None,
        name: str | None = None,
        ledger: LedgerLike = None,
        extend: bool = False,
        neighbours: str = "add/remove",
        accounting: str | None = None,
    ) -> ProtectedSeries:
        """A :class:`~dpframe.ProtectedSeries` of this data with a privacy budget; see :func:`dpframe.protect`.

        >>> import pandas as pd, dpframe
        >>> s = pd.Series([23, 35, 47], name="age").dp.protect(epsilon=1.0)
        >>> s.dtype, float(s.dp.budget.total.epsilon.exact)
        (dtype('int64'), 1.0)
        """
        protected: ProtectedSeries = self._protect(epsilon, delta, rho, budget, None, 1, categories, name, ledger,
                                                   extend, neighbours, accounting)
        return protected

    def _in_seconds(self, query: str, bounds: Any) -> tuple[Target, TimeScale | None, Any]:
        """The target, with a date or duration column in seconds, its time scale, and its bounds in seconds."""
        target, scale = temporal.in_seconds(self._target())
        if scale is None:
            return target, None, bounds
        temporal.refuse(scale, query, target.series.name)
        return target, scale, scale.bounds(bounds)

    def sum(
        self,
        *,
        bounds: Any = None,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        clipping: bool | None = None,
    ) -> DPFloat | DPInt:
        """Noisy sum of the values clipped to ``bounds``: a ``DPInt`` for integer and boolean columns.

        Without ``bounds``, they are chosen privately with the sparse vector
        technique over a logarithmic grid, spending a quarter of the query's
        budget (its own ledger line); the result reports them in ``.release.bounds``.
        ``clipping`` (default: with automatic bounds only) spends a tenth of the
        budget counting the values the bounds clip (``.release.clipping``) and
        warns (:class:`~dpframe.ClippingWarning`) when they are a noticeable share.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [1.0] * 1000}).dp.protect(epsilon=1.0)
        >>> s = p["x"].dp.sum(bounds=(0, 2), epsilon=1.0)
        >>> abs(s - 1000) < 50
        True
        """
        target, scale, bounds = self._in_seconds("sum", bounds)
        answer = scalar.bounded_sum(target, target.series, bounds, target.privacy(epsilon, delta, rho, mechanism),
                                    clipping)
        return answer if scale is None else scale.answer(answer, "sum")

    def mean(
        self,
        *,
        bounds: Any = None,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        clipping: bool | None = None,
        domain: Any = None,
    ) -> DPFloat:
        """Noisy mean of the values clipped to ``bounds`` (noisy sum / noisy count).

        Without ``bounds``, they are chosen privately with the sparse vector
        technique over a logarithmic grid, spending a quarter of the query's
        budget (its own ledger line); the result reports them in ``.release.bounds``.
        ``clipping`` (default: with automatic bounds only) spends a tenth of the
        budget counting the values the bounds clip (``.release.clipping``) and
        warns (:class:`~dpframe.ClippingWarning`) when they are a noticeable share or may move the mean by more
        than its interval's half-width (marked: ``.clipping_bites``). ``domain=(lower, upper)``, a public range
        the values lie in (not read from this data), makes the interval cover the mean of the values clipped to
        it, what the bounds clipped included (docs/reading-answers.md, "Honest when clipping bites").

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [20, 40, 60] * 1000}).dp.protect(epsilon=1.0)
        >>> m = p["age"].dp.mean(bounds=(0, 125), epsilon=0.2)
        >>> abs(m - 40) < 2, m.ci[0] <= m <= m.ci[1]
        (True, True)
        """
        target, scale, bounds = self._in_seconds("mean", bounds)
        if domain is not None and scale is not None:
            raise ValueError("domain= is for numeric columns")
        answer = scalar.mean(target, target.series, bounds, target.privacy(epsilon, delta, rho, mechanism), clipping,
                             domain=domain)
        return answer if scale is None else scale.answer(answer, "mean")

    def var(
        self,
        *,
        bounds: Any = None,
        ddof: int = 1,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        clipping: bool | None = None,
    ) -> DPFloat:
        """Noisy variance of the values clipped to ``bounds``.

        Without ``bounds``, they are chosen privately with the sparse vector
        technique over a logarithmic grid, spending a quarter of the query's
        budget (its own ledger line); the result reports them in ``.release.bounds``.
        ``clipping`` (default: with automatic bounds only) spends a tenth of the
        budget counting the values the bounds clip (``.release.clipping``) and
        warns (:class:`~dpframe.ClippingWarning`) when they are a noticeable share.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [0.0, 10.0] * 5000}).dp.protect(epsilon=1.0)
        >>> v = p["x"].dp.var(bounds=(0, 10), epsilon=1.0)
        >>> abs(v - 25) < 2
        True
        """
        target, _, bounds = self._in_seconds("var", bounds)
        return scalar.var(target, target.series, bounds, target.privacy(epsilon, delta, rho, mechanism), ddof,
                          clipping)

    def std(
        self,
        *,
        bounds: Any = None,
        ddof: int = 1,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
        clipping: bool | None = None,
    ) -> DPFloat:
        """Noisy standard deviation of the values clipped to ``bounds``.

        Without ``bounds``, they are chosen privately with the sparse vector
        technique over a logarithmic grid, spending a quarter of the query's
        budget (its own ledger line); the result reports them in ``.release.bounds``.
        ``clipping`` (default: with automatic bounds only) spends a tenth of the
        budget counting the values the bounds clip (``.release.clipping``) and
        warns (:class:`~dpframe.ClippingWarning`) when they are a noticeable share.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [0.0, 10.0] * 5000}).dp.protect(epsilon=1.0)
        >>> abs(p["x"].dp.std(bounds=(0, 10), epsilon=1.0) - 5) < 0.5
        True
        """
        target, scale, bounds = self._in_seconds("std", bounds)
        answer = scalar.std(target, target.series, bounds, target.privacy(epsilon, delta, rho, mechanism), ddof,
                            clipping)
        return answer if scale is None else scale.answer(answer, "std")

    def histogram(
        self,
        bins: Any = 10,
        *,
        bounds: Any = None,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy counts per bin; ``bins`` is a sequence of edges, or a number of bins over ``bounds``.

        Bins follow ``np.histogram``: each is closed on the left, and the last
        also includes its right edge. Values outside the edges and missing
        values are not counted. A number of bins without ``bounds`` finds the
        bounds privately first (sparse vector, a quarter of the budget).

        On dates and durations (:mod:`dpframe.queries.temporal`), ``bins`` may
        also be a frequency such as ``"MS"`` (months), ``"W"`` or ``"Y"`` with
        ``bounds=(first, last)``: one bin per period, indexed by the periods.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [25, 35, 45] * 100}).dp.protect(epsilon=1.0)
        >>> h = p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.2)
        >>> len(h), h.name
        (12, 'count')
        >>> d = pd.DataFrame({"day": pd.date_range("2020-01-01", "2020-12-31")}).dp.protect(epsilon=1.0)
        >>> monthly = d["day"].dp.histogram(bins="M", bounds=("2020-01-01", "2020-12-31"), epsilon=0.5)
        >>> str(monthly.index[0]), len(monthly)
        ('2020-01', 12)
        """
        target, scale, _ = self._in_seconds("histogram", None)
        periods = None
        if scale is not None:
            bins, bounds, periods = temporal.histogram_edges(scale, bins, bounds)
        counts = partitioned.histogram(target, target.series, bins, bounds,
                                       target.privacy(epsilon, delta, rho, mechanism))
        return counts if scale is None else temporal.histogram_index(scale, counts, periods)

    def value_counts(
        self,
        *,
        keys: KeySpec = None,
        normalize: bool = False,
        sort: bool = True,
        dropna: bool = True,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy count per category, like ``Series.value_counts()``.

        Categories come from ``keys=``, a categorical dtype, booleans, or
        (with ``delta > 0``) private partition selection. ``dropna=False``
        counts the missing values too, under a NaN label, at no extra cost.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"edu": ["HS", "BA", "HS"] * 300}).dp.protect(epsilon=1.0, delta=1e-6)
        >>> vc = p["edu"].dp.value_counts(keys=["HS", "BA", "PhD"], epsilon=0.2)
        >>> list(vc.index[:2])
        ['HS', 'BA']
        """
        target = self._target()
        partitioning = Partitioning.of(target, [target.series.name], keys)
        privacy = target.privacy(epsilon, delta, rho, mechanism, selects_partitions=not partitioning.public)
        return partitioned.value_counts(target, partitioning, privacy, normalize, sort, dropna=dropna)

    def nunique(
        self, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
        mechanism: str | None = None,
    ) -> DPInt:
        """Noisy number of distinct values, like ``Series.nunique()`` (sensitivity max_contributions).

        See :func:`dpframe.queries.scalar.distinct_count`.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"c": list("abcde") * 200}).dp.protect(epsilon=1.0)
        >>> abs(p["c"].dp.nunique(epsilon=1.0) - 5) < 10
        True
        """
        target = self._target()
        return scalar.distinct_count(target, target.privacy(epsilon, delta, rho, mechanism))

    def describe(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        percentiles: Any = (0.25, 0.5, 0.75),
        bounds: Any = None,
        keys: Any = None,
        progress: bool = True,
    ) -> pd.Series[Any]:
        """Private ``Series.describe()``: this column's statistics, spending exactly ``epsilon``.

        ``bounds=(lower, upper)`` for numbers, dates and durations, ``keys=[...]``
        for categories; the rest as the frame's ``describe``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [1.0, 2.0] * 500}).dp.protect(epsilon=1.0)
        >>> d = p["x"].dp.describe(epsilon=0.5, bounds=(0, 3))
        >>> d.name, list(d.index[:3]), p.dp.budget.spent.epsilon.exact
        ('x', ['count', 'mean', 'std'], Fraction(1, 2))
        """
        from dpframe.report.describe import describe_column

        series: ProtectedSeries = self._protected()
        return describe_column(Target.of(series.to_frame()), series.name, epsilon=epsilon, delta=delta,
                               percentiles=percentiles, bounds=bounds, keys=keys, progress=progress)

    def mode(
        self,
        *,
        epsilon: float | None = None,
        keys: KeySpec = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """The most common category, privately selected: a one-element Series, like ``Series.mode()``.

        Categories come from ``keys=``, a categorical dtype or booleans (then
        ``mechanism`` picks the selection: ``"permute_and_flip"`` by default,
        ``"exponential"`` or ``"report_noisy_max"``), or -- with ``delta`` on an
        (ε, δ) budget -- private partition selection.

        >>> import pandas as pd, dpframe
        >>> from dpframe.testing import seeded_noise
        >>> p = pd.DataFrame({"edu": ["HS"] * 70 + ["BA"] * 30}).dp.protect(epsilon=1.0)
        >>> with seeded_noise(0):
        ...     p["edu"].dp.mode(keys=["HS", "BA", "PhD"], epsilon=0.5).tolist()
        ['HS']
        """
        return selection.mode(self._target(), epsilon=epsilon, keys=keys, delta=delta, rho=rho, mechanism=mechanism)

    def top_k(
        self,
        k: int,
        *,
        epsilon: float | None = None,
        keys: KeySpec = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """The ``k`` most common categories, most common first (k rounds at ε/k each).

        >>> import pandas as pd, dpframe
        >>> from dpframe.testing import seeded_noise
        >>> p = pd.DataFrame({"c": ["a"] * 90 + ["b"] * 60 + ["c"] * 10}).dp.protect(epsilon=1.0)
        >>> with seeded_noise(0):
        ...     p["c"].dp.top_k(2, keys=["a", "b", "c"], epsilon=1.0).tolist()
        ['a', 'b']
        """
        return selection.top_k(self._target(), k, epsilon=epsilon, keys=keys, delta=delta, rho=rho, mechanism=mechanism)

    @overload
    def quantile(self, q: float = ..., *, bounds: Any = ..., epsilon: float | None = ...,
                 rho: float | None = ...) -> DPFloat: ...

    @overload
    def quantile(self, q: Sequence[float] | pd.Index[Any] | np.ndarray[Any, Any], *, bounds: Any = ...,
                 epsilon: float | None = ..., rho: float | None = ...) -> pd.Series[Any]: ...

    def quantile(
        self,
        q: Any = 0.5,
        *,
        bounds: Any = None,
        epsilon: float | None = None,
        rho: float | None = None,
    ) -> DPFloat | pd.Series[Any]:
        """Private quantile(s) of the values clipped to ``bounds`` (exponential mechanism, Smith 2011).

        A number ``q`` gives a :class:`DPFloat`; a list gives a Series indexed
        by ``q``, like ``Series.quantile``, with ε split equally. Integer
        columns (by dtype) get integers, chosen exactly by permute-and-flip
        over integer candidates (:mod:`dpframe.selection.quantile`).

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": list(range(20, 81)) * 50}).dp.protect(epsilon=1.0)
        >>> qs = p["age"].dp.quantile([0.25, 0.75], bounds=(0, 125), epsilon=1.0)
        >>> list(qs.index), bool(abs(qs[0.25] - 35) <= 3 and abs(qs[0.75] - 65) <= 3)
        ([0.25, 0.75], True)
        """
        target, scale, bounds = self._in_seconds("quantile", bounds)
        answer = selection.quantile(target, q, bounds=bounds, epsilon=epsilon, rho=rho)
        return answer if scale is None else scale.answer(answer, "quantile")

    def median(self, *, bounds: Any = None, epsilon: float | None = None, rho: float | None = None,
               method: str = "exponential", delta: float | None = None, sensitivity: float | None = None) -> DPFloat:
        """Private median of the values clipped to ``bounds``: ``quantile(0.5)``.

        ``method="smooth"`` adds Laplace noise scaled to the median's smooth
        sensitivity, (ε, δ)-DP (needs ``delta``), sampled exactly on a public
        grid of 2^-20 of the bounds' width (no floating-point leak); ``method="ptr"``
        is propose-test-release with the proposed local ``sensitivity`` (needs
        ``delta``); see :mod:`dpframe.queries.local_sensitivity`.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": list(range(20, 81)) * 50}).dp.protect(epsilon=2.0, delta=1e-6)
        >>> m = p["age"].dp.median(bounds=(0, 125), epsilon=1.0)
        >>> abs(m - 50) <= 2, m.mechanism
        (True, 'permute-and-flip over integer candidates')
        >>> s = p["age"].dp.median(bounds=(0, 125), epsilon=0.5, delta=1e-7, method="smooth")
        >>> s.mechanism
        'smooth sensitivity (Nissim, Raskhodnikova & Smith 2007)'
        """
        if method not in ("exponential", "smooth", "ptr"):
            raise ValueError(f"method must be 'exponential', 'smooth' or 'ptr', got {method!r}")
        if method != "exponential":
            if rho is not None:
                raise ValueError(f"method={method!r} takes epsilon= (and delta=), not rho=")
            if method == "smooth":
                if sensitivity is not None:
                    raise ValueError("sensitivity= is the proposed bound of method='ptr'; drop it for 'smooth'")
                return local_sensitivity.smooth_median(self._target(), bounds, epsilon, delta)
            return self.propose_test_release("median", sensitivity=sensitivity, bounds=bounds, epsilon=epsilon,
                                             delta=delta)
        if delta is not None or sensitivity is not None:
            raise ValueError("delta= and sensitivity= are for method='smooth' or 'ptr', not the exponential mechanism")
        target, scale, bounds = self._in_seconds("median", bounds)
        answer = selection.median(target, bounds=bounds, epsilon=epsilon, rho=rho)
        return answer if scale is None else scale.answer(answer, "median")

    def randomized_response(
        self,
        *,
        epsilon: float,
        categories: Sequence[Any] | None = None,
        method: str = "grr",
        other: Any = None,
        count_epsilon: float | None = None,
        g: int | None = None,
    ) -> LocalReports:
        """Locally private reports of this column, one per value (``method``: rr, grr, sue, oue, olh).

        On a plain Series nothing is charged: this is what a party runs on its
        own data before sharing it. On a protected series the budget is charged
        first and the reports, shuffled and with a noised number, are public.
        Categories must be public (``categories=``, a categorical or boolean
        dtype). See :func:`dpframe.local.randomized_response` and ``docs/local.md``.

        >>> import pandas as pd, dpframe
        >>> s = pd.Series(["a", "b", "a", "c"] * 2500)
        >>> reports = s.dp.randomized_response(epsilon=2.0, categories=["a", "b", "c"], method="oue")
        >>> bool(abs(reports.estimate_frequencies().loc["a", "proportion"] - 0.5) < 0.05)
        True
        """
        from dpframe.local import randomized_response

        return randomized_response(self._obj, epsilon=epsilon, categories=categories, method=method, other=other,
                                   count_epsilon=count_epsilon, g=g)

    def propose_test_release(self, statistic: str = "median", *, sensitivity: float | None = None, bounds: Any = None,
                             epsilon: float | None = None, delta: float | None = None) -> DPFloat:
        """Propose-test-release (Dwork & Lei 2009) of the clipped ``"median"`` or ``"mean"``.

        ``sensitivity`` is the proposed bound on the local sensitivity: half of
        ``epsilon`` tests, with noise, that the data is far from any data set
        whose local sensitivity exceeds it; the other half releases with Laplace
        noise scaled to it. When the test fails, :class:`~dpframe.ProposalRefusedError`
        is raised and the cost stays charged. (ε, δ) in all.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": list(range(20, 81)) * 50}).dp.protect(epsilon=1.0, delta=1e-6)
        >>> m = p["age"].dp.propose_test_release("mean", sensitivity=0.05, bounds=(0, 125), epsilon=1.0, delta=1e-6)
        >>> bool(abs(m - 50) < 1), m.release.query
        (True, 'mean')
        """
        if sensitivity is None:
            raise ValueError("pass sensitivity=, the proposed bound on the local sensitivity (e.g. sensitivity=1.0)")
        return local_sensitivity.propose_test_release(self._target(), statistic, sensitivity=sensitivity,
                                                      bounds=bounds, epsilon=epsilon, delta=delta)

    def range_counts(
        self,
        ranges: Sequence[tuple[Any, Any]],
        *,
        bins: Any,
        bounds: Any = None,
        strategy: str = "auto",
        branching: int | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy counts of the values in each range ``[low, high)`` (``None``: open end), consistent with each other.

        ``bins`` (a number with ``bounds=(lower, upper)``, or edges) must be
        public; range ends are bin edges. ``strategy="hierarchical"`` measures
        a tree of bin groups (``branching``, default 16), ``"identity"`` the
        bins, ``"auto"`` (default) whichever answers these ranges with less
        total variance; least squares then makes the answers consistent, each
        with the standard deviation its strategy gives it (``attrs["dp"].std``). See
        :func:`dpframe.queries.strategies.range_counts` and ``docs/strategies.md``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": list(range(90)) * 100}).dp.protect(epsilon=1.0)
        >>> r = p["age"].dp.range_counts([(None, 40), (40, None)], bins=9, bounds=(0, 90), epsilon=1.0)
        >>> [str(i) for i in r.index]
        ['[-inf, 40.0)', '[40.0, inf)']
        """
        from dpframe.queries.strategies import range_counts

        target = self._target()
        return range_counts(target, ranges, bins, bounds, strategy, branching,
                            target.privacy(epsilon, delta, rho, mechanism))

    def range_queries(
        self, ranges: Sequence[tuple[Any, Any]], *, threshold: float, epsilon: float, c: int = 1
    ) -> pd.Series[Any]:
        """Noisy counts of the ranges ``[low, high]`` (``None``: open end) above ``threshold``, by sparse vector.

        Costs ``epsilon`` however many ranges are examined (book §11.4); see
        :func:`dpframe.queries.bounds.range_queries`.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [25.0] * 3000 + [65.0] * 100}).dp.protect(epsilon=1.0)
        >>> found = p["age"].dp.range_queries([(None, 17), (18, 64), (65, None)], threshold=1000, epsilon=1.0)
        >>> [str(i) for i in found.index]
        ['[18.0, 64.0]']
        """
        from dpframe.queries.bounds import range_queries

        return range_queries(self._protected(), ranges, threshold=threshold, epsilon=epsilon, c=c)


class ProtectedAccessor(Generic[A]):
    """``.dp`` of protected frames and series, set on their classes by this module, as pandas' ``CachedAccessor``
    is set on DataFrame and Series (:func:`register`): :mod:`dpframe.protection` never imports this module.

    Read on a protected object it gives that object's accessor, a new one each time (protected objects have
    ``__slots__``, no room to keep one); read on the class, the accessor class.
    """

    def __init__(self, accessor: type[A]) -> None:
        self._accessor = accessor

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> type[A]: ...

    @overload
    def __get__(self, obj: Protected, owner: type[Any]) -> A: ...

    def __get__(self, obj: Protected | None, owner: type[Any]) -> A | type[A]:
        if obj is None:
            return self._accessor
        return self._accessor(obj)


ProtectedFrame.dp = ProtectedAccessor(DataFrameAccessor)
ProtectedSeries.dp = ProtectedAccessor(SeriesAccessor)


def register() -> None:
    """Register ``.dp`` on pandas DataFrame and Series (done on ``import dpframe``).

    >>> import pandas as pd
    >>> register()
    >>> hasattr(pd.DataFrame(), "dp")
    True
    """
    import warnings

    with warnings.catch_warnings():
        # Re-registering on reload replaces our own accessor; the warning is noise.
        warnings.simplefilter("ignore", UserWarning)
        pd.api.extensions.register_dataframe_accessor("dp")(DataFrameAccessor)
        pd.api.extensions.register_series_accessor("dp")(SeriesAccessor)


__all__ = ["DataFrameAccessor", "PandasObject", "ProtectedAccessor", "SeriesAccessor", "register"]


def _labels(key: Any) -> list[Any]:
    """``index=``/``columns=`` of pivot_table as a list of column labels (None: none)."""
    if key is None:
        return []
    return list(key) if isinstance(key, (list, tuple)) else [key]


def _check_margins_name(name: str, labels: Sequence[pd.Index[Any]]) -> None:
    """pandas' refusal of a margins name that is already a group's (public keys, or released groups)."""
    for level in labels:
        values = level.to_flat_index() if isinstance(level, pd.MultiIndex) else level
        if any(name == value or (isinstance(value, tuple) and name in value) for value in values):
            raise ValueError(f'Conflicting name "{name}" in margins: a group is called so; pass margins_name=')


def _with_margins(table: pd.DataFrame, release: Release, name: str) -> pd.DataFrame:
    """``table`` with pandas' ``All`` row and column: sums of the noisy cells (post-processing), their standard
    deviations added in quadrature (independent noise) and their intervals from those, approximately."""
    def margin(labels: pd.Index[Any]) -> Any:  # as pandas: (name, '', ...) on a MultiIndex
        return name if labels.nlevels == 1 else (name, *[""] * (labels.nlevels - 1))

    def bordered(part: pd.DataFrame, combine: Any) -> pd.DataFrame:
        out = part.copy()
        out[margin(out.columns)] = combine(part, axis=1)
        total: pd.DataFrame = combine(out, axis=0).to_frame().T
        total.index = (pd.Index([name], name=out.index.name) if out.index.nlevels == 1
                       else pd.MultiIndex.from_tuples([margin(out.index)], names=out.index.names))
        return pd.concat([out, total])

    def in_quadrature(part: pd.DataFrame, axis: Any) -> Any:
        return np.sqrt((part ** 2).sum(axis=axis))

    values = bordered(table.astype(float), lambda part, axis: part.sum(axis=axis))
    std = bordered(pd.DataFrame(release.std).astype(float), in_quadrature) if isinstance(
        release.std, pd.DataFrame) else release.std
    upper, lower = cast(pd.DataFrame, release.upper), cast(pd.DataFrame, release.lower)
    half = (upper - lower).astype(float) / 2
    halves = bordered(half, in_quadrature)
    note = "; ".join(filter(None, [release.note, f"{name} margins add up the noisy cells (approximate intervals)"]))
    bordered_release = replace(release, std=std, lower=values - halves, upper=values + halves, note=note)
    return with_release(values, bordered_release)  # type: ignore[no-any-return]
