"""Histogram, value_counts, crosstab and group-by on Dask: the pandas path's tables, ledger lines and refusals."""

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
from dpframe.errors import BudgetExceededError  # noqa: E402
from dask_compare import ledger_lines  # noqa: E402
from dpframe.testing import seeded_noise  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    rng = np.random.default_rng(11)  # the data, not the noise
    n = 2000
    x = rng.normal(50, 25, n)
    x[::13] = np.nan
    frame = pd.DataFrame({
        "x": x, "n": rng.integers(0, 10, n), "b": rng.random(n) < 0.3,
        "k": pd.Categorical(rng.choice(["u", "v", "w"], n), categories=["u", "v", "w", "z"]),
        "c": rng.choice(["a", "b", "c", "d"], n, p=[0.4, 0.3, 0.2, 0.1]).astype(object),
        "s": rng.choice(list("pqrstuvwxy") + ["rare"], n, p=[0.099] * 10 + [0.01]).astype(object),
    })
    frame.loc[::7, "c"] = None
    frame.loc[::11, "s"] = None
    return frame


def _dask(df: pd.DataFrame, npartitions: int) -> Any:
    """``df`` in ``npartitions`` partitions, and an empty one in the middle."""
    half = len(df) // 2
    empty = dd.from_pandas(df.iloc[:0], npartitions=1)
    return dd.concat([dd.from_pandas(df.iloc[:half], npartitions=max(1, npartitions // 2)), empty,
                      dd.from_pandas(df.iloc[half:], npartitions=max(1, npartitions - npartitions // 2))])


def _protect(data: Any, **kwargs: Any) -> Any:
    name = {} if isinstance(data, pd.DataFrame) else {"name": "dask tables"}
    return data.dp.protect(epsilon=50.0, delta=1e-5, ledger=dpframe.Ledger.in_memory(), **name, **kwargs)


def _equal(a: Any, b: Any) -> None:
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    else:
        pd.testing.assert_series_equal(a, b)
    ra, rb = a.dp.release, b.dp.release
    assert (ra.query, ra.columns, ra.mechanism, ra.cost, ra.level, ra.bounds, ra.note) == \
        (rb.query, rb.columns, rb.mechanism, rb.cost, rb.level, rb.bounds, rb.note)
    for part in ("std", "lower", "upper"):
        x, y = getattr(ra, part), getattr(rb, part)
        if isinstance(x, (pd.Series, pd.DataFrame)):
            (pd.testing.assert_frame_equal if isinstance(x, pd.DataFrame) else pd.testing.assert_series_equal)(x, y)
        else:
            assert x == y


def _remembered(p: Any) -> Any:
    p.dp.groupby("c").count(epsilon=1.0, delta=1e-6)  # releases c's categories, public from then on
    return p.dp.groupby("c")["x"].sum(bounds=(0, 100), epsilon=1.0)


QUERIES = {
    "histogram edges": lambda p: p["x"].dp.histogram(bins=[0, 20, 50, 100], epsilon=1.0),
    "histogram bins": lambda p: p["n"].dp.histogram(bins=5, bounds=(0, 10), epsilon=1.0, mechanism="gaussian",
                                                    delta=1e-6),
    "value_counts public": lambda p: p["k"].dp.value_counts(epsilon=1.0, normalize=True),
    "value_counts declared": lambda p: p["c"].dp.value_counts(keys=["a", "b", "z"], epsilon=1.0, dropna=False),
    "value_counts selected": lambda p: p["s"].dp.value_counts(epsilon=1.0),
    "value_counts frame": lambda p: p.dp.value_counts(["c", "k"], epsilon=1.0),
    "crosstab public": lambda p: p.dp.crosstab("k", "b", epsilon=1.0, margins=True),
    "crosstab selected": lambda p: p.dp.crosstab("c", "s", epsilon=1.0, normalize="index"),
    "groupby count": lambda p: p.dp.groupby(["k", "b"]).count(epsilon=1.0),
    "groupby count selected": lambda p: p.dp.groupby("s").size(epsilon=1.0),
    "groupby column count": lambda p: p.dp.groupby("k")["x"].count(epsilon=1.0),
    "groupby sum": lambda p: p.dp.groupby("k")["x"].sum(bounds=(0, 100), epsilon=1.0),
    "groupby sum selected": lambda p: p.dp.groupby(["c", "s"])["x"].sum(bounds=(0, 100), epsilon=1.0),
    "groupby mean": lambda p: p.dp.groupby("b").mean("x", bounds=(0, 100), epsilon=1.0),
    "groupby std selected": lambda p: p.dp.groupby("c")["n"].std(bounds=(0, 10), epsilon=1.0),
    "groupby var": lambda p: p.dp.groupby(["k", "b"])["x"].var(bounds=(0, 100), epsilon=1.0),
    "groupby agg": lambda p: p.dp.groupby("k", keys=["u", "v", "z"]).agg(
        {"x": ["mean", "count"], "n": "sum"}, bounds={"x": (0, 100), "n": (0, 10)}, epsilon=1.0),
    "groupby remembered": _remembered,
    "groupby median selected": lambda p: p.dp.groupby("c")["x"].median(bounds=(0, 100), epsilon=1.0),
    "groupby agg selected": lambda p: p.dp.groupby("c").agg({"x": ["mean", "sum"]}, bounds=(0, 100), epsilon=1.0,
                                                            delta=1e-6),
    # Automatic bounds: the pandas bounds step, reading the partitions' bucket counts.
    "histogram automatic bounds": lambda p: p["x"].dp.histogram(bins=6, epsilon=1.0),
    "histogram automatic bounds, integers": lambda p: p["n"].dp.histogram(bins=3, epsilon=1.0, mechanism="gaussian",
                                                                                delta=1e-6),
    "groupby sum automatic bounds": lambda p: p.dp.groupby("k")["x"].sum(epsilon=1.0),
    "groupby mean automatic bounds": lambda p: p.dp.groupby("b").mean("x", epsilon=1.0),
    "groupby std automatic bounds selected": lambda p: p.dp.groupby("c")["x"].std(epsilon=1.0),
    "groupby sum automatic bounds selected": lambda p: p.dp.groupby("s")["n"].sum(epsilon=1.0),
    "groupby agg automatic bounds": lambda p: p.dp.groupby("k").agg(
        {"x": ["sum", "count"], "n": "var"}, bounds={"n": (0, 10)}, epsilon=1.0),
    "groupby list automatic bounds": lambda p: p.dp.groupby("k")[["x", "n"]].mean(bounds={"x": (0, 100)},
                                                                                    epsilon=1.0),
    # Per-group quantiles: each public group's values read by the quantile reads of dpframe.dask.moments.
    "groupby median automatic bounds": lambda p: p.dp.groupby("k")["x"].median(epsilon=1.0),
    "groupby integer quantiles": lambda p: p.dp.groupby(["k", "b"]).quantile("n", [0.2, 0.8], bounds=(0, 10),
                                                                              epsilon=1.0),
    "groupby float quantile, declared keys": lambda p: p.dp.groupby("c", keys=["a", "b", "z"]).quantile(
        "x", 0.3, bounds=(0, 100), epsilon=1.0),
}


@pytest.mark.parametrize("npartitions", [1, 4])
@pytest.mark.parametrize("query", list(QUERIES))
def test_same_table_release_and_ledger_as_pandas(df: pd.DataFrame, query: str, npartitions: int) -> None:
    """Same seeded noise: identical exact aggregates, so identical values, intervals, notes and ledger lines."""
    on_dask = _dask(df, npartitions)
    pandas = on_dask.compute()  # the same data, with the dtypes Dask gave it (e.g. its string dtype)
    answers, ledgers = [], []
    for data in (pandas, on_dask):
        p = _protect(data)
        with seeded_noise(len(query)), dask.config.set(scheduler="threads"):
            answers.append(QUERIES[query](p))
        ledgers.append(ledger_lines(p))
    _equal(*answers)
    assert ledgers[0] == ledgers[1]


def _watched(df: pd.DataFrame, seen: list[int], p: list[Any]) -> Any:
    """A Dask frame whose partitions note how many ledger lines there were when Dask read them."""

    def watched(part: pd.DataFrame, unique: str) -> pd.DataFrame:
        seen.append(len(p[0].dp.budget.ledger))
        return part

    # A unique argument: Dask keeps expressions by a token of their arguments, so without it another test's
    # (equal-looking) frame, with its own list of reads, could be reused.
    return dd.from_pandas(df, npartitions=3).map_partitions(watched, uuid.uuid4().hex, meta=df.iloc[:0])


REFUSED = {
    "unknown column": lambda p: p.dp.value_counts(["zz"], epsilon=1.0),
    "unknown groupby column": lambda p: p.dp.groupby("zz"),
    "unknown crosstab column": lambda p: p.dp.crosstab("zz", "k", epsilon=1.0),
    "unknown aggregated column": lambda p: p.dp.groupby("k")["zz"],
    "keys of another column": lambda p: p.dp.groupby("k", keys={"c": ["a"]}),
    "text histogram": lambda p: p["c"].dp.histogram(bins=[0, 1], epsilon=1.0),
    "text groupby mean": lambda p: p.dp.groupby("k")["c"].mean(bounds=(0, 1), epsilon=1.0),
    "no bins": lambda p: p["x"].dp.histogram(bins=0, bounds=(0, 1), epsilon=1.0),
    "decreasing edges": lambda p: p["x"].dp.histogram(bins=[3, 1], epsilon=1.0),
    "edges and bounds": lambda p: p["x"].dp.histogram(bins=[0, 1], bounds=(0, 1), epsilon=1.0),
    "text bins": lambda p: p["x"].dp.histogram(bins="many", epsilon=1.0),
    "reversed bounds": lambda p: p["x"].dp.histogram(bins=4, bounds=(5, 1), epsilon=1.0),
    "negative epsilon": lambda p: p["k"].dp.value_counts(epsilon=-1.0),
    "no epsilon": lambda p: p.dp.crosstab("k", "b"),
    "over budget": lambda p: p.dp.groupby("k")["x"].mean(bounds=(0, 100), epsilon=100.0),
    "selection without delta": lambda p: p["c"].dp.value_counts(epsilon=1.0, delta=0.0),
    "bad normalize": lambda p: p.dp.crosstab("k", "b", normalize="rows", epsilon=1.0),
    "agg of medians of private groups": lambda p: p.dp.groupby("c").agg({"x": "median"}, bounds=(0, 1),
                                                                         epsilon=1.0),
    "agg bad statistic": lambda p: p.dp.groupby("k").agg({"x": "mode"}, bounds=(0, 1), epsilon=1.0),
    "duplicate keys": lambda p: p["c"].dp.value_counts(keys=["a", "a"], epsilon=1.0),
    "quantile of an unknown column": lambda p: p.dp.groupby("k").quantile("zz", epsilon=1.0),
    "quantile of text": lambda p: p.dp.groupby("k").quantile("c", bounds=(0, 1), epsilon=1.0),
    "bad quantile level": lambda p: p.dp.groupby("k").quantile("x", 1.5, bounds=(0, 1), epsilon=1.0),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refusals_are_the_pandas_ones_and_free(df: pd.DataFrame, name: str) -> None:
    seen: list[int] = []
    holder: list[Any] = []
    on_dask = _protect(_watched(df, seen, holder))
    holder.append(on_dask)
    errors = []
    for p in (_protect(df), on_dask):
        with pytest.raises(Exception) as error:
            REFUSED[name](p)
        errors.append((type(error.value), str(error.value)))
        assert len(p.dp.budget.ledger) == 0
    assert errors[0] == errors[1]
    assert seen == []  # Dask read nothing


DASK_ONLY = {
    "groupby a series": (lambda p: p.dp.groupby(p["x"] > 3), "column names"),
    "unknown categories": (lambda p: p["u"].dp.value_counts(epsilon=1.0), "unknown to Dask"),
    "dates": (lambda p: p["d"].dp.histogram(bins="MS", bounds=("2020-01-01", "2020-12-31"), epsilon=1.0),
              "dates and durations"),
}


@pytest.mark.parametrize("name", list(DASK_ONLY))
def test_what_dask_cannot_do_yet_is_refused_before_anything_is_read(df: pd.DataFrame, name: str) -> None:
    seen: list[int] = []
    holder: list[Any] = []
    source = _watched(df.assign(d=pd.Timestamp("2020-05-01")), seen, holder)
    p = _protect(source.assign(u=source["c"].astype("category")))  # Dask does not know these categories
    holder.append(p)
    query, message = DASK_ONLY[name]
    with pytest.raises((ValueError, TypeError), match=message):
        query(p)
    assert seen == [] and len(p.dp.budget.ledger) == 0


def test_declared_keys_stand_in_for_unknown_categories(df: pd.DataFrame) -> None:
    on_dask = dd.from_pandas(df, npartitions=3)
    p = _protect(on_dask.assign(u=on_dask["c"].astype("category")))
    plain = _protect(df.assign(u=df["c"].astype("category")))
    with seeded_noise(1):
        a = plain["u"].dp.value_counts(keys=["a", "b", "c", "d"], epsilon=1.0)
    with seeded_noise(1), dask.config.set(scheduler="threads"):
        b = p["u"].dp.value_counts(keys=["a", "b", "c", "d"], epsilon=1.0)
    pd.testing.assert_series_equal(a, b)


def test_each_query_is_charged_before_one_pass_over_the_partitions(df: pd.DataFrame) -> None:
    seen: list[int] = []
    holder: list[Any] = []
    p = _protect(_watched(df, seen, holder))
    holder.append(p)
    with dask.config.set(scheduler="threads"):
        p["x"].dp.histogram(bins=[0, 50, 100], epsilon=1.0)
        assert seen == [1, 1, 1]  # one pass: each partition read once, after the one ledger line
        p.dp.groupby("c")["x"].mean(bounds=(0, 100), epsilon=1.0)
        assert seen[3:] == [2, 2, 2]
        p.dp.crosstab("k", "b", epsilon=1.0)
        assert seen[6:] == [3, 3, 3]
    with pytest.raises(BudgetExceededError):
        p.dp.crosstab("k", "b", epsilon=49.0)
    assert len(seen) == 9


def test_automatic_bounds_read_the_partitions_after_the_whole_charge(df: pd.DataFrame) -> None:
    """Bounds then counts: two passes, both after the query's whole cost (bounds and counts) is reserved."""
    seen: list[int] = []
    holder: list[Any] = []
    p = _protect(_watched(df, seen, holder))
    holder.append(p)
    with dask.config.set(scheduler="threads"):
        p["x"].dp.histogram(bins=4, epsilon=1.0)
        lines = len(p.dp.budget.ledger)
        assert len(seen) == 6 and min(seen) >= 1 and p.dp.budget.spent.epsilon == pytest.approx(1.0)
        p.dp.groupby("k")["x"].mean(epsilon=1.0)
        assert len(seen) == 12 and min(seen[6:]) > lines


def test_private_keys_are_canonical_across_partitions() -> None:
    """True, 1 and 1.0 are equal, so one key of an object column (their canonical form, 1), -0.0 and 0.0 one
    float key, whatever the partitions.

    (``sort=False``: sorting the pandas result by label fails on labels that pandas takes for equal.)
    """
    mixed = pd.Series([True, 1, 1.0, "1"] * 100 + [1.0, True] * 50, dtype=object)
    signed = pd.Series([-0.0, 0.0, 2.5, np.nan] * 125)
    frame = pd.DataFrame({"o": mixed, "f": signed})
    with dask.config.set({"dataframe.convert-string": False}):  # keep the Python objects
        on_dask = dd.from_pandas(frame, npartitions=5)
    answers = []
    for data in (on_dask.compute(), on_dask):
        p = _protect(data)
        with seeded_noise(5), dask.config.set(scheduler="threads"):
            answers.append((p["o"].dp.value_counts(epsilon=1.0, sort=False), p.dp.crosstab("f", "o", epsilon=1.0)))
    for a, b in zip(*answers):
        _equal(a, b)
    assert sorted(repr(v) for v in answers[1][0].index[:-1]) == ["'1'", "1"]
    assert list(answers[1][1].index) == [0.0, 2.5]


def test_what_goes_to_the_workers_holds_no_budget(df: pd.DataFrame) -> None:
    """Dask's processes scheduler pickles each partition's function: the budget stays on the client (an in-memory
    ledger cannot be unpickled in another process), as it must on a distributed cluster."""
    on_dask = dd.from_pandas(df, npartitions=2)
    answers = []
    for data, scheduler in ((on_dask.compute(), "sync"), (on_dask, "processes")):
        p = _protect(data)
        with seeded_noise(2), dask.config.set({"scheduler": scheduler, "num_workers": 2, "multiprocessing.context": "fork"}):
            answers.append([p["x"].dp.histogram(bins=[0, 50, 100], epsilon=1.0), p["s"].dp.value_counts(epsilon=1.0),
                            p.dp.groupby("c")["x"].var(bounds=(0, 100), epsilon=1.0),
                            p.dp.groupby("k")["x"].median(epsilon=1.0)])
    for a, b in zip(*answers):
        _equal(a, b)
