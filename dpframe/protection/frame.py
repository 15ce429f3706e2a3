"""ProtectedFrame: a protected table (:mod:`.base` says what every protected object is and keeps)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

import numpy as np
import pandas as pd

from dpframe.protection.analyst import boxed, boxing, plain_labels, unboxed
from dpframe.protection.base import Protected, _is_label, _no_inplace
from dpframe.protection.expressions import evaluate, split_assignment
from dpframe.protection.indexing import _ILoc, _Loc, column_key
from dpframe.protection.labels import index_of
from dpframe.protection.levels import _drop_user_levels, _level_of, _unit_last, flattened
from dpframe.protection.lineage import Lineage, carried, labels_of
from dpframe.protection.rowwise import (
    constant,
    convert,
    is_constant,
    missing_value,
    quiet,
    shielded,
    structural,
    widened,
)
from dpframe.protection.rules import attribute_refusal, refusal
from dpframe.protection.series import ProtectedSeries
from dpframe.protection.units import UNIT_LEVEL

if TYPE_CHECKING:
    from dpframe.accessor import DataFrameAccessor, ProtectedAccessor
    from dpframe.protection.combine import MergeHow, Validate


class ProtectedFrame(Protected):
    """A protected table: pandas' stable operations, refusals for the rest, private queries in ``.dp``.

    Made by ``df.dp.protect(...)`` (or :func:`dpframe.protect`); see the
    docstring of :mod:`dpframe.protection.base` and ``docs/privacy-model.md``
    for what is kept, bounded, charged and refused.

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

    dp: ClassVar[ProtectedAccessor[DataFrameAccessor]]
    """Private queries on this frame (count, crosstab, groupby, describe, synthesize, ...)."""
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
            lineage = self._same_values(renamed, relabelled=True)  # the same columns, by position
            object.__setattr__(self, "_private", plain_labels(renamed))
            object.__setattr__(self, "_lineage", lineage)
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
        _no_inplace("ProtectedFrame.query", inplace)
        if kwargs:
            raise TypeError(f"query on protected data takes no {sorted(kwargs)}")
        condition = evaluate(self, expr, local_dict, depth=2)
        if not isinstance(condition, ProtectedSeries):
            raise TypeError("query needs an expression with one boolean value per row")
        return self._filter(self._condition(condition, "p.query"))

    def eval(self, expr: str, *, inplace: bool = False, local_dict: Mapping[str, Any] | None = None) -> Any:
        """Evaluate a row-wise expression (``"bmi = weight / height ** 2"`` assigns a column)."""
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


__all__ = ["ProtectedFrame"]
