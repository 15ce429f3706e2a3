"""Private chi-squared tests: p-values valid under the noise, power, charging, and bad input that costs nothing.

Statistical assertions hold for a correct implementation except with probability < 1e-6: a KS
statistic of R uniform p-values exceeds sqrt(ln(2/1e-6) / (2R)) with probability <= 1e-6 (DKW,
Massart's constant), and a Binomial(R, 0.05) count leaves mean +- 5.3 sd with probability < 1e-6
(Bernstein); the p-values' grid 1/(m+1) is added to the KS tolerance.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import dpframe
from dpframe.noise.mechanism import NoiseSpec
from dpframe.queries import hypothesis, kernels
from dpframe.testing import seeded_noise

ALPHA = 0.05
KEYS = list(range(10))


def ks_tolerance(repetitions: int, simulations: int) -> float:
    return math.sqrt(math.log(2 / 1e-6) / (2 * repetitions)) + 1 / (simulations + 1)


def rejection_bounds(repetitions: int) -> tuple[float, float]:
    mean, sd = repetitions * ALPHA, math.sqrt(repetitions * ALPHA * (1 - ALPHA))
    return (mean - 5.3 * sd) / repetitions, (mean + 5.3 * sd) / repetitions


def null_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({"a": rng.integers(0, 10, n), "b": rng.integers(0, 10, n)})


def test_independence_pvalues_are_uniform_under_the_null_where_the_naive_test_fails() -> None:
    # A sparse 10 x 10 table at n = 1000, epsilon = 1: the noise inflates Pearson's statistic enough that the
    # naive test (scipy on the noisy table) rejects a true null about a third of the time at 0.05.
    rng = np.random.default_rng(15)
    ledger = dpframe.Ledger.in_memory()
    repetitions, simulations = 300, 199
    private, naive = [], []
    for _ in range(repetitions):
        p = null_frame(rng, 1000).dp.protect(epsilon=1.0, ledger=ledger)
        result = p.dp.chi2_contingency("a", "b", keys={"a": KEYS, "b": KEYS}, simulations=simulations, epsilon=1.0)
        private.append(result.pvalue)
        table = result.table.to_numpy().clip(min=1)  # clipped so that scipy accepts it
        naive.append(scipy.stats.chi2_contingency(table, correction=False).pvalue)
    assert scipy.stats.kstest(private, "uniform").statistic < ks_tolerance(repetitions, simulations)
    low, high = rejection_bounds(repetitions)
    assert low <= np.mean(np.array(private) <= ALPHA) <= high
    assert np.mean(np.array(naive) <= ALPHA) > 0.15  # the failure this test fixes (expected ~0.33)


def test_goodness_of_fit_pvalues_are_uniform_under_the_null() -> None:
    rng = np.random.default_rng(16)
    ledger = dpframe.Ledger.in_memory()
    proportions = np.linspace(1, 3, 20) / np.linspace(1, 3, 20).sum()
    repetitions, simulations = 300, 199
    pvalues = []
    for _ in range(repetitions):
        column = rng.choice(20, 1000, p=proportions)
        p = pd.DataFrame({"c": column}).dp.protect(epsilon=1.0, ledger=ledger)
        result = p.dp.chisquare("c", dict(zip(range(20), proportions)), simulations=simulations, epsilon=1.0)
        pvalues.append(result.pvalue)
    assert scipy.stats.kstest(pvalues, "uniform").statistic < ks_tolerance(repetitions, simulations)


@pytest.mark.parametrize("n, mechanism", [(1000, "laplace"), (30_000, "laplace"), (1000, "gaussian")])
def test_type_one_error_is_near_alpha(n: int, mechanism: str) -> None:
    # The test's core on exact tables plus the release's noise (as the query draws it, without the ledger).
    rng = np.random.default_rng(n)
    noise = NoiseSpec("laplace", Fraction(1)) if mechanism == "laplace" else NoiseSpec("gaussian", Fraction(9))
    repetitions, simulations = 500, 199
    independence, fit = [], []
    null = np.full(100, 0.01)
    for _ in range(repetitions):
        counts = rng.multinomial(n, null)
        noisy = (counts + hypothesis.noise_draws(noise, counts.shape, rng)).astype(float)
        independence.append(hypothesis.independence_test(noisy.reshape(10, 10), noise, simulations, rng)[1])
        fit.append(hypothesis.goodness_of_fit_test(noisy, null, noise, simulations, rng)[1])
    low, high = rejection_bounds(repetitions)
    for pvalues in (independence, fit):
        assert low <= np.mean(np.array(pvalues) <= ALPHA) <= high
        assert scipy.stats.kstest(pvalues, "uniform").statistic < ks_tolerance(repetitions, simulations)


def test_power_against_a_clear_alternative() -> None:
    # b copies a with probability 0.3: Cramér's V = 0.3, a noncentrality n·φ² = 1620 on 81 degrees of freedom,
    # against which Laplace noise of std 1.4 per cell (expected counts ~20) takes away almost nothing.
    rng = np.random.default_rng(3)
    ledger = dpframe.Ledger.in_memory()
    rejections = 0
    for _ in range(20):
        a = rng.integers(0, 10, 2000)
        b = np.where(rng.random(2000) < 0.3, a, rng.integers(0, 10, 2000))
        p = pd.DataFrame({"a": a, "b": b}).dp.protect(epsilon=1.0, ledger=ledger)
        result = p.dp.chi2_contingency("a", "b", keys={"a": KEYS, "b": KEYS}, simulations=199, epsilon=1.0)
        rejections += result.pvalue <= 0.01
    assert rejections == 20


def test_the_budget_is_charged_before_the_data_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    p = null_frame(np.random.default_rng(0), 500).dp.protect(epsilon=1.0)
    seen: list[int] = []
    count_cells = kernels.count_cells

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(len(p.dp.budget.ledger))
        return count_cells(*args, **kwargs)

    monkeypatch.setattr(kernels, "count_cells", spy)
    result = p.dp.chi2_contingency("a", "b", keys={"a": KEYS, "b": KEYS}, epsilon=0.5)
    p.dp.chisquare("a", keys=KEYS, epsilon=0.25)
    assert seen == [1, 2]  # each read came after its own ledger line
    ledger = p.dp.budget.ledger
    assert list(ledger["query"]) == ["chi2_contingency", "chisquare"]
    assert list(ledger["epsilon"]) == [0.5, 0.25]
    assert result.cost.epsilon == Fraction(1, 2)
    assert result.table.dp.release is not None and result.table.dp.release.query == "chi2_contingency"


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda p: p.dp.chisquare("a", epsilon=1.0), ValueError, "public categories"),
        (lambda p: p.dp.chi2_contingency("a", "b", keys={"a": KEYS}, epsilon=1.0), ValueError, "public categories"),
        (lambda p: p.dp.chisquare("a", [1, 2], keys=KEYS, epsilon=1.0), ValueError, "2 values but there are 10"),
        (lambda p: p.dp.chisquare("a", {0: -1, 1: 2}, epsilon=1.0), ValueError, "non-negative"),
        (lambda p: p.dp.chisquare("a", {0: "x", 1: 2}, epsilon=1.0), TypeError, "numbers"),
        (lambda p: p.dp.chisquare("a", {0: 1, 1: 2}, keys=[0, 1], epsilon=1.0), ValueError, "once"),
        (lambda p: p.dp.chisquare("a", keys=KEYS, simulations=10, epsilon=1.0), ValueError, ">= 99"),
        (lambda p: p.dp.chisquare("a", keys=KEYS), ValueError, "epsilon"),
        (lambda p: p.dp.chisquare("nope", keys=KEYS, epsilon=1.0), KeyError, "unknown column"),
        (lambda p: p.dp.chi2_contingency("a", "b", keys={"a": [0], "b": KEYS}, epsilon=1.0), ValueError,
         "two categories"),
        (lambda p: p.dp.chisquare("a", keys=KEYS, epsilon=5.0), dpframe.BudgetExceededError, "nothing"),
    ],
)
def test_bad_input_costs_nothing(call: Any, error: type[Exception], message: str) -> None:
    p = null_frame(np.random.default_rng(0), 100).dp.protect(epsilon=1.0)
    with pytest.raises(error, match=message):
        call(p)
    assert p.dp.budget.spent.epsilon.exact == 0 and len(p.dp.budget.ledger) == 0


def test_result_says_what_it_assumed_and_is_reproducible_when_seeded() -> None:
    df = null_frame(np.random.default_rng(0), 2000).assign(a=lambda d: pd.Categorical(d["a"], categories=KEYS))

    def run() -> hypothesis.ChiSquareResult:
        p = df.dp.protect(rho=0.5, ledger=dpframe.Ledger.in_memory())
        return p.dp.chisquare("a", rho=0.5)  # categories from the dtype, uniform null, discrete Gaussian noise

    with seeded_noise(7):
        first = run()
    with seeded_noise(7):
        second = run()
    assert (first.statistic, first.pvalue) == (second.statistic, second.pvalue)
    assert first.noise == "discrete Gaussian" and first.dof == 9 and first.simulations == 999
    assert first.n == pytest.approx(first.table.sum()) and first.expected.sum() == pytest.approx(first.n)
    assert any("n is private" in a for a in first.assumptions)
    assert "pvalue=" in repr(first)


def test_noise_draws_match_the_release_distribution() -> None:
    rng = np.random.default_rng(5)
    for noise in (NoiseSpec("laplace", Fraction(3, 2)), NoiseSpec("gaussian", Fraction(5, 2))):
        simulated = hypothesis.noise_draws(noise, (200_000,), rng)
        with seeded_noise(1):
            exact = noise.sample(200_000)
        assert scipy.stats.ks_2samp(simulated, exact).pvalue > 1e-6
        # The sample variance's sd is about sigma^2 sqrt((kurtosis - 1) / N), kurtosis <= 6 (Laplace).
        assert abs(simulated.var() - noise.std**2) < 5.3 * noise.std**2 * math.sqrt(5 / 200_000)


def test_benchmark_script_runs(tmp_path: Any) -> None:
    import importlib.util
    import json
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_chisquare.py"
    spec = importlib.util.spec_from_file_location("bench_chisquare", script)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "chisquare.json"
    bench.main(["--repetitions", "3", "--sizes", "300", "--json", str(out)])
    rows = json.loads(out.read_text())["results"]
    assert [(r["test"], r["hypothesis"]) for r in rows] == [
        ("goodness of fit", "null"), ("goodness of fit", "alternative"), ("independence", "null"),
        ("independence", "alternative")]
    assert all(0 <= r["private"] <= 1 and 0 <= r["naive"] <= 1 for r in rows)
