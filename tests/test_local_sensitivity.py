"""Local sensitivity: smooth-sensitivity median, propose-test-release, sample-and-aggregate.

* The reach of the median (and so A(k), the smooth bound and the distance to
  instability) is checked against brute force over every data set within a
  few rows, on a small domain.
* Statistical tests are seeded (deterministic) or sized so that a correct
  implementation fails far less than once in a million runs.
* Privacy audits run the mechanisms' own release functions many times on
  neighbouring data sets (tests/privacy_audit.py), each with a positive control.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from privacy_audit import epsilon_lower_bound, ranks
from scipy import stats

import dpframe
from dpframe.noise.mechanism import Privacy
from dpframe.queries import local_sensitivity as ls
from dpframe.testing import NotPrivateWarning, seeded_noise

DOMAIN = (0.0, 4.0)


def _median(values: tuple[float, ...]) -> float:
    return ls.lower_median(np.array(sorted(values)), DOMAIN[0])


def _neighbours(values: tuple[float, ...], rows: int = 1) -> set[tuple[float, ...]]:
    """Every data set (sorted tuple) reachable by adding or removing up to ``rows`` rows (values on the domain)."""
    found = {values}
    frontier = {values}
    for _ in range(rows):
        step = set()
        for current in frontier:
            for i in range(len(current)):
                step.add(current[:i] + current[i + 1:])
            for v in range(int(DOMAIN[1]) + 1):
                step.add(tuple(sorted(current + (float(v),))))
        frontier = step - found
        found |= step
    return found


def _small_data_sets() -> list[tuple[float, ...]]:
    rng = np.random.default_rng(5)  # test data only; no noise
    sets = [tuple(sorted(rng.integers(0, 5, size=n).astype(float))) for n in range(8) for _ in range(6)]
    return sorted(set(sets))


@pytest.mark.parametrize("values", _small_data_sets())
def test_median_reach_matches_brute_force(values: tuple[float, ...]) -> None:
    x = np.array(values)
    reachable = {values}
    for j in range(1, 4):
        reachable = set().union(*(_neighbours(v) for v in reachable))
        medians = [_median(v) for v in reachable]
        width = ls.median_reach_widths(x, *DOMAIN, 1, np.array([j - 1]))[0]
        assert width == max(medians) - min(medians)


@pytest.mark.parametrize("contributions", [1, 2])
@pytest.mark.parametrize("values", _small_data_sets()[::3])
def test_smooth_bound_is_smooth_and_above_local_sensitivity(values: tuple[float, ...], contributions: int) -> None:
    beta = Fraction(3, 10)
    noise = ls.SmoothNoise.smoothing(Fraction(1), beta, *DOMAIN)
    x = np.array(values)
    s_x = ls.smooth_sensitivity(x, *DOMAIN, contributions, noise)
    neighbours = _neighbours(values, contributions) - {values}
    local = max(abs(_median(y) - _median(values)) for y in neighbours)
    assert s_x >= Fraction(local) and s_x >= noise.floor
    for y in neighbours:
        s_y = ls.smooth_sensitivity(np.array(y), *DOMAIN, contributions, noise)
        assert s_x <= s_y * Fraction(math.exp(0.3)) * (1 + Fraction(1, 2**50))  # exact, but e^0.3 is a float
        # The distance to instability has sensitivity 1, for the median and the mean.
        ks = np.arange(len(values) // contributions + 6)
        ky = np.arange(len(y) // contributions + 6)
        for b in (0.5, 1.0, 2.0, 3.5):
            dx = ls.stability_distance(ls.median_reach_widths(x, *DOMAIN, contributions, ks), b)
            dy = ls.stability_distance(ls.median_reach_widths(np.array(y), *DOMAIN, contributions, ky), b)
            assert abs(dx - dy) <= 1
            mx = ls.stability_distance(ls.mean_widths(len(values), *DOMAIN, contributions, ks), b / 4)
            my = ls.stability_distance(ls.mean_widths(len(y), *DOMAIN, contributions, ky), b / 4)
            assert abs(mx - my) <= 1


@pytest.mark.parametrize("values", _small_data_sets()[1::4])
def test_mean_widths_bound_local_sensitivity_nearby(values: tuple[float, ...]) -> None:
    def mean(v: tuple[float, ...]) -> float:
        return float(np.mean(v)) if v else sum(DOMAIN) / 2

    within = {values}
    for k in range(3):
        bound = ls.mean_widths(len(values), *DOMAIN, 1, np.array([k]))[0]
        for y in within:
            assert max(abs(mean(z) - mean(y)) for z in _neighbours(y)) <= bound + 1e-12
        within = set().union(*(_neighbours(v) for v in within))


# ---------------------------------------------------------------------------
# noise distributions
# ---------------------------------------------------------------------------


def _rounded_laplace_probabilities(center: Fraction, width: Fraction, cells: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """P(round(center + width L) = k), straight from the Laplace CDF (cells [k - 1/2, k + 1/2))."""
    edges = (np.r_[cells - 0.5, cells[-1] + 0.5] - float(center)) / float(width)
    return np.diff(stats.laplace.cdf(edges))


@pytest.mark.parametrize("center, width", [
    (Fraction(7, 3), Fraction(2)),          # the doctest's case
    (Fraction(1, 2), Fraction(3, 4)),       # on a cell edge: the upward gap is 1, the downward 0
    (Fraction(0), Fraction(1, 5)),          # narrow: mostly the central cell
    (Fraction(10**6 + 1, 7), Fraction(41, 3)),
    (Fraction(1, 3) + Fraction(1, 2**80), Fraction(5, 2)),  # a gap beyond int64: the Python-int coin
])
def test_rounded_laplace_has_the_exact_law(center: Fraction, width: Fraction) -> None:
    size = 100_000 if center.denominator < 2**62 else 4_000
    with seeded_noise(int(center * 1000) % 97):
        k = ls.rounded_laplace(center, width, size)
    cells = np.arange(int(center) - 60 * math.ceil(width) - 2, int(center) + 60 * math.ceil(width) + 3)
    assert k.min() >= cells[0] and k.max() <= cells[-1]
    expected = _rounded_laplace_probabilities(center, width, cells) * size
    observed = np.bincount(k - cells[0], minlength=cells.size).astype(float)
    # Pool the sparse tails so every expected count is at least 5.
    keep = expected >= 5
    observed = np.r_[observed[keep], observed[~keep].sum()]
    expected = np.r_[expected[keep], expected[~keep].sum()]
    expected *= observed.sum() / expected.sum()
    assert stats.chisquare(observed, expected).pvalue > 1e-6


# ---------------------------------------------------------------------------
# accuracy and the accessor
# ---------------------------------------------------------------------------


def _ages(n: int = 10_000) -> pd.DataFrame:
    return pd.DataFrame({"age": np.arange(n) % 61 + 20})


def test_smooth_median_is_accurate_and_charged() -> None:
    p = _ages().dp.protect(epsilon=10.0, delta=1e-5)
    with seeded_noise(10):
        medians = [p["age"].dp.median(method="smooth", bounds=(0, 125), epsilon=1.0, delta=1e-6) for _ in range(10)]
    assert all(abs(m - 50) < 5 for m in medians)
    assert all(float(m * 2**14).is_integer() for m in medians)  # on the grid 2^-14 of bounds (0, 125)
    spent = p.dp.budget.spent
    assert spent.epsilon.exact == 10 and spent.delta.exact == Fraction(10, 10**6)
    ledger = p.dp.budget.ledger
    assert set(ledger["mechanism"]) == {"smooth sensitivity (Nissim, Raskhodnikova & Smith 2007)"}
    assert math.isnan(medians[0].release.std)  # the scale is private: no interval


def test_smooth_releases_have_the_calibrated_spread() -> None:
    x = np.sort(np.arange(2001.0) % 101)
    noise = ls.SmoothNoise.of(Privacy("approx", "laplace", Fraction(1), Fraction(1, 10**6), Fraction(0)), 0.0, 100.0)
    with seeded_noise(11):
        out = ls.smooth_releases(x, 0.0, 100.0, 1, noise, size=100_000)
    scale = float(ls.smooth_sensitivity(x, 0.0, 100.0, 1, noise) / noise.alpha)
    assert abs(np.median(out) - 50) < 0.05 * scale
    assert abs(out.std() / (math.sqrt(2) * scale) - 1) < 0.03


def test_smooth_median_needs_delta_and_an_approximate_budget() -> None:
    p = _ages().dp.protect(epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="needs delta=.*method='exponential'"):
        p["age"].dp.median(method="smooth", bounds=(0, 125), epsilon=1.0)
    z = _ages(9_000).dp.protect(rho=1.0)
    with pytest.raises(ValueError, match="zCDP"):
        z["age"].dp.median(method="smooth", bounds=(0, 125), epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="zCDP"):
        z["age"].dp.median(method="ptr", sensitivity=1.0, bounds=(0, 125), epsilon=1.0, delta=1e-6)
    assert p.dp.budget.spent.epsilon.exact == 0 and z.dp.budget.spent.rho.exact == 0


def test_ptr_refuses_a_median_whose_neighbours_jump() -> None:
    frame = pd.DataFrame({"x": [0.0] * 500 + [100.0] * 500})
    p = frame.dp.protect(epsilon=100.0, delta=1e-3)
    with seeded_noise(12):
        for _ in range(100):
            with pytest.raises(dpframe.ProposalRefusedError, match="charged") as refusal:
                p["x"].dp.median(method="ptr", sensitivity=1.0, bounds=(0, 100), epsilon=1.0, delta=1e-5)
            assert refusal.value.cost.epsilon == 1
    assert p.dp.budget.spent.epsilon.exact == 100  # every refusal was charged
    assert len(p.dp.budget.ledger) == 100


def test_ptr_passes_stable_data_and_its_intervals_cover() -> None:
    p = _ages(20_000).dp.protect(epsilon=1000.0, delta=1e-2)
    hits = {"median": 0, "mean": 0}
    truth = {"median": 50.0, "mean": float(np.clip(_ages(20_000)["age"], 0, 125).mean())}
    with seeded_noise(13):
        for _ in range(200):
            for statistic, b in (("median", 1.0), ("mean", 0.01)):
                m = p["age"].dp.propose_test_release(statistic, sensitivity=b, bounds=(0, 125), epsilon=1.0,
                                                     delta=1e-6)
                hits[statistic] += m.release.lower <= truth[statistic] <= m.release.upper
    # 95% intervals: 200 draws cover fewer than 170 times with probability < 1e-6.
    assert hits["median"] >= 170 and hits["mean"] >= 170


def test_ptr_mean_refuses_a_small_data_set() -> None:
    p = pd.DataFrame({"x": np.arange(20.0)}).dp.protect(epsilon=10.0, delta=1e-3)
    with seeded_noise(14), pytest.raises(dpframe.ProposalRefusedError):
        p["x"].dp.propose_test_release("mean", sensitivity=0.01, bounds=(0, 100), epsilon=1.0, delta=1e-6)


def _regression(n: int = 40_000) -> pd.DataFrame:
    rng = np.random.default_rng(0)  # test data only
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"x": x, "y": 2.5 * x + 1 + rng.normal(0, 3, n)})


def test_sample_and_aggregate_estimates_a_slope() -> None:
    p = _regression().dp.protect(epsilon=10.0)
    with seeded_noise(15):
        fits = [p.dp.sample_and_aggregate(lambda b: np.polyfit(b["x"], b["y"], 1)[0], bounds=(0, 5), epsilon=1.0,
                                          blocks=200) for _ in range(5)]
        chosen = p.dp.sample_and_aggregate(lambda b: np.polyfit(b["x"], b["y"], 1), bounds={"slope": (0, 5),
                                           "intercept": (-5, 5)}, epsilon=1.0)
    assert all(abs(f - 2.5) < 0.15 for f in fits)
    assert list(chosen.index) == ["slope", "intercept"] and abs(chosen["slope"] - 2.5) < 0.3
    assert "k=200 blocks" in p.dp.budget.ledger["noise"].iloc[0]
    # blocks=None: a tenth counts the units, then about sqrt(40000) = 200 blocks.
    assert list(p.dp.budget.ledger["query"].iloc[-2:]) == ["units for sample_and_aggregate", "sample_and_aggregate"]
    assert p.dp.budget.spent.epsilon.exact == 6


def test_sample_and_aggregate_keeps_each_unit_in_one_block_and_charges_first() -> None:
    users = pd.DataFrame({"user": np.repeat(np.arange(300), 4), "v": 1.0})
    p = users.dp.protect(epsilon=1.0, privacy_unit="user", max_contributions=4)
    seen: list[bool] = []

    def whole_units(block: pd.DataFrame) -> float:
        assert p.dp.budget.spent.epsilon.exact == 1  # charged before any block is read
        seen.append(bool((block.groupby("user").size() == 4).all()))
        return 1.0

    p.dp.sample_and_aggregate(whole_units, bounds=(0, 2), epsilon=1.0, blocks=30)
    assert len(seen) == 30 and all(seen)


def test_sample_and_aggregate_hides_failures_of_func() -> None:
    p = _regression(2_000).dp.protect(epsilon=10.0)

    def fragile(block: pd.DataFrame) -> float:
        if block["x"].iloc[0] > 5:
            raise ZeroDivisionError("data-dependent failure")
        warnings.warn("a warning about the block", RuntimeWarning)
        return float("nan") if block["x"].iloc[0] > 4 else 10.0

    with seeded_noise(16), warnings.catch_warnings():
        warnings.simplefilter("error")  # a leaked warning would fail the test
        warnings.simplefilter("ignore", NotPrivateWarning)
        value = p.dp.sample_and_aggregate(fragile, bounds=(0, 1), epsilon=5.0, blocks=50)
        never = p.dp.sample_and_aggregate(lambda b: 1 / 0, bounds=(0, 1), epsilon=5.0, blocks=50)
    assert 0.5 <= value <= 1.05  # failing blocks count as the midpoint 0.5, the rest clipped to 1
    assert abs(never - 0.5) < 0.05


@pytest.mark.parametrize(
    "call",
    [
        lambda p: p["x"].dp.median(method="nearest", bounds=(0, 1), epsilon=0.1),
        lambda p: p["x"].dp.median(method="ptr", bounds=(0, 1), epsilon=0.1, delta=1e-6),
        lambda p: p["x"].dp.median(method="ptr", sensitivity=-1, bounds=(0, 1), epsilon=0.1, delta=1e-6),
        lambda p: p["x"].dp.median(method="ptr", sensitivity=0.1, bounds=(0, 1), epsilon=0.1),
        lambda p: p["x"].dp.median(method="smooth", bounds=(1, 0), epsilon=0.1, delta=1e-6),
        lambda p: p["x"].dp.median(method="smooth", bounds=(0, 1), epsilon=0.1),
        lambda p: p["x"].dp.median(method="smooth", bounds=(0, 1), epsilon=1e-12, delta=1e-6),
        lambda p: p["x"].dp.median(method="smooth", sensitivity=1.0, bounds=(0, 1), epsilon=0.1),
        lambda p: p["x"].dp.median(method="smooth", bounds=(0, 1), epsilon=0.1, delta=1.5),
        lambda p: p["x"].dp.median(bounds=(0, 1), epsilon=0.1, delta=1e-6),
        lambda p: p["x"].dp.median(method="smooth", bounds=(0, 1), rho=0.1),
        lambda p: p["x"].dp.propose_test_release("mode", sensitivity=1.0, bounds=(0, 1), epsilon=0.1, delta=1e-6),
        lambda p: p["x"].dp.propose_test_release("mean", sensitivity=1e-300, bounds=(0, 1), epsilon=0.1, delta=1e-6),
        lambda p: p["s"].dp.median(method="smooth", bounds=(0, 1), epsilon=0.1, delta=1e-6),
        lambda p: p.dp.sample_and_aggregate("mean", bounds=(0, 1), epsilon=0.1),
        lambda p: p.dp.sample_and_aggregate(len, bounds=(0, 1), epsilon=0.1, blocks=1),
        lambda p: p.dp.sample_and_aggregate(len, bounds={}, epsilon=0.1),
        lambda p: p.dp.sample_and_aggregate(len, bounds=[(0, 1), (2, 1)], epsilon=0.1),
        lambda p: p.dp.sample_and_aggregate(len, bounds=(0, 1), epsilon=50.0),
    ],
)
def test_bad_input_costs_nothing(call: Any) -> None:
    p = pd.DataFrame({"x": np.arange(100.0), "s": ["a"] * 100}).dp.protect(epsilon=1.0, delta=1e-5)
    with pytest.raises((ValueError, TypeError, dpframe.BudgetExceededError)):
        call(p)
    assert p.dp.budget.spent.epsilon.exact == 0 and len(p.dp.budget.ledger) == 0


# ---------------------------------------------------------------------------
# empirical privacy audits
# ---------------------------------------------------------------------------

N_AUDIT = 400_000


def _audit(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], delta: float = 0.0) -> float:
    return epsilon_lower_bound(*ranks(a, b), delta=delta)


# x: median 1 with local sensitivity 1; adding a 100 makes the neighbours' medians jump by 99.
JUMP_X = np.array([0.0] * 6 + [1.0] + [100.0] * 6)
JUMP_Y = np.sort(np.r_[JUMP_X, 100.0])


def test_audit_smooth_median() -> None:
    delta = 1e-2
    noise = ls.SmoothNoise.of(Privacy("approx", "laplace", Fraction(1), Fraction(delta), Fraction(0)), 0.0, 100.0)
    with warnings.catch_warnings(), seeded_noise(20):
        warnings.simplefilter("ignore", NotPrivateWarning)
        a = ls.smooth_releases(JUMP_X, 0.0, 100.0, 1, noise, N_AUDIT)
        b = ls.smooth_releases(JUMP_Y, 0.0, 100.0, 1, noise, N_AUDIT)
        # Positive control: noise scaled to the local sensitivity A(0) only (r ~ 0, beta ~ infinity) is caught.
        broken = dataclasses.replace(noise, ratio=Fraction(1, 2**60))
        c = ls.smooth_releases(JUMP_X, 0.0, 100.0, 1, broken, N_AUDIT)
        d = ls.smooth_releases(JUMP_Y, 0.0, 100.0, 1, broken, N_AUDIT)
    assert _audit(a, b, delta) <= 1.0
    assert _audit(c, d, delta) > 1.5


def _ptr_outcomes(x: np.ndarray[Any, Any], noise: ls.PTRNoise, proposed: float, seed: int) -> np.ndarray[Any, Any]:
    widths = ls.median_reach_widths(x, 0.0, 100.0, 1, np.arange(x.size + 3))
    with warnings.catch_warnings(), seeded_noise(seed):
        warnings.simplefilter("ignore", NotPrivateWarning)
        out = ls.ptr_releases(ls.stability_distance(widths, proposed), round(ls.lower_median(x, 0.0) / noise.step),
                              noise.test, noise.release, noise.threshold, N_AUDIT)
    return np.where(np.isnan(out), -1e9, out)  # a refusal is an outcome too


def test_audit_propose_test_release() -> None:
    delta = 0.05
    privacy = Privacy("approx", "laplace", Fraction(1), Fraction(delta), Fraction(0))
    noise = ls.PTRNoise.of(6.0, 0.0, 100.0, privacy)
    # At the threshold (~6): removing a 26 moves the distance from 5 to 6 and the median from 19 to 17.
    x = np.array([0, 1, 1, 2, 4, 6, 7, 8, 9, 10, 12, 13, 13, 14, 14, 17, 17, 19, 20, 20, 23, 23, 24, 24, 24, 26, 26,
                  26, 26, 26, 26, 27, 28, 28, 29], dtype=float)
    y = np.delete(x, 27)
    a, b = _ptr_outcomes(x, noise, 6.0, 21), _ptr_outcomes(y, noise, 6.0, 22)
    assert 0.2 < np.mean(a < -1e8) < 0.8  # the test often passes and often refuses here
    assert _audit(a, b, delta) <= 1.0
    # Positive control: without the test, a median that jumps from 0 to 100 released with noise for b = 1 is caught.
    untested = ls.PTRNoise(noise.step, noise.test, noise.release, -math.inf)
    half = np.array([0.0] * 50 + [100.0] * 50)
    jump_a = _ptr_outcomes(half, untested, 6.0, 23)
    jump_b = _ptr_outcomes(np.r_[half, 100.0], untested, 6.0, 24)
    assert _audit(jump_a, jump_b, delta) > 1.5


def test_audit_sample_and_aggregate() -> None:
    privacy = Privacy("approx", "laplace", Fraction(1), Fraction(0), Fraction(0))
    grids, noises = ls.aggregation_noise([(0.0, 1.0)], privacy)
    los, his = np.array([0.0]), np.array([1.0])
    x = np.full((20, 1), 0.5)
    x[0] = 0.0
    y = x.copy()
    y[0] = 1.0  # a unit's block moves from one end of the bounds to the other
    with warnings.catch_warnings(), seeded_noise(25):
        warnings.simplefilter("ignore", NotPrivateWarning)
        a = ls.noisy_means(x, los, his, grids, noises, N_AUDIT)[:, 0]
        b = ls.noisy_means(y, los, his, grids, noises, N_AUDIT)[:, 0]
        # Positive control: the noise of one contribution (half-width), as if a unit moved a block by half.
        half_grid = [ls.SumGrid.choose(-0.5, 0.5, 1, privacy)]
        half_noise = [privacy.noise(half_grid[0].sensitivity)]
        c = ls.noisy_means(x, los, his, half_grid, half_noise, N_AUDIT)[:, 0]
        d = ls.noisy_means(y, los, his, half_grid, half_noise, N_AUDIT)[:, 0]
    assert _audit(a, b) <= 1.0
    assert _audit(c, d) > 1.2
