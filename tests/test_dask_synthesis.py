"""``p.dp.synthesize`` on Dask: the pandas synthetic frame and ledger lines, marginals counted on partitions."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import dask  # noqa: E402

import dpframe  # noqa: E402
import dpframe.dask  # noqa: E402
from dpframe.dask.synthesis import DaskReader, synthesize  # noqa: E402
from dpframe.errors import BudgetExceededError  # noqa: E402
from dpframe.synthesis import METHODS  # noqa: E402
from dpframe.synthesis.domain import plan_domains  # noqa: E402
from dpframe.synthesis.measure import CodedData  # noqa: E402
from dask_compare import ledger_lines  # noqa: E402
from dpframe.testing import seeded_noise  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")

CITIES = ["Oslo", "Rome", "Lima", "Kyiv"]  # Kyiv is declared but absent: a rare code, merged or dropped
DECLARED: dict[str, Any] = {
    "bounds": {"age": (18, 90), "income": (-10_000, 60_000)},
    "categories": {"city": CITIES},
    "bins": {"age": 8, "income": 6},
}


@pytest.fixture(scope="module")
def ddf() -> Any:
    rng = np.random.default_rng(1)  # the data, not the noise
    n = 3000
    age = rng.integers(18, 90, n)
    income = np.round(age * 500 + rng.normal(0, 5000, n))
    income[::29] = np.nan
    frame = pd.DataFrame({
        "age": age, "income": income, "sex": pd.Categorical(rng.choice(["F", "M"], n)),
        "smoker": rng.random(n) < 0.3 + (age > 50) * 0.3, "city": rng.choice(CITIES[:3], n, p=[0.6, 0.39, 0.01]),
    })
    return dd.from_pandas(frame, npartitions=4)


def _both(ddf: Any, **protect: Any) -> tuple[Any, Any]:
    # The pandas frame as Dask holds it (Dask may store text with another string dtype).
    pandas = ddf.compute().dp.protect(ledger=dpframe.Ledger.in_memory(), **protect)
    on_dask = ddf.dp.protect(name="dask synthesis", ledger=dpframe.Ledger.in_memory(), **protect)
    return pandas, on_dask


CASES = [(method, budget) for method in METHODS for budget in ("approx", "zcdp")] + [("mst", "pure")]
BUDGETS: dict[str, dict[str, Any]] = {"approx": {"epsilon": 10.0, "delta": 1e-6}, "zcdp": {"rho": 1.0},
                                      "pure": {"epsilon": 10.0}}
ASKED: dict[str, dict[str, Any]] = {"approx": {"epsilon": 2.0, "delta": 1e-6}, "zcdp": {"rho": 0.2}, "pure": {"epsilon": 2.0}}


@pytest.mark.parametrize(("method", "budget"), CASES)
def test_same_synthetic_frame_and_ledger_as_pandas(ddf: Any, method: str, budget: str) -> None:
    """Same seeded noise: the exact marginals are identical, so the model, the samples and the ledger are too."""
    pandas, on_dask = _both(ddf, **BUDGETS[budget])
    frames = []
    reader = DaskReader(on_dask._rows_in_use)
    for p in (pandas, on_dask):
        with seeded_noise(5), dask.config.set(scheduler="threads"):
            arguments = {"epsilon": None, "delta": None, "rho": None, "method": method, "progress": False,
                         **ASKED[budget], **DECLARED}
            if p is pandas:
                frames.append(p.dp.synthesize(**arguments))
            else:
                frames.append(synthesize(p, reader=reader, **arguments))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert frames[0].attrs["dp"] == frames[1].attrs["dp"]
    assert ledger_lines(pandas) == ledger_lines(on_dask) and len(ledger_lines(on_dask)) == 1
    # Every marginal MST or AIM may need is counted in the one-way marginals' pass: one Dask compute.
    assert len(reader.computes) == 1


def test_accessor_filters_and_random_state(ddf: Any) -> None:
    pandas, on_dask = _both(ddf, epsilon=10.0, delta=1e-6)
    frames = []
    for p in (pandas, on_dask):
        with dask.config.set(scheduler="sync"):
            frames.append(p[p["age"] > 30].dp.synthesize(1.0, 1e-6, method="mst", columns=["age", "sex", "city"],
                                                         random_state=3, progress=False, bounds={"age": (18, 90)},
                                                         bins=16, categories={"city": CITIES}))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert ledger_lines(pandas) == ledger_lines(on_dask)


def _watched(ddf: Any, **budget: Any) -> tuple[Any, list[int]]:
    """A protected Dask frame that records the ledger's length whenever Dask reads one of its partitions."""
    seen: list[int] = []

    def watched(part: pd.DataFrame) -> pd.DataFrame:
        seen.append(len(p.dp.budget.ledger))
        return part

    # A fresh token: Dask would otherwise reuse an earlier test's expression (and its watcher) of the same name.
    source = ddf.map_partitions(watched, meta=ddf._meta, token=f"watched-{uuid.uuid4().hex}")
    budget = budget or {"epsilon": 1.0, "delta": 1e-6}
    p = source.dp.protect(name="watched", ledger=dpframe.Ledger.in_memory(), **budget)
    return p, seen


REFUSED = [
    {"method": "pgm"},
    {"method": "mst", "marginals": [("age", "sex")]},
    {"columns": "age"},
    {"columns": ["age", "nope"]},
    {"bounds": {"agee": (0, 1)}},
    {"bins": {"age": 0}},
    {"n": -3},
    {"epsilon": 1e-5},
    {"epsilon": 5.0},  # more than the budget
    {"delta": 0.5},
]


@pytest.mark.parametrize("change", REFUSED)
def test_refusals_are_the_pandas_ones_and_free(ddf: Any, change: dict[str, Any]) -> None:
    pandas, _ = _both(ddf, epsilon=1.0, delta=1e-6)
    on_dask, seen = _watched(ddf)
    arguments = {"epsilon": 0.5, "delta": 1e-6, "method": "aim", "progress": False, **DECLARED, **change}
    errors = []
    for p in (pandas, on_dask):
        with pytest.raises(Exception) as error, dask.config.set(scheduler="sync"):
            p.dp.synthesize(**arguments)
        errors.append((type(error.value), str(error.value)))
    assert errors[0] == errors[1]
    assert seen == [] and ledger_lines(on_dask) == [] and ledger_lines(pandas) == []


@pytest.mark.parametrize("asked", [
    {"epsilon": 0.5, "delta": 1e-6},
    {"epsilon": 0.5, "delta": 1e-6, "categories": {"city": CITIES}},
    {"epsilon": 0.5, "delta": 1e-6, "bounds": {"income": (-10_000, 60_000), "age": (18, 90)}},
])
def test_selections_found_privately_as_on_pandas(ddf: Any, asked: dict[str, Any]) -> None:
    """Text categories and numbers' common values (partition selection, given delta): the value counts of the
    partitions added up, canonical keys in a public order, so the same seed gives the pandas frame and ledger."""
    pandas, on_dask = _both(ddf, epsilon=1.0, delta=1e-6)
    reader = DaskReader(on_dask._rows_in_use)
    frames = []
    arguments = {"rho": None, "method": "aim", "progress": False, **asked}
    for p in (pandas, on_dask):
        with seeded_noise(12), dask.config.set(scheduler="threads"):
            frames.append(p.dp.synthesize(**arguments) if p is pandas else synthesize(p, reader=reader, **arguments))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert frames[0].attrs["dp"] == frames[1].attrs["dp"]
    assert ledger_lines(pandas) == ledger_lines(on_dask)
    queries = [line["query"] for line in ledger_lines(on_dask)]
    assert ("categories for synthesize" in queries) == ("categories" not in asked)
    assert "values for synthesize" in queries
    # One pass per histogram and per selection, one for the rows and one for every marginal.
    assert len(reader.computes) == len(queries)


def test_datetime_bounds_dask_cannot_find_are_refused_before_any_charge(ddf: Any) -> None:
    """The sparse vector that finds a datetime's range is not built on Dask: refused, saying what to declare."""
    dated = ddf.assign(day=ddf["age"].astype("int64").map(lambda a: pd.Timestamp("2000-01-01") + pd.Timedelta(days=a),
                                                           meta=("day", "datetime64[ns]")))
    p, seen = _watched(dated, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError) as error:
        p.dp.synthesize(0.5, 1e-6, columns=["day", "city"], progress=False)
    assert str(error.value).startswith("synthesize on a Dask frame cannot find the domains of ['day'] privately yet: "
                                       "declare bounds={'day': (lower, upper)}")
    assert seen == [] and ledger_lines(p) == []


def test_other_refusals_cost_nothing(ddf: Any) -> None:
    p, seen = _watched(ddf)
    unknown = ddf.assign(sex=ddf["sex"].cat.as_unknown())
    for declared in (None, {"sex": ["F", "M"]}):
        with pytest.raises(ValueError, match=r"\['sex'\] are categorical with unknown categories"):
            unknown.dp.protect(epsilon=1.0, name="u", ledger=dpframe.Ledger.in_memory()).dp.synthesize(
                1.0, columns=["sex"], categories=declared, progress=False)
    with pytest.raises(TypeError, match="synthesize works on a protected DataFrame"):
        p["age"].dp.synthesize(0.5, progress=False)
    with pytest.raises(BudgetExceededError):
        p.dp.synthesize(2.0, 1e-6, progress=False, **DECLARED)
    assert seen == [] and ledger_lines(p) == []
    with dask.config.set(scheduler="sync"):  # with every domain declared: charged, then read
        p.dp.synthesize(0.5, progress=False, method="mst", **DECLARED)
    assert len(seen) == 4 and set(seen) == {1}  # one pass over the four partitions, after the one ledger line


@pytest.mark.parametrize(("method", "budget", "asked"), [
    ("mst", {"epsilon": 10.0}, {"epsilon": 2.0}),
    ("aim", {"rho": 1.0}, {"rho": 0.3}),
])
def test_numeric_domains_found_privately_as_on_pandas(ddf: Any, method: str, budget: dict[str, Any],
                                                      asked: dict[str, Any]) -> None:
    """Bounds, resolution and bins of undeclared numbers: the pandas histograms, counted on the partitions."""
    pandas, on_dask = _both(ddf, **budget)
    reader = DaskReader(on_dask._rows_in_use)
    frames = []
    arguments = {"epsilon": None, "delta": None, "rho": None, "method": method, "progress": False,
                 "columns": ["age", "income", "city"], "bins": 8, "categories": {"city": CITIES}, **asked}
    with seeded_noise(11), dask.config.set(scheduler="threads"):
        frames.append(pandas.dp.synthesize(**arguments))
    with seeded_noise(11), dask.config.set(scheduler="threads"):
        frames.append(synthesize(on_dask, reader=reader, **arguments))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert frames[0].attrs["dp"] == frames[1].attrs["dp"]
    queries = [line["query"] for line in ledger_lines(on_dask)]
    assert ledger_lines(pandas) == ledger_lines(on_dask)
    # The rows; age (int): bounds, bins; income (float): resolution, bounds, bins; then the model.
    assert queries == ["rows for synthesize", "bounds for synthesize", "bins for synthesize", "resolution for synthesize",
                       "bounds for synthesize", "bins for synthesize", "synthesize"]
    assert len(reader.computes) == len(queries)  # one pass per histogram, one for every marginal


def test_recoded_counts_are_the_in_memory_ones(ddf: Any) -> None:
    """Merging and dropping codes on the counts gives the counts of the recoded data, also when composed."""
    _, on_dask = _both(ddf, epsilon=1.0)
    frame = ddf.compute()
    reader = DaskReader(on_dask._rows_in_use)
    plan = plan_domains(frame, ["age", "sex", "city"], bounds={"age": (18, 90)}, categories={"city": CITIES}, bins=8)
    domains = list(plan.public_domains().values())
    coded = CodedData(tuple(d.encode(frame[d.name]).astype(np.int32) for d in domains),
                      tuple(d.size for d in domains), tuple(d.missing_codes for d in domains))
    lazy = reader.marginals(on_dask._target(), ["age", "sex", "city"], domains)
    first = np.array([0, 0, 1, 2, -1, 3, 3, 4], dtype=np.int32)  # age: 8 bins onto 5 codes (one dropped)
    second = np.array([1, -1, 0, 0, 2], dtype=np.int32)  # then onto 3 codes
    city = np.array([0, 1, 2, 2, -1, -1], dtype=np.int32)  # rare Lima and Kyiv merged, other and missing dropped
    composed = np.where(first >= 0, second[np.maximum(first, 0)], -1).astype(np.int32)
    expected = coded.recode(0, composed, 3).recode(2, city, 3)
    got = lazy.recode(0, first, 5).recode(0, second, 3).recode(2, city, 3)
    cliques = [(0,), (0, 2), (2, 1, 0)]
    for table, want in zip(got.counts_of(cliques), expected.counts_of(cliques)):
        np.testing.assert_array_equal(table, want)
    assert got.missing == expected.missing
    assert reader.computes == [3]
