"""Benchmark the persistent ledger: the data fingerprint against reading the data, and one charge.

Usage::

    python benchmarks/bench_ledger.py               # 10 million rows, 5 repeats
    python benchmarks/bench_ledger.py --rows 100000 --repeats 1

The frame has a float, an integer and a low-cardinality text column (as read
from CSV: pandas' ``str`` dtype). Timings are medians: ``pd.read_csv`` of the
frame written to CSV, :func:`dpframe.accounting.fingerprint.fingerprint` of
the frame read back (target: under a fifth of the read), one charge (a
durable SQLite transaction in a ledger file) with and without a query around it,
and a small count on a ledger file against the same count on an in-memory ledger.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import dpframe  # noqa: E402
from dpframe.accounting.costs import Cost  # noqa: E402
from dpframe.accounting.fingerprint import fingerprint  # noqa: E402


def median_seconds(call: Callable[[], Any], repeats: int) -> float:
    call()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(2024)
    n = args.rows
    folder = Path(tempfile.mkdtemp(prefix="dpframe-bench-ledger-"))
    pd.DataFrame({
        "x": rng.normal(size=n).round(4), "k": rng.integers(0, 1000, n),
        "s": rng.choice(["alpha", "beta", "gamma", "delta", "epsilon"], n),
    }).to_csv(folder / "data.csv", index=False)
    read = median_seconds(lambda: pd.read_csv(folder / "data.csv"), args.repeats)
    frame = pd.read_csv(folder / "data.csv")
    hashed = median_seconds(lambda: fingerprint(frame), args.repeats)
    ledger = dpframe.Ledger.at(folder / "ledger.sqlite")
    budget = dpframe.Budget(epsilon=1e9, ledger=ledger)
    cost = Cost(epsilon=Fraction(1))
    charge = median_seconds(lambda: budget._charge(cost, query="benchmark"), max(args.repeats, 200))
    p = frame.dp.protect(budget=budget)
    mean = median_seconds(lambda: p["x"].dp.mean(bounds=(-3, 3), epsilon=1.0), args.repeats)
    # What durability costs a query: the same small count on a ledger file and on an in-memory ledger.
    small = frame.head(1000)
    on_file = small.dp.protect(epsilon=1e9, ledger=dpframe.Ledger.at(folder / "small.sqlite"))
    in_memory = small.dp.protect(epsilon=1e9, ledger=dpframe.Ledger.in_memory())
    count_file = median_seconds(lambda: on_file.dp.count(epsilon=1.0), max(args.repeats, 200))
    count_memory = median_seconds(lambda: in_memory.dp.count(epsilon=1.0), max(args.repeats, 200))
    results = {"read_csv s": read, "fingerprint s": hashed, "fingerprint / read_csv": hashed / read,
               "charge ms": charge * 1e3, "mean (with its charge) ms": mean * 1e3,
               "count, 1000 rows, file ms": count_file * 1e3, "count, 1000 rows, memory ms": count_memory * 1e3}
    print(f"rows {n:,}  repeats {args.repeats}  (median wall time)")
    for name, value in results.items():
        print(f"{name:28s} {value:10.4f}")
    return results


if __name__ == "__main__":
    main()
