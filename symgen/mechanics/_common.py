"""Helpers shared by the planar and spatial builders: errors, parameters, the initial-state check,
values deferred to assembly.

Every error is a :class:`symgen.ModelError` subclass and names the element at fault.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from ..derived import jacobian
from ..gauss_newton import Rows, solve, velocity_rows
from ..model import Model, ModelError, check_name, t
from . import _exact

__all__ = [
    "MechanismError", "UnknownElementError", "DuplicateNameError", "SingularMassError",
    "InconsistentInitialStateError", "InitialStateProjectionWarning", "check_initial_state",
    "check_reduced_mass", "check_mass_properties", "Parameters", "Deferred", "DeferredRow",
    "power_outputs", "builder_units", "POINT_UNITS",
    "assembled_start", "constraint_evaluator", "numeric_matrix", "row_names", "exact_numeric",
]


class MechanismError(ModelError):
    """A mechanism description that cannot become a model; the message names the element."""


class UnknownElementError(MechanismError, KeyError):
    """A joint or force names a body or point that does not exist."""

    def __str__(self):  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DuplicateNameError(MechanismError):
    """Two bodies, points, joints, forces, parameters or outputs share a name."""


class SingularMassError(MechanismError):
    """The reduced mass matrix N_Hᵀ M N_H is singular: some admissible motion has no inertia."""


class InconsistentInitialStateError(MechanismError):
    """The initial configuration violates the constraints by more than the allowed amount."""


class InitialStateProjectionWarning(UserWarning):
    """The initial state was moved onto the constraint manifold (the message says by how much)."""


class Parameters:
    """Named parameters (sympy Symbols) with numeric defaults, in declaration order."""

    def __init__(self, owner: str):
        self._owner = owner
        self.symbols: dict[str, sp.Symbol] = {}
        self.defaults: dict[str, float] = {}
        self._units: dict[str, str] = {}             # given with the declaration
        self._seen: dict[str, set] = {}              # from where a parameter is used (note)

    def note(self, expr, unit: str) -> None:
        """A parameter used as it is (a bare Symbol) where a quantity in ``unit`` belongs (a
        body's mass: kg) has that unit, unless its uses disagree or it was declared with one."""
        for e in (expr if isinstance(expr, (list, tuple, sp.MatrixBase)) else [expr]):
            if isinstance(e, sp.Symbol) and self.symbols.get(e.name) == e:
                self._seen.setdefault(e.name, set()).add(unit)

    def units(self) -> dict[str, str]:
        """Parameter name → unit: the declared one, else the one its uses agree on."""
        out = {k: next(iter(v)) for k, v in self._seen.items() if len(v) == 1}
        out.update(self._units)
        return {k: v for k, v in out.items() if v}

    def declare(self, name: str, default: float, unit: str | None = None) -> sp.Symbol:
        if name in self.symbols:
            raise DuplicateNameError(f"{self._owner}: parameter {name!r} is declared twice")
        try:
            val = float(default)
        except (TypeError, ValueError):
            raise MechanismError(f"{self._owner}: parameter {name!r} needs a numeric default, "
                                 f"got {default!r}") from None
        sym = sp.Symbol(name)
        self.symbols[name] = sym
        self.defaults[name] = val
        if unit is not None:
            self._units[name] = str(unit)
        return sym

    def values(self, overrides: Mapping | None = None) -> dict[sp.Symbol, float]:
        """Symbol → value, defaults updated by ``overrides`` (by name or Symbol)."""
        vals = {self.symbols[k]: v for k, v in self.defaults.items()}
        for key, val in (overrides or {}).items():
            name = key.name if isinstance(key, sp.Symbol) else str(key)
            if name not in self.symbols:
                raise UnknownElementError(
                    f"{self._owner}: no parameter {name!r}; declared: {list(self.symbols)}")
            vals[self.symbols[name]] = float(val)
        return vals


def claim_name(names: set, system: str, name: str | None, default: str) -> str:
    """Register an element name in ``names``: the given one (a duplicate is an error) or, when
    None, ``default`` made unique with ``#2``, ``#3`` …"""
    if name is None:
        name, k = default, 2
        while name in names:
            name, k = f"{default}#{k}", k + 1
    elif name in names:
        raise DuplicateNameError(f"{system}: an element named {name!r} already exists")
    else:
        check_name(name, "element")
    names.add(name)
    return name


def power_outputs(system: str, powers: Mapping, outputs: Mapping) -> dict:
    """The outputs ``power:<element>`` of the non-conservative elements (``powers``: element
    name → terms of its power), added to ``outputs``; an element name becomes an output name
    with '(' ',' ')' '#' as '.' and other signs as '_' (``torque(crank)`` → ``torque.crank``)."""
    outs = dict(outputs)
    for name, terms in powers.items():
        if not terms:
            continue
        key = re.sub(r"[(),#]+", ".", name)
        key = "power:" + re.sub(r"[^A-Za-z0-9_.]", "_", key).strip(".")
        if key in outs:
            raise DuplicateNameError(f"{system}: output {key!r} (the power of element {name!r}) "
                                     "is defined twice")
        outs[key] = sp.Add(*terms)
    return outs


#: The units of a point's outputs ``<point>.x`` … ``<point>.vz``.
POINT_UNITS = {"x": "m", "y": "m", "z": "m", "vx": "m/s", "vy": "m/s", "vz": "m/s"}


def builder_units(coords: Mapping, outputs: Mapping, output_units: Mapping, params: Parameters,
                  given: Mapping | None) -> dict:
    """A built model's units, name → unit: the coordinates', the outputs' (a ``power:`` output
    in W), the parameters' (:meth:`Parameters.units`), then those ``given`` to ``model()``."""
    units = dict(coords)
    units.update({k: v for k, v in output_units.items() if k in outputs})
    units.update({k: "W" for k in outputs if k.startswith("power:")})
    units.update(params.units())
    units.update(given or {})
    return units


def numeric(expr, subs: Mapping, what: str) -> float:
    """A number from an expression of parameters only (for initial values and default lengths)."""
    e = sp.sympify(expr)
    if subs:
        e = sp.sympify(e.xreplace({k: sp.Float(v) if isinstance(v, (int, float)) else v
                                   for k, v in subs.items()}))
    if e.free_symbols:
        raise MechanismError(f"{what} = {expr} depends on {sorted(map(str, e.free_symbols))}; "
                             "initial values may depend on declared parameters only")
    return float(e)


def exact_numeric(expr, subs: Mapping, what: str):
    """The exact value (a Fraction) of an expression of parameters only (:mod:`._exact`: the
    decimals of the numbers, exactly; a root or an angle to 30 digits)."""
    try:
        return _exact.exact_value(expr, subs)
    except _exact.NotANumber as exc:
        left = exc.args[0]
        if left:
            raise MechanismError(f"{what} = {expr} depends on {left}; initial values may depend "
                                 "on declared parameters only") from None
        raise MechanismError(f"{what} = {expr} is not a real number") from None


def check_mass_properties(system: str, body: str, mass, inertia, subs: Mapping) -> None:
    """Refuse a negative mass or an inertia (scalar, or 3×3 tensor: its eigenvalues) that is not
    positive semi-definite, evaluated with the parameter values ``subs``."""
    def value(e):
        e = sp.sympify(e).xreplace({k: sp.Float(v) for k, v in subs.items()})
        return None if e.free_symbols else float(e)     # x-dependent: Model checks it at x0

    m = value(mass)
    if m is not None and not m >= 0:
        raise MechanismError(f"{system}: body {body!r} has mass {mass} = {m:g}; a mass must be ≥ 0")
    if isinstance(inertia, sp.MatrixBase):
        vals = [value(e) for e in inertia]
        if None in vals:
            return
        tensor = np.array(vals, dtype=float).reshape(inertia.shape)
        w = np.linalg.eigvalsh(0.5 * (tensor + tensor.T))
        scale = max(float(np.max(np.abs(w))), 1e-300)
        if not np.all(np.isfinite(w)) or w[0] < -1e-12 * scale:
            raise MechanismError(f"{system}: body {body!r} has an inertia tensor with eigenvalue "
                                 f"{w[0]:.6g}; an inertia tensor must be positive semi-definite")
    else:
        inertia_value = value(inertia)
        if inertia_value is not None and not inertia_value >= 0:
            raise MechanismError(f"{system}: body {body!r} has inertia {inertia} = "
                                 f"{inertia_value:g}; an inertia must be ≥ 0")


def numeric_matrix(M: sp.MatrixBase, *substitutions: Mapping) -> np.ndarray:
    """M as floats after the ``substitutions`` in turn, entry by non-zero entry (numpy's
    conversion of a sympy matrix visits every zero: a second for the N four-bar's 243 × 243)."""
    out = np.zeros(M.shape)
    for (i, j), e in M.todok().items():
        for subs in substitutions:
            e = sp.sympify(e.xreplace(subs))
        out[i, j] = float(e)
    return out


def _null_space(H: np.ndarray, rank_tol: float) -> np.ndarray:
    n = H.shape[1]
    if H.shape[0] == 0:
        return np.eye(n)
    U, s, Vt = np.linalg.svd(H)
    if s.size == 0 or s[0] == 0.0:
        return np.eye(n)
    r = int(np.sum(s > rank_tol * s[0]))
    return Vt[r:].T


def row_names(labels) -> list[str]:
    """Constraint row names for :attr:`symgen.Model.constraint_names` from the builders' row
    labels: ``'pin1' (x)`` → ``pin1.x``, ``body 'rod' (direction ry, x)`` →
    ``rod.direction_ry.x`` (no commas or spaces: they name CSV columns); repeated names get
    ``#2``, ``#3``, …."""
    out, seen = [], {}
    for label in labels:
        m = re.fullmatch(r"(?:body )?'([^']*)' \((.*)\)", label)
        name = f"{m.group(1)}.{m.group(2)}" if m else label
        name = name.replace(", ", ".").replace(",", ".").replace(" ", "_")
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def assembled_start(name: str, coords, vels, M, f, q, labels, pvals: Mapping, outs: Mapping,
                    x0, xd0, fix: Mapping | None, xd_fix: Mapping | None):
    """(x0, ẋ0) assembled by :func:`symgen.assemble` from the placements x0, ẋ0 with the
    coordinates or outputs in ``fix``/``xd_fix`` held; errors name the joints (``labels``)."""
    from ..assembly import assemble

    draft = Model(name, coords, M, f, q=q, params=dict(pvals), outputs=outs, x0=x0, xd0=xd0,
                  velocities=vels)
    return assemble(draft, fix=fix, xd_fix=xd_fix, labels=labels)


#: numpy versions of the sympy functions the constraint evaluator knows; each is analytic where
#: it is real, so a complex step through it gives its derivative to round-off.
_NUMPY_FUNCS = {sp.sin: np.sin, sp.cos: np.cos, sp.tan: np.tan, sp.exp: np.exp, sp.log: np.log,
                sp.sinh: np.sinh, sp.cosh: np.cosh, sp.tanh: np.tanh, sp.asin: np.arcsin,
                sp.acos: np.arccos, sp.atan: np.arctan}
#: The complex step: h² vanishes beside any double, h times any derivative above 1e-200 is normal.
_STEP = 1e-100


def _evaluate(expr, env: Mapping, memo: dict):
    """The number (or numpy array) of an expression with its symbols' values from ``env``, by
    walking its tree (sums, products, powers and :data:`_NUMPY_FUNCS` with numpy); any other
    function is evaluated by sympy and needs real scalar arguments."""
    got = memo.get(expr)
    if got is not None:
        return got
    if expr.is_Symbol:
        val = env[expr]
    elif expr.is_Number or expr.is_NumberSymbol:
        val = np.float64(float(expr))
    elif expr.is_Add or expr.is_Mul:
        args = [_evaluate(a, env, memo) for a in expr.args]
        val = args[0]
        for a in args[1:]:
            val = val + a if expr.is_Add else val * a
    elif expr.is_Pow:
        base, ex = _evaluate(expr.base, env, memo), expr.exp
        if ex == sp.S.Half:
            val = np.sqrt(base)
        elif ex == -sp.S.Half:
            val = 1 / np.sqrt(base)
        else:
            val = base ** (int(ex) if ex.is_Integer else _evaluate(ex, env, memo))
    elif type(expr) in _NUMPY_FUNCS:
        val = _NUMPY_FUNCS[type(expr)](_evaluate(expr.args[0], env, memo))
    else:
        val = np.float64(float(expr.xreplace({s: sp.Float(float(env[s]))
                                              for s in expr.free_symbols})))
    memo[expr] = val
    return val


def _complex_steppable(expr, variables: set) -> bool:
    """Whether every part of ``expr`` that depends on ``variables`` is one :func:`_evaluate`
    computes with numpy (sums, products, powers, :data:`_NUMPY_FUNCS`): then it is analytic and a
    complex step differentiates it exactly (Abs, Piecewise, atan2, … are not)."""
    return all(a.is_Atom or a.is_Add or a.is_Mul or a.is_Pow or type(a) in _NUMPY_FUNCS
               or not (a.free_symbols & variables) for a in sp.preorder_traversal(expr))


def _colour_columns(rows: Sequence[np.ndarray], n: int) -> np.ndarray:
    """A colour per column such that the columns of each row (``rows[i]``: its column indices)
    all differ, greedily (Curtis, Powell and Reid): a complex step along the sum of one colour's
    columns then gives each of them separately in every row."""
    neighbours: list[set] = [set() for _ in range(n)]
    for js in rows:
        for j in js:
            neighbours[j].update(js)
    colour = np.full(n, -1)
    for j in range(n):
        used = {colour[k] for k in neighbours[j]}
        c = 0
        while c in used:
            c += 1
        colour[j] = c
    return colour


def constraint_evaluator(system: str, coords: Sequence[sp.Symbol], q: Sequence[sp.Expr],
                         row_labels: Sequence[str], params: Mapping[sp.Symbol, float]):
    """``ev(x) → (q, H, ∂q/∂t)`` at t = 0, numerically, without a symbolic Jacobian.

    q is evaluated in real arithmetic; H = ∂q/∂x (Eq. 27) and ∂q/∂t by the complex step: with
    x + ih e, Im q / h = (∂q/∂(x, t)) e to round-off (no difference is taken).  The seeds e are the
    colours of the columns (:func:`_colour_columns`): columns that share no row share a seed, so
    one vectorized pass of a few seeds gives every entry, whatever the number of coordinates.  A
    row with a non-analytic function of x or t (Abs, Piecewise, …) is differentiated symbolically
    instead.  A symbol that is not a coordinate, a parameter or t is an error naming the row.
    """
    n = len(coords)
    rows = [sp.sympify(e) for e in q]
    variables = list(coords) + [t]
    varset = set(variables)
    known = varset | set(params)
    for e, label in zip(rows, row_labels):
        stray = e.free_symbols - known
        if stray:
            raise MechanismError(
                f"{system}: constraint {label} depends on {sorted(map(str, stray))}, which are "
                "not coordinates, parameters or t")
    stepped = [i for i, e in enumerate(rows) if _complex_steppable(e, varset)]
    other = sorted(set(range(len(rows))) - set(stepped))
    column = {v: j for j, v in enumerate(variables)}
    cols = [np.array(sorted(column[v] for v in rows[i].free_symbols if v in column), dtype=int)
            for i in stepped]
    colour = _colour_columns(cols, n + 1)
    seeds = np.zeros((n + 1, int(colour.max()) + 1))
    seeds[np.arange(n + 1), colour] = 1.0
    # the rows the complex step cannot differentiate: their Jacobian entries, symbolically
    J = jacobian(sp.Matrix([rows[i] for i in other]), variables) if other else sp.zeros(0, n + 1)
    dJ = [(other[i], j, e) for (i, j), e in J.todok().items() if e != 0]
    pvals = {s: np.float64(v) for s, v in params.items()}

    def value(i, e, env, memo):
        try:
            return _evaluate(e, env, memo)
        except (TypeError, ValueError) as exc:
            raise MechanismError(f"{system}: constraint {row_labels[i]} cannot be evaluated "
                                 f"numerically: {exc}") from None

    def ev(x):
        xt = np.append(np.asarray(x, float), 0.0)                  # (x, t = 0)
        env = dict(pvals)
        env.update(zip(variables, xt))
        with np.errstate(all="ignore"):         # a NaN or inf is reported by the checks
            memo: dict = {}
            qv = np.array([value(i, e, env, memo) for i, e in enumerate(rows)], dtype=float)
            Ht = np.zeros((len(rows), n + 1))                      # [H | ∂q/∂t]
            for i, j, e in dJ:
                Ht[i, j] = value(i, e, env, memo)
            cenv = dict(pvals)
            cenv.update(zip(variables, xt[:, None] + 1j * _STEP * seeds))
            memo = {}
            for i, js in zip(stepped, cols):
                dq = np.broadcast_to(value(i, rows[i], cenv, memo), (seeds.shape[1],))
                Ht[i, js] = np.imag(dq[colour[js]]) / _STEP
        return qv.reshape(-1), Ht[:, :n], Ht[:, n].copy()

    return ev


def check_initial_state(
    system: str,
    coords: Sequence[sp.Symbol],
    q: Sequence[sp.Expr],
    row_labels: Sequence[str],
    params: Mapping[sp.Symbol, float],
    x0: np.ndarray,
    xd0: np.ndarray,
    *,
    accept_tol: float = 1e-10,
    max_violation: float = 1e-3,
    rank_tol: float = 1e-10,
):
    """Check x0, ẋ0 against q(x, 0) = 0 and q̇ = 0; project small violations, refuse large ones.

    Returns ``(x0, xd0, H0)``: the state, possibly projected, and H = ∂q/∂x there
    (:func:`constraint_evaluator`).
    A violation up to ``accept_tol`` is polished silently; up to ``max_violation`` it is projected
    (minimum-norm Gauss-Newton) with an :class:`InitialStateProjectionWarning` naming the worst
    constraint and the coordinate moved most; beyond it :class:`InconsistentInitialStateError`.
    Velocities are projected onto the tangent space with the same tolerances (relative to the
    largest velocity when that exceeds one).
    """
    x0 = np.array(x0, float)
    xd0 = np.array(xd0, float)
    n = len(coords)
    if not q:
        return x0, xd0, np.zeros((0, n))
    ev = constraint_evaluator(system, coords, q, row_labels, params)
    qv, Hv, qtv = ev(x0)
    worst = int(np.argmax(np.abs(qv)))
    viol = float(np.abs(qv[worst]))
    if not np.isfinite(viol):
        raise InconsistentInitialStateError(
            f"{system}: constraint {row_labels[worst]} is not finite at the initial configuration")
    if viol > max_violation:
        raise InconsistentInitialStateError(
            f"{system}: the initial configuration violates constraint {row_labels[worst]} by "
            f"{viol:.3g} (more than max_violation = {max_violation:g}); fix the initial "
            "positions, allow a larger projection, or assemble the start (symgen.assemble; the "
            "builders: place bodies with guess= and hold coordinates with model(fix=...))")
    rows = None
    if viol > 1e-15:
        # the projection: deterministic Gauss–Newton (symgen.gauss_newton: the same bits on every
        # machine, as the start is printed into the generated C)
        rows = Rows(q, coords, list(params) + [t])
        sol = solve(rows, x0, list(params.values()) + [0.0], tol=1e-14, max_iter=50,
                    rank_tol=rank_tol)
        if sol.residual > 1e-12:
            raise InconsistentInitialStateError(
                f"{system}: could not project the initial configuration onto the constraints "
                f"(worst residual {sol.residual:.3g} in "
                f"{row_labels[int(np.argmax(np.abs(sol.F)))]})")
        moved = sol.z - x0
        j = int(np.argmax(np.abs(moved)))
        if viol > accept_tol:
            warnings.warn(
                f"{system}: initial configuration violated constraint {row_labels[worst]} by "
                f"{viol:.3g}; projected it onto the constraints (largest change {moved[j]:.3g} "
                f"in {coords[j].name})", InitialStateProjectionWarning, stacklevel=3)
        x0 = sol.z
        qv, Hv, qtv = ev(x0)
    # velocities: q̇ = H ẋ + ∂q/∂t = 0
    qd = Hv @ xd0 + qtv
    worst = int(np.argmax(np.abs(qd)))
    vviol = float(np.abs(qd[worst]))
    scale = max(1.0, float(np.max(np.abs(xd0))) if xd0.size else 1.0)
    if vviol > max_violation * scale:
        raise InconsistentInitialStateError(
            f"{system}: the initial velocities violate the velocity constraint of "
            f"{row_labels[worst]} by {vviol:.3g} (more than max_violation = {max_violation:g})")
    if vviol > 1e-15 * scale:
        rows = rows or Rows(q, coords, list(params) + [t])
        vels = [sp.Dummy(f"{c.name}_dot") for c in coords]
        vrows = velocity_rows(rows, len(q), vels, list(coords) + list(params) + [t])
        sol = solve(vrows, xd0, list(x0) + list(params.values()) + [0.0], tol=1e-15,
                    max_iter=2, rank_tol=rank_tol)
        dv = sol.z - xd0
        if vviol > accept_tol * scale:
            j = int(np.argmax(np.abs(dv)))
            warnings.warn(
                f"{system}: initial velocities violated the velocity constraint of "
                f"{row_labels[worst]} by {vviol:.3g}; projected them onto the tangent space "
                f"(largest change {dv[j]:.3g} in {coords[j].name}_dot)",
                InitialStateProjectionWarning, stacklevel=3)
        xd0 = sol.z
    return x0, xd0, Hv


def check_reduced_mass(system: str, coords, M_num: np.ndarray, H0: np.ndarray, owners: Sequence[str],
                       rank_tol: float = 1e-10, mass_tol: float = 1e-12) -> None:
    """Raise :class:`SingularMassError` when N_Hᵀ M N_H is singular at the initial configuration.

    ``owners[i]`` names the element coordinate i belongs to (a body, a point, a vector).
    """
    N = _null_space(H0, rank_tol)
    if N.shape[1] == 0:
        return
    MR = N.T @ M_num @ N
    MR = 0.5 * (MR + MR.T)
    w, V = np.linalg.eigh(MR)
    scale = max(float(np.max(np.abs(np.diag(M_num)))) if M_num.size else 0.0, 1e-300)
    if w[0] > mass_tol * scale:
        return
    mode = N @ V[:, 0]
    order = np.argsort(-np.abs(mode))
    big = [i for i in order if abs(mode[i]) > 0.1 * abs(mode[order[0]])]
    names = [coords[i].name for i in big[:6]]
    elems = []
    for i in big:
        if owners[i] not in elems:
            elems.append(owners[i])
    raise SingularMassError(
        f"{system}: the reduced mass matrix N_Hᵀ M N_H is singular at the initial configuration "
        f"(smallest eigenvalue {w[0]:.3g}): a motion of {', '.join(elems[:4])} along "
        f"[{', '.join(names)}] is allowed by the joints but carries no mass or inertia. "
        "Give those bodies mass/inertia or constrain that motion.")


@dataclass
class Deferred:
    """A length or angle taken from the initial configuration when the model is assembled."""

    expr: sp.Expr
    element: str
    what: str

    def value(self, subs) -> sp.Expr:
        """The value at ``subs``, computed exactly from the decimals of the numbers
        (mechanics._exact: 0.35 − 0.2 is 0.15, a zero angle 0), correctly rounded."""
        return _exact.number(exact_numeric(self.expr, subs, f"{self.element}: {self.what}"))


@dataclass
class DeferredRow:
    """A constraint row made from a value known only at assembly (``make(arg)``)."""

    make: object
    arg: object

    def free_symbols(self) -> set:
        """The symbols the deferred initial value is computed from."""
        return set(self.arg.expr.free_symbols) if isinstance(self.arg, Deferred) else set()

    def resolve(self, subs) -> sp.Expr:
        a = self.arg.value(subs) if isinstance(self.arg, Deferred) else sp.sympify(self.arg)
        return self.make(a)
