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

from dpframe.synthesis.measure import Allowance, CodedData, Marginals, estimate_total, measure
from dpframe.synthesis.model import Clique, Measurement, systematic_sample


class MarginalsModel:
    """Independent groups of columns, each drawn from its own noisy marginal.

    >>> pair = Measurement((0, 1), np.array([[30.0, 0.0], [-2.0, 70.0]]), np.ones((2, 2)))
    >>> records = MarginalsModel([pair], [2, 2]).sample(10, np.random.default_rng(0))
    >>> sorted(map(tuple, records.tolist()))  # the negative count is clipped to 0
    [(0, 0), (0, 0), (0, 0), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1)]
    """

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


def fit_marginals(data: Marginals, allowance: Allowance, groups: Sequence[Clique]) -> MarginalsModel:
    """Measure one noisy marginal per group (equal shares) and return the model that samples them.

    >>> from dpframe.testing import seeded_noise
    >>> data = CodedData((np.array([0, 1] * 500, dtype=np.int32), np.array([1, 0] * 500, dtype=np.int32)), (2, 2))
    >>> with seeded_noise(0):
    ...     model = fit_marginals(data, Allowance("pure", Fraction(1), 1), [(0, 1)])
    >>> bool(abs(model.total - 1000) < 20), [m.clique for m in model.measurements]
    (True, [(0, 1)])
    """
    return MarginalsModel(measure(data, groups, allowance.noise(Fraction(1), len(groups))), data.sizes)
