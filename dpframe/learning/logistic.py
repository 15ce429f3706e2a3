"""Private logistic regression: noisy clipped gradient descent, or DP-SGD with Poisson subsampling.

``method="gd"`` (Near & Abuah, *Programming Differential Privacy*, ch. 12):
``steps`` full-batch steps, each releasing the sum of the units' clipped
gradients with discrete Gaussian noise (:mod:`dpframe.learning._noisy`); the
steps and one noisy count of the units (to average the sums) compose in zCDP.

``method="sgd"`` (Abadi et al. 2016): each step keeps every unit
independently with probability ``batch_rate`` (exact Bernoulli draws from the
secure source) and releases the noisy sum of the kept units' clipped
gradients; the noise multiplier is the smallest (found by bisection) for
which the steps' Rényi curve -- Zhu & Wang's bound for a Poisson-subsampled
mechanism with the discrete Gaussian's curve -- plus the count's converts
(CKS20 Prop. 12) to within the (ε, δ) given.

Either way the fit is one release: its whole cost is reserved and charged
before the data are read, as one ledger line naming the mechanism, the
steps, the noise, the clipping norm and the composition rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.special import expit

from dpframe.accounting.composition import ORDERS, gaussian_rdp, poisson_subsampled_rdp, rdp_to_approx
from dpframe.learning._base import PrivateEstimator, prepare, start, zcdp_of
from dpframe.learning._descent import COUNT_SHARE, Schedule, check, full_batch, train
from dpframe.learning._noisy import VectorGrid, gaussian_sigma2
from dpframe.noise.mechanism import Privacy, float_below

# Rates are used as exact fractions with at most this denominator (rounded down: less sampling, less privacy loss).
_RATE_DENOMINATOR = 2**20


class LogisticRegression(PrivateEstimator):
    """Binary logistic regression trained privately on a protected frame.

    Parameters (hyperparameters are public: choose them without the private
    data -- docs/learning.md):

    * ``method`` -- ``"gd"`` (noisy full-batch gradient descent, the default)
      or ``"sgd"`` (DP-SGD with Poisson subsampling; (ε, δ) budgets only).
    * ``steps`` -- gradient steps (default 40 for ``"gd"``, 1000 for ``"sgd"``).
    * ``learning_rate`` -- the step size on the averaged gradient, features
      scaled to [-1, 1], with Nesterov momentum 0.9 (default 4 for ``"gd"``,
      0.5 for ``"sgd"``).
    * ``clipping_norm`` -- each unit's gradient is scaled down to this L2 norm.
    * ``batch_rate`` -- DP-SGD's Poisson sampling rate of units.
    * ``l2`` -- ridge penalty on the scaled weights (public post-processing of the noisy gradients).
    * ``bounds``, ``categories`` -- the public encoding of the features; numeric
      columns without bounds get them privately, and text columns without
      categories get them by private partition selection (their own ledger
      lines, a tenth of the fit's budget).
    * ``classes`` -- the two labels, ``[negative, positive]``, when the label's
      dtype (boolean, categorical of two categories) does not make them public.

    >>> import numpy as np, pandas as pd, dpframe
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(-1, 1, 20_000)})
    >>> df["y"] = rng.uniform(size=20_000) < 1 / (1 + np.exp(-4 * df["x"]))
    >>> p = df.dp.protect(epsilon=1.0, delta=1e-6)
    >>> model = LogisticRegression(bounds={"x": (-1, 1)}).fit(p[["x"]], p["y"], epsilon=1.0, delta=1e-6)
    >>> bool(model.coef_[0, 0] > 2), model.classes_.tolist(), model.predict(pd.DataFrame({"x": [-0.9, 0.9]})).tolist()
    (True, [False, True], [False, True])
    >>> p.dp.budget.ledger["query"].tolist()
    ['LogisticRegression']
    """

    _estimator_type = "classifier"

    _classifier = True

    def __init__(self, *, method: str = "gd", steps: int | None = None, learning_rate: float | None = None,
                 clipping_norm: float = 1.0, batch_rate: float = 0.01, l2: float = 1e-4,
                 bounds: Mapping[Any, Any] | None = None, categories: Mapping[Any, Sequence[Any]] | None = None,
                 classes: Sequence[Any] | None = None) -> None:
        self.method = method
        self.steps = steps
        self.learning_rate = learning_rate
        self.clipping_norm = clipping_norm
        self.batch_rate = batch_rate
        self.l2 = l2
        self.bounds = bounds
        self.categories = categories
        self.classes = classes

    def fit(self, X: Any, y: Any, *, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None) -> LogisticRegression:
        """Train on protected ``X`` (features) and ``y`` (labels) of one protected frame, spending the privacy given.

        ``epsilon`` and ``delta`` on an (ε, δ) budget, ``rho`` on a zCDP or
        Rényi one (full-batch only). Everything is checked before anything is
        charged; the cost is charged once, before the data are read.
        """
        name = type(self).__name__
        steps, rate = self._check_parameters()
        prepared = prepare(name, X, y, self.bounds, self.categories, epsilon, delta, rho)
        classes = _classes(prepared.label, self.classes, name)
        schedule = self._schedule(prepared.model, prepared.design.width, steps, rate, name)
        positive = classes[1]

        def encode(label: pd.Series[Any]) -> NDArray[np.float64]:
            # isin, not ==: a missing value of a nullable dtype (pd.NA) compares to NA, which would raise here
            known = label.isin(list(classes)).to_numpy(dtype=bool)
            return np.where(known, label.isin([positive]).to_numpy(dtype=float), np.nan)

        mechanism = ("noisy gradient descent (discrete Gaussian)" if rate == 1
                     else "DP-SGD: Poisson-subsampled discrete Gaussian")
        data = start(prepared, name, encode, mechanism=mechanism, detail=schedule.detail, rule=schedule.rule)
        weights = train(data, schedule, _residual, steps, float(self._learning_rate), float(self.l2))
        self.classes_ = np.array(list(classes), dtype=object if not isinstance(classes[0], (bool, np.bool_)) else bool)
        self._fitted(data.design, weights, prepared.target.spent)
        return self

    @property
    def _learning_rate(self) -> Any:
        return (4.0 if self.method == "gd" else 0.5) if self.learning_rate is None else self.learning_rate

    def _check_parameters(self) -> tuple[int, Fraction]:
        if self.method not in ("gd", "sgd"):
            raise ValueError(f"method must be 'gd' (noisy gradient descent) or 'sgd' (DP-SGD), got {self.method!r}")
        steps = (40 if self.method == "gd" else 1000) if self.steps is None else self.steps
        steps = check(steps, self._learning_rate, self.clipping_norm, self.steps)
        if not (isinstance(self.l2, (int, float)) and math.isfinite(self.l2) and self.l2 >= 0):
            raise ValueError(f"l2 must be a non-negative number, got {self.l2!r}")
        rate = Fraction(1)
        if self.method == "sgd":
            if not (isinstance(self.batch_rate, (int, float)) and 0 < self.batch_rate <= 1):
                raise ValueError(f"batch_rate must lie in (0, 1], got {self.batch_rate!r}")
            rate = Fraction(math.floor(self.batch_rate * _RATE_DENOMINATOR), _RATE_DENOMINATOR)
            if rate == 0:
                raise ValueError(f"batch_rate {self.batch_rate!r} is below 1/{_RATE_DENOMINATOR}")
        return steps, rate

    def _schedule(self, privacy: Privacy, width: int, steps: int, rate: Fraction, name: str) -> Schedule:
        if rate == 1:
            return full_batch(privacy, self.clipping_norm, width, steps, name)
        grid = VectorGrid.choose(float(self.clipping_norm), width)
        if privacy.kind != "approx":
            raise ValueError(f"{name}(method='sgd') accounts its subsampled steps in Rényi DP and converts them to "
                             "(ε, δ): use it on an (epsilon, delta) budget, or method='gd' on a zCDP or Rényi budget")
        epsilon, delta = float_below(privacy.epsilon), float_below(privacy.delta)
        rho, _ = zcdp_of(privacy, name)
        count_rho = rho * COUNT_SHARE
        multiplier = _noise_multiplier(epsilon, delta, float(rate), steps, float(count_rho), name)
        sigma2 = gaussian_sigma2(grid.sensitivity2, Fraction(1, 2) / Fraction(multiplier) ** 2)
        detail = (f"{steps} steps on Poisson samples of units at rate q={float(rate):.4g}; each unit's gradient "
                  f"clipped to L2 norm {self.clipping_norm:g}, rounded to a grid of {grid.step:.3g}; noise "
                  f"multiplier {multiplier:.4g} (σ={math.sqrt(sigma2) * grid.step:.4g} per coordinate of {width}); "
                  f"a noisy unit count (ρ={float(count_rho):.3g})")
        rule = (f"Rényi composition of {steps} Poisson-subsampled discrete Gaussian steps (Zhu & Wang 2019 Thm 6) "
                "and the count, converted to (ε, δ) by CKS20 Prop. 12")
        return Schedule(grid, sigma2, count_rho, rate, detail, rule)

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """The log-odds of the positive class for each row of plain data ``X``."""
        return self._decision(X)

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Class probabilities, columns in the order of ``classes_``."""
        p = expit(self._decision(X))
        return np.column_stack([1 - p, p])

    def predict(self, X: Any) -> NDArray[Any]:
        """The more probable class of each row of plain data ``X``."""
        positive = self._decision(X) > 0
        chosen: NDArray[Any] = self.classes_[positive.astype(int)]
        return chosen

    def score(self, X: Any, y: Any) -> float:
        """Accuracy on plain (public) data."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


def _classes(label: pd.Series[Any], declared: Sequence[Any] | None, name: str) -> tuple[Any, Any]:
    """The two public labels ``(negative, positive)``: declared, or from a boolean or two-category dtype."""
    if declared is not None:
        if isinstance(declared, (str, bytes)) or len(declared) != 2 or declared[0] == declared[1]:
            raise ValueError(f"classes must be two different labels [negative, positive], got {declared!r}")
        return declared[0], declared[1]
    dtype = label.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return False, True
    if isinstance(dtype, pd.CategoricalDtype) and len(dtype.categories) == 2:
        return dtype.categories[0], dtype.categories[1]
    raise TypeError(
        f"{name} needs the two labels of {label.name!r} to be public: declare classes=[negative, positive], or give "
        f"the label a boolean dtype or a categorical dtype of two categories (it has dtype {dtype})"
    )


def _noise_multiplier(epsilon: float, delta: float, rate: float, steps: int, count_rho: float, name: str) -> float:
    """The smallest noise multiplier (to 0.1%) whose steps and count fit (ε, δ) by the Rényi accountant."""

    def spent(z: float) -> float:
        # Zhu & Wang's bound for any mechanism with the discrete Gaussian's curve: MTZ19's Gaussian formula is
        # proven in its larger direction for the continuous Gaussian only.
        curve = [steps * poisson_subsampled_rdp(lambda order: gaussian_rdp(z, order), rate, a) + a * count_rho
                 for a in ORDERS]
        return rdp_to_approx(curve, ORDERS, delta)[0]

    lo, hi = 0.3, 1e4
    if spent(hi) > epsilon:
        raise ValueError(f"{name}(method='sgd') cannot fit {steps} steps at rate {rate:g} into ε={epsilon:.3g}, "
                         f"δ={delta:.3g}: use fewer steps, a smaller batch_rate, or more privacy")
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if spent(mid) <= epsilon else (mid, hi)
    return hi


def _residual(scores: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """The logistic loss's gradient in the score: σ(x·w) − y."""
    out: NDArray[np.float64] = expit(scores) - y
    return out
