"""Private partition selection (dpframe.selection.partitions): privacy constraints, optimality, distributions."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dpframe.selection import partitions as ps

# A binomial frequency stays within Z standard deviations of its mean except with probability ~4e-8 each;
# every test below makes at most a dozen such checks.
Z = 5.5


def assert_binomial(kept: int, trials: int, probability: float) -> None:
    spread = Z * math.sqrt(probability * (1 - probability) / trials) + 1 / trials
    assert abs(kept / trials - probability) <= spread, (kept / trials, probability, spread)


BUDGETS = [(1.0, 1e-5, 1), (0.5, 1e-8, 3), (2.0, 1e-3, 1), (0.1, 1e-6, 1), (1.0, 1e-10, 7)]


@pytest.mark.parametrize(("epsilon", "delta", "l0"), BUDGETS)
def test_truncated_geometric_satisfies_both_constraints_exactly(epsilon: float, delta: float, l0: int) -> None:
    table = ps._keep_table(epsilon, delta, l0)
    pi = [Fraction(v, 2**126) for v in table]
    x = Fraction(epsilon) / l0
    ratio = sum(x**k / math.factorial(k) for k in range(40))  # a partial sum of e^x: a lower bound, exact
    d = Fraction(delta) / l0
    assert pi[0] == 0 and pi[-1] == 1
    for before, after in itertools.pairwise(pi):
        assert after <= ratio * before + d
        assert 1 - before <= ratio * (1 - after) + d
        assert before <= after


@pytest.mark.parametrize(("epsilon", "delta", "l0"), BUDGETS)
def test_truncated_geometric_is_the_largest_solution(epsilon: float, delta: float, l0: int) -> None:
    # The largest pi is the recursion pi(n) = min(e^eps pi(n-1) + delta, 1 - e^-eps (1 - pi(n-1) - delta), 1):
    # each bound binds somewhere, and the computed pi equals it up to the 2**-126 grid.
    counts = np.arange(0, 4 * math.ceil(math.log(l0 / delta) / (epsilon / l0)) + 5)
    got = ps.truncated_geometric_keep_probability(counts, epsilon=epsilon, delta=delta, max_partitions=l0)
    e, d = math.exp(epsilon / l0), delta / l0
    expected = [0.0]
    for _ in counts[1:]:
        p = expected[-1]
        expected.append(min(e * p + d, 1 - (1 - p - d) / e, 1.0))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-15)
    assert got[1] == pytest.approx(d, rel=1e-9)  # the first constraint binds at n = 1
    assert got[-1] == 1.0


def test_truncated_geometric_closed_form() -> None:
    # Desfontaines et al. (2022): pi(n) = delta (e^(n eps) - 1) / (e^eps - 1) below the crossover.
    epsilon, delta = 0.5, 1e-9
    n = np.arange(1, 20)
    closed = delta * np.expm1(n * epsilon) / math.expm1(epsilon)
    got = ps.truncated_geometric_keep_probability(n, epsilon=epsilon, delta=delta)
    np.testing.assert_allclose(got, closed, rtol=1e-9)


def test_truncated_geometric_keeps_with_probability_pi() -> None:
    epsilon, delta = 1.0, 1e-3
    trials = 200_000
    for n in (1, 3, 5, 7, 9):
        p = float(ps.truncated_geometric_keep_probability([n], epsilon=epsilon, delta=delta)[0])
        kept = ps.truncated_geometric_selection(np.full(trials, n), epsilon=epsilon, delta=delta)
        assert_binomial(int(kept.sum()), trials, p)
    assert not ps.truncated_geometric_selection(np.zeros(1000, dtype=int), epsilon=epsilon, delta=delta).any()
    assert ps.truncated_geometric_selection(np.full(1000, 10**6), epsilon=epsilon, delta=delta).all()


@pytest.mark.parametrize("l0", [1, 4])
def test_laplace_thresholding_matches_its_closed_form(l0: int) -> None:
    epsilon, delta, trials = 1.0, 1e-2, 200_000
    threshold = ps.laplace_thresholding([0], epsilon=epsilon, delta=delta, max_partitions=l0).threshold
    for n in (1, threshold - 2, threshold, threshold + 3):
        p = float(ps.laplace_thresholding_keep_probability([n], epsilon=epsilon, delta=delta, max_partitions=l0)[0])
        chosen = ps.laplace_thresholding(np.full(trials, n), epsilon=epsilon, delta=delta, max_partitions=l0)
        assert_binomial(int(chosen.keep.sum()), trials, p)
        np.testing.assert_array_equal(chosen.keep, chosen.noisy_counts >= threshold)
    one = ps.laplace_thresholding_keep_probability([1], epsilon=epsilon, delta=delta, max_partitions=l0)[0]
    assert one <= delta / l0  # a one-user partition leaks with probability <= delta / L0
    # The threshold is the least that does: one lower would exceed it.
    lower = ps.laplace_thresholding_keep_probability([2], epsilon=epsilon, delta=delta, max_partitions=l0)[0]
    assert lower > delta / l0


@pytest.mark.parametrize("l0", [1, 4])
def test_gaussian_thresholding_matches_its_closed_form(l0: int) -> None:
    epsilon, delta, trials = 1.0, 1e-2, 200_000
    threshold = ps.gaussian_thresholding([0], epsilon=epsilon, delta=delta, max_partitions=l0).threshold
    for n in (1, threshold - 2, threshold, threshold + 3):
        p = float(ps.gaussian_thresholding_keep_probability([n], epsilon=epsilon, delta=delta, max_partitions=l0)[0])
        chosen = ps.gaussian_thresholding(np.full(trials, n), epsilon=epsilon, delta=delta, max_partitions=l0)
        assert_binomial(int(chosen.keep.sum()), trials, p)
    one = ps.gaussian_thresholding_keep_probability([1], epsilon=epsilon, delta=delta, max_partitions=l0)[0]
    assert one <= delta / 2 / l0


def test_bound_user_partitions_keeps_at_most_l0_distinct_pairs_per_user() -> None:
    rng = np.random.default_rng(0)
    users = rng.integers(0, 500, 20_000)
    parts = rng.integers(0, 200, 20_000)
    kept_users, kept_parts = ps.bound_user_partitions(users, parts, max_partitions=3)
    pairs = set(zip(kept_users.tolist(), kept_parts.tolist()))
    assert len(pairs) == kept_users.size  # distinct
    assert pairs <= set(zip(users.tolist(), parts.tolist()))
    per_user = np.bincount(kept_users, minlength=500)
    distinct = np.array([len(set(parts[users == u].tolist())) for u in range(500)])
    np.testing.assert_array_equal(per_user, np.minimum(distinct, 3))


def test_bound_user_partitions_chooses_uniformly() -> None:
    trials = 60_000  # users each holding partitions 0..3, keeping one: each partition with probability 1/4
    users = np.repeat(np.arange(trials), 4)
    parts = np.tile(np.arange(4), trials)
    _, kept = ps.bound_user_partitions(users, parts, max_partitions=1)
    for part in range(4):
        assert_binomial(int((kept == part).sum()), trials, 0.25)


@pytest.mark.parametrize("l0", [1, 2, 5, 16])
def test_set_union_weights_have_l2_norm_at_most_one(l0: int) -> None:
    for t in range(1, l0 + 1):
        assert t * ps._grid_weight(t) ** 2 <= ps._WEIGHT_GRID**2
        assert t * (ps._grid_weight(t) + 1) ** 2 > ps._WEIGHT_GRID**2  # the largest weight that fits


@pytest.mark.parametrize("t", [1, 3])
def test_set_union_releases_a_users_own_partitions_rarely(t: int) -> None:
    # Each user alone holds t partitions: the chance that any of them is released is <= delta / 2.
    epsilon, delta, l0, users = 1.0, 0.2, 3, 100_000
    user_codes = np.repeat(np.arange(users), t)
    part_codes = np.arange(users * t)
    keep = ps.weighted_gaussian_set_union(
        user_codes, part_codes, n_partitions=users * t, epsilon=epsilon, delta=delta, max_partitions=l0
    )
    leaked = keep.reshape(users, t).any(axis=1)
    _, threshold = ps._set_union_parameters(epsilon, delta, l0)
    bound = delta / 2
    assert leaked.mean() <= bound + Z * math.sqrt(bound * (1 - bound) / users)
    assert threshold > ps._WEIGHT_GRID  # above one user's largest weight


def test_set_union_releases_popular_partitions() -> None:
    users = np.arange(2_000)
    parts = np.where(users < 1_000, 0, 1 + users % 3)  # partition 0 by 1000 users, 1..3 by ~333 each
    keep = ps.weighted_gaussian_set_union(users, parts, n_partitions=5, epsilon=1.0, delta=1e-6, max_partitions=2)
    assert keep.tolist() == [True, True, True, True, False]


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="delta"):
        ps.truncated_geometric_selection([1], epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        ps.laplace_thresholding([1], epsilon=-1.0, delta=1e-6)
    with pytest.raises(ValueError, match="max_partitions"):
        ps.gaussian_thresholding([1], epsilon=1.0, delta=1e-6, max_partitions=0)
    with pytest.raises(ValueError, match="non-negative"):
        ps.truncated_geometric_selection([-1], epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="n_partitions"):
        ps.weighted_gaussian_set_union([0], [3], n_partitions=2, epsilon=1.0, delta=1e-6, max_partitions=1)


def test_bound_user_partitions_takes_large_codes_and_empty_input() -> None:
    users = np.array([2**62, 2**62, 2**62, 5, 5], dtype=np.int64)
    parts = np.array([2**61, 3, 7, 2**61, 2**61], dtype=np.int64)  # pair keys would overflow int64: recoded
    kept_users, kept_parts = ps.bound_user_partitions(users, parts, max_partitions=2)
    assert np.all(np.diff(kept_users) >= 0)  # sorted by user
    assert kept_users.tolist() == [5, 2**62, 2**62]
    assert kept_parts[0] == 2**61 and set(kept_parts[1:].tolist()) <= {2**61, 3, 7}
    empty = ps.bound_user_partitions(np.zeros(0, dtype=int), np.zeros(0, dtype=int), max_partitions=3)
    assert empty[0].size == empty[1].size == 0
    assert ps.weighted_gaussian_set_union([], [], n_partitions=0, epsilon=1.0, delta=1e-6, max_partitions=2).size == 0
    assert ps.truncated_geometric_selection([], epsilon=1.0, delta=1e-6).size == 0
