"""A planar rigid body of :class:`~symgen.mechanics.planar.PlanarSystem`: its coordinates
(x, y, θ) ``<body>.x``, ``<body>.y``, ``<body>.theta``, named points in body coordinates, and the
position r = p + R s and velocity v = ṗ + θ̇ perp(R s) of a body point s.

The 2-vector arithmetic is written out entry by entry (``rotate``, ``add``, ``sub``, ``dot``):
a sympy matrix product or sum goes through a DomainMatrix and asks every entry whether it is
finite, which made building the 243-coordinate N four-bar take a second; the entries are the same
expressions.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..model import coordinates
from ._common import DuplicateNameError, MechanismError, UnknownElementError

__all__ = ["Body"]


def _vec2(value, what: str) -> sp.Matrix:
    try:
        items = list(value)
    except TypeError:
        raise MechanismError(f"{what} must be a pair (x, y), got {value!r}") from None
    if len(items) != 2:
        raise MechanismError(f"{what} must be a pair (x, y), got {value!r}")
    return sp.Matrix([sp.sympify(items[0]), sp.sympify(items[1])])


def _perp(a: sp.Matrix) -> sp.Matrix:
    return sp.Matrix([-a[1], a[0]])


def _terms(*pairs) -> sp.Expr:
    """Σ aᵢ bᵢ over the pairs with no zero factor (as a sympy matrix product adds them)."""
    return sp.Add(*[a * b for a, b in pairs if a != 0 and b != 0])


def rotate(cs, v) -> sp.Matrix:
    """R v for R = [[c, −s], [s, c]], ``cs`` = (c, s); ``cs`` None: the identity (ground)."""
    if cs is None:
        return sp.Matrix([v[0], v[1]])
    c, s = cs
    return sp.Matrix([_terms((c, v[0]), (-s, v[1])), _terms((s, v[0]), (c, v[1]))])


def add(a, b) -> sp.Matrix:
    """a + b of 2-vectors."""
    return sp.Matrix([a[0] + b[0], a[1] + b[1]])


def sub(a, b) -> sp.Matrix:
    """a − b of 2-vectors."""
    return sp.Matrix([a[0] - b[0], a[1] - b[1]])


def dot(a, b) -> sp.Expr:
    """a · b of 2-vectors."""
    return _terms((a[0], b[0]), (a[1], b[1]))


@dataclass
class Body:
    """A planar rigid body; ``x``, ``y``, ``theta`` are its coordinate Symbols (ground: numbers)."""

    name: str
    mass: sp.Expr
    inertia: sp.Expr
    com: sp.Matrix
    points: dict
    x0: tuple
    v0: tuple
    x: sp.Expr = None
    y: sp.Expr = None
    theta: sp.Expr = None
    x_dot: sp.Expr = None
    y_dot: sp.Expr = None
    theta_dot: sp.Expr = None
    is_ground: bool = False
    exact: bool = True          # x0 is the initial position (False: a guess to assemble from)

    def __post_init__(self):
        if self.is_ground:
            self.x = self.y = self.theta = sp.S.Zero
            self.x_dot = self.y_dot = self.theta_dot = sp.S.Zero
        else:
            (self.x, self.y, self.theta), (self.x_dot, self.y_dot, self.theta_dot) = coordinates(
                [f"{self.name}.x", f"{self.name}.y", f"{self.name}.theta"])
        self._cs = None if self.is_ground else (sp.cos(self.theta), sp.sin(self.theta))
        self._at: dict = {}         # (s_x, s_y) → (R s, p + R s): joints and drawing share points

    @property
    def coords(self):
        return (self.x, self.y, self.theta)

    @property
    def velocities(self):
        return (self.x_dot, self.y_dot, self.theta_dot)

    def add_point(self, name: str, local) -> None:
        """Name a point given in body coordinates (ground: global coordinates)."""
        if name in self.points:
            raise DuplicateNameError(f"body {self.name!r} already has a point named {name!r}")
        self.points[name] = _vec2(local, f"point {name!r} of body {self.name!r}")

    def local(self, point) -> sp.Matrix:
        """Body coordinates of a point given by name or as a pair."""
        if isinstance(point, str):
            if point == "com":
                return self.com
            if point not in self.points:
                raise UnknownElementError(
                    f"body {self.name!r} has no point {point!r}; its points are "
                    f"{sorted(self.points) + ['com']}")
            return self.points[point]
        return _vec2(point, f"point of body {self.name!r}")

    def rotate(self, v) -> sp.Matrix:
        """R v: a vector given in body coordinates, in global ones."""
        return rotate(self._cs, v)

    def at(self, point) -> tuple:
        """(R s, p + R s) of a body point s as pairs of expressions, computed once per point."""
        s = self.local(point)
        key = (s[0], s[1])
        got = self._at.get(key)
        if got is None:
            arm = self.rotate(key)
            got = self._at[key] = (arm, add((self.x, self.y), arm))
        return got

    def arm(self, point) -> sp.Matrix:
        """R s: the global vector from the reference point to the body point."""
        return sp.Matrix(self.at(point)[0])

    def position(self, point=(0, 0)) -> sp.Matrix:
        return sp.Matrix(self.at(point)[1])

    def velocity(self, point=(0, 0)) -> sp.Matrix:
        w = _perp(self.at(point)[0])
        return add((self.x_dot, self.y_dot), (self.theta_dot * w[0], self.theta_dot * w[1]))
