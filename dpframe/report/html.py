"""A self-contained HTML report of released values: the private summary, figures and the budget spent.

Jinja2 templates (``dpframe/report/templates``, autoescaped) lay the page out,
pandas' ``Styler`` draws the tables and matplotlib the figures, as inline SVG
drawn on a ``Figure`` of their own (pyplot and its global state are never
touched). Every number is a released value -- reading it is post-processing
and costs nothing -- shown with the digits its noise justifies
(:mod:`dpframe.report.cells`). The page loads nothing from elsewhere: no
scripts, stylesheets, fonts or images.

Needs the ``report`` extra (Jinja2 and matplotlib): ``pip install "dpframe[report]"``,
from a source checkout ``pip install -e ".[report]"``, or ``pip install jinja2 matplotlib``.

>>> import pandas as pd, dpframe
>>> p = pd.DataFrame({"age": [25, 35, 45] * 300}).dp.protect(epsilon=1.0)
>>> summary = p.dp.describe(epsilon=0.5, bounds={"age": (0, 100)})
>>> ages = p["age"].dp.histogram(bins=10, bounds=(0, 100), epsilon=0.5)
>>> page = render("Ages", summary, p.dp.budget, {"age": ages})
>>> page.startswith("<!DOCTYPE html>"), "<svg" in page, "Privacy ledger" in page
(True, True, True)
"""

from __future__ import annotations

import datetime
import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpframe import __version__
from dpframe.plotting import plot_release
from dpframe.report import INSTALL_HINT
from dpframe.report.cells import Cell, cells, format_value
from dpframe.results import WEAK_BOUNDS, current_release, is_other

try:
    import jinja2
    import matplotlib
    from markupsafe import Markup
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter
    from pandas.io.formats.style import Styler
except ImportError as error:  # the report extra is not installed
    raise ImportError(f"the HTML report needs jinja2 and matplotlib: {INSTALL_HINT}") from error

if TYPE_CHECKING:
    from dpframe.accounting.budget import Budget

__all__ = ["figure_svg", "ledger_table", "render", "summary_table"]

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("dpframe.report", "templates"),
    autoescape=True,  # every value, column name and note is escaped; only our own tables and SVG are Markup
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

# Ledger cells longer than this are cut at a word, the whole text in their tooltip.
LONG_CELL = 60
_GREEK = {"epsilon": "ε", "delta": "δ", "rho": "ρ"}
_BAR, _ERROR = "#4c78a8", "#1f2937"
# The figures' look, set for each figure only (matplotlib.rc_context): text stays text in the SVG
# (selectable, small, escaped by matplotlib), and a fixed hash salt keeps the SVG's ids reproducible.
_FIGURE_STYLE: dict[Any, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "dpframe-report",
    "font.size": 9.0,
    "axes.labelsize": 10.0,
    "axes.labelcolor": "#374151",
    "axes.edgecolor": "#9ca3af",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "axes.axisbelow": True,
    "grid.color": "#e5e7eb",
    "xtick.color": "#4b5563",
    "ytick.color": "#4b5563",
    "hatch.color": "#ffffff",
}


def _amount(value: Any) -> str:
    """A privacy amount (ε, δ, ρ) to 4 significant digits."""
    return f"{float(value):.4g}"


def _clauses(note: str) -> list[str]:
    """A release note split at its top-level semicolons, each clause capitalised (a list reads faster).

    >>> _clauses("bounds (declared: none; chosen: ['x']) used; intervals are 95%")
    ["Bounds (declared: none; chosen: ['x']) used", 'Intervals are 95%']
    """
    clauses, depth, start = [], 0, 0
    for i, char in enumerate(note):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if char == ";" and depth == 0:
            clauses.append(note[start:i])
            start = i + 1
    clauses.append(note[start:])
    return [c.strip()[:1].upper() + c.strip()[1:] for c in clauses if c.strip()]


def _cell_html(shown: Cell) -> Markup:
    parts = [Markup('<span class="value">{}</span>').format(shown.value)]
    if shown.interval:
        parts.append(Markup('<span class="interval" title="95% interval of the noise">{}</span>')
                     .format(shown.interval))
    if shown.unreliable:
        parts.append(Markup('<span class="flag" title="the noise is as large as the value: read it as noise">'
                            "unreliable</span>"))
    if shown.at_bound:
        parts.append(Markup('<span class="flag" title="the noise took it to an end of its range, where it was '
                            'clamped">at the bound</span>'))
    if shown.weak_bounds:
        parts.append(Markup('<span class="flag" title="{}">unreliable: bounds</span>').format(WEAK_BOUNDS))
    return Markup("").join(parts)


def _styled(frame: pd.DataFrame, name: str, *, index: bool) -> Styler:
    """A Styler with escaped labels and the report's table class; ``index=False`` hides the row labels."""
    styler = Styler(frame, uuid=name, cell_ids=False, table_attributes=f'class="data {name}"')
    styler.format_index(escape="html", axis=1)
    if index:
        styler.format_index(escape="html", axis=0)
    else:
        styler.hide(axis="index")
    return styler


def summary_table(summary: pd.DataFrame) -> Markup:
    """The describe table: each value to the digits its noise justifies, its 95% interval below it,
    and a flag on the statistics whose noise is as large as their value.

    >>> import pandas as pd
    >>> html = summary_table(pd.DataFrame({"<b>": [1.5]}, index=["mean"]))
    >>> "&lt;b&gt;" in html and "<b>" not in html
    True
    """
    shown = cells(summary, grouping=True)
    # The unreliable row says "none" rather than stay blank, as if it did not apply.
    grid: list[list[Cell]] = [
        [Cell("none") if row == "unreliable" and not c.value else c for c in shown.loc[row]]
        for row in shown.index
    ]
    shown = pd.DataFrame(grid, index=shown.index, columns=shown.columns, dtype=object)
    classes = pd.DataFrame(
        [[" ".join(filter(None, ("bound" if "bound" in str(row) else "", "unreliable" if c.unreliable or c.weak_bounds else "",
                                 "none" if row == "unreliable" and c.value == "none" else "")))
          for c in line] for row, line in zip(shown.index, grid)],
        index=shown.index, columns=shown.columns,
    )
    styler = _styled(shown.map(_cell_html), "summary", index=True)
    styler.set_td_classes(classes)
    return Markup(styler.to_html())


def _hidden_columns(ledger: pd.DataFrame) -> list[str]:
    """The ledger's columns that say nothing here: zero, False or empty on every line (e.g. ρ on an ε budget)."""
    if ledger.empty:
        return []
    quiet = []
    for column in ledger.columns:
        values = ledger[column]
        if pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
            if not values.fillna(0).astype(bool).any():
                quiet.append(str(column))
        elif pd.api.types.is_string_dtype(values.dtype) and not values.fillna("").astype(str).str.strip().any():
            quiet.append(str(column))
    return quiet


def _long_text(value: Any) -> Markup:
    """Ledger text cut at a word after :data:`LONG_CELL` characters, the whole text in the tooltip."""
    text = str(value)
    if len(text) <= LONG_CELL:
        return Markup("{}").format(text)
    cut = text[:LONG_CELL].rsplit(" ", 1)[0].rstrip(";,")
    return Markup('<span class="cut" title="{}">{}…</span>').format(text, cut)


def ledger_table(ledger: pd.DataFrame) -> Markup:
    """The ledger, one line per measurement: always-zero columns hidden, long texts cut with a tooltip.

    >>> import dpframe, pandas as pd
    >>> p = pd.DataFrame({"x": range(100)}).dp.protect(epsilon=1.0)
    >>> _ = p.dp.count(epsilon=0.5)
    >>> html = ledger_table(p.dp.budget.ledger)
    >>> "ε" in html, ">ρ<" in html, ">seeded<" in html
    (True, False, False)
    """
    hidden = _hidden_columns(ledger)
    shown = ledger.drop(columns=hidden).rename(columns=_GREEK)
    formats: dict[Any, Any] = {column: _amount for column in _GREEK.values() if column in shown.columns}
    if "time" in shown.columns:
        formats["time"] = lambda t: t.strftime("%Y-%m-%d %H:%M:%S")
    texts = [c for c in shown.columns if pd.api.types.is_string_dtype(shown[c].dtype) and c not in formats]
    formats.update({column: _long_text for column in texts})
    styler = _styled(shown, "ledger", index=False)
    styler.format(formats)
    numbers = [c for c in formats if c not in texts]
    if numbers:  # times and amounts on one line; amounts aligned on the right
        styler.set_properties(subset=numbers, **{"white-space": "nowrap"})
        styler.set_properties(subset=[c for c in numbers if c != "time"], **{"text-align": "right"})
    return Markup(styler.to_html())


def _costs_table(ledger: pd.DataFrame, budget: Budget) -> Markup:
    """What each query cost, added over its ledger lines, and its share of the whole budget as a bar."""
    main = "rho" if budget.kind == "zcdp" else "epsilon"
    amounts = [c for c in ("epsilon", "delta", "rho") if c in ledger.columns and ledger[c].any()] or [main]
    by_query = ledger.groupby("query", sort=False).agg(lines=("query", "size"), **{c: (c, "sum") for c in amounts})
    total = float(getattr(budget.total, main))
    share = f"share of total {_GREEK[main]}"
    by_query[share] = by_query[main] / total if total else 0.0
    frame = by_query.reset_index().rename(columns=_GREEK)
    styler = _styled(frame, "costs", index=False)
    styler.format({**{_GREEK[c]: _amount for c in amounts}, share: "{:.1%}".format, "query": _long_text})
    styler.bar(subset=[share], vmin=0.0, vmax=1.0, color="#bfdbfe", height=70, width=100)
    return Markup(styler.to_html())


def figure_svg(result: pd.Series[Any], *, label: str | None = None, size: tuple[float, float] = (6.2, 3.1)) -> str:
    """A released histogram or value counts as an inline SVG bar chart (:func:`~dpframe.plotting.plot_release`).

    Axes titled by the column (``label`` when the index has no name) and
    "count", counts with thousands separators, 95% intervals as error bars;
    open-ended bins and the "other (not released)" entry hatched. Drawn on a
    Figure of its own with its style set only while it is drawn.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"income": [30_000.0, 60_000.0] * 500}).dp.protect(epsilon=1.0)
    >>> svg = figure_svg(p["income"].dp.histogram(bins=4, bounds=(0, 100_000), epsilon=0.5))
    >>> svg.startswith("<svg"), ">income</text>" in svg, ">count</text>" in svg, "[25000, 50000)" in svg
    (True, True, True, True)
    """
    with matplotlib.rc_context(_FIGURE_STYLE):
        figure = Figure(figsize=size, layout="constrained")
        ax = figure.subplots()
        plot_release(result, ax=ax, color=_BAR, ecolor=_ERROR, error_kw={"elinewidth": 1.0})
        ax.set_title("")  # the page's heading names the figure
        if not ax.get_xlabel() and label is not None:
            ax.set_xlabel(label.replace("$", r"\$"))
        ax.set_ylabel(ax.get_ylabel() or "count")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: format_value(y, grouping=True)))
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]  # inline: without the XML declaration and doctype


def _figure(name: str, result: pd.Series[Any]) -> dict[str, Any]:
    release = current_release(result)
    facts, notes = "", []
    if release is not None:
        cost = ", ".join(f"{_GREEK[n]}={_amount(getattr(release.cost, n))}" for n in _GREEK
                         if getattr(release.cost, n))
        facts = f"{release.mechanism}, {cost}; error bars: {release.level:.0%} intervals of the noise"
        notes = _clauses(release.note)
    index = result.index
    if isinstance(index, pd.IntervalIndex) and len(index):
        first, last = index.left[0], index.right[-1]
        if not any(isinstance(edge, float) and math.isinf(edge) for edge in (first, last)):
            notes.append(f"Values below {format_value(first, grouping=True)} or above "
                         f"{format_value(last, grouping=True)} are not counted")
        else:
            notes.append("Hatched bars: the open-ended bins, which count the values beyond the bounds")
    elif any(is_other(key) for key in index):
        notes.append("Hatched bar: the categories that were not released, counted together")
    return {"name": name, "svg": Markup(figure_svg(result, label=name)), "facts": facts, "notes": notes}


def render(
    title: str,
    summary: pd.DataFrame,
    budget: Budget,
    histograms: Mapping[str, pd.Series[Any]] | None = None,
    notes: Sequence[str] = (),
) -> str:
    """The whole report as one HTML document that loads nothing from elsewhere.

    ``summary`` is a released describe table (``p.dp.describe(...)``),
    ``budget`` the budget it was charged to (``p.dp.budget``: the report shows
    its totals, the cost of each query and its ledger), ``histograms`` released
    histograms or value counts by name, and ``notes`` sentences of your own.
    Every release's note is shown with it.

    >>> import dpframe
    >>> p = pd.DataFrame({"age": range(18, 90)}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    >>> page = render("Ages", p.dp.describe(epsilon=0.5, bounds={"age": (0, 100)}, progress=False), p.dp.budget)
    >>> page.startswith("<!DOCTYPE html>"), "Ages" in page, "<script" in page
    (True, True, False)
    """
    ledger = budget.ledger
    kind = budget.kind
    names = ("rho",) if kind == "zcdp" else ("epsilon", "delta")

    def amounts(reading: Any) -> str:
        return " · ".join(f"{_GREEK[n]} = {_amount(getattr(reading, n))}" for n in names)

    main = names[0]
    total = float(getattr(budget.total, main))
    spent_share = float(getattr(budget.spent, main)) / total if total else 0.0
    release = current_release(summary)
    summary_notes = _clauses(release.note) if release is not None else []
    hidden = _hidden_columns(ledger)
    return _TEMPLATES.get_template("report.html.j2").render(
        title=title,
        generated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        budget_name=budget.name or budget.id,
        total=amounts(budget.total),
        spent=amounts(budget.spent),
        remaining=amounts(budget.remaining),
        spent_percent=round(100 * min(max(spent_share, 0.0), 1.0), 1),
        lines=len(ledger),
        costs=_costs_table(ledger, budget) if len(ledger) else None,
        summary=summary_table(summary),
        summary_facts=(f"{release.mechanism}; cost {release.cost.describe(kind)}" if release is not None else ""),
        summary_notes=summary_notes,
        notes=list(notes),
        figures=[_figure(str(name), result) for name, result in (histograms or {}).items()],
        ledger=ledger_table(ledger),
        hidden=[_GREEK.get(c, c) for c in hidden],
    )
