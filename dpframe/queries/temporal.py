"""Dates and durations: queries run on seconds and answer in time.

A datetime column is measured in seconds since 1970-01-01 (UTC for columns
with a time zone), a timedelta column in seconds. The change of unit is
row-wise and public, so a query's sensitivity, bounds and noise are those of
the numeric query on seconds (the unit is a fixed scaling: one person still
changes the same rows). Bounds are given in the column's own terms --
timestamps (or anything ``pd.Timestamp`` reads, such as ``"2020-01-01"``) for
dates, durations (``pd.Timedelta``, ``"5h"``) for timedeltas -- and answers
come back as :class:`~dpframe.results.DPTimestamp` or
:class:`~dpframe.results.DPTimedelta`, quantiles and histogram bins as times.

Their :class:`~dpframe.results.Release` stays in seconds (since the epoch for
dates): ``release.std`` of a mean of dates is in seconds, and so are its bounds.

Automatic bounds (``bounds=None``) work, but on dates they are found to about
3% of the time since 1970 (a year and a half around 2020): give the period
the data covers whenever you know it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.protection.rowwise import time_unit
from dpframe.queries.plan import Target
from dpframe.results import (
    SHOWN_SECONDS,
    DPFloat,
    DPInt,
    DPTimedelta,
    DPTimestamp,
    Release,
    duration,
    with_release,
)

_EPOCH = pd.Timestamp("1970-01-01")
_SECOND = pd.Timedelta(seconds=1)
# How datetime64 and timedelta64 store times: integer ticks of their unit; a missing time as the lowest int64.
TICKS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
NAT_TICKS = np.iinfo(np.int64).min


def seconds_array(series: pd.Series[Any]) -> NDArray[np.float64]:
    """A datetime (seconds since the epoch, UTC for zoned columns) or timedelta column in seconds, NaT as NaN.

    Read from the stored integers in floating point: nothing here can overflow
    or raise, whatever the values, so no row can make a query fail before it is
    charged (pandas' own subtraction of the epoch raises on second-unit dates
    beyond the nanosecond range).

    >>> seconds_array(pd.Series(pd.to_datetime(["1970-01-02", None]))).tolist()
    [86400.0, nan]
    """
    ticks = np.asarray(series.array.view("i8"), dtype=np.int64)
    seconds = ticks.astype(np.float64) / TICKS_PER_SECOND[time_unit(series.dtype)]
    seconds[ticks == NAT_TICKS] = np.nan
    return seconds


@dataclass(frozen=True)
class TimeScale:
    """How a temporal column becomes seconds and back: ``kind`` ("datetime" or "timedelta") and its time zone.

    >>> scale = TimeScale.of(pd.Series(pd.to_datetime(["2020-01-01"])).dtype)
    >>> scale.seconds(pd.Series(pd.to_datetime(["1970-01-02", None]))).tolist()
    [86400.0, nan]
    >>> scale.point(86400.0), scale.bounds(("2020-01-01", pd.Timestamp("2021-01-01")))
    (Timestamp('1970-01-02 00:00:00'), (1577836800.0, 1609459200.0))
    """

    kind: Literal["datetime", "timedelta"]
    tz: Any = None

    @classmethod
    def of(cls, dtype: Any) -> TimeScale | None:
        """The scale of a datetime64 or timedelta64 dtype (with or without a zone); None for other dtypes."""
        if isinstance(dtype, pd.DatetimeTZDtype):
            return cls("datetime", dtype.tz)
        if pd.api.types.is_datetime64_dtype(dtype):
            return cls("datetime")
        if pd.api.types.is_timedelta64_dtype(dtype):
            return cls("timedelta")
        return None

    @property
    def unit(self) -> str:
        """What a number in seconds means for this column, for messages."""
        return "seconds since 1970-01-01" + (" UTC" if self.tz is not None else "") if self.kind == "datetime" \
            else "seconds"

    def seconds(self, series: pd.Series[Any]) -> pd.Series[Any]:
        """The column in seconds (float64; missing times become NaN), same index and name (:func:`seconds_array`)."""
        return pd.Series(seconds_array(series), index=series.index, name=series.name)

    def seconds_of(self, value: Any, what: str) -> float:
        if isinstance(value, (bool, np.bool_, int, float, np.integer, np.floating)):
            example = "pd.Timestamp('2020-01-01')" if self.kind == "datetime" else "pd.Timedelta('5h')"
            raise TypeError(f"{what} of a {self.kind} column must be a {self.kind} (e.g. {example}), "
                            f"got the number {value!r}")
        try:
            if self.kind == "datetime":
                stamp = pd.Timestamp(value)
                if stamp.tzinfo is not None:
                    stamp = stamp.tz_convert("UTC").tz_localize(None)
                elif self.tz is not None:
                    stamp = stamp.tz_localize(self.tz).tz_convert("UTC").tz_localize(None)
                return float((stamp - _EPOCH) / _SECOND)
            return float(pd.Timedelta(value) / _SECOND)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what} of a {self.kind} column could not be read as one: {value!r} ({exc})") from None

    def bounds(self, bounds: Any) -> tuple[float, float] | None:
        """Declared bounds in seconds (None stays None: automatic bounds); checked as numeric bounds afterwards."""
        if bounds is None:
            return None
        if isinstance(bounds, (str, bytes)) or not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
            raise TypeError(f"bounds must be a pair (lower, upper) of {self.kind}s, got {bounds!r}")
        return self.seconds_of(bounds[0], "the lower bound"), self.seconds_of(bounds[1], "the upper bound")

    def point(self, seconds: float) -> Any:
        """A number of seconds as a time of this column: a Timestamp or a Timedelta (NaT for NaN)."""
        if seconds != seconds:
            return pd.NaT
        if self.kind == "timedelta":
            return duration(seconds)
        return self.stamp(seconds)

    def stamp(self, seconds: float) -> pd.Timestamp:
        """Seconds since the epoch as a timestamp in this column's zone (a datetime column)."""
        stamp: pd.Timestamp = _EPOCH + duration(seconds)
        return stamp.tz_localize("UTC").tz_convert(self.tz) if self.tz is not None else stamp

    def points(self, seconds: NDArray[np.float64] | pd.Series[Any]) -> pd.Series[Any]:
        """Many seconds as times (a datetime64 or timedelta64 Series, with the index of ``seconds`` if a Series)."""
        index = seconds.index if isinstance(seconds, pd.Series) else None
        delta = pd.to_timedelta(np.clip(np.asarray(seconds, dtype=np.float64), -SHOWN_SECONDS, SHOWN_SECONDS), unit="s")
        if self.kind == "timedelta":
            return pd.Series(delta, index=index)
        stamps = pd.Series(_EPOCH + delta, index=index)
        return stamps.dt.tz_localize("UTC").dt.tz_convert(self.tz) if self.tz is not None else stamps

    def answer(self, released: Any, query: str) -> Any:
        """A numeric answer in seconds as an answer in time (a std is a duration, also for dates)."""
        if isinstance(released, (DPFloat, DPInt)):
            if self.kind == "timedelta" or query == "std":
                return DPTimedelta(float(released), released.release)
            return DPTimestamp(self.stamp(float(released)), released.release, self.tz)
        assert isinstance(released, pd.Series)
        release = released.attrs.get("dp")
        times = self.points(released)
        times.name = released.name
        return with_release(times, release) if isinstance(release, Release) else times


def in_seconds(target: Target) -> tuple[Target, TimeScale | None]:
    """A series target's temporal column as seconds (and its scale); other targets unchanged, with None."""
    series = target.series
    scale = TimeScale.of(series.dtype)
    if scale is None:
        return target, None
    return Target(scale.seconds(series), target.protection, target.sample), scale


def frame_in_seconds(target: Target) -> tuple[Target, dict[Any, TimeScale]]:
    """A frame target with each temporal column in seconds, and those columns' scales."""
    frame = target.obj
    assert isinstance(frame, pd.DataFrame)
    scales = {c: s for c in frame.columns if (s := TimeScale.of(frame[c].dtype)) is not None}
    if not scales:
        return target, scales
    converted = frame.copy(deep=False)
    for column, scale in scales.items():
        converted[column] = scale.seconds(frame[column])
    return Target(converted, target.protection, target.sample), scales


def refuse(scale: TimeScale, query: str, column: Any) -> None:
    """Queries with no meaning in time: a sum of dates, a variance (its unit is a squared duration)."""
    if query == "var":
        raise TypeError(f"var of {column!r} would be in squared {scale.unit}: ask for std, a duration")
    if query == "sum" and scale.kind == "datetime":
        raise TypeError(f"a sum of dates ({column!r}) has no meaning: ask for the mean, or sum durations "
                        "(e.g. p[column] - pd.Timestamp(...))")


def histogram_edges(scale: TimeScale, bins: Any, bounds: Any) -> tuple[Any, Any, pd.PeriodIndex | None]:
    """Histogram ``bins``/``bounds`` of a temporal column in seconds, and the periods labelling the bins (if any).

    ``bins`` may be a number (with ``bounds`` in time, or None), a sequence of
    times, or a frequency such as ``"MS"`` (month starts), ``"W"`` or ``"Y"``
    for dates -- then ``bounds`` are required and the bins are the periods
    they span -- or ``"1h"`` for durations.

    >>> scale = TimeScale("datetime")
    >>> edges, bounds, periods = histogram_edges(scale, "M", ("2020-01-15", "2020-03-01"))
    >>> [str(p) for p in periods], bounds is None, len(edges)
    (['2020-01', '2020-02', '2020-03'], True, 4)
    """
    if isinstance(bins, str):
        if bounds is None:
            raise ValueError(f"bins={bins!r} (a frequency) needs bounds=(first, last) to know which periods to count")
        lo, hi = scale.bounds(bounds)  # type: ignore[misc]
        if scale.kind == "timedelta":
            step = pd.Timedelta(bins) / _SECOND
            if not step > 0:
                raise ValueError(f"bins={bins!r} must be a positive duration")
            edges = np.arange(lo, hi + step, step)
            return edges[: max(2, int(np.searchsorted(edges, hi, side="left")) + 1)], None, None
        first, last = scale.stamp(lo), scale.stamp(hi)
        periods = _periods(first.tz_localize(None), last.tz_localize(None), bins)
        # The last bin includes its right edge: the last period's last instant.
        index = pd.DatetimeIndex([p.start_time for p in periods] + [periods[-1].end_time])
        if scale.tz is not None:
            index = index.tz_localize(scale.tz)
        return [scale.seconds_of(t, "a bin edge") for t in index], None, periods
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        return bins, scale.bounds(bounds), None
    if bounds is not None:
        raise ValueError("give either bin edges, or a number of bins with bounds=(first, last), not both")
    return [scale.seconds_of(t, "a bin edge") for t in bins], None, None


def _periods(first: pd.Timestamp, last: pd.Timestamp, freq: str) -> pd.PeriodIndex:
    """The periods from ``first`` to ``last``; start-anchored aliases ("MS", "YS", "QS") name the same periods."""
    for alias in dict.fromkeys([freq, freq[:-1] if len(freq) > 1 and freq.endswith("S") else freq]):
        try:
            return pd.period_range(first, last, freq=alias)
        except ValueError as exc:
            error = exc
    raise ValueError(f"bins={freq!r} is not a frequency pandas knows for periods ({error})") from None


def histogram_index(scale: TimeScale, counts: pd.Series[Any], periods: pd.PeriodIndex | None) -> pd.Series[Any]:
    """A histogram counted on seconds, indexed by periods, or by intervals of times."""
    release = counts.attrs.get("dp")
    index = counts.index
    assert isinstance(index, pd.IntervalIndex)
    if periods is not None:
        labels: pd.Index[Any] = periods.rename(index.name)
    else:
        left, right = scale.points(index.left.to_numpy()), scale.points(index.right.to_numpy())
        labels = pd.IntervalIndex.from_arrays(left, right, closed=index.closed, name=index.name)
    out = pd.Series(counts.to_numpy(), index=labels, name=counts.name)
    if isinstance(release, Release):
        def relabel(cells: Any) -> Any:
            return pd.Series(np.asarray(cells), index=labels) if isinstance(cells, pd.Series) else cells
        release = replace(release, std=relabel(release.std), lower=relabel(release.lower),
                          upper=relabel(release.upper))
        return with_release(out, release)  # type: ignore[no-any-return]
    return out

