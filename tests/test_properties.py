"""Property tests: no sequence of derivations and queries overspends, the ledger adds up,
and contribution bounding holds after arbitrary duplication.

Noise is seeded inside each example so failures replay exactly.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dpframe import Ledger
import dpframe  # noqa: F401
from dpframe.accounting.costs import exact as read_exactly
from dpframe import BudgetExceededError, Cost
from dpframe.protection import unit_ids
from dpframe.queries.plan import Target
from dpframe.testing import seeded_noise

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

EDU_KEYS = ["HS", "BA", "MA", "PhD"]


@lru_cache(maxsize=1)
def base_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 80
    return pd.DataFrame(
        {
            "uid": rng.integers(0, 25, n),
            "age": rng.integers(18, 90, n),
            "income": rng.lognormal(10, 1, n),
            "sex": pd.Categorical(rng.choice(["F", "M"], n)),
            "edu": rng.choice(["HS", "BA", "MA"], n),
            "smoker": rng.random(n) < 0.2,
            "tags": [[1, 2] if i % 3 == 0 else [3] for i in range(n)],
        }
    )


# ---------------------------------------------------------------------------
# derivations: each keeps the budget (and the unit record)
# ---------------------------------------------------------------------------


def _select(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    columns = list(d.columns)
    keep = data.draw(st.lists(st.sampled_from(columns), min_size=1, unique=True), label="columns")
    return d[keep]


def _filter(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    if "age" not in d.columns:
        return d
    threshold = data.draw(st.integers(10, 95), label="age threshold")
    return d[d["age"] >= threshold]


def _assign(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    if "age" in d.columns:
        return d.assign(decade=d["age"] // 10, age=d["age"] + data.draw(st.integers(-5, 5), label="shift"))
    return d.assign(one=1)


def _sort(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    sortable = [c for c in d.columns if c != "tags"]
    if not sortable:
        return d
    column = data.draw(st.sampled_from(sortable), label="sort by")
    return d.sort_values(column, ascending=data.draw(st.booleans(), label="ascending"), kind="stable")


def _dropna(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    return d.dropna()


def _explode(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    return d.explode("tags") if "tags" in d.columns else d


DERIVATIONS: dict[str, Callable[[pd.DataFrame, st.DataObject], pd.DataFrame]] = {
    "select": _select,
    "filter": _filter,
    "assign": _assign,
    "sort": _sort,
    "dropna": _dropna,
    "copy": lambda d, data: d.copy(),
    "pickle": lambda d, data: pickle.loads(pickle.dumps(d)),
    "explode": _explode,
}


# ---------------------------------------------------------------------------
# queries: each returns the privacy arguments it used, so the cost can be checked
# ---------------------------------------------------------------------------


def run_query(d: pd.DataFrame, name: str, privacy: dict[str, Any]) -> bool:
    """Run query ``name`` if its columns survive in ``d``; False when it does not apply."""
    columns = set(d.columns)
    if name == "count":
        d.dp.count(**privacy)
    elif name == "series count":
        d[sorted(columns, key=str)[0]].dp.count(**privacy)
    elif name == "mean" and "age" in columns:
        d["age"].dp.mean(bounds=(0, 125), **privacy)
    elif name == "sum" and "income" in columns:
        d["income"].dp.sum(bounds=(0, 1e6), **privacy)
    elif name == "histogram" and "age" in columns:
        d["age"].dp.histogram(bins=range(0, 130, 10), **privacy)
    elif name == "value_counts" and "edu" in columns:
        d["edu"].dp.value_counts(keys=EDU_KEYS, **privacy)
    elif name == "groupby" and {"sex", "age"} <= columns:
        d.dp.groupby("sex").mean("age", bounds=(0, 125), **privacy)
    elif name == "groupby count" and "edu" in columns:
        d.dp.groupby("edu", keys=EDU_KEYS).count(**privacy)
    elif name == "crosstab" and {"sex", "smoker"} <= columns:
        d.dp.crosstab("sex", "smoker", **privacy)
    else:
        return False
    return True


QUERIES = ["count", "series count", "mean", "sum", "histogram", "value_counts", "groupby", "groupby count", "crosstab"]

# Epsilons with awkward decimal expansions, as users type them.
epsilons = st.one_of(
    st.floats(min_value=1e-3, max_value=0.8, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, 0.2, 0.3, 1 / 3, 0.05, 0.7]),
)


def check_invariants(frame: pd.DataFrame, ledger_rows: int) -> None:
    budget = frame.dp.budget
    spent, total = budget.spent.cost, budget.total.cost
    assert spent.fits_in(total)
    assert budget.remaining.cost == total - spent
    ledger = budget.ledger
    assert len(ledger) == ledger_rows
    for column in ("epsilon", "delta", "rho"):
        recorded = float(ledger[column].sum()) if len(ledger) else 0.0
        exact = float(getattr(spent, column))
        assert math.isclose(recorded, exact, rel_tol=1e-12, abs_tol=1e-15), column


def step(
    frame: pd.DataFrame, data: st.DataObject, privacy_strategy: st.SearchStrategy[dict[str, Any]], rows: int
) -> tuple[pd.DataFrame, int]:
    """One random derivation or query; returns the (maybe derived) frame and the ledger length."""
    budget = frame.dp.budget
    if data.draw(st.booleans(), label="derive?"):
        name = data.draw(st.sampled_from(list(DERIVATIONS)), label="derivation")
        derived = DERIVATIONS[name](frame, data)
        assert derived.dp.budget is budget
        assert derived.dp.is_protected
        return derived, rows
    name = data.draw(st.sampled_from(QUERIES), label="query")
    privacy = data.draw(privacy_strategy, label="privacy")
    cost = expected_cost(budget.kind, privacy)
    before = budget.spent.cost
    fits = cost.fits_in(budget.remaining.cost)
    try:
        ran = run_query(frame, name, privacy)
    except BudgetExceededError:
        event("query refused")
        assert not fits, "refused although the cost fits"
        assert budget.spent == before
        return frame, rows
    if not ran:
        assert budget.spent == before
        return frame, rows
    event(f"ran {name}" + (" (gaussian)" if "delta" in privacy or "rho" in privacy else ""))
    assert fits, "a query ran although it did not fit the remaining budget"
    assert budget.spent == before + cost
    return frame, rows + 1


def expected_cost(kind: str, privacy: dict[str, Any]) -> Cost:
    def exact(value: float) -> Fraction:
        return read_exactly(value, "amount", allow_zero=True)  # the documented reading rule

    if kind == "zcdp":
        if "rho" in privacy:
            return Cost(rho=exact(privacy["rho"]))
        return Cost(rho=exact(privacy["epsilon"]) ** 2 / 2)
    return Cost(epsilon=exact(privacy["epsilon"]), delta=exact(privacy.get("delta", 0.0)))


approx_privacy = st.one_of(
    st.builds(lambda e: {"epsilon": e}, epsilons),
    st.builds(lambda e, d: {"epsilon": e, "delta": d}, epsilons, st.sampled_from([1e-7, 1e-6, 2.5e-6])),
)
zcdp_privacy = st.one_of(
    st.builds(lambda r: {"rho": r}, st.floats(min_value=1e-4, max_value=0.3)),
    st.builds(lambda e: {"epsilon": e}, st.floats(min_value=1e-3, max_value=0.6)),
)


@SETTINGS
@given(
    data=st.data(),
    total=st.floats(min_value=0.05, max_value=2.0),
    total_delta=st.sampled_from([0.0, 1e-6, 1e-5]),
    by_unit=st.booleans(),
)
def test_random_sessions_never_overspend_approx(
    data: st.DataObject, total: float, total_delta: float, by_unit: bool
) -> None:
    unit = {"privacy_unit": "uid", "max_contributions": data.draw(st.integers(1, 3))} if by_unit else {}
    frame = base_frame().dp.protect(ledger=Ledger.in_memory(), epsilon=total, delta=total_delta, **unit)
    rows = 0
    with seeded_noise(data.draw(st.integers(0, 2**32 - 1), label="seed")):
        for _ in range(data.draw(st.integers(1, 25), label="steps")):
            frame, rows = step(frame, data, approx_privacy, rows)
            check_invariants(frame, rows)
    budget = frame.dp.budget
    assert budget.total.epsilon.exact == read_exactly(total, "total", allow_zero=True)
    assert budget.spent.epsilon.exact <= budget.total.epsilon.exact
    assert budget.spent.delta.exact <= read_exactly(total_delta, "total", allow_zero=True)


@SETTINGS
@given(data=st.data(), total=st.floats(min_value=0.01, max_value=1.5))
def test_random_sessions_never_overspend_zcdp(data: st.DataObject, total: float) -> None:
    frame = base_frame().dp.protect(ledger=Ledger.in_memory(), rho=total)
    rows = 0
    with seeded_noise(data.draw(st.integers(0, 2**32 - 1), label="seed")):
        for _ in range(data.draw(st.integers(1, 25), label="steps")):
            frame, rows = step(frame, data, zcdp_privacy, rows)
            check_invariants(frame, rows)
    budget = frame.dp.budget
    assert budget.spent.rho.exact <= read_exactly(total, "total", allow_zero=True)
    assert budget.spent.epsilon.exact == 0 and budget.spent.delta.exact == 0


@SETTINGS
@given(data=st.data())
def test_exhausting_the_budget_exactly(data: st.DataObject) -> None:
    """k queries of total/k each spend the budget exactly; the next is refused and charges nothing."""
    k = data.draw(st.integers(1, 12), label="k")
    total = data.draw(st.sampled_from([1.0, 0.3, 0.7, 2.0, 0.1]), label="total")
    frame = base_frame().dp.protect(ledger=Ledger.in_memory(), epsilon=total)
    share = Fraction(repr(total)) / k
    with seeded_noise(0):
        for _ in range(k):
            frame.dp.count(epsilon=share)
        assert frame.dp.budget.remaining.epsilon.exact == 0
        name = data.draw(st.sampled_from(QUERIES), label="query")
        tiny = data.draw(st.sampled_from([1e-9, 1e-3, Fraction(1, 10**12)]), label="tiny")
        with pytest.raises(BudgetExceededError):
            run_query(frame, name, {"epsilon": tiny}) or frame.dp.count(epsilon=tiny)
    assert frame.dp.budget.spent.epsilon.exact == Fraction(repr(total))
    assert len(frame.dp.budget.ledger) == k


# ---------------------------------------------------------------------------
# contribution bounding after arbitrary duplication
# ---------------------------------------------------------------------------


def _concat_self(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    return dpframe.concat([d] * data.draw(st.integers(2, 4), label="copies"))


def _concat_part(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    return dpframe.concat([d, _filter(d, data)])


def _merge_one_to_many(d: pd.DataFrame, data: st.DataObject) -> pd.DataFrame:
    copies = data.draw(st.integers(1, 4), label="copies")
    label = f"label{len(d.columns)}"  # a fresh name, so repeated merges do not collide
    public = pd.DataFrame({"sex": ["F", "M"] * copies, label: range(2 * copies)})
    return d.assign(sex=d["sex"].astype(str)).merge(public, on="sex")


DUPLICATIONS: dict[str, Callable[[pd.DataFrame, st.DataObject], pd.DataFrame]] = {
    "concat self": _concat_self,
    "concat part": _concat_part,
    "explode": lambda d, data: d.explode("tags"),
    "merge one-to-many": _merge_one_to_many,
    "filter": _filter,
    "pickle": lambda d, data: pickle.loads(pickle.dumps(d)),
}


@SETTINGS
@given(data=st.data(), k=st.integers(1, 4), unit_level=st.booleans())
def test_duplication_never_raises_a_units_contribution(data: st.DataObject, k: int, unit_level: bool) -> None:
    df = base_frame()
    if unit_level:
        frame = df.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9, privacy_unit="uid", max_contributions=k)
    else:
        k = 1
        frame = df.dp.protect(ledger=Ledger.in_memory(), epsilon=1e9)
    names = data.draw(st.lists(st.sampled_from(list(DUPLICATIONS)), min_size=1, max_size=4), label="ops")
    for name in names:
        if name in ("explode",) and "tags" not in frame.columns:
            continue
        frame = DUPLICATIONS[name](frame, data)
        if name == "explode":
            frame = frame.drop(columns="tags")  # exploded: nothing left to explode
    units = unit_ids(Target.of(frame).obj)
    per_unit = pd.Series(units).value_counts()
    kept = int(per_unit.clip(upper=k).sum())
    event("some unit over the bound" if (per_unit > k).any() else "no unit over the bound")
    with seeded_noise(data.draw(st.integers(0, 2**16), label="seed")):
        count = frame.dp.count(epsilon=1e6)  # noise scale k/1e6: exactly zero in practice
        assert count <= per_unit.size * k
        assert count == kept
        if "age" in frame.columns:
            hist = frame["age"].dp.histogram(bins=[0, 50, 130], epsilon=1e6)
            assert hist.sum() <= per_unit.size * k
            assert hist.sum() == kept  # every age lies in [0, 130]
            total = frame["age"].dp.sum(bounds=(0, 100), epsilon=1e6)
            assert total <= per_unit.size * k * 100 + 1e-3
        if "sex" in frame.columns and isinstance(frame["sex"].dtype, pd.CategoricalDtype):
            groups = frame.dp.groupby("sex").count(epsilon=1e6)
            assert groups.sum() == kept
