"""The ``.dp`` accessor on DataFrame and Series: a thin front door.

Each method validates its arguments, builds a query (which fixes the noise
and the cost from the schema and arguments alone), and hands it to
:mod:`dpframe.queries`, which charges the budget before reading the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pandas as pd

from dpframe.accounting.budget import Budget
from dpframe.errors import PrivacyUnitLostError
from dpframe.protection import (
    PandasObject,
    Protection,
    attach,
    check_can_protect,
    has_unit_record,
    require_protection,
)
from dpframe.queries import partitioned, scalar
from dpframe.queries import select as selection
from dpframe.queries.partitioned import GroupBy, KeySpec, Partitioning
from dpframe.queries.plan import Target
from dpframe.queries.select import DPChoice
from dpframe.results import DPFloat, DPInt

if TYPE_CHECKING:
    from matplotlib.axes import Axes

T = TypeVar("T", pd.DataFrame, "pd.Series[Any]")


class _Accessor(Generic[T]):
    """What frames and series share: protecting, the budget, counting."""

    def __init__(self, obj: T) -> None:
        self._obj: T = obj

    def protect(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        budget: Budget | None = None,
        privacy_unit: str | None = None,
        max_contributions: int = 1,
    ) -> T:
        """Return a protected copy of the data with a privacy budget attached.

        The original stays unprotected. Frames derived from the returned one
        (filters, column selections, ``assign``, ``sort_values``, ...) spend
        from the same budget. With ``privacy_unit="user_id"`` the guarantee is
        per person rather than per row, and each query keeps at most
        ``max_contributions`` rows per person.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"age": [23, 35, 47, 59]})
        >>> p = df.dp.protect(epsilon=1.0, delta=1e-6)
        >>> p.dp.budget
        Budget(ε=1, δ=1e-06): spent ε=0, δ=0, remaining ε=1, δ=1e-06, 0 release(s)
        >>> df.dp.is_protected, p.dp.is_protected
        (False, True)
        """
        obj = self._obj
        if budget is not None:
            if epsilon is not None or rho is not None or delta:
                raise ValueError("pass either budget= or epsilon=/delta=/rho=, not both")
            if not isinstance(budget, Budget):
                raise TypeError(f"budget must be a dpframe.Budget, got {type(budget).__name__}")
        else:
            budget = Budget(epsilon=epsilon, delta=delta, rho=rho)
        check_can_protect(obj)
        if len(obj) == 0:
            raise ValueError("cannot protect an empty frame: there is nothing to analyse")
        if isinstance(max_contributions, bool) or not isinstance(max_contributions, int) or max_contributions < 1:
            raise ValueError(f"max_contributions must be an integer >= 1, got {max_contributions!r}")
        units = None
        if privacy_unit is not None:
            if not isinstance(obj, pd.DataFrame) or privacy_unit not in obj.columns:
                raise KeyError(f"privacy_unit {privacy_unit!r} is not a column of this frame")
            if obj[privacy_unit].isna().any():
                raise ValueError(f"privacy_unit column {privacy_unit!r} has missing values; every row needs a unit")
            units = obj[privacy_unit].to_numpy()
        elif max_contributions != 1:
            raise ValueError("max_contributions needs privacy_unit=: with row-level privacy each row is one unit")
        protection = Protection(budget, max_contributions, privacy_unit)
        return attach(obj, protection, units)  # type: ignore[return-value]

    @property
    def is_protected(self) -> bool:
        """True when this data carries a privacy budget."""
        return "dpframe" in self._obj.attrs

    @property
    def budget(self) -> Budget:
        """The budget this data spends from (shared with every frame derived from the same protect())."""
        return require_protection(self._obj).budget

    def _target(self) -> Target:
        return Target.of(self._obj)

    def count(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> DPInt:
        """Noisy number of rows (frames) or non-missing values (series).

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": range(1000)}).dp.protect(epsilon=1.0)
        >>> n = p.dp.count(epsilon=0.5)
        >>> abs(n - 1000) < 100, n.mechanism
        (True, 'discrete Laplace')
        """
        target = self._target()
        return scalar.count(target, target.privacy(epsilon, delta, rho, mechanism))

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

        return plot_release(self._obj, ax=ax, **kwargs)


class DataFrameAccessor(_Accessor[pd.DataFrame]):
    """Differentially private questions about a protected DataFrame (``df.dp``).

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": [30, 45, 60]}).dp.protect(epsilon=1.0)
    >>> p.dp.is_protected, p.dp.budget.kind
    (True, 'approx')
    """

    def crosstab(
        self,
        index: Any,
        columns: Any,
        *,
        keys: KeySpec = None,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.DataFrame:
        """Noisy contingency table of two columns, like ``pd.crosstab(df[index], df[columns])``.

        Keys come from ``keys={col: [...]}``, a categorical dtype, booleans, or
        (with ``delta > 0``) private selection of cells.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"a": pd.Categorical(["x", "y"] * 50), "b": [True, False] * 50})
        >>> table = df.dp.protect(epsilon=1.0).dp.crosstab("a", "b", epsilon=0.5)
        >>> table.shape
        (2, 2)
        """
        target = self._target()
        partitioning = Partitioning.of(target, [index, columns], keys)
        privacy = target.privacy(epsilon, delta, rho, mechanism, selects_partitions=not partitioning.public)
        return partitioned.crosstab(target, index, columns, partitioning, privacy)

    def merge(self, right: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
        """``DataFrame.merge`` with public data, keeping this frame's budget and privacy-unit record.

        A plain ``merge`` on columns discards both (pandas drops ``attrs`` and
        the index), so queries on its result are refused. Through ``.dp.merge``
        a one-to-many match that repeats a person's rows is fine: every query
        bounds each person's rows to ``max_contributions``. Merging two
        protected frames is refused: a joined row would mix two people.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"code": ["a", "b"], "n": [1, 2]}).dp.protect(epsilon=1.0)
        >>> labels = pd.DataFrame({"code": ["a", "b"], "label": ["first", "second"]})
        >>> m = p.dp.merge(labels, on="code")
        >>> m.dp.budget is p.dp.budget, list(m.columns)
        (True, ['code', 'n', 'label'])
        """
        protection = require_protection(self._obj)
        if isinstance(right, (pd.DataFrame, pd.Series)) and ("dpframe" in right.attrs or has_unit_record(right)):
            raise PrivacyUnitLostError(
                "both sides of this merge are protected data: a joined row would mix two people's records. "
                "Query each protected frame separately."
            )
        names = list(self._obj.index.names)
        merged: pd.DataFrame = self._obj.reset_index().merge(right, **kwargs).set_index(names)
        merged.attrs = {**self._obj.attrs, "dpframe": protection}
        return merged

    def groupby(self, by: Any, *, keys: KeySpec = None) -> GroupBy:
        """Group rows by one or more columns for private per-group aggregates (see :class:`GroupBy`).

        ``keys`` declares the groups (a list, or a dict per column); otherwise a
        categorical dtype's categories or booleans are used, or -- with delta on
        an (epsilon, delta) budget -- groups are selected privately.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"k": ["a", "b"] * 200, "x": [1.0, 3.0] * 200}).dp.protect(epsilon=1.0)
        >>> counts = p.dp.groupby("k", keys=["a", "b", "c"]).count(epsilon=0.5)
        >>> list(counts.index)
        ['a', 'b', 'c']
        """
        return GroupBy(self._target(), by, keys)

    def above_threshold(
        self,
        queries: Any,
        threshold: float,
        epsilon: float,
        sensitivity: int = 1,
        c: int = 1,
        *,
        monotonic: bool = False,
    ) -> int | None | list[int]:
        """Sparse vector: the index of the first query whose answer is above ``threshold`` (indices if ``c > 1``).

        ``queries`` is a list of callables ``f(frame) -> number``, evaluated in
        order on the rows in use (each privacy unit limited to
        max_contributions rows), each changing by at most the integer
        ``sensitivity`` when one unit is added or removed -- your promise; the
        guarantee holds only if it is true. Costs ``epsilon`` once, however
        many queries are examined; None (or fewer than ``c`` indices) if none
        is found. See :func:`dpframe.selection.svt.frame_above_threshold`.

        >>> import pandas as pd, dpframe
        >>> from dpframe.testing import seeded_noise
        >>> p = pd.DataFrame({"age": [25, 35, 45, 55, 65] * 200}).dp.protect(epsilon=1.0)
        >>> queries = [lambda f, a=a: (f["age"] >= a).sum() for a in range(100, 0, -10)]
        >>> with seeded_noise(0):
        ...     p.dp.above_threshold(queries, threshold=500, epsilon=0.5)  # first age with >= 500 people at or above it
        6
        >>> p.dp.budget.spent.epsilon
        Fraction(1, 2)
        """
        from dpframe.selection.svt import frame_above_threshold

        return frame_above_threshold(
            self._obj, queries, threshold=threshold, epsilon=epsilon, sensitivity=sensitivity, c=c,
            monotonic=monotonic,
        )

    def select(
        self,
        candidates: Any,
        *,
        score: Any,
        sensitivity: float,
        epsilon: float | None = None,
        rho: float | None = None,
        mechanism: str = "permute_and_flip",
        monotonic: bool = False,
    ) -> DPChoice:
        """Privately choose the public candidate with a (nearly) highest ``score(frame, candidate)``.

        ``score`` runs once per candidate on the rows in use (each privacy unit
        limited to max_contributions rows); ``sensitivity`` is your bound on
        how much any score changes when one unit is added or removed -- the
        guarantee holds only if it is true. ``mechanism``: ``"permute_and_flip"``
        (default), ``"exponential"`` or ``"report_noisy_max"``.
        See :func:`dpframe.queries.select.select`.

        >>> import pandas as pd, dpframe
        >>> from dpframe.testing import seeded_noise
        >>> p = pd.DataFrame({"day": ["Mon"] * 50 + ["Fri"] * 150}).dp.protect(epsilon=1.0)
        >>> with seeded_noise(0):
        ...     busiest = p.dp.select(["Mon", "Fri", "Sun"], score=lambda f, d: (f["day"] == d).sum(),
        ...                           sensitivity=1, epsilon=0.5)
        >>> busiest.value, busiest.mechanism
        ('Fri', 'permute-and-flip')
        """
        return selection.select(
            self._obj, candidates, score, sensitivity, epsilon=epsilon, rho=rho, mechanism=mechanism,
            monotonic=monotonic,
        )


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
    ) -> pd.DataFrame:
        """Private ``describe(include="all")``: every column's statistics, spending exactly ``epsilon``.

        ``bounds={col: (lo, hi)}`` declares clipping bounds (otherwise found
        privately once per numeric column), ``keys={col: [...]}`` declares
        categories, ``weights={col: w}`` shifts the budget between columns.
        Intervals are in ``result.attrs["dp"]``. See
        :func:`dpframe.report.describe.describe` and ``docs/describe.md``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [1.0, 2.0] * 500, "c": ["a", "b"] * 500}).dp.protect(epsilon=1.0)
        >>> d = p.dp.describe(epsilon=0.5, bounds={"x": (0, 3)}, keys={"c": ["a", "b"]})
        >>> d.shape, p.dp.budget.spent.epsilon
        ((11, 2), Fraction(1, 2))
        """
        from dpframe.report.describe import describe

        return describe(
            self._obj, epsilon=epsilon, delta=delta, weights=weights, percentiles=percentiles, bounds=bounds,
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
        within ``bounds={col: (lo, hi)}`` (otherwise found privately, with
        bin edges that follow a noisy histogram) into ``bins`` bins (default 32; an int, or ``{col: n or [edges]}``); text columns use ``categories={col: [...]}``, a
        categorical dtype, or categories selected privately (needs delta).
        Missing values are a value of their own. ``n=`` fixes the row count.
        ``random_state`` makes everything reproducible -- tests only, NOT
        private. See ``docs/synthesis.md``.

        >>> import numpy as np, pandas as pd, dpframe
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"age": rng.integers(18, 80, 2000), "smoker": rng.random(2000) < 0.3})
        >>> p = df.dp.protect(epsilon=1.0, delta=1e-6)
        >>> syn = p.dp.synthesize(epsilon=1.0, delta=1e-6, bounds={"age": (18, 80)}, progress=False)
        >>> list(syn.dtypes.astype(str)), 1800 < len(syn) < 2200, p.dp.budget.spent.epsilon
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
        Works on unprotected and protected frames alike.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"zip": [1, 1, 2, 2, 2], "sex": ["F", "F", "M", "M", "F"]})
        >>> df.dp.k_anonymity(quasi_identifiers=["zip", "sex"])
        1 (k-anonymity; not differentially private; no privacy budget spent)
        """
        from dpframe.anonymity import k_anonymity

        return k_anonymity(self._obj, quasi_identifiers)

    def anonymize(self, *, k: int, quasi_identifiers: Any, **options: Any) -> Any:
        """The least lossy generalization of this frame that is k-anonymous (optionally l-diverse / t-close).

        NOT differentially private, and spends no privacy budget; a protected
        frame's result keeps its index and budget. Options (``hierarchies``,
        ``suppression``, ``metric``, ``sensitive``, ``l``, ``t``, ...) are those
        of :func:`dpframe.anonymity.anonymize`; see ``docs/anonymity.md``.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"age": [31, 35, 38, 52, 57], "sex": ["F", "M", "F", "M", "F"]})
        >>> res = df.dp.anonymize(k=2, quasi_identifiers=["age", "sex"], metric="height")
        >>> res.levels, res.suppressed, res.data["age"].tolist()
        ({'age': 1, 'sex': 1}, 0, [30, 30, 30, 50, 50])
        """
        from dpframe.anonymity import anonymize

        return anonymize(self._obj, k=k, quasi_identifiers=quasi_identifiers, **options)

class SeriesAccessor(_Accessor["pd.Series[Any]"]):
    """Differentially private questions about a protected Series (``s.dp``).

    >>> import pandas as pd, dpframe
    >>> s = pd.Series([1.0, 2.0, 3.0] * 100, name="x").dp.protect(epsilon=1.0)
    >>> abs(s.dp.mean(bounds=(0, 4), epsilon=0.5) - 2) < 0.2
    True
    """

    def sum(
        self,
        *,
        bounds: Any = None,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> DPFloat:
        """Noisy sum of the values clipped to ``bounds``.

        Without ``bounds``, they are chosen privately with the sparse vector
        technique over a logarithmic grid, spending a quarter of the query's
        budget (its own ledger line); the result reports them in ``.release.bounds``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [1.0] * 1000}).dp.protect(epsilon=1.0)
        >>> s = p["x"].dp.sum(bounds=(0, 2), epsilon=1.0)
        >>> abs(s - 1000) < 50
        True
        """
        target = self._target()
        return scalar.bounded_sum(target, self._obj, bounds, target.privacy(epsilon, delta, rho, mechanism))

    def mean(
        self,
        *,
        bounds: Any = None,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> DPFloat:
        """Noisy mean of the values clipped to ``bounds`` (noisy sum / noisy count).

        Without ``bounds``, they are chosen privately with the sparse vector
        technique over a logarithmic grid, spending a quarter of the query's
        budget (its own ledger line); the result reports them in ``.release.bounds``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [20, 40, 60] * 1000}).dp.protect(epsilon=1.0)
        >>> m = p["age"].dp.mean(bounds=(0, 125), epsilon=0.2)
        >>> abs(m - 40) < 2, m.ci[0] <= m <= m.ci[1]
        (True, True)
        """
        target = self._target()
        return scalar.mean(target, self._obj, bounds, target.privacy(epsilon, delta, rho, mechanism))

    def var(
        self,
        *,
        bounds: Any = None,
        ddof: int = 1,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> DPFloat:
        """Noisy variance of the values clipped to ``bounds``.

        Without ``bounds``, they are chosen privately with the sparse vector
        technique over a logarithmic grid, spending a quarter of the query's
        budget (its own ledger line); the result reports them in ``.release.bounds``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [0.0, 10.0] * 5000}).dp.protect(epsilon=1.0)
        >>> v = p["x"].dp.var(bounds=(0, 10), epsilon=1.0)
        >>> abs(v - 25) < 2
        True
        """
        target = self._target()
        return scalar.var(target, self._obj, bounds, target.privacy(epsilon, delta, rho, mechanism), ddof)

    def std(
        self,
        *,
        bounds: Any = None,
        ddof: int = 1,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> DPFloat:
        """Noisy standard deviation of the values clipped to ``bounds``.

        Without ``bounds``, they are chosen privately with the sparse vector
        technique over a logarithmic grid, spending a quarter of the query's
        budget (its own ledger line); the result reports them in ``.release.bounds``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"x": [0.0, 10.0] * 5000}).dp.protect(epsilon=1.0)
        >>> abs(p["x"].dp.std(bounds=(0, 10), epsilon=1.0) - 5) < 0.5
        True
        """
        target = self._target()
        return scalar.std(target, self._obj, bounds, target.privacy(epsilon, delta, rho, mechanism), ddof)

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

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [25, 35, 45] * 100}).dp.protect(epsilon=1.0)
        >>> h = p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.2)
        >>> len(h), h.name
        (12, 'count')
        """
        target = self._target()
        return partitioned.histogram(
            target, self._obj, bins, bounds, target.privacy(epsilon, delta, rho, mechanism)
        )

    def value_counts(
        self,
        *,
        keys: KeySpec = None,
        normalize: bool = False,
        sort: bool = True,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy count per category, like ``Series.value_counts()``.

        Categories come from ``keys=``, a categorical dtype, booleans, or
        (with ``delta > 0``) private partition selection.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"edu": ["HS", "BA", "HS"] * 300}).dp.protect(epsilon=1.0, delta=1e-6)
        >>> vc = p["edu"].dp.value_counts(keys=["HS", "BA", "PhD"], epsilon=0.2)
        >>> list(vc.index[:2])
        ['HS', 'BA']
        """
        target = self._target()
        partitioning = Partitioning.of(target, [self._obj.name], keys)
        privacy = target.privacy(epsilon, delta, rho, mechanism, selects_partitions=not partitioning.public)
        return partitioned.value_counts(target, self._obj, partitioning, privacy, normalize, sort)

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
        return selection.mode(self._obj, epsilon=epsilon, keys=keys, delta=delta, rho=rho, mechanism=mechanism)

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
        return selection.top_k(self._obj, k, epsilon=epsilon, keys=keys, delta=delta, rho=rho, mechanism=mechanism)

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
        by ``q``, like ``Series.quantile``, with ε split equally.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": list(range(20, 81)) * 50}).dp.protect(epsilon=1.0)
        >>> qs = p["age"].dp.quantile([0.25, 0.75], bounds=(0, 125), epsilon=1.0)
        >>> list(qs.index), bool(abs(qs[0.25] - 35) <= 3 and abs(qs[0.75] - 65) <= 3)
        ([0.25, 0.75], True)
        """
        return selection.quantile(self._obj, q, bounds=bounds, epsilon=epsilon, rho=rho)

    def median(self, *, bounds: Any = None, epsilon: float | None = None, rho: float | None = None) -> DPFloat:
        """Private median of the values clipped to ``bounds``: ``quantile(0.5)``.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": list(range(20, 81)) * 50}).dp.protect(epsilon=1.0)
        >>> m = p["age"].dp.median(bounds=(0, 125), epsilon=1.0)
        >>> abs(m - 50) <= 2, m.mechanism
        (True, 'exponential mechanism (Smith 2011)')
        """
        return selection.median(self._obj, bounds=bounds, epsilon=epsilon, rho=rho)


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


__all__ = ["DataFrameAccessor", "PandasObject", "SeriesAccessor", "register"]
