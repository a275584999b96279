"""The variable step's local error estimate (symgen.steppers.control) against the true local error
of one Newmark step (docs/variable-step.md): the stiff pendulum with T0 = 5 N m, two fixed steps
from the exact state at t = 5 − h, the second step's error against SciPy (DOP853, 1e-13) started
from that step's own start, beside the estimate (with the D term from the first step), for θ and θ̇.

Run:  python examples/benchmarks/local_error.py

The runs take the paper's step (``preset="paper"``), the one the figures in docs/ were
measured with; symgen's default step is another (docs/method.md, "The default step and the
paper's claims").
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

import symgen
from symgen.steppers.control import ErrorEstimate
from symgen.schemes import parse_scheme

T0 = 5.0


def rhs(t, s):
    return [s[1], T0 * np.sin(0.1 * t) - 9.8 * np.sin(s[0])]      # m = L = 1, g = 9.8


def main() -> int:
    k = symgen.build(symgen.load_model("stiff_pendulum"))
    ref = solve_ivp(rhs, (0, 20), [0, 0], method="DOP853", rtol=1e-13, atol=1e-13,
                    dense_output=True).sol
    print(f"{'scheme':20} {'h':>5} {'e_θ true':>11} {'estimate':>11} {'e_θ̇ true':>11} {'estimate':>11}")
    for scheme in ("fox-goodwin", "trapezoidal", "linear-acceleration"):
        for h in (0.04, 0.02, 0.01):
            th, w = ref(5.0 - h)
            x0 = [np.sin(th), -np.cos(th), th]
            xd0 = [np.cos(th) * w, np.sin(th) * w, w]
            r = symgen.simulate(k, dt=h, t_end=5.0 + h, t0=5.0 - h, x0=x0, xd0=xd0,
                                scheme=scheme, params={"T0": T0}, stepper="python",
                                preset="paper")
            s = solve_ivp(rhs, (5.0, 5.0 + h), [r.x[1, 2], r.xd[1, 2]], method="DOP853",
                          rtol=1e-13, atol=1e-15)
            est = ErrorEstimate(parse_scheme(scheme), 3, 1.0, np.ones(3))
            est.accept(h, r.xdd[0], r.xdd[1])
            ex, ev, _ = est.components(h, r.xdd[1], r.xdd[2])
            print(f"{scheme:20} {h:5g} {r.x[2, 2] - s.y[0, -1]:+11.3e} {ex[2]:+11.3e} "
                  f"{r.xd[2, 2] - s.y[1, -1]:+11.3e} {ev[2]:+11.3e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
