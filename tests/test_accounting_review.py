"""Adversarial review of the filter budgets (accounting="rdp" / "advanced"): each test is a way they could under-charge."""

from __future__ import annotations

import sqlite3
from fractions import Fraction

import pytest

import dpframe
from dpframe.accounting.ledger import FILTER_MARK


def _raw(path: str, budget_id: str) -> tuple[dpframe.Cost, dpframe.Cost]:
    """A budget's total and spending as its ``budgets`` row holds them (what a dpframe without filters reads)."""
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT total_epsilon, total_delta, total_rho, spent_epsilon, spent_delta, spent_rho "
                         "FROM budgets WHERE id = ?", (budget_id,)).fetchone()
    total, spent = (dpframe.Cost(*(Fraction(x) for x in part)) for part in (row[:3], row[3:]))
    return total, spent


def _charge_as_an_older_dpframe(path: str, budget_id: str, cost: dpframe.Cost) -> bool:
    """What dpframe's ledger did before the filter budgets (commit c222aa2): refuse unless the cost fits what the
    budgets row says remains, column by column; else add it to the spent columns. Never touches filter_state."""
    total, spent = _raw(path, budget_id)
    if not cost.fits_in(total - spent):
        return False
    after = spent + cost
    with sqlite3.connect(path) as db:
        db.execute("UPDATE budgets SET spent_epsilon = ?, spent_delta = ?, spent_rho = ? WHERE id = ?",
                   *[(*(f"{x.numerator}/{x.denominator}" for x in (after.epsilon, after.delta, after.rho)),
                      budget_id)])
    return True


@pytest.mark.parametrize("kind", ["rdp", "advanced"])
def test_an_older_dpframe_cannot_charge_a_filter_budget(tmp_path: object, kind: str) -> None:
    # An older dpframe reopens the budget by name and compares its spent columns with its total: the filter
    # never sees what it charges. The mark in spent_delta makes that comparison fail for every cost.
    path = str(tmp_path) + "/ledger.sqlite"  # type: ignore[operator]
    budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting=kind, name="b", ledger=path)
    for cost in (dpframe.Cost(epsilon=Fraction(1)), dpframe.Cost(epsilon=Fraction(1, 100)), dpframe.Cost()):
        assert not _charge_as_an_older_dpframe(path, budget.id, cost)
    budget.charge(dpframe.Cost(epsilon=Fraction(1, 2)), query="count")
    assert not _charge_as_an_older_dpframe(path, budget.id, dpframe.Cost(epsilon=Fraction(1, 2)))
    assert _raw(path, budget.id)[1].delta == FILTER_MARK
    # The mark does not show: the budget reads as before.
    assert float(dpframe.Budget.open("b", ledger=path).remaining.epsilon) > 0
    assert dpframe.Budget(epsilon=1.0, delta=1e-6, accounting=kind, ledger=path).spent.cost == dpframe.Cost()


@pytest.mark.parametrize("kind", ["rdp", "advanced"])
def test_a_filter_budget_charged_behind_its_filter_refuses_everything(tmp_path: object, kind: str) -> None:
    # A budget made before the mark (spent_delta 0) that an older dpframe then spent in full: its filter state is
    # still zero, and it used to admit a whole second budget (ε = 2 released on a total of 1).
    path = str(tmp_path) + "/ledger.sqlite"  # type: ignore[operator]
    budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting=kind, name="b", ledger=path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE budgets SET spent_delta = '0/1' WHERE id = ?", (budget.id,))
    assert _charge_as_an_older_dpframe(path, budget.id, dpframe.Cost(epsilon=Fraction(1)))
    with pytest.raises(dpframe.LedgerError, match="something other than its filter has charged"):
        budget.charge(dpframe.Cost(epsilon=Fraction(1)), query="count")
    assert float(budget.remaining.epsilon) == 0  # and it reads as spent
    with pytest.raises(dpframe.LedgerError):
        budget.extend(epsilon=2.0, delta=1e-6)


def test_a_budget_made_before_the_mark_gets_it_at_its_next_charge(tmp_path: object) -> None:
    path = str(tmp_path) + "/ledger.sqlite"  # type: ignore[operator]
    budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE budgets SET spent_delta = '0/1' WHERE id = ?", (budget.id,))
    assert budget.spent.cost == dpframe.Cost()
    budget.charge(dpframe.Cost(epsilon=Fraction(1, 10)), query="count")
    assert _raw(path, budget.id)[1] == dpframe.Cost(Fraction(1, 10), FILTER_MARK)
    assert not _charge_as_an_older_dpframe(path, budget.id, dpframe.Cost(epsilon=Fraction(1, 10)))


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
