"""Optimal full-domain generalization with suppression: a pruned search over the generalization lattice.

Every quasi-identifier has a hierarchy of levels ``0..h``. A *node* of the
lattice picks one level per column; it is *feasible* when the rows in
equivalence classes that fail the privacy model (fewer than k rows, not
l-diverse, not t-close) number at most ``floor(suppression * n)`` -- those
rows are then suppressed (removed). This is ARX's definition, so results can
be compared with ARX.

How a node is evaluated: every column is encoded once; at a node each
column's codes go through a per-level lookup table, the codes combine into
one int64 key (constant columns skipped), and class sizes come from one
``np.bincount`` or one sort of the keys packed with their multiplicities --
over the distinct quasi-identifier tuples, not the rows.

How the lattice is searched (sound, not heuristic):

1. Feasibility under k-anonymity and distinct l-diversity with suppression
   is monotone: a more general node merges classes, and a merged class that
   fails is made only of classes that failed, so it suppresses a subset of
   the rows. Like ARX's Flash, the search walks upward paths through the
   lattice and binary-searches each path; a feasible node tags all its
   successors feasible, an infeasible one tags all its predecessors
   infeasible, until every node that could still be optimal is known.
2. For a monotone metric (entropy, discernibility DM*, height, precision --
   more generalization never costs less) the optimum is a *minimal*
   feasible node, so only those are compared. AECS is not monotone with
   suppression; every feasible node is a candidate, pruned with ARX's lower
   bound ``n / (number of classes)``, which only grows upward.
3. Entropy l-diversity and t-closeness are not monotone when rows may be
   suppressed (a merged class can fail although one of its parts passed).
   Step 1 then runs on a monotone relaxation (k, and at least ``ceil(l)``
   distinct values) that every feasible node must pass, and the exact check
   runs on its survivors in order of increasing loss (or with the bounds
   above), so the result is still the exact optimum. With no suppression
   they are monotone (entropy is concave, the EMD convex) and step 1 uses
   the full model.

Throughout, a node whose loss (or lower bound) cannot beat the best feasible
node found so far is pruned with everything above it, so most of the
lattice is never evaluated: on the Adult data (9 quasi-identifiers, 12,960
nodes, k = 5, 2% suppression) 1,300-3,300 nodes are, in about half a second.

Ties in loss go to the lower node (sum of levels), then to the first node in
column order. None of this is differentially private, and it spends no
privacy budget.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.anonymity._encode import KEY_LIMIT, NOT_DP, IntArray, columns_of, combine, compact
from dpframe.anonymity.hierarchy import ColumnHierarchy, HierarchySpec
from dpframe.anonymity.measures import sensitive_codes, sensitive_stats

Metric = Literal["entropy", "discernibility", "aecs", "height", "precision"]
METRICS: tuple[str, ...] = ("entropy", "discernibility", "aecs", "height", "precision")
_SEPARABLE = ("entropy", "height", "precision")  # the loss follows from the levels alone
_TOL = 1e-12
_DENSE = 4  # count classes with a dense bincount while the key range is at most this many times the tuples

_UNKNOWN, _FEASIBLE, _INFEASIBLE = 0, 1, 2


@dataclass(frozen=True, eq=False)
class AnonymizationResult:
    """A generalized frame and how it was obtained. NOT differentially private; no privacy budget spent.

    ``data`` is the generalized frame without the suppressed rows (same
    columns, index and ``attrs``: a protected frame stays protected, with
    its budget untouched); ``levels`` the chosen level per quasi-identifier;
    ``suppressed`` the number of rows removed; ``loss`` the information loss
    under ``metric``, and ``losses`` the chosen node under every metric.

    >>> import pandas as pd
    >>> res = anonymize(pd.DataFrame({"age": [31, 35, 38, 52]}), k=2, quasi_identifiers=["age"], suppression=0.25)
    >>> res.levels, res.suppressed, res.data["age"].tolist()
    ({'age': 1}, 1, [30, 30, 30])
    >>> res  # doctest: +ELLIPSIS
    AnonymizationResult(k=2: levels age=1; 1 of 4 rows suppressed (limit 1); entropy loss 4.75489; ... -- not differentially private; no privacy budget spent)
    """

    data: pd.DataFrame
    levels: dict[Hashable, int]
    suppressed: int
    loss: float
    metric: str
    losses: dict[str, float]
    k: int
    l: float | None  # noqa: E741
    t: float | None
    n_rows: int
    suppression_limit: int
    lattice_size: int
    nodes_evaluated: int
    seconds: float

    def __repr__(self) -> str:
        levels = ", ".join(f"{c}={v}" for c, v in self.levels.items())
        model = f"k={self.k}" + (f", l={self.l:g}" if self.l is not None else "") + (
            f", t={self.t:g}" if self.t is not None else ""
        )
        return (
            f"AnonymizationResult({model}: levels {levels}; {self.suppressed:,} of {self.n_rows:,} rows suppressed "
            f"(limit {self.suppression_limit:,}); {self.metric} loss {self.loss:.6g}; "
            f"{self.nodes_evaluated:,} of {self.lattice_size:,} lattice nodes evaluated in {self.seconds:.3g} s -- "
            f"{NOT_DP})"
        )


@dataclass
class _Eval:
    """What one lattice node does to the data."""

    relaxed_suppressed: int  # rows failing the monotone relaxation of the model
    suppressed: int  # rows failing the full model
    classes: int  # equivalence classes before suppression
    kept: int  # classes that pass
    dm: int  # DM*: sum of squared class sizes, suppressed classes included


class _Problem:
    """The data encoded once: distinct quasi-identifier (+ sensitive) tuples with their multiplicities."""

    def __init__(
        self,
        df: pd.DataFrame,
        columns: list[Hashable],
        hierarchies: Mapping[Hashable, HierarchySpec],
        k: int,
        sensitive: Hashable | None,
        l: float | None,  # noqa: E741
        diversity: str,
        t: float | None,
        closeness: str,
        order: Sequence[Any] | None,
        limit: int,
    ) -> None:
        self.n = len(df)
        self.k, self.l, self.diversity, self.t, self.closeness, self.limit = k, l, diversity, t, closeness, limit
        self.hierarchies = [ColumnHierarchy.build(df[c], hierarchies.get(c)) for c in columns]
        parts = [(h.codes, h.cards[0]) for h in self.hierarchies]
        self.uses_sensitive = sensitive is not None and (l is not None or t is not None)
        values: IntArray = np.zeros(self.n, dtype=np.int64)
        self.n_values = 1
        if self.uses_sensitive:
            values, self.n_values = sensitive_codes(df[sensitive], order)
            parts.append((values, self.n_values))
        self.global_counts = np.bincount(values, minlength=self.n_values).astype(np.float64)
        key, card = combine(parts, self.n)
        self.row_unit, n_units = compact(key, card)
        first = np.full(n_units, self.n, dtype=np.int64)
        np.minimum.at(first, self.row_unit, np.arange(self.n, dtype=np.int64))
        self.weights: IntArray = np.bincount(self.row_unit, minlength=n_units).astype(np.int64)
        self.float_weights = self.weights.astype(np.float64)
        self.weight_bits = max(int(self.weights.max()).bit_length(), 1)
        self.unit_values: IntArray = values[first]
        # Each column's generalized codes per distinct tuple, at every level (when that fits in memory).
        cells = sum(h.height + 1 for h in self.hierarchies) * n_units
        self.generalized: list[list[IntArray]] | None = None
        if cells <= 40_000_000:
            self.generalized = [
                [h.maps[level][h.codes[first]] for level in range(h.height + 1)] for h in self.hierarchies
            ]
        self.unit_codes = [h.codes[first] for h in self.hierarchies]
        self.min_distinct = math.ceil(l - 1e-9) if l is not None else 0
        # The full model is monotone unless entropy-l or t-closeness meet suppression.
        self.monotone = limit == 0 or (t is None and (l is None or diversity == "distinct"))
        self.evaluations = 0
        self.cache: dict[int, _Eval] = {}

    @property
    def heights(self) -> list[int]:
        return [h.height for h in self.hierarchies]

    def keys(self, levels: Sequence[int]) -> tuple[IntArray, int]:
        """The class key of every distinct tuple at a node (constant columns skipped)."""
        key: IntArray | None = None
        card = 1
        for c, level in enumerate(levels):
            h = self.hierarchies[c]
            cc = h.cards[level]
            if cc == 1:
                continue
            codes = self.generalized[c][level] if self.generalized is not None else h.maps[level][self.unit_codes[c]]
            if key is None:
                key, card = codes.copy(), cc
                continue
            if card * cc >= KEY_LIMIT:
                key, card = compact(key, card)
            key *= cc
            key += codes
            card *= cc
        if key is None:
            return np.zeros(len(self.weights), dtype=np.int64), 1
        return key, card

    def sizes(self, key: IntArray, card: int) -> IntArray:
        """Class sizes (sum of the tuples' multiplicities per key), dense or by one packed sort."""
        if card <= _DENSE * len(key) + 1024:
            counts = np.bincount(key, weights=self.float_weights, minlength=card)
            return counts[counts > 0].astype(np.int64)
        if card.bit_length() + self.weight_bits > 62:
            key, card = compact(key, card)
            return self.sizes(key, card)
        packed = (key << self.weight_bits) | self.weights
        packed.sort()
        keys = packed >> self.weight_bits
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        return np.add.reduceat(packed & ((1 << self.weight_bits) - 1), starts)

    def classify(self, levels: Sequence[int]) -> tuple[IntArray, IntArray, NDArray[np.bool_], NDArray[np.bool_]]:
        """Class of every distinct tuple, class sizes, and which classes fail (relaxed model, full model)."""
        key, card = self.keys(levels)
        classes, n_classes = compact(key, card)
        sizes = np.bincount(classes, weights=self.weights, minlength=n_classes).astype(np.int64)
        relaxed_bad = sizes < self.k
        bad = relaxed_bad.copy()
        if self.uses_sensitive:
            stats = sensitive_stats(
                classes,
                n_classes,
                self.unit_values,
                self.n_values,
                self.weights,
                ordered=self.t is not None and self.closeness == "ordered",
                global_counts=self.global_counts,
            )
            relaxed_bad |= stats.distinct < self.min_distinct
            bad |= stats.distinct < self.min_distinct
            if self.l is not None and self.diversity == "entropy":
                bad |= stats.entropy < math.log(self.l) - _TOL
            if self.t is not None:
                emd = stats.emd_ordered if self.closeness == "ordered" else stats.emd_equal
                assert emd is not None
                bad |= emd > self.t + _TOL
        return classes, sizes, relaxed_bad, bad

    def evaluate(self, index: int, levels: Sequence[int]) -> _Eval:
        cached = self.cache.get(index)
        if cached is not None:
            return cached
        self.evaluations += 1
        if self.uses_sensitive:
            _, sizes, relaxed_bad, bad = self.classify(levels)
        else:
            sizes = self.sizes(*self.keys(levels))
            bad = relaxed_bad = sizes < self.k
        result = _Eval(
            relaxed_suppressed=int(sizes[relaxed_bad].sum()),
            suppressed=int(sizes[bad].sum()),
            classes=len(sizes),
            kept=int(len(sizes) - np.count_nonzero(bad)),
            dm=int(np.dot(sizes, sizes)),
        )
        self.cache[index] = result
        return result

    def feasible(self, ev: _Eval) -> bool:
        """Exactly feasible: the rows failing the full model fit in the suppression limit."""
        return ev.suppressed <= self.limit

    def search_feasible(self, ev: _Eval) -> bool:
        """Feasible under the monotone model the lattice search tags with."""
        return (ev.suppressed if self.monotone else ev.relaxed_suppressed) <= self.limit

    def column_entropy(self) -> list[NDArray[np.float64]]:
        """ARX's monotonic non-uniform entropy of each column at each level (over all rows)."""
        out = []
        for h in self.hierarchies:
            counts0 = np.bincount(h.codes, minlength=h.cards[0]).astype(np.float64)
            present = counts0 > 0
            values = np.zeros(h.height + 1)
            for level in range(1, h.height + 1):
                counts = np.bincount(h.maps[level], weights=counts0, minlength=h.cards[level])
                generalized = counts[h.maps[level]]
                values[level] = float(np.sum(counts0[present] * np.log2(generalized[present] / counts0[present])))
            out.append(values)
        return out


class _Lattice:
    """All nodes of the generalization lattice as an (N, q) array of levels, numbered in mixed radix."""

    def __init__(self, heights: Sequence[int], max_nodes: int) -> None:
        self.radix = np.array([h + 1 for h in heights], dtype=np.int64)
        if len(self.radix) == 0:
            raise ValueError("anonymize needs at least one quasi-identifier")
        self.size = math.prod(int(r) for r in self.radix)
        if self.size > max_nodes:
            raise ValueError(
                f"the generalization lattice has {self.size:,} nodes (more than max_nodes={max_nodes:,}); "
                "use fewer quasi-identifiers or hierarchies with fewer levels"
            )
        q = len(self.radix)
        self.strides = np.ones(q, dtype=np.int64)
        for i in range(q - 2, -1, -1):
            self.strides[i] = self.strides[i + 1] * self.radix[i + 1]
        dtype = np.int8 if int(self.radix.max()) < 127 else np.int32
        grid = np.indices(tuple(int(r) for r in self.radix), dtype=dtype)
        self.nodes: NDArray[Any] = grid.reshape(q, -1).T.copy()
        self.height = self.nodes.sum(axis=1, dtype=np.int64)
        self.top = self.radix - 1
        # Per column and level: which nodes are at least / at most that level (fast up- and down-sets).
        self._ge: list[list[NDArray[np.bool_]]] | None = None
        self._le: list[list[NDArray[np.bool_]]] | None = None
        if 2 * int(self.radix.sum()) * self.size <= 256_000_000:
            columns: list[NDArray[np.int64]] = [self.nodes[:, c].astype(np.int64) for c in range(q)]
            self._ge = [[columns[c] >= v for v in range(int(r))] for c, r in enumerate(self.radix)]
            self._le = [[columns[c] <= v for v in range(int(r))] for c, r in enumerate(self.radix)]

    def levels(self, index: int) -> list[int]:
        return [int(v) for v in self.nodes[index]]

    def _set(self, masks: list[list[NDArray[np.bool_]]], index: int) -> NDArray[np.bool_]:
        node = self.nodes[index]
        out = masks[0][int(node[0])].copy()
        for c in range(1, len(node)):
            out &= masks[c][int(node[c])]
        return out

    def up(self, index: int) -> NDArray[np.bool_]:
        """The node and every node above it (more general in every column)."""
        if self._ge is not None:
            return self._set(self._ge, index)
        return np.asarray(np.all(self.nodes >= self.nodes[index], axis=1), dtype=np.bool_)

    def down(self, index: int) -> NDArray[np.bool_]:
        """The node and every node below it."""
        if self._le is not None:
            return self._set(self._le, index)
        return np.asarray(np.all(self.nodes <= self.nodes[index], axis=1), dtype=np.bool_)

    def minimal(self, mask: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """Nodes of ``mask`` none of whose direct predecessors is in ``mask``."""
        out = mask.copy()
        index = np.arange(self.size, dtype=np.int64)
        for c, stride in enumerate(self.strides):
            has = self.nodes[:, c] > 0
            pred = np.where(has, index - stride, 0)
            out &= ~(has & mask[pred])
        return out


class _Search:
    """Branch and bound over the lattice: Flash-style path binary searches with predictive tagging."""

    def __init__(self, problem: _Problem, lattice: _Lattice, metric: str) -> None:
        self.problem, self.lattice, self.metric = problem, lattice, metric
        self.entropy = problem.column_entropy()
        self.separable = metric in _SEPARABLE
        self.monotone_loss = metric != "aecs"
        self.index = np.arange(lattice.size, dtype=np.int64)
        if self.separable:
            self.loss = self._separable_loss(metric)
            self.heuristic = self.loss
        else:
            self.loss = np.full(lattice.size, np.nan)
            self.heuristic = self._separable_loss("precision")
        self.state = np.zeros(lattice.size, dtype=np.int8)
        self.dead = np.zeros(lattice.size, dtype=bool)  # cannot beat the best feasible node found
        self.best: int | None = None
        self.best_loss = math.inf
        self.bounds: list[tuple[float, int]] = []  # (lower bound, node) of evaluated nodes, data metrics

    def _separable_loss(self, metric: str) -> NDArray[np.float64]:
        nodes = self.lattice.nodes
        if metric == "height":
            return np.asarray(self.lattice.height, dtype=np.float64)
        if metric == "precision":
            heights = np.array([max(h, 1) for h in self.problem.heights], dtype=np.float64)
            return np.asarray(np.mean(nodes / heights, axis=1), dtype=np.float64)
        total = np.zeros(self.lattice.size)
        for c, values in enumerate(self.entropy):
            total += values[nodes[:, c]]
        return total

    # -- losses ------------------------------------------------------------------------------------
    def data_loss(self, ev: _Eval) -> float:
        if self.metric == "discernibility":
            return float(ev.dm)
        groups = ev.kept + (1 if ev.suppressed > 0 else 0)
        return self.problem.n / groups if groups else float(self.problem.n)

    def lower_bound(self, ev: _Eval) -> float:
        """A lower bound of the loss at this node and at every node above it."""
        return float(ev.dm) if self.metric == "discernibility" else self.problem.n / max(ev.classes, 1)

    def node_loss(self, node: int, ev: _Eval) -> float:
        return float(self.loss[node]) if self.separable else self.data_loss(ev)

    def _beats(self, value: float, node: int) -> bool:
        """Strictly better than the best so far: lower loss, then lower height, then lower number."""
        if self.best is None or value < self.best_loss:
            return True
        if value > self.best_loss:
            return False
        h, bh = int(self.lattice.height[node]), int(self.lattice.height[self.best])
        return h < bh or (h == bh and node < self.best)

    # -- bookkeeping -------------------------------------------------------------------------------
    def visit(self, node: int) -> _Eval:
        ev = self.problem.evaluate(node, self.lattice.levels(node))
        if self.problem.feasible(ev):
            value = self.node_loss(node, ev)
            if self._beats(value, node):
                self.best, self.best_loss = node, value
                self._prune_all()
        if not self.separable:
            bound = self.lower_bound(ev)
            self.bounds.append((bound, node))
            self._prune_above(bound, node)
        return ev

    def _prune_above(self, bound: float, node: int) -> None:
        """Nodes strictly above ``node`` cannot win if its lower bound already ties or exceeds the best."""
        if self.best is None:
            return
        h, bh = int(self.lattice.height[node]), int(self.lattice.height[self.best])
        if bound > self.best_loss or (bound == self.best_loss and h >= bh):
            above = self.lattice.up(node)
            above[node] = False
            self.dead |= above

    def _prune_all(self) -> None:
        assert self.best is not None
        if self.separable:
            bl, bh, b = self.best_loss, int(self.lattice.height[self.best]), self.best
            height = self.lattice.height
            self.dead = (self.loss > bl) | (
                (self.loss == bl) & ((height > bh) | ((height == bh) & (self.index > b)))
            )
        else:
            for bound, node in self.bounds:
                self._prune_above(bound, node)

    # -- phase 1: Flash --------------------------------------------------------------------------
    def flash(self) -> None:
        lattice, state, problem = self.lattice, self.state, self.problem
        top, strides, nodes = lattice.top, lattice.strides, lattice.nodes
        order = np.lexsort((self.index, lattice.height, self.heuristic))
        q = len(top)
        while True:
            open_ = order[(state[order] == _UNKNOWN) & ~self.dead[order]]
            if len(open_) == 0:
                break
            for start in open_:
                start = int(start)
                if state[start] != _UNKNOWN or self.dead[start]:
                    continue
                path = [start]
                current = start
                while True:
                    best = -1
                    for c in range(q):
                        if nodes[current, c] < top[c]:
                            nxt = current + int(strides[c])
                            if (
                                state[nxt] == _UNKNOWN
                                and not self.dead[nxt]
                                and (best < 0 or self.heuristic[nxt] < self.heuristic[best])
                            ):
                                best = nxt
                    if best < 0:
                        break
                    path.append(best)
                    current = best
                lo, hi = 0, len(path) - 1
                while lo <= hi:
                    mid = (lo + hi) // 2
                    node = path[mid]
                    if self.dead[node]:  # pruned meanwhile: everything above it is pruned too
                        hi = mid - 1
                        continue
                    ev = self.visit(node)
                    if problem.search_feasible(ev):
                        state[lattice.up(node)] = _FEASIBLE
                        hi = mid - 1
                    else:
                        state[lattice.down(node)] = _INFEASIBLE
                        lo = mid + 1

    # -- phase 2: the exact optimum among the candidates -------------------------------------------
    def run(self) -> int | None:
        self.flash()
        problem, lattice = self.problem, self.lattice
        candidates = (self.state == _FEASIBLE) & ~self.dead
        if self.best is not None:
            candidates[self.best] = True
        if not candidates.any():
            return self.best
        if problem.monotone and self.monotone_loss:
            candidates = lattice.minimal(candidates) | self._best_mask()
        chosen = np.flatnonzero(candidates)
        if self.separable:
            ordered = chosen[np.lexsort((chosen, lattice.height[chosen], self.loss[chosen]))]
            if problem.monotone:
                return int(ordered[0])
            for node in ordered:  # increasing loss: the first exactly feasible node is optimal
                node = int(node)
                if node == self.best or problem.feasible(problem.evaluate(node, lattice.levels(node))):
                    return node
            return self.best
        for node in chosen[np.lexsort((chosen, lattice.height[chosen]))]:
            node = int(node)
            if not self.dead[node]:
                self.visit(node)
        return self.best

    def all_losses(self, node: int) -> dict[str, float]:
        """The node's loss under every metric."""
        ev = self.problem.evaluate(node, self.lattice.levels(node))
        levels = self.lattice.levels(node)
        heights = self.problem.heights
        groups = ev.kept + (1 if ev.suppressed > 0 else 0)
        return {
            "entropy": float(sum(e[lv] for e, lv in zip(self.entropy, levels))),
            "discernibility": float(ev.dm),
            "aecs": self.problem.n / groups if groups else float(self.problem.n),
            "height": float(sum(levels)),
            "precision": float(np.mean([lv / max(h, 1) for lv, h in zip(levels, heights)])),
        }

    def _best_mask(self) -> NDArray[np.bool_]:
        mask = np.zeros(self.lattice.size, dtype=bool)
        if self.best is not None:
            mask[self.best] = True
        return mask


def _validate(
    k: int,
    suppression: float,
    metric: str,
    l: float | None,  # noqa: E741
    diversity: str,
    t: float | None,
    closeness: str,
    sensitive: Hashable | None,
) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if isinstance(suppression, bool) or not isinstance(suppression, (int, float)) or not 0 <= suppression <= 1:
        raise ValueError(f"suppression must be a fraction of rows between 0 and 1, got {suppression!r}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}; got {metric!r}")
    if diversity not in ("distinct", "entropy"):
        raise ValueError(f"diversity must be 'distinct' or 'entropy', got {diversity!r}")
    if closeness not in ("equal", "ordered"):
        raise ValueError(f"closeness must be 'equal' or 'ordered', got {closeness!r}")
    if l is not None and (isinstance(l, bool) or not isinstance(l, (int, float)) or l < 1):
        raise ValueError(f"l must be a number >= 1, got {l!r}")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 1):
        raise ValueError(f"t must be a number between 0 and 1, got {t!r}")
    if (l is not None or t is not None) and sensitive is None:
        raise ValueError("l-diversity and t-closeness need sensitive=<column>")


def anonymize(
    df: pd.DataFrame,
    *,
    k: int,
    quasi_identifiers: Sequence[Hashable] | Hashable,
    hierarchies: Mapping[Hashable, HierarchySpec] | None = None,
    suppression: float = 0.0,
    metric: Metric = "entropy",
    sensitive: Hashable | None = None,
    l: float | None = None,  # noqa: E741
    diversity: Literal["distinct", "entropy"] = "distinct",
    t: float | None = None,
    closeness: Literal["equal", "ordered"] = "equal",
    order: Sequence[Any] | None = None,
    max_nodes: int = 2_000_000,
) -> AnonymizationResult:
    """The least lossy full-domain generalization that is k-anonymous (and l-diverse / t-close).

    NOT differentially private, and spends no privacy budget: the result
    still holds one row per person, only coarsened.

    Each quasi-identifier is generalized through its hierarchy
    (``hierarchies={column: table, {value: [levels]} or ARX CSV path}``;
    without one, numbers are rounded by depth and other values suppressed
    to ``*``). At most ``floor(suppression * n)`` rows -- those in classes
    that fail -- are removed. ``metric`` is the information loss to
    minimise, with ARX's definitions:

    * ``"entropy"``: monotonic non-uniform entropy, sum over columns of
      ``-sum_v cnt(v) * log2(cnt(v) / cnt(generalized v))``;
    * ``"discernibility"``: DM*, the sum of squared class sizes (suppressed
      classes included);
    * ``"aecs"``: average equivalence class size, ``n / classes`` with the
      suppressed rows counted as one class;
    * ``"height"``: the sum of the levels;
    * ``"precision"``: the mean over columns of ``level / hierarchy height``.

    ``l`` (with ``diversity="distinct"`` or ``"entropy"``) and ``t`` (with
    ``closeness="equal"`` or ``"ordered"``) add l-diversity and t-closeness
    of the ``sensitive`` column. See the module docstring for the search.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": [42, 45, 36, 31, 73, 38, 47, 33],
    ...                    "sex": ["F", "M", "F", "M", "F", "M", "F", "M"]})
    >>> res = anonymize(df, k=2, quasi_identifiers=["age", "sex"], suppression=0.125)
    >>> res.levels, res.suppressed, round(res.loss, 3)
    ({'age': 1, 'sex': 1}, 1, 20.755)
    >>> res.data
       age sex
    0   40   *
    1   40   *
    2   30   *
    3   30   *
    5   30   *
    6   40   *
    7   30   *
    """
    start = time.perf_counter()
    columns = columns_of(df, quasi_identifiers, "quasi_identifiers")
    _validate(k, suppression, metric, l, diversity, t, closeness, sensitive)
    if sensitive is not None:
        (sensitive,) = columns_of(df, [sensitive], "sensitive")
        if sensitive in columns:
            raise ValueError(f"the sensitive column {sensitive!r} cannot also be a quasi-identifier")
    hierarchies = dict(hierarchies or {})
    unknown = [c for c in hierarchies if c not in columns]
    if unknown:
        raise KeyError(f"hierarchies given for {unknown!r}, which are not quasi-identifiers")
    n = len(df)
    if n == 0:
        raise ValueError("cannot anonymize an empty frame")
    limit = math.floor(Fraction(str(suppression)) * n)
    problem = _Problem(df, columns, hierarchies, int(k), sensitive, l, diversity, t, closeness, order, limit)
    lattice = _Lattice(problem.heights, max_nodes)
    search = _Search(problem, lattice, metric)
    best = search.run()
    if best is None:
        raise ValueError(
            f"no generalization of {columns!r} reaches the requested privacy model with at most {limit:,} "
            f"suppressed row(s) of {n:,}; allow more suppression or add generalization levels"
        )
    levels = lattice.levels(best)
    unit_class, _, _, bad = problem.classify(levels)
    keep_rows = ~bad[unit_class[problem.row_unit]]
    positions = np.flatnonzero(keep_rows)
    data = df.iloc[positions].copy()
    for h, level in zip(problem.hierarchies, levels):
        if level > 0:
            values = h.generalized(level, positions)
            values.index = data.index
            data[h.name] = values
    losses = search.all_losses(best)
    return AnonymizationResult(
        data=data,
        levels=dict(zip(columns, levels)),
        suppressed=int(n - len(positions)),
        loss=losses[metric],
        metric=metric,
        losses=losses,
        k=int(k),
        l=l,
        t=t,
        n_rows=n,
        suppression_limit=limit,
        lattice_size=lattice.size,
        nodes_evaluated=problem.evaluations,
        seconds=time.perf_counter() - start,
    )


__all__ = ["METRICS", "AnonymizationResult", "Metric", "anonymize"]
