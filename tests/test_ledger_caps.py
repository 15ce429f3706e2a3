"""Allotments under a cap, and the curator service's audited requests (docs/ledger.md, issue 30)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import warnings
from contextlib import suppress
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dpframe import Budget, BudgetExceededError, Ledger, LedgerError, ReconnectedWarning
from dpframe.accounting.costs import Cost
from dpframe.accounting.ledger import CAP_REFUSAL, Line
from test_ledger import run_python  # a fresh interpreter on a ledger file

# One charge of the concurrency test: the cap holds exactly 40 of them, each allotment 20.
STEP = Cost(epsilon=Fraction(1, 40))


def spent(budget: Budget) -> Fraction:
    return budget.spent.epsilon.exact


def state(ledger: Ledger, *budgets: Budget) -> tuple[Any, ...]:
    """Everything a charge writes: spending, lines, audit rows and requests."""
    return (tuple((spent(b), b.ledger[["query", "epsilon"]].values.tolist()) for b in budgets),
            len(ledger.audit()), ledger._read("SELECT * FROM requests"))


def census(ledger: Ledger | Path, epsilon: float = 1.0) -> Budget:
    return Budget(epsilon=epsilon, name="census", ledger=ledger)


# -- concurrency: several processes, one ledger file ------------------------------------------------


def spend_allotment(location: str, name: str, attempts: int, who: str) -> None:
    """Charge the allotment ``name`` ``attempts`` times, alternating charges and reservations, each an audited
    request; refusals are expected once the allotment or the cap is spent."""
    ledger = Ledger.at(location)
    budget = Budget.open(name, ledger=ledger)
    for attempt in range(attempts):
        with suppress(BudgetExceededError), ledger.audited(who, f"{who}-{attempt}", plan="count"):
            if attempt % 2:
                budget._reserve(STEP, query="describe")
            else:
                budget._charge(STEP, query="count")


def test_processes_spend_the_cap_exactly_and_never_more(tmp_path: Path) -> None:
    location = str(tmp_path / "ledger.sqlite")
    cap = census(Path(location))
    # Three allotments of 1/2 under a cap of 1: together they could spend 3/2.
    allotments = [cap.allot(name, epsilon=0.5) for name in ("alice", "bob", "carol")]
    context = multiprocessing.get_context("spawn")
    # Two processes share alice's allotment, so it is asked 60 times for 20 charges; bob and carol 30 times each.
    workers = [context.Process(target=spend_allotment, args=(location, name, 30, f"worker{number}"))
               for number, name in enumerate(["alice", "alice", "bob", "carol"])]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
        assert worker.exitcode == 0
    assert spent(cap) == 1  # reached exactly: 40 charges of 1/40
    assert all(spent(allotment) <= Fraction(1, 2) for allotment in allotments)
    assert sum(spent(allotment) for allotment in allotments) == 1
    # The cap's lines are the allotments' lines, under their names, and add up to its spending.
    lines = cap.ledger
    assert len(lines) == 40 and sum(Fraction(value).limit_denominator(40) for value in lines["epsilon"]) == 1
    for allotment in allotments:
        mine = lines[lines["query"].str.startswith(f"{allotment.name}: ")]
        assert len(mine) == len(allotment.ledger) == spent(allotment) * 40
    audit = cap.store.audit()
    assert len(audit) == 40 and set(audit["budget"]) <= {"alice", "bob", "carol"}
    assert (audit["epsilon"] == 1 / 40).all()
    assert cap.store._read("SELECT status, COUNT(*) FROM requests GROUP BY status") == [("charged", 40)]


def retry(location: str, start: Any, answers: Any) -> None:
    """One attempt at the request "r1", started with the other's (the barrier)."""
    ledger = Ledger.at(location)
    budget = Budget.open("alice", ledger=ledger)
    start.wait(timeout=120)
    try:
        with ledger.audited("alice", "r1", plan="count"):
            budget._charge(STEP, query="count")
        answers.put("charged")
    except LedgerError as error:
        answers.put(str(error))


def test_two_concurrent_retries_of_a_request_charge_once(tmp_path: Path) -> None:
    location = str(tmp_path / "ledger.sqlite")
    cap = census(Path(location))
    alice = cap.allot("alice", epsilon=0.5)
    context = multiprocessing.get_context("spawn")
    start, answers = context.Barrier(2), context.Queue()
    workers = [context.Process(target=retry, args=(location, start, answers)) for _ in range(2)]
    for worker in workers:
        worker.start()
    outcomes = sorted(answers.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
    refused = "request 'r1' of 'alice' was already charged by another release; nothing was charged"
    assert outcomes == ["charged", refused]
    assert spent(alice) == spent(cap) == STEP.epsilon and len(cap.store.audit()) == 1


# -- allotments ---------------------------------------------------------------------------------------


def test_a_refused_charge_writes_nothing_to_either() -> None:
    ledger = Ledger.in_memory()
    cap = census(ledger)
    alice, bob = cap.allot("alice", epsilon=0.75), cap.allot("bob", epsilon=0.75)
    alice._charge(Cost(epsilon=Fraction(1, 2)), query="count")
    before = state(ledger, cap, alice, bob)
    with ledger.audited("bob", "b1", plan="count"), pytest.raises(BudgetExceededError) as refused:
        bob._charge(Cost(epsilon=Fraction(3, 4)), query="count")  # fits bob, not the cap
    # The cap's remaining (other analysts' spending) is not in the message.
    assert str(refused.value) == f"count needs ε=0.75, δ=0: {CAP_REFUSAL}" and "0.5" not in str(refused.value)
    with ledger.audited("alice", "a2", plan="count"), pytest.raises(BudgetExceededError, match="only ε=0.25"):
        alice._charge(Cost(epsilon=Fraction(1, 2)), query="count")  # fits the cap's 1/2, not alice's 1/4
    with pytest.raises(BudgetExceededError, match=CAP_REFUSAL):
        bob._reserve(Cost(epsilon=Fraction(3, 4)), query="describe")
    assert state(ledger, cap, alice, bob) == before
    assert ledger.request_status("bob", "b1") == ledger.request_status("alice", "a2") == "none"
    bob._charge(Cost(epsilon=Fraction(1, 2)), query="count")  # the cap's remaining 1/2 still fits
    assert spent(cap) == 1


def test_allot_reconnects_with_the_same_total_and_refuses_others() -> None:
    ledger = Ledger.in_memory()
    cap = census(ledger)
    alice = cap.allot("alice", epsilon=0.5)
    assert cap.allot("alice", epsilon=0.5) is alice and alice.cap is cap and cap.cap is None
    assert alice.events["event"].tolist() == ["created", "allotted", "reconnected"]
    assert cap.events["event"].tolist() == ["created", "allotted"]
    with pytest.raises(LedgerError, match="has total ε=0.5, δ=0: pass that total to reconnect"):
        cap.allot("alice", epsilon=0.75)
    alice.extend(epsilon=0.75)  # the curator raises it; the cap still bounds it
    assert cap.allot("alice", epsilon=0.75) is alice
    Budget(epsilon=1.0, name="other", ledger=ledger)
    with pytest.raises(LedgerError, match="'other' already exists .* not an allotment of budget 'census'"):
        cap.allot("other", epsilon=0.5)
    with pytest.raises(LedgerError, match="'alice' already exists .* not an allotment of budget 'other'"):
        Budget.open("other", ledger=ledger).allot("alice", epsilon=0.75)


def test_a_cap_kept_as_a_filter_or_a_total_of_another_kind_is_refused() -> None:
    ledger = Ledger.in_memory()
    filtered = Budget(epsilon=1.0, delta=1e-6, accounting="rdp", ledger=ledger)
    with pytest.raises(ValueError, match="is a filter"):
        filtered.allot("alice", epsilon=0.5, delta=1e-7)
    with pytest.raises(ValueError, match="approx budget: its allotments are too"):
        census(ledger).allot("alice", rho=0.1)
    zcdp = Budget(rho=0.5, ledger=ledger)
    with pytest.raises(ValueError, match="zcdp budget: its allotments are too .rho="):
        zcdp.allot("bob", epsilon=0.5)
    carol = zcdp.allot("carol", rho=0.5)
    carol._charge(Cost(rho=Fraction(1, 5)), query="mean")
    assert zcdp.spent.rho.exact == Fraction(1, 5)
    assert ledger.budgets()["budget"].tolist().count("'alice'") == 0  # refusals created nothing


def test_a_chain_of_caps_charges_every_cap() -> None:
    ledger = Ledger.in_memory()
    people = Budget(epsilon=1.0, name="people", ledger=ledger)  # datasets about the same people share one cap
    census_cap = people.allot("census", epsilon=0.75)
    survey = people.allot("survey", epsilon=0.75)
    alice = census_cap.allot("census/alice", epsilon=0.5)
    alice._charge(Cost(epsilon=Fraction(1, 2)), query="count")
    assert spent(alice) == spent(census_cap) == spent(people) == Fraction(1, 2)
    assert people.ledger["query"].tolist() == census_cap.ledger["query"].tolist() == ["census/alice: count"]
    with pytest.raises(BudgetExceededError, match=CAP_REFUSAL):
        survey._charge(Cost(epsilon=Fraction(3, 4)), query="count")  # fits survey, not the people's cap
    assert spent(survey) == 0 and spent(people) == Fraction(1, 2)


def test_draws_stay_in_the_allotment_and_the_cap_keeps_the_reservation() -> None:
    ledger = Ledger.in_memory()
    cap = census(ledger)
    alice = cap.allot("alice", epsilon=0.5)
    reserved = alice._reserve(Cost(epsilon=Fraction(1, 2)), query="describe")
    alice._draw(reserved, Line("count", Cost(epsilon=Fraction(1, 4))))
    alice._draw(reserved, Line("mean", Cost(epsilon=Fraction(1, 4))))
    assert alice.ledger["query"].tolist() == ["count", "mean"]
    assert cap.ledger[["query", "epsilon"]].values.tolist() == [["alice: describe (reserved)", 0.5]]
    assert spent(alice) == spent(cap) == Fraction(1, 2)


def test_protect_under_an_allotment_accepts_data_under_its_caps_only() -> None:
    ledger = Ledger.in_memory()
    people = Budget(epsilon=1.0, name="people", ledger=ledger)
    cap = people.allot("census", epsilon=1.0)
    alice, bob = cap.allot("alice", epsilon=0.5), cap.allot("bob", epsilon=0.5)
    under_cap, under_people = pd.DataFrame({"x": range(50)}), pd.DataFrame({"y": range(50)})
    under_cap.dp.protect(budget=cap)
    under_people.dp.protect(budget=people)
    for data in (under_cap, under_people):
        p = data.dp.protect(budget=alice)
        p.dp.count(epsilon=0.125)
        assert p.dp.budget is alice
    assert spent(alice) == spent(cap) == spent(people) == Fraction(1, 4)
    # The data stays recorded under its own budget: protecting it again by its total reconnects there.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReconnectedWarning)
        assert under_cap.dp.protect(epsilon=1.0, ledger=ledger).dp.budget is cap
    # By name too: the allotment's name with its total reconnects to it, the data staying under the cap.
    with pytest.warns(ReconnectedWarning):
        assert under_cap.dp.protect(epsilon=0.5, name="alice", ledger=ledger).dp.budget is alice
    unrelated = pd.DataFrame({"z": range(50)})
    unrelated.dp.protect(epsilon=1.0, ledger=ledger)
    with pytest.raises(LedgerError, match="already protected under budget"):
        unrelated.dp.protect(budget=alice)
    sibling = pd.DataFrame({"w": range(50)})
    sibling.dp.protect(budget=alice)
    with pytest.raises(LedgerError, match="already protected under budget 'alice'"):
        sibling.dp.protect(budget=bob)  # protect the data under the cap first


def test_bounded_dp_is_never_kept_under_a_cap() -> None:
    # A cap composes its allotments' releases under one relation, add/remove: replace-one releases cannot join it.
    ledger = Ledger.in_memory()
    cap = census(ledger)
    alice = cap.allot("alice", epsilon=0.5)
    data = pd.DataFrame({"x": range(50)})
    data.dp.protect(budget=cap)
    for budget in (alice, cap):
        with pytest.raises(LedgerError, match="has a cap or allotments.*needs a budget of its own"):
            data.dp.protect(budget=budget, neighbours="replace")
    assert len(alice.ledger) == len(cap.ledger) == 0
    bounded = pd.DataFrame({"y": range(50)}).dp.protect(epsilon=1.0, ledger=ledger, neighbours="replace")
    with pytest.raises(LedgerError, match="replace-one neighbours .bounded DP.: it cannot be a cap"):
        bounded.dp.budget.allot("bob", epsilon=0.5)


def test_an_older_dpframe_cannot_charge_an_allotment_alone(tmp_path: Path) -> None:
    cap = census(tmp_path / "ledger.sqlite")
    alice = cap.allot("alice", epsilon=0.5)
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        # What an older dpframe's charge does: the allotment's spending, without its cap's.
        with pytest.raises(sqlite3.IntegrityError, match="allotment under a cap"):
            db.execute("UPDATE budgets SET spent_epsilon = '1/4' WHERE id = ?", (alice.id,))
        db.execute("UPDATE budgets SET total_epsilon = '3/4' WHERE id = ?", (alice.id,))  # extending is not charging
    assert spent(alice) == 0 and alice.total.epsilon.exact == Fraction(3, 4)


def test_a_cap_is_deleted_after_its_allotments_whose_charges_stay_in_it() -> None:
    ledger = Ledger.in_memory()
    cap = census(ledger)
    alice = cap.allot("alice", epsilon=0.5)
    alice._charge(Cost(epsilon=Fraction(1, 4)), query="count")
    with pytest.raises(LedgerError, match="is the cap of allotments: delete them first"):
        ledger.delete(cap.id)
    ledger.delete(alice.id)
    assert spent(cap) == Fraction(1, 4) and cap.allot("alice", epsilon=0.5).spent.epsilon == 0
    ledger.delete(Budget.open("alice", ledger=ledger).id)
    ledger.delete(cap.id)


# -- audited requests -----------------------------------------------------------------------------


def test_every_charge_of_a_request_is_audited_in_its_transaction() -> None:
    ledger = Ledger.in_memory()
    alice = census(ledger).allot("alice", epsilon=0.5)
    with ledger.audited("alice", "a1", plan='{"steps": []}'):
        alice._charge(Cost(epsilon=Fraction(1, 8)), query="count")
        alice._reserve(Cost(epsilon=Fraction(1, 8)), query="describe")  # a request may charge several times
        with pytest.raises(BudgetExceededError):
            alice._charge(Cost(epsilon=Fraction(1)), query="count")
    audit = ledger.audit(who="alice")
    assert audit[["who", "request_id", "plan", "budget", "epsilon"]].values.tolist() == [
        ["alice", "a1", '{"steps": []}', "alice", 0.125]] * 2
    assert ledger.audit(who="bob").empty
    assert ledger.request_status("alice", "a1") == "charged" and ledger.stored_result("alice", "a1") is None
    alice._charge(Cost(epsilon=Fraction(1, 8)), query="count")  # outside the block: no audit row
    assert len(ledger.audit()) == 2


def test_a_request_id_charged_by_another_release_is_refused_and_writes_nothing() -> None:
    ledger = Ledger.in_memory()
    alice = census(ledger).allot("alice", epsilon=0.5)
    with ledger.audited("alice", "a1", plan="count"):
        alice._charge(STEP, query="count")
    before = state(ledger, alice)
    with ledger.audited("alice", "a1", plan="count"), pytest.raises(LedgerError, match="already charged"):
        alice._charge(STEP, query="count")
    assert state(ledger, alice) == before
    with ledger.audited("bob", "a1", plan="count"):  # request ids are the analyst's own
        alice._charge(STEP, query="count")
    with ledger.audited("alice", "a1", plan="count"), pytest.raises(LedgerError, match="stores its result"):
        ledger.store_result("alice", "a1", '{"error": "refused"}')  # the refused retry stores nothing
    assert ledger.request_status("alice", "a1") == "charged"
    ledger.store_result("alice", "a1", '{"value": 1}')  # after its block, as the charging release does
    with ledger.audited("alice", "a2", plan="count"):
        alice._charge(STEP, query="count")
        assert ledger.store_result("alice", "a2", '{"value": 2}') == '{"value": 2}'  # or inside it
    with ledger.audited("alice", "a1", plan="count"), pytest.raises(LedgerError, match="already charged"):
        alice._charge(STEP, query="count")  # a done request is never charged again either


def test_a_request_that_charged_and_crashed_before_its_result_stays_charged(tmp_path: Path) -> None:
    location = tmp_path / "ledger.sqlite"
    cap = census(location)
    cap.allot("alice", epsilon=0.5)
    run_python("""
        import os
        from fractions import Fraction
        from dpframe import Budget, Ledger
        from dpframe.accounting.costs import Cost
        ledger = Ledger.default()
        with ledger.audited("alice", "a1", plan="count"):
            Budget.open("alice", ledger=ledger)._charge(Cost(epsilon=Fraction(1, 4)), query="count")
            os._exit(0)  # the crash: charged, no result stored
    """, location)
    assert cap.store.request_status("alice", "a1") == "charged"
    assert cap.store.stored_result("alice", "a1") is None and spent(cap) == Fraction(1, 4)
    assert cap.store.store_result("alice", "a1", '{"error": "lost"}') == '{"error": "lost"}'
    assert cap.store.request_status("alice", "a1") == "done"


def test_a_request_that_charged_nothing_is_registered_with_its_result() -> None:
    ledger = Ledger.in_memory()
    with ledger.audited("alice", "a1", plan="columns"):
        assert ledger.store_result("alice", "a1", '{"value": ["x"]}') == '{"value": ["x"]}'
    assert ledger.audit()[["request_id", "plan", "budget", "epsilon"]].values.tolist() == [
        ["a1", "columns", None, 0.0]]
    assert ledger.store_result("alice", "a1", "{}") == '{"value": ["x"]}'  # the first result is kept
    assert ledger.request_status("alice", "a1") == "done"


def test_the_audited_block_belongs_to_its_thread_and_ledger() -> None:
    ledger, other = Ledger.in_memory(), Ledger.in_memory()
    alice, elsewhere = census(ledger).allot("alice", epsilon=0.5), census(other)
    with ledger.audited("alice", "a1", plan="count"):
        thread = threading.Thread(target=alice._charge, args=(STEP,), kwargs={"query": "count"})
        thread.start()
        thread.join()
        elsewhere._charge(STEP, query="count")
    assert spent(alice) == STEP.epsilon and ledger.audit().empty and other.audit().empty
    with pytest.raises(TypeError, match="request_id must be a non-empty string"), ledger.audited("alice", "", "count"):
        pass
