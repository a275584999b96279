"""Input symbols: values that arrive at run time (a motor torque, a controller's force).

``u1, u2 = symgen.inputs("u1 u2")`` makes :class:`Input` symbols; the force expressions f and
the outputs of a :class:`~symgen.Model` may use them (M, q and V may not: the steppers' matrices
and the constraint derivatives are taken at fixed inputs).  A model collects the Input symbols its
expressions use, and ``Model(..., inputs=[...])`` names (and orders) them explicitly; the
generated kernels take their values as one more array ``u`` after ``p`` (docs/inputs.md).
"""
from __future__ import annotations

from typing import Iterable

import sympy as sp

from .names import ModelError, _check_c_identifier, _check_not_reserved

__all__ = ["Input", "inputs", "collect_inputs"]


class Input(sp.Symbol):
    """A Symbol whose value is an input of the model, set at run time (not a parameter)."""


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
    """The model's input symbols: ``declared`` (names, Symbols or Inputs, in that order) and then
    the :class:`Input` symbols found in ``expressions`` (sorted by name).  A name given as text
    becomes an :class:`Input`; a plain Symbol in ``declared`` stays as it is (it is the symbol
    the expressions use)."""
    syms = []
    for item in declared or ():
        sym = Input(item) if isinstance(item, str) else item
        if not isinstance(sym, sp.Symbol):
            raise ModelError(f"input {item!r} is not a name or a sympy Symbol")
        _check_c_identifier(sym.name, "input")
        _check_not_reserved(sym.name, "input")
        if any(s.name == sym.name for s in syms):
            raise ModelError(f"input {sym.name!r} is given twice")
        syms.append(sym)
    found = set()
    for expr in expressions:
        found.update(s for s in getattr(expr, "free_symbols", ()) if isinstance(s, Input))
    known = {s.name for s in syms}
    for sym in sorted(found, key=lambda s: s.name):
        if sym.name not in known:
            syms.append(sym)
            known.add(sym.name)
    return tuple(syms)
