"""Covariance and correlation matrices of bounded columns, from noisy sufficient statistics.

For ``d`` columns clipped to their declared bounds and centred on the bounds'
midpoints ``c_j`` (half-ranges ``r_j``), the release measures the number of
complete rows ``n``, the sums ``S_j = Σ (x_j − c_j)`` and the sums of
products ``Q_jk = Σ (x_j − c_j)(x_k − c_k)`` for ``j ≤ k``: ``m = 1 + d +
d(d+1)/2`` statistics, each a bounded sum (sensitivity ``r_j``, ``r_j r_k``
per row) with exact discrete noise and an equal share ``1/m`` of the budget
(sequential composition; the whole cost reserved before any data is read).
The matrices are post-processing:

``cov_jk = (Q_jk − S_j S_k / n) / (n − 1)``, ``corr_jk = cov_jk / sqrt(cov_jj cov_kk)``

(clamped to [−1, 1], and marked where it is: :func:`~dpframe.results.at_bound`;
the diagonal of ``corr`` is 1). Rows with a missing value in any of the
columns are left out (listwise, where pandas goes pairwise). Bounds must be
declared: they set every statistic's noise. The matrices carry no intervals
(the note says so); a noisy covariance matrix need not be positive
semi-definite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpframe.queries import scalar
from dpframe.queries.plan import Target, check_bounds, check_numeric
from dpframe.results import Release, with_release

LEVEL = 0.95


def _shared(target: Target, obj: pd.DataFrame | pd.Series[Any]) -> Target:
    """A target of ``obj`` (rows of ``target``) that draws from ``target``'s reservation and receipts."""
    return Target(obj, target.protection, target.sample, target.receipts, target.reservations)


def covariance(
    target: Target, columns: Sequence[Any] | None, bounds: Any, *, epsilon: float | None, delta: float | None,
    rho: float | None, mechanism: str | None, correlation: bool,
) -> pd.DataFrame:
    """``cov`` (or ``corr`` with ``correlation=True``) of ``columns`` (default: every column), all bounded.

    >>> import numpy as np, pandas as pd, dpframe
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 10, 20_000)
    >>> df = pd.DataFrame({"x": x, "y": 2 * x + rng.uniform(0, 1, 20_000)})
    >>> p = df.dp.protect(epsilon=10.0)
    >>> c = p.dp.corr(bounds={"x": (0, 10), "y": (0, 21)}, epsilon=5.0)
    >>> bool(c.loc["x", "y"] > 0.98), c.attrs["dp"].query
    (True, 'corr')
    """
    query = "corr" if correlation else "cov"
    frame = target.obj
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{query} is a question about a DataFrame's columns")
    names = list(frame.columns) if columns is None else list(columns)
    if len(names) < 2 and correlation:
        raise ValueError("corr needs at least two columns")
    if not isinstance(bounds, Mapping):
        raise TypeError(f"{query} needs bounds={{column: (lower, upper)}} for every column: they set the noise")
    missing = [str(c) for c in names if c not in bounds]
    if missing:
        raise ValueError(f"{query} needs bounds for {missing} (declared from the domain; not chosen privately here)")
    limits = {}
    for column in names:
        check_numeric(target.column(column), query)
        limits[column] = check_bounds(bounds[column])
    d = len(names)
    pairs = [(j, k) for j in range(d) for k in range(j, d)]
    parts = 1 + d + len(pairs)
    shares = [None if value is None else value / parts for value in (epsilon, delta, rho)]
    privacy = target.privacy(shares[0], shares[1], shares[2], mechanism)
    target.reserve(*([privacy.cost] * parts), query=f"{query} of {d} columns")

    data = frame[names]
    complete = data.notna().all(axis=1).to_numpy()
    rows = frame[complete]
    centres = {c: (lo + hi) / 2 for c, (lo, hi) in limits.items()}
    reach = {c: (hi - lo) / 2 for c, (lo, hi) in limits.items()}
    centred = {c: (rows[c].astype(float).clip(*limits[c]) - centres[c]).rename(f"{c} centred") for c in names}
    rows_counted = scalar.count(_shared(target, rows), privacy)
    n = float(rows_counted)
    sums = np.array([float(scalar.bounded_sum(_shared(target, centred[c]), centred[c], (-reach[c], reach[c]),
                                              privacy, clipping=False)) for c in names])
    products = np.zeros((d, d))
    for j, k in pairs:
        a, b = names[j], names[k]
        product = (centred[a] * centred[b]).rename(f"{a} x {b}")
        limit = reach[a] * reach[b]
        products[j, k] = products[k, j] = float(
            scalar.bounded_sum(_shared(target, product), product, (-limit, limit), privacy, clipping=False))
    count = max(n, 2.0)
    matrix = (products - np.outer(sums, sums) / count) / (count - 1)
    if correlation:
        scale = np.sqrt(np.clip(np.diag(matrix), 1e-300, None))
        matrix = np.clip(matrix / np.outer(scale, scale), -1.0, 1.0)
        np.fill_diagonal(matrix, 1.0)
    result = pd.DataFrame(matrix, index=pd.Index(names), columns=pd.Index(names))
    nan = result * np.nan
    # A correlation off the diagonal (which is 1 by definition) was clamped to [-1, 1].
    ends = pd.DataFrame(np.where(np.eye(d, dtype=bool), np.nan, 1.0), index=result.index, columns=result.columns)
    note = (f"from {parts} noisy sufficient statistics (the count of complete rows, {d} sums, {len(pairs)} sums of "
            f"products of the values clipped to their bounds and centred), each with 1/{parts} of the budget; no "
            "intervals; rows missing any of the columns are left out")
    release = Release(query, tuple(map(str, names)), rows_counted.mechanism, target.spent, nan, nan, nan, LEVEL,
                      None, note, clamp=(-ends, ends) if correlation else None)
    return with_release(result, release)  # type: ignore[no-any-return]
