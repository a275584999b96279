"""The symbolic index-3 DAE that every later stage starts from.

    M(x) ẍ = f(x, ẋ, t) + Hᵀ(x, t) λ,        q(x, t) = 0                      (paper Eqs. 2-3)

A :class:`Model` holds n named coordinates x with their velocity symbols ẋ, the time symbol
:data:`t`, parameters with numeric defaults, M (n×n, symmetric), f (n), q (m ≥ 0), an optional
potential energy V(x, t), named outputs (scalars in x, ẋ, t), a default initial state and
recommended simulation settings.  It is validated once, when it is made, and is immutable.

Coordinates are plain sympy Symbols; the velocity of coordinate ``a`` is the Symbol ``a_dot``
(sympy prints it as ȧ).  :func:`coordinates` makes both.
"""
from __future__ import annotations

import hashlib
import json
import math
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from .names import (ACCELERATION_SUFFIX, MAX_MODEL_NAME, MAX_NAME, VELOCITY_SUFFIX,  # noqa: F401
                    ModelError, _check_allowed_name, _check_c_identifier, _check_not_reserved,
                    _check_output_name, c_name, check_model_name, check_name, refuse_text,
                    row_names)
from .model_drawing import normalize_drawing
from .model_checks import check_constants, check_mass_diagonal, check_symmetric
from .model_events import normalize_events
from .model_rows import names_for, reactions_for
from .symbols import (Input, collect_inputs, coordinate_symbols, coordinates,  # noqa: F401
                      multipliers, t)
from .settings import SimulationSettings
from .units import KeptUnits, normalize_units

__all__ = ["Model", "ModelError", "coordinates", "t", "VELOCITY_SUFFIX", "ACCELERATION_SUFFIX",
           "Input"]


#: Fields of :class:`~symgen.SimulationSettings` a model may recommend for :func:`symgen.simulate`.
SETTING_KEYS = ("method", "scheme", "dt", "t_end", "tol", "max_iter", "rank_tol", "chart",
                "metric", "preset")


def _as_column(value, what: str) -> sp.ImmutableMatrix:
    refuse_text(value, what)
    if value is None:
        return sp.ImmutableMatrix(0, 1, [])
    if isinstance(value, sp.MatrixBase):
        mat = sp.ImmutableMatrix(value)
        if mat.cols != 1 and mat.rows == 1:
            mat = mat.T
        if mat.cols != 1 and mat.rows * mat.cols != 0:
            raise ModelError(f"{what} must be a column vector, got shape {mat.shape}")
        if mat.rows * mat.cols == 0:
            return sp.ImmutableMatrix(0, 1, [])
        return mat
    try:
        items = list(value)
    except TypeError:
        items = [value]
    try:
        return sp.ImmutableMatrix(len(items), 1, [sp.sympify(v) for v in items])
    except (sp.SympifyError, TypeError) as exc:
        raise ModelError(f"{what} has an entry that is not a sympy expression: {exc}") from None


def _fingerprint(expr, memo: dict) -> str:
    """A stable text for an expression tree (class names, symbol names and assumptions, numbers);
    ten times faster than ``srepr`` and, unlike ``hash()``, the same in every process."""
    got = memo.get(expr)
    if got is not None:
        return got
    if isinstance(expr, sp.Symbol):
        assumptions = ",".join(f"{k}={v}" for k, v in sorted(expr.assumptions0.items()))
        out = f"{type(expr).__name__}[{expr.name}|{assumptions}]"
    elif isinstance(expr, sp.Float):
        out = f"Float[{expr._mpf_}]"            # exact, where str() rounds to 15 digits
    elif expr.is_Atom or not expr.args:
        out = f"{type(expr).__name__}[{expr}]"
    else:
        out = f"{type(expr).__name__}(" + ",".join(_fingerprint(a, memo) for a in expr.args) + ")"
    memo[expr] = out
    return out


def _matrix_repr(mat: sp.MatrixBase, memo: dict) -> list:
    """Shape and the fingerprints of the non-zero entries of a matrix."""
    entries = sorted([i, j, _fingerprint(v, memo)] for (i, j), v in mat.todok().items() if v != 0)
    return [list(mat.shape), entries]


def _frozen_array(values) -> np.ndarray:
    """A float array nobody can write to: its memory is an immutable bytes object, so even
    ``setflags(write=True)`` is refused."""
    return np.frombuffer(np.asarray(values, dtype=float).tobytes(), dtype=float)


def _free(expr) -> set:
    return set(expr.free_symbols) if hasattr(expr, "free_symbols") else set()


def _parameters(params) -> dict:
    """The model's parameters, Symbol → default, each name and value checked."""
    pdict: dict[sp.Symbol, float] = {}
    for key, value in (params or {}).items():
        sym = sp.Symbol(key) if isinstance(key, str) else key
        if not isinstance(sym, sp.Symbol):
            raise ModelError(f"parameter {key!r} is not a Symbol or a name")
        _check_c_identifier(sym.name, "parameter")
        _check_not_reserved(sym.name, "parameter")
        try:
            val = float(value)
        except (TypeError, ValueError):
            raise ModelError(f"parameter {sym.name!r} has a non-numeric default {value!r}") from None
        if not math.isfinite(val):
            raise ModelError(f"parameter {sym.name!r} has a non-finite default {val}")
        if sym in pdict:
            raise ModelError(f"parameter {sym.name!r} is given twice")
        pdict[sym] = val
    return pdict


class Model:
    """The symbolic DAE M(x) ẍ = f(x, ẋ, t) + Hᵀλ, q(x, t) = 0.

    Parameters
    ----------
    name:
        A C identifier; it prefixes every generated C function.
    coords:
        The n coordinates: sympy Symbols (as made by :func:`coordinates`) or names.
    M, f, q:
        Mass matrix (n×n, symmetric, depends on x and parameters), generalized forces (n; x, ẋ, t),
        constraints (m ≥ 0; x, t).  Nested lists or sympy matrices.  Here, in V, the outputs and
        the drawing an expression is built from symbols and numbers: a string is refused
        (SymPy's ``sympify`` would evaluate it as Python): parse text you trust with ``sp.parse_expr``.
    V:
        Optional potential energy V(x, t); the kinetic energy ½ ẋᵀMẋ follows from M.
    params:
        Mapping from parameter (Symbol or name) to its numeric default.  Order is kept: it is the
        order of the parameter array of the generated C.
    outputs:
        Mapping from name to a scalar expression in x, ẋ, t, recorded during simulation.  An
        output ``power:<element>`` declares the power of a force not in V (a motor, a damper):
        :func:`symgen.simulate` integrates it into the output ``work:<element>`` and the run
        summary prints the energy balance max ``|E − E(0) − ΣW|`` (docs/energy-balance.md).
    x0, xd0:
        Default initial coordinates and velocities (zeros when omitted).
    settings:
        Recommended simulation settings (keys from ``SETTING_KEYS``).
    velocities:
        The velocity symbols, when they are not the ``<coordinate>_dot`` Symbols.
    description:
        Free text, kept with the model (docstrings of generated files quote its first line).
    drawing:
        Optional drawing data for ``symgen animate`` / ``symgen plot --what mechanism``: polylines
        of named points.  Each polyline is a sequence of points; a point is either the name of an
        output point (the outputs ``<name>.x``, ``<name>.y`` and, in 3-D, ``<name>.z``) or a pair
        ``(name, (X, Y[, Z]))`` of expressions of x, t and parameters.  All points have the same
        dimension (2 or 3).  Stored as :attr:`drawing`, a tuple of polylines, each a tuple of
        ``(name, (X, Y[, Z]))``; a one-point polyline is a marker (a ground anchor).  The planar and
        spatial builders fill it.  It does not change the generated C, so it is not in :attr:`hash`.
    constraint_names:
        Optional names of the m constraint rows (the builders give ``<joint>.<component>``, e.g.
        ``pin1.x``); default ``q[0]``, ``q[1]``, …  Used by ``show``, assembly errors, the result's
        meta and CSV header and the reaction plots; not in :attr:`hash` (not in the C).
    units:
        Optional units (plain strings): name → unit for coordinates, velocities (default: the
        coordinate's unit per second), outputs and parameters, or {kind: {name: unit}}; stored
        as :attr:`units` by kind (``symgen.units``).  Labels for plots, ``show`` and result
        files; not in :attr:`hash`.
    inputs:
        Optional input symbols (names or Symbols) whose values arrive at run time; f and the
        outputs may use them.  The :class:`~symgen.symbols.Input` symbols of
        :func:`symgen.inputs` that f and the outputs use are collected without it (after the
        given ones, by name).  Their order is the order of the kernels' array ``u``.
    reactions:
        Optional joint reactions: name (``<joint>.<component>``, e.g. ``pin.Fx``) → an expression
        of t, x, ẋ, the accelerations ẍ (``<coordinate>_ddot``), the multipliers λ
        (:func:`~symgen.symbols.multipliers`), parameters and inputs.  The builders give the
        force and moment each named joint exerts (docs/reactions.md); the C kernel
        ``<name>_reactions`` computes them (``Result`` columns ``reaction:<name>``, main.c's CSV,
        the FMU's outputs); in :attr:`hash` when given.
    events:
        Optional events (docs/events.md): name → g, a scalar expression of t, x, ẋ, parameters and
        inputs, or {"expr": g, "direction": −1/0/+1, "terminal": bool} (SciPy's conventions);
        :func:`symgen.simulate` locates g's zeros (``Result.t_events``); in :attr:`hash` when given.
    """

    def __init__(
        self,
        name: str,
        coords: Sequence,
        M,
        f,
        q=None,
        V=None,
        params: Mapping | None = None,
        outputs: Mapping | None = None,
        x0: Sequence[float] | None = None,
        xd0: Sequence[float] | None = None,
        settings: Mapping | None = None,
        velocities: Sequence | None = None,
        description: str = "",
        drawing: Sequence | None = None,
        constraint_names: Sequence[str] | None = None,
        units: Mapping | None = None,
        inputs: Sequence | None = None,
        reactions: Mapping | None = None,
        events: Mapping | None = None,
    ):
        """Long on purpose: every check of the model runs here, once, in the order the fields
        are given (the class docstring lists them), so that a Model that exists is valid."""
        check_model_name(name)
        self.name = name
        self.description = description

        # coordinates and velocities -------------------------------------------------------------
        xs, vs = coordinate_symbols(coords, velocities)
        n = len(xs)
        if n == 0:
            raise ModelError("a model needs at least one coordinate")
        self.coords: tuple[sp.Symbol, ...] = xs
        self.velocities: tuple[sp.Symbol, ...] = vs
        self.accelerations: tuple[sp.Symbol, ...] = tuple(
            sp.Symbol(c.name + ACCELERATION_SUFFIX) for c in xs)
        names = [c.name for c in xs]
        for c in names:
            _check_not_reserved(c, "coordinate")
        self._check_unique(names + [v.name for v in vs], "coordinate/velocity")
        self._check_unique([c_name(s) for s in names], "coordinate (after '.' → '_')")

        # parameters -----------------------------------------------------------------------------
        pdict = _parameters(params)
        self.params: Mapping[sp.Symbol, float] = MappingProxyType(pdict)
        clash = set(pdict) & (set(xs) | set(vs) | {t})
        if clash:
            raise ModelError(f"parameter(s) {sorted(s.name for s in clash)} also used as coordinate, "
                             "velocity or time")

        # matrices (no strings: sympify would run them as Python) -------------------------------
        refuse_text(M, "M")
        try:
            # a sympy matrix keeps its (sparse) representation: no pass over its n² entries
            Mm = (M.as_immutable() if isinstance(M, sp.matrices.dense.DenseMatrix)
                  else sp.ImmutableMatrix(M))
        except (TypeError, ValueError, sp.SympifyError) as exc:
            raise ModelError(f"M is not a matrix: {exc}") from None
        if Mm.shape != (n, n):
            raise ModelError(f"M has shape {Mm.shape}; expected ({n}, {n}) for {n} coordinates")
        fm = _as_column(f, "f")
        if fm.shape != (n, 1):
            raise ModelError(f"f has {fm.rows} entries; expected {n} (one per coordinate)")
        qm = _as_column(q, "q")
        self.M, self.f, self.q = Mm, fm, qm
        refuse_text(V, "V")
        self.V = sp.sympify(V) if V is not None else None

        # outputs --------------------------------------------------------------------------------
        odict: dict[str, sp.Expr] = {}
        for oname, expr in (outputs or {}).items():
            _check_output_name(oname)
            refuse_text(expr, f"output {oname!r}")
            try:
                odict[oname] = sp.sympify(expr)
            except sp.SympifyError as exc:
                raise ModelError(f"output {oname!r} is not a sympy expression: {exc}") from None
            if isinstance(odict[oname], sp.MatrixBase):
                raise ModelError(f"output {oname!r} must be a scalar expression")
        self._check_unique([c_name(s) for s in odict], "output (after '.' → '_')")
        self.outputs: Mapping[str, sp.Expr] = MappingProxyType(odict)
        self.events: Mapping = MappingProxyType(normalize_events(events))
        self.inputs: tuple = collect_inputs(inputs, [*fm, *odict.values(),
                                                     *(e.expr for e in self.events.values())])
        clash = {u.name for u in self.inputs} & {s.name for s in (*xs, *vs, *pdict, t)}
        if clash:
            raise ModelError(f"input(s) {sorted(clash)} also used as coordinate, velocity, "
                             "parameter or time")

        self._validate_symbols()
        check_constants(self)
        check_symmetric(self)

        # initial state and settings --------------------------------------------------------------
        self.x0 = self._state(x0, "x0")
        self.xd0 = self._state(xd0, "xd0")
        st = dict(settings or {})
        unknown = sorted(set(st) - set(SETTING_KEYS))
        if unknown:
            raise ModelError(f"unknown setting(s) {unknown}; known: {list(SETTING_KEYS)}")
        try:
            SimulationSettings.merged(st)                  # the values, checked in one place
        except ValueError as exc:
            raise ModelError(f"model {name!r}: bad recommended setting: {exc}") from None
        self.settings: Mapping = MappingProxyType(st)
        check_mass_diagonal(self)
        self.drawing: tuple = normalize_drawing(drawing, odict, set(xs) | set(pdict) | {t})
        self.constraint_names: tuple = row_names(constraint_names, len(qm))
        self.units: Mapping = normalize_units(units, {
            "coords": names, "velocities": [v.name for v in vs], "outputs": list(odict),
            "params": [p.name for p in pdict]})
        self.reactions: Mapping[str, sp.Expr] = MappingProxyType(self._reactions(reactions))
        self._hash: str | None = None
        self._frozen = True

    # ------------------------------------------------------------------------------------------
    # Read-only: the content hash is memoized and keys the build cache, so a model changed after
    # its hash was read would file new C under the old hash (use ``replace``).
    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"Model {self.name!r} is immutable: cannot set {name!r} "
                                 "(make a changed copy with model.replace(...))")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        raise AttributeError(f"Model {self.name!r} is immutable: cannot delete {name!r}")

    # ------------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.coords)

    @property
    def m(self) -> int:
        return self.q.rows

    @property
    def coord_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.coords)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def param_values(self) -> np.ndarray:
        return _frozen_array(list(self.params.values()))

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(self.outputs)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(u.name for u in self.inputs)

    def coord(self, name: str) -> sp.Symbol:
        """The coordinate Symbol with that name."""
        for c in self.coords:
            if c.name == name:
                return c
        raise KeyError(f"model {self.name!r} has no coordinate {name!r}")

    def param(self, name: str) -> sp.Symbol:
        """The parameter Symbol with that name."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"model {self.name!r} has no parameter {name!r}; it has {list(self.param_names)}")

    def replace(self, **changes) -> "Model":
        """A new model with some constructor arguments changed (the original stays as it is)."""
        args = self._args()
        for key, value in changes.items():
            if key not in args:
                raise TypeError(f"Model.replace() got an unknown argument {key!r}")
            args[key] = value
        if "q" in changes:          # the rows' names and the reactions' λ follow the rows
            rows = list(_as_column(changes["q"], "q"))
            if "constraint_names" not in changes:
                args["constraint_names"] = names_for(self, rows)
            if "reactions" not in changes:
                args["reactions"] = reactions_for(self, rows)
        return Model(**args)

    def _args(self) -> dict:
        """The constructor arguments that make this model again."""
        return dict(
            name=self.name, coords=self.coords, M=self.M, f=self.f, q=self.q, V=self.V,
            params=dict(self.params), outputs=dict(self.outputs), x0=self.x0, xd0=self.xd0,
            settings=dict(self.settings), velocities=self.velocities, description=self.description,
            drawing=self.drawing, constraint_names=self.constraint_names, inputs=self.inputs,
            units=KeptUnits({k: dict(v) for k, v in self.units.items()}),
            reactions=dict(self.reactions), events=dict(self.events),
        )

    def __reduce__(self):
        """Pickle as the constructor arguments (the read-only mappings cannot be pickled
        directly); unpickling validates again.  This is how ``symgen.sweep`` ships a model to
        Dask workers."""
        return (_rebuild, (self._args(),))

    @property
    def hash(self) -> str:
        """A hex SHA-256 of the model's symbolic content (names, expressions, defaults)."""
        if self._hash is None:
            memo: dict = {}
            fp = lambda e: _fingerprint(sp.sympify(e), memo)  # noqa: E731
            payload = {
                "name": self.name,
                "coords": [fp(c) for c in self.coords],
                "velocities": [fp(v) for v in self.velocities],
                "params": [[fp(k), repr(v)] for k, v in self.params.items()],
                "M": _matrix_repr(self.M, memo),
                "f": _matrix_repr(self.f, memo),
                "q": _matrix_repr(self.q, memo),
                "V": fp(self.V) if self.V is not None else None,
                "outputs": [[k, fp(v)] for k, v in self.outputs.items()],
            }
            if self.inputs:             # (absent otherwise: the hash of a model without stays)
                payload["inputs"] = [fp(u) for u in self.inputs]
            if self.reactions:          # (the same: the C computes them, docs/reactions.md)
                payload["reactions"] = [[k, fp(v)] for k, v in self.reactions.items()]
            if self.events:             # (the same: the C computes g)
                payload["events"] = [[k, fp(e.expr), e.direction, e.terminal]
                                     + ([] if e.restitution is None else [repr(e.restitution)])
                                     + ([] if e.rest_speed is None else [repr(e.rest_speed)])
                                     for k, e in self.events.items()]
            blob = json.dumps(payload, sort_keys=True).encode()
            object.__setattr__(self, "_hash", hashlib.sha256(blob).hexdigest())
        return self._hash

    def __repr__(self) -> str:
        return (f"Model({self.name!r}, n={self.n}, m={self.m}, params={list(self.param_names)}, "
                f"outputs={list(self.output_names)})")

    # ------------------------------------------------------------------------------------------
    @staticmethod
    def _check_unique(names: list[str], what: str) -> None:
        seen, dup = set(), []
        for s in names:
            if s in seen:
                dup.append(s)
            seen.add(s)
        if dup:
            raise ModelError(f"duplicated {what} name(s): {sorted(set(dup))}")

    def _state(self, value, what: str) -> np.ndarray:
        if value is None:
            return _frozen_array(np.zeros(self.n))
        try:
            arr = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise ModelError(f"{what} must be {self.n} numbers, got {value!r}") from None
        if arr.shape != (self.n,):
            raise ModelError(f"{what} has shape {arr.shape}; expected ({self.n},) for coordinates "
                             f"{list(self.coord_names)}")
        if not np.all(np.isfinite(arr)):
            raise ModelError(f"{what} has non-finite entries: {arr}")
        return _frozen_array(arr)

    def _expressions(self):
        """(label, expression) of every entry of M, f, q, V and the outputs."""
        for what, mat in (("M", self.M), ("f", self.f), ("q", self.q)):
            for (i, j), e in mat.todok().items():
                yield (f"{what}[{i},{j}]" if what == "M" else f"{what}[{i}]"), e
        if self.V is not None:
            yield "V", self.V
        for oname, e in self.outputs.items():
            yield f"output {oname!r}", e
        for ename, ev in self.events.items():
            yield f"event {ename!r}", ev.expr

    def _reactions(self, reactions) -> dict:
        """The joint reactions checked: names, scalar expressions of t, x, ẋ, ẍ, λ, parameters
        and inputs."""
        out: dict[str, sp.Expr] = {}
        allowed = (set(self.coords) | set(self.velocities) | set(self.accelerations)
                   | set(multipliers(self.m)) | set(self.params) | set(self.inputs) | {t})
        for rname, expr in (reactions or {}).items():
            check_name(rname, "reaction")
            refuse_text(expr, f"reaction {rname!r}")
            try:
                e = sp.sympify(expr)
            except sp.SympifyError as exc:
                raise ModelError(f"reaction {rname!r} is not a sympy expression: {exc}") from None
            if isinstance(e, sp.MatrixBase):
                raise ModelError(f"reaction {rname!r} must be a scalar expression")
            unknown = _free(e) - allowed
            if unknown:
                raise ModelError(f"reaction {rname!r} has free symbols "
                                 f"{sorted(s.name for s in unknown)} that are not t, coordinates, "
                                 "velocities, accelerations, multipliers lambda_i (i < m), "
                                 "parameters or inputs")
            out[rname] = e
        return out

    def _validate_symbols(self) -> None:
        xs, vs = set(self.coords), set(self.velocities)
        ps, us = set(self.params), set(self.inputs)
        accel_names = {a.name for a in self.accelerations}
        groups = [
            ("M", self.M, xs | ps | {t}),
            ("f", self.f, xs | vs | ps | us | {t}),
            ("q", self.q, xs | ps | {t}),
        ]
        if self.V is not None:
            groups.append(("V", self.V, xs | ps | {t}))
        for oname, expr in self.outputs.items():
            groups.append((f"output {oname!r}", expr, xs | vs | ps | us | {t}))
        for ename, ev in self.events.items():
            groups.append((f"event {ename!r}" + (" (an impact's gap g(x, p))"
                                                if ev.restitution is not None else ""), ev.expr,
                           xs | vs | ps | us | {t} if ev.restitution is None else xs | ps))
        for what, expr, allowed in groups:
            derivs = expr.atoms(sp.Derivative)
            funcs = {a for a in expr.atoms(sp.core.function.AppliedUndef)}
            if derivs or funcs:
                bad = sorted(str(a) for a in (derivs | funcs))
                raise ModelError(
                    f"{what} contains undefined functions or derivatives {bad}; write coordinates as "
                    "Symbols (symgen.coordinates) and velocities as their '_dot' Symbols"
                )
            bad = sorted({str(a) for a in expr.atoms()
                          if a in (sp.I, sp.oo, -sp.oo, sp.zoo, sp.nan)})
            if bad:
                raise ModelError(f"{what} contains {bad}: imaginary, infinite or undefined constants "
                                 "cannot be simulated (check divisions by zero)")
            free = _free(expr)
            acc = sorted(s.name for s in free if s.name in accel_names)
            if acc:
                raise ModelError(f"{what} depends on accelerations {acc}; M, f, q, V and outputs may "
                                 "depend on x, ẋ, t and parameters only")
            unknown = free - allowed
            if unknown:
                names = sorted(s.name for s in unknown)
                hint = ""
                if unknown & vs:
                    hint = f" (velocities are not allowed in {what})"
                elif unknown & xs:
                    hint = f" (coordinates are not allowed in {what})"
                elif unknown & us or any(isinstance(s, Input) for s in unknown):
                    hint = f" (inputs may enter f and the outputs only, not {what})"
                raise ModelError(
                    f"{what} has free symbols {names} that are not coordinates, velocities, t, "
                    f"declared parameters or inputs{hint}"
                )

def _rebuild(args: dict) -> Model:
    """Unpickle a Model (see :meth:`Model.__reduce__`)."""
    return Model(**args)
