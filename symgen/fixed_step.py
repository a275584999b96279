"""The fixed-step loop of :func:`symgen.simulate`: round((t_end − t0)/dt) steps of exactly dt from
the run's start (:class:`~symgen.steploop.Start`), each accepted into the run's Recorder (every
K-th step and the last, or the ``t_eval`` rows inside it: :class:`~symgen.eval_rows.StepRows`,
as the variable-step loop's);
the compiled stepper's chunks of steps in C folded into the same rows.  A step that raises a
numerical failure or diverges ends the run with the steps taken kept (:class:`RunEnd`)."""
from __future__ import annotations

import math
import traceback
from dataclasses import replace

import numpy as np

from .eval_rows import DenseRowError, StepRows
from .run_result import RunEnd
from .steploop import RUN_FAILURES, restart_at as _restart, stop_reason, stopped_reason
from .steppers import StepFailure
from .steppers.base import NUMERICAL_ERRORS
from .steppers.outcome import Outcome, one_line

__all__ = ["run_fixed"]


class _Run:
    """The state a fixed-step run advances (x, ẋ, ẍ, λ, residual norms, ω_max, h_max: the last
    accepted step's), the last step taken, and its rows (``rows``: the Recorder's,
    :class:`~symgen.eval_rows.StepRows`)."""

    def __init__(self, rows, start, sch, estimate: bool):
        self.rows, self.sch, self.estimate = rows, sch, estimate
        self.x, self.xd, self.xdd, self.lam = start.state
        self.res, self.w, self.hm = start.res, start.w, start.hm
        self.last = self.it_last = self.fl_last = 0     # the last step, its iterations, flags
        self.whole = True                   # False while an accepted state is being copied
        self.t_cut = None                   # the time of the state, when an impact cut a step

    @property
    def state(self):
        return self.x, self.xd, self.xdd, self.lam

    def accept(self, stepper, values, j: int, iters: int, flags: int, te, events=None,
               xdd0=None):
        """The stepper's state as step j's (an interrupt in here leaves it half-copied:
        ``whole``); returns the state at the step's start (x, ẋ, ẍ) with ``te`` or ``events``
        (the step's interpolant needs it; ẍ = ``xdd0`` when the step started after a jump of
        the inputs, as sg_run_chunk's), else None."""
        te_start = (None if te is None and not events
                    else (self.x.copy(), self.xd.copy(),
                          (self.xdd if xdd0 is None else xdd0).copy()))
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

    def to_event(self, hit) -> None:
        """The run's state moved to a terminal event or an impact ``hit`` (events.EventHit)."""
        self.x[:], self.xd[:], self.xdd[:], self.lam[:] = hit.x, hit.xd, hit.xdd, hit.lam
        self.res[:] = hit.res


def run_fixed(kernels, stepper, cfg, start, rec, n_steps: int, progress, every: int, te,
              values, estimate: bool, events=None) -> RunEnd:
    """The fixed-step run from ``start`` (a :class:`~symgen.steploop.Start`) into the Recorder
    ``rec`` (module docstring); ``values``: the run's InputValues; ``estimate``: ω_max and h_max
    at every step (else NaN after row 0: SimulationSettings.estimate_plan).  A KeyboardInterrupt
    or one of :data:`~symgen.steploop.RUN_FAILURES` ends it with the steps taken (anything else is
    a bug: it propagates).  ``events``: the run's :class:`~symgen.events.RunEvents` (Python
    stepper), located after every step; a terminal one ends the run there (status "event")."""
    t0, dt = start.t0, float(cfg.dt)
    rows = StepRows(kernels, rec, every, te, cfg.rank_tol)
    run = _Run(rows, start, cfg.parsed_scheme(), estimate)
    rows.first(t0, run.state, run.res, run.w, run.hm)
    stepper.start(t0, run.x, run.xd, run.xdd, run.lam)
    status, reason, detail, failure = "completed", "", None, None
    compiled = getattr(stepper, "compiled", False)
    try:
        if compiled:                        # C steps chunk by chunk into rec (steppers/compiled.py)
            status, reason = stepper.advance(t0, n_steps, (run.x, run.xd, run.xdd, run.lam,
                                                           run.res), rec, progress,
                                             float(cfg.divergence_bound), te, rows.k_eval)
        else:
            status, reason, failure = _steps(run, kernels, stepper, cfg, t0, n_steps, progress,
                                             te, values, events)
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
        if status == "failed" and stepper.t_row != t0 + run.last * dt:
            run.t_cut = stepper.t_row           # (a cascade of impacts: the last one's time)
    last = run.last
    t_last = (events.end[1] if status == "event" else run.t_cut if run.t_cut is not None
              else t0 + last * dt)
    # always keep the last computed state (with t_eval: when the run stopped early, whole)
    if rows.keeps_last(last, t_last, status) and (te is None or run.whole):
        values.rewind()                     # (with the inputs its step used)
        rows.add(last, t_last, run.state, run.res, run.it_last, run.w, run.hm,
                 flags=run.fl_last)
    return RunEnd(status, reason, last, detail, failure)


def _steps(run: _Run, kernels, stepper, cfg, t0: float, n_steps: int, progress, te,
           values, events=None) -> tuple[str, str, Outcome | None]:
    """The Python stepper's steps 1..n_steps; (status, reason, the failed step's Outcome).  A
    step cut by an impact (events.RunEvents.impacts) goes on from the impact to its grid point."""
    dt, bound = float(cfg.dt), float(cfg.divergence_bound)
    x, xd = run.x, run.xd
    ctl, _, spp = getattr(stepper, "controller", None) or (None, 0.0, 0)
    impacts = events.impacts if events else None
    contacts, base = (events.contacts if events else None), stepper
    for i in range(n_steps):
        t, t1 = t0 + i * dt, t0 + (i + 1) * dt
        jump = False
        if values.varying:                  # u(t + h), callables with the state at t
            values.set(t1, x, xd)
            jump = values.jumped()          # a "hold" table's next value
        start = (run.xdd, run.lam)
        if ctl is not None and i and i % spp == 0:      # a sample: the law
            ctl.sample(t, x, xd)
            jump = True
        if jump:                            # then ẍ, λ of the new inputs (sg_run.c.inc)
            start = _restart(run.rows.kernels, stepper, t, x, xd, cfg.rank_tol, run.rows.rec)
        j, tc, h = i + 1, t, dt
        while True:                         # (more than once: the rest of a step cut by impacts)
            lam0 = run.lam.copy() if contacts and contacts.closed else None
            try:
                outcome = stepper.step(tc, h, (x, xd, *start))
            except NUMERICAL_ERRORS as exc:
                return _step_failure(exc, j, t1, cfg.method)
            iters, flags = outcome.iteration, outcome.flags
            reason = stop_reason(stepper, j, t1, h, bound, iters)
            if reason:
                return "diverged", reason, None
            step_start = run.accept(stepper, values, j, iters, flags, te, events,
                                    xdd0=start[0] if jump else None)
            jump = False
            try:
                hit = events.step(tc, h, step_start, (run.x, run.xd, run.xdd),
                                  cfg.rank_tol) if events else None
                if hit is not None:
                    end = (run.x.copy(), run.xd.copy(), run.xdd.copy(), run.lam.copy())
                    run.to_event(hit)
                    run.rows.to_event(j, tc, h, step_start, end, hit, iters, run.w, run.hm,
                                      flags=flags, last=events.end is not None)
                    if events.end is not None:
                        return "event", events.reason(), None
                    if hit.t >= t1 and te is None and j % run.rows.every == 0:
                        run.rows.add(j, t1, run.state, run.res, iters, run.w, run.hm,
                                     flags=flags)       # (at the grid point: the row before
                    start = _impact(run.rows.kernels, stepper, run, events, hit, h,  # the
                                    cfg.rank_tol)                               # jump)
                    if impacts.closed_now:
                        stepper, start = _switch(contacts, base, run, events, hit.t,
                                                 set(contacts.closed) | set(impacts.closed_now))
                    if impacts.cascade():
                        return "failed", impacts.cascade(), None
                    tc, h = hit.t, t1 - hit.t
                    if h > 0.0:
                        continue
                    run.t_cut = None
                    break
                if impacts:
                    impacts.free_step()
                op = (contacts.opening(tc, h, step_start, (run.x, run.xd, run.xdd), run.lam,
                                       lam0) if lam0 is not None else None)
                if op is not None:          # a contact's force turned tensile: cut, open
                    stepper, start = _open(contacts, base, run, events, op, j, tc, h, t1,
                                           step_start, iters, flags, te)
                    tc, h = op.t, t1 - op.t
                    if h > 0.0:
                        continue
                    run.t_cut = None
                    break
                if contacts and contacts.closed:
                    contacts.observe(t1, run.lam)
                run.t_cut = None
                run.rows.step(j, tc, t1, h, step_start, run.state, run.res, iters, run.w,
                              run.hm, flags=flags, final=j == n_steps)
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
    xdd, lam = _restart(kernels, stepper, hit.t, run.x, run.xd, rank_tol, run.rows.rec)
    run.xdd[:], run.lam[:] = xdd, lam
    run.t_cut = hit.t
    events.restarted(hit.t, run.x, run.xd, closed)
    return run.xdd, run.lam


def _switch(contacts, base, run: _Run, events, t: float, closed, project: bool = True):
    """The closed contacts made ``closed`` at the run's state at t (contact.RunContacts.switch):
    the run's λ of the new rows, the rows' and events' kernels; returns (stepper, (ẍ, λ))."""
    st, x, xd, xdd, lam = contacts.switch(closed, base, t, run.x, run.xd, run.rows, project)
    run.x[:], run.xd[:], run.xdd[:] = x, xd, xdd
    run.lam = np.array(lam, dtype=float)
    events.restarted(t, run.x, run.xd, [events.impacts.index[k] for k in contacts.closed])
    return st, (run.xdd, run.lam)


def _open(contacts, base, run: _Run, events, op, j: int, tc: float, h: float, t1: float,
          step_start, iters: int, flags: int, te):
    """Step j (from tc, h) cut where a closed contact's force turns tensile (``op``, an
    EventHit): its rows to there, then the run without that contact's row from there."""
    end = (run.x.copy(), run.xd.copy(), run.xdd.copy(), run.lam.copy())
    run.to_event(op)
    run.rows.to_event(j, tc, h, step_start, end, op, iters, run.w, run.hm, flags=flags,
                      last=False)
    if op.t >= t1 and te is None and j % run.rows.every == 0:
        run.rows.add(j, t1, run.state, run.res, iters, run.w, run.hm, flags=flags)
    run.t_cut = op.t
    st, start = _switch(contacts, base, run, events, op.t,
                        [k for k in contacts.closed if k != op.index], project=False)
    events.restarted(op.t, run.x, run.xd, [events.impacts.index[op.index]])
    return st, start


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
