"""Double pendulum with torsional spring-dampers at both joints (paper Sec. 6, Fig. 14).

The paper uses the double pendulum of Negrut et al. (2007), whose numbers were not available;
**the parameters here are this project's own** (see ``docs/benchmarks.md`` §2):
two uniform bars, L = 1 m, m = 1 kg, I = mL²/12 about the centre, g = 9.81 m/s² along −y;
revolute joints ground–bar 1 at the origin and bar 1–bar 2 at bar 1's free end; a torsional
spring-damper at each joint on the relative angle, k = 1000 N m/rad, c = 1 N m s/rad, free angle 0
with both bars hanging straight down.  Start: both bars horizontal (pointing +x), at rest; 10 s.

Coordinates (x, y, θ) of each bar's centre; θ = 0 is hanging down (the bar runs along its body
−y axis), so the start is θ₁ = θ₂ = π/2.
"""
import sympy as sp

import symgen
from symgen.mechanics import PlanarSystem

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=1e-3, t_end=10.0)


def model(**params) -> symgen.Model:
    sys = PlanarSystem("double_pendulum")
    L = sys.parameter("L", 1.0)
    m = sys.parameter("m", 1.0)
    g = sys.parameter("g", 9.81)
    k = sys.parameter("k", 1000.0)
    c = sys.parameter("c", 1.0)
    I = m * L ** 2 / 12
    top, bottom = (0, L / 2), (0, -L / 2)
    pi2 = sp.pi / 2
    bar1 = sys.body("bar1", mass=m, inertia=I, points={"top": top, "bottom": bottom},
                    x0=(L / 2, 0, pi2))
    bar2 = sys.body("bar2", mass=m, inertia=I, points={"top": top, "bottom": bottom},
                    x0=(3 * L / 2, 0, pi2))
    sys.revolute("ground", (0, 0), bar1, "top", name="joint1")
    sys.revolute(bar1, "bottom", bar2, "top", name="joint2")
    sys.torsional_spring("ground", bar1, k, c, name="spring1")
    sys.torsional_spring(bar1, bar2, k, c, name="spring2")
    sys.gravity(g)
    sys.output_point(bar2, "bottom", name="tip")
    return sys.model(params=params, settings=SETTINGS, description=__doc__.strip().splitlines()[0])
