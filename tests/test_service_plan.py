"""The curator service's plan model and operation registry (dpframe.service.plan): what a request may name."""

from __future__ import annotations

import ast
from typing import Any

import pytest

pytest.importorskip("pydantic")

from pydantic import ValidationError  # noqa: E402

from dpframe.errors import RefusedError  # noqa: E402
from dpframe.service.plan import (  # noqa: E402
    LOCAL_ONLY,
    MAX_DEPTH,
    MAX_STEPS,
    Plan,
    check_name,
    check_settings,
    operations,
    returns_value,
)

REQUEST = "ab" * 16


def plan(*steps: dict[str, Any], result: int | None = None) -> Plan:
    return Plan.model_validate({"request_id": REQUEST, "steps": list(steps),
                                "result": len(steps) if result is None else result})


def test_a_plan_of_a_count_validates() -> None:
    found = plan({"op": "getattr", "target": 0, "name": "dp"},
                 {"op": "call", "target": 1, "name": "count", "kwargs": {"epsilon": 0.1}})
    assert [step.op for step in found.steps] == ["getattr", "call"]


@pytest.mark.parametrize("bad", [
    {"request_id": "not hex", "steps": [{"op": "getattr", "target": 0, "name": "dp"}], "result": 1},
    {"request_id": REQUEST, "steps": [], "result": 0},
    {"request_id": REQUEST, "steps": [{"op": "getattr", "target": 1, "name": "dp"}], "result": 1},  # forward
    {"request_id": REQUEST, "steps": [{"op": "getattr", "target": 0, "name": "dp"}], "result": 0},  # not last
    {"request_id": REQUEST, "steps": [{"op": "getattr", "target": 0, "name": "__class__"}], "result": 1},
    {"request_id": REQUEST, "steps": [{"op": "getattr", "target": 0, "name": "_private"}], "result": 1},
    {"request_id": REQUEST, "steps": [{"op": "getattr", "target": 0, "name": "a.b"}], "result": 1},
    {"request_id": REQUEST, "steps": [{"op": "exec", "target": 0, "name": "dp"}], "result": 1},
    {"request_id": REQUEST, "steps": [{"op": "getattr", "target": "0", "name": "dp"}], "result": 1},  # strict
    {"request_id": REQUEST, "steps": [{"op": "getattr", "target": 0, "name": "dp", "extra": 1}], "result": 1},
    {"request_id": REQUEST, "steps": [{"op": "setattr", "target": 0, "name": "_data", "value": 1}], "result": 1},
    {"request_id": REQUEST, "steps": [{"op": "getattr", "target": 0, "name": "dp"}] * (MAX_STEPS + 1),
     "result": MAX_STEPS + 1},
])
def test_malformed_plans_are_refused_by_the_model(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Plan.model_validate(bad)


def test_deeply_nested_values_are_refused() -> None:
    value: Any = 1
    for _ in range(MAX_DEPTH + 2):
        value = [value]
    with pytest.raises(ValidationError, match="levels deep"):
        plan({"op": "call", "target": 0, "name": "isin", "args": [value]})


def test_the_registry_offers_the_local_operations_and_not_the_curators() -> None:
    offered = {(op.kind, op.name) for op in operations()}
    assert {("frame", "query"), ("frame", "assign"), ("series", "__add__"), ("series.dp", "mean"),
            ("frame.dp", "crosstab"), ("groupby", "mean"), ("str", "upper"), ("dt", "year")} <= offered
    for kind, names in LOCAL_ONLY.items():
        for name in names:
            kinds = ("frame.dp", "series.dp") if kind == "dp" else (kind,)
            assert not {(k, name) for k in kinds} & offered
    # What the proxies refuse locally is not in the registry either.
    assert ("str", "get_dummies") not in offered and ("cat", "remove_unused_categories") not in offered


@pytest.mark.parametrize(("kind", "name"), [("frame.dp", "unprotected"), ("series.dp", "protect"),
                                            ("frame.dp", "k_anonymity"), ("frame", "to_pickle"),
                                            ("frame", "_private"), ("series", "__class__"),
                                            ("frame", "__reduce__")])
def test_check_name_refuses_what_is_never_remote(kind: str, name: str) -> None:
    with pytest.raises(RefusedError, match="not offered remotely"):
        check_name(kind, name)


def test_curator_settings_are_refused_in_any_call() -> None:
    for key in ("ledger", "budget", "privacy_unit", "max_contributions", "seed", "accounting", "path"):
        with pytest.raises(RefusedError, match="curator's settings"):
            check_settings({key: 1}, "mean")


def test_values_and_steps_are_told_apart() -> None:
    assert returns_value("series.dp", "histogram") and returns_value("groupby", "mean")
    assert not returns_value("frame.dp", "groupby") and not returns_value("groupby", "__getitem__")
    assert returns_value("frame", "columns") and not returns_value("frame", "query")


def test_docs_show_the_registry_as_the_code_defines_it() -> None:
    from pathlib import Path

    from dpframe.service.plan import markdown_table

    doc = (Path(__file__).resolve().parents[1] / "docs" / "server.md").read_text(encoding="utf-8")
    assert markdown_table() in doc


def test_a_plan_reads_as_the_pandas_code_that_made_it() -> None:
    """as_code: what the curator's audit page shows; an analyst's strings are values in it (repr), never code."""
    from dpframe.service.plan import as_code

    def plan(*steps: dict[str, Any], result: int | None = None) -> Plan:
        return Plan.model_validate({"request_id": "0" * 32, "steps": list(steps),
                                    "result": len(steps) if result is None else result})

    hostile = '</td><script>alert(1)</script>'
    assert as_code(plan({"op": "call", "target": 0, "name": "query", "args": [f"x == '{hostile}'"]},
                        {"op": "getattr", "target": 1, "name": "dp"},
                        {"op": "call", "target": 2, "name": "count", "kwargs": {"epsilon": 0.1}})) == \
        f'''p.query("x == '{hostile}'").dp.count(epsilon=0.1)'''
    # A reflected operator swaps its operands; a unary one is a prefix; a step used twice is named once.
    assert as_code(plan({"op": "getitem", "target": 0, "key": "a"},
                        {"op": "call", "target": 1, "name": "__rsub__", "args": [1]},
                        {"op": "call", "target": 2, "name": "__invert__"},
                        {"op": "call", "target": 2, "name": "__and__", "args": [{"$ref": 3}]})) == \
        "v2 = 1 - p['a']\nv2 & (~v2)"
    # Assignments are lines of their own on a copy, as locally; dpframe's functions keep their module.
    assert as_code(plan({"op": "setitem", "target": 0, "via": "loc", "key": {"$tuple": [{"$slice": [None, 5, None]},
                                                                                    "x"]}, "value": 0},
                        {"op": "delitem", "target": 1, "key": "y"},
                        {"op": "setattr", "target": 2, "name": "columns", "value": ["a", "b"]},
                        {"op": "function", "target": 3, "name": "concat", "args": [[{"$ref": 3}, {"$ref": 0}]]})) == \
        ("v1 = p.copy(); v1.loc[:5, 'x'] = 0\nv2 = v1.copy(); del v2['y']\n"
         "v3 = v2.copy(); v3.columns = ['a', 'b']\ndpframe.concat([v3, p])")
    assert as_code(plan({"op": "getattr", "target": 0, "name": "dp"},
                        {"op": "call", "target": 1, "name": "histogram",
                         "kwargs": {"bins": {"$range": [0, 10, 2]}, "x": {"$float": "nan"},
                                    "d": {"$dict": [["a", 1]]}, "t": {"$timestamp": "2020-01-01"}}})) == \
        'p.dp.histogram(bins=range(0, 10, 2), x=nan, d={\'a\': 1}, t={"$timestamp": "2020-01-01"})'
    for code in (as_code(plan({"op": "getitem", "target": 0, "key": {"$slice": [1, None, 2]}})),
                 as_code(plan({"op": "call", "target": 0, "name": "f", "args": [{"$slice": [1, None, None]}]}))):
        ast.parse(code)
    assert as_code(plan({"op": "getitem", "target": 0, "key": {"$slice": [1, None, 2]}})) == "p[1::2]"
