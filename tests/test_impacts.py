"""Impacts (issue 36 items 2–3; docs/events.md "Impacts") against independent oracles: the
bouncing point mass in closed form (impact times, apex heights e^(2k)·h0, the Zeno time), the
pendulum against a wall against SciPy's solve_ivp with events on the minimal-coordinate equation
restarted at each impact with −e θ̇, the energy balance with the impacts' losses against the
same run's energy error without the wall, simultaneous impacts in a corner and on two
coincident planes, the gap gradients against finite differences and the compiled kernel against
lambdify; bad input as one-line errors."""
import math

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

import symgen
from symgen import Model, coordinates
from symgen.mechanics import MechanismError, PlanarSystem, SpatialSystem
from symgen.names import ModelError
from symgen.result import load_result
from symgen.summary import energy_balance

G, H0, E = 9.81, 1.0, 0.5
STEPPERS = ["python", "compiled"]


def kernels(model: Model, stepper: str):
    """The model's kernels for ``stepper``: lambdify for the Python stepper, compiled for C."""
    return symgen.LambdifyKernels(model) if stepper == "python" else symgen.build(model)


def ball(e=E, xd0=0.0, floors=("floor",), es=None) -> Model:
    """A point mass (x, y) under gravity dropped from y = H0, a floor y ≥ 0 per name."""
    (x, y), _ = coordinates(["x", "y"])
    g = sp.Symbol("g")
    es = es or [e] * len(floors)
    return Model("imp_ball", [x, y], [[1, 0], [0, 1]], [0, -g], params={g: G}, x0=[0.0, H0],
                 xd0=[xd0, 0.0], V=g * y,
                 events={k: {"expr": y, "restitution": ek} for k, ek in zip(floors, es)})


def bounce_times(k: int, e: float = E) -> np.ndarray:
    """The first k impact times: √(2 H0/g), then each flight 2 e^j v0/g (v0 = √(2 g H0))."""
    v0 = math.sqrt(2 * G * H0)
    return math.sqrt(2 * H0 / G) + np.concatenate(
        [[0.0], np.cumsum([2 * e ** j * v0 / G for j in range(1, k)])])


@pytest.mark.parametrize("stepper", STEPPERS)
@pytest.mark.parametrize("dt", [0.01, "auto"])
def test_bouncing_ball_against_closed_form(dt, stepper):
    """Impact times, rebound speeds e·v, the apex heights e^(2k)·H0 (rows at the closed-form
    apex times); then, on the Python stepper, the contact closed near the Zeno time t∞
    (persistent contact: tests/test_contact.py), and on the compiled stepper (no persistent
    contact) the cascade that ends the run near t∞, its reason naming the Python stepper."""
    kern = kernels(ball(), stepper)
    tb = bounce_times(6)
    v0 = math.sqrt(2 * G * H0)
    t_apex = tb + E ** np.arange(1, 7) * v0 / G
    res = symgen.simulate(kern, dt=dt, t_end=2.0, stepper=stepper, t_eval=t_apex)
    np.testing.assert_allclose(res.t_impacts[:6], tb, rtol=0, atol=1e-10)
    imp = res.meta["impacts"]
    vm, vp = np.array(imp["v_minus"][:6])[:, 0], np.array(imp["v_plus"][:6])[:, 0]
    np.testing.assert_allclose(vm, -v0 * E ** np.arange(6), rtol=1e-9)
    np.testing.assert_allclose(vp, -E * vm, rtol=1e-12)
    np.testing.assert_allclose(res.x[:6, 1], H0 * E ** (2 * np.arange(1, 7)), rtol=1e-9)
    np.testing.assert_allclose([p["floor"] for p in res.impulses[:6]], (1 + E) * -vm, rtol=1e-12)
    t_zeno = math.sqrt(2 * H0 / G) + 2 * E * v0 / G / (1 - E)
    if stepper == "python":
        assert res.status == "completed" and res.contacts[0]["kind"] == "closed"
        assert abs(res.contacts[0]["t"] - t_zeno) < 0.02
    else:
        assert res.status == "failed" and "impact cascade" in res.reason
        assert "Python stepper" in res.reason and abs(res.t_impacts[-1] - t_zeno) < 1e-3


def minimal_pendulum_wall(e: float, th_w: float) -> Model:
    """θ̈ = −g sin θ (L = 1) released from rest at θ0 = 1 against a wall at θ_w: g = θ − θ_w."""
    (th,), _ = coordinates(["th"])
    g = sp.Symbol("g")
    return Model("imp_pend", [th], [[1]], [-g * sp.sin(th)], params={g: G}, x0=[1.0],
                 V=g * (1 - sp.cos(th)), events={"wall": {"expr": th - th_w, "restitution": e}})


def reference_impacts(omega2: float, e: float, th_w: float, t_end: float, th0: float = 1.0):
    """solve_ivp (DOP853, rtol = atol = 1e-13) on θ̈ = −ω² sin θ with the event θ = θ_w
    (falling, terminal), restarted there with −e θ̇: the impact times and speeds before."""
    def hit(t, y):
        return y[0] - th_w
    hit.terminal, hit.direction = True, -1
    t, y, out = 0.0, [th0, 0.0], []
    while t < t_end:
        sol = solve_ivp(lambda t, y: [y[1], -omega2 * math.sin(y[0])], (t, t_end), y,
                        method="DOP853", rtol=1e-13, atol=1e-13, events=hit)
        if not sol.t_events[0].size:
            break
        t, yv = sol.t_events[0][0], sol.y_events[0][0]
        out.append((t, yv[1]))
        y = [th_w, -e * yv[1]]
    return np.array(out)


@pytest.mark.parametrize("stepper", STEPPERS)
@pytest.mark.parametrize("preset", [None, "paper"])
def test_pendulum_wall_converges_at_the_step_order(preset, stepper):
    """The impact times against SciPy's event-driven reference, falling at the step's order
    (meta['step_order']) as h halves; each rebound speed e times the impact speed."""
    e, th_w = 0.7, -0.3
    ref = reference_impacts(G, e, th_w, 4.0)
    kern = kernels(minimal_pendulum_wall(e, th_w), stepper)
    errs = []
    for h in (0.02, 0.01, 0.005):
        res = symgen.simulate(kern, dt=h, t_end=4.0, stepper=stepper, preset=preset)
        assert res.status == "completed" and len(res.t_impacts) == len(ref) >= 3
        errs.append(np.max(np.abs(res.t_impacts - ref[:, 0])))
        imp = res.meta["impacts"]
        np.testing.assert_allclose(np.array(imp["v_plus"])[:, 0],
                                   -e * np.array(imp["v_minus"])[:, 0], rtol=1e-12)
    order = res.meta["step_order"]
    for a, b in zip(errs, errs[1:]):
        assert order - 0.5 < math.log2(a / b) < order + 1.0, errs
    assert errs[-1] < (1e-3 if preset else 1e-8), errs


@pytest.mark.parametrize("stepper", STEPPERS)
def test_pendulum_wall_auto_converges_with_rtol(stepper):
    """dt="auto": the impact times' error against the reference falls with rtol (each step
    restarted at the impact as a terminal event's cut)."""
    e, th_w = 0.7, -0.3
    ref = reference_impacts(G, e, th_w, 4.0)
    kern = kernels(minimal_pendulum_wall(e, th_w), stepper)
    errs = []
    for rtol in (1e-6, 1e-8, 1e-10):
        res = symgen.simulate(kern, dt="auto", t_end=4.0, stepper=stepper, rtol=rtol,
                              atol=rtol * 1e-2)
        assert res.status == "completed" and len(res.t_impacts) == len(ref)
        errs.append(np.max(np.abs(res.t_impacts - ref[:, 0])))
    assert errs[0] > 10 * errs[1] > 100 * errs[2] and errs[2] < 1e-8, errs


def bar_with_limit(e: float, lower: float) -> Model:
    """A uniform bar (L = 1) on a revolute joint to the ground released at 1 rad from the
    vertical, a lower joint limit (the angle from the x axis, −π/2 at the vertical)."""
    L = 1.0
    s = PlanarSystem("imp_bar")
    bar = s.body("bar", mass=1.0, inertia=L ** 2 / 12, points={"O": (-L / 2, 0)},
                 x0=(L / 2 * math.sin(1.0), -L / 2 * math.cos(1.0), 1.0 - math.pi / 2))
    s.revolute("ground", (0, 0), bar, "O", name="pivot")
    s.gravity(G)
    if lower is not None:
        s.limit("pivot", lower=lower - math.pi / 2, e=e)
    return s.model(reactions=False)


@pytest.mark.parametrize("stepper", STEPPERS)
@pytest.mark.parametrize("dt", [0.005, "auto"])
def test_builder_limit_against_reference_and_energy_balance(dt, stepper):
    """The builder's bar against its limit (2 constraint rows): the impact times against the
    compound pendulum's event-driven reference (ω² = 3g/(2L)); the energy balance with the
    losses closes to within ten times the same run's energy error without the limit."""
    e, th_w = 0.6, -0.4
    ref = reference_impacts(1.5 * G, e, th_w, 4.0)
    kw = {"dt": dt, "t_end": 4.0, "stepper": stepper}
    if dt == "auto":
        kw.update(rtol=1e-8, atol=1e-10)
    res = symgen.simulate(kernels(bar_with_limit(e, th_w), stepper), **kw)
    free = symgen.simulate(kernels(bar_with_limit(e, None), stepper), **kw)
    assert res.status == "completed" and len(res.t_impacts) == len(ref) >= 3
    np.testing.assert_allclose(res.t_impacts, ref[:, 0], rtol=0, atol=1e-7)
    bal = energy_balance(res)
    drift = np.max(np.abs(free.energy - free.energy[0]))
    assert bal["works"]["impacts"] == pytest.approx(-res.impact_losses.sum())
    # the losses, from the reference's speeds: ½ I_O (1 − e²) θ̇⁻² per impact (I_O = 1/3)
    np.testing.assert_allclose(res.impact_losses, 0.5 / 3 * (1 - e * e) * ref[:, 1] ** 2,
                               rtol=1e-6)
    assert bal["max"] < 10 * drift + 1e-12, (bal, drift)
    assert np.max(np.abs(res.energy - res.energy[0])) > 100 * bal["max"]    # (losses counted)


@pytest.mark.parametrize("stepper", STEPPERS)
def test_simultaneous_impacts_in_a_corner_and_dependent_rows(stepper):
    """A mass flying into a corner (x ≥ 0 with e1, y ≥ 0 with e2) hits both at once: ẋ⁺ =
    (e1 v, e2 v); two coincident floors (dependent rows) share the impulse m(1 + e)v equally."""
    (x, y), _ = coordinates(["x", "y"])
    m = Model("imp_corner", [x, y], [[2.0, 0], [0, 2.0]], [0, 0], x0=[1.0, 1.0],
              xd0=[-1.0, -1.0], events={"wall": {"expr": x, "restitution": 0.3},
                                        "floor": {"expr": y, "restitution": 0.8}})
    res = symgen.simulate(kernels(m, stepper), dt=0.1, t_end=1.5, stepper=stepper)
    assert res.status == "completed" and res.t_impacts == pytest.approx([1.0], abs=1e-12)
    assert res.impulses[0] == pytest.approx({"wall": 2.0 * 1.3, "floor": 2.0 * 1.8}, rel=1e-12)
    np.testing.assert_allclose(res.xd[-1], [0.3, 0.8], rtol=1e-12)
    res2 = symgen.simulate(kernels(ball(floors=("a", "b")), stepper), dt=0.01, t_end=0.6,
                           stepper=stepper)
    v0 = math.sqrt(2 * G * H0)
    assert sorted(res2.impulses[0]) == ["a", "b"]
    np.testing.assert_allclose(list(res2.impulses[0].values()), [0.5 * (1 + E) * v0] * 2,
                               rtol=1e-9)
    np.testing.assert_allclose(res2.meta["impacts"]["v_plus"][0], [E * v0] * 2, rtol=1e-9)


def test_spatial_contact_bounces():
    """The spatial builder's point mass on a plane tilted about x (normal (0, −s, c) through
    the origin), dropped from height H0 along the normal: the first impact at √(2 H0/g) and the
    normal speed after it e times the one before."""
    s = SpatialSystem("imp_sp")
    s.point("P", (0, 0, H0), velocity=(0.4, 0, 0))
    s.body("bob", mass=1.0, inertia=0, com=(0, 0, H0), points=["P"])
    s.gravity(G, direction=(0, 0, -1))
    s.contact("floor", "P", e=E, normal=(0, 0, 2.0), origin=(0, 0, 0))
    res = symgen.simulate(symgen.LambdifyKernels(s.model(reactions=False)), dt=0.01, t_end=1.0,
                          stepper="python")
    assert res.t_impacts[:2] == pytest.approx(bounce_times(2), abs=1e-10)
    imp = res.meta["impacts"]
    assert imp["v_plus"][0][0] == pytest.approx(-E * imp["v_minus"][0][0], rel=1e-12)


def test_gap_gradients_fd_and_compiled_kernel():
    """G = ∂g/∂x of the contact and limit gaps against central differences of the events
    kernel; the compiled kernel <name>_impacts against lambdify."""
    L = 1.0
    s = PlanarSystem("imp_grad")
    bar = s.body("bar", mass=1.0, inertia=L ** 2 / 12, points={"O": (-L / 2, 0), "tip": (L / 2, 0)},
                 x0=(0.4, -0.3, -1.0))
    s.revolute("ground", (0, 0), bar, "O", name="pivot")
    s.limit("pivot", lower=-2.0, upper=0.5, e=0.5)
    s.contact("slope", bar, "tip", e=0.2, normal=(0.3, 1.0), origin=(0.1, -1.0))
    model = s.model(reactions=False, check=False)
    lam = symgen.LambdifyKernels(model)
    assert lam.impact_names == ("pivot.lower", "pivot.upper", "slope")
    x = np.array([0.37, -0.21, -0.8])
    fd = np.empty((3, 3))
    for j in range(3):
        d = np.zeros(3)
        d[j] = 1e-6
        fd[:, j] = (np.array(lam.events(0, x + d, x * 0)) - lam.events(0, x - d, x * 0)) / 2e-6
    np.testing.assert_allclose(lam.impacts(0, x), fd, rtol=0, atol=1e-8)
    np.testing.assert_allclose(symgen.build(model).impacts(0, x), lam.impacts(0, x),
                               rtol=1e-14, atol=1e-15)


def test_compiled_stepper_runs_impacts_and_auto_keeps_persistent_contact():
    """stepper="compiled" runs impacts in C; "auto" runs them on the Python stepper, which keeps
    persistent contact, saying so in the fallbacks; with a power output (the work's jump at an
    impact) the compiled stepper is refused in one line and "auto" falls back, saying why."""
    kern = symgen.build(ball())
    res = symgen.simulate(kern, dt=0.01, t_end=0.5, stepper="compiled")
    assert res.meta["stepper"] == "compiled" and not res.meta.get("fallbacks")
    assert res.t_impacts == pytest.approx(bounce_times(1), abs=1e-10)
    res = symgen.simulate(kern, dt=0.01, t_end=0.5)
    assert res.meta["stepper"] == "python"
    assert any("persistent contact" in f for f in res.meta["fallbacks"])
    assert res.t_impacts == pytest.approx(bounce_times(1), abs=1e-10)
    (x, y), _ = coordinates(["x", "y"])
    g = sp.Symbol("g")
    m = Model("imp_pow", [x, y], [[1, 0], [0, 1]], [0, -g], params={g: G}, x0=[0.0, H0],
              V=g * y, outputs={"power:push": 0 * y}, events={"floor": {"expr": y,
                                                                    "restitution": E}})
    kern = symgen.build(m)
    with pytest.raises(ValueError, match="impacts .* Python stepper only") as ei:
        symgen.simulate(kern, dt=0.01, t_end=0.5, stepper="compiled")
    assert "\n" not in str(ei.value)
    res = symgen.simulate(kern, dt=0.01, t_end=0.5)
    assert any("impacts" in f for f in res.meta["fallbacks"])
    assert res.t_impacts == pytest.approx(bounce_times(1), abs=1e-10)


def test_impacts_saved_loaded_and_hashed(tmp_path):
    res = symgen.simulate(symgen.LambdifyKernels(ball()), dt=0.01, t_end=1.0, stepper="python")
    for name in ("r.npz", "r.csv"):
        back = load_result(res.save(tmp_path / name))
        np.testing.assert_array_equal(back.t_impacts, res.t_impacts)
        np.testing.assert_array_equal(back.impact_losses, res.impact_losses)
        assert back.impulses == res.impulses
    assert ball(0.5).hash != ball(0.6).hash


def test_bad_impacts_are_one_line_errors():
    for bad in (-0.1, 1.5, "x", True):
        with pytest.raises(ModelError, match="restitution e must be a number in") as ei:
            ball(e=bad)
        assert "\n" not in str(ei.value)
    (x,), _ = coordinates(["x"])
    with pytest.raises(ModelError, match="direction -1"):
        Model("b", [x], [[1]], [0], events={"w": {"expr": x, "restitution": 0.5,
                                                  "direction": 1}})
    with pytest.raises(ModelError, match="impact's gap"):
        Model("b", [x], [[1]], [0], events={"w": {"expr": x + sp.Symbol("x_dot"),
                                                  "restitution": 0.5}})
    s = PlanarSystem("bad")
    s.body("b", mass=1.0, inertia=1.0)
    s.revolute("ground", (0, 0), "b", (0, 0), name="pin")
    with pytest.raises(MechanismError, match="lower = 1 is above upper = 0") as ei:
        s.limit("pin", lower=1, upper=0, e=0.5)
    assert "\n" not in str(ei.value)
    with pytest.raises(MechanismError, match="restitution e must be"):
        s.contact("c", "b", (0, 0), e=2)
    with pytest.raises(MechanismError, match="give lower, upper or both"):
        s.limit("pin", e=0.5)


def test_impact_at_a_grid_point(monkeypatch):
    """An impact located at a step's end (g = 0 there: events.RunEvents._locate returns t + h)
    ends that step; its row is the state before the jump (a row at an impact's time is the left
    limit, as the energy balance counts it), the next step starts after it.  A mass dropped from
    1 m under g = 8 with h = 1/8: the trapezoidal rule is exact, the floor is reached at t = 0.5."""
    from symgen import events
    monkeypatch.setattr(events.RunEvents, "_locate", lambda self, i, t, h, *a: t + h)
    (x, y), _ = coordinates(["x", "y"])
    g = sp.Symbol("g")
    m = Model("imp_grid", [x, y], [[1, 0], [0, 1]], [0, -g], params={g: 8.0}, x0=[0, 1.0],
              V=g * y, events={"floor": {"expr": y, "restitution": 0.5}})
    res = symgen.simulate(symgen.LambdifyKernels(m), dt=0.125, t_end=0.75, stepper="python",
                          scheme="trapezoidal")
    assert res.status == "completed" and res.t_impacts == pytest.approx([0.5], abs=0)
    np.testing.assert_allclose(res.xd[:, 1], [0, -1, -2, -3, -4, 1, 0], rtol=0, atol=1e-12)
    assert energy_balance(res)["max"] < 1e-12


def _slider_times(s0, v0, lo, up, e, k):
    """A free slider at s0 moving at v0 > 0 between stops at lo and up: the first k impact
    times (the speed e^j v0 after j impacts, the span up − lo crossed each time)."""
    t = [(up - s0) / v0]
    for j in range(1, k):
        t.append(t[-1] + (up - lo) / (e ** j * v0))
    return np.array(t)


@pytest.mark.parametrize("builder", ["planar", "spatial"])
def test_prismatic_limits_against_closed_form(builder):
    """A block on a prismatic joint (no gravity) between a lower and an upper stop: the impact
    times in closed form, alternating upper and lower, each rebound e times the speed."""
    s0, v0, lo, up, e = 0.2, 0.5, 0.0, 1.0, 0.8
    if builder == "planar":
        s = PlanarSystem("imp_slide")
        s.body("block", mass=2.0, inertia=0.1, x0=(s0, 0, 0), v0=(v0, 0, 0))
        s.prismatic("ground", (0, 0), "block", (0, 0), axis=(1, 0), name="slide")
    else:
        s = SpatialSystem("imp_slide3")
        s.ground_point("O", (0, 0, 0))
        s.point("P", (s0, 0, 0), velocity=(v0, 0, 0))
        s.vector("u", (1, 0, 0))
        s.vector("w", (0, 1, 0))
        s.body("block", mass=2.0, inertia=(0.1, 0.2, 0.3), com=(s0, 0, 0), points=["P"],
               vectors=["u", "w"])
        s.prismatic("ground", "O", "block", "P", axis=(1, 0, 0), name="slide")
    assert s.limit("slide", lower=lo, upper=up, e=e) == ["slide.lower", "slide.upper"]
    res = symgen.simulate(symgen.LambdifyKernels(s.model(reactions=False)), dt=0.05,
                          t_end=12.0, stepper="python")
    ex = _slider_times(s0, v0, lo, up, e, 4)
    assert res.status == "completed" and len(res.t_impacts) == 4
    np.testing.assert_allclose(res.t_impacts, ex, rtol=0, atol=1e-10)
    assert [list(p) for p in res.impulses] == [["slide.upper"], ["slide.lower"]] * 2
    np.testing.assert_allclose([abs(next(iter(p.values()))) for p in res.impulses],
                               2.0 * (1 + e) * v0 * e ** np.arange(4), rtol=1e-10)


def _cylinder(coordinate):
    s = SpatialSystem("imp_cyl")
    s.ground_point("O", (0, 0, 0))
    s.point("P", (0.2, 0, 0), velocity=(0.5, 0, 0))
    s.vector("u", (1, 0, 0))
    s.vector("w", (0, 1, 0), velocity=(0, 0, 2.0))
    s.body("block", mass=2.0, inertia=(0.1, 0.2, 0.3), com=(0.2, 0, 0), points=["P"],
           vectors=["u", "w"])
    s.cylindrical("ground", "O", "block", "P", axis=(1, 0, 0), name="cyl")
    s.limit("cyl", upper=1.0 if coordinate == "displacement" else 0.5, e=0.5,
            coordinate=coordinate)
    return s.model(reactions=False)


def test_cylindrical_limits_on_either_coordinate():
    """A cylindrical joint sliding at 0.5 m/s from 0.2 m and turning at 2 rad/s (no forces):
    the slide's stop at 1 m is hit at 1.6 s with the impulse m(1 + e)v, the angle's at 0.5 rad
    at 0.25 s with I_x(1 + e)ω; without coordinate= a one-line error names both outputs."""
    for coordinate, t_hit, impulse in (("displacement", 1.6, 2.0 * 1.5 * 0.5),
                                       ("angle", 0.25, 0.1 * 1.5 * 2.0)):
        res = symgen.simulate(symgen.LambdifyKernels(_cylinder(coordinate)), dt=0.01,
                              t_end=2.0, stepper="python")
        assert res.t_impacts == pytest.approx([t_hit], abs=1e-10)
        assert res.impulses[0]["cyl.upper"] == pytest.approx(impulse, rel=1e-10)
    with pytest.raises(MechanismError, match="cyl.angle', 'cyl.displacement'.*coordinate="):
        _cylinder(None)


def _impact_data(r) -> np.ndarray:
    """A run's impacts as one vector: times, impulses, losses, normal velocities before, after."""
    imp = r.meta["impacts"]
    return np.concatenate([imp["t"], *imp["impulse"], imp["loss"], *imp["v_minus"],
                           *imp["v_plus"]])


def _states(r) -> np.ndarray:
    return np.concatenate([r.t, r.x.ravel(), r.xd.ravel()])


@pytest.mark.roundoff
@pytest.mark.parametrize("make, dt", [(lambda: bar_with_limit(0.6, -0.4), 0.005),
                                      (lambda: bar_with_limit(0.6, -0.4), "auto"),
                                      (ball, 0.01)])
def test_compiled_impacts_as_python(make, dt):
    """The C runtime's impacts (sg_events.c.inc impact_apply, in sg_run_chunk and sg_run_auto)
    against the Python stepper's: the same impacts and active rows, their times, impulses,
    losses and normal velocities, and the rows (with t_eval too) within 10x the spread of runs
    whose start is moved by 1e-15 (relative) on either stepper (at least 64 ε·max|value|); the
    same status.  (The falling ball under dt="auto" is left out: its error estimate is at the
    floor, so its count of steps moves with the start's last bit.)"""
    kern = symgen.build(make())
    x0, xd0 = kern.model.x0, kern.model.xd0
    for te in (None, np.linspace(0.0, 1.3, 14)):
        kw = dict(dt=dt, t_end=1.3 if make is ball else 2.0, rtol=1e-8, atol=1e-10, t_eval=te)
        c = symgen.simulate(kern, stepper="compiled", **kw)
        p = symgen.simulate(kern, stepper="python", **kw)
        assert c.meta["stepper"] == "compiled" and p.meta["stepper"] == "python"
        assert c.status == p.status and c.t.size == p.t.size and c.t_impacts.size >= 2
        assert c.meta["impacts"]["active"] == p.meta["impacts"]["active"]
        for what in (_impact_data, _states):
            spread = 0.0
            for stepper in ("python", "compiled"):
                for d in (1e-15, -1e-15, 2e-15):
                    r = symgen.simulate(kern, x0=x0 * (1 + d) + d, xd0=xd0 * (1 + d),
                                        stepper=stepper, **kw)
                    ref = p if stepper == "python" else c
                    spread = max(spread, np.max(np.abs(what(r) - what(ref))))
            floor = 64 * np.finfo(float).eps * np.max(np.abs(what(p)))
            assert np.max(np.abs(what(c) - what(p))) <= max(floor, 10 * spread), what
