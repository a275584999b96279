"""Inputs (issue 23, item 1): symbols whose values arrive at run time.

Oracles: the same model with the value written into f (a constant input: equal to round-off), the
closed-form response of an undamped mass-spring driven by F sin(Ωt) (second-order convergence at
two steps), consistent_state's accelerations under perturbed inputs (B of the linearization),
sympy's derivative of an output (D).
"""
import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen.mechanics import PlanarSystem

STEPPERS = ("python", "compiled")
K_SPRING, MASS, F0, OMEGA = 4.0, 1.0, 1.0, 3.0


def _pendulum(torque):
    """A planar pendulum (2 constraints) with a torque on its body: a number or an input."""
    mech = PlanarSystem("pend_in")
    b = mech.body("bar", mass=1.0, inertia=0.1, com=(0.5, 0), x0=(0, 0, 0.3))
    mech.revolute("ground", (0, 0), b, (0, 0))
    mech.gravity(9.81)
    T = mech.input("T") if torque is None else torque
    mech.torque(b, T)
    mech.output("power", T * mech.velocity(b, (0, 0))[0] + T)    # uses the input
    return mech.model(settings={"dt": 1e-2, "t_end": 1.0})


def _mass_spring():
    (x,), (xd,) = symgen.coordinates("x")
    F = symgen.inputs("F")
    k, m = sp.symbols("k m")
    return symgen.Model("forced_msd", [x], [[m]], [F - k * x], params={"k": K_SPRING, "m": MASS},
                        outputs={"work_rate": F * xd})


def _exact(t):
    """x'' + ω²x = (F0/m) sin(Ωt) from rest."""
    w = math.sqrt(K_SPRING / MASS)
    A = F0 / (MASS * (w * w - OMEGA * OMEGA))
    return A * (np.sin(OMEGA * t) - OMEGA / w * np.sin(w * t))


@pytest.fixture(scope="module")
def pend_models():
    return _pendulum(None), _pendulum(0.7)


@pytest.mark.parametrize("stepper", STEPPERS)
def test_constant_input_equals_the_value_written_into_f(pend_models, stepper):
    with_input, baked = pend_models
    assert with_input.input_names == ("T",) and baked.input_names == ()
    r_in = symgen.simulate(with_input, inputs={"T": 0.7}, stepper=stepper)
    r_b = symgen.simulate(baked, stepper=stepper)
    assert r_in.status == r_b.status == "completed"
    assert r_in.meta["stepper"] == stepper
    scale = np.abs(r_b.x).max()
    assert np.abs(r_in.x - r_b.x).max() <= 1e-12 * scale
    assert np.abs(r_in.outputs - r_b.outputs).max() <= 1e-12 * np.abs(r_b.outputs).max()
    assert r_in.input_names == ("T",) and np.all(r_in.u == 0.7)


@pytest.mark.parametrize("stepper", STEPPERS)
def test_forced_mass_spring_callable_and_table_converge_to_the_closed_form(stepper):
    mdl = _mass_spring()
    # a table on a grid the steps do not hit (linear interpolation error ~ FΩ²δ²/8 ≈ 1e-7)
    tt = np.linspace(0.0, 5.0, 15001)
    sources = {"callable": lambda t, x, xd: F0 * math.sin(OMEGA * t),
               "table": (tt, F0 * np.sin(OMEGA * tt))}
    for kind, src in sources.items():
        errs, runs = [], []
        for dt in (2e-2, 1e-2):
            r = symgen.simulate(mdl, dt=dt, t_end=5.0, inputs={"F": src}, stepper=stepper)
            assert r.status == "completed"
            errs.append(np.abs(r.x[:, 0] - _exact(r.t)).max())
            runs.append(r.x[:, 0])
            # row j: the input its step used, at the step's end time t_j
            np.testing.assert_allclose(r.u[:, 0], F0 * np.sin(OMEGA * r.t), rtol=0, atol=2e-7)
        # the trapezoidal rule's second order; the error at h/2 within the discretization error
        # measured from the two runs (Richardson: e(h/2) ≈ |x_h − x_{h/2}| / 3), with a margin
        assert 3.5 < errs[0] / errs[1] < 4.5, (kind, errs)
        measured = np.abs(runs[0] - runs[1][::2]).max() / 3
        assert errs[1] <= 1.2 * measured, (kind, errs, measured)


def test_hold_table_applies_a_value_after_its_time():
    mdl = _mass_spring()
    # 0.07 is not a multiple of 0.01 in binary: the step ending at 7·0.01 still uses the old value
    r = symgen.simulate(mdl, dt=0.01, t_end=0.2, inputs={"F": ([0.0, 0.07], [1.0, 2.0], "hold")})
    u = r.input("F")
    assert np.all(u[r.t <= 0.07 + 1e-12] == 1.0) and np.all(u[r.t > 0.07 + 1e-12] == 2.0)


def test_inputs_are_validated_in_one_line():
    mdl = _mass_spring()
    with pytest.raises(ValueError, match="input 'F' has no value") as exc:
        symgen.simulate(mdl, dt=0.01, t_end=0.1)
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match=r"no input\(s\) \['G'\]"):
        symgen.simulate(mdl, dt=0.01, t_end=0.1, inputs={"F": 1.0, "G": 2.0})
    with pytest.raises(ValueError, match="increase strictly"):
        symgen.simulate(mdl, dt=0.01, t_end=0.1, inputs={"F": ([0, 0], [1, 2])})
    with pytest.raises(ValueError, match="'cubic' is not one of"):
        symgen.simulate(mdl, dt=0.01, t_end=0.1, inputs={"F": ([0, 1], [1, 2], "cubic")})
    with pytest.raises(ValueError, match="did not return a finite number"):    # at the start
        symgen.simulate(mdl, dt=0.01, t_end=0.1, inputs={"F": lambda t, x, xd: math.nan})
    r = symgen.simulate(mdl, dt=0.01, t_end=0.1,                            # later: data
                        inputs={"F": lambda t, x, xd: 1.0 if t < 0.05 else "oops"})
    assert r.status == "failed" and "did not return a finite number" in r.reason
    assert "internal error" not in r.reason
    assert r.t[-1] == pytest.approx(0.04)
    u = sp.Symbol("u")                       # a name in inputs= is the symbol f uses
    assert symgen.Model("named", ["y"], [[1]], [u], inputs=["u"]).inputs == (u,)
    with pytest.raises(symgen.ModelError, match="inputs may enter f and the outputs only"):
        (x,), _ = symgen.coordinates("x")
        symgen.Model("bad", [x], [[1 + symgen.inputs("F")]], [0])


def test_result_with_inputs_round_trips_npz_and_csv(tmp_path):
    r = symgen.simulate(_mass_spring(), dt=0.01, t_end=0.1,
                        inputs={"F": lambda t, x, xd: 2.0 + t})
    for suffix in (".npz", ".csv"):
        back = symgen.load_result(r.save(tmp_path / f"r{suffix}"))
        assert back.input_names == ("F",)
        np.testing.assert_array_equal(back.u, r.u)


def test_linearization_B_and_D_against_finite_differences_and_sympy(pend_models):
    mdl = pend_models[0]
    kern = symgen.build(mdl)
    T0, theta = 0.4, 0.9
    x0 = mdl.x0.copy()
    x0[mdl.coord_names.index("bar.theta")] = theta
    ls = symgen.linearize(kern, x=x0, inputs={"T": T0})
    n_out = len(mdl.output_names)              # "power", and the builder's "power:torque.bar"
    assert ls.B.shape == (2 * ls.k, 1) and ls.D.shape == (n_out, 1) and ls.input_names == ("T",)
    # oracle: the consistent accelerations at T0 ± δ at the same (x, ẋ) (δα̈ = N_Hᵀ δẍ)
    acc = []
    for T in (T0 + 1e-4, T0 - 1e-4):
        kern.u[:] = T
        cs = symgen.consistent_state(kern, 0.0, ls.x, ls.xd)
        acc.append(ls.N.T @ cs.xdd)
    kern.u[:] = 0.0
    fd = (acc[0] - acc[1]) / 2e-4
    np.testing.assert_allclose(ls.B[ls.k:, 0], fd, rtol=1e-6, atol=1e-9)
    assert np.all(ls.B[:ls.k] == 0)
    # D = ∂y/∂T at the state (for "power": v_x + 1): sympy's derivative of each output expression
    T = mdl.inputs[0]
    subs = dict(zip(mdl.coords, ls.x)) | dict(zip(mdl.velocities, ls.xd))
    subs |= {p: v for p, v in mdl.params.items()}
    for i, name in enumerate(mdl.output_names):
        dy = sp.diff(mdl.outputs[name], T)
        assert ls.D[i, 0] == pytest.approx(float(dy.xreplace(subs)), rel=1e-8, abs=1e-10)


MODEL_FILE = '''
import sympy as sp
import symgen

def model():      # the model of _mass_spring (the same hash: its build is cached)
    (x,), (xd,) = symgen.coordinates("x")
    F = symgen.inputs("F")
    k, m = sp.symbols("k m")
    return symgen.Model("forced_msd", [x], [[m]], [F - k * x], params={"k": 4.0, "m": 1.0},
                        outputs={"work_rate": F * xd}, settings={"dt": 0.01, "t_end": 2.0})
'''

def test_cli_input_from_csv_and_show(tmp_path):
    model = tmp_path / "forced.py"
    model.write_text(MODEL_FILE)
    tt = np.linspace(0.0, 2.0, 2001)
    table = tmp_path / "F.csv"
    rows = "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(tt, np.sin(3 * tt)))
    table.write_text("time,F\n" + rows)
    out = tmp_path / "r.csv"
    cmd = [sys.executable, "-m", "symgen"]
    run = subprocess.run(cmd + ["simulate", str(model), "--input", f"F={table}", "--out", str(out),
                                "-q"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    r = symgen.load_result(out)
    assert r.input_names == ("F",)
    np.testing.assert_allclose(r.u[:, 0], np.sin(3 * r.t), atol=1e-6)
    assert np.abs(r.x[:, 0] - _exact(r.t)).max() < 1e-3          # h = 0.01: error ~ 2.4e-4
    missing = subprocess.run(cmd + ["simulate", str(model), "-q"], capture_output=True, text=True)
    assert missing.returncode != 0
    assert "input 'F' has no value" in missing.stderr and missing.stderr.count("\n") == 1
    show = subprocess.run(cmd + ["show", str(model)], capture_output=True, text=True)
    assert show.returncode == 0 and "inputs:      F" in show.stdout


DRIVER = r"""
#include <math.h>
#include <stdio.h>
#include "forced_msd.h"

int main(void)
{
    const double h = 0.01, F0 = 1.0, W = 3.0;
    double x[1] = {0.0}, xd[1] = {0.0}, xdd[1] = {0.0}, lam[1] = {0.0}, u[1] = {0.0};
    const double *nx, *nxd, *nxdd, *nlam, *res;
    double om;
    int it, i;
    sg_failure fail;
    sg_options o = sg_options_default(SG_NULLSPACE);
    sg_stepper *s;
    o.h = h;
    s = sg_stepper_new(&forced_msd_model, &o);
    if (!s) return 2;
    sg_set_inputs(s, u);                            /* u(t0) */
    if (sg_initial_state(s, forced_msd_param_defaults, 0.0, x, xd, xdd, lam) != 0) return 3;
    sg_start(s, forced_msd_param_defaults, 0.0, x, xd, xdd, lam);
    for (i = 0; i < 200; ++i) {
        u[0] = F0 * sin(W * (i + 1) * h);           /* the step's inputs at its end */
        sg_set_inputs(s, u);
        if (sg_step(s, forced_msd_param_defaults, i * h, x, xd, xdd, lam, &it, &fail) != SG_OK)
            return 4;
        sg_state(s, &nx, &nxd, &nxdd, &nlam, &res, &om);
        x[0] = nx[0]; xd[0] = nxd[0]; xdd[0] = nxdd[0];
        printf("%.17g\n", x[0]);
    }
    sg_stepper_free(s);
    return 0;
}
"""


#: DRIVER with the input held over 5 steps and restarted at each jump (sg_restart), as a "hold"
#: table in simulate
DRIVER_HOLD = DRIVER.replace(
    """        u[0] = F0 * sin(W * (i + 1) * h);           /* the step's inputs at its end */
        sg_set_inputs(s, u);
""", """        if (i % 5 == 0 && i > 0) {                  /* a jump: xdd, lam of the new value */
            u[0] = F0 * sin(W * i * h);
            sg_set_inputs(s, u);
            if (sg_restart(s, forced_msd_param_defaults, i * h, x, xd, xdd, lam) != 0) return 5;
        }
""")


def _driver_x(tmp_path, driver: str) -> np.ndarray:
    """x of the forced mass-spring after each step of a C program of its own (strict C99,
    -Werror; under the sanitizers where they run)."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = symgen.generate(_mass_spring(), tmp_path)
    (tmp_path / "main.c").unlink()
    (tmp_path / "driver.c").write_text(driver)
    sources = sorted(p.name for p in tmp_path.glob("*.c"))
    flags = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-O1", "-g"]
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    (tmp_path / "probe.cc").write_text("int main(void) { return 0; }\n")
    probe = subprocess.run([cc, "-x", "c", *san, "probe.cc", "-o", "probe"], cwd=tmp_path,
                           capture_output=True)
    if probe.returncode != 0 or not _runs(tmp_path / "probe"):
        san = []                        # no sanitizer runtime here (test_sanitizers skips too)
    build = subprocess.run([cc, *flags, *san, *sources, "-lm", "-o", "drv"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert build.returncode == 0 and build.stderr == "", build.stderr
    run = subprocess.run([str(tmp_path / "drv")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == "", (run.returncode, run.stderr)
    assert src.name == "forced_msd"
    return np.array([float(v) for v in run.stdout.split()])


def test_c_driver_sets_inputs_between_steps(tmp_path):
    """A C program of its own sets the inputs between steps with sg_set_inputs and follows
    simulate's run of the same rule."""
    x_c = _driver_x(tmp_path, DRIVER)
    r = symgen.simulate(_mass_spring(), dt=0.01, t_end=2.0, stepper="compiled", preset="paper",
                        inputs={"F": lambda t, x, xd: F0 * math.sin(OMEGA * t)})
    # (the driver's sg_options_default is the paper's step)
    assert x_c.shape == (200,)
    np.testing.assert_allclose(x_c, r.x[1:, 0], rtol=0, atol=1e-12 * np.abs(r.x).max())


def test_c_driver_restarts_at_a_held_inputs_jump_as_a_hold_table(tmp_path):
    """A C program that holds the input over 5 steps and calls sg_restart at each jump follows
    simulate's "hold" table of the same values (the one rule for jumps, docs/inputs.md) on both
    steppers; without the restart it does not (the step after a jump from the old input's ẍ)."""
    x_c = _driver_x(tmp_path, DRIVER_HOLD)
    tk = np.arange(40) * 0.05
    for stepper in ("compiled", "python"):
        r = symgen.simulate(_mass_spring(), dt=0.01, t_end=2.0, stepper=stepper, preset="paper",
                            inputs={"F": (tk, F0 * np.sin(OMEGA * tk), "hold")})
        np.testing.assert_allclose(x_c, r.x[1:, 0], rtol=0, atol=1e-12 * np.abs(r.x).max())
    x_old = _driver_x(tmp_path, DRIVER_HOLD.replace("if (sg_restart", "if (0 && sg_restart"))
    assert np.abs(x_old - r.x[1:, 0]).max() > 1e-6 * np.abs(r.x).max()


def _runs(exe) -> bool:
    try:
        return subprocess.run([str(exe)], capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def test_spatial_builder_force_input_on_an_incline_block():
    """A block sliding down a line (SpatialSystem prismatic) pushed by an input force F along the
    line: constant acceleration g·d + F/m, which the trapezoidal rule integrates exactly
    (LambdifyKernels: the reference kernels take the inputs too)."""
    from symgen.mechanics import SpatialSystem

    d = np.array([1.0, 0.0, -1.0]) / math.sqrt(2.0)
    s = SpatialSystem("incline_in")
    s.ground_point("O", (0, 0, 0))
    s.point("P", 0.5 * d, velocity=0.4 * d)
    s.vector("u", (0, 1, 0))
    s.vector("w", np.cross(d, (0, 1, 0)))
    s.vector("n", d)
    s.body("block", mass=2.0, inertia=(0.1, 0.2, 0.3), com=0.5 * d, points=["P"],
           vectors=["u", "w", "n"])
    s.prismatic("ground", "O", "block", "P", axis=tuple(d), name="slide")
    s.gravity(9.81, direction=(0, 0, -1))
    F = s.input("F")
    s.force("block", "P", [F * v for v in d])
    mdl = s.model()
    assert mdl.input_names == ("F",)
    r = symgen.simulate(symgen.LambdifyKernels(mdl), dt=1e-2, t_end=0.5, inputs={"F": 3.0})
    a = -9.81 * d[2] + 3.0 / 2.0
    s_exact = 0.5 + 0.4 * r.t + 0.5 * a * r.t ** 2
    assert np.abs(r.x[:, 0:3] - np.outer(s_exact, d)).max() < 1e-12


def test_planar_spring_preload_input_equals_the_baked_preload():
    """A spring whose free length is an input (its energy then stays out of V) moves the body as
    the same spring with the length written in (LambdifyKernels, no compiler)."""
    def system(length):
        mech = PlanarSystem("spring_in")
        b = mech.body("m", mass=1.0, inertia=0.1, x0=(1.2, 0.1, 0.0))
        L = mech.input("L") if length is None else length
        mech.spring("ground", (0, 0), b, (0, 0), k=50.0, c=0.3, length=L)
        return mech.model()

    with_input, baked = system(None), system(1.0)
    assert with_input.input_names == ("L",) and with_input.V is None and baked.V is not None
    r_in = symgen.simulate(symgen.LambdifyKernels(with_input), dt=1e-2, t_end=0.5,
                           inputs={"L": 1.0})
    r_b = symgen.simulate(symgen.LambdifyKernels(baked), dt=1e-2, t_end=0.5)
    assert np.abs(r_in.x - r_b.x).max() <= 1e-12 * np.abs(r_b.x).max()
