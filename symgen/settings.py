"""The settings of one simulation, in one place: every default, every check.

:func:`symgen.simulate`, the steppers, a model's recommended settings (``Model.settings``) and the
command line all read :class:`SimulationSettings`.  Adding a setting is one field here (one default,
one line of doc) plus its use.

    s = SimulationSettings.merged(model.settings, dt=1e-3)     # later layers win; None is skipped
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

from .schemes import parse_scheme

__all__ = ["SimulationSettings", "METHODS", "FACTORIZATIONS", "CHARTS", "METRICS", "STEPPERS",
           "SPARSE_FROM_N", "SPARSE_MAX_DENSITY", "resolve_factorization", "compiled_factorization",
           "DEFAULT_CHART_METRIC", "PAPER_CHART_METRIC", "PRESETS", "chart_metric", "RANK_TOL_MAX",
           "corrected_step", "newton_tol", "NEWTON_TOL_FIXED", "NEWTON_TOL_RTOL",
           "NEWTON_TOL_AUTO_MAX", "NEWTON_TOL_MIN"]

#: The largest rank tolerance (relative: singular values of H at most rank_tol · s_max count as
#: zero).  Redundant rows of a mechanism sit at round-off (s/s_max ~ 1e-16 … 1e-8); 1e-2 already
#: drops rows that are not redundant (a forced rank drop, tested on the double four-bar).  Larger
#: values drop well-conditioned rows (a revolute joint's two have s_min/s_max ≈ 0.7), leave
#: their constraints unenforced, and no step can then close (issue 38.3).
RANK_TOL_MAX = 1e-2
RANK_TOL_WHY = ("a relative threshold on the singular values of H: a larger one counts "
                "independent constraint rows as redundant; the default is 1e-10")

#: The steppers by name (:data:`symgen.steppers.METHODS` maps them to classes).
METHODS = ("nullspace", "index3", "newmark", "central-difference")
#: How H is factored each Newton iteration (:class:`symgen.steppers.linalg.Linearization`).
FACTORIZATIONS = ("auto", "svd", "qr", "sparse")
#: The null-space step's tangent charts (:mod:`symgen.steppers.chart`).
CHARTS = ("end", "symmetric")
#: The metric of the null-space step's Newmark relations (:mod:`symgen.steppers.nullspace`).
METRICS = ("euclidean", "mass")
#: Who steps (:mod:`symgen.steppers.compiled` or the Python steppers).
STEPPERS = ("auto", "compiled", "python")

#: ``factorization="auto"`` takes the sparse step from this many coordinates on (a null-space
#: run with constraints, either chart, and H at most :data:`SPARSE_MAX_DENSITY` full).  Measured
#: (compiled, 10 s, CPU µs/step, one BLAS thread): double four-bar 24.1 → 12.9 (h = 1e-3), 30.4 →
#: 18.6 (1e-2); Andrews 43.0 → 16.1; Bricard 85.5 → 29.0 (1e-3); ~18x at n = 63 (docs/
#: sparse-step.md).  The trajectory is the dense step's to round-off amplified at the singular
#: passages (double four-bar over 10 s at h = 1e-3: 4e-7; Andrews 2e-11, Bricard 8e-13).
#: Below ~10 coordinates the two cost the same.
SPARSE_FROM_N = 10
#: … and H holds at most this share of non-zeros (a dense H fills the sparse LU)
SPARSE_MAX_DENSITY = 0.25


#: The null-space step's chart and metric where no layer names either (nor a preset), for a fixed
#: step and dt="auto" alike: the symmetric chart with the mass metric, the corrected step (beyond
#: the paper; fourth order for every force, A-stable: docs/fourth-order-step.md).  IFToMM spatial slider-crank, h = 1e-3, 5 s: the slider's error 4.0e-8 m
#: against 2.7e-3 m with the paper's pair (examples/benchmarks/default_step_accuracy.py); under
#: dt="auto" its own error estimate takes 3–12× fewer steps at equal error (docs/variable-step.md);
#: what it changes of the paper's claims: docs/method.md.  ``preset="paper"`` is the paper's step.
DEFAULT_CHART_METRIC = ("symmetric", "mass")
#: The paper's chart and metric (Fernández de Bustos et al. 2022, Sec. 5): the "paper" preset's,
#: and the other of the pair where a layer names only one of them
PAPER_CHART_METRIC = ("end", "euclidean")
#: Named presets: the settings each stands for, at the layer that names it (a chart or metric
#: named beside it, or in a later layer, wins).  "paper": the paper's step, which ``symgen
#: reproduce`` reproduces.
PRESETS = {"paper": {"chart": PAPER_CHART_METRIC[0], "metric": PAPER_CHART_METRIC[1]}}


def chart_metric(method: str, chart: str | None = None, metric: str | None = None,
                 preset: str | None = None) -> tuple[str, str]:
    """The null-space step's (chart, metric), the one rule: those named; where neither is named,
    the preset's, else :data:`DEFAULT_CHART_METRIC`; where one is named, the other the preset's,
    else the paper's (:data:`PAPER_CHART_METRIC`).  Other methods have neither: unnamed, they are
    the paper's pair (which changes nothing in their steps)."""
    if preset is not None and not (isinstance(preset, str) and preset in PRESETS):
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    base = PRESETS[preset] if preset is not None else None
    if chart is None and metric is None and base is None and method == "nullspace":
        return DEFAULT_CHART_METRIC
    base = base or dict(zip(("chart", "metric"), PAPER_CHART_METRIC))
    return (base["chart"] if chart is None else chart,
            base["metric"] if metric is None else metric)


def corrected_step(method: str, chart: str, metric: str, gamma: float) -> bool:
    """Whether the step is the corrected one (the null-space method, symmetric chart, mass metric,
    γ = ½; with or without constraints: docs/fourth-order-step.md), whose estimate is the
    ``history`` one."""
    return (method == "nullspace" and chart == "symmetric" and metric == "mass"
            and float(gamma) == 0.5)


#: Newton's tolerance for a fixed step where none is named: below the step's own error.  The
#: corrected step on the double four-bar over 10 s (B0.x against the exact motion): h = 1e-3 gives
#: 3.2e-9 at 1e-10 — worse than 1.8e-9 at h = 2e-3 — and 2.9e-10 at 1e-12 or 1e-13, where the
#: error falls monotonically with h (examples/benchmarks/fourth_order.py --only newton)
NEWTON_TOL_FIXED = 1e-12
#: … and under dt="auto": NEWTON_TOL_RTOL · rtol (CVODE ties its corrector's test to the error
#: weights the same way, its nlscoef), never above NEWTON_TOL_AUTO_MAX (the former fixed value: a
#: looser Newton would feed its noise into the history estimate's accelerations) nor below
#: NEWTON_TOL_MIN (round-off: Newton then stops at its floor, steppers/base.py)
NEWTON_TOL_RTOL = 0.01
NEWTON_TOL_AUTO_MAX = 1e-10
NEWTON_TOL_MIN = 1e-14


def newton_tol(auto: bool, rtol: float, tol=None) -> float:
    """Newton's tolerance: ``tol`` where named, else :data:`NEWTON_TOL_FIXED` for a fixed step and
    :data:`NEWTON_TOL_RTOL` · rtol within [:data:`NEWTON_TOL_MIN`, :data:`NEWTON_TOL_AUTO_MAX`]
    under dt="auto", so that a tighter rtol is never held back by Newton (docs/variable-step.md,
    "Newton's tolerance")."""
    if tol is not None:
        return tol
    if not auto:
        return NEWTON_TOL_FIXED
    return min(NEWTON_TOL_AUTO_MAX, max(NEWTON_TOL_MIN, NEWTON_TOL_RTOL * rtol))


def resolve_factorization(kernels, method: str, factorization: str, chart: str = "end") -> str:
    """What ``factorization`` means for this model, for the Python and the compiled stepper alike
    (``meta["factorization"]`` records it): "auto" is the sparse step for a null-space run with
    constraints from :data:`SPARSE_FROM_N` coordinates on whose H is at most
    :data:`SPARSE_MAX_DENSITY` full, with either chart, else pivoted QR (SVD only when asked
    for: the C runtime has none); other names stand.  ``kernels`` is anything with ``n``, ``m``
    (and ``nnz_H``, the non-zeros of H).  ``chart`` does not enter the rule (both charts have the
    sparse step); it is kept for the callers.  It lives here because the generated ``main.c``
    bakes the same choice in as its default (:mod:`symgen.codegen.render`)."""
    if factorization != "auto":
        return factorization
    n, m = kernels.n, kernels.m
    if (method == "nullspace" and m > 0 and n >= SPARSE_FROM_N
            and getattr(kernels, "nnz_H", m * n) <= SPARSE_MAX_DENSITY * m * n):
        return "sparse"
    return "qr"


#: the name the compiled stepper and main.c's renderer import (the same rule)
compiled_factorization = resolve_factorization


@dataclass(frozen=True)
class SimulationSettings:
    """How to integrate: method, scheme, step, tolerances (validated when made; immutable)."""

    #: stepper: "nullspace" (the paper's null-space method; its chart and metric below),
    #: "index3", "newmark", "central-difference"
    method: str = "nullspace"
    #: Newmark scheme: a name, "GAMMA,BETA", (gamma, beta), a Scheme or "hht:ALPHA"
    scheme: Any = "trapezoidal"
    #: step size h [s], or "auto" (error-controlled variable step, docs/variable-step.md);
    #: None: must come from the model or the caller
    dt: float | str | None = None
    #: final time [s]; None: must come from the model or the caller
    t_end: float | None = None
    #: Newton tolerance on the weighted update of (x, h·ẋ, h²·ẍ); if not given, that of
    #: :func:`newton_tol`, below the step's own error (1e-12 for a fixed step, from rtol under auto)
    tol: float | None = None
    #: Newton iterations per step before the step fails
    max_iter: int = 25
    #: relative rank tolerance of the factorization of H (see docs/method.md), at most
    #: RANK_TOL_MAX
    rank_tol: float = 1e-10
    #: absolute tolerance on ‖q‖, h‖q̇‖, h²‖q̈‖ at the accepted state
    constraint_tol: float = 1e-8
    #: factorization of H: "svd", "qr", "sparse" (a sparse LU of a square block of H; nullspace
    #: method, either chart) or "auto": one rule for every stepper (:func:`resolve_factorization`:
    #: sparse for a null-space run from 10 coordinates on with a sparse H, else QR)
    factorization: str = "auto"
    #: the run stops as "diverged" when ‖x‖, h‖ẋ‖ or h²‖ẍ‖ exceeds it
    divergence_bound: float = 1e8
    #: nullspace tangent chart: "symmetric" (no energy drift; beyond the paper) or "end" (the
    #: paper's); None: :func:`chart_metric` (symmetric, with the mass metric, unless a preset or
    #: the metric is named)
    chart: str | None = None
    #: "compiled" (the whole step in C), "python" (the reference steppers) or "auto" (compiled
    #: when the kernels are compiled and the C runtime has the method and options, else python)
    stepper: str = "auto"
    #: nullspace: the metric of the Newmark relations' tangent part, "mass" (M-orthogonal:
    #: independent of the coordinates' units; docs/spatial-accuracy.md) or "euclidean" (the
    #: paper's); None: :func:`chart_metric` (mass, with the symmetric chart, unless a preset or
    #: the chart is named)
    metric: str | None = None
    #: a named set of settings (:data:`PRESETS`): "paper", the paper's step (chart "end", metric
    #: "euclidean"); a chart or metric named beside it wins; None: no preset
    preset: str | None = None
    #: dt="auto": relative tolerance of the local error estimate (WRMS norm over x and ẋ)
    rtol: float = 1e-6
    #: dt="auto": absolute tolerance of the local error estimate (a number or one per coordinate)
    atol: Any = 1e-8
    #: dt="auto": the first step (None: from ω_max and the tolerances)
    h_init: float | None = None
    #: dt="auto": the smallest step before the run fails (None: no bound but round-off)
    h_min: float | None = None
    #: dt="auto": the largest step (None: (t_end − t0)/10)
    h_max: float | None = None

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; known: {', '.join(METHODS)}")
        self.parsed_scheme()                                     # ValueError on a bad scheme
        if self.dt is not None and not self.auto:
            dt = _number(self.dt, "dt")
            if not (dt > 0.0 and math.isfinite(dt)):
                raise ValueError(f"dt must be positive and finite, got {dt}")
        for name in ("rtol", "h_init", "h_min", "h_max"):
            v = getattr(self, name)
            if v is not None and not (_number(v, name) > 0.0 and math.isfinite(float(v))):
                raise ValueError(f"{name} must be positive and finite, got {v!r}")
        if self.h_min is not None and self.h_max is not None and float(self.h_min) > float(self.h_max):
            raise ValueError(f"h_min = {self.h_min} exceeds h_max = {self.h_max}")
        self.atol_vector(1)                                      # ValueError on a bad atol
        if self.t_end is not None and not math.isfinite(_number(self.t_end, "t_end")):
            raise ValueError(f"t_end must be finite, got {self.t_end}")
        # Newton's tolerance as named (None: not named), then resolved by newton_tol
        object.__setattr__(self, "_named_tol", self.tol)
        object.__setattr__(self, "tol", newton_tol(self.auto, float(self.rtol), self.tol))
        for name in ("tol", "constraint_tol", "divergence_bound"):
            if not (_number(getattr(self, name), name) > 0):
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not (0.0 <= _number(self.rank_tol, "rank_tol") <= RANK_TOL_MAX):
            raise ValueError(f"rank_tol must lie in [0, {RANK_TOL_MAX:g}], got {self.rank_tol} "
                             f"({RANK_TOL_WHY})")
        if int(_number(self.max_iter, "max_iter")) < 1:
            raise ValueError(f"max_iter must be at least 1, got {self.max_iter}")
        # chart and metric as named (None: not named), then resolved by the one rule
        object.__setattr__(self, "_named", {"chart": self.chart, "metric": self.metric})
        chart, metric = chart_metric(self.method, self.chart, self.metric, self.preset)
        object.__setattr__(self, "chart", chart)
        object.__setattr__(self, "metric", metric)
        if self.chart not in CHARTS:
            raise ValueError(f"unknown chart {self.chart!r}; known: {', '.join(CHARTS)}")
        if self.chart != "end" and self.method != "nullspace":
            raise ValueError(f"chart {self.chart!r} applies to the nullspace method only, not "
                             f"{self.method!r}")
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; known: {', '.join(METRICS)}")
        if self.metric != "euclidean" and self.method != "nullspace":
            raise ValueError(f"metric {self.metric!r} applies to the nullspace method only, not "
                             f"{self.method!r}")
        if self.stepper not in STEPPERS:
            raise ValueError(f"unknown stepper {self.stepper!r}; known: {', '.join(STEPPERS)}")
        if self.factorization not in FACTORIZATIONS:
            raise ValueError(f"unknown factorization {self.factorization!r}; known: {FACTORIZATIONS}")
        if self.factorization == "sparse" and self.method != "nullspace":
            raise ValueError(f"factorization 'sparse' is the nullspace method's, not method "
                             f"{self.method!r}'s")

    @property
    def auto(self) -> bool:
        """dt is "auto": the step is chosen by the error control."""
        return isinstance(self.dt, str) and self.dt.strip().lower() == "auto"

    def atol_vector(self, n: int):
        """``atol`` as n numbers (a number is repeated; a sequence must have n entries, > 0)."""
        import numpy as np

        try:
            a = np.array(self.atol, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"atol must be a number or one number per coordinate, got "
                             f"{self.atol!r}") from None
        if a.ndim == 0:
            a = np.full(n, float(a))
        elif a.ndim != 1 or (n > 1 and a.size != n):
            raise ValueError(f"atol has {a.size} entries; expected 1 or one per coordinate ({n})")
        if not (np.all(a > 0.0) and np.all(np.isfinite(a))):
            raise ValueError(f"atol must be positive and finite, got {self.atol!r}")
        return a

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def merged(cls, *layers: "SimulationSettings | Mapping | None", **overrides) -> "SimulationSettings":
        """Defaults, then each layer (a mapping or settings object), then ``overrides``; a value
        of None is skipped (it means "not given").  Unknown names raise ``ValueError``.  A preset
        stands for its settings at the layer that names it: a chart or metric of an earlier layer
        gives way to it, one named beside it or later wins.  A null-space option (chart, metric,
        the sparse factorization) from an earlier layer than the one that chose another method is
        dropped: a model's recommended chart does not refuse ``method="index3"``.  A chart and
        metric no layer names (nor a preset) are :data:`DEFAULT_CHART_METRIC`
        (:func:`chart_metric`); a settings object's are those it was given, not the ones its rule
        chose."""
        values: dict = {}
        origin: dict = {}
        for i, layer in enumerate((*layers, overrides)):
            if layer is None:
                continue
            if isinstance(layer, cls):
                items = layer.given()
            elif isinstance(layer, Mapping):
                items = dict(layer)
            else:
                raise TypeError(f"settings must be a SimulationSettings or a mapping, got "
                                f"{type(layer).__name__}")
            unknown = sorted(set(items) - set(cls.names()))
            if unknown:
                raise ValueError(f"unknown setting(s) {unknown}; known: {list(cls.names())}")
            given = {k: v for k, v in items.items() if v is not None}
            preset = given.get("preset")
            stands_for = PRESETS.get(preset, {}) if isinstance(preset, str) else {}
            for key in stands_for:          # an earlier chart or metric gives way (an unknown
                if key not in given:        # preset: cls refuses it)
                    values.pop(key, None)
            values.update(given)
            origin.update(dict.fromkeys(given, i))
        if values.get("method", "nullspace") != "nullspace":
            for key, only in (("chart", None), ("metric", None), ("factorization", "sparse")):
                if (key in values and origin[key] < origin["method"]
                        and (only is None or values[key] == only)):
                    del values[key]
        return cls(**values)

    def given(self) -> dict:
        """The fields as they were given: chart and metric None where :func:`chart_metric` chose
        them (what :meth:`merged` and :meth:`replace` pass on)."""
        return {**self.as_dict(), **self._named, "tol": self._named_tol}

    def replace(self, **changes) -> "SimulationSettings":
        """A copy with ``changes``; a chart and metric the rule chose are chosen again."""
        return type(self)(**{**self.given(), **changes})

    def parsed_scheme(self):
        """The :class:`~symgen.steppers.Scheme`; ``central-difference`` forces (½, 0)."""
        sch = parse_scheme("central-difference" if self.method == "central-difference"
                           else self.scheme)
        if corrected_step(self.method, self.chart, self.metric, sch.gamma):
            return sch.corrected()        # the corrected step: A-stable whatever β
        return sch.corrected(False) if sch.a_stable else sch

    def estimate_plan(self, estimate: bool | None) -> tuple[bool, bool]:
        """(ω_max at every step, ω_max at the start) for simulate's ``estimate``: every step
        where asked, or where h_max bounds the step (a scheme with a stability limit: the fixed
        step's sub-step rescue, dt="auto"'s every try); the start unless ``estimate=False``
        (dt="auto": always, its first h)."""
        limited = math.isfinite(self.parsed_scheme().h_max(1.0))
        each = limited if estimate is None else bool(estimate)
        if self.auto:
            return each or limited, True
        return each, estimate is not False

    def check_auto(self) -> None:
        """dt="auto" is the null-space method's, and the index-3 method's with a damped scheme
        (its undamped accelerations oscillate from step to step, which the estimate reads as
        error at every h; docs/variable-step.md): anything else is refused in one line."""
        if self.method == "index3":
            if not self.parsed_scheme().gamma > 0.5:
                raise ValueError(f"dt='auto' with method='index3' needs a damped scheme (γ > 1/2): "
                                 f"its accelerations oscillate with {self.scheme!r} and every step "
                                 "is rejected; use scheme='hht:-0.1', method='nullspace', or a "
                                 "fixed dt")
        elif self.method != "nullspace":
            raise ValueError(f"dt='auto' is the nullspace and index3 methods' (the error estimate "
                             f"needs their accelerations; the {self.method} method's are not at "
                             "small steps): use method='nullspace' or a fixed dt")

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in self.names()}


def _number(value, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
