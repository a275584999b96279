"""The drawing a :class:`~symgen.mechanics.PlanarSystem` records for ``Model.drawing``: where
joints and forces attach, body by body, and the polylines made from them when the model is
assembled (see :mod:`symgen.model_drawing` for the format, :mod:`symgen.animation` for the pictures).
"""
from __future__ import annotations

import sympy as sp

__all__ = ["PlanarDrawing"]


class PlanarDrawing:
    """Attachment points recorded while a planar system is built (body name → point name →
    position in body coordinates), turned into polylines by :meth:`polylines`."""

    def __init__(self):
        self.attached: dict[str, dict[str, sp.Matrix]] = {}

    def attach(self, body: str, point: str, local: sp.Matrix) -> None:
        """A joint or force attaches at ``local`` (body coordinates) of ``body``; the first name
        given to a place is kept."""
        self.attached.setdefault(body, {}).setdefault(point, local)

    def polylines(self, bodies, ground: str) -> list:
        """Per body its reference point, named points and attachment points (a closed polygon
        from three distinct points on), named ``<body>.<point>``; a marker per ground
        attachment."""
        lines = []
        for b in bodies:
            pts = {"origin": sp.zeros(2, 1)}
            pts.update(b.points)
            pts.update(self.attached.get(b.name, {}))
            uniq, seen = [], []
            for pname, local in pts.items():
                if any(sp.expand(local[0] - o[0]) == 0 and sp.expand(local[1] - o[1]) == 0
                       for o in seen):
                    continue
                seen.append(local)
                r = b.at(local)[1]
                uniq.append((f"{b.name}.{pname}", (r[0], r[1])))
            if len(uniq) >= 3:
                uniq.append(uniq[0])
            lines.append(uniq)
        for pname, local in self.attached.get(ground, {}).items():
            lines.append([(f"{ground}.{pname}", (local[0], local[1]))])
        return lines
