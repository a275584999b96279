"""Planar mechanisms from bodies, joints and forces → :class:`symgen.Model`.

Each body has the coordinates (x, y, θ) of its reference point (the origin of its body frame) and
its orientation, named ``<body>.x``, ``<body>.y``, ``<body>.theta``.  Mass, inertia about the centre
of mass, the centre of mass and named points are given in body coordinates.  With the reference
point at the centre of mass (``com=(0, 0)``, the default) the mass matrix is constant,
diag(m, m, I); otherwise it depends on θ and f carries the centripetal terms (derived below).

Kinematics of a body point s (body coordinates), R = R(θ), perp(a) = (−a_y, a_x):

    r = p + R s,      v = ṗ + θ̇ perp(R s),      ∂r/∂(x, y, θ) = [I₂ | perp(R s)]

so a force F applied at s has the generalized force [F; perp(R s)·F] (virtual work).  For the
centre of mass c:  m (p̈ + perp(R c) θ̈ − θ̇² R c) = F,  and the rotation row follows by virtual
work, giving

    M_body = [[m, 0, −m (Rc)_y], [0, m, m (Rc)_x], [·, ·, I + m c·c]],   f_body ∋ m θ̇² R c.

The 2×2 rotation is written out rather than taken from ``sympy.physics.vector`` frames: the
expressions stay small and unsimplified, which matters for the 243-coordinate N four-bar.

Joints become holonomic constraints q(x, t) = 0 (rows labelled by the joint's name); driven joints
add a rheonomic row.  G = H holds because the forces are applied through virtual work in the
same coordinates.  Gravity and springs contribute to the potential energy V; point forces, body
torques and dampers are non-conservative: each has an output ``power:<element>`` (a damper's
−c ℓ̇²), which simulate integrates into ``work:<element>`` (docs/energy-balance.md).

Example::

    from symgen.mechanics import PlanarSystem
    sys = PlanarSystem("pendulum")
    m, L = sys.parameter("m", 1.0), sys.parameter("L", 1.0)
    bob = sys.body("bob", mass=m, inertia=0, points={"pivot": (0, L)}, x0=(0, -L, 0))
    sys.revolute("ground", (0, 0), bob, "pivot")
    sys.gravity(9.8)
    model = sys.model(settings=dict(method="nullspace", scheme="fox-goodwin", dt=0.1, t_end=10))
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from ..model import Input, Model, check_name, t
from ._common import (DuplicateNameError, MechanismError, Parameters, UnknownElementError,
                      Deferred, DeferredRow, assembled_start, check_initial_state,
                      check_mass_properties, check_reduced_mass, claim_name, numeric,
                      numeric_matrix, power_outputs, row_names, builder_units, POINT_UNITS)
from .builder_events import PlanarEvents
from .planar_actuators import JointActuators, has_input, time_rate
from .planar_body import Body, _perp, _vec2, dot, sub
from .planar_drawing import PlanarDrawing
from .planar_reactions import joint_reactions

__all__ = ["PlanarSystem", "Body", "GROUND"]

GROUND = "ground"


class PlanarSystem(JointActuators, PlanarEvents):
    """A planar mechanism under construction; :meth:`model` turns it into a :class:`symgen.Model`.

    Bodies and points are referred to by object or name; a point is a name (declared on the body,
    or ``"com"``) or a pair of body coordinates.  For the ground (``"ground"``) a pair is a global
    position; ground points can be named with ``system.ground.add_point``.  Every length, mass and
    force may be a number, a parameter (:meth:`parameter`) or, for forces, any sympy expression of
    t, coordinates (``body.x`` …), velocities (``body.x_dot`` …) and parameters.
    """

    def __init__(self, name: str):
        self.name = name
        self._params = Parameters(f"planar system {name!r}")
        self.ground = Body(GROUND, sp.S.Zero, sp.S.Zero, sp.zeros(2, 1), {}, (0, 0, 0), (0, 0, 0),
                           is_ground=True)
        self.bodies: dict[str, Body] = {}
        self._joints: list[tuple[str, list]] = []         # (name, [constraint exprs])
        self._sides: dict[str, tuple] = {}                # joint → (body a, body b, point on b)
        self._joint_init: list = []                       # deferred initial-value lengths/angles
        self._point_forces: list[tuple[str, Body, object, sp.Matrix]] = []
        self._torques: list[tuple[str, Body, sp.Expr]] = []
        self._potentials: list[tuple[str, sp.Expr]] = []
        self._powers: dict[str, list] = {}               # non-conservative elements' power terms
        self._gravity: sp.Matrix | None = None
        self._outputs: dict[str, sp.Expr] = {}
        self._output_units: dict[str, str] = {}
        self._names: set[str] = set()
        self._inputs: dict[str, sp.Symbol] = {}
        self._drawn = PlanarDrawing()                     # attachments, for Model.drawing
        self._joint_coords: dict[str, tuple] = {}         # joint → (kind, s, ṡ): planar_actuators
        self._actuators: list[tuple] = []                 # (name, kind, s, effort)

    # -- elements --------------------------------------------------------------------------------
    def input(self, name: str) -> sp.Symbol:
        """Declare an input of the model (its value arrives at run time: ``simulate(...,
        inputs=)``, docs/inputs.md); returns its Symbol for forces, torques and preloads."""
        check_name(name, "input")
        return self._inputs.setdefault(name, Input(name))

    def parameter(self, name: str, default: float, unit: str | None = None) -> sp.Symbol:
        """Declare a parameter with a numeric default; returns its Symbol.  ``unit`` (a label,
        e.g. "kg"): default from where it is used as it is (a body's mass: kg; a spring's k: N/m)."""
        return self._params.declare(name, default, unit)

    @property
    def parameters(self) -> dict[str, sp.Symbol]:
        return dict(self._params.symbols)

    def body(self, name: str, mass, inertia, com=(0, 0), points: Mapping | None = None,
             x0=None, v0=(0, 0, 0), *, guess=None) -> Body:
        """Add a rigid body: mass, inertia about its centre of mass, com and points in body
        coordinates, initial (x, y, θ) and (ẋ, ẏ, θ̇) of its reference point.

        Instead of an exact ``x0`` (default (0, 0, 0)) a rough placement ``guess`` is enough:
        :meth:`model` then assembles the mechanism (:func:`symgen.assemble`) from the placements,
        with the coordinates or outputs given in its ``fix`` held; ``v0`` is then a guess too (the
        velocities change as little as possible, those in ``xd_fix`` held)."""
        if x0 is not None and guess is not None:
            raise MechanismError(f"body {name!r}: give x0 (exact) or guess (a placement to "
                                 "assemble from), not both")
        exact = guess is None
        if x0 is None:
            x0 = guess if guess is not None else (0, 0, 0)
        if not isinstance(name, str) or not name or "." in name or name == GROUND:
            raise MechanismError(f"body name {name!r} is not allowed (non-empty, no '.', not "
                                 f"{GROUND!r})")
        check_name(name, "body")
        if name in self.bodies:
            raise DuplicateNameError(f"{self.name}: a body named {name!r} already exists")
        for what, v in (("x0", x0), ("v0", v0)):
            if len(tuple(v)) != 3:
                raise MechanismError(f"body {name!r}: {what} must be (x, y, theta), got {v!r}")
        b = Body(name, sp.sympify(mass), sp.sympify(inertia), _vec2(com, f"com of body {name!r}"),
                 {}, tuple(x0), tuple(v0), exact=exact)
        for pname, local in (points or {}).items():
            b.add_point(pname, local)
            self._params.note(list(b.points[pname]), "m")
        self._params.note(b.mass, "kg")
        self._params.note(b.inertia, "kg·m²")
        self._params.note(list(b.com), "m")
        self.bodies[name] = b
        return b

    def _body(self, ref, role: str) -> Body:
        if isinstance(ref, Body):
            if ref.is_ground:
                return self.ground
            if self.bodies.get(ref.name) is not ref:
                raise UnknownElementError(f"{role}: body {ref.name!r} is not part of {self.name!r}")
            return ref
        if ref == GROUND:
            return self.ground
        if ref not in self.bodies:
            raise UnknownElementError(f"{role}: unknown body {ref!r}; bodies are "
                                      f"{[GROUND] + list(self.bodies)}")
        return self.bodies[ref]

    def _name(self, name, default):
        return claim_name(self._names, self.name, name, default)

    def _point(self, body: Body, point, role: str) -> sp.Matrix:
        try:
            local = body.local(point)
        except UnknownElementError as exc:
            raise UnknownElementError(f"{role}: {exc}") from None
        if role in self._names:     # a joint or force attaches here: the drawing shows the point
            self._drawn.attach(body.name, point if isinstance(point, str) else role, local)
        return local

    # joints ---------------------------------------------------------------------------------
    def revolute(self, body_a, point_a, body_b, point_b, *, drive=None, name: str | None = None):
        """Pin point_a of body_a to point_b of body_b (2 rows).  ``drive``: θ_b − θ_a as a given
        function of t (a driven joint, one more rheonomic row)."""
        a, b = self._body(body_a, "revolute joint"), self._body(body_b, "revolute joint")
        name = self._name(name, f"revolute_{a.name}_{b.name}")
        sa, sb = self._point(a, point_a, name), self._point(b, point_b, name)
        self._sides[name] = (a, b, sb)                    # for its reaction
        d = sub(b.at(sb)[1], a.at(sa)[1])
        rows = [("x", d[0]), ("y", d[1])]
        if drive is not None:
            rows.append(("drive", b.theta - a.theta - sp.sympify(drive)))
        self._joints.append((name, rows))
        self._joint_coordinate(name, "revolute", a, b, b.theta - a.theta)
        return name

    def driven_revolute(self, body_a, point_a, body_b, point_b, angle, *, name=None):
        """A revolute joint whose relative angle θ_b − θ_a = angle(t)."""
        return self.revolute(body_a, point_a, body_b, point_b, drive=angle, name=name)

    def prismatic(self, body_a, point_a, body_b, point_b, axis=(1, 0), *, angle=None, drive=None,
                  name: str | None = None):
        """Let point_b slide along the line through point_a with direction ``axis`` (body_a
        coordinates); the relative angle θ_b − θ_a stays ``angle`` (default: its initial value).
        ``drive``: the displacement along the axis as a given function of t."""
        a, b = self._body(body_a, "prismatic joint"), self._body(body_b, "prismatic joint")
        name = self._name(name, f"prismatic_{a.name}_{b.name}")
        sa, sb = self._point(a, point_a, name), self._point(b, point_b, name)
        self._sides[name] = (a, b, sb)                    # for its reaction
        ax = _vec2(axis, f"{name}: axis")
        nrm = sp.sqrt(ax.dot(ax))
        if nrm.is_zero:
            raise MechanismError(f"{self.name}: joint {name!r}: the axis {tuple(axis)!r} has zero "
                                 "length (a prismatic joint needs a direction)")
        e = a.rotate(ax) / nrm
        d = sub(b.at(sb)[1], a.at(sa)[1])
        rows = [("normal", dot(_perp(e), d))]
        rows.append(("angle", self._rel_angle_row(a, b, angle, name)))
        if drive is not None:
            rows.append(("drive", dot(e, d) - sp.sympify(drive)))
        self._joints.append((name, rows))
        self._joint_coordinate(name, "prismatic", a, b, dot(e, d))
        return name

    def driven_prismatic(self, body_a, point_a, body_b, point_b, displacement, axis=(1, 0), *,
                         angle=None, name=None):
        """A prismatic joint whose displacement along the axis is a given function of t."""
        return self.prismatic(body_a, point_a, body_b, point_b, axis, angle=angle,
                              drive=displacement, name=name)

    def weld(self, body_a, point_a, body_b, point_b, *, angle=None, name: str | None = None):
        """Rigidly join two bodies at a point; relative angle ``angle`` (default: initial)."""
        a, b = self._body(body_a, "weld joint"), self._body(body_b, "weld joint")
        name = self._name(name, f"weld_{a.name}_{b.name}")
        sa, sb = self._point(a, point_a, name), self._point(b, point_b, name)
        self._sides[name] = (a, b, sb)                    # for its reaction
        d = sub(b.at(sb)[1], a.at(sa)[1])
        rows = [("x", d[0]), ("y", d[1]), ("angle", self._rel_angle_row(a, b, angle, name))]
        self._joints.append((name, rows))
        return name

    def distance(self, body_a, point_a, body_b, point_b, length=None, *, name: str | None = None):
        """A rigid massless truss: ``|r_b − r_a| = length`` (default: the initial distance).
        Written as (d·d − L²)/(2L) = 0, polynomial in the coordinates with unit-size gradient."""
        a, b = self._body(body_a, "distance joint"), self._body(body_b, "distance joint")
        name = self._name(name, f"distance_{a.name}_{b.name}")
        sa, sb = self._point(a, point_a, name), self._point(b, point_b, name)
        self._sides[name] = (a, b, sb)                    # for its reaction
        d = sub(b.at(sb)[1], a.at(sa)[1])
        if length is None:
            length = Deferred(sp.sqrt(dot(d, d)), name, "initial length")
        else:
            self._params.note(sp.sympify(length), "m")
        row = DeferredRow(lambda L: (dot(d, d) - L ** 2) / (2 * L), length)
        self._joints.append((name, [("length", row)]))
        return name

    def _rel_angle_row(self, a: Body, b: Body, angle, name):
        rel = b.theta - a.theta
        if angle is None:
            return DeferredRow(lambda phi: rel - phi, Deferred(rel, name, "initial relative angle"))
        return rel - sp.sympify(angle)

    # forces ---------------------------------------------------------------------------------
    def gravity(self, g=9.81, direction=(0, -1)) -> None:
        """Uniform gravity of magnitude g (number or parameter) along ``direction``; adds m g·r_com
        potential energy for every body."""
        dvec = _vec2(direction, "gravity direction")
        self._params.note(sp.sympify(g), "m/s²")
        self._gravity = sp.sympify(g) * dvec / sp.sqrt(dvec.dot(dvec))

    def force(self, body, point, F, *, local: bool = False, name: str | None = None):
        """A force F = (Fx, Fy) (any expressions of t, x, ẋ, parameters) at a body point; global
        components unless ``local`` (then it turns with the body)."""
        b = self._body(body, "force")
        name = self._name(name, f"force({b.name})")
        s = self._point(b, point, name)
        Fv = _vec2(F, f"{name}: F")
        self._params.note(list(Fv), "N")
        if local:
            Fv = b.rotate(Fv)
        self._point_forces.append((name, b, s, Fv))
        self._powers[name] = [dot(Fv, b.velocity(s))] if not b.is_ground else []
        return name

    def torque(self, body, T, *, reaction=None, name: str | None = None):
        """A torque T on a body (counter-clockwise positive); ``reaction`` gets −T."""
        b = self._body(body, "torque")
        name = self._name(name, f"torque({b.name})")
        self._torques.append((name, b, sp.sympify(T)))
        self._params.note(sp.sympify(T), "N·m")
        self._powers[name] = [sp.sympify(T) * b.theta_dot]
        if reaction is not None:
            r = self._body(reaction, f"{name}: reaction")
            self._torques.append((name, r, -sp.sympify(T)))
            self._powers[name].append(-sp.sympify(T) * r.theta_dot)
        return name

    def spring(self, body_a, point_a, body_b, point_b, k, c=0, length=0, *, name: str | None = None):
        """A translational spring-damper between two points: tension k(ℓ − ℓ₀) + c ℓ̇.
        With free length 0 it is the linear force −k d − c ḋ on point b (no square root)."""
        a, b = self._body(body_a, "spring"), self._body(body_b, "spring")
        name = self._name(name, f"spring({a.name},{b.name})")
        sa, sb = self._point(a, point_a, name), self._point(b, point_b, name)
        k, c, L0 = sp.sympify(k), sp.sympify(c), sp.sympify(length)
        for value, unit in ((k, "N/m"), (c, "N·s/m"), (L0, "m")):
            self._params.note(value, unit)
        d = sub(b.at(sb)[1], a.at(sa)[1])
        dd = sub(b.velocity(sb), a.velocity(sa))
        if L0 == 0:
            Fb = -k * d - c * dd
            V = k * dot(d, d) / 2
            P = -c * dot(dd, dd)                 # the damper's power (the spring's is −dV/dt)
        else:
            ell = sp.sqrt(dot(d, d))
            ell_dot = dot(d, dd) / ell
            tension = k * (ell - L0) + c * ell_dot
            Fb = -tension * d / ell
            V = k * (ell - L0) ** 2 / 2
            P = -c * ell_dot ** 2
        if c != 0:
            self._powers[name] = [P]
        self._point_forces.append((name, b, sb, Fb))
        self._point_forces.append((name, a, sa, -Fb))
        if k != 0 and not has_input(V):        # (an input's energy is not the state's)
            self._potentials.append((name, V))
        return name

    def torsional_spring(self, body_a, body_b, k, c=0, angle=0, *, name: str | None = None):
        """A torsional spring-damper on the relative angle φ = θ_b − θ_a (ground: θ = 0):
        torque −k(φ − angle) − c(φ̇ − anglė) on body b and the opposite on body a.  An angle
        that moves (a function of t) is a PD toward it: the damper follows its rate ∂angle/∂t
        (inputs held); the work the moving angle does on the spring is in ``power:<name>``."""
        a, b = self._body(body_a, "torsional spring"), self._body(body_b, "torsional spring")
        name = self._name(name, f"torsional_spring({a.name},{b.name})")
        k, c, phi0 = sp.sympify(k), sp.sympify(c), sp.sympify(angle)
        for value, unit in ((k, "N·m/rad"), (c, "N·m·s/rad"), (phi0, "rad")):
            self._params.note(value, unit)
        phi = b.theta - a.theta
        phi_dot = b.theta_dot - a.theta_dot
        phi0_dot = time_rate(phi0, (), ())                  # the reference's rate, inputs held
        T = -k * (phi - phi0) - c * (phi_dot - phi0_dot)
        self._torques.append((name, b, T))
        self._torques.append((name, a, -T))
        power = [-c * (phi_dot - phi0_dot) * phi_dot] if c != 0 else []
        if k != 0 and not has_input(k * phi0):
            self._potentials.append((name, k * (phi - phi0) ** 2 / 2))
            power.append(-k * (phi - phi0) * phi0_dot)      # ∂V/∂t: the moving angle's work
        elif k != 0:
            power.append(-k * (phi - phi0) * phi_dot)       # not in V (an input): its power
        if any(p != 0 for p in power):
            self._powers[name] = [p for p in power if p != 0]
        return name

    # outputs --------------------------------------------------------------------------------
    def position(self, body, point=(0, 0)) -> sp.Matrix:
        """Global position of a body point (a sympy 2-vector in the coordinates)."""
        b = self._body(body, "position")
        return b.position(self._point(b, point, "position"))

    def velocity(self, body, point=(0, 0)) -> sp.Matrix:
        b = self._body(body, "velocity")
        return b.velocity(self._point(b, point, "velocity"))

    def output(self, name: str, expr, unit: str = "") -> None:
        """Record a scalar expression of t, x, ẋ and parameters under ``name`` (in ``unit``)."""
        if name in self._outputs:
            raise DuplicateNameError(f"{self.name}: output {name!r} is defined twice")
        self._outputs[name] = sp.sympify(expr)
        if unit:
            self._output_units[name] = unit

    def output_point(self, body, point, *, name: str | None = None, velocity: bool = True) -> None:
        """Outputs ``<name>.x``, ``.y`` (and ``.vx``, ``.vy``) of a body point; ``name`` defaults
        to ``<body>.<point>``."""
        for k, v in self._point_outputs(body, point, name, velocity).items():
            self.output(k, v, POINT_UNITS[k.rsplit(".", 1)[1]])

    def _point_outputs(self, body, point, name, velocity) -> dict:
        b = self._body(body, "output")
        s = self._point(b, point, "output")
        if name is None:
            if not isinstance(point, str):
                raise MechanismError(f"output of an unnamed point of body {b.name!r} needs a name")
            name = f"{b.name}.{point}"
        r = b.position(s)
        outs = {f"{name}.x": r[0], f"{name}.y": r[1]}
        if velocity:
            v = b.velocity(s)
            outs.update({f"{name}.vx": v[0], f"{name}.vy": v[1]})
        return outs

    # -- assembly --------------------------------------------------------------------------------
    def model(self, params: Mapping | None = None, outputs=None, settings: Mapping | None = None,
              *, x0: Sequence[float] | None = None, xd0: Sequence[float] | None = None,
              name: str | None = None, description: str = "", check: bool = True,
              max_violation: float = 1e-3, fix: Mapping | None = None,
              xd_fix: Mapping | None = None, units: Mapping | None = None,
              joint_outputs: bool = True, reactions: bool = True) -> Model:
        """The :class:`symgen.Model` of this mechanism.

        params: overrides of parameter defaults.  outputs: further outputs, a mapping name → expr
        or a list of ``"<body>.<point>"`` names (position and velocity).  x0/xd0: the whole initial
        state (default: each body's x0/v0).  With ``check`` the initial state is checked against
        the constraints (small violations projected with a warning, large ones refused) and the
        reduced mass matrix at x0 must be non-singular.  fix/xd_fix (coordinate or output name →
        value), or a body placed by a ``guess``: the initial state is assembled
        (:func:`symgen.assemble`) from the bodies' placements with those values held.  units:
        name → unit over the builder's (SI: m, rad, kg, N, W …; ``symgen.units``).
        joint_outputs: each revolute and prismatic joint's coordinate and rate as outputs
        (``<joint>.angle``, ``<joint>.angle_dot`` …; :mod:`.planar_actuators`).
        reactions: the joints' forces and moments as signals (docs/reactions.md), or not.
        """
        if not self.bodies:
            raise MechanismError(f"{self.name}: a mechanism needs at least one body")
        pvals = self._params.values(params)
        bodies = list(self.bodies.values())
        coords = [c for b in bodies for c in b.coords]
        vels = [v for b in bodies for v in b.velocities]
        n = len(coords)
        index = {c: i for i, c in enumerate(coords)}

        # initial state (needed first: default lengths/angles of joints come from it)
        x0_given = x0
        if x0 is None:
            x0 = [numeric(v, pvals, f"body {b.name!r}: x0[{i}]") for b in bodies
                  for i, v in enumerate(b.x0)]
        if xd0 is None:
            xd0 = [numeric(v, pvals, f"body {b.name!r}: v0[{i}]") for b in bodies
                   for i, v in enumerate(b.v0)]
        x0, xd0 = np.array(x0, float), np.array(xd0, float)
        if x0.shape != (n,) or xd0.shape != (n,):
            raise MechanismError(f"{self.name}: x0 and xd0 need {n} entries ({n // 3} bodies)")
        subs0 = dict(pvals)
        subs0.update({c: float(v) for c, v in zip(coords, x0)})
        subs0[t] = 0.0

        M, f, V, has_V = self._dynamics(bodies, index, n, pvals)   # M, f and the potential
        guessed = [b for b in bodies if not b.exact] if x0_given is None else []
        q, labels, joint_rows = self._constraint_rows(pvals, subs0, guessed)
        outs, out_units = self._all_outputs(outputs)
        self._joint_outputs(outs, out_units, joint_outputs)
        outs = power_outputs(self.name, self._powers, outs)

        # assembly and checks -----------------------------------------------------------------
        if fix or xd_fix or guessed:
            x0, xd0 = assembled_start(name or self.name, coords, vels, M, f, q, labels, pvals, outs,
                                      x0, xd0, fix, xd_fix)
        if check:
            x0, xd0, H0 = check_initial_state(self.name, coords, q, labels, pvals, x0, xd0,
                                              max_violation=max_violation)
            Mnum = numeric_matrix(M, pvals, {c: float(v) for c, v in zip(coords, x0)})
            owners = [f"body {b.name!r}" for b in bodies for _ in range(3)]
            check_reduced_mass(self.name, coords, Mnum, H0, owners)

        return Model(
            name or self.name, coords, M, f, q=q, V=V if has_V else None,
            params={s: v for s, v in pvals.items()}, outputs=outs, x0=x0, xd0=xd0,
            settings=settings, velocities=vels, description=description,
            drawing=self._drawn.polylines(bodies, GROUND), constraint_names=row_names(labels),
            units=builder_units({c.name: "rad" if c == b.theta else "m" for b in bodies
                                 for c in b.coords}, outs, out_units, self._params, units),
            inputs=list(self._inputs.values()),
            reactions=joint_reactions(q, joint_rows, self._sides) if reactions else None,
            events=self._model_events(outs))

    def _dynamics(self, bodies, index, n, pvals):
        """M, f (inertial and applied forces) and the potential V of the bodies; ``has_V``."""
        M = sp.zeros(n, n)
        f = [sp.S.Zero] * n
        for b in bodies:
            check_mass_properties(self.name, b.name, b.mass, b.inertia, pvals)
            i = index[b.x]
            m, I, c = b.mass, b.inertia, b.com
            Rc = b.rotate(c)
            M[i, i] = m
            M[i + 1, i + 1] = m
            M[i + 2, i + 2] = I + m * dot(c, c)
            if c[0] != 0 or c[1] != 0:
                M[i, i + 2] = M[i + 2, i] = -m * Rc[1]
                M[i + 1, i + 2] = M[i + 2, i + 1] = m * Rc[0]
                f[i] += m * b.theta_dot ** 2 * Rc[0]
                f[i + 1] += m * b.theta_dot ** 2 * Rc[1]

        # applied forces
        V = []                  # the terms of V, added once (a growing sum is rebuilt every time)
        has_V = False
        forces = list(self._point_forces)
        if self._gravity is not None:
            for b in bodies:
                if b.mass != 0:
                    forces.append(("gravity", b, b.com, b.mass * self._gravity))
                    V.append(-(b.mass * dot(self._gravity, b.at(b.com)[1])))
            has_V = True
        for _, b, s, F in forces:
            if b.is_ground:
                continue
            i = index[b.x]
            arm = b.rotate(s)
            f[i] += F[0]
            f[i + 1] += F[1]
            f[i + 2] += dot(_perp(arm), F)
        for _, b, T in self._torques:
            if not b.is_ground:
                f[index[b.theta]] += T
        self._actuator_forces(f, index)
        for _, pot in self._potentials:
            V.append(pot)
            has_V = True

        return M, f, sp.Add(*V), has_V

    def _constraint_rows(self, pvals, subs0, guessed=()):
        """The joints' constraint rows (deferred lengths and angles resolved at x0) and labels;
        a deferred length or angle may not come from a body in ``guessed`` (placed by a guess)."""
        q, labels, joint_rows = [], [], {}
        for jname, rows in self._joints:
            joint_rows[jname] = []
            for tag, expr in rows:
                if isinstance(expr, DeferredRow):
                    from_guess = [b.name for b in guessed if set(b.coords) & expr.free_symbols()]
                    if from_guess:
                        raise MechanismError(
                            f"{self.name}: joint {jname!r} ({tag}) takes its length or angle from "
                            f"the initial configuration, but body {from_guess[0]!r} is only placed "
                            "by a guess: give the joint's length/angle or the body's exact x0")
                    expr = expr.resolve(subs0)
                if expr == 0:
                    continue
                free = expr.free_symbols - set(pvals) - {t}
                if not free:
                    raise MechanismError(
                        f"{self.name}: joint {jname!r} ({tag}) constrains no coordinate "
                        "(both sides on the ground?)")
                joint_rows[jname].append(len(q))
                q.append(expr)
                labels.append(f"{jname!r} ({tag})")

        return q, labels, joint_rows

    def _all_outputs(self, outputs):
        """The declared outputs plus ``outputs`` (a mapping, or ``"<body>.<point>"`` names), and
        their units."""
        outs, units = dict(self._outputs), dict(self._output_units)
        if outputs is not None:
            if isinstance(outputs, Mapping):
                extra = {k: sp.sympify(v) for k, v in outputs.items()}
            else:
                extra = {}
                for item in outputs:
                    bname, _, pname = str(item).partition(".")
                    extra.update(self._point_outputs(bname, pname, None, True))
                units.update({k: POINT_UNITS[k.rsplit(".", 1)[1]] for k in extra})
            for k, v in extra.items():
                if k in outs:
                    raise DuplicateNameError(f"{self.name}: output {k!r} is defined twice")
                outs[k] = v

        return outs, units

