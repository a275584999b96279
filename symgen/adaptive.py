"""The variable-step loop of :func:`symgen.simulate` (``dt="auto"``): every step's size chosen by
the local error estimate and the stability limit (:mod:`symgen.steppers.control`,
docs/variable-step.md), on the Python stepper with the kernels compiled or not.

A try whose Newton iteration does not converge, or whose error estimate is above 1, is rejected
and tried again from the same state with a smaller h; nothing else carries a hard step (the fixed
step's retries, half steps and landing step-over are off: ``Stepper.controlled``).  For the
conditionally stable schemes every step is at most 0.9·h_max(ω_max) of the state it starts from.
"""
from __future__ import annotations

import logging
import math
import traceback

import numpy as np

from ._record import MemoryBudgetError, Recorder
from .input_values import InputError
from .settings import SimulationSettings
from .steploop import finish, short_reason, start_state, stop_reason
from .steppers import Linearization
from .steppers.control import (ErrorEstimate, Flag, StepController, initial_step, stretched,
                               tries)

__all__ = ["run_adaptive", "dense_state", "PROGRESS_UNITS"]

log = logging.getLogger(__name__)

#: ``progress(k, PROGRESS_UNITS)``: k/PROGRESS_UNITS of the span is done (the number of steps
#: is not known in advance)
PROGRESS_UNITS = 10_000

class _Control:
    """The per-run state of the error control: tolerances, bounds, the controller, counts."""

    def __init__(self, cfg: SimulationSettings, sch, n: int, t0: float, t_end: float):
        self.sch, self.t_end = sch, t_end
        span = t_end - t0
        self.h_cap = float(cfg.h_max) if cfg.h_max is not None else span / 10.0
        self.h_min = float(cfg.h_min) if cfg.h_min is not None else 0.0
        self.h_init = cfg.h_init
        self.rtol = float(cfg.rtol)
        self.estimate = ErrorEstimate(sch, n, cfg.rtol, cfg.atol_vector(n))
        self.controller = StepController()
        self.stable_always = sch.h_max(1.0) == math.inf
        self.rejected_error = self.rejected_newton = 0
        self.h_used = [math.inf, 0.0]              # smallest, largest accepted step
        self.err_max = 0.0
        self.last_failure = None        # the last exception of a rejected try

    def first(self, omega: float, span: float) -> float:
        if self.h_init is not None:
            return float(self.h_init)
        return initial_step(self.sch, omega, span, self.rtol, self.h_cap)

    def bounded(self, h: float, t: float, omega: float) -> tuple[float, int]:
        """The try's step from the controller's ``h`` at t: at most h_cap, the stability limit
        (flag STABILITY when that cut it) and the rest of the span (stretched by up to 1 % to
        reach t_end instead of leaving a sliver)."""
        flags = 0
        h = min(h, self.h_cap)
        if not self.stable_always and omega == omega and omega > 0.0:
            h_stab = 0.9 * self.sch.h_max(omega)
            if h > h_stab:
                h, flags = h_stab, Flag.STABILITY
        return stretched(h, self.t_end - t), flags

    def accepted(self, h: float, err: float) -> float:
        self.h_used = [min(self.h_used[0], h), max(self.h_used[1], h)]
        if err == err:
            self.err_max = max(self.err_max, err)
        return self.controller.accepted(h, err if err == err else 1e-10)

    def meta(self) -> dict:
        return {"rtol": self.rtol, "atol": self.estimate.atol.tolist()
                if np.unique(self.estimate.atol).size > 1 else float(self.estimate.atol[0]),
                "h_init": self.h_init, "h_min": self.h_min or None, "h_max_step": self.h_cap,
                "rejected_steps": self.rejected_error + self.rejected_newton,
                "rejected_error": self.rejected_error, "rejected_newton": self.rejected_newton,
                "h_range": self.h_used if self.h_used[1] > 0 else None,
                "err_est_max": self.err_max}


def _too_small(h: float, t: float, ctl: _Control) -> bool:
    return h < ctl.h_min or h <= 64 * np.finfo(float).eps * max(1.0, abs(t))


def _omega(kernels, stepper, cfg, t0, x, xd, xdd, lam) -> float:
    try:
        return Linearization(kernels.n, kernels.m, cfg.rank_tol).omega_at(kernels, t0, x, xd,
                                                                          xdd, lam)
    except (np.linalg.LinAlgError, ValueError):
        return math.nan


def dense_state(kernels, tau: float, t: float, h: float, start, end):
    """The state at ``tau`` in the accepted step from t (``start`` = (x, ẋ, ẍ)) to t + h
    (``end``): the cubic Hermite interpolant of x on (x, ẋ) at both ends, projected onto
    q = q̇ = 0, with ẍ and λ solved from the equations of motion there (assembly's consistent
    state); returns (x, ẋ, ẍ, λ, residual norms)."""
    from .assembly import consistent_state

    s = (tau - t) / h
    (x0, v0, _), (x1, v1, _) = start, end
    h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
    x = h00 * x0 + h10 * h * v0 + h01 * x1 + h11 * h * v1
    d00, d10, d01, d11 = 6 * s**2 - 6 * s, 3 * s**2 - 4 * s + 1, -6 * s**2 + 6 * s, 3 * s**2 - 2 * s
    xd = (d00 * x0 + d01 * x1) / h + d10 * v0 + d11 * v1
    try:                # as close to the constraints as the step's own states (round-off)
        cs = consistent_state(kernels, tau, x, xd, tol=1e-15)
    except ValueError:  # (Gauss–Newton stalled above 1e-15: assembly's own tolerance)
        cs = consistent_state(kernels, tau, x, xd)
    return cs.x, cs.xd, cs.xdd, cs.lam, np.array(cs.residuals, dtype=float)


def _t_eval(t_eval, t0: float, t_end: float):
    """The requested output times, checked: increasing, within [t0, t_end]."""
    if t_eval is None:
        return None
    te = np.asarray(t_eval, dtype=float).ravel()
    if te.size == 0 or not np.all(np.isfinite(te)):
        raise ValueError("t_eval must be a non-empty sequence of finite times")
    if np.any(np.diff(te) <= 0) or te[0] < t0 or te[-1] > t_end:
        raise ValueError(f"t_eval must increase strictly and lie within [t0, t_end] = [{t0:g}, "
                         f"{t_end:g}]; got {te[0]:g} … {te[-1]:g}")
    return te


def run_adaptive(kernels, stepper, cfg: SimulationSettings, t0: float, t_end: float, x0, xd0,
                 progress, consistent: bool, t_wall: float, every: int, extra_meta, t_eval=None,
                 values=None):
    """The variable-step run (module docstring); returns the Result (failure as data).  With
    ``t_eval`` the rows are the states at those times (:func:`dense_state`) instead of every
    ``every``-th step (and the last state reached, if the run stops early).  ``values``: the
    run's :class:`~symgen.input_values.InputValues` (each try of a step from t sets them at its
    end, the callables with the state at t)."""
    n, m, n_out = kernels.n, kernels.m, kernels.n_out
    sch, bound = cfg.parsed_scheme(), float(cfg.divergence_bound)
    has_energy = hasattr(kernels, "energy")
    has_outputs = n_out > 0 and hasattr(kernels, "outputs")
    span = t_end - t0
    ctl = _Control(cfg, sch, n, t0, t_end)
    rec = Recorder(n, m, n_out, 1024, every, math.nan, energy=has_energy, outputs=has_outputs,
                   variable=True, inputs=values.u if values is not None else None)
    cs = start_state(kernels, stepper, cfg, t0, x0, xd0, consistent)
    x, xd, xdd, lam = cs.x.copy(), cs.xd.copy(), cs.xdd.copy(), cs.lam.copy()
    res = np.array(cs.residuals, dtype=float)
    w = _omega(kernels, stepper, cfg, t0, x, xd, xdd, lam)
    hm = sch.h_max(w)

    def record(j, t, iters, info):
        rec.add(j, t, x, xd, xdd, lam, res, iters, w, hm,
                kernels.energy(t, x, xd) if has_energy else None,
                kernels.outputs(t, x, xd) if has_outputs else None, step_info=info)

    te = _t_eval(t_eval, t0, t_end)
    k_eval = 0                                 # the next t_eval entry to record

    def record_dense(t, h, info):
        """The rows of the t_eval entries in (t, t + h], from the step just accepted."""
        nonlocal k_eval
        while k_eval < len(te) and te[k_eval] <= t + h * (1 + 1e-14):
            tau = min(float(te[k_eval]), t + h)
            xe, xde, xdde, lame, rese = dense_state(kernels, tau, t, h, (x, xd, xdd),
                                                   (stepper.x, stepper.xd, stepper.xdd))
            rec.add(k_eval, float(te[k_eval]), xe, xde, xdde, lame, rese, iters, w, hm,
                    kernels.energy(tau, xe, xde) if has_energy else None,
                    kernels.outputs(tau, xe, xde) if has_outputs else None, step_info=info)
            k_eval += 1

    rec.observe(t0, res, 0, w, hm)
    if te is None:
        record(0, t0, 0, None)
    elif te[0] == t0:
        record(0, t0, 0, None)
        k_eval = 1
    stepper.controlled = True
    stepper.start(t0, x, xd, xdd, lam)
    status, reason, detail = "completed", "", None
    t, j, h, it_last, info = t0, 0, ctl.first(w, span), 0, None
    try:
        while t < t_end:
            h_try, iters, err, have_d, flags, h = _tries(ctl, stepper, m, t, h, w,
                                                          (x, xd, xdd, lam), values)
            if h_try is None:
                status = "failed"
                reason, detail = _no_step(t, h, ctl, stepper)
                break
            t1 = t_end if h_try == t_end - t else t + h_try
            why = stop_reason(stepper, j + 1, t1, h_try, bound, iters)
            if why:
                status, reason = "diverged", why
                break
            ctl.estimate.accept(h_try, xdd, stepper.xdd)
            if te is not None:
                record_dense(t, h_try, (h_try, err if have_d else math.nan, flags))
            x[:], xd[:], xdd[:], lam[:] = stepper.x, stepper.xd, stepper.xdd, stepper.lam
            res[:] = stepper.res
            if values is not None:
                values.accept()
            w = stepper.omega_max
            hm = sch.h_max(w)
            h = ctl.accepted(h_try, err if have_d else math.nan)
            t, j, it_last, info = t1, j + 1, iters, (h_try, err if have_d else math.nan, flags)
            rec.h = h_try
            rec.observe(t, res, iters, w, hm)
            if te is None and (j % every == 0 or t >= t_end):
                record(j, t, iters, info)
            if progress is not None:
                progress(min(PROGRESS_UNITS, int(PROGRESS_UNITS * (t - t0) / span)),
                         PROGRESS_UNITS)
    except KeyboardInterrupt as exc:
        status = "interrupted"
        reason = (f"interrupted by {str(exc) or 'KeyboardInterrupt (Ctrl-C)'} after step {j} "
                  f"(t = {t:.9g} of {t_end:.9g})")
    except MemoryBudgetError as exc:        # the recorded rows are full: stop, keep them
        status, reason = "failed", f"stopped at t = {t:.9g}: {exc}"
    except Exception as exc:                # an internal error: the steps taken are kept too
        status, detail = "failed", traceback.format_exc()
        what = "" if isinstance(exc, InputError) else "internal error "
        reason = (f"{what}after step {j} (t = {t:.9g}): {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0] if str(exc) else ''}"[:300])
    if status != "completed":
        log.warning("simulation of %s stopped: %s", kernels.name, short_reason(reason))
    if values is not None:
        values.rewind()                         # (the last row: its step's inputs)
    try:
        if te is None and rec.last_step != j:   # always keep the last accepted state …
            record(j, t, it_last, info)
        elif te is not None and status != "completed" and not (rec.k and rec.T[rec.k - 1] == t):
            record(j, t, it_last, info)         # … also with t_eval, when the run stopped early
    except MemoryBudgetError:                   # (no room for it: the rows so far are kept)
        pass
    meta = dict(extra_meta or {})
    meta.setdefault("step_control", ctl.meta())
    return finish(kernels, stepper, cfg, rec, cs, status, reason, detail, t_wall, meta,
                  h="auto", t0=t0, n_steps=None, last=j, every=every, bound=bound)


def _tries(ctl: _Control, stepper, m: int, t: float, h: float, omega: float, state,
           values=None):
    """steppers.control.tries within this run's bounds (h_max, the stability limit, the end of
    the span, h_min and round-off), counted in ``ctl``; each try's inputs set at its end."""
    def bound(h, t):
        h_try, cut = ctl.bounded(h, t, omega)
        if values is not None and values.varying:
            values.set(t + h_try, state[0], state[1])
        return h_try, cut
    return tries(stepper, ctl.estimate, ctl.controller, t, h, state, bound,
                 lambda h, t: _too_small(h, t, ctl), ctl)


def _no_step(t: float, h: float, ctl: _Control, stepper) -> tuple[str, str]:
    """(one-line reason, full detail) for a run that found no step it could take at t."""
    last = ctl.last_failure
    s_ratio = ""
    lin = getattr(stepper, "lin", None)
    if lin is not None and stepper.m:
        s_max, s_min = lin.s_range()
        if s_max > 0:
            s_ratio = f" (s_min/s_max of H = {s_min / s_max:.1e})"
    what = "Newton did not converge" if last else "the error estimate stayed above the tolerance"
    bound = f"h_min = {ctl.h_min:.3g} s" if h < ctl.h_min else "round-off"
    reason = (f"no step from t = {t:.9g} s: {what} down to h = {h:.3g} s ({bound}){s_ratio}; "
              "try a larger rtol or atol, a fixed --dt, or check the model near this state")
    return reason, (f"{type(last).__name__}: {last}" if last else reason)
