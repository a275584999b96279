"""What the fixed-step loop (:mod:`symgen.fixed_step`) and the variable-step loop
(:mod:`symgen.adaptive`) share, below both: the run's Recorder, the consistent start and ω_max
there (:func:`run_start`), the divergence check of an accepted step, what ends a run as "failed"
with its steps kept (:data:`RUN_FAILURES`) and its reason."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .assembly import consistent_state, finished_state
from .eval_rows import project_row
from .input_values import InputError
from .names import power_columns
from .recorder import Recorder, drive_of
from .settings import SimulationSettings
from .steppers import Linearization
from .steppers.base import NUMERICAL_ERRORS, norm2

__all__ = ["Start", "restart_at",
           "run_start", "start_state", "omega_start", "stop_reason", "RUN_FAILURES",
           "stopped_reason", "run_recorder"]

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


@dataclass
class Start:
    """A run's start: the consistent state ``cs`` (assembly's ConsistentState, the meta's
    initial projection), the state the loop advances (x, ẋ, ẍ, λ: its own buffers) and its
    residual norms, ω_max and h_max there (NaN when the run does not estimate them)."""
    t0: float
    cs: object
    state: tuple
    res: np.ndarray
    w: float
    hm: float


def run_start(kernels, stepper, cfg: SimulationSettings, t0: float, x0, xd0, consistent: bool,
              at_start: bool) -> Start:
    """The run's :class:`Start` (:func:`start_state`; ω_max there, :func:`omega_start`, when
    ``at_start``: SimulationSettings.estimate_plan)."""
    cs = start_state(kernels, stepper, cfg, t0, x0, xd0, consistent)
    state = (cs.x.copy(), cs.xd.copy(), cs.xdd.copy(), cs.lam.copy())
    res = np.array(cs.residuals, dtype=float)
    w = omega_start(kernels, stepper, cfg, t0, state) if at_start else math.nan
    hm = cfg.parsed_scheme().h_max(w) if at_start else math.nan
    return Start(t0, cs, state, res, w, hm)


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




def restart_at(kernels, stepper, t: float, x, xd, rank_tol: float, rec):
    """ẍ, λ at (t, x, ẋ) from the index-1 equations after a jump (the inputs just sampled, an
    impact's velocity), and what the stepper carries restarted there (as the C runtime's
    sample_at); the power after the jump told to the Recorder ``rec``."""
    cs = consistent_state(kernels, t, x, xd, rank_tol=rank_tol, project=False)
    stepper.restart(t, x, xd, cs.xdd, cs.lam)
    if rec.n_work:
        outputs = kernels.n_out > 0 and hasattr(kernels, "outputs")
        rec.jump(t, kernels.outputs(t, x, xd) if outputs else None, x, xd, cs.lam)
    return cs.xdd, cs.lam
