"""Test-only helpers.  Nothing in this module is differentially private.

The one switch here, :func:`seeded_noise`, makes dpframe's noise reproducible
so tests can assert exact outputs.  Reproducible noise is, by construction,
not private: whoever knows the seed can regenerate the noise and subtract it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from dpframe.noise.random import SeededRandomSource, _reset_seeded_source, _set_seeded_source

__all__ = ["NotPrivateWarning", "seeded_noise"]


class NotPrivateWarning(UserWarning):
    """Warns that results are being produced with seeded, non-private noise."""


@contextmanager
def seeded_noise(seed: int) -> Iterator[SeededRandomSource]:
    """Make all dpframe noise reproducible from ``seed`` -- FOR TESTS ONLY.

    .. warning::

       RESULTS PRODUCED INSIDE THIS BLOCK ARE NOT DIFFERENTIALLY PRIVATE.
       The noise comes from numpy's PCG64 seeded with ``seed``; anyone who
       knows or guesses the seed can recompute the noise and remove it.
       Never use this on real data or publish anything produced under it.

    While the block is active, :func:`dpframe.noise.random.current_source`
    returns a :class:`~dpframe.noise.random.SeededRandomSource` for ``seed``
    (yielded by the context manager) instead of the secure system source,
    and :func:`dpframe.noise.random.is_seeded` returns True so releases can
    be labelled "seeded (not private)".  A :class:`NotPrivateWarning` is
    emitted on entry.  This is the only supported way to get reproducible
    noise.

    The switch is context-local (:mod:`contextvars`): it affects the code
    inside the block -- this thread or asyncio task -- and not other threads,
    whose queries keep the secure source and are not marked seeded. Blocks
    nest: on exit the previous state is restored. The ledger marks a release
    ``seeded`` when it is made inside the block.

    >>> import warnings
    >>> from dpframe.noise.discrete import sample_discrete_laplace
    >>> from fractions import Fraction
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with seeded_noise(5):
    ...         a = sample_discrete_laplace(Fraction(2), 6)
    ...     with seeded_noise(5):
    ...         b = sample_discrete_laplace(Fraction(2), 6)
    >>> a.tolist() == b.tolist()
    True
    >>> [w.category.__name__ for w in caught]
    ['NotPrivateWarning', 'NotPrivateWarning']
    """
    source = SeededRandomSource(seed)
    warnings.warn(
        f"seeded_noise({seed}) is active: noise is reproducible and results are NOT "
        "differentially private (tests only)",
        NotPrivateWarning,
        stacklevel=3,  # generator -> contextlib.__enter__ -> the with-statement
    )
    token = _set_seeded_source(source)
    try:
        yield source
    finally:
        _reset_seeded_source(token)
