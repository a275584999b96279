"""Redundant constraints (four-bar with a duplicated joint), a rheonomic model (driven crank), the
minimal-coordinate references, HHT, and the linear algebra of one linearization."""
import math

import numpy as np
import pytest

import symgen
import stepper_models as sm
from symgen.steppers import Linearization


#: built from the session's start by another process (conftest.py)
WARM = ["stepper_models:four_bar:duplicate=True", "stepper_models:driven_crank_pendulum"]


@pytest.fixture(scope="module")
def four_bars():
    return symgen.build(sm.four_bar()), symgen.build(sm.four_bar(duplicate=True))


@pytest.fixture(scope="module")
def crank():
    return symgen.build(sm.driven_crank_pendulum())


# -- redundant constraints -----------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["trapezoidal", "fox-goodwin"])
def test_four_bar_duplicated_joint_moves_exactly_as_without(four_bars, scheme):
    k1, k2 = four_bars
    assert (k1.m, k2.m) == (8, 10)
    r1 = symgen.simulate(k1, scheme=scheme, dt=1e-2, t_end=3.0)
    r2 = symgen.simulate(k2, scheme=scheme, dt=1e-2, t_end=3.0)
    assert r1.status == r2.status == "completed"
    assert r2.meta["rank_H"] == [8, 8]                  # rank 8 of 10 rows, every iteration
    assert np.abs(r1.x - r2.x).max() < 1e-11
    assert np.abs(r1.xd - r2.xd).max() < 1e-10
    assert np.abs(r1.xdd - r2.xdd).max() < 1e-8
    assert np.array_equal(r1.newton_iters, r2.newton_iters)
    assert np.ptp(r1.coord("crank_th")) > 4.0            # the crank swings through a large angle
    for r in (r1, r2):
        assert r.pos_err.max() < 1e-13 and r.vel_err.max() < 1e-12 and r.acc_err.max() < 1e-11
    # the same reaction forces: Hᵀλ agrees although λ (minimum norm) is split over the duplicate
    for i in (0, 150, 300):
        _, H1, *_ = k1.constraints(r1.t[i], r1.x[i], r1.xd[i], r1.xdd[i])
        g1 = H1.T @ r1.lam[i]
        _, H2, *_ = k2.constraints(r2.t[i], r2.x[i], r2.xd[i], r2.xdd[i])
        g2 = H2.T @ r2.lam[i]
        assert np.abs(g1 - g2).max() < 1e-7 * (1 + np.abs(g1).max())


@pytest.mark.parametrize("step, order", [({"preset": "paper"}, 2), ({}, 4)],
                         ids=["paper", "default"])
def test_four_bar_converges_second_order_and_conserves_energy(four_bars, step, order):
    """The paper's step is second order; the default (symmetric chart, mass metric with its
    reaction correction) fourth order here, M and the force constant (docs/spatial-accuracy.md):
    halving h divides the error and the energy's spread by about 2^order."""
    k1, _ = four_bars
    fine = symgen.simulate(k1, scheme="trapezoidal", dt=1e-3, t_end=3.0, **step)
    errs, drifts = [], []
    for h in (1e-2, 5e-3):
        r = symgen.simulate(k1, scheme="trapezoidal", dt=h, t_end=3.0, **step)
        s = int(round(h / 1e-3))
        errs.append(np.abs(r.x - fine.x[::s]).max())
        drifts.append(np.ptp(r.energy))
    if order == 2:
        assert 3.0 < errs[0] / errs[1] < 7.0             # O(h²) (pre-asymptotic at h = 1e-2)
        assert 3.0 < drifts[0] / drifts[1] < 5.5
    else:
        assert 12.0 < errs[0] / errs[1] < 20.0           # O(h⁴)
        assert 12.0 < drifts[0] / drifts[1] < 20.0
    assert np.ptp(fine.energy) < 1e-3 * abs(fine.energy[0])


def test_index3_on_four_bar_agrees_at_small_steps(four_bars):
    k1, k2 = four_bars
    rn = symgen.simulate(k1, scheme="trapezoidal", dt=1e-3, t_end=1.0)
    ri = symgen.simulate(k1, method="index3", scheme="trapezoidal", dt=1e-3, t_end=1.0)
    assert ri.status == "completed"
    assert np.abs(ri.x - rn.x).max() < 1e-3
    assert ri.pos_err.max() < 1e-10
    # redundant constraints: minimum-norm least-squares Newton steps, the same motion
    rd = symgen.simulate(k2, method="index3", scheme="trapezoidal", dt=1e-3, t_end=1.0)
    assert rd.status == "completed"
    assert np.abs(rd.x - ri.x).max() < 1e-11
    rh = symgen.simulate(k1, method="index3", scheme="hht:-0.1", dt=1e-3, t_end=1.0)
    assert rh.status == "completed"
    assert np.abs(rh.x - rn.x).max() < 2e-3
    assert rh.meta["scheme"]["hht_alpha"] == -0.1


# -- rheonomic ----------------------------------------------------------------------------------
@pytest.mark.parametrize("step", [{"preset": "paper"}, {}], ids=["paper", "default"])
def test_driven_crank_rheonomic(crank, step):
    ref = sm.driven_crank_reference(2.0)
    errs = []
    for h in (2e-3, 1e-3):
        r = symgen.simulate(crank, scheme="trapezoidal", dt=h, t_end=2.0, **step)
        assert r.status == "completed"
        assert r.pos_err.max() < 1e-14 and r.vel_err.max() < 1e-12 and r.acc_err.max() < 1e-12
        assert np.abs(r.coord("th1") - 2.0 * r.t).max() < 1e-13        # the driver, exactly
        errs.append(np.abs(r.output("phi") - ref.sol(r.t)[0]).max())
        assert r.newton_iters[1:].max() <= 4
    assert errs[1] < 5e-6
    if step:        # the paper's step: O(h²) against SciPy (the default's error, ~1e-11, sits
        assert 3.5 < errs[0] / errs[1] < 4.5        # near the reference's rtol: no order read)
    assert np.ptp(r.output("phi")) > 0.5                                # it really swings


def test_zero_dof_driven_crank():
    """A crank with the driver and no pendulum: k = 0, the motion is pure kinematics."""
    import sympy as sp

    (x1, y1, th1), _ = symgen.coordinates("x1 y1 th1")
    R, Om = 0.5, 2.0
    q = [x1 - R / 2 * sp.cos(th1), y1 - R / 2 * sp.sin(th1), th1 - Om * symgen.t]
    mdl = symgen.Model("crank0", [x1, y1, th1], sp.diag(1, 1, 0.02), [0, -9.81, 0], q=q,
                       x0=[R / 2, 0, 0], xd0=[0, R / 2 * Om, Om])
    k = symgen.LambdifyKernels(mdl)
    r = symgen.simulate(k, method="nullspace", scheme="fox-goodwin", dt=0.05, t_end=1.0,
                        estimate=True)
    assert r.status == "completed"
    assert np.abs(r.coord("x1") - R / 2 * np.cos(Om * r.t)).max() < 1e-13
    assert np.abs(r.xdd[:, 1] + R / 2 * Om**2 * np.sin(Om * r.t)).max() < 1e-12
    assert np.all(r.omega_max == 0.0) and np.all(np.isinf(r.h_max))


# -- minimal-coordinate references --------------------------------------------------------------
@pytest.fixture(scope="module")
def minimal():
    return symgen.build(sm.minimal_pendulum())


def test_central_differences_stable_at_06_unstable_at_07(minimal):
    ok = symgen.simulate(minimal, method="central-difference", dt=0.6, t_end=60.0)
    bad = symgen.simulate(minimal, method="central-difference", dt=0.7, t_end=0.7 * 86,
                          divergence_bound=10.0)
    assert ok.status == "completed" and np.abs(ok.x).max() < 0.02
    assert bad.status == "diverged" and "divergence bound" in bad.reason
    th = np.abs(bad.x[:, 0])
    growth = math.exp(np.polyfit(np.arange(4, 10), np.log(th[4:10]), 1)[0])
    assert 2.0 < growth < 2.7                       # linear theory: ≈ 2.38 per step at ωh = 2.19
    assert bad.meta["scheme"]["beta"] == 0.0


def test_nullspace_on_unconstrained_model_is_newmark(minimal):
    """The paper's step without constraints is Newmark (the default corrected step is the
    two-point Hermite rule there: tests/test_fourth_order.py)."""
    r1 = symgen.simulate(minimal, method="nullspace", scheme="fox-goodwin", dt=0.1, t_end=20.0,
                         preset="paper")
    r2 = symgen.simulate(minimal, method="newmark", scheme="fox-goodwin", dt=0.1, t_end=20.0)
    assert np.abs(r1.x - r2.x).max() < 1e-14
    assert np.abs(r1.omega_max - math.sqrt(9.8)).max() < 1e-3


def test_trapezoidal_minimal_energy_and_hht_damping(minimal):
    free = dict(params={"T0": 0.0}, x0=[1.0], dt=0.05, t_end=50.0)
    r = symgen.simulate(minimal, method="newmark", scheme="trapezoidal", **free)
    assert np.ptp(r.energy) < 1e-3 * abs(r.energy[0])
    rh = symgen.simulate(minimal, method="newmark", scheme="hht:-0.3", **free)
    e0 = rh.energy[0] + 9.8                      # energy above the bottom
    assert rh.energy[-1] + 9.8 < 0.995 * e0       # HHT-α dissipates


# -- linear algebra -----------------------------------------------------------------------------
def test_linearization_particular_solutions_satisfy_linearized_constraints(four_bars):
    _, k2 = four_bars
    rng = np.random.default_rng(3)
    x0 = sm.four_bar_state(0.7) + 1e-3 * rng.normal(size=9)
    xd0, xdd0 = rng.normal(size=9), rng.normal(size=9)
    q, H, qd, Hd, qdd, Hdd = [a.copy() for a in k2.constraints(0.3, x0, xd0, xdd0)]
    lin = Linearization(9, 10)
    k = lin.factor(H)
    assert (lin.rank, k) == (8, 1)
    assert np.allclose(lin.N.T @ lin.N, np.eye(k)) and np.abs(H @ lin.N).max() < 1e-13
    lin.particular(q, qd, qdd, H, Hd, Hdd, xd0, xdd0)
    a, ad, add = rng.normal(size=(3, k))
    x = x0 + lin.dx_p + lin.N @ a
    xd = lin.xd_p + lin.N @ ad + lin.Xd_p @ a
    xdd = lin.xdd_p + lin.Xdd_p1 @ a + lin.X_p2 @ ad + lin.N @ add
    # the duplicate rows make the linearized system incompatible only through the perturbation of
    # x0 (q has components outside range(H)); project the residuals onto range(H)
    P = H @ np.linalg.pinv(H)
    assert np.abs(P @ (q + H @ (x - x0))).max() < 1e-12
    assert np.abs(P @ (qd + Hd @ (x - x0) + H @ (xd - xd0))).max() < 1e-11
    assert np.abs(P @ (qdd + Hdd @ (x - x0) + 2 * Hd @ (xd - xd0) + H @ (xdd - xdd0))).max() < 1e-10
    # ẋ_p and ẍ_p are minimum norm: orthogonal to the null space
    assert np.abs(lin.N.T @ lin.xd_p).max() < 1e-12 and np.abs(lin.N.T @ lin.xdd_p).max() < 1e-12


@pytest.mark.parametrize("example, t_end, dt", [("bricard", 0.5, 1e-2),
                                                 ("double_four_bar", 1.0, 1e-2)])
def test_qr_and_svd_factorizations_give_the_same_motion(example, t_end, dt):
    """Pivoted QR of Hᵀ and the SVD of H give the same N_H-projector and H⁺, so the same discrete
    solution: Bricard (redundant: rank 23 of 24 rows), double four-bar (passes rank-2 drops)."""
    k = symgen.build(symgen.load_model(example))
    runs = {f: symgen.simulate(k, dt=dt, t_end=t_end, factorization=f) for f in ("svd", "qr")}
    for f, r in runs.items():
        assert r.status == "completed", (f, r.reason)
        assert r.meta["factorization"] == f
        assert max(r.pos_err.max(), r.vel_err.max()) < 1e-12
    np.testing.assert_allclose(runs["qr"].x, runs["svd"].x, atol=1e-9)
    np.testing.assert_allclose(runs["qr"].xd, runs["svd"].xd, atol=1e-8)
    assert runs["qr"].meta["rank_H"] == runs["svd"].meta["rank_H"]
