"""The curator service's JSON codec (dpframe.service.wire): exact round trips of arguments and of every query's
answer, refusal of anything it does not carry, and nothing but ValueError on hostile input."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpframe
from dpframe import agg
from dpframe.accounting.costs import Amount, Cost, Reading
from dpframe.queries.select import DPChoice
from dpframe.results import OTHER, DPFloat, DPInt, DPTimedelta, DPTimestamp, Release
from dpframe.service.wire import MAX_DEPTH, BudgetView, budget_view, decode, encode


def wire(value: Any, *, allow_results: bool = True, **options: Any) -> Any:
    """``value`` through the wire: encoded, written as strict JSON, read back and decoded."""
    text = json.dumps(encode(value), allow_nan=False)
    return decode(json.loads(text), allow_results=allow_results, **options)


def assert_same(back: Any, value: Any) -> None:
    """Exactly the same value: type, contents, dtypes, index, release, and what it shows."""
    assert type(back) is type(value)
    if isinstance(value, pd.DataFrame):
        pd.testing.assert_frame_equal(back, value, check_exact=True)
        assert_same_attrs(back, value)
    elif isinstance(value, pd.Series):
        pd.testing.assert_series_equal(back, value, check_exact=True)
        assert_same_attrs(back, value)
    elif isinstance(value, pd.Index):
        pd.testing.assert_index_equal(back, value, exact=True, check_exact=True)
    elif isinstance(value, np.ndarray):
        assert back.dtype == value.dtype
        np.testing.assert_array_equal(back, value)
    elif isinstance(value, Release):
        assert_same_release(back, value)
    elif isinstance(value, DPChoice):
        assert (back.value, back.position) == (value.value, value.position)
        assert_same_release(back.release, value.release)
    elif isinstance(value, (DPFloat, DPInt, DPTimestamp, DPTimedelta)):
        assert back == value or (math.isnan(value) and math.isnan(back))
        assert_same_release(back.release, value.release)
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            assert_same(getattr(back, field.name), getattr(value, field.name))
    elif value is pd.NaT or value is pd.NA:
        assert back is value
    elif isinstance(value, float) and math.isnan(value):
        assert math.isnan(back)
    elif isinstance(value, (list, tuple)):
        assert len(back) == len(value)
        for part, original in zip(back, value):
            assert_same(part, original)
    else:
        assert back == value
    assert repr(back) == repr(value)
    if hasattr(value, "_repr_html_"):
        assert back._repr_html_() == value._repr_html_()


def assert_same_attrs(back: pd.Series[Any] | pd.DataFrame, value: pd.Series[Any] | pd.DataFrame) -> None:
    assert back.attrs.keys() == value.attrs.keys()
    if isinstance(value.attrs.get("dp"), Release):
        assert_same_release(back.attrs["dp"], value.attrs["dp"])
        assert dpframe.results.current_release(back) is back.attrs["dp"] or \
            dpframe.results.current_release(value) is None
    elif "dp" in value.attrs:  # a synthetic frame's report
        assert_same(back.attrs["dp"], value.attrs["dp"])


def assert_same_release(back: Release, value: Release) -> None:
    assert type(back) is Release
    for field in dataclasses.fields(Release):
        assert_same(getattr(back, field.name), getattr(value, field.name))


def people() -> pd.DataFrame:
    """A small frame of every kind of column the queries read."""
    rng = np.random.default_rng(0)
    n = 600
    return pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "income": rng.lognormal(10, 1, n),
        "sex": pd.Categorical(rng.choice(["F", "M"], n)),
        "edu": rng.choice(["HS", "BA", "MA"], n),
        "smoker": rng.random(n) < 0.3,
        "when": pd.Timestamp("2024-01-01", tz="Europe/Oslo") + pd.to_timedelta(rng.integers(0, 10**6, n), unit="s"),
        "wait": pd.to_timedelta(rng.integers(0, 3600, n), unit="s"),
    })


def protect(data: pd.DataFrame) -> Any:
    return data.dp.protect(epsilon=1000.0, delta=1e-6, ledger=dpframe.Ledger.in_memory())


@pytest.fixture
def protected(seeded: None) -> Iterator[Any]:
    yield protect(people())


def proportions(counts: pd.Series[Any]) -> pd.Series[Any]:
    """A table derived from a release: it keeps the release in attrs, which no longer describes it."""
    return counts / counts.sum()


QUERIES: dict[str, Callable[[Any], Any]] = {
    "count": lambda p: p.dp.count(epsilon=1.0),
    "sum": lambda p: p["age"].dp.sum(bounds=(0, 100), epsilon=1.0),
    "float sum": lambda p: p["income"].dp.sum(bounds=(0, 1e5), epsilon=1.0),
    "mean": lambda p: p["income"].dp.mean(bounds=(0, 1e5), epsilon=1.0),
    "var": lambda p: p["age"].dp.var(bounds=(0, 100), epsilon=1.0),
    "std": lambda p: p["age"].dp.std(bounds=(0, 100), epsilon=1.0),
    "median": lambda p: p["age"].dp.median(bounds=(0, 100), epsilon=1.0),
    "quantiles": lambda p: p["age"].dp.quantile([0.25, 0.75], bounds=(0, 100), epsilon=1.0),
    "time mean": lambda p: p["when"].dp.mean(bounds=("2024-01-01", "2024-02-01"), epsilon=1.0),
    "duration mean": lambda p: p["wait"].dp.mean(bounds=("0s", "1h"), epsilon=1.0),
    "histogram": lambda p: p["age"].dp.histogram(bins=[18, 30, 50, 90], epsilon=1.0),
    "value_counts": lambda p: p["edu"].dp.value_counts(keys=["HS", "BA", "MA", "PhD"], epsilon=1.0),
    "selected value_counts": lambda p: p["edu"].dp.value_counts(epsilon=1.0, delta=1e-8),
    "frame value_counts": lambda p: p.dp.value_counts(["sex", "smoker"], epsilon=1.0),
    "crosstab": lambda p: p.dp.crosstab("sex", "smoker", epsilon=1.0),
    "crosstab margins": lambda p: p.dp.crosstab("edu", "sex", keys={"edu": ["HS", "BA", "MA"]}, margins=True,
                                                epsilon=1.0),
    "groupby mean": lambda p: p.dp.groupby("sex")["age"].mean(bounds=(0, 100), epsilon=1.0),
    "groupby count": lambda p: p.dp.groupby(["sex", "smoker"]).count(epsilon=1.0),
    "groupby agg": lambda p: p.dp.groupby("sex").agg({"age": "mean", "income": "sum"},
                                                   bounds={"age": (0, 100), "income": (0, 1e5)}, epsilon=1.0),
    "describe": lambda p: p[["age", "income", "edu", "sex"]].dp.describe(
        epsilon=1.0, bounds={"age": (0, 100), "income": (0, 1e5)}, keys={"edu": ["HS", "BA", "MA"]}, progress=False),
    "series describe": lambda p: p["age"].dp.describe(bounds=(0, 100), epsilon=1.0),
    "mode": lambda p: p["edu"].dp.mode(keys=["HS", "BA", "MA"], epsilon=1.0),
    "top_k": lambda p: p["edu"].dp.top_k(2, keys=["HS", "BA", "MA"], epsilon=1.0),
    "nunique": lambda p: p["edu"].dp.nunique(epsilon=1.0),
    "select": lambda p: p.dp.select(["HS", "BA", "MA"], score=agg.count(where="edu == @candidate"), epsilon=1.0),
    "chisquare": lambda p: p.dp.chisquare("sex", simulations=99, epsilon=1.0),
    "chi2_contingency": lambda p: p.dp.chi2_contingency("sex", "smoker", simulations=99, epsilon=1.0),
    "cov": lambda p: p.dp.cov(["age", "income"], bounds={"age": (0, 100), "income": (0, 1e5)}, epsilon=1.0),
    "corr": lambda p: p.dp.corr(["age", "income"], bounds={"age": (0, 100), "income": (0, 1e5)}, epsilon=1.0),
    "counts": lambda p: p.dp.counts({"young": p["age"] < 30, "old": p["age"] >= 60}, epsilon=1.0, delta=1e-8),
    "range_counts": lambda p: p["age"].dp.range_counts([(None, 40), (40, None)], bins=9, bounds=(0, 90),
                                                       epsilon=1.0),
    "synthesize": lambda p: p[["sex", "smoker"]].dp.synthesize(epsilon=1.0, method="marginals", progress=False,
                                                               random_state=0),
    "preview": lambda p: p["age"].dp.preview("mean", bounds=(0, 100), epsilon=1.0),
    "release": lambda p: p["age"].dp.mean(bounds=(0, 100), epsilon=1.0).release,
    "cost": lambda p: p["age"].dp.mean(bounds=(0, 100), epsilon=1.0).cost,
    "clipping": lambda p: p["income"].dp.mean(bounds=(0, 1e4), epsilon=1.0).release.clipping,
    "derived": lambda p: proportions(p["age"].dp.histogram(bins=[18, 50, 90], epsilon=1.0)),
    "budget": lambda p: (p.dp.count(epsilon=1.0), budget_view(p.dp.budget))[1],
    "budget reading": lambda p: p.dp.budget.remaining,
    "pivot_table": lambda p: p.dp.pivot_table("income", "sex", "smoker", aggfunc="mean", bounds=(0, 1e5), epsilon=1.0),
    "sums": lambda p: p.dp.sums({"age": ("age", (0, 100)), "income": ("income", (0, 1e5))}, epsilon=1.0, delta=1e-8),
    "propose_test_release": lambda p: p["age"].dp.propose_test_release("mean", sensitivity=0.5, bounds=(0, 100),
                                                                       epsilon=1.0, delta=1e-8),
    "range_queries": lambda p: p["age"].dp.range_queries([(None, 39), (40, None)], threshold=100, epsilon=1.0),
    "groupby size": lambda p: p.dp.groupby("sex").size(epsilon=1.0),
    "time median": lambda p: p["when"].dp.median(bounds=("2024-01-01", "2024-02-01"), epsilon=1.0),
    "duration sum": lambda p: p["wait"].dp.sum(bounds=("0s", "1h"), epsilon=1.0),
    "duration quantiles": lambda p: p["wait"].dp.quantile([0.1, 0.9], bounds=("0s", "1h"), epsilon=1.0),
    "time describe": lambda p: p[["when", "wait"]].dp.describe(
        epsilon=1.0, bounds={"when": ("2024-01-01", "2024-02-01"), "wait": ("0s", "1h")}, progress=False),
    "normalized crosstab": lambda p: p.dp.crosstab("sex", "smoker", normalize="index", epsilon=1.0),
    "normalized value_counts": lambda p: p["sex"].dp.value_counts(normalize=True, epsilon=1.0),
    "sample_and_aggregate": lambda p: p.dp.sample_and_aggregate(lambda b: b["age"].mean(), bounds=(0, 100),
                                                               epsilon=1.0, blocks=10),
    "above_threshold": lambda p: p.dp.above_threshold([agg.count(where=f"age >= {a}") for a in (80, 50, 20)],
                                                      threshold=300, epsilon=1.0),
    "last release": lambda p: (p["age"].dp.histogram(bins=[0, 50, 100], epsilon=1.0), p.dp.release)[1],
}


@pytest.mark.parametrize("query", QUERIES)
def test_every_query_answer_round_trips_exactly(protected: Any, query: str) -> None:
    answer = QUERIES[query](protected)
    assert_same(wire(answer), answer)


def test_a_released_table_keeps_its_class_its_release_and_its_display(protected: Any) -> None:
    histogram = protected["age"].dp.histogram(bins=[18, 30, 50, 90], epsilon=1.0)
    back = wire(histogram)
    assert type(back).__name__ == "DPSeries" and isinstance(back.index, pd.IntervalIndex)
    assert dpframe.results.current_release(back) is back.attrs["dp"]
    # The snapshot of the released values is the table itself: not sent twice.
    assert '"released": "same"' in json.dumps(encode(histogram))


def test_unreleased_labels_keep_their_order(protected: Any) -> None:
    counts = protected["edu"].dp.value_counts(epsilon=1.0, delta=1e-8)
    labels = list(wire(pd.Index([OTHER, "HS"], dtype=object)))
    assert type(labels[0]) is type(OTHER) and sorted(labels) == ["HS", OTHER]
    assert repr(wire(counts)) == repr(counts)


ARGUMENTS = [
    None, True, 0, -(2**70), 1.5, -0.0, float("nan"), float("inf"), float("-inf"), "text", "$not a tag",
    [1, [2, "x"]], (1, (2,)), (), {"a": 1, "b": [2]}, {1: "a", (2, 3): "b", "$x": 4}, {"$tuple": 1},
    slice(None, 5, 2), slice("a", "c"), range(3, 10, 2), Fraction(1, 3), {"a", 1, (2, 3)}, frozenset({1.5}),
    np.array([1, 2], dtype="int8"), np.array([0.5, np.nan]), np.array(["a", None, (1,)], dtype=object),
    np.array(["2024-01-01", "NaT"], dtype="M8[s]"),
    pd.Timestamp("2024-03-31 02:30:00.123456789"), pd.Timestamp("2024-10-27 00:30", tz="UTC").tz_convert("Europe/Oslo"),
    pd.Timestamp("2024-01-01", tz="UTC"), pd.Timestamp("2024-01-01T10:00-05:30"), pd.Timedelta("1 days 00:00:00.000000001"), pd.Timedelta(90, unit="s"),
    pd.NaT, pd.NA, pd.Period("2024-03", freq="M"), pd.Interval(0.0, 1.5, closed="left"),
    pd.Interval(pd.Timestamp("2024-01-01"), pd.Timestamp("2024-02-01")), np.dtype("int32"), pd.Int64Dtype(),
    pd.api.types.pandas_dtype("datetime64[ns, Europe/Oslo]"), pd.CategoricalDtype(["b", "a"], ordered=True),
    pd.CategoricalDtype([3, 1]), pd.StringDtype("python"), pd.Index([3, 1], name="n"),
    pd.RangeIndex(2, 20, 3, name="r"), pd.Index([(1, 2), (3, 4)], tupleize_cols=False),
    pd.date_range("2024-01-01", periods=3, freq="h", tz="Europe/Oslo", name="t"), pd.period_range("2024", periods=2),
    pd.timedelta_range("1s", periods=2, freq="s"), pd.IntervalIndex.from_breaks([0, 1.5, 3], closed="both"),
    pd.CategoricalIndex(["a", "b"], categories=["b", "a"], ordered=True), pd.MultiIndex.from_product([["a", "b"], [1, 2]], names=["k", None]),
]


def public_table() -> pd.DataFrame:
    """A public table of every dtype the wire carries (for a merge with protected data)."""
    frame = pd.DataFrame({
        "i": [1, 2, 3], "f": [0.5, np.nan, -np.inf], "b": [True, False, True], "I": pd.array([1, None, 3], "Int64"),
        "B": pd.array([True, None, False], "boolean"), "F": pd.array([0.5, None, 2.0], "Float64"),
        "s": pd.array(["x", None, "z"], dtype="string"), "str": pd.Series(["x", np.nan, "z"], dtype="str"),
        "o": np.array(["x", None, (1, 2)], dtype=object),
        "c": pd.Categorical(["lo", None, "hi"], categories=["lo", "hi", "unused"], ordered=True),
        "n": pd.Categorical([3, 1, 3]),
        "t": pd.to_datetime(["2020-01-01", None, "2021-06-01 12:00"], format="ISO8601").as_unit("s"),
        "tz": pd.to_datetime(["2020-01-01", "2020-07-01", None]).tz_localize("Europe/Oslo"),
        "offset": pd.to_datetime(["2020-01-01T00:00+01:00", None, "2020-07-01T00:00+01:00"]),
        "td": pd.to_timedelta(["1h", None, "3ns"]), "u8": np.array([0, 255, 7], dtype="uint8"),
        "p": pd.period_range("2024-01", periods=3, freq="M"),
        "iv": pd.IntervalIndex.from_breaks([0, 1, 2, 3], closed="left"),
    }, index=pd.Index(["r1", "r2", "r3"], name="row"))
    frame[("tuple", 1)] = [1.0, 2.0, 3.0]
    frame[7] = ["a", "b", "c"]
    return frame


@pytest.mark.parametrize("value", ARGUMENTS, ids=repr)
def test_arguments_round_trip(value: Any) -> None:
    assert_same(wire(value, allow_results=False), value)


@pytest.mark.parametrize("value, plain", [(np.int64(7), 7), (np.float32(0.5), 0.5), (np.bool_(True), True), (np.str_("a"), "a"),
                                          (np.datetime64("2024-01-01T10:00"), pd.Timestamp("2024-01-01T10:00")),
                                          (datetime.timedelta(seconds=3), pd.Timedelta(seconds=3))], ids=repr)
def test_numpy_and_python_scalars_arrive_as_their_plain_values(value: Any, plain: Any) -> None:
    assert_same(wire(value, allow_results=False), plain)


def test_public_tables_round_trip_with_their_dtypes() -> None:
    frame = public_table()
    assert_same(wire(frame, allow_results=False), frame)
    assert_same(wire(frame["c"], allow_results=False), frame["c"])
    stacked = frame[["i", "f"]].stack()
    assert_same(wire(stacked, allow_results=False), stacked)
    with_duplicates = pd.DataFrame([[1, 2]], columns=["a", "a"], index=pd.DatetimeIndex(["2024-01-01"], freq="D"))
    assert_same(wire(with_duplicates, allow_results=False), with_duplicates)
    empty = pd.DataFrame(index=pd.Index([], dtype="int64"))
    assert_same(wire(empty, allow_results=False), empty)


def test_arrow_text_keeps_its_storage() -> None:
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"a": pd.array(["x", None], dtype="string[pyarrow]"),
                          "b": pd.Series(["x", None], dtype=pd.StringDtype("pyarrow", na_value=np.nan)),
                          "c": pd.array([1, None], dtype="int64[pyarrow]")})
    assert_same(wire(frame, allow_results=False), frame)


def test_results_are_refused_as_arguments(protected: Any) -> None:
    answers = [protected.dp.count(epsilon=1.0), protected["age"].dp.histogram(bins=[0, 50, 100], epsilon=1.0),
               Cost(epsilon=Fraction(1)), budget_view(protected.dp.budget)]
    for answer in answers:
        with pytest.raises(ValueError, match="result of the server"):
            wire(answer, allow_results=False)


@pytest.mark.parametrize("total", [{"rho": 0.5}, {"epsilon": 1.0, "delta": 1e-6, "accounting": "rdp"}], ids=str)
def test_budget_views_of_every_kind_round_trip(total: dict[str, Any]) -> None:
    p = pd.DataFrame({"x": range(100)}).dp.protect(**total, ledger=dpframe.Ledger.in_memory())
    p.dp.count(**({"rho": 0.125} if "rho" in total else {"epsilon": 0.25}))
    view = budget_view(p.dp.budget)
    assert_same(wire(view), view)
    assert ("ε=" in repr(view)) and view.spent != Cost()


def test_a_budget_view_holds_nothing_but_the_analysts_own_lines(protected: Any) -> None:
    budget = protected.dp.budget
    other = pd.DataFrame({"y": range(50)}).dp.protect(epsilon=1.0, ledger=budget.store)
    other.dp.count(epsilon=0.5)
    protected.dp.count(epsilon=1.0)
    view = budget_view(budget)
    text = json.dumps(encode(view))
    assert budget.id not in text and other.dp.budget.id not in text and "memory" not in text
    assert list(view.ledger.columns) == list(budget.ledger.columns) and len(view.ledger) == 1
    assert view.remaining == Cost(epsilon=Fraction(999), delta=Fraction(1, 10**6))
    assert repr(view).startswith("BudgetView(ε=1000, δ=1e-06): spent ε=1, δ=0, remaining ε=999")
    back = wire(view)
    assert type(back) is BudgetView and repr(back) == repr(view) and back._repr_html_() == view._repr_html_()
    assert type(back.spent.epsilon) is Amount and back.spent == Reading.of(Cost(epsilon=Fraction(1)), "approx")


@pytest.mark.parametrize("value", [object(), {1, object()}, b"bytes", np.array([[1, 2]]), 1 + 2j, datetime.date(2024, 1, 1),
                                   pd.DataFrame({"z": [1 + 2j]}), lambda x: x], ids=lambda v: type(v).__name__)
def test_values_the_wire_does_not_carry_are_refused_by_name(value: Any) -> None:
    with pytest.raises(TypeError, match="cannot send"):
        encode(value)


def test_a_table_with_other_attrs_is_refused() -> None:
    frame = pd.DataFrame({"a": [1]})
    frame.attrs["secret"] = "x"
    with pytest.raises(TypeError, match="attrs"):
        encode(frame)


def test_references_stand_for_steps() -> None:
    steps = {0: "frame", 1: "column"}
    assert decode([{"$ref": 1}, {"$tuple": [{"$ref": 0}]}], allow_results=False, refs=steps) == ["column", ("frame",)]
    with pytest.raises(ValueError, match="names no earlier step"):
        decode({"$ref": 2}, allow_results=False, refs=steps)
    with pytest.raises(ValueError, match="only a plan's steps"):
        decode({"$ref": 0}, allow_results=False)
    in_a_cell = encode(pd.Series([1], dtype=object))
    in_a_cell["$series"]["data"]["values"] = [{"$ref": 0}]
    with pytest.raises(ValueError, match="cell of a table"):
        decode(in_a_cell, allow_results=False, refs=steps)


def test_values_that_stand_for_steps_are_sent_as_references() -> None:
    class Remote:
        def __init__(self, step: int) -> None:
            self.step = step

    def step_of(value: Any) -> int | None:
        return value.step if isinstance(value, Remote) else None

    data = encode({"key": [Remote(2), (Remote(1), 3)]}, ref=step_of)
    assert data == {"key": [{"$ref": 2}, {"$tuple": [{"$ref": 1}, 3]}]}
    assert decode(data, allow_results=False, refs={1: "one", 2: "two"}) == {"key": ["two", ("one", 3)]}
    with pytest.raises(TypeError, match="Remote"):
        encode(Remote(1))
    # A ref may encode other values itself (a client numbering the steps a value depends on as it meets them).
    nested: list[Any] = []

    def numbering(value: Any) -> int | None:
        nested.append(encode([Remote(7)], ref=lambda inner: 9))
        return step_of(value)

    assert encode((Remote(3), Remote(4)), ref=numbering) == {"$tuple": [{"$ref": 3}, {"$ref": 4}]}
    assert nested == [[{"$ref": 9}]] * 2


def test_too_many_cells_and_too_deep_nesting_are_refused() -> None:
    table = encode(pd.DataFrame({"a": range(60), "b": range(60)}))
    # 120 values and 2 column labels; its RangeIndex holds no cells.
    assert len(decode(table, allow_results=False, max_cells=122)) == 60
    with pytest.raises(ValueError, match="too many cells"):
        decode(table, allow_results=False, max_cells=121)
    with pytest.raises(ValueError, match="too many cells"):  # an index of labels does
        decode(encode(pd.DataFrame({"a": range(60)}, index=pd.Index(np.arange(60) * 2))), allow_results=False,
               max_cells=120)
    huge = {"$rangeindex": {"start": 0, "stop": 10**12, "step": 1, "name": None}}
    for value in (huge, {"$frame": {"data": [], "index": huge, "columns": encode(pd.Index([]))}}):
        with pytest.raises(ValueError, match="too many cells"):
            decode(value, allow_results=False)
    deep: Any = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(ValueError, match="deeper"):
        decode(deep, allow_results=False)
    with pytest.raises(ValueError, match="deeper"):
        encode(deep)


@pytest.mark.parametrize("data", [
    float("nan"), {"$float": "1e400"}, {"$unknown": 1}, {"$tuple": [1], "$dict": []}, {"$tuple": 1},
    {"$dict": [[[1], 2]]}, {"$dtype": "dateutil//etc/passwd"}, {"$dtype": "datetime64[ns, /etc/passwd]"},
    {"$dtype": "no such dtype"}, {"$timestamp": "now", "tz": None, "unit": "ns"},
    {"$timestamp": "2024-01-01T00:00:00", "tz": "../../etc/passwd", "unit": "ns"},
    {"$fraction": "1e999999999"}, {"$fraction": "1/0"}, {"$timedelta": 2**80, "unit": "ns"},
    {"$series": {"data": {"dtype": {"$dtype": "int64"}, "values": [1.5]}, "index": {"$rangeindex": {
        "start": 0, "stop": 1, "step": 1, "name": None}}, "name": None}},
    {"$series": {"data": {"dtype": {"$dtype": "int64"}, "values": [2**70]}, "index": {"$rangeindex": {
        "start": 0, "stop": 1, "step": 1, "name": None}}, "name": None}},
    {"$series": {"data": {"dtype": {"$dtype": "int64"}, "values": [1, 2]}, "index": {"$rangeindex": {
        "start": 0, "stop": 1, "step": 1, "name": None}}, "name": None}},
    {"$index": {"data": {"dtype": {"$categorical": {"categories": {"$index": {"data": {
        "dtype": {"$dtype": "object"}, "values": ["a", "a"]}, "name": None}}, "ordered": False}}, "codes": [0]},
        "name": None}},
    {"$index": {"data": {"dtype": {"$dtype": "int64"}, "values": [1]}, "name": [1]}},
    {"$index": {"data": {"dtype": {"$dtype": "category"}, "codes": [0]}, "name": None}},
], ids=repr)
def test_malformed_input_is_a_value_error(data: Any) -> None:
    with pytest.raises(ValueError) as error:
        decode(data, allow_results=True, refs={})
    assert not str(error.value).startswith("malformed value (")  # a check caught it, not decode's backstop




TAGS = ["$ref", "$float", "$tuple", "$dict", "$slice", "$range", "$fraction", "$set", "$frozenset", "$ndarray", "$unreleased", "$nat", "$na",
        "$timestamp", "$timedelta", "$period", "$interval", "$dtype", "$categorical", "$string", "$index",
        "$rangeindex", "$multiindex", "$series", "$frame", "$dpfloat", "$dpint", "$dptimestamp", "$dptimedelta",
        "$dpchoice", "$release", "$clipping", "$cost", "$amount", "$reading", "$preview", "$chisquare", "$budget"]
KEYS = ["tz", "unit", "freq", "closed", "release", "position", "data", "index", "name", "names", "columns", "dtype",
        "values", "codes", "levels", "categories", "ordered", "storage", "na_value", "start", "stop", "step",
        "shown", "released", "epsilon", "delta", "rho", "kind", "query"]
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | st.sampled_from(
    ["nan", "inf", "int64", "Int64", "category", "object", "str", "UTC", "Europe/Oslo", "2024-01-01T00:00:00", "1/3",
     "ns", "D", "left", "same", "pyarrow", "python", "NA", "approx", "datetime64[ns, UTC]", "interval[int64, right]",
     "category", "string", "Sparse[int64]", "period[D]", "interval", "timedelta64[ns]", "V8", "S3", "complex128",
     "float16", "int64[pyarrow]", "boolean", "Float64", "UInt8", "datetime64[s]", "UTC+01:00"])


def hostile(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(TAGS + KEYS) | st.text(max_size=5)
    return st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4) | st.builds(
        lambda tag, payload, extra: {tag: payload, **extra}, st.sampled_from(TAGS), children,
        st.dictionaries(st.sampled_from(KEYS), children, max_size=3))


@given(st.recursive(SCALARS, hostile, max_leaves=30))
def test_hostile_input_raises_nothing_but_value_error(data: Any) -> None:
    for allow_results in (False, True):
        try:
            decode(data, allow_results=allow_results, refs={0: "frame"}, max_cells=1000)
        except ValueError as error:
            # Caught by a check, with its own message, not by decode's backstop.
            assert not str(error).startswith("malformed value (")


@given(st.recursive(SCALARS, hostile, max_leaves=30))
def test_whatever_decodes_encodes_again(data: Any) -> None:
    try:
        value = decode(data, allow_results=False, max_cells=1000)
    except ValueError:
        return
    json.dumps(encode(value), allow_nan=False)


REMOTE_QUERIES: dict[str, Callable[[Any], Any]] = {
    "histogram": QUERIES["histogram"], "crosstab": QUERIES["crosstab margins"], "mean": QUERIES["mean"],
    "time mean": QUERIES["time mean"], "value_counts": QUERIES["value_counts"],
    "describe": lambda p: p["age"].dp.describe(bounds=(0, 100), epsilon=1.0),
    "budget": lambda p: p.dp.budget,
}


def test_a_remote_answer_shows_as_the_local_one(seeded: None) -> None:
    """The client (dpframe.service.client), through the wire and the server's replay, gets what a local analyst
    gets: the same answer, dtypes, index and release, shown alike (the same seeded noise on both sides)."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("pydantic")
    from dpframe.service import replay
    from dpframe.service.client import Connection
    from dpframe.service.plan import Plan

    local, served = protect(people()), protect(people())

    def answer(request: Any) -> Any:
        if request.method == "GET":
            return httpx.Response(200, json={"value": None})
        outcome = replay.run(served, Plan.model_validate(json.loads(request.content)))
        return httpx.Response(200, text=json.dumps({"value": encode(outcome.value)}, allow_nan=False))

    with Connection("http://localhost", token="t", transport=httpx.MockTransport(answer)) as connection:
        remote = connection.dataset("people")
        for name, query in REMOTE_QUERIES.items():
            with dpframe.testing.seeded_noise(7):
                expected = query(local)
            with dpframe.testing.seeded_noise(7):
                got = query(remote)
            if name == "budget":  # the same lines, written at other times
                got, expected = (dataclasses.replace(view, ledger=view.ledger.drop(columns="time"))
                                 for view in (got, budget_view(expected)))
            assert_same(got, expected)
