"""The ``t_eval`` rows of an accepted step (both loops and a crossed grid point's row): the
step's quintic Hermite interpolant projected onto q = q̇ = 0, with ẍ and λ solved from the
equations of motion there (the C runtime's sg_interp.c.inc is this transcribed)."""
from __future__ import annotations

import time

import numpy as np

from .assembly import consistent_state
from .runtime_constants import ROW_TIME_SLACK, ROW_TOL
from .settings import SimulationSettings
from .steppers.control import dense_output, dense_row_reason

__all__ = ["project_row", "dense_state", "dense_rows", "DenseRowError"]


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
