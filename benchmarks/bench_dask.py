"""Benchmark private Dask aggregates against the same non-private Dask aggregates, on Parquet files.

Usage::

    python benchmarks/bench_dask.py                          # 100 million rows, threads and a LocalCluster
    python benchmarks/bench_dask.py --rows 2000000 --partition-rows 250000 --rounds 2 --schedulers threads
    python benchmarks/bench_dask.py --dir /data/bench --json results.json

**Data.** ``--rows`` rows of three columns (``x`` standard normal float64, ``u`` uniform float64 in [0, 100),
``n`` int64 in [0, 1000)), written as one Parquet file (one row group) per ``--partition-rows`` rows, so a
Dask partition is one file. Generation works chunk by chunk (memory: one chunk), from a fixed seed, and the
files are cached under ``--dir`` (default /tmp) in a folder named by the sizes, reused by later runs.

**Timing.** Each case has a private call (``dpframe.dask.read_parquet`` then the ``.dp`` query, including
its ledger charge) and the same non-private Dask aggregate (``dd.read_parquet`` then the Dask method), both
reading the files from the start. After one warm-up call each, ``--rounds`` rounds alternate them, so load from
other processes hits both alike; the report gives the median wall times and their ratio (goal: at most 1.5).
The noise is not seeded: queries use the secure source, as in real use.

**Memory.** A thread samples, every 20 ms with psutil, the resident set size (RSS) of this process and of its
child processes (a LocalCluster's nannies and worker processes); the report gives the peak during the calls of
each case, for the client process and for the workers (the peak of their sum), with the RSS just before the
case, next to the size of one partition's queried column. RSS counts what the allocators keep (pyarrow's memory
pool, glibc's arenas), so it is an upper bound of the memory in use. The files are read lazily, a partition at a time per worker thread, so the peak
follows the partition size and the number of threads, not the number of rows.

Figures taken on a shared machine are rough: other processes' load moves them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

import dpframe
import dpframe.dask

MB = 1024 * 1024


def generate(folder: Path, rows: int, partition_rows: int, seed: int = 17) -> Path:
    """Write (once) ``rows`` rows as Parquet files of ``partition_rows`` rows each; return the folder."""
    data = folder / f"dpframe-bench-dask-{rows}-{partition_rows}"
    done = data / "_COMPLETE"
    if done.exists():
        return data
    data.mkdir(parents=True, exist_ok=True)
    for number, start in enumerate(range(0, rows, partition_rows)):
        size = min(partition_rows, rows - start)
        rng = np.random.default_rng([seed, number])  # the benchmark's data, not noise
        table = pa.table({"x": rng.standard_normal(size), "u": rng.uniform(0, 100, size),
                          "n": rng.integers(0, 1000, size)})
        pq.write_table(table, data / f"part-{number:05d}.parquet", row_group_size=size)
    done.write_text("")
    return data


class Peak:
    """Peak RSS of this process and of the sum of its children's, sampled in a thread while active."""

    def __init__(self, interval: float = 0.02):
        self.interval = interval
        self.client = 0
        self.workers = 0
        self._stop = threading.Event()

    @staticmethod
    def now() -> tuple[int, int]:
        """RSS of this process and the sum of its children's, in bytes."""
        me = psutil.Process()
        try:
            children = sum(c.memory_info().rss for c in me.children(recursive=True))
        except psutil.Error:  # a child ended between listing and reading
            children = 0
        return me.memory_info().rss, children

    def _sample(self) -> None:
        while not self._stop.is_set():
            client, workers = self.now()
            self.client, self.workers = max(self.client, client), max(self.workers, workers)
            self._stop.wait(self.interval)

    @contextmanager
    def watching(self) -> Iterator[None]:
        self._stop.clear()
        thread = threading.Thread(target=self._sample, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()


def _private_mean(path: Path) -> Callable[[], float]:
    def run() -> float:
        p = dpframe.dask.read_parquet(path, columns=["x"], epsilon=1e9, name=f"bench {time.time_ns()}",
                                      ledger=dpframe.Ledger.in_memory())
        return float(p["x"].dp.mean(bounds=(-5, 5), epsilon=1.0))
    return run


def _plain_mean(path: Path) -> Callable[[], float]:
    return lambda: float(dd.read_parquet(path, columns=["x"])["x"].mean().compute())


EDGES = np.linspace(0.0, 100.0, 11)  # ten bins of the uniform column


def _private_histogram(path: Path) -> Callable[[], Any]:
    def run() -> Any:
        p = dpframe.dask.read_parquet(path, columns=["u"], epsilon=1e9, name=f"bench {time.time_ns()}",
                                      ledger=dpframe.Ledger.in_memory())
        return p["u"].dp.histogram(bins=EDGES, epsilon=1.0)
    return run


def _partition_histogram(part: pd.Series) -> pd.Series:
    return pd.Series([np.histogram(part.to_numpy(), EDGES)[0]])


def _plain_histogram(path: Path) -> Callable[[], Any]:
    # What a non-private user writes: numpy's histogram per partition, added up (as fast as da.histogram, and
    # several times faster than pd.cut and value_counts on Dask).
    return lambda: sum(dd.read_parquet(path, columns=["u"])["u"].map_partitions(
        _partition_histogram, meta=(None, "object")).compute())


# name -> (private call, the same non-private Dask aggregate, the column it reads).
CASES: dict[str, tuple[Callable[[Path], Callable[[], Any]], Callable[[Path], Callable[[], Any]], str]] = {
    "mean": (_private_mean, _plain_mean, "x"),
    "histogram": (_private_histogram, _plain_histogram, "u"),
}


def time_case(path: Path, name: str, rounds: int) -> dict[str, Any]:
    private_of, plain_of, column = CASES[name]
    private, plain = private_of(path), plain_of(path)
    peak = Peak()
    before = peak.now()
    times: dict[str, list[float]] = {"dp": [], "dask": []}
    with peak.watching():
        private(), plain()  # warm-up: imports, file metadata in the OS cache
        for _ in range(rounds):
            for label, call in (("dp", private), ("dask", plain)):
                start = time.perf_counter()
                call()
                times[label].append(time.perf_counter() - start)
    dp, ref = statistics.median(times["dp"]), statistics.median(times["dask"])
    return {"name": name, "dp_seconds": dp, "dask_seconds": ref, "ratio": dp / ref, "goal": 1.5,
            "all_dp_seconds": times["dp"], "all_dask_seconds": times["dask"], "column": column,
            "rss_client_before_mb": before[0] / MB, "rss_workers_before_mb": before[1] / MB,
            "peak_rss_client_mb": peak.client / MB, "peak_rss_workers_mb": peak.workers / MB}


@contextmanager
def scheduler(kind: str, workers: int, memory_limit: str) -> Iterator[str]:
    """Dask's threaded scheduler, or a LocalCluster of ``workers`` processes of one thread each."""
    if kind == "threads":
        with dask.config.set(scheduler="threads"):
            yield f"threads ({os.cpu_count()} threads, one process)"
        return
    import distributed

    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  memory_limit=memory_limit, dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        yield f"LocalCluster ({workers} worker processes x 1 thread, memory_limit={memory_limit})"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--partition-rows", type=int, default=5_000_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp"), help="where the Parquet files are cached")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--schedulers", nargs="+", choices=["threads", "cluster"], default=["threads", "cluster"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GiB", help="per LocalCluster worker")
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=sorted(CASES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    path = generate(args.dir, args.rows, args.partition_rows)
    files = sorted(path.glob("*.parquet"))
    report: dict[str, Any] = {
        "rows": args.rows, "partition_rows": args.partition_rows, "partitions": len(files),
        "partition_column_mb": args.partition_rows * 8 / MB, "files_mb": sum(f.stat().st_size for f in files) / MB,
        "data_seconds": time.perf_counter() - start, "rounds": args.rounds, "runs": [],
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "dask": dask.__version__,
                    "pandas": pd.__version__, "numpy": np.__version__,
                    "memory_gb": psutil.virtual_memory().total / 1024**3},
    }
    print(f"{args.rows:,} rows in {len(files)} Parquet files of {args.partition_rows:,} rows "
          f"({report['partition_column_mb']:.0f} MB per partition and float64 column) under {path}")
    for kind in args.schedulers:
        with scheduler(kind, args.workers, args.memory_limit) as described:
            for name in args.cases:
                row = time_case(path, name, args.rounds) | {"scheduler": described}
                report["runs"].append(row)
                print(f"{described}: {name}: dp {row['dp_seconds']:.2f} s, dask {row['dask_seconds']:.2f} s, "
                      f"ratio {row['ratio']:.2f} (goal <= 1.5); peak RSS client {row['peak_rss_client_mb']:.0f} MB "
                      f"(before: {row['rss_client_before_mb']:.0f}), workers {row['peak_rss_workers_mb']:.0f} MB "
                      f"(before: {row['rss_workers_before_mb']:.0f})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
