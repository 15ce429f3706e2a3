"""The curator's page (/curator) and `dpframe audit`: the ledger's own numbers, the curator's token only, a
Content-Security-Policy and escaping that keep an analyst's hostile strings inert -- in a real headless browser.

Analysts' queries run through the real app (fastapi's TestClient, or `dpframe serve` on a free port for the
browser); the numbers the page shows are compared with the ledger's Budget readings.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import redirect_stderr
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("jinja2")
httpx = pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402
from test_service_server import TOKENS, launch, stop, write_files  # noqa: E402  (the service's test fixtures)

from dpframe.__main__ import main  # noqa: E402
from dpframe.accounting.budget import Budget  # noqa: E402
from dpframe.accounting.ledger import Ledger  # noqa: E402
from dpframe.service import curator  # noqa: E402
from dpframe.service.config import load_config  # noqa: E402
from dpframe.service.plan import Plan, as_code  # noqa: E402
from dpframe.service.server import LOGIN_BURST, LOGIN_RATE, SESSION_COOKIE, RateLimiter, create_app  # noqa: E402
from dpframe.service.tokens import hash_token  # noqa: E402

CURATOR = "curator-" + "k" * 40
# Analysts' strings that would run script, inject an element or end the stylesheet if a page did not escape them.
HOSTILE = ('<script>window.pwned=1</script>', '"><img src=x onerror="window.pwned=1">',
           '</style><svg onload="window.pwned=1"></svg>')


def with_curator(config: Path, token: str = CURATOR) -> Path:
    """The config with a [curator] table (and a dataset that offers no mock)."""
    text = config.read_text().replace("rows_public = true\n", "rows_public = true\nmock = false\n")
    config.write_text(text + f'\n[curator]\ntoken_sha256 = "{hash_token(token)}"\n')
    return config


def query_count(request_id: str, expression: str, epsilon: float = 0.1) -> dict[str, Any]:
    """``p.query(expression).dp.count(epsilon=...)``'s plan: charged, its expression in the audit row's plan."""
    return {"request_id": request_id, "result": 3, "steps": [
        {"op": "call", "target": 0, "name": "query", "args": [expression]},
        {"op": "getattr", "target": 1, "name": "dp"},
        {"op": "call", "target": 2, "name": "count", "kwargs": {"epsilon": epsilon}}]}


def visits_mean(request_id: str, rho: float) -> dict[str, Any]:
    return {"request_id": request_id, "result": 3, "steps": [
        {"op": "getitem", "target": 0, "key": "visits"}, {"op": "getattr", "target": 1, "name": "dp"},
        {"op": "call", "target": 2, "name": "mean", "kwargs": {"bounds": [0, 10], "rho": rho}}]}


def run_queries(send: Any) -> None:
    """Alice's and carol's queries on census (one per hostile string) and alice's and bob's on visits."""
    for index, hostile in enumerate(HOSTILE):
        assert send("alice", "census", query_count(f"a{index:031d}", f"sex == {json.dumps(hostile)}")) == 200
    assert send("carol", "census", query_count("c" * 32, "age >= 40", 0.25)) == 200
    assert send("alice", "visits", visits_mean("d" * 32, 0.01)) == 200
    assert send("bob", "visits", visits_mean("b" * 32, 0.02)) == 200


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    """A service with a curator, after the analysts' queries: its TestClient and its config."""
    config = with_curator(write_files(tmp_path))
    client = TestClient(create_app(config))

    def send(who: str, dataset: str, plan: dict[str, Any]) -> int:
        return client.post(f"/v1/datasets/{dataset}/run", json=plan,
                           headers={"Authorization": f"Bearer {TOKENS[who]}"}).status_code

    run_queries(send)
    yield client, config
    client.close()


def described(name: str, ledger: Ledger) -> tuple[str, str, str]:
    """A budget's total, spent and remaining as the ledger formats them."""
    budget = Budget.open(name, ledger=ledger)
    return tuple(reading.cost.describe(budget.kind)  # type: ignore[return-value]
                 for reading in (budget.total, budget.spent, budget.remaining))


# -- the view model --------------------------------------------------------------------------------------------
def test_the_view_holds_the_ledgers_numbers(app: tuple[TestClient, Path]) -> None:
    _, path = app
    config = load_config(path)
    ledger = Ledger.at(config.ledger)
    ledger.keep_mock("census", "{}", None, "ε=0.2, δ=1e-07")
    ledger.service_event("analyst added", "analyst:dave", "budgets: census ε=1")
    view = curator.curator_view(config, ledger)
    assert [(cap.name, cap.datasets) for cap in view.caps] == [("cap:people", ("census",)), ("dataset:visits",
                                                                                              ("visits",))]
    for cap in view.caps:
        assert (cap.amounts.total, cap.amounts.spent, cap.amounts.remaining) == described(cap.name, ledger)
    assert view.caps[0].amounts.spent == "ε=0.55, δ=0" and view.caps[1].amounts.spent == "ρ=0.03"
    assert {(a.analyst, a.dataset) for a in view.allotments} == {("alice", "census"), ("alice", "visits"),
                                                                 ("bob", "visits"), ("carol", "census")}
    for allotment in view.allotments:
        name = f"analyst:{allotment.analyst}/dataset:{allotment.dataset}"
        amounts = allotment.amounts
        assert (amounts.total, amounts.spent, amounts.remaining) == described(name, ledger) and amounts.in_ledger
    # The audit log, newest first, with each row's dataset and cost as the ledger formats it.
    audit = ledger.audit()
    assert view.matching == len(audit) == 6 and view.not_shown == 0
    assert [row.request_id for row in view.audit] == audit["request_id"].tolist()[::-1]
    assert [row.dataset for row in view.audit] == ["visits", "visits", "census", "census", "census", "census"]
    assert [row.cost for row in view.audit][:3] == ["ρ=0.02", "ρ=0.01", "ε=0.25, δ=0"]
    assert HOSTILE[0] in view.audit[-1].plan
    # Each analyst's plot ends at its spending; the cap's line is the cap's total.
    census = next(plot for plot in view.plots if plot.dataset == "census")
    assert census.unit == "ε" and census.cap_label == "shared cap people ε=2, δ=1e-06"
    assert {line.analyst: float(line.spent) for line in census.lines} == {"alice": pytest.approx(0.3),
                                                                         "carol": pytest.approx(0.25)}
    visits = next(plot for plot in view.plots if plot.dataset == "visits")
    assert visits.unit == "ρ" and {line.analyst for line in visits.lines} == {"alice", "bob"}
    assert visits.cap_label == "cap ρ=0.5"
    heights = [float(point.split(",")[1]) for point in census.lines[0].points.split()]
    assert heights == sorted(heights, reverse=True) and census.cap_y < min(heights)  # rising, below the cap
    # Mocks: made (its event's cost), and offered: no; the service events.
    census_mock, visits_mock = view.mocks
    assert census_mock.status.startswith("made 20") and census_mock.cost == "ε=0.2, δ=1e-07"
    assert (visits_mock.status, visits_mock.cost) == ("offered: no", "")
    assert [event[1:] for event in view.events] == [("mock made", "dataset:census", "ε=0.2, δ=1e-07"),
                                                     ("analyst added", "analyst:dave", "budgets: census ε=1")]


def test_a_mock_not_made_says_what_it_would_cost_and_a_removed_analyst_still_shows(app: tuple[TestClient, Path]
                                                                                   ) -> None:
    _, path = app
    config = load_config(path)
    ledger = Ledger.at(config.ledger)
    without_carol = config.model_copy(update={"analysts": {name: spec for name, spec in config.analysts.items()
                                                           if name != "carol"}})
    view = curator.curator_view(without_carol, ledger)
    assert view.mocks[0].status == "not made" and view.mocks[0].cost == "ε=0.2, δ=1e-07"  # a tenth of the cap
    carol = [a for a in view.allotments if a.analyst == "carol"]
    assert len(carol) == 1 and not carol[0].in_config
    assert carol[0].amounts.spent == described("analyst:carol/dataset:census", ledger)[1]
    assert "carol" in view.analysts


def test_the_audit_filters(app: tuple[TestClient, Path]) -> None:
    _, path = app
    config = load_config(path)
    ledger = Ledger.at(config.ledger)

    def shown(**filters: Any) -> list[str]:
        return [row.request_id for row in curator.curator_view(config, ledger, curator.Filters(**filters)).audit]

    assert shown(analyst="bob") == ["b" * 32]
    assert shown(dataset="visits") == ["b" * 32, "d" * 32]
    assert shown(analyst="alice", dataset="census") == [f"a{i:031d}" for i in (2, 1, 0)]
    assert shown(plan="ONERROR") == ["a" + "1".zfill(31)]  # any case
    assert shown(plan="age >= 40") == ["c" * 32]
    today = ledger.audit()["time"].min().date()  # the UTC day of the first query; a filter includes whole days
    assert len(shown(since=today - timedelta(days=1), until=today + timedelta(days=1))) == 6
    assert shown(until=today - timedelta(days=2)) == [] and shown(since=today + timedelta(days=2)) == []
    paged = curator.curator_view(config, ledger, curator.Filters(limit=4, page=1))
    assert len(paged.audit) == 4 and paged.not_shown == 2 and paged.pages == {"next": "limit=4&page=2"}
    second = curator.curator_view(config, ledger, curator.Filters(limit=4, page=2))
    assert len(second.audit) == 2 and second.first == 4 and second.pages == {"previous": "limit=4"}
    assert "2 more row(s) not shown" in curator.render(paged, served=False)


def test_a_long_plan_is_cut_where_shown(app: tuple[TestClient, Path]) -> None:
    client, path = app
    literal = "x" * (curator.PLAN_SHOWN + 500)
    response = client.post("/v1/datasets/census/run", json=query_count("e" * 32, f"sex == {literal!r}"),
                           headers={"Authorization": f"Bearer {TOKENS['carol']}"})
    assert response.status_code == 200
    config = load_config(path)
    ledger = Ledger.at(config.ledger)
    whole = ledger.audit("carol")["plan"].iloc[-1]
    row = curator.curator_view(config, ledger, curator.Filters(plan=literal)).audit[0]  # the filter reads it all
    assert row.plan == whole[:curator.PLAN_SHOWN] and row.cut == len(whole) - curator.PLAN_SHOWN > 500
    assert f"{row.cut} more characters" in curator.render(curator.curator_view(config, ledger), served=False)


# -- who may open the page ---------------------------------------------------------------------------------------
def is_login_form(response: httpx.Response) -> bool:
    return 'action="/curator/login"' in response.text and 'id="audit"' not in response.text


def test_only_the_curators_token_opens_the_page(app: tuple[TestClient, Path]) -> None:
    client, _ = app
    nobody = client.get("/curator")
    assert nobody.status_code == 401 and is_login_form(nobody)
    for token in (*TOKENS.values(), "x" * 43, CURATOR + "x"):
        refused = client.get("/curator", headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 401 and is_login_form(refused) and "not the curator" in refused.text
    for header in (f"Basic {CURATOR}", CURATOR):
        assert client.get("/curator", headers={"Authorization": header}).status_code == 401
    opened = client.get("/curator", headers={"Authorization": f"Bearer {CURATOR}"})
    assert opened.status_code == 200 and 'id="audit"' in opened.text
    assert client.get("/curator", params={"token": CURATOR}).status_code == 401  # a token in the URL is not one
    # The curator's token is no analyst's: the analysts' API refuses it.
    assert client.get("/v1/datasets", headers={"Authorization": f"Bearer {CURATOR}"}).status_code == 401


def test_login_sets_a_strict_signed_cookie_that_ends(app: tuple[TestClient, Path]) -> None:
    client, config = app
    wrong = client.post("/curator/login", data={"token": TOKENS["alice"]}, follow_redirects=False)
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers and is_login_form(wrong)
    signed_in = client.post("/curator/login", data={"token": CURATOR}, follow_redirects=False)
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/curator"
    cookie = signed_in.headers["set-cookie"]
    assert {"HttpOnly", "Path=/curator", "SameSite=strict", f"Max-Age={curator.SESSION_SECONDS}"} <= {
        part.strip() for part in cookie.split(";")}
    assert "Secure" not in cookie  # plain http here; https gets Secure (test_the_cookie_is_secure_over_https)
    value = cookie.split(";")[0].split("=", 1)[1]
    assert client.get("/curator", cookies={SESSION_COOKIE: value}).status_code == 200
    # A forged, tampered or expired cookie is refused (and dropped).
    key = client.app.state.service.session_key  # type: ignore[attr-defined]
    expired = curator.session_cookie(key, hash_token(CURATOR), now=time.time() - curator.SESSION_SECONDS - 1)
    far = str(int(time.time()) + 10 * curator.SESSION_SECONDS)
    for bad in ("1", value[:-1] + ("0" if value[-1] != "0" else "1"), expired, far + "." + value.split(".")[1],
                curator.session_cookie(b"another key" * 3, hash_token(CURATOR))):
        refused = client.get("/curator", cookies={SESSION_COOKIE: bad})
        assert refused.status_code == 401 and is_login_form(refused) and "session has ended" in refused.text
        assert SESSION_COOKIE in refused.headers.get("set-cookie", "")  # deleted
    # A new curator's token (the config read again) ends every session; without [curator], no page at all.
    text = config.read_text()
    config.write_text(text.replace(hash_token(CURATOR), hash_token(CURATOR + "2")) + "# rotated\n")
    assert client.get("/curator", cookies={SESSION_COOKIE: value}).status_code == 401
    config.write_text(text.split("[curator]")[0])
    for method, route in (("GET", "/curator"), ("POST", "/curator/login"), ("POST", "/curator/logout")):
        assert client.request(method, route, cookies={SESSION_COOKIE: value}).status_code == 404


def test_logout_drops_the_cookie(app: tuple[TestClient, Path]) -> None:
    client, _ = app
    assert client.post("/curator/login", data={"token": CURATOR}).status_code == 200  # followed to the page
    assert client.get("/curator").status_code == 200
    out = client.post("/curator/logout", follow_redirects=False)
    assert out.status_code == 303 and f'{SESSION_COOKIE}=""' in out.headers["set-cookie"]


def test_the_cookie_is_secure_over_https(app: tuple[TestClient, Path]) -> None:
    client, _ = app
    secure = TestClient(client.app, base_url="https://testserver")
    cookie = secure.post("/curator/login", data={"token": CURATOR}, follow_redirects=False).headers["set-cookie"]
    assert "Secure" in {part.strip() for part in cookie.split(";")}


def test_attempts_at_the_token_are_rate_limited_by_address(app: tuple[TestClient, Path]) -> None:
    client, _ = app
    service = client.app.state.service  # type: ignore[attr-defined]
    assert (service.login_limiter.rate, service.login_limiter.burst) == (LOGIN_RATE, LOGIN_BURST)
    service.login_limiter = RateLimiter(rate=1e-9, burst=3)  # no refill while the test runs, however slow
    codes = [client.post("/curator/login", data={"token": "guess"}, follow_redirects=False).status_code
             for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    # The right token waits too, and so does a bearer header, from the same address.
    assert client.post("/curator/login", data={"token": CURATOR}, follow_redirects=False).status_code == 429
    assert client.get("/curator", headers={"Authorization": f"Bearer {CURATOR}"}).status_code == 429


# -- what the page sends -----------------------------------------------------------------------------------------
def test_security_headers_and_the_policy(app: tuple[TestClient, Path]) -> None:
    client, _ = app
    for response in (client.get("/curator"), client.get("/curator", headers={"Authorization": f"Bearer {CURATOR}"})):
        policy = response.headers["content-security-policy"]
        assert {"default-src 'none'", "script-src 'none'", "form-action 'self'", "frame-ancestors 'none'",
                "base-uri 'none'"} <= {part.strip() for part in policy.split(";")}
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["content-type"].startswith("text/html")
        # The one stylesheet is the one the policy allows by hash; no script, no style attribute.
        style = re.search(r"<style>(.*?)</style>", response.text, re.DOTALL)
        assert style is not None
        digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
        assert f"style-src 'sha256-{digest}'" in policy
        assert "<script" not in response.text and " style=" not in response.text
        assert '<meta http-equiv="Content-Security-Policy"' in response.text
    malformed = client.get("/curator", params={"since": "<b>x</b>"}, headers={"Authorization": f"Bearer {CURATOR}"})
    assert malformed.status_code == 400 and "<b>" not in malformed.text
    assert malformed.headers["content-type"].startswith("text/plain") and "nosniff" in str(malformed.headers)


def test_analysts_strings_are_escaped(app: tuple[TestClient, Path]) -> None:
    client, _ = app
    page = client.get("/curator", headers={"Authorization": f"Bearer {CURATOR}"}).text
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page and "<script" not in page
    assert "<img" not in page and "<svg onload" not in page and "&lt;img src=x onerror=" in page
    assert page.count("<svg") == 2 and page.count("</style>") == 1  # the two plots; the page's own stylesheet
    probe = "<script>window.pwned"
    filtered = client.get("/curator", params={"plan": probe}, headers={"Authorization": f"Bearer {CURATOR}"})
    assert probe not in filtered.text and "1 matching row(s)" in filtered.text  # echoed escaped in the form


# -- dpframe audit -------------------------------------------------------------------------------------------------
def test_dpframe_audit_writes_the_page_as_a_file(app: tuple[TestClient, Path], tmp_path: Path) -> None:
    _, config = app
    ledger = Ledger.at(load_config(config).ledger)
    before = (ledger.audit().to_json(), ledger.budgets().to_json())
    out = tmp_path / "report.html"
    assert main(["audit", str(config), "--out", str(out), "--analyst", "alice", "--dataset", "census",
                 "--since", ledger.audit()["time"].min().date().isoformat(), "--plan", "pwned"]) == 0
    html = out.read_text(encoding="utf-8")
    assert '<meta http-equiv="Content-Security-Policy"' in html and "frame-ancestors" not in html  # ignored in <meta>
    assert "<form" not in html and "<script" not in html  # no login or filter form in a file
    assert "3 matching row(s)" in html and "analyst alice · dataset census" in html
    assert described("cap:people", ledger)[1] in html and HOSTILE[0] not in html
    assert (ledger.audit().to_json(), ledger.budgets().to_json()) == before  # read only
    assert main(["audit", str(config), "--out", str(out), "--limit", "2"]) == 0
    assert "4 more row(s) not shown" in out.read_text(encoding="utf-8")


def test_dpframe_audit_errors_are_one_line_and_exit_code_2(tmp_path: Path) -> None:
    config = with_curator(write_files(tmp_path))
    out = tmp_path / "report.html"
    cases = [([str(config)], "does not exist (has the service run?)"),  # no ledger yet: not created
             ([str(tmp_path / "missing.toml")], "cannot read the config"),
             ([str(config), "--limit", "0"], "--limit must be from 1")]
    for args, expected in cases:
        err = io.StringIO()
        with redirect_stderr(err):
            assert main(["audit", *args, "--out", str(out)]) == 2
        assert expected in err.getvalue() and len(err.getvalue().splitlines()) == 1
    assert not (tmp_path / "ledger.sqlite").exists() and not out.exists()


# -- in a real browser -------------------------------------------------------------------------------------------
def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def check_page_in_browser(page: Any, ledger: Ledger, dialogs: list[str], console: list[str]) -> None:
    """The page as the browser drew it: tables, plots, the ledger's numbers, hostile strings inert and shown."""
    assert page.locator("#caps tbody tr").count() == 2 and page.locator("#allotments tbody tr").count() == 4
    for name in ("cap:people", "dataset:visits"):
        row = page.locator(f'tr[data-cap="{name}"]')
        shown = tuple(row.locator(f"td.{part}").inner_text().split(" (")[0] for part in ("total", "spent", "remaining"))
        assert shown == described(name, ledger)
    for analyst, dataset in (("alice", "census"), ("alice", "visits"), ("bob", "visits"), ("carol", "census")):
        row = page.locator(f'tr[data-analyst="{analyst}"][data-dataset="{dataset}"]')
        assert row.locator("td.spent").inner_text() == described(f"analyst:{analyst}/dataset:{dataset}", ledger)[1]
    assert page.locator("svg.plot").count() == 2
    assert page.locator("svg.plot polyline.spending").count() == 4
    assert all(len(points.split()) >= 3 for points in page.locator("polyline.spending").evaluate_all(
        "lines => lines.map(line => line.getAttribute('points'))"))
    assert page.locator("svg.plot line.cap").count() == 2
    # The stylesheet applied (the policy allows it by hash), and nothing the analysts wrote ran or became an element.
    assert page.locator("table").first.evaluate("t => getComputedStyle(t).borderCollapse") == "collapse"
    audit_text = page.locator("#audit-table").inner_text()
    assert HOSTILE[0] in audit_text
    # Each plan shown as the pandas code it is, and as sent (JSON: the quotes in it escaped) in a closed <details>.
    for plan in ledger.audit()["plan"]:
        assert as_code(Plan.model_validate_json(plan.partition(": ")[2])) in audit_text
    sent = page.locator("#audit-table").evaluate("t => t.textContent")
    page.locator("#audit-table details").first.evaluate("d => d.open = true")
    assert page.locator("#audit-table details").first.inner_text().startswith("the plan as sent\n")
    for plan in ledger.audit()["plan"]:
        assert plan in sent
    assert page.evaluate("typeof window.pwned") == "undefined" and dialogs == []
    assert not [line for line in console if "Content Security Policy" in line]  # nothing even tried
    assert page.locator("script, img, iframe, object, embed, [onerror], [onload]").count() == 0
    assert page.locator("svg").count() == 2 and page.locator("style").count() == 1


@pytest.mark.skipif(_chromium() is None, reason="no Chromium on this machine (apt-get install chromium)")
def test_the_page_in_a_real_browser(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    config = with_curator(write_files(tmp_path, "[limits]\nrequests_per_second = 1000.0\nburst = 1000\n"))
    server = launch(config, "--workers", "2")
    try:
        from dpframe.service.client import Connection

        # Alice through dpframe's own client: a query whose expression carries a hostile string, charged.
        with Connection(server.url, token=TOKENS["alice"]) as connection:
            p = connection.dataset("census")
            float(p.query(f"sex == {json.dumps(HOSTILE[0])}").dp.count(epsilon=0.1))

        def send(who: str, dataset: str, plan: dict[str, Any]) -> int:
            return server.request("POST", f"/v1/datasets/{dataset}/run", TOKENS[who], json=plan).status_code

        run_queries(send)
        # One login serves every worker: the cookie is signed with the key `dpframe serve` gave them all.
        login = server.request("POST", "/curator/login", data={"token": CURATOR}, follow_redirects=False)
        assert login.status_code == 303
        cookies = {SESSION_COOKIE: login.cookies[SESSION_COOKIE]}
        assert {server.request("GET", "/curator", cookies=cookies).status_code for _ in range(12)} == {200}
        ledger = Ledger.at(tmp_path / "ledger.sqlite")
        report = tmp_path / "report.html"
        assert main(["audit", str(config), "--out", str(report)]) == 0
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
            try:
                page = browser.new_page()
                dialogs: list[str] = []
                console: list[str] = []
                page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
                page.on("console", lambda message: console.append(message.text))
                response = page.goto(server.url + "/curator")
                assert response is not None and response.status == 401
                page.fill("input[name=token]", CURATOR)
                page.click("button[type=submit]")
                page.wait_for_selector("#audit-table")
                check_page_in_browser(page, ledger, dialogs, console)
                # The filter form: a plain GET with the filters as query parameters.
                page.select_option("select[name=analyst]", "bob")
                page.click("form.filters button[type=submit]")
                page.wait_for_url(re.compile(r"analyst=bob"))
                assert page.locator("#audit-table tbody tr").count() == 1
                # The static report, opened as a file: the same page, the same policy in its <meta>.
                static = browser.new_page()
                static.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
                static.on("console", lambda message: console.append(message.text))
                static.goto(report.as_uri())
                check_page_in_browser(static, ledger, dialogs, console)
            finally:
                browser.close()
    finally:
        stop(server)
