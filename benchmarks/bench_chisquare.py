"""Type-I error and power of the private chi-squared tests, and of the naive test on the same noisy tables.

Run:  python benchmarks/bench_chisquare.py [--repetitions 1000] [--epsilon 1] [--sizes 1000 30000] [--json FILE]

Every repetition generates a frame, protects it (in-memory ledger) and runs the public query
(``p.dp.chisquare`` or ``p.dp.chi2_contingency``, 999 simulations) once; the naive test is scipy's on the
released noisy table (``chisquare`` against the noisy total times the null proportions;
``chi2_contingency`` on the table with negative cells set to 0). Rejection rates at alpha = 0.05:

* goodness of fit, 10 categories, null uniform; alternative p_i = (1 ± w) / 10 (alternating signs), Cohen's
  w = sqrt(10 / n), so the classical noncentrality n·w² is 10 at every n;
* independence, 10 x 10, both columns uniform; alternative: b copies a with probability c, otherwise
  independent, c = sqrt(40 / (9 n)), so n·φ² = 40 at every n (φ² = 9c²).

The alternatives shrink with n so that power stays informative (at a fixed effect it is 1 at n = 30,000).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats

import dpframe

ALPHA = 0.05
CATEGORIES = list(range(10))


def _naive_fit(table: pd.Series[Any]) -> float:
    observed = table.to_numpy(dtype=float)
    return float(scipy.stats.chisquare(observed, np.full(10, observed.sum() / 10)).pvalue)


def _naive_independence(table: pd.DataFrame) -> float:
    observed = table.to_numpy(dtype=float).clip(min=0)
    if (observed.sum(axis=0) == 0).any() or (observed.sum(axis=1) == 0).any():
        return 1.0
    return float(scipy.stats.chi2_contingency(observed, correction=False).pvalue)


def run(test: str, n: int, alternative: bool, epsilon: float, repetitions: int,
        rng: np.random.Generator) -> dict[str, Any]:
    """Rejection rates of the private and the naive test over ``repetitions`` fresh frames."""
    ledger = dpframe.Ledger.in_memory()
    private, naive = [], []
    start = time.perf_counter()
    for _ in range(repetitions):
        if test == "goodness of fit":
            w = math.sqrt(10 / n) if alternative else 0.0
            proportions = (1 + w * np.resize([1, -1], 10)) / 10
            p = pd.DataFrame({"c": rng.choice(10, n, p=proportions)}).dp.protect(epsilon=epsilon, ledger=ledger)
            result = p.dp.chisquare("c", keys=CATEGORIES, epsilon=epsilon)
            private.append(result.pvalue)
            naive.append(_naive_fit(result.table))
        else:
            copy = math.sqrt(40 / (9 * n)) if alternative else 0.0
            a = rng.integers(0, 10, n)
            b = np.where(rng.random(n) < copy, a, rng.integers(0, 10, n))
            p = pd.DataFrame({"a": a, "b": b}).dp.protect(epsilon=epsilon, ledger=ledger)
            result = p.dp.chi2_contingency("a", "b", keys={"a": CATEGORIES, "b": CATEGORIES}, epsilon=epsilon)
            private.append(result.pvalue)
            naive.append(_naive_independence(result.table))
    return {
        "test": test, "n": n, "hypothesis": "alternative" if alternative else "null", "epsilon": epsilon,
        "repetitions": repetitions,
        "private": float(np.mean(np.array(private) <= ALPHA)),
        "naive": float(np.mean(np.array(naive) <= ALPHA)),
        "seconds_per_test": (time.perf_counter() - start) / repetitions,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 30_000])
    parser.add_argument("--seed", type=int, default=2016)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = [run(test, n, alternative, args.epsilon, args.repetitions, rng)
            for test in ("goodness of fit", "independence") for n in args.sizes for alternative in (False, True)]
    se = math.sqrt(ALPHA * (1 - ALPHA) / args.repetitions)
    print(f"Rejection rate at alpha = {ALPHA}, epsilon = {args.epsilon}, {args.repetitions} repetitions "
          f"(a rate's standard error is about {se:.3f} at 0.05)\n")
    print("| test | n | true hypothesis | private χ² | naive χ² | s per test |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        what = "type-I error" if row["hypothesis"] == "null" else "power"
        print(f"| {row['test']} | {row['n']:,} | {row['hypothesis']} ({what}) | {row['private']:.3f} | "
              f"{row['naive']:.3f} | {row['seconds_per_test']:.3f} |")
    report = {"results": rows, "machine": {"python": platform.python_version(), "numpy": np.__version__}}
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
