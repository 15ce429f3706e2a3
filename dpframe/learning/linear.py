"""Private linear regression: AdaSSP, noisy sufficient statistics with an adaptive ridge (Wang 2018), or noisy
gradient descent on the squared loss.

Features are encoded on the public design (:mod:`dpframe.learning._design`,
rows of squared norm at most ``R²``) and the label is clipped to its bounds
and scaled to [-1, 1]. Both are rounded to multiples of ``2^-10`` (a fixed
map of each row, which keeps those norms), so ``XᵀX`` and ``Xᵀy`` are exact
integers in units of ``2^-20``. Three releases share the fit's ρ equally
(zCDP composition):

* ``λ_min(XᵀX)``, whose sensitivity is ``R²`` (adding a row adds ``xxᵀ``, of
  spectral norm ``‖x‖² ≤ R²``; Weyl), on a grid of ``R²/256`` with two grid
  steps added for the rounding and floating point;
* the upper triangle of ``XᵀX`` (L2 sensitivity ``‖xxᵀ‖_F = ‖x‖² ≤ R²``);
* ``Xᵀy`` (L2 sensitivity ``‖x‖·|y| ≤ R``),

each ``k`` times that when a privacy unit may contribute ``k`` rows
(``max_contributions``), and each with exact discrete Gaussian noise. Then, as post-processing (Wang 2018,
Alg. 2, in zCDP terms): ``λ̃ = max(0, noisy λ_min − 2.86 σ_λ)`` (a 95% lower
bound), the ridge ``λ = max(0, σ_A √(d ln(2d²/0.05)) − λ̃)`` (a high-probability
bound on the noise matrix's norm beyond what the data's own curvature
absorbs), and ``θ = (noisy XᵀX + λI)⁻¹ noisy Xᵀy``.

``method="gd"`` trains on the same scaled label by :mod:`dpframe.learning._descent`,
the logistic model's noisy clipped gradient descent with the squared loss's
residual ``x·θ − y``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.learning._base import Data, Prepared, PrivateEstimator, prepare, start, zcdp_of
from dpframe.learning._descent import check, full_batch, train
from dpframe.learning._noisy import gaussian_sigma2, noisy
from dpframe.queries.plan import check_bounds

_BITS = 10  # features and labels are rounded to multiples of 2^-10
_EIGEN_STEPS = 256  # grid steps of λ_min per R²
_FAILURE = 0.05  # the failure probability AdaSSP's high-probability bounds are set at
# Gradient descent's defaults (docs/learning.md): with momentum 0.9 a step is stable while rate × λ_max(XᵀX/n)
# < 3.8, and one-hot designs with an intercept reach λ_max near the number of features (Adult: rate 1 diverged).
_STEPS, _LEARNING_RATE = 40, 0.25


class LinearRegression(PrivateEstimator):
    """Least-squares regression trained privately on a protected frame.

    * ``method`` -- ``"adassp"`` (noisy sufficient statistics, the default) or
      ``"gd"`` (noisy clipped gradient descent, as ``LogisticRegression``'s).
    * ``steps``, ``learning_rate``, ``clipping_norm`` -- gradient descent's
      (defaults 40, 0.25 and 1; features and label scaled to [-1, 1]).
    * ``label_bounds`` -- ``(lower, upper)`` of the label (required: it bounds each unit's influence).
    * ``bounds``, ``categories`` -- the public encoding of the features (numeric
      columns without bounds and text columns without categories get them
      privately, a tenth of the budget).

    >>> import numpy as np, pandas as pd, dpframe
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(0, 10, 50_000)})
    >>> df["y"] = 3 * df["x"] + 5 + rng.normal(0, 1, 50_000)
    >>> p = df.dp.protect(epsilon=1.0, delta=1e-6)
    >>> model = LinearRegression(bounds={"x": (0, 10)}, label_bounds=(0, 40))
    >>> model = model.fit(p[["x"]], p["y"], epsilon=1.0, delta=1e-6)
    >>> bool(abs(model.coef_[0] - 3) < 0.1), bool(model.score(df[["x"]], df["y"]) > 0.95)
    (True, True)
    """

    _estimator_type = "regressor"

    def __init__(self, *, method: str = "adassp", steps: int = _STEPS, learning_rate: float = _LEARNING_RATE,
                 clipping_norm: float = 1.0, label_bounds: tuple[float, float] | None = None,
                 bounds: Mapping[Any, Any] | None = None, categories: Mapping[Any, Sequence[Any]] | None = None
                 ) -> None:
        self.method = method
        self.steps = steps
        self.learning_rate = learning_rate
        self.clipping_norm = clipping_norm
        self.label_bounds = label_bounds
        self.bounds = bounds
        self.categories = categories

    def fit(self, X: Any, y: Any, *, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None) -> LinearRegression:
        """Train on protected ``X`` and ``y`` of one protected frame (as :meth:`LogisticRegression.fit`)."""
        name = type(self).__name__
        if self.method not in ("adassp", "gd"):
            raise ValueError(f"method must be 'adassp' (noisy sufficient statistics) or 'gd' (noisy gradient "
                             f"descent), got {self.method!r}")
        steps = check(self.steps, self.learning_rate, self.clipping_norm, self.steps)
        if self.label_bounds is None:
            raise ValueError(f"{name} needs label_bounds=(lower, upper): the label is clipped to them, which "
                             "bounds each unit's influence on the fit")
        lo, hi = check_bounds(self.label_bounds)
        prepared = prepare(name, X, y, self.bounds, self.categories, epsilon, delta, rho)
        if not pd.api.types.is_numeric_dtype(prepared.label.dtype) or pd.api.types.is_bool_dtype(prepared.label.dtype):
            raise TypeError(f"{name} needs a numeric label; {prepared.label.name!r} has dtype {prepared.label.dtype}")

        def encode(label: pd.Series[Any]) -> NDArray[np.float64]:
            values: NDArray[np.float64] = label.to_numpy(dtype=float, na_value=np.nan)
            scaled: NDArray[np.float64] = (np.clip(values, lo, hi) - (lo + hi) / 2) / ((hi - lo) / 2)
            return scaled

        if self.method == "gd":
            schedule = full_batch(prepared.model, self.clipping_norm, prepared.design.width, steps, name)
            data = start(prepared, name, encode, mechanism="noisy gradient descent on the squared loss (discrete "
                         "Gaussian)", detail=f"{schedule.detail}; label scaled to [-1, 1]", rule=schedule.rule)
            theta = train(data, schedule, _residual, steps, float(self.learning_rate), 0.0)
            self.__dict__.pop("ridge_", None)  # AdaSSP's, from an earlier fit of this object
        else:
            data, theta = self._adassp(prepared, encode, name)
        # Back from the label scaled to [-1, 1] to its own units (public bounds).
        weights = theta * (hi - lo) / 2
        weights[-1] += (lo + hi) / 2
        self._fitted(data.design, weights, prepared.target.spent)
        return self

    def _adassp(self, prepared: Prepared, encode: Callable[[pd.Series[Any]], NDArray[np.float64]],
                name: str) -> tuple[Data, NDArray[np.float64]]:
        """AdaSSP's three releases (one charge, then the read) and its ridge solution on the scaled label."""
        width = prepared.design.width
        # A unit's k rows (max_contributions) move XᵀX and λ_min by up to k·R² and Xᵀy by up to k·R.
        contributions = prepared.target.contributions
        radius2 = prepared.design.radius2 * contributions
        rho_total, conversion = zcdp_of(prepared.model, name)
        third = rho_total / 3
        scale = 2 ** (2 * _BITS)
        eigen_sigma2 = gaussian_sigma2(Fraction(_EIGEN_STEPS + 2) ** 2, third)
        gram_sigma2 = gaussian_sigma2(Fraction(radius2 * scale) ** 2, third)
        cross_sigma2 = gaussian_sigma2(Fraction(radius2 * contributions * scale**2), third)
        gram_sigma = math.sqrt(gram_sigma2) / scale
        detail = (f"AdaSSP: λ_min(XᵀX) (σ={math.sqrt(eigen_sigma2) * radius2 / _EIGEN_STEPS:.4g}), the "
                  f"{width * (width + 1) // 2} entries of XᵀX (σ={gram_sigma:.4g}) and the {width} of Xᵀy "
                  f"(σ={math.sqrt(cross_sigma2) / scale:.4g}), rows of squared norm ≤ {prepared.design.radius2}, "
                  f"{contributions} row(s) a unit, label scaled to [-1, 1]; each a third of ρ")
        data = start(prepared, name, encode, mechanism="noisy sufficient statistics (discrete Gaussian)",
                     detail=detail, rule=f"zCDP composition of the three releases{conversion}")
        Xi = np.rint(data.X * 2**_BITS)
        yi = np.rint(data.y * 2**_BITS)
        # Integers below 2^53 in magnitude: the float products and sums are exact.
        gram = (Xi.T @ Xi).astype(np.int64)
        cross = (Xi.T @ yi).astype(np.int64)
        upper = np.triu_indices(width)
        eigen = float(np.linalg.eigvalsh(gram / scale)[0])
        step = radius2 / _EIGEN_STEPS
        noisy_eigen = float(noisy(np.array([round(eigen / step)], dtype=np.int64), eigen_sigma2)[0]) * step
        eigen_sigma = math.sqrt(eigen_sigma2) * step
        floor = max(0.0, noisy_eigen - math.sqrt(2 * math.log(3 / _FAILURE)) * eigen_sigma)
        ridge = max(0.0, gram_sigma * math.sqrt(width * math.log(2 * width**2 / _FAILURE)) - floor)
        released = np.zeros((width, width))
        released[upper] = noisy(gram[upper], gram_sigma2) / scale
        released = released + np.triu(released, 1).T
        target = noisy(cross, cross_sigma2) / scale
        self.ridge_ = ridge
        theta: NDArray[np.float64] = np.linalg.lstsq(released + ridge * np.eye(width), target, rcond=None)[0]
        return data, theta

    def predict(self, X: Any) -> NDArray[np.float64]:
        """Predictions for plain (public) data ``X``."""
        return self._decision(X)

    def score(self, X: Any, y: Any) -> float:
        """R² on plain (public) data."""
        truth = np.asarray(y, dtype=float)
        residual = truth - self.predict(X)
        return float(1 - np.sum(residual**2) / np.sum((truth - truth.mean()) ** 2))


def _residual(scores: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """The squared loss's gradient in the score (halved): x·θ − y."""
    out: NDArray[np.float64] = scores - y
    return out
