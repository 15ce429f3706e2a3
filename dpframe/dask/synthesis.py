"""``p.dp.synthesize()`` on a protected Dask frame: marginals counted on the partitions, the model fitted on the client.

The pandas synthesizer (:func:`dpframe.synthesis.synthesize.synthesize`) plans,
checks and charges from the schema (Dask's ``_meta``) and the arguments, as on
pandas. Its only contact with the data is then :class:`DaskMarginals`: each
partition is coded with the same public domains (the pandas
:meth:`~dpframe.synthesis.domain.ColumnDomain.encode`), the flattened cell
index of every requested marginal is counted with ``np.bincount``, and the
per-partition counts -- integers -- are added up exactly, in a tree. The
marginals a synthesizer says it will need (``Marginals.expect``: MST every
pair, AIM every candidate) are counted with the one-way marginals, in one
Dask compute while they fit in :data:`PREFETCH_CELLS`; any others, one compute
per step that asks for them. Codes merged or dropped afterwards (rare codes,
:class:`~dpframe.synthesis.measure.Compression`) are applied to the counts,
not to the data. The same noise is then added on the client: with the same
seed, the synthetic frame and the ledger lines are the pandas ones.

Domains found privately use the pandas discovery with the same seam: every
histogram it measures of a numeric column (octaves for the bounds,
resolutions, fine cells for the bins) is counted per partition and added up
exactly, one Dask compute each, after its own charge; so are the value counts
that text categories and the common values of numbers are selected from
(canonical keys in a public order, :func:`~dpframe.synthesis.domain.added_value_counts`).
The bounds of datetimes (the sparse vector) are not built on Dask yet: a
column that would need them is refused before anything is charged, saying what
to declare.

>>> import numpy as np, pandas as pd, dask.dataframe as dd, dpframe, dpframe.dask
>>> rng = np.random.default_rng(0)
>>> df = pd.DataFrame({"age": rng.integers(18, 80, 2000), "smoker": rng.random(2000) < 0.3})
>>> p = dd.from_pandas(df, npartitions=4).dp.protect(epsilon=2.0, name="doctest", ledger=dpframe.Ledger.in_memory())
>>> syn = p.dp.synthesize(epsilon=1.0, method="mst", bounds={"age": (18, 80)}, bins=16, progress=False)
>>> list(syn.dtypes.astype(str)), 1800 < len(syn) < 2200, p.dp.budget.ledger["query"].tolist()
(['int64', 'bool'], True, ['synthesize'])
>>> syn = p.dp.synthesize(epsilon=1.0, method="mst", progress=False)  # the bounds of age found privately
>>> p.dp.budget.ledger["query"].tolist()[1:]
['rows for synthesize', 'bounds for synthesize', 'bins for synthesize', 'synthesize']
>>> text = dd.from_pandas(pd.DataFrame({"city": ["Oslo", "Rome"] * 1000}), npartitions=2)
>>> syn = text.dp.protect(epsilon=1.0, delta=1e-6, name="text", ledger=dpframe.Ledger.in_memory()).dp.synthesize(
...     epsilon=1.0, delta=1e-6, progress=False)  # the categories selected privately
>>> sorted(syn["city"].unique())
['Oslo', 'Rome']
>>> dates = dd.from_pandas(pd.DataFrame({"day": pd.date_range("2020-01-01", periods=200)}), npartitions=2)
>>> dates.dp.protect(epsilon=1.0, name="dates", ledger=dpframe.Ledger.in_memory()).dp.synthesize(
...     epsilon=1.0, progress=False)
Traceback (most recent call last):
...
ValueError: synthesize on a Dask frame cannot find the domains of ['day'] privately yet: declare \
bounds={'day': (lower, upper)} or bin edges bins={'day': [...]}; or synthesize from a pandas frame
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from dask.delayed import delayed
from numpy.typing import NDArray

from dpframe.dask.shield import computed
from dpframe.queries.plan import Target
from dpframe.synthesis.domain import (
    Cells, ColumnDomain, Count, DomainPlan, ValueCounts, _advice, added_value_counts, axis_values, value_counts_of,
)
from dpframe.synthesis.measure import Marginals
from dpframe.synthesis.model import Array, Clique
from dpframe.synthesis.spending import Share
from dpframe.synthesis.synthesize import synthesize as synthesize_frame

# The most cells of expected marginals counted ahead of need in one pass (int64: 32 MB per partition's tables).
PREFETCH_CELLS = 2**22
# Per-partition tables are added in a tree of this many at a time (bounded memory on the client and workers).
SPLIT_EVERY = 8


def _partition_counts(part: pd.DataFrame, names: Sequence[Any], domains: Sequence[ColumnDomain],
                      cliques: Sequence[Clique]) -> list[NDArray[np.int64]]:
    """The exact counts of each clique's marginal in one partition, on the domains' codes."""
    codes: dict[int, NDArray[np.int64]] = {}
    out = []
    for clique in cliques:
        for a in clique:
            if a not in codes:
                codes[a] = domains[a].encode(part[names[a]])
        shape = tuple(domains[a].size for a in clique)
        cells = np.ravel_multi_index(tuple(codes[a] for a in clique), shape)
        out.append(np.bincount(cells, minlength=math.prod(shape)).reshape(shape))
    return out


def _present_cells(part: pd.Series[Any], cells: Cells, size: int) -> list[NDArray[np.int64]]:
    """The count of one partition's non-missing values (on the column's axis) in each cell."""
    values = axis_values(part)
    return [np.bincount(cells(values[~np.isnan(values)]), minlength=size)]


def _length(part: pd.DataFrame) -> list[NDArray[np.int64]]:
    """One partition's number of rows, as a count table."""
    return [np.array([len(part)], dtype=np.int64)]


def _add(tables: Sequence[list[NDArray[np.int64]]]) -> list[NDArray[np.int64]]:
    """Element-wise sums of lists of count tables (integers: exact in any order)."""
    return [np.sum(same, axis=0) for same in zip(*tables)]


def _tree_sum(parts: list[Any], add: Callable[[Sequence[Any]], Any] = _add) -> Any:
    """The delayed sum of per-partition counts (default: count tables), ``SPLIT_EVERY`` at a time."""
    while len(parts) > 1:
        parts = [delayed(add)(parts[i:i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)]
    return parts[0]


def _mapped(table: NDArray[np.int64], axis: int, mapping: NDArray[np.int64], size: int) -> NDArray[np.int64]:
    """``table`` with the codes of one axis mapped through ``mapping`` (-1: dropped): counts of merged codes add."""
    moved = np.moveaxis(table, axis, 0)
    out = np.zeros((size, *moved.shape[1:]), dtype=np.int64)
    kept = mapping >= 0
    np.add.at(out, mapping[kept], moved[kept])
    return np.moveaxis(out, 0, axis)


@dataclass(frozen=True)
class _Source:
    """The Dask frame, the coded columns' names and domains, and the exact counts read so far (on those codes)."""

    data: Any
    names: tuple[Any, ...]
    domains: tuple[ColumnDomain, ...]
    read: dict[Clique, NDArray[np.int64]] = field(default_factory=dict)
    expected: list[Clique] = field(default_factory=list)
    computes: list[int] = field(default_factory=list)  # per Dask compute, how many tables it counted

    def counts(self, cliques: Sequence[Clique]) -> list[NDArray[np.int64]]:
        """Exact counts of each clique (on the domains' codes); the ones not read yet in one Dask compute,
        with the expected ones that fit in :data:`PREFETCH_CELLS`."""
        unread = list(dict.fromkeys(c for c in cliques if c not in self.read))
        if unread:
            cells = sum(self._cells(c) for c in unread)
            for clique in dict.fromkeys(self.expected):
                if clique not in self.read and clique not in unread and cells + self._cells(clique) <= PREFETCH_CELLS:
                    unread.append(clique)
                    cells += self._cells(clique)
            self.expected.clear()
            parts = self.data[list(self.names)].to_delayed()
            partials = [delayed(_partition_counts)(part, self.names, self.domains, unread) for part in parts]
            total = computed(_tree_sum(partials))
            self.read.update(zip(unread, total))
            self.computes.append(len(unread))
        return [self.read[c] for c in cliques]

    def _cells(self, clique: Clique) -> int:
        return math.prod(self.domains[a].size for a in clique)


@dataclass(frozen=True)
class DaskMarginals:
    """Exact marginal counts of a Dask frame's coded columns (:class:`~dpframe.synthesis.measure.Marginals`).

    ``mappings`` recode the domains' codes (rare codes merged, unsupported missing codes dropped: -1);
    they apply to the counts, so recoding never reads the data again.
    """

    source: _Source
    sizes: tuple[int, ...]
    missing: tuple[tuple[int, ...], ...]
    mappings: tuple[NDArray[np.int64] | None, ...]

    def counts_of(self, cliques: Sequence[Clique]) -> list[Array]:
        """Exact counts of each clique's marginal, as :meth:`CodedData.counts`; one Dask compute for the unread."""
        out = []
        for clique, table in zip(cliques, self.source.counts(cliques)):
            for axis, a in enumerate(clique):
                mapping = self.mappings[a]
                if mapping is not None:
                    table = _mapped(table, axis, mapping, self.sizes[a])
            out.append(table.astype(np.float64))
        return out

    def expect(self, cliques: Sequence[Clique]) -> None:
        """Count these marginals (on the domains' codes) in the next pass, while they fit in :data:`PREFETCH_CELLS`."""
        self.source.expected.extend(cliques)

    def recode(self, attribute: int, mapping: NDArray[np.int32], size: int) -> Marginals:
        """One attribute's codes mapped through ``mapping`` (composed with earlier mappings)."""
        before = self.mappings[attribute]
        step = np.asarray(mapping, dtype=np.int64)
        composed = step if before is None else np.where(before >= 0, step[np.maximum(before, 0)], -1)
        mappings, sizes, missing = list(self.mappings), list(self.sizes), list(self.missing)
        mappings[attribute], sizes[attribute] = composed, size
        missing[attribute] = tuple(int(step[c]) for c in missing[attribute] if step[c] >= 0)
        return DaskMarginals(self.source, tuple(sizes), tuple(missing), tuple(mappings))


@dataclass(frozen=True)
class DaskReader:
    """Reads a protected Dask frame for :func:`~dpframe.synthesis.synthesize.synthesize`."""

    data: Any
    computes: list[int] = field(default_factory=list)  # per Dask compute, how many tables it counted

    def check(self, plan: DomainPlan, discovery: Share | None) -> None:
        """Refuse, before any charge, the domains whose private discovery is not built on Dask yet: the bounds of
        datetimes (the sparse vector). Built: the histograms of numbers and the value counts of selections."""
        needs = {e.name: e.need for e in plan.entries if e.need == "bounds" and e.kind == "datetime"}
        if needs:
            advice = "; ".join(_advice(name, need) for name, need in needs.items())
            raise ValueError(
                f"synthesize on a Dask frame cannot find the domains of {[str(c) for c in needs]} privately yet: "
                f"{advice}; or synthesize from a pandas frame"
            )

    def counts(self, target: Target, name: Any) -> Count:
        """A column's exact histogram: per-partition ``np.bincount`` of its cells, added up; one compute each."""

        def count(cells: Cells, size: int) -> NDArray[np.int64]:
            partials = [delayed(_present_cells)(part, cells, size) for part in self.data[name].to_delayed()]
            (table,) = computed(_tree_sum(partials))
            self.computes.append(1)
            return np.asarray(table, dtype=np.int64)

        return count

    def values(self, target: Target, name: Any) -> ValueCounts:
        """A column's values and their exact counts: per partition, added up; one compute."""
        partials = [delayed(value_counts_of)(part) for part in self.data[name].to_delayed()]
        counted: ValueCounts = computed(_tree_sum(partials, added_value_counts))
        self.computes.append(1)
        return counted

    def rows(self, target: Target) -> int:
        """The number of rows: per-partition lengths, added up; one compute."""
        partials = [delayed(_length)(part) for part in self.data.to_delayed()]
        (table,) = computed(_tree_sum(partials))
        self.computes.append(1)
        return int(table[0])

    def marginals(self, target: Target, names: Sequence[Any], domains: Sequence[ColumnDomain]) -> Marginals:
        """The lazily coded partitions; counting happens when the synthesizer asks for marginals."""
        source = _Source(self.data, tuple(names), tuple(domains), computes=self.computes)
        return DaskMarginals(source, tuple(d.size for d in domains), tuple(d.missing_codes for d in domains),
                             (None,) * len(domains))


def synthesize(obj: Any, reader: DaskReader | None = None, **arguments: Any) -> pd.DataFrame:
    """``p.dp.synthesize(...)`` of a protected Dask frame: the pandas arguments, ledger lines and result.

    ``reader`` (default: a new :class:`DaskReader` of the frame) records the Dask computes.
    """
    from dpframe.dask.frame import ProtectedDaskFrame

    if not isinstance(obj, ProtectedDaskFrame):
        raise TypeError("synthesize works on a protected DataFrame; use series.to_frame() for a single column")
    protection = obj._protection
    if protection.max_contributions != 1 or protection.privacy_unit is not None:
        raise ValueError("synthesize on a Dask frame supports row-level protection only for now: synthesize "
                         "from a pandas frame protected by privacy unit")
    meta = obj._rows_in_use._meta
    wanted = arguments.get("columns")
    # Columns as pandas reads them; malformed ones are left to the pandas checks and their messages.
    names = list(meta.columns) if wanted is None else (
        [] if isinstance(wanted, (str, bytes)) or not isinstance(wanted, Iterable) else list(wanted))
    unknown = [str(c) for c in names if c in meta.columns and isinstance(meta[c].dtype, pd.CategoricalDtype)
               and not obj._rows_in_use[c].cat.known]
    if unknown:  # their _meta holds a placeholder, not the categories
        raise ValueError(
            f"the Dask columns {unknown} are categorical with unknown categories: make them known before protect() "
            "with ddf[column].cat.set_categories([...]) from the categories you know"
        )
    return synthesize_frame(obj._target(), reader=DaskReader(obj._rows_in_use) if reader is None else reader, **arguments)
