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

This module holds what protected frames and series share (:class:`Protected`,
:class:`Rows`); :mod:`.frame` and :mod:`.series` hold the two kinds,
:mod:`.indexing` ``loc``/``iloc`` and column keys, :mod:`.conversions` the type
rules of the value-replacing methods, and :mod:`.levels` the row-label levels.
Their ``.dp`` is set on them by :mod:`dpframe.accessor`.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from fractions import Fraction
from types import FrameType
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar, overload

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.amplification import SampleAccount
from dpframe.errors import DPFrameError
from dpframe.protection import rowwise
from dpframe.protection.analyst import boxed, passed_on, plain_labels, sorting_key, unboxed
from dpframe.protection.conversions import (
    _checked_astype,
    _converted,
    _fill,
    _public_values,
    _replace,
    _replacement_pairs,
    _where,
)
from dpframe.protection.levels import _drop_user_levels
from dpframe.protection.lineage import Lineage, carried, labels_of
from dpframe.protection.rowwise import (
    common_dtype,
    constant,
    constant_dtype,
    convert,
    elementwise,
    quiet,
    shielded,
    structural,
)
from dpframe.protection.rules import attribute_refusal, refusal
from dpframe.protection.units import UNIT_LEVEL, Protection

if TYPE_CHECKING:
    from dpframe.protection.frame import ProtectedFrame
    from dpframe.protection.series import ProtectedSeries

P = TypeVar("P", bound="Protected")


# Marks data handed out by ``p.dp.unprotected()``: it may not be protected again or merged back.
UNPROTECTED_MARK = "dpframe.unprotected"

# pandas' functions offered in dpframe.protection.functions, by name: the refusal of pd.<name>(protected)
# points to dpframe.<name>.
OFFERED = ("to_datetime", "to_numeric")


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


def _pandas_function_offered(depth: int = 2) -> str | None:
    """The name of the pandas function on the call stack that dpframe offers for protected objects, if any (found
    from the code being run, never from the data); the search starts ``depth`` frames up."""
    frame: FrameType | None = sys._getframe(depth)
    for _ in range(8):
        if frame is None:
            return None
        if frame.f_code.co_name in OFFERED and frame.f_globals.get("__name__", "").startswith("pandas."):
            return frame.f_code.co_name
        frame = frame.f_back
    return None


def stand_in(*objects: Any) -> Any:
    """The first of ``objects`` that stands for a protected object elsewhere (a remote frame of
    :mod:`dpframe.service.client`), or None: dpframe's functions hand such an object their call
    (``__dpframe_function__``), as numpy hands ``__array_function__`` its calls.

    >>> stand_in(1, "a") is None
    True
    """
    return next((obj for obj in objects if hasattr(type(obj), "__dpframe_function__")), None)


def pandas_function_refusal(kind: str) -> DPFrameError:
    """The refusal of a pandas function handed a protected object of ``kind`` (pandas asks it for ``_typ``); a remote
    frame (dpframe.service.client) raises the same."""
    offered = _pandas_function_offered(depth=3)
    if offered is not None:
        return refusal(f"pd.{offered} given a {kind}", "public_rows",
                       "pandas functions read their arguments' values exactly",
                       instead=f"dpframe.{offered}(...), with the same arguments, runs it row by row")
    return refusal(f"a pandas function given a {kind}", "public_rows",
                   "pandas functions read their arguments' values exactly")


def _no_inplace(operation: str, inplace: bool) -> None:
    if inplace:
        raise refusal(f"{operation}(inplace=True)", "inplace")


def _is_label(key: Any) -> bool:
    """A hashable column label (booleans are not: pandas reads them as a row mask)."""
    return isinstance(key, Hashable) and not isinstance(key, (bool, np.bool_, Protected))


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
    # The protected kind of each pandas kind: ProtectedFrame and ProtectedSeries register themselves as they are
    # defined (in .frame and .series), so this module needs neither.
    _kinds: ClassVar[dict[type, type[Protected]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Protected._kinds[cls._pandas] = cls

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
        return _kind(data)(data, protection or self._protection, rows or self._rows, lineage)

    def _same_values(self, data: Any, *, relabelled: bool = False) -> dict[Hashable, Lineage]:
        """The lineage of ``data``, whose columns hold these columns' values unchanged: found by label, or, when
        ``relabelled`` (a rename), by position."""
        labels = labels_of(data)
        if not relabelled:
            return carried(self._lineage, labels)
        before = labels_of(self._private)
        if len(set(before)) < len(before) or len(set(labels)) < len(labels):
            return {}  # duplicated labels: which column is which is ambiguous, so all are new expressions
        return carried(self._lineage, labels, dict(zip(labels, before)))

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
        raise pandas_function_refusal(self._kind)

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


def _restore(kind: type[Protected], data: Any, protection: Protection, rows: Rows,
             lineage: Mapping[Hashable, Lineage] | None = None) -> Protected:
    return kind(data, protection, rows, lineage)


def _kind(data: Any) -> type[Protected]:
    """ProtectedFrame for a DataFrame, ProtectedSeries for a Series (``Protected._kinds``)."""
    return Protected._kinds[pd.DataFrame if isinstance(data, pd.DataFrame) else pd.Series]


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
    return _kind(data)(data, protection, Rows() if rows is None else rows)


def same_rows(objects: Sequence[Protected]) -> bool:
    """True when all ``objects`` hold the very same rows of one protection."""
    first = objects[0]
    return all(o._rows is first._rows and o._protection.key == first._protection.key for o in objects)


__all__ = ["OFFERED", "UNPROTECTED_MARK", "Protected", "Rows", "lineage_of", "parts", "refuse_protected", "same_rows",
           "wrap"]
