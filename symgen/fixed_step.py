"""The fixed-step loop of :func:`symgen.simulate`: round((t_end − t0)/dt) steps of exactly dt from
the run's start (:class:`~symgen.steploop.Start`), each accepted into the run's Recorder (every
K-th step and the last, or the ``t_eval`` rows inside it: :func:`~symgen.eval_rows.dense_rows`);
the compiled stepper's chunks of steps in C folded into the same rows.  A step that raises a
numerical failure or diverges ends the run with the steps taken kept (:class:`RunEnd`)."""
from __future__ import annotations

import math
import traceback
from dataclasses import replace

from .eval_rows import DenseRowError, dense_rows
from .run_result import RunEnd
from .steploop import RUN_FAILURES, restart_at as _restart, stop_reason, stopped_reason
from .steppers import StepFailure
from .steppers.base import NUMERICAL_ERRORS
from .steppers.outcome import Outcome, one_line

__all__ = ["run_fixed"]


class _Run:
    """The state a fixed-step run advances (x, ẋ, ẍ, λ, residual norms, ω_max, h_max: the last
    accepted step's), the last step taken, and its rows (the Recorder ``rec``)."""

    def __init__(self, kernels, rec, start, sch, estimate: bool):
        self.kernels, self.rec, self.sch, self.estimate = kernels, rec, sch, estimate
        self.x, self.xd, self.xdd, self.lam = start.state
        self.res, self.w, self.hm = start.res, start.w, start.hm
        self.has_energy = hasattr(kernels, "energy")
        self.has_outputs = kernels.n_out > 0 and hasattr(kernels, "outputs")
        self.last = self.it_last = self.fl_last = 0     # the last step, its iterations, flags
        self.whole = True                   # False while an accepted state is being copied
        self.k_eval = 0                     # the next t_eval row
        self.t_cut = None                   # the time of the state, when an impact cut a step

    def record(self, j: int, t: float, iters: int, y=None, flags: int = 0) -> None:
        kern, x, xd = self.kernels, self.x, self.xd
        self.rec.add(j, t, x, xd, self.xdd, self.lam, self.res, iters, self.w, self.hm,
                     flags=flags, energy=kern.energy(t, x, xd) if self.has_energy else None,
                     out=y if y is not None else kern.outputs(t, x, xd) if self.has_outputs
                     else None)

    def integrate(self, t: float):
        """The work of the power outputs and driven joints up to the state at t (every step,
        recorded or not); the outputs there (None without outputs)."""
        if not self.rec.n_work:
            return None
        y = self.kernels.outputs(t, self.x, self.xd) if self.has_outputs else None
        self.rec.integrate(t, y, self.x, self.lam)
        return y

    def first(self, t0: float, te) -> None:
        """Row 0 (the start; with ``te``, only when te[0] is t0)."""
        self.rec.observe(t0, self.res, 0, self.w, self.hm)
        y0 = self.integrate(t0)
        if te is None or te[0] == t0:
            self.record(0, t0, 0, y0)
            self.k_eval = 0 if te is None else 1

    def accept(self, stepper, values, j: int, iters: int, flags: int, te, events=None):
        """The stepper's state as step j's (an interrupt in here leaves it half-copied:
        ``whole``); returns the state at the step's start (x, ẋ, ẍ) with ``te`` or ``events``
        (the step's interpolant needs it), else None."""
        te_start = (None if te is None and not events
                    else (self.x.copy(), self.xd.copy(), self.xdd.copy()))
        self.whole = False
        self.x[:], self.xd[:], self.xdd[:], self.lam[:] = (stepper.x, stepper.xd, stepper.xdd,
                                                           stepper.lam)
        self.res[:] = stepper.res
        self.w = stepper.omega_max if self.estimate else math.nan    # (else the start's: row 0)
        self.hm = self.sch.h_max(self.w)
        values.accept()
        self.whole = True
        self.last, self.it_last, self.fl_last = j, iters, flags
        return te_start

    def rows(self, j: int, t: float, t1: float, dt: float, iters: int, flags: int, te,
             every: int, start, rank_tol: float, last: bool) -> None:
        """Step j's rows (from t to t1 = t + dt): its work integrated, the t_eval rows inside it,
        the maxima, the step's row; DenseRowError (after the step is folded in) when a t_eval row
        cannot be projected."""
        rec, failed = self.rec, None
        self.t_cut = None
        y = self.integrate(t1)              # (before the rows inside the step)
        if te is not None:                  # the t_eval rows in (t, t + h], from its interpolant
            try:
                self.k_eval = dense_rows(self.kernels, rec, te, self.k_eval, j, t, dt, start,
                                         (self.x, self.xd, self.xdd), iters, self.w, self.hm,
                                         None, rank_tol, last, flags)
            except DenseRowError as exc:
                failed = exc
        rec.observe(t1, self.res, iters, self.w, self.hm)
        if failed is not None:
            raise failed
        if te is None and j % every == 0:
            self.record(j, t1, iters, y, flags)

    def to_event(self, j: int, t: float, dt: float, hit, iters: int, flags: int, te, start,
                 rank_tol: float, last: bool = True) -> None:
        """Step j (from t, ``start`` = x, ẋ, ẍ) cut at a terminal event or an impact ``hit``
        (events.EventHit): its work to the event, the t_eval rows before it from the whole
        step's interpolant, the event's state as the run's last row (``last``; an impact's
        pre-impact state is not a row) (DenseRowError as ``rows``)."""
        rec, end = self.rec, (self.x.copy(), self.xd.copy(), self.xdd.copy())
        self.x[:], self.xd[:], self.xdd[:], self.lam[:] = hit.x, hit.xd, hit.xdd, hit.lam
        self.res[:] = hit.res
        y = self.integrate(hit.t)
        if te is not None:
            self.k_eval = dense_rows(self.kernels, rec, te[te <= hit.t], self.k_eval, j, t, dt,
                                     start, end, iters, self.w, self.hm, None, rank_tol, False,
                                     flags)
        rec.observe(hit.t, self.res, iters, self.w, self.hm)
        if last and not (rec.k and rec.T[rec.k - 1] == hit.t):
            self.record(j, hit.t, iters, y, flags)


def run_fixed(kernels, stepper, cfg, start, rec, n_steps: int, progress, every: int, te,
              values, estimate: bool, events=None) -> RunEnd:
    """The fixed-step run from ``start`` (a :class:`~symgen.steploop.Start`) into the Recorder
    ``rec`` (module docstring); ``values``: the run's InputValues; ``estimate``: ω_max and h_max
    at every step (else NaN after row 0: SimulationSettings.estimate_plan).  A KeyboardInterrupt
    or one of :data:`~symgen.steploop.RUN_FAILURES` ends it with the steps taken (anything else is
    a bug: it propagates).  ``events``: the run's :class:`~symgen.events.RunEvents` (Python
    stepper), located after every step; a terminal one ends the run there (status "event")."""
    t0, dt = start.t0, float(cfg.dt)
    run = _Run(kernels, rec, start, cfg.parsed_scheme(), estimate)
    run.first(t0, te)
    stepper.start(t0, run.x, run.xd, run.xdd, run.lam)
    status, reason, detail, failure = "completed", "", None, None
    compiled = getattr(stepper, "compiled", False)
    try:
        if compiled:                        # C steps chunk by chunk into rec (steppers/compiled.py)
            status, reason = stepper.advance(t0, n_steps, (run.x, run.xd, run.xdd, run.lam,
                                                           run.res), rec, progress,
                                             float(cfg.divergence_bound), te, run.k_eval)
        else:
            status, reason, failure = _steps(run, kernels, stepper, cfg, t0, n_steps, progress,
                                             every, te, values, events)
    except (KeyboardInterrupt, *RUN_FAILURES) as exc:   # the steps taken are kept
        if compiled:
            run.last = stepper.done
        if not run.whole and te is None:    # the state of step `last + 1` is half-copied
            run.last = rec.last_step
        status, reason, detail = _stopped(exc, run.last, n_steps, t0 + run.last * dt)
    if compiled:                            # the state buffers hold step stepper.done
        run.last, run.it_last, run.fl_last = stepper.done, stepper.it_last, stepper.fl_last
        run.w, run.hm = stepper.w, stepper.hm
        failure = stepper.outcome
    last = run.last
    t_last = (events.end[1] if status == "event" else run.t_cut if run.t_cut is not None
              else t0 + last * dt)
    # always keep the last computed state (with t_eval: when the run stopped early, whole)
    if (rec.last_step != last if te is None else status != "completed" and run.whole
            and not (rec.k and rec.T[rec.k - 1] == t_last)):
        values.rewind()                     # (with the inputs its step used)
        run.record(last, t_last, run.it_last, flags=run.fl_last)
    return RunEnd(status, reason, last, detail, failure)


def _steps(run: _Run, kernels, stepper, cfg, t0: float, n_steps: int, progress, every: int, te,
           values, events=None) -> tuple[str, str, Outcome | None]:
    """The Python stepper's steps 1..n_steps; (status, reason, the failed step's Outcome).  A
    step cut by an impact (events.RunEvents.impacts) goes on from the impact to its grid point."""
    dt, bound = float(cfg.dt), float(cfg.divergence_bound)
    x, xd = run.x, run.xd
    ctl, _, spp = getattr(stepper, "controller", None) or (None, 0.0, 0)
    impacts = events.impacts if events else None
    for i in range(n_steps):
        t, t1 = t0 + i * dt, t0 + (i + 1) * dt
        if values.varying:                  # u(t + h), callables with the state at t
            values.set(t1, x, xd)
        start = (run.xdd, run.lam)
        if ctl is not None and i and i % spp == 0:      # a sample: the law, then ẍ, λ of
            ctl.sample(t, x, xd)                         # the new inputs (sg_run.c.inc)
            start = _restart(kernels, stepper, t, x, xd, cfg.rank_tol, run.rec)
        j, tc, h = i + 1, t, dt
        while True:                         # (more than once: the rest of a step cut by impacts)
            try:
                outcome = stepper.step(tc, h, (x, xd, *start))
            except NUMERICAL_ERRORS as exc:
                return _step_failure(exc, j, t1, cfg.method)
            iters, flags = outcome.iteration, outcome.flags
            reason = stop_reason(stepper, j, t1, h, bound, iters)
            if reason:
                return "diverged", reason, None
            step_start = run.accept(stepper, values, j, iters, flags, te, events)
            try:
                hit = events.step(tc, h, step_start, (run.x, run.xd, run.xdd),
                                  cfg.rank_tol) if events else None
                if hit is not None:
                    run.to_event(j, tc, h, hit, iters, flags, te, step_start, cfg.rank_tol,
                                 last=events.end is not None)
                    if events.end is not None:
                        return "event", events.reason(), None
                    if hit.t >= t1 and te is None and j % every == 0:
                        run.record(j, t1, iters, None, flags)   # (at the grid point: the row
                    start = _impact(kernels, stepper, run, events, hit, h,   # before the jump)
                                    cfg.rank_tol)
                    if impacts.cascade():
                        return "failed", impacts.cascade(), None
                    tc, h = hit.t, t1 - hit.t
                    if h > 0.0:
                        continue
                    run.t_cut = None
                    break
                if impacts:
                    impacts.free_step()
                run.rows(j, tc, t1, h, iters, flags, te, every, step_start, cfg.rank_tol,
                         j == n_steps)
            except DenseRowError as exc:
                return "failed", str(exc), None
            break
        if progress is not None:
            progress(j, n_steps)
    return "completed", "", None


def _impact(kernels, stepper, run: _Run, events, hit, h: float, rank_tol: float):
    """The impact ``hit`` (the run's state is its pre-impact state, run.to_event): ẋ⁺ by the
    restitution law (impacts.RunImpacts.apply), ẍ, λ there and the stepper restarted; returns
    (ẍ, λ) the next step starts from."""
    xp, closed = events.impacts.apply(hit, h, rank_tol)
    run.xd[:] = xp
    xdd, lam = _restart(kernels, stepper, hit.t, run.x, run.xd, rank_tol, run.rec)
    run.xdd[:], run.lam[:] = xdd, lam
    run.t_cut = hit.t
    events.restarted(hit.t, run.x, run.xd, closed)
    return run.xdd, run.lam


def _step_failure(exc, j: int, t1: float, method: str) -> tuple[str, str, Outcome | None]:
    """(status, reason, outcome) of step j (ending at t1), which raised ``exc``: a StepFailure's
    one line from its outcome (steppers.outcome.one_line; its long text goes to the detail)."""
    prefix = f"step {j} (t = {t1:.9g}): "
    if isinstance(exc, StepFailure):
        status = "diverged" if exc.nonfinite else "failed"
        if exc.outcome is not None:
            return (status, one_line(exc.outcome, prefix),
                    replace(exc.outcome, detail=f"{prefix}{exc}"))
        return status, f"{prefix}{exc}", None
    return "failed", (f"{prefix}numerical error inside the {method} step: "
                      f"{type(exc).__name__}: {exc}"), None


def _stopped(exc, last: int, n_steps: int, t_last: float) -> tuple[str, str, str | None]:
    """(status, reason, detail) of a fixed-step run that ``exc`` (a KeyboardInterrupt or one of
    steploop.RUN_FAILURES) stopped after step ``last`` (at t_last): interrupted, or failed (the
    traceback in the detail)."""
    reason = stopped_reason(exc, f"after step {last} of {n_steps} (t = {t_last:.9g})")
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", reason, None
    return "failed", reason, traceback.format_exc()
