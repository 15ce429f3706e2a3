"""dpframe's private models beside non-private scikit-learn and IBM diffprivlib, on Adult; and the time of a large fit.

Usage::

    pip install -e ".[bench-peers-dp]"          # scikit-learn < 1.6 and diffprivlib (benchmark only)
    python benchmarks/bench_learning.py                   # 10 seeds, and the 1M x 20 timing
    python benchmarks/bench_learning.py --seeds 3 --no-timing

**Classification**: Adult income (``/work/shared/data/adult-pgm/adult.csv``,
or ``$DPFRAME_ADULT_PGM``; skipped if absent), 48,842 rows. Features: age,
education-num, hours-per-week, capital-gain and capital-loss (numeric, their
public code ranges as bounds) and workclass, marital-status, occupation,
relationship, race, sex (categorical, public codes from the domain file).
One split (70% train, seeded), ε = 1, δ = 1e-6, 10 seeds of noise; test
accuracy of dpframe ``LogisticRegression`` (``"gd"`` and ``"sgd"``, default
hyperparameters), non-private ``sklearn.linear_model.LogisticRegression`` on
the same one-hot design, and ``diffprivlib.models.LogisticRegression``
(ε = 1, ``data_norm`` the design's public radius, as diffprivlib asks).

**Regression**: hours-per-week from the other features, R² on the test part:
dpframe ``LinearRegression`` (AdaSSP and ``"gd"``, ε = 1, δ = 1e-6), non-private
scikit-learn, and ``diffprivlib.models.LinearRegression`` (ε = 1, public bounds).

**Time**: one ``LogisticRegression().fit`` (default ``"gd"``, ε = 1, δ = 1e-7)
on 1,000,000 generated rows x 20 numeric features (declared bounds). The machine is
shared: timings are rough.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe  # noqa: F401  (registers the .dp accessor)
from dpframe.accounting.ledger import Ledger
from dpframe.learning import LinearRegression, LogisticRegression

ADULT = Path(os.environ.get("DPFRAME_ADULT_PGM", "/work/shared/data/adult-pgm/adult.csv"))
NUMERIC = ["age", "education-num", "hours-per-week", "capital-gain", "capital-loss"]
CATEGORICAL = ["workclass", "marital-status", "occupation", "relationship", "race", "sex"]
LABEL = "income>50K"
EPSILON, DELTA = 1.0, 1e-6


def adult() -> tuple[pd.DataFrame, dict[str, int]] | None:
    """The coded Adult frame with categorical dtypes from the public domain file, or None when absent."""
    if not ADULT.exists():
        print(f"(skipping: {ADULT} not found)")
        return None
    domain = json.loads((ADULT.parent / "adult-domain.json").read_text())
    df = pd.read_csv(ADULT)
    for column in CATEGORICAL:
        df[column] = pd.Categorical(df[column], categories=range(domain[column]))
    df[LABEL] = df[LABEL].astype(bool)
    return df, domain


def one_hot(df: pd.DataFrame, domain: dict[str, int], numeric: list[str]) -> np.ndarray[Any, Any]:
    """The public design dpframe uses (numeric scaled to [-1, 1] by their code ranges, one-hot codes)."""
    parts = [((df[c].to_numpy(float) - (domain[c] - 1) / 2) / ((domain[c] - 1) / 2)).reshape(-1, 1) for c in numeric]
    parts += [pd.get_dummies(df[c]).to_numpy(float) for c in CATEGORICAL]
    return np.hstack(parts)


def classification(df: pd.DataFrame, domain: dict[str, int], seeds: int) -> None:
    from sklearn.linear_model import LogisticRegression as SkLogistic

    features = NUMERIC + CATEGORICAL
    bounds = {c: (0, domain[c] - 1) for c in NUMERIC}
    train = df.sample(frac=0.7, random_state=0)
    test = df.drop(train.index)
    truth = test[LABEL].to_numpy()
    Xtr, Xte = one_hot(train, domain, NUMERIC), one_hot(test, domain, NUMERIC)
    baseline = SkLogistic(max_iter=2000).fit(Xtr, train[LABEL]).score(Xte, truth)
    results: dict[str, list[float]] = {"dpframe gd": [], "dpframe sgd": [], "diffprivlib": []}
    times: dict[str, list[float]] = {k: [] for k in results}
    for seed in range(seeds):
        for method in ("gd", "sgd"):
            p = train.dp.protect(epsilon=EPSILON, delta=DELTA, ledger=Ledger(":memory:"))
            start = time.perf_counter()
            model = LogisticRegression(method=method, bounds=bounds).fit(p[features], p[LABEL], epsilon=EPSILON,
                                                                         delta=DELTA)
            times[f"dpframe {method}"].append(time.perf_counter() - start)
            results[f"dpframe {method}"].append(model.score(test[features], truth))
        try:
            from diffprivlib.models import LogisticRegression as DplLogistic
        except ImportError as error:
            print(f"  (skipping diffprivlib: {error})")
            results.pop("diffprivlib", None)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            dpl = DplLogistic(epsilon=EPSILON, data_norm=float(np.sqrt(len(features))), random_state=seed).fit(
                Xtr, train[LABEL])
            times["diffprivlib"].append(time.perf_counter() - start)
            results["diffprivlib"].append(dpl.score(Xte, truth))
    print(f"Adult income, {len(train)} train / {len(test)} test rows, ε = {EPSILON}, δ = {DELTA}, {seeds} seeds")
    print(f"  {'non-private sklearn':22s} accuracy {baseline:.4f}")
    for name, scores in results.items():
        spread = statistics.stdev(scores) if len(scores) > 1 else 0.0
        print(f"  {name:22s} accuracy {statistics.mean(scores):.4f} ± {spread:.4f}  "
              f"(gap {100 * (baseline - statistics.mean(scores)):+.2f} points; fit {statistics.median(times[name]):.2f} s)")


def regression(df: pd.DataFrame, domain: dict[str, int], seeds: int) -> None:
    from sklearn.linear_model import LinearRegression as SkLinear
    from sklearn.metrics import r2_score

    target = "hours-per-week"
    numeric = [c for c in NUMERIC if c != target]
    features = numeric + CATEGORICAL
    bounds = {c: (0, domain[c] - 1) for c in numeric}
    label_bounds = (0, domain[target] - 1)
    train = df.sample(frac=0.7, random_state=0)
    test = df.drop(train.index)
    truth = test[target].to_numpy(float)
    Xtr, Xte = one_hot(train, domain, numeric), one_hot(test, domain, numeric)
    baseline = r2_score(truth, SkLinear().fit(Xtr, train[target]).predict(Xte))
    results: dict[str, list[float]] = {"dpframe AdaSSP": [], "dpframe gd": [], "diffprivlib": []}
    for seed in range(seeds):
        for method, name in (("adassp", "dpframe AdaSSP"), ("gd", "dpframe gd")):
            p = train.dp.protect(epsilon=EPSILON, delta=DELTA, ledger=Ledger(":memory:"))
            model = LinearRegression(method=method, bounds=bounds, label_bounds=label_bounds)
            model.fit(p[features], p[target], epsilon=EPSILON, delta=DELTA)
            results[name].append(model.score(test[features], truth))
        try:
            from diffprivlib.models import LinearRegression as DplLinear
        except ImportError:
            results.pop("diffprivlib", None)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lower = np.r_[-np.ones(len(numeric)), np.zeros(Xtr.shape[1] - len(numeric))]
            dpl = DplLinear(epsilon=EPSILON, bounds_X=(lower, np.ones(Xtr.shape[1])), bounds_y=label_bounds,
                            random_state=seed).fit(Xtr, train[target])
            results["diffprivlib"].append(r2_score(truth, dpl.predict(Xte)))
    print(f"Adult {target} regression, ε = {EPSILON}, δ = {DELTA}, {seeds} seeds")
    print(f"  {'non-private sklearn':22s} R² {baseline:.4f}")
    for name, scores in results.items():
        print(f"  {name:22s} R² {statistics.mean(scores):.4f} (median {statistics.median(scores):.4f}, "
              f"worst {min(scores):.4f})")


def timing(rows: int = 1_000_000, columns: int = 20) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (rows, columns))
    w = rng.normal(size=columns)
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(columns)])
    df["y"] = rng.uniform(size=rows) < 1 / (1 + np.exp(-X @ w))
    # δ below 1/n for a million units.
    p = df.dp.protect(epsilon=EPSILON, delta=1e-7, ledger=Ledger(":memory:"))
    features = [f"x{i}" for i in range(columns)]
    bounds = {c: (-1, 1) for c in features}
    start = time.perf_counter()
    model = LogisticRegression(bounds=bounds).fit(p[features], p["y"], epsilon=EPSILON, delta=1e-7)
    elapsed = time.perf_counter() - start
    print(f"LogisticRegression().fit on {rows:,} x {columns}: {elapsed:.1f} s "
          f"(training accuracy {model.score(df[features], df['y']):.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--only", choices=["classification", "regression", "timing"])
    args = parser.parse_args()
    found = adult()
    if found is not None and args.only in (None, "classification"):
        classification(*found, args.seeds)
    if found is not None and args.only in (None, "regression"):
        regression(*found, args.seeds)
    if not args.no_timing and args.only in (None, "timing"):
        timing()


if __name__ == "__main__":
    main()
