"""The random source behind every noise draw, and exact uniform integers.

All noise in dpframe is built from independent uniform 64-bit words.  By
default they come from :class:`SystemRandomSource`, i.e. ``os.urandom`` (the
kernel CSPRNG), because a differential-privacy guarantee is only as good as
the unpredictability of its noise: a seeded PRNG such as numpy's PCG64 lets
anyone who learns (or guesses) the seed subtract the noise again.

:class:`SeededRandomSource` exists for reproducible tests only.  It is never
used unless a caller passes it explicitly to a low-level sampler, or the
documented test switch :func:`dpframe.testing.seeded_noise` is active; in
that case :func:`current_source` returns it and :func:`is_seeded` reports it,
so higher layers can label such releases "seeded (not private)".

The switch lives in a :class:`contextvars.ContextVar`: it affects only the
code that runs inside the ``with`` block (that thread, or that asyncio task).
Another thread's queries keep drawing from the secure source, and their
releases are not marked seeded.

On top of the words this module provides exact integer helpers:

* :func:`uniform_below` -- exact uniform integers in ``[0, high)``;
* :func:`random_bits` -- fair coins, 64 per word.

Random words are the expensive resource (``os.urandom`` costs roughly 20-30 ns
per word, far more than a numpy pass over the same element), so both helpers
pack several small draws into one 64-bit word instead of spending a word per
draw, and the samplers read words through a small per-call buffer
(``_WordBuffer``) rather than making one system call per numpy pass.
"""

from __future__ import annotations

import os
from contextvars import ContextVar, Token
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "RandomSource",
    "SeededRandomSource",
    "SystemRandomSource",
    "current_source",
    "is_seeded",
    "random_bits",
    "uniform_below",
]

_INT64_MAX = 2**63 - 1


@runtime_checkable
class RandomSource(Protocol):
    """Anything that can produce independent uniform 64-bit words.

    Implementations must return a one-dimensional ``uint64`` array of length
    ``n`` whose entries are independent and uniform over ``[0, 2**64)``.  The
    returned array may be read-only; callers must not modify it in place.

    >>> import numpy as np
    >>> from dpframe.noise.random import RandomSource, SystemRandomSource
    >>> isinstance(SystemRandomSource(), RandomSource)
    True
    """

    def words(self, n: int) -> NDArray[np.uint64]:
        """Return ``n`` independent uniform 64-bit words."""
        ...


class SystemRandomSource:
    """Cryptographically secure words from the operating system (the default).

    Each call reads ``8 * n`` bytes from ``os.urandom``; the result is a
    read-only view of those bytes.

    >>> w = SystemRandomSource().words(3)
    >>> w.shape, w.dtype
    ((3,), dtype('uint64'))
    """

    __slots__ = ()

    def words(self, n: int) -> NDArray[np.uint64]:
        """Return ``n`` uniform 64-bit words read from ``os.urandom``."""
        if n < 0:
            raise ValueError(f"n must be non-negative, got {n}")
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def __repr__(self) -> str:
        return "SystemRandomSource()"


class SeededRandomSource:
    """Deterministic words from ``numpy.random.Generator(PCG64(seed))``.

    NOT cryptographically secure and NOT private: anyone who knows the seed
    can reproduce, and therefore remove, the noise.  For tests only; use
    :func:`dpframe.testing.seeded_noise` rather than constructing it directly.

    >>> SeededRandomSource(7).words(2).tolist() == SeededRandomSource(7).words(2).tolist()
    True
    """

    __slots__ = ("_generator", "seed")

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        self.seed = int(seed)
        self._generator = np.random.Generator(np.random.PCG64(self.seed))

    def words(self, n: int) -> NDArray[np.uint64]:
        """Return the next ``n`` 64-bit outputs of the PCG64 stream."""
        if n < 0:
            raise ValueError(f"n must be non-negative, got {n}")
        # random_raw is the bit generator's native 64-bit output: no
        # conversion, and every bit is used.
        raw: NDArray[np.uint64] = self._generator.bit_generator.random_raw(n)
        return raw

    def __repr__(self) -> str:
        return f"SeededRandomSource({self.seed})"


# --- the context-local test switch ------------------------------------------

_SYSTEM_SOURCE = SystemRandomSource()
_seeded_source: ContextVar[SeededRandomSource | None] = ContextVar("dpframe_seeded_source", default=None)


def current_source() -> RandomSource:
    """Return the active random source.

    That is the secure :class:`SystemRandomSource`, unless the test switch
    :func:`dpframe.testing.seeded_noise` is active, in which case it is the
    switch's :class:`SeededRandomSource`.

    >>> from dpframe.testing import seeded_noise
    >>> current_source()
    SystemRandomSource()
    >>> with seeded_noise(3):
    ...     current_source()
    SeededRandomSource(3)
    """
    seeded = _seeded_source.get()
    return _SYSTEM_SOURCE if seeded is None else seeded


def is_seeded() -> bool:
    """Return True while the seeded test switch is active.

    Releases made while this is True are reproducible and therefore NOT
    differentially private; the ledger should mark them "seeded (not private)".

    >>> from dpframe.testing import seeded_noise
    >>> is_seeded()
    False
    >>> with seeded_noise(0):
    ...     is_seeded()
    True
    """
    return _seeded_source.get() is not None


def _set_seeded_source(source: SeededRandomSource) -> Token[SeededRandomSource | None]:
    """Install ``source`` as the active seeded source in the current context; return the token to undo it.

    Private: the only intended caller is :func:`dpframe.testing.seeded_noise`.
    """
    return _seeded_source.set(source)


def _reset_seeded_source(token: Token[SeededRandomSource | None]) -> None:
    """Undo :func:`_set_seeded_source` (blocks nest: the previous state comes back)."""
    _seeded_source.reset(token)


# --- buffering ----------------------------------------------------------------


class _WordBuffer:
    """Serves small ``words`` requests from one larger read of ``inner``.

    The samplers ask for words in many small pieces (one per numpy pass);
    each ``os.urandom`` call costs a system call plus Python overhead, so a
    sampler call wraps its source in a buffer.  Words handed out are still
    independent and uniform, each used at most once, and the unused rest is
    discarded when the buffer is dropped.  Requests at least as large as the
    current chunk go straight to ``inner``.  The chunk starts small (a
    one-sample call should not read kilobytes) and doubles with each refill.
    """

    __slots__ = ("_buf", "_bytes", "_chunk", "_inner", "_pos")

    def __init__(self, inner: RandomSource, chunk: int = 64) -> None:
        self._inner = inner
        self._buf: NDArray[np.uint64] = np.zeros(0, dtype=np.uint64)
        self._bytes = b""  # the buffer's bytes, for integer(): made at its first use after a refill
        self._pos = 0
        self._chunk = chunk

    def words(self, n: int) -> NDArray[np.uint64]:
        """Return ``n`` fresh words, from the buffer when possible."""
        pos = self._pos
        if pos + n <= self._buf.size:
            self._pos = pos + n
            return self._buf[pos : pos + n]
        if n >= self._chunk:
            return self._inner.words(n)
        self._buf = self._inner.words(self._chunk)
        self._bytes = b""
        self._chunk = min(2 * self._chunk, 1 << 14)
        self._pos = n
        return self._buf[:n]

    def integer(self, n: int) -> int:
        """The next ``n`` words as one little-endian Python int: the words ``words(n)`` would return.

        The exact scalar samplers draw one or two words at a time; slicing bytes is several times
        cheaper than slicing the array and converting it.
        """
        pos = self._pos
        if pos + n <= self._buf.size:
            if not self._bytes:
                self._bytes = self._buf.tobytes()
            self._pos = pos + n
            return int.from_bytes(self._bytes[8 * pos : 8 * (pos + n)], "little")
        return int.from_bytes(self.words(n).tobytes(), "little")


def _buffered(source: RandomSource) -> _WordBuffer:
    """Wrap ``source`` in a :class:`_WordBuffer` (unless it already is one)."""
    return source if isinstance(source, _WordBuffer) else _WordBuffer(source)


# --- exact integer helpers --------------------------------------------------


_NARROW_VIEWS: dict[int, type[np.unsignedinteger[Any]]] = {8: np.uint8, 16: np.uint16, 32: np.uint32}
_FIELD_SHIFTS: dict[int, NDArray[np.uint64]] = {
    bits: (np.arange(64 // bits, dtype=np.uint64) * np.uint64(bits))[:, None] for bits in range(2, 33)
}


def _draw_bits(source: RandomSource, n: int, bits: int) -> NDArray[np.int64]:
    """Return ``n`` independent uniform integers in ``[0, 2**bits)``.

    ``1 <= bits <= 63``.  ``64 // bits`` values are cut from each 64-bit word
    (e.g. three 20-bit values per word), so small draws cost a fraction of a
    word.  The result is a fresh, writable array.
    """
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if bits == 1:
        return np.unpackbits(source.words(-(-n // 64)).view(np.uint8), count=n).astype(np.int64)
    per_word = 64 // bits
    words = source.words(-(-n // per_word))
    narrow = _NARROW_VIEWS.get(bits)
    if narrow is not None:
        # A reinterpreting view is cheaper than shifting.
        return words.view(narrow)[:n].astype(np.int64)
    mask = np.uint64((1 << bits) - 1)
    if per_word == 1:
        return (words & mask).view(np.int64)
    # Row j holds bits [j*bits, (j+1)*bits) of every word.  Which value ends
    # up where does not matter: all of them are independent and uniform.
    fields = (words[None, :] >> _FIELD_SHIFTS[bits]) & mask
    return fields.reshape(-1)[:n].view(np.int64)


def _fill_mask(x: NDArray[np.int64]) -> NDArray[np.int64]:
    """Return ``2**k - 1`` for the least ``k`` with ``2**k > x``, elementwise.

    ``x`` must be non-negative.  Exact integer shifts and ors, no float log2
    (which rounds wrongly near powers of two above 2**53).
    """
    m = x.copy()
    for shift in (1, 2, 4, 8, 16, 32):
        m |= m >> shift
    return m


def _uniform_below_scalar(high: int, size: int, source: RandomSource) -> NDArray[np.int64]:
    """``size`` exact uniform integers in ``[0, high)`` for one int bound."""
    top = high - 1
    bits = top.bit_length()
    if bits == 0:
        return np.zeros(size, dtype=np.int64)
    if top == (1 << bits) - 1:
        return _draw_bits(source, size, bits)  # power of two: no rejection
    # Rejection sampling.  Draw enough candidates that usually one round
    # suffices (the float only sizes the batch) and keep the first ``size``
    # accepted ones: accepted candidates are i.i.d. uniform on [0, high), so
    # which of them are kept does not matter.  Fewer rounds means fewer numpy
    # calls, which dominate for small sizes.
    want = int(size * (1 << bits) / high * 1.05) + 8
    draws = _draw_bits(source, want, bits)
    accepted = draws[(draws <= top).nonzero()[0]]
    if accepted.size >= size:
        return accepted[:size]
    out = np.empty(size, dtype=np.int64)
    filled = accepted.size
    out[:filled] = accepted
    while filled < size:
        draws = _draw_bits(source, 2 * (size - filled) + 8, bits)
        accepted = draws[(draws <= top).nonzero()[0]][: size - filled]
        out[filled : filled + accepted.size] = accepted
        filled += accepted.size
    return out


def _as_int64_array(values: ArrayLike, name: str) -> NDArray[np.int64]:
    """Convert integer input to int64 exactly, refusing floats and overflow."""
    if isinstance(values, (int, np.integer)) and not isinstance(values, (bool, np.bool_)):
        v = int(values)
        if not -_INT64_MAX - 1 <= v <= _INT64_MAX:
            raise OverflowError(f"{name}={v} does not fit in int64")
        return np.asarray(v, dtype=np.int64)
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        if arr.size == 0:
            return np.zeros(arr.shape, dtype=np.int64)
        raise TypeError(f"{name} must be integers that fit in int64, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > _INT64_MAX:
        raise OverflowError(f"{name} does not fit in int64")
    return arr.astype(np.int64, copy=False)


def uniform_below(
    high: ArrayLike, source: RandomSource | None = None, size: int | None = None
) -> NDArray[np.int64]:
    """Exact uniform integers in ``[0, high)``, elementwise.

    ``high`` is an integer array (or scalar) of bounds, each in
    ``[1, 2**63 - 1]``; the result has the shape of ``high``.  With an int
    ``high`` and ``size=n`` it returns ``n`` draws below that common bound,
    which is cheaper than passing a constant array.

    The draw is exact: each candidate is a uniform integer with the bit
    length of ``high - 1`` (masking random bits, the mask computed with exact
    integer shifts), and candidates ``>= high`` are rejected and redrawn.
    Only the rejected entries are redrawn (with a common bound, a few spare
    candidates are drawn up front instead), so the work is a few numpy
    passes.  When the bounds are small several candidates share one 64-bit
    word.

    ``source`` defaults to :func:`current_source`.

    >>> import numpy as np
    >>> from dpframe.testing import seeded_noise
    >>> x = uniform_below(np.array([1, 2, 10, 2**62]))
    >>> x.dtype, x.shape, bool(((0 <= x) & (x < [1, 2, 10, 2**62])).all())
    (dtype('int64'), (4,), True)
    >>> with seeded_noise(1):
    ...     uniform_below(6, size=8).tolist()
    [3, 2, 5, 0, 1, 1, 5, 1]
    """
    src = current_source() if source is None else source
    if size is not None:
        if size < 0:
            raise ValueError(f"size must be non-negative, got {size}")
        if np.ndim(high) != 0:
            raise ValueError("size= is only supported with a scalar high")
        h = int(_as_int64_array(high, "high"))
        if h < 1:
            raise ValueError(f"high must be >= 1, got {h}")
        return _uniform_below_scalar(h, size, src)

    bounds = _as_int64_array(high, "high")
    if bounds.size == 0:
        return np.zeros(bounds.shape, dtype=np.int64)
    if int(bounds.min()) < 1:
        raise ValueError("every bound in high must be >= 1")
    top = bounds.reshape(-1) - 1
    mask = _fill_mask(top)
    bits = int(mask.max()).bit_length()
    if bits == 0:
        return np.zeros(bounds.shape, dtype=np.int64)
    out = _draw_bits(src, top.size, bits) & mask
    bad = (out > top).nonzero()[0]
    while bad.size:
        sub_mask = mask[bad]
        sub_top = top[bad]
        redraw = _draw_bits(src, bad.size, int(sub_mask.max()).bit_length()) & sub_mask
        out[bad] = redraw
        bad = bad[(redraw > sub_top).nonzero()[0]]
    return out.reshape(bounds.shape)


def random_bits(n: int, source: RandomSource | None = None) -> NDArray[np.bool_]:
    """Return ``n`` independent fair coin flips as a boolean array.

    Every bit of every word is used: ``n`` coins cost ``ceil(n / 64)`` words.
    ``source`` defaults to :func:`current_source`.

    >>> from dpframe.testing import seeded_noise
    >>> with seeded_noise(0):
    ...     random_bits(5).tolist()
    [False, True, False, True, True]
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    src = current_source() if source is None else source
    bits = np.unpackbits(src.words(-(-n // 64)).view(np.uint8), count=n)
    return bits.view(np.bool_)
