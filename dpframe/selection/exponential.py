"""Private selection from a vector of candidate scores: which candidate is (nearly) the best?

Pure mechanisms, no pandas: each takes the scores ``q_1..q_m`` of ``m`` public
candidates, the scores' sensitivity ``Δ`` (the most one score can change when
one privacy unit is added or removed) and ``epsilon``, and returns the
position of the selected candidate. Each is ε-DP.

* :func:`exponential_mechanism` -- P(r) ∝ exp(ε q_r / (2Δ)) (McSherry &
  Talwar 2007; Dwork & Roth 2014, Thm 3.10).
* :func:`permute_and_flip` -- visit the candidates in random order and stop at
  candidate r with probability exp(ε (q_r − q*) / (2Δ)) (McKenna & Sheldon
  2020). Its expected score is never below the exponential mechanism's, and
  its expected gap to the best can be half as large; it is the default of
  dpframe's selection queries.
* :func:`report_noisy_max` -- the argmax of the scores plus independent noise:
  Laplace(2Δ/ε) (Dwork & Roth, Claim 3.9, proves Laplace(1/ε) for counting
  queries; for general scores of sensitivity Δ the threshold each candidate
  must beat moves by up to 2Δ, see below),
  Gumbel(2Δ/ε), which *is* the exponential mechanism, or Exponential(2Δ/ε),
  which *is* permute-and-flip (Ding et al. 2021, "The permute-and-flip
  mechanism is identical to report-noisy-max with exponential noise",
  arXiv:2105.07260).
* :func:`top_k` -- the k best, by peeling: k rounds of one of the above, each
  with ε/k, removing the winner each round (sequential composition).

**Monotone scores** (``monotonic=True``): when adding a unit can only raise
(or only lower) every score at once -- counts are the example -- the factor 2
can be dropped: exp(ε q_r / Δ) for the exponential mechanism (Dwork & Roth,
§3.4), exp(ε (q_r − q*) / Δ) for permute-and-flip and
Laplace(Δ/ε) for report-noisy-max (Claim 3.9 for counting queries). The
argument is the same for the three noise distributions: fix the other
candidates' noise; r wins iff its noise exceeds z* = max_{j≠r}(q_j + Z_j) − q_r,
which moves by at most Δ between neighbours when all scores move in the same
direction (2Δ otherwise), and every noise here has a survival function whose
logarithm is (1/scale)-Lipschitz.

**Exact sampling.** The exponential mechanism and permute-and-flip are sampled
exactly, with no floating point in any random decision:

1. Scores are quantised down to a grid whose step ``g`` is a power of two
   about 2^-20 of Δ (chosen from Δ and ε only): s_r = floor(q_r / g). Then
   |s_r(D) − s_r(D')| <= ceil(Δ/g) (+1 grid step we add to cover the float
   rounding of products near underflow), so the integer scores have sensitivity
   Δ' = ceil(Δ/g) + 1 -- Δ inflated by about 2^-20 of itself.
2. Each score is raised to at least (best − D) for a fixed D with
   ε D / (2Δ') ≈ 64; this is a max of two sensitivity-Δ' functions, so still
   sensitivity Δ', and it changes only candidates already e^-64 times less
   likely than the best. The gaps d_r = s* − s_r are then exact integers below
   2^53 (the difference of two integer-valued floats below 2^53 is exact).
3. The rate ε/(2Δ') is rounded *down* to N / 2^56 (a smaller ε: more private),
   so exp(−ε d_r/(2Δ')) becomes exp(−N d_r / 2^56), drawn exactly by
   :func:`~dpframe.noise.discrete.sample_bernoulli_exp` (Canonne, Kamath &
   Steinke 2020, Algorithm 1).

Scores computed exactly (Fractions, e.g. by :mod:`dpframe.queries.agg`) are quantised exactly in step 1,
never through floats: a float rounds a score of 2^80 to a multiple of 2^28, so a change of 1 at a
rounding boundary would become a change of 2^28 -- far beyond Δ.

The exponential mechanism is then rejection sampling: propose r uniformly
(exact :func:`~dpframe.noise.random.uniform_below`), accept with probability
exp(−N d_r/2^56); the first accepted proposal has exactly P(r) ∝ exp(−N d_r/2^56).
Proposals are made in vectorised batches. Permute-and-flip draws one such
Bernoulli per candidate at once and returns a uniformly random accepted
candidate: because the coins are independent of the random order, the first
accepted candidate in a uniformly random order is uniform over the accepted
set, which is never empty (the best candidate has d = 0).

Report-noisy-max with Laplace noise uses floating-point noise from the secure
source; only the argmax is released, which removes the low-order-bit leaks of
textbook float Laplace releases (Mironov 2012) but is not exact: prefer
permute-and-flip, which is exact and more accurate.

For very small ε (below about 6e-5) the grid is coarsened down to 2^-8 of Δ to
keep N precise; below about ε = 2^-46 the rate rounds to 0 and the choice
becomes uniform (still private, no longer useful).

Running time depends on the scores (rejection rounds), which a timing observer
could see; dpframe does not defend against timing side channels.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpframe.accounting.costs import exact
from dpframe.noise.discrete import sample_bernoulli_exp
from dpframe.noise.random import RandomSource, _buffered, current_source, uniform_below

__all__ = [
    "MECHANISMS",
    "Deficits",
    "exponential_mechanism",
    "permute_and_flip",
    "report_noisy_max",
    "top_k",
]

SelectionMechanism = Literal["permute_and_flip", "exponential", "report_noisy_max"]
# Validated float scores, or scores computed exactly (quantised exactly: module docstring).
Scores: TypeAlias = "NDArray[np.float64] | Sequence[Fraction | int]"
MECHANISMS: tuple[str, ...] = ("permute_and_flip", "exponential", "report_noisy_max")
_NOISES = ("laplace", "gumbel", "exponential")

# The rate is N / 2**_RATE_BITS; gaps are clamped so that N * gap <= 2**62.
_RATE_BITS = 56
_RATE_DEN = 1 << _RATE_BITS
_PRODUCT_LIMIT = 1 << 62
_MAX_GAP = 1 << 53
# Grid step about 2**-_GRID_BITS of the sensitivity (fewer bits for tiny epsilon).
_GRID_BITS, _MIN_GRID_BITS = 20, 8
# Scaled scores are clipped here (1-Lipschitz, so the sensitivity is unchanged) to stay finite.
_SCORE_CLIP = 2.0**1000
_SMALLEST_SENSITIVITY, _LARGEST_SENSITIVITY = Fraction(2) ** -900, Fraction(2) ** 900
# Proposals per batch of the exponential mechanism's rejection sampler.
_MAX_BATCH = 1 << 16


def check_sensitivity(value: object) -> Fraction:
    """Validate a sensitivity: a finite positive number; returned exactly.

    >>> check_sensitivity(0.5)
    Fraction(1, 2)
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"sensitivity must be a positive number, got {type(value).__name__}")
    if not math.isfinite(float(value)):
        raise ValueError(f"sensitivity must be finite, got {value!r}")
    frac = Fraction(value) if isinstance(value, (Fraction, numbers.Integral)) else Fraction(float(value))
    if frac <= 0:
        raise ValueError(f"sensitivity must be > 0, got {value!r}")
    if not _SMALLEST_SENSITIVITY <= frac <= _LARGEST_SENSITIVITY:
        raise ValueError(f"sensitivity {value!r} is outside the supported range 2^-900 .. 2^900; rescale the scores")
    return frac


def check_mechanism(mechanism: object) -> SelectionMechanism:
    """Validate a selection mechanism's name.

    >>> check_mechanism("exponential")
    'exponential'
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(map(repr, MECHANISMS))}, got {mechanism!r}")
    return mechanism  # type: ignore[return-value]


def as_scores(scores: ArrayLike, *, strict: bool) -> NDArray[np.float64]:
    """Scores as a 1-d float array.

    ``strict`` (scores given by the caller, not computed from private data):
    NaN and +inf are refused. Otherwise (scores computed from private data,
    where an error could reveal a record) NaN becomes -inf, the lowest score,
    and +inf is kept (it is clipped like any huge score).

    >>> as_scores([1, float("nan")], strict=False).tolist()
    [1.0, -inf]
    """
    try:
        array = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("scores must be a sequence of numbers") from None
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"scores must be a non-empty one-dimensional sequence, got shape {array.shape}")
    nan = np.isnan(array)
    if strict:
        if nan.any():
            raise ValueError("scores contain NaN; give every candidate a number (use -inf for 'never choose')")
        if np.isposinf(array).any():
            raise ValueError("scores contain +inf; scores must be finite or -inf")
        return array
    return np.where(nan, -np.inf, array) if nan.any() else array


def _floor_log2(value: Fraction) -> int:
    exponent = value.numerator.bit_length() - value.denominator.bit_length()
    return exponent if Fraction(2) ** exponent <= value else exponent - 1


@dataclass(frozen=True)
class Deficits:
    """Exact integer gaps of each candidate's score below the best, and the exact rate.

    Candidate r has weight exp(-rate * gaps[r] / 2**56); the best has gap 0.

    >>> d = Deficits.of(np.array([3.0, 5.0, 4.0]), Fraction(1), Fraction(1), monotonic=False)
    >>> d.gaps.tolist() == [2 * d.unit, 0, d.unit], round(d.rate * d.unit / 2**56, 4)
    (True, 0.5)
    """

    gaps: NDArray[np.int64]
    rate: int
    unit: int  # grid steps per unit of score (1/g), for display and tests

    @classmethod
    def of(cls, scores: Scores, sensitivity: Fraction, epsilon: Fraction, monotonic: bool) -> Deficits:
        """Quantise scores (already validated, or exact) on the data-independent grid and clamp their gaps.

        >>> Deficits.of([Fraction(2**80), Fraction(2**80 - 1)], Fraction(1), Fraction(1), False).gaps.tolist()
        [0, 1048576]
        """
        bits = max(_MIN_GRID_BITS, min(_GRID_BITS, 34 + _floor_log2(epsilon)))
        step = Fraction(2) ** (_floor_log2(sensitivity) - bits)
        sensitivity_steps = math.ceil(sensitivity / step) + 1
        rate = epsilon / (sensitivity_steps if monotonic else 2 * sensitivity_steps)
        numerator = min(math.floor(rate * _RATE_DEN), _PRODUCT_LIMIT)
        max_gap = min(_MAX_GAP, _PRODUCT_LIMIT // numerator) if numerator else 0
        if isinstance(scores, np.ndarray):
            with np.errstate(over="ignore", invalid="ignore"):
                scaled = np.floor(np.clip(scores * float(1 / step), -_SCORE_CLIP, _SCORE_CLIP))
            gaps = np.minimum(scaled.max() - scaled, float(max_gap)).astype(np.int64)
        else:
            steps = [math.floor(score / step) for score in scores]
            best = max(steps)
            gaps = np.array([min(best - s, max_gap) for s in steps], dtype=np.int64)
        unit = int(1 / step) if step <= 1 else 0
        return cls(gaps, numerator, unit)

    def accept(self, positions: NDArray[np.int64], source: RandomSource) -> NDArray[np.bool_]:
        """Exact Bernoulli(exp(-rate * gap / 2**56)) for the candidates at ``positions``."""
        return sample_bernoulli_exp(self.rate * self.gaps[positions], _RATE_DEN, source)

    def approximate_acceptance(self) -> float:
        """Mean acceptance probability of a uniform proposal (floats: only sizes batches)."""
        return float(np.mean(np.exp(-(self.rate / _RATE_DEN) * self.gaps.astype(np.float64))))


def sample_exponential(deficits: Deficits, size: int, source: RandomSource) -> NDArray[np.int64]:
    """``size`` independent exact draws of the exponential mechanism (rejection sampling)."""
    m = deficits.gaps.size
    if m == 1:
        return np.zeros(size, dtype=np.int64)
    out = np.empty(size, dtype=np.int64)
    filled = 0
    acceptance = max(deficits.approximate_acceptance(), 1.0 / m)
    while filled < size:
        batch = min(_MAX_BATCH, int(1.5 * (size - filled) / acceptance) + 16)
        proposals = uniform_below(m, source, size=batch)
        # Proposals are i.i.d., so the accepted ones, in order, are i.i.d. with P(r) ∝ exp(-rate gap_r).
        accepted = proposals[deficits.accept(proposals, source)][: size - filled]
        out[filled : filled + accepted.size] = accepted
        filled += accepted.size
    return out


def sample_permute_and_flip(deficits: Deficits, size: int, source: RandomSource) -> NDArray[np.int64]:
    """``size`` independent exact draws of permute-and-flip."""
    m = deficits.gaps.size
    if m == 1:
        return np.zeros(size, dtype=np.int64)
    positions = np.tile(np.arange(m, dtype=np.int64), size)
    coins = deficits.accept(positions, source).reshape(size, m)
    # Never empty: the best candidate has gap 0 and is always accepted. The
    # first accepted candidate in a uniformly random order is uniform over the
    # accepted ones, the order being independent of the coins.
    pick = uniform_below(coins.sum(axis=1), source)
    rank = np.cumsum(coins, axis=1) - 1
    chosen: NDArray[np.int64] = np.argmax(coins & (rank == pick[:, None]), axis=1).astype(np.int64)
    return chosen


def _exponential_noise(size: int, source: RandomSource) -> NDArray[np.float64]:
    """Exp(1) draws, -log U with U = (53 random bits + 1/2) / 2^53 (floating point)."""
    uniform = ((source.words(size) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    noise: NDArray[np.float64] = -np.log(uniform)
    return noise


def sample_laplace_noisy_max(
    scores: NDArray[np.float64],
    sensitivity: Fraction,
    epsilon: Fraction,
    monotonic: bool,
    size: int,
    source: RandomSource,
) -> NDArray[np.int64]:
    """``size`` independent draws of report-noisy-max with (floating-point) Laplace noise."""
    scale = float(sensitivity / epsilon) * (1 if monotonic else 2)
    values = np.clip(scores, -1e300, 1e300)
    # Raising the lowest scores to (best - 200 scale) keeps the sensitivity and
    # changes only candidates with a winning chance below e^-100.
    values = np.maximum(values, values.max() - 200 * scale)
    n = size * values.size
    noise = (_exponential_noise(n, source) - _exponential_noise(n, source)).reshape(size, values.size)
    chosen: NDArray[np.int64] = np.argmax(values + scale * noise, axis=1).astype(np.int64)
    return chosen


def choose(
    scores: Scores,
    sensitivity: Fraction,
    epsilon: Fraction,
    mechanism: SelectionMechanism,
    monotonic: bool,
    source: RandomSource | None = None,
    size: int = 1,
) -> NDArray[np.int64]:
    """``size`` independent selections from validated (or exact) scores (the shared core of every selection)."""
    src = _buffered(current_source() if source is None else source)
    if mechanism == "report_noisy_max":
        if not isinstance(scores, np.ndarray):
            # Floating-point noise anyway: the gaps to the best (argmax is shift-invariant) as floats, clipped
            # as the float scores are (1-Lipschitz) so that they convert.
            best = max(scores)
            lowest = -Fraction(_SCORE_CLIP)
            scores = np.array([float(max(score - best, lowest)) for score in scores], dtype=np.float64)
        return sample_laplace_noisy_max(scores, sensitivity, epsilon, monotonic, size, src)
    deficits = Deficits.of(scores, sensitivity, epsilon, monotonic)
    if mechanism == "exponential":
        return sample_exponential(deficits, size, src)
    return sample_permute_and_flip(deficits, size, src)


def _arguments(sensitivity: object, epsilon: object) -> tuple[Fraction, Fraction]:
    return check_sensitivity(sensitivity), exact(epsilon, "epsilon")


def exponential_mechanism(
    scores: ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    monotonic: bool = False,
    source: RandomSource | None = None,
) -> int:
    """The position r of the selected candidate, with P(r) ∝ exp(ε q_r / (2Δ)), sampled exactly.

    McSherry & Talwar (2007); Dwork & Roth (2014), Thm 3.10: ε-DP when every
    score has sensitivity Δ. With ``monotonic=True`` (all scores move in the
    same direction when a unit is added, e.g. counts) the exponent is
    ε q_r / Δ. Scores are quantised on a grid of about 2^-20 Δ (the
    sensitivity is inflated by that step) and sampled by exact rejection; see
    the module documentation. -inf scores are the lowest possible, not
    impossible: they are raised to e^-64 of the best's probability.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     exponential_mechanism([10, 50, 12], sensitivity=1, epsilon=1.0)
    1
    """
    sens, eps = _arguments(sensitivity, epsilon)
    return int(choose(as_scores(scores, strict=True), sens, eps, "exponential", bool(monotonic), source)[0])


def permute_and_flip(
    scores: ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    monotonic: bool = False,
    source: RandomSource | None = None,
) -> int:
    """The position of the candidate selected by permute-and-flip (McKenna & Sheldon 2020), exactly.

    Visit the candidates in a uniformly random order and stop at r with
    probability exp(ε (q_r − q*) / (2Δ)) (q* the best score, so the best
    always stops it). ε-DP (McKenna & Sheldon 2020; it equals report-noisy-max
    with Exponential(2Δ/ε) noise, Ding et al. 2021), and its expected score is
    never worse than the exponential mechanism's. ``monotonic=True``: stop
    with probability exp(ε (q_r − q*) / Δ). Sampled exactly: every coin is
    drawn at once and a uniformly random accepted candidate is returned.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     permute_and_flip([10, 50, 12], sensitivity=1, epsilon=1.0)
    1
    """
    sens, eps = _arguments(sensitivity, epsilon)
    return int(choose(as_scores(scores, strict=True), sens, eps, "permute_and_flip", bool(monotonic), source)[0])


def report_noisy_max(
    scores: ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    noise: str = "laplace",
    monotonic: bool = False,
    source: RandomSource | None = None,
) -> int:
    """The position of the largest noisy score: report-noisy-max.

    * ``noise="laplace"``: Laplace(2Δ/ε) noise, ε-DP (Dwork & Roth, Claim 3.9
      proves Laplace(1/ε) for counting queries, which are monotone with Δ = 1;
      for general scores the threshold each candidate must beat moves by up
      to 2Δ, hence 2Δ/ε; ``monotonic=True`` uses Δ/ε). The noise is
      floating point from the secure source, and only the argmax is released;
      the choice is not exact in the sense of the other two.
    * ``noise="gumbel"``: Gumbel(2Δ/ε) noise, which is exactly the exponential
      mechanism, so :func:`exponential_mechanism` is run (exactly).
    * ``noise="exponential"``: Exponential(2Δ/ε) noise, which is exactly
      permute-and-flip (Ding et al. 2021), so :func:`permute_and_flip`
      is run (exactly).

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     report_noisy_max([10, 50, 12], sensitivity=1, epsilon=1.0)
    1
    """
    if noise not in _NOISES:
        raise ValueError(f"noise must be one of {', '.join(map(repr, _NOISES))}, got {noise!r}")
    sens, eps = _arguments(sensitivity, epsilon)
    values = as_scores(scores, strict=True)
    mechanism: SelectionMechanism = {
        "laplace": "report_noisy_max", "gumbel": "exponential", "exponential": "permute_and_flip"
    }[noise]  # type: ignore[assignment]
    return int(choose(values, sens, eps, mechanism, bool(monotonic), source)[0])


def check_k(k: object, candidates: int | None = None) -> int:
    """Validate k: an integer >= 1 (and at most the number of candidates, when known).

    >>> check_k(2, 5)
    2
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if candidates is not None and k > candidates:
        raise ValueError(f"k={k} exceeds the number of candidates ({candidates})")
    return int(k)


def peel(
    scores: NDArray[np.float64],
    k: int,
    sensitivity: Fraction,
    epsilon: Fraction,
    mechanism: SelectionMechanism,
    monotonic: bool,
    source: RandomSource | None = None,
) -> list[int]:
    """k rounds of ``mechanism``, each with ε/k, removing each round's winner (validated inputs)."""
    share = epsilon / k
    remaining = np.arange(scores.size)
    chosen: list[int] = []
    for _ in range(k):
        position = int(choose(scores[remaining], sensitivity, share, mechanism, monotonic, source)[0])
        chosen.append(int(remaining[position]))
        remaining = np.delete(remaining, position)
    return chosen


def top_k(
    scores: ArrayLike,
    k: int,
    sensitivity: float,
    epsilon: float,
    *,
    mechanism: str = "permute_and_flip",
    monotonic: bool = False,
    source: RandomSource | None = None,
) -> list[int]:
    """The positions of k selected candidates, best first, by peeling.

    k rounds of ``mechanism`` (permute-and-flip by default), each with ε/k on
    the candidates not chosen yet: ε-DP by sequential composition, which holds
    for adaptively chosen rounds (Dwork & Roth, Thm 3.16). Peeling the
    exponential mechanism k times is the same as one-shot Gumbel top-k
    (Durfee & Rogers 2019); peeling permute-and-flip is at least as accurate
    round by round, so it is the default.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     top_k([10, 50, 12, 90], 2, sensitivity=1, epsilon=2.0)
    [3, 1]
    """
    sens, eps = _arguments(sensitivity, epsilon)
    values = as_scores(scores, strict=True)
    count = check_k(k, values.size)
    return peel(values, count, sens, eps, check_mechanism(mechanism), bool(monotonic), source)


def exact_probabilities(scores: Sequence[float], sensitivity: float, epsilon: float, mechanism: str) -> NDArray[np.float64]:
    """Selection probabilities of the ideal (unquantised) mechanism, for tests and documentation.

    The exponential mechanism's are a softmax. Permute-and-flip's follow from
    its definition: with p_r = exp(ε (q_r − q*)/(2Δ)) and the order uniformly
    random, P(r) = p_r · E[1/(1 + number of other accepted candidates)], which
    is computed exactly by the distribution of that number (a convolution of
    Bernoullis), O(m^2).

    >>> exact_probabilities([0.0, 0.0], 1.0, 1.0, "permute_and_flip").tolist()
    [0.5, 0.5]
    """
    q = np.asarray(scores, dtype=np.float64)
    if mechanism == "exponential":
        w = np.exp(epsilon * (q - q.max()) / (2 * sensitivity))
        probabilities: NDArray[np.float64] = w / w.sum()
        return probabilities
    if mechanism != "permute_and_flip":
        raise ValueError("exact probabilities are known for 'exponential' and 'permute_and_flip'")
    p = np.exp(epsilon * (q - q.max()) / (2 * sensitivity))
    out = np.empty(q.size)
    for r in range(q.size):
        # Distribution of the number of accepted candidates among the others.
        counts = np.array([1.0])
        for j in range(q.size):
            if j != r:
                counts = np.append(counts * (1 - p[j]), 0.0) + np.append(0.0, counts * p[j])
        out[r] = p[r] * float(np.sum(counts / np.arange(1, counts.size + 1)))
    return out
