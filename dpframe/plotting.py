"""Bar charts of released counts with their intervals as error bars.

Needs matplotlib, an optional extra: ``pip install "dpframe[plot]"`` (from a source
checkout ``pip install -e ".[plot]"``, or ``pip install matplotlib``). The rest
of dpframe imports without it. Plots are post-processing of released values
and cost nothing.

>>> import matplotlib; matplotlib.use("Agg")
>>> import pandas as pd, dpframe
>>> p = pd.DataFrame({"edu": ["HS", "BA", "HS"] * 300}).dp.protect(epsilon=1.0)
>>> vc = p["edu"].dp.value_counts(keys=["HS", "BA", "PhD"], epsilon=0.2)
>>> ax = vc.dp.plot()
>>> len(ax.patches), ax.get_ylabel()
(3, 'count')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.results import Release, aligned, current_release, is_other, justified

if TYPE_CHECKING:
    from matplotlib.axes import Axes

INSTALL_HINT = ('plotting needs matplotlib: pip install "dpframe[plot]" (from a source checkout of dpframe: '
                'pip install -e ".[plot]"), or pip install matplotlib')


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return plt


def release_of(result: Any) -> Release:
    """The :class:`Release` a released Series/DataFrame carries, or a TypeError saying what to plot instead.

    >>> import pandas as pd, dpframe
    >>> release_of(pd.Series([1, 2]))
    Traceback (most recent call last):
    ...
    TypeError: only released results can be plotted (e.g. s.dp.histogram(...), s.dp.value_counts(...), \
p.dp.crosstab(...)): this data carries no release in .attrs["dp"]
    """
    hint = "only released results can be plotted (e.g. s.dp.histogram(...), s.dp.value_counts(...), p.dp.crosstab(...))"
    if not isinstance(result, (pd.Series, pd.DataFrame)):
        raise TypeError(f"{hint}: got {type(result).__name__}")
    release = current_release(result)
    if release is None and isinstance(result.attrs.get("dp"), Release):
        raise TypeError(
            "these values were changed after they were released (e.g. by arithmetic, such as h / h.sum()), so the "
            "release pandas carried along in .attrs does not describe them and its intervals would be wrong; "
            "plot the released result itself, or these values with pandas (.plot.bar()) and no error bars"
        )
    if release is None:
        raise TypeError(f'{hint}: this data carries no release in .attrs["dp"]')
    return release


def _floats(values: Any) -> NDArray[np.float64]:
    return np.asarray(pd.DataFrame(values).to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)


def _label(key: Any) -> str:
    text = ", ".join(map(str, key)) if isinstance(key, tuple) else str(key)
    return text.replace("$", r"\$")  # a label, never mathtext (a column named "income ($)")


def _edges(edges: NDArray[np.float64]) -> list[str]:
    """Bin edges as text, without exponents: to a thousandth of the narrowest bin, trailing zeros dropped.

    >>> _edges(np.array([4096.0, 42188.8, 80281.6])), _edges(np.linspace(16.5, 82, 11))[:3]
    (['4096', '42189', '80282'], ['16.5', '23.05', '29.6'])
    """
    finite = edges[np.isfinite(edges)]
    step = float(np.min(np.diff(finite))) if len(finite) > 1 else 1.0
    return [justified(float(edge), step / 1000, trim=True) for edge in edges]


def _ticks(ax: Axes, positions: Any, labels: list[str]) -> None:
    """Tick labels, slanted and right-aligned under their bars when there are many or they are long."""
    slanted = len(labels) > 6 or sum(map(len, labels)) > 60
    ax.set_xticks(positions, labels, rotation=35 if slanted else 0, ha="right" if slanted else "center",
                  rotation_mode="anchor" if slanted else "default")


def plot_release(result: pd.Series[Any] | pd.DataFrame, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Bar chart of a released histogram, value counts or crosstab, with its intervals as error bars.

    A histogram's bars span their bins, labelled with the bin intervals; value
    counts get one bar per category; a crosstab gets a group of bars per row,
    one bar per column. ``kwargs`` go to ``Axes.bar`` (e.g. ``color``,
    ``capsize``). Returns the Axes (a new figure's unless ``ax`` is given).

    >>> import matplotlib; matplotlib.use("Agg")
    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": [25, 35, 45] * 100}).dp.protect(epsilon=1.0)
    >>> h = p["age"].dp.histogram(bins=[20, 30, 40, 50], epsilon=0.5)
    >>> ax = plot_release(h)
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['[20, 30)', '[30, 40)', '[40, 50]']

    Open-ended outer bins (a histogram whose edges were chosen privately) are
    hatched, as wide as their neighbours, and labelled ``< lower`` and ``> upper``;
    so is the entry that counts the categories a private selection did not
    release together (:data:`~dpframe.results.OTHER`). Bin edges are shown to a
    thousandth of the narrowest bin, without exponents.
    """
    release = release_of(result)
    if ax is None:  # pyplot only for a figure of its own: drawing into a given Axes changes no global state
        _, ax = _pyplot().subplots()
    assert ax is not None
    values = _floats(result)
    lower, upper = aligned(release.lower, result), aligned(release.upper, result)
    # Error bar extents from the interval; a (never expected) value outside it gets no bar on that side.
    below, above = np.maximum(values - lower, 0), np.maximum(upper - values, 0)
    kwargs.setdefault("capsize", 3)
    if isinstance(result, pd.Series):
        index = result.index
        if isinstance(index, pd.IntervalIndex):
            left, right = index.left.to_numpy(np.float64, copy=True), index.right.to_numpy(np.float64, copy=True)
            lefts, rights = _edges(left), _edges(right)
            labels = [f"[{lo}, {hi})" for lo, hi in zip(lefts, rights)]
            open_ended = ~np.isfinite(left) | ~np.isfinite(right)
            if len(labels):
                labels[-1] = labels[-1][:-1] + "]"  # the last bin includes its right edge
            if open_ended.any() and len(labels) > 2:
                # Open-ended outer bins (edges chosen privately): drawn as wide as their neighbour, hatched,
                # labelled by the values they count; the last inner bin keeps its right edge.
                labels[0], labels[-1] = f"< {rights[0]}", f"> {lefts[-1]}"
                labels[-2] = labels[-2][:-1] + "]"
                left[0], right[-1] = right[0] - (right[1] - left[1]), left[-1] + (right[-2] - left[-2])
            kwargs.setdefault("edgecolor", "white")
            bars = ax.bar(left, values[:, 0], width=right - left, align="edge",
                          yerr=np.vstack([below[:, 0], above[:, 0]]), **kwargs)
            for bar, outer in zip(bars, open_ended):
                if outer:
                    bar.set_hatch("//")
            _ticks(ax, (left + right) / 2, labels)
        else:
            x = np.arange(len(result))
            bars = ax.bar(x, values[:, 0], yerr=np.vstack([below[:, 0], above[:, 0]]), **kwargs)
            for bar, key in zip(bars, index):
                if is_other(key):  # the categories not released, together
                    bar.set_hatch("//")
            _ticks(ax, x, [_label(k) for k in index])
        ax.set_xlabel(_label(index.name) if index.name is not None else "")
        ax.set_ylabel(_label(result.name) if result.name is not None else "")
    else:
        rows, cols = len(result.index), len(result.columns)
        x, width = np.arange(rows), 0.8 / max(cols, 1)
        for j, column in enumerate(result.columns):
            ax.bar(x - 0.4 + (j + 0.5) * width, values[:, j], width=width, label=_label(column),
                   yerr=np.vstack([below[:, j], above[:, j]]), **kwargs)
        _ticks(ax, x, [_label(k) for k in result.index])
        ax.set_xlabel(_label(result.index.name) if result.index.name is not None else "")
        ax.set_ylabel("count")
        ax.legend(title=_label(result.columns.name) if result.columns.name is not None else None)
    ax.set_title(_label(f"{release.query} of {', '.join(release.columns)} ({release.level:.0%} intervals)"))
    return ax


__all__ = ["INSTALL_HINT", "plot_release", "release_of"]
