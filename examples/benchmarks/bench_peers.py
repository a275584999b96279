"""Compiled stepper vs Python stepper vs Exudyn (when installed): µs per step and accuracy.

Each run is a fresh process (``--one CASE RUNNER``), one BLAS thread (threadpoolctl, symgen's
default), optionally pinned to one CPU (``--cpu``), the runners interleaved in every round.  Times
are the process's CPU time (``time.process_time``: on a shared machine the wall time also counts
the time other processes hold the CPU; the smallest wall time of a run is printed too).  The
table gives min and median CPU µs/step over the rounds and the ratio of symgen compiled's CPU
time to each runner's *within each round* (min and median; the targets of issue 10 are ratios
compiled/Exudyn), plus each run's accuracy: the energy drift max|E − E0| (E = kinetic +
potential; the stiff pendulum's drive does work, so there it is the range of E, not an error), the
largest constraint residual (symgen: ‖q‖; Exudyn: the largest joint gap, see peer_exudyn.py)
and the case's own error ``err``: four-bars: B0 error at t_end against the exact one-dof
solution (``tests/oracles.py``); stiff pendulum: max|θ − θ_ref| over the run against the
minimal-coordinate reference; Andrews: max error of the seven angles at t = 0.03 against the
Test Set's solution.  symgen's time is ``simulate``'s whole time (consistent initial state,
recording, energy and outputs every step, and the ω_max estimate unless ``--no-estimate``) after
two 5-step warm-up runs; Exudyn's is ``SolveDynamic``'s (see peer_exudyn.py).

Cases (issue 10): double four-bar 10 s at h = 1e-3 and 1e-2, Bricard 10 s at h = 1e-2 and 1e-3
(the redundant joint kept), stiff pendulum h = 0.1 to 100 s, Andrews (Fox–Goodwin, h = 2e-6,
t = 0.03; symgen only), N four-bar N = 40 (h = 1e-2, 1 s here: the Python stepper takes ~20 ms
a step; symgen only).

N four-bar cases (issue 14; not in the default list, select them with ``--cases 'nfb*'`` or e.g.
``--cases nfb40-1e-3``): ``nfbN-1e-3`` is N = 10, 20, 40, 80 at h = 1e-3 over 1 s (through the
first horizontal passage), ``nfbN-1e-2`` at h = 1e-2 over 20 s, Fox–Goodwin (the example's), with
the runners symgen compiled (default factorization), symgen python dense (only for N < 40: ~20 ms
a step at N = 40), python sparse (``factorization="sparse"``), compiled sparse (skipped with a
note while the C runtime has no sparse step), Exudyn sparse and, for N ≤ 20, Exudyn dense
(ρ∞ = 0.8 as for the double four-bar).  Their ratio column is runner / Exudyn sparse (CPU time,
within each round), their ``err`` the B0 error at t_end against ``four_bar_reference(N, t)``.
``--skip nfb80-1e-2/compiled`` leaves out one runner of one case (the patterns are fnmatch's).

Spatial slider-crank cases (issue 22; select them with ``--cases 'sc3d*'``): ``sc3d-H`` is
``examples/slider_crank_3d.py`` over 1 s at h = H (2e-3, 1e-3, 5e-4, 2.5e-4), trapezoidal, with
the runners symgen compiled (the example's settings: mass metric, symmetric chart), the paper's
step (``compiled-paper``: Euclidean metric, end chart), the mass metric with the end chart
(``compiled-mass-end``, ``python-mass-end``) and the Python reference of the compiled runner
(``python-mass-sym``) and Exudyn (``exu-dense``, its benchmark's settings,
peer_exudyn.py); their ``err`` is |x(1) − x_ref| of the slider against a Richardson reference
from symgen compiled, symmetric chart, at h = 2e-5 and 1e-5 (computed once per run of the script,
docs/spatial-accuracy.md: Exudyn at h = 1e-5 meets it to 6e-10).

Bricard work–precision cases (issue 22; select them with ``--cases 'bw*'``): ``bw-H`` is
``examples/bricard.py`` over 2 s at h = H (1e-2, 5e-3, 2e-3, 1e-3), trapezoidal (Exudyn's ρ∞ = 1
is the same rule), with the runners symgen compiled (the example's settings: Euclidean metric,
end chart), ``compiled-sym`` (Euclidean, symmetric chart), ``compiled-mass-sym`` and
``python-mass-sym`` (mass metric, symmetric chart) and Exudyn's ``exu-dense`` and ``exu-sparse``
(the same data: peer_exudyn.py; ``exu-dense-kept``, the redundant joint kept, fails and is left
out); their ``err`` is |x(2) − x_ref| of rod 2's midpoint against a Richardson reference from
symgen compiled, end chart, h = 1e-4 and 5e-5.  ``sc3d`` runner ``compiled`` is the example's
recommended settings (mass metric, symmetric chart), ``compiled-paper`` the paper's step
(Euclidean, end chart).

Exudyn (optional, ``pip install -e ".[peers]"``: exudyn 1.13.6, the version measured) runs the
double four-bar, Bricard and stiff pendulum with the models and settings of ``peer_exudyn.py``
(its docstring says where they differ from symgen's).  Without Exudyn the script prints symgen's figures only.

Run:  python examples/benchmarks/bench_peers.py [--cases dfb-1e-3,stiff] [--repeat 3] [--cpu 1]
      python examples/benchmarks/bench_peers.py --cases 'sc3d*,bw*' --repeat 3
      python examples/benchmarks/bench_peers.py --cases 'nfb*' --repeat 1 [--skip nfb80-1e-2/compiled]
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import importlib.util
import json
import pathlib
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve()

#: case → (example, dt, t_end, scheme or None for the example's, model options)
CASES = {
    "dfb-1e-3": ("double_four_bar", 1e-3, 10.0, None, {}),
    "dfb-1e-2": ("double_four_bar", 1e-2, 10.0, None, {}),
    "bricard-1e-2": ("bricard", 1e-2, 10.0, None, {}),
    "bricard-1e-3": ("bricard", 1e-3, 10.0, None, {}),
    "stiff": ("stiff_pendulum", 0.1, 100.0, None, {}),
    "andrews": ("andrews_squeezer", 2e-6, 0.03, None, {}),
    "n40": ("n_four_bar", 1e-2, 1.0, None, {"N": 40}),
}
DEFAULT_CASES = tuple(CASES)
#: the N four-bar cases of issue 14 (module docstring)
CASES.update({f"nfb{N}-{h}": ("n_four_bar", float(h), t_end, None, {"N": N})
              for N in (10, 20, 40, 80) for h, t_end in (("1e-3", 1.0), ("1e-2", 20.0))})
#: the spatial slider-crank cases of issue 22 (module docstring)
CASES.update({f"sc3d-{h}": ("slider_crank_3d", float(h), 1.0, None, {})
              for h in ("2e-3", "1e-3", "5e-4", "2.5e-4")})
#: Bricard's work–precision cases (issue 22; module docstring): trapezoidal, 2 s
CASES.update({f"bw-{h}": ("bricard", float(h), 2.0, "trapezoidal", {})
              for h in ("1e-2", "5e-3", "2e-3", "1e-3")})
#: symgen's runners → simulate's keyword arguments
SYMGEN = {
    "compiled": dict(stepper="compiled"),
    "python": dict(stepper="python"),
    "python-sparse": dict(stepper="python", factorization="sparse"),
    "compiled-sparse": dict(stepper="compiled", factorization="sparse"),
    "compiled-paper": dict(stepper="compiled", metric="euclidean", chart="end"),
    "compiled-sym": dict(stepper="compiled", metric="euclidean", chart="symmetric"),
    "compiled-mass-end": dict(stepper="compiled", metric="mass", chart="end"),
    "compiled-mass-sym": dict(stepper="compiled", metric="mass", chart="symmetric"),
    "python-mass-end": dict(stepper="python", metric="mass", chart="end"),
    "python-mass-sym": dict(stepper="python", metric="mass", chart="symmetric"),
}
RUNNERS = ("compiled", "python")
#: the N four-bar cases' symgen runners (python dense only for N < PY_DENSE_MAX_N)
NFB_RUNNERS = ("compiled", "python", "python-sparse", "compiled-sparse")
PY_DENSE_MAX_N = 40
SC3D_RUNNERS = ("compiled", "compiled-paper", "compiled-mass-end", "python-mass-end",
                "python-mass-sym")
BW_RUNNERS = ("compiled", "compiled-sym", "compiled-mass-sym", "python-mass-sym")
#: output whose value at t_end is a work–precision case's error (against ``reference``)
REF_OUTPUT = {"slider_crank_3d": "slider.C.x", "bricard": "rod2.mid.x"}
#: Exudyn's dense solver on the N four-bar only up to this N (its LU is O(n³))
EXU_DENSE_MAX_N = 20


def _have_exudyn() -> bool:
    return importlib.util.find_spec("exudyn") is not None


def _oracles():
    path = HERE.parents[2] / "tests" / "oracles.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("symgen_test_oracles", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _peer():
    sys.path.insert(0, str(HERE.parent))
    import peer_exudyn

    return peer_exudyn


def _nfb(case: str) -> bool:
    return case.startswith("nfb")


def _bw(case: str) -> bool:
    return case.startswith("bw-")


def runners(case: str) -> tuple[str, ...]:
    """symgen's steppers, then the Exudyn runners of the case (when Exudyn is installed)."""
    example, N = CASES[case][0], CASES[case][4].get("N")
    own = RUNNERS
    if _nfb(case):
        own = tuple(r for r in NFB_RUNNERS if r != "python" or N < PY_DENSE_MAX_N)
    if example == "slider_crank_3d":
        own = SC3D_RUNNERS
    if _bw(case):
        own = BW_RUNNERS
    if not _have_exudyn() or (example == "n_four_bar" and not _nfb(case)):
        return own
    peer = _peer().CASE_RUNNERS.get(example, ((), None))[0]
    if _bw(case):                 # the redundant joint kept: Exudyn's Newton fails (peer_exudyn)
        peer = tuple(r for r in peer if r != "exu-dense-kept")
    return own + tuple(r for r in peer if r != "exu-dense" or not _nfb(case)
                       or N <= EXU_DENSE_MAX_N)


def reference(example: str, t_end: float) -> float:
    """A work–precision case's reference (module docstring): Richardson from symgen compiled
    with the paper's step (Euclidean metric), trapezoidal, at two fine steps: the slider-crank's
    slider x (symmetric chart, h = 2e-5 and 1e-5), Bricard's rod 2 midpoint x (end chart,
    h = 1e-4 and 5e-5)."""
    import symgen

    kern = symgen.build(symgen.load_model(example))
    chart, steps = (("symmetric", (2e-5, 1e-5)) if example == "slider_crank_3d"
                    else ("end", (1e-4, 5e-5)))
    x = [symgen.simulate(kern, dt=h, t_end=t_end, chart=chart, metric="euclidean",
                         scheme="trapezoidal").output(REF_OUTPUT[example])[-1] for h in steps]
    return float(x[1] + (x[1] - x[0]) / 3)


def _symgen_error(example: str, res, N: int = 40, x_ref: float | None = None) -> float | None:
    """The case's own error (module docstring), None when it has none."""
    import numpy as np

    if example in REF_OUTPUT:
        return None if x_ref is None else float(abs(res.output(REF_OUTPUT[example])[-1] - x_ref))

    if example in ("double_four_bar", "n_four_bar"):
        orc = _oracles()
        if orc is None:
            return None
        B_ref, _ = orc.four_bar_reference(2 if example == "double_four_bar" else N, res.t)
        B = np.array([res.output(f"B0.{k}") for k in ("x", "y")])
        return float(np.hypot(*(B[:, -1] - B_ref[:2, -1])))
    if example == "stiff_pendulum":
        from symgen.reproduce.references import minimal_pendulum, scipy_reference

        x, _ = scipy_reference(minimal_pendulum(), res.t)
        return float(np.max(np.abs(res.output("theta") - x[:, 0])))
    if example == "andrews_squeezer":
        from symgen.reproduce.references import ANDREWS_ANGLES, ANDREWS_REF

        q = np.array([res.output(a)[-1] for a in ANDREWS_ANGLES])
        return float(np.max(np.abs(q - ANDREWS_REF)))
    return None


def run_one(case: str, runner: str, estimate: bool = True, x_ref: float | None = None) -> dict:
    """One simulation in this process; returns the figures as a dict (``x_ref``: the slider-crank
    cases' reference)."""
    import numpy as np

    example, dt, t_end, scheme, opts = CASES[case]
    if runner not in SYMGEN:
        ref = {} if x_ref is None else {"x_ref": x_ref}
        out = _peer().run(example, runner, dt, t_end, _oracles(), **opts, **ref)
        out["case"] = case
        return out

    import symgen

    kern = symgen.build(symgen.load_model(example, **opts))
    kw = dict(dt=dt, scheme=scheme, estimate=estimate, **SYMGEN[runner])
    try:
        for _ in range(2):   # warm up (the first run's lazy imports renew the BLAS library scan)
            symgen.simulate(kern, t_end=5 * dt, **kw)
    except ValueError as exc:
        if "no sparse step" not in str(exc):
            raise
        return {"case": case, "runner": runner, "status": f"skipped: {exc}", "h": dt, "steps": 0}
    cpu = time.process_time()
    res = symgen.simulate(kern, t_end=t_end, **kw)
    cpu = time.process_time() - cpu
    steps = len(res.t) - 1
    out = {"case": case, "runner": runner, "status": res.status, "steps": steps, "h": dt,
           "us_per_step": 1e6 * cpu / max(steps, 1), "cpu": cpu, "wall": res.meta["wall_time"],
           "iters_per_step": float(np.mean(res.newton_iters[1:])) if steps else float("nan"),
           "max_q": float(np.max(res.pos_err))}
    if res.energy is not None:
        out["energy_drift"] = float(np.max(np.abs(res.energy - res.energy[0])))
    err = _symgen_error(example, res, x_ref=x_ref, **opts)
    if err is not None:
        out["err"] = err
    return out


def _fmt(v, spec: str, width: int) -> str:
    return f"{'-' if v is None or v != v else format(v, spec):>{width}}"


def report(case: str, rows: dict) -> list[str]:
    """The table rows of one case: rows[runner] = the runs' dicts, one per round.  The ratio
    column is compiled / runner, for the N four-bar cases runner / exu-sparse (within a round)."""
    lines = []
    ref = "exu-sparse" if _nfb(case) else "compiled"
    base = rows.get(ref, [])
    for runner, runs in rows.items():
        last = runs[-1]
        if last["status"].startswith("skipped"):
            lines.append(f"{case:<13}{runner:<18}  {last['status']}")
            continue
        ok = [r for r in runs if r["status"] == "completed"]
        us = [r["us_per_step"] for r in ok]
        pairs = [(b, r) for b, r in zip(base, runs)
                 if r["status"] == "completed" and b["status"] == "completed"]
        ratios = [r["cpu"] / b["cpu"] if _nfb(case) else b["cpu"] / r["cpu"] for b, r in pairs]
        tail = ("" if runner == ref or not ratios else
                f"{min(ratios):>8.3f}{statistics.median(ratios):>8.3f}")
        lines.append(
            f"{case:<13}{runner:<18}{last['h']:>8.2g}{last['steps']:>7}"
            f"{_fmt(min(us) if us else None, '.1f', 10)}"
            f"{_fmt(statistics.median(us) if us else None, '.1f', 9)}"
            f"{_fmt(min(r['wall'] for r in ok) * 1e3 if ok else None, '.1f', 9)}"
            f"{_fmt(last['iters_per_step'], '.2f', 6)}"
            f"{_fmt(last.get('energy_drift'), '.2e', 10)}{_fmt(last.get('max_q'), '.1e', 9)}"
            f"{_fmt(last.get('err'), '.2e', 10)}{tail}"
            + ("" if last["status"] == "completed" else f"  {last['status']}"))
    return lines


HEADER = (f"{'case':<13}{'runner':<18}{'h':>8}{'steps':>7}{'µs/step':>10}{'median':>9}"
          f"{'wall ms':>9}{'iters':>6}{'E drift':>10}{'max|q|':>9}{'err':>10}"
          f"{'compiled/runner':>16}")
NFB_HEADER = HEADER.replace("compiled/runner", "runner/exu-sparse")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES),
                    help="comma-separated names or fnmatch patterns ('nfb*'): " + ", ".join(CASES))
    ap.add_argument("--repeat", type=int, default=3, help="rounds (each runner once per round)")
    ap.add_argument("--cpu", type=int, default=None, help="pin every run to this CPU")
    ap.add_argument("--runners", default=None,
                    help="comma-separated subset of the runners (compiled is always run)")
    ap.add_argument("--skip", default="",
                    help="comma-separated CASE/RUNNER fnmatch patterns not to run "
                         "(e.g. nfb80-1e-2/compiled)")
    ap.add_argument("--no-estimate", action="store_true",
                    help="symgen without the per-step ω_max estimate")
    ap.add_argument("--one", nargs=2, metavar=("CASE", "RUNNER"), help=argparse.SUPPRESS)
    ap.add_argument("--ref", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        if args.cpu is not None:
            os.sched_setaffinity(0, {args.cpu})
        print(json.dumps(run_one(*args.one, estimate=not args.no_estimate, x_ref=args.ref)))
        return
    cases = []
    for pat in (c.strip() for c in args.cases.split(",") if c.strip()):
        hits = [c for c in CASES if fnmatch.fnmatchcase(c, pat)]
        if not hits:
            raise SystemExit(f"unknown case {pat!r}; known: {', '.join(CASES)}")
        cases += [c for c in hits if c not in cases]
    skip = [s.strip() for s in args.skip.split(",") if s.strip()]
    extra = ([] if args.cpu is None else ["--cpu", str(args.cpu)]) + \
        (["--no-estimate"] if args.no_estimate else [])
    refs = {}
    for c in cases:
        example, t_end = CASES[c][0], CASES[c][2]
        if (c.startswith("sc3d") or _bw(c)) and (example, t_end) not in refs:
            refs[example, t_end] = reference(example, t_end)
            print(f"{example} reference {REF_OUTPUT[example]}({t_end:g}) = "
                  f"{refs[example, t_end]:.12f}", flush=True)
    header = None
    for case in cases:
        if header != (NFB_HEADER if _nfb(case) else HEADER):
            header = NFB_HEADER if _nfb(case) else HEADER
            print(header + "  (min, median over the rounds)", flush=True)
        only = None if args.runners is None else {"compiled", *args.runners.split(",")}
        rows = {r: [] for r in runners(case) if (only is None or r in only)
                and not any(fnmatch.fnmatchcase(f"{case}/{r}", s) for s in skip)}
        for _ in range(args.repeat):
            for runner in rows:                  # interleaved, a fresh process each
                ref = refs.get((CASES[case][0], CASES[case][2]))
                ref = [] if ref is None else ["--ref", repr(ref)]
                proc = subprocess.run([sys.executable, str(HERE), "--one", case, runner] + extra
                                      + ref,
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise SystemExit(f"{case}/{runner} failed:\n{proc.stderr[-3000:]}")
                rows[runner].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print("\n".join(report(case, rows)), flush=True)
        left = [r for r in runners(case) if r not in rows]
        if left:
            print(f"{case:<13}(not run: {', '.join(left)})", flush=True)


if __name__ == "__main__":
    main()
