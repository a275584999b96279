"""Reference steppers for models without constraints (minimal coordinates, m = 0): Newmark with
any scheme (optionally HHT-α) and central differences (Newmark γ = ½, β = 0; Eqs. 21–22 of the
paper for constant M and f independent of ẋ).

Newton on ẍ(t + h): with x = x̂ + βh²ẍ and ẋ = ẋ̂ + γhẍ (x̂, ẋ̂ the Newmark predictors),
    r(ẍ) = M ẍ − (1 + α_H) f(t+h) + α_H f(t),    J = M + (1 + α_H)(γh C + βh² K)
(K = ∂(Mẍ − f)/∂x, C = −∂f/∂ẋ; for α_H ≠ 0 the (1 + α_H) factor on ∂(Mẍ)/∂x is an
approximation of the Jacobian only, the converged answer is exact).
"""
from __future__ import annotations

import math

import numpy as np

from .base import Stepper, StepFailure
from .outcome import Outcome, fail_code
from .linalg import omega_from, solve_small

__all__ = ["NewmarkStepper"]


class NewmarkStepper(Stepper):
    """Newmark (or central differences, β = 0) on an unconstrained model."""

    method = "newmark"

    def __init__(self, kernels, scheme, h, *, rank_tol=None, factorization=None, **kw):
        super().__init__(kernels, scheme, h, **kw)
        if self.m:
            raise ValueError(f"the minimal-coordinate steppers need a model without constraints; "
                             f"{kernels.name!r} has m = {self.m} (use method='nullspace' or 'index3')")
        n = self.n
        self._r = np.zeros(n)
        self._J = np.zeros((n, n))
        self._d = np.zeros(n)
        self._w = np.zeros(n)
        self._Wnn = np.zeros((n, n))
        self._f_n = np.zeros(n)          # f(t_n) for HHT
        self._lam0 = np.zeros(0)

    def start(self, t, x, xd, xdd, lam):
        if self.scheme.is_hht:
            _, f, _, _ = self.kernels.dynamics(t, x, xd, xdd, self._lam0)
            self._f_n[:] = f

    def restart(self, t, x, xd, xdd, lam) -> None:
        """HHT's f(t) with the new inputs (a sampled controller)."""
        self.start(t, x, xd, xdd, lam)

    def step(self, t, h, state, *, controlled: bool = False):
        """One step of h from ``state`` = (x, ẋ, ẍ, λ) at t: its outcome (base.Stepper.step;
        the same step whether ``controlled`` or not)."""
        floor0 = self.floor_steps
        return self._accepted(t, h, self._newton(t, h, *state), floor0)

    def _newton(self, t, h, x, xd, xdd, lam) -> int:
        """Newton from the predictor to the accepted state at t + h; its iterations."""
        kern = self.kernels
        gam, bet, alH = self.scheme.gamma, self.scheme.beta, self.scheme.alpha
        t1 = t + h
        self._predict(x, xd, xdd, lam, h)
        r, J, d = self._r, self._J, self._d
        upd = math.inf
        for it in range(1, self.max_iter + 1):
            M, f, K, C = kern.dynamics(t1, self.x, self.xd, self.xdd, self._lam0)
            np.dot(M, self.xdd, out=r)
            if alH:
                np.multiply(f, 1.0 + alH, out=self._w)
                r -= self._w
                np.multiply(self._f_n, alH, out=self._w)
                r += self._w                                 # HHT-α weighted equilibrium
            else:
                r -= f                                       # M ẍ − f
            np.multiply(C, gam * h, out=J)
            np.multiply(K, bet * h * h, out=self._Wnn)
            J += self._Wnn
            if alH:
                J *= 1.0 + alH
            J += M                                           # M + γh C + βh² K
            try:
                solve_small(J, r, d)
            except np.linalg.LinAlgError:
                raise StepFailure(f"singular Newmark matrix M + γhC + βh²K at t = {t1:.9g}, "
                                  f"iteration {it}", iteration=it, outcome=Outcome(
                                      fail_code("SINGULAR_REDUCED"), t1, h, it, k=self.n)
                                  ) from None
            self._save_old()
            self.xdd -= d
            np.multiply(d, gam * h, out=self._w)
            self.xd -= self._w                               # Newmark velocity
            np.multiply(d, bet * h * h, out=self._w)
            self.x -= self._w                                # Newmark position
            upd = self._update_norm()
            if not math.isfinite(upd):
                raise StepFailure(f"non-finite Newton update at t = {t1:.9g}, iteration {it}",
                                  iteration=it, nonfinite=True, outcome=Outcome(
                                      fail_code("NONFINITE_UPDATE"), t1, h, it))
            ok = self._converged(upd)
            if not ok and self._may_be_at_floor(upd):
                self._floor(self.x, self.xd, self.xdd, 0.0, 0.0)    # no constraints: κ = 1
                ok = self._at_floor(t1)
            if ok:
                if alH:
                    # f(t+h) at the accepted state from the equilibrium just solved:
                    # M ẍ − (1 + α_H) f₁ + α_H f₀ = 0
                    self._f_n *= alH
                    np.dot(M, self.xdd, out=r)
                    self._f_n += r
                    self._f_n /= 1.0 + alH
                if self.estimate:
                    # ω_max at the accepted state (M, K above are those of the previous iterate)
                    M, _, K, _ = kern.dynamics(t1, self.x, self.xd, self.xdd, self._lam0)
                    self.omega_max = omega_from(M, K)
                self.res[:] = 0.0
                return it
        raise self._not_converged(t1, self.max_iter, upd)
