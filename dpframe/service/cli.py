"""``dpframe serve CONFIG.toml`` runs the curator service; ``dpframe token`` makes an analyst's token (docs/server.md).

``dpframe example-service DIR`` writes a dataset, its schema, a config and two analysts' tokens to try it with;
``dpframe remote-demo URL --token-file FILE`` is an analyst running the README's example against a server;
``dpframe audit CONFIG --out report.html`` writes the curator's page (caps, spending, audit log) as a file.

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
    _add_audit_parser(sub)


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


def serve(args: argparse.Namespace, err: TextIO | None = None) -> int:
    """``dpframe serve``: check the config, then run uvicorn until stopped. Exit code 2 for a config problem."""
    err = sys.stderr if err is None else err
    try:
        import uvicorn

        from dpframe.service.config import ConfigError, oversubscribed
        from dpframe.service.server import CONFIG_VARIABLE, SESSION_KEY_VARIABLE, Service
    except ImportError as error:
        print(f"dpframe serve: error: the server needs the server extra: pip install 'dpframe[server]' "
              f"({error.name} is missing)", file=err)
        return 2
    if (args.ssl_keyfile is None) != (args.ssl_certfile is None):
        print("dpframe serve: error: give both --ssl-keyfile and --ssl-certfile, or neither", file=err)
        return 2
    if args.workers < 1:
        print("dpframe serve: error: --workers must be at least 1", file=err)
        return 2
    config_path = Path(args.config).resolve()
    try:
        service = Service(config_path)  # every check a worker makes at its start, once, with a clear message
    except ConfigError as error:
        print(f"dpframe serve: error: {error}", file=err)
        return 2
    for warning in oversubscribed(service.config):
        print(f"dpframe serve: warning: {warning}", file=err)
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


def _write_new(path: Path, text: str, mode: int = 0o644) -> None:
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
    _write_new(schema, json.dumps(draft, indent=2, ensure_ascii=False) + "\n")
    analysts = ""
    for name, path in tokens.items():
        secret = new_token()
        _write_new(path, secret + "\n", 0o600)  # the analyst's secret: readable by its owner only
        analysts += (f'\n[analysts.{name}]\ntoken_sha256 = "{hash_token(secret)}"\n'
                     "budgets = { census = { epsilon = 3.5, delta = 1e-6 } }\n")
    _write_new(config, f"""# An example curator service, written by `dpframe example-service` (docs/server.md).
ledger = "ledger.sqlite"                      # the persistent ledger, beside this file

[datasets.census]
path = "census.csv"                           # {len(frame):,} generated rows (dpframe.__main__.readme_census)
schema = "census.schema.json"                 # the reviewed schema: column types and declared categories
total = {{ epsilon = 8.0, delta = 2e-6 }}       # the cap over all analysts of this dataset
{analysts}""")
    print(f"wrote {data} ({len(frame):,} generated rows, {len(frame.columns)} columns)", file=out)
    print(f"wrote {schema} (the column types and declared categories analysts are shown)", file=out)
    print(f"wrote {config} (ledger {folder / 'ledger.sqlite'}; cap ε=8, δ=2e-6 over the analysts "
          f"{' and '.join(tokens)}, each ε=3.5, δ=1e-6)", file=out)
    print(f"wrote {' and '.join(map(str, tokens.values()))} (the analysts' tokens, readable by you only; the config "
          "holds only their SHA-256)", file=out)
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
        print(f"dpframe audit: error: the report needs the server extra: pip install 'dpframe[server]' "
              f"({error.name} is missing)", file=err)
        return 2
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
    """Run ``serve``, ``token``, ``example-service``, ``remote-demo`` or ``audit`` with parsed arguments; return the
    exit code."""
    if args.command == "serve":
        return serve(args)
    if args.command == "audit":
        return audit(args)
    if args.command == "example-service":
        return example_service(Path(args.folder))
    if args.command == "remote-demo":
        return remote_demo(args)
    return token()
