"""pandas' functions that take a column, under the same names, for protected objects.

pandas' *functions* (not methods) cannot take a protected object without
patching pandas: ``pd.to_datetime(p["x"])`` is refused (a protected object
stops every pandas function) with a message naming the function here. Each
runs pandas' own function row by row (:func:`~dpframe.protection.rowwise.elementwise`),
with a result type fixed by a probe on no rows; plain data goes straight to pandas.

Where pandas would decide from the values, these decide from the arguments:

* ``to_datetime`` of text needs ``format=`` (``"ISO8601"``, ``"%Y-%m-%d"``, or
  ``"mixed"``, which reads each value on its own): without one pandas infers
  the format from the first value, so one person's text would decide how
  everyone's is read. A value that does not parse is ``NaT`` whatever
  ``errors=`` says (pandas would raise, only where such a value exists).
  Text with UTC offsets needs ``utc=True``: pandas would give the offset's
  zone, read from the values. With a format that may read offsets
  (``"ISO8601"``, ``"mixed"``, or one with ``%z``/``%Z``), ``utc=`` must be
  given: ``utc=True`` reads instants in UTC (offsets applied, as pandas),
  ``utc=False`` text without offsets (a value with one is then ``NaT``).
* ``to_numeric`` gives ``float64`` (pandas gives ``int64`` when every value
  is whole); a value that does not parse is ``NaN`` whatever ``errors=`` says.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np
import pandas as pd

from dpframe.protection.analyst import public_value
from dpframe.protection.base import Protected, stand_in
from dpframe.protection.frame import ProtectedFrame
from dpframe.protection.rowwise import time_unit
from dpframe.protection.rules import refusal
from dpframe.protection.series import ProtectedSeries

# The unit pandas gives dates parsed from text that need no finer one: on no rows it gives another, and with
# values the unit they need (one person's nanoseconds would change everyone's type).
_TEXT_UNIT: str = pd.to_datetime(pd.Series(["2000-01-01 00:00:00"])).dt.unit


@overload
def to_datetime(arg: ProtectedSeries | ProtectedFrame, errors: str = ..., dayfirst: bool = ..., yearfirst: bool = ...,
                utc: bool | None = ..., format: str | None = ..., exact: bool | None = ..., unit: str | None = ...,
                origin: Any = ...) -> ProtectedSeries: ...


@overload
def to_datetime(arg: Any, errors: str = ..., dayfirst: bool = ..., yearfirst: bool = ..., utc: bool | None = ...,
                format: str | None = ..., exact: bool | None = ..., unit: str | None = ..., origin: Any = ...) -> Any: ...


def to_datetime(arg: Any, errors: str = "raise", dayfirst: bool = False, yearfirst: bool = False,
                utc: bool | None = None,
                format: str | None = None, exact: bool | None = None, unit: str | None = None,  # noqa: A002 -- pandas' name
                origin: Any = "unix") -> Any:
    """``pd.to_datetime`` for a protected column or frame of date parts (module docstring); plain data goes to
    pandas.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"t": ["2013-01-01 05:00", "not a date"], "year": [2013, 2013], "month": [1, 13],
    ...                   "day": [1, 1]}).dp.protect(epsilon=1.0)
    >>> when = dpframe.to_datetime(p["t"], format="ISO8601", utc=False)
    >>> str(when.dtype)[:11] + "[...]", when.dp.unprotected().isna().tolist()
    ('datetime64[...]', [False, True])
    >>> dpframe.to_datetime(p[["year", "month", "day"]]).dp.unprotected().isna().tolist()
    [False, True]
    """
    # exact=None: pandas' own default (which it refuses to be given with format='ISO8601' or 'mixed').
    options = {"dayfirst": dayfirst, "yearfirst": yearfirst, "utc": bool(utc), "format": format, "unit": unit,
               "origin": origin, **({} if exact is None else {"exact": exact})}
    if stand_in(arg) is not None:
        return arg.__dpframe_function__("to_datetime", (arg,), {"errors": errors, **options, "utc": utc})
    if not isinstance(arg, Protected):
        return pd.to_datetime(arg, errors=errors, **options)  # type: ignore[call-overload]
    operation = "dpframe.to_datetime"
    options = {name: public_value(value, operation) for name, value in options.items()}
    if errors not in ("raise", "coerce", "ignore"):
        raise ValueError(f"errors must be 'raise', 'coerce' or 'ignore', got {errors!r}")
    dtype: Any = None  # from the probe
    text = False
    if isinstance(arg, ProtectedSeries):
        # A categorical column is read by its categories' type (categories of text are text).
        values = arg.dtype.categories.dtype if isinstance(arg.dtype, pd.CategoricalDtype) else arg.dtype
        text = pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)
        if text and format is None and unit is None:
            raise refusal(f"{operation} of text without format=", "private_values",
                          "pandas would infer the format from the first value", instead="pass format=, e.g. "
                          "format='ISO8601', format='%Y-%m-%d', or format='mixed' to read each value on its own")
        if text and utc is None and isinstance(format, str) and (format in ("ISO8601", "mixed") or "%z" in format
                                                                 or "%Z" in format):
            raise refusal(f"{operation}(format={format!r}) without utc=", "private_values",
                          "text in this format may carry UTC offsets ('Z', '+02:00'), and pandas would give the "
                          "column the offsets' zone, read from the values",
                          instead="pass utc=True to read instants in UTC (offsets applied), or utc=False for text "
                                  "without offsets (a value with one is then missing)")
        if pd.api.types.is_datetime64_any_dtype(arg.dtype):  # dates already: as they are, or in UTC
            dtype = pd.api.types.pandas_dtype(f"datetime64[{_unit(arg.dtype)}, UTC]") if utc else arg.dtype
        elif text and unit is None:
            dtype = pd.api.types.pandas_dtype(f"datetime64[{_TEXT_UNIT}{', UTC' if utc else ''}]")
        elif text:  # numbers held as objects or text, with unit=: pandas' type for numbers (a probe on no objects
            # gives whole seconds)
            dtype = pd.to_datetime(pd.Series([], dtype="float64"), errors="coerce", **options).dtype
        elif unit is None:  # numbers are nanoseconds since the origin, as in pandas (a probe on no rows says s)
            dtype = pd.api.types.pandas_dtype(f"datetime64[ns{', UTC' if utc else ''}]")

    def parse(data: Any) -> Any:
        return pd.to_datetime(data, errors="coerce", **options)

    def run(data: Any) -> Any:
        parsed = parse(data)
        if text and not utc and getattr(parsed.dtype, "tz", None) is not None:  # offsets, read as asked: missing
            return pd.Series(pd.NaT, index=parsed.index, dtype=dtype, name=parsed.name)
        if not isinstance(data, pd.Series):
            return parsed
        # pandas gives a whole batch the finest unit one value needs (nanoseconds, for one person's 9 digits), and
        # values that unit cannot hold (before 1677) come out missing: such rows are read again on their own, so
        # that no value changes another's.
        unit = _unit(dtype if dtype is not None else parse(data.iloc[:0]).dtype)
        if unit is None or _unit(parsed.dtype) in (None, unit):
            return parsed
        parsed = parsed.dt.as_unit(unit)
        for position in np.flatnonzero((parsed.isna() & data.notna()).to_numpy()):
            parsed.iloc[position] = parse(data.iloc[position:position + 1]).dt.as_unit(unit).iloc[0]
        return parsed

    result: ProtectedSeries = arg._rowwise(run, operation=operation, dtypes=dtype)
    return result


def _unit(dtype: Any) -> str | None:
    """The unit of a datetime dtype (:func:`~dpframe.protection.rowwise.time_unit`); None for any other."""
    return time_unit(dtype) if pd.api.types.is_datetime64_any_dtype(dtype) else None


@overload
def to_numeric(arg: ProtectedSeries, errors: str = ..., downcast: str | None = ...) -> ProtectedSeries: ...


@overload
def to_numeric(arg: Any, errors: str = ..., downcast: str | None = ...) -> Any: ...


def to_numeric(arg: Any, errors: str = "raise", downcast: str | None = None) -> Any:
    """``pd.to_numeric`` for a protected column (module docstring); plain data goes to pandas.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": ["1", "2.5", "n/a"]}).dp.protect(epsilon=1.0)
    >>> dpframe.to_numeric(p["x"]).dp.unprotected().tolist()
    [1.0, 2.5, nan]
    """
    if stand_in(arg) is not None:
        return arg.__dpframe_function__("to_numeric", (arg,), {"errors": errors, "downcast": downcast})
    if not isinstance(arg, Protected):
        return pd.to_numeric(arg, errors=errors, downcast=downcast)  # type: ignore[call-overload]
    if not isinstance(arg, ProtectedSeries):
        raise TypeError("dpframe.to_numeric takes one protected column, as pd.to_numeric takes a Series")
    if errors not in ("raise", "coerce", "ignore"):
        raise ValueError(f"errors must be 'raise', 'coerce' or 'ignore', got {errors!r}")
    if downcast is not None:
        raise refusal("dpframe.to_numeric(downcast=)", "private_values", "pandas picks the type from the values",
                      instead="convert with .astype(...) to the type you want")
    if pd.api.types.is_numeric_dtype(arg.dtype) and not pd.api.types.is_bool_dtype(arg.dtype):
        return arg
    return arg.astype(np.float64)
