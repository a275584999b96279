"""Planar slider-crank swinging under gravity whose slider strikes an end stop: the impact example.

The slider-crank of ``slider_crank.py`` (crank O–A, r = 0.2 m; rod A–B, l = 0.6 m; slider B on
the x axis through O) with the crank free instead of driven: one degree of freedom.  Gravity
9.81 m/s² along −y swings crank and rod like a pendulum about φ = −π/2 (the slider's weight does
no work); the slider's travel is limited by an end stop, a prismatic joint limit B.x ≥ x_stop
(``limit("slide", lower=x_stop, e=e)``: the event ``slide.lower``) that it strikes with Newton's
restitution law, coefficient e (docs/events.md "Impacts").  Each impact takes the kinetic energy
½ m(φ) (1 − e²) φ̇⁻² (m(φ) the mechanism's inertia reduced to the crank angle); between impacts the
energy is kept, so the crank comes back to the stop at e times the speed it left: 4 impacts in the
5 s, the swing tending to the one that just touches the stop.

Parameters: m1 = 1 kg, m2 = 2 kg, m3 = 3 kg, I3 = 0.01 kg m², g = 9.81 m/s², x_stop = 0.5 m;
the model() option ``e`` = 0.5 (a number in [0, 1]: ``--param e=0.8``).
Outputs: the slider position and velocity ``B.x``, ``B.vx``, the crank angle ``phi``.
At t = 0 the crank is at rest at φ0 = 0.5 rad above +x, the slider at r cos φ0 + √(l² − r² sin² φ0).
The drawing shows the slider as a block to the right of B and the stop as a bar at x_stop.
"""
import sympy as sp

import symgen
from symgen.mechanics import PlanarSystem

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=5e-3, t_end=5.0)

R_CRANK, L_ROD, PHI0 = 0.2, 0.6, 0.5
BLOCK = (0.08, 0.04)                # the slider block's length and height (the drawing only)


def model(e: float = 0.5, **params) -> symgen.Model:
    r, l, p0 = R_CRANK, L_ROD, sp.Rational(PHI0)     # (the start exact: the builder rounds it)
    xa, ya = r * sp.cos(p0), r * sp.sin(p0)
    xb = xa + sp.sqrt(l * l - ya * ya)
    psi = -sp.asin(ya / l)                                  # the rod's angle
    sys = PlanarSystem("slider_crank_stop")
    m1 = sys.parameter("m1", 1.0)
    m2 = sys.parameter("m2", 2.0)
    m3 = sys.parameter("m3", 3.0)
    I3 = sys.parameter("I3", 0.01)
    g = sys.parameter("g", 9.81)
    x_stop = sys.parameter("x_stop", 0.5)
    crank = sys.body("crank", mass=m1, inertia=m1 * r ** 2 / 12,
                     points={"O": (-r / 2, 0), "A": (r / 2, 0)}, x0=(xa / 2, ya / 2, p0))
    rod = sys.body("rod", mass=m2, inertia=m2 * l ** 2 / 12,
                   points={"A": (-l / 2, 0), "B": (l / 2, 0)},
                   x0=((xa + xb) / 2, ya / 2, psi))
    w, h = BLOCK
    slider = sys.body("slider", mass=m3, inertia=I3, x0=(xb, 0, 0),
                      points={"c1": (0, -h / 2), "c2": (w, -h / 2), "c3": (w, h / 2),
                              "c4": (0, h / 2)})
    sys.revolute("ground", (0, 0), crank, "O", name="O")
    sys.revolute(crank, "A", rod, "A", name="A")
    sys.revolute(rod, "B", slider, (0, 0), name="B")
    sys.prismatic("ground", (0, 0), slider, (0, 0), axis=(1, 0), name="slide")
    sys.limit("slide", lower=x_stop, e=e)
    sys.gravity(g)
    sys.output("B.x", slider.x, unit="m")
    sys.output("B.vx", slider.x_dot, unit="m/s")
    sys.output("phi", crank.theta, unit="rad")
    mdl = sys.model(params=params, settings=SETTINGS, description=__doc__.strip().splitlines()[0])
    stop = (("stop.bottom", (x_stop, -h)), ("stop.top", (x_stop, h)))
    return mdl.replace(drawing=(*mdl.drawing, stop))
