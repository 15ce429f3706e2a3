"""The benchmark script keeps working (tiny sizes; no timing assertions)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_queries.py"


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
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_synthesis.py"
    spec = importlib.util.spec_from_file_location("bench_synthesis", script)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "synthesis.json"
    report = bench.main(["--generated", "2000", "--runs", "1", "--methods", "mst", "marginals", "--json", str(out)])
    written = json.loads(out.read_text())
    assert [r["method"] for r in written["results"]] == ["mst", "marginals"]
    for row in written["results"]:
        assert 0 <= row["two_way"]["mean"] <= 1 and 0 <= row["three_way"]["mean"] <= 1
    assert report["rows"] == 2000
