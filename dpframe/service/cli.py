"""``dpframe serve CONFIG.toml`` runs the curator service; ``dpframe token`` makes an analyst's token (docs/server.md).

The module imports only the standard library, so the ``dpframe`` command works without the extras.
``serve`` checks the config, the schemas and the files' headers and opens the caps in the ledger before it
starts uvicorn, so a mistake is one line and exit code 2, not a worker's traceback. The server needs the
``server`` extra (``pip install 'dpframe[server]'``).
"""

from __future__ import annotations

import argparse
import copy
import ipaddress
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from dpframe.service.tokens import hash_token, new_token

LOCAL_HOSTS = ("localhost",)


def add_parsers(sub: Any) -> None:
    """Add the ``serve`` and ``token`` subcommands to the ``dpframe`` command's subparsers.

    >>> sub = argparse.ArgumentParser(prog="dpframe").add_subparsers()
    >>> add_parsers(sub)
    >>> args = sub.choices["serve"].parse_args(["service.toml", "--port", "9000"])
    >>> args.config, args.host, args.port, args.workers
    ('service.toml', '127.0.0.1', 9000, 1)
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
        from dpframe.service.server import CONFIG_VARIABLE, Service
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
    # The service's own log lines (config reloads, internal errors with their tracebacks) beside uvicorn's.
    logging = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    logging["loggers"]["dpframe.service"] = {"handlers": ["default"], "level": args.log_level.upper(),
                                             "propagate": False}
    uvicorn.run("dpframe.service.server:app_from_environment", factory=True, host=args.host, port=args.port,
                workers=args.workers, ssl_keyfile=args.ssl_keyfile, ssl_certfile=args.ssl_certfile,
                log_level=args.log_level, log_config=logging, server_header=False)
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``serve`` or ``token`` with parsed arguments; return the exit code."""
    return serve(args) if args.command == "serve" else token()
