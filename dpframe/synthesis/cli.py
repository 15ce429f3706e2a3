"""``dpframe synthesize data.csv --epsilon 1 --out synthetic.csv``: a private synthetic copy of a file.

The file is read (CSV, or Parquet with pyarrow), protected with a budget of
``--epsilon`` (and ``--delta``), and the whole budget goes to
:meth:`~dpframe.accessor.DataFrameAccessor.synthesize`. The synthetic frame is
written to ``--out`` (CSV, or Parquet by its suffix) and the ledger printed. A
progress bar appears on standard error for runs longer than a second.

Exit codes: 0 on success, 1 for file or data errors, 2 for bad arguments (argparse).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from dpframe.report.cli import (
    USER_ERRORS,
    UserError,
    add_ledger_arguments,
    message,
    positive_epsilon,
    read,
    require_delta_for_text,
    select_columns,
    unit_delta,
    whole_number,
)
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
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("path", help="a CSV file (or Parquet, if pyarrow is installed)")
    parser.add_argument("--epsilon", type=positive_epsilon, required=True, help="the privacy budget ε (e.g. 1)")
    parser.add_argument("--delta", type=unit_delta, default=0.0,
                        help="the budget's δ (e.g. 1e-6); needed for text columns and the Gaussian noise of aim/mst")
    parser.add_argument("--out", required=True, metavar="SYNTHETIC.csv", help="where to write the synthetic data")
    parser.add_argument("--method", choices=METHODS, default="aim", help="aim (default), mst or marginals")
    parser.add_argument("--rows", type=whole_number(1), default=None, help="rows to generate (default: a noisy count)")
    parser.add_argument("--columns", nargs="+", metavar="COLUMN", help="synthesize only these columns")
    parser.add_argument("--sep", default=",", help="the CSV field separator (default ',')")
    add_ledger_arguments(parser)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``synthesize`` with parsed arguments; return the exit code.

    >>> import io, tempfile, pandas as pd
    >>> folder = Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"x": range(1000)}).to_csv(folder / "in.csv", index=False)
    >>> args = argparse.Namespace(path=str(folder / "in.csv"), sep=",", columns=None, epsilon=1.0, delta=0.0,
    ...                           method="mst", rows=5, out=str(folder / "syn.csv"), name=None, ledger=None)
    >>> run(args, out=io.StringIO(), err=io.StringIO()), len(pd.read_csv(folder / "syn.csv"))
    (0, 5)
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    import dpframe  # noqa: F401  (registers .dp)

    try:
        frame = read(args.path, args.sep)
        if len(frame) == 0 or frame.shape[1] == 0:
            raise UserError(f"{args.path} has no data")
        frame = select_columns(frame, args.columns)
        require_delta_for_text(frame, args.delta)
        protected = frame.dp.protect(epsilon=args.epsilon, delta=args.delta, name=args.name, ledger=args.ledger)
        synthetic = protected.dp.synthesize(
            epsilon=args.epsilon, delta=args.delta or None, method=args.method, n=args.rows
        )
    except USER_ERRORS as error:
        print(f"dpframe synthesize: error: {message(error)}", file=err)
        return 1
    target = Path(args.out)
    try:
        if target.suffix.lower() in (".parquet", ".pq"):
            synthetic.to_parquet(target)
        else:
            synthetic.to_csv(target, index=False, sep=args.sep)
    except ImportError:
        print("dpframe synthesize: error: writing Parquet needs pyarrow (pip install pyarrow)", file=err)
        return 1
    except OSError as error:
        print(f"dpframe synthesize: error: cannot write {args.out}: {error.strerror or type(error).__name__}",
              file=err)
        return 1
    budget = protected.dp.budget
    print(f"wrote {len(synthetic):,} synthetic rows of {synthetic.shape[1]} columns to {args.out} "
          f"({budget.spent})", file=out)
    print(budget.ledger[["query", "columns", "mechanism", "epsilon", "delta"]].to_string(index=False), file=out)
    return 0
