"""Benchmark dpframe queries against their plain pandas / numpy references.

Usage::

    python benchmarks/bench_queries.py                 # 10 million rows, 7 repeats
    python benchmarks/bench_queries.py --quick         # 1 million rows, 3 repeats (smoke run)
    python benchmarks/bench_queries.py --rows 2000000 --repeats 5 --json results.json

Each query and its reference are run once to warm up, then ``--repeats`` times
each, alternating, so that load from other processes hits both alike; the
table shows the median wall times, their ratio (dpframe / reference) and the
target ratio where there is one. Derived data (a filter, a permutation) is
built inside the timed call on both sides, as pandas caches ``Index.is_unique``.

Peak extra memory is measured separately with :mod:`tracemalloc` (numpy and
pandas report their buffer allocations to it): the peak traced memory during
one call, minus what was traced before it, divided by the bytes of the
queried columns (``Series.memory_usage(index=False)``). The target is 2x for
mean, histogram and group-by mean.

The data are generated from a fixed seed: ``x`` is standard normal float64;
``a`` (10 categories), ``b`` (5) and ``k`` (50) are uniform categoricals; ``k_int``
and ``k_obj`` are ``k`` as plain int64 and object columns (and ``k_str`` as the
pandas 3 ``str`` dtype), queried with declared ``keys=``. The noise is *not* seeded: queries use the secure source
as they would in real use. The budget is huge so the benchmark never runs
out; each query spends epsilon=1. The "auto bounds" cases pass no bounds: a
quarter of epsilon finds them privately (sparse vector over a logarithmic grid,
one pass bucketing the two tails), then the query runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Benchmark the working tree this script lives in, whatever the current directory
# (a stale editable install could otherwise resolve ``dpframe`` elsewhere).
_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import dpframe  # noqa: E402  (registers .dp)

LO, HI = -3.0, 3.0  # clipping bounds for the numeric queries
N_EDGES = 100  # histogram: 100 edges = 99 bins
N_KEYS = 50  # group-by keys
DEFAULT_ROWS = 10_000_000
DEFAULT_REPEATS = 7
QUICK_ROWS = 1_000_000
QUICK_REPEATS = 3


@dataclass
class Case:
    """One dpframe query and its plain reference."""

    name: str
    dp: Callable[[], Any]
    ref: Callable[[], Any]
    ref_label: str
    target: float | None = None  # max ratio dp/ref; None = reported only
    memory_target: float | None = None  # max peak extra memory / queried column bytes
    column_bytes: int = 0
    notes: str = ""
    result: dict[str, Any] = field(default_factory=dict)


def make_data(rows: int, seed: int) -> pd.DataFrame:
    """The benchmark frame, generated from ``seed``."""
    rng = np.random.default_rng(seed)
    a_codes = rng.integers(0, 10, rows, dtype=np.int8)
    b_codes = rng.integers(0, 5, rows, dtype=np.int8)
    k_codes = rng.integers(0, N_KEYS, rows, dtype=np.int8)
    k_names = np.array([f"k{i:02d}" for i in range(N_KEYS)], dtype=object)
    return pd.DataFrame(
        {
            "x": rng.standard_normal(rows),
            "a": pd.Categorical.from_codes(a_codes, pd.Index([f"a{i}" for i in range(10)])),
            "b": pd.Categorical.from_codes(b_codes, pd.Index([f"b{i}" for i in range(5)])),
            "k": pd.Categorical.from_codes(k_codes, pd.Index(list(k_names))),
            "k_int": k_codes.astype(np.int64),
            "k_obj": pd.Series(k_names[k_codes], dtype=object),
        }
    )


def _nbytes(df: pd.DataFrame, *columns: str) -> int:
    return int(sum(df[c].memory_usage(index=False, deep=False) for c in columns))


def build_cases(df: pd.DataFrame) -> list[Case]:
    """Every benchmarked query, on the frame ``df`` and its protected copy."""
    # A ledger file of its own (a charge then costs what it costs users: one durable SQLite transaction),
    # not the user's ledger.
    ledger = dpframe.Ledger.at(Path(tempfile.mkdtemp(prefix="dpframe-bench-")) / "ledger.sqlite")
    p = df.dp.protect(epsilon=1e9, ledger=ledger)
    x, px = df["x"], p["x"]
    values = x.to_numpy()
    edges = np.linspace(-4.0, 4.0, N_EDGES)
    int_keys = list(range(N_KEYS))
    obj_keys = [f"k{i:02d}" for i in range(N_KEYS)]
    # Derived data is built inside the timed call (on both sides), as a user would: pandas
    # caches Index.is_unique, so a derived object built once would hide the unit check.
    # Filtering leaves a monotonic non-range index; sorting leaves a non-monotonic one,
    # for which the unit-uniqueness check needs a hash table.
    df_str = df.assign(k_str=df["k_obj"].astype("str"))  # pandas >= 3: the default dtype of string columns
    p_str = p.assign(k_str=p["k_obj"].astype("str"))
    # User-level privacy: ~3 rows per user on average, at most 5 used per user and query.
    users = np.random.default_rng(1).integers(0, max(len(df) // 3, 1), len(df))
    p_user = df[["x"]].assign(user=users).dp.protect(epsilon=1e9, privacy_unit="user",
                                                                   max_contributions=5, ledger=ledger)
    ux = p_user["x"]
    mem2 = 2.0
    return [
        Case("mean", lambda: px.dp.mean(bounds=(LO, HI), epsilon=1.0),
             lambda: x.clip(LO, HI).mean(), "s.clip(lo, hi).mean()", 1.5, mem2, _nbytes(df, "x")),
        Case("histogram (100 edges)", lambda: px.dp.histogram(bins=edges, epsilon=1.0),
             lambda: np.histogram(values, edges), "np.histogram(values, edges)", 1.5, mem2, _nbytes(df, "x")),
        Case("crosstab (10x5 categorical)", lambda: p.dp.crosstab("a", "b", epsilon=1.0),
             lambda: pd.crosstab(df["a"], df["b"]), "pd.crosstab(df.a, df.b)", 1.0, mem2, _nbytes(df, "a", "b")),
        Case("groupby mean (k categorical)",
             lambda: p.dp.groupby("k").mean("x", bounds=(LO, HI), epsilon=1.0),
             lambda: df.groupby("k", observed=False)["x"].mean(), "df.groupby(k)[x].mean()", 1.5, mem2,
             _nbytes(df, "k", "x")),
        Case("groupby mean (k int64, keys=)",
             lambda: p.dp.groupby("k_int", keys=int_keys).mean("x", bounds=(LO, HI), epsilon=1.0),
             lambda: df.groupby("k_int")["x"].mean(), "df.groupby(k)[x].mean()", 1.5, mem2,
             _nbytes(df, "k_int", "x")),
        Case("groupby mean (k object, keys=)",
             lambda: p.dp.groupby("k_obj", keys=obj_keys).mean("x", bounds=(LO, HI), epsilon=1.0),
             lambda: df.groupby("k_obj")["x"].mean(), "df.groupby(k)[x].mean()", 1.5, mem2,
             _nbytes(df, "k_obj", "x")),
        Case("count (frame)", lambda: p.dp.count(epsilon=1.0), lambda: len(df), "len(df)", None, None,
             0, "reference is O(1): ratio is fixed overhead"),
        Case("sum", lambda: px.dp.sum(bounds=(LO, HI), epsilon=1.0),
             lambda: x.clip(LO, HI).sum(), "s.clip(lo, hi).sum()", None, mem2, _nbytes(df, "x")),
        Case("var", lambda: px.dp.var(bounds=(LO, HI), epsilon=1.0),
             lambda: x.clip(LO, HI).var(), "s.clip(lo, hi).var()", None, mem2, _nbytes(df, "x")),
        Case("filter + mean (x > 0)", lambda: p[p["x"] > 0]["x"].dp.mean(bounds=(LO, HI), epsilon=1.0),
             lambda: df[df["x"] > 0]["x"].clip(LO, HI).mean(), "df[df.x > 0].x.clip(lo, hi).mean()", None, None,
             _nbytes(df, "x"), "filter inside the timed call; exercises the unit-uniqueness check"),
        Case("sort + mean", lambda: p[["x"]].sort_values("x")["x"].dp.mean(bounds=(LO, HI), epsilon=1.0),
             lambda: df[["x"]].sort_values("x")["x"].clip(LO, HI).mean(), "df.sort_values(x).x.clip(lo, hi).mean()",
             None, None, _nbytes(df, "x"), "non-monotonic unit index: uniqueness check hashes"),
        Case("mean, privacy_unit= (<= 5 rows/user)", lambda: ux.dp.mean(bounds=(LO, HI), epsilon=1.0),
             lambda: x.clip(LO, HI).mean(), "s.clip(lo, hi).mean()", None, None, _nbytes(df, "x"),
             "~3 rows per user; users over 5 rows are bounded by random choice"),
        Case("mean (auto bounds)", lambda: px.dp.mean(epsilon=1.0), lambda: x.mean(), "s.mean()", 3.0, mem2,
             _nbytes(df, "x"), "bounds found privately (sparse vector, 1/4 of epsilon): one extra pass over the tails"),
        Case("sum (auto bounds)", lambda: px.dp.sum(epsilon=1.0), lambda: x.sum(), "s.sum()", None, mem2,
             _nbytes(df, "x"), "bounds found privately (sparse vector, 1/4 of epsilon)"),
        Case("groupby mean (k str, keys=)",
             lambda: p_str.dp.groupby("k_str", keys=obj_keys).mean("x", bounds=(LO, HI), epsilon=1.0),
             lambda: df_str.groupby("k_str")["x"].mean(), "df.groupby(k)[x].mean()", None, mem2,
             _nbytes(df_str, "k_str", "x"), "pandas 3 default string dtype"),
    ]


def _timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired_times(dp: Callable[[], Any], ref: Callable[[], Any], repeats: int) -> tuple[list[float], list[float]]:
    """Wall times of ``repeats`` calls of each, after one warm-up call of each.

    The calls alternate (dp, ref, dp, ref, ...) so that load from other processes
    on a shared machine affects both sides alike.
    """
    dp()
    ref()
    dp_times, ref_times = [], []
    for _ in range(repeats):
        dp_times.append(_timed(dp))
        ref_times.append(_timed(ref))
    return dp_times, ref_times


def peak_extra_memory(fn: Callable[[], Any]) -> int:
    """Peak bytes traced by tracemalloc during one call, above what was traced before it."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return max(peak - before, 0)


def machine_info() -> dict[str, Any]:
    """Cores, CPU model, memory and library versions."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    memory_gb = None
    try:
        memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_gb": memory_gb,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "dpframe": getattr(dpframe, "__version__", "?"),
    }


def _load() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.1f}"


def _fmt_mb(n: int) -> str:
    return f"{n / 2**20:7.1f}"


def run(rows: int, repeats: int, seed: int, memory: bool, only: Sequence[str] = ()) -> dict[str, Any]:
    """Generate the data, run every case, and return the results (also printed)."""
    info = machine_info()
    print(
        f"machine: {info['cpu']} | {info['cores']} cores ({info['usable_cores']} usable) | "
        f"{info['memory_gb']} GB | {info['platform']}"
    )
    print(f"python {info['python']}  numpy {info['numpy']}  pandas {info['pandas']}  dpframe {info['dpframe']}")
    print(f"rows {rows:,}  repeats {repeats}  seed {seed}  (median wall time; ratio = dpframe / reference)")
    load_before = _load()
    print(f"load average before: {load_before}  (other processes on the machine distort timings)")
    print()
    start = time.perf_counter()
    df = make_data(rows, seed)
    print(f"data generated in {time.perf_counter() - start:.1f} s")
    cases = build_cases(df)
    if only:
        cases = [c for c in cases if any(o.lower() in c.name.lower() for o in only)]

    header = f"{'query':34s} {'dpframe ms':>10s} {'ref ms':>9s} {'ratio':>6s} {'target':>6s}  {'':4s} reference"
    print(header)
    print("-" * len(header))
    for case in cases:
        dp_all, ref_all = paired_times(case.dp, case.ref, repeats)
        dp_t, ref_t = statistics.median(dp_all), statistics.median(ref_all)
        ratio = dp_t / ref_t if ref_t > 0 else float("inf")
        met = None if case.target is None else ratio <= case.target
        case.result = {
            "name": case.name,
            "reference": case.ref_label,
            "dp_seconds": dp_t,
            "ref_seconds": ref_t,
            "ratio": ratio,
            "target": case.target,
            "met": met,
            "dp_times": dp_all,
            "ref_times": ref_all,
            "notes": case.notes,
        }
        status = "" if met is None else ("ok" if met else "MISS")
        target = "" if case.target is None else f"{case.target:.1f}"
        print(
            f"{case.name:34s} {_fmt_ms(dp_t):>10s} {_fmt_ms(ref_t)} {ratio:6.2f} {target:>6s}  {status:4s} "
            f"{case.ref_label}"
        )

    if memory:
        print()
        header = (
            f"{'peak extra memory':34s} {'cols MB':>7s} {'dp MB':>7s} {'dp x':>5s} {'ref MB':>7s} {'ref x':>5s}"
            f" {'target':>6s}"
        )
        print(header)
        print("-" * len(header))
        for case in cases:
            if case.column_bytes == 0:
                continue
            dp_peak = peak_extra_memory(case.dp)
            ref_peak = peak_extra_memory(case.ref)
            dp_x = dp_peak / case.column_bytes
            ref_x = ref_peak / case.column_bytes
            met = None if case.memory_target is None else dp_x <= case.memory_target
            case.result["memory"] = {
                "column_bytes": case.column_bytes,
                "dp_peak_bytes": dp_peak,
                "ref_peak_bytes": ref_peak,
                "dp_ratio": dp_x,
                "ref_ratio": ref_x,
                "target": case.memory_target,
                "met": met,
            }
            status = "" if met is None else ("ok" if met else "MISS")
            target = "" if case.memory_target is None else f"{case.memory_target:.1f}"
            print(
                f"{case.name:34s} {_fmt_mb(case.column_bytes)} {_fmt_mb(dp_peak)} {dp_x:5.2f} "
                f"{_fmt_mb(ref_peak)} {ref_x:5.2f} {target:>6s}  {status}"
            )

    missed = [c.name for c in cases if c.result.get("met") is False]
    missed += [f"{c.name} (memory)" for c in cases if c.result.get("memory", {}).get("met") is False]
    load_after = _load()
    print()
    print(f"load average after: {load_after}")
    print("all targets met" if not missed else "targets missed: " + "; ".join(missed))
    return {
        "machine": info,
        "load_average": {"before": load_before, "after": load_after},
        "rows": rows,
        "repeats": repeats,
        "seed": seed,
        "bounds": [LO, HI],
        "results": [c.result for c in cases],
        "missed": missed,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse arguments, run the benchmark, optionally write JSON; returns the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=None, help=f"rows of data (default {DEFAULT_ROWS:,})")
    parser.add_argument("--repeats", type=int, default=None, help=f"timed runs per query (default {DEFAULT_REPEATS})")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK_ROWS:,} rows, {QUICK_REPEATS} repeats (unless given)")
    parser.add_argument("--seed", type=int, default=2024, help="seed of the data generator")
    parser.add_argument("--json", type=Path, default=None, help="write the results as JSON to this path")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc memory measurements")
    parser.add_argument("--only", action="append", default=[],
                        help="run only cases whose name contains this text (repeatable)")
    args = parser.parse_args(argv)
    rows = args.rows if args.rows is not None else (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    repeats = args.repeats if args.repeats is not None else (QUICK_REPEATS if args.quick else DEFAULT_REPEATS)
    if rows < 1 or repeats < 1:
        parser.error("--rows and --repeats must be >= 1")
    results = run(rows, repeats, args.seed, memory=not args.no_memory, only=args.only)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        print(f"results written to {args.json}")
    return results


if __name__ == "__main__":
    main()
