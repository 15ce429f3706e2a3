"""The curator's view of the service: caps, allotments, spending over time, the audit log, events and mocks.

:func:`curator_view` reads a :class:`~dpframe.service.config.Config` and its ledger into a
:class:`CuratorView`, and :func:`render` lays it out as one HTML page (``dpframe/service/templates``), served at
``/curator`` (the curator's token only: :mod:`dpframe.service.server`) or written by ``dpframe audit CONFIG --out
report.html``. Nothing of the data is read: only the ledger's budgets, lines, audit rows and service events. Its
amounts are the ledger's own, formatted as the ledger formats them (:meth:`~dpframe.accounting.costs.Cost.describe`).

Plans carry analysts' strings (a column key, a query expression), so the page is rendered with Jinja2's
autoescape on every value, the plot is SVG drawn here from numbers (its few texts are escaped by the template),
and the page runs no script at all: its Content-Security-Policy (:data:`PAGE_POLICY`) allows only its own
stylesheet, by hash. docs/server.md, "The curator's page and audit report".

The curator's browser session (:func:`session_cookie`) is a signed expiry, stateless so that every worker process
checks it alike, and bound to the curator's token hash so that a new token ends every session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib.resources
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from fractions import Fraction
from urllib.parse import urlencode

import jinja2
import pandas as pd
from markupsafe import Markup

from dpframe import __version__
from dpframe.accounting.budget import Budget
from dpframe.accounting.costs import BudgetKind, Cost
from dpframe.accounting.ledger import Ledger
from dpframe.errors import LedgerError
from dpframe.service.config import Config
from dpframe.service.plan import Plan, as_code

__all__ = ["PAGE_POLICY", "SECURITY_HEADERS", "CuratorView", "Filters", "curator_view", "render", "session_cookie",
           "valid_session"]

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("dpframe.service", "templates"),
    autoescape=True,  # every value is escaped: plans, analysts' names, events' details; only the stylesheet is Markup
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
# The page's one stylesheet, allowed by its hash: no other style, and no script, image, frame or font.
_STYLE = importlib.resources.files("dpframe.service").joinpath("templates/curator.css").read_text(encoding="utf-8")
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode("utf-8")).digest()).decode("ascii")
# The policy of the page and of the static report (a <meta> element cannot carry frame-ancestors: browsers ignore it
# there, so the served page's header adds it, SECURITY_HEADERS).
PAGE_POLICY = (f"default-src 'none'; script-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src data:; "
               "form-action 'self'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": PAGE_POLICY + "; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}

# The audit rows a page shows at most, unless asked for more (up to MAX_ROWS).
ROWS = 200
MAX_ROWS = 5000
# The characters of a plan a row shows (a plan may be as long as the body limit); Ledger.audit() has them all.
PLAN_SHOWN = 4000
# How long a curator's login lasts.
SESSION_SECONDS = 8 * 3600
_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d")
_ALLOTMENT = "analyst:{analyst}/dataset:{dataset}"


# -- the view model --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Amounts:
    """A budget's total, spending and what is left, as the ledger formats them; ``in_ledger`` False: not opened yet
    (no analyst has queried under it), so its total is the config's and nothing is spent."""

    total: str
    spent: str
    remaining: str
    in_ledger: bool


@dataclass(frozen=True)
class CapView:
    """A cap (ledger name ``dataset:NAME`` or ``cap:NAME``) and the datasets under it."""

    name: str
    datasets: tuple[str, ...]
    amounts: Amounts


@dataclass(frozen=True)
class AllotmentView:
    """An analyst's allotment of a dataset's cap; ``in_config`` False: an analyst since removed from the config
    (its spending still counts against the cap)."""

    analyst: str
    dataset: str
    amounts: Amounts
    in_config: bool


@dataclass(frozen=True)
class AuditRow:
    """One audit row: a charge of a request (or a request that charged nothing, at zero cost); ``code``: the plan as
    the pandas code an analyst would type (:func:`~dpframe.service.plan.as_code`, empty if it cannot be read as a
    plan) and ``plan``: its first :data:`PLAN_SHOWN` characters, ``cut`` how many more it has."""

    time: str
    who: str
    request_id: str
    dataset: str
    code: str
    plan: str
    cut: int
    cost: str


@dataclass(frozen=True)
class MockView:
    """A dataset's mock: offered or not, when it was made, and its cost (its event's, or what it would cost)."""

    dataset: str
    status: str
    cost: str


@dataclass(frozen=True)
class PlotLine:
    """One analyst's cumulative spending on a dataset: an SVG polyline's points (a step function)."""

    analyst: str
    color: str
    points: str
    spent: str
    legend_y: float


@dataclass(frozen=True)
class Plot:
    """A dataset's plot: its analysts' cumulative ε (ρ under a zCDP cap) over time, and the cap as a line."""

    dataset: str
    unit: str
    lines: tuple[PlotLine, ...]
    cap_y: float
    cap_label: str
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    width: int = 760
    height: int = 280
    left: int = 64
    right: int = 600  # the plot area's right edge: the legend is beyond it
    top: int = 16
    bottom: int = 236


@dataclass(frozen=True)
class Filters:
    """Which audit rows to show: an analyst, a dataset, a date range (UTC days, both ends included), text the plan
    contains (any case), and which page of ``limit`` rows (newest first).

    >>> Filters.from_query({"analyst": "alice", "since": "2026-01-31", "page": "2"}).query(page=3)
    'analyst=alice&since=2026-01-31&page=3'
    >>> Filters.from_query({"until": "31/01/2026"})
    Traceback (most recent call last):
    ...
    ValueError: until: give a date as YYYY-MM-DD
    """

    analyst: str = ""
    dataset: str = ""
    since: date | None = None
    until: date | None = None
    plan: str = ""
    page: int = 1
    limit: int = ROWS

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Filters:
        """The filters of a page's query string (a ValueError names a malformed one, never quoting it)."""
        days: dict[str, date | None] = {}
        for key in ("since", "until"):
            try:
                days[key] = date.fromisoformat(query[key]) if query.get(key) else None
            except ValueError:
                raise ValueError(f"{key}: give a date as YYYY-MM-DD") from None
        numbers = {}
        for key, default, high in (("page", 1, 10**9), ("limit", ROWS, MAX_ROWS)):
            text = query.get(key) or str(default)
            if not _digits(text) or not 1 <= int(text) <= high:
                raise ValueError(f"{key}: give a whole number from 1 to {high}")
            numbers[key] = int(text)
        return cls(analyst=query.get("analyst", ""), dataset=query.get("dataset", ""), since=days["since"],
                   until=days["until"], plan=query.get("plan", ""), page=numbers["page"], limit=numbers["limit"])

    def query(self, page: int) -> str:
        """The query string of these filters' page ``page`` (the defaults left out)."""
        pairs = [("analyst", self.analyst), ("dataset", self.dataset),
                 ("since", self.since.isoformat() if self.since else ""),
                 ("until", self.until.isoformat() if self.until else ""), ("plan", self.plan),
                 ("limit", str(self.limit) if self.limit != ROWS else ""), ("page", str(page) if page != 1 else "")]
        return urlencode([(key, value) for key, value in pairs if value])

    def matching(self, audit: pd.DataFrame) -> pd.DataFrame:
        """The audit rows (with their ``dataset`` column) these filters keep, in the ledger's order."""
        keep = pd.Series(True, index=audit.index)
        if self.analyst:
            keep &= audit["who"] == self.analyst
        if self.dataset:
            keep &= audit["dataset"] == self.dataset
        if self.since is not None:
            keep &= audit["time"] >= pd.Timestamp(self.since, tz="UTC")
        if self.until is not None:
            keep &= audit["time"] < pd.Timestamp(self.until + timedelta(days=1), tz="UTC")
        if self.plan:
            keep &= audit["plan"].str.contains(self.plan, case=False, regex=False)
        return audit[keep]


@dataclass(frozen=True)
class CuratorView:
    """Everything the curator's page shows: no value of the data, only what the config and the ledger hold."""

    generated: str
    caps: tuple[CapView, ...]
    allotments: tuple[AllotmentView, ...]
    plots: tuple[Plot, ...]
    audit: tuple[AuditRow, ...]
    matching: int
    first: int
    filters: Filters
    events: tuple[tuple[str, str, str, str], ...]
    mocks: tuple[MockView, ...]
    analysts: tuple[str, ...]
    datasets: tuple[str, ...]
    pages: dict[str, str] = field(default_factory=dict)

    @property
    def not_shown(self) -> int:
        """How many matching audit rows this page does not show."""
        return self.matching - len(self.audit)


def curator_view(config: Config, ledger: Ledger, filters: Filters | None = None) -> CuratorView:
    """The curator's view of a service's config and ledger (read only: nothing is written).

    >>> import pandas as pd
    >>> from dpframe.service.config import Config
    >>> config = Config.model_validate({"ledger": ":memory:", "datasets": {"census": {"path": "c.csv",
    ...     "schema": "c.json", "total": {"epsilon": 2.0}}}, "analysts": {"alice": {"token_sha256": "1" * 64,
    ...     "budgets": {"census": {"epsilon": 1.0}}}}})
    >>> ledger = Ledger.in_memory()
    >>> cap = Budget(epsilon=2.0, name="dataset:census", ledger=ledger)
    >>> p = pd.DataFrame({"x": [1, 2]}).dp.protect(budget=cap.allot("analyst:alice/dataset:census", epsilon=1.0))
    >>> with ledger.audited("alice", "r1", 'census: {"count"}'):
    ...     _ = p.dp.count(epsilon=0.25)
    >>> view = curator_view(config, ledger)
    >>> view.caps[0].amounts.spent, view.allotments[0].amounts.remaining, view.audit[0].cost
    ('ε=0.25, δ=0', 'ε=0.75, δ=0', 'ε=0.25, δ=0')
    >>> view.mocks[0].status, view.mocks[0].cost
    ('not made', 'ε=0.2, δ=0')
    """
    filters = Filters() if filters is None else filters
    caps = []
    for name in dict.fromkeys(config.cap_name(dataset) for dataset in config.datasets):
        members = tuple(dataset for dataset in config.datasets if config.cap_name(dataset) == name)
        total = config.cap_total(members[0])
        caps.append(CapView(name, members, _amounts(ledger, name, total.kind, total.cost)))
    allotments = _allotments(config, ledger)
    audit = ledger.audit()
    audit["dataset"] = [_dataset_of(budget, plan) for budget, plan in zip(audit["budget"], audit["plan"])]
    kinds = {name: config.cap_total(name).kind for name in config.datasets}
    matching = filters.matching(audit).iloc[::-1]  # newest first
    first = (filters.page - 1) * filters.limit
    shown = matching.iloc[first:first + filters.limit]
    rows = tuple(AuditRow(_time(row["time"]), row["who"], row["request_id"], row["dataset"],
                          _visible(_code(row["plan"])), _visible(row["plan"][:PLAN_SHOWN]),
                          max(0, len(row["plan"]) - PLAN_SHOWN),
                          _cost(row["epsilon"], row["delta"], row["rho"]).describe(kinds.get(row["dataset"], "approx")))
                 for row in shown.to_dict("records"))
    events = ledger.service_events()
    pages = {}
    if filters.page > 1:
        pages["previous"] = filters.query(filters.page - 1)
    if first + filters.limit < len(matching):
        pages["next"] = filters.query(filters.page + 1)
    return CuratorView(
        generated=_time(pd.Timestamp.now(tz="UTC")), caps=tuple(caps), allotments=allotments,
        plots=tuple(_plot(config, ledger, dataset, allotments) for dataset in config.datasets),
        audit=rows, matching=len(matching), first=first, filters=filters,
        events=tuple((_time(row["time"]), row["event"], row["subject"], row["detail"])
                     for row in events.to_dict("records")),
        mocks=tuple(_mock(config, ledger, events, dataset) for dataset in config.datasets),
        analysts=tuple(sorted({*config.analysts, *(view.analyst for view in allotments)})),
        datasets=tuple(config.datasets), pages=pages)


def _amounts(ledger: Ledger, name: str, kind: BudgetKind, configured: Cost) -> Amounts:
    try:
        budget = Budget.open(name, ledger=ledger)
    except LedgerError:  # not opened yet: the config's total, nothing spent
        return Amounts(configured.describe(kind), Cost().describe(kind), configured.describe(kind), False)
    return Amounts(budget.total.cost.describe(budget.kind), budget.spent.cost.describe(budget.kind),
                   budget.remaining.cost.describe(budget.kind), True)


def _allotments(config: Config, ledger: Ledger) -> tuple[AllotmentView, ...]:
    """The config's allotments, and those of the ledger whose analyst or budget the config no longer has."""
    views = [AllotmentView(analyst, dataset, _amounts(ledger, _ALLOTMENT.format(analyst=analyst, dataset=dataset),
                                                      total.kind, total.cost), True)
             for analyst, spec in config.analysts.items() for dataset, total in spec.budgets.items()]
    configured = {(view.analyst, view.dataset) for view in views}
    for name in ledger.budgets()["budget"]:
        analyst, dataset = _parts(str(name).strip("'"))
        if analyst and dataset in config.datasets and (analyst, dataset) not in configured:
            total = config.cap_total(dataset)
            views.append(AllotmentView(analyst, dataset, _amounts(ledger, str(name).strip("'"), total.kind,
                                                                  total.cost), False))
    return tuple(views)


def _parts(budget: str) -> tuple[str, str]:
    """The analyst and the dataset of an allotment's ledger name (empty strings for another budget's)."""
    analyst, slash, dataset = budget.partition("/dataset:")
    if not slash or not analyst.startswith("analyst:"):
        return "", ""
    return analyst.removeprefix("analyst:"), dataset


def _code(plan: str) -> str:
    """An audit row's plan (``"DATASET: {json}"``, as the server writes it) as pandas code: its first
    :data:`PLAN_SHOWN` characters; empty when it is not a plan this version reads."""
    try:
        code = as_code(Plan.model_validate_json(plan.partition(": ")[2]))
    except ValueError:  # pydantic's ValidationError (a ValueError): an older or hand-made row
        return ""
    return code if len(code) <= PLAN_SHOWN else code[:PLAN_SHOWN] + " …"


def _dataset_of(budget: object, plan: str) -> str:
    """An audit row's dataset: its allotment's, or (a row that charged nothing) the server's prefix of the plan."""
    dataset = _parts(str(budget))[1] if isinstance(budget, str) else ""
    return dataset or plan.partition(": ")[0]


# Characters that do not show as themselves: controls, formats (bidi overrides and isolates, zero widths), private
# use, unassigned, surrogates, line and paragraph separators.
_HIDDEN = ("Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp")


def _visible(text: str) -> str:
    r"""``text`` with each character that does not show as itself written as its escape, so that an analyst's string
    in a plan cannot reorder or hide what the curator reads (autoescape makes it inert, this makes it legible).

    >>> print(_visible("age\u202e == 1\u200b"))
    age\u202e == 1\u200b
    """
    return "".join(_escape(c) if unicodedata.category(c) in _HIDDEN else c for c in text)


def _escape(character: str) -> str:
    code = ord(character)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _cost(epsilon: float, delta: float, rho: float) -> Cost:
    return Cost(Fraction(epsilon), Fraction(delta), Fraction(rho))


def _time(moment: pd.Timestamp) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _mock(config: Config, ledger: Ledger, events: pd.DataFrame, dataset: str) -> MockView:
    total = config.mock_total(dataset)
    if total is None:
        return MockView(dataset, "offered: no", "")
    if ledger.kept_mock(dataset) is None:
        return MockView(dataset, "not made", total.cost.describe(total.kind))
    made = events[(events["event"] == "mock made") & (events["subject"] == f"dataset:{dataset}")]
    if made.empty:  # kept without its event: a ledger written around keep_mock
        return MockView(dataset, "made", "")
    return MockView(dataset, f"made {_time(made['time'].iloc[-1])}", str(made["detail"].iloc[-1]))


# -- the plot ----------------------------------------------------------------------------------------------------
def _plot(config: Config, ledger: Ledger, dataset: str, allotments: tuple[AllotmentView, ...]) -> Plot:
    """Each analyst's cumulative spending on ``dataset`` (its allotment's ledger lines) as step lines, in SVG units."""
    cap, shared = config.cap_total(dataset), config.datasets[dataset].cap
    amount = "rho" if cap.kind == "zcdp" else "epsilon"
    steps: dict[str, pd.DataFrame] = {}
    for view in allotments:
        if view.dataset == dataset and view.amounts.in_ledger:
            lines = ledger.lines(Budget.open(_ALLOTMENT.format(analyst=view.analyst, dataset=dataset),
                                             ledger=ledger).id)
            if not lines.empty:
                steps[view.analyst] = pd.DataFrame({"time": lines["time"], "spent": lines[amount].cumsum()})
    cap_amount = float(cap.cost.rho if cap.kind == "zcdp" else cap.cost.epsilon)
    top = max([cap_amount, *(float(frame["spent"].max()) for frame in steps.values())]) * 1.08 or 1.0
    times = [moment.timestamp() for frame in steps.values() for moment in frame["time"]]
    start, end = (min(times), max(times)) if times else (time.time() - 3600, time.time())
    if end - start < 60:  # one moment: a minute either side
        start, end = start - 60, end + 60
    shape = Plot(dataset, "ρ" if cap.kind == "zcdp" else "ε", (), 0.0, "", (), ())

    def x(seconds: float) -> float:
        return round(shape.left + (seconds - start) / (end - start) * (shape.right - shape.left), 2)

    def y(value: float) -> float:
        return round(shape.bottom - value / top * (shape.bottom - shape.top), 2)

    lines_drawn = []
    for index, (analyst, frame) in enumerate(sorted(steps.items())):
        points, level = [(x(start), y(0.0))], 0.0
        for moment, spent in zip(frame["time"], frame["spent"]):
            points += [(x(moment.timestamp()), y(level)), (x(moment.timestamp()), y(float(spent)))]
            level = float(spent)
        points.append((x(end), y(level)))
        lines_drawn.append(PlotLine(analyst, _PALETTE[index % len(_PALETTE)],
                                    " ".join(f"{a},{b}" for a, b in points), f"{level:.6g}",
                                    shape.top + 8 + 18 * index))
    # Labels as fine as the span needs: seconds within two hours, minutes within two days, days beyond.
    layout = "%H:%M:%S" if end - start < 7200 else "%m-%d %H:%M" if end - start < 172800 else "%Y-%m-%d"
    x_ticks = tuple((x(start + (end - start) * i / 4),
                     datetime.fromtimestamp(start + (end - start) * i / 4, timezone.utc).strftime(layout))
                    for i in range(5))
    y_ticks = tuple((y(top * i / 4), f"{top * i / 4:.3g}") for i in range(5))
    return replace(shape, lines=tuple(lines_drawn), cap_y=y(cap_amount),
                   height=max(shape.height, int(shape.top + 18 * len(lines_drawn) + 8)),  # room for the legend
                   cap_label=f"{'cap' if shared is None else f'shared cap {shared}'} {cap.cost.describe(cap.kind)}",
                   x_ticks=x_ticks, y_ticks=y_ticks)


# -- the page ----------------------------------------------------------------------------------------------------
def render(view: CuratorView | None, *, served: bool, message: str = "") -> str:
    """The page: the view (None: the login form, with ``message``), served at ``/curator`` (``served``: with its
    filter form) or as a static file (the filters as text)."""
    return _TEMPLATES.get_template("curator.html.j2").render(
        view=view, served=served, message=message, policy=PAGE_POLICY, style=Markup(_STYLE), version=__version__)


# -- the curator's session -------------------------------------------------------------------------------------------
def session_cookie(key: bytes, token_sha256: str, now: float | None = None) -> str:
    """A session's cookie value: its expiry (:data:`SESSION_SECONDS` from ``now``) and an HMAC over it and the
    curator's token hash, under the server's ``key``.

    >>> cookie = session_cookie(b"k" * 32, "a" * 64, now=1000.0)
    >>> valid_session(b"k" * 32, "a" * 64, cookie, now=1001.0), valid_session(b"k" * 32, "b" * 64, cookie, now=1001.0)
    (True, False)
    >>> valid_session(b"k" * 32, "a" * 64, cookie, now=1000.0 + SESSION_SECONDS)  # expired
    False
    """
    expires = int((time.time() if now is None else now) + SESSION_SECONDS)
    return f"{expires}.{_signature(key, token_sha256, expires)}"


def valid_session(key: bytes, token_sha256: str, cookie: str, now: float | None = None) -> bool:
    """Whether ``cookie`` is a session of the curator whose token hash is ``token_sha256``, not yet expired."""
    expires, _, signature = cookie.partition(".")
    if not _digits(expires) or len(expires) > 12:
        return False
    now = time.time() if now is None else now
    fresh = now < int(expires) <= now + SESSION_SECONDS
    # Compared whatever the expiry, so that the time taken does not tell an expired cookie from a forged one.
    signed = hmac.compare_digest(signature.encode("ascii", "replace"),
                                 _signature(key, token_sha256, int(expires)).encode("ascii"))
    return fresh and signed


def _digits(text: str) -> bool:
    """Whether ``text`` is a whole number in ASCII digits (str.isdigit alone takes '²', which int() refuses)."""
    return text.isascii() and text.isdigit()


def _signature(key: bytes, token_sha256: str, expires: int) -> str:
    return hmac.new(key, f"dpframe curator session|{expires}|{token_sha256}".encode("ascii"), "sha256").hexdigest()

