"""Selection queries on protected data: mode, top-k, a choice scored by aggregate queries, the sparse vector,
quantiles and the median.

Each query follows the order of every dpframe query: validate from the schema
and the arguments -> resolve the privacy -> a :class:`~dpframe.queries.plan.Plan`
naming the mechanism -> charge -> read the data -> select -> a result that
says how it was made.

These are ε-DP mechanisms: on an (ε, δ) budget they spend ε and no δ (except
``mode``/``top_k`` on undeclared categories, which select them privately); on
a zCDP budget ``epsilon=`` is charged ρ = ε²/2, and ``rho=`` runs the
mechanism with ε = √(2ρ) (an ε-DP mechanism is ε²/2-zCDP; Bun & Steinke 2016).

Composition rules (in the ledger):

* ``mode``: one selection over the categories' counts (sensitivity k =
  max_contributions, monotone), permute-and-flip by default.
* ``top_k``: k selections at ε/k each, removing each winner (sequential).
* ``select``: one selection over the candidates' scores, aggregate queries of
  :mod:`dpframe.agg` whose sensitivity dpframe derives.
* ``above_threshold``: one sparse-vector run over aggregate queries, ε once
  however many queries it examines.
* ``quantile``: one exponential-mechanism selection per quantile, ε split
  equally (sequential); ``median`` is ``quantile(0.5)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.noise.mechanism import Privacy
from dpframe.noise.random import current_source
from dpframe.protection.analyst import public_value
from dpframe.protection.frame import ProtectedFrame
from dpframe.queries import agg, kernels
from dpframe.queries.bounds import BoundsReads, automatic_bounds, bounds_note
from dpframe.queries.partitioned import CellReader, Partitioning, release_counts, require_selection
from dpframe.queries.plan import GroupBounds, Plan, Target, check_bounds, check_numeric
from dpframe.results import DPFloat, Release, _Released, with_release
from dpframe.selection import exponential as em
from dpframe.selection.svt import SparseVector, SVTNoise
from dpframe.selection.quantile import (
    QuantileGrid,
    Window,
    array_windows,
    position_counts,
    rank_reach,
    sample_counted_quantiles,
    sample_quantile_windows,
)

LEVEL = 0.95

_NAMES = {
    "permute_and_flip": "permute-and-flip",
    "exponential": "exponential mechanism",
    "report_noisy_max": "report-noisy-max (Laplace)",
}


class DPChoice(_Released):
    """A privately selected candidate: ``.value``, its ``.position`` among the candidates, ``.release``.

    >>> import pandas as pd, dpframe
    >>> from dpframe import agg
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"x": range(100)}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     c = p.dp.select([10, 50, 90], score=-abs(agg.count(where="x < @candidate") - 50), epsilon=1.0)
    >>> c.value, c.position, c.mechanism
    (50, 1, 'permute-and-flip')
    """

    release: Release

    def __init__(self, value: Any, position: int, release: Release) -> None:
        self.value = value
        self.position = position
        self.release = release

    def __repr__(self) -> str:
        cost = self.cost.describe("zcdp" if self.cost.rho else "approx")
        return f"DPChoice({self.value!r}; {self.mechanism}, {cost})"


# --- arguments ------------------------------------------------------------------


def pure_privacy(target: Target, epsilon: float | None, delta: float | None, rho: float | None, query: str) -> Privacy:
    """The ε of an ε-DP selection, validated against the budget (delta is refused)."""
    if delta is not None and delta != 0:
        raise ValueError(f"{query} is ε-DP and spends no delta: drop delta=")
    return target.privacy(epsilon, None, rho, "laplace")


def _mechanism(mechanism: str | None) -> em.SelectionMechanism:
    return "permute_and_flip" if mechanism is None else em.check_mechanism(mechanism)


def check_quantiles(q: Any) -> tuple[list[float], bool]:
    """Quantile levels in [0, 1]: a number, or a non-empty list; returns (levels, was_scalar).

    >>> check_quantiles(0.5), check_quantiles([0.25, 0.75])
    (([0.5], True), ([0.25, 0.75], False))
    """
    scalar = isinstance(q, (int, float, np.integer, np.floating)) and not isinstance(q, (bool, np.bool_))
    levels = [q] if scalar else q
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Iterable):
        raise TypeError(f"q must be a number in [0, 1] or a list of them, got {type(q).__name__}")
    out = []
    for level in levels:
        if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, float, np.integer, np.floating)):
            raise TypeError(f"quantile levels must be numbers in [0, 1], got {level!r}")
        if not 0 <= float(level) <= 1:
            raise ValueError(f"quantile levels must lie in [0, 1], got {level!r}")
        out.append(float(level))
    if not out:
        raise ValueError("q is empty: give at least one quantile level")
    return out, scalar


# --- mode and top-k ---------------------------------------------------------------


def _gap_reach(mechanism: em.SelectionMechanism, candidates: int, sensitivity: float, epsilon: float,
               monotonic: bool) -> float:
    """Score gap to the best not exceeded with probability LEVEL (data-independent union bound)."""
    beta = 1 - LEVEL
    scale = sensitivity / epsilon * (1 if monotonic else 2)
    if mechanism != "report_noisy_max":
        # P(output r) <= exp(-gap_r / scale) for both the exponential mechanism and permute-and-flip.
        return scale * math.log(max(candidates, 1) / beta)
    # A candidate gap x behind wins only if the difference of two Laplace(scale) exceeds x:
    # P = (2 + x/scale) exp(-x/scale) / 4; solve m P = beta by fixed-point iteration.
    x = scale
    for _ in range(50):
        x = scale * math.log(max(candidates, 1) * (2 + x / scale) / (4 * beta))
    return max(x, 0.0)


def _selection_release(query: str, plan: Plan, note: str) -> Release:
    nan = float("nan")
    return Release(query, plan.columns, plan.mechanism, plan.target.spent, nan, nan, nan, LEVEL, None, note)


def _categories(
    query: str,
    series: Any,
    k: int | None,
    keys: Any,
    epsilon: float | None,
    delta: float | None,
    rho: float | None,
    mechanism: str | None,
    read: CellReader | None = None,
) -> pd.Series[Any]:
    """Shared by mode (k=None: one) and top_k: the most common categories, best first.

    ``read`` (default: the rows of the target) gives the exact counts per category after the charge.
    """
    target = Target.of(series)
    series = target.obj
    if not isinstance(series, pd.Series):
        raise TypeError(f"{query} is a question about one column: call it on a Series")
    partitioning = Partitioning.of(target, [series.name], keys)
    if not partitioning.public:
        if mechanism is not None:
            raise ValueError(
                f"mechanism={mechanism!r} needs public categories: declare them with keys=[...] or a categorical "
                "dtype; without them, the categories are selected privately from noisy counts (drop mechanism=)"
            )
        privacy = target.privacy(epsilon, delta, rho, None, selects_partitions=True)
        require_selection(partitioning, privacy)
        return _categories_selected(query, series, target, partitioning, privacy, k, read)
    chosen = _mechanism(mechanism)
    # Categories an earlier query released are public now: the delta given for selecting them is not needed.
    privacy = pure_privacy(target, epsilon, None if any(partitioning.remembered) else delta, rho, query)
    cells = partitioning.index()
    # Remembered categories are the ones released, possibly fewer than asked for: as with a selection.
    count = 1 if k is None else min(em.check_k(k, None if any(partitioning.remembered) else len(cells)), len(cells))
    contributions = target.contributions
    rounds = f"{count} rounds at ε/{count} each, " if count > 1 else ""
    plan = Plan(
        query, (str(series.name),), target, privacy, mechanism_name=_NAMES[chosen],
        detail=f"{rounds}counts of {len(cells)} declared categories, sensitivity {contributions} (monotone)",
        rule="sequential composition over rounds" if count > 1 else "one ε-DP selection",
    )
    plan.charge()
    exact, _ = (CellReader(target) if read is None else read).counts(partitioning)
    counts = exact.astype(np.float64)
    epsilon_exact = privacy.epsilon
    positions = em.peel(counts, count, Fraction(contributions), epsilon_exact, chosen, True)
    reach = _gap_reach(chosen, len(cells), contributions, float(epsilon_exact) / count, True)
    note = (
        f"{'each selected' if count > 1 else 'the selected'} category's count is within {reach:.3g} of the "
        f"largest{' not selected before it' if count > 1 else ''} with probability {LEVEL:.0%}"
    )
    result = pd.Series(cells.take(positions), name=series.name)
    return with_release(result, _selection_release(query, plan, note))  # type: ignore[no-any-return]


def _categories_selected(
    query: str, series: pd.Series[Any], target: Target, partitioning: Partitioning, privacy: Privacy, k: int | None,
    read: CellReader | None,
) -> pd.Series[Any]:
    """Undeclared categories: noisy counts with private partition selection, then the largest (post-processing)."""
    count = 1 if k is None else em.check_k(k)
    counts = release_counts(
        query, target, partitioning, privacy, (str(series.name),),
        rule="parallel composition over categories, private partition selection; the largest released counts",
        read=read,
    )
    noisy, cells, noise, plan, threshold = counts.noisy, counts.cells, counts.noise, counts.plan, counts.threshold
    # Ties are broken at random: the order of the observed categories follows the data.
    tie_break = current_source().words(len(cells))
    order = np.lexsort((tie_break, -noisy))[:count]
    note = (
        f"categories released by private partition selection (noisy count >= {threshold}, noise std "
        f"{noise.std:.3g}; it spent δ={float(privacy.delta):.3g}), largest noisy count first; fewer than "
        "requested if fewer were released"
    )
    result = pd.Series(cells.take(order), name=series.name)
    result.index = pd.RangeIndex(len(result))
    return with_release(result, _selection_release(query, plan, note))  # type: ignore[no-any-return]


def mode(
    series: Any,
    *,
    epsilon: float | None = None,
    keys: Any = None,
    delta: float | None = None,
    rho: float | None = None,
    mechanism: str | None = None,
    read: CellReader | None = None,
) -> pd.Series[Any]:
    """The most common category, privately selected; a one-element Series like ``Series.mode()``.

    With public categories (``keys=``, a categorical dtype, booleans) the
    category is chosen by ``mechanism`` (default permute-and-flip) from the
    exact counts, which are monotone with sensitivity max_contributions;
    declared categories absent from the data are candidates too (count 0).
    Otherwise, with ``delta`` on an (ε, δ) budget, categories are released by
    private partition selection as in ``value_counts`` and the largest noisy
    count wins (an empty Series if none is released).
    ``read`` (default: the rows of the target) gives the exact counts per
    category after the charge (:mod:`dpframe.dask.selection` reads them on Dask).

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"edu": ["HS"] * 60 + ["BA"] * 30}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     m = mode(p["edu"], keys=["HS", "BA", "PhD"], epsilon=0.5)
    >>> m.tolist(), m.attrs["dp"].mechanism
    (['HS'], 'permute-and-flip')
    """
    return _categories("mode", series, None, keys, epsilon, delta, rho, mechanism, read)


def top_k(
    series: Any,
    k: int,
    *,
    epsilon: float | None = None,
    keys: Any = None,
    delta: float | None = None,
    rho: float | None = None,
    mechanism: str | None = None,
    read: CellReader | None = None,
) -> pd.Series[Any]:
    """The ``k`` most common categories, most common first, privately selected.

    Public categories: k rounds of ``mechanism`` (default permute-and-flip) at
    ε/k each, removing each winner (peeling; sequential composition).
    Undeclared categories: private partition selection (needs ``delta``), then
    the k largest released noisy counts.
    ``read`` as in :func:`mode`.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"c": ["a"] * 90 + ["b"] * 60 + ["c"] * 30}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     top_k(p["c"], 2, keys=["a", "b", "c", "d"], epsilon=1.0).tolist()
    ['a', 'b']
    """
    return _categories("top_k", series, k, keys, epsilon, delta, rho, mechanism, read)


# --- selection and the sparse vector over aggregate queries ---------------------------------------


def _protected_frame(frame: Any, query: str) -> ProtectedFrame:
    Target.of(frame)  # a clear error for data that is not protected
    if not isinstance(frame, ProtectedFrame):
        raise TypeError(f"{query} is asked of a protected frame: p.dp.{query}(...), with p from df.dp.protect(...)")
    return frame


def _scores(score: Any, options: list[Any]) -> list[agg.Expr]:
    """Each candidate's score: ``score`` with ``@candidate`` bound to it, or what ``score(candidate)`` returns."""
    if agg.is_expression(score):
        return [score.bind(option) for option in options]
    if not callable(score):
        raise TypeError("score must be an aggregate query of dpframe.agg (with @candidate for the candidate), or a "
                        f"function candidate -> aggregate query, got {type(score).__name__}")
    scores = []
    for option in options:
        scored = score(option)  # the public candidate only: its errors are the caller's argument errors
        if not agg.is_expression(scored):
            raise TypeError(f"score({option!r}) returned a {type(scored).__name__}, not an aggregate query: "
                            "build the score from dpframe.agg, e.g. lambda c: agg.count(where=f'city == {c!r}')")
        scores.append(scored.bind(option))
    return scores


def select(
    frame: Any,
    candidates: Iterable[Any],
    score: Any,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    mechanism: str = "permute_and_flip",
) -> DPChoice:
    """The public candidate with a (nearly) highest score, privately selected; the score is an aggregate query.

    ``candidates`` are public plain values (numbers, text, dates, ...), fixed
    before looking at the data. ``score`` is an expression of
    :mod:`dpframe.agg`, in which ``@candidate`` stands for each candidate in
    turn, or a function ``candidate -> expression``, called on each candidate
    before anything is charged (it sees the public candidate and nothing of
    the data; its errors are yours; an ``@candidate`` in what it returns is
    bound to that candidate too). The sensitivity is derived from the
    scores -- the largest of theirs, for ``k = max_contributions`` -- and so is
    monotonicity (when every score moves the same way as a unit is added,
    the mechanism's noise is halved); the ledger line says which and why. The
    exact scores go to ``mechanism``: ``"permute_and_flip"`` (default),
    ``"exponential"`` or ``"report_noisy_max"`` (:mod:`dpframe.selection.exponential`).

    >>> import pandas as pd, dpframe
    >>> from dpframe import agg
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"city": ["Oslo"] * 80 + ["Rome"] * 20}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     c = select(p, ["Oslo", "Rome"], agg.count(where="city == @candidate"), epsilon=0.5)
    >>> c.value
    'Oslo'
    >>> p.dp.budget.ledger["noise"].iloc[-1]
    "2 candidates, sensitivity 1 (monotone: all non-decreasing) derived from the scores: the largest, \
agg.count(where='city == @candidate', @candidate='Oslo'), is a count: k = 1"
    """
    protected = _protected_frame(frame, "select")
    target = Target.of(protected)
    target.refuse_unless_bounded_ok("select")
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
        raise TypeError("candidates must be a list of public candidates")
    options = [public_value(option, "select") for option in candidates]
    if not options:
        raise ValueError("candidates is empty: give at least one candidate")
    chosen = em.check_mechanism(mechanism)
    privacy = pure_privacy(target, epsilon, None, rho, "select")
    scores = _scores(score, options)
    derived = agg.derive(scores, target.contributions, "the scores")
    sensitivity = derived.sensitivity
    answers = agg.Answers(protected, scores)  # the row-wise part: argument errors here, before the charge
    plan = Plan(
        "select", tuple(map(str, protected.columns)), target, privacy, mechanism_name=_NAMES[chosen],
        detail=f"{len(options)} candidates, {derived.reason}",
        rule="one ε-DP selection",
    )
    plan.charge()
    exact = [answers(s) for s in scores]
    position = int(em.choose(exact, sensitivity, privacy.epsilon, chosen, derived.monotonic)[0])
    reach = _gap_reach(chosen, len(options), float(sensitivity), float(privacy.epsilon), derived.monotonic)
    note = f"the selected candidate's score is within {reach:.3g} of the best with probability {LEVEL:.0%}"
    return DPChoice(options[position], position, _selection_release("select", plan, note))


# SVT needs integer answers and an integer sensitivity: a fractional one is scaled to this power of two.
SVT_SCALE = 2**16


def above_threshold(
    frame: Any,
    queries: Sequence[agg.Expr],
    *,
    threshold: float,
    epsilon: float,
    c: int = 1,
) -> int | None | list[int]:
    """Sparse vector over aggregate queries: the index of the first above ``threshold`` (indices if ``c > 1``).

    ``queries`` is a non-empty list of :mod:`dpframe.agg` expressions. Their
    sensitivity is derived -- the largest of theirs, for ``k =
    max_contributions`` -- and so is monotonicity (when all move the same way
    as a unit is added, the query noise is halved). The budget is charged
    ``epsilon`` once, one ledger line, before any query is answered; the
    queries are then answered exactly, lazily and in order, until ``c`` are
    found above the threshold (Lyu et al. 2017, Alg. 1, with exact discrete
    Laplace noise: :class:`~dpframe.selection.svt.SparseVector`). Returns
    ``None`` (or fewer than ``c`` indices) when the queries run out first.

    The noise is on integers: with an integer sensitivity Δ the exact answers
    are rounded down (⌊a⌋ − ⌊b⌋ stays within Δ when a − b does); otherwise
    every answer and the threshold are scaled by s = 2^16/Δ first and the
    answers rounded down, with sensitivity 2^16 (|⌊as⌋ − ⌊bs⌋| ≤ 2^16 when
    |a − b| ≤ Δ, 2^16 being an integer).

    >>> import pandas as pd, dpframe
    >>> from dpframe import agg
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"age": [25, 35, 45, 55, 65] * 200}).dp.protect(epsilon=1.0)
    >>> queries = [agg.count(where="age >= @a") for a in (90, 80, 70, 60, 50)]   # 0, 0, 0, 200, 400
    >>> with seeded_noise(0):
    ...     above_threshold(p, queries, threshold=300, epsilon=0.5)
    4
    """
    protected = _protected_frame(frame, "above_threshold")
    target = Target.of(protected)
    target.refuse_unless_bounded_ok("above_threshold")
    if isinstance(queries, (str, bytes)) or not isinstance(queries, Sequence) or len(queries) == 0:
        raise TypeError("queries must be a non-empty list of aggregate queries of dpframe.agg")
    for query in queries:
        if not agg.is_expression(query):
            raise TypeError(f"every query must be an aggregate query of dpframe.agg (e.g. agg.count(where=...)), got "
                            f"a {type(query).__name__}")
    SparseVector.check_threshold(threshold)
    privacy = target.privacy(epsilon, None, None, "laplace")
    derived = agg.derive(queries, target.contributions, "the queries")
    scale = Fraction(1) if derived.sensitivity.denominator == 1 else SVT_SCALE / derived.sensitivity
    # Exactly (a float is a binary fraction): it is scaled with the answers.
    exact_threshold = threshold if isinstance(threshold, Fraction) else Fraction(
        int(threshold) if isinstance(threshold, (int, np.integer)) else float(threshold))
    noise = SVTNoise.calibrate(privacy.epsilon, int(derived.sensitivity * scale), c, derived.monotonic)
    answers = agg.Answers(protected, queries)  # the row-wise part: argument errors here, before the charge
    scaled = "" if scale == 1 else "; answers and threshold scaled by 2^16/Δ to integers"
    plan = Plan(
        "above_threshold", (), target, privacy, mechanism_name="sparse vector",
        detail=f"{len(queries)} queries, threshold {threshold!r}; {derived.reason}{scaled}; {noise.describe()}",
    )
    plan.charge()
    run = SparseVector(exact_threshold * scale, noise.sensitivity, privacy.epsilon, noise.c, noise.monotonic)
    found = run.positives(math.floor(answers(query) * scale) for query in queries)
    if noise.c == 1:
        return found[0] if found else None
    return found


# --- quantiles ------------------------------------------------------------------------


def quantile_values(series: pd.Series[Any], mask: NDArray[np.bool_] | None, integer: bool) -> NDArray[Any]:
    """The non-missing values of the rows in use, as a fresh array (int64 for integer grids)."""
    present = kernels.present(series)
    if mask is not None:
        present = present & mask  # a new array: pandas may hand out a read-only one
    if integer:
        if pd.api.types.is_unsigned_integer_dtype(series.dtype):
            # Beyond int64 they would wrap to negatives; clipping to the bounds comes later anyway.
            unsigned = series.to_numpy(dtype=np.uint64, na_value=0)
            ints = np.minimum(unsigned, np.iinfo(np.int64).max).astype(np.int64)
        else:
            ints = series.to_numpy(dtype=np.int64, na_value=0)
        out: NDArray[Any] = ints[present] if not present.all() else ints.copy()
        return out
    floats = kernels.as_float_array(series)
    return floats[present] if not present.all() else floats.copy()


# Integer columns: candidates by exact permute-and-flip; others: Smith's intervals (dpframe.selection.quantile).
_MECHANISMS = {True: "permute-and-flip over integer candidates", False: "exponential mechanism (Smith 2011)"}


def integer_valued(dtype: Any) -> bool:
    """Whether a column's quantiles are on integer candidates: decided by its dtype (schema), never its values.

    >>> integer_valued(np.dtype("int64")), integer_valued(np.dtype("float64"))
    (True, False)
    """
    return bool(pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))


def quantile_mechanism(dtype: Any) -> str:
    """The ledger name of the quantile mechanism for a column of this dtype.

    >>> quantile_mechanism(np.dtype("int32"))
    'permute-and-flip over integer candidates'
    """
    return _MECHANISMS[integer_valued(dtype)]
_SAMPLING = {True: "; exact permute-and-flip", False: "; interval choice in floating point"}


@dataclass(frozen=True)
class QuantileReads:
    """Where a quantile reads the values when they are not in the target (:mod:`dpframe.dask`): after the charge.

    ``counts(grid)``: on an integer grid, the :func:`~dpframe.selection.quantile.position_counts` of the values
    in use; ``ranked(grid)``: on a float grid, their number and the :class:`~dpframe.selection.quantile.Window`
    of spans of ranks of their cells; ``bounds``: the bounds step's reads (``bounds=None``).
    """

    counts: Callable[[QuantileGrid], NDArray[np.int64]]
    ranked: Callable[[QuantileGrid], tuple[int, Callable[[Sequence[tuple[int, int]]], list[Window]]]]
    bounds: BoundsReads | None = None


@dataclass(frozen=True)
class RankSelections:
    """The exponential-mechanism selections made from one set of values (a column, or one group's values): one per
    level, each at ``epsilon``, with a rank utility of sensitivity ``rows`` · max(q, 1 − q), ``rows`` the values one
    unit may add to the set (:mod:`dpframe.selection.quantile`: a unit adding j <= rows values costs each selection
    j/rows of its ε at most).

    >>> [round(rate, 6) for rate in RankSelections((0.5, 0.9), Fraction(1, 2), 2).rates]  # ε_q / (2Δ_q)
    [0.25, 0.138889]
    """

    levels: tuple[float, ...]
    epsilon: Fraction
    rows: int

    @property
    def rates(self) -> list[float]:
        """Each level's rate ε_q / (2Δ_q), rounded down a little so floating point cannot raise it."""
        return [float(self.epsilon) / (2 * self.rows * max(level, 1 - level)) * (1 - 2**-40) for level in self.levels]


def _sample_quantiles(grid: QuantileGrid, values: NDArray[Any], selections: RankSelections) -> list[float]:
    """The released quantiles of ``values`` (a fresh array, overwritten)."""
    reads = QuantileReads(lambda g: position_counts(g.positions(values), g.cells),
                          lambda g: (int(values.size), array_windows(g.to_cells(values))))
    return _sample_read_quantiles(grid, reads, selections)


def _sample_read_quantiles(grid: QuantileGrid, reads: QuantileReads, selections: RankSelections) -> list[float]:
    """The released quantiles of the values ``reads`` reads."""
    levels = list(selections.levels)
    if grid.integer:
        cells = sample_counted_quantiles(reads.counts(grid), grid.cells, levels, selections.epsilon, selections.rows)
    else:
        n, windows = reads.ranked(grid)
        cells = sample_quantile_windows(n, grid.cells, levels, selections.rates, windows)
    return [grid.value(cell) for cell in cells]


def _quantile_plan(
    target: Target, series: pd.Series[Any], bounds: Any, epsilon: float | None, rho: float | None,
    levels: list[float], query: str, bounds_reads: BoundsReads | None = None, group_bounds: GroupBounds | None = None,
) -> tuple[Privacy, tuple[float, float], QuantileGrid, RankSelections, str]:
    """The quantiles' privacy, bounds (found privately first if None), grid, selections and bounds note.

    Without ``group_bounds`` each set of values is selected from with the whole ε (after the bounds), a unit adding
    up to max_contributions values; with them, each group's with its :meth:`GroupBounds.per_group` share, a unit
    adding up to max_rows_per_group values to each of at most max_groups groups.
    """
    privacy = pure_privacy(target, epsilon, None, rho, query)
    bounds_text = ""
    if bounds is None:
        # Bounds first, privately, with their documented share; the quantiles get the rest.
        (lo, hi), rest, _ = automatic_bounds(target, series, privacy, query, check=lambda rest: None,
                                             reads=bounds_reads)
        bounds_text = "; " + bounds_note((lo, hi), privacy)
        privacy = rest
    else:
        lo, hi = check_bounds(bounds)
    integer = integer_valued(series.dtype)
    if group_bounds is None:
        per_values, rows = privacy, target.contributions
    else:
        per_values, rows = group_bounds.per_group(privacy), group_bounds.max_rows_per_group
    selections = RankSelections(tuple(levels), per_values.epsilon / len(levels), rows)
    return privacy, (lo, hi), QuantileGrid.choose(lo, hi, integer), selections, bounds_text


def grouped_quantile(
    target: Target,
    partitioning: Partitioning,
    column: Any,
    q: Any = 0.5,
    *,
    bounds: Any = None,
    epsilon: float | None = None,
    rho: float | None = None,
    read: CellReader | None = None,
    group_bounds: GroupBounds | None = None,
) -> pd.Series[Any] | pd.DataFrame:
    """Private quantile(s) of ``column`` in each (public) group: :func:`quantile` per group.

    Each row is in one group, so the groups share ``epsilon`` (parallel
    composition): a unit whose k rows fall in several groups changes each
    group's rank utility by its rows there, and the losses add up to at most
    ε. A number ``q`` gives a Series by group; a list, a frame with one column
    per level. ``read`` reads the values elsewhere than in ``target``: the automatic bounds
    (:meth:`CellReader.bounds_reads`) and each group's values (:meth:`CellReader.group_quantiles`, as
    :mod:`dpframe.dask.tables` does), or the rows in use (:meth:`CellReader.rows_in_use`).

    With ``group_bounds`` (``groupby(..., max_groups=L0, max_rows_per_group=L∞)``, read through a
    :class:`~dpframe.queries.partitioned.BoundedCellReader`) a unit adds at most L∞ rows to each of at most L0
    groups: each group's selections run at :meth:`GroupBounds.per_group` of the budget (ε/L0; ρ/L0 on zCDP) with
    a rank utility of sensitivity L∞·max(q, 1 − q), and a unit's losses over its groups add up to at most the
    whole (docs/contribution-bounds.md).

    >>> import pandas as pd, dpframe
    >>> from dpframe.queries.partitioned import Partitioning
    >>> df = pd.DataFrame({"k": pd.Categorical(["a", "b"] * 1000), "x": list(range(1000)) * 2})
    >>> target = Target.of(df.dp.protect(epsilon=1.0))
    >>> m = grouped_quantile(target, Partitioning.of(target, ["k"], None), "x", 0.5, bounds=(0, 1000), epsilon=1.0)
    >>> list(m.index), bool(abs(m["a"] - 499) < 30)
    (['a', 'b'], True)
    """
    query = "groupby median" if q == 0.5 else "groupby quantile"
    if not partitioning.public:
        raise ValueError(
            f"{query} needs public groups: declare keys=, use a categorical column, or release the groups first "
            "with groupby(...).count(...) (their categories are then remembered)"
        )
    levels, scalar = check_quantiles(q)
    series = target.column(column)
    check_numeric(series, query)
    privacy, (lo, hi), grid, selections, bounds_text = _quantile_plan(
        target, series, bounds, epsilon, rho, levels, query, None if read is None else read.bounds_reads(column),
        group_bounds)
    rule = "parallel composition over groups" if group_bounds is None else group_bounds.selection_rule(privacy)
    share = "ε" if group_bounds is None else f"ε_g={float(selections.epsilon * len(levels)):.4g}"
    plan = Plan(
        query, (str(column),), target, privacy, mechanism_name=_MECHANISMS[grid.integer],
        detail=f"{len(levels)} quantile(s) per group at {share}/{len(levels)} each, rank utility, sensitivity "
        f"{selections.rows}·max(q, 1-q), grid of {grid.cells} cells",
        rule=rule + (", sequential over quantiles" if len(levels) > 1 else ""),
    )
    plan.charge()
    group_reads = None if read is None else read.group_quantiles(partitioning, column)
    answers = []
    if group_reads is not None:
        cells = partitioning.index()
        for g in range(len(cells)):  # one selection per group, in the order of the pandas loop below
            answers.append(_sample_read_quantiles(grid, group_reads(g), selections))
    else:
        mask = (CellReader(target) if read is None else read).rows_in_use(partitioning)
        codes, cells = partitioning.codes(target, mask)
        present = kernels.present(series) & (codes >= 0)
        values = quantile_values(series, present, grid.integer)
        groups = codes[present]
        order = np.argsort(groups, kind="stable")
        starts = np.searchsorted(groups[order], np.arange(len(cells) + 1))
        ordered = values[order]
        for g in range(len(cells)):  # one selection per group (a loop over groups, not rows)
            in_group = ordered[starts[g]:starts[g + 1]].copy()
            answers.append(_sample_quantiles(grid, in_group, selections))
    reaches = [rank_reach(grid.cells, rate, LEVEL) for rate in selections.rates]
    note = (f"rank intervals, no value interval: with probability {LEVEL:.0%} each answer's rank is within "
            f"{max(reaches):.3g} of q·n of its group (of the clipped values; release.rank_reach per cell); a group "
            "without values gets a point chosen uniformly" + bounds_text)
    table = pd.DataFrame(answers, index=cells, columns=pd.Index(levels), dtype=float)
    nan = float("nan")
    result: pd.Series[Any] | pd.DataFrame = table[levels[0]].rename(column) if scalar else table
    empty = result * nan
    ranks = empty.fillna(reaches[0]) if scalar else pd.DataFrame([reaches] * len(table), index=table.index,
                                                                 columns=table.columns)
    release = Release(query, plan.columns, plan.mechanism, target.spent, empty, empty, empty, LEVEL, (lo, hi), note,
                      rank_reach=ranks)
    return with_release(result, release)  # type: ignore[no-any-return]


def quantile(
    series: Any,
    q: Any = 0.5,
    *,
    bounds: Any = None,
    epsilon: float | None = None,
    rho: float | None = None,
    query: str = "quantile",
    read: QuantileReads | None = None,
    rank_level: float = LEVEL,
) -> DPFloat | pd.Series[Any]:
    """Private quantile(s) of the values clipped to ``bounds``: the exponential mechanism of Smith (2011).

    A number ``q`` gives a :class:`DPFloat`; a list gives a Series indexed by
    ``q`` like ``Series.quantile``, each level with an equal share of ε
    (sequential composition). Integer columns (by dtype) get integer answers,
    chosen exactly by permute-and-flip over the integers in the bounds (every
    s-th beyond 2^16 of them) with a rank-balance score; others a point of a
    grid of about 2^32 cells over the bounds, whose utility is minus its
    rank's distance to q·n. The sensitivity is max_contributions ·
    max(q, 1 − q) on both. See :mod:`dpframe.selection.quantile` (linear
    time; on floats the interval choice uses floating point; the released
    value is always on a data-independent grid). The interval is in ranks (``release.rank_reach``, free: the
    mechanism's data-independent error bound): with probability 95% the answer's rank is within it of q·n. No
    value interval is given (mapping ranks to values would read the data). ``rank_level``: that probability
    (:func:`~dpframe.report.describe.describe` asks for all its percentiles at once). ``read`` reads the values
    elsewhere (:class:`QuantileReads`).

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"age": list(range(18, 91)) * 20}).dp.protect(epsilon=1.0)
    >>> m = quantile(p["age"], 0.5, bounds=(0, 125), epsilon=1.0)
    >>> abs(m - 54) <= 3, float(m).is_integer()
    (True, True)
    """
    levels, scalar = check_quantiles(q)
    target = Target.of(series)
    series = target.obj
    if not isinstance(series, pd.Series):
        raise TypeError(f"{query} is a question about one column: call it on a Series")
    check_numeric(series, query)
    privacy, (lo, hi), grid, selections, bounds_text = _quantile_plan(target, series, bounds, epsilon, rho, levels,
                                                                      query, None if read is None else read.bounds)
    contributions = target.contributions
    grid_text = ("integers" if grid.step == 1 else f"every {grid.step:.0f}th integer") if grid.integer else f"step {grid.step:.3g}"
    plan = Plan(
        query, (str(series.name),), target, privacy, mechanism_name=_MECHANISMS[grid.integer],
        detail=f"{len(levels)} quantile(s) at ε/{len(levels)} each, rank utility, sensitivity "
        f"{contributions}·max(q, 1-q), grid of {grid.cells} cells ({grid_text})",
        rule="sequential composition over quantiles" if len(levels) > 1 else "one ε-DP selection",
    )
    plan.charge()
    if read is None:
        answers = _sample_quantiles(grid, quantile_values(series, target.rows_in_use(), grid.integer), selections)
    else:
        answers = _sample_read_quantiles(grid, read, selections)
    reaches = [rank_reach(grid.cells, rate, rank_level) for rate in selections.rates]
    note = (
        f"rank interval, no value interval: with probability {rank_level:.0%} the answer's rank is within "
        f"{max(reaches):.3g} of q·n (of the clipped values; release.rank_reach){_SAMPLING[grid.integer]}" + bounds_text
    )
    nan = float("nan")
    if scalar:
        release = Release(query, plan.columns, plan.mechanism, target.spent, nan, nan, nan, rank_level, (lo, hi),
                          note, rank_reach=reaches[0])
        return DPFloat(answers[0], release)
    index = pd.Index(levels)
    result = pd.Series(answers, index=index, name=series.name)
    empty = pd.Series(nan, index=index)
    release = Release(query, plan.columns, plan.mechanism, target.spent, empty, empty, empty, rank_level, (lo, hi),
                      note, rank_reach=pd.Series(reaches, index=index))
    return with_release(result, release)  # type: ignore[no-any-return]


def median(
    series: Any, *, bounds: Any = None, epsilon: float | None = None, rho: float | None = None,
    read: QuantileReads | None = None,
) -> DPFloat:
    """Private median of the values clipped to ``bounds``: :func:`quantile` at 0.5.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 100.0] * 200}).dp.protect(epsilon=1.0)
    >>> abs(median(p["x"], bounds=(0, 200), epsilon=1.0) - 3) < 0.5
    True
    """
    result = quantile(series, 0.5, bounds=bounds, epsilon=epsilon, rho=rho, query="median", read=read)
    assert isinstance(result, DPFloat)
    return result

