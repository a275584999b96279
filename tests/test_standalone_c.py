"""The generated C builds warning-free as strict C99 with a plain C main and agrees with Python; the
generated simulation program (main.c) steps as symgen.simulate with each FACTORIZATION and by
default takes simulate's "auto" step."""
import os
import re
import resource
import shutil
import signal
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
    double qdd[{P}_M + 1], Hdd[{P}_M * {P}_N + 1], E[2], y[{P}_NY + 1], u[{P}_NU + 1] = {{ 0.0 }};
    {name}_dynamics(t, x, xd, xdd, lam, {name}_param_defaults, u, M, f, K, C);
    {name}_constraints(t, x, xd, xdd, {name}_param_defaults, q, H, qd, Hd, qdd, Hdd);
    {name}_energy(t, x, xd, {name}_param_defaults, E);
    {name}_outputs(t, x, xd, {name}_param_defaults, u, y);
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
    from symgen.codegen import RUNTIME_FILES, runtime_sources
    for fname, text in src.files.items():
        if fname in RUNTIME_FILES:          # the model-independent stepper runtime, verbatim
            continue
        assert symgen.__version__ in text, fname
        assert model.hash in text, fname
    for name, text in runtime_sources().items():
        assert src.files[name] == text


@pytest.mark.parametrize("which", ["pendulum", "four_bar"])
def test_readme_example_of_generated_c_compiles_and_runs(which, tmp_path):
    model = MODELS[which]()
    src = symgen.generate(model, tmp_path)
    readme = src.files["README.md"]
    code = readme.split("```c\n", 1)[1].split("```", 1)[0]
    # the README's own file name and build lines, as written, in the folder generate wrote (whose
    # main.c is the simulation program), with warnings as errors
    name = re.search(r"Save it as `(\w+\.c)`", readme).group(1)
    (tmp_path / name).write_text(code)
    lines = [re.search(r"`(cc [^`]+)`", readme).group(1),
             readme.split("```sh\n", 1)[1].splitlines()[0]]
    for line in lines:
        argv = line.split()
        proc = subprocess.run([CC, "-Wall", "-Wextra", "-Werror", "-pedantic", *argv[1:]],
                              cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == "", (line, proc.stderr)
    exe = lines[0].split("-o ", 1)[1].split()[0]
    out = subprocess.run([str(tmp_path / exe)], capture_output=True, text=True, check=True)
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
    k = symgen.build(model, runtime=False)          # the kernels' constant, not the runtime
    assert k.dynamics(0.0, [2.0], [0.0], [0.0], [])[1][0] == pytest.approx(-2e20 - 6.0, rel=1e-15)


# -- main.c: the standalone simulation program and its FACTORIZATION argument (issue 14) ----------
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
#: the double four-bar (n = 15 >= SPARSE_FROM_N: simulate's "auto" takes the sparse step there)
#: through its first two singular passages (t ≈ 0.69 s and 1.47 s), which amplify the round-off of
#: main.c's and simulate's consistent starts (6e-32 apart): compared within SPREAD_FACTOR times the
#: spread a 1e-15 relative change of the start velocity causes (measured: 3e-10 in x, 7e-10 in ẋ
#: at 2 s; main.c and simulate 0 apart with the sparse step, 4e-10 / 9e-10 with QR)
H_STEP, T_END = 1e-3, 2.0
SPREAD_FACTOR = 10


def _rel(a, b) -> float:
    """max |a − b| over max |b|."""
    return float(np.max(np.abs(a - b))) / float(np.max(np.abs(b)))


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """(model, compiled kernels, run) for the double four-bar's generated main.c built strictly;
    run(*args) returns (exit status, CSV as an array or None, stderr)."""
    model = symgen.load_model("double_four_bar")
    folder = tmp_path_factory.mktemp("main_c")
    symgen.generate(model, folder)
    proc = subprocess.run([CC, *STRICT, "-O2", "-o", "sim", "main.c", f"{model.name}.c",
                           "symgen_runtime.c", "symgen_sparse.c", "-lm"], cwd=folder,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr

    def run(*args):
        out = subprocess.run([str(folder / "sim"), *map(str, args)], capture_output=True, text=True)
        lines = out.stdout.splitlines()
        if out.returncode != 0 or not lines:
            return out.returncode, None, out.stderr
        assert lines[0].split(",")[1:] == (list(model.coord_names)
                                           + [f"{c}_dot" for c in model.coord_names])
        return out.returncode, np.array([[float(v) for v in ln.split(",")] for ln in lines[1:]]), \
            out.stderr
    run.exe = folder / "sim"
    return model, symgen.build(model), run


def _spread(kernels, res, **kw) -> tuple[float, float]:
    """How far (x, ẋ) of ``res`` move, relative, when its start velocity changes by ±1e-15 and
    2e-15 relative: the round-off spread of this run (a floor of 1e-12)."""
    xd0 = np.asarray(kernels.model.xd0, float)
    runs = [symgen.simulate(kernels, xd0=xd0 * (1 + e), stepper="compiled", **kw)
            for e in (1e-15, -1e-15, 2e-15)]
    assert all(r.status == "completed" for r in runs)
    return (max(1e-12, *(_rel(r.x, res.x) for r in runs)),
            max(1e-12, *(_rel(r.xd, res.xd) for r in runs)))


def _agrees(data, res, n, spread):
    assert data.shape == (len(res.t), 1 + 2 * n)
    np.testing.assert_allclose(data[:, 0], res.t, rtol=0, atol=1e-12)
    assert _rel(data[:, 1:1 + n], res.x) <= SPREAD_FACTOR * spread[0]
    assert _rel(data[:, 1 + n:], res.xd) <= SPREAD_FACTOR * spread[1]


@pytest.mark.parametrize("factorization", ["sparse", "qr"])
def test_main_c_takes_the_factorization_it_is_given(sim, factorization):
    # ./sim DT T_END end FACTORIZATION steps as simulate(chart="end", factorization=...,
    # stepper="compiled"): a chart named alone takes the paper's metric, in both
    model, kernels, run = sim
    status, data, err = run(H_STEP, T_END, "end", factorization)
    assert status == 0, err
    kw = dict(dt=H_STEP, t_end=T_END, factorization=factorization, chart="end")
    res = symgen.simulate(kernels, stepper="compiled", **kw)
    assert res.status == "completed" and res.meta["factorization"] == factorization
    assert np.sum(np.diff(np.sign(np.sin(res.x[:, 2]))) != 0) == 2     # two singular passages
    _agrees(data, res, model.n, _spread(kernels, res, **kw))
    # the two factorizations agree to round-off here: the runtime's summary says which one ran
    summary = err.splitlines()[-1]
    assert (f"2000 of 2000 steps of h = 0.001, CHART end, METRIC euclidean, FACTORIZATION "
            f"{factorization}") in summary
    # (rank 14 = m and k = n - 14 = 1 away from the singular passages)
    sparse = re.search(r"the sparse step: partitions [1-9]\d*, rows 14, independent coordinates 1\)$",
                       summary)
    assert bool(sparse) == (factorization == "sparse"), summary


def test_main_c_default_factorization_is_simulates_auto(sim):
    # without FACTORIZATION (and with "auto") main.c takes, for each chart, the step simulate's
    # default takes: bit for bit the run with that factorization named, and simulate's trajectory
    model, kernels, run = sim
    taken = {}
    for chart in ("end", "symmetric"):
        kw = dict(dt=H_STEP, t_end=T_END, chart=chart)
        res = symgen.simulate(kernels, **kw)
        assert res.meta["metric"] == "euclidean"        # a chart named alone: the paper's metric
        taken[chart] = res.meta["factorization"]
        status, named, named_err = run(H_STEP, T_END, chart, taken[chart])
        assert status == 0, named_err
        for args in ([H_STEP, T_END, chart], [H_STEP, T_END, chart, "auto"]):
            status, data, err = run(*args)
            assert status == 0, err
            np.testing.assert_array_equal(data, named)
            assert err == named_err                     # the same summary: the same step
        _agrees(named, res, model.n, _spread(kernels, res, factorization=taken[chart], **kw))
    assert taken["end"] == "sparse"                 # n = 15: auto is the sparse step here


def test_main_c_default_step_is_simulates_default(sim):
    """Without CHART main.c takes simulate's default step, the symmetric chart with the mass
    metric (settings.chart_metric), for a fixed DT and DT auto alike: its summary line says so,
    and its fixed-step rows are simulate's default run within the run's round-off spread."""
    model, kernels, run = sim
    kw = dict(dt=H_STEP, t_end=T_END)
    res = symgen.simulate(kernels, stepper="compiled", **kw)
    assert (res.meta["chart"], res.meta["metric"], res.meta["preset"]) == ("symmetric", "mass",
                                                                           None)
    status, data, err = run(H_STEP, T_END)
    assert status == 0, err
    assert (f"2000 of 2000 steps of h = 0.001, CHART symmetric, METRIC mass, FACTORIZATION "
            f"{res.meta['factorization']}") in err.splitlines()[-1], err
    _agrees(data, res, model.n, _spread(kernels, res, **kw))
    status, data, err = run("auto", 0.2)
    assert status == 0, err
    assert re.search(r"steps to t = 0\.2 \(DT auto, .*\), CHART symmetric, METRIC mass, "
                     r"FACTORIZATION (qr|sparse)$", err.splitlines()[-1]), err


def test_main_c_auto_follows_the_rule_at_generation(monkeypatch):
    # the default is compiled_factorization's answer when main.c is generated, not a fixed one
    from symgen import settings
    from symgen.settings import compiled_factorization

    d = symgen.derive(symgen.load_model("double_four_bar"))
    k = symgen.build(d.model)
    code = {"qr": "SG_DENSE_QR", "sparse": "SG_SPARSE"}

    def table():
        text = symgen.generate(d).files["main.c"]
        return (f"[SG_CHART_END] = {code[compiled_factorization(k, 'nullspace', 'auto', 'end')]}"
                f", [SG_CHART_SYMMETRIC] = "
                f"{code[compiled_factorization(k, 'nullspace', 'auto', 'symmetric')]}") in text
    assert compiled_factorization(k, "nullspace", "auto", "end") == "sparse" and table()
    monkeypatch.setattr(settings, "SPARSE_FROM_N", k.n + 1)
    assert compiled_factorization(k, "nullspace", "auto", "end") == "qr" and table()


@pytest.mark.parametrize("args,problem", [
    (["1e-3", "1", "end", "lu"], 'bad FACTORIZATION "lu"'),
    (["1e-3", "1", "middle"], 'bad CHART "middle"'),
    (["0"], 'bad DT "0"'),
    (["1e-3", "1s"], 'bad T_END "1s"'),
    (["1e-3", "1", "end", "qr", "x"], 'RTOL is for DT auto, not "x"'),
    (["auto", "1", "end", "qr", "0"], 'bad RTOL "0"'),
    (["auto", "1", "end", "qr", "1e-6", "-1"], 'bad ATOL "-1"'),
    (["auto", "1", "end", "qr", "1e-6", "1e-8", "x"], 'unexpected argument "x"'),
])
def test_main_c_usage_errors_name_the_argument(sim, args, problem):
    _, _, run = sim
    status, data, err = run(*args)
    assert status == 2 and data is None
    assert problem in err and "[DT [T_END [CHART [FACTORIZATION [RTOL [ATOL]]]]]]" in err, err
    assert "FACTORIZATION auto, qr or sparse" in err


@pytest.mark.parametrize("args,problem", [
    (["1e-300", "1e300"], "T_END / DT = inf steps, more than this program counts"),
    (["1e-10", "1e10"], "T_END / DT = 1e+20 steps, more than this program counts"),
    (["1", "0.4"], "T_END 0.4 is less than half of DT 1: no step to take; take a DT of at most"),
])
def test_main_c_refuses_a_step_count_it_cannot_count(sim, args, problem):
    """T_END / DT beyond a long (it overflowed to -9223372036854775808 steps, exit 0 after one
    row) or rounding to no step: exit status 2 with one line on stderr, no CSV (issue 38)."""
    _, _, run = sim
    status, data, err = run(*args)
    assert status == 2 and data is None
    assert problem in err and len(err.splitlines()) == 1, err


def _lose_output(exe, args, stdout, limit=None):
    """Runs main.c with stdout on `stdout` (None: closed); `limit`: the largest file it may write
    (RLIMIT_FSIZE, SIGXFSZ ignored: a write past it fails with EFBIG, as on a full disk)."""
    def before():
        if stdout is None:
            os.close(1)
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([str(exe), *map(str, args)], stdout=stdout or subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, preexec_fn=before, timeout=300)


def test_main_c_output_that_cannot_be_written_is_exit_4(sim, tmp_path):
    """A CSV that is lost is not a completed run (issue 38: exit 0 and "2000 of 2000 steps" with
    no row written): stdout on a full device, stdout closed, and a file that reaches its size
    limit mid-run each end with exit status 4 and one line on stderr naming the problem, no
    summary; the rows that reached the file are a whole prefix of the run's."""
    _, _, run = sim
    status, data, err = run(H_STEP, 0.2)
    assert status == 0 and len(data) == 201
    cases = [(None, None, "Bad file descriptor")]
    if os.path.exists("/dev/full"):
        cases.append(("/dev/full", None, "No space left on device"))
    cases.append((tmp_path / "rows.csv", 20000, "File too large"))
    for path, limit, why in cases:
        if path is None:
            out = _lose_output(run.exe, (H_STEP, 0.2), None)
        else:
            with open(path, "w") as fh:
                out = _lose_output(run.exe, (H_STEP, 0.2), fh, limit)
        assert out.returncode == 4, out.stderr
        assert out.stderr.splitlines() == [
            f"{run.exe}: the CSV could not be written to stdout ({why}): its rows are incomplete;"
            " make room on the disk or check where stdout goes, and run again"], out.stderr
    lines = (tmp_path / "rows.csv").read_text().splitlines()
    assert 2 < len(lines) < 201 and (tmp_path / "rows.csv").stat().st_size <= 20000
    rows = np.array([[float(v) for v in ln.split(",")] for ln in lines[1:-1]])   # (the last
    np.testing.assert_array_equal(rows, data[:len(rows)])                         # is cut)


def test_main_c_sparse_symmetric_as_simulate(sim):
    # the sparse step with the symmetric chart: main.c's run is simulate's
    model, kernels, run = sim
    status, data, err = run(H_STEP, 0.05, "symmetric", "sparse")
    res = symgen.simulate(kernels, dt=H_STEP, t_end=0.05, chart="symmetric",
                          factorization="sparse", stepper="compiled")
    assert status == 0, err
    assert "CHART symmetric, METRIC euclidean, FACTORIZATION sparse" in err, err
    _agrees(data, res, model.n, _spread(kernels, res, dt=H_STEP, t_end=0.05, chart="symmetric",
                                        factorization="sparse"))


@pytest.mark.parametrize("chart", ["end", "symmetric"])
def test_main_c_dt_auto_is_simulates_auto(sim, chart):
    """./sim auto T_END CHART FACTORIZATION RTOL ATOL: one row per accepted step of the C
    runtime's error control — simulate(dt="auto")'s steps on the compiled stepper (the same
    control, the same first step from ω_max at the start), within the run's round-off spread
    (measured: the start velocity perturbed by 1e-15)."""
    model, kernels, run = sim
    kw = dict(dt="auto", t_end=3.0, chart=chart, factorization="qr", rtol=1e-5, atol=1e-5)
    status, data, err = run("auto", 3.0, chart, "qr", 1e-5, 1e-5)
    assert status == 0, err
    res = symgen.simulate(kernels, stepper="compiled", **kw)
    assert res.status == "completed" and data.shape == (len(res.t), 1 + 2 * model.n)
    assert data[-1, 0] == 3.0 and np.all(np.diff(data[:, 0]) > 0)
    # the step times move with the start too (the error norm divides small differences of ẍ)
    xd0 = np.asarray(model.xd0, float)
    runs = [symgen.simulate(kernels, xd0=xd0 * (1 + e), stepper="compiled", **kw)
            for e in (1e-15, -1e-15, 2e-15)]
    assert all(len(r.t) == len(res.t) for r in runs)
    spread = [max(floor, *(f(r) for r in runs)) for floor, f in (
        (1e-12, lambda r: np.abs(r.t - res.t).max()), (1e-12, lambda r: _rel(r.x, res.x)),
        (1e-12, lambda r: _rel(r.xd, res.xd)))]
    assert np.abs(data[:, 0] - res.t).max() <= SPREAD_FACTOR * spread[0]
    assert _rel(data[:, 1:1 + model.n], res.x) <= SPREAD_FACTOR * spread[1]
    assert _rel(data[:, 1 + model.n:], res.xd) <= SPREAD_FACTOR * spread[2]
    assert re.search(rf"{len(res.t) - 1} steps to t = 3 \(DT auto, RTOL 1e-05, ATOL 1e-05: "
                     rf"h \S+ \.\.\. \S+ s, \d+ \+ \d+ tries rejected", err), err


def test_main_c_dt_auto_completes_the_double_four_bar_over_100_s(sim):
    """The symmetric chart over 100 s (about 50 singular passages) with the default RTOL 1e-6,
    ATOL 1e-8: completes, every row on q = 0 to round-off, and B0.x at the row nearest 10 s
    within 1e-2 m of the exact one-dof motion (measured 3.2e-3: the global error of this
    tolerance, docs/variable-step.md; the round-off spread there is ~1e-9)."""
    import oracles

    model, kernels, run = sim
    status, data, err = run("auto", 100.0, "symmetric")
    assert status == 0, err
    assert data[-1, 0] == 100.0 and np.all(np.diff(data[:, 0]) > 0)
    n = model.n
    zeros = np.zeros(n)
    q = [np.abs(kernels.constraints(r[0], r[1:1 + n], r[1 + n:], zeros)[0]).max() for r in data]
    assert max(q) < 1e-12
    i = int(np.argmin(np.abs(data[:, 0] - 10.0)))
    y = kernels.outputs(data[i, 0], data[i, 1:1 + n], data[i, 1 + n:])
    B, _ = oracles.four_bar_reference(2, np.array([data[i, 0]]))
    assert abs(y[list(kernels.output_names).index("B0.x")] - B[0][0]) < 1e-2


def test_the_header_exports_the_models_start():
    """<model>_x0 and <model>_xd0 (issue 23 §2): the model's start, as simulate takes it (an
    entry at round-off of the vector's largest printed as 0, codegen.render._start_literal)."""
    from symgen.codegen.render import START_ZERO

    model = symgen.load_model("double_four_bar")
    k = symgen.build(model)
    for name, want in (("x0", model.x0), ("xd0", model.xd0)):
        got = np.array(list(getattr(k.lib, f"{model.name}_{name}")))
        want = np.asarray(want, dtype=float)
        np.testing.assert_allclose(got, want, rtol=0, atol=START_ZERO * np.abs(want).max())
        assert np.array_equal(got[got != 0], want[got != 0])
