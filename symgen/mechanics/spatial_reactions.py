"""The reactions of a :class:`~symgen.mechanics.spatial.SpatialSystem`'s named joints
(``Model.reactions``): the force and moment body a exerts on body b, global axes, the moment
about the joint's point, as expressions of x, ẋ, ẍ and λ (docs/reactions.md derives them).

Generalized forces on a body's elements (points P, unit vectors u) map to a resultant by virtual
work: a rigid virtual motion δP = δp + δφ × (P − A), δu = δφ × u gives
F = Σ Q_P and M_A = Σ (P − A) × Q_P + Σ u × Q_u.

- Rows of a joint (prismatic, cylindrical, planar, drives, a universal's cross): their force
  ∂q_i/∂x λ_i on body b's moving elements.
- A shared point or vector (spherical, revolute, universal; no rows: the bodies share
  coordinates): the force on body b there is what b's own equations leave over at the element,
  R_b = M_b ẍ_b − (gravity, loads, b's rigid-body rows, the joints' rows on b) — computed in b's
  generalized vector z = (P₀, d₁, d₂, d₃) and moved onto its elements (d = P_k − P₀ or u).
  When more bodies share the point, the bodies on b's side of the joint are summed.
"""
from __future__ import annotations

import re

import sympy as sp

from ..names import ACCELERATION_SUFFIX
from . import _exact

__all__ = ["joint_reactions", "COMPONENTS"]

#: A spatial joint's reaction components: force, then moment about the joint's point.
COMPONENTS = ("Fx", "Fy", "Fz", "Mx", "My", "Mz")
GROUND = "ground"


def _zero():
    return sp.zeros(3, 1)


def _add(forces: dict, elem: str, F) -> None:
    forces[elem] = forces.get(elem, _zero()) + F


def _on_direction(forces: dict, key, Q) -> None:
    """A generalized force Q on a direction key ((pp, P₀, P): P − P₀; (u, u)) onto elements."""
    if key[0] == "pp":
        _add(forces, key[2], Q)
        _add(forces, key[1], -Q)
    else:
        _add(forces, key[1], Q)


class _Reactions:
    def __init__(self, asm, m: int):
        self.asm, self.mech = asm, asm.mech
        self.lam = [sp.Symbol(f"lambda_{i}") for i in range(m)]
        self.joint_rows = self._joint_rows()

    def expr(self, root):
        return self.mech._elements[root].expr()

    def accel(self, root):
        el = self.mech._elements[root]
        if el.fixed:
            return _zero()
        return sp.Matrix([sp.Symbol(s.name + ACCELERATION_SUFFIX) for s in el.syms])

    def roots(self, body_name) -> set:
        if body_name == GROUND or body_name not in self.mech.bodies:
            return set()
        b = self.mech.bodies[body_name]
        return {self.mech._root(e) for e in b.points + b.vectors}

    def _joint_rows(self) -> dict:
        """joint name → its row indices (labels ``'<joint>' (<tag>)``)."""
        out = {}
        for i, label in enumerate(self.asm.labels):
            mt = re.fullmatch(r"'(.*)' \((.*)\)", label)
            if mt:
                out.setdefault(mt.group(1), []).append(i)
        return out

    def row_sides(self) -> dict:
        """joint name → (body a, body b) of the joints with rows (the custom rows have none)."""
        out = {}
        for kind, name, args in self.mech._rows:
            if kind in ("prismatic", "cylindrical", "planar"):
                out[name] = (args[0], args[2])
            elif kind in ("revolute", "universal"):
                out[name] = (args[0], args[2])
        return out

    def row_forces(self, name, body_name, exclude=()) -> dict:
        """The generalized force of joint ``name``'s rows on the moving elements of a body (those
        in ``exclude``, the other side's, left out)."""
        asm, forces = self.asm, {}
        for root in self.roots(body_name) - set(exclude):
            el = self.mech._elements[root]
            if el.fixed:
                continue
            for i in self.joint_rows.get(name, ()):
                g = sp.Matrix([sp.diff(asm.q[i], s) for s in el.syms])
                if any(v != 0 for v in g):
                    _add(forces, root, g * self.lam[i])
        return forces

    def residual(self, b, row_sides) -> dict:
        """R_b on b's elements (module docstring): the force the shared elements must carry."""
        mech, asm = self.mech, self.asm
        root = mech._root
        P0 = root(b.points[0])
        keys = [(k[0], *[root(e) for e in k[1:]]) for k in b.keys]
        z_acc = [self.accel(P0)]
        for k in keys:
            z_acc.append(self.accel(k[2]) - self.accel(k[1]) if k[0] == "pp" else self.accel(k[1]))
        R: dict = {}
        Mz = b.Mz.applyfunc(_exact.floated)
        for a_ in range(len(z_acc)):                        # inertia M_z z̈ on z
            Q = sum((Mz[a_, c] * z_acc[c] for c in range(len(z_acc)) if Mz[a_, c] != 0), _zero())
            if a_ == 0:
                _add(R, P0, Q)
            else:
                _on_direction(R, keys[a_ - 1], Q)
        loads = []
        if mech._gravity is not None and b.mass != 0:
            loads.append((tuple(b.cbar), b.mass * mech._gravity))
        for body, where, F in asm.loads:
            if body is b:
                if isinstance(where, tuple) and where[0] == "point":
                    _add(R, root(where[1]), -F)
                    continue
                r0 = tuple(asm.exact(v, f"body {b.name!r}") for v in where)
                loads.append((b._local(r0, "load"), F))
        for c, F in loads:                                   # F at P₀ + Σ c_k d_k
            _add(R, P0, -F)
            for ck, k in zip(c, keys):
                if abs(ck) > 1e-15:
                    _on_direction(R, k, -_exact.number(ck) * F)
        for i, grad in asm.rigid.get(b.name, ()):            # b's rigid-body rows
            for key, g in grad.items():
                _on_direction(R, (key[0], *[root(e) for e in key[1:]]), -g * self.lam[i])
        for name, (sa, sb) in row_sides.items():              # the joints' rows on b
            if b.name == sb:
                own = self.row_forces(name, sb)
            elif b.name == sa:
                own = self.row_forces(name, sa, exclude=self.roots(sb))
            else:
                continue
            for elem, Q in own.items():
                _add(R, elem, -Q)
        return R

    def wrench(self, forces: dict, at) -> tuple:
        """(F, M about ``at``) of generalized forces on elements (module docstring)."""
        F, M = _zero(), _zero()
        for root, Q in forces.items():
            el = self.mech._elements[root]
            if el.kind == "point":
                F += Q
                M += (el.expr() - at).cross(Q)
            else:
                M += el.expr().cross(Q)
        return F, M

    def shared(self, root, joint, b, residuals) -> sp.Matrix:
        """The force on the bodies on b's side of ``joint`` at the shared element ``root``."""
        edges = [(n, self.mech._sides[n]) for n, pts, vecs in self.mech._joints
                 if any(self.mech._root(e) == root for e in pts + vecs)]
        side = {b}
        grew = True
        while grew:
            grew = False
            for n, (a, b) in edges:
                if n != joint and (a in side) != (b in side):
                    side |= {a, b}
                    grew = True
        return sum((residuals(c).get(root, _zero()) for c in side if c in self.mech.bodies),
                   _zero())

    def build(self) -> dict:
        mech = self.mech
        row_sides = self.row_sides()
        cache: dict = {}

        def residuals(name):                 # R_b of the bodies a shared joint needs, once
            if name not in cache:
                cache[name] = self.residual(mech.bodies[name], row_sides)
            return cache[name]
        out = {}
        named = list(mech._sides) + [n for n in row_sides if n not in mech._sides]
        for name in named:
            a, b = mech._sides.get(name) or row_sides[name]
            sign = 1
            if b == GROUND or b not in mech.bodies:
                a, b, sign = b, a, -1
            shared = [(pts, vecs) for n, pts, vecs in mech._joints if n == name]
            if shared:
                at = self.expr(mech._root(shared[0][0][1]))
            else:
                kind, _, args = next(r for r in mech._rows if r[1] == name)
                at = self.expr(mech._root(args[3]))          # the point of body b
            F, M = _zero(), _zero()
            for pts, vecs in shared:
                Fp = self.shared(mech._root(pts[1]), name, b, residuals)
                F += Fp
                for v in vecs[1:]:
                    rv = mech._root(v)
                    M += self.expr(rv).cross(self.shared(rv, name, b, residuals))
            if name in row_sides:
                Fr, Mr = self.wrench(self.row_forces(name, b, exclude=self.roots(a)
                                                     if b == row_sides[name][0] else ()), at)
                F, M = F + Fr, M + Mr
            if sign < 0:
                F, M = -F, -M
            for comp, v in zip(COMPONENTS, [*F, *M]):
                out[f"{name}.{comp}"] = v
        return out


def joint_reactions(asm, m: int) -> dict:
    """``<joint>.Fx`` … ``.Mz`` of every named joint (spherical, revolute, universal, prismatic,
    cylindrical, planar; drives in their joint's): expressions of x, ẋ, ẍ, λ (``m`` rows)."""
    return _Reactions(asm, m).build()
