"""Persistent contact (issue 36 item 4; docs/events.md "Persistent contact") against closed
forms: the bouncing point mass's impact times and apex heights e^(2k)·h0 to the end of its Zeno
sequence, then resting contact from the last impact (whose remaining flights sum, in closed form,
to t∞ − t) with the normal force m·g and y = ẏ = 0; a mass on a floor lifted by a ramped force
F = k t leaves at t = m g / k and flies on the closed-form cubic; bad input as one-line errors."""
import math

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen import Model, coordinates
from symgen.mechanics import MechanismError, PlanarSystem
from symgen.names import ModelError
from symgen.summary import energy_balance

G, H0, E = 9.81, 1.0, 0.5
V0 = math.sqrt(2 * G * H0)


def ball(mass=1.0, e=E, rest_speed=None, y0=H0, k=0.0) -> Model:
    """A point mass (x, y) under gravity (and an upward force k·t) above the floor y ≥ 0."""
    (x, y), _ = coordinates(["x", "y"])
    g, m, kf = sp.symbols("g m k")
    t = symgen.model.t
    ev = {"expr": y, "restitution": e}
    if rest_speed is not None:
        ev["rest_speed"] = rest_speed
    return Model("ct_ball", [x, y], [[m, 0], [0, m]], [0, -m * g + kf * t],
                 params={g: G, m: mass, kf: k}, x0=[0.0, y0], V=m * g * y,
                 events={"floor": ev})


def impact_times(k: int) -> np.ndarray:
    """The first k impact times: √(2 h0/g), then each flight 2 e^j v0/g."""
    return math.sqrt(2 * H0 / G) + np.concatenate(
        [[0.0], np.cumsum([2 * E ** j * V0 / G for j in range(1, k)])])


@pytest.mark.roundoff
@pytest.mark.parametrize("dt", [0.01, 0.001, "auto"])
def test_bouncing_ball_comes_to_rest(dt):
    """Every impact at its closed-form time, each apex at e^(2k)·h0, the contact closed at the
    last impact (k), whose remaining flights 2 e^k v0/(g (1 − e)) are what it leaves of t∞ (under
    fixed steps each shorter than h); then y = ẏ = 0 and the normal force m·g at every step; no
    cascade; the energy balance with the impacts' losses closes."""
    mass = 2.0
    kern = symgen.LambdifyKernels(ball(mass))
    t_zeno = math.sqrt(2 * H0 / G) + 2 * E * V0 / G / (1 - E)
    res = symgen.simulate(kern, dt=dt, t_end=2.0, stepper="python")
    assert res.status == "completed", res.reason
    n = len(res.t_impacts)
    np.testing.assert_allclose(res.t_impacts, impact_times(n), rtol=0, atol=1e-11)
    vm = np.array(res.meta["impacts"]["v_minus"])[:, 0]
    np.testing.assert_allclose(vm, -V0 * E ** np.arange(n), rtol=1e-9)
    (c,) = res.contacts
    assert c["name"] == "floor" and c["kind"] == "closed" and c["t"] == res.t_impacts[-1]
    tail = 2 * E ** n * V0 / G / (1 - E)             # the flights the contact leaves out
    assert t_zeno - c["t"] == pytest.approx(tail, rel=1e-9, abs=1e-12)
    if dt != "auto":
        assert 2 * E ** n * V0 / G < dt <= 2 * E ** (n - 1) * V0 / G
    for f in (c["force"], c["force_min"], c["force_max"], c["force_last"]):
        assert f == pytest.approx(mass * G, rel=1e-13)
    assert c["t_last"] == 2.0
    after = res.t > c["t"]
    assert after.sum() >= 1
    assert np.max(np.abs(res.x[after, 1])) <= 1e-15 and np.max(np.abs(res.xd[after])) <= 1e-13
    # apex heights at the closed-form apex times (rows by t_eval)
    tb = impact_times(min(n, 6))
    t_apex = tb + E ** np.arange(1, len(tb) + 1) * V0 / G
    ra = symgen.simulate(kern, dt=dt, t_end=2.0, stepper="python", t_eval=t_apex)
    np.testing.assert_allclose(ra.x[:, 1], H0 * E ** (2 * np.arange(1, len(tb) + 1)), rtol=1e-9)
    eb = energy_balance(res)
    assert eb["max"] < 1e-11, eb            # J, of E(0) = 19.6 J (round-off: exact on a parabola)


def test_ramped_force_lifts_the_mass_off():
    """A mass resting on the floor (closed by rest_speed at its first, slow impact), pulled up
    by F = k t: the contact opens at t = m g / k (its force m g − k t), the flight after it is
    y = k (t − t_o)³ / (6 m), and the floor is free afterwards (no impact)."""
    mass, k = 2.0, 2.0 * G                          # t_o = m g / k = 1 s
    kern = symgen.LambdifyKernels(ball(mass, e=0.5, rest_speed=0.5, y0=1e-3, k=k))
    t_o = mass * G / k
    for dt in (0.01, "auto"):
        tt = np.linspace(1.1, 1.6, 6)
        res = symgen.simulate(kern, dt=dt, t_end=1.6, stepper="python", t_eval=tt)
        assert res.status == "completed", res.reason
        assert len(res.t_impacts) == 1
        closed, opened = res.contacts
        assert closed["kind"] == "closed" and opened["kind"] == "opened"
        assert closed["t"] == res.t_impacts[0]
        assert opened["t"] == pytest.approx(t_o, abs=1e-12)
        assert closed["force"] > 0 and closed["force_min"] > -1e-12 * mass * G
        assert closed["force_max"] == pytest.approx(mass * G - k * closed["t"], rel=1e-9)
        np.testing.assert_allclose(res.x[:, 1], k * (tt - t_o) ** 3 / (6 * mass), rtol=1e-9,
                                   atol=1e-12)
        np.testing.assert_allclose(res.xd[:, 1], k * (tt - t_o) ** 2 / (2 * mass), rtol=1e-9,
                                   atol=1e-12)


def test_bad_rest_speed_is_one_line():
    """A negative, infinite or non-numeric rest_speed, or one without a restitution: one line."""
    (y,), _ = coordinates(["y"])
    for bad in (-1.0, math.inf, "fast", True):
        with pytest.raises(ModelError, match="rest_speed .* finite number >= 0"):
            Model("ct_bad", [y], [[1]], [-1], events={"f": {"expr": y, "restitution": 0.5,
                                                            "rest_speed": bad}})
    with pytest.raises(ModelError, match="rest_speed belongs to an impact"):
        Model("ct_bad", [y], [[1]], [-1], events={"f": {"expr": y, "rest_speed": 0.1}})
    s = PlanarSystem("ct_bar")
    bar = s.body("bar", mass=1.0, inertia=0.1, points={"tip": (0.5, 0)})
    with pytest.raises(MechanismError, match="rest_speed"):
        s.contact("floor", bar, "tip", e=0.5, rest_speed=-2, normal=(0, 1), origin=(0, -2))


def bar_on_stop(k: float, th_w: float = 0.4, L: float = 1.0) -> Model:
    """A uniform bar (L, m = 1) on a revolute to the ground (2 rows), held by gravity against a
    lower joint limit θ ≥ θ_w (θ from the downward vertical; e = 0), a torque k·t lifting it."""
    s = PlanarSystem("ct_bar")
    th0 = th_w + 1e-4
    bar = s.body("bar", mass=1.0, inertia=L ** 2 / 12, points={"O": (-L / 2, 0)},
                 x0=(L / 2 * math.sin(th0), -L / 2 * math.cos(th0), th0 - math.pi / 2))
    s.revolute("ground", (0, 0), bar, "O", name="pivot")
    s.gravity(G)
    s.torque(bar, sp.Float(k) * symgen.model.t)
    s.limit("pivot", lower=th_w - math.pi / 2, e=0.0)
    return s.model(reactions=False)


@pytest.mark.parametrize("dt", [0.005, "auto"])
def test_bar_released_from_a_stop_by_a_ramped_torque(dt):
    """The builder's bar (2 constraint rows) comes to rest on its limit (a plastic impact closes
    it), leaves it when the torque k t passes gravity's m g (L/2) sin θ_w, and swings on as
    SciPy's solve_ivp on I_O θ̈ = −m g (L/2) sin θ + k t from (t_o, θ_w, 0)."""
    from scipy.integrate import solve_ivp

    k, th_w, L = 2.0, 0.4, 1.0
    t_o = G * L / 2 * math.sin(th_w) / k
    kern = symgen.LambdifyKernels(bar_on_stop(k, th_w, L))
    tt = np.linspace(t_o + 0.05, t_o + 0.5, 5)
    kw = {"rtol": 1e-9, "atol": 1e-11} if dt == "auto" else {}
    res = symgen.simulate(kern, dt=dt, t_end=1.5, stepper="python", t_eval=tt, **kw)
    assert res.status == "completed", res.reason
    closed, opened = res.contacts
    assert closed["name"] == "pivot.lower" and opened["kind"] == "opened"
    assert opened["t"] == pytest.approx(t_o, abs=1e-12)
    assert res.lam.shape == (len(tt), 2)
    sol = solve_ivp(lambda t, y: [y[1], (-G * L / 2 * math.sin(y[0]) + k * t) / (L ** 2 / 3)],
                    (t_o, tt[-1]), [th_w, 0.0], method="DOP853", rtol=1e-13, atol=1e-13,
                    t_eval=tt)
    th = res.x[:, 2] + math.pi / 2
    np.testing.assert_allclose(th, sol.y[0], rtol=0, atol=2e-9)


def test_closed_model_reads_the_runs_inputs_with_compiled_kernels():
    """The closed model's kernels share the run's inputs (Kernels.share_inputs), compiled too: a
    mass dropped onto the floor (e = 0: the contact closes at once) and pressed down by an input
    F(t) = F1·t (during the fall too) rests with the normal force m·g + F1·t (without the
    inputs shared it would be m·g)."""
    (x, y), _ = coordinates(["x", "y"])
    g, m, F = sp.symbols("g m F")
    mass, F1 = 2.0, 3.0
    model = Model("ct_press", [x, y], [[m, 0], [0, m]], [0, -m * g - F], params={g: G, m: mass},
                  inputs=[F], x0=[0.0, 0.1], V=m * g * y,
                  events={"floor": {"expr": y, "restitution": 0.0}})
    kern = symgen.build(model)
    res = symgen.simulate(kern, dt=0.01, t_end=1.0, stepper="python",
                          inputs={"F": lambda t, x, xd: F1 * t})
    assert res.status == "completed", res.reason
    (c,) = res.contacts
    from scipy.optimize import brentq      # the fall y = 0.1 − g t²/2 − F1 t³/(6 m) to y = 0
    t_hit = brentq(lambda t: 0.1 - G * t * t / 2 - F1 * t ** 3 / (6 * mass), 0.0, 1.0, xtol=1e-15)
    assert c["kind"] == "closed" and c["t"] == pytest.approx(t_hit, abs=1e-10)
    assert c["t_last"] == pytest.approx(1.0)
    assert c["force_last"] == pytest.approx(mass * G + F1 * 1.0, rel=1e-12)
    assert c["force_max"] == c["force_last"]          # (the force grows with F: at the end)
