"""Composing ex-post private mechanisms under an ex-ante budget.

`ExPostFilter` is paper 004 Alg. 4: before each mechanism runs, the realised costs so far plus
the mechanism's *largest possible* ex-post cost must fit in the budget; afterwards only the
realised cost is charged. Lemma 7's ex-post RDP -> ex-post (eps, delta) conversion is
`conversions.rdp_to_dp`.

What the filter's total guarantees depends on what the costs are; it holds exactly when:
- the costs are ex-post pure-DP epsilons (every output o of mechanism i has privacy loss at most
  eps_i(o)): the run is budget-DP (Rogers et al. 2016; Lebensold et al. 2024; paper 004 Alg. 4);
- the costs are ex-post RDP at one fixed order alpha: the run is (alpha, budget) ex-post RDP
  (paper 004 Thm 16), converted by Lemma 7;
- the costs are zCDP rhos chosen before each mechanism runs (fully adaptive zCDP composition),
  or rho = t_stop/2 of a Brownian path stopped on its own releases (its increments are Gaussian
  mechanisms whose costs are known before each runs: brownian.zcdp_rho_of_stop);
- the costs are approximate-DP epsilons only in two cases: each (eps_i, delta_i) is fixed before
  mechanism i runs (Rogers et al.'s basic-composition filter), or each mechanism bounds its own
  privacy loss random variable by its realised eps_i(o) except with probability delta_i, as
  Brownian noise reduction stopped on a linear boundary does (Whitehouse et al. 2022); then the run
  is (budget, sum of delta_i)-DP.
A realised epsilon that is only some ex-ante (eps, delta) guarantee of a mechanism whose epsilon
was picked after seeing its output is none of these, and the filter's total means nothing for it.
"""
from __future__ import annotations

from .. import UserError


class ExPostFilter:
    """Alg. 4: admit a mechanism only if spent + its worst-case ex-post cost <= budget."""

    def __init__(self, budget: float):
        if not budget > 0:
            raise UserError(f"The filter's budget must be > 0, got {budget}.")
        self.budget = float(budget)
        self.spent = 0.0
        self.charges: list[tuple[float, float]] = []   # (realised, worst case) of every mechanism admitted

    @property
    def remaining(self) -> float:
        return self.budget - self.spent

    def admits(self, worst_case_cost: float) -> bool:
        # A relative tolerance of 1e-12 so that budgets which fit exactly are not refused by rounding.
        return self.spent + worst_case_cost <= self.budget * (1 + 1e-12)

    def charge(self, realised_cost: float, worst_case_cost: float) -> None:
        """Record a mechanism that was admitted with `worst_case_cost` and released at `realised_cost`."""
        if realised_cost > worst_case_cost * (1 + 1e-12) or not self.admits(worst_case_cost):
            raise UserError(f"A mechanism with worst-case cost {worst_case_cost} (realised {realised_cost}) does not "
                            f"fit the remaining budget {self.remaining}: check admits() before running it.")
        self.spent += realised_cost
        self.charges.append((float(realised_cost), float(worst_case_cost)))
