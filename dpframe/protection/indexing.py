"""Selecting from a protected frame: ``p.loc``, ``p.iloc`` and column keys (row labels and positions are
private)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, NoReturn, overload

import numpy as np
import pandas as pd

from dpframe.protection.analyst import public_value
from dpframe.protection.base import Protected, _is_label
from dpframe.protection.conversions import _where
from dpframe.protection.rules import refusal

if TYPE_CHECKING:
    from dpframe.protection.frame import ProtectedFrame
    from dpframe.protection.series import ProtectedSeries


class _Loc:
    """``p.loc[cond]``, ``p.loc[cond, columns]``, ``p.loc[:, columns]``, and ``p.loc[cond, column] = value``."""

    def __init__(self, frame: ProtectedFrame) -> None:
        self._frame = frame

    def _split(self, key: Any) -> tuple[Any, Any]:
        if isinstance(key, tuple):
            if len(key) != 2:
                raise TypeError("p.loc takes [rows] or [rows, columns]")
            return key
        return key, slice(None)

    # As p[...]: a list of columns (or all of them) gives a frame, one label a column.
    @overload
    def __getitem__(self, key: tuple[Any, list[Any] | pd.Index[Any] | slice]) -> ProtectedFrame: ...

    @overload
    def __getitem__(self, key: tuple[Any, Callable[[ProtectedFrame], Any]]) -> Any: ...

    @overload
    def __getitem__(self, key: tuple[Any, Hashable]) -> ProtectedSeries: ...

    @overload
    def __getitem__(self, key: Protected | Callable[[ProtectedFrame], Any]) -> ProtectedFrame: ...

    def __getitem__(self, key: Any) -> Any:
        rows, columns = self._split(key)
        frame = self._frame
        if not (isinstance(rows, slice) and rows == slice(None)):
            if not _is_condition(rows):
                _refuse_labels()
            mask = frame._condition(rows, "p.loc[rows]")
            if np.ndim(mask) != 1:  # as pandas, which would otherwise mask cells (a type read from the values)
                raise TypeError("Cannot index with multidimensional key: p.loc takes one condition per row; combine "
                                "the columns' conditions, e.g. (p[['a', 'b']] > 0).all(axis=1), or mask cells "
                                "with p.where(cond)")
            frame = frame._filter(mask, rows)
        if isinstance(columns, slice) and columns == slice(None):
            return frame
        if callable(columns):
            columns = columns(frame)
        labels = frame._private.columns
        if isinstance(columns, slice):  # a slice of column labels, as pandas reads it: from the schema alone
            bounds = (public_value(part, "p.loc[:, start:stop]") for part in (columns.start, columns.stop, columns.step))
            return frame._wrap(frame._private[list(labels[labels.slice_indexer(*bounds)])], lineage=frame._lineage)
        return frame._wrap(frame._private[column_key(labels, columns, "p.loc[rows, columns]")],
                           lineage=frame._lineage)

    def __setitem__(self, key: Any, value: Any) -> None:
        rows, column = self._split(key)
        frame = self._frame
        if callable(column) and not isinstance(column, type):  # as pandas: called with the (protected) frame
            column = column(frame)
        if not isinstance(column, Hashable) or isinstance(column, slice):
            raise TypeError("p.loc[rows, column] = value sets one column")
        everywhere = isinstance(rows, slice) and rows == slice(None)
        if not everywhere and not _is_condition(rows):
            _refuse_labels()
        if everywhere:
            frame[column] = value
            return
        keep = ~frame._condition(rows, "p.loc[rows, column] = value")
        put_back = frame._put_back(value, rows)  # p.loc[cond, "x"] *= 2: the values of those very rows
        filler = put_back if put_back is not None else frame._operand(value, "p.loc[rows, column] = value",
                                                                          aligned=False)
        data = frame._private
        if column in data.columns:
            new = _where(data[column], keep, filler)
        else:
            blank = pd.Series(np.nan, index=data.index, name=column)
            new = _where(blank, keep, filler)
        frame._set_column(column, new)


def _is_condition(rows: Any) -> bool:
    return isinstance(rows, Protected) or (callable(rows) and not isinstance(rows, type))


def _refuse_labels() -> NoReturn:
    raise refusal("selecting rows by label or position", "positional",
                  "labels and positions of protected rows are private")


class _ILoc:
    """``p.iloc[:, columns]`` only: positions of rows are refused."""

    def __init__(self, frame: ProtectedFrame) -> None:
        self._frame = frame

    def __getitem__(self, key: Any) -> Any:
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], slice) and key[0] == slice(None)):
            raise refusal("p.iloc[rows]", "positional")
        columns = self._frame._private.columns[key[1]]
        if isinstance(columns, pd.Index):
            return self._frame[list(columns)]
        return self._frame[columns]


def column_key(columns: pd.Index[Any], key: Any, operation: str) -> Any:
    """``key`` if it names some of ``columns`` (a label, or a list of labels); refused otherwise.

    pandas reads other keys -- boolean lists, arrays, frames -- against the rows, by position
    or by label, which are private (their length alone is the row count). Shared by the
    protected pandas and Dask frames, so both refuse alike.
    """
    if isinstance(key, (list, pd.Index, np.ndarray)):
        labels = list(key)
        if all(_is_label(label) and label in columns for label in labels):
            return labels
    elif _is_label(key):
        if key in columns:
            return key
        raise KeyError(f"{key!r} is not a column; the columns are {list(columns)}")
    raise refusal(operation, "mixing", f"a {type(key).__name__} key is neither column labels nor a condition "
                                       "computed from these protected rows")

