"""Costs are never negative (issue 27): a Cost checks itself wherever one is made, and the ledger refuses to read
an amount that is not a cost."""

from __future__ import annotations

import copy
import dataclasses
import decimal
import pickle
import sqlite3
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe import Cost

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
