"""Queries over disjoint partitions: histogram, value_counts, crosstab and group-by.

Each row falls in at most one partition, so every partition gets the query's
whole budget (parallel composition); a privacy unit with up to k rows can
touch k partitions, which the sensitivity k accounts for.

Partition keys must be public: declared with ``keys=``, the categories of a
categorical dtype, or False/True for booleans. Declared keys that do not occur
still get a noisy answer, since their absence would leak. Otherwise, with
delta > 0, keys are selected privately (Korolova et al. 2009; Google's DP
SQL 2020): the noisy count of each observed key is released only if it clears
a threshold set so that a key contributed by a single unit appears with
probability at most delta.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.costs import Cost
from dpframe.noise.mechanism import NoiseSpec, Privacy, SumGrid, float_below
from dpframe.errors import RefusedError
from dpframe.protection.labels import index_of, product_index
from dpframe.protection.units import GroupChoice, keyed_hashes, remembered_group_choice, unit_ids
from dpframe.queries import kernels
from dpframe.queries.bounds import (
    BoundsReads,
    automatic_bounds,
    bounds_note,
    pure_share,
    query_share,
    schema_bounds,
    split_privacy,
)
from dpframe.queries.grouped import ColumnGroupBy, aggregate, named_parts, parts_of
from dpframe.queries.plan import GroupBounds, Plan, Target, check_bounds, check_numeric, public_keys
from dpframe.queries.preview import Preview
from dpframe.queries.preview import preview as preview_query
from dpframe.queries.scalar import LEVEL, Moments, few_rows, moment_result, value_range, with_bounds
from dpframe.results import OTHER, Release, current_release, with_release

if TYPE_CHECKING:
    from dpframe.queries.select import QuantileReads  # select builds on this module

KeySpec = Mapping[Any, Sequence[Any]] | Sequence[Any] | None


@dataclass(frozen=True)
class Partitioning:
    """How rows map to partitions, decided from the schema and the declared keys."""

    columns: tuple[Any, ...]
    keys: tuple[pd.Index[Any] | None, ...]
    # Which columns' keys are categories released earlier by private selection (remembered, not declared):
    # their queries count the rows outside them too, so that a value not seen then is not dropped silently.
    remembered: tuple[bool, ...] = ()

    @classmethod
    def of(cls, target: Target, columns: Sequence[Any], keys: KeySpec) -> Partitioning:
        """Validate the columns and find their public keys (None where there are none).

        Public keys are declared, a categorical dtype's, booleans', or the
        categories an earlier query on this protection released by private
        selection for the same expression (its lineage, not its label:
        :mod:`dpframe.protection.lineage`).
        """
        if isinstance(keys, Mapping):
            unknown = set(keys) - set(columns)
            if unknown:
                raise KeyError(f"keys given for columns {sorted(map(str, unknown))} that are not being grouped")
            declared = [keys.get(c) for c in columns]
        elif keys is not None:
            if len(columns) != 1:
                raise TypeError("with several columns, pass keys as a dict {column: [values, ...]}")
            declared = [keys]
        else:
            declared = [None] * len(columns)
        found = [public_keys(target.column(c), d) for c, d in zip(columns, declared)]
        released = target.protection.released_categories
        earlier = [released.get(lineage) if (lineage := target.lineage_of(c)) is not None else None
                   for c in columns]
        remembered = tuple(k is None and e is not None for k, e in zip(found, earlier))
        found = [e if again else k for k, e, again in zip(found, earlier, remembered)]
        return cls(tuple(columns), tuple(found), remembered)

    def remember(self, target: Target, cells: pd.Index[Any]) -> None:
        """After a private selection: each selected column's released keys become public on this protection,
        for the expression that column holds (none is remembered for a column without a lineage)."""
        if len(cells) == 0:  # nothing released: a later query selects again, rather than answer for no group
            return
        for level, (column, keys) in enumerate(zip(self.columns, self.keys)):
            lineage = target.lineage_of(column)
            if keys is None and lineage is not None:
                values = cells if cells.nlevels == 1 else cells.get_level_values(level)
                target.protection.remember_categories(lineage, pd.Index(values.unique(), dtype=values.dtype,
                                                                        tupleize_cols=False))

    @property
    def public(self) -> bool:
        """True when every key set is public, so no selection is needed."""
        return all(k is not None for k in self.keys)

    @property
    def cells(self) -> int:
        """Number of public cells."""
        return math.prod(len(k) for k in self.keys if k is not None)

    def index(self) -> pd.Index[Any]:
        """The public cells as an index (a MultiIndex for several columns)."""
        keys = [k for k in self.keys if k is not None]
        if len(keys) == 1:
            return keys[0].rename(self.columns[0])
        return product_index(keys, list(self.columns))

    def column_codes(self, target: Target) -> tuple[list[kernels.Codes], list[int], list[pd.Index[Any]]]:
        """After charging: each column's codes, its number of keys, and its keys (observed if not public)."""
        parts, sizes, observed = [], [], []
        for column, keys in zip(self.columns, self.keys):
            series = target.column(column)
            if keys is None:
                codes, keys = kernels.observed_codes(series)
            else:
                codes = kernels.category_codes(series, keys)
            parts.append(codes)
            sizes.append(len(keys))
            observed.append(keys)
        return parts, sizes, observed

    def codes(self, target: Target, mask: NDArray[np.bool_] | None) -> tuple[kernels.Codes, pd.Index[Any]]:
        """After charging: each row's cell (-1 = unused) and the cells (observed ones if not public)."""
        parts, sizes, observed = self.column_codes(target)
        combined = kernels.combine_codes(parts, sizes)
        if mask is not None:
            combined = np.where(mask, combined, -1)
        if self.public:
            return combined, self.index()
        if len(parts) == 1 and mask is None:  # one column's observed values: compact already (every code occurs)
            return combined, index_of(observed, list(self.columns))
        # Compact the observed combinations; these keys are private until selected.
        used, compact = np.unique(combined[combined >= 0], return_inverse=True)
        out = np.full(len(combined), -1, dtype=np.int64)
        out[combined >= 0] = compact
        positions = np.unravel_index(used, sizes)
        arrays = [keys[pos] for keys, pos in zip(observed, positions)]
        cells = index_of(arrays, list(self.columns))
        # In order of first appearance, which is private: callers put the cells they
        # release in public_order (after selection, so unreleased keys play no part).
        return out, cells


# Types whose values are totally ordered by ``<``: others (frozensets order by inclusion, partly) sort by their
# text, for an argsort over a partial order would follow the rows' order.
_TOTALLY_ORDERED = (bool, int, float, str, bytes, np.integer, np.floating, np.bool_, datetime.date,
                    datetime.timedelta, pd.Timestamp, pd.Timedelta, decimal.Decimal)


def public_order(cells: pd.Index[Any]) -> NDArray[np.intp]:
    """An order of released cells that depends only on their values: sorted, by type first where types mix,
    by text for values that are not totally ordered.

    >>> [str(v) for v in pd.Index(["b", 2, "a", 1], dtype=object)[public_order(pd.Index(["b", 2, "a", 1], dtype=object))]]
    ['1', '2', 'a', 'b']
    >>> sets = pd.Index([frozenset({2}), frozenset({1})], dtype=object)  # neither is below the other
    >>> [sorted(s) for s in sets[public_order(sets)]]
    [[1], [2]]
    """
    if cells.dtype != object:
        return np.asarray(cells.argsort(), dtype=np.intp)  # one dtype: numbers, text, times
    values = list(cells)

    def by_type(value: Any) -> Any:
        if isinstance(value, tuple):
            return ("tuple", 2, tuple(by_type(v) for v in value))
        if isinstance(value, _TOTALLY_ORDERED):
            return (type(value).__name__, 0, value)
        return (type(value).__name__, 1, repr(value))

    def by_text(value: Any) -> Any:
        return (type(value).__name__, repr(value))

    try:
        return np.array(sorted(range(len(values)), key=lambda i: by_type(values[i])), dtype=np.intp)
    except TypeError:  # two types of one name: text always compares
        return np.array(sorted(range(len(values)), key=lambda i: by_text(values[i])), dtype=np.intp)


class CellReader:
    """After the charge: the exact aggregates of the cells, read from the rows of ``target`` (the pandas path).

    The queries of this module read the data only through one of these, so
    that the same query code (plan, charge, noise, release) can run on
    exact aggregates made elsewhere: :mod:`dpframe.dask.tables` reads them
    from the partitions of a Dask frame.
    """

    def __init__(self, target: Target):
        self.target = target

    def rows_in_use(self, partitioning: Partitioning) -> NDArray[np.bool_] | None:
        """After the charge: the rows a query over ``partitioning`` may use (None = all): contribution bounding."""
        return self.target.rows_in_use()

    def counts(self, partitioning: Partitioning) -> tuple[NDArray[np.int64], pd.Index[Any]]:
        """Rows in use per cell, and the cells: the public ones, or the observed ones (see :meth:`Partitioning.codes`)."""
        mask = self.rows_in_use(partitioning)
        if partitioning.public:
            # Cells are combined and counted chunk by chunk: no full-length cell array.
            parts, sizes, _ = partitioning.column_codes(self.target)
            cells = partitioning.index()
            return kernels.count_cells(parts, sizes, mask, len(cells)), cells
        codes, cells = partitioning.codes(self.target, mask)
        return kernels.count_cells([codes], [len(cells)], None, len(cells)), cells

    def moments(
        self, partitioning: Partitioning, column: Any, exact: kernels.MomentKernel,
    ) -> tuple[kernels.MomentSums, pd.Index[Any]]:
        """``exact(values, codes, n_cells)`` of ``column`` over the rows in use, and the cells (as :meth:`counts`)."""
        mask = self.rows_in_use(partitioning)
        codes, cells = partitioning.codes(self.target, mask)
        values = kernels.as_float_array(self.target.column(column))
        if mask is not None:
            # Only the rows in use go through the kernel: fewer rows, and none coded -1 (the kernel's slow path).
            values, codes = values[mask], codes[mask]
        return exact(values, codes, len(cells)), cells

    def present(self, columns: Sequence[Any]) -> int:
        """Rows in use with a value in every one of ``columns``."""
        mask = self.target.rows_in_use()
        present = np.ones(len(self.target.obj), dtype=bool) if mask is None else mask.copy()
        for column in columns:
            present &= kernels.present(self.target.column(column))
        return int(np.count_nonzero(present))

    def missing(self, column: Any) -> int:
        """Rows in use whose value in ``column`` is missing."""
        mask = self.target.rows_in_use()
        missing = self.target.column(column).isna().to_numpy()
        return int(np.count_nonzero(missing if mask is None else missing & mask))

    def with_values_in(self, column: Any) -> CellReader:
        """The reader of the rows that have a value in ``column`` (``gb[column].count()``)."""
        present = kernels.present(self.target.column(column))
        return CellReader(Target(self.target.obj[present], self.target.protection, self.target.sample))

    def bounds_reads(self, column: Any) -> BoundsReads | None:
        """Where the automatic bounds of ``column`` read its values (None: the rows of the target)."""
        return None

    def group_quantiles(self, partitioning: Partitioning, column: Any) -> Callable[[int], QuantileReads] | None:
        """Where the quantiles of ``column`` in each public group (by number) read its values (None: the rows of
        the target, in one pass)."""
        return None


class BoundedCellReader(CellReader):
    """A :class:`CellReader` whose rows in use are those :class:`GroupBounds` keeps (public cells only), and of
    those the ones with a value in every column of ``present_in`` (:meth:`with_values_in`)."""

    def __init__(self, target: Target, bounds: GroupBounds, present_in: tuple[Any, ...] = ()):
        super().__init__(target)
        self.bounds = bounds
        self.present_in = present_in

    def rows_in_use(self, partitioning: Partitioning) -> NDArray[np.bool_]:
        """After the charge: each unit's rows in its kept groups (:class:`~dpframe.protection.units.GroupChoice`:
        the groups chosen once per data and grouping, the rows in them drawn at each query)."""
        return self._kept(partitioning, self.bounds.max_rows_per_group)

    def _cells(self, partitioning: Partitioning) -> kernels.Codes:
        parts, sizes, _ = partitioning.column_codes(self.target)
        return kernels.combine_codes(parts, sizes)

    def _kept(self, partitioning: Partitioning, rows_per_group: int) -> NDArray[np.bool_]:
        """The rows each unit keeps in its (at most L0) kept groups, at most ``rows_per_group`` in each, that have a
        value in the columns of ``present_in``."""
        choice = remembered_group_choice(self.target.obj, partitioning.columns, partitioning.index(),
                                         lambda: self._cells(partitioning), self.bounds.max_groups, rows_per_group,
                                         self.target.protection.group_bounding_key())
        keep = choice.rows()
        for column in self.present_in:
            keep &= kernels.present(self.target.column(column))
        return keep

    def with_values_in(self, column: Any) -> BoundedCellReader:
        """The reader of the rows it keeps that have a value in ``column`` (``gb[column].count()``): a filter on
        each kept row's own value, so each unit keeps no more groups, nor rows in each."""
        return BoundedCellReader(self.target, self.bounds, (*self.present_in, column))

    def unit_sums(self, partitioning: Partitioning, column: Any, exact: kernels.MomentKernel
                  ) -> tuple[kernels.MomentSums, pd.Index[Any]]:
        """After the charge: ``exact`` of each unit's sum of ``column`` in each of its kept groups (all its rows
        there: the clipping of the sum bounds it, whatever their number), per group; and the public cells.

        Missing values add nothing to a unit's sum; a sum that is not a number (rows of +inf and -inf) is not
        counted. One sort by (unit, cell) of the kept rows, then ``np.add.reduceat``.
        """
        rows = np.flatnonzero(self._kept(partitioning, max(len(self.target.obj), 1)))
        units = np.asarray(pd.factorize(unit_ids(self.target.obj)[rows], use_na_sentinel=False)[0], dtype=np.int64)
        row_cells = self._cells(partitioning)[rows].astype(np.int64)
        order = np.lexsort((row_cells, units))
        units, row_cells = units[order], row_cells[order]
        first = np.ones(len(rows), dtype=np.bool_)  # the first row of each (unit, cell)
        first[1:] = (units[1:] != units[:-1]) | (row_cells[1:] != row_cells[:-1])
        starts = np.flatnonzero(first)
        values = kernels.as_float_array(self.target.column(column))[rows[order]]
        sums = np.add.reduceat(np.where(np.isnan(values), 0.0, values), starts)
        index = partitioning.index()
        return exact(sums, row_cells[starts], len(index)), index


def selection_threshold(noise: NoiseSpec, contributions: int, delta: float) -> int:
    """Smallest noisy count that releases a key, so a unit's own keys leak with probability <= delta.

    >>> from fractions import Fraction
    >>> selection_threshold(NoiseSpec("laplace", Fraction(10)), 1, 1e-6)
    134

    A key held by one unit has count <= k, and the unit holds <= k keys, so
    requiring P[Z >= m] <= delta / k (:meth:`NoiseSpec.tail_point`: exact for
    discrete Laplace, P[Z >= m] = p^m / (1 + p), p = e^(-1/b); from the pmf for
    the discrete Gaussian) and releasing at count >= k + m bounds the total by delta.
    """
    return contributions + noise.tail_point(delta / contributions)


def require_selection(partitioning: Partitioning, privacy: Privacy) -> None:
    if not partitioning.public and (privacy.kind != "approx" or privacy.delta == 0):
        missing = [str(c) for c, k in zip(partitioning.columns, partitioning.keys) if k is None]
        raise ValueError(
            f"the categories of {missing} are not public: declare them with keys=[...], give the column a "
            "categorical dtype, or pass delta>0 (on an epsilon/delta budget) to select them privately"
        )


# The share of a privately selected count query's budget that counts the rows of the categories it did not
# release, so that none vanish without a word (the "other (not released)" entry). A tenth: the counts keep 9/10,
# so their noise and the selection threshold grow by a ninth.
REMAINDER_SHARE = Fraction(1, 10)


# The share of a group quantile's budget that selects groups that are not public (a private count), before the
# quantiles are released for the groups it selected.
GROUP_SELECTION_SHARE = Fraction(1, 4)
# What a group statistic's note says when its groups are categories an earlier private selection released.
REMEMBERED_GROUPS = ("groups released by an earlier private selection (public since); rows of the others are not "
                     "shown (groupby(...).count() counts them together)")


@dataclass(frozen=True)
class Remainder:
    """The rows whose categories a private selection did not release, counted together with their own noise."""

    count: float
    noise: NoiseSpec


@dataclass(frozen=True)
class CountRelease:
    """What :func:`release_counts` released: the noisy counts of ``cells``, their noise, the plan, the remainder."""

    noisy: NDArray[np.float64]
    cells: pd.Index[Any]
    noise: NoiseSpec
    plan: Plan
    remainder: Remainder | None = None
    # The smallest noisy count a privately selected cell needed to be released (None for public cells).
    threshold: int | None = None
    # How the cells were selected privately, when not by a threshold on these counts (None: by it, or public).
    selection: str | None = None

    @property
    def selected_privately(self) -> bool:
        """True when this release chose its cells privately (rather than on public or remembered keys)."""
        return self.threshold is not None or self.selection is not None


def release_counts(
    query: str,
    target: Target,
    partitioning: Partitioning,
    privacy: Privacy,
    columns: tuple[str, ...],
    rule: str | None = None,
    *,
    remainder: bool = False,
    read: CellReader | None = None,
    bounds: GroupBounds | None = None,
) -> CountRelease:
    """Charge and release noisy counts per partition (selecting partitions privately if needed).

    ``rule`` replaces the ledger's default description of the composition.
    ``read`` (default: the rows of ``target``) gives the exact counts after the charge.
    With ``remainder=True`` and categories selected privately,
    :data:`REMAINDER_SHARE` of the budget (pure epsilon, its own ledger line,
    reserved with the counts) then counts the rows of every category that was
    not released. Summing the unreleased noisy counts would not be private
    (how many of them there are depends on the data); a second count, of the
    rows outside the *released* categories -- a public set once released --
    has sensitivity ``max_contributions`` and composes sequentially.

    >>> import dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"c": ["a"] * 900 + ["b"] * 100 + ["z"]}).dp.protect(epsilon=1.0, delta=1e-6)
    >>> target = Target.of(p)
    >>> privacy = target.privacy(1.0, 1e-6, None, None, selects_partitions=True)
    >>> with seeded_noise(0):
    ...     counts = release_counts("value_counts", target, Partitioning.of(target, ["c"], None), privacy, ("c",),
    ...                             remainder=True)
    >>> list(counts.cells), counts.plan.rule  # "z" (one row) is not released
    (['a', 'b'], 'parallel composition over partitions, private partition selection')
    >>> counts.remainder.noise.std > counts.noise.std  # z's row, counted at a tenth of the budget
    True
    """
    require_selection(partitioning, privacy)
    if not partitioning.public:
        target.refuse_unless_bounded_ok("private selection of categories")
    if bounds is not None and not partitioning.public:
        return _bounded_counts_with_selection(query, target, partitioning, privacy, columns, bounds, remainder)
    k = target.count_sensitivity
    counting, rest = privacy, None
    read = CellReader(target) if read is None else read
    if remainder and partitioning.public and any(partitioning.remembered) and bounds is None:
        return _counts_on_remembered(query, target, partitioning, privacy, columns, rule, read)
    if remainder and not partitioning.public:
        counting, rest = query_share(privacy, 1 - REMAINDER_SHARE), pure_share(privacy, REMAINDER_SHARE)
        rest_noise = rest.noise(k)  # argument errors before the reservation
    noise = counting.noise(k) if bounds is None else bounds.noise(counting, bounds.max_rows_per_group)
    if rest is not None:
        target.reserve(counting.cost, rest.cost, query=f"{query} and its remainder")
    if rule is None and bounds is not None:
        rule = bounds.rule()
    elif rule is None:
        rule = "parallel composition over partitions" + ("" if partitioning.public else ", private partition selection")
    plan = Plan(query, columns, target, counting, {"count": noise}, rule=rule)
    plan.charge()
    exact, cells = read.counts(partitioning)
    if partitioning.public:
        return CountRelease((exact + noise.sample(len(cells))).astype(np.float64), cells, noise, plan)
    noisy = (exact + noise.sample(len(cells))).astype(np.float64)
    threshold = selection_threshold(noise, k, float(counting.delta))
    keep = noisy >= threshold
    other = None
    if rest is not None:
        Plan(f"rows in categories not released by {query}", columns, target, rest, {"count": rest_noise},
             rule="sequential composition: counts the rows outside the released categories").charge()
        other = Remainder(float(exact[~keep].sum() + rest_noise.sample(1)[0]), rest_noise)
    noisy, cells = noisy[keep], cells[keep]
    order = public_order(cells)
    partitioning.remember(target, cells[order])
    return CountRelease(noisy[order], cells[order], noise, plan, other, threshold)


# The L0 from which the groups are selected by weighted Gaussian set union rather than the truncated geometric
# (benchmarks/bench_partition_selection.py: the truncated geometric keeps more for L0 <= 2, set union from 3).
SET_UNION_FROM = 3


def _bounded_selection_mechanism(max_groups: int) -> str:
    """The partition selection used for L0 = ``max_groups``: a function of the argument only, never of the data."""
    return "truncated geometric" if max_groups < SET_UNION_FROM else "weighted Gaussian set union"


def _select_units_groups(
    units: NDArray[np.int64], cells: NDArray[np.int64], n_cells: int, max_groups: int, privacy: Privacy,
) -> NDArray[np.bool_]:
    """Which of ``n_cells`` cells to release, from the (unit, cell) pairs of the rows in use (each unit in at most
    ``max_groups`` cells): :mod:`dpframe.selection.partitions` at ``privacy``'s (epsilon, delta), rounded down."""
    from dpframe.selection import partitions as selection  # only this path uses it

    epsilon, delta = float_below(privacy.epsilon), float_below(privacy.delta)
    if _bounded_selection_mechanism(max_groups) == "truncated geometric":
        pairs = np.unique(units * n_cells + cells)  # distinct (unit, cell)
        users = np.bincount(pairs % n_cells, minlength=n_cells) if n_cells else np.zeros(0, dtype=np.int64)
        return selection.truncated_geometric_selection(users, epsilon=epsilon, delta=delta, max_partitions=max_groups)
    return selection.weighted_gaussian_set_union(units, cells, n_partitions=n_cells, epsilon=epsilon, delta=delta,
                                                 max_partitions=max_groups)


@dataclass(frozen=True)
class BoundedSelection:
    """Groups selected privately under :class:`GroupBounds`: the public partitioning to measure them on, what the
    selection's note says, and (private, for the remainder's noisy count only) the rows in use outside them."""

    partitioning: Partitioning
    note: str
    outside: int


def bounded_selection_shares(privacy: Privacy, measurements: int, remainder: bool
                             ) -> tuple[Privacy, Privacy, Privacy | None]:
    """The selection's, the measurement's and (``remainder``) the other entry's parts of an (epsilon, delta) query
    under max_groups/max_rows_per_group over unknown groups.

    As PipelineDP's default accountant: the selection and each of the
    measurement's noisy ``measurements`` (1 for a count or sum, 2 for a mean:
    count and sum, 3 for var/std) take equal shares of epsilon, so the
    selection is PipelineDP's; a count's other entry takes
    :data:`REMAINDER_SHARE` of epsilon (pure) from the counts' share. The
    selection takes the delta, half of it when the measurement is Gaussian
    (which takes the other half). The costs add up to ``privacy.cost`` exactly.

    >>> laplace = Privacy("approx", "laplace", Fraction(1), Fraction(1, 10**6), Fraction(0))
    >>> [(part.epsilon, part.delta) for part in bounded_selection_shares(laplace, 1, True)]
    [(Fraction(1, 2), Fraction(1, 1000000)), (Fraction(2, 5), Fraction(0, 1)), (Fraction(1, 10), Fraction(0, 1))]
    >>> [part.epsilon for part in bounded_selection_shares(laplace, 2, False)[:2]]  # a mean
    [Fraction(1, 3), Fraction(2, 3)]
    """
    rest = pure_share(privacy, REMAINDER_SHARE) if remainder else None
    delta = privacy.delta / 2 if privacy.mechanism == "gaussian" else privacy.delta
    selection = Privacy("approx", "laplace", privacy.epsilon / (measurements + 1), delta, Fraction(0))
    measured = Fraction(measurements, measurements + 1) - (REMAINDER_SHARE if remainder else 0)
    measurement = Privacy("approx", privacy.mechanism, privacy.epsilon * measured, privacy.delta - delta, Fraction(0))
    return selection, measurement, rest


def check_bounded_selection(bounds: GroupBounds, selection: Privacy) -> None:
    """Argument errors of the selection (an epsilon too small for the truncated geometric), before any charge."""
    none = np.zeros(0, dtype=np.int64)
    _select_units_groups(none, none, 0, bounds.max_groups, selection)


def select_bounded_groups(
    query: str, target: Target, partitioning: Partitioning, bounds: GroupBounds, selection: Privacy,
    columns: tuple[str, ...],
) -> BoundedSelection:
    """Charge ``selection`` (drawn from the query's reservation), then select the groups privately.

    Each unit keeps at most L0 of its *observed* groups, by the keyed hash of
    :class:`~dpframe.protection.units.GroupChoice` (a function of
    its own rows and the protection's secret), and is counted once in each:
    adding a unit adds one to at most L0 groups' numbers of units, and changes
    no other unit's choice. The observed groups are numbered in the order of
    their keyed hashes (not of first appearance, which other units decide),
    so that even the mask's tie-break between two groups of a unit depends on
    their values and the key only (but for a 64-bit collision of two groups'
    keyed hashes, broken by value). The selected groups are remembered
    (public from now on) and returned as public keys.
    """
    mechanism = _bounded_selection_mechanism(bounds.max_groups)
    paper = ("Desfontaines et al. 2022, at (ε/L0, δ/L0) per group" if mechanism == "truncated geometric"
             else "Gopi et al. 2020, L2 norm of a unit's weights <= 1")
    Plan(f"groups selected for {query}", columns, target, selection, mechanism_name=mechanism,
         detail=f"ε={float(selection.epsilon):.6g}, δ={float(selection.delta):.3g} on the distinct units per group",
         rule=(f"private partition selection ({paper}); each unit in at most L0={bounds.max_groups} observed groups "
               "(keyed hash); the groups selected are public, and the measurement that follows is DP for any "
               "fixed selection: adaptive sequential composition")).charge()
    codes, observed = partitioning.codes(target, None)
    key = target.protection.group_bounding_key()
    hashes = keyed_hashes(observed, key)
    by_value = np.empty(len(observed), dtype=np.int64)
    by_value[public_order(observed)] = np.arange(len(observed))
    order = np.lexsort((by_value, hashes))  # by keyed hash, a 64-bit collision by value
    rank = np.empty(len(order) + 1, dtype=np.int64)
    rank[order], rank[-1] = np.arange(len(order)), -1  # rank[-1]: a row outside every group stays -1
    codes, observed = rank[codes], observed[order]
    units = unit_ids(target.obj)
    in_use = GroupChoice.of(units, codes, hashes[order], bounds.max_groups, bounds.max_rows_per_group, key).rows()
    rows = np.flatnonzero(in_use)
    unit_codes, _ = pd.factorize(units[rows], use_na_sentinel=False)
    keep = _select_units_groups(np.asarray(unit_codes, dtype=np.int64), codes[rows], len(observed), bounds.max_groups,
                                selection)
    selected = observed[keep]
    selected = selected[public_order(selected)]
    partitioning.remember(target, selected)
    levels = [selected if selected.nlevels == 1 else selected.get_level_values(i) for i in range(selected.nlevels)]
    keys = tuple(known if known is not None else pd.Index(level.unique(), dtype=level.dtype, tupleize_cols=False)
                 for known, level in zip(partitioning.keys, levels))
    # The measurement covers the product of each column's released keys (public): the other entry counts the rows
    # outside it, so that no row is counted in both (for one column, the product is the selection).
    observed_levels = [observed] if observed.nlevels == 1 else [observed.get_level_values(i)
                                                                for i in range(observed.nlevels)]
    measured = np.logical_and.reduce([np.asarray(level.isin(known)) for level, known in zip(observed_levels, keys)])
    outside = int(np.count_nonzero(~measured[codes[rows]]))
    note = (f"groups selected privately first ({mechanism}, ε={float(selection.epsilon):.3g} and "
            f"δ={float(selection.delta):.3g} of the query's, its own ledger line)")
    return BoundedSelection(Partitioning(partitioning.columns, keys), note, outside)


def _bounded_counts_with_selection(
    query: str, target: Target, partitioning: Partitioning, privacy: Privacy, columns: tuple[str, ...],
    bounds: GroupBounds, remainder: bool,
) -> CountRelease:
    """Counts per group under ``bounds`` over unknown keys: the groups selected first (:func:`select_bounded_groups`),
    then counted as public groups, and (``remainder``) the rows in use outside them counted once more.

    The three parts are reserved together before anything is read. The
    remainder is a count over the rows the selection's bounding keeps (at most
    L0·L∞ per unit) outside the released groups, a public set by then: its
    sensitivity is L0·L∞ rows, and it composes sequentially.
    """
    selection, counting, rest = bounded_selection_shares(privacy, 1, remainder)
    check_bounded_selection(bounds, selection)  # argument errors before the reservation
    bounds.noise(counting, bounds.max_rows_per_group)
    most = bounds.max_groups * bounds.max_rows_per_group
    rest_noise = None if rest is None else rest.noise(most)
    target.reserve(selection.cost, counting.cost, *([] if rest is None else [rest.cost]),
                   query=f"{query} with group selection")
    chosen = select_bounded_groups(query, target, partitioning, bounds, selection, columns)
    counts = release_counts(query, target, chosen.partitioning, counting, columns,
                            read=BoundedCellReader(target, bounds), bounds=bounds)
    other = None
    if rest is not None and rest_noise is not None:
        Plan(f"rows in groups not released by {query}", columns, target, rest, {"count": rest_noise},
             rule=(f"sequential composition: counts the rows outside the released groups, each unit's at most "
                   f"L0·L∞={most} rows kept by the bounding over the observed groups: sensitivity {most}")).charge()
        other = Remainder(float(chosen.outside + rest_noise.sample(1)[0]), rest_noise)
    return replace(counts, remainder=other, selection=chosen.note)


def _counts_on_remembered(
    query: str, target: Target, partitioning: Partitioning, privacy: Privacy, columns: tuple[str, ...],
    rule: str | None, read: CellReader,
) -> CountRelease:
    """Counts on categories released earlier, with one more cell of the same partition for the rows outside them.

    Each row in use is in one key cell, in the remainder or missing, so the
    remainder is one more disjoint cell at no further cost (parallel composition).
    """
    noise = privacy.noise(target.count_sensitivity)
    plan = Plan(query, columns, target, privacy, {"count": noise},
                rule=rule or "parallel composition over partitions (categories released earlier) and the rest")
    plan.charge()
    exact, cells = read.counts(partitioning)
    # Rows in use with a value in every column but outside the keys: all such rows minus those counted.
    outside = read.present(partitioning.columns) - int(exact.sum())
    draws = noise.sample(len(cells) + 1)
    other = Remainder(float(outside + draws[-1]), noise)
    return CountRelease((exact + draws[:-1]).astype(np.float64), cells, noise, plan, other)


def _count_release(
    plan: Plan,
    noise: NoiseSpec,
    values: Any,
    note: str = "",
    bounds: tuple[float, float] | None = None,
) -> Release:
    half = noise.halfwidth(LEVEL)
    return Release(
        plan.query, plan.columns, plan.mechanism, plan.target.spent, noise.std,
        values - half, values + half, LEVEL, bounds, note,
    )


def check_edges(bins: Any) -> NDArray[np.float64]:
    """Validate declared bin edges: at least two finite, strictly increasing numbers.

    >>> check_edges([0, 18, 65]).tolist()
    [0.0, 18.0, 65.0]
    """
    try:
        edges = np.asarray(list(bins), dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("bins must be an int (with bounds=) or a sequence of bin edges") from None
    if len(edges) < 2 or not np.all(np.isfinite(edges)) or not np.all(np.diff(edges) > 0):
        raise ValueError("bin edges must be at least two finite, strictly increasing numbers")
    return edges


def histogram(
    target: Target, series: pd.Series[Any], bins: Any, bounds: Any, privacy: Privacy,
    read: Callable[[NDArray[np.float64], bool], NDArray[np.int64]] | None = None,
    bounds_reads: BoundsReads | None = None,
) -> pd.Series[Any]:
    """Noisy counts per bin; ``bins`` are edges, or a number of equal bins over ``bounds``.

    With a number of bins and ``bounds=None``, a quarter of the budget first
    finds the bounds privately (:mod:`dpframe.queries.bounds`), and two
    open-ended bins, below and above them, count the values beyond: nobody
    is left out of a histogram whose edges the data chose. (With declared
    edges or bounds, values beyond them are not counted, as in numpy.)
    The outer bins are more bins of the same partition (each value in one
    bin), so they cost nothing more. ``read(edges, outer)`` (called after the
    charge) counts elsewhere than in ``series``, as :func:`kernels.histogram_counts`, and
    ``bounds_reads`` finds the bounds there (:class:`~dpframe.queries.bounds.BoundsReads`).
    """
    check_numeric(series, "histogram")
    total, note, found = privacy, "last bin includes its right edge", None
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError(f"bins must be >= 1, got {bins}")
        if bounds is None:
            k = target.contributions
            found, privacy, _ = automatic_bounds(target, series, privacy, "histogram", lambda rest: rest.noise(k),
                                                 reads=bounds_reads)
            note += "; " + bounds_note(found, total)
            lo, hi = found
        else:
            lo, hi = check_bounds(bounds)
        edges = np.linspace(lo, hi, int(bins) + 1)
    else:
        edges = check_edges(bins)
        if bounds is not None:
            raise ValueError("give either bin edges, or a number of bins with bounds=(lower, upper), not both")
    noise = privacy.noise(target.count_sensitivity)
    plan = Plan("histogram", (str(series.name),), target, privacy, {"count": noise},
                rule="parallel composition over bins")
    plan.charge()
    outer = found is not None  # the open-ended outer bins; the last inner bin keeps its right edge
    if read is None:
        mask = target.rows_in_use()
        values = kernels.as_float_array(series)
        counts = kernels.histogram_counts(values if mask is None else values[mask], edges, outer)
    else:
        counts = read(edges, outer)
    if outer:
        edges = np.r_[-np.inf, edges, np.inf]
        note += ("; the first and last bins are open-ended and count the values beyond the bounds (the last one "
                 "those above its left edge, which the bin before it includes)")
    noisy = counts + noise.sample(len(counts))
    index = pd.IntervalIndex.from_breaks(edges, closed="left", name=series.name)
    result = pd.Series(noisy, index=index, name="count")
    release = _count_release(plan, noise, pd.Series(noisy, index=index), note, found)
    return with_release(result, release)  # type: ignore[no-any-return]


def _selection_note(counts: CountRelease) -> str:
    """What a private selection released and what it spent: delta is never taken without a word."""
    if counts.selection is not None:
        return counts.selection
    return (f"categories released by private partition selection (noisy count >= {counts.threshold}; it spent "
            f"δ={float(counts.plan.privacy.delta):.3g})")


def _counts_with_remainder(counts: CountRelease, name: str) -> tuple[pd.Series[Any], Release]:
    """The released counts as integers, with the :data:`OTHER` entry last when there is a remainder."""
    cells, values = counts.cells, counts.noisy
    stds, halves = np.full(len(values), counts.noise.std), np.full(len(values), counts.noise.halfwidth(LEVEL))
    note = ""
    selected = _selection_note(counts)
    if counts.selected_privately:
        note = f"{selected}; the others are not shown"
    if counts.remainder is not None:
        cells = index_of([cells.get_level_values(i).append(pd.Index([OTHER], dtype=object))
                          for i in range(cells.nlevels)], cells.names)
        values = np.r_[values, counts.remainder.count]
        stds = np.r_[stds, counts.remainder.noise.std]
        halves = np.r_[halves, counts.remainder.noise.halfwidth(LEVEL)]
        if not counts.selected_privately:
            note = (f"categories released by an earlier private selection (public since); {OTHER!r} counts the "
                    "rows with any other value, in the same measurement")
        else:
            note = (f"{selected}; {OTHER!r} counts the rows of all the others together, with "
                    f"{float(REMAINDER_SHARE):.0%} of the budget (its own ledger line)")
    cells = cells.set_names(counts.cells.names)
    result = pd.Series(values.astype(np.int64), index=cells, name=name)
    plan = counts.plan
    release = Release(
        plan.query, plan.columns, plan.mechanism, plan.target.spent,
        counts.noise.std if counts.remainder is None else pd.Series(stds, index=cells),
        result - halves, result + halves, LEVEL, None, note,
    )
    return result, release


def _with_missing(read: CellReader, column: Any, counts: CountRelease) -> CountRelease:
    """The released counts and one more cell, of the rows in use whose value is missing (after the charge)."""
    exact = read.missing(column)
    cells = counts.cells.append(pd.Index([np.nan], dtype=object)).set_names(counts.cells.names)
    return replace(counts, noisy=np.r_[counts.noisy, exact + counts.noise.sample(1)[0]].astype(np.float64),
                   cells=cells)


def value_counts(
    target: Target,
    partitioning: Partitioning,
    privacy: Privacy,
    normalize: bool,
    sort: bool,
    *,
    remainder: bool = True,
    dropna: bool = True,
    read: CellReader | None = None,
) -> pd.Series[Any]:
    """Noisy count of each category, like ``Series.value_counts``.

    ``dropna=False`` (one column) adds the rows whose value is missing as one
    more category, labelled NaN: a public label and one more disjoint cell of
    the same measurement, so it costs nothing more.

    Privately selected categories end with an :data:`OTHER` entry counting
    the rows of the categories not released (see :func:`release_counts`);
    ``sort`` keeps it last. ``remainder=False`` leaves it out and spends
    the whole budget on the counts (``describe``'s top and unique).
    ``read``: as :func:`release_counts`.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"c": ["a"] * 900 + ["b"] * 300 + list("cdefghij")}).dp.protect(epsilon=1.0, delta=1e-6)
    >>> with seeded_noise(0):
    ...     vc = p["c"].dp.value_counts(epsilon=1.0)
    >>> list(vc.index), bool(abs(vc[OTHER] - 8) < 60)
    (['a', 'b', 'other (not released)'], True)
    """
    columns = tuple(map(str, partitioning.columns))
    if not dropna and len(partitioning.columns) != 1:
        raise ValueError("dropna=False counts the missing values of one column: give one column")
    read = CellReader(target) if read is None else read
    counts = release_counts("value_counts", target, partitioning, privacy, columns, remainder=remainder, read=read)
    if not dropna:
        counts = _with_missing(read, partitioning.columns[0], counts)
    result, release = _counts_with_remainder(counts, "count")
    if normalize:
        # Post-processing: proportions of the (non-negative) noisy counts, the remainder included; the
        # intervals are the count intervals scaled by the same noisy total.
        total = max(float(result.clip(lower=0).sum()), 1.0)
        proportions = (result.clip(lower=0) / total).rename("proportion")
        half = (release.upper - release.lower) / 2 / total
        release = replace(release, std=release.std / total, lower=(proportions - half).clip(lower=0),
                          upper=(proportions + half).clip(upper=1), clamp=(0.0, math.inf),
                          note="; ".join(filter(None, [release.note, "proportions of noisy counts; intervals "
                                                                     "scaled by the noisy total"])))
        result = proportions
    if sort:
        # By position: keys that pandas keeps apart may be equal labels (1 and 1.0 in an object column), which
        # a reindex by label refuses -- after the charge, and only for such data.
        released = len(result) - (counts.remainder is not None)  # the remainder is the last row
        order = np.argsort(-result.to_numpy(dtype=float)[:released], kind="stable")
        result = result.iloc[np.r_[order, released:len(result)]]
    return with_release(result, release)  # type: ignore[no-any-return]


def crosstab(
    target: Target, index: Any, columns: Any, partitioning: Partitioning, privacy: Privacy,
    read: CellReader | None = None,
) -> pd.DataFrame:
    """Noisy contingency table of two columns, like ``pd.crosstab`` (``read``: as :func:`release_counts`).

    With categories selected privately, a cell appears only if its noisy count
    reached the selection threshold: the others are ``<NA>`` (unknown, not
    zero) and the release's note says how many of the table's cells that is
    (rows or columns with no released cell at all are not shown).
    """
    counts = release_counts("crosstab", target, partitioning, privacy, (str(index), str(columns)), read=read)
    noisy, cells, noise, plan = counts.noisy, counts.cells, counts.noise, counts.plan
    assert isinstance(cells, pd.MultiIndex)
    note = ""
    if partitioning.public:
        rows, cols = partitioning.keys
        assert rows is not None and cols is not None
        table = pd.DataFrame(
            noisy.astype(np.int64).reshape(len(rows), len(cols)),
            index=rows.rename(index), columns=cols.rename(columns),
        )
    else:
        table = pd.Series(noisy.astype(np.int64), index=cells).astype("Int64").unstack()
        suppressed = int(table.isna().to_numpy().sum())
        note = (f"{_selection_note(counts)}: {suppressed} of the table's {table.size} cells were not released and show <NA>; rows and "
                "columns with no released cell are not shown")
    release = _count_release(plan, noise, table.copy(), note)
    return with_release(table, release)  # type: ignore[no-any-return]


_NORMALIZE = (False, True, "all", "index", "columns")


def check_table_options(normalize: Any, margins: Any) -> None:
    """``crosstab``'s post-processing options, checked before anything is charged."""
    if not any(normalize is option or (isinstance(normalize, str) and normalize == option) for option in _NORMALIZE):
        raise ValueError(f"normalize must be one of False, True, 'all', 'index' or 'columns', got {normalize!r}")
    if not isinstance(margins, bool):
        raise TypeError(f"margins must be True or False, got {margins!r}")


def table_options(table: pd.DataFrame, normalize: bool | str, margins: bool) -> pd.DataFrame:
    """``margins`` and ``normalize`` on a released table: post-processing of the noisy counts, as pandas does.

    Margins add the released cells (an unreleased ``<NA>`` cell adds nothing),
    so their noise std is the cells' times the square root of how many they
    add. Proportions divide the counts (negative ones shown as 0) by their
    noisy totals, and so do their intervals -- approximately, as the totals are
    noisy too (the note says so).

    >>> t = pd.DataFrame({"x": [10, 30], "y": [20, 40]}, index=["a", "b"])
    >>> table_options(t, "index", True).round(2).values.tolist()  # no "All" column of ones, as in pandas
    [[0.33, 0.67], [0.43, 0.57], [0.4, 0.6]]
    """
    release = current_release(table)
    if normalize is False and not margins:
        return table
    counts = table.astype("Float64").astype(float).clip(lower=0)

    def cells(value: Any) -> pd.DataFrame:
        frame = value if isinstance(value, pd.DataFrame) else pd.DataFrame(np.nan if value is None else float(value),
                                                                            index=counts.index, columns=counts.columns)
        return frame.astype(float).where(counts.notna())

    # Per cell: the noise variance and the squared 95% half-width; a margin adds both over its cells.
    variance = cells(None if release is None else release.std) ** 2
    reach = cells(None if release is None else (release.upper - release.lower) / 2) ** 2
    if margins:
        counts["All"] = counts.sum(axis=1, min_count=1)
        counts.loc["All"] = counts.sum(axis=0, min_count=1)
        for part in (variance, reach):
            part["All"] = part.sum(axis=1)
            part.loc["All"] = part.sum(axis=0)
    spread, half = variance**0.5, reach**0.5
    notes = ["margins add the released cells"] if margins else []
    if normalize is not False:
        inner = counts.drop(index="All", columns="All", errors="ignore")
        denominator: Any
        if normalize in (True, "all"):
            denominator = max(float(inner.sum().sum()), 1.0)
        elif normalize == "index":
            rows = counts["All"] if margins else counts.sum(axis=1)
            denominator = rows.clip(lower=1.0).to_numpy()[:, None]
        else:
            columns = counts.loc["All"] if margins else counts.sum(axis=0)
            denominator = columns.clip(lower=1.0).to_numpy()[None, :]
        counts, spread, half = counts / denominator, spread / denominator, half / denominator
        if margins and normalize in ("index", "columns"):  # as pandas: the margin that would be all ones goes
            drop = {"columns": ["All"]} if normalize == "index" else {"index": ["All"]}
            counts, spread, half = (frame.drop(**drop) for frame in (counts, spread, half))
        notes.append(f"proportions ({normalize}) of the noisy counts; intervals scaled by the noisy totals "
                     "(approximate)")
    if release is None:
        return counts
    out = replace(release, std=spread, lower=counts - half, upper=counts + half,
                  clamp=(0.0, math.inf),  # the counts were clipped at 0 above, and so is what is made of them
                  note="; ".join(filter(None, [release.note, *notes])))
    return with_release(counts, out)  # type: ignore[no-any-return]


def _swamped(query: str, moments: Moments, reach: Any) -> NDArray[np.bool_]:
    """Cells whose interval spans half the range the statistic can take within the bounds or more -- the rule
    that marks a scalar UNRELIABLE: with bounds chosen privately, a number there says nothing (bounds found on
    too few rows land anywhere up to 1e15, and a cell of 1e13 beside them is noise). Read from the release and
    the bounds only."""
    width = moments.hi - moments.lo
    scale = {"mean": width, "std": width / 2, "var": (width / 2) ** 2}[query]
    return np.asarray(2 * np.asarray(reach, dtype=np.float64) >= scale / 2, dtype=bool)


class GroupBy:
    """Private aggregates per group: ``p.dp.groupby("sex").mean("age", bounds=(0, 125), epsilon=0.2)``.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> df = pd.DataFrame({"sex": pd.Categorical(["F", "M"] * 500), "age": [30, 50] * 500})
    >>> p = df.dp.protect(epsilon=1.0)
    >>> with seeded_noise(1):
    ...     means = p.dp.groupby("sex").mean("age", bounds=(0, 100), epsilon=0.5)
    >>> list(means.index), bool(abs(means["M"] - 50) < 5)
    (['F', 'M'], True)
    """

    def __init__(self, target: Target, by: Any, keys: KeySpec, *, shared: Target | None = None,
                 read: CellReader | None = None, bounds: GroupBounds | None = None):
        self._target = target
        # Where the exact aggregates come from after the charge (None: the rows of the target; see CellReader).
        self._read = read
        self._by = list(by) if isinstance(by, (list, tuple)) else [by]
        self._keys = keys
        # The parts of one release (agg, several columns) run on one target, drawing from its reservation.
        self._shared = shared
        # Two-dimensional contribution bounds (groupby's max_groups, max_rows_per_group), or None: max_contributions.
        self._bounds = bounds
        partitioning = Partitioning.of(target, self._by, keys)  # unknown columns and bad keys fail here
        if bounds is not None and target.protection.bounded:
            raise RefusedError("max_groups and max_rows_per_group are refused under bounded DP "
                               "(neighbours='replace'): their replace-one sensitivity is not derived")

    def _check_unit_sums(self, partitioning: Partitioning, bounds: Any, unit_sum_bounds: Any) -> None:
        """``sum(..., unit_sum_bounds=...)``'s arguments, before any charge."""
        if bounds is not None:
            raise ValueError("give bounds= (each row clipped) or unit_sum_bounds= (each unit's sum in a group "
                             "clipped), not both")
        if self._bounds is None:
            raise ValueError("unit_sum_bounds clips each unit's sum in each of its groups: group with max_groups and "
                             "max_rows_per_group (groupby(..., max_groups=, max_rows_per_group=)) to use it")
        if not partitioning.public:
            raise RefusedError("unit_sum_bounds needs public groups: declare them with keys= (or use a categorical "
                               "column)")
        check_bounds(unit_sum_bounds)

    def _needs_public_groups(self, query: str) -> None:
        """Refuse (before any charge) a query that selects no groups itself under max_groups/max_rows_per_group."""
        if self._bounds is not None and not self._partitioning.public:
            raise RefusedError(
                f"groupby {query} with max_groups and max_rows_per_group needs public groups: declare them with "
                "keys= (or use a categorical column), or ask groupby(...).count(...) first: the groups it releases "
                "are public from then on")

    @property
    def _partitioning(self) -> Partitioning:
        # Found at each query: categories an earlier query released are public by then (remembered).
        return Partitioning.of(self._target, self._by, self._keys)

    def _fresh(self) -> Target:
        return self._target.fresh() if self._shared is None else self._shared

    def _reader(self, target: Target) -> CellReader:
        if self._bounds is not None:
            # Under the bounds every read is bounded: the reader given (the kept rows with a value in a column,
            # BoundedCellReader.with_values_in) if it keeps these bounds, else the kept rows of target.
            read = self._read
            if isinstance(read, BoundedCellReader) and read.bounds == self._bounds:
                return read
            return BoundedCellReader(target, self._bounds)
        return CellReader(target) if self._read is None else self._read

    @overload
    def __getitem__(self, columns: list[Any]) -> ColumnGroupBy[pd.DataFrame]: ...

    @overload
    def __getitem__(self, columns: Hashable) -> ColumnGroupBy[pd.Series[Any]]: ...

    def __getitem__(self, columns: Any) -> ColumnGroupBy[Any]:
        """``gb["age"]`` or ``gb[["age", "hours"]]``: the same groups, those columns' statistics (pandas' spelling)."""
        return ColumnGroupBy(self, columns)

    def size(
        self, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy number of rows per group, like ``DataFrameGroupBy.size()``: :meth:`count`."""
        return self.count(epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism)

    def agg(
        self, spec: Mapping[Any, Any] | None = None, *, bounds: Any = None, epsilon: float | None = None,
        delta: float | None = None, rho: float | None = None, mechanism: str | None = None,
        **named: tuple[Any, str],
    ) -> pd.DataFrame:
        """Several statistics per group, ``{"age": "mean", "hours": ["sum", "std"]}``, the budget split equally;
        or pandas' named aggregation, ``agg(mean_age=("age", "mean"), n=("age", "count"))``.

        ``bounds`` is one pair for every column or a dict per column (missing:
        chosen privately). See :mod:`dpframe.queries.grouped` for the rule.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"k": pd.Categorical(["a", "b"] * 500), "x": [1.0, 2.0] * 500, "y": [5.0] * 1000})
        >>> p = df.dp.protect(epsilon=1.0)
        >>> table = p.dp.groupby("k").agg({"x": "mean", "y": "sum"}, bounds={"x": (0, 5), "y": (0, 10)}, epsilon=1.0)
        >>> list(table.columns), [round(v, 2) for v in p.dp.budget.ledger["epsilon"]]
        (['x', 'y'], [0.5, 0.5])
        """
        if named:
            if spec is not None:
                raise TypeError("agg takes a dict of statistics or named aggregation (name=(column, statistic)), "
                                "not both")
            parts, names = named_parts(named)
            return aggregate(self, parts, bounds=bounds, epsilon=epsilon, delta=delta, rho=rho, mechanism=mechanism,
                             names=names)
        return aggregate(self, parts_of(spec), bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                         mechanism=mechanism)

    def quantile(
        self, column: Any, q: Any = 0.5, *, bounds: Any = None, epsilon: float | None = None, rho: float | None = None,
    ) -> pd.Series[Any] | pd.DataFrame:
        """Private quantile(s) of ``column`` per group: see :func:`~dpframe.queries.select.grouped_quantile`.

        Groups that are not public are selected first by a private count (:data:`GROUP_SELECTION_SHARE` of the
        budget and the selection's delta, its own ledger line; the whole cost reserved before anything is
        read): a quantile is pure DP and cannot select them itself. Under ``max_groups`` and
        ``max_rows_per_group`` each group's selections spend ε/L0 (ρ/L0 on zCDP) with a rank utility of
        sensitivity L∞·max(q, 1 − q), on the rows the bounds keep.
        """
        from dpframe.queries.select import check_quantiles, grouped_quantile  # select builds on this module

        self._needs_public_groups("quantile")
        if self._partitioning.public:
            target = self._fresh()
            return grouped_quantile(target, self._partitioning, column, q, bounds=bounds, epsilon=epsilon, rho=rho,
                                    read=self._reader(target), group_bounds=self._bounds)
        levels, scalar = check_quantiles(q)  # every argument error before the charge
        check_numeric(self._target.column(column), "groupby quantile")
        if bounds is not None:
            check_bounds(bounds)
        self._target.privacy(epsilon, None, rho, None)  # epsilon or rho, valid

        def share(value: float | None, part: Fraction) -> float | None:
            return None if value is None else float(Fraction(value) * part)

        chosen = (share(epsilon, GROUP_SELECTION_SHARE), share(rho, GROUP_SELECTION_SHARE))
        rest = (share(epsilon, 1 - GROUP_SELECTION_SHARE), share(rho, 1 - GROUP_SELECTION_SHARE))
        shared = self._fresh()
        shared.reserve(self._privacy(chosen[0], None, chosen[1], None).cost,
                       self._target.privacy(rest[0], None, rest[1], None).cost,
                       query="groupby quantile with group selection")
        on_shared = type(self)(self._target, self._by, self._keys, shared=shared, read=self._read, bounds=self._bounds)
        on_shared.count(epsilon=chosen[0], rho=chosen[1])  # selects the groups; they are remembered
        partitioning = self._partitioning
        if partitioning.public:
            answer = grouped_quantile(shared, partitioning, column, q, bounds=bounds, epsilon=rest[0], rho=rest[1],
                                      read=self._reader(shared), group_bounds=self._bounds)
            release = current_release(answer)
            assert release is not None
            selected = (f"groups selected privately first by a noisy count ({GROUP_SELECTION_SHARE} of the budget "
                        "and the selection's delta, its own ledger line); rows of the others are not shown")
            return with_release(answer, replace(release, cost=shared.spent,  # type: ignore[no-any-return]
                                                note="; ".join(filter(None, [release.note, selected]))))
        # The selection released no group: nothing to answer for, and the quantile's share is not spent.
        index = product_index([pd.Index([])] * len(self._by), list(self._by))
        empty: pd.Series[Any] | pd.DataFrame = (pd.Series([], index=index, dtype=float, name=column) if scalar
                                                else pd.DataFrame([], index=index, columns=levels, dtype=float))
        return with_release(empty, Release(  # type: ignore[no-any-return]
            "groupby quantile", (str(column),), "none", shared.spent, float("nan"), float("nan"), float("nan"),
            LEVEL, None, "no group cleared the private selection of groups (too few rows per group for this "
            "epsilon): declare keys=, or spend more epsilon"))

    def median(
        self, column: Any, *, bounds: Any = None, epsilon: float | None = None, rho: float | None = None,
    ) -> pd.Series[Any]:
        """Private median of ``column`` per group, like ``gb[column].median()``: ``quantile(column, 0.5)``.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"k": pd.Categorical(["a", "b"] * 1000), "x": list(range(1000)) * 2})
        >>> m = df.dp.protect(epsilon=1.0).dp.groupby("k").median("x", bounds=(0, 1000), epsilon=1.0)
        >>> bool(abs(m["b"] - 500) < 30), m.name
        (True, 'x')
        """
        answer = self.quantile(column, 0.5, bounds=bounds, epsilon=epsilon, rho=rho)
        assert isinstance(answer, pd.Series)
        return answer

    def _columns_or_one(self, statistic: str, column: Any, arguments: dict[str, Any]) -> pd.DataFrame | None:
        """Several columns (a list): one release of several parts; one column: None (the caller answers)."""
        if not isinstance(column, list):
            return None
        return aggregate(self, [(c, statistic) for c in column], **arguments)

    def preview(self, query: str, *args: Any, **arguments: Any) -> Preview:
        """What ``query`` (count, sum, mean, var or std) would cost and how noisy it would be: nothing charged.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"k": pd.Categorical(["a", "b"] * 500), "x": [1.0, 2.0] * 500}).dp.protect(epsilon=1.0)
        >>> plan = p.dp.groupby("k").preview("mean", "x", bounds=(0, 5), epsilon=0.5)
        >>> plan.query, sorted(plan.measurements.index), p.dp.budget.spent.epsilon.exact
        ('groupby mean', ['count', 'sum'], Fraction(0, 1))
        """
        if query not in ("count", "sum", "mean", "var", "std"):
            raise ValueError(f"cannot preview {query!r} of a group-by: choose one of count, sum, mean, var, std")
        method = getattr(self, query)
        return preview_query(lambda: method(*args, **arguments))

    def _privacy(self, epsilon: float | None, delta: float | None, rho: float | None, mechanism: str | None) -> Privacy:
        # Under max_groups/max_rows_per_group, the groups are selected apart from the measurement, which may then
        # be Gaussian (the delta shared: bounded_selection_shares).
        selects = not self._partitioning.public and not (self._bounds is not None and mechanism == "gaussian")
        privacy = self._target.privacy(epsilon, delta, rho, mechanism, selects_partitions=selects)
        require_selection(self._partitioning, privacy)
        return privacy

    def count(
        self, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
        mechanism: str | None = None,
    ) -> pd.Series[Any]:
        """Noisy number of rows per group.

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"ok": [True, False] * 300}).dp.protect(epsilon=1.0)
        >>> c = p.dp.groupby("ok").count(epsilon=0.5)
        >>> list(c.index), bool(abs(c[True] - 300) < 30)
        ([False, True], True)
        """
        privacy = self._privacy(epsilon, delta, rho, mechanism)
        target = self._fresh()
        counts = release_counts("groupby count", target, self._partitioning, privacy, tuple(map(str, self._by)),
                                remainder=True, read=self._reader(target), bounds=self._bounds)
        result, release = _counts_with_remainder(counts, "count")
        return with_release(result, release)  # type: ignore[no-any-return]

    @overload
    def sum(self, column: list[Any], *, bounds: Any = ..., unit_sum_bounds: Any = ..., epsilon: float | None = ...,
            delta: float | None = ..., rho: float | None = ..., mechanism: str | None = ...) -> pd.DataFrame: ...

    @overload
    def sum(self, column: Hashable, *, bounds: Any = ..., unit_sum_bounds: Any = ..., epsilon: float | None = ...,
            delta: float | None = ..., rho: float | None = ..., mechanism: str | None = ...) -> pd.Series[Any]: ...

    def sum(
        self, column: Any, *, bounds: Any = None, unit_sum_bounds: Any = None, epsilon: float | None = None,
        delta: float | None = None, rho: float | None = None, mechanism: str | None = None,
    ) -> pd.Series[Any] | pd.DataFrame:
        """Noisy sum per group of ``column`` clipped to ``bounds``.

        ``unit_sum_bounds=(lower, upper)`` instead (with ``max_groups`` and ``max_rows_per_group``, public groups):
        each unit's sum of its rows in each of its kept groups -- all of them there -- is clipped to the bounds
        (PipelineDP's ``min_sum_per_partition``/``max_sum_per_partition``), and the clipped sums are added up per
        group: one unit moves a group by at most max(|lower|, |upper|) (docs/contribution-bounds.md).

        >>> import pandas as pd, dpframe
        >>> p = pd.DataFrame({"k": pd.Categorical(["a", "b"] * 500), "x": [1.0, 2.0] * 500}).dp.protect(epsilon=1.0)
        >>> s = p.dp.groupby("k").sum("x", bounds=(0, 5), epsilon=0.5)
        >>> bool(abs(s["b"] - 1000) < 100)
        True
        >>> visits = pd.DataFrame({"uid": [1, 2, 3, 4] * 100, "day": ["mon"] * 200 + ["tue"] * 200, "spend": 3.0})
        >>> u = visits.dp.protect(epsilon=100.0, privacy_unit="uid", max_contributions=100)
        >>> per_day = u.dp.groupby("day", keys=["mon", "tue"], max_groups=1, max_rows_per_group=1)
        >>> spend = per_day.sum("spend", unit_sum_bounds=(0, 100), epsilon=50.0)  # a uid's 50 visits a day: 150
        >>> int(round(spend.sum(), -2))  # each uid keeps one day, clipped to 100
        400
        """
        if unit_sum_bounds is not None and isinstance(column, list):
            raise TypeError("unit_sum_bounds clips the sums of one column: ask sum(column, unit_sum_bounds=...) for "
                            "each column")
        several = self._columns_or_one("sum", column, dict(bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                                                             mechanism=mechanism))
        if several is not None:
            return several
        target = self._fresh()
        series = target.column(column)
        check_numeric(series, "sum")
        if bounds is not None:
            check_bounds(bounds)
        partitioning = self._partitioning  # read once (see _moment_query)
        if unit_sum_bounds is not None:
            self._check_unit_sums(partitioning, bounds, unit_sum_bounds)
        privacy = self._privacy(epsilon, delta, rho, mechanism)
        selected = ""
        if self._bounds is not None and not partitioning.public:
            partitioning, privacy, selected = self._select_bounded(target, partitioning, "sum", series, bounds, privacy)
        if not partitioning.public:
            # Groups must be selected with a count; the mean machinery measures both.
            return self._moment_query(target, "sum", series, bounds, privacy)
        total, note = privacy, ""
        # Rows one unit may add to one group; with unit_sum_bounds, one clipped sum per unit and group.
        k = target.contributions if self._bounds is None else self._bounds.max_rows_per_group
        if unit_sum_bounds is not None:
            bounds, k = unit_sum_bounds, 1
            note = ("each unit's sum of its rows in each of its kept groups (all of them: max_rows_per_group does not "
                    "apply) clipped to the bounds")
        bounds = schema_bounds(series) if bounds is None else bounds
        if bounds is None:

            def check(rest: Privacy) -> None:
                rest.noise(SumGrid.choose(-1.0, 1.0, k, rest).sensitivity)

            bounds, privacy, _ = automatic_bounds(target, series, privacy, "groupby sum", check,
                                                  reads=self._reader(target).bounds_reads(column))
            note = bounds_note(bounds, total)
        if any(partitioning.remembered):
            note = "; ".join(filter(None, [note, REMEMBERED_GROUPS]))
        note = "; ".join(filter(None, [note, selected]))
        lo, hi = check_bounds(bounds)
        grid = SumGrid.choose(lo, hi, k, privacy)
        # grid.sensitivity bounds the change of k rows in one group (its rounding to the release grid included);
        # k rows spread over k groups round once in each.
        if self._bounds is None:
            noise, rule = privacy.noise(grid.spread_sensitivity(k)), "parallel composition over groups"
        else:
            noise = self._bounds.noise(privacy, grid.sensitivity)
            rule = self._bounds.rule() if unit_sum_bounds is None else self._bounds.unit_sum_rule(lo, hi)
        step = grid.release_step
        plan = Plan("groupby sum", (str(column),), target, privacy, {"sum": noise}, {"sum": step}, rule=rule)
        plan.charge()
        kernel = kernels.MomentKernel(0.0, grid)
        if unit_sum_bounds is not None and self._bounds is not None:
            exact, cells = BoundedCellReader(target, self._bounds).unit_sums(partitioning, column, kernel)
        else:
            exact, cells = self._reader(target).moments(partitioning, column, kernel)
        noisy = (grid.to_release_grid(exact.sums) + noise.sample(len(cells))).astype(np.float64) * step
        result = pd.Series(noisy, index=cells, name=column)
        half = noise.halfwidth(LEVEL) * step
        release = Release(plan.query, plan.columns, plan.mechanism, target.spent, noise.std * step,
                          result - half, result + half, LEVEL, (lo, hi), note)
        return with_release(result, release)  # type: ignore[no-any-return]

    @overload
    def mean(self, column: list[Any], *, bounds: Any = ..., epsilon: float | None = ...,
             delta: float | None = ..., rho: float | None = ..., mechanism: str | None = ...) -> pd.DataFrame: ...

    @overload
    def mean(self, column: Hashable, *, bounds: Any = ..., epsilon: float | None = ...,
             delta: float | None = ..., rho: float | None = ..., mechanism: str | None = ...) -> pd.Series[Any]: ...

    def mean(
        self, column: Any, *, bounds: Any = None, epsilon: float | None = None, delta: float | None = None,
        rho: float | None = None, mechanism: str | None = None,
    ) -> pd.Series[Any] | pd.DataFrame:
        """Noisy mean per group of ``column`` clipped to ``bounds`` (a list of columns: a frame, the budget split)."""
        several = self._columns_or_one("mean", column, dict(bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                                                              mechanism=mechanism))
        if several is not None:
            return several
        target = self._fresh()
        return self._moment_query(target, "mean", target.column(column), bounds,
                                  self._privacy(epsilon, delta, rho, mechanism))

    @overload
    def var(self, column: list[Any], *, bounds: Any = ..., ddof: int = ..., epsilon: float | None = ...,
            delta: float | None = ..., rho: float | None = ..., mechanism: str | None = ...) -> pd.DataFrame: ...

    @overload
    def var(self, column: Hashable, *, bounds: Any = ..., ddof: int = ..., epsilon: float | None = ...,
            delta: float | None = ..., rho: float | None = ..., mechanism: str | None = ...) -> pd.Series[Any]: ...

    def var(
        self, column: Any, *, bounds: Any = None, ddof: int = 1, epsilon: float | None = None,
        delta: float | None = None, rho: float | None = None, mechanism: str | None = None,
    ) -> pd.Series[Any] | pd.DataFrame:
        """Noisy variance per group of ``column`` clipped to ``bounds``.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"k": pd.Categorical(["a"] * 2000), "x": [0.0, 10.0] * 1000})
        >>> v = df.dp.protect(epsilon=1.0).dp.groupby("k").var("x", bounds=(0, 10), epsilon=1.0)
        >>> bool(abs(v["a"] - 25) < 2)
        True
        """
        several = self._columns_or_one("var", column, dict(bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                                                              mechanism=mechanism))
        if several is not None:
            return several
        target = self._fresh()
        return self._moment_query(target, "var", target.column(column), bounds,
                                  self._privacy(epsilon, delta, rho, mechanism), ddof)

    @overload
    def std(self, column: list[Any], *, bounds: Any = ..., ddof: int = ..., epsilon: float | None = ...,
            delta: float | None = ..., rho: float | None = ..., mechanism: str | None = ...) -> pd.DataFrame: ...

    @overload
    def std(self, column: Hashable, *, bounds: Any = ..., ddof: int = ..., epsilon: float | None = ...,
            delta: float | None = ..., rho: float | None = ..., mechanism: str | None = ...) -> pd.Series[Any]: ...

    def std(
        self, column: Any, *, bounds: Any = None, ddof: int = 1, epsilon: float | None = None,
        delta: float | None = None, rho: float | None = None, mechanism: str | None = None,
    ) -> pd.Series[Any] | pd.DataFrame:
        """Noisy standard deviation per group of ``column`` clipped to ``bounds``.

        >>> import pandas as pd, dpframe
        >>> df = pd.DataFrame({"k": pd.Categorical(["a"] * 2000), "x": [0.0, 10.0] * 1000})
        >>> s = df.dp.protect(epsilon=1.0).dp.groupby("k").std("x", bounds=(0, 10), epsilon=1.0)
        >>> bool(abs(s["a"] - 5) < 0.5)
        True
        """
        several = self._columns_or_one("std", column, dict(bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
                                                              mechanism=mechanism))
        if several is not None:
            return several
        target = self._fresh()
        return self._moment_query(target, "std", target.column(column), bounds,
                                  self._privacy(epsilon, delta, rho, mechanism), ddof)

    def _select_bounded(
        self, target: Target, partitioning: Partitioning, query: str, series: pd.Series[Any], bounds: Any,
        privacy: Privacy, order: int = 1, ddof: int = 1,
    ) -> tuple[Partitioning, Privacy, str]:
        """Under max_groups/max_rows_per_group over unknown groups: validate, reserve the selection and the
        measurement together, select the groups (:func:`select_bounded_groups`); return them as public groups,
        the measurement's privacy and the selection's note. ``query``: sum (one measurement per group) or the
        moment statistic of ``order`` (:class:`~dpframe.queries.scalar.Moments`)."""
        assert self._bounds is not None
        # Measured: a sum, or the count and sums of the moments (order 1: mean, 2: var, std).
        selection, measurement, _ = bounded_selection_shares(privacy, 1 if query == "sum" else order + 1,
                                                             remainder=False)
        check_bounded_selection(self._bounds, selection)
        # Every argument error of the measurement before the reservation (bounds found privately take a share).
        found = bounds is None and schema_bounds(series) is None
        declared = (0.0, 1.0) if found else schema_bounds(series) if bounds is None else bounds
        rest = split_privacy(measurement)[2] if found else measurement
        if query == "sum":
            lo, hi = check_bounds(declared)
            self._bounds.noise(rest, SumGrid.choose(lo, hi, self._bounds.max_rows_per_group, rest).sensitivity)
        else:
            Moments(target, series, declared, rest, f"groupby {query}", order, ddof=ddof, group_bounds=self._bounds)
        target.reserve(selection.cost, measurement.cost, query=f"groupby {query} with group selection")
        chosen = select_bounded_groups(f"groupby {query}", target, partitioning, self._bounds, selection,
                                       (str(series.name),))
        return chosen.partitioning, measurement, f"{chosen.note}; the others are not shown"

    def _moment_query(
        self, target: Target, query: str, series: pd.Series[Any], bounds: Any, privacy: Privacy, ddof: int = 1
    ) -> pd.Series[Any]:
        order = 2 if query in ("var", "std") else 1
        # Read once: another thread may make the groups public mid-query, and the selection below must not lapse.
        partitioning = self._partitioning
        selected = ""
        if self._bounds is not None and not partitioning.public:
            partitioning, privacy, selected = self._select_bounded(target, partitioning, query, series, bounds,
                                                                   privacy, order, ddof)
        rule = "parallel composition over groups" + ("" if partitioning.public else ", private group selection")
        moments, note, _ = with_bounds(f"groupby {query}", target, series, bounds, privacy, order,
                                       rule if self._bounds is None else self._bounds.rule(), ddof,
                                       reads=self._reader(target).bounds_reads(series.name), group_bounds=self._bounds,
                                       cells=target.contributions if self._bounds is None else 1)
        moments.plan.charge()
        exact, cells = self._reader(target).moments(partitioning, series.name, moments.kernel)
        measured = moments.noisy(exact)
        if not partitioning.public:
            share_delta = float(privacy.delta) / (order + 1)
            threshold = selection_threshold(moments.noise["count"], target.contributions, share_delta)
            keep = measured["count"] >= threshold
            cells = cells[keep]
            ranked = public_order(cells)
            measured = {name: value[keep][ranked] for name, value in measured.items()}
            cells = cells[ranked]
            partitioning.remember(target, cells)
            note += (f"; groups released by private partition selection (noisy count >= {threshold}); the others "
                     "are not shown (groupby(...).count() counts their rows together)")
        elif any(partitioning.remembered):
            note += f"; {REMEMBERED_GROUPS}"
        elif selected:
            note += f"; {selected}"
        if query == "sum":
            # Selected groups: the sum of deviations plus the noisy count times the centre.
            ones = np.ones(len(cells))
            estimate = moments.linearised(
                measured["sum"] + measured["count"] * moments.center,
                {"sum": ones, "count": ones * moments.center},
                ones * (moments.grid.release_step / 2 + measured["count"].clip(min=0) * float(moments.grid.data_step) / 2),
            )
            lower, upper = estimate.interval(-np.inf, np.inf)
        else:
            estimate = moment_result(query, moments, measured)
            lower, upper = estimate.interval(*value_range(query, moments))
        values = np.array(estimate.value, dtype=np.float64, copy=True)
        automatic = bounds is None and schema_bounds(series) is None
        # The bounds were found on the whole column: the released groups' noisy counts added up say how many rows
        # (fewer than it: the rows of groups not released are not in them, which only marks more).
        few = automatic and few_rows(target, privacy, None, (float(measured["count"].sum()),
                                                             math.sqrt(len(cells)) * moments.stds()["count"]))
        if automatic and query != "sum":
            swamped = _swamped(query, moments, estimate.reach)
            if swamped.any():
                values[swamped], lower, upper = np.nan, np.where(swamped, np.nan, lower), np.where(swamped, np.nan, upper)
                note += (f"; {int(swamped.sum())} of {len(cells)} groups missing: their interval spans half the "
                         f"bounds chosen privately or more, so the bounds did not stand out of the noise (too few "
                         f"rows for this epsilon): declare bounds=(lower, upper) from the domain, or spend more "
                         f"epsilon")
        result = pd.Series(values, index=cells, name=series.name)
        release = Release(
            moments.plan.query, moments.plan.columns, moments.plan.mechanism,
            target.spent,
            pd.Series(estimate.std, index=cells, dtype=float), pd.Series(lower, index=cells, dtype=float),
            pd.Series(upper, index=cells, dtype=float),
            LEVEL, (moments.lo, moments.hi), "approximate intervals (delta method)" + note,
            clamp=estimate.clamped(cells), weak_bounds=few,
        )
        return with_release(result, release)  # type: ignore[no-any-return]
