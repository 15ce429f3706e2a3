"""``dpframe synthesize data.csv --schema schema.json --epsilon 1 --out synthetic.csv``: a private synthetic copy.

The file is read as its schema declares (CSV, or Parquet with pyarrow),
protected with a budget of ``--epsilon`` (and ``--delta``), and the whole
budget goes to ``p.dp.synthesize``. The synthetic frame is written to
``--out`` (CSV, or Parquet by its suffix) and the ledger printed. A progress
bar appears on standard error for runs longer than a second.

Exit codes: 0 on success; 2 for bad arguments, schema, input or output paths
(checked before anything is spent); 1 for a refusal after the file is read.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any, TextIO

from dpframe.report.cli import (
    USER_ERRORS,
    ArgumentProblem,
    add_input_arguments,
    add_ledger_arguments,
    check_output,
    positive_epsilon,
    prepare_input,
    problem,
    protect,
    unit_delta,
    whole_number,
)
from dpframe.schema import PARQUET
from dpframe.synthesis.synthesize import METHODS


def add_parser(sub: Any) -> None:
    """Add the ``synthesize`` subcommand to the ``dpframe`` command's subparsers.

    >>> sub = argparse.ArgumentParser(prog="dpframe").add_subparsers()
    >>> add_parser(sub)
    >>> sub.choices["synthesize"].parse_args(["in.csv", "--epsilon", "1", "--out", "syn.csv"]).method
    'aim'
    """
    parser = sub.add_parser(
        "synthesize",
        help="write a differentially private synthetic copy of a CSV/Parquet file",
        description="Protect a data file with a privacy budget, spend all of it on a synthetic copy (AIM by "
        "default) and write that copy, which is free to share; print the ledger. Column types come from "
        "--schema (see `dpframe schema`).",
    )
    add_input_arguments(parser, "synthesize")
    parser.add_argument("--epsilon", type=positive_epsilon, required=True, help="the privacy budget ε (e.g. 1)")
    parser.add_argument("--delta", type=unit_delta, default=0.0,
                        help="the budget's δ (e.g. 1e-6); needed for text columns and the Gaussian noise of aim/mst")
    parser.add_argument("--out", required=True, metavar="SYNTHETIC.csv",
                        help="where to write the synthetic data (.csv, or .parquet with pyarrow)")
    parser.add_argument("--method", choices=METHODS, default="aim", help="aim (default), mst or marginals")
    parser.add_argument("--rows", type=whole_number(1), default=None, help="rows to generate (default: a noisy count)")
    add_ledger_arguments(parser)


def _writable_parquet(path: Path) -> None:
    if path.suffix.lower() in PARQUET:
        if importlib.util.find_spec("pyarrow") is None:
            raise ArgumentProblem(f"cannot write {path}: writing Parquet needs pyarrow (pip install pyarrow)")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``synthesize`` with parsed arguments; return the exit code.

    >>> import io, json, tempfile, pandas as pd
    >>> folder = Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"x": range(1000)}).to_csv(folder / "in.csv", index=False)
    >>> _ = (folder / "schema.json").write_text(json.dumps(
    ...     {"format": "dpframe-schema/1", "columns": {"x": {"type": "integer"}}}))
    >>> args = argparse.Namespace(path=str(folder / "in.csv"), schema=str(folder / "schema.json"), sep=None,
    ...                           encoding=None, columns=None, epsilon=1.0, delta=0.0, method="mst", rows=5,
    ...                           out=str(folder / "syn.csv"), name=None, ledger=":memory:")
    >>> run(args, out=io.StringIO(), err=io.StringIO()), len(pd.read_csv(folder / "syn.csv"))
    (0, 5)
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        source = prepare_input(args)
        target = check_output(args.out, (".csv", *PARQUET), [source.path])
        _writable_parquet(target)
        frame, categories = source.read()
        protected = protect(frame, categories, args)
        synthetic = protected.dp.synthesize(
            epsilon=args.epsilon, delta=args.delta or None, method=args.method, n=args.rows
        )
    except USER_ERRORS as error:
        return problem("synthesize", error, err)
    try:
        if target.suffix.lower() in PARQUET:
            synthetic.to_parquet(target)
        else:
            synthetic.to_csv(target, index=False, sep=source.dialect.sep)
    except OSError as error:
        print(f"dpframe synthesize: error: cannot write {args.out}: {error.strerror or type(error).__name__}",
              file=err)
        return 1
    budget = protected.dp.budget
    print(f"wrote {len(synthetic):,} synthetic rows of {synthetic.shape[1]} columns to {args.out} "
          f"({budget.spent})", file=out)
    print(budget.ledger[["query", "columns", "mechanism", "epsilon", "delta"]].to_string(index=False), file=out)
    return 0
