"""Noisy sums of clipped vectors on an integer grid: the release every private training step makes.

Each privacy unit's vector (a gradient; its rows' gradients summed first when
a unit has several rows) is scaled down to L2 norm at most ``C``, divided by
the grid step ``γ = C / 2^b`` and rounded to the nearest integer vector.
Rounding moves each of the ``d`` coordinates by at most 1/2, so the rounded
vector has norm at most ``2^b + √d / 2`` grid steps: the L2 sensitivity of the
sum, in integers, with the rounding's inflation stated (``b`` is chosen so
that it is below 1/64 of ``C``). The sum is exact (int64), and the release adds
a vector of independent exact discrete Gaussians (CKS20): ``σ²`` grid units
per coordinate give ``ρ = Δ² / (2σ²)``-zCDP for the whole vector (CKS20
Thm 14 holds coordinatewise and Rényi divergences of independent coordinates
add).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dpframe.noise.mechanism import NoiseSpec, round_up
from dpframe.noise.random import uniform_below

# Rows per block when clipping row by row: bounds the memory of the (rows x d) gradient block.
_BLOCK = 1 << 16


@dataclass(frozen=True)
class VectorGrid:
    """The integer grid of clipped vectors of dimension ``dim`` and L2 norm at most ``norm``.

    >>> grid = VectorGrid.choose(1.0, 16)
    >>> grid.bits, grid.step, float(grid.sensitivity2) ** 0.5
    (8, 0.00390625, 258.0)
    """

    norm: float
    dim: int
    bits: int

    @classmethod
    def choose(cls, norm: float, dim: int) -> VectorGrid:
        """``2^b >= 64 √dim`` steps per clipping norm: rounding inflates the sensitivity by at most 1/128."""
        return cls(norm, dim, max(8, math.ceil(math.log2(64 * math.sqrt(dim)))))

    @property
    def step(self) -> float:
        """The real value of one grid step."""
        return float(self.norm / 2**self.bits)

    @property
    def sensitivity2(self) -> Fraction:
        """The squared L2 sensitivity of a sum of rounded clipped vectors, in grid steps: ``(2^b + ⌈√d⌉/2)²``."""
        root = math.isqrt(self.dim - 1) + 1  # >= √dim
        return Fraction(2 ** (self.bits + 1) + root, 2) ** 2

    def clip(self, vectors: NDArray[np.float64]) -> NDArray[np.int64]:
        """Each row scaled to norm at most ``norm`` (a hair less, against floating point) and rounded to the grid.

        A row that does not scale to finite numbers (a non-finite entry or an
        overflowing norm, from a diverging model; a zero row under an absurdly
        small ``norm``) becomes zero: NaN cast to int64 is INT64_MIN, whose
        wrapped sums would break the sensitivity bound.
        """
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow warning would depend on the data
            norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
            # 2^b / max(‖v‖, C) grid steps per unit of v: no denormal quotient to lose precision.
            steps = vectors * (2**self.bits * (1 - 2.0**-30) / np.maximum(norms, self.norm))[:, None]
        steps = np.where(np.isfinite(steps).all(axis=1)[:, None], steps, 0.0)
        scaled: NDArray[np.int64] = np.rint(steps).astype(np.int64)
        return scaled


@dataclass(frozen=True)
class Units:
    """How rows group into privacy units: None (one row each) or the rows sorted by unit and where each starts."""

    order: NDArray[np.intp] | None = None
    starts: NDArray[np.intp] | None = None

    @classmethod
    def of(cls, codes: NDArray[np.intp] | None) -> Units:
        """From each row's unit code (None when every row is its own unit)."""
        if codes is None:
            return cls()
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        return cls(order, starts)

    def count(self, rows: int) -> int:
        """The number of units among ``rows`` rows (exact: released only with noise)."""
        return rows if self.starts is None else len(self.starts)

    def clipped_sum(self, grid: VectorGrid, matrix: NDArray[np.float64],
                    weights: NDArray[np.float64]) -> NDArray[np.int64]:
        """Σ over units of the clipped, rounded ``Σ_(unit's rows) weight · row``, exact in int64."""
        if len(matrix) == 0:  # an empty Poisson sample: reduceat would raise
            return np.zeros(matrix.shape[1], dtype=np.int64)
        if self.order is None or self.starts is None:
            total = np.zeros(matrix.shape[1], dtype=np.int64)
            for start in range(0, len(matrix), _BLOCK):
                block = slice(start, start + _BLOCK)
                total += grid.clip(matrix[block] * weights[block, None]).sum(axis=0)
            return total
        per_unit = np.add.reduceat(matrix[self.order] * weights[self.order, None], self.starts, axis=0)
        clipped: NDArray[np.int64] = grid.clip(per_unit).sum(axis=0)
        return clipped


def gaussian_sigma2(sensitivity2: Fraction, rho: Fraction) -> Fraction:
    """The discrete Gaussian's σ² (grid units, rounded up) for ``rho``-zCDP at squared sensitivity ``sensitivity2``.

    >>> gaussian_sigma2(Fraction(4), Fraction(1, 2))
    Fraction(4, 1)
    """
    return round_up(sensitivity2 / (2 * rho))


def noisy(exact: NDArray[np.int64], sigma2: Fraction) -> NDArray[np.int64]:
    """``exact`` plus independent exact discrete Gaussian noise of variance parameter ``sigma2``."""
    out: NDArray[np.int64] = exact + NoiseSpec("gaussian", sigma2).sample(len(exact))
    return out


def poisson_keep(count: int, rate: Fraction) -> NDArray[np.bool_]:
    """``count`` independent exact Bernoulli(``rate``) draws from the secure source (as ``p.dp.sample`` draws)."""
    keep: NDArray[np.bool_] = uniform_below(rate.denominator, size=count) < rate.numerator
    return keep
