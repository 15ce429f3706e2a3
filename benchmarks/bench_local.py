"""Frequency-estimation error of local DP (GRR, SUE, OUE, OLH) against central DP at the same ε, on Adult.

Run:  python benchmarks/bench_local.py [--epsilon 1] [--runs 20] [--columns ...] [--json FILE]
      python benchmarks/bench_local.py --generated 20000   (no shared data needed: a generated frame)

For each column of the shared Adult data (``/work/shared/data/adult-pgm``,
integer-coded, with its public domain sizes in ``adult-domain.json``; the
script says so and stops when it is absent) it measures the mean absolute
error of the estimated category frequencies, averaged over categories and
``--runs`` runs:

* local: every row's value goes through the randomizer
  (``s.dp.randomized_response(epsilon=ε, method=...)`` on the plain column,
  as each person would on their own device), then
  ``estimate_frequencies`` (unbiased); also OUE followed by the (biased)
  norm-sub projection;
* central: ``p[column].dp.value_counts(keys=domain, epsilon=ε)`` on the
  protected frame (discrete Laplace, sensitivity 1), divided by the true n.

Both frequencies are divided by the true number of rows, so the figures
compare the noise of the two models only. Each run draws fresh secure noise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe
from dpframe.local import consistent_proportions

DATA = Path("/work/shared/data/adult-pgm")
COLUMNS = ["sex", "race", "workclass", "education-num", "occupation", "marital-status", "native-country"]
LOCAL_METHODS = ["grr", "sue", "oue", "olh"]


def load(args: argparse.Namespace) -> tuple[pd.DataFrame, dict[str, int]] | None:
    """The data and its public domain sizes: Adult, or a generated frame with ``--generated N``."""
    if args.generated:
        rng = np.random.default_rng(0)
        sizes = {"small": 3, "large": 30}
        frame = pd.DataFrame({name: rng.zipf(1.5, args.generated) % size for name, size in sizes.items()})
        return frame, sizes
    if not (DATA / "adult.csv").exists():
        return None
    frame = pd.read_csv(DATA / "adult.csv")
    domain = json.loads((DATA / "adult-domain.json").read_text())
    return frame, {name: int(size) for name, size in domain.items()}


def run(frame: pd.DataFrame, sizes: dict[str, int], columns: list[str], epsilon: float,
        runs: int) -> list[dict[str, Any]]:
    """One result row per column: the mean absolute frequency error of each method over ``runs`` runs."""
    n = len(frame)
    teaching = runs * len(columns) * epsilon  # a teaching budget: the same question asked `runs` times
    protected = frame.dp.protect(epsilon=teaching, ledger=dpframe.Ledger.in_memory())
    rows = []
    for column in columns:
        keys = list(range(sizes[column]))
        truth = frame[column].value_counts().reindex(keys, fill_value=0).to_numpy() / n
        errors: dict[str, list[float]] = {m: [] for m in [*LOCAL_METHODS, "oue+norm-sub", "central"]}
        seconds: dict[str, float] = dict.fromkeys(errors, 0.0)
        for _ in range(runs):
            for method in LOCAL_METHODS:
                start = time.perf_counter()
                table = frame[column].dp.randomized_response(epsilon=epsilon, categories=keys,
                                                             method=method).estimate_frequencies()
                seconds[method] += time.perf_counter() - start
                errors[method].append(float(np.abs(table["proportion"].to_numpy() - truth).mean()))
                if method == "oue":
                    projected = consistent_proportions(table).to_numpy()
                    errors["oue+norm-sub"].append(float(np.abs(projected - truth).mean()))
            start = time.perf_counter()
            counts = protected[column].dp.value_counts(keys=keys, epsilon=epsilon, sort=False)
            seconds["central"] += time.perf_counter() - start
            central = counts.reindex(keys).to_numpy(dtype=float) / n
            errors["central"].append(float(np.abs(central - truth).mean()))
        rows.append({
            "column": column, "categories": len(keys), "rows": n,
            "mae": {m: float(np.mean(e)) for m, e in errors.items()},
            "mae_sd": {m: float(np.std(e, ddof=1)) if len(e) > 1 else 0.0 for m, e in errors.items()},
            "seconds_per_run": {m: s / runs for m, s in seconds.items() if m != "oue+norm-sub"},
        })
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure, print a table, and return (and optionally write) the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--columns", nargs="+", default=None)
    parser.add_argument("--generated", type=int, default=0, help="use a generated frame of this many rows")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    loaded = load(args)
    if loaded is None:
        print(f"skipped: the shared Adult data is not at {DATA} (use --generated N for a generated frame)")
        return {"skipped": True}
    frame, sizes = loaded
    columns = args.columns or [c for c in COLUMNS if c in frame.columns] or list(sizes)
    rows = run(frame, sizes, columns, args.epsilon, args.runs)
    methods = [*LOCAL_METHODS, "oue+norm-sub", "central"]
    print(f"mean absolute error of category frequencies at ε = {args.epsilon}, {args.runs} runs, "
          f"n = {len(frame):,} rows ({os.cpu_count()} cores; timings are rough under load)")
    print(f"{'column':<16}{'k':>4}" + "".join(f"{m:>14}" for m in methods))
    for row in rows:
        print(f"{row['column']:<16}{row['categories']:>4}" + "".join(f"{row['mae'][m]:>14.5f}" for m in methods))
    ratio = [row["mae"]["oue"] / row["mae"]["central"] for row in rows if row["mae"]["central"] > 0]
    if ratio:
        print(f"OUE error / central error: geometric mean {math.exp(np.mean(np.log(ratio))):.0f}×")
    result = {"epsilon": args.epsilon, "runs": args.runs, "rows": len(frame), "results": rows}
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
