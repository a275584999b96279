"""Linear stability of a Newmark step (Eq. 11): ω_max at a state, the largest stable step, and
what they mean in words (for ``symgen stability`` and the run summary).

    h ≤ (1/ω_max)·√(1/(γ/2 − β))                                             (Eq. 11)

ω_max comes from the reduced linearized system N_Hᵀ M N_H, N_Hᵀ K N_H (end of Sec. 5; for m = 0
from eig(K, M)); the per-step estimate of a run is recorded by the steppers.
"""
from __future__ import annotations

import math
from typing import Mapping, NamedTuple

import numpy as np

from .assembly import consistent_state
from .jit import as_kernels
from .kernels import for_run
from .settings import SimulationSettings
from .steppers.linalg import Linearization

__all__ = ["StepSuggestion", "suggest_step", "stability_words", "run_stability_words"]

#: Eq. 11 with ω_max = 0 (the wording `symgen stability` and the run summary share).
NO_BOUND = ("ω_max = 0 here (no positive stiffness or no degrees of freedom): "
            "Eq. 11 gives no bound")


class StepSuggestion(NamedTuple):
    """ω_max of the reduced linearized system at a state and the Eq. 11 step limit."""

    omega_max: float
    h_max: float


def suggest_step(model_or_kernels, scheme=None, t: float = 0.0, x=None, xd=None, *,
                 params: Mapping | None = None, rank_tol: float = SimulationSettings.rank_tol,
                 preset: str | None = None) -> StepSuggestion:
    """ω_max at a state (default: the model's initial state, made consistent) and the largest
    stable step h_max of ``scheme`` by Eq. 11 (inf for unconditionally stable schemes, and for
    the default corrected step, which is A-stable whatever β: docs/fourth-order-step.md;
    ``preset="paper"``: the paper's step's limit).

    Returns a :class:`StepSuggestion` ``(omega_max, h_max)``.
    """
    kernels = as_kernels(model_or_kernels)
    model = getattr(kernels, "model", None)
    settings = SimulationSettings.merged(getattr(model, "settings", None), scheme=scheme,
                                         preset=preset)
    sch = settings.parsed_scheme()
    x = np.array(model.x0 if x is None else x, dtype=float)
    xd = np.array(model.xd0 if xd is None else xd, dtype=float)
    kernels = for_run(kernels, params)      # its own p: the kernels given stay as they are
    cs = consistent_state(kernels, t, x, xd, rank_tol=rank_tol)
    lin = Linearization(kernels.n, kernels.m, rank_tol)
    w = lin.omega_at(kernels, t, cs.x, cs.xd, cs.xdd, cs.lam)   # end of Sec. 5
    return StepSuggestion(w, sch.h_max(w))


#: the corrected step's limit, in words
A_STABLE = ("unbounded: the corrected step (symmetric chart, mass metric) is A-stable whatever β; "
            "the paper's step's limit: --preset paper")


def stability_words(omega, h_max, gamma, beta, a_stable: bool = False) -> str:
    """What an infinite or missing h_max means, in words."""
    if h_max is not None and math.isfinite(h_max):
        return ""
    if h_max is None or math.isnan(h_max) or omega is None or math.isnan(omega):
        return "not estimated (ω_max unknown)"
    if beta >= 0.5 * gamma:
        return "unbounded: β ≥ γ/2, unconditionally stable (Eq. 11)"
    if a_stable:
        return A_STABLE
    return NO_BOUND


def run_stability_words(omega_max, h_max, gamma: float, beta: float,
                        a_stable: bool = False) -> str:
    """What a run's h_max series means when it has no finite value, in words (the summary)."""
    hm = np.asarray(h_max, dtype=float)
    om = np.asarray(omega_max, dtype=float)
    if np.isnan(hm).all():
        return "h_max not estimated"
    if a_stable:
        return "h_max unbounded (the corrected step is A-stable)"
    if beta >= 0.5 * gamma:
        return "h_max unbounded (unconditionally stable scheme)"
    if np.all(om[np.isfinite(om)] <= 0) and np.isfinite(om).any():
        return NO_BOUND
    return "h_max unbounded (Eq. 11 gives no bound)"
