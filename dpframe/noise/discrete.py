"""Exact discrete Laplace and discrete Gaussian samplers, vectorised.

The algorithms are those of Canonne, Kamath & Steinke (2020), "The Discrete
Gaussian for Differential Privacy" (CKS20):

* Algorithm 1 -- Bernoulli(exp(-gamma)) for rational gamma;
* Algorithm 2 -- the discrete Laplace ``DLap(t/s)``;
* Algorithm 3 -- the discrete Gaussian ``N_Z(0, sigma^2)``, by rejection from
  ``DLap(t)`` with ``t = floor(sigma) + 1``.

Why exact: the usual float samplers (``numpy.random.laplace`` and friends)
have gaps and biases in their low-order bits that can leak the un-noised
value (Mironov 2012).  Here every sampling decision is an exact comparison
of integers -- "is a uniform integer below ``den`` smaller than ``num``?" --
so the output distribution is exactly the stated one.  Floats are used only
to guess how many candidates to generate per batch, which changes how much
randomness is wasted, never which values come out.

Why vectorised: a per-sample Python loop runs at some 10k-20k samples/s.  The
samplers here run every step of the algorithms for a whole batch of pending
candidates at once: each loop of the algorithms becomes a few numpy passes
over a shrinking array of still-undecided entries, and random words (the
expensive resource, see :mod:`dpframe.noise.random`) are packed tightly.

Integer ranges and the exact slow path: the fast path works in int64.
Before each step that multiplies numbers together, the inputs are compared
against bounds computed from the parameters alone (``_FAST_PATH_LIMIT`` =
2**62), so that no intermediate can overflow.  Entries whose own random
intermediate is out of range (e.g. a Laplace geometric count ``V`` so large
that ``t * V`` overflows, or a Gaussian candidate ``|Y|`` far in the tail) are
finished individually by a scalar implementation of the same algorithm on
Python ints.  Both paths sample exactly the same conditional distribution,
so the result is exact for every input; the routing depends only on the
parameters and on the entry's own random draws.  When the parameters
themselves are too large for int64 -- a Laplace numerator/denominator above
2**62, or a Gaussian with ``b * sigma**2`` beyond about 2**59 (``b`` being
the denominator of ``sigma2``), e.g. ``sigma`` above ~2**29 for an integer
``sigma2`` -- the whole batch takes the slow path: still exact, but
roughly 100 times slower.  Give ``sigma2`` a small denominator (a power of two
such as 2**-8 granularity is plenty) to stay on the fast path.

Output range: samples are returned as int64.  Scales are therefore limited
to ``scale <= 2**56`` (Laplace) and ``sigma2 <= 2**112`` (Gaussian), where
the chance of a sample not fitting in int64 is below ``exp(-128)``; should it
happen anyway an :class:`OverflowError` is raised rather than a wrong value
returned.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from fractions import Fraction
from math import isqrt

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpframe.noise.random import (
    RandomSource,
    _as_int64_array,
    _uniform_below_scalar,
    current_source,
    random_bits,
    uniform_below,
)

__all__ = [
    "sample_bernoulli_exp",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]

_Int64Array = NDArray[np.int64]
_BoolArray = NDArray[np.bool_]

#: Largest value any int64 intermediate of the fast path may take.  Also a
#: test hook: lowering it (e.g. with ``monkeypatch.setattr``) routes more
#: entries, or whole batches, to the exact Python-int slow path.
_FAST_PATH_LIMIT = 2**62

#: Candidates generated per numpy batch: big enough to amortise per-call
#: overhead, small enough that the working arrays stay in cache.
_BATCH = 1 << 16

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_LAPLACE_SCALE = Fraction(2**56)
_MAX_GAUSSIAN_SIGMA2 = Fraction(2**112)


# ---------------------------------------------------------------------------
# Vectorised building blocks (int64 fast path)
# ---------------------------------------------------------------------------


def _bern_ratio(num: _Int64Array, den: _Int64Array | int, source: RandomSource) -> _BoolArray:
    """Bernoulli(num / den) elementwise, exactly: ``uniform_below(den) < num``.

    Requires ``0 <= num <= den <= 2**63 - 1``; ``den`` may be one int.
    """
    if isinstance(den, int):
        draw = _uniform_below_scalar(den, num.size, source)
    else:
        draw = uniform_below(den, source)
    return draw < num


def _bern_recip(k: int, n: int, source: RandomSource) -> _BoolArray:
    """``n`` draws of Bernoulli(1 / k), ``k >= 2``."""
    if k == 2:
        return random_bits(n, source)  # one bit each
    return _uniform_below_scalar(k, n, source) == 0


def _bern_exp_one(n: int, source: RandomSource) -> _BoolArray:
    """``n`` draws of Bernoulli(exp(-1)) (CKS Algorithm 1 with gamma = 1).

    Algorithm 1 draws A_K ~ Bernoulli(gamma / K) for K = 1, 2, ... until the
    first failure and returns "K is odd".  With gamma = 1, A_1 always
    succeeds, and every pending entry shares the same K, so each round is a
    single Bernoulli(1/K) draw for the entries still going.
    """
    # K = 2: a fair coin; failing here means K = 2 is even, i.e. False.
    out = random_bits(n, source)
    live = np.flatnonzero(out)
    k = 3
    while live.size:
        ok = _bern_recip(k, live.size, source)
        if k % 2 == 0:
            out[live[np.flatnonzero(~ok)]] = False
        live = live[np.flatnonzero(ok)]
        k += 1
    return out


def _bern_exp_factored(
    factors: Sequence[tuple[_Int64Array, _Int64Array | int]], n: int, source: RandomSource
) -> _BoolArray:
    """Bernoulli(exp(-gamma)) with ``gamma = prod(num_i / den_i)`` in [0, 1].

    CKS Algorithm 1, vectorised: all pending entries share the same K.  The
    step ``A_K ~ Bernoulli(gamma / K)`` is drawn as the conjunction of
    independent Bernoulli(1/K) and Bernoulli(num_i / den_i) -- the product
    of their probabilities is exactly gamma / K -- which never needs the
    product ``K * den`` and so cannot overflow however large K gets.  Cheap
    factors are drawn first and later factors only for the survivors.
    """
    out = np.ones(n, dtype=np.bool_)  # stopping at an odd K means True
    live: NDArray[np.intp] | None = None  # None: all entries (avoids a gather)
    k = 1
    while True:
        if live is None:
            cand: NDArray[np.intp] | None = None
        else:
            ok = _bern_recip(k, live.size, source)
            if k % 2 == 0:
                out[live[np.flatnonzero(~ok)]] = False
            cand = live[np.flatnonzero(ok)]
        for num, den in factors:
            if cand is None:
                ok = _bern_ratio(num, den, source)
                cand = np.flatnonzero(ok)  # K = 1 failures stay True
                continue
            if cand.size == 0:
                break
            sub_den = den if isinstance(den, int) else den[cand]
            ok = _bern_ratio(num[cand], sub_den, source)
            if k % 2 == 0:
                out[cand[np.flatnonzero(~ok)]] = False
            cand = cand[np.flatnonzero(ok)]
        if cand is None:  # no factors: gamma = 1
            cand = np.arange(n)
        live = cand
        if live.size == 0:
            return out
        k += 1


def _bern_exp_fraction(num: _Int64Array, den: _Int64Array | int, source: RandomSource) -> _BoolArray:
    """Bernoulli(exp(-num/den)) for 1-d ``num >= 0`` and ``den >= 1`` (array or int).

    exp(-gamma) = exp(-1)**floor(gamma) * exp(-(gamma - floor(gamma))), so
    the draw is the AND of floor(gamma) Bernoulli(exp(-1)) and one
    Algorithm-1 draw for the fractional part.  Round j of the integer part
    draws the j-th exp(-1) trial for the entries with floor(gamma) > j that
    have not failed yet; about 63% fail each round, so the loop ends after a
    few rounds even when floor(gamma) is huge.
    """
    whole = num // den
    frac = num - whole * den
    out = np.ones(num.size, dtype=np.bool_)
    live = np.flatnonzero(whole > 0)
    j = 0
    while live.size:
        ok = _bern_exp_one(live.size, source)
        out[live[np.flatnonzero(~ok)]] = False
        live = live[np.flatnonzero(ok)]
        j += 1
        live = live[np.flatnonzero(whole[live] > j)]
    # Fractional part (frac = 0 means exp(0) = 1: nothing to draw).
    idx = np.flatnonzero(out & (frac > 0))
    if idx.size:
        sub_den = den if isinstance(den, int) else den[idx]
        out[idx] = _bern_exp_factored([(frac[idx], sub_den)], idx.size, source)
    return out


def _geometric_exp_one(n: int, source: RandomSource) -> _Int64Array:
    """Number of Bernoulli(exp(-1)) successes before the first failure.

    This is CKS Algorithm 2's ``V``: P[V >= v] = exp(-v).  Each round the
    still-succeeding entries (about 37%) draw one more trial.
    """
    v = np.zeros(n, dtype=np.int64)
    live = np.flatnonzero(_bern_exp_one(n, source))
    while live.size:
        v[live] += 1
        live = live[np.flatnonzero(_bern_exp_one(live.size, source))]
    return v


def _dlap_attempts(t: int, s: int, n: int, source: RandomSource) -> _Int64Array:
    """Run ``n`` independent attempts of CKS Algorithm 2 for DLap(t/s).

    Returns the accepted samples, in attempt order (between 0 and n of them).
    Requires ``1 <= t, s <= _FAST_PATH_LIMIT``.
    """
    limit = _FAST_PATH_LIMIT
    # Steps 1-2: U uniform in {0..t-1}, kept with probability exp(-U/t).
    if t == 1:
        u = np.zeros(n, dtype=np.int64)  # U = 0 and exp(0) = 1: no draws
    else:
        u = _uniform_below_scalar(t, n, source)
        u = u[np.flatnonzero(_bern_exp_factored([(u, t)], n, source))]
    m = u.size
    # Steps 3-4: V ~ geometric, P[V >= v] = exp(-v).
    v = _geometric_exp_one(m, source)
    # Step 5-6: X = U + t*V and Y = floor(X / s).  U + t*V <= limit whenever
    # V <= vmax; the (astronomically rare for small t) larger V are finished
    # with Python ints.  The test depends only on t and the entry's own V.
    vmax = (limit - (t - 1)) // t
    big = np.flatnonzero(v > vmax)
    if big.size:
        v_fast = v.copy()
        v_fast[big] = 0
    else:
        v_fast = v
    y = u + v_fast * t
    if s != 1:
        y //= s
    for i in big.tolist():
        y_big = (int(u[i]) + t * int(v[i])) // s
        if y_big > _INT64_MAX:
            raise OverflowError("discrete Laplace sample does not fit in int64")
        y[i] = y_big
    # Steps 7-9: random sign; reject (negative, 0) so that 0 is not counted
    # twice.
    neg = random_bits(m, source)
    np.negative(y, out=y, where=neg)
    keep = np.flatnonzero(~(neg & (y == 0)))
    return y[keep]


def _gauss_offset(a: int, b: int) -> tuple[int, int]:
    """Choose the offset ``c = p/q`` (and so the proposal scale t = sigma2/c).

    CKS Algorithm 3 is correct for any proposal scale t > 0: the DLap(t)
    weight exp(-|y|/t) times the acceptance probability
    exp(-(|y| - sigma2/t)**2 / (2 sigma2)) equals
    exp(-y**2 / (2 sigma2)) * exp(-sigma2 / (2 t**2)), proportional to the
    target.  CKS take t = floor(sigma) + 1; then the offset sigma2/t has the
    denominator of sigma2 times t, and gamma's numerator n1**2 (n1 = |Y| b t - a)
    overflows int64 already for sigma ~ 2**15, or for sigma ~ 1 when sigma2
    carries 40 significant bits.  Instead we fix the offset c to a simple
    fraction p/q close to sigma and set t = sigma2 / c (still close to sigma,
    where the acceptance rate is best, about 0.6-0.76).  Then

        gamma = (|Y| - p/q)**2 / (2 a/b) = (q |Y| - p)**2 * b / (2 q**2 a),

    whose parts stay near ``q**2 * a`` -- small.  q is a power of two with
    q * sigma >= 16 (so c is within 1/16 of sigma) when that keeps
    ``q**2 * a <= 2**48``; p = floor(q * sigma) + 1.
    """
    q = 1
    while q * q * a < 256 * b:  # want q * sigma >= 16
        q *= 2
    while q > 1 and q * q * a > 2**48:
        q //= 2
    p = isqrt(a * q * q // b) + 1  # floor(q sigma) + 1 = isqrt(floor(q^2 a / b)) + 1
    return p, q


def _gauss_accept(
    y: _Int64Array, a: int, b: int, p: int, q: int, ymax: int, source: RandomSource
) -> _BoolArray:
    """Algorithm 3's test for offset p/q: Bernoulli(exp(-(q|Y| - p)**2 b / (2 q**2 a))).

    Entries with ``|Y| <= ymax`` (``ymax`` is derived from the parameters so
    that the numerator fits in int64) are decided in one vectorised pass;
    the rare tail entries beyond it use the same formula on Python ints.
    """
    absy = np.abs(y)
    den = 2 * q * q * a
    slow = np.flatnonzero(absy > ymax)
    if slow.size == 0:
        return _bern_exp_fraction((absy * q - p) ** 2 * b, den, source)
    out = np.empty(y.size, dtype=np.bool_)
    fast = np.flatnonzero(absy <= ymax)
    out[fast] = _bern_exp_fraction((absy[fast] * q - p) ** 2 * b, den, source)
    for i in slow.tolist():
        out[i] = _bern_exp_int((q * int(absy[i]) - p) ** 2 * b, den, source)
    return out


# ---------------------------------------------------------------------------
# Exact scalar slow path (Python ints, arbitrary size)
# ---------------------------------------------------------------------------


def _uniform_below_int(high: int, source: RandomSource) -> int:
    """One exact uniform integer in [0, high) for a Python int ``high >= 1``."""
    bits = (high - 1).bit_length()
    if bits == 0:
        return 0
    nwords = -(-bits // 64)
    mask = (1 << bits) - 1
    while True:
        value = int.from_bytes(source.words(nwords).tobytes(), "little") & mask
        if value < high:
            return value


def _bern_exp_unit_int(num: int, den: int, source: RandomSource) -> bool:
    """CKS Algorithm 1 literally, for gamma = num/den in [0, 1]."""
    k = 1
    while _uniform_below_int(k * den, source) < num:  # A ~ Bernoulli(gamma/K)
        k += 1
    return k % 2 == 1


def _bern_exp_int(num: int, den: int, source: RandomSource) -> bool:
    """Bernoulli(exp(-num/den)) for any Python ints num >= 0, den >= 1."""
    whole, frac = divmod(num, den)
    for _ in range(whole):  # exits at the first failure, almost surely soon
        if not _bern_exp_unit_int(1, 1, source):
            return False
    return _bern_exp_unit_int(frac, den, source)


def _dlap_int(t: int, s: int, source: RandomSource) -> int:
    """One DLap(t/s) sample by CKS Algorithm 2 on Python ints."""
    while True:
        u = _uniform_below_int(t, source)
        if not _bern_exp_int(u, t, source):
            continue
        v = 0
        while _bern_exp_int(1, 1, source):
            v += 1
        y = (u + t * v) // s
        negative = _uniform_below_int(2, source) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _dgauss_int(a: int, b: int, t: int, source: RandomSource) -> int:
    """One N_Z(0, a/b) sample by CKS Algorithm 3 on Python ints."""
    while True:
        y = _dlap_int(t, 1, source)
        if _bern_exp_int((abs(y) * t * b - a) ** 2, 2 * a * t * t * b, source):
            return y


def _fill_slowly(draw: Callable[[], int], size: int) -> _Int64Array:
    out = np.empty(size, dtype=np.int64)
    for i in range(size):
        value = draw()
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise OverflowError("sample does not fit in int64")
        out[i] = value
    return out


# ---------------------------------------------------------------------------
# Public samplers
# ---------------------------------------------------------------------------


def _collect(batch: Callable[[int], _Int64Array], size: int, rate: float) -> _Int64Array:
    """Concatenate accepted samples from batches of attempts until ``size``.

    Attempts are i.i.d. and acceptance is decided per attempt, so the
    accepted samples, taken in attempt order, are i.i.d. from the target
    distribution whatever the batch sizes; surplus samples are discarded.
    ``rate`` (a float guess of the acceptance rate, updated as we go) only
    sizes the batches.
    """
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        need = size - filled
        n = min(_BATCH, int(need / rate * 1.1) + 16)
        got = batch(n)
        take = min(got.size, need)
        out[filled : filled + take] = got[:take]
        filled += take
        rate = max(0.5 * rate + 0.5 * got.size / n, 0.01)
    return out


def _as_fraction(value: object, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, numbers.Rational):
        raise TypeError(
            f"{name} must be a fractions.Fraction or int (exact), got {type(value).__name__}; "
            "convert floats deliberately, e.g. Fraction(x).limit_denominator(2**20)"
        )
    frac = Fraction(value)
    if frac <= 0:
        raise ValueError(f"{name} must be positive, got {frac}")
    return frac


def _check_size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"size must be an int, got {type(size).__name__}")
    if size < 0:
        raise ValueError(f"size must be non-negative, got {size}")
    return int(size)


def sample_bernoulli_exp(
    num: ArrayLike, den: ArrayLike, source: RandomSource | None = None
) -> NDArray[np.bool_]:
    """Exact Bernoulli(exp(-num/den)) draws, elementwise.

    ``num`` (>= 0) and ``den`` (>= 1) are broadcast integer arrays (int64
    range).  CKS Algorithm 1: for gamma = num/den in [0, 1] draw
    A_K ~ Bernoulli(gamma/K) for K = 1, 2, ... until the first failure and
    return "K is odd"; for gamma > 1, exp(-gamma) is the product of
    floor(gamma) factors exp(-1) and one exp(-(gamma - floor(gamma))), so
    the result is the AND of that many independent draws (stopping at the
    first failure).  All decisions are integer comparisons.

    ``source`` defaults to :func:`dpframe.noise.random.current_source`.

    >>> import numpy as np
    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     x = sample_bernoulli_exp(np.array([0, 1, 5, 7]), np.array([3, 1, 2, 1]))
    >>> x.dtype, x.shape, bool(x[0])  # exp(-0) = 1
    (dtype('bool'), (4,), True)
    >>> with seeded_noise(0):
    ...     frac = sample_bernoulli_exp(np.full(100_000, 1), 2).mean()
    >>> round(float(frac), 2)  # exp(-1/2) = 0.6065...
    0.61
    """
    src = current_source() if source is None else source
    num_a, den_a = np.broadcast_arrays(_as_int64_array(num, "num"), _as_int64_array(den, "den"))
    shape = num_a.shape
    nums = num_a.reshape(-1)
    dens = den_a.reshape(-1)
    if nums.size and (int(nums.min()) < 0 or int(dens.min()) < 1):
        raise ValueError("need num >= 0 and den >= 1")
    out = _bern_exp_fraction(nums, dens, src)
    return out.reshape(shape)


def sample_discrete_laplace(
    scale: Fraction, size: int, source: RandomSource | None = None
) -> NDArray[np.int64]:
    """Exact samples with P[X = x] proportional to exp(-|x| / scale), x in Z.

    ``scale`` is a positive rational ``t/s`` (a :class:`~fractions.Fraction`
    or int; floats are refused because they are rarely the number intended),
    at most 2**56.  CKS Algorithm 2: U uniform in {0..t-1} kept with
    probability exp(-U/t); V geometric with P[V >= v] = exp(-v);
    Y = floor((U + t V) / s); a random sign, rejecting "-0".  The variance is
    ``2p / (1 - p)**2`` with ``p = exp(-1/scale)``.

    Vectorised over batches of attempts; exact for every input (see the
    module docstring for the int64 fast path and the exact slow path, taken
    as a whole only when t or s exceeds 2**62).  ``source`` defaults to
    :func:`dpframe.noise.random.current_source`.

    >>> from fractions import Fraction
    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     sample_discrete_laplace(Fraction(3, 2), 8).tolist()
    [0, -2, 2, 1, -1, -4, 0, -2]
    >>> x = sample_discrete_laplace(Fraction(10), 1000)  # secure source
    >>> x.shape, x.dtype
    ((1000,), dtype('int64'))
    """
    frac = _as_fraction(scale, "scale")
    if frac > _MAX_LAPLACE_SCALE:
        raise ValueError(f"scale must be at most 2**56 so samples fit in int64, got {frac}")
    n = _check_size(size)
    src = current_source() if source is None else source
    t, s = frac.numerator, frac.denominator
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if t > _FAST_PATH_LIMIT or s > _FAST_PATH_LIMIT:
        return _fill_slowly(lambda: _dlap_int(t, s, src), n)
    return _collect(lambda k: _dlap_attempts(t, s, k, src), n, 0.5)


def sample_discrete_gaussian(
    sigma2: Fraction, size: int, source: RandomSource | None = None
) -> NDArray[np.int64]:
    """Exact samples with P[X = x] proportional to exp(-x**2 / (2 sigma2)).

    ``sigma2`` (the variance parameter sigma**2, not sigma) is a positive
    rational (:class:`~fractions.Fraction` or int), at most 2**112.  CKS
    Algorithm 3: with t = floor(sigma) + 1, draw Y ~ DLap(t) and accept it
    with probability exp(-(|Y| - sigma2/t)**2 / (2 sigma2)).  The variance is
    slightly below sigma2 (it tends to sigma2 as sigma grows).

    Fast when ``b * sigma2`` is below about 2**59, ``b`` being the
    denominator of ``sigma2`` in lowest terms: prefer a power-of-two
    denominator of moderate size (e.g. ``Fraction(round(x * 2**8), 2**8)``).
    Otherwise every sample takes the exact Python-int slow path.  ``source``
    defaults to :func:`dpframe.noise.random.current_source`.

    >>> from fractions import Fraction
    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     sample_discrete_gaussian(Fraction(9, 4), 8).tolist()
    [-2, -2, -1, -1, -1, -2, 0, 0]
    >>> x = sample_discrete_gaussian(Fraction(2**40), 1000)  # sigma = 2**20
    >>> x.shape, x.dtype
    ((1000,), dtype('int64'))
    """
    frac = _as_fraction(sigma2, "sigma2")
    if frac > _MAX_GAUSSIAN_SIGMA2:
        raise ValueError(f"sigma2 must be at most 2**112 so samples fit in int64, got {frac}")
    n = _check_size(size)
    src = current_source() if source is None else source
    a, b = frac.numerator, frac.denominator
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    limit = _FAST_PATH_LIMIT
    p, q = _gauss_offset(a, b)
    proposal = Fraction(a * q, b * p)  # t = sigma2 / (p/q)
    t_num, t_den = proposal.numerator, proposal.denominator
    # (q|Y| - p)**2 * b <= limit  <=>  |q|Y| - p| <= root.
    root = isqrt(limit // b)
    if max(t_num, t_den, 2 * q * q * a) > limit or p > root:
        # Parameters too large for int64: CKS Algorithm 3 verbatim
        # (t = floor(sigma) + 1) on Python ints.
        t = isqrt(a // b) + 1  # floor(sqrt(a/b)) = isqrt(floor(a/b))
        return _fill_slowly(lambda: _dgauss_int(a, b, t, src), n)
    ymax = (root + p) // q

    def batch(k: int) -> _Int64Array:
        y = _dlap_attempts(t_num, t_den, k, src)
        return y[np.flatnonzero(_gauss_accept(y, a, b, p, q, ymax, src))]

    return _collect(batch, n, 0.4)
