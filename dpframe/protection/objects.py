"""ProtectedFrame and ProtectedSeries: protected data with an allow-list of stable operations.

A protected object *holds* a pandas object (its rows, with the privacy unit
of each in an index level) but is not one: it offers exactly the operations
whose effect on one person dpframe knows (``dpframe.protection.rules``), and
nothing else. Every other pandas attribute is refused with a message that
says why and what to do instead, so a method added to pandas tomorrow is
refused too (fail closed). pandas and numpy functions that are handed a
protected object cannot read it either: it is no DataFrame, and converting
it to an array is refused.

Three things travel with every derived object:

* its **protection** (budget and unit definition), shared by everything
  derived from one ``protect()``;
* its **rows**: an identity of the sequence of rows. Operations that keep the
  rows (column selection, row-wise arithmetic, ``astype``) keep it; those
  that change them (filters, merges, sorting) make a new one. Two objects
  combine row by row only when they have the same rows and protection, so a
  value can never land in another person's row.
* the **sample** the rows were drawn from, if any (``p.dp.sample(rate)``):
  its account charges queries their amplified cost.

Row-wise results get their types from the schema (:mod:`.rowwise`), and
the few structural operations run with their errors withheld.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from fractions import Fraction
from types import FrameType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, TypeVar, overload

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.amplification import SampleAccount
from dpframe.errors import DPFrameError, RefusedError
from dpframe.protection import rowwise
from dpframe.protection.analyst import (
    boxed,
    boxing,
    guarded,
    holds_objects,
    passed_on,
    plain_labels,
    public_dtype,
    public_value,
    sorting_key,
    unboxed,
)
from dpframe.protection.labels import index_of, labelled, values_of
from dpframe.protection.lineage import Lineage, carried, labels_of
from dpframe.protection.values import lookup
from dpframe.protection.rowwise import (
    common_dtype,
    constant,
    constant_dtype,
    convert,
    elementwise,
    holds_missing,
    is_constant,
    missing_value,
    quiet,
    shielded,
    structural,
    widened,
)
from dpframe.protection.rules import attribute_refusal, refusal
from dpframe.protection.units import UNIT_LEVEL, Protection

if TYPE_CHECKING:
    from dpframe.accessor import DataFrameAccessor, SeriesAccessor
    from dpframe.protection.combine import MergeHow, Validate

P = TypeVar("P", bound="Protected")

# Marks data handed out by ``p.dp.unprotected()``: it may not be protected again or merged back.
UNPROTECTED_MARK = "dpframe.unprotected"


class Rows:
    """The identity of one sequence of protected rows, and the Poisson sample they come from (None: all units).

    Rows kept by a filter also know the rows they were filtered from (``parent``), which of them were kept
    (``kept``, a private mask that never leaves the library) and the protected condition that chose them:
    ``p.loc[cond, "x"] *= 2`` puts the filtered values back into the very rows they came from.
    """

    __slots__ = ("sample", "parent", "kept", "condition")

    def __init__(self, sample: SampleAccount | None = None, *, parent: Rows | None = None,
                 kept: NDArray[np.bool_] | None = None, condition: Any = None) -> None:
        self.sample = sample
        self.parent, self.kept, self.condition = parent, kept, condition

    @property
    def rate(self) -> Fraction:
        """The rate at which the units of these rows were sampled (1 when they were not)."""
        return Fraction(1) if self.sample is None else self.sample.rate

    def derived(self) -> Rows:
        """A new row sequence made from these rows (from the same sample)."""
        return Rows(self.sample)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Rows, (self.sample,))


def _pandas_function_offered() -> str | None:
    """The name of the pandas function on the call stack that dpframe offers for protected objects, if any (found
    from the code being run, never from the data)."""
    from dpframe.protection.functions import OFFERED

    frame: FrameType | None = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return None
        if frame.f_code.co_name in OFFERED and frame.f_globals.get("__name__", "").startswith("pandas."):
            return frame.f_code.co_name
        frame = frame.f_back
    return None


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


def _no_inplace(operation: str, inplace: bool) -> None:
    if inplace:
        raise refusal(f"{operation}(inplace=True)", "inplace")


class Protected:
    """What protected frames and series share (see the module docstring)."""

    __slots__ = ("_private", "_protection", "_rows", "_lineage")
    # Binary operations with pandas objects defer to us, so a public Series + protected
    # column is refused with our message instead of being computed by pandas.
    __pandas_priority__ = 5000
    __hash__ = None  # type: ignore[assignment]
    _kind: ClassVar[str] = "Protected"
    _pandas: ClassVar[type]

    _private: Any
    _protection: Protection
    _rows: Rows
    # Each column's expression, by label (dpframe.protection.lineage): what earlier releases of it made public.
    _lineage: dict[Hashable, Lineage]

    def __init__(self, data: Any, protection: Protection, rows: Rows,
                 lineage: Mapping[Hashable, Lineage] | None = None) -> None:
        if UNIT_LEVEL not in data.index.names:  # fail closed: no protected data without its unit record
            raise DPFrameError("this operation lost the record of whose rows these are, so it is refused; "
                               "report it as a dpframe bug")
        object.__setattr__(self, "_private", plain_labels(data))
        object.__setattr__(self, "_protection", protection)
        object.__setattr__(self, "_rows", rows)
        # Columns not in ``lineage`` hold new expressions.
        object.__setattr__(self, "_lineage", carried(lineage or {}, labels_of(data)))

    # -- building derived objects ------------------------------------------------
    @overload
    def _wrap(self, data: pd.DataFrame, rows: Rows | None = ..., protection: Protection | None = ..., *,
              lineage: Mapping[Hashable, Lineage] | None = ...) -> ProtectedFrame:
        ...

    @overload
    def _wrap(self, data: pd.Series[Any], rows: Rows | None = ..., protection: Protection | None = ..., *,
              lineage: Mapping[Hashable, Lineage] | None = ...) -> ProtectedSeries:
        ...

    def _wrap(self, data: Any, rows: Rows | None = None, protection: Protection | None = None, *,
              lineage: Mapping[Hashable, Lineage] | None = None) -> Any:
        """``data`` as a protected object: the same rows unless ``rows`` says otherwise; new expressions unless
        ``lineage`` (by label) says which columns hold which (:meth:`_same_values`)."""
        if rows is None and not data.index.equals(self._private.index):
            # Fail closed: an operation kept as row-wise changed the rows or their privacy units.
            raise DPFrameError("this operation changed which rows, or whose rows, the data holds, so it is "
                               "refused; report it as a dpframe bug")
        kind: type[Protected] = ProtectedFrame if isinstance(data, pd.DataFrame) else ProtectedSeries
        return kind(data, protection or self._protection, rows or self._rows, lineage)

    def _same_values(self, data: Any, *, relabelled: bool = False) -> dict[Hashable, Lineage]:
        """The lineage of ``data``, whose columns hold these columns' values unchanged: found by label, or, when
        ``relabelled`` (a rename), by position."""
        labels = labels_of(data)
        return carried(self._lineage, labels, dict(zip(labels, labels_of(self._private))) if relabelled else None)

    def _same_rows(self, other: Protected, operation: str) -> None:
        if other._protection.key != self._protection.key:
            raise refusal(operation, "mixing", "the two objects come from different protect() calls")
        if other._rows is not self._rows:
            raise refusal(operation, "mixing", "the two objects hold different rows (one was filtered, sorted, "
                                               "sampled or merged since they were the same frame)")

    def _operand(self, value: Any, operation: str, *, aligned: bool = True) -> Any:
        """The pandas data of a protected operand with the same rows, or a public constant.

        ``aligned``: the operand meets this object in one pandas operation, so a frame and a
        series cannot mix (pandas would line the series' row labels up with the columns).
        """
        if isinstance(value, Protected):
            self._same_rows(value, operation)
            if aligned and value.ndim != self.ndim:
                raise TypeError(f"{operation} between a protected frame and a protected series: combine the "
                                "series with one column at a time, e.g. p['a'] + p['b']")
            return value._private
        return constant(value, operation)

    def _rowwise(
        self, func: Callable[..., Any], *others: Any, operation: str, widen: bool = False, dtypes: Any = None,
        total: bool = False,
    ) -> Any:
        """A row-wise operation on this object's data (and same-rows operands): same rows, typed by schema
        (``total``: see :func:`~dpframe.protection.rowwise.elementwise`)."""
        operands = [self._private, *(self._operand(o, operation) for o in others)]
        result: Any = elementwise(func, operands, operation=operation, widen=widen, dtypes=dtypes, total=total)
        return self._wrap(result)

    def _rowwise_like(
        self: P, func: Callable[..., Any], *others: Any, operation: str, widen: bool = False, dtypes: Any = None
    ) -> P:
        """:meth:`_rowwise` for operations whose result is the same kind of object (a series gives a series)."""
        result = self._rowwise(func, *others, operation=operation, widen=widen, dtypes=dtypes)
        if not isinstance(result, type(self)):
            raise TypeError(f"{operation} gives a {type(result).__name__}, not a {type(self).__name__}")
        return result

    def _condition(self, cond: Any, operation: str) -> Any:
        """A boolean protected condition on these rows, as a plain boolean mask (missing counts as False)."""
        if callable(cond) and not isinstance(cond, Protected):
            cond = cond(self)
        if not isinstance(cond, Protected):
            raise refusal(operation, "mixing", "a condition must be computed from the same protected rows, "
                                               "e.g. p[p['age'] >= 40]")
        self._same_rows(cond, operation)
        data = cond._private
        columns = [data] if isinstance(data, pd.Series) else [data[c] for c in data.columns]
        for column in columns:
            if not pd.api.types.is_bool_dtype(column.dtype):
                raise TypeError(f"{operation} needs a boolean condition, got dtype {column.dtype}; compare "
                                "values to build one (e.g. p['x'] > 0), or convert with .astype('boolean')")
        with quiet():
            if isinstance(data, pd.Series):
                return data.fillna(False).astype(bool) if data.dtype != bool else data
            return data.fillna(False).astype(bool)

    def _filter(self: P, mask: Any, condition: Any = None) -> P:
        """The rows where ``mask`` holds, remembering which rows of these they are (:class:`Rows`)."""
        kept = np.asarray(mask, dtype=bool) if np.ndim(mask) == 1 else None
        rows = Rows(self._rows.sample, parent=self._rows, kept=kept, condition=condition)
        selected: P = self._wrap(self._private[mask], rows, lineage=self._lineage)
        return selected

    def _put_back(self, value: Any, condition: Any) -> pd.Series[Any] | None:
        """A protected series filtered from these rows, as a column of these rows (missing where it has no row);
        None for anything else. Decided from where ``value`` came from, never from the data: with the very
        protected condition that chose its rows, every chosen row has its value and the type stays; with another
        one (or a function, run again), the type holds missing values, as pandas' alignment would make some."""
        rows = getattr(value, "_rows", None)
        if not isinstance(value, ProtectedSeries) or rows is None or rows.parent is not self._rows \
                or rows.kept is None or value._protection.key != self._protection.key:
            return None
        data = value._private
        # The same protected condition object chose the same rows (protected objects are never changed in
        # place); a function is run again, on the frame as it is now, and may choose others.
        same = rows.condition is condition and isinstance(condition, Protected)
        dtype = data.dtype if same else widened(data.dtype)
        full = pd.Series(missing_value(dtype), index=self._private.index, dtype=dtype, name=data.name)
        with quiet():
            full[rows.kept] = convert(data, dtype).to_numpy()
        return full

    # -- what protected objects are, and are not -----------------------------
    @property
    def ndim(self) -> int:
        """1 for a series, 2 for a frame."""
        return int(self._private.ndim)

    def _refuse_attribute(self, name: str) -> NoReturn:
        if name.startswith("_"):
            raise AttributeError(name)
        if hasattr(self._pandas, name):
            raise attribute_refusal(self._kind, name)
        raise AttributeError(f"{self._kind} has no attribute or column {name!r}")

    if not TYPE_CHECKING:
        # Hidden from type checkers: every attribute not defined here is refused, so a type
        # checker should report ``s.mean()`` or a misspelt name as missing, not as Any.
        __getattr__ = _refuse_attribute

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot set {name!r} on a {self._kind}; assign columns with p[{name!r}] = value")

    @property
    def _typ(self) -> NoReturn:
        # pandas recognises its own objects by this attribute (its ABCDataFrame checks), so a
        # pandas function handed a protected object -- pd.concat, pd.merge, pd.DataFrame(p) --
        # stops here, with a message saying what to use instead.
        offered = _pandas_function_offered()
        if offered is not None:
            raise refusal(f"pd.{offered} given a {self._kind}", "public_rows",
                          "pandas functions read their arguments' values exactly",
                          instead=f"dpframe.{offered}(...), with the same arguments, runs it row by row")
        raise refusal(f"a pandas function given a {self._kind}", "public_rows",
                      "pandas functions read their arguments' values exactly")

    def __len__(self) -> int:
        raise refusal(f"len({self._kind})", "exact", "the number of rows is private")

    def __bool__(self) -> bool:
        raise refusal(f"bool({self._kind})", "exact", "a truth value would be read from the rows")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NoReturn:
        raise refusal(f"converting a {self._kind} to a numpy array", "exact")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> NoReturn:
        raise refusal(f"numpy.{getattr(func, '__name__', func)} on a {self._kind}", "exact",
                      "numpy functions read the values exactly (use the object's own methods, e.g. "
                      "p['x'].where(cond, other), or its .dp queries)")

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = f"numpy.{ufunc.__name__}"
        if method != "__call__" or "out" in kwargs:
            raise refusal(f"{name}.{method}", "exact", "it reduces or accumulates over rows")
        if "where" in kwargs:
            raise refusal(f"{name}(where=...)", "mixing", "the mask would be lined up with the rows")
        first = next(x for x in inputs if isinstance(x, Protected))
        operands = [first._operand(x, name) for x in inputs]
        return first._wrap(elementwise(lambda *xs: ufunc(*xs, **kwargs), operands, operation=name))

    def __iter__(self) -> Iterator[Any]:
        raise refusal(f"iterating over a {self._kind}", "exact")

    def __contains__(self, item: Any) -> bool:
        raise refusal(f"'in' on a {self._kind}", "exact")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self._private, self._protection, self._rows, self._lineage))

    def __copy__(self: P) -> P:
        return self.copy()

    def __deepcopy__(self: P, memo: dict[int, Any]) -> P:
        return self.copy()

    def copy(self: P, deep: bool = True) -> P:
        """A copy with the same rows and budget (protected data is never changed in place, so it is cheap)."""
        copied: P = self._wrap(self._private.copy(deep=False), lineage=self._lineage)
        return copied

    def to_pickle(self, path: str | Any, **kwargs: Any) -> None:
        """Pickle the protected object (``pd.read_pickle`` gives it back, with its budget)."""
        import pickle
        from pathlib import Path

        if kwargs:
            raise TypeError(f"to_pickle takes only a path, not {sorted(kwargs)}")
        Path(path).write_bytes(pickle.dumps(self))

    def pipe(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, as ``DataFrame.pipe``."""
        return func(self, *args, **kwargs)

    def _budget_line(self) -> str:
        budget = self._protection.budget
        rate = self._rows.rate
        sampled = "" if rate == 1 else f"; a Poisson sample of the units at rate {float(rate):.4g}"
        return (f"budget {budget.total} (remaining {budget.remaining}); "
                f"privacy unit: {self._protection.unit_description}{sampled}")

    # -- arithmetic, comparisons, logic: row-wise with constants or same-rows columns ----------
    def _binary(self: P, op: Callable[[Any, Any], Any], other: Any, name: str, reflected: bool = False) -> P:
        def run(a: Any, b: Any) -> Any:
            return op(b, a) if reflected else op(a, b)

        # == and != give a truth value for any two plain values (None == "x" is False): pandas' bool, as in pandas.
        total = op in (operator.eq, operator.ne)
        result: P = self._rowwise(run, other, operation=f"{self._kind} {name}", total=total)
        return result

    def __add__(self: P, other: Any) -> P:
        return self._binary(operator.add, other, "+")

    def __radd__(self: P, other: Any) -> P:
        return self._binary(operator.add, other, "+", True)

    def __sub__(self: P, other: Any) -> P:
        return self._binary(operator.sub, other, "-")

    def __rsub__(self: P, other: Any) -> P:
        return self._binary(operator.sub, other, "-", True)

    def __mul__(self: P, other: Any) -> P:
        return self._binary(operator.mul, other, "*")

    def __rmul__(self: P, other: Any) -> P:
        return self._binary(operator.mul, other, "*", True)

    def __truediv__(self: P, other: Any) -> P:
        return self._binary(operator.truediv, other, "/")

    def __rtruediv__(self: P, other: Any) -> P:
        return self._binary(operator.truediv, other, "/", True)

    def __floordiv__(self: P, other: Any) -> P:
        return self._binary(operator.floordiv, other, "//")

    def __rfloordiv__(self: P, other: Any) -> P:
        return self._binary(operator.floordiv, other, "//", True)

    def __mod__(self: P, other: Any) -> P:
        return self._binary(operator.mod, other, "%")

    def __rmod__(self: P, other: Any) -> P:
        return self._binary(operator.mod, other, "%", True)

    def __pow__(self: P, other: Any) -> P:
        return self._binary(operator.pow, other, "**")

    def __rpow__(self: P, other: Any) -> P:
        return self._binary(operator.pow, other, "**", True)

    def __and__(self: P, other: Any) -> P:
        return self._binary(operator.and_, other, "&")

    def __rand__(self: P, other: Any) -> P:
        return self._binary(operator.and_, other, "&", True)

    def __or__(self: P, other: Any) -> P:
        return self._binary(operator.or_, other, "|")

    def __ror__(self: P, other: Any) -> P:
        return self._binary(operator.or_, other, "|", True)

    def __xor__(self: P, other: Any) -> P:
        return self._binary(operator.xor, other, "^")

    def __rxor__(self: P, other: Any) -> P:
        return self._binary(operator.xor, other, "^", True)

    def __eq__(self: P, other: Any) -> P:  # type: ignore[override]
        return self._binary(operator.eq, other, "==")

    def __ne__(self: P, other: Any) -> P:  # type: ignore[override]
        return self._binary(operator.ne, other, "!=")

    def __lt__(self: P, other: Any) -> P:
        return self._binary(operator.lt, other, "<")

    def __le__(self: P, other: Any) -> P:
        return self._binary(operator.le, other, "<=")

    def __gt__(self: P, other: Any) -> P:
        return self._binary(operator.gt, other, ">")

    def __ge__(self: P, other: Any) -> P:
        return self._binary(operator.ge, other, ">=")

    def __invert__(self: P) -> P:
        result: P = self._rowwise(operator.invert, operation=f"~{self._kind}")
        return result

    def __neg__(self: P) -> P:
        result: P = self._rowwise(operator.neg, operation=f"-{self._kind}")
        return result

    def __pos__(self: P) -> P:
        return self.copy()

    def __abs__(self: P) -> P:
        return self.abs()

    def add(self: P, other: Any, fill_value: Any = None) -> P:
        """Row-wise ``self + other`` (missing values first filled with ``fill_value``)."""
        return self._filled(fill_value, other)._binary(operator.add, other, "add")

    def sub(self: P, other: Any, fill_value: Any = None) -> P:
        """Row-wise ``self - other``."""
        return self._filled(fill_value, other)._binary(operator.sub, other, "sub")

    def mul(self: P, other: Any, fill_value: Any = None) -> P:
        """Row-wise ``self * other``."""
        return self._filled(fill_value, other)._binary(operator.mul, other, "mul")

    def div(self: P, other: Any, fill_value: Any = None) -> P:
        """Row-wise ``self / other``."""
        return self._filled(fill_value, other)._binary(operator.truediv, other, "div")

    truediv = div

    def floordiv(self: P, other: Any, fill_value: Any = None) -> P:
        """Row-wise ``self // other``."""
        return self._filled(fill_value, other)._binary(operator.floordiv, other, "floordiv")

    def mod(self: P, other: Any, fill_value: Any = None) -> P:
        """Row-wise ``self % other``."""
        return self._filled(fill_value, other)._binary(operator.mod, other, "mod")

    def pow(self: P, other: Any, fill_value: Any = None) -> P:
        """Row-wise ``self ** other``."""
        return self._filled(fill_value, other)._binary(operator.pow, other, "pow")

    def eq(self: P, other: Any) -> P:
        """Row-wise ``self == other``."""
        return self._binary(operator.eq, other, "eq")

    def ne(self: P, other: Any) -> P:
        """Row-wise ``self != other``."""
        return self._binary(operator.ne, other, "ne")

    def lt(self: P, other: Any) -> P:
        """Row-wise ``self < other``."""
        return self._binary(operator.lt, other, "lt")

    def le(self: P, other: Any) -> P:
        """Row-wise ``self <= other``."""
        return self._binary(operator.le, other, "le")

    def gt(self: P, other: Any) -> P:
        """Row-wise ``self > other``."""
        return self._binary(operator.gt, other, "gt")

    def ge(self: P, other: Any) -> P:
        """Row-wise ``self >= other``."""
        return self._binary(operator.ge, other, "ge")

    def _filled(self: P, fill_value: Any, other: Any) -> P:
        if fill_value is None:
            return self
        if isinstance(other, Protected):
            raise TypeError("fill_value with two protected operands: fill each with fillna() first")
        return self.fillna(fill_value)

    # -- row-wise methods shared by frames and series -----------------------------------
    def abs(self: P) -> P:
        """Absolute values, row by row."""
        result: P = self._rowwise(lambda d: d.abs(), operation=f"{self._kind}.abs")
        return result

    def round(self: P, decimals: int = 0) -> P:
        """Values rounded to ``decimals``, row by row."""
        result: P = self._rowwise(lambda d: d.round(decimals), operation=f"{self._kind}.round")
        return result

    def isna(self: P) -> P:
        """True where a value is missing."""
        result: P = self._rowwise(lambda d: d.isna(), operation=f"{self._kind}.isna")
        return result

    def notna(self: P) -> P:
        """True where a value is present."""
        result: P = self._rowwise(lambda d: d.notna(), operation=f"{self._kind}.notna")
        return result

    isnull = isna
    notnull = notna

    def _per_column(self, func: Callable[[pd.Series[Any], Any], pd.Series[Any]], arguments: Any = None) -> Any:
        """Apply ``func(column, argument)`` to a series, or to each column of a frame (``arguments`` by column)."""
        data = self._private
        if isinstance(data, pd.Series):
            return func(data, arguments)
        out = data.copy(deep=False)
        for position, name in enumerate(data.columns):
            if isinstance(arguments, Mapping):
                if name not in arguments:
                    continue
                argument = arguments[name]
            else:
                argument = arguments
            out.isetitem(position, func(data.iloc[:, position], argument))
        return out

    def astype(self: P, dtype: Any, copy: bool | None = None, errors: str = "raise") -> P:
        """Convert the values' type; the result type is the one asked for, whatever the values.

        A conversion that can fail on some values (text to numbers, floats to
        integers) needs a type that can hold a missing value, since whether
        any value fails is private: values that do not convert become
        missing. ``astype('category')`` is refused (its categories would come
        from the data); declare them with ``pd.CategoricalDtype([...])``.
        """
        if errors not in ("raise", "ignore"):
            raise ValueError(f"errors must be 'raise' or 'ignore', got {errors!r}")
        data = self._private
        operation = f"{self._kind}.astype"
        if isinstance(dtype, Mapping):
            if isinstance(data, pd.Series):
                raise TypeError("astype with a dict applies to frames; give a series one dtype")
            unknown = [c for c in dtype if c not in data.columns]
            if unknown:
                raise KeyError(f"astype given columns {unknown} that the frame does not have")
            targets: Any = {name: _checked_astype(data[name].dtype, d, name) for name, d in dtype.items()}
        elif isinstance(data, pd.Series):
            targets = _checked_astype(data.dtype, dtype, data.name)
        else:
            targets = {name: _checked_astype(data[name].dtype, dtype, name) for name in data.columns}
        result: P = self._wrap(self._per_column(lambda column, target: _converted(column, target, operation),
                                                targets))
        return result

    def fillna(self: P, value: Any = None, *, method: Any = None, axis: Any = None, inplace: bool = False,
               limit: Any = None) -> P:
        """Fill missing values with a constant (or a dict of constants by column, or same-rows values).

        ``method=`` (forward/backward fill) and ``limit=`` depend on other rows
        and are refused.
        """
        operation = f"{self._kind}.fillna"
        if method is not None or limit is not None:
            raise refusal(f"{operation}(method=/limit=)", "cross_row")
        _no_inplace(operation, inplace)
        if value is None:
            raise ValueError("fillna needs value= (a constant, a dict of constants by column, or same-rows values)")
        if isinstance(value, Protected):
            self._same_rows(value, operation)
            if isinstance(value._private, pd.DataFrame):
                raise TypeError("fillna with a protected frame: fill column by column")
            filler = value._private
            filled: P = self._wrap(self._per_column(lambda column, _: _where(column, column.notna(), filler)))
            return filled
        if isinstance(value, Mapping) and isinstance(self._private, pd.Series):
            raise refusal(f"{operation}(dict) on a series", "mixing", "a dict would be matched to row labels")
        if isinstance(value, Mapping):
            value = {column: constant(v, operation) for column, v in value.items()}
        else:
            value = constant(value, operation)
        result: P = self._wrap(self._per_column(lambda column, v: _fill(column, v), value))
        return result

    def where(self: P, cond: Any, other: Any = np.nan, *, inplace: bool = False, axis: Any = None,
              level: Any = None) -> P:
        """Keep values where ``cond`` holds, else ``other`` (a constant or same-rows values).

        The result type is decided from the types of the values and of
        ``other``, not from whether any value is replaced.
        """
        return self._replace_where(cond, other, inplace, keep_where=True)

    def mask(self: P, cond: Any, other: Any = np.nan, *, inplace: bool = False, axis: Any = None,
             level: Any = None) -> P:
        """Replace values where ``cond`` holds by ``other``; the opposite of :meth:`where`."""
        return self._replace_where(cond, other, inplace, keep_where=False)

    def _replace_where(self: P, cond: Any, other: Any, inplace: bool, keep_where: bool) -> P:
        operation = f"{self._kind}.{'where' if keep_where else 'mask'}"
        _no_inplace(operation, inplace)
        keep = self._condition(cond, operation)
        if not keep_where:
            keep = ~keep
        if callable(other) and not isinstance(other, Protected):
            other = other(self)
        filler = self._operand(other, operation, aligned=False)
        if isinstance(filler, pd.DataFrame):
            raise TypeError(f"{operation} with a protected frame as other: work column by column")

        def column_where(column: pd.Series[Any], _: Any) -> pd.Series[Any]:
            condition = keep if isinstance(keep, pd.Series) else keep[column.name]
            return _where(column, condition, filler)

        if isinstance(keep, pd.DataFrame) and isinstance(self._private, pd.Series):
            raise TypeError(f"{operation} on a series needs a condition series, not a frame")
        result: P = self._wrap(self._per_column(column_where))
        return result

    def clip(self: P, lower: Any = None, upper: Any = None, *, axis: Any = None, inplace: bool = False) -> P:
        """Values limited to ``[lower, upper]`` (constants), row by row."""
        operation = f"{self._kind}.clip"
        _no_inplace(operation, inplace)
        lower, upper = (constant(b, operation) for b in (lower, upper))
        bounds = [b for b in (lower, upper) if b is not None]

        def clipped(column: pd.Series[Any], _: Any) -> pd.Series[Any]:
            target = common_dtype([column.dtype, *(constant_dtype(b) for b in bounds)])
            result: pd.Series[Any] = elementwise(lambda c: convert(c, target).clip(lower, upper), [column],
                                                 operation=operation, dtypes=target)
            return result

        result: P = self._wrap(self._per_column(clipped))
        return result

    def replace(self: P, to_replace: Any = None, value: Any = None, *, inplace: bool = False,
                regex: bool = False) -> P:
        """Replace given values by constants: ``replace(old, new)``, lists, or ``{old: new}``.

        The result type includes the new values' type whenever an old value
        could occur in the column (decided from its type), matched or not.
        Frames also take ``{column: {old: new}}``.
        """
        operation = f"{self._kind}.replace"
        _no_inplace(operation, inplace)
        if isinstance(self._private, pd.DataFrame) and isinstance(to_replace, Mapping) and value is None and all(
            isinstance(v, Mapping) for v in to_replace.values()
        ):
            unknown = [c for c in to_replace if c not in self._private.columns]
            if unknown:
                raise KeyError(f"replace given columns {unknown} that the frame does not have")
            per_column = {c: _replacement_pairs(m, None) for c, m in to_replace.items()}
        else:
            pairs = _replacement_pairs(to_replace, value)
            per_column = None
        if per_column is not None:
            result: P = self._wrap(self._per_column(lambda c, p: _replace(c, p, regex), per_column))
            return result
        replaced: P = self._wrap(self._per_column(lambda c, _: _replace(c, pairs, regex)))
        return replaced

    def isin(self: P, values: Any) -> P:
        """True where the value is among ``values`` (a public list; for frames also a dict by column)."""
        operation = f"{self._kind}.isin"
        if isinstance(values, Protected):
            raise refusal(f"{operation}(<protected values>)", "private_values",
                          "the set of values would come from other people's rows")
        if isinstance(values, Mapping):
            if isinstance(self._private, pd.Series):
                raise TypeError("isin on a series takes a list of values")
            values = {k: _public_values(v, operation) for k, v in values.items()}
        else:
            values = _public_values(values, operation)
        result: P = self._rowwise(lambda d: d.isin(values), operation=operation)
        return result

    def dropna(self: P, *, axis: Any = 0, how: Any = None, thresh: Any = None, subset: Any = None,
               inplace: bool = False, ignore_index: bool = False) -> P:
        """Drop rows with missing values (a filter on each row's own values)."""
        operation = f"{self._kind}.dropna"
        _no_inplace(operation, inplace)
        if axis not in (0, "index", "rows"):
            raise refusal(f"{operation}(axis=1)", "private_values", "which columns stay would depend on the data")
        options: dict[str, Any] = {}
        if isinstance(self._private, pd.DataFrame):
            if how is not None:
                options["how"] = how
            if thresh is not None:
                options["thresh"] = thresh
            if subset is not None:
                options["subset"] = subset
            rowwise.probe(lambda d: d.dropna(**options), [self._private], operation)
        elif how is not None or thresh is not None or subset is not None:
            raise TypeError("a series' dropna takes no how=, thresh= or subset=")
        data = self._private.dropna(**options)
        result: P = self._wrap(_drop_user_levels(data) if ignore_index else data, self._rows.derived(),
                               lineage=self._lineage)
        return result

    def sort_values(self: P, by: Any = None, *, axis: Any = 0, ascending: Any = True, inplace: bool = False,
                    kind: str = "quicksort", na_position: str = "last", ignore_index: bool = False,
                    key: Any = None) -> P:
        """Rows in sorted order. Order is never released, so this changes no answer; kept for pipelines."""
        operation = f"{self._kind}.sort_values"
        _no_inplace(operation, inplace)
        if axis not in (0, "index"):
            raise TypeError("sorting protected data sorts rows (axis=0)")
        options: dict[str, Any] = dict(ascending=ascending, kind=kind, na_position=na_position,
                                       key=None if key is None else sorting_key(key))
        if isinstance(self._private, pd.DataFrame):
            if by is None:
                raise TypeError("sort_values needs by= on a frame")
            options["by"] = by
        rowwise.probe(lambda d: d.sort_values(**options), [self._private], operation)
        try:
            with quiet():
                data = self._private.sort_values(**options)
        except BaseException as error:
            passed_on(error)
            # Row order is never observable through a protected object, so failing to
            # sort (e.g. mixed types) must not show: keep the order.
            data = self._private.copy(deep=False)
        result: P = self._wrap(_drop_user_levels(data) if ignore_index else data, self._rows.derived(),
                               lineage=self._lineage)
        return result

    def sort_index(self: P, *, level: Any = None, ascending: Any = True, kind: str = "quicksort",
                   na_position: str = "last", sort_remaining: bool = True, inplace: bool = False) -> P:
        """Rows sorted by their labels (order is never released, so this changes no answer)."""
        operation = f"{self._kind}.sort_index"
        _no_inplace(operation, inplace)
        options: dict[str, Any] = dict(level=level, ascending=ascending, kind=kind, na_position=na_position,
                                       sort_remaining=sort_remaining)
        rowwise.probe(lambda d: d.sort_index(**options), [self._private], operation)
        try:
            with quiet():
                data = self._private.sort_index(**options)
        except BaseException as error:
            passed_on(error)
            data = self._private.copy(deep=False)  # as sort_values: a failure to sort must not show
        result: P = self._wrap(data, self._rows.derived(), lineage=self._lineage)
        return result

    def explode(self: P, column: Any = None, ignore_index: bool = False) -> P:
        """One row per element of list-like values; each person's rows are bounded per query."""
        operation = f"{self._kind}.explode"
        data: Any
        if isinstance(self._private, pd.DataFrame):
            if not _is_label(column) or column not in self._private.columns:
                # Several columns explode together only if each row's lists have equal lengths,
                # so whether it fails would depend on the data.
                raise TypeError("explode takes one column of the frame; explode several one after the other")
            def run(d: pd.DataFrame) -> pd.DataFrame:
                # The values in boxes: pandas would infer one type for the exploded values from all of them.
                values = d.copy(deep=False)
                values.isetitem(d.columns.get_loc(column), boxed(d[column], elements=True))  # type: ignore[arg-type]
                exploded = values.explode(column)
                exploded.isetitem(exploded.columns.get_loc(column), unboxed(exploded[column]))  # type: ignore[arg-type]
                return exploded

            with shielded(operation):
                data = structural(run, [self._private], operation)
        else:
            with shielded(operation):
                data = structural(lambda d: unboxed(boxed(d, elements=True).explode()), [self._private], operation)
        # The other columns' values are repeated, the same expressions; the exploded one is a new one.
        kept = {label: token for label, token in self._lineage.items() if label != column}
        result: P = self._wrap(_drop_user_levels(data) if ignore_index else data, self._rows.derived(),
                               lineage=kept if isinstance(data, pd.DataFrame) else None)
        return result

    @property
    def dp(self) -> Any:  # typed precisely by the subclasses
        raise NotImplementedError


def _restore(kind: type[Protected], data: Any, protection: Protection, rows: Rows,
             lineage: Mapping[Hashable, Lineage] | None = None) -> Protected:
    return kind(data, protection, rows, lineage)


# -- type rules of the value-replacing methods -------------------------------------------------


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


# -- frames ------------------------------------------------------------------------------------------


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
            frame = frame._filter(frame._condition(rows, "p.loc[rows]"), rows) if _is_condition(rows) \
                else _refuse_labels()
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


def _is_label(key: Any) -> bool:
    """A hashable column label (booleans are not: pandas reads them as a row mask)."""
    return isinstance(key, Hashable) and not isinstance(key, (bool, np.bool_, Protected))


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


class ProtectedFrame(Protected):
    """A protected table: pandas' stable operations, refusals for the rest, private queries in ``.dp``.

    Made by ``df.dp.protect(...)`` (or :func:`dpframe.protect`); see the
    module docstring and ``docs/privacy-model.md`` for what is kept, bounded,
    charged and refused.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": [31, 45, 67], "sex": ["F", "M", "F"]}).dp.protect(epsilon=1.0)
    >>> older = p[p["age"] >= 40].assign(decade=lambda d: d["age"] // 10)
    >>> list(older.columns), older.dp.budget is p.dp.budget
    (['age', 'sex', 'decade'], True)
    >>> p["age"].mean()
    Traceback (most recent call last):
    ...
    dpframe.errors.RefusedError: ProtectedSeries.mean is refused on protected data: it hands exact private values to the analyst, and anything computed from them voids the guarantee. Instead: p['x'].dp.mean(bounds=(lo, hi), epsilon=...).
    """

    __slots__ = ()
    _kind = "ProtectedFrame"
    _pandas = pd.DataFrame
    _private: pd.DataFrame

    @property
    def dp(self) -> DataFrameAccessor:
        """Private queries on this frame (count, crosstab, groupby, describe, synthesize, ...)."""
        from dpframe.accessor import DataFrameAccessor

        return DataFrameAccessor(self)

    # -- the schema is public ----------------------------------------------------------
    @property
    def columns(self) -> pd.Index[Any]:
        """The column labels."""
        return self._private.columns

    @property
    def dtypes(self) -> pd.Series[Any]:
        """The dtype of each column."""
        return self._private.dtypes

    def keys(self) -> pd.Index[Any]:
        """The column labels, as ``DataFrame.keys``."""
        return self._private.columns

    def __iter__(self) -> Iterator[Any]:
        return iter(self._private.columns)

    def __contains__(self, column: Any) -> bool:
        return column in self._private.columns

    def __dir__(self) -> list[str]:
        names = [c for c in self._private.columns if isinstance(c, str) and c.isidentifier()]
        return sorted(set(super().__dir__()) | set(names))

    def __repr__(self) -> str:
        dtypes = ", ".join(f"{c}: {t}" for c, t in self._private.dtypes.items())
        return f"ProtectedFrame({dtypes}; rows hidden)\n{self._budget_line()}"

    def _repr_html_(self) -> str:
        import html

        cells = "".join(f"<tr><td>{html.escape(str(c))}</td><td>{html.escape(str(t))}</td></tr>"
                        for c, t in self._private.dtypes.items())
        return (f"<p><b>ProtectedFrame</b>: rows hidden; {html.escape(self._budget_line())}</p>"
                f"<table><tr><th>column</th><th>dtype</th></tr>{cells}</table>")

    def __getattr__(self, name: str) -> ProtectedSeries:  # a column, as p.age (as pandas-stubs types it)
        if not name.startswith("_"):
            try:
                columns = object.__getattribute__(self, "_private").columns
            except AttributeError:
                raise AttributeError(name) from None
            if name in columns:
                return self[name]
        self._refuse_attribute(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "columns":
            renamed = self._private.copy(deep=False)
            renamed.columns = value
            object.__setattr__(self, "_private", plain_labels(renamed))
            return
        super().__setattr__(name, value)

    def _binary(self, op: Callable[[Any, Any], Any], other: Any, name: str,
                reflected: bool = False) -> ProtectedFrame:
        # In arithmetic and comparisons (only), a list of constants, one per column, applies
        # column by column, as pandas broadcasts it (p[["a", "b"]] == [1, "x"]).
        if (isinstance(other, (list, tuple, np.ndarray)) and np.ndim(other) == 1
                and len(other) == len(self._private.columns) and all(is_constant(v) for v in other)):
            values = [constant(v, f"{self._kind} {name}") for v in other]

            def run(a: Any) -> Any:
                return op(values, a) if reflected else op(a, values)

            result: ProtectedFrame = self._rowwise_like(run, operation=f"{self._kind} {name}")
            return result
        return super()._binary(op, other, name, reflected)

    # -- selecting ----------------------------------------------------------------------
    @property
    def loc(self) -> _Loc:
        """Rows by condition and columns by label: ``p.loc[p['age'] > 40, ['age', 'sex']]``."""
        return _Loc(self)

    @property
    def iloc(self) -> _ILoc:
        """Columns by position, ``p.iloc[:, [0, 2]]``; row positions are refused."""
        return _ILoc(self)

    # Conditions (functions are hashable too, hence the overlap) and lists of columns give frames; a label a column.
    @overload
    def __getitem__(  # type: ignore[overload-overlap]
        self, key: Protected | Callable[[ProtectedFrame], Any] | list[Any] | pd.Index[Any] | np.ndarray[Any, Any]
    ) -> ProtectedFrame: ...

    @overload
    def __getitem__(self, key: Hashable) -> ProtectedSeries: ...

    def __getitem__(self, key: Any) -> ProtectedFrame | ProtectedSeries:
        if isinstance(key, Protected) or (callable(key) and not isinstance(key, type)):
            if callable(key) and not isinstance(key, Protected):
                key = key(self)
            if isinstance(key, ProtectedFrame):
                return self.where(key)
            return self._filter(self._condition(key, "p[cond]"))
        if isinstance(key, slice):
            raise refusal("p[i:j]", "positional")
        selected: pd.DataFrame | pd.Series[Any] = self._private[column_key(self._private.columns, key, "p[key]")]
        return self._wrap(selected, lineage=self._lineage)

    def __setitem__(self, key: Any, value: Any) -> None:
        if callable(key) and not isinstance(key, (type, Protected)):  # as pandas: called with the (protected) frame
            key = key(self)
        if not (_is_label(key) or (isinstance(key, list) and all(_is_label(k) for k in key))):
            raise refusal("p[key] = value", "mixing", f"a {type(key).__name__} key is neither a column label nor "
                                                      "a list of them",
                          instead="set rows where a condition holds with p.loc[cond, column] = value, or "
                                  "p[column] = p[column].where(cond, other)")
        if callable(value) and not isinstance(value, Protected):
            value = value(self)
        operand = self._operand(value, f"p[{key!r}] = value", aligned=False)
        if isinstance(key, list):
            if not isinstance(operand, pd.DataFrame) or len(operand.columns) != len(key):
                raise TypeError("p[[columns]] = value needs a protected frame with as many columns")
            lineage = value._lineage if isinstance(value, Protected) else {}
            for column, source in zip(key, operand.columns):
                self._set_column(column, operand[source], lineage.get(source))
            return
        if isinstance(operand, pd.DataFrame):
            raise TypeError("assign a frame to a list of columns: p[['a', 'b']] = frame")
        self._set_column(key, operand, next(iter(value._lineage.values())) if isinstance(value, Protected) else None)

    def _set_column(self, key: Any, value: Any, lineage: Lineage | None = None) -> None:
        """Set column ``key`` to ``value``: the expression ``lineage`` (a protected column's), else a new one."""
        if callable(key):  # pandas would call it with the private rows (its key may be a function of the frame)
            raise TypeError(f"a column label cannot be a function, got {key!r}")
        data = self._private.copy(deep=False)
        with quiet():
            data[key] = value
        object.__setattr__(self, "_private", plain_labels(data))
        object.__setattr__(self, "_lineage", carried({**self._lineage, key: lineage or Lineage()}, labels_of(data)))

    def __delitem__(self, key: Any) -> None:
        object.__setattr__(self, "_private", self._private.drop(columns=[key]))
        object.__setattr__(self, "_lineage", carried(self._lineage, labels_of(self._private)))

    def query(self, expr: str, *, inplace: bool = False, local_dict: Mapping[str, Any] | None = None,
              **kwargs: Any) -> ProtectedFrame:
        """Rows where the expression holds: ``p.query("age >= 40 and sex == 'F'")``.

        The expression is evaluated on the protected columns, so only
        operations that are kept on protected data may appear in it; ``@name``
        refers to the caller's variables (public constants).
        """
        from dpframe.protection.expressions import evaluate

        _no_inplace("ProtectedFrame.query", inplace)
        if kwargs:
            raise TypeError(f"query on protected data takes no {sorted(kwargs)}")
        condition = evaluate(self, expr, local_dict, depth=2)
        if not isinstance(condition, ProtectedSeries):
            raise TypeError("query needs an expression with one boolean value per row")
        return self._filter(self._condition(condition, "p.query"))

    def eval(self, expr: str, *, inplace: bool = False, local_dict: Mapping[str, Any] | None = None) -> Any:
        """Evaluate a row-wise expression (``"bmi = weight / height ** 2"`` assigns a column)."""
        from dpframe.protection.expressions import evaluate, split_assignment

        _no_inplace("ProtectedFrame.eval", inplace)
        target, expression = split_assignment(expr)
        value = evaluate(self, expression, local_dict, depth=2)
        if target is None:
            return value
        return self.assign(**{target: value})

    def assign(self, **kwargs: Any) -> ProtectedFrame:
        """New columns from same-rows columns, constants, or functions of the frame (evaluated in order)."""
        result = self.copy()
        for name, value in kwargs.items():
            result[name] = value
        return result

    def rename(self, mapper: Any = None, *, index: Any = None, columns: Any = None, axis: Any = None,
               copy: Any = None, inplace: bool = False, level: Any = None,
               errors: Literal["ignore", "raise"] = "ignore") -> ProtectedFrame:
        """Rename columns (``columns=`` or a mapper with ``axis=1``); row labels are private."""
        _no_inplace("ProtectedFrame.rename", inplace)
        if index is not None or (mapper is not None and axis not in (1, "columns")):
            raise refusal("renaming row labels", "positional", "row labels are private")
        renames = columns if columns is not None else mapper
        renamed = self._private.rename(columns=renames, level=level, errors=errors)
        return self._wrap(renamed, lineage=self._same_values(renamed, relabelled=True))

    def drop(self, labels: Any = None, *, axis: Any = 0, index: Any = None, columns: Any = None, level: Any = None,
             inplace: bool = False, errors: Literal["ignore", "raise"] = "raise") -> ProtectedFrame:
        """Drop columns (``columns=``, or labels with ``axis=1``); dropping rows by label is refused."""
        _no_inplace("ProtectedFrame.drop", inplace)
        if index is not None or (labels is not None and axis not in (1, "columns")):
            raise refusal("dropping rows by label", "positional", "row labels are private; filter instead")
        dropped = columns if columns is not None else labels
        data: pd.DataFrame = self._private.drop(columns=dropped, level=level, errors=errors)
        return self._wrap(data, lineage=self._lineage)

    def add_prefix(self, prefix: str) -> ProtectedFrame:
        """Prefix the column labels."""
        renamed = self._private.add_prefix(prefix, axis=1)
        return self._wrap(renamed, lineage=self._same_values(renamed, relabelled=True))

    def add_suffix(self, suffix: str) -> ProtectedFrame:
        """Suffix the column labels."""
        renamed = self._private.add_suffix(suffix, axis=1)
        return self._wrap(renamed, lineage=self._same_values(renamed, relabelled=True))

    def select_dtypes(self, include: Any = None, exclude: Any = None) -> ProtectedFrame:
        """The columns of the given dtypes."""
        data: pd.DataFrame = self._private.select_dtypes(include=include, exclude=exclude)
        return self._wrap(data, lineage=self._lineage)

    def filter(self, items: Any = None, like: str | None = None, regex: str | None = None,
               axis: Any = None) -> ProtectedFrame:
        """Columns by name (``items``, ``like``, ``regex``); filtering rows by label is refused."""
        if axis not in (None, 1, "columns"):
            raise refusal("filter(axis=0)", "positional", "row labels are private")
        return self._wrap(self._private.filter(items=items, like=like, regex=regex, axis=1), lineage=self._lineage)

    # -- row-wise reductions across columns -----------------------------------------------------
    def _across(self, name: str, axis: Any, **kwargs: Any) -> ProtectedSeries:
        if axis not in (1, "columns"):
            raise attribute_refusal(self._kind, name)
        operation = f"ProtectedFrame.{name}(axis=1)"
        if name in ("sum", "mean", "min", "max") and (self._private.dtypes == object).any():
            # Over object columns pandas gives all rows one type, inferred from all the results (one complex
            # mean makes every mean complex): each row is reduced on its own, its result plain.
            reduce_row: Any = boxing(lambda row: getattr(row, name)(**kwargs))
            template = pd.Series([], index=self._private.index[:0], dtype=object)

            def run(d: pd.DataFrame) -> pd.Series[Any]:
                if len(d) == 0:
                    return template
                boxes = d.apply(reduce_row, axis=1, result_type="reduce")
                return unboxed(pd.Series(boxes.to_numpy(dtype=object), index=d.index, dtype=object))

            by_row: ProtectedSeries = self._rowwise(run, operation=operation, dtypes=np.dtype(object))
            return by_row
        result: ProtectedSeries = self._rowwise(lambda d: getattr(d, name)(axis=1, **kwargs), operation=operation)
        return result

    def all(self, axis: Any = 0, bool_only: bool = False, skipna: bool = True) -> ProtectedSeries:
        """Row-wise ``all(axis=1)``: True where every column of the row is true."""
        return self._across("all", axis, bool_only=bool_only, skipna=skipna)

    def any(self, axis: Any = 0, bool_only: bool = False, skipna: bool = True) -> ProtectedSeries:
        """Row-wise ``any(axis=1)``: True where some column of the row is true."""
        return self._across("any", axis, bool_only=bool_only, skipna=skipna)

    def sum(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False) -> ProtectedSeries:
        """Row-wise ``sum(axis=1)``; the sum over rows is an exact read (use ``p['x'].dp.sum``)."""
        return self._across("sum", axis, skipna=skipna, numeric_only=numeric_only)

    def mean(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False) -> ProtectedSeries:
        """Row-wise ``mean(axis=1)``; the mean over rows is an exact read (use ``p['x'].dp.mean``)."""
        return self._across("mean", axis, skipna=skipna, numeric_only=numeric_only)

    def min(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False) -> ProtectedSeries:
        """Row-wise ``min(axis=1)``."""
        return self._across("min", axis, skipna=skipna, numeric_only=numeric_only)

    def max(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False) -> ProtectedSeries:
        """Row-wise ``max(axis=1)``."""
        return self._across("max", axis, skipna=skipna, numeric_only=numeric_only)

    def count(self, axis: Any = 0, numeric_only: bool = False) -> ProtectedSeries:
        """Row-wise ``count(axis=1)``: non-missing values per row (the row count is ``p.dp.count``)."""
        return self._across("count", axis, numeric_only=numeric_only)

    def apply(self, func: Callable[..., Any], axis: Any = 0, raw: bool = False, result_type: Any = None,
              args: tuple[Any, ...] = (), *, dtype: Any = None, **kwargs: Any) -> ProtectedSeries:
        """``func(row)`` for each row (``axis=1``): one column of plain values (see :meth:`ProtectedSeries.map`).

        Column-wise application (``axis=0``) reads every row of a column and
        is refused. The result has object dtype whatever ``func`` returns (a
        type inferred from the results would depend on the data), or the
        ``dtype`` you name; rows on which ``func`` raises, or returns an object
        of your own, become missing; a returned Series becomes a tuple.
        """
        if axis not in (1, "columns"):
            raise refusal("ProtectedFrame.apply(axis=0)", "cross_row")
        if isinstance(func, str):
            raise attribute_refusal(self._kind, func)
        template = pd.Series([], index=self._private.index[:0], dtype=object)

        def run(d: pd.DataFrame) -> pd.Series[Any]:
            if len(d) == 0:
                return template
            boxed: Any = boxing(func)
            # Each row is passed unnamed: its label holds the row's number at protect() (a position among
            # everyone's rows) when no privacy unit was declared.
            unnamed = d.set_axis(pd.Index(np.full(len(d), None, dtype=object), dtype=object), axis=0)
            boxes = unnamed.apply(boxed, axis=1, raw=raw, result_type="reduce", args=args, **kwargs)
            return unboxed(pd.Series(boxes.to_numpy(dtype=object), index=d.index, dtype=object))

        result: ProtectedSeries = self._rowwise(run, operation="ProtectedFrame.apply(axis=1)", dtypes=np.dtype(object))
        return result if dtype is None else result.astype(dtype)

    def map(self, func: Callable[[Any], Any], na_action: Literal["ignore"] | None = None, *, dtype: Any = None,
            **kwargs: Any) -> ProtectedFrame:
        """``func`` applied to every value: plain values of object dtype, or ``dtype`` (see :meth:`ProtectedSeries.map`)."""
        dtypes = pd.Series(np.dtype(object), index=self._private.columns)
        boxed = boxing(func)

        def run(d: pd.DataFrame) -> pd.DataFrame:
            out = d.map(boxed, na_action=na_action, **kwargs).astype(object)
            for position in range(len(out.columns)):
                out.isetitem(position, unboxed(out.iloc[:, position]))  # type: ignore[arg-type]
            return out

        result: ProtectedFrame = self._rowwise(run, operation="ProtectedFrame.map", dtypes=dtypes)
        return result if dtype is None else result.astype(dtype)

    # -- reshaping --------------------------------------------------------------------------
    def set_index(self, keys: Any, *, drop: bool = True, append: bool = False, inplace: bool = False,
                  verify_integrity: bool = False) -> ProtectedFrame:
        """Move columns into the row labels (the privacy-unit record always stays)."""
        _no_inplace("ProtectedFrame.set_index", inplace)
        if verify_integrity:
            raise refusal("set_index(verify_integrity=True)", "exact", "whether labels repeat is private")
        data = self._private
        keys_list = keys if isinstance(keys, list) else [keys]
        for key in keys_list:
            if not (_is_label(key) and key in data.columns):
                raise refusal("set_index(<not a column>)", "mixing", "row labels can only be made from columns")
        if any(key in data.index.names for key in keys_list):
            raise ValueError("set_index: a column has the name of a row label; rename it first")
        names = list(data.index.names)
        current = {name: data.index.get_level_values(i) for i, name in enumerate(names)}
        kept = [name for name in names if append and name != UNIT_LEVEL]
        # The new labels keep their column's dtype, and object values their own types (labels.py).
        arrays = [*(current[n] for n in kept),
                  *(_level_of(data.loc[:, k]) for k in keys_list),
                  current[UNIT_LEVEL]]
        keyed = data.drop(columns=keys_list) if drop else data.copy(deep=False)
        with shielded("ProtectedFrame.set_index"):
            keyed.index = index_of(arrays, [*kept, *keys_list, UNIT_LEVEL])
        return self._wrap(keyed, self._rows.derived(), lineage=self._lineage)

    def reset_index(self, level: Any = None, *, drop: bool = False, inplace: bool = False) -> ProtectedFrame:
        """Move row labels (set by ``set_index`` or given at ``protect()``) back into columns, or drop them.

        Each row gets back the very value it had: pandas would infer one type for all the values of an
        object level (``[1, 1.5]`` as floats), so that one row's value changed another's.
        """
        _no_inplace("ProtectedFrame.reset_index", inplace)
        data = self._private
        names = list(data.index.names)
        user: list[Any] = [i for i, name in enumerate(names) if name != UNIT_LEVEL]
        if level is None:
            chosen = user
        else:
            wanted = list(level) if isinstance(level, (list, tuple)) else [level]
            chosen = [i for i in user if names[i] in wanted or i in wanted]
            if len(chosen) != len(wanted):
                raise KeyError(f"reset_index: the row labels are {[names[i] for i in user]}")
        if not chosen:
            return self.copy()
        flat = data.droplevel(chosen) if drop else flattened(data, chosen)
        return self._wrap(flat, self._rows.derived(), lineage=self._lineage)

    def melt(self, id_vars: Any = None, value_vars: Any = None, var_name: Any = None, value_name: Any = "value",
             col_level: Any = None, ignore_index: bool = True) -> ProtectedFrame:
        """Unpivot columns into rows; each person's rows are bounded per query."""
        def run(d: pd.DataFrame) -> pd.DataFrame:
            # Object values in boxes: pandas would infer one type for a melted column from all its values.
            values = d.copy(deep=False)
            for position in range(values.shape[1]):
                values.isetitem(position, boxed(values.iloc[:, position]))  # type: ignore[arg-type]
            melted = values.melt(id_vars=id_vars, value_vars=value_vars, var_name=var_name, value_name=value_name,
                                 col_level=col_level, ignore_index=False)
            for position in range(melted.shape[1]):
                melted.isetitem(position, unboxed(melted.iloc[:, position]))  # type: ignore[arg-type]
            return melted

        with shielded("ProtectedFrame.melt"):
            data: pd.DataFrame = structural(run, [self._private], "ProtectedFrame.melt")
        return self._wrap(_drop_user_levels(data) if ignore_index else data, self._rows.derived())

    def stack(self) -> ProtectedSeries:
        """One row per (row, column); each person's rows are bounded per query."""
        def run(d: pd.DataFrame) -> Any:
            stacked = d.stack() if pd.__version__ >= "3" else d.stack(future_stack=True)
            return stacked.reorder_levels(_unit_last(stacked.index.names))

        with shielded("ProtectedFrame.stack"):
            stacked = structural(run, [self._private], "ProtectedFrame.stack")
        result: ProtectedSeries = self._wrap(stacked, self._rows.derived())
        return result

    def merge(self, right: Any, how: MergeHow = "inner", on: Any = None, left_on: Any = None,
              right_on: Any = None, left_index: bool = False, right_index: bool = False, sort: bool = False,
              suffixes: tuple[str | None, str | None] = ("_x", "_y"), copy: Any = None, indicator: Any = False,
              validate: Validate | None = None) -> ProtectedFrame:
        """Join a public table (``how='inner' | 'left' | 'cross'``), or another protection on a shared unit.

        Repeated matches repeat a person's rows; every query keeps at most
        ``max_contributions`` rows per person, so nothing is under-charged.
        Outer and right joins, and joins on row labels, are refused; so is a
        merge with another protected frame unless both share one ``Budget``
        and a declared ``privacy_unit`` and the join is on that unit. With
        ``how='left'``, the public table's columns become nullable (their type
        must not show whether a row found no match). ``sort`` changes nothing:
        row order is never released (and sorting keys of mixed types would
        fail only for such keys).
        """
        from dpframe.protection.combine import merge

        return merge(self, right, how=how, on=on, left_on=left_on, right_on=right_on, left_index=left_index,
                     right_index=right_index, suffixes=suffixes, indicator=indicator, validate=validate)


# -- series ------------------------------------------------------------------------------------------


class AccessorProxy:
    """``.str``, ``.dt`` and ``.cat`` of a protected series: their row-wise methods, typed by schema."""

    _name: ClassVar[str]
    _refused: ClassVar[dict[str, str]] = {}

    def __init__(self, series: ProtectedSeries) -> None:
        self._series = series
        empty = series._private.iloc[:0]
        try:
            self._empty_accessor = getattr(empty, self._name)
        except AttributeError as error:
            raise AttributeError(f"{error} (dtype {series.dtype})") from None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        operation = f"ProtectedSeries.{self._name}.{name}"
        if name in self._refused:
            raise refusal(operation, self._refused[name])
        template = getattr(self._empty_accessor, name)  # AttributeError for unknown names, from the schema
        widen = self._name == "str"
        accessor = self._name
        series = self._series
        if not callable(template):
            if isinstance(template, (pd.Series, pd.DataFrame)):
                return series._rowwise(lambda d: getattr(getattr(d, accessor), name), operation=operation,
                                       widen=widen)
            return template  # a fact of the dtype (tz, unit, categories, ordered): public

        def method(*args: Any, **kwargs: Any) -> Any:
            for value in [*args, *kwargs.values()]:
                if isinstance(value, (Protected, pd.Series, pd.DataFrame)):
                    raise refusal(operation, "mixing", "its arguments must be public values, not columns (pandas "
                                                       "would line them up with the rows)")
            # Plain values only; a function (str.replace's repl=) runs guarded: pandas calls it on the values.
            args = tuple(public_value(value, operation, functions=True) for value in args)
            kwargs = {key: public_value(value, operation, functions=True) for key, value in kwargs.items()}
            expands = {"split": False, "rsplit": False, "partition": True, "rpartition": True}
            if name in expands and kwargs.get("expand", expands[name]):
                raise refusal(f"{operation}(expand=True)", "private_values",
                              "the columns pandas makes would depend on the values",
                              instead="pass expand=False (one column of lists or tuples)")
            for value in [*args, *kwargs.values()]:
                # An array is lined up with the rows by position (dt.tz_localize's ambiguous=): a list of
                # categories or a tuple of prefixes is not, and no .dt method takes a list but to line one up.
                if isinstance(value, (np.ndarray, pd.Index, pd.api.extensions.ExtensionArray)) or (
                        accessor == "dt" and isinstance(value, (list, tuple))):
                    raise refusal(operation, "mixing", "pandas would line an array argument up with the rows by "
                                                       "position", instead="pass one value (for .cat, a list of "
                                                       "categories)")
            if accessor == "dt" and any(isinstance(v, str) and v == "infer" for v in [*args, *kwargs.values()]):
                raise refusal(f"{operation}(ambiguous='infer')", "cross_row",
                              "it resolves ambiguous times from the neighbouring rows")
            if accessor == "dt" and name == "to_period" and not args and kwargs.get("freq") is None:
                raise refusal(f"{operation}() without freq", "private_values",
                              "pandas would infer the frequency from the values", instead="pass freq=")
            def run(d: pd.Series[Any]) -> Any:
                return getattr(getattr(d, accessor), name)(*args, **kwargs)

            if accessor == "str" and series.dtype == object:
                key = (args[0] if args else kwargs.get("i")) if name == "get" else 0
                return series._rowwise(lambda d: _text_method(d, run, key), operation=operation, widen=widen)
            return series._rowwise(run, operation=operation, widen=widen)

        return method


class _Opaque:
    """A value no type inference can convert (see :func:`_text_method`)."""


def _text_method(column: pd.Series[Any], method: Callable[[pd.Series[Any]], Any], key: Any) -> Any:
    """A ``.str`` method of an object column, each row's result as if the column held anything.

    pandas decides from *all* the values whether it applies a method (to a column of bytes only, ``upper``
    is refused; with one other value it is applied to the bytes) and which type the results get (``get``
    of ``(1,)`` and ``()`` gives ``1.0``): one row would change another's. A row of its own,
    ``{key: <an opaque object>}`` -- no text, no number, an element ``get(key)`` returns -- makes every column
    one of mixed values; it is taken out again. Not in the probe (no rows): the result's type is the method's
    on an empty column.
    """
    if len(column) == 0:
        return method(column)
    values = np.empty(len(column) + 1, dtype=object)
    values[:-1] = column.to_numpy(dtype=object)
    values[-1] = {key: _Opaque()}
    result = method(pd.Series(values, name=column.name, dtype=object)).iloc[:-1]
    return result.set_axis(column.index, axis=0)


class _StringMethods(AccessorProxy):
    _name = "str"
    _refused = {"cat": "exact", "get_dummies": "private_values", "extractall": "cross_row"}


class _DatetimeMethods(AccessorProxy):
    _name = "dt"
    _refused = {"to_pydatetime": "exact", "to_pytimedelta": "exact", "freq": "exact", "inferred_freq": "exact"}


class _CategoricalMethods(AccessorProxy):
    _name = "cat"
    _refused = {"remove_unused_categories": "private_values"}


class ProtectedSeries(Protected):
    """A protected column: row-wise pandas operations, refusals for the rest, private queries in ``.dp``.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"income": [30_000.0, None, 52_000.0]}).dp.protect(epsilon=1.0)
    >>> thousands = (p["income"] / 1000).fillna(0).round()
    >>> thousands.dtype, thousands.dp.budget is p.dp.budget
    (dtype('float64'), True)
    """

    __slots__ = ()
    _kind = "ProtectedSeries"
    _pandas = pd.Series
    _private: pd.Series[Any]

    @property
    def dp(self) -> SeriesAccessor:
        """Private queries on this column (sum, mean, quantile, histogram, value_counts, ...)."""
        from dpframe.accessor import SeriesAccessor

        return SeriesAccessor(self)

    @property
    def name(self) -> Hashable:
        """The column's name."""
        return self._private.name

    @property
    def dtype(self) -> Any:
        """The column's dtype."""
        return self._private.dtype

    @property
    def dtypes(self) -> Any:
        """The column's dtype (as ``Series.dtypes``)."""
        return self._private.dtype

    def __repr__(self) -> str:
        return f"ProtectedSeries({self.name!r}: {self.dtype}; rows hidden)\n{self._budget_line()}"

    def _repr_html_(self) -> str:
        import html

        return f"<p><b>{html.escape(repr(self)).replace(chr(10), '<br>')}</b></p>"

    def __getitem__(self, key: Any) -> ProtectedSeries:
        if _is_condition(key):
            if callable(key) and not isinstance(key, Protected):
                key = key(self)
            return self._filter(self._condition(key, "s[cond]"))
        _refuse_labels()

    def rename(self, index: Any = None, *, inplace: bool = False, **kwargs: Any) -> ProtectedSeries:
        """Rename the column (a scalar name); relabelling rows is refused."""
        _no_inplace("ProtectedSeries.rename", inplace)
        if kwargs or not _is_label(index) or pd.api.types.is_dict_like(index) or callable(index):
            raise refusal("renaming row labels", "positional", "row labels are private")
        renamed = self._private.rename(index)
        return self._wrap(renamed, lineage=self._same_values(renamed, relabelled=True))

    def to_frame(self, name: Any = None) -> ProtectedFrame:
        """A one-column protected frame."""
        data = self._private.to_frame() if name is None else self._private.to_frame(name)
        result: ProtectedFrame = self._wrap(data, lineage=self._same_values(data, relabelled=True))
        return result

    def between(self, left: Any, right: Any, inclusive: str = "both") -> ProtectedSeries:
        """True where ``left <= value <= right`` (constants)."""
        left, right = constant(left, "between"), constant(right, "between")
        return self._rowwise_like(lambda d: d.between(left, right, inclusive=inclusive),
                                  operation="ProtectedSeries.between")

    def map(self, arg: Any, na_action: str | None = None, *, dtype: Any = None) -> ProtectedSeries:
        """Map each value through a dict, a public Series or a function.

        A mapping's result type comes from its values (with room for a missing
        value, for values it does not map). A function's results become plain
        values (``docs/privacy-model.md``, "Your code and your objects"): lists and tuples
        become tuples, other objects of your own become missing, and so do the
        values on which the function raises; the column has object dtype (a type
        inferred from the results would depend on the data), or the ``dtype``
        you name, converted as :meth:`astype` converts. On a categorical column
        the mapping is applied to its public categories.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"tags": ["a,b", "c", None]}).dp.protect(epsilon=1.0)
        >>> p["tags"].map(lambda t: t.split(","), na_action="ignore").explode().dtype
        dtype('O')
        >>> p["tags"].map(len, dtype="Int64").dtype
        Int64Dtype()
        """
        operation = "ProtectedSeries.map"
        if isinstance(arg, Protected):
            raise refusal(operation, "mixing", "a protected mapping would carry other rows' values")
        categorical = isinstance(self.dtype, pd.CategoricalDtype)
        if isinstance(arg, (Mapping, pd.Series)):
            mapping = public_value(arg, operation)
            if categorical:
                mapped = self._rowwise_like(lambda d: d.map(mapping, na_action=na_action), operation=operation)
            else:
                keys = (pd.Index(list(mapping), dtype=object, tupleize_cols=False) if isinstance(mapping, dict)
                        else mapping.index)
                values = list(mapping.values()) if isinstance(mapping, dict) else list(mapping.to_numpy())
                if holds_objects(self.dtype):  # pandas would look objects up with a type inferred from all
                    def run(d: pd.Series[Any]) -> pd.Series[Any]:
                        return _looked_up(d, keys, values, na_action)
                else:
                    def run(d: pd.Series[Any]) -> pd.Series[Any]:
                        return d.map(mapping, na_action=na_action)  # type: ignore[arg-type]
                mapped = self._rowwise_like(run, operation=operation, dtypes=constant_dtype_of(values))
        elif not callable(arg):
            raise TypeError(f"map takes a dict, a Series or a function, got {type(arg).__name__}")
        elif categorical:
            mapped = self._rowwise_like(lambda d: d.map(guarded(arg), na_action=na_action), operation=operation)
        else:
            mapped = self._rowwise_like(lambda d: unboxed(d.map(boxing(arg), na_action=na_action)),
                                        operation=operation, dtypes=np.dtype(object))
        return mapped if dtype is None else mapped.astype(dtype)

    def apply(self, func: Any, args: tuple[Any, ...] = (), *, dtype: Any = None, **kwargs: Any) -> ProtectedSeries:
        """``func`` applied to each value (a numpy ufunc keeps its type; see :meth:`map` otherwise).

        Named aggregations (``apply("sum")``) read every row and are refused.
        ``dtype`` is dpframe's (as in :meth:`map`); every other keyword goes to ``func``.
        """
        if isinstance(func, str):
            raise attribute_refusal(self._kind, func)
        if isinstance(func, np.ufunc):
            result: ProtectedSeries = func(self, *args, **kwargs)  # checked in __array_ufunc__
            return result if dtype is None else result.astype(dtype)
        return self.map(lambda value: func(value, *args, **kwargs), dtype=dtype)

    def cut(self, bins: Any, right: bool = True, labels: Any = None, include_lowest: bool = False,
            precision: int = 3, duplicates: str = "raise", ordered: bool = True) -> ProtectedSeries:
        """``pd.cut`` with explicit bin edges: a categorical whose categories (the bins) are public.

        A number of bins would take the edges from the data's minimum and
        maximum, which are private: refused.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"age": [23, 35, 61]}).dp.protect(epsilon=1.0)
        >>> list(p["age"].cut([0, 30, 60, 120], labels=["young", "middle", "old"]).cat.categories)
        ['young', 'middle', 'old']
        """
        if isinstance(bins, (int, np.integer)):
            raise refusal("cut(bins=<int>)", "private_values", "the edges would come from the data's min and max")
        bins, labels = public_value(bins, "cut"), public_value(labels, "cut")
        def run(d: pd.Series[Any]) -> Any:
            return pd.cut(d, bins, right=right, labels=labels, include_lowest=include_lowest,  # type: ignore[call-overload]
                          precision=precision, duplicates=duplicates, ordered=ordered)

        # Out-of-range and missing values give missing codes (with labels=False too).
        return self._rowwise_like(run, operation="ProtectedSeries.cut", widen=True)

    @property
    def str(self) -> Any:
        """Row-wise string methods (``contains``, ``lower``, ``len``, ...); results are nullable."""
        return _StringMethods(self)

    @property
    def dt(self) -> Any:
        """Row-wise date and time properties and methods (``year``, ``floor``, ...)."""
        return _DatetimeMethods(self)

    @property
    def cat(self) -> Any:
        """Categorical properties (``codes``; the categories, which are public) and methods."""
        return _CategoricalMethods(self)


def constant_dtype_of(values: Sequence[Any]) -> Any:
    """The type of a column holding ``values`` and a missing value (what a mapping can produce).

    >>> constant_dtype_of([10, 20]), constant_dtype_of([True, False])
    (dtype('float64'), dtype('O'))
    """
    with quiet():
        return pd.Series([*values, None]).dtype


def refuse_protected(obj: Any, operation: str) -> None:
    """Refuse a non-private tool (k-anonymity, attacks, plots of data) on protected data.

    >>> import pandas as pd, dpframe
    >>> refuse_protected(pd.DataFrame({"a": [1]}), "k_anonymity")  # plain data: fine
    """
    if isinstance(obj, Protected):
        raise refusal(f"{operation} on protected data", "exact", "it is computed exactly from the rows",
                      instead="run it on the data as it was before protect() (the trusted curator's copy); "
                              "its result is not private")


def lineage_of(obj: Any) -> dict[Hashable, Lineage]:
    """The lineage of a protected object's columns, by label (empty for anything else)."""
    return dict(obj._lineage) if isinstance(obj, Protected) else {}


def parts(obj: Any) -> tuple[Any, Protection, SampleAccount | None] | None:
    """The pandas data, protection and sample account of a protected object (None for anything else)."""
    if isinstance(obj, Protected):
        return obj._private, obj._protection, obj._rows.sample
    return None


def wrap(data: Any, protection: Protection, rows: Rows | None = None) -> Any:
    """A protected object over ``data`` (pandas data whose index ends with the unit record): new rows (or ``rows``)."""
    kind: type[Protected] = ProtectedFrame if isinstance(data, pd.DataFrame) else ProtectedSeries
    return kind(data, protection, Rows() if rows is None else rows)


def same_rows(objects: Sequence[Protected]) -> bool:
    """True when all ``objects`` hold the very same rows of one protection."""
    first = objects[0]
    return all(o._rows is first._rows and o._protection.key == first._protection.key for o in objects)


__all__ = ["UNPROTECTED_MARK", "Protected", "ProtectedFrame", "ProtectedSeries", "Rows", "constant_dtype_of",
           "lineage_of", "parts", "refuse_protected", "same_rows", "wrap"]
