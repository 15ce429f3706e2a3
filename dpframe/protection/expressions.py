"""``query`` and ``eval`` strings on protected frames.

pandas evaluates ``df.query("age > age.mean()")`` on plain arrays, so a query
string could compute anything from the data. Here the expression is parsed
with Python's :mod:`ast` and evaluated node by node on the protected columns
themselves: every name is a :class:`~dpframe.protection.objects.ProtectedSeries`
(or a public constant), and every operation goes through its allow-list, so
``age.mean()`` is refused exactly as ``p["age"].mean()`` is.

Supported, as in pandas: column names (backquoted when they are not
identifiers), constants, ``@variable`` for the caller's variables,
arithmetic, comparisons (chained too), ``and``/``or``/``not`` as well as
``&``/``|``/``~``, ``in``/``not in`` with a list, the row-wise methods of a
column (:data:`QUERY_METHODS`) and of its ``.str``, ``.dt`` and ``.cat``
(``name.str.startswith('A')``), and the functions ``abs``, ``sqrt``,
``log``, ``log10``, ``exp``, ``sin``, ``cos``, ``tan``, ``floor``, ``ceil``.

A query string is data about which rows to keep, so it can only compute: no
``.dp`` query (a charge hidden in a string), no ``pipe``/``apply`` (code), no
export (``to_pickle``), and no attributes of the caller's ``@`` values, which
are public and computed outside the query.
"""

from __future__ import annotations

import ast
import operator
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dpframe.errors import RefusedError
from dpframe.protection.analyst import public_value
from dpframe.protection.objects import AccessorProxy, Protected, ProtectedFrame

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCTIONS: dict[str, np.ufunc] = {
    "abs": np.absolute, "sqrt": np.sqrt, "log": np.log, "log10": np.log10, "exp": np.exp, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "floor": np.floor, "ceil": np.ceil,
}
# What a query may call on a column: row-wise methods (each row's result from that row alone), and the accessors.
QUERY_METHODS = frozenset(
    "abs add astype between cat clip cut div dt eq fillna floordiv ge gt isin isna isnull le lt map mask mod mul "
    "ne notna notnull pow radd rdiv replace rfloordiv rmod rmul round rpow rsub rtruediv str sub truediv where "
    "dtype name".split()
)
_BACKQUOTED = re.compile(r"`([^`]*)`")
_LOCAL = re.compile(r"@([A-Za-z_][A-Za-z_0-9]*)")
_COLUMN_PREFIX = "__dpframe_column_"
_LOCAL_PREFIX = "__dpframe_local_"


def split_assignment(expr: str) -> tuple[str | None, str]:
    """``("bmi", "w / h ** 2")`` for ``"bmi = w / h ** 2"``; ``(None, expr)`` without an assignment.

    >>> split_assignment("bmi = weight / height ** 2"), split_assignment("a == 1")
    (('bmi', 'weight / height ** 2'), (None, 'a == 1'))
    """
    match = re.match(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*=(?!=)(.*)$", expr, re.S)
    if match is None:
        return None, expr
    return match.group(1), match.group(2).strip()


def evaluate(frame: ProtectedFrame, expr: str, local_dict: Mapping[str, Any] | None, depth: int) -> Any:
    """Evaluate ``expr`` on ``frame``'s protected columns; ``@name`` looks ``depth`` frames up the stack.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": [25, 41, 67], "sex": ["F", "M", "F"]}).dp.protect(epsilon=1.0)
    >>> limit = 40
    >>> evaluate(p, "age > @limit and sex in ['F']", None, 1).dtype.kind
    'b'
    """
    if not isinstance(expr, str) or not expr.strip():
        raise ValueError("the expression must be a non-empty string")
    columns: dict[str, Any] = {}

    def quote(match: re.Match[str]) -> str:
        name = f"{_COLUMN_PREFIX}{len(columns)}"
        columns[name] = match.group(1)
        return name

    text = _LOCAL.sub(lambda m: _LOCAL_PREFIX + m.group(1), _BACKQUOTED.sub(quote, expr))
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ValueError(f"cannot parse the expression {expr!r}: {error.msg}") from None
    caller = sys._getframe(depth)
    scope = {**caller.f_globals, **caller.f_locals, **(local_dict or {})}
    return _Evaluator(frame, columns, scope).visit(tree.body)


class _Evaluator:
    def __init__(self, frame: ProtectedFrame, quoted: dict[str, Any], scope: Mapping[str, Any]) -> None:
        self.frame, self.quoted, self.scope = frame, quoted, scope

    def visit(self, node: ast.AST) -> Any:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise ValueError(f"{type(node).__name__} is not supported in a query on protected data")
        return method(node)

    def visit_Name(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.quoted:
            return self.frame[self.quoted[name]]
        if name.startswith(_LOCAL_PREFIX):
            local = name[len(_LOCAL_PREFIX):]
            if local not in self.scope:
                raise NameError(f"@{local} is not defined")
            value = self.scope[local]
            # The caller's objects run their __eq__ and __hash__ against the data: plain values only.
            return value if isinstance(value, Protected) else public_value(value, f"@{local} in a query")
        if name in self.frame.columns:
            return self.frame[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        raise NameError(f"{name!r} is not a column of the frame; its columns are {list(self.frame.columns)}")

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _sequence(self, node: ast.List | ast.Tuple | ast.Set) -> list[Any]:
        return [self.visit(element) for element in node.elts]

    visit_List = visit_Tuple = visit_Set = _sequence

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.visit(node.operand)
        if isinstance(node.op, (ast.Not, ast.Invert)):
            return ~value if isinstance(value, Protected) else not value
        if isinstance(node.op, ast.USub):
            return -value
        return +value

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ValueError(f"the operator {type(node.op).__name__} is not supported in a query")
        return op(self.visit(node.left), self.visit(node.right))

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.visit(v) for v in node.values]
        combine = operator.and_ if isinstance(node.op, ast.And) else operator.or_
        result = values[0]
        for value in values[1:]:
            result = combine(result, value)
        return result

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        result = None
        for op, comparator in zip(node.ops, node.comparators):
            right = self.visit(comparator)
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(left, Protected):
                    raise ValueError("'in' in a query tests a column's values against a list: column in [...]")
                found = left.isin(right if isinstance(right, (list, tuple, set)) else [right])
                part = ~found if isinstance(op, ast.NotIn) else found
            else:
                part = _COMPARE[type(op)](left, right)
            result = part if result is None else result & part
            left = right
        return result

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        if node.attr.startswith("_"):
            raise ValueError(f"{node.attr!r}: private attributes are not available in a query")
        owner = self.visit(node.value)
        if isinstance(owner, AccessorProxy):  # .str, .dt, .cat: row-wise by construction, and guarded there
            return getattr(owner, node.attr)
        if not isinstance(owner, Protected):
            raise ValueError(f"{node.attr!r} of a public value is not available in a query: compute it outside "
                             f"the query and pass it as @name")
        found = getattr(owner, node.attr)  # pandas' exact reads and cross-row steps are refused here, as outside
        if node.attr not in QUERY_METHODS:
            raise RefusedError(f"{node.attr!r} is refused in a query, which only computes row by row from columns "
                               f"(methods: {', '.join(sorted(QUERY_METHODS))}). Instead: run that step on the "
                               f"protected frame outside the query string")
        return found

    def visit_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and node.func.id not in self.frame.columns:
            function: Any = _FUNCTIONS[node.func.id]
        else:
            function = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords if k.arg is not None}
        return function(*args, **kwargs)
