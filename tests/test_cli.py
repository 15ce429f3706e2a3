"""The ``dpframe describe`` command: output, HTML report, exit codes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpframe.__main__ import main


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    n = 1500
    path = tmp_path / "data.csv"
    pd.DataFrame(
        {"age": rng.integers(18, 90, n), "edu": rng.choice(["HS", "BA", "MA"], n), "smoker": rng.random(n) < 0.2}
    ).to_csv(path, index=False, sep=";")
    return path


def test_describe_prints_table_and_ledger(csv: Path, seeded: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(csv), "--epsilon", "1", "--delta", "1e-6", "--sep", ";"]) == 0
    out = capsys.readouterr().out
    for text in ["count", "lower bound", "upper bound", "top", "freq", "age", "edu", "smoker", "budget:",
                 "bounds for describe", "spent ε=1,"]:
        assert text in out


def test_columns_selects(csv: Path, seeded: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(csv), "--epsilon", "1", "--sep", ";", "--columns", "age", "smoker"]) == 0
    out = capsys.readouterr().out
    assert "edu" not in out and "smoker" in out


def test_out_writes_html_report(csv: Path, tmp_path: Path, seeded: None, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.html"
    code = main(["describe", str(csv), "--epsilon", "1", "--delta", "1e-6", "--sep", ";", "--out", str(report)])
    assert code == 0
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<table" in page and "lower bound" in page and "Privacy ledger" in page
    assert "bounds for describe" in page and "histogram" in page
    assert "<svg" in page and ">count</text>" in page
    assert "wrote" in capsys.readouterr().out


def test_bad_path_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(tmp_path / "missing.csv"), "--epsilon", "1"]) == 1
    assert "no such file" in capsys.readouterr().err


def test_data_errors_exit_1(csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(csv), "--epsilon", "1", "--sep", ";", "--columns", "nope"]) == 1
    assert "unknown columns ['nope']" in capsys.readouterr().err
    assert main(["describe", str(csv), "--epsilon", "1", "--sep", ";"]) == 1  # text column without delta
    assert "--delta" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["describe", str(empty), "--epsilon", "1"]) == 1
    assert "empty" in capsys.readouterr().err
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b\n")
    assert main(["describe", str(header_only), "--epsilon", "1"]) == 1
    assert "empty" in capsys.readouterr().err


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "data.parquet"
    path.write_bytes(b"")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert main(["describe", str(path), "--epsilon", "1"]) == 1
        assert "pyarrow" in capsys.readouterr().err
    else:
        pytest.skip("pyarrow is installed")


@pytest.mark.parametrize("epsilon", ["-1", "0", "abc", "inf"])
def test_bad_epsilon_exits_2(csv: Path, epsilon: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["describe", str(csv), f"--epsilon={epsilon}"])
    assert info.value.code == 2
    assert "--epsilon" in capsys.readouterr().err


def test_missing_epsilon_exits_2(csv: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["describe", str(csv)])
    assert info.value.code == 2


def test_demo_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "budget:" in capsys.readouterr().out
