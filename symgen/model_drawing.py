"""The drawing data a :class:`~symgen.Model` may carry (``Model.drawing``): polylines of named
points, checked and normalized once when the model is made.

A drawing is a sequence of polylines; a polyline is a sequence of points; a point is either the
name of an output point (the outputs ``<name>.x``, ``<name>.y`` and, in 3-D, ``<name>.z``) or a
pair ``(name, (X, Y[, Z]))`` of expressions of x, t and parameters.  All points have the same
dimension (2 or 3); a one-point polyline is a marker (a ground anchor).  The normal form is a tuple
of polylines, each a tuple of ``(name, (X, Y[, Z]))`` with sympy expressions.  The drawing does not
change the generated C, so it is not part of the model's hash; ``symgen.animation`` evaluates it.
"""
from __future__ import annotations

from typing import Mapping

import sympy as sp

from .names import ModelError, check_name, refuse_text

__all__ = ["normalize_drawing"]


def _point(item, k: int, outputs: Mapping[str, sp.Expr], allowed: set) -> tuple:
    """One point of polyline k as ``(name, (X, Y[, Z]))``."""
    if isinstance(item, str):
        axes = ("x", "y", "z") if f"{item}.z" in outputs else ("x", "y")
        missing = [f"{item}.{a}" for a in axes if f"{item}.{a}" not in outputs]
        if missing:
            raise ModelError(f"drawing point {item!r} needs the outputs {missing}; "
                             f"outputs are {list(outputs)}")
        pname, xyz = item, tuple(outputs[f"{item}.{a}"] for a in axes)
    else:
        try:
            pname, xyz = item
            refuse_text(xyz, f"drawing point {pname!r} (polyline {k})")
            xyz = tuple(sp.sympify(e) for e in xyz)
        except ModelError:
            raise
        except (TypeError, ValueError, sp.SympifyError):
            raise ModelError(f"drawing point {item!r} (polyline {k}) is neither an "
                             "output point name nor (name, (X, Y[, Z]))") from None
        if not isinstance(pname, str) or not pname:
            raise ModelError(f"drawing point {item!r} (polyline {k}) needs a name")
    check_name(pname, "drawing point")
    if len(xyz) not in (2, 3):
        raise ModelError(f"drawing point {pname!r} has {len(xyz)} coordinates; expected 2 or 3")
    for e in xyz:
        if isinstance(e, sp.MatrixBase):
            raise ModelError(f"drawing point {pname!r} has a matrix coordinate; expected scalars")
        unknown = set(e.free_symbols) - allowed
        if unknown:
            raise ModelError(f"drawing point {pname!r} depends on "
                             f"{sorted(s.name for s in unknown)}; it may depend on coordinates, "
                             "t and parameters only")
    return pname, xyz


def normalize_drawing(value, outputs: Mapping[str, sp.Expr], allowed: set) -> tuple:
    """``value`` (None or polylines, see the module docstring) as a tuple of tuples of
    ``(name, (X, Y[, Z]))``; ``outputs`` are the model's outputs (for points given by name) and
    ``allowed`` the symbols a coordinate may contain (coordinates, parameters, t).  Raises
    ModelError naming the polyline or point that is wrong."""
    if value is None:
        return ()
    if isinstance(value, str):
        raise ModelError("drawing must be a list of polylines (lists of points), not a string")
    try:
        polylines = list(value)
    except TypeError:
        raise ModelError("drawing must be a list of polylines (lists of points)") from None
    lines, dims = [], set()
    for k, line in enumerate(polylines):
        if isinstance(line, str):
            raise ModelError(f"drawing polyline {k} is the string {line!r}; give a list of "
                             "points, e.g. [['A', 'B']]")
        try:
            items = list(line)
        except TypeError:
            raise ModelError(f"drawing polyline {k} is not a list of points: {line!r}") from None
        if not items:
            raise ModelError(f"drawing polyline {k} has no points")
        pts = tuple(_point(item, k, outputs, allowed) for item in items)
        dims.update(len(xyz) for _, xyz in pts)
        lines.append(pts)
    if len(dims) > 1:
        raise ModelError("drawing mixes 2-D and 3-D points")
    return tuple(lines)
