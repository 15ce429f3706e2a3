"""The server's side of a plan: replay its steps on the analyst's :class:`~dpframe.ProtectedFrame`.

The plan's steps are what the analyst did to a remote frame; here they are
done again, by the same protected objects that enforce the rules in the
curator's process, so a remote analyst is held to exactly the local rules
(docs/privacy-model.md) -- no second implementation of them to drift. What the
remote setting adds is checked before each step runs:

* a step acts only on a protected object (the frame, a column, an accessor, a
  private group-by), never on a released value or on one of Python's objects;
* every step but the last gives a protected object: a bound method, a budget or
  any other object a ``getattr`` may give is a value only as the plan's result,
  so a ``{"$ref": i}`` argument is always a protected object (a method handed to
  ``map`` would run per row -- a release per row, its number the exact count);
* ``@name`` in ``query``/``eval`` is read from the ``local_dict`` the client sent,
  never from the server's own variables (a local frame reads the caller's);
* it names only what the registry offers remotely (:func:`dpframe.service.plan.check_name`:
  no private attributes, nothing of :data:`~dpframe.service.plan.LOCAL_ONLY`);
* its arguments are plain data decoded by :mod:`dpframe.service.wire` (no code,
  no pickle: a function can never arrive), with no curator setting among them
  (:func:`~dpframe.service.plan.check_settings`);
* a ``.dp`` release happens only at the plan's last step, so every argument and
  schema error of the steps before it is raised before anything is charged,
  and one request releases at most one answer.

>>> import pandas as pd, dpframe
>>> from dpframe.service.plan import Plan
>>> p = pd.DataFrame({"age": [30, 40, 50] * 100}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
>>> plan = Plan.model_validate({"request_id": "0" * 32, "result": 4, "steps": [
...     {"op": "getitem", "target": 0, "key": "age"},
...     {"op": "call", "target": 1, "name": "__ge__", "args": [40]},
...     {"op": "getitem", "target": 0, "key": {"$ref": 2}},
...     {"op": "call", "target": 3, "name": "__repr__"}]})
>>> print(execute(p, plan).splitlines()[0])
ProtectedFrame(age: int64; rows hidden)
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import warnings
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.accounting.budget import Budget
from dpframe.errors import RefusedError
from dpframe.protection.base import Protected
from dpframe.protection.expressions import local_names, split_assignment
from dpframe.service import wire
from dpframe.service.plan import (
    Call,
    DelItem,
    Function,
    GetAttr,
    GetItem,
    Plan,
    SetAttr,
    SetItem,
    check_name,
    check_settings,
    kind_of,
    returns_value,
)

_WARNINGS_LOCK = threading.Lock()
# The kinds whose calls release an answer (and charge for it).
_RELEASING = frozenset({"frame.dp", "series.dp", "groupby", "column groupby"})


# How many times the merges of one plan may repeat a row in the worst case (their growths multiplied): a public
# table's largest group of equal keys (all its rows for a cross join). Read from the public table only.
MAX_MERGE_GROWTH = 100


def merge_growth(frame: Any, args: list[Any], kwargs: dict[str, Any]) -> int:
    """The most rows a ``merge`` with a public table can make of one row: from the public table alone.

    >>> import pandas as pd
    >>> public = pd.DataFrame({"k": [1, 1, 2], "v": [0, 1, 2]})
    >>> merge_growth(None, [public], {"on": "k"}), merge_growth(None, [public], {"how": "cross"})
    (2, 3)
    """
    right = args[0] if args else kwargs.get("right")
    if not isinstance(right, pd.DataFrame):
        return 1  # another protection (a join on the unit, bounded per person) or a refusal of the frame's own
    if kwargs.get("how", args[1] if len(args) > 1 else "inner") == "cross" or right.empty:
        return max(len(right), 1)
    keys = kwargs.get("right_on", kwargs.get("on"))
    if keys is None and frame is not None:
        keys = [column for column in right.columns if column in set(frame.columns)]
    try:
        return int(right.groupby(keys, dropna=False).size().max()) if keys is not None and len(keys) else len(right)
    except (KeyError, ValueError, TypeError):
        return len(right)  # the frame's merge then says what is wrong with the keys


# How many samples the server holds for one analyst's frame of a dataset (each is a Poisson subset of its rows).
MAX_SAMPLES = 8
_SAMPLE_ID = re.compile(r"^[0-9a-f]{32}$")


def step_names(plan: Plan, upto: int) -> list[str]:
    """A fixed-size name of what each of steps 0..``upto`` computes, not of where it sits in the plan: the hash of
    the step with the names of the steps it reads in place of their numbers (steps come after those they read,
    so one pass in order; no recursion, no growth with the plan's length).

    >>> plan = Plan.model_validate({"request_id": "0" * 32, "result": 2, "steps": [
    ...     {"op": "getitem", "target": 0, "key": "age"}, {"op": "call", "target": 1, "name": "__ge__", "args": [40]}]})
    >>> [len(name) for name in step_names(plan, 2)]
    [7, 64, 64]
    """
    names = ["dataset"]
    for index, step in enumerate(plan.steps[:upto], 1):
        dumped = step.model_dump()
        dumped["target"] = names[dumped["target"]]
        if dumped["op"] == "call" and dumped["name"] == "sample":
            dumped["kwargs"].pop("new_sample", None)  # a sample drawn from a sample: the same, first request or not

        def named(value: Any) -> Any:
            if isinstance(value, dict):
                if set(value) == {"$ref"} and isinstance(value["$ref"], int) and 0 <= value["$ref"] < index:
                    return {"$step": names[value["$ref"]]}
                return {key: named(item) for key, item in value.items()}
            return [named(item) for item in value] if isinstance(value, list) else value

        names.append(hashlib.sha256(json.dumps(named(dumped), sort_keys=True).encode()).hexdigest())
    return names


def held_sample(accessor: Any, plan: Plan, index: int, args: list[Any], kwargs: dict[str, Any],
                samples: MutableMapping[str, Any] | None) -> Any:
    """The Poisson sample a plan's step ``index`` names: drawn at its first request, then held for the next ones.

    Locally ``s = p.dp.sample(0.1)`` is one sample, and every query on ``s`` is charged the amplified cost on
    that one sample's account. A remote ``s`` names its sample by an id the client made (``sample_id``, with
    ``new_sample=True`` on its first request), and the server keeps the sample object -- its rows and its
    account -- under that id and what it was drawn from, so later requests query the same rows with the same
    account: the local semantics and the local accounting. A sample the server no longer holds (a restart,
    or another worker process) is refused, never drawn again under the same name.
    """
    sample_id, new = kwargs.pop("sample_id", None), kwargs.pop("new_sample", False)
    if samples is None or not isinstance(sample_id, str) or not _SAMPLE_ID.match(sample_id) or not isinstance(
            new, bool):
        raise RefusedError("p.dp.sample is offered remotely through the frames of dpframe.connect, which name each "
                           "sample (sample_id) so that the server can hold it between requests")
    target = plan.steps[index - 1].target
    key = f"{sample_id} {step_names(plan, target)[target]}"
    held = samples.get(key)
    if held is None:
        if not new:
            raise RefusedError("this sample is no longer held by the server (it restarted, or another of its worker "
                               "processes holds it): take a new sample with p.dp.sample(rate)")
        if len(samples) >= MAX_SAMPLES:
            raise RefusedError(f"the server holds at most {MAX_SAMPLES} samples of a dataset per analyst: query the "
                               "samples you have, or ask the curator for a session of its own")
        held = samples[key] = accessor.sample(*args, **kwargs)
    return held


def _functions() -> dict[str, Callable[..., Any]]:
    """dpframe's functions of protected objects a plan may call (:data:`~dpframe.service.plan.FUNCTIONS`)."""
    from dpframe.protection import concat, to_datetime, to_numeric

    return {"concat": concat, "to_datetime": to_datetime, "to_numeric": to_numeric}


def _ufunc(name: Any) -> np.ufunc:
    """numpy's ufunc called ``name`` (``np.log(p["x"])`` arrives as the name ``"log"``)."""
    found = getattr(np, name, None) if isinstance(name, str) and not name.startswith("_") else None
    if not isinstance(found, np.ufunc):
        raise ValueError(f"{name!r} is not a numpy ufunc")
    return found


def _constants_sent(name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Refuse a ``query``/``eval`` whose ``@`` names the plan does not send in ``local_dict``: the protected frame
    would look them up in its caller's variables, which here are the server's own (the client sends their values).

    >>> _constants_sent("query", ["age > @limit"], {"local_dict": {"limit": 40}})
    >>> _constants_sent("eval", [], {"expr": "old = age > @last"})
    Traceback (most recent call last):
    ...
    dpframe.errors.RefusedError: eval: @last has no value in the request: a remote plan sends the values of its @ names (local_dict)
    """
    expr = args[0] if args else kwargs.get("expr")  # query(expr=...) reads the server's variables as well
    if not isinstance(expr, str):
        return  # the frame's own argument check answers
    expression = split_assignment(expr)[1] if name == "eval" else expr
    given = kwargs.get("local_dict")
    for local in sorted(local_names(expression)):
        if not isinstance(given, dict) or local not in given:
            raise RefusedError(f"{name}: @{local} has no value in the request: a remote plan sends the values of "
                               "its @ names (local_dict)")


@dataclass(frozen=True)
class Outcome:
    """What a plan gave: its value, and the warnings the release raised (a clipping warning, a large delta)."""

    value: Any
    warnings: tuple[tuple[str, str], ...]  # (category's name, message)


@contextmanager
def caught_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record the warnings raised inside the block, and only those: one such block at a time in a process.

    Python's warning filters are process-wide: a block recording a plan's warnings would also record a warning
    raised meanwhile in another thread (``protect()`` of another analyst's session warns the curator that its
    budget's delta is at least 1/n). So plans run one at a time in a process (they hold the GIL for most of
    their time anyway; a server scales with worker processes), and the server's other code that may warn
    (``protect()``) runs in such a block too, its warnings for the curator's log.
    """
    with _WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def run(frame: Any, plan: Plan, *, max_cells: int = 100_000, samples: MutableMapping[str, Any] | None = None) -> Outcome:
    """:func:`execute`, with the warnings it raised collected for the client to raise again (not printed here).

    A warning's message is made from the schema, the arguments and released values, as every dpframe message.
    """
    with caught_warnings() as caught:
        value = execute(frame, plan, max_cells=max_cells, samples=samples)
    return Outcome(value, tuple((type(w.message).__name__ if isinstance(w.message, Warning) else "UserWarning",
                                 str(w.message)) for w in caught))


def execute(frame: Any, plan: Plan, *, max_cells: int = 100_000,
            samples: MutableMapping[str, Any] | None = None) -> Any:
    """Replay ``plan`` on ``frame`` (step 0) and return the value of its result step.

    ``samples`` holds the analyst's Poisson samples between requests (:func:`held_sample`); without it,
    ``p.dp.sample`` is refused.

    Raises what the protected objects raise (:class:`~dpframe.RefusedError`,
    ``ValueError``, ...), with their messages, which come from the schema and
    the arguments, never from the data.
    """
    values: list[Any] = [frame]
    last = len(plan.steps)
    growth = 1
    for index, step in enumerate(plan.steps, 1):
        target = values[step.target]
        kind = kind_of(target)
        if kind is None:
            raise RefusedError(f"step {index} acts on a {type(target).__name__}, which is not a protected object: "
                               "work on released answers on your side")

        def decoded(value: Any) -> Any:
            return wire.decode(value, allow_results=False, refs=dict(enumerate(values)), max_cells=max_cells)

        if isinstance(step, GetAttr):
            check_name(kind, step.name)
            values.append(getattr(target, step.name))
        elif isinstance(step, Call):
            check_name(kind, step.name)
            check_settings(step.kwargs, step.name)
            if kind in _RELEASING and returns_value(kind, step.name) and index != last:
                raise RefusedError(f"step {index} releases an answer ({step.name}) before the plan's last step: "
                                   "a request releases one answer, at its end")
            args = [decoded(value) for value in step.args]
            kwargs = {key: decoded(value) for key, value in step.kwargs.items()}
            if kind == "frame" and step.name == "merge":
                growth *= merge_growth(target, args, kwargs)
                if growth > MAX_MERGE_GROWTH:
                    raise RefusedError(f"the merges of this request may repeat a row up to {growth} times (the "
                                       "public tables' largest groups of equal keys multiplied); the server allows "
                                       f"{MAX_MERGE_GROWTH}: merge on keys that are unique in the public table")
            if kind == "frame" and step.name in ("query", "eval"):
                _constants_sent(step.name, args, kwargs)
            if step.name == "__repr__" and kind not in ("frame", "series"):
                values.append(f"<{kind} of a protected object>")  # object.__repr__ would show a memory address
            elif kind in ("frame.dp", "series.dp") and step.name == "sample":
                values.append(held_sample(target, plan, index, args, kwargs, samples))
            elif step.name == "__array_ufunc__":
                if len(args) < 2:
                    raise ValueError("__array_ufunc__ takes a ufunc's name, a method and the inputs")
                values.append(target.__array_ufunc__(_ufunc(args[0]), args[1], *args[2:], **kwargs))
            else:
                values.append(getattr(target, step.name)(*args, **kwargs))
        elif isinstance(step, Function):
            check_settings(step.kwargs, f"dpframe.{step.name}")
            args = [decoded(value) for value in step.args]
            # Its first argument is its target, protected data (concat: a list holding it, whose other pieces
            # concat checks itself): pandas' path for plain values is not the server's to run.
            first = args[0] if args else None
            pieces = first if step.name == "concat" and isinstance(first, list) else [first]
            if not isinstance(target, Protected) or not any(piece is target for piece in pieces):
                raise RefusedError(f"dpframe.{step.name} in a plan takes protected data (steps of the plan) as its "
                                   "first argument, the step's target among it")
            kwargs = {key: decoded(value) for key, value in step.kwargs.items()}
            values.append(_functions()[step.name](*args, **kwargs))
        elif isinstance(step, GetItem):
            values.append(target[decoded(step.key)])
        elif isinstance(step, (SetItem, DelItem, SetAttr)):
            # The analyst's earlier steps keep their values: a mutation makes a new object (as the client rebinds).
            changed = target.copy()
            if isinstance(step, SetItem):
                into = changed if step.via is None else getattr(changed, step.via)
                into[decoded(step.key)] = decoded(step.value)
            elif isinstance(step, DelItem):
                del changed[decoded(step.key)]
            else:
                changed.columns = decoded(step.value)
            values.append(changed)
        if index != last and kind_of(values[-1]) is None:
            raise RefusedError(f"step {index} gives a {type(values[-1]).__name__}, not a protected object: only a "
                               "plan's last step may give a value (a released answer or a fact of the schema)")
    result = values[plan.result]
    if kind_of(result) is not None:
        raise RefusedError("a plan's result is a released answer or a fact of the schema, not a protected object")
    if isinstance(result, Budget):
        return wire.budget_view(result)  # the analyst's own budget, read-only: no extend(), no ledger location
    return result
