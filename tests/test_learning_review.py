"""Adversarial privacy review of dpframe.learning: each test pins a leak or an under-charge found and fixed."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe  # noqa: F401  (registers .dp)
from dpframe.learning import LinearRegression, LogisticRegression
from dpframe.learning._design import Feature
from dpframe.learning._noisy import Units, VectorGrid
from dpframe.testing import seeded_noise


@pytest.mark.parametrize("dtype,classes,values", [
    ("boolean", None, [True, False]),
    ("Int64", [0, 1], [1, 0]),
    ("string", ["a", "b"], ["b", "a"]),
])
def test_a_missing_label_of_a_nullable_dtype_is_left_out_not_an_error(dtype: str, classes: list | None,
                                                                      values: list) -> None:
    # After the charge, an exception raised only when some label is pd.NA released that bit exactly.
    rng = np.random.default_rng(0)
    n = 2_000
    y = pd.Series(pd.array([values[0] if v else values[1] for v in rng.uniform(size=n) < 0.5], dtype=dtype))
    x = rng.uniform(-1, 1, n)
    fits = []
    for label in (y, y.where(np.arange(n) != 0)):  # the second has one missing label
        p = pd.DataFrame({"x": x, "y": label}).dp.protect(epsilon=10, delta=1e-6)
        with seeded_noise(3):
            model = LogisticRegression(bounds={"x": (-1, 1)}, classes=classes, steps=3)
            fits.append(model.fit(p[["x"]], p["y"], epsilon=1, delta=1e-6).weights_)
    assert np.all(np.isfinite(fits[1]))


def test_a_categorical_feature_holding_unhashable_values_encodes_them_as_unknown() -> None:
    feature = Feature("g", "categorical", categories=("a", "b"))
    column = pd.Series(["a", [1], "b", None, pd.NA], dtype=object)
    assert feature.encode(column).tolist() == [[1, 0], [0, 0], [0, 1], [0, 0], [0, 0]]


def test_adassp_noise_grows_with_max_contributions() -> None:
    # k rows of one unit move XᵀX by up to k·R² and Xᵀy by k·R: the noise must scale with k.
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": rng.uniform(0, 1, 3_000), "person": np.repeat(np.arange(1_000), 3)})
    df["y"] = df["x"]
    sigmas = []
    for k in (1, 3):
        p = df.assign(k=k).dp.protect(epsilon=1.0, delta=1e-6, privacy_unit="person", max_contributions=k)
        with seeded_noise(5):
            LinearRegression(bounds={"x": (0, 1)}, label_bounds=(0, 1)).fit(p[["x"]], p["y"], epsilon=1,
                                                                            delta=1e-6)
        noise = p.dp.budget.ledger["noise"].iloc[-1]
        sigmas.append([float(s) for s in re.findall(r"σ=([0-9.e+-]+)", noise)])
    assert len(sigmas[0]) == 3
    assert np.allclose(np.array(sigmas[1]) / np.array(sigmas[0]), 3, rtol=0.01)


def test_non_finite_gradients_clip_to_zero_not_to_int64_garbage() -> None:
    grid = VectorGrid.choose(1.0, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing data-dependent may warn either
        clipped = grid.clip(np.array([[np.inf, np.inf], [np.nan, 1.0], [1e300, 1e300], [3.0, 4.0]]))
    assert np.abs(clipped).max() <= 2**grid.bits
    assert clipped[:3].tolist() == [[0, 0], [0, 0], [0, 0]]
    small = VectorGrid.choose(1e-6, 2)
    assert small.clip(np.array([[1e150, 0.0], [0.0, 0.0]])).tolist() == [[2**small.bits, 0], [0, 0]]
    with pytest.raises(ValueError, match="clipping_norm"):
        LogisticRegression(clipping_norm=1e-200)._check_parameters()


def test_a_diverging_descent_does_not_reveal_the_parity_of_overflowing_rows() -> None:
    # A huge learning rate overflows the scores of the rows with x = 1 at the second step; NaN gradients cast to
    # int64 became INT64_MIN each, whose wrapped sum is 0 or -2^63 by the parity of their number: the output was
    # finite for one dataset and infinite for its neighbour, whatever the noise.
    outcomes = []
    for ones in (50, 51):
        df = pd.DataFrame({"x": [1.0] * ones + [0.0] * 50, "y": 1.0})
        p = df.dp.protect(epsilon=1.0, delta=1e-6)
        with seeded_noise(4), warnings.catch_warnings():  # no data-dependent overflow warning either
            warnings.simplefilter("error")
            model = LinearRegression(method="gd", steps=2, learning_rate=1.5e308, bounds={"x": (-1, 1)},
                                     label_bounds=(0, 1))
            outcomes.append(bool(np.isfinite(model.fit(p[["x"]], p["y"], epsilon=1, delta=1e-6).weights_).all()))
    assert outcomes[0] == outcomes[1]


def test_an_empty_poisson_sample_of_multi_row_units_is_a_zero_sum_not_an_error() -> None:
    # 20 units sampled at rate 0.01: most DP-SGD steps keep none, and reduceat raised on the empty sample after
    # the charge (whether it did depended on the private number of units).
    grid = VectorGrid.choose(1.0, 2)
    assert Units.of(np.array([], dtype=np.intp)).clipped_sum(grid, np.zeros((0, 2)), np.zeros(0)).tolist() == [0, 0]
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(-1, 1, 40), "person": np.repeat(np.arange(20), 2)})
    df["y"] = df["x"] > 0
    p = df.dp.protect(epsilon=100, delta=1e-3, privacy_unit="person", max_contributions=2)
    with seeded_noise(6):
        model = LogisticRegression(method="sgd", batch_rate=0.01, steps=50, bounds={"x": (-1, 1)})
        assert np.isfinite(model.fit(p[["x"]], p["y"], epsilon=50, delta=1e-4).weights_).all()
