"""The compiled stepper (templates/runtime/symgen_runtime.c) against the Python reference steppers:
same trajectories to round-off, same Newton iterations, same statuses, steps and reasons, with both
charts of the null-space step (the paper's "end" and the "symmetric" one of issue 11); the chunked
loop keeps what it computed when interrupted."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgen
from symgen.loader import known_examples

#: the C runtime against the Python steppers: run again under another BLAS kernel
pytestmark = pytest.mark.roundoff

EXAMPLES = sorted(known_examples())
CHARTS = ("end", "symmetric")
#: model() options: the N four-bar at N = 10 (n = 63, the C dense and sparse steps have no
#: size-dependent path; N = 40 is built and run compiled in test_examples_n40.py)
OPTIONS = {"n_four_bar": {"N": 10}}
#: N four-bar: 0.4 s, before its first horizontal passage (t ≈ 0.72 s, where ω_max carries
#: round-off amplified by 1/σ_min), across the compiled stepper's first chunk (2048 // n steps)
STEPS = {"n_four_bar": 40}


@pytest.fixture(scope="module")
def kernels():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = symgen.build(symgen.load_model(name, **OPTIONS.get(name, {})))
        return cache[name]
    return get


def _rel(a, b) -> float:
    """max |a − b| over max |b| (the whole array: coordinates that stay at 0 do not blow it up)."""
    scale = float(np.max(np.abs(b), initial=0.0))
    return float(np.max(np.abs(a - b), initial=0.0)) / scale if scale > 0 else float(np.max(np.abs(a), initial=0.0))


def _pair(k, steps, **kw):
    """The same run on both steppers; Newton to 1e-10 unless ``tol`` is given: at the fixed step's
    default 1e-12 some steps end at Newton's round-off floor, where which test accepts them (the
    tolerance or the floor) is a knife edge between the two steppers' round-off."""
    dt = kw.pop("dt", k.model.settings["dt"])
    kw.setdefault("factorization", "qr")
    kw.setdefault("tol", 1e-10)
    try:
        c = symgen.simulate(k, dt=dt, t_end=steps * dt, stepper="compiled", **kw)
    except ValueError as exc:           # an example with impacts, while C does not apply them
        if k.model.events and "impacts" in str(exc):
            pytest.skip(f"{k.model.name}: {exc}")
        raise
    p = symgen.simulate(k, dt=dt, t_end=steps * dt, stepper="python", **kw)
    return c, p


def _residuals_hold(r, k):
    """The residual norms ``r`` records are ‖q‖, ‖q̇‖, ‖q̈‖ of its states (recomputed with the
    kernels), within the step's acceptance (null space: max(‖q‖, h‖q̇‖, h²‖q̈‖) ≤ constraint_tol;
    index 3: ‖q‖ ≤ constraint_tol, q̇ and q̈ drift), and its run_stats maxima are the maxima over
    its steps (folded a chunk at a time in C's path)."""
    got = np.column_stack([r.pos_err, r.vel_err, r.acc_err])
    want = np.array([[np.linalg.norm(np.asarray(a, float)) for a in k.constraints(*row)[::2]]
                     for row in zip(r.t, r.x, r.xd, r.xdd)])
    scale = [1.0 + np.abs(a).max() for a in (r.x, r.xd, r.xdd)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14 * max(scale))
    h = r.meta["h"]
    accepted = got[:, 0].max()
    if r.meta["method"] == "nullspace":
        accepted = max(accepted, h * got[:, 1].max(), h * h * got[:, 2].max())
    assert accepted <= r.meta["constraint_tol"]
    st = r.meta["run_stats"]
    for key, col in zip(("max_pos_err", "max_vel_err", "max_acc_err"), got.T):
        if len(r.t) == st["states"]:
            assert st[key] == col.max(), key
        else:                                    # every > 1: the rows are some of the steps
            assert st[key] >= col.max(), key


def _same_run(c, p, k):
    assert c.meta["stepper"] == "compiled" and p.meta["stepper"] == "python"
    assert (c.status, c.reason) == (p.status, p.reason)
    assert len(c.t) == len(p.t) and np.array_equal(c.t, p.t)
    np.testing.assert_array_equal(c.newton_iters, p.newton_iters)
    np.testing.assert_array_equal(c.flags, p.flags)         # (floor, sub-stepped: each row's)
    for key in ("floor_steps", "floor_times", "floor_t_last", "substepped_steps",
                "substepped_times", "chart", "steps_done", "every"):
        assert c.meta.get(key) == p.meta.get(key), key
    cs, ps = c.meta["run_stats"], p.meta["run_stats"]       # folded a chunk at a time in C's path
    # (a run with impacts: the Python loop also counts each impact's state before the jump and
    # its cut step's iterations in the totals, the C chunk does not; docs/events.md "Where impacts
    # run": rows, their iterations and flags are compared above)
    totals = () if (p.meta.get("impacts") or {}).get("t") else ("states", "newton_iters_total")
    for key in (*totals, "newton_iters_max", "steps_h_over_h_max", "t_h_max_min"):
        assert cs[key] == ps[key] or (cs[key] != cs[key] and ps[key] != ps[key]), key
    for key in ("omega_max", "h_max_min"):
        np.testing.assert_allclose(cs[key], ps[key], rtol=1e-6, equal_nan=True)
    # the residual maxima are round-off, not shared digits: each stepper's are its states' own
    _residuals_hold(c, k)
    _residuals_hold(p, k)
    assert c.meta.get("rank_H") == p.meta.get("rank_H")
    # ω_max: the C estimate (closed form for k ≤ 2, repeated squaring above) to 1e-6
    np.testing.assert_allclose(c.omega_max, p.omega_max, rtol=1e-6, atol=0, equal_nan=True)
    np.testing.assert_allclose(c.h_max, p.h_max, rtol=1e-6, atol=0, equal_nan=True)
    assert _rel(c.energy_kinetic, p.energy_kinetic) < 1e-9
    # the outputs of (t, x, ẋ) to the states' agreement; the joints' reactions are λ's and ẍ's
    # (H_Rᵀλ_R, what a body's own equations leave over: docs/reactions.md), so they share those
    # arrays' spread between the steppers (round-off amplified near rank-deficient passages and
    # by 1/(βh²) in index 3: the tests below)
    names = list(c.output_names)
    reac = [i for i, s in enumerate(names) if s.startswith("reaction:")]
    rest = [i for i in range(len(names)) if i not in reac]
    assert _rel(c.outputs[:, rest], p.outputs[:, rest]) < 1e-9
    if reac:
        spread = max(_rel(c.lam, p.lam), _rel(c.xdd, p.xdd))
        assert _rel(c.outputs[:, reac], p.outputs[:, reac]) < max(1e-9, 10 * spread)


@pytest.mark.parametrize("chart", CHARTS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_nullspace_compiled_agrees_with_python(name, chart, kernels):
    # Bricard: redundant constraints (rank 23 of 24 rows); the symmetric chart factors
    # H_s = ½(H(t) + H(t + h)) by a pivoted QR of H_sᵀ in C as in Python (chart.py)
    k = kernels(name)
    c, p = _pair(k, STEPS.get(name, 200), chart=chart)      # the example's recommended settings
    assert c.status == "completed", c.reason
    assert c.meta["chart"] == p.meta["chart"] == chart
    _same_run(c, p, k)
    assert _rel(c.x, p.x) < 1e-10 and _rel(c.xd, p.xd) < 1e-10
    if name in ("double_four_bar", "n_four_bar"):
        # near the rank-deficient passages λ ∝ 1/s: ẍ and λ carry round-off amplified by
        # ~1/s_min; the Python SVD and QR factorizations differ from each other as much
        s = symgen.simulate(k, dt=k.model.settings["dt"],
                            t_end=STEPS.get(name, 200) * k.model.settings["dt"],
                            stepper="python", factorization="svd", chart=chart)
        for what in ("xdd", "lam"):
            spread = _rel(getattr(s, what), getattr(p, what))
            assert _rel(getattr(c, what), getattr(p, what)) < max(1e-10, 10 * spread), what
    else:
        assert _rel(c.xdd, p.xdd) < 1e-10 and _rel(c.lam, p.lam) < 1e-10


@pytest.mark.parametrize("name", EXAMPLES)
def test_nullspace_sparse_symmetric_chart_compiled_agrees_with_python(name, kernels):
    # factorization="sparse" with the symmetric chart (symgen_sparse.c sg_splin_chart_basis
    # against sparse.py chart_basis: N_s from a second sparse LU, of H_s[R, D] on the step's
    # partition); the end chart's sparse step is compared in tests/test_sparse.py
    k = kernels(name)
    c, p = _pair(k, STEPS.get(name, 200), chart="symmetric", factorization="sparse")
    assert c.status == "completed", c.reason
    assert c.meta["factorization"] == p.meta["factorization"] == "sparse"
    assert c.meta["chart"] == p.meta["chart"] == "symmetric"
    _same_run(c, p, k)
    assert _rel(c.x, p.x) < 1e-10 and _rel(c.xd, p.xd) < 1e-10
    assert c.meta["sparse_step"]["rows"] == p.meta["sparse_step"]["rows"]


@pytest.mark.parametrize("name", [e for e in EXAMPLES if e != "n_four_bar"])
def test_index3_compiled_agrees_with_python(name, kernels):
    # the trapezoidal rule (index-3 Fox-Goodwin fails at once, see the failure tests)
    k = kernels(name)
    c, p = _pair(k, 200, method="index3", scheme="trapezoidal")
    assert c.status == "completed", c.reason
    _same_run(c, p, k)
    assert _rel(c.x, p.x) < 1e-10 and _rel(c.xd, p.xd) < 1e-10
    # index 3 takes ẍ and λ from positions over βh²: round-off in x is amplified by 1/(βh²)
    # (Python with lambdify kernels differs from Python with the C kernels by 3e-8 (double
    # four-bar) to 6e-6 (Andrews) here)
    assert _rel(c.xdd, p.xdd) < 1e-5 and _rel(c.lam, p.lam) < 1e-5


def test_index3_hht_agrees(kernels):
    k = kernels("double_pendulum")
    c, p = _pair(k, 200, method="index3", scheme="hht:-0.1")
    assert c.status == "completed", c.reason
    _same_run(c, p, k)
    assert _rel(c.x, p.x) < 1e-10 and _rel(c.xd, p.xd) < 1e-10


def test_bricard_redundant_index3_minimum_norm_multipliers(kernels):
    # redundant constraints: every index-3 Newton step is a minimum-norm least-squares solve;
    # the C rank rule (one-sided Jacobi SVD, eps·N·s_max) is numpy.linalg.lstsq's
    k = kernels("bricard")
    c, p = _pair(k, 100, method="index3", scheme="trapezoidal")
    _same_run(c, p, k)
    assert _rel(c.lam, p.lam) < 1e-6 and np.abs(c.lam).max() < 100


def _same_outcome(c: dict, p: dict) -> None:
    """Two meta["failure"] records agree: the same fields, kinds and counts; numbers to round-off
    (the steppers' sums differ in order)."""
    assert set(c) == set(p), (c, p)
    for key in c:
        if isinstance(c[key], dict):
            _same_outcome(c[key], p[key])
        elif isinstance(c[key], (str, int)) and not isinstance(c[key], float):
            assert c[key] == p[key], (key, c, p)
        else:
            np.testing.assert_allclose(c[key], p[key], rtol=1e-6, atol=1e-300, err_msg=key)


@pytest.mark.parametrize("method,kw", [
    # Newton needs 2 iterations; at h = 1 s past the paper's step's stability limit (0.78 s) no
    # sub-step rescue (the default corrected step has no limit: it is rescued)
    ("nullspace", dict(max_iter=1, dt=1.0, preset="paper")),
    ("nullspace", dict(max_iter=1, dt=1.0, chart="symmetric")),
    ("index3", dict(max_iter=1, scheme="trapezoidal")),
    ("index3", dict(scheme="fox-goodwin")),               # multipliers grow 9.9× a step
    ("nullspace", dict(divergence_bound=1.001, params={"T0": 9.0})),   # |x| = √(1 + θ²) passes
    ("nullspace", dict(divergence_bound=1.001, params={"T0": 9.0}, chart="symmetric")),
])
def test_failures_have_the_same_status_step_and_reason(method, kw, kernels):
    c, p = _pair(kernels("stiff_pendulum"), 100, method=method, **kw)
    assert c.status in ("failed", "diverged")
    assert (c.status, c.reason) == (p.status, p.reason)
    # the failed step as data (issue 37.2): the same kind, time, iteration and numbers (a state
    # past the divergence bound is no failed step: none)
    fc, fp = c.meta.get("failure"), p.meta.get("failure")
    assert (fc is None) == (fp is None) == ("divergence bound" in c.reason)
    if fc is not None:
        _same_outcome(fc, fp)
    assert len(c.t) == len(p.t)
    np.testing.assert_allclose(c.x, p.x, rtol=1e-10, atol=1e-12)


def test_default_stepper_and_fallbacks(kernels):
    k = kernels("stiff_pendulum")
    assert symgen.simulate(k, t_end=0.5).meta["stepper"] == "compiled"
    res = symgen.simulate(k, t_end=0.5, factorization="svd")
    assert res.meta["stepper"] == "python" and res.meta["factorization"] == "svd"
    lam = symgen.LambdifyKernels(k.model)
    assert symgen.simulate(lam, t_end=0.5).meta["stepper"] == "python"
    with pytest.raises(ValueError, match="LambdifyKernels"):
        symgen.simulate(lam, t_end=0.5, stepper="compiled")
    with pytest.raises(ValueError, match="unknown stepper"):
        symgen.simulate(k, t_end=0.5, stepper="fortran")


def test_ctrl_c_between_chunks_keeps_the_partial_result(tmp_path, kernels):
    kernels("double_pendulum")                     # compiled in this session's cache
    out = tmp_path / "partial.npz"
    script = textwrap.dedent(f"""
        import sys, symgen
        k = symgen.build(symgen.load_model("double_pendulum"))
        said = []
        def progress(j, n):
            if not said:
                said.append(j)
                print("running", flush=True)
        res = symgen.simulate(k, dt=1e-4, t_end=1e3, progress=progress, every=100)
        res.save({str(out)!r})
        print(res.status, res.meta["steps_done"], len(res.t), flush=True)
    """)
    # SIGINT as from a terminal even when this test runs in a background job that ignores it
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "running"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    status, done, rows = stdout.split()
    assert proc.returncode == 0, stderr
    done = int(done)
    assert status == "interrupted" and done > 0 and int(rows) == done // 100 + 1 + (done % 100 > 0)
    res = symgen.load_result(out)
    assert res.status == "interrupted" and "KeyboardInterrupt" in res.reason
    assert np.isfinite(res.x).all() and res.t[-1] == pytest.approx(done * 1e-4)
    assert res.meta["stepper"] == "compiled" and res.meta["run_stats"]["states"] >= done
    assert np.all(res.newton_iters[1:] > 0)


def test_cli_stepper_flag(tmp_path, kernels):
    kernels("stiff_pendulum")
    from symgen.cli import main

    for which in ("python", "compiled"):
        out = tmp_path / f"{which}.npz"
        assert main(["simulate", "stiff_pendulum", "--t-end", "1", "--quiet", "--stepper", which,
                     "--out", str(out)]) == 0
        assert symgen.load_result(out).meta["stepper"] == which


CC = __import__("shutil").which("cc") or __import__("shutil").which("gcc")


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("name,chart", [("stiff_pendulum", None), ("double_four_bar", None),
                                        ("bricard", None), ("double_four_bar", "symmetric")])
def test_standalone_main_c_agrees_with_simulate(name, chart, tmp_path, kernels):
    # symgen generate writes the runtime and a main.c; built strictly, its CSV is the simulation
    model = symgen.load_model(name)
    symgen.generate(model, tmp_path)
    proc = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-o", "sim",
                           "main.c", f"{name}.c", "symgen_runtime.c", "symgen_sparse.c", "-lm"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    dt = model.settings["dt"]
    run = subprocess.run([str(tmp_path / "sim"), repr(dt), repr(200 * dt)] + ([chart] if chart else []),
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split(",")[1:] == (list(model.coord_names) + [f"{c}_dot" for c in model.coord_names]
                                       + [f"reaction:{k}" for k in model.reactions])
    data = np.array([[float(v) for v in ln.split(",")] for ln in lines[1:]])
    res = symgen.simulate(kernels(name), t_end=200 * dt, stepper="python", factorization="qr",
                          chart=chart)        # (no chart: simulate's default step, as main.c's)
    n = model.n
    assert data.shape == (201, 1 + 2 * n + len(model.reactions))
    np.testing.assert_array_equal(data[:, 0], res.t)
    assert _rel(data[:, 1:1 + n], res.x) < 1e-10 and _rel(data[:, 1 + n:1 + 2 * n], res.xd) < 1e-10


@pytest.mark.parametrize("chart", CHARTS)
def test_round_off_floor_acceptance_agrees(chart, kernels):
    # tol = 1e-17 is below the round-off floor: every step is accepted by the conditioning-aware
    # floor rule of issue 8 (base.py), in C as in Python (checked against branch conv: 30 floor
    # steps in both, trajectories to 3e-16)
    k = kernels("double_four_bar")
    c, p = _pair(k, 30, tol=1e-17, chart=chart)
    _same_run(c, p, k)
    assert c.meta["floor_steps"] > 0
    assert _rel(c.x, p.x) < 1e-10 and _rel(c.lam, p.lam) < 1e-10


def test_bad_options_give_the_python_errors(kernels):
    k = kernels("stiff_pendulum")
    for kw, match in ((dict(tol=-1.0), "tol must be positive"),
                      (dict(rank_tol=2.0), "rank_tol must lie"),
                      (dict(method="index3", scheme="central-difference"), "beta > 0"),
                      (dict(scheme="hht:-0.1"), "HHT")):
        with pytest.raises(ValueError, match=match):
            symgen.simulate(k, t_end=0.5, stepper="compiled", **kw)


def test_runtime_defaults_are_the_settings_defaults_and_failures_have_names(kernels):
    """sg_options_default is symgen.SimulationSettings' defaults (the oracle: the dataclass), with
    the paper's chart and metric (preset="paper": the runtime has no default step of its own;
    main.c and the FMU set symgen's), and every failure kind has its own message."""
    from symgen.settings import SimulationSettings
    from symgen.schemes import parse_scheme

    ffi, lib = kernels("stiff_pendulum").ffi, kernels("stiff_pendulum").lib
    st = SimulationSettings(preset="paper")
    sch = parse_scheme(st.scheme)
    for method in (lib.SG_NULLSPACE, lib.SG_INDEX3):
        o = lib.sg_options_default(method)
        assert o.method == method
        assert (o.gamma, o.beta, o.alpha) == (sch.gamma, sch.beta, sch.alpha)
        assert (o.tol, o.constraint_tol, o.max_iter, o.rank_tol, o.divergence_bound) == (
            st.tol, st.constraint_tol, st.max_iter, st.rank_tol, st.divergence_bound)
        assert (o.chart, o.factorization) == (lib.SG_CHART_END, lib.SG_DENSE_QR)
        assert (st.chart, st.metric) == ("end", "euclidean")
        assert o.metric == lib.SG_METRIC_EUCLIDEAN
        assert "convergence" not in dir(o)                  # the legacy rule 0 is gone
        assert o.h == 0.0          # no default step: sg_stepper_new refuses it until it is set
    messages = [ffi.string(lib.sg_failure_message(k)).decode() for k in range(lib.SG_FAIL_KINDS)]
    assert len(set(messages)) == lib.SG_FAIL_KINDS
    assert "converge" in messages[lib.SG_FAIL_NOT_CONVERGED]
    assert ffi.string(lib.sg_failure_message(lib.SG_FAIL_KINDS)) == b"unknown failure kind"


def test_the_runtime_says_why_it_refuses_options(kernels):
    """sg_stepper_new refuses what the runtime has not (NULL) and sg_options_check says why, one
    line naming the option; the defaults with a step are accepted (issue 23 §2)."""
    k = kernels("double_four_bar")
    ffi, lib = k.ffi, k.lib
    model = lib.sg_module_model()

    def why(**changes):
        o = ffi.new("sg_options *", lib.sg_options_default(changes.pop("method", lib.SG_NULLSPACE)))
        o.h = 1e-3
        for key, value in changes.items():
            setattr(o, key, value)
        msg = lib.sg_options_check(model, o)
        made = lib.sg_stepper_new(model, o)
        assert (made == ffi.NULL) == (msg != ffi.NULL)
        if made != ffi.NULL:
            lib.sg_stepper_free(made)
        return None if msg == ffi.NULL else ffi.string(msg).decode()

    assert why() is None and why(method=lib.SG_INDEX3, alpha=-0.1) is None
    assert "h must be > 0" in why(h=0.0)
    assert "max_iter" in why(max_iter=0)
    assert "alpha" in why(alpha=-0.1)
    assert "SG_CHART_SYMMETRIC with the null-space" in why(method=lib.SG_INDEX3,
                                                          chart=lib.SG_CHART_SYMMETRIC)
    assert "SG_METRIC_MASS with the null-space" in why(method=lib.SG_INDEX3,
                                                      metric=lib.SG_METRIC_MASS)
    assert "factorization" in why(factorization=7)
    # a model descriptor without its CSR patterns cannot take the sparse step (it crashed before)
    bare = ffi.new("sg_model *", model[0])
    bare.H_indptr = ffi.NULL
    o = ffi.new("sg_options *", lib.sg_options_default(lib.SG_NULLSPACE))
    o.h, o.factorization = 1e-3, lib.SG_SPARSE
    assert "CSR" in ffi.string(lib.sg_options_check(bare, o)).decode()
    assert lib.sg_stepper_new(bare, o) == ffi.NULL


def test_every_k_records_the_same_rows_and_stats(kernels):
    # the compiled chunks fold every step into the Recorder: every K-th row, the last, the maxima
    k = kernels("double_four_bar")
    c, p = _pair(k, 203, every=10)
    _same_run(c, p, k)
    assert len(c.t) == 22 and c.meta["run_stats"]["states"] == 204
    assert _rel(c.x, p.x) < 1e-10 and _rel(c.lam, p.lam) < 1e-10


def test_symmetric_chart_runs_compiled(tmp_path, kernels):
    # "auto" takes the compiled stepper for both charts; the CLI's --chart with --stepper compiled
    k = kernels("double_four_bar")
    res = symgen.simulate(k, t_end=0.05, chart="symmetric")
    assert res.meta["stepper"] == "compiled" and res.meta["chart"] == "symmetric"
    from symgen.cli import main

    out = tmp_path / "sym.npz"
    assert main(["simulate", "double_four_bar", "--t-end", "0.05", "--quiet", "--chart",
                 "symmetric", "--stepper", "compiled", "--out", str(out)]) == 0
    saved = symgen.load_result(out)
    assert saved.meta["stepper"] == "compiled" and saved.meta["chart"] == "symmetric"
    np.testing.assert_array_equal(saved.x, res.x)


#: relative changes of the start (positions and velocities together: a change of the velocities
#: alone can be rounded away by the start's projection) that measure the passage's round-off spread
PERTURBATIONS = (0.0, 1e-15, -1e-15, 2e-15, -2e-15, 3e-15, -3e-15)


@pytest.mark.parametrize("chart", CHARTS)
def test_step_onto_a_singular_point_compiled_as_python(chart, kernels):
    """The double four-bar's step onto its singular point (tests/test_convergence.py) sits on a
    knife edge: a 1e-15 relative change of the start decides whether Newton closes the step or
    the step is taken as sub-steps (or fails), on either stepper, and another BLAS kernel moves
    the edge.  So no path is asserted for a start, only what holds on every path:

    * each run completes, or stops with the one-line reason, with every kept state on the
      constraints to round-off;
    * every completed run, whatever its path, is within 30x of the unperturbed runs' error
      against a reference at h/8 (measured: 1.1e-8 on the paths with sub-steps, 3.3e-8 to 7.5e-8
      where Newton closed the step onto the singular point; the reference is within 1.5e-10 of
      one at h/16);
    * runs of the two steppers that took the same path (status, rows, sub-stepped steps) agree
      within 10x the round-off spread of the runs of one stepper on that path."""
    from test_convergence import PASSAGE_T0, PASSAGE_X0, PASSAGE_XD0

    k, h = kernels("double_four_bar"), 5e-3
    common = dict(t0=PASSAGE_T0, t_end=PASSAGE_T0 + 4 * h, factorization="qr", chart=chart)
    runs = {}
    for eps in PERTURBATIONS:
        for st in ("compiled", "python"):
            res = runs[st, eps] = symgen.simulate(
                k, dt=h, x0=np.array(PASSAGE_X0) * (1 + eps),
                xd0=np.array(PASSAGE_XD0) * (1 + eps), stepper=st, **common)
            assert res.meta["chart"] == chart
            assert np.isfinite(res.x).all() and np.isfinite(res.xd).all()
            # positions at round-off (|x| ≈ 150 rad: the perturbed starts are 1.5e-13 off, under
            # the start projection's tolerance, measured 2.5e-13); velocities at round-off of H ẋ
            # (|ẋ| ≈ 5) amplified by s_max/s_min of H ≈ 1e6 here: 5 · 2.2e-16 · 1e6 ≈ 1e-9
            # (measured up to 1.8e-12)
            assert res.pos_err.max() < 1e-12 and res.vel_err.max() < 1e-9, (st, eps)
            if res.status != "completed":
                assert res.status == "failed" and 1 <= len(res.t) <= 4, (st, eps, res.status)
                assert "\n" not in res.reason and "Newton did not converge" in res.reason
                assert "(t = 47.3" in res.reason
    ref = symgen.simulate(k, dt=h / 8, x0=PASSAGE_X0, xd0=PASSAGE_XD0, stepper="python",
                          every=8, **common)
    assert ref.status == "completed" and np.array_equal(ref.t, runs["python", 0.0].t)
    done = [r for r in runs.values() if r.status == "completed"]
    assert len(done) >= len(runs) // 2, "most runs stopped: the window is not the passage"
    # the unperturbed runs' error (of those that completed; else of all; at least round-off)
    base = [r for (st, eps), r in runs.items() if eps == 0.0 and r.status == "completed"] or done
    error = max(1e-12, *(_rel(r.x, ref.x) for r in base))
    for r in done:
        assert _rel(r.x, ref.x) <= 30 * error, (r.meta["stepper"], r.meta["substepped_steps"])

    def path(r):
        return (r.status, len(r.t), r.meta["substepped_steps"])
    groups = {}
    for (st, eps), r in runs.items():
        if r.status == "completed":
            groups.setdefault(path(r), {"compiled": [], "python": []})[st].append(r)
    shared = [g for g in groups.values() if g["compiled"] and g["python"]
              and max(len(g["compiled"]), len(g["python"])) >= 2]
    assert shared, f"the steppers completed on no common path: { {p: {s: len(v) for s, v in g.items()} for p, g in groups.items()} }"
    for g in shared:
        spread = {w: max(1e-13, *(_rel(getattr(r, w), getattr(rs[0], w))
                                  for rs in g.values() if len(rs) >= 2 for r in rs[1:]))
                  for w in ("x", "xd")}
        c, p = g["compiled"][0], g["python"][0]
        assert np.array_equal(c.t, p.t)
        for w in ("x", "xd"):
            assert _rel(getattr(c, w), getattr(p, w)) <= max(1e-10, 10 * spread[w]), w


def _nan_probe():
    """A pendulum in (x, y, θ) plus a coordinate z held at 0 by a constraint, whose force f, mass
    M[z, z], stiffness (f_z ∝ z) or constraint q turn NaN after a time given as a parameter
    (sqrt(t_X − t), NaN for t > t_X in C and numpy alike)."""
    import sympy as sp
    (x, y, th, z), _ = symgen.coordinates("p.x p.y p.theta p.z")
    m, L, g = sp.symbols("m L g")
    tf, tM, tK, tq = sp.symbols("t_f t_M t_K t_q")
    t = symgen.t
    M = sp.diag(m, m, m * L**2 / 12, m * sp.sqrt(tM - t))
    f = [0, -m * g, sp.sqrt(tf - t), -sp.sqrt(tK - t) * z]
    q = [x - L * sp.sin(th), y + L * sp.cos(th), z * sp.sqrt(tq - t)]
    return symgen.Model("nan_probe", [x, y, th, z], M, f, q=q,
                        params={m: 1.0, L: 1.0, g: 9.8, tf: 9.0, tM: 9.0, tK: 9.0, tq: 9.0},
                        x0=[0.5, -0.75 ** 0.5, np.pi / 6, 0.0])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("where", ["t_f", "t_M", "t_K", "t_q"])
def test_a_nan_in_the_model_fails_both_steppers_at_its_step(where):
    # issue 26: a NaN in a step's inputs (f, M, K or H) is a failure of the step where it first
    # appears, with the same status and reason in C and in Python, never finite garbage (the C
    # products skip zero entries; 0·NaN must stay NaN, as in numpy)
    k = symgen.build(_nan_probe())
    dt, t_nan = 0.01, 0.0255                    # the first step to reach t > t_nan is step 3
    first_bad = int(np.ceil(t_nan / dt))
    for kw in (dict(method="nullspace", factorization="qr"),
               dict(method="nullspace", factorization="sparse"),
               dict(method="nullspace", factorization="qr", chart="symmetric"),
               dict(method="index3", factorization="qr")):
        c, p = (symgen.simulate(k, dt=dt, t_end=10 * dt, stepper=st, params={where: t_nan}, **kw)
                for st in ("compiled", "python"))
        assert c.status in ("failed", "diverged"), (kw, c.status, c.reason)
        assert (c.status, c.reason) == (p.status, p.reason), kw
        assert len(c.t) == len(p.t) == first_bad, (kw, c.reason)
        assert f"step {first_bad} " in c.reason and "non-finite" in c.reason, c.reason
        for r in (c, p):
            assert all(np.isfinite(a).all() for a in (r.x, r.xd, r.xdd, r.lam))


@pytest.mark.parametrize("name, want", [("stiff_pendulum", "qr"), ("n_four_bar", "sparse")])
def test_auto_factorization_means_the_same_for_both_steppers(name, want, kernels):
    # issue 26: "auto" was SVD/QR for the Python stepper and sparse/QR for the compiled one.  The
    # rule (settings.resolve_factorization, docs/sparse-step.md): the sparse step for a null-space
    # run from 10 coordinates on whose H is at most 25 % full, else QR
    k = kernels(name)
    assert (k.n >= 10 and k.nnz_H <= 0.25 * k.n * k.m) == (want == "sparse")
    dt = k.model.settings["dt"]
    runs = [symgen.simulate(k, dt=dt, t_end=5 * dt, stepper=st) for st in ("compiled", "python")]
    runs.append(symgen.simulate(symgen.LambdifyKernels(k.model), dt=dt, t_end=5 * dt))
    assert [r.meta["factorization"] for r in runs] == [want] * 3
    assert [r.meta["stepper"] for r in runs] == ["compiled", "python", "python"]
    i3 = [symgen.simulate(k, dt=dt, t_end=5 * dt, stepper=st, method="index3")
          for st in ("compiled", "python")]
    assert [r.meta["factorization"] for r in i3] == ["qr", "qr"]
