"""What every stepper shares: the interface the simulation loop drives, the predictor, the
convergence test and the failure exception.

A stepper advances one fixed step h from a state (x, ẋ, ẍ, λ) at t to (x, ẋ, ẍ, λ) at t + h:

    stepper.step(t, h, (x, xd, xdd, lam), controlled=False)  ->  Outcome (its ``iteration``: the
                                                                   Newton iterations, ``flags``)

The new state is left in ``stepper.x, .xd, .xdd, .lam`` (buffers owned by the stepper), with
``stepper.res`` = (‖q‖₂, ‖q̇‖₂, ‖q̈‖₂) evaluated at the accepted state and ``stepper.omega_max``
the per-step stability estimate.  Numerical trouble raises :class:`StepFailure` (caught by
:func:`symgen.simulate`, which turns it into a Result with status ``failed``).

Convergence (all steppers), component by component as in ODE codes: with the weights
w_i = tol·(1 + |x_i(t)|) fixed at the start of the step (from the accepted state at t, so an
iterate that runs away cannot loosen them, and a coordinate far from the origin does not loosen the
others), the last Newton update satisfies |Δx_i|, h|Δẋ_i|, h²|Δẍ_i| ≤ w_i, and, for constrained
models, ‖q‖, h‖q̇‖, h²‖q̈‖ ≤ ``constraint_tol`` (absolute, in the units of q) at the accepted
state (the constrained steppers evaluate the constraints at the accepted state, so the residuals
they report are those of the state they return).  The index-3 stepper enforces q only, so only
‖q‖ enters its test.

Near a singular configuration (the double four-bar's horizontal passage: s_min/s_max of H ≈ 3e-5)
the attainable accuracy of the iterates, not the quadratic rate, limits the updates: a round-off
error ε‖x‖ in solving q(x) = 0 is amplified by κ(H) = s_max/s_min, and an error δx (δẋ) reaches
h²ẍ through the acceleration constraint H ẍ = −q̈(ẍ = 0) (Eq. 46) amplified by h‖Ḣ‖/s_min
(h²‖Ḧ‖/s_min).  :meth:`Stepper._floor` estimates that floor at the current iterate,

    δx = ε κ (1 + ‖x‖∞),   δv = ε κ h‖ẋ‖∞ + ρ₁ δx,   δa = ε κ h²‖ẍ‖∞ + ρ₁ δv + ρ₂ δx,
    ρ₁ = h‖Ḣ‖_F / s_min,   ρ₂ = h²‖Ḧ‖_F / s_min,

and an update above the tolerance is accepted *at the floor* only if (i) it is not larger than the
update before it (a growing update is never accepted) and (ii) on each of the three levels
max|Δx_i|, h·max|Δẋ_i|, h²·max|Δẍ_i| is within w_i or within that level's floor.  Such steps are
counted in ``floor_steps`` (their times in ``floor_times``, the first ``FLOOR_TIMES_KEPT``, and
``floor_t_last``).  Away from singular configurations the floor lies far below tol·(1 + |x|)
(κ ≈ 1–10, ρ ≪ 1), so the rule changes nothing there.  The estimate is a worst-case bound
(docs/method.md, "Singular configurations").
"""
from __future__ import annotations

import math

import numpy as np

from dataclasses import replace

from ..runtime_constants import CODES, TIMES_KEPT
from ..settings import NEWTON_TOL_FIXED, SimulationSettings
from .outcome import Outcome
from ..schemes import Scheme

__all__ = ["norm2", "StepFailure", "Stepper", "DEFAULT_TOL", "DEFAULT_CONSTRAINT_TOL", "DEFAULT_MAX_ITER",
           "EPS", "FLOOR_TIMES_KEPT", "NUMERICAL_ERRORS"]

# the defaults are SimulationSettings' (symgen/settings.py), named here for the steppers' signatures
DEFAULT_TOL = NEWTON_TOL_FIXED          # a fixed step's (settings.newton_tol)
DEFAULT_CONSTRAINT_TOL = SimulationSettings.constraint_tol
DEFAULT_MAX_ITER = SimulationSettings.max_iter
#: Machine epsilon of the float64 arithmetic the steppers run in.
EPS = float(np.finfo(float).eps)
#: How many times of steps accepted at the round-off floor a stepper keeps (the count is exact).
FLOOR_TIMES_KEPT = TIMES_KEPT


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
    """A step that could not be completed; the message names time, step, iteration and norms,
    ``outcome`` (:class:`~symgen.steppers.outcome.Outcome`) holds them as data (the kind, as the
    C runtime's); the message is its ``detail``."""

    def __init__(self, message: str, *, iteration: int = 0, nonfinite: bool = False,
                 crossable: bool = False, outcome: Outcome | None = None):
        super().__init__(message)
        self.iteration = iteration
        self.nonfinite = nonfinite
        self.crossable = crossable  # a fixed step whose sub-steps failed too (nullspace.py _cross)
        self.outcome = None if outcome is None else replace(outcome, detail=message)

    @classmethod
    def of(cls, outcome: Outcome, message: str, crossable: bool = False) -> "StepFailure":
        """The failure of ``outcome`` (its iteration and non-finiteness), worded ``message``."""
        return cls(message, iteration=outcome.iteration, nonfinite=outcome.nonfinite,
                   crossable=crossable, outcome=outcome)


#: What a step raises for a numerical failure, which the run loops take as data (the run "failed"
#: or "diverged", the fixed step's sub-steps and the error control's smaller tries): StepFailure
#: (the steppers' own), LAPACK's LinAlgError (a singular or non-finite factorization), and the
#: floating-point errors of Python's and numpy's arithmetic on a diverging state (OverflowError:
#: ``x ** 2`` past the largest double; FloatingPointError where numpy is set to raise).  Anything
#: else, a ZeroDivisionError, TypeError or IndexError, is a bug and propagates (issue 37.3).
NUMERICAL_ERRORS = (StepFailure, np.linalg.LinAlgError, OverflowError, FloatingPointError)


class Stepper:
    """Base class: buffers, predictor, convergence scale.  Subclasses implement :meth:`step`."""

    method = "?"
    #: (t, x, ẋ) → (x, ẋ, ẍ, λ, residuals): an interpolated row projected on the constraints,
    #: set by the run (steploop.start_state); a crossed grid point's row needs it (nullspace.py)
    project_row = None

    def __init__(self, kernels, scheme: Scheme, h: float, *, tol: float = DEFAULT_TOL,
                 constraint_tol: float = DEFAULT_CONSTRAINT_TOL, max_iter: int = DEFAULT_MAX_ITER,
                 rank_tol: float | None = None, estimate: bool = True):
        if not (h > 0.0 and math.isfinite(h)):
            raise ValueError(f"step size must be positive and finite, got {h}")
        if not (tol > 0.0 and math.isfinite(tol)):
            raise ValueError(f"tol must be positive and finite, got {tol}")
        if not (constraint_tol > 0.0 and math.isfinite(constraint_tol)):
            raise ValueError(f"constraint_tol must be positive and finite, got {constraint_tol}")
        if isinstance(max_iter, float) and not max_iter.is_integer():
            raise ValueError(f"max_iter must be an integer, got {max_iter}")
        if int(max_iter) < 1:
            raise ValueError(f"max_iter must be at least 1, got {max_iter}")
        self.kernels = kernels
        self.scheme = scheme
        self.h = float(h)               # the run's fixed step (each step is given its own h)
        self._h_now = self.h            # the h of the Newton solve under way (_predict)
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
        self._upd_last = math.inf       # the last two weighted updates (growth test)
        self._upd_prev = math.inf
        self._upd_abs = [0.0, 0.0, 0.0]  # max|Δx_i|, h·max|Δẋ_i|, h²·max|Δẍ_i| of the last update
        self._upd_lvl = [0.0, 0.0, 0.0]  # the same over w_i (≤ 1: converged on that level)
        self.floor = (0.0, 0.0, 0.0)    # δx, δv, δa of the last _floor (absolute, see above)
        self.floor_steps = 0            # steps accepted at the round-off floor …
        self.floor_times = []           # … the times of the first FLOOR_TIMES_KEPT of them
        self.floor_t_last = math.nan    # … and of the last one
        self.res = np.zeros(3)          # ‖q‖, ‖q̇‖, ‖q̈‖ at the accepted state
        self.omega_max = math.nan

    def start(self, t: float, x, xd, xdd, lam) -> None:
        """Called once with the (consistent) initial state before the first step."""

    def restart(self, t: float, x, xd, xdd, lam) -> None:
        """The inputs jumped at t (a sampled controller): what the step carries over from the
        last one is restarted at (x, ẋ, ẍ⁺, λ⁺), as the C runtime's sample_at does."""

    def checkpoint(self):
        """What a step changes besides the new state and counters (the error control restores
        it with :meth:`rollback` when it rejects a step); None when nothing."""
        return None

    def rollback(self, saved) -> None:
        """Undo a rejected step's change of the state :meth:`checkpoint` saved."""

    # -- helpers ----------------------------------------------------------------------------------
    def _predict(self, x, xd, xdd, lam, h: float | None = None) -> None:
        """Constant-acceleration predictor for a step of h (default: the run's): ẍ⁰ = ẍ_n (it
        satisfies Newmark for any γ, β); also fixes this solve's h and convergence weights from
        the state at t."""
        h = self.h if h is None else float(h)
        self._h_now = h
        np.abs(x, out=self._wt)
        self._wt += 1.0
        self._wt *= self.tol
        self._upd_last = self._upd_prev = math.inf
        self._upd_lvl[:] = (math.inf, math.inf, math.inf)
        self.floor = (math.nan, math.nan, math.nan)
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
        h, w = self._h_now, self._wn
        for lvl, (new, old, scale) in enumerate(((self.x, self._x_old, 1.0),
                                                 (self.xd, self._xd_old, h),
                                                 (self.xdd, self._xdd_old, h * h))):
            np.subtract(new, old, out=w)
            np.abs(w, out=w)
            self._upd_abs[lvl] = scale * float(w.max(initial=0.0))
            w /= self._wt
            self._upd_lvl[lvl] = scale * float(w.max(initial=0.0))
        self._upd_prev, self._upd_last = self._upd_last, max(self._upd_lvl)
        return self._upd_last

    def _converged(self, upd: float) -> bool:
        """The update is within the tolerance: upd ≤ 1 (see :meth:`_at_floor` for the rest)."""
        return upd <= 1.0

    def _may_be_at_floor(self, upd: float) -> bool:
        """Worth estimating the floor: above the tolerance and not larger than the update before
        (a growing update is never accepted, whatever the floor)."""
        return 1.0 < upd <= self._upd_prev

    def _floor(self, x, xd, xdd, s_max: float, s_min: float, hd_norm: float = 0.0,
               hdd_norm: float = 0.0) -> tuple:
        """The attainable accuracy (δx, δv, δa) of x, hẋ, h²ẍ at an iterate (module docstring):
        κ = s_max/s_min of H (1 without constraints), ρ₁ = h‖Ḣ‖/s_min, ρ₂ = h²‖Ḧ‖/s_min."""
        h = self._h_now
        if s_min > 0.0 and s_max > 0.0:
            kappa = s_max / s_min
            rho1, rho2 = h * hd_norm / s_min, h * h * hdd_norm / s_min
        elif s_max > 0.0:
            return (math.inf, math.inf, math.inf)
        else:
            kappa, rho1, rho2 = 1.0, 0.0, 0.0
        ek = EPS * kappa
        dx = ek * (1.0 + float(np.max(np.abs(x), initial=0.0)))
        dv = ek * h * float(np.max(np.abs(xd), initial=0.0)) + rho1 * dx
        da = ek * h * h * float(np.max(np.abs(xdd), initial=0.0)) + rho1 * dv + rho2 * dx
        self.floor = (dx, dv, da)
        return self.floor

    def _at_floor(self, t1: float) -> bool:
        """The last update (above tol, not growing: :meth:`_may_be_at_floor`) is at the floor of
        the last :meth:`_floor` on every level; if so the step is counted as accepted at it."""
        if not self._may_be_at_floor(self._upd_last):
            return False
        for lvl in range(3):
            if self._upd_lvl[lvl] > 1.0 and self._upd_abs[lvl] > self.floor[lvl]:
                return False
        if len(self.floor_times) < FLOOR_TIMES_KEPT:
            self.floor_times.append(float(t1))
        self.floor_t_last = float(t1)
        self.floor_steps += 1
        return True

    def _not_converged(self, t1: float, it: int, upd: float, extra: str = "", *,
                       residual: float = math.nan, s_ratio: float = math.nan) -> "StepFailure":
        """The StepFailure for a Newton iteration that ran out of iterations (``residual``,
        ``s_ratio``: the constraint residual and s_min/s_max of H there, for its outcome)."""
        outcome = Outcome(CODES["SG_FAIL_NOT_CONVERGED"], t1, getattr(self, "_h_now", self.h), it,
                          update=upd,
                          residual=residual, s_ratio=s_ratio, floor=tuple(self.floor),
                          upd_abs=tuple(self._upd_abs))
        return StepFailure(
            f"Newton did not converge at t = {t1:.9g} after {it} iterations: update of "
            f"(x, h·xd, h²·xdd) {upd:.3e} × tol·(1 + |x|) (converged at ≤ 1, tol = {self.tol:.1e}; "
            f"round-off floor of (x, h·xd, h²·xdd) at the last iterate {self.floor[0]:.2e}, "
            f"{self.floor[1]:.2e}, {self.floor[2]:.2e}; last update {self._upd_abs[0]:.2e}, "
            f"{self._upd_abs[1]:.2e}, {self._upd_abs[2]:.2e})" + extra, iteration=it,
            outcome=outcome)

    def _save_old(self) -> None:
        self._x_old[:] = self.x
        self._xd_old[:] = self.xd
        self._xdd_old[:] = self.xdd

    def step(self, t: float, h: float, state, *, controlled: bool = False) -> Outcome:
        """One step of h from ``state`` = (x, ẋ, ẍ, λ) at t (module docstring); ``controlled``:
        a try of the error control (Newton alone, no retries of its own)."""
        raise NotImplementedError

    def _accepted(self, t: float, h: float, iters: int, floor0: int) -> Outcome:
        """The outcome of an accepted step (the floor flag when it was accepted at the floor)."""
        return Outcome(CODES["SG_FAIL_NONE"], t + h, h, iters,
                       flags=CODES["SG_FLAG_FLOOR"] if self.floor_steps > floor0 else 0)
