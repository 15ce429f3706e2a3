"""What an analyst's request may ask of the server: the operation registry and the plan it checks.

A remote analyst's frame (:func:`dpframe.connect`) records what the analyst
does as a *plan*: numbered steps, each reading an attribute of, calling a
method of, indexing or setting into the value of an earlier step, step 0
being the analyst's protected frame of the dataset. The server replays the
plan on its own :class:`~dpframe.ProtectedFrame` (:mod:`dpframe.service.replay`),
so the rules that hold locally are the rules that hold remotely, enforced in
one place.

:data:`OPERATIONS` is the single registry of what a remote plan may name on
each kind of protected object. It is generated from the protected classes
themselves (their public attributes are what they allow locally) minus
:data:`LOCAL_ONLY`, the names that make sense only in the curator's own
process. The same registry generates the allow-list the server checks
(:func:`check_name`), the ``name`` field of the plan's JSON schema
(:class:`Plan`), and the table in ``docs/server.md`` (:func:`markdown_table`;
a test keeps them identical), so the three cannot drift.

>>> from dpframe.service.plan import Plan
>>> plan = Plan.model_validate({"request_id": "0" * 32, "result": 2, "steps": [
...     {"op": "getattr", "target": 0, "name": "dp"},
...     {"op": "call", "target": 1, "name": "count", "kwargs": {"epsilon": 0.1}}]})
>>> plan.steps[1].name, plan.result
('count', 2)
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pandas as pd
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, model_validator

from dpframe.errors import RefusedError

# A plan's size limits: a pipeline of a notebook has tens of steps; a value is a few levels deep.
MAX_STEPS = 500
MAX_DEPTH = 24
MAX_NAME = 200

# The operators of protected objects, as the method names Python calls.
BINARY_OPERATORS = tuple(
    f"__{prefix}{name}__" for name in "add sub mul truediv floordiv mod pow and or xor".split() for prefix in ("", "r")
) + tuple(f"__{name}__" for name in "eq ne lt le gt ge".split())
UNARY_OPERATORS = ("__invert__", "__neg__", "__pos__", "__abs__")
# What a remote object asks the server's object for so that it behaves as the local one does: its repr (schema only),
# and the reads that a protected object refuses (len, iteration, truth, membership, numpy) -- they raise the same
# refusal there.
# __array_ufunc__ applies a numpy ufunc named by its name (np.log(p["x"])).
PROTOCOL = ("__repr__", "__len__", "__iter__", "__bool__", "__contains__", "__array__", "__array_function__",
            "__array_ufunc__")
DUNDERS = frozenset(BINARY_OPERATORS + UNARY_OPERATORS + PROTOCOL)

# Names the protected classes offer in the curator's own process that a remote plan may not use, and why.
_CLIENT = "it runs your function: a remote frame runs it on your side and sends the steps it takes"
LOCAL_ONLY: Mapping[str, Mapping[str, str]] = {
    "frame": {"pipe": _CLIENT, "to_pickle": "it writes a file where the data is; keep released answers instead"},
    "series": {"pipe": _CLIENT, "to_pickle": "it writes a file where the data is; keep released answers instead"},
    "dp": {
        "protect": "the data is protected once, by the curator",
        "unprotected": "it is the curator's exact copy of the data, which never leaves the server",
        "k_anonymity": "it reads exact values (a teaching contrast, not a private release): the curator's own",
        "anonymize": "it releases exact values (a teaching contrast, not a private release): the curator's own",
        "sample_and_aggregate": "it runs your function on each part of the data, where the values are; no code is "
                                "sent",
        "plot": "plot a released answer on your side instead, e.g. p['x'].dp.histogram(bins=...).plot.bar()",
        "release": "it describes a released answer: read it on the answer (answer.dp.release)",
        "partition_by": "it makes new budgets in the server's ledger, the curator's: the curator can split the data "
                        "and offer each part as a dataset of its own",
    },
}


@dataclass(frozen=True)
class Operation:
    """One name a remote plan may use on one kind of protected object."""

    kind: str
    name: str
    # "value": reading it releases nothing or returns a released answer, which the client fetches at once;
    # "protected": it gives another protected object, kept as a step of the plan.
    returns: Literal["value", "protected"]


def _kinds() -> dict[str, type]:
    from dpframe.accessor import DataFrameAccessor, SeriesAccessor
    from dpframe.protection.frame import ProtectedFrame
    from dpframe.protection.indexing import _ILoc, _Loc
    from dpframe.protection.series import ProtectedSeries, _CategoricalMethods, _DatetimeMethods, _StringMethods
    from dpframe.queries.grouped import ColumnGroupBy
    from dpframe.queries.partitioned import GroupBy

    return {"frame": ProtectedFrame, "series": ProtectedSeries, "str": _StringMethods, "dt": _DatetimeMethods,
            "cat": _CategoricalMethods, "loc": _Loc, "iloc": _ILoc, "frame.dp": DataFrameAccessor,
            "series.dp": SeriesAccessor, "groupby": GroupBy, "column groupby": ColumnGroupBy}


# Released at once: what a .dp accessor or a private group-by gives (their methods release, their properties are
# public), and the schema's facts.
_VALUE_KINDS = ("frame.dp", "series.dp", "groupby", "column groupby")
_PROTECTED_RESULTS = frozenset({("frame.dp", "groupby"), ("groupby", "__getitem__"), ("frame.dp", "sample"),
                                ("series.dp", "sample")})
SCHEMA_ATTRIBUTES = frozenset({"columns", "dtypes", "dtype", "name", "ndim", "is_protected", "budget",
                               "categories", "ordered", "tz", "unit"})


def _accessor_names(kind: str, proxy: type) -> list[str]:
    """The names of pandas' own accessor that dpframe's proxy offers: those pandas has, minus those it refuses."""
    dtypes = {"str": ["object"], "cat": ["category"], "dt": ["datetime64[ns]", "timedelta64[ns]", "period[D]"]}
    empties = [pd.Series([], dtype=dtype) for dtype in dtypes[kind]]
    refused: dict[str, str] = getattr(proxy, "_refused")
    names = {name for empty in empties for name in dir(getattr(empty, kind)) if not name.startswith("_")}
    return sorted(names - set(refused))


def _local_only(kind: str) -> Mapping[str, str]:
    return LOCAL_ONLY.get("dp" if kind.endswith(".dp") else kind, {})


@functools.cache
def operations() -> tuple[Operation, ...]:
    """The registry: every (kind, name) a remote plan may use, generated from the protected classes.

    >>> ops = {(o.kind, o.name): o.returns for o in operations()}
    >>> ops[("series.dp", "mean")], ops[("frame", "query")], ("frame", "pipe") in ops
    ('value', 'protected', False)
    """
    found: list[Operation] = []
    for kind, cls in _kinds().items():
        if kind in ("str", "dt", "cat"):
            names = _accessor_names(kind, cls)
        else:
            names = sorted(name for name in dir(cls) if not name.startswith("_") and name not in _local_only(kind))
            if kind in ("frame", "series"):
                names += [*BINARY_OPERATORS, *UNARY_OPERATORS]
        found += [Operation(kind, name, "value" if returns_value(kind, name) else "protected") for name in names]
    return tuple(found)


@functools.cache
def _by_kind() -> dict[str, frozenset[str]]:
    names: dict[str, set[str]] = {}
    for op in operations():
        names.setdefault(op.kind, set()).add(op.name)
    return {kind: frozenset(found) for kind, found in names.items()}


def offered(kind: str) -> frozenset[str]:
    """The names the registry offers on a ``kind`` of protected object.

    >>> "query" in offered("frame"), "mean" in offered("series"), "head" in offered("frame")
    (True, False, False)
    """
    return _by_kind().get(kind, frozenset())


def kind_of(obj: Any) -> str | None:
    """The registry's kind of ``obj`` (``"frame"``, ``"series.dp"``, ...); None for anything else (a released value).

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1, 2]}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    >>> kind_of(p), kind_of(p["x"].dp), kind_of(3.5)
    ('frame', 'series.dp', None)
    """
    for kind, cls in _kinds().items():
        if type(obj) is cls:
            return kind
    return None


def check_name(kind: str, name: str) -> None:
    """Refuse ``name`` on a ``kind`` of protected object when a remote plan may not use it.

    Names the registry does not list go to the protected object itself, which
    offers what it allows locally (a column by attribute, ``p.age``) and
    refuses the rest with its own message; what a remote plan may never name
    (private attributes, :data:`LOCAL_ONLY`) is refused here.

    >>> check_name("frame", "query"), check_name("frame", "age"), check_name("groupby", "__repr__")
    (None, None, None)
    >>> check_name("frame.dp", "unprotected")
    Traceback (most recent call last):
    ...
    dpframe.errors.RefusedError: p.dp.unprotected is not offered remotely: it is the curator's exact copy of the data, which never leaves the server
    """
    local_only = _local_only(kind)
    if name in local_only:
        shown = f"p.dp.{name}" if kind.endswith(".dp") else f"p.{name}"
        raise RefusedError(f"{shown} is not offered remotely: {local_only[name]}")
    if name.startswith("_") and name not in DUNDERS:
        raise RefusedError(f"{name!r} is not offered remotely: private attributes of protected objects are the "
                           "library's own")
    if name in DUNDERS and kind not in ("frame", "series") and name != "__repr__":
        # An accessor or a group-by has none of its own: Python's object would answer (__eq__ by identity).
        raise RefusedError(f"{name!r} is not offered remotely on {kind}: operators and Python's protocols are "
                           "those of protected frames and columns")


def returns_value(kind: str, name: str) -> bool:
    """True when reading ``name`` on ``kind`` gives a value to fetch at once (a released answer or a schema fact).

    >>> returns_value("series.dp", "mean"), returns_value("frame.dp", "groupby"), returns_value("frame", "columns")
    (True, False, True)
    """
    if name in SCHEMA_ATTRIBUTES:
        return True
    return kind in _VALUE_KINDS and (kind, name) not in _PROTECTED_RESULTS


def markdown_table() -> str:
    """The table of ``docs/server.md``: what a remote plan may use on each kind of object, from :func:`operations`.

    >>> markdown_table().splitlines()[0]
    '| object | offered remotely | not offered remotely |'
    """
    titles = {"frame": "protected frame `p`", "series": "protected column `p['x']`", "str": "`.str`",
              "dt": "`.dt`", "cat": "`.cat`", "loc": "`.loc`", "iloc": "`.iloc`", "frame.dp": "`p.dp`",
              "series.dp": "`p['x'].dp`", "groupby": "`p.dp.groupby(...)`",
              "column groupby": "`p.dp.groupby(...)['x']`"}
    lines = ["| object | offered remotely | not offered remotely |", "|---|---|---|"]
    for kind in _kinds():
        names = _by_kind().get(kind, frozenset())
        shown = ", ".join(f"`{name}`" for name in sorted(names) if not name.startswith("__"))
        if kind in ("frame", "series"):
            shown += ", operators (`+`, `==`, `&`, `~`, ...), numpy ufuncs, indexing (`p[...]`, `p[...] = ...`)"
        if kind in ("loc", "iloc"):
            shown = "indexing and assignment (`p.loc[cond, 'x']`, `p.loc[cond, 'x'] = 0`)"
        if kind in ("str", "dt", "cat"):  # pandas' own names, which differ between its versions
            shown = f"pandas' `.{kind}` methods and properties (row-wise), but those refused here"
        refused = "; ".join(f"`{name}` ({why})" for name, why in _local_only(kind).items()
                            if hasattr(_kinds()[kind], name))
        if kind in ("str", "dt", "cat"):
            refused = ", ".join(f"`{name}`" for name in sorted(getattr(_kinds()[kind], "_refused"))) + (
                " (refused as on a local frame: docs/privacy-model.md)")
        lines.append(f"| {titles[kind]} | {shown} | {refused} |")
    lines.append(f"| `dpframe` | {', '.join(f'`{name}`' for name in FUNCTIONS)} of remote frames | |")
    return "\n".join(lines)


# -- the plan's JSON model ------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _known_name(name: str) -> str:
    if len(name) > MAX_NAME or not _IDENTIFIER.match(name):
        raise ValueError(f"a step's name must be an identifier (a method or attribute), got {name[:MAX_NAME]!r}")
    if name.startswith("_") and name not in DUNDERS:
        raise ValueError(f"{name!r} is not offered remotely: private attributes of protected objects are the "
                         "library's own")
    return name


Name = Annotated[str, AfterValidator(_known_name),
                 Field(description="a method or attribute the registry offers (dpframe.service.plan.operations), or "
                                   "a column read as an attribute")]
_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Step(BaseModel):
    """What every step has: the earlier step it acts on (0: the dataset), checked strictly."""

    model_config = _STRICT
    target: int = Field(ge=0)


class GetAttr(_Step):
    """``v[target].name``."""

    op: Literal["getattr"]
    name: Name


class Call(_Step):
    """``v[target].name(*args, **kwargs)``; operators are calls of their method (``__add__``)."""

    op: Literal["call"]
    name: Name
    args: list[JsonValue] = Field(default_factory=list)
    kwargs: dict[str, JsonValue] = Field(default_factory=dict)


class GetItem(_Step):
    """``v[target][key]``."""

    op: Literal["getitem"]
    key: JsonValue


class SetItem(_Step):
    """A copy of ``v[target]`` with ``copy[key] = value`` (``via="loc"``: ``copy.loc[key] = value``)."""

    op: Literal["setitem"]
    via: Literal["loc", "iloc"] | None = None
    key: JsonValue
    value: JsonValue


class DelItem(_Step):
    """A copy of ``v[target]`` without the column ``key`` (``del p[key]``)."""

    op: Literal["delitem"]
    key: JsonValue


class SetAttr(_Step):
    """A copy of ``v[target]`` with ``copy.columns = value``."""

    op: Literal["setattr"]
    name: Literal["columns"]
    value: JsonValue


# dpframe's own functions of protected objects that a plan may call (``dpframe.concat([a, b])``).
FUNCTIONS = ("concat", "to_datetime", "to_numeric")


class Function(_Step):
    """``dpframe.<name>(*args, **kwargs)``, one of :data:`FUNCTIONS`; ``target`` is its first protected argument."""

    op: Literal["function"]
    name: Literal["concat", "to_datetime", "to_numeric"]
    args: list[JsonValue] = Field(default_factory=list)
    kwargs: dict[str, JsonValue] = Field(default_factory=dict)


Step = Annotated[GetAttr | Call | GetItem | SetItem | DelItem | SetAttr | Function, Field(discriminator="op")]


def _depth(value: Any, limit: int) -> int:
    """How deeply ``value`` nests lists and objects (stops counting past ``limit``)."""
    if limit < 0 or not isinstance(value, (list, dict)):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(child, limit - 1) for child in children), default=0)


class Plan(BaseModel):
    """A request's steps; step ``i`` (from 1) acts on the value of an earlier step, step 0 being the dataset."""

    model_config = _STRICT
    request_id: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$",
                                     description="made by the client (uuid4 hex), the same on a retry")]
    steps: list[Step] = Field(min_length=1, max_length=MAX_STEPS)
    result: int = Field(ge=0)

    @model_validator(mode="after")
    def _well_formed(self) -> Plan:
        for index, step in enumerate(self.steps, 1):
            if step.target >= index:
                raise ValueError(f"step {index} acts on step {step.target}: a step acts on an earlier one")
            for value in _values_of(step):
                if _depth(value, MAX_DEPTH + 1) > MAX_DEPTH:
                    raise ValueError(f"step {index} nests values more than {MAX_DEPTH} levels deep")
        if self.result != len(self.steps):
            raise ValueError(f"the result is step {self.result}, but a plan's result is its last step, "
                             f"{len(self.steps)}")
        return self


def _values_of(step: Any) -> list[Any]:
    if isinstance(step, (Call, Function)):
        return [step.args, step.kwargs]
    if isinstance(step, (SetItem,)):
        return [step.key, step.value]
    if isinstance(step, (GetItem, DelItem)):
        return [step.key]
    if isinstance(step, SetAttr):
        return [step.value]
    return []


# Settings that are the curator's, never a request's: who is protected, how, in which ledger, with which noise.
CURATOR_SETTINGS = frozenset({"budget", "ledger", "privacy_unit", "max_contributions", "accounting", "neighbours",
                              "extend", "seed", "random_state", "rng", "path", "path_or_buf", "local_dict_depth"})


def check_settings(kwargs: Mapping[str, Any], where: str) -> None:
    """Refuse keyword arguments that are the curator's settings (a ledger, a budget, a seed, a path).

    >>> check_settings({"epsilon": 0.1}, "count")
    >>> check_settings({"ledger": "x.sqlite"}, "count")
    Traceback (most recent call last):
    ...
    dpframe.errors.RefusedError: count(ledger=...) is not accepted remotely: budgets, ledgers, privacy units, seeds and paths are the curator's settings
    """
    for key in kwargs:
        if key in CURATOR_SETTINGS:
            raise RefusedError(f"{where}({key}=...) is not accepted remotely: budgets, ledgers, privacy units, seeds "
                               "and paths are the curator's settings")


# Python's spelling of the operators a plan calls by their method's name (the reflected ones swap their operands).
_OPERATOR_SIGNS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
                   "and": "&", "or": "|", "xor": "^", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
                   "ge": ">="}
_UNARY_SIGNS = {"__invert__": "~", "__neg__": "-", "__pos__": "+"}
# The wire's tags (dpframe.service.wire) a plan's values may carry, shown as Python writes them.
_SHOWN_TAGS = {"$tuple", "$range", "$slice", "$float", "$dict"}


def as_code(plan: Plan) -> str:
    """The plan as the pandas code an analyst would type for it: what a curator reads in the audit log.

    Steps that a later step uses once are written inside it (``p[p["age"] >= 40].dp.count(epsilon=0.1)``);
    an assignment (``setitem``, ``delitem``, ``setattr``) is a line of its own on a copy, as locally. Values are
    shown as Python writes them; other tagged values as their JSON. For reading only: the plan itself is what runs.

    >>> plan = Plan.model_validate({"request_id": "0" * 32, "result": 5, "steps": [
    ...     {"op": "getitem", "target": 0, "key": "age"},
    ...     {"op": "call", "target": 1, "name": "__ge__", "args": [40]},
    ...     {"op": "getitem", "target": 0, "key": {"$ref": 2}},
    ...     {"op": "getattr", "target": 3, "name": "dp"},
    ...     {"op": "call", "target": 4, "name": "mean", "kwargs": {"bounds": {"$tuple": [0, 125]}, "epsilon": 0.1}}]})
    >>> print(as_code(plan))
    p[p['age'] >= 40].dp.mean(bounds=(0, 125), epsilon=0.1)
    >>> plan = Plan.model_validate({"request_id": "0" * 32, "result": 3, "steps": [
    ...     {"op": "setitem", "target": 0, "key": "x", "value": 1},
    ...     {"op": "getattr", "target": 1, "name": "dp"},
    ...     {"op": "call", "target": 2, "name": "count", "kwargs": {"epsilon": 0.1}}]})
    >>> print(as_code(plan))
    v1 = p.copy(); v1['x'] = 1
    v1.dp.count(epsilon=0.1)
    """
    uses = [0] * (len(plan.steps) + 1)
    for step in plan.steps:
        uses[step.target] += 1
        for value in _values_of(step):
            for ref in _refs(value):
                if 0 <= ref < len(uses):
                    uses[ref] += 1
    shown: dict[int, str] = {0: "p"}
    lines: list[str] = []
    for number, step in enumerate(plan.steps, start=1):
        target = shown.get(step.target, f"v{step.target}")

        def value(data: Any) -> str:
            return _shown_value(data, shown)

        if isinstance(step, (SetItem, DelItem, SetAttr)):
            name = f"v{number}"
            where = f"{name}.{step.via}" if isinstance(step, SetItem) and step.via else name
            change = (f"{where}[{_shown_key(step.key, shown)}] = {value(step.value)}" if isinstance(step, SetItem)
                      else f"del {name}[{_shown_key(step.key, shown)}]" if isinstance(step, DelItem)
                      else f"{name}.columns = {value(step.value)}")
            lines.append(f"{name} = {target}.copy(); {change}")
            shown[number] = name
            continue
        if isinstance(step, GetAttr):
            text = f"{target}.{step.name}"
        elif isinstance(step, GetItem):
            text = f"{target}[{_shown_key(step.key, shown)}]"
        elif isinstance(step, Function):
            text = f"dpframe.{step.name}({_arguments(step.args, step.kwargs, shown)})"
        else:
            text = _call(target, step, shown)
        if isinstance(step, Call) and _is_operator(step):
            text = f"({text})"  # where it is used, an operator's expression is one operand, one target
            if uses[number] != 1 and number != plan.result:
                lines.append(f"v{number} = {text[1:-1]}")
                text = f"v{number}"
        elif uses[number] != 1 and number != plan.result:
            lines.append(f"v{number} = {text}")
            text = f"v{number}"
        shown[number] = text
    result = shown.get(plan.result, f"v{plan.result}")
    lines.append(result[1:-1] if _is_operator(plan.steps[plan.result - 1]) else result)
    return "\n".join(lines)


def _is_operator(step: object) -> bool:
    """Whether a step is an operator (``a >= b``, ``~a``), written as an expression that needs parentheses where it
    is an operand or a target."""
    return isinstance(step, Call) and (step.name in BINARY_OPERATORS and len(step.args) == 1 and not step.kwargs
                                       or step.name in _UNARY_SIGNS and not step.args and not step.kwargs)


def _call(target: str, step: Call, shown: Mapping[int, str]) -> str:
    bare = step.name.strip("_")
    if step.name in BINARY_OPERATORS and len(step.args) == 1 and not step.kwargs:
        other = _shown_value(step.args[0], shown)
        sign = _OPERATOR_SIGNS[bare.removeprefix("r") if bare not in _OPERATOR_SIGNS else bare]
        reflected = bare not in _OPERATOR_SIGNS
        return f"{other} {sign} {target}" if reflected else f"{target} {sign} {other}"
    if step.name in _UNARY_SIGNS and not step.args and not step.kwargs:
        return f"{_UNARY_SIGNS[step.name]}{target}"
    return f"{target}.{step.name}({_arguments(step.args, step.kwargs, shown)})"


def _arguments(args: Sequence[Any], kwargs: Mapping[str, Any], shown: Mapping[int, str]) -> str:
    return ", ".join([_shown_value(arg, shown) for arg in args]
                     + [f"{key}={_shown_value(arg, shown)}" for key, arg in kwargs.items()])


def _refs(value: Any) -> Iterator[int]:
    """The step numbers a value refers to (``{"$ref": i}``, at any depth)."""
    if isinstance(value, dict):
        if set(value) == {"$ref"} and isinstance(value["$ref"], int):
            yield value["$ref"]
            return
        for child in value.values():
            yield from _refs(child)
    elif isinstance(value, list):
        for child in value:
            yield from _refs(child)


def _shown_key(data: Any, shown: Mapping[int, str]) -> str:
    """A key inside brackets, as Python writes it there: ``p.loc[:5, "x"]`` (a tuple without its parentheses,
    slices with colons)."""
    if isinstance(data, dict) and len(data) == 1:
        ((tag, inner),) = data.items()
        if tag == "$ref" and isinstance(inner, int):
            text = shown.get(inner, f"v{inner}")
            return text[1:-1] if text.startswith("(") else text  # inside brackets an expression needs none
        if tag == "$tuple" and isinstance(inner, list) and inner:
            return ", ".join(_shown_key(item, shown) for item in inner)
        if tag == "$slice" and isinstance(inner, list) and len(inner) == 3:
            start, stop, step = ("" if item is None else _shown_value(item, shown) for item in inner)
            return f"{start}:{stop}" + (f":{step}" if step else "")
    return _shown_value(data, shown)


def _shown_value(data: Any, shown: Mapping[int, str]) -> str:
    """A plan's value as Python writes it: a step's reference as that step, the wire's plain tags as their Python."""
    if isinstance(data, list):
        return "[" + ", ".join(_shown_value(item, shown) for item in data) + "]"
    if isinstance(data, dict) and len(data) == 1:
        ((tag, inner),) = data.items()
        if tag == "$ref" and isinstance(inner, int):
            return shown.get(inner, f"v{inner}")
        if tag in _SHOWN_TAGS and isinstance(inner, list) and tag != "$dict":
            items = [_shown_value(item, shown) for item in inner]
            if tag == "$tuple":
                return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
            if tag == "$range":
                return f"range({', '.join(items)})"
            return f"slice({', '.join(items)})"  # $slice (inside brackets: _shown_key)
        if tag == "$float" and isinstance(inner, str):
            return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(inner, json.dumps(data))
        if tag == "$dict" and isinstance(inner, list) and all(isinstance(pair, list) and len(pair) == 2
                                                              for pair in inner):
            return "{" + ", ".join(f"{_shown_value(key, shown)}: {_shown_value(item, shown)}"
                                   for key, item in inner) + "}"
    if isinstance(data, dict):
        if any(key.startswith("$") for key in data):
            return json.dumps(data, ensure_ascii=False)
        return "{" + ", ".join(f"{key!r}: {_shown_value(item, shown)}" for key, item in data.items()) + "}"
    return repr(data)
