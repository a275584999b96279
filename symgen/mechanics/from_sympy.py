"""Import a ``sympy.physics.mechanics`` description (``System``, ``KanesMethod``,
``LagrangesMethod``) as a :class:`symgen.Model`.

    model = symgen.mechanics.from_sympy(system, params={m: 1.0, l: 0.5, g: 9.81},
                                        outputs=[P], x0={q1: 0.3})

What becomes what:

- **coordinates**: the generalized coordinates q (all of them, independent and dependent); the
  dynamic symbol ``q1(t)`` becomes the coordinate Symbol ``q1`` and ``q1'(t)`` its velocity
  ``q1_dot`` (names that are not identifiers are made so: ``θ`` stays, ``q[1]`` → ``q_1_``);
- **M, f**: Lagrange's equations in q, i.e. M(q) q̈ = f(q, q̇, t) with the constraint forces
  left out (they are Hᵀλ, added by symgen).  With ``LagrangesMethod`` these are its mass matrix
  (the columns of q̈) and forcing.  With ``KanesMethod`` and ``System`` the equations are formed
  again by ``KanesMethod`` with every coordinate and speed taken as independent (Kane's
  constrained equations eliminate the dependent speeds; symgen wants the unreduced ones), giving
  M_u u̇ = F_u.  When the kinematic differential equations say u = q̇ these are M and f directly;
  otherwise they are **converted** through the kinematic differential equations,
  u = W(q) q̇ + w(q, t):
  u̇ = W q̈ + a(q, q̇, t) and (premultiplying by Wᵀ, the partial velocities of q̇)

      M = Wᵀ M_u W,     f = Wᵀ (F_u − M_u a)                                 (symmetric M)

  The model's ``description`` says which of the two was done;
- **q**: the holonomic constraints (a ``System``'s ``holonomic_constraints``, a
  ``LagrangesMethod``'s ``hol_coneqs``, a ``KanesMethod``'s configuration constraints), kept as
  constraints for the null-space method rather than eliminated.  Velocity constraints are accepted
  only where they are the time derivatives of these;
- **parameters**: every other free symbol; its value comes from ``params`` (a missing one is an
  error naming it).  ``params`` may also give a *specified input* (a dynamic symbol such as a
  force F(t) that is neither a coordinate nor a speed) a number or an expression of t;
- **outputs**: ``outputs`` may list Points (their position from ``origin`` in the inertial frame,
  ``<name>.x``, ``.y``, ``.z``; components that are identically zero are left out), or map names
  to Points, Vectors or scalar expressions.

Not importable (a :class:`symgen.ModelError` names it): nonholonomic constraints, auxiliary
speeds, specified inputs without a value, a different number of speeds than coordinates.
"""
from __future__ import annotations

import re
from typing import Mapping

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef

from ..model import Model, ModelError, VELOCITY_SUFFIX, t

__all__ = ["from_sympy"]

_IDENT = re.compile(r"[^0-9A-Za-z_]")


def _me():
    import sympy.physics.mechanics as me
    return me


def _ident(name: str) -> str:
    """A name usable as a coordinate/parameter (letters, digits, '_'; θ → theta)."""
    from sympy.printing.pretty.pretty_symbology import greek_unicode
    greek = {v: k for k, v in greek_unicode.items() if isinstance(v, str) and len(v) == 1}
    name = "".join(greek.get(ch, ch) for ch in name)
    name = _IDENT.sub("_", name)
    if not name or name[0].isdigit():
        name = "q_" + name
    return name


def _matrix(value) -> sp.Matrix:
    if value is None:
        return sp.Matrix()
    return sp.Matrix(value) if len(value) else sp.Matrix()


def _dyn(expr) -> set:
    """Every dynamic symbol f(t) in expr (not its derivatives)."""
    if isinstance(expr, sp.MatrixBase):
        out = set()
        for e in expr:
            out |= _dyn(e)
        return out
    return {a for a in sp.sympify(expr).atoms(AppliedUndef)}


# --------------------------------------------------------------------------------------------
def from_sympy(obj, params: Mapping | None = None, outputs=None, *, origin=None,
               x0=None, xd0=None, name: str = "sympy_model", settings: Mapping | None = None,
               V=None, description: str | None = None) -> Model:
    """A :class:`symgen.Model` from a ``System``, ``KanesMethod`` or ``LagrangesMethod``.

    params:
        values of the free symbols (Symbol or name → number) and of specified inputs
        (dynamic symbol or name → number or expression of t and parameters).
    outputs:
        Points (a list, named by the points' names, or a mapping name → Point), Vectors
        (components ``<name>.x|y|z`` in the inertial frame) or scalar expressions.
    origin:
        the Point positions are measured from (default: a System's fixed point).
    x0, xd0:
        initial coordinates and velocities: sequences in the order of the coordinates, or mappings
        from coordinate (dynamic symbol or name) to value; missing ones are 0.  With constraints,
        make them consistent with :func:`symgen.assemble`.
    V:
        optional potential energy (an expression in the dynamic symbols), for energy reports.
    """
    me = _me()
    if isinstance(obj, me.System):
        parts = _from_system(obj)
    elif isinstance(obj, me.KanesMethod):
        parts = _from_kane(obj)
    elif isinstance(obj, me.LagrangesMethod):
        parts = _from_lagrange(obj)
    else:
        raise ModelError(f"from_sympy needs a sympy.physics.mechanics System, KanesMethod or "
                         f"LagrangesMethod, got {type(obj).__name__}")
    qs, M, f, hol, frame, how = parts
    if origin is None and isinstance(obj, me.System):
        origin = obj.fixed_point
    params = dict(params or {})

    xs, vs, ren = _coordinates(qs)
    qmap = dict(zip(qs, xs))
    names = [x.name for x in xs]

    # specified inputs and parameters ------------------------------------------------------------
    by_name = {_key_name(k): v for k, v in params.items()}
    out_exprs = _outputs(outputs, frame, origin)
    exprs = [M, f, hol] + [e for _, e in out_exprs] + ([sp.sympify(V)] if V is not None else [])
    specified = set()
    for e in exprs:
        specified |= _dyn(e)
    specified -= set(qs)
    spec_subs = {}
    for s in sorted(specified, key=str):
        nm = s.func.__name__
        if nm not in by_name:
            raise ModelError(
                f"from_sympy: the specified input {s} is neither a coordinate nor a speed and has "
                f"no value: pass params={{{nm}: number or expression of t}}")
        spec_subs[s] = sp.sympify(by_name[nm])

    def conv(e):
        e = sp.sympify(e)
        if spec_subs:
            e = e.xreplace(spec_subs).doit() if any(e.has(s) for s in spec_subs) else e
        return e.xreplace(ren).xreplace(qmap)

    Mm = sp.Matrix(M.rows, M.cols, [conv(e) for e in M])
    fm = sp.Matrix([conv(e) for e in f])
    qm = [conv(e) for e in hol]
    outs = {k: conv(e) for k, e in out_exprs}
    Vx = conv(V) if V is not None else None

    free = set()
    for e in list(Mm) + list(fm) + qm + list(outs.values()) + ([Vx] if Vx is not None else []):
        free |= e.free_symbols
    free -= set(xs) | set(vs) | {t}
    left = sorted(_dyn(sp.Matrix(list(fm) + list(Mm) + qm)), key=str)
    if left:
        raise ModelError(f"from_sympy: the equations still contain {[str(a) for a in left]} "
                         "(derivatives of speeds or inputs that cannot be imported)")
    pvals, prename = _parameter_values(free, by_name)
    if prename:
        Mm, fm = Mm.xreplace(prename), fm.xreplace(prename)
        qm = [e.xreplace(prename) for e in qm]
        outs = {k: e.xreplace(prename) for k, e in outs.items()}
        Vx = Vx.xreplace(prename) if Vx is not None else None

    desc = description if description is not None else (
        f"Imported from sympy.physics.mechanics ({type(obj).__name__}): {how}.")
    return Model(name, xs, Mm, fm, q=qm or None, V=Vx, params=pvals, outputs=outs,
                 x0=_state(x0, names, "x0"), xd0=_state(xd0, names, "xd0"), settings=settings,
                 velocities=vs, description=desc)


def _coordinates(qs):
    """Coordinate and velocity Symbols for the dynamic symbols ``qs``; the map q̇(t) → velocity."""
    xs, vs, ren = [], [], {}
    for qi in qs:
        nm = _ident(qi.func.__name__)
        x, v = sp.Symbol(nm), sp.Symbol(nm + VELOCITY_SUFFIX)
        xs.append(x)
        vs.append(v)
        ren[qi.diff(t)] = v
    names = [x.name for x in xs]
    if len(set(names)) != len(names):
        raise ModelError(f"from_sympy: coordinate names {names} are not distinct after making "
                         "them identifiers")
    return xs, vs, ren


def _key_name(key) -> str:
    """The name of a ``params``/``x0`` key: a dynamic symbol, a Symbol or a string."""
    if isinstance(key, AppliedUndef):
        return key.func.__name__
    return key.name if isinstance(key, sp.Symbol) else str(key)


def _parameter_values(free, by_name: Mapping):
    """{parameter Symbol: value} for the ``free`` symbols (renamed to identifiers where needed),
    and the renaming {old: new}; a symbol without a value or with a non-number is an error."""
    pvals, prename = {}, {}
    for s in sorted(free, key=lambda s: s.name):
        if s.name not in by_name:
            raise ModelError(f"from_sympy: the symbol {s.name!r} has no value: pass "
                             f"params={{{s.name}: value}} (free symbols: "
                             f"{sorted(x.name for x in free)})")
        key = s
        if _ident(s.name) != s.name:
            key = sp.Symbol(_ident(s.name))
            prename[s] = key
        try:
            pvals[key] = float(by_name[s.name])
        except (TypeError, ValueError):
            raise ModelError(f"from_sympy: the value of {s.name!r} is not a number: "
                             f"{by_name[s.name]!r}") from None
    return pvals, prename


def _state(value, names, what):
    """x0 or xd0: a sequence in coordinate order, or a mapping coordinate → value (others 0)."""
    if value is None or not isinstance(value, Mapping):
        return value
    arr = np.zeros(len(names))
    for k, v in value.items():
        nm = _ident(_key_name(k))
        if nm not in names:
            raise ModelError(f"from_sympy: {what} names {_key_name(k)!r}, not a coordinate "
                             f"({names})")
        arr[names.index(nm)] = float(v)
    return arr


# --------------------------------------------------------------------------------------------
def _outputs(outputs, frame, origin):
    me = _me()
    if outputs is None:
        return []
    if isinstance(outputs, Mapping):
        items = list(outputs.items())
    else:
        items = []
        for p in outputs:
            if not isinstance(p, me.Point):
                raise ModelError(f"from_sympy: a list of outputs must hold Points, got {p!r}; "
                                 "name other outputs with a mapping")
            items.append((p.name, p))
    out = []
    for nm, val in items:
        if isinstance(val, me.Point):
            if origin is None:
                raise ModelError(f"from_sympy: output {nm!r} is a Point: give origin= (the "
                                 "point positions are measured from)")
            try:
                val = val.pos_from(origin)
            except ValueError as exc:
                raise ModelError(f"from_sympy: output {nm!r}: {exc}") from None
        if isinstance(val, me.Vector):
            comps = val.to_matrix(frame)
            for axis, c in zip("xyz", comps):
                if sp.simplify(c) != 0:
                    out.append((f"{nm}.{axis}", c))
        else:
            out.append((nm, sp.sympify(val)))
    return out


def _from_lagrange(lm):
    n = len(lm.q)
    if lm.eom is None:
        lm.form_lagranges_equations()
    hol = _matrix(lm._hol_coneqs)
    if len(lm.coneqs) > len(hol):
        extra = list(lm.coneqs)[len(hol):]
        raise ModelError(f"from_sympy: nonholonomic constraints cannot be imported: "
                         f"{[str(e) for e in extra]}")
    M = lm.mass_matrix[:, :n]
    f = lm.forcing
    return list(lm.q), M, f, hol, lm.inertial, "Lagrange's equations in q (mass matrix and forcing)"


def _from_system(system):
    me = _me()
    if len(system.u_aux):
        raise ModelError(f"from_sympy: auxiliary speeds {[str(u) for u in system.u_aux]} cannot "
                         "be imported")
    if len(system.nonholonomic_constraints):
        raise ModelError(f"from_sympy: nonholonomic constraints cannot be imported: "
                         f"{[str(e) for e in system.nonholonomic_constraints]}")
    loads = tuple(system.loads) + tuple(ld for act in system.actuators for ld in act.to_loads())
    km = me.KanesMethod(system.frame, q_ind=list(system.q), u_ind=list(system.u),
                        kd_eqs=list(system.kdes), bodies=list(system.bodies),
                        forcelist=list(loads) or None)
    vel = _matrix(system.velocity_constraints)
    return _kane_common(km, _matrix(system.holonomic_constraints), vel)


def _from_kane(kane):
    me = _me()
    if len(kane._uaux):
        raise ModelError(f"from_sympy: auxiliary speeds {[str(u) for u in kane._uaux]} cannot "
                         "be imported")
    if not kane.bodies:
        raise ModelError("from_sympy: the KanesMethod has no bodies (call kanes_equations(bodies, "
                         "loads) first or pass bodies= to it)")
    u, qd = sp.Matrix(kane.u), sp.Matrix(kane.q).diff(t)
    kdes = kane._k_ku_implicit * u + kane._k_kqdot_implicit * qd + kane._f_k_implicit
    km = me.KanesMethod(kane._inertial, q_ind=list(kane.q), u_ind=list(kane.u),
                        kd_eqs=list(kdes), bodies=list(kane.bodies),
                        forcelist=list(kane.loads) if kane.loads else None)
    vel = (kane._k_nh * u + kane._f_nh) if len(kane._f_nh) else sp.Matrix()
    return _kane_common(km, _matrix(kane._f_h), vel)


def _kane_common(km, hol, vel):
    """Unconstrained Kane equations M_u u̇ = F_u, converted to q (see the module docstring)."""
    qs, us = list(km.q), list(km.u)
    if len(us) != len(qs):
        raise ModelError(f"from_sympy: {len(us)} generalized speeds for {len(qs)} coordinates; "
                         "symgen needs one speed per coordinate")
    km.kanes_equations()
    Mu, Fu = km.mass_matrix, km.forcing
    qd = sp.Matrix(qs).diff(t)
    # u from the kinematic differential equations: K_u u + K_q̇ q̇ + f_k = 0
    Ku, Kq, fk = km._k_ku_implicit, km._k_kqdot_implicit, km._f_k_implicit
    U = -Ku.LUsolve(Kq * qd + fk)
    if vel.rows:
        _check_velocity_constraints(hol, vel, km.kindiffdict(), qs, us)
    identity = all(sp.simplify(U[i] - qd[i]) == 0 for i in range(len(qs)))
    if identity:
        sub = dict(zip(us, qd))
        M = Mu.xreplace(sub)
        f = Fu.xreplace(sub)
        how = "generalized speeds u = q̇, Kane's M_u, F_u taken directly"
    else:
        U = sp.Matrix([sp.simplify(e) for e in U])
        sub = dict(zip(us, U))
        qdd = qd.diff(t)
        Udot = U.diff(t)
        W = Udot.jacobian(qdd)
        a = Udot.xreplace(dict.fromkeys(qdd, 0))
        Mq = Mu.xreplace(sub)
        M = W.T * Mq * W
        f = W.T * (Fu.xreplace(sub) - Mq * a)
        how = ("generalized speeds u ≠ q̇: converted through the kinematic differential equations, "
               "u = W q̇ + w, M = Wᵀ M_u W, f = Wᵀ (F_u − M_u (u̇ − W q̈))")
    return qs, M, f, hol, km._inertial, how


def _check_velocity_constraints(hol, vel, qdot_u, qs, us):
    """Velocity constraints must be the time derivatives of the holonomic ones (checked at random
    points: the rows of [A_v | b_v] lie in the row space of [A_h | b_h])."""
    hd = hol.diff(t).xreplace(qdot_u) if hol.rows else sp.Matrix()
    vel = vel.xreplace(qdot_u)
    rng = np.random.default_rng(7)
    syms = set()
    for e in list(hd) + list(vel):
        syms |= e.free_symbols
    dyn = _dyn(sp.Matrix(list(hd) + list(vel)))
    for _ in range(2):
        vals = {s: float(rng.uniform(0.3, 1.3)) for s in syms}
        vals.update({d: float(rng.uniform(0.3, 1.3)) for d in dyn if d not in us})
        plain = {u: sp.Symbol(f"_u{i}") for i, u in enumerate(us)}

        def coeffs(rows):
            out = []
            for e in rows:
                e = e.xreplace(plain).xreplace({k: v for k, v in vals.items() if k not in us})
                e = e.xreplace(vals)
                row = [float(sp.diff(e, plain[u])) for u in us]
                row.append(float(e.xreplace(dict.fromkeys(plain.values(), 0))))
                out.append(row)
            return np.array(out, float).reshape(len(rows), len(us) + 1)

        A = coeffs(list(hd))
        B = coeffs(list(vel))
        r = np.linalg.matrix_rank(A, tol=1e-9) if A.size else 0
        if np.linalg.matrix_rank(np.vstack([A, B]) if A.size else B, tol=1e-9) > r:
            raise ModelError(
                "from_sympy: nonholonomic constraints cannot be imported: the velocity constraints "
                f"{[str(e) for e in vel]} are not the time derivatives of the holonomic ones "
                f"{[str(e) for e in hol]}")
