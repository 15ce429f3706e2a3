"""The pandas spellings analysts type, one test per row of docs/pandas.md."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe  # noqa: F401
from dpframe import Ledger
from dpframe.testing import seeded_noise


def people(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(8)
    return pd.DataFrame({
        "sex": pd.Categorical(rng.choice(["F", "M"], n)),
        "age": rng.integers(18, 90, n).astype(float),
        "hours": rng.uniform(0, 60, n),
        "smoker": rng.random(n) < 0.3,
        "edu": rng.choice(["HS", "BA", "MA"], n),
        "date": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 3 * 365, n), unit="D"),
    })


@pytest.fixture
def data() -> pd.DataFrame:
    return people()


@pytest.fixture
def p(data: pd.DataFrame) -> dpframe.ProtectedFrame:
    return data.dp.protect(epsilon=1e6, delta=1e-3, ledger=Ledger.in_memory())


def spent(p: dpframe.ProtectedFrame) -> Fraction:
    return p.dp.budget.spent.epsilon.exact


def test_a_column_of_a_group_by(p: dpframe.ProtectedFrame, data: pd.DataFrame) -> None:
    with seeded_noise(1):
        means = p.dp.groupby("sex")["age"].mean(bounds=(0, 100), epsilon=1.0)
        present = p.dp.groupby("sex")["hours"].count(epsilon=1.0)
    truth = data.groupby("sex", observed=False)["age"].mean()
    assert list(means.index) == ["F", "M"] and np.abs(means - truth).max() < 1
    assert np.abs(present - data.groupby("sex", observed=False)["hours"].count()).max() < 20


def test_agg_size_and_several_columns(p: dpframe.ProtectedFrame, data: pd.DataFrame) -> None:
    gb = p.dp.groupby("sex")
    before = spent(p)
    with seeded_noise(2):
        table = gb.agg({"age": "mean", "hours": ["sum", "std"]}, bounds={"age": (0, 100), "hours": (0, 60)},
                       epsilon=0.9)
        sizes = gb.size(epsilon=1.0)
        both = gb.mean(["age", "hours"], bounds={"age": (0, 100), "hours": (0, 60)}, epsilon=1.0)
    assert list(table.columns) == [("age", "mean"), ("hours", "sum"), ("hours", "std")]
    assert abs(table.loc["F", ("hours", "sum")] - data[data.sex == "F"]["hours"].sum()) < 500
    assert "each of the 3 parts spent 1/3 of the budget" in table.attrs["dp"].note
    assert table.attrs["dp"].lower.shape == table.shape
    assert spent(p) - before == Fraction(29, 10)  # 0.9 + 1 + 1, each release reserved whole
    assert np.abs(sizes - data.groupby("sex", observed=False).size()).max() < 20
    assert list(both.columns) == ["age", "hours"] and abs(both.loc["M", "age"] - 53.5) < 3


def test_several_parts_need_a_way_to_public_groups_and_valid_arguments_before_any_charge(p: dpframe.ProtectedFrame) -> None:
    before = spent(p)
    with pytest.raises(ValueError, match="a median per group needs public groups"):
        p.dp.groupby("edu").agg({"age": "median"}, epsilon=1.0)
    with pytest.raises(ValueError, match="unknown statistic"):
        p.dp.groupby("sex").agg({"age": "average"}, epsilon=1.0)
    with pytest.raises(TypeError, match="needs a numeric column"):
        p.dp.groupby("sex").agg({"age": "mean", "edu": "sum"}, epsilon=1.0)
    with pytest.raises(KeyError):
        p.dp.groupby("sex")[["age", "nope"]]
    with pytest.raises(KeyError, match="not aggregated"):
        p.dp.groupby("sex").agg({"age": "mean"}, bounds={"hours": (0, 1)}, epsilon=1.0)
    assert spent(p) == before
    # Once released by a count, the groups are public: agg then works on them.
    p.dp.groupby("edu").count(epsilon=1.0)
    table = p.dp.groupby("edu").agg({"age": "mean", "hours": "sum"}, bounds=(0, 100), epsilon=1.0)
    assert {"BA", "HS", "MA"} <= set(table.index)


def test_group_by_and_crosstab_on_protected_series(p: dpframe.ProtectedFrame, data: pd.DataFrame) -> None:
    with seeded_noise(3):
        per_year = p.dp.groupby(p["date"].dt.year, keys=[2020, 2021, 2022]).count(epsilon=1.0)
        table = p.dp.crosstab(p["sex"], p["smoker"], epsilon=1.0)
    assert list(per_year.index) == [2020, 2021, 2022] and per_year.index.name == "date key"
    assert np.abs(per_year - data["date"].dt.year.value_counts().sort_index()).max() < 20
    assert table.shape == (2, 2) and abs(table.loc["F", True] - ((data.sex == "F") & data.smoker).sum()) < 20


def test_crosstab_margins_and_normalize_are_free(p: dpframe.ProtectedFrame, data: pd.DataFrame) -> None:
    before = spent(p)
    with seeded_noise(4):
        table = p.dp.crosstab("sex", "smoker", normalize="index", margins=True, epsilon=1.0)
    truth = pd.crosstab(data.sex, data.smoker, normalize="index", margins=True)
    assert table.shape == truth.shape == (3, 2) and list(table.index) == ["F", "M", "All"]
    assert np.allclose(table.loc["F"].sum(), 1.0)
    assert abs(table.loc["All", True] - data.smoker.mean()) < 0.02
    assert spent(p) - before == 1  # one measurement; margins and proportions are post-processing
    release = table.attrs["dp"]
    assert (release.lower <= table).all().all() and "proportions (index)" in release.note
    with pytest.raises(ValueError, match="normalize"):
        p.dp.crosstab("sex", "smoker", normalize="rows", epsilon=1.0)
    assert spent(p) - before == 1


def test_frame_value_counts(p: dpframe.ProtectedFrame, data: pd.DataFrame) -> None:
    with seeded_noise(5):
        vc = p.dp.value_counts(["sex", "smoker"], epsilon=1.0)
        shares = p.dp.value_counts(["sex", "smoker"], normalize=True, epsilon=1.0)
    truth = data.value_counts(["sex", "smoker"])
    assert vc.index.names == ["sex", "smoker"] and len(vc) == 4
    assert list(vc) == sorted(vc, reverse=True) and np.abs(vc - truth.reindex(vc.index)).max() < 20
    assert shares.sum() == pytest.approx(1.0)


def test_describe_a_series_and_by_dtype(p: dpframe.ProtectedFrame, data: pd.DataFrame) -> None:
    before = spent(p)
    with seeded_noise(6):
        ages = p["age"].dp.describe(epsilon=1.0, bounds=(0, 100))
        numbers = p.dp.describe(epsilon=1.0, include="number", bounds={"age": (0, 100), "hours": (0, 60)})
    assert ages.name == "age" and abs(ages["mean"] - data.age.mean()) < 1 and "50%" in ages.index
    assert ages.attrs["dp"].lower.index.equals(ages.index)
    assert list(numbers.columns) == ["age", "hours"]
    assert spent(p) - before == 2


def test_nunique_is_a_private_distinct_count(p: dpframe.ProtectedFrame) -> None:
    with seeded_noise(7):
        n = p["edu"].dp.nunique(epsilon=1.0)
    assert abs(n - 3) < 10 and n.release.query == "nunique" and n.ci[0] < n < n.ci[1]
    many = pd.DataFrame({"id": np.arange(5000) % 1234}).dp.protect(epsilon=1e6, ledger=Ledger.in_memory())
    runs = [many["id"].dp.nunique(epsilon=1.0) for _ in range(200)]
    covered = sum(r.ci[0] <= 1234 <= r.ci[1] for r in runs)
    assert covered >= 175  # nominal 95%: below 87.5% of 200 has probability < 1e-6


def test_group_by_median_and_quantiles(p: dpframe.ProtectedFrame, data: pd.DataFrame) -> None:
    before = spent(p)
    with seeded_noise(8):
        medians = p.dp.groupby("sex")["age"].median(bounds=(0, 100), epsilon=1.0)
        quartiles = p.dp.groupby("sex").quantile("hours", [0.25, 0.75], bounds=(0, 60), epsilon=1.0)
    truth = data.groupby("sex", observed=False)["age"].median()
    assert medians.name == "age" and np.abs(medians - truth).max() <= 3
    assert list(quartiles.columns) == [0.25, 0.75] and (quartiles[0.25] < quartiles[0.75]).all()
    assert "parallel composition over groups" in p.dp.budget.ledger["rule"].iloc[-1]
    assert spent(p) - before == 2
    # Groups that are not public: a private count selects them first (a quarter of the budget), in one reservation.
    with seeded_noise(9):
        by_edu = p.dp.groupby("edu").median("age", bounds=(0, 100), epsilon=1.0)
    assert set(by_edu.index) == {"HS", "BA", "MA"} and "selected privately first" in by_edu.attrs["dp"].note
    assert list(p.dp.budget.ledger["query"])[-3:] == ["groupby count", "rows in categories not released by groupby "
                                                      "count", "groupby median"]
    assert spent(p) - before == 3


def test_cov_and_corr_from_noisy_sufficient_statistics(data: pd.DataFrame) -> None:
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 10, 20_000)
    frame = pd.DataFrame({"x": x, "y": 3 - 0.5 * x + rng.normal(0, 1, 20_000), "z": rng.uniform(0, 1, 20_000)})
    frame.loc[::100, "z"] = np.nan
    p = frame.dp.protect(epsilon=100.0, ledger=Ledger.in_memory())
    bounds = {"x": (0, 10), "y": (-5, 6), "z": (0, 1)}
    with seeded_noise(10):
        cov = p.dp.cov(bounds=bounds, epsilon=5.0)
        corr = p.dp.corr(["x", "y"], bounds=bounds, epsilon=5.0)
    truth = frame.dropna().cov()
    assert np.abs(cov - truth).to_numpy().max() < 0.1
    assert abs(corr.loc["x", "y"] - frame[["x", "y"]].corr().loc["x", "y"]) < 0.02 and corr.loc["x", "x"] == 1
    ledger = p.dp.budget.ledger
    assert spent(p) == 10 and "no intervals" in cov.attrs["dp"].note
    assert (ledger["query"] == "count").sum() == 2 and (ledger["query"] == "sum").sum() == 3 + 6 + 2 + 3
    with pytest.raises(ValueError, match="needs bounds"):
        p.dp.cov(bounds={"x": (0, 10)}, epsilon=1.0)
    with pytest.raises(TypeError, match="needs bounds"):
        p.dp.corr(epsilon=1.0, bounds=None)  # type: ignore[arg-type]
    assert spent(p) == 10


def test_pivot_table(p: dpframe.ProtectedFrame, data: pd.DataFrame) -> None:
    with seeded_noise(11):
        table = p.dp.pivot_table("age", "sex", "smoker", aggfunc="mean", bounds=(0, 100), epsilon=1.0)
        counts = p.dp.pivot_table("age", "sex", "smoker", aggfunc="size", epsilon=1.0)
    truth = data.pivot_table("age", "sex", "smoker", aggfunc="mean", observed=False)
    assert table.shape == (2, 2) and np.abs(table - truth).to_numpy().max() < 2
    assert table.attrs["dp"].lower.shape == (2, 2)
    assert int(counts.to_numpy().sum()) == pytest.approx(len(data), abs=60)
    with pytest.raises(ValueError, match="aggfunc"):
        p.dp.pivot_table("age", "sex", "smoker", aggfunc="average", epsilon=1.0)


def test_value_counts_with_missing_values() -> None:
    frame = pd.DataFrame({"c": ["a"] * 500 + ["b"] * 300 + [None] * 100})
    p = frame.dp.protect(epsilon=100.0, delta=1e-5, ledger=Ledger.in_memory())
    with seeded_noise(12):
        declared = p["c"].dp.value_counts(keys=["a", "b"], dropna=False, epsilon=1.0)
        selected = p["c"].dp.value_counts(dropna=False, epsilon=1.0, delta=1e-6)
    assert declared.index[-1] != declared.index[-1] and abs(declared.iloc[-1] - 100) < 20  # the NaN label
    assert selected.index[-1] == dpframe.OTHER and selected.index.isna().sum() == 1
    assert declared.attrs["dp"].cost.epsilon == 1  # one measurement: the missing values are one more cell
    with pytest.raises(ValueError, match="one column"):
        p.assign(d=p["c"]).dp.value_counts(["c", "d"], dropna=False, epsilon=1.0)
