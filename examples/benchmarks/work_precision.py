"""Work–precision (issue 21): error against CPU time and against steps, fixed steps (compiled C
stepper, both charts) beside dt="auto" (the C runtime's error control) beside SciPy's Radau
and DOP853 on the minimal-coordinate equations, on four problems:

- Andrews' squeezer, Fox–Goodwin: max angle error at t = 0.03 against the Test Set's reference;
- the double four-bar, 10 s: max error of B0.x against the exact one-dof motion;
- the stiff pendulum with T0 = 5 N m, Fox–Goodwin, 20 s: max θ error against minimal coordinates;
- Bricard, 10 s: max |E − E(0)| (a conservative mechanism);
- the IFToMM spatial slider-crank, 1 s: slider x at 1 s against a Richardson reference
  (bench_peers.reference).

Fixed steps with the end chart, the symmetric chart, and the symmetric chart with the mass metric
(its reaction correction makes it fourth order on these models: docs/spatial-accuracy.md); dt =
"auto" with the end chart and with the symmetric chart and mass metric (whose estimate is the
corrected step's own, docs/variable-step.md).

Where Exudyn is installed (``pip install exudyn==1.13.6``) its generalized-α runs of the same
models (``peer_exudyn.py``, the models of ``bench_peers.py``) at the fixed steps join the double
four-bar, Bricard and slider-crank panels, with the same error measure.

Prints one table per problem and draws a log–log figure (error against CPU seconds, one panel per
problem).  CPU time is the process time of one run (one BLAS thread), the smallest of --repeat
(Exudyn's: of its timed run, once).

Run:  python examples/benchmarks/work_precision.py [--quick] [--repeat 1] [-o work_precision.png]
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import symgen
from symgen.reproduce import ANDREWS_REF, ANDREWS_REF_T

ANGLES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")
HERE = Path(__file__).resolve().parent
#: example → (Exudyn runner, the key of peer_exudyn.run's output that is this panel's error)
EXUDYN = {"double_four_bar": ("exu-dense", "err_Bx_max"),
          "bricard": ("exu-dense", "energy_drift"), "slider_crank_3d": ("exu-dense", "err")}


def _cpu(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        tic = time.process_time()
        out = fn()
        best = min(best, time.process_time() - tic)
    return best, out


# -- references ------------------------------------------------------------------------------------
def four_bar_theta(N: int = 2, g: float = 9.81):
    """θ(t) of the N four-bar (unit bars and masses, from θ = π/2, θ̇ = −1): a_T θ̈ = −a_V g cos θ."""
    a_T, a_V = (N + 1) / 3 + N, (N + 1) / 2 + N
    return lambda t_end, **kw: solve_ivp(lambda t, y: [y[1], -a_V * g * np.cos(y[0]) / a_T],
                                         (0.0, t_end), [np.pi / 2, -1.0], **kw)


def pendulum_rhs(t, s, T0=5.0):
    return [s[1], T0 * np.sin(0.1 * t) - 9.8 * np.sin(s[0])]


# -- problems: (name, model, run settings, error of a Result, minimal-coordinate SciPy runner) ----
def problems(quick: bool):
    pend_ref = solve_ivp(pendulum_rhs, (0, 20), [0, 0], method="DOP853", rtol=1e-13, atol=1e-13,
                         dense_output=True).sol
    fb = four_bar_theta()
    fb_ref = fb(10.0, method="DOP853", rtol=1e-13, atol=1e-13, dense_output=True).sol

    def err_andrews(r):
        return float(np.max(np.abs([r.output(a)[-1] - ref for a, ref in zip(ANGLES, ANDREWS_REF)])))

    def err_four_bar(r):
        return float(np.max(np.abs(r.output("B0.x") - np.cos(fb_ref(r.t)[0]))))

    def err_pendulum(r):
        return float(np.max(np.abs(r.coord("pendulum.theta") - pend_ref(r.t)[0])))

    def err_bricard(r):
        return float(np.max(np.abs(r.energy - r.energy[0])))

    def scipy_four_bar(method, tol):
        sol = fb(10.0, method=method, rtol=tol, atol=tol, dense_output=True)
        t = np.linspace(0, 10, 2001)
        return float(np.max(np.abs(np.cos(sol.sol(t)[0]) - np.cos(fb_ref(t)[0])))), sol.nfev

    def scipy_pendulum(method, tol):
        sol = solve_ivp(pendulum_rhs, (0, 20), [0, 0], method=method, rtol=tol, atol=tol,
                        dense_output=True)
        t = np.linspace(0, 20, 2001)
        return float(np.max(np.abs(sol.sol(t)[0] - pend_ref(t)[0]))), sol.nfev

    sys.path.insert(0, str(HERE))
    from bench_peers import reference

    x_ref = reference("slider_crank_3d", 1.0)

    def err_slider(r):
        return float(abs(r.output("slider.C.x")[-1] - x_ref))

    hs = (lambda *v: v[::2] if quick else v)
    return [
        ("Andrews (FG, angles at 0.03 s)", "andrews_squeezer",
         dict(t_end=ANDREWS_REF_T, scheme="fox-goodwin"), err_andrews, None,
         hs(2e-5, 1e-5, 5e-6, 2e-6), hs(1e-5, 1e-6, 1e-7, 1e-8, 1e-9), {}),
        ("double four-bar (B0.x, 10 s)", "double_four_bar", dict(t_end=10.0), err_four_bar,
         scipy_four_bar, hs(1e-2, 5e-3, 2e-3, 1e-3, 5e-4), hs(1e-4, 1e-5, 1e-6, 1e-7, 1e-8), {}),
        ("stiff pendulum T0 = 5 (FG, θ, 20 s)", "stiff_pendulum",
         dict(t_end=20.0, scheme="fox-goodwin", params={"T0": 5.0}), err_pendulum, scipy_pendulum,
         hs(0.1, 0.05, 0.02, 0.01, 0.005), hs(1e-4, 1e-5, 1e-6, 1e-7, 1e-8), {}),
        ("Bricard (|E − E0|, 10 s)", "bricard", dict(t_end=10.0), err_bricard, None,
         hs(2e-2, 1e-2, 5e-3, 2e-3, 1e-3), hs(1e-4, 1e-5, 1e-6, 1e-7), {}),
        ("spatial slider-crank (slider x at 1 s)", "slider_crank_3d", dict(t_end=1.0), err_slider,
         None, hs(2e-3, 1e-3, 5e-4, 2.5e-4), hs(1e-4, 1e-5, 1e-6, 1e-7), {"x_ref": x_ref}),
    ]


def exudyn_rows(name: str, hs, t_end: float, peer_kw: dict) -> list:
    """Exudyn's runs of the panel's model at the fixed steps (none without Exudyn); ``peer_kw``:
    peer_exudyn.run's reference (the slider-crank's)."""
    if name not in EXUDYN or importlib.util.find_spec("exudyn") is None:
        return []
    import peer_exudyn
    from bench_peers import _oracles

    runner, key = EXUDYN[name]
    rows = []
    for h in hs:
        out = peer_exudyn.run(name, runner, h, t_end, _oracles(), **peer_kw)
        rows.append((f"Exudyn {runner}", f"h={h:g}", out["steps"], out["cpu"],
                     out.get(key, float("nan")), out["status"]))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="every other step size and tolerance")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("-o", "--out", default="work_precision.png")
    args = ap.parse_args(argv)
    panels = []
    for title, name, kw, error, scipy_run, hs, rtols, peer_kw in problems(args.quick):
        k = symgen.build(symgen.load_model(name))
        rows = []
        variants = [("end", {"metric": "euclidean"}), ("symmetric", {"metric": "euclidean"}),
                    ("symmetric", {"metric": "mass"})]
        for chart, opt in variants:
            label = f"fixed {chart}" + (" mass" if opt["metric"] == "mass" else "")
            for h in hs:
                cpu, r = _cpu(lambda: symgen.simulate(k, dt=h, chart=chart, every=1, **opt, **kw),
                              args.repeat)
                rows.append((label, f"h={h:g}", r.meta["steps_done"], cpu, error(r), r.status))
        # auto with the paper's chart and metric, and with the symmetric chart and mass metric
        # (auto's default; its estimate is the corrected step's own: control.py history), three
        # rtol tighter (its steps grow faster as rtol falls)
        for label, opt, tols in (("auto end", dict(chart="end", metric="euclidean"), rtols),
                                 ("auto symmetric mass", dict(chart="symmetric", metric="mass"),
                                  rtols + (rtols[-1] / 10, rtols[-1] / 100, rtols[-1] / 1000))):
            for rtol in tols:
                cpu, r = _cpu(lambda: symgen.simulate(k, dt="auto", rtol=rtol, atol=rtol, **opt,
                                                      **kw), args.repeat)
                rows.append((label, f"rtol={rtol:g}", r.meta["steps_done"], cpu, error(r),
                             r.status))
        rows += exudyn_rows(name, hs, kw["t_end"], peer_kw)
        if scipy_run is not None:
            for method in ("Radau", "DOP853"):
                for tol in rtols:
                    cpu, (err, nfev) = _cpu(lambda: scipy_run(method, tol), args.repeat)
                    rows.append((f"scipy {method}", f"tol={tol:g}", nfev, cpu, err, "nfev"))
        print(f"\n{title}")
        print(f"  {'run':22} {'setting':12} {'steps':>8} {'CPU s':>9} {'error':>10}  status")
        for run, setting, steps, cpu, err, status in rows:
            print(f"  {run:22} {setting:12} {steps:8d} {cpu:9.3f} {err:10.3e}  {status}")
        panels.append((title, rows))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib not installed: no figure)")
        return 0
    fig, axes = plt.subplots(2, 3, figsize=(16, 8))
    axes.ravel()[-1].set_axis_off()
    for ax, (title, rows) in zip(axes.ravel(), panels):
        for run in dict.fromkeys(r[0] for r in rows):
            pts = [(r[3], r[4]) for r in rows if r[0] == run and r[4] > 0]
            if pts:
                ax.loglog(*zip(*sorted(pts)), "o-", label=run, ms=4)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("CPU time [s]")
        ax.set_ylabel("error")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"\nfigure: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
