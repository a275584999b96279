"""Bricard mechanism (A Coruña MBS benchmark A04 / IFToMM): redundant constraints.

Five rods, L = 1 m, m = 1 kg, square section 0.1 × 0.1 m (brick inertia: m(a²+a²)/12 about the rod
axis, m(L²+a²)/12 across), g = 9.81 m/s² along −y, released from rest.  Joint points
P0 (0,0,0), P1 (1,0,0), P2 (1,−1,0), P3 (1,−1,1), P4 (0,−1,1), P5 (0,0,1); rods P0→P1, P1→P2,
P2→P3, P3→P4, P4→P5; the ground closes the loop between P5 and P0.  Revolute axes at P0…P5:
y, z, x, y, z, x.  Grübler counts 0 degrees of freedom, the actual mobility is 1: the constraint
Jacobian is rank-deficient everywhere (24 coordinates, 24 rows, rank 23).

Natural coordinates (``symgen.mechanics.spatial``): the moving points P1…P4 and the unit vectors
u1…u4 along the hinge axes (24 coordinates); P0, P5, u0, u5 are fixed.  Each rod is made of its
two end points and the two hinge axes at its ends, so adjacent rods share a point and an axis:
that *is* the revolute joint.  The rank deficiency is structural: on the constraint manifold the
smallest singular value of H is round-off, while at Newton iterates off the manifold it is of the
size of the residual; the recommended ``rank_tol = 1e-6`` treats both as rank 23 (with 1e-10 the
predictor steps count rank 24 and Newton needs ~3.3 instead of 2 iterations; same solution).
Outputs ``rod2.mid.x`` … ``rod2.mid.vz``: the midpoint of rod 2.
"""
import symgen
from symgen.mechanics import SpatialSystem

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=1e-2, t_end=10.0, rank_tol=1e-6)

POINTS = [(0, 0, 0), (1, 0, 0), (1, -1, 0), (1, -1, 1), (0, -1, 1), (0, 0, 1)]
AXES = [(0, 1, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0)]


def model(**params) -> symgen.Model:
    sys = SpatialSystem("bricard")
    m = sys.parameter("m", 1.0)
    g = sys.parameter("g", 9.81)
    L, a = 1.0, 0.1
    for i, (p, u) in enumerate(zip(POINTS, AXES)):
        if i in (0, 5):
            sys.ground_point(f"P{i}", p)
            sys.ground_vector(f"u{i}", u)
        else:
            sys.point(f"P{i}", p)
            sys.vector(f"u{i}", u)
    for i in range(1, 6):
        p0, p1 = POINTS[i - 1], POINTS[i]
        axis = [abs(p1[k] - p0[k]) for k in range(3)]     # the rod's direction (a unit axis here)
        I_axial, I_cross = m * (a * a + a * a) / 12, m * (L * L + a * a) / 12
        inertia = [I_axial if axis[k] else I_cross for k in range(3)]
        mid = tuple((p0[k] + p1[k]) / 2 for k in range(3))
        sys.body(f"rod{i}", mass=m, inertia=inertia, com=mid,
                 points=[f"P{i - 1}", f"P{i}"], vectors=[f"u{i - 1}", f"u{i}"],
                 markers={"mid": mid})
    sys.gravity(g)
    sys.output_point("rod2", "mid")
    return sys.model(params=params, settings=SETTINGS, description=__doc__.strip().splitlines()[0])
