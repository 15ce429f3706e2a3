"""A dataset's mock: synthetic data the curator makes once, for every analyst to develop and debug on.

``dpframe mock CONFIG`` runs :meth:`~dpframe.accessor.DataFrameAccessor.synthesize` on each dataset that offers a
mock (``mock = {...}`` in its table, or by default, at a tenth of its cap; ``mock = false`` opts out), under an
allotment of the dataset's cap named ``mock:DATASET@TIME``: the cap pays for it once, as for one more analyst, and
the ledger shows the charge and a ``"mock made"`` service event. The synthetic frame is kept in the ledger and sent
free to every analyst of the dataset (``GET /v1/datasets/{name}/mock``; ``p.mock()`` or ``c.dataset(name,
mock=True)`` on the analyst's side, :mod:`dpframe.service.client`): it is post-processing of a differentially
private release (Dwork & Roth, Prop. 2.1), so downloading it, any number of times, by any number of analysts, costs
nothing more.

What a mock is good for: the schema (columns, dtypes, categories), the shape of the data, rough distributions
and a few correlations -- enough to write, run and debug a pipeline before spending budget on the real data. What it
is not for: conclusions. Its values are a model's draws from noisy marginals; its row count is noisy; rare values,
outliers and most relations between more than two columns are gone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpframe.service import wire

if TYPE_CHECKING:
    from dpframe.service.server import Service

__all__ = ["MAX_MOCK_ROWS", "MOCK_NOTES", "MockInfo", "MockMade", "make_mock"]

# A mock is for developing a pipeline, not for its answers: more rows than this add download time and nothing else.
MAX_MOCK_ROWS = 100_000

MOCK_NOTES = (
    "synthetic data made by the curator with dpframe's synthesize: post-processing of a differentially private "
    "release, free to use and share",
    "good for: the schema (columns, dtypes, categories), the shape of the data, rough distributions -- writing and "
    "debugging a pipeline before spending budget",
    "not for: conclusions. Values are a model's draws from noisy marginals; the row count is noisy; rare values, "
    "outliers and most relations between more than two columns are not kept",
)


@dataclass(frozen=True)
class MockMade:
    """What ``dpframe mock`` made: the dataset, the rows, what it cost, the cap that paid and the budget charged."""

    dataset: str
    rows: int
    cost: str
    cap: str
    budget: str

    def __str__(self) -> str:
        return (f"made the mock of {self.dataset}: {self.rows:,} synthetic rows, {self.cost} charged to its cap "
                f"{self.cap} (ledger budget {self.budget}); analysts download it free")


@dataclass(frozen=True)
class MockInfo:
    """A mock's description, in its frame's ``attrs["mock"]`` on the analyst's side.

    >>> MockInfo("census", "2026-11-29T10:00:00+00:00", "ε=0.4, δ=1e-07", MOCK_NOTES)
    MockInfo(mock of census made 2026-11-29T10:00:00+00:00 for ε=0.4, δ=1e-07: synthetic, not for conclusions)
    """

    dataset: str
    made: str
    cost: str
    notes: tuple[str, ...]

    def __repr__(self) -> str:
        return (f"MockInfo(mock of {self.dataset} made {self.made} for {self.cost}: synthetic, not for "
                "conclusions)")


def make_mock(service: Service, dataset: str) -> MockMade:
    """Synthesize ``dataset``'s mock under a new allotment of its cap, keep it in the ledger and say what it cost.

    The allotment is made first; synthesize then reserves the mock's whole cost on it, and so on the cap, before it
    reads the data: a cap that cannot cover the mock refuses it and nothing is charged (the empty allotment stays in
    the ledger). A mock made again replaces the old one and is charged again.
    Raises ValueError for a dataset that offers no mock, and dpframe's errors (a spent cap, arguments that
    :meth:`~dpframe.accessor.DataFrameAccessor.synthesize` refuses) as they are.
    """
    config = service.config
    total = config.mock_total(dataset)
    if total is None:
        raise ValueError(f"dataset {dataset!r} offers no mock (mock = false in its table)")
    spec = config.datasets[dataset]
    declared = spec.mock if not isinstance(spec.mock, bool) else None
    cap_name = config.cap_name(dataset)
    name = f"mock:{dataset}@{datetime.now(timezone.utc).isoformat(timespec='microseconds')}"
    allotment = service.caps[cap_name].allot(name, epsilon=total.epsilon, delta=total.delta, rho=total.rho)
    protected = service.protected(dataset, allotment)
    bounds = {column: (pair[0], pair[1]) for column, pair in declared.bounds.items()} if declared else None
    synthetic = protected.dp.synthesize(epsilon=total.epsilon, delta=total.delta if total.rho is None else None,
                                        rho=total.rho, n=declared.rows if declared else None, bounds=bounds or None,
                                        progress=False)
    kept = _fitted(synthetic, config.limits.max_answer_bytes)
    cost = total.cost.describe(total.kind)
    text = json.dumps({"frame": wire.encode(kept), "cost": cost}, allow_nan=False)
    service.ledger.keep_mock(dataset, text, allotment.id, f"{len(kept):,} rows, {cost} charged to {cap_name} "
                             f"(budget {name})")
    return MockMade(dataset, len(kept), cost, cap_name, name)


def _fitted(synthetic: pd.DataFrame, max_bytes: int) -> pd.DataFrame:
    """At most :data:`MAX_MOCK_ROWS` rows of the synthetic frame, fewer if its encoding would not fit in an answer
    (``max_answer_bytes``): a uniform subsample, post-processing of the synthetic data."""
    kept = synthetic.sample(MAX_MOCK_ROWS) if len(synthetic) > MAX_MOCK_ROWS else synthetic
    size = len(json.dumps(wire.encode(kept), allow_nan=False))
    if size > max_bytes * 0.9:  # the answer's envelope and notes take the rest
        kept = kept.sample(max(1, int(len(kept) * max_bytes * 0.8 / size)))
    if kept is not synthetic:
        kept = kept.sort_index().reset_index(drop=True)
        kept.attrs = dict(synthetic.attrs)
    return kept


def mock_answer(kept: tuple[pd.Timestamp, str], dataset: str) -> str:
    """The JSON body of ``GET /v1/datasets/{name}/mock``: the kept frame, when it was made, its cost and its notes.

    >>> body = json.loads(mock_answer((pd.Timestamp("2026-11-29", tz="UTC"), '{"frame": [], "cost": "ε=0.4"}'), "c"))
    >>> sorted(body["value"]), body["value"]["made"]
    (['cost', 'dataset', 'frame', 'made', 'notes'], '2026-11-29T00:00:00+00:00')
    """
    made, text = kept
    stored: dict[str, Any] = json.loads(text)
    value = {"dataset": dataset, "frame": stored["frame"], "made": made.isoformat(), "cost": stored["cost"],
             "notes": list(MOCK_NOTES)}
    return json.dumps({"value": value}, allow_nan=False)
