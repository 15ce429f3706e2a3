"""The analyst's side of the curator service: remote protected frames with the local ``.dp`` API.

``dpframe.connect(url, token=...)`` opens a connection; ``c.dataset("census")``
gives a :class:`RemoteFrame`. What the analyst does to it -- selecting columns,
filtering, ``assign``, ``query``, arithmetic, ``.str``/``.dt``, ``merge`` with a
public table -- is recorded as steps of a plan (:mod:`dpframe.service.plan`),
nothing is computed here and nothing is sent; asking a ``.dp`` question (or a
fact of the schema: ``p.columns``, ``p.dtypes``, ``repr(p)``) sends the plan,
which the server replays on its own :class:`~dpframe.ProtectedFrame`, the one
place the rules are enforced. The answer comes back as the local type (a
:class:`~dpframe.DPFloat` with its interval, a released Series or frame with its
accuracy); a refusal or an error as the same exception, with the same message.

Functions are never sent. A function of the whole frame (``assign(x=lambda d:
d["a"] * 2)``, ``pipe``, ``p.loc[lambda d: ...]``, ``where(lambda d: ...)``) is
called here, on the remote frame, so what it does is recorded as steps; a
function of each value (``map(f)``, ``apply(f)``) would have to run where the
values are, and is refused with what to do instead. ``@name`` in ``query`` and
``eval`` is looked up here, in the caller's variables, and sent as a value.

Every request carries an id, and a retry after a lost connection sends the same
id: the server answers it with the release it stored (no second charge, no
fresh noise).
"""

from __future__ import annotations

import sys
import time
import uuid
import warnings
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, cast
from urllib.parse import urlsplit

import httpx
import numpy as np
import pandas as pd

from dpframe import errors
from dpframe.protection.base import pandas_function_refusal
from dpframe.protection.expressions import local_names, split_assignment
from dpframe.protection.rules import refusal
from dpframe.service import wire
from dpframe.service.plan import BINARY_OPERATORS, SCHEMA_ATTRIBUTES, UNARY_OPERATORS, offered

if TYPE_CHECKING:
    from dpframe.protection.frame import ProtectedFrame

# The exceptions a server may name, raised here as themselves (a closed list: a name never imports anything).
_RAISED: dict[str, type[Exception]] = {
    "RefusedError": errors.RefusedError, "BudgetExceededError": errors.BudgetExceededError,
    "LedgerError": errors.LedgerError, "NotProtectedError": errors.NotProtectedError,
    "AlreadyProtectedError": errors.AlreadyProtectedError,
    "ValueError": ValueError, "TypeError": TypeError, "KeyError": KeyError, "IndexError": IndexError,
    "AttributeError": AttributeError, "NotImplementedError": NotImplementedError, "PermissionError": PermissionError,
}
_WARNED: dict[str, type[Warning]] = {
    "ClippingWarning": errors.ClippingWarning, "LargeDeltaWarning": errors.LargeDeltaWarning,
    "UserWarning": UserWarning, "RuntimeWarning": RuntimeWarning,
}
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# Attempts of one request when the connection fails (the same request id each time).
ATTEMPTS = 3
# The longest wait the client takes on the server's word (Retry-After, in seconds) before asking again.
MAX_RATE_WAIT = 10


@dataclass(frozen=True, eq=False)
class _Node:
    """One step of a plan, with the step it acts on; ``op="source"`` is the dataset."""

    op: str
    target: _Node | None = None
    name: str | None = None
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    key: Any = None
    value: Any = None
    via: str | None = None


def _steps(result: _Node) -> list[dict[str, Any]]:
    """The plan's steps that compute ``result``, each after those it reads (step 0 is the dataset)."""
    numbered: dict[int, int] = {}
    steps: list[dict[str, Any]] = []
    sources: list[_Node] = []

    def number(node: _Node) -> int:
        if id(node) in numbered:
            return numbered[id(node)]
        if node.op == "source":
            if sources and sources[0] is not node:
                # Two dataset() calls are two protections, as two protect() calls are locally.
                raise refusal("combining remote frames of two dataset() calls", "mixing",
                              "they are different protections (and may be different data)")
            sources.append(node)
            numbered[id(node)] = 0
            return 0
        assert node.target is not None
        target = number(node.target)

        def encoded(value: Any) -> Any:
            return wire.encode(value, ref=lambda obj: number(obj) if isinstance(obj, _Node) else None)

        step: dict[str, Any] = {"op": node.op, "target": target}
        if node.op in ("getattr", "call", "setattr", "function"):
            step["name"] = node.name
        if node.op in ("call", "function"):
            step["args"] = [encoded(value) for value in node.args]
            step["kwargs"] = {key: encoded(value) for key, value in node.kwargs.items()}
        if node.op in ("getitem", "setitem", "delitem"):
            step["key"] = encoded(node.key)
        if node.op in ("setitem", "setattr"):
            step["value"] = encoded(node.value)
        if node.op == "setitem":
            step["via"] = node.via
        steps.append(step)
        numbered[id(node)] = len(steps)
        return len(steps)

    number(result)
    return steps


def _plain(value: Any) -> Any:
    """A released answer used as a constant, as plain data (its release stays here); remote objects as steps."""
    if isinstance(value, _Remote):
        return value._node
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (pd.Series, pd.DataFrame)) and "dp" in value.attrs:
        plain = pd.DataFrame(value) if isinstance(value, pd.DataFrame) else pd.Series(value)
        plain.attrs = {}
        return plain
    from dpframe.results import DPFloat, DPInt

    if isinstance(value, DPInt):
        return int(value)
    if isinstance(value, DPFloat):
        return float(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return pd.api.types.pandas_dtype(value)  # astype(np.float32): the dtype pandas makes of it, by its name
    if callable(value) and not isinstance(value, (type, np.ufunc)):
        raise errors.RefusedError(
            "a function given to a remote frame's method runs on each value, and the values stay on the server: "
            "no code is sent. Instead: express it with column operations (s * 2, s.where(cond, other), "
            "s.map({old: new}), s.str.upper(), p.eval('a + b')), or give a function of the whole frame where pandas "
            "takes one (assign(x=lambda d: ...), p.loc[lambda d: ...], pipe)")
    return value


class Connection:
    """A connection to a curator's server, as one analyst (:func:`connect`)."""

    def __init__(self, url: str, *, token: str, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the server's address must be an http(s) URL, e.g. https://dp.example.org, got {url!r}")
        if parts.scheme == "http" and parts.hostname not in _LOCAL_HOSTS:
            raise ValueError(f"refusing plain http:// to {parts.hostname}: the token and the answers would cross the "
                             "network unencrypted; use https:// (the curator serves TLS, docs/server.md), or "
                             "http:// only to localhost")
        if not isinstance(token, str) or not token:
            raise ValueError("token= is the token the curator gave you (a string)")
        self._new_samples: set[str] = set()  # samples (p.dp.sample) the server has not answered a request on yet
        self._http = httpx.Client(base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {token}"},
                                  timeout=timeout, transport=transport)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._http.close()

    def __repr__(self) -> str:
        return f"Connection({str(self._http.base_url)!r})"

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        for attempt in range(ATTEMPTS):
            try:
                response = self._http.request(method, path, json=body)
            except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout) as error:
                if attempt == ATTEMPTS - 1:
                    raise errors.RemoteError(f"the server at {self._http.base_url} did not answer "
                                             f"({type(error).__name__}); the request can be sent again: it is "
                                             "answered once") from None
                continue
            wait = response.headers.get("Retry-After", "")
            if response.status_code != 429 or attempt == ATTEMPTS - 1 or not wait.isdigit():
                break
            # The server's rate limit: wait as long as it says and send the same request again (a refused request
            # charged nothing; its id makes a repeat answered once).
            time.sleep(min(int(wait), MAX_RATE_WAIT))
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.status_code >= 400 or not isinstance(payload, dict):
            _raise(response.status_code, payload)
        for warned in payload.get("warnings", []):
            category = _WARNED.get(str(warned.get("category")), UserWarning)
            warnings.warn(str(warned.get("message")), category, stacklevel=4)
        # The answer is released (and charged) already: the cell cap guards the server against analysts' tables, not
        # an analyst against its own answer (a synthetic frame can be large), whose every cell is a byte or more here.
        return wire.decode(payload.get("value"), allow_results=True, max_cells=len(response.content))

    def datasets(self) -> list[str]:
        """The names of the datasets this analyst has a budget for."""
        names: list[str] = self._request("GET", "/v1/datasets")
        return names

    def dataset(self, name: str, *, mock: bool = False) -> ProtectedFrame:
        """The dataset ``name`` as a remote protected frame (:class:`RemoteFrame`); with ``mock=True``, its mock
        protected here, to develop on before spending anything.

        It is typed as the local :class:`~dpframe.ProtectedFrame`, whose operations and answers it has (tests/
        test_service_pipelines.py), so that code written and type-checked for a local frame checks unchanged
        (a helper taking ``p: dpframe.ProtectedFrame``, ``p["x"].dp.mean(...)`` a ``DPFloat``); at run time it is a
        :class:`RemoteFrame`, not an instance of ``ProtectedFrame``.

        ``mock=True`` gives a local :class:`~dpframe.ProtectedFrame` of the dataset's mock (:meth:`mock`), protected
        as the server protects the dataset (its declared categories, privacy unit and contributions) under an
        in-memory budget equal to what remains of yours on it: a notebook runs on it unchanged, with the same
        refusals and the same charges, spends nothing of your budget, and then runs on the real data when this
        one line drops ``mock=True``. Its answers are about synthetic data: never conclusions.
        """
        if not isinstance(name, str):
            raise TypeError(f"a dataset's name is a string, got {type(name).__name__}")
        if not isinstance(mock, bool):
            raise TypeError(f"mock= is True or False, got {type(mock).__name__}")
        description = self._request("GET", f"/v1/datasets/{name}")  # a clear error now for a name that is not yours
        if mock:
            return self._rehearsal(name, description)
        return cast("ProtectedFrame", RemoteFrame(_Origin(self, name), _Node("source")))

    def mock(self, name: str) -> pd.DataFrame:
        """The dataset's mock: synthetic data with its schema, made once by the curator (``dpframe mock``) and the
        same for every analyst; free (its cost was charged to the dataset's cap when it was made).

        Good for the schema (columns, dtypes, categories), the shape of the data and rough distributions: writing
        and debugging a pipeline. Not for conclusions: its values are a model's draws from noisy marginals, its row
        count is noisy, rare values and most relations between more than two columns are gone. Its ``attrs["mock"]``
        says when it was made and what it cost (:class:`~dpframe.service.mock.MockInfo`), ``attrs["dp"]`` how it was
        synthesized. A dataset may offer none (the curator's choice): then a RemoteError says so.
        """
        from dpframe.service.mock import MockInfo

        if not isinstance(name, str):
            raise TypeError(f"a dataset's name is a string, got {type(name).__name__}")
        answer = self._request("GET", f"/v1/datasets/{name}/mock")
        frame: pd.DataFrame = answer["frame"]
        frame.attrs["mock"] = MockInfo(name, str(answer["made"]), str(answer["cost"]), tuple(answer["notes"]))
        return frame

    def _rehearsal(self, name: str, description: Mapping[str, Any]) -> ProtectedFrame:
        """The mock of ``name`` protected as the server protects the dataset, under what remains of the budget."""
        from dpframe.accounting.budget import Budget
        from dpframe.accounting.ledger import Ledger

        view: wire.BudgetView = description["budget"]
        left = view.remaining.cost
        if not left.epsilon and not left.rho:
            raise errors.BudgetExceededError(f"your budget on {name!r} is spent: a rehearsal on its mock would refuse "
                                             "every query (c.mock(name) gives the mock itself)")
        ledger, label = Ledger.in_memory(), f"mock of {name}"
        budget = (Budget(rho=float(left.rho), name=label, ledger=ledger) if view.kind == "zcdp"
                  else Budget(epsilon=float(left.epsilon), delta=float(left.delta), name=label, ledger=ledger))
        categories = {column: list(spec["categories"]) for column, spec in description["columns"].items()
                      if "categories" in spec}
        protected: ProtectedFrame = self.mock(name).dp.protect(
            budget=budget, categories=categories or None, privacy_unit=description["privacy_unit"],
            max_contributions=description["max_contributions"])
        return protected

    def _run(self, dataset: str, node: _Node) -> Any:
        steps = _steps(node)
        # A sample's first request says so: the server draws it then, and holds it for the next ones.
        drawn: set[str] = set()
        for step in steps:
            if step["op"] == "call" and step["name"] == "sample" and step["kwargs"].get("sample_id") in \
                    self._new_samples:
                step["kwargs"]["new_sample"] = True
                drawn.add(step["kwargs"]["sample_id"])
        plan = {"request_id": uuid.uuid4().hex, "steps": steps, "result": len(steps)}
        answer = self._request("POST", f"/v1/datasets/{dataset}/run", plan)
        # Answered: the server holds these samples now. (After an error it may not have reached them; it takes
        # new_sample=True for a sample it already holds as that sample.)
        self._new_samples.difference_update(drawn)
        return answer


def _raise(status: int, payload: Any) -> NoReturn:
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        raise errors.RemoteError(f"the server answered {status} without an error it names")
    kind, message = str(error.get("type")), str(error.get("message"))
    if status in (401, 403):
        raise errors.RemoteError(f"{message} ({status})")
    if kind == "ProposalRefusedError":  # charged, as locally: it carries what it cost
        raise errors.ProposalRefusedError(message, wire.decode(error.get("cost"), allow_results=True))
    raised = _RAISED.get(kind)
    if raised is None:
        raise errors.RemoteError(f"{kind}: {message} ({status})")
    raise (raised(message) if raised is not KeyError else KeyError(message))


@dataclass(frozen=True)
class _Origin:
    connection: Connection
    dataset: str


class _Remote:
    """A step of a plan on the curator's server, standing where a protected object stands locally."""

    __slots__ = ("_origin", "_node")
    _origin: _Origin
    _node: _Node

    def __init__(self, origin: _Origin, node: _Node) -> None:
        object.__setattr__(self, "_origin", origin)
        object.__setattr__(self, "_node", node)

    def _then(self, cls: type[_R], op: str, **parts: Any) -> _R:
        return cls(self._origin, _Node(op, self._node, **parts))

    def _fetch(self, op: str, **parts: Any) -> Any:
        return self._origin.connection._run(self._origin.dataset, _Node(op, self._node, **parts))

    def _call(self, cls: type[_R], name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> _R:
        return self._then(cls, "call", name=name, args=tuple(_plain(arg) for arg in args),
                          kwargs={key: _plain(value) for key, value in kwargs.items()})

    def _fetch_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._fetch("call", name=name, args=tuple(_plain(arg) for arg in args),
                           kwargs={key: _plain(value) for key, value in kwargs.items()})

    def __repr__(self) -> str:
        shown: str = self._fetch_call("__repr__")
        return shown

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(repr(self))}</pre>"

    # What a protected object refuses is refused by the server's object, with its message.
    def __len__(self) -> int:
        return int(self._fetch_call("__len__"))

    def __bool__(self) -> bool:
        return bool(self._fetch_call("__bool__"))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._fetch_call("__iter__"))

    def __contains__(self, item: Any) -> bool:
        return bool(self._fetch_call("__contains__", item))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NoReturn:
        self._fetch_call("__array__")
        raise AssertionError("unreachable: the server refuses it")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> NoReturn:
        self._fetch_call("__array_function__", getattr(func, "__name__", str(func)), None, None, None)
        raise AssertionError("unreachable: the server refuses it")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot set {name!r} on a {type(self).__name__}")

    @property
    def _typ(self) -> NoReturn:
        # pandas asks its arguments for _typ: pd.merge(p, ...) or pd.cut(p["x"], ...) is refused as a protected
        # object refuses it, with its message (nothing is sent)
        raise pandas_function_refusal("ProtectedFrame" if isinstance(self, RemoteFrame) else "ProtectedSeries")

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"a {type(self).__name__} stands for data on the server: keep the released answers instead")


_R = Any  # the remote class a step gives (RemoteFrame, RemoteSeries, ...); typed loosely: the server decides


def _traced(obj: _Remote, value: Any) -> Any:
    """``value``, or what it gives for ``obj`` when it is a function of the whole frame (pandas' callables)."""
    if callable(value) and not isinstance(value, (type, np.ufunc, _Remote)):
        return value(obj)
    return value


class _Data(_Remote):
    """What frames and columns share: operators, methods as steps, the schema's facts fetched at once."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in SCHEMA_ATTRIBUTES:
            return self._fetch("getattr", name=name)
        if name == "dp":
            accessor = RemoteAccessor(self._origin, _Node("getattr", self._node, name="dp"))
            object.__setattr__(accessor, "_local", _local_accessor(self))
            return accessor
        if name in ("str", "dt", "cat"):
            return _RemoteMethods(self._origin, _Node("getattr", self._node, name=name))
        if name in ("loc", "iloc") and isinstance(self, RemoteFrame):  # a column has none: refused as locally
            return _RemoteIndexer(self, name)
        if name not in offered("frame" if isinstance(self, RemoteFrame) else "series"):
            # A column read as an attribute, or a refusal (p.head, p["x"].mean): asked now, so that a refusal is
            # raised here, where the local object raises it, not when the step is first used.
            read = _Node("getattr", self._node, name=name)
            self._origin.connection._run(self._origin.dataset, _Node("call", read, name="__repr__"))
        return _Member(self, name)

    def __getitem__(self, key: Any) -> Any:
        key = _traced(self, key)
        cls = RemoteFrame if isinstance(key, (list, _Remote, slice, pd.Index)) else RemoteSeries
        if isinstance(self, RemoteSeries):
            cls = RemoteSeries
        return self._then(cls, "getitem", key=_plain(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        node = _Node("setitem", self._node, key=_plain(key), value=_plain(_traced(self, value)))
        object.__setattr__(self, "_node", node)  # p[key] = value: p now stands for the changed frame

    def __delitem__(self, key: Any) -> None:
        object.__setattr__(self, "_node", _Node("delitem", self._node, key=_plain(key)))

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "columns":
            super().__setattr__(name, value)
        object.__setattr__(self, "_node", _Node("setattr", self._node, name="columns", value=_plain(list(value))))

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return self._call(_kind(self), "__array_ufunc__", (ufunc.__name__, method, *inputs), kwargs)

    def __dpframe_function__(self, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """``dpframe.concat``, ``to_datetime`` or ``to_numeric`` of remote objects (they hand this object their
        call, dpframe.protection.base.stand_in): a step of the plan, run by the server's own function."""
        objs = args[0] if name == "concat" and args else ()
        cls: type[_Data] = RemoteSeries
        if name == "concat":
            axis = args[1] if len(args) > 1 else 0
            if axis in (1, "columns") or not all(isinstance(piece, RemoteSeries) for piece in objs):
                cls = RemoteFrame
        return cls(self._origin, _Node("function", self._node, name=name, args=tuple(_plain(arg) for arg in args),
                                       kwargs={key: _plain(value) for key, value in kwargs.items()}))

    def pipe(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, called here: what it does to the frame is recorded as steps."""
        return func(self, *args, **kwargs)

    def assign(self, **kwargs: Any) -> RemoteFrame:
        """New columns, as ``DataFrame.assign``: a function of the frame is called here, on this remote frame."""
        result: Any = self
        for name, value in kwargs.items():
            result = result._call(RemoteFrame, "assign", (), {name: _traced(result, value)})
        return RemoteFrame(result._origin, result._node)

    def where(self, cond: Any, other: Any = np.nan, **kwargs: Any) -> Any:
        """As pandas' ``where``; a function for ``cond`` or ``other`` is called here on this remote object."""
        return self._call(_kind(self), "where", (_traced(self, cond), _traced(self, other)), kwargs)

    def mask(self, cond: Any, other: Any = np.nan, **kwargs: Any) -> Any:
        """As pandas' ``mask``; a function for ``cond`` or ``other`` is called here on this remote object."""
        return self._call(_kind(self), "mask", (_traced(self, cond), _traced(self, other)), kwargs)

    def query(self, expr: str, *, local_dict: Mapping[str, Any] | None = None, level: int = 0,
              **kwargs: Any) -> RemoteFrame:
        """Rows where ``expr`` holds (pandas' grammar); ``@name`` is read from the caller's variables and sent."""
        rows: RemoteFrame = self._call(RemoteFrame, "query", (expr,),
                                       {"local_dict": _locals(expr, local_dict, level), **kwargs})
        return rows

    def eval(self, expr: str, *, local_dict: Mapping[str, Any] | None = None, level: int = 0) -> Any:
        """A row-wise expression (``"bmi = w / h ** 2"`` assigns a column); ``@name`` from the caller's variables."""
        target, expression = split_assignment(expr)
        return self._call(RemoteFrame if target is not None else RemoteSeries, "eval", (expr,),
                          {"local_dict": _locals(expression, local_dict, level)})

    def rename(self, *args: Any, **kwargs: Any) -> Any:
        """As pandas' ``rename``; a function for the column labels is applied here to the (public) labels."""
        for key in ("columns", "mapper"):
            if callable(kwargs.get(key)) and isinstance(self, RemoteFrame):
                func = kwargs[key]
                kwargs[key] = {label: func(label) for label in self.columns}
        return self._call(_kind(self), "rename", args, kwargs)


def _locals(expr: str, given: Mapping[str, Any] | None, level: int) -> dict[str, Any]:
    """The values of ``expr``'s ``@`` names, from ``given`` or the variables of the caller's caller (pandas' rule)."""
    frame = sys._getframe(2 + level)
    scope = {**frame.f_globals, **frame.f_locals, **(given or {})}
    found = {}
    for name in local_names(expr):
        if name not in scope:
            raise NameError(f"@{name} is not defined")  # the local message (dpframe.protection.expressions)
        found[name] = _plain(scope[name])
    return found


def _operator(name: str) -> Callable[..., Any]:
    def operator(self: _Data, *others: Any) -> Any:
        return self._call(_kind(self), name, others, {})

    operator.__name__ = name
    return operator


for _name in (*BINARY_OPERATORS, *UNARY_OPERATORS):
    setattr(_Data, _name, _operator(_name))
_Data.__hash__ = None  # type: ignore[assignment]  # == gives a column, as in pandas


def _kind(obj: _Remote) -> type[_Data]:
    """The class a step on ``obj`` that keeps its kind gives: a frame's, or a column's (``_Member`` is a column)."""
    return RemoteFrame if isinstance(obj, RemoteFrame) else RemoteSeries


class RemoteFrame(_Data):
    """A protected frame on the curator's server: the local :class:`~dpframe.ProtectedFrame`'s operations, remote.

    Made by :meth:`Connection.dataset`; see docs/server.md.
    """

    __slots__ = ()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.columns)  # a frame iterates over its column labels, as pandas' (a fact of the schema)

    def mock(self) -> pd.DataFrame:
        """The dataset's mock (:meth:`Connection.mock`): synthetic data with its schema, free, not for conclusions.

        Only the dataset's own frame has one (``c.dataset(name).mock()``): a mock of a filtered or changed frame
        would be the mock's rows filtered, which the analyst can do to the mock itself.
        """
        if self._node.op != "source":
            raise TypeError("mock() is the dataset's: call it on c.dataset(name), then filter or change the mock "
                            "as you like")
        return self._origin.connection.mock(self._origin.dataset)


class RemoteSeries(_Data):
    """A protected column on the curator's server (``p["age"]``), as :class:`~dpframe.ProtectedSeries` locally."""

    __slots__ = ()

    # A protected column takes no item assignment (p["x"][cond] = 0 would change a copy): said at once, as locally.
    def __setitem__(self, key: Any, value: Any) -> NoReturn:
        raise TypeError("'ProtectedSeries' object does not support item assignment")

    def __delitem__(self, key: Any) -> NoReturn:
        raise TypeError("'ProtectedSeries' object doesn't support item deletion")


# Methods of a frame that give one column (a series), and of a column that give a frame; the rest keep the kind.
# Only the client's class depends on it (the server's object is what it is).
_GIVES_SERIES = frozenset({"apply", "all", "any", "max", "min", "sum", "mean", "count", "stack"})
_GIVES_FRAME = frozenset({"to_frame"})
# Methods of a frame that give a fact of the schema (its labels): fetched at once, as SCHEMA_ATTRIBUTES.
_GIVES_VALUE = frozenset({"keys"})


class _RemoteMethods(_Remote):
    """``.str``, ``.dt`` or ``.cat`` of a remote column: their methods give columns; facts of the dtype are fetched."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in SCHEMA_ATTRIBUTES:
            return self._fetch("getattr", name=name)
        if name == "components":  # a duration column's parts: a frame
            return RemoteFrame(self._origin, _Node("getattr", self._node, name=name))
        return _Member(self, name)


def _accessor_gives_frame(accessor: str | None, name: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether pandas' ``.str.name(**kwargs)`` (or ``.dt``'s) gives a frame: one column per part or group."""
    if accessor == "dt":
        return name == "isocalendar"
    if accessor != "str":
        return False
    if name in ("extract", "partition", "rpartition"):
        return bool(kwargs.get("expand", True))
    if name in ("split", "rsplit"):
        return bool(kwargs.get("expand", False))
    return name in ("extractall", "get_dummies")


class _Member(RemoteSeries):
    """``p.age`` or ``p["t"].dt.year`` (a column) and ``p.sort_values`` or ``p["s"].str.upper`` (a method to call):
    which one a name is, is the server's to say (a column read as an attribute), so one object serves both."""

    __slots__ = ("_member", "_owner")

    def __init__(self, owner: _Remote, member: str) -> None:
        super().__init__(owner._origin, _Node("getattr", owner._node, name=member))
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_member", member)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        owner, name = self._owner, self._member
        cls = _kind(owner)
        if isinstance(owner, RemoteFrame) and name in _GIVES_SERIES:
            cls = RemoteSeries
        elif (isinstance(owner, RemoteSeries) and name in _GIVES_FRAME) or (
                isinstance(owner, _RemoteMethods) and _accessor_gives_frame(owner._node.name, name, kwargs)):
            cls = RemoteFrame
        elif isinstance(owner, RemoteFrame) and name in _GIVES_VALUE:
            return owner._fetch_call(name, *args, **kwargs)
        called = owner._call(cls, name, args, kwargs)
        if kwargs.get("inplace"):
            repr(called)  # refused by the server's object, as locally, here (nothing else would send it)
        return called


class _RemoteIndexer:
    """``.loc`` / ``.iloc`` of a remote frame: indexing gives a step; assignment changes the frame it came from."""

    def __init__(self, owner: _Data, via: str) -> None:
        self._owner, self._via = owner, via

    def __getitem__(self, key: Any) -> Any:
        owner = self._owner
        if isinstance(key, tuple):
            key = tuple(_traced(owner, part) for part in key)
        else:
            key = _traced(owner, key)
        column = isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], Hashable) and not isinstance(
            key[1], (slice, _Remote))
        indexer = _Node("getattr", owner._node, name=self._via)
        return (RemoteSeries if column else RemoteFrame)(owner._origin, _Node("getitem", indexer, key=_plain(key)))

    def __setitem__(self, key: Any, value: Any) -> None:
        owner = self._owner
        if isinstance(key, tuple):
            key = tuple(_traced(owner, part) for part in key)
        node = _Node("setitem", owner._node, key=_plain(key), value=_plain(_traced(owner, value)), via=self._via)
        object.__setattr__(owner, "_node", node)


def _local_accessor(data: _Data) -> type:
    from dpframe.accessor import DataFrameAccessor, SeriesAccessor

    return DataFrameAccessor if isinstance(data, RemoteFrame) else SeriesAccessor


class RemoteAccessor(_Remote):
    """``.dp`` of a remote frame or column: each query is sent and answered at once; ``groupby`` is a step."""

    __slots__ = ("_local",)
    _local: type  # the local accessor's class: what it has not, this has not either (a misspelt query, at once)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if isinstance(_offered(self._local, name), property):
            return self._fetch("getattr", name=name)
        if name == "groupby":
            return lambda *args, **kwargs: self._call(RemoteGroupBy, "groupby", args, kwargs)
        if name == "sample":
            return self._sample
        return lambda *args, **kwargs: self._fetch_call(name, *args, **kwargs)

    def _sample(self, rate: float) -> Any:
        """``p.dp.sample(rate)``: a Poisson sample the server draws at its first request and holds under a name
        made here, so that every query on it reads the same rows and is charged on the same account, as locally."""
        from dpframe.accessor import DataFrameAccessor

        cls = RemoteFrame if self._local is DataFrameAccessor else RemoteSeries
        sample_id = uuid.uuid4().hex
        self._origin.connection._new_samples.add(sample_id)
        return self._call(cls, "sample", (rate,), {"sample_id": sample_id})


class RemoteGroupBy(_Remote):
    """``p.dp.groupby(...)`` on the server: its statistics are answered at once; ``gb["x"]`` selects columns."""

    __slots__ = ()

    def __getitem__(self, columns: Any) -> RemoteGroupBy:
        return RemoteGroupBy(self._origin, _Node("getitem", self._node, key=_plain(columns)))

    @property
    def _local(self) -> type:
        from dpframe.queries.grouped import ColumnGroupBy
        from dpframe.queries.partitioned import GroupBy

        return ColumnGroupBy if self._node.op == "getitem" else GroupBy

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        _offered(self._local, name)
        return lambda *args, **kwargs: self._fetch_call(name, *args, **kwargs)


def _offered(local: type, name: str) -> Any:
    """The local class's attribute ``name``: what it has not, its remote stand-in has not either (a misspelt
    query raises here, at once, as locally)."""
    found = getattr(local, name, None)
    if found is None:
        raise AttributeError(f"{local.__name__!r} object has no attribute {name!r}")
    return found


def connect(url: str, *, token: str, timeout: float = 60.0) -> Connection:
    """Connect to a curator's server as an analyst; ``c.dataset(name)`` then gives a remote protected frame.

    Plain ``http://`` is refused except to localhost (the token and the answers would cross the network in
    clear); the curator serves ``https://`` (docs/server.md).

    >>> connect("http://dp.example.org", token="t")
    Traceback (most recent call last):
    ...
    ValueError: refusing plain http:// to dp.example.org: the token and the answers would cross the network unencrypted; use https:// (the curator serves TLS, docs/server.md), or http:// only to localhost
    """
    return Connection(url, token=token, timeout=timeout)
