"""The symmetric chart in C (issues 10, 11): µs per step of the double four-bar, 10 s at h = 1e-3
and 1e-2 (Fox–Goodwin, the example's settings), compiled end chart vs compiled symmetric chart vs
the Python stepper with either chart, with the mean Newton iterations per step and the energy
drift of each run.

All runs in this one process, one BLAS thread (symgen's default), the runners interleaved in every
round; the time is symgen.simulate's whole wall time (and its CPU time: the process time, robust
on a loaded machine) over the number of steps; min and median over the rounds.  Issue 11's criterion "mean Newton iterations within +0.7 of the end chart" is printed
per case.

Run:  python examples/benchmarks/bench_chart.py [--repeat 3] [--t-end 10]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import symgen

RUNNERS = (("compiled", "end"), ("compiled", "symmetric"), ("python", "end"), ("python", "symmetric"))


def run(k, h: float, t_end: float, stepper: str, chart: str):
    tic, cpu = time.perf_counter(), time.process_time()
    r = symgen.simulate(k, dt=h, t_end=t_end, stepper=stepper, chart=chart, every=10)
    wall, cpu = time.perf_counter() - tic, time.process_time() - cpu
    assert r.meta["stepper"] == stepper and r.meta["chart"] == chart, r.meta
    steps = r.meta["steps_done"]
    stats = r.meta["run_stats"]
    return (1e6 * wall / steps, 1e6 * cpu / steps, stats["newton_iters_total"] / steps,
            float(np.max(np.abs(r.energy - r.energy[0]))), r.status)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--t-end", type=float, default=10.0)
    args = ap.parse_args(argv)
    k = symgen.build(symgen.load_model("double_four_bar"))
    for h in (1e-3, 1e-2):
        times = {rc: [] for rc in RUNNERS}
        cpus = {rc: [] for rc in RUNNERS}
        info = {}
        for _ in range(args.repeat):
            for rc in RUNNERS:
                us, cpu, its, dE, status = run(k, h, args.t_end, *rc)
                times[rc].append(us)
                cpus[rc].append(cpu)
                info[rc] = (its, dE, status)
        print(f"double four-bar, {args.t_end:g} s, h = {h:g} ({args.repeat} rounds)")
        print(f"  {'stepper':9} {'chart':10} {'µs/step min':>12} {'median':>9} {'CPU µs min':>11} "
              f"{'iters/step':>11} {'max|E-E0| J':>12}  status")
        for rc in RUNNERS:
            its, dE, status = info[rc]
            print(f"  {rc[0]:9} {rc[1]:10} {min(times[rc]):12.1f} {statistics.median(times[rc]):9.1f} "
                  f"{min(cpus[rc]):11.1f} {its:11.3f} {dE:12.3e}  {status}")
        d = info[("compiled", "symmetric")][0] - info[("compiled", "end")][0]
        print(f"  compiled: symmetric − end mean Newton iterations = {d:+.3f} (issue 11: ≤ +0.7)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
