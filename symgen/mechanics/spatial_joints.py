"""The constraint rows of a :class:`~symgen.mechanics.spatial.SpatialSystem`'s prismatic,
universal, cylindrical and planar joints, of its drives (a joint's rotation or slide prescribed as
a function of t: rheonomic rows) and of its custom rows (``constraint``), built after the bodies'
bases (:class:`~symgen.mechanics.spatial_assembly.SpatialAssembly`).

A body-fixed direction is linear in the natural coordinates: a unit vector of the body, or
X c (X the body's basis directions, c = X₀⁺ d₀ constant) for a direction d₀ given in global axes at
the initial configuration, which must lie in the span of the body's directions.  So every row here
is a polynomial of degree ≤ 2 (a drive's angle row: ≤ 3), scaled to unit-size gradients like the
rigid-body rows.

A drive's angle row: with e_a a unit direction of body a and e_b one of body b, both across the
joint's axis u (of a), and f_a = u × e_a, the rotation φ of b relative to a about u has
e_a·e_b = cos φ and f_a·e_b = sin φ; the row (f_a·e_b) cos(φ₀ + θ(t)) − (e_a·e_b) sin(φ₀ + θ(t)) =
sin(φ − φ₀ − θ(t)) prescribes φ = φ₀ + θ(t) (φ₀ its initial value: the angle θ is measured from
the initial configuration) with a unit gradient ∂row/∂φ = 1.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from ..model import VELOCITY_SUFFIX, t
from . import _exact
from ._common import MechanismError

__all__ = ["joint_rows", "element_subs", "element_symbols", "GROUND"]

#: The name that stands for the ground (fixed points and vectors) in a joint.
GROUND = "ground"


def _float(v) -> sp.Expr:
    """An exact value as it enters a row: its correctly rounded double (0 as 0)."""
    return _exact.number(v)


def _floats(d) -> tuple:
    return tuple(float(v) for v in d)


def direction(asm, body, spec, role: str):
    """(expression, initial value exactly) of a direction fixed in ``body`` (a SpatialBody or None
    for the ground): a unit vector's name or a global direction (triple) at the initial
    configuration, normalized (each component correctly rounded)."""
    mech = asm.mech
    if isinstance(spec, str):
        el = mech._element(spec, "vector", role)
        if body is None:
            if not el.fixed:
                raise MechanismError(f"joint {role!r}: {spec!r} is a moving vector, not one of the "
                                     "ground's")
        elif spec not in body.vectors:
            raise MechanismError(f"joint {role!r}: body {body.name!r} has no vector {spec!r}; its "
                                 f"vectors are {body.vectors}")
        root = mech._elements[mech._root(spec)]
        return root.expr(), asm.exact0(spec)
    d0 = tuple(asm.exact(v, f"joint {role!r}: axis") for v in spec)
    if len(d0) != 3 or not _exact.dot(d0, d0) > 0:
        raise MechanismError(f"joint {role!r}: an axis must be a non-zero triple, got {spec!r}")
    d0 = _exact.unit(d0)
    if body is None:
        return sp.Matrix([_float(v) for v in d0]), d0
    c = _exact.matvec(body.pinv, d0)                     # X₀⁺ d₀, exactly
    back = tuple(sum((ck * d[i] for ck, d in zip(c, body.basis0)), Fraction(0)) for i in range(3))
    if _exact.norm(_exact.sub(back, d0)) > 1e-9:
        raise MechanismError(
            f"joint {role!r}: the axis {tuple(np.round(_floats(d0), 12))} is off the span of body "
            f"{body.name!r}'s points and vectors; add a unit vector (or a point) to the body")
    expr = sp.zeros(3, 1)
    for ck, d in zip(c, body.basis):
        if abs(ck) > 1e-15:
            expr += _float(ck) * d
    return expr, d0


def _point(asm, body, name, role):
    mech = asm.mech
    el = mech._element(name, "point", role)
    if body is None and not el.fixed:
        raise MechanismError(f"joint {role!r}: {name!r} is a moving point, not one of the ground's")
    if body is not None and name not in body.points:
        raise MechanismError(f"joint {role!r}: body {body.name!r} has no point {name!r}; its "
                             f"points are {body.points}")
    return mech._elements[mech._root(name)].expr(), asm.val0(name)


def _perpendiculars(u0):
    """Two unit vectors completing u0 (exact) to an orthonormal frame, exactly as computed:
    n1 = u0 × e_k normalized (e_k the axis u0 has least of), n2 = u0 × n1."""
    k = min(range(3), key=lambda i: abs(u0[i]))
    e = tuple(Fraction(int(i == k)) for i in range(3))
    n1 = _exact.unit(_exact.cross(u0, e))
    return n1, _exact.cross(u0, n1)


def _on_line(asm, name, a, pa, b, pb, axis):
    """The two rows keeping point pb of body b on the line through point pa of a along the axis
    (a's): (rows, the axis and a's two directions across it as (expression, value), ra, rb)."""
    if b is None:
        raise MechanismError(f"joint {name!r}: the sliding side must be a body, not the ground")
    ra, ra0 = _point(asm, a, pa, name)
    rb, rb0 = _point(asm, b, pb, name)
    u, u0 = direction(asm, a, axis, name)
    off, uf = rb0 - ra0, np.array(_floats(u0))
    if np.linalg.norm(off - uf * (uf @ off)) > 1e-9 * (1 + np.linalg.norm(off)):
        raise MechanismError(
            f"joint {name!r}: point {pb!r} {tuple(rb0)} is off the axis {tuple(np.round(uf, 12))} "
            f"through {pa!r} {tuple(ra0)}; the joint's points lie on its axis")
    frame, rows = [(u, u0)], []
    for k, n0 in enumerate(_perpendiculars(u0)):
        n, n0 = direction(asm, a, n0, name)
        frame.append((n, n0))
        rows.append((f"line {k + 1}", n.dot(rb - ra)))
    return rows, frame, ra, rb


def _prismatic(asm, name, a, pa, b, pb, axis, drive=None):
    """Rows of a prismatic joint: point b stays on the line through point a along the axis (two
    rows), and b does not turn relative to a (up to three rows, those among e·d_b — e an axis of a's
    frame, d_b a direction of b — whose rotation gradients d_b × e are independent); with a drive,
    the displacement u·(r_b − r_a) = s(t)."""
    rows, frame, ra, rb = _on_line(asm, name, a, pa, b, pb, axis)
    grads = []
    for d, d0 in zip(b.basis, b.basis0):
        L = _exact.norm(d0)                                # correctly rounded
        for e, e0 in frame:
            # which rows to keep: a decision with generous tolerances (numpy)
            g = np.cross(np.array(_floats(d0)) / L, np.array(_floats(e0)))
            row = e.dot(d)
            if not (row.free_symbols & set(asm.index)) or np.linalg.norm(g) < 1e-9:
                continue
            if np.linalg.matrix_rank(np.array(grads + [g]), tol=1e-6) <= len(grads):
                continue
            grads.append(g)
            c0 = _exact.dot(e0, d0)
            expr = (row - _float(c0)) if abs(c0) > 1e-15 else row
            rows.append((f"rotation {len(grads)}", expr / sp.Float(L, 17) if abs(L - 1) > 1e-15
                         else expr))
    if drive is not None:
        rows.append(("drive", frame[0][0].dot(rb - ra) - drive))
    return rows


def _cylindrical(asm, name, a, pa, b, pb, axis, drive_angle=None, drive_slide=None):
    """Rows of a cylindrical joint: point b on the line through point a along the axis (two rows)
    and b's direction along the axis parallel to it (n_k·u_b = 0 for a's two directions n_k across
    it); with drives, the rotation about the axis and the slide along it."""
    rows, frame, ra, rb = _on_line(asm, name, a, pa, b, pb, axis)
    (u, u0), across = frame[0], frame[1:]
    ub, _ = direction(asm, b, u0, name)
    rows += [(f"axis {k + 1}", n.dot(ub)) for k, (n, _) in enumerate(across)]
    if drive_angle is not None:
        rows += _drive_angle(asm, name, a, b, u, u0, drive_angle)
    if drive_slide is not None:
        rows.append(("slide", u.dot(rb - ra) - drive_slide))
    return rows


def _planar(asm, name, a, pa, b, pb, normal):
    """Rows of a planar joint: point b stays in the plane through point a across a's normal n
    (n·(r_b − r_a) = 0) and b's direction along the normal stays parallel to it (e_k·n_b = 0 for
    a's two in-plane directions e_k): three rows, three degrees of freedom left."""
    if b is None:
        raise MechanismError(f"joint {name!r}: the moving side must be a body, not the ground")
    ra, ra0 = _point(asm, a, pa, name)
    rb, rb0 = _point(asm, b, pb, name)
    n, n0 = direction(asm, a, normal, name)
    off, nf = rb0 - ra0, np.array(_floats(n0))
    if abs(nf @ off) > 1e-9 * (1 + np.linalg.norm(off)):
        raise MechanismError(
            f"joint {name!r}: point {pb!r} {tuple(rb0)} is off the plane through {pa!r} "
            f"{tuple(ra0)} across {tuple(np.round(nf, 12))}; a planar joint's points lie in its "
            "plane")
    nb, _ = direction(asm, b, n0, name)
    rows = [("plane", n.dot(rb - ra))]
    for k, e0 in enumerate(_perpendiculars(n0)):
        e, _ = direction(asm, a, e0, name)
        rows.append((f"tilt {k + 1}", e.dot(nb)))
    return rows


def _across(asm, body, u0, role):
    """A unit direction of ``body`` across the axis u0: the part across u0 of the body's direction
    that has the largest one, normalized (in the body's span when u0 is); exact values."""
    parts = [_exact.sub(d, _exact.scale(_exact.dot(u0, d), u0)) for d in body.basis0]
    best = max(parts, key=_exact.norm, default=None)
    if best is None or _exact.norm(best) < 1e-9:
        raise MechanismError(f"joint {role!r}: body {body.name!r} has no direction across the "
                             "joint's axis to measure its rotation by; add a unit vector (or a "
                             "point) off the axis to the body")
    return direction(asm, body, best, role)


def rotation_frame(asm, name, a, b, u, u0):
    """(ea, fa, eb, φ₀) of the rotation of body b relative to a (None: the ground) about the axis
    u (a's; u0 at the start): ea, fa = u × ea across the axis on a, eb on b, so that
    sin φ = fa·eb and cos φ = ea·eb up to the common length, and φ₀ the initial angle."""
    eb, eb0 = _across(asm, b, u0, name)
    if a is None:
        ea0 = eb0
        ea = sp.Matrix([_float(v) for v in ea0])
    else:
        ea, ea0 = _across(asm, a, u0, name)
    fa, fa0 = u.cross(ea), _exact.cross(u0, ea0)
    return ea, fa, eb, _exact.atan2(_exact.dot(fa0, eb0), _exact.dot(ea0, eb0))


def _drive_angle(asm, name, a, b, u, u0, angle):
    """The row sin(φ − φ₀ − θ(t)) of a rotation drive (module docstring): the rotation of body b
    relative to a (None: the ground) about the axis u (a's), measured from the initial
    configuration."""
    ea, fa, eb, phi0 = rotation_frame(asm, name, a, b, u, u0)
    phi = sp.Float(phi0, 17) + angle
    return [("drive", fa.dot(eb) * sp.cos(phi) - ea.dot(eb) * sp.sin(phi))]


def _universal(asm, name, a, axis_a, b, axis_b):
    """The row of a universal joint's cross: the axes keep their initial angle (90° for the usual
    cross).  Its point is shared (merged) like a spherical joint's."""
    da, da0 = direction(asm, a, axis_a, name)
    db, db0 = direction(asm, b, axis_b, name)
    c0 = _exact.dot(da0, db0)
    if abs(c0) > 1 - 1e-6:
        raise MechanismError(f"joint {name!r}: its axes {tuple(np.round(_floats(da0), 12))} and "
                             f"{tuple(np.round(_floats(db0), 12))} are parallel; a universal "
                             "joint's two axes are the arms of its cross (perpendicular for the "
                             "usual cross)")
    return [("cross", da.dot(db) - _float(c0) if abs(c0) > 1e-15 else da.dot(db))]


def element_symbols(name: str) -> tuple[sp.Matrix, sp.Matrix]:
    """The symbols ``<name>.x``, ``.y``, ``.z`` of an element and those of their velocities."""
    return (sp.Matrix([sp.Symbol(f"{name}.{c}") for c in "xyz"]),
            sp.Matrix([sp.Symbol(f"{name}.{c}{VELOCITY_SUFFIX}") for c in "xyz"]))


def element_subs(mech) -> dict:
    """Every element's symbols (:func:`element_symbols`) → those of the element it was joined to
    (its root: the coordinates after the merge), or a fixed element's values and zero velocity."""
    subs = {}
    for el in mech._elements.values():
        root = mech._elements[mech._root(el.name)]
        xs, vs = element_symbols(el.name)
        for k in range(3):
            if root.fixed:
                subs[xs[k]], subs[vs[k]] = root.value0[k], sp.S.Zero
            elif root.syms:
                subs[xs[k]], subs[vs[k]] = root.syms[k], root.vsyms[k]
    return subs


def _custom(asm, name, expr):
    """A custom row in element symbols (:func:`element_subs`); anything else but parameters and t
    is an error."""
    row = sp.sympify(expr).xreplace(element_subs(asm.mech))
    stray = row.free_symbols - set(asm.index) - set(asm.pvals) - {t}
    if stray:
        raise MechanismError(f"constraint {name!r} depends on {sorted(map(str, stray))}, which are "
                             "not coordinates of bodies, parameters or t")
    if not (row.free_symbols & set(asm.index)):
        raise MechanismError(f"constraint {name!r} constrains no coordinate")
    return [("row", row)]


def joint_rows(asm, joints) -> None:
    """Append the rows of ``joints`` (``(kind, name, args)``) to the assembly's q and labels."""
    mech = asm.mech

    def body(ref):
        return None if ref == GROUND and GROUND not in mech.bodies else mech._body(ref, "joint")

    for kind, name, args in joints:
        if kind == "prismatic":
            a, pa, b, pb, axis, drive = args
            rows = _prismatic(asm, name, body(a), pa, body(b), pb, axis, drive)
        elif kind == "cylindrical":
            a, pa, b, pb, axis, drive_angle, drive_slide = args
            rows = _cylindrical(asm, name, body(a), pa, body(b), pb, axis, drive_angle,
                                drive_slide)
        elif kind == "planar":
            a, pa, b, pb, normal = args
            rows = _planar(asm, name, body(a), pa, body(b), pb, normal)
        elif kind == "revolute":
            a, axis, b, angle = args
            u, u0 = direction(asm, body(a), axis, name)
            rows = _drive_angle(asm, name, body(a), body(b), u, u0, angle)
        elif kind == "universal":
            a, axis_a, b, axis_b = args
            rows = _universal(asm, name, body(a), axis_a, body(b), axis_b)
        else:
            rows = _custom(asm, name, args[0])
        for tag, row in rows:
            asm.q.append(row)
            asm.labels.append(f"{name!r} ({tag})")
