"""The builders' events (issue 36.1; docs/events.md): ``system.event(name, g, direction,
terminal)`` on :class:`~symgen.mechanics.PlanarSystem` and
:class:`~symgen.mechanics.SpatialSystem`, g an expression of the builder's symbols or the name
of one of the model's outputs (a joint's ``<joint>.angle``, a point's ``<point>.y`` …), turned
into ``Model.events`` when the model is built.  The unilateral constraints (issue 36.2): joint
limits (``limit``: a gap from the joint's coordinate output) and point-against-plane contacts
(``contact``: the builder's ``_contact_gap``), impacts with a coefficient of restitution e."""
from __future__ import annotations

import sympy as sp

from ..model_events import (ModelEvent, check_direction, check_rest_speed, check_restitution,
                            check_terminal)
from ..names import check_name
from ._common import DuplicateNameError, MechanismError, UnknownElementError
from .planar_actuators import output_key
from .planar_body import _vec2, dot, sub
from .spatial_body import _vec3

__all__ = ["BuilderEvents", "PlanarEvents", "SpatialEvents"]


class BuilderEvents:
    """The ``event`` method the planar and spatial builders share."""

    def event(self, name: str, expr, direction: int = 0, terminal: bool = False) -> str:
        """An event: the zeros of ``expr`` (an expression of t, the coordinates or element
        symbols, velocities, parameters and inputs, or the name of an output of the model)
        crossing in ``direction`` (−1 falling, +1 rising, 0 either) are located by the run
        (``Result.t_events``); ``terminal`` ends the run at the first."""
        events = self._new_event(name)
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
        events[name] = (expr, direction, terminal, None, None)
        return name

    def _new_event(self, name: str) -> dict:
        """The builder's events (name → (expr, direction, terminal, e)), ``name`` checked new."""
        events = self.__dict__.setdefault("_events", {})
        check_name(name, "event")
        if name in events:
            raise DuplicateNameError(f"{self.name}: event {name!r} is defined twice")
        return events

    def _impact(self, name: str, expr, e, rest_speed=None) -> str:
        events = self._new_event(name)
        try:
            e = check_restitution(e, f"{self.name}: {name!r}")
            rest = check_rest_speed(rest_speed, f"{self.name}: {name!r}")
        except ValueError as exc:
            raise MechanismError(str(exc)) from None
        events[name] = (expr, -1, False, e, rest)
        return name

    def limit(self, joint: str, lower=None, upper=None, *, e, coordinate: str | None = None,
              rest_speed=None) -> list:
        """Joint limits: the joint's coordinate s (its output ``<joint>.angle`` of a revolute,
        ``<joint>.displacement`` of a prismatic; ``coordinate`` "angle" or "displacement" picks
        one of a cylindrical joint's) kept in [lower, upper] (either may be None) by impacts with
        the coefficient of restitution ``e`` (events ``<joint>.lower``: g = s − lower and
        ``<joint>.upper``: g = upper − s; ``rest_speed``: persistent contact, symgen.contact).
        Returns the events' names."""
        if lower is None and upper is None:
            raise MechanismError(f"{self.name}: limit of {joint!r}: give lower, upper or both")
        lo, up = (None if v is None else sp.sympify(v) for v in (lower, upper))
        if lo is not None and up is not None and (lo - up).is_positive:
            raise MechanismError(f"{self.name}: limit of {joint!r}: lower = {lower} is above "
                                 f"upper = {upper}; give lower <= upper")
        if coordinate not in (None, "angle", "displacement"):
            raise MechanismError(f"{self.name}: limit of {joint!r}: coordinate must be 'angle' "
                                 f"or 'displacement', got {coordinate!r}")
        names = []
        for bound, sign, side in ((lo, 1, "lower"), (up, -1, "upper")):
            if bound is not None:
                names.append(self._impact(f"{output_key(joint)}.{side}",
                                          ("limit", joint, coordinate, sign, bound), e,
                                          rest_speed))
        return names

    def contact(self, name: str, *args, e, rest_speed=None, **kwargs) -> str:
        """A point-against-plane contact ``name``: the gap g = n·(P − O)/|n| of a body point P
        from the plane through O across n kept ≥ 0 by impacts with the coefficient of restitution
        ``e`` (the builder's arguments: PlanarSystem.contact_gap, SpatialSystem.contact_gap)."""
        return self._impact(name, self.contact_gap(*args, **kwargs), e, rest_speed)

    def _limit_gap(self, spec, outputs):
        """A limit's gap from the joint coordinate's output (``spec`` from :meth:`limit`)."""
        _, joint, coordinate, sign, bound = spec
        key = output_key(joint)
        words = [coordinate] if coordinate else ["angle", "displacement"]
        found = [f"{key}.{w}" for w in words if f"{key}.{w}" in outputs]
        if len(found) != 1:
            raise UnknownElementError(
                f"{self.name}: limit of {joint!r}: the model has {'no' if not found else 'two'} "
                f"joint coordinate outputs {[f'{key}.{w}' for w in words]}: a revolute, "
                "prismatic or cylindrical joint (coordinate= picks one of a cylindrical's), "
                "built with joint_outputs=True")
        return sign * (outputs[found[0]] - bound)

    def _model_events(self, outputs, subs: dict | None = None) -> dict:
        """name → ModelEvent, an output's name replaced by its expression, ``subs`` (the spatial
        builder's element symbols → coordinates) applied to the others."""
        out = {}
        for name, (expr, direction, terminal, e, rest) in self.__dict__.get("_events",
                                                                            {}).items():
            if isinstance(expr, tuple):
                expr = self._limit_gap(expr, outputs)
            elif isinstance(expr, str):
                if expr not in outputs:
                    raise UnknownElementError(f"{self.name}: event {name!r} names the output "
                                              f"{expr!r}, which the model does not have; it has "
                                              f"{sorted(outputs)[:20]}")
                expr = outputs[expr]
            elif subs:
                expr = expr.xreplace(subs)
            out[name] = ModelEvent(expr, direction, terminal, e, rest)
        return out


class PlanarEvents(BuilderEvents):
    """:class:`BuilderEvents` with the planar builder's contact gap."""

    def contact_gap(self, body, point, normal=(0, 1), origin=(0, 0), plane="ground"):
        """The gap of :meth:`contact` (``system.contact(name, body, point, e=…, normal=(0, 1),
        origin=(0, 0), plane="ground")``): n·(P − O)/|n|, P the body's point, O the point
        ``origin`` and n the direction ``normal`` of the body ``plane`` (its coordinates; the
        ground's: global ones)."""
        P = self.position(body, point)
        pb = self._body(plane, "contact plane")
        n = _vec2(normal, "contact: normal")
        nrm = sp.sqrt(n.dot(n))
        if nrm.is_zero:
            raise MechanismError(f"{self.name}: contact: the normal {tuple(normal)!r} has zero "
                                 "length")
        O = pb.position(self._point(pb, origin, "contact plane"))
        return dot(pb.rotate(n), sub(P, O)) / nrm


class SpatialEvents(BuilderEvents):
    """:class:`BuilderEvents` with the spatial builder's contact gap."""

    def contact_gap(self, point: str, normal=(0, 0, 1), origin=(0, 0, 0)):
        """The gap of :meth:`contact` (``system.contact(name, point, e=…, normal=(0, 0, 1),
        origin=(0, 0, 0))``): n·(P − O) of the moving point ``point`` from the plane through
        ``origin`` (a point's name, or a global position: the ground's) across ``normal`` (a
        unit vector's name, or a global direction, normalized)."""
        P = sp.Matrix(self.symbols(self._element(point, "point", "contact").name)[0])
        if isinstance(origin, str):
            O = sp.Matrix(self.symbols(self._element(origin, "point", "contact plane").name)[0])
        else:
            O = _vec3(origin, "contact: origin")
        if isinstance(normal, str):
            n = sp.Matrix(self.symbols(self._element(normal, "vector", "contact plane").name)[0])
        else:
            n = _vec3(normal, "contact: normal")
            nrm = sp.sqrt(n.dot(n))
            if nrm.is_zero:
                raise MechanismError(f"{self.name}: contact: the normal {tuple(normal)!r} has "
                                     "zero length")
            n = n / nrm
        return n.dot(P - O)
