"""The sparse null-space step (issue 14, ``factorization="sparse"``) against the dense one: µs per
step of ``n_four_bar`` at N = 10, 20, 40, 80 (h = 1e-3, 0.2 s, Fox–Goodwin), one BLAS thread, the
steps alternated ``--repeat`` times in one process (min and median): the compiled dense step (C,
pivoted QR of H), the compiled sparse step (C, ``symgen_sparse.c``) and the Python sparse step
(``--python-dense`` adds the Python dense step); with the largest position difference of the
compiled and the Python sparse steps (relative to max|x|) and the share of steps with equal Newton
iteration counts.  ``--N 1,2,3,5,7,10 --compiled-only`` measures the crossover of the two C steps
that ``factorization="auto"`` uses (``symgen.steppers.compiled.SPARSE_FROM_N``).

The time per step is the difference of symgen.simulate's wall times over t_end and over t_end/10,
divided by the difference of their step counts, so the fixed cost of a run (consistent start,
stepper set-up, first partition) drops out.  The compiled dense step runs over t_end · (40/N)² from
N = 80 on (it costs ~0.1 s per step there).  The first build of N = 40 takes ~40 s, of N = 80
a few minutes (cached).

Run:  python examples/benchmarks/bench_sparse_step.py [--N 10,20,40,80] [--repeat 3]

The runs take the paper's step (``preset="paper"``), the one the figures in docs/ were
measured with; symgen's default step is another (docs/method.md, "The default step and the
paper's claims").
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import symgen
from symgen.loader import load_model

#: column → simulate options
STEPS = {"compiled dense": dict(stepper="compiled", factorization="qr"),
         "compiled sparse": dict(stepper="compiled", factorization="sparse"),
         "Python sparse": dict(stepper="python", factorization="sparse"),
         "Python dense": dict(stepper="python", factorization="qr")}


def per_step(k, opts: dict, t_end: float) -> tuple[float, object]:
    """µs per step from the runs over t_end / 10 and t_end; and the longer run."""
    wall, steps = [], []
    for span in (t_end / 10, t_end):
        t0 = time.perf_counter()
        r = symgen.simulate(k, **{**opts, "t_end": span}, preset="paper")
        wall.append(time.perf_counter() - t0)
        steps.append(r.meta["steps_done"])
    return (wall[1] - wall[0]) / (steps[1] - steps[0]) * 1e6, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", default="10,20,40,80")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--t-end", type=float, default=0.2)
    ap.add_argument("--compiled-only", action="store_true", help="the two C steps only")
    ap.add_argument("--python-dense", action="store_true", help="add the Python dense step")
    args = ap.parse_args()
    cols = [c for c in STEPS if (c != "Python dense" or args.python_dense)
            and (not args.compiled_only or c.startswith("compiled"))]
    base = dict(dt=1e-3, blas_threads=1)
    print(f"n_four_bar, h = 1e-3, {args.t_end} s, µs per step (min / median of {args.repeat})")
    print(f"{'N':>4} {'n':>5} {'nnz(H)':>7} " + " ".join(f"{c:>17}" for c in cols)
          + f" {'dense/sparse C':>14} {'C vs Py |dx|':>12} {'same it':>8}")
    for N in (int(v) for v in args.N.split(",")):
        k = symgen.build(load_model("n_four_bar", N=N))
        times = {c: [] for c in cols}
        runs = {}
        for _ in range(args.repeat):
            for c in cols:
                span = args.t_end * ((40 / N) ** 2 if N >= 80 and "dense" in c else 1.0)
                us, runs[c] = per_step(k, {**base, **STEPS[c]}, span)
                times[c].append(us)
        fmt = lambda v: f"{min(v):7.0f} / {statistics.median(v):7.0f}"  # noqa: E731
        ratio = min(times["compiled dense"]) / min(times["compiled sparse"])
        line = (f"{N:>4} {k.n:>5} {k.nnz_H:>7} " + " ".join(f"{fmt(times[c]):>17}" for c in cols)
                + f" {ratio:>14.2f}")
        if "Python sparse" in runs:
            c, p = runs["compiled sparse"], runs["Python sparse"]
            dx = np.max(np.abs(c.x - p.x)) / max(1.0, float(np.max(np.abs(p.x))))
            line += f" {dx:>12.1e} {np.mean(c.newton_iters == p.newton_iters):>8.3f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
