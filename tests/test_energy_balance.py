"""The energy balance (issue 25 §3): ``power:<element>`` outputs integrated over every step into
``work:<element>``, and the summary's max |E − E(0) − W_ext|.  Oracles: the work of a constant
torque is T·(θ − θ0); a damped system's E − E(0) − W_damper is the run's discretization error,
which falls as h² (measured here at h, h/2, h/4, not taken from an output)."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen import Model, ModelError, coordinates
from symgen.mechanics import PlanarSystem, SpatialSystem
from symgen.summary import energy_balance

TORQUE = 2.0
#: the paper's step (chart "end", metric "euclidean"): whose x update is the trapezoidal rule
PAPER = dict(chart="end", metric="euclidean")


def _raw_driven_pendulum():
    """θ'' m L² = −m g L sin θ + T, with the motor's power T θ̇ declared as an output."""
    (th,), (thd,) = coordinates("theta")
    m, L, g, T = sp.symbols("m L g T")
    return Model("raw_driven", [th], [[m * L ** 2]], [-m * g * L * sp.sin(th) + T],
                 V=-m * g * L * sp.cos(th), params={"m": 1.0, "L": 1.0, "g": 9.81, "T": TORQUE},
                 outputs={"power:motor": T * thd, "theta": th}, x0=[0.3])


def _planar_motor_damper():
    """A pendulum in (x, y, θ) with a revolute joint, a constant motor torque and a torsional
    damper to the ground (the acceptance's 'driven planar model with a motor and a damper')."""
    s = PlanarSystem("motor_damper")
    bob = s.body("bob", mass=1.0, inertia=0.1, points={"pivot": (0, 1.0)}, x0=(0, -1.0, 0))
    s.revolute("ground", (0, 0), bob, "pivot")
    s.gravity(9.81)
    s.torque(bob, TORQUE, name="motor")
    s.torsional_spring("ground", bob, 0, 0.3, name="damper")
    return s.model()


@pytest.mark.parametrize("stepper", ["python", "compiled"])
def test_work_of_a_constant_torque_is_T_times_the_angle_over_every_step(stepper):
    """The paper's trapezoidal step's x update is the trapezoidal rule on ẋ, so the integrated
    work of a constant torque equals T·(θ − θ0) to round-off; with every = 7 the rows skip six
    steps of seven, so a work integrated over the recorded rows only would miss it by far.  (The
    corrected step's x update is the trapezoidal rule less h²/12 (ẍ₁ − ẍ₀), which the work's
    trapezoidal rule on P does not see: there the two differ by the quadrature's O(h²).)"""
    mdl = _raw_driven_pendulum()
    res = symgen.simulate(mdl, method="nullspace", scheme="trapezoidal", dt=1e-2, t_end=4.0,
                          every=7, stepper=stepper, **PAPER)
    assert res.ok and res.output_names == ("power:motor", "theta", "work:motor")
    th = res.coord("theta")
    exact = TORQUE * (th - th[0])
    assert np.ptp(exact) > 0.1                          # the motor did work
    assert np.max(np.abs(res.output("work:motor") - exact)) < 1e-12
    np.testing.assert_allclose(res.output("power:motor"), TORQUE * res.xd[:, 0], atol=1e-13)


def test_variable_step_integrates_the_work_of_every_accepted_step():
    """As above under dt="auto" with every = 3 (the paper's step: its x update is the
    trapezoidal rule on ẋ, as the work's on P)."""
    mdl = _raw_driven_pendulum()
    res = symgen.simulate(mdl, method="nullspace", scheme="trapezoidal", dt="auto", t_end=4.0,
                          rtol=1e-6, every=3, **PAPER)
    th = res.coord("theta")
    assert np.max(np.abs(res.output("work:motor") - TORQUE * (th - th[0]))) < 1e-12


def test_motor_and_damper_balance_falls_at_the_steps_order():
    """E − E(0) − W_motor − W_damper → 0 as h⁴ (the corrected step and its work rule, the
    corrected trapezoid: symgen/quadrature.py; h² with the trapezoid before); the damper's work is
    far above that error, so leaving it out of W_ext (or integrating only the recorded rows) would
    break the balance."""
    mdl = _planar_motor_damper()
    assert {s for s in mdl.output_names if s.startswith("power:")} == {"power:motor", "power:damper"}
    errs, motor = [], []
    for h in (4e-3, 2e-3, 1e-3):
        res = symgen.simulate(mdl, method="nullspace", scheme="fox-goodwin", dt=h, t_end=3.0,
                              every=10)
        bal = energy_balance(res)
        errs.append(bal["max"])
        th = res.coord("bob.theta")
        motor.append(np.max(np.abs(res.output("work:motor") - TORQUE * (th - th[0]))))
        assert bal["works"]["damper"] < -100 * bal["max"] < 0
        assert bal["works"]["motor"] > 100 * bal["max"]
    for e in (errs, motor):
        ratios = [e[0] / e[1], e[1] / e[2]]
        assert all(13 < r < 19 for r in ratios), (e, ratios)        # measured 16.0, 16.1
    scale = abs(bal["works"]["motor"]) + abs(bal["works"]["damper"])
    assert errs[-1] < 1e-3 * scale                      # the acceptance: ≤ 1e-3 at h = 1e-3
    line = [ln for ln in res.summary() if "energy" in ln]
    assert len(line) == 1 and line[0].startswith("  energy balance  max |E − E(0) − W_ext| = ")
    assert "motor" in line[0] and "damper" in line[0]


def test_spring_damper_with_free_length_balances_in_planar_and_spatial_builders():
    """A mass on a spring-damper of free length 1 (its damper's power −c ℓ̇²), swinging and
    stretching without gravity: the balance falls as h⁴ in both builders (the corrected step)."""
    def planar():
        s = PlanarSystem("osc2")
        b = s.body("m", mass=1.0, inertia=1.0, x0=(1.2, 0, 0), v0=(0, 1.0, 0))
        s.spring("ground", (0, 0), b, (0, 0), k=20.0, c=0.4, length=1.0, name="sd")
        return s.model()

    def spatial():
        s = SpatialSystem("osc3")
        s.ground_point("O", (0, 0, 0))
        s.point("P", (1.2, 0, 0), velocity=(0, 1.0, 0.3))
        base = s.body("base", mass=0, inertia=0, com=(0, 0, 0), points=["O"])
        bob = s.body("bob", mass=1.0, inertia=0, com=(1.2, 0, 0), points=["P"])
        s.spring(base, "O", bob, "P", k=20.0, c=0.4, length=1.0, name="sd")
        return s.model()

    for mdl in (planar(), spatial()):
        errs = []
        for h in (4e-3, 2e-3, 1e-3):
            res = symgen.simulate(mdl, method="nullspace", scheme="trapezoidal", dt=h,
                                  t_end=2.0, every=5)
            bal = energy_balance(res)
            errs.append(bal["max"])
            assert bal["works"]["sd"] < -100 * bal["max"]
        assert 13 < errs[0] / errs[1] < 19 and 13 < errs[1] / errs[2] < 19, errs  # ~16


def test_a_conservative_model_keeps_its_drift_line():
    (th,), (thd,) = coordinates("theta")
    mdl = Model("cons", [th], [[1.0]], [-9.81 * sp.sin(th)], V=-9.81 * sp.cos(th),
                outputs={"theta": th}, x0=[0.5])
    res = symgen.simulate(mdl, method="nullspace", scheme="trapezoidal", dt=1e-2, t_end=2.0)
    assert res.output_names == ("theta",) and energy_balance(res) is None
    line = [ln for ln in res.summary() if "energy" in ln]
    drift = np.max(np.abs(res.energy - res.energy[0]))
    assert line == [f"  energy drift    max |E − E(0)| = {drift:.3g} J "
                    f"(E(0) = {res.energy[0]:.6g} J)"]


def test_power_and_work_names():
    (x,), (xd,) = coordinates("x")
    base = dict(name="nm", coords=[x], M=[[1]], f=[-x])
    Model(**base, outputs={"power:a.b_c": xd})
    for bad, why in (("work:a", "reserved"), ("power:", "needs an element name"),
                     ("power:a b", "not allowed")):
        with pytest.raises(ModelError, match=why):
            Model(**base, outputs={bad: xd})
    with pytest.raises(ModelError, match="duplicated output"):
        Model(**base, outputs={"power:a": xd, "power_a": xd})


# -- driven joints (issue 35, item 2): the rheonomic rows' work −∫ λᵀ ∂q/∂t dt ----------------------

DRIVEN = dict(mass=2.0, inertia=0.05, L=0.5, g=9.81, omega=3.0)


def _driven_pendulum():
    """A bar pivoted at the origin and turned at the constant rate ω by its revolute joint's
    drive (θ = ω t): 0 degrees of freedom."""
    p = DRIVEN
    s = PlanarSystem("driven_pendulum")
    bob = s.body("bob", mass=p["mass"], inertia=p["inertia"], points={"pivot": (0, p["L"])},
                 x0=(0, -p["L"], 0), v0=(p["omega"] * p["L"], 0, p["omega"]))
    s.revolute("ground", (0, 0), bob, "pivot", drive=p["omega"] * symgen.t, name="pivot")
    s.gravity(p["g"])
    return s.model()


@pytest.mark.parametrize("stepper", ["python", "compiled"])
def test_drive_work_is_the_inverse_dynamics_torque_times_the_rate(stepper):
    """Oracle: inverse dynamics of θ = ω t gives the drive torque τ = m g L sin ωt (θ̈ = 0), so
    its work is ∫ τ ω dt = m g L (1 − cos ωt).  The recorded work:pivot (integrated over every
    step, every = 3 records a third of them) meets it to the corrected trapezoid's O(h⁴)."""
    p = DRIVEN
    errs = []
    for h in (0.02, 0.01):
        res = symgen.simulate(_driven_pendulum(), dt=h, t_end=2.0, every=3, stepper=stepper)
        assert res.ok and "work:pivot" in res.output_names
        exact = p["mass"] * p["g"] * p["L"] * (1 - np.cos(p["omega"] * res.t))
        assert np.ptp(exact) > 9                       # the drive did work
        errs.append(np.max(np.abs(res.output("work:pivot") - exact)))
        assert energy_balance(res)["max"] < 1e-3 * np.ptp(exact) * (h / 0.01) ** 2
    assert 3.7 < np.log2(errs[0] / errs[1]) < 4.3, errs      # measured 4.00


def test_driven_slider_crank_balance_closes_and_the_sweep_table_uses_it():
    """The shipped slider-crank (crank driven at 2π rad/s, E varies by 7.7 J): with the drive's
    work the balance closes to the step's error, falling as h⁴ (measured 1.6e-6, 9.7e-8 J; with
    the trapezoid it was 1.3e-3, 3.2e-4 J);
    the same work on the compiled and the Python stepper, with and without dt="auto"; the
    summary line names the drive; the sweep table's energy_drift is the balance."""
    from symgen.summary import table_row

    mdl = symgen.load_model("slider_crank")
    kern = symgen.build(mdl)
    bal = []
    for h in (4e-3, 2e-3):
        res = symgen.simulate(kern, dt=h, every=5)
        b = energy_balance(res)
        assert b is not None and set(b["works"]) == {"crank_drive"}
        assert b["max"] < 2e-3 * np.ptp(res.energy)
        bal.append(b["max"])
    assert 3.7 < np.log2(bal[0] / bal[1]) < 4.3, bal
    assert table_row(res)["energy_drift"] == pytest.approx(bal[-1], rel=1e-12)
    line = next(ln for ln in res.summary() if "energy balance" in ln)
    assert "crank_drive" in line
    for dt in (1e-2, "auto"):
        w = [symgen.simulate(kern, dt=dt, t_end=0.6, stepper=s).output("work:crank_drive")
             for s in ("python", "compiled")]
        np.testing.assert_allclose(w[0], w[1], rtol=0, atol=1e-9 * np.abs(w[1]).max())
    # t_eval rows on the steps' grid carry the steps' work (the same rule inside a step)
    res = symgen.simulate(kern, dt=1e-2, t_end=0.6)
    for s in ("python", "compiled"):
        te = symgen.simulate(kern, dt=1e-2, t_end=0.6, stepper=s, t_eval=res.t[::6])
        np.testing.assert_allclose(te.output("work:crank_drive"),
                                   res.output("work:crank_drive")[::6], rtol=0,
                                   atol=1e-9 * np.abs(res.output("work:crank_drive")).max())


def test_a_driven_joint_under_a_sampled_torque_does_the_work_it_must():
    """The driven bar (θ = ω t exactly) with a torque input held by a controller: the motor's
    work is ω Ts Σ T_k in closed form, the drive's m g L (1 − cos ωt) minus it (E is fixed by
    the drive).  At each sample the drive's λ jumps with the torque, so its power after the
    sample is taken with λ re-solved there (Recorder.lam_at; with the old λ, or without the
    jump, each work is first order: their jumps cancel only in the sum)."""
    p = DRIVEN
    w, Ts = p["omega"], 0.05
    s = PlanarSystem("driven_pendulum_torque")
    bob = s.body("bob", mass=p["mass"], inertia=p["inertia"], points={"pivot": (0, p["L"])},
                 x0=(0, -p["L"], 0), v0=(w * p["L"], 0, w))
    s.revolute("ground", (0, 0), bob, "pivot", drive=w * symgen.t, name="pivot")
    s.gravity(p["g"])
    s.torque(bob, s.input("T"), name="motor")
    kern = symgen.build(s.model())
    law = lambda t, x, xd: [3.0 * np.cos(5 * t) - 2.0 * x[2]]        # noqa: E731
    tk = np.arange(40) * Ts
    motor = w * Ts * np.cumsum(3.0 * np.cos(5 * tk) - 2.0 * w * tk)  # at t_(k+1)
    drive = p["mass"] * p["g"] * p["L"] * (1 - np.cos(w * (tk + Ts))) - motor
    for stepper in ("python", "compiled"):
        errs = []
        for h in (0.01, 0.005):
            res = symgen.simulate(kern, dt=h, t_end=2.0, controller=law, period=Ts,
                                  stepper=stepper)
            idx = np.searchsorted(res.t, tk + Ts - 1e-9)
            errs.append(max(np.abs(res.output("work:motor")[idx] - motor).max(),
                            np.abs(res.output("work:pivot")[idx] - drive).max()))
        assert np.log2(errs[0] / errs[1]) > 3.3 and errs[1] < 1e-6, (stepper, errs)
