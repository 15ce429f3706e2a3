"""The graphical model's coarse measurements: marginals of several columns over runs of neighbouring codes.

Seeded through the test-only switch (``seeded_noise``); tolerances are far outside what a correct
implementation reaches for those seeds.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpframe.synthesis import graphical
from dpframe.synthesis.measure import Allowance, CodedData, measure
from dpframe.synthesis.model import GraphicalModel, JunctionTree, Measurement, coarsen, spread
from dpframe.testing import seeded_noise

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")


def test_runs_hold_equal_shares_of_the_noisy_counts_in_the_codes_order() -> None:
    mass = np.array([5.0, 40.0, 5.0, 10.0, 10.0, 10.0, 10.0, 10.0, -3.0, 100.0])
    places = np.array([0.0, 9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, np.nan])  # code 1 lies last; code 9 nowhere
    run = graphical.runs(Measurement((0,), mass, np.ones(10)), places, parts=4)
    assert run is not None
    ordered = np.argsort(places[:9], kind="stable")
    assert np.all(np.diff(run[ordered]) >= 0)  # runs follow the places, not the codes
    assert run[1] == run[ordered].max() and np.sum(run[:9] == run[1]) == 1  # 40% of the mass: a run alone
    assert run[9] == run.max() and np.sum(run == run[9]) == 1  # no place: alone
    assert len(np.unique(run)) < 10


def test_runs_merge_nothing_when_the_codes_are_few() -> None:
    assert graphical.runs(Measurement((0,), np.ones(4), np.ones(4)), np.arange(4.0), parts=10) is None
    assert graphical.runs(Measurement((0,), np.ones(3), np.ones(3)), np.full(3, np.nan), parts=2) is None


def test_coarsen_and_spread_are_each_others_transpose() -> None:
    rng = np.random.default_rng(0)
    groups = (np.array([0, 0, 1, 2, 2]), None, np.array([1, 0, 1]))
    x, y = rng.random((5, 4, 3)), rng.random((3, 4, 2))
    assert coarsen(x, groups).shape == (3, 4, 2)
    assert np.isclose(np.sum(coarsen(x, groups) * y), np.sum(x * spread(y, groups)))


def test_a_measurement_over_runs_has_the_noise_of_one_cell_per_run() -> None:
    codes = np.arange(60_000, dtype=np.int64) % 40
    data = CodedData((codes, codes), (40, 40))
    groups = (np.arange(40) // 4, np.arange(40) // 8)
    noise = Allowance("zcdp", Fraction(1, 2), 1).noise(Fraction(1), 1)  # sigma = 1
    with seeded_noise(0):
        (m,) = measure(data, [(0, 1)], noise, groups)
    assert m.values.shape == (10, 5) and m.groups == groups
    exact = coarsen(data.counts((0, 1)), groups)
    assert exact.sum() == 60_000
    assert np.abs(m.values - exact).max() <= 6 * noise.std  # one draw per run, not the sum of many
    assert np.allclose(m.variance, noise.std**2)


def test_the_model_fits_a_pair_over_runs_and_each_column_over_its_codes() -> None:
    one = [Measurement((0,), np.array([10.0, 30.0, 20.0, 40.0]), np.ones(4)),
           Measurement((1,), np.array([50.0, 50.0]), np.ones(2))]
    runs = (np.array([0, 0, 1, 1]), None)
    pair = Measurement((0, 1), np.array([[40.0, 0.0], [10.0, 50.0]]), np.ones((2, 2)), runs)
    model = GraphicalModel(JunctionTree.build([(0, 1)], [4, 2]), [4, 2], total=100)
    model.fit(one + [pair], iterations=500)
    assert np.allclose(model.marginal((0,)), one[0].values, atol=0.5)
    assert np.allclose(coarsen(model.marginal((0, 1)), runs), pair.values, atol=0.5)


def test_aim_measures_two_many_coded_numbers_over_runs_and_keeps_their_correlation() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 40, 20_000)
    y = np.clip(x + rng.integers(-2, 3, 20_000), 0, 39)  # y follows x closely
    data = CodedData((x, y), (40, 40))
    places = [np.arange(40.0), np.arange(40.0)]
    with seeded_noise(0):
        fitted = graphical.aim(data, Allowance("zcdp", Fraction(1, 200), 1), lambda m, d: None,
                               np.random.default_rng(0), places=places)
    assert any(m.groups for m in fitted.model.measurements if len(m.clique) == 2)
    records = fitted.compression.undo(fitted.model.sample(20_000, np.random.default_rng(1)), np.random.default_rng(2))
    assert np.corrcoef(records[:, 0], records[:, 1])[0, 1] > 0.85  # real: 0.99; independent columns: 0
