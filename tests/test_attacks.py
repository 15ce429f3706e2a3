"""Linkage, uniqueness and differencing attacks: they find exactly who they should, and DP hides it."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpframe import Ledger
import dpframe  # noqa: F401
from dpframe.attacks import differencing_attack, linkage_attack, synthetic_population, uniqueness
from dpframe.testing import seeded_noise

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NOT_DP = "not differentially private"
QUASI = ["zip", "birth_date", "sex"]


@pytest.fixture(scope="module")
def population() -> pd.DataFrame:
    return synthetic_population(20_000, seed=3, zips=40)


def test_synthetic_population_is_deterministic(population: pd.DataFrame) -> None:
    again = synthetic_population(20_000, seed=3, zips=40)
    pd.testing.assert_frame_equal(population, again)
    assert population["name"].is_unique and population["zip"].nunique() == 40
    assert population["birth_date"].between("1930-01-01", "2005-12-31").all()
    assert not synthetic_population(100, seed=4).equals(synthetic_population(100, seed=3))


def test_linkage_reidentifies_exactly_the_unique_people(population: pd.DataFrame) -> None:
    """The Weld attack on a generated population: names join back through ZIP + birth date + sex."""
    released = population.drop(columns=["name"])  # "de-identified", keeps its row labels
    voters = population.sample(3_000, random_state=1)[["name", *QUASI]]  # public, with identities
    res = linkage_attack(released, voters, identity="name")
    assert res.on == tuple(QUASI)

    # Reference: plain pandas merge, count per voter.
    merged = voters.merge(released.reset_index(), on=QUASI, how="left", indicator=True)
    expected = merged.groupby("name", sort=False)["_merge"].apply(lambda s: int((s == "both").sum()))
    assert res.matches.to_dict() == expected.reindex(voters["name"]).to_dict()

    # Re-identified voters are exactly those unique on the quasi-identifiers, and the link is the right row.
    sizes = released.groupby(QUASI)["income"].transform("size")
    unique_people = set(population.loc[sizes[sizes == 1].index, "name"])
    assert set(res.links.index) == set(voters["name"]) & unique_people
    truth = population.set_index("name")
    assert (res.links["released_row"] == truth.index.get_indexer(res.links.index)).all()
    assert (res.links["income"] == truth.loc[res.links.index, "income"]).all()
    assert (res.links["diagnosis"] == truth.loc[res.links.index, "diagnosis"]).all()
    assert res.rate == pytest.approx(len(res.links) / 3_000) and res.rate > 0.9
    assert res.candidate_sizes.sum() == 3_000 and res.candidate_sizes.get(0, 0) == 0
    assert NOT_DP in repr(res)


def test_tie_breakers_say_which_column_splits_the_ties(population: pd.DataFrame) -> None:
    released = population.drop(columns=["name"])
    voters = population.sample(2_000, random_state=2)[["name", *QUASI]]
    res = linkage_attack(released, voters, on=["zip", "sex"], identity="name")
    assert res.rate < 0.1  # ZIP and sex alone leave large candidate sets
    assert list(res.tie_breakers.index) == ["birth_date"]
    row = res.tie_breakers.loc["birth_date"]
    full = linkage_attack(released, voters, identity="name")
    assert row["reidentified"] == full.reidentified
    assert row["resolved_ties"] == int(((res.matches > 1) & (full.matches == 1)).sum())


def test_linkage_missing_values_and_any_types() -> None:
    released = pd.DataFrame(
        {
            "zip": ["02138", None, "02139", "02139"],
            "dob": pd.to_datetime(["1945-07-31", "1945-07-31", None, "1960-01-01"]),
            "sex": pd.Categorical(["M", "M", "F", "F"]),
        }
    )
    aux = pd.DataFrame(
        {"who": ["Weld", "Ann", "Nobody"], "zip": ["02138", "02139", None],
         "dob": pd.to_datetime(["1945-07-31", "1960-01-01", "1999-09-09"]), "sex": ["M", "F", "F"]}
    )
    # missing = unknown = compatible with anything
    res = linkage_attack(released, aux, identity="who")
    assert res.matches.to_dict() == {"Weld": 2, "Ann": 2, "Nobody": 1}
    assert res.links.index.tolist() == ["Nobody"] and res.links["released_row"].tolist() == [2]
    # missing only matches missing (pd.merge semantics)
    exact = linkage_attack(released, aux, identity="who", missing="exact")
    assert exact.matches.to_dict() == {"Weld": 1, "Ann": 1, "Nobody": 0}
    assert exact.links["released_row"].to_dict() == {"Weld": 0, "Ann": 3}
    with pytest.raises(ValueError, match="share no column"):
        linkage_attack(released, pd.DataFrame({"other": [1]}))


@SETTINGS
@given(
    st.lists(st.tuples(st.sampled_from([1, 2, None]), st.sampled_from(["a", "b", None])), min_size=1, max_size=12),
    st.lists(st.tuples(st.sampled_from([1, 2, None]), st.sampled_from(["a", "b", None])), min_size=1, max_size=6),
)
def test_linkage_matches_a_pairwise_reference(released_rows: list[Any], aux_rows: list[Any]) -> None:
    released = pd.DataFrame(released_rows, columns=["x", "y"], dtype=object)
    aux = pd.DataFrame(aux_rows, columns=["x", "y"], dtype=object)
    for mode in ("match_any", "exact"):
        res = linkage_attack(released, aux, missing=mode)  # type: ignore[arg-type]
        expected = []
        for _, a in aux.iterrows():
            count = 0
            for _, r in released.iterrows():
                ok = True
                for c in ("x", "y"):
                    if pd.isna(a[c]) or pd.isna(r[c]):
                        ok &= mode == "match_any" or (pd.isna(a[c]) and pd.isna(r[c]))
                    else:
                        ok &= a[c] == r[c]
                count += ok
            expected.append(count)
        assert res.matches.tolist() == expected


def test_uniqueness_of_every_subset(population: pd.DataFrame) -> None:
    report = uniqueness(population, QUASI)
    table = report.table
    assert list(table.index) == ["zip", "birth_date", "sex", "zip + birth_date", "zip + sex",
                                 "birth_date + sex", "zip + birth_date + sex"]
    for name, row in table.iterrows():
        columns = str(name).split(" + ")
        sizes = population.groupby(columns).size()
        assert row["unique_rows"] == int((sizes == 1).sum())
        assert row["classes"] == len(sizes) and row["smallest_class"] == sizes.min()
    # ZIP + birth date + sex identifies almost everyone; no single column does.
    assert report.fraction > 0.9 and table.loc["sex", "unique_fraction"] == 0
    assert table.loc["zip", "unique_fraction"] == 0 and table.loc["birth_date", "unique_fraction"] < 0.6
    assert NOT_DP in repr(report)
    only_full = uniqueness(population, QUASI, subsets=False)
    assert only_full.table.index.tolist() == ["zip + birth_date + sex"] and only_full.fraction == report.fraction
    with pytest.raises(ValueError, match="subsets"):
        uniqueness(population, QUASI, max_columns=2)


def test_uniqueness_hand_checked_with_missing_values() -> None:
    df = pd.DataFrame({"a": [1, 1, None, None, 2], "b": ["x", "y", "x", "x", None]})
    table = uniqueness(df, ["a", "b"]).table
    assert table["unique_rows"].tolist() == [1, 2, 3]  # a: {2}; b: {y}, {None}; a+b: (1,x), (1,y), (2,None)
    assert table["unique_fraction"].tolist() == pytest.approx([0.2, 0.4, 0.6])


def test_differencing_attack_plain_is_exact_dp_hides() -> None:
    people = synthetic_population(500, seed=5)
    people["age"] = 2024 - people["birth_date"].dt.year
    target = people["name"] == people["name"].iloc[17]
    with seeded_noise(11):
        res = differencing_attack(people, "age", target, bounds=(0, 125), epsilon=0.5)
    assert res.plain_difference == res.true_value == people["age"].iloc[17]
    assert res.targets == 1 and res.mechanism == "discrete Laplace"
    # Two discrete-Laplace sums with sensitivity 125 at epsilon=0.5: the difference's noise std is
    # sqrt(2) * (std of one sum), far wider than the whole age range.
    one = math.sqrt(2) * 125 / 0.5
    assert res.dp_std == pytest.approx(math.sqrt(2) * one, rel=0.02) and res.dp_std > 125
    assert res.dp_difference != res.true_value
    assert "exactly the target" in repr(res) and NOT_DP in repr(res)


def test_differencing_attack_on_counts_and_refused_on_protected_frames() -> None:
    people = synthetic_population(300, seed=6)
    people["rich"] = people["income"] > 50_000
    target = people["name"] == people["name"].iloc[3]
    with seeded_noise(2):
        res = differencing_attack(people, "rich", target, aggregate="count", epsilon=1.0)
    assert res.plain_difference == float(people["rich"].iloc[3])
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    with pytest.raises(dpframe.RefusedError, match="before protect"):
        differencing_attack(p, "rich", p["name"] == "x", aggregate="count", epsilon=1.0)
    assert len(p.dp.budget.ledger) == 0  # the frame's budget untouched
    with seeded_noise(3):
        callable_target = differencing_attack(people, "rich", lambda d: d.index == 3, aggregate="count")
    assert callable_target.true_value == float(people["rich"].iloc[3])
    with pytest.raises(ValueError, match="bounds"):
        differencing_attack(people, "income", target.to_numpy())
    with pytest.raises(TypeError, match="boolean"):
        differencing_attack(people, "income", target.to_numpy(), aggregate="count")
    with pytest.raises(ValueError, match="index"):
        shifted = pd.Series(target.to_numpy(), index=range(1, len(people) + 1))
        differencing_attack(people, "rich", shifted, aggregate="count")
    with pytest.raises(ValueError, match="booleans"):
        differencing_attack(people, "rich", [True], aggregate="count")


def test_attacks_on_protected_frames_are_refused_and_spend_nothing(population: pd.DataFrame) -> None:
    released = population.drop(columns=["name"]).head(5_000).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    voters = population.head(1_000)[["name", *QUASI]]
    with pytest.raises(dpframe.RefusedError, match="linkage_attack"):
        linkage_attack(released, voters, identity="name")
    with pytest.raises(dpframe.RefusedError, match="before protect"):
        uniqueness(released, QUASI)
    assert len(released.dp.budget.ledger) == 0
