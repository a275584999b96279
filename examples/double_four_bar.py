"""Double four-bar mechanism (IFToMM benchmark): the N four-bar with N = 2.

Five uniform bars, L = 1 m, m = 1 kg, I = mL²/12, g = 9.81 m/s² along −y; centres and angles
(0, 0.5, π/2), (0.5, 1, 0), (1, 0.5, π/2), (1.5, 1, 0), (2, 0.5, π/2); vertical bars pinned to the
ground at x = 0, 1, 2.  Initial velocities (v0 = 1 m/s): vertical bars (0.5 v0, 0, −v0/L), couplers
(v0, 0, 0).  Outputs ``B0.x``, ``B0.y``, ``B0.vx``, ``B0.vy``: the top of the first vertical bar.
The mechanism passes singular (horizontal) configurations where H loses rank.  Bodies are named
V0, V1, V2 (vertical) and C1, C2 (couplers); see ``n_four_bar`` for the construction.
"""
import symgen
from symgen.examples.n_four_bar import build

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=1e-2, t_end=10.0, rank_tol=1e-10)


def model(v0: float = 1.0, **params) -> symgen.Model:
    """The double four-bar; keyword arguments override parameters (``m``, ``g``)."""
    sys = build(2, "double_four_bar", v0=v0)
    return sys.model(params=params, settings=SETTINGS,
                     description="Double four-bar mechanism (IFToMM benchmark)")
