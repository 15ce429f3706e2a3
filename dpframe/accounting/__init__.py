"""Privacy accounting: costs, the shared budget and its ledger."""

from dpframe.accounting.budget import Budget, Cost

__all__ = ["Budget", "Cost"]
