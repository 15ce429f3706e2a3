"""Rules for the whole project (doctests in dpframe/ and tests/): collection, and a ledger per test."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

# The Dask front door needs the optional 'dask' extra: its modules import dask, so they are not collected without it.
collect_ignore_glob = [] if importlib.util.find_spec("dask") is not None else ["dpframe/dask/*"]
# The curator service needs the optional 'server' and 'client' extras (FastAPI, pydantic, httpx).
if any(importlib.util.find_spec(module) is None for module in ("fastapi", "pydantic", "httpx")):
    collect_ignore_glob.append("dpframe/service/*")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Plotting examples need the optional ``plot`` extra: skip them, clearly, when it is missing."""
    if importlib.util.find_spec("matplotlib") is not None:
        return
    skip = pytest.mark.skip(reason="matplotlib (the 'plot' extra) is not installed")
    for item in items:
        if "plotting.py" in item.nodeid or item.name.endswith("._Accessor.plot"):
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def session_ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Module- and session-scoped fixtures, made before any test's own ledger, use one of the session's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPFRAME_LEDGER", str(tmp_path_factory.mktemp("session-ledger") / "ledger.sqlite"))
        yield


@pytest.fixture(autouse=True)
def own_ledger(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test and doctest keeps its budgets in a ledger file of its own, never the user's (DPFRAME_LEDGER)."""
    monkeypatch.setenv("DPFRAME_LEDGER", str(tmp_path_factory.mktemp("ledger") / "ledger.sqlite"))
