"""Released cells as text, with the digits their noise justifies.

A noisy count of 30,061.3 with a noise std of 70 is shown as ``30,060 ± 140``,
not ``30061.3`` or ``3.006e+04``: the digits come from
:func:`dpframe.results.justified`, as in the repr of released numbers. Used by
the printed table of ``dpframe describe`` and by the HTML report
(:mod:`dpframe.report.html`); no optional dependency.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.results import current_release, is_unreliable, justified, shown_resolution, time_resolution

__all__ = ["Cell", "cell", "cells", "format_value", "formatted"]

# Durations are shown in the largest of these units that they span at least twice.
_DURATION_UNITS = (("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0))


@dataclass(frozen=True)
class Cell:
    """A released cell as text: its ``value``, its 95% ``interval`` (``"± 140"``, ``"-12 to 250"`` or ``""``
    when it has none) and whether the noise is as large as the value (``unreliable``)."""

    value: str
    interval: str = ""
    unreliable: bool = False


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


def cell(value: Any, std: float, lower: float, upper: float, *, grouping: bool = False) -> Cell:
    """One released value with its noise's ``std`` and 95% interval ``[lower, upper]`` (NaN: none) as text.

    Times (dates, durations) have their noise in seconds, as a describe release keeps it.

    >>> cell(30061.3, 70.0, 29924.1, 30198.5, grouping=True)
    Cell(value='30,061', interval='± 137', unreliable=False)
    >>> cell(30061.3, 700.0, 28689.3, 31433.3, grouping=True)
    Cell(value='30,060', interval='± 1,370', unreliable=False)
    >>> cell(0, 100.0, -230.0, 220.0)
    Cell(value='0', interval='-230 to 220', unreliable=True)
    >>> cell(41.5, float("nan"), float("nan"), float("nan")), cell("HS", float("nan"), float("nan"), float("nan"))
    (Cell(value='41.5', interval='', unreliable=False), Cell(value='HS', interval='', unreliable=False))
    >>> cell(pd.Timestamp("2021-05-15 13:47:12"), 86400.0 * 3, 0.0, 86400.0 * 12)
    Cell(value='2021-05-16', interval='± 6.0 days', unreliable=False)
    """
    noisy = math.isfinite(std) and std > 0 and math.isfinite(lower) and math.isfinite(upper)
    resolution = shown_resolution(std, lower, upper) if noisy else math.nan
    if isinstance(value, pd.Timestamp) and value is not pd.NaT:
        unit = time_resolution(std) if noisy else None
        rounded = value.round(unit or "s")
        shown = rounded.strftime("%Y-%m-%d") if unit == "D" else str(rounded)  # to the day: no 00:00:00
        return Cell(shown, f"± {_duration((upper - lower) / 2, resolution, grouping)}" if noisy else "")
    if isinstance(value, pd.Timedelta) and value is not pd.NaT:
        seconds = value.total_seconds()
        interval = f"{_duration(lower, resolution, grouping)} to {_duration(upper, resolution, grouping)}"
        return Cell(_duration(seconds, resolution, grouping), interval if noisy else "")
    if not noisy or isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return Cell(format_value(value, grouping=grouping))
    number: float = int(value) if isinstance(value, numbers.Integral) else float(value)
    below, above = (justified(reach, resolution, grouping=grouping) for reach in (number - lower, upper - number))
    ends = (justified(end, resolution, grouping=grouping) for end in (lower, upper))
    interval = f"± {above}" if below == above else " to ".join(ends)
    return Cell(justified(number, resolution, grouping=grouping), interval, is_unreliable(number, lower, upper))


def cells(table: pd.DataFrame, *, grouping: bool = False) -> pd.DataFrame:
    """Every cell of a released table as a :class:`Cell`, with the noise its release records.

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
    values = table.to_numpy(dtype=object)
    nan = np.full(values.shape, math.nan)
    std, lower, upper = (nan, nan, nan) if release is None else (
        pd.DataFrame(part, index=table.index, columns=table.columns).to_numpy(dtype=float)  # scalars: everywhere
        for part in (release.std, release.lower, release.upper)
    )
    flagged = ({column: {row.strip() for row in str(table.loc["unreliable", column]).split(",")}
                for column in table.columns} if "unreliable" in table.index else {})
    rows = []
    for i, row in enumerate(table.index):
        shown = [cell(values[i, j], std[i, j], lower[i, j], upper[i, j], grouping=grouping)
                 for j in range(len(table.columns))]
        rows.append([Cell(c.value, c.interval, True) if str(row) in flagged.get(column, ()) else c
                     for c, column in zip(shown, table.columns)])
    return pd.DataFrame(rows, index=table.index, columns=table.columns, dtype=object)


def formatted(table: pd.DataFrame) -> pd.DataFrame:
    """The describe table with every cell as text, digits to the noise (for printing).

    >>> formatted(pd.DataFrame({"x": [1.0 / 3, float("nan")]})).x.tolist()
    ['0.333333', '']
    """
    return cells(table).map(lambda shown: shown.value)
