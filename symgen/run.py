"""The time loop (:func:`symgen.simulate`): settings merged, the consistent start, the steps,
recording, failure as data.

    res = symgen.simulate(model, method="nullspace", scheme="fox-goodwin", dt=0.1, t_end=100,
                          params={"T0": 9.0})

``model_or_kernels`` is a :class:`~symgen.Model` (compiled with :func:`symgen.build`, cached) or
any Kernels object (e.g. :class:`~symgen.LambdifyKernels`).  The settings are
:class:`~symgen.SimulationSettings`: its defaults, then ``model.settings``, then the ``settings``
argument, then the keyword arguments.
"""
from __future__ import annotations

import contextlib
import logging
import math
import platform
import time
import warnings
from typing import Callable, Mapping

import numpy as np

from .assemble import consistent_state
from .jit import as_kernels
from .result import Result
from .settings import SimulationSettings
from .steppers import Linearization, StepFailure, make_stepper
from .steppers.base import norm2

__all__ = ["simulate"]

log = logging.getLogger(__name__)


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
def _versions() -> dict:
    import scipy
    import sympy

    from .version import __version__

    return {"symgen": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "sympy": sympy.__version__, "python": platform.python_version()}


def simulate(model_or_kernels, settings: SimulationSettings | Mapping | None = None, *,
             method: str | None = None, scheme=None, dt: float | None = None,
             t_end: float | None = None, params: Mapping | None = None, x0=None, xd0=None,
             tol: float | None = None, max_iter: int | None = None, rank_tol: float | None = None,
             constraint_tol: float | None = None, factorization: str | None = None,
             divergence_bound: float | None = None,
             progress: Callable[[int, int], None] | None = None, t0: float = 0.0,
             estimate: bool = True, consistent: bool = True,
             blas_threads: int | None = 1) -> Result:
    """Integrate a model from t0 to t_end with fixed steps dt; returns a :class:`~symgen.Result`.

    Parameters
    ----------
    model_or_kernels:
        a :class:`~symgen.Model` (built with :func:`symgen.build`, cached) or a Kernels object.
    settings:
        a :class:`~symgen.SimulationSettings` (or a mapping of its fields); it overrides the
        model's recommended settings, and the keyword arguments below override it.
    method, scheme, dt, t_end, tol, max_iter, rank_tol, constraint_tol, factorization,
    divergence_bound:
        the fields of :class:`~symgen.SimulationSettings` (None: not given).  ``method``:
        ``"nullspace"`` (the paper's method), ``"index3"`` (classical Newmark / HHT with
        multipliers), ``"newmark"`` or ``"central-difference"`` (minimal coordinates, m = 0).
        ``scheme``: a name (``"trapezoidal"``, ``"fox-goodwin"``, ``"linear-acceleration"``),
        ``"GAMMA,BETA"``, ``(gamma, beta)``, a :class:`~symgen.steppers.Scheme`, or
        ``"hht:ALPHA"`` (index3, newmark).  The run has round((t_end − t0)/dt) steps of exactly dt.
    params:
        parameter overrides by name (unknown names raise KeyError); the kernels' parameters are
        restored after the run.
    x0, xd0:
        initial coordinates and velocities (default: the model's); projected onto q = 0, q̇ = 0
        with minimum-norm corrections (``meta['initial_projection']`` says how far) unless
        ``consistent=False``.
    progress:
        called as ``progress(step_index, n_steps)`` after every step.
    estimate:
        record ω_max and h_max every step (index3 pays one extra SVD and kernel call for it).
    blas_threads:
        BLAS threads during the run (threadpoolctl; ``None`` leaves BLAS as it is).  The step's
        matrices are small: one thread is faster (2.3× on the 243-coordinate N four-bar on an idle
        2-core machine) and does not collapse when other processes load the cores.
    """
    t_wall = time.perf_counter()
    kernels = as_kernels(model_or_kernels)
    model = getattr(kernels, "model", None)
    cfg = SimulationSettings.merged(
        getattr(model, "settings", None), settings, method=method, scheme=scheme, dt=dt,
        t_end=t_end, tol=tol, max_iter=max_iter, rank_tol=rank_tol, constraint_tol=constraint_tol,
        factorization=factorization, divergence_bound=divergence_bound)
    if cfg.method in ("newmark", "central-difference") and kernels.m:
        raise ValueError(f"method {cfg.method!r} is a minimal-coordinate reference for models without "
                         f"constraints; {kernels.name!r} has m = {kernels.m} constraints "
                         "(use 'nullspace' or 'index3')")
    if cfg.dt is None or cfg.t_end is None:
        raise ValueError("dt and t_end must be given (the model's settings do not provide them)")
    dt, t_end, t0 = float(cfg.dt), float(cfg.t_end), float(t0)
    if not (t_end > t0):
        raise ValueError(f"t_end must be finite and greater than t0 = {t0}, got {t_end}")
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
        stepper = make_stepper(cfg.method, kernels, cfg.parsed_scheme(), dt, tol=cfg.tol,
                               constraint_tol=cfg.constraint_tol, max_iter=cfg.max_iter,
                               rank_tol=cfg.rank_tol, estimate=estimate,
                               factorization=cfg.factorization)
        # overflow/invalid values in a diverging run are reported as status, not as warnings
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"), \
                _blas_limit(blas_threads):
            return _run(kernels, stepper, cfg, t0, n_steps, x0, xd0, progress, consistent,
                        estimate, t_wall)
    finally:
        kernels.p[:] = saved_p


def _blas_limit(threads: int | None):
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=int(threads), user_api="blas")


class _Recorder:
    """Every array of the run, allocated once; the state, residuals, estimates, energy and
    outputs of step j are written by :meth:`record`, and :meth:`result` cuts them to the steps
    done.  Recording is separate from stepping: the steppers never see these arrays."""

    def __init__(self, kernels, n_steps: int):
        n, m, n_out = kernels.n, kernels.m, kernels.n_out
        rows = n_steps + 1
        self.kernels = kernels
        self.T = np.empty(rows)
        self.X, self.XD = np.empty((rows, n)), np.empty((rows, n))
        self.XDD, self.LAM = np.empty((rows, n)), np.empty((rows, m))
        self.PE, self.VE, self.AE = np.zeros(rows), np.zeros(rows), np.zeros(rows)
        self.OM, self.HM = np.full(rows, np.nan), np.full(rows, np.nan)
        self.IT = np.zeros(rows, dtype=int)
        self.EK, self.EP = np.zeros(rows), np.zeros(rows)
        self.OUT = np.zeros((rows, n_out))
        self.has_energy = hasattr(kernels, "energy")
        self.has_outputs = n_out > 0 and hasattr(kernels, "outputs")

    def record(self, j, t, x, xd, xdd, lam, residuals, iters=0) -> None:
        self.T[j] = t
        self.X[j], self.XD[j], self.XDD[j], self.LAM[j] = x, xd, xdd, lam
        self.PE[j], self.VE[j], self.AE[j] = residuals
        self.IT[j] = iters
        if self.has_energy:
            self.EK[j], self.EP[j] = self.kernels.energy(t, x, xd)
        if self.has_outputs:
            self.OUT[j] = self.kernels.outputs(t, x, xd)

    def stability(self, j, omega_max, scheme) -> None:
        self.OM[j] = omega_max
        self.HM[j] = scheme.h_max(omega_max)

    def result(self, rows: int, status: str, reason: str, meta: dict) -> Result:
        kernels, K = self.kernels, rows
        has_energy = self.has_energy
        has_V = bool(getattr(kernels, "has_potential", False))
        EK, EP = self.EK, self.EP
        return Result(
            t=self.T[:K].copy(), x=self.X[:K].copy(), xd=self.XD[:K].copy(),
            xdd=self.XDD[:K].copy(), lam=self.LAM[:K].copy(),
            coords=kernels.coord_names, pos_err=self.PE[:K].copy(), vel_err=self.VE[:K].copy(),
            acc_err=self.AE[:K].copy(), omega_max=self.OM[:K].copy(), h_max=self.HM[:K].copy(),
            newton_iters=self.IT[:K].copy(),
            energy=(EK[:K] + EP[:K]) if (has_energy and has_V) else None,
            energy_kinetic=EK[:K].copy() if has_energy else None,
            energy_potential=EP[:K].copy() if has_energy else None,
            outputs=self.OUT[:K].copy(), output_names=kernels.output_names,
            status=status, reason=reason, meta=meta)


def _start(kernels, cfg: SimulationSettings, t0, x0, xd0, consistent: bool):
    """The consistent initial state (a warning when the projection moved it visibly)."""
    if consistent:
        cs = consistent_state(kernels, t0, x0, xd0, rank_tol=cfg.rank_tol)
        scale = max(1.0, float(np.max(np.abs(x0))))
        if cs.dx > 1e-8 * scale or cs.dxd > 1e-8 * max(1.0, float(np.max(np.abs(xd0)))):
            warnings.warn(f"initial state projected onto the constraints: moved |dx| = {cs.dx:.3e}, "
                          f"|dxd| = {cs.dxd:.3e}", RuntimeWarning, stacklevel=4)
        return cs
    return consistent_state(kernels, t0, x0, xd0, rank_tol=cfg.rank_tol, project=False)


def _stop_reason(stepper, step: int, t1: float, dt: float, bound: float, iters: int) -> str:
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


def _run(kernels, stepper, cfg: SimulationSettings, t0, n_steps, x0, xd0, progress, consistent,
         estimate, t_wall) -> Result:
    n, m = kernels.n, kernels.m
    dt, sch, bound = float(cfg.dt), cfg.parsed_scheme(), float(cfg.divergence_bound)
    rec = _Recorder(kernels, n_steps)
    cs = _start(kernels, cfg, t0, x0, xd0, consistent)
    rec.record(0, t0, cs.x, cs.xd, cs.xdd, cs.lam, cs.residuals)
    if estimate:
        try:
            omega = Linearization(n, m, cfg.rank_tol).omega_at(kernels, t0, cs.x, cs.xd, cs.xdd,
                                                              cs.lam)
        except (np.linalg.LinAlgError, ValueError):
            omega = np.nan
        rec.stability(0, omega, sch)
    stepper.start(t0, rec.X[0], rec.XD[0], rec.XDD[0], rec.LAM[0])

    status, reason, last = "completed", "", 0
    for i in range(n_steps):
        t = t0 + i * dt
        t1 = t0 + (i + 1) * dt
        try:
            iters = stepper.step(t, rec.X[i], rec.XD[i], rec.XDD[i], rec.LAM[i])
        except StepFailure as exc:
            status = "diverged" if exc.nonfinite else "failed"
            reason = f"step {i + 1} (t = {t1:.9g}): {exc}"
            break
        except (FloatingPointError, OverflowError, ZeroDivisionError, np.linalg.LinAlgError) as exc:
            status = "failed"
            reason = (f"step {i + 1} (t = {t1:.9g}): numerical error inside the {cfg.method} step: "
                      f"{type(exc).__name__}: {exc}")
            break
        reason = _stop_reason(stepper, i + 1, t1, dt, bound, iters)
        if reason:
            status = "diverged"
            break
        j = i + 1
        rec.record(j, t1, stepper.x, stepper.xd, stepper.xdd, stepper.lam, stepper.res, iters)
        if estimate:
            rec.stability(j, stepper.omega_max, sch)
        last = j
        if progress is not None:
            progress(j, n_steps)
    if status != "completed":
        log.warning("simulation of %s stopped: %s", kernels.name, reason)

    model = getattr(kernels, "model", None)
    meta = _versions()
    meta.update({
        "model": kernels.name,
        "model_hash": getattr(kernels, "model_hash", getattr(model, "hash", None)),
        "kernels": type(kernels).__name__,
        "method": cfg.method,
        "scheme": sch.as_dict(),
        "gamma": sch.gamma,
        "beta": sch.beta,
        "h": dt,
        "t0": t0,
        "t_end": float(cfg.t_end),
        "n_steps": n_steps,
        "steps_done": last,
        "tol": float(cfg.tol),
        "constraint_tol": cfg.constraint_tol,
        "max_iter": int(cfg.max_iter),
        "rank_tol": float(cfg.rank_tol),
        "factorization": getattr(getattr(stepper, "lin", None), "factorization", None),
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
    return rec.result(last + 1, status, reason, meta)
