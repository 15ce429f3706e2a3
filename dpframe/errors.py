"""Exceptions raised by dpframe.

Every message is built from the schema and the arguments only, never from
values in the private data, so an error cannot leak a record.
"""

from __future__ import annotations


class DPFrameError(Exception):
    """Base class of every dpframe error."""


class BudgetExceededError(DPFrameError):
    """A query would spend more than the remaining budget; nothing was charged."""


class NotProtectedError(DPFrameError, TypeError):
    """A private query was asked of a frame that carries no privacy budget."""


class PrivacyUnitLostError(DPFrameError, ValueError):
    """A derived frame no longer records which privacy unit each row belongs to."""


class AlreadyProtectedError(DPFrameError, ValueError):
    """protect() was called on data that is already (or was) protected."""
