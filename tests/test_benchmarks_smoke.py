"""The benchmark script keeps working (tiny sizes; no timing assertions)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_queries.py"


def _bench(name: str) -> Any:
    """The benchmark script ``benchmarks/<name>.py``, imported as a module."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look their module up
    spec.loader.exec_module(bench)
    return bench


def test_benchmark_script_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("bench_queries", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # dataclasses look their module up
    spec.loader.exec_module(bench)

    out = tmp_path / "results.json"
    results = bench.main(["--rows", "20000", "--repeats", "1", "--json", str(out)])

    written = json.loads(out.read_text())
    assert written["rows"] == 20000 and written["repeats"] == 1
    names = [r["name"] for r in written["results"]]
    for expected in ("mean", "histogram", "crosstab", "groupby mean (k categorical)",
                     "groupby mean (k int64, keys=)", "groupby mean (k object, keys=)", "count", "sum", "var",
                     "filter + mean"):
        assert any(expected in name for name in names), expected
    for row in written["results"]:
        assert row["dp_seconds"] > 0 and row["ref_seconds"] >= 0
    assert any("memory" in row for row in written["results"])
    assert {"cores", "numpy", "pandas"} <= set(written["machine"])
    assert results["results"] == written["results"]
    assert "ratio" in capsys.readouterr().out


def test_synthesis_benchmark_runs_on_generated_data(tmp_path: Path) -> None:
    bench = _bench("bench_synthesis")
    out = tmp_path / "synthesis.json"
    report = bench.main(["--generated", "2000", "--runs", "1", "--methods", "mst", "marginals", "--json", str(out)])
    written = json.loads(out.read_text())
    assert [r["method"] for r in written["results"]] == ["mst", "marginals"]
    for row in written["results"]:
        assert 0 <= row["two_way"]["mean"] <= 1 and 0 <= row["three_way"]["mean"] <= 1
    assert report["rows"] == 2000


def test_peer_benchmark_bins_real_and_synthetic_values_alike() -> None:
    bench = _bench("bench_synthesis_peers")
    real = pd.DataFrame({
        "x": np.linspace(0.0, 32.0, 40),  # many values: 16 equal-width bins
        "k": [0, 1, 2, 3] * 10,  # few values: a code each
        "t": ["b", "a", None, "b"] * 10,  # text with missing values: a code for them
    })
    bins = bench.binning(real)
    assert [bins[c].size for c in real.columns] == [16, 4, 3]
    assert bench.codes_frame(real, bins).max().tolist() == [15, 3, 2]
    # Synthetic values: outside the range go to the end bins, between values to the nearest one, and what the
    # bins cannot place (a missing value where the real data has none, an unseen category) to "other" = size.
    synthetic = pd.DataFrame({"x": [-5.0, 2.1, 99.0], "k": [1.4, np.nan, 7.0], "t": ["a", None, "zzz"]})
    assert bench.codes_frame(synthetic, bins).to_numpy().tolist() == [[0, 1, 0], [1, 4, 2], [15, 3, 3]]


def test_peer_benchmark_runs_on_a_shipped_dataset_without_mbi(tmp_path: Path) -> None:
    bench = _bench("bench_synthesis_peers")
    out = tmp_path / "peers.md"
    # The dpframe methods only: mbi and JAX are benchmark-only dependencies, never installed in CI.
    report = bench.main(["--datasets", "grunfeld", "--methods", "dpframe-mst", "dpframe-marginals", "--runs", "1",
                         "--markdown", str(out)])
    rows = report["grunfeld"]
    assert [r["method"] for r in rows] == ["dpframe-mst", "dpframe-marginals"]
    for row in rows:
        assert row["runs"] == 1 and not row["failures"]
        assert all(0 <= row[k][0] <= 1 for k in ("one_way", "two_way", "three_way"))
    written = out.read_text()
    assert "### grunfeld: 220 rows × 5 columns" in written and "| dpframe-marginals | 1 |" in written


def test_quantile_peer_benchmark_runs_and_skips_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench("bench_peers_quantiles")
    # Peers that do not import are skipped with a message (CI installs none of them).
    monkeypatch.setattr(bench, "peer", lambda name: print(f"  (skipping {name}: not installed)"))
    ages = tmp_path / "adult.csv"
    pd.DataFrame({"age": np.random.default_rng(0).integers(17, 91, 1000)}).to_csv(ages, index=False)
    monkeypatch.setattr(bench, "ADULT", ages)
    bench.main(["--trials", "5", "--rows", "2000", "--rounds", "1"])
    out = capsys.readouterr().out
    assert "skipping diffprivlib" in out and "dpframe " in out and "dpframe auto" in out
    monkeypatch.setattr(bench, "ADULT", tmp_path / "absent.csv")
    bench.main(["--trials", "5", "--skip-mean"])
    assert "skipped" in capsys.readouterr().out


def test_small_frames_benchmark_runs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))  # the script imports its neighbour timing.py
    spec = importlib.util.spec_from_file_location("bench_small", benchmarks / "bench_small.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    records = bench.main(["--rows", "300", "--rounds", "1"])
    # Every query ran for pandas and for dpframe with both ledgers (the peers only where they are installed).
    for library in ("pandas", "dpframe (in-memory ledger)", "dpframe (ledger file)"):
        assert {r["query"] for r in records if r["library"] == library} == set(bench.QUERIES)
    assert all(r["ms"] > 0 for r in records)
    assert "group-by mean, 300 rows" in capsys.readouterr().out


def test_raw_benchmark_scores_as_issue_33_defines_them() -> None:
    bench = _bench("bench_synthesis_raw")
    rows = 10_000
    real = pd.DataFrame({
        "x": np.arange(rows, dtype=float),  # deciles: 10 bins, plus the missing bin
        "flag": np.arange(rows) % 2,  # 0/1
        "t": [f"v{i % 30}" for i in range(rows)],  # 30 values: the top 20 and "other"
    })
    scores = bench.column_scores(real)
    assert [scores[c].size for c in real.columns] == [11, 5, 22]  # 0/1: deciles cut at 0, 0.5 and 1
    codes = {c: s.codes(real[c]) for c, s in scores.items()}
    assert bench.errors(codes, codes, scores) == (0.0, 0.0)
    fake = real.assign(x=real["x"].where(real["x"] > 100), flag=real["flag"] * 0.5, t="v0")
    found = bench.violations(real, fake, scores)
    assert any("x: 1.0% missing" in v for v in found) and any("0/1 column" in v for v in found)
    assert sum("t: value" in v for v in found) == 29  # every frequent value but v0 vanished (3.3% each)
    one, two = bench.errors(codes, {c: s.codes(fake[c]) for c, s in scores.items()}, scores)
    assert 0 < one < 1 and 0 < two < 1
