"""A PD-controlled planar 3R arm, five ways, side by side (issue 35, "Controllers at FMU speed";
docs/inputs.md, "A controller sampled and held"): the law written into f; the law as three
callable inputs (one call per input per step: the route before issue 35); the law as one
sampled controller (simulate(controller=, period=)) on fixed steps and on dt="auto"; and the
exported FMU (symgen.export_fmu, FMI 2.0) stepped from FMPy with the law between its steps.
Every route after one warm-up run; CPU seconds (time.process_time), steps and θ of the last
link at t_end against the law in f.  "rows at samples" records every Ts/dt-th step (``every``):
rows at the FMU loop's communication points, like for like with it (the FMU loop reads x, ẋ
there; simulate's rows also hold the energy, outputs, work and reactions).  simulate's default computes ω_max at the start only (the
default step is A-stable: ω_max bounds nothing; before issue 33's item 1 it did at every step,
~15 % of a step here, which the FMU does not), so the default row is like for like with the FMU;
the row with ``estimate=False`` (not even the start's) is kept as the check.

Run:  python examples/benchmarks/controller.py [--period 1e-3] [--dt 1e-3] [--t-end 4]
                                               [--rtol 1e-6] [--repeat 3]
"""
from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import symgen
from symgen.mechanics import PlanarSystem

LINK, MASS = 0.5, 1.0
KP, KD = 30.0, 2.0
REF = (0.8, -0.5, 0.4)                  # joint angles φ_i = θ_i − θ_(i−1) the PD drives to


def arm(law_in_f: bool):
    """Three links hinged end to end from the ground, gravity, a torque on each joint (−T on
    the link before): the PD law on the joint angle written into f, or inputs T1, T2, T3."""
    mech = PlanarSystem("arm3_pd_f" if law_in_f else "arm3_pd")
    links, prev, at = [], "ground", (0, 0)
    for i in range(3):
        b = mech.body(f"l{i + 1}", mass=MASS, inertia=MASS * LINK ** 2 / 12,
                      com=(LINK / 2, 0), points={"tip": (LINK, 0)}, x0=(i * LINK, 0, 0))
        mech.revolute(prev, at, b, (0, 0))
        links.append(b)
        prev, at = b, "tip"
    mech.gravity(9.81)
    for i, b in enumerate(links):
        if law_in_f:
            th = b.theta - (links[i - 1].theta if i else 0)
            thd = b.theta_dot - (links[i - 1].theta_dot if i else 0)
            T = -KP * (th - REF[i]) - KD * thd
        else:
            T = mech.input(f"T{i + 1}")
        mech.torque(b, T, reaction=links[i - 1] if i else None)
    return mech.model()


TH = (2, 5, 8)                          # θ of each link in x (l1.x, l1.y, l1.theta, l2.x, …)


def law(t, x, xd):
    """The PD law on the three joint angles, as a vector (T1, T2, T3)."""
    th, thd = x[list(TH)], xd[list(TH)]
    phi = th - np.concatenate(([0.0], th[:2]))
    phid = thd - np.concatenate(([0.0], thd[:2]))
    return -KP * (phi - REF) - KD * phid


def per_input(i):
    """Input T_(i+1) as its own callable u(t, x, xd) (the route of one call per input)."""
    return lambda t, x, xd: float(law(t, x, xd)[i])


def fmu_loop(path, names, t_end, period):
    """The FMU stepped from FMPy: per communication step read θ, θ̇, set T = law, doStep."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    x_vr = [vr[n] for n in names]
    xd_vr = [vr[n + "_dot"] for n in names]
    u_vr = [vr[f"T{i + 1}"] for i in range(3)]
    unzipped = extract(str(path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipped,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="arm")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    x, xd = np.zeros(9), np.zeros(9)
    x[list(TH)] = fmu.getReal([x_vr[i] for i in TH])
    fmu.setReal(u_vr, list(law(0.0, x, xd)))
    fmu.exitInitializationMode()
    n = int(round(t_end / period))
    t0 = time.process_time()
    for k in range(n):
        vals = fmu.getReal(x_vr + xd_vr)
        x[:], xd[:] = vals[:9], vals[9:]
        fmu.setReal(u_vr, list(law(k * period, x, xd)))
        fmu.doStep(currentCommunicationPoint=k * period, communicationStepSize=period)
    cpu = time.process_time() - t0
    th3 = fmu.getReal([x_vr[8]])[0]
    fmu.terminate()
    fmu.freeInstance()
    return cpu, n, th3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--period", type=float, default=1e-3, help="the controller's sample period")
    ap.add_argument("--dt", type=float, default=1e-3, help="the fixed step (divides the period)")
    ap.add_argument("--t-end", type=float, default=4.0)
    ap.add_argument("--rtol", type=float, default=1e-6, help="dt='auto''s rtol (atol 1e-8)")
    ap.add_argument("--repeat", type=int, default=3, help="the best of this many runs")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    T, Ts, dt = args.t_end, args.period, args.dt
    k_f, k_u = symgen.build(arm(True)), symgen.build(arm(False))
    callables = {f"T{i + 1}": per_input(i) for i in range(3)}
    auto = dict(dt="auto", rtol=args.rtol, atol=1e-8)
    routes = [
        ("law in f, fixed dt", k_f, dict(dt=dt)),
        ("law in f, auto", k_f, auto),
        ("3 callables per step, fixed", k_u, dict(dt=dt, inputs=callables)),
        ("controller, fixed dt", k_u, dict(dt=dt, controller=law, period=Ts)),
        ("controller, fixed, estimate=False", k_u, dict(dt=dt, controller=law, period=Ts,
                                                        estimate=False)),
        ("controller, fixed, rows at samples", k_u, dict(dt=dt, controller=law, period=Ts,
                                                         every=max(1, round(Ts / dt)))),
        ("controller, auto", k_u, dict(auto, controller=law, period=Ts)),
    ]
    print(f"3R arm, PD on each joint, t_end = {T:g} s, period = {Ts:g} s, dt = {dt:g} s, "
          f"auto rtol = {args.rtol:g}")
    print(f"{'route':34} {'steps':>7} {'samples':>8} {'CPU s':>8} {'θ3(t_end) − law in f':>22}")
    ref = None
    for label, k, kw in routes:
        symgen.simulate(k, t_end=min(T, 0.2), **kw)                 # warm-up
        best = np.inf
        for _ in range(args.repeat):
            t0 = time.process_time()
            r = symgen.simulate(k, t_end=T, **kw)
            best = min(best, time.process_time() - t0)
        assert r.status == "completed", r.reason
        if ref is None:
            ref = r.x[-1, 8]
        samples = r.meta.get("controller", {}).get("samples", "")
        steps = r.meta.get("steps_done", r.n_steps)           # (rows: every K-th step)
        print(f"{label:34} {steps:7d} {samples!s:>8} {best:8.3f} {r.x[-1, 8] - ref:+22.2e}",
              flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = symgen.export_fmu(arm(False), Path(tmp) / "arm3_pd.fmu", dt=dt)
        names = list(arm(False).coord_names)
        fmu_loop(path, names, min(T, 0.2), Ts)                         # warm-up
        best, th3 = np.inf, None
        for _ in range(args.repeat):
            cpu, n, th3 = fmu_loop(path, names, T, Ts)
            best = min(best, cpu)
        print(f"{'FMU (FMI 2) stepped from FMPy':34} {n * int(round(Ts / dt)):7d} {n:8d} "
              f"{best:8.3f} {th3 - ref:+22.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
