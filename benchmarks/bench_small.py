"""Per-query time on the frames people have (1,000 and 30,000 rows): dpframe with both ledgers, the peers, pandas.

Usage::

    python benchmarks/bench_small.py                      # 1,000 and 30,000 rows, 15 rounds
    python benchmarks/bench_small.py --rows 1000 --rounds 5 --queries mean,count
    pip install -e ".[bench-peers-dp]"                    # the peers (benchmark only)

For each query and size, every library that offers the query is called once as
a warm-up, then once per round, in turn (:func:`timing.alternating_rounds`), so
that load from other processes hits all alike; in its turn each entry runs once
untimed and then once timed (``settle=True``: the timed call finds memory as its
own library left it, not as the previous library did). The table shows the
median time per call and the spread over the rounds (25th and 75th
percentiles), and each entry's ratio to the fastest peer.

Entries: **pandas** (the non-private answer), **dpframe** with the in-memory
ledger (``Ledger.in_memory()``) and with a ledger file (the default persistent
ledger, a durable SQLite commit per release, in a temporary folder on the
machine's disk), and the peers that import: IBM **diffprivlib**
(``diffprivlib.tools``), Google's **PyDP** (``pydp.algorithms.laplacian``,
which takes Python lists: the ``tolist()`` is part of its call, as in use),
**OpenDP** (measurements built once, outside the timing; its input is a list
too) and **PipelineDP** (the local back end, group-by mean only). A peer that
has no such query is left out of that row. Every call spends ε = 1 (quartiles:
ε = 1 for the three together) with the bounds given, (-3, 3), on standard normal
``x``; the histogram has 99 equal bins on those bounds; the crosstab and the
group-by use uniform categoricals ``a`` (10 categories) and ``b`` (5), declared
to the peers that need their keys. Noise is never seeded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from timing import alternating_rounds, peer

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import dpframe  # noqa: E402,F401  (registers .dp)
from dpframe.accounting.ledger import Ledger  # noqa: E402

EPSILON = 1.0
LO, HI = -3.0, 3.0
EDGES = np.linspace(LO, HI, 100)
QUARTILES = [0.25, 0.5, 0.75]
QUERIES = ("count", "sum", "mean", "variance", "histogram", "crosstab", "group-by mean", "quartiles")

Call = Callable[[], Any]



def frame(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "x": rng.normal(size=rows),
        "a": pd.Categorical(rng.integers(0, 10, rows)),
        "b": pd.Categorical(rng.integers(0, 5, rows)),
    })


def pandas_calls(df: pd.DataFrame) -> dict[str, Call]:
    x = df["x"]
    return {
        "count": lambda: x.count(),
        "sum": lambda: x.clip(LO, HI).sum(),
        "mean": lambda: x.clip(LO, HI).mean(),
        "variance": lambda: x.clip(LO, HI).var(),
        "histogram": lambda: np.histogram(x, bins=EDGES),
        "crosstab": lambda: pd.crosstab(df["a"], df["b"]),
        "group-by mean": lambda: df.groupby("a", observed=False)["x"].mean(),
        "quartiles": lambda: x.quantile(QUARTILES),
    }


def dpframe_calls(df: pd.DataFrame, ledger: Ledger | str) -> dict[str, Call]:
    p = df.dp.protect(epsilon=1e12, ledger=ledger)
    x = p["x"]
    return {
        "count": lambda: x.dp.count(epsilon=EPSILON),
        "sum": lambda: x.dp.sum(epsilon=EPSILON, bounds=(LO, HI)),
        "mean": lambda: x.dp.mean(epsilon=EPSILON, bounds=(LO, HI)),
        "variance": lambda: x.dp.var(epsilon=EPSILON, bounds=(LO, HI)),
        "histogram": lambda: x.dp.histogram(epsilon=EPSILON, bins=EDGES),
        "crosstab": lambda: p.dp.crosstab("a", "b", epsilon=EPSILON),
        "group-by mean": lambda: p.dp.groupby("a")["x"].mean(epsilon=EPSILON, bounds=(LO, HI)),
        "quartiles": lambda: x.dp.quantile(QUARTILES, epsilon=EPSILON, bounds=(LO, HI)),
    }


def diffprivlib_calls(df: pd.DataFrame, tools: Any) -> dict[str, Call]:
    x = df["x"].to_numpy()
    present = df["x"].notna().to_numpy()
    ab = np.column_stack([df["a"].cat.codes.to_numpy(), df["b"].cat.codes.to_numpy()])
    return {
        "count": lambda: tools.count_nonzero(present, epsilon=EPSILON),
        "sum": lambda: tools.sum(x, epsilon=EPSILON, bounds=(LO, HI)),
        "mean": lambda: tools.mean(x, epsilon=EPSILON, bounds=(LO, HI)),
        "variance": lambda: tools.var(x, epsilon=EPSILON, bounds=(LO, HI)),
        "histogram": lambda: tools.histogram(x, epsilon=EPSILON, bins=EDGES, range=(LO, HI)),
        "crosstab": lambda: tools.histogramdd(ab, epsilon=EPSILON, bins=(10, 5), range=[(-0.5, 9.5), (-0.5, 4.5)]),
        "quartiles": lambda: tools.quantile(x, QUARTILES, epsilon=EPSILON, bounds=(LO, HI)),
    }


def pydp_calls(df: pd.DataFrame, laplacian: Any) -> dict[str, Call]:
    x = df["x"]
    bounds = {"lower_bound": LO, "upper_bound": HI, "dtype": "float"}

    def quartiles() -> list[float]:
        values = x.tolist()
        return [laplacian.Percentile(percentile=q, epsilon=EPSILON / 3, **bounds).quick_result(values)
                for q in QUARTILES]

    return {
        "count": lambda: laplacian.Count(epsilon=EPSILON, dtype="float").quick_result(x.tolist()),
        "sum": lambda: laplacian.BoundedSum(epsilon=EPSILON, **bounds).quick_result(x.tolist()),
        "mean": lambda: laplacian.BoundedMean(epsilon=EPSILON, **bounds).quick_result(x.tolist()),
        "variance": lambda: laplacian.BoundedVariance(epsilon=EPSILON, **bounds).quick_result(x.tolist()),
        "quartiles": quartiles,
    }


def opendp_calls(df: pd.DataFrame, dp: Any) -> dict[str, Call]:
    dp.enable_features("contrib", "floating-point")
    n = len(df)
    x = df["x"]
    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    sized = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n), dp.symmetric_distance()
    count = floats >> dp.t.then_count() >> dp.m.then_laplace(1.0 / EPSILON)
    total = floats >> dp.t.then_clamp((LO, HI)) >> dp.t.then_sum() >> dp.m.then_laplace(HI / EPSILON)
    mean = sized >> dp.t.then_clamp((LO, HI)) >> dp.t.then_mean()
    mean = mean >> dp.m.then_laplace(mean.map(1) / EPSILON)
    variance = sized >> dp.t.then_clamp((LO, HI)) >> dp.t.then_variance()
    variance = variance >> dp.m.then_laplace(variance.map(1) / EPSILON)
    bins = floats >> dp.t.then_find_bin(edges=EDGES.tolist())
    histogram = bins >> dp.t.then_count_by_categories(categories=list(range(1, len(EDGES)))) \
        >> dp.m.then_laplace(2.0 / EPSILON)  # a changed row moves one count out and one in (symmetric distance 1)
    codes = (df["a"].cat.codes.astype(np.int64) * 5 + df["b"].cat.codes).tolist()
    ints = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
    crosstab = ints >> dp.t.then_count_by_categories(categories=list(range(50))) >> dp.m.then_laplace(2.0 / EPSILON)
    grid = np.linspace(LO, HI, 1001).tolist()
    # Each quartile at ε/3: the quantile score's sensitivity at d_in = 1 is max(α, 1 - α) (OpenDP's docs).
    quartile = [dp.m.make_private_quantile(*floats, dp.max_divergence(), grid, q, 3 * max(q, 1 - q) / EPSILON)
                for q in QUARTILES]
    return {
        "count": lambda: count(x.tolist()),
        "sum": lambda: total(x.tolist()),
        "mean": lambda: mean(x.tolist()),
        "variance": lambda: variance(x.tolist()),
        "histogram": lambda: histogram(x.tolist()),
        "crosstab": lambda: crosstab(codes),
        "quartiles": lambda: [m(x.tolist()) for m in quartile],
    }


def pipelinedp_calls(df: pd.DataFrame, pipeline_dp: Any) -> dict[str, Call]:
    rows = list(zip(range(len(df)), df["a"].cat.codes.tolist(), df["x"].tolist()))

    def group_mean() -> Any:
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=0)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(
            metrics=[pipeline_dp.Metrics.MEAN], noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            max_partitions_contributed=1, max_contributions_per_partition=1, min_value=LO, max_value=HI)
        extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                                partition_extractor=lambda r: r[1], value_extractor=lambda r: r[2])
        result = engine.aggregate(rows, params, extractors, public_partitions=list(range(10)))
        accountant.compute_budgets()
        return list(result)

    return {"group-by mean": group_mean}


def entries(df: pd.DataFrame, folder: str) -> dict[str, dict[str, Call]]:
    """library -> query -> call."""
    libraries = {
        "pandas": pandas_calls(df),
        "dpframe (in-memory ledger)": dpframe_calls(df, Ledger.in_memory()),
        "dpframe (ledger file)": dpframe_calls(df, str(Path(folder) / f"ledger-{len(df)}.sqlite")),
    }
    builders: list[tuple[str, str, Callable[[pd.DataFrame, Any], dict[str, Call]]]] = [
        ("diffprivlib", "diffprivlib.tools", diffprivlib_calls),
        ("pydp", "pydp.algorithms.laplacian", pydp_calls),
        ("opendp", "opendp.prelude", opendp_calls),
        ("pipelinedp", "pipeline_dp", pipelinedp_calls),
    ]
    for name, module_name, build in builders:
        module = peer(module_name)
        if module is not None:
            libraries[name] = build(df, module)
    return libraries


PEERS = ("diffprivlib", "pydp", "opendp", "pipelinedp")


def run(rows: int, rounds: int, queries: list[str], folder: str) -> list[dict[str, Any]]:
    libraries = entries(frame(rows), folder)
    records = []
    for query in queries:
        calls = {name: calls[query] for name, calls in libraries.items() if query in calls}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times = alternating_rounds(calls, rounds, settle=True)
        medians = {name: statistics.median(ts) for name, ts in times.items()}
        fastest_peer = min((medians[name] for name in medians if name in PEERS), default=None)
        print(f"\n{query}, {rows:,} rows, ε = {EPSILON}, {rounds} alternating rounds"
              + ("" if fastest_peer is None else " (ratio: to the fastest peer)"))
        print(f"  {'':28} {'ms':>8} {'p25':>8} {'p75':>8} {'ratio':>7}")
        for name, ts in times.items():
            quartiles = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0]] * 3
            ratio = "" if fastest_peer is None else f"{medians[name] / fastest_peer:7.2f}"
            print(f"  {name:28} {1e3 * medians[name]:8.3f} {1e3 * quartiles[0]:8.3f} {1e3 * quartiles[2]:8.3f}"
                  f" {ratio}")
            records.append({"rows": rows, "query": query, "library": name, "ms": 1e3 * medians[name],
                            "p25": 1e3 * quartiles[0], "p75": 1e3 * quartiles[2]})
    return records


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, action="append", default=None,
                        help="rows (repeatable; default 1,000 and 30,000)")
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (default 15)")
    parser.add_argument("--queries", default=",".join(QUERIES), help="comma-separated, from: " + ", ".join(QUERIES))
    args = parser.parse_args(argv)
    queries = [q.strip() for q in args.queries.split(",")]
    unknown = sorted(set(queries) - set(QUERIES))
    if unknown:
        parser.error(f"unknown queries {unknown}; choose from {', '.join(QUERIES)}")
    records = []
    with tempfile.TemporaryDirectory(prefix="dpframe-bench-") as folder:
        for rows in args.rows or [1_000, 30_000]:
            records += run(rows, args.rounds, queries, folder)
    return records


if __name__ == "__main__":
    main()
