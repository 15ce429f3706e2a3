"""R for Data Science, chapter 16 "Dates and times" (r4ds.had.co.nz/dates-and-times.html), in pandas.

make_datetime from year, month, day, hour and minute; times as hhmm numbers; components; rounding; durations.
"""

from __future__ import annotations

import pandas as pd

import dpframe
from pipelines import data
from pipelines.harness import DP, REFUSED, SAFE_REFUSED, SILENTLY_WRONG, SPEND, UNCHANGED, Env, Known, Pipeline, Step

DELAY = (-100.0, 1400.0)
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def load() -> Env:
    # The time_hour steps run on the first 3,000 flights (their own protection): parsing text that does not parse
    # re-runs on halves of the rows, which takes minutes on all 336,776.
    return {"flights": data.flights(), "first": data.flights().iloc[:3000].reset_index(drop=True)}


def _to_datetime(frame: object, *args: object, **kwargs: object) -> object:
    function = pd.to_datetime if isinstance(frame, (pd.DataFrame, pd.Series)) else dpframe.to_datetime
    return function(frame, *args, **kwargs)  # type: ignore[operator]


def _make_datetime_100(frame: object, column: str) -> object:
    parts = frame[["year", "month", "day"]].assign(  # type: ignore[index]
        hour=frame[column] // 100, minute=frame[column] % 100)  # type: ignore[index]
    return _to_datetime(parts)


def _flights_dt(e: Env) -> object:
    f = e["flights"].dropna(subset=["dep_time", "arr_time"])
    return f.assign(dep_time=_make_datetime_100(f, "dep_time"), arr_time=_make_datetime_100(f, "arr_time"),
                    sched_dep_time=_make_datetime_100(f, "sched_dep_time"))[
        ["origin", "dest", "dep_delay", "arr_delay", "dep_time", "arr_time", "sched_dep_time", "air_time"]]


def _dated(e: Env) -> object:
    return e["flights_dt"].assign(dep=_to_datetime(e["flights"]["time_hour"], format="ISO8601"))


STEPS = (
    Step("make-datetime", 'flights.assign(departure=pd.to_datetime(flights[["year", "month", "day", "hour", '
         '"minute"]]))', UNCHANGED,
         lambda e: e["flights"][["year", "month", "day", "hour", "minute"]].assign(
             departure=_to_datetime(e["flights"][["year", "month", "day", "hour", "minute"]])), rows=False),
    Step("make-datetime-100", "flights_dt = flights.dropna(...).assign(dep_time=make_datetime_100(...), ...)",
         UNCHANGED, _flights_dt, store="flights_dt"),
    Step("by-day-histogram", 'flights_dt.dep_time.dt.floor("D").value_counts().sort_index() (a freqpoly by day)', DP,
         lambda e: e["flights_dt"].dep_time.dt.to_period("D").value_counts().reindex(
             pd.period_range("2013-01-01", "2014-01-01", freq="D"), fill_value=0),
         dp=lambda e: e["flights_dt"].dep_time.dp.histogram(bins="D", bounds=("2013-01-01", "2014-01-01"),
                                                            epsilon=SPEND), tol=0.5, ordered=True),
    Step("wday", 'flights_dt.dep_time.dt.day_name().value_counts()', DP,
         lambda e: e["flights_dt"].dep_time.dt.day_name().value_counts(),
         dp=lambda e: e["flights_dt"].dep_time.dt.day_name().dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("wday-number", 'flights_dt.dep_time.dt.day_of_week.value_counts()', DP,
         lambda e: e["flights_dt"].dep_time.dt.day_of_week.value_counts(),
         dp=lambda e: e["flights_dt"].dep_time.dt.day_of_week.dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("month", 'flights_dt.dep_time.dt.month.value_counts()', DP,
         lambda e: e["flights_dt"].dep_time.dt.month.value_counts(),
         dp=lambda e: e["flights_dt"].dep_time.dt.month.dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("minute-delay", 'flights_dt.groupby(flights_dt.dep_time.dt.minute)["arr_delay"].mean()', DP,
         lambda e: e["flights_dt"].groupby(e["flights_dt"].dep_time.dt.minute)["arr_delay"].mean(),
         dp=lambda e: e["flights_dt"].dp.groupby(e["flights_dt"].dep_time.dt.minute, keys=list(range(60)))[
             "arr_delay"].mean(bounds=DELAY, epsilon=SPEND), tol=0.05),
    Step("floor-week", 'flights_dt.dep_time.dt.to_period("W").value_counts()', DP,
         lambda e: e["flights_dt"].dep_time.dt.to_period("W").value_counts(),
         dp=lambda e: e["flights_dt"].dep_time.dt.to_period("W").dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("overnight", "flights_dt.assign(overnight=arr_time < dep_time, arr_time=arr_time.where(~overnight, "
         'arr_time + pd.Timedelta(days=1)))', UNCHANGED,
         lambda e: e["flights_dt"].assign(overnight=lambda d: d.arr_time < d.dep_time).assign(
             arr_time=lambda d: d.arr_time.where(~d.overnight, d.arr_time + pd.Timedelta(days=1))),
         store="flights_dt"),
    Step("duration", "(flights_dt.arr_time - flights_dt.dep_time).mean()", DP,
         lambda e: (e["flights_dt"].arr_time - e["flights_dt"].dep_time).clip(pd.Timedelta(0), pd.Timedelta("24h"))
         .mean(),
         dp=lambda e: (e["flights_dt"].arr_time - e["flights_dt"].dep_time).dp.mean(bounds=("0h", "24h"),
                                                                                     epsilon=SPEND), tol=60),
    Step("mean-departure", "flights_dt.dep_time.mean()", DP, lambda e: e["flights_dt"].dep_time.mean(),
         dp=lambda e: e["flights_dt"].dep_time.dp.mean(bounds=("2013-01-01", "2014-01-02"), epsilon=SPEND),
         tol=600),
    Step("time-hour-iso8601", 'pd.to_datetime(flights["time_hour"], format="ISO8601") (the first 3,000)', REFUSED,
         lambda e: _to_datetime(e["first"]["time_hour"], format="ISO8601"), match="utc=True"),
    Step("time-hour-iso8601-utc", 'pd.to_datetime(flights["time_hour"], format="ISO8601", utc=True)', UNCHANGED,
         lambda e: _to_datetime(e["first"]["time_hour"], format="ISO8601", utc=True)),
    Step("time-hour-hour-ny", 'pd.to_datetime(flights["time_hour"], format="ISO8601", utc=True)'
         '.dt.tz_convert("America/New_York").dt.hour.value_counts()', DP,
         lambda e: _to_datetime(e["first"]["time_hour"], format="ISO8601", utc=True)
         .dt.tz_convert("America/New_York").dt.hour.value_counts(),
         dp=lambda e: _to_datetime(e["first"]["time_hour"], format="ISO8601", utc=True)
         .dt.tz_convert("America/New_York").dt.hour.dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("astype-datetime", 'flights["time_hour"].astype("datetime64[ns, UTC]")', REFUSED,
         lambda e: e["flights"]["time_hour"].astype("datetime64[ns, UTC]"), match="dpframe.to_datetime"),
    Step("pd-to-datetime", 'pd.to_datetime(flights["time_hour"]) on a protected column', REFUSED,
         lambda e: pd.to_datetime(e["flights"]["time_hour"]), match="dpframe.to_datetime"),
)

PIPELINE = Pipeline("flights_dates", 'R for Data Science, ch. 16 "Dates and times"',
                    "https://r4ds.had.co.nz/dates-and-times.html (nycflights13)", load, ("flights", "first"), STEPS)
