"""dpframe beside the peer libraries that install here, on two queries: an integer median and the automatic-bounds mean.

Usage::

    python benchmarks/bench_peers_quantiles.py                   # 500 trials, 1M and 10M rows, 5 rounds
    python benchmarks/bench_peers_quantiles.py --trials 100 --rows 1000000 --rounds 3   # quicker
    pip install -e ".[bench-peers-dp]"                           # the peers (benchmark only)

**Median of 300 Adult ages** (bounds (0, 125), ε = 1): each trial draws 300
rows without replacement (a seeded generator, the same samples for every
library) from the Adult ages in ``/work/shared/data/adult-arx/adult.csv``
(or ``$DPFRAME_ADULT``; skipped if absent) and compares each library's
median with ``numpy.median`` of the sample. RMSE and mean error (bias) over
the trials. The noise is never seeded (each library's own secure source).

**Automatic-bounds mean of N standard normal rows** (ε = 1): the median wall
time of each call over ``--rounds`` alternating rounds (pandas ``.mean()``
first, then each library), and its ratio to pandas. Libraries: dpframe
(``p["x"].dp.mean(epsilon=1)``, bounds found privately); diffprivlib
(``tools.mean`` without bounds: it warns and takes the data's own range,
which is *not* private, shown for the time only); OpenDP has no
automatic-bounds mean, so its bounded Polars-free mean (sum and count with
bounds given) is shown instead, marked as such. PyDP and PipelineDP are used
when they import and skipped with a message otherwise.

The machine these figures come from is shared: timings are rough, the
alternation only spreads load evenly.
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from timing import alternating_rounds, peer, print_ratios

import dpframe  # noqa: F401  (registers the .dp accessor)
from dpframe.accounting.ledger import Ledger

ADULT = Path(os.environ.get("DPFRAME_ADULT", "/work/shared/data/adult-arx/adult.csv"))
BOUNDS = (0, 125)
EPSILON = 1.0



def median_functions() -> dict[str, Callable[[np.ndarray[Any, Any]], float]]:
    """name -> median of an int64 sample, bounds (0, 125), ε = 1."""
    def dpframe_median(ages: np.ndarray[Any, Any]) -> float:
        p = pd.DataFrame({"age": ages}).dp.protect(epsilon=EPSILON, ledger=Ledger.in_memory())
        return float(p["age"].dp.median(bounds=BOUNDS, epsilon=EPSILON))

    functions: dict[str, Callable[[np.ndarray[Any, Any]], float]] = {"dpframe": dpframe_median}
    diffprivlib = peer("diffprivlib")
    if diffprivlib is not None:
        functions["diffprivlib"] = lambda ages: float(
            diffprivlib.tools.median(ages, epsilon=EPSILON, bounds=BOUNDS))
    dp = peer("opendp.prelude")
    if dp is not None:
        dp.enable_features("contrib")
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
        candidates = list(range(BOUNDS[0], BOUNDS[1] + 1))
        # scale 1 for α = 1/2 and d_in = 1 gives ε = 1 (checked below).
        median = dp.m.make_private_quantile(*space, dp.max_divergence(), candidates, 0.5, 1.0)
        assert abs(median.map(1) - EPSILON) < 1e-9, median.map(1)
        functions["opendp"] = lambda ages: float(median(ages.tolist()))
    pydp = peer("pydp")
    if pydp is not None:
        from pydp.algorithms.laplacian import Median

        functions["pydp"] = lambda ages: float(
            Median(epsilon=EPSILON, lower_bound=BOUNDS[0], upper_bound=BOUNDS[1], dtype="int").quick_result(
                ages.tolist()))
    peer("pipeline_dp")  # no single-call median over an in-memory list to compare here; listed if present
    return functions


def median_accuracy(trials: int, seed: int) -> None:
    if not ADULT.exists():
        print(f"median of Adult ages: skipped, {ADULT} not found (set DPFRAME_ADULT)")
        return
    ages = pd.read_csv(ADULT, sep=";" if "arx" in str(ADULT) else ",")["age"].to_numpy(dtype=np.int64)
    functions = median_functions()
    rng = np.random.default_rng(seed)
    errors: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(trials):
        sample = rng.choice(ages, 300, replace=False)
        truth = float(np.median(sample))
        for name, median in functions.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                errors[name].append(median(sample) - truth)
    print(f"\nmedian of 300 Adult ages, bounds {BOUNDS}, ε = {EPSILON}, {trials} trials")
    print(f"  {'library':<12} {'RMSE':>7} {'bias':>7}")
    for name, errs in errors.items():
        e = np.asarray(errs)
        print(f"  {name:<12} {np.sqrt(np.mean(e ** 2)):7.3f} {np.mean(e):+7.3f}")


def mean_functions(x: pd.Series[Any]) -> dict[str, Callable[[], float]]:
    """name -> one automatic-bounds mean of ``x`` (or the nearest a peer has), ε = 1."""
    p = x.to_frame().dp.protect(epsilon=1e12, ledger=Ledger.in_memory())
    px = p["x"]
    functions: dict[str, Callable[[], float]] = {
        "pandas .mean()": lambda: float(x.mean()),
        "dpframe auto": lambda: float(px.dp.mean(epsilon=EPSILON)),
        "dpframe bounded": lambda: float(px.dp.mean(bounds=(-4, 4), epsilon=EPSILON)),
    }
    values = x.to_numpy()
    diffprivlib = peer("diffprivlib")
    if diffprivlib is not None:
        functions["diffprivlib (no bounds: data range, not private)"] = lambda: float(
            diffprivlib.tools.mean(values, epsilon=EPSILON))
    dp = peer("opendp.prelude")
    if dp is not None:
        dp.enable_features("contrib")
        n = len(values)
        # OpenDP has no automatic bounds: a bounded sum over a known size, divided by n (shown for its time).
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n), dp.symmetric_distance()
        noisy_sum = space >> dp.t.then_clamp((-4.0, 4.0)) >> dp.t.then_sum() >> dp.m.then_laplace(8.0 / EPSILON)
        functions["opendp bounded (no auto bounds; time only)"] = lambda: float(noisy_sum(values.tolist())) / n
    return functions


def mean_timing(rows: list[int], rounds: int, seed: int) -> None:
    for n in rows:
        x = pd.Series(np.random.default_rng(seed).normal(size=n), name="x")
        functions = mean_functions(x)
        times = alternating_rounds(functions, rounds)
        print_ratios(times, "pandas .mean()",
                     f"automatic-bounds mean, {n:,} rows, ε = {EPSILON}, median of {rounds} alternating rounds")

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=500, help="median trials (default 500)")
    parser.add_argument("--rows", type=int, action="append", default=None,
                        help="rows of the mean timing (repeatable; default 1M and 10M)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating timing rounds (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-median", action="store_true")
    parser.add_argument("--skip-mean", action="store_true")
    args = parser.parse_args(argv)
    if not args.skip_median:
        median_accuracy(args.trials, args.seed)
    if not args.skip_mean:
        mean_timing(args.rows or [1_000_000, 10_000_000], args.rounds, args.seed)


if __name__ == "__main__":
    main()
