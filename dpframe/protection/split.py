"""Per-group budgets: a protected frame split by public keys into disjoint protected frames (``p.dp.partition_by``).

Parallel composition (McSherry 2009, PINQ, Thm 4): if each privacy unit's
rows lie in at most one part and each part is analysed by an (ε, δ)-DP (or
ρ-zCDP) mechanism, adaptively chosen or not, the whole is (ε, δ)-DP (ρ-zCDP):
adding or removing one unit changes one part only, and every other part's
answers have the same distribution whatever that unit's data. So the parent
is charged the amount once, and each part gets a budget of that amount of its
own (docs/accounting.md, "Per-group budgets").

Each unit is kept in one part, chosen from its own rows alone: among the parts
its rows fall in, the one whose keyed hash of (unit, part) is smallest (a
fresh secret key from the secure source); its rows in other parts are dropped.
Which part a unit lands in thus depends on no other unit's data, and the code
path, the charge and the errors depend on no data at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.budget import Budget, totals
from dpframe.errors import RefusedError
from dpframe.noise.random import current_source, is_seeded
from dpframe.protection.base import Rows
from dpframe.protection.frame import ProtectedFrame
from dpframe.protection.units import Protection, keyed_hashes, mix_words, numbered_units, unit_ids
from dpframe.queries.kernels import category_codes
from dpframe.queries.plan import Target, public_keys
from dpframe.results import OTHER

RULE = "parallel composition over {n} disjoint parts; each unit's rows kept in one part"


def partition_by(frame: ProtectedFrame, column: Any, keys: Sequence[Any] | None, epsilon: float | None,
                 delta: float, rho: float | None, other: bool = False) -> dict[Any, ProtectedFrame]:
    """Split ``frame`` by the public ``keys`` of ``column``: one protected frame per key (and, with ``other``, one
    under :data:`~dpframe.OTHER` for the rest), each with a budget of the amount, the parent charged that amount once
    (the module docstring; :meth:`DataFrameAccessor.partition_by`).
    """
    target = Target.of(frame)
    series = target.column(column)
    found = public_keys(series, keys)
    if found is None:
        raise ValueError(f"the keys of {column!r} are not public: declare them with keys=[...], give the column a "
                         "categorical dtype with its categories, or split on a boolean column")
    if found.hasnans:
        raise ValueError(f"the keys of {column!r} must not be missing values")
    if not isinstance(other, bool):
        raise TypeError(f"other must be True or False, got {other!r}")
    if other and OTHER in found:
        raise ValueError(f"with other=True, {OTHER!r} labels the rest: it cannot be one of the keys")
    kind, amount = totals(epsilon, delta, rho)
    parent = target.protection
    _check_parallel(parent, target, kind)
    # Charged before the data is read; the parts' budgets come after, so a failure in between over-charges.
    line = parent.budget._charge(amount, query=f"partition_by({column})", columns=(str(column),),
                                 mechanism="none: each part gets a budget of this amount", noise="none",
                                 rule=RULE.format(n=len(found) + other), seeded=is_seeded())
    label = parent.budget.name or parent.budget.id
    labels = [*found, *([OTHER] if other else [])]
    names = [f"{label}/{column}={key} (line {line})" for key in labels]
    records = parent.budget.store.create_parts(parent.budget.id, kind, amount, names, f"partition_by({column})")
    data = target.obj
    codes = category_codes(series, found).astype(np.int64, copy=False)
    if other:
        codes = np.where(codes < 0, len(found), codes)  # the rest: missing and undeclared values
    kept = codes == _part_of_unit(unit_ids(data), codes)
    lineage = frame._lineage
    result = {}
    for position, (key, record) in enumerate(zip(labels, records)):
        budget = Budget._bind(parent.budget.store, record)
        protection = Protection(budget, parent.max_contributions, parent.privacy_unit)
        result[key] = frame._wrap(data[kept & (codes == position)], Rows(), protection, lineage=lineage)
    return result


def _check_parallel(protection: Protection, target: Target, kind: str) -> None:
    """Refuse, from the protection and the arguments alone, a split that parallel composition does not cover."""
    if protection.bounded or protection.budget_relation_differs:
        raise RefusedError("partition_by() is refused under bounded DP (replace-one neighbours): replacing a row "
                           "can move it from one part to another, changing two parts, so the parts cannot each get "
                           "the whole amount")
    if target.sample is not None:
        raise RefusedError("partition_by() of a Poisson sample is refused: its parts would share the sample's "
                           "amplification account; split the data first, then sample a part")
    budget_kind = protection.budget.kind
    if budget_kind not in ("approx", "zcdp"):
        raise RefusedError(f"partition_by() is not implemented for a {budget_kind!r} budget (a filter): parallel "
                           "composition is implemented for (epsilon, delta) and zCDP budgets")
    if kind != budget_kind:
        raise ValueError(f"this is a {budget_kind} budget: give the parts' amount as "
                         f"{'epsilon= (with optional delta=)' if budget_kind == 'approx' else 'rho='}")


def _part_of_unit(units: pd.Index[Any], codes: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each row's unit's part: among the parts its rows fall in (codes >= 0), the one of smallest keyed hash of
    (unit, part); -1 for a unit with no row in any part. A unit's part depends on its own rows only."""
    key = current_source().words(2).tobytes()
    unit, numbered = numbered_units(units)
    # The keyed hash of each unit's value (the value's, not its dtype's: see keyed_hashes), mixed with the part's
    # public number.
    _, k1 = np.frombuffer(key, dtype=np.uint64)
    unit_hashes = keyed_hashes(numbered(np.arange(int(unit.max(initial=-1)) + 1)), key)
    priority = mix_words(unit_hashes[unit] ^ mix_words(codes.astype(np.int64).view(np.uint64) ^ k1))
    outside = codes < 0
    order = np.lexsort((priority, outside, unit))  # by unit, its rows in a part first, then by priority
    first = order[np.diff(unit[order], prepend=-1) != 0]  # each unit's first row in that order
    chosen = np.full(int(unit.max(initial=-1)) + 1, -1, dtype=np.int64)
    chosen[unit[first]] = codes[first]
    part: NDArray[np.int64] = chosen[unit]
    return part
