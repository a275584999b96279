"""Static equilibrium of a model and its stability (issue 35; docs/linearization.md).

:func:`equilibrium` (exported as ``symgen.equilibrium``) finds a state at rest, ẋ = ẍ = 0, with
the constraints held: the reduced forces vanish,

    r(x, λ) = [ f(x, 0, t) + H(x)ᵀλ ;  q(x, t) ] = 0,

by Newton's method in (x, λ) with the Jacobian from the derived terms, K = ∂(Mẍ − f − Hᵀλ)/∂x
at ẍ = 0 (so ∂(f + Hᵀλ)/∂x = −K) and H:

    J = [[−K, Hᵀ], [H, 0]],      J δ = −r,

each step the least-squares (minimum-norm) solution, so redundant constraints (λ not unique) and
neutral directions (K singular along the constraints) take the smallest step; a step that does
not lower ‖r‖ is halved (at most ``HALVINGS`` times).  Its stability is that of the modes
(:func:`symgen.linear.modes`) at the state found.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .input_values import InputValues
from .jit import as_kernels
from .kernels import for_run
from .linear import Modes, linearize
from .settings import SimulationSettings

__all__ = ["Equilibrium", "EquilibriumError", "equilibrium", "HALVINGS"]

#: The halvings of a Newton step that does not lower the residual before the search gives up.
HALVINGS = 30


class EquilibriumError(ValueError):
    """Newton's method found no state at rest from the start; the message names the residual."""


@dataclass(frozen=True)
class Equilibrium:
    """A state at rest (module docstring).  x: the coordinates; lam: the multipliers λ (the
    constraint forces Hᵀλ balance f); force_residual: ``max |f + Hᵀλ|``, constraint_residual:
    ``max |q|`` there; iterations: Newton steps taken; modes: the :class:`~symgen.linear.Modes` at x
    (their ``stable`` and ``verdict`` are the equilibrium's stability)."""

    t: float
    x: np.ndarray
    lam: np.ndarray
    force_residual: float
    constraint_residual: float
    iterations: int
    modes: Modes
    coord_names: tuple
    constraint_names: tuple

    @property
    def stable(self) -> bool | None:
        return self.modes.stable

    @property
    def verdict(self) -> str:
        return self.modes.verdict

    def coord(self, name: str) -> float:
        """The equilibrium value of coordinate ``name``."""
        if name not in self.coord_names:
            raise KeyError(f"no coordinate {name!r}; coordinates are {list(self.coord_names)}")
        return float(self.x[self.coord_names.index(name)])


def _residual(kernels, t, x, lam):
    """r = [f + Hᵀλ; q] and J = [[−K, Hᵀ], [H, 0]] at rest."""
    n, m = kernels.n, kernels.m
    zeros = np.zeros(n)
    _, f, K, _ = kernels.dynamics(t, x, zeros, zeros, lam)
    r = np.array(f, dtype=float)
    J = np.zeros((n + m, n + m))
    J[:n, :n] = -np.asarray(K, float)
    if m:
        q, H, *_ = kernels.constraints(t, x, zeros, zeros)
        H = np.asarray(H, float)
        r = np.concatenate([r + H.T @ lam, np.asarray(q, float)])
        J[:n, n:], J[n:, :n] = H.T, H
    return r, J


def _newton(kernels, t, x, tol, max_iter):
    """(x, λ, iterations, r) with the force and constraint residuals within tolerance, else an
    EquilibriumError naming the largest ones."""
    n, m = kernels.n, kernels.m
    lam = np.zeros(m)
    r, J = _residual(kernels, t, x, lam)
    if m:                                   # λ at the start: least squares of Hᵀλ = −f
        lam = np.linalg.lstsq(J[n:, :n].T, -r[:n], rcond=None)[0]
        r, J = _residual(kernels, t, x, lam)
    force_scale = max(1.0, float(np.max(np.abs(r[:n]), initial=0.0)),
                      float(np.max(np.abs(J[:n, n:] @ lam), initial=0.0)))
    for it in range(max_iter + 1):
        length = max(1.0, float(np.max(np.abs(x), initial=0.0)))
        rf = float(np.max(np.abs(r[:n]), initial=0.0))
        rq = float(np.max(np.abs(r[n:]), initial=0.0))
        if not (math.isfinite(rf) and math.isfinite(rq)):
            break
        if rf <= tol * force_scale and rq <= tol * length:
            return x, lam, it, r
        if it == max_iter:
            break
        step = np.linalg.lstsq(J, -r, rcond=None)[0]
        norm, a = float(np.linalg.norm(r)), 1.0
        for _ in range(HALVINGS):
            x_new, lam_new = x + a * step[:n], lam + a * step[n:]
            r_new, J_new = _residual(kernels, t, x_new, lam_new)
            if np.linalg.norm(r_new) < norm:
                break
            a *= 0.5
        else:
            break
        x, lam, r, J = x_new, lam_new, r_new, J_new
    names = kernels.coord_names
    i = int(np.nanargmax(np.abs(r[:n]))) if n else 0
    rows = getattr(getattr(kernels, "model", None), "constraint_names", ()) or ()
    worst = ""
    if m:
        j = int(np.nanargmax(np.abs(r[n:])))
        worst = f", max |q| = {abs(r[n + j]):.3g} (row {rows[j] if j < len(rows) else j!r})"
    raise EquilibriumError(
        f"no equilibrium found from the start in {it} Newton steps: max |f + Hᵀλ| = "
        f"{abs(r[i]):.3g} (coordinate {names[i]!r}){worst}; start nearer one (x0=, the CLI's "
        "--set) or check that the forces admit a state at rest")


def equilibrium(model, x0=None, t: float = 0.0, params: Mapping | None = None,
                inputs: Mapping | None = None, *, tol: float = 1e-10, max_iter: int = 50,
                rank_tol: float | None = None) -> Equilibrium:
    """The state at rest nearest (by Newton's method) to ``x0`` and its stability (module
    docstring).  model: a Model or Kernels; x0: the start (default the model's x0); t: the time
    (rheonomic constraints and forces of t are taken there); params: parameter overrides (on
    its own copy: the kernels given are not changed); inputs: the inputs' values, as
    ``simulate``'s (held at their values at the start); tol: relative to
    ``max(1, |f|∞, |Hᵀλ|∞)`` at the start for the forces and to ``max(1, |x|∞)`` for q.  Raises :class:`EquilibriumError` when Newton's method does not converge.
    """
    kernels = as_kernels(model)
    mdl = getattr(kernels, "model", None)
    if rank_tol is None:
        rank_tol = SimulationSettings.merged(getattr(mdl, "settings", None)).rank_tol
    x = np.array(mdl.x0 if x0 is None else x0, dtype=float).reshape(-1)
    if x.shape != (kernels.n,):
        raise ValueError(f"x0 has {x.size} entries; model {kernels.name!r} has {kernels.n} "
                         "coordinates")
    run = for_run(kernels, params)          # its own p, u: the kernels given stay as they are
    values = InputValues(run, inputs)
    values.set(float(t), x, np.zeros(kernels.n))
    held = {k: float(v) for k, v in zip(values.names, values.u)}
    x, lam, it, r = _newton(run, float(t), x, tol, max_iter)
    md = linearize(kernels, t=float(t), x=x, xd=np.zeros(kernels.n), inputs=held or None,
                   params=params, rank_tol=rank_tol).modes()
    n = kernels.n
    return Equilibrium(
        t=float(t), x=x, lam=lam, force_residual=float(np.max(np.abs(r[:n]), initial=0.0)),
        constraint_residual=float(np.max(np.abs(r[n:]), initial=0.0)), iterations=it, modes=md,
        coord_names=tuple(kernels.coord_names),
        constraint_names=tuple(getattr(mdl, "constraint_names", ()) or ()))
