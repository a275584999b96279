"""What the fixed-step loop (:mod:`symgen.run`) and the variable-step loop (:mod:`symgen.adaptive`)
share: the consistent start, the divergence check of an accepted step, what ends a run as
"failed" with its steps kept (:data:`RUN_FAILURES`), and the Result with its meta."""
from __future__ import annotations

import math
import platform
import time
import warnings

import numpy as np

from .assembly import consistent_state, finished_state
from .input_values import InputError
from .names import power_columns, work_names
from .recorder import Recorder, drive_of
from .recorder import t_eval_times  # noqa: F401 (moved there; adaptive imports it from here)
from .units import result_units
from .result import Result
from .runtime_constants import ROW_TIME_SLACK, ROW_TOL
from .settings import SimulationSettings
from .steppers import Linearization
from .steppers.base import NUMERICAL_ERRORS, norm2
from .steppers.control import dense_output, dense_row_reason

__all__ = ["start_state", "omega_start", "stop_reason", "finish", "short_reason", "REASON_CHARS",
           "project_row", "dense_state", "dense_rows", "DenseRowError", "t_eval_times",
           "RUN_FAILURES", "stopped_reason", "run_recorder"]

#: The exceptions that end a run as "failed" with the steps taken kept (issue 37.3): an input's
#: error (a callable input or controller that returned no finite number or raised: the caller's
#: code, whose run keeps its data) and a numerical failure
#: (:data:`~symgen.steppers.base.NUMERICAL_ERRORS`).  A KeyboardInterrupt ends it as
#: "interrupted"; anything else is a bug (in symgen, or a progress callback) and propagates:
#: simulate raises it, the CLI exits 1.
RUN_FAILURES = (InputError, *NUMERICAL_ERRORS)


def stopped_reason(exc: BaseException, where: str) -> str:
    """The one-line reason of a run that ``exc`` (a KeyboardInterrupt or one of
    :data:`RUN_FAILURES`) stopped ``where`` ("after step 12 of 100 (t = 0.12)")."""
    if isinstance(exc, KeyboardInterrupt):
        return f"interrupted by {str(exc) or 'KeyboardInterrupt (Ctrl-C)'} {where}"
    what = "" if isinstance(exc, InputError) else "numerical error "
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{what}{where}: {type(exc).__name__}: {first}"[:300]


def _versions() -> dict:
    import scipy
    import sympy

    from .version import __version__

    return {"symgen": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "sympy": sympy.__version__, "python": platform.python_version()}


def _sparse_compiled(stepper) -> bool:
    return getattr(stepper, "compiled", False) and stepper.factorization == "sparse"


def start_state(kernels, stepper, cfg: SimulationSettings, t0, x0, xd0, consistent: bool):
    """The consistent initial state (a warning when the projection moved it visibly):
    assembly.consistent_state's, or for the compiled sparse step the C runtime's with the run's
    sparse factorization (the dense one is O(n³) on the large models that take the sparse step;
    its partition then serves the run).  The dense compiled step starts from
    assembly.consistent_state, as the Python stepper does: the two then give the same run to
    round-off even where it is sensitive (a step onto a singular point)."""
    cs, fallback = None, None
    if _sparse_compiled(stepper):
        done = stepper.consistent_state(t0, x0, xd0, project=consistent)
        if done is not None:
            cs = finished_state(kernels, t0, x0, xd0, *done)
        else:                           # recorded (meta["fallbacks"], the summary; issue 37.7)
            fallback = ("start: the compiled sparse projection failed; the dense Python one "
                        "(assembly.consistent_state) made the start")
    if cs is None:
        cs = consistent_state(kernels, t0, x0, xd0, rank_tol=cfg.rank_tol, project=consistent)
        cs.fallback = fallback
    # the projection of a row the stepper interpolates (a grid point it crossed: nullspace.py)
    stepper.project_row = lambda tau, x, xd: project_row(kernels, tau, x, xd, cfg.rank_tol)
    if consistent:
        scale = max(1.0, float(np.max(np.abs(x0))))
        if cs.dx > 1e-8 * scale or cs.dxd > 1e-8 * max(1.0, float(np.max(np.abs(xd0)))):
            warnings.warn(f"initial state projected onto the constraints: moved |dx| = {cs.dx:.3e}, "
                          f"|dxd| = {cs.dxd:.3e}", RuntimeWarning, stacklevel=4)
    return cs


def step_order(cfg, sch, kernels) -> tuple[int, str]:
    """The order of the step's global error and why (docs/fourth-order-step.md): 4 for the
    corrected step (null-space, symmetric chart, mass metric, γ = ½), whose jerk holds every force
    but the inputs' ∂f/∂u·u̇ (their rates are not known): with inputs the part they drive is
    second order; 2 for every other Newmark step with γ = ½ (HHT-α's and γ > ½: 1)."""
    if getattr(sch, "a_stable", False):
        if getattr(kernels, "n_in", 0):
            return 2, ("corrected step, fourth order in every force but the inputs' part, which "
                       "is second order (their rates are not known)")
        return 4, "corrected step (symmetric chart, mass metric, gamma = 1/2)"
    if sch.gamma == 0.5 and not sch.is_hht:
        return 2, "Newmark with gamma = 1/2 (the corrected step needs chart symmetric, metric mass)"
    return 1, "Newmark with gamma > 1/2 or HHT-alpha (numerical damping)"


def run_recorder(kernels, cfg: SimulationSettings, rows: int, every: int, h: float, inputs, *,
                 variable: bool = False) -> Recorder:
    """The run's Recorder (``rows`` rows, every ``every``-th step; ``inputs``: Kernels.u or
    None): the step's own work rule (the corrected trapezoid for the corrected step,
    symgen/quadrature.py), and λ re-solved with the inputs a controller just set for the driven
    joints' power after its sample."""
    outputs = kernels.n_out > 0 and hasattr(kernels, "outputs")
    return Recorder(kernels.n, kernels.m, kernels.n_out, rows, every, h,
                    energy=hasattr(kernels, "energy"), outputs=outputs, variable=variable,
                    power=power_columns(kernels.output_names) if outputs else (), inputs=inputs,
                    corrected=cfg.parsed_scheme().a_stable,
                    **dict(zip(("drive", "drive_names"), drive_of(kernels))),
                    lam_at=lambda t, x, xd: consistent_state(kernels, t, x, xd, project=False,
                                                             rank_tol=cfg.rank_tol).lam)


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
    dense_rows is this); returns the next k.  Call it after the step's work is integrated (Recorder.work_to).  The time the
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


def omega_start(kernels, stepper, cfg: SimulationSettings, t0: float, state) -> float:
    """ω_max at the consistent start (the compiled stepper's own, in C), NaN where H cannot be
    factored there."""
    try:
        if getattr(stepper, "compiled", False):
            return stepper.omega_at(t0, *state)
        return Linearization(kernels.n, kernels.m, cfg.rank_tol).omega_at(kernels, t0, *state)
    except (np.linalg.LinAlgError, ValueError):
        return math.nan


def stop_reason(stepper, step: int, t1: float, dt: float, bound: float, iters: int) -> str:
    """Why the state the stepper just accepted ends the run as diverged ('' if it does not)."""
    # divergence: non-finite values or a state past the bound (a sum is NaN/inf if any entry is)
    x1 = stepper.x
    if not math.isfinite(x1.sum() + stepper.xd.sum() + stepper.xdd.sum() + stepper.lam.sum()
                         + stepper.res.sum()):
        return (f"step {step} (t = {t1:.9g}): non-finite values in the state or its "
                f"constraint residuals (Newton iterations {iters})")
    # x, hẋ and h²ẍ are all lengths: a blow-up shows first in the velocities and
    # accelerations (constrained coordinates are held by the geometry)
    sizes = (norm2(x1), dt * norm2(stepper.xd), dt * dt * norm2(stepper.xdd))
    if max(sizes) > bound:
        which = ("|x|", "h|xd|", "h²|xdd|")[sizes.index(max(sizes))]
        return (f"step {step} (t = {t1:.9g}): {which} = {max(sizes):.3e} exceeds the "
                f"divergence bound {bound:.3e}")
    return ""


#: a failure reason longer than this is shortened (:func:`short_reason`); the whole text goes to
#: meta["failure_detail"]
REASON_CHARS = 200


def short_reason(reason: str, auto: bool = False) -> str:
    """A long reason cut to one line of at most ~REASON_CHARS characters at a word (a failed
    step's reason is its outcome's one line already, steppers.outcome.one_line; ``auto`` is
    kept for the callers' signature)."""
    reason = reason.splitlines()[0] if reason else reason
    if len(reason) <= REASON_CHARS:
        return reason
    cut = reason[:REASON_CHARS - 40].rsplit(" ", 1)[0]
    return f"{cut} … (meta['failure_detail'] has the rest)"


def finish(kernels, stepper, cfg: SimulationSettings, rec, cs, status: str, reason: str, detail,
           t_wall: float, extra_meta, *, h, t0: float, n_steps, last: int, every: int,
           bound: float, failure=None) -> Result:
    """The Result of a run: the recorder's rows, the status and the meta (``h``: the fixed step,
    or "auto"; ``detail``: meta["failure_detail"], the full text behind a short reason;
    ``failure``: the failed step's Outcome, meta["failure"], its long text the detail)."""
    if failure is not None and detail is None:
        detail = failure.detail or None

    sch = cfg.parsed_scheme()
    if len(reason) > REASON_CHARS or "\n" in reason:
        detail = reason if detail is None else f"{reason}\n{detail}"
        reason = short_reason(reason, auto=(h == "auto"))
    n, m = kernels.n, kernels.m
    compiled = getattr(stepper, "compiled", False)
    model = getattr(kernels, "model", None)
    names = (tuple(kernels.output_names)
             + tuple(work_names(kernels.output_names) if rec.power.size else ())
             + rec.drive_names)
    meta = _versions()
    meta.update({
        "model": kernels.name,
        "model_hash": getattr(kernels, "model_hash", getattr(model, "hash", None)),
        "kernels": type(kernels).__name__,
        "method": cfg.method,
        "scheme": sch.as_dict(),
        "gamma": sch.gamma,
        "beta": sch.beta,
        "h": h,
        "t0": t0,
        "t_end": float(cfg.t_end),
        "n_steps": n_steps,
        "steps_done": last,
        "every": every,
        "tol": float(cfg.tol),
        "constraint_tol": cfg.constraint_tol,
        "max_iter": int(cfg.max_iter),
        "rank_tol": float(cfg.rank_tol),
        "factorization": getattr(stepper, "factorization", None)
        or getattr(getattr(stepper, "lin", None), "factorization", None),
        "chart": getattr(stepper, "chart", None),
        "metric": cfg.metric if cfg.method == "nullspace" else None,
        "preset": cfg.preset,
        "stepper": "compiled" if compiled else "python",
        "divergence_bound": bound,
        "parameters": kernels.params() if hasattr(kernels, "params") else {},
        "initial_projection": cs.as_dict(),
        "coords": list(kernels.coord_names),
        "constraint_names": list(getattr(model, "constraint_names", None)
                                 or (f"q[{i}]" for i in range(m))),
        "n": n,
        "m": m,
        "run_stats": rec.stats(),
        "units": result_units(model, names),        # {"x": {coord: unit}, "outputs": …}
        "wall_time": time.perf_counter() - t_wall,
        # the t_eval rows' interpolation and projection, left out of the stepping rate
        "t_eval_seconds": float(getattr(rec, "dense_seconds", 0.0)),
    })
    meta["step_order"], meta["step_order_why"] = step_order(cfg, sch, kernels)
    meta["floor_steps"] = int(getattr(stepper, "floor_steps", 0))      # accepted at the round-off floor
    meta["floor_times"] = [float(v) for v in getattr(stepper, "floor_times", [])]   # the first 100
    meta["floor_t_last"] = (float(stepper.floor_t_last) if meta["floor_steps"] else None)
    for what in ("substepped", "landing", "crossed"):   # nullspace: sub-stepped steps, landings,
        # crossed grid points (issue 8 §2, issue 21)
        if hasattr(stepper, f"{what}_steps"):
            meta[f"{what}_steps"] = int(getattr(stepper, f"{what}_steps"))
            meta[f"{what}_times"] = [float(v) for v in getattr(stepper, f"{what}_times")]
    lin = getattr(getattr(stepper, "py", stepper), "lin", None)
    if getattr(lin, "sparse", False):                # factorization "sparse" (issue 14)
        meta["sparse_step"] = (stepper.sparse_stats() if hasattr(stepper, "sparse_stats")
                               else lin.stats())
    if hasattr(stepper, "min_rank") and m:
        meta["rank_H"] = [int(stepper.min_rank), int(stepper.max_rank)]
    if detail is not None:
        meta["failure_detail"] = detail
    if failure is not None:                  # the failed step as data (steppers/outcome.py)
        meta["failure"] = failure.as_dict()
    # every fallback the run took instead of what was asked or planned, one line each (issue 37.7)
    meta["fallbacks"] = list((extra_meta or {}).get("fallbacks", [])) + (
        [cs.fallback] if cs.fallback else [])
    for key, value in (extra_meta or {}).items():
        meta.setdefault(key, value)
    has_V = bool(getattr(kernels, "has_potential", False))
    has_energy = hasattr(kernels, "energy")
    arrays = rec.arrays()
    EK, EP = arrays["energy_kinetic"], arrays["energy_potential"]
    if getattr(kernels, "reaction_names", ()):       # the joints' reactions as columns
        from .reactions import reaction_columns
        rnames, rvals = reaction_columns(kernels, arrays)
        outs = arrays.get("outputs")
        arrays["outputs"] = rvals if outs is None else np.concatenate([outs, rvals], axis=1)
        names = names + rnames
        if meta["units"]:
            meta["units"].setdefault("outputs", {}).update(
                {k: "N" if k[-2] == "F" else "N·m" for k in rnames})
    return Result(coords=kernels.coord_names, output_names=names,
                  input_names=() if arrays["u"] is None else kernels.input_names,
                  energy=np.add(EK, EP) if (has_energy and has_V) else None,
                  status=status, reason=reason, meta=meta, **arrays)
