"""Exact discrete Laplace and discrete Gaussian samplers, vectorised.

The algorithms are those of Canonne, Kamath & Steinke (2020), "The Discrete
Gaussian for Differential Privacy" (CKS20):

* Algorithm 1 -- Bernoulli(exp(-gamma)) for rational gamma;
* Algorithm 2 -- the discrete Laplace DLap(scale) for rational scale;
* Algorithm 3 -- the discrete Gaussian N_Z(0, sigma2), by rejection from a
  discrete Laplace proposal.

Why exact: float samplers (``numpy.random.laplace`` and friends) have gaps
and biases in their low-order bits that can leak the un-noised value
(Mironov 2012).  Here every sampling decision is an exact comparison of
integers -- "is a uniform integer below ``den`` smaller than ``num``?" -- so
the output distribution is exactly the stated one.  Floats are used only to
guess how many attempts to generate per batch, which changes how much
randomness is wasted, never which values come out.

Why vectorised: a per-sample Python loop runs at some 10k-50k samples/s.  The
samplers here run each step of the algorithms for a whole batch of attempts
at once: every loop of the algorithms becomes a few numpy passes over a
shrinking array of still-undecided entries, and random words (the expensive
resource, see :mod:`dpframe.noise.random`) are used sparingly.

Two changes of parametrisation, both exact (see :func:`_dlap_attempts` and
:func:`_gauss_offset` for the arguments), keep the fast path in int64 and
cheap when the parameters have many significant bits (calibrated scales
such as ``Fraction(k, 2**40)``): the discrete Laplace draws its uniform part
below ``floor(scale)`` rather than below the scale's numerator, and the
Gaussian uses a proposal scale ``t = sigma2 / c`` with a simple fraction
``c`` near sigma instead of ``t = floor(sigma) + 1``.  The literal
Algorithms 2 and 3 remain as the exact slow path.

Integer ranges and the exact slow path: the fast path works in int64.  Each
step that multiplies numbers checks its inputs against bounds computed from
the parameters (``_FAST_PATH_LIMIT`` = 2**62) so no intermediate overflows.
Entries whose own random intermediate is out of range -- a Laplace
geometric count so large that ``U + w V`` would overflow, or a Gaussian
candidate so far in the tail that ``(q |Y| - p)**2 * b`` would -- are
finished one by one by the same formula on Python ints.  Both routes sample
the same conditional distribution, so the result is exact for every input,
and the routing depends only on the parameters and the entry's own random
draws.  When the parameters themselves are too large for int64 the whole
request takes the slow path (exact, but 50-100 times slower): for the
Laplace when the scale's numerator or denominator exceeds 2**62; for the
Gaussian when the numerator ``a`` of sigma2 exceeds about 2**61 (sigma above
~2**30.5 for an integer sigma2) or its denominator about 2**58.  Short of
that, once ``a`` exceeds ~2**56 (sigma beyond ~2**28 for an integer sigma2)
a growing share of tail candidates is routed individually (measured: 3.4M samples/s at sigma = 2**24,
1.1M/s at 2**30, 64k/s at 2**31).  Requests of at most ``_SCALAR_MAX``
samples also use the scalar path, because for them it is faster.

Output range: samples are int64, so ``scale <= 2**56`` (Laplace) and
``sigma2 <= 2**112`` (Gaussian) are required; then the chance of a sample
not fitting is below exp(-128), and should it happen anyway an
:class:`OverflowError` is raised rather than a wrong value returned.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from fractions import Fraction
from math import isqrt

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpframe.noise.random import (
    RandomSource,
    _as_int64_array,
    _buffered,
    _draw_bits,
    _uniform_below_scalar,
    _WordBuffer,
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

#: Attempts generated per numpy batch: big enough to amortise the per-call
#: overhead of the many small numpy passes, small enough to keep the working
#: arrays (a few MB) near the cache; 2**18 measured best here.
_BATCH = 1 << 18

#: Requests of at most this many samples use the scalar exact path: for one
#: or two samples it is several times faster than a round of numpy passes.
_SCALAR_MAX = 8

#: Bits per step of the lazy Bernoulli(num/den) comparison (see _bern_ratio).
_LAZY_BITS = 8

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
MAX_LAPLACE_SCALE = Fraction(2**56)
MAX_GAUSSIAN_SIGMA2 = Fraction(2**112)


# ---------------------------------------------------------------------------
# Vectorised building blocks (int64 fast path)
# ---------------------------------------------------------------------------


def _bern_ratio(num: _Int64Array, den: _Int64Array | int, source: RandomSource) -> _BoolArray:
    """Bernoulli(num / den) elementwise, exactly: ``uniform_below(den) < num``.

    Requires ``0 <= num <= den <= 2**63 - 1``; ``den`` may be one int.

    For large ``den`` a full-width uniform draw would cost a whole word (or
    more, after rejections) per decision, so the comparison is made lazily,
    8 bits at a time: think of a uniform real V = (v + W) / 2**8 with v an
    8-bit draw and W uniform in [0, 1), and compare it with
    num/den = (hi + rem/den) / 2**8, where hi = floor(num * 2**8 / den).
    v < hi means V < num/den and v > hi means V > num/den, whatever W is; only
    on a tie (probability 2**-8) is the exact Bernoulli(rem/den) drawn.
    """
    den_max = den if isinstance(den, int) else int(den.max(initial=0))
    if den_max < 1 << 16 or den_max > 1 << 54:
        # Small bounds are cheap already; above 2**54, num << 8 could overflow.
        if isinstance(den, int):
            draw = _uniform_below_scalar(den, num.size, source)
        else:
            draw = uniform_below(den, source)
        return draw < num
    shifted = num << _LAZY_BITS
    hi = shifted // den
    v = _draw_bits(source, num.size, _LAZY_BITS)
    out: _BoolArray = v < hi
    tie = (v == hi).nonzero()[0]
    if tie.size:
        if isinstance(den, int):
            rem = shifted[tie] - hi[tie] * den
            out[tie] = _uniform_below_scalar(den, tie.size, source) < rem
        else:
            sub_den = den[tie]
            rem = shifted[tie] - hi[tie] * sub_den
            out[tie] = uniform_below(sub_den, source) < rem
    return out


def _bern_recip(k: int, n: int, source: RandomSource) -> _BoolArray:
    """``n`` draws of Bernoulli(1 / k), ``k >= 2``."""
    if k == 2:
        return random_bits(n, source)  # one bit each
    hit: _BoolArray = _uniform_below_scalar(k, n, source) == 0
    return hit


def _bern_exp_one(n: int, source: RandomSource) -> _BoolArray:
    """``n`` draws of Bernoulli(exp(-1)) (CKS Algorithm 1 with gamma = 1).

    Algorithm 1 draws A_K ~ Bernoulli(gamma / K) for K = 1, 2, ... until the
    first failure and returns "K is odd".  With gamma = 1, A_1 always
    succeeds, and every pending entry shares the same K, so each round is a
    single Bernoulli(1/K) draw for the entries still going.
    """
    # K = 2: a fair coin; failing here means K = 2 is even, i.e. False.
    out = random_bits(n, source)
    live = out.nonzero()[0]
    k = 3
    while live.size:
        ok = _bern_recip(k, live.size, source)
        if k % 2 == 0:
            out[live[(~ok).nonzero()[0]]] = False
        live = live[ok.nonzero()[0]]
        k += 1
    return out


def _bern_exp_unit(num: _Int64Array, den: _Int64Array | int, source: RandomSource) -> _BoolArray:
    """Bernoulli(exp(-gamma)) for ``gamma = num/den`` in [0, 1], elementwise.

    CKS Algorithm 1: draw A_K ~ Bernoulli(gamma / K) for K = 1, 2, ... until
    the first failure; return "K is odd".  Vectorised, all pending entries
    share the same K.  For K >= 2, A_K is drawn as the AND of independent
    Bernoulli(1/K) and Bernoulli(num/den) -- the product of their
    probabilities is exactly gamma/K -- so the product ``K * den`` is never
    formed and cannot overflow however large K gets; the cheap 1/K coin goes
    first and the num/den draw is made only for its survivors.
    """
    out = np.ones(num.size, dtype=np.bool_)  # stopping at an odd K means True
    # K = 1: A_1 ~ Bernoulli(gamma); the entries failing here return True.
    live = _bern_ratio(num, den, source).nonzero()[0]
    k = 2
    while live.size:
        coin = _bern_recip(k, live.size, source)
        stopped = live[(~coin).nonzero()[0]]
        live = live[coin.nonzero()[0]]
        ok = _bern_ratio(num[live], den if isinstance(den, int) else den[live], source)
        if k % 2 == 0:
            out[stopped] = False
            out[live[(~ok).nonzero()[0]]] = False
        live = live[ok.nonzero()[0]]
        k += 1
    return out


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
    live = (whole > 0).nonzero()[0]
    j = 0
    while live.size:
        ok = _bern_exp_one(live.size, source)
        out[live[(~ok).nonzero()[0]]] = False
        live = live[ok.nonzero()[0]]
        j += 1
        live = live[(whole[live] > j).nonzero()[0]]
    # Fractional part (frac = 0 means exp(0) = 1: nothing to draw).
    idx = (out & (frac > 0)).nonzero()[0]
    if idx.size:
        sub_den = den if isinstance(den, int) else den[idx]
        out[idx] = _bern_exp_unit(frac[idx], sub_den, source)
    return out


def _bern_exp_const(num: int, den: int, n: int, source: RandomSource) -> _BoolArray:
    """``n`` draws of Bernoulli(exp(-num/den)) for one Python-int ratio.

    Same decomposition as :func:`_bern_exp_fraction`, with floor(gamma) and
    the remainder computed once.
    """
    whole, frac = divmod(num, den)
    if whole == 0:
        return _bern_exp_unit(np.full(n, frac, dtype=np.int64), den, source)
    out = _bern_exp_one(n, source)
    live = out.nonzero()[0]
    for _ in range(whole - 1):
        if live.size == 0:
            return out
        ok = _bern_exp_one(live.size, source)
        out[live[(~ok).nonzero()[0]]] = False
        live = live[ok.nonzero()[0]]
    if frac and live.size:
        out[live] = _bern_exp_unit(np.full(live.size, frac, dtype=np.int64), den, source)
    return out


def _geometric_exp(num: int, den: int, n: int, source: RandomSource) -> _Int64Array:
    """Successes of Bernoulli(exp(-num/den)) trials before the first failure.

    P[V >= v] = exp(-v num/den).  Each round the still-succeeding entries
    draw one more trial.
    """
    v = np.zeros(n, dtype=np.int64)
    live = _bern_exp_const(num, den, n, source).nonzero()[0]
    while live.size:
        v[live] += 1
        live = live[_bern_exp_const(num, den, live.size, source).nonzero()[0]]
    return v


def _dlap_attempts(t_num: int, t_den: int, n: int, source: RandomSource) -> _Int64Array:
    """Run ``n`` independent attempts at a DLap(t_num/t_den) sample.

    Returns the accepted samples, in attempt order (between 0 and n of them).
    Requires ``1 <= t_num, t_den <= _FAST_PATH_LIMIT``.

    This is CKS Algorithm 2 with its integer ``t`` (the scale's numerator)
    replaced by a block size ``w = max(1, floor(scale))``:

    1. U uniform in {0..w-1}, kept with probability exp(-U/scale)
       (rejected attempts are simply dropped);
    2. V = number of Bernoulli(exp(-w/scale)) successes before a failure;
    3. Y = U + w*V, so P[Y = y] is proportional to exp(-y/scale) for y >= 0
       (each y >= 0 is u + w v for exactly one pair, and the kept U and the
       independent V have weights exp(-u/scale) and exp(-v w/scale));
    4. a random sign, rejecting "-0" so that 0 is not counted twice.

    For an integer scale (t_den = 1) this is exactly Algorithm 2.  For a
    scale with a large numerator and denominator (e.g. 40 significant bits)
    Algorithm 2 would draw U below the 40-bit numerator and divide by the
    denominator; the block form draws U below floor(scale) instead and
    spends several times fewer random words.  The literal Algorithm 2 is
    kept as the exact slow path, :func:`_dlap_int`.
    """
    limit = _FAST_PATH_LIMIT
    w = max(1, t_num // t_den)
    # Step 1.  gamma = U t_den / t_num < 1 and U t_den < t_num <= limit.
    if w == 1:
        u = np.zeros(n, dtype=np.int64)  # U = 0 and exp(0) = 1: no draws
    else:
        u = _uniform_below_scalar(w, n, source)
        u = u[_bern_exp_unit(u * t_den, t_num, source).nonzero()[0]]
    m = u.size
    # Step 2.  w t_den <= t_num unless w = 1 (then gamma = t_den/t_num may
    # exceed 1, which _bern_exp_fraction handles).
    v = _geometric_exp(w * t_den, t_num, m, source)
    # Step 3.  U + w V <= limit whenever V <= vmax; larger V (astronomically
    # rare unless w is huge) are finished with Python ints.  The test depends
    # only on w and the entry's own V.
    vmax = (limit - (w - 1)) // w
    big = (v > vmax).nonzero()[0]
    if big.size:
        v_fast = v.copy()
        v_fast[big] = 0
    else:
        v_fast = v
    y: _Int64Array = u + v_fast * w
    for i in big.tolist():
        y_big = int(u[i]) + w * int(v[i])
        if y_big > _INT64_MAX:
            raise OverflowError("discrete Laplace sample does not fit in int64")
        y[i] = y_big
    # Step 4.
    neg = random_bits(m, source)
    np.negative(y, out=y, where=neg)
    keep = (~(neg & (y == 0))).nonzero()[0]
    accepted: _Int64Array = y[keep]
    return accepted


def _gauss_offset(a: int, b: int) -> tuple[int, int]:
    """Choose the offset ``c = p/q``, and so the proposal scale t = sigma2/c.

    CKS Algorithm 3 is correct for any proposal scale t > 0: the DLap(t)
    weight exp(-|y|/t) times the acceptance probability
    exp(-(|y| - sigma2/t)**2 / (2 sigma2)) equals
    exp(-y**2 / (2 sigma2)) * exp(-sigma2 / (2 t**2)), proportional to the
    target.  CKS take t = floor(sigma) + 1; then the offset sigma2/t carries
    the denominator of sigma2 times t, and gamma's numerator
    (|Y| b t - a)**2 (with sigma2 = a/b) overflows int64 already for
    sigma ~ 2**16, or for sigma ~ 1 when sigma2 has 40 significant bits.
    Instead we fix the offset c to a simple fraction p/q near sigma and use
    t = sigma2/c, also near sigma (where the acceptance rate is best, about
    0.6-0.76).  Then

        gamma = (|Y| - p/q)**2 / (2 a/b) = (q |Y| - p)**2 * b / (2 q**2 a),

    whose parts stay near ``q**2 * a``.  q is the least power of two with
    q * sigma >= 16 (so c is within 1/16 of sigma), capped so that
    ``q**2 * a <= 2**56``; p = floor(q * sigma) + 1 >= 1.
    """
    q = 1
    while q * q * a < 256 * b:  # want q * sigma >= 16
        q *= 2
    while q > 1 and q * q * a > 2**56:
        q //= 2
    p = isqrt(a * q * q // b) + 1  # floor(q sigma) + 1 = isqrt(floor(q^2 a / b)) + 1
    return p, q


def _gauss_accept(
    y: _Int64Array, a: int, b: int, p: int, q: int, ymax: int, source: _WordBuffer
) -> _BoolArray:
    """Algorithm 3's test for offset p/q: Bernoulli(exp(-(q|Y| - p)**2 b / (2 q**2 a))).

    Entries with ``|Y| <= ymax`` (``ymax`` is derived from the parameters so
    that the numerator fits in int64) are decided in one vectorised pass;
    the rare tail entries beyond it use the same formula on Python ints.
    """
    absy = np.abs(y)
    den = 2 * q * q * a
    slow = (absy > ymax).nonzero()[0]
    if slow.size == 0:
        return _bern_exp_fraction((absy * q - p) ** 2 * b, den, source)
    out = np.empty(y.size, dtype=np.bool_)
    fast = (absy <= ymax).nonzero()[0]
    out[fast] = _bern_exp_fraction((absy[fast] * q - p) ** 2 * b, den, source)
    for i in slow.tolist():
        out[i] = _bern_exp_int((q * int(absy[i]) - p) ** 2 * b, den, source)
    return out


# ---------------------------------------------------------------------------
# Exact scalar slow path (Python ints, arbitrary size)
# ---------------------------------------------------------------------------


def _uniform_below_int(high: int, source: _WordBuffer) -> int:
    """One exact uniform integer in [0, high) for a Python int ``high >= 1``."""
    bits = (high - 1).bit_length()
    if bits == 0:
        return 0
    nwords = -(-bits // 64)
    mask = (1 << bits) - 1
    while True:
        value = source.integer(nwords) & mask
        if value < high:
            return value


def _bern_exp_unit_int(num: int, den: int, source: _WordBuffer) -> bool:
    """CKS Algorithm 1 literally, for gamma = num/den in [0, 1]."""
    k = 1
    while _uniform_below_int(k * den, source) < num:  # A ~ Bernoulli(gamma/K)
        k += 1
    return k % 2 == 1


def _bern_exp_int(num: int, den: int, source: _WordBuffer) -> bool:
    """Bernoulli(exp(-num/den)) for any Python ints num >= 0, den >= 1."""
    whole, frac = divmod(num, den)
    for _ in range(whole):  # exits at the first failure, almost surely soon
        if not _bern_exp_unit_int(1, 1, source):
            return False
    return _bern_exp_unit_int(frac, den, source)


def _dlap_int(t: int, s: int, source: _WordBuffer) -> int:
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


def _dgauss_int(a: int, b: int, t: int, source: _WordBuffer) -> int:
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
    src = _buffered(current_source() if source is None else source)
    num_a, den_a = np.broadcast_arrays(_as_int64_array(num, "num"), _as_int64_array(den, "den"))
    shape = num_a.shape
    nums = num_a.reshape(-1)
    dens = den_a.reshape(-1)
    if nums.size and (int(nums.min()) < 0 or int(dens.min()) < 1):
        raise ValueError("need num >= 0 and den >= 1")
    out = _bern_exp_fraction(nums, dens, src)
    return out.reshape(shape)


def sample_discrete_laplace(
    scale: Fraction | int, size: int, source: RandomSource | None = None
) -> NDArray[np.int64]:
    """Exact samples with P[X = x] proportional to exp(-|x| / scale), x in Z.

    ``scale`` is a positive rational (a :class:`~fractions.Fraction` or int;
    floats are refused because their exact value is rarely the one
    intended), at most 2**56.  The variance is ``2p / (1 - p)**2`` with
    ``p = exp(-1/scale)``.

    CKS Algorithm 2 in block form (:func:`_dlap_attempts`): with
    w = max(1, floor(scale)), U uniform in {0..w-1} kept with probability
    exp(-U/scale), V the number of Bernoulli(exp(-w/scale)) successes
    before a failure, Y = U + w V, and a random sign rejecting "-0".  For an
    integer scale this is Algorithm 2 verbatim.  Vectorised over batches of
    attempts and exact for every input; if the scale's numerator or
    denominator exceeds 2**62, or at most 8 samples are requested, the
    samples come from Algorithm 2 verbatim on Python ints (exact; faster
    for tiny requests, some 50 times slower per sample for big ones).
    ``source`` defaults to :func:`dpframe.noise.random.current_source`.

    >>> from fractions import Fraction
    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     sample_discrete_laplace(Fraction(3, 2), 10).tolist()
    [-3, 0, -3, -2, -1, 2, 0, 0, -1, 3]
    >>> x = sample_discrete_laplace(Fraction(10), 1000)  # secure source
    >>> x.shape, x.dtype
    ((1000,), dtype('int64'))
    """
    frac = _as_fraction(scale, "scale")
    if frac > MAX_LAPLACE_SCALE:
        raise ValueError(f"scale must be at most 2**56 so samples fit in int64, got {frac}")
    n = _check_size(size)
    src = _buffered(current_source() if source is None else source)
    t, s = frac.numerator, frac.denominator
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n <= _SCALAR_MAX or t > _FAST_PATH_LIMIT or s > _FAST_PATH_LIMIT:
        return _fill_slowly(lambda: _dlap_int(t, s, src), n)
    return _collect(lambda k: _dlap_attempts(t, s, k, src), n, 0.5)


def sample_discrete_gaussian(
    sigma2: Fraction | int, size: int, source: RandomSource | None = None
) -> NDArray[np.int64]:
    """Exact samples with P[X = x] proportional to exp(-x**2 / (2 sigma2)).

    ``sigma2`` (the variance parameter sigma**2, not sigma) is a positive
    rational (:class:`~fractions.Fraction` or int), at most 2**112.  The
    variance of the output is slightly below sigma2 for small sigma and
    tends to sigma2 as sigma grows.

    CKS Algorithm 3: draw Y from a discrete Laplace proposal DLap(t) and
    accept it with probability exp(-(|Y| - sigma2/t)**2 / (2 sigma2)).  The
    proposal scale is t = sigma2/c for a simple fraction c near sigma (see
    :func:`_gauss_offset`) rather than CKS's floor(sigma) + 1; both are
    exact, and this choice keeps every number in int64.  Fast (millions of
    samples/s) while the numerator of sigma2 in lowest terms stays below
    about 2**56, e.g. sigma up to 2**28 for an integer sigma2 or for a
    calibrated sigma2 with 40 significant bits; slower beyond, and from a
    numerator of about 2**61 (or a denominator of about 2**58) on, every
    sample takes the exact Python-int path (CKS Algorithm 3 verbatim).
    Requests of at most 8 samples take that path too, being faster there.
    ``source`` defaults to :func:`dpframe.noise.random.current_source`.

    >>> from fractions import Fraction
    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     sample_discrete_gaussian(Fraction(9, 4), 10).tolist()
    [2, -1, 3, 1, 1, 0, -2, 1, 2, 1]
    >>> x = sample_discrete_gaussian(Fraction(2**40), 1000)  # sigma = 2**20
    >>> x.shape, x.dtype
    ((1000,), dtype('int64'))
    """
    frac = _as_fraction(sigma2, "sigma2")
    if frac > MAX_GAUSSIAN_SIGMA2:
        raise ValueError(f"sigma2 must be at most 2**112 so samples fit in int64, got {frac}")
    n = _check_size(size)
    src = _buffered(current_source() if source is None else source)
    a, b = frac.numerator, frac.denominator
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    limit = _FAST_PATH_LIMIT
    p, q = _gauss_offset(a, b)
    proposal = Fraction(a * q, b * p)  # t = sigma2 / (p/q)
    t_num, t_den = proposal.numerator, proposal.denominator
    # (q|Y| - p)**2 * b <= limit  <=>  |q|Y| - p| <= root.
    root = isqrt(limit // b)
    if n <= _SCALAR_MAX or max(t_num, t_den, 2 * q * q * a) > limit or p > root:
        # Few samples, or parameters too large for int64: CKS Algorithm 3
        # verbatim (t = floor(sigma) + 1) on Python ints.
        t = isqrt(a // b) + 1  # floor(sqrt(a/b)) = isqrt(floor(a/b))
        return _fill_slowly(lambda: _dgauss_int(a, b, t, src), n)
    ymax = (root + p) // q

    def batch(k: int) -> _Int64Array:
        y = _dlap_attempts(t_num, t_den, k, src)
        return y[_gauss_accept(y, a, b, p, q, ymax, src).nonzero()[0]]

    return _collect(batch, n, 0.4)
