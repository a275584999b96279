"""The shipped examples simulated on short spans and compared with independent solutions
(tests/oracles.py: SciPy on minimal or index-1 forms) and conservation laws (issue 4 §5).
N = 40 is in test_examples_n40.py; longer runs in examples/benchmarks/validate_examples.py."""
import importlib

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import symgen

import oracles

ANGLES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def load(name, **kw):
    return importlib.import_module(f"symgen.examples.{name}").model(**kw)


def outputs(res, names):
    return np.array([res.output(n) for n in names])


def test_andrews_motion_matches_the_test_set_equations():
    """Fox–Goodwin null-space runs at h = 2e-5 and 1e-5 against the 7-angle index-1 oracle:
    second-order convergence and agreement to 3e-5 rad (angles up to 16 rad) at h = 1e-5."""
    mdl = load("andrews_squeezer")
    runs = {}
    for h in (2e-5, 1e-5):
        res = symgen.simulate(mdl, method="nullspace", scheme="fox-goodwin", dt=h, t_end=0.03,
                              preset="paper")     # the paper's step: second order (the ratio)
        assert res.status == "completed", res.reason
        assert res.pos_err.max() < 1e-14 and res.vel_err.max() < 1e-10
        # ‖q̈‖ at round-off of accelerations up to 1.4e4 rad/s² (measured 3.4e-10)
        assert res.acc_err.max() < 1e-8
        runs[h] = res
    t = runs[1e-5].t[::100]
    q_ref, _ = oracles.andrews_reference(t)
    err = {h: np.abs(outputs(r, ANGLES)[:, ::int(round(1e-3 / h))] - q_ref).max()
           for h, r in runs.items()}
    assert err[1e-5] < 3e-5
    assert 3.0 < err[2e-5] / err[1e-5] < 6.0            # second order
    assert abs(q_ref[0, -1]) > 15                        # β turned about 2.5 times
    # joint F is K1's point at rr from the origin along β
    r = runs[1e-5]
    np.testing.assert_allclose(r.output("F.x"), 7e-3 * np.cos(r.output("beta")), atol=1e-15)


def test_double_four_bar_B0_matches_the_parallelogram_ode():
    mdl = load("double_four_bar")
    errs = {}
    for h in (2e-3, 1e-3):
        res = symgen.simulate(mdl, dt=h, t_end=2.0, preset="paper")   # second order (the ratio)
        assert res.status == "completed", res.reason
        B_ref, theta = oracles.four_bar_reference(2, res.t)
        B = outputs(res, ("B0.x", "B0.y", "B0.vx", "B0.vy"))
        errs[h] = np.abs(B - B_ref).max(axis=1)
        assert res.pos_err.max() < 1e-13 and res.vel_err.max() < 1e-12
        drift = np.abs(res.energy - oracles.four_bar_energy(2)).max()
        assert drift < 3e-3 * (h / 2e-3) ** 2
    assert theta.min() < -np.pi       # through both horizontal passages (θ = 0 and θ = −π)
    assert errs[1e-3][0] < 1e-5 and errs[1e-3][2] < 1e-4
    assert 3.0 < errs[2e-3][0] / errs[1e-3][0] < 5.0


def test_bricard_runs_through_its_redundant_constraints():
    mdl = load("bricard")
    res = symgen.simulate(mdl, t_end=3.0)              # settings: Fox–Goodwin, h = 1e-2
    assert res.status == "completed", res.reason
    assert res.pos_err.max() < 1e-14
    assert res.vel_err.max() < 1e-12 and res.acc_err.max() < 1e-11
    assert res.meta["rank_H"] == [23, 23]
    assert np.abs(res.energy - res.energy[0]).max() < 1e-3
    x_mid = res.output("rod2.mid.x")
    assert x_mid.min() < -0.99 and x_mid.max() == pytest.approx(1.0)   # a full swing of rod 2


def test_stiff_pendulum_matches_minimal_coordinates():
    mdl = load("stiff_pendulum")
    res = symgen.simulate(mdl)                          # the recommended settings: h = 0.1, 100 s
    assert res.status == "completed", res.reason
    assert res.pos_err.max() < 1e-14
    sol = solve_ivp(lambda t, y: [y[1], -9.8 * np.sin(y[0]) + 0.1 * np.sin(0.1 * t)], (0, 100),
                    [0, 0], t_eval=res.t, rtol=1e-12, atol=1e-12, method="DOP853")
    theta = res.output("theta")
    assert np.abs(theta).max() > 0.009
    assert np.abs(theta - sol.y[0]).max() < 1e-5


def test_double_pendulum_matches_minimal_coordinates_and_dissipates():
    mdl = load("double_pendulum")
    errs = {}
    for h in (2e-3, 1e-3):
        res = symgen.simulate(mdl, dt=h, t_end=1.0, preset="paper")   # second order (the ratio)
        assert res.status == "completed", res.reason
        ref = oracles.double_pendulum_reference(res.t)
        errs[h] = np.abs(outputs(res, ("tip.x", "tip.y", "tip.vx", "tip.vy")) - ref).max(axis=1)
        assert np.diff(res.energy).max() < 1e-9          # dampers only take energy out
    assert errs[1e-3][0] < 1e-3 and errs[1e-3][2] < 5e-2
    assert 3.0 < errs[2e-3][0] / errs[1e-3][0] < 5.5


def test_slider_crank_follows_its_drive():
    mdl = load("slider_crank")
    res = symgen.simulate(mdl, t_end=1.0)
    assert res.status == "completed", res.reason
    r, l, w = 0.2, 0.6, 2 * np.pi
    phi = w * res.t
    root = np.sqrt(l ** 2 - (r * np.sin(phi)) ** 2)
    np.testing.assert_allclose(res.output("B.x"), r * np.cos(phi) + root, atol=1e-13)
    vB = -r * w * np.sin(phi) - r ** 2 * w * np.sin(phi) * np.cos(phi) / root
    np.testing.assert_allclose(res.output("B.vx"), vB, atol=1e-11)
    assert res.vel_err.max() < 1e-12
