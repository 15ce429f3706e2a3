"""The automatic-bounds mean beside plain pandas ``.mean()``, in CPU time, with its parts.

Usage::

    python benchmarks/bench_auto_bounds.py                        # 1M and 10M rows, 9 rounds
    python benchmarks/bench_auto_bounds.py --rows 1000000 --rounds 5

For N standard normal rows (fixed seed), each round times once, in turn:
pandas ``x.mean()``; dpframe ``p["x"].dp.mean(epsilon=1)`` (bounds found
privately, clipping counted); the bounded mean ``mean(bounds=(-4, 4))``; and
the parts of the bounds step -- the pass over both tails
(``Buckets.of``), the whole-table bucketing pass it replaces
(``bucket_counts``), and the sparse vector over the candidates
(``choose_bounds`` on the whole table, so its cost does not depend on N).
CPU time (``time.process_time``) is less disturbed than wall time by other
processes on a shared machine, but still rough there; the rounds alternate
so load hits every entry alike, and the table shows the medians. The noise
is never seeded.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from timing import alternating_rounds, print_ratios

import dpframe  # noqa: F401  (registers the .dp accessor)
from dpframe.accounting.ledger import Ledger
from dpframe.queries import bounds as B


def entries(n: int, seed: int) -> dict[str, Callable[[], Any]]:
    x = pd.Series(np.random.default_rng(seed).normal(size=n), name="x")
    px = x.to_frame().dp.protect(epsilon=1e12, ledger=Ledger.in_memory())["x"]
    values = x.to_numpy()
    table = B.bucket_counts(values)
    return {
        "pandas x.mean()": x.mean,
        "dpframe mean, automatic bounds": lambda: px.dp.mean(epsilon=1.0),
        "dpframe mean, bounds (-4, 4)": lambda: px.dp.mean(bounds=(-4, 4), epsilon=1.0),
        "  part: pass over both tails": lambda: B.Buckets.of(values),
        "  (the whole-table pass it replaces)": lambda: B.bucket_counts(values),
        "  part: sparse vector over 5,763 candidates": lambda: B.choose_bounds(table, Fraction(1, 4), 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, action="append", default=None, help="rows (repeatable; 1M and 10M)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for n in args.rows or [1_000_000, 10_000_000]:
        times = alternating_rounds(entries(n, args.seed), args.rounds, clock=time.process_time)
        print_ratios(times, "pandas x.mean()",
                     f"{n:,} rows, epsilon = 1, CPU time, median of {args.rounds} alternating rounds", width=44)

if __name__ == "__main__":
    main()
