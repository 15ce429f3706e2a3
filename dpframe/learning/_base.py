"""What every private estimator shares: scikit-learn's parameter conventions, and a fit in one charged release.

A fit is planned from the schema and the arguments (:func:`prepare`): the
design matrix's encoding, the privacy of the whole fit and of each step,
the noise. Only then :func:`start` reserves the whole cost (one write-ahead
line), finds the bounds of undeclared numeric columns privately (their own
ledger lines, within the reservation), charges the model as one ledger line
naming its mechanism, noise and composition rule, and reads the data.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.accounting.costs import Cost
from dpframe.errors import NotProtectedError
from dpframe.learning._design import Design, plan_design
from dpframe.learning._noisy import Units, gaussian_sigma2, noisy
from dpframe.noise.mechanism import Privacy, largest_rho
from dpframe.protection.base import Protected, parts
from dpframe.protection.units import unit_codes, unit_ids
from dpframe.queries.bounds import private_bounds, pure_share, query_share
from dpframe.queries.partitioned import Partitioning, release_counts
from dpframe.queries.plan import Plan, Target

# The share of the fit's epsilon (or rho) spent on finding the bounds of numeric columns declared without them and
# the categories of text columns, split equally between those columns (bounds: pure epsilon-DP sparse vector runs;
# categories: noisy counts with private partition selection, which also take this share of delta).
DISCOVERY_SHARE = Fraction(1, 10)


class PrivateEstimator:
    """scikit-learn's estimator conventions without depending on scikit-learn.

    ``get_params``/``set_params`` read the constructor's signature (as
    ``sklearn.base.BaseEstimator`` does), so ``sklearn.base.clone`` and
    ``Pipeline`` accept the models; fitted attributes end with ``_``.
    """

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters and their values."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> PrivateEstimator:
        """Set constructor parameters (a clear error for unknown ones); returns the estimator."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; its parameters are {valid}")
            setattr(self, name, value)
        return self

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [p.name for p in signature.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    # scikit-learn's estimator type: "classifier" or "regressor".
    _estimator_type: str = ""

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags (1.6 and later ask for them in ``Pipeline``, ``clone`` and ``score``); scikit-learn
        is imported only when it asks, so the models need no scikit-learn of their own."""
        from sklearn.base import BaseEstimator
        from sklearn.utils import ClassifierTags, RegressorTags

        tags = BaseEstimator.__sklearn_tags__(self)  # reads nothing of the instance
        tags.estimator_type = self._estimator_type
        tags.target_tags.required = True
        if self._estimator_type == "classifier":
            tags.classifier_tags = ClassifierTags()
        else:
            tags.regressor_tags = RegressorTags()
        return tags

    def __repr__(self) -> str:
        defaults = inspect.signature(type(self).__init__).parameters
        changed = [f"{name}={value!r}" for name, value in self.get_params().items()
                   if not (defaults[name].default is value or _equal(defaults[name].default, value))]
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- after fitting: prediction is post-processing of the released weights -----------------------------

    design_: Design
    weights_: NDArray[np.float64]
    privacy_: Cost

    def _decision(self, X: Any) -> NDArray[np.float64]:
        """The linear score of every row of plain (public) data ``X``."""
        if not hasattr(self, "weights_"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit(p[features], p[label], ...)")
        frame = _plain(X, self.design_.names, type(self).__name__)
        scores: NDArray[np.float64] = self.design_.matrix(frame) @ self.weights_
        return scores

    def _fitted(self, design: Design, weights: NDArray[np.float64], spent: Cost) -> None:
        self.design_, self.weights_, self.privacy_ = design, weights, spent
        coef, intercept = design.unscale(weights)
        self.coef_ = coef.reshape(1, -1) if self._classifier else coef
        self.intercept_ = np.array([intercept]) if self._classifier else intercept
        self.n_features_in_ = len(design.names)
        self.feature_names_in_ = np.array([str(n) for n in design.names], dtype=object)
        self.feature_names_out_ = design.labels()
        self.bounds_ = {f.name: f.bounds for f in design.features if f.kind == "numeric"}

    _classifier = False


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _plain(X: Any, names: Sequence[Any], estimator: str) -> pd.DataFrame:
    """Public data to predict on, as a frame of the training columns."""
    if isinstance(X, Protected):
        raise NotProtectedError(
            f"{estimator} predicts on plain (public) data only: a prediction for every row of a protected frame "
            "would release each row; predict on public data, or query the protected frame's aggregates"
        )
    if isinstance(X, pd.Series):
        X = X.to_frame()
    if isinstance(X, pd.DataFrame):
        missing = [str(n) for n in names if n not in X.columns]
        if missing:
            raise KeyError(f"{estimator} was trained on columns {list(map(str, names))}; X lacks {missing}")
        return X
    array = np.asarray(X)
    if array.ndim == 1:
        array = array.reshape(-1, 1)
    if array.ndim != 2 or array.shape[1] != len(names):
        raise ValueError(f"{estimator} expects {len(names)} feature columns ({list(map(str, names))}), "
                         f"got an array of shape {array.shape}")
    return pd.DataFrame(array, columns=pd.Index(list(names)))


@dataclass(frozen=True)
class Prepared:
    """A fit planned from the schema and the arguments: nothing read, nothing charged."""

    target: Target
    frame: pd.DataFrame
    label: pd.Series[Any]
    design: Design
    privacy: Privacy  # the whole fit's
    model: Privacy  # what the model's own line spends (the whole fit's, less finding bounds and categories)


def prepare(estimator: str, X: Any, y: Any, bounds: Mapping[Any, Any] | None,
            categories: Mapping[Any, Sequence[Any]] | None, epsilon: float | None, delta: float | None,
            rho: float | None) -> Prepared:
    """Check the inputs (protected, the same rows), plan the design matrix, resolve the privacy and its split."""
    for what, obj in (("X", X), ("y", y)):
        if parts(obj) is None:
            raise NotProtectedError(
                f"{estimator}.fit trains on protected data: {what} is a plain {type(obj).__name__}. Protect the "
                "frame (p = df.dp.protect(...)) and pass model.fit(p[features], p[label], ...); on public data "
                "use scikit-learn itself"
            )
    assert isinstance(X, Protected) and isinstance(y, Protected)
    if X._protection.key != y._protection.key:
        raise ValueError(f"{estimator}.fit: X and y are protected separately (different budgets); take both from "
                         "one protected frame: model.fit(p[features], p[label])")
    if X._rows is not y._rows:
        raise ValueError(f"{estimator}.fit: X and y hold different rows of the protected frame (one was filtered "
                         "or derived apart); select both from the same frame: model.fit(p[features], p[label])")
    target = Target.of(X)
    frame = target.obj if isinstance(target.obj, pd.DataFrame) else target.obj.to_frame()
    label = Target.of(y).obj
    if not isinstance(label, pd.Series):
        raise TypeError(f"{estimator}.fit: y must be one protected column, e.g. p['label']")
    if label.name in frame.columns:
        raise ValueError(f"{estimator}.fit: the label {label.name!r} is also among the features")
    released = target.protection.released_categories
    design = plan_design(frame, bounds, categories, estimator=estimator,
                         released={name: released[lineage] for name in frame.columns
                                   if (lineage := target.lineage_of(name)) is not None and lineage in released})
    privacy = target.privacy(epsilon, delta, rho, "gaussian")
    if design.unselected and privacy.kind != "approx":
        raise ValueError(
            f"{estimator}: the categories of {list(map(str, design.unselected))} are not public, and selecting them "
            "privately needs an (epsilon, delta) budget; declare them (categories={column: [...]}) or give the "
            "columns a categorical dtype"
        )
    model = privacy
    if design.undiscovered or design.unselected:
        model = query_share(privacy, 1 - DISCOVERY_SHARE)
    if design.unselected:
        model = replace(model, delta=model.delta * (1 - DISCOVERY_SHARE))
    return Prepared(Target(frame, target.protection, target.sample, lineage=target.lineage), frame, label, design,
                    privacy, model)


@dataclass(frozen=True)
class Data:
    """The rows in use after the charge: design matrix, raw labels, units."""

    design: Design
    X: NDArray[np.float64]
    y: NDArray[np.float64]
    units: Units


def start(prepared: Prepared, query: str, label: Callable[[pd.Series[Any]], NDArray[np.float64]], *,
          mechanism: str, detail: str, rule: str) -> Data:
    """Reserve the fit, find undeclared bounds (own lines), charge the model (one line); only then read the rows.

    ``label`` encodes the labels as numbers, NaN for a row the model cannot use (a missing label): such rows are
    left out (a fixed rule; a unit left out contributes nothing).
    """
    target = prepared.target
    target.reserve(prepared.privacy.cost, query=query)
    design = prepared.design
    discovering = len(design.undiscovered) + len(design.unselected)
    if design.undiscovered:
        share = pure_share(prepared.privacy, DISCOVERY_SHARE / discovering)
        found = {name: private_bounds(target, target.column(name), share, query=query)
                 for name in design.undiscovered}
        design = design.with_bounds(found)
    if design.unselected:
        weight = DISCOVERY_SHARE / discovering
        selection = Privacy("approx", "laplace", prepared.privacy.epsilon * weight,
                            prepared.privacy.delta * DISCOVERY_SHARE / len(design.unselected), Fraction(0))
        selected = {name: release_counts(f"categories for {query}", target, Partitioning.of(target, [name], None),
                                         selection, (str(name),)).cells for name in design.unselected}
        design = design.with_categories(selected)
    Plan(query, tuple(map(str, design.names)), target, prepared.model, mechanism_name=mechanism, detail=detail,
         rule=rule).charge()
    mask = target.rows_in_use()
    rows = prepared.frame if mask is None else prepared.frame[mask]
    y = label(prepared.label if mask is None else prepared.label[mask])
    usable = ~np.isnan(y)
    if not usable.all():
        rows, y = rows[usable], y[usable]
    ids = unit_ids(rows)
    codes = None if ids.is_unique else unit_codes(ids)
    return Data(design, design.matrix(rows), y, Units.of(codes))


def zcdp_of(privacy: Privacy, estimator: str) -> tuple[Fraction, str]:
    """The zCDP ρ a Gaussian-noise fit may spend, and how its total is read (the end of the ledger's rule).

    On a (ε, δ) budget, the largest ρ whose tight conversion (CKS20 Cor. 13)
    is within (ε, δ); on a zCDP or Rényi budget, ρ itself.
    """
    if privacy.kind != "approx":
        return privacy.rho, ""
    return largest_rho(privacy.epsilon, privacy.delta, estimator), ", converted to (ε, δ) by CKS20 Cor. 13"


def noisy_count(count: int, rho: Fraction) -> float:
    """The number of units, with discrete Gaussian noise at ``rho`` (sensitivity 1), at least 1."""
    return float(max(1, int(noisy(np.array([count], dtype=np.int64), gaussian_sigma2(Fraction(1), rho))[0])))
