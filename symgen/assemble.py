"""The consistent start (the analogue of a finite-element assembler's initial solve): project an
initial state onto q = 0, q̇ = 0 and solve the index-1 equations for ẍ0 and λ0.

Used by :func:`symgen.simulate` before the first step and by :func:`symgen.suggest_step`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .jit import as_kernels
from .settings import SimulationSettings
from .steppers.linalg import Linearization

__all__ = ["ConsistentState", "consistent_state"]


@dataclass
class ConsistentState:
    """A state satisfying q = 0, q̇ = 0 and the index-1 equations, and how far it was moved."""

    t: float
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    lam: np.ndarray
    dx: float                  # ‖x − x₀‖₂ of the minimum-norm position correction
    dxd: float                 # ‖ẋ − ẋ₀‖₂ of the velocity correction
    iterations: int            # Gauss–Newton iterations of the position projection
    rank: int                  # rank of H at the state
    residuals: tuple = field(default=(0.0, 0.0, 0.0))   # ‖q‖, ‖q̇‖, ‖q̈‖ after the projection

    def as_dict(self) -> dict:
        return {"dx": self.dx, "dxd": self.dxd, "iterations": self.iterations, "rank": self.rank,
                "residuals": list(self.residuals)}


def consistent_state(kernels, t: float, x0, xd0, *, tol: float = 1e-13, max_iter: int = 50,
                     rank_tol: float = SimulationSettings.rank_tol, project: bool = True) -> ConsistentState:
    """Project (x0, ẋ0) onto q = 0 and q̇ = 0 and solve the index-1 system for ẍ0, λ0 (issue §5).

    * positions: Gauss–Newton with minimum-norm corrections x ← x − H⁺q until
      ‖q‖∞ ≤ tol·max(1, ‖x‖∞) (``ValueError`` if that fails);
    * velocities: ẋ ← ẋ − H⁺q̇ (q̇ is affine in ẋ: one exact step);
    * accelerations: ẍ = ẍ_p + N_H z with ẍ_p = −H⁺q̈(ẍ = 0) and N_HᵀMN_H z = N_Hᵀ(f − M ẍ_p)
      (works with a singular M, e.g. zero rotational inertia, and with redundant constraints);
      λ from Hᵀλ = M ẍ − f by least squares.

    ``project=False`` keeps x0, ẋ0 as given and only solves for ẍ0, λ0.
    """
    kernels = as_kernels(kernels)
    n, m = kernels.n, kernels.m
    x = np.array(x0, dtype=float).reshape(n)
    xd = np.array(xd0, dtype=float).reshape(n)
    x_start, xd_start = x.copy(), xd.copy()
    zeros_n, lam = np.zeros(n), np.zeros(m)
    lin = Linearization(n, m, rank_tol)
    it = 0
    if m and project:
        for it in range(max_iter + 1):
            q, H, *_ = kernels.constraints(t, x, xd, zeros_n)
            rq = float(np.max(np.abs(q)))
            if not math.isfinite(rq):
                raise ValueError(f"constraints are not finite at the initial state x0 = {x}")
            if rq <= tol * max(1.0, float(np.max(np.abs(x)))):
                break
            if it == max_iter:
                raise ValueError(f"cannot project x0 onto the constraints q = 0: |q| = {rq:.3e} after "
                                 f"{max_iter} Gauss-Newton iterations (is the initial configuration "
                                 "far from an assemblable one?)")
            lin.factor(H)
            x -= lin.Hpinv @ q                                  # minimum-norm correction
        q, H, q_dot, *_ = kernels.constraints(t, x, xd, zeros_n)
        lin.factor(H)
        xd -= lin.Hpinv @ q_dot                                 # minimum-norm velocity correction
    if m:
        q, H, q_dot, H_dot, q_ddot0, H_ddot = kernels.constraints(t, x, xd, zeros_n)
        k = lin.factor(H)
        xdd_p = -(lin.Hpinv @ q_ddot0)                          # H ẍ = −q̈(ẍ = 0)
    else:
        k = lin.factor(np.zeros((0, n)))
        xdd_p = np.zeros(n)
    M, f, K, C = kernels.dynamics(t, x, xd, zeros_n, lam)
    N = lin.N
    M_R = N.T @ M @ N
    try:
        z = np.linalg.solve(M_R, N.T @ (f - M @ xdd_p)) if k else np.zeros(0)
    except np.linalg.LinAlgError:
        raise ValueError("the reduced mass matrix N_Hᵀ M N_H is singular at the initial state: "
                         "the model has a massless degree of freedom") from None
    xdd = xdd_p + N @ z
    if m:
        lam = lin.Hpinv.T @ (M @ xdd - f)                       # Gᵀλ = M ẍ − f (least squares)
        q, H, q_dot, H_dot, q_ddot, H_ddot = kernels.constraints(t, x, xd, xdd)
        resid = (float(np.linalg.norm(q)), float(np.linalg.norm(q_dot)), float(np.linalg.norm(q_ddot)))
    else:
        resid = (0.0, 0.0, 0.0)
    return ConsistentState(t=float(t), x=x, xd=xd, xdd=xdd, lam=lam,
                           dx=float(np.linalg.norm(x - x_start)),
                           dxd=float(np.linalg.norm(xd - xd_start)),
                           iterations=it, rank=lin.rank, residuals=resid)
