"""The joint coordinates of a planar system and the actuators that act on them (issue 35).

A revolute joint's coordinate is its relative angle φ = θ_b − θ_a (rad, unwrapped: the
coordinates' difference), a prismatic joint's its displacement s = e·(r_b − r_a) of point_b from
point_a along the axis e (m, e turning with body_a).  Each is an automatic output of the model,
``<joint>.angle`` and ``<joint>.angle_dot`` or ``<joint>.displacement`` and
``<joint>.displacement_dot`` (the joint's name as an output name: ``revolute(ground,bob)`` →
``revolute.ground.bob``), unless ``model(joint_outputs=False)``.

An actuator's effort E (a torque for a revolute joint, a force along the axis for a prismatic one)
acts on the joint coordinate s through virtual work: the generalized force E ∂s/∂x, equal and
opposite on both bodies; its power is E ṡ (the output ``power:<actuator>``, whose work enters the
energy balance) and E itself the output ``<actuator>.effort``.  A limit clips E to ±limit with a
Piecewise, so that K = −∂f/∂x and C = −∂f/∂ẋ (:func:`symgen.derive`) are the branch's
derivatives (zero while saturated) and the C printer writes a conditional.
"""
from __future__ import annotations

import re

import sympy as sp

from ..model import t
from ._common import DuplicateNameError, MechanismError, UnknownElementError

__all__ = ["JointActuators", "clip", "output_key", "time_rate", "servo_law", "motor_law"]

#: The output names of a joint coordinate and its rate, by joint kind, and their units.
COORDINATE = {"revolute": ("angle", "rad", "rad/s"), "prismatic": ("displacement", "m", "m/s")}
#: The unit of an actuator's effort, by joint kind.
EFFORT_UNIT = {"revolute": "N·m", "prismatic": "N"}


def output_key(name: str) -> str:
    """An element's name as an output name: '(' ',' ')' '#' become '.' and other signs '_'
    (``revolute(ground,bob)`` → ``revolute.ground.bob``), as ``power_outputs`` names powers."""
    key = re.sub(r"[(),#]+", ".", name)
    return re.sub(r"[^A-Za-z0-9_.]", "_", key).strip(".")


def clip(effort, limit):
    """``effort`` clipped to ±``limit`` (None: unclipped) as a Piecewise whose derivatives are
    those of the branch taken; a numeric limit must be positive."""
    if limit is None:
        return effort
    limit = sp.sympify(limit)
    if limit.is_number and not (limit.is_real and limit > 0):
        raise MechanismError(f"the effort limit must be a positive number or parameter, got "
                             f"{limit}")
    return sp.Piecewise((limit, effort > limit), (-limit, effort < -limit), (effort, True))


def time_rate(expr, coords, velocities):
    """dexpr/dt along the motion, Σ ∂expr/∂c ċ + ∂expr/∂t (the inputs held)."""
    expr = sp.sympify(expr)
    free = expr.free_symbols
    terms = [sp.diff(expr, c) * v for c, v in zip(coords, velocities) if c in free]
    return sp.Add(*terms, sp.diff(expr, t))


def servo_law(params, kind, ref, kp, kd, ref_dot, limit, wrap: bool = False):
    """The effort of a servo as a function of the joint coordinate and its rate, (s, ṡ) →
    clip(kp (ref − s) + kd (ref_dot − ṡ), ±limit); ref_dot defaults to ∂ref/∂t (inputs held).
    ``wrap``: the position error taken as atan2(sin, cos) of ref − s, in (−π, π] (an angle known
    only modulo 2π).  The gains' and limit's units are noted on ``params``."""
    ref, kp, kd = sp.sympify(ref), sp.sympify(kp), sp.sympify(kd)
    ref_dot = sp.diff(ref, t) if ref_dot is None else sp.sympify(ref_dot)
    unit, effort_unit = COORDINATE[kind][1], EFFORT_UNIT[kind]
    for value, u in ((kp, f"{effort_unit}/{unit}"), (kd, f"{effort_unit}·s/{unit}"),
                     (limit, effort_unit)):
        params.note(value, u)

    def law(s, s_dot):
        error = sp.atan2(sp.sin(ref - s), sp.cos(ref - s)) if wrap else ref - s
        return clip(kp * error + (kd * (ref_dot - s_dot) if kd != 0 else 0), limit)
    return law


def motor_law(params, kind, effort, limit):
    """The effort of a motor, (s, ṡ) → clip(effort, ±limit)."""
    params.note(limit, EFFORT_UNIT[kind])
    effort = clip(sp.sympify(effort), limit)
    return lambda s, s_dot: effort


class JointActuators:
    """The joint-coordinate and actuator part of :class:`~symgen.mechanics.planar.PlanarSystem`
    (which provides ``_params``, ``_powers``, ``_name`` and the empty ``_joint_coords``
    (name → (kind, s, ṡ)) and ``_actuators`` (name, kind, s, effort))."""

    def _joint_coordinate(self, name, kind, a, b, s) -> None:
        """Record joint ``name``'s coordinate s (an expression of body_a's and body_b's
        coordinates) and its rate."""
        coords = [c for body in (a, b) for c in body.coords if not body.is_ground]
        vels = [v for body in (a, b) for v in body.velocities if not body.is_ground]
        self._joint_coords[name] = (kind, s, time_rate(s, coords, vels))

    def _joint(self, joint, role):
        coords = self._joint_coords
        if joint not in coords:
            raise UnknownElementError(
                f"{self.name}: {role} acts on joint {joint!r}, which is not a revolute or "
                f"prismatic joint of this system; joints with a coordinate: {sorted(coords)}")
        return coords[joint]

    def servo(self, joint, ref, kp, kd=0, *, ref_dot=None, limit=None, name=None) -> str:
        """A position servo on a revolute or prismatic joint (by the name its builder returned):
        effort = clip(kp (ref − s) + kd (ref_dot − ṡ), ±limit), s the joint's coordinate.

        ref, ref_dot: expressions of t, inputs (``input``) and parameters; ref_dot defaults to
        ∂ref/∂t with the inputs held (give it when an input moves continuously).  kp, kd, limit:
        numbers or parameters; no limit: unclipped.  Returns the actuator's name."""
        kind, s, s_dot = self._joint(joint, "servo")
        name = self._name(name, f"servo({joint})")
        law = servo_law(self._params, kind, ref, kp, kd, ref_dot, limit)
        return self._actuate(name, kind, s, s_dot, law(s, s_dot))

    def motor(self, joint, effort, *, limit=None, name=None) -> str:
        """A motor on a revolute or prismatic joint: the given effort (torque or force along the
        axis; an expression of t, inputs, coordinates, velocities and parameters) clipped to
        ±limit.  Returns the actuator's name."""
        kind, s, s_dot = self._joint(joint, "motor")
        name = self._name(name, f"motor({joint})")
        law = motor_law(self._params, kind, effort, limit)
        return self._actuate(name, kind, s, s_dot, law(s, s_dot))

    def _actuate(self, name, kind, s, s_dot, effort) -> str:
        self._actuators.append((name, kind, s, effort))
        self._powers[name] = [effort * s_dot]
        return name

    def _actuator_forces(self, f, index) -> None:
        """Add each actuator's generalized force E ∂s/∂x to f (in place)."""
        for _, _, s, effort in self._actuators:
            for c in sorted(s.free_symbols & set(index), key=index.get):
                f[index[c]] += effort * sp.diff(s, c)

    def _joint_outputs(self, outputs: dict, units: dict, joints: bool) -> None:
        """Add the joint coordinates (with ``joints``) and the actuators' efforts to ``outputs``
        and their units to ``units``; a name taken already is an error."""
        new = {}
        if joints:
            for jname, (kind, s, s_dot) in self._joint_coords.items():
                word, unit, rate_unit = COORDINATE[kind]
                key = output_key(jname)
                new[f"{key}.{word}"], new[f"{key}.{word}_dot"] = (s, unit), (s_dot, rate_unit)
        for aname, kind, _, effort in self._actuators:
            new[f"{output_key(aname)}.effort"] = (effort, EFFORT_UNIT[kind])
        for key, (expr, unit) in new.items():
            if key in outputs:
                raise DuplicateNameError(
                    f"{self.name}: output {key!r} is defined twice (a joint coordinate or an "
                    "actuator's effort has that name): rename the output, or build with "
                    "model(joint_outputs=False) to leave the joint coordinates out")
            outputs[key] = expr
            units[key] = unit
