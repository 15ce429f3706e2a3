"""Row labels made from values: equal values of different types stay apart, and each row keeps its own.

pandas builds a level of row labels by factorising its values, and equal values of different types --
``1``, ``1.0``, ``True``, ``Decimal(1)`` -- become one label, in the type of whichever row came first;
reading the labels back (``reset_index``) infers one type for all of them (``[1, 1.5]`` comes back as
``[1.0, 1.5]``). Either lets one person's value change another person's row: a later
``map(lambda v: type(v) is float)`` and a count would add that up over everybody.

So a protected object keeps every level of object dtype as :class:`Label` objects: a label is equal only
to a label of the same type and value, so factorising (``set_index``, ``merge``, ``concat``) keeps them
apart, and reading them back (:func:`values_of`) gives each row the very value it had. Levels of other
dtypes hold one type, and stay as pandas makes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpframe.protection.analyst import plain_column
from dpframe.protection.values import representation


class Label:
    """One row's label value, equal only to a label of the very same value (same type all the way down, same
    sign of zero, zone, unit: :func:`~dpframe.protection.values.representation`).

    >>> Label(1) == Label(1), Label(1) == Label(1.0), Label(-0.0) == Label(0.0), Label(float("nan")) == Label(float("nan"))
    (True, False, False, True)
    """

    __slots__ = ("value", "_key")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._key = representation(value)

    def __eq__(self, other: object) -> bool:
        return type(other) is Label and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __lt__(self, other: Label) -> bool:
        """As the values sort; values that do not sort together raise TypeError, whatever they are (a numpy
        scalar against a tuple gives an array, whose truth raises ValueError), so that pandas keeps its order."""
        try:
            return bool(self.value < other.value)
        except Exception:  # noqa: BLE001 -- plain values only: no code of the analyst's runs here
            raise TypeError("these labels do not sort together") from None

    def __repr__(self) -> str:
        return repr(self.value)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Label, (self.value,))


def labelled(level: pd.Index[Any]) -> pd.Index[Any]:
    """A level of row labels as a protected object keeps it: object values as :class:`Label` objects, floats
    without the sign of zero (pandas keeps whichever of ``-0.0`` and ``0.0`` came first for both).

    >>> labelled(pd.Index([1, 1.0], dtype=object)).nunique(), labelled(pd.Index([1, 2])).dtype
    (2, dtype('int64'))
    >>> labelled(pd.Index([-0.0])).tolist()
    [0.0]
    """
    if level.dtype.kind in "fc":
        return level + 0.0  # IEEE: -0.0 + 0.0 == +0.0
    if level.dtype != object:
        return level
    values = plain_column(pd.Series(level.to_numpy(dtype=object), dtype=object)).to_numpy()
    labels = np.empty(len(values), dtype=object)
    for position, value in enumerate(values):  # a Python loop, as pandas' own hashing of object labels
        labels[position] = Label(value)
    return pd.Index(labels, dtype=object, name=level.name)


def values_of(level: pd.Index[Any]) -> pd.Index[Any]:
    """The values of a level of row labels: the :class:`Label` objects opened, without inferring a type.

    >>> values_of(labelled(pd.Index([1, 1.5], dtype=object))).tolist()
    [1, 1.5]
    """
    if level.dtype != object:
        return level
    values = np.empty(len(level), dtype=object)
    for position, label in enumerate(level.to_numpy(dtype=object)):
        values[position] = label.value if type(label) is Label else label
    return pd.Index(values, dtype=object, name=level.name, tupleize_cols=False)


def index_of(levels: Sequence[pd.Index[Any]], names: Sequence[Any] | None = None) -> pd.Index[Any]:
    """One index from the values of its levels, as ``pd.MultiIndex.from_arrays`` makes it, but without its
    categorical step, which reads a level of tuples of one length as a second dimension and raises -- only
    for such values, so the error would depend on them. A single level stays a flat index.

    >>> index_of([pd.Index([(1, 2), (3, 4)], dtype=object, tupleize_cols=False), pd.Index(["a", "b"])]).tolist()
    [((1, 2), 'a'), ((3, 4), 'b')]
    """
    names = [level.name for level in levels] if names is None else list(names)
    if len(levels) == 1:
        return levels[0].rename(names[0])
    factorised = [pd.factorize(level, use_na_sentinel=True) for level in levels]
    uniques: Any = [unique for _, unique in factorised]  # pandas-stubs take levels for plain sequences only
    codes: Any = [code for code, _ in factorised]
    return pd.MultiIndex(levels=uniques, codes=codes, names=names, verify_integrity=False)


def product_index(keys: Sequence[pd.Index[Any]], names: Sequence[Any]) -> pd.Index[Any]:
    """Every combination of ``keys`` (each unique), as ``pd.MultiIndex.from_product`` makes it (see :func:`index_of`).

    >>> product_index([pd.Index([(1, 2), (3, 4)], dtype=object, tupleize_cols=False), pd.Index(["a"])],
    ...               ["t", "c"]).tolist()
    [((1, 2), 'a'), ((3, 4), 'a')]
    """
    if len(keys) == 1:
        return keys[0].rename(names[0])
    grid: Any = list(np.indices([len(k) for k in keys]).reshape(len(keys), -1))
    levels: Any = list(keys)
    return pd.MultiIndex(levels=levels, codes=grid, names=list(names), verify_integrity=False)


def plain_index(index: pd.Index[Any]) -> pd.Index[Any]:
    """An index with the values of its levels (:func:`values_of`), for the curator or the analyst's function.

    >>> plain_index(pd.MultiIndex.from_arrays([labelled(pd.Index([1, "a"], dtype=object)), [0, 1]])).tolist()
    [(1, 0), ('a', 1)]
    """
    return index_of([values_of(index.get_level_values(i)) for i in range(index.nlevels)], index.names)
