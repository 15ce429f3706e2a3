"""Every pipeline of the suite, in the order of docs/pipelines.md."""

from __future__ import annotations

import functools

from pipelines import (
    diamonds,
    flights_dates,
    flights_relational,
    flights_transform,
    penguins,
    small_frames,
    tips_sql,
    titanic,
)
from pipelines.harness import Pipeline

PIPELINES: tuple[Pipeline, ...] = (tips_sql.PIPELINE, titanic.PIPELINE, flights_transform.PIPELINE,
                                      flights_relational.PIPELINE, flights_dates.PIPELINE, penguins.PIPELINE,
                                      diamonds.PIPELINE, small_frames.MPG_PIPELINE, small_frames.IRIS_PIPELINE,
                                      small_frames.FAIR_PIPELINE, small_frames.SALARY_PIPELINE)


@functools.cache
def by_name() -> dict[str, Pipeline]:
    return {p.name: p for p in PIPELINES}
