"""``p.dp.synthesize()``: plan, charge, measure, fit, sample, decode.

The plan (columns, domains, method, the split of the budget) is decided from
the schema and the arguments; the whole cost is checked against the budget
before anything is charged; domain discovery (private bounds of numeric
columns, private categories of text columns) gets its own ledger lines; the
model's measurements are one ledger line. Only then are the data read. The
synthetic frame is post-processing of those releases: unprotected and free to
share.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from dpframe.accounting.costs import Cost
from dpframe.noise.calibrate import SMALLEST_TAIL
from dpframe.noise.mechanism import Privacy
from dpframe.noise.random import current_source
from dpframe.progress import Progress
from dpframe.queries.plan import Plan, Target
from dpframe.results import OTHER
from dpframe.synthesis import graphical
from dpframe.synthesis.domain import (
    DEFAULT_BINS, QUERY, CategoryDomain, ColumnDomain, Count, DomainPlan, ValueCounts, plan_domains, present_counts,
    present_values,
)
from dpframe.synthesis.marginals import MarginalsModel, fit_marginals
from dpframe.synthesis.measure import Allowance, CodedData, Compression, Marginals
from dpframe.synthesis.model import Clique, GraphicalModel, Measurement
from dpframe.synthesis.spending import Share, ZcdpPlan
from dpframe.testing import seeded_noise

Method = Literal["aim", "mst", "marginals"]
METHODS: tuple[Method, ...] = ("aim", "mst", "marginals")

# The share of epsilon (or rho) spent on discovering domains, when some column needs it (and of delta, for the
# selections). A fifth was the best of 1/10, 1/5 and 1/4 on generated frames with equal-width bins; on the raw
# benchmark of issue 33 (six sets of 14,000-54,000 rows, 3 seeds, with domain.VALUE_SHARE), a quarter keeps
# more frequent values (support violations 3.3 -> 2.0 in all) for the same mean 2-way error (0.057).
DOMAIN_SHARE = Fraction(1, 4)
# When some domain is found privately, a noisy count of the rows (this share of the whole budget, taken from
# the domains') first sizes the plan. A frame is small when that count hides correlations at the whole budget
# (graphical.hides_correlations): the domains get SMALL_DOMAIN_SHARE and SMALL_BINS bins (when bins= is not
# given), and the rest measures each column alone (graphical.independent). Measured (issue 33, epsilon = 1,
# delta = 1e-6, 3-4 seeds; mean 2-way error): penguins (344 rows x 8) 0.84 with AIM, a fifth and 32 bins; 0.55
# measuring columns alone with half and 16 bins; 0.48 with three quarters and 8 bins (0.48 with seven eighths);
# mroz (753 x 18) 0.48, 0.33, 0.26 (0.26). With every domain public, AIM and MST decide the same from their
# first one-way measurements.
ROWS_SHARE = Fraction(1, 100)
SMALL_DOMAIN_SHARE = Fraction(3, 4)
SMALL_BINS = 8

_MECHANISMS = {
    "aim": "AIM: exponential mechanism + {noise} marginals",
    "mst": "MST: exponential mechanism + {noise} marginals",
    "marginals": "{noise} marginals",
}


@dataclass(frozen=True)
class SynthesisReport:
    """What a synthetic frame was made from (in its ``attrs["dp"]``).

    ``marginals`` are the distinct column sets measured; ``domains`` describes
    each column's codes (bins with their bounds, declared or found privately,
    or categories), which fix what the synthetic values can be; ``notes`` say
    what the noise decided (a range that did not stand out, where missing
    values are generated).

    >>> import dpframe
    >>> p = pd.DataFrame({"sex": pd.Categorical(["F", "M"] * 500)}).dp.protect(epsilon=1.0)
    >>> report = p.dp.synthesize(epsilon=1.0, method="mst", progress=False).attrs["dp"]
    >>> report.method, report.marginals, report.domains
    ('mst', (('sex',),), {'sex': 'F, M, <NA>'})
    """

    method: str
    cost: Cost
    marginals: tuple[tuple[Any, ...], ...]
    domains: dict[Any, str]
    rows: int
    seeded: bool
    notes: tuple[str, ...] = ()


def _summary(labels: list[str]) -> str:
    """A column's codes in one line: all of them, or the first two and the last few."""
    if len(labels) <= 6:
        return ", ".join(labels)
    return f"{len(labels)} codes: {labels[0]}, {labels[1]}, ..., {', '.join(labels[-2:])}"


# Below these, every marginal is noise and the noisy total (the row count) can be astronomically large.
SMALLEST_EPSILON = Fraction(1, 1000)
SMALLEST_RHO = SMALLEST_EPSILON**2 / 2


def _plan(privacy: Privacy, plan: DomainPlan) -> tuple[Share | None, ZcdpPlan | None]:
    """The whole budget as a :class:`Share` when some domain is found privately (None when all are public), with
    the selections' delta and the datetimes' sparse vectors; and the zCDP plan of an (epsilon, delta) budget
    (:mod:`dpframe.synthesis.spending`). The domains then take a part of it (:func:`_sized`)."""
    columns = plan.discovery_columns
    if privacy.kind == "zcdp":
        return (Share(privacy.rho, Fraction(0), Fraction(0)) if columns else None), None
    if privacy.delta == 0:
        return (Share(Fraction(0), privacy.epsilon, Fraction(0)) if columns else None), None
    if not columns:
        return None, ZcdpPlan.of(privacy.epsilon, privacy.delta)
    # Beside the plan: the selections' delta (and its margin in epsilon), and the datetimes' sparse vectors,
    # each as much as a column's share of epsilon would give a range (half of it).
    selection_delta = privacy.delta * DOMAIN_SHARE if plan.selections else Fraction(0)
    svt = privacy.epsilon * DOMAIN_SHARE * len(plan.datetime_ranges()) / (2 * len(columns))
    zcdp = ZcdpPlan.of(privacy.epsilon - svt - 2 * selection_delta, privacy.delta - selection_delta)
    return Share(zcdp.rho, Fraction(0), selection_delta, zcdp, svt), zcdp


def _check_selection_delta(per_value: Fraction) -> None:
    """Refuse, before any charge, a selection delta whose threshold would rest on underflowing tails."""
    if per_value < SMALLEST_TAIL:  # the tail point's own floor, checked before the charge
        raise ValueError(
            f"delta is too small to select categories and values: each selection would get δ/k={float(per_value):.3g}"
            "; use a larger delta, or declare the categories and bounds"
        )


def _sized(target: Target, reader: Reader, whole: Share, columns: int) -> tuple[bool, Share, tuple[Cost, Fraction], float]:
    """Charge :data:`ROWS_SHARE` of ``whole`` (its own ledger line) for a noisy count of the rows in use; return
    whether the frame is small (:func:`graphical.hides_correlations`; post-processing of the count), the domains'
    share, what the count spent and the count."""
    share = whole.part(ROWS_SHARE)
    k = target.contributions
    noise = share.noise(k)
    Plan(f"rows for {QUERY}", (), target, share.charged(), {"count": noise},
         rule=share.rule("a count, to size the plan")).charge()
    rows = reader.rows(target) + int(noise.sample(1)[0])
    allowance = Allowance("zcdp", whole.rho, k) if whole.rho > 0 else Allowance("pure", whole.epsilon, k)
    small = graphical.hides_correlations(rows, allowance, columns)
    domains = whole.part((SMALL_DOMAIN_SHARE if small else DOMAIN_SHARE) - ROWS_SHARE, selection=True)
    return small, domains, share.spent(), float(rows)


def _model_privacy(
    privacy: Privacy, spent: Cost, spent_rho: Fraction, zcdp: ZcdpPlan | None, contributions: int
) -> tuple[Privacy, Allowance]:
    """What the model spends -- everything finding the domains did not -- and its plan in rho or epsilon."""
    if privacy.kind == "zcdp":
        rho = privacy.rho - spent.rho
        return Privacy("zcdp", "gaussian", Fraction(0), Fraction(0), rho), Allowance("zcdp", rho, contributions)
    epsilon, delta = privacy.epsilon - spent.epsilon, privacy.delta - spent.delta
    if zcdp is not None:
        # The rest of the zCDP plan; its line is the rest of (epsilon, delta): its pro-rata share.
        return (Privacy("approx", "gaussian", epsilon, delta, Fraction(0)),
                Allowance("zcdp", zcdp.rho - spent_rho, contributions))
    return Privacy("approx", "laplace", epsilon, Fraction(0), Fraction(0)), Allowance("pure", epsilon, contributions)


def _groups(marginals: Any, columns: Sequence[Any]) -> list[Clique]:
    """``marginals=`` for the book's method: disjoint column sets; unmentioned columns stand alone."""
    position = {c: i for i, c in enumerate(columns)}
    groups: list[Clique] = []
    used: set[int] = set()
    for group in marginals or []:
        names = [group] if isinstance(group, str) or not isinstance(group, Sequence) else list(group)
        unknown = [str(c) for c in names if c not in position]
        if unknown:
            raise KeyError(f"marginals name columns {unknown} that are not being synthesized")
        clique = tuple(sorted(position[c] for c in names))
        if used & set(clique) or len(set(clique)) != len(clique):
            raise ValueError("the column sets in marginals= must not overlap: each column is drawn from one marginal")
        used |= set(clique)
        groups.append(clique)
    return groups + [(i,) for i in range(len(columns)) if i not in used]


def _missing_note(
    names: Sequence[Any], domains: Sequence[ColumnDomain], compression: Compression | None
) -> tuple[str, ...]:
    """Which columns may have missing values in the synthetic frame, and which text columns values that were
    not released (whether the data has any is private; the noisy counts decided)."""
    if compression is None:
        return ()
    missing = [(a, name, domain.missing_code) for a, (name, domain) in enumerate(zip(names, domains))
               if domain.missing_code is not None]
    kept = [str(name) for a, name, code in missing if compression.keeps(a, code)]
    dropped = [str(name) for _, name, _ in missing if str(name) not in kept]
    unreleased = [str(name) for a, (name, domain) in enumerate(zip(names, domains))
                  if isinstance(domain, CategoryDomain) and domain.other_code is not None
                  and domain.decodes_other_as_text and compression.keeps(a, domain.other_code)]
    notes = []
    if missing:
        notes.append(
            "missing values: "
            + (f"generated in {kept}, where their noisy count stood out of the noise" if kept else "")
            + ("; " if kept and dropped else "")
            + (f"none generated in {dropped}, where their noisy count was within three noise standard deviations "
               "of zero (a column with a few missing values may lose them)" if dropped else "")
        )
    if unreleased:
        notes.append(
            f"values not released: {unreleased} hold values whose counts did not clear the selection threshold "
            f"(or were not declared); they come out as {str(OTHER)!r}: declare the categories, or a date or "
            "number type, to synthesize them"
        )
    return tuple(notes)


def _small_note(total: float, columns: int, sized: bool) -> tuple[str, ...]:
    """Says plainly that a small frame's columns were measured one at a time (a noisy count decided: the rows'
    before the domains were found, ``sized``, else the model's first measurements)."""
    how = ("three quarters of it found the domains, the rest measured each column's distribution alone" if sized
           else "the model measured each column's distribution alone (its first measurements showed too few records)")
    return (
        f"correlations: the budget is too small for correlations at this size (about {max(total, 0.0):,.0f} records "
        f"and {columns} columns): {how}, so the columns come out independent; use a larger epsilon or fewer "
        "columns, and declare bounds and categories, with bins= (nothing then goes to finding them)",
    )


def _correlation_note(measurements: Sequence[Measurement], total: float) -> tuple[str, ...]:
    """Says plainly when the marginals of several columns were mostly noise (post-processing of the noisy
    measurements and total): the noise of one of their cells is typically 5% of the records or more, so
    no share of a combination of values finer than that can be told from noise (merging the small codes,
    which small frames need, leaves few cells, so the noise per cell is what tells)."""
    noise = [float(np.sqrt(m.variance).mean()) for m in measurements if len(m.clique) > 1]
    if not noise or float(np.median(noise)) < max(total, 1.0) / 20:
        return ()
    return (
        f"correlations: the budget is too small for correlations at this size: a marginal of several columns "
        f"has noise of about {float(np.median(noise)):,.0f} records a cell against about {max(total, 0.0):,.0f} "
        "records, so the columns come out close to independent; use a larger epsilon or fewer columns, and "
        "declare bounds and categories, with bins= (nothing then goes to finding them)",
    )


def _check_rows(n: Any) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive whole number of rows, got {n!r}")
    return int(n)


class Reader(Protocol):
    """How :func:`synthesize` reads the protected data (pandas in memory by default; Dask partitions)."""

    def check(self, plan: DomainPlan, discovery: Share | None) -> None:
        """Before any charge: refuse, from the plan and what discovery spends, what this reader cannot read."""

    def counts(self, target: Target, name: Any) -> Count:
        """After a discovery charge: a numeric column's exact histograms (:data:`~dpframe.synthesis.domain.Count`)."""

    def rows(self, target: Target) -> int:
        """After its charge: the exact number of rows in use (after contribution bounding)."""

    def values(self, target: Target, name: Any) -> ValueCounts:
        """After a selection's charge: each value of a column and its exact count
        (:data:`~dpframe.synthesis.domain.ValueCounts`)."""

    def marginals(self, target: Target, names: Sequence[Any], domains: Sequence[ColumnDomain]) -> Marginals:
        """After the model's charge: the records coded with ``domains``, whose exact marginals the model measures."""


class PandasReader:
    """The pandas frame's codes, in memory (the rows in use after contribution bounding)."""

    def check(self, plan: DomainPlan, discovery: Share | None) -> None:
        """Every plan can be read from pandas."""

    def counts(self, target: Target, name: Any) -> Count:
        """The column's values, read once for all its histograms."""
        return present_counts(target, name)

    def rows(self, target: Target) -> int:
        """The rows kept by contribution bounding."""
        mask = target.rows_in_use()
        return len(target.obj) if mask is None else int(mask.sum())

    def values(self, target: Target, name: Any) -> ValueCounts:
        """The column's values of the rows in use, counted."""
        return present_values(target, name)

    def marginals(self, target: Target, names: Sequence[Any], domains: Sequence[ColumnDomain]) -> Marginals:
        """Every column coded at once."""
        frame, mask = target.obj, target.rows_in_use()
        return CodedData(
            tuple(d.encode(frame[c]).astype(np.int32)[slice(None) if mask is None else mask] for c, d in zip(names, domains)),
            tuple(d.size for d in domains),
            tuple(d.missing_codes for d in domains),
        )


@contextlib.contextmanager
def _randomness(random_state: int | None) -> Iterator[np.random.Generator]:
    """Sampling randomness: from the secure source, or -- for tests only -- everything seeded."""
    if random_state is None:
        seed = [int(w) for w in current_source().words(4)]
        yield np.random.default_rng(seed)
        return
    with seeded_noise(int(random_state)):
        yield np.random.default_rng(int(random_state))


def synthesize(
    target: Target,
    *,
    epsilon: float | None,
    delta: float | None,
    rho: float | None,
    n: int | None = None,
    method: str = "aim",
    columns: Sequence[Any] | None = None,
    marginals: Sequence[Sequence[Any]] | None = None,
    bounds: Mapping[Any, tuple[float, float]] | None = None,
    categories: Mapping[Any, Sequence[Any]] | None = None,
    bins: int | Mapping[Any, int | Sequence[float]] | None = None,
    progress: bool = True,
    random_state: int | None = None,
    reader: Reader | None = None,
) -> pd.DataFrame:
    """A synthetic frame from the protected one (see :meth:`DataFrameAccessor.synthesize`).

    ``reader`` reads the data after the charges (default: the pandas frame of ``target``;
    the Dask front passes one that counts on partitions, with ``target`` over the schema only).

    >>> import dpframe
    >>> p = pd.DataFrame({"sex": pd.Categorical(["F", "M"] * 500)}).dp.protect(epsilon=1.0)
    >>> syn = synthesize(Target.of(p), epsilon=1.0, delta=None, rho=None, method="marginals", n=10, progress=False)
    >>> syn.shape, str(syn["sex"].dtype), p.dp.budget.ledger["query"].tolist()
    ((10, 1), 'category', ['synthesize'])
    """
    frame = target.obj
    if not isinstance(frame, pd.DataFrame):
        raise TypeError("synthesize works on a protected DataFrame; use series.to_frame() for a single column")
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    if marginals is not None and method != "marginals":
        raise ValueError("marginals= chooses the column sets of method='marginals'; the other methods choose their own")
    rows = _check_rows(n)
    if isinstance(columns, (str, bytes)):
        raise TypeError(f"columns must be a list of column names, got the string {columns!r}; e.g. columns=[{columns!r}]")
    names = list(frame.columns if columns is None else columns)
    if not names:
        raise ValueError("there are no columns to synthesize")
    reader = PandasReader() if reader is None else reader
    plan = plan_domains(frame, names, bounds=bounds, categories=categories, bins=DEFAULT_BINS if bins is None else bins,
                        follow_data=bins is None)
    groups = _groups(marginals, names) if method == "marginals" else []
    privacy = target.privacy(epsilon, delta, rho, None, selects_partitions=True)
    if privacy.kind == "rdp":  # planned and charged in rho, as on a zCDP budget (a Rényi budget composes rho)
        privacy = replace(privacy, kind="zcdp")
    too_small = privacy.rho < SMALLEST_RHO if privacy.kind == "zcdp" else privacy.epsilon < SMALLEST_EPSILON
    if too_small:
        raise ValueError(
            f"synthesize needs epsilon >= {float(SMALLEST_EPSILON):g} (rho >= {float(SMALLEST_RHO):g}): with less, "
            "every measurement would be noise and the noisy row count unbounded"
        )
    whole, zcdp = _plan(privacy, plan)
    discovery = whole.part(DOMAIN_SHARE, selection=True) if whole is not None else None
    plan.check_privacy(discovery)
    if discovery is not None and discovery.delta > 0:
        _check_selection_delta(discovery.delta / len(plan.selections) / target.contributions)
    reader.check(plan, discovery)
    target.reserve(privacy.cost, query="synthesize")
    with _randomness(random_state) as rng:
        counted, small, noisy_rows = (Cost(), Fraction(0)), False, None
        if whole is not None:
            small, discovery, counted, noisy_rows = _sized(target, reader, whole, len(names))
            if small and bins is None:  # the same needs as checked above, fewer bins
                plan = plan.for_small_frame(SMALL_BINS)
        found = plan.discover(target, discovery, functools.partial(reader.counts, target), noisy_rows,
                              functools.partial(reader.values, target))
        domains = found.domains
        alone = small and method != "marginals"  # AIM and MST measure a small frame's columns one at a time
        model_privacy, allowance = _model_privacy(privacy, found.cost + counted[0], found.rho + counted[1], zcdp,
                                                  target.contributions)
        unit = "ρ" if allowance.kind == "zcdp" else "ε"
        model_plan = Plan(
            "synthesize", tuple(map(str, names)), target, model_privacy,
            mechanism_name=_MECHANISMS["marginals" if alone else method].format(
                noise="discrete Gaussian" if allowance.kind == "zcdp" else "discrete Laplace"
            ),
            detail=(f"one-way marginals of a small frame (method {method})" if alone else method)
            + f" over {len(names)} columns, planned as {unit}={float(allowance.amount):.4g}"
            + (" (zCDP, converted to (ε, δ) by CKS20 Cor. 13)" if zcdp is not None and whole is None else "")
            + (f" (the rest of a zCDP plan of ρ={float(zcdp.rho):.4g} with the domains' measurements, converted to "
               "(ε, δ) by CKS20 Cor. 13; charged its pro-rata share)" if zcdp is not None and whole is not None else ""),
            rule="zCDP composition" if unit == "ρ" else "sequential composition",
        )
        model_plan.charge()
        coded = reader.marginals(target, names, domains)
        with Progress("synthesize", enabled=progress) as bar:
            compression, measured_alone = None, False
            model: GraphicalModel | MarginalsModel
            if alone:
                model, compression, measured_alone = graphical.independent(coded, allowance, bar)
            elif method == "aim":
                model, compression, measured_alone = graphical.aim(coded, allowance, bar, rng, places=[d.places() for d in domains])
            elif method == "mst":
                model, compression, measured_alone = graphical.mst(coded, allowance, bar)
            else:
                model = fit_marginals(coded, allowance, groups)
            measured = [m.clique for m in model.measurements]
            bar("sampling", 0.95)
            count = rows if rows is not None else max(1, int(round(model.total)))
            codes = model.sample(count, rng)
            if compression is not None:
                codes = compression.undo(codes, rng)
        out = pd.DataFrame({c: d.decode(codes[:, i], rng) for i, (c, d) in enumerate(zip(names, domains))})
    out.attrs["dp"] = SynthesisReport(
        method, target.spent, tuple(dict.fromkeys(tuple(names[a] for a in clique) for clique in measured)),
        {name: _summary(domain.labels()) for name, domain in zip(names, domains)}, count, random_state is not None,
        found.notes + _missing_note(names, domains, compression)
        + (_small_note(model.total, len(names), alone) if alone or measured_alone else ())
        + _correlation_note(model.measurements, model.total),
    )
    return out
