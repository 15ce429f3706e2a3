"""Private selection of groups under ``groupby(..., max_groups=L0, max_rows_per_group=Linf)`` without ``keys=``.

The groups are selected first (truncated geometric for L0 <= 2, weighted
Gaussian set union from 3) over the observed groups, each unit bounded to L0
of them by the keyed hash and counted once in each; the selected groups are
then measured as public groups, and count's "other" entry counts the rows in
use outside them. Checked here: the refusals (before any charge), the ledger
lines, which groups are kept, an audit of the selection's delta, and the
exact aggregates (before noise) against a hand computation through the mask.
Data come from fixed numpy seeds; noise from ``seeded_noise`` or budgets
large enough that a correct implementation fails with probability < 1e-6.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe.errors import RefusedError
from dpframe.protection.units import GroupChoice, keyed_hashes, unit_ids
from dpframe.queries.partitioned import public_order
from dpframe.queries.plan import Target
from dpframe.results import OTHER, current_release
from dpframe.testing import seeded_noise

BIG = [f"big{i}" for i in range(6)]


def visits(lonely: int = 10, seed: int = 0) -> pd.DataFrame:
    """600 units over 6 big groups (2-4 groups each, 1-5 rows in each) and ``lonely`` groups of one unit each
    (units 1000, 1001, ...), with 30 rows each: many rows, one unit."""
    rng = np.random.default_rng(seed)
    parts = []
    for uid in range(600):
        groups = rng.choice(BIG, size=int(rng.integers(2, 5)), replace=False)
        rows = np.repeat(groups, rng.integers(1, 6, len(groups)))
        parts.append(pd.DataFrame({"uid": uid, "g": rows, "x": rng.integers(0, 11, len(rows)).astype(float)}))
    for i in range(lonely):
        parts.append(pd.DataFrame({"uid": 1000 + i, "g": f"lonely{i}", "x": np.full(30, 7.0)}))
    return pd.concat(parts, ignore_index=True)


def protect(frame: pd.DataFrame, **budget: Any) -> pd.DataFrame:
    amounts = budget or {"epsilon": 10.0, "delta": 1e-5}
    return frame.dp.protect(privacy_unit="uid", max_contributions=100, ledger=dpframe.Ledger.in_memory(),
                            **amounts)


def spent(p: pd.DataFrame) -> tuple[float, float]:
    total = p.dp.budget.spent
    return float(total.epsilon), float(total.delta)


def nothing_spent(p: pd.DataFrame) -> bool:
    return spent(p) == (0.0, 0.0) and float(p.dp.budget.spent.rho) == 0.0


# --- refusals and argument errors, before any charge -------------------------------------------------------

def test_without_delta_or_on_zcdp_unknown_groups_are_refused_as_without_bounds() -> None:
    for budget, arguments in (({"rho": 1.0}, {"rho": 0.5}), ({"epsilon": 1.0}, {"epsilon": 0.5})):
        p = protect(visits(), **budget)
        gb = p.dp.groupby("g", max_groups=2, max_rows_per_group=3)
        with pytest.raises(ValueError, match="not public: declare them with keys="):
            gb.count(**arguments)
        with pytest.raises(ValueError, match="not public: declare them with keys="):
            gb.mean("x", bounds=(0, 10), **arguments)
        assert nothing_spent(p)


@pytest.mark.parametrize("query, arguments, error, message", [
    ("mean", {"bounds": (10, 0)}, ValueError, "lower < upper"),
    ("sum", {"bounds": (0, math.inf)}, ValueError, "finite"),
    ("var", {"bounds": (0, 10), "ddof": -1}, ValueError, "ddof"),
    ("std", {"bounds": (0, 10), "mechanism": "gaussian"}, ValueError, "delta > 0"),
    # (the truncated geometric's table gives up after 10^6 steps: a few seconds)
    ("count", {"epsilon": 1e-7, "delta": 1e-9}, ValueError, "too small"),
])
def test_argument_errors_come_before_any_charge(query: str, arguments: dict[str, Any], error: type[Exception],
                                                message: str) -> None:
    p = protect(visits())
    gb = p.dp.groupby("g", max_groups=1, max_rows_per_group=3)
    amounts = {"epsilon": 1.0, "delta": 1e-6} | arguments
    if arguments.get("mechanism") == "gaussian":
        amounts.pop("delta")
    column = () if query == "count" else ("x",)
    with pytest.raises(error, match=message):
        getattr(gb, query)(*column, **amounts)
    assert nothing_spent(p)


def test_a_string_column_is_refused_before_any_charge() -> None:
    p = protect(visits().assign(s="a"))
    with pytest.raises(TypeError, match="numeric"):
        p.dp.groupby("g", max_groups=2, max_rows_per_group=3).sum("s", bounds=(0, 1), epsilon=1.0, delta=1e-6)
    assert nothing_spent(p)


def test_unsupported_queries_stay_refused_on_unknown_groups() -> None:
    p = protect(visits())
    gb = p.dp.groupby("g", max_groups=2, max_rows_per_group=3)
    with pytest.raises(RefusedError, match="needs public groups"):
        gb.quantile("x", 0.5, bounds=(0, 10), epsilon=0.5)
    with pytest.raises(RefusedError, match="needs public groups"):
        gb.agg({"x": "mean"}, bounds=(0, 10), epsilon=0.5, delta=1e-6)
    with pytest.raises(RefusedError, match="needs public groups"):
        gb["x"].count(epsilon=0.5, delta=1e-6)
    with pytest.raises(RefusedError, match="needs public groups"):
        gb.sum("x", unit_sum_bounds=(0, 10), epsilon=0.5, delta=1e-6)
    assert nothing_spent(p)
    # Once a count has released the groups, they are public and the others run on them.
    gb.count(epsilon=1.0, delta=1e-6)
    released = gb.median("x", bounds=(0, 10), epsilon=0.5)
    assert len(released) > 0


# --- ledger lines -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("l0, mechanism", [(1, "truncated geometric"), (2, "truncated geometric"),
                                           (3, "weighted Gaussian set union"), (4, "weighted Gaussian set union")])
def test_count_charges_the_selection_the_counts_and_the_other_entry_in_three_lines(l0: int, mechanism: str) -> None:
    p = protect(visits())
    with seeded_noise(l0):
        counts = p.dp.groupby("g", max_groups=l0, max_rows_per_group=3).count(epsilon=1.0, delta=1e-6)
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["groups selected for groupby count", "groupby count",
                                        "rows in groups not released by groupby count"]
    # PipelineDP's equal shares for the selection and the counts, the other entry's tenth from the counts'.
    assert ledger["epsilon"].tolist() == pytest.approx([0.5, 0.4, 0.1])
    assert ledger["delta"].tolist() == pytest.approx([1e-6, 0.0, 0.0])
    selection, measurement, other = (ledger.iloc[i] for i in range(3))
    assert selection["mechanism"] == mechanism and f"L0={l0}" in selection["rule"]
    assert "adaptive sequential composition" in selection["rule"]
    assert f"L0={l0}" in measurement["rule"] and "L∞=3" in measurement["rule"]
    assert f"sensitivity {3 * l0}" in other["rule"]
    assert spent(p) == pytest.approx((1.0, 1e-6))
    release = current_release(counts)
    assert release is not None and mechanism in release.note and release.cost.epsilon == 1
    assert counts.index[-1] == OTHER
    # The other entry's noise: discrete Laplace of scale L0·L∞ / (ε/10).
    assert float(release.std.iloc[-1]) == pytest.approx(math.sqrt(2) * 3 * l0 / 0.1, rel=0.02)


def test_a_gaussian_mean_shares_delta_with_the_selection() -> None:
    p = protect(visits())
    with seeded_noise(0):
        means = p.dp.groupby("g", max_groups=2, max_rows_per_group=3).mean(
            "x", bounds=(0, 10), epsilon=1.0, delta=1e-6, mechanism="gaussian")
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["groups selected for groupby mean", "groupby mean"]
    assert ledger["epsilon"].tolist() == pytest.approx([1 / 3, 2 / 3])  # selection, count and sum: equal thirds
    assert ledger["delta"].tolist() == pytest.approx([5e-7, 5e-7])
    assert ledger["mechanism"].tolist() == ["truncated geometric", "discrete Gaussian"]
    assert spent(p) == pytest.approx((1.0, 1e-6))
    assert set(means.index) == set(BIG)


def test_sum_measures_the_selected_groups_in_one_measurement() -> None:
    p = protect(visits())
    with seeded_noise(0):
        sums = p.dp.groupby("g", max_groups=2, max_rows_per_group=3).sum("x", bounds=(0, 10), epsilon=1.0,
                                                                          delta=1e-6)
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["groups selected for groupby sum", "groupby sum"]
    assert ledger["epsilon"].tolist() == pytest.approx([0.5, 0.5])
    assert ledger["noise"].iloc[-1].startswith("sum σ=")  # no count spent beside it
    release = current_release(sums)
    assert release is not None and "selected privately" in release.note


def test_the_selected_groups_are_remembered_for_later_queries() -> None:
    p = protect(visits())
    gb = p.dp.groupby("g", max_groups=2, max_rows_per_group=3)
    with seeded_noise(0):
        first = gb.count(epsilon=1.0, delta=1e-6)
        again = gb.mean("x", bounds=(0, 10), epsilon=1.0)  # public now: no delta, no selection
    assert list(first.index[:-1]) == sorted(BIG) and list(again.index) == sorted(BIG)
    assert p.dp.budget.ledger["query"].tolist()[-1] == "groupby mean"
    assert spent(p) == pytest.approx((2.0, 1e-6))


# --- which groups are kept ----------------------------------------------------------------------------------

@pytest.mark.parametrize("l0", [1, 2, 3, 6])
def test_big_groups_are_kept_and_one_unit_groups_dropped(l0: int) -> None:
    # Every big group has >= 200 units: kept with probability 1 (truncated geometric: pi(n) = 1 from ~2 ln(1/δ)/ε
    # units) or but for a Gaussian tail beyond 9 σ (set union). A one-unit group is kept with probability
    # <= δ = 1e-9 whatever its 30 rows: 10 of them, < 1e-8 in all.
    p = protect(visits())
    counts = p.dp.groupby("g", max_groups=l0, max_rows_per_group=3).count(epsilon=1.0, delta=1e-9)
    assert list(counts.index) == sorted(BIG) + [OTHER]


# --- privacy audit ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("l0", [2, 3])
def test_audit_a_units_own_groups_are_released_with_probability_at_most_delta(l0: int) -> None:
    # One unit holds L0 groups of its own (absent without it): the (ε, δ) guarantee allows their release with
    # probability <= δ (e^ε · 0 + δ). At δ = 0.2 over 500 independent queries: at most 100 expected; 6 of its
    # sd (8.9) above it fails with probability < 1e-8. The truncated geometric keeps each with δ/L0 exactly,
    # so the frequency is also near δ (it is no empty test); set union is below it.
    rng = np.random.default_rng(l0)
    crowd = pd.DataFrame({"uid": np.repeat(np.arange(200), 2), "g": rng.choice(BIG[:3], 400), "x": 1.0})
    own = pd.DataFrame({"uid": 999, "g": np.repeat([f"own{i}" for i in range(l0)], 20), "x": 1.0})
    frame = pd.concat([crowd, own], ignore_index=True)
    trials, delta = 500, 0.2
    released = 0
    for _ in range(trials):
        p = frame.dp.protect(epsilon=1.0, delta=0.5, privacy_unit="uid", max_contributions=100,
                             ledger=dpframe.Ledger.in_memory())
        counts = p.dp.groupby("g", max_groups=l0, max_rows_per_group=5).count(epsilon=1.0, delta=delta)
        released += any(str(key).startswith("own") for key in counts.index)
    bound = trials * delta
    assert released <= bound + 6 * math.sqrt(bound * (1 - delta))
    if l0 < 3:  # truncated geometric: 1 - (1 - δ/L0)^L0 ≈ δ
        expected = trials * (1 - (1 - delta / l0) ** l0)
        assert released >= expected - 6 * math.sqrt(expected * (1 - delta))


# --- exact aggregates on the selected groups ----------------------------------------------------------------

@pytest.mark.parametrize("query", ["count", "sum", "mean"])
def test_exact_aggregates_on_the_selected_groups_follow_the_bounded_mask(query: str) -> None:
    # At ε = 10^4 per query every discrete Laplace draw of a count is 0 but with probability < e^-40: the
    # released counts are the exact ones (sums and means within a tiny noise). By hand: the counts, sums and means of the rows the mask keeps among the released
    # groups (each unit's L0 groups of smallest keyed hash among them; all its rows there, L∞ being above any
    # unit's rows in a group), and the other entry: the rows the mask over the *observed* groups keeps outside
    # them (here L∞ of each lonely unit's 30 rows).
    frame = visits(lonely=8, seed=3)
    l0, linf = 2, 10
    p = frame.dp.protect(epsilon=10**5, delta=1e-3, privacy_unit="uid", max_contributions=100,
                         ledger=dpframe.Ledger.in_memory())
    gb = p.dp.groupby("g", max_groups=l0, max_rows_per_group=linf)
    amounts: dict[str, Any] = {"epsilon": 10**4, "delta": 1e-12}
    answer = gb.count(**amounts) if query == "count" else getattr(gb, query)("x", bounds=(0, 10), **amounts)
    target = Target.of(p)
    key = target.protection.group_bounding_key()  # drawn by the query
    rows, units = target.obj, unit_ids(target.obj)

    def mask_over(cells: pd.Index[Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        codes = cells.get_indexer(rows["g"])
        return codes, GroupChoice.of(units, codes, keyed_hashes(cells, key), l0, linf, key).rows()

    released = pd.Index(sorted(BIG))
    codes, keep = mask_over(released)
    count = np.bincount(codes[keep], minlength=len(released))
    total = np.bincount(codes[keep], rows["x"].to_numpy()[keep], len(released))
    if query == "count":
        assert list(answer.index) == list(released) + [OTHER]
        assert answer.iloc[:-1].tolist() == count.tolist()
        observed = pd.Index(rows["g"].unique())
        observed_codes, observed_keep = mask_over(observed[public_order(observed)])
        outside = int(np.count_nonzero(observed_keep & ~observed[public_order(observed)][observed_codes]
                                       .isin(released)))
        assert outside == 8 * linf and answer[OTHER] == outside
    else:
        # A sum's noise is drawn in steps of its release grid, far finer than 1: within 20 sd of the exact one (a
        # Laplace tail of e^-28).
        release = current_release(answer)
        assert release is not None and list(answer.index) == list(released)
        reach = 20 * np.asarray(release.std, dtype=float)
        assert np.all(np.abs(answer.to_numpy() - (total if query == "sum" else total / count)) <= reach)
        assert np.all(reach < (2.0 if query == "sum" else 1e-2))  # of sums in the thousands


def test_the_measurement_bounds_each_unit_among_the_released_groups() -> None:
    # 40 units hold a big group and a group of their own, L0 = 1: over the observed groups about half of them keep
    # their own group (keyed hash), which is not released; the measurement bounds among the released groups, so
    # every unit's rows in the big groups count (all of them: L∞ above any unit's rows), and the other entry
    # counts the rows the selection's bounding kept in the groups of one unit. At ε = 10^4 the counts are exact
    # (discrete Laplace draws all 0 but with probability < e^-40); the other entry is positive but with
    # probability 2^-40 (no unit choosing its own group).
    rng = np.random.default_rng(5)
    crowd = pd.DataFrame({"uid": np.repeat(np.arange(300), 3), "g": np.repeat(rng.choice(BIG, 300), 3)})
    both = pd.DataFrame({"uid": np.repeat(np.arange(1000, 1040), 6),
                         "g": np.concatenate([[big] * 3 + [f"own{i}"] * 3
                                              for i, big in enumerate(rng.choice(BIG, 40))])})
    frame = pd.concat([crowd, both], ignore_index=True)
    p = frame.dp.protect(epsilon=10**5, delta=1e-3, privacy_unit="uid", max_contributions=100,
                         ledger=dpframe.Ledger.in_memory())
    counts = p.dp.groupby("g", max_groups=1, max_rows_per_group=10).count(epsilon=10**4, delta=1e-12)
    in_big = frame[frame["g"].isin(BIG)].groupby("g").size()
    assert counts.drop(OTHER).equals(in_big.rename("count").rename_axis("g"))
    assert counts[OTHER] % 3 == 0 and 0 < counts[OTHER] < 40 * 3


def test_with_two_columns_the_other_entry_counts_the_rows_outside_the_measured_product() -> None:
    # (x, 1) and (y, 2) are big; (x, 2) and (y, 1) hold one unit each and are not selected, but they lie in the
    # product of the released keys {x, y} × {1, 2}, which is measured: the other entry must not count them again.
    rng = np.random.default_rng(3)
    big = pd.DataFrame({"uid": np.arange(400), "a": np.where(np.arange(400) < 200, "x", "y"),
                        "b": np.where(np.arange(400) < 200, 1, 2)}).loc[lambda d: d.index.repeat(2)]
    lonely = pd.DataFrame({"uid": [1000, 1001], "a": ["x", "y"], "b": [2, 1]})
    p = protect(pd.concat([big, lonely], ignore_index=True).assign(x=rng.random(802)),
                epsilon=2000.0, delta=1e-5)
    with seeded_noise(1):
        counts = p.dp.groupby(["a", "b"], max_groups=1, max_rows_per_group=2).count(epsilon=1000.0, delta=1e-9)
    assert abs(counts[(OTHER, OTHER)]) < 1  # nothing outside {x, y} × {1, 2}: noise of scale 2/100 only
    assert abs(counts[("x", 2)] - 1) < 1 and abs(counts[("x", 1)] - 400) < 1
