"""The index-3 method under dt="auto" (issue 21; docs/variable-step.md): HHT-α with its own local
error estimate.  The stiff pendulum's θ error over 20 s against minimal coordinates and Andrews'
angle error at 0.03 s against the Test Set, for rtol = atol = 1e-5 … 1e-8, beside fixed HHT steps
(the C runtime's runs).

Run:  python examples/benchmarks/index3_auto.py [--alpha -0.1]
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np

import symgen
from symgen.reproduce import ANDREWS_REF, ANDREWS_REF_T
from symgen.reproduce.references import minimal_pendulum, scipy_reference

ANGLES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=-0.1)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    scheme = f"hht:{args.alpha:g}"
    pend = symgen.build(symgen.load_model("stiff_pendulum"))
    andr = symgen.build(symgen.load_model("andrews_squeezer"))

    def err_pend(r):
        x, _ = scipy_reference(minimal_pendulum(), r.t)
        return float(np.max(np.abs(r.output("theta") - x[:, 0])))

    def err_andr(r):
        return float(np.max(np.abs([r.output(a)[-1] - v for a, v in zip(ANGLES, ANDREWS_REF)])))

    print(f"{'problem':10} {'run':14} {'steps':>7} {'rejected':>8} {'error':>10}")
    for label, k, t_end, err, hs in (("pendulum", pend, 20.0, err_pend, (0.1, 0.02, 0.01)),
                                     ("Andrews", andr, ANDREWS_REF_T, err_andr,
                                      (1e-5, 4e-6, 2e-6))):
        for rtol in (1e-5, 1e-6, 1e-7, 1e-8):
            r = symgen.simulate(k, method="index3", scheme=scheme, dt="auto", rtol=rtol,
                                atol=rtol, t_end=t_end)
            print(f"{label:10} {'auto ' + format(rtol, 'g'):14} {len(r.t) - 1:7d} "
                  f"{r.meta['step_control']['rejected_steps']:8d} {err(r):10.3g}  {r.status}")
        for h in hs:
            r = symgen.simulate(k, method="index3", scheme=scheme, dt=h, t_end=t_end)
            print(f"{label:10} {'fixed ' + format(h, 'g'):14} {len(r.t) - 1:7d} {'':8} "
                  f"{err(r):10.3g}  {r.status}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
