"""Joint coordinates as outputs and joint actuators of the planar builder (issue 35).

Oracles: closed forms (a block sliding down a frictionless incline, two free blocks pushed apart
by a motor on the prismatic joint between them, a rotor PD-driven toward a moving angle), a
minimal-coordinate ``solve_ivp`` solution of a pendulum under a clipped PD servo, the coordinates'
own differences, and the energy balance E − E(0) − W_ext.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

import symgen
from symgen.kernels import LambdifyKernels
from symgen.mechanics import DuplicateNameError, PlanarSystem, UnknownElementError
from symgen.summary import energy_balance

G = 9.81


def _incline(alpha=0.4, s0=0.2):
    """A block on a frictionless incline of angle α through the origin (axis (cos α, −sin α))."""
    s = PlanarSystem("incline")
    e = (math.cos(alpha), -math.sin(alpha))
    block = s.body("block", mass=2.0, inertia=0.1, x0=(s0 * e[0], s0 * e[1], 0))
    s.prismatic("ground", (0, 0), block, (0, 0), axis=e, name="guide")
    s.gravity(G)
    return s


def test_prismatic_displacement_and_rate_are_those_of_a_block_on_an_incline():
    """s(t) = s0 + ½ g sin α t², ṡ = g sin α t."""
    alpha, s0 = 0.4, 0.2
    res = symgen.simulate(_incline(alpha, s0).model(), dt=1e-3, t_end=1.0)
    assert res.ok
    acc = G * math.sin(alpha)
    np.testing.assert_allclose(res.output("guide.displacement"), s0 + 0.5 * acc * res.t ** 2,
                               atol=1e-9)
    np.testing.assert_allclose(res.output("guide.displacement_dot"), acc * res.t, atol=1e-9)
    assert res.meta["units"]["outputs"]["guide.displacement"] == "m"


def _double_pendulum(**model_kw):
    s = PlanarSystem("dp")
    a = s.body("a", mass=1.0, inertia=0.05, points={"O": (0, 0.5), "A": (0, -0.5)},
               x0=(0.5 * math.sin(0.7), -0.5 * math.cos(0.7), 0.7))
    b = s.body("b", mass=1.0, inertia=0.05, points={"O": (0, 0.5)},
               x0=(math.sin(0.7) + 0.5 * math.sin(-0.4), -math.cos(0.7) - 0.5 * math.cos(-0.4),
                   -0.4))
    s.revolute("ground", (0, 0), a, "O", name="shoulder")
    s.revolute(a, "A", b, "O")
    s.gravity(G)
    return s, s.model(**model_kw)


def test_revolute_angle_is_theta_b_minus_theta_a_and_its_rate_the_difference_of_rates():
    """Outputs against the coordinates, a default-named joint's output name, the units."""
    _, mdl = _double_pendulum()
    assert mdl.output_names == ("shoulder.angle", "shoulder.angle_dot", "revolute.a.b.angle",
                                "revolute.a.b.angle_dot")
    res = symgen.simulate(mdl, dt=1e-3, t_end=1.0)
    assert res.ok
    ta, tb = res.coord("a.theta"), res.coord("b.theta")
    assert np.ptp(tb - ta) > 0.5                      # the elbow moved
    np.testing.assert_allclose(res.output("revolute.a.b.angle"), tb - ta, atol=1e-14)
    np.testing.assert_allclose(res.output("shoulder.angle"), ta, atol=1e-14)
    np.testing.assert_allclose(res.output("revolute.a.b.angle_dot"),
                               res.xd[:, 5] - res.xd[:, 2], atol=1e-13)
    assert res.meta["units"]["outputs"]["shoulder.angle_dot"] == "rad/s"


def test_joint_outputs_can_be_left_out_and_a_clash_is_named():
    s, mdl = _double_pendulum(joint_outputs=False)
    assert mdl.output_names == ()
    s.output("shoulder.angle", s.bodies["a"].theta)
    with pytest.raises(DuplicateNameError, match="joint_outputs=False"):
        s.model()


# -- actuators ------------------------------------------------------------------------------------
def _servo_pendulum(L=0.8, m=1.5):
    """A point mass on a massless rod: m L² θ̈ = −m g L sin θ + E, E the clipped PD servo's."""
    s = PlanarSystem("servo_pendulum")
    kp, kd, lim = s.parameter("kp", 40.0), s.parameter("kd", 4.0), s.parameter("limit", 6.0)
    bob = s.body("bob", mass=m, inertia=0, points={"pivot": (0, L)}, x0=(0, -L, 0))
    hinge = s.revolute("ground", (0, 0), bob, "pivot", name="hinge")
    s.gravity(G)
    t = symgen.model.t
    s.servo(hinge, 1.2 * sp.sin(2 * t), kp=kp, kd=kd, limit=lim, name="arm")
    return s.model(settings=dict(dt=1e-3, t_end=3.0))


def _servo_oracle(t_eval, L=0.8, m=1.5, kp=40.0, kd=4.0, lim=6.0):
    def rhs(t, z):
        th, w = z
        E = np.clip(kp * (1.2 * np.sin(2 * t) - th) + kd * (2.4 * np.cos(2 * t) - w), -lim, lim)
        return [w, (-m * G * L * np.sin(th) + E) / (m * L * L)]
    sol = solve_ivp(rhs, (0, t_eval[-1]), [0.0, 0.0], t_eval=t_eval, rtol=1e-12, atol=1e-12,
                    method="DOP853")
    return sol.y[0]


def test_servo_pendulum_matches_a_minimal_coordinate_solution_in_and_out_of_saturation():
    mdl = _servo_pendulum()
    res = symgen.simulate(mdl)
    assert res.ok
    effort = res.output("arm.effort")
    saturated = np.abs(effort) >= 6.0 - 1e-12
    assert 0.1 < saturated.mean() < 0.9               # both phases are in the run
    th = res.coord("bob.theta")
    err = np.max(np.abs(th - _servo_oracle(res.t)))
    assert err < 1e-6, err      # h = 1e-3: 6.3e-8 measured (2.0e-3: 6.5e-7; 5e-4: 2.9e-8)
    np.testing.assert_allclose(res.output("hinge.angle"), th, atol=1e-14)
    bal = energy_balance(res)
    assert abs(bal["works"]["arm"]) > 1.0             # the servo did work …
    assert bal["max"] < 3e-5    # … and the balance closes as h² (9.5e-6, 3.8e-5 at 2h, 2.4e-6 at h/2)
    assert res.meta["units"]["outputs"]["arm.effort"] == "N·m"


def test_servo_gains_and_limit_are_parameters():
    """kp = 0 and a huge limit with kd: the effort is kd (ref_dot − θ̇), ref_dot = ∂ref/∂t."""
    mdl = _servo_pendulum()
    kern = LambdifyKernels(mdl)
    kern.set_params(kp=0.0, kd=3.0, limit=1e9)
    x = np.array([0.8 * math.sin(0.2), -0.8 * math.cos(0.2), 0.2])
    xd = np.array([0.0, 0.0, 0.5])
    y = dict(zip(kern.output_names, kern.outputs(0.3, x, xd)))
    assert y["arm.effort"] == pytest.approx(3.0 * (2.4 * math.cos(0.6) - 0.5), rel=1e-14)
    assert y["power:arm"] == pytest.approx(y["arm.effort"] * 0.5, rel=1e-14)


@pytest.mark.parametrize("kernels", ["compiled", "lambdify"])
def test_the_clip_s_derivatives_are_the_branch_s(kernels):
    """K = −∂f/∂x and C = −∂f/∂ẋ of the servo's torque (the only force on θ; λ = 0): kp and kd
    in the linear range, 0 while saturated, in the C and in lambdify."""
    mdl = _servo_pendulum()
    kern = symgen.build(mdl) if kernels == "compiled" else LambdifyKernels(mdl)
    z = np.zeros(3)
    for th, effort in ((0.15, 3.6), (1.0, -6.0)):      # 40 (0 − θ) + 4 (2.4 − 0) at t = 0
        saturated = effort == -6.0
        x = np.array([0.8 * math.sin(th), -0.8 * math.cos(th), th])
        _, f, K, C = kern.dynamics(0.0, x, z, z, np.zeros(2))
        assert f[2] == pytest.approx(effort, rel=1e-12)
        assert K[2, 2] == pytest.approx(0.0 if saturated else 40.0, abs=1e-12)
        assert C[2, 2] == pytest.approx(0.0 if saturated else 4.0, abs=1e-12)


def test_servo_reference_from_inputs():
    """ref an input: ref_dot defaults to ∂ref/∂t = 0 (the input held); or another input."""
    for with_rate in (False, True):
        s = PlanarSystem("servo_input")
        bob = s.body("bob", mass=1.0, inertia=0, points={"pivot": (0, 1.0)}, x0=(0, -1.0, 0))
        hinge = s.revolute("ground", (0, 0), bob, "pivot", name="hinge")
        r, rd = s.input("r"), s.input("rd")
        s.servo(hinge, r, kp=7.0, kd=2.0, ref_dot=rd if with_rate else None, name="arm")
        kern = LambdifyKernels(s.model())
        kern.set_inputs({"r": 0.4, **({"rd": 0.9} if with_rate else {})})
        x = np.array([math.sin(0.1), -math.cos(0.1), 0.1])
        y = dict(zip(kern.output_names, kern.outputs(0.0, x, np.array([0.0, 0.0, 0.3]))))
        want = 7.0 * (0.4 - 0.1) + 2.0 * ((0.9 if with_rate else 0.0) - 0.3)
        assert y["arm.effort"] == pytest.approx(want, rel=1e-14)


def test_motor_on_a_prismatic_joint_pushes_two_free_blocks_apart():
    """Two free blocks joined by a prismatic joint, a clipped motor force between them: the
    relative displacement is s0 + ½ F (1/m_a + 1/m_b) t², the momentum stays zero."""
    s = PlanarSystem("blocks")
    ma, mb = 2.0, 0.5
    a = s.body("a", mass=ma, inertia=0.1, x0=(0, 0, 0))
    b = s.body("b", mass=mb, inertia=0.1, x0=(0.3, 0, 0))
    guide = s.prismatic(a, (0, 0), b, (0, 0), axis=(1, 0))
    s.motor(guide, 5.0, limit=1.5, name="push")        # clipped to 1.5 N
    res = symgen.simulate(s.model(), dt=1e-2, t_end=1.0)
    assert res.ok
    F = 1.5
    np.testing.assert_allclose(res.output("prismatic.a.b.displacement"),
                               0.3 + 0.5 * F * (1 / ma + 1 / mb) * res.t ** 2, atol=1e-10)
    momentum = ma * res.xd[:, 0] + mb * res.xd[:, 3]
    assert np.max(np.abs(momentum)) < 1e-12
    np.testing.assert_allclose(res.output("push.effort"), F, rtol=1e-15)
    assert energy_balance(res)["max"] < 1e-10          # F ṡ is the kinetic energy's rate


def test_motor_on_a_revolute_joint_between_a_rotor_and_the_ground():
    """I θ̈ = clip(3 sin t, ±2) against solve_ivp."""
    s = PlanarSystem("rotor")
    rotor = s.body("rotor", mass=1.0, inertia=0.4, x0=(0, 0, 0))
    hinge = s.revolute("ground", (0, 0), rotor, (0, 0))
    s.motor(hinge, 3 * sp.sin(symgen.model.t), limit=2.0, name="drive")
    res = symgen.simulate(s.model(), dt=1e-3, t_end=3.0)
    sol = solve_ivp(lambda t, z: [z[1], np.clip(3 * np.sin(t), -2, 2) / 0.4], (0, 3), [0, 0],
                    t_eval=res.t, rtol=1e-12, atol=1e-12, method="DOP853")
    assert np.max(np.abs(res.coord("rotor.theta") - sol.y[0])) < 2e-6      # 1.5e-7 measured
    assert energy_balance(res)["max"] < 2e-5                              # 3.0e-6 of W = 29.6 J


def test_an_actuator_needs_a_joint_with_a_coordinate():
    s = _incline()
    w = s.weld("ground", (0, 0), s.bodies["block"], (0, 0))
    with pytest.raises(UnknownElementError, match="not a revolute or prismatic joint"):
        s.motor(w, 1.0)


# -- a torsional spring toward a moving angle -----------------------------------------------------
def test_torsional_spring_with_a_moving_angle_damps_the_rate_relative_to_it():
    """A rotor (I, pinned at its centre) with k, c toward angle A sin Ωt: I φ̈ + c φ̇ + k φ =
    k A sin Ωt + c A Ω cos Ωt; started on the steady state φ_p = Im(X e^{iΩt}),
    X = A (k + icΩ)/(k − IΩ² + icΩ), it stays there.  (Damping φ̇ alone gives another X.)"""
    I, k, c, A, W = 0.5, 20.0, 3.0, 0.4, 3.0
    X = A * (k + 1j * c * W) / (k - I * W * W + 1j * c * W)
    s = PlanarSystem("pd_spring")
    rotor = s.body("rotor", mass=1.0, inertia=I, x0=(0, 0, X.imag), v0=(0, 0, (1j * W * X).imag))
    s.revolute("ground", (0, 0), rotor, (0, 0))
    s.torsional_spring("ground", rotor, k, c, angle=A * sp.sin(W * symgen.model.t), name="pd")
    res = symgen.simulate(s.model(), dt=1e-3, t_end=3.0)
    exact = np.imag(X * np.exp(1j * W * res.t))
    assert np.max(np.abs(res.coord("rotor.theta") - exact)) < 1e-9   # 4e-14; damping φ̇: 0.21
    bal = energy_balance(res)                          # the moving angle's work is counted
    assert abs(bal["works"]["pd"]) > 0.01 and bal["max"] < 1e-5


# -- spatial joint coordinates --------------------------------------------------------------------
def _wrapped(phi):
    return np.angle(np.exp(1j * phi))


def test_spatial_revolute_angle_of_a_driven_crank_wraps_and_its_rate_is_the_drives():
    """A crank on the ground x axis driven θ = 2t + 0.4t² (from its start): the angle output is
    θ wrapped to (−π, π] and equals the angle of its arm A→B about x from the coordinates."""
    from symgen.mechanics import SpatialSystem
    t = symgen.model.t
    s = SpatialSystem("crank")
    s.ground_point("A", (0, 0, 0))
    s.ground_vector("ex", (1, 0, 0))
    s.point("B", (0, 0, 0.2))
    s.vector("cy", (0, 1, 0))
    s.body("crank", mass=1.0, inertia=(0.01, 1e-3, 1e-3), com=(0, 0, 0.1), points=["A", "B"],
           vectors=["ex", "cy"], angular_velocity=(2.0, 0, 0),
           velocity=np.cross((2.0, 0, 0), (0, 0, 0.1)))
    s.revolute("ground", "A", "ex", "crank", "A", "ex", drive=2 * t + 0.4 * t ** 2, name="hinge")
    res = symgen.simulate(s.model(), dt=1e-2, t_end=2.0)
    assert res.ok
    th = 2 * res.t + 0.4 * res.t ** 2
    assert th[-1] > np.pi                                # it wraps
    By, Bz = res.coord("B.y"), res.coord("B.z")
    np.testing.assert_allclose(res.output("hinge.angle"), np.arctan2(-By, Bz), atol=1e-12)
    assert np.max(np.abs(_wrapped(res.output("hinge.angle") - th))) < 1e-12
    np.testing.assert_allclose(res.output("hinge.angle_dot"), 2 + 0.8 * res.t, atol=1e-10)
    assert res.meta["units"]["outputs"]["hinge.angle"] == "rad"


def test_spatial_cylindrical_slide_and_turn_of_a_spinning_bouncing_body():
    """A body on the ground z axis (cylindrical joint), spinning at w and on a spring along z:
    s = s_eq + (s0 − s_eq) cos Ωt + (v0/Ω) sin Ωt, φ = w t (wrapped)."""
    from symgen.mechanics import SpatialSystem
    k, m, s0, v0, w = 4 * np.pi ** 2, 1.0, 0.6, 0.2, 3.0
    sy = SpatialSystem("cyl")
    sy.ground_point("O", (0, 0, 0))
    P0, com = np.array([0, 0, s0]), np.array([0.1, 0.05, s0])
    W = np.array([0, 0, w])
    sy.point("P", P0)
    for name, d in (("u", (0, 0, 1)), ("e", (1, 0, 0)), ("f", (0, 1, 0))):
        sy.vector(name, d)
    sy.body("bob", mass=m, inertia=[[0.02, 0.003, 0.001], [0.003, 0.03, 0.002],
                                    [0.001, 0.002, 0.04]],
            com=com, points=["P"], vectors=["u", "e", "f"],
            velocity=np.cross(W, com - P0) + (0, 0, v0), angular_velocity=W)
    sy.cylindrical("ground", "O", "bob", "P", axis=(0, 0, 1), name="shaft")
    sy.gravity(G, direction=(0, 0, -1))
    Pz = sy.symbols("P")[0][2]
    sy.force("bob", "P", (0, 0, -k * (Pz - 0.5)), name="spring")
    res = symgen.simulate(sy.model(), dt=1e-3, t_end=1.0)
    assert res.ok
    Om, s_eq = np.sqrt(k / m), 0.5 - m * G / k
    s_exact = s_eq + (s0 - s_eq) * np.cos(Om * res.t) + v0 / Om * np.sin(Om * res.t)
    assert np.max(np.abs(res.output("shaft.displacement") - s_exact)) < 1e-9   # 3.7e-12
    np.testing.assert_allclose(res.output("shaft.displacement"), res.coord("P.z"), atol=1e-15)
    assert np.max(np.abs(_wrapped(res.output("shaft.angle") - w * res.t))) < 1e-10  # 3.6e-13
    np.testing.assert_allclose(res.output("shaft.angle_dot"), w, atol=1e-10)


# -- spatial actuators ----------------------------------------------------------------------------
I_XX, M_CRANK, R_CRANK = 0.01, 1.0, 0.2
I_A = I_XX + M_CRANK * (R_CRANK / 2) ** 2            # about the hinge axis x


def _spatial_crank():
    """A crank on the ground x axis, centre of mass at mid-length, no gravity: I_A θ̈ = E."""
    from symgen.mechanics import SpatialSystem
    s = SpatialSystem("crank3")
    s.ground_point("A", (0, 0, 0))
    s.ground_vector("ex", (1, 0, 0))
    s.point("B", (0, 0, R_CRANK))
    s.vector("cy", (0, 1, 0))
    s.body("crank", mass=M_CRANK, inertia=(I_XX, 1e-3, 1e-3), com=(0, 0, R_CRANK / 2),
           points=["A", "B"], vectors=["ex", "cy"])
    hinge = s.revolute("ground", "A", "ex", "crank", "A", "ex", name="hinge")
    return s, hinge


def test_spatial_motor_turns_a_crank_as_its_one_dof_equation():
    """A torque clipped to 0.05 N·m: θ = 0.05 t² / (2 I_A); the work closes the balance."""
    s, hinge = _spatial_crank()
    s.motor(hinge, 0.2, limit=0.05, name="drive")
    res = symgen.simulate(s.model(), dt=1e-2, t_end=2.0)
    assert res.ok
    th = 0.05 * res.t ** 2 / (2 * I_A)
    assert th[-1] > np.pi                                # past the wrap
    # the step's error: 1.2e-6, 7.4e-8, 4.6e-9 rad at h = 2e-2, 1e-2, 5e-3 (fourth order)
    assert np.max(np.abs(_wrapped(res.output("hinge.angle") - th))) < 1e-6
    np.testing.assert_allclose(res.output("drive.effort"), 0.05, rtol=1e-15)
    bal = energy_balance(res)                            # 1.8e-8 J of W = 0.25 J
    assert bal["max"] < 1e-6 * bal["works"]["drive"]


def test_spatial_servo_on_a_crank_matches_its_one_dof_equation_in_and_out_of_saturation():
    s, hinge = _spatial_crank()
    t = symgen.model.t
    s.servo(hinge, 1.2 * sp.sin(2 * t), kp=0.5, kd=0.05, limit=0.18, name="arm")
    res = symgen.simulate(s.model(), dt=1e-3, t_end=3.0)
    assert res.ok
    saturated = np.abs(res.output("arm.effort")) >= 0.18 - 1e-12
    assert 0.1 < saturated.mean() < 0.9

    def rhs(tt, z):
        E = np.clip(0.5 * (1.2 * np.sin(2 * tt) - z[0]) + 0.05 * (2.4 * np.cos(2 * tt) - z[1]),
                    -0.18, 0.18)
        return [z[1], E / I_A]
    sol = solve_ivp(rhs, (0, 3), [0, 0], t_eval=res.t, rtol=1e-12, atol=1e-12, method="DOP853")
    # the kinks' error: 5.8e-7, 6.4e-7, 1.4e-8 rad at h = 2e-3, 1e-3, 5e-4 (17 % saturated)
    assert np.max(np.abs(res.output("hinge.angle") - sol.y[0])) < 5e-6
    assert energy_balance(res)["max"] < 3e-6           # 2.9e-7 J of W = 0.07 J


def test_spatial_motor_on_a_prismatic_joint():
    """A body sliding on the ground x axis under a force clipped to 2 N: s = s0 + t²/m."""
    from symgen.mechanics import SpatialSystem
    sy = SpatialSystem("slide3")
    sy.ground_point("O", (0, 0, 0))
    sy.point("P", (0.2, 0, 0))
    for name, d in (("u", (0, 0, 1)), ("e", (1, 0, 0)), ("f", (0, 1, 0))):
        sy.vector(name, d)
    sy.body("bob", mass=2.0, inertia=[[0.02, 0, 0], [0, 0.03, 0], [0, 0, 0.04]],
            com=(0.2, 0, 0), points=["P"], vectors=["u", "e", "f"])
    guide = sy.prismatic("ground", "O", "bob", "P", axis=(1, 0, 0))
    sy.motor(guide, 3.0, limit=2.0, name="push")
    res = symgen.simulate(sy.model(), dt=1e-2, t_end=1.0)
    assert res.ok
    np.testing.assert_allclose(res.output("prismatic.ground.bob.displacement"),
                               0.2 + res.t ** 2 / 2.0, atol=1e-12)
    assert energy_balance(res)["max"] < 1e-12


def test_torsional_spring_toward_an_input_angle_counts_its_work():
    """The spring's potential is not the state's when its angle is an input: its power
    −k(φ − u)φ̇ is declared instead, and E − E(0) − W closes (before: no work, no balance)."""
    s = PlanarSystem("input_spring")
    rotor = s.body("rotor", mass=1.0, inertia=0.5, x0=(0, 0, 0))
    s.revolute("ground", (0, 0), rotor, (0, 0))
    s.torsional_spring("ground", rotor, 20.0, angle=s.input("u"), name="spring")
    res = symgen.simulate(s.model(), dt=1e-3, t_end=1.0, inputs={"u": 0.5})
    bal = energy_balance(res)
    th = res.coord("rotor.theta")          # I θ̈ = −k(θ − u): θ = u (1 − cos ωt)
    np.testing.assert_allclose(th, 0.5 * (1 - np.cos(math.sqrt(40.0) * res.t)), atol=1e-9)
    work = res.output("work:spring")       # = the kinetic energy ½ I θ̇² (V holds nothing)
    # the work's quadrature error: 1.3e-4, 3.3e-5, 8.3e-6 J at h = 2e-3, 1e-3, 5e-4 (h²)
    assert np.max(work) > 0.5 and bal["max"] < 1e-4
    np.testing.assert_allclose(work, 0.25 * res.xd[:, 2] ** 2, atol=1e-4)
