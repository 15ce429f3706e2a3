"""``dpframe budget list | show NAME | export NAME --format csv|json``: the ledger from the command line.

``list`` prints every budget of the ledger (default: ``$DPFRAME_LEDGER`` or
the user's, see docs/ledger.md; ``--ledger PATH`` for another); ``show``
prints one budget, its events and its ledger lines; ``--format json`` prints
either as one JSON document. ``export`` writes a budget's lines as CSV or JSON
(to standard output, or ``--out FILE``). NAME is a budget's name, its id or a
unique start of its id. Reading the ledger spends nothing.

Exit codes: 0 on success, 1 for an unknown budget or an unreadable ledger, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO, cast

import pandas as pd

from dpframe.accounting.budget import Budget, resolve_ledger
from dpframe.accounting.ledger import Ledger
from dpframe.errors import DPFrameError


def add_parser(sub: Any) -> None:
    """Add the ``budget`` subcommand to the ``dpframe`` command's subparsers.

    >>> sub = argparse.ArgumentParser(prog="dpframe").add_subparsers()
    >>> add_parser(sub)
    >>> sub.choices["budget"].parse_args(["export", "census", "--format", "json"]).format
    'json'
    """
    parser = sub.add_parser("budget", help="list, show or export the budgets in the ledger",
                            description="The ledger from the command line: list its budgets, show one, or export "
                                        "one's lines as CSV or JSON. Reading the ledger spends nothing.")
    actions = parser.add_subparsers(dest="action", required=True)
    ledger_help = "the ledger file (default: $DPFRAME_LEDGER or the user's data directory)"
    format_help = "text tables (default) or one JSON document"
    listing = actions.add_parser("list", help="every budget: total, spent, remaining, lines")
    listing.add_argument("--ledger", help=ledger_help)
    listing.add_argument("--format", choices=("text", "json"), default="text", help=format_help)
    show = actions.add_parser("show", help="one budget: its totals, events and ledger lines")
    show.add_argument("name", help="the budget's name or id")
    show.add_argument("--ledger", help=ledger_help)
    show.add_argument("--format", choices=("text", "json"), default="text", help=format_help)
    export = actions.add_parser("export", help="one budget's ledger lines as CSV or JSON")
    export.add_argument("name", help="the budget's name or id")
    export.add_argument("--format", choices=("csv", "json"), default="csv", help="csv (default) or json")
    export.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    export.add_argument("--ledger", help=ledger_help)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``budget`` with parsed arguments; return the exit code.

    >>> import io, tempfile, os, pandas as pd, dpframe
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
    >>> p = pd.DataFrame({"x": [1, 2, 3]}).dp.protect(epsilon=1.0, name="demo", ledger=path)
    >>> _ = p.dp.count(epsilon=0.25)
    >>> out = io.StringIO()
    >>> run(argparse.Namespace(action="export", name="demo", format="json", out=None, ledger=path), out)
    0
    >>> [(line["query"], line["epsilon"]) for line in json.loads(out.getvalue())["lines"]]
    [('count', 0.25)]
    """
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        ledger = resolve_ledger(args.ledger)
        if args.action == "list":
            _list(ledger, args.format, out)
        elif args.action == "show":
            _show(Budget.open(args.name, ledger=ledger), args.format, out)
        else:
            _export(Budget.open(args.name, ledger=ledger), args.format, args.out, out)
    except (DPFrameError, OSError) as error:
        print(f"dpframe budget: {error}", file=err)
        return 1
    return 0


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table as JSON-ready records (times as ISO text, floats as plain numbers)."""
    return cast(list[dict[str, Any]], json.loads(frame.to_json(orient="records", date_format="iso")))


def _json(record: dict[str, Any], out: TextIO) -> None:
    out.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def _record(budget: Budget) -> dict[str, Any]:
    """One budget's totals and ledger lines (what ``export --format json`` and ``show --format json`` print)."""
    return {
        "budget": budget.name or budget.id, "id": budget.id, "kind": budget.kind,
        "total": budget.total.as_dict(), "spent": budget.spent.as_dict(), "remaining": budget.remaining.as_dict(),
        "lines": _records(budget.ledger),
    }


def _list(ledger: Ledger, kind: str, out: TextIO) -> None:
    budgets = ledger.budgets()
    if kind == "json":
        # Numbers, not the table's display texts: each budget's record, with its number of lines.
        records = [{**_record(Budget.open(id_, ledger=ledger)), "created": created, "lines": int(lines)}
                   for id_, created, lines in zip(budgets["id"], budgets["created"], budgets["lines"])]
        _json({"ledger": repr(ledger), "budgets": records}, out)
        return
    print(f"{ledger!r}: {len(budgets)} budget(s)", file=out)
    if len(budgets):
        with pd.option_context("display.width", 200, "display.max_colwidth", 40):
            print(budgets.drop(columns=["id"]).to_string(index=False), file=out)


def _show(budget: Budget, kind: str, out: TextIO) -> None:
    if kind == "json":
        _json({**_record(budget), "events": _records(budget.events)}, out)
        return
    print(repr(budget), file=out)
    print(f"id {budget.id} in {budget.store!r}", file=out)
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print("\nevents:\n" + budget.events.to_string(index=False), file=out)
        lines = budget.ledger
        print("\nledger lines:\n" + (lines.to_string(index=False) if len(lines) else "(none)"), file=out)


def _export(budget: Budget, kind: str, path: str | None, out: TextIO) -> None:
    lines = budget.ledger
    if kind == "csv":
        text = lines.to_csv(index=False)
    else:
        text = json.dumps(_record(budget), indent=2, ensure_ascii=False) + "\n"
    if path is None:
        out.write(text)
    else:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
