"""The curator's HTTP service: a FastAPI app that answers analysts' plans on protected data it alone holds.

Endpoints (every one needs ``Authorization: Bearer TOKEN``; docs/server.md):

- ``GET /v1/datasets``: the names of the analyst's datasets.
- ``GET /v1/datasets/{name}``: a dataset's public schema (each column's type, and the categories the
  schema declares), its privacy unit, and the analyst's budget on it (total, spent, remaining).
- ``GET /v1/datasets/{name}/mock``: the dataset's mock (:mod:`dpframe.service.mock`), synthetic data the curator
  made once and charged to the dataset's cap; free.
- ``POST /v1/datasets/{name}/run``: a plan (:mod:`dpframe.service.plan`) replayed on the analyst's
  protected frame (:mod:`dpframe.service.replay`); ``{"value": ..., "warnings": [...]}`` in the wire format
  (:mod:`dpframe.service.wire`). Each request id is answered once (kept in the ledger).

The curator's page, ``GET /curator`` (:mod:`dpframe.service.curator`), opens with the curator's token only (the
config's ``[curator]``; a 404 without one): as a bearer token, or through its login form (``POST /curator/login``),
which sets a signed session cookie (``POST /curator/logout`` drops it). No analyst's token opens it.

Errors are ``{"error": {"type": ..., "message": ...}}``: 401 without a valid token, 404 for a dataset
that is not the analyst's (the same as one that does not exist), 413 for a body over the limit, 429 over
the analyst's rate, 409 for a request id that cannot be answered again, 503 while the config does not
validate or a dataset cannot be read, 400 for the errors dpframe names (refusals, an exhausted budget,
argument errors: their messages are built from the schema and the arguments, never the data), and 500
with a generic message for anything else (the traceback goes to the server's log only).

Each worker process loads a dataset once, when it is first queried, and keeps one protected frame per
(analyst, dataset), protected under the analyst's allotment of the dataset's cap, so an analyst's
release state (remembered releases) persists between its requests to that worker.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pandas as pd
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dpframe import errors
from dpframe.accounting.budget import Budget
from dpframe.accounting.ledger import Ledger
from dpframe.errors import DPFrameError, LedgerError, ProposalRefusedError
from dpframe.protection.frame import ProtectedFrame
from dpframe.schema import header, read_with_schema
from dpframe.service import curator, replay, wire
from dpframe.service.config import Config, ConfigError, Total, check_datasets, load_config, lowered
from dpframe.service.mock import mock_answer
from dpframe.service.plan import Plan
from dpframe.service.tokens import matching_name

__all__ = ["CONFIG_VARIABLE", "SESSION_KEY_VARIABLE", "ServiceError", "app_from_environment", "create_app"]

# The config path of the app that `dpframe serve` starts in each uvicorn worker (an import string needs it).
CONFIG_VARIABLE = "DPFRAME_SERVICE_CONFIG"
# The key that signs the curator's session cookies: `dpframe serve` draws one per start and its workers inherit it,
# so a session opened in one worker is valid in all. Without it (an app made by create_app alone) each process
# draws its own.
SESSION_KEY_VARIABLE = "DPFRAME_CURATOR_SESSION_KEY"
# The curator's session cookie; its path keeps it off every analyst's endpoint.
SESSION_COOKIE = "dpframe_curator"
# Attempts at the curator's token (login form or bearer header) per client address: one a second, bursts of 10;
# the addresses of the last 10 s are kept past LOGIN_ADDRESSES (RateLimiter.max_keys).
LOGIN_RATE, LOGIN_BURST, LOGIN_ADDRESSES = 1.0, 10, 10_000
ANOTHER_SITE = "a form on another site cannot sign in or out here: use this page's own"
# Schema fields that are public: the column's type, its declared categories, a datetime's parse format.
# Anything else (notes written by `dpframe schema` quote values of the data) is never sent.
PUBLIC_SCHEMA_FIELDS = ("type", "categories", "format")

# The warnings sent with an answer: dpframe's own, whose messages come from the schema, the arguments and
# released values. Another library's (numpy's "invalid value encountered", say) could depend on the data.
FORWARDED_WARNINGS = frozenset(name for name, value in vars(errors).items()
                               if isinstance(value, type) and issubclass(value, Warning))

log = logging.getLogger("dpframe.service")


class ServiceError(Exception):
    """An answer other than 200: its HTTP status and the ``{"error": {"type", "message"}}`` body."""

    def __init__(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers

    def response(self) -> JSONResponse:
        """The JSON response."""
        return error_response(self.status, self.kind, self.message, self.headers)


def error_response(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """``{"error": {"type": kind, "message": message}}`` with the status."""
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)


INTERNAL = ServiceError(500, "InternalError", "the server failed to answer; the curator can find why in its log")
UNAUTHENTICATED = "send the analyst's token as the header 'Authorization: Bearer TOKEN'"


# -- errors of a run: which pass through to the analyst ----------------------------------------------------------
# The exceptions whose messages pass through to the analyst (most specific first), besides dpframe's own.
PASSED_THROUGH: tuple[type[Exception], ...] = (KeyError, IndexError, AttributeError, NotImplementedError, TypeError,
                                               ValueError)


def mapped_error(error: Exception) -> ServiceError:
    """The answer to an exception raised while running a plan: a 400 naming it, or a 500 with a generic message.

    dpframe's errors, and the argument errors its protected objects raise, carry messages built from the
    schema and the arguments, never from the data (dpframe.errors), so they pass through, as the nearest of
    :data:`PASSED_THROUGH` for another library's subclass. A LedgerError names budgets and ledger ids, and
    anything else is unexpected: logged here with its traceback, never sent.

    >>> from dpframe.errors import RefusedError, BudgetExceededError
    >>> [(e.status, e.kind) for e in map(mapped_error, [RefusedError("no"), BudgetExceededError("spent"),
    ...                                                  KeyError("'x' is not a column"), ZeroDivisionError()])]
    [(400, 'RefusedError'), (400, 'BudgetExceededError'), (400, 'KeyError'), (500, 'InternalError')]
    """
    if isinstance(error, ValidationError):
        return ServiceError(400, "ValueError", f"the plan is not valid: {_validation_message(error)}")
    if isinstance(error, sqlite3.DatabaseError):  # the ledger's transaction failed, so it wrote nothing
        log.error("the ledger cannot record a charge", exc_info=error)
        return ServiceError(503, "ServiceUnavailable", "the server cannot record charges in its ledger now (for "
                            "example, its disk is full): nothing was charged and nothing was released; try again "
                            "later")
    if not isinstance(error, LedgerError):
        if isinstance(error, DPFrameError):
            return ServiceError(400, type(error).__name__, str(error))
        for kind in PASSED_THROUGH:
            if isinstance(error, kind):
                text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
                return ServiceError(400, kind.__name__, text)
    log.error("internal error while running a plan", exc_info=error)
    return INTERNAL


def _validation_message(error: ValidationError) -> str:
    problems = error.errors(include_url=False, include_input=False)
    shown = [f"{'.'.join(map(str, p['loc'])) or 'body'}: {p['msg']}" for p in problems[:5]]
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return "; ".join(shown) + more


# -- limits ----------------------------------------------------------------------------------------------------------
class BodyLimit:
    """ASGI middleware: a 413 for a request body over ``limit`` bytes, by its Content-Length and as it streams in.

    The body is read here (at most ``limit`` bytes are held) and handed to the app whole, so no handler ever
    starts on a body that is too large.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()  # after the body: the disconnect, when it comes
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, "PayloadTooLarge", f"the request body is over the server's limit of "
                                  f"{self.limit} bytes", {"Connection": "close"})
        await response(scope, receive, send)


class RateLimiter:
    """A token bucket per analyst: ``rate`` requests per second on average, bursts of up to ``burst``.

    Every request of an authenticated analyst takes a token, whatever its outcome (refusals and errors too),
    so probing with refused plans is as slow as asking questions. Per worker process.

    >>> limiter = RateLimiter(rate=1.0, burst=2)
    >>> [limiter.wait("alice", now=0.0) for _ in range(3)]
    [0.0, 0.0, 1.0]
    >>> limiter.wait("alice", now=1.0), limiter.wait("bob", now=1.0)
    (0.0, 0.0)

    Keyed by something an attacker can vary (a client address), ``max_keys`` bounds the memory: past it, the
    buckets that have refilled (the same as no bucket) are forgotten, so what is kept is the keys of the last
    ``burst / rate`` seconds.

    >>> by_address = RateLimiter(rate=1.0, burst=2, max_keys=2)
    >>> [by_address.wait(address, now=0.0) for address in ("a", "b")], by_address.wait("c", now=5.0), len(by_address)
    ([0.0, 0.0], 0.0, 1)
    """

    def __init__(self, rate: float, burst: int, max_keys: int | None = None) -> None:
        self.rate, self.burst, self.max_keys = rate, burst, max_keys
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._buckets)

    def wait(self, who: str, now: float | None = None) -> float:
        """Take a token for ``who``: 0 if one was there, else the seconds until there is one (nothing taken)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if self.max_keys is not None and len(self._buckets) >= self.max_keys and who not in self._buckets:
                self._buckets = {key: (tokens, then) for key, (tokens, then) in self._buckets.items()
                                 if tokens + (now - then) * self.rate < self.burst}
            tokens, then = self._buckets.get(who, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * self.rate)
            if tokens < 1:
                self._buckets[who] = (tokens, now)
                return (1 - tokens) / self.rate
            self._buckets[who] = (tokens - 1, now)
            return 0.0


def forwarded(warned: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    """The warnings of a run that go to its analyst (:data:`FORWARDED_WARNINGS`); the others go to the log only.

    >>> forwarded((("ClippingWarning", "mean of 'x': ..."), ("RuntimeWarning", "invalid value encountered in log")))
    [{'category': 'ClippingWarning', 'message': "mean of 'x': ..."}]
    """
    for category, message in warned:
        if category not in FORWARDED_WARNINGS:
            log.warning("a run's %s, not sent to its analyst: %s", category, message)
    return [{"category": category, "message": message} for category, message in warned
            if category in FORWARDED_WARNINGS]


@contextmanager
def curators_warnings() -> Iterator[None]:
    """Log the warnings raised inside (``protect()``'s: a delta of at least 1/n is a fact about n) for the curator,
    in a block no analyst's run records (:func:`dpframe.service.replay.caught_warnings`)."""
    with replay.caught_warnings() as caught:
        yield
    for warned in caught:
        log.warning("%s: %s", warned.category.__name__, warned.message)


class Analysts:
    """The analysts of the config file, read again whenever the file changes (tokens revoked without a restart).

    Only ``[analysts]`` and ``[curator]`` are taken from a changed file (a new curator's token ends every
    session of the curator's page), and caps' totals that the ledger already has (``dpframe cap extend``
    raises both at once; every charge reads the cap's total from the ledger); a change to anything else is
    logged as needing a restart. A file that no longer validates closes the service (503) until it does: a
    half-finished revocation must not leave the old tokens working.
    """

    def __init__(self, path: Path, config: Config, ledger: Ledger) -> None:
        self.path, self._startup, self._config, self._ledger = path, config, config, ledger
        self._seen = self._signature()
        self._broken: str | None = None
        self._lock = threading.Lock()

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            status = self.path.stat()
        except OSError:
            return None
        return status.st_mtime_ns, status.st_size, status.st_ino

    def current(self) -> Config:
        """The config with the current analysts (a 503 :class:`ServiceError` while the file does not validate)."""
        with self._lock:
            signature = self._signature()
            if signature != self._seen:
                self._reload()
                # Seen only once read: a reload that raised (a ledger read failing in _applies) is tried again at
                # the next request, never leaving the old analysts in force for a file that revoked one.
                self._seen = signature
            if self._broken is not None:
                raise ServiceError(503, "ServiceUnavailable", "the server's configuration is being changed; retry "
                                   "later")
            return self._config

    def _reload(self) -> None:
        try:
            fresh = load_config(self.path)
        except ConfigError as error:
            log.error("the changed config cannot be used, so every request is refused until it is fixed: %s", error)
            self._broken = str(error)
            return
        self._broken = None
        if self._applies(fresh):
            self._config = fresh
        else:
            log.warning("the config's ledger, datasets, caps or limits changed: only its analysts, its curator (and "
                        "caps' totals raised by `dpframe cap extend`) are read again while running; restart `dpframe "
                        "serve` to apply the rest")
            self._config = self._startup.model_copy(update={"analysts": fresh.analysts,
                                                             "curator": fresh.curator})
        log.info("the config changed: %d analyst(s) now", len(fresh.analysts))

    def _applies(self, fresh: Config) -> bool:
        """Whether the changed config is in force as it is: it differs from the one the service started with only in
        its analysts, its curator and caps' totals that the ledger already has."""
        totals: dict[str, Any] = {"analysts": True, "curator": True, "caps": {"__all__": {"total"}}, "datasets": {"__all__": {"total"}}}
        if fresh.model_dump(exclude=totals) != self._startup.model_dump(exclude=totals):
            return False
        for dataset in fresh.datasets:
            try:
                kept = Budget.open(fresh.cap_name(dataset), ledger=self._ledger).total.cost
            except LedgerError:
                return False
            if kept != fresh.cap_total(dataset).cost:
                return False
        return True


@dataclass
class Session:
    """An analyst's protected frame of one dataset in this process, and the lock that runs its plans one by one."""

    frame: ProtectedFrame
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The analyst's Poisson samples of this dataset, held between requests (dpframe.service.replay.held_sample).
    samples: dict[str, Any] = field(default_factory=dict)


class Service:
    """The state of one worker process: the config, the ledger, the loaded datasets and the analysts' frames."""

    def __init__(self, config_path: Path) -> None:
        config = load_config(config_path)
        self.schemas = check_datasets(config)
        self.config = config
        self.ledger = Ledger.at(config.ledger)
        self.analysts = Analysts(config_path, config, self.ledger)
        self.limiter = RateLimiter(config.limits.requests_per_second, config.limits.burst)
        self.login_limiter = RateLimiter(LOGIN_RATE, LOGIN_BURST, LOGIN_ADDRESSES)
        key = os.environ.get(SESSION_KEY_VARIABLE)
        self.session_key = key.encode("utf-8") if key else secrets.token_bytes(32)
        self.caps = {name: open_cap(self.ledger, name, config.cap_total(dataset))
                     for dataset in config.datasets for name in [config.cap_name(dataset)]}
        self._data: dict[str, tuple[pd.DataFrame, dict[str, list[str]]]] = {}
        self._sessions: dict[tuple[str, str, str], Session] = {}
        self._allotments: dict[tuple[str, str, str], Budget] = {}
        self._lock = threading.Lock()

    # -- who is asking ---------------------------------------------------------------------------------------------
    def enter(self, request: Request) -> tuple[str, Config]:
        """The analyst sending the request (401 otherwise), after taking one of its rate tokens (429 if none)."""
        config = self.analysts.current()
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ServiceError(401, "AuthenticationError", UNAUTHENTICATED, {"WWW-Authenticate": "Bearer"})
        who = matching_name({name: analyst.token_sha256 for name, analyst in config.analysts.items()}, token.strip())
        if who is None:
            raise ServiceError(401, "AuthenticationError", "the token is not valid (unknown or revoked)",
                               {"WWW-Authenticate": "Bearer"})
        wait = self.limiter.wait(who)
        if wait:
            raise ServiceError(429, "RateLimited", f"too many requests: retry in {wait:.2f} s",
                               {"Retry-After": str(math.ceil(wait))})
        return who, config

    # -- the curator's page ----------------------------------------------------------------------------------------
    def curator_config(self) -> tuple[Config, str]:
        """The current config and the curator's token hash, read again with the analysts (a 404 without
        ``[curator]``: then there is no page)."""
        config = self.analysts.current()
        if config.curator is None:
            raise ServiceError(404, "NotFound", "Not Found")
        return config, config.curator.token_sha256

    def curator_attempt(self, request: Request) -> float:
        """Take one of the client address's attempts at the curator's token: 0, or the seconds until there is one."""
        return self.login_limiter.wait(request.client.host if request.client else "")

    def curator_refusal(self, request: Request, token_sha256: str) -> str | None:
        """None if the request is the curator's (its bearer token, or a valid session cookie), else why not (for the
        login form; empty: no credentials at all). A 429 after too many attempts at the token."""
        header = request.headers.get("authorization")
        if header is not None:
            wait = self.curator_attempt(request)
            if wait:
                raise ServiceError(429, "RateLimited", f"too many attempts: retry in {wait:.2f} s",
                                   {"Retry-After": str(math.ceil(wait))})
            scheme, _, token = header.partition(" ")
            if scheme.lower() == "bearer" and matching_name({"curator": token_sha256}, token.strip()) == "curator":
                return None
            return "that token is not the curator's"
        cookie = request.cookies.get(SESSION_COOKIE)
        if cookie is None:
            return ""
        if curator.valid_session(self.session_key, token_sha256, cookie):
            return None
        return "your session has ended (it expired, or the curator's token changed): sign in again"

    @staticmethod
    def dataset_of(who: str, config: Config, name: str) -> str:
        """``name`` if it is one of the analyst's datasets, else a 404 (the same whether or not it exists).

        A dataset added to the config while running is not served before a restart (the datasets are read at
        start), so a budget on it is a 404 until then."""
        if name not in config.analysts[who].budgets or name not in config.datasets:
            raise ServiceError(404, "NotFound", f"no dataset {name!r} for this analyst")
        return name

    # -- budgets and frames ----------------------------------------------------------------------------------------
    def allotment(self, who: str, config: Config, dataset: str) -> Budget:
        """The analyst's budget on ``dataset``: its allotment of the dataset's cap in the ledger, raised if the config
        raised it (a 503 if the config lowered it: a budget is never lowered)."""
        spec = config.analysts[who].budgets[dataset]
        key = (who, dataset, spec.model_dump_json())
        with self._lock:
            if key not in self._allotments:  # opened once per process: each opening writes a ledger event
                self._allotments[key] = self._open_allotment(who, config, dataset)
            return self._allotments[key]

    def _open_allotment(self, who: str, config: Config, dataset: str) -> Budget:
        spec = config.analysts[who].budgets[dataset]
        cap, name = self.caps[config.cap_name(dataset)], config.allotment_name(who, dataset)
        try:
            return cap.allot(name, epsilon=spec.epsilon, delta=spec.delta, rho=spec.rho)
        except LedgerError:
            budget = Budget.open(name, ledger=self.ledger)
            problem = (lowered(f"allotment {name}", budget.total, spec) if budget.cap == cap
                       else f"the ledger's {name} is not an allotment of {config.cap_name(dataset)}")
            if problem is None:
                budget.extend(epsilon=spec.epsilon, delta=spec.delta, rho=spec.rho)
                log.warning("%s raised to %s, as the config says", name, spec.cost.describe(spec.kind))
                return budget
            log.error("%s", problem)
            raise ServiceError(503, "ServiceUnavailable", f"your budget on {dataset!r} cannot be opened; the curator "
                               "can find why in the server's log") from None

    def session(self, who: str, config: Config, dataset: str) -> Session:
        """The analyst's protected frame of ``dataset`` in this process, built at its first use."""
        budget = config.analysts[who].budgets[dataset]
        key = (who, dataset, budget.model_dump_json())  # a changed budget in the config: its raised allotment
        allotment = self.allotment(who, config, dataset)
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = Session(self.protected(dataset, allotment))
            return self._sessions[key]

    def protected(self, dataset: str, budget: Budget) -> ProtectedFrame:
        """``dataset`` protected under ``budget`` (an allotment of its cap), as the config and the schema say: its
        declared categories, its privacy unit and contributions."""
        frame, categories = self._dataset(dataset)
        spec = self.config.datasets[dataset]
        with curators_warnings():
            protected: ProtectedFrame = frame.dp.protect(budget=budget, categories=categories or None,
                                                         privacy_unit=spec.privacy_unit,
                                                         max_contributions=spec.max_contributions)
        return protected

    def _dataset(self, name: str) -> tuple[pd.DataFrame, dict[str, list[str]]]:
        """A dataset's frame, typed by its schema, and its declared categories: read once per process, and recorded
        in the ledger under its cap (so that every allotment of the cap may protect it, and no other budget)."""
        if name not in self._data:
            spec, schema = self.config.datasets[name], self.schemas[name]
            try:
                path = Path(spec.path)
                columns, dialect = header(path, schema.get("separator") or None, schema.get("encoding") or None)
                frame, categories = read_with_schema(path, schema, dialect, columns)
            except (OSError, ValueError) as error:
                log.error("dataset %s cannot be read from %s: %s", name, spec.path, error)
                raise ServiceError(503, "ServiceUnavailable", f"dataset {name!r} cannot be read now (nothing was "
                                   "charged); the curator can find why in the server's log") from None
            with curators_warnings():
                frame.dp.protect(budget=self.caps[self.config.cap_name(name)])
            self._data[name] = frame, categories
        return self._data[name]

    async def pad(self, received: float) -> None:
        """Wait until ``answer_after_seconds`` after the request was received: every answer to a plan (a value, a
        refusal, an error) then leaves at the same time, whatever the data made its run take (docs/server.md)."""
        deadline = self.config.limits.answer_after_seconds
        late = time.monotonic() - received - deadline
        if deadline and late > 0:
            log.warning("a run took %.3f s longer than answer_after_seconds = %g: its time showed", late, deadline)
        elif deadline:
            await asyncio.sleep(-late)

    # -- answers ---------------------------------------------------------------------------------------------------
    def listing(self, who: str, config: Config) -> dict[str, Any]:
        """``GET /v1/datasets``."""
        return {"value": [name for name in config.analysts[who].budgets if name in config.datasets]}

    def describe(self, who: str, config: Config, dataset: str) -> dict[str, Any]:
        """``GET /v1/datasets/{name}``: the public schema and the analyst's budget view; never paths or ids, and n only
        when the config declares it public (``rows_public``)."""
        spec = config.datasets[dataset]
        columns = {column: {key: value for key, value in declared.items() if key in PUBLIC_SCHEMA_FIELDS}
                   for column, declared in self.schemas[dataset]["columns"].items()}
        budget = self.allotment(who, config, dataset)
        view = {"name": dataset, "columns": columns, "privacy_unit": spec.privacy_unit,
                "max_contributions": spec.max_contributions, "budget": wire.budget_view(budget)}
        if spec.rows_public:  # the curator declared it public; otherwise n is never sent
            with self._lock:
                view["rows"] = len(self._dataset(dataset)[0])
        return {"value": wire.encode(view)}

    def mock(self, config: Config, dataset: str) -> str:
        """``GET /v1/datasets/{name}/mock``: the dataset's mock as the curator made it (``dpframe mock``), free: a 404
        when the dataset offers none or it is not made yet."""
        if config.mock_total(dataset) is None:
            raise ServiceError(404, "NotFound", f"dataset {dataset!r} offers no mock (the curator's choice)")
        kept = self.ledger.kept_mock(dataset)
        if kept is None:
            raise ServiceError(404, "NotFound", f"the mock of {dataset!r} is not made yet: ask the curator to run "
                               "`dpframe mock` (docs/server.md)")
        return mock_answer(kept, dataset)

    def run(self, who: str, config: Config, dataset: str, body: bytes) -> tuple[int, str]:
        """``POST /v1/datasets/{name}/run``: the status and JSON body of the answer to a plan.

        A request id is answered once: its answer (a value, or the error of a request that was charged) is kept in
        the ledger, and a retry gets it again, with no second charge and no fresh noise. A request that was charged
        but has no answer (running in another attempt, or interrupted by a crash) is never run again.
        """
        try:
            plan = Plan.model_validate_json(body)
        except ValidationError as error:
            raise mapped_error(error) from None
        # What the audit line shows; its hash tells a retry from a reuse of the request id for another question.
        plan_text = f"{dataset}: {plan.model_dump_json()}"
        digest = hashlib.sha256(plan_text.encode("utf-8")).hexdigest()
        request = plan.request_id
        session = self.session(who, config, dataset)
        with session.lock:
            stored = self.ledger.stored_result(who, request)
            if stored is None:
                if self.ledger.request_status(who, request) == "charged":
                    raise _unanswered(request)
                stored = self._answer(who, request, plan_text, digest, session, plan)
        kept = json.loads(stored)
        if kept["plan_sha256"] != digest:
            raise ServiceError(409, "RequestConflict", f"request id {request!r} was already used for another plan; "
                               "a new query needs a new request id")
        return int(kept["status"]), json.dumps(kept["body"], allow_nan=False)

    def _answer(self, who: str, request: str, plan_text: str, digest: str, session: Session, plan: Plan) -> str:
        """Run a plan that has not been run, and keep its answer in the ledger: its value, or the error of a run that
        was charged (a retry gets that error again; a run that charged nothing may be sent again and run).

        The answer is stored inside the request's audited block, where the ledger refuses it if another attempt of
        the request (in another worker) charged first: that attempt's answer is then the one.
        """
        with self.ledger.audited(who, request, plan_text):
            try:
                outcome = replay.run(session.frame, plan, samples=session.samples)
                answer = 200, {"value": wire.encode(outcome.value), "warnings": forwarded(outcome.warnings)}
            except Exception as error:  # noqa: BLE001  (every error is answered, most of them generically)
                if self.ledger.request_status(who, request) == "none":
                    raise mapped_error(error) from None  # nothing was charged: it may be sent again
                if isinstance(error, LedgerError):  # another attempt charged this request first
                    return self._answered_elsewhere(who, request)
                failure = mapped_error(error)
                answer = failure.status, {"error": {"type": failure.kind, "message": failure.message}}
                if isinstance(error, ProposalRefusedError):  # a charged refusal: the analyst sees what it cost
                    answer[1]["error"]["cost"] = wire.encode(error.cost)
            kept = json.dumps({"plan_sha256": digest, "status": answer[0], "body": answer[1]}, allow_nan=False)
            limit = self.config.limits.max_answer_bytes
            if len(kept) > limit:  # the size of a released answer, or of the schema: no private value decides it
                charged = self.ledger.request_status(who, request) == "charged"
                message = (f"the answer would be {len(kept):,} bytes, over this server's limit (max_answer_bytes, "
                           f"{limit:,}): ask for fewer cells (fewer bins, keys or columns, a smaller n)"
                           + ("; it was charged, as every release that ran" if charged else ""))
                kept = json.dumps({"plan_sha256": digest, "status": 400,
                                   "body": {"error": {"type": "ValueError", "message": message}}})
            try:
                return self.ledger.store_result(who, request, kept)
            except LedgerError:
                return self._answered_elsewhere(who, request)
            except sqlite3.DatabaseError:  # charged, but the answer cannot be kept (a full disk): sent once anyway
                log.error("the answer to request %s could not be kept: a retry will be refused", request,
                          exc_info=True)
                return kept

    def _answered_elsewhere(self, who: str, request: str) -> str:
        """The answer another attempt of the request stored, or a 409 while it has none."""
        stored = self.ledger.stored_result(who, request)
        if stored is None:
            raise _unanswered(request)
        return stored


def _unanswered(request: str) -> ServiceError:
    return ServiceError(409, "RequestInterrupted", f"request {request!r} was charged but has no answer (another "
                        "attempt is answering it, or the server stopped): it is never run twice. Retry later, or "
                        "send the query again as a new request")


def open_cap(ledger: Ledger, name: str, total: Total) -> Budget:
    """The cap ``name`` in the ledger: created at its total, or raised to it (a cap is never lowered)."""
    try:
        cap = Budget.open(name, ledger=ledger)
    except LedgerError:
        return Budget(epsilon=total.epsilon, delta=total.delta, rho=total.rho, name=name, ledger=ledger)
    if cap.total != total.cost:
        problem = lowered(f"cap {name}", cap.total, total)
        if problem is not None:
            raise ConfigError(problem)
        cap.extend(epsilon=total.epsilon, delta=total.delta, rho=total.rho)
        log.warning("cap %s raised to %s, as the config says", name, total.cost.describe(total.kind))
    return cap


def limit_memory(limit: int | None) -> None:
    """Limit this process's address space to ``limit`` bytes (``[limits] max_memory_bytes``; None: no limit).

    A request that asks for more memory than there is then gets a MemoryError in this process, not the kernel's
    out-of-memory killer, which ends the process -- every request in flight, or another process of the machine.
    """
    if limit is None:
        return
    try:
        import resource
    except ImportError:
        raise ConfigError("limits.max_memory_bytes needs a Unix system (the resource module)") from None
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def create_app(config_path: str | os.PathLike[str]) -> FastAPI:
    """The service's FastAPI app for a config file (checked now: a :class:`ConfigError` says what is wrong).

    >>> create_app("/no/such/service.toml")
    Traceback (most recent call last):
    ...
    dpframe.service.config.ConfigError: cannot read the config /no/such/service.toml: No such file or directory
    """
    service = Service(Path(config_path))
    limit_memory(service.config.limits.max_memory_bytes)
    app = FastAPI(title="dpframe curator service", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, error: ServiceError) -> JSONResponse:
        return error.response()

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, error: RequestValidationError) -> JSONResponse:
        return error_response(400, "ValueError", "the request is not valid")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(error.status_code, "HTTPError")
        return error_response(error.status_code, kind, str(error.detail), dict(error.headers or {}))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, error: Exception) -> JSONResponse:
        # Starlette then raises the error again, so uvicorn logs its traceback; the analyst sees only this.
        return INTERNAL.response()

    @app.get("/v1/datasets")
    def datasets(request: Request) -> dict[str, Any]:
        who, config = service.enter(request)
        return service.listing(who, config)

    @app.get("/v1/datasets/{name}")
    def dataset(name: str, request: Request) -> dict[str, Any]:
        who, config = service.enter(request)
        return service.describe(who, config, service.dataset_of(who, config, name))

    @app.get("/v1/datasets/{name}/mock")
    def mock(name: str, request: Request) -> Response:
        who, config = service.enter(request)
        answer = service.mock(config, service.dataset_of(who, config, name))
        return Response(answer, media_type="application/json")

    @app.post("/v1/datasets/{name}/run")
    async def run(name: str, request: Request) -> Response:
        received = time.monotonic()
        try:
            who, config = service.enter(request)
            target = service.dataset_of(who, config, name)
            body = await request.body()
            status, payload = await run_in_threadpool(service.run, who, config, target, body)
            return Response(payload, status_code=status, media_type="application/json")
        finally:
            await service.pad(received)

    @app.get("/curator")
    def curator_page(request: Request) -> Response:
        config, token_sha256 = service.curator_config()
        refusal = service.curator_refusal(request, token_sha256)
        if refusal is not None:
            response = _page(curator.render(None, served=True, message=refusal), 401)
            if refusal and request.cookies.get(SESSION_COOKIE) is not None:
                response.delete_cookie(SESSION_COOKIE, path="/curator")
            return response
        try:
            filters = curator.Filters.from_query(dict(request.query_params))
        except ValueError as error:  # its message names the parameter, never quotes it
            return PlainTextResponse(str(error), 400, headers=curator.SECURITY_HEADERS)
        return _page(curator.render(curator.curator_view(config, service.ledger, filters), served=True))

    @app.post("/curator/login")
    async def curator_login(request: Request) -> Response:
        _, token_sha256 = service.curator_config()
        if _from_another_site(request):
            return _page(curator.render(None, served=True, message=ANOTHER_SITE), 403)
        wait = service.curator_attempt(request)
        if wait:
            return _page(curator.render(None, served=True, message=f"too many attempts: retry in {math.ceil(wait)} s"),
                         429, {"Retry-After": str(math.ceil(wait))})
        try:
            form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=4)
        except ValueError:
            form = {}
        token = (form.get("token") or [""])[0].strip()
        if matching_name({"curator": token_sha256}, token) != "curator":
            return _page(curator.render(None, served=True, message="that token is not the curator's"), 401)
        response = RedirectResponse("/curator", status_code=303, headers=curator.SECURITY_HEADERS)
        response.set_cookie(SESSION_COOKIE, curator.session_cookie(service.session_key, token_sha256),
                            max_age=curator.SESSION_SECONDS, path="/curator", secure=request.url.scheme == "https",
                            httponly=True, samesite="strict")
        return response

    @app.post("/curator/logout")
    def curator_logout(request: Request) -> Response:
        service.curator_config()
        if _from_another_site(request):
            return _page(curator.render(None, served=True, message=ANOTHER_SITE), 403)
        response = RedirectResponse("/curator", status_code=303, headers=curator.SECURITY_HEADERS)
        response.delete_cookie(SESSION_COOKIE, path="/curator")
        return response

    # Outermost: the body's size is checked before anything else reads it.
    app.add_middleware(BodyLimit, limit=service.config.limits.max_body_bytes)
    return app


def _from_another_site(request: Request) -> bool:
    """Whether the browser says the request comes from another site's page (``Sec-Fetch-Site``): a form there must
    neither sign the curator out nor spend its address's attempts at the token (cross-site request forgery)."""
    return request.headers.get("sec-fetch-site") == "cross-site"


def _page(html: str, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    """An HTML page of the curator's, with its security headers (curator.SECURITY_HEADERS)."""
    return HTMLResponse(html, status_code=status, headers={**curator.SECURITY_HEADERS, **(headers or {})})


def app_from_environment() -> FastAPI:
    """The app of the config named by ``$DPFRAME_SERVICE_CONFIG``: the factory ``dpframe serve`` gives uvicorn."""
    path = os.environ.get(CONFIG_VARIABLE)
    if not path:
        raise ConfigError(f"set {CONFIG_VARIABLE} to the service's config file (dpframe serve does)")
    return create_app(path)
