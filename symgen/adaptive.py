"""The variable-step loop of :func:`symgen.simulate` (``dt="auto"``): every step's size chosen by
the local error estimate and the stability limit (:mod:`symgen.steppers.control`,
docs/variable-step.md): the Python reference loop here, or the C runtime's (sg_control.c.inc) on
the compiled stepper, folded into the same rows.

A try whose Newton iteration does not converge, or whose error estimate is above 1, is rejected
and tried again from the same state with a smaller h; nothing else carries a hard step (the fixed
step's sub-steps and landing step-over are off: ``Stepper.step(controlled=True)``).  For the
conditionally stable schemes every step is at most 0.9·h_max(ω_max) of the state it starts from.
"""
from __future__ import annotations

import math
import traceback

import numpy as np

from .signals import held_signals
from .recorder import MemoryBudgetError
from .runtime_constants import CTL_ERR_FLOOR, STABILITY_FRACTION
from .settings import SimulationSettings
from .eval_rows import DenseRowError, StepRows
from .run_result import RunEnd
from .steploop import RUN_FAILURES, restart_at, stop_reason, stopped_reason
from .steppers.compiled_rows import DenseOutput
from .steppers.outcome import Outcome, fail_code, no_step, one_line
from .steppers.control import (ErrorEstimate, Flag, StepController, corrected_step, initial_step,
                               round_off_step, stretched, tries)

__all__ = ["run_adaptive", "PROGRESS_UNITS"]

#: ``progress(k, PROGRESS_UNITS)``: k/PROGRESS_UNITS of the span is done (the number of steps
#: is not known in advance)
PROGRESS_UNITS = 10_000

class _Control:
    """The per-run state of the error control: tolerances, bounds, the controller, counts."""

    def __init__(self, cfg: SimulationSettings, sch, n: int, m: int, t0: float, t_end: float):
        self.sch, self.t_end = sch, t_end
        span = t_end - t0
        self.h_cap = float(cfg.h_max) if cfg.h_max is not None else span / 10.0
        self.h_min = float(cfg.h_min) if cfg.h_min is not None else 0.0
        self.h_init = cfg.h_init
        floor = _round_off(t0)
        for name, h in (("h_init", cfg.h_init), ("h_max", cfg.h_max)):
            if h is not None and float(h) <= floor:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{name} ({flag}) = {float(h):g} s is below the round-off of t at "
                                 f"t0 = {t0:g} s (64 ε·max(1, |t0|) = {floor:.2g} s): no step that "
                                 f"small can advance t; give one above {floor:.2g} s or leave "
                                 f"{flag} out")
        self.rtol = float(cfg.rtol)
        self.estimate = ErrorEstimate(sch, n, cfg.rtol, cfg.atol_vector(n),
                                      index3=cfg.method == "index3",
                                      history=corrected_step(cfg.method, cfg.chart,
                                                             cfg.metric, sch.gamma))
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
            h_stab = STABILITY_FRACTION * self.sch.h_max(omega)
            if h > h_stab:
                h, flags = h_stab, Flag.STABILITY
        return stretched(h, self.t_end - t), flags

    def accepted(self, h: float, err: float) -> float:
        self.h_used = [min(self.h_used[0], h), max(self.h_used[1], h)]
        if err == err:
            self.err_max = max(self.err_max, err)
        return self.controller.accepted(h, err if err == err else CTL_ERR_FLOOR)

    def take_counts(self, c: dict) -> None:
        """The counts of the C runtime's error control (the compiled stepper ran the steps)."""
        self.rejected_error, self.rejected_newton = c["rejected_error"], c["rejected_newton"]
        self.h_used = c["h_range"] if c["h_range"][1] > 0 else [math.inf, 0.0]
        self.err_max = c["err_max"]
        self.estimate.euclidean_fallbacks = c["euclidean_fallbacks"]

    def meta(self) -> dict:
        return {"rtol": self.rtol, "atol": self.estimate.atol.tolist()
                if np.unique(self.estimate.atol).size > 1 else float(self.estimate.atol[0]),
                "h_init": self.h_init, "h_min": self.h_min or None, "h_max_step": self.h_cap,
                "rejected_steps": self.rejected_error + self.rejected_newton,
                "rejected_error": self.rejected_error, "rejected_newton": self.rejected_newton,
                "h_range": self.h_used if self.h_used[1] > 0 else None,
                "err_est_max": self.err_max}


def _round_off(t: float) -> float:
    """The smallest step that moves t: 64 ε·max(1, |t|) (control.round_off_step)."""
    return round_off_step(t)


def _too_small(h: float, t: float, ctl: _Control) -> bool:
    return h < ctl.h_min or h <= _round_off(t)


def run_adaptive(kernels, stepper, cfg: SimulationSettings, start, rec, t_end: float, progress,
                 every: int, extra_meta, te=None, values=None, events=None) -> RunEnd:
    """The variable-step run (module docstring) from ``start`` (a
    :class:`~symgen.steploop.Start`) into the Recorder ``rec``; returns how it ended (failure as
    data) with the step control's meta.  With ``te`` the rows are the states at those times
    (:func:`~symgen.eval_rows.dense_state`) instead of every ``every``-th step (and the last
    state reached, if the run stops early).  The compiled stepper runs the same control in C
    (sg_control.c.inc; :func:`_loop_compiled`).  ``values``: the run's
    :class:`~symgen.input_values.InputValues` (each try of a step from t sets them at its end, the
    callables with the state at t; time-varying ones on the Python loop only).  ``events``: the
    run's :class:`~symgen.events.RunEvents` (Python loop), a terminal one ending it there."""
    t0, bound = start.t0, float(cfg.divergence_bound)
    ctl = _Control(cfg, cfg.parsed_scheme(), kernels.n, kernels.m, t0, t_end)
    rows = StepRows(kernels, rec, every, te, cfg.rank_tol, t_end)
    rows.sampled = getattr(stepper, "controller", None) is not None
    run = _State(t0, start.state, start.res)
    run.w, run.hm = start.w, start.hm
    rows.first(t0, run.state, run.res, run.w, run.hm)
    stepper.start(t0, *run.state)
    status, reason, detail = "completed", "", None
    compiled = getattr(stepper, "compiled", False)
    try:
        if compiled:
            status, reason, detail = _loop_compiled(stepper, cfg, ctl, rows, run, t_end, progress)
        else:
            status, reason, detail = _loop(stepper, ctl, rows, run, t_end, bound, progress,
                                           values, events)
    except KeyboardInterrupt as exc:
        status = "interrupted"
        reason = (f"interrupted by {str(exc) or 'KeyboardInterrupt (Ctrl-C)'} after step "
                  f"{run.j} (t = {run.t:.9g} of {t_end:.9g})")
    except MemoryBudgetError as exc:        # the recorded rows are full: stop, keep them
        status, reason = "failed", f"stopped at t = {run.t:.9g}: {exc}"
    except DenseRowError as exc:            # (the step is taken: StepRows.step, _loop)
        status, reason = "failed", str(exc)
    except RUN_FAILURES as exc:             # the steps taken are kept (anything else is a bug:
        status, detail = "failed", traceback.format_exc()           # it propagates)
        reason = stopped_reason(exc, f"after step {run.j} (t = {run.t:.9g})")
    if values is not None:
        values.rewind()                         # (the last row: its step's inputs)
    try:                                        # always keep the last accepted state
        if rows.keeps_last(run.j, run.t, status):
            rows.add(run.j, run.t, run.state, run.res, run.it_last, run.w, run.hm, run.info)
    except MemoryBudgetError:                   # (no room for it: the rows so far are kept)
        pass
    if compiled:
        stepper._collect()
        ctl.take_counts(stepper.control_info())
    return RunEnd(status, reason, run.j, detail, run.failure or getattr(stepper, "outcome", None),
                  _control_meta(kernels, ctl, start, cfg.rank_tol, extra_meta))


def _control_meta(kernels, ctl: _Control, start, rank_tol: float, extra_meta) -> dict:
    """The run's meta with the step control's (``step_control``) and its fallbacks."""
    meta = dict(extra_meta or {})
    if ctl.estimate.euclidean_fallbacks:        # (recorded: issue 37.7)
        meta["fallbacks"] = [*meta.get("fallbacks", ()), (
            f"error estimate: NᵀMN singular on {ctl.estimate.euclidean_fallbacks} tries, the "
            "Euclidean projection N Nᵀ e taken instead of N (NᵀMN)⁻¹NᵀM e")]
    control = meta.setdefault("step_control", ctl.meta())
    if isinstance(control, dict):
        control["degrees_of_freedom"] = _dof(kernels, start.t0, start.cs, rank_tol)
    return meta


def _dof(kernels, t0: float, cs, rank_tol: float) -> int:
    """n − rank H at the consistent start: 0 for a fully driven model, whose steps the error
    estimate cannot bound (nothing moves but what the drives prescribe: the summary says so)."""
    if not kernels.m:
        return kernels.n
    H = np.asarray(kernels.constraints(t0, cs.x, cs.xd, cs.xdd)[1], dtype=float)
    s = np.linalg.svd(H, compute_uv=False)
    rank = int((s > rank_tol * s[0]).sum()) if s.size and s[0] > 0 else 0
    return kernels.n - rank


class _State:
    """The last accepted state of a variable-step run and what its row needs."""

    def __init__(self, t0: float, state, res):
        self.t, self.j, self.state, self.res = t0, 0, state, res
        self.w = self.hm = math.nan
        self.it_last, self.info = 0, None
        self.failure = None         # the error control's failure (steppers.outcome.no_step)


def _loop(stepper, ctl: _Control, rows: StepRows, run: _State, t_end: float, bound: float,
          progress, values=None, events=None) -> tuple[str, str, str | None]:
    """The Python stepper's loop: tries of each step (steppers.control.tries), the divergence
    check, the rows; returns (status, reason, detail)."""
    sch, t0 = ctl.sch, run.t
    contacts, base = (events.contacts if events else None), stepper
    h = ctl.first(run.w, t_end - t0)
    while run.t < t_end:
        t = run.t
        x, xd, xdd, lam = run.state
        lam0 = lam.copy() if contacts and contacts.closed else None
        h_try, iters, err, have_d, flags, h = _tries(ctl, stepper, stepper.m, t, h, run.w,
                                                      run.state, values)
        if h_try is None:
            return ("failed", *_no_step(t, h, ctl, stepper, run))
        t1 = t_end if h_try == t_end - t else t + h_try
        why = stop_reason(stepper, run.j + 1, t1, h_try, bound, iters)
        if why:
            return "diverged", why, None
        ctl.estimate.accept(h_try, xdd, stepper.xdd)
        if values is not None:
            values.accept()
        info = (h_try, err if have_d else math.nan, flags)
        w = stepper.omega_max
        if events:
            end = _event_end(events, rows, run, stepper, t, h_try, iters, info, sch)
            if end == "event":
                return "event", events.reason(), None
            if end == "impact":
                ctl.estimate.reset()        # (ẍ jumped: no D term from before the impact)
                h = ctl.accepted(h_try, err if have_d else math.nan)
                if events.impacts.closed_now:
                    stepper = _switch(contacts, base, run, rows, events, run.t, set(
                        contacts.closed) | set(events.impacts.closed_now))
                if events.impacts.cascade():
                    return "failed", events.impacts.cascade(), None
                continue
            if events.impacts:
                events.impacts.free_step()
            op = (contacts.opening(t, h_try, (x.copy(), xd.copy(), xdd.copy()),
                                   (stepper.x, stepper.xd, stepper.xdd), stepper.lam, lam0)
                  if lam0 is not None else None)
            if op is not None:              # a contact's force turned tensile: cut, open
                stepper = _open(contacts, base, rows, run, events, op, stepper, t, h_try,
                                iters, info, sch)
                ctl.estimate.reset()
                h = ctl.accepted(h_try, err if have_d else math.nan)
                continue
            if contacts and contacts.closed:
                contacts.observe(t1, stepper.lam)
        failed = None
        try:
            rows.step(run.j + 1, t, t1, h_try, (x, xd, xdd),
                      (stepper.x, stepper.xd, stepper.xdd, stepper.lam), stepper.res, iters, w,
                      sch.h_max(w), info, final=t1 >= t_end)
        except DenseRowError as exc:        # (the step is taken, as the C runtime takes it)
            failed = exc
        x[:], xd[:], xdd[:], lam[:] = stepper.x, stepper.xd, stepper.xdd, stepper.lam
        run.res[:] = stepper.res
        run.w, run.hm = w, sch.h_max(w)
        h = ctl.accepted(h_try, err if have_d else math.nan)
        run.t, run.j, run.it_last, run.info = t1, run.j + 1, iters, info
        if failed is not None:
            raise failed
        if progress is not None:
            progress(min(PROGRESS_UNITS, int(PROGRESS_UNITS * (run.t - t0) / (t_end - t0))),
                     PROGRESS_UNITS)
    return "completed", "", None


def _event_end(events, rows: StepRows, run: _State, stepper, t: float, h: float, iters: int,
               info, sch) -> str:
    """The events of the accepted step from ``run``'s state at t to the stepper's: "event" (a
    terminal one: the step cut there, rows.to_event, ``run`` the event's state), "impact" (the
    step cut at an impact, ``run`` the state after it, the stepper restarted there) or ""."""
    x, xd, xdd, lam = run.state
    start, end = (x.copy(), xd.copy(), xdd.copy()), (stepper.x, stepper.xd, stepper.xdd)
    hit = events.step(t, h, start, end, rows.rank_tol)
    if hit is None:
        return ""
    terminal = events.end is not None
    _cut(rows, run, stepper, t, h, start, hit, iters, info, sch, terminal)
    if terminal:
        return "event"
    xd[:], closed = events.impacts.apply(hit, h, rows.rank_tol)
    xdd[:], lam[:] = restart_at(rows.kernels, stepper, hit.t, x, xd, rows.rank_tol, rows.rec)
    events.restarted(hit.t, x, xd, closed)
    return "impact"


def _cut(rows: StepRows, run: _State, stepper, t: float, h: float, start, hit, iters: int, info,
         sch, last: bool) -> None:
    """The accepted step from t (h; ``start`` its state there) cut at ``hit`` (events.EventHit:
    a terminal event, an impact or a contact opening): its rows to there (rows.to_event) and
    ``run`` moved to the hit's state."""
    x, xd, xdd, lam = run.state
    w = stepper.omega_max
    rows.to_event(run.j + 1, t, h, start, (stepper.x, stepper.xd, stepper.xdd, stepper.lam), hit,
                  iters, w, sch.h_max(w), info=info, last=last)
    x[:], xd[:], xdd[:], lam[:] = hit.x, hit.xd, hit.xdd, hit.lam
    run.res[:] = hit.res
    run.w, run.hm = w, sch.h_max(w)
    run.t, run.j, run.it_last, run.info = hit.t, run.j + 1, iters, info


def _switch(contacts, base, run: _State, rows: StepRows, events, t: float, closed,
            project: bool = True):
    """The closed contacts made ``closed`` at ``run``'s state at t (contact.RunContacts.switch):
    ``run``'s λ of the new rows; returns the stepper."""
    x, xd, xdd, _ = run.state
    st, xs, xds, xdds, lam = contacts.switch(closed, base, t, x, xd, rows, project)
    x[:], xd[:], xdd[:] = xs, xds, xdds
    run.state = (x, xd, xdd, np.array(lam, dtype=float))
    events.restarted(t, x, xd, [events.impacts.index[k] for k in contacts.closed])
    return st


def _open(contacts, base, rows: StepRows, run: _State, events, op, stepper, t: float, h: float,
          iters: int, info, sch):
    """The accepted step from t (h) cut where a closed contact's force turns tensile (``op``):
    its rows to there, ``run`` there, the run without that contact's row from there; returns
    the stepper."""
    x, xd, xdd, _ = run.state
    _cut(rows, run, stepper, t, h, (x.copy(), xd.copy(), xdd.copy()), op, iters, info, sch, False)
    st = _switch(contacts, base, run, rows, events, op.t,
                 [k for k in contacts.closed if k != op.index], project=False)
    events.restarted(op.t, x, xd, [events.impacts.index[op.index]])
    return st


#: rows of the compiled loop's scratch buffer (one C call fills at most this many steps less one)
CHUNK_ROWS = 257


def _loop_compiled(stepper, cfg, ctl: _Control, rows: StepRows, run: _State, t_end: float,
                   progress) -> tuple[str, str, str | None]:
    """The compiled stepper's loop: the C runtime's error control (sg_run_auto) fills chunks of
    accepted steps, folded into the rows here (the t_eval rows written by C in place:
    steppers.compiled_rows); returns (status, reason, detail)."""
    t0 = run.t
    stepper.control_start(cfg, t0, t_end, run.w)
    b = stepper.auto_buffers(CHUNK_ROWS)
    for key, v in zip(("X", "XD", "XDD", "LAM"), run.state):
        b[key][0] = v
    b["T"][0] = t0
    dense = (None if rows.te is None
             else DenseOutput(stepper, rows.rec, rows.te, rows.k_eval, t_end))
    stepper.sampler_on(b["U"], rows.rec)    # (a controller: each sample a stop of the control)
    try:
        while run.t < t_end:
            st, t, k = stepper.run_auto(run.t, b, CHUNK_ROWS)
            impact = stepper.impact_cut(st)
            with held_signals():        # the chunk's steps are folded whole (Ctrl-C after them)
                _fold(rows, run, b, b["T"][k] if impact else t, k, dense, cut=impact)
                stepper.events_take(st == stepper.lib.SG_EVENT)
            if st == stepper.lib.SG_EVENT:
                return "event", stepper.events.reason(), None
            if st == stepper.lib.SG_IMPACT:     # (the last row: the state after the impact)
                continue
            if st != stepper.lib.SG_OK:
                return stepper.auto_failure(run.t, run.j)
            if progress is not None:
                progress(min(PROGRESS_UNITS, int(PROGRESS_UNITS * (run.t - t0) / (t_end - t0))),
                         PROGRESS_UNITS)
    finally:
        stepper.sampler_off()
        if dense is not None:
            dense.stop()
            rows.k_eval = rows.rec.k
    return "completed", "", None


def _fold_fast(rows: StepRows, run: _State, b: dict, k: int, cut: bool = False) -> None:
    """_fold's rows without t_eval, all at once: the maxima and the work of the power outputs
    over rows 1..k, the rows kept (every ``every``-th step and the end; ``cut``: row k is the
    state after an impact, no row, as _event_end's)."""
    if not k:
        return
    sl = slice(1, k + 1)
    res = np.column_stack((b["PE"][sl], b["VE"][sl], b["AE"][sl]))
    rows.rec.observe_rows(b["T"][sl], res, b["IT"][sl], b["OM"][sl], b["HM"][sl], h=b["HS"][sl])
    work = rows.rec.integrate_rows(b["T"][sl], b["OUT"][sl], b["X"][sl], b["LAM"][sl])
    steps = run.j + np.arange(1, k + 1)
    keep = np.flatnonzero((steps % rows.every == 0) | (b["T"][sl] >= rows.t_end)) + 1
    if cut:
        keep = keep[keep != k]
    k0 = rows.rec.k
    rows.rec.add_rows(steps[keep - 1], b["T"][keep], b["X"][keep], b["XD"][keep], b["XDD"][keep],
                      b["LAM"][keep], res[keep - 1], b["IT"][keep], b["OM"][keep], b["HM"][keep],
                      (b["EK"][keep], b["EP"][keep]) if rows.energy else None,
                      b["OUT"][keep] if rows.outputs else None,
                      None if work is None else work[keep - 1],
                      (b["HS"][keep], b["ERR"][keep], b["FL"][keep]))
    if rows.rec.U is not None and getattr(rows, "sampled", False):
        rows.rec.U[k0:rows.rec.k] = b["U"][keep]        # the inputs each row's step used


def _fold(rows: StepRows, run: _State, b: dict, t: float, k: int, dense,
          cut: bool = False) -> None:
    """Rows 1..k of the compiled loop's buffer ``b`` into ``rows``; the last becomes ``run``'s
    state and row 0 (the next chunk's start; ``cut``: the state after an impact)."""
    if rows.te is None:
        _fold_fast(rows, run, b, k, cut)
    else:
        _fold_dense(rows, run, b, k, dense)
    if k:
        for key, v in zip(("X", "XD", "XDD", "LAM"), run.state):
            v[:] = b[key][k]
        run.res[:] = b["PE"][k], b["VE"][k], b["AE"][k]
        run.w, run.hm = float(b["OM"][k]), float(b["HM"][k])
        run.t, run.j, run.it_last = t, run.j + k, int(b["IT"][k])
        run.info = (float(b["HS"][k]), float(b["ERR"][k]), int(b["FL"][k]))
        for key in ("T", "X", "XD", "XDD", "LAM", "PE", "VE", "AE", "OM", "HM", "IT", "EK", "EP",
                    "OUT", "HS", "ERR", "FL"):
            b[key][0] = b[key][k]


def _fold_dense(rows: StepRows, run: _State, b: dict, k: int, dense) -> None:
    """_fold's rows with t_eval: the maxima and the work of the power outputs over rows 1..k, and
    the t_eval rows C wrote during those steps completed (``dense``: a DenseOutput)."""
    if not k:
        return
    rec, sl = rows.rec, slice(1, k + 1)
    res = np.column_stack((b["PE"][sl], b["VE"][sl], b["AE"][sl]))
    rec.observe_rows(b["T"][sl], res, b["IT"][sl], b["OM"][sl], b["HM"][sl], h=b["HS"][sl])
    rec.integrate_rows(b["T"][sl], b["OUT"][sl], b["X"][sl], b["LAM"][sl])
    dense.fold(run.j, 1, k + 1, b["T"], b["IT"], b["OM"], b["HM"], (b["HS"], b["ERR"], b["FL"]))


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


def _no_step(t: float, h: float, ctl: _Control, stepper, run: _State) -> tuple[str, str]:
    """(one-line reason, full detail) for a run that found no step it could take at t; its
    outcome (steppers.outcome.no_step, as the compiled stepper's) in ``run.failure``."""
    last = ctl.last_failure
    s_ratio = math.nan
    lin = getattr(stepper, "lin", None)
    if lin is not None and stepper.m:
        s_max, s_min = lin.s_range()
        if s_max > 0:
            s_ratio = s_min / s_max
    kind = getattr(last, "outcome", None) or (None if last is None else Outcome(
        fail_code("NOT_CONVERGED"), t, iteration=getattr(last, "iteration", 0)))
    run.failure = no_step(t, h, ctl.h_min, s_ratio, kind)
    reason = one_line(run.failure, auto=True)
    return reason, (f"{type(last).__name__}: {last}" if last else reason)
