"""A failed step as data (issue 37.2): what went wrong (a failure kind of
:mod:`symgen.runtime_constants`, the C runtime's ``sg_failure.kind``), where (t, h, iteration) and
the numbers behind it (update, residual, s_min/s_max of H, …), for both steppers: the Python
steppers attach one to every :class:`~symgen.steppers.base.StepFailure`, the compiled stepper
maps the C's ``sg_failure`` to one (``compiled.py``).  :func:`one_line` writes the run's one-line
reason from it (the same words for both steppers); the stepper's long text stays in
``Outcome.detail`` (the Result's ``meta["failure_detail"]``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..runtime_constants import CODES

__all__ = ["Outcome", "one_line", "no_step", "kind_name", "fail_code", "NONFINITE_KINDS"]

_K = CODES
#: the kinds that end a run as "diverged" (a non-finite iterate, update or state, or a state past
#: the divergence bound); every other failure ends it as "failed"
NONFINITE_KINDS = frozenset(_K[c] for c in (
    "SG_FAIL_NONFINITE_ITERATE", "SG_FAIL_NONFINITE_UPDATE", "SG_FAIL_I3_NONFINITE",
    "SG_FAIL_RUN_NONFINITE", "SG_FAIL_RUN_BOUND"))
#: s_min/s_max of H below this: the one-line reason says "near a singular configuration"
NEAR_SINGULAR = 1e-3


def fail_code(name: str) -> int:
    """The code of failure kind ``name`` ("NOT_CONVERGED": SG_FAIL_NOT_CONVERGED)."""
    return CODES[f"SG_FAIL_{name}"]


def kind_name(kind: int) -> str:
    """The C name of a failure kind ("SG_FAIL_NOT_CONVERGED")."""
    for name, value in CODES.items():
        if name.startswith("SG_FAIL_") and value == kind:
            return name
    return f"kind {kind}"


@dataclass(frozen=True)
class Outcome:
    """One failed step: ``kind`` (``runtime_constants.CODES["SG_FAIL_…"]``), the time t of the
    state it failed at (the step's end), the step size h, the Newton ``iteration``, and the numbers
    the kind has (NaN where it has none): the last weighted ``update`` (≤ 1: converged), the
    constraint ``residual`` (max(‖q‖, h‖q̇‖, h²‖q̈‖); ‖q‖ for index-3), ``s_ratio`` = s_min/s_max of
    H, ``k`` (the null space's dimension), ``value`` (the kind's own number: T's smallest
    singular value, a size past the divergence bound), ``floor`` and ``upd_abs`` (Newton's
    round-off floor and last update on x, hẋ, h²ẍ).  A fixed step whose sub-steps failed too has
    kind SG_FAIL_NO_STEP with the step's own failure in ``first`` and the sub-steps' last in
    ``last`` (None: the error test rejected every sub-step); one not sub-stepped because h is past
    the stability limit carries that limit in ``h_max``.  ``detail``: the stepper's long text.
    An accepted step is an outcome too: kind SG_FAIL_NONE, its iterations and ``flags``."""

    kind: int
    t: float
    h: float = math.nan
    iteration: int = 0
    update: float = math.nan
    residual: float = math.nan
    s_ratio: float = math.nan
    k: int = 0
    value: float = math.nan
    floor: tuple = (math.nan, math.nan, math.nan)
    upd_abs: tuple = (math.nan, math.nan, math.nan)
    h_max: float = math.nan
    flags: int = 0
    first: "Outcome | None" = None
    last: "Outcome | None" = None
    detail: str = ""

    def as_dict(self) -> dict:
        """The outcome as plain data (meta["failure"]): the kind's C name, the numbers it has
        (NaN ones left out), the sub-steps' failures nested; not the long text."""
        out = {"kind": kind_name(self.kind)}
        for name in ("t", "h", "iteration", "update", "residual", "s_ratio", "k", "value",
                     "h_max", "flags"):
            v = getattr(self, name)
            if v == v and (v or name in ("t", "iteration")):
                out[name] = int(v) if name in ("iteration", "k", "flags") else float(v)
        if self.upd_abs[0] == self.upd_abs[0]:      # (plain numbers: the meta is JSON)
            out["floor"], out["upd_abs"] = [float(v) for v in self.floor], [float(v) for v in
                                                                             self.upd_abs]
        for name in ("first", "last"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name).as_dict()
        return out

    @property
    def ok(self) -> bool:
        """An accepted step (kind SG_FAIL_NONE; ``iteration``: its Newton iterations, ``flags``:
        the bits of steppers.control.Flag it earned)."""
        return self.kind == _K["SG_FAIL_NONE"]

    @property
    def nonfinite(self) -> bool:
        """Whether the run ends "diverged" (else "failed")."""
        if self.kind == _K["SG_FAIL_NO_STEP"] and self.first is not None:
            return self.last is not None and self.last.nonfinite
        return self.kind in NONFINITE_KINDS

    @property
    def status(self) -> str:
        return "diverged" if self.nonfinite else "failed"


def _what(o: Outcome, timed: bool) -> str:
    """What failed, in a few words with its iteration (and its time if ``timed``; no hint)."""
    K, it, kind = _K, o.iteration, o.kind
    t = f"{o.t:.9g}"
    at = f" at t = {t}" if timed else ""
    if kind == K["SG_FAIL_NOT_CONVERGED"]:
        return f"Newton did not converge{at} after {it} iterations"
    if kind == K["SG_FAIL_NONFINITE_ITERATE"]:
        return f"non-finite Newton iterate{at}, iteration {it}"
    if kind == K["SG_FAIL_NONFINITE_UPDATE"]:
        return f"non-finite Newton update{at}, iteration {it}"
    if kind == K["SG_FAIL_I3_NONFINITE"]:
        return f"non-finite state or constraint residual{at}, Newton iteration {it}"
    if kind == K["SG_FAIL_FACTOR_NONFINITE"]:
        return f"factorization of H failed{at}, iteration {it}: H has non-finite entries"
    if kind == K["SG_FAIL_SPARSE_SINGULAR"]:
        return f"factorization of H failed{at}, iteration {it}: sparse LU of H[R, D] singular"
    if kind == K["SG_FAIL_SINGULAR_REDUCED"]:
        return (f"singular reduced step matrix M_R + γh C_R + βh² K_R{at}, iteration "
                f"{it} (k = {o.k})")
    if kind == K["SG_FAIL_CHART_T_SINGULAR"]:
        return (f"symmetric chart: T = N_sᵀN_H is singular{at}, iteration {it} "
                f"(smallest singular value {o.value:.3e}); reduce the step")
    if kind == K["SG_FAIL_CHART_SINGULAR"]:
        return f"symmetric chart: singular 3k × 3k step matrix{at}, iteration {it}"
    if kind == K["SG_FAIL_CHART_SPARSE_SINGULAR"]:
        return f"symmetric chart: factorization of H_s failed{at}, iteration {it}"
    if kind == K["SG_FAIL_NO_MEMORY"]:
        return f"the C runtime ran out of memory{at}, iteration {it}"
    if kind == K["SG_FAIL_RUN_NONFINITE"]:
        return f"non-finite values in the state or its constraint residuals (Newton iterations {it})"
    if kind == K["SG_FAIL_NO_STEP"]:
        return f"no sub-step from t = {t} met the error tolerance down to round-off"
    return f"the step failed{at} ({kind_name(kind)})"


def no_step(t: float, h: float, h_min: float, s_ratio: float, last: Outcome | None,
            detail: str = "") -> Outcome:
    """The error control's failure (dt="auto"): no try from t accepted down to h (below
    ``h_min``, else at round-off); ``last``: the last Newton failure's kind and iteration (None:
    the error test rejected every try)."""
    if last is not None:
        last = Outcome(last.kind, t, iteration=last.iteration)
    return Outcome(_K["SG_FAIL_NO_STEP"], t, h, value=h_min, s_ratio=s_ratio, last=last,
                   detail=detail)


def _no_step_line(o: Outcome) -> str:
    what = ("Newton did not converge" if o.last is not None
            else "the error estimate stayed above the tolerance")
    bound = f"h_min = {o.value:.3g} s" if o.h < o.value else "round-off"
    ratio = f" (s_min/s_max of H = {o.s_ratio:.1e})" if o.s_ratio == o.s_ratio else ""
    return (f"no step from t = {o.t:.9g} s: {what} down to h = {o.h:.3g} s ({bound}){ratio}; "
            "try a larger rtol or atol, a fixed --dt, or check the model near this state")


def one_line(o: Outcome, prefix: str = "", auto: bool = False) -> str:
    """The run's one-line reason for the failed step ``o`` (``prefix``: "step 12 (t = 0.12): "):
    what failed, whether sub-steps failed too, how near a singular configuration (s_min/s_max of
    H), what to try; the same words for both steppers (``auto``: the error control's, whose
    :func:`no_step` has its own)."""
    if auto and o.kind == _K["SG_FAIL_NO_STEP"] and o.first is None:
        return prefix + _no_step_line(o)
    own, subs = (o.first, o.last) if o.first is not None else (o, None)
    what = _what(own, not prefix)       # (the prefix names the step's end, where it failed)
    if o.first is not None:
        what += " (also on sub-steps)"
    elif o.h_max == o.h_max:
        what += f" (not sub-stepped: h = {o.h:g} s > h_max = {o.h_max:.3g} s)"
    nc = _K["SG_FAIL_NOT_CONVERGED"]
    ratio = next((c.s_ratio for c in (subs, own) if c is not None and c.kind == nc
                  and c.s_ratio == c.s_ratio), math.nan)     # (the last linearization's)
    if ratio == ratio:
        near = " near a singular configuration" if ratio < NEAR_SINGULAR else ""
        what += f"{near} (s_min/s_max of H = {ratio:.1e})"
    if own.kind == nc or o.first is not None:
        what += "; try a larger rtol" if auto else "; try --dt auto or a smaller --dt"
    return prefix + what
