"""Statistical tests: reported accuracy matches the noise actually added, intervals cover,
estimates are unbiased, sums are exact, calibration matches theory, and an empirical
privacy-loss check through the accessor.

Every test runs under seeded noise, so it is deterministic. Tolerances are chosen so
that a correct implementation would fail a check with probability well below 1e-6
had the noise been fresh: Z = 5.3 standard errors (two-sided normal tail 1.2e-7).
Many noise draws per call come from histograms with many bins and group-bys with
many groups; scalar paths are exercised in loops of a few thousand calls.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpframe import Ledger
from dpframe.noise import calibrate
from dpframe.noise.mechanism import NoiseSpec, SumGrid
from dpframe.testing import seeded_noise

pytestmark = pytest.mark.usefixtures("seeded")

Z = 5.3
LAPLACE_KURTOSIS = 6.0
GAUSS_KURTOSIS = 3.0


def std_tolerance(draws: int, kurtosis: float) -> float:
    """Relative tolerance for a sample std of ``draws`` values: Z standard errors of s/sigma."""
    return Z * math.sqrt((kurtosis - 1) / (4 * draws))


def coverage_tolerance(draws: int, level: float = 0.95) -> float:
    return Z * math.sqrt(level * (1 - level) / draws)


def kurtosis_of(kwargs: dict[str, Any]) -> float:
    gaussian = "rho" in kwargs or kwargs.get("delta") or kwargs.get("mechanism") == "gaussian"
    return GAUSS_KURTOSIS if gaussian else LAPLACE_KURTOSIS


# Privacy arguments exercised: Laplace (pure), Gaussian (approx), Gaussian (zCDP), Laplace on zCDP.
MECHANISMS = {
    "laplace": ({"epsilon": 1e6, "delta": 0.5}, {"epsilon": 0.5}),
    "laplace-small-eps": ({"epsilon": 1e6, "delta": 0.5}, {"epsilon": 0.01}),
    "gaussian-approx": ({"epsilon": 1e6, "delta": 0.5}, {"epsilon": 1.0, "delta": 1e-6}),
    "gaussian-zcdp": ({"rho": 1e6}, {"rho": 0.02}),
    "laplace-zcdp": ({"rho": 1e6}, {"epsilon": 0.2}),
}


# ---------------------------------------------------------------------------
# (a) + (b): histograms -- many independent draws per call
# ---------------------------------------------------------------------------

BINS = 20_000
CALLS = 10


def histogram_draws(budget: dict[str, Any], query: dict[str, Any]) -> tuple[np.ndarray, float, np.ndarray]:
    """Noise of CALLS histograms of BINS bins (exact counts: 100 in bin 0, 0 elsewhere)."""
    p = pd.DataFrame({"x": np.full(100, 0.5)}).dp.protect(**budget, ledger=Ledger.in_memory())
    exact = np.zeros(BINS)
    exact[0] = 100
    noise, covered = [], []
    std = math.nan
    for _ in range(CALLS):
        h = p["x"].dp.histogram(bins=np.arange(BINS + 1), **query)
        rel = h.attrs["dp"]
        noise.append(h.to_numpy() - exact)
        covered.append((rel.lower.to_numpy() <= exact) & (exact <= rel.upper.to_numpy()))
        std = float(rel.std)
    return np.concatenate(noise), std, np.concatenate(covered)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_histogram_noise_matches_reported_std(name: str) -> None:
    budget, query = MECHANISMS[name]
    noise, std, _ = histogram_draws(budget, query)
    n = len(noise)
    assert abs(noise.mean()) < Z * std / math.sqrt(n)  # unbiased
    assert noise.std() == pytest.approx(std, rel=std_tolerance(n, kurtosis_of(query)))
    assert std_tolerance(n, LAPLACE_KURTOSIS) < 0.015  # "within a few percent"
    assert np.all(noise == np.round(noise))  # integer noise


COVERAGE_SCALES = {  # large noise scales, where the lattice adds well under 1% of coverage
    "laplace": {"epsilon": 0.01},
    "gaussian-approx": {"epsilon": 0.02, "delta": 1e-6},
    "gaussian-zcdp": {"rho": 1e-4},
    "laplace-zcdp": {"epsilon": 0.01},
}


@pytest.mark.parametrize("name", list(COVERAGE_SCALES))
def test_histogram_intervals_cover(name: str) -> None:
    """Exact-quantile intervals on discrete noise: at least 95%, barely more at a large scale."""
    budget = {"rho": 1e6} if "zcdp" in name else {"epsilon": 1e6, "delta": 0.5}
    _, _, covered = histogram_draws(budget, COVERAGE_SCALES[name])
    coverage = covered.mean()
    assert 0.935 <= coverage <= 0.985
    assert coverage >= 0.95 - coverage_tolerance(len(covered))
    assert coverage <= 0.96  # at these scales discreteness adds < 1%


# ---------------------------------------------------------------------------
# (a) + (b): scalar count in a loop
# ---------------------------------------------------------------------------

LOOP = 2500


@pytest.mark.parametrize("name", ["laplace", "gaussian-approx", "gaussian-zcdp"])
def test_count_noise_and_coverage(name: str) -> None:
    budget, query = MECHANISMS[name]
    p = pd.DataFrame({"x": np.arange(50)}).dp.protect(**budget, ledger=Ledger.in_memory())
    released = []
    covered = []
    std = math.nan
    for _ in range(LOOP):
        c = p.dp.count(**query)
        released.append(int(c))
        covered.append(c.ci[0] <= 50 <= c.ci[1])
        std = c.std
    noise = np.array(released) - 50
    assert abs(noise.mean()) < Z * std / math.sqrt(LOOP)
    assert noise.std() == pytest.approx(std, rel=std_tolerance(LOOP, kurtosis_of(query)))
    # Discrete exact-quantile intervals: never below 95% beyond sampling error.
    assert np.mean(covered) >= 0.95 - coverage_tolerance(LOOP)
    assert np.mean(covered) <= 0.985


# ---------------------------------------------------------------------------
# (a) + (b): sums
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def grouped() -> pd.DataFrame:
    """5000 groups of 40 values inside (0, 100), a categorical key (public groups)."""
    rng = np.random.default_rng(3)
    groups, size = 5000, 40
    return pd.DataFrame(
        {"x": rng.uniform(10, 60, groups * size), "g": pd.Categorical(np.repeat(np.arange(groups), size))}
    )


@pytest.mark.parametrize("name", ["laplace", "gaussian-approx", "gaussian-zcdp", "laplace-zcdp"])
def test_groupby_sum_noise_and_coverage(grouped: pd.DataFrame, name: str) -> None:
    budget, query = MECHANISMS[name]
    p = grouped.dp.protect(**budget, ledger=Ledger.in_memory())
    exact = grouped.groupby("g", observed=False)["x"].sum().to_numpy()
    noise, covered = [], []
    for _ in range(CALLS):
        s = p.dp.groupby("g").sum("x", bounds=(0, 100), **query)
        rel = s.attrs["dp"]
        noise.append(s.to_numpy() - exact)
        covered.append((rel.lower.to_numpy() <= exact) & (exact <= rel.upper.to_numpy()))
    noise_all = np.concatenate(noise)
    n = len(noise_all)
    std = float(rel.std)
    assert abs(noise_all.mean()) < Z * std / math.sqrt(n)
    assert noise_all.std() == pytest.approx(std, rel=std_tolerance(n, kurtosis_of(query)))
    coverage = np.concatenate(covered).mean()
    assert abs(coverage - 0.95) <= 0.015
    assert coverage >= 0.95 - coverage_tolerance(n)


@pytest.mark.parametrize("name", ["laplace", "gaussian-approx", "gaussian-zcdp"])
def test_scalar_sum_noise_and_coverage(name: str) -> None:
    budget, query = MECHANISMS[name]
    values = np.random.default_rng(4).uniform(0, 10, 50)
    p = pd.DataFrame({"x": values}).dp.protect(**budget, ledger=Ledger.in_memory())
    exact = math.fsum(values)
    noise, covered = [], []
    std = math.nan
    for _ in range(1500):
        s = p["x"].dp.sum(bounds=(0, 10), **query)
        noise.append(float(s) - exact)
        covered.append(s.ci[0] <= exact <= s.ci[1])
        std = s.std
    noise_arr = np.array(noise)
    assert abs(noise_arr.mean()) < Z * std / math.sqrt(len(noise))
    assert noise_arr.std() == pytest.approx(std, rel=std_tolerance(len(noise), kurtosis_of(query)))
    assert np.mean(covered) >= 0.95 - coverage_tolerance(len(noise))


# ---------------------------------------------------------------------------
# (a) + (b) + (c): means
# ---------------------------------------------------------------------------


def mean_draws(groups: int, size: int, query: dict[str, Any], calls: int, seed: int = 5) -> dict[str, Any]:
    """Per-group errors, reported stds and coverage of CALLS group-by means."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {"x": rng.uniform(10, 50, groups * size), "g": pd.Categorical(np.repeat(np.arange(groups), size))}
    )
    budget = {"rho": 1e6} if "rho" in query else {"epsilon": 1e6, "delta": 0.5}
    p = df.dp.protect(**budget, ledger=Ledger.in_memory())
    exact = df.groupby("g", observed=False)["x"].mean().to_numpy()
    errors, stds, covered = [], [], []
    for _ in range(calls):
        m = p.dp.groupby("g").mean("x", bounds=(0, 100), **query)
        rel = m.attrs["dp"]
        errors.append(m.to_numpy() - exact)
        stds.append(rel.std.to_numpy())
        covered.append((rel.lower.to_numpy() <= exact) & (exact <= rel.upper.to_numpy()))
    return {
        "errors": np.concatenate(errors),
        "stds": np.concatenate(stds),
        "covered": np.concatenate(covered),
    }


@pytest.mark.parametrize(
    "query", [{"epsilon": 1.0}, {"epsilon": 1.0, "delta": 1e-6}, {"rho": 0.1}], ids=["laplace", "gauss", "zcdp"]
)
def test_groupby_mean_noise_matches_reported_std(query: dict[str, Any]) -> None:
    draws = mean_draws(2000, 1000, query, calls=10)
    errors, stds = draws["errors"], draws["stds"]
    n = len(errors)
    # The delta-method std is nearly the same for every group of equal size (it uses the noisy count).
    assert stds.std() / stds.mean() < 0.05
    standardized = errors / stds
    assert standardized.std() == pytest.approx(1.0, rel=std_tolerance(n, kurtosis_of(query)))
    # (c) unbiased for data inside the bounds
    assert abs(standardized.mean()) < Z / math.sqrt(n)


@pytest.mark.parametrize("query", [{"epsilon": 1.0, "delta": 1e-6}, {"rho": 0.1}], ids=["gauss", "zcdp"])
def test_groupby_mean_gaussian_intervals_cover(query: dict[str, Any]) -> None:
    covered = mean_draws(2000, 1000, query, calls=10)["covered"]
    assert abs(covered.mean() - 0.95) <= 0.015
    assert abs(covered.mean() - 0.95) <= coverage_tolerance(len(covered))


def test_groupby_mean_laplace_intervals_cover_roughly() -> None:
    covered = mean_draws(2000, 1000, {"epsilon": 1.0}, calls=10)["covered"]
    assert abs(covered.mean() - 0.95) <= 0.015


def test_groupby_mean_laplace_intervals_reach_95_percent() -> None:
    """Regression: +-1.96 sd intervals on Laplace-dominated means covered only ~93.8% (1 - e^{-1.96 sqrt 2})."""
    covered = mean_draws(2000, 1000, {"epsilon": 1.0}, calls=50)["covered"]
    assert covered.mean() >= 0.95 - coverage_tolerance(len(covered))


def test_scalar_mean_noise_and_coverage() -> None:
    values = np.random.default_rng(6).uniform(20, 40, 400)
    p = pd.DataFrame({"x": values}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e6, delta=0.5)
    exact = values.mean()
    errors, stds, covered = [], [], []
    for _ in range(1500):
        m = p["x"].dp.mean(bounds=(0, 100), epsilon=1.0, delta=1e-6)
        errors.append(float(m) - exact)
        stds.append(m.std)
        covered.append(m.ci[0] <= exact <= m.ci[1])
    errors_arr = np.array(errors)
    z = errors_arr / np.array(stds)
    assert abs(z.mean()) < Z / math.sqrt(len(z))
    assert z.std() == pytest.approx(1.0, rel=std_tolerance(len(z), GAUSS_KURTOSIS))
    assert np.mean(covered) >= 0.95 - coverage_tolerance(len(z))


def test_mean_error_shrinks_like_one_over_n() -> None:
    """Ten times the rows, a tenth of the error (the noise is added to the sum, not the mean)."""
    small = mean_draws(10_000, 100, {"epsilon": 1.0}, calls=2, seed=8)
    large = mean_draws(2_000, 1000, {"epsilon": 1.0}, calls=10, seed=9)
    rmse_small = math.sqrt(np.mean(small["errors"] ** 2))
    rmse_large = math.sqrt(np.mean(large["errors"] ** 2))
    ratio = rmse_small / rmse_large
    # Each RMSE is estimated to ~Z * sqrt(5 / (4 * 20000)) = 4.2%; allow both.
    assert 10 * (1 - 0.09) <= ratio <= 10 * (1 + 0.09)
    # and the reported std scales the same way
    assert small["stds"].mean() / large["stds"].mean() == pytest.approx(10, rel=0.05)
    # unbiased at both sizes
    for draws in (small, large):
        errors = draws["errors"]
        assert abs(errors.mean()) < Z * errors.std() / math.sqrt(len(errors))


# ---------------------------------------------------------------------------
# (d) sums are exact on the grid
# ---------------------------------------------------------------------------


def sum_grid(p: pd.DataFrame, bounds: tuple[float, float], query: dict[str, Any]) -> SumGrid:
    from dpframe.queries.plan import Target

    target = Target.of(p)
    privacy = target.privacy(query.get("epsilon"), query.get("delta"), query.get("rho"), None)
    return SumGrid.choose(bounds[0], bounds[1], target.contributions, privacy)


def test_sum_with_huge_epsilon_is_exact_to_one_step() -> None:
    """Values on the data grid (multiples of 1/8), some outside the bounds: the sum is exact."""
    rng = np.random.default_rng(10)
    values = rng.integers(-8000, 16000, 200_000) / 8  # in [-1000, 2000), clipped to (0, 1000)
    truth = math.fsum(np.clip(values, 0, 1000))
    p = pd.DataFrame({"x": values}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e13)
    query = {"epsilon": 1e12}
    grid = sum_grid(p, (0, 1000), query)
    s = p["x"].dp.sum(bounds=(0, 1000), **query)
    assert abs(float(s) - truth) <= grid.release_step
    # The order of the rows does not matter: the grid sum is exact integer arithmetic.
    shuffled = pd.DataFrame({"x": values}).sample(frac=1.0, random_state=1).dp.protect(ledger=Ledger.in_memory(), epsilon=1e13)
    assert float(shuffled["x"].dp.sum(bounds=(0, 1000), **query)) == pytest.approx(float(s), abs=grid.release_step)


def test_groupby_sum_with_huge_epsilon_is_exact() -> None:
    rng = np.random.default_rng(11)
    df = pd.DataFrame({"x": rng.integers(0, 4000, 50_000) / 4, "g": pd.Categorical(rng.integers(0, 7, 50_000))})
    truth = df.assign(x=df["x"].clip(0, 500)).groupby("g", observed=False)["x"].sum()
    p = df.dp.protect(ledger=Ledger.in_memory(), epsilon=1e13)
    grid = sum_grid(p, (0, 500), {"epsilon": 1e12})
    s = p.dp.groupby("g").sum("x", bounds=(0, 500), epsilon=1e12)
    assert np.all(np.abs(s.to_numpy() - truth.to_numpy()) <= grid.release_step)


ADVERSARIAL = [
    # huge values that cancel, mixed with small ones a naive float sum would lose
    np.array([1e15, 0.1, -1e15, 3.0, 1e15, -1e15, 7.5, 1e15 - 1, -(1e15 - 1)] * 300),
    # values far outside the bounds and non-finite values
    np.array([1e300, -1e300, np.inf, -np.inf, np.nan, 5e14, -5e14, 1e-300, 2.0**60] * 300),
    # alternating magnitudes: catastrophic cancellation for pairwise float sums
    np.concatenate([np.full(1000, 1e15), np.full(1000, 1.0), np.full(1000, -1e15)]),
]


@pytest.mark.parametrize("index", range(len(ADVERSARIAL)))
@pytest.mark.parametrize("epsilon", [1.0, 1e6])
def test_adversarial_floats_never_move_the_sum_beyond_noise(index: int, epsilon: float) -> None:
    values = ADVERSARIAL[index]
    lo, hi = -1e15, 1e15
    finite = values[~np.isnan(values)]
    truth = float(sum(Fraction(v) for v in np.clip(finite, lo, hi)))  # exact rational sum
    p = pd.DataFrame({"x": values}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)
    for _ in range(20):
        s = p["x"].dp.sum(bounds=(lo, hi), epsilon=epsilon)
        assert math.isfinite(s)
        assert abs(float(s) - truth) <= 8 * s.std  # Laplace: P(|X| > 8 sd) = e^{-11.3} ~ 1e-5 per draw
    m = p["x"].dp.mean(bounds=(lo, hi), epsilon=epsilon)
    assert lo <= m <= hi and math.isfinite(m.std)


def test_grid_rounding_is_far_below_the_noise() -> None:
    """The only non-noise error of a sum: half a data step per row, ~2^-31 of the bound."""
    p = pd.DataFrame({"x": [0.1] * 10}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    for bounds in [(0, 1), (-1e15, 1e15), (0, 1e-3), (3, 7)]:
        for query in [{"epsilon": 1.0}, {"epsilon": 1e3}]:
            grid = sum_grid(p, bounds, query)
            magnitude = max(abs(bounds[0]), abs(bounds[1]))
            assert float(grid.data_step) <= magnitude * 2.0**-29
            assert grid.release_step * 2**18 <= math.sqrt(2) * magnitude / query["epsilon"]


# ---------------------------------------------------------------------------
# (e) Gaussian calibration
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-6), (0.3, 1e-9), (3.0, 1e-5)])
def test_gaussian_count_std_matches_analytic_calibration(epsilon: float, delta: float) -> None:
    p = pd.DataFrame({"x": range(10)}).dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, delta=0.5)
    c = p.dp.count(epsilon=epsilon, delta=delta)
    sigma = calibrate.discrete_gaussian_sigma(epsilon, delta, 1)
    assert c.std == pytest.approx(sigma, rel=1e-6)
    continuous = calibrate.analytic_gaussian_sigma(epsilon, delta, 1)
    assert continuous * (1 - 1e-9) <= sigma <= continuous * 1.01
    assert calibrate.discrete_gaussian_delta(sigma**2, epsilon, 1) <= delta


def test_gaussian_histogram_noise_matches_calibrated_sigma() -> None:
    noise, std, _ = histogram_draws({"epsilon": 1e6, "delta": 0.5}, {"epsilon": 1.0, "delta": 1e-6})
    sigma = calibrate.discrete_gaussian_sigma(1.0, 1e-6, 1)
    assert noise.std() == pytest.approx(sigma, rel=std_tolerance(len(noise), GAUSS_KURTOSIS))


@pytest.mark.parametrize("rho", [0.02, 0.5, 2.0])
def test_zcdp_sigma_squared_is_delta_squared_over_two_rho(rho: float) -> None:
    p = pd.DataFrame({"x": np.arange(100.0)}).dp.protect(ledger=Ledger.in_memory(), rho=100.0)
    c = p.dp.count(rho=rho)
    sigma2 = 1 / (2 * rho)
    assert c.std**2 == pytest.approx(calibrate.discrete_gaussian_variance(sigma2), rel=1e-6)
    if sigma2 >= 2:
        assert c.std**2 == pytest.approx(sigma2, rel=1e-6)
    # A sum with bounds (-M, M) has Delta = M: sigma = M / sqrt(2 rho), plus one release step of
    # sensitivity for rounding to the release grid (~2^-14 of sigma for the Gaussian).
    for bounds in [(0, 125), (-3, 2), (0, 1e9)]:
        s = p["x"].dp.sum(bounds=bounds, rho=rho)
        magnitude = max(abs(bounds[0]), abs(bounds[1]))
        assert s.std == pytest.approx(magnitude / math.sqrt(2 * rho), rel=1e-3)
        assert s.std >= magnitude / math.sqrt(2 * rho) * (1 - 1e-12)


def test_zcdp_histogram_noise_matches_sigma() -> None:
    noise, std, _ = histogram_draws({"rho": 1e6}, {"rho": 0.02})
    assert std == pytest.approx(5.0, rel=1e-9)
    assert noise.std() == pytest.approx(5.0, rel=std_tolerance(len(noise), GAUSS_KURTOSIS))


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-6), (0.5, 1e-8)])
def test_gaussian_sum_std_is_at_least_the_analytic_sigma(epsilon: float, delta: float) -> None:
    """Sums use at least Balle-Wang's sigma for Delta = max|bound| (and at most the zCDP-route fallback)."""
    p = pd.DataFrame({"x": np.arange(100.0)}).dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, delta=0.5)
    s = p["x"].dp.sum(bounds=(0, 125), epsilon=epsilon, delta=delta)
    analytic = calibrate.analytic_gaussian_sigma(epsilon, delta, 125)
    assert s.std >= analytic * (1 - 1e-6)
    assert s.std <= analytic * 1.12


# ---------------------------------------------------------------------------
# (f) the real Adult data
# ---------------------------------------------------------------------------


def test_adult_mean_age(adult: pd.DataFrame) -> None:
    truth = adult["age"].clip(0, 125).mean()
    assert 38 < truth < 39
    p = adult.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    m = p["age"].dp.mean(bounds=(0, 125), epsilon=1.0)
    assert abs(m - truth) < 1.0  # noise std is ~0.006 years on 30k rows
    assert m.std < 0.05
    assert m.ci[1] - m.ci[0] < 0.5
    # A single 95% interval misses 5% of the time; over many independent releases, ~95% cover.
    many = adult.dp.protect(ledger=Ledger.in_memory(), epsilon=400.0)
    releases = [many["age"].dp.mean(bounds=(0, 125), epsilon=1.0) for _ in range(400)]
    assert all(abs(r - truth) < 1.0 for r in releases)
    covered = np.mean([r.ci[0] <= truth <= r.ci[1] for r in releases])
    assert covered >= 0.95 - coverage_tolerance(len(releases))


def test_adult_histogram_and_groupby(adult: pd.DataFrame) -> None:
    p = adult.dp.protect(ledger=Ledger.in_memory(), epsilon=2.0, delta=1e-6)
    h = p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.5)
    truth, _ = np.histogram(adult["age"], bins=np.arange(0, 130, 10))
    assert np.all(np.abs(h.to_numpy() - truth) <= 40)  # scale 2: 40 is 20 scales
    vc = p["education"].dp.value_counts(epsilon=0.5, delta=1e-6)
    common = adult["education"].value_counts()
    assert set(common.index[common > 100]) <= set(vc.index)
    means = p.dp.groupby("sex", keys=sorted(adult["sex"].unique())).mean("age", bounds=(0, 125), epsilon=0.5)
    exact = adult.groupby("sex")["age"].mean()
    assert np.all(np.abs(means - exact) < 1.0)


# ---------------------------------------------------------------------------
# (g) empirical privacy check through the accessor
# ---------------------------------------------------------------------------

RELEASES = 4000
PER_RELEASE_EPSILON = 1.0


def count_releases(rows: int, seed: int) -> Counter[int]:
    """RELEASES noisy counts of a frame with ``rows`` rows, through the accessor."""
    p = pd.DataFrame({"x": np.arange(rows)}).dp.protect(ledger=Ledger.in_memory(), epsilon=RELEASES * PER_RELEASE_EPSILON)
    with seeded_noise(seed):
        return Counter(int(p.dp.count(epsilon=PER_RELEASE_EPSILON)) for _ in range(RELEASES))


def privacy_loss_lower_bound(a: Counter[int], b: Counter[int], min_count: int = 100) -> float:
    """Largest |log P_a(y)/P_b(y)| over well-populated outputs y, minus Z standard errors.

    With equal sample sizes, log(c_a/c_b) estimates the log ratio with standard error
    sqrt(1/c_a + 1/c_b) (delta method, multinomial counts). The result exceeds the true
    privacy loss only with probability ~1e-7 per output.
    """
    bound = -math.inf
    for y in set(a) & set(b):
        ca, cb = a[y], b[y]
        if ca < min_count or cb < min_count:
            continue
        se = math.sqrt(1 / ca + 1 / cb)
        bound = max(bound, abs(math.log(ca / cb)) - Z * se)
    return bound


def test_empirical_privacy_loss_of_count_is_within_epsilon() -> None:
    n = 30
    a = count_releases(n, seed=101)
    b = count_releases(n + 1, seed=202)
    well_populated = [y for y in set(a) & set(b) if a[y] >= 100 and b[y] >= 100]
    assert len(well_populated) >= 3
    loss = privacy_loss_lower_bound(a, b)
    assert loss <= PER_RELEASE_EPSILON
    # and the check is not vacuous: the point estimate is close to the claimed epsilon
    estimates = [abs(math.log(a[y] / b[y])) for y in well_populated]
    assert max(estimates) > 0.7 * PER_RELEASE_EPSILON


def test_empirical_privacy_check_flags_halved_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    original = NoiseSpec.sample

    def halved(self: NoiseSpec, size: int) -> Any:
        return original(dataclasses.replace(self, param=self.param / 2), size)

    monkeypatch.setattr(NoiseSpec, "sample", halved)
    n = 30
    a = count_releases(n, seed=101)
    b = count_releases(n + 1, seed=202)
    loss = privacy_loss_lower_bound(a, b)
    assert loss > PER_RELEASE_EPSILON  # the broken mechanism's loss (2 epsilon) is detected
