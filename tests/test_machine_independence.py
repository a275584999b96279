"""The model and its generated C do not depend on the machine's BLAS (issue 34, item 1).

OpenBLAS picks its kernels by CPU, so ``np.dot``, ``pinv`` and matrix products differ in their
last bits between machines; ``OPENBLAS_CORETYPE`` makes this machine pick another CPU's kernels.
The shipped spatial and planar builder examples (their geometry: bases, pseudo-inverses, lengths,
angles), an assembled start (the SymPy four-bar's, ``symgen.assemble``) and builders' starts found
by Gauss–Newton (``model(fix=...)``, and a start projected by the initial-state check) are made in
one subprocess per environment (default, Prescott, Haswell; each with its own SYMGEN_CACHE_DIR),
and their model hashes and every generated file must be equal byte for byte.

The oracle is the default environment's output; that the environments' BLAS really differ here is
checked first (a pseudo-inverse's bytes), else the test skips (another BLAS, or one CPU kernel
for all).
"""
import json
import os
import subprocess
import sys
import re
import textwrap

import pytest

HASH = re.compile(r"[0-9a-f]{64}")
ENVIRONMENTS = {"default": None, "Prescott": "Prescott", "Haswell": "Haswell"}

SCRIPT = textwrap.dedent(r'''
    import hashlib, json, sys, warnings
    import numpy as np
    import symgen
    from symgen.examples import slider_crank_3d
    from symgen.mechanics import PlanarSystem, SpatialSystem

    def four_bar(name, **model_kw):
        """A planar four-bar (crank 0.35, coupler 1.1, rocker 0.8, ground 1.0) placed roughly
        (guess): its start assembled by Gauss–Newton with the crank held (fix, xd_fix)."""
        s = PlanarSystem(name)
        crank = s.body("crank", mass=1.0, inertia=0.35 ** 2 / 12,
                       points={"O": (-0.175, 0), "A": (0.175, 0)}, x0=(0.175, 0, 0))
        coupler = s.body("coupler", mass=1.0, inertia=1.1 ** 2 / 12,
                         points={"A": (-0.55, 0), "B": (0.55, 0)}, guess=(0.73, 0.4, 0.8))
        rocker = s.body("rocker", mass=1.0, inertia=0.8 ** 2 / 12,
                        points={"B": (-0.4, 0), "D": (0.4, 0)}, guess=(1.05, 0.4, -1.71))
        s.revolute("ground", (0, 0), crank, "O")
        s.revolute(crank, "A", coupler, "A")
        s.revolute(coupler, "B", rocker, "B")
        s.revolute(rocker, "D", "ground", (1.0, 0))
        s.gravity()
        return s.model(**model_kw)

    def tilted_pendulum():
        """A spatial body of three points not along the axes (a ground point O and P, Q), a
        custom row and an initial velocity that its start violates by 1e-7 and 4e-6 (the
        initial-state check projects them), a force at a marker."""
        s = SpatialSystem("tilted_pendulum")
        s.ground_point("O", (0, 0, 0))
        s.point("P", (0.35, 0.2, -0.7), velocity=(1e-5, 0, 0))
        s.point("Q", (0.2, -0.35, 0.1))
        rod = s.body("rod", mass=0.3, inertia=(1e-3, 2e-3, 3e-3), com=(0.195, 0.065, -0.34),
                     points=["O", "P", "Q"], markers={"tip": (0.36, 0.345, -0.87)})
        s.constraint(s.symbols("P")[0][2] + 0.7 - 1e-7, name="height")
        s.force(rod, "tip", (0, 0.5, 0))
        s.gravity(9.81, direction=(0, 0, -1))
        s.output_point(rod, "tip")
        return s.model()

    cases = {
        "slider_crank_3d": lambda: symgen.load_model("slider_crank_3d"),
        "slider_crank_3d(iftomm)": lambda: slider_crank_3d.model(iftomm=True),
        "bricard": lambda: symgen.load_model("bricard"),
        "slider_crank": lambda: symgen.load_model("slider_crank"),
        "andrews_squeezer": lambda: symgen.load_model("andrews_squeezer"),
        "sympy_four_bar": lambda: symgen.load_model("sympy_four_bar"),
        "four_bar(fix)": lambda: four_bar("four_bar_fix", fix={"crank.theta": 0.3},
                                           xd_fix={"crank.theta": 2.0}),
        "tilted_pendulum": tilted_pendulum,
    }
    rng = np.random.default_rng(0)
    A = rng.normal(size=(7, 5))
    out = {"blas": hashlib.sha256(np.linalg.pinv(A).tobytes()).hexdigest(), "models": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, make in cases.items():
            model = make()
            out["models"][key] = {"hash": model.hash, "files": symgen.generate(model).files}
    json.dump(out, sys.stdout)
''')


def _first_difference(a: str, b: str) -> str:
    """The first line that differs other than by the model hash (the hash is reported apart)."""
    count, first = 0, None
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), 1):
        if HASH.sub("<hash>", x) != HASH.sub("<hash>", y):
            count += 1
            first = first or f"line {i}: {x.strip()[:100]!r} vs {y.strip()[:100]!r}"
    return f"{count} lines, first {first}" if first else "in the model hash only"


@pytest.mark.slow
def test_models_and_generated_c_do_not_depend_on_the_blas(tmp_path):
    procs = {}
    for tag, coretype in ENVIRONMENTS.items():
        env = dict(os.environ, SYMGEN_CACHE_DIR=str(tmp_path / tag), OPENBLAS_NUM_THREADS="1")
        env.pop("OPENBLAS_CORETYPE", None)
        if coretype:
            env["OPENBLAS_CORETYPE"] = coretype
        procs[tag] = subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = {}
    for tag, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{tag}: {err[-3000:]}"
        got[tag] = json.loads(out)
    if len({g["blas"] for g in got.values()}) == 1:
        pytest.skip("OPENBLAS_CORETYPE changes no BLAS result on this machine")
    ref = got["default"]["models"]
    problems = []
    for tag, g in got.items():
        for key, want in ref.items():
            have = g["models"][key]
            if have["hash"] != want["hash"]:
                problems.append(f"{tag}: {key}: model hash {have['hash'][:12]} != "
                                f"{want['hash'][:12]}")
            assert sorted(have["files"]) == sorted(want["files"]), (tag, key)
            for fname, text in want["files"].items():
                if have["files"][fname] != text:
                    problems.append(f"{tag}: {key}: {fname} differs, "
                                    + _first_difference(text, have["files"][fname]))
    assert not problems, "\n".join(problems)


# -- the parts, against independent oracles ------------------------------------------------------

def test_exact_roots_are_correctly_rounded():
    # oracle: the decimal module's square root to 60 digits, rounded once to a double
    import decimal
    from fractions import Fraction

    import numpy as np

    from symgen.mechanics import _exact
    ctx = decimal.Context(prec=60)
    rng = np.random.default_rng(5)
    values = [Fraction(9, 400), Fraction(2), Fraction(1, 3), Fraction(10) ** -30]
    values += [Fraction(repr(float(v))) for v in rng.uniform(0, 10, 200)]
    values += [Fraction(float(v)) for v in rng.uniform(0, 1e-3, 200)]
    for r in values:
        want = float(ctx.sqrt(ctx.divide(decimal.Decimal(r.numerator), r.denominator)))
        assert _exact.sqrt(r) == want, r
        assert _exact._root(r * r, 2) == want, r                # ⁴√(r²) = √r
    assert _exact.sqrt(Fraction(repr(0.35)) - Fraction(repr(0.2))) != 0.35 - 0.2
    assert _exact.sqrt((Fraction(repr(0.35)) - Fraction(repr(0.2))) ** 2) == 0.15


def test_exact_pseudo_inverse_and_deferred_values():
    from fractions import Fraction

    import numpy as np
    import sympy as sp

    from symgen.mechanics import _exact
    from symgen.mechanics._common import Deferred
    rng = np.random.default_rng(6)
    for k in (1, 2, 3):
        X = [tuple(Fraction(repr(float(v))) for v in rng.uniform(-1, 1, 3)) for _ in range(k)]
        P = _exact.pinv(X)
        # exactly X⁺X = I (columns independent), and numpy's pinv to round-off
        assert all(sum(P[a][i] * X[b][i] for i in range(3)) == (a == b)
                   for a in range(k) for b in range(k))
        Xf = np.array([[float(v) for v in col] for col in X]).T
        np.testing.assert_allclose([[float(v) for v in row] for row in P], np.linalg.pinv(Xf),
                                   rtol=0, atol=1e-13)
    # a length from the decimals the user wrote: 0.35 − 0.2 is 0.15 (in doubles 0.1499…97)
    x1, x2, a = sp.symbols("x1 x2 a")
    length = Deferred(sp.sqrt((x1 - x2) ** 2), "distance", "initial length")
    assert float(length.value({x1: 0.35, x2: 0.2})) == 0.15 != 0.35 - 0.2
    assert Deferred(a - x1, "angle", "initial angle").value({x1: 0.3, a: 0.3}) == 0


def test_min_norm_step_is_lstsq_with_redundant_rows():
    import numpy as np

    from symgen.gauss_newton import min_norm_step
    rng = np.random.default_rng(7)
    for m, n in ((3, 8), (6, 6), (9, 12)):
        J, r = rng.normal(size=(m, n)), rng.normal(size=m)
        J[-1], r[-1] = J[0] - 2 * J[1], r[0] - 2 * r[1]         # a redundant, consistent row
        dz, rank = min_norm_step(J, r, 1e-10)
        assert rank == min(m, n) - (1 if m <= n else 0)
        np.testing.assert_allclose(dz, np.linalg.lstsq(J, r, rcond=1e-10)[0], rtol=0,
                                   atol=1e-13)


def test_assembled_start_is_the_nearest_doubles_to_the_solution():
    # oracle: sympy's nsolve (mpmath's findroot) at 40 digits of q = 0 with the crank held, then
    # the velocities from q̇ = 0 solved exactly (sympy) at the assembled doubles, rounded once
    import numpy as np
    import sympy as sp

    import symgen
    from examples.sympy_four_bar import CRANK_RATE0
    model = symgen.load_model("sympy_four_bar")
    vals = {s: sp.Rational(*float(v).as_integer_ratio()) for s, v in model.params.items()}
    q = [e.xreplace(vals) for e in model.q]
    rows = q + [model.coords[0]]
    root = sp.nsolve(rows, list(model.coords), [0.0, -0.9, -0.8], prec=40)
    np.testing.assert_array_equal(model.x0, [float(v) for v in root])
    at = {c: sp.Rational(*float(v).as_integer_ratio()) for c, v in zip(model.coords, model.x0)}
    vs = sp.symbols("v0:3")
    H = sp.Matrix(q).jacobian(model.coords).xreplace(at)
    sol = sp.solve(list(H * sp.Matrix(vs)) + [vs[0] - CRANK_RATE0], vs)
    want = [float(sp.N(sol[v], 40)) for v in vs]
    want[2] = 0.0 if abs(want[2]) < 1e-15 * max(map(abs, want)) else want[2]   # gauss_newton.ZERO
    np.testing.assert_array_equal(model.xd0, want)
