"""End-to-end audits of the soundness issue's findings: each is refused, or its release stays within its claim.

For every way the issue found to void the guarantee, this file shows the
refusal, and audits the supported way of doing the same thing: many releases
on two neighbouring data sets (one person more or less), then a lower
confidence bound on the privacy loss (``tests/privacy_audit.py``,
Clopper-Pearson, false alarm below 1e-6) that must not exceed the ε the
ledger charged. A positive control computes the issue's unsound variant on the
curator's exact data and shows that the audit catches it.

Noise is seeded (``seeded_noise``), so every audit is deterministic.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpframe import Ledger
import dpframe
from dpframe import ProtectedFrame, RefusedError
from dpframe.testing import NotPrivateWarning, seeded_noise
from privacy_audit import epsilon_lower_bound, hockey_stick_lower_bound, ranks

RELEASES = 3000  # per neighbouring data set
BUDGET = 1e9


@pytest.fixture(autouse=True)
def _quiet_seeding() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        yield


Derive = Callable[[ProtectedFrame], Any]


def releases(frame: pd.DataFrame, release: Callable[[Any], float], seed: int,
             derive: Derive = lambda q: q) -> np.ndarray[Any, Any]:
    """``RELEASES`` answers of ``release`` on ``derive(protected frame)``, with reproducible noise.

    The derivation is deterministic, so it runs once; each release draws fresh noise.
    """
    with seeded_noise(seed):
        derived = derive(frame.dp.protect(ledger=Ledger.in_memory(), epsilon=BUDGET, delta=0.5))
        return np.array([float(release(derived)) for _ in range(RELEASES)])


def audit(without: pd.DataFrame, with_person: pd.DataFrame, release: Callable[[Any], float],
          seed: int, delta: float = 0.0, derive: Derive = lambda q: q) -> float:
    """Lower confidence bound on the ε of ``release`` between the two neighbours."""
    a = releases(without, release, seed, derive)
    b = releases(with_person, release, seed + 1, derive)
    return epsilon_lower_bound(*ranks(a, b), delta=delta)


def ages(n_each: int = 300) -> pd.DataFrame:
    """Ages with heavy ties (as in the Adult data): 20..60, ``n_each`` people each."""
    return pd.DataFrame({"age": np.repeat(np.arange(20, 61), n_each)})


def plus(frame: pd.DataFrame, **person: Any) -> pd.DataFrame:
    return pd.concat([frame, pd.DataFrame({k: [v] for k, v in person.items()})], ignore_index=True)


# ---------------------------------------------------------------------------
# 1. fillna with the mean, and a filter at the median: exact reads, refused
# ---------------------------------------------------------------------------


def test_fillna_with_the_exact_mean_is_refused_and_a_constant_fill_stays_within_its_claim() -> None:
    base = pd.DataFrame({"x": [1.0, np.nan] * 100})
    p = base.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    with pytest.raises(RefusedError, match="mean"):
        p["x"].fillna(p["x"].mean())
    epsilon = 0.5
    bound = audit(base, plus(base, x=10.0), lambda q: q.dp.sum(bounds=(0, 10), epsilon=epsilon), seed=1,
                  derive=lambda q: q["x"].fillna(0.0))
    assert bound <= epsilon


def test_the_exact_mean_as_a_fill_value_is_caught_by_the_audit() -> None:
    """Positive control: the issue's fillna(mean), computed on the curator's exact copy, leaks."""
    base = pd.DataFrame({"x": [1.0, np.nan] * 100})

    def unsound(q: ProtectedFrame) -> Any:
        return q["x"].fillna(float(np.nanmean(q.dp.unprotected()["x"])))

    bound = audit(base, plus(base, x=5000.0), lambda q: q.dp.sum(bounds=(0, 10), epsilon=0.5), seed=3,
                  derive=unsound)
    assert bound > 2.0


def test_a_filter_at_the_exact_median_is_refused_and_a_constant_threshold_stays_within_its_claim() -> None:
    base = ages()
    p = base.dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    with pytest.raises(RefusedError, match="median"):
        p[p["age"] >= p["age"].median()]
    with pytest.raises(RefusedError):
        p.query("age >= age.median()")
    epsilon = 0.5
    bound = audit(base, plus(base, age=60), lambda q: q.dp.count(epsilon=epsilon), seed=5,
                  derive=lambda q: q[q["age"] >= 40])
    assert bound <= epsilon


def test_the_exact_median_as_a_threshold_is_caught_by_the_audit() -> None:
    """Positive control: one person moves the median across 1000 tied people; ε claimed 0.1."""
    base = pd.DataFrame({"age": [30] * 1000 + [50] * 1000})  # median 40; with one more 30-year-old, 30

    def unsound(q: ProtectedFrame) -> Any:
        return q[q["age"] >= float(q.dp.unprotected()["age"].median())]

    bound = audit(base, plus(base, age=30), lambda q: q.dp.count(epsilon=0.1), seed=7, derive=unsound)
    assert bound > 1.0


def test_a_private_median_may_serve_as_a_threshold() -> None:
    """A released answer is public: using it as a constant is post-processing."""
    p = ages().dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    median = p["age"].dp.median(bounds=(0, 100), epsilon=0.5)
    older = p[p["age"] >= median].dp.count(epsilon=0.5)
    assert p.dp.budget.spent.epsilon.exact == 1 and older > 0


# ---------------------------------------------------------------------------
# 2. a self-join: refused; a one-to-many join with public data: bounded
# ---------------------------------------------------------------------------


def test_a_self_merge_is_refused() -> None:
    p = pd.DataFrame({"zip": [1, 1, 2], "x": [1, 2, 3]}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    with pytest.raises(RefusedError, match="self-join"):
        p.reset_index().merge(p.reset_index(), on="zip", suffixes=("", "_r"))


def test_a_one_to_many_public_join_stays_within_its_claim() -> None:
    base = pd.DataFrame({"zip": np.arange(300) % 5})
    public = pd.DataFrame({"zip": [0, 0, 0, 1, 2, 3, 4], "area": range(7)})  # zip 0 matches three rows
    epsilon = 0.5
    bound = audit(base, plus(base, zip=0), lambda q: q.dp.count(epsilon=epsilon), seed=9,
                  derive=lambda q: q.merge(public, on="zip"))
    assert bound <= epsilon


# ---------------------------------------------------------------------------
# 3. two protections lined up by row number: refused
# ---------------------------------------------------------------------------


def test_two_protections_never_line_up() -> None:
    p = pd.DataFrame({"a": [1.0, 2.0, 3.0]}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    q = pd.DataFrame({"h": [1.0, 0.0, 1.0]}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    for combine in (lambda: p.assign(h=q["h"]), lambda: q["h"] + 0 * p["a"], lambda: p[q["h"] > 0],
                    lambda: dpframe.concat([p, q], axis=1)):
        with pytest.raises(RefusedError, match="different protect"):
            combine()
    assert p.dp.budget.spent.epsilon.exact == 0 and q.dp.budget.spent.epsilon.exact == 0


# ---------------------------------------------------------------------------
# 4. categories found in the data: refused as public; selected privately instead
# ---------------------------------------------------------------------------


def test_categories_made_after_protect_are_refused() -> None:
    p = pd.DataFrame({"c": ["a", "b", "rare"]}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0, delta=1e-6)
    with pytest.raises(RefusedError, match="category"):
        p["c"].astype("category")


def test_a_value_held_by_one_person_is_released_with_probability_at_most_delta() -> None:
    base = pd.DataFrame({"c": ["a"] * 300 + ["b"] * 200})
    epsilon, delta = 1.0, 1e-6

    def rare_released(c: Any) -> float:
        return float("rare" in c.dp.value_counts(epsilon=epsilon, delta=delta).index)

    a = releases(base, rare_released, seed=11, derive=lambda q: q["c"])
    b = releases(plus(base, c="rare"), rare_released, seed=12, derive=lambda q: q["c"])
    assert a.sum() == 0  # impossible without the person
    assert hockey_stick_lower_bound(a.astype(np.int64), b.astype(np.int64), epsilon) <= delta
    # The released counts of the common categories stay within epsilon too.
    bound = audit(base, plus(base, c="a"), lambda c: c.dp.value_counts(epsilon=epsilon, delta=delta).get("a", 0),
                  seed=13, delta=delta, derive=lambda q: q["c"])
    assert bound <= epsilon


# ---------------------------------------------------------------------------
# 5. merges and concat with unprotected data: the protection is never silently dropped
# ---------------------------------------------------------------------------


def test_merging_public_data_keeps_the_budget_and_concat_with_rows_is_refused() -> None:
    p = pd.DataFrame({"zip": [1, 2], "x": [3, 4]}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    merged = p.merge(pd.DataFrame({"zip": [1, 2], "city": ["A", "B"]}), on="zip")
    assert merged.dp.budget is p.dp.budget
    for concat in (lambda: pd.concat([p, pd.DataFrame({"zip": [3], "x": [5]})]),
                   lambda: dpframe.concat([p, pd.DataFrame({"zip": [3], "x": [5]})])):
        with pytest.raises(RefusedError) as info:
            concat()
        assert "protect()" not in str(info.value).split("Instead:")[1]  # never an invitation to re-protect


# ---------------------------------------------------------------------------
# 6. positional selection: refused; Poisson sampling: charged its amplified cost
# ---------------------------------------------------------------------------


def test_head_is_refused_and_a_poisson_sample_stays_within_its_amplified_claim() -> None:
    base = pd.DataFrame({"x": np.ones(1)})  # one person or two: where sampling matters most
    p = pd.DataFrame({"x": np.ones(20)}).dp.protect(ledger=Ledger.in_memory(), epsilon=1.0)
    for positional in (lambda: p.head(10), lambda: p.sample(n=10), lambda: p.iloc[:10]):
        with pytest.raises(RefusedError, match="p.dp.sample"):
            positional()
    epsilon, rate = 3.0, 0.2
    charged = math.log1p(rate * math.expm1(epsilon))  # ~1.79: what the ledger records
    bound = audit(base, plus(base, x=1.0), lambda q: q.dp.sample(rate).dp.count(epsilon=epsilon), seed=15)
    assert bound <= charged
    q = base.dp.protect(ledger=Ledger.in_memory(), epsilon=10.0)
    q.dp.sample(rate).dp.count(epsilon=epsilon)
    assert float(q.dp.budget.spent.epsilon.exact) == pytest.approx(charged)


# -- the second adversarial review: data-dependent errors at the pandas boundary ----------------------


def test_converting_text_to_numbers_never_fails_on_one_value() -> None:
    # A value pandas cannot parse even with errors="coerce" (an int beyond float, an unhashable object)
    # becomes missing like any unparsable text: whether one exists must not show in an error.
    for odd in (10**400, (1, [2])):
        s = pd.Series(["7", odd, "8.5"] * 10, dtype=object, name="v")
        p = s.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
        assert p.astype("Float64").dtype == "Float64" and p.astype("Int64").dtype == "Int64"


def test_values_pandas_cannot_test_for_missing_are_refused_at_protect() -> None:
    import decimal

    frame = pd.DataFrame({"d": pd.Series([decimal.Decimal("1.5"), decimal.Decimal("sNaN")], dtype=object)})
    with pytest.raises(ValueError, match="signaling NaN"):
        frame.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())


def test_unhashable_privacy_units_are_refused_at_protect() -> None:
    frame = pd.DataFrame({"user": [[1], [2]], "x": [1, 2]})
    with pytest.raises(TypeError, match="cannot be compared as ids"):
        frame.dp.protect(epsilon=1.0, privacy_unit="user", ledger=Ledger.in_memory())


def test_noisy_times_beyond_what_pandas_holds_are_shown_at_the_limit() -> None:
    # Forty equal dates and automatic bounds: the noisy mean can fall centuries away. It is released
    # (charged), so converting it back to a time must not fail.
    with seeded_noise(0):
        for _ in range(20):
            p = pd.Series(pd.to_datetime(["2020-01-01"] * 40)).dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                answer = p.dp.mean(epsilon=0.1)
            assert pd.Timestamp("1678-01-01") <= pd.Timestamp(answer) <= pd.Timestamp("2262-01-01")
            repr(answer)
