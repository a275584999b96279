"""Only numerical failures become a failed run (issue 37.3): a StepFailure, a LAPACK error or an
overflow inside a step, and an input that returns no finite number or whose callable raises (the
caller's code), end the run as "failed" with the steps taken kept; any other exception (a bug of
symgen: a TypeError, a ZeroDivisionError in a step) propagates from simulate as it was raised, and the CLI exits 1 with it as an internal error.  The variable
step retries a numerical failure with a smaller step, never a bug."""
import os
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen.steppers import NullspaceStepper, StepFailure

WARM = ["stiff_pendulum"]
T_FAIL = 0.3            # the patched steps fail past this time


@pytest.fixture(scope="module")
def pendulum():
    return symgen.build(symgen.load_model("stiff_pendulum"))


def _fail_past(monkeypatch, cls, name, make_exc):
    """``cls.name`` (a step method taking t and h first) raises make_exc() for a step ending
    past T_FAIL."""
    real = getattr(cls, name)

    def step(self, t, h, *args, **kw):
        if t + h > T_FAIL + 1e-9:
            raise make_exc()
        return real(self, t, h, *args, **kw)
    monkeypatch.setattr(cls, name, step)


def _forced():
    (x,), _ = symgen.coordinates("x")
    F = symgen.inputs("F")
    k = sp.Symbol("k")
    return symgen.build(symgen.Model("forced", [x], [[1]], [F - k * x], params={"k": 4.0},
                                     x0=[1.0]))


@pytest.mark.parametrize("dt", [0.01, "auto"])
def test_an_input_that_raises_ends_the_run_as_failed_with_its_steps(dt):
    """The caller's callable raising is not a bug of symgen: the run is 'failed', its steps kept,
    the reason names the exception (the traceback on the InputError's __cause__)."""
    def F(t, x, xd):
        if t > T_FAIL:
            return None + 1.0           # a bug in the caller's input
        return 0.0
    r = symgen.simulate(_forced(), dt=dt, t_end=1.0, inputs={"F": F})
    assert r.status == "failed" and "raised TypeError: unsupported operand" in r.reason
    assert "\n" not in r.reason and 0 < r.t[-1] <= T_FAIL
    # an input's numerical error (no finite value) is data: the steps before it are kept
    r = symgen.simulate(_forced(), dt=dt, t_end=1.0,
                        inputs={"F": lambda t, x, xd: 0.0 if t <= T_FAIL else float("nan")})
    assert r.status == "failed" and "did not return a finite number" in r.reason
    assert "internal error" not in r.reason and "numerical error" not in r.reason
    assert 0 < r.t[-1] <= T_FAIL


@pytest.mark.parametrize("dt", [0.01, "auto"])
def test_a_step_that_raises_a_type_error_surfaces_as_that_type_error(pendulum, monkeypatch, dt):
    _fail_past(monkeypatch, NullspaceStepper, "_newton", lambda: TypeError("a bug in a step"))
    with pytest.raises(TypeError, match="a bug in a step"):
        symgen.simulate(pendulum, dt=dt, t_end=1.0, stepper="python", method="nullspace")


def test_a_zero_division_in_the_variable_step_is_not_retried_as_a_newton_failure(
        pendulum, monkeypatch):
    calls = []
    real = NullspaceStepper._newton

    def newton(self, t, h, *args):
        calls.append(t)
        if t + h > T_FAIL + 1e-9:
            raise ZeroDivisionError("float division by zero")
        return real(self, t, h, *args)
    monkeypatch.setattr(NullspaceStepper, "_newton", newton)
    with pytest.raises(ZeroDivisionError):
        symgen.simulate(pendulum, dt="auto", t_end=1.0, stepper="python", method="nullspace")
    assert calls[-1] + 1e-12 < T_FAIL   # the first try past T_FAIL raised: no smaller try after it
    assert sum(t + 1e-12 >= calls[-1] for t in calls) == 1
    with pytest.raises(ZeroDivisionError):                      # and in the fixed-step loop
        symgen.simulate(pendulum, dt=0.01, t_end=1.0, stepper="python", method="nullspace")


@pytest.mark.parametrize("dt", [0.01, "auto"])
def test_a_step_failure_still_ends_the_run_as_failed_with_its_rows(pendulum, monkeypatch, dt):
    full = symgen.simulate(pendulum, dt=dt, t_end=1.0, stepper="python", method="nullspace")
    assert full.status == "completed"
    _fail_past(monkeypatch, NullspaceStepper, "_newton",
               lambda: StepFailure("Newton did not converge (forced)", iteration=3))
    r = symgen.simulate(pendulum, dt=dt, t_end=1.0, stepper="python", method="nullspace")
    assert r.status == "failed"
    kept = int(np.sum(full.t <= T_FAIL + 1e-9))         # the steps that end by T_FAIL
    if dt == "auto":            # smaller tries up to T_FAIL; then none, down to round-off
        assert T_FAIL - 1e-9 < r.t[-1] <= T_FAIL + 1e-9
        assert r.reason.startswith(f"no step from t = {r.t[-1]:.9g} s: Newton did not converge "
                                   "down to h = ")
        assert r.meta["step_control"]["rejected_newton"] > 10
    else:                       # the step, its sub-steps and the crossing failed
        assert r.reason.startswith(f"step {kept} (t = {full.t[kept]:.9g}): Newton did not "
                                   "converge (forced)")
        assert len(r.t) == kept
    # the steps before the failure are kept, as the uninterrupted run computed them
    np.testing.assert_array_equal(r.t[:kept], full.t[:kept])
    np.testing.assert_array_equal(r.x[:kept], full.x[:kept])
    assert np.isfinite(r.x).all()


@pytest.mark.parametrize("make_exc", [lambda: OverflowError("(34, 'Numerical result out of "
                                                            "range')"),
                                      lambda: np.linalg.LinAlgError("singular matrix")])
def test_a_floating_point_or_lapack_error_in_a_step_is_a_failed_run(pendulum, monkeypatch,
                                                                    make_exc):
    full = symgen.simulate(pendulum, dt=0.01, t_end=1.0, stepper="python", method="nullspace")
    _fail_past(monkeypatch, NullspaceStepper, "_newton", make_exc)
    r = symgen.simulate(pendulum, dt=0.01, t_end=1.0, stepper="python", method="nullspace")
    kept = int(np.sum(full.t <= T_FAIL + 1e-9))
    assert r.status == "failed"
    assert r.reason.startswith(f"step {kept} (t = {full.t[kept]:.9g}): numerical error inside "
                               f"the nullspace step: {type(make_exc()).__name__}")
    np.testing.assert_array_equal(r.x, full.x[:kept])


SABOTAGE = (
    "import symgen\n"
    "from symgen.steppers.minimal import NewmarkStepper\n"
    "def model():\n"
    "    (x,), _ = symgen.coordinates('x')\n"
    "    return symgen.Model('spring', [x], M=[[1]], f=[-4 * x], x0=[1.0],\n"
    "        settings=dict(method='newmark', dt=0.1, t_end=1.0))\n"
    "_real = NewmarkStepper.step\n"
    "def _step(self, t, *a):\n"
    "    if t > 0.45:\n"
    "        raise TypeError('a bug in the step')\n"
    "    return _real(self, t, *a)\n"
    "NewmarkStepper.step = _step\n")


def test_a_bug_in_a_step_is_an_internal_error_of_the_cli(tmp_path):
    """exit 1 and one line naming it (SYMGEN_DEBUG=1: the traceback), no result file: not the
    documented 3 of a failed run."""
    (tmp_path / "sabotage.py").write_text(SABOTAGE)
    cmd = [sys.executable, "-m", "symgen", "simulate", str(tmp_path / "sabotage.py"),
           "--backend", "lambdify", "--out", str(tmp_path / "r.npz")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr.strip().splitlines()[-1] == (
        "internal error: TypeError: a bug in the step (set SYMGEN_DEBUG=1 for the traceback)")
    assert not (tmp_path / "r.npz").exists()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, SYMGEN_DEBUG="1"))
    assert proc.returncode == 1 and "Traceback" in proc.stderr
    assert "raise TypeError('a bug in the step')" in proc.stderr
