"""The design matrix of a private model: which columns, how encoded, how scaled -- decided from the schema.

Numeric columns are clipped to their bounds (declared, or found privately
before the model is trained) and mapped linearly onto ``[-1, 1]``; boolean
columns become one 0/1 feature; categorical columns are one-hot encoded over
their public categories (a categorical dtype's, declared with
``categories=``, released by an earlier query, or selected privately before
the model is trained). A last constant column of ones carries the intercept. Every
row of the matrix therefore lies in a box fixed by the schema alone, whose
squared L2 radius :attr:`Design.radius2` is public: one per numeric or
boolean column, one per categorical column (one of its indicators is 1), one
for the intercept. Missing values encode as 0 (the midpoint of a numeric
column's bounds, no indicator of a categorical one): a fixed rule that reads
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.protection.analyst import public_value
from dpframe.queries.kernels import category_codes
from dpframe.queries.plan import check_bounds

Kind = Literal["numeric", "boolean", "categorical"]


@dataclass(frozen=True)
class Feature:
    """One input column and its public encoding."""

    name: Any
    kind: Kind
    bounds: tuple[float, float] | None = None
    categories: tuple[Any, ...] = ()
    found: bool = False  # bounds found privately (their own ledger line)
    selected: bool = False  # categories selected privately (their own ledger line)

    @property
    def width(self) -> int:
        """Columns of the design matrix this feature becomes."""
        return len(self.categories) if self.kind == "categorical" else 1

    def encode(self, column: pd.Series[Any]) -> NDArray[np.float64]:
        """The feature's columns of the design matrix, shape ``(rows, width)``."""
        if self.kind == "categorical":
            # No indicator for a missing value or one outside the public categories; each value looked up on
            # its own (pandas would infer one type for the column: True found as 1 only beside a text value).
            codes = category_codes(column, pd.Index(list(self.categories), tupleize_cols=False))
            rows = np.flatnonzero(codes >= 0)
            out = np.zeros((len(column), self.width))
            out[rows, codes[rows]] = 1.0
            return out
        values: NDArray[np.float64] = column.to_numpy(dtype=float, na_value=np.nan)
        if self.kind == "numeric":
            assert self.bounds is not None, "bounds are found before any column is encoded"
            lo, hi = self.bounds
            values = (np.clip(values, lo, hi) - (lo + hi) / 2) / ((hi - lo) / 2)
        encoded: NDArray[np.float64] = np.nan_to_num(values, nan=0.0).reshape(-1, 1)
        return encoded

    def labels(self) -> list[str]:
        """Names of the feature's design columns."""
        if self.kind == "categorical":
            return [f"{self.name}={c}" for c in self.categories]
        return [str(self.name)]


@dataclass(frozen=True)
class Design:
    """Features in order; the design matrix adds a last column of ones (the intercept)."""

    features: tuple[Feature, ...]

    @property
    def width(self) -> int:
        """Columns of the design matrix, the intercept included."""
        return sum(f.width for f in self.features) + 1

    @property
    def radius2(self) -> int:
        """A public bound on the squared L2 norm of every row of the design matrix."""
        return len(self.features) + 1

    @property
    def names(self) -> list[Any]:
        """The input columns, in order."""
        return [f.name for f in self.features]

    @property
    def undiscovered(self) -> list[Any]:
        """Numeric columns whose bounds must be found privately."""
        return [f.name for f in self.features if f.kind == "numeric" and f.bounds is None]

    @property
    def unselected(self) -> list[Any]:
        """Text columns whose categories must be selected privately."""
        return [f.name for f in self.features if f.kind == "categorical" and f.selected and not f.categories]

    def with_bounds(self, found: Mapping[Any, tuple[float, float]]) -> Design:
        """This design with privately found bounds filled in."""
        return Design(tuple(replace(f, bounds=found[f.name], found=True) if f.name in found else f
                            for f in self.features))

    def with_categories(self, selected: Mapping[Any, pd.Index[Any]]) -> Design:
        """This design with privately selected categories filled in."""
        return Design(tuple(replace(f, categories=tuple(selected[f.name])) if f.name in selected else f
                            for f in self.features))

    def matrix(self, frame: pd.DataFrame) -> NDArray[np.float64]:
        """The design matrix of ``frame`` (rows of the input columns), intercept last."""
        parts = [f.encode(frame[f.name]) for f in self.features]
        parts.append(np.ones((len(frame), 1)))
        return np.hstack(parts)

    def labels(self) -> list[str]:
        """Names of the design columns, without the intercept."""
        return [label for f in self.features for label in f.labels()]

    def unscale(self, weights: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
        """Weights on the design matrix as ``(coef, intercept)`` on the original units (one-hot: 0/1)."""
        coef = np.empty(self.width - 1)
        intercept = float(weights[-1])
        at = 0
        for f in self.features:
            w = weights[at:at + f.width]
            if f.kind == "numeric":
                assert f.bounds is not None
                lo, hi = f.bounds
                coef[at] = w[0] / ((hi - lo) / 2)
                intercept -= float(coef[at]) * (lo + hi) / 2
            else:
                coef[at:at + f.width] = w
            at += f.width
        return coef, intercept


def plan_design(
    frame: pd.DataFrame,
    bounds: Mapping[Any, Any] | None,
    categories: Mapping[Any, Sequence[Any]] | None,
    *,
    estimator: str,
    released: Mapping[Any, pd.Index[Any]] | None = None,
) -> Design:
    """The encoding of every column of ``frame``, from its dtype and the declarations (reads no value).

    ``released`` are categories an earlier query selected privately (e.g.
    ``p[column].dp.value_counts(...)``): public since, so a text column with
    released categories is one-hot encoded over them at no further cost.
    Other text columns get their categories by private partition selection
    when the model is fitted (their own ledger lines).
    """
    released = {} if released is None else released
    bounds = _mapping(bounds, "bounds", estimator)
    categories = _mapping(categories, "categories", estimator)
    unknown = [str(c) for c in [*bounds, *categories] if c not in frame.columns]
    if unknown:
        raise KeyError(f"{estimator}: bounds or categories name columns {unknown} that are not among the features "
                       f"{list(map(str, frame.columns))}")
    if len(frame.columns) == 0:
        raise ValueError(f"{estimator}.fit needs at least one feature column")
    features = []
    for name in frame.columns:
        dtype = frame[name].dtype
        if name in categories:
            declared = categories[name]
            if isinstance(declared, (str, bytes)) or not isinstance(declared, Sequence) or len(declared) == 0:
                raise TypeError(f"categories[{name!r}] must be a non-empty list of values, got {declared!r}")
            if len(set(declared)) != len(declared):
                raise ValueError(f"categories[{name!r}] contains duplicates")
            features.append(Feature(name, "categorical",
                                    categories=tuple(public_value(list(declared), f"categories[{name!r}]"))))
        elif isinstance(dtype, pd.CategoricalDtype):
            if len(dtype.categories) == 0:
                raise ValueError(f"column {name!r} is categorical with no categories: declare them with categories=")
            features.append(Feature(name, "categorical", categories=tuple(dtype.categories)))
        elif pd.api.types.is_bool_dtype(dtype):
            features.append(Feature(name, "boolean"))
        elif name in released and not pd.api.types.is_numeric_dtype(dtype):
            features.append(Feature(name, "categorical", categories=tuple(released[name])))
        elif pd.api.types.is_numeric_dtype(dtype):
            declared_bounds = bounds.get(name)
            features.append(Feature(name, "numeric", None if declared_bounds is None else check_bounds(declared_bounds)))
        elif pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            features.append(Feature(name, "categorical", selected=True))
        else:
            raise TypeError(
                f"{estimator}: column {name!r} has dtype {dtype}, which is neither numeric, boolean, categorical nor "
                f"text; declare its categories (categories={{{name!r}: [...]}}) or convert it"
            )
        if name in bounds and features[-1].kind != "numeric":
            raise ValueError(f"bounds were declared for {name!r}, which is not a numeric column")
    return Design(tuple(features))


def _mapping(value: Any, what: str, estimator: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{estimator}: {what} must be a dict keyed by column name, got {type(value).__name__}")
    return value
