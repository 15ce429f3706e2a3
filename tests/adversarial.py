"""Adversarial analyst code for ``tests/test_analyst_code.py`` (issue 27): data, functions, objects, observations.

The test runs one pipeline of protected operations on two neighbouring data
sets -- :func:`neighbours`: a small frame, and the same frame plus the rows of
one *target* person -- with a function of the analyst's that behaves one way
on the target's values and another way elsewhere (:func:`user_function`), or
with an argument object whose dunders misbehave when they meet the target's
values (:func:`arguments`). What each run shows the analyst is collected in
an :class:`Observation`: the exception raised (type and message) or none, the
warnings, the schema of every protected intermediate object, the ledger lines
(without their time) and the released result's type, index and dtype (not its
noisy values). Neighbours must give equal observations: anything else is an
oracle on the data that costs no budget.

What a function does is an :class:`Act`: return a plain value, a generator,
an iterator, an object whose dunders raise or lie, a huge or deeply nested
value, a numpy array, a pandas object -- or raise (every kind of exception).
:func:`acts` is the Hypothesis strategy that draws them.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import functools
import hashlib
import itertools
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

import dpframe
from dpframe.testing import seeded_noise

# -- the data ----------------------------------------------------------------------------------------

E = 1.0  # the epsilon of each query; every budget is BUDGET
BUDGET = 1000.0
TARGET_N = 977  # the target's distinctive values: nobody else has them
TARGET_X = 97.7
TARGET_S = "zz-target"
TARGET_L = (9, 7, 7)
TARGET_USER = "target"
CATEGORIES = ["a", "b", "c"]


def base_frame() -> pd.DataFrame:
    """Eight rows of six people: an int, a float with a missing value, text, dates, a declared categorical, lists."""
    return pd.DataFrame({
        "user": ["u0", "u0", "u1", "u2", "u2", "u3", "u4", "u5"],
        "n": [20, 31, 45, 52, 63, 28, 39, 47],
        "x": [1.5, np.nan, 2.25, 0.5, 3.0, 1.0, 2.0, 0.75],
        "s": ["ann", "bob", "cy", "dee", None, "eve", "fay", "gus"],
        "d": pd.to_datetime(["2020-01-01", "2020-02-03", "2021-05-06", "2019-12-31", "2020-07-04", "2022-03-01",
                             "2020-01-01", "2018-08-08"]),
        "c": pd.Categorical(["a", "b", "c", "a", "b", "c", "a", "b"], categories=CATEGORIES),
        "l": [[1, 2], [3], [], [4, 5, 6], [7], [1], [2, 3], [8]],
    })


def target_rows(level: str) -> pd.DataFrame:
    """The target person: values nobody else has, the only missing date and the only missing category."""
    rows = 1 if level == "row" else 2  # a user-level person contributes two rows (max_contributions=2)
    return pd.DataFrame({
        "user": [TARGET_USER] * rows,
        "n": [TARGET_N] * rows,
        "x": [TARGET_X] * rows,
        "s": [TARGET_S] * rows,
        "d": pd.to_datetime([None] * rows),
        "c": pd.Categorical([None] * rows, categories=CATEGORIES),
        "l": [list(TARGET_L) for _ in range(rows)],
    })


def neighbours(level: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(without the target, with the target): add/remove-one neighbours, row-level or user-level."""
    base = base_frame()
    return base, pd.concat([base, target_rows(level)], ignore_index=True)


def profiles(with_target: bool) -> pd.DataFrame:
    """A second table about the same users (one row each), for joins on the privacy unit."""
    users = ["u0", "u1", "u2", "u3", "u4", "u5"] + ([TARGET_USER] if with_target else [])
    return pd.DataFrame({"user": users, "score": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] + ([TARGET_X] if with_target else []),
                         "tier": ["a", "b", "a", "c", "b", "a"] + ([TARGET_S] if with_target else [])})


# A public table to merge in, with object keys of many kinds (the analyst's results are objects).
PUBLIC_Z = pd.DataFrame({"z": pd.Series([1, "a", (1, 2), 1.5, True, None], dtype=object),
                         "w": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
PUBLIC_C = pd.DataFrame({"c": ["a", "b", "b"], "area": [10, 20, 30]})


def is_target(value: Any) -> bool:
    """True when ``value`` is (or holds) one of the target's values: what the adversarial functions test.

    Works on the values a function can be given: a scalar, a list, a row (``apply(axis=1)``), a column
    (``sort_values(key=)``), a block of rows (``sample_and_aggregate``) or a regex match
    (``str.replace(repl=)``). A missing float also counts (the target's category is the only missing
    one, and pandas calls a categorical mapper on NaN only when the column holds one).
    """
    try:
        kind = type(value)
        if kind is pd.DataFrame:
            return "n" in value.columns and bool((value["n"] == TARGET_N).any())
        if kind is pd.Series:
            if "n" in value.index and not isinstance(value.index, pd.MultiIndex):
                return value["n"] == TARGET_N
            return any(is_target(v) for v in value.tolist())
        if isinstance(value, re.Match):
            return value.string == TARGET_S
        if kind in (list, tuple, np.ndarray):
            return tuple(np.asarray(value, dtype=object).tolist()) == TARGET_L
        if value is pd.NaT:
            return True
        if kind is float or kind is np.float64:
            return bool(value == TARGET_X or value != value)
        if kind is int or isinstance(value, np.integer):
            return bool(value == TARGET_N)
        if kind is str:
            return value == TARGET_S
        return False
    except Exception:
        return False


# -- exceptions and adversarial classes --------------------------------------------------------------


class Boom(BaseException):
    """An exception of the analyst's own, outside Exception (as KeyboardInterrupt and SystemExit are)."""


class LoudError(Exception):
    """An exception whose message cannot even be formatted."""

    def __str__(self) -> str:
        raise ValueError(f"leak {TARGET_N}")


EXCEPTIONS: tuple[type[BaseException], ...] = (
    ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError, SystemExit, KeyboardInterrupt,
    GeneratorExit, StopIteration, RecursionError, MemoryError, Boom, LoudError, decimal.InvalidOperation,
    UnicodeEncodeError,
)


def make_exception(kind: type[BaseException]) -> BaseException:
    if kind is UnicodeEncodeError:
        return UnicodeEncodeError("utf-8", str(TARGET_S), 0, 1, f"leak {TARGET_N}")
    return kind(f"the target's value is {TARGET_N}")


BASES: dict[type, Any] = {
    int: 7, str: "zz", float: 0.5, complex: 1j, bytes: b"bb", list: [1, 2], tuple: (1, 2), dict: {"k": 1},
    set: {1, 2}, frozenset: frozenset({1, 2}),
}
DUNDERS = ("__len__", "__iter__", "__hash__", "__eq__", "__ne__", "__lt__", "__gt__", "__le__", "__str__",
           "__repr__", "__format__", "__float__", "__int__", "__index__", "__bool__", "__del__", "__getitem__",
           "__contains__", "__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__", "__add__", "__radd__",
           "__getattribute__", "__array__", "__class__", "__sizeof__", "__round__", "__neg__")
MODES = ("raise", "raise on target", "lie")


def _lie(dunder: str) -> Callable[..., Any]:
    """A method that returns something inconsistent instead of raising (finite: nothing here may hang)."""
    lies: dict[str, Callable[..., Any]] = {
        "__len__": lambda self: 3,
        "__iter__": lambda self: iter([Unhashable(), TARGET_N]),
        "__hash__": lambda self: id(self),
        "__eq__": lambda self, other: True,
        "__ne__": lambda self, other: True,
        "__lt__": lambda self, other: True,
        "__gt__": lambda self, other: True,
        "__le__": lambda self, other: _Falsy(),
        "__str__": lambda self: "a" * 10**5,
        "__repr__": lambda self: TARGET_S,
        "__format__": lambda self, spec: TARGET_S,
        "__float__": lambda self: float("nan"),
        "__int__": lambda self: 10**400,
        "__index__": lambda self: -1,
        "__bool__": lambda self: _Falsy(),
        "__getitem__": lambda self, key: TARGET_N,
        "__contains__": lambda self, item: True,
        "__add__": lambda self, other: TARGET_S,
        "__radd__": lambda self, other: TARGET_S,
        "__array__": lambda self, *a, **k: np.array([object()] * 3, dtype=object),
        "__sizeof__": lambda self: -1,
        "__round__": lambda self, *a: self,
        "__neg__": lambda self: self,
    }
    return lies.get(dunder, lambda self, *a, **k: None)


class _Falsy:
    """A truth value that cannot be had."""

    def __bool__(self) -> bool:
        raise ValueError(f"leak {TARGET_N}")


# Dunders that are given another value (the one they are compared with, added to, looked up...).
_BINARY = frozenset({"__eq__", "__ne__", "__lt__", "__gt__", "__le__", "__getitem__", "__contains__", "__add__",
                     "__radd__", "__format__", "__round__"})


@functools.lru_cache(maxsize=None)
def sneaky_class(base: type, dunders: tuple[str, ...], mode: str, exception: type[BaseException]) -> type:
    """A subclass of ``base`` whose ``dunders`` raise ``exception``, or lie.

    ``mode``: "raise" (always), "raise on target" (the dunders that are given another value raise when
    it is one of the target's values, and otherwise do what ``base`` does), or "lie". ``__class__``
    becomes a property that claims another class (isinstance believes it).
    """
    namespace: dict[str, Any] = {}
    for dunder in dunders:
        if dunder == "__class__":
            namespace["__class__"] = property(lambda self, _claim=(str if base is not str else int): _claim)
            continue
        if mode == "lie":
            namespace[dunder] = _lie(dunder)
            continue
        if mode == "raise on target":
            if dunder not in _BINARY or not hasattr(base, dunder):
                continue
            original = getattr(base, dunder)

            def on_target(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if any(is_target(a) for a in args):
                    raise make_exception(exception)
                return _original(self, *args, **kwargs)

            namespace[dunder] = on_target
            continue

        def always(self: Any, *args: Any, **kwargs: Any) -> Any:
            raise make_exception(exception)

        namespace[dunder] = always
    if "__eq__" in namespace and "__hash__" not in namespace:
        namespace["__hash__"] = base.__hash__  # overriding __eq__ alone would make the class unhashable
    name = f"Sneaky_{base.__name__}_{'_'.join(d.strip('_') for d in dunders)}_{mode.replace(' ', '_')}_" \
           f"{exception.__name__}"
    return type(name, (base,), namespace)


def sneaky(base: type, dunders: tuple[str, ...], mode: str = "raise",
           exception: type[BaseException] = ValueError) -> Any:
    """An instance of :func:`sneaky_class` holding a small value of ``base``."""
    cls = sneaky_class(base, tuple(sorted(dunders)), mode, exception)
    value = BASES[base]
    return cls(value)


class EvilMeta(type):
    """A metaclass whose ``__hash__`` and ``__eq__`` raise: ``type(v) in {...}`` runs them."""

    def __hash__(cls) -> int:
        raise ValueError(f"leak {TARGET_N}")

    def __eq__(cls, other: Any) -> bool:
        raise ValueError(f"leak {TARGET_N}")

    def __instancecheck__(cls, instance: Any) -> bool:
        raise ValueError(f"leak {TARGET_N}")

    def __subclasscheck__(cls, sub: Any) -> bool:
        raise ValueError(f"leak {TARGET_N}")


class MetaStr(str, metaclass=EvilMeta):
    pass


class MetaObject(metaclass=EvilMeta):
    pass


class Liar:
    """An object that claims to be a str (``__class__``), compares equal to everything and hashes like the target."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str

    def __eq__(self, other: Any) -> bool:
        return True

    def __hash__(self) -> int:
        return hash(TARGET_S)

    def __len__(self) -> int:
        return 3

    def __iter__(self) -> Iterator[Any]:
        return iter(TARGET_L)

    def __str__(self) -> str:
        return TARGET_S


class Unhashable:
    def __hash__(self) -> int:
        raise TypeError(f"unhashable: the target is {TARGET_N}")

    def __eq__(self, other: Any) -> bool:
        raise TypeError(f"no comparison: the target is {TARGET_N}")


class Weakly:
    """A plain class instance that supports weak references."""


class LiarList(list):  # type: ignore[type-arg]
    """A list whose ``__len__`` disagrees with its items."""

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[Any]:
        return iter([Unhashable()])


class BigLen(list):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 10**30


class Color(enum.Enum):
    RED = 1


class Number(enum.IntEnum):
    ONE = 1


class Zone(datetime.tzinfo):
    """A time zone of the analyst's: its offset raises."""

    def utcoffset(self, dt: Any) -> datetime.timedelta:
        raise ValueError(f"leak {TARGET_N}")

    def dst(self, dt: Any) -> datetime.timedelta:
        raise ValueError(f"leak {TARGET_N}")

    def tzname(self, dt: Any) -> str:
        raise ValueError(f"leak {TARGET_N}")


class LyingDelta(datetime.timedelta):
    def __radd__(self, other: Any) -> Any:
        raise ValueError(f"leak {other}")

    __add__ = __radd__

    def __eq__(self, other: Any) -> bool:
        raise ValueError(f"leak {other}")

    __hash__ = datetime.timedelta.__hash__


class OffsetZone(datetime.tzinfo):
    """A time zone of the analyst's whose offset is a timedelta subclass with raising arithmetic."""

    def utcoffset(self, dt: Any) -> datetime.timedelta:
        return LyingDelta(hours=1)

    def dst(self, dt: Any) -> datetime.timedelta:
        return LyingDelta(0)

    def tzname(self, dt: Any) -> str:
        return "X"


class EvilDtype(pd.api.extensions.ExtensionDtype):
    """An extension dtype of the analyst's: its code would run on every value."""

    name = "evil"
    type = object
    kind = "O"

    @classmethod
    def construct_array_type(cls) -> Any:
        raise ValueError(f"leak {TARGET_N}")


class SeriesSub(pd.Series):  # type: ignore[type-arg]
    @property
    def _constructor(self) -> Any:
        return SeriesSub


class FrameSub(pd.DataFrame):
    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        raise ValueError(f"leak {TARGET_N}")


class Missing(dict):  # type: ignore[type-arg]
    def __missing__(self, key: Any) -> Any:
        if is_target(key):
            raise ValueError(f"leak {key}")
        return 0


class FakeMapping(Mapping):  # type: ignore[type-arg]
    def __getitem__(self, key: Any) -> Any:
        if is_target(key):
            raise KeyboardInterrupt
        return 1

    def __iter__(self) -> Iterator[Any]:
        return iter([1, "a"])

    def __len__(self) -> int:
        return 2


def recursion() -> Any:
    return recursion()


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def self_containing() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


def raising_generator() -> Iterator[Any]:
    yield 1
    raise ValueError(f"leak {TARGET_N}")


def closing_generator() -> Iterator[Any]:
    try:
        yield 1
    finally:
        raise KeyboardInterrupt  # when the generator is closed (collected)


# -- what a function does: acts ----------------------------------------------------------------------


@dataclass(frozen=True)
class Act:
    """What an adversarial function does when it is called: return ``make(argument)``, or raise."""

    name: str
    make: Callable[[Any], Any] = field(compare=False)

    def __repr__(self) -> str:
        return self.name

    def __call__(self, argument: Any) -> Any:
        return self.make(argument)


def returning(value: Any, name: str | None = None) -> Act:
    return Act(name or f"return {value!r:.60}", lambda _: value)


def raising(kind: type[BaseException]) -> Act:
    def run(_: Any) -> Any:
        raise make_exception(kind)

    return Act(f"raise {kind.__name__}", run)


def _column_of(argument: Any, value: Any) -> Any:
    """A Series as long as the argument (when it is a column: a sorting key), else ``value``."""
    if type(argument) is pd.Series and not ("n" in argument.index and not isinstance(argument.index, pd.MultiIndex)):
        return pd.Series([value] * len(argument), index=argument.index, dtype=object)
    return value


PLAIN_SPECIALS: list[Any] = [
    0, 1, -1, True, False, None, 1.5, -0.0, float("nan"), float("inf"), "", "a", TARGET_S, "\ud800", "\x00",
    b"\xff", 1j, complex("nan"), decimal.Decimal("1.5"), decimal.Decimal("NaN"), decimal.Decimal("sNaN"),
    decimal.Decimal("-Infinity"), decimal.Decimal("1e400"), 10**400, -(10**400), 2**63, 2**64,
    datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc),
    datetime.time(12, 0), datetime.timedelta(days=1), pd.Timestamp("2020-01-01"), pd.Timestamp("2020-01-01", tz="UTC"),
    pd.Timestamp.max, pd.NaT, pd.NA, np.datetime64("NaT"), np.datetime64(10**15, "D"), np.timedelta64(10**18, "s"),
    pd.Timedelta(days=1), pd.Period("2020", "Y"), pd.Period("2020-01", "M"), pd.Interval(0, 1), pd.Interval(0.5, 1.5),
    np.float16(1.0), np.int8(-1), np.uint64(2**64 - 1), np.str_("a"), np.bytes_(b"a"), np.bool_(True),
    np.complex128(1j), np.longdouble(1.5), np.float64("nan"), (1, 2), (), (TARGET_N,), ({1: 2},), ([1], 2),
    {"k": 1}, {(1,): 2}, {1, 2}, frozenset(), frozenset({1, "a"}), ((1,),), "a" * 10**6,
    tuple(range(10_000)), tuple(range(10_001)), nested(7), nested(8), nested(9), Fraction(1, 3),
]


def _acts() -> list[Act]:
    acts: list[Act] = [returning(v) for v in PLAIN_SPECIALS]
    acts += [raising(kind) for kind in EXCEPTIONS]
    acts += [
        Act("echo the argument", lambda a: a),
        Act("list [1, 2]", lambda _: [1, 2]),
        Act("empty list", lambda _: []),
        Act("list of 10**6", lambda _: [0] * 10**6),
        Act("deeply nested list", lambda _: nested(10_000)),
        Act("self-containing list", lambda _: self_containing()),
        Act("string of 10**6", lambda _: "x" * 10**6),
        Act("10**400", lambda _: 10**400),
        Act("generator", lambda _: (v for v in [0])),
        Act("empty generator", lambda _: (v for v in [])),
        Act("raising generator", lambda _: raising_generator()),
        Act("generator raising on close", lambda _: closing_generator()),
        Act("iter", lambda _: iter([1, 2])),
        Act("zip", lambda _: zip([1], [2])),
        Act("map", lambda _: map(str, [1, 2])),
        Act("filter", lambda _: filter(None, [1])),
        Act("enumerate", lambda _: enumerate("ab")),
        Act("reversed", lambda _: reversed([1, 2])),
        Act("itertools.count", lambda _: itertools.count()),
        Act("itertools.repeat", lambda _: itertools.repeat(1)),
        Act("range(10**12)", lambda _: range(10**12)),
        Act("dict keys", lambda _: {"a": 1}.keys()),
        Act("bytearray", lambda _: bytearray(b"ab")),
        Act("memoryview", lambda _: memoryview(b"ab")),
        Act("numpy array", lambda _: np.array([1, 2])),
        Act("empty numpy array", lambda _: np.array([])),
        Act("0-d numpy array", lambda _: np.array(5)),
        Act("2-d numpy array", lambda _: np.ones((2, 2))),
        Act("numpy array of 10**6", lambda _: np.zeros(10**6)),
        Act("object array of sneaky", lambda _: np.array([sneaky(str, ("__hash__",)), Unhashable()], dtype=object)),
        Act("structured array", lambda _: np.zeros(2, dtype=[("a", "i4"), ("b", "f8")])),
        Act("datetime64 array", lambda _: np.array(["2020-01-01", "NaT"], dtype="datetime64[ns]")),
        Act("masked array", lambda _: np.ma.masked_array([1, 2], mask=[0, 1])),
        Act("np.matrix", lambda _: np.matrix([[1, 2]])),
        Act("Series", lambda _: pd.Series([1, 2])),
        Act("Series of sneaky", lambda _: pd.Series([sneaky(int, ("__eq__", "__hash__")), Unhashable()], dtype=object)),
        Act("Series subclass", lambda _: SeriesSub([1, 2])),
        Act("DataFrame", lambda _: pd.DataFrame({"a": [1]})),
        Act("Index", lambda _: pd.Index([1, 2])),
        Act("Categorical", lambda _: pd.Categorical(["a"])),
        Act("IntegerArray", lambda _: pd.array([1, None], dtype="Int64")),
        Act("object()", lambda _: object()),
        Act("Weakly()", lambda _: Weakly()),
        Act("Unhashable()", lambda _: Unhashable()),
        Act("Liar()", lambda _: Liar()),
        Act("LiarList", lambda _: LiarList([1, 2])),
        Act("BigLen", lambda _: BigLen([1])),
        Act("MetaStr", lambda _: MetaStr("a")),
        Act("MetaObject", lambda _: MetaObject()),
        Act("Enum member", lambda _: Color.RED),
        Act("IntEnum member", lambda _: Number.ONE),
        Act("a function", lambda _: is_target),
        Act("a class", lambda _: Weakly),
        Act("a module", lambda _: np),
        Act("Ellipsis", lambda _: ...),
        Act("NotImplemented", lambda _: NotImplemented),
        Act("an exception instance", lambda _: ValueError(TARGET_N)),
        Act("a frame", lambda _: sys._getframe()),
        Act("recursion", lambda _: recursion()),
        Act("datetime in a raising zone", lambda _: datetime.datetime(2020, 1, 1, tzinfo=Zone())),
        Act("datetime in a lying zone", lambda _: datetime.datetime(2020, 1, 1, tzinfo=OffsetZone())),
        Act("time in a raising zone", lambda _: datetime.time(1, tzinfo=Zone())),
        Act("interval of sneaky ends", lambda _: pd.Interval(sneaky(int, ("__lt__", "__eq__")), 5)),
        Act("tuple with sneaky items", lambda _: (sneaky(str, ("__hash__", "__eq__")), sneaky(float, ("__float__",)))),
        Act("dict with sneaky keys", lambda _: {sneaky(str, ("__hash__",), "lie"): 1}),
        Act("dict with object keys", lambda _: {Weakly(): 1}),
        Act("set of sneaky", lambda _: {sneaky(int, ("__eq__",), "lie")}),
        Act("sneaky column", lambda a: _column_of(a, sneaky(str, ("__lt__", "__eq__", "__hash__")))),
        Act("sNaN column", lambda a: _column_of(a, decimal.Decimal("sNaN"))),
        Act("column of the wrong length", lambda a: pd.Series([1])),
        Act("column of sneaky categories", lambda a: _column_of(a, "bob").astype(pd.CategoricalDtype(
            ["bob", sneaky(str, ("__eq__", "__hash__"), "raise", KeyboardInterrupt)]))
            if type(_column_of(a, 0)) is pd.Series else "bob"),
    ]
    for base in BASES:
        for mode in MODES:
            acts.append(Act(f"sneaky {base.__name__} ({mode})",
                            lambda _, base=base, mode=mode: sneaky(base, DUNDERS, mode, KeyboardInterrupt)))
    return acts


CATALOGUE: list[Act] = _acts()
BY_NAME: dict[str, Act] = {act.name: act for act in CATALOGUE}

_hashable_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(), st.text(max_size=4),
    st.binary(max_size=3), st.decimals(allow_nan=True, allow_infinity=True, places=None),
    st.complex_numbers(allow_nan=True, allow_infinity=True), st.dates(),
    st.datetimes(timezones=st.sampled_from([None, datetime.timezone.utc])), st.timedeltas(),
)
plain_values = st.recursive(
    _hashable_scalars | st.sampled_from([v for v in PLAIN_SPECIALS if len(repr(v)) < 100]),
    lambda children: st.one_of(st.lists(children, max_size=3), st.tuples(children, children),
                               st.dictionaries(_hashable_scalars.filter(lambda k: _hashable(k)), children, max_size=2),
                               st.frozensets(_hashable_scalars.filter(lambda k: _hashable(k)), max_size=3)),
    max_leaves=5,
)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
        return True
    except Exception:
        return False


sneaky_objects = st.builds(
    lambda base, dunders, mode, exception: Act(
        f"sneaky {base.__name__}{sorted(dunders)} {mode} {exception.__name__}",
        lambda _: sneaky(base, tuple(sorted(dunders)), mode, exception)),
    st.sampled_from(list(BASES)),
    st.sets(st.sampled_from(DUNDERS), min_size=1, max_size=6),
    st.sampled_from(MODES),
    st.sampled_from(EXCEPTIONS),
)


def acts() -> st.SearchStrategy[Act]:
    """What an adversarial function does: the catalogue, Hypothesis' plain values, and random sneaky objects."""
    return st.one_of(
        st.sampled_from(CATALOGUE),
        plain_values.map(lambda v: returning(v)),
        sneaky_objects,
        st.sampled_from(EXCEPTIONS).map(raising),
    )


def user_function(on_target: Act, elsewhere: Act) -> Callable[..., Any]:
    """A function that does ``on_target`` on the target's values (:func:`is_target`) and ``elsewhere`` on others."""

    def func(value: Any, *args: Any, **kwargs: Any) -> Any:
        return (on_target if is_target(value) else elsewhere)(value)

    func.__name__ = func.__qualname__ = "adversarial"
    return func


# -- the analyst's arguments ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """An argument object of the analyst's, made afresh for each run."""

    name: str
    make: Callable[[], Any] = field(compare=False)

    def __repr__(self) -> str:
        return self.name


def _arg(name: str, make: Callable[[], Any]) -> Arg:
    return Arg(name, make)


ARGUMENTS: list[Arg] = [
    *(_arg(f"plain {v!r:.40}", lambda v=v: v) for v in [
        1, 0.5, "bob", TARGET_N, TARGET_S, None, float("nan"), pd.NA, pd.NaT, decimal.Decimal("sNaN"),
        decimal.Decimal("NaN"), 10**400, 1j, b"\xff", "\ud800", (1, 2), frozenset({1}), pd.Timestamp("2020-01-01"),
        pd.Timestamp("2020-01-01", tz="UTC"), np.int64(3), np.datetime64(10**15, "D")]),
    *(_arg(f"sneaky {base.__name__} {mode}", lambda base=base, mode=mode: sneaky(base, DUNDERS, mode, exception))
      for base in BASES for mode, exception in (("raise on target", KeyboardInterrupt), ("lie", ValueError),
                                                ("raise", SystemExit))),
    _arg("str comparing with the target", lambda: sneaky(str, ("__eq__", "__ne__", "__lt__", "__gt__", "__le__",
                                                             "__hash__"), "raise on target", Boom)),
    _arg("int comparing with the target", lambda: sneaky(int, ("__eq__", "__ne__", "__lt__", "__radd__", "__add__",
                                                             "__hash__"), "raise on target", KeyboardInterrupt)),
    _arg("float comparing with the target", lambda: sneaky(float, ("__eq__", "__lt__", "__gt__", "__le__", "__hash__"),
                                                         "raise on target", SystemExit)),
    _arg("Unhashable()", Unhashable),
    _arg("Liar()", Liar),
    _arg("object()", object),
    _arg("MetaStr", lambda: MetaStr("bob")),
    _arg("MetaObject", MetaObject),
    _arg("Enum member", lambda: Color.RED),
    _arg("IntEnum member", lambda: Number.ONE),
    _arg("LiarList", lambda: LiarList([1, 2])),
    _arg("BigLen", lambda: BigLen([1])),
    _arg("dict with __missing__", lambda: Missing({1: 2})),
    _arg("Mapping of its own", FakeMapping),
    _arg("generator", lambda: (v for v in [1, "bob"])),
    _arg("numpy object array of sneaky", lambda: np.array([sneaky(str, ("__eq__", "__hash__"), "raise on target"),
                                                          1], dtype=object)),
    _arg("masked array", lambda: np.ma.masked_array([1, 2], mask=[0, 1])),
    _arg("Series subclass", lambda: SeriesSub([1, 2])),
    _arg("Series with a sneaky index", lambda: pd.Series([1], index=pd.Index(
        [sneaky(str, ("__eq__",), "raise on target")], dtype=object))),
    _arg("datetime in a raising zone", lambda: datetime.datetime(2020, 1, 1, tzinfo=Zone())),
    _arg("datetime subclass", lambda: type("D", (datetime.datetime,), {
        "__eq__": lambda s, o: (_ for _ in ()).throw(ValueError(o)), "__hash__": datetime.datetime.__hash__})(2020, 1, 1)),
    _arg("a function", lambda: is_target),
    _arg("a class", lambda: Weakly),
    _arg("Fraction", lambda: Fraction(1, 3)),
]


def arguments() -> st.SearchStrategy[Arg]:
    """Argument objects: plain but awkward values, sneaky subclasses of built-ins, and objects of the analyst's."""
    return st.one_of(
        st.sampled_from(ARGUMENTS),
        st.builds(lambda base, dunders, mode, exception: Arg(
            f"sneaky {base.__name__}{sorted(dunders)} {mode} {exception.__name__}",
            lambda: sneaky(base, tuple(sorted(dunders)), mode, exception)),
            st.sampled_from(list(BASES)), st.sets(st.sampled_from(DUNDERS), min_size=1, max_size=6),
            st.sampled_from(MODES), st.sampled_from(EXCEPTIONS)),
    )


DTYPES: list[Arg] = [
    _arg("Int64", lambda: "Int64"), _arg("float", lambda: float), _arg("str", lambda: str), _arg("object", lambda: object),
    _arg("string", lambda: "string"), _arg("boolean", lambda: "boolean"), _arg("Float64", lambda: pd.Float64Dtype()),
    _arg("datetime64[ns]", lambda: "datetime64[ns]"), _arg("int8", lambda: np.dtype("int8")),
    _arg("EvilDtype()", EvilDtype), _arg("EvilDtype", lambda: EvilDtype),
    _arg("str subclass 'Int64'", lambda: sneaky_class(str, ("__eq__", "__hash__"), "raise on target", ValueError)("Int64")),
    _arg("structured dtype", lambda: np.dtype([("a", "i4")])),
    _arg("categories of sneaky", lambda: pd.CategoricalDtype(
        [sneaky(str, ("__eq__",), "raise on target", KeyboardInterrupt), "bob", TARGET_S])),
    _arg("categories with the target", lambda: pd.CategoricalDtype(["ann", TARGET_S, "a"])),
    _arg("category", lambda: "category"),
    _arg("a user class", lambda: Weakly),
    _arg("an int subclass", lambda: Number),
    _arg("datetime with an evil zone", lambda: pd.DatetimeTZDtype(tz=datetime.timezone.utc)),
]

ZONES: list[Arg] = [
    _arg("'Europe/Oslo'", lambda: "Europe/Oslo"), _arg("utc", lambda: datetime.timezone.utc),
    _arg("Zone()", Zone), _arg("OffsetZone()", OffsetZone),
    _arg("timezone(LyingDelta)", lambda: datetime.timezone(LyingDelta(hours=1))),
    _arg("str subclass 'UTC'", lambda: sneaky_class(str, ("__eq__", "__hash__"), "raise", ValueError)("UTC")),
]


# -- observing a run -----------------------------------------------------------------------------------

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _clean(text: str) -> str:
    return _ADDRESS.sub("0x…", text)


def _message(error: BaseException) -> str:
    try:
        return _clean(str(error))
    except BaseException as inner:  # an exception whose message cannot be formatted
        return f"<unprintable: {type(inner).__name__}>"


def _levels(data: Any) -> list[tuple[str, str]]:
    """Names and dtypes of the row-label levels (private to the object, visible through reset_index)."""
    index = data.index
    return [(repr(index.names[i]), str(index.get_level_values(i).dtype)) for i in range(index.nlevels)]


def schema(obj: Any) -> Any:
    """What a protected intermediate object shows: its columns (or name) and dtypes, and its row-label types."""
    if isinstance(obj, dpframe.ProtectedFrame):
        return ("ProtectedFrame", [(type(c).__name__, _clean(repr(c))) for c in obj.columns],
                [str(t) for t in obj.dtypes], _levels(obj._private))
    if isinstance(obj, dpframe.ProtectedSeries):
        return ("ProtectedSeries", type(obj.name).__name__, _clean(repr(obj.name)), str(obj.dtype), _levels(obj._private))
    return ("other", type(obj).__name__)


def release(result: Any) -> Any:
    """A released answer without its noisy values: its type, index, columns and dtypes."""
    if isinstance(result, pd.DataFrame):
        return ("DataFrame", [_clean(repr(i)) for i in result.index], list(result.index.names),
                [_clean(repr(c)) for c in result.columns], [str(t) for t in result.dtypes])
    if isinstance(result, pd.Series):
        return ("Series", [_clean(repr(i)) for i in result.index], list(result.index.names), str(result.dtype),
                _clean(repr(result.name)), len(result))
    if isinstance(result, (dpframe.ProtectedFrame, dpframe.ProtectedSeries)):
        return schema(result)
    if isinstance(result, (list, tuple)):
        return (type(result).__name__, [release(r) for r in result])
    return (type(result).__name__,)


def other_rows(obj: Any, target_unit: Any) -> list[str] | None:
    """The rows of everyone but the target, as text, sorted (row order is never released); None for non-objects.

    A row-wise operation computes each row from that row alone: the target's
    value must not change anybody else's row (e.g. through pandas' inference
    of a type, or an error that makes a whole block of rows missing).
    """
    if not isinstance(obj, (dpframe.ProtectedFrame, dpframe.ProtectedSeries)):
        return None
    data = obj._private
    units = data.index.get_level_values("_dp_unit")
    kept = data[units != target_unit]
    frame = kept.to_frame() if isinstance(kept, pd.Series) else kept
    labels = frame.index.to_frame(index=False).astype(object)
    values = frame.reset_index(drop=True).astype(object)
    rows = []
    for position in range(len(frame)):
        label = tuple(_short(v) for v in labels.iloc[position].tolist())
        row = tuple(_short(v) for v in values.iloc[position].tolist())
        rows.append(repr((label, row)))
    return sorted(rows)


def _short(value: Any) -> str:
    text = _clean(repr(value))
    if len(text) > 200:
        return f"{text[:100]}…sha1:{hashlib.sha1(text.encode('utf-8', 'surrogatepass')).hexdigest()}"
    return text


@dataclass
class Context:
    """One run of a pipeline on one of the two neighbours."""

    level: str
    with_target: bool
    frame: pd.DataFrame
    budgets: list[Any] = field(default_factory=list)
    steps: list[tuple[str, Any]] = field(default_factory=list)
    rows: list[tuple[str, Any]] = field(default_factory=list)
    compare_rows: bool = True

    @property
    def target_unit(self) -> Any:
        return TARGET_USER if self.level == "user" else len(base_frame())

    def protect(self, frame: pd.DataFrame | None = None, **options: Any) -> dpframe.ProtectedFrame:
        """The neighbour (or ``frame``), protected with a fresh in-memory ledger; its budget is observed."""
        data = self.frame if frame is None else frame
        if self.level == "user" and "budget" not in options:
            options = {"privacy_unit": "user", "max_contributions": 2, **options}
        if "budget" not in options:
            options = {"epsilon": BUDGET, "ledger": dpframe.Ledger.in_memory(), **options}
        p = data.dp.protect(**options)
        if p.dp.budget not in self.budgets:
            self.budgets.append(p.dp.budget)
        return p

    def protect_profiles(self, p: dpframe.ProtectedFrame) -> dpframe.ProtectedFrame:
        """The second table about these users, sharing ``p``'s budget (user level only)."""
        return profiles(self.with_target).dp.protect(budget=p.dp.budget, privacy_unit="user")

    def see(self, obj: Any, name: str = "") -> Any:
        """Record a protected intermediate object's schema (and, for the check of other rows, its rows)."""
        self.steps.append((name, schema(obj)))
        if self.compare_rows:
            try:
                rows: Any = other_rows(obj, self.target_unit)
            except BaseException as error:  # noqa: BLE001 -- even reading the exact rows ran the analyst's code
                rows = ("unreadable", type(error).__name__, _message(error))
            self.rows.append((name, rows))
        return obj

    def attempt(self, name: str, thunk: Callable[[], Any]) -> Any:
        """Run one operation: record its result's schema, or the exception it raised; None when it raised."""
        try:
            result = thunk()
        except BaseException as error:  # noqa: BLE001 -- every exception is observed, KeyboardInterrupt too
            self.steps.append((name, ("raised", type(error).__name__, _message(error))))
            return None
        if isinstance(result, (dpframe.ProtectedFrame, dpframe.ProtectedSeries)):
            return self.see(result, name)
        self.steps.append((name, ("value", release(result))))
        return result


@dataclass
class Observation:
    outcome: Any
    steps: list[tuple[str, Any]]
    ledger: list[tuple[Any, ...]]
    warnings: list[tuple[str, str]]
    rows: list[tuple[str, Any]]

    def public(self) -> dict[str, Any]:
        """What the analyst sees (everything but the other rows' values)."""
        return {"outcome": self.outcome, "steps": self.steps, "ledger": self.ledger, "warnings": self.warnings}


def _ledger(budgets: list[Any]) -> list[tuple[Any, ...]]:
    lines: list[tuple[Any, ...]] = []
    for budget in budgets:
        ledger = budget.ledger
        lines += [tuple(_clean(repr(v)) for v in row)
                  for row in ledger.drop(columns=["time"]).itertuples(index=False)]
    return lines


def observe(pipeline: Callable[..., Any], level: str, with_target: bool, *args: Any,
            compare_rows: bool = True) -> Observation:
    """Run ``pipeline(ctx, *args)`` on one neighbour with seeded noise, and collect what it shows."""
    frame = neighbours(level)[1 if with_target else 0]
    ctx = Context(level, with_target, frame, compare_rows=compare_rows)
    unraisable = sys.unraisablehook
    sys.unraisablehook = lambda _: None  # a __del__ of the analyst's that raises is the analyst's own side effect
    try:
        with warnings.catch_warnings(record=True) as caught, seeded_noise(0):
            warnings.simplefilter("always")
            try:
                outcome: Any = ("released", release(pipeline(ctx, *args)))
            except BaseException as error:  # noqa: BLE001 -- KeyboardInterrupt and SystemExit are observations too
                outcome = ("raised", type(error).__name__, _message(error))
            ledger = _ledger(ctx.budgets)
    finally:
        sys.unraisablehook = unraisable
    seen_warnings = [(w.category.__name__, _clean(str(w.message))) for w in caught]
    return Observation(outcome, ctx.steps, ledger, seen_warnings, ctx.rows)


def compare(pipeline: Callable[..., Any], level: str, *args: Any, compare_rows: bool = True) -> tuple[Observation, Observation]:
    """The observations of ``pipeline`` on the two neighbours (without, with the target)."""
    return (observe(pipeline, level, False, *args, compare_rows=compare_rows),
            observe(pipeline, level, True, *args, compare_rows=compare_rows))
