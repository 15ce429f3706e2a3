"""The automatic-bounds mean: its time beside plain pandas ``.mean()``, and the tail of its error.

Usage::

    python benchmarks/bench_auto_bounds.py                          # time at 30k, 1M, 10M rows; tail, 10,000 runs
    python benchmarks/bench_auto_bounds.py --rows 30000 --rounds 15 --runs 0   # time only
    python benchmarks/bench_auto_bounds.py --rows 0 --runs 2000                 # tail only, quicker

**Time.** For N standard normal rows (fixed seed), each round times once, in
turn: pandas ``x.mean()``; dpframe ``p["x"].dp.mean(epsilon=1)`` (bounds found
privately, clipping counted); the bounded mean ``mean(bounds=(-4, 4))``; and
the parts of the bounds step -- the pass over the data (``Buckets.of``: both
tails from 2**18 rows, else every value) and the sparse vector over the
candidates (``choose_bounds`` on the whole table, so its cost does not
depend on N). CPU time (``time.process_time``) is less disturbed than wall
time by other processes on a shared machine, but still rough there; the
rounds alternate so load hits every entry alike, and the table shows the
medians and the spread (the 10% and 90% points of the rounds).

**Tail.** ``--runs`` automatic-bounds means at epsilon = 1 (unseeded) on
Adult's ages (``shared/data/adult-arx/adult.csv``, skipped if absent) and on
log-normal data (n = 30,000, mu = 3, sigma = 1), and as many with the data's
true min and max as bounds: the median |error|, P(|error| > 10x and 30x
that median), the largest |error| over the median, the released upper
bounds (median, 99.9% point and largest) and the prior range every bound
lies in (the candidate grid, +-2**50). The mean's own Laplace noise alone
has P(|error| > 10x median) = 2**-10 ~ 1e-3 (a Laplace variable exceeds k
times its median with probability 2**-k), so the true-bounds line is the
floor; 30x isolates the bounds (Laplace: 1e-9).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from timing import alternating_rounds

import dpframe  # noqa: F401  (registers the .dp accessor)
from dpframe.accounting.ledger import Ledger
from dpframe.queries import bounds as B

ADULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult-arx" / "adult.csv"


def entries(n: int, seed: int) -> dict[str, Callable[[], Any]]:
    x = pd.Series(np.random.default_rng(seed).normal(size=n), name="x")
    px = x.to_frame().dp.protect(epsilon=1e12, ledger=Ledger.in_memory())["x"]
    values = x.to_numpy()
    table = B.bucket_counts(values)
    return {
        "pandas x.mean()": x.mean,
        "dpframe mean, automatic bounds": lambda: px.dp.mean(epsilon=1.0),
        "dpframe mean, bounds (-4, 4)": lambda: px.dp.mean(bounds=(-4, 4), epsilon=1.0),
        "  part: pass over the data (Buckets.of)": lambda: B.Buckets.of(values),
        "  part: sparse vector over the candidates": lambda: B.choose_bounds(table, Fraction(1, 4), 1),
    }


def print_times(times: dict[str, list[float]], title: str, width: int = 44) -> None:
    base = statistics.median(times["pandas x.mean()"])
    print(f"\n{title}")
    print(f"  {'':{width}} {'ms':>9} {'ratio':>7} {'10%..90% of rounds (ms)':>26}")
    for name, ts in times.items():
        t = statistics.median(ts)
        low, high = np.quantile(ts, [0.1, 0.9])
        print(f"  {name:{width}} {1e3 * t:9.3f} {t / base:7.2f} {1e3 * low:12.3f} .. {1e3 * high:9.3f}")


def tail(name: str, values: pd.Series, runs: int) -> None:
    p = values.rename("x").to_frame().dp.protect(epsilon=1e12, ledger=Ledger.in_memory())["x"]
    truth, lo, hi = float(values.mean()), float(values.min()), float(values.max())
    auto, uppers, given = np.empty(runs), np.empty(runs), np.empty(runs)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(runs):
            m = p.dp.mean(epsilon=1.0)
            auto[r], uppers[r] = float(m) - truth, m.release.bounds[1]
            given[r] = float(p.dp.mean(bounds=(lo, hi), epsilon=1.0)) - truth
    seconds = time.perf_counter() - start
    grid = B.candidates()
    print(f"\n{name}: n = {len(values):,}, true range [{lo:g}, {hi:g}], {runs:,} runs of each ({seconds:.0f} s)")
    print(f"  {'bounds':22} {'median |err|':>12} {'P(>10x med)':>12} {'P(>30x med)':>12} {'max/med':>8}")
    for label, errors in (("automatic", np.abs(auto)), ("true min and max", np.abs(given))):
        median = float(np.median(errors))
        print(f"  {label:22} {median:12.4g} {np.mean(errors > 10 * median):12.2g} "
              f"{np.mean(errors > 30 * median):12.2g} {errors.max() / median:8.1f}")
    q50, q999 = np.quantile(uppers, [0.5, 0.999])
    print(f"  released upper bound: median {q50:g}, 99.9% {q999:g}, max {uppers.max():g}; "
          f"prior range [{grid[0]:g}, {grid[-1]:g}], all inside: {bool(((uppers >= grid[0]) & (uppers <= grid[-1])).all())}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, action="append", default=None,
                        help="rows to time (repeatable; default 30k, 1M and 10M; 0: no timing)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runs", type=int, default=10_000, help="runs per data set for the tail (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for n in [r for r in (args.rows or [30_000, 1_000_000, 10_000_000]) if r > 0]:
        times = alternating_rounds(entries(n, args.seed), args.rounds, clock=time.process_time)
        print_times(times, f"{n:,} rows, epsilon = 1, CPU time, median of {args.rounds} alternating rounds "
                           "(ratio: to pandas x.mean())")
    if args.runs > 0:
        if ADULT.exists():
            tail("Adult ages", pd.read_csv(ADULT, sep=";")["age"].astype(float), args.runs)
        else:
            print(f"\n(Adult data not found at {ADULT}: skipped)")
        rng = np.random.default_rng(args.seed)
        tail("log-normal (mu 3, sigma 1)", pd.Series(rng.lognormal(3.0, 1.0, 30_000)), args.runs)


if __name__ == "__main__":
    main()
