"""Adversarial review of the filter budgets (accounting="rdp", "advanced"): ways they could under-charge."""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Callable
from fractions import Fraction

import pytest

import dpframe
from dpframe.accounting import composition as c
from dpframe.accounting.costs import exact
from dpframe.accounting.ledger import FILTER_MARK


# (ε, δ, ρ) as an older dpframe's Cost held them: unchecked, so they may be negative (the mark is).
Raw = tuple[Fraction, Fraction, Fraction]


def _epsilon(epsilon: Fraction, delta: Fraction = Fraction(0)) -> Raw:
    return epsilon, delta, Fraction(0)


def _raw(path: str, budget_id: str) -> tuple[Raw, Raw]:
    """A budget's total and spending as its ``budgets`` row holds them (what a dpframe without filters reads)."""
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT total_epsilon, total_delta, total_rho, spent_epsilon, spent_delta, spent_rho "
                         "FROM budgets WHERE id = ?", (budget_id,)).fetchone()
    (te, td, tr), (se, sd, sr) = ((Fraction(x) for x in part) for part in (row[:3], row[3:]))
    return (te, td, tr), (se, sd, sr)


def _charge_as_an_older_dpframe(path: str, budget_id: str, cost: Raw) -> bool:
    """What dpframe's ledger did before the filter budgets (commit c222aa2): refuse unless the cost fits what the
    budgets row says remains, column by column; else add it to the spent columns. Never touches filter_state."""
    total, spent = _raw(path, budget_id)
    if not all(c <= t - s for c, t, s in zip(cost, total, spent, strict=True)):
        return False
    after = [s + c for s, c in zip(spent, cost, strict=True)]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE budgets SET spent_epsilon = ?, spent_delta = ?, spent_rho = ? WHERE id = ?",
                   (*(f"{x.numerator}/{x.denominator}" for x in after), budget_id))
    return True


@pytest.mark.parametrize("kind", ["rdp", "advanced"])
def test_an_older_dpframe_cannot_charge_a_filter_budget(tmp_path: object, kind: str) -> None:
    # An older dpframe reopens the budget by name and compares its spent columns with its total: the filter
    # never sees what it charges. The mark in total_rho makes that comparison fail for every cost, including
    # the δ an older dpframe takes for private partition selection from what remains (min(δ/10, remaining)),
    # which cancelled a mark kept in spent_delta (it spent δ = -0.999999).
    path = str(tmp_path) + "/ledger.sqlite"  # type: ignore[operator]
    budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting=kind, name="b", ledger=path)

    def selection(epsilon: Fraction) -> Raw:
        total, spent = _raw(path, budget.id)
        return _epsilon(epsilon, min(total[1] / 10, total[1] - spent[1]))

    for cost in (_epsilon(Fraction(1)), _epsilon(Fraction(1, 100)), _epsilon(Fraction(0)),
                 selection(Fraction(1, 2))):
        assert not _charge_as_an_older_dpframe(path, budget.id, cost)
    budget._charge(dpframe.Cost(epsilon=Fraction(1, 2)), query="count")
    for cost in (_epsilon(Fraction(1, 2)), selection(Fraction(1, 2))):
        assert not _charge_as_an_older_dpframe(path, budget.id, cost)
    assert _raw(path, budget.id)[0][2] == FILTER_MARK
    # The mark does not show: the budget reads as before.
    assert float(dpframe.Budget.open("b", ledger=path).remaining.epsilon) > 0
    assert dpframe.Budget(epsilon=1.0, delta=1e-6, accounting=kind, ledger=path).spent.cost == dpframe.Cost()


@pytest.mark.parametrize("kind", ["rdp", "advanced"])
def test_a_filter_budget_charged_behind_its_filter_refuses_everything(tmp_path: object, kind: str) -> None:
    # A budget made before the mark (total_rho 0) that an older dpframe then spent in full: its filter state is
    # still zero, and it used to admit a whole second budget (ε = 2 released on a total of 1).
    path = str(tmp_path) + "/ledger.sqlite"  # type: ignore[operator]
    budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting=kind, name="b", ledger=path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE budgets SET total_rho = '0/1' WHERE id = ?", (budget.id,))
    assert _charge_as_an_older_dpframe(path, budget.id, _epsilon(Fraction(1)))
    with pytest.raises(dpframe.LedgerError, match="something other than its filter has charged"):
        budget._charge(dpframe.Cost(epsilon=Fraction(1)), query="count")
    assert float(budget.remaining.epsilon) == 0  # and it reads as spent
    with pytest.raises(dpframe.LedgerError):
        budget.extend(epsilon=2.0, delta=1e-6)


def test_a_budget_made_before_the_mark_gets_it_at_its_next_charge(tmp_path: object) -> None:
    path = str(tmp_path) + "/ledger.sqlite"  # type: ignore[operator]
    budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE budgets SET total_rho = '0/1' WHERE id = ?", (budget.id,))
    assert budget.spent.cost == dpframe.Cost() and budget.total.rho == 0
    budget._charge(dpframe.Cost(epsilon=Fraction(1, 10)), query="count")
    assert _raw(path, budget.id) == ((Fraction(1), Fraction(1, 10**6), FILTER_MARK), _epsilon(Fraction(1, 10)))
    assert budget.total.rho == 0
    assert not _charge_as_an_older_dpframe(path, budget.id, _epsilon(Fraction(1, 10)))


@pytest.mark.parametrize("kind", ["rdp", "advanced"])
def test_an_approximate_dp_mechanism_is_refused_on_a_filter_budget_before_anything_is_charged(kind: str) -> None:
    # Propose-test-release needs a δ of its own, which a filter budget never gives: said plainly, not as the
    # ledger's currency TypeError.
    import pandas as pd

    p = pd.DataFrame({"age": list(range(20, 81)) * 20}).dp.protect(
        epsilon=1.0, delta=1e-6, accounting=kind, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(ValueError, match="gives releases no δ"):
        p["age"].dp.propose_test_release("median", sensitivity=1.0, bounds=(0, 125), epsilon=0.5, delta=1e-7)
    with pytest.raises(ValueError, match="gives releases no δ"):
        p["age"].dp.median(bounds=(0, 125), method="smooth", epsilon=0.5, delta=1e-7)
    assert p.dp.budget.ledger.empty


# -- the filters against every adaptive analyst ----------------------------------------------------------------

def _worst_delta(admits: Callable[[int, int], bool], a: float, b: float, epsilon: float) -> float:
    """The largest hockey-stick divergence at ``epsilon`` that ANY adaptive analyst reaches against a filter.

    After each answer the analyst asks randomized response at ε = a or ε = b (the worst ε-DP mechanism: every
    ε-DP pair is a post-processing of it, Kairouz, Oh & Viswanath 2015) if the filter ``admits`` the counts
    (k1, k2) after it, or stops. The privacy loss of a transcript with j1, j2 answers "1" is
    a(2 j1 − k1) + b(2 j2 − k2), so backward induction over (k1, k2, j1, j2) finds the best strategy exactly:
    the value is max over strategies of E_P[(1 − e^(ε − L))_+].
    """
    pa, pb = 1 / (1 + math.exp(-a)), 1 / (1 + math.exp(-b))

    @functools.lru_cache(maxsize=None)
    def value(k1: int, k2: int, j1: int, j2: int) -> float:
        best = max(0.0, -math.expm1(epsilon - a * (2 * j1 - k1) - b * (2 * j2 - k2)))
        if admits(k1 + 1, k2):
            best = max(best, pa * value(k1 + 1, k2, j1 + 1, j2) + (1 - pa) * value(k1 + 1, k2, j1, j2))
        if admits(k1, k2 + 1):
            best = max(best, pb * value(k1, k2 + 1, j1, j2 + 1) + (1 - pb) * value(k1, k2 + 1, j1, j2))
        return best

    return value(0, 0, 0, 0)


def _admits(rule: c.Filter, a: float, b: float, *, own: bool = False) -> Callable[[int, int], bool]:
    """Whether ``rule`` admits k1 releases at ε = a and k2 at ε = b (``own``: by its own rule alone)."""
    first, second = rule.increment(Fraction(a), Fraction(0)), rule.increment(Fraction(b), Fraction(0))
    check = rule.admits_own if own else rule.admits
    return functools.lru_cache(maxsize=None)(
        lambda k1, k2: check({key: k1 * first[key] + k2 * second[key] for key in rule.keys}))


@pytest.mark.parametrize("kind", ["rdp", "advanced"])
@pytest.mark.parametrize(("epsilon", "delta", "a", "b"), [(2.0, 1e-3, 0.0625, 2.0), (2.0, 1e-3, 0.0625, 1.0),
                                                          (1.0, 1e-4, 0.0625, 0.75)])
def test_no_adaptive_analyst_gets_past_a_filter_with_its_sequential_alternative(
        kind: str, epsilon: float, delta: float, a: float, b: float) -> None:
    # "Sequential OR the filter's own rule": an OR of two valid filters need not be valid under full
    # adaptivity. It is here (sequential transcripts have privacy loss <= ε everywhere; docs/accounting.md),
    # and the exact worst case over every analyst agrees. Each menu mixes releases only the sequential rule
    # admits (b alone, or a few a's and then b) with many small ones only the own rule admits.
    rule = c.filter_for(kind, exact(epsilon, "epsilon"), exact(delta, "delta"))
    admits, own = _admits(rule, a, b), _admits(rule, a, b, own=True)
    assert any(k1 * a + k2 * b <= epsilon and not own(k1, k2) for k1 in range(64) for k2 in range(4))
    assert _worst_delta(admits, a, b, epsilon) <= delta
    # The check has teeth: a rule that also admits ε's adding up to 1.5 times the target is caught.
    assert _worst_delta(lambda k1, k2: admits(k1, k2) or k1 * a + k2 * b <= 1.5 * epsilon, a, b, epsilon) > 10 * delta


@pytest.mark.parametrize("kind", ["rdp", "advanced"])
def test_a_positive_epsilon_never_adds_nothing_to_a_filter(kind: str) -> None:
    # Below ε ≈ 1e-154 the float curve (and ε tanh(ε/2)) underflows to 0; rounding up must still give a step.
    rule = c.filter_for(kind, Fraction(1), Fraction(1, 10**6))
    release = rule.increment(Fraction(1, 10**200), Fraction(0))
    assert all(value > 0 for key, value in release.items() if key != "rho")
