"""The default null-space step against the paper's on the spatial slider-crank (docs/method.md,
"The default step and the paper's claims").

``examples/slider_crank_3d.py`` (its default data and the IFToMM benchmark's, ``iftomm=1``),
trapezoidal, h = 1e-3 over 5 s, compiled stepper: the largest error of the slider's x over the
run against a reference (the default step at h = 1.25e-4; the runs at 2.5e-4 and 1.25e-4 are
printed apart to show it converged), for ``preset="paper"`` (chart "end", metric "euclidean") and
symgen's default (the symmetric chart with the mass metric).  Then the stiff pendulum of
``examples/stiff_pendulum.py`` at its recommended settings (Fox–Goodwin, h = 0.1 s, 100 s): the
largest error of θ against SciPy (DOP853, rtol 1e-12), the Newton iterations per step and the
energy balance max |E − E(0) − W_ext| (``symgen.summary.energy_balance``) of either step.

Run:  python examples/benchmarks/default_step_accuracy.py
"""
import numpy as np
from scipy.integrate import solve_ivp

import symgen
from symgen.summary import energy_balance

H, T_END, FINE = 1e-3, 5.0, (2.5e-4, 1.25e-4)


def slider_x(k, h, **step):
    r = symgen.simulate(k, dt=h, t_end=T_END, every=round(H / h), **step)
    assert r.status == "completed", r.reason
    return r.output("slider.C.x")


def main():
    for opts in ({}, {"iftomm": 1}):
        k = symgen.build(symgen.load_model("slider_crank_3d", **opts))
        ref_coarse, ref = (slider_x(k, h) for h in FINE)
        print(f"slider_crank_3d {opts or ''}: reference converged to "
              f"{np.abs(ref - ref_coarse).max():.1e} m (h = {FINE[0]:g} against {FINE[1]:g})")
        for label, step in (("paper (end, euclidean)", dict(preset="paper")),
                            ("default (symmetric, mass)", {})):
            x = slider_x(k, H, **step)
            print(f"  {label:26s} h = {H:g}, {T_END:g} s: max |x − x_ref| = "
                  f"{np.abs(x - ref).max():.2e} m")
    k = symgen.build(symgen.load_model("stiff_pendulum"))
    t = np.linspace(0.0, 100.0, 1001)
    sol = solve_ivp(lambda tt, s: [s[1], 0.1 * np.sin(0.1 * tt) - 9.8 * np.sin(s[0])],
                    (0.0, 100.0), [0.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-14, t_eval=t)
    print("stiff_pendulum (Fox–Goodwin, h = 0.1 s, 100 s):")
    for label, step in (("paper (end, euclidean)", dict(preset="paper")),
                        ("default (symmetric, mass)", {})):
        r = symgen.simulate(k, **step)
        print(f"  {label:26s} max |θ − θ_ref| = {np.abs(r.output('theta') - sol.y[0]).max():.2e} "
              f"rad, Newton {np.mean(r.newton_iters[1:]):.2f}/step, max |E − E(0) − W_ext| = "
              f"{energy_balance(r)['max']:.2e} J")


if __name__ == "__main__":
    main()
