"""Generalization hierarchies: value tables, ARX CSV files, numeric rounding and intervals.

A hierarchy is a table (a DataFrame) with one row per original value: column
0 holds the value, column ``i`` its generalization at level ``i``. The last
level is usually ``*`` (the value fully suppressed). ARX stores the same
table as a header-less ``;``-separated file, ``value;level1;level2;...;*``,
read by :func:`read_hierarchy`.

Generalizing is not differentially private and spends no privacy budget:
the generalized frame still holds one row per person.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.anonymity._encode import IntArray, columns_of

HierarchySpec = Union[pd.DataFrame, str, "os.PathLike[str]", Mapping[Any, Sequence[Any]]]


def read_hierarchy(path: str | os.PathLike[str], *, sep: str = ";", encoding: str = "utf-8") -> pd.DataFrame:
    """Read a hierarchy in ARX's CSV format (``value;level1;level2;...;*``, no header) into a table.

    The table has integer column labels ``0..H``: column 0 holds the original
    values, column ``i`` their generalization at level ``i``. Every cell is
    read as text (``"NA"`` stays the string ``"NA"``); values of a numeric
    data column are matched to it by their text form. Not differentially
    private; spends no budget.

    >>> import io
    >>> table = read_hierarchy(io.StringIO("Private;Non-Government;*\\nState-gov;Government;*\\n"))
    >>> table
               0               1  2
    0    Private  Non-Government  *
    1  State-gov      Government  *
    """
    table = pd.read_csv(path, sep=sep, header=None, dtype=str, keep_default_na=False, encoding=encoding)
    table.columns = pd.RangeIndex(table.shape[1])
    _check_table(table, str(path))
    return table


def hierarchy_table(spec: HierarchySpec) -> pd.DataFrame:
    """Normalise a hierarchy given as a table, a ``{value: [level1, ...]}`` mapping or an ARX CSV path.

    >>> hierarchy_table({"Married": ["spouse present", "*"], "Divorced": ["spouse not present", "*"]})
              0                   1  2
    0   Married      spouse present  *
    1  Divorced  spouse not present  *
    """
    if isinstance(spec, pd.DataFrame):
        table = spec.reset_index(drop=True).copy()
        table.columns = pd.RangeIndex(table.shape[1])
    elif isinstance(spec, (str, os.PathLike)):
        return read_hierarchy(spec)
    elif isinstance(spec, Mapping):
        rows = [[value, *levels] for value, levels in spec.items()]
        if len({len(r) for r in rows}) > 1:
            raise ValueError("every value of a hierarchy mapping needs the same number of levels")
        table = pd.DataFrame(rows)
    else:
        raise TypeError(
            f"a hierarchy is a DataFrame, a path to an ARX CSV file or a {{value: [levels]}} mapping, "
            f"got {type(spec).__name__}"
        )
    _check_table(table, "hierarchy")
    return table


def rounding_hierarchy(values: Any, *, max_depth: int | None = None) -> pd.DataFrame:
    """Numeric generalization by rounding down to ``10**depth`` (the book's "depth", ch. 3.2).

    Level ``d`` maps ``x`` to ``floor(x / 10**d) * 10**d`` -- for non-negative
    values exactly the book's ``int(x / 10**depth) * 10**depth``. Without
    ``max_depth`` the levels go on until every value rounds to the same
    number (if negative and positive values never meet, a last ``*`` level
    is added). Not differentially private; spends no budget.

    >>> rounding_hierarchy([42, 52, 36, 24, 73])
        0   1  2
    0  24  20  0
    1  36  30  0
    2  42  40  0
    3  52  50  0
    4  73  70  0
    """
    series = pd.Series(values)
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise TypeError("rounding_hierarchy needs numeric values; use a value table or interval_hierarchy")
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1):
        raise ValueError(f"max_depth must be an integer >= 1, got {max_depth!r}")
    uniques = np.sort(pd.unique(series.dropna().to_numpy()))
    integer = np.issubdtype(uniques.dtype, np.integer)
    columns: list[Any] = [uniques]
    biggest = float(np.max(np.abs(uniques))) if len(uniques) else 0.0
    digits = max(1, math.floor(math.log10(biggest)) + 1) if biggest >= 1 else 1
    limit = max_depth if max_depth is not None else digits + 1
    for depth in range(1, limit + 1):
        scale = 10**depth
        if integer:
            level = (uniques.astype(np.int64) // scale) * scale
        else:
            level = np.floor(uniques / scale) * scale
        columns.append(level)
        if max_depth is None and len(np.unique(level)) <= 1:
            break
    table = pd.DataFrame(dict(enumerate(columns)))
    if max_depth is None and len(uniques) > 1 and table[table.columns[-1]].nunique() > 1:
        table[len(columns)] = "*"
    return table


def interval_hierarchy(values: Any, widths: Sequence[float], *, origin: float = 0, top: Any = "*") -> pd.DataFrame:
    """Numeric generalization into intervals ``[lo, lo + width)`` of growing width (binning).

    Each width must be a whole multiple of the one before, so that every
    interval lies inside one interval of the next level. ``top`` (``"*"``)
    adds a last level holding one value; ``top=None`` leaves it out. Not
    differentially private; spends no budget.

    >>> interval_hierarchy([17, 23, 38], widths=[5, 10])
        0         1         2  3
    0  17  [15, 20)  [10, 20)  *
    1  23  [20, 25)  [20, 30)  *
    2  38  [35, 40)  [30, 40)  *
    """
    widths = [float(w) for w in widths]
    if not widths or any(w <= 0 for w in widths):
        raise ValueError("widths must be a non-empty list of positive numbers")
    for small, big in zip(widths, widths[1:]):
        ratio = big / small
        if ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
            raise ValueError(f"each width must be a whole multiple of the one before ({small:g} -> {big:g} is not)")
    series = pd.Series(values)
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise TypeError("interval_hierarchy needs numeric values")
    uniques = np.sort(pd.unique(series.dropna().to_numpy()))
    table = pd.DataFrame({0: uniques})
    for i, width in enumerate(widths, start=1):
        lo = origin + np.floor((uniques.astype(float) - origin) / width) * width
        table[i] = [f"[{a:g}, {a + width:g})" for a in lo]
    if top is not None:
        table[len(widths) + 1] = top
    return table


def suppression_hierarchy(values: Any, top: Any = "*") -> pd.DataFrame:
    """The two-level hierarchy ``value -> *`` (keep the value, or suppress it).

    >>> suppression_hierarchy(["F", "M", "F"])
       0  1
    0  F  *
    1  M  *
    """
    uniques = pd.unique(pd.Series(values).dropna())
    return pd.DataFrame({0: uniques, 1: top})


def default_hierarchy(series: pd.Series[Any]) -> pd.DataFrame:
    """The hierarchy used when none is given: rounding for numbers, ``value -> *`` otherwise.

    >>> default_hierarchy(pd.Series(["a", "b"])).shape, default_hierarchy(pd.Series([5, 15])).shape
    ((2, 2), (2, 3))
    """
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return rounding_hierarchy(series)
    return suppression_hierarchy(series)


def _check_table(table: pd.DataFrame, where: str) -> None:
    if table.shape[1] < 2 or len(table) == 0:
        raise ValueError(f"{where}: a hierarchy needs at least one value and one generalization level")
    if not pd.Index(table[0]).is_unique:
        raise ValueError(f"{where}: a value is listed twice in the first column")


def _as_text(value: Any) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True, eq=False)
class ColumnHierarchy:
    """A hierarchy matched to one data column: codes per distinct value at every level.

    ``codes`` numbers each row's distinct value; ``maps[level][code]`` is that
    value's class at ``level`` (compact, ``0..cards[level]-1``). Missing values
    the hierarchy does not list stay missing (one class of their own) at every
    level.

    >>> ch = ColumnHierarchy.build(pd.Series([3, 14, 15]), rounding_hierarchy([3, 14, 15]))
    >>> ch.height, ch.cards, ch.generalized(1).tolist()
    (2, [3, 2, 1], [0, 10, 10])
    """

    name: Hashable
    table: pd.DataFrame
    codes: IntArray
    positions: NDArray[np.intp]
    maps: tuple[IntArray, ...]
    cards: tuple[int, ...] | list[int]

    @property
    def height(self) -> int:
        """The highest level (0 is the original value)."""
        return len(self.maps) - 1

    @classmethod
    def build(cls, series: pd.Series[Any], spec: HierarchySpec | None) -> ColumnHierarchy:
        """Match ``series`` to a hierarchy (``None``: :func:`default_hierarchy`)."""
        table = default_hierarchy(series) if spec is None else hierarchy_table(spec)
        raw_codes, uniques = pd.factorize(series, use_na_sentinel=False)
        codes = np.asarray(raw_codes, dtype=np.int64)
        values = pd.Index(uniques)
        known = pd.Index(table[0])
        positions = np.asarray(known.get_indexer(values), dtype=np.intp)
        missing_value = np.asarray(pd.isna(values), dtype=bool)
        unmatched = (positions < 0) & ~missing_value
        if unmatched.any():
            text = pd.Index(table[0].map(_as_text))
            if text.is_unique:
                alt = [_as_text(v) for v in values[unmatched]]
                positions[unmatched] = text.get_indexer(pd.Index(alt))
            unmatched = (positions < 0) & ~missing_value
        if unmatched.any():
            # Name no values: error messages never repeat the data (the project-wide rule).
            raise ValueError(
                f"column {series.name!r} has values that are not in its hierarchy; list them with "
                f"set(df[{series.name!r}].dropna()) - set(hierarchy[0]) and add rows for them"
            )
        maps: list[IntArray] = [np.arange(len(values), dtype=np.int64)]
        cards = [max(len(values), 1)]
        for level in range(1, table.shape[1]):
            labels = _labels(table, positions, level)
            level_codes, level_uniques = pd.factorize(labels, use_na_sentinel=False)
            maps.append(np.asarray(level_codes, dtype=np.int64))
            cards.append(max(len(level_uniques), 1))
        for level in range(len(maps) - 1):
            pairs = len(np.unique(maps[level] * cards[level + 1] + maps[level + 1]))
            if pairs != len(np.unique(maps[level])):
                raise ValueError(
                    f"column {series.name!r}: its hierarchy is not a tree -- a value of level {level} "
                    f"generalizes to two different values at level {level + 1}"
                )
        return cls(series.name, table, codes, positions, tuple(maps), cards)

    def labels(self, level: int) -> pd.Series[Any]:
        """The generalized value at ``level`` of each distinct value (in code order)."""
        return _labels(self.table, self.positions, level)

    def generalized(self, level: int, rows: NDArray[np.intp] | None = None) -> pd.Series[Any]:
        """Generalized values of the rows (all rows, or the given row positions) at ``level``."""
        if not 0 <= level <= self.height:
            raise ValueError(f"column {self.name!r}: level {level} outside 0..{self.height}")
        codes = self.codes if rows is None else self.codes[rows]
        out = self.labels(level).take(codes).reset_index(drop=True)
        out.name = self.name
        return out


def _labels(table: pd.DataFrame, positions: NDArray[np.intp], level: int) -> pd.Series[Any]:
    column = table[level]
    found = positions >= 0
    if found.all():
        return column.take(positions).reset_index(drop=True)
    out = column.take(np.where(found, positions, 0)).reset_index(drop=True)
    if not pd.api.types.is_object_dtype(out.dtype) and not pd.api.types.is_float_dtype(out.dtype):
        out = out.astype(object)
    out[~found] = np.nan
    return out


def generalize(
    df: pd.DataFrame,
    levels: Mapping[Hashable, int],
    hierarchies: Mapping[Hashable, HierarchySpec] | None = None,
) -> pd.DataFrame:
    """Replace each listed column by its generalization at the given level (the book's ``generalize``).

    Columns without a hierarchy are rounded by depth when numeric (level
    ``d``: ``floor(x / 10**d) * 10**d``) and suppressed to ``*`` at level 1
    otherwise. Other columns, the index and ``attrs`` are kept, so a
    protected frame stays protected (its budget is not touched). Not
    differentially private; spends no budget.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": [42, 52, 36, 24, 73], "preTestScore": [4, 24, 31, 2, 3],
    ...                    "postTestScore": [25, 94, 57, 62, 70]})
    >>> generalize(df, {"age": 1, "preTestScore": 1, "postTestScore": 1})
       age  preTestScore  postTestScore
    0   40             0             20
    1   50            20             90
    2   30            30             50
    3   20             0             60
    4   70             0             70
    """
    hierarchies = dict(hierarchies or {})
    columns = columns_of(df, list(levels), "levels")
    out = df.copy()
    for column in columns:
        level = levels[column]
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
            raise TypeError(f"level of column {column!r} must be an integer, got {level!r}")
        ch = ColumnHierarchy.build(df[column], hierarchies.get(column))
        if not 0 <= level <= ch.height:
            raise ValueError(f"column {column!r}: level {level} outside its hierarchy's levels 0..{ch.height}")
        if level > 0:
            values = ch.generalized(int(level))
            values.index = df.index
            out[column] = values
    return out


__all__ = [
    "ColumnHierarchy",
    "HierarchySpec",
    "default_hierarchy",
    "generalize",
    "hierarchy_table",
    "interval_hierarchy",
    "read_hierarchy",
    "rounding_hierarchy",
    "suppression_hierarchy",
]
