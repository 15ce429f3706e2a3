"""Costs are never negative (issue 27): a Cost checks itself wherever one is made, and the ledger refuses to read
an amount that is not a cost."""

from __future__ import annotations

import copy
import dataclasses
import decimal
import pickle
import sqlite3
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe import Cost
from dpframe.accounting.composition import ORDERS, AdvancedFilter, pure_dp_rdp
from dpframe.accounting.ledger import Line

ZERO = Fraction(0)


def _forged(epsilon: Fraction) -> Cost:
    """A cost made around its checks (possible in one process, as any private attribute is)."""
    cost = Cost()
    object.__setattr__(cost, "epsilon", epsilon)
    return cost


# -- construction ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("part", ["epsilon", "delta", "rho"])
def test_a_negative_part_is_refused(part: str) -> None:
    with pytest.raises(ValueError, match=f"cost's {part} must be >= 0, got -1/10: a release never gives privacy back"):
        Cost(**{part: Fraction(-1, 10)})


@pytest.mark.parametrize("delta", [Fraction(1), Fraction(3, 2)])
def test_a_delta_of_one_or_more_is_refused(delta: Fraction) -> None:
    with pytest.raises(ValueError, match="delta must be < 1"):
        Cost(epsilon=Fraction(1), delta=delta)


@pytest.mark.parametrize("value", [0.1, float("nan"), float("inf"), -float("inf"), 1, True, np.float64(0.5),
                                   np.int64(1), decimal.Decimal("0.1"), "1/10", None])
@pytest.mark.parametrize("part", ["epsilon", "delta", "rho"])
def test_anything_but_a_fraction_is_refused(part: str, value: object) -> None:
    # NaN and infinity can only come as floats, which are refused: a Fraction is always finite.
    with pytest.raises(TypeError, match=f"cost's {part} must be a Fraction, got {type(value).__name__}"):
        Cost(**{part: value})  # type: ignore[arg-type]


def test_valid_costs() -> None:
    assert Cost().is_zero
    cost = Cost(Fraction(10**9), Fraction(10**6 - 1, 10**6), Fraction(1, 10**30))
    assert cost.delta < 1 and not cost.is_zero


def test_replace_and_unpickling_check_too() -> None:
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        dataclasses.replace(Cost(), epsilon=Fraction(-1))
    cost = Cost(Fraction(1, 3), Fraction(1, 10**6))
    assert pickle.loads(pickle.dumps(cost)) == cost and copy.deepcopy(cost) == cost
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        pickle.loads(pickle.dumps(_forged(Fraction(-10))))


# -- arithmetic ----------------------------------------------------------------------------------------------------

def test_a_sum_with_a_delta_of_one_is_refused() -> None:
    half = Cost(delta=Fraction(1, 2))
    assert (half + Cost(delta=Fraction(1, 3))).delta == Fraction(5, 6)
    with pytest.raises(ValueError, match="delta must be < 1"):
        half + half


def test_taking_more_than_a_cost_holds_raises() -> None:
    whole = Cost(epsilon=Fraction(1, 2), rho=Fraction(1, 8))
    assert whole - Cost(epsilon=Fraction(1, 2)) == Cost(rho=Fraction(1, 8))
    assert (whole - whole).is_zero
    for more in (Cost(epsilon=Fraction(3, 5)), Cost(delta=Fraction(1, 10**9)), Cost(rho=Fraction(1, 4))):
        with pytest.raises(ValueError, match=r"cannot take .* from ε=0\.5, ρ=0\.125: it is more in some part"):
            whole - more


# -- what the ledger reads -----------------------------------------------------------------------------------------

def _write(path: Path, sql: str, *parameters: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, parameters)


def test_a_negative_amount_in_the_ledger_makes_the_budget_unusable(tmp_path: Path) -> None:
    # What a dpframe that accepted a charge of ε = -10 left behind: the budget's spending is not known.
    path = tmp_path / "ledger.sqlite"
    p = pd.DataFrame({"x": range(10)}).dp.protect(epsilon=1.0, name="b", ledger=path)
    p.dp.count(epsilon=0.1)
    _write(path, "UPDATE budgets SET spent_epsilon = '-99/10' WHERE id = ?", p.dp.budget.id)
    for read in (lambda: p.dp.budget.remaining, lambda: p.dp.count(epsilon=0.1),
                 lambda: dpframe.Ledger.at(path).budgets()):
        with pytest.raises(dpframe.LedgerError, match="holds an amount that is not a cost .*-99/10"):
            read()
    assert dpframe.Ledger.at(path).count_lines(p.dp.budget.id) == 1


@pytest.mark.parametrize("kind", ["rdp", "advanced"])
def test_a_filter_budgets_mark_is_not_read_as_a_cost(kind: str) -> None:
    budget = dpframe.Budget(epsilon=1.0, delta=1e-6, accounting=kind, ledger=dpframe.Ledger.in_memory())
    assert budget.total.cost == Cost(Fraction(1), Fraction(1, 10**6)) and budget.spent.cost == Cost()
    assert budget.store.budgets()["total"].tolist() == ["ε=1, δ=1e-06"]


# -- the analyst cannot write a ledger line -------------------------------------------------------------------------

def _protected(**budget: object) -> dpframe.ProtectedFrame:
    protected: dpframe.ProtectedFrame = pd.DataFrame({"x": range(100)}).dp.protect(
        ledger=dpframe.Ledger.in_memory(), **budget)
    return protected


def test_the_budget_and_the_ledger_offer_no_way_to_write_a_line() -> None:
    budget = _protected(epsilon=1.0).dp.budget
    public = {name for name in dir(budget) if not name.startswith("_") and callable(getattr(budget, name))}
    # extend: the curator's, recorded as an event; allot: the curator's too, and an allotment's charges are charged
    # to this budget as well, so it can only spend it.
    assert public == {"open", "extend", "rename", "allot"}
    for name in ("charge", "reserve", "draw"):
        assert not hasattr(budget, name) and not hasattr(dpframe.Ledger, name)


def test_the_refund_of_an_advanced_filter_is_impossible() -> None:
    # The review's attack: charge ε = -10, then 110 counts at ε = 0.1 on a total of ε = 1.
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        Cost(epsilon=Fraction(-10))
    p = _protected(epsilon=1.0, delta=1e-6, accounting="advanced")
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        p.dp.count(epsilon=-10)
    rule = AdvancedFilter(Fraction(1), Fraction(1, 10**6))
    state, admitted_by_rule = rule.zero(), 0
    while rule.admits(state := rule.add(state, rule.increment(Fraction(1, 10), ZERO))):
        admitted_by_rule += 1
    admitted = 0
    for _ in range(110):
        try:
            p.dp.count(epsilon=0.1)
        except dpframe.BudgetExceededError:
            continue
        admitted += 1
    assert admitted == admitted_by_rule == 10  # sequential composition admits more here than advanced
    assert len(p.dp.budget.ledger) == 10


def test_a_zcdp_budget_never_has_more_left_than_its_total() -> None:
    # The review's attack: ρ = 0.5 showed ρ = 100.5 remaining after a charge of ρ = -100.
    with pytest.raises(ValueError, match="rho must be >= 0"):
        Cost(rho=Fraction(-100))
    p = _protected(rho=0.5)
    budget = p.dp.budget
    for _ in range(8):
        with pytest.raises(ValueError, match="rho must be > 0"):
            p.dp.count(rho=-100)
        try:
            p.dp.count(rho=0.1)
        except dpframe.BudgetExceededError:
            pass
        assert budget.remaining.cost.fits_in(budget.total.cost)
        assert budget.remaining.cost + budget.spent.cost == budget.total.cost
    assert budget.spent.rho == 0.5 and len(budget.ledger) == 5


@pytest.mark.parametrize("budget", [{"epsilon": 1.0}, {"rho": 0.5},
                                    {"epsilon": 1.0, "delta": 1e-6, "accounting": "rdp"},
                                    {"epsilon": 1.0, "delta": 1e-6, "accounting": "advanced"}])
def test_a_refused_charge_records_nothing(budget: dict[str, object]) -> None:
    p = _protected(**budget)
    name = "rho" if "rho" in budget else "epsilon"

    def count(amount: float) -> object:
        return p.dp.count(rho=amount) if name == "rho" else p.dp.count(epsilon=amount)

    count(0.4 if name == "rho" else 0.9)
    store, budget_id = p.dp.budget.store, p.dp.budget.id

    def state() -> tuple[object, ...]:
        return (store.lines(budget_id).to_dict(), store.record(budget_id),
                store._read("SELECT key, value FROM filter_state WHERE budget_id = ? ORDER BY key", (budget_id,)))

    before = state()
    with pytest.raises(dpframe.BudgetExceededError, match="nothing was charged"):
        count(0.2)
    with pytest.raises(ValueError, match=f"{name} must be > 0"):
        count(-0.1)
    assert state() == before


# -- drawing from a reserved line ----------------------------------------------------------------------------------

def test_a_draw_takes_from_its_reserved_line_and_never_more() -> None:
    budget = _protected(epsilon=1.0).dp.budget
    reserved = budget._reserve(Cost(epsilon=Fraction(1, 2)), query="describe")
    budget._draw(reserved, Line("count", Cost(epsilon=Fraction(1, 5))))
    lines = budget.ledger
    assert lines["query"].tolist() == ["describe (reserved)", "count"]
    assert lines["epsilon"].tolist() == pytest.approx([0.3, 0.2])
    with pytest.raises(ValueError, match=r"cannot take ε=0\.4 from ε=0\.3"):
        budget._draw(reserved, Line("mean", Cost(epsilon=Fraction(2, 5))))
    assert budget.ledger.equals(lines)
    budget._draw(reserved, Line("mean", Cost(epsilon=Fraction(3, 10))))
    assert budget.ledger["query"].tolist() == ["count", "mean"]  # drawn in full, the reserved line is gone
    assert budget.spent.cost == Cost(epsilon=Fraction(1, 2)) and budget.ledger["epsilon"].sum() == pytest.approx(0.5)
    with pytest.raises(dpframe.LedgerError, match="not a reserved line"):
        budget._draw(reserved, Line("sum", Cost(epsilon=Fraction(1, 10))))


# -- the filters -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["rdp", "advanced"])
def test_a_filter_refuses_an_absurd_epsilon_rather_than_failing_on_it(kind: str) -> None:
    # ε = 1e308: α ε overflows a float at every order above 1.8, and the Rényi curve used to come out infinite.
    assert all(pure_dp_rdp(1e308, alpha) == 1e308 for alpha in ORDERS)
    p = _protected(epsilon=1.0, delta=1e-6, accounting=kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(dpframe.BudgetExceededError, match="nothing was charged"):
            p.dp.count(epsilon=1e308)
    assert p.dp.budget.ledger.empty and p.dp.budget.spent.cost == Cost()
