"""mode, top_k, chisquare and chi2_contingency on Dask: the pandas path's answers, ledger lines and refusals."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import dask  # noqa: E402

import dpframe  # noqa: E402
import dpframe.dask  # noqa: E402
from dpframe.errors import BudgetExceededError, RefusedError  # noqa: E402
from dask_compare import ledger_lines  # noqa: E402
from dpframe.testing import seeded_noise  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    rng = np.random.default_rng(5)  # the data, not the noise
    n = 2000
    a = rng.random(n) < 0.4
    frame = pd.DataFrame({
        "c": rng.choice(["a", "b", "c", "d"], n, p=[0.4, 0.3, 0.2, 0.1]).astype(object),
        "k": pd.Categorical(rng.choice(["u", "v", "w"], n), categories=["u", "v", "w", "z"]),
        "a": a, "b": np.where(a, rng.random(n) < 0.7, rng.random(n) < 0.3),
        "x": rng.normal(0, 1, n),
    })
    frame.loc[::9, "c"] = None
    return frame


def _dask(df: pd.DataFrame, npartitions: int) -> Any:
    """``df`` in ``npartitions`` partitions, and an empty one in the middle."""
    half = len(df) // 2
    empty = dd.from_pandas(df.iloc[:0], npartitions=1)
    return dd.concat([dd.from_pandas(df.iloc[:half], npartitions=max(1, npartitions // 2)), empty,
                      dd.from_pandas(df.iloc[half:], npartitions=max(1, npartitions - npartitions // 2))])


def _protect(data: Any) -> Any:
    name = {} if isinstance(data, pd.DataFrame) else {"name": "dask selection"}
    return data.dp.protect(epsilon=20.0, delta=1e-5, ledger=dpframe.Ledger.in_memory(), **name)


def _same(a: Any, b: Any) -> None:
    if isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b)
        assert repr(a.attrs["dp"]) == repr(b.attrs["dp"])
        return
    assert repr(a) == repr(b)
    assert (a.test, a.statistic, a.pvalue, a.dof, a.n, a.simulations, a.noise, a.cost, a.assumptions) == \
        (b.test, b.statistic, b.pvalue, b.dof, b.n, b.simulations, b.noise, b.cost, b.assumptions)
    for part in ("table", "expected"):
        x, y = getattr(a, part), getattr(b, part)
        (pd.testing.assert_frame_equal if isinstance(x, pd.DataFrame) else pd.testing.assert_series_equal)(x, y)
    assert repr(a.table.attrs["dp"]) == repr(b.table.attrs["dp"])


QUERIES = {
    "mode, declared keys": lambda p: p["c"].dp.mode(keys=["a", "b", "c", "d", "e"], epsilon=1.0),
    "mode, categorical, exponential": lambda p: p["k"].dp.mode(epsilon=1.0, mechanism="exponential"),
    "mode, booleans": lambda p: p["a"].dp.mode(epsilon=1.0),
    "mode, selected privately": lambda p: p["c"].dp.mode(epsilon=1.0, delta=1e-6),
    "top_k, declared keys": lambda p: p["c"].dp.top_k(2, keys=["a", "b", "c", "d"], epsilon=1.0),
    "top_k, report noisy max": lambda p: p["k"].dp.top_k(3, epsilon=1.0, mechanism="report_noisy_max"),
    "top_k, selected privately": lambda p: p["c"].dp.top_k(3, epsilon=1.0, delta=1e-6),
    "chisquare, expected by category": lambda p: p.dp.chisquare("c", {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1},
                                                                 epsilon=1.0, simulations=199),
    "chisquare, categorical, uniform": lambda p: p.dp.chisquare("k", epsilon=1.0, simulations=199),
    "chi2_contingency": lambda p: p.dp.chi2_contingency("a", "b", epsilon=1.0, simulations=199),
    "chi2_contingency, declared keys": lambda p: p.dp.chi2_contingency(
        "c", "a", keys={"c": ["a", "b", "c", "d"]}, epsilon=1.0, mechanism="gaussian", delta=1e-6, simulations=99),
}


@pytest.mark.parametrize("npartitions", [1, 4])
@pytest.mark.parametrize("query", list(QUERIES))
def test_same_answer_release_and_ledger_as_pandas(df: pd.DataFrame, query: str, npartitions: int) -> None:
    on_dask = _dask(df, npartitions)
    pandas = on_dask.compute()  # the same data, with the dtypes Dask gave it (e.g. its string dtype)
    answers = []
    for p in (_protect(pandas), _protect(on_dask)):
        with seeded_noise(4):
            answers.append((QUERIES[query](p), ledger_lines(p)))
    _same(answers[0][0], answers[1][0])
    assert answers[0][1] == answers[1][1]
    assert len(answers[0][1]) == 1


REFUSED = {
    "mode, mechanism without keys": lambda p: p["c"].dp.mode(epsilon=1.0, delta=1e-6, mechanism="exponential"),
    "mode, no keys and zero delta": lambda p: p["c"].dp.mode(epsilon=1.0, delta=0.0),
    "mode, delta on declared keys": lambda p: p["c"].dp.mode(keys=["a"], epsilon=1.0, delta=1e-6),
    "top_k, k too large": lambda p: p["c"].dp.top_k(5, keys=["a", "b"], epsilon=1.0),
    "top_k, over budget": lambda p: p["c"].dp.top_k(2, keys=["a", "b"], epsilon=100.0),
    "mode, unknown column": lambda p: p["nope"].dp.mode(keys=["a"], epsilon=1.0),
    "chisquare, no public categories": lambda p: p.dp.chisquare("c", epsilon=1.0),
    "chisquare, categories twice": lambda p: p.dp.chisquare("c", {"a": 1.0}, keys=["a"], epsilon=1.0),
    "chisquare, bad simulations": lambda p: p.dp.chisquare("k", epsilon=1.0, simulations=0),
    "chisquare, unknown column": lambda p: p.dp.chisquare("nope", {"a": 1.0}, epsilon=1.0),
    "chi2_contingency, one category": lambda p: p.dp.chi2_contingency("a", "c", keys={"c": ["a"]}, epsilon=1.0),
    "chi2_contingency, private categories": lambda p: p.dp.chi2_contingency("a", "c", epsilon=1.0),
    "chi2_contingency, negative epsilon": lambda p: p.dp.chi2_contingency("a", "b", epsilon=-1.0),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refusals_are_the_pandas_ones_and_free(df: pd.DataFrame, name: str) -> None:
    on_dask = _dask(df, 4)
    errors = []
    for p in (_protect(on_dask.compute()), _protect(on_dask)):
        with pytest.raises((RefusedError, BudgetExceededError, ValueError, TypeError, KeyError)) as error:
            REFUSED[name](p)
        errors.append((type(error.value), str(error.value)))
        assert ledger_lines(p) == []
    assert errors[0] == errors[1]


def test_a_query_of_the_wrong_kind_says_what_to_ask_it_of(df: pd.DataFrame) -> None:
    p = _protect(_dask(df, 4))
    with pytest.raises(TypeError, match="about one column"):
        p[["c", "a"]].dp.mode(keys=["a"], epsilon=1.0)
    with pytest.raises(TypeError, match="asked of a protected frame"):
        p["a"].dp.chisquare("a", epsilon=1.0)
    assert ledger_lines(p) == []


@pytest.mark.parametrize("query", ["mode", "top_k", "chisquare", "chi2_contingency"])
def test_unknown_dask_categories_are_refused_for_free(df: pd.DataFrame, query: str) -> None:
    on_dask = _dask(df, 4)
    on_dask["k"] = on_dask["k"].cat.as_unknown()
    p = _protect(on_dask)
    calls = {"mode": lambda: p["k"].dp.mode(epsilon=1.0),
             "top_k": lambda: p["k"].dp.top_k(2, epsilon=1.0),
             "chisquare": lambda: p.dp.chisquare("k", epsilon=1.0),
             "chi2_contingency": lambda: p.dp.chi2_contingency("k", "a", epsilon=1.0)}
    with pytest.raises(ValueError, match="unknown to Dask"):
        calls[query]()
    assert ledger_lines(p) == []
    assert p["k"].dp.mode(keys=["u", "v", "w"], epsilon=1.0).tolist()[0] in ["u", "v", "w"]


@pytest.mark.parametrize("query", ["mode, selected privately", "top_k, declared keys", "chi2_contingency"])
def test_nothing_is_computed_before_the_charge(df: pd.DataFrame, query: str) -> None:
    seen: list[int] = []
    holder: list[Any] = []

    def watched(part: pd.DataFrame, unique: str) -> pd.DataFrame:
        seen.append(len(holder[0].dp.budget.ledger))  # the ledger lines written when Dask reads a partition
        return part

    # A unique argument: Dask keeps expressions by a token of their arguments.
    data = dd.from_pandas(df, npartitions=3).map_partitions(watched, uuid.uuid4().hex, meta=df.iloc[:0])
    holder.append(_protect(data))
    with dask.config.set(scheduler="sync"):
        QUERIES[query](holder[0])
    assert seen and all(lines == 1 for lines in seen)


def test_the_partition_function_holds_no_budget(df: pd.DataFrame) -> None:
    """On the processes scheduler every task is pickled: an in-memory ledger could not be."""
    p = _protect(_dask(df, 4))
    with dask.config.set({"scheduler": "processes", "num_workers": 2, "multiprocessing.context": "fork"}):
        assert len(p["c"].dp.top_k(2, keys=["a", "b", "c", "d"], epsilon=1.0)) == 2
        assert p.dp.chisquare("k", epsilon=1.0, simulations=99).dof == 3
