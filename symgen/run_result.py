"""The Result of a run (both loops end here): the recorder's rows, the joints' reactions as
columns, the status and the meta; a long reason cut to one line."""
from __future__ import annotations

import platform
import time
from dataclasses import dataclass

import numpy as np

from .names import work_names
from .result import Result
from .settings import SimulationSettings
from .units import result_units

__all__ = ["RunEnd", "finish", "short_reason", "REASON_CHARS", "step_order"]


@dataclass
class RunEnd:
    """How a loop ended: ``status`` ("completed", "event": a terminal event, "failed",
    "diverged", "interrupted"), its ``reason``, ``detail`` (the full text behind a short reason,
    a traceback), the last step taken, the failed step's Outcome (``failure``) and the meta the
    loop adds (``meta``: the caller's extra entries with the loop's own)."""
    status: str
    reason: str
    last: int
    detail: str | None = None
    failure: object = None
    meta: dict | None = None


def _versions() -> dict:
    import scipy
    import sympy

    from .version import __version__

    return {"symgen": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "sympy": sympy.__version__, "python": platform.python_version()}


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


def finish(kernels, stepper, cfg: SimulationSettings, rec, cs, end: RunEnd, t_wall: float, *,
           h, t0: float, n_steps, every: int) -> Result:
    """The Result of a run: the recorder's rows, the status and the meta (``h``: the fixed step,
    or "auto"; ``end.detail``: meta["failure_detail"], the full text behind a short reason;
    ``end.failure``: the failed step's Outcome, meta["failure"], its long text the detail)."""
    reason, detail, failure, extra_meta = end.reason, end.detail, end.failure, end.meta
    if failure is not None and detail is None:
        detail = failure.detail or None
    if len(reason) > REASON_CHARS or "\n" in reason:
        detail = reason if detail is None else f"{reason}\n{detail}"
        reason = short_reason(reason, auto=(h == "auto"))
    order = step_order(cfg, cfg.parsed_scheme(), kernels)
    names = (tuple(kernels.output_names)
             + tuple(work_names(kernels.output_names) if rec.power.size else ())
             + rec.drive_names)
    meta = _meta(kernels, stepper, cfg, rec, cs, names, t_wall, h=h, t0=t0, n_steps=n_steps,
                 last=end.last, every=every)
    meta["step_order"], meta["step_order_why"] = order
    meta.update(_stepper_meta(stepper, kernels.m))
    if detail is not None:
        meta["failure_detail"] = detail
    if failure is not None:                  # the failed step as data (steppers/outcome.py)
        meta["failure"] = failure.as_dict()
    # every fallback the run took instead of what was asked or planned, one line each (issue 37.7)
    meta["fallbacks"] = list((extra_meta or {}).get("fallbacks", [])) + (
        [cs.fallback] if cs.fallback else [])
    for key, value in (extra_meta or {}).items():
        meta.setdefault(key, value)
    arrays, names = _with_reactions(kernels, rec.arrays(), names, meta)
    EK, EP = arrays["energy_kinetic"], arrays["energy_potential"]
    has_V = bool(getattr(kernels, "has_potential", False))
    has_energy = hasattr(kernels, "energy")
    return Result(coords=kernels.coord_names, output_names=names,
                  input_names=() if arrays["u"] is None else kernels.input_names,
                  energy=np.add(EK, EP) if (has_energy and has_V) else None,
                  status=end.status, reason=reason, meta=meta, **arrays)


def _meta(kernels, stepper, cfg: SimulationSettings, rec, cs, names, t_wall: float, *, h,
          t0: float, n_steps, last: int, every: int) -> dict:
    """The run's meta: versions, model, settings, the start's projection, the maxima."""
    sch = cfg.parsed_scheme()
    n, m = kernels.n, kernels.m
    compiled = getattr(stepper, "compiled", False)
    model = getattr(kernels, "model", None)
    bound = float(cfg.divergence_bound)
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
    return meta


def _stepper_meta(stepper, m: int) -> dict:
    """What the stepper counted: steps at the round-off floor, sub-steps, landings, crossed grid
    points, the sparse step's statistics, the range of rank H."""
    meta = {}
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
    return meta


def _with_reactions(kernels, arrays: dict, names: tuple, meta: dict):
    """The recorded arrays and output names with the joints' reactions appended as columns
    (``reaction:<joint>.<component>``, their units in ``meta``)."""
    if getattr(kernels, "reaction_names", ()):       # the joints' reactions as columns
        from .reactions import reaction_columns
        rnames, rvals = reaction_columns(kernels, arrays)
        outs = arrays.get("outputs")
        arrays["outputs"] = rvals if outs is None else np.concatenate([outs, rvals], axis=1)
        names = names + rnames
        if meta["units"]:
            meta["units"].setdefault("outputs", {}).update(
                {k: "N" if k[-2] == "F" else "N·m" for k in rnames})
    return arrays, names
