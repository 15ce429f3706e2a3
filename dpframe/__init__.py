"""dpframe: differential privacy for pandas.

``import dpframe`` registers a ``.dp`` accessor on DataFrame and Series::

    import pandas as pd, dpframe
    p = df.dp.protect(epsilon=1.0, delta=1e-6)     # a ProtectedFrame (or dpframe.protect(df, ...))
    p["age"].dp.mean(bounds=(0, 125), epsilon=0.2)
    p.dp.select(["Oslo", "Rome"], score=dpframe.agg.count(where="city == @candidate"), epsilon=0.1)
    p.dp.budget

An analyst of a curator's server (``dpframe serve``, docs/server.md) changes only the line that makes ``p``::

    p = dpframe.connect("https://dp.example.org", token=token).dataset("census")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpframe import anonymity, attacks, evaluate
from dpframe.accessor import register
from dpframe.accounting import Budget, Cost, Ledger
from dpframe.errors import (
    AlreadyProtectedError,
    BudgetExceededError,
    ClippingWarning,
    DPFrameError,
    LargeDeltaWarning,
    LedgerError,
    NotProtectedError,
    ProposalRefusedError,
    ReconnectedWarning,
    RefusedError,
)
from dpframe.protection import ProtectedFrame, ProtectedSeries, concat, protect, to_datetime, to_numeric
from dpframe.queries import agg
from dpframe.results import OTHER, Clipping, DPFloat, DPInt, Release

if TYPE_CHECKING:
    from dpframe.service.client import Connection

register()


def connect(url: str, *, token: str, timeout: float = 60.0) -> Connection:
    """Connect to a curator's server as an analyst: ``connect(url, token=...).dataset(name)`` is a remote protected
    frame with the local ``.dp`` API (:func:`dpframe.service.client.connect`; needs the ``client`` extra).

    >>> connect("http://dp.example.org", token="t")
    Traceback (most recent call last):
    ...
    ValueError: refusing plain http:// to dp.example.org: the token and the answers would cross the network unencrypted; use https:// (the curator serves TLS, docs/server.md), or http:// only to localhost
    """
    try:
        from dpframe.service.client import connect as connect_with_httpx
    except ImportError as error:  # httpx is the client extra's, not a core dependency
        raise ImportError(f"dpframe.connect needs the client extra: pip install 'dpframe[client]' ({error.name} is "
                          "missing)") from None
    return connect_with_httpx(url, token=token, timeout=timeout)

__version__ = "0.1.0"

__all__ = [
    "OTHER",
    "AlreadyProtectedError",
    "Budget",
    "BudgetExceededError",
    "Clipping",
    "ClippingWarning",
    "LargeDeltaWarning",
    "Cost",
    "DPFloat",
    "DPFrameError",
    "DPInt",
    "Ledger",
    "LedgerError",
    "NotProtectedError",
    "ProtectedFrame",
    "ProposalRefusedError",
    "ProtectedSeries",
    "ReconnectedWarning",
    "RefusedError",
    "Release",
    "__version__",
    "agg",
    "anonymity",
    "attacks",
    "concat",
    "connect",
    "evaluate",
    "protect",
    "to_datetime",
    "to_numeric",
]
