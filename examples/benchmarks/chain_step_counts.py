"""Where symgen's factor against PyDy + LSODA is on the open chains (issue 33): for the
``from_sympy`` chains of ``bench_pydy.py`` at a tip error near 1e-6, symgen's steps, Newton
iterations per step, rejected tries and µs per step (``dt="auto"``, compiled, defaults) beside
LSODA's steps, rhs calls and µs per step.  CPU: the smallest of 3 ``time.process_time`` runs.
Needs pydy and cython, as bench_pydy.py.  Figures: docs/benchmarks.md, "Where the factor is".

Run:  python examples/benchmarks/chain_step_counts.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_pydy as B  # noqa: E402

#: case → (symgen's rtols, LSODA's tolerances) near a tip error of 1e-6
SETTINGS = {"chain5": ((1e-9, 1e-10), (1e-8, 1e-9)), "chain20": ((1e-7, 1e-8), (1e-6, 1e-7))}


def main() -> None:
    import symgen
    from scipy.integrate import odeint

    for name, (rtols, tols) in SETTINGS.items():
        case = B.Case(name)
        pydy = B.PyDySide(case.parts, case.x0, case.tip)
        ref = case.tip(pydy.dop853(case.t_end, 1e-13)[0][-1:])[:, 0]
        kern = case.models["from_sympy"][0]()
        print(f"\n{case.title}")
        for rtol in rtols:
            kw = dict(stepper="compiled", dt="auto", rtol=rtol, atol=rtol)
            symgen.simulate(kern, t_end=1e-2, **kw)
            cpu, r = B._cpu(lambda: symgen.simulate(kern, t_end=case.t_end, **kw), 3)
            tip = np.array([r.output("tip.x")[-1], r.output("tip.y")[-1]])
            steps, ctl = r.meta["steps_done"], r.meta["step_control"]
            print(f"  symgen auto rtol={rtol:g}: error {np.hypot(*(tip - ref)):.2e}, {steps} "
                  f"steps, {r.meta['run_stats']['newton_iters_total'] / steps:.2f} Newton "
                  f"iterations/step, rejected {ctl['rejected_error']} (error) "
                  f"{ctl['rejected_newton']} (Newton), {cpu / steps * 1e6:.1f} µs/step")
        for tol in tols:
            def go(tol=tol):
                return odeint(pydy.rhs, pydy.x0, [0.0, case.t_end], args=(pydy.p,), rtol=tol,
                              atol=tol, mxstep=10 ** 8, full_output=True)
            cpu, (X, info) = B._cpu(go, 3)
            nst = int(info["nst"][-1])
            print(f"  LSODA tol={tol:g}: error {np.hypot(*(case.tip(X[-1:])[:, 0] - ref)):.2e}, "
                  f"{nst} steps, {int(info['nfe'][-1])} rhs calls, {cpu / nst * 1e6:.1f} µs/step")


if __name__ == "__main__":
    main()
