"""symgen.mechanics.from_sympy: sympy.physics.mechanics descriptions as Models (issue 12 §1)."""
import numpy as np
import pytest
import sympy as sp
import sympy.physics.mechanics as me
from scipy.integrate import solve_ivp

import oracles
import symgen
from symgen import LambdifyKernels, ModelError, assemble
from symgen.mechanics import from_sympy

T = me.dynamicsymbols._t


def pendulum_on_a_cart(n, relative=False):
    """PyDy's n-link pendulum on a cart: cart q0 pushed by a specified force F(t), particles m_i
    on massless links l_i.  ``relative``: link angles relative to the previous link and speeds the
    absolute angular velocities (u ≠ q̇); otherwise absolute angles and u = q̇."""
    q, u = me.dynamicsymbols(f"q:{n + 1}"), me.dynamicsymbols(f"u:{n + 1}")
    F = me.dynamicsymbols("F")
    m, l = sp.symbols(f"m:{n + 1}"), sp.symbols(f"l:{n}")
    g = sp.Symbol("g")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P0", q[0] * N.x)
    P.set_vel(N, u[0] * N.x)
    particles = [me.Particle("Pa0", P, m[0])]
    loads = [(P, F * N.x - m[0] * g * N.y)]
    kd = [q[0].diff(T) - u[0]]
    prev = N
    for i in range(1, n + 1):
        B = prev.orientnew(f"B{i}", "Axis", [q[i], prev.z if relative else N.z])
        if relative:
            B = N.orientnew(f"B{i}", "Axis", [sum(q[1:i + 1]), N.z])
            kd.append(sum(qk.diff(T) for qk in q[1:i + 1]) - u[i])
        else:
            kd.append(q[i].diff(T) - u[i])
        B.set_ang_vel(N, u[i] * N.z)
        Pi = P.locatenew(f"P{i}", l[i - 1] * B.x)
        Pi.v2pt_theory(P, N, B)
        particles.append(me.Particle(f"Pa{i}", Pi, m[i]))
        loads.append((Pi, -m[i] * g * N.y))
        P, prev = Pi, B
    kane = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=kd)
    kane.kanes_equations(particles, loads)
    values = {g: 9.81, **{s: 1.0 + 0.1 * k for k, s in enumerate(m)},
              **{s: 0.5 + 0.1 * k for k, s in enumerate(l)}}
    return kane, q, u, F, values, O, P


FORCE = 0.5 * sp.sin(2 * T)


def sympy_reference(kane, q, u, F, values, y0, t_eval):
    """SciPy on sympy's own mass_matrix_full / forcing_full (states q, u)."""
    sub = {**values, F: FORCE}
    MM = kane.mass_matrix_full.xreplace(sub)
    FF = kane.forcing_full.xreplace(sub).doit()
    fM = sp.lambdify([T, list(q) + list(u)], MM, "numpy")
    fF = sp.lambdify([T, list(q) + list(u)], FF, "numpy")

    def rhs(tt, y):
        return np.linalg.solve(np.asarray(fM(tt, y), float), np.asarray(fF(tt, y), float).ravel())
    return solve_ivp(rhs, (0, t_eval[-1]), y0, method="DOP853", t_eval=t_eval, rtol=1e-12,
                     atol=1e-12).y


def model_trajectory(mdl, x0, xd0, t_eval):
    """SciPy on the imported Model's M ẍ = f (its lambdified kernels)."""
    k = LambdifyKernels(mdl)
    n = mdl.n

    def rhs(tt, y):
        M, f, *_ = k.dynamics(tt, y[:n], y[n:], np.zeros(n), np.zeros(0))
        return np.concatenate([y[n:], np.linalg.solve(M, f)])
    return solve_ivp(rhs, (0, t_eval[-1]), np.concatenate([x0, xd0]), method="DOP853",
                     t_eval=t_eval, rtol=1e-12, atol=1e-12).y


@pytest.mark.parametrize("relative", [False, True], ids=["u=qdot", "u!=qdot"])
def test_pendulum_on_a_cart_matches_sympys_own_equations(relative):
    n = 2
    kane, q, u, F, values, O, tip = pendulum_on_a_cart(n, relative)
    mdl = from_sympy(kane, params={**values, "F": FORCE}, outputs={"tip": tip}, origin=O)
    assert mdl.n == n + 1 and mdl.m == 0 and mdl.coord_names == ("q0", "q1", "q2")
    assert ("u = q̇" in mdl.description) != relative
    x0, xd0 = np.array([0.1, 0.4, -0.3]), np.array([0.2, -0.5, 0.7])
    # the same initial state in sympy's speeds
    u0 = xd0.copy()
    if relative:
        u0 = np.array([xd0[0], xd0[1], xd0[1] + xd0[2]])
    t_eval = np.linspace(0, 1.0, 11)
    ref = sympy_reference(kane, q, u, F, values, np.concatenate([x0, u0]), t_eval)
    got = model_trajectory(mdl, x0, xd0, t_eval)
    assert np.abs(got[:n + 1] - ref[:n + 1]).max() < 1e-8
    # and symgen's own integrator converges to it (second order)
    errs = []
    for h in (4e-3, 2e-3):
        res = symgen.simulate(LambdifyKernels(mdl.replace(x0=x0, xd0=xd0)), method="newmark",
                              scheme="trapezoidal", dt=h, t_end=1.0, estimate=False)
        assert res.status == "completed", res.reason
        errs.append(np.abs(res.x[-1] - ref[:n + 1, -1]).max())
    assert errs[1] < 1e-3 and 3.0 < errs[0] / errs[1] < 5.0


def four_bar_system(L=1.0, m=1.0):
    """The one-dof parallelogram (tests/oracles.py, N = 1) with System, pin joints along the
    open chain crank–coupler–rocker and the loop closure rocker end = (L, 0) as a holonomic
    constraint."""
    q1, q2, q3 = me.dynamicsymbols("q1:4")
    u1, u2, u3 = me.dynamicsymbols("u1:4")
    Ls, ms, g = sp.symbols("L m g")
    ground = me.RigidBody("ground")
    system = me.System.from_newtonian(ground)
    bars = []
    for nm in ("crank", "coupler", "rocker"):
        b = me.RigidBody(nm, mass=ms)
        b.inertia = (me.inertia(b.frame, 0, 0, ms * Ls ** 2 / 12), b.masscenter)
        bars.append(b)
    crank, coupler, rocker = bars
    j1 = me.PinJoint("O", ground, crank, q1, u1, child_point=-Ls / 2 * crank.frame.x,
                     joint_axis=ground.frame.z)
    j2 = me.PinJoint("A", crank, coupler, q2, u2, parent_point=Ls / 2 * crank.frame.x,
                     child_point=-Ls / 2 * coupler.frame.x, joint_axis=crank.frame.z)
    j3 = me.PinJoint("B", coupler, rocker, q3, u3, parent_point=Ls / 2 * coupler.frame.x,
                     child_point=Ls / 2 * rocker.frame.x, joint_axis=coupler.frame.z)
    system.add_joints(j1, j2, j3)
    end = rocker.masscenter.locatenew("D", -Ls / 2 * rocker.frame.x)
    loop = end.pos_from(system.fixed_point) - Ls * system.frame.x
    system.q_ind, system.q_dep = [q1], [q2, q3]
    system.u_ind, system.u_dep = [u1], [u2, u3]
    system.add_holonomic_constraints(loop.dot(system.frame.x), loop.dot(system.frame.y))
    system.apply_uniform_gravity(-g * system.frame.y)
    B0 = crank.masscenter.locatenew("B0", Ls / 2 * crank.frame.x)
    return system, (q1, q2, q3), {Ls: L, ms: m, g: 9.81}, B0


def test_four_bar_system_with_loop_closure_matches_the_parallelogram_oracle():
    system, (q1, q2, q3), values, B0 = four_bar_system()
    mdl = from_sympy(system, params=values, outputs=[B0],
                     x0={q1: np.pi / 2 + 0.01, q2: -np.pi / 2, q3: np.pi / 2 - 0.02})
    assert mdl.n == 3 and mdl.m == 2 and set(mdl.output_names) == {"B0.x", "B0.y"}
    x0, xd0 = assemble(mdl, fix={"q1": np.pi / 2}, xd_fix={"q1": -1.0})   # oracle: θ̇ = −v0/L
    assert np.allclose(x0, [np.pi / 2, -np.pi / 2, np.pi / 2], atol=1e-13)
    mdl = mdl.replace(x0=x0, xd0=xd0)
    errs = {}
    for h in (2e-3, 1e-3):
        res = symgen.simulate(LambdifyKernels(mdl), method="nullspace", scheme="trapezoidal",
                              dt=h, t_end=1.0, estimate=False)
        assert res.status == "completed", res.reason
        assert res.pos_err.max() < 1e-12
        B_ref, _ = oracles.four_bar_reference(1, res.t)
        B = np.vstack([res.output("B0.x"), res.output("B0.y")])
        errs[h] = np.abs(B - B_ref[:2]).max()
    assert errs[1e-3] < 1e-5 and 3.0 < errs[2e-3] / errs[1e-3] < 5.0


def double_pendulum_lagrange(values):
    """The shipped double pendulum (bars in (x, y, θ), θ = 0 hanging) with LagrangesMethod: the
    Lagrangian of the two bars and torsional springs, the joints as hol_coneqs, dampers as
    torques."""
    x1, y1, th1, x2, y2, th2 = me.dynamicsymbols("x1 y1 theta1 x2 y2 theta2")
    L, m, g, k, c = sp.symbols("L m g k c")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    frames, bodies = [], []
    for nm, (x, y, th) in (("bar1", (x1, y1, th1)), ("bar2", (x2, y2, th2))):
        F = N.orientnew(nm, "Axis", [th, N.z])
        G = O.locatenew(f"{nm}_G", x * N.x + y * N.y)
        G.set_vel(N, x.diff(T) * N.x + y.diff(T) * N.y)
        b = me.RigidBody(nm, G, F, m, (me.inertia(F, 0, 0, m * L ** 2 / 12), G))
        b.potential_energy = m * g * y
        frames.append(F)
        bodies.append(b)
    F1, F2 = frames
    V = k * th1 ** 2 / 2 + k * (th2 - th1) ** 2 / 2
    Lag = me.Lagrangian(N, *bodies) - V
    top = lambda b, F: b.masscenter.pos_from(O) + L / 2 * F.y  # noqa: E731
    bottom = lambda b, F: b.masscenter.pos_from(O) - L / 2 * F.y  # noqa: E731
    hol = [top(bodies[0], F1).dot(N.x), top(bodies[0], F1).dot(N.y),
           (top(bodies[1], F2) - bottom(bodies[0], F1)).dot(N.x),
           (top(bodies[1], F2) - bottom(bodies[0], F1)).dot(N.y)]
    d1, d2 = th1.diff(T), th2.diff(T)
    loads = [(F1, (-c * d1 + c * (d2 - d1)) * N.z), (F2, -c * (d2 - d1) * N.z)]
    lm = me.LagrangesMethod(Lag, [x1, y1, th1, x2, y2, th2], forcelist=loads, frame=N,
                            hol_coneqs=hol)
    lm.form_lagranges_equations()
    tip = bodies[1].masscenter.locatenew("tip", -L / 2 * F2.y)
    return lm, {L: values["L"], m: values["m"], g: values["g"], k: values["k"],
                c: values["c"]}, tip, O, bodies, V


def test_double_pendulum_lagrange_matches_the_shipped_example():
    from examples import double_pendulum as ex

    shipped = ex.model()
    values = {p.name: v for p, v in shipped.params.items()}
    lm, params, tip, O, bodies, V = double_pendulum_lagrange(values)
    mdl = from_sympy(lm, params=params, outputs={"tip": tip}, origin=O, x0=shipped.x0,
                     xd0=shipped.xd0, name="dp_lagrange")
    assert mdl.n == 6 and mdl.m == 4
    assert mdl.coord_names == ("x1", "y1", "theta1", "x2", "y2", "theta2")
    runs = []
    for m_ in (shipped, mdl):
        res = symgen.simulate(LambdifyKernels(m_), method="nullspace", scheme="fox-goodwin",
                              dt=1e-3, t_end=0.3, estimate=False)
        assert res.status == "completed", res.reason
        runs.append(np.vstack([res.output("tip.x"), res.output("tip.y"), res.x[:, 2], res.x[:, 5]]))
    # the same DAE in the same coordinates: the same discrete solution up to Newton's tolerance
    assert np.abs(runs[0] - runs[1]).max() < 1e-8
    assert np.abs(runs[0][2:, -1] - np.pi / 2).max() > 0.1           # it moved


# -- what cannot be imported ----------------------------------------------------------------------
def test_specified_input_without_value_is_named():
    kane, q, u, F, values, O, tip = pendulum_on_a_cart(1)
    with pytest.raises(ModelError, match=r"specified input F\(t\).*params=\{F:"):
        from_sympy(kane, params=values)


def test_missing_parameter_value_is_named():
    kane, q, u, F, values, O, tip = pendulum_on_a_cart(1)
    values = {k: v for k, v in values.items() if k.name != "g"}
    with pytest.raises(ModelError, match=r"symbol 'g' has no value"):
        from_sympy(kane, params={**values, "F": 0})


def test_nonholonomic_constraints_and_auxiliary_speeds_are_refused():
    # a rolling disc's no-slip condition as a nonholonomic constraint of a System
    x, y, th = me.dynamicsymbols("x y theta")
    ux, uy, uth = me.dynamicsymbols("u_x u_y u_theta")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    ground = me.RigidBody("ground", O, N, 0, (me.inertia(N, 0, 0, 0), O))
    system = me.System.from_newtonian(ground)
    disc = me.RigidBody("disc", mass=1)
    disc.inertia = (me.inertia(disc.frame, 0, 0, 1), disc.masscenter)
    disc.frame.orient_axis(N, N.z, th)
    disc.frame.set_ang_vel(N, uth * N.z)
    disc.masscenter.set_pos(O, x * N.x + y * N.y)
    disc.masscenter.set_vel(N, ux * N.x + uy * N.y)
    system.add_bodies(disc)
    system.add_coordinates(x, y, th)
    system.add_speeds(ux, uy, uth)
    system.add_kdes(x.diff(T) - ux, y.diff(T) - uy, th.diff(T) - uth)
    system.add_nonholonomic_constraints(ux - uth)
    with pytest.raises(ModelError, match="nonholonomic constraints cannot be imported"):
        from_sympy(system)
    # the same as a KanesMethod: a velocity constraint that no holonomic constraint explains
    kane = me.KanesMethod(N, q_ind=[x, y, th], u_ind=[ux, uth], u_dependent=[uy],
                          kd_eqs=[x.diff(T) - ux, y.diff(T) - uy, th.diff(T) - uth],
                          velocity_constraints=[uy - ux * sp.cos(th)], bodies=[disc])
    with pytest.raises(ModelError, match="nonholonomic constraints cannot be imported"):
        from_sympy(kane)
    aux = me.dynamicsymbols("u_a")
    kane = me.KanesMethod(N, q_ind=[x, y, th], u_ind=[ux, uy, uth], u_auxiliary=[aux],
                          kd_eqs=[x.diff(T) - ux, y.diff(T) - uy, th.diff(T) - uth], bodies=[disc])
    with pytest.raises(ModelError, match=r"auxiliary speeds \['u_a\(t\)'\]"):
        from_sympy(kane)
