"""How close is a synthetic frame to the real one? Quality reports for evaluation -- NOT private.

These functions read the real data without noise and without a budget: use
them to evaluate a synthesizer on data you may look at, never to publish.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.synthesis.domain import axis_values


def _shared_codes(real: pd.Series[Any], synthetic: pd.Series[Any], bins: int) -> tuple[NDArray[np.intp], NDArray[np.intp], int]:
    """Codes of both columns on one set of values (missing values a value of their own).

    Numeric columns are compared in cells of the real column: with more than
    ``bins`` distinct values, its quantile bins; otherwise one cell per real
    value, with cell borders halfway between them, so a synthetic value drawn
    within a bin counts for the nearest real value.
    """
    numeric = (
        pd.api.types.is_numeric_dtype(real.dtype)
        or pd.api.types.is_datetime64_any_dtype(real.dtype)
        or pd.api.types.is_timedelta64_dtype(real.dtype)
    ) and not pd.api.types.is_bool_dtype(real.dtype)
    if numeric:
        real_numbers, synthetic_numbers = axis_values(real), axis_values(synthetic)
        distinct = np.unique(real_numbers[~np.isnan(real_numbers)])
        if len(distinct) > bins:
            borders = np.unique(np.quantile(real_numbers[~np.isnan(real_numbers)], np.linspace(0, 1, bins + 1)[1:-1]))
        else:
            borders = (distinct[1:] + distinct[:-1]) / 2

        def cell(numbers: NDArray[np.float64]) -> pd.Series[Any]:
            cells = np.searchsorted(borders, numbers, side="right").astype(np.float64)
            cells[np.isnan(numbers)] = np.nan
            return pd.Series(cells)

        real, synthetic = cell(real_numbers), cell(synthetic_numbers)
    both = pd.concat([real.astype(object), synthetic.astype(object)], ignore_index=True)
    codes, uniques = pd.factorize(both, use_na_sentinel=False)
    return codes[: len(real)], codes[len(real):], len(uniques)


def marginal_error(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    way: int = 2,
    *,
    columns: Sequence[Any] | None = None,
    sample: int | None = None,
    seed: int = 0,
    bins: int = 10,
) -> pd.Series[float]:
    """Total-variation distance between the real and synthetic ``way``-way marginals, one per column set.

    The error of a marginal is half the L1 distance between the two normalised
    contingency tables (0 = identical, 1 = disjoint); missing values count as
    a value of their own. Numeric columns are compared in ``bins`` quantile
    bins of the real column, or, when it has at most ``bins`` distinct values,
    each synthetic value at the nearest real value. With
    ``sample=m``, ``m`` column sets drawn at random (``seed``) instead of all.
    Average with ``.mean()``. Not private: it reads ``real`` exactly.

    >>> import pandas as pd
    >>> from dpframe.evaluate import marginal_error
    >>> real = pd.DataFrame({"a": [0, 0, 1, 1], "b": ["x", "y", "x", "y"]})
    >>> syn = pd.DataFrame({"a": [0, 0, 0, 1], "b": ["x", "x", "y", "y"]})
    >>> marginal_error(real, syn, way=1).round(3).to_dict()
    {('a',): 0.25, ('b',): 0.0}
    >>> float(marginal_error(real, syn, way=2).iloc[0])
    0.25
    """
    names = list(real.columns if columns is None else columns)
    missing = [c for c in names if c not in real.columns or c not in synthetic.columns]
    if missing:
        raise KeyError(f"columns {missing} are not in both frames")
    if not 1 <= way <= len(names):
        raise ValueError(f"way must be between 1 and the number of columns ({len(names)}), got {way}")
    if len(real) == 0 or len(synthetic) == 0:
        raise ValueError("both frames need at least one row")
    sets = list(itertools.combinations(names, way))
    if sample is not None and sample < len(sets):
        rng = np.random.default_rng(seed)
        sets = [tuple(rng.choice(np.array(names, dtype=object), way, replace=False)) for _ in range(sample)]
    coded = {c: _shared_codes(real[c], synthetic[c], bins) for c in {c for s in sets for c in s}}
    errors = []
    for combo in sets:
        shape = tuple(coded[c][2] for c in combo)
        cells = math.prod(shape)
        r = np.bincount(np.ravel_multi_index(tuple(coded[c][0] for c in combo), shape), minlength=cells)
        s = np.bincount(np.ravel_multi_index(tuple(coded[c][1] for c in combo), shape), minlength=cells)
        errors.append(0.5 * float(np.abs(r / len(real) - s / len(synthetic)).sum()))
    return pd.Series(errors, index=pd.Index(sets, tupleize_cols=False), name=f"{way}-way error", dtype=float)
