"""ProtectedSeries: a protected column, and its ``.str``, ``.dt`` and ``.cat`` (:mod:`.base` says what every
protected object is and keeps)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from dpframe.protection.analyst import boxing, guarded, holds_objects, public_value, unboxed
from dpframe.protection.base import Protected, _is_label, _no_inplace
from dpframe.protection.conversions import _looked_up
from dpframe.protection.indexing import _is_condition, _refuse_labels
from dpframe.protection.rowwise import constant, quiet
from dpframe.protection.rules import attribute_refusal, refusal

if TYPE_CHECKING:
    from dpframe.accessor import ProtectedAccessor, SeriesAccessor
    from dpframe.protection.frame import ProtectedFrame


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
            return series._rowwise(run, operation=operation, widen=widen and _missing_changes_type(series, run))

        return method


def _missing_changes_type(series: ProtectedSeries, method: Callable[[pd.Series[Any]], Any]) -> bool:
    """Whether a ``.str`` method's result type on this text dtype depends on the values: pandas' result on no
    rows and on one missing value of the dtype differ (``len`` of pandas' ``str``: int64, or float64 with a
    missing value) or either fails. Where they agree (``contains``: bool, a missing value False) it is pandas'
    type whatever the values, and kept; else it is widened to hold missing values. Decided from the dtype."""
    empty = series._private.iloc[:0]
    try:
        with quiet():
            typed = [method(pd.Series([None], dtype=empty.dtype)).dtype, method(empty).dtype]
    except Exception:
        return True
    return bool(typed[0] != typed[1])


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

    dp: ClassVar[ProtectedAccessor[SeriesAccessor]]
    """Private queries on this column (sum, mean, quantile, histogram, value_counts, ...)."""
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


__all__ = ["AccessorProxy", "ProtectedSeries", "constant_dtype_of"]
