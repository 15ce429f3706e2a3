"""Issue 30's promise: a notebook written against a local protected frame runs against the server by changing the
line that makes ``p``. Each pipeline here runs twice with the same seeded noise: once on ``df.dp.protect(...)``, once on
``connect(...).dataset(...)`` answered by the server's own code (the plan's validation, :func:`replay.run`, the wire,
the server's error mapping and warning forwarding) in this process. The answers must be identical (values, dtypes,
index, repr, their release), refusals and errors the same exception with the same message, warnings the same, and the
budget spent the same.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

import dpframe  # noqa: E402
from dpframe.service import replay, wire  # noqa: E402
from dpframe.service.client import Connection, RemoteFrame, RemoteSeries  # noqa: E402
from dpframe.service.plan import Plan  # noqa: E402
from dpframe.service.server import forwarded, mapped_error  # noqa: E402
from dpframe.testing import NotPrivateWarning, seeded_noise  # noqa: E402
from test_service_wire import assert_same  # noqa: E402  (the wire's test of an exact round trip)

EPSILON, DELTA = 1e6, 1e-3


def protect(frame: pd.DataFrame) -> dpframe.ProtectedFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpframe.LargeDeltaWarning)
        return frame.dp.protect(epsilon=EPSILON, delta=DELTA, ledger=dpframe.Ledger.in_memory())


class Curator:
    """The server's answer to a plan, in this process: each dataset protected with its own budget (as a session is),
    plans validated, replayed, encoded and their errors and warnings mapped by the server's own functions."""

    def __init__(self, datasets: dict[str, pd.DataFrame]) -> None:
        self.frames = {name: protect(frame) for name, frame in datasets.items()}

    def __call__(self, request: Any) -> Any:
        name = request.url.path.split("/")[3] if request.url.path.count("/") >= 3 else None
        if request.method == "GET":
            return httpx.Response(200, json={"value": None if name else list(self.frames)})
        try:
            plan = Plan.model_validate_json(request.content)
            outcome = replay.run(self.frames[name], plan)
            body = {"value": wire.encode(outcome.value), "warnings": forwarded(outcome.warnings)}
        except Exception as error:  # noqa: BLE001  (answered as the server answers it)
            failure = mapped_error(error)
            return httpx.Response(failure.status, json={"error": {"type": failure.kind, "message": failure.message}})
        return httpx.Response(200, text=json.dumps(body, allow_nan=False))


def spent(budget: Any) -> tuple[Any, Any]:
    return budget.spent.epsilon.exact, budget.spent.delta.exact


def shown(value: Any) -> None:
    """Show a remote object as a notebook does: a step's refusal or error surfaces at the latest then (the client
    records steps and sends them with the first question, docs/server.md)."""
    if isinstance(value, (RemoteFrame, RemoteSeries)):
        repr(value)
    elif isinstance(value, tuple):
        for part in value:
            shown(part)


def ran(pipeline: Callable[[Any], Any], p: Any, seed: int) -> tuple[str, Any, list[tuple[type[Warning], str]]]:
    """What ``pipeline(p)`` gave ("value" or "error", and it) and the warnings it raised, under ``seed``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with seeded_noise(seed):
            try:
                kind, value = "value", pipeline(p)
                shown(value)
            except Exception as error:  # noqa: BLE001  (both sides must fail alike)
                kind, value = "error", error
    # dpframe's warnings are the ones the server forwards (another library's could quote the data): docs/server.md.
    warned = [(w.category, str(w.message)) for w in caught
             if issubclass(w.category, Warning) and w.category.__module__ == "dpframe.errors"
             and not issubclass(w.category, NotPrivateWarning)]
    return kind, value, warned


Run = tuple[str, Any, list[tuple[type[Warning], str]]]


def compare_runs(local: Run, remote: Run) -> None:
    """The same answer (or the same error: type and message) and the same warnings."""
    (local_kind, local_value, local_warned), (remote_kind, remote_value, remote_warned) = local, remote
    if local_kind == "error":
        assert remote_kind == "error", f"locally {type(local_value).__name__}: {local_value}; remotely {remote_value!r}"
        assert (type(remote_value), str(remote_value)) == (type(local_value), str(local_value))
    else:
        assert remote_kind == "value", f"remotely {type(remote_value).__name__}: {remote_value}"
        assert_same_answer(remote_value, local_value)
    assert remote_warned == local_warned


def assert_runs_alike(local: Any, remote: Any, pipeline: Callable[[Any], Any], seed: int = 5) -> None:
    """Run ``pipeline`` on the local and on the remote frame (or namespace) with the same noise: alike."""
    compare_runs(ran(pipeline, local, seed), ran(pipeline, remote, seed))


def assert_same_answer(remote: Any, local: Any) -> None:
    """A protected object stands as a remote one showing the same schema; anything else is exactly the local value."""
    if isinstance(local, dpframe.ProtectedFrame):
        assert type(remote) is RemoteFrame
        assert repr(remote) == repr(local)
    elif isinstance(local, dpframe.ProtectedSeries):
        assert isinstance(remote, RemoteSeries) and not isinstance(remote, RemoteFrame)
        assert repr(remote) == repr(local)
    elif isinstance(local, tuple):
        assert isinstance(remote, tuple) and len(remote) == len(local)
        for got, expected in zip(remote, local):
            assert_same_answer(got, expected)
    else:
        assert_same(remote, local)


@pytest.fixture
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        yield


def connected(datasets: dict[str, pd.DataFrame]) -> tuple[Connection, Curator]:
    curator = Curator(datasets)
    return Connection("http://localhost", token="t", transport=httpx.MockTransport(curator)), curator


# -- the published pipelines of tests/pipelines/, step by step ---------------------------------------------------------
from pipelines.registry import PIPELINES  # noqa: E402


# What does not yet run remotely as it runs locally, and why (skipped on both sides, with the steps that need them).
_MODULE_FUNCTION = ("dpframe's module functions (dpframe.concat, dpframe.to_datetime) take protected objects; a plan "
                    "has no step for them yet, so given remote frames they refuse as pandas' functions do")
KNOWN_GAPS = {
    "union-all": _MODULE_FUNCTION, "summarise-by-day": _MODULE_FUNCTION, "daily-counts": _MODULE_FUNCTION, "make-datetime": _MODULE_FUNCTION,
    "make-datetime-100": _MODULE_FUNCTION, "time-hour-iso8601": _MODULE_FUNCTION,
    "time-hour-iso8601-utc": _MODULE_FUNCTION, "time-hour-hour-ny": _MODULE_FUNCTION,
    "info": "info(buf=io.StringIO()): a StringIO cannot be sent, so the client fails before the server can refuse "
            "info itself (info() without buf is refused alike)",
    "left-join-weather": "the public table (26,000 rows x 15 columns) is over the server's max_cells for a value "
                         "(docs/server.md): refused by design, with its own message",
    "crosstab-normalize": "the categories an earlier release selected are remembered by the column's lineage on the "
                          "frame that asked; the server replays each request from the dataset, so a column made by "
                          "an earlier assignment (dta['affair'] = ...) is new each time and its categories are "
                          "selected again (the same noise, another order)",
}


@pytest.mark.parametrize("pipeline", PIPELINES, ids=lambda pipeline: pipeline.name)
def test_a_published_pipeline_runs_remotely_as_it_runs_locally(pipeline: Any, quiet: None) -> None:
    plain = pipeline.load()
    local = {name: protect(frame) if name in pipeline.private else frame for name, frame in plain.items()}
    connection, curator = connected({name: plain[name] for name in pipeline.private})
    remote = {name: connection.dataset(name) if name in pipeline.private else frame for name, frame in plain.items()}
    budgets = {name: local[name].dp.budget for name in pipeline.private}
    differences = []
    for number, step in enumerate(pipeline.steps):
        code = step.dp or step.run
        if step.name in KNOWN_GAPS:
            for namespace in (local, remote):
                namespace.pop(step.store, None)
            continue
        local_run, remote_run = ran(code, local, number), ran(code, remote, number)
        try:
            compare_runs(local_run, remote_run)
        except AssertionError as error:
            differences.append(f"{step.name} ({step.code}): {' '.join(str(error).split())[:600]}")
        charged = {name: (spent(budgets[name]), spent(curator.frames[name].dp.budget)) for name in pipeline.private}
        if any(local_spent != remote_spent for local_spent, remote_spent in charged.values()):
            differences.append(f"{step.name}: spent (locally, remotely) {charged}")
            break  # the rest would differ for this reason
        if step.store:
            if local_run[0] == remote_run[0] == "value":
                local[step.store], remote[step.store] = local_run[1], remote_run[1]
            else:
                local.pop(step.store, None)
                remote.pop(step.store, None)
    assert not differences, "\n".join(differences)
