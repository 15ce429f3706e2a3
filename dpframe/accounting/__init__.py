"""Privacy accounting: exact costs, the persistent ledger, budgets, fingerprints, amplification and composition rules."""

from dpframe.accounting.budget import Budget
from dpframe.accounting.composition import (
    advanced_composition,
    advanced_composition_heterogeneous,
    gaussian_rdp,
    group_privacy,
    group_privacy_zcdp,
    laplace_rdp,
    optimal_composition,
    poisson_gaussian_rdp,
    poisson_subsampled_rdp,
    pure_dp_rdp,
    pure_to_zcdp,
    rdp_to_approx,
    zcdp_rho_for,
    zcdp_to_approx_epsilon,
)
from dpframe.accounting.costs import Amount, Cost, Reading
from dpframe.accounting.ledger import Ledger

__all__ = [
    "Amount",
    "Budget",
    "Cost",
    "Ledger",
    "Reading",
    "advanced_composition",
    "advanced_composition_heterogeneous",
    "gaussian_rdp",
    "group_privacy",
    "group_privacy_zcdp",
    "laplace_rdp",
    "optimal_composition",
    "poisson_gaussian_rdp",
    "poisson_subsampled_rdp",
    "pure_dp_rdp",
    "pure_to_zcdp",
    "rdp_to_approx",
    "zcdp_rho_for",
    "zcdp_to_approx_epsilon",
]
