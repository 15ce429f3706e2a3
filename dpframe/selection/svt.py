"""The sparse vector technique (SVT) with exact discrete Laplace noise.

SVT answers a long -- even unbounded -- sequence of queries with one bit each,
"above the threshold" or not, and pays only for the (at most ``c``) positive
answers: its privacy cost does not depend on how many queries it examines.

Which variant, and why
----------------------
Many published variants of SVT are not private. Lyu, Su & Li (2017),
"Understanding the Sparse Vector Technique for Differential Privacy" (PVLDB
10(6)), catalogue them: Alg. 3 (query noise without the factor 2), Alg. 4
(query noise not scaled by ``c``), Alg. 5 (no query noise at all) and Alg. 6
(no abort after ``c`` positives, query noise not scaled by ``c``) all fail to be
epsilon-DP for any finite epsilon or for the stated one. This module
implements their Alg. 1, which they prove epsilon-DP (their Theorem 2; Alg. 7
is its generalisation to other budget splits):

* ``epsilon1 = epsilon / 2`` for the threshold: ``rho ~ Lap(Delta / epsilon1)``,
  drawn **once**;
* ``epsilon2 = epsilon - epsilon1`` for the queries: each answer gets fresh
  noise ``nu_i ~ Lap(2 c Delta / epsilon2)``, or ``Lap(c Delta / epsilon2)`` when
  the queries are *monotonic* (on any pair of neighbouring data sets all answers
  move in the same direction, as counts do when a person is added);
* query ``i`` is positive when ``q_i + nu_i >= T + rho``; after ``c`` positives
  the algorithm stops.

The threshold is **not** re-noised after a positive. Re-noising is what Dwork &
Roth's Sparse does (their Alg. 2 in Lyu et al.), which is also private but
spends its budget as ``c`` separate AboveThreshold runs, with threshold noise
scaled by ``c``; Lyu et al. prove that the single threshold noise of Alg. 1,
unscaled by ``c``, suffices. The cost is epsilon whatever the number of queries.
The proof allows each query to be chosen after seeing the earlier outcomes
(fixing an outcome vector fixes the queries), which :class:`SparseVector`
exposes for adaptive use.

Exact noise on integers
-----------------------
The noise is the exact discrete Laplace distribution (CKS20) from the secure
source (:mod:`dpframe.noise.discrete`), so answers must be integers and the
sensitivity ``Delta`` a positive **integer**: the privacy proof shifts the noise
by ``Delta`` and ``2 Delta``, which the discrete Laplace allows for integer shifts.
Non-integer answers are rounded down (``floor`` keeps an integer sensitivity
valid: ``|floor(a) - floor(b)| <= Delta`` whenever ``|a - b| <= Delta``); to keep
resolution, scale answers to an integer grid first (e.g. answer in cents and
declare the sensitivity in cents; ``p.dp.above_threshold`` scales aggregate
queries whose derived sensitivity is not an integer:
:func:`dpframe.queries.select.above_threshold`). Answers are clamped to ``+-2**60`` (clamping
keeps the sensitivity too) and NaN answers count as never above. The
threshold may be any real number. Noise scales are rounded up to a fraction
with a power-of-two denominator, which only adds noise.

Answers arrive as an array (all query noises are drawn at once -- the same
distribution as drawing them one by one, since they are independent of each
other and of the data) or as any iterable, e.g. a generator that computes each
answer lazily (noise is drawn in small batches; the iterable is not read past
the ``c``-th positive).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpframe.accounting.costs import exact
from dpframe.noise.discrete import sample_discrete_laplace
from dpframe.noise.mechanism import round_up
from dpframe.noise.random import RandomSource

__all__ = ["SVTNoise", "SparseVector", "above_threshold", "sparse"]

# Answers are clamped to +-2**60 and the threshold-plus-noise level is kept
# within +-2**61 on the fast path, so answer + noise never overflows int64.
_ANSWER_LIMIT = 1 << 60
_LEVEL_LIMIT = 1 << 61
# Noise for streamed answers is drawn in batches growing up to this size.
_MAX_BATCH = 4096
# The smallest first batch of noise of a scan over bounded answers (first_above_bounded); later batches double.
_FIRST_BATCH = 64


def positive_int(value: object, name: str) -> int:
    """Validate a positive integer argument (a sensitivity, a count of positives, a limit).

    >>> positive_int(3, "c")
    3
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        hint = " (scale the answers to an integer grid)" if name == "sensitivity" else ""
        raise ValueError(f"{name} must be a positive integer, got {value!r}{hint}")
    return int(value)


@dataclass(frozen=True)
class SVTNoise:
    """The discrete Laplace scales of Lyu et al.'s Alg. 1 for a budget ``epsilon``.

    >>> noise = SVTNoise.calibrate(1.0, sensitivity=1, c=1)
    >>> noise.threshold, noise.query
    (Fraction(2, 1), Fraction(4, 1))
    >>> SVTNoise.calibrate(1.0, sensitivity=1, c=3, monotonic=True).query
    Fraction(6, 1)
    """

    threshold: Fraction
    query: Fraction
    epsilon: Fraction
    sensitivity: int
    c: int
    monotonic: bool

    @classmethod
    def calibrate(
        cls,
        epsilon: float | Fraction,
        sensitivity: int = 1,
        c: int = 1,
        monotonic: bool = False,
        threshold_share: Fraction = Fraction(1, 2),
    ) -> SVTNoise:
        """Threshold noise ``Lap(Delta/eps1)``, query noise ``Lap(2 c Delta/eps2)`` (``c Delta/eps2`` if monotonic).

        ``eps1 = threshold_share * epsilon`` (1/2 in Lyu et al.'s Alg. 1; any
        share in (0, 1) is private, their Alg. 7) and ``eps2 = epsilon - eps1``.

        >>> SVTNoise.calibrate(0.5, sensitivity=2, c=3).query  # 2 * 3 * 2 / 0.25
        Fraction(48, 1)
        """
        eps = exact(epsilon, "epsilon")
        if not 0 < threshold_share < 1:
            raise ValueError(f"threshold_share must lie strictly between 0 and 1, got {threshold_share!r}")
        delta = positive_int(sensitivity, "sensitivity")
        count = positive_int(c, "c")
        if not isinstance(monotonic, (bool, np.bool_)):
            raise TypeError(f"monotonic must be True or False, got {monotonic!r}")
        eps1 = eps * Fraction(threshold_share)
        eps2 = eps - eps1
        factor = 1 if monotonic else 2
        return cls(
            round_up(Fraction(delta) / eps1),
            round_up(Fraction(factor * count * delta) / eps2),
            eps,
            delta,
            count,
            bool(monotonic),
        )

    def describe(self) -> str:
        """A one-line description for the ledger.

        >>> SVTNoise.calibrate(1.0).describe()[:48]
        'threshold noise discrete Laplace scale 2, querie'
        """
        kind = "monotonic queries" if self.monotonic else "queries"
        return (
            f"threshold noise discrete Laplace scale {float(self.threshold):.4g}, {kind} "
            f"scale {float(self.query):.4g} (Δ={self.sensitivity}, c={self.c}; Lyu et al. 2017 Alg. 1)"
        )


def _as_integer(value: Any) -> int:
    """One answer as a clamped integer (floor); NaN is never above any threshold."""
    if isinstance(value, (int, np.integer, np.bool_)):
        result = int(value)
    elif isinstance(value, Fraction):
        result = math.floor(value)
    elif isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return -_ANSWER_LIMIT
        if math.isinf(number):
            return _ANSWER_LIMIT if number > 0 else -_ANSWER_LIMIT
        result = math.floor(number)
    else:
        raise TypeError(f"answers must be real numbers, got {type(value).__name__}")
    return max(-_ANSWER_LIMIT, min(_ANSWER_LIMIT, result))


def _as_integers(answers: Any) -> NDArray[np.int64]:
    """An array of answers as clamped int64 (floor); NaN -> never above."""
    array = np.asarray(answers)
    if array.ndim != 1:
        raise ValueError(f"answers must be one-dimensional, got shape {array.shape}")
    kind = array.dtype.kind
    if kind == "b":
        return array.astype(np.int64)
    if kind == "u":
        capped: NDArray[np.int64] = np.minimum(array, np.uint64(_ANSWER_LIMIT)).astype(np.int64)
        return capped
    if kind == "i":
        clipped: NDArray[np.int64] = np.clip(array.astype(np.int64), -_ANSWER_LIMIT, _ANSWER_LIMIT)
        return clipped
    if kind == "f":
        floored = np.floor(array.astype(np.float64))
        floored = np.nan_to_num(floored, nan=-float(_ANSWER_LIMIT))
        return np.clip(floored, -float(_ANSWER_LIMIT), float(_ANSWER_LIMIT)).astype(np.int64)
    # Object arrays (Python ints beyond int64, Fractions, Decimals): exact, one by one.
    return np.array([_as_integer(v) for v in array], dtype=np.int64)


def _ceiling(threshold: Any) -> int:
    """``ceil(threshold)`` exactly, for an int, Fraction or finite float."""
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (numbers.Real, np.number)):
        raise TypeError(f"threshold must be a real number, got {type(threshold).__name__}")
    if isinstance(threshold, (int, np.integer)):
        return int(threshold)
    if isinstance(threshold, Fraction):
        return math.ceil(threshold)
    value = float(threshold)
    if not math.isfinite(value):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    return math.ceil(value)


def _first_positives(answers: NDArray[np.int64], noise: NDArray[np.int64], level: int, limit: int) -> list[int]:
    """Indices ``i`` with ``answers[i] + noise[i] >= level``, the first ``limit`` of them."""
    if abs(level) < _LEVEL_LIMIT and (len(noise) == 0 or int(np.abs(noise).max()) < _LEVEL_LIMIT):
        hits = np.flatnonzero(answers + noise >= level)
    else:  # astronomically large noise or threshold: exact Python integers
        hits = np.array(
            [i for i, (a, z) in enumerate(zip(answers.tolist(), noise.tolist())) if a + z >= level], dtype=np.int64
        )
    return [int(i) for i in hits[:limit]]


class SparseVector:
    """One run of SVT (Lyu et al. Alg. 1): a noisy threshold, fed answers until ``c`` positives.

    The threshold noise is drawn when the run is created. Each call of
    :meth:`positives` or :meth:`first_above` examines a further batch of
    queries -- which may be chosen after seeing the earlier outcomes -- against
    the same noisy threshold. The whole run costs ``epsilon`` (charge it once,
    before reading the data), however many queries it examines.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     run = SparseVector(threshold=100, sensitivity=1, epsilon=1.0, c=2, monotonic=True)
    ...     first = run.first_above([3, 5, 500, 7])
    ...     second = run.first_above(iter([1000, 2]))
    >>> first, second, run.remaining
    (2, 0, 0)
    """

    def __init__(
        self,
        threshold: float | Fraction,
        sensitivity: int,
        epsilon: float | Fraction,
        c: int = 1,
        monotonic: bool = False,
        source: RandomSource | None = None,
        threshold_share: Fraction = Fraction(1, 2),
    ) -> None:
        self.noise = SVTNoise.calibrate(epsilon, sensitivity, c, monotonic, threshold_share)
        base = _ceiling(threshold)
        self._source = source
        self._ahead: NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # query noise drawn ahead (draw_ahead)
        rho = int(sample_discrete_laplace(self.noise.threshold, 1, source)[0])
        # q + nu >= T + rho  <=>  q + nu >= ceil(T) + rho, for integers q, nu, rho.
        self._level = base + rho
        self.remaining = self.noise.c

    @staticmethod
    def check_threshold(threshold: Any) -> None:
        """Raise TypeError/ValueError unless ``threshold`` is a finite real number (before charging).

        >>> SparseVector.check_threshold(float("inf"))
        Traceback (most recent call last):
        ...
        ValueError: threshold must be finite, got inf
        """
        _ceiling(threshold)

    def _check_open(self) -> None:
        if self.remaining <= 0:
            raise RuntimeError("this sparse vector run has stopped: it already found its c positive answers")

    def positives(self, answers: Iterable[Any] | NDArray[Any], limit: int | None = None) -> list[int]:
        """Indices (within ``answers``) of the next positives, at most ``limit`` (default: all remaining).

        >>> from dpframe.testing import seeded_noise
        >>> with seeded_noise(3):
        ...     SparseVector(10, 1, 1e6, c=3).positives([50, 0, 60, 70, 80])
        [0, 2, 3]
        """
        self._check_open()
        wanted = self.remaining if limit is None else min(positive_int(limit, "limit"), self.remaining)
        if isinstance(answers, np.ndarray) or isinstance(answers, (list, tuple)):
            values = _as_integers(answers)
            found = _first_positives(values, self._draw(len(values)), self._level, wanted)
        else:
            found = self._stream(iter(answers), wanted)
        self.remaining -= len(found)
        return found

    def first_above(self, answers: Iterable[Any] | NDArray[Any]) -> int | None:
        """Index of the first positive among ``answers`` (uses one of the ``c`` positives), or None.

        >>> from dpframe.testing import seeded_noise
        >>> with seeded_noise(3):
        ...     SparseVector(10, 1, 1e6).first_above(iter([0, 1, 2])) is None
        True
        """
        found = self.positives(answers, limit=1)
        return found[0] if found else None

    def first_above_bounded(
        self, bounds: NDArray[np.int64], exact: NDArray[np.bool_], answers: Callable[[], NDArray[np.int64]],
        first_batch: int = 0,
    ) -> int | None:
        """:meth:`first_above` of answers known at first only through upper bounds: ``bounds[i] >= answers[i]``,
        with equality where ``exact[i]``; ``answers()`` computes them all, and is called only when needed.

        With the same noise, a query negative on its bound is negative on its answer (which is no larger), so
        when the first positive on the bounds is at an exact query it is the first positive on the answers;
        otherwise the answers are computed and compared with the same noise. The noise is drawn in batches,
        the first of ``first_batch`` queries (at least :data:`_FIRST_BATCH`), then doubling, and not past the batch
        of the first positive: each query's noise is independent of the others and of the answers, and the
        queries after the first positive are never examined, so their noise need not exist. ``first_batch``
        must be public (never read off the data): then how much noise is drawn depends only on where the scan
        stops, which it releases. The result is the one :meth:`first_above` would give on the answers, for every
        draw of the noise: the same distribution, the same privacy.

        >>> from dpframe.testing import seeded_noise
        >>> bounds, exact = np.array([-5, -5, 40, 0]), np.array([False, False, True, True])
        >>> with seeded_noise(0):
        ...     SparseVector(20, 1, 1e6).first_above_bounded(bounds, exact, lambda: np.array([-9, -7, 40, 0]))
        2
        """
        self._check_open()
        upper, refined = _as_integers(bounds), False
        start, batch = 0, max(_FIRST_BATCH, first_batch)
        while start < len(upper):
            stop = min(start + batch, len(upper))
            noise = self._draw(stop - start)
            found = _first_positives(upper[start:stop], noise, self._level, 1)
            if found and not refined and not exact[start + found[0]]:
                upper, refined = _as_integers(answers()), True  # the rest of the scan compares the answers
                found = _first_positives(upper[start:stop], noise, self._level, 1)
            if found:
                self.remaining -= 1
                return start + found[0]
            start, batch = stop, 2 * batch
        return None

    def draw_ahead(self, n: int) -> None:
        """Draw the query noise of the next ``n`` queries now, in one call.

        The noise of each query is independent of the others and of the
        answers, so drawing it early changes nothing but the cost: one call
        of the exact sampler has a fixed cost (some 0.2 ms) that several scans of the same
        run (e.g. the two bounds of :func:`dpframe.queries.bounds.choose_bounds`) then pay once.

        >>> from dpframe.testing import seeded_noise
        >>> with seeded_noise(1):
        ...     run = SparseVector(10, 1, 1e6, c=2)
        ...     run.draw_ahead(4)
        ...     run.first_above([0, 50]), run.first_above([60, 0])
        (1, 0)
        """
        self._ahead = np.concatenate([self._ahead, sample_discrete_laplace(self.noise.query, n, self._source)])

    def _draw(self, n: int) -> NDArray[np.int64]:
        ahead = self._ahead[:n]
        self._ahead = self._ahead[n:]
        if len(ahead) == n:
            return ahead
        return np.concatenate([ahead, sample_discrete_laplace(self.noise.query, n - len(ahead), self._source)])

    def _stream(self, answers: Iterator[Any], wanted: int) -> list[int]:
        found: list[int] = []
        index, batch = 0, 16
        noise: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        position = 0
        for value in answers:
            if position == len(noise):
                noise, position = self._draw(batch), 0
                batch = min(2 * batch, _MAX_BATCH)
            if _as_integer(value) + int(noise[position]) >= self._level:
                found.append(index)
                if len(found) == wanted:
                    break
            position += 1
            index += 1
        return found


def above_threshold(
    answers: Iterable[Any] | NDArray[Any],
    threshold: float,
    sensitivity: int,
    epsilon: float | Fraction,
    monotonic: bool = False,
    source: RandomSource | None = None,
) -> int | None:
    """AboveThreshold: index of the first answer whose noisy value clears the noisy threshold, or None.

    epsilon-DP for answers with integer sensitivity ``sensitivity`` (Lyu et al.
    2017, Alg. 1 with c = 1), whatever the number of answers. This function
    reads data-derived answers but charges no budget: the caller must charge
    ``epsilon`` before computing them (``df.dp.above_threshold`` does).

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(1):
    ...     above_threshold([0, 2, 1, 250, 3, 400], threshold=100, sensitivity=1, epsilon=1.0)
    3
    >>> with seeded_noise(1):
    ...     above_threshold((x * x for x in range(5)), threshold=10**6, sensitivity=1, epsilon=1.0) is None
    True
    """
    return SparseVector(threshold, sensitivity, epsilon, 1, monotonic, source).first_above(answers)


def sparse(
    answers: Iterable[Any] | NDArray[Any],
    threshold: float,
    sensitivity: int,
    epsilon: float | Fraction,
    c: int,
    monotonic: bool = False,
    source: RandomSource | None = None,
) -> list[int]:
    """Sparse: indices of the first ``c`` answers above the noisy threshold (fewer if the answers run out).

    epsilon-DP for answers with integer sensitivity (Lyu et al. 2017, Alg. 1):
    one threshold noise ``Lap(2 Delta/epsilon)``, query noise
    ``Lap(4 c Delta/epsilon)`` (``Lap(2 c Delta/epsilon)`` if monotonic), no
    re-noising of the threshold, stop after ``c`` positives. Charges nothing
    itself (see :func:`above_threshold`).

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(2):
    ...     sparse([0, 900, 1, 800, 2, 700], threshold=400, sensitivity=1, epsilon=1.0, c=2)
    [1, 3]
    """
    return SparseVector(threshold, sensitivity, epsilon, c, monotonic, source).positives(answers)

