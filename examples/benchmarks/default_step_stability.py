"""The paper's stability claims on the stiff pendulum (Sec. 3) under symgen's default step.

symgen's default null-space step is the symmetric chart with the mass metric (and its reaction
correction); the paper's step is ``preset="paper"`` (the end chart, the Euclidean metric).  For
each of the paper's step, the symmetric chart with the Euclidean metric and the default, on the
stiff pendulum of ``examples/stiff_pendulum.py`` (T0 = 0.1 N m, wbar = 0.1 rad/s):

* h_max(0): the Eq. 11 step limit of Fox–Goodwin at the start, from the run's first row (0.782461 s
  in the paper's analysis);
* Fox–Goodwin at h = 0.78 s and 0.79 s over 400 s: max |θ| over the physical amplitude (SciPy
  DOP853 on m L² θ̈ + m g L sin θ = T0 sin(wbar t), rtol 1e-11), the verdict (stable: below 1.5;
  unstable: above 15, the rules of tests/test_chart.py), and above the limit the growth of the
  spurious mode per step (exp of the slope of log |θ − θ_ref| over steps 5–29);
* Newton iterations per step (also at h = 0.1, 0.3, 0.5, 0.7 s) and how many steps Newton could
  not close within max_iter (taken as sub-steps under error control, ``meta["substepped_steps"]``);
* the largest stable Fox–Goodwin step on a grid of 0.005 s from 0.70 to 0.85 s (stable: the
  400 s run completes with max |θ| below 1.5 amplitudes) and the smallest with sub-steps;
* central differences at 0.6 s (stable, max |θ| < 0.012 over 60 s) and 0.7 s (unstable: the run
  stops at |x| > 10 or max |θ| > 0.1).

Run:  python examples/benchmarks/default_step_stability.py
(about a minute; compiled stepper.  docs/method.md, "The default step and the paper's claims",
quotes its output.)
"""
import math
import warnings

import numpy as np
from scipy.integrate import solve_ivp

import symgen

STEPS = {"paper (end, euclidean)": dict(preset="paper"),
         "symmetric, euclidean": dict(chart="symmetric", metric="euclidean"),
         "default (symmetric, mass)": dict()}
SPAN = 400.0


def reference():
    t = np.linspace(0.0, SPAN + 20.0, 42001)
    sol = solve_ivp(lambda tt, s: [s[1], 0.1 * np.sin(0.1 * tt) - 9.8 * np.sin(s[0])],
                    (0.0, t[-1]), [0.0, 0.0], method="DOP853", rtol=1e-11, atol=1e-13, t_eval=t)
    return sol.t, sol.y[0]


def main():
    warnings.simplefilter("ignore")
    k = symgen.build(symgen.load_model("stiff_pendulum"))
    tr, thr = reference()
    amplitude = float(np.abs(thr).max())
    print(f"physical amplitude over {SPAN:g} s: {amplitude:.5f} rad")
    for label, step in STEPS.items():
        def run(h, t_end=SPAN, scheme="fox-goodwin", **kw):
            return symgen.simulate(k, scheme=scheme, dt=h, t_end=t_end, **step, **kw)

        r0 = run(0.1, 1.0)
        print(f"\n{label}: meta chart {r0.meta['chart']}, metric {r0.meta['metric']}, "
              f"preset {r0.meta['preset']}; h_max(0) = {r0.h_max[0]:.6f} s")
        for h in (0.78, 0.79):
            r = run(h)
            th = r.output("theta")
            ratio = float(np.abs(th).max()) / amplitude
            verdict = ("stable" if r.status == "completed" and ratio < 1.5 else
                       "unstable" if ratio > 15 or r.status != "completed" else "unclear")
            steps_done = int(r.meta["steps_done"])
            line = (f"  FG h = {h:.2f}: {r.status} at t = {r.t[-1]:g} s, max|θ|/amplitude = "
                    f"{ratio:.3f} → {verdict}; Newton {np.mean(r.newton_iters[1:]):.2f}/step, "
                    f"{r.meta.get('substepped_steps', 0)} of {steps_done} steps sub-stepped")
            if h > 0.7825 and steps_done >= 30:         # above the limit: the spurious mode
                err = np.abs(th - np.interp(r.t, tr, thr))
                steps = np.arange(5, 30)
                growth = math.exp(np.polyfit(steps, np.log(err[steps]), 1)[0])
                line += f"; growth {growth:.3f}/step"
            line += (f"; max ‖q‖, ‖q̇‖, ‖q̈‖ = {r.pos_err.max():.1e}, {r.vel_err.max():.1e}, "
                     f"{r.acc_err.max():.1e}")
            print(line)
            if r.status != "completed":
                print(f"    ({r.reason})")
        iters = [f"{np.mean(run(h).newton_iters[1:]):.2f} at {h:g} s" for h in (0.1, 0.3, 0.5, 0.7)]
        print(f"  FG Newton iterations per step: {', '.join(iters)}")
        largest, first_sub = None, None
        for h in np.round(np.arange(0.70, 0.85 + 1e-9, 0.005), 3):
            r = run(float(h))
            if r.status == "completed" and np.abs(r.output("theta")).max() < 1.5 * amplitude:
                largest = float(h)
            if first_sub is None and r.meta.get("substepped_steps", 0):
                first_sub = float(h)
        print(f"  FG on the 0.005 s grid 0.70 … 0.85 s: largest stable step {largest}, steps "
              f"taken as sub-steps from h = {first_sub} on")
        for h in (0.6, 0.7):
            r = run(h, 60.0, "central-difference", divergence_bound=10.0)
            peak = float(np.abs(r.output("theta")).max())
            stable = r.status == "completed" and peak < 0.012
            print(f"  CD h = {h:.1f}: {r.status} at t = {r.t[-1]:g} s, max|θ| = {peak:.3g} → "
                  f"{'stable' if stable else 'unstable'}")


if __name__ == "__main__":
    main()
