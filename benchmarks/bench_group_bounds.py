"""Speed of a group-by with two-dimensional contribution bounds (max_groups, max_rows_per_group) beside pandas.

Visits: ``--rows`` rows of ``--units`` people over 100 days (a categorical: public keys); count and mean per
day with L0 = 5, L∞ = 3, against

* plain pandas, ``groupby("day").size()`` / ``["spend"].mean()`` on the same frame (the issue's reference), and
* pandas bounding each person by hand as dpframe does before aggregating (each person's 5 days of smallest hash
  of (person, day), then 3 random rows in each: a rank within the person, a shuffle, ``groupby.head``): the
  same work written in pandas, a fairer reference;

and dpframe's own group-by bounded to ``max_contributions`` rows. dpframe chooses each person's days once
per data and grouping (it is deterministic) and the rows in them at every query: the first query on the rows
pays for the choice, the next ones (any group-by of ``day`` with the same bounds) reuse it; both are timed.
Alternating rounds, medians
(``python benchmarks/bench_group_bounds.py --rows 10000000 --units 1000000``, the issue's size).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from timing import alternating_rounds

import dpframe  # noqa: F401  (registers the .dp accessor)
from dpframe.protection import units
from dpframe.queries.partitioned import GroupBy

L0, LINF = 5, 3


def bounded_by_hand(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Each person's rows in their L0 days of smallest hash of (person, day), at most L∞ random rows in each."""
    pair_hash = pd.util.hash_pandas_object(frame[["uid", "day"]], index=False).to_numpy()
    day_rank = pd.Series(pair_hash).groupby(frame["uid"].to_numpy()).rank(method="dense").to_numpy()
    kept = frame[day_rank <= L0]
    shuffled = kept.iloc[rng.permutation(len(kept))]
    return shuffled.groupby(["uid", "day"], observed=True, sort=False).head(LINF)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-by-hand", action="store_true", help="leave out pandas' bounding by hand (slow)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    days = [f"d{i:03d}" for i in range(100)]
    frame = pd.DataFrame({"uid": rng.integers(0, args.units, args.rows),
                          "day": pd.Categorical.from_codes(rng.integers(0, 100, args.rows), categories=days),
                          "spend": rng.uniform(0, 50, args.rows)})
    warnings.simplefilter("ignore")
    p = frame.dp.protect(epsilon=1e9, privacy_unit="uid", max_contributions=15)

    def bounded() -> GroupBy:
        return p.dp.groupby("day", max_groups=L0, max_rows_per_group=LINF)

    rows_bound = p.dp.groupby("day")
    calls = {
        "pandas groupby size": lambda: frame.groupby("day", observed=False).size(),
        "pandas groupby mean": lambda: frame.groupby("day", observed=False)["spend"].mean(),
    }
    if not args.no_by_hand:
        calls["pandas bounded by hand, size"] = (
            lambda: bounded_by_hand(frame, rng).groupby("day", observed=False).size())
        calls["pandas bounded by hand, mean"] = (
            lambda: bounded_by_hand(frame, rng).groupby("day", observed=False)["spend"].mean())
    def first(query: Callable[[], Any]) -> Callable[[], Any]:
        # As the first query on these rows: the groups each unit keeps are chosen again (not the remembered choice).
        def run() -> Any:
            units._REMEMBERED.clear()
            return query()
        return run

    count = lambda: bounded().count(epsilon=1.0)
    mean = lambda: bounded().mean("spend", bounds=(0, 50), epsilon=1.0)
    calls |= {
        f"dpframe count, L0={L0} L∞={LINF}, first query": first(count),
        f"dpframe count, L0={L0} L∞={LINF}, next queries": count,
        f"dpframe mean, L0={L0} L∞={LINF}, first query": first(mean),
        f"dpframe mean, L0={L0} L∞={LINF}, next queries": mean,
        "dpframe count, max_contributions=15": lambda: rows_bound.count(epsilon=1.0),
        "dpframe mean, max_contributions=15": lambda: rows_bound.mean("spend", bounds=(0, 50), epsilon=1.0),
    }
    times = {name: statistics.median(ts) for name, ts in alternating_rounds(calls, args.rounds).items()}
    print(f"\n{args.rows:,} rows, {args.units:,} units, 100 days; medians of {args.rounds} rounds (s), and ratios to "
          "pandas (plain; bounding by hand)")
    for name, t in times.items():
        ratios = ""
        if name.startswith("dpframe"):
            statistic = "size" if " count" in name else "mean"
            plain = t / times[f"pandas groupby {statistic}"]
            by_hand = times.get(f"pandas bounded by hand, {statistic}")
            ratios = f"{plain:9.1f}x" + ("" if by_hand is None else f" {t / by_hand:9.2f}x")
        print(f"  {name:44} {t:8.3f} {ratios}")


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    main()
