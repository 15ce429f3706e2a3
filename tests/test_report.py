"""The HTML report (dpframe.report.html): read back as HTML, and looked at in a real headless browser."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jinja2")
matplotlib = pytest.importorskip("matplotlib")
import matplotlib.image  # noqa: E402  (reads the screenshot)

import dpframe  # noqa: E402
from dpframe import Ledger  # noqa: E402
from dpframe.__main__ import census_like, main  # noqa: E402
from dpframe.report.html import LONG_CELL, render  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class Page(HTMLParser):
    """The parts of a report the tests read: tables by class (rows of cell texts), spans by class, titles,
    the text of the SVG figures, and every tag and attribute."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.spans: dict[str, list[str]] = {}
        self.titles: list[tuple[str, str]] = []  # (title attribute, text of the element)
        self.svg_texts: list[str] = []
        self.notes: list[str] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._span: list[tuple[str, list[str]]] = []
        self._titled: list[tuple[str, list[str]]] = []
        self._svg_text: list[str] | None = None
        self._li: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        classes = a.get("class", "").split()
        if tag == "table" and "data" in classes:
            self._table = classes[-1]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "span":
            self._span.append((classes[0] if classes else "", []))
        elif tag == "text":
            self._svg_text = []
        elif tag == "li":
            self._li = []
        if "title" in a and tag != "div":
            self._titled.append((a["title"], []))

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._table and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "span" and self._span:
            name, text = self._span.pop()
            self.spans.setdefault(name, []).append("".join(text).strip())
            if self._titled:
                title, text = self._titled.pop()
                self.titles.append((title, "".join(text)))
        elif tag == "text" and self._svg_text is not None:
            self.svg_texts.append("".join(self._svg_text))
            self._svg_text = None
        elif tag == "li" and self._li is not None:
            self.notes.append(" ".join("".join(self._li).split()))
            self._li = None

    def handle_data(self, data: str) -> None:
        for sink in (self._cell, self._svg_text, self._li, *(t for _, t in self._span), *(t for _, t in self._titled)):
            if sink is not None:
                sink.append(data)


def reviewed_schema(data: Path) -> str:
    """The schema `dpframe schema` drafts for ``data`` (the curator's review step), beside it."""
    schema = data.with_suffix(".schema.json")
    assert main(["schema", str(data), "--out", str(schema)]) == 0
    return str(schema)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The report of `dpframe describe` on a census-like file (generated), as the command writes it."""
    folder = tmp_path_factory.mktemp("report")
    data = folder / "census.csv"
    census_like(5000).to_csv(data, index=False)
    out = folder / "report.html"
    code = main(["describe", str(data), "--schema", reviewed_schema(data), "--epsilon", "1", "--delta", "1e-6",
                 "--out", str(out), "--ledger", str(folder / "ledger.sqlite")])
    assert code == 0
    return out.read_text(encoding="utf-8")


def test_figures_have_axis_titles_and_readable_bin_labels(report: str) -> None:
    page = Page(report)
    assert report.count("<svg") == 3  # one histogram per numeric column: age, hours, income
    for column in ("age", "hours", "income"):
        assert column in page.svg_texts
    assert page.svg_texts.count("count") == 3
    bins = [t for t in page.svg_texts if t.startswith("[")]
    assert len(bins) == 30 and not any("e+" in t or "e-" in t for t in bins)


def test_intervals_have_the_digits_of_their_noise_not_exponents(report: str) -> None:
    page = Page(report)
    intervals, values = page.spans["interval"], page.spans["value"]
    assert len(intervals) >= 10 and all(re.fullmatch(r"± [\d,.]+|-?[\d,.]+ to -?[\d,.]+", t) for t in intervals)
    assert not any(re.search(r"e[+-]\d", t) for t in intervals + values)
    summary = {row[0]: row[1:] for row in page.tables["summary"][1:]}
    count = summary["count"][0]  # e.g. "4,988± 150": thousands grouped, the noise's two digits
    assert re.fullmatch(r"\d,\d{3}± \d+", count.replace("\n", ""))


def test_ledger_hides_columns_that_are_always_zero_and_cuts_long_cells(report: str) -> None:
    page = Page(report)
    header, *rows = page.tables["ledger"]
    # Zero / False on every line: ρ and seeded on an (ε, δ) budget, and δ when the schema declares every
    # category (nothing is selected privately).
    assert "ρ" not in header and "seeded" not in header and "δ" not in header
    assert {"query", "columns", "mechanism", "ε", "noise", "rule"} <= set(header)
    for j, name in enumerate(header):
        assert any(row[j] not in ("", "0", "False") for row in rows), name
    cut = [(title, text) for title, text in page.titles if text.endswith("…")]
    assert cut and all(len(title) > LONG_CELL and title.startswith(text[:-1]) for title, text in cut)
    assert re.search(r"Not shown, being zero or empty on every line: [δρ, ]+seeded\.", report)


def test_budget_summary_and_cost_by_query(report: str) -> None:
    page = Page(report)
    header, *rows = page.tables["costs"]
    assert header[:3] == ["query", "lines", "ε"] and "δ" not in header
    queries = {row[0]: row for row in rows}
    assert {"bounds for describe", "describe", "describe quantiles", "histogram"} <= set(queries)
    shares = [float(row[-1].rstrip("%")) for row in rows]
    assert sum(shares) == pytest.approx(100.0, abs=0.5)  # the whole budget was spent
    for label in ("Total", "Spent", "Remaining"):
        assert f'<div class="label">{label}</div>' in report


def test_every_release_note_is_shown(report: str) -> None:
    notes = Page(report).notes
    assert any(n.startswith("Lower/upper bound rows are the clipping bounds used") for n in notes)
    assert any(n.startswith("Percentiles have rank intervals, no value interval") for n in notes)
    assert any(n.startswith("Histograms: 0.2 of ε") for n in notes)  # the command's own note
    assert sum(n == "Last bin includes its right edge" for n in notes) == 3  # each histogram's release
    assert sum(n.startswith("Values below") and n.endswith("are not counted") for n in notes) == 3


def test_the_page_is_self_contained(report: str) -> None:
    tags = Page(report).tags
    assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe")]
    assert not [a for _, a in tags if "src" in a or a.get("href", "").startswith("http")]


def test_names_and_values_are_escaped() -> None:
    name = "<script>alert(1)</script>"
    frame = pd.DataFrame({name: np.arange(500) % 50, "city": ["<b>Oslo</b>", "Rome"] * 250})
    p = frame.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    summary = p.dp.describe(epsilon=0.5, bounds={name: (0, 50)}, keys={"city": ["<b>Oslo</b>", "Rome"]})
    histogram = p[name].dp.histogram(bins=5, bounds=(0, 50), epsilon=0.5)
    page = render(name, summary, p.dp.budget, {name: histogram}, notes=(f"a note about {name}",))
    assert "<script" not in page and "<b>Oslo" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # title, heading, table, figure, note
    assert name in Page(page).svg_texts  # the x axis title, escaped in the SVG and read back


def test_hatched_entries_are_explained_and_rendering_leaves_matplotlib_as_it_was() -> None:
    race = pd.Series(["white"] * 3000 + ["black"] * 600 + [f"solo-{i}" for i in range(40)], name="race")
    p = race.to_frame().dp.protect(epsilon=2.0, delta=1e-6, ledger=Ledger.in_memory())
    counts = p["race"].dp.value_counts(epsilon=0.5, delta=1e-7)
    assert counts.index[-1] == dpframe.OTHER
    open_ended = pd.DataFrame({"x": np.arange(3000.0) % 100}).dp.protect(
        epsilon=1.0, ledger=Ledger.in_memory())["x"].dp.histogram(bins=5, epsilon=0.5)
    before = dict(matplotlib.rcParams)
    page = Page(render("counts", p.dp.describe(epsilon=0.5, delta=1e-7), p.dp.budget,
                       {"race": counts, "x": open_ended}))
    assert dict(matplotlib.rcParams) == before
    assert "Hatched bar: the categories that were not released, counted together" in page.notes
    assert "Hatched bars: the open-ended bins, which count the values beyond the bounds" in page.notes
    assert any(n.startswith("Categories released by private partition selection") for n in page.notes)
    assert dpframe.OTHER in page.svg_texts and "race" in page.svg_texts


def test_dates_are_described_with_durations_as_intervals() -> None:
    days = pd.DataFrame({"day": pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(3000) % 700, unit="D")})
    p = days.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    summary = p.dp.describe(epsilon=1.0, bounds={"day": ("2019-01-01", "2023-01-01")})
    page = Page(render("days", summary, p.dp.budget))
    assert any(re.fullmatch(r"± [\d.]+ (days|h)", t) for t in page.spans["interval"])
    assert any(re.fullmatch(r"20\d\d-\d\d-\d\d", t) for t in page.spans["value"])


def test_out_without_the_report_libraries_fails_before_spending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.csv"
    census_like(500).to_csv(data, index=False)
    ledger = tmp_path / "ledger.sqlite"
    monkeypatch.setitem(sys.modules, "jinja2", None)  # as if it were not installed
    schema = reviewed_schema(data)
    capsys.readouterr()
    code = main(["describe", str(data), "--schema", schema, "--epsilon", "1", "--delta", "1e-6",
                 "--out", str(tmp_path / "r.html"), "--ledger", str(ledger)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    for text in ("jinja2 is not installed", 'pip install "dpframe[report]"', 'pip install -e ".[report]"',
                 "pip install jinja2 matplotlib", "nothing was spent"):
        assert text in captured.err
    assert not ledger.exists() or Ledger.at(ledger).budgets().empty


def test_templates_are_package_data() -> None:
    # hatchling ships every file inside the packages it is given: the templates live inside dpframe/.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["dpframe"]
    templates = set((ROOT / "dpframe" / "report" / "templates").iterdir())
    assert (ROOT / "dpframe" / "report" / "templates" / "report.html.j2") in templates


def _browser() -> str | None:
    return next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)


@pytest.mark.skipif(_browser() is None, reason="no headless Chromium on this machine (apt-get install chromium)")
def test_a_real_browser_draws_the_report(report: str, tmp_path: Path) -> None:
    page, shot = tmp_path / "report.html", tmp_path / "report.png"
    page.write_text(report, encoding="utf-8")
    browser = _browser()
    assert browser is not None
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri()],
                   check=True, capture_output=True, timeout=300)
    image: Any = matplotlib.image.imread(shot)
    assert image.shape[:2] == (2400, 1280)
    ink = (image[..., :3] < 0.85).any(axis=-1)  # pixels that are not white or near it
    rows = ink.any(axis=1)
    assert 0.01 < ink.mean() < 0.5  # text, tables and figures, not a blank (or black) page
    assert rows[:400].any() and rows[1200:].any()  # drawn from the top down the page, not just a header
