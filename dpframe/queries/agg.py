"""Aggregate queries as data: counts, clipped sums and means of a protected frame, and scores built from them.

``p.dp.select`` scores its candidates, and ``p.dp.above_threshold`` scans its
queries, with these expressions -- never with a function of the rows -- so
that dpframe, not the analyst, bounds how much an answer can change when one
privacy unit is added or removed (its **sensitivity**). An expression is an
immutable value: it says what to compute and holds every constant it uses,
it can be compared, printed and sent as JSON (:meth:`Expr.to_dict`,
:func:`from_dict`), and its sensitivity and monotonicity follow from the
expression and ``k`` (the protection's ``max_contributions``) alone.

>>> import pandas as pd, dpframe
>>> from dpframe import agg
>>> older = agg.count(where="age >= 40") - agg.count(where="age < 40")
>>> older
agg.count(where='age >= 40') - agg.count(where='age < 40')
>>> older.sensitivity(1), older.monotonicity
(Fraction(2, 1), 'neither')
>>> agg.from_dict(older.to_dict()) == older
True

The aggregates
--------------
Each reads the rows of the frame it is asked of where the query string
``where`` holds (all rows without it; the grammar of ``DataFrame.query``,
evaluated by :meth:`~dpframe.ProtectedFrame.query`), each privacy unit kept
to at most k of them, as every dpframe query keeps it:

* ``count(where)``: the number of those rows;
* ``sum(value, bounds=(lo, hi), where)``: the sum of ``value`` -- a column
  name, or a row-wise expression such as ``"income / 1000"`` (evaluated by
  :meth:`~dpframe.ProtectedFrame.eval`) -- clipped to the bounds; a missing
  value counts 0;
* ``mean(value, bounds=(lo, hi), where)``: the mean of the clipped values that
  are not missing, the bounds' midpoint when there are none.

``@name`` in ``where`` and ``value`` refers to the caller's variable ``name``
as in pandas, read when the expression is made: its value (a number, text,
True/False/None, a date, timestamp or duration, or a list of them) is stored in
the expression (``@`` values of any other kind are refused: they could not
travel as JSON, and pandas would run their own code against the data).
``@candidate`` is the exception: ``p.dp.select`` binds it to each candidate
in turn.

Answers are exact: counts are integers, and sums and means are computed on a
grid of step g, a power of two about 2^-30 of max(|lo|, |hi|) (each clipped
value rounded to the nearest multiple, :meth:`~dpframe.noise.mechanism.SumGrid.exact`),
as exact fractions. ``lo`` and ``hi`` below are the bounds rounded to that
grid: the bounds themselves when they are on it (integers below 2^30 in
magnitude, halves, quarters, ... are), otherwise within g/2 of them.

Sensitivity and monotonicity
----------------------------
Adding or removing one unit adds or removes at most k rows of each aggregate.
Monotone means the answer never decreases when a unit is added (for all data
sets; non-increasing likewise), which lets the mechanisms halve their noise.

* ``count``: Δ = k (at most k rows come or go); non-decreasing.
* ``sum``: Δ = k·max(|lo|, |hi|) (each row adds one clipped value, or 0);
  non-decreasing if lo ≥ 0, non-increasing if hi ≤ 0.
* ``mean``: Δ = k(hi − lo)/(k + 1): from no values the mean moves from the
  midpoint by at most (hi − lo)/2 ≤ k(hi − lo)/(k + 1); from n ≥ 1 values,
  adding m ≤ k moves it by m·|new mean − old mean|/(n + m) ≤ k(hi − lo)/(k + 1);
  neither.
* ``a₁E₁ + … + aₙEₙ + c`` (``+``, ``-``, multiplying or dividing by a number):
  Δ = Σ|aᵢ|Δᵢ (one unit moves every part at once; triangle inequality);
  monotone when every aᵢEᵢ moves the same way. Equal parts are merged first
  (E − E is the constant 0).
* ``abs(E)``: Δ of E (abs is 1-Lipschitz); neither, unless E is constant.
* ``minimum(E₁, …)``, ``maximum(E₁, …)``: Δ = max Δᵢ (|min aᵢ − min bᵢ| ≤ max |aᵢ − bᵢ|);
  monotone when all parts move the same way.
* ``clip(E, lower, upper)``: Δ of E, and at most upper − lower (clip is
  1-Lipschitz, and both answers lie in [lower, upper]); E's direction (clip
  is non-decreasing).

Multiplying two aggregates is refused: a product has no sensitivity bounded
from the expression alone.

JSON
----
:meth:`Expr.to_dict` gives JSON-compatible data (``json.dumps`` takes it): an
``"op"`` and its fields, numbers as JSON numbers, ``@`` values under
``"constants"`` as JSON values, except dates (``{"$date": "2024-05-01"}``),
timestamps (``{"$timestamp": "2024-05-01T12:00:00+02:00", "tz": "Europe/Oslo"}``,
``tz`` null without a named zone) and durations (``{"$timedelta": "P1DT0H0M0S"}``).
Two expressions are equal when their JSON forms are (so ``1`` and ``True``,
or ``1`` and ``1.5``, are different constants; ``2.0`` is stored as ``2``).
"""

from __future__ import annotations

import builtins
import datetime
import json
import math
import sys
import zoneinfo
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from types import FrameType
from typing import Any, ClassVar, Literal, TypeAlias, cast

import numpy as np
import pandas as pd

from dpframe.noise.mechanism import SumGrid
from dpframe.protection.analyst import public_value
from dpframe.protection.expressions import local_names
from dpframe.protection.frame import ProtectedFrame
from dpframe.protection.series import ProtectedSeries
from dpframe.queries import kernels
from dpframe.queries.plan import Target, check_bounds, check_numeric

__all__ = ["Expr", "clip", "count", "from_dict", "maximum", "mean", "minimum", "sum"]

Number: TypeAlias = int | float
Constant: TypeAlias = Any  # None, bool, int, float, str, date, Timestamp, Timedelta, or a tuple of them
Constants: TypeAlias = tuple[tuple[str, Constant], ...]
Monotonicity = Literal["non-decreasing", "non-increasing", "neither", "constant"]
# Each node's answer given the answers of the aggregates (leaves) it is built from.
LeafAnswers: TypeAlias = Callable[["Aggregate"], Fraction]

CANDIDATE = "candidate"
# The sensitivities the mechanisms take (dpframe.selection.exponential.check_sensitivity).
_SENSITIVITIES = (Fraction(2) ** -900, Fraction(2) ** 900)
_RATIO = ("dividing by an aggregate query is refused: a ratio has no sensitivity bounded by the expression alone "
          "(the denominator can be near 0). For an average use agg.mean(value, bounds=...)")
# Float numbers are stored as ints when they are whole and ints hold them exactly.
_EXACT_INTS = 2**53


# -- numbers and @ values ----------------------------------------------------------------------------------


def _number(value: Any, what: str) -> Number:
    """A finite int or float, whole floats as ints; refused otherwise (from the argument alone)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number (int or float), got {type(value).__name__}")
    plain = public_value(value, what)  # a subclass's own methods never run later: its base value
    number = plain.item() if isinstance(plain, np.generic) else plain
    if type(number) is int:
        return number
    number = float(number)
    if not math.isfinite(number):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return int(number) if number.is_integer() and abs(number) < _EXACT_INTS else number


def _text(value: Any, what: str) -> str:
    if type(value) is not str or not value.strip():
        raise TypeError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _names(text: str | None) -> set[str]:
    """The ``@`` names in a query string, as :func:`dpframe.protection.expressions.evaluate` reads them."""
    return set() if text is None else local_names(text)


def _constant(value: Any, name: str, depth: int = 0) -> Constant:
    """An ``@`` value as stored in an expression (module docstring); refused when it has no JSON form."""
    value = public_value(value, f"@{name} in an aggregate query")
    kind = type(value)
    if kind in (type(None), bool, int, str, datetime.date):
        return value
    if kind is float:
        if not math.isfinite(value):
            raise ValueError(f"@{name} is {value!r}: an aggregate query's @ values must be finite (test for missing "
                             "values with .isna() in the query string)")
        return value
    if isinstance(value, np.generic) and not isinstance(value, (np.datetime64, np.timedelta64)):
        return _constant(value.item(), name, depth)
    if kind in (datetime.datetime, pd.Timestamp, np.datetime64):
        stamp = pd.Timestamp(value)
        if pd.isna(stamp):
            raise ValueError(f"@{name} is NaT: an aggregate query's @ values must be dates, not missing ones")
        return stamp
    if kind in (datetime.timedelta, pd.Timedelta, np.timedelta64):
        duration = pd.Timedelta(value)
        if pd.isna(duration):
            raise ValueError(f"@{name} is NaT: an aggregate query's @ values must be durations, not missing ones")
        return duration
    if kind in (list, tuple, np.ndarray, pd.Series, pd.Index) and depth == 0:
        items = value.tolist() if kind not in (list, tuple) else value
        return tuple(_constant(item, name, 1) for item in items)
    raise TypeError(
        f"@{name} is a {kind.__name__}: an aggregate query stores its @ values, which must be numbers, text, "
        "True/False/None, dates, timestamps or durations, or a list of them (a set: pass sorted(s))"
    )


def _capture(caller: FrameType, **texts: str | None) -> Constants:
    """The values of the ``@`` names of ``texts`` in the caller's frame (all but ``@candidate``), read now."""
    for what, text in texts.items():
        if text is not None:
            _text(text, what)
    scope = {**caller.f_globals, **caller.f_locals}
    names = sorted(set[str]().union(*map(_names, texts.values())) - {CANDIDATE})
    missing = [name for name in names if name not in scope]
    if missing:
        raise NameError(f"@{missing[0]} is not defined where the aggregate query is made")
    return tuple((name, _constant(scope[name], name)) for name in names)


def _zone(stamp: pd.Timestamp) -> str | None:
    zone = stamp.tz
    if type(zone) is zoneinfo.ZoneInfo:
        return zone.key
    name = getattr(zone, "zone", None)  # pytz's named zones
    return name if type(name) is str else None


def _encode(value: Constant) -> Any:
    if type(value) is tuple:
        return [_encode(item) for item in value]
    if type(value) is pd.Timestamp:
        return {"$timestamp": value.isoformat(), "tz": _zone(value)}
    if type(value) is pd.Timedelta:
        return {"$timedelta": value.isoformat()}
    if type(value) is datetime.date:
        return {"$date": value.isoformat()}
    return value


def _decode(data: Any, name: str) -> Constant:
    if type(data) is list:
        return _constant(tuple(_decode(item, name) for item in data), name)
    if type(data) is not dict:
        return _constant(data, name)
    try:
        if data.keys() == {"$date"}:
            return datetime.date.fromisoformat(data["$date"])
        if data.keys() == {"$timedelta"}:
            return pd.Timedelta(data["$timedelta"])
        if data.keys() == {"$timestamp", "tz"}:
            stamp = pd.Timestamp(data["$timestamp"])
            return stamp if data["tz"] is None else stamp.tz_convert(data["tz"])
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"@{name}: {data!r} is not a valid date, timestamp or duration ({error})") from None
    raise ValueError(f"@{name}: {data!r} is not an encoded @ value (see dpframe.agg's documentation, JSON)")


def _fraction_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.6g}"


def _mapping(data: Any, op: str, keys: set[str]) -> dict[str, Any]:
    if type(data) is not dict or data.get("op") != op:
        raise ValueError(f"not the JSON form of an aggregate query: {data!r}")
    if data.keys() != keys | {"op"}:
        raise ValueError(f"the JSON form of {op} has the keys {sorted(keys | {'op'})}, got {sorted(data)}")
    return data


# -- expressions -------------------------------------------------------------------------------------------


class Expr:
    """An aggregate query or a score built from them (module docstring): immutable, comparable, JSON-able.

    >>> from dpframe import agg
    >>> score = -abs(agg.count(where="age < @candidate") - 500)
    >>> score.bind(40)
    -abs(agg.count(where='age < @candidate', @candidate=40) - 500)
    >>> score.sensitivity(2), score.monotonicity
    (Fraction(2, 1), 'neither')
    """

    # numpy scalars defer to our reflected operators (2.0 * e is e.__rmul__(2.0)), never wrap us in an array.
    __array_ufunc__ = None
    op: ClassVar[str]

    # -- what it is ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON-compatible form (module docstring, JSON); :func:`from_dict` reads it back."""
        raise NotImplementedError

    def sensitivity(self, contributions: int = 1) -> Fraction:
        """The most the answer can change when one unit with up to ``contributions`` rows is added or removed.

        >>> from dpframe import agg
        >>> agg.sum("x", bounds=(-1, 4)).sensitivity(3)
        Fraction(12, 1)
        """
        if type(contributions) is not int or contributions < 1:
            raise ValueError(f"contributions must be a positive integer, got {contributions!r}")
        return self._sensitivity(contributions)

    @property
    def monotonicity(self) -> Monotonicity:
        """How the answer moves when a unit is added: ``"non-decreasing"``, ``"non-increasing"``, ``"neither"``,
        or ``"constant"`` (it does not depend on the data).

        >>> from dpframe import agg
        >>> agg.count().monotonicity, (-agg.count()).monotonicity, agg.mean("x", bounds=(0, 1)).monotonicity
        ('non-decreasing', 'non-increasing', 'neither')
        """
        rises, falls = self._moves
        return {(True, False): "non-decreasing", (False, True): "non-increasing", (True, True): "neither",
                (False, False): "constant"}[(rises, falls)]  # type: ignore[return-value]

    def bind(self, candidate: Any) -> Expr:
        """This expression with ``@candidate`` standing for ``candidate`` (a plain value, as an ``@`` value).

        >>> from dpframe import agg
        >>> agg.count(where="city == @candidate").bind("Oslo")
        agg.count(where='city == @candidate', @candidate='Oslo')
        """
        if not any(CANDIDATE in leaf._names_used() for leaf in self._leaves()):
            return self
        return self._bound(_constant(candidate, CANDIDATE))

    # -- internals ------------------------------------------------------------------
    @property
    def _moves(self) -> tuple[bool, bool]:
        """(can rise, can fall) when a unit is added."""
        raise NotImplementedError

    def _sensitivity(self, contributions: int) -> Fraction:
        raise NotImplementedError

    def _reason(self, contributions: int) -> str:
        """Why the sensitivity is what it is, in a few words (for the ledger)."""
        raise NotImplementedError

    def _bound(self, candidate: Constant) -> Expr:
        raise NotImplementedError

    def _leaves(self) -> Iterator[Aggregate]:
        raise NotImplementedError

    def _answer(self, leaves: LeafAnswers) -> Fraction:
        raise NotImplementedError

    @cached_property
    def _key(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    # -- arithmetic that keeps a derived sensitivity (module docstring) --------------
    def __add__(self, other: Expr | Number) -> Expr:
        return _combination([(1, self), (1, other)])

    def __radd__(self, other: Number) -> Expr:
        return _combination([(1, other), (1, self)])

    def __sub__(self, other: Expr | Number) -> Expr:
        return _combination([(1, self), (-1, other)])

    def __rsub__(self, other: Number) -> Expr:
        return _combination([(1, other), (-1, self)])

    def __neg__(self) -> Expr:
        return _combination([(-1, self)])

    def __pos__(self) -> Expr:
        return self

    def __mul__(self, other: Number) -> Expr:
        if isinstance(other, Expr):
            raise TypeError(
                "multiplying two aggregate queries is refused: a product has no sensitivity bounded by the "
                "expression alone (one unit moves each factor, and the product by up to the other factor's size). "
                "Multiply by a number, or score with a sum or a mean of a row-wise product, e.g. "
                "agg.sum('price * quantity', bounds=(0, 1000))"
            )
        return _combination([(_number(other, "a factor"), self)])

    __rmul__ = __mul__

    def __truediv__(self, other: Number) -> Expr:
        if isinstance(other, Expr):
            raise TypeError(_RATIO)
        divisor = _number(other, "a divisor")
        if divisor == 0:
            raise ZeroDivisionError("an aggregate query divided by 0")
        return _scaled(self, lambda a: a / divisor)

    def __rtruediv__(self, other: Number) -> Expr:
        raise TypeError(_RATIO)

    def __abs__(self) -> Expr:
        return Abs(self)


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class Aggregate(Expr):
    """An aggregate of the rows where ``where`` holds, with the ``@`` values it uses (a leaf of an expression)."""

    where: str | None = None
    constants: Constants = ()

    def __post_init__(self) -> None:
        if self.where is not None:
            _text(self.where, "where")
        names = self._names_used()
        pairs = self.constants
        if type(pairs) is not tuple or not all(type(p) is tuple and len(p) == 2 and type(p[0]) is str for p in pairs) \
                or len({name for name, _ in pairs}) != len(pairs):
            raise ValueError(f"constants must be (name, value) pairs with distinct names, got {pairs!r}")
        stored = dict(pairs)
        unknown = set(stored) - names
        if unknown:
            raise ValueError(f"@{sorted(unknown)[0]} is not used by {self.op}'s strings")
        missing = names - set(stored) - {CANDIDATE}
        if missing:
            raise NameError(f"@{sorted(missing)[0]} has no value: give it in constants")
        object.__setattr__(self, "constants", tuple(sorted((n, _constant(v, n)) for n, v in stored.items())))

    def _names_used(self) -> set[str]:
        return _names(self.where)

    def _init_fields(self) -> dict[str, Any]:
        """The constructor's arguments but ``constants``."""
        return {"where": self.where}

    def to_dict(self) -> dict[str, Any]:
        fields = {name: list(value) if type(value) is tuple else value for name, value in self._init_fields().items()}
        return {"op": self.op, **fields, "constants": {name: _encode(value) for name, value in self.constants}}

    def _arguments(self) -> list[str]:
        return ([] if self.where is None else [f"where={self.where!r}"]) + [
            f"@{name}={value!r}" for name, value in self.constants]

    def __repr__(self) -> str:
        return f"agg.{self.op}({', '.join(self._arguments())})"

    def _bound(self, candidate: Constant) -> Expr:
        if CANDIDATE not in self._names_used():
            return self
        constants = tuple((n, v) for n, v in self.constants if n != CANDIDATE) + ((CANDIDATE, candidate),)
        return type(self)(**{**self._init_fields(), "constants": constants})

    def _leaves(self) -> Iterator[Aggregate]:
        yield self

    def _answer(self, leaves: LeafAnswers) -> Fraction:
        return leaves(self)

    def _read(self, rows: ProtectedFrame, contributions: int) -> Callable[[], Fraction]:
        """The row-wise part on ``rows`` (the rows where ``where`` holds), now; the exact answer, when called."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class Count(Aggregate):
    """``count(where)``: the number of rows where ``where`` holds (module docstring)."""

    op: ClassVar[str] = "count"

    @property
    def _moves(self) -> tuple[bool, bool]:
        return True, False

    def _sensitivity(self, contributions: int) -> Fraction:
        return Fraction(contributions)

    def _reason(self, contributions: int) -> str:
        return f"a count: k = {contributions}"

    def _read(self, rows: ProtectedFrame, contributions: int) -> Callable[[], Fraction]:
        target = Target.of(rows)
        # Only the rows' units are needed: keep no column, so many filtered copies stay small.
        units = Target(pd.DataFrame(index=target.obj.index), target.protection, target.sample)

        def count() -> Fraction:
            mask = units.rows_in_use()
            return Fraction(len(units.obj) if mask is None else int(mask.sum()))

        return count


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class Clipped(Aggregate):
    """What ``sum`` and ``mean`` share: a value per row, clipped to ``bounds``, on an exact grid."""

    value: str
    bounds: tuple[Number, Number]

    def __post_init__(self) -> None:
        _text(self.value, "value")
        if type(self.bounds) not in (tuple, list) or len(self.bounds) != 2:
            check_bounds(self.bounds)  # its message for None and the like
            raise TypeError(f"bounds must be a pair (lower, upper), got {self.bounds!r}")
        lo, hi = (_number(b, "bounds") for b in self.bounds)
        check_bounds((lo, hi))
        object.__setattr__(self, "bounds", (lo, hi))
        super().__post_init__()

    def _names_used(self) -> set[str]:
        return _names(self.where) | _names(self.value)

    def _init_fields(self) -> dict[str, Any]:
        return {"value": self.value, "bounds": self.bounds, "where": self.where}

    def _arguments(self) -> list[str]:
        return [repr(self.value), f"bounds={self.bounds!r}", *super()._arguments()]

    def _grid(self, contributions: int) -> SumGrid:
        return SumGrid.exact(float(self.bounds[0]), float(self.bounds[1]), contributions)

    def _grid_bounds(self) -> tuple[Fraction, Fraction]:
        """The bounds rounded to the grid: every grid value lies between them."""
        step = self._grid(1).data_step
        return round(Fraction(self.bounds[0]) / step) * step, round(Fraction(self.bounds[1]) / step) * step

    def _read(self, rows: ProtectedFrame, contributions: int) -> Callable[[], Fraction]:
        if self.value in rows.columns:
            values = rows[self.value]
        else:
            values = rows.eval(self.value, local_dict=dict(self.constants))
        if not isinstance(values, ProtectedSeries):
            raise TypeError(f"{self.op}'s value {self.value!r} must give one number per row: a column name or a "
                            "row-wise expression such as 'income / 1000'")
        target = Target.of(values)
        check_numeric(target.series, f"agg.{self.op}")
        grid = self._grid(contributions)

        def answer() -> Fraction:
            mask = target.rows_in_use()
            floats = kernels.as_float_array(target.series)
            sums = kernels.moment_sums(floats if mask is None else floats[mask], 0.0, grid)
            return self._exact(int(sums.sums[0]), int(sums.counts[0]), grid.data_step)

        return answer

    def _exact(self, grid_sum: int, present: int, step: Fraction) -> Fraction:
        raise NotImplementedError


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class Sum(Clipped):
    """``sum(value, bounds, where)``: the sum of the clipped values, missing ones counting 0 (module docstring)."""

    op: ClassVar[str] = "sum"

    @property
    def _moves(self) -> tuple[bool, bool]:
        lo, hi = self.bounds
        return hi > 0, lo < 0

    def _sensitivity(self, contributions: int) -> Fraction:
        grid = self._grid(contributions)
        return grid.sensitivity * grid.data_step

    def _reason(self, contributions: int) -> str:
        return (f"a sum clipped to {self.bounds}: k·max(|lo|, |hi|) = "
                f"{_fraction_text(self._sensitivity(contributions))}")

    def _exact(self, grid_sum: int, present: int, step: Fraction) -> Fraction:
        return grid_sum * step


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class Mean(Clipped):
    """``mean(value, bounds, where)``: the mean of the clipped non-missing values, else the bounds' midpoint."""

    op: ClassVar[str] = "mean"

    @property
    def _moves(self) -> tuple[bool, bool]:
        return True, True

    def _sensitivity(self, contributions: int) -> Fraction:
        lo, hi = self._grid_bounds()
        return contributions * (hi - lo) / (contributions + 1)

    def _reason(self, contributions: int) -> str:
        return (f"a mean clipped to {self.bounds}: k(hi − lo)/(k + 1) = "
                f"{_fraction_text(self._sensitivity(contributions))}")

    def _exact(self, grid_sum: int, present: int, step: Fraction) -> Fraction:
        if present == 0:
            lo, hi = self._grid_bounds()
            return (lo + hi) / 2
        return grid_sum * step / present


@dataclass(frozen=True, eq=False, repr=False)
class Linear(Expr):
    """``a₁E₁ + … + aₙEₙ + c``: made by ``+``, ``-``, ``*`` and ``/`` with numbers (module docstring)."""

    terms: tuple[tuple[Number, Expr], ...]
    constant: Number = 0
    op: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        if type(self.terms) is not tuple or not all(
                type(t) is tuple and len(t) == 2 and _is_part(t[1]) and type(t[1]) is not Linear
                for t in self.terms):
            raise TypeError("a Linear expression's terms are (number, expression) pairs: build it with + - * /")
        object.__setattr__(self, "terms", tuple((_number(a, "a coefficient"), term) for a, term in self.terms))
        object.__setattr__(self, "constant", _number(self.constant, "a constant"))

    @property
    def _moves(self) -> tuple[bool, bool]:
        rises = falls = False
        for a, term in self.terms:
            up, down = term._moves
            if a < 0:
                up, down = down, up
            rises, falls = rises or up, falls or down
        return rises, falls

    def _sensitivity(self, contributions: int) -> Fraction:
        return builtins.sum((abs(Fraction(a)) * term._sensitivity(contributions) for a, term in self.terms),
                            Fraction(0))

    def _reason(self, contributions: int) -> str:
        return f"a linear combination: Σ|aᵢ|Δᵢ = {_fraction_text(self._sensitivity(contributions))}"

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "terms": [[a, term.to_dict()] for a, term in self.terms], "constant": self.constant}

    def __repr__(self) -> str:
        parts = [(a, repr(term) if abs(a) == 1 else f"{abs(a)!r} * {term!r}") for a, term in self.terms]
        if self.constant or not parts:
            parts.append((self.constant, repr(abs(self.constant))))
        first, text = parts[0]
        return " ".join([("-" if first < 0 else "") + text] + [f"{'-' if a < 0 else '+'} {t}" for a, t in parts[1:]])

    def _bound(self, candidate: Constant) -> Expr:
        return _combination([(a, term._bound(candidate)) for a, term in self.terms] + [(1, self.constant)])

    def _leaves(self) -> Iterator[Aggregate]:
        for _, term in self.terms:
            yield from term._leaves()

    def _answer(self, leaves: LeafAnswers) -> Fraction:
        return builtins.sum((Fraction(a) * term._answer(leaves) for a, term in self.terms), Fraction(self.constant))


def _is_part(value: Any) -> bool:
    """An expression of this module, by exact type (a subclass could override what dpframe derives)."""
    return type(value) in EXPRESSIONS


def _terms(part: Expr | Number) -> tuple[tuple[tuple[Number, Expr], ...], Number]:
    if type(part) is Linear:
        return part.terms, part.constant
    if _is_part(part):
        return ((1, cast(Expr, part)),), 0
    return (), _number(part, "a number added to an aggregate query")


def _combination(parts: Sequence[tuple[Number, Expr | Number]]) -> Expr:
    """Σ aᵢ·partᵢ, flattened, equal terms merged (zeros dropped); a lone term with coefficient 1 is itself."""
    merged: dict[Expr, Number] = {}
    constant: Number = 0
    for a, part in parts:
        terms, c = _terms(part)
        constant = _product(a, c) + constant
        for b, term in terms:
            merged[term] = merged.get(term, 0) + _product(a, b)
    terms = tuple((_number(a, "a coefficient"), term) for term, a in merged.items() if a != 0)
    constant = _number(constant, "a constant")
    if len(terms) == 1 and terms[0][0] == 1 and constant == 0:
        return terms[0][1]
    return Linear(terms, constant)


def _product(a: Number, b: Number) -> Number:
    product = a * b
    if type(product) is float and not math.isfinite(product):
        raise ValueError("a coefficient of the aggregate query overflowed: rescale it")
    return product


def _scaled(expr: Expr, scale: Callable[[Number], Number]) -> Expr:
    terms, constant = _terms(expr)
    return _combination([(scale(a), term) for a, term in terms] + [(1, scale(constant))])


def _as_expr(value: Expr | Number, what: str) -> Expr:
    return cast(Expr, value) if _is_part(value) else Linear((), _number(value, what))


@dataclass(frozen=True, eq=False, repr=False)
class Abs(Expr):
    """``abs(E)``: Δ of E (module docstring)."""

    of: Expr
    op: ClassVar[str] = "abs"

    def __post_init__(self) -> None:
        if not _is_part(self.of):
            raise TypeError(f"abs takes an aggregate query, got {type(self.of).__name__}")

    @property
    def _moves(self) -> tuple[bool, bool]:
        return (False, False) if self.of._moves == (False, False) else (True, True)

    def _sensitivity(self, contributions: int) -> Fraction:
        return self.of._sensitivity(contributions)

    def _reason(self, contributions: int) -> str:
        return f"abs: its argument's Δ = {_fraction_text(self._sensitivity(contributions))}"

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "of": self.of.to_dict()}

    def __repr__(self) -> str:
        return f"abs({self.of!r})"

    def _bound(self, candidate: Constant) -> Expr:
        return Abs(self.of._bound(candidate))

    def _leaves(self) -> Iterator[Aggregate]:
        return self.of._leaves()

    def _answer(self, leaves: LeafAnswers) -> Fraction:
        return abs(self.of._answer(leaves))


@dataclass(frozen=True, eq=False, repr=False)
class Extremum(Expr):
    """What ``minimum`` and ``maximum`` share: Δ = max Δᵢ (module docstring)."""

    of: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if type(self.of) is not tuple or len(self.of) < 2 or not all(_is_part(e) for e in self.of):
            raise TypeError(f"agg.{self.op} takes two or more aggregate queries or numbers")

    @property
    def _moves(self) -> tuple[bool, bool]:
        moves = [part._moves for part in self.of]
        return any(up for up, _ in moves), any(down for _, down in moves)

    def _sensitivity(self, contributions: int) -> Fraction:
        return max(part._sensitivity(contributions) for part in self.of)

    def _reason(self, contributions: int) -> str:
        return f"a {self.op}: its parts' largest Δ = {_fraction_text(self._sensitivity(contributions))}"

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "of": [part.to_dict() for part in self.of]}

    def __repr__(self) -> str:
        return f"agg.{self.op}({', '.join(map(repr, self.of))})"

    def _bound(self, candidate: Constant) -> Expr:
        return type(self)(tuple(part._bound(candidate) for part in self.of))

    def _leaves(self) -> Iterator[Aggregate]:
        for part in self.of:
            yield from part._leaves()

    def _answer(self, leaves: LeafAnswers) -> Fraction:
        answers = [part._answer(leaves) for part in self.of]
        return min(answers) if self.op == "minimum" else max(answers)


class Minimum(Extremum):
    """``minimum(E₁, …)``."""

    op: ClassVar[str] = "minimum"


class Maximum(Extremum):
    """``maximum(E₁, …)``."""

    op: ClassVar[str] = "maximum"


@dataclass(frozen=True, eq=False, repr=False)
class Clip(Expr):
    """``clip(E, lower, upper)``: Δ of E and at most upper − lower; E's direction (module docstring)."""

    of: Expr
    lower: Number | None = None
    upper: Number | None = None
    op: ClassVar[str] = "clip"

    def __post_init__(self) -> None:
        if not _is_part(self.of):
            raise TypeError(f"agg.clip takes an aggregate query, got {type(self.of).__name__}")
        lower = None if self.lower is None else _number(self.lower, "lower")
        upper = None if self.upper is None else _number(self.upper, "upper")
        if lower is None and upper is None:
            raise ValueError("agg.clip needs lower=, upper= or both")
        if lower is not None and upper is not None and lower > upper:
            raise ValueError(f"agg.clip needs lower <= upper, got {lower!r} > {upper!r}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def _moves(self) -> tuple[bool, bool]:
        return (False, False) if self.lower is not None and self.lower == self.upper else self.of._moves

    def _sensitivity(self, contributions: int) -> Fraction:
        inner = self.of._sensitivity(contributions)
        if self.lower is None or self.upper is None:
            return inner
        return min(inner, Fraction(self.upper) - Fraction(self.lower))

    def _reason(self, contributions: int) -> str:
        return f"a clip: its argument's Δ, at most upper − lower = {_fraction_text(self._sensitivity(contributions))}"

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "of": self.of.to_dict(), "lower": self.lower, "upper": self.upper}

    def __repr__(self) -> str:
        ends = "".join(f", {name}={value!r}" for name, value in (("lower", self.lower), ("upper", self.upper))
                       if value is not None)
        return f"agg.clip({self.of!r}{ends})"

    def _bound(self, candidate: Constant) -> Expr:
        return Clip(self.of._bound(candidate), self.lower, self.upper)

    def _leaves(self) -> Iterator[Aggregate]:
        return self.of._leaves()

    def _answer(self, leaves: LeafAnswers) -> Fraction:
        value = self.of._answer(leaves)
        if self.lower is not None:
            value = max(value, Fraction(self.lower))
        if self.upper is not None:
            value = min(value, Fraction(self.upper))
        return value


# The expression types, by exact type (a subclass could override what dpframe derives).
EXPRESSIONS: frozenset[type] = frozenset({Count, Sum, Mean, Linear, Abs, Minimum, Maximum, Clip})


def is_expression(value: Any) -> bool:
    """True for an expression of this module, by exact type -- and every part of it.

    >>> is_expression(count()), is_expression(lambda c: count()), is_expression(2 * count() + 1)
    (True, False, True)
    """
    if not _is_part(value):
        return False
    parts: tuple[Any, ...] = ()
    if type(value) is Linear:
        parts = tuple(term for _, term in value.terms)
    elif type(value) in (Abs, Clip):
        parts = (value.of,)
    elif type(value) in (Minimum, Maximum):
        parts = value.of if type(value.of) is tuple else (None,)
    return all(is_expression(part) for part in parts)


# -- the public constructors -------------------------------------------------------------------------------


def count(where: str | None = None) -> Expr:
    """The number of rows where ``where`` holds (all rows without it). Δ = k, non-decreasing.

    >>> count(where="age >= 65 and sex == 'F'")
    agg.count(where="age >= 65 and sex == 'F'")
    """
    return Count(where=where, constants=_capture(sys._getframe(1), where=where))


def sum(value: str, bounds: tuple[Number, Number], where: str | None = None) -> Expr:
    """The sum of ``value`` clipped to ``bounds`` over the rows where ``where`` holds; missing values count 0.

    ``value`` is a column name or a row-wise expression (``"income / 1000"``).
    Δ = k·max(|lo|, |hi|); non-decreasing when lo ≥ 0, non-increasing when hi ≤ 0.

    >>> limit = 100
    >>> s = sum("hours * 52", bounds=(0, 5000), where="hours <= @limit")
    >>> s, s.sensitivity(1)
    (agg.sum('hours * 52', bounds=(0, 5000), where='hours <= @limit', @limit=100), Fraction(5000, 1))
    """
    return Sum(value=value, bounds=bounds, where=where, constants=_capture(sys._getframe(1), where=where, value=value))


def mean(value: str, bounds: tuple[Number, Number], where: str | None = None) -> Expr:
    """The mean of ``value`` clipped to ``bounds`` over the non-missing values where ``where`` holds.

    The bounds' midpoint when there are no values. Δ = k(hi − lo)/(k + 1); not monotone.

    >>> mean("age", bounds=(0, 120)).sensitivity(1), mean("age", bounds=(0, 120)).sensitivity(3)
    (Fraction(60, 1), Fraction(90, 1))
    """
    return Mean(value=value, bounds=bounds, where=where, constants=_capture(sys._getframe(1), where=where, value=value))


def minimum(*parts: Expr | Number) -> Expr:
    """The smallest of two or more expressions (or numbers), like ``numpy.minimum``. Δ = the largest Δ of the parts.

    >>> minimum(count(where="x > 0"), 100).sensitivity(1)
    Fraction(1, 1)
    """
    return Minimum(tuple(_as_expr(part, "a part of agg.minimum") for part in parts))


def maximum(*parts: Expr | Number) -> Expr:
    """The largest of two or more expressions (or numbers), like ``numpy.maximum``. Δ = the largest Δ of the parts.

    >>> maximum(count(where="x > 0"), 2 * count(where="x < 0")).sensitivity(1)
    Fraction(2, 1)
    """
    return Maximum(tuple(_as_expr(part, "a part of agg.maximum") for part in parts))


def clip(expr: Expr, lower: Number | None = None, upper: Number | None = None) -> Expr:
    """``expr`` clipped to ``[lower, upper]``, like ``Series.clip``. Δ = min(Δ of expr, upper − lower).

    >>> clip(count(), 0, 0.5).sensitivity(4)
    Fraction(1, 2)
    """
    return Clip(expr, lower, upper)


def from_dict(data: Any) -> Expr:
    """The expression of a :meth:`Expr.to_dict` form, validated as the constructors validate their arguments.

    >>> from_dict({"op": "count", "where": "age > @a", "constants": {"a": 40}})
    agg.count(where='age > @a', @a=40)
    """
    op = data.get("op") if type(data) is dict else None
    if op == "count":
        fields = _mapping(data, op, {"where", "constants"})
        return Count(where=fields["where"], constants=_decoded_constants(fields["constants"]))
    if op in ("sum", "mean"):
        fields = _mapping(data, op, {"value", "bounds", "where", "constants"})
        kind = Sum if op == "sum" else Mean
        bounds = fields["bounds"]
        return kind(value=fields["value"], bounds=tuple(bounds) if type(bounds) is list else bounds,
                    where=fields["where"], constants=_decoded_constants(fields["constants"]))
    if op == "linear":
        fields = _mapping(data, op, {"terms", "constant"})
        if type(fields["terms"]) is not list or not all(type(t) is list and len(t) == 2 for t in fields["terms"]):
            raise ValueError(f"the terms of a linear expression are [coefficient, expression] pairs, got "
                             f"{fields['terms']!r}")
        return _combination([(_number(a, "a coefficient"), from_dict(term)) for a, term in fields["terms"]]
                            + [(1, _number(fields["constant"], "a constant"))])
    if op == "abs":
        return Abs(from_dict(_mapping(data, op, {"of"})["of"]))
    if op in ("minimum", "maximum"):
        parts = _mapping(data, op, {"of"})["of"]
        if type(parts) is not list:
            raise ValueError(f"agg.{op} takes a list of expressions, got {parts!r}")
        return (Minimum if op == "minimum" else Maximum)(tuple(from_dict(part) for part in parts))
    if op == "clip":
        fields = _mapping(data, op, {"of", "lower", "upper"})
        return Clip(from_dict(fields["of"]), fields["lower"], fields["upper"])
    raise ValueError(f"not the JSON form of an aggregate query (no known 'op'): {data!r}")


def _decoded_constants(data: Any) -> Constants:
    if type(data) is not dict:
        raise ValueError(f"constants must be a JSON object of @ values, got {data!r}")
    return tuple((name, _decode(value, name)) for name, value in data.items())


# -- evaluation, for the mechanisms ------------------------------------------------------------------------


@dataclass(frozen=True)
class Derived:
    """What the mechanisms need to know of a set of expressions, derived from them and k alone, and a sentence
    for the ledger that says what and why."""

    sensitivity: Fraction
    monotonic: bool
    reason: str


def derive(expressions: Sequence[Expr], contributions: int, what: str) -> Derived:
    """The largest sensitivity of ``expressions`` (``what`` names them), whether they all move the same way
    when a unit is added, and why, for the ledger.

    >>> d = derive([count(where="x > 1"), 2 * count(where="x > 2")], 1, "the scores")
    >>> d.sensitivity, d.monotonic
    (Fraction(2, 1), True)
    >>> d.reason
    "sensitivity 2 (monotone: all non-decreasing) derived from the scores: the largest, 2 * agg.count(where='x > 2'), \
is a linear combination: Σ|aᵢ|Δᵢ = 2"
    """
    if not all(is_expression(e) for e in expressions):  # checked when made; again, as it decides the noise
        raise TypeError(f"{what} must be aggregate queries of dpframe.agg, by their own types")
    widest = max(expressions, key=lambda e: e._sensitivity(contributions))
    sensitivity = widest._sensitivity(contributions)
    if sensitivity == 0:
        raise ValueError(f"{what} do not depend on the data (their derived sensitivity is 0): there is nothing to "
                         "ask privately; build them from agg.count, agg.sum or agg.mean")
    if not _SENSITIVITIES[0] <= sensitivity <= _SENSITIVITIES[1]:
        size = sensitivity.numerator.bit_length() - sensitivity.denominator.bit_length()
        raise ValueError(f"the derived sensitivity of {what}, about 2^{size}, is outside the supported range "
                         "2^-900 .. 2^900: rescale them (smaller or larger coefficients or bounds)")
    moves = [e._moves for e in expressions]
    rises, falls = any(up for up, _ in moves), any(down for _, down in moves)
    monotonic = not (rises and falls)
    direction = f" (monotone: all {'non-decreasing' if rises else 'non-increasing'})" if monotonic else ""
    reason = (f"sensitivity {_fraction_text(sensitivity)}{direction} derived from {what}: the largest, {widest!r}, "
              f"is {widest._reason(contributions)}")
    return Derived(sensitivity, monotonic, reason)


class Answers:
    """The exact answers of expressions on a protected frame.

    Made before the charge: it evaluates every ``where`` and ``value`` string on
    the protected rows (which releases nothing: protected objects raise errors
    that depend only on the schema and the arguments, so argument errors come
    here, before any charge). Called after the charge, it reads the data: each
    aggregate once, on the rows it uses with each unit kept to k of them.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1.0, 2.0, None, 8.0]}).dp.protect(epsilon=1.0)
    >>> answers = Answers(p, [sum("x", bounds=(0, 5)), mean("x", bounds=(0, 5), where="x > 1")])
    >>> [answers(e) for e in answers.expressions]
    [Fraction(8, 1), Fraction(7, 2)]
    """

    def __init__(self, frame: ProtectedFrame, expressions: Sequence[Expr]) -> None:
        if not isinstance(frame, ProtectedFrame):
            raise TypeError("aggregate queries are asked of a protected frame, e.g. p.dp.select(...)")
        if not all(is_expression(e) for e in expressions):  # their own reads are what is answered
            raise TypeError("aggregate queries must be of dpframe.agg, by their own types")
        self.expressions = list(expressions)
        contributions = Target.of(frame).contributions
        filtered: dict[tuple[str, str], ProtectedFrame] = {}
        self._reads: dict[Aggregate, Callable[[], Fraction]] = {}
        for leaf in (leaf for e in self.expressions for leaf in e._leaves()):
            if leaf in self._reads:
                continue
            if CANDIDATE in leaf._names_used() and CANDIDATE not in dict(leaf.constants):
                raise ValueError(f"{leaf!r} uses @candidate, which only p.dp.select binds (to each candidate); "
                                 "elsewhere give the value another name")
            rows = frame
            if leaf.where is not None:
                # One filter per distinct condition and values: candidates' scores often share them.
                used = {name: value for name, value in leaf.constants if name in _names(leaf.where)}
                key = (leaf.where, json.dumps({n: _encode(v) for n, v in used.items()}, sort_keys=True))
                if key not in filtered:
                    filtered[key] = frame.query(leaf.where, local_dict=used)
                rows = filtered[key]
            self._reads[leaf] = leaf._read(rows, contributions)
        self._answers: dict[Aggregate, Fraction] = {}

    def __call__(self, expression: Expr) -> Fraction:
        """The exact answer of one of the expressions (after the charge)."""
        return expression._answer(self._leaf)

    def _leaf(self, leaf: Aggregate) -> Fraction:
        if leaf not in self._answers:
            self._answers[leaf] = self._reads[leaf]()
        return self._answers[leaf]

