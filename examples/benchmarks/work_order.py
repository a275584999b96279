"""The energy balance's work rule, measured (docs/energy-balance.md, "How the work is
integrated"): max |E − E(0) − W_ext| and the work against closed forms as h halves, with the
default (corrected) step, whose work rule is the corrected trapezoid, and with preset="paper",
whose rule is the trapezoid.

- motor + damper: a pendulum in (x, y, θ) with a revolute joint, gravity, a 2 N·m motor and a
  0.3 N·m·s/rad torsional damper, 5 s; the motor's work against T·Δθ;
- driven bar: m = 2 kg, L = 0.5 m turned at 3 rad/s by its pivot's drive, 2 s; the drive's work
  against the inverse dynamics' m g L (1 − cos ωt);
- slider-crank: the shipped example (crank driven at 2π rad/s), 2 s;
- PD arm: the 3R arm of examples/benchmarks/controller.py with its law sampled every 10 ms, 2 s.

Run:  python examples/benchmarks/work_order.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import symgen
from symgen.mechanics import PlanarSystem
from symgen.summary import energy_balance

sys.path.insert(0, str(Path(__file__).resolve().parent))
import controller  # noqa: E402  (the PD arm and its law)

TORQUE = 2.0


def motor_damper():
    s = PlanarSystem("motor_damper")
    bob = s.body("bob", mass=1.0, inertia=0.1, points={"pivot": (0, 1.0)}, x0=(0, -1.0, 0))
    s.revolute("ground", (0, 0), bob, "pivot")
    s.gravity(9.81)
    s.torque(bob, TORQUE, name="motor")
    s.torsional_spring("ground", bob, 0, 0.3, name="damper")
    return s.model()


def driven_bar():
    s = PlanarSystem("driven_bar")
    bob = s.body("bob", mass=2.0, inertia=0.05, points={"pivot": (0, 0.5)}, x0=(0, -0.5, 0),
                 v0=(1.5, 0, 3.0))
    s.revolute("ground", (0, 0), bob, "pivot", drive=3.0 * symgen.t, name="pivot")
    s.gravity(9.81)
    return s.model()


def rows(name, kern, hs, t_end, other=None, **kw):
    for preset in (None, "paper"):
        prev = None
        for h in hs:
            r = symgen.simulate(kern, dt=h, t_end=t_end, preset=preset, **kw)
            bal = energy_balance(r)["max"]
            o = other(r) if other else float("nan")
            order = "" if prev is None else f"{np.log2(prev / bal):6.2f}"
            print(f"{name:14s} {preset or 'default':8s} {h:8.1e} {bal:12.3e} {o:12.3e} {order}")
            prev = bal


def main():
    print(f"{'case':14s} {'step':8s} {'h':>8s} {'balance J':>12s} {'vs closed':>12s} order")
    th = lambda r: np.abs(r.output("work:motor") - TORQUE * (r.coord("bob.theta")   # noqa: E731
                                                             - r.coord("bob.theta")[0])).max()
    rows("motor+damper", symgen.build(motor_damper()), (4e-3, 2e-3, 1e-3), 5.0, th)
    wg = lambda r: np.abs(r.output("work:pivot")                              # noqa: E731
                          - 2.0 * 9.81 * 0.5 * (1 - np.cos(3.0 * r.t))).max()
    rows("driven bar", symgen.build(driven_bar()), (0.02, 0.01, 0.005), 2.0, wg)
    rows("slider-crank", symgen.build(symgen.load_model("slider_crank")), (4e-3, 2e-3, 1e-3), 2.0)
    rows("PD arm, 10 ms", symgen.build(controller.arm(False)), (2e-3, 1e-3, 5e-4), 2.0,
         controller=controller.law, period=1e-2)


if __name__ == "__main__":
    main()
