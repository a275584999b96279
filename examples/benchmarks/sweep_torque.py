"""The paper's torque-amplitude study (Sec. 3) as a sweep: serial against a 2-worker Dask cluster.

The stiff pendulum with T = T0 sin(ω̄ t), T0 = 5, 6, 7, 8, 9 N m, both the null-space method and
classical index-3 Newmark, trapezoidal rule, h = 0.1 s, 300 s (3000 steps a run, 10 runs).  Runs the
grid serially (``workers=0``, this process) and on a local Dask cluster of 2 worker processes
(the cluster's start-up timed apart), checks that both give the same table, and prints
the table (status, steps, max |θ|, max ‖q‖ per run) and both wall times.

Run:  python examples/benchmarks/sweep_torque.py [--t-end 300] [--workers 2] [--out DIR]
Needs dask[distributed] (pip install -e ".[sweep]").
"""
from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

import symgen
from symgen.loader import load_model

GRID = {"T0": [5.0, 6.0, 7.0, 8.0, 9.0], "method": ["nullspace", "index3"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=300.0)
    ap.add_argument("--dt", type=float, default=0.1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, help="keep the two studies here (default: a temp dir)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)     # diverged runs are rows of the table
    import distributed  # noqa: F401  (sets the levels of its loggers, which we lower next)
    for name in ["distributed"] + [n for n in logging.root.manager.loggerDict
                                   if n.startswith("distributed.")]:
        logging.getLogger(name).setLevel(logging.ERROR)

    model = load_model("stiff_pendulum")
    symgen.build(model)                      # compile once up front: both timings exclude it
    root = args.out or Path(tempfile.mkdtemp(prefix="sweep-torque-"))
    opts = dict(scheme="trapezoidal", dt=args.dt, t_end=args.t_end)
    runs = len(GRID["T0"]) * len(GRID["method"])
    print(f"stiff pendulum torque study: {runs} runs of {round(args.t_end / args.dt)} steps "
          f"(h = {args.dt:g} s, t_end = {args.t_end:g} s, trapezoidal)")

    t0 = time.perf_counter()
    serial = symgen.sweep(model, GRID, out=root / "serial", workers=0, **opts)
    t_serial = time.perf_counter() - t0
    from dask.distributed import Client, LocalCluster
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    t_start = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        dask = symgen.sweep(model, GRID, out=root / "dask", client=client, **opts)
        t_dask = time.perf_counter() - t0
    finally:
        client.close()
        cluster.close()

    keys = ("status", "steps", "final.theta", "max_abs.theta", "max_pos_err")
    same = all(all(a[k] == b[k] for k in keys) for a, b in zip(serial.rows, dask.rows))
    print(f"\n{'T0':>4} {'method':10} {'status':10} {'steps':>6} {'max |θ| [rad]':>14} "
          f"{'max ‖q‖':>10}  reason")
    for r in serial.rows:
        print(f"{r['T0']:4g} {r['method']:10} {r['status']:10} {r['steps']:6d} "
              f"{r['max_abs.theta']:14.6g} {r['max_pos_err']:10.3g}  {r['reason'][:60]}")
    print(f"\nserial (1 process)            {t_serial:7.2f} s")
    print(f"Dask, {args.workers} local workers        {t_dask:7.2f} s  speed-up "
          f"{t_serial / t_dask:.2f}× (+ {t_start:.2f} s to start the cluster: "
          f"{t_serial / (t_dask + t_start):.2f}× with it)")
    print(f"CPU cores available           {len(os.sched_getaffinity(0))}")
    print(f"tables identical              {'yes' if same else 'NO'}")
    print(f"studies in                    {root}")


if __name__ == "__main__":
    main()
