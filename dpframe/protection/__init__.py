"""Protected data: what a derived frame may do and still spend the same budget.

``protect()`` turns a DataFrame (or Series) into a :class:`ProtectedFrame`
(:class:`ProtectedSeries`): an object that holds the rows and a privacy
budget and offers only the operations whose effect on one person dpframe
knows. The rest is refused with a message saying why and what to do
instead. The table of operations, their stability and what dpframe does is
:data:`dpframe.protection.rules.RULES` (rendered in ``docs/privacy-model.md``).

Modules, one job each:

* :mod:`.units` -- the privacy-unit record of every row and per-query contribution bounding;
* :mod:`.base` -- what protected frames and series share: their rows, refusals and row-wise methods;
* :mod:`.frame`, :mod:`.series` -- the protected frame and series and their allow-list;
* :mod:`.indexing` -- ``loc``, ``iloc`` and column keys;
* :mod:`.conversions` -- the type rules of ``astype``, ``fillna``, ``where``, ``replace`` and ``map``;
* :mod:`.levels` -- row-label levels beside the privacy-unit record;
* :mod:`.rowwise` -- running row-wise operations with schema-decided types and no data-dependent errors;
* :mod:`.expressions` -- ``query``/``eval`` strings evaluated on protected columns;
* :mod:`.combine` -- merges and :func:`concat`;
* :mod:`.functions` -- pandas' functions that take a column (``to_datetime``, ``to_numeric``), same names;
* :mod:`.protect` -- ``protect()``, Poisson sampling, and ``unprotected()``;
* :mod:`.rules` -- the table and the refusal messages.
"""

from dpframe.protection.base import Protected
from dpframe.protection.combine import concat
from dpframe.protection.frame import ProtectedFrame
from dpframe.protection.functions import to_datetime, to_numeric
from dpframe.protection.protect import poisson_sample, protect, unprotected
from dpframe.protection.series import ProtectedSeries
from dpframe.protection.units import UNIT_LEVEL, Protection, contribution_mask, unit_ids

__all__ = [
    "UNIT_LEVEL",
    "Protected",
    "ProtectedFrame",
    "ProtectedSeries",
    "to_datetime",
    "to_numeric",
    "Protection",
    "concat",
    "contribution_mask",
    "poisson_sample",
    "protect",
    "unit_ids",
    "unprotected",
]
