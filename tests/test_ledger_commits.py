"""One durable commit per release on a ledger file, draws that can never refund budget, and old ledgers'
fingerprints still finding their budgets."""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe import BudgetExceededError, Ledger, ReconnectedWarning
from dpframe.accounting import fingerprint as fingerprints
from dpframe.accounting.costs import Cost
from dpframe.accounting.fingerprint import fingerprint, legacy_fingerprint
from dpframe.accounting.ledger import Line
from test_ledger import run_python  # a fresh interpreter on a ledger file


def frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(size=n), "k": rng.integers(0, 10, n),
                         "c": pd.Categorical(rng.choice(["a", "b", "c"], n)),
                         "s": pd.Series(rng.choice(["u", "v"], n), dtype="str")})


@contextmanager
def statements(ledger: Ledger) -> Iterator[list[str]]:
    """Every SQL statement the ledger's connection runs inside the block."""
    seen: list[str] = []
    ledger._connection.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        ledger._connection.set_trace_callback(None)


def durable_commits(seen: list[str]) -> int:
    """Commits of write transactions (``BEGIN IMMEDIATE``): the ones that wait for the disk. A read-only snapshot
    (``BEGIN``) writes nothing."""
    commits, writing = 0, False
    for statement in seen:
        word = statement.split()[0].upper()
        if word == "BEGIN":
            writing = statement.upper().startswith("BEGIN IMMEDIATE")
        elif word == "COMMIT":
            commits += writing
            writing = False
    return commits


RELEASES: dict[str, Callable[[Any], object]] = {
    "count": lambda p: p.dp.count(epsilon=1),
    "mean with bounds": lambda p: p["x"].dp.mean(bounds=(-3, 3), epsilon=1),
    "mean with automatic bounds": lambda p: p["x"].dp.mean(epsilon=1),
    "sum with automatic bounds": lambda p: p["x"].dp.sum(epsilon=1),
    "histogram": lambda p: p["x"].dp.histogram(bins=[-3, 0, 3], epsilon=1),
    "groupby mean": lambda p: p.dp.groupby("c")["x"].mean(bounds=(-3, 3), epsilon=1),
    "groupby agg": lambda p: p.dp.groupby("c").agg({"x": ["count", "mean"]}, bounds={"x": (-3, 3)}, epsilon=1),
    "quantiles": lambda p: p["x"].dp.quantile([0.25, 0.5], bounds=(-3, 3), epsilon=1),
    "crosstab": lambda p: p.dp.crosstab("c", "s", keys={"s": ["u", "v"]}, epsilon=1),
    "value_counts": lambda p: p["c"].dp.value_counts(epsilon=1),
}


@pytest.mark.parametrize("kind", list(RELEASES))
def test_every_release_is_one_durable_commit(tmp_path: Path, kind: str) -> None:
    ledger = Ledger.at(tmp_path / "l.sqlite")
    p = frame().dp.protect(epsilon=1e6, ledger=ledger)
    release = RELEASES[kind]
    warnings.simplefilter("ignore")  # clipping warnings of automatic bounds
    for _ in range(2):  # the second also writes what the first drew from a reservation, in its one commit
        with statements(ledger) as seen:
            release(p)
        assert durable_commits(seen) == 1, seen
        assert not any(s.upper().startswith("PRAGMA") for s in seen), seen


def test_protect_is_one_durable_commit_new_reconnected_or_shared(tmp_path: Path) -> None:
    ledger = Ledger.at(tmp_path / "l.sqlite")
    df = frame()
    with statements(ledger) as seen:
        p = df.dp.protect(epsilon=1.0, ledger=ledger)
    assert durable_commits(seen) == 1
    with statements(ledger) as seen, pytest.warns(ReconnectedWarning):
        df.dp.protect(epsilon=1.0, ledger=ledger)
    assert durable_commits(seen) == 1
    with statements(ledger) as seen:
        df[["x"]].dp.protect(budget=p.dp.budget)
    assert durable_commits(seen) == 1


def test_drawn_lines_are_written_before_the_lines_are_read(tmp_path: Path) -> None:
    ledger = Ledger.at(tmp_path / "l.sqlite")
    p = frame().dp.protect(epsilon=10.0, ledger=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p["x"].dp.mean(epsilon=1)
    lines = p.dp.budget.ledger
    assert "reserved" not in set(lines["mechanism"])
    assert lines["epsilon"].sum() == pytest.approx(1.0)
    assert p.dp.budget.spent.cost == Cost(epsilon=Fraction(1))


def test_a_draw_not_written_leaves_its_reserved_line_charged_in_full(tmp_path: Path) -> None:
    """A crash between a draw and its writing (simulated: the process ends without exit handlers) refunds
    nothing: the charge was durable before the data was read, and the reserved line keeps its whole amount."""
    path = tmp_path / "l.sqlite"
    code = f"""
        import os, warnings
        import numpy as np, pandas as pd, dpframe
        warnings.simplefilter("ignore")
        df = pd.DataFrame({{"x": np.random.default_rng(0).normal(size=400)}})
        p = df.dp.protect(epsilon=10.0, name="crash", ledger={str(path)!r})
        p["x"].dp.mean(epsilon=1)
        os._exit(0)  # no exit handlers: the draws stay in memory, as in a crash
    """
    run_python(code, path)
    budget = dpframe.Budget.open("crash", ledger=path)
    assert budget.spent.cost == Cost(epsilon=Fraction(1))
    lines = budget.ledger
    assert lines["mechanism"].tolist() == ["reserved"] and lines["epsilon"].tolist() == [1.0]


def test_draws_are_written_when_the_process_exits(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    code = f"""
        import warnings
        import numpy as np, pandas as pd, dpframe
        warnings.simplefilter("ignore")
        df = pd.DataFrame({{"x": np.random.default_rng(0).normal(size=400)}})
        p = df.dp.protect(epsilon=10.0, name="exit", ledger={str(path)!r})
        p["x"].dp.mean(epsilon=1)
    """
    run_python(code, path)
    lines = dpframe.Budget.open("exit", ledger=path).ledger
    assert "reserved" not in set(lines["mechanism"]) and lines["epsilon"].sum() == pytest.approx(1.0)


def test_a_refused_charge_keeps_the_draws_for_the_next_transaction(tmp_path: Path) -> None:
    ledger = Ledger.at(tmp_path / "l.sqlite")
    budget = dpframe.Budget(epsilon=1.0, ledger=ledger)
    reserved = budget._reserve(Cost(epsilon=Fraction(1, 2)), query="describe")
    budget._draw(reserved, Line("count", Cost(epsilon=Fraction(1, 2))))
    with pytest.raises(BudgetExceededError):
        budget._charge(Cost(epsilon=Fraction(1)), query="too much")  # rolled back, with the draw it carried
    assert budget.ledger["query"].tolist() == ["count"]
    assert budget.spent.cost == Cost(epsilon=Fraction(1, 2))


def test_another_connection_sees_the_charge_before_the_draws(tmp_path: Path) -> None:
    """Draws change no spending: a process reading the file meanwhile sees the reservation, charged in full."""
    ledger = Ledger.at(tmp_path / "l.sqlite")
    budget = dpframe.Budget(epsilon=1.0, ledger=ledger)
    reserved = budget._reserve(Cost(epsilon=Fraction(1, 2)), query="describe")
    budget._draw(reserved, Line("count", Cost(epsilon=Fraction(1, 5))))
    other = sqlite3.connect(tmp_path / "l.sqlite")
    assert other.execute("SELECT spent_epsilon FROM budgets").fetchone() == ("1/2",)
    assert other.execute("SELECT mechanism, epsilon FROM charges").fetchall() == [("reserved", "1/2")]
    assert budget.ledger["query"].tolist() == ["describe (reserved)", "count"]
    assert sorted(other.execute("SELECT epsilon FROM charges").fetchall()) == [("1/5",), ("3/10",)]
    other.close()


# -- fingerprints ----------------------------------------------------------------------------------------------


def test_the_legacy_fingerprint_is_the_one_older_ledgers_hold() -> None:
    """Digests of dpframe's SHA-256 fingerprint (before fingerprint v2), frozen: they must never change.

    Checked against 61aac6b's ``fingerprint`` on pandas 3 with and without pyarrow and on pandas 2.2. Only
    columns whose dtypes do not vary with those: pandas 3 reads text as ``str`` (Arrow-backed when pyarrow is
    installed) and dates in other units than pandas 2.2, which changes the digest of such data in any version.
    """
    mixed = pd.DataFrame({
        "n": [1.5, np.nan, 3.0], "i": pd.array([1, None, 3], dtype="Int64"),
        "s": pd.Series(["a", None, "a"], dtype=object), "c": pd.Categorical([3, 1, 3]), "b": [True, False, True],
        "o": [[1], {"a": 1}, 2]})
    assert legacy_fingerprint(mixed) == "ffa5835cd4f5abc27fc6be8654c00e3f049482517badc617d5c759fbcc1bfe39"
    assert (legacy_fingerprint(pd.Series([1, 2, 3], name="z"))
            == "b4893a82cfcf01fbd97b8af41c9e8a14e7f49f5d475015c29325bf66291eefa8")
    assert fingerprint(mixed).startswith(fingerprints.PREFIX) and fingerprint(mixed)[4:] != legacy_fingerprint(mixed)


def make_legacy(path: Path, df: pd.DataFrame) -> None:
    """Turn the ledger's record of ``df`` into what an older dpframe wrote: its legacy fingerprint only."""
    with sqlite3.connect(path) as db:
        db.execute("UPDATE fingerprints SET fingerprint = ? WHERE fingerprint = ?",
                   (legacy_fingerprint(df), fingerprint(df)))


@pytest.mark.parametrize("how", ["protect", "budget="])
def test_an_old_ledger_finds_its_budgets_and_relinks_them(tmp_path: Path, how: str) -> None:
    path = tmp_path / "l.sqlite"
    df = frame()
    code = f"""
        import pandas as pd, sqlite3
        from dpframe.accounting.fingerprint import fingerprint, legacy_fingerprint
        df = pd.read_pickle({str(tmp_path / "df.pkl")!r})
        p = df.dp.protect(epsilon=1.0, ledger={str(path)!r})
        p.dp.count(epsilon=0.25)
        print(p.dp.budget.id)
    """
    df.to_pickle(tmp_path / "df.pkl")
    out = run_python(code, path)
    budget_id = out.strip()
    make_legacy(path, df)
    ledger = Ledger.at(path)
    if how == "protect":
        with pytest.warns(ReconnectedWarning, match="already spent"):
            p = df.dp.protect(epsilon=1.0, ledger=ledger)
        assert p.dp.budget.id == budget_id and p.dp.budget.spent.cost == Cost(epsilon=Fraction(1, 4))
    else:
        other = dpframe.Budget(epsilon=1.0, ledger=ledger)
        with pytest.raises(dpframe.LedgerError, match="already protected"):
            df.dp.protect(budget=other)  # the legacy record still refuses a second budget
    with sqlite3.connect(path) as db:
        found = {row[0] for row in db.execute("SELECT fingerprint FROM fingerprints WHERE budget_id = ?",
                                              (budget_id,))}
    if how == "protect":  # relinked: found directly from now on
        assert found == {legacy_fingerprint(df), fingerprint(df)}
        assert "relinked" in ledger.events(budget_id)["event"].tolist()
    else:  # a refusal writes nothing, the relink included
        assert found == {legacy_fingerprint(df)}


def test_an_older_dpframe_cannot_open_a_second_budget_for_data_this_one_recorded(tmp_path: Path) -> None:
    # An older dpframe looks data up by its SHA-256 fingerprint, misses the v2 record, and would create a budget and
    # link its fingerprint in one transaction (its own SQL, below): the ledger refuses the link, and so the budget.
    path = tmp_path / "l.sqlite"
    df = frame()
    p = df.dp.protect(epsilon=1.0, ledger=path)
    with pytest.raises(sqlite3.IntegrityError, match="newer dpframe"), sqlite3.connect(path) as db:
        db.execute("INSERT INTO budgets VALUES ('old', NULL, 'approx', '', '1', '0', '0', '0', '0', '0')")
        db.execute("INSERT INTO fingerprints VALUES (?, ?, ?, ?, ?)",
                   (legacy_fingerprint(df), "old", len(df), repr(list(df.columns)), ""))
    with sqlite3.connect(path) as db:  # the older dpframe's transaction rolled back: one budget, as before
        assert [row[0] for row in db.execute("SELECT id FROM budgets")] == [p.dp.budget.id]


def test_the_legacy_fingerprint_is_computed_only_when_a_legacy_entry_could_match(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "l.sqlite"
    old = frame(300)
    old.dp.protect(epsilon=1.0, ledger=path)
    make_legacy(path, old)
    calls: list[int] = []
    monkeypatch.setattr("dpframe.accounting.budget.legacy_fingerprint",
                        lambda data: calls.append(len(data)) or legacy_fingerprint(data))
    frame(200).dp.protect(epsilon=1.0, ledger=path)  # other rows: no legacy entry could be it
    assert calls == []
    frame(300, seed=1).dp.protect(epsilon=1.0, ledger=path)  # same shape and names: checked, and new
    assert calls == [300]


def test_arrow_strings_fingerprint_by_content_whatever_their_chunks_or_slices() -> None:
    pa = pytest.importorskip("pyarrow")

    values = ["alpha", "", None, "beta", "gamma"] * 3
    whole = pd.Series(values, dtype="str")
    chunked = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([values[:4], values[4:]], pa.large_string())),
                        dtype="str") if hasattr(pd.arrays, "ArrowStringArray") else whole
    sliced = pd.Series(["zzz"] + values, dtype="str").iloc[1:].reset_index(drop=True)
    assert fingerprint(whole) == fingerprint(chunked) == fingerprint(sliced)
    empty_not_missing = pd.Series([v if v is not None else "" for v in values], dtype="str")
    moved = pd.Series(["alph", "a"] + values[2:], dtype="str")  # same characters, other boundaries
    assert len({fingerprint(whole), fingerprint(empty_not_missing), fingerprint(moved)}) == 3
    present = [v for v in values if v is not None]  # read from the Arrow buffers themselves
    assert fingerprint(pd.Series(present, dtype="str")) == fingerprint(pd.Series(["zzz"] + present, dtype="str")
                                                                      .iloc[1:].reset_index(drop=True))


def test_missing_arrow_strings_fingerprint_alike_whatever_their_slots_hold() -> None:
    # Arrow lets a missing slot hold characters (if_else keeps them): equal columns must still find one budget.
    pa = pytest.importorskip("pyarrow")
    compute = pytest.importorskip("pyarrow.compute")
    values = pa.array(["alpha", "beta", "gamma"])
    kept = compute.if_else(pa.array([True, False, True]), values, pa.scalar(None, pa.string()))
    held = pd.Series(pd.arrays.ArrowExtensionArray(kept))
    plain = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(["alpha", None, "gamma"])))
    assert held.equals(plain) and fingerprint(held) == fingerprint(plain)


def test_a_forked_process_neither_writes_nor_draws_its_parents_draws(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent writes its own draws; a child that wrote them too would split the reserved line twice."""
    from dpframe.accounting import process

    ledger = Ledger.at(tmp_path / "l.sqlite")
    budget = dpframe.Budget(epsilon=1.0, ledger=ledger)
    reserved = budget._reserve(Cost(epsilon=Fraction(1, 2)), query="describe")
    budget._draw(reserved, Line("count", Cost(epsilon=Fraction(1, 5))))
    monkeypatch.setattr(process, "_current", process.ProcessToken())  # what a fork does
    budget._charge(Cost(epsilon=Fraction(1, 10)), query="the child's count")
    with pytest.raises(dpframe.LedgerError, match="not a reserved line of this process"):
        budget._draw(reserved, Line("mean", Cost(epsilon=Fraction(1, 10))))
    lines = budget.ledger
    assert lines["query"].tolist() == ["describe (reserved)", "the child's count"]
    assert lines["epsilon"].tolist() == [0.5, 0.1]
