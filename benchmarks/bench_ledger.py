"""Benchmark the persistent ledger: what durability costs a query, and protect() against a copy of the frame.

Usage::

    python benchmarks/bench_ledger.py                          # 1k, 30k, 1M and 10M rows, 5 rounds
    python benchmarks/bench_ledger.py --sizes 1000,30000 --rounds 3

Prints, on the disk of the temporary folder (``--folder`` to choose another):

- the cost of one ``fsync`` of a small write, and of a bare durable SQLite commit
  (WAL, ``synchronous=FULL``: one row inserted), the floor of any durable charge;
- how many durable commits (write transactions) each kind of release and
  protect() makes on a ledger file (the target is 1);
- a count on 1,000 rows with a ledger file and with an in-memory ledger, and
  the file's overhead beyond its commit: file − memory − bare commit;
- protect() (in-memory ledger: no disk) against ``df.copy()`` of a frame with
  a float, an integer, a categorical and a text column (pandas' ``str``).

Timings are medians within a round; rounds alternate the things compared, and
the figure given is the median over rounds with its range (min–max).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import dpframe  # noqa: E402


def median_ms(call: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``call`` in milliseconds, after one untimed call."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def rounds(calls: dict[str, Callable[[], Any]], repeats: int, count: int) -> dict[str, list[float]]:
    """Each call's median (ms) in each of ``count`` rounds, the calls alternating within a round."""
    out: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(count):
        for name, call in calls.items():
            out[name].append(median_ms(call, repeats))
    return out


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):9.3f} ms  ({min(values):.3f}–{max(values):.3f})"


def frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(2024)
    return pd.DataFrame({
        "x": rng.normal(size=n).round(4), "k": rng.integers(0, 1000, n),
        "c": pd.Categorical(rng.choice(["a", "b", "c"], n)),
        "s": pd.Series(rng.choice(["alpha", "beta", "gamma", "delta", "epsilon"], n), dtype="str"),
    })


def durable_commits(ledger: dpframe.Ledger, call: Callable[[], Any]) -> int:
    """How many write transactions (``BEGIN IMMEDIATE`` ... ``COMMIT``) ``call`` makes on the ledger."""
    seen: list[str] = []
    ledger._connection.set_trace_callback(seen.append)
    try:
        call()
    finally:
        ledger._connection.set_trace_callback(None)
    commits, writing = 0, False
    for statement in seen:
        upper = statement.upper()
        if upper.startswith("BEGIN"):
            writing = upper.startswith("BEGIN IMMEDIATE")
        elif upper.startswith("COMMIT"):
            commits, writing = commits + writing, False
    return commits


def disk(folder: Path, repeats: int, count: int) -> dict[str, list[float]]:
    """fsync of a small write; a bare durable SQLite commit (WAL, synchronous=FULL)."""
    descriptor = os.open(folder / "fsync.bin", os.O_WRONLY | os.O_CREAT)
    bare = sqlite3.connect(folder / "bare.sqlite", isolation_level=None)
    bare.execute("PRAGMA journal_mode=WAL")
    bare.execute("PRAGMA synchronous=FULL")
    bare.execute("CREATE TABLE IF NOT EXISTS t (line INTEGER PRIMARY KEY, text TEXT)")

    def sync() -> None:
        os.write(descriptor, b"x" * 100)
        os.fsync(descriptor)

    def commit() -> None:
        bare.execute("BEGIN IMMEDIATE")
        bare.execute("INSERT INTO t (text) VALUES (?)", ("a ledger line " * 8,))
        bare.execute("COMMIT")

    try:
        return rounds({"fsync": sync, "bare commit": commit}, repeats, count)
    finally:
        os.close(descriptor)
        bare.close()


RELEASES: dict[str, Callable[[Any], object]] = {
    "count": lambda p: p.dp.count(epsilon=1),
    "mean (bounds)": lambda p: p["x"].dp.mean(bounds=(-3, 3), epsilon=1),
    "mean (automatic bounds)": lambda p: p["x"].dp.mean(epsilon=1),
    "histogram": lambda p: p["x"].dp.histogram(bins=[-3, 0, 3], epsilon=1),
    "groupby mean": lambda p: p.dp.groupby("c")["x"].mean(bounds=(-3, 3), epsilon=1),
    "quantiles": lambda p: p["x"].dp.quantile([0.25, 0.5], bounds=(-3, 3), epsilon=1),
    "crosstab": lambda p: p.dp.crosstab("c", "s", keys={"s": ["alpha", "beta"]}, epsilon=1),
    "describe": lambda p: p[["x", "k", "c"]].dp.describe(bounds={"x": (-3, 3), "k": (0, 1000)}, epsilon=1),
}


def commits_per_release(folder: Path) -> dict[str, int]:
    ledger = dpframe.Ledger.at(folder / "commits.sqlite")
    df = frame(1000)
    out = {"protect (new budget)": durable_commits(ledger, lambda: df.dp.protect(epsilon=1e9, ledger=ledger)),
           "protect (reconnect)": durable_commits(ledger, lambda: df.dp.protect(epsilon=1e9, ledger=ledger))}
    p = df.dp.protect(epsilon=1e9, ledger=ledger)
    out["protect (budget=)"] = durable_commits(ledger, lambda: df[["x"]].dp.protect(budget=p.dp.budget))
    for name, release in RELEASES.items():
        release(p)  # a first release of its kind; the second writes the first's draws within its own commit
        out[name] = durable_commits(ledger, lambda release=release: release(p))
    return out


def overhead(folder: Path, repeats: int, count: int) -> dict[str, list[float]]:
    small = frame(1000)
    on_file = small.dp.protect(epsilon=1e12, ledger=dpframe.Ledger.at(folder / "small.sqlite"))
    in_memory = small.dp.protect(epsilon=1e12, ledger=dpframe.Ledger.in_memory())
    calls = {"count, file": lambda: on_file.dp.count(epsilon=1.0),
             "count, memory": lambda: in_memory.dp.count(epsilon=1.0)}
    out = {name: [] for name in calls} | {"bare commit": []}
    for _ in range(count):  # the bare commit alternates with the counts, on the same disk
        for name, values in disk(folder, repeats, 1).items():
            if name in out:
                out[name] += values
        for name, values in rounds(calls, repeats, 1).items():
            out[name] += values
    out["file − memory − bare commit"] = [f - m - b for f, m, b in
                                         zip(out["count, file"], out["count, memory"], out["bare commit"])]
    return out


def protect_against_copy(sizes: list[int], count: int) -> None:
    ledger = dpframe.Ledger.in_memory()
    for n in sizes:
        df = frame(n)
        repeats = 3 if n >= 1_000_000 else 50
        timed = rounds({"copy": df.copy, "protect": lambda df=df: df.dp.protect(epsilon=1.0, ledger=ledger)},
                       repeats, count)
        ratios = [p / c for p, c in zip(timed["protect"], timed["copy"])]
        print(f"{n:>11,} rows  copy {spread(timed['copy'])}   protect {spread(timed['protect'])}   "
              f"protect / copy {statistics.median(ratios):.1f} ({min(ratios):.1f}–{max(ratios):.1f})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,30000,1000000,10000000", help="rows of protect() vs copy")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--folder", default=None, help="where the ledger files go (default: a temporary folder)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # reconnections, clipping by automatic bounds
    folder = Path(tempfile.mkdtemp(prefix="dpframe-bench-ledger-", dir=args.folder))
    print(f"ledger files in {folder}; {args.rounds} rounds; median (min–max) over rounds")
    for name, values in disk(folder, 200, args.rounds).items():
        print(f"{name:32s} {spread(values)}")
    print("durable commits (write transactions) on a ledger file:")
    for name, commits in commits_per_release(folder).items():
        print(f"  {name:30s} {commits}")
    print("a count on 1,000 rows:")
    for name, values in overhead(folder, 200, args.rounds).items():
        print(f"  {name:30s} {spread(values)}")
    print("protect() (in-memory ledger, fingerprint included) against df.copy():")
    protect_against_copy([int(size) for size in args.sizes.split(",")], args.rounds)


if __name__ == "__main__":
    main()
