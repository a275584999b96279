"""Events (issue 36 item 1; docs/events.md) against independent oracles: the pendulum's period
in closed form (the complete elliptic integral), SciPy's solve_ivp with events on the
minimal-coordinate pendulum, the slider-crank's slider position in closed form."""
import math

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.special import ellipk

import symgen
from symgen import Model, coordinates
from symgen.mechanics import PlanarSystem
from symgen.result import load_result

G, THETA0 = 9.81, 1.0


def minimal_pendulum(terminal=False) -> Model:
    """θ̈ = −(g/L) sin θ (L = 1), released from rest at θ0; event θ = 0 falling."""
    (th,), _ = coordinates(["th"])
    g = sp.Symbol("g")
    return Model("ev_minimal", [th], [[1]], [-g * sp.sin(th)], params={g: G}, x0=[THETA0],
                 V=g * (1 - sp.cos(th)),
                 events={"bottom": {"expr": th, "direction": -1, "terminal": terminal}})


def period(omega0: float, theta0: float = THETA0) -> float:
    """The closed-form period 4 K(sin²(θ0/2)) / ω0 (scipy's ellipk takes m = k²)."""
    return 4.0 * ellipk(math.sin(theta0 / 2) ** 2) / omega0


def bar_pendulum() -> Model:
    """A uniform bar (L = 1 m) on a revolute joint to the ground, released from rest at θ0 from
    the vertical (planar builder: (x, y, θ) coordinates and 2 constraint rows); the event names
    an output, the angle from the vertical, falling through 0."""
    L = 1.0
    s = PlanarSystem("ev_bar")
    bar = s.body("bar", mass=1.0, inertia=L ** 2 / 12, points={"O": (-L / 2, 0)},
                 x0=(L / 2 * math.sin(THETA0), -L / 2 * math.cos(THETA0), THETA0 - math.pi / 2))
    s.revolute("ground", (0, 0), bar, "O", name="pivot")
    s.gravity(G)
    s.output("swing", bar.theta + sp.pi / 2, unit="rad")
    s.event("bottom", "swing", direction=-1)
    return s.model(reactions=False)


def _times(T: float, k: int) -> np.ndarray:
    """The falling zero crossings of θ: T/4, 5T/4, …"""
    return T * (np.arange(k) + 0.25)


@pytest.mark.parametrize("preset", [None, "paper"])
def test_pendulum_event_times_converge_at_the_step_order(preset):
    """Fixed steps: the located times against the closed-form period, the error falling at the
    step's order (meta['step_order']: 4 for the default step, 2 for the paper's) as h halves."""
    kern = symgen.LambdifyKernels(minimal_pendulum())
    T = period(math.sqrt(G))
    errs = []
    for h in (0.02, 0.01, 0.005):
        res = symgen.simulate(kern, dt=h, t_end=5.0, stepper="python", preset=preset)
        assert res.status == "completed" and res.event_names == ("bottom",)
        tev = res.t_events[0]
        assert tev.size == 3
        errs.append(np.max(np.abs(tev - _times(T, 3))))
        np.testing.assert_allclose(res.x_events[0][:, 0], 0.0, atol=1e-11)
    order = res.meta["step_order"]
    assert order == (2 if preset else 4)
    assert errs[-1] < (1e-4 if preset else 1e-9)
    for a, b in zip(errs, errs[1:]):
        assert order - 0.5 < math.log2(a / b) < order + 1.0, errs


@pytest.mark.parametrize("dt", [0.01, "auto"])
def test_terminal_event_ends_the_run_there(dt):
    """A terminal event: the run ends at the event (status 'event', a reason naming it), the last
    row is the event's state; with t_eval only the rows before the event are recorded."""
    kern = symgen.LambdifyKernels(minimal_pendulum(terminal=True))
    T = period(math.sqrt(G))
    for te in (None, np.linspace(0.0, 2.0, 21)):
        res = symgen.simulate(kern, dt=dt, t_end=2.0, t_eval=te, rtol=1e-9, atol=1e-12)
        assert res.status == "event" and res.ok
        assert "'bottom'" in res.reason and f"{res.t[-1]:.12g}" in res.reason
        t_ev = res.t_events[0]
        assert t_ev.size == 1 and res.t[-1] == t_ev[0]
        assert abs(t_ev[0] - T / 4) < 1e-7
        np.testing.assert_array_equal(res.x[-1], res.x_events[0][0])
        np.testing.assert_array_equal(res.xd[-1], res.xd_events[0][0])
        assert np.all(np.diff(res.t) > 0)
        if te is not None:
            np.testing.assert_array_equal(res.t[:-1], te[te < t_ev[0]])
        # the velocity there from energy conservation: θ̇² = 2 g (1 − cos θ0)
        assert abs(res.xd[-1, 0] + math.sqrt(2 * G * (1 - math.cos(THETA0)))) < 1e-6


def test_events_against_solve_ivp():
    """SciPy's solve_ivp with events (DOP853, tight tolerances) on the same equations: the
    times of falling and rising zeros and of a callable event (θ̇ = 0: the turning points)."""
    kern = symgen.LambdifyKernels(minimal_pendulum())

    def turn(t, x, xd):
        return xd[0]
    turn.direction = 0

    def rise(t, y):
        return y[0]
    rise.direction = 1

    def fall(t, y):
        return y[0]
    fall.direction = -1

    def vel(t, y):
        return y[1]
    ref = solve_ivp(lambda t, y: [y[1], -G * math.sin(y[0])], (0, 5.0), [THETA0, 0.0],
                    method="DOP853", rtol=1e-13, atol=1e-13, events=[fall, rise, vel])
    res = symgen.simulate(kern, dt="auto", t_end=5.0, rtol=1e-10, atol=1e-12,
                          events=[turn])
    assert res.event_names == ("bottom", "turn")
    assert res.t_events[0].size == ref.t_events[0].size
    np.testing.assert_allclose(res.t_events[0], ref.t_events[0], rtol=0, atol=2e-8)
    # the rising zeros: the same model with a callable of direction +1
    theta = lambda t, x, xd: x[0]       # noqa: E731
    theta.direction = 1
    up = symgen.simulate(kern, dt="auto", t_end=5.0, rtol=1e-10, atol=1e-12, events=theta)
    np.testing.assert_allclose(up.t_events[1], ref.t_events[1], rtol=0, atol=2e-8)
    # θ̇ = 0 at rest at t = 0 is not an event (a zero at the start); then at T/2, T, …
    np.testing.assert_allclose(res.t_events[1], ref.t_events[2][ref.t_events[2] > 1e-9],
                               rtol=0, atol=2e-8)
    np.testing.assert_allclose(np.abs(res.x_events[1][:, 0]), THETA0, atol=1e-7)


def test_constrained_event_on_an_output_and_on_the_constraints():
    """The planar builder's bar pendulum (2 constraint rows): the event named by an output, its
    times against the compound pendulum's closed-form period (ω0² = 3g/2L), its states on the
    constraints to round-off."""
    model = bar_pendulum()
    assert set(model.events) == {"bottom"} and model.events["bottom"].direction == -1
    T = period(math.sqrt(3 * G / 2))
    kern = symgen.build(model)
    res = symgen.simulate(kern, dt=0.005, t_end=4.0)
    assert res.meta["stepper"] == "compiled"
    tev = res.t_events[0]
    np.testing.assert_allclose(tev, _times(T, tev.size), rtol=0, atol=1e-8)
    assert tev.size == 3
    for x, xd in zip(res.x_events[0], res.xd_events[0]):
        q, H, qd, *_ = kern.constraints(tev[0], x, xd, np.zeros(kern.n))
        assert np.max(np.abs(q)) < 1e-14 and np.max(np.abs(qd)) < 1e-13
        assert abs(kern.outputs(0.0, x, xd)[list(kern.output_names).index("swing")]) < 1e-11


def slider_crank_events(terminal=False) -> Model:
    base = symgen.load_model("slider_crank")
    return base.replace(events={"back": {"expr": base.outputs["B.x"] - 0.6, "direction": -1,
                                         "terminal": terminal}})


def test_driven_slider_crank_event_against_closed_form():
    """The driven slider-crank (rheonomic rows): B.x = r cos φ + √(l² − r² sin² φ), φ = 2π t;
    the falling crossings of B.x = 0.6 located against the closed form's root."""
    r, l, w = 0.2, 0.6, 2 * math.pi
    phi = brentq(lambda p: r * math.cos(p) + math.sqrt(l * l - (r * math.sin(p)) ** 2) - 0.6,
                 0.0, math.pi, xtol=1e-15)
    res = symgen.simulate(symgen.LambdifyKernels(slider_crank_events()), dt=1e-3, t_end=2.0)
    np.testing.assert_allclose(res.t_events[0], phi / w + np.arange(2), rtol=0, atol=1e-11)


def test_events_saved_and_loaded(tmp_path):
    kern = symgen.LambdifyKernels(minimal_pendulum(terminal=True))
    res = symgen.simulate(kern, dt=0.01, t_end=2.0)
    for name in ("r.npz", "r.csv"):
        back = load_result(res.save(tmp_path / name))
        assert back.status == "event" and back.event_names == res.event_names
        for a, b in zip((back.t_events, back.x_events, back.xd_events),
                        (res.t_events, res.x_events, res.xd_events)):
            np.testing.assert_array_equal(a[0], b[0])


def test_bad_events_are_one_line_errors():
    kern = symgen.LambdifyKernels(minimal_pendulum())

    def g(t, x, xd):
        return x[0]
    for events, words in (([3], r"events\[0\] is not callable"), (5, "must be a callable"),
                          (g, None)):
        if words is None:
            g.direction = "down"
            words = "direction must be -1"
        with pytest.raises(ValueError, match=words) as info:
            symgen.simulate(kern, dt=0.01, t_end=0.1, events=events)
        assert "\n" not in str(info.value)
    g.direction = 0
    g.terminal = 2
    with pytest.raises(ValueError, match="terminal must be True or False"):
        symgen.simulate(kern, dt=0.01, t_end=0.1, events=g)
    with pytest.raises(symgen.ModelError, match="direction must be"):
        minimal_pendulum().replace(events={"e": {"expr": sp.Symbol("th"), "direction": 2}})
    s = PlanarSystem("bad")
    with pytest.raises(symgen.mechanics.MechanismError, match="direction must be"):
        s.event("e", 1, direction=-2)
    s.body("b", 1.0, 1.0)
    s.event("e", "nope")
    with pytest.raises(symgen.mechanics.MechanismError, match="names the output 'nope'"):
        s.model()


def test_callable_events_on_the_compiled_stepper_are_refused():
    kern = symgen.build(minimal_pendulum())
    with pytest.raises(ValueError, match="stepper='compiled' cannot call Python events="):
        symgen.simulate(kern, dt=0.01, t_end=0.1, stepper="compiled",
                        events=lambda t, x, xd: x[0])


def test_a_failing_callable_ends_the_run_as_failed():
    """The caller's event that raises ends the run as failed with its steps kept (an input's
    error), the reason naming it."""
    kern = symgen.LambdifyKernels(minimal_pendulum())

    def bad(t, x, xd):
        if t > 0.05:
            raise RuntimeError("boom")
        return 1.0
    res = symgen.simulate(kern, dt=0.01, t_end=0.2, events=bad)
    assert res.status == "failed" and "event 'bad' raised RuntimeError" in res.reason
    assert res.t[-1] > 0.04


def _spread(kern, base, kw, what):
    """The largest change of ``what(result)`` over Python runs whose start is moved by 1e-15
    (relative, positions and velocities): the run's round-off spread."""
    x0, xd0 = kern.model.x0, kern.model.xd0
    out = 0.0
    for d in (1e-15, -1e-15, 2e-15):
        r = symgen.simulate(kern, x0=x0 * (1 + d), xd0=xd0 * (1 + d), stepper="python", **kw)
        out = max(out, np.max(np.abs(what(r) - what(base)), initial=0.0))
    return out


@pytest.mark.roundoff
@pytest.mark.parametrize("make, dt", [(bar_pendulum, 0.01), (bar_pendulum, "auto"),
                                      (lambda: slider_crank_events(terminal=True), 0.01),
                                      (lambda: slider_crank_events(terminal=True), "auto")])
def test_compiled_events_as_python(make, dt):
    """The C runtime's events (sg_events.c.inc, in sg_run_chunk and sg_run_auto) against the
    Python stepper's on a constrained model with an event on an output: the same events, times
    and states within 10x the 1e-15 start-perturbation spread (at least 64 ε·t), the same status
    and rows; with t_eval too."""
    kern = symgen.build(make())
    for te in (None, np.linspace(0.0, 2.0, 9)):
        kw = dict(dt=dt, t_end=2.0, rtol=1e-8, atol=1e-10, t_eval=te)
        c = symgen.simulate(kern, stepper="compiled", **kw)
        p = symgen.simulate(kern, stepper="python", **kw)
        assert c.meta["stepper"] == "compiled" and p.meta["stepper"] == "python"
        assert c.status == p.status and c.reason == p.reason and c.t.size == p.t.size
        assert [a.size for a in c.t_events] == [a.size for a in p.t_events] != [0]
        tev = lambda r: np.concatenate(r.t_events)                        # noqa: E731
        xev = lambda r: np.concatenate(r.x_events + r.xd_events)         # noqa: E731
        floor = 64 * np.finfo(float).eps * 2.0
        assert np.max(np.abs(tev(c) - tev(p))) <= max(floor, 10 * _spread(kern, p, kw, tev))
        assert np.max(np.abs(xev(c) - xev(p))) <= max(floor, 10 * _spread(kern, p, kw, xev))
        if c.status == "event":
            assert c.t[-1] == c.t_events[0][-1] and p.t[-1] == p.t_events[0][-1]
            q = kern.constraints(c.t[-1], c.x[-1], c.xd[-1], np.zeros(kern.n))
            assert np.max(np.abs(q[0])) < 1e-14 and np.max(np.abs(q[2])) < 1e-13


def test_callables_with_model_events_fall_back_to_python():
    kern = symgen.build(minimal_pendulum())
    res = symgen.simulate(kern, dt=0.01, t_end=1.0, events=lambda t, x, xd: x[0] - 0.5)
    assert res.meta["stepper"] == "python"
    assert any("events= callables" in f for f in res.meta["fallbacks"])
    assert symgen.simulate(kern, dt=0.01, t_end=1.0).meta["stepper"] == "compiled"


@pytest.mark.parametrize("stepper", ["python", "compiled"])
def test_many_events_against_their_closed_form(stepper):
    """g = sin(100 t), either direction: its zeros kπ/100 (a hundred and more, more than the C
    buffers hold per chunk: the chunks stop early and go on) to the located time's tolerance."""
    base = bar_pendulum()
    model = base.replace(name="ev_bar_tick", events={**base.events,
                                                     "tick": sp.sin(100 * symgen.t)})
    res = symgen.simulate(symgen.build(model), dt=0.01, t_end=4.0, stepper=stepper)
    assert res.meta["stepper"] == stepper and res.event_names == ("bottom", "tick")
    k = np.arange(1, int(400 / math.pi) + 1)
    np.testing.assert_allclose(res.t_events[1], k * math.pi / 100, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.t_events[0], _times(period(math.sqrt(3 * G / 2)), 3),
                               rtol=0, atol=1e-7)         # (the step's error at h = 0.01: 3e-8)


def test_cli_terminal_event_exit_code_zero(tmp_path):
    """`symgen simulate` of a model whose terminal event ends the run: exit 0, the status and
    reason in the summary, the events in the result file."""
    from symgen.cli import main

    (tmp_path / "pend.py").write_text(
        "import sympy as sp, symgen\n"
        "def model():\n"
        "    (th,), _ = symgen.coordinates(['th'])\n"
        "    return symgen.Model('ev_cli', [th], [[1]], [-9.81 * sp.sin(th)], x0=[1.0],\n"
        "        events={'bottom': {'expr': th, 'direction': -1, 'terminal': True}},\n"
        "        settings=dict(dt=0.01, t_end=2.0))\n")
    assert main(["simulate", str(tmp_path / "pend.py"), "--out", str(tmp_path / "o.npz")]) == 0
    res = load_result(tmp_path / "o.npz")
    assert res.status == "event" and res.t[-1] == res.t_events[0][0]
    assert abs(res.t[-1] - period(math.sqrt(G)) / 4) < 1e-8


def test_spatial_builder_events_against_the_uniform_acceleration():
    """The spatial builder's event() on an element symbol (P.z, mapped onto the coordinates) and
    on a joint's output (the prismatic's displacement s): the block on the incline slides with
    s(t) = 0.5 + 0.4 t + ½ a t², a = −g d_z, which the step and the interpolant reproduce to
    round-off; the crossings s = 0.3 (P.z = 0.2) and s = 0 in closed form, on both steppers."""
    from test_spatial_joints import _block_on_incline

    s, d, _ = _block_on_incline()
    P, _ = s.symbols("P")
    s.event("low", P[2] - 0.2, direction=-1)
    s.event("origin", "slide.displacement", direction=-1, terminal=True)
    model = s.model()
    a = -9.81 * d[2]
    root = lambda c: (-0.4 - math.sqrt(0.16 - 2 * a * c)) / a      # noqa: E731 (0.5 + … = 0.5 − c)
    for stepper in ("python", "compiled"):
        res = symgen.simulate(symgen.build(model), dt=0.01, t_end=1.0, stepper=stepper)
        assert res.status == "event" and res.meta["stepper"] == stepper
        np.testing.assert_allclose(res.t_events[0], [root(0.2)], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.t_events[1], [root(0.5)], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.x_events[0][0, 2], 0.2, rtol=0, atol=1e-12)
