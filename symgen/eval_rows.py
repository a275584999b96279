"""The rows of a run's accepted steps, for both loops (:class:`StepRows`: the Recorder's row 0,
each step's work, maxima and row, the last state kept), and the ``t_eval`` rows of a step (and a
crossed grid point's row): the step's quintic Hermite interpolant projected onto q = q̇ = 0, with
ẍ and λ solved from the equations of motion there (the C runtime's sg_interp.c.inc is this
transcribed)."""
from __future__ import annotations

import math
import time

import numpy as np

from .assembly import consistent_state
from .runtime_constants import ROW_TIME_SLACK, ROW_TOL
from .settings import SimulationSettings
from .steppers.control import dense_output, dense_row_reason

__all__ = ["project_row", "dense_state", "dense_rows", "DenseRowError", "StepRows"]


def project_row(kernels, tau: float, x, xd, rank_tol: float = SimulationSettings.rank_tol):
    """An interpolated row (x, ẋ at ``tau``) projected onto q = q̇ = 0 as closely as a step's own
    states (ROW_TOL; assembly's own tolerance where Gauss–Newton stalls above it), with ẍ and λ
    solved there: (x, ẋ, ẍ, λ, residual norms)."""
    try:
        cs = consistent_state(kernels, tau, x, xd, tol=ROW_TOL, rank_tol=rank_tol)
    except ValueError:
        cs = consistent_state(kernels, tau, x, xd, rank_tol=rank_tol)
    return cs.x, cs.xd, cs.xdd, cs.lam, np.array(cs.residuals, dtype=float)


class DenseRowError(ValueError):
    """A ``t_eval`` row whose interpolated state could not be projected onto the constraints."""


def dense_state(kernels, tau: float, t: float, h: float, start, end,
                rank_tol: float = SimulationSettings.rank_tol):
    """The row at ``tau`` of the accepted step from t (``start`` = x, ẋ, ẍ) to t + h (``end``):
    the step's quintic Hermite interpolant (:func:`~symgen.steppers.control.dense_output`)
    projected onto q = q̇ = 0, with ẍ and λ solved from the equations of motion there
    (:func:`project_row`; without constraints ẍ from M ẍ = f); returns (x, ẋ, ẍ, λ, residual
    norms).  :class:`DenseRowError` when the projection fails (as the C runtime's
    SG_FAIL_DENSE_ROW)."""
    x, xd, _ = dense_output(tau, t, h, *start, *end)
    try:
        return project_row(kernels, tau, x, xd, rank_tol)
    except ValueError as exc:
        raise DenseRowError(dense_row_reason(tau)) from exc


def dense_rows(kernels, rec, te, k: int, step: int, t: float, h: float, start, end, iters: int,
               w: float, hm: float, info=None, rank_tol: float = SimulationSettings.rank_tol,
               last: bool = False, flags: int = 0) -> int:
    """The ``t_eval`` rows te[k], … that the accepted step ``step`` from t (``start`` = x, ẋ, ẍ) to
    t + h (``end``) passes (te[k] ≤ t + h·(1 + 1e-14); all that are left when it is the run's
    ``last``, whatever the rounding of t + h), each :func:`dense_state` at
    τ = min(te[k], t + h), into the Recorder ``rec`` with the step's Newton iterations, ω_max,
    h_max and ``info`` (variable steps: h, error estimate, flags; fixed steps: its ``flags``),
    the energy at te[k], the outputs and the work of the power outputs at τ (the C runtime's
    dense_rows is this); returns
    the next k.  Call it after the step's work is integrated (Recorder.work_to).  The time the
    rows take is added to ``rec.dense_seconds`` (the summary's stepping rate leaves it out)."""
    outputs = kernels.n_out > 0 and hasattr(kernels, "outputs")
    if not (k < len(te) and (te[k] <= t + h * (1 + ROW_TIME_SLACK) or last)):
        return k
    tic = time.perf_counter()
    try:
        return _dense_rows(kernels, rec, te, k, step, t, h, start, end, iters, w, hm, info,
                           rank_tol, last, outputs, flags)
    finally:
        rec.dense_seconds += time.perf_counter() - tic


def _dense_rows(kernels, rec, te, k, step, t, h, start, end, iters, w, hm, info, rank_tol,
                last, outputs, flags) -> int:
    while k < len(te) and (te[k] <= t + h * (1 + ROW_TIME_SLACK) or last):
        tau = min(float(te[k]), t + h)
        xe, xde, xdde, lame, rese = dense_state(kernels, tau, t, h, start, end, rank_tol)
        ye = kernels.outputs(tau, xe, xde).copy() if outputs else None
        e = kernels.energy(float(te[k]), xe, xde) if rec.EK is not None else None
        rec.add(step, float(te[k]), xe, xde, xdde, lame, rese, iters, w, hm, e, ye,
                step_info=info, work=rec.work_to(tau) if rec.n_work else None, flags=flags)
        k += 1
    return k


class StepRows:
    """A run's rows in its Recorder ``rec``, for the fixed-step and the variable-step loop: row 0,
    then of each accepted step the work of the power outputs and driven joints (every step), the
    maxima, and its row (every ``every``-th step and the run's last) or, with ``te``, the
    ``t_eval`` rows inside it (:func:`dense_rows`); the last accepted state when a run stopped
    early (:meth:`keeps_last`).  ``t_end``: the span's end (the compiled variable-step loop's
    rows)."""

    def __init__(self, kernels, rec, every: int, te, rank_tol: float, t_end: float = math.inf):
        self.kernels, self.rec, self.every, self.te, self.t_end = kernels, rec, every, te, t_end
        self.rank_tol = rank_tol
        self.energy = hasattr(kernels, "energy")
        self.outputs = kernels.n_out > 0 and hasattr(kernels, "outputs")
        self.k_eval = 0                             # the next t_eval entry to record
        self.sampled = False                        # a sampled controller sets the inputs

    def add(self, j: int, t: float, state, res, iters: int, w: float, hm: float, info=None,
            flags: int = 0, y=None, work=None, e=None) -> None:
        """The row of step j at t, ``state`` = (x, ẋ, ẍ, λ); ``info``: (h, error estimate,
        flags) of a variable step, ``flags`` a fixed step's; ``y``, ``e``: its outputs and
        energy when known; ``work``: default the work integrated so far."""
        kern, x, xd = self.kernels, state[0], state[1]
        if y is None and self.outputs:
            y = kern.outputs(t, x, xd)
        if e is None and self.energy:
            e = kern.energy(t, x, xd)
        self.rec.add(j, t, *state, res, iters, w, hm, e, y, step_info=info, work=work,
                     flags=flags)

    def integrate(self, t: float, x, xd, y=None, lam=None):
        """The work of the power outputs and driven joints up to the accepted state at t (``lam``
        its multipliers); returns its outputs (None without work to integrate and ``y``)."""
        if not self.rec.n_work:
            return y
        if y is None and self.outputs:
            y = self.kernels.outputs(t, x, xd)
        self.rec.integrate(t, y, x, lam)
        return y

    def first(self, t0: float, state, res, w: float, hm: float) -> None:
        """Row 0, the start (with ``te``, only when te[0] is t0)."""
        y0 = self.integrate(t0, state[0], state[1], lam=state[3])
        self.rec.observe(t0, res, 0, w, hm)
        if self.te is None or self.te[0] == t0:
            self.add(0, t0, state, res, 0, w, hm, None, 0, y0)
            self.k_eval = 0 if self.te is None else 1

    def step(self, j: int, t: float, t1: float, h: float, start, end, res, iters: int, w: float,
             hm: float, info=None, flags: int = 0, final: bool = False, y=None, e=None) -> None:
        """Accepted step j from t (``start`` = x, ẋ, ẍ) to t1 (= t + h as the loop rounds it;
        ``end`` = x, ẋ, ẍ, λ; its residuals ``res``, ω_max ``w``, h_max ``hm``, ``info`` or
        ``flags`` as :meth:`add`'s; ``final``: the run's last step).  A t_eval row that cannot be
        projected raises DenseRowError once the step is folded in."""
        te, rec, failed = self.te, self.rec, None
        y = self.integrate(t1, end[0], end[1], y, lam=end[3])     # (before the rows inside)
        if te is not None:          # the t_eval rows in (t, t + h], from this step's interpolant
            try:
                self.k_eval = dense_rows(self.kernels, rec, te, self.k_eval, j, t, h, start,
                                         end[:3], iters, w, hm, info, self.rank_tol, final,
                                         flags)
            except DenseRowError as exc:
                failed = exc
        rec.h = h
        rec.observe(t1, res, iters, w, hm)
        if te is None and (j % self.every == 0 or final):
            self.add(j, t1, end, res, iters, w, hm, info, flags, y, e=e)
        if failed is not None:
            raise failed

    def to_event(self, j: int, t: float, h: float, start, end, hit, iters: int, w: float,
                 hm: float, info=None, flags: int = 0, last: bool = True) -> None:
        """Accepted step j (as :meth:`step`) cut at a terminal event or an impact ``hit``
        (events.EventHit): its work to the event, the t_eval rows before it from the whole
        step's interpolant, the event's state as the run's last row (``last``; an impact's
        pre-impact state is not a row)."""
        rec, te = self.rec, self.te
        y = self.integrate(hit.t, hit.x, hit.xd, lam=hit.lam)
        if te is not None:
            self.k_eval = dense_rows(self.kernels, rec, te[te <= hit.t], self.k_eval, j, t, h,
                                     start, end[:3], iters, w, hm, info, self.rank_tol, False,
                                     flags)
        rec.h = hit.t - t
        rec.observe(hit.t, hit.res, iters, w, hm)
        if last and not (rec.k and rec.T[rec.k - 1] == hit.t):
            self.add(j, hit.t, (hit.x, hit.xd, hit.xdd, hit.lam), hit.res, iters, w, hm, info,
                     flags, y)

    def keeps_last(self, j: int, t: float, status: str) -> bool:
        """Whether the last accepted state (step j at t) still needs its row: without t_eval
        when it is not the last row, with t_eval when the run stopped early and it is not
        there."""
        rec = self.rec
        if self.te is None:
            return rec.last_step != j
        return status != "completed" and not (rec.k and rec.T[rec.k - 1] == t)
