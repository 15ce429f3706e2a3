"""Private models (dpframe.learning): one charge before any read, free bad input, accuracy, sklearn conventions,
and an empirical privacy audit of one training step."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe.learning import LinearRegression, LogisticRegression
from dpframe.learning._design import Design, plan_design
from dpframe.learning._noisy import Units
from dpframe.noise.discrete import sample_discrete_gaussian
from dpframe.noise.mechanism import resolve
from dpframe.testing import seeded_noise
from privacy_audit import epsilon_lower_bound, hockey_stick_lower_bound


def logistic_frame(n: int = 20_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.uniform(0, 10, n), "x2": rng.uniform(-5, 5, n),
                       "g": pd.Categorical(rng.choice(["a", "b", "c"], n))})
    logit = 0.8 * (df["x1"] - 5) - 0.6 * df["x2"] + df["g"].map({"a": -1.0, "b": 0.0, "c": 1.0}).astype(float)
    df["y"] = rng.uniform(size=n) < 1 / (1 + np.exp(-logit))
    return df


FEATURES = ["x1", "x2", "g"]
BOUNDS = {"x1": (0, 10), "x2": (-5, 5)}


def spent_when_read(p: Any, monkeypatch: Any) -> list[float]:
    """The ε spent on ``p``'s budget each time a design matrix is built (the data read), recorded from now on."""
    read_after: list[float] = []
    original = Design.matrix

    def spy(self: Design, frame: pd.DataFrame) -> Any:
        read_after.append(float(p.dp.budget.spent.epsilon))
        return original(self, frame)

    monkeypatch.setattr(Design, "matrix", spy)
    return read_after


@pytest.mark.parametrize("method", ["gd", "sgd"])
def test_fit_is_one_ledger_line_charged_before_the_data_are_read(method: str, monkeypatch: Any) -> None:
    df = logistic_frame()
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    read_after = spent_when_read(p, monkeypatch)
    with seeded_noise(1):
        model = LogisticRegression(method=method, bounds=BOUNDS).fit(p[FEATURES], p["y"], epsilon=0.5, delta=5e-7)
    assert read_after == [0.5]  # the design matrix was built once, after the whole cost was charged
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["LogisticRegression"]
    line = ledger.iloc[0]
    assert line["epsilon"] == 0.5 and line["delta"] == 5e-7
    assert ("DP-SGD" if method == "sgd" else "gradient descent") in line["mechanism"]
    assert "clipped to L2 norm 1" in line["noise"] and "σ=" in line["noise"]
    assert ("Zhu & Wang 2019" if method == "sgd" else "CKS20 Cor. 13") in line["rule"]
    assert float(model.privacy_.epsilon) == 0.5


@pytest.mark.parametrize("method", ["gd", "sgd"])
def test_logistic_regression_is_accurate_on_generated_data(method: str) -> None:
    df, test = logistic_frame(40_000, 0), logistic_frame(20_000, 1)
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    with seeded_noise(3):
        model = LogisticRegression(method=method, bounds=BOUNDS).fit(p[FEATURES], p["y"], epsilon=1.0, delta=1e-6)
    truth = 0.8 * (test["x1"] - 5) - 0.6 * test["x2"] + test["g"].map({"a": -1.0, "b": 0.0, "c": 1.0}).astype(float)
    best = float(np.mean((truth > 0) == test["y"]))
    assert model.score(test[FEATURES], test["y"]) > best - 0.02
    assert model.coef_.shape == (1, 5) and model.classes_.tolist() == [False, True]
    assert model.feature_names_out_ == ["x1", "x2", "g=a", "g=b", "g=c"]
    proba = model.predict_proba(test[FEATURES])
    assert proba.shape == (len(test), 2) and np.allclose(proba.sum(axis=1), 1)


def test_zcdp_budget_and_private_bounds() -> None:
    df = logistic_frame()
    p = df.dp.protect(rho=0.5)
    with seeded_noise(4):
        model = LogisticRegression(bounds={"x2": (-5, 5)}).fit(p[FEATURES], p["y"], rho=0.2)
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["bounds for LogisticRegression", "LogisticRegression"]
    assert ledger["rho"].sum() == pytest.approx(0.2)
    lo, hi = model.bounds_["x1"]
    assert -1 < lo <= 0.1 and 9.9 <= hi < 12.5  # found privately around the data's range [0, 10), a few 3% steps above


def test_renyi_budget_is_charged_rho() -> None:
    p = logistic_frame().dp.protect(epsilon=1.0, delta=1e-6, accounting="rdp")
    with seeded_noise(9):
        LogisticRegression(bounds=BOUNDS).fit(p[FEATURES], p["y"], rho=0.004)
        LinearRegression(bounds=BOUNDS, label_bounds=(0, 1)).fit(p[FEATURES], p["y"].astype(float), rho=0.004)
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["LogisticRegression", "LinearRegression"]
    assert ledger["rho"].tolist() == [0.004, 0.004]


def test_text_categories_are_selected_privately_within_the_fit() -> None:
    df = logistic_frame()
    df["g"] = df["g"].astype(str)
    df.loc[:2, "g"] = "rare"  # three rows: below the selection threshold
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    with seeded_noise(10):
        model = LogisticRegression().fit(p[FEATURES], p["y"], epsilon=1.0, delta=1e-6)
    assert model.feature_names_out_[2:] == ["g=a", "g=b", "g=c"]
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["bounds for LogisticRegression", "bounds for LogisticRegression",
                                        "categories for LogisticRegression", "LogisticRegression"]
    assert ledger["epsilon"].sum() == pytest.approx(1.0) and ledger["delta"].sum() == pytest.approx(1e-6)
    assert ledger["epsilon"].iloc[-1] == pytest.approx(0.9) and ledger["delta"].iloc[-1] == pytest.approx(9e-7)


def test_categories_selected_privately_earlier_are_public() -> None:
    df = logistic_frame()
    df["g"] = df["g"].astype(str)
    p = df.dp.protect(epsilon=2.0, delta=1e-6)
    with seeded_noise(8):
        p["g"].dp.value_counts(epsilon=0.5, delta=1e-7)
        model = LogisticRegression(bounds=BOUNDS).fit(p[FEATURES], p["y"], epsilon=1.0, delta=5e-7)
    assert sorted(model.feature_names_out_[2:]) == ["g=a", "g=b", "g=c"]
    assert p.dp.budget.ledger["query"].tolist()[-1] == "LogisticRegression"  # after value_counts' own lines


def test_linear_regression_adassp_recovers_coefficients() -> None:
    rng = np.random.default_rng(5)
    n = 50_000
    df = pd.DataFrame({"x1": rng.uniform(0, 10, n), "x2": rng.uniform(-1, 1, n)})
    df["y"] = 2 * df["x1"] - 3 * df["x2"] + 1 + rng.normal(0, 1, n)
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    with seeded_noise(6):
        model = LinearRegression(bounds={"x1": (0, 10), "x2": (-1, 1)}, label_bounds=(-10, 30)).fit(
            p[["x1", "x2"]], p["y"], epsilon=1.0, delta=1e-6)
    assert np.allclose(model.coef_, [2, -3], atol=0.15) and abs(model.intercept_ - 1) < 0.5
    assert model.score(df[["x1", "x2"]], df["y"]) > 0.95
    assert p.dp.budget.ledger["query"].tolist() == ["LinearRegression"]


def linear_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.uniform(0, 10, n), "x2": rng.uniform(-5, 5, n),
                       "g": pd.Categorical(rng.choice(["a", "b", "c"], n))})
    df["y"] = (2 * df["x1"] - 1.5 * df["x2"] + df["g"].map({"a": -3.0, "b": 0.0, "c": 3.0}).astype(float)
               + rng.normal(0, 3, n))
    return df


def test_linear_regression_gd_is_one_ledger_line_charged_before_the_data_are_read(monkeypatch: Any) -> None:
    p = linear_frame(5_000, 0).dp.protect(epsilon=1.0, delta=1e-6)
    read_after = spent_when_read(p, monkeypatch)
    with seeded_noise(12):
        LinearRegression(method="gd", bounds=BOUNDS, label_bounds=(-20, 40)).fit(p[FEATURES], p["y"], epsilon=0.5,
                                                                                 delta=5e-7)
    assert read_after == [0.5]
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["LinearRegression"]
    line = ledger.iloc[0]
    assert line["epsilon"] == 0.5 and line["delta"] == 5e-7
    assert "gradient descent on the squared loss" in line["mechanism"]
    assert "40 full-batch steps" in line["noise"] and "clipped to L2 norm 1" in line["noise"]
    assert "label scaled to [-1, 1]" in line["noise"] and "CKS20 Cor. 13" in line["rule"]


def test_linear_regression_gd_is_accurate_on_generated_data() -> None:
    df, test = linear_frame(40_000, 0), linear_frame(20_000, 1)
    design = plan_design(df[FEATURES], BOUNDS, None, estimator="test")
    exact = np.linalg.lstsq(design.matrix(df[FEATURES]), df["y"].to_numpy(), rcond=None)[0]
    truth = test["y"].to_numpy()
    best = 1 - np.sum((truth - design.matrix(test[FEATURES]) @ exact) ** 2) / np.sum((truth - truth.mean()) ** 2)
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    with seeded_noise(13):
        model = LinearRegression(method="gd", bounds=BOUNDS, label_bounds=(-20, 40)).fit(p[FEATURES], p["y"],
                                                                                         epsilon=1.0, delta=1e-6)
    assert best > 0.85 and model.score(test[FEATURES], truth) > best - 0.005
    assert model.feature_names_out_ == ["x1", "x2", "g=a", "g=b", "g=c"]
    assert abs(model.coef_[0] - 2) < 0.1 and abs(model.coef_[1] + 1.5) < 0.1


def test_linear_regression_gd_clips_labels_to_their_bounds() -> None:
    df = linear_frame(2_000, 2)
    wild = df.assign(y=df["y"].where(df.index % 7 != 0, 1e9))  # every seventh label far above the bounds
    fits = []
    for frame in (df.assign(y=wild["y"].clip(-20, 40)), wild):
        p = frame.dp.protect(epsilon=1.0, delta=1e-6)
        with seeded_noise(14):
            model = LinearRegression(method="gd", steps=5, bounds=BOUNDS, label_bounds=(-20, 40))
            fits.append(model.fit(p[FEATURES], p["y"], epsilon=1.0, delta=1e-6).weights_)
    assert np.array_equal(fits[0], fits[1])


def test_units_with_several_rows_are_clipped_as_one() -> None:
    df = logistic_frame(6_000)
    df["person"] = np.repeat(np.arange(2_000), 3)
    p = df.dp.protect(epsilon=1.0, delta=1e-6, privacy_unit="person", max_contributions=3)
    with seeded_noise(7):
        LogisticRegression(bounds=BOUNDS, steps=5).fit(p[FEATURES], p["y"], epsilon=1.0, delta=1e-6)
    # A unit's summed gradient is clipped to C: its sum has sensitivity C whatever its number of rows.
    grouped = Units.of(np.repeat(np.arange(4), 3))
    from dpframe.learning._noisy import VectorGrid
    grid = VectorGrid.choose(1.0, 2)
    total = grouped.clipped_sum(grid, np.ones((12, 2)), np.ones(12))
    assert np.all(total == 4 * np.rint(2**grid.bits / np.sqrt(2) * (1 - 2.0**-30)))


BAD_FITS = [
    (lambda df, p, q: LogisticRegression(bounds=BOUNDS).fit(df[FEATURES], p["y"], epsilon=1, delta=1e-7),
     "plain DataFrame"),
    (lambda df, p, q: LogisticRegression(bounds=BOUNDS).fit(p[FEATURES], q["y"], epsilon=1, delta=1e-7),
     "different budgets"),
    (lambda df, p, q: LogisticRegression(bounds=BOUNDS).fit(p[p["x1"] > 1][FEATURES], p["y"], epsilon=1,
                                                            delta=1e-7), "different rows"),
    (lambda df, p, q: LogisticRegression(bounds=BOUNDS).fit(p[FEATURES], p["y"], epsilon=1), "delta"),
    (lambda df, p, q: LogisticRegression(method="adam").fit(p[FEATURES], p["y"], epsilon=1, delta=1e-7),
     "method must be"),
    (lambda df, p, q: LogisticRegression(steps=0).fit(p[FEATURES], p["y"], epsilon=1, delta=1e-7), "steps"),
    (lambda df, p, q: LogisticRegression(bounds={"x1": (5, 1)}).fit(p[FEATURES], p["y"], epsilon=1, delta=1e-7),
     "lower < upper"),
    (lambda df, p, q: LogisticRegression(bounds={"zz": (0, 1)}).fit(p[FEATURES], p["y"], epsilon=1, delta=1e-7),
     "zz"),
    (lambda df, p, q: LogisticRegression().fit(p[["x1", "when"]], p["y"], epsilon=1, delta=1e-7), "datetime"),
    (lambda df, p, q: LogisticRegression().fit(p[["x1"]], p["n"], epsilon=1, delta=1e-7), "classes="),
    (lambda df, p, q: LogisticRegression().fit(p[["x1", "y"]], p["y"], epsilon=1, delta=1e-7), "also among"),
    (lambda df, p, q: LogisticRegression(bounds=BOUNDS).fit(p[FEATURES], p["y"], epsilon=5, delta=1e-7),
     "nothing was charged"),
    (lambda df, p, q: LinearRegression().fit(p[["x1"]], p["x2"], epsilon=1, delta=1e-7), "label_bounds"),
    (lambda df, p, q: LinearRegression(label_bounds=(0, 1)).fit(p[["x1"]], p["g"], epsilon=1, delta=1e-7),
     "numeric label"),
    (lambda df, p, q: LinearRegression(method="ols", label_bounds=(0, 1)).fit(p[["x1"]], p["x2"], epsilon=1,
                                                                               delta=1e-7), "'adassp'"),
    (lambda df, p, q: LinearRegression(method="gd", learning_rate=0, label_bounds=(0, 1)).fit(
        p[["x1"]], p["x2"], epsilon=1, delta=1e-7), "learning_rate"),
]


@pytest.mark.parametrize("fit, message", BAD_FITS, ids=[m for _, m in BAD_FITS])
def test_bad_input_is_refused_before_any_charge(fit: Any, message: str) -> None:
    df = logistic_frame(500)
    df["when"] = pd.Timestamp("2024-01-01")
    df["n"] = 1
    p = df.dp.protect(epsilon=2.0, delta=1e-6)
    q = df.dp.protect(epsilon=2.0, delta=1e-6, ledger=dpframe.Ledger(":memory:"))
    with pytest.raises((TypeError, ValueError, KeyError, dpframe.DPFrameError), match=message):
        fit(df, p, q)
    assert p.dp.budget.spent.epsilon == 0 and q.dp.budget.spent.epsilon == 0


def test_sgd_and_private_categories_are_refused_on_a_zcdp_budget_for_free() -> None:
    df = logistic_frame(500)
    df["text"] = df["g"].astype(str)
    p = df.dp.protect(rho=1.0)
    with pytest.raises(ValueError, match="method='gd'"):
        LogisticRegression(method="sgd", bounds=BOUNDS).fit(p[FEATURES], p["y"], rho=0.5)
    with pytest.raises(ValueError, match="selecting them privately needs an"):
        LogisticRegression(bounds={"x1": (0, 10)}).fit(p[["x1", "text"]], p["y"], rho=0.5)
    assert p.dp.budget.spent.rho == 0


def test_prediction_refuses_protected_data_and_needs_a_fit() -> None:
    df = logistic_frame(2_000)
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    with pytest.raises(AttributeError, match="not fitted"):
        LogisticRegression().predict(df[FEATURES])
    model = LogisticRegression(bounds=BOUNDS, steps=3).fit(p[FEATURES], p["y"], epsilon=1.0, delta=1e-6)
    with pytest.raises(dpframe.NotProtectedError, match="public data"):
        model.predict(p[FEATURES])
    assert model.predict(df[FEATURES].to_numpy()).shape == (2_000,)


def test_scikit_learn_conventions() -> None:
    sklearn_base = pytest.importorskip("sklearn.base")
    pipeline = pytest.importorskip("sklearn.pipeline")
    model = LogisticRegression(steps=7, bounds=BOUNDS)
    assert model.get_params()["steps"] == 7 and model.set_params(l2=0.1) is model
    twin = sklearn_base.clone(model)
    assert twin.get_params() == model.get_params() and twin is not model
    assert repr(model) == "LogisticRegression(steps=7, l2=0.1, bounds={'x1': (0, 10), 'x2': (-5, 5)})"
    with pytest.raises(ValueError, match="no parameter 'stepz'"):
        model.set_params(stepz=3)
    df = logistic_frame(5_000)
    p = df.dp.protect(epsilon=1.0, delta=1e-6)
    assert model.fit(p[FEATURES], p["y"], epsilon=1.0, delta=1e-6) is model
    fitted = pipeline.Pipeline([("model", model)])
    assert (fitted.predict(df[FEATURES]) == model.predict(df[FEATURES])).all()
    regression = sklearn_base.clone(LinearRegression(label_bounds=(0, 1)))
    assert regression.get_params() == {"method": "adassp", "steps": 40, "learning_rate": 0.25, "clipping_norm": 1.0,
                                       "label_bounds": (0, 1), "bounds": None, "categories": None}
    assert repr(LinearRegression(method="gd", label_bounds=(0, 1))) == (
        "LinearRegression(method='gd', label_bounds=(0, 1))")


# -- empirical privacy audit of one training step ------------------------------------------------------------

N_RELEASES = 400_000


def _one_step_releases(rows: pd.DataFrame, sigma_divisor: int) -> np.ndarray[Any, Any]:
    """N releases of the intercept coordinate of one full-batch step's noisy gradient sum (from zero weights)."""
    model = LogisticRegression(bounds={"x": (-1, 1)}, clipping_norm=0.5, steps=1)
    privacy = resolve(dpframe.Budget(epsilon=1.0, delta=1e-6), 1.0, 1e-6, None, "gaussian")
    schedule = model._schedule(privacy, 2, 1, Fraction(1), "LogisticRegression")
    design = plan_design(rows[["x"]], {"x": (-1, 1)}, None, estimator="test").matrix(rows[["x"]])
    exact = Units().clipped_sum(schedule.grid, design, 0.5 - rows["y"].to_numpy(float))
    with seeded_noise(11 + sigma_divisor):
        noise = sample_discrete_gaussian(schedule.sigma2 / sigma_divisor**2, N_RELEASES)
    return exact[1] + noise


def test_one_training_step_passes_an_empirical_privacy_audit() -> None:
    base = pd.DataFrame({"x": np.linspace(-1, 1, 200), "y": np.tile([0.0, 1.0], 100)})
    # The neighbour adds one unit whose gradient at zero weights is (0, 0.5): all on the intercept, clipped to 0.5.
    neighbour = pd.concat([base, pd.DataFrame({"x": [0.0], "y": [1.0]})], ignore_index=True)
    a, b = _one_step_releases(base, 1), _one_step_releases(neighbour, 1)
    assert epsilon_lower_bound(a, b, delta=1e-6) <= 1.0
    assert hockey_stick_lower_bound(a, b, epsilon=1.0) <= 1e-6
    # Positive control: a fifth of the noise is caught spending more than ε = 1.
    a, b = _one_step_releases(base, 5), _one_step_releases(neighbour, 5)
    assert epsilon_lower_bound(a, b, delta=1e-6) > 1.0


def test_benchmark_script_runs_on_a_slice_of_adult(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import sys
    from pathlib import Path

    pytest.importorskip("sklearn")
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_learning.py"
    spec = importlib.util.spec_from_file_location("bench_learning", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)
    spec.loader.exec_module(bench)
    found = bench.adult()
    if found is None:
        pytest.skip("shared Adult data not available")
    df, domain = found
    bench.classification(df.sample(4_000, random_state=0), domain, 1)
    bench.regression(df.sample(4_000, random_state=0), domain, 1)
    out = capsys.readouterr().out
    assert "dpframe gd" in out and "dpframe AdaSSP" in out
