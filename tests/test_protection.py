"""The budget follows the data, and derived data is never under-charged."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpframe import AlreadyProtectedError, NotProtectedError, PrivacyUnitLostError, UNIT_LEVEL


@pytest.fixture
def p(people: pd.DataFrame) -> pd.DataFrame:
    return people.dp.protect(epsilon=100.0, delta=1e-6)


KEEPS_BUDGET: dict[str, Callable[[pd.DataFrame], Any]] = {
    "boolean filter": lambda d: d[d["age"] >= 40],
    "query": lambda d: d.query("age >= 40"),
    "loc": lambda d: d.loc[d["age"] > 30, ["age", "sex"]],
    "iloc": lambda d: d.iloc[10:500],
    "column": lambda d: d["age"],
    "columns": lambda d: d[["age", "income"]],
    "assign": lambda d: d.assign(decade=d["age"] // 10),
    "copy deep": lambda d: d.copy(),
    "copy shallow": lambda d: d.copy(deep=False),
    "copy.deepcopy": lambda d: copy.deepcopy(d),
    "sort_values": lambda d: d.sort_values("income"),
    "head": lambda d: d.head(100),
    "sample": lambda d: d.sample(100, random_state=0),
    "dropna": lambda d: d.dropna(),
    "fillna": lambda d: d.fillna({"age": 0}),
    "astype": lambda d: d.astype({"age": "float64"}),
    "rename": lambda d: d.rename(columns={"age": "years"}),
    "reset_index": lambda d: d.reset_index(),
    "set_index append": lambda d: d.set_index("sex", append=True),
    "reset then set_index": lambda d: d.reset_index().set_index("sex"),
    "pickle": lambda d: pickle.loads(pickle.dumps(d)),
    "series filter": lambda d: d["income"][d["age"] > 50],
    "series arithmetic": lambda d: d["income"] / 1000,
}


@pytest.mark.parametrize("name", list(KEEPS_BUDGET))
def test_derived_data_spends_from_the_same_budget(p: pd.DataFrame, name: str) -> None:
    derived = KEEPS_BUDGET[name](p)
    assert derived.dp.budget is p.dp.budget
    derived.dp.count(epsilon=1.5)
    assert p.dp.budget.spent.epsilon == Fraction(3, 2)
    assert len(p.dp.budget.ledger) == 1


def test_original_stays_unprotected(people: pd.DataFrame) -> None:
    people.dp.protect(epsilon=1.0)
    assert not people.dp.is_protected
    assert UNIT_LEVEL not in people.index.names
    with pytest.raises(NotProtectedError, match="protect"):
        people.dp.count(epsilon=0.1)


@pytest.mark.parametrize(
    "name, derive",
    [
        ("set_index", lambda d: d.set_index("sex")),
        ("reset_index(drop=True)", lambda d: d.reset_index(drop=True)),
        ("melt", lambda d: d.melt(id_vars="sex", value_vars=["age"])),
        ("groupby aggregate", lambda d: d.groupby("sex", observed=True)[["age"]].mean()),
        ("self-join", lambda d: d.reset_index().merge(d.reset_index(), on="sex")),
    ],
)
def test_lost_unit_record_is_refused_without_charge(p: pd.DataFrame, name: str, derive: Any) -> None:
    derived = derive(p)
    with pytest.raises((PrivacyUnitLostError, NotProtectedError)) as info:
        derived.dp.count(epsilon=1.0)
    assert "nothing was charged" in str(info.value) or "protect" in str(info.value)
    assert p.dp.budget.spent.epsilon == 0


def test_merge_with_unprotected_loses_budget_and_refuses_reprotection(p: pd.DataFrame) -> None:
    other = pd.DataFrame({"sex": ["F", "M"], "label": ["female", "male"]})
    merged = p.reset_index().merge(other, on="sex")
    with pytest.raises(NotProtectedError, match="dropped its budget"):
        merged.dp.count(epsilon=1.0)
    with pytest.raises(AlreadyProtectedError):
        merged.dp.protect(epsilon=1.0)


def test_dp_merge_of_two_protected_frames_is_refused(p: pd.DataFrame) -> None:
    with pytest.raises(PrivacyUnitLostError, match="both sides"):
        p.dp.merge(p, on="sex")


def test_cannot_protect_twice(p: pd.DataFrame) -> None:
    with pytest.raises(AlreadyProtectedError):
        p.dp.protect(epsilon=1.0)
    with pytest.raises(AlreadyProtectedError):
        p[p["age"] > 40].dp.protect(epsilon=1.0)


def _true_bounded_count(units: np.ndarray[Any, Any], k: int) -> int:
    return int(np.minimum(pd.Series(units).value_counts().to_numpy(), k).sum())


@pytest.mark.parametrize(
    "name, derive",
    [
        ("explode", lambda d: d.explode("tags")),
        ("concat overlapping", lambda d: pd.concat([d, d.iloc[:500]])),
        ("loc repeated labels", lambda d: d.loc[np.repeat(d.index[:100].to_numpy(), 5)]),
        ("one-to-many dp.merge", lambda d: d.dp.merge(
            pd.DataFrame({"sex": ["F", "F", "M"], "z": [1, 2, 3]}), on="sex")),
        ("stack", lambda d: d[["age", "income"]].stack()),
        ("melt keeping the index", lambda d: d.melt(id_vars="sex", value_vars=["age", "income"], ignore_index=False)),
        ("sample with replacement", lambda d: d.sample(3000, replace=True, random_state=1)),
    ],
)
def test_duplicating_operations_are_bounded_per_unit(p: pd.DataFrame, name: str, derive: Any, seeded: None) -> None:
    derived = derive(p)
    # Exactly one row per person survives contribution bounding, so the count is the
    # number of distinct people (here: epsilon is large, noise tiny).
    from dpframe.protection import unit_ids

    units = unit_ids(derived).to_numpy()
    assert len(units) > len(np.unique(units))  # the operation really duplicated people
    noisy = derived.dp.count(epsilon=50.0)
    assert abs(noisy - _true_bounded_count(units, 1)) <= 3
    assert p.dp.budget.spent.epsilon == 50


def test_user_level_privacy_bounds_contributions(seeded: None) -> None:
    rng = np.random.default_rng(3)
    visits = pd.DataFrame({"user": rng.integers(0, 200, 5000), "spend": rng.uniform(0, 100, 5000)})
    p = visits.dp.protect(epsilon=100.0, privacy_unit="user", max_contributions=3)
    noisy = p.dp.count(epsilon=90.0)
    expected = _true_bounded_count(visits["user"].to_numpy(), 3)
    assert abs(noisy - expected) <= 10
    assert noisy.release.std > 0
    # sensitivity scales with k: the noise of a user-level count is k times the row-level one
    user_level = p.dp.count(epsilon=0.05)
    row_level = visits.dp.protect(epsilon=100.0).dp.count(epsilon=0.05)
    assert user_level.std == pytest.approx(3 * row_level.std, rel=0.01)


def test_protect_argument_errors(people: pd.DataFrame) -> None:
    with pytest.raises(ValueError):
        people.dp.protect(epsilon=-1)
    with pytest.raises(ValueError, match="empty"):
        people.iloc[:0].dp.protect(epsilon=1.0)
    with pytest.raises(KeyError):
        people.dp.protect(epsilon=1.0, privacy_unit="nope")
    with pytest.raises(ValueError, match="privacy_unit"):
        people.dp.protect(epsilon=1.0, max_contributions=2)
    with pytest.raises(ValueError):
        people.dp.protect(epsilon=1.0, privacy_unit="age", max_contributions=0)


def test_custom_index_is_kept(people: pd.DataFrame) -> None:
    df = people.set_index("edu")
    p = df.dp.protect(epsilon=1.0)
    assert list(p.index.names) == ["edu", UNIT_LEVEL]
    assert p.loc["HS"].dp.budget is p.dp.budget
