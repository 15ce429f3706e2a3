"""``dpframe serve CONFIG.toml`` runs the curator service; ``dpframe token`` makes an analyst's token (docs/server.md).

``dpframe example-service DIR`` writes a dataset, its schema, a config and two analysts' tokens to try it with;
``dpframe remote-demo URL --token-file FILE`` is an analyst running the README's example against a server;
``dpframe audit CONFIG --out report.html`` writes the curator's page (caps, spending, audit log) as a file.
``dpframe serve --check CONFIG``, ``dpframe analyst add|rotate|remove|budget`` and ``dpframe cap extend`` are the
curator's operations (:mod:`dpframe.service.operations`); ``dpframe mock CONFIG`` makes the datasets' mocks.

The module imports only the standard library, so the ``dpframe`` command works without the extras.
``serve`` checks the config, the schemas and the files' headers and opens the caps in the ledger before it
starts uvicorn, so a mistake is one line and exit code 2, not a worker's traceback. The server needs the
``server`` extra (``pip install 'dpframe[server]'``).
"""

from __future__ import annotations

import argparse
import ast
import copy
import ipaddress
import json
import os
import secrets
import sys
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from dpframe.service.tokens import hash_token, new_token

LOCAL_HOSTS = ("localhost",)
# The example's analysts: each gets the README example's budget (epsilon=3.5, delta=1e-6), under a cap for both.
EXAMPLE_ANALYSTS = ("alice", "bob")
# The README's example after the line that makes p (tests/test_readme.py keeps the two identical), as an analyst
# types it: the remote demo runs and prints each line as it stands, so that what it shows is what the README says.
README_EXAMPLE = (
    'p.dp.count(epsilon=0.1)',
    'p[p["age"] >= 40].dp.count(epsilon=0.1)',
    'p["age"].mean()',
    'p["age"].dp.mean(bounds=(0, 125), epsilon=0.2)',
    'p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.2)',
    'p["education"].dp.value_counts(epsilon=0.2)',
    'p.dp.crosstab("education", "sex", epsilon=0.2)',
    'p.dp.groupby("sex").mean("age", bounds=(0, 125), epsilon=0.2)',
    'p["capital-gain"].dp.mean(epsilon=0.3)',
    'p["age"].dp.quantile([0.25, 0.5, 0.75], epsilon=0.3)',
    'p["occupation"].dp.top_k(k=3, epsilon=0.3)',
    'p.dp.describe(epsilon=0.5)',
    'syn = p.dp.synthesize(epsilon=0.4)',
    'p.dp.sample(0.1).dp.count(epsilon=0.5)',
    'p.dp.budget',
)


def add_parsers(sub: Any) -> None:
    """Add the ``serve`` and ``token`` subcommands to the ``dpframe`` command's subparsers.

    >>> sub = argparse.ArgumentParser(prog="dpframe").add_subparsers()
    >>> add_parsers(sub)
    >>> args = sub.choices["serve"].parse_args(["service.toml", "--port", "9000"])
    >>> args.config, args.host, args.port, args.workers
    ('service.toml', '127.0.0.1', 9000, 1)
    >>> sub.choices["remote-demo"].parse_args(["http://127.0.0.1:8000", "--token-file", "alice.token"]).dataset
    'census'
    """
    serve = sub.add_parser(
        "serve", help="serve datasets to analysts over HTTP (the curator service; needs dpframe[server])",
        description="Run the curator service: analysts connect with dpframe.connect(URL, token=...) and query "
        "the config's datasets under their budgets; they never receive the data. The config's analysts are "
        "read again when the file changes (revoke a token by removing its analyst); changes to the ledger, "
        "datasets, caps or limits need a restart. Documentation: docs/server.md.")
    serve.add_argument("config", help="the service's TOML config (docs/server.md)")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this "
                       "machine only; 0.0.0.0 for every interface, with TLS)")
    serve.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1); each loads the "
                       "datasets it is asked about once, and all share the ledger")
    serve.add_argument("--ssl-keyfile", metavar="KEY.pem", help="TLS: the server's private key (with --ssl-certfile)")
    serve.add_argument("--ssl-certfile", metavar="CERT.pem", help="TLS: the server's certificate chain")
    serve.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"),
                       help="uvicorn's and the service's log level (default info)")
    serve.add_argument("--check", action="store_true", help="check the config (paths, schemas, token hashes, the "
                       "ledger's caps and budgets, mocks) and print what would be served, without serving: exit 0 "
                       "if it can be served, 2 with every problem otherwise")
    mock = sub.add_parser(
        "mock", help="make the datasets' mocks: synthetic data analysts develop on, charged once to each cap",
        description="Make the mock of each dataset of the config that offers one (its `mock` table; by default at a "
        "tenth of its cap) and has none yet: synthetic data made with dpframe's synthesize under an allotment of the "
        "dataset's cap, kept in the ledger and sent free to every analyst of the dataset (p.mock()). Prints what "
        "each cost. Documentation: docs/server.md.")
    mock.add_argument("config", help="the service's TOML config")
    mock.add_argument("datasets", nargs="*", metavar="DATASET", help="only these datasets (default: every one that "
                      "offers a mock)")
    mock.add_argument("--again", action="store_true", help="make a new mock where one is kept already (charged "
                      "again; it replaces the old one for every analyst)")
    sub.add_parser(
        "token", help="print a new random analyst token and the config line to paste",
        description="Print a new random 256-bit token (give it to the analyst, privately) and its token_sha256 "
        "line for the analyst's table of the service's config. The token itself is stored nowhere.")
    example = sub.add_parser(
        "example-service", help="write an example curator service to try: data, schema, config, analysts' tokens",
        description="Write to DIR a generated census-like dataset (census.csv), its reviewed schema, a config "
        "(service.toml: a ledger file in DIR, a cap, two analysts) and the analysts' tokens (alice.token, "
        "bob.token, readable by you only). Then `dpframe serve DIR/service.toml`, and in a second shell "
        "`dpframe remote-demo http://127.0.0.1:8000 --token-file DIR/alice.token`.")
    example.add_argument("folder", metavar="DIR", help="the folder to write to (made if missing; its files must be new)")
    remote = sub.add_parser(
        "remote-demo", help="as an analyst, run the README's example on a curator's server (needs dpframe[client])",
        description="Connect to a curator's server (dpframe serve) with a token and run the README's example on a "
        "dataset, printing each line and its answer: the analyst's code is the README's, with p made by "
        "dpframe.connect(URL, token=...).dataset(NAME) instead of df.dp.protect(...).")
    remote.add_argument("url", help="the server's address, e.g. http://127.0.0.1:8000 (plain http only to localhost)")
    remote.add_argument("--token-file", required=True, metavar="FILE",
                        help="a file holding the analyst's token (not an argument: others can read a command line)")
    remote.add_argument("--dataset", default="census", help="the dataset to query (default census)")
    add_operation_parsers(sub)
    _add_audit_parser(sub)


def add_operation_parsers(sub: Any) -> None:
    """Add the curator's operations, ``analyst add|rotate|remove|budget`` and ``cap extend`` (docs/server.md).

    >>> sub = argparse.ArgumentParser(prog="dpframe").add_subparsers()
    >>> add_operation_parsers(sub)
    >>> args = sub.choices["analyst"].parse_args(["add", "service.toml", "dave", "--budget", "census=1,1e-7"])
    >>> args.operation, args.name, args.budget, args.token_file
    ('add', 'dave', ['census=1,1e-7'], None)
    >>> args = sub.choices["cap"].parse_args(["extend", "service.toml", "--cap", "people", "--epsilon", "3"])
    >>> args.cap, args.epsilon, args.delta
    ('people', 3.0, None)
    """
    token_file = "a new file to write the token to, readable by you only (default: print it once)"
    budget_help = ("DATASET=EPSILON[,DELTA] for an (epsilon, delta) budget (delta 0 if not given), or "
                   "DATASET=rho:RHO for a zCDP one: the same kind as the dataset's cap")
    analyst = sub.add_parser(
        "analyst", help="add an analyst, rotate its token, remove it, or raise its budgets (edits the config)",
        description="Edit the service's config (comments kept; validated before it replaces the file, in one step) "
        "and record the operation in the ledger. A running server reads its analysts again when the file changes: "
        "no restart. Documentation: docs/server.md, 'Operating the service'.")
    actions = analyst.add_subparsers(dest="operation", required=True, metavar="OPERATION")
    add = actions.add_parser("add", help="a new analyst with a new token and its budgets",
                             description="Add [analysts.NAME] with a new token's SHA-256 and the budgets given; the "
                             "token is written to --token-file or printed once (pass it to the analyst privately).")
    add.add_argument("config", help="the service's TOML config")
    add.add_argument("name", help="the analyst's name (letters, digits, '_', '.', '-')")
    add.add_argument("--budget", action="append", required=True, metavar="DATASET=AMOUNT", help=budget_help +
                     "; repeat it for each dataset")
    add.add_argument("--token-file", metavar="FILE", help=token_file)
    rotate = actions.add_parser("rotate", help="a new token for an analyst (its old one stops working)",
                                description="Replace the analyst's token_sha256 with a new token's; a running "
                                "server refuses the old token from its next request.")
    rotate.add_argument("config", help="the service's TOML config")
    rotate.add_argument("name", help="the analyst's name")
    rotate.add_argument("--token-file", metavar="FILE", help=token_file)
    remove = actions.add_parser("remove", help="revoke an analyst (its spending stays in the ledger)",
                                description="Remove [analysts.NAME]: its token is refused from its next request. Its "
                                "spending stays in the ledger; added again under the same name, it finds it there.")
    remove.add_argument("config", help="the service's TOML config")
    remove.add_argument("name", help="the analyst's name")
    budget = actions.add_parser("budget", help="raise an analyst's budgets (never lower them), or add one",
                                description="Raise the analyst's budget on each dataset given (or give it one on a "
                                "new dataset); a running server raises its allotment in the ledger at its next "
                                "request. A budget is never lowered.")
    budget.add_argument("config", help="the service's TOML config")
    budget.add_argument("name", help="the analyst's name")
    budget.add_argument("budgets", nargs="+", metavar="DATASET=AMOUNT", help=budget_help)
    cap = sub.add_parser("cap", help="extend a cap (in the config and the ledger at once)",
                         description="Raise a cap's total in the config and in the ledger at once (never lower it): "
                         "a running server's charges see the new total from the next one, without a restart. "
                         "Recorded in the ledger.")
    cap_actions = cap.add_subparsers(dest="operation", required=True, metavar="OPERATION")
    extend = cap_actions.add_parser("extend", help="raise a cap's total",
                                    description="Raise the total of a dataset's own cap (--dataset) or of a shared "
                                    "[caps.NAME] (--cap): --epsilon with --delta (not given: the cap's delta is "
                                    "kept), or --rho for a zCDP cap.")
    extend.add_argument("config", help="the service's TOML config")
    which = extend.add_mutually_exclusive_group(required=True)
    which.add_argument("--dataset", metavar="NAME", help="a dataset with its own cap (total = ... in its table)")
    which.add_argument("--cap", metavar="NAME", help="a shared cap ([caps.NAME])")
    amount = extend.add_mutually_exclusive_group(required=True)
    amount.add_argument("--epsilon", type=float, help="the new epsilon total")
    amount.add_argument("--rho", type=float, help="the new rho total (a zCDP cap)")
    extend.add_argument("--delta", type=float, help="the new delta total (with --epsilon; default: the cap's)")




def _add_audit_parser(sub: Any) -> None:
    """The ``audit`` subcommand: the curator's page as a static file.

    >>> sub = argparse.ArgumentParser(prog="dpframe").add_subparsers()
    >>> _add_audit_parser(sub)
    >>> args = sub.choices["audit"].parse_args(["service.toml", "--out", "r.html", "--since", "2026-01-31"])
    >>> args.config, args.out, args.since, args.analyst, args.limit
    ('service.toml', 'r.html', datetime.date(2026, 1, 31), '', 1000)
    """
    audit_parser = sub.add_parser(
        "audit", help="write the curator's page (caps, analysts' spending, the audit log) as an HTML file",
        description="Read the service's config and its ledger (never written) and write the curator's page as a "
        "static HTML file: each cap and what is left, each analyst's budget and spending over time, the audit log "
        "(filtered as the options say), the service's events and the mocks. It holds every analyst's plans: keep it "
        "as private as the ledger. Documentation: docs/server.md.")
    audit_parser.add_argument("config", help="the service's TOML config (docs/server.md)")
    audit_parser.add_argument("--out", required=True, metavar="REPORT.html", help="the HTML file to write")
    audit_parser.add_argument("--analyst", default="", help="only this analyst's audit rows")
    audit_parser.add_argument("--dataset", default="", help="only this dataset's audit rows")
    audit_parser.add_argument("--since", type=date.fromisoformat, metavar="YYYY-MM-DD",
                              help="only audit rows from this day on (UTC)")
    audit_parser.add_argument("--until", type=date.fromisoformat, metavar="YYYY-MM-DD",
                              help="only audit rows up to this day, included (UTC)")
    audit_parser.add_argument("--plan", default="", metavar="TEXT", help="only audit rows whose plan contains TEXT")
    audit_parser.add_argument("--limit", type=int, default=1000, help="at most this many audit rows, newest first "
                              "(default 1000; the page says how many more match)")


def token(out: TextIO | None = None) -> int:
    """``dpframe token``: a new random token and the line of the config that accepts it.

    >>> import io
    >>> out = io.StringIO()
    >>> token(out)
    0
    >>> lines = out.getvalue().splitlines()
    >>> lines[3] == f'token_sha256 = "{hash_token(lines[1])}"', len(lines[1])
    (True, 43)
    """
    out = sys.stdout if out is None else out
    secret = new_token()
    print("# Give this token to the analyst over a private channel (it is shown once and stored nowhere):", file=out)
    print(secret, file=out)
    print("# Paste this line into the analyst's [analysts.NAME] table of the service's config:", file=out)
    print(f'token_sha256 = "{hash_token(secret)}"', file=out)
    return 0


def _needs_server_extra(command: str, what: str, error: ImportError, err: TextIO) -> int:
    """Say that ``what`` needs the server extra, naming the missing module; the exit code, 2.

    >>> import io
    >>> err = io.StringIO()
    >>> _needs_server_extra("dpframe mock", "making mocks", ImportError(name="tomlkit"), err)
    2
    >>> print(err.getvalue().strip())
    dpframe mock: error: making mocks needs the server extra: pip install 'dpframe[server]' (tomlkit is missing)
    """
    print(f"{command}: error: {what} needs the server extra: pip install 'dpframe[server]' ({error.name} is missing)",
          file=err)
    return 2


def _is_local(host: str) -> bool:
    """Whether ``host`` is reached from this machine only (then plain HTTP is not on a network).

    >>> _is_local("127.0.0.1"), _is_local("localhost"), _is_local("::1"), _is_local("0.0.0.0")
    (True, True, True, False)
    """
    if host in LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``dpframe serve``: check the config (:func:`dpframe.service.operations.check_service`), then run uvicorn until
    stopped; with ``--check``, print what would be served instead. Exit code 2 for a config problem."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        import uvicorn

        from dpframe.service.config import ConfigError
        from dpframe.service.operations import check_service
        from dpframe.service.server import CONFIG_VARIABLE, SESSION_KEY_VARIABLE, Service
    except ImportError as error:
        return _needs_server_extra("dpframe serve", "the server", error, err)
    if (args.ssl_keyfile is None) != (args.ssl_certfile is None):
        print("dpframe serve: error: give both --ssl-keyfile and --ssl-certfile, or neither", file=err)
        return 2
    if args.workers < 1:
        print("dpframe serve: error: --workers must be at least 1", file=err)
        return 2
    config_path = Path(args.config).resolve()
    check = check_service(config_path)
    for problem in check.problems:
        print(f"dpframe serve: error: {problem}", file=err)
    for warning in check.warnings:
        print(f"dpframe serve: warning: {warning}", file=err)
    if check.problems:
        return 2
    if args.check:
        print(f"{config_path} can be served:", *check.summary, sep="\n  ", file=out)
        return 0
    try:
        Service(config_path)  # every check a worker makes at its start, once, with a clear message
    except ConfigError as error:  # changed since the check
        print(f"dpframe serve: error: {error}", file=err)
        return 2
    if args.ssl_certfile is None and not _is_local(args.host):
        print(f"dpframe serve: warning: serving plain HTTP on {args.host}: tokens and answers cross the network "
              "in clear. Pass --ssl-keyfile and --ssl-certfile (docs/server.md)", file=err)
    os.environ[CONFIG_VARIABLE] = str(config_path)  # the workers' app factory reads it (they inherit it)
    os.environ[SESSION_KEY_VARIABLE] = secrets.token_hex(32)  # one key for every worker's curator sessions
    # The service's own log lines (config reloads, internal errors with their tracebacks) beside uvicorn's.
    logging = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    logging["loggers"]["dpframe.service"] = {"handlers": ["default"], "level": args.log_level.upper(),
                                             "propagate": False}
    uvicorn.run("dpframe.service.server:app_from_environment", factory=True, host=args.host, port=args.port,
                workers=args.workers, ssl_keyfile=args.ssl_keyfile, ssl_certfile=args.ssl_certfile,
                log_level=args.log_level, log_config=logging, server_header=False)
    return 0


def make_mocks(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``dpframe mock CONFIG [DATASET ...]``: make the mocks the config offers and the ledger does not keep yet.

    Exit code 2 for a config problem or a dataset that is not the config's or offers no mock (nothing is made);
    1 if a mock could not be made (a spent cap: nothing was charged for it), after making the others.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        from dpframe.errors import DPFrameError
        from dpframe.service.config import ConfigError
        from dpframe.service.mock import make_mock
        from dpframe.service.server import Service
    except ImportError as error:
        return _needs_server_extra("dpframe mock", "making mocks", error, err)
    try:
        service = Service(Path(args.config).resolve())
    except ConfigError as error:
        print(f"dpframe mock: error: {error}", file=err)
        return 2
    config = service.config
    offering = [name for name in config.datasets if config.mock_total(name) is not None]
    unknown = [name for name in args.datasets if name not in config.datasets]
    refused = [name for name in args.datasets if name in config.datasets and name not in offering]
    if unknown or refused:
        problems = ([f"no dataset {', '.join(unknown)} in the config (datasets: {', '.join(config.datasets)})"]
                    if unknown else []) + ([f"{', '.join(refused)} offer(s) no mock (mock = false)"] if refused else [])
        print(f"dpframe mock: error: {'; '.join(problems)}", file=err)
        return 2
    status = 0
    for name in args.datasets or offering:
        if service.ledger.kept_mock(name) is not None and not args.again:
            print(f"the mock of {name} is kept already (made again, and charged again, with --again)", file=out)
            continue
        try:
            print(make_mock(service, name), file=out)
        except DPFrameError as error:
            print(f"dpframe mock: error: the mock of {name} was not made: {type(error).__name__}: {error}", file=err)
            status = 1
    return status


def write_new(path: Path, text: str, mode: int = 0o644) -> None:
    """Write a new file (never over an existing one) with permissions ``mode`` from its creation on."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)


def example_service(folder: Path, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``dpframe example-service DIR``: an example service's files, and the commands that serve and query it.

    The data is :func:`dpframe.__main__.readme_census` (generated); its schema is drafted by
    :func:`dpframe.schema.infer_schema` and marked reviewed (its categories are the generator's, public by
    construction). Each analyst's budget is the README example's, and the cap covers both.

    >>> import io, tempfile
    >>> folder = Path(tempfile.mkdtemp()) / "example"
    >>> out = io.StringIO()
    >>> example_service(folder, out)
    0
    >>> sorted(path.name for path in folder.iterdir())
    ['alice.token', 'bob.token', 'census.csv', 'census.schema.json', 'service.toml']
    >>> f'token_sha256 = "{hash_token((folder / "alice.token").read_text().strip())}"' in (folder / "service.toml").read_text()
    True
    >>> oct((folder / "alice.token").stat().st_mode & 0o777), out.getvalue().splitlines()[-1].split()[:2]
    ('0o600', ['dpframe', 'remote-demo'])
    >>> example_service(folder, io.StringIO(), io.StringIO())  # never over an earlier example (its ledger, tokens)
    2
    """
    from dpframe.__main__ import readme_census
    from dpframe.schema import infer_schema

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    data, schema, config = folder / "census.csv", folder / "census.schema.json", folder / "service.toml"
    tokens = {name: folder / f"{name}.token" for name in EXAMPLE_ANALYSTS}
    written = [data, schema, config, *tokens.values(), folder / "ledger.sqlite"]
    existing = [path.name for path in written if path.exists()]
    if existing:
        print(f"dpframe example-service: error: {folder} already holds {', '.join(existing)}: give a new folder "
              "(or delete that one: its ledger keeps the analysts' spending)", file=err)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    frame = readme_census()
    frame.to_csv(data, index=False)
    draft = infer_schema(data)
    draft["note"] = ("drafted by `dpframe schema` from generated data and reviewed: the categories are the "
                     "generator's own lists, public by construction")
    write_new(schema, json.dumps(draft, indent=2, ensure_ascii=False) + "\n")
    analysts = ""
    for name, path in tokens.items():
        secret = new_token()
        write_new(path, secret + "\n", 0o600)  # the analyst's secret: readable by its owner only
        analysts += (f'\n[analysts.{name}]\ntoken_sha256 = "{hash_token(secret)}"\n'
                     "budgets = { census = { epsilon = 3.5, delta = 1e-6 } }\n")
    write_new(config, f"""# An example curator service, written by `dpframe example-service` (docs/server.md).
ledger = "ledger.sqlite"                      # the persistent ledger, beside this file

[datasets.census]
path = "census.csv"                           # {len(frame):,} generated rows (dpframe.__main__.readme_census)
schema = "census.schema.json"                 # the reviewed schema: column types and declared categories
total = {{ epsilon = 8.0, delta = 3e-6 }}       # the cap over all analysts of this dataset and its mock
mock = {{ epsilon = 0.5, delta = 5e-7 }}        # synthetic data for the analysts, made once by `dpframe mock`
{analysts}""")
    print(f"wrote {data} ({len(frame):,} generated rows, {len(frame.columns)} columns)", file=out)
    print(f"wrote {schema} (the column types and declared categories analysts are shown)", file=out)
    print(f"wrote {config} (ledger {folder / 'ledger.sqlite'}; cap ε=8, δ=3e-6 over the analysts "
          f"{' and '.join(tokens)}, each ε=3.5, δ=1e-6, and the mock, ε=0.5, δ=5e-7)", file=out)
    print(f"wrote {' and '.join(map(str, tokens.values()))} (the analysts' tokens, readable by you only; the config "
          "holds only their SHA-256)", file=out)
    print("Make the mock analysts may develop on (synthetic data, charged once to the cap):", file=out)
    print(f"  dpframe mock {config}", file=out)
    print("Serve it (Ctrl-C stops it):", file=out)
    print(f"  dpframe serve {config}", file=out)
    print(f"then, in a second shell, run the README's example as {EXAMPLE_ANALYSTS[0]}:", file=out)
    print(f"  dpframe remote-demo http://127.0.0.1:8000 --token-file {tokens[EXAMPLE_ANALYSTS[0]]}", file=out)
    return 0


def run_example(p: Any, out: TextIO | None = None) -> None:
    """Run :data:`README_EXAMPLE` on ``p`` (a remote or a local protected frame), printing each line and its answer.

    A refusal or a spent budget is printed (``RefusedError: ...``) and the example goes on: no answer was released
    and nothing was charged for it. Then the budget's ledger lines, as ``dpframe demo`` prints them.
    """
    import pandas as pd

    from dpframe.__main__ import show_ledger
    from dpframe.errors import DPFrameError

    out = sys.stdout if out is None else out
    names: dict[str, Any] = {"p": p}
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        for line in README_EXAMPLE:
            print(f">>> {line}", file=out)
            statement = ast.parse(line).body[0]
            try:
                if isinstance(statement, ast.Assign):  # `syn = ...`: run it, then show what it bound
                    exec(line, names)  # noqa: S102  (a line of README_EXAMPLE, this module's constant)
                    answer = names[ast.unparse(statement.targets[0])]
                else:
                    answer = eval(line, names)  # noqa: S307  (a line of README_EXAMPLE, this module's constant)
                # Shown inside the try: a remote step is sent when it is first shown, and refused then.
                shown = repr(answer)
            except DPFrameError as error:
                shown = f"{type(error).__name__}: {error}"
            print(shown, file=out)
    print("\nThe budget's ledger lines:", file=out)
    show_ledger(p.dp.budget.ledger, out)


def remote_demo(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``dpframe remote-demo URL --token-file FILE``: the README's example, run by an analyst on a curator's server."""
    import dpframe
    from dpframe.errors import RemoteError

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        secret = Path(args.token_file).read_text(encoding="utf-8").strip()
        p = dpframe.connect(args.url, token=secret).dataset(args.dataset)
    except OSError as error:
        print(f"dpframe remote-demo: error: cannot read the token file {args.token_file}: "
              f"{error.strerror or type(error).__name__}", file=err)
        return 2
    except (ImportError, ValueError) as error:  # no client extra, or not a URL the client may use
        print(f"dpframe remote-demo: error: {error}", file=err)
        return 2
    except RemoteError as error:  # no server there, or it refused the token or the dataset
        print(f"dpframe remote-demo: error: {error}", file=err)
        return 1
    print(f">>> p = dpframe.connect({args.url!r}, token=...).dataset({args.dataset!r})", file=out)
    try:
        run_example(p, out)
    except RemoteError as error:  # the server went away
        print(f"dpframe remote-demo: error: {error}", file=err)
        return 1
    return 0


def operation(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``dpframe analyst ...`` or ``dpframe cap extend``: edit the config and record it in the ledger
    (:mod:`dpframe.service.operations`). Exit code 2 for an operation refused (nothing changed)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    command = f"dpframe {args.command} {args.operation}"
    try:
        from dpframe.errors import LedgerError
        from dpframe.service import operations
        from dpframe.service.config import ConfigError
    except ImportError as error:
        return _needs_server_extra(command, "editing the config", error, err)
    try:
        if args.command == "cap":
            operations.extend_cap(args.config, args.dataset, args.cap, args.epsilon, args.delta, args.rho, out, err)
        elif args.operation == "add":
            operations.add_analyst(args.config, args.name, args.budget, args.token_file, out, err)
        elif args.operation == "rotate":
            operations.rotate_token(args.config, args.name, args.token_file, out)
        elif args.operation == "remove":
            operations.remove_analyst(args.config, args.name, out)
        else:
            operations.raise_budget(args.config, args.name, args.budgets, out, err)
    except (ConfigError, operations.OperationError, LedgerError) as error:
        print(f"{command}: error: {error}", file=err)
        return 2
    return 0


def audit(args: argparse.Namespace, err: TextIO | None = None) -> int:
    """``dpframe audit CONFIG --out REPORT.html``: the curator's page as a file. Exit code 2 for a config problem, a
    missing ledger or a bad option."""
    err = sys.stderr if err is None else err
    try:
        from dpframe.accounting.ledger import Ledger
        from dpframe.errors import LedgerError
        from dpframe.service import curator
        from dpframe.service.config import ConfigError, load_config
    except ImportError as error:
        return _needs_server_extra("dpframe audit", "the report", error, err)
    if not 1 <= args.limit <= curator.MAX_ROWS:
        print(f"dpframe audit: error: --limit must be from 1 to {curator.MAX_ROWS}", file=err)
        return 2
    try:
        config = load_config(args.config)
    except ConfigError as error:
        print(f"dpframe audit: error: {error}", file=err)
        return 2
    if not Path(config.ledger).is_file():  # opening it would create an empty one
        print(f"dpframe audit: error: the config's ledger {config.ledger} does not exist (has the service run?)",
              file=err)
        return 2
    filters = curator.Filters(analyst=args.analyst, dataset=args.dataset, since=args.since, until=args.until,
                              plan=args.plan, limit=args.limit)
    try:
        view = curator.curator_view(config, Ledger.at(config.ledger), filters)
        Path(args.out).write_text(curator.render(view, served=False), encoding="utf-8")
    except (LedgerError, OSError) as error:  # not a ledger, or the report cannot be written there
        print(f"dpframe audit: error: {error}", file=err)
        return 2
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``serve``, ``token``, ``example-service``, ``remote-demo``, ``mock``, ``analyst``, ``cap`` or ``audit``
    with parsed arguments; return the exit code."""
    if args.command in ("analyst", "cap"):
        return operation(args)
    if args.command == "serve":
        return serve(args)
    if args.command == "audit":
        return audit(args)
    if args.command == "example-service":
        return example_service(Path(args.folder))
    if args.command == "remote-demo":
        return remote_demo(args)
    if args.command == "mock":
        return make_mocks(args)
    return token()
