"""Mechanism builders: describe bodies, joints and forces; get a :class:`symgen.Model`.

- :class:`PlanarSystem` (``symgen.mechanics.planar``): planar rigid bodies in (x, y, θ).
- :class:`SpatialSystem` (``symgen.mechanics.spatial``): spatial rigid bodies in natural
  coordinates (points and unit vectors).
"""
from ._common import (DuplicateNameError, InconsistentInitialStateError,  # noqa: F401
                      InitialStateProjectionWarning, MechanismError, SingularMassError,
                      UnknownElementError)
from .planar import GROUND, Body, PlanarSystem  # noqa: F401

from .spatial import NeglectedInertiaWarning, SpatialBody, SpatialSystem  # noqa: F401

__all__ = ["PlanarSystem", "Body", "GROUND", "SpatialSystem", "SpatialBody", "MechanismError",
           "UnknownElementError", "DuplicateNameError", "SingularMassError",
           "InconsistentInitialStateError", "InitialStateProjectionWarning",
           "NeglectedInertiaWarning"]
