"""The exact moment sums: chunks with and without missing values give the row-by-row definition."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpframe.noise.mechanism import Privacy, SumGrid
from dpframe.queries import kernels

PRIVACY = Privacy("approx", "laplace", Fraction(1, 2), Fraction(0), Fraction(0))


def by_definition(values: np.ndarray, center: float, grid: SumGrid, square: SumGrid, square_center: float,
                  codes: np.ndarray, n_groups: int) -> tuple[list[int], list[int], list[int]]:
    used = ~np.isnan(values) & (codes >= 0)
    d = np.clip(values[used] - center, grid.lo, grid.hi)
    s = np.clip(d * d - square_center, square.lo, square.hi)
    first = np.rint(d / float(grid.data_step)).astype(np.int64)
    second = np.rint(s / float(square.data_step)).astype(np.int64)
    group = codes[used]
    return ([int((group == g).sum()) for g in range(n_groups)], [int(first[group == g].sum()) for g in range(n_groups)],
            [int(second[group == g].sum()) for g in range(n_groups)])


@pytest.mark.parametrize("missing", [0.0, 0.0005, 0.3])
def test_moment_sums_match_the_definition_row_by_row(monkeypatch: pytest.MonkeyPatch, missing: float) -> None:
    # Small chunks: some hold a missing value (summed again with a mask), most do not (no mask made).
    monkeypatch.setattr(kernels, "CHUNK", 1000)
    rng = np.random.default_rng(4)
    values = rng.normal(3.0, 4.0, size=50_000)
    values[rng.random(len(values)) < missing] = np.nan
    values[::4999] = np.inf
    values[7::4999] = -np.inf
    grid, square = SumGrid.choose(-5.0, 5.0, 1, PRIVACY), SumGrid.choose(-12.5, 12.5, 1, PRIVACY)
    for codes, n_groups in ((np.zeros(len(values), dtype=np.int64), 1), (rng.integers(-1, 4, size=len(values)), 4)):
        for given in (codes, None) if n_groups == 1 else (codes,):
            result = kernels.moment_sums(values, 3.0, grid, square, given, n_groups, square_center=12.5)
            counts, sums, squares = by_definition(values, 3.0, grid, square, 12.5, codes, n_groups)
            assert result.counts.tolist() == counts and result.sums.tolist() == sums
            assert result.square_sums is not None and result.square_sums.tolist() == squares
