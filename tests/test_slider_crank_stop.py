"""The shipped impact example (examples/slider_crank_stop.py, docs/events.md "Example"): a
closed loop (crank, rod, slider: 9 coordinates, 8 constraint rows, one degree of freedom) whose
slider strikes an end stop (a prismatic joint limit with restitution e), against an independent
event-driven reference: SciPy's solve_ivp with events on the minimal-coordinate equation of the
same mechanism, derived by Lagrange's equation on the crank angle with sympy (tests/oracles.py,
the example's data written out there), restarted at each impact with the one-dof restitution
φ̇⁺ = −e φ̇⁻ (ġ = x_B'(φ) φ̇, so ġ⁺ = −e ġ⁻ is that).  The impact times, the crank angle at
t_end and the energy each impact took, at two fixed steps (the error falling at the step's
order) and dt="auto"; the command line runs it, plots and animates it."""
import math

import numpy as np
import pytest

import symgen

from oracles import STOP, slider_crank_stop_equation, slider_crank_stop_reference

X_STOP, E, T_END = STOP["x_stop"], STOP["e"], 5.0


@pytest.fixture(scope="module")
def kernels():
    """The example's compiled kernels (the Python stepper applies the impacts: stepper="auto"
    falls back to it)."""
    return symgen.build(symgen.load_model("slider_crank_stop"))


@pytest.fixture(scope="module")
def ref():
    return slider_crank_stop_reference(T_END)


def _impact_checks(res, ref, at_stop):
    """What holds at every step size: the run's 4 impacts, each on the stop (B.x = x_stop to
    ``at_stop``: the zero is located on the step's interpolant, then projected onto the
    constraints) with the reference's crank angle there (the geometry's: dφ = dx_B / x_B'(φ),
    |x_B'| ≈ 0.17 there), the slider's normal velocity restituted (−e, to round-off: the KKT
    solve), the constraints' residuals at round-off across the jumps (q̇ = 0 kept)."""
    assert res.status == "completed", res.reason
    if res.meta["stepper"] == "python":         # (the auto fallback while C has no impacts)
        assert any("impacts" in f for f in res.meta.get("fallbacks", ())), res.meta
    assert len(res.t_impacts) == len(ref) == 4 and res.event_names == ("slide.lower",)
    xe = res.x_events[0]
    np.testing.assert_allclose(xe[:, res.coords.index("slider.x")], X_STOP, rtol=0,
                               atol=at_stop)
    np.testing.assert_allclose(xe[:, res.coords.index("crank.theta")], ref[:, 1], rtol=0,
                               atol=10 * at_stop)
    imp = res.meta["impacts"]
    vm, vp = np.array(imp["v_minus"])[:, 0], np.array(imp["v_plus"])[:, 0]
    np.testing.assert_allclose(vp, -E * vm, rtol=1e-12)
    assert res.pos_err.max() < 1e-13 and res.vel_err.max() < 1e-12


@pytest.mark.parametrize("preset", [None, "paper"])
def test_closed_loop_limit_against_minimal_coordinates(kernels, ref, preset):
    """Fixed steps h = 0.01 and 0.005 against the minimal-coordinate reference: the impact
    times' error falls at the step's order (meta['step_order']: 4, the paper's 2), the crank
    angle at t_end and the kinetic energy each impact took (½ m(φ)(1 − e²) φ̇⁻² at the
    reference's impact) within the step's error."""
    impacts, phi_end = ref
    _, _, mass = slider_crank_stop_equation()
    errs = []
    for h in (0.01, 0.005):
        res = symgen.simulate(kernels, dt=h, t_end=T_END, preset=preset)
        _impact_checks(res, impacts, 1e-7 if preset else 1e-11)     # (measured 2e-9, 5e-14)
        errs.append(np.max(np.abs(res.t_impacts - impacts[:, 0])))
    order = res.meta["step_order"]
    assert order == (2 if preset else 4)
    assert order - 0.5 < math.log2(errs[0] / errs[1]) < order + 1.0, errs
    # h = 0.005, measured: impact times 1.8e-8 (paper 1.9e-4), φ(t_end) 4.7e-9 (1.0e-4),
    # the losses 6.8e-8 relative (paper 1e-4)
    tol = 1e-3 if preset else 1e-7
    assert errs[1] < tol and abs(res.output("phi")[-1] - phi_end) < tol, errs
    lost = [0.5 * mass(p) * (1 - E * E) * w * w for _, p, w in impacts]
    np.testing.assert_allclose(res.impact_losses, lost, rtol=1e-3 if preset else 1e-6)


def test_closed_loop_limit_auto_against_minimal_coordinates(kernels, ref):
    """dt="auto": the impact times and φ(t_end) against the reference fall with rtol (measured:
    1.6e-6 and 4.0e-7 at rtol 1e-6, 6.0e-8 and 7.2e-9 at 1e-8)."""
    impacts, phi_end = ref
    errs, ends = [], []
    for rtol in (1e-6, 1e-8):
        res = symgen.simulate(kernels, dt="auto", t_end=T_END, rtol=rtol, atol=rtol * 1e-2)
        _impact_checks(res, impacts, 1e-8)
        errs.append(np.max(np.abs(res.t_impacts - impacts[:, 0])))
        ends.append(abs(res.output("phi")[-1] - phi_end))
    assert errs[0] > 10 * errs[1] and errs[1] < 3e-7, errs
    assert ends[0] > 10 * ends[1] and ends[1] < 1e-7, ends


def test_command_line_simulate_plot_animate(tmp_path, capsys):
    """`symgen simulate slider_crank_stop` (the Python stepper by the auto fallback, said in the
    summary), its events and impacts lines against the saved result's numbers, then `symgen
    plot` and `symgen animate` of the result (the drawing with the stop)."""
    from test_cli import PNG, call
    from test_summary_events import _check_events, _check_impacts, _line

    out = tmp_path / "stop.npz"
    proc = call(capsys, "simulate", "slider_crank_stop", "--t-end", "1.6", "--out", out)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    res = symgen.load_result(out)
    assert len(res.t_impacts) == 2
    if res.meta["stepper"] == "python":         # (the auto fallback, said in the summary)
        assert "impacts" in _line(lines, "fallback")
    _check_events(res, _line(lines, "events"))
    _check_impacts(res, _line(lines, "impacts"))
    assert "W_ext + L|" in _line(lines, "energy balance")
    png, gif = tmp_path / "stop.png", tmp_path / "stop.gif"
    proc = call(capsys, "plot", out, "--what", "outputs", "--select", "B.x", "phi", "-o", png)
    assert proc.returncode == 0 and png.read_bytes().startswith(PNG), proc.stderr
    proc = call(capsys, "animate", out, "-o", gif, "--fps", "5")
    assert proc.returncode == 0 and gif.read_bytes()[:6] == b"GIF89a", proc.stderr
