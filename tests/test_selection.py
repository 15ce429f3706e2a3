"""Private selection: exact mechanisms, their distributions and privacy, and the selection queries.

Statistical assertions use the ``seeded`` fixture (deterministic) and
thresholds that a correct implementation would fail with probability below
1e-6 even with fresh randomness.
"""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.stats import beta, chi2

from dpframe import Ledger, agg
import dpframe
from dpframe.selection import exponential as em
from dpframe.selection import quantile as qm
from dpframe.selection.exponential import (
    exponential_mechanism,
    permute_and_flip,
    report_noisy_max,
    top_k,
)
from dpframe.testing import NotPrivateWarning, seeded_noise

ALPHA = 1e-6


def draws(scores: list[float], mechanism: str, n: int, epsilon: float = 1.0, sensitivity: float = 1.0,
          monotonic: bool = False) -> np.ndarray[Any, Any]:
    """``n`` selections through the shared core (the same code as the public functions)."""
    values = em.as_scores(scores, strict=True)
    return em.choose(values, em.check_sensitivity(sensitivity), Fraction(epsilon), mechanism,  # type: ignore[arg-type]
                     monotonic, size=n)


def chi_square_ok(observed: np.ndarray[Any, Any], probabilities: np.ndarray[Any, Any]) -> bool:
    expected = probabilities * observed.sum()
    stat = float(np.sum((observed - expected) ** 2 / expected))
    return stat < chi2.isf(ALPHA, len(probabilities) - 1)


# --- the pure mechanisms ------------------------------------------------------------------


@pytest.mark.parametrize("function", [exponential_mechanism, permute_and_flip, report_noisy_max])
def test_mechanisms_pick_a_clear_winner(seeded: None, function: Any) -> None:
    # The runner-up is 100 behind: a wrong pick has probability below 10 * e^-25.
    scores = [3.0, 7.0, 107.0, 5.0, -np.inf, 0.0, 1.0, 2.0, 4.0, 6.0]
    assert all(function(scores, 1.0, 1.0) == 2 for _ in range(20))


@pytest.mark.parametrize("mechanism", ["exponential", "permute_and_flip", "report_noisy_max"])
def test_best_is_picked_at_the_claimed_rate(seeded: None, mechanism: str) -> None:
    scores = [0.0, 2.0, 4.0, 6.0]
    n = 100_000
    picked = draws(scores, mechanism, n)
    rate = float(np.mean(picked == 3))
    if mechanism == "report_noisy_max":
        p = laplace_noisy_max_probabilities(scores, scale=2.0)[3]
    else:
        p = em.exact_probabilities(scores, 1.0, 1.0, mechanism)[3]
    assert abs(rate - p) < 5.5 * math.sqrt(p * (1 - p) / n)


def permutation_probabilities(scores: list[float], epsilon: float, sensitivity: float) -> np.ndarray[Any, Any]:
    """Permute-and-flip by brute force over every order and every coin outcome."""
    q = np.asarray(scores)
    p = np.exp(epsilon * (q - q.max()) / (2 * sensitivity))
    m = len(q)
    out = np.zeros(m)
    orders = list(itertools.permutations(range(m)))
    for order in orders:
        reach = 1.0  # probability that every earlier candidate in this order refused
        for r in order:
            out[r] += reach * p[r] / len(orders)
            reach *= 1 - p[r]
    return out


def test_permute_and_flip_closed_form_matches_enumeration() -> None:
    scores = [0.0, 1.5, 2.0, 3.7]
    assert np.allclose(em.exact_probabilities(scores, 1.0, 1.3, "permute_and_flip"),
                       permutation_probabilities(scores, 1.3, 1.0), atol=1e-12)


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("mechanism", ["exponential", "permute_and_flip"])
def test_output_distribution_matches_theory(seeded: None, mechanism: str, monotonic: bool) -> None:
    scores = [0.0, 1.0, 2.5, 3.0]
    # Monotone scores use e^(eps q / Delta): the ideal mechanism at 2 * epsilon.
    epsilon, ideal_epsilon = 0.8, (1.6 if monotonic else 0.8)
    picked = draws(scores, mechanism, 200_000, epsilon=epsilon, sensitivity=1.0, monotonic=monotonic)
    observed = np.bincount(picked, minlength=4)
    assert chi_square_ok(observed, em.exact_probabilities(scores, 1.0, ideal_epsilon, mechanism))


def laplace_noisy_max_probabilities(scores: list[float], scale: float) -> np.ndarray[Any, Any]:
    """P(candidate r has the largest score + Laplace(scale)), by numerical integration."""
    q = np.asarray(scores)

    def cdf(x: float) -> float:
        return 0.5 * math.exp(x / scale) if x < 0 else 1 - 0.5 * math.exp(-x / scale)

    def win(r: int) -> float:
        others = [j for j in range(len(q)) if j != r]
        density = lambda z: math.exp(-abs(z) / scale) / (2 * scale) * math.prod(  # noqa: E731
            cdf(q[r] + z - q[j]) for j in others)
        return float(integrate.quad(density, -60 * scale, 60 * scale, points=[0.0], limit=200)[0])

    return np.array([win(r) for r in range(len(q))])


def test_report_noisy_max_laplace_distribution(seeded: None) -> None:
    scores = [0.0, 1.0, 2.0]
    picked = draws(scores, "report_noisy_max", 200_000, epsilon=1.0)
    assert chi_square_ok(np.bincount(picked, minlength=3), laplace_noisy_max_probabilities(scores, 2.0))
    monotone = draws(scores, "report_noisy_max", 200_000, epsilon=1.0, monotonic=True)
    assert chi_square_ok(np.bincount(monotone, minlength=3), laplace_noisy_max_probabilities(scores, 1.0))


def test_gumbel_and_exponential_noise_are_the_exact_mechanisms(seeded: None) -> None:
    from dpframe.testing import seeded_noise

    scores = [1.0, 4.0, 2.0, 3.5]
    for noise, function in [("gumbel", exponential_mechanism), ("exponential", permute_and_flip)]:
        with seeded_noise(3):
            a = [report_noisy_max(scores, 1.0, 0.7, noise=noise) for _ in range(30)]
        with seeded_noise(3):
            b = [function(scores, 1.0, 0.7) for _ in range(30)]
        assert a == b


def test_quantisation_only_lowers_epsilon() -> None:
    for sensitivity, epsilon in [(1, Fraction(1)), (3.7, Fraction(1, 10)), (1e-6, Fraction(5)), (2.0, Fraction(1, 10**7))]:
        d = em.Deficits.of(np.array([0.0, sensitivity]), em.check_sensitivity(sensitivity), epsilon, monotonic=False)
        # The exponent of a candidate one sensitivity behind, exactly: it must not exceed eps/2.
        effective = Fraction(d.rate, 2**56) * int(d.gaps[0])
        assert effective <= epsilon / 2
        assert effective >= epsilon / 2 * (1 - Fraction(1, 2**7))


def test_all_minus_infinity_is_uniform_and_nan_is_lowest(seeded: None) -> None:
    picked = draws([-np.inf] * 4, "permute_and_flip", 40_000)
    assert chi_square_ok(np.bincount(picked, minlength=4), np.full(4, 0.25))
    data_scores = em.as_scores([np.nan, 5.0, np.nan], strict=False)
    assert data_scores.tolist() == [-np.inf, 5.0, -np.inf]
    assert set(em.choose(data_scores, Fraction(1), Fraction(1), "exponential", False, size=200).tolist()) == {1}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: permute_and_flip([1.0, np.nan], 1, 1), "NaN"),
        (lambda: permute_and_flip([1.0, np.inf], 1, 1), r"\+inf"),
        (lambda: permute_and_flip([], 1, 1), "non-empty"),
        (lambda: permute_and_flip([[1.0, 2.0]], 1, 1), "one-dimensional"),
        (lambda: permute_and_flip([1.0], 0, 1), "sensitivity must be > 0"),
        (lambda: permute_and_flip([1.0], float("inf"), 1), "finite"),
        (lambda: exponential_mechanism([1.0], 1, 0), "epsilon must be > 0"),
        (lambda: exponential_mechanism([1.0], 1, -1), "epsilon must be > 0"),
        (lambda: report_noisy_max([1.0], 1, 1, noise="cauchy"), "noise must be one of"),
        (lambda: top_k([1.0, 2.0], 3, 1, 1), "exceeds the number of candidates"),
        (lambda: top_k([1.0, 2.0], 0, 1, 1), "k must be >= 1"),
        (lambda: top_k([1.0, 2.0], 1, 1, 1, mechanism="best"), "mechanism must be one of"),
    ],
)
def test_mechanism_argument_errors(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_top_k_peels_in_order(seeded: None) -> None:
    assert top_k([10.0, 300.0, 50.0, 200.0, 0.0], 3, 1.0, 3.0) == [1, 3, 2]
    assert top_k([10.0, 300.0, 50.0, 200.0, 0.0], 3, 1.0, 3.0, mechanism="exponential") == [1, 3, 2]
    assert sorted(top_k([1.0, 2.0, 3.0], 3, 1.0, 0.001)) == [0, 1, 2]  # every candidate, once


# --- empirical privacy of report-noisy-max -------------------------------------------------


def _loss_lower_bound(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], m: int) -> float:
    """Clopper-Pearson lower confidence bound on max_r |log P_a(r)/P_b(r)| (Bonferroni over 2m pairs)."""
    n = len(a)
    level = ALPHA / (4 * m)
    ka, kb = np.bincount(a, minlength=m), np.bincount(b, minlength=m)
    best = 0.0
    for kx, ky in [(ka, kb), (kb, ka)]:
        lower = np.where(kx > 0, beta.ppf(level, np.maximum(kx, 1), n - kx + 1), 0.0)
        upper = np.where(ky < n, beta.ppf(1 - level, ky + 1, np.maximum(n - ky, 1)), 1.0)
        ok = lower > 0
        best = max(best, float(np.max(np.log(lower[ok] / upper[ok]))))
    return best


def _neighbour_draws(mechanism: str, epsilon: float, monotonic: bool, n: int = 1_000_000) -> tuple[Any, Any]:
    # Counts (monotone): one count differs by 1. General scores: one up, one down by Delta.
    d, d_prime = ([5.0, 5.0], [6.0, 5.0]) if monotonic else ([5.0, 5.0], [6.0, 4.0])
    return draws(d, mechanism, n, epsilon, monotonic=monotonic), draws(d_prime, mechanism, n, epsilon, monotonic=monotonic)


@pytest.mark.parametrize("monotonic", [False, True])
def test_report_noisy_max_empirical_privacy(seeded: None, monotonic: bool) -> None:
    epsilon = 1.0
    a, b = _neighbour_draws("report_noisy_max", epsilon, monotonic)
    loss = _loss_lower_bound(a, b, 2)
    assert loss <= epsilon
    assert loss >= 0.5  # the true loss here is log(0.5 / (3 e^-1 / 4)) = 0.594: the audit sees it
    # Half the noise (twice the claimed epsilon): the true loss, 1.31, exceeds the claim and is flagged.
    a, b = _neighbour_draws("report_noisy_max", 2 * epsilon, monotonic)
    assert _loss_lower_bound(a, b, 2) > epsilon * 1.2


@pytest.mark.parametrize("mechanism", ["exponential", "permute_and_flip"])
def test_exact_mechanisms_empirical_privacy(seeded: None, mechanism: str) -> None:
    a, b = _neighbour_draws(mechanism, 1.0, monotonic=False, n=400_000)
    assert _loss_lower_bound(a, b, 2) <= 1.0
    a, b = _neighbour_draws(mechanism, 1.0, monotonic=True, n=400_000)
    assert _loss_lower_bound(a, b, 2) <= 1.0


# --- quantile mechanism -------------------------------------------------------------------


def exact_cell_probabilities(data: list[int], cells: int, q: float, rate: float) -> np.ndarray[Any, Any]:
    x = np.sort(np.asarray(data))
    t = q * len(x)
    k = np.arange(cells)
    below = np.searchsorted(x, k, side="left")
    up_to = np.searchsorted(x, k, side="right")
    distance = np.maximum(np.maximum(below - t, t - up_to), 0.0)
    w = np.exp(-rate * distance)
    probabilities: np.ndarray[Any, Any] = w / w.sum()
    return probabilities


def test_quantile_cells_follow_the_exponential_mechanism(seeded: None) -> None:
    data, cells, q, rate = [2, 2, 5, 7, 7, 7, 11], 14, 0.4, 0.6
    picked = [qm.sample_quantile_cells(np.array(data), cells, [q], [rate])[0] for _ in range(20_000)]
    assert chi_square_ok(np.bincount(picked, minlength=cells), exact_cell_probabilities(data, cells, q, rate))


def test_quantile_window_and_full_sort_agree(seeded: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpframe.testing import seeded_noise

    rng = np.random.default_rng(1)
    data = rng.integers(0, 5000, 200_000)
    results = []
    for sort_below in (0, 10**9):  # partition windows, then a full sort
        monkeypatch.setattr(qm, "_SORT_BELOW", sort_below)
        with seeded_noise(9):
            results.append(qm.sample_quantile_cells(data.copy(), 5000, [0.1, 0.5, 0.97], [0.5, 0.5, 0.5]))
    assert results[0] == results[1]
    assert [abs(r - e) <= 3 for r, e in zip(results[0], np.quantile(data, [0.1, 0.5, 0.97]))] == [True] * 3


def test_quantile_of_empty_data_is_uniform_over_the_grid(seeded: None) -> None:
    picked = [qm.sample_quantile_cells(np.array([], dtype=np.int64), 4, [0.5], [1.0])[0] for _ in range(4000)]
    assert chi_square_ok(np.bincount(picked, minlength=4), np.full(4, 0.25))


def integer_candidate_scores(data: list[int], candidates: int, q: float, epsilon: float) -> np.ndarray[Any, Any]:
    """The integer-candidate score, written out independently of the module (floats, rank units)."""
    x, n, c = np.sort(np.asarray(data)), len(data), np.arange(candidates)
    below, up_to = np.searchsorted(x, c, side="left"), np.searchsorted(x, c, side="right")
    balance = np.abs(below - q * (n - (up_to - below)))
    interval = np.maximum(np.maximum(below - q * n, q * n - up_to), 0.0)
    scores: np.ndarray[Any, Any] = -np.minimum(balance, interval + 3 * 2 * max(q, 1 - q) / epsilon)
    return scores


def test_integer_candidates_follow_permute_and_flip(seeded: None) -> None:
    data, cells, q, epsilon = [2, 2, 5, 7, 7, 7, 11], 14, 0.4, 1.5
    grid = qm.QuantileGrid.choose(0, cells - 1, integer=True)
    picked = [qm.sample_integer_quantiles(grid.positions(np.array(data)), cells, [q], Fraction(epsilon), 1)[0]
              for _ in range(20_000)]
    expected = em.exact_probabilities(integer_candidate_scores(data, cells, q, epsilon), max(q, 1 - q), epsilon,
                                      "permute_and_flip")
    assert chi_square_ok(np.bincount(picked, minlength=cells), expected)


def test_integer_candidates_prefer_the_tied_median_to_an_empty_neighbour(seeded: None) -> None:
    # The balance score alone would prefer 6..9 (b = 50) to 10 (b = 100), which holds the median.
    scores = integer_candidate_scores([5] * 200 + [10] * 300, 11, 0.5, 1.0)
    assert int(np.argmax(scores)) == 10 and scores[7] < scores[10] - 40
    grid = qm.QuantileGrid.choose(0, 10, integer=True)
    deficits = qm.integer_quantile_deficits(grid.positions(np.array([5] * 200 + [10] * 300)), 11, 0.5, Fraction(1), 1)
    near = scores - scores.max() > -60  # farther gaps are clamped (e^-64 of the best)
    assert np.allclose((-deficits.gaps / (deficits.unit << 20))[near], (scores - scores.max())[near])


def test_integer_grid_is_coarse_beyond_the_candidate_limit(seeded: None) -> None:
    grid = qm.QuantileGrid.choose(0, 10**7, integer=True)
    assert grid.cells <= qm.MAX_CANDIDATES and grid.step == 153 and grid.value(grid.cells - 1) <= 10**7
    x = np.random.default_rng(3).integers(0, 10**7, 50_000)
    p = pd.DataFrame({"x": x}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    m = p["x"].dp.median(bounds=(0, 10**7), epsilon=1.0)
    assert float(m) % 153 == 0 and abs(m - np.median(x)) < 3000
    assert m.mechanism == "permute-and-flip over integer candidates"


def test_integer_median_accuracy_seeded() -> None:
    # Ages like Adult's: 300 values, bounds (0, 125), epsilon = 1. The interval mechanism's RMSE was 0.36 here.
    from dpframe.testing import seeded_noise

    rng = np.random.default_rng(5)
    errors = []
    with seeded_noise(11):
        for _ in range(150):
            ages = np.clip(np.rint(rng.gamma(6.0, 6.5, 300) + 17), 17, 90).astype(np.int64)
            p = pd.DataFrame({"age": ages}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
            errors.append(float(p["age"].dp.median(bounds=(0, 125), epsilon=1.0)) - float(np.median(ages)))
    e = np.asarray(errors)
    assert np.sqrt(np.mean(e**2)) < 0.5 and abs(np.mean(e)) < 0.15


def test_integer_path_is_chosen_by_dtype_not_by_values(seeded: None) -> None:
    # Whole-number floats stay on the float grid; an integer column is on integer candidates.
    whole = pd.DataFrame({"f": np.arange(100.0), "i": np.arange(100)}).dp.protect(ledger=Ledger.in_memory(),
                                                                                   epsilon=2.0)
    assert whole["f"].dp.median(bounds=(0, 125), epsilon=1.0).mechanism == "exponential mechanism (Smith 2011)"
    assert whole["i"].dp.median(bounds=(0, 125), epsilon=1.0).mechanism == "permute-and-flip over integer candidates"


# --- queries: quantiles ---------------------------------------------------------------------


def test_median_of_a_known_distribution(seeded: None) -> None:
    x = np.random.default_rng(2).normal(50, 10, 100_000)
    p = pd.DataFrame({"x": x}).dp.protect(ledger=Ledger.in_memory(), epsilon=2.0)
    m = p["x"].dp.median(bounds=(0, 100), epsilon=1.0)
    assert isinstance(m, dpframe.DPFloat)
    assert abs(m - np.median(x)) < 0.05
    assert m.mechanism == "exponential mechanism (Smith 2011)"
    assert math.isnan(m.std) and "rank" in m.release.note and m.release.bounds == (0.0, 100.0)


def test_quantile_list_returns_series_indexed_by_q(seeded: None, people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    qs = p["income"].dp.quantile([0.1, 0.5, 0.9], bounds=(0, 500_000), epsilon=0.6)
    assert isinstance(qs, pd.Series) and list(qs.index) == [0.1, 0.5, 0.9] and qs.name == "income"
    exact = people["income"].quantile([0.1, 0.5, 0.9])
    assert (abs(qs - exact) / exact < 0.05).all()
    assert qs.is_monotonic_increasing
    release = qs.attrs["dp"]
    assert release.query == "quantile" and release.std.isna().all() and "dpframe" not in qs.attrs
    assert p.dp.budget.spent.epsilon.exact == Fraction(3, 5)
    ledger = p.dp.budget.ledger
    assert ledger["rule"].iloc[-1] == "sequential composition over quantiles" and "3 quantile(s)" in ledger["noise"].iloc[-1]


def test_integer_columns_get_integer_quantiles(seeded: None, people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    m = p["age"].dp.median(bounds=(0, 125), epsilon=0.5)
    assert float(m).is_integer() and abs(m - people["age"].median()) <= 2
    low = p["smoker"].dp.quantile(0.1, bounds=(0, 1), epsilon=0.5)
    assert low == 0.0


def test_quantile_clips_and_ignores_missing(seeded: None) -> None:
    s = pd.Series([np.nan] * 500 + [1e9] * 300 + [5.0] * 200, name="v")
    p = s.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    assert abs(p.dp.median(bounds=(0, 10), epsilon=1.0) - 10) < 0.01  # 300 of 500 values clip to 10
    nullable = pd.Series(pd.array([1, None, 3, 3, 3] * 100, dtype="Int64"), name="n").dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    assert nullable.dp.median(bounds=(0, 10), epsilon=1.0) == 3


def test_unsigned_values_beyond_int64_clip_to_the_upper_bound(seeded: None) -> None:
    values = np.array([2**64 - 1] * 300 + [5] * 200, dtype=np.uint64)
    for data in (values, pd.array(values, dtype="UInt64")):
        p = pd.Series(data, name="u").dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
        assert p.dp.median(bounds=(0, 10), epsilon=1.0) == 10  # not wrapped to a negative, clipped to 0


def test_quantile_argument_errors_cost_nothing(people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    with pytest.raises(dpframe.BudgetExceededError):  # bounds found automatically: whole cost checked first
        p["age"].dp.median(epsilon=2.0)
    with pytest.raises(ValueError, match="did you reverse them"):
        p["age"].dp.median(bounds=(100, 0), epsilon=0.1)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        p["age"].dp.quantile(1.5, bounds=(0, 100), epsilon=0.1)
    with pytest.raises(ValueError, match="q is empty"):
        p["age"].dp.quantile([], bounds=(0, 100), epsilon=0.1)
    with pytest.raises(TypeError, match="numeric"):
        p["edu"].dp.median(bounds=(0, 1), epsilon=0.1)
    with pytest.raises(ValueError, match="spends no delta"):
        p["sex"].dp.mode(epsilon=0.1, delta=1e-9)
    with pytest.raises(dpframe.BudgetExceededError):
        p["age"].dp.median(bounds=(0, 100), epsilon=2.0)
    assert p.dp.budget.spent.epsilon.exact == 0 and len(p.dp.budget.ledger) == 0


def test_quantiles_without_bounds_find_them_privately(seeded: None) -> None:
    ages = pd.DataFrame({"age": np.tile(np.arange(18, 91), 100)})
    p = ages.dp.protect(ledger=Ledger.in_memory(), epsilon=10.0)
    m = p["age"].dp.median(epsilon=2.0)
    assert abs(m - 54) <= 2
    assert m.release.bounds is not None and m.release.bounds[0] <= 18 and m.release.bounds[1] >= 90
    assert "sparse vector" in m.release.note
    ledger = p.dp.budget.ledger
    assert list(ledger["query"]) == ["bounds for median", "median"]
    assert ledger["epsilon"].sum() == pytest.approx(2.0)
    quartiles = p["age"].dp.quantile([0.25, 0.75], epsilon=2.0)
    assert abs(quartiles[0.25] - 36) <= 3 and abs(quartiles[0.75] - 72) <= 3


def test_median_accuracy_on_adult_age(adult: pd.DataFrame) -> None:
    p = adult.dp.protect(ledger=Ledger.in_memory(), epsilon=300.0)
    truth = adult["age"].median()
    errors = [abs(p["age"].dp.median(bounds=(0, 125), epsilon=1.0) - truth) for _ in range(200)]
    assert np.median(errors) <= 1.0
    assert p.dp.budget.spent.epsilon.exact == 200


# --- queries: mode, top-k, select -------------------------------------------------------------


def test_mode_and_top_k_with_declared_keys(seeded: None, people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=2.0)
    m = p["edu"].dp.mode(keys=["HS", "BA", "MA", "PhD"], epsilon=0.5)
    assert m.tolist() == [people["edu"].mode()[0]] or abs(
        (people["edu"] == m[0]).sum() - people["edu"].value_counts().max()) < 60
    release = m.attrs["dp"]
    assert release.mechanism == "permute-and-flip" and "dpframe" not in m.attrs and m.name == "edu"
    everything = p["edu"].dp.top_k(4, keys=["HS", "BA", "MA", "PhD"], epsilon=1.0)
    assert sorted(everything) == ["BA", "HS", "MA", "PhD"]  # the absent key is a candidate too
    assert everything.iloc[-1] == "PhD"  # count 0, ~650 below the others
    assert p.dp.budget.spent.epsilon.exact == Fraction(3, 2)
    assert p.dp.budget.ledger["rule"].tolist() == ["one ε-DP selection", "sequential composition over rounds"]


def test_absent_declared_key_can_be_the_mode(seeded: None) -> None:
    p = pd.DataFrame({"c": ["a"] * 3}).dp.protect(ledger=Ledger.in_memory(), epsilon=10.0)
    picks = [p["c"].dp.mode(keys=["a", "zzz"], epsilon=0.01)[0] for _ in range(60)]
    assert "zzz" in picks and "a" in picks  # near-uniform at this epsilon


@pytest.mark.parametrize("mechanism", ["permute_and_flip", "exponential", "report_noisy_max"])
def test_mode_mechanisms_on_categorical_and_bool(seeded: None, people: pd.DataFrame, mechanism: str) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=2.0)
    assert p["smoker"].dp.mode(epsilon=0.5, mechanism=mechanism).tolist() == [False]
    assert p["sex"].dp.mode(epsilon=0.5, mechanism=mechanism).attrs["dp"].mechanism.startswith(
        {"permute_and_flip": "permute", "exponential": "exponential", "report_noisy_max": "report"}[mechanism])


def test_mode_with_undeclared_categories(seeded: None, people: pd.DataFrame) -> None:
    pure = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    with pytest.raises(ValueError, match="not public"):
        pure["edu"].dp.mode(epsilon=0.5)
    assert pure.dp.budget.spent.epsilon.exact == 0
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="needs public categories"):
        p["edu"].dp.mode(epsilon=0.5, mechanism="exponential")
    counts = people["edu"].value_counts()
    m = p["edu"].dp.mode(epsilon=0.5, delta=1e-7)
    assert (people["edu"] == m[0]).sum() > counts.max() - 60
    assert "partition selection" in m.attrs["dp"].note
    top = p["edu"].dp.top_k(5, epsilon=0.4, delta=1e-7)
    assert sorted(top) == ["BA", "HS", "MA"] and list(top.index) == [0, 1, 2]  # only the three that exist
    # mode released the categories: top_k selects among them and needs no delta.
    assert p.dp.budget.spent.delta.exact == Fraction(1, 10**7)
    fresh = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, delta=1e-6)
    top = fresh["edu"].dp.top_k(5, epsilon=0.4, delta=1e-7)
    assert sorted(top) == ["BA", "HS", "MA"] and fresh.dp.budget.spent.delta.exact == Fraction(1, 10**7)


def test_mode_on_user_level_data_bounds_each_user(seeded: None) -> None:
    # One user repeats "spam" 1000 times; 100 users say "ham" once. With one row per user, ham wins.
    df = pd.DataFrame({"user": [0] * 1000 + list(range(1, 101)), "word": ["spam"] * 1000 + ["ham"] * 100})
    p = df.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, privacy_unit="user", max_contributions=1)
    assert p["word"].dp.mode(keys=["spam", "ham"], epsilon=0.5).tolist() == ["ham"]
    p3 = df.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, privacy_unit="user", max_contributions=3)
    p3["word"].dp.mode(keys=["spam", "ham"], epsilon=0.5)
    assert "sensitivity 3" in p3.dp.budget.ledger["noise"].iloc[-1]
    scored = p.dp.select(["spam", "ham"], score=agg.count(where="word == @candidate"), epsilon=0.5)
    assert scored.value == "ham"


# --- select: the scores are aggregate queries, their sensitivity derived ------------------------------------


def test_select_scores_the_rows_in_use_exactly(seeded: None) -> None:
    df = pd.DataFrame({"user": [0] * 50 + [1, 2], "x": [1.0] * 52})
    p = df.dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, privacy_unit="user", max_contributions=2)
    # The count is 4 (user 0 kept to 2 rows): wrong picks have probability below 2 e^-50.
    choice = p.dp.select([2, 4, 52], score=lambda c: -abs(agg.count() - c), epsilon=100.0)
    assert choice.value == 4 and choice.position == 1
    assert isinstance(choice, dpframe.queries.select.DPChoice) and math.isnan(choice.std)
    assert "within" in choice.release.note and "DPChoice(4" in repr(choice)
    line = p.dp.budget.ledger.iloc[-1]
    assert line["noise"] == ("3 candidates, sensitivity 2 derived from the scores: the largest, "
                             "-abs(agg.count() - 2), is a linear combination: Σ|aᵢ|Δᵢ = 2")
    assert line["mechanism"] == "permute-and-flip" and line["rule"] == "one ε-DP selection"


def test_select_binds_candidate_and_says_when_the_scores_are_monotone(seeded: None) -> None:
    p = pd.DataFrame({"c": ["a"] * 30 + ["b"] * 10}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    for mechanism in ["permute_and_flip", "exponential", "report_noisy_max"]:
        p.dp.select(["a", "b"], score=agg.count(where="c == @candidate"), epsilon=0.1, mechanism=mechanism)
    assert all("sensitivity 1 (monotone: all non-decreasing) derived" in text for text in p.dp.budget.ledger["noise"])
    p.dp.select(["a", "b"], score=agg.count(where="c == @candidate") - agg.count(where="c != @candidate"),
                epsilon=0.1)
    assert "monotone" not in p.dp.budget.ledger["noise"].iloc[-1]


def test_select_calls_a_score_function_on_the_public_candidates_before_the_charge() -> None:
    p = pd.DataFrame({"w": ["x", "y"] * 20}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    calls: list[tuple[Any, int]] = []

    def score(word: Any) -> Any:
        calls.append((word, len(p.dp.budget.ledger)))
        return agg.count(where=f"w == {word!r}")

    p.dp.select(["x", "y", "z"], score=score, epsilon=0.5)
    assert calls == [("x", 0), ("y", 0), ("z", 0)] and len(p.dp.budget.ledger) == 1

    class Stop(BaseException):
        pass

    def raising(word: Any) -> Any:
        raise Stop(word)  # the public candidate: an argument error, passed on

    with pytest.raises(Stop):
        p.dp.select(["x"], score=raising, epsilon=0.5)
    assert len(p.dp.budget.ledger) == 1


class Lenient(agg.Count):
    """A subclass could override what dpframe derives: refused by exact type."""

    def _sensitivity(self, contributions: int) -> Fraction:
        return Fraction(1, 10**6)


@pytest.mark.parametrize(("arguments", "error", "match"), [
    (dict(candidates=[]), ValueError, "candidates is empty"),
    (dict(candidates="abc"), TypeError, "list of public candidates"),
    (dict(candidates=[object()]), dpframe.RefusedError, "not a plain value"),
    (dict(candidates=[b"x"]), TypeError, "@candidate is a bytes"),
    (dict(score=3), TypeError, "score must be an aggregate query"),
    (dict(score=lambda c: 3), TypeError, r"score\('a'\) returned a int"),
    (dict(score=lambda f, c: 0.0), TypeError, "missing 1 required positional argument"),
    (dict(score=Lenient(where="w == 'a'")), TypeError, "score must be an aggregate query"),
    (dict(score=agg.count(where="nocolumn == @candidate")), NameError, "not a column"),
    (dict(score=agg.sum("w", bounds=(0, 1))), TypeError, "needs a numeric column"),
    (dict(score=agg.count() * 0 + 1), ValueError, "do not depend on the data"),
    (dict(mechanism="best"), ValueError, "mechanism must be one of"),
    (dict(epsilon=None), ValueError, "pass epsilon="),
    (dict(epsilon=5.0), dpframe.BudgetExceededError, None),
    (dict(sensitivity=1), TypeError, "unexpected keyword argument 'sensitivity'"),
    (dict(monotonic=True), TypeError, "unexpected keyword argument 'monotonic'"),
])
def test_select_refuses_before_charging(arguments: dict[str, Any], error: type[Exception], match: str | None) -> None:
    p = pd.DataFrame({"w": ["a", "b"] * 5}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    call = {"candidates": ["a", "b"], "score": agg.count(where="w == @candidate"), "epsilon": 0.5, **arguments}
    with pytest.raises(error, match=match):
        p.dp.select(call.pop("candidates"), **call)
    assert p.dp.budget.spent.epsilon.exact == 0 and len(p.dp.budget.ledger) == 0


def test_select_and_above_threshold_are_refused_under_bounded_dp() -> None:
    p = pd.DataFrame({"w": ["a", "b"] * 5}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, neighbours="replace")
    with pytest.raises(dpframe.RefusedError, match="bounded DP"):
        p.dp.select(["a"], score=agg.count(where="w == @candidate"), epsilon=0.5)
    with pytest.raises(dpframe.RefusedError, match="bounded DP"):
        p.dp.above_threshold([agg.count()], threshold=1, epsilon=0.5)
    assert p.dp.budget.ledger["query"].tolist() == ["bounded DP"]


def test_select_with_count_scores_picks_the_mode_at_the_theoretical_rate(seeded: None) -> None:
    counts = [30, 20, 10]
    df = pd.DataFrame({"c": np.repeat(["a", "b", "c"], counts)})
    n, epsilon = 1000, 0.1  # the non-monotone rate is rejected with probability 1 - 4e-11
    p = df.dp.protect(ledger=Ledger.in_memory(), epsilon=n * epsilon)
    chosen = [p.dp.select(["a", "b", "c"], score=agg.count(where="c == @candidate"), epsilon=epsilon).position
              for _ in range(n)]
    observed = np.bincount(chosen, minlength=3)
    # Counts are monotone (Δ = 1): permute-and-flip stops at r with probability exp(ε (q_r − q*) / Δ), which is the
    # non-monotone formula with Δ/2.
    assert chi_square_ok(observed, em.exact_probabilities(counts, 0.5, epsilon, "permute_and_flip"))
    assert not chi_square_ok(observed, em.exact_probabilities(counts, 1.0, epsilon, "permute_and_flip"))


def test_a_score_of_1e12_for_the_true_value_moves_by_its_derived_sensitivity(seeded: None) -> None:
    """The adversarial review's attack: a score of 1e12 for a person's true salary, at ε = 0.01."""
    salaries = [41_000, 52_000, 61_000, 75_000]
    df = pd.DataFrame({"name": [f"p{i}" for i in range(99)] + ["ann"], "salary": salaries * 25})
    p = df.dp.protect(ledger=Ledger.in_memory(), epsilon=10.0)
    attack = agg.count(where="name == 'ann' and salary == @candidate") * 1e12
    runs = 400
    picks = [p.dp.select(salaries, score=attack, epsilon=0.01).value for _ in range(runs)]
    assert "sensitivity 1000000000000 (monotone: all non-decreasing) derived from the scores" in \
        p.dp.budget.ledger["noise"].iloc[-1]
    # ann's true salary (75,000) scores 1e12, the others 0; with Δ = 1e12 the pick is nearly uniform (the old
    # trust-me form took sensitivity=1 and picked it every time). Uniform: 100 of 400; 200 is 11 sigma away.
    assert picks.count(75_000) < 200
    truth = attack.bind(75_000)
    with_ann, without_ann = agg.Answers(p, [truth])(truth), agg.Answers(p[p["name"] != "ann"], [truth])(truth)
    assert with_ann - without_ann == truth.sensitivity(1) == 10**12  # the most one person moves it


def test_top_k_argument_errors_cost_nothing() -> None:
    p = pd.Series(["a"], name="c").dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    with pytest.raises(ValueError, match="exceeds the number of candidates"):
        p.dp.top_k(3, keys=["a", "b"], epsilon=0.1)
    assert p.dp.budget.spent.epsilon.exact == 0


def test_selection_on_a_zcdp_budget(seeded: None, people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), rho=0.5)
    p["smoker"].dp.mode(epsilon=0.5)  # charged rho = eps^2 / 2
    p["age"].dp.median(bounds=(0, 125), rho=0.125)  # runs at eps = sqrt(2 rho) = 0.5
    assert p.dp.budget.spent.rho.exact == Fraction(1, 8) + Fraction(1, 8)
    with pytest.raises(ValueError, match="spends no delta"):
        p["smoker"].dp.mode(epsilon=0.1, delta=1e-6)
    with pytest.raises(ValueError, match="zCDP"):
        p["smoker"].dp.mode(epsilon=0.1, rho=0.1)


def test_results_carry_releases_not_budgets(seeded: None, people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=3.0)
    results = [
        p["sex"].dp.mode(epsilon=0.5),
        p["sex"].dp.top_k(2, epsilon=0.5),
        p["age"].dp.quantile([0.5], bounds=(0, 125), epsilon=0.5),
    ]
    for result in results:
        assert set(result.attrs) == {"dp"} and isinstance(result.attrs["dp"], dpframe.Release)
        assert result.attrs["dp"].cost.epsilon == Fraction(1, 2)
        assert not result.dp.is_protected
    median = p["age"].dp.median(bounds=(0, 125), epsilon=0.5)
    assert median.cost.epsilon == Fraction(1, 2) and len(p.dp.budget.ledger) == 4


@pytest.mark.parametrize("mechanism", ["permute_and_flip", "exponential"])
def test_exact_scores_select_as_their_floats_do(mechanism: str) -> None:
    """Scores that floats hold exactly are quantised alike on both paths: the same draws, the same choices."""
    scores = [3, 10, 7, 10, -4]
    picks = []
    for given in (np.array(scores, dtype=np.float64), [Fraction(s) for s in scores]):
        with warnings.catch_warnings(), seeded_noise(7):
            warnings.simplefilter("ignore", NotPrivateWarning)
            picks.append(em.choose(given, Fraction(1), Fraction(1, 2), mechanism, False, size=300).tolist())  # type: ignore[arg-type]
    assert picks[0] == picks[1]


def test_exact_scores_far_apart_select_without_overflow(seeded: None) -> None:
    huge = [Fraction(10**400), Fraction(0), Fraction(-(10**400))]
    for mechanism in ("permute_and_flip", "exponential", "report_noisy_max"):
        assert em.choose(huge, Fraction(1), Fraction(1), mechanism, False)[0] == 0  # type: ignore[arg-type]
