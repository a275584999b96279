"""The corrected step against the paper's (docs/fourth-order-step.md): its order on four models
with every kind of force, the paper's stiff-pendulum stability claims under it, and the error
floor a Newton tolerance leaves on the double four-bar.

- order: errors at t = 2 s at h and h/2 (references: a closed form, SciPy's DOP853 at 1e-13 on the
  minimal-coordinate equations; the models of tests/test_fourth_order.py), both charts;
- stability: the stiff pendulum (Sec. 3), Fox–Goodwin and trapezoidal, h around the paper's
  limit 0.78–0.79 s, max |θ| over 200 s, the paper's step and the corrected one;
- Newton: the double four-bar over 10 s, error of B0.x against the exact one-dof motion, fixed h
  from 5e-3 to 5e-4 at Newton tolerances 1e-10, 1e-12, 1e-13;
- newton-auto: Andrews' squeezer under dt="auto" over an rtol sweep, Newton at the former 1e-10
  and at settings.newton_tol's value;
- step-cost: CPU per fixed step on bench_pydy.py's open chains (N = 5, 20; from_sympy and the
  planar builder), by default and with the per-step ω_max estimate, against the paper's step;
- monotone: every work_precision.py panel under the defaults, fixed h down to 1e-4 and dt="auto"
  with rtol down to 1e-12, against each panel's reference (issue 33 item 5; the floors and their
  causes: docs/fourth-order-step.md).

Run:  python examples/benchmarks/fourth_order.py
          [--only order|stability|newton|newton-auto|step-cost|monotone] [--panel EXAMPLE]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

import symgen

HERE = Path(__file__).resolve().parent
PRESETS = {"paper": dict(chart="end", metric="euclidean"),
           "corrected": dict(chart="symmetric", metric="mass")}


def order() -> None:
    sys.path.insert(0, str(HERE.parents[1] / "tests"))
    from test_fourth_order import CASES, T_END

    print("order: errors at t = 2 s (Newton 1e-13)")
    for name, (make, ref, cols, h) in sorted(CASES.items()):
        k, r0 = symgen.build(make()), ref()
        for label, opts in PRESETS.items():
            errs = []
            for dt in (h, h / 2):
                r = symgen.simulate(k, t_end=T_END, dt=dt, tol=1e-13, **opts)
                errs.append(float(np.max(np.abs(r.x[-1][cols] - r0))))
            print(f"  {name:20s} {label:9s} h = {h:g}: {errs[0]:.3e}  h/2: {errs[1]:.3e}  "
                  f"order {math.log2(errs[0] / errs[1]):.2f}")


def stability() -> None:
    k = symgen.build(symgen.load_model("stiff_pendulum"))
    print("stability: the stiff pendulum over 200 s, max |theta| (rad)")
    for label, opts in PRESETS.items():
        for scheme in ("fox-goodwin", "trapezoidal"):
            row = []
            for h in (0.5, 0.78, 0.79, 1.0, 2.0):
                r = symgen.simulate(k, dt=h, t_end=200.0 - 200.0 % h, scheme=scheme, **opts)
                th = np.nanmax(np.abs(r.coord("pendulum.theta")))
                row.append(f"h = {h:g}: {th:.3g}" + ("" if r.status == "completed" else " (failed)"))
            print(f"  {label:9s} {scheme:12s} " + "; ".join(row))


def newton() -> None:
    sys.path.insert(0, str(HERE))
    from work_precision import four_bar_theta

    ref = four_bar_theta()(10.0, method="DOP853", rtol=1e-13, atol=1e-13, dense_output=True).sol
    k = symgen.build(symgen.load_model("double_four_bar"))
    print("newton: double four-bar, max |B0.x error| over 10 s, corrected step")
    for tol in (1e-10, 1e-12, 1e-13):
        row = []
        for h in (5e-3, 2e-3, 1e-3, 5e-4):
            r = symgen.simulate(k, t_end=10.0, dt=h, tol=tol, **PRESETS["corrected"])
            row.append(f"h = {h:g}: {np.max(np.abs(r.output('B0.x') - np.cos(ref(r.t)[0]))):.2e}")
        print(f"  tol {tol:.0e}: " + "; ".join(row))


def newton_auto() -> None:
    from symgen.reproduce import ANDREWS_REF, ANDREWS_REF_T

    angles = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")
    k = symgen.build(symgen.load_model("andrews_squeezer"))
    print("newton-auto: Andrews under dt='auto' (Fox–Goodwin), max angle error at 0.03 s")
    for rtol in (1e-6, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12):
        row = []
        for tol in (1e-10, None):              # the former fixed value, settings.newton_tol
            r = symgen.simulate(k, dt="auto", t_end=ANDREWS_REF_T, rtol=rtol, atol=rtol, tol=tol,
                                scheme="fox-goodwin")
            e = max(abs(r.output(a)[-1] - ref) for a, ref in zip(angles, ANDREWS_REF))
            row.append(f"tol {r.meta['tol']:.0e}: {e:.2e}, {len(r.t) - 1} steps")
        print(f"  rtol {rtol:.0e}: " + "; ".join(row))


#: monotone: per panel of work_precision.py, the fixed steps (down to 1e-4 where a panel's span
#: allows it) and the auto rtols (down to 1e-12) swept under the defaults
MONOTONE_H = {"andrews_squeezer": (4e-5, 2e-5, 1e-5, 5e-6, 2e-6),
              "double_four_bar": (1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4),
              "stiff_pendulum": (0.1, 0.05, 0.02, 0.01, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4),
              "bricard": (2e-2, 1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4),
              "slider_crank_3d": (4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4, 1e-4)}
MONOTONE_RTOL = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12)


def monotone(only: str | None = None) -> None:
    """Issue 33 item 5: the error of every work_precision.py panel under the defaults, fixed h
    and dt="auto", each against the panel's reference; a '↑' marks an error above the previous
    (coarser) setting's."""
    sys.path.insert(0, str(HERE))
    from work_precision import problems

    print("monotone: every work_precision.py panel under the defaults (symmetric chart, mass "
          "metric; Newton tol from settings.newton_tol)")
    for title, name, kw, error, _, _, _, _ in problems(False):
        if only and name != only:
            continue
        k = symgen.build(symgen.load_model(name))
        print(f"  {title}")
        for key, values in (("dt", MONOTONE_H[name]), ("rtol", MONOTONE_RTOL)):
            prev, row = math.inf, []
            for v in values:
                run = dict(dt=v) if key == "dt" else dict(dt="auto", rtol=v, atol=v)
                r = symgen.simulate(k, **run, **kw)
                e = error(r)
                note = "" if r.status == "completed" else f" ({r.status})"
                sub = r.meta.get("substepped_steps", 0) + r.meta.get("crossed_steps", 0)
                note += f" [{sub} substepped/crossed]" if sub else ""
                row.append(f"{key} {v:g}: {e:.2e}{' ↑' if e > prev else ''}{note}"
                           + ("" if key == "dt" else f" ({r.meta['steps_done']} steps)"))
                prev = e
                print("    " + row[-1], flush=True)


def step_cost() -> None:
    """CPU µs a fixed step of 1e-3 costs on the open chains of bench_pydy.py (the whole simulate,
    compiled, warmed up), the corrected step by default (ω_max at the start only: it bounds
    nothing) and with the per-step estimate (estimate=True), and the paper's step."""
    import time

    sys.path.insert(0, str(HERE))
    from bench_pydy import chain_from_sympy, chain_planar

    print("step-cost: open chains, fixed h = 1e-3 over 0.5 s, CPU µs per step")
    for N in (5, 20):
        for label, make in (("from_sympy", chain_from_sympy), ("builder", chain_planar)):
            k = symgen.build(make(N))
            row = []
            for name, opts in (("corrected", dict(PRESETS["corrected"])),
                               ("corrected, ω_max every step", dict(PRESETS["corrected"],
                                                                   estimate=True)),
                               ("paper", dict(PRESETS["paper"]))):
                symgen.simulate(k, dt=1e-3, t_end=0.05, **opts)          # warm-up
                t0 = time.process_time()
                symgen.simulate(k, dt=1e-3, t_end=0.5, **opts)
                row.append(f"{name} {(time.process_time() - t0) / 500 * 1e6:.0f}")
            print(f"  N = {N:2d} {label:10s}: " + "; ".join(row))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("order", "stability", "newton", "newton-auto",
                                       "step-cost", "monotone"))
    ap.add_argument("--panel", help="monotone: one panel's example name (andrews_squeezer, ...)")
    args = ap.parse_args(argv)
    for name, fn in (("order", order), ("stability", stability), ("newton", newton),
                     ("newton-auto", newton_auto), ("step-cost", step_cost),
                     ("monotone", lambda: monotone(args.panel))):
        if args.only in (None, name):
            fn()
    return 0


if __name__ == "__main__":
    sys.exit(main())
