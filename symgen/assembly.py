"""Assembly and the consistent start.

* :func:`assemble` — a consistent initial state (x0, ẋ0) from a few given coordinates, the analogue
  of an assembler in other multibody tools::

      x0, xd0 = symgen.assemble(model, fix={"crank.theta": 0.3}, xd_fix={"crank.theta": 1.0})

  The named coordinates (or outputs, e.g. a crank angle defined as an output) are held at the
  given values; the rest of the configuration solves q(x, t0) = 0 from the model's x0 (or
  ``guess``) by Gauss–Newton with minimum-norm (least-squares) steps, i.e. with the smallest change
  from the guess; then the velocities solve q̇ = H ẋ + ∂q/∂t = 0 with the components in ``xd_fix``
  held, again with the smallest change from the model's ẋ0 (or ``xd_guess``).  Held coordinates
  keep the given values exactly (they are not unknowns); a held output is a row.  The iteration
  is :mod:`symgen.gauss_newton`'s: deterministic (mpmath rows, no BLAS), so the start has the same
  bits on every machine; a configuration that cannot be assembled raises
  :class:`AssemblyError`, naming the constraints that stay violated and their residuals.
* :func:`consistent_state` — project an initial state onto q = 0, q̇ = 0 and solve the index-1
  equations for ẍ0 and λ0; used by :func:`symgen.simulate` before the first step and by
  :func:`symgen.suggest_step`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

import numpy as np
import sympy as sp

from .derived import jacobian
from .gauss_newton import Rows, solve, velocity_rows
from .jit import as_kernels
from .model import Model, ModelError, t
from .runtime_constants import CONSISTENT_MAX_ITER, CONSISTENT_TOL
from .settings import SimulationSettings
from .steppers.linalg import Linearization

__all__ = ["ConsistentState", "consistent_state", "assemble", "Assembly", "AssemblyError",
           "check_mass_diagonal"]


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
    fallback: str | None = None  # how the run's start fell back from its own projection (meta)

    def as_dict(self) -> dict:
        return {"dx": self.dx, "dxd": self.dxd, "iterations": self.iterations, "rank": self.rank,
                "residuals": list(self.residuals)}


def consistent_state(kernels, t: float, x0, xd0, *, tol: float = CONSISTENT_TOL,
                     max_iter: int = CONSISTENT_MAX_ITER,
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
    return finished_state(kernels, t, x_start, xd_start, x, xd, xdd, lam, it, lin.rank,
                          M_diag=np.diag(M))


def check_mass_diagonal(kernels, t: float, x, M_diag=None) -> None:
    """M is positive semi-definite, so no diagonal entry is negative: check them at (t, x) with
    the kernels' current parameter values (the run's, which the model's own check at its
    defaults does not see, e.g. ``--param m=-1``).  Zero entries are legal (a point mass has no
    rotational inertia).  Raises ModelError naming the entry, its coordinate and the parameters."""
    if M_diag is None:
        n = kernels.n
        M_diag = kernels.dynamics(t, x, np.zeros(n), np.zeros(n), np.zeros(kernels.m))[0].diagonal()
    d = np.asarray(M_diag, dtype=float)
    finite = d[np.isfinite(d)]
    scale = max(float(np.max(np.abs(finite))) if finite.size else 0.0, 1.0)
    bad = np.flatnonzero(d < -1e-12 * scale)
    if bad.size:
        i = int(bad[0])
        names = getattr(kernels, "coord_names", None) or [f"x[{j}]" for j in range(len(d))]
        params = getattr(kernels, "params", None)
        values = ", ".join(f"{k} = {v:g}" for k, v in params().items()) if params else "none"
        raise ModelError(f"M[{i},{i}] (coordinate {names[i]}) is {d[i]:.6g} at the initial state "
                         f"with the parameters {values}: a mass matrix has no negative diagonal "
                         "entry (negative mass or inertia?)")


def finished_state(kernels, t: float, x0, xd0, x, xd, xdd, lam, iterations: int,
                   rank: int, M_diag=None) -> ConsistentState:
    """The :class:`ConsistentState` of a state (x, ẋ, ẍ, λ) projected from (x0, ẋ0): how far it
    moved, and its constraint residuals (also for the compiled stepper's
    ``consistent_state``, computed in C).  Every start of a run passes here:
    :func:`check_mass_diagonal` refuses a negative diagonal entry of M (``M_diag``: M's diagonal
    at (t, x) when the caller has it)."""
    kernels = as_kernels(kernels)
    check_mass_diagonal(kernels, t, x, M_diag)
    if kernels.m:
        q, _, q_dot, _, q_ddot, _ = kernels.constraints(t, x, xd, xdd)
        resid = (float(np.linalg.norm(q)), float(np.linalg.norm(q_dot)), float(np.linalg.norm(q_ddot)))
    else:
        resid = (0.0, 0.0, 0.0)
    return ConsistentState(t=float(t), x=x, xd=xd, xdd=xdd, lam=lam,
                           dx=float(np.linalg.norm(x - x0)), dxd=float(np.linalg.norm(xd - xd0)),
                           iterations=int(iterations), rank=int(rank), residuals=resid)


class AssemblyError(ModelError):
    """The constraints cannot be satisfied with the given coordinates held (the message names the
    violated constraints and their residuals)."""


class Assembly(NamedTuple):
    """A consistent initial state: q(x0, t0) = 0, q̇(x0, ẋ0, t0) = 0, the held values in place."""

    x0: np.ndarray
    xd0: np.ndarray


def _label(model: Model, i: int, labels=None) -> str:
    if labels is not None:
        return f"q[{i}] {labels[i]}"
    name = model.constraint_names[i]
    if name != f"q[{i}]":                       # a named row (the builders name every joint's)
        return f"row {name} (q[{i}])"
    text = " ".join(str(model.q[i]).split())
    return f"q[{i}] = {text[:60]}{' …' if len(text) > 60 else ''}"


def _targets(model: Model, fix: Mapping | None, what: str, velocity: bool):
    """(expression, value, label) for each held coordinate or output."""
    out = []
    for key, value in (fix or {}).items():
        name = key.name if isinstance(key, sp.Symbol) else str(key)
        try:
            val = float(value)
        except (TypeError, ValueError):
            raise ModelError(f"{what}[{name!r}] = {value!r} is not a number") from None
        if not np.isfinite(val):
            raise ModelError(f"{what}[{name!r}] = {val} is not finite")
        if name in model.coord_names:
            i = model.coord_names.index(name)
            expr = model.velocities[i] if velocity else model.coords[i]
        elif name in model.outputs:
            expr = model.outputs[name]
            if velocity:
                # d/dt of a position output: its gradient times ẋ (plus ∂/∂t)
                if expr.free_symbols & set(model.velocities):
                    raise ModelError(f"{what}: output {name!r} depends on velocities; hold a "
                                     "position output or a coordinate")
                grad = jacobian(sp.Matrix([expr]), model.coords)
                expr = sum((g * v for g, v in zip(grad, model.velocities)), sp.diff(expr, t))
            elif expr.free_symbols & set(model.velocities):
                raise ModelError(f"{what}: output {name!r} depends on velocities; only position "
                                 "outputs can be held during assembly")
        else:
            raise ModelError(f"{what}: model {model.name!r} has no coordinate or output {name!r}; "
                             f"coordinates: {list(model.coord_names)}, outputs: "
                             f"{list(model.output_names)}")
        out.append((expr, val, f"{what} {name} = {val:g}"))
    return out


def assemble(model: Model, fix: Mapping | None = None, guess=None, xd_fix: Mapping | None = None,
             *, xd_guess=None, t0: float = 0.0, params: Mapping | None = None, tol: float = 1e-13,
             max_iter: int = 50, labels=None) -> Assembly:
    """A consistent (x0, ẋ0) with the coordinates or outputs in ``fix`` held at their values.

    fix:
        name → value for coordinates (``"crank.theta"``) or position outputs (``"beta"``).
    guess:
        the starting configuration (default: ``model.x0``); the result is the assembled
        configuration nearest to it that Gauss–Newton with minimum-norm steps reaches.
    xd_fix:
        name → value for velocities of coordinates or of position outputs; the other velocities
        change as little as possible from ``xd_guess`` (default: ``model.xd0``).
    params:
        parameter values by name (default: the model's defaults).
    labels:
        names of the model's constraint rows for the error message (the builders pass their
        joints); default: the rows' expressions.

    Raises :class:`AssemblyError` naming the constraints that cannot be satisfied and their
    residuals (e.g. a link too short to close the loop, or held values that contradict each other).
    """
    pvals = dict(model.params)
    for key, val in (params or {}).items():
        pvals[model.param(key.name if isinstance(key, sp.Symbol) else str(key))] = float(val)
    pos_rows = _targets(model, fix, "fix", velocity=False)
    vel_rows = _targets(model, xd_fix, "xd_fix", velocity=True)
    x = np.array(model.x0 if guess is None else guess, float).reshape(-1)
    xd = np.array(model.xd0 if xd_guess is None else xd_guess, float).reshape(-1)
    if x.shape != (model.n,) or xd.shape != (model.n,):
        raise ModelError(f"assemble: the guess needs {model.n} entries (coordinates "
                         f"{list(model.coord_names)}), got {x.shape[0]} and {xd.shape[0]}")
    if labels is not None and len(labels) != model.m:
        raise ModelError(f"assemble: {len(labels)} labels for {model.m} constraint rows")
    params, values = list(pvals), [pvals[s] for s in pvals]
    row_labels = [_label(model, i, labels) for i in range(model.m)]
    # positions: the held coordinates set, the others from q = 0 and the held outputs
    held, outs = _held(model.coords, pos_rows, x)
    rows = Rows(list(model.q) + [e - v for e, v, _ in outs], model.coords, params + [t])
    if rows.m:
        sol = solve(rows, x, values + [t0], held, tol=tol, max_iter=max_iter,
                    rank_tol=SimulationSettings.rank_tol)
        if not sol.converged:
            raise _failure(model, row_labels + [lab for _, _, lab in outs], sol)
        x = sol.z
    # velocities: the held ones set, the others from q̇ = 0 and the held outputs' rates
    vheld, vouts = _held(model.velocities, vel_rows, xd)
    vrows = velocity_rows(rows, model.m, model.velocities, list(model.coords) + params + [t],
                          [e - v for e, v, _ in vouts])
    if vrows.m:
        sol = solve(vrows, xd, list(x) + values + [t0], vheld, tol=1e-9, max_iter=2,
                    rank_tol=SimulationSettings.rank_tol)
        scale = max(1.0, float(np.max(np.abs(sol.z))) if xd.size else 1.0)
        if not sol.converged:
            names = row_labels + [lab for _, _, lab in vouts]
            bad = np.argsort(-np.abs(sol.F))[:3]
            listed = "; ".join(f"{names[i]} (residual {sol.F[i]:.3g})" for i in bad
                               if abs(sol.F[i]) > 1e-9 * scale)
            raise AssemblyError(f"{model.name}: the held velocities contradict the velocity "
                                f"constraints: {listed}")
        xd = sol.z
    return Assembly(x0=x, xd0=xd)


def _held(symbols, targets, z):
    """The targets on coordinates (or velocities) ``symbols``: their indices, their values set
    in z; and the others (outputs: rows)."""
    index = {s: i for i, s in enumerate(symbols)}
    held, rows = [], []
    for expr, value, label in targets:
        if expr in index:
            held.append(index[expr])
            z[index[expr]] = value
        else:
            rows.append((expr, value, label))
    return held, rows


def _failure(model: Model, labels, sol) -> AssemblyError:
    x, q = sol.z, sol.F
    order = np.argsort(-np.abs(q))
    worst = [i for i in order if abs(q[i]) > 1e-9 * max(1.0, float(np.max(np.abs(x))))][:4]
    if not worst:
        worst = list(order[:1])
    listed = "; ".join(f"{labels[i]} (residual {q[i]:.3g})" for i in worst)
    return AssemblyError(
        f"{model.name}: cannot assemble: after Gauss-Newton the constraints stay violated: "
        f"{listed}; the mechanism cannot close with these dimensions and held values, or the "
        "guess is too far from an assembled configuration")
