"""``dpframe describe data.csv --schema schema.json --epsilon 1``: a private summary of a file.

Shared by the file commands (``describe``, ``synthesize``): the arguments that
name the input (:func:`add_input_arguments`) and the checks made before
anything is spent (:func:`prepare_input`, :func:`check_output`). Every column
is read as the schema file says (:mod:`dpframe.schema`), never as the values
suggest, so the code path and the exit code do not depend on the private data.

``describe`` protects the file with a budget of ``--epsilon`` (and
``--delta``) and describes it privately (:func:`dpframe.report.describe.describe`).
Without ``--out`` the whole budget goes to the summary. With ``--out
report.html`` :data:`HISTOGRAM_SHARE` of it (``--histogram-share``) goes to one
histogram per numeric column (equal shares, ``--bins`` bins over the clipping
bounds the summary released, so no bounds are paid twice), the rest to the summary.

Exit codes: 0 on success; 2 for bad arguments, schema, input or output paths
(checked before anything is spent); 1 for a refusal after the file is read
(e.g. a budget that is already spent, or a file with no data rows).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, TextIO, cast

import numpy as np
import pandas as pd

from dpframe.accounting.budget import Budget
from dpframe.accounting.costs import exact
from dpframe.errors import DPFrameError
from dpframe.protection.frame import ProtectedFrame
from dpframe.report import require_report_dependencies
from dpframe.report.cells import formatted
from dpframe.results import Release, current_release
from dpframe.schema import Dialect, SchemaError, check_columns, header, load_schema, read_with_schema

HISTOGRAM_SHARE = Fraction(1, 5)
BINS = 10


class UserError(Exception):
    """A refusal after the file is read (e.g. the budget is spent): one line, exit code 1."""


class ArgumentProblem(Exception):
    """A bad argument, schema, input or output path, found before anything is spent: one line, exit code 2."""


def positive_epsilon(text: str) -> float:
    """An argparse type: a positive, finite epsilon.

    >>> positive_epsilon("0.5")
    0.5
    """
    try:
        value = float(text)
        exact(value, "epsilon")
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}") from None
    return value


def unit_delta(text: str) -> float:
    """An argparse type: a delta in [0, 1).

    >>> unit_delta("1e-6")
    1e-06
    """
    try:
        value = float(text)
        if not 0 <= exact(value, "delta", allow_zero=True) < 1:
            raise ValueError
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text!r}") from None
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
        if not 0 < exact(value, "share") < 1:
            raise ValueError
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be a number strictly between 0 and 1, got {text!r}") from None
    return value


def whole_number(lowest: int, highest: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in ``[lowest, highest]`` (no upper limit when None).

    >>> whole_number(1, 1000)("32")
    32
    >>> whole_number(1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be at least 1, got '0'
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < lowest or (highest is not None and value > highest):
            limits = f"at least {lowest}" if highest is None else f"between {lowest} and {highest}"
            raise argparse.ArgumentTypeError(f"must be {limits}, got {text!r}")
        return value

    return parse


def add_ledger_arguments(parser: argparse.ArgumentParser) -> None:
    """``--name`` and ``--ledger``: which budget in which ledger the file's analysis spends (docs/ledger.md)."""
    parser.add_argument("--name", default=None,
                        help="the budget's name in the ledger (default: found by the file's content fingerprint)")
    parser.add_argument("--ledger", default=None, metavar="PATH",
                        help="the ledger file (default: $DPFRAME_LEDGER or the user's data directory)")


def add_input_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """The data file, its ``--schema``, ``--sep``, ``--encoding`` and ``--columns`` (``verb``: what is done)."""
    parser.add_argument("path", help="a CSV file (or Parquet, if pyarrow is installed)")
    parser.add_argument("--schema", metavar="SCHEMA.json",
                        help="the reviewed schema: every column's type (draft one with `dpframe schema DATA`)")
    parser.add_argument("--columns", nargs="+", metavar="COLUMN", help=f"{verb} only these columns")
    parser.add_argument("--sep", default=None,
                        help="the CSV field separator (default: the schema's, else guessed from the header line)")
    parser.add_argument("--encoding", default=None,
                        help="the file's text encoding (default: the schema's, else guessed from the header line)")


def add_parser(sub: Any) -> None:
    """Add the ``describe`` subcommand to the ``dpframe`` command's subparsers.

    >>> sub = argparse.ArgumentParser(prog="dpframe").add_subparsers()
    >>> add_parser(sub)
    >>> sub.choices["describe"].parse_args(["in.csv", "--schema", "s.json", "--epsilon", "1"]).format
    'text'
    """
    parser = sub.add_parser(
        "describe",
        help="private summary statistics of a CSV or Parquet file",
        description="Protect a data file with a privacy budget and print its private describe() table "
        "and the privacy ledger; optionally write an HTML report with private histograms. Column types "
        "come from --schema (see `dpframe schema`).",
    )
    add_input_arguments(parser, "describe")
    parser.add_argument("--epsilon", type=positive_epsilon, required=True, help="the total privacy budget ε (e.g. 1)")
    parser.add_argument("--delta", type=unit_delta, default=0.0,
                        help="the budget's δ; a tenth of it selects the categories of text columns privately")
    add_ledger_arguments(parser)
    parser.add_argument("--out", metavar="REPORT.html", help="also write a self-contained HTML report")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="what is printed: text tables (default) or one JSON document")
    parser.add_argument("--bins", type=whole_number(1, 1000), default=BINS,
                        help=f"histogram bins in the report (default {BINS})")
    parser.add_argument("--histogram-share", type=_share, default=float(HISTOGRAM_SHARE),
                        help="the part of ε spent on the report's histograms (default 0.2; only with --out)")


@dataclass(frozen=True)
class Input:
    """A data file checked against its schema: what to read and how (nothing of the values yet)."""

    path: Path
    schema: dict[str, Any]
    dialect: Dialect
    columns: list[str]

    def kinds(self) -> dict[str, str]:
        """The schema type of each selected column."""
        return {c: str(self.schema["columns"][c]["type"]) for c in self.columns}

    def read(self) -> tuple[pd.DataFrame, dict[str, list[str]]]:
        """The typed frame and the declared categories (the one place the values are read)."""
        try:
            return read_with_schema(self.path, self.schema, self.dialect, self.columns)
        except OSError as error:
            raise UserError(f"cannot read {self.path}: {error.strerror or type(error).__name__}") from None


def prepare_path(path: str, what: str) -> Path:
    """An input path that exists, is a file and is readable (else :class:`ArgumentProblem`).

    >>> prepare_path("/no/such/data.csv", "data file")
    Traceback (most recent call last):
    ...
    dpframe.report.cli.ArgumentProblem: no such data file: /no/such/data.csv
    """
    file = Path(path)
    if not file.exists():
        raise ArgumentProblem(f"no such {what}: {path}")
    if not file.is_file():
        raise ArgumentProblem(f"the {what} {path} is not a file")
    if not os.access(file, os.R_OK):
        raise ArgumentProblem(f"the {what} {path} is not readable")
    return file


def prepare_input(args: argparse.Namespace, refused: Mapping[str, str] | None = None) -> Input:
    """Check the input file, its header and the schema, before anything is read or spent.

    ``refused`` maps schema types the command cannot handle to the reason. Raises
    :class:`ArgumentProblem` for a missing schema, an unreadable file, a header that does not
    match the schema, unknown ``--columns``, refused types and text columns without ``--delta``.
    """
    if args.schema is None:
        raise ArgumentProblem(
            "pass --schema SCHEMA.json: column types must come from a reviewed schema, not from the private "
            f"values. Draft one with `dpframe schema {args.path} --out schema.json`, review it, then pass "
            "--schema schema.json (docs/command-line.md)"
        )
    schema_file = prepare_path(args.schema, "schema file")
    data = prepare_path(args.path, "file")
    try:
        schema = load_schema(schema_file)
        names, dialect = header(data, args.sep or schema.get("separator") or None,
                                args.encoding or schema.get("encoding") or None)
        check_columns(schema, names, data)
    except SchemaError as error:
        raise ArgumentProblem(str(error)) from None
    except OSError as error:
        raise ArgumentProblem(f"cannot read {data}: {error.strerror or type(error).__name__}") from None
    columns = list(dict.fromkeys(args.columns)) if args.columns else names
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ArgumentProblem(f"unknown columns {unknown}; the file has {names}")
    prepared = Input(data, schema, dialect, columns)
    kinds = prepared.kinds()
    for kind, reason in (refused or {}).items():
        named = [c for c in columns if kinds[c] == kind]
        if named:
            raise ArgumentProblem(f"the {kind} columns {named} {reason}: leave them out with --columns")
    text = [c for c in columns if kinds[c] == "text"]
    if text and not args.delta:
        raise ArgumentProblem(
            f"the categories of the text columns {text} are not public, so they are selected privately, "
            "which needs a delta: pass --delta (e.g. 1e-6), declare them as categories in the schema, "
            "or leave them out with --columns"
        )
    return prepared


def check_output(path: str, suffixes: Sequence[str], inputs: Sequence[Path] = ()) -> Path:
    """An output path that can be written: its folder exists and is writable, its suffix is one of ``suffixes``,
    and it is none of the ``inputs``. Checked before anything is spent.

    >>> check_output("/no/such/folder/report.html", (".html",))
    Traceback (most recent call last):
    ...
    dpframe.report.cli.ArgumentProblem: cannot write /no/such/folder/report.html: the folder /no/such/folder does not exist
    >>> check_output("report.txt", (".html", ".htm"))
    Traceback (most recent call last):
    ...
    dpframe.report.cli.ArgumentProblem: cannot write report.txt: the name must end in .html or .htm
    """
    target = Path(path)
    if target.suffix.lower() not in suffixes:
        raise ArgumentProblem(f"cannot write {path}: the name must end in {' or '.join(suffixes)}")
    folder = target.parent
    if not folder.is_dir():
        raise ArgumentProblem(f"cannot write {path}: the folder {folder} does not exist")
    if target.is_dir():
        raise ArgumentProblem(f"cannot write {path}: it is a folder")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ArgumentProblem(f"cannot write {path}: permission denied")
    if any(target.resolve() == source.resolve() for source in inputs):
        raise ArgumentProblem(f"cannot write {path}: it is an input file")
    return target


def problem(command: str, error: BaseException, err: TextIO) -> int:
    """Print a one-line error for ``dpframe COMMAND``; return its exit code (2 before spending, else 1).

    >>> import io
    >>> problem("describe", ArgumentProblem("pass --schema"), io.StringIO())
    2
    """
    print(f"dpframe {command}: error: {message(error)}", file=err)
    return 2 if isinstance(error, ArgumentProblem) else 1


# What a command reports as one line (anything else is a bug and shows its traceback).
USER_ERRORS = (ArgumentProblem, UserError, DPFrameError, ValueError, TypeError, KeyError)


def message(error: BaseException) -> str:
    """An error as one line for the terminal (a KeyError without its quotes).

    >>> message(KeyError("unknown column 'x'"))
    "unknown column 'x'"
    """
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error)


def protect(frame: pd.DataFrame, categories: dict[str, list[str]], args: argparse.Namespace) -> ProtectedFrame:
    """The read frame protected with the command's budget (the library refuses an empty frame)."""
    import dpframe  # noqa: F401  (registers .dp)

    protected = frame.dp.protect(epsilon=args.epsilon, delta=args.delta, categories=categories or None,
                                 name=args.name, ledger=args.ledger)
    return cast(ProtectedFrame, protected)


def _number(value: Any) -> Any:
    """A released cell as plain JSON: a float, a text, or null for a missing one.

    >>> _number(np.float64(2.5)), _number(float("nan")), _number(np.int64(3)), _number("BA"), _number(np.True_)
    (2.5, None, 3.0, 'BA', True)
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value) if math.isfinite(value) else None
    return None if value is None or value is pd.NA or value is pd.NaT else str(value)


def _as_json(path: Path, summary: pd.DataFrame, histograms: Mapping[str, pd.Series[Any]], budget: Budget,
             notes: Sequence[str], report: str | None) -> dict[str, Any]:
    """The describe command's result as one JSON-ready record (every float a plain number, NaN as null)."""
    release = current_release(summary)
    columns: dict[str, Any] = {}
    for column in summary.columns:
        cells = {}
        for row in summary.index:
            cell: dict[str, Any] = {"value": _number(summary.loc[row, column])}
            if release is not None:
                lower = cast(pd.DataFrame, release.lower).loc[row, column]
                upper = cast(pd.DataFrame, release.upper).loc[row, column]
                if not (math.isnan(lower) or math.isnan(upper)):
                    cell.update(lower=_number(lower), upper=_number(upper))
            cells[str(row)] = cell
        columns[str(column)] = cells
    bars = {}
    for column, histogram in histograms.items():
        hist_release = cast(Release, histogram.attrs["dp"])
        bars[column] = [
            {"bin": str(label), "count": _number(count), "lower": _number(lower), "upper": _number(upper)}
            for label, count, lower, upper in zip(histogram.index, histogram,
                                                  cast(pd.Series, hist_release.lower), cast(pd.Series, hist_release.upper))
        ]
    return {
        "file": str(path), "private": True, "columns": columns, "histograms": bars,
        "budget": {"total": budget.total.as_dict(), "spent": budget.spent.as_dict(),
                   "remaining": budget.remaining.as_dict()},
        "ledger": json.loads(budget.ledger.to_json(orient="records", date_format="iso")),
        "notes": list(notes), "report": report,
    }


BOUNDS_NOTE = "lower/upper bound: the clipping bounds used, not the data's extremes"
REFUSED = {"datetime": "are not described (describe summarises numbers, categories and text)"}


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``describe`` with parsed arguments; return the exit code."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        source = prepare_input(args, REFUSED)
        target = check_output(args.out, (".html", ".htm"), [source.path]) if args.out else None
        if target is not None:  # the report's libraries are optional: say so before anything is spent
            try:
                require_report_dependencies()
            except ImportError as error:
                raise ArgumentProblem(f"--out: {error}; nothing was spent") from None
        frame, categories = source.read()
        protected = protect(frame, categories, args)
        total = exact(args.epsilon, "epsilon")
        numeric = [c for c, kind in source.kinds().items() if kind in ("integer", "float")]
        histogram_epsilon = total * exact(args.histogram_share, "share") if target and numeric else Fraction(0)
        summary = protected.dp.describe(epsilon=cast(float, total - histogram_epsilon))
        histograms: dict[str, pd.Series[Any]] = {}
        for column in numeric if histogram_epsilon else []:
            lo, hi = summary.loc["lower bound", column], summary.loc["upper bound", column]
            share = cast(float, histogram_epsilon / len(numeric))
            if source.kinds()[column] == "integer":
                # Whole-number bins [a, b) over the released bounds: the edges say which integers each holds.
                first, last = math.floor(cast(float, lo)), math.ceil(cast(float, hi))
                edges = np.unique(np.round(np.linspace(first, last + 1, min(args.bins, last + 1 - first) + 1)))
                histograms[str(column)] = protected[column].dp.histogram(bins=edges.tolist(), epsilon=share)
            else:
                histograms[str(column)] = protected[column].dp.histogram(bins=args.bins, bounds=(lo, hi),
                                                                         epsilon=share)
    except USER_ERRORS as error:
        return problem("describe", error, err)

    budget = protected.dp.budget
    notes = [BOUNDS_NOTE]
    if histograms:
        notes.append(
            f"Histograms: {float(histogram_epsilon):g} of ε ({args.histogram_share:g} of the budget), split "
            f"equally over {len(numeric)} numeric column(s); {args.bins} bins over each column's released "
            "clipping bounds; error bars are 95% intervals of the noise."
        )
    if target is not None:
        from dpframe.report.html import render

        page = render(f"Private summary of {source.path.name}", summary, budget, histograms, tuple(notes[1:]))
        try:
            target.write_text(page, encoding="utf-8")
        except OSError as error:
            print(f"dpframe describe: error: cannot write {args.out}: {error.strerror or type(error).__name__}",
                  file=err)
            return 1
    if args.format == "json":
        record = _as_json(source.path, summary, histograms, budget, notes, args.out)
        out.write(json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
        return 0
    print(f"Private summary of {args.path} ({budget.total}):", file=out)
    with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_colwidth", 40):
        print(formatted(summary).to_string(), file=out)
        print(f"\n{BOUNDS_NOTE}; 95% intervals in the HTML report (--out) or --format json", file=out)
        print(f"\nbudget: {budget}", file=out)
        shown = ["query", "columns", "mechanism", "epsilon", "delta", "rule"]
        print(budget.ledger[shown].to_string(index=False), file=out)
    if target is not None:
        print(f"\nwrote {args.out}", file=out)
    return 0
