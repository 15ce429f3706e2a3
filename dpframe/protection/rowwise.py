"""Running a row-wise pandas operation on protected data without letting the data show through.

pandas decides some result types from the *values*: ``s.str.len()`` is int64
without missing values and float64 with them; ``s.where(c, nan)`` on integers
stays int64 only when ``c`` is all True; ``s.map({1: 10})`` and ``s.clip(0.5,
3)`` likewise. A dtype is visible (and queries branch on it), so each of these
would reveal a bit about the rows -- one person's bit, at delta = 0. Errors
and warnings do the same: ``"a" < 1`` raises only if such a value exists.

:func:`elementwise` closes these channels for every row-wise operation of a
protected object:

1. **Types from the schema.** The operation is first run on *empty* inputs of
   the same dtypes (a probe, which reads no data); its result types are the
   contract. Where an operation can produce missing values that the probed
   type cannot hold (text methods, object columns, callables), the contract
   uses the nullable variant (``Int64``, ``boolean``). The real result is
   converted to the contract.
2. **No errors or warnings from the data.** The real run happens with warnings
   and floating-point errors silenced. If it raises, the rows are evaluated
   in halves, recursively, and the rows on which the operation fails become
   missing (or 0 / False where the contracted type cannot hold a missing
   value). The result has the contracted type either way, so nothing shows
   whether a fallback happened (except in time, see ``docs/privacy-model.md``).

Errors raised by the probe come from the schema and the arguments alone and
are reported as they are.
"""

from __future__ import annotations

import datetime
import decimal
import numbers
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np
import pandas as pd
# pandas' own rule for the common type of several dtypes (extension types included); not in its public API.
from pandas.core.dtypes.cast import find_common_type  # type: ignore[attr-defined]

from dpframe.errors import DPFrameError
from dpframe.protection.analyst import interruptible, passed_on, plain_column, public_value
from dpframe.protection.labels import index_of
from dpframe.protection.rules import refusal

PandasObject = pd.DataFrame | pd.Series
Dtypes = Any  # one dtype (a Series result) or a Series of dtypes by column (a frame result)

_SMALLEST_PART = 1


@contextmanager
def quiet() -> Iterator[None]:
    """Silence warnings and floating-point errors while protected values are processed.

    A warning such as "divide by zero encountered" appears only if some value
    is zero: it must not reach the analyst. Code run inside is
    :func:`~dpframe.protection.analyst.interruptible`: a ``KeyboardInterrupt``
    it raises is data (a missing value), a real Ctrl-C stops it.

    >>> with quiet():
    ...     float(np.float64(1.0) / np.float64(0.0))
    inf
    """
    with interruptible(), warnings.catch_warnings(), np.errstate(all="ignore"), _no_silent_downcasting():
        warnings.simplefilter("ignore")
        yield


def _no_silent_downcasting() -> AbstractContextManager[Any]:
    """pandas 2's ``where``, ``fillna`` and ``replace`` infer a narrower type for an object result from *all*
    its values (``[1, 'a']`` with 'a' replaced by 2.5 becomes floats: 1 -> 1.0), so one row would change
    another's; pandas 3 no longer does (and deprecates the option that stops it)."""
    if pd.__version__ >= "3":
        return nullcontext()
    return pd.option_context("future.no_silent_downcasting", True)


@contextmanager
def shielded(operation: str) -> Iterator[None]:
    """Replace an exception raised while processing protected values by one that says nothing about them.

    For the structural operations (merge, sort, explode) that have no row-by-row
    fallback: the schema checks before them rule out the known failures; this
    keeps an unforeseen one from printing a value.
    """
    try:
        with quiet():
            yield
    except DPFrameError:
        raise
    except BaseException as error:
        passed_on(error)
        raise DPFrameError(
            f"{operation} failed on the protected data ({type(error).__name__}); the message is withheld "
            "because it could describe a record. Check the column types, or try the operation on public data."
        ) from None


def is_constant(value: Any) -> bool:
    """True for a public scalar that a row-wise operation may use: numbers, text, dates, missing markers.

    >>> is_constant(3), is_constant("x"), is_constant(None), is_constant([1, 2]), is_constant(pd.Series([1]))
    (True, True, True, False, False)
    """
    # The real type, not isinstance: an object's __class__ property could claim to be text.
    return value is None or value is pd.NA or value is pd.NaT or issubclass(
        type(value),
        (numbers.Number, str, bytes, np.generic, datetime.date, datetime.time, datetime.timedelta,
         pd.Timestamp, pd.Timedelta, pd.Period, pd.Interval, decimal.Decimal),
    )


def constant(value: Any, operation: str) -> Any:
    """``value`` as the plain public scalar a row-wise operation uses; refused when it is no constant.

    A public Series, array or list would be lined up with the private rows;
    an object of the analyst's would run its ``__eq__`` against them
    (:func:`~dpframe.protection.analyst.public_value`).

    >>> class Sneaky(int):
    ...     def __eq__(self, other): raise ValueError(other)
    >>> type(constant(Sneaky(3), "==")).__name__
    'int'
    """
    if not is_constant(value):
        raise refusal(operation, "mixing", f"the other operand is a {type(value).__name__}, not a constant or a "
                                           "column of the same protected rows")
    return public_value(value, operation)


def hashable_or_missing(series: pd.Series[Any]) -> pd.Series[Any]:
    """An object column whose unhashable values (lists, dicts) are missing.

    Hashing is what row labels, join keys and category codes need; an error
    raised by one such value would show that it exists.

    >>> hashable_or_missing(pd.Series([[1], "a"], dtype=object)).tolist()
    [None, 'a']
    """
    if series.dtype != object:
        return series

    def hashable(value: Any) -> Any:
        try:
            hash(value)
        except BaseException as error:  # plain values raise only TypeError; any other object is data too
            passed_on(error)
            return None
        return value

    # Built as objects: Series.map would infer a type from the values.
    return pd.Series([hashable(v) for v in series.to_numpy()], index=series.index, dtype=object, name=series.name)


def time_unit(dtype: Any) -> str:
    """The unit of a datetime64 or timedelta64 dtype, with or without a time zone: "s", "ms", "us" or "ns".

    >>> time_unit(pd.DatetimeTZDtype("ns", "UTC")), time_unit(np.dtype("timedelta64[s]"))
    ('ns', 's')"""
    if isinstance(dtype, pd.DatetimeTZDtype):
        return str(dtype.unit)
    return str(np.datetime_data(dtype)[0])


def holds_missing(dtype: Any) -> bool:
    """True when a column of ``dtype`` can hold a missing value (numpy integers and booleans cannot).

    >>> holds_missing(np.dtype("int64")), holds_missing(np.dtype("float64")), holds_missing(pd.Int64Dtype())
    (False, True, True)
    """
    return not (isinstance(dtype, np.dtype) and dtype.kind in "iub")


def widened(dtype: Any) -> Any:
    """``dtype``, or its nullable variant when it cannot hold missing values.

    >>> widened(np.dtype("int32")), widened(np.dtype("bool")), widened(np.dtype("float64"))
    (Int32Dtype(), BooleanDtype, dtype('float64'))
    """
    if holds_missing(dtype):
        return dtype
    if dtype.kind == "b":
        return pd.BooleanDtype()
    prefix = "UInt" if dtype.kind == "u" else "Int"
    return pd.api.types.pandas_dtype(f"{prefix}{dtype.itemsize * 8}")


def constant_dtype(value: Any) -> Any:
    """The dtype pandas gives a column holding ``value``.

    >>> constant_dtype(1), constant_dtype(0.5), constant_dtype(None)
    (dtype('int64'), dtype('float64'), dtype('O'))
    """
    with quiet():
        return pd.Series([value]).dtype


def common_dtype(dtypes: Sequence[Any]) -> Any:
    """The type that holds values of all ``dtypes``, by pandas' own rule.

    >>> common_dtype([np.dtype("int64"), np.dtype("float64")]), common_dtype([np.dtype("bool"), np.dtype("float64")])
    (dtype('float64'), dtype('O'))
    """
    return find_common_type(list(dtypes))


def missing_value(dtype: Any) -> Any:
    """What a row becomes when an operation fails on it: missing, or 0 / False for numpy integers and booleans."""
    if holds_missing(dtype):
        return None
    return np.zeros(1, dtype=dtype)[0]


def empty_like(operand: Any) -> Any:
    """A pandas operand with no rows (same dtypes, columns and index levels); other operands as they are.

    A sliced MultiIndex keeps every value of its levels, used or not: they are dropped, so that an operation
    on the levels (sorting them) meets no value.

    >>> index = pd.MultiIndex.from_arrays([pd.Index(["a", 1], dtype=object), [0, 1]])
    >>> empty_like(pd.Series([1, 2], index=index)).index.levels[0].tolist()
    []
    """
    if not isinstance(operand, (pd.DataFrame, pd.Series)):
        return operand
    empty = operand.iloc[:0]
    if isinstance(empty.index, pd.MultiIndex):
        empty = empty.set_axis(empty.index.remove_unused_levels(), axis=0)
    return empty


def _dtypes(result: PandasObject) -> Dtypes:
    return result.dtypes if isinstance(result, pd.DataFrame) else result.dtype


def _widen_all(dtypes: Dtypes) -> Dtypes:
    if isinstance(dtypes, pd.Series):
        return dtypes.map(widened)
    return widened(dtypes)


def _object_input(operands: Sequence[Any]) -> bool:
    for operand in operands:
        if isinstance(operand, pd.Series) and operand.dtype == object:
            return True
        if isinstance(operand, pd.DataFrame) and (operand.dtypes == object).any():
            return True
    return False


def probe(func: Callable[..., Any], operands: Sequence[Any], operation: str) -> PandasObject:
    """``func`` on empty operands: the result's structure and types, decided without reading a row.

    Errors are reported as they are (they come from the dtypes and the
    arguments), prefixed with the operation.
    """
    try:
        with quiet():
            result = func(*[empty_like(o) for o in operands])
    except DPFrameError:
        raise
    except Exception as error:
        raise TypeError(f"{operation}: {error} (decided from the column types; no data was read)") from None
    if not isinstance(result, (pd.DataFrame, pd.Series)):
        raise TypeError(f"{operation} does not give one value per row, so it cannot be kept on protected data")
    return result


def elementwise(
    func: Callable[..., Any],
    operands: Sequence[Any],
    *,
    operation: str,
    widen: bool = False,
    dtypes: Dtypes | None = None,
    total: bool = False,
) -> Any:
    """Apply the row-wise ``func(*operands)`` with a result type fixed in advance (module docstring).

    The result is a Series or DataFrame, as the probe's.

    ``operands`` are the aligned pandas data of one protected row set and
    public constants. ``dtypes`` fixes the result types; otherwise they come
    from :func:`probe`, widened to nullable types when ``widen`` is set or an
    operand has object dtype -- unless ``total``: the operation gives a value
    for every pair of plain values (``==``, ``!=``), so pandas' own types hold.

    >>> s = pd.Series(["a", None, "ccc"], dtype=object)
    >>> elementwise(lambda x: x.str.len(), [s], operation="str.len", widen=True).tolist()
    [1, <NA>, 3]
    >>> elementwise(lambda x: x < 2, [pd.Series([1, "b"], dtype=object)], operation="<").tolist()
    [True, <NA>]
    >>> elementwise(lambda x: x == 2, [pd.Series([2, "b", None], dtype=object)], operation="==", total=True).dtype
    dtype('bool')
    """
    template = probe(func, operands, operation)
    if dtypes is None:
        dtypes = _dtypes(template)
        if widen or (_object_input(operands) and not total):
            dtypes = _widen_all(dtypes)
    try:
        with quiet():
            result = func(*operands)
        _check_shape(result, template)
        return conform(result, dtypes, template)
    except BaseException as error:
        passed_on(error)
    return conform(_by_parts(func, operands, template, dtypes), dtypes, template)


def _check_shape(result: Any, template: PandasObject, rows: int | None = None) -> None:
    """Raise when ``result`` is not shaped and typed as the probe said: another kind of object or length, or
    floats where the probe gave integers. pandas turns a whole integer column into floats when one row divides
    by zero (or a duration by NaT), and floats round integers above 2**53: one row would change the others.
    The rows that do it are then found by halving, and become missing."""
    if not isinstance(result, type(template)) or (rows is not None and len(result) != rows):
        raise TypeError("the result changed shape")
    made = result.dtypes if isinstance(result, pd.DataFrame) else [result.dtype]
    probed = template.dtypes if isinstance(template, pd.DataFrame) else [template.dtype]
    if any(getattr(p, "kind", None) in ("i", "u") and getattr(m, "kind", None) == "f" for m, p in zip(made, probed)):
        raise TypeError("integers became floats")


def structural(func: Callable[..., Any], operands: Sequence[Any], operation: str) -> Any:
    """A structural operation (concat, melt, stack, explode) with its types -- of columns and of row-label
    levels -- fixed by a probe: pandas chooses them from the values (it leaves empty or all-missing pieces
    out, infers the type of object labels)."""
    template = probe(func, operands, operation)
    result = func(*_same_units(operands, template))
    dtypes = template.dtypes if isinstance(template, pd.DataFrame) else template.dtype
    return conform_labels(conform(result, dtypes, template), template)


def _same_units(operands: Sequence[Any], template: PandasObject) -> list[Any]:
    """The operands with their dates and durations in the units the result will have (:func:`convert`: a value
    out of that unit's range becomes missing). pandas would convert them while combining, and raise -- only
    for such a value -- when one does not fit (``3000-01-01`` in nanoseconds)."""
    wanted = {name: dtype for name, dtype in _named_dtypes(template) if _family(dtype)}
    by_family: dict[Any, set[Any]] = {}
    for dtype in wanted.values():
        by_family.setdefault(_family(dtype), set()).add(dtype)

    def target(name: Any, dtype: Any) -> Any:
        family = _family(dtype)
        if not family:
            return dtype
        if name in wanted and _family(wanted[name]) == family:
            return wanted[name]
        found = by_family.get(family, set())
        return next(iter(found)) if len(found) == 1 else dtype

    aligned: list[Any] = []
    for operand in operands:
        if isinstance(operand, pd.DataFrame):
            changes = {i: target(name, dtype) for i, (name, dtype) in enumerate(operand.dtypes.items())}
            changes = {i: t for i, t in changes.items() if t != operand.dtypes.iloc[i]}
            if changes:
                operand = operand.copy(deep=False)
                for position, dtype in changes.items():
                    operand.isetitem(position, convert(operand.iloc[:, position], dtype))  # type: ignore[arg-type]
        elif isinstance(operand, pd.Series) and target(operand.name, operand.dtype) != operand.dtype:
            operand = convert(operand, target(operand.name, operand.dtype))
        aligned.append(operand)
    return aligned


def _named_dtypes(template: PandasObject) -> list[tuple[Any, Any]]:
    if isinstance(template, pd.DataFrame):
        return list(template.dtypes.items())
    return [(template.name, template.dtype)]


def _family(dtype: Any) -> tuple[str, Any] | None:
    """Dates (per time zone) and durations; None for other types."""
    kind = getattr(dtype, "kind", None)
    return (kind, str(getattr(dtype, "tz", None))) if kind in ("M", "m") else None


def conform_labels(result: Any, template: Any) -> Any:
    """``result`` with each row-label level converted to the dtype of the template's level."""
    index, wanted = result.index, template.index
    levels, changed = [], False
    for i in range(index.nlevels):
        level = index.get_level_values(i)
        dtype = wanted.get_level_values(i).dtype
        if level.dtype != dtype:
            values = convert(pd.Series(level.to_numpy(dtype=object), dtype=object), dtype)
            level, changed = pd.Index(values, dtype=dtype, name=level.name), True
        levels.append(level)
    if not changed:
        return result
    labels = index_of(levels)
    return result.set_axis(labels, axis=0)


def _length(operands: Sequence[Any]) -> int:
    return next(len(o) for o in operands if isinstance(o, (pd.DataFrame, pd.Series)))


def _by_parts(func: Callable[..., Any], operands: Sequence[Any], template: PandasObject, dtypes: Dtypes) -> Any:
    """Evaluate ``func`` on halves of the rows, recursively; rows on which it fails become missing."""
    pieces: list[PandasObject] = []

    def run(start: int, stop: int) -> None:
        part = [o.iloc[start:stop] if isinstance(o, (pd.DataFrame, pd.Series)) else o for o in operands]
        try:
            with quiet():
                result = func(*part)
            _check_shape(result, template, stop - start)
            pieces.append(conform(result, dtypes, template))
            return
        except BaseException as error:
            passed_on(error)
            if stop - start > _SMALLEST_PART:
                middle = (start + stop) // 2
                run(start, middle)
                run(middle, stop)
                return
        index = next(o for o in part if isinstance(o, (pd.DataFrame, pd.Series))).index
        pieces.append(_missing_rows(template, dtypes, index))

    n = _length(operands)
    if n == 0:
        return template
    run(0, n)
    return pd.concat(pieces)


def _missing_rows(template: PandasObject, dtypes: Dtypes, index: pd.Index[Any]) -> PandasObject:
    if isinstance(template, pd.DataFrame):
        columns = {i: pd.Series([missing_value(d)] * len(index), index=index, dtype=d) for i, d in enumerate(dtypes)}
        frame = pd.DataFrame(columns, index=index)
        frame.columns = template.columns
        return frame
    missing: pd.Series[Any] = pd.Series([missing_value(dtypes)] * len(index), index=index, dtype=dtypes,
                                        name=template.name)
    return missing


def conform(result: Any, dtypes: Dtypes, template: Any = None) -> Any:
    """``result`` converted to ``dtypes`` (per column for frames), without raising on any value.

    A missing value of an object column is None, however pandas wrote it: pandas writes None or nan
    depending on the *other* values (``.str`` methods, ``explode``, ``melt``), so the marker in one row would
    tell about another.

    >>> conform(pd.Series(["a", float("nan"), None], dtype=object), np.dtype(object)).tolist()
    ['a', None, None]
    """
    if isinstance(result, pd.DataFrame):
        if template is not None and not result.columns.equals(template.columns):
            raise DPFrameError("a row-wise operation produced columns that depend on the data; it is refused")
        out = result.copy(deep=False)
        for position, dtype in enumerate(dtypes):
            column = out.iloc[:, position]
            converted = one_missing(convert(column, dtype))
            if converted is not column:
                # A Series keeps its dtype; an array would be re-inferred (pandas-stubs list no Series here).
                out.isetitem(position, converted)  # type: ignore[arg-type]
        return out
    if isinstance(template, pd.Series):
        result = result.rename(template.name)
    return one_missing(convert(result, dtypes))


def one_missing(series: pd.Series[Any]) -> pd.Series[Any]:
    """An object column of plain values whose missing values are all None (other columns as they are).

    Plain (:func:`~dpframe.protection.analyst.plain_column`): pandas' own methods return lists (``str.split``),
    and a ufunc of ``np.frompyfunc`` whatever its function returns. Missing values: see :func:`conform`.
    """
    if series.dtype != object:
        return series
    series = plain_column(series)
    values = series.to_numpy(dtype=object)
    missing = pd.isna(values)
    if not missing.any() or all(v is None for v in values[missing]):
        return series
    values = values.copy()
    values[missing] = None
    return pd.Series(values, index=series.index, name=series.name, dtype=object)


def convert(series: pd.Series[Any], dtype: Any) -> pd.Series[Any]:
    """``series.astype(dtype)``, where values that do not convert become missing (or 0 / False).

    >>> convert(pd.Series(["1", "x", None], dtype=object), np.dtype("float64")).tolist()
    [1.0, nan, nan]
    >>> convert(pd.Series([1.0, float("nan")]), pd.Int64Dtype()).tolist()
    [1, <NA>]
    """
    if series.dtype == dtype:
        return series
    try:
        with quiet():
            converted: pd.Series[Any] = series.astype(dtype)
        return converted
    except BaseException as error:
        passed_on(error)
    if len(series) == 1:
        missing: pd.Series[Any] = pd.Series([missing_value(dtype)], index=series.index, dtype=dtype, name=series.name)
        return missing
    middle = len(series) // 2
    joined: pd.Series[Any] = pd.concat([convert(series.iloc[:middle], dtype), convert(series.iloc[middle:], dtype)])
    return joined
