"""Which process this is, for state that a fork copies but must not share.

A forked child inherits copies of the parent's memory: a Poisson sample's
running total, an in-memory ledger, open SQLite connections. Each is bound to
the process that made it. Process ids cannot tell processes apart for this:
a later descendant can be given the id of a process that has exited and
would then pass the check with a stale copy. So the owner is a token object
that every fork replaces in the child (``os.register_at_fork``): a copy of
state made before a fork never holds the child's token.

>>> token = current()
>>> token is current()
True
"""

from __future__ import annotations

import os


class ProcessToken:
    """The identity of one process (compared with ``is``)."""

    __slots__ = ()


_current = ProcessToken()


def _renew() -> None:
    global _current
    _current = ProcessToken()


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere processes start afresh (spawn) and copy no state
    os.register_at_fork(after_in_child=_renew)


def current() -> ProcessToken:
    """This process's token: the same object for its whole life, a new one in every fork."""
    return _current
