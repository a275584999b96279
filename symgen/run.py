""":func:`symgen.simulate`, top to bottom: the settings merged and checked, the inputs, the
stepper; then the run's Recorder and consistent start (:mod:`symgen.steploop`), one loop (the
fixed step's :mod:`symgen.fixed_step` or the error control's :mod:`symgen.adaptive`, both through
``stepper.step(t, h, state) -> Outcome``), and the Result (:mod:`symgen.run_result`); failure as
data.

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
import warnings
from typing import Callable, Mapping

import numpy as np

from .adaptive import run_adaptive
from .events import RunEvents
from .fixed_step import run_fixed
from .input_values import InputValues, SampledController
from .jit import as_kernels
from .kernels import for_run
from .names import power_columns
from .recorder import check_memory, drive_of, recorded_outputs, t_eval_times
from .result import Result
from .run_result import finish, short_reason
from .settings import SimulationSettings
from .steploop import run_recorder, run_start
from .steppers import make_stepper

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
             controller: Callable | None = None, period: float | None = None,
             events=None) -> Result:
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
        its estimate's history of ẍ is moved by the jump's effect at each kept point (so the jump
        is not read as error; docs/inputs.md).  ``meta['controller']`` says what was sampled.
    events:
        Python callables ``g(t, x, xd)`` (or one), with SciPy's attributes ``terminal`` and
        ``direction`` (docs/events.md): with the model's own events (``Model.events``, first)
        their zeros are located in every step (Python stepper) into ``Result.t_events``,
        ``x_events``, ``xd_events``; a terminal event ends the run there with status ``"event"``.
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
    run_events = RunEvents(kernels, events)
    cfg, meta = _events_plan(kernels, cfg, run_events, events, meta, ctl is not None)
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
        # every recorded row allocated once (every K-th step and the last, or the t_eval rows; a
        # variable-step run's doubling from 1024); the state advanced lives in its own buffers
        rec = run_recorder(kernels, cfg, len(te) if te is not None else 1024 if cfg.auto
                           else n_steps, every if te is None else 1,
                           math.nan if cfg.auto else dt, values.u, variable=cfg.auto)
        start = run_start(kernels, stepper, cfg, t0, x0, xd0, consistent, at_start)
        if run_events.impacts and not getattr(stepper, "compiled", False):
            run_events.contacts = _contacts(kernels, run_events, stepper, cfg, dt, each)
        run_events.start(t0, start.state[0], start.state[1])
        if run_events and getattr(stepper, "compiled", False):
            stepper.events = run_events
            stepper.events_on(t0, start.state[0], start.state[1])
        if cfg.auto:
            end = run_adaptive(kernels, stepper, cfg, start, rec, t_end, progress, every, meta,
                               te, values, run_events)
        else:
            end = run_fixed(kernels, stepper, cfg, start, rec, n_steps, progress, every, te,
                            values, each, run_events)
            end.meta = meta
        if run_events:
            end.meta = {**(end.meta or {}), "events": run_events.as_meta()}
            if run_events.impacts:
                end.meta["impacts"] = run_events.impacts.as_meta()
                if run_events.contacts is not None:
                    end.meta["contacts"] = run_events.contacts.as_meta()
        if end.status not in ("completed", "event"):
            log.warning("simulation of %s stopped: %s", kernels.name, short_reason(end.reason))
        return finish(kernels, stepper, cfg, rec, start.cs, end, t_wall,
                      h="auto" if cfg.auto else dt, t0=t0, n_steps=n_steps, every=every)


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


def _events_plan(kernels, cfg: SimulationSettings, run_events: RunEvents, callables, meta,
                 sampled: bool = False):
    """(settings, meta) of a run with events.  The model's events run on either stepper (C:
    sg_events.c.inc), and so do its impacts; Python callables, and impacts with work to integrate
    (power outputs, driven joints: the work's jump at an impact) or a sampled controller
    (``sampled``), on the Python stepper only: then stepper="compiled" is refused in one line.
    Persistent contact (symgen.contact) is the Python loops', so "auto" runs a model with impacts
    on the Python stepper (in meta's fallbacks when the compiled one had the case); "compiled"
    runs its impacts in C without it (a contact coming to rest ends the run as a cascade)."""
    work = run_events.impacts and bool(
        sampled or drive_of(kernels)[1] or power_columns(getattr(kernels, "output_names", ())))
    if not (run_events.callables or run_events.impacts) or cfg.stepper == "python":
        return cfg, meta
    why = ("impacts (events with a restitution: docs/events.md) with power outputs, driven "
           "joints or a sampled controller are applied by the Python stepper only" if work
           else "events= callables are called by the Python stepper only" if run_events.callables
           else "impacts: persistent contact (a contact coming to rest held as a bilateral "
           "row: docs/events.md) is kept by the Python stepper only")
    if cfg.stepper == "compiled":
        if work:
            raise ValueError(f"stepper='compiled' cannot run this model: {why}; use "
                             "stepper='auto' or 'python'")
        if run_events.callables:
            raise ValueError("stepper='compiled' cannot call Python events= (callables g(t, x, "
                             "xd)): declare them in the model (Model(events=), the builders' "
                             "event()) or use stepper='python'")
        return cfg, meta
    if _compiled_has(kernels, cfg) and getattr(kernels, "lib", None) is not None:
        meta = {**(meta or {}), "fallbacks": [
            *(meta or {}).get("fallbacks", ()), f"stepper: python, not compiled ({why})"]}
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


def _contacts(kernels, run_events: RunEvents, stepper, cfg: SimulationSettings, dt: float,
              estimate: bool):
    """The run's persistent contacts (symgen.contact), whose closed models' steppers are made
    as the run's own (its inputs and controller)."""
    from .contact import RunContacts

    def make(kern):
        st = _make_stepper(kern, cfg, dt, estimate)
        st.inputs = stepper.inputs
        if getattr(stepper, "controller", None) is not None:
            st.controller = stepper.controller
        return st
    return RunContacts(kernels, run_events, make, cfg.rank_tol,
                       h_fixed=None if cfg.auto else dt)


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
