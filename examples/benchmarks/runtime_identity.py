"""Bit-identity check of the compiled stepper across a change of the C runtime (templates/runtime/).

Runs ``symgen.simulate(..., stepper="compiled")`` on every shipped example over a short window,
with both charts and both compiled factorizations ("qr", "sparse") of the null-space step, and the
index-3 step (trapezoidal and HHT-α); saves every result array, and the CSV that one example's generated ``main.c``
prints, to an ``.npz``.  A refactoring that must not change a single computed number is checked
by capturing before and comparing after::

    python examples/benchmarks/runtime_identity.py capture /tmp/before.npz
    # ... change the runtime ...
    python examples/benchmarks/runtime_identity.py compare /tmp/before.npz

``--stepper python`` (after the file) runs the Python steppers instead (a change of
symgen/steppers/: the same cases; main.c's CSV is the C's either way)::

    python examples/benchmarks/runtime_identity.py capture /tmp/before-py.npz --stepper python

``compare`` recomputes and tests every array with ``np.array_equal`` (exact, NaN equal to NaN);
it prints how many arrays it compared and exits 1 on any difference (or a captured array it did
not recompute); arrays the capture has not (an example added since) are listed as new.  About a
minute on a warm build cache (each example is compiled once per runtime version).
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import symgen
from symgen.loader import known_examples

#: model() options that keep an example small
MODEL_KW = {"n_four_bar": dict(N=4)}
#: the window: steps at the example's own dt (the double four-bar and Bricard get a longer one
#: with a larger step so that it reaches a singular passage)
STEPS = 150
WINDOWS = {"double_four_bar": dict(dt=1e-2, t_end=3.0), "bricard": dict(dt=1e-2, t_end=2.0),
           "n_four_bar": dict(dt=1e-2, t_end=1.5)}
FIELDS = ("t", "x", "xd", "xdd", "lam", "pos_err", "vel_err", "acc_err", "omega_max", "h_max",
          "newton_iters", "energy_kinetic", "energy_potential", "outputs", "u", "flags")
#: the rows kept: every step and every EVERY-th (what sg_run_chunk computes for rows not kept)
EVERY = (1, 7)
#: the example whose generated main.c is compiled and run
MAIN_EXAMPLE = "double_four_bar"


def _cases(model):
    """(label, simulate keywords) of the compiled cases of one model."""
    cases = []
    for chart in ("end", "symmetric"):
        for fact in ("qr", "sparse"):
            cases.append((f"nullspace-{chart}-{fact}",      # (the metric pinned: a model may
                          dict(method="nullspace", chart=chart, factorization=fact,   # recommend
                               metric="euclidean")))                            # "mass")
    cases.append(("index3", dict(method="index3", scheme="trapezoidal", factorization="qr")))
    cases.append(("index3-hht", dict(method="index3", scheme="hht:-0.1", factorization="qr")))
    return cases


def _window(name, model):
    if name in WINDOWS:
        return WINDOWS[name]
    dt = float(model.settings["dt"])
    return dict(dt=dt, t_end=STEPS * dt)


def _main_csv(name) -> np.ndarray:
    """The numbers main.c of ``name`` prints over a short run (compiled as its README says)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        symgen.generate(symgen.load_model(name), outdir=out)
        cc = shutil.which("cc") or shutil.which("gcc")
        sources = ["main.c", f"{name}.c", "symgen_runtime.c", "symgen_sparse.c"]
        subprocess.run([cc, "-std=c99", "-O2", "-o", "prog", *sources, "-lm"], cwd=out,
                       check=True)
        run = subprocess.run(["./prog", "1e-2", "3", "symmetric", "qr"], cwd=out,
                             capture_output=True, text=True)
        rows = [line.split(",") for line in run.stdout.splitlines()[1:]]
        return np.array(rows, dtype=float)


def collect(stepper: str = "compiled") -> dict:
    arrays = {}
    for name in known_examples():
        model = symgen.load_model(name, **MODEL_KW.get(name, {}))
        win = _window(name, model)
        for label, kw in _cases(model):
            for every in EVERY:
                key = label if every == 1 else f"{label}/every{every}"
                try:
                    res = symgen.simulate(model, stepper=stepper, progress=None, every=every,
                                          **win, **kw)
                except ValueError as exc:        # a case the compiled stepper does not have
                    print(f"  {name} {key}: skipped ({exc})")
                    continue
                _keep(arrays, f"{name}/{key}", res)
                print(f"  {name} {key}: {res.status}, {res.n_steps} steps")
    _controlled(arrays, stepper)
    arrays[f"main.c/{MAIN_EXAMPLE}"] = _main_csv(MAIN_EXAMPLE)
    return arrays


def _keep(arrays: dict, key: str, res) -> None:
    for field in FIELDS:
        value = getattr(res, field)
        if value is not None:
            arrays[f"{key}/{field}"] = np.asarray(value)
    arrays[f"{key}/status"] = np.array(res.status)


def _controlled(arrays: dict, stepper: str) -> None:
    """A pendulum under a held torque: a sampled controller, and a "hold" input table, every
    step and every 7th row kept (the work of the torque's power output in the outputs)."""
    import sympy as sp

    (th,), (thd,) = symgen.coordinates("theta")
    T = symgen.inputs("T")
    mdl = symgen.Model("held_pendulum", [th], [[1.0]], [-9.81 * sp.sin(th) + T],
                       outputs={"power:motor": T * thd}, x0=[0.4],
                       settings={"dt": 1e-3, "t_end": 0.3})
    law = lambda t, x, xd: -3.0 * x[0] - 0.5 * xd[0]                  # noqa: E731
    tk = np.arange(0.0, 0.3, 5e-3)
    for every in EVERY:
        for label, kw in (("controller", dict(controller=law, period=5e-3)),
                          ("hold", dict(inputs={"T": (tk, np.sin(7 * tk), "hold")}))):
            res = symgen.simulate(mdl, stepper=stepper, progress=None, every=every, **kw)
            _keep(arrays, f"held_pendulum/{label}/every{every}", res)
            print(f"  held_pendulum {label} every {every}: {res.status}, {res.n_steps} steps")


def main(argv) -> int:
    stepper = "compiled"
    if len(argv) == 5 and argv[3] == "--stepper" and argv[4] in ("compiled", "python"):
        stepper, argv = argv[4], argv[:3]
    if len(argv) != 3 or argv[1] not in ("capture", "compare"):
        print(__doc__)
        return 2
    arrays = collect(stepper)
    if argv[1] == "capture":
        np.savez(argv[2], **arrays)
        print(f"captured {len(arrays)} arrays into {argv[2]}")
        return 0
    with np.load(argv[2]) as ref:
        keys = set(ref.files)
        new = sorted(set(arrays) - keys)            # a case the capture had not (a new example)
        bad = [k for k in sorted(keys)
               if k not in arrays
               or not np.array_equal(ref[k], arrays[k], equal_nan=ref[k].dtype.kind == "f")]
    print(f"compared {len(keys)} arrays: {len(keys) - len(bad)} equal, {len(bad)} differ"
          + (f"; {len(new)} new (not in the capture, not compared)" if new else ""))
    for k in bad:
        print("  differs:", k)
    for k in new[:10]:
        print("  new:", k)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
