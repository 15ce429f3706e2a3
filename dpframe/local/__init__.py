"""Local differential privacy: randomizers run by each person, frequency estimates by the collector.

See ``docs/local.md``. :func:`randomized_response` (also ``s.dp.randomized_response(...)``) makes
ε-LDP reports of a column; :func:`estimate_frequencies` turns them into unbiased counts with intervals.
"""

from dpframe.local.exact import ExpProbability, bernoulli
from dpframe.local.mechanisms import (
    GeneralizedRandomizedResponse,
    LocalHashing,
    LocalRandomizer,
    RandomizedResponse,
    UnaryEncoding,
)
from dpframe.local.reports import (
    METHODS,
    FrequencyEstimate,
    LocalReports,
    consistent_proportions,
    estimate_frequencies,
    randomized_response,
    randomizer,
)

__all__ = [
    "METHODS",
    "ExpProbability",
    "FrequencyEstimate",
    "GeneralizedRandomizedResponse",
    "LocalHashing",
    "LocalRandomizer",
    "LocalReports",
    "RandomizedResponse",
    "UnaryEncoding",
    "bernoulli",
    "consistent_proportions",
    "estimate_frequencies",
    "randomized_response",
    "randomizer",
]
