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
import weakref
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
GROUP_BOUNDING = "group bounding"

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
    # Secret keys drawn on first use (see group_bounding_key), by purpose: kept with the protection so that every
    # query of it makes the same keyed choices.
    secrets: dict[str, bytes] = field(default_factory=dict, repr=False)

    def group_bounding_key(self) -> bytes:
        """The 16-byte secret that keys which groups each unit keeps under ``max_groups`` (:class:`GroupChoice`).

        Drawn from the secure source on first use, not at ``protect()``: a
        protection that never bounds groups draws nothing (and seeded tests
        draw the same noise as before). ``setdefault`` keeps the first key
        stored if two threads draw at once, so every query sees one key.
        """
        key = self.secrets.get(GROUP_BOUNDING)
        if key is None:
            key = self.secrets.setdefault(GROUP_BOUNDING, current_source().words(2).tobytes())
        return key

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
    codes, _ = numbered_units(units)
    return codes


def numbered_units(units: pd.Index[Any]) -> tuple[NDArray[np.intp], Callable[[NDArray[np.intp]], pd.Index[Any]]]:
    """:func:`unit_codes`, and a function giving the units (values, as in ``units``) of some of those numbers."""
    values = units.to_numpy()
    if values.dtype.kind in "iu" and len(values) > 0:
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 4 * len(values):
            first = values.dtype.type(lo)
            shifted: NDArray[np.intp] = (values - first).astype(np.intp, copy=False)
            return shifted, lambda numbers: pd.Index(numbers.astype(values.dtype) + first)
    codes, uniques = pd.factorize(units, use_na_sentinel=False)
    return np.asarray(codes, dtype=np.intp), pd.Index(uniques).take


# The splitmix64 finaliser: a bijection of 64-bit words that mixes every input bit into every output bit.
_MIX = (np.uint64(30), np.uint64(0xBF58476D1CE4E5B9), np.uint64(27), np.uint64(0x94D049BB133111EB), np.uint64(31))


def mix_words(words: NDArray[np.uint64], *, in_place: bool = False) -> NDArray[np.uint64]:
    a, b, c, d, e = _MIX
    mixed = words if in_place else words.copy()
    shifted = np.empty_like(mixed)  # one scratch array for the three shifts (a fresh array per step costs page faults)
    mixed ^= np.right_shift(mixed, a, out=shifted)
    mixed *= b
    mixed ^= np.right_shift(mixed, c, out=shifted)
    mixed *= d
    mixed ^= np.right_shift(mixed, e, out=shifted)
    return mixed


# Tags that keep apart the words of integers, of other numbers (float64 bits), of times (ns) and of missing values.
_INT_TAG, _FLOAT_TAG, _TIME_TAG = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9)
_MISSING = np.uint64(0x27D4EB2F165667C5)


def _number_words(numbers: NDArray[Any]) -> NDArray[np.uint64]:
    """Words of numbers that do not depend on their dtype: an integral value (of an integer, boolean or float
    dtype) as its int64, another number by its float64 bits; NaN as a missing value."""
    if numbers.dtype.kind in "ib" or (numbers.dtype.kind == "u" and (numbers.size == 0 or numbers.max() < 2**63)):
        return numbers.astype(np.int64).view(np.uint64) ^ _INT_TAG
    floats = numbers.astype(np.float64)
    integral = np.isfinite(floats) & (np.floor(floats) == floats) & (np.abs(floats) < 2.0**63)
    words = np.where(integral, 0.0, floats).view(np.uint64) ^ _FLOAT_TAG
    words[integral] = floats[integral].astype(np.int64).view(np.uint64) ^ _INT_TAG
    words[np.isnan(floats)] = _MISSING
    return words


def _text_words(texts: NDArray[Any], key: bytes) -> NDArray[np.uint64]:
    """pandas' SipHash of strings, keyed (the same for object, ``str`` and ``string`` dtypes)."""
    text_key = "".join(chr(byte & 0x7F) for byte in key)  # pandas wants 16 ASCII characters
    words: NDArray[np.uint64] = pd.util.hash_array(texts.astype(object), hash_key=text_key, categorize=False)
    return words


def _object_words(values: NDArray[Any], key: bytes) -> NDArray[np.uint64]:
    """Each value's word by its own type: strings, numbers (as :func:`_number_words`), times, missing values;
    any other object by its ``repr``."""
    if pd.api.types.infer_dtype(values, skipna=False) == "string":
        return _text_words(values, key)
    words = np.empty(len(values), dtype=np.uint64)
    for position, value in enumerate(values):  # a mixed column of distinct values: its types decide, one by one
        if value is None or value is pd.NaT or (isinstance(value, float) and value != value) or value is pd.NA:
            words[position] = _MISSING
        elif isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            exact = np.array([value], dtype=np.int64 if isinstance(value, (int, np.integer)) and
                             -2**63 <= int(value) < 2**63 else np.float64)
            words[position] = _number_words(exact)[0]
        elif isinstance(value, (pd.Timestamp, np.datetime64)):
            words[position] = np.uint64(pd.Timestamp(value).as_unit("ns").value & (2**64 - 1)) ^ _TIME_TAG
        else:
            words[position] = _text_words(np.array([value if isinstance(value, str) else repr(value)],
                                                   dtype=object), key)[0]
    return words


def keyed_hashes(values: pd.Index[Any], key: bytes) -> NDArray[np.uint64]:
    """A 64-bit hash of each value, keyed by the 16-byte ``key``, that depends on the value only, never on the
    dtype pandas gave the column (which the other rows decide: one float id makes an integer column float).

    Integral numbers hash as their int64 whatever their dtype, other numbers by their float64 bits, times by
    their nanoseconds (UTC), strings by pandas' keyed SipHash (the same for every string dtype), and each level
    of a MultiIndex so, combined in order; then a keyed mix. Categoricals hash as their values.

    >>> key = bytes(range(16))
    >>> same = [keyed_hashes(pd.Index(values), key)[0] for values in ([7, 8], [7.0, 8.5], [7, "x"])]
    >>> len(set(same)), len(set(keyed_hashes(pd.Index(["a", 7, 7.5, None]), key)))
    (1, 4)
    """
    k0, k1 = np.frombuffer(key, dtype=np.uint64)
    if isinstance(values, pd.MultiIndex):
        combined = np.zeros(len(values), dtype=np.uint64)
        for level in range(values.nlevels):
            combined = mix_words(combined ^ k1) ^ keyed_hashes(values.get_level_values(level), key)
        return combined
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = pd.Index(np.asarray(values.astype(object)), dtype=object)
    dtype = values.dtype
    if pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
        words = np.where(values.isna(), _MISSING, _text_words(values.to_numpy(dtype=object, na_value=""), key))
    elif pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        if isinstance(dtype, np.dtype):
            words = _number_words(values.to_numpy())
        else:  # a nullable (masked or Arrow) dtype: its values one by one, exactly
            words = _object_words(np.asarray(values.astype(object)), key)
    elif pd.api.types.is_datetime64_any_dtype(dtype):
        nanoseconds = pd.DatetimeIndex(values).as_unit("ns")
        if nanoseconds.tz is not None:
            nanoseconds = nanoseconds.tz_convert("UTC").tz_localize(None)
        words = nanoseconds.asi8.view(np.uint64) ^ _TIME_TAG
        words[np.asarray(values.isna())] = _MISSING
    else:
        words = _object_words(values.to_numpy(dtype=object), key)
    return mix_words(words ^ k0)


# How many leading bits of the keyed hash of (unit, cell) rank a unit's cells (ties, ~ cells² 2^-25 per unit,
# go to the lower cell number).
_RANK_BITS = 24


@dataclass(frozen=True, eq=False)
class GroupChoice:
    """Which rows a group-by may use so that each unit touches at most ``max_groups`` cells with at most
    ``max_rows_per_group`` rows in each (rows with cell -1, outside every group, are never used).

    The cells a unit keeps (:meth:`of`) are those of smallest keyed hash of
    (unit, cell) (its leading 24 bits; ties to the lower cell number, so number
    the cells in an order of their values, as public keys are): a function of
    the unit's own value, the cell's (``cell_hashes[c]``: a hash of cell
    ``c``'s key values, not of its position in the data) and the protection's
    secret ``key`` only -- so adding or removing another unit changes nothing
    of this unit's choice, and every query of one protection keeps the same
    cells for a unit. The choice is deterministic, so it is made once for the
    queries on the same rows and cells (:func:`remembered_group_choice`).
    Within a kept cell, the rows are chosen uniformly at random at each query
    (:meth:`rows`: a random priority from the secure source, or ``words``),
    like :func:`contribution_mask`.

    >>> units = pd.Index(["ann"] * 5 + ["bob"])
    >>> cells = np.array([0, 0, 0, 1, 2, 1])
    >>> hashes = keyed_hashes(pd.Index(["x", "y", "z"]), bytes(16))
    >>> keep = GroupChoice.of(units, cells, hashes, 2, 2, bytes(16)).rows()
    >>> int(keep[:5].sum()) <= 4, bool(keep[5])
    (True, True)
    """

    # Each unit's rows in its kept cells (all of them, in over-full cells too).
    in_kept_cells: NDArray[np.bool_]
    # The rows in kept cells of more than max_rows_per_group rows, in the rows' order, and their cell's number.
    over_rows: NDArray[np.intp]
    over_cells: NDArray[np.intp]
    max_rows_per_group: int

    def __post_init__(self) -> None:
        for array in (self.in_kept_cells, self.over_rows, self.over_cells):  # shared by the queries that reuse it
            array.flags.writeable = False

    @classmethod
    def of(cls, units: pd.Index[Any], cells: NDArray[np.integer[Any]], cell_hashes: NDArray[np.uint64],
           max_groups: int, max_rows_per_group: int, key: bytes) -> GroupChoice:
        """Choose each unit's cells: the rows ``units`` in ``cells`` (numbers of ``cell_hashes``, or -1)."""
        nothing = np.zeros(0, dtype=np.intp)
        in_group = cells >= 0
        if not in_group.any():
            return cls(in_group, nothing, nothing, max_rows_per_group)
        unit, units_numbered = numbered_units(units)
        every_row = bool(in_group.all())
        rows_per_unit = np.bincount(unit if every_row else unit[in_group], minlength=int(unit.max()) + 1)
        # A unit with at most min(L0, L∞) rows has at most L0 cells and L∞ rows in each: its rows are kept as they
        # are, and only the other units' rows are sorted.
        large_unit = rows_per_unit > min(max_groups, max_rows_per_group)
        large = large_unit[unit]
        keep = ~large if every_row else in_group & ~large
        chosen = large if every_row else large & in_group
        if not chosen.any():
            return cls(keep, nothing, nothing, max_rows_per_group)
        rows = None if chosen.all() else np.flatnonzero(chosen)  # None: all rows (not gathered)
        row_cells = cells if rows is None else cells[rows]
        if rows is not None:
            unit = unit[rows]
        # Each unit's value hashed once (its numbering plays no part in the choice), each cell's hash mixed once.
        hashed_units = np.flatnonzero(large_unit)
        unit_hashes = np.zeros(len(rows_per_unit), dtype=np.uint64)
        unit_hashes[hashed_units] = keyed_hashes(units_numbered(hashed_units), key)
        _, k1 = np.frombuffer(key, dtype=np.uint64)
        pair = unit_hashes[unit]
        pair ^= mix_words(cell_hashes ^ k1)[row_cells]
        pair = mix_words(pair, in_place=True)
        # A key per row ordering its (unit, cell) by unit, then the unit's cells by the leading _RANK_BITS bits of
        # the keyed hash, ties between cells broken by cell: equal for the rows of one (unit, cell), and the
        # (unit, cell) pairs in order once sorted. Always those bits, whatever the numbers of units and cells
        # (which another unit changes), so that no unit's ranking depends on them.
        pair >>= np.uint64(64 - _RANK_BITS)
        unit_bits = max(1, (len(rows_per_unit) - 1).bit_length())
        cell_bits = max(1, (len(cell_hashes) - 1).bit_length())
        row_keys: NDArray[np.uint64]
        pair_keys: NDArray[np.uint64]
        if unit_bits + _RANK_BITS + cell_bits <= 64:  # one 64-bit word: sort the words themselves
            row_keys = pair  # made in place: the rank moved up past the cell, the cell and unit put in
            row_keys <<= np.uint64(cell_bits)
            row_keys |= row_cells.astype(np.uint64)
            row_keys |= unit.view(np.uint64) << np.uint64(64 - unit_bits)  # numbers >= 0: the same bits
            sorted_keys = np.sort(row_keys)
            starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
            pair_keys = sorted_keys[starts]
            pair_units = (pair_keys >> np.uint64(64 - unit_bits)).view(np.intp)  # < 2^40: the same bits
        else:  # the pairs' ranks in a lexicographic sort as keys
            order = np.lexsort((row_cells, pair, unit))
            sorted_unit, sorted_cell = unit[order], row_cells[order]
            new_pair = np.r_[True, (sorted_unit[1:] != sorted_unit[:-1]) | (sorted_cell[1:] != sorted_cell[:-1])]
            starts = np.flatnonzero(new_pair)
            row_keys = np.empty(len(unit), dtype=np.uint64)
            row_keys[order] = np.cumsum(new_pair) - 1
            pair_keys = np.arange(len(starts), dtype=np.uint64)
            pair_units = sorted_unit[starts]
        sizes = np.diff(starts, append=len(unit))
        # A unit's rows in its kept cells are those whose key is at most that of its max_groups-th cell, if it has one
        # (all its rows otherwise). Its cells are a run of the sorted pairs, from its first.
        unit_firsts = np.flatnonzero(np.r_[True, pair_units[1:] != pair_units[:-1]])
        bound = unit_firsts + (max_groups - 1)
        has_bound = bound < np.r_[unit_firsts[1:], len(starts)]
        last_kept = np.full(len(rows_per_unit), np.iinfo(np.uint64).max, dtype=np.uint64)
        last_kept[pair_units[unit_firsts[has_bound]]] = pair_keys[bound[has_bound]]
        in_kept = row_keys <= last_kept[unit]
        if rows is None:
            keep = in_kept
        else:
            keep[rows] = in_kept
        # The rows of kept cells with more than max_rows_per_group rows: found by their key among those cells'.
        over = np.flatnonzero(sizes > max_rows_per_group)
        over = over[pair_keys[over] <= last_kept[pair_units[over]]]
        if len(over) == 0:
            return cls(keep, nothing, nothing, max_rows_per_group)
        over_keys = pair_keys[over]
        unit_over = np.zeros(len(rows_per_unit), dtype=np.bool_)
        unit_over[pair_units[over]] = True
        candidates = np.flatnonzero(in_kept & unit_over[unit])
        over_cell = np.searchsorted(over_keys, row_keys[candidates])
        found = over_keys[np.minimum(over_cell, len(over_keys) - 1)] == row_keys[candidates]
        over_rows = candidates[found] if rows is None else rows[candidates[found]]
        return cls(keep, over_rows, over_cell[found], max_rows_per_group)

    def rows(self, words: Callable[[int], NDArray[np.uint64]] | None = None) -> NDArray[np.bool_]:
        """The rows a query may use: those of the kept cells, at most ``max_rows_per_group`` in each, chosen by a
        random priority per row of an over-full cell (from the secure source, or ``words``), the smallest kept.

        The priorities follow the rows' order in the data, so one unit's rows
        draw the same words wherever another unit's rows are.
        """
        keep = self.in_kept_cells.copy()
        if len(self.over_rows) == 0:
            return keep
        keep[self.over_rows] = False
        priority = (words or current_source().words)(len(self.over_rows))
        ranked = np.lexsort((priority, self.over_cells))
        cell = self.over_cells[ranked]
        first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        rank = np.arange(len(ranked)) - np.repeat(first, np.diff(np.r_[first, len(ranked)]))
        keep[self.over_rows[ranked[rank < self.max_rows_per_group]]] = True
        return keep


@dataclass(frozen=True, eq=False)
class _Remembered:
    data: weakref.ref[PandasObject]
    columns: tuple[Any, ...]
    cells: pd.Index[Any]
    bounds: tuple[int, int]
    key: bytes
    choice: GroupChoice


# The last GroupChoice made on each protected pandas object, by the object's id (dropped when the object is).
_REMEMBERED: dict[int, _Remembered] = {}


def remembered_group_choice(
    data: PandasObject, columns: tuple[Any, ...], cells: pd.Index[Any], cell_codes: Callable[[], NDArray[np.int64]],
    max_groups: int, max_rows_per_group: int, key: bytes,
) -> GroupChoice:
    """The :class:`GroupChoice` of the rows of ``data`` grouped by ``columns`` into ``cells`` (each row's cell
    given by ``cell_codes()``), made once and reused by the next queries with the same arguments.

    Reusing it is the same as making it again: it is a function of the rows
    (protected data is not changed in place: pandas' copy-on-write), the
    grouping, the bounds and the key only, so every query keeps the same cells
    for a unit with or without it; each query still draws its rows within
    over-full cells afresh (:meth:`GroupChoice.rows`). One choice is kept per
    object (the last), as large as a boolean per row.
    """
    known = _REMEMBERED.get(id(data))
    bounds = (max_groups, max_rows_per_group)
    if (known is not None and known.data() is data and known.columns == columns and known.cells.identical(cells)
            and known.bounds == bounds and known.key == key):
        return known.choice
    choice = GroupChoice.of(unit_ids(data), cell_codes(), keyed_hashes(cells, key), max_groups, max_rows_per_group,
                            key)
    if known is None or known.data() is not data:
        weakref.finalize(data, _REMEMBERED.pop, id(data), None).atexit = False
    _REMEMBERED[id(data)] = _Remembered(weakref.ref(data), columns, cells, bounds, key, choice)
    return choice
