"""A self-contained HTML report: the private describe table, histograms as inline SVG, and the ledger.

Everything shown is a released value (post-processing costs nothing); no
scripts, stylesheets or images are loaded from elsewhere.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from dpframe.results import current_release


def format_value(value: Any) -> str:
    """A cell as text: numbers to 6 significant digits, NaN as empty.

    >>> format_value(3.14159265), format_value(float("nan")), format_value(12), format_value("HS")
    ('3.14159', '', '12', 'HS')
    """
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def formatted(table: pd.DataFrame) -> pd.DataFrame:
    """The describe table with every cell as text (for printing).

    >>> formatted(pd.DataFrame({"x": [1.0 / 3, float("nan")]})).x.tolist()
    ['0.333333', '']
    """
    return pd.DataFrame({column: table[column].map(format_value) for column in table.columns}, index=table.index)


def _table(summary: pd.DataFrame) -> str:
    release = current_release(summary)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in summary.columns)
    body = []
    for row in summary.index:
        cells = []
        for column in summary.columns:
            text = html.escape(format_value(summary.loc[row, column]))
            if release is not None:
                lo, hi = cast(pd.DataFrame, release.lower).loc[row, column], cast(pd.DataFrame, release.upper).loc[row, column]
                if not (math.isnan(lo) or math.isnan(hi)):
                    text += f'<br><span class="ci">[{lo:.4g}, {hi:.4g}]</span>'
            cells.append(f"<td>{text}</td>")
        body.append(f"<tr><th>{html.escape(str(row))}</th>{''.join(cells)}</tr>")
    return f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def svg_histogram(hist: pd.Series[Any], *, width: int = 520, height: int = 220) -> str:
    """A noisy histogram as inline SVG bars with 95% error bars (from ``hist.attrs["dp"]``).

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1.0, 2.0] * 100}).dp.protect(epsilon=1.0)
    >>> svg = svg_histogram(p["x"].dp.histogram(bins=4, bounds=(0, 4), epsilon=0.5))
    >>> svg.startswith("<svg"), svg.count("<rect"), svg.count("<line") >= 4
    (True, 4, True)
    """
    release = current_release(hist)
    values = [float(v) for v in hist.to_numpy()]
    lower = [float(v) for v in np.asarray(release.lower, dtype=float)] if release is not None else values
    upper = [float(v) for v in np.asarray(release.upper, dtype=float)] if release is not None else values
    top = max([*upper, *values, 1.0])
    left, bottom, pad = 50, 30, 10
    plot_w, plot_h = width - left - pad, height - bottom - pad
    n = max(len(values), 1)
    bar = plot_w / n

    def y(v: float) -> float:
        return pad + plot_h * (1 - max(v, 0.0) / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="noisy histogram of {html.escape(str(hist.index.name))}">',
        f'<line x1="{left}" y1="{pad + plot_h}" x2="{left + plot_w}" y2="{pad + plot_h}" stroke="#333"/>',
        f'<text x="{left - 4}" y="{pad + 4}" text-anchor="end" font-size="10">{top:.4g}</text>',
        f'<text x="{left - 4}" y="{pad + plot_h}" text-anchor="end" font-size="10">0</text>',
    ]
    for i, (value, lo, hi) in enumerate(zip(values, lower, upper)):
        x = left + i * bar
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{y(value):.1f}" width="{max(bar - 2, 1):.1f}" '
            f'height="{pad + plot_h - y(value):.1f}" fill="#6a9fd4"><title>{value:.6g} [{lo:.6g}, {hi:.6g}]'
            "</title></rect>"
        )
        mid = x + bar / 2
        parts.append(f'<line x1="{mid:.1f}" y1="{y(lo):.1f}" x2="{mid:.1f}" y2="{y(hi):.1f}" stroke="#222"/>')
    edges = list(hist.index)
    if edges and isinstance(hist.index, pd.IntervalIndex):
        first, last = float(hist.index.left[0]), float(hist.index.right[-1])
        parts.append(f'<text x="{left}" y="{height - 8}" font-size="10">{first:.4g}</text>')
        parts.append(
            f'<text x="{left + plot_w}" y="{height - 8}" text-anchor="end" font-size="10">{last:.4g}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


_STYLE = (
    "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;font-size:13px}"
    ".ci{color:#777;font-size:11px}.note{color:#555;font-size:13px;max-width:60em}"
)


def render(
    title: str,
    summary: pd.DataFrame,
    ledger: pd.DataFrame,
    budget: str,
    histograms: Mapping[str, pd.Series[Any]] | None = None,
    notes: tuple[str, ...] = (),
) -> str:
    """The whole report as one HTML document (no external resources).

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1.0, 2.0] * 100}).dp.protect(epsilon=1.0)
    >>> d = p.dp.describe(epsilon=0.5, bounds={"x": (0, 3)})
    >>> page = render("demo", d, p.dp.budget.ledger, str(p.dp.budget))
    >>> page.startswith("<!DOCTYPE html>"), "describe" in page, "<svg" in page
    (True, True, False)
    """
    sections = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">{html.escape(budget)}</p>',
        "<h2>Private summary</h2>",
        _table(summary),
    ]
    release = current_release(summary)
    for note in (*(() if release is None else (release.note,)), *notes):
        sections.append(f'<p class="note">{html.escape(note)}</p>')
    if histograms:
        sections.append("<h2>Private histograms</h2>")
        for name, hist in histograms.items():
            sections.append(f"<h3>{html.escape(str(name))}</h3>{svg_histogram(hist)}")
    sections.append("<h2>Privacy ledger</h2>")
    shown = ledger.drop(columns=[c for c in ("time",) if c in ledger.columns])
    sections.append(shown.to_html(index=False, escape=True))
    sections.append("</body></html>")
    return "\n".join(sections) + "\n"
