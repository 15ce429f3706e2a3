"""A review of issue 31's service (the mock, the curator's page, the curator's operations) for its privacy and
security argument: each test is a problem found, written so that it fails without its fix.
"""

from __future__ import annotations

import asyncio
import io
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("jinja2")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402
from test_service_curator import CURATOR, with_curator  # noqa: E402
from test_service_server import TOKENS, write_files  # noqa: E402

from dpframe.accounting.budget import Budget  # noqa: E402
from dpframe.accounting.ledger import Ledger  # noqa: E402
from dpframe.service import curator  # noqa: E402
from dpframe.service.config import load_config  # noqa: E402
from dpframe.service.server import LOGIN_BURST, SESSION_COOKIE, create_app  # noqa: E402
from dpframe.service.tokens import hash_token  # noqa: E402

BOB = (f'[analysts.bob]\ntoken_sha256 = "{hash_token(TOKENS["bob"]).upper()}"\n'
       'budgets = { visits = { rho = 0.25 } }\n')


def test_a_revocation_is_not_lost_when_reading_the_ledger_fails_once(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The reload compares the changed config's caps with the ledger's: a ledger read that fails there (a locked or
    full disk) must not leave the old analysts in force once the file is seen -- the revoked token must stay
    refused, not work until the file changes again."""
    config = write_files(tmp_path)
    client = TestClient(create_app(config), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {TOKENS['bob']}"}
    assert client.get("/v1/datasets", headers=headers).status_code == 200
    opened = Budget.open.__func__  # type: ignore[attr-defined]
    failures = [sqlite3.OperationalError("database is locked")]

    def flaky(cls: type[Budget], name: str, *, ledger: Any = None) -> Budget:
        if failures:
            raise failures.pop()
        return opened(cls, name, ledger=ledger)

    monkeypatch.setattr(Budget, "open", classmethod(flaky))
    text = config.read_text()
    assert BOB in text
    config.write_text(text.replace(BOB, ""))
    assert client.get("/v1/datasets", headers=headers).status_code != 200  # the failed read: refused, fail closed
    assert not failures
    assert client.get("/v1/datasets", headers=headers).status_code == 401  # and still refused after it
    client.close()


def _request(app: Any, path: bytes, query: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The status of a GET sent to the app as raw ASGI (the test client re-encodes a header's non-ASCII bytes)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path.decode(), "raw_path": path, "query_string": query, "root_path": "",
             "headers": [(b"host", b"testserver"), *headers], "client": ("192.0.2.1", 4000),
             "server": ("testserver", 80)}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    try:
        asyncio.run(app(scope, receive, send))
    except ValueError:
        pass  # Starlette raises the error again after the 500 it sent
    return int(next(message["status"] for message in sent if message["type"] == "http.response.start"))


@pytest.mark.parametrize("cookie", [b"\xb2.0", b"\xb9\xb2\xb3.abc"])
def test_a_session_cookie_with_non_ascii_digits_is_refused_not_a_500(tmp_path: Path, cookie: bytes) -> None:
    """'²'.isdigit() is True but int('²') raises: a session cookie (latin-1 bytes in the header) must be a 401 with
    the login form, not an internal error (a traceback in the log for any unauthenticated client)."""
    app = create_app(with_curator(write_files(tmp_path)))
    assert _request(app, b"/curator", b"", [(b"cookie", b"dpframe_curator=" + cookie)]) == 401
    assert curator.valid_session(b"k" * 32, "a" * 64, cookie.decode("latin-1")) is False


@pytest.mark.parametrize("query", [{"page": "\u00b2"}, {"limit": "\u00b9"}, {"page": "\u0661"}])
def test_filters_refuse_non_ascii_digits_without_quoting_them(query: dict[str, str]) -> None:
    """The filters' errors name the parameter and never quote it (Filters.from_query's promise)."""
    with pytest.raises(ValueError, match=r"^(page|limit): give a whole number") as raised:
        curator.Filters.from_query(query)
    assert next(iter(query.values())) not in str(raised.value)


def test_invisible_and_bidi_characters_of_a_plan_are_shown_visibly(tmp_path: Path) -> None:
    """An analyst's plan may carry right-to-left overrides and invisible characters in its strings (a column key, a
    rename): shown raw they reorder or hide what the curator reads in the audit log. The page shows them as
    escapes; the audit log keeps them as they were."""
    config = with_curator(write_files(tmp_path))
    client = TestClient(create_app(config))
    hidden = "a\u202egpj.exe\u2066\u200b"
    plan = {"request_id": "e" * 32, "result": 3, "steps": [
        {"op": "call", "target": 0, "name": "rename", "kwargs": {"columns": {"age": hidden}}},
        {"op": "getattr", "target": 1, "name": "dp"},
        {"op": "call", "target": 2, "name": "count", "kwargs": {"epsilon": 0.1}}]}
    response = client.post("/v1/datasets/census/run", json=plan, headers={"Authorization": f"Bearer {TOKENS['alice']}"})
    assert response.status_code == 200
    assert hidden in Ledger.at(load_config(config).ledger).audit()["plan"].iloc[-1]
    page = client.get("/curator", headers={"Authorization": f"Bearer {CURATOR}"}).text
    client.close()
    for character in "\u202e\u2066\u200b":
        assert character not in page
    assert "\\u202e" in page and "\\u2066" in page and "\\u200b" in page


def test_two_edits_at_once_never_lose_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two curator's commands at once (rotate alice's token while another removes bob): each reads the file, checks
    it is unchanged, records its event and replaces the file; unless they run one after the other, the second
    replace undoes the first, and bob's token works again though the ledger says "analyst removed"."""
    from dpframe.service import operations

    config = write_files(tmp_path)
    record = Ledger.service_event
    removed = threading.Event()
    others: list[threading.Thread] = []
    problems: list[BaseException] = []

    def remove_bob() -> None:
        try:
            operations.remove_analyst(str(config), "bob", io.StringIO())
        except BaseException as error:  # noqa: BLE001  (the test reports it)
            problems.append(error)
        removed.set()

    def service_event(self: Ledger, event: str, subject: str, detail: str) -> None:
        record(self, event, subject, detail)
        if event == "token rotated" and not others:  # between the rotation's check and its replace
            others.append(threading.Thread(target=remove_bob))
            others[0].start()
            removed.wait(1.0)  # edits one at a time: the removal waits for the rotation, so this times out

    monkeypatch.setattr(Ledger, "service_event", service_event)
    operations.rotate_token(str(config), "alice", None, io.StringIO())
    others[0].join(60)
    assert problems == [] and removed.is_set()
    final = load_config(config)
    assert "bob" not in final.analysts
    assert final.analysts["alice"].token_sha256 != hash_token(TOKENS["alice"])


def test_another_sites_forms_neither_sign_the_curator_out_nor_spend_its_attempts(tmp_path: Path) -> None:
    """A page on another site can post a form to /curator/logout (the curator signed out) or to /curator/login
    (each post spends one of the curator's address's attempts at the token, locking the curator out): a browser's
    Sec-Fetch-Site: cross-site is refused before either."""
    client = TestClient(create_app(with_curator(write_files(tmp_path))))
    cross_site = {"Sec-Fetch-Site": "cross-site"}
    for _ in range(LOGIN_BURST + 2):
        refused = client.post("/curator/login", data={"token": "guess"}, headers=cross_site, follow_redirects=False)
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
    signed_in = client.post("/curator/login", data={"token": CURATOR}, headers={"Sec-Fetch-Site": "same-origin"},
                            follow_redirects=False)
    assert signed_in.status_code == 303 and SESSION_COOKIE in signed_in.headers["set-cookie"]
    out = client.post("/curator/logout", headers=cross_site, follow_redirects=False)
    assert out.status_code == 403 and "set-cookie" not in out.headers
    assert client.post("/curator/logout", follow_redirects=False).status_code == 303  # no header: an older browser
    client.close()
