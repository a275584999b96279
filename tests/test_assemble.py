"""symgen.assemble: consistent initial states from a few held coordinates (issue 12 §2)."""
import numpy as np
import pytest
import sympy as sp

import symgen
from symgen import AssemblyError, assemble
from symgen.mechanics import PlanarSystem

A_CRANK, B_COUPLER, C_ROCKER, D_GROUND = 0.3, 1.0, 0.8, 1.0     # Grashof crank-rocker


def four_bar(b=B_COUPLER, guess_only=False, **model_kw):
    """Crank O–A, coupler A–B, rocker D–B, ground pivots O = (0, 0), D = (d, 0); bodies placed
    only roughly (the coupler and rocker placements are guesses)."""
    a, c, d = A_CRANK, C_ROCKER, D_GROUND
    s = PlanarSystem("four_bar")
    place = "guess" if guess_only else "x0"
    crank = s.body("crank", mass=1, inertia=a ** 2 / 12, points={"O": (-a / 2, 0), "A": (a / 2, 0)},
                   **{place: (a / 2, 0, 0)})
    coupler = s.body("coupler", mass=1, inertia=b ** 2 / 12,
                     points={"A": (-b / 2, 0), "B": (b / 2, 0)}, **{place: (0.6, 0.5, 0.5)})
    rocker = s.body("rocker", mass=1, inertia=c ** 2 / 12,
                    points={"D": (-c / 2, 0), "B": (c / 2, 0)}, **{place: (1.0, 0.4, 1.5)})
    s.revolute("ground", (0, 0), crank, "O", name="O")
    s.revolute(crank, "A", coupler, "A", name="A")
    s.revolute(coupler, "B", rocker, "B", name="B")
    s.revolute("ground", (d, 0), rocker, "D", name="D")
    s.gravity(9.81)
    if guess_only:
        return s.model(**model_kw)
    return s.model(check=False, **model_kw)


def closed_form_B(phi):
    """Joint B of the open (upper) branch: circle(A, b) ∩ circle(D, c)."""
    a, b, c, d = A_CRANK, B_COUPLER, C_ROCKER, D_GROUND
    A = np.array([a * np.cos(phi), a * np.sin(phi)])
    e = np.array([d, 0.0]) - A
    s = np.linalg.norm(e)
    along = (s ** 2 + b ** 2 - c ** 2) / (2 * s)
    h = np.sqrt(b ** 2 - along ** 2)
    return A + along * e / s + h * np.array([-e[1], e[0]]) / s


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def test_four_bar_assembled_over_a_full_turn_matches_the_closed_form():
    mdl = four_bar()
    c, d = C_ROCKER, D_GROUND
    i = {n: k for k, n in enumerate(mdl.coord_names)}
    x = mdl.x0
    worst_pos, worst_vel = 0.0, 0.0
    for phi in np.linspace(0.0, 2 * np.pi, 25)[:-1]:
        x, xd = assemble(mdl, fix={"crank.theta": phi}, guess=x, xd_fix={"crank.theta": 1.0})
        assert x[i["crank.theta"]] == pytest.approx(phi, abs=1e-14)
        th_r = x[i["rocker.theta"]]
        B = np.array([x[i["rocker.x"]] + c / 2 * np.cos(th_r),
                      x[i["rocker.y"]] + c / 2 * np.sin(th_r)])
        Bc = closed_form_B(phi)
        worst_pos = max(worst_pos, np.max(np.abs(B - Bc)),
                        abs(_wrap(th_r - np.arctan2(Bc[1], Bc[0] - d))))
        # velocities: crank at 1 rad/s, rocker angular velocity dθ_r/dφ (central difference)
        h = 1e-6
        Bp, Bm = closed_form_B(phi + h), closed_form_B(phi - h)
        dth = _wrap(np.arctan2(Bp[1], Bp[0] - d) - np.arctan2(Bm[1], Bm[0] - d)) / (2 * h)
        assert xd[i["crank.theta"]] == pytest.approx(1.0, abs=1e-12)
        worst_vel = max(worst_vel, abs(xd[i["rocker.theta"]] - dth))
    assert worst_pos < 1e-12
    assert worst_vel < 1e-7


def test_a_four_bar_that_cannot_close_names_the_joints_and_residual():
    mdl = four_bar(b=0.05)                      # |AB| ≥ |AD| − c = 0.1 > 0.05 at φ = 0
    with pytest.raises(AssemblyError, match=r"cannot assemble.*residual"):
        assemble(mdl, fix={"crank.theta": 0.0})
    with pytest.raises(AssemblyError, match=r"'B' \((x|y)\).*residual"):
        four_bar(b=0.05, guess_only=True, fix={"crank.theta": 0.0})


def test_bad_fix_names_are_refused():
    mdl = four_bar()
    with pytest.raises(symgen.ModelError, match="no coordinate or output 'crank.phi'"):
        assemble(mdl, fix={"crank.phi": 0.0})


def test_builder_with_placement_guesses_assembles_on_model():
    mdl = four_bar(guess_only=True, fix={"crank.theta": 0.7}, xd_fix={"crank.theta": -2.0})
    i = {n: k for k, n in enumerate(mdl.coord_names)}
    x = mdl.x0
    assert x[i["crank.theta"]] == pytest.approx(0.7, abs=1e-14)
    th_r = x[i["rocker.theta"]]
    B = np.array([x[i["rocker.x"]] + C_ROCKER / 2 * np.cos(th_r),
                  x[i["rocker.y"]] + C_ROCKER / 2 * np.sin(th_r)])
    assert np.max(np.abs(B - closed_form_B(0.7))) < 1e-12
    assert mdl.xd0[i["crank.theta"]] == pytest.approx(-2.0, abs=1e-12)
    k = symgen.LambdifyKernels(mdl)
    q, H, q_dot, *_ = k.constraints(0.0, mdl.x0, mdl.xd0, np.zeros(mdl.n))
    assert np.max(np.abs(q)) < 1e-13 and np.max(np.abs(q_dot)) < 1e-12


def test_andrews_squeezer_assembled_from_the_test_set_crank_angle():
    from examples import andrews_squeezer as ex
    from oracles import ANDREWS_Q0

    mdl = ex.model()
    names = ex.ANGLE_NAMES
    guess = np.array(mdl.x0) + 0.01 * np.sin(np.arange(mdl.n) + 1.0)   # a rough placement
    x, xd = assemble(mdl, fix={"beta": ANDREWS_Q0[0]}, guess=guess)
    angles = sp.lambdify([mdl.coords], [mdl.outputs[n] for n in names])(list(x))
    assert np.max(np.abs(np.array(angles) - ANDREWS_Q0)) < 1e-12
    assert np.max(np.abs(xd)) < 1e-12


def test_spatial_builder_assembles_with_held_coordinates():
    """A spherical pendulum defined at P = (1, 0, 0), started with P.y held at −0.5 and P.z at 0:
    P = (√0.75, −0.5, 0) (the assembled point nearest the definition), moving along z at 2 m/s."""
    from symgen.mechanics import SpatialSystem

    s = SpatialSystem("sph")
    s.ground_point("O", (0, 0, 0))
    s.point("P", (1, 0, 0))
    s.body("bob", mass=1, inertia=0, com=(1, 0, 0), points=["O", "P"])
    s.gravity(9.81)
    mdl = s.model(fix={"P.y": -0.5, "P.z": 0.0}, xd_fix={"P.z": 2.0})
    np.testing.assert_allclose(mdl.x0, [np.sqrt(0.75), -0.5, 0.0], atol=1e-14)
    np.testing.assert_allclose(mdl.xd0, [0.0, 0.0, 2.0], atol=1e-14)


def test_a_joint_that_takes_its_angle_from_a_guessed_placement_is_named():
    s = PlanarSystem("slide")
    cart = s.body("cart", mass=1, inertia=0.1, guess=(0.1, 0.05, 0.02))
    s.prismatic("ground", (0, 0), cart, (0, 0), axis=(1, 0), name="rail")
    with pytest.raises(symgen.ModelError, match=r"joint 'rail' \(angle\).*body 'cart' is only "
                                                 r"placed by a guess"):
        s.model()
    s = PlanarSystem("slide")
    cart = s.body("cart", mass=1, inertia=0.1, guess=(0.1, 0.05, 0.02))
    s.prismatic("ground", (0, 0), cart, (0, 0), axis=(1, 0), angle=0, name="rail")
    np.testing.assert_allclose(s.model(fix={"cart.x": 0.3}).x0, [0.3, 0, 0], atol=1e-15)
