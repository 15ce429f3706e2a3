"""More of ``groupby(..., max_groups=L0, max_rows_per_group=L∞)``: quantiles and medians per group, ``agg``, a
column's count, and ``sum(column, unit_sum_bounds=(lo, hi))`` (each unit's sum in a group clipped).

What is checked: the sensitivity of what each mechanism reads (one unit added moves each group's rank utility by
at most L∞·max(q, 1−q) in at most L0 groups; each group's clipped unit sums by at most max(|lo|, |hi|), the
release-grid vector by L0·Δ in L1 and √L0·Δ in L2), the calibration stated in the release and the ledger, the
argument errors raised before any charge, accuracy on simple data, and the empirical rank error of the bounded
quantile against its rate. Random data comes from fixed numpy seeds and the mechanisms' randomness from
``seeded_noise``, so every assertion is deterministic.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe  # noqa: F401  (registers the .dp accessor)
from dpframe.noise.mechanism import SumGrid
from dpframe.queries import kernels
from dpframe.queries.partitioned import BoundedCellReader, Partitioning
from dpframe.queries.plan import GroupBounds, Target
from dpframe.results import current_release
from dpframe.selection.quantile import QuantileGrid, rank_reach
from dpframe.testing import seeded_noise

CELLS = [f"g{i}" for i in range(8)]


def frame_of(rng: np.random.Generator, rows: int, units: int) -> pd.DataFrame:
    return pd.DataFrame({"uid": rng.integers(0, units, rows), "g": np.array(CELLS)[rng.integers(0, len(CELLS), rows)],
                         "x": rng.normal(2, 8, rows)})


def person(rng: np.random.Generator, uid: int) -> pd.DataFrame:
    """One unit's rows: any number, in any groups (some outside them), any values."""
    m = int(rng.integers(1, 50))
    return pd.DataFrame({"uid": uid, "g": np.array([*CELLS, "elsewhere"])[rng.integers(0, len(CELLS) + 1, m)],
                         "x": rng.normal(0, 30, m)})


def reader(frame: pd.DataFrame, l0: int, linf: int) -> tuple[BoundedCellReader, Partitioning]:
    p = frame.dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=10**6)
    target = Target.of(p)
    return BoundedCellReader(target, GroupBounds(l0, linf)), Partitioning.of(target, ["g"], CELLS)


# --- quantiles ------------------------------------------------------------------------------------------------


def group_values(frame: pd.DataFrame, l0: int, linf: int, seed: int) -> list[np.ndarray[Any, Any]]:
    """The values each group's quantile selects from: the rows the bounded reader keeps, with the protection's key
    and the rows' priorities drawn from ``seeded_noise(seed)`` (the same for a frame and the frame with a unit
    appended: its rows come last, so the others' draw the same words)."""
    read, partitioning = reader(frame, l0, linf)
    with seeded_noise(seed):
        keep = read.rows_in_use(partitioning)
    codes = pd.Index(CELLS).get_indexer(frame["g"])
    return [np.sort(frame["x"].to_numpy()[keep & (codes == g)]) for g in range(len(CELLS))]


def rank_utility(values: np.ndarray[Any, Any], candidates: np.ndarray[Any, Any], q: float) -> np.ndarray[Any, Any]:
    """Smith's utility of each candidate: minus the distance of q·n to its rank interval [#{x < c}, #{x <= c}]."""
    below = np.searchsorted(values, candidates, side="left")
    upto = np.searchsorted(values, candidates, side="right")
    t = q * len(values)
    return -np.maximum(np.maximum(below - t, t - upto), 0.0)


@pytest.mark.parametrize("l0, linf", [(1, 1), (2, 3), (3, 5)])
def test_one_unit_moves_each_groups_rank_utility_by_at_most_linf_in_at_most_l0_groups(l0: int, linf: int) -> None:
    rng = np.random.default_rng(100 + 10 * l0 + linf)
    candidates = np.linspace(-80, 80, 2001)
    for trial in range(25):
        others = frame_of(rng, int(rng.integers(50, 300)), 25)
        before = group_values(others, l0, linf, trial)
        after = group_values(pd.concat([others, person(rng, 1000 + trial)], ignore_index=True), l0, linf, trial)
        changed = 0
        for a, b in zip(before, after):
            assert np.isin(a, b).all() and len(b) - len(a) <= linf  # the unit's kept rows are added, nothing else
            changed += len(b) > len(a)
            for q in (0.1, 0.5, 0.75):
                moved = np.abs(rank_utility(b, candidates, q) - rank_utility(a, candidates, q)).max()
                assert moved <= (len(b) - len(a)) * max(q, 1 - q) + 1e-9
        assert changed <= l0


def uniform_groups(units: int = 300, seed: int = 0) -> pd.DataFrame:
    """Each unit has 2 rows in each of 2 groups (of 4); the values of a group are distinct and evenly spread."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(units):
        for g in rng.choice(4, 2, replace=False):
            rows += [(u, CELLS[g])] * 2
    frame = pd.DataFrame(rows, columns=["uid", "g"])
    frame["x"] = 0.0
    for g in CELLS[:4]:
        mask = (frame["g"] == g).to_numpy()
        frame.loc[mask, "x"] = rng.permutation(np.arange(mask.sum()) * 0.5 + 0.25)
    return frame


def test_bounded_median_has_the_rank_error_of_its_rate() -> None:
    # L0 = 2 and L∞ = 2 keep every row, so each group's exact ranks are known. The median's rate is
    # ε/L0 / (2·L∞·1/2) = 1/4 at ε = 1: Smith's mechanism over evenly spread values puts the answer's rank error
    # at about a two-sided geometric of that rate (mean |error| ~ 1/rate = 4); the k = max_contributions calibration
    # (k = 4 rows, ε whole) has the same rate, and ε alone per group (no division by L0) would halve it.
    frame = uniform_groups()
    p = frame.dp.protect(epsilon=1000.0, privacy_unit="uid", max_contributions=4)
    gb = p.dp.groupby("g", keys=CELLS[:4], max_groups=2, max_rows_per_group=2)
    sorted_values = {g: np.sort(frame.loc[frame["g"] == g, "x"].to_numpy()) for g in CELLS[:4]}
    errors, reach = [], None
    for seed in range(150):
        with seeded_noise(seed):
            medians = gb.median("x", bounds=(0, 400), epsilon=1.0)
        release = current_release(medians)
        assert release is not None
        reach = float(release.rank_reach.iloc[0])
        for g, value in medians.items():
            values = sorted_values[str(g)]
            errors.append(np.searchsorted(values, value) - len(values) / 2)
    error = np.abs(np.array(errors))
    rate = 1.0 / 4
    assert reach == pytest.approx(rank_reach(QuantileGrid.choose(0, 400, False).cells, rate * (1 - 2**-40)))
    assert 0.7 / rate < error.mean() < 1.3 / rate  # 600 answers: the mean's sd is ~ 0.2 / rate
    assert np.mean(error <= reach) >= 0.95


def test_bounded_quantiles_are_calibrated_per_group_and_say_so() -> None:
    frame = uniform_groups(seed=1)
    frame["k"] = (frame["x"] * 2).astype(np.int64)
    p = frame.dp.protect(epsilon=100.0, privacy_unit="uid", max_contributions=4)
    gb = p.dp.groupby("g", keys=CELLS[:4], max_groups=2, max_rows_per_group=3)
    with seeded_noise(0):
        answer = gb.quantile("k", [0.25, 0.9], bounds=(0, 1000), epsilon=1.0)
    release = current_release(answer)
    assert release is not None and list(answer.columns) == [0.25, 0.9]
    # Each level's rate: ε/L0/2 levels over 2·L∞·max(q, 1−q).
    for q in (0.25, 0.9):
        rate = 0.25 / (2 * 3 * max(q, 1 - q)) * (1 - 2**-40)
        cells = QuantileGrid.choose(0, 1000, True).cells
        assert release.rank_reach[q].iloc[0] == pytest.approx(rank_reach(cells, rate))
    line = p.dp.budget.ledger.iloc[-1]
    assert line["query"] == "groupby quantile" and float(line["epsilon"]) == pytest.approx(1.0)
    assert "L0=2" in line["rule"] and "L∞=3" in line["rule"] and "ε/L0" in line["rule"]
    assert "sequential over quantiles" in line["rule"] and "sensitivity 3·max(q, 1-q)" in line["noise"]
    # Accurate at a large ε: ranks 1/4 and 9/10 of each group's n values (k = 0..n-1); rate ≥ 22.5/5.4 ≈ 4, so
    # a rank error of 5 or more has probability ~ 1000·e^-20 per answer.
    with seeded_noise(1):
        sharp = gb.quantile("k", [0.25, 0.9], epsilon=90.0, bounds=(0, 1000))
    n = frame.groupby("g").size().reindex(CELLS[:4])
    assert np.all(np.abs(sharp[0.25] - 0.25 * n) <= 5) and np.all(np.abs(sharp[0.9] - 0.9 * n) <= 5)


def test_bounded_quantiles_on_zcdp_spend_rho_over_l0_per_group() -> None:
    # ρ/L0 per group: ε_g = √(2ρ/L0), √L0 more than the ε/L0 of basic composition.
    p = uniform_groups(seed=2).dp.protect(rho=1.0, privacy_unit="uid", max_contributions=4)
    gb = p.dp.groupby("g", keys=CELLS[:4], max_groups=4, max_rows_per_group=2)
    with seeded_noise(0):
        medians = gb.median("x", bounds=(0, 400), rho=0.5)
    release = current_release(medians)
    assert release is not None
    rate = math.sqrt(2 * 0.5 / 4) / (2 * 2 * 0.5)
    assert float(release.rank_reach.iloc[0]) == pytest.approx(rank_reach(QuantileGrid.choose(0, 400, False).cells,
                                                                         rate), rel=1e-6)
    line = p.dp.budget.ledger.iloc[-1]
    assert float(line["rho"]) == pytest.approx(0.5) and "ρ/L0" in line["rule"]


def bounded_median_releases(l0: int, linf: int, per_group: bool, seed: int) -> tuple[np.ndarray[Any, Any], ...]:
    """The sum over a unit's L0 groups of their median candidates (a post-processing of the release), 400k draws
    on neighbouring data: each group without and with the unit's L∞ rows (above the median), each group's
    selection calibrated as the bounded group-by calibrates it (ε = 1 in all; ``per_group=False``: ε in each
    group, the broken calibration the audit must catch)."""
    from dpframe.noise.mechanism import Privacy
    from dpframe.noise.random import _buffered, current_source
    from dpframe.queries.select import RankSelections
    from dpframe.selection.exponential import sample_permute_and_flip
    from dpframe.selection.quantile import integer_quantile_deficits

    privacy = Privacy("approx", "laplace", Fraction(1), Fraction(0), Fraction(0))
    selections = RankSelections((0.5,), GroupBounds(l0, linf).per_group(privacy).epsilon if per_group
                                else privacy.epsilon, linf)
    grid = QuantileGrid.choose(0, 10, integer=True)
    data = np.array([1, 3, 3, 4, 6, 6, 7, 9])
    out = []
    with seeded_noise(seed):
        source = _buffered(current_source())
        for values in (data, np.append(data, [8] * linf)):
            deficits = integer_quantile_deficits(grid.positions(values.copy()), grid.cells, 0.5, selections.epsilon,
                                                 selections.rows)
            out.append(sum(sample_permute_and_flip(deficits, 400_000, source).astype(np.int64) for _ in range(l0)))
    return tuple(out)


@pytest.mark.parametrize("l0, linf", [(2, 1), (3, 2)])
def test_privacy_audit_of_the_bounded_median_over_a_units_groups(l0: int, linf: int) -> None:
    from privacy_audit import epsilon_lower_bound

    assert epsilon_lower_bound(*bounded_median_releases(l0, linf, True, 31)) <= 1.0


def test_privacy_audit_of_the_bounded_median_has_power() -> None:
    # Positive control: ε in each of 2 groups (not ε/L0) is flagged against the claim of ε = 1.
    from privacy_audit import epsilon_lower_bound

    assert epsilon_lower_bound(*bounded_median_releases(2, 1, False, 32)) > 1.0


# --- agg and a column's count -----------------------------------------------------------------------------------


def test_agg_under_the_bounds_calibrates_every_part_and_shares_one_reservation() -> None:
    frame = uniform_groups(seed=3)
    frame.loc[::5, "x"] = np.nan
    p = frame.dp.protect(epsilon=3.0, privacy_unit="uid", max_contributions=4)
    gb = p.dp.groupby("g", keys=CELLS[:4], max_groups=2, max_rows_per_group=1)
    with seeded_noise(0):
        table = gb.agg({"x": ["count", "mean", "median"]}, bounds=(0, 400), epsilon=3.0)
    assert list(table.columns) == [("x", "count"), ("x", "mean"), ("x", "median")]
    ledger = p.dp.budget.ledger
    assert ledger["epsilon"].sum() == pytest.approx(3.0)
    parts = ledger[ledger["query"].str.startswith("groupby ")]
    assert len(parts) == 3 and all("L0=2" in rule and "L∞=1" in rule for rule in parts["rule"])
    # The count part: discrete Laplace of scale L0·L∞/ε = 2 (not the k = 4 rows of max_contributions).
    release = current_release(table)
    assert release is not None
    assert float(release.std[("x", "count")].iloc[0]) == pytest.approx(
        math.sqrt(2 * math.exp(-1 / 2)) / (1 - math.exp(-1 / 2)), rel=1e-6)


def test_a_columns_count_reads_the_kept_rows_with_a_value() -> None:
    # Each unit keeps 1 group and 1 row: a group's count of x is the number of units whose kept row has a value.
    frame = pd.DataFrame({"uid": np.repeat(np.arange(400), 6), "g": np.tile(CELLS[:3] * 2, 400), "x": 1.0})
    frame.loc[frame["uid"] % 4 == 0, "x"] = np.nan  # a quarter of the units have no value at all
    p = frame.dp.protect(epsilon=200.0, privacy_unit="uid", max_contributions=10)
    gb = p.dp.groupby("g", keys=CELLS[:3], max_groups=1, max_rows_per_group=1)
    with seeded_noise(0):
        counts = gb["x"].count(epsilon=100.0)
        rows = gb.count(epsilon=100.0)
    assert int(counts.sum()) == 300 and int(rows.sum()) == 400  # noise of scale 1/100: exact but w.p. ~e^-100
    assert "L0=1" in p.dp.budget.ledger["rule"].iloc[0]


# --- sums of each unit clipped ----------------------------------------------------------------------------------


def unit_sums(frame: pd.DataFrame, l0: int, grids: list[SumGrid], seed: int) -> list[np.ndarray[Any, Any]]:
    """The exact per-group sums of the clipped unit sums on each grid's release grid (integers), before noise."""
    read, partitioning = reader(frame, l0, 1)  # L∞ plays no part: every row of a kept group is summed
    sums = []
    for grid in grids:
        with seeded_noise(seed):  # the same key for every grid (drawn on first use, then kept)
            exact, _ = read.unit_sums(partitioning, "x", kernels.MomentKernel(0.0, grid))
        sums.append(grid.to_release_grid(exact.sums).astype(float))
    return sums


@pytest.mark.parametrize("l0", [1, 2, 4])
def test_one_unit_moves_the_clipped_unit_sums_by_at_most_the_stated_sensitivity(l0: int) -> None:
    lo, hi = -5.0, 20.0
    privacy = Target.of(pd.DataFrame({"x": [1.0]}).dp.protect(epsilon=1.0)).privacy(0.001, None, None, None)
    coarse = SumGrid.choose(lo, hi, 1, privacy)
    exact = SumGrid.exact(lo, hi, 1)
    assert coarse.shift > 0  # the release grid's rounding is part of the per-group Δ
    rng = np.random.default_rng(l0)
    worst = 0.0
    for trial in range(30):
        others = frame_of(rng, int(rng.integers(50, 300)), 25)
        added = pd.concat([others, person(rng, 999)], ignore_index=True)
        before, before_exact = unit_sums(others, l0, [coarse, exact], trial)
        after, after_exact = unit_sums(added, l0, [coarse, exact], trial)
        change = after - before
        assert np.abs(change).sum() <= l0 * coarse.sensitivity
        assert np.square(change).sum() <= l0 * coarse.sensitivity**2
        # On the data grid: each group by at most max(|lo|, |hi|), in at most L0 groups.
        moved = (after_exact - before_exact) * float(exact.data_step)
        assert np.abs(moved).max() <= max(abs(lo), abs(hi)) and np.count_nonzero(moved) <= l0
        worst = max(worst, float(np.abs(moved).max()))
        # Moving the unit's rows anywhere else: a removal and an addition, twice the bounds at most.
        elsewhere = pd.concat([others, person(rng, 999)], ignore_index=True)
        [shifted] = unit_sums(elsewhere, l0, [coarse], trial)
        assert np.abs(shifted - after).sum() <= 2 * l0 * coarse.sensitivity
    assert worst == max(abs(lo), abs(hi))  # reached: a unit whose sum in a group exceeds the bounds


def test_unit_sums_add_up_each_units_clipped_sum_in_its_kept_groups() -> None:
    rng = np.random.default_rng(9)
    frame = frame_of(rng, 3000, 60)
    frame.loc[::11, "x"] = np.nan  # missing values add nothing to a unit's sum
    lo, hi = -10.0, 25.0
    grid = SumGrid.exact(lo, hi, 1)
    # L0 = 8 keeps every group of every unit: the reference is pandas' per (unit, group) sum, clipped.
    [got] = unit_sums(frame, len(CELLS), [grid], 0)
    got *= float(grid.data_step)
    expected = frame.groupby(["uid", "g"])["x"].sum().clip(lo, hi).groupby(level="g").sum().reindex(CELLS)
    assert np.allclose(got, expected.to_numpy(), atol=60 * float(grid.data_step))
    # L0 = 1: each unit's one group, whose clipped sum is at most max(|lo|, |hi|).
    [one] = unit_sums(frame.assign(other=0), 1, [grid], 0)  # another column: not the data protected above
    assert np.abs(one).sum() * float(grid.data_step) <= 60 * max(-lo, hi) < np.abs(expected).sum()


def test_unit_sum_release_is_calibrated_to_l0_times_the_clipped_sum() -> None:
    rng = np.random.default_rng(4)
    for budget, arguments, std in (
        ({"epsilon": 2.0}, {"epsilon": 0.5}, lambda delta: math.sqrt(2) * 3 * delta / 0.5),
        ({"rho": 2.0}, {"rho": 0.5}, lambda delta: math.sqrt(3 * delta**2 / (2 * 0.5))),
    ):
        p = frame_of(rng, 4000, 100).dp.protect(**budget, privacy_unit="uid", max_contributions=50)
        gb = p.dp.groupby("g", keys=CELLS, max_groups=3, max_rows_per_group=2)
        with seeded_noise(0):
            sums = gb.sum("x", unit_sum_bounds=(-4, 30), **arguments)
        release = current_release(sums)
        assert release is not None and release.bounds == (-4.0, 30.0)
        target = Target.of(p)
        grid = SumGrid.choose(-4.0, 30.0, 1, target.privacy(arguments.get("epsilon"), None, arguments.get("rho"), None))
        # Δ = max(|lo|, |hi|) = 30 on the grid, release steps; L1 = 3Δ (Laplace), L2 = √3·Δ (Gaussian).
        assert grid.sensitivity * grid.release_step == pytest.approx(30, rel=1e-4)
        assert float(release.std) == pytest.approx(std(grid.sensitivity) * grid.release_step, rel=1e-3)
        line = p.dp.budget.ledger.iloc[-1]
        assert "clipped to [-4, 30]" in line["rule"] and "L0=3" in line["rule"]
        assert "max_rows_per_group does not apply" in release.note


def test_unit_sums_are_accurate() -> None:
    # 200 units, 30 rows of 2.0 each spread over 3 groups: each unit's sum in a group is 20, clipped to 15.
    frame = pd.DataFrame({"uid": np.repeat(np.arange(200), 30), "g": np.tile(CELLS[:3], 2000), "x": 2.0})
    p = frame.dp.protect(epsilon=50.0, privacy_unit="uid", max_contributions=30)
    gb = p.dp.groupby("g", keys=CELLS[:3], max_groups=3, max_rows_per_group=1)
    with seeded_noise(0):
        sums = gb.sum("x", unit_sum_bounds=(0, 15), epsilon=50.0)
    # Noise scale 3·15/50 ≈ 0.9: within 20 of 200·15 = 3000 but with probability ~e^-22 per group.
    assert np.all(np.abs(sums - 3000) < 20)


# --- argument errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, error, message", [
    (lambda gb: gb.sum("x", bounds=(0, 1), unit_sum_bounds=(0, 5), epsilon=0.5), ValueError, "not both"),
    (lambda gb: gb.sum("x", unit_sum_bounds=(5, 0), epsilon=0.5), ValueError, "lower < upper"),
    (lambda gb: gb.sum("x", unit_sum_bounds=5, epsilon=0.5), TypeError, "pair"),
    (lambda gb: gb.sum(["x", "y"], unit_sum_bounds=(0, 5), epsilon=0.5), TypeError, "each column"),
    (lambda gb: gb.sum("g", unit_sum_bounds=(0, 5), epsilon=0.5), TypeError, "numeric"),
    (lambda gb: gb.quantile("x", 1.5, bounds=(0, 5), epsilon=0.5), ValueError, r"\[0, 1\]"),
    (lambda gb: gb.median("x", bounds=(5, 0), epsilon=0.5), ValueError, "lower < upper"),
    (lambda gb: gb.median("x", bounds=(0, 5), epsilon=0.5, rho=0.1), ValueError, "pass epsilon="),
    (lambda gb: gb.agg({"x": ["mean", "min"]}, bounds=(0, 5), epsilon=0.5), ValueError, "no private counterpart"),
    (lambda gb: gb.agg({"x": "median"}, bounds=(0, 5), epsilon=0.5, delta=1e-6), ValueError, "pure DP"),
])
def test_argument_errors_come_before_any_charge(call: Any, error: type[Exception], message: str) -> None:
    rng = np.random.default_rng(0)
    frame = frame_of(rng, 500, 20).assign(y=1.0)
    p = frame.dp.protect(epsilon=1.0, delta=1e-5, privacy_unit="uid", max_contributions=5)
    with pytest.raises(error, match=message):
        call(p.dp.groupby("g", keys=CELLS, max_groups=2, max_rows_per_group=2))
    assert p.dp.budget.spent.epsilon.exact == 0 and len(p.dp.budget.ledger) == 0


def test_unit_sum_bounds_need_the_group_bounds() -> None:
    p = frame_of(np.random.default_rng(1), 200, 20).dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=5)
    with pytest.raises(ValueError, match="max_groups"):
        p.dp.groupby("g", keys=CELLS).sum("x", unit_sum_bounds=(0, 5), epsilon=0.5)
    assert p.dp.budget.spent.epsilon.exact == Fraction(0)
