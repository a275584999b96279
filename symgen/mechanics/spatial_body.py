"""A spatial rigid body in natural coordinates (its points and unit vectors, the inertia that
``SpatialSystem`` turns into M) and the elements it is made of; the checks of their input
(a triple, an inertia).  See :mod:`symgen.mechanics.spatial`."""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from . import _exact
from ._common import MechanismError

__all__ = ["SpatialBody"]


def _ref(body) -> str:
    """A body's name (a SpatialBody or its name)."""
    return getattr(body, "name", body)


def _vec3(value, what: str) -> sp.Matrix:
    try:
        items = list(value)
    except TypeError:
        raise MechanismError(f"{what} must be a triple (x, y, z), got {value!r}") from None
    if len(items) != 3:
        raise MechanismError(f"{what} must be a triple (x, y, z), got {value!r}")
    return sp.Matrix([sp.sympify(v) for v in items])


def _inertia3(value, what: str) -> sp.Matrix:
    if isinstance(value, (int, float, sp.Expr)) and not isinstance(value, sp.MatrixBase):
        return sp.eye(3) * sp.sympify(value)
    try:
        items = list(value)
    except TypeError:
        raise MechanismError(f"{what} must be a number, a diagonal triple or a 3×3 matrix") from None
    if len(items) == 3 and all(not hasattr(i, "__len__") for i in items):
        return sp.diag(*[sp.sympify(i) for i in items])
    M = sp.Matrix(value)
    if M.shape != (3, 3):
        raise MechanismError(f"{what} must be 3×3, got shape {M.shape}")
    return M


@dataclass
class _Element:
    name: str
    kind: str          # "point" | "vector"
    value0: sp.Matrix  # initial position / direction (may contain parameters)
    vel0: sp.Matrix
    fixed: bool
    vel_from: str = ""  # who gave vel0: "" (nobody: zero), "given" (point/vector), or a body
    syms: tuple = ()   # coordinate symbols (moving elements)
    vsyms: tuple = ()

    def expr(self) -> sp.Matrix:
        return sp.Matrix(self.syms) if not self.fixed else self.value0

    def vexpr(self) -> sp.Matrix:
        return sp.Matrix(self.vsyms) if not self.fixed else sp.zeros(3, 1)


@dataclass
class SpatialBody:
    """A rigid body in natural coordinates (see the module docstring)."""

    name: str
    mass: sp.Expr
    inertia: sp.Matrix
    com: sp.Matrix
    points: list
    vectors: list
    markers: dict = field(default_factory=dict)
    # filled at assembly
    origin: sp.Matrix = None
    basis: list = None            # direction expressions (3-vectors, linear in x)
    pinv: list = None             # X₀⁺ (k×3), exact (Fractions: mechanics._exact)
    origin0: tuple = None         # the origin's initial position, exact

    def local(self, r0) -> tuple:
        """The local coordinates X₀⁺ (r₀ − P₀) of a point r₀ (exact values), exactly."""
        return _exact.matvec(self.pinv, _exact.sub(r0, self.origin0))

    def position(self, c) -> sp.Matrix:
        """r = P₀ + Σ c_k d_k for local coordinates c (exact numbers); a c_k within 1e-15 of 0 is
        left out."""
        r = self.origin
        for ck, d in zip(c, self.basis):
            if abs(ck) > 1e-15:
                r = r + _exact.number(ck) * d
        return r
