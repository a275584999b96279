"""Property: any planar chain built with PlanarSystem ends, through derive and simulate, in a
Result (any status) or a named ModelError/ValueError, never another exception (issue 8).

Hypothesis draws chains of 1–4 bodies hanging from the ground, each joined to the previous
body's tip by a revolute or a prismatic joint, with random lengths and masses (zero inertia,
zero mass and zero length included), an axis that may be degenerate, optional gravity, random
initial angles (optionally off the constraints) and angular velocities, and a few random
steps (up to 1 s each, so that some runs fail or diverge).  The kernels are
LambdifyKernels (no compile per example); a run that stops keeps finite data."""
import math
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

import symgen  # noqa: E402
from symgen.mechanics import PlanarSystem  # noqa: E402

STATUSES = {"completed", "failed", "diverged", "interrupted"}


def _sometimes(edge, usual):
    """The edge case in about one draw of six, else the usual values."""
    return st.one_of(edge, *[usual] * 5)


lengths = _sometimes(st.just(0.0), st.floats(0.05, 2.0))
masses = _sometimes(st.just(0.0), st.floats(1e-3, 10.0))
inertias = st.one_of(st.just(0.0), st.floats(1e-4, 1.0))     # zero inertia: a point mass
axes = st.sampled_from([(1, 0), (0, 1), (1, 1), (0.6, -0.8), (0, 0)])
links = st.fixed_dictionaries({
    "joint": st.sampled_from(["revolute", "prismatic"]),
    "L": lengths, "mass": masses, "inertia": inertias, "axis": axes,
    "theta": st.floats(-math.pi, math.pi), "slide": st.floats(-1.0, 1.0),
    "omega": st.floats(-20.0, 20.0),          # θ̇0 of a revolute joint's body
})
chains = st.fixed_dictionaries({
    "links": st.lists(links, min_size=1, max_size=4),
    "gravity": st.one_of(st.none(), st.floats(0.0, 20.0)),
    "violation": _sometimes(st.floats(1e-6, 0.5), st.just(0.0)),   # x0 off the constraints
    "method": st.sampled_from(["nullspace", "index3"]),
    "scheme": st.sampled_from(["fox-goodwin", "trapezoidal"]),
    "dt": st.floats(1e-4, 1.0),
    "steps": st.integers(1, 15),
})


# one body sliding on the ground along a zero axis: before the fix the model silently had no
# sliding-line row (the body flew free); now the builder names the zero axis
ZERO_AXIS = {"links": [{"joint": "prismatic", "L": 1.0, "mass": 1.0, "inertia": 0.1,
                        "axis": (0, 0), "theta": 0.3, "slide": 0.5, "omega": 0.0}],
             "gravity": 9.81, "violation": 0.0, "method": "nullspace", "scheme": "fox-goodwin",
             "dt": 0.01, "steps": 3}


def _perp(v):
    return np.array([-v[1], v[0]])


def chain_model(spec) -> symgen.Model:
    """The chain of ``spec``: body i's reference point is its base, its tip is (L_i, 0); the
    initial velocities satisfy the velocity constraints (a prismatic joint does not slide at t0
    and turns its body with the previous one)."""
    mech = PlanarSystem("chain")
    prev, tip, tip_v, prev_theta, prev_omega = "ground", np.zeros(2), np.zeros(2), 0.0, 0.0
    for i, ln in enumerate(spec["links"]):
        th, base, base_v, omega = ln["theta"], tip.copy(), tip_v.copy(), ln["omega"]
        if ln["joint"] == "prismatic":
            omega = prev_omega
            ax = np.array(ln["axis"], float)
            nrm = np.hypot(*ax)
            if nrm > 0:               # slide along the axis, rotated with the previous body
                c, s = math.cos(prev_theta), math.sin(prev_theta)
                base += ln["slide"] * np.array([c * ax[0] - s * ax[1], s * ax[0] + c * ax[1]]) / nrm
                base_v += prev_omega * _perp(base - tip)
        body = mech.body(f"b{i}", mass=ln["mass"], inertia=ln["inertia"], com=(ln["L"] / 2, 0),
                         points={"tip": (ln["L"], 0)},
                         x0=(base[0] + spec["violation"], base[1], th),
                         v0=(base_v[0], base_v[1], omega))
        prev_point = "tip" if prev != "ground" else (0, 0)
        if ln["joint"] == "revolute":
            mech.revolute(prev, prev_point, body, (0, 0))
        else:
            mech.prismatic(prev, prev_point, body, (0, 0), axis=ln["axis"])
        prev, prev_theta, prev_omega = body, th, omega
        arm = ln["L"] * np.array([math.cos(th), math.sin(th)])
        tip, tip_v = base + arm, base_v + omega * _perp(arm)
    if spec["gravity"] is not None:
        mech.gravity(spec["gravity"])
    return mech.model()


def run(spec):
    """(model, Result), or (None, the ModelError/ValueError the input deserves)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = chain_model(spec)
            kernels = symgen.LambdifyKernels(model)
            return model, symgen.simulate(kernels, method=spec["method"], scheme=spec["scheme"],
                                          dt=spec["dt"], t_end=spec["dt"] * spec["steps"])
        except np.linalg.LinAlgError:      # a ValueError too, but an internal failure, not input
            raise
        except ValueError as exc:          # symgen.ModelError is a ValueError
            return None, exc


# derandomized: the same examples on every machine and run (explore more with max_examples=500)
@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(chains)
@example(ZERO_AXIS)                     # was: the joint silently lost its sliding-line row
def test_random_planar_chain_ends_in_a_result_or_a_named_error(spec):
    model, out = run(spec)
    if isinstance(out, ValueError):
        assert str(out).strip(), f"{type(out).__name__} without a message"
        if any(ln["joint"] == "prismatic" and ln["axis"] == (0, 0) for ln in spec["links"]):
            assert "zero length" in str(out), out
        return
    # every revolute and every prismatic joint is two constraint rows, none silently dropped
    assert model.m == 2 * len(spec["links"]) and model.n == 3 * len(spec["links"])
    assert isinstance(out, symgen.Result)
    assert out.status in STATUSES, out.status
    assert out.status == "completed" or out.reason
    k = out.n_steps
    assert len(out.t) == len(out.x) == k + 1 and 0 <= k <= spec["steps"]
    assert np.isfinite(out.x).all() and np.isfinite(out.xd).all() and np.isfinite(out.lam).all()
