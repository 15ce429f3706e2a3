"""var/std, automatic bounds, quantiles and describe on Dask: the pandas path's answers, ledger lines and refusals."""

from __future__ import annotations

import math
import pickle
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import dask  # noqa: E402

import dpframe  # noqa: E402
import dpframe.dask  # noqa: E402
from dpframe.errors import BudgetExceededError  # noqa: E402
from dpframe.queries.bounds import Buckets, bucket_counts, choose_bounds  # noqa: E402
from dask_compare import ledger_lines  # noqa: E402
from dpframe.testing import seeded_noise  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning",
                                        "ignore::dpframe.errors.ClippingWarning")


def _frame(n: int = 3000, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)  # the data, not the noise
    x = rng.normal(50, 20, n)
    x[::17] = np.nan
    return pd.DataFrame({
        "x": x,  # floats with missing values
        "r": np.round(x),  # floats with many ties
        "n": rng.integers(0, 100, n),  # integers: the candidate path of quantiles
        "t": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 10**7, n), unit="s"),
    })


def _on_dask(df: pd.DataFrame, cuts: list[int]) -> Any:
    """A Dask frame whose partitions are ``df`` cut at ``cuts`` (a repeated cut makes an empty partition)."""
    edges = [0, *cuts, len(df)]
    return dd.from_delayed([dask.delayed(df.iloc[a:b]) for a, b in zip(edges[:-1], edges[1:])], meta=df.iloc[:0],
                           verify_meta=False)


PARTITIONS = [[], [1000, 1000, 2000], [1, 2, 3, 1500, 2999]]


def _both(df: pd.DataFrame, cuts: list[int], epsilon: float = 100.0) -> tuple[Any, Any]:
    pandas = df.dp.protect(epsilon=epsilon, delta=1e-5, ledger=dpframe.Ledger.in_memory())
    on_dask = _on_dask(df, cuts).dp.protect(epsilon=epsilon, delta=1e-5, name="moments",
                                            ledger=dpframe.Ledger.in_memory())
    return pandas, on_dask


def _same(a: Any, b: Any) -> bool:
    """Equal values and equal releases (NaN equal to NaN)."""
    if isinstance(a, (pd.Series, pd.DataFrame)):
        if not (type(a) is type(b) and a.equals(b)):
            return False
        if "dp" not in a.attrs:  # a field of a release
            return "dp" not in b.attrs
        a, b = a.attrs["dp"], b.attrs["dp"]
        return all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    if type(a) is not type(b):
        return False
    if hasattr(a, "release"):
        return (a == b) and _same(a.release, b.release)  # type: ignore[no-any-return]
    if hasattr(a, "__dataclass_fields__"):
        return all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    if isinstance(a, tuple):  # e.g. a release's clamp: two cells each
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b  # type: ignore[no-any-return]


QUERIES = {
    "sum auto": lambda p: p["x"].dp.sum(epsilon=0.5),
    "int sum auto": lambda p: p["n"].dp.sum(epsilon=0.5),
    "mean auto": lambda p: p["x"].dp.mean(epsilon=0.5),
    "var auto": lambda p: p["x"].dp.var(epsilon=0.5),
    "std auto ddof 0": lambda p: p["n"].dp.std(epsilon=0.5, ddof=0),
    "var": lambda p: p["x"].dp.var(bounds=(0, 100), epsilon=0.5),
    "std gaussian": lambda p: p["x"].dp.std(bounds=(0, 100), epsilon=0.5, delta=1e-6, mechanism="gaussian"),
    "mean counted clipping": lambda p: p["x"].dp.mean(bounds=(0, 60), epsilon=0.5, clipping=True),
    "filtered var auto": lambda p: p[p["n"] > 30]["x"].dp.var(epsilon=0.5),
    "float quantiles": lambda p: p["x"].dp.quantile([0.1, 0.5, 0.9], bounds=(0, 100), epsilon=1.0),
    "tied float quantiles": lambda p: p["r"].dp.quantile([0.01, 0.5, 0.99], bounds=(0, 100), epsilon=0.3),
    "integer quantiles": lambda p: p["n"].dp.quantile([0.1, 0.5], bounds=(0, 100), epsilon=1.0),
    "float median auto": lambda p: p["x"].dp.median(epsilon=1.0),
    "integer median auto": lambda p: p["n"].dp.median(epsilon=1.0),
    "date mean auto": lambda p: p["t"].dp.mean(epsilon=1.0),
    "date median": lambda p: p["t"].dp.median(bounds=("2020-01-01", "2021-01-01"), epsilon=1.0),
    "describe": lambda p: p.dp.describe(epsilon=1.0, bounds={"x": (0, 100)}, progress=False),
    "describe weights": lambda p: p.dp.describe(epsilon=1.0, weights={"n": 2}, percentiles=[0.1], progress=False),
    "describe include": lambda p: p.dp.describe(epsilon=1.0, include="number", progress=False),
    "describe series": lambda p: p["x"].dp.describe(epsilon=1.0, progress=False),
    "describe series bounds": lambda p: p["n"].dp.describe(epsilon=1.0, bounds=(0, 100), progress=False),
}


@pytest.mark.parametrize("cuts", PARTITIONS, ids=["1 part", "4 parts, one empty", "6 parts, tiny and empty"])
@pytest.mark.parametrize("query", list(QUERIES))
def test_same_answer_release_and_ledger_as_pandas(query: str, cuts: list[int]) -> None:
    """Same seeded noise: the exact aggregates are identical, so the answer, its release and the ledger are too."""
    pandas, on_dask = _both(_frame(), cuts)
    answers = []
    for p in (pandas, on_dask):
        with seeded_noise(len(query)), dask.config.set(scheduler="sync"):
            answers.append(QUERIES[query](p))
    assert _same(*answers)
    assert ledger_lines(pandas) == ledger_lines(on_dask)


@pytest.mark.parametrize("query", [lambda p: p["x"].dp.var(rho=0.2), lambda p: p["x"].dp.quantile(0.25, rho=0.1)])
def test_zcdp_budget_with_automatic_bounds(query: Any) -> None:
    df = _frame()
    pandas = df.dp.protect(rho=1.0, ledger=dpframe.Ledger.in_memory())
    on_dask = _on_dask(df, [700, 700]).dp.protect(rho=1.0, name="z", ledger=dpframe.Ledger.in_memory())
    answers = []
    for p in (pandas, on_dask):
        with seeded_noise(3):
            answers.append(query(p))
    assert _same(*answers) and ledger_lines(pandas) == ledger_lines(on_dask)


def test_tails_of_large_partitions() -> None:
    """Partitions of 2^18 rows or more count only their tails (Buckets.of); the merged cuts give the pandas bounds."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": np.r_[rng.lognormal(3, 1, 300_000), rng.normal(10, 1, 300_000)]})
    pandas, on_dask = _both(df, [300_000, 300_000], epsilon=1.0)
    answers = []
    for p in (pandas, on_dask):
        with seeded_noise(5):
            answers.append(p["x"].dp.mean(epsilon=0.5))
    assert _same(*answers) and ledger_lines(pandas) == ledger_lines(on_dask)


def test_merged_buckets_choose_the_bounds_of_all_the_values() -> None:
    """Whatever each part's cuts, the merged buckets choose the bounds one table of every value does, draw by draw,
    including when a candidate inside the cuts needs every value counted (the recount)."""
    rng = np.random.default_rng(2)
    parts = [rng.lognormal(0, 2, 300_000), np.repeat([0.0, 1.0], 150_000), rng.normal(0, 1, 1000), np.zeros(0)]
    recounts = []

    def whole() -> Any:
        recounts.append(1)
        return bucket_counts(np.concatenate(parts))

    everything = bucket_counts(np.concatenate(parts))
    for seed in (*range(12), 38):  # seed 38 draws a positive inside the cuts: the recount (found by search)
        merged = Buckets.merged([Buckets.of(v, reach=16 * 8) for v in parts], whole)
        with seeded_noise(seed):
            ours = choose_bounds(merged, Fraction(1, 16), 1)
        with seeded_noise(seed):
            assert ours == choose_bounds(everything, Fraction(1, 16), 1)
    assert recounts  # the second look at every value happened on some draws


REFUSED = {
    "wrong dtype": (lambda p: p["s"].dp.var(epsilon=0.5), TypeError),
    "wrong dtype, quantile": (lambda p: p["s"].dp.median(epsilon=0.5), TypeError),
    "var of dates": (lambda p: p["t"].dp.var(epsilon=0.5), TypeError),
    "unknown column": (lambda p: p["nope"].dp.std(epsilon=0.5), KeyError),
    "unknown column in describe": (lambda p: p.dp.describe(epsilon=0.5, bounds={"nope": (0, 1)},
                                                           include="number"), KeyError),
    "bad epsilon": (lambda p: p["x"].dp.std(epsilon=-1.0), ValueError),
    "bad epsilon, quantile": (lambda p: p["x"].dp.quantile(0.5, epsilon=0.0), ValueError),
    "bad epsilon, describe": (lambda p: p.dp.describe(epsilon=-1, include="number"), ValueError),
    "reversed bounds": (lambda p: p["x"].dp.var(bounds=(5, 1), epsilon=0.5), ValueError),
    "reversed bounds, quantile": (lambda p: p["n"].dp.quantile([0.5], bounds=(5, 1), epsilon=0.5), ValueError),
    "reversed bounds, describe": (lambda p: p["x"].dp.describe(bounds=(5, 1), epsilon=0.5), ValueError),
    "bad level": (lambda p: p["x"].dp.quantile(1.5, bounds=(0, 1), epsilon=0.5), ValueError),
    "bad ddof": (lambda p: p["x"].dp.std(epsilon=0.5, ddof=-1), ValueError),
    "over budget": (lambda p: p["x"].dp.mean(epsilon=5.0), BudgetExceededError),
    "over budget, describe": (lambda p: p.dp.describe(epsilon=5.0, include="number"), BudgetExceededError),
    "over budget, mixed describe": (lambda p: p.dp.describe(epsilon=5.0), BudgetExceededError),
    "keys of a numeric column, describe": (lambda p: p.dp.describe(epsilon=0.5, keys={"x": ["a"]}), TypeError),
    "keys not a dict, describe": (lambda p: p.dp.describe(epsilon=0.5, keys=["a"]), TypeError),
    "keys not a list, describe": (lambda p: p["s"].dp.describe(epsilon=0.5, keys="a"), TypeError),
    "text without delta, describe": (lambda p: p.dp.describe(epsilon=0.5, delta=0.0), ValueError),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refusals_are_the_pandas_ones_and_cost_nothing(case: str) -> None:
    df = _frame(300).assign(s=["a", "b", "c"] * 100)
    with dask.config.set({"dataframe.convert-string": False}):  # the same string dtype as pandas, in messages
        pandas, on_dask = _both(df, [100, 100], epsilon=1.0)
    query, error = REFUSED[case]
    messages = []
    for p in (pandas, on_dask):
        with pytest.raises(error) as raised:
            query(p)
        messages.append(str(raised.value))
        assert len(p.dp.budget.ledger) == 0
    assert messages[0] == messages[1]


def _mixed(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(5)  # the data, not the noise
    frame = _frame(n).drop(columns="t").assign(  # no dates: at small epsilon their noisy std can overflow a Timedelta
        k=pd.Categorical(rng.choice(["u", "v", "w"], n), categories=["u", "v", "w", "z"]),  # public categories
        c=rng.choice(["a", "b", "c", "d"], n, p=[0.4, 0.3, 0.2, 0.1]).astype(object),  # selected privately
        b=rng.random(n) < 0.3,
    )
    frame.loc[::7, "c"] = None
    return frame


MIXED = {
    "describe mixed": lambda p: p.dp.describe(epsilon=1.0, progress=False),
    "describe mixed, declared": lambda p: p.dp.describe(epsilon=1.0, bounds={"x": (0, 100)},
                                                        keys={"c": ["a", "b", "e"]}, percentiles=None,
                                                        weights={"c": 3}, progress=False),
    "describe categories only": lambda p: p.dp.describe(epsilon=1.0, include=["category", "bool"], progress=False),
    "describe text series": lambda p: p["c"].dp.describe(epsilon=1.0, progress=False),
    "describe bool series, declared": lambda p: p["b"].dp.describe(epsilon=1.0, keys=[True], progress=False),
}


@pytest.mark.parametrize("npartitions", [1, 5])
@pytest.mark.parametrize("query", list(MIXED))
def test_describe_of_categorical_text_and_bool_columns_is_the_pandas_one(query: str, npartitions: int) -> None:
    """Category counts read by DaskCells: the same describe, release and ledger lines as pandas."""
    on_dask = dd.from_pandas(_mixed(), npartitions=npartitions)
    answers, ledgers = [], []
    for data in (on_dask.compute(), on_dask):  # the same data, with the dtypes Dask gave it (its string dtype)
        p = data.dp.protect(epsilon=10.0, delta=1e-5, ledger=dpframe.Ledger.in_memory(),
                            **({} if isinstance(data, pd.DataFrame) else {"name": "mixed"}))
        with seeded_noise(len(query)), dask.config.set(scheduler="sync"):
            answers.append(MIXED[query](p))
        ledgers.append(ledger_lines(p))
    assert _same(*answers)
    assert ledgers[0] == ledgers[1]


def test_describe_refuses_categories_dask_does_not_know_before_any_charge() -> None:
    source = dd.from_pandas(_mixed(300), npartitions=2)
    on_dask = source.assign(u=source["c"].astype("category")).dp.protect(epsilon=1.0, delta=1e-6,
                                                                        name="unknown categories",
                                                                        ledger=dpframe.Ledger.in_memory())
    with pytest.raises(ValueError, match="categories of 'u' are unknown to Dask"):
        on_dask.dp.describe(epsilon=0.5)
    with pytest.raises(ValueError, match="unknown to Dask"):
        on_dask["u"].dp.describe(epsilon=0.5)
    assert len(on_dask.dp.budget.ledger) == 0
    with dask.config.set(scheduler="sync"):  # declared keys stand in for them
        on_dask.dp.describe(epsilon=0.5, keys={"u": ["a", "b"]}, progress=False)
        on_dask["u"].dp.describe(epsilon=0.5, keys=["a"], progress=False)


QUERIES_WATCHED = [
    lambda p: p["x"].dp.std(epsilon=0.5),
    lambda p: p["x"].dp.quantile([0.2, 0.8], bounds=(0, 100), epsilon=0.5),
    lambda p: p["n"].dp.median(epsilon=0.5),
    lambda p: p.dp.describe(epsilon=0.5, include="number", progress=False),
    lambda p: p[["x", "n"]].assign(big=p["n"] > 50).dp.describe(epsilon=0.5, progress=False),  # and a boolean
]


@pytest.mark.parametrize("query", range(len(QUERIES_WATCHED)))
def test_nothing_is_computed_before_the_charge(query: int) -> None:
    """A refused query (budget exhausted) makes Dask compute nothing; an answered one computes after its charge."""
    df = _frame(600)
    seen: list[int] = []
    current: dict[str, Any] = {}

    def watched(part: pd.DataFrame) -> pd.DataFrame:
        seen.append(len(current["p"].dp.budget.ledger))  # ledger lines when Dask reads a partition
        return part

    def protected(name: str) -> Any:
        source = _on_dask(df, [200, 200]).map_partitions(watched, meta=df.iloc[:0])
        current["p"] = source.dp.protect(epsilon=1.0, name=name, ledger=dpframe.Ledger.in_memory())
        return current["p"]

    p = protected("exhausted")
    with dask.config.set(scheduler="sync"):
        p["x"].dp.count(epsilon=0.75)  # a quarter is left
    seen.clear()
    with pytest.raises(BudgetExceededError):
        QUERIES_WATCHED[query](p)
    assert seen == [] and len(p.dp.budget.ledger) == 1
    with dask.config.set(scheduler="sync"):
        QUERIES_WATCHED[query](protected("fresh"))
    assert seen and min(seen) >= 1  # every partition was read after the first charge


@pytest.mark.parametrize("column", ["x", "r"])
def test_narrow_quantile_windows(column: str) -> None:
    """Many values and a large epsilon: each level's window of ranks is a small part of the values (partitioned,
    not sorted, on pandas), and the blocks at its ends hold many values outside it (ties in ``r``)."""
    pandas, on_dask = _both(_frame(50_000), [10_000, 10_000, 30_000], epsilon=100.0)
    answers = []
    for p in (pandas, on_dask):
        with seeded_noise(11):
            answers.append(p[column].dp.quantile([0.01, 0.5, 0.99], bounds=(0, 100), epsilon=50.0))
    assert _same(*answers) and ledger_lines(pandas) == ledger_lines(on_dask)


def test_the_moments_kernel_carries_no_budget_to_workers() -> None:
    """Dask ships the moments kernel to its workers: a plain function of the values (picklable, no target or
    budget, which in an in-memory ledger cannot be unpickled in another process), giving :meth:`Moments.exact`."""
    from dpframe.queries.plan import Target
    from dpframe.queries.scalar import Moments

    p = _frame(300).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    target = Target.of(p["x"])
    moments = Moments(target, target.series, (0, 100), target.privacy(0.5, None, None, None), "var", 2)
    kernel = pickle.loads(pickle.dumps(moments.kernel))
    values = _frame(300)["x"].to_numpy()
    assert b"Budget" not in pickle.dumps(moments.kernel)
    ours, theirs = kernel(values), moments.exact(values)
    assert all(np.array_equal(getattr(ours, f), getattr(theirs, f)) for f in ("counts", "sums", "square_sums"))


@pytest.mark.parametrize("query", ["mean", "sum", "describe"])
def test_too_few_rows_for_automatic_bounds_are_marked_as_on_pandas(query: str) -> None:
    """200 rows are too few for automatic bounds at epsilon 1 (bounds.weak_bounds): the Dask answer is the pandas one,
    marked the same."""
    pandas, on_dask = _both(_frame(200), [50, 120])
    answers = []
    for p in (pandas, on_dask):
        with seeded_noise(4), dask.config.set(scheduler="sync"):
            answers.append(p.dp.describe(epsilon=1.0, progress=False) if query == "describe"
                           else getattr(p["x"].dp, query)(epsilon=1.0))
    assert _same(*answers)
    if query == "describe":
        assert (answers[1].attrs["dp"].weak_bounds.loc["mean", ["x", "r", "n"]] == 1).all()
    else:
        assert answers[1].weak_bounds and "automatic bounds from too few rows" in repr(answers[1])
