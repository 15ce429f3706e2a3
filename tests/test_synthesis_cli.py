"""``dpframe synthesize``: writes a synthetic file, clear errors, exit codes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dpframe.__main__ import census_like, main


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    census_like(3000).to_csv(path, index=False)
    return path


def test_writes_a_synthetic_csv_and_prints_the_ledger(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "syn.csv"
    assert main(["synthesize", str(csv), "--epsilon", "1", "--delta", "1e-6", "--method", "mst",
                 "--rows", "500", "--out", str(out)]) == 0
    synthetic = pd.read_csv(out)
    assert list(synthetic.columns) == ["age", "sex", "education", "hours", "income"]
    assert len(synthetic) == 500
    printed = capsys.readouterr().out
    assert "wrote 500 synthetic rows" in printed and "categories for synthesize" in printed


def test_text_columns_without_delta_say_what_to_pass(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["synthesize", str(csv), "--epsilon", "1", "--out", str(tmp_path / "s.csv")]) == 1
    assert "pass --delta" in capsys.readouterr().err
    assert not (tmp_path / "s.csv").exists()


def test_numeric_columns_only_need_no_delta(csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    assert main(["synthesize", str(csv), "--epsilon", "1", "--columns", "age", "hours", "--out", str(out)]) == 0
    assert list(pd.read_csv(out).columns) == ["age", "hours"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["missing.csv"], "no such file"),
        (["{csv}", "--columns", "nope"], "unknown columns"),
    ],
)
def test_bad_input_exits_1(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], expected: str
) -> None:
    arguments = [a.format(csv=csv) for a in arguments]
    assert main(["synthesize", *arguments, "--epsilon", "1", "--out", str(tmp_path / "s.csv")]) == 1
    assert expected in capsys.readouterr().err


def test_bad_arguments_exit_2(csv: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["synthesize", str(csv), "--epsilon", "0", "--out", str(tmp_path / "s.csv")])
    assert stop.value.code == 2
