"""Test models for the steppers, written directly as symgen.Model (no builders), with exactly
consistent initial states computed here in NumPy.

* :func:`stiff_pendulum` — paper Sec. 3 / benchmarks §1: point mass in (x, y, θ), zero rotational
  inertia (M = diag(m, m, 0)), two revolute constraints (Eq. 24), torque T0 sin(ω̄ t) on θ.
* :func:`minimal_pendulum` — the same pendulum in θ only (Eq. 13), m = 0.
* :func:`four_bar` — planar crank-rocker in (x, y, θ) of three uniform bars, gravity; optionally a
  duplicated (redundant) crank–coupler joint.
* :func:`driven_crank_pendulum` — a crank driven at constant speed (rheonomic θ₁ − Ω t = 0) with a
  bar hanging from its tip; plus the minimal-coordinate ODE of the hanging bar for SciPy.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from symgen import Model, coordinates, t
from symgen.reproduce import references

G = 9.8


def stiff_pendulum(T0: float = 0.1, **settings) -> Model:
    (x, y, th), _ = coordinates("x y theta")
    m, L, g, T0s, w = sp.symbols("m L g T0 wbar")
    return Model(
        "stiff_pendulum", [x, y, th], sp.diag(m, m, 0), [0, -m * g, T0s * sp.sin(w * t)],
        q=[x - L * sp.sin(th), y + L * sp.cos(th)],                      # Eq. 24
        V=m * g * y,
        params={m: 1.0, L: 1.0, g: G, T0s: T0, w: 0.1}, x0=[0.0, -1.0, 0.0],
        outputs={"theta": th},
        settings=dict({"method": "nullspace", "scheme": "fox-goodwin", "dt": 0.1, "t_end": 10.0},
                      **settings),
    )


minimal_pendulum = references.minimal_pendulum      # one definition, shared with symgen reproduce


# --- planar four-bar ---------------------------------------------------------------------------
FOUR_BAR = dict(l1=0.4, l2=1.2, l3=0.8, d=1.0, m1=1.0, m2=1.5, m3=1.2, g=9.81)


def _four_bar_angles(th1: float, p=FOUR_BAR) -> tuple[float, float]:
    """Coupler and rocker angles closing the loop for crank angle th1 (rocker pivot at (d, 0))."""
    l1, l2, l3, d = p["l1"], p["l2"], p["l3"], p["d"]
    b = np.array([l1 * np.cos(th1), l1 * np.sin(th1)])
    c = np.array([d, 0.0])
    r = np.linalg.norm(c - b)
    # point E = coupler/rocker joint: intersection of circles (b, l2) and (c, l3), upper branch
    a = (l2**2 - l3**2 + r**2) / (2 * r)
    hgt = np.sqrt(l2**2 - a**2)
    u = (c - b) / r
    e = b + a * u + hgt * np.array([-u[1], u[0]])
    th2 = np.arctan2(e[1] - b[1], e[0] - b[0])
    th3 = np.arctan2(e[1] - c[1], e[0] - c[0])
    return th2, th3


def four_bar_state(th1: float = 1.0, p=FOUR_BAR) -> np.ndarray:
    th2, th3 = _four_bar_angles(th1, p)
    l1, l2, l3, d = p["l1"], p["l2"], p["l3"], p["d"]
    c1 = 0.5 * l1 * np.array([np.cos(th1), np.sin(th1)])
    b1 = 2 * c1
    c2 = b1 + 0.5 * l2 * np.array([np.cos(th2), np.sin(th2)])
    c3 = np.array([d, 0.0]) + 0.5 * l3 * np.array([np.cos(th3), np.sin(th3)])
    return np.array([c1[0], c1[1], th1, c2[0], c2[1], th2, c3[0], c3[1], th3])


def four_bar(duplicate: bool = False, damping: float = 0.0) -> Model:
    """Crank (bar 1, pinned at the origin), coupler (bar 2), rocker (bar 3, pinned at (d, 0)).
    Each bar's coordinates are its centre and angle; the bar runs from A = c − ½l(cos, sin) to
    B = c + ½l(cos, sin).  ``duplicate`` repeats the crank–coupler joint (written A₂ − B₁, the
    negative of the original rows): 10 constraint rows of rank 8."""
    names = []
    for b in ("crank", "coupler", "rocker"):
        names += [f"{b}_x", f"{b}_y", f"{b}_th"]
    xs, vs = coordinates(names)
    P = {k: sp.Symbol(k) for k in FOUR_BAR}
    P["c"] = sp.Symbol("c")
    ls = (P["l1"], P["l2"], P["l3"])
    ms = (P["m1"], P["m2"], P["m3"])
    M = sp.zeros(9, 9)
    f = sp.zeros(9, 1)
    ends = []
    for i in range(3):
        xc, yc, th = xs[3 * i: 3 * i + 3]
        M[3 * i, 3 * i] = M[3 * i + 1, 3 * i + 1] = ms[i]
        M[3 * i + 2, 3 * i + 2] = ms[i] * ls[i] ** 2 / 12
        f[3 * i + 1] = -ms[i] * P["g"]
        half = ls[i] / 2
        ends.append(((xc - half * sp.cos(th), yc - half * sp.sin(th)),
                     (xc + half * sp.cos(th), yc + half * sp.sin(th))))
    f[2] = -P["c"] * vs[2]
    (a1, b1), (a2, b2), (a3, b3) = ends
    q = [a1[0], a1[1],
         b1[0] - a2[0], b1[1] - a2[1],
         b2[0] - b3[0], b2[1] - b3[1],
         a3[0] - P["d"], a3[1]]
    if duplicate:
        q += [a2[0] - b1[0], a2[1] - b1[1]]
    V = sum(ms[i] * P["g"] * xs[3 * i + 1] for i in range(3))
    params = {P[k]: v for k, v in FOUR_BAR.items()}
    params[P["c"]] = damping
    return Model("four_bar_dup" if duplicate else "four_bar", xs, M, f, q=q, V=V, params=params,
                 x0=four_bar_state(), outputs={"crank_angle": xs[2]},
                 settings={"method": "nullspace", "scheme": "trapezoidal", "dt": 1e-2, "t_end": 1.0})


# --- rheonomic: driven crank with a hanging bar ----------------------------------------------
CRANK = dict(R=0.5, L=1.0, m1=2.0, m2=1.0, g=9.81, Omega=2.0)


def driven_crank_pendulum(Omega: float = CRANK["Omega"]) -> Model:
    """Crank (x1, y1, θ1) pinned at its end A₁ to the origin and driven θ₁ = Ω t (rheonomic);
    a uniform bar (x2, y2, θ2) pinned at its end A₂ to the crank tip B₁.  n = 6, m = 5, 1 dof."""
    (x1, y1, th1, x2, y2, th2), vs = coordinates("x1 y1 th1 x2 y2 th2")
    R, L, m1, m2, g, Om = sp.symbols("R L m1 m2 g Omega")
    M = sp.diag(m1, m1, m1 * R**2 / 12, m2, m2, m2 * L**2 / 12)
    f = [0, -m1 * g, 0, 0, -m2 * g, 0]
    a1 = (x1 - R / 2 * sp.cos(th1), y1 - R / 2 * sp.sin(th1))
    b1 = (x1 + R / 2 * sp.cos(th1), y1 + R / 2 * sp.sin(th1))
    a2 = (x2 - L / 2 * sp.cos(th2), y2 - L / 2 * sp.sin(th2))
    q = [a1[0], a1[1], th1 - Om * t, b1[0] - a2[0], b1[1] - a2[1]]
    p = dict(CRANK, Omega=Omega)
    # exact consistent state at t = 0: crank along +x rotating at Ω, bar hanging straight down,
    # not rotating (θ2 = −π/2 so A₂ at the top), its centre moving with the crank tip
    Rv, Lv = p["R"], p["L"]
    x0 = [Rv / 2, 0.0, 0.0, Rv, -Lv / 2, -np.pi / 2]
    xd0 = [0.0, Omega * Rv / 2, Omega, 0.0, Omega * Rv, 0.0]
    return Model("driven_crank", [x1, y1, th1, x2, y2, th2], M, f, q=q,
                 V=m1 * g * y1 + m2 * g * y2,
                 params={R: p["R"], L: p["L"], m1: p["m1"], m2: p["m2"], g: p["g"], Om: Omega},
                 x0=x0, xd0=xd0, outputs={"phi": th2 + sp.pi / 2},
                 settings={"method": "nullspace", "scheme": "trapezoidal", "dt": 1e-3, "t_end": 2.0})


def driven_crank_reference(t_end: float, Omega: float = CRANK["Omega"], rtol=1e-12, atol=1e-12,
                           t_eval=None):
    """Independent minimal-coordinate solution: φ = θ₂ + π/2 (angle of the bar from hanging down).
    Pivot p(t) = R(cos Ωt, sin Ωt); centre at p + (L/2)(sin φ, −cos φ);
    (I_c + m(L/2)²) φ̈ = −m g (L/2) sin φ − m (L/2)(p̈_x cos φ + p̈_y sin φ)."""
    from scipy.integrate import solve_ivp

    R, L, m, g = CRANK["R"], CRANK["L"], CRANK["m2"], CRANK["g"]
    J = m * L**2 / 12 + m * (L / 2) ** 2

    def rhs(tt, s):
        phi, phid = s
        pxdd = -R * Omega**2 * np.cos(Omega * tt)
        pydd = -R * Omega**2 * np.sin(Omega * tt)
        phidd = (-m * g * (L / 2) * np.sin(phi) - m * (L / 2) * (pxdd * np.cos(phi) + pydd * np.sin(phi))) / J
        return [phid, phidd]

    return solve_ivp(rhs, (0.0, t_end), [0.0, 0.0], method="DOP853", rtol=rtol, atol=atol,
                     t_eval=t_eval, dense_output=True)
