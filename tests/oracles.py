"""Independent reference solutions for the shipped examples (SciPy, tight tolerances).

Nothing here uses symgen's derivation, generated C or steppers: these are written from the
equations in ``docs/benchmarks.md`` so that the body-and-joint models can be checked against them
(the double pendulum's minimal model and SciPy integration are shared with ``symgen reproduce``,
:mod:`symgen.reproduce.references`).

- :func:`andrews_reference`: the Test Set's 7-angle equations of Andrews' squeezer,
  M(q) q̈ + Gᵀλ = f(q, q̇), g(q) = 0, in index-1 form (G q̈ = −(∂(G q̇)/∂q) q̇), integrated with
  DOP853 from the consistent initial values.
- :func:`four_bar_reference`: the N four-bar stays a parallelogram, so all vertical bars turn by
  the same angle θ and the couplers translate: T = ½ m L² ((N+1)/3 + N) θ̇²,
  V = m g L ((N+1)/2 + N) sin θ, hence θ̈ = −(3/2) (g/L) cos θ · (3N + 1)/(4N + 1)… written below
  from T and V directly.  B0 = L (cos θ, sin θ).
- :func:`slider_crank_stop_reference`: the free slider-crank against its end stop
  (examples/slider_crank_stop.py) by Lagrange's equation on the crank angle (sympy), integrated
  between impacts with an event at the stop and restarted there with φ̇⁺ = −e φ̇⁻.
"""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

# --------------------------------------------------------------------------------------------
# Andrews' squeezer, Test Set formulation
ANDREWS = dict(
    m1=0.04325, m2=0.00365, m3=0.02373, m4=0.00706, m5=0.07050, m6=0.00706, m7=0.05498,
    I1=2.194e-6, I2=4.410e-7, I3=5.255e-6, I4=5.667e-7, I5=1.169e-5, I6=5.667e-7, I7=1.912e-5,
    xa=-0.06934, ya=-0.00227, xb=-0.03635, yb=0.03273, xc=0.014, yc=0.072, c0=4530.0,
    l0=0.07785, mom=0.033, d=28e-3, da=115e-4, e=2e-2, ea=1421e-5, rr=7e-3, ra=92e-5, ss=35e-3,
    sa=1874e-5, sb=1043e-5, sc=18e-3, sd=2e-2, ta=2308e-5, tb=916e-5, u=4e-2, ua=1228e-5,
    ub=449e-5, zf=2e-2, zt=4e-2, fa=1421e-5)

ANDREWS_Q0 = np.array([
    -0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
    0.222668390165885884674473185609, 0.487364979543842550225598953530,
    -0.222668390165885884674473185609, 1.23054744454982119249735015568])
ANDREWS_QDD0_BETA = 14222.4439199541138705911625887
ANDREWS_QDD0_THETA = -10666.8329399655854029433719415
ANDREWS_LAMBDA0 = (98.5668703962410896057654982170, -6.12268834425566265503114393122)


@functools.lru_cache(maxsize=None)
def _andrews_functions():
    P = ANDREWS
    q = sp.symbols("be Th ga Ph de Om ep")
    qd = sp.symbols("be_d Th_d ga_d Ph_d de_d Om_d ep_d")
    be, Th, ga, Ph, de, Om, ep = q
    bd, Td, gd, Pd, dd, Od, ed = qd
    m1, m2, m3, m4, m5, m6, m7 = (P[f"m{i}"] for i in range(1, 8))
    I1, I2, I3, I4, I5, I6, I7 = (P[f"I{i}"] for i in range(1, 8))
    xa, ya, xb, yb, xc, yc = (P[k] for k in ("xa", "ya", "xb", "yb", "xc", "yc"))
    c0, l0, mom = P["c0"], P["l0"], P["mom"]
    d, da, e, ea, rr, ra, ss, sa, sb, sc, sd = (P[k] for k in
                                                "d da e ea rr ra ss sa sb sc sd".split())
    ta, tb, u, ua, ub, zf, zt, fa = (P[k] for k in "ta tb u ua ub zf zt fa".split())
    cos, sin = sp.cos, sp.sin
    M = sp.zeros(7, 7)
    M[0, 0] = m1 * ra ** 2 + m2 * (rr ** 2 - 2 * da * rr * cos(Th) + da ** 2) + I1 + I2
    M[1, 0] = M[0, 1] = m2 * (da ** 2 - da * rr * cos(Th)) + I2
    M[1, 1] = m2 * da ** 2 + I2
    M[2, 2] = m3 * (sa ** 2 + sb ** 2) + I3
    M[3, 3] = m4 * (e - ea) ** 2 + I4
    M[4, 3] = M[3, 4] = m4 * ((e - ea) ** 2 + zt * (e - ea) * sin(Ph)) + I4
    M[4, 4] = (m4 * (zt ** 2 + 2 * zt * (e - ea) * sin(Ph) + (e - ea) ** 2)
               + m5 * (ta ** 2 + tb ** 2) + I4 + I5)
    M[5, 5] = m6 * (zf - fa) ** 2 + I6
    M[6, 5] = M[5, 6] = m6 * ((zf - fa) ** 2 - u * (zf - fa) * sin(Om)) + I6
    M[6, 6] = (m6 * ((zf - fa) ** 2 - 2 * u * (zf - fa) * sin(Om) + u ** 2)
               + m7 * (ua ** 2 + ub ** 2) + I6 + I7)
    xd = sd * cos(ga) + sc * sin(ga) + xb
    yd = sd * sin(ga) - sc * cos(ga) + yb
    L = sp.sqrt((xd - xc) ** 2 + (yd - yc) ** 2)
    F = -c0 * (L - l0) / L
    fx, fy = F * (xd - xc), F * (yd - yc)
    f = sp.Matrix([
        mom - m2 * da * rr * Td * (Td + 2 * bd) * sin(Th),
        m2 * da * rr * bd ** 2 * sin(Th),
        fx * (sc * cos(ga) - sd * sin(ga)) + fy * (sd * cos(ga) + sc * sin(ga)),
        m4 * zt * (e - ea) * dd ** 2 * cos(Ph),
        -m4 * zt * (e - ea) * Pd * (Pd + 2 * dd) * cos(Ph),
        -m6 * u * (zf - fa) * ed ** 2 * cos(Om),
        m6 * u * (zf - fa) * Od * (Od + 2 * ed) * cos(Om)])
    g = sp.Matrix([
        rr * cos(be) - d * cos(be + Th) - ss * sin(ga) - xb,
        rr * sin(be) - d * sin(be + Th) + ss * cos(ga) - yb,
        rr * cos(be) - d * cos(be + Th) - e * sin(Ph + de) - zt * cos(de) - xa,
        rr * sin(be) - d * sin(be + Th) + e * cos(Ph + de) - zt * sin(de) - ya,
        rr * cos(be) - d * cos(be + Th) - zf * cos(Om + ep) - u * sin(ep) - xa,
        rr * sin(be) - d * sin(be + Th) - zf * sin(Om + ep) + u * cos(ep) - ya])
    G = g.jacobian(q)
    Gqd = G * sp.Matrix(qd)
    gamma = -(Gqd.jacobian(q) * sp.Matrix(qd))          # G q̈ = −(∂(G q̇)/∂q) q̇
    args = [list(q), list(qd)]
    return (sp.lambdify(args, M, "numpy"), sp.lambdify(args, f, "numpy"),
            sp.lambdify(args, G, "numpy"), sp.lambdify(args, gamma, "numpy"),
            sp.lambdify(args, g, "numpy"))


def andrews_accelerations(q, qd):
    """(q̈, λ) of the Test Set equations at (q, q̇) (Test Set sign: M q̈ + Gᵀλ = f)."""
    fM, ff, fG, fgam, _ = _andrews_functions()
    M = np.asarray(fM(list(q), list(qd)), float)
    f = np.asarray(ff(list(q), list(qd)), float).ravel()
    G = np.asarray(fG(list(q), list(qd)), float)
    gam = np.asarray(fgam(list(q), list(qd)), float).ravel()
    A = np.block([[M, G.T], [G, np.zeros((6, 6))]])
    sol = np.linalg.solve(A, np.concatenate([f, gam]))
    return sol[:7], sol[7:]


def andrews_constraints(q):
    return np.asarray(_andrews_functions()[4](list(q), [0.0] * 7), float).ravel()


def andrews_reference(t_eval, rtol=1e-12, atol=1e-13):
    """Angles q(t) (7 × len(t_eval)) and velocities of the Test Set's 7-angle model."""
    def rhs(_t, y):
        qdd, _ = andrews_accelerations(y[:7], y[7:])
        return np.concatenate([y[7:], qdd])
    y0 = np.concatenate([ANDREWS_Q0, np.zeros(7)])
    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), y0, method="DOP853", t_eval=t_eval,
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"Andrews reference integration failed: {sol.message}")
    return sol.y[:7], sol.y[7:]


# --------------------------------------------------------------------------------------------
# N four-bar (parallelogram branch, one degree of freedom)
def four_bar_coefficients(N, m=1.0, L=1.0):
    """a_T, a_V with T = ½ a_T θ̇², V = a_V g sin θ: N+1 vertical bars turning about their
    pivots (I_pivot = m L²/3, centre at height L/2 sin θ) and N translating couplers (speed L θ̇,
    height L sin θ)."""
    a_T = (N + 1) * m * L ** 2 / 3 + N * m * L ** 2
    a_V = (N + 1) * m * L / 2 + N * m * L
    return a_T, a_V


def four_bar_reference(N, t_eval, v0=1.0, m=1.0, L=1.0, g=9.81, rtol=1e-12, atol=1e-12, *,
                       t0=0.0, theta0=np.pi / 2, omega0=None):
    """B0 (x, y, vx, vy) over t_eval, and the angle θ, of the N four-bar started at t0 with
    θ = theta0, θ̇ = omega0 (default: θ = π/2, θ̇ = −v0/L at t = 0, the models' initial state).
    Equation of motion: a_T θ̈ = −a_V g cos θ."""
    a_T, a_V = four_bar_coefficients(N, m, L)
    omega0 = -v0 / L if omega0 is None else omega0

    def rhs(_t, y):
        return [y[1], -a_V * g * np.cos(y[0]) / a_T]

    sol = solve_ivp(rhs, (float(t0), float(t_eval[-1])), [theta0, omega0], method="DOP853",
                    t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"four-bar reference integration failed: {sol.message}")
    th, w = sol.y
    B0 = np.vstack([L * np.cos(th), L * np.sin(th), -L * w * np.sin(th), L * w * np.cos(th)])
    return B0, th


def four_bar_energy(N, v0=1.0, m=1.0, L=1.0, g=9.81):
    """Mechanical energy of the N four-bar at its initial state (zero potential at y = 0)."""
    a_T, a_V = four_bar_coefficients(N, m, L)
    return 0.5 * a_T * (v0 / L) ** 2 + a_V * g


# --------------------------------------------------------------------------------------------
# Double pendulum with torsional spring-dampers (docs/benchmarks.md §2): the minimal model and the
# SciPy integration that `symgen reproduce` uses (one definition), sampled at the tip.
def double_pendulum_reference(t_eval, rtol=1e-12, atol=1e-12):
    """Tip (x, y, vx, vy) of the double pendulum from both bars horizontal at rest (θ = π/2),
    integrated in minimal coordinates (absolute bar angles θ1, θ2; bars of length L = 1)."""
    from symgen.reproduce.references import minimal_double_pendulum, scipy_reference

    x, xd = scipy_reference(minimal_double_pendulum(), np.asarray(t_eval, float), rtol, atol)
    a, b, ad, bd = x[:, 0], x[:, 1], xd[:, 0], xd[:, 1]
    return np.array([np.sin(a) + np.sin(b), -np.cos(a) - np.cos(b),
                     np.cos(a) * ad + np.cos(b) * bd, np.sin(a) * ad + np.sin(b) * bd])


# --------------------------------------------------------------------------------------------
# The slider-crank against its end stop (examples/slider_crank_stop.py, docs/events.md): its data
# written out here, the minimal-coordinate equation derived from T and V on the crank angle.
STOP = dict(r=0.2, l=0.6, phi0=0.5, m1=1.0, m2=2.0, m3=3.0, g=9.81, x_stop=0.5, e=0.5)


@functools.lru_cache(maxsize=None)
def slider_crank_stop_equation():
    """Lagrange on the crank angle φ: T = ½ m(φ) φ̇² (crank and rod uniform bars, the slider a
    point mass on the x axis), V(φ) = g (m1 y_c1 + m2 y_c2); returns numeric functions
    φ̈(φ, φ̇) = −(½ m′(φ) φ̇² + V′(φ)) / m(φ), x_B(φ) and m(φ)."""
    c = STOP
    r, l = c["r"], c["l"]
    t = sp.Symbol("t")
    ph, phd = sp.symbols("phi phi_dot")
    s = sp.Function("s")(t)
    xa, ya = r * sp.cos(s), r * sp.sin(s)
    xb = xa + sp.sqrt(l ** 2 - ya ** 2)
    psi = -sp.asin(ya / l)                                  # the rod's angle
    c1, c2 = (xa / 2, ya / 2), ((xa + xb) / 2, ya / 2)      # the bars' centres

    def v2(p):
        return sp.diff(p[0], t) ** 2 + sp.diff(p[1], t) ** 2
    T = (c["m1"] * v2(c1) + c["m1"] * r ** 2 / 12 * sp.diff(s, t) ** 2 + c["m2"] * v2(c2)
         + c["m2"] * l ** 2 / 12 * sp.diff(psi, t) ** 2 + c["m3"] * sp.diff(xb, t) ** 2) / 2
    V = c["g"] * (c["m1"] * c1[1] + c["m2"] * c2[1])
    T = T.subs(sp.diff(s, t), phd).subs(s, ph)
    V, xb = V.subs(s, ph), xb.subs(s, ph)
    m = sp.simplify(sp.diff(T, phd, 2))
    acc = -(sp.diff(m, ph) * phd ** 2 / 2 + sp.diff(V, ph)) / m
    return (sp.lambdify((ph, phd), acc, "math"), sp.lambdify(ph, xb, "math"),
            sp.lambdify(ph, m, "math"))


def slider_crank_stop_reference(t_end, e=STOP["e"], rtol=1e-13, atol=1e-13):
    """solve_ivp (DOP853) on the minimal equation from rest at φ0 with the event
    x_B(φ) = x_stop (falling, terminal), restarted there with φ̇⁺ = −e φ̇⁻ (one degree of
    freedom: ġ = x_B′(φ) φ̇, so Newton's law ġ⁺ = −e ġ⁻ is that).  Returns ((t, φ, φ̇⁻) of each
    impact as an array, φ at t_end)."""
    acc, xb, _ = slider_crank_stop_equation()
    x_stop = STOP["x_stop"]

    def hit(t, y):
        return xb(y[0]) - x_stop
    hit.terminal, hit.direction = True, -1
    t, y, out = 0.0, [STOP["phi0"], 0.0], []
    while True:
        sol = solve_ivp(lambda t, y: [y[1], acc(y[0], y[1])], (t, t_end), y, method="DOP853",
                        rtol=rtol, atol=atol, events=hit)
        if not sol.t_events[0].size:
            return np.array(out).reshape(-1, 3), float(sol.y[0, -1])
        t, yv = sol.t_events[0][0], sol.y_events[0][0]
        out.append((t, yv[0], yv[1]))
        y = [yv[0], -e * yv[1]]
