"""How ``synthesize`` spends its budget: the shares of the domains' measurements and of the model.

Three currencies, one per kind of budget:

* **zCDP budgets** (``rho=``; Rényi budgets, which compose rho): every part is a Gaussian measurement
  charged its own rho, and the parts compose (Bun & Steinke 2016, Lemma 2.3).
* **(epsilon, delta) budgets with delta > 0**: one zCDP plan for the whole release (:class:`ZcdpPlan`). The
  domains' histograms and the model are Gaussian parts of one rho, whose composition converts to
  (epsilon, delta) tightly (Canonne, Kamath & Steinke 2020, Cor. 13). Selecting categories with a Gaussian
  threshold is delta_i-approximately rho_i-zCDP (Bun & Steinke 2016, Def. 8.1: outside the event, of
  probability at most delta_i, that a value held only by the changed unit clears the threshold, the release
  is the Gaussian mechanism on common values); approximate zCDP composes (the deltas add), and converts to
  (epsilon' + ln(1/(1 - delta_sel)), delta' + delta_sel): the plan converts at epsilon minus ``2 delta_sel``
  (>= ln(1/(1 - delta_sel)) for delta_sel <= 1/2) and delta minus ``delta_sel``. The sparse vector that finds a
  datetime's range is pure epsilon, composed sequentially beside the plan. Each ledger line is charged its
  **share** of the plan's (epsilon, delta), pro rata of its rho (plus its selection's delta and margin): the
  lines add up to the budget's (epsilon, delta), which the whole composition guarantees. One line alone is a
  part of that plan, not a guarantee of its own; the ledger's rule says so. The composition is adaptive: how
  the domains' share splits, and what the model gets, depend on earlier releases (a noisy row count, what the
  domains left unspent), and the sparse vector runs between Gaussian steps. zCDP composes adaptively (Bun &
  Steinke 2016, Lemma 2.3), and with a total fixed in advance (rho, the sparse vectors' epsilon and the
  selections' delta never exceed theirs) a Rényi filter covers the interleaving (Feldman & Zrnic 2021).

  Why: splitting (epsilon, delta) sequentially between ten columns' measurements and the model costs far more.
  At epsilon = 1, delta = 1e-6 the fifth of epsilon that the domains had (pure epsilon, Laplace) was worth more
  rho than the whole budget converts to, and each of eighteen columns' range histograms had noise of scale
  180; as a fifth of the plan's rho, the Gaussian's standard deviation is 61 (issue 33).
* **Pure (epsilon, 0) budgets**: Laplace measurements, sequential composition.

>>> from fractions import Fraction
>>> plan = ZcdpPlan.of(Fraction(1), Fraction(1, 10**6))
>>> round(float(plan.rho), 4)
0.0244
>>> share = Share(rho=plan.rho / 10, epsilon=Fraction(0), delta=Fraction(0), plan=plan)
>>> charged = share.charged()
>>> float(charged.epsilon), float(charged.delta)
(0.1, 1e-07)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from dpframe.accounting.costs import Cost
from dpframe.noise.mechanism import NoiseSpec, Privacy, laplace_epsilon, largest_rho


@dataclass(frozen=True)
class ZcdpPlan:
    """rho-zCDP parts that together convert to (``epsilon``, ``delta``): each part's line is its share of them."""

    epsilon: Fraction
    delta: Fraction
    rho: Fraction

    @classmethod
    def of(cls, epsilon: Fraction, delta: Fraction) -> ZcdpPlan:
        """The largest rho (rounded down) whose tight conversion gives at most (``epsilon``, ``delta``)."""
        return cls(epsilon, delta, largest_rho(epsilon, delta, "synthesize"))

    def share_of(self, rho: Fraction) -> tuple[Fraction, Fraction]:
        """The (epsilon, delta) a part of ``rho`` is charged: its pro-rata share."""
        return self.epsilon * rho / self.rho, self.delta * rho / self.rho


@dataclass(frozen=True)
class Share:
    """What one measurement (or a column's, or the domains' together) may spend; see the module docstring.

    ``rho`` > 0: Gaussian noise at that rho; otherwise Laplace at ``epsilon`` (pure budgets). ``delta`` is
    the selection's delta (spent only by a selection, which takes all of it). ``plan`` attributes rho to
    (epsilon, delta) on an (epsilon, delta) budget. ``svt_epsilon`` is the pure epsilon of a datetime's
    range (the sparse vector) on that plan.
    """

    rho: Fraction
    epsilon: Fraction
    delta: Fraction
    plan: ZcdpPlan | None = None
    svt_epsilon: Fraction = Fraction(0)

    def part(self, weight: Fraction, *, selection: bool = False) -> Share:
        """``weight`` of the rho (or epsilon); the selection's delta if ``selection``; the same sparse vector."""
        return replace(self, rho=self.rho * weight, epsilon=self.epsilon * weight,
                       delta=self.delta if selection else Fraction(0))

    def noise(self, sensitivity: int) -> NoiseSpec:
        """Discrete Gaussian with variance sensitivity**2 / (2 rho), or discrete Laplace of scale sensitivity / epsilon."""
        if self.rho > 0:
            return Privacy("zcdp", "gaussian", Fraction(0), Fraction(0), self.rho).noise(sensitivity)
        return Privacy("approx", "laplace", self.epsilon, Fraction(0), Fraction(0)).noise(sensitivity)

    def charged(self) -> Privacy:
        """What the ledger line of this measurement records."""
        if self.plan is not None:
            epsilon, delta = self.plan.share_of(self.rho)
            # A selection also carries its delta, and the margin 2 delta the plan's conversion left out.
            return Privacy("approx", "gaussian", epsilon + 2 * self.delta, delta + self.delta, Fraction(0))
        if self.rho > 0:
            return Privacy("zcdp", "gaussian", Fraction(0), Fraction(0), self.rho)
        return Privacy("approx", "laplace", self.epsilon, Fraction(0), Fraction(0))

    def most(self) -> Cost:
        """The most this share may spend: its line(s), and the sparse vector's epsilon on a plan."""
        return self.charged().cost + (Cost(epsilon=self.svt_epsilon) if self.plan is not None else Cost())

    def spent(self) -> tuple[Cost, Fraction]:
        """(the line's cost, the plan's rho it uses) once measured."""
        return self.charged().cost, self.rho

    def sparse_vector(self) -> Privacy:
        """The pure-epsilon privacy of a datetime's range (charged rho = eps^2/2 on a zCDP budget)."""
        if self.plan is not None:
            return Privacy("approx", "laplace", self.svt_epsilon, Fraction(0), Fraction(0))
        if self.rho > 0:
            return Privacy("zcdp", "laplace", laplace_epsilon(self.rho), Fraction(0), self.rho)
        return Privacy("approx", "laplace", self.epsilon, Fraction(0), Fraction(0))

    def sparse_vector_spent(self) -> tuple[Cost, Fraction]:
        """(the sparse vector's cost, the plan's rho it uses: none on an (epsilon, delta) budget)."""
        return self.sparse_vector().cost, Fraction(0) if self.plan is not None else self.rho

    def rule(self, base: str) -> str:
        """The ledger's composition rule for a line of this share."""
        if self.plan is None:
            return base
        return (f"{base}; Gaussian, rho={float(self.rho):.4g}, a part of synthesize's zCDP plan "
                f"(rho={float(self.plan.rho):.4g} in all, converted to (ε, δ) by CKS20 Cor. 13): charged its "
                "pro-rata share of (ε, δ), not a guarantee of its own")
