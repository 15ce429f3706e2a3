"""The command line: ``dpframe schema``, ``describe`` with ``--schema``, checks before spending, exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpframe.__main__ import main
from dpframe.accounting.budget import resolve_ledger
from dpframe.schema import Dialect, read_with_schema


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    """A `;`-separated file (the separator is found from the header line)."""
    rng = np.random.default_rng(1)
    n = 1500
    path = tmp_path / "data.csv"
    pd.DataFrame(
        {"age": rng.integers(18, 90, n), "edu": rng.choice(["HS", "BA", "MA"], n), "smoker": rng.random(n) < 0.2}
    ).to_csv(path, index=False, sep=";")
    return path


@pytest.fixture
def schema(csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "schema.json"
    assert main(["schema", str(csv), "--out", str(path)]) == 0
    capsys.readouterr()
    return path


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


def spent_nothing(ledger: Path) -> bool:
    return not ledger.exists() or len(resolve_ledger(str(ledger)).budgets()) == 0


def test_schema_drafts_types_and_says_it_is_not_private(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "schema.json"
    assert main(["schema", str(csv), "--out", str(out)]) == 0
    assert "NOT a private release" in capsys.readouterr().err
    draft = json.loads(out.read_text(encoding="utf-8"))
    assert draft["private"] is False and "not a private release" in draft["note"].lower()
    assert draft["separator"] == ";" and draft["encoding"] == "utf-8"
    assert draft["columns"] == {"age": {"type": "integer"},
                                "edu": {"type": "category", "categories": ["BA", "HS", "MA"]},
                                "smoker": {"type": "boolean"}}
    # Without --out the draft goes to standard output, as the same JSON.
    assert main(["schema", str(csv)]) == 0
    assert json.loads(capsys.readouterr().out) == draft


def test_schema_draft_prefers_a_type_that_reads_every_value(tmp_path: Path) -> None:
    """A column of whole numbers with a few decimals is a float column: drafting it as integer read 1.7% of
    diamonds' table (57.5) as missing. The tolerance stays for stray marks that no type reads."""
    from dpframe.schema import infer_schema

    file = tmp_path / "d.csv"
    file.write_text("table,age\n" + "55,41\n" * 98 + "57.5,?\n" * 2, encoding="utf-8")
    columns = infer_schema(file)["columns"]
    assert columns["table"] == {"type": "float"}
    assert columns["age"]["type"] == "integer" and "2 value(s) do not parse as integer" in columns["age"]["note"]


def test_semicolon_file_is_read_by_its_header(csv: Path, schema: Path, seeded: None,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(csv), "--schema", str(schema), "--epsilon", "1"]) == 0
    out = capsys.readouterr().out
    for text in ["count", "lower bound", "upper bound", "top", "freq", "age", "edu", "smoker", "budget:",
                 "bounds for describe", "spent ε=1,"]:
        assert text in out


def test_schema_round_trip_reads_declared_types(csv: Path, schema: Path) -> None:
    document = json.loads(schema.read_text(encoding="utf-8"))
    frame, categories = read_with_schema(csv, document, Dialect(";", "utf-8"), ["age", "edu", "smoker"])
    assert [str(t) for t in frame.dtypes] == ["Int64", frame.dtypes["edu"].name, "boolean"]
    assert categories == {"edu": ["BA", "HS", "MA"]}
    assert frame["age"].equals(pd.read_csv(csv, sep=";")["age"].astype("Int64"))


def test_without_a_schema_it_refuses_and_points_to_dpframe_schema(
    csv: Path, ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["describe", str(csv), "--epsilon", "1", "--ledger", str(ledger)]) == 2
    assert "dpframe schema" in capsys.readouterr().err
    assert spent_nothing(ledger)


def _run_ages(tmp_path: Path, ages: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    path = tmp_path / f"ages{len(list(tmp_path.iterdir()))}.csv"
    path.write_text("age\n" + "\n".join(ages) + "\n", encoding="utf-8")
    schema = tmp_path / "ages.json"
    schema.write_text(json.dumps({"format": "dpframe-schema/1", "columns": {"age": {"type": "integer"}}}))
    code = main(["describe", str(path), "--schema", str(schema), "--epsilon", "1", "--format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else {"err": captured.err}


@pytest.mark.parametrize("stray", ["", "?", "4.5", "1e400"])
def test_a_stray_value_changes_neither_the_code_path_nor_the_grid(
    tmp_path: Path, stray: str, seeded: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """One missing or unparseable value in an integer column: same exit code, same releases, integer grid."""
    rng = np.random.default_rng(2)
    ages = [str(a) for a in rng.integers(18, 90, 2000)]
    clean_code, clean = _run_ages(tmp_path, ages, capsys)
    stray_code, with_stray = _run_ages(tmp_path, [*ages[:-1], stray], capsys)
    assert clean_code == stray_code == 0
    assert list(clean["columns"]["age"]) == list(with_stray["columns"]["age"])
    ledger_lines = [[(line["query"], line["mechanism"], line["epsilon"]) for line in run["ledger"]]
                    for run in (clean, with_stray)]
    assert ledger_lines[0] == ledger_lines[1]
    for run in (clean, with_stray):
        cells = run["columns"]["age"]
        quantiles = [cells[row]["value"] for row in ("25%", "50%", "75%")]
        assert all(value == round(value) for value in quantiles)  # the integer grid, whatever the stray value


def test_a_stray_value_reads_as_missing_in_the_declared_dtype(tmp_path: Path) -> None:
    path = tmp_path / "ages.csv"
    schema = {"columns": {"age": {"type": "integer"}, "w": {"type": "float"}, "seen": {"type": "datetime"}}}
    for stray in ["", "?", "x"]:
        path.write_text(f"age,w,seen\n41,2.5,2024-01-02\n{stray},{stray},{stray}\n", encoding="utf-8")
        frame, _ = read_with_schema(path, schema, Dialect(",", "utf-8"), ["age", "w", "seen"])
        assert [str(t) for t in frame.dtypes] == ["Int64", "float64", "datetime64[us]"]
        assert frame.iloc[1].isna().all()


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        ("missing-folder/report.html", "does not exist"),
        ("report.txt", "must end in .html or .htm"),
        ("data.html/", "is a folder"),
    ],
)
def test_output_path_errors_cost_nothing(
    csv: Path, schema: Path, ledger: Path, tmp_path: Path, out: str, expected: str,
    capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "data.html").mkdir()
    code = main(["describe", str(csv), "--schema", str(schema), "--epsilon", "1", "--delta", "1e-6",
                 "--ledger", str(ledger), "--out", str(tmp_path / out)])
    assert code == 2
    assert expected in capsys.readouterr().err
    assert spent_nothing(ledger)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a folder the user cannot write")
def test_read_only_folder_costs_nothing(csv: Path, schema: Path, ledger: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert main(["describe", str(csv), "--schema", str(schema), "--epsilon", "1",
                 "--ledger", str(ledger), "--out", str(locked / "r.html")]) == 2
    assert "permission denied" in capsys.readouterr().err
    assert spent_nothing(ledger)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("not json", "not valid JSON"),
        ('{"columns": {"age": {"type": "integer"}}}', '"format"'),
        ('{"format": "dpframe-schema/1", "columns": {"age": {"type": "int"}}}', "column 'age'"),
        ('{"format": "dpframe-schema/1", "columns": {"edu": {"type": "category"}}}', "categories"),
        ('{"format": "dpframe-schema/1", "columns": {"age": {"type": "integer"}}}', "missing [], not in the schema"),
    ],
)
def test_schema_errors_cost_nothing(csv: Path, ledger: Path, tmp_path: Path, document: str, expected: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    schema = tmp_path / "bad.json"
    schema.write_text(document, encoding="utf-8")
    assert main(["describe", str(csv), "--schema", str(schema), "--epsilon", "1", "--ledger", str(ledger)]) == 2
    assert expected in capsys.readouterr().err
    assert spent_nothing(ledger)


def test_columns_selects(csv: Path, schema: Path, seeded: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(csv), "--schema", str(schema), "--epsilon", "1", "--columns", "age", "smoker"]) == 0
    out = capsys.readouterr().out
    assert "edu" not in out and "smoker" in out


def test_out_writes_html_report(csv: Path, schema: Path, tmp_path: Path, seeded: None,
                                capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.html"
    assert main(["describe", str(csv), "--schema", str(schema), "--epsilon", "1", "--out", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<table" in page and "lower bound" in page and "Privacy ledger" in page
    assert "bounds for describe" in page and "histogram" in page
    assert "<svg" in page and ">count</text>" in page
    assert "wrote" in capsys.readouterr().out


def test_format_json_parses(csv: Path, schema: Path, tmp_path: Path, seeded: None,
                            capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.html"
    assert main(["describe", str(csv), "--schema", str(schema), "--epsilon", "1", "--format", "json",
                 "--out", str(report)]) == 0
    record = json.loads(capsys.readouterr().out)  # no NaN, no Infinity: strict JSON
    assert record["private"] is True and record["report"] == str(report)
    count = record["columns"]["age"]["count"]
    assert isinstance(count["value"], float) and count["lower"] < count["value"] < count["upper"]
    assert record["columns"]["age"]["top"] == {"value": None}
    assert record["columns"]["edu"]["top"]["value"] in {"BA", "HS", "MA"}
    assert len(record["histograms"]["age"]) == 10
    assert sum(line["epsilon"] for line in record["ledger"]) == pytest.approx(1)
    assert record["budget"]["spent"]["epsilon"] == pytest.approx(1)
    assert any("clipping bounds" in note for note in record["notes"])


def test_budget_list_and_show_as_json(csv: Path, schema: Path, ledger: Path, seeded: None,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(csv), "--schema", str(schema), "--epsilon", "1", "--name", "survey",
                 "--ledger", str(ledger)]) == 0
    capsys.readouterr()
    assert main(["budget", "list", "--ledger", str(ledger), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["budgets"]
    assert [(b["budget"], b["spent"]["epsilon"], b["lines"]) for b in listed] == [("survey", pytest.approx(1), 7)]
    assert main(["budget", "show", "survey", "--ledger", str(ledger), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["total"]["epsilon"] == 1 and len(shown["lines"]) == 7 and shown["events"]


def test_latin1_file_with_its_encoding_in_the_schema(tmp_path: Path, seeded: None,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "villes.csv"
    rows = "\n".join(["Genève", "Zürich", "Genève"] * 400)
    path.write_bytes(("ville\n" + rows + "\n").encode("latin-1"))  # an ASCII header over Latin-1 data
    assert main(["schema", str(path), "--out", str(tmp_path / "s.json")]) == 0
    draft = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert draft["encoding"] == "latin-1"
    assert draft["columns"]["ville"] == {"type": "category", "categories": ["Genève", "Zürich"]}
    assert main(["describe", str(path), "--schema", str(tmp_path / "s.json"), "--epsilon", "1"]) == 0
    assert "Genève" in capsys.readouterr().out


def test_malformed_rows_neither_fail_nor_warn(tmp_path: Path, seeded: None, capsys: pytest.CaptureFixture[str],
                                              recwarn: pytest.WarningsRecorder) -> None:
    path = tmp_path / "rows.csv"
    rows = "\n".join(f"{i % 50},{i % 3}" for i in range(1000))
    path.write_text(f'a,b\n1,2,3,4\n{rows}\n9\n"5,6\n7,8\n', encoding="utf-8")  # long, short, unterminated
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"format": "dpframe-schema/1",
                                  "columns": {"a": {"type": "integer"}, "b": {"type": "integer"}}}))
    assert main(["describe", str(path), "--schema", str(schema), "--epsilon", "1"]) == 0
    assert capsys.readouterr().err == "" and not recwarn.list


def test_bad_path_exits_2(tmp_path: Path, schema: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(tmp_path / "missing.csv"), "--schema", str(schema), "--epsilon", "1"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_argument_errors_exit_2(csv: Path, schema: Path, tmp_path: Path, ledger: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    base = ["describe", str(csv), "--schema", str(schema), "--epsilon", "1", "--ledger", str(ledger)]
    assert main([*base, "--columns", "nope"]) == 2
    assert "unknown columns ['nope']" in capsys.readouterr().err
    text = tmp_path / "text.json"
    text.write_text(json.dumps({"format": "dpframe-schema/1", "columns": {
        "age": {"type": "integer"}, "edu": {"type": "text"}, "smoker": {"type": "boolean"}}}))
    assert main(["describe", str(csv), "--schema", str(text), "--epsilon", "1", "--ledger", str(ledger)]) == 2
    assert "--delta" in capsys.readouterr().err  # text columns need a delta: said before anything is read
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["describe", str(empty), "--schema", str(schema), "--epsilon", "1", "--ledger", str(ledger)]) == 2
    assert "no header line" in capsys.readouterr().err
    assert spent_nothing(ledger)


def test_header_only_file_is_refused_by_protect(tmp_path: Path, schema: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    header_only = tmp_path / "header.csv"
    header_only.write_text("age;edu;smoker\n")
    assert main(["describe", str(header_only), "--schema", str(schema), "--epsilon", "1"]) == 1
    assert "empty" in capsys.readouterr().err


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path: Path, schema: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "data.parquet"
    path.write_bytes(b"")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert main(["describe", str(path), "--schema", str(schema), "--epsilon", "1"]) == 2
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


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import dpframe

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"dpframe {dpframe.__version__}"


@pytest.mark.parametrize("command", [[], ["demo"], ["schema"], ["describe"], ["synthesize"], ["budget"],
                                     ["budget", "list"], ["budget", "show"], ["budget", "export"]])
def test_help_has_no_raw_restructuredtext(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = capsys.readouterr().out
    assert "usage: dpframe" in text
    assert "``" not in text and ":class:" not in text and ":meth:" not in text and ":mod:" not in text


def test_demo_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "budget:" in capsys.readouterr().out


def test_separator_and_encoding_come_from_the_header_line_only(tmp_path: Path) -> None:
    from dpframe.schema import header

    path = tmp_path / "mixed.csv"
    path.write_bytes("\ufeffnom,ville\n".encode() + b"a;b;c;d,x\n" * 20)  # data rows full of ';'
    assert header(path) == (["nom", "ville"], Dialect(",", "utf-8-sig"))
    assert header(path, sep=";") == (["nom,ville"], Dialect(";", "utf-8-sig"))


def test_an_ambiguous_header_asks_for_sep(tmp_path: Path, schema: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "odd.csv"
    path.write_text("a;b,c\n1;2,3\n", encoding="utf-8")
    assert main(["schema", str(path)]) == 2
    assert "pass --sep" in capsys.readouterr().err
