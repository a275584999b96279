"""Energy under dt="auto" against fixed steps (issue 21; docs/variable-step.md, "Energy under
dt=auto"): a conservative model's E(t_end) − E(0) over 100 s for rtol = atol = 1e-3 … 1e-6, both
charts, the symmetric chart with the mass metric, and a fixed step of about the auto run's mean h
beside each (C stepper).

Run:  python examples/benchmarks/auto_energy.py [--t-end 100]
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np

import symgen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=100.0)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    T = args.t_end
    print(f"{'model':16} {'chart':14} {'rtol':>7} {'steps':>7} {'ΔE auto':>10} "
          f"{'fixed h':>8} {'ΔE fixed':>10}")
    for name in ("double_four_bar", "bricard"):
        k = symgen.build(symgen.load_model(name))
        for chart, metric in (("end", "euclidean"), ("symmetric", "euclidean"),
                              ("symmetric", "mass")):
            for rtol in (1e-3, 1e-4, 1e-5, 1e-6):
                r = symgen.simulate(k, dt="auto", rtol=rtol, atol=rtol, t_end=T, chart=chart,
                                    metric=metric)
                h = T / (len(r.t) - 1)                      # the auto run's mean step
                f = symgen.simulate(k, dt=h, t_end=T, chart=chart, metric=metric)
                label = chart + (" mass" if metric == "mass" else "")
                print(f"{name:16} {label:14} {rtol:7.0e} {len(r.t) - 1:7d} "
                      f"{r.energy[-1] - r.energy[0]:+10.3g} {h:8.3g} "
                      f"{f.energy[-1] - f.energy[0]:+10.3g}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
