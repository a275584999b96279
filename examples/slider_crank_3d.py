"""Spatial slider-crank (IFToMM benchmark library: spatial rigid slider-crank mechanism).

A crank A–B (0.08 m, 0.12 kg, centre of mass at the pivot A = (0, 0.1, 0.12), inertia
diag(1e-4, 1e-5, 1e-4) in its axes x, y, z = along the pivot axis, across, along the crank) turns
about the global x axis; a connecting rod B–C (0.3 m, 0.5 kg, centre of mass at mid-length,
inertia diag(4e-4, 4e-3, 4e-3) in rod axes, x along the rod) is joined to the crank by a spherical
joint at B and to a slider (2 kg) by a universal joint at C; the slider moves along the x axis.
Gravity 9.81 m/s² along −z.  At t = 0: B = (0, 0.1, 0.2), C = (0.2, 0, 0), crank angular
velocity 6 rad/s about x, slider velocity 0.24 m/s, rod angular velocity (144, −72, 60)/85 rad/s.

The rod's axes are those of Exudyn's model of the benchmark (its ``slidercrank3Dbenchmark``): x
from B to C, z the part of A's position vector across the rod, y = z × x.  The universal joint's
cross has one arm along the slider's line (x) and the other along the rod's y axis; they keep their
initial angle (104.4°: that is the joint Exudyn's GenericJoint with constrained axes
[1,1,1,0,0,1] models, and the initial rod angular velocity above is consistent with it,
d/dt(x·y_rod) = 0).

Natural coordinates (``symgen.mechanics.spatial``): B, the crank's unit vector ``cy``, C, the rod's
unit vectors ``ry``, ``rz`` (15 coordinates, 14 rows, one degree of freedom); A, the origin O and
the x axis ``ex`` are fixed.  The slider carries ``ex`` (it cannot turn).  Conservative: the
energy is constant.  Outputs ``slider.C.x`` (…) and ``crank_angle`` (atan2 of the crank).

Accuracy: with the paper's step the slider's error at h = 1e-3 is ~100× generalized-α's; the
null-space stepper's ``metric="mass"`` brings it below (docs/spatial-accuracy.md).
"""
import numpy as np
import sympy as sp

import symgen
from symgen.mechanics import SpatialSystem

SETTINGS = dict(method="nullspace", scheme="trapezoidal", dt=1e-3, t_end=5.0)

A = np.array([0.0, 0.1, 0.12])
B = np.array([0.0, 0.1, 0.2])
C = np.array([0.2, 0.0, 0.0])
OMEGA_CRANK = np.array([6.0, 0.0, 0.0])
OMEGA_ROD = np.array([144.0, -72.0, 60.0]) / 85.0


def rod_axes() -> np.ndarray:
    """Columns x, y, z of the rod's axes at t = 0 (module docstring)."""
    x = (C - B) / np.linalg.norm(C - B)
    z = A - np.dot(A, x) * x                # Gram–Schmidt of the position of A against x
    z /= np.linalg.norm(z)
    return np.column_stack([x, np.cross(z, x), z])


def model(**params) -> symgen.Model:
    R = rod_axes()
    ry, rz = R[:, 1], R[:, 2]
    sys = SpatialSystem("slider_crank_3d")
    g = sys.parameter("g", 9.81)
    sys.ground_point("A", A)
    sys.ground_point("O", (0, 0, 0))
    sys.ground_vector("ex", (1, 0, 0))
    sys.point("B", B, velocity=np.cross(OMEGA_CRANK, B - A))
    sys.vector("cy", (0, 1, 0), velocity=np.cross(OMEGA_CRANK, (0, 1, 0)))
    vC = np.array([0.24, 0.0, 0.0])
    sys.point("Br", B, velocity=np.cross(OMEGA_CRANK, B - A))
    sys.point("C", C, velocity=vC)
    sys.vector("ry", ry, velocity=np.cross(OMEGA_ROD, ry))
    sys.vector("rz", rz, velocity=np.cross(OMEGA_ROD, rz))
    crank = sys.body("crank", mass=0.12, inertia=(1e-4, 1e-5, 1e-4), com=A,
                     points=["A", "B"], vectors=["ex", "cy"])
    I_rod = R @ np.diag([4e-4, 4e-3, 4e-3]) @ R.T
    rod = sys.body("rod", mass=0.5, inertia=I_rod.tolist(), com=(B + C) / 2,
                   points=["Br", "C"], vectors=["ry", "rz"])
    slider = sys.body("slider", mass=2.0, inertia=0, com=C, points=["C"], vectors=["ex"])
    sys.spherical(crank, "B", rod, "Br", name="B")
    sys.universal(slider, "C", "ex", rod, "C", "ry", name="C")
    sys.prismatic("ground", "O", slider, "C", axis=(1, 0, 0), name="slide")
    sys.gravity(g, direction=(0, 0, -1))
    sys.output_point(slider, "C")
    sys.output("crank_angle", sp.atan2(sp.Symbol("B.z") - A[2], sp.Symbol("B.y") - A[1]),
               unit="rad")
    return sys.model(params=params, settings=SETTINGS, description=__doc__.strip().splitlines()[0])
