"""Assembling the model of a :class:`~symgen.mechanics.spatial.SpatialSystem`: each body's
independent directions, mass matrix M_z = [[m, m c̄ᵀ], [m c̄, J]] ⊗ I₃ scattered onto the natural
coordinates, its rigid-body constraint rows and weight; then forces, springs and outputs, and the
polylines of ``Model.drawing``.
"""
from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Mapping

import numpy as np
import sympy as sp

from ..symbols import Input
from . import _exact
from ._common import MechanismError, check_mass_properties, exact_numeric
from .spatial_joints import element_subs

__all__ = ["SpatialAssembly", "NeglectedInertiaWarning"]


class NeglectedInertiaWarning(UserWarning):
    """A body with fewer than three independent directions cannot carry all of its inertia."""


class SpatialAssembly:
    """The model of a :class:`SpatialSystem` being assembled: M, f, V, the constraint rows and
    their labels, filled body by body (:meth:`body`), then forces and springs, then outputs."""

    def __init__(self, mech, pvals, index, vels, n: int):
        self.mech, self.pvals, self.index, self.vels = mech, pvals, index, vels
        self.M = sp.zeros(n, n)
        self.f = [sp.S.Zero] * n
        self.V = sp.S.Zero
        self.has_V = False
        self.q, self.labels, self.seen = [], [], set()
        self.powers: dict[str, list] = {}     # non-conservative elements' power terms
        # for the joints' reactions (spatial_reactions): each body's rigid rows (row, {direction
        # key: ∂row/∂direction}) and the loads at its markers (body, where, F)
        self.rigid: dict[str, list] = {}
        self.loads: list = []

    def exact(self, e, what):
        """The exact value of an expression of parameters (mechanics._exact)."""
        return exact_numeric(e, self.pvals, what)

    def exact0(self, name) -> tuple:
        """An element's initial value, exactly."""
        el = self.mech._elements[self.mech._root(name)]
        return tuple(self.exact(v, f"{el.kind} {el.name!r}") for v in el.value0)

    def val0(self, name):
        """An element's initial value as doubles (correctly rounded)."""
        return np.array([float(v) for v in self.exact0(name)], float)

    def add_force(self, vec_expr_pos: sp.Matrix, F: sp.Matrix):
        # generalized force Jᵀ F with J = ∂r/∂x (r linear in x)
        f, index = self.f, self.index
        for comp in range(3):
            for s in vec_expr_pos[comp].free_symbols:
                j = index.get(s)
                if j is not None:
                    f[j] += sp.diff(vec_expr_pos[comp], s) * F[comp]

    def body(self, b) -> None:
        """One body: its independent directions (a basis from its points and vectors), its mass
        matrix, its rigid-body constraint rows and its weight."""
        mech = self.mech
        P = [mech._root(p) for p in b.points]
        U = [mech._root(u) for u in b.vectors]
        if len(set(P)) != len(P) or len(set(U)) != len(U):
            raise MechanismError(f"body {b.name!r}: two of its points/vectors were joined "
                                 "together")
        origin = mech._elements[P[0]]
        b.origin = origin.expr()
        b.origin0 = self.exact0(P[0])
        # directions: (key, expr, initial value exactly)
        dirs = [(("pp", P[0], p), mech._elements[p].expr() - b.origin,
                 _exact.sub(self.exact0(p), b.origin0)) for p in P[1:]]
        dirs += [(("u", u), mech._elements[u].expr(), self.exact0(u)) for u in U]
        basis, extra = [], []
        for d in dirs:
            # a decision with a generous tolerance: numpy's round-off does not matter
            trial = np.array([[float(v) for v in e[2]] for e in basis + [d]])
            if np.linalg.matrix_rank(trial, tol=1e-9 * max(1.0, np.abs(trial).max())) \
                    > len(basis) and len(basis) < 3:
                basis.append(d)
            else:
                extra.append(d)
        X0 = [d[2] for d in basis]                       # columns, exact
        pinv = _exact.pinv(X0) if basis else []          # X₀⁺ = (X₀ᵀX₀)⁻¹X₀ᵀ, exactly
        b.pinv, b.basis, b.basis0 = pinv, [d[1] for d in basis], X0

        def local(r0, what, b=b, X0=X0):
            """The local coordinates of r0 (exact), exactly; r0 must lie in the basis' span."""
            c = b.local(r0)
            off = _exact.sub(r0, b.origin0)
            back = tuple(sum((ck * d[i] for ck, d in zip(c, X0)), Fraction(0)) for i in range(3))
            if _exact.norm(_exact.sub(off, back)) > 1e-9 * (1 + _exact.norm(off)):
                raise MechanismError(
                    f"body {b.name!r}: {what} {tuple(float(v) for v in r0)} is off the span of "
                    "its points and vectors; add a unit vector (or a point) to the body")
            return c

        def body_pos(where, what, b=b, local=local):
            if isinstance(where, tuple) and where[0] == "point":
                return mech._elements[mech._root(where[1])].expr()
            r0 = tuple(self.exact(v, what) for v in where)
            return b.position(local(r0, what))

        b._body_pos, b._local, b.keys = body_pos, local, [d[0] for d in basis]
        cbar = self._mass(b, local, basis, pinv)
        self._rigid_rows(b, basis, extra, pinv)
        m = b.mass
        # gravity
        if mech._gravity is not None and m != 0:
            rg = b.position(cbar)
            self.add_force(rg, m * mech._gravity)
            self.V -= m * mech._gravity.dot(rg)
            self.has_V = True

    def _mass(self, b, local, basis, pinv):
        """Add the body's mass matrix to M (exact Rationals: :meth:`mass_matrix` rounds them);
        returns its centre of mass in the basis (c̄, exact)."""
        pvals, index, M = self.pvals, self.index, self.M
        # mass matrix  M_z = [[m, m c̄ᵀ], [m c̄, J]] ⊗ I₃
        check_mass_properties(self.mech.name, b.name, b.mass, b.inertia, pvals)
        m = _exact.rationalized(b.mass)
        g0 = tuple(self.exact(v, f"body {b.name!r}: com") for v in b.com)
        cbar = local(g0, "centre of mass")
        Ig = _exact.rationalized(b.inertia)
        Sg = sp.eye(3) * Ig.trace() / 2 - Ig
        dg = sp.Matrix([sp.Rational(v) for v in _exact.sub(g0, b.origin0)])
        S = Sg + m * dg * dg.T
        Pm = sp.Matrix(len(basis), 3, [sp.Rational(v) for row in pinv for v in row])
        J = Pm * S * Pm.T
        if len(basis) < 3:
            # the part of S outside the span of the directions is lost (a decision: numpy)
            Sn = np.array(S.xreplace(pvals), dtype=float) if S.free_symbols else \
                np.array(S, dtype=float)
            X0 = np.array([[float(v) for v in d] for d in b.basis0]).T.reshape(3, len(basis))
            proj = X0 @ np.array(Pm, dtype=float) if basis else np.zeros((3, 3))
            lost = np.trace(Sn) - np.trace(proj @ Sn @ proj.T)
            if lost > 1e-9 * max(np.trace(Sn), 1e-300):
                warnings.warn(
                    f"body {b.name!r} has {len(basis)} independent direction(s): the part "
                    f"{lost:.3g} of its second moment of mass off their span (e.g. the inertia "
                    "about a rod's own axis) is neglected; add a unit vector to keep it",
                    NeglectedInertiaWarning, stacklevel=4)
        z = [b.origin] + b.basis
        Mz = sp.zeros(len(z), len(z))
        Mz[0, 0] = m
        for a_ in range(len(basis)):
            Mz[0, a_ + 1] = Mz[a_ + 1, 0] = m * sp.Rational(cbar[a_])
            for b_ in range(len(basis)):
                Mz[a_ + 1, b_ + 1] = J[a_, b_]
        b.Mz, b.cbar = Mz, cbar
        # scatter: z_a = Σ_j ∂z_a/∂x_j x_j (+ const); M += Mz[a,b] ∂z_aᵀ ∂z_b
        Jz = []
        for za in z:
            rows = {}
            for comp in range(3):
                for s in za[comp].free_symbols:
                    if s in index:
                        rows[(comp, index[s])] = sp.diff(za[comp], s)
            Jz.append(rows)
        for a_ in range(len(z)):
            for b_ in range(len(z)):
                w = Mz[a_, b_]
                if w == 0:
                    continue
                for (ca, ja), va in Jz[a_].items():
                    for (cb, jb), vb in Jz[b_].items():
                        if ca == cb:
                            M[ja, jb] += w * va * vb
        return cbar

    def _rigid_rows(self, b, basis, extra, pinv) -> None:
        """The rigid-body constraints of the basis (rows shared by bodies kept once) and of the
        directions that depend on it."""
        index, q, labels, seen = self.index, self.q, self.labels, self.seen
        rigid = self.rigid.setdefault(b.name, [])
        # rigid-body constraints of the basis (shared rows kept once)
        for i_, (ka, da, d0a) in enumerate(basis):
            for kb, db, d0b in basis[i_:]:
                key = tuple(sorted([ka, kb]))
                if key in seen:
                    continue
                seen.add(key)
                row = da.dot(db)
                if not (row.free_symbols & set(index)):
                    continue
                c0 = _exact.dot(d0a, d0b)                 # exactly
                if ka == kb:
                    L = _exact.sqrt(c0)                     # correctly rounded
                    expr = (row - _exact.number(c0)) / sp.Float(2 * L, 17)
                    what = "length" if ka[0] == "pp" else "unit length"
                    grad = {ka: da / sp.Float(L, 17)}
                else:
                    # √(|d_a| |d_b|), correctly rounded: the 4th root of d_a·d_a d_b·d_b
                    sc = _exact._root(_exact.dot(d0a, d0a) * _exact.dot(d0b, d0b), 2)
                    expr = row - _exact.number(c0) if c0 != 0 else row
                    scale = sp.Float(sc, 17) if abs(sc - 1.0) > 1e-15 else 1
                    if abs(sc - 1.0) > 1e-15:
                        expr = expr / sp.Float(sc, 17)
                    what = "angle"
                    grad = {ka: db / scale, kb: da / scale}
                rigid.append((len(q), grad))
                q.append(expr)
                labels.append(f"body {b.name!r} ({what} {_dname(ka)}·{_dname(kb)})")
        for kw, dw, d0w in extra:
            a = _exact.matvec(pinv, d0w)                    # exactly
            res = dw - sum((_exact.number(a[k]) * basis[k][1] for k in range(len(basis))
                            if a[k] != 0), sp.zeros(3, 1))
            for comp in range(3):
                if res[comp].free_symbols & set(index):
                    e = sp.Matrix([int(i == comp) for i in range(3)])
                    grad = {kw: e}
                    for k in range(len(basis)):
                        if a[k] != 0:
                            grad[basis[k][0]] = -_exact.number(a[k]) * e
                    rigid.append((len(q), grad))
                    q.append(res[comp])
                    labels.append(f"body {b.name!r} (direction {_dname(kw)}, {'xyz'[comp]})")

    def mass_matrix(self) -> sp.Matrix:
        """M after every :meth:`body`: its exact Rationals as correctly rounded doubles."""
        return self.M.applyfunc(_exact.floated)

    def _rate(self, r: sp.Matrix) -> sp.Matrix:
        """ṙ of a position r linear in the coordinates."""
        index, vels = self.index, self.vels
        return sp.Matrix([sum((sp.diff(r[i], s) * vels[index[s]] for s in r[i].free_symbols
                               if s in index), sp.S.Zero) for i in range(3)])

    def forces_and_springs(self) -> None:
        """Applied forces and spring-dampers into f and V; the power of each force and damper
        (``powers``, for the outputs ``power:<element>``)."""
        mech, add_force = self.mech, self.add_force
        V, has_V = self.V, self.has_V
        subs = element_subs(mech)
        for fname, b, where, F in mech._forces:
            r, F = b._body_pos(where, fname), F.xreplace(subs)
            add_force(r, F)
            self.loads.append((b, where, F))
            self.powers[fname] = [F.dot(self._rate(r))]
        for sname, a, wa, b, wb, k, c, L0 in mech._springs:
            ra, rb = a._body_pos(wa, sname), b._body_pos(wb, sname)
            d = rb - ra
            dd = self._rate(d)
            if L0 == 0:
                Fb = -k * d - c * dd
                Vs = k * d.dot(d) / 2
                P = -c * dd.dot(dd)              # the damper's power (the spring's is −dV/dt)
            else:
                ell = sp.sqrt(d.dot(d))
                tension = k * (ell - L0) + c * d.dot(dd) / ell
                Fb = -tension * d / ell
                Vs = k * (ell - L0) ** 2 / 2
                P = -c * (d.dot(dd) / ell) ** 2
            if c != 0:
                self.powers[sname] = [P]
            add_force(rb, Fb)
            add_force(ra, -Fb)
            self.loads += [(b, wb, Fb), (a, wa, -Fb)]
            if k != 0 and not any(isinstance(s, Input) for s in Vs.free_symbols):
                V += Vs                 # (an input's energy is not the state's: not in V)
                has_V = True
        self.V, self.has_V = V, has_V

    def outputs(self, outputs) -> dict:
        """The declared outputs plus ``outputs`` (a mapping, or ``"<body>.<marker>"`` names); element
        symbols mapped onto the coordinates (:func:`~.spatial_joints.element_subs`)."""
        mech, index, vels = self.mech, self.index, self.vels
        outs, subs = {}, element_subs(mech)
        pending = dict(mech._outputs)
        if outputs is not None:
            if isinstance(outputs, Mapping):
                pending.update({k: sp.sympify(v) for k, v in outputs.items()})
            else:
                for item in outputs:
                    bname, _, mname = str(item).partition(".")
                    pending[str(item)] = ("point", mech._body(bname, "output"),
                                          mech._marker(mech._body(bname, "output"), mname,
                                                       "output"), True)
        for oname, spec in pending.items():
            if isinstance(spec, tuple):
                _, b, where, velocity = spec
                r = b._body_pos(where, f"output {oname!r}")
                for k, comp in zip("xyz", r):
                    outs[f"{oname}.{k}"] = comp
                if velocity:
                    for k, comp in zip(("vx", "vy", "vz"), r):
                        outs[f"{oname}.{k}"] = sum(
                            (sp.diff(comp, s) * vels[index[s]] for s in comp.free_symbols
                             if s in index), sp.S.Zero)
            else:
                outs[oname] = spec.xreplace(subs)
        return outs

    def drawing(self) -> list:
        """Polylines for ``Model.drawing`` (after every :meth:`body`): per body its basic points
        and markers (a closed polygon from three points on); a marker per fixed (ground) point
        that a body uses."""
        mech, lines, anchors = self.mech, [], []
        for b in mech.bodies.values():
            pts = []
            for p in b.points:
                el = mech._elements[mech._root(p)]
                pts.append((el.name, tuple(el.expr())))
                if el.fixed and el.name not in anchors:
                    anchors.append(el.name)
            for mname, pos in b.markers.items():
                r0 = tuple(self.exact(v, f"body {b.name!r}: marker {mname!r}") for v in pos)
                pts.append((f"{b.name}.{mname}", tuple(b.position(b.local(r0)))))
            if len(pts) >= 3:
                pts.append(pts[0])
            lines.append(pts)
        for a in anchors:
            lines.append([(a, tuple(mech._elements[a].expr()))])
        return lines


def _dname(key) -> str:
    return f"({key[2]}−{key[1]})" if key[0] == "pp" else key[1]
