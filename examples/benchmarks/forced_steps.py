"""What a changing step costs the symmetric chart with the mass metric (docs/variable-step.md,
"The estimate of the corrected step"): the double four-bar over 10 s, B0.x against the exact
one-dof motion, with step sizes forced around a base h — constant, alternating 0.8/1.2 h, a slow
±30 % sine, random ±15 % — through dt="auto" on the Python stepper with the controller replaced
(every try accepted; ``StepController.accepted`` returns the forced next h).

Run:  python examples/benchmarks/forced_steps.py [--h 0.01 0.005]
"""
from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.integrate import solve_ivp

import symgen
import symgen.steppers.control as control


def sizes(mode: str, h: float):
    rng = np.random.default_rng(1)
    i = 0

    def next_h(self, h_now, err):
        nonlocal i
        i += 1
        return {"constant": h, "alternating": (0.8 if i % 2 else 1.2) * h,
                "sine": h * (1 + 0.3 * math.sin(i * h)),
                "random": h * (1 + 0.3 * (rng.random() - 0.5))}[mode]
    return next_h


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--h", type=float, nargs="+", default=[0.01, 0.005])
    args = ap.parse_args(argv)
    k = symgen.build(symgen.load_model("double_four_bar"))
    a_T, a_V = 1 + 2, 1.5 + 2                              # N = 2 (four_bar_theta of work_precision)
    ref = solve_ivp(lambda t, y: [y[1], -a_V * 9.81 * np.cos(y[0]) / a_T], (0, 10),
                    [np.pi / 2, -1.0], method="DOP853", rtol=1e-13, atol=1e-13,
                    dense_output=True).sol
    saved = control.ErrorEstimate.norm, control.StepController.accepted
    control.ErrorEstimate.norm = lambda self, *a, **kw: (0.5, True)
    try:
        print(f"{'h':>7} {'steps':>6} {'sizes':12} {'max |B0.x − exact|':>20}")
        for h in args.h:
            for mode in ("constant", "alternating", "sine", "random"):
                control.StepController.accepted = sizes(mode, h)
                r = symgen.simulate(k, dt="auto", h_init=h, t_end=10.0, stepper="python",
                                    chart="symmetric", metric="mass")
                err = np.abs(r.output("B0.x") - np.cos(ref(r.t)[0])).max()
                print(f"{h:7g} {len(r.t) - 1:6d} {mode:12} {err:20.3e}", flush=True)
    finally:
        control.ErrorEstimate.norm, control.StepController.accepted = saved
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
