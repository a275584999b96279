"""Planar slider-crank with the crank driven at constant speed: the rheonomic example.

Crank O–A (length r = 0.2 m), connecting rod A–B (l = 0.6 m), slider B on the x axis through O.
The crank angle is prescribed, φ(t) = omega·t (a driven revolute joint, so q depends on t and
q̇, q̈ carry ∂/∂t terms); with the drive the mechanism has no free degree of freedom, and the
simulation computes the motion and the driving reaction (the multiplier of the drive row).
Gravity 9.81 m/s² along −y.  Crank and rod are uniform bars (I = m L²/12) with coordinates at their
centres; the slider is a block of mass m3 (inertia I3) whose rotation the prismatic joint locks.
Parameters: m1 = 1 kg, m2 = 2 kg, m3 = 3 kg, I3 = 0.01 kg m², omega = 2π rad/s, g = 9.81.
Outputs: the slider position and velocity ``B.x``, ``B.vx`` and the crank angle ``phi``.

At t = 0 the crank lies along +x (φ = 0): A = (r, 0), B = (r + l, 0); crank tip velocity
(0, omega r), rod angular velocity −omega r / l, slider at rest.
"""
import symgen
from symgen.mechanics import PlanarSystem

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=1e-3, t_end=2.0)

R_CRANK, L_ROD = 0.2, 0.6


def model(**params) -> symgen.Model:
    r, l = R_CRANK, L_ROD
    sys = PlanarSystem("slider_crank")
    m1 = sys.parameter("m1", 1.0)
    m2 = sys.parameter("m2", 2.0)
    m3 = sys.parameter("m3", 3.0)
    I3 = sys.parameter("I3", 0.01)
    omega = sys.parameter("omega", 6.283185307179586)
    g = sys.parameter("g", 9.81)
    crank = sys.body("crank", mass=m1, inertia=m1 * r ** 2 / 12,
                     points={"O": (-r / 2, 0), "A": (r / 2, 0)},
                     x0=(r / 2, 0, 0), v0=(0, omega * r / 2, omega))
    rod = sys.body("rod", mass=m2, inertia=m2 * l ** 2 / 12,
                   points={"A": (-l / 2, 0), "B": (l / 2, 0)},
                   x0=(r + l / 2, 0, 0), v0=(0, omega * r / 2, -omega * r / l))
    slider = sys.body("slider", mass=m3, inertia=I3, x0=(r + l, 0, 0))
    sys.driven_revolute("ground", (0, 0), crank, "O", omega * symgen.t, name="crank_drive")
    sys.revolute(crank, "A", rod, "A", name="A")
    sys.revolute(rod, "B", slider, (0, 0), name="B")
    sys.prismatic("ground", (0, 0), slider, (0, 0), axis=(1, 0), name="slide")
    sys.gravity(g)
    sys.output("B.x", slider.x, unit="m")
    sys.output("B.vx", slider.x_dot, unit="m/s")
    sys.output("phi", crank.theta, unit="rad")
    return sys.model(params=params, settings=SETTINGS, description=__doc__.strip().splitlines()[0])
