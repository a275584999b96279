"""simulate(): defaults, bad inputs, parameters, progress, consistent initial state, step
suggestion, and failure as data (Newton failure, divergence)."""
import math
import re
import sys
import warnings

import numpy as np
import pytest

import symgen
import stepper_models as sm


@pytest.fixture(scope="module")
def pend():
    return symgen.build(sm.stiff_pendulum())


@pytest.fixture(scope="module")
def minimal():
    return symgen.build(sm.minimal_pendulum())


def test_model_is_built_and_settings_are_defaults():
    mdl = sm.stiff_pendulum().replace(settings={"method": "nullspace", "scheme": "fox-goodwin",
                                                "dt": 0.2, "t_end": 2.0})
    r = symgen.simulate(mdl)
    assert r.status == "completed"
    assert r.meta["method"] == "nullspace"
    assert r.meta["scheme"] == {"name": "fox-goodwin", "gamma": 0.5, "beta": 1 / 12, "hht_alpha": 0.0,
                                "a_stable": True}          # the default, corrected step
    assert (r.meta["gamma"], r.meta["beta"]) == (0.5, 1 / 12)
    assert r.meta["h"] == 0.2 and r.meta["t_end"] == 2.0 and len(r.t) == 11
    assert r.meta["kernels"] == "Kernels"                  # compiled through symgen.build
    assert r.meta["model_hash"] == mdl.hash
    for key in ("symgen", "numpy", "scipy", "sympy", "python", "tol", "max_iter", "rank_tol",
                "parameters", "wall_time"):
        assert key in r.meta
    assert r.coords == ("x", "y", "theta")
    assert r.output_names == ("theta",)
    assert np.array_equal(r.output("theta"), r.coord("theta"))


def test_lambdify_kernels_give_the_same_answer(pend):
    mdl = sm.stiff_pendulum()
    r1 = symgen.simulate(symgen.LambdifyKernels(mdl), dt=0.1, t_end=3.0)
    r2 = symgen.simulate(pend, dt=0.1, t_end=3.0)
    assert np.abs(r1.x - r2.x).max() < 1e-13
    assert r1.meta["kernels"] == "LambdifyKernels"


def test_bad_inputs(pend):
    with pytest.raises(ValueError, match="unknown method.*nullspace"):
        symgen.simulate(pend, method="rk4", dt=0.1, t_end=1)
    with pytest.raises(ValueError, match="dt"):
        symgen.simulate(pend, dt=0.0, t_end=1)
    with pytest.raises(ValueError, match="dt"):
        symgen.simulate(pend, dt=-0.1, t_end=1)
    with pytest.raises(ValueError, match="t_end"):
        symgen.simulate(pend, dt=0.1, t_end=-1)
    with pytest.raises(ValueError, match=r"x0 has shape \(2,\)"):
        symgen.simulate(pend, dt=0.1, t_end=1, x0=[0, -1])
    with pytest.raises(ValueError, match="xd0"):
        symgen.simulate(pend, dt=0.1, t_end=1, xd0=[0, 0, 0, 0])
    with pytest.raises(KeyError, match="nope"):
        symgen.simulate(pend, dt=0.1, t_end=1, params={"nope": 1.0})
    with pytest.raises(ValueError, match="unknown Newmark scheme"):
        symgen.simulate(pend, scheme="euler", dt=0.1, t_end=1)
    with pytest.raises(ValueError, match="constraints"):
        symgen.simulate(pend, method="newmark", dt=0.1, t_end=1)
    with pytest.raises(ValueError, match="HHT"):
        symgen.simulate(pend, method="nullspace", scheme="hht:-0.1", dt=0.1, t_end=1)
    with pytest.raises(ValueError, match="beta > 0"):
        symgen.simulate(pend, method="index3", scheme="central-difference", dt=0.1, t_end=1)
    with pytest.raises(TypeError):
        symgen.simulate("pendulum", dt=0.1, t_end=1)


def test_params_apply_and_are_restored(pend):
    before = pend.params()
    r = symgen.simulate(pend, dt=0.1, t_end=5.0, params={"T0": 9.0})
    assert r.meta["parameters"]["T0"] == 9.0
    assert pend.params() == before
    r0 = symgen.simulate(pend, dt=0.1, t_end=5.0)
    assert np.abs(r.coord("theta")).max() > 50 * np.abs(r0.coord("theta")).max()


def test_progress_callback(pend):
    calls = []
    symgen.simulate(pend, dt=0.1, t_end=1.0, progress=lambda i, n: calls.append((i, n)))
    assert calls == [(i, 10) for i in range(1, 11)]


def test_non_integer_span_warns(pend):
    with pytest.warns(RuntimeWarning, match="not an integer"):
        r = symgen.simulate(pend, dt=0.3, t_end=1.0)
    assert len(r.t) == 5 and r.t[-1] == pytest.approx(1.2)


def test_energy_recorded(pend, minimal):
    r = symgen.simulate(pend, dt=0.05, t_end=2.0, params={"T0": 0.0}, x0=[np.sin(0.5), -np.cos(0.5), 0.5],
                        scheme="trapezoidal")
    assert r.energy is not None
    assert np.allclose(r.energy, r.energy_kinetic + r.energy_potential)
    assert r.energy[0] == pytest.approx(-9.8 * np.cos(0.5))
    assert np.ptp(r.energy) < 1e-3 * abs(r.energy[0])
    # a model without a potential: energy is None, T still recorded
    (u,), (ud,) = symgen.coordinates("u")
    free = symgen.Model("free", [u], [[2.0]], [0.0], xd0=[1.5])
    rf = symgen.simulate(symgen.LambdifyKernels(free), method="newmark", dt=0.1, t_end=1.0)
    assert rf.energy is None
    assert np.allclose(rf.energy_kinetic, 0.5 * 2.0 * 1.5**2)
    assert rf.x[-1, 0] == pytest.approx(1.5)


# -- consistent initial state ----------------------------------------------------------------
def test_consistent_state_projects_and_reports(pend):
    cs = symgen.consistent_state(pend, 0.0, [0.05, -0.9, 0.1], [0.3, 0.2, 0.0])
    q, H, qd, Hd, qdd, Hdd = pend.constraints(0.0, cs.x, cs.xd, cs.xdd)
    assert np.abs(q).max() < 1e-13 and np.abs(qd).max() < 1e-13 and np.abs(qdd).max() < 1e-12
    assert cs.dx > 0.05 and cs.dxd > 0.1
    # index-1: M ẍ = f + Hᵀλ holds (M singular here: zero rotational inertia)
    M, f, K, C = pend.dynamics(0.0, cs.x, cs.xd, cs.xdd, cs.lam)
    assert np.abs(M @ cs.xdd - f - H.T @ cs.lam).max() < 1e-12
    # minimal-norm: the position correction is orthogonal to the constraint manifold's tangent
    at_rest = symgen.consistent_state(pend, 0.0, [0.0, -1.0, 0.0], [0.0, 0.0, 0.0])
    assert at_rest.dx == 0.0 and at_rest.dxd == 0.0
    assert np.allclose(at_rest.lam, [0.0, 9.8], atol=1e-14)            # tension = m g
    assert np.allclose(at_rest.xdd, 0.0, atol=1e-14)


def test_simulate_reports_projection(pend):
    with pytest.warns(RuntimeWarning, match="projected"):
        r = symgen.simulate(pend, dt=0.1, t_end=0.5, x0=[0.0, -1.1, 0.0])
    assert r.meta["initial_projection"]["dx"] == pytest.approx(0.1, rel=1e-6)
    assert r.pos_err.max() < 1e-14


def test_consistent_state_fails_clearly():
    import sympy as sp

    (a, b), _ = symgen.coordinates("a b")
    mdl = symgen.Model("impossible", [a, b], sp.eye(2), [0, 0], q=[a**2 + b**2 + 1])
    with pytest.raises(ValueError, match="cannot project"):
        symgen.consistent_state(symgen.LambdifyKernels(mdl), 0.0, [1.0, 1.0], [0.0, 0.0])


# -- step suggestion ----------------------------------------------------------------------------
def test_suggest_step(pend, minimal):
    """Eq. 11 for the paper's step; the default corrected step is A-stable whatever β."""
    w, hmax = symgen.suggest_step(pend, "fox-goodwin", preset="paper")
    assert abs(w - math.sqrt(9.8)) < 1e-8 and abs(hmax - 0.782461) < 1e-6
    assert symgen.suggest_step(pend, "fox-goodwin") == (w, math.inf)
    s = symgen.suggest_step(pend, "central-difference", preset="paper")
    assert s.h_max == pytest.approx(2 / math.sqrt(9.8))
    assert symgen.suggest_step(pend, "trapezoidal").h_max == math.inf
    # away from rest: ω² = g cos θ / L (plus a small velocity term; zero velocity here)
    th = 1.0
    w1, _ = symgen.suggest_step(pend, "fox-goodwin", x=[np.sin(th), -np.cos(th), th], xd=[0, 0, 0])
    assert w1 == pytest.approx(math.sqrt(9.8 * math.cos(th)), rel=1e-8)
    # the minimal model agrees
    wm, _ = symgen.suggest_step(minimal, "fox-goodwin", x=[th], xd=[0.0])
    assert wm == pytest.approx(w1, rel=1e-10)
    # parameters: ω = √(g/L) with L = 4
    w4, _ = symgen.suggest_step(pend, "fox-goodwin", x=[0, -4, 0], params={"L": 4.0})
    assert w4 == pytest.approx(math.sqrt(9.8 / 4), rel=1e-8)
    assert pend.params()["L"] == 1.0


# -- failure is data ----------------------------------------------------------------------------
def test_newton_failure_keeps_partial_result(pend):
    # (within the stability limit, 0.78 s, a step that max_iter = 4 fails is taken as sub-steps;
    # at dt = 3 it is not: the user's instability experiment, on the paper's step, Sec. 3)
    r = symgen.simulate(pend, method="nullspace", scheme="fox-goodwin", dt=3.0, t_end=3.0 * 100,
                        max_iter=4, preset="paper", tol=1e-10)
    assert r.status == "failed"
    # one short line (issue 21 §4): the step, what failed, what to try; the whole chain of
    # attempts in meta["failure_detail"]
    assert r.reason.startswith(f"step {r.n_steps + 1} (t = ")
    assert re.search(r"Newton did not converge after 4 iterations \(not sub-stepped: h = 3 s "
                     r"> h_max = 0\.\d+ s\) \(s_min/s_max", r.reason), r.reason
    assert "\n" not in r.reason
    assert len(r.reason) <= 200 and "try --dt auto" in r.reason
    detail = r.meta["failure_detail"]
    assert "Newton did not converge" in detail and "not retried as sub-steps" in detail
    assert "exceeds the stability limit" in detail
    for word in ("t = ", "step ", "iterations", "update", "q"):
        assert word in detail
    k = r.n_steps
    assert 2 <= k < 100
    assert len(r.t) == len(r.x) == len(r.lam) == len(r.newton_iters) == len(r.energy) == k + 1
    assert r.t[-1] == pytest.approx(3.0 * k)
    assert np.isfinite(r.x).all() and r.pos_err.max() < 1e-12
    # the steps kept are exactly those of an unlimited run
    full = symgen.simulate(pend, method="nullspace", scheme="fox-goodwin", dt=3.0, t_end=3.0 * k,
                           preset="paper", tol=1e-10)
    assert np.array_equal(full.x, r.x)


def test_divergence_by_bound_keeps_partial_result(pend):
    kw = dict(method="index3", scheme="fox-goodwin", dt=0.1, t_end=100.0)
    r = symgen.simulate(pend, divergence_bound=1e3, **kw)
    assert r.status == "diverged"
    assert "divergence bound" in r.reason and "t = " in r.reason and "step " in r.reason
    assert 10 < r.n_steps < 1000
    # oracle: the same run without a bound (same stepper); the bounded run stops at the first
    # state whose size max(|x|, h|ẋ|, h²|ẍ|) passes the bound and keeps every state before it
    free = symgen.simulate(pend, divergence_bound=np.inf, stepper=r.meta["stepper"], **kw)
    with np.errstate(over="ignore"):                  # the free run reaches ~1e300
        size = np.max([np.linalg.norm(free.x, axis=1), 0.1 * np.linalg.norm(free.xd, axis=1),
                       0.01 * np.linalg.norm(free.xdd, axis=1)], axis=0)
    past = np.flatnonzero(~(size <= 1e3))
    assert past.size and past[0] == r.n_steps + 1, (past[:3], r.n_steps)
    assert f"step {past[0]} " in r.reason
    np.testing.assert_array_equal(r.x, free.x[:past[0]])
    np.testing.assert_array_equal(r.xd, free.xd[:past[0]])


def test_unbounded_blow_up_stops_with_the_data_it_computed(pend):
    """The classical index-3 Fox–Goodwin run of the stiff pendulum grows without bound.  With no
    divergence bound it stops at a non-finite value (`diverged`) or where Newton no longer
    converges (`failed`): which one comes first depends on the machine's floating-point details,
    so only what holds on every machine is asserted."""
    # the Python loop's checks (the compiled stepper meets Newton's limit first here, with a
    # kinetic energy already past the largest double: which limit comes first is round-off)
    r = symgen.simulate(pend, method="index3", scheme="fox-goodwin", dt=0.1, t_end=100.0,
                        divergence_bound=np.inf, stepper="python")
    assert r.status in ("diverged", "failed"), r.reason
    k = r.n_steps
    assert 10 < k < 999 and r.t[-1] == pytest.approx(0.1 * k)
    m = re.match(r"step (\d+) \(t = ([-+0-9.e]+)\): ", r.reason)   # names the step that stopped
    assert m and int(m.group(1)) == k + 1 and float(m.group(2)) == pytest.approx(0.1 * (k + 1))
    assert len(r.t) == len(r.x) == len(r.lam) == len(r.energy) == k + 1
    for a in (r.x, r.xd, r.xdd, r.lam, r.energy):
        assert np.isfinite(a).all()
    assert np.abs(r.lam[-1]).max() > 1e3 * np.abs(r.lam[1]).max()      # it did blow up


class _NaNForceFrom(symgen.LambdifyKernels):
    """The stiff pendulum whose force is NaN from time ``t_nan`` on."""

    def __init__(self, model, t_nan):
        super().__init__(model)
        self.t_nan = t_nan

    def dynamics(self, t, x, xd, xdd, lam):
        M, f, K, C = super().dynamics(t, x, xd, xdd, lam)
        if t >= self.t_nan:
            f = np.full_like(f, np.nan)
        return M, f, K, C


@pytest.mark.parametrize("method", ["nullspace", "index3"])
def test_divergence_by_non_finite_values(method):
    """A NaN force from t = 0.45 on: the step to t = 0.5 (step 5) ends the run as `diverged`
    with a non-finite reason, keeping the 4 finite steps before it."""
    k = _NaNForceFrom(sm.stiff_pendulum(), t_nan=0.45)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = symgen.simulate(k, method=method, scheme="fox-goodwin", dt=0.1, t_end=2.0)
    assert r.status == "diverged", r.reason
    assert "non-finite" in r.reason and r.reason.startswith("step 5 (t = 0.5)"), r.reason
    assert r.n_steps == 4 and r.t[-1] == pytest.approx(0.4)
    assert np.isfinite(r.x).all() and np.isfinite(r.lam).all() and r.pos_err.max() < 1e-12


def test_numerical_trouble_never_raises(minimal):
    """A model whose force becomes NaN past |θ| > 1 ends as data, not as an exception."""
    import sympy as sp

    (th,), _ = symgen.coordinates("theta")
    mdl = symgen.Model("sqrt_spring", [th], [[1.0]], [sp.sqrt(1 - th**2) * 0 - 10 * th + 20],
                       V=None)
    k = symgen.LambdifyKernels(mdl.replace(f=[sp.sqrt(1 - th) + 5.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = symgen.simulate(k, method="newmark", scheme="trapezoidal", dt=0.1, t_end=10.0)
    assert r.status in ("diverged", "failed")
    assert r.n_steps >= 1 and np.isfinite(r.x).all()


def test_blas_threads_limited_during_the_run_and_restored(pend):
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    seen = []
    symgen.simulate(pend, dt=0.1, t_end=0.3, progress=lambda i, n: seen.append(blas_threads()))
    assert seen and all(all(nt == 1 for nt in s) for s in seen)
    assert blas_threads() == before
    seen.clear()
    symgen.simulate(pend, dt=0.1, t_end=0.3, blas_threads=None,
                    progress=lambda i, n: seen.append(blas_threads()))
    assert all(s == before for s in seen)


def test_blas_library_scan_is_reused_until_a_module_is_imported(pend, monkeypatch):
    """threadpoolctl's scan of the loaded libraries costs ~1 ms, as much as a short compiled run:
    simulate scans once and again only after a module was imported (it may bring a BLAS)."""
    import types

    import threadpoolctl

    made = []

    class Counting(threadpoolctl.ThreadpoolController):
        def __init__(self):
            made.append(1)
            super().__init__()

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Counting)
    symgen.simulate(pend, dt=0.1, t_end=0.2)           # the run's own first imports
    monkeypatch.setitem(sys.modules, "symgen_test_module_a", types.ModuleType("a"))
    made.clear()
    symgen.simulate(pend, dt=0.1, t_end=0.2)
    symgen.simulate(pend, dt=0.1, t_end=0.2)
    assert len(made) == 1
    monkeypatch.setitem(sys.modules, "symgen_test_module_b", types.ModuleType("b"))
    symgen.simulate(pend, dt=0.1, t_end=0.2)
    assert len(made) == 2


def test_recorded_steps_of_a_diverging_run_are_finite(pend):
    """The last recorded step of a run that blows up still has finite residual norms: the step
    whose ‖q̇‖ overflows ends the run instead of being recorded."""
    r = symgen.simulate(pend, method="index3", scheme="fox-goodwin", dt=0.1, t_end=300.0)
    assert r.status == "diverged"
    for arr in (r.x, r.xd, r.xdd, r.lam, r.pos_err, r.vel_err, r.acc_err):
        assert np.all(np.isfinite(arr))
    # every step it accepted met its own constraint tolerance, blow-up or not
    assert r.pos_err.max() <= r.meta["constraint_tol"]


def test_convergence_does_not_depend_on_where_the_origin_is():
    """The same pendulum hung from (0, 0) and from (1e6, 0): per-coordinate tolerances keep θ
    and the constraints as accurate far from the origin as near it."""
    import sympy as sp

    (x, y, th), _ = symgen.coordinates("x y theta")
    m, L, g, P = sp.symbols("m L g P")
    model = symgen.Model(
        "offset_pendulum", [x, y, th], sp.diag(m, m, 0), [0, -m * g, 0],
        q=[x - P - L * sp.sin(th), y + L * sp.cos(th)], V=m * g * y,
        params={m: 1.0, L: 1.0, g: 9.81, P: 0.0}, x0=[np.sin(1.0), -np.cos(1.0), 1.0])
    kern = symgen.build(model)          # one module: the pivot P is a parameter
    runs = {}
    for pivot in (0.0, 1e6):
        runs[pivot] = symgen.simulate(kern, method="nullspace", scheme="trapezoidal", dt=0.01,
                                      t_end=2.0, params={"P": pivot},
                                      x0=[pivot + np.sin(1.0), -np.cos(1.0), 1.0])
    near, far = runs[0.0], runs[1e6]
    assert near.status == far.status == "completed"
    assert far.meta["parameters"]["P"] == 1e6 and far.x[:, 0].min() > 1e6 - 1.0
    # θ far from the origin as near it to the round-off of positions there: 30 spacings of 1e6
    # (3.5e-9; measured 3.3e-10; a tolerance tol·(1 + max|x|) common to all coordinates accepts
    # θ 3.6e-7 off, as measured with the Python stepper's weights made global)
    np.testing.assert_allclose(far.x[:, 2], near.x[:, 2], rtol=0, atol=30 * np.spacing(1e6))
    assert far.vel_err.max() < 1e-9
