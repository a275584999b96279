"""The N four-bar at N = 40 (243 coordinates): it builds, compiles and runs (issue 4 §5)."""
import importlib
import time

import numpy as np

import symgen

import oracles


def test_n_four_bar_40_runs_and_follows_the_parallelogram_ode():
    mdl = importlib.import_module("symgen.examples.n_four_bar").model(N=40)
    assert (mdl.n, mdl.m) == (243, 242)
    kern = symgen.build(mdl)
    t0 = time.perf_counter()
    res = symgen.simulate(kern, dt=1e-2, t_end=0.1)
    assert res.status == "completed", res.reason
    assert res.pos_err.max() < 1e-12 and res.vel_err.max() < 1e-11
    B_ref, _ = oracles.four_bar_reference(40, res.t)
    B = np.array([res.output(f"B0.{k}") for k in ("x", "y", "vx", "vy")])
    assert np.abs(B - B_ref).max() < 1e-4
    assert abs(res.energy[-1] - oracles.four_bar_energy(40)) < 0.05
    assert time.perf_counter() - t0 < 60
