"""Privacy accounting: exact costs, the persistent ledger, budgets, fingerprints and amplification."""

from dpframe.accounting.budget import Budget
from dpframe.accounting.costs import Amount, Cost, Reading
from dpframe.accounting.ledger import Ledger

__all__ = ["Amount", "Budget", "Cost", "Ledger", "Reading"]
