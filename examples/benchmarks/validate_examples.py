"""Longer validation runs of the shipped examples; prints the figures quoted in the issue notes.

    python examples/benchmarks/validate_examples.py            # everything (a few minutes)
    python examples/benchmarks/validate_examples.py andrews bricard
    python examples/benchmarks/validate_examples.py n40 --full # N four-bar over the full 20 s

References are independent: ``tests/oracles.py`` (SciPy DOP853 at rtol 1e-12 on the Test Set's
7-angle index-1 equations, on the 1-dof parallelogram ODE of the four-bars, on the minimal
coordinates of the pendulums and of the slider-crank against its end stop, restarted at each
impact).  Nothing here is tuned to a published number.

The runs take the paper's step (``preset="paper"``), the one the figures in docs/ were
measured with; symgen's default step is another (docs/method.md, "The default step and the
paper's claims").
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import pathlib
import time

import numpy as np

import symgen

HERE = pathlib.Path(__file__).resolve()


def _oracles():
    for root in (HERE.parents[2], pathlib.Path.cwd()):
        path = root / "tests" / "oracles.py"
        if path.exists():
            spec = importlib.util.spec_from_file_location("symgen_test_oracles", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    raise SystemExit("tests/oracles.py not found: run from a source checkout of symgen")


oracles = _oracles()
ANGLES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def load(name, **kw):
    return importlib.import_module(f"symgen.examples.{name}").model(**kw)


def out(res, names):
    return np.array([res.output(n) for n in names])


def per_step(res):
    return res.meta["wall_time"] / max(res.n_steps, 1)


def andrews():
    print("== Andrews' squeezer (Test Set data, body model in (x, y, θ), 21 coordinates)")
    mdl = load("andrews_squeezer")
    k = symgen.build(mdl)
    y0 = dict(zip(mdl.output_names, k.outputs(0.0, mdl.x0, mdl.xd0)))
    a0 = np.array([y0[a] for a in ANGLES])
    print(f"  t = 0: max |angle − Test Set| = {np.abs(a0 - oracles.ANDREWS_Q0).max():.2e}")
    for h in (2e-5, 1e-5, 2e-6):
        res = symgen.simulate(k, method="nullspace", scheme="fox-goodwin", dt=h, t_end=0.03,
                              preset="paper")
        stride = int(round(1e-4 / h))
        t = res.t[::stride]
        q_ref, _ = oracles.andrews_reference(t)
        err = np.abs(out(res, ANGLES)[:, ::stride] - q_ref)
        print(f"  FG h = {h:.0e}: {res.status}, {res.n_steps} steps, {per_step(res) * 1e6:.0f} us/step; "
              f"max |angle − oracle| over [0, 0.03] = {err.max():.2e} rad "
              f"(β: {err[0].max():.2e}); at t = 0.03 β = {res.output('beta')[-1]:.10f} "
              f"(oracle {q_ref[0, -1]:.10f}); max ‖q‖ {res.pos_err.max():.1e}, "
              f"‖q̇‖ {res.vel_err.max():.1e}; ω_max estimate max {np.nanmax(res.omega_max):.0f} rad/s")


def four_bar(N=2, name="double_four_bar", hs=(1e-2, 1e-3), t_end=10.0, model_kw=None):
    print(f"== {name} (N = {N}), {t_end:g} s")
    mdl = load(name, **(model_kw or {}))
    k = symgen.build(mdl)
    E0 = oracles.four_bar_energy(N)
    for h in hs:
        res = symgen.simulate(k, dt=h, t_end=t_end, preset="paper")
        B_ref, th = oracles.four_bar_reference(N, res.t)
        B = out(res, ("B0.x", "B0.y", "B0.vx", "B0.vy"))
        err = np.abs(B - B_ref).max(axis=1)
        drift = np.abs(res.energy - E0).max()
        print(f"  FG h = {h:.0e}: {res.status}, {res.n_steps} steps in {res.meta['wall_time']:.2f} s "
              f"({per_step(res) * 1e3:.2f} ms/step, {res.newton_iters[1:].mean():.2f} Newton it/step); "
              f"energy drift max|E − E0| = {drift:.3e} J; B0 error vs ODE: x {err[0]:.2e}, "
              f"y {err[1]:.2e}, vx {err[2]:.2e}, vy {err[3]:.2e}; final B0 = "
              f"({B[0, -1]:.6f}, {B[1, -1]:.6f}); max ‖q‖ {res.pos_err.max():.1e}, "
              f"‖q̇‖ {res.vel_err.max():.1e}, rank H {res.meta.get('rank_H')}")


def bricard(hs=(1e-2, 1e-3), t_end=10.0):
    print(f"== Bricard (natural coordinates, 24 coordinates, 24 rows, rank 23), {t_end:g} s")
    mdl = load("bricard")
    k = symgen.build(mdl)
    for h in hs:
        res = symgen.simulate(k, dt=h, t_end=t_end, preset="paper")
        drift = np.abs(res.energy - res.energy[0]).max()
        mid = out(res, ("rod2.mid.x", "rod2.mid.y", "rod2.mid.z"))
        print(f"  FG h = {h:.0e}: {res.status}, {res.n_steps} steps in {res.meta['wall_time']:.2f} s "
              f"({per_step(res) * 1e3:.2f} ms/step); energy drift {drift:.3e} J; max ‖q‖ "
              f"{res.pos_err.max():.1e}, ‖q̇‖ {res.vel_err.max():.1e}, ‖q̈‖ {res.acc_err.max():.1e}; "
              f"rank H {res.meta.get('rank_H')}; rod 2 midpoint at t = {t_end:g}: "
              f"({mid[0, -1]:.6f}, {mid[1, -1]:.6f}, {mid[2, -1]:.6f}), x range "
              f"[{mid[0].min():.3f}, {mid[0].max():.3f}]")


def n40(full=False):
    t_end = 20.0 if full else 2.0
    print(f"== N four-bar N = 40 (243 coordinates, 242 rows), {t_end:g} s")
    t0 = time.perf_counter()
    mdl = load("n_four_bar", N=40)
    t1 = time.perf_counter()
    k = symgen.build(mdl)
    t2 = time.perf_counter()
    print(f"  model {t1 - t0:.1f} s, build (or cache load) {t2 - t1:.1f} s")
    four_bar(40, "n_four_bar", hs=(1e-2,), t_end=t_end, model_kw={"N": 40})
    res = symgen.simulate(k, dt=1e-2, t_end=min(t_end, 1.0), estimate=False, preset="paper")
    print(f"  without the per-step stability estimate: {per_step(res) * 1e3:.1f} ms/step")


def pendulums():
    print("== stiff pendulum (recommended settings) and double pendulum")
    from scipy.integrate import solve_ivp
    res = symgen.simulate(load("stiff_pendulum"), preset="paper")
    sol = solve_ivp(lambda t, y: [y[1], -9.8 * np.sin(y[0]) + 0.1 * np.sin(0.1 * t)], (0, 100),
                    [0, 0], t_eval=res.t, rtol=1e-12, atol=1e-12, method="DOP853")
    print(f"  stiff pendulum FG h = 0.1, 100 s: {res.status} in {res.meta['wall_time']:.2f} s; "
          f"max |θ − minimal ODE| = {np.abs(res.output('theta') - sol.y[0]).max():.2e} rad; "
          f"max ‖q‖ {res.pos_err.max():.1e}")
    mdl = load("double_pendulum")
    for h in (1e-3,):
        res = symgen.simulate(mdl, dt=h, t_end=10.0, preset="paper")
        ref = oracles.double_pendulum_reference(res.t)
        err = np.abs(out(res, ("tip.x", "tip.y")) - ref[:2]).max()
        print(f"  double pendulum FG h = {h:.0e}, 10 s: {res.status} in {res.meta['wall_time']:.2f} s;"
              f" max |tip − minimal ODE| = {err:.2e} m; energy {res.energy[0]:.3f} → "
              f"{res.energy[-1]:.3f} J (dampers), max increase per step "
              f"{max(np.diff(res.energy).max(), 0):.1e} J")


def double_four_bar():
    four_bar(2, "double_four_bar", hs=(1e-2, 1e-3), t_end=10.0)
    four_bar(2, "double_four_bar", hs=(1e-2, 1e-3), t_end=20.0)


def stop(t_end=5.0):
    """The slider-crank against its end stop (impacts, docs/events.md) against the minimal-
    coordinate reference restarted at each impact: the impact times and φ(t_end) by step."""
    print(f"== slider_crank_stop (a prismatic limit, e = {oracles.STOP['e']}), {t_end:g} s")
    ref, phi_end = oracles.slider_crank_stop_reference(t_end)
    k = symgen.build(load("slider_crank_stop"))
    runs = [(dict(dt=h, preset=p), f"{p or 'default'} h = {h:g}")
            for p in (None, "paper") for h in (0.02, 0.01, 0.005, 0.0025)]
    runs += [(dict(dt="auto", rtol=r, atol=r * 1e-2), f"auto rtol = {r:.0e}")
             for r in (1e-6, 1e-8, 1e-10)]
    for kw, label in runs:
        res = symgen.simulate(k, t_end=t_end, **kw)
        err = (np.max(np.abs(res.t_impacts - ref[:, 0])) if len(res.t_impacts) == len(ref)
               else float("nan"))
        print(f"  {label}: {res.status}, {len(res.t_impacts)} impacts (reference "
              f"{len(ref)}), max |t_impact − ref| = {err:.1e} s, |φ(t_end) − ref| = "
              f"{abs(res.output('phi')[-1] - phi_end):.1e} rad, {res.meta['steps_done']} steps "
              f"({res.meta['stepper']} stepper)")


SECTIONS = {"andrews": andrews, "dfb": double_four_bar, "bricard": bricard, "n40": n40,
            "pendulums": pendulums, "stop": stop}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sections", nargs="*", choices=[[]] + list(SECTIONS), default=[])
    ap.add_argument("--full", action="store_true", help="N four-bar over the full 20 s")
    args = ap.parse_args(argv)
    for name in args.sections or list(SECTIONS):
        t0 = time.perf_counter()
        if name == "n40":
            n40(args.full)
        else:
            SECTIONS[name]()
        print(f"  ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
