"""Stepper timings: nullspace (the paper's method) against classical index-3 Newmark.

Prints steps per second and Newton iterations per step on the stiff pendulum (paper Sec. 3) and on
a planar crank-rocker four-bar in (x, y, θ) body coordinates, both at h = 1e-2 with the
trapezoidal rule (classical index-3 Fox–Goodwin fails on both), with the compiled kernels
(`symgen.build`).  Then splits one nullspace step into its parts: kernel calls, the SVD of H (with
H⁺ and N_H), the particular solutions (the minimum-norm solves), the reduced matrices of Eq. 52,
the reduced solve + eigenvalue estimate, and the rest (Python / NumPy call overhead).

Run:  python examples/benchmarks/bench_steppers.py [--repeat N]

The runs take the paper's step (``preset="paper"``), the one the figures in docs/ were
measured with; symgen's default step is another (docs/method.md, "The default step and the
paper's claims").
"""
from __future__ import annotations

import argparse
import time
import timeit

import numpy as np
import sympy as sp

import symgen
from symgen.steppers import Linearization, omega_from
from symgen.steppers.linalg import solve_small


def stiff_pendulum() -> symgen.Model:
    (x, y, th), _ = symgen.coordinates("x y theta")
    m, L, g, T0, w = sp.symbols("m L g T0 wbar")
    return symgen.Model(
        "bench_pendulum", [x, y, th], sp.diag(m, m, 0), [0, -m * g, T0 * sp.sin(w * symgen.t)],
        q=[x - L * sp.sin(th), y + L * sp.cos(th)], V=m * g * y,
        params={m: 1.0, L: 1.0, g: 9.8, T0: 0.1, w: 0.1}, x0=[0.0, -1.0, 0.0])


def four_bar() -> symgen.Model:
    """Crank 0.4, coupler 1.2, rocker 0.8, ground 1.0; released at rest with the crank at 1 rad."""
    names = [f"{b}_{c}" for b in ("crank", "coupler", "rocker") for c in ("x", "y", "th")]
    xs, _ = symgen.coordinates(names)
    ls, ms, d, g = (0.4, 1.2, 0.8), (1.0, 1.5, 1.2), 1.0, 9.81
    M, f, ends = sp.zeros(9, 9), sp.zeros(9, 1), []
    for i in range(3):
        xc, yc, th = xs[3 * i: 3 * i + 3]
        M[3 * i, 3 * i] = M[3 * i + 1, 3 * i + 1] = ms[i]
        M[3 * i + 2, 3 * i + 2] = ms[i] * ls[i] ** 2 / 12
        f[3 * i + 1] = -ms[i] * g
        u = (sp.cos(th) * ls[i] / 2, sp.sin(th) * ls[i] / 2)
        ends.append(((xc - u[0], yc - u[1]), (xc + u[0], yc + u[1])))
    (a1, b1), (a2, b2), (a3, b3) = ends
    q = [a1[0], a1[1], b1[0] - a2[0], b1[1] - a2[1], b2[0] - b3[0], b2[1] - b3[1], a3[0] - d, a3[1]]
    # closed configuration for crank angle 1 rad
    th1 = 1.0
    B = np.array([ls[0] * np.cos(th1), ls[0] * np.sin(th1)])
    Cp = np.array([d, 0.0])
    r = np.linalg.norm(Cp - B)
    a = (ls[1] ** 2 - ls[2] ** 2 + r**2) / (2 * r)
    e_ = (Cp - B) / r
    E = B + a * e_ + np.sqrt(ls[1] ** 2 - a**2) * np.array([-e_[1], e_[0]])
    th2, th3 = np.arctan2(*(E - B)[::-1]), np.arctan2(*(E - Cp)[::-1])
    x0 = [B[0] / 2, B[1] / 2, th1, *(B + (E - B) / 2), th2, *(Cp + (E - Cp) / 2), th3]
    V = sum(ms[i] * g * xs[3 * i + 1] for i in range(3))
    return symgen.Model("bench_four_bar", xs, M, f, q=q, V=V, x0=x0)


def run(k, method, t_end, repeat, **kw):
    best, res = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = symgen.simulate(k, method=method, dt=1e-2, t_end=t_end, scheme="trapezoidal",
                              preset="paper", **kw)
        best = min(best, time.perf_counter() - t0)
    steps = res.n_steps
    return steps / best, res.newton_iters[1:].mean(), res.status, best / steps


def unit(fn, number=3000) -> float:
    """Seconds per call (best of 5)."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def breakdown(k, res, label):
    """Unit costs of the parts of one nullspace iteration at a state of the run."""
    i = len(res.t) // 2
    t, x, xd, xdd, lam = res.t[i], res.x[i].copy(), res.xd[i].copy(), res.xdd[i].copy(), res.lam[i].copy()
    n, m = k.n, k.m
    lin = Linearization(n, m)
    q, H, qd, Hd, qdd, Hdd = [a.copy() for a in k.constraints(t, x, xd, xdd)]
    M, f, K, C = [a.copy() for a in k.dynamics(t, x, xd, xdd, lam)]
    lin.factor(H)
    lin.particular(q, qd, qdd, H, Hd, Hdd, xd, xdd)
    lin.reduce(M, C, K)
    kk = lin.k
    S = lin.M_R + 0.005 * lin.C_R + 0.25e-4 * lin.K_R
    rk, out = np.ones(kk), np.zeros(kk)
    parts = {
        "kernel: constraints": unit(lambda: k.constraints(t, x, xd, xdd)),
        "kernel: dynamics": unit(lambda: k.dynamics(t, x, xd, xdd, lam)),
        "SVD of H (+ N_H, H+)": unit(lambda: lin.factor(H)),
        "particular solutions (H+ solves)": unit(lambda: lin.particular(q, qd, qdd, H, Hd, Hdd, xd, xdd)),
        "reduced M_R, C_R, K_R (Eq. 52)": unit(lambda: lin.reduce(M, C, K)),
        "reduced solve (k x k)": unit(lambda: solve_small(S, rk, out)),
        "omega_max estimate (per step)": unit(lambda: omega_from(lin.M_R, lin.K_R)),
    }
    return parts, kk


def stepper_time(k, res, repeat) -> float:
    """Seconds per step of NullspaceStepper.step alone, replaying the steps of ``res``."""
    from symgen.steppers import make_stepper

    st = make_stepper("nullspace", k, "trapezoidal", 1e-2)
    st.start(res.t[0], res.x[0], res.xd[0], res.xdd[0], res.lam[0])
    n = res.n_steps
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for i in range(n):
            st.step(res.t[i], st.h, (res.x[i], res.xd[i], res.xdd[i], res.lam[i]))
        best = min(best, time.perf_counter() - t0)
    return best / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    args = ap.parse_args(argv)

    models = {"stiff pendulum (n=3, m=2)": (stiff_pendulum(), 20.0),
              "four-bar (n=9, m=8)": (four_bar(), 1.5)}
    print("symgen stepper benchmark — compiled kernels, h = 1e-2, trapezoidal, best of "
          f"{args.repeat}\n")
    print(f"{'model':<28}{'method':<22}{'steps/s':>10}{'us/step':>10}{'iter/step':>11}  status")
    runs = {}
    for name, (mdl, t_end) in models.items():
        k = symgen.build(mdl)
        symgen.simulate(k, dt=1e-2, t_end=0.1, preset="paper")       # warm up
        for method, kw in (("nullspace", {}), ("index3", {}),
                           ("index3", {"estimate": False})):
            label = method + ("" if kw.get("estimate", True) else " (no estimate)")
            sps, its, status, per = run(k, method, t_end, args.repeat, **kw)
            print(f"{name:<28}{label:<22}{sps:>10.0f}{per * 1e6:>10.1f}{its:>11.2f}  {status}")
        runs[name] = k
    print("\n(index3 records the same reduced stability estimate per step as nullspace; "
          "'no estimate' switches it off)")

    for name, (mdl, t_end) in models.items():
        k = runs[name]
        res = symgen.simulate(k, dt=1e-2, t_end=t_end, scheme="trapezoidal", preset="paper")
        sps, its, _, per = run(k, "nullspace", t_end, args.repeat)
        parts, kk = breakdown(k, res, name)
        # per step: (its + 1) constraint calls, its of everything else, one estimate
        counts = {"kernel: constraints": its + 1, "omega_max estimate (per step)": 1.0}
        print(f"\nwhere one nullspace step goes — {name}, k = {kk}, {its:.2f} iterations/step, "
              f"{per * 1e6:.1f} us/step measured")
        print(f"{'part':<36}{'us/call':>9}{'calls/step':>12}{'us/step':>9}{'share':>8}")
        accounted = 0.0
        for part, sec in parts.items():
            c = counts.get(part, its)
            accounted += c * sec
            print(f"{part:<36}{sec * 1e6:>9.2f}{c:>12.2f}{c * sec * 1e6:>9.1f}{c * sec / per:>8.0%}")
        step_only = stepper_time(k, res, args.repeat)
        loop = per - step_only
        rest = step_only - accounted
        print(f"{'rest of the step: Python + NumPy':<36}{'':>9}{'':>12}{rest * 1e6:>9.1f}{rest / per:>8.0%}")
        print(f"{'simulate loop: checks, recording':<36}{'':>9}{'':>12}{loop * 1e6:>9.1f}{loop / per:>8.0%}")
        print("  rest of the step = predictor, right-hand side of Eq. 51/52, re-projection Eqs. 56-58,")
        print("  Newmark in alpha, recovery Eqs. 34/38/45, lambda Eq. 51, convergence norms: ~60 small")
        print("  NumPy calls per iteration at ~1-2 us each.  The loop records x, xd, xdd, lambda,")
        print("  residuals, omega_max/h_max and calls the energy and outputs kernels once per step.")


if __name__ == "__main__":
    main()
