"""The budget: exact accounting, refusal before reading, thread safety, sharing, ledger."""

from __future__ import annotations

import pickle
import threading
from fractions import Fraction

import pandas as pd
import pytest

import dpframe
from dpframe import Budget, BudgetExceededError, Cost


def test_tenths_fill_a_budget_exactly() -> None:
    b = Budget(epsilon=1.0)
    for _ in range(10):
        b._charge(Cost(epsilon=Fraction(1, 10)), query="count")
    assert b.remaining.epsilon == 0
    with pytest.raises(BudgetExceededError):
        b._charge(Cost(epsilon=Fraction(1, 10**9)), query="count")
    assert len(b.ledger) == 10
    assert b.ledger["epsilon"].sum() == pytest.approx(1.0)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"epsilon": 0}, {"epsilon": -1}, {"epsilon": float("nan")}, {"epsilon": float("inf")},
     {"epsilon": 1, "delta": 1.0}, {"epsilon": 1, "delta": -0.1}, {"rho": 0}, {"rho": 1, "epsilon": 1}],
)
def test_invalid_budgets(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Budget(**kwargs)


def test_bool_is_not_a_number() -> None:
    with pytest.raises(TypeError):
        Budget(epsilon=True)  # type: ignore[arg-type]


def test_overspend_refused_before_reading_and_charges_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpframe.queries import kernels

    p = pd.DataFrame({"x": range(10)}).dp.protect(epsilon=0.5)
    p["x"].dp.mean(bounds=(0, 10), epsilon=0.4)
    before = p.dp.budget.spent

    def must_not_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was read before the budget check")

    monkeypatch.setattr(kernels, "moment_sums", must_not_read)
    with pytest.raises(BudgetExceededError, match="nothing was charged"):
        p["x"].dp.mean(bounds=(0, 10), epsilon=0.2)
    assert p.dp.budget.spent == before
    assert len(p.dp.budget.ledger) == 1


def test_charged_query_stays_charged_if_it_fails_later(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpframe.queries import kernels

    p = pd.DataFrame({"x": [1.0, 2.0]}).dp.protect(epsilon=1.0)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(kernels, "moment_sums", broken)
    with pytest.raises(RuntimeError):
        p["x"].dp.mean(bounds=(0, 3), epsilon=0.3)
    assert p.dp.budget.spent.epsilon.exact == Fraction(3, 10)


def test_concurrent_queries_never_overspend() -> None:
    b = Budget(epsilon=1.0)
    successes: list[int] = []
    lock = threading.Lock()

    def spend() -> None:
        for _ in range(50):
            try:
                b._charge(Cost(epsilon=Fraction(1, 100)), query="count")
                with lock:
                    successes.append(1)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(successes) == 100
    assert b.spent.epsilon == 1
    assert len(b.ledger) == 100


def test_zcdp_budget_charges_rho() -> None:
    p = pd.DataFrame({"x": range(100)}).dp.protect(rho=0.5)
    p.dp.count(rho=0.1)
    p.dp.count(epsilon=0.6)  # Laplace: epsilon-DP implies epsilon^2/2-zCDP
    assert p.dp.budget.spent.rho.exact == Fraction(1, 10) + Fraction(18, 100)
    with pytest.raises(ValueError, match="zCDP"):
        p.dp.count(epsilon=0.1, delta=1e-6)
    with pytest.raises(ValueError):
        p.dp.count(rho=0.01, epsilon=0.01)


def test_shared_budget_across_frames() -> None:
    b = Budget(epsilon=1.0)
    p1 = pd.DataFrame({"x": range(5)}).dp.protect(budget=b)
    p2 = pd.DataFrame({"y": range(5)}).dp.protect(budget=b)
    p1.dp.count(epsilon=0.6)
    with pytest.raises(BudgetExceededError):
        p2.dp.count(epsilon=0.6)
    assert p2.dp.budget is b


def test_pickle_round_trip_rejoins_live_budget() -> None:
    p = pd.DataFrame({"x": range(5)}).dp.protect(epsilon=1.0)
    q = pickle.loads(pickle.dumps(p))
    assert q.dp.budget is p.dp.budget
    q.dp.count(epsilon=0.7)
    with pytest.raises(BudgetExceededError):
        p.dp.count(epsilon=0.7)


def test_pickled_budget_restores_its_state_in_a_new_process() -> None:
    b = Budget(epsilon=1.0)
    b._charge(Cost(epsilon=Fraction(1, 4)), query="count")
    state = pickle.dumps(b)
    del b
    import gc

    gc.collect()
    restored = pickle.loads(state)
    assert restored.spent.epsilon == Fraction(1, 4)
    assert len(restored.ledger) == 1


def test_repr_and_html() -> None:
    p = pd.DataFrame({"x": range(5)}).dp.protect(epsilon=1.0, delta=1e-6)
    p.dp.count(epsilon=0.25)
    text = repr(p.dp.budget)
    assert "remaining ε=0.75" in text and "1 release" in text
    html = p.dp.budget._repr_html_()
    assert "<table" in html and "remaining" in html
    ledger = p.dp.budget.ledger
    assert list(ledger.columns) == ["time", "query", "columns", "mechanism", "epsilon", "delta", "rho",
                                    "noise", "rule", "seeded"]
    assert ledger.loc[0, "mechanism"] == "discrete Laplace"


def test_public_api_exports() -> None:
    assert dpframe.BudgetExceededError is BudgetExceededError
    assert isinstance(dpframe.__version__, str)
