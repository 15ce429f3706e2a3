"""Checking k-anonymity, l-diversity and t-closeness of a frame, in one group-by.

An *equivalence class* is the set of rows sharing the same values of the
quasi-identifiers. A frame is k-anonymous when every class has at least k
rows; l-diverse when every class holds at least l "well represented" values
of a sensitive column (distinct: l different values; entropy: entropy at
least log l); t-close when every class's distribution of the sensitive
value is within earth mover's distance t of the whole frame's.

None of this is differentially private, and none of it spends a privacy
budget. It runs on unprotected and protected frames alike (columns only).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.anonymity._encode import NOT_DP, IntArray, class_ids, columns_of, encode, row_key

FloatArray = NDArray[np.float64]


class AuditInt(int):
    """An integer measure of a frame (such as its k) whose repr says it is not differentially private.

    >>> k = AuditInt(3, "k-anonymity")
    >>> k, k + 1, str(k)
    (3 (k-anonymity; not differentially private; no privacy budget spent), 4, '3')
    """

    measure: str

    def __new__(cls, value: int, measure: str) -> AuditInt:
        obj = int.__new__(cls, value)
        obj.measure = measure
        return obj

    def __repr__(self) -> str:
        return f"{int(self)} ({self.measure}; {NOT_DP})"

    def __str__(self) -> str:
        return int.__repr__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (AuditInt, (int(self), self.measure))


class AuditFloat(float):
    """A real-valued measure of a frame (an entropy l, a t) whose repr says it is not differentially private.

    >>> t = AuditFloat(0.25, "t-closeness, equal distance")
    >>> t, t * 2
    (0.25 (t-closeness, equal distance; not differentially private; no privacy budget spent), 0.5)
    """

    measure: str

    def __new__(cls, value: float, measure: str) -> AuditFloat:
        obj = float.__new__(cls, value)
        obj.measure = measure
        return obj

    def __repr__(self) -> str:
        return f"{float(self)!r} ({self.measure}; {NOT_DP})"

    def __str__(self) -> str:
        return float.__repr__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (AuditFloat, (float(self), self.measure))


# --------------------------------------------------------------------------------------------------
# Sensitive-value statistics per class, from (class, value) pairs -- never a dense classes x values matrix.


@dataclass(frozen=True)
class SensitiveStats:
    """Per-class statistics of a sensitive column (arrays indexed by class number)."""

    distinct: IntArray
    entropy: FloatArray  # natural log
    emd_equal: FloatArray
    emd_ordered: FloatArray | None


def sensitive_stats(
    classes: IntArray,
    n_classes: int,
    values: IntArray,
    n_values: int,
    weights: IntArray | None = None,
    *,
    ordered: bool = False,
    global_counts: FloatArray | None = None,
) -> SensitiveStats:
    """Distinct count, entropy and earth mover's distances of each class's sensitive values.

    ``values`` are codes ``0..n_values-1`` (ranks in order, when ``ordered``);
    the reference distribution is that of all rows (or ``global_counts``).
    Equal distance: ``EMD = 1/2 * sum |p_i - q_i|``. Ordered distance:
    ``EMD = 1/(m-1) * sum_i |sum_{j<=i} (p_j - q_j)|`` over the m values
    (Li, Li & Venkatasubramanian 2007; ARX's definitions).

    >>> s = sensitive_stats(np.array([0, 0, 1, 1]), 2, np.array([0, 1, 0, 0]), 2, ordered=True)
    >>> s.distinct.tolist(), np.round(s.emd_equal, 3).tolist(), np.round(s.emd_ordered, 3).tolist()
    ([2, 1], [0.25, 0.25], [0.25, 0.25])
    """
    w = np.ones(len(classes), dtype=np.float64) if weights is None else weights.astype(np.float64)
    pair_key = classes * n_values + values
    pairs, inverse = np.unique(pair_key, return_inverse=True)
    counts = np.bincount(inverse.reshape(-1), weights=w, minlength=len(pairs))
    pc = pairs // n_values
    pv = pairs % n_values
    size = np.bincount(pc, weights=counts, minlength=n_classes)
    distinct = np.bincount(pc, minlength=n_classes).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.bincount(pc, weights=counts * np.log(counts), minlength=n_classes)
        entropy = np.where(size > 0, np.log(np.where(size > 0, size, 1)) - plogp / np.where(size > 0, size, 1), 0.0)
    entropy = np.maximum(entropy, 0.0)
    reference = np.bincount(values, weights=w, minlength=n_values) if global_counts is None else global_counts
    q = reference / reference.sum()
    p = counts / size[pc]
    emd_equal = 0.5 * (np.bincount(pc, weights=np.abs(p - q[pv]) - q[pv], minlength=n_classes) + 1.0)
    emd_equal = np.clip(emd_equal, 0.0, 1.0)
    emd_ordered = _ordered_emd(pc, pv, p, q, n_classes) if ordered else None
    return SensitiveStats(distinct, entropy, emd_equal, emd_ordered)


def _ordered_emd(pc: IntArray, pv: IntArray, p: FloatArray, q: FloatArray, n_classes: int) -> FloatArray:
    """Ordered-distance EMD per class from sorted (class, value) pairs, in O(pairs log m)."""
    m = len(q)
    if m <= 1:
        return np.zeros(n_classes)
    qc = np.cumsum(q)  # Q_i, i = 0..m-1
    prefix = np.concatenate([[0.0], np.cumsum(qc)])  # prefix[i] = Q_0 + ... + Q_{i-1}
    # Cumulative class distribution at each present value (pairs are sorted by class, then value).
    cum = np.cumsum(p)
    starts = np.flatnonzero(np.r_[True, pc[1:] != pc[:-1]])
    offset = np.repeat(cum[starts] - p[starts], np.diff(np.r_[starts, len(pc)]))
    big_p = cum - offset
    nxt = np.r_[pv[1:], m - 1]
    last = np.r_[pc[1:] != pc[:-1], True]
    nxt = np.where(last, m - 1, nxt)
    a, b = pv, np.maximum(nxt, pv)  # segment [a, b) where the class cumulative is big_p
    split = np.clip(np.searchsorted(qc, big_p, side="left"), a, b)
    below = big_p * (split - a) - (prefix[split] - prefix[a])
    above = (prefix[b] - prefix[split]) - big_p * (b - split)
    total = np.bincount(pc, weights=below + above, minlength=n_classes)
    first_values = pv[starts]
    total[pc[starts]] += prefix[first_values]  # before the first present value the class cumulative is 0
    return np.clip(total / (m - 1), 0.0, 1.0)


def sensitive_codes(series: pd.Series[Any], order: Sequence[Any] | None = None) -> tuple[IntArray, int]:
    """Codes of a sensitive column that are ranks in its order (given, categorical, or sorted values).

    Missing values come last.

    >>> codes, m = sensitive_codes(pd.Series([30, 10, 20, 10]))
    >>> codes.tolist(), m
    ([2, 0, 1, 0], 3)
    """
    if order is not None:
        index = pd.Index(list(order))
        if not index.is_unique:
            raise ValueError("order lists a value twice")
        codes = np.asarray(index.get_indexer(series), dtype=np.int64)
        unknown = (codes < 0) & ~np.asarray(series.isna())
        if unknown.any():
            raise ValueError(f"column {series.name!r} has {int(unknown.sum())} value(s) missing from order")
        card = len(index)
        if (codes < 0).any():
            codes = np.where(codes < 0, card, codes)
            card += 1
        return codes, card
    if isinstance(series.dtype, pd.CategoricalDtype):
        return encode(series)
    uniques = pd.unique(series.dropna().to_numpy())
    try:
        ranked = pd.Index(np.sort(uniques))
    except TypeError:
        ranked = pd.Index(sorted(uniques, key=str))
    codes = np.asarray(ranked.get_indexer(series), dtype=np.int64)
    card = len(ranked)
    if (codes < 0).any():
        codes = np.where(codes < 0, card, codes)
        card += 1
    return codes, max(card, 1)


# --------------------------------------------------------------------------------------------------
# Public checks.


def k_anonymity(df: pd.DataFrame, quasi_identifiers: Sequence[Hashable] | Hashable) -> AuditInt:
    """The k of a frame: the size of its smallest equivalence class on the quasi-identifiers.

    One group-by (O(n)), not the row-by-row O(n^2) loop. Missing values form
    classes of their own. Not differentially private; spends no budget (on a
    protected frame too).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": [42, 52, 36, 24, 73], "zip": [1, 1, 2, 2, 2]})
    >>> k_anonymity(df, ["zip"])
    2 (k-anonymity; not differentially private; no privacy budget spent)
    >>> k_anonymity(df, ["age", "zip"]) >= 2    # the book's isKAnonymized(df, 2)
    False
    """
    columns = columns_of(df, quasi_identifiers, "quasi_identifiers")
    if len(df) == 0:
        raise ValueError("k-anonymity of an empty frame is undefined")
    key, card = row_key(df, columns)
    sizes = np.bincount(class_ids(key, card)[0])
    return AuditInt(int(sizes.min()), "k-anonymity")


def l_diversity(
    df: pd.DataFrame,
    quasi_identifiers: Sequence[Hashable] | Hashable,
    sensitive: Hashable,
    *,
    kind: Literal["distinct", "entropy"] = "distinct",
) -> AuditInt | AuditFloat:
    """The l of a frame: the least diverse equivalence class's number of distinct sensitive values,
    or (``kind="entropy"``) ``exp`` of its entropy -- a class is entropy-l-diverse when ``entropy >= log l``.

    Not differentially private; spends no budget.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"zip": [1, 1, 1, 2, 2], "disease": ["flu", "flu", "cold", "hiv", "hiv"]})
    >>> l_diversity(df, ["zip"], "disease")
    1 (distinct l-diversity; not differentially private; no privacy budget spent)
    >>> round(l_diversity(df[df.zip == 1], ["zip"], "disease", kind="entropy"), 3)
    1.89
    """
    columns = columns_of(df, quasi_identifiers, "quasi_identifiers")
    (sensitive,) = columns_of(df, [sensitive], "sensitive")
    if kind not in ("distinct", "entropy"):
        raise ValueError(f"kind must be 'distinct' or 'entropy', got {kind!r}")
    if len(df) == 0:
        raise ValueError("l-diversity of an empty frame is undefined")
    key, card = row_key(df, columns)
    classes, n_classes = class_ids(key, card)
    values, n_values = encode(df[sensitive])
    stats = sensitive_stats(classes, n_classes, values, n_values)
    if kind == "distinct":
        return AuditInt(int(stats.distinct.min()), "distinct l-diversity")
    return AuditFloat(float(np.exp(stats.entropy.min())), "entropy l-diversity")


def t_closeness(
    df: pd.DataFrame,
    quasi_identifiers: Sequence[Hashable] | Hashable,
    sensitive: Hashable,
    *,
    distance: Literal["equal", "ordered"] = "equal",
    order: Sequence[Any] | None = None,
) -> AuditFloat:
    """The t of a frame: the largest earth mover's distance between a class's sensitive values and the frame's.

    ``distance="equal"``: every two values are at distance 1 (half the L1
    distance). ``"ordered"``: values at ranks i and j are ``|i - j| / (m - 1)``
    apart, in ``order`` (or the categorical order, or sorted order). Not
    differentially private; spends no budget.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"zip": [1, 1, 2, 2], "salary": [3, 4, 5, 6]})
    >>> t_closeness(df, ["zip"], "salary")
    0.5 (t-closeness, equal distance; not differentially private; no privacy budget spent)
    >>> round(t_closeness(df, ["zip"], "salary", distance="ordered"), 4)
    0.3333
    """
    columns = columns_of(df, quasi_identifiers, "quasi_identifiers")
    (sensitive,) = columns_of(df, [sensitive], "sensitive")
    if distance not in ("equal", "ordered"):
        raise ValueError(f"distance must be 'equal' or 'ordered', got {distance!r}")
    if len(df) == 0:
        raise ValueError("t-closeness of an empty frame is undefined")
    key, card = row_key(df, columns)
    classes, n_classes = class_ids(key, card)
    values, n_values = sensitive_codes(df[sensitive], order)
    stats = sensitive_stats(classes, n_classes, values, n_values, ordered=distance == "ordered")
    emd = stats.emd_ordered if distance == "ordered" else stats.emd_equal
    assert emd is not None
    return AuditFloat(float(emd.max()), f"t-closeness, {distance} distance")


@dataclass(frozen=True, eq=False)
class EquivalenceClasses:
    """The equivalence classes of a frame: one row per class with its size (and sensitive-value statistics).

    ``table`` holds the quasi-identifier values of each class and ``size``;
    with a sensitive column also ``distinct``, ``entropy_l`` (``exp`` of the
    entropy), ``t_equal`` and ``t_ordered``. ``row_class`` numbers the class
    of every row of the frame. Not differentially private; spends no budget.

    >>> import pandas as pd
    >>> ec = equivalence_classes(pd.DataFrame({"zip": [1, 1, 2]}), ["zip"])
    >>> ec.k, ec.rows_below(2), ec.row_class.tolist()
    (1, 1, [0, 0, 1])
    """

    quasi_identifiers: tuple[Hashable, ...]
    table: pd.DataFrame
    row_class: IntArray
    n_rows: int

    @property
    def k(self) -> int:
        """Size of the smallest class."""
        return int(self.table["size"].min()) if len(self.table) else 0

    def below(self, k: int) -> pd.DataFrame:
        """The classes with fewer than ``k`` rows, smallest first.

        >>> import pandas as pd
        >>> df = pd.DataFrame({"zip": [1, 1, 2, 3, 3, 3]})
        >>> equivalence_classes(df, ["zip"]).below(3)
           zip  size
        1    2     1
        0    1     2
        """
        small = self.table[self.table["size"] < k]
        return small.sort_values("size", kind="stable")

    def rows_below(self, k: int) -> int:
        """Number of rows in classes with fewer than ``k`` rows (what suppression to reach k would remove)."""
        sizes = self.table["size"].to_numpy()
        return int(sizes[sizes < k].sum())

    def __repr__(self) -> str:
        q = " + ".join(map(str, self.quasi_identifiers)) or "(no columns)"
        singles = int((self.table["size"] == 1).sum())
        return (
            f"EquivalenceClasses on {q}: {len(self.table):,} classes over {self.n_rows:,} rows, k={self.k}, "
            f"{singles:,} unique row(s) -- {NOT_DP}"
        )


def equivalence_classes(
    df: pd.DataFrame,
    quasi_identifiers: Sequence[Hashable] | Hashable,
    *,
    sensitive: Hashable | None = None,
    order: Sequence[Any] | None = None,
) -> EquivalenceClasses:
    """Group the rows by their quasi-identifiers (one pass) and describe every class.

    Not differentially private; spends no budget.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"zip": [1, 1, 2, 2, 2], "disease": ["flu", "flu", "cold", "hiv", "hiv"]})
    >>> ec = equivalence_classes(df, ["zip"], sensitive="disease")
    >>> ec.table.round(2)
       zip  size  distinct  entropy_l  t_equal  t_ordered
    0    1     2         1       1.00      0.6        0.3
    1    2     3         2       1.89      0.4        0.2
    >>> ec
    EquivalenceClasses on zip: 2 classes over 5 rows, k=2, 0 unique row(s) -- not differentially private; no privacy budget spent
    """
    columns = columns_of(df, quasi_identifiers, "quasi_identifiers")
    key, card = row_key(df, columns)
    classes, n_classes = class_ids(key, card)
    first = np.full(n_classes, len(df), dtype=np.int64)
    np.minimum.at(first, classes, np.arange(len(df), dtype=np.int64))
    table = df[columns].iloc[first].reset_index(drop=True) if n_classes else df[columns].iloc[:0].reset_index(drop=True)
    table.attrs = {}
    table["size"] = np.bincount(classes, minlength=n_classes)
    if sensitive is not None and n_classes:
        (sensitive,) = columns_of(df, [sensitive], "sensitive")
        values, n_values = sensitive_codes(df[sensitive], order)
        stats = sensitive_stats(classes, n_classes, values, n_values, ordered=True)
        table["distinct"] = stats.distinct
        table["entropy_l"] = np.exp(stats.entropy)
        table["t_equal"] = stats.emd_equal
        table["t_ordered"] = stats.emd_ordered
    return EquivalenceClasses(tuple(columns), table, classes, len(df))


__all__ = [
    "AuditFloat",
    "AuditInt",
    "EquivalenceClasses",
    "SensitiveStats",
    "equivalence_classes",
    "k_anonymity",
    "l_diversity",
    "sensitive_codes",
    "sensitive_stats",
    "t_closeness",
]
