"""What breaks without differential privacy: linkage, uniqueness and differencing attacks.

These are teaching and audit tools (Near & Abuah, *Programming Differential
Privacy*, ch. 2; Sweeney's re-identification of Governor Weld from ZIP code,
birth date and sex). **Nothing here is differentially private**: the
linkage and uniqueness tools read the raw columns and report exact
results about individuals, and :func:`differencing_attack` shows the exact
value of a person recovered by two plain aggregates. They spend no privacy
budget: on a protected frame they read the columns only, and the private
half of the differencing demonstration runs on a fresh copy with a budget of
its own, never the frame's.

>>> import dpframe.attacks as attacks
>>> people = attacks.synthetic_population(2_000, seed=1)
>>> released = people.drop(columns=["name"])              # "de-identified"
>>> voters = people[["name", "zip", "birth_date", "sex"]]  # public, with names
>>> res = attacks.linkage_attack(released, voters, identity="name")
>>> res.rate > 0.9
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.anonymity._encode import NOT_DP, IntArray, columns_of, combine, compact, encode
from dpframe.protection.base import refuse_protected

MaskLike = Any  # a boolean Series aligned with the frame, a boolean array, or a callable frame -> mask

# ------------------------------------------------------------------------------------------------
# Linkage


@dataclass(frozen=True, eq=False)
class LinkageResult:
    """The outcome of joining a released frame with auxiliary data on shared quasi-identifiers.

    ``matches`` counts, per auxiliary identity, the released rows compatible
    with it; an identity with exactly one match is re-identified, and
    ``links`` holds its released row (all columns, indexed by identity, with
    the released row's label in ``released_row``). ``candidate_sizes`` is the
    distribution of ``matches``; ``tie_breakers`` says, for every other
    column both frames share, how many identities would be re-identified if
    the attacker also knew it. NOT differentially private; no budget spent.

    >>> import pandas as pd
    >>> res = linkage_attack(pd.DataFrame({"zip": [1, 1, 2]}), pd.DataFrame({"zip": [1, 2, 3]}))
    >>> res.candidate_sizes.to_dict(), round(res.rate, 3)
    ({0: 1, 1: 1, 2: 1}, 0.333)
    """

    on: tuple[Hashable, ...]
    matches: pd.Series[Any]
    links: pd.DataFrame
    tie_breakers: pd.DataFrame
    missing: str

    @property
    def reidentified(self) -> int:
        """Identities with exactly one matching released row."""
        return int((self.matches == 1).sum())

    @property
    def rate(self) -> float:
        """The re-identification rate: the fraction of identities with exactly one match."""
        return self.reidentified / len(self.matches) if len(self.matches) else 0.0

    @property
    def candidate_sizes(self) -> pd.Series[Any]:
        """How many identities have 0, 1, 2, ... matching released rows."""
        sizes = self.matches.value_counts().sort_index()
        sizes.index.name = "candidates"
        sizes.name = "identities"
        return sizes

    def __repr__(self) -> str:
        n = len(self.matches)
        none = int((self.matches == 0).sum())
        ties = int((self.matches > 1).sum())
        text = (
            f"LinkageResult on {' + '.join(map(str, self.on))}: {n:,} identities, {self.reidentified:,} re-identified "
            f"({self.rate:.1%}), {ties:,} tied, {none:,} unmatched"
        )
        if len(self.tie_breakers):
            top = self.tie_breakers.iloc[0]
            text += f"; adding {self.tie_breakers.index[0]!r} would re-identify {int(top['reidentified']):,}"
        return text + f" -- {NOT_DP}"


def _joint_codes(
    released: pd.DataFrame, auxiliary: pd.DataFrame, on: Sequence[Hashable]
) -> tuple[list[tuple[IntArray, int]], NDArray[np.bool_]]:
    """Codes of each column over both frames together (released rows first) and the missing-value mask."""
    parts = []
    missing = np.zeros((len(released) + len(auxiliary), len(on)), dtype=bool)
    for j, column in enumerate(on):
        joint = pd.concat([released[column], auxiliary[column]], ignore_index=True)
        if isinstance(joint.dtype, pd.CategoricalDtype):
            joint = joint.astype(object)
        parts.append(encode(joint))
        missing[:, j] = np.asarray(joint.isna())
    return parts, missing


def _groups(patterns: IntArray) -> list[tuple[int, NDArray[np.intp]]]:
    """Row positions of each distinct missing-value pattern."""
    values, inverse = np.unique(patterns, return_inverse=True)
    order = np.argsort(inverse.reshape(-1), kind="stable")
    bounds = np.searchsorted(inverse.reshape(-1)[order], np.arange(len(values) + 1))
    return [(int(v), order[bounds[i] : bounds[i + 1]]) for i, v in enumerate(values)]


def _count_matches(
    parts: list[tuple[IntArray, int]], missing: NDArray[np.bool_], n_released: int, mode: str
) -> tuple[IntArray, NDArray[np.float64]]:
    """Per auxiliary row: number of compatible released rows, and the sum of their positions."""
    n_total = missing.shape[0]
    n_aux = n_total - n_released
    counts = np.zeros(n_aux, dtype=np.int64)
    position_sum = np.zeros(n_aux, dtype=np.float64)
    positions = np.arange(n_released, dtype=np.float64)
    q = len(parts)
    if mode == "exact" or not missing.any():
        patterns = np.zeros(n_total, dtype=np.int64)
    else:
        patterns = (missing.astype(np.int64) << np.arange(q, dtype=np.int64)).sum(axis=1)
    released_groups = _groups(patterns[:n_released])
    for pa, aux_rows in _groups(patterns[n_released:]):
        for pr, rel_rows in released_groups:
            shared = [j for j in range(q) if mode == "exact" or not ((pa >> j) & 1 or (pr >> j) & 1)]
            rows = np.concatenate([rel_rows, n_released + aux_rows])
            key, card = combine([(parts[j][0][rows], parts[j][1]) for j in shared], len(rows))
            ids, m = compact(key, card)
            rel_ids, aux_ids = ids[: len(rel_rows)], ids[len(rel_rows) :]
            counts[aux_rows] += np.bincount(rel_ids, minlength=m)[aux_ids]
            position_sum[aux_rows] += np.bincount(rel_ids, weights=positions[rel_rows], minlength=m)[aux_ids]
    return counts, position_sum


def linkage_attack(
    released: pd.DataFrame,
    auxiliary: pd.DataFrame,
    on: Sequence[Hashable] | None = None,
    *,
    identity: Hashable | None = None,
    extra: Sequence[Hashable] | None = None,
    missing: Literal["match_any", "exact"] = "match_any",
) -> LinkageResult:
    """Join a de-identified frame with identified auxiliary data on their shared quasi-identifiers.

    For every auxiliary identity (the ``identity`` column, or the auxiliary
    index), count the released rows that agree on the ``on`` columns
    (default: every column the frames share, except ``identity``). Values of
    any type are compared for equality. With ``missing="match_any"`` a
    missing value, in either frame, is unknown and agrees with anything;
    with ``"exact"`` it only matches another missing value (as in
    ``pd.merge``). ``extra`` (default: the other shared columns) are tried
    one at a time as tie-breakers. The book's linking attack (ch. 2.1).

    NOT differentially private (it reports exact facts about individuals);
    spends no privacy budget.

    >>> import pandas as pd
    >>> released = pd.DataFrame({"zip": [1, 1, 2, 3], "dob": ["a", "b", "c", "c"],
    ...                          "sex": ["F", "M", "F", "M"], "income": [10, 20, 30, 40]})
    >>> aux = pd.DataFrame({"name": ["Ann", "Bob", "Cy"], "zip": [1, 2, 9], "sex": ["F", "F", "M"],
    ...                     "dob": ["a", "c", "d"]})
    >>> res = linkage_attack(released, aux, on=["zip"], identity="name")
    >>> res.matches.tolist(), res.reidentified
    ([2, 1, 0], 1)
    >>> res.links["income"].to_dict(), res.links["released_row"].to_dict()   # Bob's income is out
    ({'Bob': 30}, {'Bob': 2})
    >>> res.tie_breakers
         reidentified      rate  resolved_ties
    sex             2  0.666667              1
    dob             2  0.666667              1
    """
    refuse_protected(released, "linkage_attack")
    if not isinstance(released, pd.DataFrame) or not isinstance(auxiliary, pd.DataFrame):
        raise TypeError("linkage_attack needs two DataFrames: the released data and the auxiliary data")
    if missing not in ("match_any", "exact"):
        raise ValueError(f"missing must be 'match_any' or 'exact', got {missing!r}")
    if identity is not None:
        columns_of(auxiliary, [identity], "identity")
    shared = [c for c in auxiliary.columns if c in released.columns and c != identity]
    on_columns = shared if on is None else columns_of(released, on, "on")
    if on is not None:
        columns_of(auxiliary, on_columns, "on")
    if not on_columns:
        raise ValueError("the released and auxiliary frames share no column to join on")
    extra_columns = [c for c in shared if c not in on_columns] if extra is None else list(extra)
    columns_of(released, extra_columns, "extra")
    columns_of(auxiliary, extra_columns, "extra")

    labels = auxiliary[identity] if identity is not None else auxiliary.index.to_series()
    index = pd.Index(labels.to_numpy(), name=identity if identity is not None else auxiliary.index.name)
    parts, miss = _joint_codes(released, auxiliary, on_columns)
    counts, position_sum = _count_matches(parts, miss, len(released), missing)
    matches = pd.Series(counts, index=index, name="matches")

    unique = np.flatnonzero(counts == 1)
    rows = np.rint(position_sum[unique]).astype(np.int64)
    links = released.iloc[rows].copy()
    links.attrs = {}
    links["released_row"] = list(released.index[rows])
    links.index = index[unique]

    breakers = []
    for column in extra_columns:
        extra_parts, extra_miss = _joint_codes(released, auxiliary, [column])
        more, _ = _count_matches(parts + extra_parts, np.hstack([miss, extra_miss]), len(released), missing)
        breakers.append(
            {
                "column": column,
                "reidentified": int((more == 1).sum()),
                "rate": float((more == 1).mean()) if len(more) else 0.0,
                "resolved_ties": int(((counts > 1) & (more == 1)).sum()),
            }
        )
    tie_breakers = pd.DataFrame(breakers, columns=["column", "reidentified", "rate", "resolved_ties"])
    tie_breakers = tie_breakers.set_index("column").sort_values("reidentified", ascending=False, kind="stable")
    tie_breakers.index.name = None
    return LinkageResult(tuple(on_columns), matches, links, tie_breakers, missing)


# ------------------------------------------------------------------------------------------------
# Uniqueness


@dataclass(frozen=True, eq=False)
class UniquenessReport:
    """How many rows are unique on each subset of some columns. NOT differentially private; no budget spent.

    ``table`` has one row per subset (index: the column names joined by
    ``" + "``) with ``n_columns``, ``unique_rows``, ``unique_fraction``,
    ``classes`` and ``smallest_class`` (the subset's k).

    >>> import pandas as pd
    >>> uniqueness(pd.DataFrame({"zip": [1, 1, 2], "sex": ["F", "M", "F"]}), ["zip", "sex"]).fraction
    1.0
    """

    columns: tuple[Hashable, ...]
    table: pd.DataFrame
    n_rows: int

    @property
    def fraction(self) -> float:
        """Fraction of rows unique on all the columns together."""
        return float(self.table["unique_fraction"].iloc[-1]) if len(self.table) else 0.0

    def __repr__(self) -> str:
        head = self.table.sort_values("unique_fraction", ascending=False, kind="stable").head(3)
        best = "; ".join(f"{name}: {row.unique_fraction:.1%}" for name, row in head.iterrows())
        return (
            f"UniquenessReport over {self.n_rows:,} rows, {len(self.table):,} column set(s); "
            f"all {len(self.columns)} together: {self.fraction:.1%} unique; most identifying: {best} -- {NOT_DP}"
        )


def uniqueness(
    df: pd.DataFrame,
    columns: Sequence[Hashable] | Hashable,
    *,
    subsets: bool = True,
    max_columns: int = 12,
) -> UniquenessReport:
    """Fraction of rows unique on the columns, and (``subsets=True``) on every non-empty subset of them.

    One group-by per subset, each built from its parent subset's class
    numbers. Missing values count as a value. The table is sorted by the
    number of columns (the full set last). NOT differentially private; spends
    no privacy budget.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"zip": [1, 1, 2, 2], "sex": ["F", "M", "F", "F"]})
    >>> uniqueness(df, ["zip", "sex"]).table
               n_columns  unique_rows  unique_fraction  classes  smallest_class
    zip                1            0             0.00        2               2
    sex                1            1             0.25        2               1
    zip + sex          2            2             0.50        3               1
    """
    names = columns_of(df, columns, "columns")
    if not names:
        raise ValueError("uniqueness needs at least one column")
    if subsets and len(names) > max_columns:
        raise ValueError(
            f"{len(names)} columns have {2 ** len(names) - 1:,} subsets; pass at most max_columns={max_columns} "
            "columns, raise max_columns, or use subsets=False"
        )
    n = len(df)
    codes = [encode(df[c]) for c in names]
    records: list[dict[str, Any]] = []

    def describe(chosen: tuple[int, ...], ids: IntArray, m: int) -> None:
        sizes = np.bincount(ids, minlength=m) if n else np.zeros(0, dtype=np.int64)
        unique_rows = int((sizes == 1).sum())
        records.append(
            {
                "name": " + ".join(str(names[j]) for j in chosen),
                "order": chosen,
                "n_columns": len(chosen),
                "unique_rows": unique_rows,
                "unique_fraction": unique_rows / n if n else 0.0,
                "classes": int(m) if n else 0,
                "smallest_class": int(sizes.min()) if n else 0,
            }
        )

    def grow(chosen: tuple[int, ...], ids: IntArray, m: int) -> None:
        for j in range(chosen[-1] + 1 if chosen else 0, len(names)):
            key, card = combine([(ids, m), codes[j]], n)
            new_ids, new_m = compact(key, card)
            describe(chosen + (j,), new_ids, new_m)
            if j < len(names) - 1:
                grow(chosen + (j,), new_ids, new_m)

    if subsets:
        grow((), np.zeros(n, dtype=np.int64), 1)
    else:
        key, card = combine(codes, n)
        describe(tuple(range(len(names))), *compact(key, card))
    table = pd.DataFrame(records)
    table = table.sort_values(["n_columns", "order"], kind="stable").set_index("name")
    table.index.name = None
    table = table.drop(columns="order")
    return UniquenessReport(tuple(names), table, n)


# ------------------------------------------------------------------------------------------------
# Differencing


@dataclass(frozen=True, eq=False)
class DifferencingResult:
    """Two aggregates whose difference is one person's data: exact in pandas, hidden by noise through ``.dp``.

    ``plain_difference`` (= ``plain_total - plain_rest``) equals
    ``true_value`` exactly. ``dp_difference`` is the same difference of two
    noisy answers (each spending ``epsilon`` from a demonstration budget of
    its own), with noise standard deviation ``dp_std``. The plain half is NOT
    differentially private; the frame's own budget is never touched.

    >>> import pandas as pd
    >>> from dpframe.testing import seeded_noise
    >>> df = pd.DataFrame({"x": [5.0, 1.0, 2.0] * 10})
    >>> with seeded_noise(1):
    ...     res = differencing_attack(df, "x", df.index == 0, bounds=(0, 10))
    >>> res.plain_difference, res.dp_std > 10
    (5.0, True)
    """

    column: Hashable
    aggregate: str
    targets: int
    true_value: float
    plain_total: float
    plain_rest: float
    dp_total: float
    dp_rest: float
    dp_std: float
    epsilon: float
    mechanism: str

    @property
    def plain_difference(self) -> float:
        """What plain pandas reveals: exactly the target's value."""
        return self.plain_total - self.plain_rest

    @property
    def dp_difference(self) -> float:
        """The same difference through ``.dp``: the target's value plus noise of std ``dp_std``."""
        return self.dp_total - self.dp_rest

    def __repr__(self) -> str:
        what = f"{self.aggregate} of {self.column!r}" if self.aggregate == "sum" else f"count of {self.column!r}"
        return (
            f"DifferencingResult({what}, {self.targets} target row(s): plain pandas "
            f"{self.plain_total:.6g} - {self.plain_rest:.6g} = {self.plain_difference:.6g}, exactly the target's "
            f"{self.true_value:.6g}; through .dp (ε={self.epsilon:g} per query, {self.mechanism}) "
            f"{self.dp_total:.6g} - {self.dp_rest:.6g} = {self.dp_difference:.6g}, noise std {self.dp_std:.3g} -- "
            f"the plain half is not differentially private; the frame's budget was not touched)"
        )


def _mask(df: pd.DataFrame, target: MaskLike) -> NDArray[np.bool_]:
    if callable(target):
        target = target(df)
    if isinstance(target, pd.Series):
        if not target.index.equals(df.index):
            raise ValueError("target must be a boolean Series with the frame's index (e.g. df['name'] == 'Ann')")
        target = target.to_numpy()
    mask = np.asarray(target)
    if mask.dtype != bool or mask.shape != (len(df),):
        raise ValueError(f"target must select rows with {len(df)} booleans, got {mask.dtype} of shape {mask.shape}")
    return mask


def differencing_attack(
    df: pd.DataFrame,
    column: Hashable,
    target: MaskLike | Callable[[pd.DataFrame], Any],
    *,
    aggregate: Literal["sum", "count"] = "sum",
    bounds: tuple[float, float] | None = None,
    epsilon: float = 1.0,
    mechanism: str | None = None,
) -> DifferencingResult:
    """The two-aggregates trick (book ch. 2.2): ``sum(all) - sum(all but the target)`` is the target's value.

    ``target`` selects the person's row(s): a boolean Series aligned with
    ``df``, a boolean array, or a callable ``df -> mask``. ``aggregate="sum"``
    sums ``column`` (``bounds`` are the clipping bounds of the private sums);
    ``"count"`` counts the rows where the boolean ``column`` is true (does
    the target have the property?). The same two queries then run through
    ``.dp`` on a fresh protected copy of the two columns with its own
    demonstration budget of ``2 * epsilon`` -- never the frame's budget -- to
    show the noise hiding the individual.

    The plain half is NOT differentially private (it reveals the target's
    value exactly).

    >>> import pandas as pd
    >>> from dpframe.testing import seeded_noise
    >>> df = pd.DataFrame({"name": ["Karrie", "Bob", "Ann"] * 100, "age": [39, 50, 38] * 100})
    >>> karrie = (df["name"] == "Karrie") & (df.index == 0)
    >>> with seeded_noise(0):
    ...     res = differencing_attack(df, "age", karrie, bounds=(0, 125), epsilon=0.5)
    >>> res.plain_difference, res.true_value, res.dp_std > 100
    (39.0, 39.0, True)
    """
    (column,) = columns_of(df, [column], "column")
    if aggregate not in ("sum", "count"):
        raise ValueError(f"aggregate must be 'sum' or 'count', got {aggregate!r}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not epsilon > 0:
        raise ValueError(f"epsilon must be a positive number, got {epsilon!r}")
    mask = _mask(df, target)
    values = df[column]
    if aggregate == "sum":
        if bounds is None:
            raise ValueError("aggregate='sum' needs bounds=(lower, upper) for the private sums")
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            raise TypeError(f"column {column!r} must be numeric for aggregate='sum'")
        numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
        plain_total = float(np.nansum(numbers))
        plain_rest = float(np.nansum(numbers[~mask]))
        true_value = float(np.nansum(numbers[mask]))
    else:
        if not pd.api.types.is_bool_dtype(values):
            raise TypeError(f"column {column!r} must be boolean for aggregate='count' (e.g. df['income'] > 50_000)")
        flags = values.to_numpy(dtype=bool, na_value=False)
        plain_total = float(flags.sum())
        plain_rest = float(flags[~mask].sum())
        true_value = float(flags[mask].sum())

    import dpframe

    demo = pd.DataFrame({"value": values.to_numpy(), "rest": ~mask})
    # A demonstration of the mechanism, not an analysis: its own throwaway ledger, so it can be repeated.
    protected = demo.dp.protect(epsilon=2 * epsilon, ledger=dpframe.Ledger.in_memory())
    rest = protected[protected["rest"]]
    if aggregate == "sum":
        dp_total = protected["value"].dp.sum(bounds=bounds, epsilon=epsilon, mechanism=mechanism)
        dp_rest = rest["value"].dp.sum(bounds=bounds, epsilon=epsilon, mechanism=mechanism)
    else:
        flagged = protected["value"].astype(bool)
        dp_total = protected[flagged].dp.count(epsilon=epsilon, mechanism=mechanism)
        dp_rest = rest[rest["value"].astype(bool)].dp.count(epsilon=epsilon, mechanism=mechanism)
    return DifferencingResult(
        column=column,
        aggregate=aggregate,
        targets=int(mask.sum()),
        true_value=true_value,
        plain_total=plain_total,
        plain_rest=plain_rest,
        dp_total=float(dp_total),
        dp_rest=float(dp_rest),
        dp_std=math.hypot(dp_total.std, dp_rest.std),
        epsilon=float(epsilon),
        mechanism=dp_total.mechanism,
    )


# ------------------------------------------------------------------------------------------------
# A population to attack

_FIRST = (
    "Ada Alan Alice Amir Ana Ben Beth Carl Chen Chloe Dan Dana Eli Emma Eva Femi Finn Gia Hana Hugo Ida Ivan "
    "Jack Jade Jin Kai Kara Lars Lea Leo Lina Luca Maya Max Mia Nia Noah Omar Pia Raj Rosa Sam Sara Tom Uma Zoe"
).split()
_LAST = (
    "Abe Berg Cole Diaz Ek Fox Gray Hill Ito Jones Kim Lee Lund Moss Nagy Novak Ortiz Park Quinn Rossi Sato "
    "Silva Smith Tan Ueda Vogel Wang Ward Weiss Wong Xu Yang Young Zhou Ng Roth Katz Lowe Marsh Perez"
).split()
_DIAGNOSES = ("none", "asthma", "diabetes", "hypertension", "depression", "cancer")


def synthetic_population(n: int = 10_000, *, seed: int = 0, zips: int = 100) -> pd.DataFrame:
    """A generated population with identities and sensitive data, to attack (no real person in it).

    Columns: ``name`` (unique), ``zip`` (5-digit text, ``zips`` different
    codes), ``birth_date`` (1930-2005), ``sex``, ``diagnosis`` and
    ``income``. Deterministic for a given ``seed``.

    >>> people = synthetic_population(5, seed=0)
    >>> list(people.columns), people["name"].is_unique
    (['name', 'zip', 'birth_date', 'sex', 'diagnosis', 'income'], True)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    combos = len(_FIRST) * 26 * len(_LAST)
    picks = rng.choice(combos, size=min(n, combos), replace=False)
    if n > combos:
        picks = np.concatenate([picks, rng.integers(0, combos, n - combos)])
    first, rest = np.divmod(picks, 26 * len(_LAST))
    middle, last = np.divmod(rest, len(_LAST))
    names = [f"{_FIRST[f]} {chr(65 + m)}. {_LAST[s]}" for f, m, s in zip(first, middle, last)]
    if n > combos:
        names = [f"{name} ({i})" if i >= combos else name for i, name in enumerate(names)]
    zip_pool = np.sort(rng.choice(90_000, size=zips, replace=False) + 10_000).astype(str)
    zip_weights = rng.dirichlet(np.ones(zips))
    start = np.datetime64("1930-01-01")
    days = int((np.datetime64("2005-12-31") - start).astype(int))
    birth = start + rng.integers(0, days + 1, n).astype("timedelta64[D]")
    income = np.round(rng.lognormal(10.5, 0.6, n), -2).astype(np.int64)
    return pd.DataFrame(
        {
            "name": names,
            "zip": rng.choice(zip_pool, size=n, p=zip_weights),
            "birth_date": pd.to_datetime(birth),
            "sex": rng.choice(["F", "M"], size=n),
            "diagnosis": rng.choice(_DIAGNOSES, size=n, p=[0.55, 0.1, 0.1, 0.15, 0.07, 0.03]),
            "income": income,
        }
    )


__all__ = [
    "DifferencingResult",
    "LinkageResult",
    "UniquenessReport",
    "differencing_attack",
    "linkage_attack",
    "synthetic_population",
    "uniqueness",
]
