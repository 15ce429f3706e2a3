"""Accuracy of dpframe's core queries: empirical error vs the reported noise, and interval coverage.

Runs each query many times on the Adult data (``../shared/data/adult-arx``) when present, otherwise on
the generated census-like frame of the demo, and prints for each: the median absolute error, the mean
reported noise std, the empirical std of the answers, and how often the 95% interval covered the exact
answer.

    python benchmarks/accuracy.py [--runs 500] [--epsilon 1.0]
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe  # registers .dp
from dpframe.__main__ import census_like

ADULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult-arx" / "adult.csv"


def load() -> tuple[pd.DataFrame, str]:
    """Adult data if available, else the generated frame."""
    if ADULT.exists():
        df = pd.read_csv(ADULT, sep=";")
        return df, f"Adult ({len(df):,} rows, {ADULT})"
    df = census_like(30_000).rename(columns={"hours": "hours-per-week"})
    df["sex"] = df["sex"].astype(str)
    return df, f"generated census-like frame ({len(df):,} rows)"


def measure(
    name: str, runs: int, ask: Callable[[], Any], truth: float, interval: Callable[[Any], tuple[float, float]]
) -> dict[str, Any]:
    """Release ``runs`` times and summarise error, reported std, empirical std and coverage."""
    answers, stds, covered = [], [], 0
    for _ in range(runs):
        answer = ask()
        lo, hi = interval(answer)
        answers.append(float(answer))
        stds.append(float(answer.std))
        covered += lo <= truth <= hi
    values = np.asarray(answers)
    return {
        "query": name,
        "truth": truth,
        "median |error|": float(np.median(np.abs(values - truth))),
        "reported std": float(np.mean(stds)),
        "empirical std": float(values.std(ddof=1)),
        "95% coverage": covered / runs,
    }


def main(argv: list[str] | None = None) -> pd.DataFrame:
    """Run the accuracy report and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args(argv)
    df, source = load()
    eps, runs = args.epsilon, args.runs
    p = df.dp.protect(epsilon=eps * runs * 10, delta=0.5,  # room for many releases
                      ledger=dpframe.Ledger.in_memory())  # repeated measurement, not an analysis
    age = df["age"].astype(float)
    ci = lambda a: a.ci  # noqa: E731
    rows = [
        measure("count", runs, lambda: p.dp.count(epsilon=eps), float(len(df)), ci),
        measure("mean age, bounds (0,125)", runs, lambda: p["age"].dp.mean(bounds=(0, 125), epsilon=eps),
                float(age.mean()), ci),
        measure("sum age, bounds (0,125)", runs, lambda: p["age"].dp.sum(bounds=(0, 125), epsilon=eps),
                float(age.sum()), ci),
        measure("std age, bounds (0,125)", runs, lambda: p["age"].dp.std(bounds=(0, 125), epsilon=eps),
                float(age.std()), ci),
        measure("mean age, Gaussian δ=1e-7", runs,
                lambda: p["age"].dp.mean(bounds=(0, 125), epsilon=eps, delta=1e-7), float(age.mean()), ci),
    ]
    table = pd.DataFrame(rows).set_index("query")
    print(f"data: {source}; epsilon per query = {eps}; {runs} releases each\n")
    with pd.option_context("display.width", 160, "display.float_format", "{:.4g}".format):
        print(table.to_string())
    return table


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main()
