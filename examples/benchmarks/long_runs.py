"""Long runs through the singular (all bars horizontal) passages of the N four-bar (issue 8 §2).

The double four-bar (N = 2) for 100 s at h = 1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2.5e-4 and the N four-bar
at N = 40 for 5 s at h = 1e-2 and 1e-3, all with the model's default settings (nullspace,
Fox–Goodwin, tol 1e-10, max_iter 25, rank_tol 1e-10).  Per run it prints: status, steps, steps
accepted at the round-off floor (``meta['floor_steps']``, first and last time), steps rescued by
sub-steps (``meta['substepped_steps']``), landings next to the singular
configuration stepped over (``meta['landing_steps']``), max ‖q‖, ‖q̇‖,
‖q̈‖, the largest error of B0 (position, m) against the exact one-dof solution
(``tests/oracles.py``: the mechanism stays a parallelogram, a_T θ̈ = −a_V g cos θ), wall time.

Run:  python examples/benchmarks/long_runs.py [--only N:H:T ...]      e.g. --only 2:1e-2:100
Each 100 s run of the double four-bar takes from seconds (h = 1e-2) to minutes (h = 2.5e-4).

The runs take the paper's step (``preset="paper"``), the one the figures in docs/ were
measured with; symgen's default step is another (docs/method.md, "The default step and the
paper's claims").
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import numpy as np

import symgen

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
import oracles  # noqa: E402  (the independent reference solutions live with the tests)

RUNS = [(2, h, 100.0) for h in (1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2.5e-4)] + [(40, 1e-2, 5.0),
                                                                        (40, 1e-3, 5.0)]


def model(N: int):
    if N == 2:
        return importlib.import_module("symgen.examples.double_four_bar").model()
    return importlib.import_module("symgen.examples.n_four_bar").model(N=N)


def one(N: int, h: float, t_end: float) -> str:
    kern = symgen.build(model(N))
    t0 = time.perf_counter()
    res = symgen.simulate(kern, dt=h, t_end=t_end, preset="paper")
    wall = time.perf_counter() - t0
    B_ref, _ = oracles.four_bar_reference(N, res.t)
    B = np.array([res.output("B0.x"), res.output("B0.y")])
    err = float(np.abs(B - B_ref[:2]).max()) if res.t.size > 1 else float("nan")
    meta = res.meta
    fl = meta.get("floor_steps", 0)
    when = ""
    if fl:
        when = f" (t = {meta['floor_times'][0]:.6g} … {meta['floor_t_last']:.6g})"
    rescued = "".join(f"  {what} {meta.get(f'{what}_steps', 0)}"
                      for what in ("substepped", "landing"))
    return (f"N = {N:2d}  h = {h:<7g} T = {t_end:g} s: {res.status:9s} steps {len(res.t) - 1:7d}  "
            f"at floor {fl}{when}{rescued}  max‖q‖ {res.pos_err.max():.2e}  "
            f"max‖q̇‖ {res.vel_err.max():.2e}  "
            f"max‖q̈‖ {res.acc_err.max():.2e}  B0 err {err:.2e} m  wall {wall:.1f} s"
            + (f"\n    reason: {res.reason}" if res.status != "completed" else ""))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", metavar="N:H:T", help="runs to do (default: all)")
    args = ap.parse_args(argv)
    runs = RUNS if not args.only else [tuple(float(v) for v in s.split(":")) for s in args.only]
    for N, h, t_end in runs:
        print(one(int(N), float(h), float(t_end)), flush=True)


if __name__ == "__main__":
    main()
