"""Plots of released results: bars are the released values, error bars their 95% intervals."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402

import dpframe  # noqa: E402,F401
from dpframe import Ledger  # noqa: E402
from dpframe.plotting import INSTALL_HINT, plot_release  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def _bars(ax: Any) -> list[BarContainer]:
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def _extents(container: BarContainer) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) ends of each error bar, read back from the drawn segments."""
    assert container.errorbar is not None
    segments = container.errorbar.lines[2][0].get_segments()
    return np.array([s[:, 1].min() for s in segments]), np.array([s[:, 1].max() for s in segments])


@pytest.fixture
def protected() -> pd.DataFrame:
    df = pd.DataFrame({
        "age": [25, 35, 45, 55] * 250,
        "edu": ["HS", "BA", "HS", "MA"] * 250,
        "sex": ["F", "M", "M", "F"] * 250,
    })
    return df.dp.protect(epsilon=10.0)


def test_histogram_bars_span_bins_with_interval_error_bars(protected: pd.DataFrame, seeded: None) -> None:
    h = protected["age"].dp.histogram(bins=[20, 30, 40, 50, 60], epsilon=1.0)
    ax = h.dp.plot()
    (bars,) = _bars(ax)
    assert len(bars.patches) == 4
    np.testing.assert_allclose([b.get_height() for b in bars.patches], h.to_numpy())
    np.testing.assert_allclose([b.get_x() for b in bars.patches], [20, 30, 40, 50])
    np.testing.assert_allclose([b.get_width() for b in bars.patches], [10] * 4)
    lo, hi = _extents(bars)
    np.testing.assert_allclose(lo, h.attrs["dp"].lower.to_numpy())
    np.testing.assert_allclose(hi, h.attrs["dp"].upper.to_numpy())
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["[20, 30)", "[30, 40)", "[40, 50)", "[50, 60]"]
    assert ax.get_xlabel() == "age" and ax.get_ylabel() == "count"


@pytest.mark.parametrize("normalize", [False, True])
def test_value_counts_bars_follow_the_sorted_result(protected: pd.DataFrame, seeded: None, normalize: bool) -> None:
    vc = protected["edu"].dp.value_counts(keys=["BA", "HS", "MA", "PhD"], normalize=normalize, epsilon=1.0)
    assert list(vc.index)[0] == "HS"  # sorted: the release's intervals are in key order, the plot must align
    (bars,) = _bars(vc.dp.plot())
    assert len(bars.patches) == 4
    np.testing.assert_allclose([b.get_height() for b in bars.patches], vc.to_numpy(dtype=float))
    lo, hi = _extents(bars)
    release = vc.attrs["dp"]
    np.testing.assert_allclose(lo, release.lower[vc.index].to_numpy(dtype=float))
    np.testing.assert_allclose(hi, release.upper[vc.index].to_numpy(dtype=float))
    ticks = [t.get_text() for t in plt.gca().get_xticklabels()]
    assert ticks == [str(k) for k in vc.index]


def test_crosstab_draws_grouped_bars_per_column(protected: pd.DataFrame, seeded: None) -> None:
    table = protected.dp.crosstab("edu", "sex", keys={"edu": ["BA", "HS", "MA"], "sex": ["F", "M"]}, epsilon=1.0)
    ax = table.dp.plot()
    groups = _bars(ax)
    assert len(groups) == 2  # one bar series per column
    release = table.attrs["dp"]
    for j, (column, bars) in enumerate(zip(table.columns, groups)):
        assert bars.get_label() == column
        assert len(bars.patches) == 3
        np.testing.assert_allclose([b.get_height() for b in bars.patches], table[column].to_numpy(dtype=float))
        lo, hi = _extents(bars)
        np.testing.assert_allclose(lo, release.lower[column].to_numpy(dtype=float))
        np.testing.assert_allclose(hi, release.upper[column].to_numpy(dtype=float))
        centers = [b.get_x() + b.get_width() / 2 for b in bars.patches]
        np.testing.assert_allclose(centers, np.arange(3) - 0.4 + (j + 0.5) * 0.4)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["BA", "HS", "MA"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["F", "M"]


def test_plots_into_a_given_axes_and_passes_bar_options(protected: pd.DataFrame) -> None:
    fig, (left, right) = plt.subplots(1, 2)
    h = protected["age"].dp.histogram(bins=4, bounds=(20, 60), epsilon=1.0)
    assert h.dp.plot(ax=right, color="red") is right
    assert not left.patches and len(right.patches) == 4
    assert right.patches[0].get_facecolor()[:3] == (1.0, 0.0, 0.0)
    assert plot_release(h, ax=left) is left and len(fig.axes) == 2


def test_refuses_data_that_is_not_a_result(protected: pd.DataFrame) -> None:
    with pytest.raises(TypeError, match="refused on protected data"):
        protected["age"].dp.plot()
    with pytest.raises(TypeError, match="refused on protected data"):
        protected.dp.plot()
    with pytest.raises(TypeError, match='no release in .attrs\\["dp"\\]'):
        pd.Series([1, 2, 3]).dp.plot()
    with pytest.raises(TypeError, match="got list"):
        plot_release([1, 2, 3])  # type: ignore[arg-type]


def test_missing_matplotlib_says_how_to_install(protected: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    h = protected["age"].dp.histogram(bins=4, bounds=(20, 60), epsilon=1.0)
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ImportError, match=r'pip install "dpframe\[plot\]"') as info:
        h.dp.plot()
    assert str(info.value) == INSTALL_HINT


def test_core_imports_without_matplotlib() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import pandas as pd, dpframe, dpframe.plotting\n"
        "h = pd.DataFrame({'x': [1.0] * 10}).dp.protect(epsilon=1.0)['x'].dp.histogram(bins=[0, 2], epsilon=1.0)\n"
        "try:\n    h.dp.plot()\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "dpframe[plot]"' in out


def test_open_ended_bins_are_drawn_hatched_and_labelled_by_what_they_count() -> None:
    p = pd.DataFrame({"x": np.arange(2000.0) % 100}).dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    h = p["x"].dp.histogram(bins=4, epsilon=5.0)
    ax = h.dp.plot()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0].startswith("< ") and labels[-1].startswith("> ") and labels[-2].endswith("]")
    widths = [bar.get_width() for bar in ax.patches]
    assert all(np.isfinite(widths)) and [bar.get_hatch() for bar in ax.patches][::len(widths) - 1] == ["//", "//"]
    plt.close(ax.figure)
