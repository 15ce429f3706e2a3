"""Integer encoding of columns and equivalence classes (shared by the anonymity and attack tools).

Every column is turned into integer codes once (missing values get a code of
their own, so they form classes like any other value). Several columns
combine into one int64 key per row, re-compacted whenever the product of
the cardinalities could overflow, and class sizes are counted with
``np.bincount`` (dense keys) or ``np.unique`` (sparse keys): one vectorised
pass instead of the O(n^2) loop of a row-by-row check.

Nothing here is differentially private; it only reads columns (never the
index, so the ``_dp_unit`` level of protected frames is ignored) and never
touches a privacy budget.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.protection.base import refuse_protected

IntArray = NDArray[np.int64]

# Products of cardinalities stay below this, so that keys never overflow int64.
KEY_LIMIT = 2**62
NOT_DP = "not differentially private; no privacy budget spent"


def columns_of(df: pd.DataFrame, columns: Sequence[Hashable] | Hashable, what: str) -> list[Hashable]:
    """Validate a list of column names (a single name is accepted too).

    >>> import pandas as pd
    >>> columns_of(pd.DataFrame({"a": [1], "b": [2]}), "a", "quasi_identifiers")
    ['a']
    """
    refuse_protected(df, "an anonymity measure or attack")
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}")
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence | pd.Index):
        names: list[Hashable] = [columns]
    else:
        names = list(columns)
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise KeyError(f"{what}: no column(s) {missing!r} in this frame (columns: {list(df.columns)!r})")
    if len(set(names)) != len(names):
        raise ValueError(f"{what}: a column is listed twice in {names!r}")
    return names


def encode(values: pd.Series[Any] | pd.Index[Any] | Sequence[Any] | NDArray[Any]) -> tuple[IntArray, int]:
    """Integer codes ``0..card-1`` for the values (missing values share one code of their own).

    >>> codes, card = encode(pd.Series(["b", "a", None, "b"]))
    >>> codes.tolist(), card
    ([0, 1, 2, 0], 3)
    """
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        cat_codes = values.cat.codes.to_numpy().astype(np.int64)
        card = len(values.cat.categories)
        if (cat_codes < 0).any():
            cat_codes = np.where(cat_codes < 0, card, cat_codes)
            card += 1
        return cat_codes, max(card, 1)
    series = values if isinstance(values, (pd.Series, pd.Index)) else pd.Series(values)
    codes, uniques = pd.factorize(series, use_na_sentinel=False)
    return np.asarray(codes, dtype=np.int64), max(len(uniques), 1)


def compact(key: IntArray, card: int) -> tuple[IntArray, int]:
    """Relabel keys to ``0..m-1`` (m distinct keys), keeping their order.

    >>> compact(np.array([7, 3, 7, 9]), 10)
    (array([1, 0, 1, 2]), 3)
    """
    if card <= max(4 * len(key), 1 << 16):
        present = np.bincount(key, minlength=card) > 0
        relabel = np.cumsum(present, dtype=np.int64) - 1
        return relabel[key], int(present.sum())
    uniques, inverse = np.unique(key, return_inverse=True)
    return inverse.astype(np.int64, copy=False).reshape(-1), len(uniques)


def combine(parts: Sequence[tuple[IntArray, int]], n: int) -> tuple[IntArray, int]:
    """One int64 key per row from several code columns (mixed radix, compacted before it could overflow).

    >>> combine([(np.array([0, 1, 1]), 2), (np.array([2, 0, 2]), 3)], 3)
    (array([2, 3, 5]), 6)
    """
    key: IntArray = np.zeros(n, dtype=np.int64)
    card = 1
    for codes, c in parts:
        if card * c >= KEY_LIMIT:
            key, card = compact(key, card)
        key = key * c + codes if card > 1 else codes.astype(np.int64, copy=True)
        card *= c
    return key, card


def class_ids(key: IntArray, card: int) -> tuple[IntArray, int]:
    """Class number of every row (``0..m-1``) and the number of classes m.

    >>> class_ids(np.array([5, 2, 5]), 6)
    (array([1, 0, 1]), 2)
    """
    return compact(key, card)


def row_key(df: pd.DataFrame, columns: Sequence[Hashable]) -> tuple[IntArray, int]:
    """The combined key of ``columns`` for every row of ``df``.

    >>> key, card = row_key(pd.DataFrame({"a": [1, 1, 2], "b": ["x", "x", "y"]}), ["a", "b"])
    >>> key.tolist(), card
    ([0, 0, 3], 4)
    """
    return combine([encode(df[c]) for c in columns], len(df))


__all__ = ["KEY_LIMIT", "NOT_DP", "class_ids", "columns_of", "combine", "compact", "encode", "row_key"]
