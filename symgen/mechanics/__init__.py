"""Mechanism builders: describe bodies, joints and forces; get a :class:`symgen.Model`.

Planar (``symgen.mechanics.planar``), coordinates ``<body>.x``, ``<body>.y``, ``<body>.theta``::

    sys = PlanarSystem("crank")
    r = sys.parameter("r", 0.2)                       # a Symbol with a default, overridable
    crank = sys.body("crank", mass=1, inertia=0.01, com=(0, 0),
                     points={"O": (-r / 2, 0), "A": (r / 2, 0)}, x0=(r / 2, 0, 0), v0=(0, 0, 0))
    sys.revolute("ground", (0, 0), crank, "O")        # or driven_revolute(..., angle(t))
    sys.gravity(9.81)                                 # potential energy goes into Model.V
    sys.output_point(crank, "A")                      # outputs crank.A.x, .y, .vx, .vy
    model = sys.model(settings=dict(method="nullspace", scheme="fox-goodwin", dt=1e-3, t_end=1))

Joints: ``revolute``, ``driven_revolute``, ``prismatic``, ``driven_prismatic``, ``weld``,
``distance``.  Forces: ``gravity``, ``force`` (any expression of t, x, ẋ, parameters), ``torque``,
``spring`` (translational spring-damper with free length), ``torsional_spring``.  Actuators on a
revolute or prismatic joint: ``servo`` (a clipped PD toward a reference), ``motor`` (a clipped
effort).  Each revolute and prismatic joint's coordinate and its rate are outputs
(``<joint>.angle``, ``<joint>.angle_dot``, ``<joint>.displacement`` …; ``planar_actuators``).

Spatial (``symgen.mechanics.spatial``), natural coordinates ``<point>.x|y|z`` and
``<vector>.x|y|z``: ``point``, ``vector``, ``ground_point``, ``ground_vector``, ``body`` (made of
points and unit vectors; shared names are joints), ``spherical``, ``revolute``, ``gravity``,
``force``, ``spring``, ``output_point``; ``prismatic``, ``cylindrical``, ``planar``, ``universal``,
drives; ``servo`` and ``motor`` on revolute and prismatic joints, whose coordinates are outputs as in
the planar builder (a revolute's rotation from the start, wrapped: ``spatial_coordinates``).

A body may be placed by a rough ``guess=(x, y, θ)`` instead of an exact ``x0``; ``model(fix={...},
xd_fix={...})`` then assembles the start (:func:`symgen.assemble`) with those coordinates or
outputs held.  ``from_sympy`` imports a ``sympy.physics.mechanics`` ``System``, ``KanesMethod`` or
``LagrangesMethod`` with holonomic constraints (see :mod:`symgen.mechanics.from_sympy`).

``model()`` checks the initial state (small constraint violations are projected with an
:class:`InitialStateProjectionWarning`, large ones raise :class:`InconsistentInitialStateError`)
and refuses a singular reduced mass matrix (:class:`SingularMassError`).  Every error is a
:class:`symgen.ModelError` that names the element at fault.
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

from .from_sympy import from_sympy  # noqa: F401,E402

__all__ += ["from_sympy"]
