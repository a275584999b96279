"""The Python null-space step in the C runtime's helpers (issue 37.4; sg_nullspace.c.inc's
ns_test, ns_linearize, ns_reproject, ns_newmark_alpha, ns_recover): each helper against an
independent oracle on the same inputs (the C helpers are static inside the runtime, so cffi
cannot reach them; the whole step is compared with C in test_compiled_stepper.py), and the step
interface ``step(t, h, state) -> Outcome`` that both run loops drive without changing
``stepper.h``.

The inputs: the first Newton iteration of a step of the double four-bar (n = 6, m = 5: k = 1)
and of the slider-crank in space, from a consistent state; the oracles are numpy's least
squares, a linear solve and the Newmark relations written out.
"""
import math

import numpy as np
import pytest

import symgen
from symgen.assembly import consistent_state
from symgen.runtime_constants import CODES
from symgen.steppers import StepFailure, make_stepper
from symgen.steppers.control import Flag

H_STEP = 1e-2


@pytest.fixture(scope="module", params=["double_four_bar", "slider_crank_3d"])
def case(request):
    kern = symgen.build(symgen.load_model(request.param))
    cs = consistent_state(kern, 0.0, kern.model.x0, kern.model.xd0)
    return kern, cs


def _first_iteration(kern, cs, scheme="trapezoidal"):
    """A stepper with its predictor set for a step of H_STEP from the consistent state, and the
    constraints at the predictor (the C's step_nullspace up to ns_linearize)."""
    st = make_stepper("nullspace", kern, scheme, H_STEP, factorization="qr")
    state = (cs.x, cs.xd, cs.xdd, cs.lam)
    st._predict(*state, H_STEP)
    t1 = H_STEP
    cons = st._constraints(t1, st.x, st.xd, st.xdd)
    return st, state, t1, cons


def _dense(A):
    return A.toarray() if hasattr(A, "toarray") else np.asarray(A)


def test_linearize_gives_the_null_space_the_particular_solution_and_eq_52(case):
    kern, cs = case
    st, state, t1, cons = _first_iteration(kern, cs)
    q, H = np.asarray(cons[0]), _dense(cons[1])
    x1, xd1, xdd1, lam1 = st.x.copy(), st.xd.copy(), st.xdd.copy(), st.lam.copy()
    k, (M, f, K, C), r_R = st._linearize(t1, 0, False, cons)
    lin = st.lin
    N = lin.N
    assert k == kern.n - np.linalg.matrix_rank(H) == N.shape[1]
    # N_H: an orthonormal basis of H's null space
    np.testing.assert_allclose(N.T @ N, np.eye(k), atol=1e-13)
    assert np.abs(H @ N).max() < 1e-12 * np.abs(H).max()
    # x_p = x₁ + Δx_p solves the linearized position constraint q + H Δx_p = 0 (Eq. 33)
    np.testing.assert_allclose(H @ (st._x_p - x1), -q, atol=1e-13 * max(1.0, np.abs(x1).max()))
    # Eq. 52's right-hand side and M_R, from the dense matrices with numpy
    M, K, C = _dense(M), _dense(K), _dense(C)
    M0, f0 = (_dense(a) for a in kern.dynamics(t1, x1, xd1, xdd1, lam1)[:2])
    np.testing.assert_array_equal(M, M0)
    rhs = f0 - M0 @ lin.xdd_p - K @ lin.dx_p - C @ lin.dxd_p
    scale = np.abs(f0).max() + np.abs(M0).max() * np.abs(lin.xdd_p).max() + 1.0
    np.testing.assert_allclose(r_R, N.T @ rhs, atol=1e-12 * scale)
    np.testing.assert_allclose(lin.M_R, N.T @ M0 @ N, atol=1e-12 * np.abs(M0).max())


def test_reproject_is_the_least_squares_alpha_of_eqs_56_to_58(case):
    kern, cs = case
    st, (x, xd, xdd, _), t1, cons = _first_iteration(kern, cs)
    st._linearize(t1, 0, False, cons)
    lin = st.lin
    a, ad, add = st._reproject(x, xd, xdd)
    lsq = lambda b: np.linalg.lstsq(lin.N, b, rcond=None)[0]      # noqa: E731
    ref_a = lsq(x - st._x_p)                                          # Eq. 56
    ref_ad = lsq(xd - lin.xd_p - lin.Xd_p @ ref_a)                    # Eq. 57
    ref_add = lsq(xdd - lin.xdd_p - lin.Xdd_p1 @ ref_a - lin.X_p2 @ ref_ad)   # Eq. 58
    for got, ref, v in ((a, ref_a, x), (ad, ref_ad, xd), (add, ref_add, xdd)):
        np.testing.assert_allclose(got, ref, atol=1e-12 * (1.0 + np.abs(v).max()))


@pytest.mark.parametrize("scheme", ["trapezoidal", "fox-goodwin", (0.6, 0.3025)])
def test_newmark_alpha_meets_newmark_and_the_reduced_equation(case, scheme):
    kern, cs = case
    st, (x, xd, xdd, _), t1, cons = _first_iteration(kern, cs, scheme)
    k, _, r_R = st._linearize(t1, 0, False, cons)
    an, adn, addn = st._reproject(x, xd, xdd)
    a, ad, add = st._newmark_alpha(t1, H_STEP, 0, k, r_R, an, adn, addn)
    lin, h = st.lin, H_STEP
    gam, bet = st.scheme.gamma, st.scheme.beta
    # the Newmark relations in α (written out) …
    np.testing.assert_allclose(a, an + h * adn + h * h * ((0.5 - bet) * addn + bet * add),
                               atol=1e-13 * (1 + np.abs(an).max()))
    np.testing.assert_allclose(ad, adn + h * ((1 - gam) * addn + gam * add),
                               atol=1e-13 * (1 + np.abs(adn).max()))
    # … and Eq. 52 at t + h: M_R α̈ + C_R α̇ + K_R α = N_Hᵀ rhs
    lhs = lin.M_R @ add + lin.C_R @ ad + lin.K_R @ a
    scale = np.abs(lin.M_R @ add).max() + np.abs(lin.K_R @ a).max() + np.abs(r_R).max()
    np.testing.assert_allclose(lhs, r_R, atol=1e-11 * scale)


def test_newmark_alpha_reports_a_singular_reduced_matrix_as_data(case):
    kern, cs = case
    st, (x, xd, xdd, _), t1, cons = _first_iteration(kern, cs)
    k, _, r_R = st._linearize(t1, 0, False, cons)
    for R in (st.lin.M_R, st.lin.C_R, st.lin.K_R):
        R[...] = 0.0                    # S = M_R + γh C_R + βh² K_R = 0
    with pytest.raises(StepFailure) as info:
        st._newmark_alpha(t1, H_STEP, 3, k, r_R, *st._reproject(x, xd, xdd))
    o = info.value.outcome
    assert (o.kind, o.t, o.h, o.iteration, o.k) == (
        CODES["SG_FAIL_SINGULAR_REDUCED"], t1, H_STEP, 3, k)
    assert o.status == "failed" and "singular reduced step matrix" in o.detail


def test_recover_maps_alpha_back_and_solves_eq_51_for_lambda(case):
    kern, cs = case
    st, (x, xd, xdd, _), t1, cons = _first_iteration(kern, cs)
    H = _dense(cons[1])
    k, dyn, r_R = st._linearize(t1, 0, False, cons)
    st.alpha, st.alpha_dot, st.alpha_ddot = st._newmark_alpha(
        t1, H_STEP, 0, k, r_R, *st._reproject(x, xd, xdd))
    old = st.x.copy(), st.xd.copy()
    st._recover(dyn)
    lin = st.lin
    a, ad, add = st.alpha, st.alpha_dot, st.alpha_ddot
    np.testing.assert_array_equal(st._x_old, old[0])
    sc = 1e-13 * (1 + np.abs(st.x).max())
    np.testing.assert_allclose(st.x, lin.N @ a + st._x_p, atol=sc)                       # Eq. 34
    np.testing.assert_allclose(st.xd, lin.N @ ad + lin.xd_p + lin.Xd_p @ a,
                               atol=1e-13 * (1 + np.abs(st.xd).max()))                     # Eq. 38
    np.testing.assert_allclose(st.xdd, lin.N @ add + lin.xdd_p + lin.Xdd_p1 @ a
                               + lin.X_p2 @ ad, atol=1e-12 * (1 + np.abs(st.xdd).max()))    # Eq. 45
    # Eq. 51: Hᵀλ = M ẍ + C(ẋ − ẋ₁) + K(x − x₁) − f, least squares (numpy's lstsq)
    M, f, K, C = (_dense(v) for v in dyn)
    rhs = M @ st.xdd + C @ (st.xd - old[1]) + K @ (st.x - old[0]) - f
    lam = np.linalg.lstsq(H.T, rhs, rcond=None)[0]
    np.testing.assert_allclose(st.lam, lam, atol=1e-9 * (1 + np.abs(lam).max()))


def test_test_accepts_a_converged_iterate_with_its_residuals(case):
    kern, cs = case
    st = make_stepper("nullspace", kern, "trapezoidal", H_STEP, factorization="qr")
    out = st.step(0.0, H_STEP, (cs.x, cs.xd, cs.xdd, cs.lam))
    assert out.ok and out.iteration >= 1 and out.t == H_STEP
    x1, xd1, xdd1 = st.x.copy(), st.xd.copy(), st.xdd.copy()
    cons = st._constraints(H_STEP, x1, xd1, xdd1)
    st.res[:] = np.nan
    done, _ = st._test(H_STEP, H_STEP, 2, 0.5, cons)       # an update within the tolerance
    assert done
    np.testing.assert_allclose(st.res, [np.linalg.norm(np.asarray(c)) for c in cons[::2]],
                               rtol=1e-12, atol=1e-300)
    # a non-finite update: the iterate is reported, as the C's SG_FAIL_NONFINITE_ITERATE
    with pytest.raises(StepFailure) as info:
        st._test(H_STEP, H_STEP, 4, math.inf, cons)
    o = info.value.outcome
    assert (o.kind, o.iteration, o.status) == (CODES["SG_FAIL_NONFINITE_ITERATE"], 4, "diverged")


def test_step_takes_h_without_changing_the_stepper(case):
    kern, cs = case
    state = (cs.x, cs.xd, cs.xdd, cs.lam)
    st = make_stepper("nullspace", kern, "trapezoidal", H_STEP, factorization="qr")
    half = st.step(0.0, H_STEP / 2, state, controlled=True)
    assert st.h == H_STEP and half.ok and half.h == H_STEP / 2 and half.t == H_STEP / 2
    x_half = st.x.copy()
    # the same try by a stepper whose own step is h/2: the same state, bit for bit
    ref = make_stepper("nullspace", kern, "trapezoidal", H_STEP / 2, factorization="qr")
    ref.step(0.0, H_STEP / 2, state)
    np.testing.assert_array_equal(x_half, ref.x)
    # a fixed step's outcome carries the flags both loops record (none on a plain step)
    out = st.step(0.0, H_STEP, state)
    assert out.ok and st.h == H_STEP and out.flags & ~(Flag.FLOOR | Flag.SUBSTEPPED) == 0


def test_a_singular_NtMN_takes_the_euclidean_projection_and_the_run_records_it(monkeypatch):
    """The error estimate's projection along M⁻¹Hᵀ needs NᵀMN; where it is singular the estimate
    is projected by N Nᵀ (the C runtime's too), and the run names that fallback in
    meta["fallbacks"] (issue 37.7)."""
    from symgen.steppers import control
    from symgen.schemes import parse_scheme

    est = control.ErrorEstimate(parse_scheme("trapezoidal"), 3, 1e-6, np.full(3, 1e-8),
                                index3=True)
    N = np.array([[1.0], [1.0], [0.0]]) / np.sqrt(2.0)
    M = np.diag([0.0, 0.0, 1.0])                            # NᵀMN = 0
    e = np.array([1.0, 2.0, 3.0])
    got, = est._project(N, M, e)
    np.testing.assert_allclose(got, N @ (N.T @ e), rtol=1e-15)    # [1.5, 1.5, 0]
    assert est.euclidean_fallbacks == 1
    got, = est._project(N, np.eye(3), e)                   # M = I: N (NᵀN)⁻¹Nᵀ e, no fallback
    np.testing.assert_allclose(got, [1.5, 1.5, 0.0], rtol=1e-15)
    assert est.euclidean_fallbacks == 1
    # a run whose every NᵀMN solve fails (the Python index-3 variable step) records it
    def singular(A, b, out):
        raise np.linalg.LinAlgError("singular")
    monkeypatch.setattr(control, "solve_small", singular)
    kern = symgen.build(symgen.load_model("double_four_bar"))
    r = symgen.simulate(kern, method="index3", scheme="hht:-0.1", dt="auto", t_end=0.05,
                        stepper="python")
    assert r.status == "completed", r.reason
    assert any("NᵀMN singular" in f for f in r.meta["fallbacks"]), r.meta["fallbacks"]


def test_a_failed_run_keeps_its_outcome_through_save_and_load(tmp_path):
    """meta["failure"] is plain data: a failed run is saved and loaded with it unchanged (Newton
    needs 2 iterations; at h = 1 s past the paper's step's stability limit, 0.78 s, no sub-steps:
    test_compiled_stepper.py's failure case)."""
    from symgen.result import load_result

    kern = symgen.build(symgen.load_model("stiff_pendulum"))
    r = symgen.simulate(kern, dt=1.0, t_end=100.0, stepper="python", max_iter=1, preset="paper")
    assert r.status == "failed"
    f = r.meta["failure"]
    assert f["kind"] == "SG_FAIL_NOT_CONVERGED" and f["iteration"] == 1 and f["h"] == 1.0
    assert 0.7 < f["h_max"] < 1.0 and f["t"] == r.t[-1] + 1.0
    r.save(tmp_path / "run.npz")
    assert load_result(tmp_path / "run.npz").meta["failure"] == f
