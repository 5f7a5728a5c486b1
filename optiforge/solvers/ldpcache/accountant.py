"""Privacy accountant: a filter on a total budget, and basic / advanced composition odometers.

Every release (a decision epoch, a perturbed query) is charged before it runs, with an
epsilon fixed before it runs (it may depend on earlier *outputs*: that is adaptive
composition). ``can_afford`` is the privacy filter: the caller stops releasing once the
next charge would exceed ``budget``. Under basic composition a filter whose charges never
sum past ``budget`` is ``budget``-LDP even with adaptively chosen epsilons (Rogers, Roth,
Ullman & Vadhan 2016, "Privacy odometers and filters"); that is the guarantee LDPCache
states. ``advanced`` reports the Dwork-Rothblum-Vadhan bound for the charged sequence,
``sqrt(2 ln(1/delta) sum eps_i^2) + sum eps_i (e^eps_i - 1)`` (an ``(eps, delta)``
odometer reading; for adaptively chosen epsilons a filter with slightly larger constants
holds, Rogers et al. Thm 5.1); it only beats basic composition when the eps_i are small.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from optiforge.errors import BudgetExceeded, ConfigError


@dataclass
class PrivacyAccountant:
    """Charges of one user's session; ``budget`` = math.inf for an odometer without a filter."""

    budget: float = math.inf
    charges: list[tuple[str, float]] = field(default_factory=list)

    def can_afford(self, eps: float) -> bool:
        """Whether charging ``eps`` now keeps the basic-composition total within the budget."""
        return self.basic() + eps <= self.budget * (1 + 1e-12)

    def charge(self, kind: str, eps: float) -> None:
        """Record one release of level ``eps``; raises BudgetExceeded past the filter."""
        if eps < 0:
            raise ConfigError(f"epsilon must be >= 0, got {eps}")
        if not self.can_afford(eps):
            raise BudgetExceeded(
                f"privacy budget {self.budget:.4g} exhausted (spent {self.basic():.4g}, "
                f"asked {eps:.4g} for {kind})"
            )
        self.charges.append((kind, float(eps)))

    def basic(self) -> float:
        """Sum of the charged epsilons (pure LDP of the whole session)."""
        return math.fsum(e for _, e in self.charges)

    def advanced(self, delta: float = 1e-5) -> float:
        """DRV advanced composition of the charges at ``delta`` (``(eps, delta)``-LDP)."""
        if not 0 < delta < 1:
            raise ConfigError("delta must lie in (0, 1)")
        eps = [e for _, e in self.charges]
        if not eps:
            return 0.0
        sq = math.fsum(e * e for e in eps)
        return math.sqrt(2 * math.log(1 / delta) * sq) + math.fsum(e * math.expm1(e) for e in eps)

    def best(self, delta: float = 1e-5) -> float:
        """``min(basic, advanced)``: the tighter reading (``(eps, delta)`` when advanced)."""
        return min(self.basic(), self.advanced(delta))

    def by_kind(self) -> dict[str, float]:
        """Total epsilon per release kind."""
        out: dict[str, float] = {}
        for k, e in self.charges:
            out[k] = out.get(k, 0.0) + e
        return out
