"""Private chi-squared tests: goodness of fit and independence, with p-values valid under the noise.

A chi-squared test on a noisy table is not a chi-squared test: the noise adds
to every cell's deviation, so Pearson's statistic is larger than its
chi-squared reference distribution says, and a true null hypothesis is
rejected far more often than the nominal level (``docs/hypothesis-tests.md``).

These tests release the table once -- noisy counts of public categories with
the library's exact discrete noise, charged like ``value_counts`` or
``crosstab`` (parallel composition over cells) -- and compute everything else
from the released table, which is post-processing and costs nothing more:

1. the statistic: Pearson's, with each cell's noise variance added to its
   expected count in the denominator, ``Q = sum (X~ - E)^2 / (E + sigma^2)``
   (the noise-aware weighting of Rogers & Kifer 2017; equal to Pearson's when
   there is no noise, and defined when an expected count is 0);
2. the p-value by Monte Carlo under the null *including the noise* (a
   parametric bootstrap: Gaboardi, Lim, Rogers & Vadhan 2016, MC-GOF and
   MC-Indep): ``m`` tables are drawn from the null multinomial, given fresh
   noise of the same distribution, and their statistics compared with the
   observed one, ``p = (1 + #{Q* >= Q}) / (m + 1)``.

The number of rows ``n`` is private. The tests use the noisy total of the
released table (the sum of its cells: free), and simulate the null at that
``n``. For independence the null's margins are unknown too: they are estimated
from the noisy table's margins, and each simulated table's statistic
re-estimates its own. Both plug-ins are approximations, accurate when the
counts are large compared with the noise; the tests in
``tests/test_hypothesis.py`` and ``benchmarks/bench_chisquare.py`` measure the
resulting p-values' uniformity and type-I error.

The Monte Carlo draws are seeded from :func:`~dpframe.noise.random.current_source`
(so a seeded test run is reproducible); they need not be secret, since they
only post-process the released table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.costs import Cost
from dpframe.noise.mechanism import NoiseSpec, Privacy
from dpframe.noise.random import current_source
from dpframe.queries.partitioned import CellReader, KeySpec, Partitioning, _count_release, release_counts
from dpframe.queries.plan import Target
from dpframe.results import with_release

Floats = NDArray[np.float64]

@dataclass(frozen=True)
class ChiSquareResult:
    """The outcome of a private chi-squared test, like scipy's ``statistic`` and ``pvalue``, with what it assumed.

    ``table`` is the released noisy table (it carries its release, as a
    crosstab does); ``expected`` the counts the null predicts for it (from
    the noisy total, and for independence the noisy margins); ``n`` the
    noisy total used as the test's number of rows; ``dof`` the classical
    test's degrees of freedom (for reference: the p-value does not use the
    chi-squared distribution).
    """

    test: Literal["goodness of fit", "independence"]
    statistic: float
    pvalue: float
    dof: int
    n: float
    table: pd.Series[Any] | pd.DataFrame = field(repr=False)
    expected: pd.Series[Any] | pd.DataFrame = field(repr=False)
    simulations: int
    noise: str
    cost: Cost
    assumptions: tuple[str, ...] = field(repr=False)

    def __repr__(self) -> str:
        return (f"ChiSquareResult({self.test}: statistic={self.statistic:.4g}, pvalue={self.pvalue:.4g}, "
                f"n≈{self.n:.0f}, {self.simulations} simulations under the null with {self.noise} noise)")


def noise_draws(noise: NoiseSpec, size: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.int64]:
    """Draws of ``noise``'s distribution for the simulation (numpy, not the secure source: they release nothing).

    Discrete Laplace of scale t is the difference of two geometric variables
    with ratio e^(-1/t); the discrete Gaussian is sampled from it by rejection
    (Canonne, Kamath & Steinke 2020, Alg. 3), both exactly up to float rounding.

    >>> rng = np.random.default_rng(0)
    >>> draws = noise_draws(NoiseSpec("gaussian", __import__("fractions").Fraction(4)), (200_000,), rng)
    >>> bool(abs(draws.var() - 4) < 0.1)
    True
    """
    count = math.prod(size)
    if noise.mechanism == "laplace":
        return _laplace(float(noise.param), count, rng).reshape(size)
    sigma2 = float(noise.param)
    scale = math.floor(math.sqrt(sigma2)) + 1
    out = np.empty(0, dtype=np.int64)
    while len(out) < count:
        # Acceptance is at least about 0.5, so twice what is missing is usually enough.
        candidates = _laplace(float(scale), 2 * (count - len(out)) + 16, rng)
        accept = rng.random(len(candidates)) < np.exp(-((np.abs(candidates) - sigma2 / scale) ** 2) / (2 * sigma2))
        out = np.r_[out, candidates[accept]]
    return out[:count].reshape(size)


def _laplace(scale: float, count: int, rng: np.random.Generator) -> NDArray[np.int64]:
    success = -math.expm1(-1.0 / scale)
    draws: NDArray[np.int64] = rng.geometric(success, count) - rng.geometric(success, count)
    return draws


def goodness_of_fit_statistic(tables: Floats, proportions: Floats, variance: float) -> Floats:
    """Noise-aware Pearson statistic of each table (last axis: cells) against the null ``proportions``.

    The expected counts use each table's own total (``n`` is not public).

    >>> float(goodness_of_fit_statistic(np.array([30.0, 70.0]), np.array([0.5, 0.5]), 0.0))
    16.0
    """
    total = np.clip(tables.sum(axis=-1, keepdims=True), 0, None)
    expected = total * proportions
    statistic: Floats = ((tables - expected) ** 2 / (expected + variance)).sum(axis=-1)
    return statistic


def independence_expected(tables: Floats) -> Floats:
    """The counts independence predicts for each table (last two axes: rows, columns), from its own margins.

    Negative noisy margins count as 0; a table with no positive margin is spread uniformly.

    >>> independence_expected(np.array([[10.0, 30.0], [10.0, 50.0]])).tolist()
    [[8.0, 32.0], [12.0, 48.0]]
    """
    rows = np.clip(tables.sum(axis=-1), 0, None)
    columns = np.clip(tables.sum(axis=-2), 0, None)
    total = np.clip(tables.sum(axis=(-2, -1)), 0, None)[..., None]
    row_p = np.where(rows.sum(-1, keepdims=True) > 0, rows / np.maximum(rows.sum(-1, keepdims=True), 1e-300),
                     1 / rows.shape[-1])
    column_p = np.where(columns.sum(-1, keepdims=True) > 0,
                        columns / np.maximum(columns.sum(-1, keepdims=True), 1e-300), 1 / columns.shape[-1])
    expected: Floats = (total * row_p)[..., :, None] * column_p[..., None, :]
    return expected


def independence_statistic(tables: Floats, variance: float) -> Floats:
    """Noise-aware Pearson statistic of independence of each table (last two axes).

    >>> round(float(independence_statistic(np.array([[10.0, 30.0], [10.0, 50.0]]), 0.0)), 4)
    1.0417
    """
    expected = independence_expected(tables)
    statistic: Floats = ((tables - expected) ** 2 / (expected + variance)).sum(axis=(-2, -1))
    return statistic


def monte_carlo_pvalue(observed: float, simulated: Floats) -> float:
    """``(1 + #{simulated >= observed}) / (m + 1)``: valid at every level when the null is simulated exactly.

    >>> monte_carlo_pvalue(5.0, np.array([1.0, 2.0, 7.0]))
    0.5
    """
    return float((1 + np.count_nonzero(simulated >= observed)) / (len(simulated) + 1))


def null_tables(n: int, proportions: Floats, noise: NoiseSpec, simulations: int,
                rng: np.random.Generator) -> Floats:
    """``simulations`` noisy tables under the null: multinomial(n, proportions) counts plus fresh noise."""
    counts = rng.multinomial(n, proportions, size=simulations)
    tables: Floats = (counts + noise_draws(noise, counts.shape, rng)).astype(np.float64)
    return tables


def goodness_of_fit_test(noisy: Floats, proportions: Floats, noise: NoiseSpec, simulations: int,
                         rng: np.random.Generator) -> tuple[float, float]:
    """Statistic and Monte Carlo p-value of a noisy table against the null ``proportions`` (MC-GOF).

    >>> from fractions import Fraction
    >>> rng = np.random.default_rng(0)
    >>> statistic, pvalue = goodness_of_fit_test(np.array([260.0, 240.0, 500.0]), np.array([0.25, 0.25, 0.5]),
    ...                                          NoiseSpec("laplace", Fraction(1)), 999, rng)
    >>> pvalue > 0.3
    True
    """
    n = max(round(float(noisy.sum())), 0)
    variance = noise.std**2
    statistic = float(goodness_of_fit_statistic(noisy, proportions, variance))
    simulated = goodness_of_fit_statistic(null_tables(n, proportions, noise, simulations, rng), proportions,
                                          variance)
    return statistic, monte_carlo_pvalue(statistic, simulated)


def independence_test(noisy: Floats, noise: NoiseSpec, simulations: int,
                      rng: np.random.Generator) -> tuple[float, float]:
    """Statistic and Monte Carlo p-value of independence of a noisy (rows, columns) table (MC-Indep).

    The null is independence with the margins estimated from the noisy table.

    >>> from fractions import Fraction
    >>> rng = np.random.default_rng(0)
    >>> statistic, pvalue = independence_test(np.array([[200.0, 100.0], [20.0, 180.0]]),
    ...                                       NoiseSpec("laplace", Fraction(1)), 999, rng)
    >>> pvalue < 0.01
    True
    """
    n = max(round(float(noisy.sum())), 0)
    variance = noise.std**2
    statistic = float(independence_statistic(noisy, variance))
    null = independence_expected(noisy)
    total = null.sum()
    proportions = null.ravel() / total if total > 0 else np.full(null.size, 1 / null.size)
    simulated = null_tables(n, proportions, noise, simulations, rng).reshape((simulations, *noisy.shape))
    return statistic, monte_carlo_pvalue(statistic, independence_statistic(simulated, variance))


def _generator() -> np.random.Generator:
    """The simulation's generator, seeded from the current source (reproducible under ``seeded_noise``)."""
    return np.random.default_rng([int(word) for word in current_source().words(4)])


def check_simulations(simulations: Any) -> int:
    """At least 99 simulated tables (a p-value resolves to 1/(m+1)).

    The accessor's default, 999, resolves p-values to 1/1000; the Monte Carlo
    error of a p-value near 0.05 is then about 0.007 (binomial).

    >>> check_simulations(10)
    Traceback (most recent call last):
    ...
    ValueError: simulations must be an integer >= 99 (the p-value resolves to 1/(simulations+1)), got 10
    """
    if isinstance(simulations, bool) or not isinstance(simulations, (int, np.integer)) or simulations < 99:
        raise ValueError("simulations must be an integer >= 99 (the p-value resolves to 1/(simulations+1)), "
                         f"got {simulations!r}")
    return int(simulations)


def _null_proportions(expected: Any, keys: pd.Index[Any]) -> Floats:
    """The null's proportions over ``keys`` from ``expected`` (None: uniform; values: any positive scale)."""
    if expected is None:
        return np.full(len(keys), 1 / len(keys))
    values = pd.Series(expected).reindex(keys) if isinstance(expected, (Mapping, pd.Series)) else expected
    try:
        weights = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"expected must hold numbers (proportions or counts), got {expected!r}") from None
    if weights.shape != (len(keys),):
        raise ValueError(f"expected has {weights.size} values but there are {len(keys)} categories "
                         f"({list(keys)}); give one per category, in that order, or a dict by category")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError("expected must be finite, non-negative and not all zero (proportions, or counts that "
                         "are rescaled to proportions)")
    proportions: Floats = weights / weights.sum()
    return proportions


def _assumptions(n: float, k: int, extra: Sequence[str], simulations: int) -> tuple[str, ...]:
    rows = ("rows are independent draws from one distribution over the cells (multinomial sampling), as in "
            "scipy's test" + ("" if k == 1 else f"; a privacy unit contributes up to {k} rows, which the test "
                                               "treats as independent"))
    return (
        rows,
        f"n is private: the test's n is the released table's noisy total, {n:.0f} (rows with a value in the "
        "categories; missing values and values outside the categories are not counted), and the null is "
        "simulated at that n",
        *extra,
        f"p-value by Monte Carlo: {simulations} noisy tables simulated under the null with the release's own "
        f"noise distribution, p = (1 + #(simulated >= observed)) / {simulations + 1}",
    )


def chisquare(target: Target, column: Any, expected: Any, keys: KeySpec, privacy_of: Callable[[Target], Privacy],
              simulations: int, read: CellReader | None = None) -> ChiSquareResult:
    """Goodness of fit of ``column``'s categories to the public proportions ``expected`` (see module docstring).

    ``privacy_of(target)`` resolves the privacy arguments (after the
    categories are known to be public, so that bad input costs nothing).
    ``read`` (default: the rows of the target) gives the exact counts after the charge.
    """
    simulations = check_simulations(simulations)
    if isinstance(expected, (Mapping, pd.Series)):
        if keys is not None:
            raise ValueError("give the categories once: as the keys of expected, or as keys= with expected a list")
        keys = list(pd.Series(expected).index)
    partitioning = Partitioning.of(target, [column], keys)
    _require_public(partitioning, "chisquare")
    cells = partitioning.index()
    proportions = _null_proportions(expected, cells)
    privacy = privacy_of(target)
    counts = release_counts("chisquare", target, partitioning, privacy, (str(column),),
                            rule="parallel composition over categories; the test is post-processing", read=read)
    statistic, pvalue = goodness_of_fit_test(counts.noisy, proportions, counts.noise, simulations, _generator())
    n = float(counts.noisy.sum())
    table = pd.Series(counts.noisy.astype(np.int64), index=cells, name="count")
    table = with_release(table, _count_release(counts.plan, counts.noise, table.copy(), "the test's released table"))
    expected_counts = pd.Series(max(n, 0.0) * proportions, index=cells, name="expected")
    return ChiSquareResult(
        "goodness of fit", statistic, pvalue, len(cells) - 1, n, table, expected_counts, simulations,
        counts.noise.name, target.spent,
        _assumptions(n, target.contributions, [], simulations),
    )


def chi2_contingency(target: Target, index: Any, columns: Any, keys: KeySpec, privacy_of: Callable[[Target], Privacy],
                     simulations: int, read: CellReader | None = None) -> ChiSquareResult:
    """Independence of two columns' categories (see module docstring; ``read`` as in :func:`chisquare`)."""
    simulations = check_simulations(simulations)
    partitioning = Partitioning.of(target, [index, columns], keys)
    _require_public(partitioning, "chi2_contingency")
    rows, cols = partitioning.keys
    assert rows is not None and cols is not None
    if len(rows) < 2 or len(cols) < 2:
        raise ValueError("a test of independence needs at least two categories in each column")
    privacy = privacy_of(target)
    counts = release_counts("chi2_contingency", target, partitioning, privacy, (str(index), str(columns)),
                            rule="parallel composition over cells; the test is post-processing", read=read)
    noisy = counts.noisy.reshape(len(rows), len(cols))
    statistic, pvalue = independence_test(noisy, counts.noise, simulations, _generator())
    n = float(noisy.sum())
    table = pd.DataFrame(noisy.astype(np.int64), index=rows.rename(index), columns=cols.rename(columns))
    table = with_release(table, _count_release(counts.plan, counts.noise, table.copy(), "the test's released table"))
    expected = pd.DataFrame(independence_expected(noisy), index=table.index, columns=table.columns)
    margins = ("the null's margins are estimated from the noisy table's margins, and each simulated table "
               "re-estimates its own (parametric bootstrap, Gaboardi et al. 2016 MC-Indep): an approximation, "
               "accurate when the margins are large compared with the noise")
    return ChiSquareResult(
        "independence", statistic, pvalue, (len(rows) - 1) * (len(cols) - 1), n, table, expected, simulations,
        counts.noise.name, target.spent,
        _assumptions(n, target.contributions, [margins], simulations),
    )


def _require_public(partitioning: Partitioning, query: str) -> None:
    if not partitioning.public:
        missing = [str(c) for c, k in zip(partitioning.columns, partitioning.keys) if k is None]
        raise ValueError(
            f"{query} needs public categories for {missing}: declare them with keys=[...] (or expected as a "
            "dict by category), or give the column a categorical dtype; a test on privately selected "
            "categories would not be valid"
        )
