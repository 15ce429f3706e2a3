"""Row labels of protected data: the analyst's levels (from ``set_index``, or given at ``protect()``) beside
the privacy-unit record, each value kept in its own type (:mod:`.labels`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dpframe.protection.labels import index_of, labelled, values_of
from dpframe.protection.rowwise import convert
from dpframe.protection.units import UNIT_LEVEL


def _user_levels(data: pd.DataFrame | pd.Series) -> list[Any]:
    return [name for name in data.index.names if name != UNIT_LEVEL]


def level_dtypes(data: Any) -> dict[Any, Any]:
    """The dtype of each row-label level of protected data, by name."""
    return {name: data.index.get_level_values(i).dtype for i, name in enumerate(data.index.names)}


def flattened(data: pd.DataFrame, positions: Sequence[int] | None = None) -> pd.DataFrame:
    """``data.reset_index()`` of the levels at ``positions`` (all by default), in front, named as pandas names
    them, each row with the very value it had: pandas infers one type for all the values of an object level.
    """
    index = data.index
    chosen: list[Any] = list(range(index.nlevels)) if positions is None else list(positions)
    flat = (data.set_axis(pd.RangeIndex(len(data)), axis=0) if len(chosen) == index.nlevels
            else data.droplevel(chosen)).copy(deep=False)
    names = list(index.names)
    for position in reversed(chosen):
        values = values_of(index.get_level_values(position))
        name = names[position] if names[position] is not None else (f"level_{position}" if index.nlevels > 1
                                                                      else "index")
        flat.insert(0, name, pd.Series(values, index=flat.index, dtype=values.dtype))
    return flat


def _level_of(column: pd.Series[Any]) -> pd.Index[Any]:
    """A column as a level of row labels, of the column's dtype (:func:`~dpframe.protection.labels.labelled`)."""
    level: pd.Index[Any] = pd.Index(column.array, dtype=column.dtype, name=column.name)
    return labelled(level)


def with_levels(frame: pd.DataFrame, names: list[Any], dtypes: Mapping[Any, Any]) -> pd.DataFrame:
    """``frame.set_index(names)`` with each level of the given dtype (pandas infers object labels' type), and
    object values kept apart by type (:mod:`dpframe.protection.labels`)."""
    # The privacy unit stays as protect() made it: its values are compared by equality (1 and 1.0 are one unit).
    arrays = [_level_of(convert(frame.loc[:, n], dtypes[n])) if n != UNIT_LEVEL
              else pd.Index(convert(frame.loc[:, n], dtypes[n]), name=n) for n in names]
    out = frame.drop(columns=names)
    out.index = index_of(arrays, names)
    return out


def _unit_last(names: Sequence[Any]) -> list[int]:
    """Positions of index levels that put the privacy-unit record last."""
    positions = list(range(len(names)))
    unit = list(names).index(UNIT_LEVEL)
    return [i for i in positions if i != unit] + [unit]


def _drop_user_levels(data: Any) -> Any:
    levels = _user_levels(data)
    return data.droplevel(levels) if levels else data

