"""The paper's method: Newmark on the null-space coordinates α of the constraint linearization at
t + h (Fernández de Bustos et al., Meccanica 2022, Sec. 5, Eqs. 32–58; Fig. 11).  What the paper
leaves open, and the measurements behind the choices here: docs/method.md.

One Newton iteration, at the current estimate (x₁, ẋ₁, ẍ₁, λ₁) of the state at t + h (the paper
writes x₀ …; here x₀ is the initial state everywhere), one helper a part as the C runtime's
(sg_nullspace.c.inc: ``_test`` ns_test, ``_linearize`` ns_linearize, ``_reproject`` ns_reproject,
``_newmark_alpha`` ns_newmark_alpha, ``_recover`` ns_recover):

1. q, H, q̇, Ḣ, q̈, Ḧ at the estimate; if the previous update and the residuals are small, the
   estimate is accepted (so the reported residuals are those of the returned state).
2. One factorization of H: rank, N_H, H⁺ (:class:`~symgen.steppers.linalg.Linearization`; or, with
   ``factorization="sparse"``, :mod:`symgen.steppers.sparse`, with the same operations) and the
   particular solutions (Eqs. 33, 39, 40, 46, 47, 48; x_p as a correction of the estimate, ẋ_p and
   ẍ_p minimum-norm — see that module for why).
3. M, f, K_L, C_L at the estimate; K_L = ∂(Mẍ − f − Gᵀλ₁)/∂x includes −∂(Gᵀλ)/∂x (docs/method.md).
   The linearized equilibrium, written about the estimate, is
       M Δẍ + C_L Δẋ + K_L Δx = f − M ẍ₁ + Gᵀλ,      Δ· = (·) − (·)₁          (Eqs. 6, 50)
4. Re-project the state at t onto this linearization (Eqs. 56–58, least squares = Nᵀ(·) since N_H
   is orthonormal).
5. Newmark in α and the reduced Eq. 52 (N_G = N_H, G = H) solved for α̈(t + h).
6. x, ẋ, ẍ from Eqs. 34, 38, 45; λ from the unreduced Eq. 51 by least squares.

``omega_max`` (``estimate=True``) is that of the reduced system (M_R, K_R of Eq. 52) at the last
linearization of the step (docs/method.md, "Linear stability estimate"), as in the C runtime.

``chart="symmetric"`` (beyond the paper, :mod:`symgen.steppers.chart`, docs/symmetric-chart.md)
takes α, α̇, α̈ at t + h from one 3k × 3k solve on the null space of ½(H(t) + H(t + h)) instead of
steps 4–5 (their lines still run and are overwritten, so that the default ``"end"`` stays bit for
bit the paper's step).  ``metric="mass"`` (beyond the paper, docs/spatial-accuracy.md) imposes the
Newmark relations M-orthogonally, N_sᵀM R = 0, through the chart system, and with the symmetric
chart and γ = ½ is the corrected step (``SymmetricChart.jerk``; docs/fourth-order-step.md): the
two-point Hermite relations, with the jerk of every force, fourth order and A-stable, with or
without constraints; ``"euclidean"`` runs the code above unchanged.

Near a configuration where H loses rank: a step Newton cannot close is taken as sub-steps under
the error control of ``dt="auto"`` (:func:`~symgen.steppers.control.substeps`; not past the
stability limit h_max(ω_max)), counted in ``substepped_steps``; a step that *lands* there
(s_min/s_max of H below ``LANDING_RATIO`` and below ``LANDING_DROP`` of its value at the step's
start) is recorded as computed and stepped over from the step before in steps of h/2, h, h/2,
counted in ``landing_steps``; a grid point that itself lies on a singular configuration to
round-off, where no step or sub-step can end, is crossed (``_cross``): sub-steps to one step past
it, the row there from the interpolant of the sub-step across it, projected on q = q̇ = 0, counted
in ``crossed_steps``.  Why, with the measurements: docs/method.md, "Singular configurations", and
docs/variable-step.md.  The C runtime does the same (``sg_step``).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..runtime_constants import CROSS_FIRST, LANDING_DROP, LANDING_RATIO, REUSE_RATE
from ..settings import METRICS, resolve_factorization
from .base import FLOOR_TIMES_KEPT, Stepper, StepFailure, norm2
from .outcome import Outcome, fail_code
from .chart import CHARTS, SymmetricChart, solve_chart_step
from .control import Flag, corrected_step, hermite, substeps
from .linalg import dot_into, solve_small
from .sparse import make_linearization

__all__ = ["NullspaceStepper", "METRICS"]

#: How the Newmark relations' tangent part is taken: "euclidean" (the paper's N_Hᵀ(·) = 0) or
#: "mass" (N_Hᵀ M(·) = 0, M-orthogonal; docs/spatial-accuracy.md).

#: A landing near a singular configuration (module docstring, "Landings"): an accepted state where
#: s_min/s_max of the kept singular values of H is below LANDING_RATIO and below LANDING_DROP times
#: its value at the start of the step (so that a mechanism whose H is merely ill-scaled everywhere
#: is never stepped over); both, and a crossing's first sub-step CROSS_FIRST, are the C runtime's
#: too (symgen.runtime_constants).


class NullspaceStepper(Stepper):
    """Null-space (tangent-space, α-coordinate) Newmark stepper."""

    method = "nullspace"
    #: for tests (the crossing compared between the steppers): the fixed step from t to t + h with
    #: t < cross_at <= t + h is crossed (``_cross``) without Newton or its sub-steps tried first,
    #: once; the C runtime's sg_cross_at (CompiledStepper.cross_at)
    cross_at: float | None = None

    def __init__(self, kernels, scheme, h, *, rank_tol: float | None = None,
                 factorization: str = "auto", chart: str = "end", metric: str = "euclidean",
                 **kw):
        super().__init__(kernels, scheme, h, **kw)
        if scheme.is_hht:
            raise ValueError("HHT-α is a variant of the classical index-3 stepper; the nullspace "
                             "method takes a plain Newmark scheme (gamma, beta)")
        self.lin = make_linearization(kernels, rank_tol,
                                      resolve_factorization(kernels, "nullspace", factorization))
        # the sparse factorization takes the kernels' CSR matrices (issue 14, sparse.py)
        self._constraints = kernels.constraints_csr if self.lin.sparse else kernels.constraints
        self._dynamics = kernels.dynamics_csr if self.lin.sparse else kernels.dynamics
        # -- symmetric chart (issue 11) --
        if chart not in CHARTS:
            raise ValueError(f"unknown chart {chart!r}; known: {', '.join(CHARTS)}")
        self.chart = chart
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
        # metric="mass": the Newmark relations' tangent part taken M-orthogonally (through the
        # chart system, with N_s = N_H for the end chart; docs/spatial-accuracy.md)
        self.metric = metric
        self._chart_end = metric == "mass" and chart == "end"
        self._chart = (SymmetricChart(kernels, self.lin.factorization, self.lin)
                       if chart == "symmetric" or self._chart_end else None)
        # the corrected step (docs/fourth-order-step.md; the error control's estimate for it)
        self._corrected = corrected_step("nullspace", chart, metric, scheme.gamma)
        n = self.n
        self._x_p = np.zeros(n)         # n-sized work buffers of the iteration
        self._rhs = np.zeros(n)
        self._w = np.zeros(n)
        self._w2 = np.zeros(n)
        k = max(self.n - self.m, 0)     # (redundant constraints: m may exceed n)
        self.alpha = np.zeros(k)         # α, α̇, α̈ at t + h of the last iteration
        self.alpha_dot = np.zeros(k)
        self.alpha_ddot = np.zeros(k)
        self._lu = [None, None]         # m = 0: the chart system's LU, kept (modified Newton)
        self.substepped_steps = 0   # steps Newton could not close, taken as sub-steps …
        self.substepped_times = []  # … their end times (the first FLOOR_TIMES_KEPT)
        self.landing_steps = 0      # landings stepped over (module docstring, "Landings") …
        self.landing_times = []     # … their times (the first FLOOR_TIMES_KEPT)
        self._over = None           # (t, x, ẋ, ẍ, λ) at the start of the step onto a landing
        self.crossed_steps = 0      # grid points crossed, recorded from the interpolant …
        self.crossed_times = []     # … their times (module docstring, "Crossings")
        self._ahead = None          # the state one step past a crossed grid point, its residuals
        self._ratio = math.nan      # s_min/s_max of H at the last accepted state
        self.min_rank = self.m      # smallest rank of H seen during the run (redundancy report)
        self.max_rank = 0

    def start(self, t, x, xd, xdd, lam) -> None:
        """s_min/s_max of H at the initial state: the first step's reference for a landing."""
        if self.m:
            H = self._constraints(t, x, xd, xdd)[1]
            self._factor(self.lin, H, t, 0)
            self._ratio = self._s_ratio(self.lin)

    def restart(self, t, x, xd, xdd, lam) -> None:
        """A pending step-over after a landing is dropped (it would retake the last step with
        the new inputs)."""
        self._over = None

    def step(self, t, h, state, *, controlled: bool = False) -> Outcome:
        """One step of h from ``state`` = (x, ẋ, ẍ, λ) at t to t + h, its outcome (iterations,
        flags).  After a landing, the steps of h/2, h, h/2 from the start of the step onto it
        instead ("Landings" in the module docstring).  ``controlled`` (the error control's try,
        dt="auto"): Newton alone; a failure is the controller's to handle, by a smaller step
        (docs/variable-step.md)."""
        x, xd, xdd, lam = state
        floor0, sub0 = self.floor_steps, self.substepped_steps
        if controlled:
            it = self._newton(t, h, x, xd, xdd, lam)
        elif self._ahead is not None:
            it = self._take_ahead()
        else:
            it = self._fixed(t, h, x, xd, xdd, lam)
        flags = ((Flag.FLOOR if self.floor_steps > floor0 else 0)
                 | (Flag.SUBSTEPPED if self.substepped_steps > sub0 else 0))
        return Outcome(fail_code("NONE"), t + h, h, it, flags=flags)

    def _fixed(self, t, h, x, xd, xdd, lam) -> int:
        """A fixed step (or the step-over after a landing), crossed when it fails."""
        over, self._over = self._over, None
        start = (t, x, xd, xdd, lam) if over is None else over
        take = self._step if over is None else self._step_over
        if over is None and self.cross_at is not None and t < self.cross_at <= t + h:
            self.cross_at = None                # (forced: tests; sg_run.c.inc forced_failure)
            return self._cross(start, t + h, h, StepFailure(
                "crossing forced (cross_at)", crossable=True,
                outcome=Outcome(fail_code("NO_STEP"), t + h, h, 0)))
        try:
            it = take(start[0], h, *start[1:])
        except StepFailure as exc:
            return self._cross(start, t + h, h, exc)
        ratio = self._s_ratio(self.lin)
        if (over is None and ratio < LANDING_RATIO
                and ratio < LANDING_DROP * self._ratio):
            self._over = (t, x.copy(), xd.copy(), xdd.copy(), lam.copy())
            self._count("landing", t + h)
        self._ratio = ratio
        return it

    def _cross(self, start, T: float, h: float, failure: StepFailure) -> int:
        """A grid point T no step can end on (Newton and its sub-steps failed there: a singular
        configuration to round-off), crossed ("Crossings" in the module docstring): sub-steps from
        the step's start to T + h, none longer than h; the row at T from the interpolant of the
        sub-step across it, projected on the constraints; the state at T + h kept for the next
        step.  Raises ``failure`` unchanged when the crossing fails too."""
        project = self.project_row
        if not failure.crossable or project is None:
            raise failure
        try:
            t0, state = start[0], start[1:]
            it, (ts, hs, x0, v0, x1, v1) = substeps(self, t0, h, *state, t_end=T + h, h_cap=h,
                                                    first=CROSS_FIRST, cross=T)
            row = project(T, *hermite(T, ts, hs, x0, v0, x1, v1))
        except (StepFailure, ValueError, np.linalg.LinAlgError):
            raise failure from None
        self._ahead = (self.x.copy(), self.xd.copy(), self.xdd.copy(), self.lam.copy(),
                       self.res.copy(), self._s_ratio(self.lin))
        for buf, value in zip((self.x, self.xd, self.xdd, self.lam, self.res), row):
            buf[:] = value
        self._count("crossed", T)
        return failure.iteration + it

    def _take_ahead(self) -> int:
        """The step after a crossed grid point: the state the crossing computed (no iteration)."""
        (*state, self._ratio), self._ahead = self._ahead, None
        for buf, value in zip((self.x, self.xd, self.xdd, self.lam, self.res), state):
            buf[:] = value
        return 0

    def _step_over(self, t, h, x, xd, xdd, lam) -> int:
        """From t (the start of the step onto a landing) to t + 2h in steps of h/2, h, h/2, which
        keep clear of the landing and never exceed h (stability); the result is left in the
        stepper's buffers as for a step of h."""
        it = 0
        for frac in (0.5, 1.0, 0.5):
            it += self._step(t, frac * h, x, xd, xdd, lam)
            t += frac * h
            x, xd, xdd, lam = self.x.copy(), self.xd.copy(), self.xdd.copy(), self.lam.copy()
        return it

    def _step(self, t, h, x, xd, xdd, lam) -> int:
        """One step; on a Newton failure the step as sub-steps under the error control (module
        docstring), counted."""
        try:
            return self._newton(t, h, x, xd, xdd, lam)
        except StepFailure as exc:
            first = exc
        h_max = self.scheme.h_max(self.omega_max)
        if h > h_max:                           # no rescue for a step past the stability limit
            raise StepFailure(f"{first}; not retried as sub-steps: h = {h:g} s exceeds the "
                              f"stability limit h_max = {h_max:.3g} s",
                              iteration=first.iteration, nonfinite=first.nonfinite,
                              outcome=first.outcome and replace(first.outcome, h_max=h_max)
                              ) from None
        try:
            it, _ = substeps(self, t, h, x, xd, xdd, lam)
        except StepFailure as exc:
            last = exc.outcome      # (None: the error test rejected every sub-step, as C's)
            if last is not None and last.kind == fail_code("NO_STEP"):
                last = None
            raise StepFailure(f"{first}; retried as sub-steps under error control: {exc}",
                              iteration=exc.iteration, nonfinite=exc.nonfinite,
                              crossable=True, outcome=first.outcome and Outcome(
                                  fail_code("NO_STEP"), t + h, h, first.iteration,
                                  first=first.outcome, last=last)) from None
        self._count("substepped", t + h)
        return first.iteration + it

    def _count(self, what: str, t1: float) -> None:
        setattr(self, f"{what}_steps", getattr(self, f"{what}_steps") + 1)
        times = getattr(self, f"{what}_times")
        if len(times) < FLOOR_TIMES_KEPT:
            times.append(float(t1))

    # -- the Newton iteration, in the C runtime's helpers (sg_nullspace.c.inc ns_*) ---------------
    def _newton(self, t, h, x, xd, xdd, lam) -> int:
        """Newton from the predictor (steps 1–6 of the module docstring, one helper each as the
        C's step_nullspace): the accepted state at t + h in the stepper's buffers; its
        iterations.  Raises StepFailure (with its outcome)."""
        t1 = t + h
        self._predict(x, xd, xdd, lam, h)
        H_n = self._chart.H_at(t, x, xd, xdd) if self._chart else None    # symmetric chart
        if self._corrected:
            self._chart.start_dynamics(self._dynamics, t, x, xd, xdd, lam)   # M₀, a₀ of the jerk
        upd = upd_prev = math.inf
        for it in range(self.max_iter + 1):
            # 1. constraints at the estimate (the paper's x₀ …: the stepper's buffers)
            cons = self._constraints(t1, self.x, self.xd, self.xdd)
            factored = False
            if it > 0:
                done, factored = self._test(t1, h, it, upd, cons)
                if done:
                    return it
            k, dyn, r_R = self._linearize(t1, it, factored, cons)         # 2.-3.
            alpha_n, alpha_dot_n, alpha_ddot_n = self._reproject(x, xd, xdd)   # 4.
            alpha, alpha_dot, alpha_ddot = self._newmark_alpha(            # 5.
                t1, h, it, k, r_R, alpha_n, alpha_dot_n, alpha_ddot_n)
            if self._chart:
                # m = 0: modified Newton, the LU kept while the updates shrink (chart.py)
                reuse = it > 0 and upd <= REUSE_RATE * upd_prev
                self._chart_step(t1, h, it, k, cons, dyn, r_R, H_n, x, xd, xdd, lam,
                                 alpha, alpha_dot, alpha_ddot, reuse)
            self.alpha, self.alpha_dot, self.alpha_ddot = alpha, alpha_dot, alpha_ddot
            self._recover(dyn)                                             # 6.
            upd_prev, upd = upd, self._update_norm()
            if not math.isfinite(upd):
                raise StepFailure(f"non-finite Newton update at t = {t1:.9g}, iteration {it + 1}",
                                  iteration=it + 1, nonfinite=True, outcome=Outcome(
                                      fail_code("NONFINITE_UPDATE"), t1, h, it + 1))
        raise AssertionError("unreachable")

    def _test(self, t1, h, it, upd, cons) -> tuple[bool, bool]:
        """1. Newton's test at iterate ``it`` > 0 (``cons``: q, H, q̇, Ḣ, q̈, Ḧ there; ``upd`` the
        last update), as ns_test: (accepted, H factored here).  On acceptance the residuals,
        ω_max and the chart's next H_n; StepFailure when the iterations are used up."""
        lin = self.lin
        q, H, q_dot, H_dot, q_ddot, H_ddot = cons
        x1, xd1, xdd1 = self.x, self.xd, self.xdd
        if not math.isfinite(upd):
            raise StepFailure(f"non-finite Newton iterate at t = {t1:.9g}, iteration {it}",
                              iteration=it, nonfinite=True, outcome=Outcome(
                                  fail_code("NONFINITE_ITERATE"), t1, h, it))
        factored = False
        rq, rqd, rqdd = norm2(q), norm2(q_dot), norm2(q_ddot)
        resid = max(rq, h * rqd, h * h * rqdd)
        ok = resid <= self.constraint_tol and self._converged(upd)
        if not ok and (self._may_be_at_floor(upd) or it == self.max_iter):
            # above tol: is the update at the round-off floor of this iterate?
            self._factor(lin, H, t1, it)
            factored = True
            self._floor_at(lin, x1, xd1, xdd1, H_dot, H_ddot)
            ok = resid <= self.constraint_tol and self._at_floor(t1)
        if ok:
            self.res[0], self.res[1], self.res[2] = rq, rqd, rqdd
            if self.estimate:
                if factored or it < 2:
                    # ω_max of the reduced system linearized at the accepted state
                    if not factored:
                        self._factor(lin, H, t1, it)
                    lin.particular(q, q_dot, q_ddot, H, H_dot, H_ddot, xd1, xdd1)
                    M, _, K, C = self._dynamics(t1, x1, xd1, xdd1, self.lam)
                    lin.reduce(M, C, K)
                # else that of the last iteration (M_R, K_R as they are; module doc)
                self.omega_max = lin.omega_max()
            if self._chart:
                self._chart.accept(t1, x1, xd1, H, H_dot)      # symmetric chart: next H_n
            return True, factored
        if it == self.max_iter:
            ratio = self._s_ratio(lin)
            raise self._not_converged(
                t1, it, upd, f"; max(|q|, h|q_dot|, h²|q_ddot|) {resid:.3e} (tolerance "
                f"{self.constraint_tol:.1e}); s_min/s_max of H {ratio:.2e}",
                residual=resid, s_ratio=ratio)
        return False, factored

    def _linearize(self, t1, it, factored, cons) -> tuple:
        """2.-3. One factorization of H at the iterate (N_H, H⁺, particular solutions; reused
        when the test factored it) and the linearized equilibrium there, as ns_linearize:
        M_R, C_R, K_R in the linearization, x_p in ``self._x_p``, the right-hand side of Eq. 51
        in ``self._rhs``; returns (k, (M, f, K, C), r_R = N_Hᵀ rhs of Eq. 52)."""
        lin = self.lin
        q, H, q_dot, H_dot, q_ddot, H_ddot = cons
        x1, xd1, xdd1 = self.x, self.xd, self.xdd
        k = lin.k if factored else self._factor(lin, H, t1, it)
        lin.particular(q, q_dot, q_ddot, H, H_dot, H_ddot, xd1, xdd1)   # Eqs. 33–48
        np.add(x1, lin.dx_p, out=self._x_p)                      # Eq. 33 (corrected form)
        M, f, K, C = self._dynamics(t1, x1, xd1, xdd1, self.lam)
        lin.reduce(M, C, K)                                      # M_R, C_R, K_R of Eq. 52
        # right-hand side of Eq. 51 written about the estimate (Δ· = · − ·₁):
        # f − M ẍ₁ − K_L Δx_p − C_L Δẋ_p − M Δẍ_p = f − M ẍ_p − K_L (x_p − x₁) − C_L (ẋ_p − ẋ₁)
        rhs, w = self._rhs, self._w
        dot_into(M, lin.xdd_p, rhs)
        np.subtract(f, rhs, out=rhs)                             # Eq. 51: f_L − M_L ẍ_p
        dot_into(K, lin.dx_p, w)
        rhs -= w                                                 # Eq. 51: − K_L x_p
        dot_into(C, lin.dxd_p, w)
        rhs -= w                                                 # Eq. 51: − C_L ẋ_p
        return k, (M, f, K, C), lin.N.T @ rhs                    # Eq. 52: N_Gᵀ(...)

    def _reproject(self, x, xd, xdd) -> tuple:
        """4. The state (x, ẋ, ẍ) at t re-projected onto this linearization (Eqs. 56–58, least
        squares = Nᵀ(·), N_H orthonormal), as ns_reproject: (α_n, α̇_n, α̈_n)."""
        lin = self.lin
        NT = lin.N.T
        alpha_n = NT @ (x - self._x_p)                                        # Eq. 56
        alpha_dot_n = NT @ (xd - lin.xd_p - lin.Xd_p @ alpha_n)               # Eq. 57
        alpha_ddot_n = NT @ (xdd - lin.xdd_p - lin.Xdd_p1 @ alpha_n
                             - lin.X_p2 @ alpha_dot_n)                        # Eq. 58
        return alpha_n, alpha_dot_n, alpha_ddot_n

    def _newmark_alpha(self, t1, h, it, k, r_R, alpha_n, alpha_dot_n, alpha_ddot_n) -> tuple:
        """5. Newmark in α and the reduced Eq. 52 for α̈(t + h), as ns_newmark_alpha:
        (α, α̇, α̈) at t + h; StepFailure for a singular M_R + γh C_R + βh² K_R."""
        lin = self.lin
        gam, bet = self.scheme.gamma, self.scheme.beta
        M_R, C_R, K_R = lin.M_R, lin.C_R, lin.K_R
        alpha = h * h * (0.5 - bet) * alpha_ddot_n + alpha_n + alpha_dot_n * h   # â
        alpha_dot = h * (1.0 - gam) * alpha_ddot_n + alpha_dot_n                 # â̇
        S = gam * h * C_R + M_R + bet * h * h * K_R          # M_R + γh C_R + βh² K_R
        r = r_R - C_R @ alpha_dot - K_R @ alpha              # Eq. 52 with the predictors
        alpha_ddot = np.empty(k)
        try:
            solve_small(S, r, alpha_ddot)                    # Eq. 52 for α̈(t+h)
        except np.linalg.LinAlgError:
            raise StepFailure(
                f"singular reduced step matrix M_R + γh C_R + βh² K_R at t = {t1:.9g}, "
                f"iteration {it} (k = {k})", iteration=it,
                outcome=Outcome(fail_code("SINGULAR_REDUCED"), t1, h, it, k=k)) from None
        alpha = alpha + bet * h * h * alpha_ddot             # Newmark: α(t+h)
        alpha_dot = alpha_dot + gam * h * alpha_ddot         # Newmark: α̇(t+h)
        return alpha, alpha_dot, alpha_ddot

    def _chart_step(self, t1, h, it, k, cons, dyn, r_R, H_n, x, xd, xdd, lam, alpha, alpha_dot,
                    alpha_ddot, reuse=False) -> None:
        """The symmetric chart or the mass metric (issue 11): (α, α̇, α̈) at t + h from the
        3k × 3k system on N_s (chart.py; N_H for the end chart) instead of steps 4–5, whose
        result it overwrites in place (they still run, so that chart="end" stays bit for bit the
        paper's step and a singular reduced matrix fails the step in both).  Without constraints
        the system's LU is kept across iterations, ``reuse``: modified Newton (chart.py)."""
        lin, (M, _, K, C), H = self.lin, dyn, cons[1]
        N_s = lin.N if self._chart_end else self._chart.basis(H_n, H, k, t1=t1, iteration=it)
        mass = self.metric == "mass"
        # the corrected step: the jerk difference D at this iterate (λ terms lagged)
        jerk = (self._chart.jerk(t1, h, M, K, C, self.x, self.xd, self.xdd, xdd, cons[3], lam,
                                 self.lam) if self._corrected else None)
        W = self._chart.metric(M) if self._corrected else M
        solve_chart_step(N_s, lin, self._x_p, r_R, x, xd, xdd, h, self.scheme.gamma,
                         self.scheme.beta, alpha, alpha_dot, alpha_ddot, t1=t1, iteration=it,
                         M=W if mass else None, jerk=jerk,
                         newton=(self._lu, reuse, self.xd, self.xdd) if self.m == 0 else None)

    def _recover(self, dyn) -> None:
        """6. The next iterate from (α, α̇, α̈): x, ẋ, ẍ (Eqs. 34, 38, 45) and λ (Eq. 51, least
        squares by H⁺ᵀ) into the stepper's buffers, the previous one kept, as ns_recover."""
        lin, (M, f, K, C) = self.lin, dyn
        N, x_p = lin.N, self._x_p
        x1, xd1, xdd1 = self.x, self.xd, self.xdd
        rhs, w, w2 = self._rhs, self._w, self._w2
        self._save_old()
        np.dot(N, self.alpha, out=x1)
        x1 += x_p                                            # Eq. 34
        np.dot(N, self.alpha_dot, out=xd1)
        xd1 += lin.xd_p
        np.dot(lin.Xd_p, self.alpha, out=w2)
        xd1 += w2                                            # Eq. 38
        np.dot(N, self.alpha_ddot, out=xdd1)
        xdd1 += lin.xdd_p
        np.dot(lin.Xdd_p1, self.alpha, out=w2)
        xdd1 += w2
        np.dot(lin.X_p2, self.alpha_dot, out=w2)
        xdd1 += w2                                           # Eq. 45
        if self.m:
            # Eq. 51: Gᵀλ = M ẍ + C_L(ẋ − ẋ₁) + K_L(x − x₁) − f (least squares, H⁺ᵀ)
            dot_into(M, xdd1, rhs)
            rhs -= f
            np.subtract(xd1, self._xd_old, out=w)
            dot_into(C, w, w2)
            rhs += w2
            np.subtract(x1, self._x_old, out=w)
            dot_into(K, w, w2)
            rhs += w2
            lin.lam_from(rhs, self.lam)                      # Eq. 51 (H⁺ᵀ)

    def _factor(self, lin, H, t1, it) -> int:
        """Factor H (rank, N_H, H⁺) at the current iterate; keeps the run's range of ranks."""
        try:
            k = lin.factor(H)
        except np.linalg.LinAlgError as exc:
            raise StepFailure(f"factorization of H failed at t = {t1:.9g}, iteration {it}: {exc}",
                              iteration=it, outcome=Outcome(
                                  fail_code("SPARSE_SINGULAR" if "sparse LU" in str(exc) else
                                            "FACTOR_NONFINITE"), t1, math.nan, it)) from None
        self.min_rank = min(self.min_rank, lin.rank)
        self.max_rank = max(self.max_rank, lin.rank)
        return k

    @staticmethod
    def _s_ratio(lin) -> float:
        """s_min/s_max of the kept (rank) singular values of the last factorization."""
        s_max, s_min = lin.s_range()
        return s_min / s_max if s_max > 0.0 else math.nan

    def _floor_at(self, lin, x, xd, xdd, H_dot, H_ddot) -> tuple:
        """The round-off floor (base module) at an iterate from the factorization ``lin`` of H
        there: κ over the kept singular values (the rank decision's), ‖Ḣ‖_F, ‖Ḧ‖_F."""
        s_max, s_min = lin.s_range()
        if not s_max > 0.0:
            return self._floor(x, xd, xdd, 0.0, 0.0)
        return self._floor(x, xd, xdd, s_max, s_min, norm2(_entries(H_dot)),
                           norm2(_entries(H_ddot)))


def _entries(A) -> np.ndarray:
    """The stored entries of a dense or CSR matrix (for its Frobenius norm)."""
    return A.ravel() if type(A) is np.ndarray else A.data
