"""Aggregate queries as data (dpframe.agg): derived sensitivity and monotonicity, exact answers, JSON, refusals.

The sensitivity rules are checked twice: against the numbers the module's documentation states, and as a
property -- on random small data sets and random expressions, adding one privacy unit (up to k rows) never
moves an exact answer by more than the derived sensitivity, nor against its derived direction.
"""

from __future__ import annotations

import datetime
import json
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpframe
from dpframe import Ledger, agg
from dpframe.errors import RefusedError
from dpframe.queries.agg import Answers, Count, Expr, Mean, Sum, derive


def protect(df: pd.DataFrame, k: int = 1) -> Any:
    unit = {"privacy_unit": "user", "max_contributions": k} if "user" in df.columns else {}
    return df.dp.protect(epsilon=1.0, ledger=Ledger.in_memory(), **unit)


def answer(p: Any, expr: Expr) -> Fraction:
    return Answers(p, [expr])(expr)


# --- the rules, as documented -------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3])
def test_the_leaves_sensitivities(k: int) -> None:
    assert agg.count(where="x > 0").sensitivity(k) == k
    assert agg.sum("x", bounds=(-1, 4)).sensitivity(k) == 4 * k
    assert agg.sum("x", bounds=(-5, 2)).sensitivity(k) == 5 * k
    assert agg.sum("x", bounds=(0.5, 2.25)).sensitivity(k) == Fraction(9, 4) * k
    assert agg.mean("x", bounds=(0, 120)).sensitivity(k) == Fraction(120 * k, k + 1)
    assert agg.mean("x", bounds=(-3, 5)).sensitivity(k) == Fraction(8 * k, k + 1)


def test_bounds_off_the_grid_are_rounded_to_it() -> None:
    # 0.1 is not a multiple of the grid step 2^-34: the rules use it rounded to the grid, within half a step.
    delta = agg.sum("x", bounds=(0, 0.1)).sensitivity(1)
    assert delta != Fraction(0.1) and abs(delta - Fraction(0.1)) <= Fraction(1, 2**35)
    assert agg.mean("x", bounds=(0, 0.1)).sensitivity(1) == delta / 2


def test_the_combinations_sensitivities() -> None:
    count, total = agg.count(), agg.sum("x", bounds=(0, 10))
    assert (2 * count - 3 * total + 5).sensitivity(2) == 2 * 2 + 3 * 20
    assert (count / 4).sensitivity(1) == Fraction(1, 4)
    assert (count - count).sensitivity(5) == 0  # equal parts merged: the constant 0
    assert abs(count - 100).sensitivity(3) == 3
    assert agg.minimum(count, 2 * count, 7).sensitivity(1) == 2
    assert agg.maximum(total, count).sensitivity(1) == 10
    assert agg.clip(total, 0, 4).sensitivity(1) == 4  # at most upper - lower
    assert agg.clip(total, 0, 40).sensitivity(1) == 10
    assert agg.clip(total, lower=3).sensitivity(1) == 10


def test_monotonicity() -> None:
    count, up, down, mixed = (agg.count(), agg.sum("x", bounds=(0, 1)), agg.sum("x", bounds=(-1, 0)),
                              agg.sum("x", bounds=(-1, 1)))
    assert [e.monotonicity for e in (count, up, down, mixed, agg.mean("x", bounds=(0, 1)))] == [
        "non-decreasing", "non-decreasing", "non-increasing", "neither", "neither"]
    assert (count + 2 * up).monotonicity == "non-decreasing"
    assert (count - down).monotonicity == "non-decreasing"  # -1 * (non-increasing) rises
    assert (-count - up + 4).monotonicity == "non-increasing"
    assert (count - up).monotonicity == "neither"
    assert (count - count + 3).monotonicity == "constant"
    assert abs(count).monotonicity == "neither" and abs(count * 0 + 2).monotonicity == "constant"
    assert agg.minimum(count, up).monotonicity == "non-decreasing"
    assert agg.maximum(count, down).monotonicity == "neither"
    assert agg.clip(-count, 0, 9).monotonicity == "non-increasing"
    assert agg.clip(count, 2, 2).monotonicity == "constant"


def test_arithmetic_keeps_a_readable_normal_form() -> None:
    count = agg.count(where="age > 40")
    assert repr(2 * count - 1) == "2 * agg.count(where='age > 40') - 1"
    assert repr(-(count - 5)) == "-agg.count(where='age > 40') + 5"
    assert -(-count) == count and count + 0 == count and 1.0 * count == count
    assert np.float64(2) * count == count * 2 and repr(count * 2.0) == "2 * agg.count(where='age > 40')"
    assert repr(count / 4) == "0.25 * agg.count(where='age > 40')"
    assert repr(agg.sum("x", bounds=(0.0, 5.0))) == "agg.sum('x', bounds=(0, 5))"


def test_products_ratios_and_non_numbers_are_refused() -> None:
    count = agg.count()
    for refused in (lambda: count * count, lambda: count / count, lambda: 3 / count):
        with pytest.raises(TypeError, match="no sensitivity bounded"):
            refused()
    for bad in (lambda: count * "2", lambda: count + [1], lambda: count * True, lambda: count * Fraction(1, 3)):
        with pytest.raises(TypeError, match="must be a number"):
            bad()
    with pytest.raises(ValueError, match="finite"):
        count * float("inf")
    with pytest.raises(ValueError, match="overflowed"):
        (count * 1e300) * 1e300
    with pytest.raises(ZeroDivisionError):
        count / 0
    with pytest.raises(TypeError, match="two or more"):
        agg.minimum(count)
    with pytest.raises(ValueError, match="lower <= upper"):
        agg.clip(count, 3, 1)


# --- @ values --------------------------------------------------------------------------------------------


def test_at_names_are_read_when_the_query_is_made() -> None:
    limit = 40
    query = agg.count(where="age > @limit")
    limit = 50
    assert dict(query.to_dict()["constants"]) == {"limit": 40} and limit == 50
    queries = [agg.sum("x * @w", bounds=(0, 1), where="age > @a") for a in (1, 2) for w in (0.5,)]
    assert [q.to_dict()["constants"] for q in queries] == [{"a": 1, "w": 0.5}, {"a": 2, "w": 0.5}]
    candidate = "ignored: @candidate is select's"
    assert agg.count(where="c == @candidate").to_dict()["constants"] == {} and candidate
    with pytest.raises(NameError, match="@nowhere is not defined"):
        agg.count(where="age > @nowhere")


class Sneaky(str):
    def __eq__(self, other: object) -> bool:
        raise ValueError(other)

    __hash__ = str.__hash__


@pytest.mark.parametrize(("value", "error"), [
    (object(), RefusedError), ({"a": 1}, TypeError), ({1, 2}, TypeError), (float("nan"), ValueError),
    (b"bytes", TypeError), (pd.NaT, TypeError), (np.datetime64("NaT"), ValueError), ([[1, 2]], TypeError),
    (1 + 2j, TypeError),
])
def test_at_values_without_a_plain_json_form_are_refused(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        agg.count(where="x == @value")


def test_at_values_are_stored_as_plain_values() -> None:
    sneaky = Sneaky("F")
    stored = dict(agg.count(where="sex == @sneaky").constants)["sneaky"]
    assert type(stored) is str and stored == "F"
    numpy = np.int64(3)
    assert type(dict(agg.count(where="x == @numpy").constants)["numpy"]) is int


# --- JSON --------------------------------------------------------------------------------------------------

_ZONES = st.sampled_from([None, "UTC", "Europe/Oslo"])
_STAMPS = st.builds(
    lambda moment, zone: pd.Timestamp(moment) if zone is None else pd.Timestamp(moment, tz="UTC").tz_convert(zone),
    st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1)), _ZONES)
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8), st.dates(), _STAMPS,
    st.timedeltas(datetime.timedelta(days=-10**4), datetime.timedelta(days=10**4)).map(pd.Timedelta),
)
_CONSTANTS = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=4))
_NUMBERS = st.one_of(st.integers(-5, 5), st.floats(-10, 10, allow_nan=False).filter(lambda v: abs(v) > 1e-3))
_BOUNDS = st.sampled_from([(0, 1), (-2, 3), (0.5, 2.25), (-100, -1), (0, 150), (0, 0.1)])
_WHERES = st.sampled_from([None, "age >= 40", "city == 'a'", "x > 10 or age < 30", "city != 'c' and age > 20"])
_VALUES = st.sampled_from(["x", "x / 2", "age", "age - 50"])


def _leaves(constants: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[Expr]:
    plain = st.one_of(
        st.builds(lambda w: Count(where=w), _WHERES),
        st.builds(lambda v, b, w: Sum(value=v, bounds=b, where=w), _VALUES, _BOUNDS, _WHERES),
        st.builds(lambda v, b, w: Mean(value=v, bounds=b, where=w), _VALUES, _BOUNDS, _WHERES),
    )
    if constants is None:
        return plain
    with_constant = st.builds(lambda c: Count(where="city == @c", constants=(("c", c),)), constants)
    return st.one_of(plain, with_constant)


def _expressions(leaves: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    def combined(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.builds(lambda a, b: a + b, children, children),
            st.builds(lambda a, b: a - b, children, children),
            st.builds(lambda a, n: a * n, children, _NUMBERS),
            st.builds(lambda a, n: a / n, children, _NUMBERS.filter(lambda v: v != 0)),
            st.builds(lambda a, n: n - a, children, _NUMBERS),
            st.builds(abs, children),
            st.builds(agg.minimum, children, children),
            st.builds(agg.maximum, children, _NUMBERS),
            st.builds(lambda a, lo, width: agg.clip(a, lo, lo + width), children, _NUMBERS, st.integers(0, 50)),
            st.builds(lambda a, lo: agg.clip(a, lower=lo), children, _NUMBERS),
        )

    return st.recursive(leaves, combined, max_leaves=5)


@given(_expressions(_leaves(_CONSTANTS)))
@settings(max_examples=150, deadline=None)
def test_json_round_trips(expr: Expr) -> None:
    data = json.loads(json.dumps(expr.to_dict(), allow_nan=False))
    again = agg.from_dict(data)
    assert again == expr and again.to_dict() == expr.to_dict() and repr(again) == repr(expr)
    assert hash(again) == hash(expr)
    assert again.sensitivity(2) == expr.sensitivity(2) and again.monotonicity == expr.monotonicity


def test_equality_is_that_of_the_json_form() -> None:
    one, true = (Count(where="x == @v", constants=(("v", v),)) for v in (1, True))
    assert one != true and len({one, true}) == 2
    assert Count(where="x == @v", constants=(("v", 2.0),)) == Count(where="x == @v", constants=(("v", 2.0),))


@pytest.mark.parametrize("data", [
    {"op": "product", "of": []},
    {"op": "count", "where": None},
    {"op": "count", "where": None, "constants": {}, "extra": 1},
    {"op": "count", "where": "x > @a", "constants": {}},
    {"op": "count", "where": "x > 1", "constants": {"a": 1}},
    {"op": "count", "where": "x > @a", "constants": {"a": {"$date": "not a date"}}},
    {"op": "count", "where": "x > @a", "constants": {"a": {"$other": 1}}},
    {"op": "sum", "value": "x", "bounds": [1, 0], "where": None, "constants": {}},
    {"op": "sum", "value": "x", "bounds": None, "where": None, "constants": {}},
    {"op": "linear", "terms": [[1]], "constant": 0},
    {"op": "linear", "terms": [["1", {"op": "count", "where": None, "constants": {}}]], "constant": 0},
    {"op": "clip", "of": {"op": "count", "where": None, "constants": {}}, "lower": None, "upper": None},
    [1, 2],
])
def test_from_dict_refuses_what_is_not_an_expression(data: Any) -> None:
    with pytest.raises((ValueError, TypeError, NameError)):
        agg.from_dict(data)


# --- exact answers --------------------------------------------------------------------------------------


@pytest.fixture
def quarters() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 400
    x = rng.integers(-40, 200, n) / 4  # quarters: on every sum grid, so pandas' float sums are exact
    x[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({"user": np.arange(n) // 2, "age": rng.integers(18, 90, n), "x": x,
                         "city": rng.choice(["a", "b", "c"], n)})


def exact_mean(values: pd.Series[Any]) -> Fraction:
    """pandas' mean without its division's rounding (the sum of quarters is exact in floats)."""
    return Fraction(values.sum()) / int(values.count())


def test_answers_are_pandas_answers_on_the_rows_in_use(quarters: pd.DataFrame) -> None:
    # One user has 50 identical rows: with k = 2 two of them are kept, whichever two.
    heavy = pd.DataFrame({"user": -1, "age": 33, "x": 7.25, "city": "a"}, index=range(50))
    data = pd.concat([quarters, heavy], ignore_index=True)
    in_use = pd.concat([quarters, heavy.head(2)], ignore_index=True)
    p = protect(data, k=2)
    cases: list[tuple[Expr, float | Fraction]] = [
        (agg.count(), len(in_use)),
        (agg.count(where="age >= 40 and city != 'b'"), int(((in_use.age >= 40) & (in_use.city != "b")).sum())),
        (agg.sum("x", bounds=(0, 30)), in_use.x.clip(0, 30).sum()),
        (agg.sum("x / 2", bounds=(-5, 5), where="city == 'a'"), (in_use.x[in_use.city == "a"] / 2).clip(-5, 5).sum()),
        (agg.mean("x", bounds=(-10, 40)), exact_mean(in_use.x.clip(-10, 40))),
        (agg.mean("age", bounds=(0, 120), where="city == 'c'"), exact_mean(in_use.age[in_use.city == "c"])),
        (agg.mean("x", bounds=(-10, 40), where="age > 1000"), 15.0),  # no values: the midpoint
        (3 * agg.count(where="age < 30") - agg.sum("x", bounds=(0, 10)) + 1,
         3 * int((in_use.age < 30).sum()) - in_use.x.clip(0, 10).sum() + 1),
        (agg.clip(abs(agg.count() - 500), upper=100), min(abs(len(in_use) - 500), 100)),
        (agg.maximum(agg.count(where="city == 'a'"), agg.count(where="city == 'b'")),
         max((in_use.city == "a").sum(), (in_use.city == "b").sum())),
    ]
    answers = Answers(p, [expr for expr, _ in cases])
    for expr, expected in cases:
        exact = answers(expr)
        assert isinstance(exact, Fraction) and exact == Fraction(expected), expr


def test_answers_are_exact_fractions_on_the_grid() -> None:
    p = protect(pd.DataFrame({"x": [0.1, 0.2, 0.3]}))
    total = answer(p, agg.sum("x", bounds=(0, 1)))
    step = Fraction(1, 2**30)  # max(|lo|, |hi|) = 1: its octave's 2^-30
    assert (total / step).denominator == 1 and abs(total - Fraction(6, 10)) <= 3 * step
    assert answer(p, agg.mean("x", bounds=(0, 1))) == total / 3


def test_aggregates_read_nullable_and_boolean_columns() -> None:
    p = protect(pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "b": [True, False, True]}))
    assert answer(p, agg.sum("n", bounds=(0, 10))) == 4
    assert answer(p, agg.mean("n", bounds=(0, 10))) == 2
    assert answer(p, agg.sum("b", bounds=(0, 1))) == 2


# --- the property: no neighbour moves an answer by more than the derived sensitivity ---------------------

_ROWS = st.lists(st.tuples(st.integers(0, 100), st.sampled_from([np.nan, -60.0, -1.5, 0.0, 2.25, 9.0, 80.0, 300.0]),
                           st.sampled_from(["a", "b", "c"])), min_size=0, max_size=12)


@given(rows=_ROWS, added=_ROWS.filter(lambda r: len(r) >= 1), k=st.integers(1, 3),
       expr=_expressions(_leaves()))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_adding_a_unit_moves_an_answer_by_at_most_its_sensitivity(
        rows: list[tuple[int, float, str]], added: list[tuple[int, float, str]], k: int, expr: Expr) -> None:
    columns = ["age", "x", "city"]
    before = pd.DataFrame(rows, columns=columns)
    before["user"] = np.arange(len(before)) // k  # every unit within the bound: no random choice of rows
    extra = pd.DataFrame(added[:k], columns=columns)
    extra["user"] = -1
    after = protect(pd.concat([before, extra], ignore_index=True).astype(
        {"age": "int64", "x": "float64", "city": "object", "user": "int64"}), k)
    # The neighbour without the unit: the same frame filtered (an empty frame cannot be protected).
    a, b = answer(after[after["user"] != -1], expr), answer(after, expr)
    assert abs(b - a) <= expr.sensitivity(k)
    if expr.monotonicity in ("non-decreasing", "constant"):
        assert b >= a
    if expr.monotonicity in ("non-increasing", "constant"):
        assert b <= a


@pytest.mark.parametrize(("expr", "before", "added"), [
    (agg.count(where="x > 0"), [-1.0], [5.0, 5.0, 5.0]),
    (agg.sum("x", bounds=(-2, 6)), [1.0], [9.0, 9.0, 9.0]),
    (agg.sum("x", bounds=(-6, 2)), [1.0], [-9.0, -9.0, -9.0]),
    (agg.mean("x", bounds=(0, 8)), [0.0], [8.0, 8.0, 8.0]),  # n = 1, m = k: k(hi - lo)/(k + 1)
    (2 * agg.count() - agg.sum("x", bounds=(-1, 0)), [0.5], [-1.0, -1.0, -1.0]),
])
def test_the_rules_are_reached(expr: Expr, before: list[float], added: list[float]) -> None:
    """Each leaf's rule is tight: some neighbour moves the answer by exactly the derived sensitivity (k = 3)."""
    rows = pd.DataFrame({"x": before + added, "user": list(range(len(before))) + [-1] * len(added)})
    p = protect(rows, 3)
    assert abs(answer(p, expr) - answer(p[p["user"] != -1], expr)) == expr.sensitivity(3)


# --- evaluation: errors from the schema and the arguments -------------------------------------------------


@pytest.mark.parametrize(("expr", "error"), [
    (agg.count(where="nocolumn > 1"), NameError),
    (agg.count(where="age + 1"), TypeError),  # not a condition
    (agg.count(where="age.mean() > 3"), RefusedError),
    (agg.sum("city", bounds=(0, 1)), TypeError),
    (agg.sum("nocolumn * 2", bounds=(0, 1)), NameError),
    (agg.sum("3", bounds=(0, 1)), TypeError),
    (agg.mean("city + 1", bounds=(0, 1)), TypeError),
    (agg.count(where="city == @candidate"), ValueError),
])
def test_argument_errors_come_from_the_row_wise_part(expr: Expr, error: type[Exception]) -> None:
    p = protect(pd.DataFrame({"age": [30, 40], "city": ["a", "b"]}))
    with pytest.raises(error):
        Answers(p, [expr])


def test_an_expression_that_does_not_parse_is_refused_when_made() -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        agg.count(where="age >")


def test_derive_takes_the_largest_sensitivity_and_refuses_what_no_mechanism_takes() -> None:
    derived = derive([agg.count(), agg.sum("x", bounds=(0, 5)), -agg.count(where="x > 1")], 2, "the queries")
    assert derived.sensitivity == 10 and not derived.monotonic
    assert derived.reason == ("sensitivity 10 derived from the queries: the largest, agg.sum('x', bounds=(0, 5)), is "
                              "a sum clipped to (0, 5): k·max(|lo|, |hi|) = 10")
    assert derive([-agg.count(), agg.sum("x", bounds=(-1, 0))], 1, "the queries").monotonic
    for expressions, match in [([agg.count() * 0 + 1], "do not depend on the data"),
                               ([agg.count() * 2**901], "outside the supported range"),
                               ([agg.count() * 2.0**-901], "outside the supported range")]:
        with pytest.raises(ValueError, match=match):
            derive(expressions, 1, "the queries")


def test_answers_need_a_protected_frame() -> None:
    with pytest.raises(TypeError, match="protected frame"):
        Answers(pd.DataFrame({"x": [1]}), [agg.count()])  # type: ignore[arg-type]
    assert dpframe.agg is agg
