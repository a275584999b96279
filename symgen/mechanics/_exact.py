"""Exact arithmetic for the numbers the builders derive from a mechanism's description (issue 34):
the same bits on every machine, without BLAS.

numpy's ``dot``, ``pinv`` and matrix products pick their kernels by CPU, so numbers computed
with them and written into M or q as floats differ in their last bits between machines, and with
them the model hash, the build-cache key and the generated C.  Here every input number is taken
exactly: a float as the decimal it prints as (``Fraction(repr(0.35))`` = 7/20), a sympy Rational
as it is, any other real (√2, π) as the double nearest to it; sums, products and the small
pseudo-inverses of a body's directions ((XᵀX)⁻¹Xᵀ, k ≤ 3) are made with Fractions, and a result
becomes a double only where it enters an expression (:func:`number`: correctly rounded, so
0.35 − 0.2 is 0.15 and an exact zero is 0).  A square root is the correctly rounded root of the
exact value (:func:`sqrt`), an angle the double nearest its 30-digit value.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Mapping, Sequence

import sympy as sp

__all__ = ["NotANumber", "exact", "exact_value", "number", "floated", "rationalized", "dot", "sub",
           "scale", "cross", "sqrt", "norm", "unit", "pinv", "matvec", "atan2"]

Vec = tuple  # of Fractions


def exact(v) -> Fraction:
    """A real number exactly: a float by its shortest repr, an int or a sympy Rational as it is,
    another sympy number (√2, π) by the repr of its double (evaluated to 30 digits)."""
    if isinstance(v, Fraction):
        return v
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, sp.Basic):
        if v.is_Rational:
            return Fraction(int(v.p), int(v.q))
        if not v.is_Float:
            v = sp.N(v, 30)
    return Fraction(repr(float(v)))


def rationalized(expr):
    """``expr`` with its Floats as exact Rationals (:func:`exact`)."""
    e = sp.sympify(expr)
    floats = e.atoms(sp.Float)
    return e.xreplace({f: sp.Rational(exact(f)) for f in floats}) if floats else e


class NotANumber(ValueError):
    """An expression that has no value without more symbols (``args[0]``: their names), or none
    that is real."""


def exact_value(expr, subs: Mapping) -> Fraction:
    """The exact value of an expression of parameters only (their values ``subs`` taken exactly):
    a Rational when it is one, else (a root, a sine) the double nearest its 30-digit value.
    :class:`NotANumber` when symbols are left (``_common.exact_numeric`` names them)."""
    if isinstance(expr, (Fraction, int)):
        return Fraction(expr)
    e = rationalized(expr)
    if subs:
        e = e.xreplace({k: sp.Rational(exact(v)) if isinstance(v, (int, float)) else v
                        for k, v in subs.items()})
        e = rationalized(e)
    if e.free_symbols:
        raise NotANumber(sorted(map(str, e.free_symbols)))
    if not e.is_Rational:
        e = sp.N(e, 30)
        if not e.is_Float:
            raise NotANumber([])
    return exact(e)


def number(r) -> sp.Expr:
    """An exact value as it enters an expression: 0 as 0, else the correctly rounded double."""
    return sp.S.Zero if r == 0 else sp.Float(float(r), 17)


def floated(expr):
    """``expr`` (exact Rationals, symbols) with every non-integer Rational as its correctly
    rounded double (:func:`number`); exponents stay as they are."""
    e = sp.sympify(expr)
    if e.is_Rational:
        return e if e.is_Integer else number(exact(e))
    if e.is_Atom:
        return e
    if e.is_Pow:
        return floated(e.base) ** e.exp
    return e.func(*[floated(a) for a in e.args])


def sub(a: Sequence, b: Sequence) -> Vec:
    return tuple(x - y for x, y in zip(a, b))


def scale(c, a: Sequence) -> Vec:
    return tuple(c * x for x in a)


def dot(a: Sequence, b: Sequence) -> Fraction:
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def cross(a: Sequence, b: Sequence) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _root(r: Fraction, levels: int) -> float:
    """r^(1/2^levels) correctly rounded (r ≥ 0): integer roots with a sticky bit."""
    if r < 0:
        raise ValueError("root of a negative number")
    if r == 0:
        return 0.0
    p, q = r.numerator, r.denominator
    k = 2 ** levels
    # s = ⌊(p/q · 2^(k·e))^(1/k)⌋ with ≥ 60 bits; the root is s·2^-e (+ a sticky bit if inexact)
    e = max(0, (64 * k - p.bit_length() + q.bit_length()) // k + 1)
    n = (p << (k * e)) // q
    exact_n = n * q == p << (k * e)
    s = n
    for _ in range(levels):
        s = math.isqrt(s)
    if not (exact_n and s ** k == n):
        s, e = 2 * s + 1, e + 1                     # strictly between s and s + 1: no tie
    return float(Fraction(s, 1 << e))


def sqrt(r) -> float:
    """√r correctly rounded, for an exact r ≥ 0 (math.sqrt(float(r)) rounds twice)."""
    return _root(Fraction(r), 1)


def norm(a: Sequence) -> float:
    """|a| correctly rounded."""
    return sqrt(dot(a, a))


def unit(a: Sequence) -> Vec:
    """a/|a|, each component the correctly rounded double (as an exact Fraction)."""
    s = dot(a, a)
    return tuple(Fraction(math.copysign(sqrt(x * x / s), x)) if x else Fraction(0) for x in a)


def matvec(A: Sequence[Sequence], v: Sequence) -> Vec:
    return tuple(dot(row, v) for row in A)


def pinv(columns: Sequence[Sequence]) -> list:
    """X⁺ = (XᵀX)⁻¹Xᵀ exactly (k × 3) of X = [columns] (3 × k, independent columns)."""
    k = len(columns)
    G = [[dot(a, b) for b in columns] + [Fraction(int(i == j)) for j in range(k)]
         for i, a in enumerate(columns)]
    for c in range(k):                            # Gauss–Jordan on [G | I]
        p = next(r for r in range(c, k) if G[r][c] != 0)
        G[c], G[p] = G[p], G[c]
        G[c] = [x / G[c][c] for x in G[c]]
        for r in range(k):
            if r != c and G[r][c] != 0:
                G[r] = [x - G[r][c] * y for x, y in zip(G[r], G[c])]
    inv = [row[k:] for row in G]
    return [[sum((inv[a][b] * columns[b][i] for b in range(k)), Fraction(0)) for i in range(3)]
            for a in range(k)]


def atan2(y, x) -> float:
    """atan2(y, x) of exact values: the double nearest its 30-digit value."""
    return float(sp.N(sp.atan2(sp.Rational(exact(y)), sp.Rational(exact(x))), 30))
