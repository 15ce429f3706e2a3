"""Who each protected row belongs to, and how many rows of one person a query may use.

Every protected object keeps its rows' privacy units in an index level named
``_dp_unit`` of its (private) pandas data: a row number, or the value of the
``privacy_unit`` column at ``protect()`` time. It travels with the rows
through every kept operation, so a query can count how many rows each unit
contributes after any chain of them -- an ``explode``, an overlapping
``dpframe.concat`` or a one-to-many ``merge`` shows up as repeated units,
which each query bounds to ``max_contributions`` rows per unit before
aggregating. The record is internal: no operation of a protected object can
drop or change it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.budget import Budget
from dpframe.accounting.ledger import BOUNDED_LINE
from dpframe.noise.random import current_source
from dpframe.protection.lineage import Lineage

UNIT_LEVEL = "_dp_unit"

PandasObject = pd.DataFrame | pd.Series

@dataclass(frozen=True, eq=False)
class Protection:
    """The budget protected data spends from and how its privacy unit is defined.

    One ``protect()`` call makes one protection: its ``key`` tells whether two
    protected objects hold the same people's rows (copies and pickles keep it).
    """

    budget: Budget
    max_contributions: int = 1
    privacy_unit: str | None = None
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    # Categories released by private partition selection, by the lineage of the expression released
    # (dpframe.protection.lineage): public once released (post-processing), so later queries on the same
    # expression use them as declared keys, at no cost.
    released_categories: dict[Lineage, pd.Index[Any]] = field(default_factory=dict, repr=False)
    # Bounded DP (docs/privacy-model.md): "replace" neighbours differ in one replaced row and n is public. The
    # rows protect() made (a Rows object of dpframe.protection.base) are then the ones whose count is public.
    neighbours: str = "add/remove"
    origin: Any = field(default=None, repr=False)

    @property
    def bounded(self) -> bool:
        """True under bounded DP (replace-one neighbours, public n)."""
        return self.neighbours == "replace"

    @property
    def budget_relation_differs(self) -> bool:
        """True when this add/remove protection's budget has since been marked bounded (by a later protect()).

        protect() refuses the mix when it can see it, but an add/remove protection made while the budget was
        still fresh would otherwise go on charging add/remove releases to a replace-one budget.
        """
        return not self.bounded and self.budget.store.has_line(self.budget.id, BOUNDED_LINE)

    def remember_categories(self, lineage: Lineage, keys: pd.Index[Any]) -> None:
        """Add privately released ``keys`` to what is public about the expression ``lineage`` (sorted as
        released)."""
        known = self.released_categories.get(lineage)
        merged = keys if known is None else known.append(keys.difference(known, sort=False))
        self.released_categories[lineage] = merged.rename(None)

    @property
    def unit_description(self) -> str:
        """``"row"`` or ``"user_id (at most k rows each)"``."""
        if self.privacy_unit is None:
            return "row"
        return f"{self.privacy_unit} (at most {self.max_contributions} rows each)"


def unit_ids(obj: PandasObject) -> pd.Index[Any]:
    """Each row's privacy unit, from the ``_dp_unit`` index level of protected data."""
    index = obj.index
    if isinstance(index, pd.MultiIndex):
        return index.get_level_values(UNIT_LEVEL)
    return index


def contribution_mask(obj: PandasObject, max_contributions: int,
                      words: Callable[[int], NDArray[np.uint64]] | None = None) -> NDArray[np.bool_] | None:
    """Which rows a query may use so that no unit contributes more than ``max_contributions`` rows.

    ``None`` means every row may be used (no unit is repeated beyond the bound),
    the common case, decided without copying the data. Otherwise the kept rows
    of an over-represented unit are chosen uniformly at random (with the secure
    source, or ``words``: uniform 64-bit words from a stream keyed by it, as
    :mod:`dpframe.dask.units` does on workers), so the choice depends on no other unit's data.
    """
    units = unit_ids(obj)
    if max_contributions == 1 and _all_distinct(units):
        return None
    codes = unit_codes(units)
    counts = np.bincount(codes)
    if counts.max(initial=0) <= max_contributions:
        return None
    keep = counts[codes] <= max_contributions
    # Only rows of over-represented units need a random choice: sort just those,
    # by unit then by a random priority, and keep the first max_contributions.
    over = np.flatnonzero(~keep)
    over_codes = codes[over]
    priority = (words or current_source().words)(len(over))
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


def unit_codes(units: pd.Index[Any]) -> NDArray[np.intp]:
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
