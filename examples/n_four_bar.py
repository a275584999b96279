"""N four-bar mechanism (A Coruña MBS benchmark A02); N = 2 is the IFToMM double four-bar.

2N + 1 uniform bars of L = 1 m, m = 1 kg, I = mL²/12, g = 9.81 m/s² along −y.  Vertical bars V0…VN
are pinned to the ground at x = 0, 1, …, N; couplers C1…CN join their tops at y = 1.  Each bar has
the coordinates (x, y, θ) of its centre and its points A (−L/2, 0), B (L/2, 0) on its body x axis;
the vertical bars start at θ = π/2 (A at the ground pivot), the couplers at θ = 0.
Initial velocities for a top speed v0 (default 1 m/s, along +x): vertical bars
(ẋ, ẏ, θ̇) = (v0/2, 0, −v0/L), couplers (v0, 0, 0).  B0 (outputs ``B0.x``, ``B0.y``, ``B0.vx``,
``B0.vy``) is the top of the first vertical bar.

The mechanism passes configurations (all bars horizontal) where the constraint Jacobian loses
rank by N: the recommended ``rank_tol`` stays small (1e-10, see docs/method.md) so the mechanism
keeps one degree of freedom through them.  3(2N + 1) coordinates, 6N + 2 constraint rows.
"""
import sympy as sp

import symgen
from symgen.loader import integer_option
from symgen.mechanics import PlanarSystem

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=1e-2, t_end=20.0, rank_tol=1e-10)


def build(N: int, name: str, v0: float = 1.0, L: float = 1.0) -> PlanarSystem:
    """The PlanarSystem of the N four-bar (shared with ``double_four_bar``)."""
    N = integer_option("N", N, minimum=1)     # N = 1.5 is an error, not silently 1
    sys = PlanarSystem(name)
    m = sys.parameter("m", 1.0)
    g = sys.parameter("g", 9.81)
    I = m * L ** 2 / 12
    ends = {"A": (-L / 2, 0), "B": (L / 2, 0)}
    V = [sys.body(f"V{i}", mass=m, inertia=I, points=ends, x0=(i * L, L / 2, sp.pi / 2),
                  v0=(v0 / 2, 0, -v0 / L)) for i in range(N + 1)]
    C = [sys.body(f"C{i}", mass=m, inertia=I, points=ends, x0=((i - 0.5) * L, L, 0),
                  v0=(v0, 0, 0)) for i in range(1, N + 1)]
    for i in range(N + 1):
        sys.revolute("ground", (i * L, 0), V[i], "A", name=f"O{i}")
    for i in range(N):
        sys.revolute(V[i], "B", C[i], "A", name=f"B{i}_left")
        sys.revolute(V[i + 1], "B", C[i], "B", name=f"B{i + 1}_right")
    sys.gravity(g)
    sys.output_point(V[0], "B", name="B0")
    return sys


def model(N: int = 40, v0: float = 1.0, **params) -> symgen.Model:
    """The N four-bar; keyword arguments override parameters (``m``, ``g``)."""
    N = integer_option("N", N, minimum=1)
    sys = build(N, "n_four_bar", v0=v0)
    return sys.model(params=params, settings=SETTINGS,
                     description=f"N four-bar mechanism, N = {N} (A Coruña A02)")
