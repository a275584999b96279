"""Steppers: one fixed Newmark step of a constrained (or unconstrained) model on the kernels.

* ``nullspace`` — the paper's method (:class:`NullspaceStepper`, Sec. 5, Eqs. 32–58);
* ``index3`` — classical Newmark / HHT-α with Lagrange multipliers (:class:`Index3Stepper`, Fig. 1);
* ``newmark`` and ``central-difference`` — minimal-coordinate references for models with m = 0
  (:class:`NewmarkStepper`).

Schemes by name or (gamma, beta): :class:`Scheme`, :func:`parse_scheme`.
"""
from .base import DEFAULT_CONSTRAINT_TOL, DEFAULT_MAX_ITER, DEFAULT_TOL, Stepper, StepFailure
from .index3 import Index3Stepper
from .linalg import DEFAULT_RANK_TOL, Linearization, omega_from
from .minimal import NewmarkStepper
from .nullspace import NullspaceStepper
from ..schemes import PRESETS, Scheme, parse_scheme

__all__ = ["Scheme", "parse_scheme", "PRESETS", "Stepper", "StepFailure", "NullspaceStepper",
           "Index3Stepper", "NewmarkStepper", "Linearization", "omega_from", "METHODS",
           "make_stepper", "DEFAULT_TOL", "DEFAULT_CONSTRAINT_TOL", "DEFAULT_MAX_ITER",
           "DEFAULT_RANK_TOL"]

#: method name → stepper class
METHODS = {
    "nullspace": NullspaceStepper,
    "index3": Index3Stepper,
    "newmark": NewmarkStepper,
    "central-difference": NewmarkStepper,
}


def make_stepper(method: str, kernels, scheme, h: float, **kw) -> Stepper:
    """The stepper for ``method`` (a key of :data:`METHODS`).  ``central-difference`` forces the
    scheme (½, 0)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    scheme = parse_scheme(scheme)
    if method == "central-difference":
        scheme = parse_scheme("central-difference")
    stepper = METHODS[method](kernels, scheme, h, **kw)
    stepper.method = method
    return stepper
