"""Spatial slider-crank (IFToMM benchmark library: spatial rigid slider-crank mechanism).

A crank A–B (0.08 m, 0.12 kg, centre of mass at the pivot A = (0, 0.1, 0.12), inertia
diag(1e-4, 1e-5, 1e-4) in its axes x, y, z = along the pivot axis, across, along the crank) turns
about the global x axis; a connecting rod B–C (0.3 m, 0.5 kg, centre of mass at mid-length,
inertia diag(4e-4, 4e-3, 4e-3) in rod axes, x along the rod) is joined to the crank by a spherical
joint at B and to a slider (2 kg) by a universal joint at C; the slider moves along the x axis.
Gravity 9.81 m/s² along −z.  At t = 0: B = (0, 0.1, 0.2), C = (0.2, 0, 0), crank angular
velocity 6 rad/s about x, slider velocity 0.24 m/s, rod angular velocity (144, −72, 60)/85 rad/s.

The rod's axes are those of Exudyn's test model of the mechanism (its ``sliderCrank3Dtest``): x
from B to C, z the part of A's position vector across the rod, y = z × x.  The universal joint's
cross has one arm along the slider's line (x) and the other along the rod's y axis; they keep their
initial angle (104.4°: that is the joint Exudyn's GenericJoint with constrained axes
[1,1,1,0,0,1] models, and the initial rod angular velocity above is consistent with it,
d/dt(x·y_rod) = 0).

``model(iftomm=True)`` is the benchmark's own data: the crank's centre of mass at mid-length with
inertia diag(1e-4, 1e-4, 1e-5) about it (z along the crank), the rod's z axis the part of B's
position vector across the rod (so the cross's arms x and y_rod are perpendicular), rod angular
velocity (1.92, −0.96, 0.48) rad/s.  It reproduces the library's published solution of the
A Coruña group (slider x(0.5) = 0.184952803 m, x(1) = 0.211754668 m) to 1.7e-7 m and 3.3e-5 m
(converged steps; the published solutions differ among themselves by up to 7.4e-4 m at 1 s;
docs/spatial-accuracy.md).

Natural coordinates (``symgen.mechanics.spatial``): B, the crank's unit vector ``cy``, C, the rod's
unit vectors ``ry``, ``rz`` (15 coordinates, 14 rows, one degree of freedom); A, the origin O and
the x axis ``ex`` are fixed.  The slider carries ``ex`` (it cannot turn).  Conservative: the
energy is constant.  Outputs ``slider.C.x`` (…) and ``crank_angle`` (atan2 of the crank).

Accuracy: with the paper's step (``preset="paper"``) the slider's error at h = 1e-3 is ~100×
generalized-α's; the recommended settings (``chart="symmetric"``, ``metric="mass"``: the Newmark
relations taken M-orthogonally, with the reaction correction; symgen's default step too) bring it
to 1/60 of it, fourth order, and the energy drift to a residue ∝ h⁴, 1 % of the uncorrected one
at h = 1e-3 (docs/spatial-accuracy.md).
"""
import math

import numpy as np
import sympy as sp

import symgen
from symgen.mechanics import SpatialSystem

#: the symmetric chart with the mass metric (and its reaction correction): at h = 1e-3 the slider's
#: error is ~5000× smaller than with the paper's step, and the energy drift ~6000× (5e-7 J/s;
#: docs/spatial-accuracy.md)
SETTINGS = dict(method="nullspace", scheme="trapezoidal", dt=1e-3, t_end=5.0, chart="symmetric",
                metric="mass")

A = np.array([0.0, 0.1, 0.12])
B = np.array([0.0, 0.1, 0.2])
C = np.array([0.2, 0.0, 0.0])
OMEGA_CRANK = np.array([6.0, 0.0, 0.0])
OMEGA_ROD = np.array([144.0, -72.0, 60.0]) / 85.0
#: the IFToMM benchmark's rod angular velocity at t = 0 (module docstring)
OMEGA_ROD_IFTOMM = np.array([1.92, -0.96, 0.48])


def _dot(a, b) -> float:
    """a·b in plain Python (math.fsum): BLAS's dot differs in its last bits between CPUs, and
    these numbers are the model's (its hash, its C)."""
    return math.fsum(float(u) * float(v) for u, v in zip(a, b))


def rod_axes(iftomm: bool = False) -> np.ndarray:
    """Columns x, y, z of the rod's axes at t = 0 (module docstring)."""
    x = (C - B) / math.sqrt(_dot(C - B, C - B))
    p = B if iftomm else A
    z = p - _dot(p, x) * x                  # Gram–Schmidt of the position of A (or B) against x
    z /= math.sqrt(_dot(z, z))
    return np.column_stack([x, np.cross(z, x), z])


def model(iftomm: bool = False, **params) -> symgen.Model:
    """The slider-crank with Exudyn's test data, or (``iftomm=True``) the IFToMM benchmark's;
    keyword arguments override parameters (``g``)."""
    R = rod_axes(iftomm)
    ry, rz = R[:, 1], R[:, 2]
    w_rod = OMEGA_ROD_IFTOMM if iftomm else OMEGA_ROD
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
    sys.vector("ry", ry, velocity=np.cross(w_rod, ry))
    sys.vector("rz", rz, velocity=np.cross(w_rod, rz))
    if iftomm:
        crank = sys.body("crank", mass=0.12, inertia=(1e-4, 1e-4, 1e-5), com=(A + B) / 2,
                         points=["A", "B"], vectors=["ex", "cy"])
    else:
        crank = sys.body("crank", mass=0.12, inertia=(1e-4, 1e-5, 1e-4), com=A,
                         points=["A", "B"], vectors=["ex", "cy"])
    D = np.array([4e-4, 4e-3, 4e-3])
    I_rod = [[_dot(R[min(i, j)] * D, R[max(i, j)]) for j in range(3)] for i in range(3)]  # R D Rᵀ
    rod = sys.body("rod", mass=0.5, inertia=I_rod, com=(B + C) / 2,
                   points=["Br", "C"], vectors=["ry", "rz"])
    slider = sys.body("slider", mass=2.0, inertia=0, com=C, points=["C"], vectors=["ex"])
    sys.spherical(crank, "B", rod, "Br", name="B")
    sys.universal(slider, "C", "ex", rod, "C", "ry", name="C")
    sys.prismatic("ground", "O", slider, "C", axis=(1, 0, 0), name="slide")
    sys.gravity(g, direction=(0, 0, -1))
    sys.output_point(slider, "C")
    Bx = sys.symbols("B")[0]                 # B's coordinate symbols
    sys.output("crank_angle", sp.atan2(Bx[2] - A[2], Bx[1] - A[1]), unit="rad")
    return sys.model(params=params, settings=SETTINGS, description=__doc__.strip().splitlines()[0])
