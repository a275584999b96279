"""The joint coordinates of a :class:`~symgen.mechanics.spatial.SpatialSystem` as outputs
(issue 35), as the planar builder's (:mod:`.planar_actuators`): a revolute joint's rotation
``<joint>.angle``, a prismatic joint's displacement ``<joint>.displacement``, a cylindrical
joint's both, each with its rate (``_dot``); and the servos and motors on them
(:class:`SpatialActuators`, the efforts' generalized forces E ∂s/∂x added when the model is built).

The displacement is u·(r_b − r_a) (u the axis, body_a's; the points the joint's), as a slide
drive's.  The rotation of body_b relative to body_a about u is measured from the initial
configuration as a rotation drive's (:mod:`.spatial_joints`): with e_a, e_b unit directions of the
bodies across u and f_a = u × e_a, S = f_a·e_b = sin φ, C = e_a·e_b = cos φ, and the angle is
atan2(S cos φ₀ − C sin φ₀, C cos φ₀ + S sin φ₀) = φ − φ₀ wrapped to (−π, π] (an output holds no
state to unwrap it), its rate (C Ṡ − S Ċ)/(C² + S²).
"""
from __future__ import annotations

import math

import sympy as sp

from ._common import DuplicateNameError, MechanismError, UnknownElementError
from .planar_actuators import COORDINATE, EFFORT_UNIT, motor_law, output_key, servo_law, time_rate
from .spatial_joints import GROUND, _point, direction, rotation_frame

__all__ = ["joint_coordinates", "add_joint_outputs", "SpatialActuators"]


def _body(asm, ref):
    mech = asm.mech
    return None if ref == GROUND and GROUND not in mech.bodies else mech._body(ref, "joint")


def _angle(asm, name, a, b, u, u0):
    """(φ − φ₀ wrapped, its rate) of body b relative to a (None: the ground) about u."""
    ea, fa, eb, phi0 = rotation_frame(asm, name, a, b, u, u0)
    S, C = fa.dot(eb), ea.dot(eb)
    c0, s0 = sp.Float(math.cos(phi0), 17), sp.Float(math.sin(phi0), 17)
    rate = ((C * time_rate(S, list(asm.index), asm.vels) - S * time_rate(C, list(asm.index),
                                                                         asm.vels))
            / (C ** 2 + S ** 2))
    return sp.atan2(S * c0 - C * s0, C * c0 + S * s0), rate


def _slide(asm, name, a, pa, b, pb, axis):
    ra, _ = _point(asm, a, pa, name)
    rb, _ = _point(asm, b, pb, name)
    u, _ = direction(asm, a, axis, name)
    s = u.dot(rb - ra)
    return s, time_rate(s, list(asm.index), asm.vels)


def joint_coordinates(asm, joints) -> dict:
    """Joint name → {"revolute": (angle, rate), "prismatic": (displacement, rate)} (a cylindrical
    joint has both); a revolute whose body has no direction across the axis has, instead of the
    pair, the MechanismError that says so.  ``joints``: (kind, name, args) with args
    (a, point_a, vector_a, b) of a revolute, (a, point_a, b, point_b, axis) of a prismatic or
    cylindrical joint."""
    coords = {}
    for kind, name, args in joints:
        got = coords[name] = {}
        if kind == "revolute":
            a, _, vector_a, b = args
            a, b = _body(asm, a), _body(asm, b)
            u, u0 = direction(asm, a, vector_a, name)
            try:
                if b is None:                           # the ground on side b: −(a about it)
                    got["revolute"] = tuple(-v for v in _angle(asm, name, None, a, u, u0))
                else:
                    got["revolute"] = _angle(asm, name, a, b, u, u0)
            except MechanismError as exc:   # a body with no direction across the axis
                got["revolute"] = exc
            continue
        a, pa, b, pb, axis = args
        a, b = _body(asm, a), _body(asm, b)
        if kind == "cylindrical":
            u, u0 = direction(asm, a, axis, name)
            got["revolute"] = _angle(asm, name, a, b, u, u0)
        got["prismatic"] = _slide(asm, name, a, pa, b, pb, axis)
    return coords


def add_joint_outputs(system: str, asm, joints, outputs: dict, with_coordinates: bool = True,
                      actuators=()) -> dict:
    """Add the joints' coordinate outputs (``with_coordinates``) and the actuators' efforts to
    ``outputs``, the actuators' generalized forces E ∂s/∂x to ``asm.f`` and their powers E ṡ to
    ``asm.powers``; a name taken already is an error.  Returns the new outputs' units."""
    coords = joint_coordinates(asm, joints) if (with_coordinates or actuators) else {}
    new = {}
    for name, got in coords.items() if with_coordinates else ():
        key = output_key(name)
        for kind, pair in got.items():
            if isinstance(pair, tuple):
                word, unit, rate_unit = COORDINATE[kind]
                new[f"{key}.{word}"], new[f"{key}.{word}_dot"] = (pair[0], unit), (pair[1],
                                                                                    rate_unit)
    for name, joint, kind, law in actuators:
        pair = coords[joint][kind]
        if isinstance(pair, MechanismError):
            raise pair
        s, s_dot = pair
        effort = law(s, s_dot)
        for c in sorted(s.free_symbols & set(asm.index), key=asm.index.get):
            asm.f[asm.index[c]] += effort * sp.diff(s, c)
        asm.powers[name] = [effort * s_dot]
        new[f"{output_key(name)}.effort"] = (effort, EFFORT_UNIT[kind])
    for key, (expr, _) in new.items():
        if key in outputs:
            raise DuplicateNameError(
                f"{system}: output {key!r} is defined twice (a joint coordinate or an actuator's "
                "effort has that name): rename the output, or build with "
                "model(joint_outputs=False) to leave the joint coordinates out")
        outputs[key] = expr
    return {key: unit for key, (_, unit) in new.items()}


class SpatialActuators:
    """The actuators of :class:`~symgen.mechanics.spatial.SpatialSystem` (as the planar
    builder's, :mod:`.planar_actuators`): a revolute joint's servo acts on its rotation from the
    initial configuration with the position error wrapped to (−π, π] (the angle is known modulo
    2π); the generalized forces enter when the model is built."""

    def _actuated(self, joint, role) -> str:
        kinds = {name: kind for kind, name, _ in self._coord_joints}
        if kinds.get(joint) not in ("revolute", "prismatic"):
            raise UnknownElementError(
                f"{self.name}: {role} acts on joint {joint!r}, which is not a revolute or "
                "prismatic joint of this system; joints it can act on: "
                f"{sorted(k for k, v in kinds.items() if v in ('revolute', 'prismatic'))}")
        return kinds[joint]

    def servo(self, joint, ref, kp, kd=0, *, ref_dot=None, limit=None, name=None) -> str:
        """A position servo on a revolute or prismatic joint: effort = clip(kp (ref − s) +
        kd (ref_dot − ṡ), ±limit) (arguments as for the planar ``servo``; a revolute's s is its
        rotation from the initial configuration, the error ref − s wrapped to (−π, π])."""
        kind = self._actuated(joint, "servo")
        name = self._name(name, f"servo({joint})")
        law = servo_law(self._params, kind, ref, kp, kd, ref_dot, limit,
                        wrap=kind == "revolute")
        self._actuators.append((name, joint, kind, law))
        return name

    def motor(self, joint, effort, *, limit=None, name=None) -> str:
        """A motor on a revolute or prismatic joint: the effort (an expression) clipped to
        ±limit."""
        kind = self._actuated(joint, "motor")
        name = self._name(name, f"motor({joint})")
        self._actuators.append((name, joint, kind, motor_law(self._params, kind, effort, limit)))
        return name
