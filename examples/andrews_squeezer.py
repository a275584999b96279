"""Andrews' squeezing mechanism (seven bodies), built from bodies and joints in (x, y, θ).

Data: Test Set for IVP Solvers (Mazzia & Magherini), problem ``andrews`` (after Schiehlen, and
Hairer & Wanner, Solving ODEs II, VII.7); body geometry after PyMbs ``examples/misc/andrews.py``.
The paper's Tables 1–2 have typos in the masses; these are the Test Set values.

Each body K1…K7 has its own frame (origin at a joint, rotating with the joint angles as in PyMbs);
its coordinates (x, y, θ) are those of its centre of mass (so M is constant), and its points are
the PyMbs points shifted by the centre of mass.  Ten revolute joints (20 rows, 21 coordinates,
one degree of freedom): O–K1, K1–K2 (joint F), B–K3, A–K5, A–K7, K2–K3, K4–K3 and K6–K3 at K3's
point C, K5–K4, K7–K6.  A spring (c0, l0) pulls K3's spring point towards C = (xc, yc); the torque
mom drives K1.  No gravity.

Outputs: the Test Set's seven angles (β, Θ, γ, Φ, δ, Ω, ε, not reduced modulo 2π) and the position
``F.x``, ``F.y`` of joint F between K1 and K2.  Masses, inertias, c0, l0 and mom are parameters;
the geometry is fixed (the consistent initial angles depend on it).
"""
import mpmath

import symgen
from symgen.mechanics import PlanarSystem

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=1e-5, t_end=0.03)

MASSES = dict(m1=0.04325, m2=0.00365, m3=0.02373, m4=0.00706, m5=0.07050, m6=0.00706, m7=0.05498)
INERTIAS = dict(I1=2.194e-6, I2=4.410e-7, I3=5.255e-6, I4=5.667e-7, I5=1.169e-5, I6=5.667e-7,
                I7=1.912e-5)
GEOMETRY = dict(xa="-0.06934", ya="-0.00227", xb="-0.03635", yb="0.03273", xc="0.014", yc="0.072",
                d="28e-3", da="115e-4", e="2e-2", ea="1421e-5", rr="7e-3", ra="92e-5", ss="35e-3",
                sa="1874e-5", sb="1043e-5", sc="18e-3", sd="2e-2", ta="2308e-5", tb="916e-5",
                u="4e-2", ua="1228e-5", ub="449e-5", zf="2e-2", zt="4e-2", fa="1421e-5")
FORCE = dict(c0=4530.0, l0=0.07785, mom=0.033)

#: Consistent initial angles of the Test Set (30 digits as published); velocities are zero.
ANGLES0 = dict(
    beta="-0.0617138900142764496358948458001", Theta="0",
    gamma="0.455279819163070380255912382449", Phi="0.222668390165885884674473185609",
    delta="0.487364979543842550225598953530", Omega="-0.222668390165885884674473185609",
    epsilon="1.23054744454982119249735015568")
ANGLE_NAMES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def _frames(angles, G):
    """Origins and orientations of the PyMbs body frames K1…K7 from the seven angles (mpmath)."""
    a = {k: mpmath.mpf(v) for k, v in angles.items()}
    rot = lambda th, v: (mpmath.cos(th) * v[0] - mpmath.sin(th) * v[1],  # noqa: E731
                         mpmath.sin(th) * v[0] + mpmath.cos(th) * v[1])
    add = lambda p, q: (p[0] + q[0], p[1] + q[1])  # noqa: E731
    th = {1: a["beta"], 2: a["beta"] + a["Theta"], 3: a["gamma"], 4: a["Phi"] + a["delta"],
          5: a["delta"], 6: a["Omega"] + a["epsilon"], 7: a["epsilon"]}
    A, B = (G["xa"], G["ya"]), (G["xb"], G["yb"])
    o1 = (mpmath.mpf(0), mpmath.mpf(0))
    o2 = add(o1, rot(th[1], (G["rr"], 0)))
    o3 = B
    C = add(o3, rot(th[3], (0, -G["ss"])))
    return th, {1: o1, 2: o2, 3: o3, 4: C, 5: A, 6: C, 7: A}


def model(**params) -> symgen.Model:
    g = {k: float(v) for k, v in GEOMETRY.items()}
    sys = PlanarSystem("andrews_squeezer")
    m = {k: sys.parameter(k, v) for k, v in MASSES.items()}
    I = {k: sys.parameter(k, v) for k, v in INERTIAS.items()}
    c0, l0, mom = (sys.parameter(k, v) for k, v in FORCE.items())

    # PyMbs body data: centre of mass and points in each frame
    com = {1: (g["ra"], 0), 2: (-g["da"], 0), 3: (g["sb"], -g["sa"]), 4: (0, g["ea"]),
           5: (g["ta"], g["tb"]), 6: (-g["fa"], 0), 7: (-g["ua"], -g["ub"])}
    pts = {1: {"O": (0, 0), "F": (g["rr"], 0)},
           2: {"F": (0, 0), "C": (-g["d"], 0)},
           3: {"B": (0, 0), "C": (0, -g["ss"]), "D": (g["sd"], -g["sc"])},
           4: {"C": (0, 0), "E": (0, g["e"])},
           5: {"A": (0, 0), "E": (g["zt"], 0)},
           6: {"C": (0, 0), "G": (-g["zf"], 0)},
           7: {"A": (0, 0), "G": (0, -g["u"])}}
    # the start from PyMbs' angles at 40 digits, rounded once; the caller's mpmath precision is
    # left as it was (setting mp.dps here changed every later sympy Float of the process)
    with mpmath.workdps(40):
        th, org = _frames(ANGLES0, {k: mpmath.mpf(v) for k, v in GEOMETRY.items()})
        x0 = {}
        for i in range(1, 8):
            cx, cy = com[i]
            c, s = mpmath.cos(th[i]), mpmath.sin(th[i])
            x0[i] = (float(org[i][0] + c * cx - s * cy), float(org[i][1] + s * cx + c * cy),
                     float(th[i]))
    bodies = {}
    for i in range(1, 8):
        cx, cy = com[i]
        local = {name: (px - cx, py - cy) for name, (px, py) in pts[i].items()}
        bodies[i] = sys.body(f"K{i}", mass=m[f"m{i}"], inertia=I[f"I{i}"], points=local,
                             x0=x0[i])
    K = bodies
    sys.revolute("ground", (0, 0), K[1], "O", name="O")
    sys.revolute(K[1], "F", K[2], "F", name="F")
    sys.revolute("ground", (g["xb"], g["yb"]), K[3], "B", name="B")
    sys.revolute("ground", (g["xa"], g["ya"]), K[5], "A", name="A5")
    sys.revolute("ground", (g["xa"], g["ya"]), K[7], "A", name="A7")
    sys.revolute(K[2], "C", K[3], "C", name="C2")
    sys.revolute(K[4], "C", K[3], "C", name="C4")
    sys.revolute(K[6], "C", K[3], "C", name="C6")
    sys.revolute(K[5], "E", K[4], "E", name="E")
    sys.revolute(K[7], "G", K[6], "G", name="G")
    sys.spring(K[3], "D", "ground", (g["xc"], g["yc"]), c0, 0, l0, name="spring")
    sys.torque(K[1], mom, name="mom")

    t1, t2, t3, t4, t5, t6, t7 = (K[i].theta for i in range(1, 8))
    for name, expr in zip(ANGLE_NAMES, (t1, t2 - t1, t3, t4 - t5, t5, t6 - t7, t7)):
        sys.output(name, expr, unit="rad")
    F = sys.position(K[1], "F")
    sys.output("F.x", F[0], unit="m")
    sys.output("F.y", F[1], unit="m")
    return sys.model(params=params, settings=SETTINGS, description=__doc__.strip().splitlines()[0])
