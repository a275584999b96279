"""A Model's events (issue 36 item 1): named scalar functions g(t, x, ẋ, p, u) whose zeros the
run locates (:mod:`symgen.events`), each with SciPy's ``direction`` (−1, 0, +1: falling, either,
rising crossings) and ``terminal`` (the run ends at the first one).  Checked once here; the
expressions are one more kernel (``<name>_events``), the directions and terminal flags are data."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import sympy as sp

from .names import ModelError, check_name, refuse_text

__all__ = ["ModelEvent", "normalize_events", "check_direction", "check_terminal",
           "check_restitution", "check_rest_speed"]


@dataclass(frozen=True)
class ModelEvent:
    """One event of a Model: g (a scalar sympy expression), direction, terminal."""
    expr: sp.Expr
    direction: int = 0
    terminal: bool = False
    #: Newton's coefficient of restitution e ∈ [0, 1] of a unilateral constraint g(x) ≥ 0 (an
    #: impact at each approaching zero: symgen.impacts), None for a plain event
    restitution: float | None = None
    #: an impact's rebound speed at or below which the contact closes (persistent contact,
    #: symgen.contact); None: 0 (only the flight-time and burst rules)
    rest_speed: float | None = None


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


def check_restitution(value, what: str) -> float:
    """A coefficient of restitution e, a number in [0, 1]; anything else one line."""
    try:
        e = float(value)
    except (TypeError, ValueError):
        e = None
    if isinstance(value, bool) or e is None or not 0.0 <= e <= 1.0:
        raise ValueError(f"{what}: the coefficient of restitution e must be a number in [0, 1] "
                         f"(0: plastic, 1: elastic), got {value!r}")
    return e


def check_rest_speed(value, what: str) -> float | None:
    """An impact's ``rest_speed`` (persistent contact): None or a finite number >= 0."""
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = None
    if isinstance(value, bool) or v is None or not 0.0 <= v < float("inf"):
        raise ValueError(f"{what}: rest_speed (the rebound speed at or below which the contact "
                         f"closes) must be a finite number >= 0, got {value!r}")
    return v


def _impact(what: str, direction, terminal, restitution) -> tuple:
    """(direction, terminal, e) of an event; one with a restitution is a unilateral constraint
    g ≥ 0: direction −1 (approaching), not terminal."""
    if restitution is None:
        return check_direction(direction, what), check_terminal(terminal, what), None
    e = check_restitution(restitution, what)
    if direction not in (-1, 0) or isinstance(direction, bool) or terminal:
        raise ValueError(f"{what}: an impact (restitution e) is a gap g >= 0 located approaching "
                         f"(direction -1) and not terminal, got direction={direction!r}, "
                         f"terminal={terminal!r}")
    return -1, False, e


def normalize_events(events: Mapping | None) -> dict:
    """name → :class:`ModelEvent` from name → an expression, a ModelEvent or a mapping
    {"expr", "direction", "terminal", "restitution"}; names checked, expressions scalar (their
    symbols are checked with the outputs', Model._validate_symbols; an impact's g may use only
    the coordinates and parameters)."""
    out: dict[str, ModelEvent] = {}
    for name, spec in (events or {}).items():
        check_name(name, "event")
        what = f"event {name!r}"
        if isinstance(spec, ModelEvent):
            expr, direction, terminal = spec.expr, spec.direction, spec.terminal
            restitution, rest = spec.restitution, spec.rest_speed
        elif isinstance(spec, Mapping):
            unknown = sorted(set(spec) - {"expr", "direction", "terminal", "restitution",
                                          "rest_speed"})
            if unknown or "expr" not in spec:
                raise ModelError(f"{what}: give a mapping with 'expr' (and 'direction', "
                                 f"'terminal', 'restitution', 'rest_speed'), got the keys "
                                 f"{sorted(spec)}")
            expr = spec["expr"]
            direction, terminal = spec.get("direction", 0), spec.get("terminal", False)
            restitution, rest = spec.get("restitution"), spec.get("rest_speed")
        else:
            expr, direction, terminal, restitution, rest = spec, 0, False, None, None
        refuse_text(expr, what)
        try:
            e = sp.sympify(expr)
        except sp.SympifyError as exc:
            raise ModelError(f"{what} is not a sympy expression: {exc}") from None
        if isinstance(e, sp.MatrixBase) or not isinstance(e, sp.Basic):
            raise ModelError(f"{what} must be a scalar expression")
        try:
            if rest is not None and restitution is None:
                raise ValueError(f"{what}: rest_speed belongs to an impact: give restitution "
                                 "e with it")
            out[name] = ModelEvent(e, *_impact(what, direction, terminal, restitution),
                                   check_rest_speed(rest, what))
        except ValueError as exc:
            raise ModelError(str(exc)) from None
    return out
