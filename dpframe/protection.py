"""How a protected frame carries its budget and remembers whose rows it holds.

``protect()`` attaches two things to a copy of the data:

* a :class:`Protection` in ``frame.attrs["dpframe"]``. pandas copies ``attrs``
  into almost every derived frame or series (filters, ``loc``, ``assign``,
  ``sort_values``, ``astype``, ``copy``, column selection, ...). Its
  ``__deepcopy__`` returns itself, so every derived frame spends from the
  *same* budget object rather than a copy of it.
* an index level named ``_dp_unit`` holding each row's privacy unit (a row
  number, or the value of the ``privacy_unit`` column). It travels with the
  rows themselves, so a query can count how many rows each unit contributes
  after any chain of pandas operations -- an ``explode``, an overlapping
  ``concat`` or a one-to-many ``merge`` shows up as repeated units, which each
  query bounds to ``max_contributions`` rows per unit before aggregating.

If an operation drops the ``_dp_unit`` record (``set_index`` without
``append=True``, ``reset_index(drop=True)``, an aggregation, a merge on
columns), queries are refused with a message that says how to keep it:
refusing is the only way never to under-charge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.budget import Budget
from dpframe.errors import AlreadyProtectedError, NotProtectedError, PrivacyUnitLostError
from dpframe.noise.random import current_source

ATTRS_KEY = "dpframe"
UNIT_LEVEL = "_dp_unit"

PandasObject = pd.DataFrame | pd.Series


@dataclass(frozen=True, eq=False)
class Protection:
    """The budget a protected frame spends from and how its privacy unit is defined."""

    budget: Budget
    max_contributions: int = 1
    privacy_unit: str | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Protection:
        # pandas deep-copies attrs into derived frames; they must share this budget.
        return self

    def __copy__(self) -> Protection:
        return self

    @property
    def unit_description(self) -> str:
        """``"row"`` or ``"user_id (at most k rows each)"``."""
        if self.privacy_unit is None:
            return "row"
        return f"{self.privacy_unit} (at most {self.max_contributions} rows each)"


def protection_of(obj: PandasObject) -> Protection | None:
    """The protection attached to a frame or series, or None."""
    found = obj.attrs.get(ATTRS_KEY)
    return found if isinstance(found, Protection) else None


def require_protection(obj: PandasObject) -> Protection:
    """The protection of ``obj``, or a clear error saying how to protect it."""
    protection = protection_of(obj)
    if protection is None:
        if has_unit_record(obj):
            raise NotProtectedError(
                "this data comes from a protected frame, but the operation that produced it dropped its "
                "budget (pandas did not carry attrs through it, as with merge against an unprotected frame). "
                "Derive it from the protected frame with operations that keep attrs, or join the other data "
                "into the frame before protecting it."
            )
        raise NotProtectedError(
            "this frame is not protected: call df.dp.protect(epsilon=...) first and query the frame it returns"
        )
    return protection


def has_unit_record(obj: PandasObject) -> bool:
    """True when the rows still say which privacy unit they belong to."""
    if UNIT_LEVEL in obj.index.names:
        return True
    return isinstance(obj, pd.DataFrame) and UNIT_LEVEL in obj.columns


def unit_ids(obj: PandasObject) -> pd.Index[Any]:
    """Each row's privacy unit, from the ``_dp_unit`` index level or column.

    Raises :class:`PrivacyUnitLostError` when the record was dropped.
    """
    require_unit_record(obj)
    index = obj.index
    if UNIT_LEVEL in index.names:
        if isinstance(index, pd.MultiIndex):
            return index.get_level_values(UNIT_LEVEL)
        return index
    column: pd.Series[Any] = obj[UNIT_LEVEL]
    recorded: pd.Index[Any] = pd.Index(column.to_numpy(), name=UNIT_LEVEL)
    return recorded


def require_unit_record(obj: PandasObject) -> None:
    """Raise :class:`PrivacyUnitLostError` (from the schema alone) if rows no longer record their unit."""
    if has_unit_record(obj):
        return
    if isinstance(obj, pd.DataFrame) and any(str(c).startswith(UNIT_LEVEL + "_") for c in obj.columns):
        raise PrivacyUnitLostError(
            "this frame joins rows of several privacy units into one row (a self-join or a merge of two "
            "protected frames): a row's contribution cannot be attributed to one person, so the query is "
            "refused and nothing was charged. Query each protected frame separately."
        )
    raise PrivacyUnitLostError(
        f"this frame comes from a protected frame, but an operation dropped the '{UNIT_LEVEL}' index level "
        "that records which person each row belongs to (set_index without append=True, "
        "reset_index(drop=True), an aggregation, melt, or a merge on columns do this). Without it dpframe "
        "cannot bound each person's contribution, so the query is refused and nothing was charged. Keep "
        f"the record: use set_index(..., append=True), or reset_index() without drop so '{UNIT_LEVEL}' "
        "travels as a column through merges."
    )


def check_can_protect(obj: PandasObject) -> None:
    """Refuse to start a second budget for data that is, or came from, protected data."""
    if protection_of(obj) is not None:
        raise AlreadyProtectedError(
            "this frame is already protected; query it directly (its budget is frame.dp.budget), or protect "
            "the original data with protect(budget=frame.dp.budget) to share that budget"
        )
    if has_unit_record(obj):
        raise AlreadyProtectedError(
            f"this data carries a '{UNIT_LEVEL}' record, so it was derived from a protected frame; "
            "protecting it again would start a second budget for the same people"
        )


def attach(
    obj: PandasObject, protection: Protection, units: NDArray[Any] | pd.Index[Any] | None
) -> PandasObject:
    """A shallow copy of ``obj`` with the unit record in its index and the protection in attrs."""
    protected = obj.copy(deep=False)
    unit_index: pd.Index[Any]
    if units is None:
        unit_index = pd.RangeIndex(len(obj), name=UNIT_LEVEL)
    else:
        unit_index = pd.Index(units, name=UNIT_LEVEL)
    original = obj.index
    if isinstance(original, pd.RangeIndex) and original.name is None and original.start == 0 and original.step == 1:
        # The default index carries no information: replace it rather than stacking a second level.
        protected.index = unit_index
    else:
        levels = [original.get_level_values(i) for i in range(original.nlevels)]
        protected.index = pd.MultiIndex.from_arrays(
            [*levels, unit_index], names=[*original.names, UNIT_LEVEL]
        )
    protected.attrs = {**obj.attrs, ATTRS_KEY: protection}
    return protected


def contribution_mask(obj: PandasObject, max_contributions: int) -> NDArray[np.bool_] | None:
    """Which rows a query may use so that no unit contributes more than ``max_contributions`` rows.

    ``None`` means every row may be used (no unit is repeated beyond the bound),
    the common case, decided without copying the data. Otherwise the kept rows
    of an over-represented unit are chosen uniformly at random (with the secure
    source), so the choice depends on no other unit's data.
    """
    units = unit_ids(obj)
    if max_contributions == 1 and _all_distinct(units):
        return None
    codes = _unit_codes(units)
    counts = np.bincount(codes)
    if counts.max(initial=0) <= max_contributions:
        return None
    keep = counts[codes] <= max_contributions
    # Only rows of over-represented units need a random choice: sort just those,
    # by unit then by a random priority, and keep the first max_contributions.
    over = np.flatnonzero(~keep)
    over_codes = codes[over]
    priority = current_source().words(len(over))
    bits = max(1, int(over_codes.max()).bit_length())  # >= 1: never shift a uint64 by 64
    if bits <= 32:
        # One 64-bit key: the unit in the high bits, >= 32 random bits below it
        # (a tie, broken by position, has probability < rows^2 / 2^33).
        key = (over_codes.astype(np.uint64) << np.uint64(64 - bits)) | (priority >> np.uint64(bits))
        order = np.argsort(key)
    else:
        order = np.lexsort((priority, over_codes))
    sorted_codes = over_codes[order]
    first = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    keep[over[order[rank < max_contributions]]] = True
    return keep


_SEEN_CHUNK = 1 << 16


def _all_distinct(units: pd.Index[Any]) -> bool:
    """``units.is_unique`` without pandas' hash table for integer units in a compact range.

    pandas answers cheaply (and caches it) for a monotonic index, e.g. after a filter;
    for a reordered one it hashes every unit. Integer units spanning at most 4 values
    per row -- row numbers, the default -- are checked with a table of seen flags.
    """
    if isinstance(units, pd.RangeIndex) or units.is_monotonic_increasing or units.is_monotonic_decreasing:
        return bool(units.is_unique)
    values = units.to_numpy()
    if values.dtype.kind not in "iu" or len(values) == 0:
        return bool(units.is_unique)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= 4 * len(values):
        return bool(units.is_unique)
    seen = np.zeros(hi - lo + 1, dtype=np.bool_)
    for start in range(0, len(values), _SEEN_CHUNK):
        part = values[start : start + _SEEN_CHUNK]
        seen[part - lo if lo else part] = True
    return int(np.count_nonzero(seen)) == len(values)


def _unit_codes(units: pd.Index[Any]) -> NDArray[np.intp]:
    """A non-negative number per unit (same unit, same number), for bincount.

    Integer units in a compact range are used as they are, shifted to start at 0;
    others are factorized (a hash pass).
    """
    values = units.to_numpy()
    if values.dtype.kind in "iu" and len(values) > 0:
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 4 * len(values):
            shifted: NDArray[np.intp] = (values - values.dtype.type(lo)).astype(np.intp, copy=False)
            return shifted
    codes, _ = pd.factorize(units, use_na_sentinel=False)
    return np.asarray(codes, dtype=np.intp)
