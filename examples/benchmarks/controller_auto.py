"""dt="auto" with a sampled controller against the law written in f (issue 35; docs/inputs.md, "A
controller sampled and held"): the 3R PD arm of controller.py, 4 s, for Ts = 10 ms and 1 ms and
rtol 1e-6, 1e-8, 1e-10 (atol 1e-8): steps, rejected tries, CPU seconds (best of --repeat after a
warm-up, time.process_time) of the law in f under dt="auto" and of the controller under
dt="auto", and θ3(4 s) of the controller's run against the piecewise reference (the same
controller on fixed steps of Ts/64).  The issue's target: the controller's steps at most
2 × max(law in f's steps, samples), few rejected.

Run:  python examples/benchmarks/controller_auto.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import time
import warnings

import symgen

from controller import arm, law


def _best(kern, kw, repeat):
    symgen.simulate(kern, **{**kw, "t_end": 0.2})                      # warm-up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        r = symgen.simulate(kern, **kw)
        best = min(best, time.process_time() - t0)
    assert r.status == "completed", r.reason
    return r, best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="the best of this many runs")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    k_f, k_u = symgen.build(arm(True)), symgen.build(arm(False))
    print(f"{'Ts':>6} {'rtol':>6} | {'law in f: steps':>15} {'rej':>4} {'CPU s':>6} | "
          f"{'controller: steps':>17} {'rej':>4} {'CPU s':>6} {'θ3 − piecewise':>15}")
    for Ts in (1e-2, 1e-3):
        ref = symgen.simulate(k_u, controller=law, period=Ts, dt=Ts / 64, t_end=4.0).x[-1, 8]
        for rtol in (1e-6, 1e-8, 1e-10):
            auto = dict(dt="auto", rtol=rtol, atol=1e-8, t_end=4.0)
            rf, cf = _best(k_f, auto, args.repeat)
            r, c = _best(k_u, dict(auto, controller=law, period=Ts), args.repeat)
            print(f"{Ts:6g} {rtol:6g} | {rf.n_steps:15d} "
                  f"{rf.meta['step_control']['rejected_steps']:4d} {cf:6.3f} | "
                  f"{r.n_steps:17d} {r.meta['step_control']['rejected_steps']:4d} {c:6.3f} "
                  f"{r.x[-1, 8] - ref:+15.2e}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
