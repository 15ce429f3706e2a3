"""``query`` and ``eval`` strings on protected frames, in pandas' own grammar.

pandas evaluates ``df.query("age > age.mean()")`` on plain arrays, so a query
string could compute anything from the data, and ``pandas.eval`` documents
that it can run arbitrary code. Here the expression is rewritten by pandas'
own token rewrites (:func:`pandas.core.computation.expr._preparse`: ``&`` and
``|`` become ``and`` and ``or``, so they bind more loosely than comparisons --
``month == 1 & day == 1`` is ``(month == 1) & (day == 1)``, as in pandas --
backquoted names and ``@`` locals become identifiers), parsed with Python's
:mod:`ast`, and evaluated node by node on the protected columns themselves:
every name is a :class:`~dpframe.protection.series.ProtectedSeries` (or a
public constant), and every operation goes through its allow-list, so
``age.mean()`` is refused exactly as ``p["age"].mean()`` is.

Supported, as in pandas: column names (backquoted when they are not
identifiers), constants, ``@variable`` for the caller's variables,
arithmetic, comparisons (chained too), ``and``/``or``/``not`` and
``&``/``|``/``~``, ``in``/``not in`` with a list (and ``==``/``!=`` with a
list, which pandas reads as ``in``), the row-wise methods of a column
(:data:`QUERY_METHODS`) and of its ``.str``, ``.dt`` and ``.cat``
(``name.str.startswith('A')``), and pandas' math functions (``abs``,
``sqrt``, ``log``, ``exp``, ``sin``, ``arctan2``, ...).

A query string is data about which rows to keep, so it can only compute: no
``.dp`` query (a charge hidden in a string), no ``pipe``/``apply`` (code), no
export (``to_pickle``), and no attributes of the caller's ``@`` values, which
are public and computed outside the query.
"""

from __future__ import annotations

import ast
import importlib
import operator
import re
import sys
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from dpframe.errors import RefusedError
from dpframe.protection.analyst import public_value
from dpframe.protection.base import Protected
from dpframe.protection.series import AccessorProxy

if TYPE_CHECKING:
    from dpframe.protection.frame import ProtectedFrame

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
# pandas' math functions in expressions (pandas.core.computation.ops.MATHOPS), as numpy's ufuncs.
_FUNCTIONS: dict[str, np.ufunc] = {
    name: getattr(np, "absolute" if name == "abs" else name)
    for name in ("sin cos tan exp log expm1 log1p sqrt sinh cosh tanh arcsin arccos arctan arccosh arcsinh "
                 "arctanh abs log10 floor ceil arctan2").split()
}
# What a query may call on a column: row-wise methods (each row's result from that row alone), and the accessors.
QUERY_METHODS = frozenset(
    "abs add astype between cat clip cut div dt eq fillna floordiv ge gt isin isna isnull le lt map mask mod mul "
    "ne notna notnull pow radd rdiv replace rfloordiv rmod rmul round rpow rsub rtruediv str sub truediv where "
    "dtype name".split()
)
# pandas' own rewrites of a query's tokens, those of its "pandas" parser (PandasExprVisitor): internal to pandas
# (untyped in its stubs), the same from 2.2 to 3.x; tests/test_query_grammar.py holds them to df.query.
_expr: Any = importlib.import_module("pandas.core.computation.expr")
_parsing: Any = importlib.import_module("pandas.core.computation.parsing")
_PANDAS_REWRITES = partial(_expr._preparse, f=_expr._compose(_expr._replace_locals, _expr._replace_booleans,
                                                           _parsing.clean_backtick_quoted_toks))
_LOCAL_PREFIX = "__pd_eval_local_"


def split_assignment(expr: str) -> tuple[str | None, str]:
    """``("bmi", "w / h ** 2")`` for ``"bmi = w / h ** 2"``; ``(None, expr)`` without an assignment.

    >>> split_assignment("bmi = weight / height ** 2"), split_assignment("a == 1")
    (('bmi', 'weight / height ** 2'), (None, 'a == 1'))
    """
    match = re.match(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*=(?!=)(.*)$", expr, re.S)
    if match is None:
        return None, expr
    return match.group(1), match.group(2).strip()


def _parsed(expr: str) -> ast.Expression:
    """``expr`` after pandas' rewrites, parsed."""
    try:
        text: str = _PANDAS_REWRITES(expr.strip())
        return ast.parse(text, mode="eval")
    except (SyntaxError, ValueError) as error:  # tokenize errors are ValueErrors too (an unclosed backquote)
        raise ValueError(f"cannot parse the expression {expr!r}: {error}") from None


def local_names(expr: str) -> set[str]:
    """The ``@`` names an expression reads, as :func:`evaluate` reads them (none inside a quoted name or text).

    >>> sorted(local_names("x > @low & `a @b` < @high"))
    ['high', 'low']
    """
    return {node.id[len(_LOCAL_PREFIX):] for node in ast.walk(_parsed(expr))
            if isinstance(node, ast.Name) and node.id.startswith(_LOCAL_PREFIX)}


def evaluate(frame: ProtectedFrame, expr: str, local_dict: Mapping[str, Any] | None, depth: int) -> Any:
    """Evaluate ``expr`` on ``frame``'s protected columns; ``@name`` looks ``depth`` frames up the stack.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": [25, 41, 67], "sex": ["F", "M", "F"]}).dp.protect(epsilon=1.0)
    >>> limit = 40
    >>> evaluate(p, "age > @limit & sex in ['F']", None, 1).dtype.kind
    'b'
    """
    if not isinstance(expr, str) or not expr.strip():
        raise ValueError("the expression must be a non-empty string")
    tree = _parsed(expr)
    caller = sys._getframe(depth)
    scope = {**caller.f_globals, **caller.f_locals, **(local_dict or {})}
    return _Evaluator(frame, scope).visit(tree.body)


class _Evaluator:
    def __init__(self, frame: ProtectedFrame, scope: Mapping[str, Any]) -> None:
        self.frame, self.scope = frame, scope
        # A column by its name as pandas' rewrites leave it (backquoted names cleaned to identifiers).
        self.columns: dict[str, Any] = {}
        for column in frame.columns:
            self.columns.setdefault(_parsing.clean_column_name(column), column)
            if isinstance(column, str):
                self.columns.setdefault(column, column)

    def visit(self, node: ast.AST) -> Any:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise ValueError(f"{type(node).__name__} is not supported in a query on protected data")
        return method(node)

    def visit_Name(self, node: ast.Name) -> Any:
        name = node.id
        if name.startswith(_LOCAL_PREFIX):
            local = name[len(_LOCAL_PREFIX):]
            if local not in self.scope:
                raise NameError(f"@{local} is not defined")
            value = self.scope[local]
            # The caller's objects run their __eq__ and __hash__ against the data: plain values only.
            return value if isinstance(value, Protected) else public_value(value, f"@{local} in a query")
        if name in self.columns:
            return self.frame[self.columns[name]]
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
        # pandas' rewrites made & and | into `and` and `or` (their precedence): both combine element-wise.
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
            listed = isinstance(right, (list, tuple, set))
            if isinstance(op, (ast.In, ast.NotIn)) or (listed and isinstance(op, (ast.Eq, ast.NotEq))):
                # pandas reads `column == [...]` as `column in [...]`
                if not isinstance(left, Protected):
                    raise ValueError("'in' in a query tests a column's values against a list: column in [...]")
                found = left.isin(right if listed else [right])
                part = ~found if isinstance(op, (ast.NotIn, ast.NotEq)) else found
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
        if isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and node.func.id not in self.columns:
            function: Any = _FUNCTIONS[node.func.id]
        else:
            function = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        if any(k.arg is None for k in node.keywords):
            raise ValueError("**arguments are not supported in a query: name each argument")
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords if k.arg is not None}
        return function(*args, **kwargs)
