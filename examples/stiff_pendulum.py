"""The stiff pendulum of Fernández de Bustos et al. (Meccanica 2022), Sec. 3.

A point mass m on a massless truss of length L, pivoted at the origin, gravity g along −y, driven
by the torque T = T0 sin(wbar t).  Constrained form of the paper (Eq. 24): the coordinates
(x, y, θ) of the mass, zero rotational inertia (M = diag(m, m, 0) is singular; the reduced mass
is not), and two revolute constraint rows pinning the truss end to the origin.  θ = 0 hangs down.

Parameters (defaults from the paper): m = 1 kg, L = 1 m, g = 9.8 m/s², T0 = 0.1 N m,
wbar = 0.1 rad/s.  T0 is raised to 5–9 N m for the amplitude study.
"""
import sympy as sp

import symgen
from symgen.mechanics import PlanarSystem

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=0.1, t_end=100.0)


def model(**params) -> symgen.Model:
    """The stiff pendulum; keyword arguments override parameter defaults (e.g. ``T0=9``)."""
    sys = PlanarSystem("stiff_pendulum")
    m = sys.parameter("m", 1.0)
    L = sys.parameter("L", 1.0)
    g = sys.parameter("g", 9.8)
    T0 = sys.parameter("T0", 0.1, unit="N·m")
    wbar = sys.parameter("wbar", 0.1, unit="rad/s")
    bob = sys.body("pendulum", mass=m, inertia=0, points={"pivot": (0, L)}, x0=(0, -L, 0))
    sys.revolute("ground", (0, 0), bob, "pivot", name="pivot")
    sys.gravity(g)
    sys.torque(bob, T0 * sp.sin(wbar * symgen.t), name="drive_torque")
    sys.output("theta", bob.theta, unit="rad")
    return sys.model(params=params, settings=SETTINGS, description=__doc__.strip().splitlines()[0])
