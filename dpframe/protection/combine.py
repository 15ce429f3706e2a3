"""Combining tables: ``ProtectedFrame.merge`` and :func:`concat`.

* A **public** table (a plain DataFrame) may be joined in with ``inner``,
  ``left`` or ``cross`` joins. Its rows carry no person, and every row of the
  result belongs to the one protected row it came from, so a person's rows
  can only be repeated -- which each query bounds. Right and outer joins are
  refused: they add rows that belong to nobody, and whether a public row
  appears "unmatched" would depend on who is in the data.
* Two **protections** combine only when they share one ``Budget`` and both
  declare a ``privacy_unit``, and the join is on that unit: a joined row then
  holds one person's rows from both tables (joined on the recorded units, not
  on the visible columns, so editing a column cannot pair two people).
* :func:`concat` stacks frames of one protection (overlapping rows are one
  person's rows repeated: bounded), or binds columns of the very same rows.

Join keys must have comparable types *by schema*: pandas checks the values of
object keys against numeric ones, and such a check would depend on the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, overload

import pandas as pd

from dpframe.protection.analyst import public_frame, public_value
from dpframe.protection.base import UNPROTECTED_MARK, Protected, Rows, same_rows, stand_in
from dpframe.protection.frame import ProtectedFrame
from dpframe.protection.levels import _user_levels, flattened, level_dtypes, with_levels
from dpframe.protection.series import ProtectedSeries
from dpframe.protection.rowwise import conform, hashable_or_missing, probe, shielded, structural, widened
from dpframe.protection.rules import refusal
from dpframe.protection.units import UNIT_LEVEL, Protection


def _key_kind(dtype: Any) -> str:
    if isinstance(dtype, pd.CategoricalDtype):
        return _key_kind(dtype.categories.dtype)
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_numeric_dtype(dtype):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return f"datetime ({getattr(dtype, 'tz', None) or 'no time zone'})"
    if pd.api.types.is_timedelta64_dtype(dtype):
        return "timedelta"
    if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
        return "text"
    return str(dtype)


def _check_keys(left: pd.DataFrame, right: pd.DataFrame, left_keys: list[Any], right_keys: list[Any]) -> None:
    for lk, rk in zip(left_keys, right_keys):
        ltype, rtype = left[lk].dtype, right[rk].dtype
        lkind, rkind = _key_kind(ltype), _key_kind(rtype)
        if lkind != rkind:
            raise TypeError(
                f"merge keys {lk!r} ({ltype}) and {rk!r} ({rtype}) have different kinds "
                f"({lkind} and {rkind}); convert one with astype so both are the same kind"
            )
        # pandas matches a categorical key against another type through the values it holds (codes or
        # values, a result type chosen from them): the public key must be of the very same categories.
        if (isinstance(ltype, pd.CategoricalDtype) or isinstance(rtype, pd.CategoricalDtype)) and ltype != rtype:
            raise TypeError(
                f"merge keys {lk!r} ({ltype}) and {rk!r} ({rtype}): a categorical key joins only a key of the same "
                f"categories; convert the public one with .astype(p[{lk!r}].dtype), or the protected one with "
                f".astype(...) to the public key's type"
            )


def _public_key_units(left: pd.DataFrame, right: pd.DataFrame, left_keys: list[Any],
                      right_keys: list[Any]) -> pd.DataFrame:
    """The public table with each date or duration key in the protected key's unit: pandas would convert the
    coarser of the two, and raise -- only for a protected value out of the finer unit's range."""
    changes = {rk: left[lk].dtype for lk, rk in zip(left_keys, right_keys)
               if left[lk].dtype.kind in "Mm" and right[rk].dtype != left[lk].dtype}
    if not changes:
        return right
    try:
        return right.astype(changes)
    except (ValueError, OverflowError) as error:  # the public table's own values
        raise ValueError(f"the public table's keys {list(changes)} do not fit the protected keys' units "
                         f"({error}); convert them first") from None


def _keys(left: pd.DataFrame, right: pd.DataFrame, on: Any, left_on: Any, right_on: Any) -> tuple[list[Any], list[Any]]:
    def listed(value: Any) -> list[Any]:
        return list(value) if isinstance(value, (list, tuple)) else [value]

    if on is not None:
        return listed(on), listed(on)
    if left_on is not None or right_on is not None:
        if left_on is None or right_on is None:
            raise TypeError("merge needs both left_on= and right_on=")
        return listed(left_on), listed(right_on)
    common = [c for c in left.columns if c in right.columns]
    return common, common


MergeHow = Literal["inner", "left", "right", "outer", "cross"]
Validate = Literal["one_to_one", "1:1", "one_to_many", "1:m", "many_to_one", "m:1", "many_to_many", "m:m"]


def merge(
    left: ProtectedFrame,
    right: Any,
    *,
    how: MergeHow,
    on: Any,
    left_on: Any,
    right_on: Any,
    left_index: bool,
    right_index: bool,
    suffixes: tuple[str | None, str | None],
    indicator: Any,
    validate: Validate | None,
) -> ProtectedFrame:
    """``left.merge(right, ...)`` for a protected ``left`` (see the module docstring)."""
    if left_index or right_index:
        raise TypeError("merge on row labels is not available on protected data: reset_index() and merge on columns")
    if isinstance(right, Protected):
        if not isinstance(right, ProtectedFrame):
            raise TypeError("merge a protected frame (use to_frame() on a protected series)")
        return _merge_protected(left, right, how, on, left_on, right_on, suffixes, indicator)
    if isinstance(right, pd.Series):
        if right.name is None:
            raise ValueError("merge with a Series needs a named Series")
        right = right.to_frame()
    if not isinstance(right, pd.DataFrame):
        raise TypeError(f"merge takes a DataFrame, got {type(right).__name__}")
    if UNPROTECTED_MARK in right.attrs:
        raise refusal("merging the output of p.dp.unprotected() into protected data", "reprotect")
    right = public_frame(right, "ProtectedFrame.merge")
    if how not in ("inner", "left", "cross"):
        raise refusal(f"merge(how={how!r})", "public_rows")
    if validate not in (None, "many_to_one", "m:1"):
        raise refusal(f"merge(validate={validate!r})", "exact", "it checks whether the protected keys repeat")
    data = left._private
    levels, dtypes = list(data.index.names), level_dtypes(data)
    clash = [c for c in right.columns if c in levels]
    if clash or UNIT_LEVEL in right.index.names:
        raise ValueError(f"the public table has columns named like the protected row labels {clash or [UNIT_LEVEL]}; "
                         "rename them first")
    flat = flattened(data)
    if how != "cross":
        left_keys, right_keys = _keys(data, right, on, left_on, right_on)
        missing = [k for k in left_keys if k not in flat.columns or k == UNIT_LEVEL]
        missing += [k for k in right_keys if k not in right.columns]
        if missing or not left_keys:
            raise KeyError(f"merge keys not found: {missing or 'no common columns'}")
        _check_keys(flat, right, left_keys, right_keys)
        right = _public_key_units(flat, right, left_keys, right_keys)
        # Unhashable keys (lists) match nothing, as missing keys: an error from one would show it exists.
        flat = flat.copy(deep=False)
        for key in left_keys:
            flat[key] = hashable_or_missing(flat[key])
    else:
        right_keys = []
    if how == "left":
        # Unmatched rows get missing values: the public columns' types must not show whether any exist.
        right = right.astype({c: widened(t) for c, t in right.dtypes.items() if c not in right_keys})

    def run(frame: pd.DataFrame) -> pd.DataFrame:
        # Never sorted: sorting keys of mixed types fails, and only for such keys.
        merged = frame.merge(right, how=how, on=on, left_on=left_on, right_on=right_on, sort=False,
                             suffixes=suffixes, indicator=indicator, validate=validate)
        return with_levels(merged, levels, dtypes)

    template = probe(run, [flat], "ProtectedFrame.merge")
    with shielded("ProtectedFrame.merge"):
        merged: pd.DataFrame = conform(run(flat), template.dtypes, template)
    # A protected column holds its values under its label unless the public table has a column of that label
    # (other than a key of the same name), which may take the label (suffixes=("_x", "")): new expressions.
    joined = {lk for lk, rk in zip(left_keys, right_keys) if lk == rk} if how != "cross" else set()
    kept = {label: token for label, token in left._lineage.items()
            if label not in right.columns or label in joined}
    return left._wrap(merged, left._rows.derived(), lineage=kept)


def _merge_protected(
    left: ProtectedFrame,
    right: ProtectedFrame,
    how: MergeHow,
    on: Any,
    left_on: Any,
    right_on: Any,
    suffixes: tuple[str | None, str | None],
    indicator: Any,
) -> ProtectedFrame:
    lp, rp = left._protection, right._protection
    if lp.key == rp.key:
        raise refusal("merging a protected frame with itself", "cross_row",
                      "a self-join puts one person's values into other people's rows")
    if lp.budget is not rp.budget or lp.privacy_unit is None or rp.privacy_unit is None:
        raise refusal("merging two protected frames", "mixing", "they share no Budget and declared privacy_unit")
    left_key = on if on is not None else left_on
    right_key = on if on is not None else right_on
    if left_key != lp.privacy_unit or right_key != rp.privacy_unit:
        raise refusal("merging two protected frames", "mixing",
                      f"the join must be on the privacy units ({lp.privacy_unit!r} and {rp.privacy_unit!r})")
    if how not in ("inner", "left"):
        raise refusal(f"merge(how={how!r})", "public_rows")
    lunits = left._private.index.get_level_values(UNIT_LEVEL) if left._private.index.nlevels > 1 else left._private.index
    runits = right._private.index.get_level_values(UNIT_LEVEL) if right._private.index.nlevels > 1 else right._private.index
    if _key_kind(lunits.dtype) != _key_kind(runits.dtype):
        raise TypeError(f"the privacy units have different kinds ({lunits.dtype} and {runits.dtype})")
    levels, dtypes = list(left._private.index.names), level_dtypes(left._private)
    other = flattened(right._private)
    other = other.drop(columns=[*_user_levels(right._private), right_key], errors="ignore")
    if how == "left":
        other = other.astype({c: widened(t) for c, t in other.dtypes.items() if c != UNIT_LEVEL})

    def run(frame: pd.DataFrame) -> pd.DataFrame:
        joined = frame.merge(other, on=UNIT_LEVEL, how=how, suffixes=suffixes, indicator=indicator)
        return with_levels(joined, levels, dtypes)

    flat = flattened(left._private)
    template = probe(run, [flat], "ProtectedFrame.merge")
    with shielded("ProtectedFrame.merge"):
        merged = conform(run(flat), template.dtypes, template)
    protection = Protection(lp.budget, max(lp.max_contributions, rp.max_contributions), lp.privacy_unit,
                            neighbours=lp.neighbours)
    # A joined person's rows come from the left table's sample, if any (the right table only adds
    # to rows the left one has); a sampled right table gives no amplification.
    return ProtectedFrame(merged, protection, Rows(left._rows.sample))


Axis = Literal[0, 1, "index", "columns"]


# Series stacked as rows stay a series; everything else (frames, or binding columns) is a frame.
@overload
def concat(objs: Sequence[ProtectedSeries], axis: Literal[0, "index"] = ..., *,  # type: ignore[overload-overlap]
           join: Literal["inner", "outer"] = ..., ignore_index: bool = ..., keys: Any = ...) -> ProtectedSeries: ...


@overload
def concat(objs: Sequence[Protected], axis: Axis = ..., *, join: Literal["inner", "outer"] = ...,
           ignore_index: bool = ..., keys: Any = ...) -> ProtectedFrame: ...


def concat(objs: Sequence[Any], axis: Any = 0, *, join: Literal["inner", "outer"] = "outer", ignore_index: bool = False,
           keys: Any = None) -> Any:
    """``pd.concat`` for protected objects of one protection.

    Stacking rows (``axis=0``) repeats the people that appear in several
    pieces; every query keeps at most ``max_contributions`` rows per person.
    Binding columns (``axis=1``) needs pieces with the very same rows. Pieces
    from outside the protection are refused. With ``ignore_index=True`` the
    row labels given at ``protect()`` are dropped (the privacy-unit record
    stays, as always).

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": [30, 50, 70]}).dp.protect(epsilon=1.0)
    >>> both = dpframe.concat([p[p["age"] > 40], p[p["age"] > 60]])   # 70 appears twice
    >>> both.dp.budget is p.dp.budget
    True
    """
    pieces = list(objs)
    remote = stand_in(*pieces)
    if remote is not None:
        return remote.__dpframe_function__("concat", (pieces, axis), {"join": join, "ignore_index": ignore_index,
                                                                     "keys": keys})
    if not pieces:
        raise ValueError("concat needs at least one protected object")
    keys = public_value(keys, "concat(keys=)")  # the keys become row labels, hashed with the rows
    outside = [type(o).__name__ for o in pieces if not isinstance(o, Protected)]
    if outside:
        raise refusal("concat with objects that are not protected", "public_rows", f"got {outside}")
    first: Protected = pieces[0]
    if any(o._protection.key != first._protection.key for o in pieces):
        raise refusal("concat of different protections", "mixing", "they come from different protect() calls")
    datas = [o._private for o in pieces]
    if axis in (1, "columns"):
        if not same_rows(pieces):
            raise refusal("concat(axis=1)", "mixing", "the pieces hold different rows")
        with shielded("concat"):
            bound = pd.concat(datas, axis=1, join=join, keys=keys)
        return first._wrap(bound, lineage={label: token for o in pieces for label, token in o._lineage.items()})

    def run(*frames: Any) -> Any:
        stacked = pd.concat(frames, axis=0, join=join, keys=keys)
        if ignore_index:
            user = [n for n in stacked.index.names if n != UNIT_LEVEL]
            stacked = stacked.droplevel(user) if user else stacked
        elif keys is not None:
            order = [n for n in stacked.index.names if n != UNIT_LEVEL] + [UNIT_LEVEL]
            stacked = stacked.reorder_levels(order)
        return stacked

    # pandas 2 leaves empty or all-missing pieces out when it chooses dtypes, and whether a
    # filtered piece is empty is private: the types come from the pieces' schemas.
    with shielded("concat"):
        stacked = structural(run, datas, "concat")
    # Pieces from one sample stay in its account; any other mix gives no amplification.
    samples = {id(o._rows.sample): o._rows.sample for o in pieces}
    # A column holds one expression when every piece's does (two filters of one frame): else a new one.
    shared = {label: token for label, token in first._lineage.items()
              if all(o._lineage.get(label) is token for o in pieces)}
    return first._wrap(stacked, Rows(next(iter(samples.values())) if len(samples) == 1 else None), lineage=shared)
