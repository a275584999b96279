"""The cost of t_eval rows on the compiled stepper (docs/variable-step.md, "Dense output"): CPU
seconds of a run with 2 000 t_eval points against the same run without them (the best of
``--repeat`` runs each, default 5), the cost of a row from the slope between 2 000 and 22 000
rows (less noisy than the difference on a loaded machine), and what the 2 000 rows cost when
each is computed in Python (eval_rows.dense_state on the run's steps: the path every row took
before the rows moved to C).
``--order``: the rows' errors against the exact motion instead — the double four-bar with the
corrected step (symmetric chart, mass metric, γ = ½) at fixed h, rows at ¼, ½, ¾ of each step in
[1, 2] s, the quintic interpolant's and the cubic Hermite's on (x, ẋ) (both projected), and the
steps' own errors at the grid points.

    python examples/benchmarks/dense_output.py [--repeat R] [--order]

The steps are the same with or without the rows (tests/test_dense_output.py), so the difference
is the rows' own cost; per row it is about that of one Newton iteration of the step (two pivoted
QR factorizations of H and four constraint-kernel calls).
"""
import importlib.util
import pathlib
import sys
import time

import numpy as np

import symgen
from symgen.eval_rows import dense_state, project_row
from symgen.steppers.control import hermite


def _oracles():
    """tests/oracles.py (the N four-bar's exact motion), as validate_examples.py loads it."""
    path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "oracles.py"
    if not path.exists():
        raise SystemExit("tests/oracles.py not found: run from a source checkout of symgen")
    spec = importlib.util.spec_from_file_location("symgen_test_oracles", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

#: (model, simulate options): the double four-bar with dt="auto" (its default chart and metric)
#: and with a fixed step, Bricard's linkage (redundant constraints) with dt="auto"
RUNS = [
    ("double_four_bar", dict(dt="auto", t_end=10.0, rtol=1e-8, atol=1e-8)),
    ("double_four_bar", dict(dt=1e-3, t_end=10.0)),
    ("bricard", dict(dt="auto", t_end=5.0, rtol=1e-8, atol=1e-8)),
    ("bricard", dict(dt=1e-3, t_end=5.0)),
]
POINTS = 2000


def cpu(f, repeat: int) -> float:
    """The smallest CPU time of ``repeat`` calls of f."""
    best = float("inf")
    for _ in range(repeat):
        tic = time.process_time()
        f()
        best = min(best, time.process_time() - tic)
    return best


def python_rows(k, r, te) -> float:
    """CPU seconds of the rows at ``te`` computed in Python from the steps of run ``r``."""
    j = np.clip(np.searchsorted(r.t, te, side="left") - 1, 0, len(r.t) - 2)
    tic = time.process_time()
    for tau, i in zip(te, j):
        dense_state(k, float(tau), r.t[i], r.t[i + 1] - r.t[i], (r.x[i], r.xd[i], r.xdd[i]),
                    (r.x[i + 1], r.xd[i + 1], r.xdd[i + 1]))
    return time.process_time() - tic


def order() -> None:
    """The --order table."""
    oracles = _oracles()
    k = symgen.build(symgen.load_model("double_four_bar"))
    print("| h | rows, quintic: B0.x, B0.vx | rows, cubic Hermite | steps (grid points) |")
    print("|---|---|---|---|")
    for h in (0.04, 0.02, 0.01):
        r = symgen.simulate(k, dt=h, t_end=2.0, chart="symmetric", metric="mass",
                            scheme="trapezoidal", stepper="compiled")
        te, y = [], {"quintic": [], "cubic": []}
        for j in np.flatnonzero(r.t[:-1] >= 1.0):
            ends = (r.x[j], r.xd[j], r.xdd[j]), (r.x[j + 1], r.xd[j + 1], r.xdd[j + 1])
            for f in (0.25, 0.5, 0.75):
                tau = r.t[j] + f * h
                te.append(tau)
                xq, xdq, *_ = dense_state(k, tau, r.t[j], h, *ends)
                xc, xdc = hermite(tau, r.t[j], h, ends[0][0], ends[0][1], ends[1][0], ends[1][1])
                xc, xdc, *_ = project_row(k, tau, xc, xdc)
                y["quintic"].append(k.outputs(tau, xq, xdq).copy())
                y["cubic"].append(k.outputs(tau, xc, xdc).copy())
        B, _ = oracles.four_bar_reference(2, np.array(te))
        on = r.t >= 1.0
        Bs, _ = oracles.four_bar_reference(2, r.t[on])
        err = {m: (np.abs(np.array(v)[:, 0] - B[0]).max(), np.abs(np.array(v)[:, 2] - B[2]).max())
               for m, v in y.items()}
        grid = (np.abs(r.output("B0.x")[on] - Bs[0]).max(),
                np.abs(r.output("B0.vx")[on] - Bs[2]).max())
        print(f"| {h} | {err['quintic'][0]:.3g}, {err['quintic'][1]:.3g} | "
              f"{err['cubic'][0]:.3g}, {err['cubic'][1]:.3g} | {grid[0]:.3g}, {grid[1]:.3g} |")


def main() -> None:
    if "--order" in sys.argv[1:]:
        order()
        return
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 5
    print(f"| run | steps | run (CPU s) | with {POINTS} t_eval rows | rows: extra | per row "
          f"(slope to {11 * POINTS}) | rows in Python |")
    print("|---|---|---|---|---|---|---|")
    for name, kw in RUNS:
        k = symgen.build(symgen.load_model(name))
        te = np.linspace(0.0, kw["t_end"], POINTS)
        r = symgen.simulate(k, stepper="compiled", **kw)
        assert r.status == "completed", r.reason
        plain = cpu(lambda: symgen.simulate(k, stepper="compiled", **kw), repeat)
        rows = cpu(lambda: symgen.simulate(k, stepper="compiled", t_eval=te, **kw), repeat)
        many = cpu(lambda: symgen.simulate(k, stepper="compiled", t_eval=np.linspace(
            0.0, kw["t_end"], 11 * POINTS), **kw), repeat)
        py = python_rows(k, r, te)
        extra = rows - plain
        print(f"| {name} {kw} | {r.meta['steps_done']} | {plain:.4f} | {rows:.4f} | "
              f"{extra:.4f} ({100 * extra / plain:.0f} %) | "
              f"{1e6 * (many - rows) / (10 * POINTS):.1f} µs | {py:.3f} s |")


if __name__ == "__main__":
    main()
