"""The joint coordinates of a :class:`~symgen.mechanics.spatial.SpatialSystem` as outputs
(issue 35), as the planar builder's (:mod:`.planar_actuators`): a revolute joint's rotation
``<joint>.angle``, a prismatic joint's displacement ``<joint>.displacement``, a cylindrical
joint's both, each with its rate (``_dot``).

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

from . import _exact
from ._common import DuplicateNameError, MechanismError
from .planar_actuators import COORDINATE, output_key, time_rate
from .spatial_joints import GROUND, _across, _float, _point, direction

__all__ = ["joint_coordinate_outputs", "add_joint_outputs"]


def _body(asm, ref):
    mech = asm.mech
    return None if ref == GROUND and GROUND not in mech.bodies else mech._body(ref, "joint")


def _angle(asm, name, a, b, u, u0):
    """(φ − φ₀ wrapped, its rate) of body b relative to a (None: the ground) about u."""
    eb, eb0 = _across(asm, b, u0, name)
    if a is None:
        ea0 = eb0
        ea = sp.Matrix([_float(v) for v in ea0])
    else:
        ea, ea0 = _across(asm, a, u0, name)
    fa, fa0 = u.cross(ea), _exact.cross(u0, ea0)
    phi0 = _exact.atan2(_exact.dot(fa0, eb0), _exact.dot(ea0, eb0))
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


def joint_coordinate_outputs(asm, joints) -> tuple[dict, dict]:
    """(outputs, units) of the joints' coordinates; ``joints``: (kind, name, args) with args
    (a, point_a, vector_a, b) of a revolute, (a, point_a, b, point_b, axis) of a prismatic or
    cylindrical joint."""
    outs, units = {}, {}

    def add(name, kind, value, rate):
        word, unit, rate_unit = COORDINATE[kind]
        key = output_key(name)
        outs[f"{key}.{word}"], outs[f"{key}.{word}_dot"] = value, rate
        units[f"{key}.{word}"], units[f"{key}.{word}_dot"] = unit, rate_unit

    for kind, name, args in joints:
        if kind == "revolute":
            a, _, vector_a, b = args
            a, b = _body(asm, a), _body(asm, b)
            u, u0 = direction(asm, a, vector_a, name)
            try:
                if b is None:                           # the ground on side b: −(a about it)
                    add(name, "revolute", *(-v for v in _angle(asm, name, None, a, u, u0)))
                else:
                    add(name, "revolute", *_angle(asm, name, a, b, u, u0))
            except MechanismError:      # a body with no direction across the axis: no angle
                pass
            continue
        a, pa, b, pb, axis = args
        a, b = _body(asm, a), _body(asm, b)
        if kind == "cylindrical":
            u, u0 = direction(asm, a, axis, name)
            add(name, "revolute", *_angle(asm, name, a, b, u, u0))
        add(name, "prismatic", *_slide(asm, name, a, pa, b, pb, axis))
    return outs, units


def add_joint_outputs(system: str, asm, joints, outputs: dict) -> dict:
    """Add the joints' coordinate outputs to ``outputs`` (a name taken already is an error);
    returns their units."""
    outs, units = joint_coordinate_outputs(asm, joints)
    for key, expr in outs.items():
        if key in outputs:
            raise DuplicateNameError(
                f"{system}: output {key!r} is defined twice (a joint coordinate has that name): "
                "rename the output, or build with model(joint_outputs=False)")
        outputs[key] = expr
    return units
