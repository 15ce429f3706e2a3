"""Empirical privacy audits of group-bys under L0/L∞ bounds (``groupby(..., max_groups=, max_rows_per_group=)``).

Neighbouring frames: the same visits with and without one unit that has many rows in many groups. The exact
per-group counts come from the query's own reader (the test hook ``BoundedCellReader``) with the bounding's
randomness fixed by ``seeded_noise``; the noise is the query's own (its release states the same σ), drawn
afresh for every sample. The statistic audited is the sum of the noisy counts of the groups the unit moved --
for Gaussian noise the most revealing one (the projection onto the shift) -- so a correct calibration passes
and one with a third of the σ is caught. Each audit fails a correct mechanism with probability at most 1e-6
(``privacy_audit``).
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe
from dpframe.accounting.budget import Budget
from dpframe.noise.mechanism import NoiseSpec, resolve
from dpframe.queries.partitioned import BoundedCellReader, Partitioning
from dpframe.queries.plan import GroupBounds, Target
from dpframe.results import current_release
from dpframe.testing import NotPrivateWarning, seeded_noise
from privacy_audit import epsilon_lower_bound, hockey_stick_lower_bound

GROUPS = [f"g{i}" for i in range(10)]
L0, LINF, EPSILON, DELTA = 4, 5, 1.0, 1e-6
SAMPLES = 200_000


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(5)
    others = pd.DataFrame({"uid": rng.integers(0, 300, 4000), "g": rng.choice(GROUPS, 4000)})
    # The added unit: 12 rows in each of 8 groups, more than L0 groups and L∞ rows.
    person = pd.DataFrame({"uid": 10_000, "g": np.repeat(GROUPS[:8], 12)})
    return others, pd.concat([others, person], ignore_index=True)


def exact_counts(frame: pd.DataFrame) -> np.ndarray[Any, Any]:
    p = frame.dp.protect(epsilon=1.0, privacy_unit="uid", max_contributions=10**6, ledger=dpframe.Ledger.in_memory())
    target = Target.of(p)
    reader = BoundedCellReader(target, GroupBounds(L0, LINF))
    with seeded_noise(11):  # the key, then the rows' priorities: the same for both frames
        counts, _ = reader.counts(Partitioning.of(target, ["g"], GROUPS))
    return counts


def audited_samples(noise: NoiseSpec) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The sum of the noisy counts of the groups the unit moved, ``SAMPLES`` times on each side."""
    without, with_unit = (exact_counts(frame) for frame in neighbours())
    moved = np.flatnonzero(with_unit != without)
    assert 0 < len(moved) <= L0 and np.all(np.abs(with_unit - without) <= LINF)
    assert int((with_unit - without).sum()) == L0 * LINF  # the unit reaches the bound: the audit has power
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(3):
            return tuple(int(exact[moved].sum()) + noise.sample(len(moved) * SAMPLES).reshape(SAMPLES, -1).sum(axis=1)
                         for exact in (without, with_unit))


def query_noise(mechanism: str) -> NoiseSpec:
    """The noise the group-by count uses, checked against the σ its release states."""
    delta = DELTA if mechanism == "gaussian" else None
    p = neighbours()[0].dp.protect(epsilon=10.0, delta=1e-5, privacy_unit="uid", max_contributions=100,
                                   ledger=dpframe.Ledger.in_memory())
    counts = p.dp.groupby("g", keys=GROUPS, max_groups=L0, max_rows_per_group=LINF).count(
        epsilon=EPSILON, delta=delta, mechanism=mechanism)
    privacy = resolve(Budget(epsilon=10.0, delta=1e-5), EPSILON, delta, None, mechanism)
    noise = GroupBounds(L0, LINF).noise(privacy, LINF)
    release = current_release(counts)
    assert release is not None and release.std == pytest.approx(noise.std)
    return noise


def test_audit_of_the_bounded_gaussian_count() -> None:
    noise = query_noise("gaussian")
    a, b = audited_samples(noise)
    assert epsilon_lower_bound(a, b, DELTA) <= EPSILON
    assert hockey_stick_lower_bound(a, b, EPSILON) <= DELTA
    weak_a, weak_b = audited_samples(NoiseSpec("gaussian", noise.param / 9))  # a third of σ: a broken calibration
    assert epsilon_lower_bound(weak_a, weak_b, DELTA) > EPSILON


def test_audit_of_the_bounded_laplace_count() -> None:
    noise = query_noise("laplace")
    assert noise.param == Fraction(L0 * LINF)  # scale L0·L∞/ε
    a, b = audited_samples(noise)
    assert epsilon_lower_bound(a, b) <= EPSILON
