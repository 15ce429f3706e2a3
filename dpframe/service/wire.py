"""The curator service's values on the wire: JSON both ways, never pickle.

:func:`encode` turns a value into JSON-able data (``json.dumps(..., allow_nan=False)`` takes it) and
:func:`decode` turns it back. JSON's own scalars (text, integers, booleans, null, finite floats) and lists are
themselves; every other value is a one-tag object, the tag a key starting with ``$``:
``{"$tuple": [...]}``, ``{"$float": "nan"}``, ``{"$timestamp": "2020-01-01T00:00:00", "tz": "Europe/Oslo",
"unit": "us"}``, ``{"$frame": {...}}``, ... A JSON object with no ``$`` key is a dict with text keys; other
dicts are ``{"$dict": [[key, value], ...]}``.

Decoding reads a closed table of tags, each with its own decoder: nothing the payload names is imported or
called, and a tag of a result (a released number, a :class:`~dpframe.results.Release`, a budget's view) is
read only with ``allow_results=True`` -- the client reading the server's answer. The server reads an
analyst's arguments with ``allow_results=False``: plain values and public tables. Whatever the input,
decoding raises nothing but :class:`ValueError`; nesting deeper than :data:`MAX_DEPTH` values and tables
of more than ``max_cells`` cells in all are refused.

pandas objects keep their dtypes exactly (numpy, nullable, text with its storage, categorical with its
categories and order, times with their unit and zone, intervals, periods), their index (a ``MultiIndex``, an
``IntervalIndex`` of a histogram, a ``RangeIndex``, a time index's frequency), names, and a release in
``attrs["dp"]``, so that a released table shows on the client as it shows on the server. pandas' own
``to_json(orient="table")`` does not: it fails on an ``IntervalIndex`` and drops the text storage.
A value of any other type is refused with a :class:`TypeError` naming it.

>>> import json
>>> from fractions import Fraction
>>> data = encode({"bins": (0, 1.5, float("inf")), "share": Fraction(1, 3)})
>>> json.dumps(data, allow_nan=False)
'{"bins": {"$tuple": [0, 1.5, {"$float": "inf"}]}, "share": {"$fraction": "1/3"}}'
>>> decode(data, allow_results=False)
{'bins': (0, 1.5, inf), 'share': Fraction(1, 3)}
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
import zoneinfo
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from fractions import Fraction
from html import escape
from typing import Any, Final, cast

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionDtype

from dpframe.accounting.budget import Budget, amounts_text
from dpframe.accounting.costs import Amount, BudgetKind, Cost, Reading
from dpframe.accounting.ledger import LEDGER_COLUMNS
from dpframe.queries.agg import Expr
from dpframe.queries.agg import from_dict as agg_from_dict
from dpframe.queries.hypothesis import ChiSquareResult
from dpframe.queries.preview import Preview
from dpframe.queries.select import DPChoice
from dpframe.results import (
    Clipping,
    DPFloat,
    DPFrame,
    DPInt,
    DPSeries,
    DPTimedelta,
    DPTimestamp,
    Release,
    Unreleased,
    current_release,
)
from dpframe.synthesis.synthesize import SynthesisReport

# How deeply values may nest (a table's cells, its index and its release are a few levels each).
MAX_DEPTH: Final = 32
# How many cells (of columns, indexes and categories) one decoded value may hold in all, by default.
MAX_CELLS: Final = 100_000

# Exact fractions as "p/q" (or "p"): digits only, so that no text makes Fraction build a huge number ("1e999999").
_FRACTION = re.compile(r"-?[0-9]{1,400}(/[0-9]{1,400})?")
# An ISO time as Timestamp.isoformat writes it (no words such as "now", no offsets: the zone travels apart).
_ISO_TIME = re.compile(r"-?[0-9]{4,6}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?")
# A time zone by its database name ("UTC", "Europe/Oslo", "Etc/GMT+1") or a fixed offset ("UTC+01:00", as pandas
# names one): never a path ("dateutil//etc/...").
_ZONE_NAME = r"(UTC[+\-][0-9]{2}:[0-9]{2}|[A-Za-z][A-Za-z0-9_+\-]{0,40}(/[A-Za-z0-9_+\-]{1,40}){0,2})"
_ZONE = re.compile(_ZONE_NAME)
# A dtype's name ("Int64", "datetime64[ns, Europe/Oslo]", "interval[float64, right]", "int64[pyarrow]").
_DTYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,30}(\[[A-Za-z0-9_]{1,30}(, ?" + _ZONE_NAME + r")?\])?")
# Array kinds of numpy dtypes sent cell by cell (bool, integers, floats, objects, times); others are refused.
_NUMPY_KINDS = "biufOMm"
_UNITS = ("s", "ms", "us", "ns")
_CLOSED = ("left", "right", "both", "neither")


@dataclasses.dataclass(frozen=True, eq=False)
class BudgetView:
    """What an analyst may see of their budget on a curator's server: its amounts and its ledger lines.

    A snapshot, made on the server by :func:`budget_view`: never the budget's id, the ledger's location,
    a data fingerprint or another budget's lines.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": range(100)}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    >>> _ = p.dp.count(epsilon=0.25)
    >>> view = budget_view(p.dp.budget)
    >>> view
    BudgetView(ε=1, δ=0): spent ε=0.25, δ=0, remaining ε=0.75, δ=0, 1 release(s)
    >>> f"{view.remaining.epsilon:.2f}", list(view.ledger["query"])
    ('0.75', ['count'])
    """

    kind: BudgetKind
    total: Reading
    spent: Reading
    remaining: Reading
    ledger: pd.DataFrame

    def _amounts(self) -> tuple[str, str, str]:
        return amounts_text(self.kind, self.total.cost, self.spent.cost)

    def __repr__(self) -> str:
        total, spent, remaining = self._amounts()
        return f"BudgetView({total}): spent {spent}, remaining {remaining}, {len(self.ledger)} release(s)"

    def _repr_html_(self) -> str:
        total, spent, remaining = self._amounts()
        head = (f"<p><b>Privacy budget</b> {escape(total)} · spent {escape(spent)} · "
                f"<b>remaining {escape(remaining)}</b></p>")
        return head + self.ledger.to_html(index=False)


def budget_view(budget: Budget) -> BudgetView:
    """The analyst's view of ``budget`` (:class:`BudgetView`), read on the server.

    The amounts come from one read of the ledger's record, so remaining is total less spent; the ledger lines
    keep the ledger's public columns only (time, query, columns, mechanism, cost, noise, rule, seeded).

    >>> import dpframe
    >>> view = budget_view(dpframe.Budget(rho=0.5, ledger=dpframe.Ledger.in_memory()))
    >>> view.kind, float(view.remaining.rho), len(view.ledger)
    ('zcdp', 0.5, 0)
    """
    record = budget._record()
    kind = budget.kind
    lines = budget.ledger
    return BudgetView(kind, Reading.of(record.total, kind), Reading.of(record.spent, kind),
                      Reading.of(record.total - record.spent, kind), lines[[*LEDGER_COLUMNS]].copy())


# --- encoding -------------------------------------------------------------------------------------------------


def encode(value: Any, *, ref: Callable[[Any], int | None] | None = None) -> Any:
    """``value`` as JSON-able data (module docstring); TypeError for a type the wire does not carry.

    ``ref`` gives the step of a plan that a value stands for (the client's remote frames), or None:
    such a value, wherever it sits in ``value``, is sent as ``{"$ref": step}``.

    >>> import pandas as pd
    >>> encode([1, "a", None, float("nan")])
    [1, 'a', None, {'$float': 'nan'}]
    >>> encode(pd.Series([1, 2], name="n"))["$series"]["data"]
    {'dtype': {'$dtype': 'int64'}, 'values': [1, 2]}
    >>> encode(object())
    Traceback (most recent call last):
    ...
    TypeError: the curator service cannot send a value of type object
    >>> encode([1, {"other": object()}], ref=lambda value: 4 if type(value) is object else None)
    [1, {'other': {'$ref': 4}}]
    """
    token = _REF.set(ref)
    try:
        return _encode(value, 0)
    finally:
        _REF.reset(token)


# The ref of the encoding under way (a context variable: encodings in other threads have their own).
_REF: ContextVar[Callable[[Any], int | None] | None] = ContextVar("ref", default=None)


def _encode(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(f"cannot send a value nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if value is None or kind in (bool, str) or kind is int:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if kind is list:
        return [_encode(item, depth + 1) for item in value]
    if kind is tuple:
        return {"$tuple": [_encode(item, depth + 1) for item in value]}
    if kind is dict:
        if all(type(key) is str and not key.startswith("$") for key in value):
            return {key: _encode(item, depth + 1) for key, item in value.items()}
        return {"$dict": [[_encode(key, depth + 1), _encode(item, depth + 1)] for key, item in value.items()]}
    encoder = _ENCODERS.get(kind)
    if encoder is not None:
        return encoder(value, depth + 1)
    if isinstance(value, Expr):  # p.dp.select(score=agg.count(...)): an aggregate by its own JSON form
        return {"$agg": value.to_dict()}
    if kind is type and value in _BUILTIN_TYPES.values():
        # astype(str): Python's type itself, so that the server's pandas reads it as pandas does (a numpy "<U"
        # dtype on pandas 2.2, text on pandas 3): its dtype would not say the same.
        return {"$type": value.__name__}
    # numpy's scalars, pandas' missing values and times, which come in several classes.
    if kind is np.str_:
        return str(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating) and kind in _NUMPY_FLOATS:
        return _encode(float(value), depth)
    if value is pd.NaT or (isinstance(value, (np.datetime64, np.timedelta64)) and np.isnat(value)):
        return {"$nat": None}
    if value is pd.NA:
        return {"$na": None}
    if isinstance(value, (np.datetime64, datetime.datetime)):
        return _timestamp(pd.Timestamp(value))
    if isinstance(value, (np.timedelta64, datetime.timedelta)):
        return _timedelta(pd.Timedelta(value))
    if isinstance(value, (np.dtype, ExtensionDtype)):
        return _dtype(value, depth)
    if isinstance(value, pd.Index) and kind in _INDEXES:
        return _index(value, depth)
    if isinstance(value, datetime.tzinfo):  # pytz's zones (pandas 2.2's), which come in a class per zone
        return {"$tz": _tz_name(value)}
    step_of = _REF.get()
    step = None if step_of is None else step_of(value)
    if step is not None:
        return {"$ref": step}
    raise TypeError(f"the curator service cannot send a value of type {kind.__qualname__}")


_NUMPY_FLOATS = frozenset({np.float16, np.float32, np.float64, np.longdouble})
_INDEXES = frozenset({pd.Index, pd.RangeIndex, pd.MultiIndex, pd.CategoricalIndex, pd.IntervalIndex, pd.DatetimeIndex,
                      pd.TimedeltaIndex, pd.PeriodIndex})


def _fraction(value: Fraction) -> str:
    return str(value)


def _tz_name(tz: Any) -> str | None:
    """A time zone's database name, which decodes to the same zone; TypeError for a zone without one."""
    if tz is None:
        return None
    name = str(tz)
    if not _ZONE.fullmatch(name) or pd.DatetimeTZDtype("ns", name) != pd.DatetimeTZDtype("ns", tz):
        raise TypeError(f"the curator service sends time zones by name; {name!r} is not one")
    return name


def _timestamp(stamp: pd.Timestamp) -> dict[str, Any]:
    # The wall time in UTC and the zone apart: a local wall time can be ambiguous (the hour DST repeats).
    utc = stamp if stamp.tz is None else stamp.tz_convert("UTC").tz_localize(None)
    return {"$timestamp": utc.isoformat(), "tz": _tz_name(stamp.tz), "unit": stamp.unit}


def _timedelta(delta: pd.Timedelta) -> dict[str, Any]:
    return {"$timedelta": delta.value, "unit": delta.unit}


def _dtype(dtype: Any, depth: int) -> dict[str, Any]:
    if isinstance(dtype, pd.CategoricalDtype):
        return {"$categorical": {"categories": _encode(dtype.categories, depth + 1), "ordered": bool(dtype.ordered)}}
    if isinstance(dtype, pd.StringDtype):
        stored: str = dtype.storage
        storage = "pyarrow" if stored in ("pyarrow", "pyarrow_numpy") else stored
        # "pyarrow_numpy": pandas 2.2's name of Arrow text with NaN as missing.
        missing = "NA" if dtype.na_value is pd.NA and stored != "pyarrow_numpy" else "nan"
        return {"$string": {"storage": storage, "na_value": missing}}
    name = str(dtype)
    if not _DTYPE_NAME.fullmatch(name) or _dtype_named(name) != dtype:
        raise TypeError(f"the curator service cannot send the dtype {name} (it is not known by its name)")
    return {"$dtype": name}


def _array(column: pd.Series[Any] | pd.Index[Any], depth: int) -> dict[str, Any]:
    """A column or an index's values: its dtype, and its cells (a categorical's codes)."""
    dtype, values = column.dtype, column.array
    if isinstance(dtype, pd.CategoricalDtype):
        return {"dtype": _dtype(dtype, depth), "codes": np.asarray(values.codes).tolist()}
    if isinstance(dtype, np.dtype) and dtype.kind not in _NUMPY_KINDS:
        raise TypeError(f"the curator service cannot send values of dtype {dtype}")
    if isinstance(dtype, np.dtype) and dtype.kind in "biu":
        return {"dtype": _dtype(dtype, depth), "values": np.asarray(values).tolist()}
    if isinstance(dtype, np.dtype) and dtype.kind == "f":
        numbers = np.asarray(values)
        cells = numbers.tolist()
        for position in np.flatnonzero(~np.isfinite(numbers)).tolist():
            cells[position] = _encode(cells[position], depth + 1)
        return {"dtype": _dtype(dtype, depth), "values": cells}
    if _is_time(dtype):
        # Whole numbers of the dtype's unit (in UTC for a zone's), NaT as null: exact, and far quicker to read
        # and write than one timestamp per cell.
        ticks = np.asarray(cast(Any, values).asi8)
        cells = ticks.astype(object)
        cells[ticks == _NAT_TICKS] = None
        return {"dtype": _dtype(dtype, depth), "values": cells.tolist()}
    return {"dtype": _dtype(dtype, depth), "values": [_encode(cell, depth + 1) for cell in values]}


# The integer numpy holds NaT as (the smallest int64).
_NAT_TICKS: Final = np.iinfo(np.int64).min


def _is_time(dtype: Any) -> bool:
    """Whether a dtype holds times as whole numbers of a unit: numpy's datetimes and durations, pandas' zoned."""
    return isinstance(dtype, pd.DatetimeTZDtype) or (isinstance(dtype, np.dtype) and dtype.kind in "mM")


def _ndarray(array: np.ndarray[Any, Any], depth: int) -> dict[str, Any]:
    if array.ndim != 1:
        raise TypeError(f"the curator service cannot send a numpy array of {array.ndim} dimensions (only of one)")
    return _array(pd.Series(array, dtype=array.dtype, copy=False), depth)


def _index(index: pd.Index[Any], depth: int) -> dict[str, Any]:
    if isinstance(index, pd.RangeIndex):
        return {"$rangeindex": {"start": index.start, "stop": index.stop, "step": index.step,
                                "name": _encode(index.name, depth + 1)}}
    if isinstance(index, pd.MultiIndex):
        return {"$multiindex": {"levels": [_index(level, depth + 1) for level in index.levels],
                                "codes": [np.asarray(codes).tolist() for codes in index.codes],
                                "names": [_encode(name, depth + 1) for name in index.names]}}
    encoded = {"data": _array(index, depth), "name": _encode(index.name, depth + 1)}
    freq = getattr(index, "freq", None)
    if freq is not None and not isinstance(index, pd.PeriodIndex):  # a period's frequency is its dtype's
        encoded["freq"] = freq.freqstr
    return {"$index": encoded}


def _attrs(obj: pd.Series[Any] | pd.DataFrame, depth: int) -> dict[str, Any]:
    """A table's ``attrs`` (its release), and whether it is shown as a release (DPSeries, DPFrame)."""
    encoded: dict[str, Any] = {}
    if type(obj) in (DPSeries, DPFrame):
        encoded["shown"] = True
    attrs = dict(obj.attrs)
    release = attrs.pop("dp", None)
    if attrs or not (release is None or isinstance(release, (Release, SynthesisReport))):
        raise TypeError("the curator service sends a table's attrs['dp'] (a release or a synthesis report) only, "
                        f"not {sorted(map(str, obj.attrs))}")
    if isinstance(release, SynthesisReport):
        encoded["release"] = _encode(release, depth + 1)
    elif release is not None:
        # The snapshot of the values as released is the table itself while they have not changed: sent once.
        snapshot = release.released
        # (current_release compares values only: the labels' names and dtypes must be the snapshot's too)
        same = (current_release(obj) is release and snapshot is not None and obj.index.dtype == snapshot.index.dtype
                and list(obj.index.names) == list(snapshot.index.names)
                and getattr(obj, "name", None) == getattr(snapshot, "name", None))
        encoded["release"] = _release(release, depth + 1, same)
    return encoded


def _series(series: pd.Series[Any], depth: int) -> dict[str, Any]:
    return {"$series": {"data": _array(series, depth), "index": _index(series.index, depth + 1),
                        "name": _encode(series.name, depth + 1), **_attrs(series, depth)}}


def _frame(frame: pd.DataFrame, depth: int) -> dict[str, Any]:
    columns = [_array(frame.iloc[:, position], depth) for position in range(frame.shape[1])]
    return {"$frame": {"data": columns, "index": _index(frame.index, depth + 1),
                       "columns": _index(frame.columns, depth + 1), **_attrs(frame, depth)}}


def _fields(value: Any, depth: int, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    return {field.name: _encode(getattr(value, field.name), depth + 1)
            for field in dataclasses.fields(value) if field.name not in skip}


def _release(release: Release, depth: int, same: bool = False) -> dict[str, Any]:
    encoded = _fields(release, depth, skip=("released",))
    encoded["released"] = "same" if same else _encode(release.released, depth + 1)
    return {"$release": encoded}


def _cost(cost: Cost) -> dict[str, str]:
    return {"epsilon": _fraction(cost.epsilon), "delta": _fraction(cost.delta), "rho": _fraction(cost.rho)}


def _reading(reading: Reading) -> dict[str, Any]:
    return {"$reading": {**_cost(reading.cost), "kind": reading.kind}}


def _dataclass(tag: str) -> Callable[[Any, int], Any]:
    return lambda value, depth: {tag: _fields(value, depth)}


_ENCODERS: dict[type, Callable[[Any, int], Any]] = {
    Unreleased: lambda value, depth: {"$unreleased": str.__str__(value)},
    Fraction: lambda value, depth: {"$fraction": _fraction(value)},
    slice: lambda value, depth: {"$slice": [_encode(part, depth + 1)
                                            for part in (value.start, value.stop, value.step)]},
    range: lambda value, depth: {"$range": [value.start, value.stop, value.step]},
    set: lambda value, depth: {"$set": [_encode(item, depth + 1) for item in value]},
    frozenset: lambda value, depth: {"$frozenset": [_encode(item, depth + 1) for item in value]},
    np.ndarray: lambda value, depth: {"$ndarray": _ndarray(value, depth)},
    pd.Timestamp: lambda value, depth: _timestamp(value),
    pd.Timedelta: lambda value, depth: _timedelta(value),
    pd.Period: lambda value, depth: {"$period": str(value), "freq": value.freqstr},
    # A time zone (p["t"].dt.tz) by its database name, as in timestamps.
    zoneinfo.ZoneInfo: lambda value, depth: {"$tz": _tz_name(value)},
    datetime.timezone: lambda value, depth: {"$tz": _tz_name(value)},
    pd.Interval: lambda value, depth: {"$interval": [_encode(value.left, depth + 1), _encode(value.right, depth + 1)],
                                       "closed": value.closed},
    pd.Series: _series,
    pd.DataFrame: _frame,
    DPSeries: _series,
    DPFrame: _frame,
    # Results: the server's answers.
    DPFloat: lambda value, depth: {"$dpfloat": _encode(float(value), depth + 1),
                                   "release": _release(value.release, depth + 1)},
    DPInt: lambda value, depth: {"$dpint": int(value), "release": _release(value.release, depth + 1)},
    DPTimestamp: lambda value, depth: {"$dptimestamp": _timestamp(pd.Timestamp(value)), "tz": _tz_name(value._tz),
                                       "release": _release(value.release, depth + 1)},
    DPTimedelta: lambda value, depth: {"$dptimedelta": value.value, "release": _release(value.release, depth + 1)},
    DPChoice: lambda value, depth: {"$dpchoice": _encode(value.value, depth + 1), "position": value.position,
                                    "release": _release(value.release, depth + 1)},
    Release: _release,
    Cost: lambda value, depth: {"$cost": _cost(value)},
    Amount: lambda value, depth: {"$amount": _fraction(value.exact)},
    Reading: lambda value, depth: _reading(value),
    Clipping: _dataclass("$clipping"),
    Preview: _dataclass("$preview"),
    ChiSquareResult: _dataclass("$chisquare"),
    BudgetView: _dataclass("$budget"),
    SynthesisReport: _dataclass("$synthesis"),
}


# --- decoding -------------------------------------------------------------------------------------------------


def decode(data: Any, *, allow_results: bool, refs: Mapping[int, Any] | None = None,
           max_cells: int = MAX_CELLS) -> Any:
    """The value ``data`` encodes (:func:`encode`); ValueError for anything else.

    ``allow_results`` admits the server's answers (released values, releases, costs, a budget's view):
    the client's reading, never the server's. ``refs`` gives the values of a plan's steps, which
    ``{"$ref": i}`` stands for. ``max_cells`` caps the cells of all columns, index labels and categories
    (a table's RangeIndex holds none).

    >>> decode({"$tuple": [1, {"$slice": [None, 5, None]}]}, allow_results=False)
    (1, slice(None, 5, None))
    >>> decode({"$ref": 3}, allow_results=False, refs={0: "frame"})
    Traceback (most recent call last):
    ...
    ValueError: {"$ref": 3} names no earlier step (there are 1)
    >>> decode({"$dpint": 5, "release": None}, allow_results=False)
    Traceback (most recent call last):
    ...
    ValueError: a $dpint is a result of the server and is not accepted here
    """
    try:
        return _Decoder(allow_results, refs, max_cells).value(data, 0)
    except ValueError:
        raise
    except Exception as error:  # noqa: BLE001 -- the backstop of the promise: every check above should have caught it
        raise ValueError(f"malformed value ({type(error).__name__}: {str(error)[:200]})") from None


def _malformed(what: str, payload: Any) -> ValueError:
    shown = repr(payload)
    return ValueError(f"malformed {what}: {shown[:80]}{'...' if len(shown) > 80 else ''}")


def _checked(what: str, make: Callable[[], Any]) -> Any:
    """``make()``, with any error of pandas or numpy on malformed input as a ValueError about ``what``."""
    try:
        return make()
    except Exception as error:  # noqa: BLE001 -- pandas raises many types on bad input; the wire promises ValueError
        raise ValueError(f"malformed {what}: {type(error).__name__}: {str(error)[:200]}") from None


def _text(payload: Any, pattern: re.Pattern[str], what: str) -> str:
    if type(payload) is not str or not pattern.fullmatch(payload):
        raise _malformed(what, payload)
    return payload


def _exact(payload: Any) -> Fraction:
    text = _text(payload, _FRACTION, "fraction")
    numerator, _, denominator = text.partition("/")
    if denominator and int(denominator) == 0:
        raise _malformed("fraction", payload)
    return Fraction(int(numerator), int(denominator or 1))


# Python's types a value may be (astype(int), astype(str)): a closed list, by name.
_BUILTIN_TYPES: Mapping[str, type] = {kind.__name__: kind for kind in (int, float, bool, str, complex, object)}


def _dtype_named(name: str) -> Any:
    return pd.api.types.pandas_dtype(name)


def _zone(payload: Any) -> str | None:
    return None if payload is None else _text(payload, _ZONE, "time zone")


def _keys(payload: Any, what: str, required: set[str], optional: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``payload`` as an object with the ``required`` keys and perhaps some ``optional`` ones."""
    if type(payload) is not dict or not required <= payload.keys() or not payload.keys() <= required | optional:
        raise _malformed(what, payload)
    return payload


def _integer(payload: Any, what: str) -> int:
    if type(payload) is not int:
        raise _malformed(what, payload)
    return payload


class _Decoder:
    """One decoding: its options, and the cells read so far (against ``max_cells``)."""

    def __init__(self, allow_results: bool, refs: Mapping[int, Any] | None, max_cells: int) -> None:
        self.allow_results = allow_results
        self.refs = refs
        self.cells_left = max_cells
        self.in_table = False  # reading a table's cells, where a step's value has no place

    def value(self, data: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError(f"a value nested deeper than {MAX_DEPTH} levels is refused")
        kind = type(data)
        if data is None or kind in (bool, int, str):
            return data
        if kind is float:
            if not math.isfinite(data):
                raise ValueError(f"a non-finite float must be written {{\"$float\": \"{data!r}\"}}, not as a number")
            return data
        if kind is list:
            return [self.value(item, depth + 1) for item in data]
        if kind is not dict:
            raise ValueError(f"not a JSON value: {kind.__name__}")
        tags = [key for key in data if type(key) is not str or key.startswith("$")]
        if not tags:
            return {key: self.value(item, depth + 1) for key, item in data.items()}
        if len(tags) > 1 or type(tags[0]) is not str:
            raise _malformed("tagged value (one $ key)", data)
        tag = tags[0]
        decoder = _DECODERS.get(tag)
        if decoder is None:
            result = _RESULT_DECODERS.get(tag)
            if result is None:
                raise ValueError(f"unknown tag {tag[:40]!r}")
            if not self.allow_results:
                raise ValueError(f"a {tag} is a result of the server and is not accepted here")
            decoder = result
        return decoder(self, data, depth + 1)

    def count(self, cells: int) -> None:
        self.cells_left -= cells
        if self.cells_left < 0:
            raise ValueError("the value holds too many cells (tables, indexes and categories together); "
                             "send a smaller table")

    # -- tags of plain values ----------------------------------------------------------------------------------

    def ref(self, data: dict[str, Any], depth: int) -> Any:
        index = _integer(_keys(data, "$ref", {"$ref"})["$ref"], "$ref")
        if self.refs is None:
            raise ValueError("a {\"$ref\": i} stands for a step's value, and only a plan's steps have them")
        if self.in_table:
            raise ValueError("a step's value cannot be a cell of a table")
        try:
            if index < 0:  # a list of the steps' values would read -1 as the last one
                raise KeyError(index)
            return self.refs[index]
        except (KeyError, IndexError):
            raise ValueError(f"{{\"$ref\": {index}}} names no earlier step (there are {len(self.refs)})") from None

    def float_(self, data: dict[str, Any], depth: int) -> float:
        text = _keys(data, "$float", {"$float"})["$float"]
        if text not in ("nan", "inf", "-inf"):
            raise _malformed("$float (nan, inf or -inf)", text)
        return float(text)

    def tuple_(self, data: dict[str, Any], depth: int) -> tuple[Any, ...]:
        items = _keys(data, "$tuple", {"$tuple"})["$tuple"]
        if type(items) is not list:
            raise _malformed("$tuple", items)
        return tuple(self.value(item, depth) for item in items)

    def dict_(self, data: dict[str, Any], depth: int) -> dict[Any, Any]:
        pairs = _keys(data, "$dict", {"$dict"})["$dict"]
        if type(pairs) is not list or not all(type(pair) is list and len(pair) == 2 for pair in pairs):
            raise _malformed("$dict (a list of [key, value] pairs)", pairs)
        keys = [self.value(key, depth) for key, _ in pairs]
        items = [self.value(item, depth) for _, item in pairs]
        result: dict[Any, Any] = _checked("$dict (keys must be hashable)", lambda: dict(zip(keys, items)))
        return result

    def slice_(self, data: dict[str, Any], depth: int) -> slice:
        parts = _keys(data, "$slice", {"$slice"})["$slice"]
        if type(parts) is not list or len(parts) != 3:
            raise _malformed("$slice ([start, stop, step])", parts)
        start, stop, step = (self.value(part, depth) for part in parts)
        return slice(start, stop, step)

    def set_(self, data: dict[str, Any], depth: int) -> set[Any]:
        items = self.tuple_({"$tuple": _keys(data, "$set", {"$set"})["$set"]}, depth)
        result: set[Any] = _checked("$set (items must be hashable)", lambda: set(items))
        return result

    def frozenset_(self, data: dict[str, Any], depth: int) -> frozenset[Any]:
        items = self.tuple_({"$tuple": _keys(data, "$frozenset", {"$frozenset"})["$frozenset"]}, depth)
        result: frozenset[Any] = _checked("$frozenset (items must be hashable)", lambda: frozenset(items))
        return result

    def ndarray(self, data: dict[str, Any], depth: int) -> np.ndarray[Any, Any]:
        array = self.array(_keys(data, "$ndarray", {"$ndarray"})["$ndarray"], depth)
        if not isinstance(array, np.ndarray):
            raise _malformed("$ndarray (of a numpy dtype)", data)
        return array

    def range_(self, data: dict[str, Any], depth: int) -> range:
        parts = _keys(data, "$range", {"$range"})["$range"]
        if type(parts) is not list or len(parts) != 3 or not all(type(part) is int for part in parts):
            raise _malformed("$range ([start, stop, step], integers)", parts)
        result: range = _checked("$range", lambda: range(*parts))
        return result

    def fraction(self, data: dict[str, Any], depth: int) -> Fraction:
        return _exact(_keys(data, "$fraction", {"$fraction"})["$fraction"])

    def unreleased(self, data: dict[str, Any], depth: int) -> Unreleased:
        text = _keys(data, "$unreleased", {"$unreleased"})["$unreleased"]
        if type(text) is not str:
            raise _malformed("$unreleased", text)
        return Unreleased(text)

    def nat(self, data: dict[str, Any], depth: int) -> Any:
        if _keys(data, "$nat", {"$nat"})["$nat"] is not None:
            raise _malformed("$nat", data)
        return pd.NaT

    def na(self, data: dict[str, Any], depth: int) -> Any:
        if _keys(data, "$na", {"$na"})["$na"] is not None:
            raise _malformed("$na", data)
        return pd.NA

    def timestamp(self, data: dict[str, Any], depth: int) -> pd.Timestamp:
        fields = _keys(data, "$timestamp", {"$timestamp", "tz", "unit"})
        iso = _text(fields["$timestamp"], _ISO_TIME, "$timestamp")
        zone, unit = _zone(fields["tz"]), fields["unit"]
        if unit not in _UNITS:
            raise _malformed("$timestamp unit", unit)

        def make() -> pd.Timestamp:
            stamp = pd.Timestamp(iso).as_unit(unit)
            return stamp if zone is None else stamp.tz_localize("UTC").tz_convert(zone)
        stamp = _checked("$timestamp", make)
        if not isinstance(stamp, pd.Timestamp):  # NaT
            raise _malformed("$timestamp", data)
        return stamp

    def timedelta(self, data: dict[str, Any], depth: int) -> pd.Timedelta:
        fields = _keys(data, "$timedelta", {"$timedelta", "unit"})
        nanoseconds, unit = _integer(fields["$timedelta"], "$timedelta"), fields["unit"]
        if unit not in _UNITS:
            raise _malformed("$timedelta unit", unit)
        delta: Any = _checked("$timedelta", lambda: pd.Timedelta(nanoseconds, unit="ns").as_unit(unit))
        if not isinstance(delta, pd.Timedelta):  # NaT (the smallest int64)
            raise _malformed("$timedelta", data)
        return delta

    def tz(self, data: dict[str, Any], depth: int) -> datetime.tzinfo:
        zone = _zone(_keys(data, "$tz", {"$tz"})["$tz"])
        if zone is None:
            raise _malformed("$tz", data)
        found: Any = _checked("$tz", lambda: pd.DatetimeTZDtype("ns", zone).tz)  # the zone pandas makes of the name
        return cast(datetime.tzinfo, found)

    def agg(self, data: dict[str, Any], depth: int) -> Expr:
        # agg's own reader validates it as the constructors do (its constants are plain values, never code)
        return cast(Expr, _checked("$agg", lambda: agg_from_dict(_keys(data, "$agg", {"$agg"})["$agg"])))

    def period(self, data: dict[str, Any], depth: int) -> pd.Period:
        fields = _keys(data, "$period", {"$period", "freq"})
        text, freq = fields["$period"], fields["freq"]
        if type(text) is not str or type(freq) is not str or len(text) > 40 or len(freq) > 20:
            raise _malformed("$period", data)
        period = _checked("$period", lambda: pd.Period(text, freq=freq))
        if not isinstance(period, pd.Period):
            raise _malformed("$period", data)
        return period

    def interval(self, data: dict[str, Any], depth: int) -> pd.Interval[Any]:
        fields = _keys(data, "$interval", {"$interval", "closed"})
        ends, closed = fields["$interval"], fields["closed"]
        if type(ends) is not list or len(ends) != 2 or closed not in _CLOSED:
            raise _malformed("$interval", data)
        left, right = (self.value(end, depth) for end in ends)
        interval: pd.Interval[Any] = _checked("$interval", lambda: pd.Interval(left, right, closed=closed))
        return interval

    def builtin_type(self, data: dict[str, Any], depth: int) -> type:
        name = _keys(data, "$type", {"$type"})["$type"]
        if type(name) is not str or name not in _BUILTIN_TYPES:
            raise _malformed("$type (one of Python's int, float, bool, str, complex, object)", name)
        return _BUILTIN_TYPES[name]

    def dtype(self, data: dict[str, Any], depth: int) -> Any:
        name = _text(_keys(data, "$dtype", {"$dtype"})["$dtype"], _DTYPE_NAME, "$dtype (a dtype's name)")
        if "dateutil" in name:
            raise _malformed("$dtype (time zones go by database name)", name)
        return _checked(f"$dtype {name!r}", lambda: _dtype_named(name))

    def categorical(self, data: dict[str, Any], depth: int) -> pd.CategoricalDtype:
        fields = _keys(_keys(data, "$categorical", {"$categorical"})["$categorical"], "$categorical",
                       {"categories", "ordered"})
        categories, ordered = self.value(fields["categories"], depth), fields["ordered"]
        if not isinstance(categories, pd.Index) or type(ordered) is not bool:
            raise _malformed("$categorical", data)
        dtype: pd.CategoricalDtype = _checked("$categorical", lambda: pd.CategoricalDtype(categories, ordered))
        return dtype

    def string(self, data: dict[str, Any], depth: int) -> Any:
        fields = _keys(_keys(data, "$string", {"$string"})["$string"], "$string", {"storage", "na_value"})
        storage, missing = fields["storage"], fields["na_value"]
        if storage not in ("python", "pyarrow") or missing not in ("NA", "nan"):
            raise _malformed("$string", data)
        try:
            return _string_dtype(storage, missing)
        except ImportError:  # the same text in Python's storage: only the storage differs, not a value
            return _string_dtype("python", missing)

    def array(self, data: Any, depth: int) -> Any:
        """A column's (or an index's) values: a numpy array or a pandas extension array of its dtype."""
        in_table, self.in_table = self.in_table, True
        try:
            return self.cells(data, depth)
        finally:
            self.in_table = in_table

    def cells(self, data: Any, depth: int) -> Any:
        if type(data) is not dict or "dtype" not in data:
            raise _malformed("array", data)
        dtype = self.value(data["dtype"], depth)
        if not isinstance(dtype, (np.dtype, ExtensionDtype)):
            raise _malformed("array dtype", data["dtype"])
        if isinstance(dtype, pd.CategoricalDtype):
            codes = _keys(data, "categorical array", {"dtype", "codes"})["codes"]
            if type(codes) is not list or dtype.categories is None:  # "category" by name: no categories
                raise _malformed("categorical codes", codes)
            self.count(len(codes))
            if not all(type(code) is int and -1 <= code < len(dtype.categories) for code in codes):
                raise _malformed("categorical codes", codes)
            return _checked("categorical codes", lambda: pd.Categorical.from_codes(codes, dtype=dtype))
        cells = _keys(data, "array", {"dtype", "values"})["values"]
        if type(cells) is not list:
            raise _malformed("array values", cells)
        self.count(len(cells))
        if _is_time(dtype):
            return self.times(dtype, cells)
        if isinstance(dtype, np.dtype):
            return self.numpy_array(dtype, cells, depth)
        # cast: pandas' stubs list the dtypes they know by name, not every ExtensionDtype.
        values, extension = [self.value(cell, depth) for cell in cells], cast(Any, dtype)
        array: Any = _checked(f"array of {dtype}", lambda: pd.array(values, dtype=extension))
        if array.dtype != dtype:
            raise ValueError(f"malformed array: its values do not make a {dtype} array")
        return array

    def numpy_array(self, dtype: np.dtype[Any], cells: list[Any], depth: int) -> Any:
        kind = dtype.kind
        if kind not in "biufO":
            raise ValueError(f"arrays of dtype {dtype} are not sent")
        if kind in "biu":  # exact types: numpy would truncate 1.5, or read True, into an integer column
            wanted: tuple[type, ...] = (bool,) if kind == "b" else (int,)
            if not all(type(cell) in wanted for cell in cells):
                raise ValueError(f"malformed array: a {dtype} column holds only {wanted[0].__name__} values")
            return _checked(f"array of {dtype}", lambda: np.array(cells, dtype=dtype))
        values = [self.value(cell, depth) for cell in cells]
        if kind == "f":
            if not all(type(cell) in (int, float) for cell in values):
                raise ValueError(f"malformed array: a {dtype} column holds only numbers")
            return _checked(f"array of {dtype}", lambda: np.array(values, dtype=dtype))
        return _checked("array of objects", lambda: _objects(values))

    def times(self, dtype: Any, cells: list[Any]) -> Any:
        """Times of ``dtype`` from whole numbers of its unit (in UTC for a zone's), null for NaT."""
        if not all(cell is None or type(cell) is int for cell in cells):
            raise ValueError(f"malformed array: a {dtype} column holds whole numbers of its unit (or null)")
        ticks = [_NAT_TICKS if cell is None else cell for cell in cells]

        def make() -> Any:
            if not isinstance(dtype, pd.DatetimeTZDtype):
                return np.array(ticks, dtype=np.int64).view(dtype)
            utc = np.array(ticks, dtype=np.int64).view(f"M8[{dtype.unit}]")
            return pd.DatetimeIndex(utc).tz_localize("UTC").tz_convert(dtype.tz).array
        times = _checked(f"array of {dtype}", make)
        if times.dtype != dtype:
            raise ValueError(f"malformed array: its values do not make a {dtype} array")
        return times

    def index(self, data: dict[str, Any], depth: int) -> pd.Index[Any]:
        fields = _keys(_keys(data, "$index", {"$index"})["$index"], "$index", {"data", "name"}, frozenset({"freq"}))
        values, name = self.array(fields["data"], depth), self.value(fields["name"], depth)
        freq = fields.get("freq")
        if freq is not None and (type(freq) is not str or len(freq) > 20):
            raise _malformed("$index freq", freq)
        _checked("index name (not hashable)", lambda: hash(name))
        # tupleize_cols=False: an index of tuples stays one (pandas would make a MultiIndex of it).
        index: pd.Index[Any] = _checked("$index", lambda: pd.Index(
            values, dtype=values.dtype, name=name, copy=False, tupleize_cols=False))
        if freq is not None:
            if not isinstance(index, (pd.DatetimeIndex, pd.TimedeltaIndex)):
                raise _malformed("$index freq (times only)", freq)
            times: Any = type(index)
            index = _checked("$index freq", lambda: times(index, freq=freq))
        if index.dtype != values.dtype:
            raise ValueError(f"malformed $index: its values do not make a {values.dtype} index")
        return index

    def range_index(self, data: dict[str, Any], depth: int, counted: bool = True) -> pd.RangeIndex:
        fields = _keys(_keys(data, "$rangeindex", {"$rangeindex"})["$rangeindex"], "$rangeindex",
                       {"start", "stop", "step", "name"})
        start, stop, step = (_integer(fields[key], "$rangeindex") for key in ("start", "stop", "step"))
        name = self.value(fields["name"], depth)
        _checked("index name (not hashable)", lambda: hash(name))
        index: pd.RangeIndex = _checked("$rangeindex", lambda: pd.RangeIndex(start, stop, step, name=name))
        if counted:
            self.count(len(index))
        return index

    def multi_index(self, data: dict[str, Any], depth: int) -> pd.MultiIndex:
        fields = _keys(_keys(data, "$multiindex", {"$multiindex"})["$multiindex"], "$multiindex",
                       {"levels", "codes", "names"})
        levels, codes, names = fields["levels"], fields["codes"], fields["names"]
        if not (type(levels) is list and type(codes) is list and type(names) is list
                and len(levels) == len(codes) == len(names) > 0
                and all(type(level) is dict for level in levels) and all(type(part) is list for part in codes)):
            raise _malformed("$multiindex", data)
        self.count(sum(map(len, codes)))
        if not all(type(code) is int for part in codes for code in part):
            raise _malformed("$multiindex codes", codes)
        decoded = [self.value(level, depth) for level in levels]
        if not all(isinstance(level, pd.Index) and not isinstance(level, pd.MultiIndex) for level in decoded):
            raise _malformed("$multiindex levels", levels)
        labels = [self.value(name, depth) for name in names]
        _checked("index names (not hashable)", lambda: hash(tuple(labels)))
        index: pd.MultiIndex = _checked("$multiindex", lambda: pd.MultiIndex(
            levels=decoded, codes=codes, names=labels, verify_integrity=True))
        return index

    def any_index(self, data: Any, depth: int) -> pd.Index[Any]:
        index = self.value(data, depth)
        if not isinstance(index, pd.Index):
            raise _malformed("index", data)
        return index

    def rows(self, data: Any, depth: int) -> pd.Index[Any]:
        """A table's index. A RangeIndex holds three numbers, not cells: the table's columns, as long, count
        (a frame without columns counts its length itself)."""
        if type(data) is dict and "$rangeindex" in data:
            return self.range_index(data, depth + 1, counted=False)
        return self.any_index(data, depth)

    def release_of(self, fields: dict[str, Any], depth: int, table: pd.Series[Any] | pd.DataFrame) -> None:
        """Attach a table's release (``attrs["dp"]``) and make it shown as one, as the server had it."""
        shown = fields.get("shown", False)
        if (shown is not True and shown is not False) or (("release" in fields or shown) and not self.allow_results):
            raise ValueError("a released table (a shown one, or with a release) is a result of the server and is "
                             "not accepted here")
        if "release" in fields:
            report = fields["release"]
            release = (self.release(report, depth, table) if type(report) is dict and "$release" in report
                       else self.typed(report, depth, "table's report", _is(SynthesisReport)))
            table.attrs = {"dp": release}
        if shown:
            table.__class__ = DPFrame if isinstance(table, pd.DataFrame) else DPSeries

    def series(self, data: dict[str, Any], depth: int) -> pd.Series[Any]:
        fields = _keys(_keys(data, "$series", {"$series"})["$series"], "$series", {"data", "index", "name"},
                       frozenset({"shown", "release"}))
        values, index = self.array(fields["data"], depth), self.rows(fields["index"], depth)
        name = self.value(fields["name"], depth)
        _checked("series name (not hashable)", lambda: hash(name))
        if len(values) != len(index):
            raise ValueError(f"malformed $series: {len(values)} values for an index of {len(index)}")
        series: pd.Series[Any] = _checked("$series", lambda: pd.Series(values, index=index, name=name,
                                                                       dtype=values.dtype, copy=False))
        self.release_of(fields, depth, series)
        return series

    def frame(self, data: dict[str, Any], depth: int) -> pd.DataFrame:
        fields = _keys(_keys(data, "$frame", {"$frame"})["$frame"], "$frame", {"data", "index", "columns"},
                       frozenset({"shown", "release"}))
        columns, index = self.any_index(fields["columns"], depth), self.rows(fields["index"], depth)
        arrays = fields["data"]
        if type(arrays) is not list or len(arrays) != len(columns):
            raise ValueError("malformed $frame: one array of values per column")
        if not arrays and isinstance(index, pd.RangeIndex):
            self.count(len(index))
        values = [self.array(array, depth) for array in arrays]
        if any(len(column) != len(index) for column in values):
            raise ValueError(f"malformed $frame: a column's length differs from the index's ({len(index)})")
        frame: pd.DataFrame = _checked("$frame", lambda: _frame_of(values, index, columns))
        self.release_of(fields, depth, frame)
        return frame

    # -- tags of results ---------------------------------------------------------------------------------------

    def cost(self, data: Any, depth: int) -> Cost:
        fields = _keys(_keys(data, "$cost", {"$cost"})["$cost"], "$cost", {"epsilon", "delta", "rho"})
        parts = (_exact(fields[key]) for key in ("epsilon", "delta", "rho"))
        cost: Cost = _checked("$cost", lambda: Cost(*parts))
        return cost

    def amount(self, data: dict[str, Any], depth: int) -> Amount:
        return Amount(_exact(_keys(data, "$amount", {"$amount"})["$amount"]))

    def reading(self, data: dict[str, Any], depth: int) -> Reading:
        fields = _keys(_keys(data, "$reading", {"$reading"})["$reading"], "$reading",
                       {"epsilon", "delta", "rho", "kind"})
        if fields["kind"] not in ("approx", "zcdp", "rdp", "advanced"):
            raise _malformed("$reading kind", fields["kind"])
        epsilon, delta, rho = (Amount(_exact(fields[key])) for key in ("epsilon", "delta", "rho"))
        return Reading(epsilon, delta, rho, fields["kind"])

    def typed(self, data: Any, depth: int, what: str, expected: Callable[[Any], bool]) -> Any:
        value = self.value(data, depth)
        if not expected(value):
            raise _malformed(what, data)
        return value

    def dataclass(self, data: dict[str, Any], depth: int, tag: str, cls: type,
                  checks: Mapping[str, Callable[[Any], bool]], **given: Any) -> Any:
        """An instance of the dataclass ``cls``: each field's value decoded and checked by ``checks``."""
        fields = {field.name: field for field in dataclasses.fields(cls) if field.name not in given}
        required = {name for name, field in fields.items()
                    if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING}
        payload = _keys(_keys(data, tag, {tag})[tag], tag, required, frozenset(fields))
        values = {name: self.typed(item, depth, f"{tag} field {name}", checks[name]) for name, item in payload.items()}
        return cls(**values, **given)

    def release(self, data: Any, depth: int, table: pd.Series[Any] | pd.DataFrame | None = None) -> Release:
        if type(data) is not dict or type(data.get("$release")) is not dict or "released" not in data["$release"]:
            raise _malformed("$release", data)
        released = data["$release"]["released"]
        if released == "same":
            if table is None:
                raise _malformed("$release (\"same\" is a table's own release)", data)
            snapshot = table.copy()
        else:
            snapshot = self.typed(released, depth, "$release released", _optional(_is_table))
        if snapshot is not None:
            snapshot.attrs = {}
        fields = {key: item for key, item in data["$release"].items() if key != "released"}
        release: Release = self.dataclass({"$release": fields}, depth, "$release", Release, _RELEASE_FIELDS,
                                          released=snapshot)
        return release

    def release_tag(self, data: dict[str, Any], depth: int) -> Release:
        return self.release(data, depth)

    def clipping(self, data: dict[str, Any], depth: int) -> Clipping:
        checks = {field.name: _is_number for field in dataclasses.fields(Clipping)}
        checks["chosen_privately"] = _is_bool
        clipping: Clipping = self.dataclass(data, depth, "$clipping", Clipping, checks)
        return clipping

    def preview(self, data: dict[str, Any], depth: int) -> Preview:
        checks = {"query": _is_str, "mechanism": _is_str, "cost": _is(Cost), "measurements": _is(pd.DataFrame),
                  "note": _is_str}
        preview: Preview = self.dataclass(data, depth, "$preview", Preview, checks)
        return preview

    def chisquare(self, data: dict[str, Any], depth: int) -> ChiSquareResult:
        checks = {"test": lambda value: value in ("goodness of fit", "independence"), "statistic": _is_number,
                  "pvalue": _is_number, "dof": _is_int, "n": _is_number, "table": _is_table, "expected": _is_table,
                  "simulations": _is_int, "noise": _is_str, "cost": _is(Cost),
                  "assumptions": _tuple_of(_is_str)}
        result: ChiSquareResult = self.dataclass(data, depth, "$chisquare", ChiSquareResult, checks)
        return result

    def budget(self, data: dict[str, Any], depth: int) -> BudgetView:
        checks = {"kind": lambda value: value in ("approx", "zcdp", "rdp", "advanced"), "total": _is(Reading),
                  "spent": _is(Reading), "remaining": _is(Reading), "ledger": _is(pd.DataFrame)}
        view: BudgetView = self.dataclass(data, depth, "$budget", BudgetView, checks)
        return view

    def synthesis(self, data: dict[str, Any], depth: int) -> SynthesisReport:
        checks = {"method": _is_str, "cost": _is(Cost), "marginals": _tuple_of(_tuple_of(lambda label: True)),
                  "domains": _is(dict), "rows": _is_int, "seeded": _is_bool, "notes": _tuple_of(_is_str)}
        report: SynthesisReport = self.dataclass(data, depth, "$synthesis", SynthesisReport, checks)
        return report

    def released_value(self, data: dict[str, Any], depth: int, tag: str, extra: frozenset[str] = frozenset()) -> Any:
        fields = _keys(data, tag, {tag, "release"}, extra)
        return fields, self.release(fields["release"], depth)

    def dp_float(self, data: dict[str, Any], depth: int) -> DPFloat:
        fields, release = self.released_value(data, depth, "$dpfloat")
        number = self.typed(fields["$dpfloat"], depth, "$dpfloat", _is_number)
        return DPFloat(float(number), release)

    def dp_int(self, data: dict[str, Any], depth: int) -> DPInt:
        fields, release = self.released_value(data, depth, "$dpint")
        return DPInt(_integer(fields["$dpint"], "$dpint"), release)

    def dp_timestamp(self, data: dict[str, Any], depth: int) -> DPTimestamp:
        fields, release = self.released_value(data, depth, "$dptimestamp", frozenset({"tz"}))
        stamp = self.typed(fields["$dptimestamp"], depth, "$dptimestamp", _is(pd.Timestamp))
        zone = _zone(fields.get("tz"))
        result: DPTimestamp = _checked("$dptimestamp", lambda: DPTimestamp(stamp, release, zone))
        return result

    def dp_timedelta(self, data: dict[str, Any], depth: int) -> DPTimedelta:
        fields, release = self.released_value(data, depth, "$dptimedelta")
        nanoseconds = _integer(fields["$dptimedelta"], "$dptimedelta")
        # As DPTimedelta pickles itself: by its seconds.
        result: DPTimedelta = _checked("$dptimedelta", lambda: DPTimedelta(nanoseconds / 1e9, release))
        return result

    def dp_choice(self, data: dict[str, Any], depth: int) -> DPChoice:
        fields, release = self.released_value(data, depth, "$dpchoice", frozenset({"position"}))
        return DPChoice(self.value(fields["$dpchoice"], depth), _integer(fields.get("position"), "$dpchoice position"),
                        release)


def _objects(cells: list[Any]) -> Any:
    """An object array of ``cells``, one by one: tuples and lists stay cells (numpy would make a 2-D array)."""
    array = np.empty(len(cells), dtype=object)
    for position, cell in enumerate(cells):
        array[position] = cell
    return array


def _frame_of(columns: list[Any], index: pd.Index[Any], labels: pd.Index[Any]) -> pd.DataFrame:
    """A frame of these column arrays, each keeping its dtype (a frame built from a dict of arrays would infer
    text from objects), with its index and column labels."""
    parts = [pd.Series(column, dtype=column.dtype, copy=False) for column in columns]
    frame = pd.concat(parts, axis=1, keys=range(len(parts))) if parts else pd.DataFrame(index=range(len(index)))
    frame.index, frame.columns = index, labels
    return frame


def _string_dtype(storage: Any, missing: str) -> Any:
    if missing == "NA":
        return pd.StringDtype(storage)
    try:
        return pd.StringDtype(storage, na_value=np.nan)
    except TypeError:  # pandas 2.2: the NaN variant is a storage of its own, of Arrow only
        if storage == "python":
            return np.dtype(object)  # how pandas 2.2 holds text with NaN as missing without Arrow
        numpy_variant: Any = "pyarrow_numpy"
        return pd.StringDtype(numpy_variant)


def _is(kind: type) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, kind)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


def _tuple_of(check: Callable[[Any], bool], length: int | None = None) -> Callable[[Any], bool]:
    return lambda value: (type(value) is tuple and (length is None or len(value) == length)
                          and all(map(check, value)))


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _is_table(value: Any) -> bool:
    return isinstance(value, (pd.Series, pd.DataFrame))


def _is_cells(value: Any) -> bool:
    return _is_number(value) or _is_table(value)


_RELEASE_FIELDS: Mapping[str, Callable[[Any], bool]] = {
    "query": _is_str, "columns": _tuple_of(lambda label: True), "mechanism": _is_str, "cost": _is(Cost),
    "std": _is_cells, "lower": _is_cells, "upper": _is_cells, "level": _is_number,
    "bounds": _optional(_tuple_of(_is_number, 2)), "note": _is_str, "clipping": _optional(_is(Clipping)),
    "clamp": _optional(_tuple_of(_is_cells, 2)), "domain": _optional(_tuple_of(_is_number, 2)),
    "rank_reach": _optional(_is_cells), "weak_bounds": lambda flags: _is_bool(flags) or _is_table(flags),
}

_Decode = Callable[[_Decoder, dict[str, Any], int], Any]

# Tags of plain values: arguments and results alike.
_DECODERS: Mapping[str, _Decode] = {
    "$ref": _Decoder.ref, "$float": _Decoder.float_, "$tuple": _Decoder.tuple_, "$dict": _Decoder.dict_,
    "$slice": _Decoder.slice_, "$range": _Decoder.range_, "$fraction": _Decoder.fraction, "$set": _Decoder.set_,
    "$frozenset": _Decoder.frozenset_, "$ndarray": _Decoder.ndarray,
    "$unreleased": _Decoder.unreleased, "$nat": _Decoder.nat, "$na": _Decoder.na,
    "$timestamp": _Decoder.timestamp, "$timedelta": _Decoder.timedelta, "$period": _Decoder.period,
    "$tz": _Decoder.tz, "$agg": _Decoder.agg,
    "$interval": _Decoder.interval, "$dtype": _Decoder.dtype, "$type": _Decoder.builtin_type, "$categorical": _Decoder.categorical,
    "$string": _Decoder.string, "$index": _Decoder.index, "$rangeindex": _Decoder.range_index,
    "$multiindex": _Decoder.multi_index, "$series": _Decoder.series, "$frame": _Decoder.frame,
}

# Tags of the server's answers: read only with allow_results=True.
_RESULT_DECODERS: Mapping[str, _Decode] = {
    "$dpfloat": _Decoder.dp_float, "$dpint": _Decoder.dp_int, "$dptimestamp": _Decoder.dp_timestamp,
    "$dptimedelta": _Decoder.dp_timedelta, "$dpchoice": _Decoder.dp_choice, "$release": _Decoder.release_tag,
    "$clipping": _Decoder.clipping, "$cost": _Decoder.cost, "$amount": _Decoder.amount,
    "$reading": _Decoder.reading, "$preview": _Decoder.preview, "$chisquare": _Decoder.chisquare,
    "$budget": _Decoder.budget, "$synthesis": _Decoder.synthesis,
}
