"""R for Data Science, chapter 13 "Relational data" (r4ds.had.co.nz/relational-data.html), in pandas.

flights is private; airlines, planes, weather and airports are public lookup tables, joined with merge.
"""

from __future__ import annotations

import pandas as pd

import dpframe
from pipelines import data
from pipelines.harness import DP, REFUSED, SPEND, UNCHANGED, Env, Pipeline, Step

DELAY = (-100.0, 1400.0)
KEYS = ["year", "month", "day", "hour", "origin"]
NULLABLE = "a left merge makes the public columns nullable (docs/privacy-model.md, types)"


def load() -> Env:
    return {"flights": data.flights(), **{name: data.nycflights_table(name)
                                          for name in ("airlines", "planes", "weather", "airports")}}


def _top_dest(e: Env) -> pd.Series:
    counts = e["flights"]["dest"]
    top = counts.value_counts() if isinstance(counts, pd.Series) else counts.dp.value_counts(epsilon=SPEND)
    return top.drop(dpframe.OTHER, errors="ignore").head(10)


STEPS = (
    Step("flights2", 'flights2 = flights[["year", "month", "day", "hour", "origin", "dest", "tailnum", "carrier"]]',
         UNCHANGED, lambda e: e["flights"][["year", "month", "day", "hour", "origin", "dest", "tailnum", "carrier"]],
         store="flights2", rows=False),
    Step("left-join-airlines", 'flights2.drop(columns=["origin", "dest"]).merge(airlines, on="carrier", how="left")',
         UNCHANGED, lambda e: e["flights2"].drop(columns=["origin", "dest"]).merge(e["airlines"], on="carrier",
                                                                                  how="left"), rows=False),
    Step("left-join-weather", 'flights2.merge(weather, on=["year", "month", "day", "hour", "origin"], how="left")',
         UNCHANGED, lambda e: e["flights2"].merge(e["weather"], on=KEYS, how="left"), store="with_weather",
         rows=False, deviation=NULLABLE),
    Step("weather-then-mean", 'with_weather["visib"].mean()', DP,
         lambda e: e["with_weather"]["visib"].mean(),
         dp=lambda e: e["with_weather"]["visib"].dp.mean(bounds=(0, 10), epsilon=SPEND), tol=1e-3),
    Step("left-join-planes", 'flights2.merge(planes, on="tailnum", how="left")', UNCHANGED,
         lambda e: e["flights2"].merge(e["planes"], on="tailnum", how="left"), store="with_planes", rows=False,
         deviation=NULLABLE),
    Step("planes-then-groupby", 'with_planes.groupby("engine")["seats"].mean()', DP,
         lambda e: e["with_planes"].groupby("engine")["seats"].mean(),
         dp=lambda e: e["with_planes"].dp.groupby("engine")["seats"].mean(bounds=(0, 500), epsilon=SPEND), tol=0.05,
         partial=True),
    Step("left-join-airports", 'flights2.merge(airports, left_on="dest", right_on="faa", how="left")', UNCHANGED,
         lambda e: e["flights2"].merge(e["airports"], left_on="dest", right_on="faa", how="left"), rows=False,
         deviation=NULLABLE),
    Step("inner-join-airports", 'flights2.merge(airports, left_on="origin", right_on="faa")', UNCHANGED,
         lambda e: e["flights2"].merge(e["airports"], left_on="origin", right_on="faa"), store="with_origin",
         rows=False),
    Step("inner-join-then-count", 'with_origin["name"].value_counts()', DP,
         lambda e: e["with_origin"]["name"].value_counts(),
         dp=lambda e: e["with_origin"]["name"].dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("right-join", 'flights2.merge(airports, left_on="dest", right_on="faa", how="right")', REFUSED,
         lambda e: e["flights2"].merge(e["airports"], left_on="dest", right_on="faa", how="right")),
    Step("pd-merge", 'pd.merge(flights2, airlines, on="carrier")', REFUSED,
         lambda e: pd.merge(e["flights2"], e["airlines"], on="carrier")),
    Step("avg-dest-delays", 'flights.groupby("dest")["arr_delay"].mean().reset_index().merge(airports, '
         'left_on="dest", right_on="faa")', DP,
         lambda e: e["flights"].groupby("dest")["arr_delay"].mean().reset_index().merge(
             e["airports"], left_on="dest", right_on="faa").set_index("dest")["arr_delay"],
         dp=lambda e: e["flights"].dp.groupby("dest")["arr_delay"].mean(bounds=DELAY, epsilon=SPEND)
         .drop(dpframe.OTHER, errors="ignore").rename_axis("dest").reset_index().merge(
             e["airports"], left_on="dest", right_on="faa").set_index("dest")["arr_delay"], tol=0.05, partial=True),
    Step("top-dest", 'top_dest = flights["dest"].value_counts().head(10)', DP, _top_dest, store="top_dest", tol=0.5),
    Step("semi-join", 'flights[flights["dest"].isin(top_dest.index)]', UNCHANGED,
         lambda e: e["flights"][e["flights"]["dest"].isin(e["top_dest"].index)], store="to_top", rows=False),
    Step("semi-join-count", "to_top.dp.count()", DP, lambda e: len(e["to_top"]),
         dp=lambda e: e["to_top"].dp.count(epsilon=SPEND), tol=0.5),
    Step("anti-join", 'flights[~flights["tailnum"].isin(planes["tailnum"])]', UNCHANGED,
         lambda e: e["flights"][~e["flights"]["tailnum"].isin(e["planes"]["tailnum"])], store="no_plane",
         rows=False),
    Step("anti-join-count-by-carrier", 'no_plane["carrier"].value_counts()', DP,
         lambda e: e["no_plane"]["carrier"].value_counts(),
         dp=lambda e: e["no_plane"]["carrier"].dp.value_counts(epsilon=SPEND), tol=0.5, partial=True),
    Step("isin-protected-column", 'flights[flights["dest"].isin(flights["origin"])]', REFUSED,
         lambda e: e["flights"][e["flights"]["dest"].isin(e["flights"]["origin"])]),
)

PIPELINE = Pipeline("flights_relational", 'R for Data Science, ch. 13 "Relational data"',
                    "https://r4ds.had.co.nz/relational-data.html (nycflights13)", load, ("flights",), STEPS)
