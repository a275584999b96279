"""The symbols of a model: time ``t``, coordinates with their velocity symbols
(:func:`coordinates`, and a Model's ``coords``/``velocities`` checked by
:func:`coordinate_symbols`), and inputs: values that arrive at run time (a motor torque, a
controller's force).

``u1, u2 = symgen.inputs("u1 u2")`` makes :class:`Input` symbols; the force expressions f and
the outputs of a :class:`~symgen.Model` may use them (M, q and V may not: the steppers' matrices
and the constraint derivatives are taken at fixed inputs).  A model collects the Input symbols its
expressions use, and ``Model(..., inputs=[...])`` names (and orders) them explicitly; the
generated kernels take their values as one more array ``u`` after ``p`` (docs/inputs.md).
"""
from __future__ import annotations

from typing import Iterable

import sympy as sp

from .names import (VELOCITY_SUFFIX, ModelError, _check_allowed_name, _check_c_identifier,
                    _check_not_reserved)

__all__ = ["t", "coordinates", "coordinate_symbols", "Input", "inputs", "collect_inputs",
           "multipliers"]

#: The time symbol shared by every model.
t = sp.Symbol("t")


def coordinates(names: str | Iterable[str]) -> tuple[tuple[sp.Symbol, ...], tuple[sp.Symbol, ...]]:
    """Coordinate symbols and their velocity symbols: ``x, xd = coordinates("x y theta")``."""
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    names = list(names)
    for name in names:
        _check_allowed_name(name, "coordinate")
    xs = tuple(sp.Symbol(n) for n in names)
    vs = tuple(sp.Symbol(n + VELOCITY_SUFFIX) for n in names)
    return xs, vs


def coordinate_symbols(coords, velocities=None) -> tuple[tuple, tuple]:
    """A Model's coordinates (names or Symbols) and velocities (default ``<c>_dot``), checked."""
    if isinstance(coords, str):
        coords = coords.replace(",", " ").split()
    coords = list(coords)
    if any(isinstance(c, str) for c in coords):
        if not all(isinstance(c, str) for c in coords):
            raise ModelError("coords must be all names or all sympy Symbols")
        xs, vs = coordinates(coords)
    else:
        for c in coords:
            if not isinstance(c, sp.Symbol):
                raise ModelError(f"coordinate {c!r} is not a sympy Symbol (dynamicsymbols are not "
                                 "supported: use symgen.coordinates)")
            _check_allowed_name(c.name, "coordinate")
        xs = tuple(coords)
        vs = tuple(sp.Symbol(c.name + VELOCITY_SUFFIX) for c in xs)
    if velocities is not None:
        vs = tuple(sp.Symbol(v) if isinstance(v, str) else v for v in velocities)
        if len(vs) != len(xs):
            raise ModelError(f"{len(vs)} velocities given for {len(xs)} coordinates")
        for v in vs:
            if not isinstance(v, sp.Symbol):
                raise ModelError(f"velocity {v!r} is not a sympy Symbol or a name")
            _check_allowed_name(v.name, "velocity")
    return xs, vs


class Input(sp.Symbol):
    """A Symbol whose value is an input of the model, set at run time (not a parameter)."""


def multipliers(m: int) -> tuple:
    """The Lagrange multipliers λ_0 … λ_{m-1} of M ẍ = f + Hᵀλ as Symbols (``lambda_<i>``): the
    extra inputs of K (``derive``) and of a model's joint reactions (``Model.reactions``)."""
    return tuple(sp.Symbol(f"lambda_{i}") for i in range(m))


def inputs(names: str | Iterable[str]):
    """Input symbols: ``T = symgen.inputs("T")`` (one name: the Symbol), ``u1, u2 =
    symgen.inputs("u1 u2")`` (several: a tuple)."""
    single = isinstance(names, str) and len(names.replace(",", " ").split()) == 1
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    out = []
    for name in names:
        _check_c_identifier(name, "input")
        _check_not_reserved(name, "input")
        out.append(Input(name))
    return out[0] if single else tuple(out)


def collect_inputs(declared, expressions) -> tuple:
    """The model's input symbols: ``declared`` (names or Symbols, in that order) and then the
    :class:`Input` symbols found in ``expressions`` (sorted by name).  A name is the symbol of
    that name the expressions use (an :class:`Input` if they use none)."""
    free = set()
    for expr in expressions:
        free.update(getattr(expr, "free_symbols", ()))
    by_name = {s.name: s for s in free}
    syms = []
    for item in declared or ():
        sym = by_name.get(item, Input(item)) if isinstance(item, str) else item
        if not isinstance(sym, sp.Symbol):
            raise ModelError(f"input {item!r} is not a name or a sympy Symbol")
        _check_c_identifier(sym.name, "input")
        _check_not_reserved(sym.name, "input")
        if any(s.name == sym.name for s in syms):
            raise ModelError(f"input {sym.name!r} is given twice")
        syms.append(sym)
    known = {s.name for s in syms}
    for sym in sorted((s for s in free if isinstance(s, Input)), key=lambda s: s.name):
        if sym.name not in known:
            syms.append(sym)
            known.add(sym.name)
    return tuple(syms)
