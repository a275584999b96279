"""The default null-space step against the paper's on the spatial slider-crank (docs/method.md,
"The default step and the paper's claims").

``examples/slider_crank_3d.py`` (its default data and the IFToMM benchmark's, ``iftomm=1``),
trapezoidal, h = 1e-3 over 5 s, compiled stepper: the largest error of the slider's x over the
run against a reference (the default step at h = 1.25e-4; the runs at 2.5e-4 and 1.25e-4 are
printed apart to show it converged), for ``preset="paper"`` (chart "end", metric "euclidean") and
symgen's default (the symmetric chart with the mass metric).  Then the stiff pendulum of
``examples/stiff_pendulum.py`` at its recommended settings (Fox–Goodwin, h = 0.1 s, 100 s): the
largest error of θ against SciPy (DOP853, rtol 1e-12), the Newton iterations per step and the
energy balance max |E − E(0) − W_ext| (``symgen.summary.energy_balance``) of either step.  Last,
issue 33's five-bar (two cranks on the ground, a motor with a falling torque–speed line on one, a
spring on the coupler joint, a damper on the other crank, gravity; h = 1e-3 over 2 s): the coupler
joint's largest error against the default step at h = 1.25e-4, the energy balance and the
damper's work at 2 s, either step.

Run:  python examples/benchmarks/default_step_accuracy.py
"""
import math

import numpy as np
from scipy.integrate import solve_ivp

import symgen
from symgen.mechanics import PlanarSystem
from symgen.summary import energy_balance

H, T_END, FINE = 1e-3, 5.0, (2.5e-4, 1.25e-4)


def slider_x(k, h, **step):
    r = symgen.simulate(k, dt=h, t_end=T_END, every=round(H / h), **step)
    assert r.status == "completed", r.reason
    return r.output("slider.C.x")


def five_bar():
    """A five-bar with a motor, a spring and a damper (issue 33's new user's mechanism): cranks
    a (0.1 m, at the origin) and d (0.15 m, at (0.3, 0)), couplers b and c (0.25 m), 1 kg each;
    the motor on joint A gives 1 N·m (1 − θ̇/20 rad/s); a spring (200 N/m, free length 0.2 m) from
    (0.15, 0.5) to joint C; a rotary damper (0.02 N·m·s) on crank d."""
    s = PlanarSystem("five_bar_msd")

    def link(name, length, guess):
        return s.body(name, mass=1.0, inertia=length ** 2 / 12, com=(length / 2, 0),
                      points={"tip": (length, 0)}, guess=guess)
    a = link("a", 0.1, (0, 0, math.pi / 2))
    b = link("b", 0.25, (0, 0.1, 1.084))
    c = link("c", 0.25, (0.117, 0.321, -0.752))
    d = link("d", 0.15, (0.3, 0, math.pi / 2))
    joint_a = s.revolute("ground", (0, 0), a, (0, 0), name="A")
    s.revolute(a, "tip", b, (0, 0), name="B")
    s.revolute(b, "tip", c, (0, 0), name="C")
    s.revolute(c, "tip", d, "tip", name="D")
    s.revolute("ground", (0.3, 0), d, (0, 0), name="E")
    s.gravity(9.81)
    s.motor(joint_a, 1.0 * (1 - a.theta_dot / 20.0), name="motor")
    s.spring("ground", (0.15, 0.5), b, "tip", 200.0, length=0.2, name="spring")
    s.torsional_spring("ground", d, 0, c=0.02, name="damper")
    s.output_point(b, "tip", name="joint_C", velocity=False)
    return s.model()


def five_bar_table():
    k = symgen.build(five_bar())

    def run(h, **step):
        r = symgen.simulate(k, dt=h, t_end=2.0, every=round(H / h), **step)
        assert r.status == "completed", r.reason
        return r
    ref_coarse, ref = (run(h) for h in FINE)
    print(f"five-bar with motor, spring, damper (h = {H:g}, 2 s): reference converged to "
          f"{np.abs(ref.output('joint_C.x') - ref_coarse.output('joint_C.x')).max():.1e} m; "
          f"its damper's work {energy_balance(ref)['works']['damper']:.6f} J")
    for label, step in (("paper (end, euclidean)", dict(preset="paper")),
                        ("default (symmetric, mass)", {})):
        r = run(H, **step)
        bal = energy_balance(r)
        print(f"  {label:26s} max |C − C_ref| = "
              f"{np.abs(r.output('joint_C.x') - ref.output('joint_C.x')).max():.2e} m, "
              f"max |E − E(0) − W_ext| = {bal['max']:.2e} J, damper's work "
              f"{bal['works']['damper']:.6f} J")


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
    five_bar_table()


if __name__ == "__main__":
    main()
