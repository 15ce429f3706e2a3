"""df.dp.describe(): shape and labels, accuracy, the budget rule, bounds reuse, errors before any charge."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe.report.describe import BOUNDS_SHARE, CATEGORY_COUNT_SHARE, MOMENTS_SHARE


@pytest.fixture
def frame(people: pd.DataFrame) -> pd.DataFrame:
    return people.drop(columns=["tags"])


def _ledger_epsilon(p: pd.DataFrame) -> Fraction:
    return p.dp.budget.spent.epsilon.exact


def test_shape_and_labels_match_pandas(frame: pd.DataFrame, seeded: None) -> None:
    p = frame.dp.protect(epsilon=10.0, delta=1e-6)
    d = p.dp.describe(epsilon=2.0)
    expected = frame.describe(include="all")
    renamed = [{"min": "lower bound", "max": "upper bound"}.get(r, r) for r in expected.index]
    assert list(d.index) == renamed + ["unreliable"]  # pandas' rows, then which statistics are noise
    assert list(d.columns) == list(expected.columns)
    release = d.attrs["dp"]
    for part in (release.std, release.lower, release.upper):
        assert part.shape == d.shape and list(part.index) == list(d.index)
    # NaN exactly where pandas has none.
    assert (d.iloc[:-1].isna().to_numpy() == expected.isna().to_numpy()).all()


def test_only_numeric_or_only_categorical(frame: pd.DataFrame, seeded: None) -> None:
    p = frame.dp.protect(epsilon=10.0)
    numeric = p[["age", "income"]].dp.describe(epsilon=1.0)
    assert list(numeric.index) == ["count", "mean", "std", "lower bound", "25%", "50%", "75%", "upper bound",
                                   "unreliable"]
    categorical = p[["sex", "smoker"]].dp.describe(epsilon=1.0)
    assert list(categorical.index) == ["count", "unique", "top", "freq", "unreliable"]
    custom = p[["age"]].dp.describe(epsilon=1.0, percentiles=[0.1, 0.9])
    assert list(custom.index) == ["count", "mean", "std", "lower bound", "10%", "50%", "90%", "upper bound",
                                  "unreliable"]


def test_values_close_to_the_truth_at_large_epsilon(frame: pd.DataFrame, seeded: None) -> None:
    p = frame.dp.protect(epsilon=1000.0, delta=1e-6)
    d = p.dp.describe(epsilon=1000.0, bounds={"income": (0, 1e6)}, keys={"edu": ["HS", "BA", "MA", "PhD"]})
    truth = frame.describe(include="all")
    for column in ["age", "income"]:
        for row in ["mean", "std", "25%", "50%", "75%"]:
            assert d.loc[row, column] == pytest.approx(truth.loc[row, column], rel=0.03), (row, column)
        assert abs(d.loc["count", column] - 2000) <= 5
    assert d.loc["lower bound", "income"] == 0 and d.loc["upper bound", "income"] == 1e6
    lo, hi = d.loc["lower bound", "age"], d.loc["upper bound", "age"]
    assert lo <= 18 and 89 <= hi <= 100  # private bounds, near the true range
    for column in ["sex", "edu", "smoker"]:
        assert d.loc["top", column] == truth.loc["top", column]
        assert abs(d.loc["freq", column] - truth.loc["freq", column]) <= 5
    assert d.loc["unique", "edu"] == 4  # declared categories, including one absent from the data
    assert d.loc["unique", "sex"] == 2 and d.loc["unique", "smoker"] == 2
    release = d.attrs["dp"]
    assert release.lower.loc["mean", "age"] <= d.loc["mean", "age"] <= release.upper.loc["mean", "age"]
    assert np.isnan(release.lower.loc["25%", "age"]) and np.isnan(release.std.loc["top", "sex"])
    assert release.std.loc["freq", "edu"] > 0


def test_ledger_total_is_exactly_epsilon(frame: pd.DataFrame, seeded: None) -> None:
    p = frame.dp.protect(epsilon=1.0, delta=1e-6)
    p.dp.describe(epsilon=0.7)
    assert _ledger_epsilon(p) == Fraction(7, 10)
    ledger = p.dp.budget.ledger
    assert ledger.groupby("columns")["epsilon"].sum().to_dict() == pytest.approx({c: 0.14 for c in frame.columns})
    # Delta only for the column whose categories are selected privately: a tenth of the budget's.
    assert p.dp.budget.spent.delta.exact == Fraction(1, 10) * Fraction(1, 10**6)
    assert ledger.loc[ledger["delta"] > 0, "columns"].tolist() == ["edu"]


def test_budget_rule_within_columns(frame: pd.DataFrame, seeded: None) -> None:
    p = frame.dp.protect(epsilon=1.0)
    p[["age", "income", "sex"]].dp.describe(epsilon=0.9, bounds={"income": (0, 1e6)})
    lines = p.dp.budget.ledger
    entries = {(q, c.split(", ")[0]): Fraction(e).limit_denominator(10**6)
               for q, c, e in zip(lines["query"], lines["columns"], lines["epsilon"])}
    share = Fraction(3, 10)
    rest = share * (1 - BOUNDS_SHARE)
    assert entries[("bounds for describe", "age")] == share * BOUNDS_SHARE
    assert entries[("describe", "age")] == rest * MOMENTS_SHARE
    assert entries[("describe quantiles", "age")] == rest * (1 - MOMENTS_SHARE)
    assert entries[("describe", "income")] == share * MOMENTS_SHARE
    assert ("bounds for describe", "income") not in entries
    assert entries[("count", "sex")] == share * CATEGORY_COUNT_SHARE
    assert entries[("value_counts", "sex")] == share * (1 - CATEGORY_COUNT_SHARE)


def test_weights_override(frame: pd.DataFrame, seeded: None) -> None:
    p = frame.dp.protect(epsilon=1.0)
    p[["age", "sex", "smoker"]].dp.describe(epsilon=1.0, weights={"age": 3})
    per_column = {c: Fraction(0) for c in ["age", "sex", "smoker"]}
    lines = p.dp.budget.ledger
    for column, epsilon in zip(lines["columns"], lines["epsilon"]):
        per_column[column.split(", ")[0]] += Fraction(epsilon).limit_denominator(10**6)
    assert per_column == {"age": Fraction(3, 5), "sex": Fraction(1, 5), "smoker": Fraction(1, 5)}
    assert p.dp.budget.spent.epsilon.exact == 1


def test_bounds_found_once_per_undeclared_numeric_column(frame: pd.DataFrame, seeded: None) -> None:
    p = frame.dp.protect(epsilon=1.0, delta=1e-6)
    d = p.dp.describe(epsilon=1.0, bounds={"income": (0, 5e5)})
    queries = p.dp.budget.ledger["query"].tolist()
    bounds_lines = p.dp.budget.ledger[p.dp.budget.ledger["query"].str.startswith("bounds for")]
    assert bounds_lines["columns"].tolist() == ["age"]
    assert queries.count("describe") == 2 and queries.count("describe quantiles") == 2
    assert "age" in d.attrs["dp"].note and "not the data's extremes" in d.attrs["dp"].note


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": 5.0}, dpframe.BudgetExceededError, "nothing was charged"),
        ({"epsilon": 0.5, "bounds": {"nope": (0, 1)}}, KeyError, "nope"),
        ({"epsilon": 0.5, "bounds": {"sex": (0, 1)}}, TypeError, "not a numeric column"),
        ({"epsilon": 0.5, "bounds": {"age": (10, 0)}}, ValueError, "lower < upper"),
        ({"epsilon": 0.5, "keys": {"age": [1, 2]}}, TypeError, "not a categorical column"),
        ({"epsilon": 0.5, "weights": {"age": 0}}, ValueError, "weight"),
        ({"epsilon": 0.5, "weights": ["age"]}, TypeError, "dict"),
        ({"epsilon": 0.5, "percentiles": [1.5]}, ValueError, r"\[0, 1\]"),
        ({"epsilon": 0.5, "delta": 2.0}, ValueError, "delta"),
    ],
)
def test_errors_before_any_charge(frame: pd.DataFrame, kwargs: dict[str, Any], error: type, match: str) -> None:
    p = frame.dp.protect(epsilon=1.0, delta=1e-6)
    with pytest.raises(error, match=match):
        p.dp.describe(**kwargs)
    assert p.dp.budget.spent.epsilon.exact == 0 and len(p.dp.budget.ledger) == 0


def test_unsupported_dtype_and_unpublic_categories_refused_before_charge(frame: pd.DataFrame) -> None:
    dated = frame.assign(when=pd.Period("2020-01", freq="M")).dp.protect(epsilon=1.0)
    with pytest.raises(TypeError, match="'when' has dtype period"):
        dated.dp.describe(epsilon=0.5)
    pure = frame.dp.protect(epsilon=1.0)  # no delta: 'edu' cannot be selected privately
    with pytest.raises(ValueError, match="not public") as info:
        pure.dp.describe(epsilon=0.5)
    assert "HS" not in str(info.value)
    for p in (dated, pure):
        assert p.dp.budget.spent.epsilon.exact == 0


def test_refuses_unprotected_and_zcdp(frame: pd.DataFrame) -> None:
    with pytest.raises(dpframe.NotProtectedError):
        frame.dp.describe(epsilon=1.0)
    with pytest.raises(ValueError, match="zCDP"):
        frame.dp.protect(rho=1.0).dp.describe(epsilon=1.0)


def test_privacy_unit_column_is_not_described(seeded: None) -> None:
    df = pd.DataFrame({"user": np.arange(1000) // 2, "x": np.arange(1000) % 10})
    p = df.dp.protect(epsilon=1.0, privacy_unit="user", max_contributions=2)
    d = p.dp.describe(epsilon=1.0, bounds={"x": (0, 10)})
    assert list(d.columns) == ["x"]


def test_a_time_cell_too_noisy_for_pandas_time_types_is_nat_not_an_error_after_the_charge() -> None:
    from dpframe.queries import temporal
    from dpframe.report.describe import _as_time

    dates = pd.Series(pd.date_range("2020-01-01", periods=3), name="t")
    scale = temporal.TimeScale.of(dates.dtype)
    assert scale is not None
    assert _as_time(scale, "std", 1e15) is pd.NaT  # about 32 million years
    assert _as_time(scale, "std", 86400.0) == pd.Timedelta(days=1)
