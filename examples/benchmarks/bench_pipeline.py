"""Pipeline timings for an N-link planar chain in (x, y, θ) body coordinates.

For N = 2, 5, 10, 20, 40: time to derive, generate (cse + printing), compile, reload from the cache
in a fresh process, and one `dynamics` kernel call from Python against the same evaluation through
`sympy.lambdify`.  Prints a table.  Run:  python examples/benchmarks/bench_pipeline.py [N ...]
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np
import sympy as sp

import symgen
from symgen import Model, coordinates


def chain(N: int) -> Model:
    """N uniform links (L = 1, m = 1) pinned end to end, the first to the ground; gravity −y."""
    names = [f"link{i}.{c}" for i in range(N) for c in ("x", "y", "theta")]
    xs, _ = coordinates(names)
    m, L, g = sp.symbols("m L g")
    M = sp.zeros(3 * N, 3 * N)
    f = sp.zeros(3 * N, 1)
    q = []
    prev_tip = (sp.S.Zero, sp.S.Zero)
    x0 = []
    for i in range(N):
        x, y, th = xs[3 * i: 3 * i + 3]
        M[3 * i, 3 * i] = M[3 * i + 1, 3 * i + 1] = m
        M[3 * i + 2, 3 * i + 2] = m * L**2 / 12
        f[3 * i + 1] = -m * g
        base = (x - L / 2 * sp.cos(th), y - L / 2 * sp.sin(th))
        q += [base[0] - prev_tip[0], base[1] - prev_tip[1]]
        prev_tip = (x + L / 2 * sp.cos(th), y + L / 2 * sp.sin(th))
        x0 += [i + 0.5, 0.0, 0.0]
    V = sum(m * g * xs[3 * i + 1] for i in range(N))
    return Model(f"chain{N}", xs, M, f, q=q, V=V, params={m: 1.0, L: 1.0, g: 9.81}, x0=x0)


RELOAD = r"""
import sys, time, json
sys.path.insert(0, {here!r})
from bench_pipeline import chain
import symgen
model = chain({N})
t0 = time.perf_counter()
k = symgen.build(model)
print(json.dumps(time.perf_counter() - t0))
"""


def main(Ns):
    here = str(Path(__file__).resolve().parent)
    cache = tempfile.mkdtemp(prefix="symgen-bench-")
    os.environ["SYMGEN_CACHE_DIR"] = cache
    print(f"cache: {cache}")
    print(f"{'N':>3} {'n':>4} {'m':>4} {'derive s':>9} {'generate s':>10} {'compile s':>9} "
          f"{'reload s':>9} {'C call us':>10} {'lambdify us':>11} {'ratio':>7}")
    for N in Ns:
        model = chain(N)
        t0 = time.perf_counter()
        d = symgen.derive(model)
        t1 = time.perf_counter()
        src = symgen.generate(d)
        t2 = time.perf_counter()
        # compile: build() reuses nothing here (fresh cache entry), so it pays generate again;
        # subtract the measured generate time to report the compiler's share.
        k = symgen.build(model)
        t3 = time.perf_counter()
        compile_s = max(0.0, (t3 - t2) - (t2 - t1) - (t1 - t0))
        out = subprocess.run([sys.executable, "-c", RELOAD.format(here=here, N=N)],
                             capture_output=True, text=True, check=True)
        reload_s = json.loads(out.stdout.strip().splitlines()[-1])
        ref = symgen.LambdifyKernels(model, d)
        rng = np.random.default_rng(0)
        x, xd, xdd = rng.normal(size=(3, model.n))
        lam = rng.normal(size=model.m)
        c_call = min(timeit.repeat(lambda: k.dynamics(0.0, x, xd, xdd, lam), number=200,
                                   repeat=5)) / 200
        l_call = min(timeit.repeat(lambda: ref.dynamics(0.0, x, xd, xdd, lam), number=5,
                                   repeat=3)) / 5
        for a, b in zip(k.dynamics(0.0, x, xd, xdd, lam), ref.dynamics(0.0, x, xd, xdd, lam)):
            assert np.allclose(a, b, rtol=1e-12, atol=1e-12)
        print(f"{N:>3} {model.n:>4} {model.m:>4} {t1 - t0:>9.3f} {t2 - t1:>10.3f} "
              f"{compile_s:>9.3f} {reload_s:>9.4f} {c_call * 1e6:>10.2f} {l_call * 1e6:>11.1f} "
              f"{l_call / c_call:>7.0f}", flush=True)
        del src


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [2, 5, 10, 20, 40])
