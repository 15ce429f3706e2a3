"""dpframe: differential privacy for pandas.

``import dpframe`` registers a ``.dp`` accessor on DataFrame and Series::

    import pandas as pd, dpframe
    p = df.dp.protect(epsilon=1.0, delta=1e-6)     # a ProtectedFrame (or dpframe.protect(df, ...))
    p["age"].dp.mean(bounds=(0, 125), epsilon=0.2)
    p.dp.select(["Oslo", "Rome"], score=dpframe.agg.count(where="city == @candidate"), epsilon=0.1)
    p.dp.budget
"""

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

register()

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
    "evaluate",
    "protect",
    "to_datetime",
    "to_numeric",
]
