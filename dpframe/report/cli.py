"""``dpframe describe data.csv --epsilon 1``: a private summary of a file, printed or written as HTML.

The file is read, protected with a budget of ``--epsilon`` (and ``--delta``),
and described privately (:func:`dpframe.report.describe.describe`). Without
``--out`` the whole budget goes to the summary. With ``--out report.html``
:data:`HISTOGRAM_SHARE` of it (``--histogram-share``) goes to one histogram per
numeric column (equal shares, ``--bins`` bins over the clipping bounds the
summary released, so no bounds are paid twice), the rest to the summary.

Exit codes: 0 on success, 1 for file or data errors (missing or unreadable
file, unknown columns, unsupported dtypes), 2 for bad arguments (argparse).
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path
from collections.abc import Callable
from typing import Any, TextIO, cast

import pandas as pd

from dpframe.accounting.costs import exact
from dpframe.errors import DPFrameError
from dpframe.report import require_report_dependencies
from dpframe.report.cells import formatted

HISTOGRAM_SHARE = Fraction(1, 5)
BINS = 10


class UserError(Exception):
    """A problem with the input the user gave: reported as one line, exit code 1."""


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


def add_parser(sub: Any) -> None:
    """Add the ``describe`` subcommand to the ``dpframe`` command's subparsers."""
    parser = sub.add_parser(
        "describe",
        help="private summary statistics of a CSV or Parquet file",
        description="Protect a data file with a privacy budget and print its private describe() table "
        "and the privacy ledger; optionally write an HTML report with private histograms.",
    )
    parser.add_argument("path", help="a CSV file (or Parquet, if pyarrow is installed)")
    parser.add_argument("--epsilon", type=positive_epsilon, required=True, help="the total privacy budget ε (e.g. 1)")
    parser.add_argument("--delta", type=unit_delta, default=0.0,
                        help="the budget's δ; a tenth of it selects the categories of text columns privately")
    parser.add_argument("--columns", nargs="+", metavar="COLUMN", help="describe only these columns")
    parser.add_argument("--sep", default=",", help="the CSV field separator (default ',')")
    add_ledger_arguments(parser)
    parser.add_argument("--out", metavar="REPORT.html", help="also write a self-contained HTML report")
    parser.add_argument("--bins", type=whole_number(1, 1000), default=BINS,
                        help=f"histogram bins in the report (default {BINS})")
    parser.add_argument("--histogram-share", type=_share, default=float(HISTOGRAM_SHARE),
                        help="the part of ε spent on the report's histograms (default 0.2; only with --out)")


def read(path: str, sep: str) -> pd.DataFrame:
    """Read a CSV or Parquet file, turning every failure into a :class:`UserError`."""
    file = Path(path)
    if not file.exists():
        raise UserError(f"no such file: {path}")
    if not file.is_file():
        raise UserError(f"not a file: {path}")
    try:
        if file.suffix.lower() in (".parquet", ".pq"):
            try:
                return pd.read_parquet(file)
            except ImportError:
                raise UserError(
                    "reading Parquet needs pyarrow (pip install pyarrow); or convert the file to CSV"
                ) from None
        return pd.read_csv(file, sep=sep)
    except UserError:
        raise
    except pd.errors.EmptyDataError:
        raise UserError(f"{path} is empty") from None
    except pd.errors.ParserError as error:
        raise UserError(f"cannot parse {path} as CSV with separator {sep!r}: {error}".strip()) from None
    except UnicodeDecodeError:
        raise UserError(f"cannot read {path}: it is not UTF-8 text") from None
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read {path}: {type(error).__name__}") from None


def select_columns(frame: pd.DataFrame, columns: list[str] | None) -> pd.DataFrame:
    """The ``--columns`` the user asked for (all when None), or a :class:`UserError` naming unknown ones.

    >>> list(select_columns(pd.DataFrame({"a": [1], "b": [2]}), ["b", "b"]).columns)
    ['b']
    """
    if not columns:
        return frame
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise UserError(f"unknown columns {missing}; the file has {list(map(str, frame.columns))}")
    return frame[list(dict.fromkeys(columns))]


def require_delta_for_text(frame: pd.DataFrame, delta: float) -> None:
    """Text columns' categories are selected privately, which needs delta: say so in command-line terms.

    >>> require_delta_for_text(pd.DataFrame({"city": ["Oslo"]}), 0.0)
    Traceback (most recent call last):
    ...
    dpframe.report.cli.UserError: the categories of the text columns ['city'] are not public, so they are selected privately, which needs a delta: pass --delta (e.g. 1e-6), or leave them out with --columns
    """
    text = [str(c) for c in frame.columns
            if pd.api.types.is_object_dtype(frame[c].dtype) or pd.api.types.is_string_dtype(frame[c].dtype)]
    if text and not delta:
        raise UserError(
            f"the categories of the text columns {text} are not public, so they are selected privately, "
            "which needs a delta: pass --delta (e.g. 1e-6), or leave them out with --columns"
        )


# What a command reports as one line with exit code 1 (anything else is a bug and shows its traceback).
USER_ERRORS = (UserError, DPFrameError, ValueError, TypeError, KeyError)


def message(error: BaseException) -> str:
    """An error as one line for the terminal (a KeyError without its quotes).

    >>> message(KeyError("unknown column 'x'"))
    "unknown column 'x'"
    """
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``describe`` with parsed arguments; return the exit code."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    import dpframe  # noqa: F401  (registers .dp)

    try:
        frame = read(args.path, args.sep)
        frame = select_columns(frame, args.columns)
        if frame.shape[1] == 0:
            raise UserError(f"{args.path} has no columns")
        if len(frame) == 0:
            raise UserError(f"{args.path} is empty: it has no data rows")
        require_delta_for_text(frame, args.delta)
        if args.out:  # the report's libraries are optional: say so before anything is spent
            try:
                require_report_dependencies()
            except ImportError as error:
                raise UserError(f"--out: {error}; nothing was spent") from None
        protected = frame.dp.protect(epsilon=args.epsilon, delta=args.delta, name=args.name, ledger=args.ledger)
        total = exact(args.epsilon, "epsilon")
        numeric = [c for c in frame.columns
                   if pd.api.types.is_numeric_dtype(frame[c].dtype) and not pd.api.types.is_bool_dtype(frame[c].dtype)]
        histogram_epsilon = total * exact(args.histogram_share, "share") if args.out and numeric else Fraction(0)
        summary = protected.dp.describe(epsilon=cast(float, total - histogram_epsilon))
        histograms: dict[str, pd.Series[Any]] = {}
        for column in numeric if histogram_epsilon else []:
            lo, hi = summary.loc["lower bound", column], summary.loc["upper bound", column]
            histograms[str(column)] = protected[column].dp.histogram(
                bins=args.bins, bounds=(lo, hi), epsilon=cast(float, histogram_epsilon / len(numeric))
            )
    except USER_ERRORS as error:
        print(f"dpframe describe: error: {message(error)}", file=err)
        return 1

    budget = protected.dp.budget
    print(f"Private summary of {args.path} ({budget.total}):", file=out)
    with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_colwidth", 40):
        print(formatted(summary).to_string(), file=out)
        print("\nlower/upper bound: the clipping bounds used, not the data's extremes; 95% intervals in the "
              "HTML report (--out)", file=out)
        print(f"\nbudget: {budget}", file=out)
        shown = ["query", "columns", "mechanism", "epsilon", "delta", "rule"]
        print(budget.ledger[shown].to_string(index=False), file=out)
    if args.out:
        notes = (
            f"Histograms: {float(histogram_epsilon):g} of ε ({args.histogram_share:g} of the budget), split "
            f"equally over {len(numeric)} numeric column(s); {args.bins} bins over each column's released "
            "clipping bounds; error bars are 95% intervals of the noise.",
        ) if histograms else ()
        from dpframe.report.html import render

        page = render(f"Private summary of {Path(args.path).name}", summary, budget, histograms, notes)
        try:
            Path(args.out).write_text(page, encoding="utf-8")
        except OSError as error:
            print(f"dpframe describe: error: cannot write {args.out}: {error.strerror or type(error).__name__}",
                  file=err)
            return 1
        print(f"\nwrote {args.out}", file=out)
    return 0
