"""Local differential privacy (dpframe.local): exact coins, unbiased estimates with the stated variance,
an empirical privacy audit of every randomizer, and the budget rules of s.dp.randomized_response."""

from __future__ import annotations

import math
import warnings
from decimal import Decimal, getcontext
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from privacy_audit import epsilon_lower_bound

import dpframe
from dpframe import BudgetExceededError
from dpframe.local import (
    ExpProbability,
    LocalHashing,
    LocalRandomizer,
    LocalReports,
    UnaryEncoding,
    bernoulli,
    consistent_proportions,
    estimate_frequencies,
    randomizer,
)
from dpframe.protection.base import Protected
from dpframe.testing import NotPrivateWarning, seeded_noise

METHODS = ["rr", "grr", "sue", "oue", "olh"]


def _seeded(seed: int) -> Any:
    warnings.simplefilter("ignore", NotPrivateWarning)
    return seeded_noise(seed)


# --- exact coins -------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [Fraction(1, 10), Fraction(1), Fraction(7, 3), Fraction(20)])
@pytest.mark.parametrize("k", [2, 5, 1000])
def test_probability_digits_match_high_precision_arithmetic(epsilon: Fraction, k: int) -> None:
    getcontext().prec = 80
    t = (Decimal(epsilon.numerator) / Decimal(epsilon.denominator)).exp()
    p = t / (t + k - 1)
    prob = ExpProbability(epsilon, a=1, b=0, c=1, d=k - 1)
    for bits in (16, 64, 128):
        assert prob.scaled_floor(bits) == int(p * Decimal(2) ** bits)
    assert sum(prob.digits(level) * 2 ** (-16 * (level + 1)) for level in range(4)) == pytest.approx(float(p))


def test_rational_probability_is_exact() -> None:
    half = ExpProbability(Fraction(1), a=0, b=1, c=0, d=2)
    assert [half.digits(level) for level in range(3)] == [2**15, 0, 0]


def test_bernoulli_frequency() -> None:
    # 1e6 draws: the frequency is within 6 standard deviations (fails with probability ~2e-9).
    prob = ExpProbability(Fraction(1, 2), a=1, b=0, c=1, d=9)
    p = prob.value
    share = bernoulli(prob, 1_000_000).mean()
    assert abs(share - p) < 6 * math.sqrt(p * (1 - p) / 1_000_000)


@pytest.mark.parametrize("bad", [{"a": 2, "b": 0, "c": 1, "d": 1}, {"a": 1, "b": 1, "c": 1, "d": 1}, {"a": -1, "b": 0, "c": 1, "d": 1}])
def test_probability_refuses_values_outside_zero_one(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ExpProbability(Fraction(1), **bad)


# --- unbiasedness and variance ------------------------------------------------------

COUNTS = np.array([500, 300, 150, 50, 0])  # n = 1000 reports over k = 5 categories
REPEATS = 400


def _estimates(mechanism: LocalRandomizer, seed: int) -> np.ndarray[Any, Any]:
    """REPEATS independent count estimates from n = 1000 reports each (one randomize call, then split)."""
    codes = np.repeat(np.arange(len(COUNTS)), COUNTS)
    n = codes.size
    with _seeded(seed):
        reports = mechanism.randomize(np.tile(codes, REPEATS))
    return np.array([mechanism.estimate(reports.iloc[i * n:(i + 1) * n]) for i in range(REPEATS)])


@pytest.mark.parametrize("method", ["grr", "sue", "oue", "olh"])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_estimates_are_unbiased_with_the_stated_variance(method: str, epsilon: float) -> None:
    mechanism = randomizer(method, epsilon, len(COUNTS))
    estimates = _estimates(mechanism, seed=7)
    n = int(COUNTS.sum())
    variance = mechanism.variance(n, COUNTS)
    # The mean of 400 estimates is within 5 of its standard errors of the truth, for every category.
    standard_error = np.sqrt(variance / REPEATS)
    assert np.all(np.abs(estimates.mean(axis=0) - COUNTS) < 5 * standard_error)
    # The sample variance of 400 draws has relative sd sqrt(2/399) = 0.07: within 35% of the formula.
    ratio = estimates.var(axis=0, ddof=1) / variance
    assert np.all(np.abs(ratio - 1) < 0.35), ratio


def test_rr_is_grr_for_two_categories() -> None:
    rr, grr = randomizer("rr", 1.0, 2), randomizer("grr", 1.0, 2)
    assert (rr.p_star, rr.q_star) == (grr.p_star, grr.q_star)
    assert rr.p_star == pytest.approx(math.e / (math.e + 1))


def test_wang_et_al_variance_formulas() -> None:
    # Var* of Wang et al. (2017), Table 1, for n = 1 report.
    e = math.exp(1.0)
    k = 10
    assert randomizer("grr", 1.0, k).approximate_variance(1) == pytest.approx((e + k - 2) / (e - 1) ** 2)
    assert randomizer("oue", 1.0, k).approximate_variance(1) == pytest.approx(4 * e / (e - 1) ** 2)
    assert randomizer("sue", 1.0, k).approximate_variance(1) == pytest.approx(
        math.exp(0.5) / (math.exp(0.5) - 1) ** 2)
    # OLH with g = e^ε + 1 exactly would give 4e^ε/(e^ε − 1)²; g is rounded to an integer.
    olh = LocalHashing(Fraction(3), k)
    assert olh.g == round(math.exp(3) + 1)
    assert olh.approximate_variance(1) == pytest.approx(4 * math.exp(3) / (math.exp(3) - 1) ** 2, rel=0.01)


def test_olh_collision_probability_is_the_family_s() -> None:
    # q* = c p + (1 − c)(1 − p)/(g − 1) with the exact collision probability c of ((a x + b) mod P) mod g.
    olh = LocalHashing(Fraction(1), 50)
    with _seeded(3):
        reports = olh.randomize(np.zeros(400_000, dtype=np.int64))
    supported = olh.support(reports)[1:] / len(reports)  # categories other than the true one
    sd = math.sqrt(olh.q_star * (1 - olh.q_star) / len(reports))
    assert abs(supported.mean() - olh.q_star) < 6 * sd


# --- privacy audit -------------------------------------------------------------------


def _as_integers(mechanism: LocalRandomizer, reports: pd.DataFrame) -> np.ndarray[Any, Any]:
    """One integer per report: the code (GRR), the bit pattern (UE), or which of inputs 0 and 1 it supports
    (OLH: a post-processing, so an audit of it bounds the randomizer's ε from below too)."""
    if isinstance(mechanism, UnaryEncoding):
        return reports.to_numpy(dtype=np.int64) @ (2 ** np.arange(mechanism.k))
    if isinstance(mechanism, LocalHashing):
        a, b, y = (reports[c].to_numpy() for c in mechanism.columns)
        return 2 * (mechanism._hash(a, b, 0) == y) + (mechanism._hash(a, b, 1) == y)
    return reports["report"].to_numpy()


@pytest.mark.parametrize("method", METHODS)
def test_empirical_privacy_audit(method: str) -> None:
    epsilon = 1.0
    mechanism = randomizer(method, epsilon, 2 if method == "rr" else 3)
    n = 300_000
    with _seeded(11):
        a = _as_integers(mechanism, mechanism.randomize(np.zeros(n, dtype=np.int64)))
        b = _as_integers(mechanism, mechanism.randomize(np.ones(n, dtype=np.int64)))
    bound = epsilon_lower_bound(a.astype(np.int64), b.astype(np.int64))
    assert bound <= epsilon
    # The audit has power: for the randomizers whose report is audited whole, the worst-case event has
    # likelihood ratio e^ε, and 300,000 draws resolve most of it.
    if method != "olh":
        assert bound > 0.8 * epsilon


def test_empirical_privacy_audit_of_the_padded_release() -> None:
    # A protected series' release at ε = 1, count_epsilon = 1 (total 2) on neighbours with 3 and 4 rows:
    # the number of reports and of "b" reports (a post-processing of the shuffled multiset) are audited.
    from dpframe.local.reports import _noised_count
    from dpframe.noise.random import _buffered, current_source

    mechanism = randomizer("grr", 1.0, 2)

    def releases(codes: list[int]) -> np.ndarray[Any, Any]:
        source = _buffered(current_source())
        out = []
        for _ in range(5000):
            reports = _noised_count(mechanism, np.array(codes, dtype=np.int64), Fraction(1), source)["report"]
            out.append(64 * min(len(reports), 63) + min(int(reports.sum()), 63))
        return np.array(out, dtype=np.int64)

    with _seeded(13):
        a, b = releases([0, 0, 0]), releases([0, 0, 0, 1])
    assert epsilon_lower_bound(a, b) <= 2.0


@pytest.mark.parametrize("method", ["grr", "sue", "oue"])
def test_exact_likelihood_ratio_is_e_to_epsilon(method: str) -> None:
    mechanism = randomizer(method, 1.0, 4)
    p, q = mechanism.p_star, mechanism.q_star
    ratio = p / q if method == "grr" else p * (1 - q) / ((1 - p) * q)
    assert ratio == pytest.approx(math.e)


# --- the front door -------------------------------------------------------------------


def test_plain_series_reports_keep_the_index_and_cost_nothing() -> None:
    s = pd.Series(["a", "b", "a"], index=[10, 20, 30], name="x")
    reports = s.dp.randomized_response(epsilon=1.0, categories=["a", "b"], method="oue")
    assert isinstance(reports, LocalReports)
    assert list(reports.frame.index) == [10, 20, 30]
    assert list(reports.to_frame().columns) == ["a", "b"]


def test_categorical_and_boolean_columns_declare_their_categories() -> None:
    s = pd.Series(pd.Categorical(["lo", "hi"], categories=["lo", "mid", "hi"]))
    assert list(s.dp.randomized_response(epsilon=1.0).categories) == ["lo", "mid", "hi"]
    b = pd.Series([True, False])
    assert b.dp.randomized_response(epsilon=1.0, method="rr").randomizer.k == 2


def test_values_outside_the_categories_go_to_other_or_spread_evenly() -> None:
    s = pd.Series(["zz"] * 20_000 + [None] * 10_000)
    with _seeded(5):
        to_other = s.dp.randomized_response(epsilon=3.0, categories=["a", "b"], other="other")
        spread = s.dp.randomized_response(epsilon=3.0, categories=["a", "b", "c"])
    assert list(to_other.categories) == ["a", "b", "other"]
    assert to_other.estimate_frequencies().loc["other", "proportion"] == pytest.approx(1, abs=0.05)
    assert spread.estimate_frequencies()["proportion"].to_numpy() == pytest.approx([1 / 3] * 3, abs=0.05)


def test_protected_series_charges_before_release_and_returns_public_shuffled_reports() -> None:
    p = pd.DataFrame({"c": ["a"] * 3000 + ["b"] * 1000}).dp.protect(epsilon=5.0, ledger=dpframe.Ledger.in_memory())
    reports = p["c"].dp.randomized_response(epsilon=1.0, categories=["a", "b"], count_epsilon=0.5)
    line = p.dp.budget.ledger.iloc[-1]
    assert line["query"] == "randomized_response" and line["epsilon"] == pytest.approx(1.5)
    assert "group privacy" in line["rule"] and "discrete Laplace" in line["noise"]
    assert not isinstance(reports.frame, Protected) and reports.padded
    assert isinstance(reports.frame.index, pd.RangeIndex)
    assert abs(len(reports) - 4000) < 100  # discrete Laplace with scale 2: |Z| < 100 except w.p. e^-50
    table = reports.estimate_frequencies()
    assert table.loc["a", "proportion"] == pytest.approx(0.75, abs=0.1)
    assert "noised" in table.attrs["local_dp"].covers


def test_group_privacy_and_zcdp_budgets() -> None:
    df = pd.DataFrame({"person": [1, 1, 2, 2, 3], "c": ["a", "b", "a", "a", "b"]})
    p = df.dp.protect(epsilon=10.0, privacy_unit="person", max_contributions=2, ledger=dpframe.Ledger.in_memory())
    p["c"].dp.randomized_response(epsilon=1.0, categories=["a", "b"])
    assert p.dp.budget.spent.epsilon.exact == 2 + Fraction(1, 10)
    z = pd.DataFrame({"c": ["a", "b"]}).dp.protect(rho=5.0, ledger=dpframe.Ledger.in_memory())
    z["c"].dp.randomized_response(epsilon=1.0, categories=["a", "b"], count_epsilon=1.0)
    assert z.dp.budget.spent.rho.exact == 2  # (1 + 1)² / 2


def test_budget_exceeded_spends_nothing() -> None:
    p = pd.DataFrame({"c": ["a", "b"]}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(BudgetExceededError):
        p["c"].dp.randomized_response(epsilon=1.0, categories=["a", "b"])
    assert p.dp.budget.spent.epsilon.exact == 0


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"epsilon": 0}, ValueError, "epsilon must be > 0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be > 0"),
        ({"epsilon": 100.0}, ValueError, "above 50"),
        ({"epsilon": 1.0, "method": "rappor"}, ValueError, "unknown method"),
        ({"epsilon": 1.0, "categories": []}, ValueError, "empty"),
        ({"epsilon": 1.0, "categories": None}, ValueError, "must be public"),
        ({"epsilon": 1.0, "categories": ["a", "a"]}, ValueError, "duplicates"),
        ({"epsilon": 1.0, "categories": "ab"}, TypeError, "list of values"),
        ({"epsilon": 1.0, "categories": ["a", "b", "c"], "method": "rr"}, ValueError, "exactly 2 categories"),
        ({"epsilon": 1.0, "categories": ["a"]}, ValueError, "at least 2 categories"),
        ({"epsilon": 1.0, "g": 4}, ValueError, "only applies to method='olh'"),
        ({"epsilon": 1.0, "method": "olh", "g": 1}, ValueError, "g (the number of hash values)"),
        ({"epsilon": 1.0, "count_epsilon": 0}, ValueError, "count_epsilon must be > 0"),
        ({"epsilon": 1.0, "count_epsilon": 1e-20}, ValueError, "count_epsilon=1e-20 is too small"),
    ],
)
def test_bad_arguments_cost_nothing(arguments: dict[str, Any], error: type[Exception], message: str) -> None:
    arguments = {"categories": ["a", "b"], **arguments}
    p = pd.DataFrame({"c": ["a", "b"] * 10}).dp.protect(epsilon=10.0, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        p["c"].dp.randomized_response(**arguments)
    assert p.dp.budget.spent.epsilon.exact == 0 and p.dp.budget.ledger.empty


def test_count_epsilon_is_for_protected_series_only() -> None:
    with pytest.raises(ValueError, match="protected series only"):
        pd.Series(["a"]).dp.randomized_response(epsilon=1.0, categories=["a", "b"], count_epsilon=0.1)


# --- the collector's side -------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_reports_round_trip_through_frames(method: str) -> None:
    s = pd.Series(["a", "b"] * 100)
    reports = s.dp.randomized_response(epsilon=1.0, categories=["a", "b"], method=method)
    back = LocalReports.from_frame(reports.to_frame(), method=method, epsilon=1.0, categories=["a", "b"])
    assert back.frame.equals(reports.frame)
    pooled = LocalReports.concat([reports, back])
    assert len(pooled) == 400
    if method in ("rr", "grr"):  # GRR's estimates always sum to n: (n − n k q*)/(p* − q*) = n
        assert estimate_frequencies(pooled)["count"].sum() == pytest.approx(400)


def test_pooling_refuses_different_randomizers() -> None:
    s = pd.Series(["a", "b"])
    one = s.dp.randomized_response(epsilon=1.0, categories=["a", "b"])
    two = s.dp.randomized_response(epsilon=2.0, categories=["a", "b"])
    with pytest.raises(ValueError, match="cannot be pooled"):
        LocalReports.concat([one, two])


def test_intervals_cover_the_truth_at_their_level() -> None:
    # 200 runs of a 3-category GRR estimate: the 95% intervals cover the true count in 90–99% of them.
    s = pd.Series(["a"] * 2000 + ["b"] * 1000 + ["c"] * 1000)
    covered = 0
    with _seeded(21):
        for _ in range(200):
            table = s.dp.randomized_response(epsilon=1.0, categories=["a", "b", "c"]).estimate_frequencies()
            covered += int(table.loc["a", "lower"] <= 2000 <= table.loc["a", "upper"])
    assert 180 <= covered <= 199


def test_consistent_proportions_are_a_distribution() -> None:
    s = pd.Series(["a"] * 900 + ["b"] * 100)
    with _seeded(2):
        table = s.dp.randomized_response(epsilon=0.5, categories=list("abcdefgh"), method="oue").estimate_frequencies()
    for method in ("norm-sub", "clip"):
        f = consistent_proportions(table, method)
        assert (f >= 0).all() and f.sum() == pytest.approx(1) and "biased" in str(f.name)
    with pytest.raises(ValueError, match="norm-sub"):
        consistent_proportions(table, "softmax")


def test_benchmark_script_runs_on_generated_data(tmp_path: Any) -> None:
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_local.py"
    spec = importlib.util.spec_from_file_location("bench_local", script)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.main(["--generated", "3000", "--runs", "2", "--json", str(tmp_path / "local.json")])
    for row in result["results"]:
        assert set(row["mae"]) == {"grr", "sue", "oue", "olh", "oue+norm-sub", "central"}
        assert row["mae"]["central"] < row["mae"]["oue"]  # at n = 3000 local noise is ~100× central's


@pytest.mark.parametrize("method", METHODS)
def test_reports_draw_from_the_current_source(method: str) -> None:
    # Every coin comes from dpframe.noise.random.current_source(): the test switch reproduces them all.
    s = pd.Series(["a", "b"] * 500)
    runs = []
    for _ in range(2):
        with _seeded(4):
            runs.append(s.dp.randomized_response(epsilon=1.0, categories=["a", "b"], method=method).frame)
    assert runs[0].equals(runs[1])
    assert not runs[0].equals(s.dp.randomized_response(epsilon=1.0, categories=["a", "b"], method=method).frame)
