"""The Python entry point: consistent initial state, the step loop, recording, failure as data.

    res = symgen.simulate(model, method="nullspace", scheme="fox-goodwin", dt=0.1, t_end=100,
                          params={"T0": 9.0})

``model_or_kernels`` is a :class:`~symgen.Model` (compiled with :func:`symgen.build`, cached) or
any Kernels object (e.g. :class:`~symgen.LambdifyKernels`).  Defaults for method, scheme, dt,
t_end, tol, max_iter and rank_tol come from ``model.settings``.
"""
from __future__ import annotations

import contextlib
import logging
import math
import platform
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping, NamedTuple

import numpy as np

from ._record import Recorder, check_memory
from .result import Result
from .steppers import (DEFAULT_CONSTRAINT_TOL, DEFAULT_MAX_ITER, DEFAULT_RANK_TOL, DEFAULT_TOL,
                       METHODS, Linearization, StepFailure, make_stepper, parse_scheme)
from .steppers.base import norm2

__all__ = ["simulate", "consistent_state", "suggest_step", "ConsistentState", "StepSuggestion",
           "as_kernels"]

log = logging.getLogger(__name__)

DEFAULT_METHOD = "nullspace"
DEFAULT_SCHEME = "trapezoidal"
DEFAULT_DIVERGENCE_BOUND = 1e8


# --------------------------------------------------------------------------------------------
def as_kernels(model_or_kernels):
    """Kernels for a Model (``symgen.build``, cached) or the Kernels object itself.

    A Model is always compiled: without a C compiler ``build`` raises a BuildError saying how to
    go on (pass ``symgen.LambdifyKernels(model)`` instead of the model).
    """
    from .build import build
    from .model import Model

    if isinstance(model_or_kernels, Model):
        return build(model_or_kernels)
    needed = ("dynamics", "constraints", "n", "m")
    if all(hasattr(model_or_kernels, a) for a in needed):
        return model_or_kernels
    raise TypeError(f"simulate needs a symgen.Model or a Kernels object, got {type(model_or_kernels).__name__}")


def _settings(kernels) -> Mapping:
    model = getattr(kernels, "model", None)
    return dict(getattr(model, "settings", {}) or {})


def _state_vector(value, n: int, what: str, coord_names) -> np.ndarray:
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be {n} numbers (coordinates {list(coord_names)}), got {value!r}") from None
    if arr.shape != (n,):
        raise ValueError(f"{what} has shape {arr.shape}; expected ({n},) for coordinates {list(coord_names)}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what} has non-finite entries: {arr}")
    return arr


# --------------------------------------------------------------------------------------------
@dataclass
class ConsistentState:
    """A state satisfying q = 0, q̇ = 0 and the index-1 equations, and how far it was moved."""

    t: float
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    lam: np.ndarray
    dx: float                  # ‖x − x₀‖₂ of the minimum-norm position correction
    dxd: float                 # ‖ẋ − ẋ₀‖₂ of the velocity correction
    iterations: int            # Gauss–Newton iterations of the position projection
    rank: int                  # rank of H at the state
    residuals: tuple = field(default=(0.0, 0.0, 0.0))   # ‖q‖, ‖q̇‖, ‖q̈‖ after the projection

    def as_dict(self) -> dict:
        return {"dx": self.dx, "dxd": self.dxd, "iterations": self.iterations, "rank": self.rank,
                "residuals": list(self.residuals)}


def consistent_state(kernels, t: float, x0, xd0, *, tol: float = 1e-13, max_iter: int = 50,
                     rank_tol: float = DEFAULT_RANK_TOL, project: bool = True) -> ConsistentState:
    """Project (x0, ẋ0) onto q = 0 and q̇ = 0 and solve the index-1 system for ẍ0, λ0 (issue §5).

    * positions: Gauss–Newton with minimum-norm corrections x ← x − H⁺q until
      ‖q‖∞ ≤ tol·max(1, ‖x‖∞) (``ValueError`` if that fails);
    * velocities: ẋ ← ẋ − H⁺q̇ (q̇ is affine in ẋ: one exact step);
    * accelerations: ẍ = ẍ_p + N_H z with ẍ_p = −H⁺q̈(ẍ = 0) and N_HᵀMN_H z = N_Hᵀ(f − M ẍ_p)
      (works with a singular M, e.g. zero rotational inertia, and with redundant constraints);
      λ from Hᵀλ = M ẍ − f by least squares.

    ``project=False`` keeps x0, ẋ0 as given and only solves for ẍ0, λ0.
    """
    kernels = as_kernels(kernels)
    n, m = kernels.n, kernels.m
    x = np.array(x0, dtype=float).reshape(n)
    xd = np.array(xd0, dtype=float).reshape(n)
    x_start, xd_start = x.copy(), xd.copy()
    zeros_n, lam = np.zeros(n), np.zeros(m)
    lin = Linearization(n, m, rank_tol)
    it = 0
    if m and project:
        for it in range(max_iter + 1):
            q, H, *_ = kernels.constraints(t, x, xd, zeros_n)
            rq = float(np.max(np.abs(q)))
            if not math.isfinite(rq):
                raise ValueError(f"constraints are not finite at the initial state x0 = {x}")
            if rq <= tol * max(1.0, float(np.max(np.abs(x)))):
                break
            if it == max_iter:
                raise ValueError(f"cannot project x0 onto the constraints q = 0: |q| = {rq:.3e} after "
                                 f"{max_iter} Gauss-Newton iterations (is the initial configuration "
                                 "far from an assemblable one?)")
            lin.factor(H)
            x -= lin.Hpinv @ q                                  # minimum-norm correction
        q, H, q_dot, *_ = kernels.constraints(t, x, xd, zeros_n)
        lin.factor(H)
        xd -= lin.Hpinv @ q_dot                                 # minimum-norm velocity correction
    if m:
        q, H, q_dot, H_dot, q_ddot0, H_ddot = kernels.constraints(t, x, xd, zeros_n)
        k = lin.factor(H)
        xdd_p = -(lin.Hpinv @ q_ddot0)                          # H ẍ = −q̈(ẍ = 0)
    else:
        k = lin.factor(np.zeros((0, n)))
        xdd_p = np.zeros(n)
    M, f, K, C = kernels.dynamics(t, x, xd, zeros_n, lam)
    N = lin.N
    M_R = N.T @ M @ N
    try:
        z = np.linalg.solve(M_R, N.T @ (f - M @ xdd_p)) if k else np.zeros(0)
    except np.linalg.LinAlgError:
        raise ValueError("the reduced mass matrix N_Hᵀ M N_H is singular at the initial state: "
                         "the model has a massless degree of freedom") from None
    xdd = xdd_p + N @ z
    if m:
        lam = lin.Hpinv.T @ (M @ xdd - f)                       # Gᵀλ = M ẍ − f (least squares)
        q, H, q_dot, H_dot, q_ddot, H_ddot = kernels.constraints(t, x, xd, xdd)
        resid = (float(np.linalg.norm(q)), float(np.linalg.norm(q_dot)), float(np.linalg.norm(q_ddot)))
    else:
        resid = (0.0, 0.0, 0.0)
    return ConsistentState(t=float(t), x=x, xd=xd, xdd=xdd, lam=lam,
                           dx=float(np.linalg.norm(x - x_start)),
                           dxd=float(np.linalg.norm(xd - xd_start)),
                           iterations=it, rank=lin.rank, residuals=resid)


# --------------------------------------------------------------------------------------------
class StepSuggestion(NamedTuple):
    """ω_max of the reduced linearized system at a state and the Eq. 11 step limit."""

    omega_max: float
    h_max: float


def _estimate_at(kernels, lin: Linearization, t, x, xd, xdd, lam) -> float:
    """ω_max from M_R, K_R (end of Sec. 5) linearized at a state (for m = 0: eig(K, M))."""
    return lin.omega_at(kernels, t, x, xd, xdd, lam)


def suggest_step(model_or_kernels, scheme=None, t: float = 0.0, x=None, xd=None, *,
                 params: Mapping | None = None, rank_tol: float = DEFAULT_RANK_TOL) -> StepSuggestion:
    """ω_max at a state (default: the model's initial state, made consistent) and the largest
    stable step h_max of ``scheme`` by Eq. 11 (inf for unconditionally stable schemes).

    Returns a :class:`StepSuggestion` ``(omega_max, h_max)``.
    """
    kernels = as_kernels(model_or_kernels)
    settings = _settings(kernels)
    sch = parse_scheme(scheme if scheme is not None else settings.get("scheme", DEFAULT_SCHEME))
    model = getattr(kernels, "model", None)
    x = np.array(model.x0 if x is None else x, dtype=float)
    xd = np.array(model.xd0 if xd is None else xd, dtype=float)
    saved = kernels.p.copy()
    try:
        if params:
            kernels.set_params(dict(params))
        cs = consistent_state(kernels, t, x, xd, rank_tol=rank_tol)
        lin = Linearization(kernels.n, kernels.m, rank_tol)
        w = _estimate_at(kernels, lin, t, cs.x, cs.xd, cs.xdd, cs.lam)
    finally:
        kernels.p[:] = saved
    return StepSuggestion(w, sch.h_max(w))


# --------------------------------------------------------------------------------------------
def _versions() -> dict:
    import scipy
    import sympy

    from . import __version__

    return {"symgen": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "sympy": sympy.__version__, "python": platform.python_version()}


def simulate(model_or_kernels, method: str | None = None, scheme=None, dt: float | None = None,
             t_end: float | None = None, params: Mapping | None = None, x0=None, xd0=None,
             tol: float | None = None, max_iter: int | None = None, rank_tol: float | None = None,
             progress: Callable[[int, int], None] | None = None,
             divergence_bound: float = DEFAULT_DIVERGENCE_BOUND, *,
             constraint_tol: float = DEFAULT_CONSTRAINT_TOL, t0: float = 0.0,
             estimate: bool = True, consistent: bool = True,
             blas_threads: int | None = 1, factorization: str = "auto",
             chart: str | None = None, every: int = 1,
             meta: Mapping | None = None) -> Result:
    """Integrate a model from t0 to t_end with fixed steps dt; returns a :class:`~symgen.Result`.

    Parameters
    ----------
    model_or_kernels:
        a :class:`~symgen.Model` (built with :func:`symgen.build`, cached) or a Kernels object.
    method:
        ``"nullspace"`` (the paper's method), ``"index3"`` (classical Newmark / HHT with
        multipliers), ``"newmark"`` or ``"central-difference"`` (minimal coordinates, m = 0).
    scheme:
        a name (``"trapezoidal"``, ``"fox-goodwin"``, ``"linear-acceleration"``), ``"GAMMA,BETA"``,
        ``(gamma, beta)``, a :class:`~symgen.steppers.Scheme`, or ``"hht:ALPHA"`` (index3, newmark).
    dt, t_end:
        step size and final time (the run has round((t_end − t0)/dt) steps of exactly dt).
    params:
        parameter overrides by name (unknown names raise KeyError); the kernels' parameters are
        restored after the run.
    x0, xd0:
        initial coordinates and velocities (default: the model's); projected onto q = 0, q̇ = 0
        with minimum-norm corrections (``meta['initial_projection']`` says how far) unless
        ``consistent=False``.
    tol, constraint_tol, max_iter, rank_tol:
        Newton tolerances (relative update of (x, hẋ, h²ẍ); constraint residuals in the same
        units), iteration limit, relative SVD rank tolerance (see ``symgen.steppers``).
    factorization:
        how H is factored each iteration: ``"svd"``, ``"qr"`` (pivoted QR of Hᵀ, several times
        faster for large models) or ``"auto"`` (SVD below 20 coordinates, QR from there on).
    chart:
        the null-space method's chart: ``"end"`` (default; the paper's method, Newmark on the
        tangent space at t + h) or ``"symmetric"`` (beyond the paper: Newmark on the null space
        of ½(H(t) + H(t + h)); no energy drift at large rotations per step, see
        ``symgen.steppers.chart``).  Recorded in ``meta['chart']`` (None for other methods).
    progress:
        called as ``progress(step_index, n_steps)`` after every step.
    divergence_bound:
        the run stops with status ``diverged`` when ‖x‖₂, h‖ẋ‖₂ or h²‖ẍ‖₂ exceeds it or a value
        is not finite.
    estimate:
        record ω_max and h_max every step (index3 pays one extra SVD and kernel call for it).
    every:
        record every ``every``-th step (and always the initial state and the last step taken);
        ``meta['run_stats']`` keeps the maxima of the residuals, Newton iterations, ω_max and the
        smallest h_max over *all* steps.  A run whose recorded rows would take more than half the
        physical memory is refused before it starts (:class:`ValueError` naming the ``every``
        that would fit).
    meta:
        extra entries for the result's ``meta`` (e.g. the ``model()`` options the model was built
        with); they do not replace the entries simulate writes.
    blas_threads:
        BLAS threads during the run (threadpoolctl; ``None`` leaves BLAS as it is).  The step's
        matrices are small: one thread is faster (2.3× on the 243-coordinate N four-bar on an idle
        2-core machine) and does not collapse when other processes load the cores.

    Failure is data, not an exception: a run that diverges, fails or is interrupted returns the
    steps it took, with ``status`` ``'diverged'``, ``'failed'`` or ``'interrupted'`` and a
    ``reason``.  A KeyboardInterrupt (Ctrl-C, or any subclass of it raised by a signal handler)
    during the steps ends the run with status ``'interrupted'``; simulate returns that Result
    rather than re-raising, so a script running several simulations should check
    ``result.status`` (before the first step an interrupt propagates: nothing was computed).
    """
    t_wall = time.perf_counter()
    kernels = as_kernels(model_or_kernels)
    model = getattr(kernels, "model", None)
    settings = _settings(kernels)
    method = method if method is not None else settings.get("method", DEFAULT_METHOD)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    if method in ("newmark", "central-difference") and kernels.m:
        raise ValueError(f"method {method!r} is a minimal-coordinate reference for models without "
                         f"constraints; {kernels.name!r} has m = {kernels.m} constraints "
                         "(use 'nullspace' or 'index3')")
    sch = parse_scheme(scheme if scheme is not None else settings.get("scheme", DEFAULT_SCHEME))
    if method == "central-difference":
        sch = parse_scheme("central-difference")
    chart = _chart(chart if chart is not None else settings.get("chart"), method)
    dt = dt if dt is not None else settings.get("dt")
    t_end = t_end if t_end is not None else settings.get("t_end")
    if dt is None or t_end is None:
        raise ValueError("dt and t_end must be given (the model's settings do not provide them)")
    dt, t_end, t0 = float(dt), float(t_end), float(t0)
    if not (dt > 0.0 and math.isfinite(dt)):
        raise ValueError(f"dt must be positive and finite, got {dt}")
    if not (math.isfinite(t_end) and t_end > t0):
        raise ValueError(f"t_end must be finite and greater than t0 = {t0}, got {t_end}")
    tol = float(tol if tol is not None else settings.get("tol", DEFAULT_TOL))
    max_iter = int(max_iter if max_iter is not None else settings.get("max_iter", DEFAULT_MAX_ITER))
    rank_tol = float(rank_tol if rank_tol is not None else settings.get("rank_tol", DEFAULT_RANK_TOL))
    if not (divergence_bound > 0):
        raise ValueError(f"divergence_bound must be positive, got {divergence_bound}")
    n = kernels.n
    coord_names = tuple(kernels.coord_names)
    if x0 is None:
        x0 = model.x0 if model is not None else np.zeros(n)
    if xd0 is None:
        xd0 = model.xd0 if model is not None else np.zeros(n)
    x0 = _state_vector(x0, n, "x0", coord_names)
    xd0 = _state_vector(xd0, n, "xd0", coord_names)
    span = (t_end - t0) / dt
    n_steps = int(round(span))
    if abs(span - n_steps) > 1e-9 * max(1.0, span):
        n_steps = int(math.ceil(span))
        warnings.warn(f"(t_end − t0)/dt = {span:.12g} is not an integer; taking {n_steps} steps "
                      f"(ending at t = {t0 + n_steps * dt:.12g})", RuntimeWarning, stacklevel=2)

    if isinstance(every, bool) or int(every) != every or every < 1:
        raise ValueError(f"every must be a positive integer, got {every!r}")
    every = int(every)
    check_memory(n_steps, every, n, kernels.m, kernels.n_out)

    saved_p = kernels.p.copy()
    try:
        if params:
            kernels.set_params(dict(params))
        stepper = make_stepper(method, kernels, sch, dt, tol=tol, constraint_tol=constraint_tol,
                               max_iter=max_iter, rank_tol=rank_tol, estimate=estimate,
                               factorization=factorization,
                               **({"chart": chart} if chart is not None else {}))
        # overflow/invalid values in a diverging run are reported as status, not as warnings
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"), \
                _blas_limit(blas_threads):
            return _run(kernels, stepper, model, method, sch, dt, t0, t_end, n_steps, x0, xd0, tol,
                        constraint_tol, max_iter, rank_tol, progress, float(divergence_bound),
                        consistent, estimate, t_wall, every, meta)
    finally:
        kernels.p[:] = saved_p


def _chart(chart, method: str) -> str | None:
    """The chart for the nullspace method (default "end"); None for the other methods."""
    from .steppers.chart import CHARTS

    if chart is not None and chart not in CHARTS:
        raise ValueError(f"unknown chart {chart!r}; known: {', '.join(CHARTS)}")
    if method != "nullspace":
        if chart not in (None, "end"):
            raise ValueError(f"chart {chart!r} applies to the nullspace method only, not {method!r}")
        return None
    return chart or "end"


def _blas_limit(threads: int | None):
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=int(threads), user_api="blas")


def _run(kernels, stepper, model, method, sch, dt, t0, t_end, n_steps, x0, xd0, tol,
         constraint_tol, max_iter, rank_tol, progress, bound, consistent, estimate, t_wall,
         every, extra_meta) -> Result:
    n, m, n_out = kernels.n, kernels.m, kernels.n_out
    has_energy = hasattr(kernels, "energy")
    has_outputs = n_out > 0 and hasattr(kernels, "outputs")
    # every recorded row, allocated once (every K-th step and the last); the state being
    # advanced lives in its own buffers so that unrecorded steps cost no row
    rec = Recorder(n, m, n_out, n_steps, every, dt, energy=has_energy, outputs=has_outputs)

    # initial state --------------------------------------------------------------------------
    if consistent:
        cs = consistent_state(kernels, t0, x0, xd0, rank_tol=rank_tol)
        scale = max(1.0, float(np.max(np.abs(x0))))
        if cs.dx > 1e-8 * scale or cs.dxd > 1e-8 * max(1.0, float(np.max(np.abs(xd0)))):
            warnings.warn(f"initial state projected onto the constraints: moved |dx| = {cs.dx:.3e}, "
                          f"|dxd| = {cs.dxd:.3e}", RuntimeWarning, stacklevel=3)
    else:
        cs = consistent_state(kernels, t0, x0, xd0, rank_tol=rank_tol, project=False)
    x, xd, xdd, lam = cs.x.copy(), cs.xd.copy(), cs.xdd.copy(), cs.lam.copy()
    res = np.array(cs.residuals, dtype=float)
    w = hm = math.nan
    if estimate:
        try:
            w = _estimate_at(kernels, Linearization(n, m, rank_tol), t0, x, xd, xdd, lam)
        except (np.linalg.LinAlgError, ValueError):
            w = math.nan
        hm = sch.h_max(w)

    def record(j, t, iters):
        rec.add(j, t, x, xd, xdd, lam, res, iters, w, hm,
                kernels.energy(t, x, xd) if has_energy else None,
                kernels.outputs(t, x, xd) if has_outputs else None)

    rec.observe(t0, res, 0, w, hm)
    record(0, t0, 0)
    stepper.start(t0, x, xd, xdd, lam)

    status, reason, last, it_last, whole = "completed", "", 0, 0, True
    try:
        for i in range(n_steps):
            t = t0 + i * dt
            t1 = t0 + (i + 1) * dt
            try:
                iters = stepper.step(t, x, xd, xdd, lam)
            except StepFailure as exc:
                status = "diverged" if exc.nonfinite else "failed"
                reason = f"step {i + 1} (t = {t1:.9g}): {exc}"
                log.warning("simulation of %s stopped: %s", kernels.name, reason)
                break
            except (FloatingPointError, OverflowError, ZeroDivisionError,
                    np.linalg.LinAlgError) as exc:
                status = "failed"
                reason = (f"step {i + 1} (t = {t1:.9g}): numerical error inside the {method} "
                          f"step: {type(exc).__name__}: {exc}")
                log.warning("simulation of %s stopped: %s", kernels.name, reason)
                break
            # divergence: non-finite values or a state past the bound (a sum is NaN/inf if any
            # entry is)
            x1 = stepper.x
            if not math.isfinite(x1.sum() + stepper.xd.sum() + stepper.xdd.sum()
                                 + stepper.lam.sum() + stepper.res.sum()):
                status = "diverged"
                reason = (f"step {i + 1} (t = {t1:.9g}): non-finite values in the state or its "
                          f"constraint residuals (Newton iterations {iters})")
                log.warning("simulation of %s stopped: %s", kernels.name, reason)
                break
            # x, hẋ and h²ẍ are all lengths: a blow-up shows first in the velocities and
            # accelerations (constrained coordinates are held by the geometry)
            sizes = (norm2(x1), dt * norm2(stepper.xd), dt * dt * norm2(stepper.xdd))
            if max(sizes) > bound:
                which = ("|x|", "h|xd|", "h²|xdd|")[sizes.index(max(sizes))]
                status = "diverged"
                reason = (f"step {i + 1} (t = {t1:.9g}): {which} = {max(sizes):.3e} exceeds the "
                          f"divergence bound {bound:.3e}")
                log.warning("simulation of %s stopped: %s", kernels.name, reason)
                break
            # accept the step (an interrupt in here leaves the state half-copied: `whole`)
            j = i + 1
            whole = False
            x[:], xd[:], xdd[:], lam[:] = x1, stepper.xd, stepper.xdd, stepper.lam
            res[:] = stepper.res
            if estimate:
                w = stepper.omega_max
                hm = sch.h_max(w)
            whole = True
            last, it_last = j, iters
            rec.observe(t1, res, iters, w, hm)
            if j % every == 0:
                record(j, t1, iters)
            if progress is not None:
                progress(j, n_steps)
    except KeyboardInterrupt as exc:
        status = "interrupted"
        why = str(exc) or "KeyboardInterrupt (Ctrl-C)"
        if not whole:                       # the state of step `last + 1` is half-copied
            last = rec.last_step
        reason = (f"interrupted by {why} after step {last} of {n_steps} "
                  f"(t = {t0 + last * dt:.9g})")
        log.warning("simulation of %s stopped: %s", kernels.name, reason)
    if rec.last_step != last:               # always keep the last computed state
        record(last, t0 + last * dt, it_last)

    has_V = bool(getattr(kernels, "has_potential", False))
    meta = _versions()
    meta.update({
        "model": kernels.name,
        "model_hash": getattr(kernels, "model_hash", getattr(model, "hash", None)),
        "kernels": type(kernels).__name__,
        "method": method,
        "scheme": sch.as_dict(),
        "gamma": sch.gamma,
        "beta": sch.beta,
        "h": dt,
        "t0": t0,
        "t_end": t_end,
        "n_steps": n_steps,
        "steps_done": last,
        "every": every,
        "tol": tol,
        "constraint_tol": constraint_tol,
        "max_iter": max_iter,
        "rank_tol": rank_tol,
        "factorization": getattr(getattr(stepper, "lin", None), "factorization", None),
        "chart": getattr(stepper, "chart", None),
        "divergence_bound": bound,
        "parameters": kernels.params() if hasattr(kernels, "params") else {},
        "initial_projection": cs.as_dict(),
        "coords": list(kernels.coord_names),
        "n": n,
        "m": m,
        "run_stats": rec.stats(),
        "wall_time": time.perf_counter() - t_wall,
    })
    meta["floor_steps"] = int(getattr(stepper, "floor_steps", 0))      # accepted at the round-off floor
    meta["floor_times"] = [float(v) for v in getattr(stepper, "floor_times", [])]   # the first 100
    meta["floor_t_last"] = (float(stepper.floor_t_last) if meta["floor_steps"] else None)
    for what in ("retried", "halved"):          # nullspace: steps solved by a retry (issue 8 §2)
        if hasattr(stepper, f"{what}_steps"):
            meta[f"{what}_steps"] = int(getattr(stepper, f"{what}_steps"))
            meta[f"{what}_times"] = [float(v) for v in getattr(stepper, f"{what}_times")]
    if hasattr(stepper, "min_rank") and m:
        meta["rank_H"] = [int(stepper.min_rank), int(stepper.max_rank)]
    for key, value in (extra_meta or {}).items():
        meta.setdefault(key, value)
    arrays = rec.arrays()
    EK, EP = arrays["energy_kinetic"], arrays["energy_potential"]
    return Result(coords=kernels.coord_names, output_names=kernels.output_names,
                  energy=np.add(EK, EP) if (has_energy and has_V) else None,
                  status=status, reason=reason, meta=meta, **arrays)
