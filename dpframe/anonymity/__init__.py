"""k-anonymity, l-diversity, t-closeness and optimal generalization -- teaching contrasts to DP.

**Nothing in this package is differentially private, and nothing here spends
a privacy budget.** These are audit tools for de-identified data: how many
people share each combination of quasi-identifiers, and the least lossy
generalization that makes every such group at least k people large. They
run on unprotected frames and on protected ones (they read columns only;
the ``_dp_unit`` index level and the budget are left alone).

>>> import pandas as pd, dpframe
>>> from dpframe.anonymity import k_anonymity, anonymize
>>> df = pd.DataFrame({"age": [42, 52, 36, 24, 73], "preTestScore": [4, 24, 31, 2, 3]})
>>> k_anonymity(df, ["age", "preTestScore"])
1 (k-anonymity; not differentially private; no privacy budget spent)
>>> anonymize(df, k=2, quasi_identifiers=["age", "preTestScore"]).levels
{'age': 2, 'preTestScore': 2}

See ``docs/anonymity.md`` for why k-anonymity is not enough (and what DP adds).
"""

from dpframe.anonymity.hierarchy import (
    HierarchySpec,
    default_hierarchy,
    generalize,
    hierarchy_table,
    interval_hierarchy,
    read_hierarchy,
    rounding_hierarchy,
    suppression_hierarchy,
)
from dpframe.anonymity.lattice import METRICS, AnonymizationResult, Metric, anonymize
from dpframe.anonymity.measures import (
    AuditFloat,
    AuditInt,
    EquivalenceClasses,
    equivalence_classes,
    k_anonymity,
    l_diversity,
    t_closeness,
)

__all__ = [
    "METRICS",
    "AnonymizationResult",
    "AuditFloat",
    "AuditInt",
    "EquivalenceClasses",
    "HierarchySpec",
    "Metric",
    "anonymize",
    "default_hierarchy",
    "equivalence_classes",
    "generalize",
    "hierarchy_table",
    "interval_hierarchy",
    "k_anonymity",
    "l_diversity",
    "read_hierarchy",
    "rounding_hierarchy",
    "suppression_hierarchy",
    "t_closeness",
]
