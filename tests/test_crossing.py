"""A fixed step whose grid point is itself a singular configuration (issue 21): no step can end
there (Newton, and the sub-steps that take a failed step, fail at the end point), so the step is
crossed — sub-steps to one step past it, the row from the interpolant of the sub-step across it,
projected on the constraints (nullspace.py "Crossings").  Before, the run failed there
(`symgen simulate n_four_bar --param N=40 --dt 1e-3 --t-end 300` at t = 213.134 s).

The double four-bar passes θ = 0 (bars horizontal, H loses rank by 2) at t ≈ 0.714 s.  A secant
on h puts grid point K ever closer to that passage: near 1e-8 rad the step onto it cannot close
(which h does depends on round-off, so nothing below pins which runs cross: every run must
complete, hold its constraints and follow the one-dof reference as closely as a run whose grid
keeps clear of the passage).  So the two steppers are compared on a crossing forced by
construction (``cross_at``, the C runtime's ``sg_cross_at``: the step onto a named grid point is
not tried, it is crossed), where no round-off picks the path.
"""
import numpy as np
import pytest

import symgen

import oracles

#: grid points on a singular configuration: run again under another BLAS kernel
pytestmark = pytest.mark.roundoff

K = 72                                  # grid point K·h ≈ 0.714 s, the first horizontal passage


@pytest.fixture(scope="module")
def kern():
    return symgen.build(symgen.load_model("double_four_bar"))


def _b0_error(res, t_max=np.inf):
    ref, _ = oracles.four_bar_reference(2, res.t)
    B = np.array([res.output("B0.x"), res.output("B0.y")])
    return float(np.abs(B - ref[:2])[:, res.t <= t_max].max())


def _velocity_round_off(kern, res):
    """Per row, the round-off of the velocity projection: ε |ẋ| s_max/s_min of H there (the
    solve for H ẋ = −q_t amplifies round-off by H's condition; next to the passage s_min → 0)."""
    eps, out = np.finfo(float).eps, np.empty(len(res.t))
    for i in range(len(res.t)):
        H = np.asarray(kern.constraints(res.t[i], res.x[i], res.xd[i], res.xdd[i])[1])
        s = np.linalg.svd(H, compute_uv=False)
        out[i] = eps * np.linalg.norm(res.xd[i]) * s[0] / s[-1]
    return out


def _check(kern, res, bound):
    assert res.status == "completed", res.reason
    assert res.pos_err.max() < 1e-13                                  # (measured ≤ 2e-15)
    # ‖q̇‖ within 8x its round-off (measured ≤ 0.6x on both steppers and two BLAS kernels; up
    # to 3.7e-11 at a row on the passage, 1e-14 elsewhere)
    assert np.all(res.vel_err <= 8 * _velocity_round_off(kern, res))
    assert _b0_error(res) <= bound


@pytest.mark.parametrize("stepper", ["python", "compiled"])
def test_a_grid_point_on_a_singular_configuration_is_crossed(kern, stepper):
    # an ordinary grid (t = K·h falls between steps): the discretization error to compare with
    plain = symgen.simulate(kern, dt=1.003e-2, t_end=300 * 1.003e-2, stepper=stepper)
    assert plain.status == "completed", plain.reason
    bound_K, bound = 2.0 * _b0_error(plain, t_max=0.72), 2.0 * _b0_error(plain)
    h0, h1 = 1e-2, 1.001e-2
    th0, th1 = (symgen.simulate(kern, dt=h, t_end=K * h, stepper=stepper).coord("V0.theta")[K]
                for h in (h0, h1))
    for _ in range(10):                  # θ(K·h) = 0: the end of step K on the passage
        h2 = h1 - th1 * (h1 - h0) / (th1 - th0)
        res = symgen.simulate(kern, dt=h2, t_end=K * h2, stepper=stepper)
        _check(kern, res, bound_K)
        th2 = res.coord("V0.theta")[K]
        if th2 == th1:
            break
        h0, th0, h1, th1 = h1, th1, h2, th2
    # on, through the passages of the next 2.3 s (landings, sub-steps)
    _check(kern, symgen.simulate(kern, dt=h1, t_end=300 * h1, stepper=stepper), bound)


#: the start's relative perturbations of the round-off spread (docs/testing.md)
SPREAD = (1e-15, -1e-15, 2e-15)


def _forced(kern, monkeypatch, stepper, T, h, t_end, eps=0.0):
    """A run whose grid point T is crossed by construction: the step onto it is not tried, its
    crossing is (NullspaceStepper.cross_at, the C runtime's sg_cross_at)."""
    from symgen.steppers.compiled import CompiledStepper
    from symgen.steppers.nullspace import NullspaceStepper

    with monkeypatch.context() as mp:
        for cls in (NullspaceStepper, CompiledStepper):
            mp.setattr(cls, "cross_at", T - 0.5 * h)       # inside the step onto T
        x0, xd0 = np.array(kern.model.x0), np.array(kern.model.xd0)
        res = symgen.simulate(kern, dt=h, t_end=t_end, stepper=stepper, x0=x0 * (1 + eps),
                              xd0=xd0 * (1 + eps))
    assert res.status == "completed" and res.meta["stepper"] == stepper, res.reason
    return res


@pytest.mark.roundoff
@pytest.mark.parametrize("K", [40, 72])     # a plain grid point; the one next to the passage
def test_both_steppers_cross_a_forced_grid_point_alike(kern, monkeypatch, K):
    """Issue 37's done-when, the crossing compared between the steppers, by construction: grid
    point K is crossed on both (no step or sub-step rescue is tried first, so no round-off picks
    the path).  The C run equals the Python run, row by row, within either stepper's spread over
    starts perturbed by 1e-15 … 2e-15, times 4 — at the interpolated row K, the state one step
    past it (row K + 1, the crossing's sub-steps' end) and every row after (measured, the largest
    ratio to the spread over x, ẋ, ẍ, λ: K = 40: 0.03 at row K, 0.09 at K + 1, 0.30 at any row;
    K = 72: 0.84, 0.59, 1.13 at a row before the passage, where round-off grows alike on both
    steppers and the spread of three starts is a small sample); the crossed run follows the
    exact motion as closely as the run that steps onto K (measured: the same to 4 %, K = 40:
    2.7e-9 m, K = 72 (0.72 s, 6 ms after the passage): 7.2e-8 m)."""
    h, t_end = 1e-2, (K + 10) * 1e-2
    runs = {(st, e): _forced(kern, monkeypatch, st, K * h, h, t_end, e)
            for st in ("python", "compiled") for e in (0.0, *SPREAD)}
    for (st, e), res in runs.items():
        assert res.meta["crossed_steps"] == 1, (st, e)
        assert res.meta["crossed_times"] == [res.t[K]] == [K * h], (st, e)
        assert res.pos_err[K] < 1e-13 and res.vel_err[K] < 1e-11, (st, e)   # projected
    c, p = runs["compiled", 0.0], runs["python", 0.0]
    np.testing.assert_array_equal(c.t, p.t)
    for field in ("x", "xd", "xdd", "lam"):     # per row, the largest difference of a component
        spread = np.max([np.abs(getattr(runs[st, e], field) - getattr(runs[st, 0.0], field))
                         .max(axis=1) for st in ("python", "compiled") for e in SPREAD], axis=0)
        diff = np.abs(getattr(c, field) - getattr(p, field)).max(axis=1)
        floor = 8 * np.finfo(float).eps * (1 + np.abs(getattr(p, field)).max(axis=1))
        bad = np.flatnonzero(diff > 4 * spread + floor)
        assert bad.size == 0, (field, bad, diff[bad], spread[bad])
    # the exact motion (the one-dof reference): as close as a run stepping onto K
    plain = symgen.simulate(kern, dt=h, t_end=t_end, stepper="python")
    assert plain.meta["crossed_steps"] == 0
    bound = 2.0 * _b0_error(plain)
    for res in (c, p):
        assert _b0_error(res) <= bound
