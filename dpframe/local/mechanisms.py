"""Local randomizers: each person perturbs their own category before it leaves their device.

A randomizer ``R`` is **ε-locally differentially private** (ε-LDP) when for
any two inputs ``x, x'`` and any report ``y``:
``P[R(x) = y] <= e^ε P[R(x') = y]`` (Kasiviswanathan et al. 2011; Warner
1965 for the idea). Each class below states its proof sketch.

All follow the "pure" frequency-oracle framework of Wang, Blocki, Li & Jha
(2017), *Locally Differentially Private Protocols for Frequency Estimation*
(USENIX Security): a report *supports* some categories; a person whose value
is ``v`` supports ``v`` with probability ``p*`` and any other category
``v' ≠ v`` with probability ``q*`` (independently of everyone else). With
``C_v`` the number of reports supporting ``v`` out of ``n``,

    ĉ_v = (C_v − n q*) / (p* − q*)                                   (unbiased)
    Var[ĉ_v] = n q*(1 − q*) / (p* − q*)²  +  n_v (1 − p* − q*) / (p* − q*)

exactly (``C_v`` is a sum of independent Bernoullis: ``n_v`` with ``p*``,
``n − n_v`` with ``q*``); Wang et al.'s Var* keeps the first term, which
dominates when ``n_v ≪ n``.

Inputs and reports are integer codes ``0 .. k−1`` of the categories; the
mapping from labels is :mod:`dpframe.local.reports`' business. Every coin
comes from :func:`dpframe.noise.random.current_source` through the exact
samplers of :mod:`dpframe.local.exact` and :mod:`dpframe.noise.random`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.local.exact import ExpProbability, bernoulli
from dpframe.noise.random import (
    RandomSource,
    _buffered,
    current_source,
    random_bits,
    uniform_below,
)

__all__ = [
    "GeneralizedRandomizedResponse",
    "LocalHashing",
    "LocalRandomizer",
    "RandomizedResponse",
    "UnaryEncoding",
]

IntArray = NDArray[np.int64]

#: The Mersenne prime 2³¹ − 1: the field of the local-hashing family; a x + b < 2⁶² fits in int64.
HASH_PRIME = 2**31 - 1


class LocalRandomizer(ABC):
    """An ε-LDP randomizer over ``k`` categories with an unbiased frequency estimator.

    Subclasses set :attr:`p_star` and :attr:`q_star` (the probabilities that a
    report supports its own and another category), :meth:`randomize` and
    :meth:`support`.
    """

    #: The ``method=`` name of :func:`dpframe.local.randomized_response`.
    method: str
    #: The columns of a report frame (all int64 or bool).
    columns: tuple[str, ...]

    def __init__(self, epsilon: Fraction, k: int) -> None:
        if not isinstance(epsilon, Fraction) or epsilon <= 0:
            raise ValueError(f"epsilon must be a positive Fraction, got {epsilon!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise ValueError(f"a local randomizer needs at least 2 categories, got {k!r}")
        if k >= HASH_PRIME:
            raise ValueError(f"at most {HASH_PRIME - 1} categories are supported, got {k}")
        self.epsilon = epsilon
        self.k = k

    p_star: float
    q_star: float

    @abstractmethod
    def randomize(self, codes: IntArray, source: RandomSource | None = None) -> pd.DataFrame:
        """One report per code (a frame with :attr:`columns`), from the secure source by default."""

    @abstractmethod
    def support(self, reports: pd.DataFrame) -> IntArray:
        """``C_v`` for every category ``v``: how many reports support it."""

    def estimate(self, reports: pd.DataFrame) -> NDArray[np.float64]:
        """The unbiased count estimates ``(C_v − n q*) / (p* − q*)`` (module docstring)."""
        n = len(reports)
        support = self.support(reports).astype(np.float64)
        return (support - n * self.q_star) / (self.p_star - self.q_star)

    def variance(self, n: int, counts: Any) -> NDArray[np.float64]:
        """The exact variance of each count estimate, for ``n`` reports and the true ``counts`` n_v.

        >>> grr = GeneralizedRandomizedResponse(Fraction(1), 4)
        >>> round(float(grr.variance(1000, [250])[0]), 1)
        1889.1
        """
        p, q = self.p_star, self.q_star
        n_v = np.asarray(counts, dtype=np.float64)
        return np.asarray(n * q * (1 - q) / (p - q) ** 2 + n_v * (1 - p - q) / (p - q), dtype=np.float64)

    def approximate_variance(self, n: int) -> float:
        """Wang et al.'s Var* = n q*(1 − q*)/(p* − q*)², the variance when the category is rare.

        >>> round(UnaryEncoding(Fraction(1), 10, optimized=True).approximate_variance(1000), 1)
        3682.7
        """
        p, q = self.p_star, self.q_star
        return n * q * (1 - q) / (p - q) ** 2

    def _codes(self, codes: Any) -> IntArray:
        array = np.asarray(codes, dtype=np.int64)
        if array.size and (int(array.min()) < 0 or int(array.max()) >= self.k):
            raise ValueError(f"codes must lie in 0..{self.k - 1}")
        return array

    def _frame(self, reports: pd.DataFrame) -> pd.DataFrame:
        if tuple(reports.columns) != self.columns:
            raise ValueError(f"{self.method} reports have the columns {list(self.columns)}, "
                             f"got {list(reports.columns)}")
        return reports

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={float(self.epsilon):.6g}, k={self.k})"


class GeneralizedRandomizedResponse(LocalRandomizer):
    """Generalized (k-ary) randomized response, or direct encoding (Wang et al. 2017, §4.1).

    Report the true category with probability ``p = e^ε / (e^ε + k − 1)``,
    otherwise one of the other ``k − 1`` uniformly at random (each with
    ``q = 1 / (e^ε + k − 1)``). A report supports only itself: p* = p, q* = q.

    *ε-LDP:* any report has probability p or q, and p / q = e^ε.

    Variance (Wang et al.): Var* = n (e^ε + k − 2) / (e^ε − 1)², growing
    linearly in k: the choice for small domains (k < 3 e^ε + 2).

    >>> from dpframe.testing import seeded_noise
    >>> grr = GeneralizedRandomizedResponse(Fraction(1), 3)
    >>> round(grr.p_star, 4), round(grr.q_star, 4)
    (0.5761, 0.2119)
    >>> with seeded_noise(0):
    ...     reports = grr.randomize(np.array([0, 0, 1, 2] * 25_000))
    >>> list(reports.columns), np.round(grr.estimate(reports) / 100_000, 2).tolist()
    (['report'], [0.5, 0.25, 0.25])
    """

    method = "grr"
    columns = ("report",)

    def __init__(self, epsilon: Fraction, k: int) -> None:
        super().__init__(epsilon, k)
        self.keep = ExpProbability(epsilon, a=1, b=0, c=1, d=k - 1)
        self.p_star = self.keep.value
        self.q_star = (1 - self.p_star) / (k - 1)

    def perturb(self, codes: IntArray, source: RandomSource | None = None) -> IntArray:
        """The randomized codes: kept with probability p, else a uniform other code."""
        src = _buffered(current_source() if source is None else source)
        out = self._codes(codes).copy()
        moved = (~bernoulli(self.keep, out.size, src)).nonzero()[0]
        # A uniform draw among the k − 1 others: skip over the true code.
        other = uniform_below(self.k - 1, src, size=moved.size)
        out[moved] = other + (other >= out[moved])
        return out

    def randomize(self, codes: IntArray, source: RandomSource | None = None) -> pd.DataFrame:
        """One report per code: the randomized code in the column ``report``."""
        return pd.DataFrame({"report": self.perturb(codes, source)})

    def support(self, reports: pd.DataFrame) -> IntArray:
        """How many reports name each category."""
        codes = self._codes(self._frame(reports)["report"].to_numpy())
        return np.bincount(codes, minlength=self.k).astype(np.int64)


class RandomizedResponse(GeneralizedRandomizedResponse):
    """Warner's (1965) randomized response for a yes/no question: GRR with k = 2.

    Answer truthfully with probability ``e^ε / (e^ε + 1)``, otherwise lie.
    *ε-LDP:* the two answers have probabilities p and 1 − p, whose ratio is
    e^ε. The count estimate is ``(C_yes − n(1 − p)) / (2p − 1)``. (The book's
    two-coin version -- truth on heads, a second coin otherwise -- is this
    with p = 3/4, i.e. ε = ln 3.)

    >>> rr = RandomizedResponse(Fraction(1))
    >>> round(rr.p_star, 4), rr.k
    (0.7311, 2)
    """

    method = "rr"

    def __init__(self, epsilon: Fraction, k: int = 2) -> None:
        if k != 2:
            raise ValueError(f"randomized response (method='rr') is for exactly 2 categories, got {k}; "
                             "use method='grr', 'oue' or 'olh' for more")
        super().__init__(epsilon, 2)


class UnaryEncoding(LocalRandomizer):
    """Unary encoding: a bit per category, each flipped independently (Wang et al. 2017, §4.2).

    The value ``v`` is one-hot encoded; a 1 bit is reported as 1 with
    probability ``p``, a 0 bit with probability ``q``. A report supports the
    categories whose bit is 1: p* = p, q* = q.

    * Symmetric (SUE, basic RAPPOR, Erlingsson et al. 2014): ``p = e^{ε/2} / (e^{ε/2} + 1)``, ``q = 1 − p``.
    * Optimized (OUE): ``p = 1/2``, ``q = 1 / (e^ε + 1)``, which minimises Var*:
      Var* = 4 n e^ε / (e^ε − 1)², independent of k.

    *ε-LDP:* two inputs differ in two bits; for any report the likelihood
    ratio is at most ``p(1 − q) / ((1 − p) q)``, which is e^{ε/2} · e^{ε/2}
    for SUE and 1 · e^ε for OUE. A report is k bits long: OUE (or OLH) is the
    choice for large domains.

    >>> from dpframe.testing import seeded_noise
    >>> oue = UnaryEncoding(Fraction(1), 4, optimized=True)
    >>> oue.method, oue.p_star, round(oue.q_star, 4)
    ('oue', 0.5, 0.2689)
    >>> with seeded_noise(0):
    ...     reports = oue.randomize(np.array([0, 1, 2, 3] * 25_000))
    >>> reports.shape, bool(np.abs(oue.estimate(reports) / 100_000 - 0.25).max() < 0.02)
    ((100000, 4), True)
    """

    def __init__(self, epsilon: Fraction, k: int, *, optimized: bool) -> None:
        super().__init__(epsilon, k)
        self.optimized = optimized
        self.method = "oue" if optimized else "sue"
        self.columns = tuple(f"bit{i}" for i in range(k))
        if optimized:
            self.one: ExpProbability | None = None  # a fair coin
            self.zero = ExpProbability(epsilon, a=0, b=1, c=1, d=1)
            self.p_star = 0.5
        else:
            half = epsilon / 2
            self.one = ExpProbability(half, a=1, b=0, c=1, d=1)
            self.zero = ExpProbability(half, a=0, b=1, c=1, d=1)
            self.p_star = self.one.value
        self.q_star = self.zero.value

    def randomize(self, codes: IntArray, source: RandomSource | None = None) -> pd.DataFrame:
        """One report per code: k bool columns ``bit0 .. bit{k-1}``."""
        src = _buffered(current_source() if source is None else source)
        values = self._codes(codes)
        n = values.size
        bits = bernoulli(self.zero, n * self.k, src).reshape(n, self.k)
        ones = random_bits(n, src) if self.one is None else bernoulli(self.one, n, src)
        bits[np.arange(n), values] = ones
        return pd.DataFrame(bits, columns=list(self.columns))

    def support(self, reports: pd.DataFrame) -> IntArray:
        """How many reports have each category's bit set."""
        frame = self._frame(reports)
        counts: IntArray = frame.to_numpy(dtype=np.int64).sum(axis=0)
        return counts

    def __repr__(self) -> str:
        return f"UnaryEncoding(epsilon={float(self.epsilon):.6g}, k={self.k}, optimized={self.optimized})"


def _collision_probability(g: int) -> float:
    """P[r₁ ≡ r₂ (mod g)] for independent uniform r₁, r₂ in Z_P (P = HASH_PRIME): Σ_j n_j² / P²."""
    per_residue = [(HASH_PRIME - j + g - 1) // g for j in range(g)]
    return float(Fraction(sum(c * c for c in per_residue), HASH_PRIME**2))


class LocalHashing(LocalRandomizer):
    """Optimized local hashing, OLH (Wang et al. 2017, §4.4).

    Each report draws its own hash function ``H(x) = ((a x + b) mod P) mod g``
    with ``a, b`` uniform in ``Z_P`` (``P = 2³¹ − 1``, Carter & Wegman's
    pairwise-independent family), from the secure source, and sends the seed
    ``(a, b)`` with ``y = GRR_g(H(v))``, generalized randomized response over
    the ``g`` hash values. The default ``g = round(e^ε + 1)`` minimises the
    variance, Var* ≈ 4 n e^ε / (e^ε − 1)², like OUE but with reports of three
    integers whatever k.

    A report supports every ``v`` with ``H(v) = y``: p* = e^ε / (e^ε + g − 1)
    and, for ``v`` other than the true value, ``q* = c p* + (1 − c)(1 − p*)/(g − 1)``
    where ``c`` is the exact probability that the family maps two distinct
    values together (``(H(x), H(v))`` is uniform on Z_P², so ``c = Σ_j n_j²/P²``
    with ``n_j`` the residues ≡ j mod g; ``c = 1/g + O(g/P²)``, and using the
    exact ``c`` keeps the estimator exactly unbiased).

    *ε-LDP:* the seed is independent of the value, and given the seed ``y``
    is GRR over g values, which is ε-LDP.

    >>> from dpframe.testing import seeded_noise
    >>> olh = LocalHashing(Fraction(1), 20)
    >>> olh.g, olh.columns
    (4, ('a', 'b', 'report'))
    >>> with seeded_noise(0):
    ...     reports = olh.randomize(np.array([3] * 50_000 + [7] * 50_000))
    >>> np.round(olh.estimate(reports)[[3, 7, 11]] / 100_000, 1).tolist()
    [0.5, 0.5, 0.0]
    """

    method = "olh"
    columns = ("a", "b", "report")

    def __init__(self, epsilon: Fraction, k: int, g: int | None = None) -> None:
        super().__init__(epsilon, k)
        if g is None:
            g = max(2, round(math.exp(epsilon) + 1))
        if isinstance(g, bool) or not isinstance(g, int) or not 2 <= g < HASH_PRIME:
            raise ValueError(f"g (the number of hash values) must be an int in [2, {HASH_PRIME}), got {g!r}")
        self.g = g
        self.hashed = GeneralizedRandomizedResponse(epsilon, g)
        collision = _collision_probability(g)
        self.p_star = self.hashed.p_star
        self.q_star = collision * self.p_star + (1 - collision) * (1 - self.p_star) / (g - 1)

    def _hash(self, a: IntArray, b: IntArray, values: IntArray | int) -> IntArray:
        hashed: IntArray = ((a * values + b) % HASH_PRIME) % self.g
        return hashed

    def randomize(self, codes: IntArray, source: RandomSource | None = None) -> pd.DataFrame:
        """One report per code: the seed ``a``, ``b`` and the randomized hash ``report``."""
        src = _buffered(current_source() if source is None else source)
        values = self._codes(codes)
        a = uniform_below(HASH_PRIME, src, size=values.size)
        b = uniform_below(HASH_PRIME, src, size=values.size)
        y = self.hashed.perturb(self._hash(a, b, values), src)
        return pd.DataFrame({"a": a, "b": b, "report": y})

    def support(self, reports: pd.DataFrame) -> IntArray:
        """For each category v, how many reports have ``H(v) = y`` under their own seed."""
        frame = self._frame(reports)
        a, b, y = (frame[c].to_numpy(dtype=np.int64) for c in self.columns)
        if a.size and (int(min(a.min(), b.min())) < 0 or int(max(a.max(), b.max())) >= HASH_PRIME):
            raise ValueError(f"hash seeds a, b must lie in 0..{HASH_PRIME - 1}")
        return np.array([int(np.count_nonzero(self._hash(a, b, v) == y)) for v in range(self.k)], dtype=np.int64)

    def __repr__(self) -> str:
        return f"LocalHashing(epsilon={float(self.epsilon):.6g}, k={self.k}, g={self.g})"
