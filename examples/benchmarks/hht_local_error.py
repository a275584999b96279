"""HHT-α's own local error on the index-3 method (issue 21; docs/variable-step.md, "What is not
done yet"): the estimate from the true accelerations b̃ against the true local error of a step.

The estimate is ErrorEstimate(index3=True): x₁ − x₀ − hẋ₀ − ∫(h − s)p, ẋ₁ − ẋ₀ − ∫p with p the
quadratic through HHT's true accelerations b̃₁ = (ẍ₁ + α b̃₀)/(1 + α) at the last three points,
projected along M⁻¹Hᵀ onto the null space of H (absolute values).

1. The stiff pendulum (T0 = 5 N m), two fixed HHT steps from the exact state at t − h, the
   second step's θ, θ̇ error against SciPy (DOP853, 1e-13) from its own start.
2. Andrews' squeezer, HHT −0.1 at h = 1e-5: the true local error of a step (the index-1 ODE,
   DOP853, from the step's start) against the estimate, in the WRMS norm (rtol = atol = 1e-8),
   the estimate (projected along M⁻¹Hᵀ), the true error whole and its tangential part
   (Euclidean null space of H).

Run:  python examples/benchmarks/hht_local_error.py
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import null_space

import symgen
from symgen.steppers.control import ErrorEstimate
from symgen.schemes import parse_scheme

T0 = 5.0


def estimate(k, alpha, r, i, h):
    """ErrorEstimate's (e_x, e_ẋ) of step i of the fixed-step run r (its b̃ kept from the start;
    projected along M⁻¹Hᵀ at the new state; absolute values) and the null space of H there."""
    est = ErrorEstimate(parse_scheme(f"hht:{alpha}"), k.n, 1.0, np.ones(k.n), index3=True)
    for j in range(1, i):
        est.accept(h, r.xdd[j - 1], r.xdd[j])
    M = k.dynamics(r.t[i], r.x[i], r.xd[i], r.xdd[i], r.lam[i])[0]
    _, H, *_ = k.constraints(r.t[i], r.x[i], r.xd[i], r.xdd[i])
    N = null_space(H)
    ex, ev, _ = est.errors(h, r.x[i - 1], r.xd[i - 1], r.xdd[i - 1], r.x[i], r.xd[i], r.xdd[i],
                           N, M)
    return ex, ev, N


def pendulum():
    def rhs(t, s):
        return [s[1], T0 * np.sin(0.1 * t) - 9.8 * np.sin(s[0])]
    ref = solve_ivp(rhs, (0.0, 20.0), [0.0, 0.0], method="DOP853", rtol=1e-13, atol=1e-13,
                    dense_output=True).sol
    k = symgen.build(symgen.load_model("stiff_pendulum"))
    print("stiff pendulum, second of two HHT steps from the exact state (theta component)")
    print(f"{'t':>4} {'alpha':>5} {'h':>6} {'e_th true':>11} {'|estimate|':>11} {'e_thd true':>11} "
          f"{'|estimate|':>11}")
    for tt in (4.6, 5.0):
        for alpha in (-0.1, -0.3):
            for h in (0.04, 0.02, 0.01, 0.005):
                th, w = ref(tt - h)
                x0 = np.array([np.sin(th), -np.cos(th), th])
                xd0 = np.array([np.cos(th) * w, np.sin(th) * w, w])
                r = symgen.simulate(k, dt=h, t_end=tt + h, t0=tt - h, x0=x0, xd0=xd0,
                                    scheme=f"hht:{alpha}", method="index3", params={"T0": T0},
                                    stepper="python")
                s = solve_ivp(rhs, (tt, tt + h), [r.x[1, 2], r.xd[1, 2]], method="DOP853",
                              rtol=1e-13, atol=1e-15)
                ex, ev, _ = estimate(k, alpha, r, 2, h)
                print(f"{tt:4.1f} {alpha:5.1f} {h:6.3f} {r.x[2, 2] - s.y[0, -1]:+11.3e} "
                      f"{ex[2]:+11.3e} {r.xd[2, 2] - s.y[1, -1]:+11.3e} {ev[2]:+11.3e}")


def andrews(alpha=-0.1, h=1e-5, steps=300):
    k = symgen.build(symgen.load_model("andrews_squeezer"))
    n, m = k.n, k.m
    r = symgen.simulate(k, dt=h, t_end=steps * h, scheme=f"hht:{alpha}", method="index3",
                        stepper="python")

    def rhs(t, y):                       # the index-1 ODE (q̇ kept, as from an inconsistent start)
        x, v = y[:n], y[n:]
        M, f, _, _ = k.dynamics(t, x, v, np.zeros(n), np.zeros(m))
        _, H, _, _, qdd, _ = k.constraints(t, x, v, np.zeros(n))
        A = np.block([[M, -H.T], [H, np.zeros((m, m))]])
        return np.concatenate([v, np.linalg.solve(A, np.concatenate([f, -qdd]))[:n]])

    def wrms(e, y0, y1):
        return float(np.sqrt(np.mean((e / (1e-8 + 1e-8 * np.maximum(abs(y0), abs(y1)))) ** 2)))

    print(f"\nAndrews, HHT {alpha}, h = {h:g}: WRMS (rtol = atol = 1e-8) of the local error")
    print(f"{'step':>5} {'x true':>9} {'x est':>9} {'v true':>9} {'v est':>9} "
          f"{'v tang true':>11}")
    for i in (3, 10, 150, 300):
        s = solve_ivp(rhs, (r.t[i - 1], r.t[i]), np.concatenate([r.x[i - 1], r.xd[i - 1]]),
                      method="DOP853", rtol=1e-13, atol=1e-16)
        tx, tv = r.x[i] - s.y[:n, -1], r.xd[i] - s.y[n:, -1]
        ex, ev, N = estimate(k, alpha, r, i, h)
        x0, x1, v0, v1 = r.x[i - 1], r.x[i], r.xd[i - 1], r.xd[i]
        print(f"{i:5d} {wrms(tx, x0, x1):9.3g} {wrms(ex, x0, x1):9.3g} {wrms(tv, v0, v1):9.3g} "
              f"{wrms(ev, v0, v1):9.3g} {wrms(N @ (N.T @ tv), v0, v1):11.3g}")


if __name__ == "__main__":
    warnings.simplefilter("ignore", RuntimeWarning)
    pendulum()
    andrews()
