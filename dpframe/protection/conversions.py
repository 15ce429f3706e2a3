"""Type rules of the value-replacing methods (``astype``, ``fillna``, ``where``/``mask``, ``replace``, ``isin``,
``map``): a result's type is decided from the types alone, and values are converted each on its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import RefusedError
from dpframe.protection.analyst import holds_objects, public_dtype, public_value
from dpframe.protection.rowwise import (
    common_dtype,
    constant,
    constant_dtype,
    convert,
    elementwise,
    holds_missing,
    is_constant,
    quiet,
    widened,
)
from dpframe.protection.rules import refusal
from dpframe.protection.values import lookup


def _public_values(values: Any, operation: str) -> list[Any]:
    """A public list of values (``isin``), each a plain constant."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{operation} needs a list of values, got {type(values).__name__}")
    if isinstance(values, (pd.Series, pd.Index, np.ndarray)):
        values = public_value(values, operation).tolist()
    return [constant(v, operation) for v in values]


def _checked_astype(source: Any, dtype: Any, name: Any) -> Any:
    """The pandas dtype asked for, refused where it would be inferred from or fail on the data."""
    try:
        target = pd.api.types.pandas_dtype(public_dtype(dtype, "astype"))
    except RefusedError:
        raise
    except TypeError as error:
        raise TypeError(f"astype: {error}") from None
    target = public_dtype(target, "astype")  # a dtype named by a string, as pandas reads it
    if isinstance(target, pd.CategoricalDtype) and target.categories is None:
        raise refusal("astype('category')", "private_values", "its categories would be the values found")
    text = source is not None and (pd.api.types.is_object_dtype(source) or pd.api.types.is_string_dtype(source))
    if text and (pd.api.types.is_datetime64_any_dtype(target) or pd.api.types.is_timedelta64_dtype(target)):
        raise refusal(f"astype({target}) of text", "private_values",
                      "pandas may infer the date format from the values, so one person's value could change "
                      "how another's is read",
                      instead="parse it with a format, dpframe.to_datetime(s, format='ISO8601') (or "
                              "format='%Y-%m-%d', or format='mixed' to read each value on its own)")
    if source is None or holds_missing(target) or _always_converts(source, target):
        return target
    column = "" if name is None else f" of {name!r}"
    raise RefusedError(
        f"astype({target}){column} is refused on protected data: converting {source} to {target} fails on some "
        f"values (missing, infinite or unparsable ones), and whether any exist is private. Instead: use "
        f"{widened(target)}, which holds a missing value where a value does not convert."
    )


def _converted(column: pd.Series[Any], target: Any, operation: str) -> pd.Series[Any]:
    """``column.astype(target)``, value by value; values that do not convert become missing."""
    if column.dtype == target:
        return column
    if isinstance(target, pd.CategoricalDtype) and holds_objects(column.dtype):
        # Each value found among the categories on its own: pandas would infer one type for the column.
        codes = lookup(column, target.categories)
        return pd.Series(pd.Categorical.from_codes(codes, dtype=target), index=column.index, name=column.name)
    text = pd.api.types.is_object_dtype(column.dtype) or pd.api.types.is_string_dtype(column.dtype)
    if text and pd.api.types.is_numeric_dtype(target) and not pd.api.types.is_bool_dtype(target):
        return _parse_numbers(column, target)
    converted: pd.Series[Any] = elementwise(lambda c: c.astype(target), [column], operation=operation, dtypes=target)
    return converted


def _looked_up(column: pd.Series[Any], keys: pd.Index[Any], values: list[Any], na_action: str | None) -> pd.Series[Any]:
    """``column.map(mapping)`` of an object column, each value found among the mapping's keys on its own
    (:func:`~dpframe.protection.values.lookup`); a missing value maps as a missing key does, as in pandas."""
    mapped = np.empty(len(values) + 1, dtype=object)
    for position, value in enumerate(values):
        mapped[position] = value
    mapped[-1] = None  # no key
    out = mapped[lookup(column, keys)]
    missing_keys = [position for position, key in enumerate(keys) if key is None or (np.ndim(key) == 0 and pd.isna(key))]
    if missing_keys and na_action is None:
        out[np.asarray(pd.isna(column), dtype=bool)] = values[missing_keys[0]]
    return pd.Series(out, index=column.index, name=column.name, dtype=object)


def _parse_numbers(column: pd.Series[Any], target: Any) -> pd.Series[Any]:
    """Text to numbers, each value on its own and in one vectorised pass: unparsable values become missing.

    Every value is read as a float64 by pandas' parser, the same way whatever the other values are, then
    converted to ``target``; for integer targets a value that is not a whole number becomes missing.
    """

    def parse(part: pd.Series[Any]) -> pd.Series[Any]:
        # A last row "0.5" of its own: pandas 2 parses a column of integer texts exactly, and any other with a
        # less exact float parser -- one row's text would change how another's is read.
        values = np.empty(len(part) + 1, dtype=object)
        values[:-1] = part.to_numpy(dtype=object)
        values[-1] = "0.5"
        if any(issubclass(kind, (complex, np.complexfloating)) for kind in set(map(type, values))):
            # Complex values are no real numbers; and pandas' to_numeric, meeting one, leaves the entries it
            # cannot parse after it uninitialised -- memory that may hold other rows' values.
            complex_values = np.array([issubclass(type(v), (complex, np.complexfloating)) for v in values], dtype=bool)
            values[complex_values] = None
        parsed = pd.to_numeric(pd.Series(values, dtype="object"), errors="coerce").to_numpy(dtype=np.float64)
        numbers = pd.Series(parsed[:-1], index=part.index, name=part.name)
        if pd.api.types.is_integer_dtype(target):
            whole = np.isfinite(numbers) & (numbers == np.trunc(numbers))
            numbers = numbers.where(whole)
        return convert(numbers, target)

    # to_numeric raises on some values even with errors="coerce" (an int beyond float, an unhashable
    # object): elementwise then parses the rows in parts and makes those values missing.
    parsed: pd.Series[Any] = elementwise(parse, [column], operation=f"astype({target})", dtypes=target)
    return parsed


def _always_converts(source: Any, target: Any) -> bool:
    if source == target:
        return True
    if not isinstance(source, np.dtype) or not isinstance(target, np.dtype):
        return False
    return source.kind in "iub" and target.kind in "iubf" and not (source.kind != "b" and target.kind == "b")


def _fill(column: pd.Series[Any], value: Any) -> pd.Series[Any]:
    if value is None or not holds_missing(column.dtype):
        return column
    return _where(column, column.notna(), value)


def _where(column: pd.Series[Any], keep: Any, other: Any) -> pd.Series[Any]:
    """``column.where(keep, other)`` with a type fixed by the types alone."""
    other_dtype = other.dtype if isinstance(other, pd.Series) else constant_dtype(other)
    if isinstance(column.dtype, pd.CategoricalDtype) and not isinstance(other, pd.Series):
        if not pd.isna(other) and other not in column.dtype.categories:
            # The new value joins the (public) categories: it is an argument, not data.
            column = column.cat.add_categories([other])
        target = column.dtype
    else:
        target = common_dtype([column.dtype, other_dtype])
    with quiet():
        base = convert(column, target)
        filler = convert(other, target) if isinstance(other, pd.Series) else other
        return convert(base.where(keep, filler), target)


def _replacement_pairs(to_replace: Any, value: Any) -> list[tuple[Any, Any]]:
    if isinstance(to_replace, Mapping):
        if value is not None:
            raise TypeError("replace({old: new}) takes no value=")
        pairs = list(to_replace.items())
    elif isinstance(to_replace, (list, tuple)):
        if isinstance(value, (list, tuple)):
            if len(value) != len(to_replace):
                raise ValueError("replace: to_replace and value lists must have the same length")
            pairs = list(zip(to_replace, value))
        else:
            pairs = [(old, value) for old in to_replace]
    else:
        pairs = [(to_replace, value)]
    if not all(is_constant(old) and is_constant(new) for old, new in pairs):
        raise refusal("replace", "mixing", "replacements must be constants")
    return [(constant(old, "replace"), constant(new, "replace")) for old, new in pairs]


def _can_hold(dtype: Any, value: Any) -> bool:
    if pd.isna(value):
        return holds_missing(dtype)
    try:
        with quiet():
            converted = pd.Series([value]).astype(dtype)
        return bool(converted.iloc[0] == value)
    except Exception:
        return False


def _replace(column: pd.Series[Any], pairs: list[tuple[Any, Any]], regex: bool) -> pd.Series[Any]:
    if not regex and not any(_can_hold(column.dtype, old) for old, _ in pairs):
        return column
    news = [new for _, new in pairs]
    if isinstance(column.dtype, pd.CategoricalDtype):
        added = [n for n in news if not pd.isna(n) and n not in column.dtype.categories]
        base = column.cat.add_categories(list(dict.fromkeys(added))) if added else column
        target = base.dtype
    else:
        target = common_dtype([column.dtype, *(constant_dtype(n) for n in news)])
        base = column
    olds = [old for old, _ in pairs]
    result: pd.Series[Any] = elementwise(lambda c: convert(c, target).replace(olds, news, regex=regex), [base],
                                         operation="replace", dtypes=target)
    return result

