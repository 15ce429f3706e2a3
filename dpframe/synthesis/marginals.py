"""The book's synthesizer (Near & Abuah, ch. 15): noisy marginals, normalised and sampled.

Each chosen set of columns gets one noisy marginal (a share of the budget,
sequential composition); negative counts are set to zero, the table is
normalised, and the columns of each set are drawn jointly from it, the sets
independently of each other. With every set a single column this is the
"independent one-way marginals" baseline: each column's distribution is kept,
every relationship between columns is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dpframe.synthesis.measure import Allowance, CodedData, estimate_total, measure
from dpframe.synthesis.model import Clique, Measurement, systematic_sample


class MarginalsModel:
    """Independent groups of columns, each drawn from its own noisy marginal."""

    def __init__(self, measurements: Sequence[Measurement], sizes: Sequence[int]) -> None:
        self.measurements = list(measurements)
        self.sizes = tuple(sizes)
        self.total = estimate_total(self.measurements)

    def sample(self, rows: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """``rows`` records (one column of codes per attribute)."""
        out = np.zeros((rows, len(self.sizes)), dtype=np.int64)
        for m in self.measurements:
            table = np.clip(m.values, 0.0, None).ravel()
            if table.sum() == 0:  # every noisy count was negative: nothing to go on but the domain
                table = np.ones_like(table)
            cells = systematic_sample(table[None, :], np.zeros(rows, dtype=np.int64), rng)
            for a, codes in zip(m.clique, np.unravel_index(cells, m.values.shape)):
                out[:, a] = codes
        return out


def fit_marginals(data: CodedData, allowance: Allowance, groups: Sequence[Clique]) -> MarginalsModel:
    """Measure one noisy marginal per group (equal shares) and return the model that samples them."""
    return MarginalsModel(measure(data, groups, allowance.noise(Fraction(1), len(groups))), data.sizes)
