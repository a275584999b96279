"""The Gauss–Newton of a model's start (:func:`symgen.assemble`, the builders' initial-state
projection), deterministic: the same bits on every machine (issue 34).

A start is printed into the generated C, so it must not depend on the machine: numpy's matrix
products and LAPACK pick their kernels by CPU (OpenBLAS), and numpy's own exp, log, … by its
SIMD, so an iteration made with them ends at round-off whose last digits differ between machines.
Rounding such a result to fewer digits would only move the difference to the cases that round
the other way; instead nothing here depends on the CPU:

* the rows F(z) and their Jacobian J = ∂F/∂z (symbolic) are evaluated with mpmath at
  :data:`PREC` bits, pure Python (the model's Floats enter as the doubles they are in the C);
* a step is the least-norm solution of J dz = F over a maximal set of independent rows, from a
  Householder QR of Jᵀ with column pivoting (:func:`min_norm_step`; a row whose pivot falls below
  ``rank_tol`` of the first is redundant and dropped) in fixed-order double arithmetic: numpy's
  elementwise operations (correctly rounded in every lane) and ``math.fsum`` for every dot product,
  no BLAS;
* z is carried at :data:`PREC` bits: once |F| is within the caller's tolerance a few more steps
  make it vanish at that precision (each gains ~15 digits), and z is rounded to the nearest doubles
  at the end, its entries below :data:`ZERO` of the largest set to 0 (codegen prints the start's
  round-off of zero so anyway).  Held coordinates are not unknowns: they keep the given doubles.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import mpmath
import numpy as np
import sympy as sp
from mpmath.libmp import round_nearest, to_float
from sympy.printing.pycode import MpmathPrinter

from .derived import jacobian
from .model import t

__all__ = ["PREC", "ZERO", "Rows", "Solution", "min_norm_step", "solve", "velocity_rows"]

#: the working precision (bits) of the rows and of the unknowns
PREC = 113
#: entries of a result below this fraction of its largest are round-off of zero (the same as the
#: generated C's START_ZERO)
ZERO = 1e-15

_CTX = mpmath.MPContext()
_CTX.prec = PREC


def _double(v) -> float:
    """An mpmath number as the nearest double (NaN when it is not real)."""
    if isinstance(v, (int, float)):
        return float(v)
    if not isinstance(v, _CTX.mpf):
        return math.nan
    return to_float(v._mpf_, rnd=round_nearest)


class Rows:
    """Rows F(z; w) = 0 in the unknowns z, with the bound symbols w given numbers at each call,
    evaluated with mpmath at :data:`PREC` bits; J = ∂F/∂z symbolic (``jacobian``)."""

    def __init__(self, exprs: Sequence, unknowns: Sequence, bound: Sequence,
                 jacobian_: sp.MatrixBase | None = None):
        self.exprs = [sp.sympify(e) for e in exprs]
        self.m, self.n = len(self.exprs), len(unknowns)
        if jacobian_ is not None:                               # (known: rows linear in z)
            self.jacobian = jacobian_
        else:
            self.jacobian = jacobian(sp.Matrix(self.exprs), list(unknowns)) if self.m else \
                sp.zeros(0, self.n)
        self.pattern = [ij for ij, e in self.jacobian.todok().items() if e != 0]
        # plain names for lambdify (its own renaming of e.g. "B.x" costs seconds on big models)
        zs = [sp.Symbol(f"_z{i}") for i in range(self.n)]
        ws = [sp.Symbol(f"_w{i}") for i in range(len(bound))]
        names = dict(zip(unknowns, zs))
        names.update(zip(bound, ws))
        F = [e.xreplace(names) for e in self.exprs]
        entries = [self.jacobian[i, j].xreplace(names) for i, j in self.pattern]
        self._f = sp.lambdify([zs, ws], [F, entries], modules=[{"mpmath": _CTX}, "mpmath"],
                              printer=MpmathPrinter, cse=True, dummify=False)

    def __call__(self, z, w):
        """(F at PREC bits, J as doubles) at the unknowns z and bound values w."""
        try:
            F, entries = self._f(list(z), list(w))
        except (ZeroDivisionError, ValueError):          # (a row undefined there: not finite)
            F, entries = [_CTX.nan] * self.m, [_CTX.nan] * len(self.pattern)
        F = [v if isinstance(v, _CTX.mpf) else _CTX.mpf(v) if isinstance(v, (int, float))
             else _CTX.nan for v in F]
        J = np.zeros((self.m, self.n))
        for (i, j), v in zip(self.pattern, entries):
            J[i, j] = _double(v)
        return F, J


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return math.fsum((a * b).tolist())


def _column_sums(P: np.ndarray) -> np.ndarray:
    """The sums of P's columns, row after row in a fixed order (elementwise adds)."""
    acc = P[0].copy()
    for row in P[1:]:
        acc += row
    return acc


def min_norm_step(J: np.ndarray, r: np.ndarray, rank_tol: float):
    """(dz, rank): the least-norm dz with J_S dz = r_S for a maximal set S of independent rows
    of J, deterministically (module docstring): Householder QR of A = Jᵀ with column pivoting,
    A P = Q R, then Rᵀ y = (Pᵀ r)_S and dz = Q y."""
    m, n = J.shape
    A = np.array(J, float).T.copy()                          # n × m
    order, reflectors, top = list(range(m)), [], None
    for k in range(min(m, n)):
        sub = A[k:, k:]
        norms = _column_sums(sub * sub)
        p = int(np.argmax(norms))                              # (the first largest)
        size = math.sqrt(float(norms[p]))
        top = size if top is None else top
        if size == 0.0 or size <= rank_tol * top:
            break
        A[:, [k, k + p]] = A[:, [k + p, k]]
        order[k], order[k + p] = order[k + p], order[k]
        v = A[k:, k].copy()
        alpha = -math.copysign(size, v[0])
        v[0] -= alpha
        vv = _dot(v, v)
        rest = A[k:, k + 1:]
        if rest.size:
            c = _column_sums(v[:, None] * rest) * (2.0 / vv)
            A[k:, k + 1:] = rest - v[:, None] * c[None, :]
        A[k, k], A[k + 1:, k] = alpha, 0.0
        reflectors.append((v, vv))
    rank = len(reflectors)
    y = [0.0] * rank                                           # Rᵀ y = (Pᵀ r)_S
    for i in range(rank):
        y[i] = math.fsum([float(r[order[i]])] + [-A[l, i] * y[l] for l in range(i)]) / A[i, i]
    z = np.zeros(n)
    z[:rank] = y
    for k in reversed(range(rank)):                            # dz = Q y = H_0 ⋯ H_{r-1} y
        v, vv = reflectors[k]
        z[k:] = z[k:] - (2.0 * _dot(v, z[k:]) / vv) * v
    return z, rank


class Solution(NamedTuple):
    """A solve's result: z as doubles, whether |F| reached the tolerance, |F| at z, F there
    (doubles, for the messages), the iterations."""

    z: np.ndarray
    converged: bool
    residual: float
    F: np.ndarray
    iterations: int


def solve(rows: Rows, z0, w, held: Sequence[int] = (), *, tol: float, max_iter: int,
          rank_tol: float, refine: int = 4) -> Solution:
    """Gauss–Newton with least-norm steps (:func:`min_norm_step`) from z0 for F(z; w) = 0, the
    entries ``held`` kept; converged when |F|∞ ≤ tol·max(1, |z|∞) within ``max_iter`` steps, then
    up to ``refine`` more steps until |F| vanishes at :data:`PREC` bits (module docstring)."""
    z = [_CTX.mpf(float(v)) for v in z0]
    wv = [_CTX.mpf(float(v)) for v in w]
    fixed = set(held)
    free = [j for j in range(len(z)) if j not in fixed]
    it, extra, reached, best = 0, 0, False, None
    while True:
        F, J = rows(z, wv)
        Fd = np.array([_double(v) for v in F])
        res = float(np.max(np.abs(Fd), initial=0.0))
        if not math.isfinite(res):
            break
        size = max(1.0, max((abs(_double(v)) for v in z), default=0.0))
        if res <= tol * size or reached:
            reached = True
            if best is not None and res > 0.5 * best[0]:
                break                                   # no longer improving: keep the best
            best = (res, list(z), Fd)
            if res <= 2.0 ** (16 - PREC) * size or extra >= refine:
                break
            extra += 1
        elif it >= max_iter:
            break
        dz, _ = min_norm_step(J[:, free], Fd, rank_tol)
        for k, j in enumerate(free):
            z[j] -= dz[k]
        it += 1
    if best is not None:
        res, z, Fd = best
    out = np.array([_double(v) for v in z])
    big = float(np.max(np.abs(out[free]), initial=0.0))
    for j in free:
        if abs(out[j]) <= ZERO * big:
            out[j] = 0.0
    return Solution(out, reached, res, Fd, it)


def velocity_rows(rows: Rows, m: int, velocities: Sequence, bound: Sequence,
                  extra: Sequence = ()) -> Rows:
    """The rows q̇ = H ẋ + ∂q/∂t of the first m rows q of ``rows`` (H their Jacobian, known: no
    second differentiation), then ``extra`` (expressions linear in the velocities)."""
    H = rows.jacobian[:m, :]
    qdot = [sum((H[i, j] * velocities[j] for j in range(H.cols) if H[i, j] != 0),
                sp.diff(rows.exprs[i], t)) for i in range(m)]
    extra = [sp.sympify(e) for e in extra]
    J = H.col_join(jacobian(sp.Matrix(extra), list(velocities))) if extra else H
    return Rows(qdot + extra, velocities, bound, sp.ImmutableMatrix(J))
