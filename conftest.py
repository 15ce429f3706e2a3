"""Collection rules for the whole project (doctests in dpframe/ and tests/)."""

from __future__ import annotations

import importlib.util

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Plotting examples need the optional ``plot`` extra: skip them, clearly, when it is missing."""
    if importlib.util.find_spec("matplotlib") is not None:
        return
    skip = pytest.mark.skip(reason="matplotlib (the 'plot' extra) is not installed")
    for item in items:
        if "plotting.py" in item.nodeid or item.name.endswith("._Accessor.plot"):
            item.add_marker(skip)
