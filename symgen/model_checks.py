"""The numeric checks of a :class:`symgen.Model`'s mass matrix, run once when it is made: M is
symmetric (probed at random points where the difference does not expand to 0) and its diagonal
is not negative with the parameter defaults at x0."""
from __future__ import annotations

import math

import numpy as np
import sympy as sp

from .names import ModelError

__all__ = ["check_symmetric", "check_mass_diagonal", "check_constants"]


def _free(expr) -> set:
    return set(expr.free_symbols) if hasattr(expr, "free_symbols") else set()


def check_mass_diagonal(model) -> None:
    """M is positive (semi-)definite, so every diagonal entry is ≥ 0: check them with the
    parameter defaults at x0, t = 0 (a negative mass or inertia is a modelling error; an entry
    that is not a finite number there is left to the run, which may start elsewhere)."""
    subs = {s: sp.Float(v) for s, v in model.params.items()}
    subs.update({c: sp.Float(float(v)) for c, v in zip(model.coords, model.x0)})
    subs[sp.Symbol("t")] = sp.Float(0)
    diag = []
    for i in range(model.n):
        e = model.M[i, i]
        try:
            diag.append(float(e.xreplace(subs).evalf()) if e.free_symbols else float(e))
        except (TypeError, ValueError):
            diag.append(math.nan)         # not a number at x0 (x0 may be a placeholder)
    scale = max([abs(v) for v in diag if math.isfinite(v)] + [1.0])
    for i, v in enumerate(diag):
        if math.isfinite(v) and v < -1e-12 * scale:
            raise ModelError(
                f"M[{i},{i}] = {model.M[i, i]} (coordinate {model.coords[i].name}) is {v:.6g} "
                "with the parameter defaults at x0: a mass matrix has no negative diagonal "
                "entry (negative mass or inertia?)")


def check_symmetric(model) -> None:
    """M[i, j] = M[j, i]: expanded, else probed numerically (trigonometric identities)."""
    M = model.M
    rng = np.random.default_rng(12345)
    subs_syms = sorted(_free(M), key=lambda s: s.name)
    entries = M.todok()              # only structurally non-zero pairs can differ
    for i, j in sorted({(min(i, j), max(i, j)) for i, j in entries if i != j}):
        d = entries.get((i, j), sp.S.Zero) - entries.get((j, i), sp.S.Zero)
        if d == 0:
            continue
        d = sp.expand(d)
        if d == 0:
            continue
        # random numeric probe: structural zeros may hide behind trigonometric identities
        nonzero = False
        for _ in range(3):
            vals = {s: float(rng.uniform(0.3, 1.7)) for s in subs_syms}
            try:
                v = complex(d.evalf(subs=vals))
            except (TypeError, ValueError):
                nonzero = True
                break
            if abs(v) > 1e-9 * (1.0 + abs(complex(M[i, j].evalf(subs=vals)))):
                nonzero = True
                break
        if nonzero:
            raise ModelError(
                f"M is not symmetric: M[{i},{j}] = {M[i, j]} but M[{j},{i}] = {M[j, i]} "
                f"(coordinates {model.coords[i].name}, {model.coords[j].name})"
            )


def check_constants(model) -> None:
    """Every number must be a finite, non-vanishing double as the C prints it: 10**400 would
    become ``inf`` (a rational p/q is printed as p.0/q.0, so p and q must both fit)."""
    seen: set = set()
    for what, expr in model._expressions():
        for a in sp.sympify(expr).atoms(sp.Number):
            if a in seen:
                continue
            seen.add(a)
            parts = (a.p, a.q) if isinstance(a, sp.Rational) else (a,)
            for part in parts:
                try:
                    val = float(part)
                except (OverflowError, TypeError, ValueError):
                    val = math.inf
                nonzero = part.is_zero is False if isinstance(part, sp.Basic) else part != 0
                if not math.isfinite(val) or (val == 0.0 and nonzero):
                    text = str(a)
                    if len(text) > 40:
                        text = f"{text[:20]}…({len(text)} characters)"
                    raise ModelError(f"{what} contains the constant {text}, which is not a "
                                     "finite non-zero double (C would compute with inf or 0)")
