"""How often the mark of automatic bounds from too few rows fires, and what it catches (issue 29).

Usage::

    python benchmarks/bench_weak_bounds.py              # 200 runs per size
    python benchmarks/bench_weak_bounds.py --runs 50    # quicker

For each number of rows ``n``, ``--runs`` answers of ``p["x"].dp.mean(epsilon=1)`` with automatic bounds (their
sparse vector's query noise has scale s = 20 counts, so the mark's threshold is about 15 s = 300 rows) on
integer ages (uniform on 18..90) and on log-normal values, and:

* ``marked``: the share marked ``weak_bounds`` (:func:`dpframe.queries.bounds.weak_bounds`);
* ``past``: the share whose bounds lie past the data (the lower one above its maximum or the upper one below its
  minimum), and ``past, unmarked``: how many of those were not marked (the rule's target: none);
* ``missed``: the share whose 95% interval misses the exact mean, and ``missed, unmarked`` the share of all
  answers both missing and neither marked UNRELIABLE (for any reason) nor ``clipping_bites`` (bounds inside the
  data: the interval is the clipped values', docs/reading-answers.md).

Noise comes from the seeded test source (``dpframe.testing.seeded_noise``): figures, not privacy.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

import dpframe  # noqa: F401
from dpframe import Ledger
from dpframe.testing import seeded_noise

SIZES = (100, 200, 300, 400, 600, 1000, 3000, 10000)


def data(kind: str, n: int) -> pd.Series:
    rng = np.random.default_rng(n)  # the data, not the noise
    values = rng.integers(18, 91, n).astype(float) if kind == "ages" else rng.lognormal(3, 1, n)
    return pd.Series(values, name="x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    warnings.simplefilter("ignore")
    print(f"{'data':8} {'n':>6} {'marked':>7} {'past':>6} {'past, unmarked':>15} {'missed':>7} {'missed, unmarked':>17}")
    for kind in ("ages", "lognormal"):
        for n in SIZES:
            x = data(kind, n)
            truth, low, high = float(x.mean()), float(x.min()), float(x.max())
            marked = past = past_unmarked = missed = missed_unmarked = 0
            for seed in range(runs):
                p = x.to_frame().dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
                with seeded_noise(seed):
                    m = p["x"].dp.mean(epsilon=1.0)
                lo, hi = m.release.bounds
                beyond = lo > high or hi < low
                marked += m.weak_bounds
                past += beyond
                past_unmarked += beyond and not m.weak_bounds
                miss = not m.ci[0] <= truth <= m.ci[1]
                missed += miss
                missed_unmarked += miss and not (m.unreliable or m.clipping_bites)
            print(f"{kind:8} {n:6d} {marked / runs:7.1%} {past / runs:6.1%} {past_unmarked:15d} {missed / runs:7.1%} "
                  f"{missed_unmarked / runs:17.1%}", flush=True)


if __name__ == "__main__":
    main()
