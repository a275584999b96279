"""The builders' initial-state check computed without a symbolic Jacobian (issue 14): q, H = ∂q/∂x
and ∂q/∂t of ``constraint_evaluator`` (a tree walk with a complex step) against sympy's Jacobian,
and the residuals, projections and errors ``check_initial_state`` reports with them."""
import numpy as np
import pytest
import sympy as sp

import symgen
from symgen.loader import load_model
from symgen.mechanics import (InconsistentInitialStateError, InitialStateProjectionWarning,
                              MechanismError, PlanarSystem)
from symgen.mechanics._common import _colour_columns, constraint_evaluator
from symgen.model import t

RNG = np.random.default_rng(14)


def symbolic(coords, q, params):
    """(q, H, ∂q/∂t) at t = 0 from sympy's Jacobian, lambdified: the reference."""
    Q = sp.Matrix(q).xreplace(params)
    f = sp.lambdify([t, list(coords)], [Q, Q.jacobian(list(coords)), Q.diff(t)], "numpy")

    def ev(x):
        a, b, c = f(0.0, list(x))
        return (np.array(a, float).reshape(-1), np.array(b, float).reshape(len(q), -1),
                np.array(c, float).reshape(-1))
    return ev


def assert_same(new, ref, x):
    for got, want, what in zip(new(x), ref(x), ("q", "H", "q_t")):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=what)


def test_evaluator_matches_the_symbolic_jacobian_also_for_non_analytic_rows():
    # |x| (as a Piecewise), atan2 and a Piecewise in t are not complex-analytic: a complex step
    # through numpy would fail on them; those rows are differentiated symbolically
    (x, y, th), _ = symgen.coordinates(["x", "y", "th"])
    L = sp.Symbol("L")
    q = [x ** 2 + y ** 2 - L ** 2,
         sp.sin(th) * x - sp.cos(th) * y + 0.3 * t,
         sp.sqrt(1 + x ** 2) * sp.exp(y) - t ** 2 + sp.sin(2 * t),
         sp.Piecewise((x, x > 0), (-x, True)) - y / 2,
         sp.atan2(y, x) - th + sp.Piecewise((t, t > 0), (2 * t, True)),
         1 / (x * y) + sp.tan(th) ** 3 + sp.log(2 + x) + sp.Rational(1, 3) * x ** sp.Rational(3, 2)]
    labels = [f"row {i}" for i in range(len(q))]
    new = constraint_evaluator("test", [x, y, th], q, labels, {L: 1.3})
    ref = symbolic([x, y, th], q, {L: 1.3})
    for _ in range(6):
        xv = RNG.uniform(0.2, 1.5, 3) * RNG.choice([-1, 1], 3)
        xv[0] = abs(xv[0])                       # x^(3/2) is real for x > 0 only
        assert_same(new, ref, xv)
    assert_same(new, ref, np.array([0.7, -0.4, 0.2]))
    q_abs = [sp.Piecewise((x, x > 0), (-x, True)) - y / 2]
    new_abs = constraint_evaluator("test", [x, y, th], q_abs, ["abs"], {})
    assert new_abs(np.array([-0.5, 0.0, 0.0]))[1][0, 0] == -1.0


def test_a_constraint_without_numbers_is_named():
    # ∂|x|/∂x of a coordinate not declared real is a Derivative(re(x), x): no number
    (x,), _ = symgen.coordinates(["x"])
    ev = constraint_evaluator("test", [x], [sp.Abs(x) - 1], ["'stop' (x)"], {})
    with pytest.raises(MechanismError, match=r"constraint 'stop' \(x\) cannot be evaluated"):
        ev(np.array([0.5]))


@pytest.mark.parametrize("name", ["slider_crank", "andrews_squeezer", "bricard", "double_four_bar"])
def test_evaluator_matches_the_symbolic_jacobian_on_shipped_models(name):
    mdl = load_model(name)
    q = list(mdl.q)
    new = constraint_evaluator(name, mdl.coords, q, [str(i) for i in range(len(q))],
                               dict(mdl.params))
    ref = symbolic(mdl.coords, q, dict(mdl.params))
    assert_same(new, ref, np.array(mdl.x0))
    assert_same(new, ref, np.array(mdl.x0) + 0.3 * RNG.standard_normal(mdl.n))


def test_columns_of_a_row_get_different_colours_and_few_in_all():
    # the N four-bar (N = 40, 243 coordinates): a joint row touches ≤ 6 coordinates, so a handful
    # of complex-step seeds differentiates every row (not one seed per coordinate)
    mdl = load_model("n_four_bar")
    index = {c: j for j, c in enumerate(mdl.coords)}
    rows = [np.array(sorted(index[s] for s in e.free_symbols if s in index)) for e in mdl.q]
    colour = _colour_columns(rows, mdl.n)
    assert all(len(set(colour[js])) == len(js) for js in rows)
    assert colour.max() + 1 <= 12 < mdl.n


def test_a_stray_symbol_in_a_constraint_is_named():
    s = PlanarSystem("stray")
    a = s.body("arm", mass=1, inertia=0.1, points={"pivot": (-0.5, 0)}, x0=(0.5, 0, 0))
    s.revolute("ground", (0, 0), a, "pivot", drive=sp.Symbol("omega") * t, name="motor")
    with pytest.raises(MechanismError, match=r"constraint 'motor' \(drive\) depends on \['omega'\]"):
        s.model()


def crank(theta_dot):
    """An arm pinned at one end and driven at θ = w t (w = 2): consistent for θ̇ = 2."""
    s = PlanarSystem("crank")
    w = s.parameter("w", 2.0)
    a = s.body("arm", mass=1, inertia=0.1, points={"pivot": (-0.5, 0)}, x0=(0.5, 0, 0),
               v0=(0, 0.5 * theta_dot, theta_dot))
    s.revolute("ground", (0, 0), a, "pivot", drive=w * t, name="motor")
    return s


def test_velocity_violation_of_a_driven_joint_is_named_with_the_symbolic_residual():
    s = crank(0.5)                  # q̇ of the drive: θ̇ − w = −1.5 (−w is its ∂q/∂t)
    mdl = s.model(check=False)
    ref = symbolic(mdl.coords, list(mdl.q), dict(mdl.params))
    _, H, qt = ref(np.array(mdl.x0))
    qd = H @ np.array(mdl.xd0) + qt                      # q̇ = H ẋ + ∂q/∂t
    worst = int(np.argmax(np.abs(qd)))
    assert worst == 2 and abs(qd[worst]) == pytest.approx(1.5, abs=1e-12)
    with pytest.raises(InconsistentInitialStateError,
                       match=rf"velocity constraint of 'motor' \(drive\) by {abs(qd[worst]):.3g} "):
        s.model()


def test_small_velocity_violation_is_projected_as_the_symbolic_computation_does():
    s = crank(2.0 + 3e-5)
    draft = s.model(check=False)
    _, H, qt = symbolic(draft.coords, list(draft.q), dict(draft.params))(np.array(draft.x0))
    xd0 = np.array(draft.xd0)
    qd = H @ xd0 + qt
    expected = xd0 + np.linalg.lstsq(H, -qd, rcond=1e-10)[0]
    with pytest.warns(InitialStateProjectionWarning,
                      match=rf"velocity constraint of 'motor' \(drive\) by {np.max(np.abs(qd)):.3g};"):
        mdl = s.model()
    np.testing.assert_allclose(mdl.xd0, expected, rtol=0, atol=1e-12)
    assert np.max(np.abs(H @ mdl.xd0 + qt)) < 1e-12
