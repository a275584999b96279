"""The symmetric chart on the sparse step (issue 14 §2): CPU µs per step of the compiled sparse step
with the symmetric chart (N_s from a second sparse LU, of H_s[R, D] on the step's partition)
beside the compiled sparse step with the end chart and the compiled dense step (pivoted QR of H
and of H_s) with the symmetric chart, on the double four-bar (10 s, h = 1e-3) and ``n_four_bar``
N = 40 (1 s, h = 1e-3, through the first horizontal passage), Fox–Goodwin (the examples' scheme).

All runs in this one process, one BLAS thread (symgen's default), the runners interleaved in every
round; the time is symgen.simulate's CPU time (the process time: robust on a loaded machine) over
the number of steps, min over ``--repeat`` rounds (the dense step at N = 40, ~0.1 s a step, runs
``--dense-repeat`` rounds).  Also printed: the mean Newton iterations per step, and the largest
position difference of the sparse and the dense symmetric runs with the share of steps that took
the same number of Newton iterations.  The first build of N = 40 takes ~40 s (cached).

Run:  python examples/benchmarks/bench_sparse_chart.py [--repeat 3] [--dense-repeat 1]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import symgen
from symgen.loader import load_model

#: (label, factorization, chart)
RUNNERS = (("sparse, symmetric", "sparse", "symmetric"), ("sparse, end", "sparse", "end"),
           ("dense QR, symmetric", "qr", "symmetric"))
#: (label, model, model options, h, t_end)
CASES = (("double four-bar", "double_four_bar", {}, 1e-3, 10.0),
         ("n_four_bar N = 40", "n_four_bar", {"N": 40}, 1e-3, 1.0))


def run(k, h: float, t_end: float, factorization: str, chart: str):
    cpu = time.process_time()
    r = symgen.simulate(k, dt=h, t_end=t_end, stepper="compiled", factorization=factorization,
                        chart=chart)
    cpu = time.process_time() - cpu
    assert r.meta["stepper"] == "compiled" and r.meta["factorization"] == factorization, r.meta
    return 1e6 * cpu / r.meta["steps_done"], r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dense-repeat", type=int, default=1,
                    help="rounds of the dense step on the N four-bar (~0.1 s a step)")
    args = ap.parse_args(argv)
    for label, name, opts, h, t_end in CASES:
        k = symgen.build(load_model(name, **opts))
        cpus = {rc: [] for rc in RUNNERS}
        runs = {}
        for i in range(args.repeat):
            for rc in RUNNERS:
                if rc[1] == "qr" and k.n > 100 and i >= args.dense_repeat:
                    continue
                us, runs[rc] = run(k, h, t_end, rc[1], rc[2])
                cpus[rc].append(us)
        print(f"{label} (n = {k.n}), {t_end:g} s, h = {h:g}, compiled; CPU µs per step, min of "
              f"{args.repeat} rounds")
        print(f"  {'runner':22} {'CPU µs/step':>12} {'iters/step':>11}  status")
        for rc in RUNNERS:
            r = runs[rc]
            its = r.meta["run_stats"]["newton_iters_total"] / r.meta["steps_done"]
            print(f"  {rc[0]:22} {min(cpus[rc]):12.1f} {its:11.3f}  {r.status}")
        s, d = runs[RUNNERS[0]], runs[RUNNERS[2]]
        print(f"  sparse vs dense symmetric: max|Δx| = {np.max(np.abs(s.x - d.x)):.2e}, same "
              f"Newton iterations on {100 * np.mean(s.newton_iters == d.newton_iters):.1f} % of "
              f"the steps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
