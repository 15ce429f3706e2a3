"""The synthesizers' only contact with the data: exact marginal counts plus exact discrete noise.

Every step a synthesizer takes is planned as a share of one :class:`Allowance`
(rho under zCDP, or epsilon under pure DP) before anything is measured;
measurements are the noisy counts of marginals of the coded data, and
selections use the exponential mechanism on scores computed here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_ndtr

from dpframe.noise.mechanism import NoiseSpec, round_down, round_up
from dpframe.selection.exponential import choose
from dpframe.synthesis.model import Array, Clique, Groups, Measurement, coarsen


@dataclass(frozen=True)
class Allowance:
    """What a synthesizer may spend, as rho (zCDP: Gaussian noise) or epsilon (pure DP: Laplace noise).

    ``contributions`` is the most records one privacy unit has in the data: the
    sensitivity of every count (L1 and L2 for a unit's records in one cell).

    >>> a = Allowance("zcdp", Fraction(1, 100), 1)
    >>> a.noise(Fraction(1, 3), 14).std > 40
    True
    """

    kind: Literal["zcdp", "pure"]
    amount: Fraction
    contributions: int

    def noise(self, share: Fraction, marginals: int) -> NoiseSpec:
        """The noise of each of ``marginals`` count marginals measured with ``share`` of the allowance."""
        each = self.amount * share / marginals
        k = self.contributions
        if self.kind == "zcdp":
            # One unit moves at most k records, changing one marginal by at most k in L2: rho = k^2 / 2 sigma^2.
            return NoiseSpec("gaussian", round_up(Fraction(k * k) / (2 * each)))
        return NoiseSpec("laplace", round_up(Fraction(k) / each))

    def selection_epsilon(self, share: Fraction) -> Fraction:
        """The exponential mechanism's epsilon for one selection that spends ``share``.

        Under zCDP the exponential mechanism is eps-bounded-range, hence
        eps^2/8-zCDP (Cesar & Rogers 2021, Lemma 3.2 and Prop. 3.3), as MST and AIM use it.
        """
        spend = self.amount * share
        if self.kind == "zcdp":
            return round_down(math.nextafter(math.sqrt(8 * float(spend)), 0.0))
        return spend


class Marginals(Protocol):
    """Exact marginal counts of the private records' codes: what the synthesizers read, and all they read.

    :class:`CodedData` holds the codes in memory (pandas);
    :class:`dpframe.dask.synthesis.DaskMarginals` counts them on Dask
    partitions. ``counts_of`` takes every marginal one step needs at once, so
    that a distributed implementation reads the data once per step.
    """

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each attribute's number of codes."""

    @property
    def missing(self) -> tuple[tuple[int, ...], ...]:
        """Per attribute, the codes that decode as missing values (public, from the schema)."""

    def counts_of(self, cliques: Sequence[Clique]) -> list[Array]:
        """Exact counts of every cell of each clique's marginal (see :meth:`CodedData.counts`)."""

    def expect(self, cliques: Sequence[Clique]) -> None:
        """A hint: these marginals will be asked for, perhaps after recoding (a distributed reader counts them
        in its next pass)."""

    def recode(self, attribute: int, mapping: NDArray[np.int32], size: int) -> Marginals:
        """The records with one attribute's codes mapped through ``mapping`` (-1: dropped) onto ``size`` codes."""


@dataclass(frozen=True)
class CodedData:
    """The private records as integer codes, one array per attribute, and each attribute's number of codes.

    >>> data = CodedData((np.array([0, 1, 1], dtype=np.int32), np.array([2, 0, 2], dtype=np.int32)), (2, 3))
    >>> data.rows, data.counts((0, 1)).tolist()
    (3, [[0.0, 0.0, 1.0], [1.0, 0.0, 1.0]])
    """

    columns: tuple[NDArray[np.int32] | NDArray[np.int64], ...]  # int64 for counting many marginals of few rows
    sizes: tuple[int, ...]
    # Per attribute, the codes that decode as missing values (public, from the schema).
    missing: tuple[tuple[int, ...], ...] = ()

    @property
    def rows(self) -> int:
        """Number of records (exact, private: never released)."""
        return len(self.columns[0]) if self.columns else 0

    def counts(self, clique: Clique) -> Array:
        """Exact counts of every cell of the marginal over ``clique`` (axes in clique order).

        Records with a dropped code (-1, see :class:`Compression`) in any of its columns are not counted.
        """
        shape = tuple(self.sizes[a] for a in clique)
        columns = [np.asarray(self.columns[a], dtype=np.int64) for a in clique]  # no copy of int64 codes
        if not all(self._complete[a] for a in clique):
            present = np.logical_and.reduce([c >= 0 for c in columns])
            columns = [c[present] for c in columns]
        cells = np.ravel_multi_index(tuple(columns), shape)
        return np.bincount(cells, minlength=math.prod(shape)).astype(np.float64).reshape(shape)

    @functools.cached_property
    def _complete(self) -> tuple[bool, ...]:
        """Per attribute, whether no record has a dropped code (checked once, not at every count)."""
        return tuple(bool((column >= 0).all()) for column in self.columns)

    def counts_of(self, cliques: Sequence[Clique]) -> list[Array]:
        """:meth:`counts` of each clique (:class:`Marginals`)."""
        return [self.counts(clique) for clique in cliques]

    def expect(self, cliques: Sequence[Clique]) -> None:
        """Nothing to prepare: the codes are in memory (:class:`Marginals`)."""

    def recode(self, attribute: int, mapping: NDArray[np.int32], size: int) -> CodedData:
        """The data with one attribute's codes mapped through ``mapping`` onto ``size`` codes."""
        columns = list(self.columns)
        columns[attribute] = mapping[columns[attribute]]
        sizes = list(self.sizes)
        sizes[attribute] = size
        missing = list(self.missing)
        if missing:
            missing[attribute] = tuple(int(mapping[c]) for c in missing[attribute] if mapping[c] >= 0)
        return CodedData(tuple(columns), tuple(sizes), tuple(missing))


def measure(data: Marginals, cliques: Sequence[Clique], noise: NoiseSpec, groups: Groups = ()) -> list[Measurement]:
    """Noisy counts of each marginal: exact counts plus exact discrete noise, one draw per cell; with ``groups``
    (the same for every clique), of each marginal's groups of codes (:func:`~dpframe.synthesis.model.coarsen`:
    one record is still in one cell, so the sensitivity is the same).

    >>> from dpframe.testing import seeded_noise
    >>> data = CodedData((np.array([0, 1, 1] * 100, dtype=np.int32),), (2,))
    >>> with seeded_noise(0):
    ...     (m,) = measure(data, [(0,)], Allowance("pure", Fraction(1), 1).noise(Fraction(1), 1))
    >>> bool(abs(m.values[1] - 200) < 20), m.clique
    (True, (0,))
    """
    out = []
    weight = 1.0 / noise.std
    for clique, counts in zip(cliques, data.counts_of(cliques)):
        exact = coarsen(counts, groups)
        noisy = exact + noise.sample(exact.size).reshape(exact.shape)
        out.append(Measurement(clique, noisy.astype(np.float64), np.full(exact.shape, weight), groups))
    return out


def select(scores: Array, allowance: Allowance, share: Fraction, weight: int = 1) -> int:
    """The exponential mechanism over ``scores`` that move by at most ``weight`` per record, sampled exactly.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     select(np.array([0.0, 500.0, 10.0]), Allowance("zcdp", Fraction(1, 2), 1), Fraction(1))
    1
    """
    epsilon = allowance.selection_epsilon(share)
    return int(choose(scores, Fraction(weight * allowance.contributions), epsilon, "exponential", False)[0])


def estimate_total(measurements: Sequence[Measurement]) -> float:
    """The number of records, estimated from the noisy marginals (inverse-variance weighted; post-processing).

    >>> a = Measurement((0,), np.array([60.0, 40.0]), np.full(2, 1.0))   # total 100, variance 2
    >>> b = Measurement((1,), np.array([55.0, 55.0]), np.full(2, 0.5))   # total 110, variance 8
    >>> estimate_total([a, b])
    102.0
    """
    sums = np.array([m.values.sum() for m in measurements])
    variances = np.array([m.variance.sum() for m in measurements])
    return max(float(np.sum(sums / variances) / np.sum(1.0 / variances)), 1.0)


def rare_shares(noisy: NDArray[np.float64], variance: float) -> NDArray[np.float64]:
    """How a merged code's records are shared among its original codes, from their noisy counts.

    Each share is proportional to the posterior mean of a non-negative count
    under a flat prior, given its noisy count ``y`` with noise variance σ²
    (Gaussian; the Laplace noise of pure DP is treated by its variance):
    ``y + σ φ(y/σ) / Φ(y/σ)``. Unlike the clipped noisy counts, no code gets
    nothing because its noise came out negative, and a value that stands out
    of the noise keeps its lead; on a uniform column of a small frame the
    shares stay closer to uniform. Post-processing of released counts.

    >>> rare_shares(np.array([30.0, -10.0, 5.0, 15.0]), 400.0).round(2).tolist()  # sigma 20: mostly noise
    [0.38, 0.15, 0.21, 0.26]
    >>> rare_shares(np.array([900.0, -10.0, 5.0, 15.0]), 400.0).round(2).tolist()  # one value stands out
    [0.94, 0.01, 0.02, 0.02]
    """
    sigma = math.sqrt(variance)
    z = noisy / sigma
    # phi(z) / Phi(z) in logs: Phi underflows for very negative z.
    mean = noisy + sigma * np.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - log_ndtr(z))
    return np.asarray(mean / mean.sum(), dtype=np.float64)


@dataclass(frozen=True)
class Compression:
    """Codes whose noisy count is too small to estimate, merged per attribute into one "rare" code.

    As MST does (McKenna et al. 2021): a code whose one-way noisy count is below
    ``3 sigma`` is hard to tell from an empty one, and keeping it would spread
    every multi-way measurement thin. Decoding draws an original code for each
    record in the rare code in proportion to the rare codes' noisy one-way
    counts' posterior means (:func:`rare_shares`); private-pgm leaves them
    uniform. A lone such code
    is a rare code of its own (dropping it would drop a real category: 68
    Chinstrap penguins below a threshold of 85). An unsupported code that
    stands for no released value (a missing-value or "other" code) is dropped
    instead: merged with rare values it would be drawn in proportion to a
    noisy count that is positive half the time when the column has no such
    values, and every such column would grow a few spurious missing values.
    Records with a dropped code are left out of
    the measurements (code -1), which keeps every count's sensitivity.

    >>> one_way = [Measurement((0,), np.array([500.0, 400.0, 2.0, -1.0]), np.full(4, 0.1))]  # sigma 10
    >>> compression = Compression.of(one_way, [4])
    >>> compression.sizes()  # codes 2 and 3 (below 30) share one rare code
    (3,)
    >>> data, compressed = compression.apply(CodedData((np.array([0, 1, 2, 3], dtype=np.int32),), (4,)), one_way)
    >>> data.columns[0].tolist(), compressed[0].values.tolist()
    ([0, 1, 2, 2], [500.0, 400.0, 1.0])
    >>> compression.undo(np.array([[2]]), np.random.default_rng(0)).tolist()  # rare: 2 or 3 (noise alone: even odds)
    [[3]]
    """

    kept: tuple[NDArray[np.int64] | None, ...]  # per attribute: kept original codes, or None (all kept)
    rare: tuple[NDArray[np.int64] | None, ...]  # per attribute: the original codes merged into the rare code, if any
    rare_weights: tuple[NDArray[np.float64] | None, ...]  # per attribute: probabilities of the rare codes, if merged
    original_sizes: tuple[int, ...]

    @classmethod
    def of(cls, one_way: Sequence[Measurement], sizes: Sequence[int],
           missing: Sequence[Sequence[int]] = ()) -> Compression:
        """Decide from the noisy one-way marginals (post-processing); ``missing``: the codes that decode as missing."""
        kept: list[NDArray[np.int64] | None] = []
        merged: list[NDArray[np.int64] | None] = []
        weights: list[NDArray[np.float64] | None] = []
        for a, m in enumerate(one_way):
            supported = m.values >= 3.0 * np.sqrt(m.variance)
            if supported.all():
                kept.append(None)
                merged.append(None)
                weights.append(None)
                continue
            kept.append(np.flatnonzero(supported))
            rare_codes = np.flatnonzero(~supported)
            if missing:  # unsupported codes of no released value (missing, other): dropped, unless nothing is left
                others = rare_codes[~np.isin(rare_codes, np.asarray(missing[a], dtype=np.int64))]
                if supported.any() or len(others):
                    rare_codes = others
            if len(rare_codes) == 0:
                merged.append(None)  # only missing codes were unsupported: dropped
                weights.append(None)
                continue
            merged.append(rare_codes)
            weights.append(rare_shares(m.values[rare_codes], float(m.variance[rare_codes].mean())))
        return cls(tuple(kept), tuple(merged), tuple(weights), tuple(sizes))

    def keeps(self, attribute: int, code: int) -> bool:
        """Whether an original code of an attribute can come out of :meth:`undo` (kept, or merged as rare).

        >>> one_way = [Measurement((0,), np.array([500.0, 400.0, 2.0]), np.full(3, 0.1))]  # sigma 10
        >>> compression = Compression.of(one_way, [3], [(2,)])  # code 2 decodes as missing
        >>> compression.keeps(0, 1), compression.keeps(0, 2)
        (True, False)
        """
        kept, rare = self.kept[attribute], self.rare[attribute]
        return kept is None or code in kept or (rare is not None and code in rare)

    def sizes(self) -> tuple[int, ...]:
        """Codes per attribute after compression."""
        return tuple(
            s if k is None else len(k) + int(r is not None)
            for s, k, r in zip(self.original_sizes, self.kept, self.rare)
        )

    def apply(self, data: Marginals, one_way: Sequence[Measurement]) -> tuple[Marginals, list[Measurement]]:
        """The compressed data and the one-way measurements re-expressed on the compressed codes."""
        measurements = []
        for a, (kept, rare, m) in enumerate(zip(self.kept, self.rare, one_way)):
            if kept is None:
                measurements.append(m)
                continue
            mapping = np.full(self.original_sizes[a], -1, dtype=np.int32)  # dropped unless kept or merged
            mapping[kept] = np.arange(len(kept), dtype=np.int32)
            values, variance = m.values[kept], m.variance[kept]
            if rare is not None:
                mapping[rare] = len(kept)
                values = np.append(values, m.values[rare].sum())
                variance = np.append(variance, m.variance[rare].sum())
            data = data.recode(a, mapping, len(kept) + int(rare is not None))
            measurements.append(Measurement(m.clique, values, 1.0 / np.sqrt(variance)))
        return data, measurements

    def undo(self, codes: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        """Original codes for compressed ones (rows x attributes); rare codes become a random rare original."""
        out = codes.copy()
        for a, (kept, rare, weights) in enumerate(zip(self.kept, self.rare, self.rare_weights)):
            if kept is None:
                continue
            column = codes[:, a]
            in_rare = column == len(kept)
            out[~in_rare, a] = kept[column[~in_rare]]
            if rare is not None:
                out[in_rare, a] = rng.choice(rare, size=int(in_rare.sum()), p=weights)
        return out
