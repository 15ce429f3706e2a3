"""``dpframe synthesize``: writes a synthetic file, clear errors, exit codes, nothing spent on bad paths."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dpframe.__main__ import census_like, main
from dpframe.accounting.budget import resolve_ledger


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    census_like(3000).to_csv(path, index=False)
    return path


def write_schema(path: Path, text_columns: bool = False) -> Path:
    """The census-like file's schema; sex and education as text (categories selected privately) or declared."""
    categorical = ({"type": "text"}, {"type": "text"}) if text_columns else (
        {"type": "category", "categories": ["Female", "Male"]},
        {"type": "category", "categories": ["HS-grad", "Some-college", "Bachelors", "Masters", "Doctorate"]})
    columns = {"age": {"type": "integer"}, "sex": categorical[0], "education": categorical[1],
               "hours": {"type": "integer"}, "income": {"type": "float"}}
    path.write_text(json.dumps({"format": "dpframe-schema/1", "columns": columns}), encoding="utf-8")
    return path


@pytest.fixture
def schema(tmp_path: Path) -> Path:
    return write_schema(tmp_path / "schema.json")


def test_writes_a_synthetic_csv_and_prints_the_ledger(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "syn.csv"
    text = write_schema(tmp_path / "text.json", text_columns=True)
    assert main(["synthesize", str(csv), "--schema", str(text), "--epsilon", "1", "--delta", "1e-6",
                 "--method", "mst", "--rows", "500", "--out", str(out)]) == 0
    synthetic = pd.read_csv(out)
    assert list(synthetic.columns) == ["age", "sex", "education", "hours", "income"]
    assert len(synthetic) == 500
    printed = capsys.readouterr().out
    assert "wrote 500 synthetic rows" in printed and "categories for synthesize" in printed


def test_declared_categories_need_no_delta(csv: Path, schema: Path, tmp_path: Path) -> None:
    out = tmp_path / "syn.csv"
    assert main(["synthesize", str(csv), "--schema", str(schema), "--epsilon", "1", "--method", "marginals",
                 "--rows", "200", "--out", str(out)]) == 0
    synthetic = pd.read_csv(out)
    assert set(synthetic["sex"].dropna()) <= {"Female", "Male"}


def test_text_columns_without_delta_say_what_to_pass(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = write_schema(tmp_path / "text.json", text_columns=True)
    assert main(["synthesize", str(csv), "--schema", str(text), "--epsilon", "1",
                 "--out", str(tmp_path / "s.csv")]) == 2
    assert "pass --delta" in capsys.readouterr().err
    assert not (tmp_path / "s.csv").exists()


def test_numeric_columns_only_need_no_delta(csv: Path, schema: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    assert main(["synthesize", str(csv), "--schema", str(schema), "--epsilon", "1", "--columns", "age", "hours",
                 "--out", str(out)]) == 0
    assert list(pd.read_csv(out).columns) == ["age", "hours"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["missing.csv", "--out", "{tmp}/s.csv"], "no such file"),
        (["{csv}", "--columns", "nope", "--out", "{tmp}/s.csv"], "unknown columns"),
        (["{csv}", "--out", "{tmp}/no/s.csv"], "does not exist"),
        (["{csv}", "--out", "{tmp}/s.xlsx"], "must end in .csv or .parquet or .pq"),
        (["{csv}", "--out", "{csv}"], "it is an input file"),
    ],
)
def test_bad_input_or_output_exits_2_and_costs_nothing(
    csv: Path, schema: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], expected: str
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    arguments = [a.format(csv=csv, tmp=tmp_path) for a in arguments]
    assert main(["synthesize", *arguments, "--schema", str(schema), "--epsilon", "1", "--ledger", str(ledger)]) == 2
    assert expected in capsys.readouterr().err
    assert not ledger.exists() or len(resolve_ledger(str(ledger)).budgets()) == 0


def test_bad_arguments_exit_2(csv: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["synthesize", str(csv), "--epsilon", "0", "--out", str(tmp_path / "s.csv")])
    assert stop.value.code == 2
