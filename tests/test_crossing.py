"""A fixed step whose grid point is itself a singular configuration (issue 21): no step can end
there (Newton, and the sub-steps that take a failed step, fail at the end point), so the step is
crossed — sub-steps to one step past it, the row from the interpolant of the sub-step across it,
projected on the constraints (nullspace.py "Crossings").  Before, the run failed there
(`symgen simulate n_four_bar --param N=40 --dt 1e-3 --t-end 300` at t = 213.134 s).

The double four-bar passes θ = 0 (bars horizontal, H loses rank by 2) at t ≈ 0.714 s.  A secant
on h puts grid point K ever closer to that passage: near 1e-8 rad the step onto it cannot close
(which h does depends on round-off, so nothing below pins which runs cross: every run must
complete, hold its constraints and follow the one-dof reference as closely as a run whose grid
keeps clear of the passage).
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
