"""The curator's server over real HTTP: `dpframe serve` started on a free port, talked to with httpx.

Authentication (every endpoint × no token, a wrong one, a malformed header, a revoked one, another
analyst's dataset), the body limit, the rate limit, the config's checks and `dpframe token`; nothing a
refused request does is charged.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from dpframe.__main__ import main  # noqa: E402
from dpframe.accounting.budget import Budget  # noqa: E402
from dpframe.accounting.costs import Cost  # noqa: E402
from dpframe.accounting.ledger import Ledger  # noqa: E402
from dpframe.service import wire  # noqa: E402
from dpframe.service.config import ConfigError, load_config  # noqa: E402
from dpframe.service.tokens import hash_token, matching_name  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOKENS = {"alice": "alice-" + "a" * 40, "bob": "bob-" + "b" * 40, "carol": "carol-" + "c" * 40}
PLAN = {"request_id": "0" * 32, "steps": [{"op": "getattr", "target": 0, "name": "dp"},
                                          {"op": "call", "target": 1, "name": "count", "kwargs": {"epsilon": 0.1}}],
        "result": 2}
ENDPOINTS = [("GET", "/v1/datasets"), ("GET", "/v1/datasets/census"), ("POST", "/v1/datasets/census/run")]


def write_files(folder: Path, limits: str = "") -> Path:
    """Two datasets about the same people under one shared cap, and a third with its own; three analysts."""
    (folder / "census.csv").write_text("person_id,age,sex\n" + "".join(
        f"{i},{20 + i % 60},{'FM'[i % 2]}\n" for i in range(300)), encoding="utf-8")
    (folder / "visits.csv").write_text("person_id;visits\n" + "".join(f"{i % 300};{i % 7}\n" for i in range(600)),
                                       encoding="utf-8")
    # A draft's notes quote the data (here made up): they must never reach an analyst.
    (folder / "census.schema.json").write_text(json.dumps({
        "format": "dpframe-schema/1", "private": False, "note": "SECRET NOTE", "separator": ",",
        "columns": {"person_id": {"type": "integer"}, "age": {"type": "integer", "note": "SECRET 'x' does not parse"},
                    "sex": {"type": "category", "categories": ["F", "M"]}}}))
    (folder / "visits.schema.json").write_text(json.dumps({
        "format": "dpframe-schema/1", "separator": ";",
        "columns": {"person_id": {"type": "integer"}, "visits": {"type": "integer"}}}))
    config = folder / "service.toml"
    config.write_text(f"""
ledger = "ledger.sqlite"
{limits}
[caps.people]
total = {{ epsilon = 2.0, delta = 1e-6 }}

[datasets.census]
path = "census.csv"
schema = "census.schema.json"
cap = "people"
privacy_unit = "person_id"
max_contributions = 1

[datasets.visits]
path = "visits.csv"
schema = "visits.schema.json"
total = {{ rho = 0.5 }}
rows_public = true

[analysts.alice]
token_sha256 = "{hash_token(TOKENS['alice'])}"
budgets = {{ census = {{ epsilon = 1.0, delta = 1e-7 }}, visits = {{ rho = 0.25 }} }}

[analysts.bob]
token_sha256 = "{hash_token(TOKENS['bob']).upper()}"
budgets = {{ visits = {{ rho = 0.25 }} }}

[analysts.carol]
token_sha256 = "{hash_token(TOKENS['carol'])}"
budgets = {{ census = {{ epsilon = 1.5, delta = 1e-7 }} }}
""", encoding="utf-8")
    return config


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    url: str
    config: Path
    process: subprocess.Popen[bytes]
    log: Path
    verify: ssl.SSLContext | bool = True

    def request(self, method: str, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = kwargs.pop("headers", {})
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.request(method, self.url + path, headers=headers, timeout=30, verify=self.verify, **kwargs)

    def charges(self) -> tuple[dict[str, tuple[str, int]], int]:
        """The spending and number of lines of every budget that has lines, and the number of audit rows, read from
        the server's ledger by the curator (in this process)."""
        ledger = Ledger.at(self.config.parent / "ledger.sqlite")
        budgets = ledger.budgets()
        return ({str(row.budget).strip("'"): (row.spent, row.lines) for row in budgets.itertuples() if row.lines},
                len(ledger.audit()))


def start(folder: Path, limits: str = "", *options: str) -> Server:
    return launch(write_files(folder, limits), *options)


def launch(config: Path, *options: str, verify: ssl.SSLContext | None = None) -> Server:
    """``dpframe serve CONFIG`` on a free port, once it answers (over TLS when ``verify`` trusts its certificate)."""
    folder, port = config.parent, free_port()
    log = folder / "server.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "dpframe", "serve", str(config), "--port", str(port), *options],
                                   stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder)
    server = Server(f"{'http' if verify is None else 'https'}://127.0.0.1:{port}", config, process, log,
                    True if verify is None else verify)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server stopped: {log.read_text()}")
        try:
            server.request("GET", "/v1/datasets")
            return server
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError(f"the server did not start: {log.read_text()}")


def stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start(tmp_path_factory.mktemp("service"), "[limits]\nrequests_per_second = 1000.0\nburst = 1000\n")
    yield running
    stop(running)


def error_of(response: httpx.Response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert "Traceback" not in response.text
    return dict(body["error"])


# -- authentication ---------------------------------------------------------------------------------------------
BAD_HEADERS = [
    {},                                                      # no token
    {"Authorization": "Bearer " + "x" * 43},                 # a wrong token
    {"Authorization": "Bearer"},                             # malformed: no token
    {"Authorization": f"Bearer {TOKENS['alice']} {TOKENS['alice']}"},  # two tokens
    {"Authorization": f"Basic {TOKENS['alice']}"},           # another scheme, even with a right token
    {"Authorization": TOKENS["alice"]},                      # no scheme
    {"Authorization": f"Token {TOKENS['alice']}"},
    {"X-Token": TOKENS["alice"]},                            # not the Authorization header
]


@pytest.mark.parametrize("method,path", ENDPOINTS)
@pytest.mark.parametrize("headers", BAD_HEADERS)
def test_every_endpoint_needs_a_bearer_token(server: Server, method: str, path: str,
                                             headers: dict[str, str]) -> None:
    before = server.charges()
    response = server.request(method, path, headers=dict(headers), json=PLAN if method == "POST" else None,
                              params={"token": TOKENS["alice"]})  # a token in the URL is not one
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert error_of(response)["type"] == "AuthenticationError"
    assert server.charges() == before


@pytest.mark.parametrize("method,path", ENDPOINTS)
def test_another_analysts_dataset_is_not_found(server: Server, method: str, path: str) -> None:
    """bob has no budget on census: to him it does not exist (the same answer as a dataset that does not)."""
    before = server.charges()
    listing = server.request("GET", "/v1/datasets", TOKENS["bob"])
    assert listing.status_code == 200 and listing.json() == {"value": ["visits"]}
    if path == "/v1/datasets":
        return
    response = server.request(method, path, TOKENS["bob"], json=PLAN if method == "POST" else None)
    missing = server.request(method, path.replace("census", "nosuch"), TOKENS["bob"],
                             json=PLAN if method == "POST" else None)
    assert response.status_code == missing.status_code == 404
    assert error_of(response)["message"] == error_of(missing)["message"].replace("nosuch", "census")
    assert server.charges() == before


def test_an_analyst_sees_its_datasets_and_their_public_schema(server: Server) -> None:
    assert server.request("GET", "/v1/datasets", TOKENS["alice"]).json() == {"value": ["census", "visits"]}
    response = server.request("GET", "/v1/datasets/census", TOKENS["alice"])
    assert response.status_code == 200
    text = response.text
    # Never the schema's notes, the number of rows, a path, the ledger or another analyst.
    for secret in ("SECRET", "300", "census.csv", str(server.config.parent), "ledger.sqlite", "people", "carol", "1.5"):
        assert secret not in text
    value = response.json()["value"]
    assert value["columns"] == {"person_id": {"type": "integer"}, "age": {"type": "integer"},
                                "sex": {"type": "category", "categories": ["F", "M"]}}
    assert value["privacy_unit"] == "person_id" and value["max_contributions"] == 1
    assert "rows" not in value
    assert server.request("GET", "/v1/datasets/visits", TOKENS["alice"]).json()["value"]["rows"] == 600  # declared
    budget = wire.decode(response.json()["value"], allow_results=True)["budget"]
    assert (float(budget.total.epsilon), float(budget.total.delta), budget.kind) == (1.0, 1e-7, "approx")


def test_the_body_limit(server: Server) -> None:
    before = server.charges()
    big = b'{"request_id": "' + b"0" * (1 << 21) + b'"}'
    response = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], content=big,
                              headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and error_of(response)["type"] == "PayloadTooLarge"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds as the body streams in
        for _ in range(40):
            yield b" " * 65536

    streamed = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], content=chunks(),
                              headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413
    assert server.charges() == before


def test_malformed_plans_are_a_clear_400_at_no_cost(server: Server) -> None:
    before = server.charges()
    deep = json.dumps(PLAN).replace('"kwargs": {', '"args": [' + "[" * 100_000 + "]" * 100_000 + '], "kwargs": {')
    for body in (b"not json", b"[]", b'{"request_id": "x"}', json.dumps({**PLAN, "extra": 1}).encode(), deep.encode(),
                 json.dumps({**PLAN, "steps": [{"op": "getattr", "target": 0, "name": "_data"}],
                             "result": 1}).encode()):
        response = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], content=body,
                                  headers={"Content-Type": "application/json"})
        assert response.status_code == 400, response.text
        assert error_of(response)["type"] == "ValueError"
    assert server.charges() == before


def plan(request_id: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"request_id": request_id, "steps": list(steps), "result": len(steps)}


def count(request_id: str, epsilon: float) -> dict[str, Any]:
    return plan(request_id, {"op": "getattr", "target": 0, "name": "dp"},
                {"op": "call", "target": 1, "name": "count", "kwargs": {"epsilon": epsilon}})


def test_a_run_is_charged_once_audited_and_answered_again_on_retry(server: Server) -> None:
    request = count("1" * 32, 0.125)
    first = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=request)
    assert first.status_code == 200, first.text
    answer = wire.decode(first.json()["value"], allow_results=True)
    assert answer.release.cost.epsilon == 0.125
    charged = server.charges()
    again = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=request)
    assert again.status_code == 200 and again.json() == first.json()  # the same release: no fresh noise
    assert server.charges() == charged  # and no second charge
    ledger = Ledger.at(server.config.parent / "ledger.sqlite")
    audit = ledger.audit("alice")
    row = audit[audit["request_id"] == "1" * 32]
    assert row["budget"].tolist() == ["analyst:alice/dataset:census"] and row["epsilon"].tolist() == [0.125]
    assert '"count"' in row["plan"].iloc[0]
    # The same request id for another question is refused, at no cost.
    other = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=count("1" * 32, 0.25))
    assert other.status_code == 409 and error_of(other)["type"] == "RequestConflict"
    assert server.charges() == charged


def test_a_request_charged_without_an_answer_is_never_run_again(server: Server) -> None:
    """As after a crash between the charge and the stored answer: the request's charge is in the ledger, alone."""
    request = "7" * 32
    ledger = Ledger.at(server.config.parent / "ledger.sqlite")
    server.request("GET", "/v1/datasets/census", TOKENS["alice"])  # opens alice's allotment
    with ledger.audited("alice", request, "census: a plan whose answer was lost"):
        Budget.open("analyst:alice/dataset:census", ledger=ledger)._charge(Cost(epsilon=Fraction(1, 64)), query="count")
    before = server.charges()
    response = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=count(request, 1 / 64))
    assert response.status_code == 409 and error_of(response)["type"] == "RequestInterrupted"
    assert server.charges() == before


def test_refusals_and_argument_errors_pass_through_at_no_cost(server: Server) -> None:
    before = server.charges()
    mean = plan("2" * 32, {"op": "getitem", "target": 0, "key": "age"},
                {"op": "call", "target": 1, "name": "mean"})
    refused = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=mean)
    assert refused.status_code == 400 and error_of(refused)["type"] == "RefusedError"
    assert "ProtectedSeries.mean is refused" in error_of(refused)["message"]
    unknown = plan("3" * 32, {"op": "getitem", "target": 0, "key": "income"})
    assert error_of(server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=unknown))["type"] in (
        "KeyError", "RefusedError")
    private = plan("4" * 32, {"op": "getattr", "target": 0, "name": "dp"},
                   {"op": "call", "target": 1, "name": "count", "kwargs": {"epsilon": 0.1, "ledger": "x.sqlite"}})
    assert error_of(server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=private))["type"] == (
        "RefusedError")
    assert server.charges() == before
    # A refusal that charged nothing may be sent again under its request id: it is run again, not replayed.
    assert server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=mean).status_code == 400


def test_the_cap_is_reached_exactly_and_never_exceeded(tmp_path: Path) -> None:
    """alice (1.0) and carol (1.5) share census's cap of 2.0: carol gets only what alice left (two workers)."""
    server = start(tmp_path, "", "--workers", "2")
    try:
        def ask(who: str, request_id: str, epsilon: float) -> httpx.Response:
            return server.request("POST", "/v1/datasets/census/run", TOKENS[who], json=count(request_id, epsilon))

        assert ask("alice", "a" * 32, 1.0).status_code == 200
        assert error_of(ask("alice", "b" * 32, 0.125))["type"] == "BudgetExceededError"
        over = ask("carol", "c" * 32, 1.25)
        assert error_of(over)["type"] == "BudgetExceededError" and "cap" in error_of(over)["message"]
        assert ask("carol", "d" * 32, 1.0).status_code == 200  # exactly the cap
        assert error_of(ask("carol", "e" * 32, 1e-9))["type"] == "BudgetExceededError"
        spent, _ = server.charges()
        assert spent["cap:people"][0].startswith("ε=2,") and spent["analyst:carol/dataset:census"][0].startswith("ε=1,")
        assert "dataset:visits" not in spent  # visits has its own zCDP cap, untouched
    finally:
        stop(server)


def test_dpframes_warnings_come_with_the_answer(server: Server) -> None:
    clipped = plan("5" * 32, {"op": "getitem", "target": 0, "key": "visits"},
                   {"op": "getattr", "target": 1, "name": "dp"},
                   {"op": "call", "target": 2, "name": "mean", "kwargs": {"bounds": [0, 1], "rho": 0.05, "clipping": True}})
    response = server.request("POST", "/v1/datasets/visits/run", TOKENS["alice"], json=clipped)
    assert response.status_code == 200, response.text
    assert [warned["category"] for warned in response.json()["warnings"]] == ["ClippingWarning"]


NAMES = ["dp", "count", "mean", "sum", "histogram", "age", "sex", "head", "query", "groupby", "__add__", "__ge__",
         "__invert__", "_data", "__class__", "__dict__", "unprotected", "to_pickle", "pipe", "budget", "extend"]
JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 300) | st.floats(allow_nan=False, allow_infinity=False)
                    | st.sampled_from(["age", "sex", "F", "$ref", "x"]),
                    lambda children: st.lists(children, max_size=3)
                    | st.dictionaries(st.sampled_from(["epsilon", "rho", "bounds", "$ref", "$float", "ledger", "key"]),
                                      children, max_size=2), max_leaves=6)
TARGET = st.integers(0, 3)
KWARGS = st.dictionaries(st.sampled_from(["epsilon", "rho", "bounds", "seed", "ledger"]), JSON, max_size=2)
STEP = st.one_of(
    st.fixed_dictionaries({"op": st.just("getattr"), "target": TARGET, "name": st.sampled_from(NAMES)}),
    st.fixed_dictionaries({"op": st.just("call"), "target": TARGET, "name": st.sampled_from(NAMES),
                           "args": st.lists(JSON, max_size=2), "kwargs": KWARGS}),
    st.fixed_dictionaries({"op": st.sampled_from(["getitem", "delitem"]), "target": TARGET, "key": JSON}),
    st.fixed_dictionaries({"op": st.just("setitem"), "target": TARGET, "key": JSON, "value": JSON}),
    st.fixed_dictionaries({"op": st.just("setattr"), "target": TARGET, "name": st.just("columns"), "value": JSON}),
    st.dictionaries(st.sampled_from(["op", "target", "name", "args", "key", "extra"]), JSON, max_size=4),  # malformed
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=4), result=st.none() | st.integers(0, 5))
def test_generated_plans_get_an_answer_or_a_clear_400(server: Server, steps: list[dict[str, Any]],
                                                      result: int | None) -> None:
    """Mostly well-formed plans (the result is usually the last step), so that many pass the model and replay."""
    before = server.charges()
    response = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json={
        "request_id": uuid.uuid4().hex, "steps": steps, "result": len(steps) if result is None else result})
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert error_of(response)["type"] in ("ValueError", "TypeError", "KeyError", "IndexError", "AttributeError",
                                              "RefusedError", "NotImplementedError", "BudgetExceededError")
        assert server.charges() == before


def with_analysts(config: Path, names: list[str], budget: str) -> dict[str, str]:
    """Add analysts to a config, each with ``budget``; their tokens."""
    tokens = {name: f"{name}-" + "z" * 40 for name in names}
    config.write_text(config.read_text() + "".join(
        f'\n[analysts.{name}]\ntoken_sha256 = "{hash_token(token)}"\nbudgets = {{ {budget} }}\n'
        for name, token in tokens.items()))
    return tokens


def test_concurrent_analysts_reach_the_cap_exactly_across_two_workers(tmp_path: Path) -> None:
    """The issue's scale: 20 analysts allotted 1.5 each (30 in all) under census's cap of 25, each sending 50
    counts of 0.125 from 20 client threads at once against 2 uvicorn workers. The cap binds (200 = 25 / 0.125
    counts) before the allotments do (240), and the early analysts reach their own 12: exactly 200 are answered,
    the cap is spent exactly, no allotment beyond its total, and one audit row per charge."""
    config = write_files(tmp_path, "[limits]\nrequests_per_second = 1000.0\nburst = 1000\n")
    config.write_text(config.read_text().replace("total = { epsilon = 2.0, delta = 1e-6 }",
                                                 "total = { epsilon = 25.0, delta = 1e-6 }"))
    tokens = with_analysts(config, [f"a{i}" for i in range(20)], "census = { epsilon = 1.5 }")
    server = launch(config, "--workers", "2")
    try:
        def ask(job: tuple[str, int]) -> tuple[str, int, str]:
            who, i = job
            response = server.request("POST", "/v1/datasets/census/run", tokens[who],
                                      json=count(f"{int(who[1:]):02d}{i:030x}", 0.125))
            return who, response.status_code, response.json().get("error", {}).get("type", "")

        # Interleaved: each thread works through one analyst's queries, all analysts at once.
        with ThreadPoolExecutor(20) as pool:
            outcomes = list(pool.map(ask, [(who, i) for i in range(50) for who in tokens]))
        answered = [who for who, status, _ in outcomes if status == 200]
        refused = [kind for _, status, kind in outcomes if status != 200]
        assert len(answered) == 200 and len(answered) + len(refused) == 1000
        assert set(refused) == {"BudgetExceededError"}
        assert max(answered.count(who) for who in tokens) <= 12
        ledger = Ledger.at(tmp_path / "ledger.sqlite")
        assert Budget.open("cap:people", ledger=ledger).spent.epsilon.exact == 25
        for who in tokens:
            allotment = Budget.open(f"analyst:{who}/dataset:census", ledger=ledger)
            assert allotment.spent.epsilon.exact == Fraction(answered.count(who), 8) <= allotment.total.epsilon.exact
        audit = ledger.audit()
        assert len(audit) == 200 and audit.groupby(["who", "request_id"]).size().max() == 1
        assert sorted(audit["who"].value_counts().items()) == sorted((who, answered.count(who)) for who in tokens
                                                                    if answered.count(who))
    finally:
        stop(server)


def test_a_killed_server_loses_no_charge_and_releases_nothing_twice(tmp_path: Path) -> None:
    """SIGKILL while queries run, a restart, and every request sent again under its id: a request is charged at
    most once, an answer received is received again unchanged, and the cap's spending is the sum of the charges."""
    tokens = with_analysts(write_files(tmp_path), [f"k{i}" for i in range(4)], "census = { epsilon = 0.5 }")
    config = tmp_path / "service.toml"
    server = launch(config)
    jobs = [(who, f"{i:032x}") for i in range(40) for who in tokens if i % 4 == int(who[1])]

    def ask(target: Server, job: tuple[str, str]) -> httpx.Response | None:
        who, request = job
        try:
            return target.request("POST", "/v1/datasets/census/run", tokens[who], json=count(request, 0.0625))
        except httpx.TransportError:
            return None

    with ThreadPoolExecutor(8) as pool:
        pending = [pool.submit(ask, server, job) for job in jobs]
        time.sleep(0.5)
        server.process.kill()  # SIGKILL: no shutdown, whatever was in flight
        first = [future.result() for future in pending]
    server.process.wait()
    restarted = launch(config)
    try:
        again = [ask(restarted, job) for job in jobs]
        for before, after in zip(first, again):
            assert after is not None and after.status_code in (200, 400, 409), after.text
            if before is not None and before.status_code == 200:
                assert after.status_code == 200 and after.json() == before.json()  # the same release, again
        ledger = Ledger.at(tmp_path / "ledger.sqlite")
        audit = ledger.audit()
        assert audit.groupby(["who", "request_id"]).size().max() == 1  # never charged twice
        charged = sum(Fraction(str(e)) for e in audit["epsilon"])
        spent, _ = restarted.charges()
        assert spent["cap:people"][0] == f"ε={float(charged):g}, δ=0"
        assert charged <= 2
    finally:
        stop(restarted)


def test_a_request_for_more_memory_than_there_is_does_not_kill_the_server(tmp_path: Path) -> None:
    """p['sex'].str.repeat(10**10): ten gigabytes a row. Unlimited, the kernel's out-of-memory killer ends the worker (in
    the hardening review, a fuzzer's plan grew a process to 24 GB before it did). With max_memory_bytes the
    allocation fails in the process, the rows become missing (as any row-wise error), and the server answers on."""
    if not Path("/proc/self/limits").exists():
        pytest.skip("reads the server's limits from /proc (Linux)")
    server = start(tmp_path, "[limits]\nrequests_per_second = 1000.0\nburst = 1000\nmax_memory_bytes = 3000000000\n")
    try:
        # Never sent to a server without the limit: it would take the machine's memory.
        limits = Path(f"/proc/{server.process.pid}/limits").read_text().splitlines()
        assert [line.split()[3] for line in limits if line.startswith("Max address space")] == ["3000000000"]
        huge = plan("e" * 32, {"op": "getitem", "target": 0, "key": "sex"},
                    {"op": "call", "target": 1, "name": "astype", "args": ["str"]},
                    {"op": "getattr", "target": 2, "name": "str"},
                    {"op": "call", "target": 3, "name": "repeat", "args": [10**10]},
                    {"op": "getattr", "target": 4, "name": "dp"},
                    {"op": "call", "target": 5, "name": "count", "kwargs": {"epsilon": 0.125}})
        answered = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=huge)
        assert answered.status_code == 200, answered.text
        assert server.process.poll() is None
        after = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=count("f" * 32, 0.125))
        assert after.status_code == 200, after.text
    finally:
        stop(server)


def test_tls_through_uvicorns_options(tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a test certificate")
    key, certificate = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(certificate), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True)
    server = launch(write_files(tmp_path), "--ssl-keyfile", str(key), "--ssl-certfile", str(certificate),
                    verify=ssl.create_default_context(cafile=str(certificate)))
    try:
        assert server.url.startswith("https://")
        assert server.request("GET", "/v1/datasets", TOKENS["alice"]).json() == {"value": ["census", "visits"]}
        with pytest.raises(httpx.TransportError):  # not plain HTTP on that port
            httpx.get(server.url.replace("https://", "http://") + "/v1/datasets", timeout=30)
        with pytest.raises(httpx.ConnectError):  # and not with a certificate the client does not trust
            httpx.get(server.url + "/v1/datasets", timeout=30)
    finally:
        stop(server)


def test_the_analysts_client_works_against_the_server(server: Server) -> None:
    """dpframe's own client: answers, refusals and the budget as in the curator's process; bob's budget only."""
    from dpframe.errors import BudgetExceededError, RefusedError, RemoteError
    from dpframe.service.client import Connection

    with Connection(server.url, token=TOKENS["bob"]) as connection:
        assert connection.datasets() == ["visits"]
        with pytest.raises(RemoteError, match="404"):
            connection.dataset("census")
        visits = connection.dataset("visits")
        answer = visits[visits["visits"] >= 3]["visits"].dp.mean(bounds=(0, 10), rho=0.01)
        assert 0 <= float(answer) <= 10 and answer.release.cost.rho == Fraction(1, 100)
        with pytest.raises(RefusedError, match="is refused on protected data"):
            len(visits)
        with pytest.raises(BudgetExceededError):
            visits.dp.count(rho=0.5)
        budget = visits.dp.budget
        assert float(budget.spent.rho) == pytest.approx(0.01) and float(budget.total.rho) == 0.25
    with Connection(server.url, token="not-a-token") as stranger, pytest.raises(RemoteError, match="401"):
        stranger.datasets()


def test_unknown_paths_and_methods_answer_in_the_error_format(server: Server) -> None:
    assert error_of(server.request("GET", "/v2/anything", TOKENS["alice"]))["type"] == "NotFound"
    assert server.request("DELETE", "/v1/datasets", TOKENS["alice"]).status_code == 405
    for docs in ("/docs", "/openapi.json", "/redoc"):
        assert server.request("GET", docs).status_code == 404


def test_revoking_a_token_and_a_broken_config_while_running(tmp_path: Path) -> None:
    server = start(tmp_path)
    try:
        assert server.request("GET", "/v1/datasets", TOKENS["carol"]).status_code == 200
        before = server.charges()
        text = server.config.read_text()
        # A half-edited file: the service closes (503) rather than keep the old tokens.
        server.config.write_text(text + "\n[analysts.dave]\ntoken_sha256 = 3\n")
        broken = server.request("GET", "/v1/datasets", TOKENS["carol"])
        assert broken.status_code == 503 and error_of(broken)["type"] == "ServiceUnavailable"
        revoked = text.replace(f'[analysts.carol]\ntoken_sha256 = "{hash_token(TOKENS["carol"])}"\n'
                               'budgets = { census = { epsilon = 1.5, delta = 1e-7 } }\n', "")
        assert revoked != text
        server.config.write_text(revoked)
        for method, path in ENDPOINTS:
            response = server.request(method, path, TOKENS["carol"], json=PLAN if method == "POST" else None)
            assert response.status_code == 401, (method, path)
        assert server.request("GET", "/v1/datasets", TOKENS["alice"]).status_code == 200
        # A budget raised in the config is raised in the ledger; one lowered is refused (never lowered).
        raised = revoked.replace("census = { epsilon = 1.0, delta = 1e-7 }", "census = { epsilon = 1.25, delta = 1e-7 }")
        assert raised != revoked
        server.config.write_text(raised)
        view = server.request("GET", "/v1/datasets/census", TOKENS["alice"])
        assert wire.decode(view.json()["value"], allow_results=True)["budget"].total.epsilon == 1.25
        server.config.write_text(revoked)
        lowered = server.request("GET", "/v1/datasets/census", TOKENS["alice"])
        assert lowered.status_code == 503 and "1.25" not in lowered.text
        # A dataset that cannot be read (here: gone since the start) is a clear error, at no cost.
        (tmp_path / "visits.csv").unlink()
        gone = server.request("POST", "/v1/datasets/visits/run", TOKENS["alice"], json=count("6" * 32, 0.1))
        assert gone.status_code == 503 and "visits" in error_of(gone)["message"]
        assert "visits.csv" not in gone.text
        assert server.charges() == before
    finally:
        stop(server)
    assert "are read again while running" not in server.log.read_text()


def test_the_rate_limit_counts_every_request_and_answers_are_padded(tmp_path: Path) -> None:
    server = start(tmp_path, "[limits]\nrequests_per_second = 0.01\nburst = 3\nanswer_after_seconds = 1.0\n")
    try:
        # Refused requests (a dataset that is not bob's) take tokens as answers do.
        codes = [server.request("GET", path, TOKENS["bob"]).status_code
                 for path in ("/v1/datasets", "/v1/datasets/census", "/v1/datasets", "/v1/datasets")]
        assert codes == [200, 404, 200, 429]
        limited = server.request("GET", "/v1/datasets", TOKENS["bob"])
        assert error_of(limited)["type"] == "RateLimited" and int(limited.headers["Retry-After"]) >= 1
        assert server.request("GET", "/v1/datasets", TOKENS["alice"]).status_code == 200  # per analyst
        # Padding: an answer to a plan, even a refusal, leaves answer_after_seconds after its request at the earliest.
        sent = time.monotonic()
        assert server.request("POST", "/v1/datasets/nosuch/run", TOKENS["alice"], json=PLAN).status_code == 404
        assert time.monotonic() - sent >= 1.0
    finally:
        stop(server)


# -- the config -------------------------------------------------------------------------------------------------
def config_error(tmp_path: Path, old: str, new: str) -> str:
    config = write_files(tmp_path)
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    return str(caught.value)


@pytest.mark.parametrize("old,new,expected", [
    ('path = "census.csv"\n', "", "datasets.census.path: Field required"),
    ("cap = \"people\"\n", "cap = \"persons\"\n", "datasets.census.cap: no [caps.persons] table"),
    ("cap = \"people\"\n", "", "datasets.census: give either total"),
    ("total = { rho = 0.5 }", "total = { rho = 0.5, epsilon = 1.0 }", "datasets.visits.total"),
    ("total = { rho = 0.5 }", 'total = { rho = "0.5" }', "datasets.visits.total.rho: Input should be a valid number"),
    ("max_contributions = 1", "max_contributions = 0", "datasets.census.max_contributions"),
    ("max_contributions = 1", "max_contributions = 2\ncolour = 3", "datasets.census.colour: Extra inputs"),
    ("budgets = { visits = { rho = 0.25 } }", "budgets = { visit = { rho = 0.25 } }",
     "analysts.bob.budgets.visit: no such dataset"),
    ("budgets = { visits = { rho = 0.25 } }", "budgets = { visits = { epsilon = 0.25 } }",
     "analysts.bob.budgets.visits: an (epsilon, delta) budget under a zCDP (rho) cap"),
    ('[analysts.carol]\ntoken_sha256 = "', '[analysts.carol]\ntoken_sha256 = "ab', "analysts.carol.token_sha256"),
    ("[analysts.carol]", "[analysts.'carol smith']", "names must be letters"),
    ('ledger = "ledger.sqlite"', 'ledger = 3', "ledger: Input should be a valid string"),
    ("[datasets.census]", "[datasets.census\n", "is not valid TOML"),
])
def test_config_errors_name_the_field(tmp_path: Path, old: str, new: str, expected: str) -> None:
    message = config_error(tmp_path, old, new)
    assert str(tmp_path) in message and expected in message


def test_two_analysts_with_one_token_are_refused(tmp_path: Path) -> None:
    message = config_error(tmp_path, f'token_sha256 = "{hash_token(TOKENS["carol"])}"',
                           f'token_sha256 = "{hash_token(TOKENS["alice"])}"')
    assert "analysts.carol.token_sha256: the same as analysts.alice's" in message


def test_paths_are_relative_to_the_config_and_hashes_any_case(tmp_path: Path) -> None:
    config = load_config(write_files(tmp_path))
    assert config.ledger == str(tmp_path.resolve() / "ledger.sqlite")
    assert config.datasets["visits"].schema_path == str(tmp_path.resolve() / "visits.schema.json")
    hashes = {name: analyst.token_sha256 for name, analyst in config.analysts.items()}
    assert matching_name(hashes, TOKENS["bob"]) == "bob"  # its hash was written in capitals
    assert matching_name(hashes, TOKENS["bob"] + "x") is None


def test_serve_refuses_a_bad_config_in_one_line(tmp_path: Path) -> None:
    config = write_files(tmp_path)
    (tmp_path / "census.csv").write_text("id,age\n1,2\n")  # the header no longer matches its schema
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["serve", str(config)]) == 2
    assert err.getvalue().startswith("dpframe serve: error: datasets.census: the header of ")
    assert err.getvalue().count("\n") == 1
    with redirect_stderr(io.StringIO()):
        assert main(["serve", str(tmp_path / "missing.toml")]) == 2
        assert main(["serve", str(config), "--ssl-keyfile", "key.pem"]) == 2


def test_serve_warns_of_oversubscribed_caps(server: Server) -> None:
    # alice 1.0 + carol 1.5 under people's 2.0; alice 0.25 + bob 0.25 under visits' 0.5 is not over.
    log = server.log.read_text()
    assert "warning: the analysts' budgets under the cap of cap:people (datasets census) add up to ε=2.5" in log
    assert "cap of dataset visits" not in log


# -- the command line -------------------------------------------------------------------------------------------
def test_token_prints_a_token_and_the_line_to_paste() -> None:
    outputs = []
    for _ in range(2):
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["token"]) == 0
        outputs.append(out.getvalue().splitlines())
    (comment, token, paste_comment, line), other = outputs
    assert comment.startswith("#") and paste_comment.startswith("#")
    assert len(token) == 43 and token != other[1]  # 32 random bytes, URL-safe base64
    assert line == f'token_sha256 = "{hash_token(token)}"'


def test_serve_help() -> None:
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    assert done.value.code == 0
    for option in ("--host", "--port", "--workers", "--ssl-keyfile", "--ssl-certfile", "docs/server.md"):
        assert option in out.getvalue()



def test_a_charged_refusal_comes_back_with_its_cost(server: Server) -> None:
    """Propose-test-release's refusal is a release (charged): remotely too it is a ProposalRefusedError with .cost."""
    from dpframe.errors import ProposalRefusedError
    from dpframe.service.client import Connection

    with Connection(server.url, token=TOKENS["carol"]) as connection:
        census = connection.dataset("census")
        # Ages 20..79, five each: one person moves the median by 0.5, far past the proposed 0.001, so the noisy
        # distance test passes only if Laplace(2) noise exceeds ~37 (probability ~1e-8).
        with pytest.raises(ProposalRefusedError) as refused:
            census["age"].dp.median(method="ptr", sensitivity=0.001, bounds=(0, 100), epsilon=0.5, delta=1e-8)
        assert refused.value.cost.epsilon == Fraction(1, 2)
        assert census.dp.budget.spent.epsilon.exact == Fraction(1, 2)


def test_a_full_disk_is_a_clear_error_at_no_cost(tmp_path: Path) -> None:
    """The ledger cannot grow (SQLite's page limit, as a full disk): 503, nothing charged, and it works again after."""
    from fastapi.testclient import TestClient

    from dpframe.service.server import create_app

    app = create_app(write_files(tmp_path))
    service = app.state.service
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        assert client.post("/v1/datasets/census/run", json=count("1" * 32, 0.01), headers=headers).status_code == 200
        connection = service.ledger._connection
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {pages}")
        answers = [client.post("/v1/datasets/census/run", json=count(f"{i:032x}", 0.01), headers=headers)
                   for i in range(2, 18)]  # within the rate limit's burst (20)
        full = [answer for answer in answers if answer.status_code != 200]
        assert full, "the page limit never filled the ledger"
        assert {answer.status_code for answer in full} == {503}
        assert "nothing was charged" in error_of(full[0])["message"]
        charged = sum(answer.status_code == 200 for answer in answers) + 1
        connection.execute("PRAGMA max_page_count = 1073741823")
        budget = service.allotment("alice", service.config, "census")
        assert budget.spent.epsilon.exact == Fraction(charged, 100)
        assert client.post("/v1/datasets/census/run", json=count("f" * 32, 0.01), headers=headers).status_code == 200


def test_an_answer_over_the_size_limit_is_refused_and_kept_charged(tmp_path: Path) -> None:
    """max_answer_bytes: a release too large to send is refused with what to ask instead; it ran, so it stays
    charged, and its retry gets the same refusal (no fresh noise, no second charge)."""
    from fastapi.testclient import TestClient

    from dpframe.service.server import create_app

    app = create_app(write_files(tmp_path, "[limits]\nmax_answer_bytes = 65536\n"))
    headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
    histogram = plan("a" * 32, {"op": "getitem", "target": 0, "key": "age"},
                     {"op": "getattr", "target": 1, "name": "dp"},
                     {"op": "call", "target": 2, "name": "histogram",
                      "kwargs": {"bins": {"$range": [0, 5000, 1]}, "epsilon": 0.01}})
    with TestClient(app) as client:
        first = client.post("/v1/datasets/census/run", json=histogram, headers=headers)
        again = client.post("/v1/datasets/census/run", json=histogram, headers=headers)
    assert first.status_code == again.status_code == 400 and first.json() == again.json()
    assert "max_answer_bytes" in error_of(first)["message"] and "charged" in error_of(first)["message"]
    budget = app.state.service.allotment("alice", app.state.service.config, "census")
    assert budget.spent.epsilon.exact == Fraction(1, 100)
