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

Run:  python examples/benchmarks/bench_peers.py [--cases dfb-1e-3,stiff] [--repeat 3]
Exudyn is not driven by this script yet (see the closing note of issue 10).
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


def _oracles():
    path = HERE.parents[2] / "tests" / "oracles.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("symgen_test_oracles", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_one(case: str, runner: str) -> dict:
    """One simulation in this process; returns the figures as a dict."""
    import numpy as np

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
          f"{'energy drift':>14}{'max|q|':>10}{'B0 err':>10}  ratio python/compiled (min, median)")
    for case in cases:
        rows = {r: [] for r in RUNNERS}
        for _ in range(args.repeat):
            for runner in RUNNERS:           # interleaved, a fresh process each
                proc = subprocess.run([sys.executable, str(HERE), "--one", case, runner],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise SystemExit(f"{case}/{runner} failed:\n{proc.stderr[-3000:]}")
                rows[runner].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        ratios = [p["us_per_step"] / c["us_per_step"] for c, p in zip(rows["compiled"], rows["python"])]
        for runner in RUNNERS:
            us = [r["us_per_step"] for r in rows[runner]]
            last = rows[runner][-1]
            tail = (f"  {min(ratios):.1f}×, {statistics.median(ratios):.1f}×"
                    if runner == "compiled" else "")
            b0 = last.get("B0_error_end")
            print(f"{case:<14}{runner:<10}{min(us):>12.1f}{statistics.median(us):>10.1f}"
                  f"{last['iters_per_step']:>7.2f}{last.get('energy_drift', float('nan')):>14.3e}"
                  f"{last['max_q']:>10.1e}{(f'{b0:.2e}' if b0 is not None else '-'):>10}{tail}"
                  + ("" if last["status"] == "completed" else f"  status {last['status']}"))


if __name__ == "__main__":
    main()
