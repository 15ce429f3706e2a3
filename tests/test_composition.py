"""Composition rules, conversions and the filter budgets (dpframe.accounting.composition, accounting= budgets)."""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import dpframe
from dpframe.accounting import composition as c
from dpframe.noise import calibrate
from dpframe.noise.mechanism import round_up

# -- the example: 500 queries at ε = 0.01 -----------------------------------------------


def test_the_book_example_500_queries() -> None:
    k, eps = 500, 0.01
    assert k * eps == pytest.approx(5.0)
    advanced, delta = c.advanced_composition(eps, 0, k, 1e-5)
    assert round(advanced, 2) == 1.12 and delta == pytest.approx(1e-5)
    zcdp = c.zcdp_to_approx_epsilon(k * c.pure_to_zcdp(eps), 1e-5)
    assert round(zcdp, 2) == 0.90
    rdp, _ = c.rdp_to_approx([k * c.pure_dp_rdp(eps, a) for a in c.ORDERS], c.ORDERS, 1e-5)
    optimal = c.optimal_composition(eps, 0, k, 1e-5)
    kov, _ = c.advanced_composition_heterogeneous([eps] * k, None, 1e-5)
    # The exact optimum is below every bound; each bound is below sequential composition.
    assert optimal < rdp < zcdp < kov < advanced < k * eps


# -- (ε, δ) composition ------------------------------------------------------------------------


def _rr_delta_brute(eps0: float, k: int, eps: float) -> float:
    """Hockey-stick divergence of k independent ε₀-randomized responses, by enumerating outcomes."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    total = 0.0
    for outcome in itertools.product([0, 1], repeat=k):
        flips = sum(outcome)
        prob_p = p ** (k - flips) * (1 - p) ** flips
        prob_q = (1 - p) ** (k - flips) * p ** flips
        total += max(0.0, prob_p - math.exp(eps) * prob_q)
    return total


@pytest.mark.parametrize(("eps0", "k", "eps"), [(0.5, 4, 0.3), (1.0, 6, 1.5), (0.2, 7, 0.0), (0.3, 5, 1.0)])
def test_optimal_composition_matches_enumerated_randomized_response(eps0: float, k: int, eps: float) -> None:
    assert c._rr_delta(eps0, k, eps) == pytest.approx(_rr_delta_brute(eps0, k, eps), rel=1e-9, abs=1e-15)


def test_optimal_composition_is_the_smallest_epsilon_at_the_target() -> None:
    eps = c.optimal_composition(0.1, 0, 50, 1e-6)
    assert c._rr_delta(0.1, 50, eps) <= 1e-6 < c._rr_delta(0.1, 50, eps * 0.999)


def test_composition_bounds_are_monotone() -> None:
    values = [c.advanced_composition(0.01, 0, k, 1e-6)[0] for k in (10, 100, 1000)]
    assert values == sorted(values)
    assert c.advanced_composition(0.01, 0, 100, 1e-8)[0] > c.advanced_composition(0.01, 0, 100, 1e-4)[0]
    # For few queries advanced composition is worse than sequential: the smaller is returned.
    assert c.advanced_composition(1.0, 0, 2, 1e-6)[0] == 2.0


def test_heterogeneous_composition_accounts_for_every_delta() -> None:
    _, delta = c.advanced_composition_heterogeneous([0.1, 0.2], [1e-6, 2e-6], 1e-5)
    assert delta == pytest.approx(1 - (1 - 1e-5) * (1 - 1e-6) * (1 - 2e-6))
    with pytest.raises(ValueError, match="one delta per epsilon"):
        c.advanced_composition_heterogeneous([0.1, 0.2], [1e-6], 1e-5)


def test_group_privacy() -> None:
    assert c.group_privacy(0.5, 1e-6, 3) == pytest.approx((1.5, 3 * math.exp(1.0) * 1e-6))
    assert c.group_privacy_zcdp(0.1, 4) == pytest.approx(1.6)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_bad_arguments_say_what_is_wrong(bad: float) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        c.advanced_composition(bad, 0, 10, 1e-6)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        c.advanced_composition(0.1, 0, 0, 1e-6)
    with pytest.raises(ValueError, match="Rényi order"):
        c.gaussian_rdp(1.0, 1.0)


# -- Rényi curves against numerical integration -------------------------------------------------


def _renyi_numeric(p: object, q: object, alpha: float, low: float, high: float, points: list[float]) -> float:
    """D_α(P ‖ Q) = ln ∫ p^α q^{1−α} / (α − 1) by adaptive quadrature."""
    def integrand(x: float) -> float:
        return math.exp(alpha * p.logpdf(x) + (1 - alpha) * q.logpdf(x))  # type: ignore[attr-defined]

    value, _ = integrate.quad(integrand, low, high, points=points, limit=500, epsabs=0, epsrel=1e-11)
    return math.log(value) / (alpha - 1)


@pytest.mark.parametrize("alpha", [1.5, 2.0, 3.0, 8.0])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_laplace_rdp_matches_integration(eps: float, alpha: float) -> None:
    scale = 1 / eps
    p, q = stats.laplace(0, scale), stats.laplace(1, scale)
    numeric = _renyi_numeric(p, q, alpha, -60 * scale, 60 * scale, [0.0, 1.0])
    assert c.laplace_rdp(eps, alpha) == pytest.approx(numeric, rel=1e-7)


@pytest.mark.parametrize("alpha", [1.25, 2.0, 10.0])
@pytest.mark.parametrize("sigma", [0.7, 3.0])
def test_gaussian_rdp_matches_integration(sigma: float, alpha: float) -> None:
    p, q = stats.norm(0, sigma), stats.norm(1, sigma)
    numeric = _renyi_numeric(p, q, alpha, -40 * sigma - 20, 40 * sigma + 20, [0.0, 1.0])
    assert c.gaussian_rdp(sigma, alpha) == pytest.approx(numeric, rel=1e-7)


@pytest.mark.parametrize(("eps", "alpha"), [(0.01, 2.0), (0.5, 1.25), (1.0, 4.0), (5.0, 32.0), (10.0, 8.0)])
def test_pure_dp_rdp_is_randomized_response_and_bounds_laplace(eps: float, alpha: float) -> None:
    pr = math.exp(eps) / (1 + math.exp(eps))
    direct = math.log(pr**alpha * (1 - pr) ** (1 - alpha) + (1 - pr) ** alpha * pr ** (1 - alpha)) / (alpha - 1)
    assert c.pure_dp_rdp(eps, alpha) == pytest.approx(direct, rel=1e-9)
    assert c.laplace_rdp(eps, alpha) <= c.pure_dp_rdp(eps, alpha) * (1 + 1e-12)
    assert c.pure_dp_rdp(eps, alpha) <= min(eps, alpha * eps**2 / 2) * (1 + 1e-12)


def test_pure_dp_rdp_keeps_its_digits_for_tiny_epsilon() -> None:
    # The leading term is α ε² / 2; a cancelling formula would lose it entirely here.
    assert c.pure_dp_rdp(1e-9, 2.0) == pytest.approx(2 * 1e-18 / 2, rel=1e-6)


def test_curves_are_monotone_in_order_and_parameter() -> None:
    for curve in (lambda a: c.pure_dp_rdp(0.3, a), lambda a: c.laplace_rdp(0.3, a),
                  lambda a: c.poisson_gaussian_rdp(0.05, 1.1, a)):
        values = [curve(a) for a in c.ORDERS]
        assert values == sorted(values)
    assert c.pure_dp_rdp(0.2, 3.0) < c.pure_dp_rdp(0.3, 3.0)
    assert c.poisson_gaussian_rdp(0.01, 1.0, 4) < c.poisson_gaussian_rdp(0.02, 1.0, 4)


@pytest.mark.parametrize(("rate", "sigma", "alpha"), [(0.01, 1.0, 2), (0.1, 0.8, 4), (0.5, 2.0, 8), (0.02, 1.2, 32)])
def test_subsampled_gaussian_matches_integration(rate: float, sigma: float, alpha: int) -> None:
    base = stats.norm(0, sigma)

    class Mixture:
        @staticmethod
        def logpdf(x: float) -> float:
            return float(np.logaddexp(math.log1p(-rate) + base.logpdf(x), math.log(rate) + stats.norm(1, sigma).logpdf(x)))

    low, high = -40 * sigma - 10, 40 * sigma + alpha + 10
    forward = _renyi_numeric(Mixture, base, alpha, low, high, [0.0, 1.0])
    backward = _renyi_numeric(base, Mixture, alpha, low, high, [0.0, 1.0])
    assert c.poisson_gaussian_rdp(rate, sigma, alpha) == pytest.approx(forward, rel=1e-6)
    assert backward <= forward * (1 + 1e-9)  # the formula's direction is the larger one [MTZ19]
    # A fractional order is bounded by the next integer (Rényi divergence grows with the order).
    assert c.poisson_gaussian_rdp(rate, sigma, alpha - 0.5) == c.poisson_gaussian_rdp(rate, sigma, alpha)


# -- conversions ------------------------------------------------------------------------------


@pytest.mark.parametrize(("rho", "delta"), [(0.01, 1e-6), (0.5, 1e-9), (2.0, 1e-5)])
def test_rdp_conversion_of_a_zcdp_curve_agrees_with_the_zcdp_conversion(rho: float, delta: float) -> None:
    orders = np.linspace(1.01, 200, 20000)
    grid, _ = c.rdp_to_approx([rho * a for a in orders], orders, delta)
    exact_opt = c.zcdp_to_approx_epsilon(rho, delta)
    assert exact_opt <= grid <= exact_opt * (1 + 1e-4)
    # Both beat Bun & Steinke's ρ + 2√(ρ ln(1/δ)).
    assert exact_opt < rho + 2 * math.sqrt(rho * math.log(1 / delta))


@pytest.mark.parametrize(("sigma", "delta"), [(1.0, 1e-5), (5.0, 1e-6), (20.0, 1e-8)])
def test_rdp_conversion_is_sound_for_the_gaussian(sigma: float, delta: float) -> None:
    eps, _ = c.rdp_to_approx([c.gaussian_rdp(sigma, a) for a in c.ORDERS], c.ORDERS, delta)
    # The Gaussian's exact privacy profile at that ε is within δ.
    assert calibrate.gaussian_delta(sigma, eps, 1.0) <= delta


# -- the filters ----------------------------------------------------------------------------

releases = st.lists(st.tuples(st.sampled_from(["laplace", "gaussian"]), st.floats(1e-4, 2.0)), min_size=1,
                    max_size=60)


@settings(max_examples=60, deadline=None)
@given(releases, st.sampled_from([0.5, 1.0, 4.0]), st.sampled_from([1e-3, 1e-6, 1e-10]))
def test_the_renyi_filter_never_admits_more_than_its_target(plan: list[tuple[str, float]], target: float,
                                                            delta: float) -> None:
    rule = c.RenyiFilter(Fraction(target), Fraction(delta))
    state = rule.zero()
    curve = [Fraction(0)] * len(c.ORDERS)  # the exact sums of the curves as computed in floating point
    for mechanism, size in plan:
        eps, rho = (Fraction(size), Fraction(0)) if mechanism == "laplace" else (Fraction(0), Fraction(size / 10))
        candidate = rule.add(state, rule.increment(eps, rho))
        if not rule.admits(candidate):
            continue  # refused: nothing charged, the analyst may try something smaller
        state = candidate
        curve = [total + (Fraction(c.pure_dp_rdp(float(eps), a)) if eps else 0) + Fraction(a) * rho
                 for total, a in zip(curve, c.ORDERS, strict=True)]
        # The stored totals bound the exact ones, and what they convert to stays within the target,
        # unless the releases so far are pure and fit sequentially (privacy loss at most the target everywhere).
        assert all(state[key] >= value for key, value in zip(rule.keys[2:], curve, strict=True))
        if rule.admits_own(state):
            assert c.rdp_to_approx([float(v) for v in curve], c.ORDERS, delta)[0] <= target
        else:
            assert not state["rho"] and state["epsilon"] <= target
        assert rule.epsilon(state) <= target * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1e-4, 0.5), min_size=1, max_size=80), st.sampled_from([0.3, 1.0, 3.0]),
       st.sampled_from([1e-4, 1e-8]))
def test_the_advanced_filter_never_admits_more_than_its_target(epsilons: list[float], target: float,
                                                               delta: float) -> None:
    rule = c.AdvancedFilter(Fraction(target), Fraction(delta))
    state, admitted = rule.zero(), []
    for eps in epsilons:
        candidate = rule.add(state, rule.increment(Fraction(eps), Fraction(0)))
        if rule.admits(candidate):
            state = candidate
            admitted.append(eps)
            # Either rule's guarantee: the bound KOV15 takes the smaller of too.
            assert c.advanced_composition_heterogeneous(admitted, None, delta)[0] <= target * (1 + 1e-12)


# -- budgets kept as filters ------------------------------------------------------------------


def _frame(n: int = 2000) -> pd.DataFrame:
    return pd.DataFrame({"x": np.arange(n) % 5, "y": np.arange(n) / n})


def test_a_renyi_budget_shows_each_release_in_its_own_terms() -> None:
    p = _frame().dp.protect(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=dpframe.Ledger.in_memory())
    with dpframe.testing.seeded_noise(1):
        p.dp.count(epsilon=0.1)
        p["y"].dp.sum(bounds=(0, 1), rho=0.01)
    lines = p.dp.budget.ledger
    assert lines["epsilon"].tolist() == [0.1, 0.0] and lines["rho"].tolist() == [0.0, 0.01]
    assert lines["delta"].tolist() == [0.0, 0.0]
    assert lines["rule"].str.contains("Rényi").all()
    assert p.dp.budget.kind == "rdp" and "Rényi filter" in repr(p.dp.budget)
    spent = p.dp.budget.spent
    assert 0 < float(spent.epsilon) < 0.1 + 2 * math.sqrt(0.01 * math.log(1e6)) and float(spent.delta) == 1e-6


def test_a_laplace_query_of_several_parts_stays_pure_on_a_renyi_budget() -> None:
    # Automatic bounds split the query's ε (not its ε²/2), so a lone mean reads as its ε, as sequentially.
    p = _frame().dp.protect(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=dpframe.Ledger.in_memory())
    with dpframe.testing.seeded_noise(5):
        p["y"].dp.mean(epsilon=0.2)
    lines = p.dp.budget.ledger
    assert len(lines) == 3 and lines["rho"].eq(0).all() and lines["epsilon"].sum() == pytest.approx(0.2)
    assert float(p.dp.budget.spent.epsilon) == pytest.approx(0.2)


def test_synthesize_on_a_renyi_budget_is_charged_in_rho() -> None:
    p = _frame(500).dp.protect(epsilon=3.0, delta=1e-6, accounting="rdp", ledger=dpframe.Ledger.in_memory())
    with dpframe.testing.seeded_noise(6):
        p.dp.synthesize(epsilon=0.2, method="marginals", n=50, progress=False)
    lines = p.dp.budget.ledger
    assert lines["epsilon"].eq(0).all() and lines["rho"].sum() == pytest.approx(0.2**2 / 2)


def test_a_renyi_budget_admits_many_more_small_releases_than_sequential_composition() -> None:
    p = _frame().dp.protect(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=dpframe.Ledger.in_memory())
    admitted = 0
    with dpframe.testing.seeded_noise(2):
        while True:
            try:
                p.dp.count(epsilon=0.01)
            except dpframe.BudgetExceededError as error:
                assert "nothing was charged" in str(error)
                break
            admitted += 1
    assert admitted > 300  # sequentially: 100
    assert p.dp.budget.ledger.shape[0] == admitted and float(p.dp.budget.spent.epsilon) <= 1.0


def test_a_renyi_gaussian_release_costs_at_most_what_is_charged() -> None:
    # The discrete Gaussian's exact privacy profile (CKS20 Thm 7) at the ε the budget reads is within its δ.
    p = _frame().dp.protect(epsilon=2.0, delta=1e-6, accounting="rdp", ledger=dpframe.Ledger.in_memory())
    rho = 0.05
    with dpframe.testing.seeded_noise(3):
        p.dp.count(rho=rho)
    charged = float(p.dp.budget.spent.epsilon)
    sigma2 = float(round_up(Fraction(1) / (2 * Fraction(rho))))  # the noise a count of sensitivity 1 gets
    assert calibrate.discrete_gaussian_delta(sigma2, charged, 1) <= 1e-6
    # And the charge is not far from the truth: at 0.8 of it the exact δ is already above the target.
    assert calibrate.discrete_gaussian_delta(sigma2, 0.8 * charged, 1) > 1e-6


def test_filters_persist_through_the_sqlite_ledger(tmp_path: object) -> None:
    path = str(tmp_path) + "/ledger.sqlite"  # type: ignore[operator]
    data = _frame()
    for kind in ("rdp", "advanced"):
        first = dpframe.Ledger(path)
        budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting=kind, name=kind, ledger=first)
        p = data.dp.protect(budget=budget) if kind == "rdp" else data.assign(z=1).dp.protect(budget=budget)
        with dpframe.testing.seeded_noise(4):
            for _ in range(30):
                p.dp.count(epsilon=0.02)
        before = budget.spent
        # Another connection (as after a restart) reads the same state and keeps filtering from it.
        again = dpframe.Ledger(path)
        reopened = again.record(budget.id)
        assert reopened.spent == before.cost and reopened.kind == kind
        state = again._read("SELECT key, value FROM filter_state WHERE budget_id = ?", (budget.id,))
        assert len(state) == (len(c.ORDERS) + 2 if kind == "rdp" else 4)
        rule = c.filter_for(kind, Fraction(1), Fraction(1, 10**6))
        totals = {key: Fraction(value) for key, value in state}
        single = rule.increment(Fraction(1, 50), Fraction(0))
        expected = rule.zero()
        for _ in range(30):
            expected = rule.add(expected, single)
        assert totals == expected


def test_a_refused_release_changes_nothing() -> None:
    ledger = dpframe.Ledger.in_memory()
    budget = dpframe.Budget(epsilon=0.5, delta=1e-6, accounting="rdp", ledger=ledger)
    budget._charge(dpframe.Cost(epsilon=Fraction(2, 5)), query="count")
    state = ledger._read("SELECT key, value FROM filter_state WHERE budget_id = ? ORDER BY key", (budget.id,))
    with pytest.raises(dpframe.BudgetExceededError, match="nothing was charged"):
        budget._charge(dpframe.Cost(epsilon=Fraction(1, 2)), query="count")
    assert ledger._read("SELECT key, value FROM filter_state WHERE budget_id = ? ORDER BY key",
                        (budget.id,)) == state
    assert budget.ledger.shape[0] == 1


def test_filter_budget_arguments_are_checked_before_anything_is_charged() -> None:
    ledger = dpframe.Ledger.in_memory()
    with pytest.raises(ValueError, match="delta > 0"):
        dpframe.Budget(epsilon=1.0, accounting="rdp", ledger=ledger)
    with pytest.raises(ValueError, match="accounting must be one of"):
        dpframe.Budget(epsilon=1.0, delta=1e-6, accounting="renyi", ledger=ledger)
    p = _frame().dp.protect(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=ledger)
    with pytest.raises(ValueError, match="not delta="):
        p.dp.count(epsilon=0.1, delta=1e-7)
    q = _frame().assign(z=2).dp.protect(epsilon=1.0, delta=1e-6, accounting="advanced", ledger=ledger)
    with pytest.raises(ValueError, match="pass epsilon= only"):
        q.dp.count(rho=0.1)
    assert p.dp.budget.ledger.empty and q.dp.budget.ledger.empty
    with pytest.raises(ValueError, match="accounting="):
        _frame().dp.protect(budget=p.dp.budget, accounting="rdp")


def test_a_filter_budget_cannot_be_extended_after_a_release() -> None:
    budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=dpframe.Ledger.in_memory())
    budget.extend(epsilon=2.0, delta=1e-6)  # before any release: the filter starts with this total
    budget._charge(dpframe.Cost(epsilon=Fraction(1, 10)), query="count")
    with pytest.raises(dpframe.LedgerError, match="fixed from its first release"):
        budget.extend(epsilon=3.0, delta=1e-6)
    assert float(budget.total.epsilon) == 2.0


def test_a_zcdp_budget_reads_with_the_tight_conversion() -> None:
    budget = dpframe.Budget(rho=0.025, ledger=dpframe.Ledger.in_memory())
    assert budget.total.as_approx(1e-5)[0] == pytest.approx(c.zcdp_to_approx_epsilon(0.025, 1e-5))


# -- δ ≥ 1/n --------------------------------------------------------------------------------


def test_a_delta_of_at_least_one_over_n_warns_at_protect() -> None:
    ledger = dpframe.Ledger.in_memory()
    with pytest.warns(dpframe.LargeDeltaWarning, match="at least 1/n"):
        _frame(100).dp.protect(epsilon=1.0, delta=0.01, ledger=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpframe.LargeDeltaWarning)
        _frame(101).dp.protect(epsilon=1.0, delta=0.0099, ledger=ledger)  # 0.0099 · 101 < 1
        _frame(102).dp.protect(rho=0.5, ledger=ledger)  # zCDP: no δ


def test_the_delta_warning_counts_privacy_units_not_rows() -> None:
    rows = pd.DataFrame({"user": np.repeat(np.arange(50), 4), "x": np.arange(200)})  # 200 rows, 50 people
    with pytest.warns(dpframe.LargeDeltaWarning):
        rows.dp.protect(epsilon=1.0, delta=0.03, privacy_unit="user", ledger=dpframe.Ledger.in_memory())
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpframe.LargeDeltaWarning)  # 0.01 ≥ 1/200 rows, but < 1/50 people
        rows.dp.protect(epsilon=1.0, delta=0.01, privacy_unit="user", ledger=dpframe.Ledger.in_memory())


def test_concurrent_processes_share_one_renyi_filter(tmp_path: object) -> None:
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    ledger = Path(str(tmp_path)) / "l.sqlite"
    dpframe.Budget(epsilon=0.5, delta=1e-6, accounting="rdp", name="shared", ledger=ledger)
    alone = dpframe.Budget(epsilon=0.5, delta=1e-6, accounting="rdp", ledger=dpframe.Ledger.in_memory())
    fit = 0
    while True:
        try:
            alone._charge(dpframe.Cost(epsilon=Fraction(1, 50)), query="count")
        except dpframe.BudgetExceededError:
            break
        fit += 1
    code = textwrap.dedent("""
        import pandas as pd, dpframe
        p = pd.DataFrame({"x": range(100)}).dp.protect(budget=dpframe.Budget.open("shared"))
        done = 0
        for _ in range(15):
            try:
                p.dp.count(epsilon=0.02)
                done += 1
            except dpframe.BudgetExceededError:
                pass
        print(done)
    """)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "DPFRAME_LEDGER": str(ledger), "PYTHONPATH": str(root)}
    children = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
                for _ in range(3)]
    answered = [int(child.communicate(timeout=300)[0]) for child in children]
    assert all(child.returncode == 0 for child in children)
    assert 25 < fit < 45 and sum(answered) == fit  # as many as in one process; sequentially 25 would fit
    assert len(dpframe.Budget.open("shared", ledger=ledger).ledger) == fit
