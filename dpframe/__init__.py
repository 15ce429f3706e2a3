"""dpframe: differential privacy for pandas.

``import dpframe`` registers a ``.dp`` accessor on DataFrame and Series::

    import pandas as pd, dpframe
    p = df.dp.protect(epsilon=1.0, delta=1e-6)     # a ProtectedFrame (or dpframe.protect(df, ...))
    p["age"].dp.mean(bounds=(0, 125), epsilon=0.2)
    p.dp.select(["Oslo", "Rome"], score=dpframe.agg.count(where="city == @candidate"), epsilon=0.1)
    p.dp.budget
"""

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


def connect(url: str, *, token: str, timeout: float = 60.0) -> "Connection":
    """Connect to a curator's server as an analyst (the ``client`` extra: httpx); ``c.dataset(name)`` then gives a
    remote protected frame with the local ``.dp`` API (docs/server.md).

    >>> import dpframe
    >>> dpframe.connect("http://dp.example.org", token="t")  # plain http:// to another host is refused
    Traceback (most recent call last):
    ...
    ValueError: refusing plain http:// to dp.example.org: ...
    """
    from dpframe.service.client import connect as connected  # httpx is imported only by who connects

    return connected(url, token=token, timeout=timeout)


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
