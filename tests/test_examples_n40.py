"""The N four-bar at N = 40 (243 coordinates): it builds, compiles and runs (issue 4 §5)."""
import importlib

import numpy as np
import pytest

import symgen

import oracles

#: the N four-bar at N = 40: a 20 s build and 300 s windows
pytestmark = pytest.mark.slow

#: built from the session's start by another process (conftest.py): ~20 s
WARM = ["symgen.examples.n_four_bar:model:N=40"]


def test_n_four_bar_40_runs_and_follows_the_parallelogram_ode():
    mdl = importlib.import_module("symgen.examples.n_four_bar").model(N=40)
    assert (mdl.n, mdl.m) == (243, 242)
    kern = symgen.build(mdl)
    # 4 s take the bars through several horizontal (rank −2) configurations (the first at
    # t ≈ 0.73 s), factored by the compiled sparse step ("auto" at n = 243, issue 14), whose rank
    # decision must keep 1 dof, and past t = 3.21 s, where Newton once stalled at its round-off floor
    res = symgen.simulate(kern, dt=1e-2, t_end=4.0)
    assert res.status == "completed", res.reason
    assert res.meta["stepper"] == "compiled" and res.meta["factorization"] == "sparse"
    assert res.meta["rank_H"] == [242, 242]
    assert res.pos_err.max() < 1e-12 and res.vel_err.max() < 1e-11
    B_ref, _ = oracles.four_bar_reference(40, res.t)
    B = np.array([res.output(f"B0.{k}") for k in ("x", "y", "vx", "vy")])
    early = res.t <= 0.1
    assert np.abs(B[:, early] - B_ref[:, early]).max() < 1e-4
    assert np.abs(B[:2] - B_ref[:2]).max() < 2e-2          # positions, second-order error
    assert np.abs(B[2:] - B_ref[2:]).max() < 1e-1          # velocities (phase error grows)
    assert np.abs(res.energy - oracles.four_bar_energy(40)).max() < 2.0   # of ≈ 593 J


@pytest.mark.parametrize("step", [
    {"preset": "paper"},
    pytest.param({}, marks=pytest.mark.xfail(strict=True, reason=(
        "the default step (symmetric chart, mass metric) at h = 1e-3 completes the 300 s but "
        "its energy drops by 9.36 J (1.5 %, the bound 0.62 J) in two jumps, 5.47 J at "
        "t = 182.36 s and the rest at 87.73 s, where Newton could not close a step and it was "
        "taken as sub-steps under error control; flat to 1e-7 J elsewhere; reported, bounds "
        "kept; --runxfail shows it")))],
    ids=["paper", "default"])
def test_n_four_bar_40_runs_300_s_at_a_fixed_step_and_with_auto(step):
    """Issue 21's acceptance: N = 40 over 300 s at h = 1e-3 (it failed at t = 213.134 s, where the
    grid point lies on a singular configuration to round-off and is now crossed) and with
    dt="auto": complete, constraints at round-off.  The fixed step keeps the conservative model's
    energy within 0.1 % (Fox–Goodwin, bounded oscillation; measured 0.17 J of 620 J with the
    paper's step); the variable step at rtol = 1e-4 does not conserve it (it lost 14 % over 300 s
    here: a varying h breaks the scheme's energy behaviour), so only the fixed run is held to
    it.  The fixed step with ``step``; dt="auto" with its default, the symmetric chart with the
    mass metric, in the paper-step case only (it does not depend on ``step``)."""
    kern = symgen.build(importlib.import_module("symgen.examples.n_four_bar").model(N=40))
    E0 = oracles.four_bar_energy(40)
    runs = [dict(dt=1e-3, **step)] + ([dict(dt="auto", rtol=1e-4, atol=1e-4)] if step else [])
    for kw in runs:
        res = symgen.simulate(kern, t_end=300.0, every=1000, **kw)
        assert res.status == "completed", (kw, res.reason)
        assert res.pos_err.max() < 1e-11 and res.vel_err.max() < 1e-8, kw
        if kw["dt"] != "auto":
            assert np.abs(res.energy - E0).max() < 1e-3 * E0
