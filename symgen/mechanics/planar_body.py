"""A planar rigid body of :class:`~symgen.mechanics.planar.PlanarSystem`: its coordinates
(x, y, θ) ``<body>.x``, ``<body>.y``, ``<body>.theta``, named points in body coordinates, and the
position r = p + R s and velocity v = ṗ + θ̇ perp(R s) of a body point s.
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


def _rot(th) -> sp.Matrix:
    c, s = sp.cos(th), sp.sin(th)
    return sp.Matrix([[c, -s], [s, c]])


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
        self._R = _rot(self.theta) if not self.is_ground else sp.eye(2)

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

    def arm(self, point) -> sp.Matrix:
        """R s: the global vector from the reference point to the body point."""
        return self._R * self.local(point)

    def position(self, point=(0, 0)) -> sp.Matrix:
        return sp.Matrix([self.x, self.y]) + self.arm(point)

    def velocity(self, point=(0, 0)) -> sp.Matrix:
        return sp.Matrix([self.x_dot, self.y_dot]) + self.theta_dot * _perp(self.arm(point))
