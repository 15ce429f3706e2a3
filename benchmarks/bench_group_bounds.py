"""Speed of a group-by with two-dimensional contribution bounds (max_groups, max_rows_per_group) beside pandas.

Visits: ``--rows`` rows of ``--units`` people over 100 days (declared keys); count and mean per day with
L0 = 5, L∞ = 3, against pandas' ``groupby("day").size()`` / ``["spend"].mean()`` on the same frame and
dpframe's own group-by bounded to ``max_contributions`` rows. Alternating rounds, medians
(``python benchmarks/bench_group_bounds.py --rows 2000000 --units 200000``).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import pandas as pd
from timing import alternating_rounds, print_ratios

import dpframe  # noqa: F401  (registers the .dp accessor)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    days = [f"d{i:03d}" for i in range(100)]
    frame = pd.DataFrame({"uid": rng.integers(0, args.units, args.rows),
                          "day": pd.Categorical.from_codes(rng.integers(0, 100, args.rows), categories=days),
                          "spend": rng.uniform(0, 50, args.rows)})
    warnings.simplefilter("ignore")
    p = frame.dp.protect(epsilon=1e9, privacy_unit="uid", max_contributions=15)
    bounded = p.dp.groupby("day", max_groups=5, max_rows_per_group=3)
    rows_bound = p.dp.groupby("day")
    times = alternating_rounds({
        "pandas groupby size": lambda: frame.groupby("day", observed=False).size(),
        "dpframe count, L0=5 L∞=3": lambda: bounded.count(epsilon=1.0),
        "dpframe count, max_contributions=15": lambda: rows_bound.count(epsilon=1.0),
        "pandas groupby mean": lambda: frame.groupby("day", observed=False)["spend"].mean(),
        "dpframe mean, L0=5 L∞=3": lambda: bounded.mean("spend", bounds=(0, 50), epsilon=1.0),
        "dpframe mean, max_contributions=15": lambda: rows_bound.mean("spend", bounds=(0, 50), epsilon=1.0),
    }, args.rounds)
    print_ratios(times, "pandas groupby size", f"{args.rows:,} rows, {args.units:,} units, 100 days", unit="s")


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    main()
