"""The .dp accessor on Dask DataFrames: the pandas path's answers, ledger lines and refusals, charged first."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import dask  # noqa: E402

import dpframe  # noqa: E402
import dpframe.dask  # noqa: E402
from dpframe.errors import AlreadyProtectedError, BudgetExceededError, RefusedError  # noqa: E402
from dask_compare import ledger_lines  # noqa: E402
from dpframe.testing import seeded_noise  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")


@pytest.fixture
def df() -> pd.DataFrame:
    rng = np.random.default_rng(7)  # the data, not the noise
    x = rng.normal(50, 20, 3000)
    x[::17] = np.nan
    return pd.DataFrame({"x": x, "n": rng.integers(0, 100, 3000), "g": rng.choice(["a", "b"], 3000)})


def _both(df: pd.DataFrame, epsilon: float = 10.0) -> tuple[Any, Any]:
    pandas = df.dp.protect(epsilon=epsilon, delta=1e-5, ledger=dpframe.Ledger.in_memory())
    on_dask = dd.from_pandas(df, npartitions=4).dp.protect(epsilon=epsilon, delta=1e-5, name="dask test",
                                                           ledger=dpframe.Ledger.in_memory())
    return pandas, on_dask


QUERIES = [
    lambda p: p.dp.count(epsilon=0.5),
    lambda p: p["x"].dp.count(epsilon=0.5),
    lambda p: p["x"].dp.sum(bounds=(0, 100), epsilon=0.5),
    lambda p: p["n"].dp.sum(bounds=(0, 100), epsilon=0.5, mechanism="gaussian", delta=1e-6),
    lambda p: p["x"].dp.mean(bounds=(-10, 120), epsilon=0.5),
    lambda p: p[p["g"] == "a"]["x"].dp.mean(bounds=(0, 100), epsilon=0.5),
    lambda p: p.assign(y=p["x"] * 2)["y"].dp.sum(bounds=(0, 300), epsilon=0.5),
]


@pytest.mark.parametrize("query", range(len(QUERIES)))
def test_same_answer_release_and_ledger_as_pandas(df: pd.DataFrame, query: int) -> None:
    """Same seeded noise: the exact aggregate is identical, so the answer, its release and the ledger are too."""
    pandas, on_dask = _both(df.assign(x=df["x"].where(df["x"] > -1e9)), epsilon=20.0)
    answers = []
    for p in (pandas, on_dask):
        with seeded_noise(query), dask.config.set(scheduler="threads"):
            answers.append(QUERIES[query](p))
    assert type(answers[0]) is type(answers[1])
    assert answers[0] == answers[1]
    assert [dataclasses.astuple(a.release) for a in answers][0] == dataclasses.astuple(answers[1].release)
    assert ledger_lines(pandas) == ledger_lines(on_dask)


def test_refusals_are_the_pandas_ones(df: pd.DataFrame) -> None:
    pandas, on_dask = _both(df)
    refused = [len, bool, lambda p: p["x"].head(), lambda p: list(p["x"]), lambda p: np.asarray(p),
               lambda p: p.mean(), lambda p: p.values, lambda p: p["x"].max(), lambda p: p["x"].unique()]
    for operation in refused:
        messages = []
        for p in (pandas, on_dask):
            with pytest.raises(RefusedError) as error:
                operation(p)
            messages.append(str(error.value))
        assert messages[0] == messages[1]
    assert list(on_dask) == list(pandas) == ["x", "n", "g"]  # the column names are public, as on pandas


@pytest.mark.parametrize("name", ["compute", "persist", "to_pandas", "partitions", "to_delayed", "to_parquet"])
def test_dask_materialising_is_refused(df: pd.DataFrame, name: str) -> None:
    _, on_dask = _both(df)
    for obj in (on_dask, on_dask["x"], on_dask[on_dask["x"] > 3]):
        with pytest.raises(RefusedError, match=f"{name} is refused on protected data"):
            getattr(obj, name)


def test_charged_before_any_partition_is_computed(df: pd.DataFrame) -> None:
    ledger = dpframe.Ledger.in_memory()
    seen: list[int] = []

    def watched(part: pd.DataFrame) -> pd.DataFrame:
        seen.append(len(p.dp.budget.ledger))  # ledger lines when Dask reads a partition
        return part

    source = dd.from_pandas(df, npartitions=4).map_partitions(watched, meta=df.iloc[:0])
    p = source.dp.protect(epsilon=1.0, name="watched", ledger=ledger)
    with pytest.raises(BudgetExceededError):
        p["x"].dp.mean(bounds=(0, 100), epsilon=2.0)
    with pytest.raises(BudgetExceededError):
        p["x"].dp.mean(epsilon=2.0)  # automatic bounds: the whole cost is checked before the bounds are read
    with pytest.raises(ValueError, match="bounds"):
        p["x"].dp.sum(bounds=(5, 1), epsilon=0.5)
    assert seen == [] and len(p.dp.budget.ledger) == 0  # refused: nothing read, nothing charged
    with dask.config.set(scheduler="threads"):
        p["x"].dp.mean(bounds=(0, 100), epsilon=0.5)
    assert len(seen) == 4 and set(seen) == {1}


def test_front_door_needs_a_name_and_protects_once(df: pd.DataFrame) -> None:
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(ValueError, match="needs name="):
        ddf.dp.protect(epsilon=1.0)
    p = ddf.dp.protect(epsilon=1.0, name="once", ledger=dpframe.Ledger.in_memory())
    with pytest.raises(TypeError, match="one column"):
        p.dp.mean(bounds=(0, 1), epsilon=0.1)
    other = dd.from_pandas(df.assign(x=1.0), npartitions=2).dp.protect(epsilon=1.0, name="other",
                                                                         ledger=p.dp.budget.store)
    assert other.dp.budget.id != p.dp.budget.id  # same schema, another name: another budget (by name only)
    errors = []
    for protected in (p, df.dp.protect(epsilon=1.0)):
        with pytest.raises(AlreadyProtectedError) as error:
            protected.dp.protect(epsilon=1.0)
        errors.append(str(error.value))
    assert errors[0] == errors[1]


def test_repr_shows_the_schema_and_budget_never_rows() -> None:
    ddf = dd.from_pandas(pd.DataFrame({"age": [31, 47], "city": ["Oslo", "Rome"]}), npartitions=2)
    p = ddf.dp.protect(epsilon=1.0, name="repr", ledger=dpframe.Ledger.in_memory())
    shown = repr(p) + repr(p["age"])
    assert "age: int64" in shown and "partitions" not in shown and "remaining ε=1" in shown
    assert "31" not in shown and "Oslo" not in shown


def test_a_pandas_query_without_a_dask_path_says_so_and_costs_nothing() -> None:
    p = dd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=1).dp.protect(
        epsilon=1.0, name="no dask path", ledger=dpframe.Ledger.in_memory())
    with pytest.raises(NotImplementedError, match=r"\.dp\.select has no Dask path yet"):
        p.dp.select([1, 2], score=dpframe.agg.count(where="a < @candidate"), epsilon=0.5)
    with pytest.raises(NotImplementedError, match=r"\.dp\.above_threshold has no Dask path yet"):
        p.dp.above_threshold([dpframe.agg.count(where="a > 1")], threshold=1, epsilon=0.5)
    with pytest.raises(AttributeError):
        p.dp.no_such_query  # noqa: B018
    assert p.dp.budget.ledger.empty



def test_two_dimensional_group_bounds_are_refused_on_dask_before_any_charge() -> None:
    p = dd.from_pandas(pd.DataFrame({"u": [1, 1, 2], "g": ["a", "b", "a"]}), npartitions=1).dp.protect(
        epsilon=1.0, name="no L0 on dask", privacy_unit="u", max_contributions=2, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(ValueError, match="give both max_groups and max_rows_per_group"):
        p.dp.groupby("g", keys=["a", "b"], max_groups=1)
    with pytest.raises(RefusedError, match="not available on Dask frames yet"):
        p.dp.groupby("g", keys=["a", "b"], max_groups=1, max_rows_per_group=1)
    assert p.dp.budget.ledger.empty

ROWWISE = {
    "and, invert": lambda p: p[(p["x"] > 40) & ~(p["g"] == "a")]["x"].dp.sum(bounds=(0, 100), epsilon=1),
    "or": lambda p: p[(p["x"] > 70) | (p["g"] == "a")].dp.count(epsilon=1),
    "reflected": lambda p: (100 - 2 * p["x"] / 4 + 1).dp.sum(bounds=(0, 100), epsilon=1),
    "neg, abs": lambda p: (-p["x"]).abs().dp.mean(bounds=(0, 100), epsilon=1),
    "assign a constant": lambda p: p.assign(c=1.5)["c"].dp.sum(bounds=(0, 2), epsilon=1),
}


@pytest.mark.parametrize("name", ROWWISE)
def test_pandas_row_wise_idioms_give_the_pandas_answer(name: str) -> None:
    rng = np.random.default_rng(0)  # the data, not the noise
    df = pd.DataFrame({"x": rng.normal(50, 20, 2000), "g": rng.choice(["a", "b"], 2000)})
    df = dd.from_pandas(df, npartitions=1).compute()  # pandas gets the dtypes Dask holds (text as string)
    answers = []
    for p in (df.dp.protect(epsilon=50.0, ledger=dpframe.Ledger.in_memory()),
              dd.from_pandas(df, npartitions=3).dp.protect(epsilon=50.0, name=name,
                                                           ledger=dpframe.Ledger.in_memory())):
        with seeded_noise(1):
            answers.append(ROWWISE[name](p))
    assert answers[0] == answers[1]
