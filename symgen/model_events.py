"""A Model's events (issue 36 item 1): named scalar functions g(t, x, ẋ, p, u) whose zeros the
run locates (:mod:`symgen.events`), each with SciPy's ``direction`` (−1, 0, +1: falling, either,
rising crossings) and ``terminal`` (the run ends at the first one).  Checked once here; the
expressions are one more kernel (``<name>_events``), the directions and terminal flags are data."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import sympy as sp

from .names import ModelError, check_name, refuse_text

__all__ = ["ModelEvent", "normalize_events", "check_direction", "check_terminal"]


@dataclass(frozen=True)
class ModelEvent:
    """One event of a Model: g (a scalar sympy expression), direction, terminal."""
    expr: sp.Expr
    direction: int = 0
    terminal: bool = False


def check_direction(value, what: str) -> int:
    """SciPy's direction as −1, 0 or +1; anything else one line."""
    if isinstance(value, bool) or value not in (-1, 0, 1):
        raise ValueError(f"{what}: direction must be -1 (falling), 0 (either) or +1 (rising), "
                         f"got {value!r}")
    return int(value)


def check_terminal(value, what: str) -> bool:
    """``terminal``: True or False (a count of occurrences, as SciPy's, is not supported)."""
    if not isinstance(value, (bool, int)) or value not in (0, 1):
        raise ValueError(f"{what}: terminal must be True or False, got {value!r}")
    return bool(value)


def normalize_events(events: Mapping | None) -> dict:
    """name → :class:`ModelEvent` from name → an expression, a ModelEvent or a mapping
    {"expr", "direction", "terminal"}; names checked, expressions scalar (their symbols are
    checked with the outputs', Model._validate_symbols)."""
    out: dict[str, ModelEvent] = {}
    for name, spec in (events or {}).items():
        check_name(name, "event")
        what = f"event {name!r}"
        if isinstance(spec, ModelEvent):
            expr, direction, terminal = spec.expr, spec.direction, spec.terminal
        elif isinstance(spec, Mapping):
            unknown = sorted(set(spec) - {"expr", "direction", "terminal"})
            if unknown or "expr" not in spec:
                raise ModelError(f"{what}: give a mapping with 'expr' (and 'direction', "
                                 f"'terminal'), got the keys {sorted(spec)}")
            expr = spec["expr"]
            direction, terminal = spec.get("direction", 0), spec.get("terminal", False)
        else:
            expr, direction, terminal = spec, 0, False
        refuse_text(expr, what)
        try:
            e = sp.sympify(expr)
        except sp.SympifyError as exc:
            raise ModelError(f"{what} is not a sympy expression: {exc}") from None
        if isinstance(e, sp.MatrixBase) or not isinstance(e, sp.Basic):
            raise ModelError(f"{what} must be a scalar expression")
        try:
            out[name] = ModelEvent(e, check_direction(direction, what),
                                   check_terminal(terminal, what))
        except ValueError as exc:
            raise ModelError(str(exc)) from None
    return out
