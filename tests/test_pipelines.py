"""Published pandas pipelines, step by step, in plain pandas and on a protected frame (tests/pipelines/).

Each step is expected to run unchanged, to answer through its ``.dp`` spelling within the noise of pandas' answer on
the same clipped data, or to be refused with a message naming what to do instead, at no cost. A step that does not
yet do what it should is an xfail (strict) that says which of the three failure categories it falls in and why: the
list of library bugs this suite found. docs/pipelines.md lists the pipelines and their sources.
"""

from __future__ import annotations

import pytest
from pipelines.harness import Outcome, Pipeline, Step, outcomes_of
from pipelines.registry import PIPELINES


class UnexpectedOutcome(Exception):
    """A known failure now fails another way: not swallowed by its xfail (which expects an AssertionError)."""


def _cases() -> list[object]:
    cases: list[object] = []
    for pipeline in PIPELINES:
        for step in pipeline.steps:
            marks = [] if step.known is None else [pytest.mark.xfail(
                strict=True, raises=AssertionError, reason=f"{step.known.category}: {step.known.reason}")]
            cases.append(pytest.param(pipeline, step, id=f"{pipeline.name}/{step.name}", marks=marks))
    return cases


@pytest.mark.parametrize(("pipeline", "step"), _cases())
def test_step(pipeline: Pipeline, step: Step) -> None:
    outcome: Outcome = outcomes_of(pipeline.name)[step.name]
    if step.known is not None and outcome.category not in (step.known.category, step.kind):
        raise UnexpectedOutcome(f"known as {step.known.category}, now {outcome.category}: {outcome.detail}")
    assert outcome.category == step.kind, f"{outcome.category}: {outcome.detail}"


def test_the_suite_covers_enough_published_steps() -> None:
    assert len(PIPELINES) >= 10
    assert sum(len(p.steps) for p in PIPELINES) >= 100
