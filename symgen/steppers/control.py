"""Error-controlled variable steps (``dt="auto"``): the local error estimate of a Newmark step, its
weighted norm, and the step-size controller.  Derivation and choices: docs/variable-step.md.

The estimate (scheme − exact, leading terms, for every γ, β) of a step of h from (x₀, ẋ₀, ẍ₀) to
(x₁, ẋ₁, ẍ₁), with Δ₁ = ẍ₁ − ẍ₀ and, from the step before (h₀, Δ₀), D ≈ x⁽⁴⁾:

    e_x = (β − 1/6) h² Δ₁ + h⁴/24 · D        e_ẋ = (γ − ½) h Δ₁ + h³/12 · D
    D = (Δ₁/h − Δ₀/h₀) · 2/(h + h₀)

(Zienkiewicz–Xie's (β − 1/6) h² Δ₁ plus the next term, which carries the estimate where the
first vanishes: β = 1/6 for x, γ = ½ — every preset — for ẋ.)  Both are projected onto the
tangent space of the constraints at the new state, N Nᵀ e (N the orthonormal null-space basis of
the step's last factorization): the step holds q = q̇ = 0 to round-off, so the error lies in the
motion α, not across the constraints — the error test is on α and α̇ and needs no index scaling.
The norm is the WRMS norm of SUNDIALS, RADAU5 and Chrono over the 2n entries of (x, ẋ),
weights atol_i + rtol · max(|y₀_i|, |y₁_i|); a step is accepted when it is ≤ 1.

That estimate is x₁ − x̂₁ (and ẋ₁ − x̂̇₁) for x̂₁ = x₀ + hẋ₀ + ∫₀ʰ(h − s) p(s) ds, x̂̇₁ = ẋ₀ + ∫₀ʰ p,
with p the quadratic through ẍ at the last two accepted points and the new one.  The symmetric
chart with the mass metric and γ = ½ is the corrected step (docs/fourth-order-step.md), which
cancels those terms: there the estimate is the same construction with p of degree
:data:`HISTORY_DEGREE` through the last accepted accelerations (``history``), taken on the step's
own x₁, ẋ₁ (docs/variable-step.md, "The estimate of the corrected step").  The index-3 step
(HHT-α) is estimated by the same construction at degree :data:`HHT_DEGREE` on the true
accelerations b̃₁ = (ẍ₁ + α b̃₀)/(1 + α) instead of its algorithmic ẍ (which HHT's equilibrium at
t + (1 + α)h shifts by αh x⃛), projected along M⁻¹Hᵀ onto the tangent space; under the control
each of its steps starts from ẍ₀ with the lag rescaled to its h (:meth:`start_acceleration`;
docs/variable-step.md, "The index-3 step (HHT-α): its own local error").
"""
from __future__ import annotations

import math

import numpy as np

from ..runtime_constants import (CODES, CTL_ERR_FLOOR, CTL_GROW_MAX, CTL_NEWTON_SHRINK, CTL_ORDER,
                                 CTL_H_ROUNDOFF, CTL_ROUNDOFF, CTL_SAFETY, CTL_SHRINK_MIN, HHT_DEGREE as _HHT,
                                 HIST_DEGREE, SLIVER, STABILITY_FRACTION, SUBSTEP_ATOL,
                                 SUBSTEP_FIRST, SUBSTEP_RTOL)
from ..settings import corrected_step
from .linalg import solve_small

__all__ = ["ErrorEstimate", "StepController", "FLAGS", "Flag", "substeps", "hermite",
           "dense_output", "dense_row_reason", "HISTORY_DEGREE", "HHT_DEGREE", "corrected_step",
           "round_off_step"]

#: Degree of the acceleration polynomial of the corrected step's estimate (measured on Andrews and
#: the double four-bar: degree 3 overestimates 2.8–25× where the step is fourth order, 5 is within
#: 1.6× of the true local error in x; docs/variable-step.md)
HISTORY_DEGREE = HIST_DEGREE
#: Degree of the polynomial through the index-3 step's true accelerations b̃ (HHT's local error is
#: O(h³); degree 2 leaves O(h⁴): within 1.4 % of the true local error, docs/variable-step.md)
HHT_DEGREE = _HHT
#: The corrected step's estimate is never taken below this times |x₁| + |x₀| + h|ẋ₀| (for ẋ:
#: |ẋ₁| + |ẋ₀|), the round-off of its differences (64 ε), nor its weights below that times
#: s_max/s_min of H (the constraint solve's round-off: 1e-8 in ẋ at s_min/s_max ~ 1e-7 on the
#: double four-bar, where rtol 1e-11 found no step before)
ROUNDOFF = CTL_ROUNDOFF


def round_off_step(t: float) -> float:
    """The shortest try that advances t: CTL_H_ROUNDOFF (64 ε)·max(1, |t|) (the error control's
    and the sub-steps' floor, the C runtime's ctl_step)."""
    return CTL_H_ROUNDOFF * max(1.0, abs(t))


#: Gauss–Legendre nodes and weights on [0, 1] (4 points: exact for the degree-6 integrand (h − s) p)
_GL_S = (0.5 - 0.8611363115940526 / 2, 0.5 - 0.3399810435848563 / 2,
         0.5 + 0.3399810435848563 / 2, 0.5 + 0.8611363115940526 / 2)
_GL_W = (0.3478548451374538 / 2, 0.6521451548625461 / 2,
         0.6521451548625461 / 2, 0.3478548451374538 / 2)


class Flag:
    """Bits of ``Result.flags`` (one integer per recorded row)."""

    REJECTED_ERROR = CODES["SG_FLAG_REJECTED_ERROR"]  #: a try was rejected by the error test
    REJECTED_NEWTON = CODES["SG_FLAG_REJECTED_NEWTON"]  #: … because Newton did not converge
    FLOOR = CODES["SG_FLAG_FLOOR"]          #: accepted at the round-off floor of Newton (base)
    STABILITY = CODES["SG_FLAG_STABILITY"]  #: h was cut to the stability limit 0.9·h_max(ω_max)
    SUBSTEPPED = CODES["SG_FLAG_SUBSTEPPED"]  #: the row's interval took more than one step
    NO_ESTIMATE = CODES["SG_FLAG_NO_ESTIMATE"]  #: no error estimate (the first step)


#: name → bit, as documented in the Result and the docs
FLAGS = {"rejected-error": Flag.REJECTED_ERROR, "rejected-newton": Flag.REJECTED_NEWTON,
         "floor": Flag.FLOOR, "stability": Flag.STABILITY, "substepped": Flag.SUBSTEPPED,
         "no-estimate": Flag.NO_ESTIMATE}


class ErrorEstimate:
    """The local error estimate of the module docstring for one scheme, with the previous
    accepted step's Δ₀, h₀ kept between calls."""

    def __init__(self, scheme, n: int, rtol: float, atol: np.ndarray, *,
                 history: bool = False, index3: bool = False):
        self.gamma, self.beta = float(scheme.gamma), float(scheme.beta)
        self.euclidean_fallbacks = 0    # estimates projected by N Nᵀ: NᵀMN singular (_project)
        self.rtol, self.atol = float(rtol), np.asarray(atol, dtype=float)
        self.n = n
        self._d0 = np.zeros(n)      # Δ₀ = ẍ₁ − ẍ₀ of the last accepted step …
        self._h0 = math.nan         # … and its h (NaN: none yet)
        # history: (τ, ẍ) of the last `degree` accepted points, τ relative to the last one; the
        # index-3 step keeps (τ, b̃) instead, b̃ its true accelerations (alpha: HHT's α, 0: Newmark)
        self.history = history or index3
        self.index3, self.alpha = index3, float(getattr(scheme, "alpha", 0.0))
        self.degree = HHT_DEGREE if index3 else HISTORY_DEGREE
        self._hist: list = []

    def reset(self) -> None:
        """Forget the previous steps (the next estimate has no D term)."""
        self._h0 = math.nan
        self._hist = []

    def _true_acceleration(self, xdd0, xdd1):
        """The index-3 step's b̃₁ = (ẍ₁ + α b̃₀)/(1 + α), b̃₀ the last kept (ẍ₀ when none): HHT's
        M ẍ₁ = (1 + α) g₁ − α g₀ with g = M b̃; else ẍ₁."""
        if not self.index3:
            return xdd1
        b0 = self._hist[-1][1] if self._hist else xdd0
        return (xdd1 + self.alpha * b0) / (1.0 + self.alpha)

    def quadrature(self, h, x0, xd0, xdd0, x1, xd1, xdd1):
        """(x₁ − x̂₁, ẋ₁ − x̂̇₁, whether p had degree ≥ 2): p through the kept (τ, ẍ) and (h, ẍ₁)
        (index-3: b̃), its integrals by 4-point Gauss–Legendre."""
        pts = (self._hist or [(0.0, xdd0)]) + [(h, self._true_acceleration(xdd0, xdd1))]
        ex = x1 - x0 - h * xd0
        ev = xd1 - xd0
        for sg, wg in zip(_GL_S, _GL_W):
            s = sg * h
            for j, (tj, vj) in enumerate(pts):
                L = 1.0
                for m, (tm, _) in enumerate(pts):
                    if m != j:
                        L *= (s - tm) / (tj - tm)
                c = wg * h * L
                ev -= c * vj
                ex -= (c * (h - s)) * vj
        return ex, ev, len(pts) >= 3

    def components(self, h, xdd0, xdd1) -> tuple[np.ndarray, np.ndarray, bool]:
        """(e_x, e_ẋ, whether the D term was available) of the module docstring, unprojected."""
        d1 = xdd1 - xdd0
        ex = (self.beta - 1.0 / 6.0) * h * h * d1
        ev = (self.gamma - 0.5) * h * d1
        have_d = self._h0 == self._h0
        if have_d:
            D = (d1 / h - self._d0 / self._h0) * (2.0 / (h + self._h0))
            ex += (h ** 4 / 24.0) * D
            ev += (h ** 3 / 12.0) * D
        return ex, ev, have_d

    def _project(self, N, M, *es):
        """Each e projected: N Nᵀ e, or with M along M⁻¹Hᵀ: N (NᵀMN)⁻¹ NᵀM e (N Nᵀ e when NᵀMN is
        singular, counted in ``euclidean_fallbacks``: the run's meta["fallbacks"]).  The index-3
        step corrects the last step's q̇ by a jump of ẋ along M⁻¹Hᵀ whatever h is; that direction
        carries no motion."""
        if M is None:
            return [N @ (N.T @ e) for e in es]
        G, c, out = N.T @ (M @ N), np.empty(N.shape[1]), []
        for e in es:
            try:
                solve_small(G, N.T @ (M @ e), c)
            except np.linalg.LinAlgError:
                self.euclidean_fallbacks += 1
                return [N @ (N.T @ e) for e in es]
            out.append(N @ c)
        return out

    def start_acceleration(self, h, xdd0):
        """The ẍ₀ a step of h starts from: HHT's ẍ₀ lags the true acceleration b̃₀ by αh₀x⃛ of
        the step before (h₀); the index-3 HHT step of h starts from b̃₀ + (h/h₀)(ẍ₀ − b̃₀), whose
        lag is αh x⃛ (else its ẋ has an O(h²) error (1 − γ)α(h₀ − h)h x⃛)."""
        if not (self.index3 and self.alpha != 0.0 and self._hist and self._h0 == self._h0):
            return xdd0
        b0 = self._hist[-1][1]
        return b0 + (h / self._h0) * (xdd0 - b0)

    def errors(self, h, x0, xd0, xdd0, x1, xd1, xdd1, N=None, M=None) -> tuple:
        """(e_x, e_ẋ, whether the D term was available) for the step of h, projected with ``N``
        (the orthonormal tangent basis of the step; None: no projection) — with ``M`` (the mass
        matrix at the new state; the index-3 step) along M⁻¹Hᵀ, N (NᵀMN)⁻¹NᵀM e — and, for the
        history estimate, held at its round-off floor (absolute values then)."""
        if self.history:
            ex, ev, have_d = self.quadrature(h, x0, xd0, xdd0, x1, xd1, xdd1)
        else:
            ex, ev, have_d = self.components(h, xdd0, xdd1)
        if N is not None and N.shape[1] < self.n:
            ex, ev = self._project(N, M, ex, ev)
        if self.history:
            # below the round-off of x₁ − x₀ − hẋ₀ the quadrature's difference is noise
            ex = np.maximum(np.abs(ex), ROUNDOFF * (np.abs(x1) + np.abs(x0) + h * np.abs(xd0)))
            ev = np.maximum(np.abs(ev), ROUNDOFF * (np.abs(xd1) + np.abs(xd0)))
        return ex, ev, have_d

    def norm(self, h, x0, xd0, xdd0, x1, xd1, xdd1, N=None, M=None,
             cond: float = 1.0) -> tuple[float, bool]:
        """(WRMS norm of the estimate, whether the D term was available) for the step of h;
        ``N``, ``M``: the projection of :meth:`errors`; ``cond``: s_max/s_min of H at the step's
        end (the history estimate's weights are never below its differences' round-off times
        it: next to a singular configuration the constraint solve amplifies round-off so)."""
        ex, ev, have_d = self.errors(h, x0, xd0, xdd0, x1, xd1, xdd1, N, M)
        wx = self.atol + self.rtol * np.maximum(np.abs(x0), np.abs(x1))
        wv = self.atol + self.rtol * np.maximum(np.abs(xd0), np.abs(xd1))
        if self.history and not self.index3 and cond > 1.0:
            wx = np.maximum(wx, (ROUNDOFF * cond) * (np.abs(x1) + np.abs(x0) + h * np.abs(xd0)))
            wv = np.maximum(wv, (ROUNDOFF * cond) * (np.abs(xd1) + np.abs(xd0)))
        s = float(np.dot(ex / wx, ex / wx) + np.dot(ev / wv, ev / wv))
        return math.sqrt(s / (2 * self.n)) if self.n else 0.0, have_d

    def accept(self, h, xdd0, xdd1) -> None:
        """Keep Δ₁ and h of the accepted step for the next estimate's D (with ``history``: ẍ₁ —
        index-3: b̃₁ — at τ = 0, the kept points moved back by h)."""
        np.subtract(xdd1, xdd0, out=self._d0)
        self._h0 = float(h)
        if self.history:
            b1 = np.array(self._true_acceleration(xdd0, xdd1))
            hist = self._hist or [(0.0, xdd0.copy())]
            self._hist = [(tau - h, v) for tau, v in hist[-(self.degree - 1):]]
            self._hist.append((0.0, b1))


class StepController:
    """The next step from the error norms (a PI controller, Gustafsson's form as in RADAU5):

        h_new = h · clamp(0.9 · err^(−0.7/k) · err_prev^(0.4/k), 0.2, 5),   k = 3

    (the estimate is O(h³)); after a rejection h_new = h · max(0.2, 0.9 · err^(−1/k)) and the
    next step may not grow; a Newton failure quarters h.  ``cap`` bounds every step (h_max, the
    stability limit, the end of the span)."""

    ORDER = CTL_ORDER
    SAFETY = CTL_SAFETY
    GROW_MAX = CTL_GROW_MAX
    SHRINK_MIN = CTL_SHRINK_MIN
    NEWTON_SHRINK = CTL_NEWTON_SHRINK

    def __init__(self):
        self._err_prev = math.nan
        self._no_grow = False

    def accepted(self, h: float, err: float) -> float:
        """The next h after an accepted step of h with error norm ``err`` (≤ 1)."""
        k = self.ORDER
        e = max(err, CTL_ERR_FLOOR)
        fac = self.SAFETY * e ** (-0.7 / k)
        if self._err_prev == self._err_prev:
            fac *= max(self._err_prev, CTL_ERR_FLOOR) ** (0.4 / k)
        fac = min(self.GROW_MAX, max(self.SHRINK_MIN, fac))
        if self._no_grow:
            fac = min(fac, 1.0)
        self._err_prev, self._no_grow = e, False
        return h * fac

    def rejected(self, h: float, err: float) -> float:
        """The retry's h after the error test rejected a step of h (err > 1)."""
        self._no_grow = True
        if not err == err:                                  # NaN: treat as a Newton failure
            return h * self.NEWTON_SHRINK
        return h * max(self.SHRINK_MIN, self.SAFETY * err ** (-1.0 / self.ORDER))

    def newton_failed(self, h: float) -> float:
        """The retry's h after Newton did not converge on a step of h."""
        self._no_grow = True
        return h * self.NEWTON_SHRINK


def initial_step(scheme, omega: float, span: float, rtol: float, h_cap: float) -> float:
    """The first step: a fraction of the period 2π/ω_max scaled by rtol^(1/3) (the estimate is
    O(h³)), never above 0.9 of the stability limit or ``h_cap``; without a frequency (ω = 0 or
    unknown) 1e-3 of the span scaled the same way."""
    scale = (rtol / 1e-6) ** (1.0 / 3.0)
    if omega == omega and omega > 0.0:
        h = 0.01 * 2.0 * math.pi / omega * scale
        h_stab = scheme.h_max(omega)
        if h_stab == h_stab:
            h = min(h, STABILITY_FRACTION * h_stab)
    else:
        h = 1e-3 * span * scale
    return min(h, h_cap)


def tries(stepper, estimate: ErrorEstimate, controller: StepController, t: float, h: float,
          state, bound, too_small, count) -> tuple:
    """Tries of one step from t (``state`` = x, ẋ, ẍ, λ; the stepper's controlled steps) until
    one is accepted: (h, Newton iterations, error norm, whether the estimate had its D term,
    flags, the controller's next h).  ``bound(h, t)`` → (the try's h, a flag when it was cut);
    ``too_small(h, t)``: give up, returning (None, 0, nan, False, flags, h).  A try rejected by a
    Newton failure (or another numerical failure, :data:`~symgen.steppers.base.NUMERICAL_ERRORS`;
    anything else propagates) or by the error test leaves the stepper as it was and is counted in
    ``count.rejected_newton`` / ``count.rejected_error``; ``count.last_failure`` keeps the last
    failure.  The one loop of the variable step and of the fixed step's sub-steps."""
    from .base import NUMERICAL_ERRORS

    flags = 0
    while True:
        h_try, cut = bound(h, t)
        if too_small(h_try, t):
            return None, 0, math.nan, False, flags, h_try
        floor0, saved = stepper.floor_steps, stepper.checkpoint()
        try:
            iters = stepper.step(t, h_try, (state[0], state[1],
                                            estimate.start_acceleration(h_try, state[2]),
                                            state[3]), controlled=True).iteration
            N = (getattr(getattr(stepper, "lin", None), "N", None)   # (index-3 sub-steps: none)
                 if stepper.m and (stepper.method == "nullspace" or estimate.index3) else None)
            M = (stepper.kernels.dynamics(t + h_try, stepper.x, stepper.xd, stepper.xdd,
                                          stepper.lam)[0]
                 if estimate.index3 and N is not None else None)
            cond = (_cond(stepper.lin) if N is not None and estimate.history
                    and not estimate.index3 else 1.0)                # (the corrected step's)
            err, have_d = estimate.norm(h_try, *state[:3], stepper.x, stepper.xd, stepper.xdd,
                                        N, M, cond)
        except NUMERICAL_ERRORS as exc:
            stepper.rollback(saved)
            flags |= Flag.REJECTED_NEWTON
            count.rejected_newton += 1
            count.last_failure = exc
            h = controller.newton_failed(h_try)
            continue
        if not err <= 1.0:                                     # (a NaN estimate is rejected)
            stepper.rollback(saved)
            flags |= Flag.REJECTED_ERROR
            count.rejected_error += 1
            h = controller.rejected(h_try, err)
            continue
        flags |= cut | (0 if have_d else Flag.NO_ESTIMATE)
        flags |= Flag.FLOOR if stepper.floor_steps > floor0 else 0
        return h_try, iters, err, have_d, flags, h


def _cond(lin) -> float:
    """s_max/s_min of the kept singular values of H at the step's end (1: none kept)."""
    s_max, s_min = lin.s_range()
    return s_max / s_min if s_min > 0.0 else 1.0


def stretched(h: float, rest: float) -> float:
    """``h``, or the whole ``rest`` of a span when h reaches it or would leave a sliver (< 1 %)."""
    return rest if (h >= rest or rest - h <= SLIVER * h) else h


def substeps(stepper, t: float, H: float, x, xd, xdd, lam, *, rtol: float = SUBSTEP_RTOL,
             atol: float = SUBSTEP_ATOL, t_end: float | None = None, h_cap: float = math.inf,
             first: float = SUBSTEP_FIRST, cross: float | None = None):
    """A fixed step of ``H`` that Newton could not close, as internal sub-steps chosen by
    the error control (issue 21 §2; :func:`tries`, the first ``first``·h, none longer than
    ``h_cap``; the C runtime's ``substeps`` is this), ending on ``t_end`` (default t + h).
    The end state is left in the stepper's buffers as for one step of H; returns the Newton
    iterations of the accepted sub-steps and, with ``cross`` = a time inside the span, the
    sub-step across it, (t, h, x, ẋ, x₁, ẋ₁) for its interpolant (:func:`hermite`; else None).
    Raises the last StepFailure when a sub-step falls to round-off."""
    from types import SimpleNamespace

    from .base import StepFailure
    from .outcome import Outcome, fail_code

    t_end = t + H if t_end is None else t_end
    est = ErrorEstimate(stepper.scheme, stepper.n, rtol, np.full(stepper.n, atol))
    ctl = StepController()
    count = SimpleNamespace(rejected_error=0, rejected_newton=0, last_failure=None)
    cur = (x.copy(), xd.copy(), xdd.copy(), lam.copy())
    tc, h, iters, seg = t, first * H, 0, None
    while tc < t_end:
        h_try, it, err, have_d, _, h = tries(
            stepper, est, ctl, tc, h, cur, lambda h, tc: (stretched(min(h, h_cap), t_end - tc), 0),
            lambda h, tc: h <= round_off_step(tc), count)
        if h_try is None:
            raise (count.last_failure if isinstance(count.last_failure, StepFailure) else
                   StepFailure(f"no sub-step from t = {tc:.9g} met the error tolerance "
                               f"(rtol {rtol:g}) down to round-off", outcome=Outcome(
                                   fail_code("NO_STEP"), tc, h, 0)))
        iters += it
        est.accept(h_try, cur[2], stepper.xdd)
        t1 = t_end if h_try == t_end - tc else tc + h_try
        if cross is not None and tc < cross <= t1:
            seg = (tc, h_try, cur[0], cur[1], stepper.x.copy(), stepper.xd.copy())
        cur = (stepper.x.copy(), stepper.xd.copy(), stepper.xdd.copy(), stepper.lam.copy())
        tc = t1
        h = ctl.accepted(h_try, err if have_d else CTL_ERR_FLOOR)
    return iters, seg


def hermite(tau: float, t: float, h: float, x0, v0, x1, v1):
    """(x, ẋ) at ``tau`` of the cubic Hermite interpolant of a step from t to t + h on its end
    values (x₀, ẋ₀), (x₁, ẋ₁): the step's dense output, before its projection on the constraints."""
    s = (tau - t) / h
    h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
    x = h00 * x0 + h10 * h * v0 + h01 * x1 + h11 * h * v1
    d00, d10, d01, d11 = 6 * s**2 - 6 * s, 3 * s**2 - 4 * s + 1, -6 * s**2 + 6 * s, 3 * s**2 - 2 * s
    return x, (d00 * x0 + d01 * x1) / h + d10 * v0 + d11 * v1


def dense_output(tau: float, t: float, h: float, x0, v0, a0, x1, v1, a1):
    """(x, ẋ, ẍ) at ``tau`` of the quintic Hermite interpolant of a step from t to t + h through
    (x, ẋ, ẍ) at both ends, and its derivatives: exact on polynomials of degree ≤ 5, errors
    O(h⁶), O(h⁵), O(h⁴) (docs/variable-step.md, "Dense output"; the C runtime's
    sg_dense_interpolant is this, operation for operation)."""
    s = (tau - t) / h
    r = 1.0 - s
    s2, r2 = s * s, r * r
    # the basis (Δ = x₁ − x₀ for x₀, x₁), its first and second derivatives in s
    b_d, b_v0, b_v1 = s2 * s * (10.0 - 15.0 * s + 6.0 * s2), s * r2 * r * (1.0 + 3.0 * s), \
        -s2 * s * r * (4.0 - 3.0 * s)
    b_a0, b_a1 = 0.5 * s2 * r2 * r, 0.5 * s2 * s * r2
    d_d, d_v0, d_v1 = 30.0 * s2 * r2, r2 * (1.0 + 2.0 * s - 15.0 * s2), \
        -s2 * (12.0 - 28.0 * s + 15.0 * s2)
    d_a0, d_a1 = s * r2 * (1.0 - 2.5 * s), s2 * r * (1.5 - 2.5 * s)
    dd_d, dd_v0, dd_v1 = 60.0 * s * r * (1.0 - 2.0 * s), -12.0 * s * r * (3.0 - 5.0 * s), \
        -12.0 * s * r * (2.0 - 5.0 * s)
    dd_a0, dd_a1 = r * (1.0 - 8.0 * s + 10.0 * s2), s * (3.0 - 12.0 * s + 10.0 * s2)
    dx = x1 - x0
    x = x0 + b_d * dx + h * (b_v0 * v0 + b_v1 * v1) + (h * h) * (b_a0 * a0 + b_a1 * a1)
    xd = (d_d / h) * dx + (d_v0 * v0 + d_v1 * v1) + h * (d_a0 * a0 + d_a1 * a1)
    xdd = (dd_d / (h * h)) * dx + (dd_v0 * v0 + dd_v1 * v1) / h + (dd_a0 * a0 + dd_a1 * a1)
    return x, xd, xdd


def dense_row_reason(tau: float) -> str:
    """The one-line reason of a run stopped by a ``t_eval`` row whose interpolated state could not
    be projected onto the constraints (both steppers')."""
    return (f"the t_eval row at t = {tau:.9g}: the step's interpolant could not be projected onto "
            "the constraints (Gauss-Newton from it did not converge, or the reduced mass matrix "
            "is singular there); try a smaller rtol or dt, or other t_eval times")
