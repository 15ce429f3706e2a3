"""Every pipeline of the suite, in the order of docs/pipelines.md."""

from __future__ import annotations

import functools

from pipelines import flights_dates, flights_relational, flights_transform, tips_sql, titanic
from pipelines.harness import Pipeline

PIPELINES: tuple[Pipeline, ...] = (tips_sql.PIPELINE, titanic.PIPELINE, flights_transform.PIPELINE,
                                      flights_relational.PIPELINE, flights_dates.PIPELINE)


@functools.cache
def by_name() -> dict[str, Pipeline]:
    return {p.name: p for p in PIPELINES}
