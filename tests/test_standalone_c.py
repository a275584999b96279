"""The generated C builds warning-free as strict C99 with a plain C main and agrees with Python."""
import shutil
import subprocess

import numpy as np
import pytest

import symgen
from pipeline_models import MODELS

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")

MAIN = r"""
#include <stdio.h>
#include "{name}.h"

static void dump(const char *label, const double *a, int size)
{{
    int i;
    printf("%s", label);
    for (i = 0; i < size; ++i) printf(" %.17g", a[i]);
    printf("\n");
}}

int main(void)
{{
    double t = {t!r};
    double x[{P}_N] = {{ {x} }}, xd[{P}_N] = {{ {xd} }}, xdd[{P}_N] = {{ {xdd} }};
    double lam[{P}_M + 1] = {{ {lam} }};
    double M[{P}_N * {P}_N], f[{P}_N], K[{P}_N * {P}_N], C[{P}_N * {P}_N];
    double q[{P}_M + 1], H[{P}_M * {P}_N + 1], qd[{P}_M + 1], Hd[{P}_M * {P}_N + 1];
    double qdd[{P}_M + 1], Hdd[{P}_M * {P}_N + 1], E[2], y[{P}_NY + 1];
    {name}_dynamics(t, x, xd, xdd, lam, {name}_param_defaults, M, f, K, C);
    {name}_constraints(t, x, xd, xdd, {name}_param_defaults, q, H, qd, Hd, qdd, Hdd);
    {name}_energy(t, x, xd, {name}_param_defaults, E);
    {name}_outputs(t, x, xd, {name}_param_defaults, y);
    dump("M", M, {P}_N * {P}_N); dump("f", f, {P}_N); dump("K", K, {P}_N * {P}_N);
    dump("C", C, {P}_N * {P}_N); dump("q", q, {P}_M); dump("H", H, {P}_M * {P}_N);
    dump("q_dot", qd, {P}_M); dump("H_dot", Hd, {P}_M * {P}_N); dump("q_ddot", qdd, {P}_M);
    dump("H_ddot", Hdd, {P}_M * {P}_N); dump("E", E, 2); dump("y", y, {P}_NY);
    return 0;
}}
"""


def _fmt(a):
    return ", ".join(repr(float(v)) for v in a) or "0"


@pytest.mark.parametrize("which", sorted(MODELS))
def test_standalone_c_compiles_strictly_and_agrees(which, tmp_path):
    model = MODELS[which]()
    src = symgen.generate(model, tmp_path)
    assert "#include <math.h>" in src.source
    includes = [ln for ln in (src.source + src.header).splitlines() if ln.startswith("#include")]
    assert sorted(set(includes)) == sorted({"#include <math.h>", f'#include "{model.name}.h"',
                                            '#include "symgen_runtime.h"'})
    rng = np.random.default_rng(7)
    t = 0.37
    x, xd, xdd = rng.normal(size=(3, model.n))
    x = x + 1.0                                   # keep r away from 0 in the polar model
    lam = rng.normal(size=model.m)
    (tmp_path / "main.c").write_text(MAIN.format(
        name=model.name, P=model.name.upper(), t=t, x=_fmt(x), xd=_fmt(xd), xdd=_fmt(xdd),
        lam=_fmt(lam)))
    exe = tmp_path / "main"
    proc = subprocess.run(
        [CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2", "main.c",
         f"{model.name}.c", "-lm", "-o", str(exe)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""                      # not even a warning
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    got = {}
    for line in run.stdout.splitlines():
        label, *vals = line.split()
        got[label] = np.array([float(v) for v in vals])

    ref = symgen.LambdifyKernels(model)
    expected = dict(zip(("M", "f", "K", "C"), ref.dynamics(t, x, xd, xdd, lam)))
    expected.update(zip(("q", "H", "q_dot", "H_dot", "q_ddot", "H_ddot"),
                        ref.constraints(t, x, xd, xdd)))
    expected["E"] = np.array(ref.energy(t, x, xd))
    expected["y"] = ref.outputs(t, x, xd)
    for label, want in expected.items():
        want = np.ravel(want)
        np.testing.assert_allclose(got[label], want, rtol=1e-12,
                                   atol=1e-12 * max(1.0, float(np.max(np.abs(want), initial=0))),
                                   err_msg=label)


def test_every_generated_file_names_version_and_model_hash(tmp_path):
    model = MODELS["pendulum"]()
    src = symgen.generate(model)
    from symgen.codegen import RUNTIME_FILES, runtime_files
    for fname, text in src.files.items():
        if fname in RUNTIME_FILES:          # the model-independent stepper runtime, verbatim
            continue
        assert symgen.__version__ in text, fname
        assert model.hash in text, fname
    for path in runtime_files():
        assert src.files[path.name] == path.read_text()


@pytest.mark.parametrize("which", ["pendulum", "four_bar"])
def test_readme_example_of_generated_c_compiles_and_runs(which, tmp_path):
    model = MODELS[which]()
    src = symgen.generate(model, tmp_path)
    readme = src.files["README.md"]
    code = readme.split("```c\n", 1)[1].split("```", 1)[0]
    (tmp_path / "main.c").write_text(code)
    proc = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "main.c",
                           f"{model.name}.c", "-lm", "-o", "main"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    out = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True)
    T, V = symgen.LambdifyKernels(model).energy(0.0, np.zeros(model.n), np.zeros(model.n))
    assert out.stdout.strip() == f"T = {T:g}, V = {V:g}"


def test_integer_constants_beyond_32_bits_compile_strictly(tmp_path):
    (x,), _ = symgen.coordinates("x")
    model = symgen.Model("bigint", [x], [[1]], [-(10**20) * x - 3 * x])
    src = symgen.generate(model, tmp_path)
    assert "1e+20" in src.source
    proc = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                           "bigint.c"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    k = symgen.build(model)
    assert k.dynamics(0.0, [2.0], [0.0], [0.0], [])[1][0] == pytest.approx(-2e20 - 6.0, rel=1e-15)
