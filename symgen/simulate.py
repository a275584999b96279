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
    """Kernels for a Model (``symgen.build``, cached) or the Kernels object itself."""
    from .model import Model

    if isinstance(model_or_kernels, Model):
        try:
            from .build import build
        except ModuleNotFoundError as exc:          # the compiled pipeline is not installed yet
            if exc.name not in ("symgen.build", "symgen.codegen", "cffi"):
                raise
            from .kernels import LambdifyKernels

            warnings.warn(f"symgen.build is unavailable ({exc}); using the (slow) LambdifyKernels",
                          RuntimeWarning, stacklevel=3)
            return LambdifyKernels(model_or_kernels)
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
             stepper: str | None = None) -> Result:
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
    progress:
        called as ``progress(step_index, n_steps)`` after every step.
    divergence_bound:
        the run stops with status ``diverged`` when ‖x‖₂, h‖ẋ‖₂ or h²‖ẍ‖₂ exceeds it or a value
        is not finite.
    estimate:
        record ω_max and h_max every step (index3 pays one extra SVD and kernel call for it).
    stepper:
        ``"compiled"`` (the whole step in C, :mod:`symgen.steppers.compiled`; the default when the
        kernels are compiled and the method and options are supported) or ``"python"`` (the
        readable reference steppers; the default otherwise).  Recorded in ``meta['stepper']``.
    blas_threads:
        BLAS threads during the run (threadpoolctl; ``None`` leaves BLAS as it is).  The step's
        matrices are small: one thread is faster (2.3× on the 243-coordinate N four-bar on an idle
        2-core machine) and does not collapse when other processes load the cores.
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

    saved_p = kernels.p.copy()
    try:
        if params:
            kernels.set_params(dict(params))
        stepper = _make_stepper(stepper, method, kernels, sch, dt, tol=tol,
                                constraint_tol=constraint_tol, max_iter=max_iter,
                                rank_tol=rank_tol, estimate=estimate, factorization=factorization,
                                divergence_bound=float(divergence_bound))
        # overflow/invalid values in a diverging run are reported as status, not as warnings
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"), \
                _blas_limit(blas_threads):
            return _run(kernels, stepper, model, method, sch, dt, t0, t_end, n_steps, x0, xd0, tol,
                        constraint_tol, max_iter, rank_tol, progress, float(divergence_bound),
                        consistent, estimate, t_wall)
    finally:
        kernels.p[:] = saved_p


def _make_stepper(kind, method, kernels, sch, dt, *, divergence_bound, factorization, **kw):
    """The compiled stepper (``kind`` "compiled", or None when it supports the case) or the Python
    one (``kind`` "python", or None otherwise)."""
    from .steppers.compiled import CompiledStepper, unsupported

    if kind not in (None, "compiled", "python"):
        raise ValueError(f"unknown stepper {kind!r}; known: 'compiled', 'python'")
    # the Python stepper also validates the options (the same errors for both)
    py = make_stepper(method, kernels, sch, dt, factorization=factorization, **kw)
    if kind != "python":
        why = unsupported(kernels, method, sch, factorization)
        if why is None:
            return CompiledStepper(kernels, method, sch, dt, divergence_bound=divergence_bound, **kw)
        if kind == "compiled":
            raise ValueError(f"stepper='compiled' cannot run this case: {why} (use stepper='python')")
    return py


def _blas_limit(threads: int | None):
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=int(threads), user_api="blas")


def _run(kernels, stepper, model, method, sch, dt, t0, t_end, n_steps, x0, xd0, tol,
         constraint_tol, max_iter, rank_tol, progress, bound, consistent, estimate, t_wall) -> Result:
    n, m, n_out = kernels.n, kernels.m, kernels.n_out
    N = n_steps + 1
    # every buffer of the run, allocated once -------------------------------------------------
    T = np.empty(N)
    X, XD, XDD, LAM = np.empty((N, n)), np.empty((N, n)), np.empty((N, n)), np.empty((N, m))
    PE, VE, AE = np.zeros(N), np.zeros(N), np.zeros(N)
    OM, HM = np.full(N, np.nan), np.full(N, np.nan)
    IT = np.zeros(N, dtype=int)
    EK, EP = np.zeros(N), np.zeros(N)
    OUT = np.zeros((N, n_out))
    has_energy = hasattr(kernels, "energy")
    has_outputs = n_out > 0 and hasattr(kernels, "outputs")

    # initial state --------------------------------------------------------------------------
    if consistent:
        cs = consistent_state(kernels, t0, x0, xd0, rank_tol=rank_tol)
        scale = max(1.0, float(np.max(np.abs(x0))))
        if cs.dx > 1e-8 * scale or cs.dxd > 1e-8 * max(1.0, float(np.max(np.abs(xd0)))):
            warnings.warn(f"initial state projected onto the constraints: moved |dx| = {cs.dx:.3e}, "
                          f"|dxd| = {cs.dxd:.3e}", RuntimeWarning, stacklevel=3)
    else:
        cs = consistent_state(kernels, t0, x0, xd0, rank_tol=rank_tol, project=False)
    T[0] = t0
    X[0], XD[0], XDD[0], LAM[0] = cs.x, cs.xd, cs.xdd, cs.lam
    PE[0], VE[0], AE[0] = cs.residuals
    if estimate:
        try:
            OM[0] = _estimate_at(kernels, Linearization(n, m, rank_tol), t0, cs.x, cs.xd, cs.xdd, cs.lam)
        except (np.linalg.LinAlgError, ValueError):
            OM[0] = np.nan
        HM[0] = sch.h_max(OM[0])

    def record(i, t):
        if has_energy:
            EK[i], EP[i] = kernels.energy(t, X[i], XD[i])
        if has_outputs:
            OUT[i] = kernels.outputs(t, X[i], XD[i])

    record(0, t0)
    stepper.start(t0, X[0], XD[0], XDD[0], LAM[0])

    status, reason, last = "completed", "", 0
    steps = range(n_steps)
    if getattr(stepper, "compiled", False):         # C steps chunk by chunk into the arrays
        status, reason, last = stepper.run(T, X, XD, XDD, LAM, PE, VE, AE, OM, HM, IT, EK, EP, OUT,
                                           t0, dt, n_steps, progress, bound)
        steps = ()
    for i in steps:
        t = t0 + i * dt
        t1 = t0 + (i + 1) * dt
        try:
            iters = stepper.step(t, X[i], XD[i], XDD[i], LAM[i])
        except StepFailure as exc:
            status = "diverged" if exc.nonfinite else "failed"
            reason = f"step {i + 1} (t = {t1:.9g}): {exc}"
            log.warning("simulation of %s stopped: %s", kernels.name, reason)
            break
        except (FloatingPointError, OverflowError, ZeroDivisionError, np.linalg.LinAlgError) as exc:
            status = "failed"
            reason = (f"step {i + 1} (t = {t1:.9g}): numerical error inside the {method} step: "
                      f"{type(exc).__name__}: {exc}")
            log.warning("simulation of %s stopped: %s", kernels.name, reason)
            break
        # divergence: non-finite values or a state past the bound (a sum is NaN/inf if any entry is)
        x1 = stepper.x
        if not math.isfinite(x1.sum() + stepper.xd.sum() + stepper.xdd.sum() + stepper.lam.sum()
                             + stepper.res.sum()):
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
        j = i + 1
        T[j] = t1
        X[j], XD[j], XDD[j] = x1, stepper.xd, stepper.xdd
        LAM[j] = stepper.lam
        PE[j], VE[j], AE[j] = stepper.res
        IT[j] = iters
        if estimate:
            w = stepper.omega_max
            OM[j] = w
            HM[j] = sch.h_max(w)
        if has_energy:
            EK[j], EP[j] = kernels.energy(t1, x1, stepper.xd)
        if has_outputs:
            OUT[j] = kernels.outputs(t1, x1, stepper.xd)
        last = j
        if progress is not None:
            progress(j, n_steps)

    K = last + 1
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
        "tol": tol,
        "constraint_tol": constraint_tol,
        "max_iter": max_iter,
        "rank_tol": rank_tol,
        "factorization": getattr(stepper, "factorization", None)
        or getattr(getattr(stepper, "lin", None), "factorization", None),
        "stepper": "compiled" if getattr(stepper, "compiled", False) else "python",
        "divergence_bound": bound,
        "parameters": kernels.params() if hasattr(kernels, "params") else {},
        "initial_projection": cs.as_dict(),
        "coords": list(kernels.coord_names),
        "n": n,
        "m": m,
        "wall_time": time.perf_counter() - t_wall,
    })
    meta["stalled_steps"] = int(getattr(stepper, "stalled_steps", 0))
    if hasattr(stepper, "min_rank") and m:
        meta["rank_H"] = [int(stepper.min_rank), int(stepper.max_rank)]
    return Result(
        t=T[:K].copy(), x=X[:K].copy(), xd=XD[:K].copy(), xdd=XDD[:K].copy(), lam=LAM[:K].copy(),
        coords=kernels.coord_names, pos_err=PE[:K].copy(), vel_err=VE[:K].copy(),
        acc_err=AE[:K].copy(), omega_max=OM[:K].copy(), h_max=HM[:K].copy(),
        newton_iters=IT[:K].copy(),
        energy=(EK[:K] + EP[:K]) if (has_energy and has_V) else None,
        energy_kinetic=EK[:K].copy() if has_energy else None,
        energy_potential=EP[:K].copy() if has_energy else None,
        outputs=OUT[:K].copy(), output_names=kernels.output_names,
        status=status, reason=reason, meta=meta)
