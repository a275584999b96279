"""The constraint rows of a :class:`~symgen.mechanics.spatial.SpatialSystem`'s prismatic and
universal joints and of its custom rows (``constraint``), built after the bodies' bases
(:class:`~symgen.mechanics.spatial_assembly.SpatialAssembly`).

A body-fixed direction is linear in the natural coordinates: a unit vector of the body, or
X c (X the body's basis directions, c = X₀⁺ d₀ constant) for a direction d₀ given in global axes at
the initial configuration, which must lie in the span of the body's directions.  So every row here
is a polynomial of degree ≤ 2, scaled to unit-size gradients like the rigid-body rows.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ..model import t
from ._common import MechanismError

__all__ = ["joint_rows", "GROUND"]

#: The name that stands for the ground (fixed points and vectors) in a joint.
GROUND = "ground"


def _float(v) -> sp.Float:
    return sp.Float(float(v), 17)


def direction(asm, body, spec, role: str):
    """(expression, initial value) of a direction fixed in ``body`` (a SpatialBody or None for the
    ground): a unit vector's name or a global direction (triple) at the initial configuration."""
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
        return root.expr(), asm.val0(spec)
    d0 = np.array([asm.num(v, f"joint {role!r}: axis") for v in spec], float)
    if d0.shape != (3,) or not np.linalg.norm(d0) > 0:
        raise MechanismError(f"joint {role!r}: an axis must be a non-zero triple, got {spec!r}")
    d0 = d0 / np.linalg.norm(d0)
    if body is None:
        return sp.Matrix([_float(v) for v in d0]), d0
    X0 = np.array(body.basis0).T.reshape(3, len(body.basis))
    c = body.pinv @ d0
    if np.linalg.norm(X0 @ c - d0) > 1e-9:
        raise MechanismError(
            f"joint {role!r}: the axis {tuple(np.round(d0, 12))} is off the span of body "
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
    """Two unit vectors completing u0 to an orthonormal frame."""
    k = int(np.argmin(np.abs(u0)))
    n1 = np.cross(u0, np.eye(3)[k])
    n1 /= np.linalg.norm(n1)
    return n1, np.cross(u0, n1)


def _prismatic(asm, name, a, pa, b, pb, axis):
    """Rows of a prismatic joint: point b stays on the line through point a along the axis (two
    rows), and b does not turn relative to a (up to three rows, those among e·d_b — e an axis of a's
    frame, d_b a direction of b — whose rotation gradients d_b × e are independent)."""
    if b is None:
        raise MechanismError(f"joint {name!r}: the sliding side must be a body, not the ground")
    rows = []
    ra, ra0 = _point(asm, a, pa, name)
    rb, rb0 = _point(asm, b, pb, name)
    u, u0 = direction(asm, a, axis, name)
    off = rb0 - ra0
    if np.linalg.norm(off - u0 * (u0 @ off)) > 1e-9 * (1 + np.linalg.norm(off)):
        raise MechanismError(
            f"joint {name!r}: point {pb!r} {tuple(rb0)} is off the axis {tuple(np.round(u0, 12))} "
            f"through {pa!r} {tuple(ra0)}; a prismatic joint's points lie on its axis")
    frame = [(u, u0)]
    for k, n0 in enumerate(_perpendiculars(u0)):
        n, n0 = direction(asm, a, tuple(n0), name)
        frame.append((n, n0))
        rows.append((f"line {k + 1}", n.dot(rb - ra)))
    grads = []
    for d, d0 in zip(b.basis, b.basis0):
        L = float(np.linalg.norm(d0))
        for e, e0 in frame:
            g = np.cross(d0 / L, e0)
            row = e.dot(d)
            if not (row.free_symbols & set(asm.index)) or np.linalg.norm(g) < 1e-9:
                continue
            if np.linalg.matrix_rank(np.array(grads + [g]), tol=1e-6) <= len(grads):
                continue
            grads.append(g)
            c0 = float(e0 @ d0)
            expr = (row - _float(c0)) if abs(c0) > 1e-15 else row
            rows.append((f"rotation {len(grads)}", expr / _float(L) if abs(L - 1) > 1e-15
                         else expr))
    return rows


def _universal(asm, name, a, axis_a, b, axis_b):
    """The row of a universal joint's cross: the axes keep their initial angle (90° for the usual
    cross).  Its point is shared (merged) like a spherical joint's."""
    da, da0 = direction(asm, a, axis_a, name)
    db, db0 = direction(asm, b, axis_b, name)
    c0 = float(da0 @ db0)
    if abs(c0) > 1 - 1e-6:
        raise MechanismError(f"joint {name!r}: its axes {tuple(np.round(da0, 12))} and "
                             f"{tuple(np.round(db0, 12))} are parallel; a universal joint's two "
                             "axes are the arms of its cross (perpendicular for the usual cross)")
    return [("cross", da.dot(db) - _float(c0) if abs(c0) > 1e-15 else da.dot(db))]


def _custom(asm, name, expr):
    """A custom row: element symbols ``<name>.x`` … mapped onto the merged (root) elements, fixed
    elements replaced by their values; anything else but parameters and t is an error."""
    mech, subs = asm.mech, {}
    for el in mech._elements.values():
        root = mech._elements[mech._root(el.name)]
        for k, s in enumerate(("x", "y", "z")):
            sym = sp.Symbol(f"{el.name}.{s}")
            subs[sym] = root.value0[k] if root.fixed else root.syms[k] if root.syms else sym
    row = sp.sympify(expr).xreplace(subs)
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
            a, pa, b, pb, axis = args
            rows = _prismatic(asm, name, body(a), pa, body(b), pb, axis)
        elif kind == "universal":
            a, axis_a, b, axis_b = args
            rows = _universal(asm, name, body(a), axis_a, body(b), axis_b)
        else:
            rows = _custom(asm, name, args[0])
        for tag, row in rows:
            asm.q.append(row)
            asm.labels.append(f"{name!r} ({tag})")
