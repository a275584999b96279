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

from .eval_rows import DenseRowError, StepRows
from .run_result import RunEnd
from .steploop import RUN_FAILURES, stop_reason, stopped_reason
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
        """The run's state moved to a terminal event ``hit`` (events.EventHit): its last row."""
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
    last = run.last
    t_last = events.end[1] if status == "event" else t0 + last * dt
    # always keep the last computed state (with t_eval: when the run stopped early, whole)
    if rows.keeps_last(last, t_last, status) and (te is None or run.whole):
        values.rewind()                     # (with the inputs its step used)
        rows.add(last, t_last, run.state, run.res, run.it_last, run.w, run.hm,
                 flags=run.fl_last)
    return RunEnd(status, reason, last, detail, failure)


def _steps(run: _Run, kernels, stepper, cfg, t0: float, n_steps: int, progress, te,
           values, events=None) -> tuple[str, str, Outcome | None]:
    """The Python stepper's steps 1..n_steps; (status, reason, the failed step's Outcome)."""
    dt, bound = float(cfg.dt), float(cfg.divergence_bound)
    x, xd = run.x, run.xd
    ctl, _, spp = getattr(stepper, "controller", None) or (None, 0.0, 0)
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
            start = _restart(kernels, stepper, t, x, xd, cfg.rank_tol, run.rows.rec)
        try:
            outcome = stepper.step(t, dt, (x, xd, *start))
        except NUMERICAL_ERRORS as exc:
            return _step_failure(exc, i + 1, t1, cfg.method)
        iters, flags = outcome.iteration, outcome.flags
        reason = stop_reason(stepper, i + 1, t1, dt, bound, iters)
        if reason:
            return "diverged", reason, None
        j = i + 1
        step_start = run.accept(stepper, values, j, iters, flags, te, events,
                                xdd0=start[0] if jump else None)
        try:
            hit = events.step(t, dt, step_start, (run.x, run.xd, run.xdd),
                              cfg.rank_tol) if events else None
            if hit is not None:
                end = (run.x.copy(), run.xd.copy(), run.xdd.copy(), run.lam.copy())
                run.to_event(hit)
                run.rows.to_event(j, t, dt, step_start, end, hit, iters, run.w, run.hm,
                                  flags=flags)
                return "event", events.reason(), None
            run.rows.step(j, t, t1, dt, step_start, run.state, run.res, iters, run.w, run.hm,
                          flags=flags, final=j == n_steps)
        except DenseRowError as exc:
            return "failed", str(exc), None
        if progress is not None:
            progress(j, n_steps)
    return "completed", "", None


def _restart(kernels, stepper, t: float, x, xd, rank_tol: float, rec):
    """ẍ, λ at (t, x, ẋ) from the index-1 equations with the inputs just sampled (or a "hold"
    table's next value), and what the stepper carries restarted there (the step from a sample
    starts after the jump of the inputs, as the C runtime's sg_restart); the power after the jump
    told to the Recorder ``rec``."""
    from .assembly import consistent_state

    cs = consistent_state(kernels, t, x, xd, rank_tol=rank_tol, project=False)
    stepper.restart(t, x, xd, cs.xdd, cs.lam)
    if rec.n_work:
        outputs = kernels.n_out > 0 and hasattr(kernels, "outputs")
        rec.jump(t, kernels.outputs(t, x, xd) if outputs else None, x, xd, cs.lam)
    return cs.xdd, cs.lam


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
