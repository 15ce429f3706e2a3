"""Released tables as a terminal or a notebook shows them: every cell with its interval, and marks.

The text (``repr``, ``str``) and the HTML (``_repr_html_``) of :class:`~dpframe.results.DPSeries` and
:class:`~dpframe.results.DPFrame` -- the tables that group-by, histogram, value_counts, crosstab, pivot_table,
describe and the other queries release -- while their release describes their values
(:func:`~dpframe.results.current_release`); once the values change, they show as pandas shows them. Each cell is
a :class:`~dpframe.report.cells.Cell`: the digits its noise justifies, ``± half-width`` of its 95% interval
(``(lower to upper)`` where it is not symmetric: cut at the range the value can take), then its marks
(:data:`MARKS`):

* ``?`` -- UNRELIABLE: the noise is as large as the value, or its interval spans half the range the value
  can take or more (:func:`~dpframe.results.is_unreliable`);
* ``!`` -- UNRELIABLE, at the bound: the noise took the value to an end of the range it can take, where it
  was clamped (:func:`~dpframe.results.at_bound`): a mean at its bound, a variance or std at 0, a
  correlation at ±1, a proportion or a count at 0.
* ``?`` also marks a statistic on automatic bounds found on too few rows (``Release.weak_bounds``): a bound may
  lie past the data, and the value with it, though its interval is narrow; the footer then says so.

Below the table: what the intervals are and what made them, the marks that appear, and the release's note (how
categories were selected, why cells are missing or ``<NA>``), with a word when the table is empty. Everything
shown is read from the release -- released values and public parameters -- and formatted only when displayed,
for the rows pandas shows.

>>> import pandas as pd, dpframe
>>> from dpframe.testing import seeded_noise
>>> p = pd.DataFrame({"x": [1.0, 2.0] * 50}).dp.protect(epsilon=1.0)
>>> with seeded_noise(0):
...     h = p["x"].dp.histogram(bins=[0, 1.5, 3, 4.5], epsilon=0.5)
>>> h
x
[0.0, 1.5)    53 ± 6
[1.5, 3.0)    49 ± 6
[3.0, 4.5)     4 ± 6 ?
Name: count, dtype: int64
95% intervals of the noise: ± half-width; discrete Laplace, ε=0.5, δ=0
? UNRELIABLE: the noise is as large as the value or half the range it can take
Note: last bin includes its right edge
"""

from __future__ import annotations

import html as markup
import textwrap
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.queries.temporal import TimeScale
from dpframe.report.cells import Cell, cells, format_value
from dpframe.results import WEAK_BOUNDS, Release, current_release, rank_interval_text

__all__ = ["MARKS", "html", "text"]

# A cell's marks, and what each means (below a table that shows it).
MARKS = {
    "?": "UNRELIABLE: the noise is as large as the value or half the range it can take",
    "!": "UNRELIABLE, at the bound: the noise took it to an end of its range, where it was clamped",
}


def _rows(n: int) -> NDArray[np.intp]:
    """The positions of the rows pandas shows of ``n``: all, or (beyond ``display.max_rows``) the first and last
    ``display.min_rows`` -- and one more at each end, which costs nothing and keeps the cut where pandas puts it."""
    limit = pd.get_option("display.max_rows")
    if not limit or n <= limit:
        return np.arange(n, dtype=np.intp)
    edge = min(pd.get_option("display.min_rows") or limit, limit) // 2 + 1
    return np.concatenate([np.arange(edge), np.arange(n - edge, n)]).astype(np.intp)


def _value(value: Any, shown: Cell) -> str:
    """A cell's value as text; a missing one as pandas writes it (``format_value`` leaves it blank)."""
    if shown.value or not pd.api.types.is_scalar(value) or not pd.isna(value):
        return shown.value
    return "NaT" if value is pd.NaT else "NaN"


def _texts(obj: pd.Series[Any] | pd.DataFrame) -> tuple[NDArray[Any], set[str]]:
    """Every shown cell of ``obj`` as text, aligned per column on the ``±``, and what they hold: the marks used
    (``"?"`` only for the noise), ``"weak bounds"`` if a cell rests on automatic bounds from too few rows, ``"±"``
    if a cell has an interval and ``"to"`` if one was cut at its range. Rows pandas does not show stay blank."""
    frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
    rows = _rows(len(frame.index))
    shown = cells(obj, rows=rows).to_numpy(dtype=object)
    raw = frame.iloc[rows].to_numpy(dtype=object)
    texts = np.full(frame.shape, "", dtype=object)
    used: set[str] = set()
    for j in range(frame.shape[1]):
        parts = []
        for i in range(len(rows)):
            c: Cell = shown[i, j]
            marks = ("?" if c.unreliable or c.weak_bounds else "") + ("!" if c.at_bound else "")
            used.update(mark for mark, shown_for in (("?", c.unreliable), ("!", c.at_bound), ("weak bounds", c.weak_bounds))
                        if shown_for)
            used.update(("±",) if c.interval else ())
            used.update(("to",) if " to " in c.interval else ())
            interval = c.interval if c.interval.startswith("±") or not c.interval else f"({c.interval})"
            parts.append((_value(raw[i, j], c), interval, marks))
        widths = [max((len(part[k]) for part in parts), default=0) for k in range(3)]
        for i, (value, interval, marks) in zip(rows, parts):
            texts[i, j] = "".join([value.rjust(widths[0]), *(" " + text.ljust(width) for text, width in
                                                              ((interval, widths[1]), (marks, widths[2])) if width)])
    return texts, used


def _bound(obj: pd.Series[Any] | pd.DataFrame, seconds_or_value: float) -> str:
    """A clipping bound as the table's values are written: a time for a Series of times (the release is in
    seconds, :mod:`dpframe.queries.temporal`), else a number."""
    scale = TimeScale.of(obj.dtype) if isinstance(obj, pd.Series) else None
    return format_value(seconds_or_value if scale is None else scale.point(seconds_or_value))


def _footer(obj: pd.Series[Any] | pd.DataFrame, release: Release, used: set[str]) -> list[str]:
    """What is below a released table: its intervals, the marks used (``used``, from :func:`_texts`), the note,
    and why it is empty."""
    cost = release.cost.describe("zcdp" if release.cost.rho else "approx")
    if "±" in used:
        bounds = "" if release.bounds is None else \
            f"; bounds [{_bound(obj, release.bounds[0])}, {_bound(obj, release.bounds[1])}]"
        ends = ", or (lower to upper) where it is not symmetric" if "to" in used else ""
        lines = [f"{release.level:.0%} intervals of the noise: ± half-width{ends}{bounds}; "
                 f"{release.mechanism}, {cost}"]
    else:
        ranks = rank_interval_text(release)  # a quantile's interval is in ranks
        lines = [f"{'no intervals' if ranks is None else ranks}; {release.mechanism}, {cost}"]
    lines += [f"{mark} {meaning}" for mark, meaning in MARKS.items() if mark in used]
    if "weak bounds" in used:
        lines.append(f"? UNRELIABLE, {WEAK_BOUNDS}")
    if release.note:
        lines.append(f"Note: {release.note}")
    if obj.size == 0:
        lines.append("Empty: nothing was released -- no group, category or range cleared its selection's threshold "
                     "(or none was asked for)")
    return lines


def text(obj: pd.Series[Any] | pd.DataFrame) -> str:
    """``obj`` as text: pandas' layout of its cells with their intervals and marks, then :func:`_footer`'s lines
    (wrapped to ``display.width``); pandas' own text when no release describes it."""
    release = current_release(obj)
    if release is None:
        return pd.Series.__repr__(obj) if isinstance(obj, pd.Series) else pd.DataFrame.__repr__(obj)
    texts, used = _texts(obj)
    if isinstance(obj, pd.Series):
        table = repr(pd.Series(texts[:, 0], index=obj.index, name=obj.name, dtype=object))
        head, _, tail = table.rpartition("dtype: object")  # the values' dtype, not the text's
        table = f"{head}dtype: {obj.dtype}{tail}"
    else:
        table = repr(pd.DataFrame(texts, index=obj.index, columns=obj.columns))
    table = "\n".join(line.rstrip() for line in table.splitlines())  # cells are padded to align their ±
    width = pd.get_option("display.width") or 80
    footer = [textwrap.fill(line, width, subsequent_indent="  ") for line in _footer(obj, release, used)]
    return "\n".join([table, *footer])


def _pandas_html(frame: pd.DataFrame) -> str | None:
    """pandas' own HTML of ``frame`` (a notebook's), or None when ``display.notebook_repr_html`` is off."""
    shown: str | None = pd.DataFrame._repr_html_(frame)  # type: ignore[attr-defined]  # not in pandas-stubs
    return shown


def html(obj: pd.Series[Any] | pd.DataFrame) -> str | None:
    """``obj`` as HTML (a notebook's view): pandas' table of its cells with their intervals and marks, then
    :func:`_footer`'s lines; pandas' own when no release describes it (None: the text, as for a Series)."""
    release = current_release(obj)
    if release is None:
        return _pandas_html(obj) if isinstance(obj, pd.DataFrame) else None
    texts, used = _texts(obj)
    frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
    table = _pandas_html(pd.DataFrame(texts, index=frame.index, columns=frame.columns))
    if table is None:  # display.notebook_repr_html is off
        return None
    footer = "".join(f'<p style="margin: 0.2em 0; font-size: smaller">{markup.escape(line)}</p>'
                     for line in _footer(obj, release, used))
    return f'<div class="dpframe-release">{table}{footer}</div>'
