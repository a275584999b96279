"""generated/<example>/ holds the standalone C of every shipped example, and that C compiles
warning-free as strict C99.

What "matches the generator" means: pyproject allows any sympy >= 1.12, and sympy's common
subexpression elimination and term order (so the text of the .c file) change between sympy
versions.  So, with any sympy:

* the ABI text is compared exactly: the header (sizes, coordinate/parameter/output indices,
  array order, the function declarations) and the generated README, with only the model hash
  masked (the hash fingerprints sympy's expression trees, whose argument order is sympy's);
* the numbers are compared: the committed .c and the freshly generated .c are both compiled and
  evaluated at random states; every output agrees to 1e-12 of its array's scale.

Byte for byte the committed files are compared only when the installed sympy is the one recorded
in generated/SYMPY_VERSION (the sympy that wrote generated/); otherwise that test skips and says
why.  Regenerate with the recorded sympy:
``for m in <examples>; do symgen generate $m -o generated/$m; done`` and update SYMPY_VERSION.

The model's start (``<model>_x0``/``<model>_xd0`` in ``<model>.c``) is compared byte for byte
too: an assembled start (symgen.assemble, e.g. the SymPy four-bar's) comes from a deterministic
Gauss–Newton (symgen.gauss_newton: no BLAS, the rows at 113 bits, rounded to the nearest doubles),
so it has the same bits on every machine (tests/test_machine_independence.py).
"""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import sympy

import symgen
from symgen.codegen import GeneratedSource
from symgen.loader import known_examples

from symgen import jit as _jit
from symgen.kernels import Kernels

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
SYMPY_VERSION = (GENERATED / "SYMPY_VERSION").read_text().strip()
CC = shutil.which("cc") or shutil.which("gcc")
NAMES = sorted(p.name for p in GENERATED.iterdir() if p.is_dir())
REGENERATE = "run `symgen generate {0} -o generated/{0}` and commit the result"


#: the start's lines in <model>.c
START_LINE = re.compile(r"^const double \w+_(x0|xd0)\[\d+\] = \{ (.*) \};$", re.M)


def _abi_text(text: str) -> str:
    return re.sub(r"model hash `?[0-9a-f]{64}`?", "model hash <masked>", text)


@pytest.fixture(scope="module", params=NAMES)
def fresh(request):
    """(model, freshly generated source, committed files) of one shipped example.

    The source is symgen.generate's, taken from the session's build cache when an earlier test
    built the example (jit.generated_source: keyed by the model's hash and the fingerprint of the
    generator, its templates and sympy; conftest.py gives each session an empty cache), so the
    N four-bar at N = 40 is not derived a second time."""
    model = symgen.load_model(request.param)
    folder = GENERATED / request.param
    committed = {p.name: p.read_text() for p in folder.iterdir()}
    return model, _jit.generated_source(model), committed


def test_every_shipped_example_has_committed_c():
    assert NAMES == sorted(known_examples()), (
        "regenerate with: for m in <examples>; do symgen generate $m -o generated/$m; done")
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?\S*", SYMPY_VERSION), SYMPY_VERSION


def test_committed_abi_matches_generator(fresh):
    model, src, committed = fresh
    assert sorted(committed) == sorted(src.files)
    for fname, text in src.files.items():
        if fname.endswith(".c"):
            continue
        assert _abi_text(committed[fname]) == _abi_text(text), (
            f"generated/{model.name}/{fname}: the ABI drifted from the generator: "
            + REGENERATE.format(model.name))


@pytest.mark.skipif(sympy.__version__ != SYMPY_VERSION,
                    reason=f"generated/ was written with sympy {SYMPY_VERSION}, this is sympy "
                           f"{sympy.__version__}: its CSE'd C text differs legitimately; the ABI "
                           "and the numbers are still compared")
def test_committed_c_matches_generator_byte_for_byte(fresh):
    model, src, committed = fresh
    for fname, text in src.files.items():
        assert committed[fname] == text, (
            f"generated/{model.name}/{fname} drifted from the generator: "
            + REGENERATE.format(model.name))


def test_committed_start_has_no_round_off_noise():
    # an entry of a committed start is 0.0 or above START_ZERO of its vector's largest; the
    # assembled SymPy four-bar's start is printed as the model's, bit for bit: its held crank
    # angle and rate exactly (0.0 and 4.0), its rocker's rate (0 to round-off) as 0.0
    from symgen.codegen.render import START_ZERO
    for name in NAMES:
        for key, printed in START_LINE.findall((GENERATED / name / f"{name}.c").read_text()):
            got = np.abs([float(v) for v in printed.split(",")])
            assert np.all((got == 0) | (got > START_ZERO * got.max())), (name, key, got)
    from examples.sympy_four_bar import CRANK_ANGLE0, CRANK_RATE0
    model = symgen.load_model("sympy_four_bar")
    text = (GENERATED / "sympy_four_bar" / "sympy_four_bar.c").read_text()
    for (key, printed), want in zip(START_LINE.findall(text), (model.x0, model.xd0)):
        got, want = np.array([float(v) for v in printed.split(",")]), np.asarray(want, float)
        if key == "x0":
            assert got[0] == CRANK_ANGLE0 == 0.0           # held by assemble
        else:
            # held; the rocker turns with the coupler (O, A, D in line: the coupler turns about D)
            assert got[0] == CRANK_RATE0 == 4.0 and got[2] == 0.0
        np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_committed_c_computes_what_the_generator_computes(fresh, tmp_path):
    model, src, committed = fresh
    kernels = []
    for tag, files in (("committed", committed), ("fresh", src.files)):
        gs = GeneratedSource(name=src.name, model_hash=src.model_hash, files=dict(files),
                             cdef=src.cdef)               # same cdef: the ABI test holds it equal
        module = f"_symgen_test_{tag}_{model.name}"
        (tmp_path / tag).mkdir()
        path = _jit._compile(gs, module, ("-O0", "-std=c99"), tmp_path / tag)
        mod = _jit._load(module, path)
        kernels.append(Kernels(model, mod.ffi, mod.lib, path=path))
    a, b = kernels
    rng = np.random.default_rng(8)
    n, m = model.n, model.m
    p0 = np.array(a.p, float)
    for _ in range(5):
        t = rng.uniform(-2, 2)
        x = np.asarray(model.x0, float) + rng.normal(scale=0.3, size=n)
        xd, xdd, lam = rng.normal(size=n), rng.normal(size=n), rng.normal(size=m)
        p = p0 * rng.uniform(0.8, 1.2, p0.size)
        a.p[:] = p                         # the C reads the parameters from this buffer
        b.p[:] = p
        calls = [lambda k: k.dynamics(t, x, xd, xdd, lam),
                 lambda k: k.constraints(t, x, xd, xdd),
                 lambda k: (np.array(k.energy(t, x, xd)),),
                 lambda k: (k.outputs(t, x, xd),)]
        for call in calls:
            for u, v in zip([np.array(o, float) for o in call(a)], call(b)):
                v = np.asarray(v, float)
                assert np.isfinite(v).all()
                scale = max(1.0, float(np.max(np.abs(v), initial=0.0)))
                np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12 * scale)


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("name", NAMES)
def test_committed_c_compiles_strictly(name, tmp_path):
    folder = GENERATED / name
    proc = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                           str(folder / f"{name}.c"), "-o", str(tmp_path / f"{name}.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
