"""Exceptions raised by dpframe.

Every message is built from the schema and the arguments only, never from
values in the private data, so an error cannot leak a record.
"""

from __future__ import annotations

import inspect
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpframe.accounting.costs import Cost


class DPFrameError(Exception):
    """Base class of every dpframe error."""


class BudgetExceededError(DPFrameError):
    """A query would spend more than the remaining budget; nothing was charged.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1, 2, 3]}).dp.protect(epsilon=0.1)
    >>> try:
    ...     p.dp.count(epsilon=0.5)
    ... except dpframe.BudgetExceededError as error:
    ...     print(error)
    count needs ε=0.5, δ=0 but only ε=0.1, δ=0 remains; nothing was charged
    """


class NotProtectedError(DPFrameError, TypeError):
    """A private query was asked of a frame that carries no privacy budget.

    >>> import pandas as pd, dpframe
    >>> try:
    ...     pd.DataFrame({"x": [1]}).dp.count(epsilon=0.1)
    ... except dpframe.NotProtectedError:
    ...     print("protect() first")
    protect() first
    """


class RefusedError(DPFrameError, TypeError):
    """An operation on protected data was refused: it would read exact values or void the guarantee.

    The message says what was refused, why, and what to do instead. Nothing
    was charged and no data was read.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": [30, 40]}).dp.protect(epsilon=1.0)
    >>> try:
    ...     p["age"].mean()
    ... except dpframe.RefusedError as error:
    ...     print(str(error).split(":")[0])
    ProtectedSeries.mean is refused on protected data
    """


class ProposalRefusedError(DPFrameError):
    """Propose-test-release refused to answer: its noisy test failed. Unlike other refusals, this one was charged.

    The refusal is part of the private release (it depends on the data only
    through the noisy test), so its cost (``.cost``) stays spent.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [0.0] * 50 + [100.0] * 50}).dp.protect(epsilon=1.0, delta=1e-6)
    >>> try:
    ...     p["x"].dp.median(method="ptr", sensitivity=1.0, bounds=(0, 100), epsilon=1.0, delta=1e-6)
    ... except dpframe.ProposalRefusedError as refusal:
    ...     print(float(refusal.cost.epsilon), float(p.dp.budget.spent.epsilon.exact))
    1.0 1.0
    """

    def __init__(self, message: str, cost: Cost) -> None:
        super().__init__(message)
        self.cost = cost


class AlreadyProtectedError(DPFrameError, ValueError):
    """protect() was called on data that is already (or was) protected.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1]}).dp.protect(epsilon=1.0)
    >>> try:
    ...     p.dp.protect(epsilon=1.0)
    ... except dpframe.AlreadyProtectedError:
    ...     print("one budget per data set")
    one budget per data set
    """


class LedgerError(DPFrameError, ValueError):
    """The ledger refused: the data already has another budget, a total differs, or a ledger cannot be found.

    Nothing was charged. The message names the budget and what to pass instead.

    >>> import pandas as pd, dpframe
    >>> df = pd.DataFrame({"x": [1, 2, 3]})
    >>> ledger = dpframe.Ledger.in_memory()
    >>> p = df.dp.protect(epsilon=1.0, ledger=ledger)
    >>> try:
    ...     df.dp.protect(epsilon=2.0, ledger=ledger)
    ... except dpframe.LedgerError as error:
    ...     print("pass that total" in str(error))
    True
    """


class RemoteError(DPFrameError):
    """The curator's server could not answer: unreachable, the token refused, or an error it does not name.

    Errors the server names (a refusal, an exhausted budget, a wrong argument) are raised by the client as the
    same exception types, with the same messages, as in the curator's own process (docs/server.md).

    >>> str(RemoteError("the server refused the token (401)"))
    'the server refused the token (401)'
    """


class ReconnectedWarning(UserWarning):
    """``protect()`` found this data's (or this name's) budget in the ledger and reconnected to it.

    Its spending so far counts: a restart, a new kernel or another process
    cannot spend the same budget again. The message says what was spent.
    """


class LargeDeltaWarning(UserWarning):
    """The budget's δ is at least 1/n, where n is the number of privacy units in the protected data.

    A δ that large allows mechanisms that publish some people's records
    outright: releasing each unit's row with probability δ is (0, δ)-DP and,
    at δ ≥ 1/n, exposes one person in expectation. Use δ well below 1/n
    (1/n² or smaller is common). Checked once, by ``protect()``, which holds
    the raw data legitimately; queries are never checked against n, so what
    they do and say never depends on it.
    """


class ClippingWarning(UserWarning):
    """A noticeable share of the values lay outside the bounds and was clipped (``Release.clipping``).

    The answer and its interval are then for the clipped values, which can be
    far from the statistic of the data as it is. Declare ``bounds=`` that
    contain the data, from knowledge of the domain rather than from the data.
    """


def warn(message: str, category: type[Warning]) -> None:
    """Issue a warning at the caller's first line outside dpframe, so it points at the user's code."""
    frame, level = inspect.currentframe(), 0
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "dpframe":
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
