"""dt="auto" on both steppers side by side: steps, rejected tries and CPU seconds of the Python
reference loop (symgen/adaptive.py) and of the C runtime's error control (sg_control.c.inc) on the
same runs, and how far their states part (docs/variable-step.md, "In C").

    python examples/benchmarks/auto_steppers.py [--long]

``--long`` adds the N four-bar with N = 40 over 300 s (the Python run takes minutes).
"""
import sys
import time

import numpy as np

import symgen

# chart="end": the paper's chart (auto's default before session 9); the runs without a chart take
# auto's default now, the symmetric chart with the mass metric
RUNS = [
    ("double_four_bar", {}, dict(t_end=10.0, rtol=1e-6, chart="end")),
    ("double_four_bar", {}, dict(t_end=100.0, rtol=1e-4, atol=1e-4, chart="symmetric")),
    ("stiff_pendulum", {}, dict(t_end=20.0, rtol=1e-6, scheme="fox-goodwin", chart="end")),
    ("andrews_squeezer", {}, dict(t_end=0.03, rtol=1e-6, scheme="fox-goodwin", chart="end")),
    ("bricard", {}, dict(t_end=5.0, rtol=1e-6, chart="end")),
    ("double_four_bar", {}, dict(t_end=10.0, rtol=1e-8)),
    ("andrews_squeezer", {}, dict(t_end=0.03, rtol=1e-8, scheme="fox-goodwin")),
    ("bricard", {}, dict(t_end=5.0, rtol=1e-8)),
]
LONG = [("n_four_bar", {"N": 40}, dict(t_end=300.0, rtol=1e-4, atol=1e-4, every=100,
                                       chart="end"))]


def main() -> None:
    runs = RUNS + (LONG if "--long" in sys.argv[1:] else [])
    print("| run | stepper | status | steps | rejected | h range | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for name, opts, kw in runs:
        k = symgen.build(symgen.load_model(name, **opts))
        out = {}
        for stepper in ("python", "compiled"):
            tic = time.process_time()
            r = symgen.simulate(k, dt="auto", stepper=stepper, **kw)
            cpu = time.process_time() - tic
            sc = r.meta["step_control"]
            h = sc["h_range"] or [float("nan")] * 2
            label = f"{name} {opts or ''} {kw}".replace("  ", " ")
            print(f"| {label} | {stepper} | {r.status} | {r.meta['steps_done']} | "
                  f"{sc['rejected_steps']} | {h[0]:.2g} … {h[1]:.2g} | {cpu:.2f} |")
            out[stepper] = r
        a, b = out["python"], out["compiled"]
        n = min(len(a.t), len(b.t))
        print(f"|   (C − Python: first {min(n, 200)} rows max |Δx| "
              f"{np.abs(a.x[:min(n, 200)] - b.x[:min(n, 200)]).max():.1e}, last row "
              f"{np.abs(a.x[-1] - b.x[-1]).max():.1e}) |||||||")


if __name__ == "__main__":
    main()
