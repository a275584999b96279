"""Sympy expressions to C99: the printer rules, the map from model symbols to C array slots, and
one kernel printed after a single ``cse`` over all its outputs' non-zero entries.

Symbols are mapped to array slots (``x[i]``, ``xd[i]``, ``p[k]``, ``u[k]``…) with ``xreplace``, so
user names never reach C.
"""
from __future__ import annotations

import sympy as sp
from sympy.printing.c import C99CodePrinter

from ..derived import Derived
from ..model import Model, ModelError, t
from .table import INPUT_DECL, KERNEL_DOC, OUTPUT_DOC

__all__ = ["Printer", "slot_map", "print_kernel"]


class Printer(C99CodePrinter):
    """C99 printer; integer powers up to 3 as products (exact and faster than pow); constants such
    as π as 17-digit literals (M_PI is not standard C99)."""

    def __init__(self):
        super().__init__({"math_macros": {}})

    def _print_Integer(self, expr):
        # beyond 32 bits an integer constant may not fit C's int: print it as a double
        if abs(int(expr)) > 2**31 - 1:
            return repr(float(expr))
        return super()._print_Integer(expr)

    def _print_NumberSymbol(self, expr):
        return self._print(sp.Float(expr.evalf(20), 17))

    _print_Pi = _print_Exp1 = _print_EulerGamma = _print_GoldenRatio = _print_Catalan = \
        _print_NumberSymbol

    def _print_Pow(self, expr):
        if expr.exp.is_Integer and 2 <= int(expr.exp) <= 3:
            base = self.parenthesize(expr.base, 100)
            return "*".join([base] * int(expr.exp))
        return super()._print_Pow(expr)


def slot_map(model: Model, d: Derived) -> dict:
    """xreplace map from model symbols to C array slots."""
    n, m, npar, nu = model.n, model.m, len(model.params), len(model.inputs)
    bases = {
        "x": sp.IndexedBase("x", shape=(n,)),
        "xd": sp.IndexedBase("xd", shape=(n,)),
        "xdd": sp.IndexedBase("xdd", shape=(n,)),
        "lam": sp.IndexedBase("lam", shape=(max(m, 1),)),
        "p": sp.IndexedBase("p", shape=(max(npar, 1),)),
        "u": sp.IndexedBase("u", shape=(max(nu, 1),)),
    }
    mapping = {t: sp.Symbol("t")}
    for i in range(n):
        mapping[model.coords[i]] = bases["x"][i]
        mapping[model.velocities[i]] = bases["xd"][i]
        mapping[d.xdd[i]] = bases["xdd"][i]
    for i in range(m):
        mapping[d.lam[i]] = bases["lam"][i]
    for k, sym in enumerate(model.params):
        mapping[sym] = bases["p"][k]
    for k, sym in enumerate(model.inputs):
        mapping[sym] = bases["u"][k]
    return mapping


def _used(reps: list, reduced: list) -> list:
    """The temporaries the outputs need: an entry that cancels to 0 after ``cse`` (a moment
    Q_θ − r × F of a pin) leaves its subexpressions unused, which C99 warns about."""
    need = set().union(*(sp.sympify(e).free_symbols for e in reduced)) if reduced else set()
    kept = []
    for sym, value in reversed(reps):
        if sym in need:
            kept.append((sym, value))
            need |= value.free_symbols
    return kept[::-1]


def print_kernel(name: str, inputs: list, outputs: list, mapping: dict, printer) -> dict:
    entries = []       # (target, expression)
    out_info = []
    for oname, mat, *csr in outputs:
        mat = sp.ImmutableMatrix(mat)
        rows, cols = mat.shape
        nonzero = 0
        if csr:         # values on a CSR pattern (its (i, j) row-major): the same non-zeros in the
            pattern, = csr      # same order as the dense layout, so the same cse and code
            dok = mat.todok()
            slots = [(k, dok.get(ij, 0)) for k, ij in enumerate(pattern)]
            size = len(pattern)
        else:
            slots = [(i * cols + j, e) for (i, j), e in sorted(mat.todok().items())]
            size = rows * cols
        for slot, e in slots:                              # the non-zero entries, row-major
            if e != 0:
                entries.append((f"{oname}[{slot}]", e.xreplace(mapping)))
                nonzero += 1
        out_info.append({
            "name": oname, "rows": rows, "cols": cols, "size": size, "csr": bool(csr),
            "zero_fill": nonzero < size, "nnz": nonzero, "doc": OUTPUT_DOC.get(oname, ""),
        })
    temporaries, assignments = [], []
    if entries:
        reps, reduced = sp.cse([e for _, e in entries], symbols=sp.numbered_symbols("w"),
                               order="none")
        reps = _used(reps, reduced)
        try:
            temporaries = [(str(s), printer.doprint(v)) for s, v in reps]
            assignments = [(target, printer.doprint(v)) for (target, _), v in zip(entries, reduced)]
        except NotImplementedError as exc:      # sympy's PrintMethodNotImplementedError
            what = str(exc).splitlines()[0].rsplit(":", 1)[-1].strip()
            raise ModelError(f"the {name} kernel uses {what}, which has no C99 translation; "
                             "rewrite it with functions of <math.h> (sin, exp, sqrt, fabs, "
                             "floor, Piecewise, …)") from None
    signature = ", ".join([INPUT_DECL[a] for a in inputs] + [f"double *{o['name']}" for o in out_info])
    return {"name": name, "inputs": inputs, "outputs": out_info, "signature": signature,
            "csr": any(o["csr"] for o in out_info),
            "doc": KERNEL_DOC[name], "temporaries": temporaries, "assignments": assignments}
