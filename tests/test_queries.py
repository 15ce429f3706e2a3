"""Unit tests for every query path of the ``.dp`` accessor.

Most tests use a huge epsilon (so the noise is far below one unit and the
answer can be compared with pandas) under seeded noise, so they are
deterministic. Every bad-input test checks that nothing was charged.
"""

from __future__ import annotations

import math
import pickle
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpframe import Ledger
import dpframe
from dpframe import OTHER, BudgetExceededError, Cost, DPFloat, DPInt, NotProtectedError, Release
from dpframe.testing import NotPrivateWarning

pytestmark = pytest.mark.usefixtures("seeded")

HUGE = 1e6  # epsilon per query at which noise is far below one unit


@pytest.fixture
def p(people: pd.DataFrame) -> pd.DataFrame:
    """people, protected with a budget big enough for many HUGE queries."""
    return people.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9, delta=0.5)


@pytest.fixture
def z(people: pd.DataFrame) -> pd.DataFrame:
    """people, protected with a zCDP budget."""
    return people.dp.protect(ledger=Ledger.in_memory(), rho=1e9)


def spent(frame: pd.DataFrame | pd.Series) -> tuple[Cost, int]:
    budget = frame.dp.budget
    return budget.spent, len(budget.ledger)


def brackets(result: pd.Series | pd.DataFrame) -> bool:
    """True when attrs["dp"].lower <= result <= attrs["dp"].upper cell by cell (aligned on labels)."""
    rel = result.attrs["dp"]
    lower, upper = rel.lower, rel.upper
    if isinstance(result, pd.Series):
        lower, upper = lower.reindex(result.index), upper.reindex(result.index)
        return bool(((lower <= result) & (result <= upper)).all())
    lower = lower.reindex(index=result.index, columns=result.columns)
    upper = upper.reindex(index=result.index, columns=result.columns)
    return bool(((lower <= result) & (result <= upper)).all().all())


# ---------------------------------------------------------------------------
# count
# ---------------------------------------------------------------------------


def test_count_frame(p: pd.DataFrame, people: pd.DataFrame) -> None:
    n = p.dp.count(epsilon=HUGE)
    assert isinstance(n, DPInt) and isinstance(n, int)
    assert n == len(people)
    assert n.mechanism == "discrete Laplace"
    assert n.cost == Cost(epsilon=Fraction(10**6))
    assert n.ci[0] <= len(people) <= n.ci[1]


def test_count_moderate_epsilon_is_noisy_but_close(p: pd.DataFrame, people: pd.DataFrame) -> None:
    values = [int(p.dp.count(epsilon=0.5)) for _ in range(30)]
    assert len(set(values)) > 1  # noise is really added
    assert all(abs(v - len(people)) < 60 for v in values)  # scale 2: 60 is ~30 scales


def test_count_of_filtered_frame(p: pd.DataFrame, people: pd.DataFrame) -> None:
    assert p[p["age"] >= 50].dp.count(epsilon=HUGE) == int((people["age"] >= 50).sum())


@pytest.mark.parametrize(
    "values",
    [
        [1.0, np.nan, 3.0, np.nan, 5.0],
        pd.array([1, None, 3, None, 5], dtype="Int64"),
        ["a", None, "c", None, "e"],
        pd.Categorical(["a", None, "c", None, "e"]),
    ],
    ids=["float-nan", "Int64-NA", "object-None", "categorical-NaN"],
)
def test_count_series_excludes_missing(values: Any) -> None:
    s = pd.Series(values, name="v")
    ps = pd.DataFrame({"v": s}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e7)["v"]
    assert ps.dp.count(epsilon=HUGE) == 3
    # A series protected on its own works too.
    assert s.dp.protect(ledger=Ledger.in_memory(), epsilon=1e7).dp.count(epsilon=HUGE) == 3


# ---------------------------------------------------------------------------
# sum / mean / var / std
# ---------------------------------------------------------------------------


@pytest.fixture
def messy() -> pd.DataFrame:
    """Values in and out of bounds, with NaN and infinities."""
    x = [1.0, np.nan, np.inf, -np.inf, 500.0, 5.0, 5.0, 10.0, -1.0, 2.5, 7.25, 3.0] * 25
    return pd.DataFrame({"x": x})


def clipped(series: pd.Series, lo: float, hi: float) -> pd.Series:
    return series.dropna().clip(lo, hi)


def test_sum_clips_and_ignores_nan(messy: pd.DataFrame) -> None:
    px = messy.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)["x"]
    s = px.dp.sum(bounds=(0, 10), epsilon=HUGE)
    assert isinstance(s, DPFloat) and isinstance(s, float)
    assert s == pytest.approx(clipped(messy["x"], 0, 10).sum(), abs=1e-3)
    assert s.ci[0] <= s <= s.ci[1]


@pytest.mark.parametrize("bounds", [(-10, -1), (-5, 5), (2, 8), (0.5, 1e4)])
def test_sum_various_bounds(messy: pd.DataFrame, bounds: tuple[float, float]) -> None:
    px = messy.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)["x"]
    truth = clipped(messy["x"], *bounds).sum()
    s = px.dp.sum(bounds=bounds, epsilon=HUGE)
    assert s == pytest.approx(truth, abs=1e-3 * max(1, abs(bounds[0]), abs(bounds[1])))


def test_sum_bool_and_nullable_integer_columns() -> None:
    df = pd.DataFrame(
        {"b": [True, False, True, True] * 10, "i": pd.array([1, None, 3, 4] * 10, dtype="Int64")}
    )
    p = df.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)
    assert p["b"].dp.sum(bounds=(0, 1), epsilon=HUGE) == pytest.approx(30, abs=1e-3)
    assert p["i"].dp.sum(bounds=(0, 5), epsilon=HUGE) == pytest.approx(80, abs=1e-3)
    assert p["b"].dp.mean(bounds=(0, 1), epsilon=HUGE) == pytest.approx(0.75, abs=1e-4)


def test_mean_clips_and_ignores_nan(messy: pd.DataFrame) -> None:
    px = messy.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)["x"]
    truth = clipped(messy["x"], 0, 10).mean()
    m = px.dp.mean(bounds=(0, 10), epsilon=HUGE)
    assert isinstance(m, DPFloat)
    assert m == pytest.approx(truth, abs=1e-4)
    assert m.ci[0] <= m <= m.ci[1]


def test_mean_of_people(p: pd.DataFrame, people: pd.DataFrame) -> None:
    m = p["age"].dp.mean(bounds=(0, 125), epsilon=HUGE)
    assert m == pytest.approx(people["age"].mean(), abs=1e-4)
    assert m.release.bounds == (0.0, 125.0)


def test_mean_stays_within_bounds_at_tiny_epsilon() -> None:
    p = pd.DataFrame({"x": [9.0, 10.0, 10.0]}).dp.protect(ledger=Ledger.in_memory(), epsilon=100.0)
    for _ in range(50):
        m = p["x"].dp.mean(bounds=(0, 10), epsilon=0.01)
        assert 0 <= m <= 10
        assert 0 <= m.ci[0] <= m <= m.ci[1] <= 10


@pytest.fixture
def spread_data() -> pd.DataFrame:
    """Values strictly inside the bounds (0, 100), not at them, with NaN and outliers."""
    rng = np.random.default_rng(7)
    x = rng.uniform(20, 70, 3000)
    x[::97] = np.nan
    x[5] = 1000.0  # clipped to 100
    x[6] = -50.0  # clipped to 0
    return pd.DataFrame({"x": x, "g": pd.Categorical(rng.choice(["a", "b", "c"], 3000))})


def test_var_and_std_at_the_bounds() -> None:
    """Data sitting exactly on the bounds (the docstring's case), population variance."""
    p = pd.DataFrame({"x": [0.0, 10.0] * 500}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)
    assert p["x"].dp.var(bounds=(0, 10), epsilon=HUGE, ddof=0) == pytest.approx(25.0, rel=1e-6)
    assert p["x"].dp.std(bounds=(0, 10), epsilon=HUGE, ddof=0) == pytest.approx(5.0, rel=1e-6)


def test_sample_variance_may_exceed_squared_half_width() -> None:
    """Regression: the clamp to half-width**2 must apply before the ddof correction."""
    p = pd.DataFrame({"x": [0.0, 10.0] * 5}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)
    truth = pd.Series([0.0, 10.0] * 5).var()  # 27.78
    v = p["x"].dp.var(bounds=(0, 10), epsilon=HUGE)
    assert v == pytest.approx(truth, rel=1e-4)
    assert v.ci[0] <= truth <= v.ci[1]


@pytest.mark.parametrize("ddof", [0, 1])
def test_var_matches_clipped_variance(spread_data: pd.DataFrame, ddof: int) -> None:
    """Regression: squared deviations must be centred on half**2/2, not on the square grid's midpoint 0."""
    px = spread_data.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)["x"]
    truth = clipped(spread_data["x"], 0, 100).var(ddof=ddof)
    v = px.dp.var(bounds=(0, 100), epsilon=HUGE, ddof=ddof)
    assert v == pytest.approx(truth, rel=1e-3)


def test_std_matches_clipped_std(spread_data: pd.DataFrame) -> None:
    px = spread_data.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)["x"]
    truth = clipped(spread_data["x"], 0, 100).std()
    s = px.dp.std(bounds=(0, 100), epsilon=HUGE)
    assert s == pytest.approx(truth, rel=1e-3)


def test_var_of_small_integers() -> None:
    """var([1..9]) = 7.5; the implementation returns ~20.7 with bounds (0, 10)."""
    p = pd.DataFrame({"x": np.arange(1.0, 10.0)}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)
    assert p["x"].dp.var(bounds=(0, 10), epsilon=HUGE) == pytest.approx(7.5, rel=1e-4)


def test_var_std_shapes_and_ranges(spread_data: pd.DataFrame) -> None:
    """Whatever the estimate, var lies in [0, half-width**2], std is its square root, intervals hold them."""
    px = spread_data.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)["x"]
    v = px.dp.var(bounds=(0, 100), epsilon=1.0)
    s = px.dp.std(bounds=(0, 100), epsilon=1.0)
    assert 0 <= v <= 50**2 and 0 <= s <= 50
    assert v.ci[0] <= v <= v.ci[1] and s.ci[0] <= s <= s.ci[1]
    assert v.release.query == "var" and s.release.query == "std"


# ---------------------------------------------------------------------------
# histogram
# ---------------------------------------------------------------------------


def test_histogram_int_bins_with_bounds(p: pd.DataFrame, people: pd.DataFrame) -> None:
    h = p["age"].dp.histogram(bins=7, bounds=(10, 94), epsilon=HUGE)
    edges = np.linspace(10, 94, 8)
    expected, _ = np.histogram(people["age"], bins=edges)
    assert isinstance(h.index, pd.IntervalIndex)
    assert np.allclose(h.index.left, edges[:-1]) and np.allclose(h.index.right, edges[1:])
    assert h.index.name == "age" and h.name == "count"
    assert h.tolist() == expected.tolist()


def test_histogram_explicit_edges(p: pd.DataFrame, people: pd.DataFrame) -> None:
    h = p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=HUGE)
    expected, _ = np.histogram(people["age"], bins=np.arange(0, 130, 10))
    assert len(h) == 12
    assert h.tolist() == expected.tolist()
    assert h.sum() == len(people)  # every age is in [0, 120]


def test_histogram_drops_nan_inf_and_out_of_range_silently(messy: pd.DataFrame) -> None:
    px = messy.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)["x"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", NotPrivateWarning)
        h = px.dp.histogram(bins=[0, 2, 4, 6, 8, 10], epsilon=HUGE)
        h2 = px.dp.histogram(bins=5, bounds=(0, 10), epsilon=HUGE)
    finite = messy["x"][np.isfinite(messy["x"])]
    expected, _ = np.histogram(finite, bins=[0, 2, 4, 6, 8, 10])
    assert h.tolist() == expected.tolist() == h2.tolist()
    # NaN, +-inf, 500 and -1 are all dropped: 7 of the 12 values per block remain.
    assert h.sum() == 25 * 7


def test_histogram_all_missing_column() -> None:
    p = pd.DataFrame({"x": [np.nan] * 10}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)
    h = p["x"].dp.histogram(bins=3, bounds=(0, 1), epsilon=HUGE)
    assert h.tolist() == [0, 0, 0]


def test_histogram_release(p: pd.DataFrame) -> None:
    h = p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.5)
    rel = h.attrs["dp"]
    assert isinstance(rel, Release)
    assert rel.std == pytest.approx(math.sqrt(2) * 2, rel=0.05)  # discrete Laplace, scale 2
    assert brackets(h)
    assert (rel.upper - rel.lower).nunique() == 1
    assert rel.cost == Cost(epsilon=Fraction(1, 2))
    assert not h.dp.is_protected


# ---------------------------------------------------------------------------
# value_counts
# ---------------------------------------------------------------------------


def test_value_counts_declared_keys(p: pd.DataFrame, people: pd.DataFrame) -> None:
    vc = p["edu"].dp.value_counts(keys=["HS", "BA", "MA", "PhD"], epsilon=HUGE)
    truth = people["edu"].value_counts()
    assert set(vc.index) == {"HS", "BA", "MA", "PhD"}
    for key in ["HS", "BA", "MA"]:
        assert vc[key] == truth[key]
    assert vc["PhD"] == 0
    assert vc.name == "count" and vc.index.name == "edu"
    assert list(vc) == sorted(vc, reverse=True)  # sorted by default


def test_value_counts_absent_key_gets_noisy_answer(p: pd.DataFrame) -> None:
    """A declared key that does not occur is released with noise, not as an exact zero or a gap."""
    answers = [p["edu"].dp.value_counts(keys=["HS", "PhD"], epsilon=0.2)["PhD"] for _ in range(20)]
    assert any(a != 0 for a in answers)
    assert len(set(answers)) > 3


def test_value_counts_unsorted_keeps_key_order(p: pd.DataFrame) -> None:
    keys = ["MA", "PhD", "HS", "BA"]
    vc = p["edu"].dp.value_counts(keys=keys, sort=False, epsilon=1.0)
    assert list(vc.index) == keys


def test_value_counts_categorical(p: pd.DataFrame, people: pd.DataFrame) -> None:
    s = p.assign(sex=p["sex"].cat.add_categories(["X"]))["sex"]  # .cat methods drop attrs; assign keeps them
    vc = s.dp.value_counts(epsilon=HUGE, sort=False)
    assert list(vc.index) == ["F", "M", "X"]
    assert vc["F"] == (people["sex"] == "F").sum() and vc["X"] == 0


def test_value_counts_bool(p: pd.DataFrame, people: pd.DataFrame) -> None:
    vc = p["smoker"].dp.value_counts(epsilon=HUGE, sort=False)
    assert list(vc.index) == [False, True]
    assert vc[True] == people["smoker"].sum()


def test_value_counts_normalize(p: pd.DataFrame, people: pd.DataFrame) -> None:
    vc = p["edu"].dp.value_counts(keys=["HS", "BA", "MA"], normalize=True, epsilon=HUGE)
    assert vc.name == "proportion"
    assert vc.sum() == pytest.approx(1.0)
    assert (vc >= 0).all()
    truth = people["edu"].value_counts(normalize=True)
    for key in truth.index:
        assert vc[key] == pytest.approx(truth[key], abs=1e-9)
    small = p["edu"].dp.value_counts(keys=["HS", "BA", "MA", "PhD"], normalize=True, epsilon=0.01)
    assert (small >= 0).all() and small.sum() == pytest.approx(1.0)


def test_value_counts_normalize_intervals_describe_proportions(p: pd.DataFrame) -> None:
    vc = p["edu"].dp.value_counts(keys=["HS", "BA", "MA"], normalize=True, epsilon=1.0)
    assert vc.attrs["dp"].std < 1  # a proportion's noise std, not a count's
    assert brackets(vc)


def test_value_counts_undeclared_values_are_ignored_without_warning(p: pd.DataFrame, people: pd.DataFrame) -> None:
    """Regression: pd.Categorical(values, categories=keys) warns (and will raise) on undeclared values."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", NotPrivateWarning)
        vc = p["edu"].dp.value_counts(keys=["HS", "PhD"], epsilon=HUGE)
    assert list(vc.index) == ["HS", "PhD"]
    assert vc["HS"] == (people["edu"] == "HS").sum()


def test_value_counts_undeclared_values_are_ignored(p: pd.DataFrame, people: pd.DataFrame) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = p["edu"].dp.value_counts(keys=["HS", "PhD"], epsilon=HUGE)
    assert set(vc.index) == {"HS", "PhD"}
    assert vc["HS"] == (people["edu"] == "HS").sum()


@pytest.fixture
def rare() -> pd.DataFrame:
    """Three frequent categories and fifty that occur exactly once."""
    values = ["common"] * 600 + ["usual"] * 400 + ["frequent"] * 300 + [f"rare-{i}" for i in range(50)]
    return pd.DataFrame({"c": values, "d": ["x", "y"] * (len(values) // 2) + ["x"] * (len(values) % 2)})


def test_value_counts_private_selection(rare: pd.DataFrame) -> None:
    p = rare.dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, delta=1e-3)
    for _ in range(20):
        vc = p["c"].dp.value_counts(epsilon=1.0, delta=1e-6)
        assert {"common", "usual", "frequent"} <= set(vc.index)
        assert not any(str(k).startswith("rare") for k in vc.index)
        assert vc.index[-1] == "other (not released)" and abs(vc.iloc[-1] - 50) < 150
    # The first selects (delta, and a tenth of epsilon for the remainder); the rest reuse its categories.
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == ["value_counts", "rows in categories not released by value_counts"] + [
        "value_counts"] * 19
    assert "private partition selection" in ledger["rule"][0]
    assert ledger["rule"][2:].str.contains("categories released earlier").all()
    assert ledger["epsilon"].tolist() == pytest.approx([0.9, 0.1] + [1.0] * 19)
    # With public categories, a delta given selects the Gaussian mechanism, as with declared keys.
    assert ledger["mechanism"][2:].str.contains("Gaussian").all()
    fresh = rare.dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, delta=1e-3)
    for _ in range(5):
        fresh["c"].dp.value_counts(epsilon=1.0)  # the first takes a tenth of the budget's delta; then none
    assert fresh.dp.budget.ledger["delta"].tolist() == [1e-4, 0] + [0] * 4


@pytest.mark.parametrize("k", [2, 3])
def test_private_selection_with_several_rows_per_person(k: int) -> None:
    """A category held by one person with k rows (count k) is never released; frequent ones are."""
    common = [(f"u{i}", "common") for i in range(400)] + [(f"v{i}", "usual") for i in range(300)]
    rare = [(f"r{j}", f"rare-{j}") for j in range(30) for _ in range(k)]  # person r{j}: k rows of rare-{j}
    df = pd.DataFrame(common + rare, columns=["user", "c"])
    p = df.dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, delta=1e-3, privacy_unit="user", max_contributions=k)
    for _ in range(20):
        vc = p["c"].dp.value_counts(epsilon=1.0, delta=1e-6)
        assert {"common", "usual"} <= set(vc.index)
        assert not any(str(key).startswith("rare") for key in vc.index)
        groups = p.dp.groupby("c").count(epsilon=1.0, delta=1e-6)
        assert not any(str(key).startswith("rare") for key in groups.index)


def test_value_counts_selection_needs_delta(people: pd.DataFrame, p: pd.DataFrame, z: pd.DataFrame) -> None:
    pure = people.dp.protect(ledger=Ledger.in_memory(), epsilon=10.0)
    with pytest.raises(ValueError, match="not public"):
        pure["edu"].dp.value_counts(epsilon=1.0)
    assert pure.dp.budget.spent.epsilon.exact == 0
    before = spent(p)
    with pytest.raises(ValueError, match="Laplace"):
        p["edu"].dp.value_counts(epsilon=1.0, delta=1e-6, mechanism="gaussian")
    assert spent(p) == before
    before = spent(z)
    with pytest.raises(ValueError, match="not public"):
        z["edu"].dp.value_counts(rho=0.1)
    assert spent(z) == before


def test_selection_without_delta_spends_a_tenth_of_the_budget_delta(people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=10.0, delta=1e-5)
    counts = p["edu"].dp.value_counts(epsilon=1.0)
    assert set(counts.index) == {"HS", "BA", "MA", OTHER}
    ledger = p.dp.budget.ledger
    assert ledger["delta"].iloc[-2] == pytest.approx(1e-6)  # the counts; the remainder's line spends no delta
    p.dp.crosstab("edu", "smoker", epsilon=1.0)  # edu's categories are public now: no delta
    assert p.dp.budget.spent.delta.exact == Fraction(1, 10**6)
    p.dp.crosstab("tags", "sex", epsilon=1.0)  # a new selection
    assert p.dp.budget.spent.delta.exact == Fraction(2, 10**6)


def test_value_counts_selection_at_very_large_epsilon(rare: pd.DataFrame) -> None:
    """Regression: exp(-1/scale) underflowed to 0 and log(0) raised after the charge."""
    p = rare.dp.protect(ledger=Ledger.in_memory(), epsilon=1e4, delta=1e-3)
    vc = p["c"].dp.value_counts(epsilon=1000.0, delta=1e-6)
    assert {"common", "usual", "frequent"} <= set(vc.index)


@pytest.mark.parametrize("declared", [True, False])
def test_value_counts_unhashable_values_do_not_raise(people: pd.DataFrame, declared: bool) -> None:
    """Regression: a list in an object column must not raise (after the charge) -- it counts as missing."""
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=10.0, delta=1e-3)
    if declared:
        vc = p["tags"].dp.value_counts(keys=["a", "b"], epsilon=1.0)
    else:
        vc = p["tags"].dp.value_counts(epsilon=1.0, delta=1e-6)
    assert isinstance(vc, pd.Series)
    assert len(p.dp.budget.ledger) == (1 if declared else 2)  # selected categories: the counts and the remainder
    mixed = pd.DataFrame({"t": [[1], "a", "a", {"k": 1}, "b"] * 200}).dp.protect(ledger=Ledger.in_memory(), epsilon=1e7)
    counts = mixed["t"].dp.value_counts(keys=["a", "b"], epsilon=HUGE, sort=False)
    assert counts.tolist() == [400, 200]


# ---------------------------------------------------------------------------
# crosstab
# ---------------------------------------------------------------------------


def test_crosstab_categoricals(p: pd.DataFrame, people: pd.DataFrame) -> None:
    p2 = p.assign(edu=p["edu"].astype(pd.CategoricalDtype(["HS", "BA", "MA", "PhD"])))
    table = p2.dp.crosstab("sex", "edu", epsilon=HUGE)
    truth = pd.crosstab(people["sex"], people["edu"])
    assert table.shape == (2, 4)
    assert table.index.name == "sex" and table.columns.name == "edu"
    assert list(table.columns) == ["HS", "BA", "MA", "PhD"]
    for s in ["F", "M"]:
        for e in ["HS", "BA", "MA"]:
            assert table.loc[s, e] == truth.loc[s, e]
        assert table.loc[s, "PhD"] == 0
    assert isinstance(table.attrs["dp"], Release)
    assert not table.dp.is_protected


def test_crosstab_declared_keys_dict(p: pd.DataFrame, people: pd.DataFrame) -> None:
    table = p.dp.crosstab("edu", "smoker", keys={"edu": ["HS", "BA", "MA", "PhD"]}, epsilon=HUGE)
    assert list(table.index) == ["HS", "BA", "MA", "PhD"]
    assert list(table.columns) == [False, True]
    assert table.loc["HS", True] == ((people["edu"] == "HS") & people["smoker"]).sum()
    assert (table.loc["PhD"] == 0).all()
    assert brackets(table)


def test_crosstab_private_selection(rare: pd.DataFrame) -> None:
    p = rare.dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, delta=1e-3)
    table = p.dp.crosstab("c", "d", epsilon=1.0, delta=1e-6)
    assert {"common", "usual", "frequent"} <= set(table.index)
    assert not any(str(k).startswith("rare") for k in table.index)
    assert "private partition selection" in p.dp.budget.ledger["rule"].iloc[-1]


def test_crosstab_bad_keys_before_charge(p: pd.DataFrame) -> None:
    before = spent(p)
    with pytest.raises(KeyError):
        p.dp.crosstab("edu", "sex", keys={"age": [1, 2]}, epsilon=1.0)
    with pytest.raises(TypeError):
        p.dp.crosstab("edu", "sex", keys=["HS"], epsilon=1.0)
    with pytest.raises(KeyError):
        p.dp.crosstab("edu", "nope", epsilon=1.0)
    assert spent(p) == before


def test_undeclared_keys_on_a_pure_budget_are_refused(people: pd.DataFrame) -> None:
    pure = people.dp.protect(ledger=Ledger.in_memory(), epsilon=10.0)
    with pytest.raises(ValueError, match="not public"):
        pure.dp.crosstab("edu", "sex", epsilon=1.0)
    with pytest.raises(ValueError, match="not public"):
        pure.dp.groupby("edu").mean("age", bounds=(0, 125), epsilon=1.0)
    with pytest.raises(ValueError, match="not public"):
        pure.dp.groupby("edu").count(epsilon=1.0)
    with pytest.raises(ValueError, match="not public"):
        pure["edu"].dp.value_counts(epsilon=0.1)
    assert pure.dp.budget.spent.epsilon.exact == 0


# ---------------------------------------------------------------------------
# groupby
# ---------------------------------------------------------------------------


def test_groupby_count_sum_mean(p: pd.DataFrame, people: pd.DataFrame) -> None:
    g = p.dp.groupby("sex")
    truth = people.groupby("sex", observed=False)["age"]
    count = g.count(epsilon=HUGE)
    total = g.sum("age", bounds=(0, 125), epsilon=HUGE)
    mean = g.mean("age", bounds=(0, 125), epsilon=HUGE)
    assert list(count.index) == list(total.index) == list(mean.index) == ["F", "M"]
    assert count.tolist() == truth.size().tolist()
    assert np.allclose(total, truth.sum(), atol=1e-3)
    assert np.allclose(mean, truth.mean(), atol=1e-4)
    for result in (count, total, mean):
        assert isinstance(result.attrs["dp"], Release)
        assert brackets(result)
        assert not result.dp.is_protected


def test_groupby_var_std(p: pd.DataFrame, people: pd.DataFrame) -> None:
    g = p.dp.groupby("sex")
    truth = people.groupby("sex", observed=False)["age"]
    assert np.allclose(g.var("age", bounds=(0, 125), epsilon=HUGE), truth.var(), rtol=1e-3)
    assert np.allclose(g.std("age", bounds=(0, 125), epsilon=HUGE), truth.std(), rtol=1e-3)


def test_groupby_var_std_shapes(p: pd.DataFrame) -> None:
    g = p.dp.groupby("sex")
    v = g.var("age", bounds=(0, 125), epsilon=1.0)
    s = g.std("age", bounds=(0, 125), epsilon=1.0)
    assert list(v.index) == list(s.index) == ["F", "M"]
    assert ((v >= 0) & (v <= 62.5**2)).all()
    assert ((s >= 0) & (s <= 62.5)).all()
    for result in (v, s):
        assert brackets(result)


def test_groupby_declared_keys_with_empty_group(p: pd.DataFrame, people: pd.DataFrame) -> None:
    g = p.dp.groupby("edu", keys=["HS", "BA", "MA", "PhD"])
    count = g.count(epsilon=HUGE)
    mean = g.mean("age", bounds=(0, 125), epsilon=HUGE)
    total = g.sum("age", bounds=(0, 125), epsilon=HUGE)
    assert list(count.index) == ["HS", "BA", "MA", "PhD"]
    assert count["PhD"] == 0
    assert count["HS"] == (people["edu"] == "HS").sum()
    assert 0 <= mean["PhD"] <= 125 and np.isfinite(mean["PhD"])
    assert total["PhD"] == pytest.approx(0, abs=1e-3)
    assert mean["BA"] == pytest.approx(people.loc[people["edu"] == "BA", "age"].mean(), abs=1e-4)
    # The empty group still gets noise at a moderate epsilon.
    answers = {int(g.count(epsilon=0.2)["PhD"]) for _ in range(10)}
    assert len(answers) > 1


def test_groupby_multiple_columns(p: pd.DataFrame, people: pd.DataFrame) -> None:
    g = p.dp.groupby(["sex", "smoker"])
    count = g.count(epsilon=HUGE)
    assert isinstance(count.index, pd.MultiIndex)
    assert list(count.index.names) == ["sex", "smoker"]
    assert len(count) == 4
    assert count[("F", True)] == ((people["sex"] == "F") & people["smoker"]).sum()
    mean = p.dp.groupby(("sex", "edu"), keys={"edu": ["HS", "BA", "MA"]}).mean("age", bounds=(0, 125), epsilon=HUGE)
    assert len(mean) == 6
    truth = people.groupby(["sex", "edu"], observed=False)["age"].mean()
    assert mean[("M", "MA")] == pytest.approx(truth[("M", "MA")], abs=1e-4)


def test_groupby_private_selection(rare: pd.DataFrame) -> None:
    df = rare.assign(x=np.arange(len(rare)) % 10)
    p = df.dp.protect(ledger=Ledger.in_memory(), epsilon=1000.0, delta=1e-3)
    for method in ("count", "sum", "mean", "var", "std"):
        g = p.dp.groupby("c")
        if method == "count":
            result = g.count(epsilon=1.0, delta=1e-6)
        else:
            result = getattr(g, method)("x", bounds=(0, 10), epsilon=3.0, delta=1e-6)
        assert {"common", "usual", "frequent"} <= set(result.index), method
        assert not any(str(k).startswith("rare") for k in result.index), method
    ledger = p.dp.budget.ledger  # the count selects; the others use the categories it released
    assert ledger["query"][1] == "rows in categories not released by groupby count"
    assert "private" in ledger["rule"][0] and "outside the released categories" in ledger["rule"][1]
    assert not ledger["rule"][2:].str.contains("private").any()
    truth = df.groupby("c")["x"].mean()
    means = p.dp.groupby("c").mean("x", bounds=(0, 10), epsilon=100.0, delta=1e-6)
    assert means["common"] == pytest.approx(truth["common"], abs=0.05)


def test_groupby_errors_before_charge(p: pd.DataFrame) -> None:
    before = spent(p)
    with pytest.raises(KeyError):
        p.dp.groupby("nope")
    with pytest.raises(KeyError):
        p.dp.groupby("sex").mean("nope", bounds=(0, 1), epsilon=1.0)
    with pytest.raises(TypeError):
        p.dp.groupby("sex").mean("edu", bounds=(0, 1), epsilon=1.0)
    with pytest.raises(TypeError):
        p.dp.groupby("sex").sum("edu", bounds=(0, 1), epsilon=1.0)
    with pytest.raises(ValueError, match="bounds"):
        p.dp.groupby("sex").mean("age", bounds=(5, 1), epsilon=1.0)
    # Without bounds (found automatically), bad arguments are still refused before any charge.
    with pytest.raises(ValueError, match="ddof"):
        p.dp.groupby("sex").var("age", ddof=-1, epsilon=1.0)
    with pytest.raises(TypeError):
        p.dp.groupby("sex").mean("edu", epsilon=1.0)
    with pytest.raises(KeyError):
        p.dp.groupby("sex", keys={"edu": ["HS"]})
    assert spent(p) == before


# ---------------------------------------------------------------------------
# mechanisms and budgets
# ---------------------------------------------------------------------------


def test_gaussian_on_approx_budget(p: pd.DataFrame, people: pd.DataFrame) -> None:
    n = p.dp.count(epsilon=1.0, delta=1e-6)
    assert n.mechanism == "discrete Gaussian"
    assert n.cost == Cost(epsilon=Fraction(1), delta=Fraction(1, 10**6))
    explicit = p.dp.count(epsilon=1.0, delta=1e-6, mechanism="gaussian")
    assert explicit.mechanism == "discrete Gaussian" and explicit.std == pytest.approx(n.std)
    lap = p.dp.count(epsilon=1.0, mechanism="laplace")
    assert lap.mechanism == "discrete Laplace" and lap.cost.delta == 0
    m = p["age"].dp.mean(bounds=(0, 125), epsilon=HUGE, delta=1e-6)
    assert m.mechanism.startswith("discrete Gaussian")
    assert m == pytest.approx(people["age"].mean(), abs=1e-3)
    s = p["age"].dp.sum(bounds=(0, 125), epsilon=HUGE, delta=1e-6, mechanism="gaussian")
    assert s == pytest.approx(people["age"].sum(), abs=1.0)
    h = p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=1.0, delta=1e-6)
    assert h.attrs["dp"].mechanism == "discrete Gaussian"
    vc = p["edu"].dp.value_counts(keys=["HS", "BA"], epsilon=1.0, delta=1e-6)
    assert vc.attrs["dp"].mechanism == "discrete Gaussian"
    gm = p.dp.groupby("sex").mean("age", bounds=(0, 125), epsilon=1.0, delta=1e-6)
    assert gm.attrs["dp"].mechanism == "discrete Gaussian"
    ledger = p.dp.budget.ledger
    assert (ledger["rho"] == 0).all()


def test_gaussian_on_zcdp_budget(z: pd.DataFrame, people: pd.DataFrame) -> None:
    n = z.dp.count(rho=0.5)
    assert n.mechanism == "discrete Gaussian"
    assert n.cost == Cost(rho=Fraction(1, 2))
    assert n.std == pytest.approx(1.0, rel=0.01)  # sigma^2 = 1 / (2 * 0.5), discrete variance ~0.999
    lap = z.dp.count(epsilon=0.5)
    assert lap.mechanism == "discrete Laplace" and lap.cost == Cost(rho=Fraction(1, 8))
    lap2 = z.dp.count(rho=0.125, mechanism="laplace")
    assert lap2.mechanism == "discrete Laplace" and lap2.cost == Cost(rho=Fraction(1, 8))
    assert lap2.std == pytest.approx(lap.std, rel=1e-6)
    m = z["age"].dp.mean(bounds=(0, 125), rho=HUGE)
    assert m == pytest.approx(people["age"].mean(), abs=1e-3)
    h = z["age"].dp.histogram(bins=3, bounds=(0, 120), rho=HUGE)
    assert h.sum() == len(people)
    vc = z["sex"].dp.value_counts(rho=HUGE, sort=False)
    assert vc.tolist() == people["sex"].value_counts().sort_index().tolist()
    gs = z.dp.groupby("sex").sum("age", bounds=(0, 125), rho=HUGE)
    assert np.allclose(gs, people.groupby("sex", observed=False)["age"].sum(), atol=1e-2)
    ledger = z.dp.budget.ledger
    assert (ledger["epsilon"] == 0).all() and (ledger["delta"] == 0).all()
    assert ledger["rho"].sum() == pytest.approx(float(z.dp.budget.spent.rho.exact))


# ---------------------------------------------------------------------------
# result types
# ---------------------------------------------------------------------------


def test_dp_scalars_behave_as_numbers(p: pd.DataFrame) -> None:
    n = p.dp.count(epsilon=1.0)
    m = p["age"].dp.mean(bounds=(0, 125), epsilon=1.0)
    assert n + 1 == int(n) + 1 and n * 2 == 2 * int(n) and n - n == 0
    assert m + 1 == float(m) + 1 and m / 2 == float(m) / 2
    assert type(n + 1) is int and type(m * 2) is float  # arithmetic drops the release
    assert math.isclose(np.sqrt(m), math.sqrt(float(m)))
    assert round(m, 2) == round(float(m), 2)
    assert list(range(3))[: min(n, 2)] == [0, 1]
    assert f"{m:.1f}" == f"{float(m):.1f}" and f"{n:d}" == str(int(n))
    assert hash(n) == hash(int(n)) and hash(m) == hash(float(m))
    assert n > 0 and m > 0
    assert "95% CI" in repr(n) and "95% CI" in repr(m)
    assert pd.Series([m, m]).dtype == np.float64
    assert np.array([n]).dtype.kind == "i"


@pytest.mark.parametrize("query", ["count", "series count", "sum", "mean", "var", "std"])
def test_scalar_results_pickle_and_interval(p: pd.DataFrame, query: str) -> None:
    kwargs: dict[str, Any] = {"bounds": (0, 125), "epsilon": 0.5}
    result = {
        "count": lambda: p.dp.count(epsilon=0.5),
        "series count": lambda: p["age"].dp.count(epsilon=0.5),
        "sum": lambda: p["age"].dp.sum(**kwargs),
        "mean": lambda: p["age"].dp.mean(**kwargs),
        "var": lambda: p["age"].dp.var(**kwargs),
        "std": lambda: p["age"].dp.std(**kwargs),
    }[query]()
    assert result.ci[0] <= result <= result.ci[1]
    assert result.std > 0
    assert isinstance(result.release, Release)
    back = pickle.loads(pickle.dumps(result))
    assert type(back) is type(result)
    assert back == result
    assert back.std == result.std and back.ci == result.ci and back.mechanism == result.mechanism
    assert back.cost == result.cost == Cost(epsilon=Fraction(1, 2))


def test_series_results_carry_release_and_no_budget(p: pd.DataFrame) -> None:
    results = [
        p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.5),
        p["edu"].dp.value_counts(keys=["HS", "BA", "MA"], epsilon=0.5),
        p["sex"].dp.value_counts(epsilon=0.5, normalize=True),
        p.dp.crosstab("sex", "smoker", epsilon=0.5),
        p.dp.groupby("sex").count(epsilon=0.5),
        p.dp.groupby("sex").mean("age", bounds=(0, 125), epsilon=0.5),
        p.dp.groupby("sex").sum("age", bounds=(0, 125), epsilon=0.5),
    ]
    for result in results:
        assert isinstance(result.attrs["dp"], Release)
        assert "dpframe" not in result.attrs
        assert not result.dp.is_protected
        assert "_dp_unit" not in result.index.names
        with pytest.raises(NotProtectedError):
            result.dp.count(epsilon=0.1)
        with pytest.raises(NotProtectedError):
            result.dp.budget  # noqa: B018
        back = pickle.loads(pickle.dumps(result))
        assert isinstance(back.attrs["dp"], Release)
        # Results can be protected afresh (they are public now), e.g. for a demo.
        assert not back.dp.is_protected


# ---------------------------------------------------------------------------
# ledger
# ---------------------------------------------------------------------------


def test_ledger_one_row_per_query(p: pd.DataFrame) -> None:
    p.dp.count(epsilon=0.1)
    p["age"].dp.sum(bounds=(0, 125), epsilon=0.2)
    p["age"].dp.mean(bounds=(0, 125), epsilon=0.3)
    p["age"].dp.var(bounds=(0, 125), epsilon=0.25)
    p["age"].dp.std(bounds=(0, 125), epsilon=0.25)
    p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.4)
    p["edu"].dp.value_counts(keys=["HS", "BA", "MA"], epsilon=0.5)
    p["edu"].dp.value_counts(epsilon=0.5, delta=1e-6)
    p.dp.crosstab("sex", "smoker", epsilon=0.6)
    p.dp.groupby("sex").count(epsilon=0.7)
    p.dp.groupby("sex").mean("age", bounds=(0, 125), epsilon=0.8)
    p.dp.count(epsilon=0.9, delta=1e-5)
    ledger = p.dp.budget.ledger
    assert ledger["query"].tolist() == [
        "count", "sum", "mean", "var", "std", "histogram", "value_counts", "value_counts",
        "rows in categories not released by value_counts", "crosstab",
        "groupby count", "groupby mean", "count",
    ]
    assert ledger["epsilon"].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.25, 0.25, 0.4, 0.5, 0.45, 0.05, 0.6, 0.7, 0.8, 0.9])
    assert ledger["delta"].tolist() == [0] * 7 + [1e-6, 0, 0, 0, 0, 1e-5]
    sequential = ledger["query"].isin(["count", "sum", "mean", "var", "std"])
    assert ledger.loc[sequential, "rule"].str.contains("sequential").all()
    remainder = ledger["query"].str.startswith("rows in categories not released")
    assert ledger.loc[~sequential & ~remainder, "rule"].str.contains("parallel composition").all()
    assert ledger.loc[remainder, "rule"].str.contains("sequential composition").all()
    assert ledger["seeded"].all()  # the seeded fixture is on
    assert ledger.loc[1, "columns"] == "age" and ledger.loc[9, "columns"] == "sex, smoker"
    assert p.dp.budget.spent.epsilon.exact == Fraction(55, 10)
    assert p.dp.budget.spent.delta.exact == Fraction(11, 10**6)
    assert ledger["epsilon"].sum() == pytest.approx(5.5)


def test_refused_query_is_not_in_ledger(people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    p.dp.count(epsilon=0.7)
    with pytest.raises(BudgetExceededError):
        p["age"].dp.histogram(bins=3, bounds=(0, 100), epsilon=0.4)
    assert len(p.dp.budget.ledger) == 1
    assert p.dp.budget.spent.epsilon.exact == Fraction(7, 10)
    p["age"].dp.histogram(bins=3, bounds=(0, 100), epsilon=0.3)
    assert p.dp.budget.remaining.epsilon.exact == 0


# ---------------------------------------------------------------------------
# bad input is refused before any charge
# ---------------------------------------------------------------------------

BAD_EPSILONS = [0, 0.0, -0.1, float("nan"), float("inf"), -float("inf"), True, False, "0.1", None]

BAD_CALLS: dict[str, tuple[type[Exception], Callable[[pd.DataFrame], Any]]] = {
    "bounds reversed": (ValueError, lambda p: p["age"].dp.mean(bounds=(125, 0), epsilon=0.1)),
    "bounds equal": (ValueError, lambda p: p["age"].dp.sum(bounds=(5, 5), epsilon=0.1)),
    "bounds nan": (ValueError, lambda p: p["age"].dp.mean(bounds=(0, float("nan")), epsilon=0.1)),
    "bounds inf": (ValueError, lambda p: p["age"].dp.sum(bounds=(0, float("inf")), epsilon=0.1)),
    "bounds -inf": (ValueError, lambda p: p["age"].dp.var(bounds=(-float("inf"), 0), epsilon=0.1)),
    # Missing bounds are found automatically (tests/test_bounds.py); the other arguments are still
    # validated before anything, the bounds step included, is charged.
    "bounds missing, ddof bad": (ValueError, lambda p: p["age"].dp.std(ddof=-1, epsilon=0.1)),
    "bounds missing, mean of strings": (TypeError, lambda p: p["edu"].dp.mean(epsilon=0.1)),
    "bounds missing, gaussian without delta": (
        ValueError, lambda p: p["age"].dp.sum(epsilon=0.1, mechanism="gaussian"),
    ),
    "bounds missing, histogram zero bins": (ValueError, lambda p: p["age"].dp.histogram(bins=0, epsilon=0.1)),
    "bounds scalar": (TypeError, lambda p: p["age"].dp.mean(bounds=5, epsilon=0.1)),
    "bounds triple": (TypeError, lambda p: p["age"].dp.mean(bounds=(0, 1, 2), epsilon=0.1)),
    "bounds strings": (TypeError, lambda p: p["age"].dp.sum(bounds=("a", "b"), epsilon=0.1)),
    "unknown column groupby": (KeyError, lambda p: p.dp.groupby("nope").count(epsilon=0.1)),
    "unknown column crosstab": (KeyError, lambda p: p.dp.crosstab("nope", "sex", epsilon=0.1)),
    "unknown column frame": (KeyError, lambda p: p["nope"].dp.count(epsilon=0.1)),
    "mean of strings": (TypeError, lambda p: p["edu"].dp.mean(bounds=(0, 1), epsilon=0.1)),
    "sum of strings": (TypeError, lambda p: p["edu"].dp.sum(bounds=(0, 1), epsilon=0.1)),
    "var of categorical": (TypeError, lambda p: p["sex"].dp.var(bounds=(0, 1), epsilon=0.1)),
    "histogram of strings": (TypeError, lambda p: p["edu"].dp.histogram(bins=[0, 1], epsilon=0.1)),
    "histogram of lists": (TypeError, lambda p: p["tags"].dp.histogram(bins=[0, 1], epsilon=0.1)),
    "histogram zero bins": (ValueError, lambda p: p["age"].dp.histogram(bins=0, bounds=(0, 1), epsilon=0.1)),
    "histogram one edge": (ValueError, lambda p: p["age"].dp.histogram(bins=[1], epsilon=0.1)),
    "histogram decreasing": (ValueError, lambda p: p["age"].dp.histogram(bins=[3, 2, 1], epsilon=0.1)),
    "histogram repeated edge": (ValueError, lambda p: p["age"].dp.histogram(bins=[1, 2, 2], epsilon=0.1)),
    "histogram inf edge": (ValueError, lambda p: p["age"].dp.histogram(bins=[0, np.inf], epsilon=0.1)),
    "histogram nan edge": (ValueError, lambda p: p["age"].dp.histogram(bins=[0, np.nan, 2], epsilon=0.1)),
    "histogram str bins": (TypeError, lambda p: p["age"].dp.histogram(bins="abc", epsilon=0.1)),
    "histogram float bins": (TypeError, lambda p: p["age"].dp.histogram(bins=2.0, bounds=(0, 1), epsilon=0.1)),
    "keys string": (TypeError, lambda p: p["edu"].dp.value_counts(keys="HS", epsilon=0.1)),
    "keys empty": (ValueError, lambda p: p["edu"].dp.value_counts(keys=[], epsilon=0.1)),
    "keys duplicated": (ValueError, lambda p: p["edu"].dp.value_counts(keys=["HS", "HS"], epsilon=0.1)),
    "laplace with delta": (ValueError, lambda p: p.dp.count(epsilon=0.1, delta=1e-6, mechanism="laplace")),
    "laplace with delta mean": (
        ValueError, lambda p: p["age"].dp.mean(bounds=(0, 1), epsilon=0.1, delta=1e-6, mechanism="laplace"),
    ),
    "rho on epsilon budget": (ValueError, lambda p: p.dp.count(rho=0.1)),
    "rho and epsilon on epsilon budget": (ValueError, lambda p: p.dp.count(epsilon=0.1, rho=0.1)),
    "gaussian without delta": (ValueError, lambda p: p.dp.count(epsilon=0.1, mechanism="gaussian")),
    "gaussian delta zero": (ValueError, lambda p: p.dp.count(epsilon=0.1, delta=0.0, mechanism="gaussian")),
    "gaussian histogram no delta": (
        ValueError, lambda p: p["age"].dp.histogram(bins=[0, 1], epsilon=0.1, mechanism="gaussian"),
    ),
    "unknown mechanism": (ValueError, lambda p: p.dp.count(epsilon=0.1, mechanism="exponential")),
    "delta one": (ValueError, lambda p: p.dp.count(epsilon=0.1, delta=1.0)),
    "delta negative": (ValueError, lambda p: p.dp.count(epsilon=0.1, delta=-1e-6)),
    "delta nan": (ValueError, lambda p: p.dp.count(epsilon=0.1, delta=float("nan"))),
    "delta string": (TypeError, lambda p: p.dp.count(epsilon=0.1, delta="1e-6")),
    "no epsilon": (ValueError, lambda p: p.dp.count()),
}


@pytest.mark.parametrize("epsilon", BAD_EPSILONS, ids=repr)
@pytest.mark.parametrize(
    "query",
    [
        lambda p, e: p.dp.count(epsilon=e),
        lambda p, e: p["age"].dp.count(epsilon=e),
        lambda p, e: p["age"].dp.sum(bounds=(0, 125), epsilon=e),
        lambda p, e: p["age"].dp.mean(bounds=(0, 125), epsilon=e),
        lambda p, e: p["age"].dp.var(bounds=(0, 125), epsilon=e),
        lambda p, e: p["age"].dp.histogram(bins=[0, 50, 100], epsilon=e),
        lambda p, e: p["edu"].dp.value_counts(keys=["HS"], epsilon=e),
        lambda p, e: p.dp.crosstab("sex", "smoker", epsilon=e),
        lambda p, e: p.dp.groupby("sex").mean("age", bounds=(0, 125), epsilon=e),
    ],
    ids=["count", "series count", "sum", "mean", "var", "histogram", "value_counts", "crosstab", "groupby"],
)
def test_bad_epsilon_refused_before_charge(p: pd.DataFrame, query: Any, epsilon: Any) -> None:
    before = spent(p)
    with pytest.raises((ValueError, TypeError)):
        query(p, epsilon)
    assert spent(p) == before


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_input_refused_before_charge(p: pd.DataFrame, name: str) -> None:
    error, call = BAD_CALLS[name]
    before = spent(p)
    with pytest.raises(error):
        call(p)
    assert spent(p) == before


@pytest.mark.parametrize(
    "query, bounds",
    [
        ("mean", (-1e308, 1e308)),
        ("var", (-1e308, 1e308)),
        ("sum", (0, 1e-320)),
        ("mean", (0, 1e-320)),
        ("var", (0, 1e-320)),
    ],
)
def test_unrepresentable_bounds_raise_value_error(p: pd.DataFrame, bounds: tuple[float, float], query: str) -> None:
    before = spent(p)
    with pytest.raises(ValueError):
        getattr(p["income"].dp, query)(bounds=bounds, epsilon=0.1)
    assert spent(p) == before


@pytest.mark.parametrize("bad", [-0.1, 0, float("nan"), float("inf"), True, "0.1"], ids=repr)
def test_bad_rho_refused_before_charge(z: pd.DataFrame, bad: Any) -> None:
    before = spent(z)
    with pytest.raises((ValueError, TypeError)):
        z.dp.count(rho=bad)
    with pytest.raises((ValueError, TypeError)):
        z["age"].dp.mean(bounds=(0, 125), rho=bad)
    assert spent(z) == before


@pytest.mark.parametrize(
    "call",
    [
        lambda z: z.dp.count(epsilon=0.1, delta=1e-6),
        lambda z: z.dp.count(epsilon=0.1, rho=0.1),
        lambda z: z.dp.count(),
        lambda z: z.dp.count(epsilon=0.1, mechanism="gaussian"),
        lambda z: z["edu"].dp.value_counts(rho=0.1),
        lambda z: z.dp.groupby("edu").count(rho=0.1),
    ],
    ids=["delta on zcdp", "both", "neither", "gaussian via epsilon", "selection", "groupby selection"],
)
def test_bad_zcdp_arguments_refused_before_charge(z: pd.DataFrame, call: Any) -> None:
    before = spent(z)
    with pytest.raises(ValueError):
        call(z)
    assert spent(z) == before


def test_pure_budget_refuses_delta_without_charge(people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    with pytest.raises(BudgetExceededError):
        p.dp.count(epsilon=0.1, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        p["edu"].dp.value_counts(epsilon=0.1, delta=1e-6)
    assert p.dp.budget.spent == Cost()


@pytest.mark.parametrize("ddof", ["a", None, -1, 1.5, True])
def test_bad_ddof_refused_before_charge(p: pd.DataFrame, ddof: Any) -> None:
    """Regression: ddof used to be checked only after the charge (TypeError on n - ddof)."""
    before = spent(p)
    with pytest.raises((ValueError, TypeError)):
        p["age"].dp.var(bounds=(0, 125), epsilon=0.1, ddof=ddof)
    with pytest.raises((ValueError, TypeError)):
        p["age"].dp.std(bounds=(0, 125), epsilon=0.1, ddof=ddof)
    with pytest.raises((ValueError, TypeError)):
        p.dp.groupby("sex").var("age", bounds=(0, 125), epsilon=0.1, ddof=ddof)
    assert spent(p) == before


def test_numpy_float_epsilon_accepted(p: pd.DataFrame) -> None:
    """Regression: numpy 2's repr(np.float64(0.5)) is 'np.float64(0.5)', which Fraction() cannot parse."""
    n = p.dp.count(epsilon=np.float64(0.5))
    assert n.cost == Cost(epsilon=Fraction(1, 2))
    assert p.dp.count(epsilon=np.float32(0.25)).cost == Cost(epsilon=Fraction(1, 4))
    assert p.dp.count(epsilon=np.int64(2)).cost == Cost(epsilon=Fraction(2))
    before = spent(p)
    for bad in (np.float64("nan"), np.float64(-1), np.bool_(True)):
        with pytest.raises((ValueError, TypeError)):
            p.dp.count(epsilon=bad)
    assert spent(p) == before


def test_fraction_epsilon_accepted(p: pd.DataFrame) -> None:
    n = p.dp.count(epsilon=Fraction(1, 3))
    assert n.cost == Cost(epsilon=Fraction(1, 3))
    assert p.dp.budget.spent.epsilon.exact == Fraction(1, 3)


def test_budget_exceeded_on_huge_query(people: pd.DataFrame) -> None:
    p = people.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        p["age"].dp.mean(bounds=(0, 125), epsilon=1.5)
    with pytest.raises(BudgetExceededError):
        p.dp.count(epsilon=0.5, delta=1e-5)
    assert p.dp.budget.spent == Cost()


# ---------------------------------------------------------------------------
# error messages never contain data values
# ---------------------------------------------------------------------------

SECRETS = ["SECRET-42", "987654.321", "987654", "TOPSECRET", "31337"]


@pytest.fixture
def secret() -> pd.DataFrame:
    n = 60
    return pd.DataFrame(
        {
            "name": ["SECRET-42"] * 20 + ["TOPSECRET"] * 20 + ["other"] * 20,
            "amount": [987654.321] * 30 + [31337.0] * 30,
            "code": pd.Categorical(["SECRET-42", "TOPSECRET", "x"] * 20),
            "user": ["SECRET-42", "TOPSECRET", None] * 20,
            "flag": [True, False] * 30,
            "lists": [["SECRET-42"], ["TOPSECRET"]] * 30,
        },
        index=pd.Index([f"SECRET-42-{i}" for i in range(n)], name="row"),
    )


SECRET_CALLS: list[Callable[[pd.DataFrame], Any]] = [
    lambda p: p["name"].dp.mean(bounds=(0, 1), epsilon=0.1),
    lambda p: p["name"].dp.sum(bounds=(0, 1), epsilon=0.1),
    lambda p: p["code"].dp.var(bounds=(0, 1), epsilon=0.1),
    lambda p: p["name"].dp.histogram(bins=[0, 1], epsilon=0.1),
    lambda p: p["name"].dp.value_counts(epsilon=0.1),
    lambda p: p["name"].dp.value_counts(keys="SECRETS", epsilon=0.1),
    lambda p: p.dp.crosstab("name", "flag", epsilon=0.1),
    lambda p: p.dp.groupby("name").mean("amount", bounds=(0, 1), epsilon=0.1),
    lambda p: p.dp.groupby("name").count(epsilon=0.1),
    lambda p: p.dp.groupby("flag").mean("name", bounds=(0, 1), epsilon=0.1),
    lambda p: p.dp.groupby("nope"),
    lambda p: p["amount"].dp.mean(bounds=(1, 0), epsilon=0.1),
    lambda p: p["amount"].dp.mean(epsilon=2.0),  # automatic bounds + mean exceed the budget
    lambda p: p["amount"].dp.mean(bounds=(0, 1), epsilon=-1),
    lambda p: p["amount"].dp.mean(bounds=(0, 1), epsilon=1e6),
    lambda p: p["amount"].dp.histogram(bins=[2, 1], epsilon=0.1),
    lambda p: p["amount"].dp.count(epsilon=0.1, mechanism="gaussian"),
    lambda p: p["amount"].astype("int64"),
    lambda p: p["name"].astype("category"),
    lambda p: p["amount"].mean(),
    lambda p: p[p["amount"] > 5].head(),
    lambda p: p.merge(p, on="name"),
    lambda p: p.query("amount > amount.median()"),
    lambda p: p.sort_values("name").iloc[:3],
    lambda p: p.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0),
    lambda p: p["lists"].dp.histogram(bins=[0, 1], epsilon=0.1),
    lambda p: p.groupby("name")[["amount"]].sum().dp.count(epsilon=0.1),
]


@pytest.mark.parametrize("index", range(len(SECRET_CALLS)))
def test_error_messages_never_contain_data(secret: pd.DataFrame, index: int) -> None:
    p = secret.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    before = spent(p)
    with pytest.raises(Exception) as info:
        SECRET_CALLS[index](p)
    message = str(info.value) + repr(info.value)
    for value in SECRETS:
        assert value not in message
    assert spent(p) == before


@pytest.mark.parametrize(
    "protect",
    [
        lambda d: d.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, privacy_unit="user"),  # missing unit values
        lambda d: d.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, privacy_unit="nope"),
        lambda d: d.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, max_contributions=2),
        lambda d: d.dp.protect(ledger=Ledger.in_memory(), epsilon=-1.0),
        lambda d: d.iloc[:0].dp.protect(ledger=Ledger.in_memory(), epsilon=1.0),
    ],
)
def test_protect_error_messages_never_contain_data(secret: pd.DataFrame, protect: Any) -> None:
    with pytest.raises(Exception) as info:
        protect(secret)
    message = str(info.value) + repr(info.value)
    for value in SECRETS:
        assert value not in message


def test_privately_selected_keys_come_in_an_order_independent_of_the_data(people: pd.DataFrame) -> None:
    """Order of first appearance is private: selected keys are released sorted by value."""
    for frame in (people.dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, delta=1e-3), people.iloc[::-1].dp.protect(ledger=Ledger.in_memory(), epsilon=100.0, delta=1e-3)):
        counts = frame["edu"].dp.value_counts(epsilon=1.0, sort=False)
        assert list(counts.index) == ["BA", "HS", "MA", OTHER]
        groups = frame.dp.groupby("edu").mean("age", bounds=(0, 125), epsilon=1.0)
        assert list(groups.index) == ["BA", "HS", "MA"]
