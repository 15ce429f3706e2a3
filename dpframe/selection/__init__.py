"""Private selection: exponential mechanism, permute-and-flip, report-noisy-max, sparse vector."""

from dpframe.selection.exponential import exponential_mechanism, permute_and_flip, report_noisy_max, top_k
from dpframe.selection.svt import SparseVector, above_threshold, sparse

__all__ = [
    "SparseVector",
    "above_threshold",
    "exponential_mechanism",
    "permute_and_flip",
    "report_noisy_max",
    "sparse",
    "top_k",
]
