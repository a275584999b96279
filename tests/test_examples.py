"""The shipped examples: names, parameters, consistent initial states and the published values
they must reproduce at t = 0 (issue 4 §4–5).  Simulations are in test_examples_sim.py."""
import importlib

import numpy as np
import pytest

import symgen

import oracles

EXAMPLES = ["stiff_pendulum", "double_pendulum", "andrews_squeezer", "double_four_bar",
            "n_four_bar", "bricard", "slider_crank", "sympy_four_bar", "slider_crank_stop"]


def load(name, **kw):
    return importlib.import_module(f"symgen.examples.{name}").model(**kw)


@pytest.fixture(scope="module")
def models():
    return {name: load(name, **({"N": 3} if name == "n_four_bar" else {})) for name in EXAMPLES}


@pytest.fixture(scope="module")
def lambdified(models):
    """LambdifyKernels of an example of ``models``, derived and lambdified once for this module
    (the tests only evaluate them: none sets a parameter)."""
    made = {}

    def get(name):
        if name not in made:
            made[name] = symgen.LambdifyKernels(models[name])
        return made[name]
    return get


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_is_consistent_and_has_settings(models, lambdified, name):
    mdl = models[name]
    assert mdl.name == name
    for key in ("method", "scheme", "dt", "t_end"):
        assert key in mdl.settings
    k = lambdified(name)
    q, H, q_dot = k.constraints(0.0, mdl.x0, mdl.xd0, np.zeros(mdl.n))[:3]
    assert np.max(np.abs(q), initial=0) < 1e-13
    assert np.max(np.abs(q_dot), initial=0) < 1e-13
    # one factorization of H gives the reduced mass; it must be positive definite
    if mdl.m:
        U, s, Vt = np.linalg.svd(H)
        r = int(np.sum(s > 1e-10 * s[0]))
        N = Vt[r:].T
    else:
        N = np.eye(mdl.n)
    M = k.dynamics(0.0, mdl.x0, mdl.xd0, np.zeros(mdl.n), np.zeros(mdl.m))[0]
    if N.shape[1]:
        assert np.linalg.eigvalsh(N.T @ M @ N)[0] > 0
    T, V = k.energy(0.0, mdl.x0, mdl.xd0)
    assert np.isfinite(T) and np.isfinite(V)


def test_stiff_pendulum_spec():
    mdl = load("stiff_pendulum")
    assert mdl.param_names == ("m", "L", "g", "T0", "wbar")
    np.testing.assert_array_equal(mdl.param_values, [1.0, 1.0, 9.8, 0.1, 0.1])
    assert [c for c in mdl.coord_names if c.endswith(".theta")] == ["pendulum.theta"]
    np.testing.assert_array_equal(mdl.x0, [0.0, -1.0, 0.0])        # hanging down
    np.testing.assert_array_equal(mdl.xd0, [0.0, 0.0, 0.0])
    assert dict(mdl.settings) == dict(method="nullspace", scheme="fox-goodwin", dt=0.1,
                                      t_end=100.0)
    assert dict(zip(load("stiff_pendulum", T0=9).param_names,
                    load("stiff_pendulum", T0=9).param_values))["T0"] == 9.0
    # L overridden: x0 follows (it is an expression of L)
    np.testing.assert_allclose(load("stiff_pendulum", L=2.0).x0, [0, -2, 0])


def test_andrews_angles_and_initial_accelerations_match_test_set(models, lambdified):
    mdl = models["andrews_squeezer"]
    k = lambdified("andrews_squeezer")
    y = dict(zip(mdl.output_names, k.outputs(0.0, mdl.x0, mdl.xd0)))
    angles = np.array([y[a] for a in ("beta", "Theta", "gamma", "Phi", "delta", "Omega",
                                      "epsilon")])
    assert np.max(np.abs(angles - oracles.ANDREWS_Q0)) < 1e-12
    beta = oracles.ANDREWS_Q0[0]
    assert y["F.x"] == pytest.approx(7e-3 * np.cos(beta), abs=1e-15)
    assert y["F.y"] == pytest.approx(7e-3 * np.sin(beta), abs=1e-15)
    # index-1 solve with the body model's M, f, H: M ẍ = f + Hᵀλ, H ẍ = −(q̈ at ẍ = 0)
    n, m = mdl.n, mdl.m
    M, f = [a.copy() for a in k.dynamics(0.0, mdl.x0, mdl.xd0, np.zeros(n), np.zeros(m))[:2]]
    _, H, _, _, qdd0, _ = [a.copy() for a in k.constraints(0.0, mdl.x0, mdl.xd0, np.zeros(n))]
    sol = np.linalg.solve(np.block([[M, -H.T], [H, np.zeros((m, m))]]), np.r_[f, -qdd0])
    th = sol[:n][2::3]                                   # θ̈ of K1…K7
    acc = [th[0], th[1] - th[0], th[2], th[3] - th[4], th[4], th[5] - th[6], th[6]]
    assert acc[0] == pytest.approx(oracles.ANDREWS_QDD0_BETA, rel=1e-10)
    assert acc[1] == pytest.approx(oracles.ANDREWS_QDD0_THETA, rel=1e-10)
    assert np.max(np.abs(acc[2:])) < 1e-8
    # and the oracle reproduces the published values as well
    qdd, lam = oracles.andrews_accelerations(oracles.ANDREWS_Q0, np.zeros(7))
    assert qdd[0] == pytest.approx(oracles.ANDREWS_QDD0_BETA, rel=1e-10)
    np.testing.assert_allclose(lam[:2], oracles.ANDREWS_LAMBDA0, rtol=1e-10)


def test_four_bars_initial_B0_and_sizes(models, lambdified):
    dfb = models["double_four_bar"]
    assert (dfb.n, dfb.m) == (15, 14)
    k = lambdified("double_four_bar")
    y = dict(zip(dfb.output_names, k.outputs(0.0, dfb.x0, dfb.xd0)))
    np.testing.assert_allclose([y["B0.x"], y["B0.y"], y["B0.vx"], y["B0.vy"]], [0, 1, 1, 0],
                               atol=1e-15)
    T, V = k.energy(0.0, dfb.x0, dfb.xd0)
    assert T + V == pytest.approx(oracles.four_bar_energy(2), rel=1e-14)
    n40 = load("n_four_bar")
    assert (n40.n, n40.m) == (243, 242)
    assert n40.output_names[:4] == ("B0.x", "B0.y", "B0.vx", "B0.vy")
    assert len(n40.output_names) == 4 + 2 * 121          # each revolute's angle and its rate
    n3 = models["n_four_bar"]
    T, V = lambdified("n_four_bar").energy(0.0, n3.x0, n3.xd0)
    assert T + V == pytest.approx(oracles.four_bar_energy(3), rel=1e-14)


def test_bricard_is_redundant_with_one_dof(models, lambdified):
    mdl = models["bricard"]
    assert (mdl.n, mdl.m) == (24, 24)
    k = lambdified("bricard")
    H = k.constraints(0.0, mdl.x0, mdl.xd0, np.zeros(24))[1]
    s = np.linalg.svd(H, compute_uv=False)
    assert s[-1] < 1e-14 * s[0] and s[-2] > 0.1          # rank 23: mobility 1
    y = k.outputs(0.0, mdl.x0, mdl.xd0)
    np.testing.assert_allclose(y, [1, -0.5, 0, 0, 0, 0], atol=1e-15)
    # potential energy: five unit rods, centres at y = 0, −0.5, −1, −1, −0.5
    assert k.energy(0.0, mdl.x0, mdl.xd0)[1] == pytest.approx(-9.81 * 3.0, rel=1e-14)


def test_slider_crank_follows_its_drive(models, lambdified):
    """Solve q(x, t) = 0 and H ẋ = −∂q/∂t at t = 0.37 and compare with the closed form."""
    mdl = models["slider_crank"]
    k = lambdified("slider_crank")
    r, l, w, tt = 0.2, 0.6, 2 * np.pi, 0.37
    x = mdl.x0.copy()
    for _ in range(30):
        q, H = [a.copy() for a in k.constraints(tt, x, np.zeros(9), np.zeros(9))[:2]]
        x -= np.linalg.solve(H, q)
    q, H, q_t = [a.copy() for a in k.constraints(tt, x, np.zeros(9), np.zeros(9))[:3]]
    assert np.max(np.abs(q)) < 1e-14
    xd = np.linalg.solve(H, -q_t)                        # q̇ = H ẋ + ∂q/∂t with ẋ = 0 gives ∂q/∂t
    phi = w * tt
    root = np.sqrt(l ** 2 - (r * np.sin(phi)) ** 2)
    xB = r * np.cos(phi) + root
    vB = -r * w * np.sin(phi) - r ** 2 * w * np.sin(phi) * np.cos(phi) / root
    y = dict(zip(mdl.output_names, k.outputs(tt, x, xd)))
    assert y["B.x"] == pytest.approx(xB, rel=1e-13)
    assert y["B.vx"] == pytest.approx(vB, rel=1e-12)
    assert y["phi"] == pytest.approx(phi, rel=1e-14)


def test_andrews_oracle_reproduces_the_published_test_set_solution():
    """The 7-angle oracle itself against the Test Set's published angles at t = 0.03 (RADAU5,
    tight tolerances; the same numbers symgen.reproduce quotes)."""
    from symgen.reproduce import ANDREWS_REF, ANDREWS_REF_T
    q, _ = oracles.andrews_reference(np.array([0.0, ANDREWS_REF_T]))
    np.testing.assert_allclose(q[:, -1], ANDREWS_REF, rtol=0, atol=5e-9)
    assert np.max(np.abs(oracles.andrews_constraints(q[:, -1]))) < 1e-12
