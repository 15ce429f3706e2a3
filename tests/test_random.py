"""Tests for dpframe.noise.random and the dpframe.testing switch.

Statistical tests run under the seeded switch, so they are deterministic; their
thresholds are also chosen so that a correct implementation on fresh secure
randomness would fail less than once in a million runs (p-value cut-offs of
1e-7, tolerances of >= 6 standard errors).
"""

from __future__ import annotations

import doctest
import threading
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

import dpframe.noise.random as rnd
from dpframe.noise.random import (
    RandomSource,
    SeededRandomSource,
    SystemRandomSource,
    current_source,
    is_seeded,
    random_bits,
    uniform_below,
)
from dpframe.testing import NotPrivateWarning, seeded_noise

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")

P_MIN = 1e-7


class CountingSource:
    """Wraps a source and counts the words drawn."""

    def __init__(self, inner: RandomSource) -> None:
        self.inner = inner
        self.words_drawn = 0
        self.calls = 0

    def words(self, n: int) -> NDArray[np.uint64]:
        self.words_drawn += n
        self.calls += 1
        return self.inner.words(n)


@pytest.fixture
def seeded_source() -> Iterator[SeededRandomSource]:
    with seeded_noise(2024) as source:
        yield source


def uniform_pvalue(x: NDArray[np.int64], high: int) -> float:
    counts = np.bincount(x, minlength=high)
    assert counts.size == high
    return float(stats.chisquare(counts).pvalue)


# --- sources and the switch -------------------------------------------------


def test_default_source_is_the_system_source() -> None:
    assert isinstance(current_source(), SystemRandomSource)
    assert not is_seeded()


def test_system_source_words() -> None:
    w = SystemRandomSource().words(1000)
    assert w.dtype == np.uint64 and w.shape == (1000,)
    assert len(np.unique(w)) == 1000  # collisions have probability ~3e-14
    assert SystemRandomSource().words(0).shape == (0,)
    assert isinstance(SystemRandomSource(), RandomSource)
    with pytest.raises(ValueError):
        SystemRandomSource().words(-1)


def test_seeded_source_is_reproducible() -> None:
    a = SeededRandomSource(7).words(10)
    b = SeededRandomSource(7).words(10)
    c = SeededRandomSource(8).words(10)
    assert a.dtype == np.uint64
    assert a.tolist() == b.tolist()
    assert a.tolist() != c.tolist()
    # Consecutive calls continue the stream.
    s = SeededRandomSource(7)
    assert np.concatenate([s.words(4), s.words(6)]).tolist() == a.tolist()


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3"])
def test_seeded_source_rejects_bad_seeds(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        SeededRandomSource(bad)  # type: ignore[arg-type]


def test_seeded_noise_warns_and_switches() -> None:
    with pytest.warns(NotPrivateWarning, match="NOT differentially private"):
        with seeded_noise(11) as source:
            assert current_source() is source
            assert isinstance(source, SeededRandomSource) and source.seed == 11
            assert is_seeded()
    assert isinstance(current_source(), SystemRandomSource)
    assert not is_seeded()


def test_seeded_noise_warning_points_at_the_caller() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with seeded_noise(1):
            pass
    assert len(caught) == 1
    assert caught[0].filename == __file__


def test_seeded_noise_makes_runs_identical() -> None:
    with seeded_noise(5):
        a = uniform_below(np.array([3, 1000, 2**40]), size=None)
        b = random_bits(100)
    with seeded_noise(5):
        c = uniform_below(np.array([3, 1000, 2**40]))
        d = random_bits(100)
    assert a.tolist() == c.tolist() and b.tolist() == d.tolist()


def test_seeded_noise_nests_and_restores_on_error() -> None:
    with seeded_noise(1) as outer:
        with seeded_noise(2) as inner:
            assert current_source() is inner
        assert current_source() is outer
        with pytest.raises(RuntimeError):
            with seeded_noise(3):
                raise RuntimeError("boom")
        assert current_source() is outer
    assert isinstance(current_source(), SystemRandomSource)


def test_switch_is_context_local() -> None:
    """Another thread's draws stay secure while a test seeds its own (issue: the switch was process-wide)."""
    seen: list[object] = []
    with seeded_noise(9):
        thread = threading.Thread(target=lambda: seen.extend([is_seeded(), current_source()]))
        thread.start()
        thread.join()
        assert is_seeded()
    assert seen[0] is False and isinstance(seen[1], SystemRandomSource)


# --- uniform_below -----------------------------------------------------------


@pytest.mark.parametrize("high", [2, 3, 5, 7, 10, 64, 100, 257])
def test_uniform_below_small_bounds_are_uniform(seeded_source: RandomSource, high: int) -> None:
    x = uniform_below(high, size=200_000)
    assert x.dtype == np.int64
    assert x.min() == 0 and x.max() == high - 1
    assert uniform_pvalue(x, high) > P_MIN
    # The array form with a constant bound agrees in distribution too.
    y = uniform_below(np.full(200_000, high))
    assert y.min() == 0 and y.max() == high - 1
    assert uniform_pvalue(y, high) > P_MIN


def test_uniform_below_elementwise_bounds(seeded_source: RandomSource) -> None:
    bounds = np.array([1, 2, 3, 6, 17, 1000])
    highs = np.tile(bounds, 60_000)
    x = uniform_below(highs)
    assert x.shape == highs.shape
    assert ((x >= 0) & (x < highs)).all()
    for high in bounds.tolist():
        sub = x[highs == high]
        if high == 1:
            assert (sub == 0).all()
        elif high <= 17:
            assert uniform_pvalue(sub, high) > P_MIN
        else:
            # 1000 cells with 60 draws each: bin into 10 cells of 100.
            counts = np.bincount(sub // 100, minlength=10)
            assert stats.chisquare(counts).pvalue > P_MIN


def test_uniform_below_keeps_shape_and_handles_empty() -> None:
    x = uniform_below(np.array([[5, 6], [7, 8]]))
    assert x.shape == (2, 2) and x.dtype == np.int64
    assert uniform_below(np.zeros((0,), dtype=np.int64)).shape == (0,)
    assert uniform_below(7, size=0).shape == (0,)
    assert uniform_below(np.ones(5, dtype=np.int64)).tolist() == [0] * 5
    assert uniform_below(1, size=3).tolist() == [0, 0, 0]
    assert uniform_below(np.array([9], dtype=np.uint64)).dtype == np.int64


@pytest.mark.parametrize("bits", [7, 8, 16, 31, 32, 33, 53, 61, 62])
def test_uniform_below_exact_boundaries(seeded_source: RandomSource, bits: int) -> None:
    # Powers of two (no rejection) and one above (rejection nearly 1/2):
    # never returns high, and reaches the very top values.
    for high in (2**bits, 2**bits + 1, 2**bits - 1):
        x = uniform_below(high, size=20_000)
        assert x.min() >= 0 and x.max() < high
        y = uniform_below(np.array([high] * 20_000 + [3] * 100))
        assert y[:20_000].max() < high and y[20_000:].max() < 3
    # A bound of 2**k + 1 has exactly one value (2**k) at the top; with high=3
    # (values 0, 1, 2) the top value appears about a third of the time.
    x = uniform_below(3, size=30_000)
    assert abs((x == 2).mean() - 1 / 3) < 6 * np.sqrt(2 / 9 / 30_000)


@pytest.mark.parametrize(
    "high", [2**62, 2**62 + 1, 3 * 2**60, 2**63 - 1, 2**62 - 1, 5 * 2**59 + 12345]
)
def test_uniform_below_bounds_near_2_62(seeded_source: RandomSource, high: int) -> None:
    n = 100_000
    for x in (uniform_below(high, size=n), uniform_below(np.full(n, high))):
        assert x.min() >= 0 and x.max() < high
        # The top bits follow the bound: P[x >= high/2] = 1/2 up to 1/high.
        half = high // 2
        frac = (x >= half).mean()
        assert abs(frac - (high - half) / high) < 6 * 0.5 / np.sqrt(n)
        # The low bits are uniform.
        assert uniform_pvalue(x % 16, 16) > P_MIN
        # Deciles match.
        counts = np.bincount((x // -(-high // 10)).astype(np.int64), minlength=10)
        assert stats.chisquare(counts).pvalue > P_MIN


def test_fill_mask_is_exact_at_powers_of_two() -> None:
    values = [0, 1, 2, 3, 4, 255, 256, 2**31 - 1, 2**31, 2**32, 2**53, 2**53 + 1, 2**62 - 1]
    values += [2**62, 2**62 + 1, 2**63 - 1]
    got = rnd._fill_mask(np.array(values, dtype=np.int64)).tolist()
    assert got == [(1 << v.bit_length()) - 1 for v in values]


def test_uniform_below_rejects_bad_bounds() -> None:
    with pytest.raises(ValueError):
        uniform_below(np.array([3, 0]))
    with pytest.raises(ValueError):
        uniform_below(0, size=3)
    with pytest.raises(ValueError):
        uniform_below(np.array([3, 4]), size=2)
    with pytest.raises(ValueError):
        uniform_below(3, size=-1)
    with pytest.raises(TypeError):
        uniform_below(np.array([2.5]))
    with pytest.raises(OverflowError):
        uniform_below(2**63, size=1)
    with pytest.raises(OverflowError):
        uniform_below(np.array([2**64 - 1], dtype=np.uint64))


def test_uniform_below_spends_few_words() -> None:
    # high = 6 needs 3 bits: 21 draws per word; 3/4 are accepted.
    src = CountingSource(SeededRandomSource(1))
    uniform_below(6, src, size=210_000)
    assert src.words_drawn < 210_000 / 21 / 0.75 * 1.1
    # Bounds below 2**32 share words as well (two 32-bit halves or better).
    src = CountingSource(SeededRandomSource(2))
    uniform_below(np.full(100_000, 2**32), src)
    assert src.words_drawn == 50_000
    src = CountingSource(SeededRandomSource(3))
    uniform_below(np.full(90_000, 2**20), src)
    assert src.words_drawn == 30_000  # three 20-bit draws per word


@pytest.mark.parametrize("bits", list(range(1, 64)))
def test_draw_bits_range_and_top_bit(bits: int) -> None:
    src = SeededRandomSource(bits)
    x = rnd._draw_bits(src, 4000, bits)
    assert x.dtype == np.int64 and x.shape == (4000,)
    assert x.min() >= 0 and x.max() < 2**bits
    top = (x >> (bits - 1)) & 1  # the highest bit is a fair coin
    assert abs(top.mean() - 0.5) < 6 * 0.5 / np.sqrt(4000)


# --- random_bits ---------------------------------------------------------------


def test_random_bits_are_fair_and_use_every_bit(seeded_source: RandomSource) -> None:
    b = random_bits(640_000)
    assert b.dtype == np.bool_ and b.shape == (640_000,)
    assert abs(b.mean() - 0.5) < 6 * 0.5 / np.sqrt(640_000)
    # Pairs of consecutive bits are uniform over the four patterns.
    pairs = b[0::2].astype(np.int64) * 2 + b[1::2]
    assert uniform_pvalue(pairs, 4) > P_MIN
    src = CountingSource(SeededRandomSource(4))
    random_bits(6400, src)
    assert src.words_drawn == 100
    random_bits(65, src)
    assert src.words_drawn == 102
    assert random_bits(0).shape == (0,)
    with pytest.raises(ValueError):
        random_bits(-1)


def test_word_buffer_never_reuses_words() -> None:
    inner = SeededRandomSource(5)
    reference = SeededRandomSource(5).words(200_000)
    buffered = rnd._WordBuffer(inner)
    pieces = [buffered.words(n) for n in [1, 3, 0, 64, 7, 200, 5000, 2, 40_000, 9] * 3]
    assert [p.size for p in pieces] == [1, 3, 0, 64, 7, 200, 5000, 2, 40_000, 9] * 3
    got = np.concatenate(pieces)
    # Every word handed out comes from the stream, and none twice.
    index = {int(w): i for i, w in enumerate(reference.tolist())}
    assert len(index) == reference.size  # (64-bit collisions: ~1e-9)
    where = [index[int(w)] for w in got.tolist()]
    assert len(set(where)) == len(where)
    assert rnd._buffered(buffered) is buffered


def test_doctests() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        result = doctest.testmod(rnd)
        import dpframe.testing

        result2 = doctest.testmod(dpframe.testing)
    assert result.failed == 0 and result.attempted > 0
    assert result2.failed == 0 and result2.attempted > 0


def test_word_buffer_integer_reads_the_same_words_as_words() -> None:
    # The exact scalar samplers read words as Python ints; seeded draws stay what they were only if
    # integer(n) is exactly the n words words(n) would have returned, in the same order, across refills.
    sizes = [1, 2, 1, 3, 1, 70, 1, 2, 200, 1] * 20
    as_ints, as_words = rnd._WordBuffer(SeededRandomSource(5)), rnd._WordBuffer(SeededRandomSource(5))
    for n in sizes:
        expected = int.from_bytes(as_words.words(n).tobytes(), "little")
        assert as_ints.integer(n) == expected
