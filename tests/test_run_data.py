"""Model and data apart (issue 37.5): a run works on its own parameters, inputs and buffers
(``Kernels.for_run``), never on the kernels it was given.

Oracles: each threaded run against the same run made alone (the same arithmetic on the same
machine: bit-identical); the kernels' own ``p`` and ``u`` read while a run is under way and after
it; the hanging pendulum's ω² = g/L.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import symgen
from symgen.mechanics import PlanarSystem

WARM = ["stiff_pendulum"]
FIELDS = ("t", "x", "xd", "xdd", "lam", "pos_err", "newton_iters", "outputs")


@pytest.fixture(scope="module")
def pendulum(warm_build):
    warm_build(*WARM)
    return symgen.build(symgen.load_model("stiff_pendulum"))


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True) for f in FIELDS)


@pytest.mark.parametrize("stepper, steps, runs", [("compiled", 400, 24), ("python", 30, 8)])
def test_threads_share_one_kernels(pendulum, stepper, steps, runs):
    """Runs of one Kernels with different parameters at once, each equal to its run alone (the
    old simulate wrote params into the shared kernels.p: a run took its neighbour's)."""
    k = pendulum
    points = [dict(g=g, T0=T0) for g, T0 in ((9.8, 0.1), (3.0, 5.0), (20.0, 9.0), (1.0, 0.0))]
    opts = dict(stepper=stepper, dt=0.01, t_end=steps * 0.01, blas_threads=None)
    alone = [symgen.simulate(k, params=p, **opts) for p in points]
    assert not _same(alone[0], alone[1])           # the parameters matter
    jobs = [i % len(points) for i in range(runs)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: symgen.simulate(k, params=points[i], **opts), jobs))
    for i, r in zip(jobs, results):
        assert r.status == "completed"
        assert _same(r, alone[i]), points[i]
    np.testing.assert_array_equal(k.p, k.model.param_values)


def test_run_leaves_the_kernels_as_they_are(pendulum):
    """During and after a run with params= the kernels' own p is the one they had (the old
    simulate set it for the run and restored it after)."""
    k = pendulum
    before = k.p.copy()
    seen = []
    r = symgen.simulate(k, params={"g": 3.0}, stepper="python", dt=0.01, t_end=0.1,
                        progress=lambda j, n: seen.append(k.p.copy()))
    assert r.status == "completed" and seen
    for p in seen:
        np.testing.assert_array_equal(p, before)
    np.testing.assert_array_equal(k.p, before)
    # ... and the run used g = 3: the same run on kernels whose own g is 3
    k3 = k.for_run({"g": 3.0})
    assert k3.p[k.param_names.index("g")] == 3.0
    assert _same(r, symgen.simulate(k3, stepper="python", dt=0.01, t_end=0.1))


def test_set_params_is_the_base_of_a_run(pendulum):
    """Kernels.set_params (public API) still sets what a run starts from; params= goes over it."""
    k = pendulum.for_run()                         # (a copy: the fixture stays as built)
    k.set_params(g=4.0)
    opts = dict(stepper="compiled", dt=0.01, t_end=0.5)
    a = symgen.simulate(k, **opts)
    b = symgen.simulate(pendulum, params={"g": 4.0}, **opts)
    assert _same(a, b)
    c = symgen.simulate(k, params={"T0": 2.0}, **opts)
    d = symgen.simulate(pendulum, params={"g": 4.0, "T0": 2.0}, **opts)
    assert _same(c, d)
    with pytest.raises(KeyError, match="no parameter 'nope'"):
        symgen.simulate(k, params={"nope": 1.0}, **opts)


def _pendulum_with_input():
    mech = PlanarSystem("pend_run_data")
    b = mech.body("bar", mass=1.0, inertia=0.1, com=(0.5, 0), x0=(0, 0, 0.3))
    mech.revolute("ground", (0, 0), b, (0, 0))
    mech.gravity(9.81)
    mech.torque(b, mech.input("T"))
    return mech.model(settings={"dt": 1e-2, "t_end": 0.2})


def test_inputs_and_linearize_leave_the_kernels_as_they_are():
    """A run's inputs and linearize's parameters live in their own copy: the kernels' u and p
    are unchanged during and after (the old run wrote u in place)."""
    k = symgen.LambdifyKernels(_pendulum_with_input())
    k.set_inputs(T=0.25)
    seen = []
    r = symgen.simulate(k, inputs={"T": lambda t, x, xd: 1.0 + t}, stepper="python",
                        progress=lambda j, n: seen.append(k.u.copy()))
    assert r.status == "completed" and seen
    assert all(u[0] == 0.25 for u in seen) and k.u[0] == 0.25
    np.testing.assert_allclose(r.u[1:, 0], 1.0 + r.t[1:], rtol=0, atol=1e-15)  # the run's own
    lin = symgen.linearize(k, t=0.0, inputs={"T": 0.0})
    assert np.isfinite(lin.A).all() and k.u[0] == 0.25


def test_linearize_with_params_leaves_the_kernels_as_they_are(pendulum):
    """linearize(params=) works on its own copy: the hanging pendulum's ω² = g/L with the
    parameters given, the kernels' p unchanged."""
    before = pendulum.p.copy()
    x0 = np.array([0.0, -1.0, 0.0])
    for g in (9.8, 3.0):
        lin = symgen.linearize(pendulum, t=0.0, x=x0, xd=np.zeros(3), params={"g": g, "T0": 0.0})
        w2 = -np.linalg.eigvals(lin.A)[np.argmax(np.abs(np.linalg.eigvals(lin.A)))] ** 2
        np.testing.assert_allclose(w2.real, g / 1.0, rtol=1e-8)
    np.testing.assert_array_equal(pendulum.p, before)
