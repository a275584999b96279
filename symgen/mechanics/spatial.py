"""Spatial mechanisms in natural coordinates → :class:`symgen.Model`.

Choice of coordinates
---------------------
Bodies are described by **natural coordinates** (García de Jalón): the global Cartesian
components of *basic points* (``P.x``, ``P.y``, ``P.z``) and of *unit vectors* (``u.x``, …) fixed to
the bodies.  Not a reference point with Euler parameters, because:

- every body-fixed point is a *linear* function of the coordinates, so the mass matrix is
  **constant** and f carries no velocity-quadratic terms (K and C stay small and cheap);
- all constraints are **quadratic** (rigid-body dot products) or linear, so H, Ḣ, Ḧ are short
  polynomials without trigonometric functions;
- joints are shared coordinates: bodies that share a basic point are joined by a spherical joint,
  bodies that share a point and a unit vector by a revolute joint.  The forces enter by virtual
  work in the same coordinates, so G = H, which the null-space steppers assume;
- no rotation parametrization, no singularity of Euler angles, no normalization of quaternions.

A body lists its basic points P₀, P₁, … and unit vectors u₁, …  Its *directions* are P_k − P₀
and the u_j.  The first three linearly independent directions (at the initial configuration)
form its basis X = [d₁ d₂ d₃]; a body-fixed point is r = P₀ + X c with constant local coordinates
c = X₀⁻¹ (r₀ − P₀₀).  Rigid-body constraints: d_a·d_b = const for the basis (6 rows, shared rows
between bodies are kept once, rows between ground elements dropped); every further direction w is
tied to the basis by w − X a = 0 (3 linear rows).  The mass matrix of the body is, in the
generalized vector z = (P₀, d₁, d₂, d₃),

    M_z = [[m, m c̄ᵀ], [m c̄, J]] ⊗ I₃,    c̄ = X₀⁻¹ (g₀ − P₀₀),   J = X₀⁻¹ S X₀⁻ᵀ,
    S = ∫ (r − P₀)(r − P₀)ᵀ dm = S_g + m (g − P₀)(g − P₀)ᵀ,   S_g = ½ tr(I_g) 1 − I_g,

with I_g the inertia tensor about the centre of mass in global axes at the initial configuration.
A body with fewer than three independent directions (a slender rod: two points; a crank: two
points and its axis) keeps the part of S in the span of its directions; a warning says when the
neglected part (e.g. the inertia of a rod about its own axis) is not small.  One point alone is a
particle.

Constraint rows are scaled to unit-size gradients: (d·d − L²)/(2L), (d_a·d_b − c)/√(|d_a||d_b|).

Example (a spherical pendulum)::

    sys = SpatialSystem("sph")
    sys.ground_point("O", (0, 0, 0))
    sys.point("P", (1, 0, 0))
    sys.body("bob", mass=1, inertia=0, com=(1, 0, 0), points=["O", "P"])
    sys.gravity(9.81)
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from ..model import Input, Model, check_name, coordinates
from ._common import (DuplicateNameError, MechanismError, Parameters, UnknownElementError,
                      assembled_start, check_initial_state, check_reduced_mass, claim_name,
                      numeric, numeric_matrix, power_outputs, row_names, builder_units,
                      POINT_UNITS)
from .spatial_assembly import NeglectedInertiaWarning, SpatialAssembly
from .builder_events import SpatialEvents
from .spatial_body import SpatialBody, _Element, _inertia3, _ref, _vec3
from .spatial_coordinates import SpatialActuators, add_joint_outputs
from .spatial_joints import GROUND, element_subs, element_symbols, joint_rows
from .spatial_reactions import joint_reactions

__all__ = ["SpatialSystem", "SpatialBody", "NeglectedInertiaWarning"]



class SpatialSystem(SpatialActuators, SpatialEvents):
    """A spatial mechanism in natural coordinates; :meth:`model` gives the :class:`symgen.Model`.

    Positions, directions, centres of mass, inertia tensors and markers are given in global
    axes at the initial configuration.  A body is a list of basic point names and unit vector
    names; sharing names between bodies makes joints (one point: spherical; a point and a vector:
    revolute).  :meth:`spherical` and :meth:`revolute` join bodies whose own points/vectors
    coincide at the initial configuration (they merge the names); :meth:`prismatic`,
    :meth:`cylindrical`, :meth:`planar`, :meth:`universal`, the drives and :meth:`constraint` add
    rows (``spatial_joints``); ``"ground"`` stands for the fixed points and vectors in the joints.
    Expressions (outputs, forces, custom rows) may use the element symbols of :meth:`symbols`.
    """

    def __init__(self, name: str):
        self.name = name
        self._params = Parameters(f"spatial system {name!r}")
        self._elements: dict[str, _Element] = {}
        self._alias: dict[str, str] = {}
        self.bodies: dict[str, SpatialBody] = {}
        self._joints: list[tuple[str, list[str], list[str]]] = []
        self._sides: dict[str, tuple] = {}                # joint → (body a, body b): reactions
        self._rows: list[tuple[str, str, tuple]] = []   # prismatic, universal, custom rows
        self._coord_joints: list[tuple[str, str, tuple]] = []   # joints with a coordinate output
        self._actuators: list[tuple] = []       # (name, joint, kind, law): spatial_coordinates
        self._forces: list = []           # (name, body, marker/local r0, F 3-vector)
        self._springs: list = []
        self._gravity: sp.Matrix | None = None
        self._outputs: dict[str, object] = {}
        self._output_units: dict[str, str] = {}
        self._names: set[str] = set()
        self._inputs: dict[str, sp.Symbol] = {}

    # -- parameters and elements -----------------------------------------------------------------
    def input(self, name: str) -> sp.Symbol:
        """Declare an input of the model (its value arrives at run time: ``simulate(...,
        inputs=)``, docs/inputs.md); returns its Symbol for forces, torques and preloads."""
        check_name(name, "input")
        return self._inputs.setdefault(name, Input(name))

    def parameter(self, name: str, default: float, unit: str | None = None) -> sp.Symbol:
        """Declare a parameter (see :meth:`PlanarSystem.parameter`)."""
        return self._params.declare(name, default, unit)

    def _new_element(self, name, kind, value, velocity, fixed):
        if not isinstance(name, str) or not name or "." in name:
            raise MechanismError(f"{kind} name {name!r} is not allowed (non-empty, no '.')")
        if name in self._elements or name in self.bodies:
            raise DuplicateNameError(f"{self.name}: the name {name!r} is already used")
        if kind == "point":
            self._params.note(list(_vec3(value, f"{kind} {name!r}")), "m")
        el = _Element(name, kind, _vec3(value, f"{kind} {name!r}"),
                      _vec3((0, 0, 0) if velocity is None else velocity,
                            f"{kind} {name!r} velocity"), fixed,
                      vel_from="" if velocity is None else "given")
        self._elements[name] = el
        self._alias[name] = name
        return name

    def point(self, name: str, position, velocity=None) -> str:
        """A moving basic point: coordinates ``<name>.x``, ``.y``, ``.z``; its initial velocity
        (default: from its body's ``velocity``/``angular_velocity``, else zero)."""
        return self._new_element(name, "point", position, velocity, False)

    def vector(self, name: str, direction, velocity=None) -> str:
        """A moving unit vector (normalized here): coordinates ``<name>.x``, ``.y``, ``.z``."""
        d = _vec3(direction, f"vector {name!r}")
        nrm = sp.sqrt(d.dot(d))
        return self._new_element(name, "vector", d / nrm, velocity, False)

    def symbols(self, element: str) -> tuple[sp.Matrix, sp.Matrix]:
        """(position, velocity): the symbols ``<element>.x``, ``.y``, ``.z`` of a point or unit
        vector and those of its velocity, for outputs, forces and rows written before
        :meth:`model`, which maps them onto the coordinates of the element it was joined to (a
        fixed element: its values and zero velocity)."""
        if element not in self._elements:
            raise UnknownElementError(f"symbols: unknown point or vector {element!r}; they are "
                                      f"{sorted(self._elements)}")
        return element_symbols(element)

    def ground_point(self, name: str, position) -> str:
        """A fixed point (no coordinates)."""
        return self._new_element(name, "point", position, (0, 0, 0), True)

    def ground_vector(self, name: str, direction) -> str:
        """A fixed unit vector (no coordinates)."""
        d = _vec3(direction, f"ground vector {name!r}")
        return self._new_element(name, "vector", d / sp.sqrt(d.dot(d)), (0, 0, 0), True)

    def _root(self, name: str) -> str:
        while self._alias[name] != name:
            name = self._alias[name]
        return name

    def _element(self, name: str, kind: str, role: str) -> _Element:
        if name not in self._elements:
            known = sorted(k for k, e in self._elements.items() if e.kind == kind)
            raise UnknownElementError(f"{role}: unknown {kind} {name!r}; {kind}s are {known}")
        el = self._elements[name]
        if el.kind != kind:
            raise MechanismError(f"{role}: {name!r} is a {el.kind}, not a {kind}")
        return el

    def body(self, name: str, mass, inertia, com, points: Sequence[str],
             vectors: Sequence[str] = (), markers: Mapping | None = None, *, velocity=None,
             angular_velocity=None) -> SpatialBody:
        """A rigid body made of basic points and unit vectors (names), with mass, inertia tensor
        about the centre of mass (number, diagonal triple or 3×3, global axes at the initial
        configuration), centre of mass and named markers (global positions at the initial
        configuration).  ``velocity`` (of the centre of mass) and ``angular_velocity`` (global
        axes) give the initial velocities of its points, v + ω × (P − com), and vectors, ω × u;
        a point or vector whose velocity was given otherwise must agree (else MechanismError)."""
        if not isinstance(name, str) or not name or "." in name:
            raise MechanismError(f"body name {name!r} is not allowed (non-empty, no '.')")
        check_name(name, "body")
        if name in self.bodies or name in self._elements:
            raise DuplicateNameError(f"{self.name}: the name {name!r} is already used")
        points, vectors = list(points), list(vectors)
        if not points:
            raise MechanismError(f"body {name!r} needs at least one basic point")
        for p in points:
            self._element(p, "point", f"body {name!r}")
        for v in vectors:
            self._element(v, "vector", f"body {name!r}")
        for what, lst in (("points", points), ("vectors", vectors)):
            if len(set(lst)) != len(lst):
                raise DuplicateNameError(f"body {name!r} lists a {what[:-1]} twice: {lst}")
        b = SpatialBody(name, sp.sympify(mass), _inertia3(inertia, f"body {name!r}: inertia"),
                        _vec3(com, f"body {name!r}: com"), points, vectors)
        self._params.note(b.mass, "kg")
        self._params.note(list(b.inertia), "kg·m²")
        self._params.note(list(b.com), "m")
        for mname, pos in (markers or {}).items():
            if mname in b.markers:
                raise DuplicateNameError(f"body {name!r} already has a marker {mname!r}")
            b.markers[mname] = _vec3(pos, f"body {name!r}: marker {mname!r}")
        if velocity is not None or angular_velocity is not None:
            self._body_velocities(b, velocity, angular_velocity)
        self.bodies[name] = b
        return b

    def _body_velocities(self, b: SpatialBody, velocity, angular_velocity) -> None:
        """Set (or check) the initial velocities of ``b``'s points and vectors from its rigid
        motion (see :meth:`body`)."""
        v = _vec3((0, 0, 0) if velocity is None else velocity, f"body {b.name!r}: velocity")
        w = _vec3((0, 0, 0) if angular_velocity is None else angular_velocity,
                  f"body {b.name!r}: angular_velocity")
        vals = self._params.values()
        for elem in (*b.points, *b.vectors):
            el = self._elements[self._root(elem)]
            implied = (w.cross(el.value0) if el.kind == "vector"
                       else v + w.cross(el.value0 - b.com))
            if el.fixed or el.vel_from:
                have = el.vel0 if not el.fixed else sp.zeros(3, 1)
                diff = [float(sp.N((a - c).subs(vals))) for a, c in zip(implied, have)]
                scale = 1.0 + max(abs(float(sp.N(c.subs(vals)))) for c in implied)
                if max(abs(d) for d in diff) > 1e-9 * scale:
                    who = ("it is fixed" if el.fixed else "its velocity is given"
                           + ("" if el.vel_from == "given" else f" by body {el.vel_from!r}"))
                    raise MechanismError(
                        f"{self.name}: body {b.name!r}: velocity/angular_velocity give {el.kind} "
                        f"{elem!r} the velocity {[float(sp.N(c.subs(vals))) for c in implied]}, "
                        f"but {who} as {[float(sp.N(c.subs(vals))) for c in have]}")
                continue
            el.vel0, el.vel_from = implied, b.name

    def _body(self, ref, role) -> SpatialBody:
        key = ref.name if isinstance(ref, SpatialBody) else ref
        if key not in self.bodies:
            raise UnknownElementError(f"{role}: unknown body {key!r}; bodies are {list(self.bodies)}")
        return self.bodies[key]

    def _name(self, name, default):
        return claim_name(self._names, self.name, name, default)

    # -- joints ------------------------------------------------------------------------------------
    def _check_member(self, body: SpatialBody, elem: str, kind: str, role: str):
        self._element(elem, kind, role)
        if elem not in (body.points if kind == "point" else body.vectors):
            raise UnknownElementError(f"{role}: body {body.name!r} has no {kind} {elem!r}; its "
                                      f"{kind}s are {body.points if kind == 'point' else body.vectors}")

    def spherical(self, body_a, point_a: str, body_b, point_b: str, *, name: str | None = None):
        """Join two bodies (body_a may be ``"ground"``, point_a then a ground point) at a point:
        point_b becomes point_a (they must coincide initially)."""
        name = self._name(name, f"spherical_{_ref(body_a)}_{_ref(body_b)}")
        a = self._side(body_a, point_a, name)
        b = self._side(body_b, point_b, name)
        self._sides[name] = (a, b)
        self._joints.append((name, [point_a, point_b], []))
        return name

    def revolute(self, body_a, point_a: str, vector_a: str, body_b, point_b: str, vector_b: str,
                 *, drive=None, name: str | None = None):
        """Join two bodies (body_a may be ``"ground"``) by a hinge: they share the point and the
        axis unit vector.  ``drive``: the rotation of body_b relative to body_a about the axis, a
        function of t measured from the initial configuration (a rheonomic row; 0 at t = 0)."""
        name = self._name(name, f"revolute_{_ref(body_a)}_{_ref(body_b)}")
        a = self._side(body_a, point_a, name, vector_a)
        b = self._side(body_b, point_b, name, vector_b)
        self._sides[name] = (a, b)
        self._joints.append((name, [point_a, point_b], [vector_a, vector_b]))
        self._coord_joints.append(("revolute", name, (a, point_a, vector_a, b)))
        if drive is not None:
            self._rows.append(("revolute", name, (a, vector_a, self._driven(b, name),
                                                  sp.sympify(drive))))
        return name

    def _side(self, ref, point, role, vector=None):
        """A joint side: (body name or GROUND, point), the point (and vector) checked (ground
        elements for GROUND)."""
        if ref == GROUND and GROUND not in self.bodies:
            for elem, kind in ((point, "point"), (vector, "vector")):
                if elem is not None and not self._element(elem, kind, role).fixed:
                    raise MechanismError(f"joint {role!r}: {elem!r} is a moving {kind}, not one "
                                         "of the ground's")
            return GROUND
        b = self._body(ref, role)
        self._check_member(b, point, "point", role)
        if vector is not None:
            self._check_member(b, vector, "vector", role)
        return b.name

    def _driven(self, side, role):
        if side == GROUND:
            raise MechanismError(f"joint {role!r}: the driven side (body_b) must be a body, not "
                                 "the ground")
        return side

    def prismatic(self, body_a, point_a, body_b, point_b, axis, *, drive=None,
                  name: str | None = None):
        """A slider: point_b (of body_b) moves along the axis through point_a (of body_a, or of
        ``"ground"``) and body_b does not turn relative to body_a.  ``axis``: a unit vector's name
        of body_a, or a direction (global, at the initial configuration) in the span of body_a's
        points and vectors.  The points must lie on the axis initially.  ``drive``: the
        displacement u·(point_b − point_a) as a function of t (a rheonomic row)."""
        name = self._name(name, f"prismatic_{_ref(body_a)}_{_ref(body_b)}")
        a = self._side(body_a, point_a, name)
        b = self._side(body_b, point_b, name)
        drive = None if drive is None else sp.sympify(drive)
        self._rows.append(("prismatic", name, (a, point_a, b, point_b, axis, drive)))
        self._coord_joints.append(("prismatic", name, (a, point_a, b, point_b, axis)))
        return name

    def cylindrical(self, body_a, point_a, body_b, point_b, axis, *, drive_angle=None,
                    drive_slide=None, name: str | None = None):
        """A cylindrical joint: point_b moves along the axis through point_a (as :meth:`prismatic`)
        and body_b turns about it (its direction along the axis, in its span, stays parallel).
        ``drive_angle``/``drive_slide``: the rotation about the axis (from the initial
        configuration) and the displacement u·(point_b − point_a), functions of t."""
        name = self._name(name, f"cylindrical_{_ref(body_a)}_{_ref(body_b)}")
        a = self._side(body_a, point_a, name)
        b = self._side(body_b, point_b, name)
        drives = [None if d is None else sp.sympify(d) for d in (drive_angle, drive_slide)]
        self._rows.append(("cylindrical", name, (a, point_a, b, point_b, axis, *drives)))
        self._coord_joints.append(("cylindrical", name, (a, point_a, b, point_b, axis)))
        return name

    def planar(self, body_a, point_a, body_b, point_b, normal, *, name: str | None = None):
        """A planar joint: point_b stays in the plane through point_a across ``normal`` (a unit
        vector's name of body_a or a direction in its span, as a prismatic axis) and body_b turns
        only about the normal (its direction along it, in its span, stays parallel)."""
        name = self._name(name, f"planar_{_ref(body_a)}_{_ref(body_b)}")
        a = self._side(body_a, point_a, name)
        b = self._side(body_b, point_b, name)
        self._rows.append(("planar", name, (a, point_a, b, point_b, normal)))
        return name

    def universal(self, body_a, point_a: str, axis_a, body_b, point_b: str, axis_b, *,
                  name: str | None = None):
        """A Hooke joint: the bodies share the point (as :meth:`spherical`) and the axis of body_a
        and the axis of body_b (the arms of the cross: unit vector names or global directions at
        the initial configuration in the span of each body) keep their initial angle, 90° for the
        usual cross."""
        name = self._name(name, f"universal_{_ref(body_a)}_{_ref(body_b)}")
        a = self._side(body_a, point_a, name)
        b = self._side(body_b, point_b, name)
        self._sides[name] = (a, b)
        self._joints.append((name, [point_a, point_b], []))
        self._rows.append(("universal", name, (a, axis_a, b, axis_b)))
        return name

    def constraint(self, expr, *, name: str | None = None):
        """A custom constraint row expr = 0 in the element symbols (:meth:`symbols`), parameters
        and t."""
        name = self._name(name, "constraint")
        self._rows.append(("constraint", name, (sp.sympify(expr),)))
        return name

    # -- forces -----------------------------------------------------------------------------------
    def gravity(self, g=9.81, direction=(0, -1, 0)) -> None:
        d = _vec3(direction, "gravity direction")
        self._params.note(sp.sympify(g), "m/s²")
        self._gravity = sp.sympify(g) * d / sp.sqrt(d.dot(d))

    def _marker(self, body: SpatialBody, marker, role):
        if isinstance(marker, str):
            if marker == "com":
                return body.com
            if marker in body.markers:
                return body.markers[marker]
            if marker in body.points:
                return ("point", marker)
            raise UnknownElementError(f"{role}: body {body.name!r} has no marker or point "
                                      f"{marker!r}; markers {sorted(body.markers)}, points "
                                      f"{body.points}")
        return _vec3(marker, f"{role}: position")

    def force(self, body, marker, F, *, name: str | None = None):
        """A force F (3 expressions of t, the element symbols of :meth:`symbols` and parameters;
        global axes) at a marker/point."""
        b = self._body(body, "force")
        name = self._name(name, f"force({b.name})")
        self._forces.append((name, b, self._marker(b, marker, name), _vec3(F, f"{name}: F")))
        self._params.note(list(self._forces[-1][3]), "N")
        return name

    def spring(self, body_a, marker_a, body_b, marker_b, k, c=0, length=0, *, name=None):
        """A translational spring-damper between two markers: tension k(ℓ − ℓ₀) + c ℓ̇."""
        a, b = self._body(body_a, "spring"), self._body(body_b, "spring")
        name = self._name(name, f"spring({a.name},{b.name})")
        for value, unit in ((k, "N/m"), (c, "N·s/m"), (length, "m")):
            self._params.note(sp.sympify(value), unit)
        self._springs.append((name, a, self._marker(a, marker_a, name), b,
                              self._marker(b, marker_b, name), sp.sympify(k), sp.sympify(c),
                              sp.sympify(length)))
        return name

    def output(self, name: str, expr, unit: str = "") -> None:
        """An output (in ``unit``): an expression of t, the element symbols of :meth:`symbols`
        and parameters."""
        if name in self._outputs:
            raise DuplicateNameError(f"{self.name}: output {name!r} is defined twice")
        self._outputs[name] = sp.sympify(expr)
        if unit:
            self._output_units[name] = unit

    def output_point(self, body, marker, *, name: str | None = None, velocity: bool = True):
        """Outputs ``<name>.x``, ``.y``, ``.z`` (and ``.vx``, ``.vy``, ``.vz``) of a body marker;
        ``name`` defaults to ``<body>.<marker>``."""
        b = self._body(body, "output")
        where = self._marker(b, marker, "output")
        if name is None:
            name = f"{b.name}.{marker}"
        for k in ("x", "y", "z") + (("vx", "vy", "vz") if velocity else ()):
            if f"{name}.{k}" in self._outputs:
                raise DuplicateNameError(f"{self.name}: output {name}.{k!r} is defined twice")
        self._outputs[name] = ("point", b, where, velocity)

    # -- assembly ---------------------------------------------------------------------------------
    def _merge(self, pvals):
        """Union the names joined by spherical/revolute joints; check they coincide."""
        for jname, pts, vecs in self._joints:
            for kind, pair in (("point", pts), ("vector", vecs)):
                if not pair:
                    continue
                ra, rb = self._root(pair[0]), self._root(pair[1])
                if ra == rb:
                    continue
                ea, eb = self._elements[ra], self._elements[rb]
                va = np.array([numeric(v, pvals, f"{jname}: {ra}") for v in ea.value0])
                vb = np.array([numeric(v, pvals, f"{jname}: {rb}") for v in eb.value0])
                if np.linalg.norm(va - vb) > 1e-9 * (1 + np.linalg.norm(va)):
                    raise MechanismError(
                        f"joint {jname!r}: {kind}s {pair[0]!r} {tuple(va)} and {pair[1]!r} "
                        f"{tuple(vb)} do not coincide in the initial configuration")
                if ea.fixed and eb.fixed:
                    raise MechanismError(f"joint {jname!r} joins two ground {kind}s")
                if eb.fixed:
                    ra, rb = rb, ra
                self._alias[rb] = ra

    def model(self, params: Mapping | None = None, outputs=None, settings: Mapping | None = None,
              *, x0=None, xd0=None, name: str | None = None, description: str = "",
              check: bool = True, max_violation: float = 1e-3, fix: Mapping | None = None,
              xd_fix: Mapping | None = None, units: Mapping | None = None,
              joint_outputs: bool = True, reactions: bool = True) -> Model:
        """The :class:`symgen.Model`; arguments as for :meth:`PlanarSystem.model` (joint_outputs:
        :mod:`.spatial_coordinates`; ``reactions``: spherical, revolute, universal and the joints
        with rows; docs/reactions.md).

        The positions given to :meth:`point` and :meth:`vector` define the bodies' geometry, so
        they are needed; ``fix``/``xd_fix`` (coordinate or output name → value) move the start
        to the assembled configuration nearest them with those values held
        (:func:`symgen.assemble`), e.g. a crank turned to another angle."""
        if not self.bodies:
            raise MechanismError(f"{self.name}: a mechanism needs at least one body")
        pvals = self._params.values(params)
        self._alias = {k: k for k in self._elements}
        self._merge(pvals)

        # coordinates: moving elements that some body uses, in declaration order
        used = []
        for b in self.bodies.values():
            for e in b.points + b.vectors:
                r = self._root(e)
                if r not in used:
                    used.append(r)
        moving = [self._elements[e] for e in self._elements if e in used
                  and not self._elements[e].fixed]
        coords, vels, owners = [], [], []
        for el in moving:
            xs, vs = coordinates([f"{el.name}.x", f"{el.name}.y", f"{el.name}.z"])
            el.syms, el.vsyms = xs, vs
            coords += xs
            vels += vs
            owners += [f"{el.kind} {el.name!r}"] * 3
        if not coords:
            raise MechanismError(f"{self.name}: no body has a moving point or vector")
        n = len(coords)
        index = {c: i for i, c in enumerate(coords)}
        num = lambda e, what: numeric(e, pvals, what)  # noqa: E731
        if x0 is None:
            x0 = [num(v, f"{el.kind} {el.name!r}") for el in moving for v in el.value0]
        if xd0 is None:
            xd0 = [num(v, f"{el.kind} {el.name!r} velocity") for el in moving for v in el.vel0]
        x0, xd0 = np.array(x0, float), np.array(xd0, float)

        asm = SpatialAssembly(self, pvals, index, vels, n)
        for b in self.bodies.values():
            asm.body(b)
        joint_rows(asm, self._rows)
        asm.forces_and_springs()
        outs = asm.outputs(outputs)
        joint_units = add_joint_outputs(self.name, asm, self._coord_joints, outs, joint_outputs,
                                        self._actuators)
        outs = power_outputs(self.name, asm.powers, outs)
        M, f, q, labels, V, has_V = (asm.mass_matrix(), asm.f, asm.q, asm.labels, asm.V,
                                      asm.has_V)

        reactions = joint_reactions(asm, len(q)) if reactions else None
        if fix or xd_fix:
            x0, xd0 = assembled_start(name or self.name, coords, vels, M, f, q, labels, pvals, outs,
                                      x0, xd0, fix, xd_fix)
        if check:
            x0, xd0, H0 = check_initial_state(self.name, coords, q, labels, pvals, x0, xd0,
                                              max_violation=max_violation)
            Mnum = numeric_matrix(M, pvals)
            check_reduced_mass(self.name, coords, Mnum, H0, owners)
        return Model(name or self.name, coords, M, f, q=q, V=V if has_V else None,
                     params=dict(pvals), outputs=outs, x0=x0, xd0=xd0, settings=settings,
                     velocities=vels, description=description, drawing=asm.drawing(),
                     constraint_names=row_names(labels), units=builder_units(
                         {c.name: "m" if el.kind == "point" else "1" for el in moving
                          for c in el.syms}, outs, {**self._point_units(outputs), **joint_units},
                         self._params, units),
                     inputs=list(self._inputs.values()), reactions=reactions,
                     events=self._model_events(outs, element_subs(self)))

    def _point_units(self, outputs) -> dict:
        """The outputs' units: those given to :meth:`output`, m and m/s for points' outputs
        (of :meth:`output_point` and of ``model(outputs=[...])``)."""
        units = {}
        points = [k for k, spec in self._outputs.items() if isinstance(spec, tuple)]
        if outputs is not None and not isinstance(outputs, Mapping):
            points += [str(item) for item in outputs]
        for oname in points:
            units.update({f"{oname}.{k}": u for k, u in POINT_UNITS.items()})
        units.update(self._output_units)
        return units
