"""Two-dimensional contribution bounds of a group-by: ``groupby(..., max_groups=L0, max_rows_per_group=Linf)``.

The bounding itself (which rows each unit keeps), its stability (keyed by the
unit: another unit's rows change nothing of its choice), the sensitivity of
the exact aggregates it feeds (one unit added changes the per-group count
and clipped-sum vectors by at most L0·L∞·M in L1 norm and √L0·L∞·M in L2),
the noise each query is calibrated with, and the refusals. Random data comes
from fixed numpy seeds; the bounding's randomness from ``seeded_noise`` or a
fixed word stream, so every assertion is deterministic.
"""

from __future__ import annotations

import gc
import math
import weakref
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe  # noqa: F401  (registers the .dp accessor)
from dpframe.errors import RefusedError
from dpframe.noise.mechanism import Privacy
from dpframe.noise.random import SeededRandomSource
from dpframe.protection import units as units_module
from dpframe.protection.units import GroupChoice, keyed_hashes, remembered_group_choice
from dpframe.queries.partitioned import BoundedCellReader, Partitioning
from dpframe.queries.plan import GroupBounds, Target
from dpframe.results import current_release
from dpframe.testing import seeded_noise

KEY = bytes(range(16))
CELLS = pd.Index([f"g{i}" for i in range(12)])
CELL_HASHES = keyed_hashes(CELLS, KEY)


def fixed_words(seed: int) -> Callable[[int], np.ndarray[Any, Any]]:
    """The first ``n`` words of one fixed stream, whatever ``n``: rows appended later get the later words, so
    the rows already there keep their random priorities (the bounding's randomness fixed for them)."""
    stream = SeededRandomSource(seed).words(100_000)
    return lambda n: stream[:n].copy()


def random_rows(rng: np.random.Generator, units: int, rows: int) -> tuple[pd.Index[Any], np.ndarray[Any, Any]]:
    """Units (strings, so some are heavy) and cells (-1 for a few rows outside every group)."""
    unit = pd.Index([f"u{u}" for u in rng.zipf(1.5, rows) % units])
    cells = rng.integers(-1, len(CELLS), rows)
    return unit, cells


def kept(units: pd.Index[Any], cells: np.ndarray[Any, Any], l0: int, linf: int,
         words: Callable[[int], np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    return GroupChoice.of(units, cells, CELL_HASHES, l0, linf, KEY).rows(words)


@pytest.mark.parametrize("l0, linf", [(1, 1), (2, 3), (5, 1), (3, 10)])
def test_each_unit_keeps_at_most_l0_groups_and_linf_rows_in_each(l0: int, linf: int) -> None:
    rng = np.random.default_rng(l0 * 100 + linf)
    for trial in range(20):
        units, cells = random_rows(rng, 30, 2000)
        keep = kept(units, cells, l0, linf, fixed_words(trial))
        frame = pd.DataFrame({"unit": units, "cell": cells})
        assert not keep[cells < 0].any()  # rows outside every group are never used
        used = frame[keep]
        assert used.groupby("unit")["cell"].nunique().max() <= l0
        assert used.groupby(["unit", "cell"]).size().max() <= linf
        # As many rows as the bounds allow: a unit keeps min(its groups, L0) groups, min(its rows, L∞) in each.
        available = frame[cells >= 0].groupby(["unit", "cell"]).size()
        assert used.groupby("unit")["cell"].nunique().equals(available.groupby(level="unit").size().clip(upper=l0))
        in_kept = used.groupby(["unit", "cell"]).size()
        assert in_kept.equals(available.loc[in_kept.index].clip(upper=linf))


def test_rows_within_a_group_are_uniform() -> None:
    # One unit, 4 rows in one group, L∞ = 1: each row kept with probability 1/4 over independent draws.
    units, cells = pd.Index(["u"] * 4), np.zeros(4, dtype=np.int64)
    draws = 8000
    source = SeededRandomSource(11)
    hits = np.zeros(4)
    for _ in range(draws):
        hits += kept(units, cells, 1, 1, source.words)
    # Binomial(8000, 1/4): sd 38.7; 6 sd gives a failure probability < 1e-8 per row.
    assert np.all(np.abs(hits - draws / 4) < 6 * math.sqrt(draws * 0.25 * 0.75))


def test_another_unit_changes_no_one_elses_choice_of_groups() -> None:
    rng = np.random.default_rng(7)
    for trial in range(30):
        units, cells = random_rows(rng, 25, 1500)
        extra_units = pd.Index([f"new{trial}"] * 40)
        extra_cells = rng.integers(0, len(CELLS), 40)
        words = fixed_words(trial)
        before = kept(units, cells, 2, 3, words)
        after = kept(units.append(extra_units), np.r_[cells, extra_cells], 2, 3, words)
        # The same rows of every other unit: groups and (with the same priorities) rows.
        assert np.array_equal(before, after[: len(units)])


def test_a_unit_whose_id_changes_the_columns_dtype_changes_no_one_elses_choice() -> None:
    # One more unit with id 0.5 makes an integer unit column float (and one named "x", object): pandas' own hash
    # of a value depends on that dtype, the keyed hash of the choice must not.
    rng = np.random.default_rng(0)
    units = np.repeat(np.arange(200), 10)
    cells = rng.integers(0, len(CELLS), len(units))
    base = GroupChoice.of(pd.Index(units), cells, CELL_HASHES, 2, 10, KEY).in_kept_cells
    for newcomer in (0.5, "x", 2**70):
        mixed = pd.Index(list(units) + [newcomer])  # float64, object, object
        plus = GroupChoice.of(mixed, np.r_[cells, 0], CELL_HASHES, 2, 10, KEY).in_kept_cells
        assert np.array_equal(base, plus[:-1]), newcomer
    # Nor the groups' own dtype: the same groups as floats hash as they do as integers.
    assert np.array_equal(keyed_hashes(pd.Index([1, 2, 3]), KEY), keyed_hashes(pd.Index([1.0, 2.0, 3.0]), KEY))


def test_a_unit_keeps_the_same_groups_in_every_query() -> None:
    # Different row priorities (two queries) and a different row order: the same groups per unit.
    rng = np.random.default_rng(3)
    units, cells = random_rows(rng, 40, 3000)
    order = rng.permutation(len(units))
    first = kept(units, cells, 2, 1, fixed_words(1))
    second = kept(units[order], cells[order], 2, 1, fixed_words(2))

    def groups(units: pd.Index[Any], cells: np.ndarray[Any, Any], keep: np.ndarray[Any, Any]) -> set[Any]:
        return set(zip(units[keep], cells[keep]))

    assert groups(units, cells, first) == groups(units[order], cells[order], second)


def test_the_choice_of_groups_depends_on_the_protections_key() -> None:
    # A unit in all 12 groups keeps 3: another key, another choice (not always the same groups for everyone).
    units, cells = pd.Index(["u"] * 12), np.arange(12)
    choices = {tuple(np.flatnonzero(GroupChoice.of(units, cells, keyed_hashes(CELLS, key), 3, 1, key).in_kept_cells))
               for key in (bytes([i]) * 16 for i in range(20))}
    assert len(choices) > 10


def exact_aggregates(frame: pd.DataFrame, l0: int, linf: int, seed: int, bounds: tuple[float, float]
                     ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The exact per-group counts (through the query's reader) and clipped sums (of the rows it keeps), before
    noise, with the protection's key and the row priorities drawn from ``seeded_noise(seed)``."""
    p = frame.dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=10**6)
    target = Target.of(p)
    reader = BoundedCellReader(target, GroupBounds(l0, linf))
    partitioning = Partitioning.of(target, ["g"], list(CELLS))
    with seeded_noise(seed):  # the key (first use), then the rows' priorities: the same for both frames
        mask = reader.rows_in_use(partitioning)
    counts, _ = reader.counts(partitioning)  # other rows maybe, but as many in each group
    codes = CELLS.get_indexer(frame["g"])
    used = mask & (codes >= 0)
    sums = np.bincount(codes[used], weights=frame["x"].clip(*bounds).to_numpy()[used], minlength=len(CELLS))
    assert np.array_equal(np.bincount(codes[used], minlength=len(CELLS)), counts)
    return counts.astype(float), sums


@pytest.mark.parametrize("l0, linf", [(1, 2), (3, 2), (4, 5)])
def test_one_unit_changes_the_exact_aggregates_by_at_most_the_stated_sensitivity(l0: int, linf: int) -> None:
    rng = np.random.default_rng(l0 * 10 + linf)
    lo, hi = -3.0, 5.0
    magnitude = max(abs(lo), abs(hi))
    worst = np.zeros(4)
    for trial in range(40):
        n = int(rng.integers(50, 400))
        others = pd.DataFrame({"uid": rng.integers(0, 30, n), "g": CELLS[rng.integers(0, 12, n)],
                               "x": rng.normal(1, 6, n)})
        # The added unit: any number of rows, in any groups (some outside them), any values; in the first trial
        # more than L∞ rows in every group, so that whichever L0 groups it keeps, it reaches the bound.
        m = int(rng.integers(1, 60))
        groups = np.r_[CELLS, ["elsewhere"]][rng.integers(0, 13, m)] if trial else np.repeat(CELLS, linf + 1)
        person = pd.DataFrame({"uid": 1000 + trial, "g": groups, "x": rng.normal(0, 20, len(groups))})
        counts, sums = exact_aggregates(others, l0, linf, trial, (lo, hi))
        counts2, sums2 = exact_aggregates(pd.concat([others, person], ignore_index=True), l0, linf, trial, (lo, hi))
        change = np.array([np.abs(counts2 - counts).sum(), np.linalg.norm(counts2 - counts),
                           np.abs(sums2 - sums).sum(), np.linalg.norm(sums2 - sums)])
        assert change[0] <= l0 * linf and change[1] <= math.sqrt(l0) * linf + 1e-9
        assert change[2] <= l0 * linf * magnitude + 1e-9
        assert change[3] <= math.sqrt(l0) * linf * magnitude + 1e-9
        worst = np.maximum(worst, change)
    # The bounds are reached (a unit with many rows in many groups): they are the sensitivities, not slack ones.
    assert worst[0] == l0 * linf


def visits(rows: int = 6000, people: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"uid": rng.integers(0, people, rows), "g": CELLS[rng.integers(0, 12, rows)],
                         "x": rng.uniform(0, 10, rows)})


def test_laplace_count_is_calibrated_to_l0_times_linf() -> None:
    p = visits().dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=50)
    with seeded_noise(0):
        counts = p.dp.groupby("g", keys=list(CELLS), max_groups=3, max_rows_per_group=2).count(epsilon=0.5)
    release = current_release(counts)
    assert release is not None
    # Discrete Laplace of scale L0·L∞/ε = 12: std ≈ √2·12 (the discrete one slightly less).
    assert 16.5 < float(release.std) <= math.sqrt(2) * 12
    line = p.dp.budget.ledger.iloc[-1]
    assert "L0=3" in line["rule"] and "L∞=2" in line["rule"] and "sensitivity" in line["rule"]


def test_gaussian_count_is_calibrated_to_sqrt_l0_times_linf() -> None:
    p = visits().dp.protect(rho=1.0, privacy_unit="uid", max_contributions=50)
    with seeded_noise(0):
        counts = p.dp.groupby("g", keys=list(CELLS), max_groups=4, max_rows_per_group=3).count(rho=0.5)
    release = current_release(counts)
    assert release is not None
    # σ² = (√L0·L∞)²/(2ρ) = 36: σ = 6, not the L0·L∞ = 12 of Laplace's L1 sensitivity.
    assert float(release.std) == pytest.approx(6.0, rel=1e-3)


def test_gaussian_on_an_epsilon_delta_budget_is_calibrated_to_the_exact_vector_profile() -> None:
    from dpframe.noise.calibrate import analytic_gaussian_sigma, discrete_gaussian_delta, discrete_gaussian_vector_delta

    privacy = Privacy("approx", "gaussian", Fraction(1), Fraction(1, 10**6), Fraction(0))
    one = GroupBounds(1, 10).noise(privacy, 10)
    # One group per unit: one coordinate moves by at most 10, the scalar discrete Gaussian's exact profile.
    assert discrete_gaussian_delta(float(one.param), 1.0, 10) <= 1e-6
    assert one == privacy.noise(10)
    # Four groups of 5 rows: L2 = 10 as well, and the same sigma as the analytic Gaussian's, where the zCDP
    # conversion needs 7% more.
    four = GroupBounds(4, 5).noise(privacy, 5)
    assert discrete_gaussian_vector_delta(float(four.param), 1.0, 5, 4) <= 1e-6
    assert float(four.param) ** 0.5 == pytest.approx(analytic_gaussian_sigma(1.0, 1e-6, 10.0), rel=1e-6)
    assert four.std < privacy.l2_noise(100).std / 1.05


def test_the_vector_delta_is_the_worst_case_over_shifts() -> None:
    from dpframe.noise.calibrate import discrete_gaussian_vector_delta

    # Shifting fewer coordinates, or by less, is never worse: the hockey-stick divergence computed directly
    # over the product pmf for every integer shift (v1, v2) with |v| <= 3 stays below the (3, 3) value.
    sigma2, epsilon = 9.0, 0.5
    y = np.arange(-80, 81)
    pmf = np.exp(-y * y / (2 * sigma2))
    pmf /= pmf.sum()

    def hockey(v1: int, v2: int) -> float:
        shifted1, shifted2 = np.roll(pmf, v1), np.roll(pmf, v2)  # the window's ends carry no mass
        joint = np.outer(pmf, pmf) - math.exp(epsilon) * np.outer(shifted1, shifted2)
        return float(joint[joint > 0].sum())

    worst = discrete_gaussian_vector_delta(sigma2, epsilon, 3, 2)
    assert hockey(3, 3) == pytest.approx(worst, rel=1e-9)
    for v1 in range(-3, 4):
        for v2 in range(-3, 4):
            assert hockey(v1, v2) <= worst * (1 + 1e-9)


@pytest.mark.parametrize("sigma2, epsilon, shift, coordinates", [(2.0, 1.0, 1, 3), (9.0, 0.5, 3, 2), (40.0, 1.0, 2, 5)])
def test_the_vector_delta_through_the_theta_bound_matches_the_direct_convolution(
        sigma2: float, epsilon: float, shift: int, coordinates: int) -> None:
    from dpframe.noise.calibrate import discrete_gaussian_vector_delta

    # The sum of the noises' pmf by direct convolution, and the series over it: the bound used is above it
    # (it is an upper bound) and within its stated 1e-9.
    y = np.arange(-400, 401)
    one = np.exp(-y * y / (2 * sigma2))
    one /= one.sum()
    pmf = one
    for _ in range(coordinates - 1):
        pmf = np.convolve(pmf, one)
    total = np.arange(-400 * coordinates, 400 * coordinates + 1)
    excess = (shift * (2.0 * total + coordinates * shift) - 2 * epsilon * sigma2) / (2 * sigma2)
    direct = float(np.sum(pmf[excess > 0] * -np.expm1(-excess[excess > 0])))
    bound = discrete_gaussian_vector_delta(sigma2, epsilon, shift, coordinates)
    assert direct * (1 - 1e-12) <= bound <= direct * (1 + 1e-9)


def test_bounded_aggregates_are_accurate() -> None:
    frame = visits(rows=20000, people=100, seed=4)
    p = frame.dp.protect(epsilon=100.0, privacy_unit="uid", max_contributions=10**6)
    gb = p.dp.groupby("g", keys=list(CELLS), max_groups=12, max_rows_per_group=10**4)  # keeps every row
    with seeded_noise(1):
        counts = gb.count(epsilon=20.0)
        sums = gb.sum("x", bounds=(0, 10), epsilon=20.0)
        means = gb.mean("x", bounds=(0, 10), epsilon=20.0)
    exact = frame.groupby("g")["x"]
    # Noise scales: counts 12·10^4/20 = 6000 (sd ~8500), sums 10x that: within 6 sd.
    assert np.all(np.abs(counts - exact.size().reindex(CELLS)) < 6 * 8500)
    assert np.all(np.abs(sums - exact.sum().reindex(CELLS)) < 6 * 85000)
    assert means.between(0, 10).all()


def test_bounding_makes_the_released_aggregates_smaller() -> None:
    # Every unit keeps 1 group x 1 row: the counts add up to the number of units in a group, not of rows.
    frame = pd.DataFrame({"uid": np.repeat(np.arange(300), 20), "g": CELLS[np.arange(6000) % 3], "x": 1.0})
    p = frame.dp.protect(epsilon=100.0, privacy_unit="uid", max_contributions=10**6)
    with seeded_noise(2):
        counts = p.dp.groupby("g", keys=list(CELLS), max_groups=1, max_rows_per_group=1).count(epsilon=50.0)
    # Discrete Laplace of scale 1/50: every count exact but with probability ~e^-50.
    assert int(counts.sum()) == 300


@pytest.mark.parametrize("arguments, message", [
    ({"max_groups": 2}, "both"),
    ({"max_rows_per_group": 2}, "both"),
    ({"max_groups": 0, "max_rows_per_group": 1}, "integer >= 1"),
    ({"max_groups": 1.5, "max_rows_per_group": 1}, "integer >= 1"),
    ({"max_groups": True, "max_rows_per_group": 1}, "integer >= 1"),
])
def test_bad_bounds_are_refused(arguments: dict[str, Any], message: str) -> None:
    p = visits().dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=5)
    with pytest.raises(ValueError, match=message):
        p.dp.groupby("g", keys=list(CELLS), **arguments)


def test_bounded_dp_is_refused() -> None:
    p = visits().dp.protect(epsilon=1.0, neighbours="replace")
    with pytest.raises(RefusedError, match="bounded DP"):
        p.dp.groupby("g", keys=list(CELLS), max_groups=2, max_rows_per_group=2)


def test_released_sums_on_the_release_grid_stay_within_the_stated_sensitivity() -> None:
    # A coarse release grid (shift > 0): rounding moves each changed group by one more step, which the per-group
    # Δ = grid.sensitivity includes, so the integer vector moves by at most L0·Δ (L1) and √L0·Δ (L2).
    from dpframe.noise.mechanism import Privacy, SumGrid
    from dpframe.queries import kernels

    l0, linf = 3, 4
    privacy = Privacy("approx", "laplace", Fraction(1, 1000), Fraction(0), Fraction(0))
    grid = SumGrid.choose(-3.0, 5.0, linf, privacy)
    assert grid.shift > 0
    rng = np.random.default_rng(5)

    def released(frame: pd.DataFrame, seed: int) -> np.ndarray[Any, Any]:
        p = frame.dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=10**6)
        target = Target.of(p)
        with seeded_noise(seed):
            exact, _ = BoundedCellReader(target, GroupBounds(l0, linf)).moments(
                Partitioning.of(target, ["g"], list(CELLS)), "x", kernels.MomentKernel(0.0, grid))
        return grid.to_release_grid(exact.sums).astype(float)

    for trial in range(30):
        n, m = int(rng.integers(50, 300)), int(rng.integers(1, 40))
        others = pd.DataFrame({"uid": rng.integers(0, 20, n), "g": CELLS[rng.integers(0, 12, n)],
                               "x": rng.normal(1, 6, n)})
        person = pd.DataFrame({"uid": 999, "g": CELLS[rng.integers(0, 12, m)], "x": rng.normal(0, 20, m)})
        change = released(pd.concat([others, person], ignore_index=True), trial) - released(others, trial)
        assert np.abs(change).sum() <= l0 * grid.sensitivity
        assert np.square(change).sum() <= l0 * grid.sensitivity**2


def test_k_rows_spread_over_k_groups_stay_within_the_charged_sum_sensitivity() -> None:
    """A k-bounded group-by sum: one unit's k rows in k groups can round each group's sum one step further on the
    release grid; the charged L1 sensitivity (SumGrid.spread_sensitivity) covers it, the single sum's did not."""
    from dpframe.accounting.budget import Budget
    from dpframe.noise.mechanism import SumGrid, resolve

    grid = SumGrid.choose(-0.001, 0.001, 3, resolve(Budget(epsilon=1.0), 1.0, None, None, None))
    step = 2**grid.shift
    assert grid.shift and 0 < grid.data_bound % step < step / 2  # a bound off the release grid
    bases = np.arange(step, dtype=np.int64)
    # Each of 3 groups gets one row of the largest value, added to a sum at the worst position on the grid.
    per_group = int(np.abs(grid.to_release_grid(bases + grid.data_bound) - grid.to_release_grid(bases)).max())
    assert 3 * per_group > grid.sensitivity  # the one-sum sensitivity would under-charge
    assert 3 * per_group <= grid.spread_sensitivity(3)


def test_groups_are_chosen_once_per_data_and_grouping_and_rows_at_each_query() -> None:
    # 30 units with 4 rows in each of 3 groups; grouped by g, or by h (the same keys, the groups reversed).
    frame = pd.DataFrame({"uid": np.repeat(np.arange(30), 12), "g": CELLS[np.tile(np.repeat([0, 1, 2], 4), 30)],
                          "h": CELLS[np.tile(np.repeat([2, 1, 0], 4), 30)], "x": 1.0})
    p = frame.dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=10**6)
    target = Target.of(p)
    reader = BoundedCellReader(target, GroupBounds(2, 1))
    units = pd.Index(frame["uid"])
    for column in ("g", "h", "g"):  # each grouping's own choice, not the last one's
        partitioning = Partitioning.of(target, [column], list(CELLS))
        with seeded_noise(5):
            draws = [reader.rows_in_use(partitioning) for _ in range(100)]
        key = target.protection.group_bounding_key()
        in_kept_cells = GroupChoice.of(units, CELLS.get_indexer(frame[column]), keyed_hashes(CELLS, key), 2, 1,
                                       key).in_kept_cells
        # The kept groups are the same at every query, the rows in them drawn afresh: after 100 draws of one of
        # 4 rows, every row of a kept group has been used (all but with probability 8 * 30 * (3/4)^100 < 1e-10).
        assert all(not (draw & ~in_kept_cells).any() for draw in draws)
        assert all(draw.sum() == 60 for draw in draws)
        assert np.array_equal(np.logical_or.reduce(draws), in_kept_cells)


def test_a_group_choice_is_made_once_and_dropped_with_its_data() -> None:
    p = visits().dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=50)
    data = Target.of(p).obj
    key = Target.of(p).protection.group_bounding_key()
    codes = CELLS.get_indexer(data["g"])
    choices = [remembered_group_choice(data, ("g",), CELLS.rename("g"), codes.copy, 3, 2, key) for _ in range(2)]
    assert choices[1] is choices[0]
    assert not choices[0].in_kept_cells.flags.writeable  # shared by the queries: no one changes it
    collected = weakref.ref(data)
    del p, data
    gc.collect()
    assert collected() is None and not any(known.data() is None for known in units_module._REMEMBERED.values())
