"""Shared fixtures. Statistical tests seed noise through the documented test-only switch."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings

# Property tests explore the same examples on every run: CI must never be flaky.
settings.register_profile("dpframe", derandomize=True, database=None, deadline=None)
settings.load_profile("dpframe")

import dpframe  # noqa: F401  (registers .dp)
from dpframe.testing import NotPrivateWarning, seeded_noise

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"

# tests/typecheck/ holds user programs for mypy (tests/test_typing.py), not tests: never import them.
collect_ignore = ["typecheck"]


@pytest.fixture
def seeded() -> Iterator[None]:
    """Reproducible noise for one test (results are not private)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        with seeded_noise(12345):
            yield


@pytest.fixture
def people() -> pd.DataFrame:
    """A small generated frame with numeric, categorical, boolean, string and list columns."""
    rng = np.random.default_rng(0)
    n = 2000
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": rng.lognormal(10, 1, n),
            "sex": pd.Categorical(rng.choice(["F", "M"], n)),
            "edu": rng.choice(["HS", "BA", "MA"], n),
            "smoker": rng.random(n) < 0.2,
            "tags": [[1, 2] if i % 3 == 0 else [3] for i in range(n)],
        }
    )


@pytest.fixture
def adult() -> pd.DataFrame:
    """The real Adult data from ../shared when present; skip otherwise."""
    path = SHARED / "adult-arx" / "adult.csv"
    if not path.exists():
        pytest.skip("shared Adult data not available")
    return pd.read_csv(path, sep=";")
