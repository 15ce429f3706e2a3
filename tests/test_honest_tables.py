"""Honest tables (issue "Pandas, exactly"): released tables show their intervals and marks, stay pandas, and
answers clamped to a bound say so."""

from __future__ import annotations

import copy
import io
import math
import pickle
from fractions import Fraction
from collections.abc import Callable
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe import Ledger
from dpframe.accounting.costs import Cost
from dpframe.report.tables import MARKS
from dpframe.results import DPFrame, DPSeries, Release, at_bound, current_release, is_unreliable, with_release
from dpframe.testing import seeded_noise

matplotlib.use("Agg")

UNRELIABLE, AT_BOUND = MARKS["?"], MARKS["!"]


def survey(n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame({
        "sex": pd.Categorical(rng.choice(["F", "M"], n)),
        "job": pd.Categorical(rng.choice(["clerk", "nurse", "pilot"], n, p=[0.6, 0.39, 0.01])),
        "age": rng.integers(18, 90, n).astype(float),
        "hours": rng.normal(38, 9, n).clip(0, 99),
    })


def protected() -> Any:
    return survey().dp.protect(epsilon=100.0, delta=1e-6, ledger=Ledger.in_memory())


QUERIES: dict[str, Callable[[Any], Any]] = {
    "groupby count": lambda p: p.dp.groupby("sex").count(epsilon=0.5),
    "groupby mean": lambda p: p.dp.groupby("job").mean("age", bounds=(0, 100), epsilon=0.5),
    "groupby agg": lambda p: p.dp.groupby("sex").agg({"age": ["mean", "std"], "hours": "sum"},
                                                     bounds={"age": (0, 100), "hours": (0, 99)}, epsilon=1.0),
    "histogram": lambda p: p["age"].dp.histogram(bins=[0, 20, 40, 60, 80, 100], epsilon=0.5),
    "private histogram": lambda p: p["hours"].dp.histogram(bins=5, epsilon=0.5),
    "value_counts": lambda p: p["job"].dp.value_counts(epsilon=0.5),
    "normalized value_counts": lambda p: p["job"].dp.value_counts(epsilon=0.5, normalize=True),
    "crosstab": lambda p: p.dp.crosstab("sex", "job", epsilon=0.5),
    "crosstab with margins": lambda p: p.dp.crosstab("sex", "job", epsilon=0.5, margins=True),
    "pivot_table": lambda p: p.dp.pivot_table("age", "sex", "job", aggfunc="mean", bounds=(0, 100), epsilon=0.5),
    "describe": lambda p: p.dp.describe(epsilon=1.0, bounds={"age": (0, 100), "hours": (0, 99)}, progress=False),
}


@pytest.mark.parametrize("query", QUERIES)
def test_every_table_shows_its_intervals_as_text_and_html(query: str) -> None:
    with seeded_noise(1):
        result = QUERIES[query](protected())
    release = current_release(result)
    assert release is not None
    assert type(result) is (DPSeries if isinstance(result, pd.Series) else DPFrame)
    text, html = repr(result), result._repr_html_()
    assert str(result) == text and "±" in text and "95% intervals of the noise" in text
    assert release.mechanism in " ".join(text.split())
    assert html is not None and "<table" in html and "±" in html and "95% intervals of the noise" in html
    assert all(str(label) in text for label in result.index)  # pandas' layout: its labels
    # A mark, where there is one, is explained below the table; a mark nobody used is not.
    for mark, meaning in MARKS.items():
        shown = any(line.rstrip().endswith((f" {mark}", "?!")) for line in text.splitlines())
        assert (meaning.split(":")[0] in text) == shown, (query, mark, text)


def test_a_rendered_histogram_reads_like_the_scalar_answers() -> None:
    p = pd.DataFrame({"x": [1.0, 2.0] * 50}).dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    with seeded_noise(0):
        h = p["x"].dp.histogram(bins=[0, 1.5, 3, 4.5], epsilon=0.5)
    assert repr(h).splitlines() == [
        "x",
        "[0.0, 1.5)    53 ± 6",
        "[1.5, 3.0)    49 ± 6",
        "[3.0, 4.5)     4 ± 6 ?",
        "Name: count, dtype: int64",
        "95% intervals of the noise: ± half-width; discrete Laplace, ε=0.5, δ=0",
        f"? {UNRELIABLE}",
        "Note: last bin includes its right edge",
    ]
    assert "<td>4 ± 6 ?</td>" in h._repr_html_()


def test_marks_where_the_noise_swamps_a_group_and_not_elsewhere() -> None:
    with seeded_noise(2):
        means = protected().dp.groupby("job").mean("age", bounds=(0, 100), epsilon=0.2)
    lines = {line.split()[0]: line for line in repr(means).splitlines()[1:4]}
    assert lines["pilot"].rstrip().endswith(("?", "!")), lines  # about 40 rows: a wide interval
    assert lines["clerk"].rstrip()[-1].isdigit() and lines["nurse"].rstrip()[-1].isdigit(), lines
    release = means.attrs["dp"]
    for job in means.index:  # the marks are the release's: its value, interval and clamp
        clamp = (float(release.clamp[0][job]), float(release.clamp[1][job]))
        marked = is_unreliable(means[job], release.lower[job], release.upper[job], clamp) or at_bound(means[job], clamp)
        assert marked == lines[job].rstrip().endswith(("?", "!"))


def test_marks_come_from_the_release_and_public_parameters_only() -> None:
    # A release made by hand, with no data behind it: the marks follow from its values, intervals and clamp.
    values = pd.Series([50.0, 100.0, 3.0, 0.0], index=["a", "b", "c", "d"], name="mean")
    half = pd.Series([1.0, 2.0, 4.0, 0.5], index=values.index)
    release = Release("groupby mean", ("x",), "discrete Laplace", Cost(epsilon=Fraction(1)), half / 2, values - half,
                      (values + half).clip(upper=100), bounds=(0.0, 100.0), clamp=(0.0, 100.0))
    shown = with_release(values.copy(), release)
    lines = {line.split()[0]: line.rstrip() for line in repr(shown).splitlines()[:4]}
    assert lines["a"].endswith("50.00 ± 1.00")
    assert lines["b"].endswith("!")  # at its upper bound
    assert lines["c"].endswith("?")  # 3 ± 4: no known sign
    assert lines["d"].endswith("!")  # at its lower bound
    assert f"! {AT_BOUND}"[:40] in repr(shown) and "bounds [0, 100]" in repr(shown)


def test_clamped_scalars_are_marked() -> None:
    rows = pd.DataFrame({"x": [99.0] * 30 + [1.0] * 5, "c": [5.0] * 35})
    p = rows.dp.protect(epsilon=100.0, ledger=Ledger.in_memory())
    clamped = {"mean": [], "std": []}  # type: dict[str, list[Any]]
    for seed in range(30):
        with seeded_noise(seed):
            clamped["mean"].append(p["x"].dp.mean(bounds=(0, 100), epsilon=0.3))
            clamped["std"].append(p["c"].dp.std(bounds=(0, 10), epsilon=0.3))
    for name, answers in clamped.items():
        at = [a for a in answers if a.at_bound]
        assert at, f"no {name} at its bound in 30 runs"
        for a in answers:
            low, high = a.release.clamp
            assert a.at_bound == (float(a) <= low or float(a) >= high)
            assert ("clamped to the bound" in repr(a)) == a.at_bound
            if a.at_bound:
                assert a.unreliable and repr(a).split("(", 1)[1].startswith("UNRELIABLE")
    assert all(float(a.release.clamp[0]) == 0.0 for a in clamped["std"])


def test_a_sum_is_not_marked_for_an_interval_wider_than_its_values_bounds() -> None:
    # The interval of a sum of thousands of values is wider than one value's bounds; that says nothing.
    p = survey().dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    with seeded_noise(0):
        total = p["age"].dp.sum(bounds=(0, 100), epsilon=0.5)
    assert total.ci[1] - total.ci[0] > 50 and total.release.clamp is None
    assert not total.unreliable and "UNRELIABLE" not in repr(total)


def test_a_correlation_clamped_to_one_is_marked() -> None:
    x = np.arange(2000.0) % 10
    p = pd.DataFrame({"x": x, "y": x}).dp.protect(epsilon=100.0, ledger=Ledger.in_memory())
    with seeded_noise(0):
        c = p.dp.corr(bounds={"x": (0, 10), "y": (0, 10)}, epsilon=50.0)
    off = float(c.loc["x", "y"])
    assert at_bound(off, (-1.0, 1.0)) == (abs(off) == 1.0)
    lines = repr(c).splitlines()
    assert (lines[1].rstrip().endswith("!") or "!" in lines[1]) == (abs(off) == 1.0)
    assert not any(line.split()[0] == "x" and line.split()[1].endswith("!") for line in lines[1:3])  # diagonal


def test_proportions_and_normalized_tables_mark_the_clamp_at_zero() -> None:
    p = pd.DataFrame({"c": ["a"] * 3000 + ["b"] * 2}).dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    for seed in range(20):
        with seeded_noise(seed):
            shares = p["c"].dp.value_counts(epsilon=0.2, keys=["a", "b", "z"], normalize=True)
        assert shares.attrs["dp"].clamp == (0.0, math.inf)  # the counts were clipped at 0
        for key, line in zip(shares.index, repr(shares).splitlines()[1:4]):
            assert line.rstrip().endswith("!") == (shares[key] == 0.0), (seed, line)


def test_a_margin_that_adds_up_to_one_is_not_marked() -> None:
    with seeded_noise(0):
        t = protected().dp.crosstab("sex", "job", epsilon=0.5, normalize="all", margins=True)
    corner = [line for line in repr(t).splitlines() if line.startswith("All")][0]
    assert round(float(t.loc["All", "All"]), 9) == 1.0 and not corner.rstrip().endswith(("!", "?")), corner


def test_describe_names_and_marks_a_std_clamped_to_zero() -> None:
    p = pd.DataFrame({"same": [7.0] * 300}).dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    seen = False
    for seed in range(10):
        with seeded_noise(seed):
            d = p.dp.describe(epsilon=0.5, bounds={"same": (0, 10)}, progress=False)
        if d.loc["std", "same"] == 0:
            seen = True
            assert "std" in d.loc["unreliable", "same"]
            assert any(line.startswith("std") and line.rstrip().endswith("!") for line in repr(d).splitlines())
    assert seen


def test_missing_and_suppressed_cells_and_empty_tables_say_why() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.choice(list("xyz"), 3000, p=[0.6, 0.395, 0.005]),
                          "b": rng.choice(list("uv"), 3000, p=[0.99, 0.01])})
    p = frame.dp.protect(epsilon=10.0, delta=1e-5, ledger=Ledger.in_memory())
    with seeded_noise(0):
        table = p.dp.crosstab("a", "b", epsilon=1.0)
    text = repr(table)
    if table.isna().to_numpy().any():
        assert "<NA>" in text and "were not released and show <NA>" in " ".join(text.split())
    nobody = pd.DataFrame({"a": list("abcdefghij") * 3}).dp.protect(epsilon=1.0, delta=1e-5, ledger=Ledger.in_memory())
    with seeded_noise(0):
        empty = nobody.dp.crosstab("a", "a", epsilon=0.5)
    assert empty.size == 0 and "Empty: nothing was released" in repr(empty) and "Empty" in empty._repr_html_()
    assert "private partition selection" in " ".join(repr(empty).split())


def test_a_pivot_table_says_which_cells_are_missing() -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.choice(list("xy"), 4000), "b": rng.choice(list("uvw"), 4000, p=[0.5, 0.499, 0.001]),
                          "v": rng.uniform(0, 10, 4000)})
    frame.loc[(frame["a"] == "y") & (frame["b"] == "v"), "b"] = "u"  # no (y, v) rows: that group is not released
    p = frame.dp.protect(epsilon=10.0, delta=1e-5, ledger=Ledger.in_memory())
    with seeded_noise(0):
        t = p.dp.pivot_table("v", "a", "b", aggfunc="sum", bounds=(0, 10), epsilon=1.0)
    holes = int(t.isna().to_numpy().sum())
    assert holes >= 1 and f"{holes} of the table's {t.size} cells are NaN: their groups were not released" in " ".join(repr(t).split())
    assert "NaN" in repr(t)


def test_long_tables_format_only_what_pandas_shows() -> None:
    p = survey().dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    with seeded_noise(0):
        h = p["age"].dp.histogram(bins=500, bounds=(0, 100), epsilon=1.0)
    text = repr(h)
    assert "Length: 500, dtype: int64" in text and "..." in text and "±" in text
    assert len(text.splitlines()) < 40
    with pd.option_context("display.max_rows", 1000):
        assert len(repr(h).splitlines()) > 500


def test_released_tables_stay_pandas_in_a_pipeline(tmp_path: Any) -> None:
    with seeded_noise(3):
        p = protected()
        h = p["age"].dp.histogram(bins=[0, 20, 40, 60, 80, 100], epsilon=0.5)
        t = p.dp.crosstab("sex", "job", epsilon=0.5)
    release = h.attrs["dp"]
    plain_h, plain_t = pd.Series(h), pd.DataFrame(t)
    assert isinstance(h, pd.Series) and isinstance(t, pd.DataFrame)
    # Arithmetic and methods give plain pandas, which keep the (no longer current) release in attrs.
    share = h / h.sum()
    assert type(share) is pd.Series and share.attrs["dp"] is not None and current_release(share) is None
    assert repr(share) == pd.Series.__repr__(share) and "±" not in repr(share)
    assert type(h.sort_values()) is pd.Series and list(h.sort_values()) == sorted(h)
    assert type(t["clerk"]) is pd.Series and int(t.loc["F", "clerk"]) == int(plain_t.loc["F", "clerk"])
    assert h.iloc[0] == plain_h.iloc[0] and h.to_list() == plain_h.to_list()
    assert h.to_csv() == plain_h.to_csv() and t.to_csv() == plain_t.to_csv()
    assert h.attrs["dp"] is release and current_release(h) is release
    ax = h.dp.plot()
    assert len(ax.patches) == len(h)
    assert h.plot.bar() is not None
    # copy, concat, to_frame, reset_index, equals, pickle
    assert type(h.copy()) is pd.Series and current_release(h.copy()) is not None
    assert type(copy.deepcopy(h)) is pd.Series
    both = pd.concat([h, h])
    assert type(both) is pd.Series and len(both) == 2 * len(h)
    assert type(h.to_frame()) is pd.DataFrame and type(h.reset_index()) is pd.DataFrame
    assert type(t.reset_index()) is pd.DataFrame
    assert h.equals(plain_h) and plain_h.equals(h) and t.equals(plain_t) and plain_t.equals(t)
    pd.testing.assert_series_equal(pd.Series(h), plain_h)
    pd.testing.assert_frame_equal(t, plain_t, check_frame_type=False)
    for obj in (h, t):
        back = pickle.loads(pickle.dumps(obj))
        assert type(back) is type(obj) and back.equals(obj) and repr(back) == repr(obj)
    buffer = io.StringIO()
    t.to_csv(buffer)
    assert pd.read_csv(io.StringIO(buffer.getvalue()), index_col=0).shape == t.shape


def test_a_table_changed_in_place_shows_as_pandas() -> None:
    with seeded_noise(0):
        h = protected()["age"].dp.histogram(bins=[0, 50, 100], epsilon=0.5)
    assert "±" in repr(h)
    h.iloc[0] = 123_456
    assert current_release(h) is None and repr(h) == pd.Series.__repr__(h) and "±" not in repr(h)
    assert h._repr_html_() is None  # a Series: the notebook shows the text


def test_with_release_makes_no_new_object() -> None:
    values = pd.Series([1.0, 2.0])
    release = Release("count", (), "discrete Laplace", Cost(epsilon=Fraction(1)), 1.0, values - 2, values + 2)
    assert with_release(values, release) is values and type(values) is DPSeries
    assert dpframe.results.DPFrame is DPFrame
