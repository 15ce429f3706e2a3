"""Range-query workload error: the identity strategy (a histogram) against hierarchical trees, at ε = 1.

Usage::

    python benchmarks/bench_strategies.py                  # 200 runs per strategy and workload
    python benchmarks/bench_strategies.py --runs 50 --fine-runs 10 --adult /path/to/adult-pgm

Data: the age column of ``../shared/data/adult-pgm`` (48,842 rows, ages coded 0..84 by private-pgm's
domain file, which is public) when present; otherwise generated ages of the same shape (``census_like``).
Bins: one per code (85), declared from the domain, plus the two outer bins ``range_counts`` adds.

Workloads: (1) every range ``[i, j)`` of the 85 Adult age bins (3,655 ranges); (2) ~3,000 random ranges of
1,024 bins of a generated log income (``census_like``, 48,842 rows), where trees pay off. Ranges are grouped
by length: small (up to a tenth of the bins), medium, large (from half). Each run releases the whole
workload once with ``p["age"].dp.range_counts(..., epsilon=1)`` (discrete Laplace, secure noise, not seeded) and compares
it with the exact counts; the table shows the mean squared error per query of each group over the runs,
next to the variance the release states (``attrs["dp"].std``²), which it should match.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import dpframe  # noqa: E402  (registers .dp)

DEFAULT_ADULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult-pgm"
STRATEGIES = [("identity", None), ("hierarchical", 2), ("hierarchical", 4), ("hierarchical", 16), ("auto", None)]


def ages(adult: Path) -> tuple[pd.DataFrame, int, str]:
    """The ages and their number of codes: Adult's when present, else generated."""
    if (adult / "adult.csv").exists():
        import json

        domain = json.loads((adult / "adult-domain.json").read_text())["age"]
        return pd.read_csv(adult / "adult.csv", usecols=["age"]), int(domain), f"Adult ages ({adult})"
    frame = census()[["age"]]
    frame["age"] = frame["age"].clip(17, 101) - 17
    return frame, 85, "generated census_like ages (Adult not found)"


def census() -> pd.DataFrame:
    from dpframe.__main__ import census_like

    return census_like(48_842, seed=1)


def workload(name: str, frame: pd.DataFrame, bins: int, ranges: list[tuple[int, int]], runs: int) -> None:
    """Print the MSE per query of each strategy, by range length (small: up to 10% of the bins; large: from 50%)."""
    values = frame.iloc[:, 0].to_numpy(dtype=float)
    lengths = np.array([j - i for i, j in ranges])
    counts = np.histogram(values, bins=bins, range=(0, bins))[0]
    prefix = np.r_[0, np.cumsum(counts)]
    truth = np.array([prefix[j] - prefix[i] for i, j in ranges], dtype=float)
    groups = [(f"small (≤{bins // 10} bins)", lengths <= bins // 10),
              ("medium", (lengths > bins // 10) & (lengths < bins // 2)), (f"large (≥{bins // 2})", lengths >= bins // 2)]
    print(f"\n{name}: {len(values):,} rows, {bins} bins, {len(ranges):,} ranges, ε = 1, {runs} runs")
    rows = []
    for strategy, branching in STRATEGIES:
        p = frame.dp.protect(epsilon=1.0 * runs, ledger=dpframe.Ledger.in_memory())
        squared = np.zeros(len(ranges))
        stated = np.zeros(len(ranges))
        start = time.perf_counter()
        for _ in range(runs):
            answer = p.iloc[:, 0].dp.range_counts(ranges, bins=bins, bounds=(0, bins), strategy=strategy,
                                                  branching=branching, epsilon=1.0)
            squared += (answer.to_numpy() - truth) ** 2
            stated = answer.attrs["dp"].std.to_numpy() ** 2
        row: dict[str, object] = {"strategy": strategy if branching is None else f"{strategy}, b={branching}"}
        for label, group in groups:
            row[f"{label} MSE"] = squared[group].mean() / runs
            row[f"{label} stated"] = stated[group].mean()
        row["all MSE"] = squared.mean() / runs
        row["s/release"] = (time.perf_counter() - start) / runs
        rows.append(row)
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.float_format", "{:.1f}".format):
        print(pd.DataFrame(rows).set_index("strategy"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--fine-runs", type=int, default=200)
    parser.add_argument("--adult", type=Path, default=DEFAULT_ADULT)
    args = parser.parse_args()

    frame, codes, source = ages(args.adult)
    every = [(i, j) for i in range(codes) for j in range(i + 1, codes + 1)]
    workload(f"{source}, every range", frame, codes, every, args.runs)

    # A fine domain, where trees pay off: 1,024 bins of log income, 3,000 random ranges.
    fine = 1024
    income = census()["income"].to_numpy(dtype=float)
    scaled = pd.DataFrame({"log income": np.log10(np.maximum(income, 1.0)) / 7 * fine})
    rng = np.random.default_rng(0)
    ends = np.sort(rng.choice(fine + 1, size=(3000, 2), replace=True), axis=1)
    random_ranges = [(int(a), int(b)) for a, b in ends if a < b]
    workload("generated log incomes (census_like), random ranges", scaled, fine, random_ranges, args.fine_runs)


if __name__ == "__main__":
    main()
