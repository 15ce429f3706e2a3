"""Vector counts (one Gaussian at L2 sensitivity), range counts from measured strategies, SVT range queries."""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from privacy_audit import epsilon_lower_bound, hockey_stick_lower_bound

import dpframe
from dpframe.accounting.budget import Budget
from dpframe.errors import BudgetExceededError
from dpframe.noise.calibrate import analytic_gaussian_sigma, discrete_gaussian_vector_delta, zcdp_to_approx_epsilon
from dpframe.noise.mechanism import resolve
from dpframe.queries.strategies import MAX_BINS, Strategy, _vector_noise
from dpframe.testing import NotPrivateWarning, seeded_noise

HUGE = 1e6


def _frame(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(0, 100, n).astype(float), "hours": rng.integers(1, 80, n)})


def _spent(p: Any) -> Any:
    return p.dp.budget.spent


# ---------------------------------------------------------------------------
# vector counts
# ---------------------------------------------------------------------------


def test_counts_are_the_counts_with_one_ledger_line() -> None:
    df = _frame()
    p = df.dp.protect(epsilon=HUGE, delta=1e-3)
    c = p.dp.counts({"adults": lambda d: d["age"] >= 18, "long hours": p["hours"] > 40,
                     "both": (p["age"] >= 18) & (p["hours"] > 40)}, epsilon=HUGE / 2, delta=1e-4)
    assert c.tolist() == [int((df.age >= 18).sum()), int((df.hours > 40).sum()),
                          int(((df.age >= 18) & (df.hours > 40)).sum())]
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["counts"]
    assert "L2 sensitivity 1·√3" in ledger["rule"].iloc[0]


def test_counts_missing_values_count_as_false() -> None:
    df = pd.DataFrame({"x": pd.array([1, None, 3, None, 5] * 100, dtype="Int64")})
    p = df.dp.protect(epsilon=HUGE)
    c = p.dp.counts({"big": p["x"] >= 3, "small": p["x"] < 3}, epsilon=HUGE)
    assert c.tolist() == [200, 100]


def test_vector_gaussian_is_calibrated_to_l2_sensitivity() -> None:
    # zCDP: sigma^2 = k^2 m / (2 rho) exactly (rounded up on the noise grid).
    for k, m in [(1, 10), (3, 7)]:
        privacy = resolve(Budget(rho=1.0), None, None, 0.25, None)
        noise, _ = _vector_noise(privacy, m, k)
        assert Fraction(k * k * m, 1) / (2 * Fraction(1, 4)) <= noise.param < Fraction(k * k * m) * 2 * (1 + 1e-9)
    # (epsilon, delta): the exact profile of the vector discrete Gaussian (10 counts each moved by 1) is within
    # (epsilon, delta), and sigma is the analytic Gaussian's for L2 = sqrt(10), below the zCDP conversion's.
    privacy = resolve(Budget(epsilon=10.0, delta=1e-5), 1.0, 1e-6, None, None)
    noise, _ = _vector_noise(privacy, 10, 1)
    assert discrete_gaussian_vector_delta(float(noise.param), 1.0, 1, 10) <= 1e-6
    assert float(noise.param) ** 0.5 == pytest.approx(analytic_gaussian_sigma(1.0, 1e-6, 10**0.5), rel=1e-4)
    implied_rho = 10 / (2 * float(noise.param))
    assert zcdp_to_approx_epsilon(implied_rho, 1e-6) > 1.0  # the zCDP route would have needed more noise


def test_vector_gaussian_beats_composition_for_ten_counts() -> None:
    """10 counts at (1, 1e-6): one vector Gaussian (σ 13.4) vs 10 Gaussians at (0.1, 1e-7) each (σ 41.3)."""
    budget = Budget(epsilon=10.0, delta=1e-3)
    vector, _ = _vector_noise(resolve(budget, 1.0, 1e-6, None, None), 10, 1)
    each = resolve(budget, 0.1, 1e-7, None, None).noise(1)
    ratio = each.std / vector.std
    assert 2.7 < ratio < math.sqrt(10)  # ≈ √10 less noise (composition's (0.1, 1e-7) is not quite a tenth)
    assert ratio == pytest.approx(3.094, abs=0.01)


def test_counts_with_user_level_contributions() -> None:
    df = _frame(1000).assign(user=np.arange(1000) // 4)
    p = df.dp.protect(epsilon=HUGE, delta=1e-3, privacy_unit="user", max_contributions=2)
    c = p.dp.counts({"a": p["age"] >= 50, "b": p["age"] < 50}, epsilon=HUGE / 2, delta=1e-4)
    assert c.sum() == 250 * 2  # 250 users, two rows kept of their four
    assert "L2 sensitivity 2·√2" in p.dp.budget.ledger["rule"].iloc[0]


def test_counts_laplace_and_zcdp() -> None:
    p = _frame().dp.protect(epsilon=10.0)
    c = p.dp.counts({"a": p["age"] >= 50, "b": p["age"] < 50}, epsilon=1.0)
    assert c.attrs["dp"].mechanism == "discrete Laplace"
    assert "L1 sensitivity 1·2" in p.dp.budget.ledger["rule"].iloc[0]
    z = _frame(seed=1).dp.protect(rho=1.0)
    z.dp.counts({"a": z["age"] >= 50}, rho=0.5)
    assert z.dp.budget.spent.rho == 0.5


def test_counts_bad_input_costs_nothing() -> None:
    df = _frame()
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    other = _frame(seed=1).dp.protect(epsilon=1.0)

    def broken(d: Any) -> Any:
        return d["no such column"] > 0

    for conditions, error in [
        ({}, TypeError),
        ([p["age"] > 1], TypeError),
        ({"plain": df["age"] > 1}, TypeError),
        ({"other": other["age"] > 1}, TypeError),
        ({"filtered": p[p["age"] > 5]["age"] > 1}, TypeError),
        ({"number": p["age"]}, TypeError),
        ({"frame": lambda d: d[["age"]] > 1}, TypeError),
        ({"broken": broken}, KeyError),
    ]:
        with pytest.raises(error):
            p.dp.counts(conditions, epsilon=0.5, delta=1e-7)
    with pytest.raises(BudgetExceededError):
        p.dp.counts({"a": p["age"] > 1}, epsilon=2.0, delta=1e-7)
    assert _spent(p).epsilon == 0 and p.dp.budget.ledger.empty


def test_sums_are_the_sums_and_calibrated_per_sensitivity() -> None:
    df = _frame()
    p = df.dp.protect(epsilon=HUGE, delta=1e-3)
    s = p.dp.sums({"age": ("age", (0, 100)), "hours": (p["hours"] * 2, (0, 200))}, epsilon=HUGE / 2, delta=1e-4)
    assert s.tolist() == pytest.approx([df.age.sum(), 2 * df.hours.sum()], abs=5)  # σ ≈ 0.3 at this ε
    assert "L2 sensitivity √2" in p.dp.budget.ledger["rule"].iloc[0]
    z = _frame(seed=2).dp.protect(rho=1.0)
    s = z.dp.sums({"a": ("age", (0, 100)), "b": ("hours", (0, 1000))}, rho=0.5)
    # Each sum's σ is proportional to its bound, and m = 2 sums at rho 0.5 are the 2 of one Gaussian at rho 0.25.
    std = s.attrs["dp"].std
    assert std["b"] / std["a"] == pytest.approx(10, rel=1e-3)
    assert std["a"] == pytest.approx(100 / math.sqrt(2 * 0.25), rel=1e-3)


def test_sums_bad_input_costs_nothing() -> None:
    df = _frame().assign(name="x")
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    other = _frame(seed=3).dp.protect(epsilon=1.0)
    for columns, error in [({}, TypeError), ({"a": "age"}, TypeError), ({"a": ("age", (5, 1))}, ValueError),
                           ({"a": ("nope", (0, 1))}, KeyError), ({"a": ("name", (0, 1))}, TypeError),
                           ({"a": (other["age"], (0, 1))}, TypeError), ({"a": ("age", None)}, ValueError)]:
        with pytest.raises(error):
            p.dp.sums(columns, epsilon=0.5, delta=1e-7)
    assert p.dp.budget.ledger.empty


def test_audit_vector_gaussian() -> None:
    """Neighbours differ by one row meeting all m = 4 conditions; the sum of the released counts (the most
    revealing direction, shift m) must not show more than the claimed (ε, δ); a halved σ is caught."""
    epsilon, delta, m, n = 1.0, 1e-6, 4, 400_000
    noise, _ = _vector_noise(resolve(Budget(epsilon=1.0, delta=1e-5), epsilon, delta, None, None), m, 1)
    frame = _frame(200)
    conditions = {f"c{i}": (lambda d, i=i: d["age"] >= 0) for i in range(m)}
    exact = []
    for data in (frame, pd.concat([frame, frame.iloc[:1]], ignore_index=True)):
        p = data.dp.protect(epsilon=HUGE, delta=1e-3)
        exact.append(int(p.dp.counts(conditions, epsilon=HUGE / 2, delta=1e-4).sum()))
    assert exact[1] - exact[0] == m
    weak = type(noise)("gaussian", noise.param / 4)  # σ halved: a broken calibration
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(7):
            a, b, weak_a, weak_b = (exact[i] + spec.sample(m * n).reshape(n, m).sum(axis=1)
                                    for i, spec in [(0, noise), (1, noise), (0, weak), (1, weak)])
    assert epsilon_lower_bound(a, b, delta) <= epsilon
    assert hockey_stick_lower_bound(a, b, epsilon) <= delta
    assert epsilon_lower_bound(weak_a, weak_b, delta) > epsilon


# ---------------------------------------------------------------------------
# strategies for range counts
# ---------------------------------------------------------------------------


RANGES = [(None, 20), (20, 40), (40, 60), (60, None), (None, None), (0, 100), (30, 31), (0, 50)]


def test_range_counts_exact_and_consistent() -> None:
    df = _frame()
    df.loc[:9, "age"] = -5.0  # below the bins
    df.loc[10:14, "age"] = 120.0  # above them
    df.loc[15:16, "age"] = np.nan  # not counted
    for strategy in ("identity", "hierarchical"):
        p = df.dp.protect(epsilon=HUGE, ledger=dpframe.Ledger.in_memory())
        r = p["age"].dp.range_counts(RANGES, bins=100, bounds=(0, 100), strategy=strategy, epsilon=HUGE)
        truth = [((df.age >= (lo if lo is not None else -np.inf)) & (df.age < (hi if hi is not None else np.inf))).sum()
                 for lo, hi in RANGES]
        assert r.to_numpy() == pytest.approx(truth, abs=0.01)
        assert r.iloc[:4].sum() == pytest.approx(r.iloc[4], rel=1e-12)  # parts add up to the total
        clipping = r.attrs["dp"].clipping
        assert (round(clipping.below), round(clipping.above)) == (10, 5)
        assert p.dp.budget.ledger["query"].tolist() == ["range_counts"]


def test_range_counts_consistent_under_noise() -> None:
    p = _frame().dp.protect(epsilon=1.0)
    edges = list(range(0, 101, 10))
    parts = [(None, 0)] + [(a, b) for a, b in itertools.pairwise(edges)] + [(100, None)]
    r = p["age"].dp.range_counts(parts + [(None, None), (None, 50), (50, None)], bins=edges, epsilon=1.0,
                                 strategy="hierarchical", branching=3)
    assert r.iloc[:12].sum() == pytest.approx(r.iloc[12], rel=1e-9)
    assert r.iloc[13] + r.iloc[14] == pytest.approx(r.iloc[12], rel=1e-9)
    assert not float(r.iloc[12]).is_integer()  # least squares moved the noisy total


@pytest.mark.parametrize("strategy,mechanism", [("identity", "laplace"), ("hierarchical", "laplace"),
                                                ("hierarchical", "gaussian")])
def test_range_counts_unbiased_with_stated_variance(strategy: str, mechanism: str) -> None:
    """Monte Carlo through the accessor: mean error ~ 0 and error variance = the stated std² (seeded)."""
    df = _frame(3000)
    ranges = [(0, 10), (None, 50), (20, 90), (None, None), (45, 50)]
    truth = np.array([((df.age >= lo) & (df.age < hi)).sum() for lo, hi in
                      [(0, 10), (-np.inf, 50), (20, 90), (-np.inf, np.inf), (45, 50)]], dtype=float)
    reps = 600
    p = df.dp.protect(epsilon=10.0 * reps, delta=1e-3)
    delta = 1e-6 if mechanism == "gaussian" else None
    errors, stds = [], None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(3):
            for _ in range(reps):
                r = p["age"].dp.range_counts(ranges, bins=20, bounds=(0, 100), strategy=strategy,
                                             branching=4 if strategy == "hierarchical" else None, epsilon=1.0,
                                             delta=delta)
                errors.append(r.to_numpy() - truth)
                stds = r.attrs["dp"].std.to_numpy()
    err = np.array(errors)
    assert stds is not None
    # Means within 5 standard errors of 0; variances within 30% (≥ 5 standard errors for Laplace's kurtosis).
    assert np.all(np.abs(err.mean(axis=0)) < 5 * stds / math.sqrt(reps))
    assert err.var(axis=0) == pytest.approx(stds**2, rel=0.3)
    coverage = (np.abs(err) <= 1.96 * stds).mean()
    assert 0.92 < coverage < 0.98


def test_hierarchical_wins_on_large_ranges_identity_on_small() -> None:
    leaves = 130
    identity, tree = Strategy.identity(leaves), Strategy.hierarchical(leaves)
    starts, stops = np.array([0, 60]), np.array([leaves, 61])  # everything, one bin
    budget = Budget(epsilon=10.0)
    lap_identity = resolve(budget, 1.0, None, None, None).noise(identity.levels).std ** 2
    lap_tree = resolve(budget, 1.0, None, None, None).noise(tree.levels).std ** 2
    var_identity = lap_identity * identity.range_variances(starts, stops)
    var_tree = lap_tree * tree.range_variances(starts, stops)
    assert var_tree[0] < var_identity[0] / 10
    assert var_tree[1] > var_identity[1]
    # The identity's variances are the number of bins (σ² each).
    assert identity.range_variances(starts, stops).tolist() == pytest.approx([leaves, 1])


def test_auto_strategy_picks_the_smaller_workload_variance() -> None:
    df = _frame()
    p = df.dp.protect(epsilon=10.0)
    short = [(a, a + 1) for a in range(100)]
    assert "identity" in p["age"].dp.range_counts(short, bins=100, bounds=(0, 100), epsilon=1.0).attrs["dp"].note
    long = [(0, b) for b in range(500, 1025)]
    r = p["age"].dp.range_counts(long, bins=1024, bounds=(0, 1024), epsilon=1.0)
    assert "hierarchical" in r.attrs["dp"].note
    assert p.dp.budget.ledger["rule"].str.startswith(("identity", "hierarchical")).all()


def test_strategy_estimate_is_least_squares() -> None:
    tree = Strategy.hierarchical(7, branching=3)
    y = np.random.default_rng(1).normal(size=len(tree.matrix))
    expected, *_ = np.linalg.lstsq(tree.matrix, y, rcond=None)
    assert tree.estimate(y) == pytest.approx(expected)
    starts, stops = np.array([0, 2, 6]), np.array([7, 5, 7])
    inverse = np.linalg.inv(tree.matrix.T @ tree.matrix)
    w = np.zeros((3, 7))
    for i, (a, b) in enumerate(zip(starts, stops)):
        w[i, a:b] = 1
    assert tree.range_variances(starts, stops) == pytest.approx(np.einsum("ij,jk,ik->i", w, inverse, w))


def test_audit_hierarchical_tree() -> None:
    """Neighbours differ by one row; it moves one count per level. The sum of the measured counts of the
    nodes above its leaf (shift = levels) must not show more than ε."""
    epsilon, n = 1.0, 1_000_000
    tree = Strategy.hierarchical(20, branching=3)
    noise = resolve(Budget(epsilon=1.0), epsilon, None, None, None).noise(tree.levels)
    leaf = 7
    path = np.flatnonzero(tree.matrix[:, leaf])
    assert len(path) == tree.levels
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(11):
            a = 50 * tree.levels + noise.sample(tree.levels * n).reshape(n, -1).sum(axis=1)
            b = 51 * tree.levels + noise.sample(tree.levels * n).reshape(n, -1).sum(axis=1)
    assert epsilon_lower_bound(a, b) <= epsilon
    assert epsilon_lower_bound(a, b) > 0.5  # the audit sees most of the loss: it has power


def test_range_counts_bad_input_costs_nothing() -> None:
    p = _frame().assign(name="x").dp.protect(epsilon=1.0)
    age = p["age"]
    cases: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"ranges": [(0, 15)], "bins": 10, "bounds": (0, 100)}, ValueError),  # 15 is not an edge
        ({"ranges": [(20, 20)], "bins": 10, "bounds": (0, 100)}, ValueError),
        ({"ranges": [(30, 20)], "bins": 10, "bounds": (0, 100)}, ValueError),
        ({"ranges": [], "bins": 10, "bounds": (0, 100)}, TypeError),
        ({"ranges": [(0, 10, 20)], "bins": 10, "bounds": (0, 100)}, TypeError),
        ({"ranges": [("a", 10)], "bins": 10, "bounds": (0, 100)}, TypeError),
        ({"ranges": [(0, 10)], "bins": 10}, ValueError),  # no bounds
        ({"ranges": [(0, 10)], "bins": None}, ValueError),
        ({"ranges": [(0, 10)], "bins": [0, 10, 5]}, ValueError),
        ({"ranges": [(0, 10)], "bins": [0, 10], "bounds": (0, 10)}, ValueError),
        ({"ranges": [(0, 10)], "bins": MAX_BINS + 1, "bounds": (0, 100)}, ValueError),
        ({"ranges": [(0, 10)], "bins": 10, "bounds": (0, 100), "strategy": "wavelet"}, ValueError),
        ({"ranges": [(0, 10)], "bins": 10, "bounds": (0, 100), "branching": 1}, ValueError),
        ({"ranges": [(0, 10)], "bins": 10, "bounds": (0, 100), "strategy": "identity", "branching": 4}, ValueError),
        ({"ranges": [(0, 10)], "bins": 10, "bounds": (0, 100), "strategy": None}, ValueError),
    ]
    for kwargs, error in cases:
        with pytest.raises(error):
            age.dp.range_counts(epsilon=0.5, **kwargs)
    with pytest.raises(TypeError):
        p["name"].dp.range_counts([(0, 10)], bins=10, bounds=(0, 100), epsilon=0.5)
    with pytest.raises(BudgetExceededError):
        age.dp.range_counts([(0, 10)], bins=10, bounds=(0, 100), epsilon=2.0)
    with pytest.raises(BudgetExceededError):  # this budget has no delta
        age.dp.range_counts([(0, 10)], bins=10, bounds=(0, 100), epsilon=0.5, delta=1e-6)
    assert _spent(p).epsilon == 0 and p.dp.budget.ledger.empty


# ---------------------------------------------------------------------------
# SVT range queries on the accessor
# ---------------------------------------------------------------------------


def test_range_queries_on_the_accessor_with_open_ends() -> None:
    df = _frame()
    p = df.dp.protect(epsilon=HUGE)
    ranges = [(None, 9), (10, 49), (50, None), (None, None)]
    found = p["age"].dp.range_queries(ranges, threshold=2000, epsilon=HUGE / 2, c=4)
    truth = [int((df.age <= 9).sum()), int(df.age.between(10, 49).sum()), int((df.age >= 50).sum()), len(df)]
    expected = [(r, t) for r, t in zip(ranges, truth) if t >= 2000]
    assert found.tolist() == pytest.approx([t for _, t in expected], abs=2)
    assert [(i.left, i.right) for i in found.index] == [
        (-np.inf if lo is None else lo, np.inf if hi is None else hi) for (lo, hi), _ in expected]
    for bad in ([(0, np.inf)], [(-np.inf, 5)], [(None, np.nan)]):
        with pytest.raises(ValueError):
            p["age"].dp.range_queries(bad, threshold=10, epsilon=1.0)
    assert p.dp.budget.ledger["query"].tolist() == ["range queries (detect)", "range queries (release)"]


def test_vector_counts_on_a_renyi_budget_take_rho() -> None:
    frame = pd.DataFrame({"age": list(range(100)) * 10})
    p = frame.dp.protect(ledger=dpframe.Ledger.in_memory(), epsilon=1.0, delta=1e-6, accounting="rdp")
    p.dp.counts({"minors": p["age"] < 18, "old": p["age"] > 60}, rho=0.01)
    line = p.dp.budget.ledger.iloc[-1]
    assert (line["query"], line["noise"], line["rho"]) == ("counts", "count σ=10", pytest.approx(0.01))  # σ² = 2/(2ρ)
