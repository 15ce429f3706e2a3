"""A hostile analyst with a valid token against the curator service: each test is an attack that once worked
(or a defence worth pinning), run on the server's own replay and service objects (no HTTP needed).

Found in the hardening review (docs/server.md, "Threat model"):

* a ``getattr`` step gave a bound method (``p['x'].dp.quantile``) that a ``{"$ref": i}`` handed to ``apply``:
  a release per row, so the budget's spending told the exact number of rows (or of rows passing a filter);
* ``@name`` in ``query``/``eval`` read the replay's own variables (the step number, the plan's limits);
* operators and protocols on an accessor or a group-by answered with Python's ``object`` (identity, an
  address in the repr);
* a warning ``protect()`` raised in another thread (another analyst's first request: "the budget's delta is at
  least 1/n", a fact about n) was recorded by a running plan and forwarded to its analyst;
* (tests/test_service_server.py) one plan asking for values of any size grew a worker until the kernel killed it.

The last test runs generated plans on neighbouring datasets: their errors, schema facts and charges agree.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

pytest.importorskip("fastapi")

import dpframe  # noqa: E402
from dpframe.errors import RefusedError  # noqa: E402
from dpframe.results import DPFloat, DPInt  # noqa: E402
from dpframe.service import replay  # noqa: E402
from dpframe.service.plan import Plan  # noqa: E402
from dpframe.service.server import Service  # noqa: E402
from dpframe.service.tokens import hash_token  # noqa: E402
from dpframe.testing import seeded_noise  # noqa: E402


def protected() -> Any:
    data = pd.DataFrame({"age": np.arange(300) % 60 + 20, "sex": pd.Categorical(["F", "M"] * 150)})
    return data.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())


def plan(*steps: dict[str, Any], request_id: str = "0" * 32) -> Plan:
    return Plan.model_validate({"request_id": request_id, "steps": list(steps), "result": len(steps)})


def test_a_bound_method_is_never_an_argument() -> None:
    """``apply`` given ``p['q'].dp.quantile`` released once per row: 300 rows spent 300 x 1e-4 beyond the count's
    0.01, so the budget's spending read n exactly (after a filter, the exact count of any condition)."""
    p = protected()
    attack = plan({"op": "getitem", "target": 0, "key": "age"},
                  {"op": "call", "target": 1, "name": "__truediv__", "args": [100]},
                  {"op": "getattr", "target": 1, "name": "dp"},
                  {"op": "getattr", "target": 3, "name": "quantile"},  # a bound method, not called
                  {"op": "call", "target": 2, "name": "apply", "args": [{"$ref": 4}],
                   "kwargs": {"bounds": [0, 100], "epsilon": 0.0001}},
                  {"op": "getattr", "target": 5, "name": "dp"},
                  {"op": "call", "target": 6, "name": "count", "kwargs": {"epsilon": 0.01}})
    with pytest.raises(RefusedError, match="step 4 gives a method, not a protected object"):
        replay.execute(p, attack)
    assert p.dp.budget.spent.epsilon.exact == 0


@pytest.mark.parametrize("name", ["budget", "count"])
def test_only_the_last_step_may_give_a_value(name: str) -> None:
    """The real Budget (extend, allot) or a method is a value only as the plan's result, where it is encoded."""
    p = protected()
    steps = [{"op": "getattr", "target": 0, "name": "dp"}, {"op": "getattr", "target": 1, "name": name},
             {"op": "call", "target": 0, "name": "assign", "kwargs": {"b": {"$ref": 2}}},
             {"op": "call", "target": 3, "name": "__repr__"}]
    with pytest.raises(RefusedError, match="step 2 gives a"):
        replay.execute(p, plan(*steps))


def test_the_budget_as_a_result_is_the_analysts_view() -> None:
    view = replay.execute(protected(), plan({"op": "getattr", "target": 0, "name": "dp"},
                                            {"op": "getattr", "target": 1, "name": "budget"}))
    assert type(view).__name__ == "BudgetView" and not hasattr(view, "extend")


@pytest.mark.parametrize("expr", ["age > @index", "age > @growth", "@last", "age > @MAX_MERGE_GROWTH"])
def test_query_constants_are_the_clients_not_the_servers(expr: str) -> None:
    """``query``/``eval`` read ``@name`` from their caller's variables: on the server, the replay's own. The
    expression given by keyword (``query(expr=...)``) and eval's assignment are checked alike."""
    p = protected()
    for name, call in (("query", {"args": [expr]}), ("eval", {"args": [expr]}), ("query", {"kwargs": {"expr": expr}}),
                       ("eval", {"kwargs": {"expr": f"y = {expr}"}})):
        with pytest.raises(RefusedError, match="has no value in the request"):
            replay.execute(p, plan({"op": "call", "target": 0, "name": name, **call},
                                   {"op": "call", "target": 1, "name": "__repr__"}))
    sent = {"local_dict": {"x": 40}}
    for name, given in (("query", "age > @x"), ("eval", "y = age + @x")):
        kept = plan({"op": "call", "target": 0, "name": name, "args": [given], "kwargs": sent},
                    {"op": "call", "target": 1, "name": "__repr__"})
        assert replay.execute(p, kept).startswith("ProtectedFrame(")


def test_accessors_and_group_bys_have_no_operators_and_no_address() -> None:
    p = protected()
    groupby = [{"op": "getattr", "target": 0, "name": "dp"},
               {"op": "call", "target": 1, "name": "groupby", "args": ["sex"]}]
    for name, args in (("__eq__", [{"$ref": 2}]), ("__len__", []), ("__bool__", [])):
        with pytest.raises(RefusedError, match="not offered remotely on groupby"):
            replay.execute(p, plan(*groupby, {"op": "call", "target": 2, "name": name, "args": args}))
    shown = replay.execute(p, plan(*groupby, {"op": "call", "target": 2, "name": "__repr__"}))
    assert shown == "<groupby of a protected object>" and "0x" not in shown


# -- the service: warnings and request ids --------------------------------------------------------------------
TOKENS = {"small": "small-" + "s" * 40, "large": "large-" + "l" * 40}


def service(folder: Path) -> Service:
    """One dataset of 300 people; ``large`` has a delta of 0.5 (at least 1/n: protect() warns the curator)."""
    (folder / "people.csv").write_text("age\n" + "".join(f"{20 + i % 60}\n" for i in range(300)), encoding="utf-8")
    (folder / "people.schema.json").write_text(json.dumps({
        "format": "dpframe-schema/1", "separator": ",", "columns": {"age": {"type": "integer"}}}))
    config = folder / "service.toml"
    config.write_text(f"""
ledger = "ledger.sqlite"
[datasets.people]
path = "people.csv"
schema = "people.schema.json"
total = {{ epsilon = 4.0, delta = 0.9 }}
[analysts.small]
token_sha256 = "{hash_token(TOKENS['small'])}"
budgets = {{ people = {{ epsilon = 1.0 }} }}
[analysts.large]
token_sha256 = "{hash_token(TOKENS['large'])}"
budgets = {{ people = {{ epsilon = 1.0, delta = 0.5 }} }}
""", encoding="utf-8")
    return Service(config)


def count(request_id: str, epsilon: float = 0.125) -> bytes:
    return plan({"op": "getattr", "target": 0, "name": "dp"},
                {"op": "call", "target": 1, "name": "count", "kwargs": {"epsilon": epsilon}},
                request_id=request_id).model_dump_json().encode()


def test_another_sessions_warning_never_reaches_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While small's plan runs, large's first request protects the data under its allotment (delta 0.5 >= 1/300:
    a LargeDeltaWarning for the curator). Python's warning filters are process-wide: the run recorded it."""
    server = service(tmp_path)
    config = server.config
    running, go = threading.Event(), threading.Event()
    execute = replay.execute

    def held(*args: Any, **kwargs: Any) -> Any:
        running.set()
        go.wait(10)
        return execute(*args, **kwargs)

    monkeypatch.setattr(replay, "execute", held)
    answers: list[tuple[int, str]] = []
    run = threading.Thread(target=lambda: answers.append(server.run("small", config, "people", count("1" * 32))))
    run.start()
    assert running.wait(10)
    session = threading.Thread(target=server.session, args=("large", config, "people"))
    session.start()
    time.sleep(0.5)  # large's protect() has warned by now, unless it waits for the run (as it must)
    go.set()
    run.join(30)
    session.join(30)
    status, body = answers[0]
    assert status == 200 and json.loads(body)["warnings"] == []


def test_request_ids_are_each_analysts_own(tmp_path: Path) -> None:
    """large sends small's request id (and plan): a fresh release charged to large, never small's stored answer."""
    server = service(tmp_path)
    config = server.config
    mine = server.run("small", config, "people", count("2" * 32))
    theirs = server.run("large", config, "people", count("2" * 32))
    assert mine[0] == theirs[0] == 200
    spent = {name: server.allotment(name, config, "people").spent.epsilon.exact for name in TOKENS}
    assert spent == {"small": 0.125, "large": 0.125}
    audit = server.ledger.audit()
    assert sorted(audit["who"]) == ["large", "small"]


# -- neighbours: what a plan answers never depends on one person --------------------------------------------------
def neighbours() -> list[pd.DataFrame]:
    """A dataset, and it with one more person whose values are odd (missing, huge, empty, far in the past)."""
    base = pd.DataFrame({"age": pd.array(np.arange(200) % 60 + 20, dtype="Int64"),
                         "name": pd.array([f"n{i % 37}" for i in range(200)], dtype="str"),
                         "sex": pd.Categorical(["F", "M"] * 100),
                         "t": pd.to_datetime("2020-01-01") + pd.to_timedelta(np.arange(200), unit="D"),
                         "x": np.linspace(0, 1, 200)})
    odd = [{"age": None, "name": "Ωzz a,b", "sex": "F", "t": pd.Timestamp("1700-01-01"), "x": np.nan},
           {"age": 10**9, "name": "", "sex": "M", "t": pd.NaT, "x": 1e300}]
    return [base] + [pd.concat([base, pd.DataFrame([row]).astype(base.dtypes.to_dict())], ignore_index=True)
                     for row in odd]


NEIGHBOURS = neighbours()
ARGUMENTS = ["age", "name", "sex", "t", "x", 0, 1, -1, 2.5, 1000, "F", "a", None, True, [1, 2], ["age", "x"], ["F"],
             {"$dtype": "int8"}, {"$dtype": "Int64"}, {"$dtype": "float32"}, {"$dtype": "str"}, "%Y", "D", "(a)",
             {"$float": "nan"}, {"$float": "inf"}, {"$timestamp": "2020-06-01T00:00:00", "tz": None, "unit": "ns"},
             "UTC", "Europe/Oslo"]


def signature_arguments(kind: str, name: str, draw: Any) -> tuple[list[Any], dict[str, Any]]:
    """Arguments for ``name`` drawn from :data:`ARGUMENTS`, shaped by the local method's signature."""
    import inspect

    sample = NEIGHBOURS[0].dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    owner = {"frame": sample, "series": sample["name"], "str": sample["name"].str, "dt": sample["t"].dt,
             "cat": sample["sex"].cat}[kind]
    try:
        parameters = inspect.signature(getattr(owner, name)).parameters.values()
    except (TypeError, ValueError, AttributeError):
        return [], {}
    args, kwargs = [], {}
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        required = parameter.default is parameter.empty
        if required or draw(st.booleans()):
            value = draw(st.sampled_from(ARGUMENTS))
            if parameter.kind == parameter.POSITIONAL_ONLY or (required and parameter.kind != parameter.KEYWORD_ONLY):
                args.append(value)
            else:
                kwargs[parameter.name] = value
    return args, kwargs


def answer_of(data: pd.DataFrame, steps: list[dict[str, Any]]) -> tuple[str, str, str]:
    """What the plan answers on ``data`` (a released number as such, not its value) and what it spent."""
    p = data.dp.protect(epsilon=10**6, delta=0.5, ledger=dpframe.Ledger.in_memory())
    with seeded_noise(1):
        try:
            value = replay.execute(p, plan(*steps))
            shown = "a release" if isinstance(value, (DPInt, DPFloat)) else repr(value)
        except Exception as error:  # noqa: BLE001 -- the outcome compared is any error's type and message
            shown = f"{type(error).__name__}: {error}"
    return shown, str(p.dp.budget.spent), str(p.dp.budget.ledger[["query", "columns", "mechanism", "epsilon", "delta", "noise"]].values.tolist())


@st.composite
def operations_on_the_data(draw: Any) -> list[dict[str, Any]]:
    """The frame, a column or its .str/.dt/.cat; one method of the registry with arguments; then the result's repr,
    dtypes or count."""
    from dpframe.service.plan import operations

    steps: list[dict[str, Any]] = []
    kind = draw(st.sampled_from(["frame", "series", "series", "accessor"]))
    if kind != "frame":
        steps.append({"op": "getitem", "target": 0, "key": draw(st.sampled_from(list(NEIGHBOURS[0])))})
    if kind == "accessor":
        kind = draw(st.sampled_from(["str", "dt", "cat"]))
        steps.append({"op": "getattr", "target": 1, "name": kind})
    name = draw(st.sampled_from(sorted(op.name for op in operations() if op.kind == kind)))
    args, kwargs = signature_arguments(kind, name, draw)
    steps.append({"op": "call", "target": len(steps), "name": name, "args": args, "kwargs": kwargs})
    last = len(steps)
    ending = draw(st.sampled_from(["repr", "dtypes", "count"]))
    if ending == "count":
        return steps + [{"op": "getattr", "target": last, "name": "dp"},
                        {"op": "call", "target": last + 1, "name": "count", "kwargs": {"epsilon": 1.0}}]
    return steps + [{"op": "call", "target": last, "name": "__repr__"} if ending == "repr"
                    else {"op": "getattr", "target": last, "name": "dtypes"}]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=operations_on_the_data())
def test_neighbouring_datasets_get_the_same_answers_errors_and_charges(steps: list[dict[str, Any]]) -> None:
    """Differential: one plan on three neighbouring datasets gives the same refusal or error (type and message),
    the same schema facts and the same charges -- one person never changes what a plan says or costs."""
    try:
        plan(*steps)
    except ValidationError:
        return
    answers = {answer_of(data, steps) for data in NEIGHBOURS}
    assert len(answers) == 1, answers


def test_a_long_plan_before_a_sample_names_it_in_fixed_size() -> None:
    """The name of what a sample was drawn from is a hash per step: 490 steps before p.dp.sample (each reading the
    one before twice) cost no more than their own size (it once doubled at every step: review)."""
    steps: list[dict[str, Any]] = [{"op": "getitem", "target": 0, "key": "age"}]
    for index in range(1, 490):
        steps.append({"op": "call", "target": index, "name": "__add__", "args": [{"$ref": index}]})
    steps.append({"op": "getitem", "target": 0, "key": {"$ref": len(steps)}})
    names = replay.step_names(plan(*steps), len(steps))
    assert len(names) == len(steps) + 1 and max(map(len, names)) == 64


def test_a_function_step_takes_protected_data_its_target_among_it() -> None:
    """dpframe.to_numeric of an analyst's plain value, or of an accessor, is not run on the server: only protected
    data (review)."""
    p = protected()
    for first in ("5", {"$ref": 1}):
        with pytest.raises(RefusedError, match="takes protected data"):
            replay.execute(p, plan({"op": "getattr", "target": 0, "name": "dp"},
                                   {"op": "function", "target": 1, "name": "to_numeric", "args": [first]}))
    with pytest.raises(RefusedError, match="takes protected data"):  # the target is not among the pieces
        replay.execute(p, plan({"op": "getitem", "target": 0, "key": "age"},
                               {"op": "getitem", "target": 0, "key": "sex"},
                               {"op": "function", "target": 2, "name": "concat", "args": [[{"$ref": 1}]]},
                               {"op": "call", "target": 3, "name": "__repr__"}))


def test_remote_frames_of_two_datasets_are_never_combined() -> None:
    """Each dataset() call is its own protection, as each protect() is locally: combining them is refused by the
    client before anything is sent, where it would have run both on the first dataset (review)."""
    import httpx

    from dpframe.service.client import Connection

    def never(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"value": None})
        raise AssertionError("nothing is sent")

    connection = Connection("http://localhost", token="t", transport=httpx.MockTransport(never))
    a, b = connection.dataset("a"), connection.dataset("b")
    for combined in (lambda: dpframe.concat([a[a["x"] > 1], b[b["x"] > 1]]).dp.count(epsilon=1.0),
                     lambda: (a["x"] + b["x"]).dp.mean(bounds=(0, 10), epsilon=1.0)):
        with pytest.raises(RefusedError, match="two dataset\\(\\) calls"):
            combined()


def test_the_client_waits_as_the_rate_limit_says_and_sends_the_same_request_again() -> None:
    """A 429 with Retry-After is the server's rate limit, not an answer: the client waits and sends the same
    request (a refused request charged nothing); after its attempts it raises the server's error."""
    import httpx

    from dpframe import errors
    from dpframe.service.client import ATTEMPTS, Connection

    sent: list[bytes] = []

    def limited_once(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        if len(sent) == 1:
            return httpx.Response(429, headers={"Retry-After": "0"},
                                  json={"error": {"type": "RateLimited", "message": "too many requests"}})
        return httpx.Response(200, json={"value": 1})

    connection = Connection("http://localhost", token="t", transport=httpx.MockTransport(limited_once))
    assert connection._request("POST", "/v1/datasets/a/run", {"request_id": "r1"}) == 1
    assert len(sent) == 2 and sent[0] == sent[1]

    def always_limited(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(429, headers={"Retry-After": "0"},
                              json={"error": {"type": "RateLimited", "message": "too many requests"}})

    sent.clear()
    connection = Connection("http://localhost", token="t", transport=httpx.MockTransport(always_limited))
    with pytest.raises(errors.RemoteError, match="RateLimited"):
        connection._request("POST", "/v1/datasets/a/run", {"request_id": "r2"})
    assert len(sent) == ATTEMPTS
