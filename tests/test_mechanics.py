"""Builder elements against hand-derived M, f, q, V on small cases (issue 4 §5), and bad input (§6).

Symbolic comparisons use ``sp.simplify`` of differences on one-body models only; numeric ones
evaluate through LambdifyKernels at random states.
"""
import warnings

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen.mechanics import (DuplicateNameError, InconsistentInitialStateError,
                              InitialStateProjectionWarning, MechanismError, PlanarSystem,
                              SingularMassError, SpatialSystem, UnknownElementError)

RNG = np.random.default_rng(7)


def zero(expr) -> bool:
    """expr ≡ 0: exactly after expansion, or numerically at random values of its symbols."""
    expr = sp.expand(sp.sympify(expr))
    if expr == 0:
        return True
    free = sorted(expr.free_symbols, key=str)
    for _ in range(4):
        vals = {s: float(RNG.uniform(-2, 2)) for s in free}
        if abs(complex(expr.xreplace(vals).evalf())) > 1e-12:
            return False
    return True


def mat_equal(A, B) -> bool:
    A, B = sp.Matrix(A), sp.Matrix(B)
    return A.shape == B.shape and all(zero(a - b) for a, b in zip(A, B))


def syms(model, name):
    return model.coord(name), sp.Symbol(name + "_dot")


# ------------------------------------------------------------------------------------------------
# planar: one body, reference point off the centre of mass
def test_planar_body_mass_matrix_and_inertial_forces_match_lagrange():
    s = PlanarSystem("offset")
    m, I = s.parameter("m", 2.0), s.parameter("I", 0.3)
    s.body("b", mass=m, inertia=I, com=(0.4, -0.2))
    mdl = s.model(check=False)
    x, y, th = mdl.coords
    xd, yd, thd = mdl.velocities
    # hand derivation: T = ½ m |v_G|² + ½ I θ̇², r_G = p + R c
    c = sp.Matrix([0.4, -0.2])
    R = sp.Matrix([[sp.cos(th), -sp.sin(th)], [sp.sin(th), sp.cos(th)]])
    rG = sp.Matrix([x, y]) + R * c
    vG = rG.jacobian([x, y, th]) * sp.Matrix([xd, yd, thd])
    T = m * vG.dot(vG) / 2 + I * thd ** 2 / 2
    qv, qdv = [x, y, th], [xd, yd, thd]
    M_hand = sp.hessian(T, qdv)
    assert mat_equal(mdl.M, M_hand)
    # Lagrange: M q̈ − f_inertial = d/dt ∂T/∂q̇ − ∂T/∂q  ⇒  f = −(∂²T/∂q̇∂q q̇ − ∂T/∂q)
    dTdqd = sp.Matrix([sp.diff(T, v) for v in qdv])
    f_hand = -(dTdqd.jacobian(qv) * sp.Matrix(qdv) - sp.Matrix([sp.diff(T, c_) for c_ in qv]))
    assert mat_equal(mdl.f, f_hand)
    assert mdl.m == 0 and mdl.V is None


def test_planar_centred_body_has_constant_diagonal_mass():
    s = PlanarSystem("c")
    s.body("b", mass=3, inertia=0.5)
    mdl = s.model(check=False)
    assert mat_equal(mdl.M, sp.diag(3, 3, sp.Rational(1, 2)))
    assert list(mdl.f) == [0, 0, 0]


def test_stiff_pendulum_equations_are_the_papers():
    import examples.stiff_pendulum as ex
    mdl = ex.model()
    m, L, g, T0, wbar = (mdl.param(k) for k in ("m", "L", "g", "T0", "wbar"))
    x, y, th = mdl.coords
    assert mdl.M == sp.ImmutableMatrix(sp.diag(m, m, 0))
    assert mat_equal(mdl.f, [0, -m * g, T0 * sp.sin(wbar * symgen.t)])
    # Eq. 24: r_G + R r_GR − r_C = 0 with r_GR = (0, L) in body coordinates
    assert mat_equal(mdl.q, [x - L * sp.sin(th), y + L * sp.cos(th)])
    assert zero(mdl.V - m * g * y)


def _two_bodies():
    s = PlanarSystem("two")
    a = s.body("a", mass=1, inertia=0.1, points={"p": (0.5, 0.1)}, x0=(0, 0, 0))
    b = s.body("b", mass=2, inertia=0.2, points={"p": (-0.3, 0.2)}, x0=(0.8, -0.1, 0))
    return s, a, b


def _rot(th):
    return sp.Matrix([[sp.cos(th), -sp.sin(th)], [sp.sin(th), sp.cos(th)]])


def test_planar_revolute_rows():
    s, a, b = _two_bodies()
    s.revolute("a", "p", "b", "p")
    s.revolute("ground", (1, 2), "a", (0, 0))
    mdl = s.model(check=False)
    ra = sp.Matrix([a.x, a.y]) + _rot(a.theta) * sp.Matrix([0.5, 0.1])
    rb = sp.Matrix([b.x, b.y]) + _rot(b.theta) * sp.Matrix([-0.3, 0.2])
    assert mat_equal(mdl.q, list(rb - ra) + [a.x - 1, a.y - 2])


def test_planar_prismatic_weld_distance_rows():
    s, a, b = _two_bodies()
    s.prismatic("a", "p", "b", "p", axis=(3, 4), angle=0.25)
    s.weld("ground", (0, 0), "a", (0, 0), angle=0)
    s.distance("a", (0, 0), "b", (0, 0), length=2)
    mdl = s.model(check=False)
    e = _rot(a.theta) * sp.Matrix([0.6, 0.8])
    n = sp.Matrix([-e[1], e[0]])
    d = (sp.Matrix([b.x, b.y]) + _rot(b.theta) * sp.Matrix([-0.3, 0.2])
         - sp.Matrix([a.x, a.y]) - _rot(a.theta) * sp.Matrix([0.5, 0.1]))
    dc = sp.Matrix([b.x - a.x, b.y - a.y])
    hand = [n.dot(d), b.theta - a.theta - 0.25, a.x, a.y, a.theta, (dc.dot(dc) - 4) / 4]
    assert mat_equal(mdl.q, hand)


def test_planar_default_angle_and_length_come_from_x0():
    s = PlanarSystem("defaults")
    a = s.body("a", mass=1, inertia=1, x0=(0, 0, 0.3))
    b = s.body("b", mass=1, inertia=1, x0=(3, 4, 1.0))
    s.weld("ground", (0, 0), a, (0, 0))
    s.distance(a, (0, 0), b, (0, 0))
    s.prismatic(a, (0, 0), b, (0, 0), axis=(np.cos(-0.3 + np.arctan2(4, 3)),
                                              np.sin(-0.3 + np.arctan2(4, 3))))
    mdl = s.model()
    k = symgen.LambdifyKernels(mdl)
    q = k.constraints(0.0, mdl.x0, mdl.xd0, np.zeros(mdl.n))[0]
    assert np.max(np.abs(q)) < 1e-14
    # the stored constants are the initial values: move b and the rows see it
    x = mdl.x0.copy()
    x[3] += 0.1
    q = k.constraints(0.0, x, mdl.xd0, np.zeros(mdl.n))[0]
    assert q[3] == pytest.approx((3.1 ** 2 + 4 ** 2 - 25) / 10, rel=1e-12)  # (d·d − L²)/(2L)


def test_planar_driven_joints_are_rheonomic():
    s = PlanarSystem("driven")
    w = s.parameter("w", 2.0)
    a = s.body("a", mass=1, inertia=1, points={"o": (-0.5, 0)}, x0=(0.5, 0, 0), v0=(0, 1, 2))
    b = s.body("b", mass=1, inertia=1, x0=(2, 0, 0), v0=(0.5, 0, 0))
    s.driven_revolute("ground", (0, 0), a, "o", w * symgen.t)
    s.driven_prismatic("ground", (0, 0), b, (0, 0), 2 + 0.5 * sp.sin(symgen.t))
    mdl = s.model()
    d = symgen.derive(mdl)
    tt = symgen.t
    assert zero(mdl.q[2] - (a.theta - w * tt))
    assert zero(mdl.q[5] - (b.x - 2 - 0.5 * sp.sin(tt)))
    assert zero(d.q_dot[2] - (sp.Symbol("a.theta_dot") - w))
    assert zero(d.q_ddot[5] - (sp.Symbol("b.x_ddot") + 0.5 * sp.sin(tt)))


def test_planar_gravity_point_force_and_torque_by_virtual_power():
    s = PlanarSystem("forces")
    g = s.parameter("g", 9.81)
    a = s.body("a", mass=2, inertia=0.5, com=(0.1, 0.2), points={"p": (0.7, -0.3)})
    b = s.body("b", mass=1, inertia=0.1)
    F = sp.Matrix([sp.sin(symgen.t) + a.x_dot, a.theta ** 2])
    s.gravity(g)
    s.force(a, "p", F)
    s.force(a, "p", (0, 1.5), local=True)
    s.torque(a, 0.7 * a.theta_dot, reaction=b)
    mdl = s.model(check=False)
    k = symgen.LambdifyKernels(mdl)
    for _ in range(3):
        x, xd = RNG.normal(size=6), RNG.normal(size=6)
        tt = RNG.uniform(0, 3)
        f = k.dynamics(tt, x, xd, np.zeros(6), np.zeros(0))[1].copy()
        f_inertial = np.zeros(6)
        # centripetal term of the offset centre of mass (hand formula m θ̇² R c)
        c, s_ = np.cos(x[2]), np.sin(x[2])
        Rc = np.array([c * 0.1 - s_ * 0.2, s_ * 0.1 + c * 0.2])
        f_inertial[:2] = 2 * xd[2] ** 2 * Rc
        # power of the applied forces computed by hand at the points
        Rp = np.array([c * 0.7 + s_ * 0.3, s_ * 0.7 - c * 0.3])
        vp = xd[:2] + xd[2] * np.array([-Rp[1], Rp[0]])
        vG = xd[:2] + xd[2] * np.array([-Rc[1], Rc[0]])
        Fw = np.array([np.sin(tt) + xd[0], x[2] ** 2])
        Floc = np.array([-s_ * 1.5, c * 1.5])
        T = 0.7 * xd[2]
        power = (Fw + Floc) @ vp + np.array([0, -2 * 9.81]) @ vG + np.array([0, -9.81]) @ xd[3:5] \
            + T * xd[2] - T * xd[5]
        assert (f - f_inertial) @ xd == pytest.approx(power, rel=1e-12, abs=1e-12)
        Tk, V = k.energy(tt, x, xd)
        assert V == pytest.approx(9.81 * (2 * (x[1] + Rc[1]) + x[4]), rel=1e-12)


def test_planar_spring_damper_force_energy_and_dissipation():
    s = PlanarSystem("spring")
    a = s.body("a", mass=1, inertia=1, points={"p": (0.2, 0.1)})
    b = s.body("b", mass=1, inertia=1, points={"p": (-0.1, 0.3)})
    s.spring(a, "p", b, "p", k=50.0, c=3.0, length=0.4)
    s.spring("ground", (1, 1), a, (0, 0), k=7.0)            # zero free length: linear
    mdl = s.model(check=False)
    kern = symgen.LambdifyKernels(mdl)
    for _ in range(3):
        x, xd = RNG.normal(size=6), RNG.normal(size=6)
        f = kern.dynamics(0.0, x, xd, np.zeros(6), np.zeros(0))[1].copy()
        V = kern.energy(0.0, x, xd)[1]

        def pts(x):
            def rot(a):
                return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
            return x[:2] + rot(x[2]) @ [0.2, 0.1], x[3:5] + rot(x[5]) @ [-0.1, 0.3]
        ra, rb = pts(x)
        ell = np.linalg.norm(rb - ra)
        V_hand = 0.5 * 50 * (ell - 0.4) ** 2 + 0.5 * 7 * np.sum((x[:2] - 1) ** 2)
        assert V == pytest.approx(V_hand, rel=1e-12)
        # f·ẋ = −dV/dt − c ℓ̇²  (ℓ̇ by finite differences along ẋ)
        eps = 1e-6
        l_p = np.linalg.norm(np.subtract(*pts(x + eps * xd)[::-1]))
        l_m = np.linalg.norm(np.subtract(*pts(x - eps * xd)[::-1]))
        ell_dot = (l_p - l_m) / (2 * eps)
        Vp = 0.5 * 50 * (l_p - 0.4) ** 2 + 0.5 * 7 * np.sum((x[:2] + eps * xd[:2] - 1) ** 2)
        Vm = 0.5 * 50 * (l_m - 0.4) ** 2 + 0.5 * 7 * np.sum((x[:2] - eps * xd[:2] - 1) ** 2)
        assert f @ xd == pytest.approx(-(Vp - Vm) / (2 * eps) - 3.0 * ell_dot ** 2, rel=1e-7)


def test_planar_torsional_spring_damper():
    s = PlanarSystem("tors")
    a = s.body("a", mass=1, inertia=1)
    b = s.body("b", mass=1, inertia=1)
    s.torsional_spring(a, b, k=10, c=2, angle=0.3)
    s.torsional_spring("ground", a, k=5)
    mdl = s.model(check=False)
    ta, tb = a.theta, b.theta
    wa, wb = a.theta_dot, b.theta_dot
    Tb = -10 * (tb - ta - 0.3) - 2 * (wb - wa)
    assert mat_equal(mdl.f, [0, 0, -Tb - 5 * ta, 0, 0, Tb])
    assert zero(mdl.V - (5 * (tb - ta - sp.Rational(3, 10)) ** 2 + sp.Rational(5, 2) * ta ** 2))


def test_planar_point_outputs():
    s = PlanarSystem("out")
    a = s.body("a", mass=1, inertia=1, points={"tip": (1, 0)})
    s.output_point(a, "tip")
    mdl = s.model(outputs=["a.com"], check=False)
    assert mdl.output_names == ("a.tip.x", "a.tip.y", "a.tip.vx", "a.tip.vy",
                                "a.com.x", "a.com.y", "a.com.vx", "a.com.vy")
    k = symgen.LambdifyKernels(mdl)
    y = k.outputs(0.0, [1.0, 2.0, np.pi / 2], [0.5, 0.0, 2.0])
    np.testing.assert_allclose(y, [1, 3, 0.5 - 2, 0, 1, 2, 0.5, 0], atol=1e-14)


# ------------------------------------------------------------------------------------------------
# spatial
def _brick_system(extra_point):
    s = SpatialSystem("brick")
    s.point("A", (0.1, 0.2, 0.3))
    s.point("B", (1.1, 0.2, 0.3))
    pts = ["A", "B"]
    if extra_point:                   # a fourth direction: tied to the basis by 3 linear rows
        s.point("C", (0.4, 0.9, -0.2))
        pts.append("C")
    s.vector("u", (0, 1, 0))
    s.vector("w", (0, 0.6, 0.8))
    I = np.array([[0.02, 0.001, 0.0], [0.001, 0.09, 0.002], [0.0, 0.002, 0.08]])
    s.body("brick", mass=1.5, inertia=I, com=(0.5, 0.25, 0.3), points=pts, vectors=["u", "w"],
           markers={"m": (0.9, 0.2, 0.5)})
    return s, I


def _rigid_velocity(model, x0, I, com, rng):
    """Velocities of the natural coordinates for a random rigid motion (v_G, ω), and T."""
    vG, om = rng.normal(size=3), rng.normal(size=3)
    xd = np.zeros(model.n)
    names = model.coord_names
    for i in range(0, model.n, 3):
        el = names[i].split(".")[0]
        r = x0[i:i + 3]
        xd[i:i + 3] = np.cross(om, r) if el in ("u", "w") else vG + np.cross(om, r - com)
    return xd, 0.5 * 1.5 * vG @ vG + 0.5 * om @ I @ om


@pytest.mark.parametrize("extra_point", [False, True])
def test_spatial_kinetic_energy_of_rigid_motion(extra_point):
    s, I = _brick_system(extra_point)
    mdl = s.model()
    assert (mdl.n, mdl.m) == ((15, 9) if extra_point else (12, 6))
    assert not mdl.M.free_symbols
    M = np.array(mdl.M, float)
    k = symgen.LambdifyKernels(mdl)
    for _ in range(3):
        xd, T = _rigid_velocity(mdl, mdl.x0, I, np.array([0.5, 0.25, 0.3]), RNG)
        H = k.constraints(0, mdl.x0, xd, np.zeros(mdl.n))[1]
        assert np.max(np.abs(H @ xd)) < 1e-12            # rigid motion is admissible
        assert 0.5 * xd @ M @ xd == pytest.approx(T, rel=1e-12)
    # and every admissible velocity is a rigid motion: 6 degrees of freedom
    assert mdl.n - np.linalg.matrix_rank(H) == 6


def test_spatial_rod_neglects_only_axial_inertia():
    s = SpatialSystem("rod")
    s.point("A", (0, 0, 0))
    s.point("B", (2, 0, 0))
    s.body("rod", mass=3, inertia=(0, 1.0, 1.0), com=(1, 0, 0), points=["A", "B"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no neglected-inertia warning: none is lost
        mdl = s.model()
    M = np.array(mdl.M, float)
    # transverse rotation about the centre: T = ½ I ω²
    xd = np.r_[0, -1.0, 0, 0, 1.0, 0]
    assert 0.5 * xd @ M @ xd == pytest.approx(0.5 * 1.0 * 1.0, rel=1e-12)
    s2 = SpatialSystem("brickrod")
    s2.point("A", (0, 0, 0))
    s2.point("B", (2, 0, 0))
    s2.body("rod", mass=3, inertia=(0.5, 1.0, 1.0), com=(1, 0, 0), points=["A", "B"])
    with pytest.warns(UserWarning, match="'rod'.*neglected"):
        s2.model()


def test_spatial_spherical_pendulum_hand_derived():
    s = SpatialSystem("sph")
    g = s.parameter("g", 9.81)
    s.ground_point("O", (0, 0, 0))
    s.point("P", (0, -2, 0))
    s.body("bob", mass=3, inertia=0, com=(0, -2, 0), points=["O", "P"])
    s.gravity(g)
    s.force("bob", "P", (1, 2, sp.Symbol("P.z_dot")))
    mdl = s.model()
    x, y, z = mdl.coords
    assert mat_equal(mdl.M, sp.eye(3) * 3)
    assert mat_equal(mdl.f, [1, -3 * g + 2, sp.Symbol("P.z_dot")])
    assert mat_equal(mdl.q, [(x ** 2 + y ** 2 + z ** 2 - 4) / 4])
    assert zero(mdl.V - 3 * g * y)


def test_spatial_joint_helpers_equal_shared_names():
    def hinge(explicit):
        s = SpatialSystem("hinge")
        s.ground_point("O", (0, 0, 0))
        s.ground_vector("k", (0, 0, 1))
        s.point("A", (1, 0, 0))
        s.vector("v", (1, 0, 0))
        s.body("arm", mass=1, inertia=(0.01, 0.1, 0.1), com=(0.5, 0, 0), points=["O", "A"],
               vectors=["k"])
        if explicit:
            s.point("A2", (1, 0, 0))
            s.vector("k2", (0, 0, 1))
            s.body("link", mass=2, inertia=(0.02, 0.2, 0.2), com=(1, 0, 0), points=["A2"],
                   vectors=["k2", "v"], markers={"tip": (1.5, 0, 0)})
            s.revolute("arm", "A", "k", "link", "A2", "k2")
        else:
            s.body("link", mass=2, inertia=(0.02, 0.2, 0.2), com=(1, 0, 0), points=["A"],
                   vectors=["k", "v"], markers={"tip": (1.5, 0, 0)})
        s.gravity(9.81, direction=(0, 0, -1))
        return s.model()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = hinge(False), hinge(True)
    assert a.coord_names == b.coord_names
    assert a.M == b.M and a.f == b.f and a.V == b.V
    assert mat_equal(a.q, b.q)
    # hand-derived rows: arm |A − O| = 1 and (A − O)·k = 0; link k·v = 0 and |v| = 1
    Ax, Ay, Az, vx, vy, vz = a.coords
    assert mat_equal(a.q, [(Ax ** 2 + Ay ** 2 + Az ** 2 - 1) / 2, Az, vz,
                           (vx ** 2 + vy ** 2 + vz ** 2 - 1) / 2])


def test_spatial_spring_energy_and_off_span_marker():
    s = SpatialSystem("spr")
    s.ground_point("O", (0, 0, 0))
    s.point("P", (1, 0, 0))
    s.body("rod", mass=1, inertia=(0, 1 / 12, 1 / 12), com=(0.5, 0, 0), points=["O", "P"],
           markers={"m": (0.75, 0, 0)})
    s.spring("rod", "m", "rod", "P", k=0, c=0)          # degenerate: no force
    s.spring("rod", "m", "rod", (0.5, 0, 0), k=3, c=0, length=0.1)
    with pytest.raises(MechanismError, match="off the span"):
        s2 = SpatialSystem("off")
        s2.ground_point("O", (0, 0, 0))
        s2.point("P", (1, 0, 0))
        s2.body("rod", mass=1, inertia=0, com=(0.5, 0.1, 0), points=["O", "P"])
        s2.model()
    mdl = s.model()
    # the rod is rigid: the spring between two of its own points stores (0.25 − 0.1)² k / 2
    k = symgen.LambdifyKernels(mdl)
    assert k.energy(0, mdl.x0, mdl.xd0)[1] == pytest.approx(0.5 * 3 * 0.15 ** 2, rel=1e-12)


# ------------------------------------------------------------------------------------------------
# bad input (§6)
def test_unknown_body_and_point_are_named():
    s, a, b = _two_bodies()
    with pytest.raises(UnknownElementError, match="unknown body 'c'"):
        s.revolute("a", "p", "c", "p")
    with pytest.raises(UnknownElementError, match="body 'b' has no point 'q'"):
        s.revolute("a", "p", "b", "q")
    with pytest.raises(UnknownElementError, match="spring.*no point 'zz'"):
        s.spring("a", "zz", "b", "p", k=1)
    sp3 = SpatialSystem("s")
    sp3.point("P", (1, 0, 0))
    with pytest.raises(UnknownElementError, match="unknown point 'Q'"):
        sp3.body("r", mass=1, inertia=0, com=(1, 0, 0), points=["Q"])
    with pytest.raises(UnknownElementError, match="unknown body 'nope'"):
        sp3.force("nope", "P", (0, 0, 1))


def test_duplicated_names_are_refused():
    s, a, b = _two_bodies()
    with pytest.raises(DuplicateNameError, match="'a'"):
        s.body("a", mass=1, inertia=1)
    with pytest.raises(DuplicateNameError, match="point named 'p'"):
        s.bodies["a"].add_point("p", (0, 0))
    s.revolute("a", "p", "b", "p", name="J")
    with pytest.raises(DuplicateNameError, match="'J'"):
        s.weld("a", "p", "b", "p", name="J")
    s.parameter("k", 1.0)
    with pytest.raises(DuplicateNameError, match="parameter 'k'"):
        s.parameter("k", 2.0)
    s.output("o", a.x)
    with pytest.raises(DuplicateNameError, match="output 'o'"):
        s.output("o", a.y)
    sp3 = SpatialSystem("s")
    sp3.point("P", (1, 0, 0))
    with pytest.raises(DuplicateNameError, match="'P'"):
        sp3.vector("P", (1, 0, 0))


def test_singular_reduced_mass_names_the_body():
    s = PlanarSystem("massless")
    a = s.body("heavy", mass=1, inertia=0.1, points={"e": (0.5, 0)}, x0=(0.5, 0, 0))
    b = s.body("ghost", mass=0, inertia=0, points={"e": (-0.5, 0)}, x0=(1.5, 0, 0))
    s.revolute("ground", (0, 0), a, (-0.5, 0))
    s.revolute(a, "e", b, "e")
    with pytest.raises(SingularMassError, match="ghost"):
        s.model()
    # the paper's point-mass pendulum: M singular but the reduced mass is not
    import examples.stiff_pendulum as ex
    ex.model()


def test_inconsistent_initial_configuration():
    def system(dx):
        s = PlanarSystem("pend")
        s.body("bob", mass=1, inertia=0.1, points={"pivot": (0, 1)}, x0=(dx, -1, 0),
               v0=(1, 3e-4, 1))
        s.revolute("ground", (0, 0), "bob", "pivot", name="pin")
        return s
    with pytest.raises(InconsistentInitialStateError, match=r"'pin' \(x\) by 0.2"):
        system(0.2).model()
    with pytest.warns(InitialStateProjectionWarning) as rec:
        mdl = system(2e-5).model()
    msgs = [str(w.message) for w in rec]
    assert any("configuration violated constraint 'pin' (x) by 2e-05" in m for m in msgs)
    assert any("velocities violated the velocity constraint of 'pin' (y) by 0.00029" in m for m in msgs)
    k = symgen.LambdifyKernels(mdl)
    q, H, qd = k.constraints(0, mdl.x0, mdl.xd0, np.zeros(3))[:3]
    assert np.max(np.abs(q)) < 1e-14 and np.max(np.abs(qd)) < 1e-14
    # minimum-norm projection splits the 2e-5 between x and θ
    assert mdl.x0[0] == pytest.approx(1e-5, rel=1e-6) and mdl.x0[2] == pytest.approx(1e-5, rel=1e-6)
    with pytest.raises(InconsistentInitialStateError, match="pin"):
        system(2e-5).model(max_violation=1e-6)


def test_spatial_joint_must_coincide():
    s = SpatialSystem("bad")
    s.point("A", (1, 0, 0))
    s.point("B", (1, 0.5, 0))
    s.ground_point("O", (0, 0, 0))
    s.body("r1", mass=1, inertia=0, com=(0.5, 0, 0), points=["O", "A"])
    s.body("r2", mass=1, inertia=0, com=(1, 0.5, 0), points=["B"])
    s.spherical("r1", "A", "r2", "B", name="ball")
    with pytest.raises(MechanismError, match="'ball'.*do not coincide"):
        s.model()


def _spatial_four_bar():
    """Crank A–B about z, coupler B–C with ball joints, rocker D–C about x; gravity −y."""
    s = SpatialSystem("spatial_four_bar")
    s.ground_point("A", (0, 0, 0))
    s.ground_vector("uA", (0, 0, 1))
    s.ground_point("D", (2, 0, 0))
    s.ground_vector("uD", (1, 0, 0))
    B0 = np.array([0.6, 0.8, 0.0])
    C0 = np.array([2.0, np.cos(0.5), np.sin(0.5)])
    s.point("B", B0)
    s.point("C", C0)

    def rod_inertia(p, q, m):
        e = (q - p) / np.linalg.norm(q - p)
        L = np.linalg.norm(q - p)
        return m * L ** 2 / 12 * (np.eye(3) - np.outer(e, e))
    s.body("crank", mass=1, inertia=rod_inertia(np.zeros(3), B0, 1), com=B0 / 2,
           points=["A", "B"], vectors=["uA"])
    s.body("coupler", mass=2, inertia=rod_inertia(B0, C0, 2), com=(B0 + C0) / 2,
           points=["B", "C"])
    s.body("rocker", mass=1, inertia=rod_inertia(np.array([2, 0, 0]), C0, 1),
           com=(np.array([2, 0, 0]) + C0) / 2, points=["D", "C"], vectors=["uD"])
    s.gravity(9.81)
    s.output_point("coupler", "com")
    return s


def test_spatial_four_bar_conserves_energy_on_its_constraints():
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # slender bars: no inertia is neglected
        mdl = _spatial_four_bar().model()
    assert (mdl.n, mdl.m) == (6, 5)
    res = symgen.simulate(mdl, method="nullspace", scheme="fox-goodwin", dt=1e-3, t_end=2.0)
    assert res.status == "completed", res.reason
    assert res.pos_err.max() < 1e-14 and res.vel_err.max() < 1e-12
    assert np.ptp(res.output("coupler.com.y")) > 0.1          # it moves
    E = res.energy
    assert np.abs(E - E[0]).max() < 1e-4 * np.abs(res.energy_potential).max()
    # halving the step shrinks the drift about 16-fold with the default corrected step (fourth
    # order: 3.2e-9 J → 2.0e-10 J), fourfold with the paper's (Fox–Goodwin, second order)
    res2 = symgen.simulate(mdl, method="nullspace", scheme="fox-goodwin", dt=5e-4, t_end=2.0)
    d1, d2 = np.abs(E - E[0]).max(), np.abs(res2.energy - res2.energy[0]).max()
    assert 10 < d1 / d2 < 24
    p1, p2 = (symgen.simulate(mdl, method="nullspace", scheme="fox-goodwin", dt=h, t_end=2.0,
                              preset="paper").energy for h in (1e-3, 5e-4))
    assert 2.5 < np.abs(p1 - p1[0]).max() / np.abs(p2 - p2[0]).max() < 6


def test_spatial_spherical_joint_merges_points():
    s = SpatialSystem("ball")
    s.ground_point("O", (0, 0, 0))
    s.point("A", (1, 0, 0))
    s.point("B", (1, 0, 0))
    s.body("r1", mass=1, inertia=0, com=(0.5, 0, 0), points=["O", "A"])   # a point mass at ½
    s.body("r2", mass=2, inertia=0, com=(1, 0, 0), points=["B"])          # a particle at B
    s.spherical("r1", "A", "r2", "B", name="ball")
    mdl = s.model()
    assert mdl.coord_names == ("A.x", "A.y", "A.z")
    # T = ½ (1·¼ + 2) |Ȧ|²
    assert mat_equal(mdl.M, sp.eye(3) * 2.25)
    with pytest.raises(UnknownElementError, match="body 'r2' has no point 'A'"):
        s.spherical("r1", "A", "r2", "A")
