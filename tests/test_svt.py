"""The sparse vector technique: right answers, constant cost, validation, and an empirical privacy audit.

The audit follows ``test_empirical_privacy.py``: from many seeded runs of
AboveThreshold on two neighbouring answer vectors it computes, with
Clopper-Pearson bounds (Bonferroni-corrected, overall false-alarm probability
1e-6), a *lower confidence bound* on the privacy loss of the distribution of
the output index. The correct mechanism must stay below its epsilon; the
deliberately broken variants (threshold without noise; both noises halved;
query noise without the factor 2, i.e. Lyu et al.'s incorrect Alg. 3 scale)
must be caught above it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from dpframe import BudgetExceededError, agg
from dpframe.noise.discrete import sample_discrete_laplace
from dpframe.selection.svt import SparseVector, SVTNoise, above_threshold, sparse
from dpframe.testing import NotPrivateWarning, seeded_noise

HUGE = 1e6  # epsilon at which the noise is (almost surely) zero


# ---------------------------------------------------------------------------
# the noise scales of Lyu, Su & Li (2017), Alg. 1
# ---------------------------------------------------------------------------


def test_noise_scales_are_alg1() -> None:
    plain = SVTNoise.calibrate(1.0, sensitivity=1, c=1)
    assert (plain.threshold, plain.query) == (Fraction(2), Fraction(4))  # Lap(Δ/(ε/2)), Lap(2cΔ/(ε/2))
    many = SVTNoise.calibrate(0.5, sensitivity=3, c=4)
    assert (many.threshold, many.query) == (Fraction(12), Fraction(96))  # threshold NOT scaled by c
    mono = SVTNoise.calibrate(0.5, sensitivity=3, c=4, monotonic=True)
    assert (mono.threshold, mono.query) == (Fraction(12), Fraction(48))
    uneven = SVTNoise.calibrate(1.0, sensitivity=1, c=1, threshold_share=Fraction(1, 4))
    assert uneven.threshold == Fraction(4)
    assert Fraction(8, 3) <= uneven.query <= Fraction(8, 3) * (1 + Fraction(1, 2**38))  # rounded up, never down
    assert "Alg. 1" in plain.describe()


# ---------------------------------------------------------------------------
# right answers on easy inputs
# ---------------------------------------------------------------------------


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize(
    "answers",
    [
        [0, 3, 7, 120, 5, 300],
        np.array([0, 3, 7, 120, 5, 300], dtype=np.int64),
        np.array([0, 3, 7, 120, 5, 300], dtype=np.uint16),
        np.array([0.5, 3.2, 7.9, 120.0, 5.0, 300.0]),
        (x for x in [0, 3, 7, 120, 5, 300]),
        [Fraction(1, 2), 3, 7.5, 120, np.int32(5), 300.0],
    ],
    ids=["list", "int64", "uint16", "float", "generator", "mixed"],
)
def test_above_threshold_finds_the_first_clear_answer(answers: Any) -> None:
    assert above_threshold(answers, threshold=100, sensitivity=1, epsilon=1.0) == 3


@pytest.mark.usefixtures("seeded")
def test_above_threshold_none_and_sparse() -> None:
    assert above_threshold(np.zeros(1000), threshold=100, sensitivity=1, epsilon=1.0) is None
    assert above_threshold([], threshold=0, sensitivity=1, epsilon=1.0) is None
    answers = [0, 900, 1, 800, 2, 700, 3, 600]
    assert sparse(answers, threshold=400, sensitivity=1, epsilon=2.0, c=3) == [1, 3, 5]
    assert sparse(answers, threshold=400, sensitivity=1, epsilon=2.0, c=10) == [1, 3, 5, 7]
    assert sparse(iter(answers), threshold=400, sensitivity=1, epsilon=2.0, c=2, monotonic=True) == [1, 3]
    assert sparse([5, 5, 5], threshold=10**6, sensitivity=1, epsilon=1.0, c=2) == []


@pytest.mark.usefixtures("seeded")
def test_integer_semantics_at_huge_epsilon() -> None:
    # Answers are rounded down; the comparison is answer >= threshold.
    assert above_threshold([2.999, 3.0], threshold=3, sensitivity=1, epsilon=HUGE) == 1
    assert above_threshold([3.5, 4.0], threshold=3.7, sensitivity=1, epsilon=HUGE) == 1  # floor(3.5) < 3.7
    assert above_threshold([float("nan"), -np.inf, np.inf], threshold=0, sensitivity=1, epsilon=HUGE) == 2
    assert above_threshold([10**30, 1], threshold=10**18, sensitivity=1, epsilon=HUGE) == 0  # clamped to 2**60
    assert above_threshold([10**30, 1], threshold=10**20, sensitivity=1, epsilon=HUGE) is None  # beyond the clamp
    assert above_threshold([0, 5], threshold=Fraction(9, 2), sensitivity=1, epsilon=HUGE) == 1


@pytest.mark.usefixtures("seeded")
def test_stream_is_read_lazily_and_stops_after_c_positives() -> None:
    seen: list[int] = []

    def answers() -> Iterator[int]:
        for i in range(10**6):
            seen.append(i)
            yield 1000 if i in (7, 40, 41) else 0

    assert sparse(answers(), threshold=500, sensitivity=1, epsilon=HUGE, c=2) == [7, 40]
    assert seen[-1] == 40  # nothing read beyond the c-th positive


@pytest.mark.usefixtures("seeded")
def test_adaptive_runs_share_one_threshold_and_stop() -> None:
    run = SparseVector(threshold=50, sensitivity=1, epsilon=HUGE, c=2)
    assert run.first_above([0, 0, 99]) == 2
    assert run.positives(np.array([0, 70, 80])) == [1]
    assert run.remaining == 0
    with pytest.raises(RuntimeError, match="c positive"):
        run.first_above([100])


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"sensitivity": 0.5}, ValueError),
        ({"sensitivity": 0}, ValueError),
        ({"sensitivity": True}, ValueError),
        ({"epsilon": 0}, ValueError),
        ({"epsilon": float("nan")}, ValueError),
        ({"epsilon": "1"}, TypeError),
        ({"threshold": float("inf")}, ValueError),
        ({"threshold": float("nan")}, ValueError),
        ({"threshold": "10"}, TypeError),
        ({"threshold": None}, TypeError),
        ({"c": 0}, ValueError),
        ({"c": 1.5}, ValueError),
        ({"monotonic": "yes"}, TypeError),
    ],
)
def test_validation(kwargs: dict[str, Any], error: type[Exception]) -> None:
    args: dict[str, Any] = {"threshold": 10, "sensitivity": 1, "epsilon": 1.0, "c": 1, "monotonic": False}
    args.update(kwargs)
    with pytest.raises(error):
        sparse([1, 2, 3], **args)


def test_bad_answers() -> None:
    with pytest.raises(ValueError, match="one-dimensional"):
        above_threshold(np.zeros((2, 2)), threshold=0, sensitivity=1, epsilon=1.0)
    with pytest.raises(TypeError, match="real numbers"):
        above_threshold(iter(["a"]), threshold=0, sensitivity=1, epsilon=1.0)


# ---------------------------------------------------------------------------
# the accessor: one charge, whatever the number of queries
# ---------------------------------------------------------------------------


@pytest.fixture
def ages() -> pd.DataFrame:
    return pd.DataFrame({"age": np.repeat(np.arange(18, 90), 20)})


def _count_at_least(a: int) -> agg.Expr:
    return agg.count(where="age >= @a")


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize("n_queries", [3, 30, 3000])
def test_accessor_cost_does_not_grow_with_queries(ages: pd.DataFrame, n_queries: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    p = ages.dp.protect(epsilon=1.0)
    # 1440 people: only the last query is near the threshold (the others are a million below it).
    queries = [agg.count() - (0 if i == n_queries - 1 else 10**6) for i in range(n_queries)]
    answered: list[int] = []
    answer = agg.Answers.__call__

    def recording(self: agg.Answers, expression: agg.Expr) -> Fraction:
        answered.append(len(p.dp.budget.ledger))  # the number of ledger lines when each answer is read
        return answer(self, expression)

    monkeypatch.setattr(agg.Answers, "__call__", recording)
    index = p.dp.above_threshold(queries, threshold=1000, epsilon=0.3)
    assert index == n_queries - 1
    assert answered == [1] * n_queries  # each answered once, after the one charge
    ledger = p.dp.budget.ledger
    assert len(ledger) == 1
    assert ledger.loc[0, "query"] == "above_threshold" and ledger.loc[0, "mechanism"] == "sparse vector"
    assert ledger.loc[0, "epsilon"] == 0.3 and p.dp.budget.spent.epsilon.exact == Fraction(3, 10)
    assert f"{n_queries} queries" in ledger.loc[0, "noise"]


@pytest.mark.usefixtures("seeded")
def test_queries_are_answered_lazily_in_order(ages: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    p = ages.dp.protect(epsilon=10.0)
    answered: list[agg.Expr] = []
    answer = agg.Answers.__call__

    def recording(self: agg.Answers, expression: agg.Expr) -> Fraction:
        answered.append(expression)
        return answer(self, expression)

    monkeypatch.setattr(agg.Answers, "__call__", recording)
    queries = [_count_at_least(a) for a in (100, 90, 20, 18, 50)]  # 0, 0, 1400, 1440, 800
    assert p.dp.above_threshold(queries, threshold=1000, epsilon=5.0) == 2
    assert answered == queries[:3]  # stopped at the first positive


@pytest.mark.usefixtures("seeded")
def test_accessor_answers(ages: pd.DataFrame) -> None:
    p = ages.dp.protect(epsilon=10.0)
    queries = [_count_at_least(a) for a in range(100, 0, -5)]  # counts grow: 0, ..., 1440
    assert p.dp.above_threshold(queries, threshold=690, epsilon=5.0) == 9  # age >= 55: 700 people
    found = p.dp.above_threshold(queries, threshold=200, epsilon=2.0, c=3)
    assert isinstance(found, list) and len(found) == 3 and found == sorted(found) and found[0] >= 5
    assert p.dp.above_threshold(queries, threshold=10**6, epsilon=1.0) is None
    assert "monotonic queries" in p.dp.budget.ledger["noise"].iloc[-1]  # counts: derived monotone


@pytest.mark.usefixtures("seeded")
def test_accessor_answers_on_contribution_bounded_rows() -> None:
    df = pd.DataFrame({"user": np.repeat(np.arange(100), 10), "x": 1})
    p = df.dp.protect(epsilon=10.0, privacy_unit="user", max_contributions=2)
    # 200 rows in use; Δ = 2. At ε = 3, the noise is beyond 150 with probability below 1e-9.
    assert p.dp.above_threshold([agg.count()], threshold=50, epsilon=3.0) == 0
    assert p.dp.above_threshold([agg.count()], threshold=350, epsilon=3.0) is None
    assert "Δ=2," in p.dp.budget.ledger["noise"].iloc[-1]


@pytest.mark.usefixtures("seeded")
def test_a_fractional_sensitivity_is_scaled_to_integers() -> None:
    # Means of values in [0, 1]: Δ = 1/2 (k = 1). Rounded down without scaling, 0.3 and 0.7 would both be 0.
    df = pd.DataFrame({"g": ["a"] * 500 + ["b"] * 500, "x": [0.3] * 500 + [0.7] * 500})
    p = df.dp.protect(epsilon=10**6)
    queries = [agg.mean("x", bounds=(0, 1), where="g == @g") for g in ("a", "b")]
    assert p.dp.above_threshold(queries, threshold=0.5, epsilon=10**5) == 1
    assert p.dp.above_threshold(queries, threshold=0.25, epsilon=10**5) == 0
    noise = p.dp.budget.ledger["noise"].iloc[-1]
    assert "scaled by 2^16/Δ" in noise and "Δ=65536," in noise and "sensitivity 0.5 derived from the queries" in noise
    assert "monotonic" not in noise


def test_accessor_zcdp_budget(ages: pd.DataFrame) -> None:
    z = ages.dp.protect(rho=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(1):
            z.dp.above_threshold([_count_at_least(50)], threshold=10, epsilon=0.5)
    assert z.dp.budget.spent.rho.exact == Fraction(1, 8)  # epsilon^2 / 2


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda p: p.dp.above_threshold([], threshold=1, epsilon=0.1), TypeError),
        (lambda p: p.dp.above_threshold("abc", threshold=1, epsilon=0.1), TypeError),
        (lambda p: p.dp.above_threshold([lambda f: 1], threshold=1, epsilon=0.1), TypeError),
        (lambda p: p.dp.above_threshold([agg.count(), 3], threshold=1, epsilon=0.1), TypeError),
        (lambda p: p.dp.above_threshold([agg.count()], threshold=float("nan"), epsilon=0.1), ValueError),
        (lambda p: p.dp.above_threshold([agg.count()], threshold=1, epsilon=-1), ValueError),
        (lambda p: p.dp.above_threshold([agg.count()], threshold=1, epsilon=0.1, c=0), ValueError),
        (lambda p: p.dp.above_threshold([agg.count()], threshold=1, epsilon=5.0), BudgetExceededError),
        (lambda p: p.dp.above_threshold([agg.count()], threshold=1, epsilon=0.1, delta=1e-6), TypeError),
        (lambda p: p.dp.above_threshold([agg.count()], threshold=1, epsilon=0.1, sensitivity=1), TypeError),
        (lambda p: p.dp.above_threshold([agg.count(where="height > 1")], threshold=1, epsilon=0.1), NameError),
        (lambda p: p.dp.above_threshold([agg.count(where="age > @candidate")], threshold=1, epsilon=0.1),
         ValueError),
        (lambda p: p.dp.above_threshold([agg.count() * 0 + 1], threshold=1, epsilon=0.1), ValueError),
    ],
)
def test_accessor_refuses_before_charging(ages: pd.DataFrame, call: Any, error: type[Exception]) -> None:
    p = ages.dp.protect(epsilon=1.0)
    with pytest.raises(error):
        call(p)
    assert p.dp.budget.spent.epsilon.exact == 0 and len(p.dp.budget.ledger) == 0


# ---------------------------------------------------------------------------
# empirical privacy audit of AboveThreshold
# ---------------------------------------------------------------------------

RUNS = 1_500_000  # per neighbouring answer vector
ALPHA = 1e-6
EPSILON = 1.0
MIN_MASS = 2000  # output sets rarer than this carry little information


def _outcomes(answers: list[int], threshold: int, rho_scale: Fraction | None, nu_scale: Fraction, seed: int) -> Any:
    """Output index of RUNS independent AboveThreshold runs (len(answers) = no positive), vectorised.

    Each run: rho ~ DLap(rho_scale) (0 if None), nu_i ~ DLap(nu_scale), output the first i with
    answers[i] + nu_i >= threshold + rho -- Lyu et al. Alg. 1 with c = 1, as SparseVector runs it.
    """
    m = len(answers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(seed):
            rho = np.zeros(RUNS, np.int64) if rho_scale is None else sample_discrete_laplace(rho_scale, RUNS)
            nu = sample_discrete_laplace(nu_scale, RUNS * m).reshape(RUNS, m)
    fire = np.asarray(answers)[None, :] + nu >= (threshold + rho)[:, None]
    first = np.where(fire.any(axis=1), fire.argmax(axis=1), m)
    return np.bincount(first, minlength=m + 1)


def _loss_lower_bound(a: Any, b: Any) -> float:
    """Lower confidence bound on max_S |log P_a(S)/P_b(S)| over singletons, prefixes and suffixes of outputs."""
    sets_a = np.concatenate([a, np.cumsum(a), np.cumsum(a[::-1])[::-1]])
    sets_b = np.concatenate([b, np.cumsum(b), np.cumsum(b[::-1])[::-1]])
    keep = (sets_a >= MIN_MASS) | (sets_b >= MIN_MASS)
    sets_a, sets_b = sets_a[keep], sets_b[keep]
    level = ALPHA / (4 * len(sets_a))  # both directions, lower and upper bounds
    best = 0.0
    for x, y in ((sets_a, sets_b), (sets_b, sets_a)):
        lower = beta.ppf(level, x, RUNS - x + 1)
        upper = beta.ppf(1 - level, y + 1, RUNS - y)
        ok = (x > 0) & (upper > 0)
        if ok.any():
            best = max(best, float(np.max(np.log(lower[ok] / upper[ok]))))
    return best


# Neighbouring answer vectors (each answer moves by at most 1) that the audit found informative.
PAIRS = {
    "last query flips": ([1, 1, 1, 1, 0], [0, 0, 0, 0, 1], 0),
    "long prefix": ([1] * 7 + [0], [0] * 7 + [1], 1),
}


@pytest.mark.parametrize("pair", list(PAIRS))
def test_above_threshold_audit_passes(pair: str) -> None:
    noise = SVTNoise.calibrate(EPSILON, sensitivity=1, c=1)
    qa, qb, threshold = PAIRS[pair]
    a = _outcomes(qa, threshold, noise.threshold, noise.query, seed=1)
    b = _outcomes(qb, threshold, noise.threshold, noise.query, seed=2)
    bound = _loss_lower_bound(a, b)
    assert bound <= EPSILON, f"AboveThreshold looks less private than ε={EPSILON}: loss >= {bound:.3f}"
    assert bound > 0.5  # the pair is informative: the audit is not vacuous


BROKEN = {
    # (pair, threshold noise scale, query noise scale)
    "threshold without noise": ("long prefix", None, Fraction(4)),
    "both noises halved": ("last query flips", Fraction(1), Fraction(2)),
    "query noise without the factor 2 (Lyu et al. Alg. 3)": ("last query flips", Fraction(2), Fraction(2)),
}


@pytest.mark.parametrize("variant", list(BROKEN))
def test_broken_variants_are_flagged(variant: str) -> None:
    pair, rho_scale, nu_scale = BROKEN[variant]
    qa, qb, threshold = PAIRS[pair]
    a = _outcomes(qa, threshold, rho_scale, nu_scale, seed=3)
    b = _outcomes(qb, threshold, rho_scale, nu_scale, seed=4)
    assert _loss_lower_bound(a, b) > EPSILON * 1.1


def test_the_audited_simulation_is_what_above_threshold_does() -> None:
    """The real function's output distribution matches the vectorised simulation the audit uses."""
    qa, _, threshold = PAIRS["last query flips"]
    noise = SVTNoise.calibrate(EPSILON, sensitivity=1, c=1)
    expected = _outcomes(qa, threshold, noise.threshold, noise.query, seed=5) / RUNS
    n = 20_000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(6):
            got = [above_threshold(qa, threshold, 1, EPSILON) for _ in range(n)]
    counts = np.bincount([len(qa) if g is None else g for g in got], minlength=len(qa) + 1)
    # Each frequency within 5.5 binomial standard deviations (failure probability < 1e-6 in all).
    sd = np.sqrt(n * expected * (1 - expected))
    assert np.all(np.abs(counts - n * expected) <= 5.5 * sd + 1), (counts, n * expected)
    assert math.isclose(float(expected.sum()), 1.0)


def test_first_above_bounded_gives_first_above_of_the_answers_for_every_draw() -> None:
    # Pathwise: with the same seeded noise, bounds (answers, raised where not exact) give the index the
    # answers give, whether the first positive on the bounds is exact or not (then the answers are used).
    rng = np.random.default_rng(5)
    refined = 0
    for seed in range(300):
        answers = rng.integers(-60, 30, size=40)
        exact = rng.random(40) < 0.5
        bounds = np.where(exact, answers, answers + rng.integers(0, 40, size=40))
        calls: list[int] = []

        def all_answers() -> np.ndarray:
            calls.append(1)
            return answers

        with seeded_noise(seed):
            eager = SparseVector(0, 1, 1.0, c=2).first_above(answers)
        with seeded_noise(seed):
            run = SparseVector(0, 1, 1.0, c=2)
            lazy = run.first_above_bounded(bounds, exact, all_answers)
        assert lazy == eager and run.remaining == (1 if eager is not None else 2)
        refined += len(calls)
    assert 0 < refined < 300  # both paths were taken


def test_first_above_bounded_over_many_queries_draws_in_batches() -> None:
    # A scan far longer than its first batch of noise (first_batch=10): at negligible noise it stops at the first
    # answer at or above the threshold, wherever that is, and a run of no positive returns None.
    answers = np.r_[np.full(5000, -100), np.zeros(10, dtype=np.int64)]
    exact = np.ones(len(answers), dtype=bool)
    with seeded_noise(0):
        run = SparseVector(0, 1, 1e9, c=2)
        assert run.first_above_bounded(answers, exact, lambda: answers, first_batch=10) == 5000
        assert run.first_above_bounded(answers[:5000], exact[:5000], lambda: answers, first_batch=10) is None
    assert run.remaining == 1
