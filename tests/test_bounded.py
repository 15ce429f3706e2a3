"""Bounded DP (replace-one neighbours, public n): protect(neighbours="replace").

Sensitivities are checked against their derivations (docs/privacy-model.md), every other query is refused
before anything is charged, a budget never mixes the two neighbouring relations, and an empirical audit
(tests/privacy_audit.py: Clopper-Pearson lower bounds that a correct mechanism exceeds with probability
< 1e-6) checks a sum and a histogram between two frames that differ in one replaced row.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe import Ledger, RefusedError
from dpframe.testing import NotPrivateWarning, seeded_noise
from privacy_audit import epsilon_lower_bound, ranks

@pytest.fixture(autouse=True)
def _quiet_seeding() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        yield


def frame(n: int = 1000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 91, n), "grade": pd.Categorical(rng.choice(list("abc"), n)),
                         "score": rng.random(n)})


def bounded(df: pd.DataFrame, **budget: Any) -> Any:
    return df.dp.protect(neighbours="replace", ledger=Ledger.in_memory(), **(budget or {"epsilon": 1.0}))


def test_the_count_is_public_and_free() -> None:
    p = bounded(frame())
    n = p.dp.count()
    assert n == 1000 and n.std == 0 and n.cost.epsilon == 0
    assert p["age"].dp.count() == 1000  # an integer column of the protected rows: no value can be missing
    line = p.dp.budget.ledger.iloc[-1]
    assert line["query"] == "count" and line["epsilon"] == 0 and "public" in line["rule"]


def test_counts_of_derived_rows_are_noisy_with_sensitivity_one() -> None:
    p = bounded(frame())
    filtered = p[p["age"] > 40].dp.count(epsilon=0.5)
    reference = frame().dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    assert filtered.std == reference[reference["age"] > 40].dp.count(epsilon=0.5).std > 0
    assert p["score"].dp.count(epsilon=0.5).std > 0  # a float column may hold missing values


def test_histogram_sensitivity_is_two() -> None:
    p, q = bounded(frame(), epsilon=2.0), frame().dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    for ask in (lambda r, e: r["age"].dp.histogram(bins=[18, 40, 60, 91], epsilon=e),
                lambda r, e: r["grade"].dp.value_counts(epsilon=e),
                lambda r, e: r.dp.crosstab("grade", r["age"] > 50, epsilon=e)):
        assert ask(p, 0.5).dp.release.std == ask(q, 0.25).dp.release.std  # L1 2 at ε: L1 1 at ε/2


@pytest.mark.parametrize("bounds, replace, add_remove", [((18, 90), 72, 90), ((-1, 1), 2, 1), ((10, 12), 2, 12)])
def test_sum_sensitivity(bounds: tuple[float, float], replace: float, add_remove: float) -> None:
    df = frame().assign(whole=lambda d: d["age"].astype("int64"))
    p, q = bounded(df), df.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    ours = p["whole"].dp.sum(bounds=bounds, epsilon=0.5).std
    theirs = q["whole"].dp.sum(bounds=bounds, epsilon=0.5).std
    assert ours / theirs == pytest.approx(replace / add_remove, rel=1e-3)
    # A column that may hold missing values, or derived rows: a value can also drop out, max(U - L, |L|, |U|).
    general = max(bounds[1] - bounds[0], abs(bounds[0]), abs(bounds[1]))
    assert p["score"].dp.sum(bounds=bounds, epsilon=0.5).std / theirs == pytest.approx(general / add_remove,
                                                                                          rel=1e-3)


def test_mean_uses_the_public_n() -> None:
    df = frame().assign(whole=lambda d: d["age"].astype("int64"))
    p = bounded(df)
    mean = p["whole"].dp.mean(bounds=(18, 90), epsilon=0.5)
    # Noise: discrete Laplace of scale 72 / 0.5 on the sum, over the public n = 1000: P(|error| >= 3) < 1e-9.
    assert abs(mean - df["whole"].mean()) < 3 and mean.std == pytest.approx(
        p["whole"].dp.sum(bounds=(18, 90), epsilon=0.5).std / 1000, rel=1e-6)
    with pytest.raises(RefusedError, match="replace-one"):
        p["score"].dp.mean(bounds=(0, 1), epsilon=0.5)  # n of a column that may hold missing values is not public


@pytest.mark.parametrize("ask", [
    lambda p: p["age"].dp.median(bounds=(0, 100), epsilon=0.5),
    lambda p: p["age"].dp.sum(epsilon=0.5),  # automatic bounds
    lambda p: p["age"].dp.var(bounds=(0, 100), epsilon=0.5),
    lambda p: p.dp.groupby("grade").mean("age", bounds=(0, 100), epsilon=0.5),
    lambda p: p["age"].astype(str).dp.value_counts(epsilon=0.5, delta=1e-7),  # private selection
    lambda p: p.dp.synthesize(epsilon=0.5, progress=False),
    lambda p: p.dp.sample(0.5),
])
def test_queries_without_a_replace_one_derivation_are_refused_and_cost_nothing(ask: Callable[[Any], Any]) -> None:
    p = bounded(frame(), epsilon=1.0, delta=1e-6)
    with pytest.raises(RefusedError, match="replace-one"):
        ask(p)
    assert p.dp.budget.spent.epsilon.exact == 0 and p.dp.budget.spent.delta.exact == 0
    assert list(p.dp.budget.ledger["query"]) == ["bounded DP"]


def test_a_pickle_stays_bounded(tmp_path: Any) -> None:
    import pickle

    original = frame().dp.protect(epsilon=1.0, neighbours="replace", ledger=tmp_path / "ledger.sqlite")
    p = pickle.loads(pickle.dumps(original))
    assert p.dp.count() == 1000  # still the rows protect() made, still public
    with pytest.raises(RefusedError, match="replace-one"):
        p["age"].dp.median(bounds=(0, 100), epsilon=0.5)


def test_a_preview_of_a_refused_query_is_refused() -> None:
    with pytest.raises(RefusedError, match="replace-one"):
        bounded(frame()).dp.preview("describe", epsilon=0.5)


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="neighbours"):
        frame().dp.protect(epsilon=1.0, neighbours="swap", ledger=Ledger.in_memory())
    with pytest.raises(ValueError, match="privacy_unit"):
        frame().assign(u=1).dp.protect(epsilon=1.0, neighbours="replace", privacy_unit="u",
                                       ledger=Ledger.in_memory())


def test_a_budget_never_mixes_the_two_relations() -> None:
    ledger, df = Ledger.in_memory(), frame()
    p = df.dp.protect(epsilon=1.0, ledger=ledger)
    p.dp.count(epsilon=0.1)
    with pytest.warns(dpframe.ReconnectedWarning), pytest.raises(dpframe.LedgerError, match="add/remove"):
        df.dp.protect(epsilon=1.0, neighbours="replace", ledger=ledger)
    other = Ledger.in_memory()
    q = df.dp.protect(epsilon=1.0, neighbours="replace", ledger=other)
    with pytest.warns(dpframe.ReconnectedWarning), pytest.raises(dpframe.LedgerError, match="replace-one"):
        df.dp.protect(epsilon=1.0, ledger=other)
    with pytest.warns(dpframe.ReconnectedWarning):
        again = df.dp.protect(epsilon=1.0, neighbours="replace", ledger=other)  # the same relation: reconnects
    assert again.dp.count() == q.dp.count() == 1000
    assert list(again.dp.budget.ledger["query"]) == ["bounded DP", "count", "count"]


# ---------------------------------------------------------------------------
# empirical audit: neighbours differ in one replaced row
# ---------------------------------------------------------------------------


def answers(df: pd.DataFrame, release: Callable[[Any], float], seed: int, neighbours: str,
             count: int) -> np.ndarray[Any, Any]:
    with seeded_noise(seed):
        p = df.dp.protect(epsilon=1e9, neighbours=neighbours, ledger=Ledger.in_memory())
        return np.array([float(release(p)) for _ in range(count)])


def audit(release: Callable[[Any], float], first: pd.DataFrame, second: pd.DataFrame, neighbours: str,
          count: int = 4000) -> float:
    """Lower confidence bound on the ε of ``release`` between two frames, from ``count`` answers on each."""
    a = answers(first, release, 1, neighbours, count)
    b = answers(second, release, 2, neighbours, count)
    return epsilon_lower_bound(*ranks(a, b))


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    base = pd.DataFrame({"x": np.repeat(np.arange(0, 11), 20).astype("int64")})
    other = base.copy()
    other.loc[0, "x"] = 10  # one row replaced: 0 -> 10
    return base, other


def bins_difference(p: Any) -> float:
    h = p["x"].dp.histogram(bins=[0, 5, 11], epsilon=1.0)
    return float(h.iloc[1] - h.iloc[0])  # a post-processing of the release: its ε is at most the release's


def test_audit_of_a_histogram_under_replace_one_neighbours() -> None:
    first, second = neighbours()
    assert audit(bins_difference, first, second, "replace") <= 1.0
    # The control: the same query on an add/remove protection is 2ε-DP for these neighbours, and the audit sees it.
    assert audit(bins_difference, first, second, "add/remove") > 1.0


def test_audit_of_a_sum_under_replace_one_neighbours() -> None:
    # Bounds (5, 10) on an integer column of the protected rows: a replaced row changes the sum by at most
    # U − L = 5, half the add/remove sensitivity 10, so this audits the tailored (smaller) noise.
    first = pd.DataFrame({"x": np.repeat(np.arange(5, 11), 20).astype("int64")})
    second = first.copy()
    second.loc[0, "x"] = 10  # one row replaced: 5 -> 10

    def total(p: Any) -> float:
        return float(p["x"].dp.sum(bounds=(5, 10), epsilon=1.0))

    assert audit(total, first, second, "replace", count=3000) <= 1.0
