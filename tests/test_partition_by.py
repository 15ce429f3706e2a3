"""p.dp.partition_by: per-group budgets by parallel composition (docs/accounting.md, "Per-group budgets")."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe.testing import NotPrivateWarning, seeded_noise


def regions(n: int = 1000) -> pd.DataFrame:
    return pd.DataFrame({"region": ["north", "south", "east", "west"] * (n // 4), "x": np.arange(n, dtype=float)})


def protect(df: pd.DataFrame, **options: Any) -> Any:
    return df.dp.protect(ledger=dpframe.Ledger.in_memory(), **{"epsilon": 1.0, **options})


def units_in(part: Any) -> set[Any]:
    return set(part.dp.unprotected()["user"])


@pytest.mark.parametrize("keys", [["north"], ["north", "south"], ["north", "south", "east", "west", "a", "b"]])
def test_the_parent_is_charged_once_whatever_the_number_of_parts(keys: list[str]) -> None:
    p = protect(regions())
    parts = p.dp.partition_by("region", keys=keys, epsilon=0.75)
    assert list(parts) == keys
    budget = p.dp.budget
    assert float(budget.spent.epsilon) == 0.75
    line = budget.ledger.iloc[0]
    assert len(budget.ledger) == 1 and line["query"] == "partition_by(region)" and line["epsilon"] == 0.75
    assert line["rule"] == (f"parallel composition over {len(keys)} disjoint parts; "
                            "each unit's rows kept in one part")
    assert all(float(part.dp.budget.total.epsilon) == 0.75 for part in parts.values())
    assert len({part.dp.budget.id for part in parts.values()} | {budget.id}) == len(keys) + 1


def test_each_part_spends_its_own_budget_up_to_its_total() -> None:
    p = protect(regions())
    parts = p.dp.partition_by("region", keys=["north", "south"], epsilon=0.5)
    parts["north"].dp.count(epsilon=0.3)
    parts["north"]["x"].dp.sum(bounds=(0, 1000), epsilon=0.2)
    with pytest.raises(dpframe.BudgetExceededError):
        parts["north"].dp.count(epsilon=0.01)
    parts["south"].dp.count(epsilon=0.5)  # untouched by the other part's spending
    assert float(p.dp.budget.spent.epsilon) == 0.5  # nor the parent's
    assert [float(part.dp.budget.spent.epsilon) for part in parts.values()] == [0.5, 0.5]
    name = parts["north"].dp.budget.name
    assert name is not None and name.startswith(f"{p.dp.budget.id}/region=north")


def test_rows_land_in_their_key_s_part_and_others_in_none() -> None:
    df = regions(400)
    df.loc[::7, "region"] = None
    parts = protect(df).dp.partition_by("region", keys=["north", "east", "nowhere"], epsilon=1.0)
    for key, part in parts.items():
        got = part.dp.unprotected().reset_index(drop=True)
        pd.testing.assert_frame_equal(got, df[df["region"] == key].reset_index(drop=True))


def test_public_keys_of_a_categorical_or_a_boolean() -> None:
    df = pd.DataFrame({"c": pd.Categorical(["a", "b", "a"], categories=["a", "b", "z"]), "flag": [True, False, True]})
    assert list(protect(df).dp.partition_by("c", epsilon=0.5)) == ["a", "b", "z"]
    assert list(protect(df).dp.partition_by("flag", epsilon=0.5)) == [False, True]


def test_zcdp_parts() -> None:
    p = regions().dp.protect(rho=0.5, ledger=dpframe.Ledger.in_memory())
    parts = p.dp.partition_by("region", keys=["north", "south"], rho=0.25)
    assert float(p.dp.budget.spent.rho) == 0.25
    assert [float(part.dp.budget.total.rho) for part in parts.values()] == [0.25, 0.25]


def visits() -> pd.DataFrame:
    """Units with rows in one, two or three regions."""
    rng = np.random.default_rng(1)
    n = 3000
    return pd.DataFrame({"user": rng.integers(0, 300, n), "region": rng.choice(["north", "south", "east"], n),
                         "x": rng.random(n)})


def test_each_unit_s_rows_are_kept_in_exactly_one_part() -> None:
    df = visits()
    p = protect(df, privacy_unit="user", max_contributions=3)
    parts = p.dp.partition_by("region", keys=["north", "south"], epsilon=1.0)
    kept = {key: part.dp.unprotected() for key, part in parts.items()}
    users = [set(frame["user"]) for frame in kept.values()]
    assert not users[0] & users[1]
    assert users[0] | users[1] == set(df.loc[df["region"].isin(["north", "south"]), "user"])
    for key, frame in kept.items():  # all of a unit's rows of its part, none of another
        expected = df[(df["region"] == key) & df["user"].isin(frame["user"])]
        assert len(frame) == len(expected) and (frame["region"] == key).all()
    spread = df[df["region"] != "east"].groupby("user")["region"].nunique()
    assert (spread > 1).sum() > 100  # many units had rows in both parts
    for part in parts.values():  # the parts bound contributions as the parent does
        assert (part._protection.privacy_unit, part._protection.max_contributions) == ("user", 3)


def test_which_part_a_unit_lands_in_depends_on_its_own_rows_only() -> None:
    df = visits()
    rng = np.random.default_rng(2)
    others = df[df["user"] >= 150].assign(region=lambda d: rng.choice(["north", "south"], len(d)))
    changed = pd.concat([df[df["user"] < 150], others,
                         pd.DataFrame({"user": 1000 + np.arange(50), "region": "north", "x": 0.0})])

    def assignment(data: pd.DataFrame) -> dict[Any, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            with seeded_noise(7):
                parts = protect(data, privacy_unit="user", max_contributions=3).dp.partition_by(
                    "region", keys=["north", "south", "east"], epsilon=1.0)
        return {user: key for key, part in parts.items() for user in units_in(part)}

    before, after = assignment(df), assignment(changed)
    assert {u: k for u, k in before.items() if u < 150} == {u: k for u, k in after.items() if u < 150}
    assert len({k for u, k in before.items()}) == 3


def test_a_unit_whose_id_makes_the_column_float_moves_no_one_else() -> None:
    # One more user with id 0.5 makes the integer user column float; each other user's part must not change (the
    # keyed hash of a unit is of its value, not of the column's dtype), and the secret key matters.
    df = visits()

    def assignment(data: pd.DataFrame, seed: int = 7) -> dict[Any, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            with seeded_noise(seed):
                parts = protect(data, privacy_unit="user", max_contributions=3).dp.partition_by(
                    "region", keys=["north", "south", "east"], epsilon=1.0)
        return {int(user): key for key, part in parts.items() for user in units_in(part)
                if float(user).is_integer()}

    before = assignment(df)
    after = assignment(pd.concat([df, pd.DataFrame({"user": [0.5], "region": ["north"], "x": [0.0]})]))
    assert before == after
    assert assignment(df, seed=8) != before


def test_row_level_protection_repeated_rows_of_one_unit_stay_in_one_part() -> None:
    df = pd.DataFrame({"region": [["north", "south"], ["south"], ["east", "north"]] * 100})
    p = protect(df).explode("region")  # a row-level unit whose exploded rows lie in two parts
    parts = p.dp.partition_by("region", keys=["north", "south", "east"], epsilon=1.0)
    total = sum(len(part.dp.unprotected()) for part in parts.values())
    assert total == 300  # one part per original row


@pytest.mark.parametrize("arguments, error", [
    ({"column": "nope", "keys": ["a"], "epsilon": 1.0}, KeyError),
    ({"column": "x", "epsilon": 1.0}, ValueError),  # no public keys
    ({"column": "region", "keys": "north", "epsilon": 1.0}, TypeError),
    ({"column": "region", "keys": [], "epsilon": 1.0}, ValueError),
    ({"column": "region", "keys": ["a", "a"], "epsilon": 1.0}, ValueError),
    ({"column": "region", "keys": ["a", None], "epsilon": 1.0}, ValueError),
    ({"column": "region", "keys": ["a"], "epsilon": -1.0}, ValueError),
    ({"column": "region", "keys": ["a"], "epsilon": 0.0}, ValueError),
    ({"column": "region", "keys": ["a"]}, ValueError),
    ({"column": "region", "keys": ["a"], "rho": 0.1}, ValueError),  # rho on an (epsilon, delta) budget
    ({"column": "region", "keys": ["a"], "epsilon": 1.0, "delta": 1.0}, ValueError),
    ({"column": "region", "keys": ["a"], "epsilon": 1.0, "other": "yes"}, TypeError),
])
def test_nothing_is_charged_on_argument_errors(arguments: dict[str, Any], error: type[Exception]) -> None:
    p = protect(regions())
    column = arguments.pop("column")
    with pytest.raises(error):
        p.dp.partition_by(column, **arguments)
    assert len(p.dp.budget.ledger) == 0 and len(p.dp.budget.store.budgets()) == 1


def test_refused_where_parallel_composition_is_not_implemented() -> None:
    df = regions()
    ledger = dpframe.Ledger.in_memory()
    refusals = {
        "bounded DP": df.dp.protect(epsilon=1.0, neighbours="replace", ledger=ledger),
        "Poisson sample": protect(df).dp.sample(0.5),
        "filter": df.dp.protect(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=dpframe.Ledger.in_memory()),
    }
    for words, p in refusals.items():
        spent = len(p.dp.budget.ledger)
        with pytest.raises(dpframe.RefusedError, match=words):
            p.dp.partition_by("region", keys=["north"], epsilon=0.5)
        assert len(p.dp.budget.ledger) == spent


def test_parts_cannot_be_combined_with_each_other_or_the_parent() -> None:
    p = protect(regions())
    parts = p.dp.partition_by("region", keys=["north", "south"], epsilon=1.0)
    with pytest.raises(dpframe.RefusedError):
        dpframe.concat([parts["north"], parts["south"]])
    with pytest.raises(dpframe.RefusedError):
        dpframe.concat([parts["north"], p])
    with pytest.raises(dpframe.RefusedError):
        parts["north"]["x"] + p["x"]


def test_a_part_s_budget_can_be_neither_extended_nor_spent_twice_by_pickling(tmp_path: Path) -> None:
    p = regions().dp.protect(epsilon=1.0, ledger=dpframe.Ledger.at(tmp_path / "ledger.db"))
    part = p.dp.partition_by("region", keys=["north"], epsilon=0.5)["north"]
    with pytest.raises(dpframe.LedgerError, match="cannot be extended"):
        part.dp.budget.extend(epsilon=1.0)
    copy = pickle.loads(pickle.dumps(part))
    part.dp.count(epsilon=0.4)
    with pytest.raises(dpframe.BudgetExceededError):
        copy.dp.count(epsilon=0.2)
    assert copy.dp.budget is part.dp.budget


def test_adding_one_unit_changes_one_part_only() -> None:
    """The premise of parallel composition, checked on the exact parts: with and without a unit whose rows lie in
    three regions, under the same secret key, the parts' rows differ in one part only (the parent's line says ε)."""
    df = visits()

    def exact_parts(data: pd.DataFrame, seed: int) -> list[pd.DataFrame]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            with seeded_noise(int(seed)):
                parts = protect(data, privacy_unit="user", max_contributions=3).dp.partition_by(
                    "region", keys=["north", "south", "east"], epsilon=1.0)
        return [part.dp.unprotected().sort_values(["user", "x"]).reset_index(drop=True) for part in parts.values()]

    spread = df.groupby("user")["region"].nunique()
    for unit in spread.index[spread == 3][:10]:
        with_unit, without_unit = exact_parts(df, unit), exact_parts(df[df["user"] != unit], unit)
        changed = [not a.equals(b) for a, b in zip(with_unit, without_unit)]
        assert sum(changed) == 1


def released_sums(data: pd.DataFrame, releases: int) -> np.ndarray[Any, Any]:
    """Counts of the two parts, each released at ε = 1, added up (post-processing), ``releases`` times."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(len(data)):
            p = data.dp.protect(epsilon=1e4, privacy_unit="user", ledger=dpframe.Ledger.in_memory())
            parts = p.dp.partition_by("region", keys=["a", "b"], epsilon=1e4)
            return np.array([int(parts["a"].dp.count(epsilon=1.0)) + int(parts["b"].dp.count(epsilon=1.0))
                             for _ in range(releases)], dtype=np.int64)


def test_privacy_audit_counts_of_all_parts_at_epsilon_each_are_epsilon_dp_together() -> None:
    """One count per part at ε = 1 each, with and without a unit whose rows lie in both parts: the audit's lower
    bound on the privacy loss of the pair stays below ε = 1, the parent's charge (a unit kept in both parts would
    move the sum by 2, and fail it). The split is made once per data set; the noise is drawn afresh each time."""
    from privacy_audit import epsilon_lower_bound

    others = pd.DataFrame({"user": np.arange(1, 201), "region": ["a", "b"] * 100})
    both = pd.concat([pd.DataFrame({"user": [0, 0], "region": ["a", "b"]}), others], ignore_index=True)
    assert epsilon_lower_bound(released_sums(both, 8000), released_sums(others, 8000)) <= 1.0


def test_a_frame_filtered_to_no_rows_gives_empty_parts() -> None:
    p = protect(regions())
    parts = p[p["x"] > 1e9].dp.partition_by("region", keys=["north", "south"], epsilon=1.0)
    assert [len(part.dp.unprotected()) for part in parts.values()] == [0, 0]


def test_other_collects_the_rows_of_no_key_as_one_more_part() -> None:
    df = regions(400)
    df.loc[::7, "region"] = None
    p = protect(df)
    parts = p.dp.partition_by("region", keys=["north", "east"], epsilon=1.0, other=True)
    assert list(parts) == ["north", "east", dpframe.OTHER]
    rest = parts[dpframe.OTHER].dp.unprotected().reset_index(drop=True)
    pd.testing.assert_frame_equal(rest, df[~df["region"].isin(["north", "east"])].reset_index(drop=True))
    assert p.dp.budget.ledger["rule"].iloc[0].startswith("parallel composition over 3 disjoint parts")
    assert float(p.dp.budget.spent.epsilon) == 1.0
    with pytest.raises(ValueError, match="labels the rest"):
        p.dp.partition_by("region", keys=[dpframe.OTHER], epsilon=1.0, other=True)
    assert float(p.dp.budget.spent.epsilon) == 1.0
