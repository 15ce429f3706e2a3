"""Query and eval strings on protected frames follow pandas' own grammar, checked against ``df.query``.

A generated corpus of expressions -- comparisons, chained comparisons, ``in``/``not in`` and ``==`` with
lists, ``&``/``|``/``~`` mixed with ``and``/``or``/``not`` with and without parentheses, arithmetic,
backquoted names, ``@`` constants, math functions, ``.str`` methods -- selects the very same rows on the
protected frame as pandas selects on the data (the curator's view), or both raise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpframe

FRAME = pd.DataFrame({
    "month": np.arange(60) % 12 + 1,
    "day": np.arange(60) % 7 + 1,
    "tip": np.round(np.linspace(0.5, 9.5, 60), 2),
    "bill total": np.where(np.arange(60) % 9 == 0, np.nan, np.linspace(3.0, 50.0, 60)),
    "sex": np.where(np.arange(60) % 3 == 0, "Female", "Male"),
})
LIMIT = 4  # an @ constant of the tests
NAMES = ["month", "day", "tip", "`bill total`"]

_numbers = st.sampled_from(["1", "2", "3", "5", "7", "2.5", "20", "@LIMIT"])
_comparisons = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])


@st.composite
def _terms(draw: Any) -> str:
    name = draw(st.sampled_from(NAMES))
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return f"{name} * 2 - {draw(_numbers)}"
    if kind == 1:
        return f"-{name}"
    if kind == 2:
        return f"({name} + {draw(st.sampled_from(NAMES))}) / 2"
    if kind == 3:
        return f"{draw(st.sampled_from(['sqrt', 'abs', 'log1p', 'floor']))}({name})"
    return name


@st.composite
def _atoms(draw: Any) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return f"{draw(_terms())} {draw(_comparisons)} {draw(_numbers)}"
    if kind == 1:
        values = draw(st.lists(st.integers(1, 12), min_size=1, max_size=3))
        op = draw(st.sampled_from(["in", "not in", "==", "!="]))
        return f"{draw(st.sampled_from(['month', 'day']))} {op} {values}"
    if kind == 2:
        low, high = sorted(draw(st.lists(st.integers(0, 12), min_size=2, max_size=2)))
        return f"{low} < {draw(st.sampled_from(NAMES))} <= {high}"
    if kind == 3:
        return f"sex == '{draw(st.sampled_from(['Female', 'Male']))}'"
    if kind == 4:
        return f"sex.str.startswith('{draw(st.sampled_from(['F', 'M', 'Fe']))}')"
    return f"month % {draw(st.sampled_from(['2', '3']))} == {draw(st.sampled_from(['0', '1']))}"


def _expressions(depth: int = 2) -> st.SearchStrategy[str]:
    atoms = _atoms()
    if depth == 0:
        return atoms
    inner = _expressions(depth - 1)
    bare = st.tuples(inner, st.sampled_from([" & ", " | ", " and ", " or "]), inner).map("".join)
    negated = st.tuples(st.sampled_from(["~", "not "]), inner).map(lambda t: f"{t[0]}({t[1]})")
    return st.one_of(atoms, bare, negated, bare.map(lambda e: f"({e})"))


def _rows(run: Any) -> Any:
    try:
        return run()
    except Exception as error:  # noqa: BLE001 -- both must fail alike
        return type(error).__name__


@pytest.fixture(scope="module")
def protected() -> dpframe.ProtectedFrame:
    return FRAME.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_expressions())
def test_a_query_selects_the_rows_pandas_selects(protected: dpframe.ProtectedFrame, expr: str) -> None:
    expected = _rows(lambda: FRAME.query(expr).index.tolist())
    got = _rows(lambda: protected.query(expr).dp.unprotected().index.tolist())
    if isinstance(expected, str):  # pandas itself refuses (e.g. a math function it does not know)
        return
    assert got == expected, expr


@pytest.mark.parametrize("expr", [
    "month == 1 & day == 1",  # pandas: (month == 1) & (day == 1), not month == (1 & day) == 1
    "day >= 5 | tip > 9",
    "not (month > 1 | day > 1)",
    "~(month > 6) & sex == 'Male'",
    "month in [1, 2] or `bill total` > 40",
    "month == [1, 2]",
    "month != [1, 2] and day == @LIMIT",
    "1 < month <= 3",
    "arctan2(tip, day) > 1",
])
def test_pandas_precedence_and_spellings(protected: dpframe.ProtectedFrame, expr: str) -> None:
    assert list(protected.query(expr).dp.unprotected().index) == FRAME.query(expr).index.tolist()


def test_eval_assigns_with_the_same_grammar(protected: dpframe.ProtectedFrame) -> None:
    made = protected.eval("both = month == 1 & day == 1").dp.unprotected()["both"]
    assert made.tolist() == FRAME.eval("both = month == 1 & day == 1")["both"].tolist()


def test_an_at_name_inside_quotes_is_text(protected: dpframe.ProtectedFrame) -> None:
    assert len(protected.query("sex == '@LIMIT'").dp.unprotected()) == 0
