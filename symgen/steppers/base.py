"""What every stepper shares: the interface the simulation loop drives, the predictor, the
convergence test and the failure exception.

A stepper advances one fixed step h from a state (x, ẋ, ẍ, λ) at t to (x, ẋ, ẍ, λ) at t + h:

    stepper.step(t, x, xd, xdd, lam)  ->  number of Newton iterations (linear solves)

The new state is left in ``stepper.x, .xd, .xdd, .lam`` (buffers owned by the stepper), with
``stepper.res`` = (‖q‖₂, ‖q̇‖₂, ‖q̈‖₂) evaluated at the accepted state and ``stepper.omega_max``
the per-step stability estimate.  Numerical trouble raises :class:`StepFailure` (caught by
:func:`symgen.simulate`, which turns it into a Result with status ``failed``).

Convergence (all steppers), component by component as in ODE codes: with the weights
w_i = tol·(1 + |x_i(t)|) fixed at the start of the step (from the accepted state at t, so an
iterate that runs away cannot loosen them, and a coordinate far from the origin does not loosen the
others), the last Newton update satisfies |Δx_i|, h|Δẋ_i|, h²|Δẍ_i| ≤ w_i (or, once Newton has
stalled at its round-off floor, ≤ ``STALL_FACTOR``·w_i; counted in ``stalled_steps``), and, for constrained
models, ‖q‖, h‖q̇‖, h²‖q̈‖ ≤ ``constraint_tol`` (absolute, in the units of q) at the accepted
state (the constrained steppers evaluate the constraints at the accepted state, so the residuals
they report are those of the state they return).  The index-3 stepper enforces q only, so only
‖q‖ enters its test.
"""
from __future__ import annotations

import math

import numpy as np

from ..settings import SimulationSettings
from .schemes import Scheme

__all__ = ["norm2", "StepFailure", "Stepper", "DEFAULT_TOL", "DEFAULT_CONSTRAINT_TOL", "DEFAULT_MAX_ITER"]

# the defaults are SimulationSettings' (symgen/settings.py), named here for the steppers' signatures
DEFAULT_TOL = SimulationSettings.tol
DEFAULT_CONSTRAINT_TOL = SimulationSettings.constraint_tol
DEFAULT_MAX_ITER = SimulationSettings.max_iter
#: An update within this factor of the tolerance that no longer shrinks is accepted (round-off).
STALL_FACTOR = 1e3


def norm2(v) -> float:
    """Euclidean norm of a vector: one dot product, rescaled only if the squares overflow."""
    s = v.dot(v)
    if s < math.inf:
        return math.sqrt(s)
    a = float(np.max(np.abs(v)))
    if not math.isfinite(a):
        return a
    w = v / a
    return a * math.sqrt(w.dot(w))


class StepFailure(RuntimeError):
    """A step that could not be completed; the message names time, step, iteration and norms."""

    def __init__(self, message: str, *, iteration: int = 0, nonfinite: bool = False):
        super().__init__(message)
        self.iteration = iteration
        self.nonfinite = nonfinite


class Stepper:
    """Base class: buffers, predictor, convergence scale.  Subclasses implement :meth:`step`."""

    method = "?"

    def __init__(self, kernels, scheme: Scheme, h: float, *, tol: float = DEFAULT_TOL,
                 constraint_tol: float = DEFAULT_CONSTRAINT_TOL, max_iter: int = DEFAULT_MAX_ITER,
                 rank_tol: float | None = None, estimate: bool = True):
        if not (h > 0.0 and math.isfinite(h)):
            raise ValueError(f"step size must be positive and finite, got {h}")
        if not (tol > 0.0):
            raise ValueError(f"tol must be positive, got {tol}")
        if not (constraint_tol > 0.0):
            raise ValueError(f"constraint_tol must be positive, got {constraint_tol}")
        if int(max_iter) < 1:
            raise ValueError(f"max_iter must be at least 1, got {max_iter}")
        self.kernels = kernels
        self.scheme = scheme
        self.h = float(h)
        self.tol = float(tol)
        self.constraint_tol = float(constraint_tol)
        self.max_iter = int(max_iter)
        self.estimate = bool(estimate)
        n, m = kernels.n, kernels.m
        self.n, self.m = n, m
        # the iterate / accepted new state
        self.x = np.zeros(n)
        self.xd = np.zeros(n)
        self.xdd = np.zeros(n)
        self.lam = np.zeros(m)
        # the previous iterate (for the update norm)
        self._x_old = np.zeros(n)
        self._xd_old = np.zeros(n)
        self._xdd_old = np.zeros(n)
        self._wn = np.zeros(n)
        self._wt = np.zeros(n)          # convergence weights tol·(1 + |x_i(t)|) of this step
        self._upd_last = math.inf       # the last two weighted updates (stagnation test)
        self._upd_prev = math.inf
        self.stalled_steps = 0          # steps accepted at Newton's round-off floor
        self.res = np.zeros(3)          # ‖q‖, ‖q̇‖, ‖q̈‖ at the accepted state
        self.omega_max = math.nan

    def start(self, t: float, x, xd, xdd, lam) -> None:
        """Called once with the (consistent) initial state before the first step."""

    # -- helpers ----------------------------------------------------------------------------------
    def _predict(self, x, xd, xdd, lam) -> None:
        """Constant-acceleration predictor: ẍ⁰ = ẍ_n (it satisfies Newmark for any γ, β); also
        fixes this step's convergence weights from the state at t."""
        h = self.h
        np.abs(x, out=self._wt)
        self._wt += 1.0
        self._wt *= self.tol
        self._upd_last = self._upd_prev = math.inf
        self.xdd[:] = xdd
        np.multiply(xdd, h, out=self.xd)
        self.xd += xd
        np.multiply(xdd, 0.5 * h * h, out=self.x)
        self.x += x
        np.multiply(xd, h, out=self._wn)
        self.x += self._wn
        if self.m:
            self.lam[:] = lam

    def _update_norm(self) -> float:
        """max_i of |Δx_i|, h|Δẋ_i|, h²|Δẍ_i| over w_i (≤ 1: converged) for the last update."""
        h, w = self.h, self._wn
        np.subtract(self.x, self._x_old, out=w)
        np.abs(w, out=w)
        w /= self._wt
        a = float(w.max(initial=0.0))
        np.subtract(self.xd, self._xd_old, out=w)
        np.abs(w, out=w)
        w /= self._wt
        b = h * float(w.max(initial=0.0))
        np.subtract(self.xdd, self._xdd_old, out=w)
        np.abs(w, out=w)
        w /= self._wt
        c = h * h * float(w.max(initial=0.0))
        self._upd_prev, self._upd_last = self._upd_last, max(a, b, c)
        return self._upd_last

    def _converged(self, upd: float) -> bool:
        """upd ≤ 1, or Newton stalled at its round-off floor: within STALL_FACTOR of the
        tolerance and no longer shrinking (quadratic convergence would shrink it by orders).
        The floor is ε·κ(H)·‖x‖: near singular configurations (κ ~ 1e4) and on large models it
        exceeds tol·(1 + |x_i|) for the small coordinates."""
        if upd <= 1.0:
            return True
        if upd <= STALL_FACTOR and upd >= 0.5 * self._upd_prev:
            self.stalled_steps += 1
            return True
        return False

    def _not_converged(self, t1: float, it: int, upd: float, extra: str = "") -> "StepFailure":
        """The StepFailure for a Newton iteration that ran out of iterations."""
        return StepFailure(
            f"Newton did not converge at t = {t1:.9g} after {it} iterations: update of "
            f"(x, h·xd, h²·xdd) {upd:.3e} × tol·(1 + |x|) (converged at ≤ 1, tol = {self.tol:.1e})"
            + extra, iteration=it)

    def _save_old(self) -> None:
        self._x_old[:] = self.x
        self._xd_old[:] = self.xd
        self._xdd_old[:] = self.xdd

    def step(self, t: float, x, xd, xdd, lam) -> int:
        raise NotImplementedError
