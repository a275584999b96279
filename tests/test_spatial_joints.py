"""Spatial prismatic and universal joints and custom rows against analytic and minimal-coordinate
oracles (issue 22), their refusals, and the spatial slider-crank's accuracy with the null-space
step's two metrics (docs/spatial-accuracy.md)."""
import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

import symgen
from symgen.mechanics import InconsistentInitialStateError, MechanismError, SpatialSystem
from symgen.steppers.nullspace import NullspaceStepper

WARM = ("slider_crank_3d",)


def run(model, h, t_end, chart="symmetric", metric="euclidean", **kw_sim):
    """simulate() with the Python stepper (on lambdified kernels for a Model) and the given
    metric of the null-space step (the C runtime's is checked against it in
    test_mass_metric_c.py)."""
    kern = model if not isinstance(model, symgen.Model) else symgen.LambdifyKernels(model)
    return symgen.simulate(kern, dt=h, t_end=t_end, chart=chart, stepper="python",
                           metric=metric, **kw_sim)


def max_rows(model, r):
    k = symgen.LambdifyKernels(model)
    return max(np.abs(k.constraints(t, x, xd, np.zeros(model.n))[0]).max()
               for t, x, xd in zip(r.t, r.x, r.xd))


# -- prismatic ------------------------------------------------------------------------------------
def _block_on_incline(v0=0.4):
    """A brick (point P, unit vectors u, w, n) sliding on the ground line through O along d."""
    d = np.array([1.0, 2.0, 2.0]) / 3.0
    u = d
    w = np.cross(d, [0, 0, 1.0])
    w /= np.linalg.norm(w)
    n = np.cross(u, w)
    s = SpatialSystem("incline")
    s.ground_point("O", (0, 0, 0))
    P0 = 0.5 * d
    s.point("P", P0, velocity=v0 * d)
    s.vector("u", u)
    s.vector("w", w)
    s.vector("n", n)
    s.body("block", mass=2.0, inertia=(0.1, 0.2, 0.3), com=P0, points=["P"],
           vectors=["u", "w", "n"])
    s.prismatic("ground", "O", "block", "P", axis=tuple(d), name="slide")
    s.gravity(9.81, direction=(0, 0, -1))
    return s, d, P0


def test_prismatic_block_slides_with_constant_acceleration():
    s, d, P0 = _block_on_incline()
    mdl = s.model()
    assert (mdl.n, mdl.m) == (12, 11)               # 6 rigid rows + 2 line + 3 rotation rows
    r = run(mdl, 1e-2, 1.0)
    a = -9.81 * d[2]                                 # g·d along the line
    s_exact = 0.5 + 0.4 * r.t + 0.5 * a * r.t ** 2
    P = r.x[:, 0:3]
    # trapezoidal Newmark integrates a constant acceleration exactly
    assert np.abs(P - np.outer(s_exact, d)).max() < 1e-12
    assert np.abs(r.x[:, 3:6] - d).max() < 1e-12    # the block does not turn
    assert max_rows(mdl, r) < 1e-13


def test_prismatic_refuses_a_point_off_its_axis_and_an_axis_off_the_span():
    s, d, P0 = _block_on_incline()
    s.ground_point("Q", (0, 0, 1))
    s.prismatic("ground", "Q", "block", "P", axis=tuple(d), name="crooked")
    with pytest.raises(MechanismError, match="'crooked'.*off the axis"):
        s.model()
    s2 = SpatialSystem("span")
    s2.ground_point("O", (0, 0, 0))
    s2.point("A", (1, 0, 0))
    s2.point("B", (2, 0, 0))
    s2.body("rod", mass=1, inertia=0, com=(1.5, 0, 0), points=["A", "B"])
    s2.point("C", (2, 1, 0))
    s2.body("c", mass=1, inertia=0, com=(2, 1, 0), points=["C"])
    s2.prismatic("rod", "B", "c", "C", axis=(0, 1, 0), name="side")
    with pytest.raises(MechanismError, match="'side'.*off the span of body 'rod'"):
        s2.model()


def test_prismatic_on_a_turning_rod_matches_minimal_coordinates():
    """A bead block slides along a rod that turns freely about the ground z axis (the joint's
    axis moves: its rows are quadratic).  Minimal coordinates (θ, s), no gravity:
    (I + m s²) θ̈ = −2 m s ṡ θ̇,  s̈ = s θ̇²,  I = I_rod + I_block (about z)."""
    m_r, m, I_b, w0, s0, v0 = 1.5, 0.5, 0.01, 2.0, 0.3, 0.1
    sy = SpatialSystem("bead")
    sy.ground_point("O", (0, 0, 0))
    sy.ground_vector("ez", (0, 0, 1))
    sy.point("R", (1, 0, 0), velocity=(0, w0, 0))
    sy.vector("ry", (0, 1, 0), velocity=(-w0, 0, 0))
    sy.point("P", (s0, 0, 0), velocity=(v0, w0 * s0, 0))
    sy.vector("bu", (1, 0, 0), velocity=(0, w0, 0))
    sy.body("rod", mass=m_r, inertia=(0, m_r / 12, m_r / 12), com=(0.5, 0, 0),
            points=["O", "R"], vectors=["ez", "ry"])
    sy.body("block", mass=m, inertia=(0, I_b, I_b), com=(s0, 0, 0), points=["P"], vectors=["bu"])
    sy.prismatic("rod", "O", "block", "P", axis=(1, 0, 0), name="slot")
    mdl = sy.model()
    I = m_r / 3 + I_b

    def rhs(_t, y):
        th, w, s_, v = y
        return [w, -2 * m * s_ * v * w / (I + m * s_ * s_), v, s_ * w * w]

    r = run(mdl, 1e-3, 1.0)
    sol = solve_ivp(rhs, (0, 1.0), [0, w0, s0, v0], t_eval=r.t, rtol=1e-12, atol=1e-12,
                    method="DOP853")
    th, s_ = sol.y[0], sol.y[2]
    P_ref = np.stack([s_ * np.cos(th), s_ * np.sin(th), 0 * th], axis=1)
    iP = [mdl.coords.index(sp.Symbol(f"P.{c}")) for c in "xyz"]
    ibu = [mdl.coords.index(sp.Symbol(f"bu.{c}")) for c in "xyz"]
    assert np.abs(r.x[:, iP] - P_ref).max() < 2e-6                   # measured 7.4e-7 (O(h²))
    assert np.abs(r.x[:, ibu] - P_ref / s_[:, None]).max() < 6e-7     # turns with the rod: 2e-7
    assert max_rows(mdl, r) < 1e-13


# -- universal --------------------------------------------------------------------------------
BETA = 0.5                     # angle between the shafts


def _hooke(w0=3.0, s_in=0.2, s_out=0.05, w_out=None):
    """Two shafts on ground pivots at O (axes a = x and b in the x-y plane at BETA) joined by a
    universal joint whose cross arms are the input arm p (⟂ a) and the output arm r (⟂ b); each
    shaft is a thin bar along its arm (second moment s)."""
    a = np.array([1.0, 0.0, 0.0])
    b = np.array([np.cos(BETA), np.sin(BETA), 0.0])
    s = SpatialSystem("hooke")
    s.ground_point("O", (0, 0, 0))
    s.ground_vector("a", a)
    s.ground_vector("b", b)
    p0, r0 = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
    s.vector("p", p0, velocity=np.cross(w0 * a, p0))
    if w_out is None:
        w_out = w0 / np.cos(BETA)                    # input arm in the shafts' plane
    s.vector("r", r0, velocity=np.cross(w_out * b, r0))
    s.body("shaft1", mass=1.0, inertia=np.diag([s_in, 0, s_in]).tolist(), com=(0, 0, 0),
           points=["O"], vectors=["a", "p"])
    s.body("shaft2", mass=1.0, inertia=np.diag([s_out, s_out, 0]).tolist(), com=(0, 0, 0),
           points=["O"], vectors=["b", "r"])
    s.universal("shaft1", "O", "p", "shaft2", "O", "r", name="cross")
    return s, a, b, w0, s_in, s_out


def _theta2(theta1, b):
    """Output angle (minimal coordinates): r ∥ b × p(θ₁), measured from z about b."""
    p = np.array([0.0, np.cos(theta1), np.sin(theta1)])
    r = np.cross(b, p)
    r /= np.linalg.norm(r)
    e1, e2 = np.array([0.0, 0.0, 1.0]), np.cross(b, [0.0, 0.0, 1.0])
    return np.arctan2(r @ e2, r @ e1)


def test_universal_joint_transmits_as_hooke_minimal_coordinates():
    s, a, b, w0, s_in, s_out = _hooke()
    mdl = s.model()
    assert (mdl.n, mdl.m) == (6, 5)

    cb = np.cos(BETA)

    def rhs(_t, y):              # L = ½(s_in + s_out ρ(θ)²) θ̇², tan θ₂ = tan θ / cos β
        th, w = y
        c, s_ = np.cos(th), np.sin(th)
        D = cb * cb * c * c + s_ * s_
        rho = cb / D                                             # dθ₂/dθ
        drho = -2 * cb * s_ * c * (1 - cb * cb) / (D * D)
        return [w, -s_out * rho * drho * w ** 2 / (s_in + s_out * rho ** 2)]

    h, T = 1e-3, 1.0
    r = run(mdl, h, T)
    sol = solve_ivp(rhs, (0, T), [0.0, w0], t_eval=r.t, rtol=1e-12, atol=1e-12, method="DOP853")
    th2 = np.array([_theta2(th, b) for th in sol.y[0]])           # the output arm too
    r_ref = np.stack([np.sin(BETA) * np.sin(th2), -np.cos(BETA) * np.sin(th2), np.cos(th2)], 1)
    assert np.abs(r.x[:, 3:6] - r_ref).max() < 5e-6
    p_ref = np.stack([np.zeros_like(sol.t), np.cos(sol.y[0]), np.sin(sol.y[0])], axis=1)
    assert np.abs(r.x[:, 0:3] - p_ref).max() < 5e-6       # O(h²) phase error: 1.5e-6 over 1 s
    assert max_rows(mdl, r) < 1e-13
    # and halving h divides the error by ~4 (second order)
    r2 = run(mdl, h / 2, T)
    e1 = np.abs(r.x[-1, 0:3] - p_ref[-1]).max()
    e2 = np.abs(r2.x[-1, 0:3] - p_ref[-1]).max()
    assert 3.0 < e1 / e2 < 5.0


def test_universal_refuses_parallel_axes_and_checks_velocities():
    s, *_ = _hooke()
    s.vector("q", (0, 1, 0))
    s.point("Q", (0, 0, 1))
    s.body("third", mass=1, inertia=0, com=(0, 0, 1), points=["O", "Q"], vectors=["q"])
    s.universal("shaft1", "O", "p", "third", "O", "q", name="bad")
    with pytest.raises(MechanismError, match="'bad'.*parallel"):
        s.model()
    # the output shaft at rest while the input turns: the cross's velocity row is violated
    s2, *_ = _hooke(w_out=0.0)
    with pytest.raises(InconsistentInitialStateError, match="'cross'"):
        s2.model()


def test_custom_constraint_row_holds_a_point_on_a_sphere():
    s = SpatialSystem("custom")
    s.point("P", (1.0, 0, 0), velocity=(0, 1.0, 0))
    s.body("bob", mass=1.0, inertia=0, com=(1.0, 0, 0), points=["P"])
    X, Y, Z = sp.symbols("P.x P.y P.z")
    s.constraint((X ** 2 + Y ** 2 + Z ** 2 - 1) / 2, name="sphere")
    mdl = s.model()
    assert mdl.m == 1
    r = run(mdl, 2 * np.pi / 6000, 2 * np.pi)       # a great circle at unit speed
    assert np.abs(r.x[:, 0] - np.cos(r.t)).max() < 2e-6   # phase error h²t/12 ≈ 6e-7
    s2 = SpatialSystem("stray")
    s2.point("P", (1.0, 0, 0))
    s2.body("bob", mass=1.0, inertia=0, com=(1.0, 0, 0), points=["P"])
    s2.constraint(sp.Symbol("Q.x") - 1, name="typo")
    with pytest.raises(MechanismError, match="'typo'.*Q.x"):
        s2.model()


# -- the spatial slider-crank (examples/slider_crank_3d.py) ------------------------------------
@pytest.fixture(scope="module")
def crank3d():
    from symgen.examples import slider_crank_3d
    mdl = slider_crank_3d.model()
    k = symgen.build(mdl)
    # reference x(1): compiled, the paper's Euclidean metric, Richardson from h = 4e-5 and 2e-5
    # (within 1.9e-11 of the one from 2e-5 and 1e-5, which Exudyn 1.13.6 at h = 1e-5 meets to
    # 6e-10; docs/spatial-accuracy.md)
    x = [symgen.simulate(k, dt=h, t_end=1.0, chart="symmetric", metric="euclidean")
         .output("slider.C.x")[-1] for h in (4e-5, 2e-5)]
    return mdl, k, x[1] + (x[1] - x[0]) / 3


def test_slider_crank_3d_mass_metric_fourth_order_and_below_exudyn(crank3d):
    mdl, k, x_ref = crank3d
    err = {}
    for metric in ("euclidean", "mass"):
        for h in (1e-3, 5e-4):
            r = run(k, h, 1.0, metric=metric)
            err[metric, h] = abs(r.output("slider.C.x")[-1] - x_ref)
            assert r.pos_err.max() < 1e-13 and r.vel_err.max() < 1e-12   # rows at round-off
    # the M-orthogonal metric with the symmetric chart's reaction correction: fourth order on
    # this model (constant M, gravity; h⁴ predicts 16), and at h = 1e-3 far below
    # generalized-α's 2.07e-5 (Exudyn 1.13.6, ρ∞ = 0.5, same mechanism; docs/spatial-accuracy.md)
    assert err["mass", 1e-3] < 0.1 * 2.07e-5
    assert 12.0 < err["mass", 1e-3] / err["mass", 5e-4] < 20.0
    # the Euclidean metric's error is ~1000× larger at the same h (the finding)
    assert err["euclidean", 1e-3] > 500 * err["mass", 1e-3]


#: the symmetric chart's mean energy drift (J/s) with the mass metric before the reaction
#: correction (docs/spatial-accuracy.md: slider-crank, h = 2e-3 and 1e-3, over 20 s; ∝ h²)
DRIFT_BEFORE = {2e-3: 1.67e-4, 1e-3: 4.24e-5}


def test_slider_crank_3d_energy_has_no_secular_drift(crank3d):
    """Conservation of energy over 20 s (the compiled step; test_mass_metric_c.py checks it is
    the Python one): the mean drift (mean of E − E(0) over the last second minus that over the
    first, per second) is below 5 % of the uncorrected step's (measured 0.3 % and 1.1 %), what is
    left falls as h⁴ (the correction's residue; measured ratio 15.7), and max|E − E(0)| stays
    within 5e-5 J at h = 1e-3 (measured 1.4e-5; 1.7e-3 before; E(0) = 0.716 J).  Round-off adds
    ~1e-12 J/s."""
    _, k, _ = crank3d
    slope, worst = {}, {}
    for h in (2e-3, 1e-3):
        r = symgen.simulate(k, dt=h, t_end=20.0, chart="symmetric", metric="mass",
                            stepper="compiled")
        E, t = r.energy - r.energy[0], r.t
        slope[h] = (E[t >= 19.0].mean() - E[t <= 1.0].mean()) / 19.0
        worst[h] = np.abs(E).max()
        assert abs(slope[h]) < 0.05 * DRIFT_BEFORE[h], h
    assert 10.0 < slope[2e-3] / slope[1e-3] < 25.0
    assert worst[1e-3] < 5e-5


def test_unknown_metric_is_refused(crank3d):
    from symgen.schemes import parse_scheme
    with pytest.raises(ValueError, match="unknown metric 'riemann'.*euclidean, mass"):
        NullspaceStepper(crank3d[1], parse_scheme("trapezoidal"), 1e-3, metric="riemann")


def test_reaction_correction_makes_beta_drop_out(crank3d):
    """With M constant and gravity the only applied force, x⃛ on the tangent space is the
    reaction's alone, so the corrected relations cancel β's terms to O(h⁵): trapezoidal
    (β = ¼) and Fox–Goodwin (β = 1/12) give the same motion up to a small fraction of its error
    (measured 2e-5 of it at h = 2e-3)."""
    _, k, x_ref = crank3d
    x = {s: run(k, 2e-3, 1.0, metric="mass", scheme=s).output("slider.C.x")[-1]
         for s in ("trapezoidal", "fox-goodwin")}
    err = abs(x["trapezoidal"] - x_ref)
    assert abs(x["trapezoidal"] - x["fox-goodwin"]) < 1e-3 * err


def test_energy_balance_of_the_step(crank3d):
    """The step's exact energy balance (docs/spatial-accuracy.md): ΔE = h/4(ẋ₀+ẋ₁)ᵀ(H₀ᵀλ₀ +
    H₁ᵀλ₁) + ½(ẋ₀+ẋ₁)ᵀM R_v − fᵀ(R_x − h/2 R_v).  The Euclidean metric's drift is the middle term;
    the mass metric removes it, and the reaction correction the last (gravity on the position
    residual: 7.8e-5 J over 2 s without it); every term then stays below 5 % of that (measured
    1.1e-6 J at most)."""
    mdl, k, _ = crank3d
    M = np.array(mdl.M, float)
    h = 1e-3
    terms = {}
    for metric in ("euclidean", "mass"):
        r = run(k, h, 2.0, metric=metric)
        X, V, A, L = r.x, r.xd, r.xdd, r.lam
        f = np.array(k.dynamics(0.0, X[0], V[0], A[0], L[0])[1])     # gravity: constant
        H = [np.array(k.constraints(t, x, v, a)[1]) for t, x, v, a in zip(r.t, X, V, A)]
        tot = np.zeros(4)
        for i in range(len(r.t) - 1):
            v = V[i] + V[i + 1]
            Rx = X[i + 1] - X[i] - h * V[i] - h * h / 4 * (A[i] + A[i + 1])
            Rv = V[i + 1] - V[i] - h / 2 * (A[i] + A[i + 1])
            tot += (r.energy[i + 1] - r.energy[i],
                    h / 4 * v @ (H[i].T @ L[i] + H[i + 1].T @ L[i + 1]), 0.5 * v @ M @ Rv,
                    -f @ (Rx - h / 2 * Rv))
        assert abs(tot[1:].sum() - tot[0]) < 1e-12                  # the identity holds
        terms[metric] = tot
    eu, ma = terms["euclidean"], terms["mass"]
    assert abs(eu[2]) > 0.9 * abs(eu[0])            # Euclidean: the drift is the M R_v term
    assert np.abs(ma).max() < 0.05 * 7.8e-5         # mass metric, corrected: every term small


def test_mass_metric_is_the_same_step_with_every_factorization(crank3d):
    """N_sᵀM R = 0 does not depend on which basis of the null space a factorization gives."""
    _, k, _ = crank3d
    for chart in ("end", "symmetric"):
        xs = [run(k, 1e-3, 0.3, chart=chart, metric="mass", factorization=f).x
              for f in ("qr", "svd", "sparse")]
        assert max(np.abs(x - xs[0]).max() for x in xs) < 1e-9      # measured ≤ 3e-13 over 1 s


# -- initial velocities by body (issue 22 §2) -------------------------------------------------------
def _spinning_rod(by_body: bool, w=(0.0, 0.0, 4.0), conflicting=False):
    """A rod A–B (A fixed at the origin, B at (0.5, 0, 0)) turning about z through A, with a unit
    vector u across it: velocities per element, or from the body's angular velocity."""
    s = SpatialSystem("spin")
    w = np.array(w)
    B, u = np.array([0.5, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    s.ground_point("A", (0, 0, 0))
    s.ground_vector("ez", (0, 0, 1))
    if by_body:
        s.point("B", B, velocity=(0, 9, 0) if conflicting else None)
        s.vector("u", u)
    else:
        s.point("B", B, velocity=np.cross(w, B))
        s.vector("u", u, velocity=np.cross(w, u))
    com = B / 2
    kw = dict(velocity=np.cross(w, com), angular_velocity=w) if by_body else {}
    s.body("rod", mass=3.0, inertia=(0.01, 0.0625, 0.0625), com=com, points=["A", "B"],
           vectors=["u", "ez"], **kw)
    return s


def test_a_body_velocity_gives_its_points_and_vectors_velocities():
    by_elem, by_body = _spinning_rod(False).model(), _spinning_rod(True).model()
    np.testing.assert_allclose(by_body.xd0, by_elem.xd0, atol=1e-15)
    # oracle: ½ ωᵀ I_A ω of a rod about its end (I_A,zz = 0.0625 + m (L/2)² = 0.25)
    k = symgen.LambdifyKernels(by_body)
    M = k.dynamics(0.0, by_body.x0, by_body.xd0, np.zeros(by_body.n),
                   np.zeros(by_body.m))[0]
    assert 0.5 * by_body.xd0 @ M @ by_body.xd0 == pytest.approx(0.5 * 0.25 * 16.0, rel=1e-12)


def test_a_body_velocity_that_contradicts_a_given_one_or_a_fixed_element_is_refused():
    with pytest.raises(MechanismError, match="body 'rod'.*point 'B'.*its velocity is given"):
        _spinning_rod(True, conflicting=True)
    with pytest.raises(MechanismError, match="body 'rod'.*vector 'ez'.*it is fixed"):
        _spinning_rod(True, w=(4.0, 0.0, 0.0))       # turning about x would move the fixed ez
