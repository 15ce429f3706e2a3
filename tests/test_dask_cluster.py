"""The Dask path on a ``distributed.LocalCluster`` (2 worker processes): the pandas answers, ledger lines, refusals.

Noise is drawn on the client, so under ``seeded_noise`` a query computed on the cluster gives the pandas
answer exactly. To add a query, append a :class:`Case` to ``CASES``: a name, the call on a protected pandas
frame and, when it differs, the call on a protected Dask frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import dask

import dpframe
import dpframe.dask
from dpframe.errors import BudgetExceededError, RefusedError
from dpframe.noise.random import current_source
from dask_compare import ledger_lines
from dpframe.testing import seeded_noise

# The scheduler's HTTP routes take another port when 8787 is taken (by another cluster on this machine).
pytestmark = [pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning"),
              pytest.mark.filterwarnings("ignore:Port 8787 is already in use"),
              # automatic bounds with a privacy unit of many rows clip much (the noise scales with k)
              pytest.mark.filterwarnings("ignore::dpframe.errors.ClippingWarning")]


@dataclasses.dataclass(frozen=True)
class Case:
    """One query: ``pandas(p)`` on the protected pandas frame, ``dask(p)`` (default: the same) on the Dask one."""

    name: str
    pandas: Callable[[Any], Any]
    dask: Callable[[Any], Any] | None = None
    units: bool = True  # also run with a privacy unit (synthesize on Dask is row-level only)

    def on(self, p: Any) -> Any:
        on_dask = isinstance(p, dpframe.dask.ProtectedDaskFrame)
        return (self.dask or self.pandas)(p) if on_dask else self.pandas(p)


CASES = [
    Case("count", lambda p: p.dp.count(epsilon=0.5)),
    Case("count of a column", lambda p: p["x"].dp.count(epsilon=0.5)),
    Case("sum", lambda p: p["x"].dp.sum(bounds=(0, 100), epsilon=0.5)),
    Case("sum of integers, gaussian", lambda p: p["n"].dp.sum(bounds=(0, 100), epsilon=0.5, mechanism="gaussian",
                                                              delta=1e-6)),
    Case("mean", lambda p: p["x"].dp.mean(bounds=(-10, 120), epsilon=0.5)),
    Case("mean of a filter", lambda p: p[p["g"] == "a"]["x"].dp.mean(bounds=(0, 100), epsilon=0.5)),
    Case("sum after logical and reflected operators",
         lambda p: (100 - p[(p["x"] > 40) & ~(p["g"] == "a")]["x"]).abs().dp.sum(bounds=(0, 100), epsilon=0.5)),
    Case("sum of an assigned column", lambda p: p.assign(y=p["x"] * 2)["y"].dp.sum(bounds=(0, 300), epsilon=0.5)),
    Case("variance", lambda p: p["x"].dp.var(bounds=(0, 100), epsilon=0.5)),
    Case("mean, automatic bounds", lambda p: p["x"].dp.mean(epsilon=0.5)),
    Case("median, automatic bounds", lambda p: p["x"].dp.median(epsilon=0.5)),
    Case("quantiles of integers", lambda p: p["n"].dp.quantile([0.25, 0.75], bounds=(0, 100), epsilon=0.5)),
    Case("describe", lambda p: p[["x", "n"]].dp.describe(epsilon=1.0, bounds={"x": (0, 100), "n": (0, 100)},
                                                        progress=False)),
    Case("histogram", lambda p: p["x"].dp.histogram(bins=[0, 25, 50, 75, 100], epsilon=0.5)),
    # With a unit, private keys are numbered in order of first appearance, which the shuffle by unit changes: the
    # same distribution, but the seeded draws fall on other keys.
    Case("value_counts, keys selected privately", lambda p: p["g"].dp.value_counts(epsilon=0.5, delta=1e-6),
         units=False),
    Case("value_counts, declared keys", lambda p: p["g"].dp.value_counts(keys=["a", "b"], epsilon=0.5)),
    Case("crosstab, declared keys", lambda p: p.dp.crosstab("g", "b", keys={"g": ["a", "b"], "b": [False, True]},
                                                           epsilon=0.5)),
    Case("groupby mean", lambda p: p.dp.groupby("g", keys=["a", "b"])["x"].mean(bounds=(0, 100), epsilon=0.5)),
    Case("histogram, automatic bounds", lambda p: p["x"].dp.histogram(bins=5, epsilon=0.5)),
    Case("groupby median, automatic bounds", lambda p: p.dp.groupby("g", keys=["a", "b"])["x"].median(epsilon=0.5)),
    Case("describe, with text and booleans",
         lambda p: p[["x", "g", "b"]].dp.describe(epsilon=1.0, keys={"g": ["a", "b"]}, progress=False)),
    Case("synthesize, declared domains",
         lambda p: p[["n", "g"]].dp.synthesize(epsilon=1.0, method="mst", bounds={"n": (0, 100)}, bins=16,
                                               categories={"g": ["a", "b"]}, progress=False, random_state=1),
         units=False),
    Case("mode, declared keys", lambda p: p["g"].dp.mode(keys=["a", "b", "c"], epsilon=0.5)),
    Case("top_k, booleans", lambda p: p["b"].dp.top_k(2, epsilon=0.5)),
    Case("chisquare (its released table)",
         lambda p: p.dp.chisquare("g", {"a": 0.5, "b": 0.5}, epsilon=0.5, simulations=99).table),
    Case("chi2_contingency (its released table)",
         lambda p: p.dp.chi2_contingency("g", "b", keys={"g": ["a", "b"]}, epsilon=0.5, simulations=99).table),
]

REFUSALS = [
    Case("exact read", lambda p: p["x"].max()),
    Case("length", len),
    Case("over budget", lambda p: p["x"].dp.mean(bounds=(0, 100), epsilon=1000.0)),
    Case("negative epsilon", lambda p: p["x"].dp.mean(bounds=(0, 1), epsilon=-0.5)),
    Case("reversed bounds", lambda p: p["x"].dp.sum(bounds=(100, 0), epsilon=0.5)),
]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes with one thread and little memory each; no dashboard (nothing listens on a port)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="768MiB",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as connected:
        yield connected


@pytest.fixture
def df() -> pd.DataFrame:
    rng = np.random.default_rng(7)  # the data, not the noise
    x = rng.normal(50, 20, 3000)
    x[::17] = np.nan
    return pd.DataFrame({"x": x, "n": rng.integers(0, 100, 3000), "g": rng.choice(["a", "b"], 3000),
                         "b": rng.random(3000) < 0.3, "user": rng.integers(0, 900, 3000)})


def _both(df: pd.DataFrame, **units: Any) -> tuple[Any, Any]:
    # pandas gets the frame as Dask holds it (Dask stores text as its string dtype)
    df = dd.from_pandas(df, npartitions=1).compute()
    pandas = df.dp.protect(epsilon=20.0, delta=1e-5, ledger=dpframe.Ledger.in_memory(), **units)
    on_dask = dd.from_pandas(df, npartitions=4).dp.protect(epsilon=20.0, delta=1e-5, name="cluster test",
                                                           ledger=dpframe.Ledger.in_memory(), **units)
    return pandas, on_dask


def _same(a: Any, b: Any) -> None:
    """The same answer and release (scalars, or tables with their release in ``.dp.release``)."""
    if isinstance(a, (pd.Series, pd.DataFrame)):
        (pd.testing.assert_frame_equal if isinstance(a, pd.DataFrame) else pd.testing.assert_series_equal)(a, b)
        release_a, release_b = a.attrs.get("dp"), b.attrs.get("dp")
        assert repr(release_a) == repr(release_b)
        return
    assert a == b
    assert repr(dataclasses.astuple(a.release)) == repr(dataclasses.astuple(b.release))  # NaN (no std) equal


def test_the_queries_run_on_the_workers(client: Any, df: pd.DataFrame) -> None:
    _, on_dask = _both(df)
    assert dask.base.get_scheduler() == client.get
    before = sum(client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.executed_count).values())
    on_dask.dp.count(epsilon=0.5)
    after = sum(client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.executed_count).values())
    assert after > before


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_same_answer_release_and_ledger_as_pandas(client: Any, df: pd.DataFrame, case: Case) -> None:
    pandas, on_dask = _both(df)
    answers = []
    for p in (pandas, on_dask):
        with seeded_noise(3):
            answers.append(case.on(p))
    _same(*answers)
    assert ledger_lines(pandas) == ledger_lines(on_dask)


@pytest.mark.parametrize("case", [c for c in CASES if c.units], ids=lambda c: c.name)
def test_units_on_the_cluster(client: Any, df: pd.DataFrame, case: Case) -> None:
    """Units within the bound: pandas' answer once pandas skips the selection key's words; same ledger."""
    k = int(df.groupby("user").size().max())
    pandas, on_dask = _both(df, privacy_unit="user", max_contributions=k)
    with seeded_noise(5):
        current_source().words(4)
        expected = case.on(pandas)
    with seeded_noise(5):
        answer = case.on(on_dask)
    _same(answer, expected)
    assert ledger_lines(pandas) == ledger_lines(on_dask)


def test_units_are_bounded_across_worker_partitions(client: Any, df: pd.DataFrame) -> None:
    _, on_dask = _both(df, privacy_unit="user", max_contributions=2)
    kept = on_dask._rows_in_use.compute().groupby("user").size()  # internal: the rows one read may use
    assert kept.equals(df.groupby("user").size().clip(upper=2))


@pytest.mark.parametrize("case", REFUSALS, ids=lambda c: c.name)
def test_refusals_are_the_pandas_ones(client: Any, df: pd.DataFrame, case: Case) -> None:
    pandas, on_dask = _both(df)
    errors = []
    for p in (pandas, on_dask):
        with pytest.raises((RefusedError, BudgetExceededError, ValueError, TypeError)) as error:
            case.on(p)
        errors.append((type(error.value), str(error.value)))
    assert errors[0] == errors[1]
    assert ledger_lines(on_dask) == ledger_lines(pandas) == []
