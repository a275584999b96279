"""generated/<example>/ holds the standalone C of every shipped example (the model's own files:
<example>.c, <example>.h, main.c, README.md), generated/runtime/ the one copy of the C runtime they
share (symgen generate writes it into every model's folder; byte for byte the generator's, with any
sympy: the runtime is copied, not generated), and that C compiles warning-free as strict C99 and
builds with the line generated/README.md gives.

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
why.  Regenerate with the recorded sympy (generated/README.md has the loop over the examples):
``symgen generate NAME -o generated/NAME --runtime-dir generated/runtime`` for every example, and
update SYMPY_VERSION.

The model's start (``<model>_x0``/``<model>_xd0`` in ``<model>.c``) is compared byte for byte
too: an assembled start (symgen.assemble, e.g. the SymPy four-bar's) comes from a deterministic
Gauss–Newton (symgen.gauss_newton: no BLAS, the rows at 113 bits, rounded to the nearest doubles),
so it has the same bits on every machine (tests/test_machine_independence.py).
"""
import glob
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import sympy

import symgen
from symgen.codegen import RUNTIME_FILES, GeneratedSource, runtime_sources
from symgen.loader import known_examples

from symgen import jit as _jit
from symgen.kernels import Kernels

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
RUNTIME = GENERATED / "runtime"          # the runtime the examples' folders share
SYMPY_VERSION = (GENERATED / "SYMPY_VERSION").read_text().strip()
CC = shutil.which("cc") or shutil.which("gcc")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
NAMES = sorted(p.name for p in GENERATED.iterdir() if p.is_dir() and p != RUNTIME)
REGENERATE = ("run `symgen generate {0} -o generated/{0} --runtime-dir generated/runtime` and "
              "commit the result")


#: the start's lines in <model>.c
START_LINE = re.compile(r"^const double \w+_(x0|xd0)\[\d+\] = \{ (.*) \};$", re.M)


def _abi_text(text: str) -> str:
    return re.sub(r"model hash `?[0-9a-f]{64}`?", "model hash <masked>", text)


@pytest.fixture(scope="module", params=NAMES)
def fresh(request):
    """(model, freshly generated source, committed files) of one shipped example (its folder's
    files; the runtime is compared on its own, test_committed_runtime_is_the_generators).

    The source is symgen.generate's, taken from the session's build cache when an earlier test
    built the example (jit.generated_source: keyed by the model's hash and the fingerprint of the
    generator, its templates and sympy; conftest.py gives each session an empty cache), so the
    N four-bar at N = 40 is not derived a second time."""
    model = symgen.load_model(request.param)
    folder = GENERATED / request.param
    committed = {p.name: p.read_text() for p in folder.iterdir()}
    return model, _jit.generated_source(model), committed


def _model_files(src: GeneratedSource) -> dict:
    """The generated files that go in the model's folder (all but the runtime's)."""
    return {f: text for f, text in src.files.items() if f not in RUNTIME_FILES}


def test_every_shipped_example_has_committed_c():
    assert "runtime" not in known_examples(), "generated/runtime/ is the runtime's folder"
    assert NAMES == sorted(known_examples()), (
        "regenerate with the loop in generated/README.md")
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?\S*", SYMPY_VERSION), SYMPY_VERSION


def test_no_example_folder_holds_the_runtime():
    # one copy, in generated/runtime/ (`symgen generate NAME -o generated/NAME` without
    # --runtime-dir would put another in the example's folder)
    for name in NAMES:
        files = sorted(p.name for p in (GENERATED / name).iterdir())
        copies = [f for f in files if f in RUNTIME_FILES or f.startswith(("sg_", "symgen_"))]
        assert not copies, (f"generated/{name}/ holds runtime files {copies}: the runtime lives "
                            "in generated/runtime/ only; delete them and "
                            + REGENERATE.format(name))


def test_committed_runtime_is_the_generators(tmp_path):
    # what generate writes with runtime_dir (the CLI's --runtime-dir), byte for byte, for any
    # model: the runtime is copied from templates/runtime/ (sg_constants.h rendered from
    # symgen.runtime_constants), not generated per model
    (x,), _ = symgen.coordinates("x")
    src = symgen.generate(symgen.Model("spring", [x], [[1]], [-x]))
    src.write(tmp_path / "spring", tmp_path / "runtime")
    assert sorted(p.name for p in (tmp_path / "spring").iterdir()) == sorted(_model_files(src))
    written = sorted(p.name for p in (tmp_path / "runtime").iterdir())
    assert written == sorted(RUNTIME_FILES) == sorted(runtime_sources())
    assert sorted(p.name for p in RUNTIME.iterdir()) == written, (
        "generated/runtime/ holds other files than the runtime's: regenerate (generated/README.md)")
    for name, text in runtime_sources().items():
        committed = (RUNTIME / name).read_text()
        assert committed == (tmp_path / "runtime" / name).read_text() == text, (
            f"generated/runtime/{name} differs from templates/runtime/: regenerate "
            "(generated/README.md)")


def test_committed_abi_matches_generator(fresh):
    model, src, committed = fresh
    assert sorted(committed) == sorted(_model_files(src))
    for fname, text in _model_files(src).items():
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
    for fname, text in _model_files(src).items():
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
    committed = {**committed, **{p.name: p.read_text() for p in RUNTIME.iterdir()}}
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


def _build_line() -> list[str]:
    """generated/README.md's build line (the first ``cc`` line of its sh blocks), as argv."""
    text = (GENERATED / "README.md").read_text()
    lines = [ln for body in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
             for ln in body.splitlines() if ln.startswith("cc ")]
    assert lines, "generated/README.md gives no build line"
    return shlex.split(lines[0])


def _run_csv(exe: Path, *args) -> np.ndarray:
    run = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    rows = np.array([[float(v) for v in ln.split(",")] for ln in run.stdout.splitlines()[1:]])
    assert np.isfinite(rows).all()
    return rows


@pytest.fixture(scope="module")
def runtime_objects(tmp_path_factory):
    """generated/runtime/'s two translation units compiled strictly, once for every example."""
    out = tmp_path_factory.mktemp("runtime")
    objs = []
    for unit in ("symgen_runtime.c", "symgen_sparse.c"):
        obj = out / unit.replace(".c", ".o")
        proc = subprocess.run([CC, *STRICT, "-O1", "-c", str(RUNTIME / unit), "-o", str(obj)],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        objs.append(str(obj))
    return objs


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_readme_build_line_builds_an_example(tmp_path):
    # the line as generated/README.md writes it, from the repository's root, with warnings as
    # errors and its program written to tmp_path; then the README's run (DT 0.1, T_END 1)
    argv = _build_line()
    assert argv[0] == "cc" and "-Igenerated/runtime" in argv
    assert "generated/stiff_pendulum/*.c" in argv
    exe = tmp_path / "stiff_pendulum"
    i = argv.index("-o")
    argv[i + 1] = str(exe)
    args = [a for arg in argv[1:] for a in (sorted(glob.glob(arg, root_dir=ROOT)) if "*" in arg
                                            else [arg])]
    proc = subprocess.run([CC, *STRICT[1:], *args], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    rows = _run_csv(exe, "0.1", "1")
    assert len(rows) == 11 and rows[-1, 0] == pytest.approx(1.0)


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("name", NAMES)
def test_committed_c_compiles_strictly(name, runtime_objects, tmp_path):
    # the README's build line for every example (the runtime compiled once): the folder's .c
    # files with -Igenerated/runtime, linked with the runtime, run for ten steps of 1e-4
    folder = GENERATED / name
    sources = sorted(str(p) for p in folder.glob("*.c"))
    assert [Path(s).name for s in sources] == sorted([f"{name}.c", "main.c"])
    exe = tmp_path / name
    proc = subprocess.run([CC, *STRICT, "-O1", f"-I{RUNTIME}", *sources, *runtime_objects, "-lm",
                           "-o", str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert len(_run_csv(exe, "1e-4", "1e-3")) == 11
