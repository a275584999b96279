"""The generated simulation program (main.c) with the C runtime runs clean under AddressSanitizer
and UndefinedBehaviorSanitizer: the double four-bar through its singular passages (both charts,
the sparse and the dense step), Bricard's linkage (redundant constraints, rank-deficient H) and
index-3 runs (fixed steps; dt = "auto" with HHT from a small driver). Each program is compiled
once from every .c file of its folder (generated/<example>/ as committed, with every .c file of
the runtime they share, generated/runtime/, so a runtime split into more files is picked up) and
run briefly; any sanitizer report makes the program exit non-zero (-fno-sanitize-recover)."""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgen

#: ASan/UBSan builds of the runtime and generated C, compiled per test
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
CC = shutil.which("cc") or shutil.which("gcc")
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
            "-g", "-O1", "-std=c99"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
PROBE = "#include <stdlib.h>\nint main(void) { char *p = malloc(4); p[0] = 0; free(p); return 0; }\n"


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory):
    """build(folder, runtime=None) → the path of main.c and the folder's other .c files (and those
    of ``runtime``, the shared runtime's folder, on the include path) compiled with the
    sanitizers; skips the module when there is no C compiler or it cannot build and run a program
    with -fsanitize=address,undefined (e.g. no libasan, or ASan cannot run in this sandbox)."""
    if CC is None:
        pytest.skip("no C compiler (cc or gcc) on PATH")
    probe = tmp_path_factory.mktemp("probe")
    (probe / "p.c").write_text(PROBE)
    cmd = subprocess.run([CC, *SANITIZE, "p.c", "-o", "p"], cwd=probe, capture_output=True,
                         text=True)
    if cmd.returncode != 0:
        pytest.skip(f"{CC} cannot build with -fsanitize=address,undefined: "
                    + (cmd.stderr.strip().splitlines() or ["?"])[-1])
    run = subprocess.run([str(probe / "p")], capture_output=True, text=True, env=ENV)
    if run.returncode != 0:
        pytest.skip("a program built with -fsanitize=address,undefined does not run here: "
                    + (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[0])

    def build(folder: Path, runtime: Path | None = None) -> Path:
        sources = sorted(p.name for p in folder.glob("*.c"))
        assert "main.c" in sources, sources
        shared = [] if runtime is None else [f"-I{runtime}",
                                             *sorted(str(p) for p in runtime.glob("*.c"))]
        out = tmp_path_factory.mktemp("asan") / "sim"
        cmd = subprocess.run([CC, *SANITIZE, "-Wall", "-Wextra", "-pedantic", *sources, *shared,
                              "-lm", "-o", str(out)], cwd=folder, capture_output=True, text=True)
        assert cmd.returncode == 0 and cmd.stderr == "", cmd.stderr
        return out
    return build


def _run_clean(exe: Path, n: int, *args) -> np.ndarray:
    """Runs exe with args; asserts exit 0 and no sanitizer report; the CSV rows as an array."""
    run = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, env=ENV,
                         timeout=300)
    report = [ln for ln in run.stderr.splitlines()
              if "runtime error" in ln or "Sanitizer" in ln or "ERROR" in ln]
    assert run.returncode == 0 and not report, run.stderr[-4000:]
    rows = np.array([[float(v) for v in ln.split(",")] for ln in run.stdout.splitlines()[1:]])
    n_r = sum(c.startswith("reaction:") for c in run.stdout.splitlines()[0].split(","))
    assert rows.shape[1] == 1 + 2 * n + n_r and np.isfinite(rows).all()
    return rows


def test_double_four_bar_through_singular_passages(sanitized):
    # h = 1e-2 over 1.6 s: the passages at t ≈ 0.69 s and 1.47 s (θ through 0 and π)
    exe = sanitized(GENERATED / "double_four_bar", GENERATED / "runtime")
    n = 15
    for args in ([1e-2, 1.6], [1e-2, 1.6, "end", "qr"], [1e-2, 1.6, "symmetric", "sparse"],
                 [1e-2, 1.6, "symmetric", "qr"]):
        rows = _run_clean(exe, n, *args)
        assert len(rows) == 161, args
        theta = rows[:, 1 + 2]                         # the crank's angle (coordinate 2)
        assert np.any(np.diff(np.sign(np.sin(theta))) != 0), "no passage through horizontal"


def test_step_counts_and_lost_output_of_the_stiff_pendulum(sanitized):
    """Issue 38's reproductions on the committed stiff pendulum: a step count beyond a long (UBSan
    flagged its conversion; the run printed "-9223372036854775808 of ... steps", exit 0) is one
    line and exit 2 before any run; a CSV on a full device or a closed stdout is one line and
    exit 4 (it was exit 0, "100 of 100 steps"); no sanitizer report in any."""
    exe = sanitized(GENERATED / "stiff_pendulum", GENERATED / "runtime")
    for args in (["1e-300", "1e300"], ["1e-10", "1e10"]):
        run = subprocess.run([str(exe), *args], capture_output=True, text=True, env=ENV,
                             timeout=60)
        assert run.returncode == 2 and run.stdout == "", run.stderr
        assert len(run.stderr.splitlines()) == 1 and "more than this program counts" in run.stderr
    outs = [subprocess.DEVNULL]                    # stdout closed in the child (below)
    if os.path.exists("/dev/full"):
        outs.append(open("/dev/full", "w"))
    for out in outs:
        run = subprocess.run([str(exe), "0.1", "10"], stdout=out, stderr=subprocess.PIPE,
                             text=True, env=ENV, timeout=60,
                             preexec_fn=(lambda: os.close(1)) if out is subprocess.DEVNULL
                             else None)
        if out is not subprocess.DEVNULL:
            out.close()
        assert run.returncode == 4, run.stderr
        assert len(run.stderr.splitlines()) == 1, run.stderr
        assert "the CSV could not be written to stdout" in run.stderr, run.stderr


def test_bricard_redundant_constraints(sanitized):
    exe = sanitized(GENERATED / "bricard", GENERATED / "runtime")
    for args in ([1e-2, 1.0], [1e-2, 1.0, "symmetric"]):
        assert len(_run_clean(exe, 24, *args)) == 101


def test_index3(sanitized, tmp_path):
    # no shipped example recommends the index-3 method: the double pendulum's main.c generated
    # with method index3 (trapezoidal: index-3 Fox-Goodwin is unstable)
    model = symgen.load_model("double_pendulum")
    model = model.replace(settings={**model.settings, "method": "index3",
                                    "scheme": "trapezoidal"})
    symgen.generate(model, tmp_path)
    assert "o = sg_options_default(SG_INDEX3);" in (tmp_path / "main.c").read_text()
    rows = _run_clean(sanitized(tmp_path), model.n, 1e-3, 0.2)
    assert len(rows) == 201


#: dt = "auto" on the index-3 HHT step (sg_control.c.inc: its own estimate, the projection along
#: M^-1 H^T, the start's lag rescaled), driven by a small program in place of the generated main.c
#: (whose index-3 form takes fixed steps only)
INDEX3_AUTO = r"""#include <stdio.h>
#include <string.h>
#include "double_pendulum.h"
int main(void)
{
    double x[6], xd[6], xdd[6], lam[5], t = 0.0, om;
    const double *p = double_pendulum_param_defaults, *nx, *nxd, *nxdd, *nlam, *res;
    sg_options o = sg_options_default(SG_INDEX3);
    sg_control c = sg_control_default();
    sg_step_info info;
    sg_failure fail;
    sg_stepper *s;
    int j, st = SG_OK;
    o.gamma = 0.6; o.beta = 0.3025; o.alpha = -0.1; o.h = 1e-3; o.estimate = 1;
    memcpy(x, double_pendulum_x0, sizeof x);
    memcpy(xd, double_pendulum_xd0, sizeof xd);
    s = sg_stepper_new(&double_pendulum_model, &o);
    if (!s || sg_initial_state(s, p, t, x, xd, xdd, lam) != 0) return 2;
    sg_start(s, p, t, x, xd, xdd, lam);
    if (sg_control_start(s, &c, 0.0, 0.5, sg_omega_at(s, p, t, x, xd, xdd, lam)) != 0) return 2;
    printf("t,x\n");
    while (t < 0.5 && st == SG_OK) {
        printf("%.17g", t);
        for (j = 0; j < 6; ++j) printf(",%.17g", x[j]);
        for (j = 0; j < 6; ++j) printf(",%.17g", xd[j]);
        printf("\n");
        st = sg_step_auto(s, p, &t, x, xd, xdd, lam, &info, &fail);
        sg_state(s, &nx, &nxd, &nxdd, &nlam, &res, &om);
        memcpy(x, nx, sizeof x); memcpy(xd, nxd, sizeof xd); memcpy(xdd, nxdd, sizeof xdd);
        memcpy(lam, nlam, 4 * sizeof(double));
    }
    sg_stepper_free(s);
    return st == SG_OK ? 0 : 3;
}
"""


def test_index3_auto(sanitized, tmp_path):
    model = symgen.load_model("double_pendulum")
    model = model.replace(settings={**model.settings, "method": "index3", "scheme": "hht:-0.1"})
    symgen.generate(model, tmp_path)
    (tmp_path / "main.c").write_text(INDEX3_AUTO)
    rows = _run_clean(sanitized(tmp_path), model.n)
    assert len(rows) > 20 and np.all(np.diff(rows[:, 0]) > 0)


def test_mass_metric(sanitized, tmp_path):
    # the slider-crank 3-D's main.c generated with its recommended metric "mass" (SG_METRIC_MASS:
    # the chart system with N_s^T M for both charts, the sparse and the dense step, DT auto); its
    # last state is the compiled stepper's with metric="mass" (the Euclidean one's is 3e-4 away)
    model = symgen.load_model("slider_crank_3d")
    model = model.replace(settings={**model.settings, "metric": "mass"})
    symgen.generate(model, tmp_path)
    assert "metric = SG_METRIC_MASS;" in (tmp_path / "main.c").read_text()
    exe = sanitized(tmp_path)
    k = symgen.build(model)
    for chart, fac in (("end", "qr"), ("symmetric", "sparse"), ("end", "sparse"),
                       ("symmetric", "qr")):
        rows = _run_clean(exe, model.n, 1e-3, 0.1, chart, fac)
        assert len(rows) == 101
        r = symgen.simulate(k, dt=1e-3, t_end=0.1, chart=chart, factorization=fac,
                            metric="mass", stepper="compiled")
        assert np.abs(rows[-1, 1:1 + model.n] - r.x[-1]).max() < 1e-9
    assert len(_run_clean(exe, model.n, "auto", 0.1, "symmetric")) > 10


#: t_eval rows in C (sg_interp.c.inc: sg_dense_output with sg_run_chunk and sg_run_auto), driven
#: by a small program over any model (MODEL replaced by its name): argv T_END DT|auto
#: [FACTORIZATION [CHART]]; the rows as CSV (t, x, ẋ), COUNT of them from 0 to T_END
DENSE_DRIVER = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "MODEL.h"
#define COUNT 41
#define ROWS 64
int main(int argc, char **argv)
{
    const sg_model *mdl = &MODEL_model;
    int n = mdl->n, m = mdl->m, mm = m > 0 ? m : 1, no = mdl->n_out > 0 ? mdl->n_out : 1, st;
    int i, j, fixed = argc > 2 && strcmp(argv[2], "auto") != 0;
    double t_end = argc > 1 ? atof(argv[1]) : 1.0, h = fixed ? atof(argv[2]) : 1e-3, t = 0.0;
    double te[COUNT], *X[3], *LAM, *T, *PE, *VE, *AE, *OM, *HM, *EK, *EP, *OUT, *HS, *ERR;
    double *DX[3], *DLAM, *DT, *DPE, *DVE, *DAE, *DEK, *DEP, *DOUT;
    long long IT[ROWS], STEP[COUNT], FF[ROWS];
    long long FL[ROWS];
    long k = 0, done = 0, n_steps = fixed ? (long)(t_end / h + 0.5) : 0;
    sg_options o = sg_options_default(SG_NULLSPACE);
    sg_control c = sg_control_default();
    sg_dense d;
    sg_failure fail;
    sg_stepper *s;
    double *blk = calloc((size_t)ROWS * (3 * n + mm + no + 10) + (size_t)COUNT
                         * (3 * n + mm + no + 6), sizeof(double)), *b = blk;
    if (!blk) return 2;
#define TAKE(ptr, cnt) do { (ptr) = b; b += (cnt); } while (0)
    for (j = 0; j < 3; ++j) TAKE(X[j], ROWS * n);
    TAKE(LAM, ROWS * mm); TAKE(T, ROWS); TAKE(PE, ROWS); TAKE(VE, ROWS); TAKE(AE, ROWS);
    TAKE(OM, ROWS); TAKE(HM, ROWS); TAKE(EK, ROWS); TAKE(EP, ROWS); TAKE(OUT, ROWS * no);
    TAKE(HS, ROWS); TAKE(ERR, ROWS);
    for (j = 0; j < 3; ++j) TAKE(DX[j], COUNT * n);
    TAKE(DLAM, COUNT * mm); TAKE(DT, COUNT); TAKE(DPE, COUNT); TAKE(DVE, COUNT);
    TAKE(DAE, COUNT); TAKE(DEK, COUNT); TAKE(DEP, COUNT); TAKE(DOUT, COUNT * no);
#undef TAKE
    o.h = h;
    o.estimate = 1;
    o.factorization = argc > 3 && strcmp(argv[3], "sparse") == 0 ? SG_SPARSE : SG_DENSE_QR;
    o.chart = argc > 4 && strcmp(argv[4], "symmetric") == 0 ? SG_CHART_SYMMETRIC : SG_CHART_END;
    s = sg_stepper_new(mdl, &o);
    if (!s) return 2;
    memcpy(X[0], MODEL_x0, sizeof(double) * n);
    memcpy(X[1], MODEL_xd0, sizeof(double) * n);
    if (sg_initial_state(s, mdl->param_defaults, 0.0, X[0], X[1], X[2], LAM) != 0) return 2;
    sg_start(s, mdl->param_defaults, 0.0, X[0], X[1], X[2], LAM);
    T[0] = 0.0;
    for (i = 0; i < COUNT; ++i) te[i] = t_end * i / (COUNT - 1);
    memset(&d, 0, sizeof d);
    d.t_eval = te; d.count = COUNT; d.next = 1; d.ld_out = no; d.t_end = fixed ? n_steps * h : t_end;
    d.T = DT; d.X = DX[0]; d.XD = DX[1]; d.XDD = DX[2]; d.LAM = DLAM; d.PE = DPE; d.VE = DVE;
    d.AE = DAE; d.EK = DEK; d.EP = DEP; d.OUT = DOUT; d.STEP = STEP;
    memcpy(DX[0], X[0], sizeof(double) * n);          /* row 0: the start */
    memcpy(DX[1], X[1], sizeof(double) * n);
    if (sg_dense_output(s, &d) != 0) return 2;
    if (!fixed && sg_control_start(s, &c, 0.0, t_end, sg_omega_at(s, mdl->param_defaults, 0.0,
                                                                  X[0], X[1], X[2], LAM)))
        return 2;
    for (st = SG_OK; st == SG_OK && (fixed ? done < n_steps : t < t_end);) {
        long stop = done + ROWS - 1 < n_steps ? done + ROWS - 1 : n_steps;
        if (fixed)
            st = sg_run_chunk(s, mdl->param_defaults, 0.0, done, stop, done, T, X[0], X[1], X[2],
                              LAM, PE, VE, AE, OM, HM, IT, EK, EP, OUT, FF, &k, &fail);
        else
            st = sg_run_auto(s, mdl->param_defaults, &t, ROWS, T, X[0], X[1], X[2], LAM, PE,
                             VE, AE, OM, HM, IT, EK, EP, OUT, HS, ERR, FL, &k, &fail);
        k = fixed ? k - done : k;
        done += k;
        for (j = 0; j < 3; ++j) memcpy(X[j], X[j] + (size_t)k * n, sizeof(double) * n);
        memcpy(LAM, LAM + (size_t)k * mm, sizeof(double) * mm);
        T[0] = T[k];
    }
    sg_dense_output(s, NULL);
    printf("t,x\n");
    for (i = 0; i < d.next; ++i) {
        printf("%.17g", DT[i]);
        for (j = 0; j < 2 * n; ++j) printf(",%.17g", DX[j / n][(size_t)i * n + j % n]);
        printf("\n");
    }
    sg_stepper_free(s);
    free(blk);
    return st == SG_OK && d.next == COUNT ? 0 : 3;
}
"""


@pytest.mark.parametrize("name, args", [
    ("double_four_bar", [(1.6, 1e-2, "sparse"), (1.6, "auto", "qr", "symmetric")]),
    ("bricard", [(1.0, 1e-2, "qr"), (0.5, "auto", "sparse")])])
def test_dense_output(sanitized, tmp_path, name, args):
    """t_eval rows written in C through singular passages (the double four-bar) and with
    redundant constraints (Bricard), fixed steps and dt = "auto", both factorizations: the
    rows are those of symgen.simulate's compiled stepper (dt = "auto": within its rtol, the
    driver's start being projected in C, the steps chosen on round-off)."""
    for f in (GENERATED / name).iterdir():
        if f.suffix in (".c", ".h") and f.name != "main.c":
            shutil.copy(f, tmp_path / f.name)
    (tmp_path / "main.c").write_text(DENSE_DRIVER.replace("MODEL", name))
    exe = sanitized(tmp_path, GENERATED / "runtime")
    k = symgen.build(symgen.load_model(name))
    for a in args:
        rows = _run_clean(exe, k.n, *a)
        assert len(rows) == 41
        dt = a[1] if a[1] == "auto" else float(a[1])
        kw = dict(rtol=1e-6, atol=1e-8) if dt == "auto" else {}
        r = symgen.simulate(k, dt=dt, t_end=a[0], t_eval=rows[:, 0], factorization=a[2],
                            chart=a[3] if len(a) > 3 else "end", metric="euclidean",
                            scheme="trapezoidal", stepper="compiled", **kw)
        assert np.abs(rows[:, 1:1 + k.n] - r.x).max() < (1e-6 if dt == "auto" else 1e-9), a


def test_dense_output_without_constraints(sanitized, tmp_path):
    """The rows of a model without constraints (the pendulum in θ alone: ẍ from M ẍ = f)."""
    from symgen.reproduce.references import minimal_pendulum

    model = minimal_pendulum()
    symgen.generate(model, tmp_path)
    (tmp_path / "main.c").write_text(DENSE_DRIVER.replace("MODEL", model.name))
    exe = sanitized(tmp_path)
    for a in ((2.0, 0.05), (2.0, "auto")):
        assert len(_run_clean(exe, model.n, *a)) == 41


#: the model's events located in C (sg_events.c.inc: sg_set_events with sg_run_chunk and
#: sg_run_auto), driven by a small program over any model (MODEL replaced by its name): argv
#: T_END DT|auto; the events as CSV rows (t, x, ẋ) in the order located, until T_END or a
#: terminal event; buffers of CAP events (smaller than the events of a chunk: the runs stop early
#: and go on after sg_events_take)
EVENT_DRIVER = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "MODEL.h"
#define ROWS 64
#define CAP 4
int main(int argc, char **argv)
{
    const sg_model *mdl = &MODEL_model;
    int n = mdl->n, m = mdl->m, mm = m > 0 ? m : 1, no = mdl->n_out > 0 ? mdl->n_out : 1, st;
    int i, j, fixed = argc > 2 && strcmp(argv[2], "auto") != 0, EI[CAP];
    double t_end = argc > 1 ? atof(argv[1]) : 1.0, h = fixed ? atof(argv[2]) : 1e-3, t = 0.0;
    double *X[3], *LAM, *T, *PE, *VE, *AE, *OM, *HM, *EK, *EP, *OUT, *HS, *ERR, *ET, *EX, *EXD;
    long long IT[ROWS], FF[ROWS], FL[ROWS];
    long k = 0, c, done = 0, n_steps = fixed ? (long)(t_end / h + 0.5) : 0;
    sg_options o = sg_options_default(SG_NULLSPACE);
    sg_control ctl = sg_control_default();
    sg_failure fail;
    sg_stepper *s;
    double *blk = calloc((size_t)ROWS * (3 * n + mm + no + 10) + (size_t)CAP * (2 * n + 1),
                         sizeof(double)), *b = blk;
    if (!blk) return 2;
#define TAKE(ptr, cnt) do { (ptr) = b; b += (cnt); } while (0)
    for (j = 0; j < 3; ++j) TAKE(X[j], ROWS * n);
    TAKE(LAM, ROWS * mm); TAKE(T, ROWS); TAKE(PE, ROWS); TAKE(VE, ROWS); TAKE(AE, ROWS);
    TAKE(OM, ROWS); TAKE(HM, ROWS); TAKE(EK, ROWS); TAKE(EP, ROWS); TAKE(OUT, ROWS * no);
    TAKE(HS, ROWS); TAKE(ERR, ROWS); TAKE(ET, CAP); TAKE(EX, CAP * n); TAKE(EXD, CAP * n);
#undef TAKE
    o.h = h;
    s = sg_stepper_new(mdl, &o);
    if (!s) return 2;
    memcpy(X[0], MODEL_x0, sizeof(double) * n);
    memcpy(X[1], MODEL_xd0, sizeof(double) * n);
    if (sg_initial_state(s, mdl->param_defaults, 0.0, X[0], X[1], X[2], LAM) != 0) return 2;
    sg_start(s, mdl->param_defaults, 0.0, X[0], X[1], X[2], LAM);
    if (sg_set_events(s, mdl->param_defaults, 1, 0.0, X[0], X[1], CAP, EI, ET, EX, EXD)) return 2;
    T[0] = 0.0;
    if (!fixed && sg_control_start(s, &ctl, 0.0, t_end, sg_omega_at(s, mdl->param_defaults,
                                                                    0.0, X[0], X[1], X[2], LAM)))
        return 2;
    printf("t,x\n");
    for (st = SG_OK; st == SG_OK && (fixed ? done < n_steps : t < t_end);) {
        long stop = done + ROWS - 1 < n_steps ? done + ROWS - 1 : n_steps;
        if (fixed)
            st = sg_run_chunk(s, mdl->param_defaults, 0.0, done, stop, done, T, X[0], X[1], X[2],
                              LAM, PE, VE, AE, OM, HM, IT, EK, EP, OUT, FF, &k, &fail);
        else
            st = sg_run_auto(s, mdl->param_defaults, &t, ROWS, T, X[0], X[1], X[2], LAM, PE,
                             VE, AE, OM, HM, IT, EK, EP, OUT, HS, ERR, FL, &k, &fail);
        for (c = sg_events_take(s), i = 0; i < c; ++i) {
            printf("%.17g", ET[i]);
            for (j = 0; j < n; ++j) printf(",%.17g", EX[(size_t)i * n + j]);
            for (j = 0; j < n; ++j) printf(",%.17g", EXD[(size_t)i * n + j]);
            printf("\n");
        }
        k = fixed ? k - done : k;
        done += k;
        for (j = 0; j < 3; ++j) memcpy(X[j], X[j] + (size_t)k * n, sizeof(double) * n);
        memcpy(LAM, LAM + (size_t)k * mm, sizeof(double) * mm);
        T[0] = T[k];
    }
    sg_stepper_free(s);
    free(blk);
    return st == SG_EVENT ? 0 : 3;
}
"""


def test_events(sanitized, tmp_path):
    """Events located in C (a constrained model: the builder's bar pendulum with its event
    through the bottom, a fast sin(100 t) event either way, a terminal event at t = 1.7) with
    buffers of 4 events, so that the chunks stop early and go on: every event of
    symgen.simulate's compiled stepper, in the same order, the run ended by the terminal one."""
    import sympy as sp

    from test_events import bar_pendulum

    base = bar_pendulum()
    model = base.replace(name="ev_bar_san", events={
        **base.events, "tick": sp.sin(100 * symgen.t),
        "stop": {"expr": symgen.t - 1.7, "direction": 1, "terminal": True}})
    symgen.generate(model, tmp_path)
    (tmp_path / "main.c").write_text(EVENT_DRIVER.replace("MODEL", model.name))
    exe = sanitized(tmp_path)
    k = symgen.build(model)
    for dt in (1e-2, "auto"):
        rows = _run_clean(exe, k.n, 2.0, dt)
        r = symgen.simulate(k, dt=dt, t_end=2.0, stepper="compiled", rtol=1e-6, atol=1e-8,
                            chart="end", metric="euclidean", scheme="trapezoidal")   # (the
        assert r.status == "event" and r.t[-1] == 1.7                   # driver's sg_options)
        order = np.argsort(np.concatenate(r.t_events), kind="stable")
        t_ev = np.concatenate(r.t_events)[order]
        assert rows.shape[0] == t_ev.size > 50
        # (the driver's start is projected in C, simulate's in Python: round-off apart)
        tol = 1e-6 if dt == "auto" else 1e-12
        np.testing.assert_allclose(rows[:, 0], t_ev, rtol=0, atol=tol)
        np.testing.assert_allclose(rows[:, 1:1 + k.n], np.concatenate(r.x_events)[order],
                                   rtol=0, atol=tol)


#: impacts in C (sg_events.c.inc impact_apply: sg_set_impacts with sg_run_chunk and sg_run_auto),
#: EVENT_DRIVER's program with the impact records: CSV rows (t, loss, the active rows' impulses
#: summed) as they are taken; the run goes on after SG_IMPACT (sg_run_auto) to T_END
IMPACT_DRIVER = (EVENT_DRIVER
                 .replace("#define CAP 4", "#define CAP 64")
                 .replace("    sg_stepper *s;\n", "    sg_stepper *s;\n    double IR[CAP * 7];\n")
                 .replace("    T[0] = 0.0;\n", "    if (mdl->n_impacts != 1 || sg_set_impacts(s, IR)) return 2;\n    T[0] = 0.0;\n")
                 .replace("st == SG_OK && (fixed", "(st == SG_OK || st == SG_IMPACT) && (fixed")
                 .replace("        for (c = sg_events_take(s), i = 0; i < c; ++i) {\n",
                          "        sg_events_take(s);\n"
                          "        for (c = sg_impacts_take(s), i = 0; i < c; ++i)\n"
                          "            printf(\"%.17g,%.17g,%.17g\\n\", IR[7 * i], IR[7 * i + 1], "
                          "IR[7 * i + 4]);\n"
                          "        for (c = 0, i = 0; i < c; ++i) {\n")
                 .replace("return st == SG_EVENT ? 0 : 3;", "return st == SG_OK ? 0 : 3;"))


def test_impacts(sanitized, tmp_path):
    """Impacts applied in C (the builder's bar against its lower limit: 2 constraint rows, the
    KKT solve with H) run clean in both loops, fixed steps and dt="auto": the impacts' times,
    losses and impulses of symgen.simulate's compiled stepper (the driver's options)."""
    from test_impacts import bar_with_limit

    model = bar_with_limit(0.6, -0.4).replace(name="imp_bar_san")
    symgen.generate(model, tmp_path)
    (tmp_path / "main.c").write_text(IMPACT_DRIVER.replace("MODEL", model.name))
    exe = sanitized(tmp_path)
    k = symgen.build(model)
    for dt in (1e-2, "auto"):
        rows = _run_clean(exe, 1, 4.0, dt)
        r = symgen.simulate(k, dt=dt, t_end=4.0, stepper="compiled", rtol=1e-6, atol=1e-8,
                            chart="end", metric="euclidean", scheme="trapezoidal")
        assert r.status == "completed" and rows.shape[0] == r.t_impacts.size >= 3
        tol = 1e-6 if dt == "auto" else 1e-12
        np.testing.assert_allclose(rows[:, 0], r.t_impacts, rtol=0, atol=tol)
        np.testing.assert_allclose(rows[:, 1], r.impact_losses, rtol=1e-4 if tol > 1e-9 else 1e-9)
        np.testing.assert_allclose(rows[:, 2], [sum(p.values()) for p in r.impulses],
                                   rtol=1e-4 if tol > 1e-9 else 1e-9)


def test_minimal_coordinates_modified_newton(sanitized, tmp_path):
    # a model without constraints (m = 0) under main.c's default (the corrected step): the chart
    # system's LU kept across Newton iterations (chart_solve's reuse, lu_resolve); fixed and auto
    import sympy as sp
    from symgen import Model, coordinates

    (a, b), (ad, bd) = coordinates("a b")
    M = sp.Matrix([[2.5, 1.05 * sp.cos(a - b)], [1.05 * sp.cos(a - b), 0.735]])
    f = sp.Matrix([-1.05 * sp.sin(a - b) * bd**2 - 24.525 * sp.sin(a) - 0.2 * ad,
                   1.05 * sp.sin(a - b) * ad**2 - 10.30 * sp.sin(b)])
    model = Model("minimal_double_pendulum", [a, b], M, f, x0=[1.0, 0.5], xd0=[0.0, 0.0])
    symgen.generate(model, tmp_path)
    exe = sanitized(tmp_path)
    rows = _run_clean(exe, 2, 1e-2, 1.0)
    assert len(rows) == 101
    r = symgen.simulate(symgen.build(model), dt=1e-2, t_end=1.0, stepper="compiled")
    assert np.abs(rows[-1, 1:3] - r.x[-1]).max() < 1e-9
    assert len(_run_clean(exe, 2, "auto", 1.0)) > 10
