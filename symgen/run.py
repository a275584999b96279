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
import sys
import time
import traceback
import warnings
from dataclasses import replace
from typing import Callable, Mapping

import numpy as np

from .recorder import check_memory, drive_of, recorded_outputs, t_eval_times
from .input_values import InputValues, SampledController
from .jit import as_kernels
from .kernels import for_run
from .result import Result
from .settings import SimulationSettings
from .steploop import (RUN_FAILURES, DenseRowError, dense_rows, finish, omega_start, run_recorder,
                       short_reason, start_state, stop_reason, stopped_reason)
from .steppers import StepFailure, make_stepper
from .steppers.outcome import Outcome, one_line
from .steppers.base import NUMERICAL_ERRORS

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


def simulate(model_or_kernels, settings: SimulationSettings | Mapping | None = None, *,
             method: str | None = None, scheme=None, dt: float | None = None,
             t_end: float | None = None, params: Mapping | None = None, x0=None, xd0=None,
             tol: float | None = None, max_iter: int | None = None, rank_tol: float | None = None,
             constraint_tol: float | None = None, factorization: str | None = None,
             divergence_bound: float | None = None, chart: str | None = None,
             metric: str | None = None, preset: str | None = None,
             stepper: str | None = None, every: int = 1, meta: Mapping | None = None,
             progress: Callable[[int, int], None] | None = None, t0: float = 0.0,
             estimate: bool | None = None, consistent: bool = True,
             blas_threads: int | None = 1, rtol: float | None = None, atol=None,
             h_init: float | None = None, h_min: float | None = None,
             h_max: float | None = None, t_eval=None, inputs: Mapping | None = None,
             controller: Callable | None = None, period: float | None = None) -> Result:
    """Integrate a model from t0 to t_end with fixed steps dt, or steps chosen by the error
    control (dt="auto"); returns a :class:`~symgen.Result`.

    Parameters
    ----------
    model_or_kernels:
        a :class:`~symgen.Model` (built with :func:`symgen.build`, cached) or a Kernels object.
    settings:
        a :class:`~symgen.SimulationSettings` (or a mapping of its fields); it overrides the
        model's recommended settings, and the keyword arguments below override it.
    method, scheme, dt, t_end, tol, max_iter, rank_tol, constraint_tol, factorization, divergence_bound, chart, metric, preset, stepper:
        the fields of :class:`~symgen.SimulationSettings` (None: not given).  ``method``:
        ``"nullspace"`` (the paper's method), ``"index3"`` (classical Newmark / HHT with
        multipliers), ``"newmark"`` or ``"central-difference"`` (minimal coordinates, m = 0).
        ``scheme``: a name (``"trapezoidal"``, ``"fox-goodwin"``, ``"linear-acceleration"``),
        ``"GAMMA,BETA"``, ``(gamma, beta)``, a :class:`~symgen.steppers.Scheme`, or
        ``"hht:ALPHA"`` (index3, newmark).  The run has round((t_end − t0)/dt) steps of exactly dt.
        ``chart`` (nullspace): ``"symmetric"`` (beyond the paper: Newmark on the null space of
        ½(H(t) + H(t + h)); no energy drift at large rotations per step, see
        ``symgen.steppers.chart``) or ``"end"`` (the paper's method, Newmark on the tangent space
        at t + h).  ``metric`` (nullspace): ``"mass"`` (M-orthogonal, with the reaction
        correction) or ``"euclidean"`` (the paper's).  Where neither the model nor the call names
        a chart or metric, the step is the symmetric chart with the mass metric, for a fixed step
        and dt="auto" alike; naming one takes the other from the paper.  ``preset="paper"`` is
        the paper's step (chart "end", metric "euclidean"; a chart or metric named beside it
        wins; :data:`symgen.settings.PRESETS`).  Recorded in ``meta['chart']``,
        ``meta['metric']`` (None for other methods) and ``meta['preset']``.
        ``stepper``: ``"compiled"`` (the whole step in C, :mod:`symgen.steppers.compiled`: same
        statuses, reasons and meta), ``"python"`` (the reference steppers) or ``"auto"`` (default:
        compiled when the kernels are compiled and the runtime has the case: both charts, both
        metrics, not ``factorization="svd"``).  Recorded in ``meta['stepper']``.
    params:
        parameter overrides by name (unknown names raise KeyError), over the kernels' own; the
        run has its own copy of the parameters and inputs (``Kernels.for_run``): the kernels
        given are not changed, and threads may run one Kernels at once.
    x0, xd0:
        initial coordinates and velocities (default: the model's); projected onto q = 0, q̇ = 0
        with minimum-norm corrections (``meta['initial_projection']`` says how far) unless
        ``consistent=False``.
    progress:
        called as ``progress(step_index, n_steps)`` after every step.
    estimate:
        the stability estimate ω_max (and h_max, Eq. 11) of the reduced system: ``True``
        computes and records it at every step (a diagnostic: 15–45 % of a step; index3 pays one
        extra SVD and kernel call for it); ``None`` (default) where it bounds something: at the
        start (row 0; dt="auto"'s first h) and every step only when the step has a stability
        limit (a conditionally stable scheme under ``preset="paper"``); the A-stable default
        step records it at the start only (later rows NaN, ``meta['estimate']``); ``False``:
        nowhere (dt="auto" still computes it where it bounds h).
    dt="auto", rtol, atol, h_init, h_min, h_max:
        the error-controlled variable step (nullspace method, in C or the Python stepper): each
        step's local error estimate within rtol/atol (WRMS over x and ẋ) and the step within
        0.9·h_max(ω_max); docs/variable-step.md.  The Result then has ``h``, ``err_est`` and ``flags`` per row.
    t_eval:
        record the states at these times (increasing, within [t0, t_end]) instead of the steps:
        each from the quintic Hermite interpolant of the step across it (x, ẋ, ẍ at both ends),
        projected onto the constraints with ẍ and λ from the equations of motion there (in C on
        the compiled stepper); with dt="auto" or a fixed dt.  If the run stops early the last
        state reached is kept too.
    every:
        record every ``every``-th step (and always the initial state and the last step taken);
        ``meta['run_stats']`` keeps the maxima of the residuals, Newton iterations, ω_max and the
        smallest h_max over *all* steps.  A run whose recorded rows would take more than half the
        physical memory is refused before it starts (:class:`ValueError` naming the ``every``
        that would fit).
    inputs:
        the model's inputs by name: a number, a callable ``u(t, x, xd)`` or a table
        ``(times, values[, "linear" | "hold"])``; every input needs one.  The step from t to t + h
        uses them at t + h, callables with the state at t (docs/inputs.md).  Recorded in the
        result's ``u`` (the values each row's step used) and ``meta['inputs']``.
    controller, period:
        a controller sampled and held (docs/inputs.md): ``controller(t, x, xd)`` returns the
        values of every input ``inputs=`` does not give (those must then be numbers): a sequence
        in the model's order of those inputs (a number for one), or a dict by name.  It is
        called at t_k = t0 + k·period with the state there (k = 0: the start as given) and its
        values are held until t_(k+1); between samples the run stays in C (the compiled stepper
        calls the law from its loop).  The jump of the inputs at t_k is a discontinuity: the step
        from t_k starts from ẍ, λ of the new inputs.  A fixed dt must divide the period (every
        k-th step is a sample); with dt="auto" each t_k is a stop time of the error control, and
        its estimate's history of ẍ is moved by the jump there (so the jump is not read as
        error).  ``meta['controller']`` says what was sampled.
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
    Only numerical failures (a step that cannot be completed, a singular factorization, an
    overflow) and an input or controller that returns no finite number or raises (the caller's
    code: the reason names its exception) end a run as ``'failed'``; any other exception during
    the steps (a bug in symgen, or in the ``progress`` callback) propagates as it was raised.
    """
    t_wall = time.perf_counter()
    kernels = for_run(as_kernels(model_or_kernels), params)     # the run's own p, u, buffers
    cfg = _settings(kernels, settings, dict(
        method=method, scheme=scheme, dt=dt, t_end=t_end, tol=tol, max_iter=max_iter,
        rank_tol=rank_tol, constraint_tol=constraint_tol, factorization=factorization,
        divergence_bound=divergence_bound, chart=chart, metric=metric, preset=preset,
        stepper=stepper, rtol=rtol, atol=atol, h_init=h_init, h_min=h_min, h_max=h_max))
    t0, t_end = float(t0), float(cfg.t_end)
    if not (t_end > t0):
        raise ValueError(f"t_end must be finite and greater than t0 = {t0}, got {t_end}")
    x0, xd0 = _start_vectors(kernels, x0, xd0)
    every = _every(every)
    ctl, inputs, steps_per_period = _controller(kernels, cfg, controller, period, inputs, t_eval)
    values = InputValues(kernels, inputs)
    meta = _inputs_meta(meta, values, ctl, steps_per_period)
    te = t_eval_times(t_eval, t0, t_end)    # the rows, allocated once: they must fit
    n_steps = None if cfg.auto else _fixed_steps(t0, t_end, float(cfg.dt))
    if te is not None:
        check_memory(0, 1, kernels.n, kernels.m, _columns(kernels), t_eval=te)
    elif not cfg.auto:
        check_memory(n_steps, every, kernels.n, kernels.m, _columns(kernels))
    if cfg.auto:
        cfg, meta = _auto_plan(kernels, cfg, values, meta)
        dt = 1.0                            # (each try sets h)
    else:
        dt = float(cfg.dt)
    each, at_start = cfg.estimate_plan(estimate)
    meta = {**(meta or {}), "estimate": ("every step" if each else "start" if at_start
                                         else "none")}
    stepper = _start_stepper(kernels, cfg, dt, each, values, ctl, (t0, x0, xd0),
                             steps_per_period)
    # overflow/invalid values in a diverging run are reported as status, not as warnings
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"), \
            _blas_limit(blas_threads):
        if cfg.auto:
            from .adaptive import run_adaptive
            return run_adaptive(kernels, stepper, cfg, t0, t_end, x0, xd0, progress, consistent,
                                t_wall, every, meta, te, values)
        return _run(kernels, stepper, cfg, t0, n_steps, x0, xd0, progress, consistent,
                    (each, at_start), t_wall, every, meta, values, te)


def _settings(kernels, settings, given: dict) -> SimulationSettings:
    """The run's settings: the defaults, the model's, ``settings``, then the keywords given;
    the combinations no stepper runs refused in one line."""
    model = getattr(kernels, "model", None)
    cfg = SimulationSettings.merged(getattr(model, "settings", None), settings, **given)
    if cfg.method in ("newmark", "central-difference") and kernels.m:
        raise ValueError(f"method {cfg.method!r} is a minimal-coordinate reference for models without "
                         f"constraints; {kernels.name!r} has m = {kernels.m} constraints "
                         "(use 'nullspace' or 'index3')")
    if cfg.dt is None or cfg.t_end is None:
        raise ValueError("dt and t_end must be given (the model's settings do not provide them)")
    if cfg.auto:
        cfg.check_auto()
    return cfg


def _start_vectors(kernels, x0, xd0) -> tuple[np.ndarray, np.ndarray]:
    """x0, ẋ0 as given (default: the model's; zeros without a model), checked."""
    n, model = kernels.n, getattr(kernels, "model", None)
    if x0 is None:
        x0 = model.x0 if model is not None else np.zeros(n)
    if xd0 is None:
        xd0 = model.xd0 if model is not None else np.zeros(n)
    coord_names = tuple(kernels.coord_names)
    return (_state_vector(x0, n, "x0", coord_names), _state_vector(xd0, n, "xd0", coord_names))


def _every(every) -> int:
    if isinstance(every, bool) or int(every) != every or every < 1:
        raise ValueError(f"every must be a positive integer, got {every!r}")
    return int(every)


def _inputs_meta(meta, values: InputValues, ctl, steps_per_period) -> dict | None:
    """``meta`` with the inputs (each one's kind) and the controller described."""
    if values.names:
        described = values.describe()
        for name in (ctl.names if ctl is not None else ()):
            described[name] = "controller"
        meta = {**(meta or {}), "inputs": described}
    if ctl is not None:
        meta = {**(meta or {}), "controller": ctl.describe(steps_per_period)}
    return meta


def _auto_plan(kernels, cfg: SimulationSettings, values: InputValues, meta):
    """(settings, meta) of a dt="auto" run: time-varying inputs take the Python stepper (the C
    error control holds the inputs over its tries), a fallback recorded in meta (issue 37.7)."""
    if not values.varying:
        return cfg, meta
    if cfg.stepper == "compiled":
        raise ValueError("dt='auto' with time-varying inputs runs on the Python stepper "
                         "(the C runtime's error control holds the inputs over its "
                         "tries): use stepper='auto' or 'python', a fixed dt, or "
                         "constant inputs")
    if cfg.stepper == "auto" and _compiled_has(kernels, cfg):
        meta = {**(meta or {}), "fallbacks": [
            *(meta or {}).get("fallbacks", ()),
            "stepper: python, not compiled (dt='auto' with time-varying inputs: the C "
            "runtime's error control holds the inputs over its tries)"]}
    return cfg.replace(stepper="python"), meta


def _fixed_steps(t0: float, t_end: float, dt: float) -> int:
    """round((t_end − t0)/dt), or the next whole number of steps (with a warning) when the span
    is not a whole number of steps."""
    span = (t_end - t0) / dt
    n_steps = int(round(span))
    if abs(span - n_steps) > 1e-9 * max(1.0, span):
        n_steps = int(math.ceil(span))
        warnings.warn(f"(t_end − t0)/dt = {span:.12g} is not an integer; taking {n_steps} "
                      f"steps (ending at t = {t0 + n_steps * dt:.12g})", RuntimeWarning,
                      stacklevel=3)
    return n_steps


def _start_stepper(kernels, cfg: SimulationSettings, dt: float, estimate: bool,
                   values: InputValues, ctl, start, steps_per_period):
    """The start's inputs u(t0, x0, ẋ0) (and the controller's first sample, the start as given),
    then the stepper with the run's inputs and controller."""
    t0, x0, xd0 = start
    values.set(t0, x0, xd0)
    if ctl is not None:
        ctl.sample(t0, x0, xd0)
    values.accept()
    stepper = _make_stepper(kernels, cfg, dt, estimate)
    stepper.inputs = values
    if ctl is not None:
        if cfg.auto and not getattr(stepper, "compiled", False):
            raise ValueError("dt='auto' with a controller runs on the compiled stepper (its "
                             "error control stops at every sample): use compiled kernels "
                             "and stepper='auto' or 'compiled', or a fixed dt")
        stepper.controller = (ctl, t0, steps_per_period or 0)
    return stepper


def _controller(kernels, cfg: SimulationSettings, law, period, inputs, t_eval):
    """(the SampledController or None, the inputs with its own set to 0 until sampled, the
    fixed steps a period: the fixed dt must divide it); one-line errors for what cannot run."""
    if law is None and period is None:
        return None, inputs, None
    if law is None:
        raise ValueError("period= is a controller's sample period: give controller=law(t, x, "
                         "xd) with it")
    if period is None:
        raise ValueError("controller= needs period= (its sample period in s; the law's values "
                         "are held between samples)")
    ctl = SampledController(kernels, law, period, inputs)
    if t_eval is not None:
        raise ValueError("t_eval with a controller is not supported: record the steps "
                         "(every=K) instead")
    steps = None
    if not cfg.auto:
        ratio = ctl.period / float(cfg.dt)
        steps = int(round(ratio))
        if steps < 1 or abs(ratio - steps) > 1e-9 * steps:
            raise ValueError(f"period = {ctl.period:g} s is not a whole number of steps of dt = "
                             f"{float(cfg.dt):g} s: choose dt = period/k (the steps land on every "
                             "sample) or dt='auto'")
    return ctl, {**(inputs or {}), **{name: 0.0 for name in ctl.names}}, steps


def _compiled_has(kernels, cfg: SimulationSettings) -> bool:
    """Whether the compiled stepper has this case (what stepper="auto" takes when it has)."""
    from .steppers.compiled import unsupported

    return unsupported(kernels, cfg.method, cfg.parsed_scheme(), cfg.factorization,
                       cfg.metric) is None


def _columns(kernels) -> int:
    """The output columns the run's result will hold (recorder.recorded_outputs)."""
    return recorded_outputs(kernels.output_names, getattr(kernels, "reaction_names", ()),
                            drive_of(kernels)[1])


def _make_stepper(kernels, cfg: SimulationSettings, dt: float, estimate: bool):
    """The compiled stepper (``cfg.stepper`` "compiled", or "auto" when it has the case) or the
    Python one; the Python stepper is made first, so both validate the options alike."""
    from .settings import resolve_factorization
    from .steppers.compiled import CompiledStepper, unsupported

    sch = cfg.parsed_scheme()
    why = unsupported(kernels, cfg.method, sch, cfg.factorization, cfg.metric)
    if cfg.stepper == "compiled" and why:
        raise ValueError(f"stepper='compiled' cannot run this case: {why} (use stepper='python' "
                         "or 'auto')")
    compiled = cfg.stepper != "python" and why is None
    kw = dict(tol=cfg.tol, constraint_tol=cfg.constraint_tol, max_iter=cfg.max_iter,
              rank_tol=cfg.rank_tol, estimate=estimate)
    # "auto" means one factorization for both steppers (and the compiled one's Python fallback)
    fac = resolve_factorization(kernels, cfg.method, cfg.factorization, cfg.chart)
    py = make_stepper(cfg.method, kernels, sch, dt, factorization=fac,
                      **({"chart": cfg.chart, "metric": cfg.metric} if cfg.method == "nullspace"
                         else {}), **kw)
    if not compiled:
        return py
    return CompiledStepper(kernels, cfg.method, sch, dt, divergence_bound=float(cfg.divergence_bound),
                           fallback=py, chart=cfg.chart, factorization=fac, metric=cfg.metric,
                           **kw)


#: threadpoolctl's scan of the loaded libraries (~1 ms, as long as a short run), kept until a
#: module is imported (a new extension module may bring its own BLAS)
_BLAS = {"modules": -1, "controller": None}


def _blas_limit(threads: int | None):
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import ThreadpoolController

    if _BLAS["modules"] != len(sys.modules):
        _BLAS["controller"] = ThreadpoolController()
        _BLAS["modules"] = len(sys.modules)
    return _BLAS["controller"].limit(limits=int(threads), user_api="blas")


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


def _restart(kernels, stepper, t: float, x, xd, rank_tol: float, rec):
    """ẍ, λ at (t, x, ẋ) from the index-1 equations with the inputs just sampled, and what the
    stepper carries restarted there (the step from a sample starts after the jump of the inputs,
    as the C runtime's sample_at); the power after the jump told to the Recorder ``rec``."""
    from .assembly import consistent_state

    cs = consistent_state(kernels, t, x, xd, rank_tol=rank_tol, project=False)
    stepper.restart(t, x, xd, cs.xdd, cs.lam)
    if rec.n_work:
        outputs = kernels.n_out > 0 and hasattr(kernels, "outputs")
        rec.jump(t, kernels.outputs(t, x, xd) if outputs else None, x, xd, cs.lam)
    return cs.xdd, cs.lam


def _run(kernels, stepper, cfg: SimulationSettings, t0, n_steps, x0, xd0, progress, consistent,
         estimate, t_wall, every, extra_meta, values, te=None) -> Result:
    """The fixed-step loop: start, steps, the stop reasons; the recording is
    :class:`~symgen.recorder.Recorder`'s (with ``te``, the t_eval rows of each step:
    :func:`~symgen.steploop.dense_rows`), the Result and its meta
    :func:`~symgen.steploop.finish`'s."""
    n_out = kernels.n_out
    dt, sch, bound = float(cfg.dt), cfg.parsed_scheme(), float(cfg.divergence_bound)
    has_energy = hasattr(kernels, "energy")
    has_outputs = n_out > 0 and hasattr(kernels, "outputs")
    # every recorded row, allocated once (every K-th step and the last); the state being
    # advanced lives in its own buffers so that unrecorded steps cost no row
    rec = run_recorder(kernels, cfg, n_steps if te is None else len(te),
                       every if te is None else 1, dt, values.u)
    cs = start_state(kernels, stepper, cfg, t0, x0, xd0, consistent)
    x, xd, xdd, lam = cs.x.copy(), cs.xd.copy(), cs.xdd.copy(), cs.lam.copy()
    res = np.array(cs.residuals, dtype=float)
    estimate, at_start = estimate             # (every step, the start: cfg.estimate_plan)
    w = omega_start(kernels, stepper, cfg, t0, (x, xd, xdd, lam)) if at_start else math.nan
    hm = sch.h_max(w) if at_start else math.nan

    def record(j, t, iters, y=None, flags=0):
        rec.add(j, t, x, xd, xdd, lam, res, iters, w, hm, flags=flags,
                energy=kernels.energy(t, x, xd) if has_energy else None,
                out=y if y is not None else kernels.outputs(t, x, xd) if has_outputs else None)

    def integrate(t):
        """The work of the power outputs and driven joints up to the state at t (every step,
        recorded or not); the outputs there (None without outputs)."""
        if not rec.n_work:
            return None
        y = kernels.outputs(t, x, xd) if has_outputs else None
        rec.integrate(t, y, x, lam)
        return y

    rec.observe(t0, res, 0, w, hm)
    y0 = integrate(t0)
    k_eval = 0                              # the next t_eval row
    if te is None or te[0] == t0:
        record(0, t0, 0, y0)
        k_eval = 0 if te is None else 1
    stepper.start(t0, x, xd, xdd, lam)

    status, reason, last, it_last, fl_last, whole = "completed", "", 0, 0, 0, True
    detail = failure = None                 # an internal error's traceback; a failed step
    compiled = getattr(stepper, "compiled", False)
    try:
        if compiled:                        # C steps chunk by chunk into rec (steppers/compiled.py)
            status, reason = stepper.advance(t0, n_steps, (x, xd, xdd, lam, res), rec, progress,
                                             bound, te, k_eval)
        ctl, _, spp = getattr(stepper, "controller", None) or (None, 0.0, 0)
        for i in range(0 if compiled else n_steps):
            t, t1 = t0 + i * dt, t0 + (i + 1) * dt
            if values.varying:              # u(t + h), callables with the state at t
                values.set(t1, x, xd)
            start = (xdd, lam)
            if ctl is not None and i and i % spp == 0:      # a sample: the law, then ẍ, λ of
                ctl.sample(t, x, xd)                         # the new inputs (sg_run.c.inc)
                start = _restart(kernels, stepper, t, x, xd, cfg.rank_tol, rec)
            try:
                outcome = stepper.step(t, dt, (x, xd, *start))
            except NUMERICAL_ERRORS as exc:
                status, reason, failure = _step_failure(exc, i + 1, t1, cfg.method)
                break
            iters, flags = outcome.iteration, outcome.flags
            reason = stop_reason(stepper, i + 1, t1, dt, bound, iters)
            if reason:
                status = "diverged"
                break
            # accept the step (an interrupt in here leaves the state half-copied: `whole`)
            j = i + 1
            start = None if te is None else (x.copy(), xd.copy(), xdd.copy())
            whole = False
            x[:], xd[:], xdd[:], lam[:] = stepper.x, stepper.xd, stepper.xdd, stepper.lam
            res[:] = stepper.res
            w = stepper.omega_max if estimate else math.nan     # (else the start's: row 0)
            hm = sch.h_max(w)
            values.accept()
            whole = True
            last, it_last, fl_last = j, iters, flags
            failed = None
            y = integrate(t1)               # (before the rows inside the step)
            if te is not None:              # the t_eval rows in (t, t + h], from its interpolant
                try:
                    k_eval = dense_rows(kernels, rec, te, k_eval, j, t, dt, start, (x, xd, xdd),
                                        iters, w, hm, None, cfg.rank_tol, j == n_steps, flags)
                except DenseRowError as exc:
                    failed = exc
            rec.observe(t1, res, iters, w, hm)
            if failed is not None:
                status, reason = "failed", str(failed)
                break
            if te is None and j % every == 0:
                record(j, t1, iters, y, flags)
            if progress is not None:
                progress(j, n_steps)
    except (KeyboardInterrupt, *RUN_FAILURES) as exc:   # the steps taken are kept (any other
        if compiled:                                      # exception is a bug: it propagates)
            last = stepper.done
        if not whole and te is None:        # the state of step `last + 1` is half-copied
            last = rec.last_step
        status, reason, detail = _stopped(exc, last, n_steps, t0 + last * dt)
    if compiled:                            # the state buffers hold step stepper.done
        last, it_last, fl_last = stepper.done, stepper.it_last, stepper.fl_last
        w, hm = stepper.w, stepper.hm
        failure = stepper.outcome
    if status != "completed":
        log.warning("simulation of %s stopped: %s", kernels.name, short_reason(reason))
    # always keep the last computed state (with t_eval: when the run stopped early, whole)
    if (rec.last_step != last if te is None else status != "completed" and whole
            and not (rec.k and rec.T[rec.k - 1] == t0 + last * dt)):
        values.rewind()                     # (with the inputs its step used)
        record(last, t0 + last * dt, it_last, flags=fl_last)

    return finish(kernels, stepper, cfg, rec, cs, status, reason, detail, t_wall, extra_meta, h=dt,
                  t0=t0, n_steps=n_steps, last=last, every=every, bound=bound, failure=failure)
