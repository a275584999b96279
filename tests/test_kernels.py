"""Compiled kernels against sympy.lambdify, and derived Jacobians against finite differences."""
import numpy as np
import pytest

import symgen
from pipeline_models import MODELS


def _kernels(model):
    """The compiled kernels alone (``runtime=False``): the same generated C as in a module with
    the steppers' runtime (one translation unit, jit.build), at a quarter of the compile time;
    the runtime's modules are compared with the Python steppers in test_compiled_stepper."""
    return symgen.build(model, runtime=False)


@pytest.fixture(scope="module", params=sorted(MODELS))
def pair(request):
    model = MODELS[request.param]()
    return _kernels(model), symgen.LambdifyKernels(model)


def _random_state(rng, k):
    n, m = k.n, k.m
    return (rng.uniform(-2, 2), rng.uniform(0.5, 1.5, n) * rng.choice([-1, 1], n),
            rng.normal(size=n), rng.normal(size=n), rng.normal(size=m))


def _close(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale)


def test_compiled_equals_lambdify(pair):
    ck, lk = pair
    rng = np.random.default_rng(1)
    for _ in range(20):
        t, x, xd, xdd, lam = _random_state(rng, ck)
        for a, b in zip(ck.dynamics(t, x, xd, xdd, lam), lk.dynamics(t, x, xd, xdd, lam)):
            _close(a, b)
        for a, b in zip(ck.constraints(t, x, xd, xdd), lk.constraints(t, x, xd, xdd)):
            _close(a, b)
        _close(ck.energy(t, x, xd), lk.energy(t, x, xd))
        _close(ck.outputs(t, x, xd), lk.outputs(t, x, xd))
        _close(ck.dynamics_t(t, x, xd, lam), lk.dynamics_t(t, x, xd, lam))
    assert ck.f_t_is_zero == lk.f_t_is_zero


def test_parameters_change_without_rebuild(pair):
    ck, lk = pair
    name = ck.param_names[0]
    old = ck.params()[name]
    rng = np.random.default_rng(2)
    t, x, xd, xdd, lam = _random_state(rng, ck)
    try:
        for k in (ck, lk):
            k.set_params(**{name: 1.7 * old + 0.3})
        for a, b in zip(ck.dynamics(t, x, xd, xdd, lam), lk.dynamics(t, x, xd, xdd, lam)):
            _close(a, b)
    finally:
        for k in (ck, lk):
            k.set_params(**{name: old})
    with pytest.raises(KeyError, match="no parameter 'nope'"):
        ck.set_params(nope=1.0)


def _fd(fun, x0, h=1e-6):
    """Central differences of a vector function: columns are ∂fun/∂x_j."""
    x0 = np.array(x0, float)
    cols = []
    for j in range(x0.size):
        e = np.zeros_like(x0)
        e[j] = h * max(1.0, abs(x0[j]))
        cols.append((np.array(fun(x0 + e)) - np.array(fun(x0 - e))) / (2 * e[j]))
    return np.array(cols).T


def test_jacobians_match_finite_differences(pair):
    ck, _ = pair
    rng = np.random.default_rng(3)
    for _ in range(5):
        t, x, xd, xdd, lam = _random_state(rng, ck)
        con = [a.copy() for a in ck.constraints(t, x, xd, xdd)]
        H, H_dot, H_ddot = con[1], con[3], con[5]
        K, C = [a.copy() for a in ck.dynamics(t, x, xd, xdd, lam)[2:]]

        def q(xx): return ck.constraints(t, xx, xd, xdd)[0].copy()
        def q_dot(xx): return ck.constraints(t, xx, xd, xdd)[2].copy()
        def q_ddot(xx): return ck.constraints(t, xx, xd, xdd)[4].copy()

        def residual(xx):
            M, f, _, _ = ck.dynamics(t, xx, xd, xdd, lam)
            Hx = ck.constraints(t, xx, xd, xdd)[1]
            return M @ xdd - f - Hx.T @ lam

        def f_of_v(vv): return ck.dynamics(t, x, vv, xdd, lam)[1].copy()

        if ck.m:
            np.testing.assert_allclose(H, _fd(q, x), atol=1e-7)
            np.testing.assert_allclose(H_dot, _fd(q_dot, x), atol=1e-7)
            np.testing.assert_allclose(H_ddot, _fd(q_ddot, x), atol=1e-6)
            # q̇ and q̈ are the time derivatives of q along (ẋ, ẍ): check through t as well
            h = 1e-5
            qt = lambda tt: ck.constraints(tt, x + (tt - t) * xd + 0.5 * (tt - t) ** 2 * xdd, xd, xdd)[0].copy()
            np.testing.assert_allclose(ck.constraints(t, x, xd, xdd)[2].copy(),
                                       (qt(t + h) - qt(t - h)) / (2 * h), atol=1e-6)
            np.testing.assert_allclose(ck.constraints(t, x, xd, xdd)[4].copy(),
                                       (qt(t + h) - 2 * qt(t) + qt(t - h)) / h**2, atol=2e-3)
        np.testing.assert_allclose(K, _fd(residual, x), atol=1e-6)
        np.testing.assert_allclose(C, -_fd(f_of_v, xd), atol=1e-6)

        # f_t: the explicit time derivative of f + Hᵀλ at fixed x, ẋ, λ (the corrected step's jerk)
        def f_of_t(tt):
            f = ck.dynamics(tt[0], x, xd, xdd, lam)[1].copy()
            return f + ck.constraints(tt[0], x, xd, xdd)[1].T @ lam if ck.m else f
        np.testing.assert_allclose(ck.dynamics_t(t, x, xd, lam), _fd(f_of_t, [t])[:, 0],
                                   atol=1e-6)


def test_bad_input_shapes_are_named(pair):
    ck, _ = pair
    with pytest.raises(ValueError, match=r"x has 1 entries; model .* expects"):
        ck.dynamics(0.0, np.zeros(1), np.zeros(ck.n), np.zeros(ck.n), np.zeros(ck.m))


def test_reused_input_buffers_are_read_afresh(pair):
    """The compiled kernels cache the C pointer of a reused input array: in-place changes of that
    array must still reach the C, and a new array of the same values must give the same result."""
    ck, lk = pair
    rng = np.random.default_rng(4)
    t, x, xd, xdd, lam = _random_state(rng, ck)
    ck.dynamics(t, x, xd, xdd, lam)
    x += 0.25                                    # same object, new values
    xd[:] = rng.normal(size=ck.n)
    for a, b in zip(ck.dynamics(t, x, xd, xdd, lam), lk.dynamics(t, x, xd, xdd, lam)):
        _close(a, b)
    for a, b in zip(ck.dynamics(t, x.copy(), list(xd), xdd[:], lam), lk.dynamics(t, x, xd, xdd, lam)):
        _close(a, b)


def test_nonsmooth_forces_compile_and_differentiate_as_real_functions():
    """|x|, sign(ẋ), Heaviside: the symbols are real, so the derivatives are sign(x) and 0 (no
    re/im), and the C agrees with lambdify and with finite differences away from the switches."""
    import sympy as sp

    (x, y), (xd, yd) = symgen.coordinates("x y")
    k, c = sp.symbols("k c")
    model = symgen.Model(
        "nonsmooth", [x, y], sp.eye(2),
        [-k * sp.Abs(x) * x - c * sp.sign(xd), -k * y + sp.Heaviside(y) - c * sp.Abs(yd)],
        q=[x**2 + y**2 - 1], params={k: 2.0, c: 0.3})
    d = symgen.derive(model)
    assert not d.K.has(sp.re, sp.im, sp.Derivative, sp.DiracDelta)
    ck, lk = _kernels(model), symgen.LambdifyKernels(model)
    rng = np.random.default_rng(5)
    for _ in range(5):
        t, x0, xd0, xdd0, lam = _random_state(rng, ck)
        for a, b in zip(ck.dynamics(t, x0, xd0, xdd0, lam), lk.dynamics(t, x0, xd0, xdd0, lam)):
            _close(a, b)
        K, C = [a.copy() for a in ck.dynamics(t, x0, xd0, xdd0, lam)[2:]]

        def residual(xx):
            M, f, _, _ = ck.dynamics(t, xx, xd0, xdd0, lam)
            return M @ xdd0 - f - ck.constraints(t, xx, xd0, xdd0)[1].T @ lam
        # away from the switches every entry of the residual is at most quadratic in x, so the
        # central difference has no truncation error: what is left is round-off, about
        # ε·|residual|/h ≈ 1e-16·10/1e-6 = 1e-9 (measured ≤ 7e-10)
        np.testing.assert_allclose(K, _fd(residual, x0, h=1e-6), rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(C, -_fd(lambda v: ck.dynamics(t, x0, v, xdd0, lam)[1].copy(), xd0),
                                   atol=1e-6)


def test_event_kernel_equals_lambdify():
    """The events kernel (issue 36.1: g of t, x, ẋ, parameters and an input) in C against
    lambdify, at random states and after a parameter and an input change."""
    import sympy as sp

    from pipeline_models import four_bar

    base = four_bar()
    x, v = base.coords, base.velocities
    p = list(base.params)
    u = symgen.inputs("u_ev")
    events = {"cross": {"expr": sp.sin(x[0]) - p[0] * x[1] + u * symgen.t, "direction": -1},
              "speed": v[0] * v[1] - sp.cos(symgen.t) * x[2],
              "stop": {"expr": x[0] ** 2 + v[2] - 0.5, "terminal": True}}
    model = base.replace(name="four_bar_events", events=events)
    ck, lk = _kernels(model), symgen.LambdifyKernels(model)
    assert ck.event_names == lk.event_names == ("cross", "speed", "stop")
    rng = np.random.default_rng(3)
    for k in range(20):
        if k == 10:
            for kern in (ck, lk):
                kern.set_params(**{p[0].name: 2.5})
                kern.set_inputs(u_ev=-0.7)
        t, x0, xd0, _, _ = _random_state(rng, ck)
        g = ck.events(t, x0, xd0).copy()
        _close(g, lk.events(t, x0, xd0))
        assert g.shape == (3,) and np.all(np.isfinite(g))
