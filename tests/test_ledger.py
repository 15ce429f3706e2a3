"""The persistent ledger: budgets that survive restarts, cannot be replayed and never overspend across processes."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpframe import Budget, BudgetExceededError, Ledger, LedgerError, ReconnectedWarning, RefusedError
from dpframe.__main__ import main
from dpframe.accounting.costs import exact
from dpframe.accounting.fingerprint import fingerprint

ROOT = Path(__file__).resolve().parents[1]


def frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "city": rng.choice(["Oslo", "Rome", "Lima"], n)})


def run_python(code: str, ledger: Path, timeout: float = 120) -> str:
    """Run ``code`` in a fresh interpreter that uses the ledger file; return its standard output."""
    env = {**os.environ, "DPFRAME_LEDGER": str(ledger), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- exact but forgiving arithmetic --------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (0.1, Fraction(1, 10)), (1e-5 / 10, Fraction(1, 10**6)), (0.1 + 0.2, Fraction(3, 10)), (1.0 / 7, Fraction(1, 7)),
    (1.0, Fraction(1)), (2.5e-7, Fraction(1, 4_000_000)),
])
def test_floats_are_read_as_the_simplest_nearby_rational(value: float, expected: Fraction) -> None:
    assert exact(value, "epsilon") == expected


def test_reading_stays_within_the_stated_tolerance() -> None:
    rng = np.random.default_rng(1)
    for value in 10.0 ** rng.uniform(-12, 3, 2000):
        assert abs(exact(value, "epsilon") / Fraction(value) - 1) <= Fraction(1, 10**12)


def test_equal_float_shares_always_fit(tmp_path: Path) -> None:
    p = frame().dp.protect(epsilon=1.0, delta=1e-5, ledger=tmp_path / "l.sqlite")
    for _ in range(10):
        p.dp.count(epsilon=0.1, delta=1e-5 / 10, mechanism="gaussian")
    assert p.dp.budget.remaining.epsilon == 0 and p.dp.budget.remaining.delta == 0
    q = frame(seed=1).dp.protect(epsilon=1.0, ledger=tmp_path / "l.sqlite")
    for _ in range(7):
        q.dp.count(epsilon=1.0 / 7)
    assert q.dp.budget.spent.epsilon.exact == 1


def test_the_mechanism_is_calibrated_with_the_value_charged() -> None:
    p = frame().dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    answer = p.dp.count(epsilon=1e-5 / 10 * 1e5)  # 0.1 within float error
    assert answer.cost.epsilon == Fraction(1, 10)
    assert answer.std == pytest.approx(2**0.5 / 0.1, rel=1e-2)


# -- readouts ------------------------------------------------------------------------------------------


def test_readouts_format_convert_and_serialise() -> None:
    budget = Budget(epsilon=1.0, delta=1e-6, ledger=Ledger.in_memory())
    p = frame().dp.protect(budget=budget)
    p.dp.count(epsilon=0.4)
    assert f"{budget.remaining.epsilon:.2f}" == "0.60" and float(budget.spent.epsilon) == 0.4
    assert json.loads(json.dumps(budget.spent.as_dict())) == {"epsilon": 0.4, "delta": 0.0, "rho": 0.0}
    assert json.dumps(budget.remaining.epsilon) == "0.6"
    assert budget.spent.epsilon.exact == Fraction(2, 5)
    assert "remaining ε=0.6, δ=1e-06, 1 release(s)" in repr(budget)
    html = budget._repr_html_()
    assert "<table" in html and "in memory" in html


def test_a_zcdp_budget_is_also_shown_as_epsilon_delta() -> None:
    budget = Budget(rho=0.5, ledger=Ledger.in_memory())
    assert "(ε=5.222 at δ=1e-06)" in repr(budget)  # the tight conversion (CKS20 Cor. 13)
    epsilon, delta = budget.total.as_approx(1e-6)
    assert epsilon < 0.5 + 2 * (0.5 * np.log(1e6)) ** 0.5 and delta == 1e-6  # below Bun & Steinke's
    assert epsilon == pytest.approx(5.2215, abs=1e-4)


# -- identity: names, fingerprints, reconnecting -------------------------------------------------------


def test_protecting_the_same_data_again_reconnects_and_says_so(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    df = frame()
    p = df.dp.protect(epsilon=1.0, ledger=ledger)
    p.dp.count(epsilon=0.4)
    with pytest.warns(ReconnectedWarning, match=r"ε=0.4, δ=0 of ε=1, δ=0 already spent"):
        again = df.copy(deep=True).dp.protect(epsilon=1.0, ledger=ledger)
    assert again.dp.budget is p.dp.budget
    assert float(again.dp.budget.remaining.epsilon) == pytest.approx(0.6)
    assert again.dp.budget.events["event"].tolist() == ["created", "reconnected"]


def test_a_larger_total_needs_an_explicit_extension(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    df = frame()
    df.dp.protect(epsilon=1.0, ledger=ledger).dp.count(epsilon=1.0)
    with pytest.raises(LedgerError, match="has total ε=1, δ=0 .*extend=True"):
        df.dp.protect(epsilon=2.0, ledger=ledger)
    with pytest.raises(LedgerError, match="pass that total"):
        df.dp.protect(epsilon=0.5, ledger=ledger)
    with pytest.raises(LedgerError, match="kind"):
        df.dp.protect(rho=0.5, ledger=ledger)
    with pytest.warns(ReconnectedWarning):
        p = df.dp.protect(epsilon=2.0, ledger=ledger, extend=True)
    assert float(p.dp.budget.remaining.epsilon) == 1.0
    events = p.dp.budget.events
    assert events["event"].tolist() == ["created", "extended", "reconnected"]
    assert "ε=1, δ=0 -> ε=2, δ=0" in events["detail"].iloc[1]
    with pytest.raises(ValueError, match="only be extended"):
        p.dp.budget.extend(epsilon=1.5)


def test_names_identify_budgets(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    df = frame()
    p = df.dp.protect(epsilon=1.0, name="census-2020", ledger=ledger)
    p.dp.count(epsilon=0.25)
    assert Budget.open("census-2020", ledger=ledger) is p.dp.budget
    # Edited data under the same name: the name is the identity, and the new fingerprint joins it.
    edited = df.copy()
    edited.loc[0, "age"] = 99
    with pytest.warns(ReconnectedWarning):
        q = edited.dp.protect(epsilon=1.0, name="census-2020", ledger=ledger)
    assert q.dp.budget is p.dp.budget
    # The same data under a new name would open a second budget over the same people: refused.
    with pytest.raises(LedgerError, match="already protected under budget 'census-2020'"):
        df.dp.protect(epsilon=1.0, name="another", ledger=ledger)
    with pytest.raises(LedgerError, match="census-2020"):
        Budget.open("nope", ledger=ledger)


def test_an_edited_cell_is_new_data_with_a_new_budget(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    df = frame()
    p = df.dp.protect(epsilon=1.0, ledger=ledger)
    edited = df.copy()
    edited.loc[3, "city"] = "Kyiv"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReconnectedWarning)
        q = edited.dp.protect(epsilon=1.0, ledger=ledger)
    assert q.dp.budget is not p.dp.budget


def test_a_shared_budget_records_its_data_so_a_fresh_one_cannot_reprotect_it(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    df, other = frame(), frame(seed=1)
    shared = Budget(epsilon=1.0, ledger=ledger)
    p = df.dp.protect(budget=shared)
    p.dp.count(epsilon=0.75)
    assert df.dp.protect(budget=shared).dp.budget is shared  # the same budget again: fine
    assert other.dp.protect(budget=shared).dp.budget is shared  # other tables about the same people
    # A fresh budget over data already protected would spend the same people twice.
    with pytest.raises(LedgerError, match="already protected under budget .*spend twice"):
        df.copy().dp.protect(budget=Budget(epsilon=1.0, ledger=ledger))
    # And protecting it by total reconnects to the shared budget, with what it spent.
    with pytest.warns(ReconnectedWarning):
        again = df.dp.protect(epsilon=1.0, ledger=ledger)
    assert again.dp.budget is shared and float(again.dp.budget.remaining.epsilon) == pytest.approx(0.25)
    assert shared.events["event"].tolist() == ["created", "linked", "linked", "reconnected"]


def test_names_are_matched_exactly_not_as_patterns(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    Budget(epsilon=1.0, name="census_2020", ledger=ledger)
    for pattern in ("%", "_", "census%"):
        with pytest.raises(LedgerError, match="no budget"):
            Budget.open(pattern, ledger=ledger)
    with pytest.raises(LedgerError, match="empty"):
        Budget.open("", ledger=ledger)


def test_argument_errors_record_nothing(tmp_path: Path) -> None:
    ledger = Ledger.at(tmp_path / "l.sqlite")
    for bad in ({"epsilon": -1.0}, {"epsilon": 1.0, "categories": {"nope": ["a"]}}, {"epsilon": 1.0, "name": ""},
                {"epsilon": 1.0, "extend": "yes"}):
        with pytest.raises((ValueError, TypeError, KeyError)):
            frame().dp.protect(ledger=ledger, **bad)  # type: ignore[arg-type]
    assert len(ledger.budgets()) == 0


# -- pickles refer to the ledger, never a snapshot -----------------------------------------------------


def test_an_old_pickle_cannot_spend_again_in_this_process(tmp_path: Path) -> None:
    p = frame().dp.protect(epsilon=1.0, ledger=tmp_path / "l.sqlite")
    p.dp.count(epsilon=0.4)
    old = pickle.dumps(p)
    p.dp.count(epsilon=0.4)
    del p
    import gc

    gc.collect()
    restored = pickle.loads(old)
    assert float(restored.dp.budget.spent.epsilon) == pytest.approx(0.8)
    with pytest.raises(BudgetExceededError):
        restored.dp.count(epsilon=0.4)


def test_a_budget_in_a_forgotten_in_memory_ledger_cannot_be_unpickled() -> None:
    p = frame().dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    data = pickle.dumps(p)
    del p
    import gc

    gc.collect()
    with pytest.raises(LedgerError, match="in-memory ledger"):
        pickle.loads(data)


def test_a_missing_ledger_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "moved" / "l.sqlite"
    data = pickle.dumps(frame().dp.protect(epsilon=1.0, ledger=path))
    Ledger.at(path)  # still open in this process: closed by removing every reference below
    import gc

    gc.collect()
    (tmp_path / "moved").rename(tmp_path / "elsewhere")
    with pytest.raises(LedgerError, match="point DPFRAME_LEDGER at its new place"):
        pickle.loads(data)
    monkeypatch.setenv("DPFRAME_LEDGER", str(tmp_path / "elsewhere" / "l.sqlite"))
    assert pickle.loads(data).dp.budget.total.epsilon == 1


def test_an_unreadable_ledger_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-ledger.sqlite"
    bad.write_text("this is not a database" * 100)
    with pytest.raises(LedgerError, match="cannot open the ledger"):
        frame().dp.protect(epsilon=1.0, ledger=bad)


# -- across processes --------------------------------------------------------------------------------


def test_restarts_see_the_spend_and_old_pickles_cannot_replay_it(tmp_path: Path) -> None:
    ledger, data, old = tmp_path / "l.sqlite", tmp_path / "data.csv", tmp_path / "old.pkl"
    frame().to_csv(data, index=False)
    run_python(f"""
        import pandas as pd, dpframe
        p = pd.read_csv({str(data)!r}).dp.protect(epsilon=1.0)
        p.dp.count(epsilon=0.4)
        pd.to_pickle(p, {str(old)!r})
    """, ledger)
    out = run_python(f"""
        import warnings, pandas as pd, dpframe
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p = pd.read_csv({str(data)!r}).dp.protect(epsilon=1.0)
        print(type(caught[0].message).__name__, float(p.dp.budget.spent.epsilon))
        p.dp.count(epsilon=0.4)
    """, ledger)
    assert out.split() == ["ReconnectedWarning", "0.4"]
    out = run_python(f"""
        import pandas as pd, dpframe
        p = pd.read_pickle({str(old)!r})
        print(float(p.dp.budget.spent.epsilon))
        try:
            p.dp.count(epsilon=0.4)
        except dpframe.BudgetExceededError:
            print("refused")
    """, ledger)
    assert out.split() == ["0.8", "refused"]


def test_a_process_killed_after_the_charge_keeps_it(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    code = textwrap.dedent("""
        import time, pandas as pd, dpframe
        from dpframe.queries import kernels
        p = pd.DataFrame({"x": range(100)}).dp.protect(epsilon=1.0, name="killed")
        def slow(*args, **kwargs):
            time.sleep(600)   # the release reads the data only after the charge: killed here
        kernels.moment_sums = slow
        p.dp.above_threshold([dpframe.agg.sum("x", bounds=(0, 100))], threshold=1, epsilon=0.5)
    """)
    env = {**os.environ, "DPFRAME_LEDGER": str(ledger), "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if ledger.exists():
                budgets = Ledger.at(ledger).budgets()
                if len(budgets) and budgets["lines"].iloc[0] == 1:
                    break
            time.sleep(0.05)
        else:
            pytest.fail("the child never charged")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
    budget = Budget.open("killed", ledger=ledger)
    assert budget.spent.epsilon.exact == Fraction(1, 2)
    assert budget.ledger["query"].tolist() == ["above_threshold"]


def test_concurrent_processes_never_overspend(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    Budget(epsilon=1.0, name="shared", ledger=ledger)
    code = textwrap.dedent("""
        import pandas as pd, dpframe
        budget = dpframe.Budget.open("shared")
        p = pd.DataFrame({"x": range(100)}).dp.protect(budget=budget)
        done = 0
        for _ in range(15):
            try:
                p.dp.count(epsilon=0.05)
                done += 1
            except dpframe.BudgetExceededError:
                pass
        print(done)
    """)
    env = {**os.environ, "DPFRAME_LEDGER": str(ledger), "PYTHONPATH": str(ROOT)}
    children = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
                for _ in range(4)]
    answered = [int(child.communicate(timeout=300)[0]) for child in children]
    assert all(child.returncode == 0 for child in children)
    budget = Budget.open("shared", ledger=ledger)
    assert sum(answered) == 20  # 60 attempts, exactly 1 / 0.05 of them fit
    assert budget.spent.epsilon.exact == 1 and len(budget.ledger) == 20


# -- atomic releases of several parts --------------------------------------------------------------------


def test_a_release_of_several_parts_is_charged_before_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    p = pd.DataFrame({"x": np.arange(2000.0)}).dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    budget = p.dp.budget
    from dpframe.queries import bounds

    choose = bounds.choose_bounds

    def meanwhile(*args: object, **kwargs: object) -> object:
        # Another analyst spends everything that is left while the bounds are being found.
        budget._charge(budget.remaining.cost, query="someone else")
        return choose(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bounds, "choose_bounds", meanwhile)
    answer = p["x"].dp.mean(epsilon=0.5)  # automatic bounds: three parts, reserved together
    assert answer.cost.epsilon == Fraction(1, 2)
    lines = budget.ledger
    # All parts were charged before the other analyst's spend, which therefore could not take the later ones.
    # Fully drawn, the reservation line is gone.
    assert lines["query"].tolist() == ["bounds for mean", "someone else", "clipped values for mean", "mean"]
    assert lines["epsilon"].tolist() == pytest.approx([0.125, 0.5, 0.05, 0.325])


def test_a_release_that_does_not_fit_charges_none_of_its_parts() -> None:
    p = pd.DataFrame({"x": np.arange(2000.0)}).dp.protect(epsilon=0.3, ledger=Ledger.in_memory())
    with pytest.raises(BudgetExceededError, match="mean with automatic bounds"):
        p["x"].dp.mean(epsilon=0.5)
    assert len(p.dp.budget.ledger) == 0


def test_a_sample_charges_reserved_parts_their_amplified_increments() -> None:
    p = pd.DataFrame({"x": np.arange(20000.0)}).dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    sample = p.dp.sample(0.1)
    sample["x"].dp.mean(epsilon=1.0)
    lines = p.dp.budget.ledger
    assert len(lines) == 3
    from dpframe.accounting.amplification import amplified_epsilon

    assert lines["epsilon"].sum() == pytest.approx(float(amplified_epsilon(Fraction(1), Fraction(1, 10))))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_process_cannot_charge_from_its_parents_sample(tmp_path: Path) -> None:
    import multiprocessing

    # A file ledger, which a forked child may use: only the sample's account refuses.
    p = pd.DataFrame({"x": np.arange(1000.0)}).dp.protect(epsilon=10.0, ledger=tmp_path / "l.sqlite")
    sample = p.dp.sample(0.1)
    sample.dp.count(epsilon=1.0)
    context = multiprocessing.get_context("fork")
    answers = context.Queue()

    def child() -> None:
        try:
            sample.dp.count(epsilon=1.0)
            answers.put("charged")
        except Exception as error:  # noqa: BLE001 - the child reports what it raised
            answers.put(f"{type(error).__name__}: {error}")

    worker = context.Process(target=child)
    worker.start()
    answer = answers.get(timeout=120)
    worker.join(timeout=60)
    assert answer.startswith("RefusedError") and "process that drew the sample" in answer
    sample.dp.count(epsilon=1.0)  # the parent goes on


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_state_copied_by_a_fork_is_foreign_even_under_the_parents_process_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Process ids come round again: a descendant given the id of an exited parent must still be refused.
    import dpframe.accounting.process as process

    p = pd.DataFrame({"x": np.arange(1000.0)}).dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    sample = p.dp.sample(0.1)
    sample.dp.count(epsilon=1.0)
    monkeypatch.setattr(process, "_current", process.ProcessToken())  # what a fork does, same pid
    with pytest.raises(RefusedError, match="process that drew the sample"):
        sample.dp.count(epsilon=1.0)
    with pytest.raises(LedgerError, match="in-memory ledger belongs to the process"):
        p.dp.count(epsilon=1.0)


# -- fingerprints --------------------------------------------------------------------------------------


def test_fingerprints_depend_on_content_only() -> None:
    df = pd.DataFrame({
        "n": [1.5, np.nan, 3.0], "i": pd.array([1, None, 3], dtype="Int64"), "s": ["a", None, "a"],
        "c": pd.Categorical(["x", "y", "x"]), "t": pd.to_datetime(["2020-01-01", None, "2021-01-01"]).tz_localize("UTC"),
        "o": [[1], {"a": 1}, 2],
    })
    rebuilt = pd.DataFrame({c: df[c].copy(deep=True) for c in df.columns})
    rebuilt["s"] = pd.Series(["".join(["a"]), None, "a"], dtype=df["s"].dtype)  # equal values, other objects
    assert fingerprint(df) == fingerprint(rebuilt)
    for change in (lambda d: d.assign(n=[1.5, np.nan, 3.5]), lambda d: d.assign(s=["a", None, "b"]),
                   lambda d: d.set_axis([0, 1, 5]), lambda d: d.rename(columns={"n": "m"}),
                   lambda d: d.assign(i=d["i"].astype("float64")), lambda d: d.iloc[[1, 0, 2]]):
        assert fingerprint(change(df)) != fingerprint(df)
    assert fingerprint(df["s"]) != fingerprint(df[["s"]])


def test_fingerprints_do_not_depend_on_the_hash_seed() -> None:
    code = """
        import pandas as pd
        from dpframe.accounting.fingerprint import fingerprint
        frame = pd.DataFrame({"tags": [{"red", "green", "blue", "cyan"}, {"cat", "dog"}] * 3,
                              "frozen": [frozenset({"x", "y", "z", "w"})] * 6})
        print(fingerprint(frame))
    """
    prints = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        prints.add(done.stdout)
    assert len(prints) == 1


def test_the_exact_copy_of_the_same_rows_is_the_same_data(tmp_path: Path) -> None:
    # unprotected() keeps a RangeIndex, so the rows fingerprint as before if its mark is lost.
    df = frame()
    p = df.dp.protect(epsilon=1.0, ledger=tmp_path / "l.sqlite")
    copy = p.dp.unprotected()
    copy.attrs = {}  # pandas drops the mark in some operations
    with pytest.warns(ReconnectedWarning):
        assert copy.dp.protect(epsilon=1.0, ledger=tmp_path / "l.sqlite").dp.budget is p.dp.budget


def test_fingerprints_do_not_depend_on_threading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large frames are hashed in pieces on threads; the digest is the one a single thread computes."""
    from dpframe.accounting import fingerprint as module

    n = 1_200_000  # 9.6 MB per float column: two pieces
    df = pd.DataFrame({"x": np.arange(n, dtype=float), "s": np.array(["a", "b", "c"], dtype=object)[np.arange(n) % 3],
                       "c": pd.Categorical.from_codes(np.arange(n) % 2, ["u", "v"])}).set_index("x", drop=False)
    threaded = fingerprint(df)
    monkeypatch.setattr(module, "_PARALLEL_CELLS", 10**12)
    assert fingerprint(df) == threaded
    monkeypatch.setattr(module, "_PARALLEL_CELLS", 1)
    assert fingerprint(df.assign(x=df["x"].where(df["x"] != n - 1, 0.5))) != threaded


# -- the command line ------------------------------------------------------------------------------------


def test_the_budget_command_lists_shows_and_exports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "l.sqlite"
    p = frame().dp.protect(epsilon=1.0, name="census", ledger=ledger)
    p.dp.count(epsilon=0.25)
    p["age"].dp.mean(bounds=(0, 100), epsilon=0.25)
    assert main(["budget", "list", "--ledger", str(ledger)]) == 0
    listing = capsys.readouterr().out
    assert "'census'" in listing and "ε=0.5, δ=0" in listing
    assert main(["budget", "show", "census", "--ledger", str(ledger)]) == 0
    shown = capsys.readouterr().out
    assert "created" in shown and "count" in shown and "mean" in shown
    assert main(["budget", "export", "census", "--format", "json", "--ledger", str(ledger)]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["spent"]["epsilon"] == 0.5 and [line["query"] for line in exported["lines"]] == ["count", "mean"]
    out = tmp_path / "lines.csv"
    assert main(["budget", "export", "census", "--format", "csv", "--out", str(out), "--ledger", str(ledger)]) == 0
    assert pd.read_csv(out)["epsilon"].tolist() == [0.25, 0.25]
    assert main(["budget", "show", "nope", "--ledger", str(ledger)]) == 1
    assert "no budget 'nope'" in capsys.readouterr().err


def test_the_in_memory_ledger_says_so() -> None:
    assert repr(Ledger.in_memory()) == "Ledger(in memory: forgotten when this process ends)"
    assert "in memory" in repr(Ledger.at(":memory:"))
