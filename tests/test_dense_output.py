"""t_eval rows (the dense output, docs/variable-step.md "Dense output"): the quintic Hermite
interpolant of a step (steppers/control.py dense_output, C sg_dense_interpolant) against closed
forms; a row projected in C (sg_dense_state) against the Python row (eval_rows.dense_state) and
the rows of whole runs on both steppers against each other, within the round-off spread
measured here; the rows on the constraints, at the step's order against the exact motion, and
the steps the same with or without them; dt="auto" and a fixed dt alike."""
import numpy as np
import pytest

import oracles
import symgen
from symgen.reproduce.references import minimal_pendulum
from symgen.eval_rows import DenseRowError, dense_state
from symgen.steppers.control import dense_output

WARM = ["double_four_bar", "slider_crank", "double_pendulum",
        "symgen.reproduce.references:minimal_pendulum"]
STEPPERS = ("python", "compiled")
EPS = np.finfo(float).eps


@pytest.fixture(scope="module")
def build():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = symgen.build(minimal_pendulum() if name == "minimal_pendulum"
                                       else symgen.load_model(name))
        return cache[name]
    return get


def _c_interpolant(k, tau, t, h, *ends):
    """sg_dense_interpolant through the C runtime linked into the kernels' module."""
    ffi, n = k.ffi, len(ends[0])
    outs = [np.zeros(n) for _ in range(3)]
    k.lib.sg_dense_interpolant(n, tau, t, h, *(ffi.from_buffer("double[]", np.ascontiguousarray(
        v, dtype=float)) for v in ends), *(ffi.from_buffer("double[]", o) for o in outs))
    return outs


def _c_row(k, tau, t, h, start, end, rank_tol=1e-10):
    """sg_dense_state: (x, ẋ, ẍ, λ, residuals, status) of a stepper made through the C API."""
    ffi, lib = k.ffi, k.lib
    opts = ffi.new("sg_options *", lib.sg_options_default(0))
    opts.h, opts.rank_tol = h, rank_tol
    s = ffi.gc(lib.sg_stepper_new(lib.sg_module_model(), opts), lib.sg_stepper_free)
    out = [np.zeros(k.n), np.zeros(k.n), np.zeros(k.n), np.zeros(max(k.m, 1)), np.zeros(3)]
    buf = (lambda a: ffi.from_buffer("double[]", np.ascontiguousarray(a, dtype=float)))
    st = lib.sg_dense_state(s, buf(k.p), tau, t, h, *map(buf, (*start, *end)),
                            *(ffi.from_buffer("double[]", o) for o in out))
    return (*out[:3], out[3][:k.m], out[4], st)


@pytest.mark.parametrize("impl", ["python", "c"])
def test_the_interpolant_reproduces_quintics_and_converges_at_its_orders(build, impl):
    """Through (x, ẋ, ẍ) of a polynomial of degree 5 at both ends the interpolant is the
    polynomial (x, ẋ, ẍ to round-off); on sin(ωt), cos(ωt) its errors fall as h⁶, h⁵, h⁴
    (×64, ×32, ×16 per halving of h: measured 70, 35, 17 from h = 0.1 to 0.05)."""
    k = build("minimal_pendulum")

    def interp(tau, t, h, *ends):
        if impl == "python":
            return dense_output(tau, t, h, *ends)
        return _c_interpolant(k, tau, t, h, *ends)

    rng = np.random.default_rng(7)
    P = [np.polynomial.Polynomial(rng.normal(size=6)) for _ in range(3)]

    def poly(v):
        return [np.array([p.deriv(d)(v) for p in P]) for d in range(3)]
    t, h = 0.3, 0.7
    for tau in np.linspace(t, t + h, 9):
        for d, (g, exact) in enumerate(zip(interp(tau, t, h, *poly(t), *poly(t + h)), poly(tau))):
            assert np.abs(g - exact).max() <= 1e-12 * max(1.0, np.abs(exact).max()), (d, tau)
    w, t = 3.0, 0.2

    def f(tt):
        return (np.array([np.sin(w * tt), np.cos(w * tt)]),
                np.array([w * np.cos(w * tt), -w * np.sin(w * tt)]),
                -w * w * np.array([np.sin(w * tt), np.cos(w * tt)]))
    errs = []
    for h in (0.1, 0.05, 0.025):
        worst = np.zeros(3)
        for tau in t + h * np.linspace(0.0, 1.0, 21):
            got = interp(tau, t, h, *f(t), *f(t + h))
            worst = np.maximum(worst, [np.abs(g - e).max() for g, e in zip(got, f(tau))])
        errs.append(worst)
    for coarse, fine in zip(errs, errs[1:]):
        ratio = coarse / fine
        for d, order in enumerate((6, 5, 4)):
            assert 0.85 * 2 ** order < ratio[d] < 1.25 * 2 ** order, (d, ratio)


#: (model, fixed step, span) of the steps whose rows are compared: the double four-bar through a
#: singular passage (t ≈ 0.69 s; the run on the sparse step, the rows on the dense QR), the
#: slider-crank (9 constraints of rank 8: redundant rows), the pendulum in θ alone (m = 0)
ROW_CASES = {"double_four_bar": (1e-2, 1.0), "slider_crank": (1e-3, 0.2),
             "minimal_pendulum": (0.05, 3.0)}


@pytest.mark.roundoff
@pytest.mark.parametrize("name", sorted(ROW_CASES))
def test_a_row_projected_in_c_is_the_python_row(build, name):
    """sg_dense_state against eval_rows.dense_state on the same steps (at ¼ and ⅔ of each): x, ẋ,
    ẍ, λ within 10× the spread the Python rows show when the step's end states are moved by
    ±1e-15 relative (Python factors H by SVD below 20 coordinates, C by pivoted QR); the C rows
    on q = q̇ = 0 as closely as the Python rows."""
    k = build(name)
    dt, t_end = ROW_CASES[name]
    kw = dict(x0=[1.0], method="nullspace") if name == "minimal_pendulum" else {}
    r = symgen.simulate(k, dt=dt, t_end=t_end, stepper="compiled", **kw)
    assert r.status == "completed", r.reason
    diff, spread, scale = np.zeros(4), np.zeros(4), np.zeros(4)
    for j in range(0, len(r.t) - 1, max(1, (len(r.t) - 1) // 40)):
        t, h = r.t[j], r.t[j + 1] - r.t[j]
        start, end = (r.x[j], r.xd[j], r.xdd[j]), (r.x[j + 1], r.xd[j + 1], r.xdd[j + 1])
        for f in (0.25, 2 / 3):
            tau = t + f * h
            py = dense_state(k, tau, t, h, start, end)
            c = _c_row(k, tau, t, h, start, end)
            assert c[5] == 0
            assert c[4][0] <= 1e-14 * max(1.0, np.abs(c[0]).max()) * np.sqrt(max(k.m, 1))
            assert c[4][1] <= max(10 * py[4][1], 1e-13)
            for e in (1e-15, -1e-15):
                moved = dense_state(k, tau, t, h, start, tuple(v * (1 + e) for v in end))
                spread = np.maximum(spread, [np.abs(moved[i] - py[i]).max(initial=0.0)
                                             for i in range(4)])
            diff = np.maximum(diff, [np.abs(c[i] - py[i]).max(initial=0.0) for i in range(4)])
            scale = np.maximum(scale, [np.abs(py[i]).max(initial=0.0) for i in range(4)])
    assert np.all(diff <= 10 * spread + 8 * EPS * scale), (diff, spread, scale)


#: runs on both steppers (model, model's start, simulate options, the t_eval times): windows of
#: 60–300 steps, dt="auto" and fixed steps, the double four-bar across a singular passage, the
#: double pendulum with power outputs (the work columns), the pendulum in θ alone (m = 0)
RUN_CASES = {
    "four-bar-auto": ("double_four_bar", None, dict(dt="auto", t_end=1.5, rtol=1e-7, atol=1e-7),
                      np.linspace(0.0, 1.5, 151)),
    "four-bar-fixed": ("double_four_bar", None, dict(dt=1e-2, t_end=1.5),
                       np.linspace(0.003, 1.5, 137)),
    "double-pendulum-fixed": ("double_pendulum", None, dict(dt=2e-3, t_end=0.4),
                              np.linspace(0.0, 0.4, 51)),
    "pendulum-m0-auto": ("minimal_pendulum", [1.0], dict(dt="auto", method="nullspace",
                                                         t_end=3.0, rtol=1e-6),
                         np.linspace(0.0, 3.0, 41)),
}
#: relative changes of the start (positions and velocities together) that measure the spread
PERTURBATIONS = (0.0, 1e-15, -1e-15, 2e-15)
SPREAD_FACTOR = 10


def _runs(k, x0, stepper, kw, te):
    x0 = np.asarray(k.model.x0 if x0 is None else x0, float)
    xd0 = np.asarray(k.model.xd0, float)
    runs = [symgen.simulate(k, stepper=stepper, x0=x0 * (1 + e), xd0=xd0 * (1 + e), t_eval=te,
                            **kw) for e in PERTURBATIONS]
    for r in runs:
        assert r.status == "completed", r.reason
        np.testing.assert_array_equal(r.t, te)
        assert r.meta["stepper"] == stepper
    return runs


FIELDS = ("x", "xd", "xdd", "lam", "outputs", "energy")


def _path(r):
    """The steps a run took (runs on one path are compared: docs/testing.md)."""
    sc = r.meta.get("step_control") or {}
    return (r.meta["steps_done"], sc.get("rejected_error"), sc.get("rejected_newton"),
            r.meta["run_stats"]["newton_iters_total"])


@pytest.mark.roundoff
@pytest.mark.parametrize("case", sorted(RUN_CASES))
def test_the_rows_of_both_steppers_agree_within_their_round_off_spread(build, case):
    """The t_eval rows of the compiled stepper (written in C) and of the Python stepper, from the
    same perturbed starts, on a path both took: every field (x, ẋ, ẍ, λ, outputs with the work
    columns, energy) within SPREAD_FACTOR times the larger spread each stepper's own runs show;
    every row on q = q̇ = 0 to round-off."""
    name, x0, kw, te = RUN_CASES[case]
    k = build(name)
    runs = {st: _runs(k, x0, st, kw, te) for st in STEPPERS}
    for st in STEPPERS:
        for r in runs[st]:
            assert r.pos_err.max() < 1e-13 and r.vel_err.max() < 1e-12
    by_path = {}
    for st in STEPPERS:
        for r in runs[st]:
            by_path.setdefault(_path(r), {s: [] for s in STEPPERS})[st].append(r)
    shared = [g for g in by_path.values() if g["python"] and g["compiled"]
              and max(len(g["python"]), len(g["compiled"])) >= 2]
    assert shared, f"no path both steppers took twice: {list(by_path)}"
    for g in shared:
        for field in FIELDS:
            if getattr(g["python"][0], field) is None:
                continue
            spread = 0.0
            for st in STEPPERS:
                base = getattr(g[st][0], field)
                for r in g[st][1:]:
                    spread = max(spread, float(np.abs(getattr(r, field) - base).max(initial=0)))
            py, c = getattr(g["python"][0], field), getattr(g["compiled"][0], field)
            floor = 8 * EPS * float(np.abs(py).max(initial=0.0))
            assert np.abs(c - py).max(initial=0.0) <= SPREAD_FACTOR * spread + floor, field


@pytest.mark.parametrize("stepper", STEPPERS)
def test_the_rows_keep_the_steps_fourth_order(build, stepper):
    """The corrected step (symmetric chart, mass metric, γ = ½: fourth order on the double
    four-bar) with fixed steps of h and h/2 to 2 s; rows at ¼, ½, ¾ of every step in [1, 2] s
    against the exact motion (SciPy on the minimal form): B0's position and velocity errors fall
    16× (measured 16.05, 15.99 from h = 0.02 to 0.01; the cubic Hermite's velocity: 9.2), and are
    those of the steps themselves (measured 1.003× the grid points' errors).  Rows on the grid
    are the steps' own states."""
    k = build("double_four_bar")
    errs = []
    for h in (0.02, 0.01):
        kw = dict(dt=h, t_end=2.0, chart="symmetric", metric="mass", scheme="trapezoidal",
                  stepper=stepper)
        grid = np.arange(round(2.0 / h) + 1) * h
        inner = np.sort(np.concatenate([grid[:-1] + f * h for f in (0.25, 0.5, 0.75)]))
        te = np.union1d(inner[inner >= 1.0], [1.0, 2.0])
        rows = symgen.simulate(k, t_eval=te, **kw)
        steps = symgen.simulate(k, **kw)
        assert rows.status == steps.status == "completed"
        np.testing.assert_array_equal(rows.t, te)
        B, _ = oracles.four_bar_reference(2, te)
        on = steps.t >= 1.0
        B_steps, _ = oracles.four_bar_reference(2, steps.t[on])
        e_rows = [np.abs(rows.output(c) - B[i]).max() for c, i in (("B0.x", 0), ("B0.vx", 2))]
        e_steps = [np.abs(steps.output(c)[on] - B_steps[i]).max()
                   for c, i in (("B0.x", 0), ("B0.vx", 2))]
        assert np.all(np.array(e_rows) <= 1.5 * np.array(e_steps)), (e_rows, e_steps)
        for tg in (1.0, 2.0):                 # a row on the grid: the step's state re-projected
            i, j = int(np.flatnonzero(te == tg)[0]), int(np.argmin(np.abs(steps.t - tg)))
            np.testing.assert_allclose(rows.x[i], steps.x[j], rtol=0, atol=1e-12)
            np.testing.assert_allclose(rows.xd[i], steps.xd[j], rtol=0, atol=1e-10)
        errs.append(np.array(e_rows))
    assert np.all((13 < errs[0] / errs[1]) & (errs[0] / errs[1] < 20)), errs


@pytest.mark.parametrize("stepper", STEPPERS)
def test_the_steps_are_the_same_with_or_without_t_eval(build, stepper):
    """The rows are computed aside (in C on a workspace of the dense output's own): the runs
    take the same steps, with the same maxima and Newton iterations, and end in the same state
    (the row at t_end is the last step's end re-projected); also when the rounding of the last
    fixed step's t + h falls short of t_end (dt = 0.001 to 1.026 s: 1.0259999999999998)."""
    k = build("double_four_bar")
    for kw in (dict(dt="auto", t_end=1.5, rtol=1e-6), dict(dt=1e-3, t_end=1.026)):
        te = np.linspace(0.0, kw["t_end"], 77)
        a = symgen.simulate(k, stepper=stepper, **kw)
        b = symgen.simulate(k, stepper=stepper, t_eval=te, **kw)
        assert a.status == b.status == "completed"
        assert len(b.t) == len(te) and b.t[-1] == kw["t_end"]
        assert a.meta["steps_done"] == b.meta["steps_done"]
        assert a.meta["run_stats"] == b.meta["run_stats"]
        assert a.meta.get("step_control") == b.meta.get("step_control")
        np.testing.assert_allclose(b.x[-1], a.x[-1], rtol=0, atol=1e-12)


def test_a_row_that_cannot_be_projected_is_said_so(build):
    """A step end with non-finite values: C returns 1 (the positions), Python raises
    DenseRowError naming the row's time and what to try."""
    k = build("slider_crank")
    r = symgen.simulate(k, dt=1e-3, t_end=0.01, stepper="compiled")
    bad = r.x[1].copy()
    bad[0] = np.nan
    start, end = (r.x[0], r.xd[0], r.xdd[0]), (bad, r.xd[1], r.xdd[1])
    assert _c_row(k, 5e-4, 0.0, 1e-3, start, end)[5] == 1
    with pytest.raises(DenseRowError, match=r"t_eval row at t = 0.0005: .*try a smaller rtol"):
        dense_state(k, 5e-4, 0.0, 1e-3, start, end)


def test_t_eval_is_checked_and_its_rows_must_fit(build, monkeypatch):
    """Times that do not increase or leave [t0, t_end] are refused in one line; rows that would
    not fit in the memory a result may take are refused before the run, naming how many fit."""
    k = build("minimal_pendulum")
    for dt in ("auto", 0.01):
        with pytest.raises(ValueError, match="t_eval must increase strictly"):
            symgen.simulate(k, dt=dt, t_end=1.0, t_eval=[0.5, 0.2], method="nullspace")
        with pytest.raises(ValueError, match=r"t_eval must .* within \[t0, t_end\]"):
            symgen.simulate(k, dt=dt, t_end=1.0, t_eval=[0.5, 1.5], method="nullspace")
    monkeypatch.setenv("SYMGEN_MEMORY_LIMIT", "200000")
    for dt in ("auto", 0.01):
        with pytest.raises(ValueError, match=r"t_eval rows would need .* give at most \d+ times"):
            symgen.simulate(k, dt=dt, t_end=1.0, t_eval=np.linspace(0, 1, 100_000),
                            method="nullspace")
