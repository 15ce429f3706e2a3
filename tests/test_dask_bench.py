"""The Dask benchmark script keeps working (tiny sizes, the threaded scheduler; no timing assertions)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("psutil")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_dask.py"


def test_dask_benchmark_runs_and_caches_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("bench_dask", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)
    spec.loader.exec_module(bench)
    out = tmp_path / "dask.json"
    arguments = ["--rows", "30000", "--partition-rows", "7000", "--rounds", "1", "--schedulers", "threads",
                 "--dir", str(tmp_path), "--json", str(out)]
    report = bench.main(arguments)
    assert json.loads(out.read_text()) == report
    assert report["partitions"] == 5 and [run["name"] for run in report["runs"]] == ["histogram", "mean"]
    for run in report["runs"]:
        assert run["dp_seconds"] > 0 and run["dask_seconds"] > 0 and run["peak_rss_client_mb"] > 0
    files = sorted((tmp_path / "dpframe-bench-dask-30000-7000").iterdir())
    assert bench.main(arguments)["partitions"] == 5  # the cached files are reused
    assert sorted((tmp_path / "dpframe-bench-dask-30000-7000").iterdir()) == files
