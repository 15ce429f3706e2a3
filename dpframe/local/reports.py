"""Locally private reports: made on the device (or from a protected series), aggregated by the collector.

:func:`randomized_response` turns a column of categories into
:class:`LocalReports`, one randomized report per value; whoever holds them
learns each value only through an ε-LDP randomizer
(:mod:`dpframe.local.mechanisms`). :func:`estimate_frequencies` is the
collector's side: unbiased counts and proportions per category, with their
variance and confidence intervals.

**Categories are public.** They come from ``categories=``, a categorical
dtype or booleans, never from the data (the report format would reveal
them). A value outside them, or a missing value, is reported as if it were
a uniformly random category (drawn from the secure source) -- its report is
then exactly as informative as noise, and the estimates count such people
spread evenly, ``1/k`` per category -- unless ``other=`` names a category
that collects them (appended to the categories if it is not one). Nothing
about the values can raise an error.

**From a protected series** the reports are a release like any other: the
budget is charged before the data is read, and the reports are public
afterwards. Under dpframe's add/remove-one-unit neighbours one report per
row would reveal the number of rows (and, with the index, who is in the
data), so the reports of a protected series are released *shuffled and
without the index*, and their number is noised: with ``Z`` drawn from the
discrete Laplace distribution with scale ``max_contributions / count_epsilon``,
``Z`` dummy reports (the randomizer applied to a uniformly random category)
are added when ``Z > 0`` and ``|Z|`` uniformly chosen reports dropped when
``Z < 0``. The release is then ``(max_contributions · ε + count_epsilon)``-DP:
the report count is ``count_epsilon``-DP (discrete Laplace, sensitivity
``max_contributions``), and given the count, adding one row changes the
shuffled multiset by replacing a dummy by the row's report, or by letting the
row's report take the place of a uniformly chosen one -- each a change of one
report to another within a factor ``e^ε`` (the randomizer is ε-LDP, and a
dummy is a mixture of its outputs), so ``e^ε`` per row and group privacy
over a unit's rows. On a zCDP budget the pure-DP total is charged as
``ρ = total² / 2`` (Bun & Steinke 2016, Prop. 1.4).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.costs import Cost, exact
from dpframe.local.exact import MAX_LOCAL_EPSILON
from dpframe.local.mechanisms import (
    GeneralizedRandomizedResponse,
    LocalHashing,
    LocalRandomizer,
    RandomizedResponse,
    UnaryEncoding,
)
from dpframe.noise.discrete import MAX_LAPLACE_SCALE, sample_discrete_laplace
from dpframe.noise.random import RandomSource, _buffered, current_source, uniform_below
from dpframe.protection.analyst import public_value
from dpframe.protection.base import parts
from dpframe.queries.kernels import category_codes
from dpframe.queries.plan import Target, normal_quantile, public_keys

__all__ = [
    "METHODS",
    "FrequencyEstimate",
    "LocalReports",
    "consistent_proportions",
    "estimate_frequencies",
    "randomized_response",
    "randomizer",
]

#: The ``method=`` names and what they build.
METHODS = {
    "rr": "Warner's randomized response (2 categories)",
    "grr": "generalized randomized response (direct encoding)",
    "sue": "symmetric unary encoding (basic RAPPOR)",
    "oue": "optimized unary encoding",
    "olh": "optimized local hashing",
}


def randomizer(method: str, epsilon: Any, k: int, *, g: int | None = None) -> LocalRandomizer:
    """The randomizer for ``method`` (see :data:`METHODS`) at ``epsilon`` over ``k`` categories.

    >>> randomizer("olh", 1.0, 40)
    LocalHashing(epsilon=1, k=40, g=4)
    >>> randomizer("rappor", 1.0, 4)
    Traceback (most recent call last):
    ...
    ValueError: unknown method 'rappor': choose one of 'rr', 'grr', 'sue', 'oue', 'olh'
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(repr(m) for m in METHODS)}")
    eps = exact(epsilon, "epsilon")
    if eps > MAX_LOCAL_EPSILON:
        raise ValueError(f"epsilon={epsilon!r} is above {MAX_LOCAL_EPSILON}, where a local randomizer reports the "
                         "truth with probability 1 − 10⁻²¹: choose a smaller epsilon")
    if g is not None and method != "olh":
        raise ValueError(f"g= (the number of hash values) only applies to method='olh', not {method!r}")
    if method == "rr":
        return RandomizedResponse(eps, k)
    if method == "grr":
        return GeneralizedRandomizedResponse(eps, k)
    if method == "olh":
        return LocalHashing(eps, k, g)
    return UnaryEncoding(eps, k, optimized=method == "oue")


@dataclass(frozen=True)
class FrequencyEstimate:
    """What a table of :func:`estimate_frequencies` is: kept in its ``attrs["local_dp"]``.

    ``covers`` says what the intervals account for.
    """

    method: str
    epsilon: Fraction
    reports: int
    confidence: float
    covers: str


@dataclass(frozen=True)
class LocalReports:
    """Randomized reports of one column, each ε-LDP: safe to hand to a collector.

    ``frame`` holds one row per report in the randomizer's coding (integer
    category codes, bits or hash seeds; :meth:`to_frame` shows it with the
    category labels). ``padded`` is True for the reports of a protected series,
    whose number was noised (module docstring).
    """

    randomizer: LocalRandomizer
    categories: pd.Index[Any]
    frame: pd.DataFrame
    padded: bool = False

    def __post_init__(self) -> None:
        if len(self.categories) != self.randomizer.k:
            raise ValueError(f"{len(self.categories)} categories for a randomizer over {self.randomizer.k}")

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def method(self) -> str:
        """The randomizer's ``method=`` name."""
        return self.randomizer.method

    @property
    def epsilon(self) -> Fraction:
        """The local ε of every report."""
        return self.randomizer.epsilon

    def to_frame(self) -> pd.DataFrame:
        """The reports as the collector reads them: category labels for ``rr``/``grr``, one bool column per
        category for ``sue``/``oue``, the seed ``a``, ``b`` and hash ``report`` for ``olh``.

        >>> import pandas as pd, dpframe
        >>> r = pd.Series(["x", "y", "x"]).dp.randomized_response(epsilon=1.0, categories=["x", "y", "z"])
        >>> list(r.to_frame().columns), bool(r.to_frame()["report"].isin(["x", "y", "z"]).all())
        (['report'], True)
        """
        if isinstance(self.randomizer, UnaryEncoding):
            bits = self.frame.copy()
            bits.columns = self.categories
            return bits
        if isinstance(self.randomizer, GeneralizedRandomizedResponse):
            labels = pd.Categorical.from_codes(self.frame["report"].to_numpy(), categories=self.categories)
            return pd.DataFrame({"report": labels}, index=self.frame.index)
        return self.frame.copy()

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, method: str, epsilon: float, categories: Sequence[Any],
                   g: int | None = None) -> LocalReports:
        """Reports collected as frames (:meth:`to_frame`), with the parameters they were made with.

        >>> import pandas as pd, dpframe
        >>> r = pd.Series(["x", "y"] * 50).dp.randomized_response(epsilon=1.0, categories=["x", "y"], method="oue")
        >>> back = LocalReports.from_frame(r.to_frame(), method="oue", epsilon=1.0, categories=["x", "y"])
        >>> back.frame.equals(r.frame)
        True
        """
        keys = pd.Index(list(categories))
        if len(keys) == 0 or not keys.is_unique:
            raise ValueError("categories must be a non-empty list without duplicates")
        mechanism = randomizer(method, epsilon, len(keys), g=g)
        if isinstance(mechanism, UnaryEncoding):
            missing = [c for c in keys if c not in frame.columns]
            if missing:
                raise ValueError(f"{method} reports need one bool column per category; missing {missing}")
            coded = pd.DataFrame(frame[list(keys)].to_numpy(dtype=np.bool_), columns=list(mechanism.columns),
                                 index=frame.index)
        elif isinstance(mechanism, GeneralizedRandomizedResponse):
            codes = keys.get_indexer(frame["report"])
            if (codes < 0).any():
                raise ValueError("some reports name a category that is not among the categories")
            coded = pd.DataFrame({"report": codes.astype(np.int64)}, index=frame.index)
        else:
            coded = frame[list(mechanism.columns)].astype(np.int64)
        mechanism.support(coded)  # validates the coding
        return cls(mechanism, keys, coded)

    @classmethod
    def concat(cls, parts: Sequence[LocalReports]) -> LocalReports:
        """The reports of several devices or batches made with the same randomizer and categories.

        >>> import pandas as pd, dpframe
        >>> a = pd.Series(["x"] * 10).dp.randomized_response(epsilon=1.0, categories=["x", "y"])
        >>> len(LocalReports.concat([a, a]))
        20
        """
        if not parts:
            raise ValueError("nothing to concatenate")
        first = parts[0]

        def made_by(r: LocalRandomizer) -> tuple[Any, ...]:
            return r.method, r.epsilon, r.k, getattr(r, "g", None)

        for part in parts[1:]:
            if made_by(part.randomizer) != made_by(first.randomizer) or not part.categories.equals(first.categories):
                raise ValueError("reports made with different randomizers or categories cannot be pooled")
        frame = pd.concat([p.frame for p in parts], ignore_index=True)
        return replace(first, frame=frame, padded=any(p.padded for p in parts))

    def estimate_frequencies(self, confidence: float = 0.95) -> pd.DataFrame:
        """:func:`estimate_frequencies` of these reports."""
        return estimate_frequencies(self, confidence=confidence)

    def __repr__(self) -> str:
        return (f"LocalReports({len(self)} reports, method={self.method!r}, epsilon={float(self.epsilon):.6g}, "
                f"categories={list(self.categories)!r})")


def estimate_frequencies(reports: LocalReports, *, confidence: float = 0.95) -> pd.DataFrame:
    """Unbiased count and proportion of each category among the senders of ``reports``, with intervals.

    Columns: ``count`` (the unbiased estimate ``(C_v − n q*)/(p* − q*)``, which
    can be negative or exceed n), ``std`` (the square root of the exact
    variance formula of :mod:`dpframe.local.mechanisms` with the estimate,
    clipped to [0, n], in place of the true count), ``lower``/``upper`` (normal
    intervals at ``confidence``), and the same divided by the number of reports
    n as ``proportion``, ``proportion_lower``, ``proportion_upper``.
    ``attrs["local_dp"]`` is a :class:`FrequencyEstimate` whose ``covers``
    says what the intervals cover. Aggregation is post-processing: it costs
    no privacy.

    >>> import pandas as pd, dpframe
    >>> s = pd.Series(["a"] * 6000 + ["b"] * 3000 + ["c"] * 1000)
    >>> table = s.dp.randomized_response(epsilon=2.0, categories=["a", "b", "c"]).estimate_frequencies()
    >>> list(table.columns[:4]), bool(abs(table.loc["a", "proportion"] - 0.6) < 0.05)
    (['count', 'std', 'lower', 'upper'], True)
    >>> table.attrs["local_dp"].covers[:40]
    '95% normal-approximation intervals for t'
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    mechanism = reports.randomizer
    n = len(reports)
    count = mechanism.estimate(reports.frame)
    std = np.sqrt(mechanism.variance(n, np.clip(count, 0, n)))
    z = normal_quantile(confidence)
    table = pd.DataFrame({"count": count, "std": std, "lower": count - z * std, "upper": count + z * std},
                         index=reports.categories)
    for column in ("count", "lower", "upper"):
        name = "proportion" if column == "count" else f"proportion_{column}"
        table[name] = table[column] / n if n else np.nan
    covers = (f"{confidence:.0%} normal-approximation intervals for the true number (and share) of the "
              f"{n} reports' senders in each category: they cover the randomization of the reports "
              "(Wang et al. 2017's variance, with the estimate in place of the true count), not sampling "
              "from a wider population")
    if reports.padded:
        covers += ("; the number of reports was noised (dummy reports added or reports dropped, from a "
                   "protected series), which adds about ±(count noise)/k per category that is not in the interval")
    table.attrs["local_dp"] = FrequencyEstimate(mechanism.method, mechanism.epsilon, n, confidence, covers)
    return table


def consistent_proportions(table: pd.DataFrame, method: str = "norm-sub") -> pd.Series[Any]:
    """Proportions made a valid distribution (non-negative, summing to 1): BIASED post-processing.

    ``"norm-sub"`` (Wang et al. 2020, *Locally Differentially Private
    Frequency Estimation with Consistency*) subtracts one constant from every
    estimate and clips at 0 so the rest sums to 1 (the Euclidean projection
    onto the simplex); ``"clip"`` clips at 0 and divides by the sum. Both
    lower the error of typical estimates but are no longer unbiased (rare
    categories are pushed to 0). Free: post-processing of the estimates.

    >>> t = pd.DataFrame({"proportion": [0.7, 0.4, -0.1]}, index=["a", "b", "c"])
    >>> consistent_proportions(t).round(3).tolist(), consistent_proportions(t, "clip").round(3).tolist()
    ([0.65, 0.35, 0.0], [0.636, 0.364, 0.0])
    """
    f = table["proportion"].to_numpy(dtype=np.float64)
    if method == "clip":
        clipped = np.clip(f, 0, None)
        total = clipped.sum()
        values = clipped / total if total > 0 else np.full(f.size, 1 / f.size)
    elif method == "norm-sub":
        ordered = np.sort(f)[::-1]
        cumulative = np.cumsum(ordered) - 1
        ranks = np.arange(1, f.size + 1)
        last = int(np.nonzero(ordered - cumulative / ranks > 0)[0][-1])
        values = np.clip(f - cumulative[last] / (last + 1), 0, None)
    else:
        raise ValueError(f"method must be 'norm-sub' or 'clip', got {method!r}")
    return pd.Series(values, index=table.index, name="proportion (biased: made consistent)")


# --- making reports ----------------------------------------------------------------


def _domain(series: pd.Series[Any], categories: Any, other: Hashable | None) -> pd.Index[Any]:
    keys = public_keys(series, categories)
    if keys is None:
        raise ValueError(
            f"the categories of {series.name!r} must be public: pass categories=[...] (or use a categorical "
            "or boolean column); a randomizer's reports would reveal categories read from the data"
        )
    if other is not None and other not in keys:
        keys = keys.append(pd.Index([public_value(other, "other=")]))
    return keys


def _encode(values: pd.Series[Any], domain: pd.Index[Any], other: Hashable | None,
            source: RandomSource) -> NDArray[np.int64]:
    """Category codes; values outside the domain (and missing ones) go to ``other`` or a random category.

    Each value is looked up on its own (:func:`~dpframe.queries.kernels.category_codes`): pandas would infer
    one type for the whole column, and find ``True`` as ``1`` only beside a text value.
    """
    codes = np.array(category_codes(values, domain), dtype=np.int64)
    unknown = (codes < 0).nonzero()[0]
    if other is not None:
        codes[unknown] = domain.get_indexer(pd.Index([other]))[0]
    else:
        codes[unknown] = uniform_below(len(domain), source, size=unknown.size)
    return codes


def _shuffled(frame: pd.DataFrame, source: RandomSource) -> pd.DataFrame:
    """The rows in a uniformly random order (two 64-bit keys per row: ties have probability below 2⁻¹⁰⁰)."""
    n = len(frame)
    keys = source.words(2 * n).reshape(2, n) if n else np.zeros((2, 0), dtype=np.uint64)
    return frame.iloc[np.lexsort(keys)].reset_index(drop=True)


def randomized_response(
    series: Any,
    *,
    epsilon: float,
    categories: Sequence[Any] | None = None,
    method: str = "grr",
    other: Hashable | None = None,
    count_epsilon: float | None = None,
    g: int | None = None,
) -> LocalReports:
    """One ε-LDP report per value of ``series`` (see the module docstring for the rules).

    On a plain Series this is what a party runs on its own data: nothing is
    charged and the reports keep the series' index. On a protected series the
    budget is charged ``max_contributions · epsilon + count_epsilon``
    (``count_epsilon`` defaults to ``epsilon / 10``) before the data is read,
    and the reports come back shuffled, without the index, their number
    noised.

    >>> import pandas as pd, dpframe
    >>> s = pd.Series(["yes", "no", "yes", "yes"], name="smoker")
    >>> r = randomized_response(s, epsilon=1.0, categories=["no", "yes"], method="rr")
    >>> r.method, len(r), list(r.frame.index)
    ('rr', 4, [0, 1, 2, 3])
    """
    target = None if parts(series) is None else Target.of(series)
    data: pd.Series[Any] = series if target is None else target.series  # schema only, until charged
    if not isinstance(data, pd.Series):
        raise TypeError(f"randomized_response needs a Series, got {type(series).__name__}")
    domain = _domain(data, categories, other)
    mechanism = randomizer(method, epsilon, len(domain), g=g)
    if target is not None:
        return _release(target, mechanism, domain, other, count_epsilon)
    if count_epsilon is not None:
        raise ValueError("count_epsilon= applies to protected series only (a plain series' reports are not padded)")
    source = _buffered(current_source())
    reports = mechanism.randomize(_encode(data, domain, other, source), source)
    reports.index = data.index
    return LocalReports(mechanism, domain, reports)


def _release(target: Target, mechanism: LocalRandomizer, domain: pd.Index[Any], other: Hashable | None,
             count_epsilon: float | None) -> LocalReports:
    """The reports of a protected series: charged first, then shuffled with a noised number (module docstring)."""
    eps = mechanism.epsilon
    eps_count = eps / 10 if count_epsilon is None else exact(count_epsilon, "count_epsilon")
    k = target.contributions
    total = k * eps + eps_count
    budget = target.protection.budget
    cost = Cost(rho=total * total / 2) if budget.kind == "zcdp" else Cost(epsilon=total)
    scale = Fraction(k) / eps_count
    if scale > MAX_LAPLACE_SCALE:  # checked before the charge: the sampler would refuse it after
        raise ValueError(f"count_epsilon={float(eps_count):.3g} is too small: the count noise would need a scale "
                         f"above {float(MAX_LAPLACE_SCALE):.3g}; choose a larger count_epsilon")
    series = target.series
    target.charge(
        cost, query="randomized_response", columns=(str(series.name),),
        mechanism=f"local randomizer: {METHODS[mechanism.method]}",
        noise=(f"ε={float(eps):.4g} per report (p*={mechanism.p_star:.4g}, q*={mechanism.q_star:.4g}); "
               f"number of reports ± discrete Laplace (scale {float(scale):.4g}), shuffled"),
        rule=(f"each report is ε-LDP, a unit's ≤{k} rows → group privacy {k}·ε; the number of reports is "
              f"count_epsilon={float(eps_count):.4g}-DP; total {k}·ε + count_epsilon = {float(total):.4g}"
              + (" (pure DP, charged ρ = total²/2)" if budget.kind == "zcdp" else "")
              + "; sequential with this budget's other releases"),
    )
    source = _buffered(current_source())
    used = target.rows_in_use()
    values = series if used is None else series[used]
    reports = _noised_count(mechanism, _encode(values, domain, other, source), scale, source)
    return LocalReports(mechanism, domain, reports, padded=True)


def _noised_count(mechanism: LocalRandomizer, codes: NDArray[np.int64], scale: Fraction,
                  source: RandomSource) -> pd.DataFrame:
    """The reports of ``codes``, shuffled, with discrete Laplace(``scale``) dummies added or reports dropped."""
    reports = mechanism.randomize(codes, source)
    z = int(sample_discrete_laplace(scale, 1, source)[0])
    if z > 0:
        dummies = mechanism.randomize(uniform_below(mechanism.k, source, size=z), source)
        reports = pd.concat([reports, dummies], ignore_index=True)
    elif z < 0:
        reports = _shuffled(reports, source).iloc[: max(len(reports) + z, 0)]
    return _shuffled(reports, source)
