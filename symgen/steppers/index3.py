"""The classical approach (paper Sec. 2, Fig. 1; Eqs. 6, 7, 10, 28–29): Newmark on x with Lagrange
multipliers and the position constraints, Newton on (x(t + h), λ); optional HHT-α
(Negrut, Rampalli, Ottarsson, Sajdak 2007: HHT-I3).

Unknowns ẍ(t+h) and λ(t+h), with x = x̂ + βh²ẍ, ẋ = ẋ̂ + γhẍ (x̂, ẋ̂ the Newmark predictors):

    r₁ = M ẍ − (1 + α_H)(f + Hᵀλ) + α_H (f + Hᵀλ)(t)      (equilibrium, Eq. 3; α_H = 0: Newmark)
    r₂ = q(x) / (βh²)                                       (position constraints, Eq. 2 / 10)

    [ M + (1+α_H)(γh C + βh² K)   −(1+α_H) Hᵀ ] [Δẍ]     [r₁]
    [ H                            0          ] [Δλ] = − [r₂]                     (Eq. 29)

K = ∂(Mẍ − f − Hᵀλ)/∂x includes −∂(Hᵀλ)/∂x.  Only q = 0 is enforced; ‖q̇‖ and ‖q̈‖ are
recorded as they come.  Redundant constraints (rank H < m, same rank tolerance as the nullspace
stepper) make the bordered matrix singular; the rank is decided at the start of every step (from
the factorization of H at the predictor, which also gives the round-off floor of the convergence
test, see ``base``) and, while H is rank-deficient, every Newton step is a minimum-norm
least-squares solve (λ minimum norm).
"""
from __future__ import annotations

import math

import numpy as np

from ..settings import resolve_factorization
from .base import Stepper, StepFailure, norm2
from .outcome import Outcome, fail_code
from .linalg import DEFAULT_RANK_TOL, Linearization, solve_small

__all__ = ["Index3Stepper"]


class Index3Stepper(Stepper):
    """Classical index-3 Newmark / HHT-α stepper on (x, λ)."""

    method = "index3"

    def __init__(self, kernels, scheme, h, *, rank_tol: float | None = None,
                 factorization: str = "auto", **kw):
        super().__init__(kernels, scheme, h, **kw)
        if scheme.beta == 0.0:
            raise ValueError("the index-3 stepper needs beta > 0 (with beta = 0 the position "
                             "constraints do not involve the new accelerations)")
        n, m = self.n, self.m
        self._A = np.zeros((n + m, n + m))
        self._b = np.zeros(n + m)
        self._d = np.zeros(n + m)
        self._g_n = np.zeros(n)            # (f + Hᵀλ)(t) for HHT
        self._w = np.zeros(n)
        self._Wnn = np.zeros((n, n))
        # the per-step stability estimate uses the null-space reduction at the accepted state
        self.lin = Linearization(n, m, DEFAULT_RANK_TOL if rank_tol is None else rank_tol,
                                 resolve_factorization(kernels, "index3", factorization))
        self.redundant = False
        self.redundant_steps = 0
        self.min_rank = m
        self.max_rank = 0

    def _decide_rank(self, H) -> None:
        """Rank of H at the current state: redundant (rank < m) rows make the bordered matrix
        singular, so the Newton steps of this step become least-squares solves."""
        try:
            self.lin.factor(H)
        except np.linalg.LinAlgError:
            self.redundant = True
            return
        self.redundant = self.lin.rank < self.m
        self.min_rank = min(self.min_rank, self.lin.rank)
        self.max_rank = max(self.max_rank, self.lin.rank)

    def start(self, t, x, xd, xdd, lam):
        self.redundant = False
        self.redundant_steps = 0          # steps whose H was rank-deficient at the predictor
        if self.m:
            _, H, *_ = self.kernels.constraints(t, x, xd, xdd)
            self._decide_rank(H)
        if self.scheme.is_hht:
            M, f, _, _ = self.kernels.dynamics(t, x, xd, xdd, lam)
            _, H, *_ = self.kernels.constraints(t, x, xd, xdd)
            self._g_n[:] = f
            if self.m:
                self._g_n += H.T @ lam

    def restart(self, t, x, xd, xdd, lam) -> None:
        """HHT-α's (f + Hᵀλ)(t) with the new inputs (the rank decision stays)."""
        if self.scheme.is_hht:
            M, f, _, _ = self.kernels.dynamics(t, x, xd, xdd, lam)
            _, H, *_ = self.kernels.constraints(t, x, xd, xdd)
            self._g_n[:] = f + (H.T @ lam if self.m else 0.0)

    def checkpoint(self):
        """HHT-α carries (f + Hᵀλ) of the last accepted state into the next step."""
        return self._g_n.copy()

    def rollback(self, saved) -> None:
        self._g_n[:] = saved

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
        n, m = self.n, self.m
        A, b = self._A, self._b
        self._predict(x, xd, xdd, lam, h)
        upd = math.inf
        for it in range(self.max_iter + 1):
            q, H, q_dot, H_dot, q_ddot, H_ddot = kern.constraints(t1, self.x, self.xd, self.xdd)
            if it == 0 and m:
                self._decide_rank(H)                                 # rank at this step's predictor
                self.redundant_steps += self.redundant
                s = self.lin.s[:self.lin.rank]
                s_max, s_min = (float(s[0]), float(s[-1])) if s.size else (0.0, 0.0)
            rq = norm2(q) if m else 0.0
            if not (math.isfinite(rq) and math.isfinite(upd if it else 0.0)):
                raise StepFailure(
                    f"non-finite state or constraint residual at t = {t1:.9g}, Newton iteration {it}",
                    iteration=it, nonfinite=True,
                    outcome=Outcome(fail_code("I3_NONFINITE"), t1, h, it))
            ok = it > 0 and rq <= self.constraint_tol and self._converged(upd)
            if (not ok and it > 0 and rq <= self.constraint_tol
                    and (self._may_be_at_floor(upd) or it == self.max_iter)):
                # κ of H at the predictor, Ḣ and Ḧ at the iterate (base: the round-off floor)
                if m:
                    self._floor(self.x, self.xd, self.xdd, s_max, s_min, norm2(H_dot.ravel()),
                                norm2(H_ddot.ravel()))
                else:
                    self._floor(self.x, self.xd, self.xdd, 0.0, 0.0)
                ok = self._at_floor(t1)
            if ok:
                if m:
                    self.res[0] = float(np.linalg.norm(q))
                    self.res[1] = float(np.linalg.norm(q_dot))
                    self.res[2] = float(np.linalg.norm(q_ddot))
                if alH:
                    # (f + Hᵀλ)(t+h) from the equilibrium just solved:
                    # M ẍ − (1+α_H) g₁ + α_H g₀ = 0
                    self._g_n *= alH
                    self._g_n += M @ self.xdd
                    self._g_n /= 1.0 + alH
                if self.estimate:
                    self.omega_max = self._estimate(t1, q, q_dot, q_ddot, H, H_dot, H_ddot)
                return it
            if it == self.max_iter:
                lam_max = float(np.max(np.abs(self.lam))) if m else 0.0
                raise self._not_converged(
                    t1, it, upd, f"; |q| {rq:.3e} (tolerance {self.constraint_tol:.1e}); "
                    f"max|lambda| {lam_max:.3e}", residual=rq)
            M, f, K, C = kern.dynamics(t1, self.x, self.xd, self.xdd, self.lam)
            J = A[:n, :n]
            np.multiply(C, gam * h, out=J)
            np.multiply(K, bet * h * h, out=self._Wnn)
            J += self._Wnn
            if alH:
                J *= 1.0 + alH
            J += M                                                   # M + γhC + βh²K  (Eq. 29)
            r1 = b[:n]
            np.dot(M, self.xdd, out=r1)
            if m:
                np.multiply(H.T, -(1.0 + alH), out=A[:n, n:])        # −Gᵀ
                A[n:, :n] = H                                        # H_L  (Eq. 10)
                np.dot(H.T, self.lam, out=self._w)
                self._w += f
            else:
                self._w[:] = f
            if alH:
                self._w *= 1.0 + alH
                r1 -= self._w                                        # M ẍ − (1+α)(f + Gᵀλ)
                np.multiply(self._g_n, alH, out=self._w)
                r1 += self._w                                        #   + α (f + Gᵀλ)(t)
            else:
                r1 -= self._w                                        # M ẍ − (f + Gᵀλ)
            if m:
                np.multiply(q, 1.0 / (bet * h * h), out=b[n:])       # q / (βh²)
            np.negative(b, out=b)
            d = self._d
            if self.redundant:
                d[:] = np.linalg.lstsq(A, b, rcond=None)[0]          # redundant constraints
            else:
                try:
                    solve_small(A, b, d)                             # Eq. 29 (bordered matrix)
                except np.linalg.LinAlgError:
                    d[:] = np.linalg.lstsq(A, b, rcond=None)[0]
            self._save_old()
            dxdd = d[:n]
            self.xdd += dxdd
            np.multiply(dxdd, gam * h, out=self._w)
            self.xd += self._w                                       # Newmark velocity
            np.multiply(dxdd, bet * h * h, out=self._w)
            self.x += self._w                                        # Newmark position
            if m:
                self.lam += d[n:]
            upd = self._update_norm()
            if not (math.isfinite(upd) and math.isfinite(self.lam.sum())):
                raise StepFailure(f"non-finite Newton update at t = {t1:.9g}, iteration {it + 1}",
                                  iteration=it + 1, nonfinite=True, outcome=Outcome(
                                      fail_code("NONFINITE_UPDATE"), t1, h, it + 1))
        raise AssertionError("unreachable")

    def _estimate(self, t1, q, q_dot, q_ddot, H, H_dot, H_ddot) -> float:
        """ω_max of the reduced system (end of Sec. 5) at the accepted state, for comparison."""
        try:
            return self.lin.omega_at(self.kernels, t1, self.x, self.xd, self.xdd, self.lam,
                                     (q, H, q_dot, H_dot, q_ddot, H_ddot))
        except np.linalg.LinAlgError:
            return math.nan
