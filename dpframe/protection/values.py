"""Equal values that differ: one canonical form per class of equal values, and each value's exact representation.

Plain values (:mod:`dpframe.protection.analyst`) can be equal and still differ:
``1``, ``1.0``, ``True`` and ``Decimal("1.00")`` are equal, so are ``-0.0`` and
``0.0``, ``(1,)`` and ``(1.0,)``, the same instant in two time zones, and a
Timestamp in seconds and one in nanoseconds. pandas, grouping or looking up
values, keeps one of a group of equal values -- whichever came first -- or
infers one type for all of them. Either way one person's value changes what
another person's row shows, or which label a query releases.

Two functions settle it, from the value alone:

* :func:`canonical` -- one representative for each class of equal values: the
  same for every member, whatever else is in the data. Groupings and look-ups
  (private key selection, declared keys, ``map`` with a dict) run on canonical
  forms, so they match as pandas' equality does, and release a label that no
  other row chose.
* :func:`representation` -- a key equal only for values that are the same in
  every visible way (type all the way down, sign of zero, a Decimal's
  exponent, zone, unit, fold). Row labels are kept apart by it, so every row
  gets back the very value it had.
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.protection.analyst import FrozenDict

# Decimals exactly, whatever the exponent and whatever context the analyst set.
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_NUMBERS = (bool, int, float, complex, decimal.Decimal, np.number, np.bool_)
_LONGEST_INT = 4000  # digits
_INSTANTS = (datetime.datetime, np.datetime64)  # pd.Timestamp is a datetime
_DURATIONS = (datetime.timedelta, np.timedelta64)  # pd.Timedelta is a timedelta


def canonical(value: Any) -> Any:
    """The representative of ``value``'s class of equal values (a plain value), the same for every member.

    Total: a value pandas cannot hold in its own types (a duration of a billion days) is its own
    representative -- an error here would tell that such a value exists.

    >>> canonical(True), canonical(1.0), canonical(decimal.Decimal("1.00")), canonical(-0.0), canonical((1.0, "a"))
    (1, 1, 1, 0, (1, 'a'))
    >>> canonical(0.5), canonical(decimal.Decimal("0.1")), canonical(np.str_("x"))
    (0.5, Decimal('0.1'), 'x')
    >>> canonical(np.timedelta64(1, "s")) == canonical(datetime.timedelta(seconds=1)) != canonical(1)
    True
    >>> canonical(datetime.timedelta(days=999_999_999))
    datetime.timedelta(days=999999999)
    """
    try:
        return _canonical(value)
    except Exception:  # noqa: BLE001 -- plain values only: pandas' and Python's range and type errors
        return value


def _canonical(value: Any) -> Any:
    kind = type(value)
    if kind is tuple:
        return tuple(canonical(item) for item in value)
    if kind is frozenset:
        return frozenset(canonical(item) for item in value)
    if issubclass(kind, dict):
        return FrozenDict((canonical(k), canonical(v)) for k, v in dict.items(value))
    if issubclass(kind, str):
        return str.__str__(value)
    if issubclass(kind, bytes):
        return bytes.__bytes__(value)
    if issubclass(kind, _DURATIONS):  # before numbers: numpy's timedelta64 is a numpy integer
        duration = pd.Timedelta(value)
        return duration if pd.isna(duration) else duration.as_unit("ns" if duration.nanoseconds else "us")
    if issubclass(kind, _INSTANTS):
        return _canonical_instant(value)
    if issubclass(kind, _NUMBERS):
        return _canonical_number(value)
    if kind is datetime.time and value.tzinfo is not None:
        moment = datetime.datetime.combine(datetime.date(2000, 1, 1), value) - (value.utcoffset() or datetime.timedelta())
        return moment.time().replace(tzinfo=datetime.timezone.utc)
    if kind is pd.Interval:
        return pd.Interval(canonical(value.left), canonical(value.right), closed=value.closed)
    return value


def _canonical_number(value: Any) -> Any:
    """An int when the number is a whole one, else a float when one holds it exactly, else the exact Decimal."""
    if isinstance(value, (complex, np.complexfloating)):
        if value.imag != 0 or math.isnan(value.imag):
            return complex(float(value.real) + 0.0, float(value.imag) + 0.0)
        value = value.real
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return float(value)
        exact = value.normalize(_EXACT)
        # A whole number as an int, unless its digits would be too many to write out (such a Decimal keeps
        # its form: a class of equal values then has two forms, counted apart -- never merged by first row).
        if exact == exact.to_integral_value(context=_EXACT) and exact.adjusted() <= _LONGEST_INT:
            return int(exact)
        as_float = float(exact)
        return as_float if decimal.Decimal(as_float) == exact else exact
    if isinstance(value, (float, np.floating)):
        number = float(value) if np.finfo(type(value)).bits <= 64 else value  # a longdouble may hold more
        if math.isfinite(number) and number == int(number):
            return int(number)
        return number + 0.0 if type(number) is float else number
    return int(value)  # bool, int, numpy integers and booleans


def _canonical_instant(value: Any) -> Any:
    """A Timestamp (UTC if it has a zone), in nanoseconds only when it needs them."""
    moment = pd.Timestamp(value)
    if pd.isna(moment):
        return moment
    if moment.tzinfo is not None:
        moment = moment.tz_convert("UTC")
    return moment.as_unit("ns" if moment.nanosecond else "us")


def canonical_forms(values: pd.Series[Any]) -> NDArray[np.object_]:
    """The canonical form of each value, None for a missing one, as objects (pandas' ``map`` would infer one
    type for all of them: with one ``0.5`` among them, every ``1`` would become ``1.0``).

    >>> canonical_forms(pd.Series([True, 0.5, None], dtype=object)).tolist()
    [1, 0.5, None]
    """
    forms = np.empty(len(values), dtype=object)
    present = ~np.asarray(pd.isna(values), dtype=bool)
    for position, value in enumerate(values.to_numpy(dtype=object)):
        form = canonical(value) if present[position] else None
        try:
            hash(form)
        except TypeError:  # no plain value (a list given from outside protected data): missing
            form = None
        forms[position] = form
    return forms


def factorized(values: pd.Series[Any]) -> tuple[NDArray[np.intp], NDArray[np.object_]]:
    """``pd.factorize`` of the canonical forms of ``values`` (codes, -1 for a missing value, and the forms).

    Text only (nearly every object column) is factorised as it is, in one pass in C: when every group's
    first value is a ``str``, it is that group's canonical form (numpy's ``str_`` equals its text, and as a
    group's first value would be its label: then the forms are made one by one).

    >>> codes, forms = factorized(pd.Series(["b", None, "a", "b"], dtype=object))
    >>> codes.tolist(), forms.tolist()
    ([0, -1, 1, 0], ['b', 'a'])
    """
    objects = values.to_numpy(dtype=object)
    if pd.api.types.infer_dtype(objects, skipna=True) == "string":
        codes, uniques = pd.factorize(objects, use_na_sentinel=True)
        if all(type(u) is str for u in uniques):
            return np.asarray(codes, dtype=np.intp), np.asarray(uniques, dtype=object)
    codes, uniques = pd.factorize(canonical_forms(values), use_na_sentinel=True)
    return np.asarray(codes, dtype=np.intp), np.asarray(uniques, dtype=object)


def lookup(values: pd.Series[Any], keys: pd.Index[Any]) -> NDArray[np.intp]:
    """The position of each value among ``keys`` by their canonical forms (-1: none, or a missing value).

    pandas looks an object column up with one type inferred from all of it: a column of booleans does not
    find ``1``, the same booleans beside one text value do (``True == 1``). Here each distinct value is
    found on its own, as pandas' equality has it. A value that cannot be compared with the keys is found
    nowhere.

    >>> lookup(pd.Series([True, "x", 2.0, None], dtype=object), pd.Index([1, 2])).tolist()
    [0, -1, 1, -1]
    """
    codes, uniques = factorized(values)
    targets = pd.Index([canonical(k) for k in keys], dtype=object, tupleize_cols=False)
    try:
        found = targets.get_indexer(pd.Index(uniques, dtype=object, tupleize_cols=False))
    except (TypeError, ValueError):  # each on its own: one that fails is found nowhere
        found = np.array([_position(targets, u) for u in uniques], dtype=np.intp)
    table = np.append(found, -1).astype(np.intp)
    positions: NDArray[np.intp] = table[codes]
    return positions


def _position(targets: pd.Index[Any], value: Any) -> int:
    try:
        return int(targets.get_indexer(pd.Index([value], dtype=object, tupleize_cols=False))[0])
    except (TypeError, ValueError):
        return -1


def representation(value: Any) -> Any:
    """A key equal only for values that are the same in every visible way (module docstring).

    >>> representation(1) == representation(True), representation(-0.0) == representation(0.0)
    (False, False)
    >>> representation((1, "a")) == representation((1, "a"))
    True
    """
    kind = type(value)
    name = kind.__qualname__
    if kind is tuple:
        return name, tuple(representation(item) for item in value)
    if kind is frozenset:
        return name, frozenset(representation(item) for item in value)
    if issubclass(kind, dict):
        return name, frozenset((representation(k), representation(v)) for k, v in dict.items(value))
    if kind is pd.Interval:
        return name, value.closed, representation(value.left), representation(value.right)
    if kind in (str, bytes, int, bool) or value is None:
        return name, value
    if kind is decimal.Decimal:
        return name, value.as_tuple()
    # Everything else prints all that tells it apart (sign of zero, zone, fold, numpy's unit); pandas' unit too.
    return name, repr(value), getattr(value, "unit", None)
