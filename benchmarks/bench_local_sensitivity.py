"""Sample-and-aggregate against the by-hand chunked-mean workaround, and the three private medians.

A regression slope (``np.polyfit``) has no bounded global sensitivity, so before
``p.dp.sample_and_aggregate`` the only route was by hand: cut the rows into k
chunks, fit each, put the k slopes in a new frame, protect it and ask for its
``.dp.mean(bounds=...)``. That route spends half of ε on a noisy count of the k
rows and its chunks are not privacy units (a person added to the data changes a
chunk's slope: replace-one, which ``mean`` does not assume). Sample-and-aggregate
puts each unit in a random block, knows k (no count) and calibrates to the
replacement of one block's output.

Prints the root-mean-square error over ``--runs`` runs at ε = 1, for several k,
and the error of the exponential-mechanism, smooth-sensitivity and PTR medians.

    python benchmarks/bench_local_sensitivity.py [--runs 200]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

import dpframe  # registers .dp


def regression(n: int, seed: int = 0) -> pd.DataFrame:
    """y = 2.5 x + 1 + noise, x uniform on [0, 10] (test data; the DP noise comes from the secure source)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"x": x, "y": 2.5 * x + 1 + rng.normal(0, 3, n)})


def slope(block: pd.DataFrame) -> float:
    """The least-squares slope of y on x."""
    return float(np.polyfit(block["x"], block["y"], 1)[0])


def chunked_mean(df: pd.DataFrame, k: int, epsilon: float, bounds: tuple[float, float]) -> float:
    """The workaround: k chunks by position, their slopes protected as a k-row frame, then a private mean."""
    chunks = np.array_split(np.arange(len(df)), k)
    slopes = pd.DataFrame({"slope": [slope(df.iloc[c]) for c in chunks]})
    return float(slopes.dp.protect(epsilon=epsilon, ledger=dpframe.Ledger.in_memory())["slope"].dp.mean(
        bounds=bounds, epsilon=epsilon))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--n", type=int, default=40_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    df = regression(args.n)
    truth = slope(df)
    bounds = (0.0, 5.0)
    print(f"slope of {args.n} rows: {truth:.4f} (non-private); RMSE over {args.runs} runs at ε = 1\n")
    print("| blocks k | sample_and_aggregate | chunked-mean workaround | ratio |")
    print("|---|---|---|---|")
    for k in (20, 50, 200, 1000):
        teaching = df.dp.protect(epsilon=2 * args.runs, ledger=dpframe.Ledger.in_memory())
        ours = [teaching.dp.sample_and_aggregate(slope, bounds=bounds, epsilon=1.0, blocks=k) for _ in range(args.runs)]
        hand = [chunked_mean(df, k, 1.0, bounds) for _ in range(args.runs)]
        a = float(np.sqrt(np.mean((np.array(ours) - truth) ** 2)))
        b = float(np.sqrt(np.mean((np.array(hand) - truth) ** 2)))
        print(f"| {k} | {a:.4f} | {b:.4f} | {b / a:.1f}× |")

    # Real-valued (no ties): integer ages would give the smooth and PTR medians a local sensitivity of 0.
    ages = pd.DataFrame({"age": np.random.default_rng(1).normal(45, 12, 10_000).clip(18, 90)})
    exact = float(np.sort(ages["age"])[(len(ages) + 1) // 2 - 1])
    teaching = ages.dp.protect(epsilon=10 * args.runs, delta=0.5, ledger=dpframe.Ledger.in_memory())
    column = teaching["age"]
    print(f"\nmedian of 10,000 real-valued ages ({exact:.3f}), bounds (0, 125), ε = 1: RMSE over {args.runs} runs\n")
    print("| method | RMSE | refused |")
    print("|---|---|---|")
    runs = {
        "exponential mechanism": lambda: column.dp.median(bounds=(0, 125), epsilon=1.0),
        "smooth sensitivity, Laplace, δ = 1e-6": lambda: column.dp.median(method="smooth", bounds=(0, 125),
                                                                         epsilon=1.0, delta=1e-6),
        "propose-test-release, b = 0.1, δ = 1e-6": lambda: column.dp.median(method="ptr", sensitivity=0.1,
                                                                           bounds=(0, 125), epsilon=1.0, delta=1e-6),
    }
    for name, run in runs.items():
        values, refused = [], 0
        for _ in range(args.runs):
            try:
                values.append(float(run()))
            except dpframe.ProposalRefusedError:
                refused += 1
        rmse = float(np.sqrt(np.mean((np.array(values) - exact) ** 2))) if values else float("nan")
        print(f"| {name} | {rmse:.3f} | {refused}/{args.runs} |")


if __name__ == "__main__":
    main()
