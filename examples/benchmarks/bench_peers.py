"""Compiled stepper vs Python stepper (vs Exudyn when installed): µs per step and accuracy.

Each run is a fresh process (``--one CASE RUNNER``), one BLAS thread (threadpoolctl, symgen's
default), the runners interleaved in every round; the table gives min and median µs/step over the
rounds and the ratio python/compiled within each round (min and median), plus each run's accuracy:
the four-bars' B0 error at the end against the exact one-dof solution (``tests/oracles.py``), the
energy drift max|E − E0|, and the largest constraint residual ‖q‖.  The time is symgen.simulate's
whole wall time (consistent initial state and recording included) over the number of steps.

Cases (issue 10): double four-bar 10 s at h = 1e-3 and 1e-2, Bricard 10 s at h = 1e-2 and 1e-3,
stiff pendulum h = 0.1 to 100 s, Andrews (Fox–Goodwin, h = 2e-6, t = 0.03), N four-bar N = 40
(h = 1e-2, 1 s here: the Python stepper takes ~20 ms a step).

Exudyn (optional, ``pip install exudyn``; measured with 1.13.6) runs the double four-bar cases:
five RigidBody2D bars, seven RevoluteJoint2D, index-3 generalized-α with full Newton, fixed step,
dense solver, ρ∞ = 0.8 (with ρ∞ = 1 and the adaptive step its Newton fails at the singular passage
near t = 7.5 s); its time is SolveDynamic's wall time.  Without Exudyn the script prints symgen's
figures only.

Run:  python examples/benchmarks/bench_peers.py [--cases dfb-1e-3,stiff] [--repeat 3]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve()

#: case → (example, dt, t_end, scheme or None for the example's)
CASES = {
    "dfb-1e-3": ("double_four_bar", 1e-3, 10.0, None),
    "dfb-1e-2": ("double_four_bar", 1e-2, 10.0, None),
    "bricard-1e-2": ("bricard", 1e-2, 10.0, None),
    "bricard-1e-3": ("bricard", 1e-3, 10.0, None),
    "stiff": ("stiff_pendulum", 0.1, 100.0, None),
    "andrews": ("andrews_squeezer", 2e-6, 0.03, None),
    "n40": ("n_four_bar", 1e-2, 1.0, None),
}
RUNNERS = ("compiled", "python")
#: the cases the Exudyn runner models
EXUDYN_CASES = ("dfb-1e-3", "dfb-1e-2")


def _have_exudyn() -> bool:
    return importlib.util.find_spec("exudyn") is not None


def _oracles():
    path = HERE.parents[2] / "tests" / "oracles.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("symgen_test_oracles", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_exudyn(case: str) -> dict:
    """The double four-bar in Exudyn (see the module docstring)."""
    import time

    import exudyn as exu
    import exudyn.itemInterface as ei
    import numpy as np

    _, h, t_end, _ = CASES[case]
    N, v0, L, m, g = 2, 1.0, 1.0, 1.0, 9.81
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ei.ObjectGround())

    def body(x, y, th, vx, vy, w):
        n = mbs.AddNode(ei.NodeRigidBody2D(referenceCoordinates=[x, y, th],
                                           initialVelocities=[vx, vy, w]))
        b = mbs.AddObject(ei.ObjectRigidBody2D(mass=m, inertia=m * L * L / 12, nodeNumber=n))
        mm = mbs.AddMarker(ei.MarkerBodyMass(bodyNumber=b))
        mbs.AddLoad(ei.LoadMassProportional(markerNumber=mm, loadVector=[0, -g, 0]))
        return n, b

    def marker(b, p):
        return mbs.AddMarker(ei.MarkerBodyPosition(bodyNumber=b, localPosition=[p[0], p[1], 0]))

    V = [body(i * L, L / 2, np.pi / 2, v0 / 2, 0, -v0 / L) for i in range(N + 1)]
    C = [body((i - 0.5) * L, L, 0, v0, 0, 0) for i in range(1, N + 1)]
    A, B = (-L / 2, 0), (L / 2, 0)
    for i in range(N + 1):
        mbs.AddObject(ei.ObjectJointRevolute2D(markerNumbers=[marker(ground, (i * L, 0)),
                                                              marker(V[i][1], A)]))
    for i in range(1, N + 1):
        mbs.AddObject(ei.ObjectJointRevolute2D(markerNumbers=[marker(V[i - 1][1], B),
                                                              marker(C[i - 1][1], A)]))
        mbs.AddObject(ei.ObjectJointRevolute2D(markerNumbers=[marker(C[i - 1][1], B),
                                                              marker(V[i][1], B)]))
    mbs.Assemble()
    s = exu.SimulationSettings()
    steps = int(round(t_end / h))
    s.timeIntegration.numberOfSteps = steps
    s.timeIntegration.endTime = t_end
    s.timeIntegration.verboseMode = 0
    s.timeIntegration.adaptiveStep = False
    s.timeIntegration.newton.useModifiedNewton = False
    s.timeIntegration.generalizedAlpha.spectralRadius = 0.8
    s.solution.file.write = False
    s.linearSolver.solverType = exu.LinearSolverType.EXUdense
    tic = time.perf_counter()
    mbs.SolveDynamic(s)
    wall = time.perf_counter() - tic
    pos = mbs.GetNodeOutput(V[0][0], exu.OutputVariableType.Position)
    th = float(np.ravel(mbs.GetNodeOutput(V[0][0], exu.OutputVariableType.Rotation))[-1])
    out = {"case": case, "runner": "exudyn", "status": "completed", "steps": steps,
           "us_per_step": 1e6 * wall / steps, "iters_per_step": float("nan"),
           "max_q": float("nan")}
    orc = _oracles()
    if orc is not None:
        B_ref, _ = orc.four_bar_reference(2, np.array([0.0, t_end]))
        out["B0_error_end"] = float(np.hypot(pos[0] + L / 2 * np.cos(th) - B_ref[0, -1],
                                             pos[1] + L / 2 * np.sin(th) - B_ref[1, -1]))
    return out


def run_one(case: str, runner: str) -> dict:
    """One simulation in this process; returns the figures as a dict."""
    import numpy as np

    if runner == "exudyn":
        return run_exudyn(case)

    import symgen

    example, dt, t_end, scheme = CASES[case]
    kern = symgen.build(symgen.load_model(example))
    symgen.simulate(kern, dt=dt, t_end=5 * dt, scheme=scheme, stepper=runner)   # warm up
    res = symgen.simulate(kern, dt=dt, t_end=t_end, scheme=scheme, stepper=runner)
    steps = len(res.t) - 1
    out = {"case": case, "runner": runner, "status": res.status, "steps": steps,
           "us_per_step": 1e6 * res.meta["wall_time"] / max(steps, 1),
           "iters_per_step": float(np.mean(res.newton_iters[1:])) if steps else float("nan"),
           "max_q": float(np.max(res.pos_err))}
    if res.energy is not None:
        out["energy_drift"] = float(np.max(np.abs(res.energy - res.energy[0])))
    orc = _oracles()
    if orc is not None and example in ("double_four_bar", "n_four_bar"):
        N = 2 if example == "double_four_bar" else 40
        B_ref, _ = orc.four_bar_reference(N, res.t)
        B = np.array([res.output(f"B0.{k}") for k in ("x", "y")])
        out["B0_error_end"] = float(np.hypot(*(B[:, -1] - B_ref[:2, -1])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    ap.add_argument("--repeat", type=int, default=3, help="rounds (each runner once per round)")
    ap.add_argument("--one", nargs=2, metavar=("CASE", "RUNNER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one)))
        return
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"unknown case {c!r}; known: {', '.join(CASES)}")
    print(f"{'case':<14}{'runner':<10}{'µs/step min':>12}{'median':>10}{'iters':>7}"
          f"{'energy drift':>14}{'max|q|':>10}{'B0 err':>10}  time ratio to compiled in each round "
          "(min, median)")
    for case in cases:
        runners = RUNNERS + (("exudyn",) if case in EXUDYN_CASES and _have_exudyn() else ())
        rows = {r: [] for r in runners}
        for _ in range(args.repeat):
            for runner in runners:           # interleaved, a fresh process each
                proc = subprocess.run([sys.executable, str(HERE), "--one", case, runner],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise SystemExit(f"{case}/{runner} failed:\n{proc.stderr[-3000:]}")
                rows[runner].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        ratios = {r: [p["us_per_step"] / c["us_per_step"] for c, p in zip(rows["compiled"], rows[r])]
                  for r in runners if r != "compiled"}
        for runner in runners:
            us = [r["us_per_step"] for r in rows[runner]]
            last = rows[runner][-1]
            tail = ("" if runner == "compiled" else
                    f"  {runner}/compiled {min(ratios[runner]):.2f}×, "
                    f"{statistics.median(ratios[runner]):.2f}×")
            b0 = last.get("B0_error_end")
            print(f"{case:<14}{runner:<10}{min(us):>12.1f}{statistics.median(us):>10.1f}"
                  f"{last['iters_per_step']:>7.2f}{last.get('energy_drift', float('nan')):>14.3e}"
                  f"{last['max_q']:>10.1e}{(f'{b0:.2e}' if b0 is not None else '-'):>10}{tail}"
                  + ("" if last["status"] == "completed" else f"  status {last['status']}"))


if __name__ == "__main__":
    main()
