"""The persistent ledger: every budget and every charge, in an embedded SQLite database.

Where it lives (docs/ledger.md): ``protect(ledger=path)``, else the
``DPFRAME_LEDGER`` environment variable, else ``dpframe/ledger.sqlite`` in the
user's data directory. ``DPFRAME_LEDGER=:memory:`` (or
:meth:`Ledger.in_memory`) keeps it in memory, forgotten when the process ends.

Why it is sound across processes: a charge is one ``BEGIN IMMEDIATE``
transaction (SQLite's write lock) that reads the budget's total and spending,
refuses if the release does not fit, and otherwise writes every line of the
release and the new spending, all or nothing. It is committed with
``synchronous=FULL`` before the release reads any data, so a crash after the
charge never refunds it, and two processes spending one budget serialise on
the lock and can never overspend. Amounts are stored as exact fractions
(text ``"p/q"``).

A release of several parts is charged once, as a reserved line (the one
durable commit of the release); each part then *draws* its own line from the
reserved one. A draw changes no spending, only how the reserved amount is
described, so it is kept in memory and written with the ledger's next
transaction (or before the lines are read, or when the process exits): one
commit per release. A draw lost in a crash leaves the reserved line holding
its whole amount, charged as before: a crash can never refund budget
(docs/ledger.md).

A budget kept as a privacy filter (kind ``"rdp"``: Rényi terms; ``"advanced"``:
advanced composition) also keeps its filter's state in the ``filter_state``
table: for a Rényi budget one row per order, the total of its releases' RDP
curves there, rounded up (:class:`~dpframe.accounting.composition.RenyiFilter`);
for an advanced one Σ ε tanh(ε/2) and Σ ε²
(:class:`~dpframe.accounting.composition.AdvancedFilter`). The state is read,
checked and updated in the same transaction as the charge, so a filter is as
atomic and as durable as any other budget.

An allotment (:meth:`Ledger.allot`, ``Budget.allot``) is a budget with a cap
in the ``caps`` table: its charge, in the same transaction, also checks its
cap (and the cap's cap, up the chain) and writes its lines and spending there,
refused for both unless it fits both; so the cap's total bounds what all its
allotments release together (docs/ledger.md). An older dpframe would charge
the allotment alone: the trigger ``allotments_charge_their_caps`` refuses a
change of an allotment's spending unless this dpframe marks it (the
``cap_charging`` table, filled and emptied within the charge).

The curator service's requests (:meth:`Ledger.audited`): a charge made for a
request also writes an audit row and registers the request, in the charge's
transaction, so a request is charged by at most one release.

A dpframe from before the filter budgets knows nothing of ``filter_state``: it
would charge a filter budget by comparing its ``spent_*`` columns with its
total, column by column, and the filter would never see those releases. So a
filter budget's ``total_rho`` column holds :data:`FILTER_MARK` (−1; a filter
budget has no ρ total, and ρ's spending is never below 0), which makes every
such comparison fail: an older dpframe refuses every charge. (Not a mark on
δ: an older dpframe takes a query's δ from what remains of it, and would
spend a negative δ that cancels the mark.) And a charge first checks that the
``spent_*`` columns agree with the filter's state, refusing the budget
(:class:`LedgerError`) if anything else has charged it.
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import sys
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from dpframe.accounting import process
from dpframe.accounting.composition import Filter, filter_for
from dpframe.accounting.costs import BudgetKind, Cost
from dpframe.accounting.process import ProcessToken
from dpframe.errors import BudgetExceededError, LedgerError

LEDGER_VARIABLE = "DPFRAME_LEDGER"
IN_MEMORY = ":memory:"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS budgets (
    id TEXT PRIMARY KEY, name TEXT UNIQUE, kind TEXT NOT NULL, created TEXT NOT NULL,
    total_epsilon TEXT NOT NULL, total_delta TEXT NOT NULL, total_rho TEXT NOT NULL,
    spent_epsilon TEXT NOT NULL, spent_delta TEXT NOT NULL, spent_rho TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fingerprints (
    fingerprint TEXT PRIMARY KEY, budget_id TEXT NOT NULL REFERENCES budgets(id), rows INTEGER, columns TEXT,
    added TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    line INTEGER PRIMARY KEY AUTOINCREMENT, budget_id TEXT NOT NULL REFERENCES budgets(id), time TEXT NOT NULL,
    query TEXT NOT NULL, columns TEXT NOT NULL, mechanism TEXT NOT NULL,
    epsilon TEXT NOT NULL, delta TEXT NOT NULL, rho TEXT NOT NULL,
    noise TEXT NOT NULL, rule TEXT NOT NULL, seeded INTEGER NOT NULL, process INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS charges_by_budget ON charges(budget_id, line);
CREATE INDEX IF NOT EXISTS charges_by_query ON charges(budget_id, query);
CREATE TABLE IF NOT EXISTS filter_state (
    budget_id TEXT NOT NULL REFERENCES budgets(id), key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (budget_id, key));
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, budget_id TEXT NOT NULL, time TEXT NOT NULL, event TEXT NOT NULL,
    detail TEXT NOT NULL);
-- Allotments: every charge of budget_id is also charged to cap_id, in the same transaction (Ledger.allot).
CREATE TABLE IF NOT EXISTS caps (
    budget_id TEXT PRIMARY KEY REFERENCES budgets(id), cap_id TEXT NOT NULL REFERENCES budgets(id));
CREATE INDEX IF NOT EXISTS caps_by_cap ON caps(cap_id);
-- Holds an allotment's id while this dpframe charges it and its caps (emptied in the same transaction): an older
-- dpframe, which would charge the allotment alone and overspend its cap, is refused by the trigger below.
CREATE TABLE IF NOT EXISTS cap_charging (budget_id TEXT PRIMARY KEY);
CREATE TRIGGER IF NOT EXISTS allotments_charge_their_caps BEFORE UPDATE OF spent_epsilon, spent_delta, spent_rho
    ON budgets WHEN EXISTS (SELECT 1 FROM caps WHERE budget_id = NEW.id)
    AND NOT EXISTS (SELECT 1 FROM cap_charging WHERE budget_id = NEW.id)
    BEGIN SELECT RAISE(ABORT, 'this budget is an allotment under a cap, kept by a newer dpframe: upgrade dpframe');
    END;
-- Requests of the curator service (Ledger.audited): registered by their first charge, then their stored result.
CREATE TABLE IF NOT EXISTS requests (
    who TEXT NOT NULL, request_id TEXT NOT NULL, status TEXT NOT NULL, result TEXT, time TEXT NOT NULL,
    PRIMARY KEY (who, request_id));
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, who TEXT NOT NULL, request_id TEXT NOT NULL,
    plan TEXT NOT NULL, budget_id TEXT, epsilon TEXT NOT NULL, delta TEXT NOT NULL, rho TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_by_who ON audit(who, seq);
-- The curator's operations on the service (an analyst added, a token rotated, a mock made): Ledger.service_event.
CREATE TABLE IF NOT EXISTS service_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, event TEXT NOT NULL, subject TEXT NOT NULL,
    detail TEXT NOT NULL);
-- A dataset's mock (synthetic data made once by the curator, the same for every analyst): Ledger.keep_mock.
CREATE TABLE IF NOT EXISTS mocks (
    dataset TEXT PRIMARY KEY, time TEXT NOT NULL, budget_id TEXT, frame TEXT NOT NULL);
-- An older dpframe (SHA-256 fingerprints: 64 hexadecimal digits) would not find data this one recorded (fingerprint
-- v2) and would open a second budget for it: its attempt to record such a fingerprint is refused, and with it that
-- budget. (Dask frames' identities, "dask <token>", are the same in both.)
CREATE TRIGGER IF NOT EXISTS fingerprints_v2_only BEFORE INSERT ON fingerprints
    WHEN length(NEW.fingerprint) = 64 AND NEW.fingerprint NOT GLOB '*[^0-9a-f]*'
    BEGIN SELECT RAISE(ABORT, 'this ledger is kept by a newer dpframe (fingerprint v2): upgrade dpframe to use it');
    END;
"""

# The budget kinds kept as privacy filters, and what their lines say in place of "sequential composition".
FILTERED = {
    "rdp": "Rényi composition (curves add order by order; Rényi filter)",
    "advanced": "advanced composition (filter for adaptively chosen ε)",
}

# The budget kinds that can be a cap or an allotment: their charges add, so a cap's spending is the sum of its lines.
SEQUENTIAL = ("approx", "zcdp")

# What the cap's refusal says: never the cap's remaining, which is other analysts' spending.
CAP_REFUSAL = "the dataset's shared cap cannot cover it; nothing was charged"

RequestStatus = Literal["none", "charged", "done"]

# The ledger line that marks a budget as kept under replace-one neighbours (at no cost; protect's
# _keep_one_relation). Caps compose their allotments' releases under add/remove neighbours: the line is refused in
# a budget with a cap or allotments, and a budget that has it cannot be a cap.
BOUNDED_LINE = "bounded DP"

# The event that marks a budget as a part of a partition_by() (Ledger.create_parts): its parent paid its total once
# for all the parts, which parallel composition allows only for that total, so it is never extended.
PART_EVENT = "part"

# What a filter budget keeps in its total_rho column: below any spending (>= 0), so that a dpframe that compares
# spending with the total column by column (one from before the filter budgets) refuses every charge.
FILTER_MARK = Fraction(-1)

# How many stored amounts a ledger keeps parsed (Ledger._amount): a few per budget in use.
_AMOUNTS_KEPT = 256

LEDGER_COLUMNS = ["time", "query", "columns", "mechanism", "epsilon", "delta", "rho", "noise", "rule", "seeded"]


def default_location() -> str:
    """``$DPFRAME_LEDGER`` if set, else ``ledger.sqlite`` in the user's data directory for dpframe.

    The data directory follows each platform's convention: ``$XDG_DATA_HOME``
    or ``~/.local/share`` on Linux, ``~/Library/Application Support`` on
    macOS, ``%LOCALAPPDATA%`` on Windows.
    """
    configured = os.environ.get(LEDGER_VARIABLE)
    if configured:
        return configured
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    return str(base / "dpframe" / "ledger.sqlite")


def _text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _cost(budget_id: str, epsilon: str, delta: str, rho: str) -> Cost:
    """An amount as the ledger stores it; LedgerError if it is not a cost (written around dpframe's checks)."""
    try:
        return Cost(Fraction(epsilon), Fraction(delta), Fraction(rho))
    except ValueError as error:
        raise LedgerError(
            f"budget {budget_id} holds an amount that is not a cost (ε={epsilon}, δ={delta}, ρ={rho}: {error}). "
            "Something wrote the ledger around dpframe's checks (by hand, or a dpframe from before costs were checked, "
            "which accepted a negative charge), so what the budget has spent is not known and it cannot be used; "
            "protect the data under a new budget (a new ledger= or name=)") from None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass(frozen=True)
class Line:
    """One ledger line: a measurement of a release, what it cost and how it was made."""

    query: str
    cost: Cost
    columns: tuple[str, ...] = ()
    mechanism: str = ""
    noise: str = ""
    rule: str = "sequential composition"
    seeded: bool = False


def _table(rows: list[Any], columns: list[str]) -> pd.DataFrame:
    """Rows read from the ledger as a table: times as UTC timestamps, amounts (exact text) as floats."""
    frame = pd.DataFrame(rows, columns=columns)
    frame["time"] = pd.to_datetime(frame["time"], utc=True, format="ISO8601")
    for column in ("epsilon", "delta", "rho"):
        frame[column] = frame[column].map(lambda text: float(Fraction(text))).astype(float)
    return frame


def _in_terms_of(line: Line, kind: str) -> Line:
    """The line as a budget of this kind records it: a filter composes what would be sequential otherwise."""
    if kind not in FILTERED:
        return line
    return replace(line, rule=line.rule.replace("sequential composition", FILTERED[kind]))


def _agrees(spent: Cost, state: dict[str, Fraction]) -> bool:
    """Whether a filter budget's ``spent_*`` columns are what its filter charged: ε and ρ as in its state, δ the
    0. Anything else means another program charged the budget."""
    return spent.epsilon == state.get("epsilon") and spent.rho == state.get("rho") and spent.delta == 0


def _stored_rho(kind: str, total: Cost) -> str:
    """What the ``total_rho`` column holds: the mark for a filter budget (module docstring), else the total's ρ."""
    return _text(FILTER_MARK if kind in FILTERED else total.rho)


def _check_extensible(record: BudgetRecord) -> None:
    """Refuse to raise a filter's total once it has admitted a release.

    A filter is valid for the total it was started with: raising it after
    seeing answers would make that total depend on the data (an odometer,
    which needs other bounds; docs/accounting.md).
    """
    if record.kind in FILTERED and not record.spent.is_zero:
        raise LedgerError(f"budget {record.label} is a filter ({record.kind}) that has admitted releases: its total "
                          "is fixed from its first release, since raising it after seeing answers is not covered by "
                          "the filter's guarantee. Protect new data, or start a new budget")


@dataclass
class _Audit:
    """The request that the charges of this thread are made for (:meth:`Ledger.audited`)."""

    ledger_id: str
    who: str
    request_id: str
    plan: str
    registered: bool = False  # once a charge of this request is committed, its later charges are its own


# A context variable, not a thread-local, so that it also follows a request through asyncio tasks; a new thread
# starts without it.
_AUDITED: ContextVar[_Audit | None] = ContextVar("dpframe_audited", default=None)


def _check_text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{what} must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class BudgetRecord:
    """A budget as the ledger keeps it."""

    id: str
    name: str | None
    kind: BudgetKind
    created: str
    total: Cost
    spent: Cost

    @property
    def label(self) -> str:
        """The budget's name in quotes, or the start of its id."""
        return repr(self.name) if self.name else self.id[:12]


# Open ledgers of this process, one per file, so every handle on a budget shares a connection and lock.
_OPEN: weakref.WeakValueDictionary[tuple[ProcessToken, str], Ledger] = weakref.WeakValueDictionary()
_IN_MEMORY: weakref.WeakValueDictionary[str, Ledger] = weakref.WeakValueDictionary()
_OPENING = threading.Lock()


class Ledger:
    """An embedded SQLite ledger of budgets and charges (module docstring).

    >>> ledger = Ledger.in_memory()
    >>> ledger
    Ledger(in memory: forgotten when this process ends)
    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1, 2, 3]}).dp.protect(epsilon=1.0, name="census", ledger=ledger)
    >>> _ = p.dp.count(epsilon=0.25)  # queries charge the ledger: it offers no public way to write a line
    >>> ledger.record(p.dp.budget.id).spent.epsilon, ledger.count_lines(p.dp.budget.id)
    (Fraction(1, 4), 1)
    """

    def __init__(self, location: str) -> None:
        self.location = location
        self.is_in_memory = location == IN_MEMORY
        self._process = process.current()
        self._lock = threading.RLock()
        # This process's reserved lines, by number: their budget, its kind, and what is left of them to draw.
        self._reserved: dict[int, tuple[str, BudgetKind, Cost]] = {}
        # Draws not yet written (module docstring): budget, reserved line, the drawn line, its time, what is left.
        self._drawn: list[tuple[str, int, Line, str, Cost]] = []
        # Amounts as stored (text) -> Cost: a budget's row is parsed once per change, not once per charge.
        self._amounts: dict[tuple[str, str, str], Cost] = {}
        if not self.is_in_memory:
            folder = Path(location).expanduser().parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise LedgerError(f"cannot create the ledger's folder {folder}: {error}; set {LEDGER_VARIABLE} "
                                  "or pass protect(ledger=...) to put it somewhere writable") from None
        self._connection = self._connect()
        with self._transaction() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('id', ?)", (uuid.uuid4().hex,))
                row = db.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()
        self.id: str = row[0]
        if self.is_in_memory:
            _IN_MEMORY[self.id] = self

    def _connect(self) -> sqlite3.Connection:
        path = self.location if self.is_in_memory else str(Path(self.location).expanduser())
        try:
            connection = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
            if not self.is_in_memory:
                connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.executescript(_SCHEMA)
        except sqlite3.DatabaseError as error:
            raise LedgerError(f"cannot open the ledger at {self.location}: {error}; is it a dpframe ledger "
                              f"(an SQLite file)? Set {LEDGER_VARIABLE} or pass protect(ledger=...) to use "
                              "another") from None
        return connection

    # -- opening -----------------------------------------------------------------
    @classmethod
    def at(cls, location: str | os.PathLike[str]) -> Ledger:
        """The ledger in the file at ``location`` (created if missing); ``":memory:"`` is this process's in-memory one."""
        key = str(location) if str(location) == IN_MEMORY else str(Path(location).expanduser().resolve())
        with _OPENING:
            ledger = _OPEN.get((process.current(), key))
            if ledger is None:
                ledger = cls(key)
                _OPEN[(process.current(), key)] = ledger
                if ledger.is_in_memory:
                    _PROCESS_MEMORY.append(ledger)  # kept alive: DPFRAME_LEDGER=:memory: lasts the process
        return ledger

    @classmethod
    def default(cls) -> Ledger:
        """The ledger at :func:`default_location`."""
        return cls.at(default_location())

    @classmethod
    def in_memory(cls) -> Ledger:
        """A new ledger in memory, for tests and throwaway work: its budgets are forgotten when it is."""
        return cls(IN_MEMORY)

    @classmethod
    def find(cls, ledger_id: str, location: str) -> Ledger:
        """The ledger a pickled budget refers to: at its recorded location, or at the default one if it moved there."""
        if location == IN_MEMORY:
            ledger = _IN_MEMORY.get(ledger_id)
            if ledger is None or ledger._process is not process.current():
                raise LedgerError("this budget lived in an in-memory ledger of another process (or one that is gone); "
                                  "its spending is not known here, so it cannot be used. Keep budgets you pickle in "
                                  "a ledger file")
            return ledger
        for candidate in (location, default_location()):
            if candidate == IN_MEMORY or not Path(candidate).expanduser().exists():
                continue
            ledger = cls.at(candidate)
            if ledger.id == ledger_id:
                return ledger
        raise LedgerError(f"the ledger of this budget (id {ledger_id}, last at {location}) is not there; if it was "
                          f"moved, point {LEDGER_VARIABLE} at its new place")

    # -- transactions --------------------------------------------------------------
    def _connection_here(self) -> sqlite3.Connection:
        """The connection of this process: a forked process opens its own (and forgets the parent's draws)."""
        if self._process is not process.current():
            if self.is_in_memory:
                raise LedgerError("an in-memory ledger belongs to the process that made it; a forked process "
                                  "cannot spend from it. Use a ledger file")
            self._connection = self._connect()
            self._process = process.current()
            # The parent writes its own draws; the child must neither write them again nor draw from its reservations.
            self._reserved.clear()
            self._drawn.clear()
        return self._connection

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One durable write transaction holding SQLite's write lock from the start (``BEGIN IMMEDIATE``).

        The draws made since the last transaction are written first, in it: they are forgotten only once it is
        committed, so a refused charge (rolled back) keeps them for the next one.
        """
        with self._lock:
            db = self._connection_here()
            drawn = len(self._drawn)
            db.execute("BEGIN IMMEDIATE")
            try:
                self._write_draws(db, self._drawn[:drawn])
                yield db
                db.execute("COMMIT")
            except BaseException:
                # SQLite has already rolled back a transaction that failed on a full disk (SQLITE_FULL), or whose
                # COMMIT did: then there is nothing left to roll back.
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            del self._drawn[:drawn]

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read-only transaction: its statements see one state of the ledger (WAL), without the write lock."""
        with self._lock:
            db = self._connection_here()
            db.execute("BEGIN")
            try:
                yield db
            finally:
                db.execute("COMMIT")

    def _read(self, sql: str, parameters: Sequence[Any] = (), *, with_draws: bool = False) -> list[Any]:
        """One statement in autocommit mode: one consistent snapshot (WAL), no write lock.

        ``with_draws``: the statement reads the lines, so draws still in memory are written first.
        """
        with self._lock:
            if with_draws and self._drawn:
                with self._transaction():
                    pass
            return self._connection_here().execute(sql, parameters).fetchall()

    # -- budgets -------------------------------------------------------------------
    def create(self, kind: BudgetKind, total: Cost, *, name: str | None = None,
               fingerprint: tuple[str, int, str] | None = None) -> BudgetRecord:
        """A new budget (with an optional unique name and data fingerprint)."""
        with self._transaction() as db:
            return self._create(db, kind, total, name, fingerprint)

    def _create(self, db: sqlite3.Connection, kind: BudgetKind, total: Cost, name: str | None,
                fingerprint: tuple[str, int, str] | None) -> BudgetRecord:
        if name is not None and db.execute("SELECT 1 FROM budgets WHERE name = ?", (name,)).fetchone():
            raise LedgerError(f"a budget named {name!r} already exists in {self}")
        budget_id, created, zero = uuid.uuid4().hex, _now(), _text(Fraction(0))
        db.execute("INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (budget_id, name, kind, created, _text(total.epsilon), _text(total.delta), _stored_rho(kind, total),
                    zero, zero, zero))
        self._event(db, budget_id, "created", f"total {total.describe(kind)}")
        if kind in FILTERED:
            db.executemany("INSERT INTO filter_state VALUES (?, ?, ?)",
                           [(budget_id, key, zero) for key in filter_for(kind, total.epsilon, total.delta).keys])
        if fingerprint is not None:
            self._link(db, budget_id, fingerprint)
        return BudgetRecord(budget_id, name, kind, created, total, Cost())

    def open_budget(self, kind: BudgetKind, total: Cost, *, name: str | None,
                    fingerprint: tuple[str, int, str] | None, extend: bool,
                    legacy: Callable[[], str] | None = None) -> tuple[BudgetRecord, bool]:
        """The budget of this name or data (by name, else by fingerprint), created if new; and whether it existed.

        ``legacy`` computes the data's fingerprint as an older dpframe did (:meth:`_linked`).

        Refuses (LedgerError) when the data is already protected under another
        budget (other than the named budget's caps, :meth:`attach`), when the
        kind differs, or when the asked total differs from the recorded one (a
        larger total only with ``extend=True``, recorded).
        """
        with self._transaction() as db:
            by_data = None if fingerprint is None else self._linked(db, fingerprint, legacy)
            by_name = (db.execute("SELECT id FROM budgets WHERE name = ?", (name,)).fetchone()
                       if name is not None else None)
            if by_data is not None and by_name is not None and not self._covers(db, by_name[0], by_data[0]):
                other = self._record(db, by_data[0])
                raise LedgerError(f"this data is already protected under budget {other.label}; a second budget over "
                                  f"the same people would spend twice. Use name={other.name!r} (or omit name=)"
                                  if other.name else "this data is already protected under another budget "
                                  f"({other.label}); omit name= to reconnect to it")
            if by_data is None and by_name is None:
                return self._create(db, kind, total, name, fingerprint), False
            if by_data is not None and by_name is None and name is not None:
                other = self._record(db, by_data[0])
                raise LedgerError(f"this data is already protected under budget {other.label}; a second budget over "
                                  f"the same people would spend twice. Reconnect with name={other.name!r}"
                                  if other.name else f"this data is already protected under budget {other.label}; "
                                  f"omit name= to reconnect, or name it with dpframe budget rename")
            found = by_name or by_data
            assert found is not None
            budget_id = found[0]
            record = self._record(db, budget_id)
            if record.kind != kind:
                raise LedgerError(f"budget {record.label} is a {record.kind} budget ({record.total.describe(kind)}); "
                                  "protect this data with the same kind of budget to reconnect")
            if total != record.total:
                if extend:
                    _check_extensible(record)
                if not (extend and record.total.fits_in(total)):
                    raise LedgerError(
                        f"this data's budget {record.label} has total {record.total.describe(kind)} "
                        f"({record.spent.describe(kind)} spent); pass that total to reconnect"
                        + ("" if extend else ", or extend=True with a larger one to raise it (recorded in the ledger)")
                    )
                db.execute("UPDATE budgets SET total_epsilon = ?, total_delta = ?, total_rho = ? WHERE id = ?",
                           (_text(total.epsilon), _text(total.delta), _stored_rho(kind, total), budget_id))
                self._event(db, budget_id, "extended",
                            f"total {record.total.describe(kind)} -> {total.describe(kind)}")
                record = self._record(db, budget_id)
            if by_data is None and fingerprint is not None:
                self._link(db, budget_id, fingerprint)
            self._event(db, budget_id, "reconnected", "by name" if fingerprint is None else f"data {fingerprint[0][:12]}")
            return record, True

    def attach(self, budget_id: str, fingerprint: tuple[str, int, str],
               legacy: Callable[[], str] | None = None) -> None:
        """Record that the data with ``fingerprint`` is protected under this budget (if it is not yet).

        Refuses (LedgerError) when the data is already protected under another
        budget: two budgets over the same people would each spend in full.
        Data protected under the budget's cap (or its cap's cap) is accepted
        as it is: every charge of the budget is also charged there.

        >>> ledger = Ledger.in_memory()
        >>> record = ledger.create("approx", Cost(epsilon=Fraction(1)))
        >>> ledger.attach(record.id, ("0f1e", 3, "x"))
        >>> ledger.events(record.id)["event"].tolist()
        ['created', 'linked']
        """
        with self._transaction() as db:
            record = self._record(db, budget_id)
            by_data = self._linked(db, fingerprint, legacy)
            if by_data is not None and not self._covers(db, budget_id, by_data[0]):
                other = self._record(db, by_data[0])
                how = f"name={other.name!r}" if other.name else "its total and no name="
                raise LedgerError(f"this data is already protected under budget {other.label}, not {record.label}; "
                                  f"a second budget over the same people would spend twice. Reconnect to it with "
                                  f"protect({how}), or protect(budget=) with that budget")
            if by_data is None:
                self._link(db, budget_id, fingerprint)
                self._event(db, budget_id, "linked", f"data {fingerprint[0][:12]}")

    def record(self, budget_id: str) -> BudgetRecord:
        """The budget's current state (raises LedgerError if it is not in this ledger)."""
        with self._snapshot() as db:
            return self._record(db, budget_id)

    def lookup(self, name_or_id: str) -> BudgetRecord:
        """The budget with this name, id or unique id prefix."""
        if not name_or_id:
            raise LedgerError("give a budget's name or id (or the start of its id); an empty one matches every id")
        # A prefix compared by substr, not LIKE: '%' and '_' in the text must not act as wildcards.
        rows = self._read("SELECT id FROM budgets WHERE name = ? OR substr(id, 1, length(?)) = ?",
                          (name_or_id, name_or_id, name_or_id))
        ids = sorted({row[0] for row in rows})
        if len(ids) != 1:
            known = ", ".join(self.budgets()["budget"].astype(str)) or "none"
            raise LedgerError(f"{'no' if not ids else 'more than one'} budget {name_or_id!r} in {self}; budgets: "
                              f"{known}")
        return self.record(ids[0])

    def _record(self, db: sqlite3.Connection, budget_id: str) -> BudgetRecord:
        row = db.execute("SELECT id, name, kind, created, total_epsilon, total_delta, total_rho, spent_epsilon, "
                         "spent_delta, spent_rho FROM budgets WHERE id = ?", (budget_id,)).fetchone()
        if row is None:
            raise LedgerError(f"budget {budget_id} is not in {self} (was it deleted?)")
        filtered = row[2] in FILTERED
        # A filter budget's total_rho column holds the mark, not a total.
        total = self._amount(budget_id, row[4], row[5], "0" if filtered else row[6])
        spent = self._amount(budget_id, *row[7:10])
        if filtered:
            state = self._filter_state(db, budget_id)
            if not _agrees(spent, state):  # charged by something that does not keep the filter: all spent
                spent = total
            elif spent.epsilon or spent.rho:
                # A filter's spending, in its budget's (ε, δ) terms: how far its state has gone, read at its δ.
                reading = filter_for(row[2], total.epsilon, total.delta).epsilon(state)
                spent = Cost(epsilon=min(Fraction(reading), total.epsilon), delta=total.delta)
            else:
                spent = Cost()
        return BudgetRecord(row[0], row[1], row[2], row[3], total, spent)

    def _amount(self, budget_id: str, epsilon: str, delta: str, rho: str) -> Cost:
        """:func:`_cost`, remembered: a budget's total and spending are parsed once per change, not per charge."""
        key = (epsilon, delta, rho)
        amount = self._amounts.get(key)
        if amount is None:
            if len(self._amounts) >= _AMOUNTS_KEPT:
                self._amounts.clear()
            amount = self._amounts[key] = _cost(budget_id, epsilon, delta, rho)
        return amount

    def _filter_state(self, db: sqlite3.Connection, budget_id: str) -> dict[str, Fraction]:
        """The state a filtered budget's filter keeps."""
        rows = db.execute("SELECT key, value FROM filter_state WHERE budget_id = ?", (budget_id,)).fetchall()
        return {key: Fraction(value) for key, value in rows}

    def _linked(self, db: sqlite3.Connection, fingerprint: tuple[str, int, str],
                legacy: Callable[[], str] | None = None) -> tuple[str] | None:
        """The budget the data with this fingerprint is linked to, as a row ``(budget_id,)``, or None.

        A ledger written by an older dpframe holds legacy fingerprints (64 hexadecimal digits,
        :func:`~dpframe.accounting.fingerprint.legacy_fingerprint`). When one of them was recorded for data of the
        same number of rows and column names, ``legacy()`` computes this data's legacy fingerprint (only then: it
        costs a pass over the data); if it matches, the data's fingerprint is linked to that budget too, so the
        next lookup finds it directly.
        """
        row: tuple[str] | None = db.execute("SELECT budget_id FROM fingerprints WHERE fingerprint = ?",
                                            (fingerprint[0],)).fetchone()
        if row is not None or legacy is None:
            return row
        if db.execute("SELECT 1 FROM fingerprints WHERE rows = ? AND columns = ? AND length(fingerprint) = 64 LIMIT 1",
                      fingerprint[1:]).fetchone() is None:
            return None
        old = legacy()
        row = db.execute("SELECT budget_id FROM fingerprints WHERE fingerprint = ?", (old,)).fetchone()
        if row is not None:
            self._link(db, row[0], fingerprint)
            self._event(db, row[0], "relinked", f"data {old[:12]} now also {fingerprint[0][:16]} (fingerprint v2)")
        return row

    def _link(self, db: sqlite3.Connection, budget_id: str, fingerprint: tuple[str, int, str]) -> None:
        db.execute("INSERT INTO fingerprints VALUES (?, ?, ?, ?, ?)", (*fingerprint[:1], budget_id, *fingerprint[1:],
                                                                       _now()))

    def _event(self, db: sqlite3.Connection, budget_id: str, event: str, detail: str) -> None:
        db.execute("INSERT INTO events (budget_id, time, event, detail) VALUES (?, ?, ?, ?)",
                   (budget_id, _now(), event, detail))

    def extend(self, budget_id: str, total: Cost) -> None:
        """Raise a budget's total (never lower it); recorded as an event. The curator's (:meth:`Budget.extend`)."""
        with self._transaction() as db:
            record = self._record(db, budget_id)
            if total == record.total:
                return
            _check_extensible(record)
            if db.execute("SELECT 1 FROM events WHERE budget_id = ? AND event = ?", (budget_id, PART_EVENT)).fetchone():
                raise LedgerError(f"budget {record.label} is a part of a partition_by(): its parent was charged its "
                                  "total once for all the parts (parallel composition), so it cannot be extended")
            if not record.total.fits_in(total):
                raise ValueError(f"a budget can only be extended: {total.describe(record.kind)} is below its total "
                                 f"{record.total.describe(record.kind)} in some part")
            db.execute("UPDATE budgets SET total_epsilon = ?, total_delta = ?, total_rho = ? WHERE id = ?",
                       (_text(total.epsilon), _text(total.delta), _stored_rho(record.kind, total), budget_id))
            self._event(db, budget_id, "extended", f"total {record.total.describe(record.kind)} -> "
                                                   f"{total.describe(record.kind)}")

    def create_parts(self, parent_id: str, kind: BudgetKind, total: Cost, names: Sequence[str],
                     detail: str) -> list[BudgetRecord]:
        """New budgets ``names``, each of ``total``: the parts of a partition_by() of ``parent_id`` (which was
        charged ``total`` once for all of them), made in one transaction and marked so they cannot be extended.

        >>> ledger = Ledger.in_memory()
        >>> parent = ledger.create("approx", Cost(epsilon=Fraction(1)))
        >>> [part.name for part in ledger.create_parts(parent.id, "approx", Cost(epsilon=Fraction(1)), ["a", "b"],
        ...                                             "partition_by(region)")]
        ['a', 'b']
        """
        with self._transaction() as db:
            parent = self._record(db, parent_id)
            records = [self._create(db, kind, total, name, None) for name in names]
            for record in records:
                self._event(db, record.id, PART_EVENT, f"part of budget {parent.label}: {detail}")
            self._event(db, parent_id, "partitioned", f"{detail}: {len(records)} part(s) of {total.describe(kind)}")
            return records

    def allot(self, cap_id: str, name: str, kind: BudgetKind, total: Cost) -> tuple[BudgetRecord, bool]:
        """The allotment ``name`` of the cap ``cap_id`` (created if new; :meth:`Budget.allot`), and whether it existed.

        Refuses (ValueError) another kind than the cap's, or a cap kept as a
        filter; (LedgerError) a name taken by a budget that is not an
        allotment of this cap, or an existing allotment's other total.

        >>> ledger = Ledger.in_memory()
        >>> cap = ledger.create("approx", Cost(epsilon=Fraction(1)))
        >>> alice, existed = ledger.allot(cap.id, "alice", "approx", Cost(epsilon=Fraction(1, 2)))
        >>> ledger.cap_of(alice.id) == cap.id, existed
        (True, False)
        """
        with self._transaction() as db:
            cap = self._record(db, cap_id)
            if cap.kind not in SEQUENTIAL:
                raise ValueError(f"budget {cap.label} is a filter ({cap.kind}): a cap must be an (epsilon, delta) or "
                                 "a zCDP budget, whose charges add up")
            if self._has_line(db, cap_id, BOUNDED_LINE):
                raise LedgerError(f"budget {cap.label} is kept under replace-one neighbours (bounded DP): it cannot be "
                                  "a cap, whose allotments' releases are under add/remove neighbours")
            if kind != cap.kind:
                raise ValueError(f"budget {cap.label} is a {cap.kind} budget: its allotments are too "
                                 f"({'epsilon= with optional delta=' if cap.kind == 'approx' else 'rho='})")
            row = db.execute("SELECT id FROM budgets WHERE name = ?", (name,)).fetchone()
            if row is None:
                record = self._create(db, kind, total, name, None)
                db.execute("INSERT INTO caps VALUES (?, ?)", (record.id, cap_id))
                self._event(db, record.id, "allotted", f"capped by budget {cap.label}")
                self._event(db, cap_id, "allotted", f"{name!r}: {total.describe(kind)}")
                return record, False
            if self._cap_of(db, row[0]) != cap_id:
                raise LedgerError(f"a budget named {name!r} already exists in {self} and is not an allotment of "
                                  f"budget {cap.label}; choose another name")
            record = self._record(db, row[0])
            if record.total != total:
                raise LedgerError(f"the allotment {record.label} has total {record.total.describe(kind)}: pass that "
                                  "total to reconnect, or raise it with its extend() (the curator's)")
            self._event(db, record.id, "reconnected", f"allotment of budget {cap.label}")
            return record, True

    def cap_of(self, budget_id: str) -> str | None:
        """The id of the budget's cap (every charge of the budget is also charged to it), or None."""
        with self._snapshot() as db:
            return self._cap_of(db, budget_id)

    def _cap_of(self, db: sqlite3.Connection, budget_id: str) -> str | None:
        row = db.execute("SELECT cap_id FROM caps WHERE budget_id = ?", (budget_id,)).fetchone()
        return None if row is None else str(row[0])

    def rename(self, budget_id: str, name: str | None) -> None:
        """Give a budget a (unique) name, or remove its name with None."""
        with self._transaction() as db:
            if name is not None and db.execute("SELECT 1 FROM budgets WHERE name = ? AND id != ?",
                                               (name, budget_id)).fetchone():
                raise LedgerError(f"a budget named {name!r} already exists in {self}")
            old = self._record(db, budget_id).name
            db.execute("UPDATE budgets SET name = ? WHERE id = ?", (name, budget_id))
            self._event(db, budget_id, "renamed", f"{old!r} -> {name!r}")

    def delete(self, budget_id: str) -> None:
        """Forget a budget, its charges and its fingerprints: the same data protected again starts afresh.

        The curator's, and only when the data is deleted too (docs/ledger.md).
        A cap is deleted after its allotments; an allotment's lines stay in
        its cap, charged.
        """
        with self._transaction() as db:
            record = self._record(db, budget_id)
            if self._is_cap(db, budget_id):
                raise LedgerError(f"budget {record.label} is the cap of allotments: delete them first")
            for table, column in (("charges", "budget_id"), ("fingerprints", "budget_id"), ("events", "budget_id"),
                                  ("filter_state", "budget_id"), ("caps", "budget_id"), ("budgets", "id")):
                db.execute(f"DELETE FROM {table} WHERE {column} = ?", (budget_id,))

    # -- charging: internal (module docstring of dpframe.accounting.budget) ---------------
    def _charge(self, budget_id: str, lines: Sequence[Line]) -> list[int]:
        """Write all ``lines`` of a release, or none: BudgetExceededError if their sum does not fit what remains.

        Committed durably before returning; returns the lines' numbers.
        """
        return self._write_charge(budget_id, lines)[0]

    def _write_charge(self, budget_id: str, lines: Sequence[Line]) -> tuple[list[int], BudgetKind]:
        """:meth:`_charge`, also returning the budget's kind."""
        total_cost = lines[0].cost
        for line in lines[1:]:
            total_cost = total_cost + line.cost
        query = lines[0].query if len(lines) == 1 else f"{lines[0].query} (and {len(lines) - 1} more parts)"
        audit = _AUDITED.get()
        if audit is not None and audit.ledger_id != self.id:
            audit = None
        with self._transaction() as db:
            record = self._record(db, budget_id)
            if record.kind in FILTERED:
                spent = self._charge_filtered(db, record, total_cost, query)
            else:
                remaining = record.total - record.spent
                if not total_cost.fits_in(remaining):
                    raise BudgetExceededError(f"{query} needs {total_cost.describe(record.kind)} but only "
                                              f"{remaining.describe(record.kind)} remains; nothing was charged")
                spent = record.spent + total_cost
            caps = [self._record(db, cap_id) for cap_id in self._caps_above(db, budget_id)]
            if any(line.query == BOUNDED_LINE for line in lines) and (caps or self._is_cap(db, budget_id)):
                raise LedgerError(f"budget {record.label} has a cap or allotments, which compose releases under "
                                  "add/remove neighbours: bounded DP (neighbours='replace') needs a budget of its own")
            if any(not total_cost.fits_in(cap.total - cap.spent) for cap in caps):
                raise BudgetExceededError(f"{query} needs {total_cost.describe(record.kind)}: {CAP_REFUSAL}")
            if audit is not None:
                self._register(db, audit, budget_id, total_cost)
            time = _now()
            numbers = [self._insert(db, budget_id, _in_terms_of(line, record.kind), time) for line in lines]
            stored = self._spend(db, budget_id, spent, capped=bool(caps))
            # Each cap records the allotment's lines under the allotment's name: its lines add up to its spending.
            for position, cap in enumerate(caps):
                for line in lines:
                    self._insert(db, cap.id, replace(line, query=f"{record.name or record.id[:12]}: {line.query}"),
                                 time)
                self._spend(db, cap.id, cap.spent + total_cost, capped=position < len(caps) - 1)
        if audit is not None:
            audit.registered = True
        if record.kind not in FILTERED:
            self._amounts.setdefault(stored, spent)  # the next charge reads this row back: no need to parse it
        return numbers, record.kind

    def _spend(self, db: sqlite3.Connection, budget_id: str, spent: Cost, *, capped: bool) -> tuple[str, str, str]:
        """Write a budget's new spending; an allotment's under the mark its trigger asks for (the schema)."""
        stored = (_text(spent.epsilon), _text(spent.delta), _text(spent.rho))
        if capped:
            db.execute("INSERT INTO cap_charging VALUES (?)", (budget_id,))
        db.execute("UPDATE budgets SET spent_epsilon = ?, spent_delta = ?, spent_rho = ? WHERE id = ?",
                   (*stored, budget_id))
        if capped:
            db.execute("DELETE FROM cap_charging WHERE budget_id = ?", (budget_id,))
        return stored

    def _is_cap(self, db: sqlite3.Connection, budget_id: str) -> bool:
        return db.execute("SELECT 1 FROM caps WHERE cap_id = ? LIMIT 1", (budget_id,)).fetchone() is not None

    def _covers(self, db: sqlite3.Connection, budget_id: str, data_budget_id: str) -> bool:
        """Whether the budget may release data protected under ``data_budget_id``: its own, or its cap's (or its cap's
        cap's...), which each of its charges is charged to too."""
        return data_budget_id == budget_id or data_budget_id in self._caps_above(db, budget_id)

    def _caps_above(self, db: sqlite3.Connection, budget_id: str) -> list[str]:
        """The budget's cap, its cap's cap and so on (nearest first); empty for a budget without a cap."""
        chain: list[str] = []
        cap = self._cap_of(db, budget_id)
        while cap is not None:
            if cap in chain:  # never made by allot: a ledger edited by hand, which cannot be charged
                raise LedgerError(f"the caps above budget {budget_id} form a cycle in {self}: it cannot be charged")
            chain.append(cap)
            cap = self._cap_of(db, cap)
        return chain

    def _reserve(self, budget_id: str, line: Line) -> int:
        """Charge a reserved line (as :meth:`_charge`), which this process's parts then :meth:`_draw` from."""
        with self._lock:
            numbers, kind = self._write_charge(budget_id, [line])
            self._reserved[numbers[0]] = (budget_id, kind, line.cost)
        return numbers[0]

    def _charge_filtered(self, db: sqlite3.Connection, record: BudgetRecord, cost: Cost, query: str) -> Cost:
        """Check a release against a filtered budget's filter and update its state; return the new raw spending.

        The raw spending (the columns ``spent_*``) adds the releases' ε (pure
        parts) and ρ (zCDP parts) in their own terms; the filter decides.
        """
        if cost.delta:
            raise BudgetExceededError(f"{query} needs δ={float(cost.delta):.3g}, and a {record.kind} budget gives no "
                                      "δ to releases (its δ is its filter's); declare the categories, or use an "
                                      "(epsilon, delta) budget; nothing was charged")
        row = db.execute("SELECT spent_epsilon, spent_delta, spent_rho FROM budgets WHERE id = ?",
                         (record.id,)).fetchone()
        raw, before = _cost(record.id, *row), self._filter_state(db, record.id)
        if not _agrees(raw, before):
            raise LedgerError(
                f"budget {record.label} is a filter ({record.kind}) that something other than its filter has charged "
                f"(spent ε={float(raw.epsilon):.6g}, δ={float(raw.delta):.3g}, ρ={float(raw.rho):.6g} against the "
                f"filter's ε={float(before.get('epsilon', 0)):.6g}, ρ={float(before.get('rho', 0)):.6g}; a dpframe "
                "from before the filter budgets?), so its filter no longer knows what was released; nothing was "
                "charged. Protect new data, or start a new budget")
        rule: Filter = filter_for(record.kind, record.total.epsilon, record.total.delta)
        state = rule.add(before, rule.increment(cost.epsilon, cost.rho))
        if not rule.admits(state):
            raise BudgetExceededError(
                f"{query} needs {cost.describe(record.kind)}, more than the budget's filter admits (the budget "
                f"{record.total.describe(record.kind)} has spent ε={float(record.spent.epsilon):.4g} as its filter "
                "reads it); nothing was charged")
        for key, value in state.items():
            db.execute("UPDATE filter_state SET value = ? WHERE budget_id = ? AND key = ?",
                       (_text(value), record.id, key))
        # A budget made before the mark existed gets it at its first charge since.
        db.execute("UPDATE budgets SET total_rho = ? WHERE id = ?", (_stored_rho(record.kind, record.total), record.id))
        return raw + cost

    def _insert(self, db: sqlite3.Connection, budget_id: str, line: Line, time: str) -> int:
        cursor = db.execute(
            "INSERT INTO charges (budget_id, time, query, columns, mechanism, epsilon, delta, rho, noise, rule, "
            "seeded, process) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (budget_id, time, line.query, ", ".join(line.columns), line.mechanism, _text(line.cost.epsilon),
             _text(line.cost.delta), _text(line.cost.rho), line.noise, line.rule, int(line.seeded), os.getpid()),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def _draw(self, budget_id: str, reserved: int, line: Line) -> None:
        """Turn part of a reserved line into a described one: the reserved line keeps the rest (removed at zero).

        The budget's spending does not change: the part was charged when the
        line was reserved. A part that is more than the line holds raises
        (ValueError) and nothing changes. Kept in memory and written with the
        next transaction (module docstring): if it is never written, the
        reserved line keeps its whole amount.
        """
        with self._lock:
            self._connection_here()  # a forked process has none of its parent's reservations
            held = self._reserved.get(reserved)
            if held is None or held[0] != budget_id:
                raise LedgerError(f"line {reserved} of budget {budget_id} is not a reserved line of this process (or "
                                  "is drawn already): there is nothing to draw from it")
            _, kind, amount = held
            left = amount - line.cost
            self._drawn.append((budget_id, reserved, _in_terms_of(line, kind), _now(), left))
            _WITH_DRAWS.add(self)
            if left.is_zero:
                del self._reserved[reserved]
            else:
                self._reserved[reserved] = (budget_id, kind, left)

    def _write_draws(self, db: sqlite3.Connection, drawn: Sequence[tuple[str, int, Line, str, Cost]]) -> None:
        """Write draws kept in memory: each drawn line, and what is left of its reserved line (removed at zero)."""
        for budget_id, reserved, line, time, left in drawn:
            where = "WHERE line = ? AND budget_id = ? AND mechanism = 'reserved'"
            if left.is_zero:
                cursor = db.execute(f"DELETE FROM charges {where}", (reserved, budget_id))
            else:
                cursor = db.execute(f"UPDATE charges SET epsilon = ?, delta = ?, rho = ? {where}",
                                    (_text(left.epsilon), _text(left.delta), _text(left.rho), reserved, budget_id))
            if cursor.rowcount:  # else the budget was deleted meanwhile: nothing to describe
                self._insert(db, budget_id, line, time)

    # -- the curator service's requests (docs/ledger.md) -----------------------------------
    @contextmanager
    def audited(self, who: str, request_id: str, plan: str) -> Iterator[None]:
        """Make every charge of this ledger inside the block (same thread or task) one of this request's.

        Each charge or reservation writes, in its own transaction, an audit
        row (time, who, request id, plan, budget, cost), and the first one
        registers the request as charged. A charge of a request that another
        release has registered (a retry running beside the first attempt, or
        after it) is refused with LedgerError, and nothing is written: one
        request id, at most one release.

        >>> import pandas as pd, dpframe
        >>> ledger = Ledger.in_memory()
        >>> p = pd.DataFrame({"x": [1, 2, 3]}).dp.protect(epsilon=1.0, ledger=ledger)
        >>> with ledger.audited("alice", "a1", plan="count"):
        ...     _ = p.dp.count(epsilon=0.25)
        >>> ledger.request_status("alice", "a1"), ledger.audit()[["who", "request_id", "epsilon"]].values.tolist()
        ('charged', [['alice', 'a1', 0.25]])
        >>> with ledger.audited("alice", "a1", plan="count"):
        ...     _ = p.dp.count(epsilon=0.25)
        Traceback (most recent call last):
        ...
        dpframe.errors.LedgerError: request 'a1' of 'alice' was already charged by another release; nothing was charged
        """
        if not isinstance(plan, str):
            raise TypeError(f"plan must be text (what the request asked), got {type(plan).__name__}")
        audit = _Audit(self.id, _check_text(who, "who"), _check_text(request_id, "request_id"), plan)
        token = _AUDITED.set(audit)
        try:
            yield
        finally:
            _AUDITED.reset(token)

    def _register(self, db: sqlite3.Connection, audit: _Audit, budget_id: str | None, cost: Cost) -> None:
        """Write the audit row of a charge and, at the request's first, register the request (in the charge's
        transaction); refuse a request that another release registered."""
        if not audit.registered:
            if db.execute("SELECT 1 FROM requests WHERE who = ? AND request_id = ?",
                          (audit.who, audit.request_id)).fetchone():
                raise LedgerError(f"request {audit.request_id!r} of {audit.who!r} was already charged by another "
                                  "release; nothing was charged")
            db.execute("INSERT INTO requests VALUES (?, ?, 'charged', NULL, ?)", (audit.who, audit.request_id, _now()))
        db.execute("INSERT INTO audit (time, who, request_id, plan, budget_id, epsilon, delta, rho) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (_now(), audit.who, audit.request_id, audit.plan, budget_id,
                                                       _text(cost.epsilon), _text(cost.delta), _text(cost.rho)))

    def store_result(self, who: str, request_id: str, payload: str) -> str:
        """Keep a request's result (its JSON payload) and mark it done; return the result it keeps.

        A request that charged nothing is registered here, with an audit row
        of zero cost (its plan when called inside its :meth:`audited` block).
        A request already done keeps its first result, which is returned.
        Inside the request's block, a request that another release charged is
        refused (LedgerError): that release stores its own result.

        >>> ledger = Ledger.in_memory()
        >>> ledger.store_result("alice", "a1", '{"value": 3}'), ledger.store_result("alice", "a1", '{"value": 4}')
        ('{"value": 3}', '{"value": 3}')
        >>> ledger.stored_result("alice", "a1"), ledger.request_status("alice", "a2")
        ('{"value": 3}', 'none')
        """
        _check_text(who, "who"), _check_text(request_id, "request_id")
        if not isinstance(payload, str):
            raise TypeError(f"a stored result is text (JSON), got {type(payload).__name__}")
        audit = _AUDITED.get()
        inside = audit is not None and (audit.ledger_id, audit.who, audit.request_id) == (self.id, who, request_id)
        if audit is None or not inside:
            audit = _Audit(self.id, who, request_id, "")
        with self._transaction() as db:
            row = db.execute("SELECT status, result FROM requests WHERE who = ? AND request_id = ?",
                             (who, request_id)).fetchone()
            if row is not None and row[0] == "done":
                return str(row[1])
            if row is not None and inside and not audit.registered:
                raise LedgerError(f"request {request_id!r} of {who!r} was charged by another release, which stores "
                                  "its result; nothing was stored")
            if row is None:
                self._register(db, audit, None, Cost())
            db.execute("UPDATE requests SET status = 'done', result = ? WHERE who = ? AND request_id = ?",
                       (payload, who, request_id))
        return payload

    def stored_result(self, who: str, request_id: str) -> str | None:
        """The result stored for the request (:meth:`store_result`), or None."""
        rows = self._read("SELECT result FROM requests WHERE who = ? AND request_id = ? AND status = 'done'",
                          (who, request_id))
        return str(rows[0][0]) if rows else None

    def request_status(self, who: str, request_id: str) -> RequestStatus:
        """``"none"`` (never seen), ``"charged"`` (charged, no result stored: running, or it failed or crashed
        after its charge, and must never be run again) or ``"done"`` (its result is stored)."""
        rows = self._read("SELECT status FROM requests WHERE who = ? AND request_id = ?", (who, request_id))
        if not rows:
            return "none"
        return "done" if rows[0][0] == "done" else "charged"

    def audit(self, who: str | None = None) -> pd.DataFrame:
        """The audit rows (of one analyst with ``who=``), oldest first: time, who, request id, plan, budget (its name
        or id), budget id and cost. The curator's: they show every analyst's plans and spending."""
        where, parameters = ("WHERE a.who = ?", (who,)) if who is not None else ("", ())
        rows = self._read("SELECT a.time, a.who, a.request_id, a.plan, coalesce(b.name, a.budget_id), a.budget_id, "
                          f"a.epsilon, a.delta, a.rho FROM audit a LEFT JOIN budgets b ON b.id = a.budget_id {where} "
                          "ORDER BY a.seq", parameters)
        return _table(rows, ["time", "who", "request_id", "plan", "budget", "budget_id", "epsilon", "delta", "rho"])

    # -- the curator's operations on the service (docs/server.md) -------------------
    def service_event(self, event: str, subject: str, detail: str) -> None:
        """Record one of the curator's operations on the service (``"analyst added"``, ``"token rotated"``,
        ``"mock made"``...): what it was, what it was about (``"analyst:alice"``, ``"dataset:census"``), and the
        details. An extended cap is recorded among its budget's :meth:`events` (:meth:`extend`) as well.

        >>> ledger = Ledger.in_memory()
        >>> ledger.service_event("analyst added", "analyst:alice", "budgets: census ε=1")
        >>> ledger.service_events()[["event", "subject", "detail"]].values.tolist()
        [['analyst added', 'analyst:alice', 'budgets: census ε=1']]
        """
        for value, what in ((event, "event"), (subject, "subject"), (detail, "detail")):
            if not isinstance(value, str):
                raise TypeError(f"{what} must be text, got {type(value).__name__}")
        with self._transaction() as db:
            db.execute("INSERT INTO service_events (time, event, subject, detail) VALUES (?, ?, ?, ?)",
                       (_now(), event, subject, detail))

    def service_events(self) -> pd.DataFrame:
        """The curator's operations on the service (:meth:`service_event`), oldest first: time, event, subject, detail."""
        rows = self._read("SELECT time, event, subject, detail FROM service_events ORDER BY seq")
        frame = pd.DataFrame(rows, columns=["time", "event", "subject", "detail"])
        frame["time"] = pd.to_datetime(frame["time"], utc=True, format="ISO8601")
        return frame

    def keep_mock(self, dataset: str, frame: str, budget_id: str | None, detail: str = "") -> None:
        """Keep a dataset's mock (its synthetic frame, encoded as text) in place of any earlier one, and record it
        as a service event (``"mock made"``, with ``detail``). ``budget_id``: the budget its synthesis was charged to.

        >>> ledger = Ledger.in_memory()
        >>> ledger.keep_mock("census", '{"frame": 1}', None, "ε=0.5")
        >>> ledger.kept_mock("census")[1], ledger.kept_mock("visits")
        ('{"frame": 1}', None)
        """
        _check_text(dataset, "dataset")
        if not isinstance(frame, str):
            raise TypeError(f"a mock is kept as text, got {type(frame).__name__}")
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO mocks (dataset, time, budget_id, frame) VALUES (?, ?, ?, ?)",
                       (dataset, _now(), budget_id, frame))
            db.execute("INSERT INTO service_events (time, event, subject, detail) VALUES (?, ?, ?, ?)",
                       (_now(), "mock made", f"dataset:{dataset}", detail))

    def kept_mock(self, dataset: str) -> tuple[pd.Timestamp, str] | None:
        """The dataset's mock (:meth:`keep_mock`): when it was made and its text, or None."""
        rows = self._read("SELECT time, frame FROM mocks WHERE dataset = ?", (dataset,))
        if not rows:
            return None
        return pd.Timestamp(rows[0][0]), str(rows[0][1])

    # -- reading -------------------------------------------------------------------
    def lines(self, budget_id: str) -> pd.DataFrame:
        """The budget's ledger lines, oldest first."""
        rows = self._read("SELECT time, query, columns, mechanism, epsilon, delta, rho, noise, rule, seeded "
                          "FROM charges WHERE budget_id = ? ORDER BY line", (budget_id,), with_draws=True)
        frame = _table(rows, LEDGER_COLUMNS)
        frame["seeded"] = frame["seeded"].astype(bool)
        return frame

    def count_lines(self, budget_id: str) -> int:
        """How many ledger lines the budget has."""
        return int(self._read("SELECT COUNT(*) FROM charges WHERE budget_id = ?", (budget_id,), with_draws=True)[0][0])

    def has_line(self, budget_id: str, query: str) -> bool:
        """Whether the budget has a ledger line of this ``query`` (asked before every charge: draws not yet written
        are looked at in memory, not written for it)."""
        with self._lock:
            if any(drawn[0] == budget_id and drawn[2].query == query for drawn in self._drawn):
                return True
            return self._has_line(self._connection_here(), budget_id, query)

    def _has_line(self, db: sqlite3.Connection, budget_id: str, query: str) -> bool:
        return db.execute("SELECT 1 FROM charges WHERE budget_id = ? AND query = ? LIMIT 1",
                          (budget_id, query)).fetchone() is not None

    def events(self, budget_id: str) -> pd.DataFrame:
        """When the budget was created, reconnected to, extended or renamed."""
        rows = self._read("SELECT time, event, detail FROM events WHERE budget_id = ? ORDER BY seq", (budget_id,))
        frame = pd.DataFrame(rows, columns=["time", "event", "detail"])
        frame["time"] = pd.to_datetime(frame["time"], utc=True, format="ISO8601")
        return frame

    def budgets(self) -> pd.DataFrame:
        """One row per budget: name (or id), kind, totals, spending and number of lines."""
        rows = self._read("SELECT b.id, b.name, b.kind, b.created, b.total_epsilon, b.total_delta, b.total_rho, "
                          "b.spent_epsilon, b.spent_delta, b.spent_rho, COUNT(c.line) FROM budgets b "
                          "LEFT JOIN charges c ON c.budget_id = b.id GROUP BY b.id ORDER BY b.created", with_draws=True)
        out = []
        for row in rows:
            record = (self.record(row[0]) if row[2] in FILTERED  # its spending is read through its filter
                      else BudgetRecord(row[0], row[1], row[2], row[3], _cost(row[0], *row[4:7]),
                                        _cost(row[0], *row[7:10])))
            out.append({"budget": record.label, "id": record.id, "kind": record.kind, "created": record.created,
                        "total": record.total.describe(record.kind), "spent": record.spent.describe(record.kind),
                        "remaining": (record.total - record.spent).describe(record.kind), "lines": row[10]})
        return pd.DataFrame(out, columns=["budget", "id", "kind", "created", "total", "spent", "remaining", "lines"])

    def __repr__(self) -> str:
        if self.is_in_memory:
            return "Ledger(in memory: forgotten when this process ends)"
        return f"Ledger({self.location})"


# The process-wide in-memory ledger of DPFRAME_LEDGER=:memory:, kept for the life of the process.
_PROCESS_MEMORY: list[Ledger] = []



# Ledgers that have made draws (Ledger._draw), so that those still in memory are written when the process exits.
_WITH_DRAWS: weakref.WeakSet[Ledger] = weakref.WeakSet()


@atexit.register
def _write_draws_at_exit() -> None:
    """Write the draws still in memory. If this fails, their reserved lines keep their whole amounts, charged."""
    for ledger in list(_WITH_DRAWS):
        if ledger._drawn and not ledger.is_in_memory and ledger._process is process.current():
            with suppress(sqlite3.Error, LedgerError), ledger._transaction():
                pass
