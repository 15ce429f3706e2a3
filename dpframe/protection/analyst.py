"""The analyst's code and objects on private data: what they do becomes data, never control flow.

dpframe runs code that the analyst hands it on private values -- a function
given to ``map`` or ``apply``, a ``key=`` to sort by, a ``repl=`` function of
``str.replace``, the function of ``sample_and_aggregate`` -- and it hands the
analyst's objects to pandas, where their ``__eq__`` and ``__hash__`` run
against the data (the constants of row-wise operations, ``@`` names in query
strings, ``map`` dicts, ``isin`` lists, ``keys=``, the columns of a public
table in ``merge``). Anything such code can make *happen* -- an exception, a
``KeyboardInterrupt``, a returned object whose ``__len__`` or ``__hash__``
raises when a later operation touches it -- would be an oracle on the data:
run on two neighbouring data sets, one raises and the other does not, and
that difference costs no budget at all. Three rules close these channels.

1. **Returned values are plain data** (:func:`plain`). Inside the guarded call
   (:func:`guarded`), what a function returns is converted by its *exact*
   type -- ``type(v) is str``, never ``isinstance``, since a subclass of
   ``str`` can override ``__hash__`` -- to a built-in value: ``None``, ``bool``,
   ``int``, ``float``, ``complex``, ``str``, ``bytes``, ``Decimal``, dates,
   times and durations (Python's, numpy's and pandas'), numpy scalars;
   lists, tuples, numpy arrays and Series become tuples, sets become
   frozensets and dicts become :class:`FrozenDict` (a dict that cannot be changed:
   a function given one row's value must not write another row's facts into
   it), of such values, at most
   :data:`MAX_ITEMS` values and :data:`MAX_DEPTH` levels in all. Subclasses of
   the built-in types are converted to the built-in value through the base
   type's own slots (``str.__str__(v)``), which run none of the subclass's
   code. Anything else (generators, iterators, the analyst's classes, frames)
   becomes missing. Every exception raised by the function or by the
   conversion -- ``SystemExit`` and ``KeyboardInterrupt`` included -- makes the
   value missing too. Nothing the function returned stays alive after the
   call: only the converted value leaves it.
2. **Arguments are plain values** (:func:`public_value`). An object the
   analyst passes as a constant is converted the same way before pandas sees
   it; what cannot be converted is refused -- from the argument alone, before
   any data is read or any budget is charged. Functions among the arguments
   are guarded; dtypes and time zones must be numpy's, pandas' or the
   standard library's own.
3. **A real Ctrl-C still stops the work** (:func:`interruptible`). A
   ``KeyboardInterrupt`` raised by the analyst's code is data, like any
   exception; one caused by the user pressing Ctrl-C is told apart by a flag
   that dpframe's own SIGINT handler sets while analyst code runs.

What this cannot stop is a function that keeps or sends the values it is
given (a global list, a print, a file): a function sees the values it is
applied to, and only a service boundary between the analyst and the data
closes that (``docs/privacy-model.md``).
"""

from __future__ import annotations

import datetime
import decimal
import re
import signal
import sys
import threading
import zoneinfo
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import FrameType
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.errors import RefusedError

# At most this many values in one converted value, counting every level: a function could return a
# huge object to exhaust memory later, in an operation outside the guarded call.
MAX_ITEMS = 10_000
# At most this many levels of nested containers.
MAX_DEPTH = 8

_NUMPY_SCALARS = frozenset(t for t in set(np.sctypeDict.values()) if t not in (np.object_, np.void))
# Values whose type alone makes them plain: immutable, built by Python, numpy or pandas, and holding no
# object of the analyst's.
_SCALARS: frozenset[type] = frozenset({
    type(None), bool, int, float, complex, str, bytes, decimal.Decimal,
    datetime.date, datetime.timedelta, pd.Timedelta, type(pd.NA), type(pd.NaT),
    *_NUMPY_SCALARS,
})
# Values that are plain once their time zone is one of the standard library's.
_ZONED: frozenset[type] = frozenset({datetime.datetime, datetime.time, pd.Timestamp})
_ZONES: frozenset[type] = frozenset({datetime.timezone, zoneinfo.ZoneInfo})


class _TooLarge(Exception):
    """A returned value over :data:`MAX_ITEMS` or :data:`MAX_DEPTH`: it becomes missing."""


class _Count:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_ITEMS

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise _TooLarge


class FrozenDict(dict):  # type: ignore[type-arg]
    """A dict that cannot be changed: the plain form of a mapping.

    Values of protected data are handed to the analyst's functions; a function
    given one row's dict could write into it, and the value lives on in the data
    -- one person's row would then carry another's (a dict merged from a public
    table is one object in many rows). Reading works as for any dict
    (``.str.get(key)``, ``d["k"]``); it is hashable, as a key or a row label.

    >>> d = FrozenDict({"k": 1})
    >>> d["k"], d == {"k": 1}, hash(d) == hash(FrozenDict({"k": 1}))
    (1, True, True)
    >>> d["k"] = 2
    Traceback (most recent call last):
    ...
    TypeError: a value of protected data cannot be changed: make a new one, e.g. dict(d) | {...}
    """

    __slots__ = ()

    def __new__(cls, items: Any = ()) -> FrozenDict:
        made = dict.__new__(cls)
        dict.update(made, items)
        return made

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # filled by __new__; calling it again changes nothing
        pass

    def _unchangeable(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a value of protected data cannot be changed: make a new one, e.g. dict(d) | {...}")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _unchangeable

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


def plain(value: Any) -> Any:
    """``value`` as a plain built-in value, or None (missing) when it has no plain form (module docstring, 1).

    Call it where exceptions are caught (:func:`guarded`): converting a
    subclass or a container can raise, and that must become a missing value.

    >>> plain(np.float64(1.5)), plain([1, "a", (2, None)]), plain({"k": [1, 2]})
    (np.float64(1.5), (1, 'a', (2, None)), {'k': (1, 2)})
    >>> type(plain({"k": 1})).__name__
    'FrozenDict'
    >>> class Sneaky(str):
    ...     def __hash__(self): raise ValueError(self)
    >>> type(plain(Sneaky("x"))).__name__, plain(v for v in [1]), plain(object())
    ('str', None, None)
    """
    return _plain(value, _Count(), 0)


def _plain(value: Any, count: _Count, depth: int) -> Any:
    kind = type(value)
    if kind is decimal.Decimal and value.is_nan():
        return None  # a signaling NaN raises in isna(): only where it exists
    if kind is str:
        return value if _encodable(value) else None
    if kind in _SCALARS:
        return value
    if kind in _ZONED:
        return _plain_zone(value)
    if kind is pd.Period:
        return _plain_period(value)
    if kind is pd.Interval:
        left, right = _plain(value.left, count, depth), _plain(value.right, count, depth)
        if type(left) is not type(right) or type(left) not in _INTERVAL_ENDS:
            return None
        return pd.Interval(left, right, closed=str.__str__(value.closed))  # type: ignore[arg-type]
    if depth >= MAX_DEPTH:
        raise _TooLarge
    if issubclass(kind, (list, tuple)):
        items = list.__iter__(value) if issubclass(kind, list) else tuple.__iter__(value)
        count.take(list.__len__(value) if issubclass(kind, list) else tuple.__len__(value))
        return tuple(_plain(item, count, depth + 1) for item in items)
    if issubclass(kind, (set, frozenset)):
        count.take(set.__len__(value) if issubclass(kind, set) else frozenset.__len__(value))
        items = set.__iter__(value) if issubclass(kind, set) else frozenset.__iter__(value)
        return frozenset(_plain(item, count, depth + 1) for item in items)
    if issubclass(kind, dict):
        count.take(dict.__len__(value))
        pairs = []
        for key, item in dict.items(value):
            plain_key = _plain(key, count, depth + 1)
            if plain_key is None and key is not None:
                return None  # a key with no plain form: the mapping has none either
            pairs.append((plain_key, _plain(item, count, depth + 1)))
        return FrozenDict(pairs)
    if kind is np.ndarray:
        count.take(int(value.size))
        return _plain(value.tolist() if value.ndim else [value.item()], count, depth)
    if kind is pd.Series:
        count.take(len(value))
        return _plain(value.tolist(), count, depth)
    return _plain_builtin_subclass(value, kind)


def _plain_period(value: pd.Period) -> pd.Period | None:
    """A Period rebuilt from its ordinal and frequency name: on pandas 2.2 it keeps the offset object it was
    made with, which can be a subclass of the analyst's (its __eq__ and __hash__ run against the data)."""
    name = value.freqstr
    if type(name) is not str:
        return None
    return pd.Period(ordinal=int(value.ordinal), freq=name)


# The ends of an interval that pandas builds from plain values.
_INTERVAL_ENDS = frozenset({int, float, pd.Timestamp, pd.Timedelta, *(t for t in _NUMPY_SCALARS
                                                                       if issubclass(t, (np.integer, np.floating)))})


def _plain_builtin_subclass(value: Any, kind: type) -> Any:
    """A subclass of a built-in scalar type as the built-in value, read by the base type's own slot."""
    if issubclass(kind, str):
        text = str.__str__(value)
        return text if _encodable(text) else None
    if issubclass(kind, int):  # bool cannot be subclassed; an IntEnum member becomes its int
        return int.__int__(value)
    if issubclass(kind, float):
        return float.__float__(value)
    if issubclass(kind, complex):
        return complex(complex.real.__get__(value), complex.imag.__get__(value))
    if issubclass(kind, bytes):
        return bytes.__bytes__(value)
    return None


def _encodable(text: str) -> bool:
    """False for text with a lone surrogate (``"\\ud800"``): it is no text pandas can store (pyarrow's ``str``
    raises on it, for the whole column), so it is not a plain value.

    >>> _encodable("é"), _encodable("\\ud800")
    (True, False)
    """
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _all_encodable(values: NDArray[np.object_], kinds: set[type]) -> bool:
    """:func:`_encodable` for every ``str`` among ``values``, in one pass (one joined text encoded)."""
    if str not in kinds:
        return True
    texts = values if kinds == {str} else [v for v in values if type(v) is str]
    return _encodable("".join(texts))


def _plain_zone(value: Any) -> Any:
    """A datetime or time whose time zone is a standard one (:func:`_known_zone`); any other becomes a fixed offset."""
    zone = value.tzinfo
    if zone is None:
        return value
    known = _known_zone(zone)
    if known is not None:
        return value if known is zone else value.replace(tzinfo=known)
    offset = zone.utcoffset(value if type(value) is not datetime.time else None)
    if type(offset) is not datetime.timedelta:
        return None
    return value.replace(tzinfo=datetime.timezone(offset))


def _known_zone(zone: Any) -> Any:
    """The standard library's zone rebuilt from plain parts (:func:`_standard_zone`), or pytz's own zone object
    (one its cache hands out, or one of its localised forms, as pandas 2 keeps them); None for any other."""
    if type(zone) in _ZONES:
        return _standard_zone(zone)
    pytz: Any = sys.modules.get("pytz")  # a pytz zone exists only where pytz was imported
    if pytz is not None and issubclass(type(zone), pytz.BaseTzInfo):
        try:
            canonical = pytz.timezone(str.__str__(zone.zone))
            localised = getattr(canonical, "_tzinfos", {}).values()
            if zone is canonical or any(zone is form for form in localised):
                return zone
        except Exception:  # noqa: BLE001 -- not pytz's own
            pass
    return None


def _standard_zone(zone: datetime.timezone | zoneinfo.ZoneInfo) -> Any:
    """The zone rebuilt from plain parts: a ``timezone`` can hold a subclass of ``timedelta`` (whose ``__eq__``
    pandas' zone cache would run) and a ``ZoneInfo`` a subclass of ``str`` as its key.

    >>> _standard_zone(datetime.timezone(datetime.timedelta(hours=2))) == datetime.timezone(datetime.timedelta(hours=2))
    True
    """
    if type(zone) is zoneinfo.ZoneInfo:
        key = zone.key
        if key is None:  # made from a file: no name to rebuild it by
            raise ValueError("a ZoneInfo read from a file has no key")
        return zoneinfo.ZoneInfo(str.__str__(key))
    if zone is datetime.timezone.utc:
        return zone
    utcoffset = zone.utcoffset(None)
    if utcoffset is None:  # not for a timezone: its offset is fixed
        raise ValueError("a timezone without an offset")
    offset = datetime.timedelta(seconds=datetime.timedelta.total_seconds(utcoffset))
    return datetime.timezone(offset, str.__str__(zone.tzname(None)))


# -- running the analyst's functions -------------------------------------------------------------

_INTERRUPTS = threading.local()


def interrupted() -> bool:
    """True when the user pressed Ctrl-C while :func:`interruptible` code ran in this thread."""
    return bool(getattr(_INTERRUPTS, "seen", False))


@contextmanager
def interruptible() -> Iterator[None]:
    """Run analyst code so that a real Ctrl-C can be told from a ``KeyboardInterrupt`` the code raised.

    In the main thread, a SIGINT handler of dpframe's, chained to the one in
    place (Python's, or IPython's), raises the flag :func:`interrupted` reads
    before passing the signal on. Signals reach only the main thread, so
    elsewhere every ``KeyboardInterrupt`` comes from code, and is data.

    >>> with interruptible():
    ...     interrupted()
    False
    """
    depth = getattr(_INTERRUPTS, "depth", 0)
    if depth or threading.current_thread() is not threading.main_thread():
        _INTERRUPTS.depth = depth + 1
        try:
            yield
        finally:
            _INTERRUPTS.depth = depth
        return
    previous = signal.getsignal(signal.SIGINT)

    def flag_then_pass_on(signum: int, frame: FrameType | None) -> Any:
        _INTERRUPTS.seen = True
        if callable(previous):
            return previous(signum, frame)
        if previous == signal.SIG_IGN:
            return None
        raise KeyboardInterrupt

    _INTERRUPTS.seen, _INTERRUPTS.depth = False, 1
    try:
        signal.signal(signal.SIGINT, flag_then_pass_on)
    except ValueError:  # signals cannot be handled here (an embedded interpreter): code raises them all
        previous = None
    try:
        yield
    finally:
        _INTERRUPTS.depth = 0
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        # The flag stays up until the next outermost entry: a caller that catches what leaves here
        # still tells the interruption from data (passed_on).
        if _INTERRUPTS.seen:
            raise KeyboardInterrupt


def passed_on(error: BaseException) -> None:
    """Re-raise the interruption of a real Ctrl-C; every other failure on private values is the caller's data.

    Failures are caught as ``BaseException``: a function that raises its own
    ``KeyboardInterrupt``, ``SystemExit`` or ``BaseException`` subclass when it
    meets a value must not get it out (module docstring, 3).
    """
    if interrupted():
        raise KeyboardInterrupt from None


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` as a function that never raises and returns plain data: :func:`plain` of its result, or None.

    >>> def risky(v):
    ...     if v > 1:
    ...         raise SystemExit(v)
    ...     return [v]
    >>> [guarded(risky)(v) for v in (1, 2)]
    [(1,), None]
    """

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return plain(func(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 -- module docstring, 1 and 3
            passed_on(error)
            return None

    return call


def sorting_key(key: Callable[[pd.Series[Any]], Any]) -> Callable[[pd.Series[Any]], pd.Series[Any]]:
    """A ``key=`` of ``sort_values`` that never raises and gives pandas plain sort keys.

    The analyst's key sees a column and returns one like it: a Series or array of
    one of numpy's or pandas' own dtypes and the column's length, its object
    values made plain. Anything else -- an exception included -- gives every row
    the same key (sorting never changes an answer: row order is not released).

    >>> column = pd.Series([3, 1, 2])
    >>> sorting_key(lambda s: -s)(column).tolist(), sorting_key(lambda s: 1 / 0)(column).tolist()
    ([-3, -1, -2], [0, 0, 0])
    """

    def call(column: pd.Series[Any]) -> pd.Series[Any]:
        try:
            result = key(column)
            if type(result) in (pd.Series, np.ndarray) and len(result) == len(column) and result.ndim == 1:
                public_dtype(result.dtype, "sort_values(key=)")
                values = result.to_numpy() if type(result) is pd.Series else result
                if values.dtype == object:
                    values = plain_column(pd.Series(values, dtype=object)).to_numpy()
                return pd.Series(values, index=column.index, name=column.name)
        except BaseException as error:  # noqa: BLE001 -- module docstring, 1 and 3
            passed_on(error)
        return pd.Series(np.zeros(len(column), dtype=np.int64), index=column.index, name=column.name)

    return call


class _Boxed:
    """A plain value carried through pandas unseen: pandas infers a column's type from what a function returns
    (``[1, None]`` becomes ``[1.0, nan]``), which would let one row's result change another's."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def boxing(func: Callable[..., Any]) -> Callable[..., _Boxed]:
    """``func`` guarded, its result in a box that pandas keeps as an object (open them with :func:`unboxed`)."""
    call = guarded(func)

    def boxed(*args: Any, **kwargs: Any) -> _Boxed:
        return _Boxed(call(*args, **kwargs))

    return boxed


def _open(value: Any) -> Any:
    return value.value if type(value) is _Boxed else value


_OPEN = np.frompyfunc(_open, 1, 1)


def unboxed(series: pd.Series[Any]) -> pd.Series[Any]:
    """An object column of the plain values in the boxes of ``series`` (what pandas left alone, as it is);
    a column of another dtype as it is.

    >>> unboxed(pd.Series([_Boxed(1), _Boxed(None), float("nan")], dtype=object)).tolist()
    [1, None, nan]
    """
    if series.dtype != object:
        return series
    values = np.asarray(_OPEN(series.to_numpy(dtype=object)), dtype=object).reshape(len(series))
    return pd.Series(values, index=series.index, name=series.name, dtype=object)


def boxed(series: pd.Series[Any], *, elements: bool = False) -> pd.Series[Any]:
    """An object column's values in boxes (``elements``: a list-like value as a tuple of its boxed elements, for
    ``explode``), so that a structural operation moves them without pandas inferring a type from all of them
    (a column whose values are all datetimes would come back as Timestamps, one made of anything else would
    not). Open them with :func:`unboxed`; other columns are returned as they are.

    >>> unboxed(boxed(pd.Series([(1, 2), "a"], dtype=object), elements=True).explode()).tolist()
    [1, 2, 'a']
    """
    if series.dtype != object:
        return series
    out = np.empty(len(series), dtype=object)
    for position, value in enumerate(series.to_numpy(dtype=object)):
        if elements and type(value) in (tuple, frozenset, dict):  # the list-likes among plain values
            out[position] = tuple(_Boxed(item) for item in value)
        else:
            out[position] = _Boxed(value)
    return pd.Series(out, index=series.index, name=series.name, dtype=object)


_PLAIN_KINDS = _SCALARS | {tuple, frozenset, FrozenDict}


def _is_plain(value: Any, depth: int = 0) -> bool:
    """True when ``value`` is already what :func:`plain` makes (checked without rebuilding it).

    >>> _is_plain((1, ("a", None))), _is_plain((1, [2])), _is_plain(FrozenDict({"k": (1,)}))
    (True, False, True)
    """
    kind = type(value)
    if kind in _SCALARS:
        return kind is not str or _encodable(value)
    if depth >= MAX_DEPTH or kind not in _PLAIN_KINDS or len(value) > MAX_ITEMS:
        return False
    if kind is FrozenDict:
        return all(_is_plain(k, depth + 1) and _is_plain(v, depth + 1) for k, v in dict.items(value))
    return all(_is_plain(item, depth + 1) for item in value)


def plain_column(series: pd.Series[Any]) -> pd.Series[Any]:
    """An object column with every value plain (:func:`plain`); other columns as they are.

    One pass over the types first: a column of strings, numbers and missing values (nearly every
    column) is returned as it is.

    >>> class Sneaky(int):
    ...     def __eq__(self, other): raise ValueError(other)
    >>> [type(v).__name__ for v in plain_column(pd.Series([1, Sneaky(2), "a"], dtype=object))]
    ['int', 'int', 'str']
    """
    if not holds_objects(series.dtype):
        return series
    values = series.to_numpy(dtype=object)
    kinds = set(map(type, values))
    if _all_encodable(values, kinds) and (
            _SCALARS.issuperset(kinds) or (_PLAIN_KINDS.issuperset(kinds) and all(map(_is_plain, values)))):
        return series
    out = np.empty(len(values), dtype=object)
    convert = guarded(lambda v: v)
    for position, value in enumerate(values):  # only columns that hold other objects (rare) come here
        out[position] = convert(value)
    return pd.Series(out, index=series.index, name=series.name, dtype=series.dtype)


def holds_objects(dtype: Any) -> bool:
    """True for a dtype whose values are Python objects as given: object, and pandas' text stored in Python
    (``str`` without pyarrow keeps a subclass of ``str`` as it is, with its own ``__eq__`` and ``__hash__``).

    >>> holds_objects(np.dtype(object)), holds_objects(pd.StringDtype("python")), holds_objects(np.dtype("int64"))
    (True, True, False)
    """
    return bool(dtype == object) or (type(dtype) is pd.StringDtype and dtype.storage == "python")


def plain_labels(data: Any) -> Any:
    """``data`` (a frame or a series) with plain column labels (or name); refused where one has no plain form.

    Labels are the analyst's too (``rename``, ``p[label] = ...``), and they become
    values: ``melt`` and ``stack`` put them in every row, where a later query
    hashes them -- only if some row exists.

    >>> class Sneaky(str):
    ...     def __eq__(self, other): raise ValueError(self)
    ...     __hash__ = str.__hash__
    >>> [type(c).__name__ for c in plain_labels(pd.DataFrame({Sneaky("a"): [1], "b": [2]})).columns]
    ['str', 'str']
    """
    if isinstance(data, pd.Series):
        name = data.name
        return data if _is_plain_label(name) else data.rename(_plain_label(name))
    columns = data.columns
    if all(_is_plain_label(label) for label in columns):
        return data
    labels = [_plain_label(label) for label in columns]
    renamed = pd.MultiIndex.from_tuples(labels, names=columns.names) if isinstance(columns, pd.MultiIndex) \
        else pd.Index(labels, dtype=object, name=columns.name, tupleize_cols=False)
    return data.set_axis(renamed, axis=1)


def _is_plain_label(label: Any) -> bool:
    kind = type(label)
    return kind in _SCALARS or (kind is tuple and all(type(part) in _SCALARS for part in label))


def _plain_label(label: Any) -> Any:
    try:
        converted = plain(label)
        hash(converted)
    except BaseException as error:  # noqa: BLE001 -- no plain form: refused below
        passed_on(error)
        converted = None
    if converted is None and label is not None:
        _refuse(label, "a column label", "is not a plain value; labels become values in melt and stack")
    return converted


# -- the analyst's arguments ---------------------------------------------------------------------


def public_value(value: Any, operation: str, *, functions: bool = False) -> Any:
    """An argument of the analyst's as a plain value (module docstring, 2); refused when it has none.

    Lists, tuples, sets and dicts keep their kind with plain contents (a
    subclass of list or tuple becomes the list or tuple); numpy arrays,
    pandas Series and Index of pandas' own types are kept, their object
    values converted; functions are guarded when ``functions`` is set
    (pandas will call them on the values), refused otherwise. Decided from
    the argument alone: no data is read, no budget charged.

    >>> public_value([1, "a"], "isin"), public_value(np.int64(3), "+")
    ([1, 'a'], np.int64(3))
    >>> class Sneaky(str):
    ...     def __eq__(self, other): raise ValueError(other)
    >>> type(public_value(Sneaky("F"), "=="))
    <class 'str'>
    >>> public_value(object(), "==")
    Traceback (most recent call last):
    ...
    dpframe.errors.RefusedError: == is refused on protected data: its argument object is not a plain value (numbers, text, dates, None, and lists, tuples, sets or dicts of them), and pandas would run its own code (__eq__, __hash__) against the private values. Instead: pass a built-in value, e.g. str(x), int(x) or a list of them.
    """
    kind = type(value)
    if kind is decimal.Decimal and value.is_nan():
        return float("nan")  # pandas' own missing marker (a signaling NaN would raise in isna)
    if kind is str and not _encodable(value):
        return _refuse(value, operation, "is text with a lone surrogate, which pandas cannot store",
                       "encode it with errors='replace' first")
    if kind in _SCALARS or kind is re.Pattern or kind is range:
        return value
    if kind is slice:
        return slice(*(public_value(part, operation) for part in (value.start, value.stop, value.step)))
    if kind is pd.Period:
        try:
            period = _plain_period(value)
        except Exception:  # noqa: BLE001 -- an offset of the analyst's that fails: refused below
            period = None
        return period if period is not None else _refuse(value, operation, "has a frequency of its own kind")
    if kind in _ZONED:
        zone = public_zone(value.tzinfo, operation)
        return value if zone is value.tzinfo else value.replace(tzinfo=zone)
    if issubclass(kind, (list, tuple)):
        base = list if issubclass(kind, list) else tuple
        return base(_public_item(item, operation, functions) for item in base.__iter__(value))
    if kind in (set, frozenset):
        return kind(_public_item(item, operation, False) for item in value)
    if kind is dict:
        return {_public_item(k, operation, False): _public_item(v, operation, functions) for k, v in value.items()}
    if kind in _ARRAYS:
        return _public_array(value, operation)
    if issubclass(kind, (np.dtype, pd.api.extensions.ExtensionDtype)):
        return public_dtype(value, operation)
    if issubclass(kind, datetime.tzinfo):
        return public_zone(value, operation)
    if callable(value) and kind is not type:
        if functions:
            return guarded(value)
        return _refuse(value, operation, "is a function, where a value is expected")
    if kind is type:
        return public_dtype(value, operation)
    if issubclass(kind, dict):
        return _refuse(value, operation, "is a mapping of its own kind (pandas would call its __missing__ on the "
                                         "private values); pass dict(m)")
    converted = _plain_builtin_subclass(value, kind)
    if converted is None:
        _refuse(value, operation)
    return converted


def _public_item(item: Any, operation: str, functions: bool) -> Any:
    """An item of an argument's list, tuple, set or dict: a container in it takes its plain, unchangeable form
    (tuple, frozenset, :class:`FrozenDict`), as ``map({1: [2, 3]})`` would put that very object in many rows."""
    converted = public_value(item, operation, functions=functions)
    if type(converted) in (list, tuple, set, frozenset, dict):
        return plain(converted)
    return converted


_DTYPE_INSTEAD = "use one of numpy's or pandas' own dtypes, e.g. 'float64', 'Int64', 'string' or pd.CategoricalDtype([...])"


def _refuse(value: Any, operation: str, why: str = "",
            instead: str = "pass a built-in value, e.g. str(x), int(x) or a list of them") -> Any:
    detail = why or ("is not a plain value (numbers, text, dates, None, and lists, tuples, sets or dicts of "
                     "them), and pandas would run its own code (__eq__, __hash__) against the private values")
    raise RefusedError(f"{operation} is refused on protected data: its argument {type(value).__name__} {detail}. "
                       f"Instead: {instead}.")


# pandas' and numpy's own arrays: their methods are pandas' code; only their object values can be the analyst's.
_ARRAYS: frozenset[type] = frozenset({np.ndarray, pd.Series, pd.Index, pd.RangeIndex, pd.DatetimeIndex,
                                      pd.TimedeltaIndex, pd.PeriodIndex, pd.IntervalIndex, pd.CategoricalIndex})


def _public_array(value: Any, operation: str) -> Any:
    dtype = public_dtype(value.dtype, operation)
    # Categories of the analyst's were made plain in the dtype: its values are rebuilt from their codes.
    if type(value) is pd.Series:
        index = public_value(value.index, operation)
        if index is not value.index or dtype is not value.dtype:
            values = value.to_numpy() if dtype is value.dtype else pd.Categorical.from_codes(value.cat.codes,
                                                                                              dtype=dtype)
            value = pd.Series(values, index=index, name=value.name, dtype=dtype)
    elif dtype is not value.dtype:
        value = pd.CategoricalIndex(pd.Categorical.from_codes(value.codes, dtype=dtype), name=value.name)
    if not holds_objects(value.dtype):
        return value
    converted = [public_value(item, operation) for item in value.ravel().tolist()] if type(value) is np.ndarray \
        else [public_value(item, operation) for item in value.tolist()]
    if type(value) is np.ndarray:
        out = np.empty(len(converted), dtype=object)
        for position, item in enumerate(converted):
            out[position] = item
        return out.reshape(value.shape)
    if type(value) is pd.Series:
        return pd.Series(converted, index=value.index, name=value.name, dtype=value.dtype)
    return pd.Index(converted, dtype=value.dtype, name=value.name, tupleize_cols=False)


def public_frame(frame: pd.DataFrame, operation: str) -> pd.DataFrame:
    """A public table of the analyst's (``merge``) whose values are plain and whose dtypes are pandas' own.

    Its rows meet the private rows in pandas' join, where the values' ``__eq__``
    and ``__hash__`` run; an object column is converted value by value
    (:func:`plain`: lists become tuples), and refused if a value has no plain form.

    >>> class Sneaky(str):
    ...     def __hash__(self): raise ValueError(self)
    >>> table = public_frame(pd.DataFrame({"k": [Sneaky("a"), "b"], "v": [1, 2]}, dtype=object), "merge")
    >>> [type(v).__name__ for v in table["k"]]
    ['str', 'str']
    """
    if type(frame) is not pd.DataFrame:
        frame = pd.DataFrame(frame)  # a subclass's own methods would run in the join
    out = frame
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        if public_dtype(column.dtype, operation) is not column.dtype:  # categories of the analyst's, made plain
            out = out.copy(deep=False) if out is frame else out
            out.isetitem(position, _public_array(column, operation))
            continue
        if not holds_objects(column.dtype) or _SCALARS.issuperset(map(type, column.to_numpy(dtype=object))):
            continue
        values = np.empty(len(column), dtype=object)
        for row, value in enumerate(column.to_numpy(dtype=object)):
            try:
                converted = plain(value)
            except BaseException:  # noqa: BLE001 -- a value that cannot be converted is refused below
                converted = None
            if converted is None and value is not None:
                _refuse(value, operation, f"in column {column.name!r} of the public table is not a plain value")
            values[row] = converted
        out = out.copy(deep=False) if out is frame else out
        out.isetitem(position, pd.Series(values, index=frame.index, name=column.name,
                                         dtype=column.dtype))
    return out


# pandas' own extension dtypes: their code runs on the data, and none of it is the analyst's.
_PANDAS_DTYPES: frozenset[type] = frozenset({
    pd.CategoricalDtype, pd.DatetimeTZDtype, pd.PeriodDtype, pd.IntervalDtype, pd.SparseDtype, pd.StringDtype,
    pd.BooleanDtype, pd.Int8Dtype, pd.Int16Dtype, pd.Int32Dtype, pd.Int64Dtype, pd.UInt8Dtype, pd.UInt16Dtype,
    pd.UInt32Dtype, pd.UInt64Dtype, pd.Float32Dtype, pd.Float64Dtype, pd.ArrowDtype,
})


def public_dtype(dtype: Any, operation: str) -> Any:
    """``dtype`` when it is numpy's or one of pandas' own (with plain categories and a standard time zone).

    A dtype of the analyst's would run the analyst's code on every value.

    >>> public_dtype("Int64", "astype"), public_dtype(float, "astype")
    ('Int64', <class 'float'>)
    """
    if type(dtype) is str or (type(dtype) is type and (dtype in (str, int, float, bool, complex, bytes, object)
                                                       or dtype in _NUMPY_SCALARS or dtype in _PANDAS_DTYPES)):
        return dtype
    kind = type(dtype)
    if issubclass(kind, np.dtype):
        if dtype.fields is not None or dtype.subdtype is not None:
            _refuse(dtype, operation, "is a structured numpy dtype", _DTYPE_INSTEAD)
        return dtype
    if kind not in _PANDAS_DTYPES:
        _refuse(dtype, operation, "is not one of numpy's or pandas' own dtypes", _DTYPE_INSTEAD)
    if kind is pd.CategoricalDtype and dtype.categories is not None:
        categories = _public_array(dtype.categories, operation)
        if categories is not dtype.categories:  # object categories, made plain
            return pd.CategoricalDtype(categories, ordered=dtype.ordered)
    if kind is pd.SparseDtype and np.dtype(dtype.subtype).kind not in "biufc":
        # pandas infers a type for a sparse column of objects from all its values
        _refuse(dtype, operation, "is a sparse dtype of objects (pandas infers their type from all the values)",
                "keep the column dense, or make it sparse of numbers or booleans")
    if kind is pd.DatetimeTZDtype:
        public_zone(dtype.tz, operation)
    return dtype


def public_zone(zone: Any, operation: str) -> Any:
    """A time zone given by name, or the standard library's (``datetime.timezone``, ``zoneinfo``), or pytz's own.

    >>> public_zone("Europe/Oslo", "tz_localize"), public_zone(datetime.timezone.utc, "tz_localize")
    ('Europe/Oslo', datetime.timezone.utc)
    """
    if type(zone) is str or zone is None:
        return zone
    known = _known_zone(zone)
    if known is not None:
        return known
    return _refuse(zone, operation, "is a time zone object of its own",
                   "pass the zone by name (e.g. 'Europe/Oslo'), or a datetime.timezone or zoneinfo.ZoneInfo")
