"""Graphical-model synthesizers: MST (McKenna, Miklau & Sheldon 2021) and AIM (McKenna et al. 2022).

MST spends a third of its allowance on every one-way marginal, a third on
choosing a maximum spanning tree of informative pairs with the exponential
mechanism, and a third on measuring those pairs.

AIM measures every one-way marginal cheaply, then, round by round, chooses
with the exponential mechanism the one-, two- or three-way marginal whose
model error most exceeds its measurement's expected noise, measures it and
refits; when a measurement barely moves the model, later rounds get half
the noise (four times the rho; twice the epsilon under pure DP). The last
round spends what is left.

Both first check, from the noisy total of their one-way measurements, that
the frame is not too small for correlations (:func:`hides_correlations`);
if it is, the rest of the allowance measures every column again and the
columns come out independent (:func:`independent`, which small frames found
by the noisy row count get directly).

Both return the fitted model (sampled exactly by the caller), the
compression of rare codes that maps its codes back to the data's, and
whether the columns were measured alone (:class:`Fitted`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from dpframe.synthesis.measure import Allowance, CodedData, Compression, Marginals, estimate_total, measure, select
from dpframe.synthesis.model import Clique, GraphicalModel, Groups, JunctionTree, Measurement, coarsen, find_root


class Fitted(NamedTuple):
    """A synthesizer's fitted model, the compression that maps its codes back to the data's, and whether it
    measured the columns alone (a frame too small for correlations)."""

    model: GraphicalModel
    compression: Compression
    alone: bool

Step = Callable[[str, float], None]  # progress: what is happening, fraction done

# Mirror-descent iterations: the final fit, and the fits that only guide selection.
FIT_ITERATIONS = 1000
GUIDE_ITERATIONS = 200


def _independent_model(data: Marginals, one_way: list[Measurement], iterations: int = GUIDE_ITERATIONS) -> GraphicalModel:
    model = GraphicalModel(JunctionTree.build([], data.sizes), data.sizes, estimate_total(one_way))
    model.fit(one_way, iterations)
    return model


# A frame is too small for correlations when its number of records is below this many standard deviations of
# the noise one cell of a one-way marginal gets when the whole allowance measures every column's: no marginal
# of several columns can then be told from noise. Measured (issue 33, epsilon = 1, delta = 1e-6; 2-way error):
# penguins (344 rows x 8, 27 deviations) 0.84 with AIM after finding its domains, 0.48 measuring the columns
# alone; mroz (753 x 18, 39 deviations) 0.48 and 0.26; on their real bins, declared (nothing to find), AIM
# 0.380 and 0.250, the columns alone 0.342 and 0.191. Frames of 14,000+ rows stand at 1,000+ deviations.
SMALL_FRAME = 100


def hides_correlations(records: float, allowance: Allowance, columns: int) -> bool:
    """Whether ``records`` (a noisy count) are too few for any correlation to stand out of the noise of the
    allowance (:data:`SMALL_FRAME`); post-processing of the count.

    >>> allowance = Allowance("zcdp", Fraction(1, 40), 1)   # one-way noise: sigma = sqrt(8 / (2 rho)) = 12.6
    >>> hides_correlations(344, allowance, 8), hides_correlations(30_000, allowance, 8)
    (True, False)
    """
    k, amount = allowance.contributions, float(allowance.amount)
    # The standard deviation Allowance.noise(1, columns) would give (not a spend: nothing is measured here).
    one_way = k * math.sqrt(columns / (2 * amount)) if allowance.kind == "zcdp" else math.sqrt(2) * k * columns / amount
    return records < SMALL_FRAME * one_way


def _combined(first: Measurement, second: Measurement) -> Measurement:
    """Two measurements of one marginal as one: their inverse-variance weighted mean (post-processing)."""
    a, b = first.weights**2, second.weights**2
    return Measurement(first.clique, (first.values * a + second.values * b) / (a + b), np.sqrt(a + b))


def _one_way(
    data: Marginals, allowance: Allowance, share: Fraction
) -> tuple[Marginals, list[Measurement], Compression, bool]:
    """Every one-way marginal measured with ``share`` of the allowance; the rare codes merged or dropped.

    When their noisy total shows a frame too small for correlations (:func:`hides_correlations`), the rest of
    the allowance measures them again, both measurements make one, and the last value is True: the caller
    measures nothing else (the columns come out independent). Either way the whole allowance is the most
    spent: ``share`` now, the rest by the caller or here.
    """
    d = len(data.sizes)
    cliques: list[Clique] = [(a,) for a in range(d)]
    one_way = measure(data, cliques, allowance.noise(share, d))
    alone = share < 1 and d > 1 and hides_correlations(estimate_total(one_way), allowance, d)
    if alone:
        one_way = [_combined(m, again) for m, again in zip(one_way, measure(data, cliques, allowance.noise(1 - share, d)))]
    compression = Compression.of(one_way, data.sizes, data.missing)
    data, one_way = compression.apply(data, one_way)
    return data, one_way, compression, alone


def independent(data: Marginals, allowance: Allowance, step: Step) -> Fitted:
    """Every one-way marginal measured with the whole allowance, and the model whose columns are independent:
    for frames too small for the noise of any marginal of several columns to leave a correlation standing.

    >>> from dpframe.testing import seeded_noise
    >>> x = np.arange(3000, dtype=np.int32) % 3
    >>> with seeded_noise(0):
    ...     model, _, _ = independent(CodedData((x, x), (3, 3)), Allowance("zcdp", Fraction(1), 1), lambda m, d: None)
    >>> [c for c, _ in model.tree.order]
    [0, 1]
    """
    step("measuring one-way marginals", 0.0)
    data, one_way, compression, _ = _one_way(data, allowance, Fraction(1))
    return Fitted(_independent_model(data, one_way, FIT_ITERATIONS), compression, True)


def _pair_scores(data: Marginals, model: GraphicalModel, pairs: Sequence[Clique]) -> np.ndarray:
    """L1 distance between each pair's true marginal and the model's (sensitivity: the unit's records)."""
    scores = []
    for (a, b), exact in zip(pairs, data.counts_of(pairs)):
        guess = np.outer(model.marginal((a,)), model.marginal((b,))) / model.total
        scores.append(float(np.abs(exact - guess).sum()))
    return np.array(scores)


def mst(data: Marginals, allowance: Allowance, step: Step) -> Fitted:
    """Fit MST's model; returns it with the compression that maps its codes back to the data's.

    >>> from dpframe.testing import seeded_noise
    >>> x = np.arange(3000, dtype=np.int32) % 3
    >>> data = CodedData((x, x, (x + 1) % 3), (3, 3, 3))   # three copies of one column
    >>> with seeded_noise(0):
    ...     model, compression, alone = mst(data, Allowance("zcdp", Fraction(1), 1), lambda message, done: None)
    >>> records = model.sample(300, np.random.default_rng(0))
    >>> bool((records[:, 0] == records[:, 1]).mean() > 0.95)
    True
    """
    d = len(data.sizes)
    third = Fraction(1, 3) if d > 1 else Fraction(1)  # one column: nothing to select or pair
    step("measuring one-way marginals", 0.0)
    data.expect(list(itertools.combinations(range(d), 2)))  # every pair is scored
    data, one_way, compression, alone = _one_way(data, allowance, third)
    if alone:
        return Fitted(_independent_model(data, one_way, FIT_ITERATIONS), compression, True)
    tree: list[Clique] = []
    if d > 1:
        step("choosing a spanning tree of pairs", 0.1)
        model = _independent_model(data, one_way)
        pairs = list(itertools.combinations(range(d), 2))
        weights = dict(zip(pairs, _pair_scores(data, model, pairs)))
        component = list(range(d))
        for _ in range(d - 1):
            open_pairs = [p for p in pairs if find_root(component, p[0]) != find_root(component, p[1])]
            chosen = open_pairs[select(np.array([weights[p] for p in open_pairs]), allowance, third / (d - 1))]
            component[find_root(component, chosen[0])] = find_root(component, chosen[1])
            tree.append(chosen)
        step("measuring the chosen pairs", 0.4)
        two_way = measure(data, tree, allowance.noise(third, d - 1))
    else:
        two_way = []
    step("fitting the model", 0.5)
    measurements = one_way + two_way
    model = GraphicalModel(JunctionTree.build(tree, data.sizes), data.sizes, estimate_total(measurements))
    model.fit(measurements, FIT_ITERATIONS)
    return Fitted(model, compression, False)


# AIM's settings (McKenna et al. 2022, Alg. 2, which plans 16 rounds per column): here at most 6
# rounds per column, 90% of each round's budget on measuring, and a model whose clique tables hold
# at most AIM_MAX_CELLS cells (AIM allows 80 MB; a smaller model keeps every fit fast). Fewer, better
# measured rounds won on Adult (pgm, delta = 1e-9, 3 runs each; 2-way / 3-way error, seconds):
# epsilon 0.3: 0.075 / 0.127, 3 s with 6 rounds against 0.089 / 0.146, 5 s with 16;
# epsilon 1: 0.039 / 0.079, 5 s against 0.043 / 0.083, 16 s; epsilon 3: 0.027 / 0.062 in 32 s
# against 0.027 / 0.061 in 174 s (4 rounds: 0.039 / 0.078 at epsilon 1, no better than 6).
AIM_ROUNDS_PER_COLUMN = 6
AIM_MEASURE_SHARE = Fraction(9, 10)
# Adult's models stay far below the cap (2-way 0.0400, 3-way 0.0802 at epsilon = 1 with 2M, 500k or 250k).
# On wide frames it binds: movies (58,788 rows x 24 columns, issue 33; 2 seeds) took 63-116 s with 2M cells,
# mostly fitting cliques of three 38-code columns joined by the triangulation, and 50-54 s with 250k, at the
# same 2-way error (0.030); baseball (22 columns) 0.144 against 0.150, diamonds 0.069 against 0.068. Since
# pairs are also measured over runs of codes (COARSE_RUNS), more of them are worth measuring and the numbers
# join in larger cliques: movies (one seed) took 73 s with 250k cells (2-way 0.023) and 55 s with 100k (0.026).
AIM_MAX_CELLS = 100_000
AIM_FIT_ITERATIONS = 100


# AIM also offers each marginal of several columns over runs of neighbouring codes of its numbers: about
# COARSE_RUNS runs per number, holding equal shares of its noisy one-way counts (post-processing), so that a
# pair of two 32-bin numbers is measured in about 100 cells instead of 1,024, each holding ten times the records
# against the same noise; the one-way marginals keep every code. The exponential mechanism chooses between the
# two (AIM's score weighs each candidate's error against its expected noise). Measured on issue 33's raw
# benchmark (2-way error, 2 seeds, against 5 seeds without runs): baseball 0.171 -> 0.078, budgetfood 0.038 ->
# 0.028, vietnam 0.022 -> 0.014, weather 0.059 -> 0.049, bundesliga 0.050 -> 0.042, hi 0.026 -> 0.021, adult
# 0.030 -> 0.030. Six runs or sixteen did no better (baseball 0.085, 0.091; bundesliga 0.041, 0.048; hi 0.022,
# 0.025); runs for triples too no better (adult 0.028, budgetfood 0.029) and slower, so only pairs get them.
COARSE_RUNS = 10


def runs(one_way: Measurement, places: NDArray[np.float64], parts: int = COARSE_RUNS) -> NDArray[np.int64] | None:
    """Each code's run of neighbouring codes by ``places``, about ``parts`` runs of equal shares of the noisy
    one-way counts (a code holding more than two shares is a run alone; ``parts`` codes or fewer are each alone);
    a code with no place (NaN: a category, missing values) is a run of its own. None when no two codes would
    share a run. Post-processing of the measurement.

    >>> one_way = Measurement((0,), np.array([50.0, 10.0, 10.0, 30.0, -4.0, 5.0]), np.ones(6))
    >>> runs(one_way, np.array([0.0, 1.0, 2.0, 3.0, 4.0, np.nan]), parts=3).tolist()
    [0, 1, 1, 2, 2, 3]
    """
    placed = np.flatnonzero(~np.isnan(places))
    if len(placed) <= parts:
        return None
    placed = placed[np.argsort(places[placed], kind="stable")]
    mass = np.clip(one_way.values[placed], 0.0, None)
    total = float(mass.sum())
    # Each code's run: where the middle of its mass falls among equal shares of the whole.
    middle = (np.cumsum(mass) - mass / 2) / total if total > 0 else (np.arange(len(placed)) + 0.5) / len(placed)
    _, run = np.unique(np.minimum(np.floor(middle * parts), parts - 1), return_inverse=True)
    out = np.empty(len(places), dtype=np.int64)
    out[placed] = run
    alone = np.flatnonzero(np.isnan(places))
    out[alone] = int(run.max()) + 1 + np.arange(len(alone))
    return out if int(out.max()) + 1 < len(places) else None


def _runs_after(one_way: Sequence[Measurement], compression: Compression,
                places: Sequence[NDArray[np.float64]]) -> tuple[NDArray[np.int64] | None, ...]:
    """:func:`runs` of every attribute's compressed codes (the rare code has no place); none without places."""
    if not places:
        return (None,) * len(one_way)
    out: list[NDArray[np.int64] | None] = []
    for a, m in enumerate(one_way):
        kept = compression.kept[a]
        where = places[a] if kept is None else np.append(places[a][kept], [np.nan] * int(compression.rare[a] is not None))
        out.append(runs(m, where))
    return tuple(out)


def _downward_closure(d: int, way: int) -> dict[Clique, int]:
    """Every set of at most ``way`` attributes, with AIM's weight: its overlap with the workload (all ``way``-sets)."""
    workload = list(itertools.combinations(range(d), min(way, d)))
    closure = {r: 0 for w in workload for k in range(1, len(w) + 1) for r in itertools.combinations(w, k)}
    for r in closure:
        closure[r] = sum(len(set(r) & set(w)) for w in workload)
    return closure


def aim(
    data: Marginals, allowance: Allowance, step: Step, rng: np.random.Generator, way: int = 3,
    places: Sequence[NDArray[np.float64]] = (),
) -> Fitted:
    """Fit AIM's model over every set of at most ``way`` columns (module docstring; McKenna et al. 2022, Alg. 2).

    ``rng`` draws the model samples that score candidates straddling cliques
    (post-processing; it needs no secrecy). ``places``: each attribute's codes'
    places on its axis (:meth:`~dpframe.synthesis.domain.ColumnDomain.places`),
    whose runs of neighbours make coarser candidates (:data:`COARSE_RUNS`).

    >>> from dpframe.testing import seeded_noise
    >>> x = np.arange(3000, dtype=np.int32) % 3
    >>> data = CodedData((x, x, (x + 1) % 3), (3, 3, 3))
    >>> with seeded_noise(0):
    ...     model, _, _ = aim(data, Allowance("zcdp", Fraction(1), 1), lambda message, done: None, np.random.default_rng(0))
    >>> records = model.sample(300, np.random.default_rng(0))
    >>> bool((records[:, 2] == (records[:, 0] + 1) % 3).mean() > 0.95)
    True
    """
    d = len(data.sizes)
    rounds = AIM_ROUNDS_PER_COLUMN * d
    growth = Fraction(4) if allowance.kind == "zcdp" else Fraction(2)
    measure_share = AIM_MEASURE_SHARE / rounds
    select_share = (1 - AIM_MEASURE_SHARE) / rounds
    step("measuring one-way marginals", 0.0)
    candidates = _downward_closure(d, way)
    data.expect(list(candidates))
    data, one_way, compression, alone = _one_way(data, allowance, measure_share * d)
    if alone:
        return Fitted(_independent_model(data, one_way, FIT_ITERATIONS), compression, True)
    spent = measure_share * d
    sizes = data.sizes
    # A column left with one code (text none of whose values was released, its missing code dropped) is the
    # same in every record: a marginal with it says nothing the others do not (post-processing of the sizes).
    # On movies, 3-way candidates with its title took 22 of 40 rounds and two thirds of the time.
    candidates = {c: w for c, w in candidates.items() if len(c) == 1 or all(sizes[a] > 1 for a in c)}
    coarse = _runs_after(one_way, compression, places)
    options: list[tuple[Clique, Groups]] = [(c, ()) for c in candidates] + [
        (c, tuple(coarse[a] for a in c)) for c in candidates if len(c) == 2 and any(coarse[a] is not None for a in c)]
    measurements = list(one_way)
    cliques: list[Clique] = []
    joined_cells: dict[tuple[tuple[Clique, ...], frozenset[tuple[int, int]]], int] = {}
    model = GraphicalModel(JunctionTree.build(cliques, sizes), sizes, estimate_total(measurements))
    model.fit(measurements, GUIDE_ITERATIONS)
    sensitivity = max(candidates.values())
    exact: dict[Clique, np.ndarray] = {}
    while spent < 1:
        left = 1 - spent
        if left < 2 * (measure_share + select_share):
            # The last round spends what is left, in the same proportions.
            measure_share, select_share = left * AIM_MEASURE_SHARE, left * (1 - AIM_MEASURE_SHARE)
        spent += measure_share + select_share
        noise = allowance.noise(measure_share, 1)
        useful = np.sqrt(2 / np.pi) * noise.std  # expected |noise| per cell of a new measurement
        fits = _affordable(options, model.tree, cliques, sizes, AIM_MAX_CELLS * float(spent), model.total / useful,
                           joined_cells)
        fits = fits or [(r, ()) for r in candidates if len(r) == 1]  # nothing is worth it: refine a column
        step(f"{len(measurements)} marginals measured", 0.8 * float(spent))
        # The model's marginals of candidates that straddle cliques: counted in records drawn from it.
        drawn = model.sample(int(min(max(model.total, 50_000), 100_000)), rng)
        sample = CodedData(tuple(drawn.T.astype(np.int64)), sizes)
        scale = model.total / sample.rows
        fitting = list(dict.fromkeys(r for r, _ in fits))
        unread = [r for r in fitting if r not in exact]  # read together: one pass over distributed data
        exact.update(zip(unread, data.counts_of(unread)))
        drawn_counts = {r: sample.counts(r) for r in fitting}
        scores = []
        for r, groups in fits:
            truth = coarsen(exact[r], groups)
            error = float(np.abs(truth - scale * coarsen(drawn_counts[r], groups)).sum())
            scores.append(candidates[r] * (error - useful * truth.size))
        chosen, groups = fits[select(np.array(scores), allowance, select_share, sensitivity)]
        held = any(set(chosen) <= set(c) for c in model.tree.cliques)
        before = coarsen(model.marginal(chosen), groups) if held else scale * coarsen(drawn_counts[chosen], groups)
        new = measure(data, [chosen], noise, groups)
        measurements += new
        if not any(set(chosen) <= set(c) for c in cliques):
            cliques.append(chosen)
        previous = model
        model = GraphicalModel(JunctionTree.build(cliques, sizes), sizes, estimate_total(measurements))
        model.warm_start(previous)
        model.fit(measurements, AIM_FIT_ITERATIONS)
        if np.abs(coarsen(model.marginal(chosen), groups) - before).sum() <= useful * before.size:
            measure_share, select_share = measure_share * growth, select_share * growth
    step("fitting the model", 0.8)
    model.fit(measurements, FIT_ITERATIONS)
    return Fitted(model, compression, False)


def _affordable(
    options: list[tuple[Clique, Groups]],
    held: JunctionTree,
    cliques: list[Clique],
    sizes: tuple[int, ...],
    max_cells: float,
    max_size: float,
    joined_cells: dict[tuple[tuple[Clique, ...], frozenset[tuple[int, int]]], int],
) -> list[tuple[Clique, Groups]]:
    """Candidates (over codes or runs of them) whose measurement is worth its noise (fewer cells than
    total / E|noise|) and whose addition to ``cliques`` (whose tree is ``held``) keeps the model within
    ``max_cells`` (both decided from public or already-released numbers). ``joined_cells`` keeps, from round
    to round, the cells of the parts a candidate joins, by those parts' cliques and the candidate."""
    current = held.cells(sizes)
    # Adding r re-triangulates only the connected parts of the measured graph that it touches; the others keep
    # their cells (min-fill eliminates a part's vertices in the same order alone as among the others).
    part = list(range(len(sizes)))
    for c in cliques:
        for a in c[1:]:
            part[find_root(part, a)] = find_root(part, c[0])
    part_cells: dict[int, int] = {}
    part_cliques: dict[int, list[Clique]] = {}
    part_attributes: dict[int, list[int]] = {}
    for c in held.cliques:
        t = find_root(part, c[0])
        part_cells[t] = part_cells.get(t, 0) + math.prod(sizes[a] for a in c)
    for c in cliques:
        part_cliques.setdefault(find_root(part, c[0]), []).append(c)
    for a in range(len(sizes)):
        part_attributes.setdefault(find_root(part, a), []).append(a)
    out = []
    for r, groups in options:
        measured = [sizes[a] if g is None else int(g.max()) + 1 for a, g in zip(r, groups or (None,) * len(r))]
        if math.prod(measured) > max_size:
            continue
        if any(set(r) <= set(c) for c in held.cliques):
            cells = current
        else:
            touched = sorted({find_root(part, a) for a in r})
            key = (tuple(sorted(c for t in touched for c in part_cliques.get(t, []))), frozenset(itertools.combinations(r, 2)))
            if key not in joined_cells:
                attributes = sorted(a for t in touched for a in part_attributes[t])
                index = {a: i for i, a in enumerate(attributes)}
                joined_cells[key] = JunctionTree.cells_of(
                    [tuple(index[a] for a in c) for c in key[0]] + [tuple(index[a] for a in r)], [sizes[a] for a in attributes])
            cells = current - sum(part_cells[t] for t in touched) + joined_cells[key]
        if cells <= max_cells:
            out.append((r, groups))
    return out

