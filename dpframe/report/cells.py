"""Released cells as text, with the digits their noise justifies.

A noisy count of 30,061.3 with a noise std of 70 is shown as ``30,060 ± 140``,
not ``30061.3`` or ``3.006e+04``: the digits come from
:func:`dpframe.results.justified`, as in the repr of released numbers. Used by
the printed table of ``dpframe describe``, by the HTML report
(:mod:`dpframe.report.html`) and by released tables as they are shown
(:mod:`dpframe.report.tables`); no optional dependency.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.results import (
    aligned, at_bound, current_release, is_unreliable, justified, shown_resolution, time_resolution,
)

__all__ = ["Cell", "cell", "cells", "format_value", "formatted"]

# Durations are shown in the largest of these units that they span at least twice.
_DURATION_UNITS = (("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0))


@dataclass(frozen=True)
class Cell:
    """A released cell as text: its ``value``, its 95% ``interval`` (``"± 140"``, ``"-12 to 250"`` or ``""``
    when it has none), whether the noise is as large as the value or its range (``unreliable``,
    :func:`~dpframe.results.is_unreliable`), whether it was clamped to an end of its range (``at_bound``,
    :func:`~dpframe.results.at_bound`) and whether it rests on automatic bounds found on too few rows
    (``weak_bounds``, ``Release.weak_bounds``)."""

    value: str
    interval: str = ""
    unreliable: bool = False
    at_bound: bool = False
    weak_bounds: bool = False


def format_value(value: Any, *, grouping: bool = False) -> str:
    """A value with no noise to go by (a bound, a percentile, a label): numbers to 6 significant digits,
    without an exponent for ordinary magnitudes; NaN as empty.

    >>> format_value(3.14159265), format_value(float("nan")), format_value(12), format_value("HS")
    ('3.14159', '', '12', 'HS')
    >>> format_value(385024.0, grouping=True), format_value(26571.4285, grouping=True), format_value(1.5e-9)
    ('385,024', '26,571.4', '1.5e-09')
    >>> format_value(pd.Timestamp("2020-06-01")), format_value(pd.Timestamp("2020-06-01 11:02:27"))
    ('2020-06-01', '2020-06-01 11:02:27')
    """
    if isinstance(value, pd.Timestamp) and value is not pd.NaT and value == value.normalize():
        return value.strftime("%Y-%m-%d")  # a date (e.g. a declared bound): no 00:00:00
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return "" if value is pd.NaT else str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):{',' if grouping else ''}}"
    number = float(value)
    if math.isnan(number):
        return ""
    if number == 0 or not 1e-4 <= abs(number) < 1e15:
        return f"{number:.6g}"
    # Six significant digits: the digits a noise of a millionth of the value would justify.
    return justified(number, 10.0 ** (math.floor(math.log10(abs(number))) - 4), grouping=grouping, trim=True)


def _duration(seconds: float, resolution: float, grouping: bool) -> str:
    """A duration in seconds as ``"3.5 days"``, ``"40 min"``: digits to ``resolution`` (seconds).

    >>> _duration(302400.0, 8000.0, False), _duration(90.0, float("nan"), False)
    ('3.500 days', '90.0 s')
    """
    name, size = next((n, s) for n, s in _DURATION_UNITS if abs(seconds) >= 2 * s or s == 1.0)
    return f"{justified(seconds / size, resolution / size, grouping=grouping)} {name}"


def cell(value: Any, std: float, lower: float, upper: float, *, clamp: tuple[float, float] | None = None,
         grouping: bool = False) -> Cell:
    """One released value with its noise's ``std``, 95% interval ``[lower, upper]`` and the range ``clamp`` it was
    clamped to (NaN, None: none) as text.

    Times (dates, durations) have their noise in seconds, as a describe release keeps it.

    >>> cell(30061.3, 70.0, 29924.1, 30198.5, grouping=True)
    Cell(value='30,061', interval='± 137', unreliable=False, at_bound=False, weak_bounds=False)
    >>> cell(30061.3, 700.0, 28689.3, 31433.3, grouping=True)
    Cell(value='30,060', interval='± 1,370', unreliable=False, at_bound=False, weak_bounds=False)
    >>> cell(0, 100.0, -230.0, 220.0)
    Cell(value='0', interval='-230 to 220', unreliable=True, at_bound=False, weak_bounds=False)
    >>> cell(41.5, float("nan"), float("nan"), float("nan"))
    Cell(value='41.5', interval='', unreliable=False, at_bound=False, weak_bounds=False)
    >>> cell("HS", float("nan"), float("nan"), float("nan"))
    Cell(value='HS', interval='', unreliable=False, at_bound=False, weak_bounds=False)
    >>> t = pd.Timestamp("2021-05-15 13:47:12")
    >>> cell(t, 86400.0 * 3, t.value / 1e9 - 86400.0 * 6, t.value / 1e9 + 86400.0 * 6)
    Cell(value='2021-05-16', interval='± 6.0 days', unreliable=False, at_bound=False, weak_bounds=False)
    >>> cell(100.0, 0.3, 99.4, 100.0, clamp=(0.0, 100.0))  # a mean clamped to its upper bound
    Cell(value='100.00', interval='99.40 to 100.00', unreliable=False, at_bound=True, weak_bounds=False)
    """
    noisy = math.isfinite(std) and std > 0 and math.isfinite(lower) and math.isfinite(upper)
    resolution = shown_resolution(std, lower, upper) if noisy else math.nan
    if isinstance(value, (pd.Timestamp, pd.Timedelta)) and value is not pd.NaT:
        seconds = value.value / 1e9  # in the release's units: nanoseconds since 1970-01-01 UTC, or of the duration
        marks = is_unreliable(seconds, lower, upper, clamp), at_bound(seconds, clamp)
        if isinstance(value, pd.Timestamp):
            unit = time_resolution(std) if noisy else None
            rounded = value.round(unit or "s")
            shown = rounded.strftime("%Y-%m-%d") if unit == "D" else str(rounded)  # to the day: no 00:00:00
            return Cell(shown, f"± {_duration((upper - lower) / 2, resolution, grouping)}" if noisy else "", *marks)
        interval = f"{_duration(lower, resolution, grouping)} to {_duration(upper, resolution, grouping)}"
        return Cell(_duration(seconds, resolution, grouping), interval if noisy else "", *marks)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return Cell(format_value(value, grouping=grouping))
    number: float = int(value) if isinstance(value, numbers.Integral) else float(value)
    marks = is_unreliable(number, lower, upper, clamp), at_bound(number, clamp)
    if not noisy:
        return Cell(format_value(value, grouping=grouping), "", *marks)

    def written(x: float) -> str:  # a count's whole interval in whole numbers, as the count
        return justified(int(x) if isinstance(number, int) and x.is_integer() else x, resolution, grouping=grouping)

    below, above = written(number - lower), written(upper - number)
    ends = (written(end) for end in (lower, upper))
    interval = f"± {above}" if below == above else " to ".join(ends)
    return Cell(justified(number, resolution, grouping=grouping), interval, *marks)


def cells(table: pd.DataFrame | pd.Series[Any], *, grouping: bool = False,
          rows: NDArray[np.intp] | None = None) -> pd.DataFrame:
    """Every cell of a released table (a Series: one column) as a :class:`Cell`, with the noise and the clamp its
    release records; ``rows``: only the rows at these positions (those a display shows).

    A describe table's ``unreliable`` row also marks the statistics it names
    (e.g. percentiles resting on an unreliable count), which have no interval.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"x": [1.0, 2.0] * 5000}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     c = cells(p.dp.describe(epsilon=0.5, bounds={"x": (0, 3)}))
    >>> c.loc["count", "x"].value, c.loc["count", "x"].interval, c.loc["mean", "x"].interval
    ('9999', '± 36', '± 0.0054')
    """
    release = current_release(table)
    frame = table.to_frame() if isinstance(table, pd.Series) else table
    rows = np.arange(len(frame.index)) if rows is None else rows
    values = frame.iloc[rows].to_numpy(dtype=object)
    nan = np.full(values.shape, math.nan)

    def shown(part: Any) -> NDArray[np.float64]:
        return aligned(part, table)[rows]

    std, lower, upper = (nan, nan, nan) if release is None else map(shown, (release.std, release.lower, release.upper))
    # A missing cell (a group the bounds' noise swamped) has no value to mark.
    weak = np.zeros(values.shape, dtype=bool) if release is None else shown(release.weak_bounds) > 0
    weak &= ~np.vectorize(lambda value: pd.api.types.is_scalar(value) and pd.isna(value), otypes=[bool])(values)
    clamp = None if release is None else release.clamp
    low, high = (nan, nan) if clamp is None else map(shown, clamp)
    flagged = ({column: {row.strip() for row in str(frame.loc["unreliable", column]).split(",")}
                for column in frame.columns} if "unreliable" in frame.index else {})
    grid = []
    for i, row in enumerate(frame.index[rows]):
        line = [replace(cell(values[i, j], std[i, j], lower[i, j], upper[i, j], grouping=grouping,
                             clamp=None if clamp is None else (low[i, j], high[i, j])), weak_bounds=bool(weak[i, j]))
                for j in range(len(frame.columns))]
        # A statistic the unreliable row names for its bounds alone is marked for them, not for its noise.
        grid.append([replace(c, unreliable=True) if str(row) in flagged.get(column, ()) and not c.weak_bounds else c
                     for c, column in zip(line, frame.columns)])
    return pd.DataFrame(grid, index=frame.index[rows], columns=frame.columns, dtype=object)


def formatted(table: pd.DataFrame) -> pd.DataFrame:
    """The describe table with every cell as text, digits to the noise (for printing).

    >>> formatted(pd.DataFrame({"x": [1.0 / 3, float("nan")]})).x.tolist()
    ['0.333333', '']
    """
    return cells(table).map(lambda shown: shown.value)
