"""The builders' events (issue 36.1; docs/events.md): ``system.event(name, g, direction,
terminal)`` on :class:`~symgen.mechanics.PlanarSystem` and
:class:`~symgen.mechanics.SpatialSystem`, g an expression of the builder's symbols or the name
of one of the model's outputs (a joint's ``<joint>.angle``, a point's ``<point>.y`` …), turned
into ``Model.events`` when the model is built."""
from __future__ import annotations

import sympy as sp

from ..model_events import ModelEvent, check_direction, check_terminal
from ..names import check_name
from ._common import DuplicateNameError, MechanismError, UnknownElementError

__all__ = ["BuilderEvents"]


class BuilderEvents:
    """The ``event`` method the planar and spatial builders share."""

    def event(self, name: str, expr, direction: int = 0, terminal: bool = False) -> str:
        """An event: the zeros of ``expr`` (an expression of t, the coordinates or element
        symbols, velocities, parameters and inputs, or the name of an output of the model)
        crossing in ``direction`` (−1 falling, +1 rising, 0 either) are located by the run
        (``Result.t_events``); ``terminal`` ends the run at the first."""
        events = self.__dict__.setdefault("_events", {})
        check_name(name, "event")
        if name in events:
            raise DuplicateNameError(f"{self.name}: event {name!r} is defined twice")
        try:
            direction = check_direction(direction, f"{self.name}: event {name!r}")
            terminal = check_terminal(terminal, f"{self.name}: event {name!r}")
        except ValueError as exc:
            raise MechanismError(str(exc)) from None
        if not isinstance(expr, str):
            try:
                expr = sp.sympify(expr)
            except sp.SympifyError as exc:
                raise MechanismError(f"{self.name}: event {name!r} is not a sympy expression "
                                     f"or an output's name: {exc}") from None
        events[name] = (expr, direction, terminal)
        return name

    def _model_events(self, outputs, subs: dict | None = None) -> dict:
        """name → ModelEvent, an output's name replaced by its expression, ``subs`` (the spatial
        builder's element symbols → coordinates) applied to the others."""
        out = {}
        for name, (expr, direction, terminal) in self.__dict__.get("_events", {}).items():
            if isinstance(expr, str):
                if expr not in outputs:
                    raise UnknownElementError(f"{self.name}: event {name!r} names the output "
                                              f"{expr!r}, which the model does not have; it has "
                                              f"{sorted(outputs)[:20]}")
                expr = outputs[expr]
            elif subs:
                expr = expr.xreplace(subs)
            out[name] = ModelEvent(expr, direction, terminal)
        return out
