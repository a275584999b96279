"""The sparse null-space step (issue 14, ``factorization="sparse"``) against the dense one, both in
Python: µs per step of ``n_four_bar`` at N = 10, 20, 40 (h = 1e-3, 0.2 s, Fox–Goodwin), one BLAS
thread, the two factorizations alternated ``--repeat`` times in one process (min and median),
with the largest position difference and the share of steps with equal Newton iteration counts;
for scale, the compiled dense step (C, pivoted QR: today's default) too.

The time per step is the difference of symgen.simulate's wall times over t_end and over t_end/10,
divided by the difference of their step counts, so the fixed cost of a run (consistent start,
stepper set-up, first partition) drops out.  The first build of N = 40 takes ~40 s (cached).

Run:  python examples/benchmarks/bench_sparse_step.py [--N 10,20,40] [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import symgen
from symgen.loader import load_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", default="10,20,40")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--t-end", type=float, default=0.2)
    args = ap.parse_args()
    sim = dict(dt=1e-3, stepper="python", blas_threads=1)
    print(f"n_four_bar, h = 1e-3, {args.t_end} s, Python stepper, µs per step (min / median of "
          f"{args.repeat})")
    print(f"{'N':>4} {'n':>5} {'nnz(H)':>7} {'dense':>17} {'sparse':>17} {'dense/sparse':>12} "
          f"{'max|dx|':>9} {'same it':>8} {'compiled dense':>17}")
    for N in (int(v) for v in args.N.split(",")):
        k = symgen.build(load_model("n_four_bar", N=N))
        times = {"auto": [], "sparse": [], "compiled": []}
        runs = {}
        for _ in range(args.repeat):
            for fac in times:
                opts = ({**sim, "stepper": "compiled"} if fac == "compiled"
                        else {**sim, "factorization": fac})
                wall, steps = [], []
                for t_end in (args.t_end / 10, args.t_end):
                    t0 = time.perf_counter()
                    r = symgen.simulate(k, **{**opts, "t_end": t_end})
                    wall.append(time.perf_counter() - t0)
                    steps.append(r.meta["steps_done"])
                times[fac].append((wall[1] - wall[0]) / (steps[1] - steps[0]) * 1e6)
                runs[fac] = r
        d, s = runs["auto"], runs["sparse"]
        fmt = lambda v: f"{min(v):7.0f} / {statistics.median(v):7.0f}"  # noqa: E731
        print(f"{N:>4} {k.n:>5} {k.nnz_H:>7} {fmt(times['auto']):>17} {fmt(times['sparse']):>17} "
              f"{min(times['auto']) / min(times['sparse']):>12.2f} "
              f"{np.max(np.abs(d.x - s.x)):>9.1e} {np.mean(d.newton_iters == s.newton_iters):>8.3f} "
              f"{fmt(times['compiled']):>17}")


if __name__ == "__main__":
    main()
