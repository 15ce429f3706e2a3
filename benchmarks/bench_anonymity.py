"""Benchmark the (non-private) anonymity tools: k-anonymity checks and the optimal-generalization search.

Usage::

    python benchmarks/bench_anonymity.py                 # 1 million rows x 5 QIs; Adult, every metric, brute force
    python benchmarks/bench_anonymity.py --quick         # smaller check, Adult with one metric, no brute force
    python benchmarks/bench_anonymity.py --json results.json

1. ``k_anonymity`` on generated data (``--rows`` rows; 5 quasi-identifiers:
   a ZIP code as int64, a birth date as datetime64, sex as text, race as a
   categorical and education as text), against ``groupby(...).size().min()``.
   Median of ``--repeats`` runs each.
2. On the Adult data with ARX's hierarchies (``../shared/data/adult-arx``,
   skipped when absent), the 9 columns as quasi-identifiers, k = 5 and at
   most 2% suppressed rows: ``anonymize`` with every metric -- the chosen
   levels, suppressed rows, the loss under every metric, the lattice nodes
   evaluated and the best time of ``--repeats`` runs. Unless ``--quick``, every
   one of the 12,960 lattice nodes is then evaluated (no pruning) and each
   metric's optimum is compared with the search's answer.

Nothing here is differentially private, and nothing spends a privacy budget.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import dpframe  # noqa: E402,F401
from dpframe.anonymity import METRICS, anonymize, k_anonymity, read_hierarchy  # noqa: E402
from dpframe.anonymity.lattice import _Lattice, _Problem, _Search  # noqa: E402

ADULT = Path(_REPO).parent / "shared" / "data" / "adult-arx"
NOT_DP = "These tools are not differentially private and spend no privacy budget."


def make_people(rows: int, seed: int = 0) -> pd.DataFrame:
    """Five quasi-identifiers of mixed types (int, datetime, text, categorical, text)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "zip": rng.integers(10_000, 10_400, rows),
            "birth_date": pd.Timestamp("1940-01-01") + pd.to_timedelta(rng.integers(0, 25_000, rows), unit="D"),
            "sex": rng.choice(["F", "M"], rows),
            "race": pd.Categorical(rng.choice(["a", "b", "c", "d", "e"], rows)),
            "education": rng.choice([f"level-{i}" for i in range(16)], rows),
        }
    )


def timed(fn: Callable[[], Any], repeats: int) -> tuple[Any, list[float]]:
    result = fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, times


def bench_k_anonymity(rows: int, repeats: int) -> dict[str, Any]:
    df = make_people(rows)
    qis = list(df.columns)
    k, times = timed(lambda: k_anonymity(df, qis), repeats)
    ref, ref_times = timed(lambda: int(df.groupby(qis, dropna=False, observed=True).size().min()), repeats)
    assert int(k) == ref
    return {
        "rows": rows,
        "quasi_identifiers": len(qis),
        "k": int(k),
        "seconds": statistics.median(times),
        "pandas_groupby_seconds": statistics.median(ref_times),
    }


def adult_tables(columns: Sequence[str]) -> dict[str, pd.DataFrame]:
    return {c: read_hierarchy(ADULT / f"adult_hierarchy_{c}.csv") for c in columns}


def bench_adult(metrics: Sequence[str], repeats: int, brute_force: bool) -> dict[str, Any]:
    adult = pd.read_csv(ADULT / "adult.csv", sep=";")
    qis = list(adult.columns)
    tables = adult_tables(qis)
    out: dict[str, Any] = {"rows": len(adult), "quasi_identifiers": qis, "k": 5, "suppression": 0.02, "metrics": {}}
    for metric in metrics:
        res, times = timed(
            lambda m=metric: anonymize(
                adult, k=5, quasi_identifiers=qis, hierarchies=tables, suppression=0.02, metric=m
            ),
            repeats,
        )
        assert k_anonymity(res.data, qis) >= 5 and res.suppressed <= res.suppression_limit
        out["lattice_size"] = res.lattice_size
        out["metrics"][metric] = {
            "levels": res.levels,
            "suppressed": res.suppressed,
            "loss": res.loss,
            "losses": res.losses,
            "nodes_evaluated": res.nodes_evaluated,
            "seconds": min(times),
        }
    if brute_force:
        out["brute_force"] = brute_force_adult(adult, qis, tables, out["metrics"])
    return out


def brute_force_adult(
    adult: pd.DataFrame, qis: list[str], tables: dict[str, pd.DataFrame], found: dict[str, Any]
) -> dict[str, Any]:
    """Evaluate every lattice node (no pruning) and check each metric's optimum against the search."""
    limit = int(np.floor(0.02 * len(adult)))
    problem = _Problem(adult, qis, tables, 5, None, None, "distinct", None, "equal", None, limit)
    lattice = _Lattice(problem.heights, 10**7)
    search = _Search(problem, lattice, "entropy")
    start = time.perf_counter()
    feasible = np.zeros(lattice.size, dtype=bool)
    data_losses = {"discernibility": np.full(lattice.size, np.inf), "aecs": np.full(lattice.size, np.inf)}
    for node in range(lattice.size):
        ev = problem.evaluate(node, lattice.levels(node))
        feasible[node] = problem.feasible(ev)
        if feasible[node]:
            search.metric = "discernibility"
            data_losses["discernibility"][node] = search.data_loss(ev)
            search.metric = "aecs"
            data_losses["aecs"][node] = search.data_loss(ev)
    seconds = time.perf_counter() - start
    report: dict[str, Any] = {"nodes": lattice.size, "feasible_nodes": int(feasible.sum()), "seconds": seconds}
    for metric, result in found.items():
        if metric in data_losses:
            loss = data_losses[metric]
        else:
            loss = np.where(feasible, search._separable_loss(metric), np.inf)
        best = float(loss.min())
        report[metric] = {"optimum": best, "search_found": result["loss"], "agrees": bool(np.isclose(best, result["loss"]))}
    return report


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=None, help="rows for the k-anonymity check (default 1,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per measurement (default 5; quick 1)")
    parser.add_argument("--quick", action="store_true", help="one metric on Adult, no brute force")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    rows = args.rows or (200_000 if args.quick else 1_000_000)
    repeats = args.repeats or (1 if args.quick else 5)

    results: dict[str, Any] = {
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "pandas": pd.__version__,
        }
    }
    print(NOT_DP)
    results["k_anonymity"] = bench_k_anonymity(rows, repeats)
    r = results["k_anonymity"]
    print(
        f"k_anonymity, {r['rows']:,} rows x {r['quasi_identifiers']} QIs: {r['seconds'] * 1000:.0f} ms "
        f"(pandas groupby: {r['pandas_groupby_seconds'] * 1000:.0f} ms), k = {r['k']}"
    )
    if (ADULT / "adult.csv").exists():
        metrics = ["entropy"] if args.quick else list(METRICS)
        results["adult"] = bench_adult(metrics, repeats, brute_force=not args.quick)
        adult = results["adult"]
        print(f"Adult ({adult['rows']:,} rows, 9 QIs, lattice {adult['lattice_size']:,} nodes), k=5, suppression <= 2%:")
        for metric, m in adult["metrics"].items():
            levels = ", ".join(f"{c}={v}" for c, v in m["levels"].items())
            print(
                f"  {metric:>14}: {m['seconds']:.2f} s, {m['nodes_evaluated']:,} nodes evaluated, "
                f"{m['suppressed']} rows suppressed, loss {m['loss']:.6g}; levels {levels}"
            )
        if "brute_force" in adult:
            bf = adult["brute_force"]
            agree = all(v["agrees"] for k, v in bf.items() if isinstance(v, dict))
            print(
                f"  brute force over all {bf['nodes']:,} nodes ({bf['feasible_nodes']:,} feasible) in "
                f"{bf['seconds']:.1f} s: every optimum {'matches' if agree else 'DIFFERS from'} the search"
            )
    else:
        print(f"Adult data not found under {ADULT}; skipped")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return results


if __name__ == "__main__":
    main()
