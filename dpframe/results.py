"""Released answers that say how accurate they are.

Scalars are ``float``/``int`` subclasses, so they drop into any arithmetic,
and expose ``.std``, ``.ci``, ``.mechanism`` and ``.cost``. Series and frames
carry a :class:`Release` in ``.attrs["dp"]`` with the same facts, per cell
where they differ. Intervals describe the added noise: they cover the exact
(non-private) answer on this data, clipped to the declared bounds, with the
stated probability. They are post-processing and cost nothing.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any, Union

import pandas as pd

from dpframe.accounting.costs import Cost

Cells = Union[float, "pd.Series[float]", pd.DataFrame]


@dataclass(frozen=True, eq=False)
class Release:
    """How a released value was made and how accurate it is.

    >>> import pandas as pd, dpframe
    >>> p = pd.DataFrame({"x": [1.0, 2.0] * 50}).dp.protect(epsilon=1.0)
    >>> h = p["x"].dp.histogram(bins=[0, 1.5, 3], epsilon=0.5)
    >>> h.attrs["dp"].query, list(h.attrs["dp"].upper - h.attrs["dp"].lower)
    ('histogram', [12, 12])
    """

    query: str
    columns: tuple[str, ...]
    mechanism: str
    cost: Cost
    std: Cells
    lower: Cells
    upper: Cells
    level: float = 0.95
    bounds: tuple[float, float] | None = None
    note: str = ""

    def __repr__(self) -> str:
        # Selections (mode, top_k, quantiles) release a choice, with no interval around it.
        selection = isinstance(self.std, float) and math.isnan(self.std)
        accuracy = "no intervals (a selection)" if selection else f"{self.level:.0%} intervals"
        return (
            f"Release({self.query} of {', '.join(self.columns) or 'rows'}: {self.mechanism}, "
            f"cost {self.cost.describe('zcdp' if self.cost.rho else 'approx')}, {accuracy})"
        )


class _Released:
    """Accuracy accessors shared by released scalars."""

    release: Release

    @property
    def std(self) -> float:
        """Standard deviation of the noise in this answer."""
        return float(self.release.std)  # type: ignore[arg-type]

    @property
    def ci(self) -> tuple[float, float]:
        """The 95% interval around this answer."""
        return (float(self.release.lower), float(self.release.upper))  # type: ignore[arg-type]

    @property
    def mechanism(self) -> str:
        """The mechanism that produced this answer."""
        return self.release.mechanism

    @property
    def cost(self) -> Cost:
        """What this answer cost the budget."""
        return self.release.cost

    def _describe(self, value: float) -> str:
        lo, hi = self.ci
        cost = self.cost.describe("zcdp" if self.cost.rho else "approx")
        shown = justified(value, self.std)
        if lo != lo or hi != hi:  # NaN: no interval (e.g. a quantile; see release.note)
            return f"{shown} ({self.mechanism}, {cost}; no interval)"
        return f"{shown} (95% CI {justified(lo, self.std)} to {justified(hi, self.std)}; {self.mechanism}, {cost})"


def justified(value: float, std: float) -> str:
    """``value`` with the digits its noise justifies: down to the second significant digit of ``std``.

    Integers stay whole; without a finite positive ``std`` the value is shown in full.

    >>> justified(0.4946313830662, 0.0124), justified(41.18734, 0.0516), justified(123456.7, 350.0)
    ('0.495', '41.187', '123460')
    >>> justified(17, 4.2), justified(2.5, float("nan"))
    ('17', '2.5')
    """
    if isinstance(value, int) or not (math.isfinite(std) and std > 0 and math.isfinite(value)):
        return repr(value)
    decimals = 1 - math.floor(math.log10(std))
    return f"{round(value, decimals):.{max(decimals, 0)}f}"


class DPFloat(_Released, float):
    """A released real number.

    >>> import pandas as pd, dpframe
    >>> from dpframe.testing import seeded_noise
    >>> p = pd.DataFrame({"age": [30, 40, 50] * 100}).dp.protect(epsilon=1.0)
    >>> with seeded_noise(0):
    ...     m = p["age"].dp.mean(bounds=(0, 100), epsilon=0.5)
    >>> 35 < m < 45 and m.ci[0] < m < m.ci[1]
    True
    """

    release: Release

    def __new__(cls, value: float, release: Release) -> DPFloat:
        obj = float.__new__(cls, value)
        obj.release = release
        return obj

    def __repr__(self) -> str:
        return self._describe(float(self))

    # The plain number, so that print(), f-strings and files hold numbers, not the description.
    __str__ = float.__repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (DPFloat, (float(self), self.release))


class DPInt(_Released, int):
    """A released integer (a noisy count).

    >>> import pandas as pd, dpframe
    >>> n = pd.DataFrame({"x": range(500)}).dp.protect(epsilon=1.0).dp.count(epsilon=0.5)
    >>> isinstance(n, int), n.ci[0] <= n <= n.ci[1], n.mechanism
    (True, True, 'discrete Laplace')
    """

    release: Release

    def __new__(cls, value: int, release: Release) -> DPInt:
        obj = int.__new__(cls, value)
        obj.release = release
        return obj

    def __repr__(self) -> str:
        return self._describe(int(self))

    __str__ = int.__repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (DPInt, (int(self), self.release))


def with_release(obj: pd.Series | pd.DataFrame, release: Release) -> Any:
    """Attach ``release`` as ``obj.attrs["dp"]`` (results never carry a budget)."""
    obj.attrs = {"dp": release}
    return obj
