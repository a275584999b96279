"""FMI 2.0 and 3.0 co-simulation FMUs (issue 23, item 3), driven by FMPy and by a C master.

Oracles: symgen.simulate at the same internal step (the FMU runs the same C runtime: equal to
round-off); for a tunable parameter changed mid-run, two simulate runs, the second started from
the first's end state with the new value; the exact solution of a mass-spring under the
zero-order-held input (closed form, interval by interval); a fine fixed-step run for the
error-controlled FMU; FMPy's validator.
"""
import json
import math
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen.fmu import export_fmu
from symgen.loader import load_model

fmpy = pytest.importorskip("fmpy")
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi2 import FMU2Slave, defaultCallbacks  # noqa: E402
from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE  # noqa: E402
from fmpy.fmi3 import FMU3Slave  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

K_SPRING, MASS, F0, OMEGA = 4.0, 1.0, 1.0, 3.0


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    mdl = load_model("stiff_pendulum")
    return mdl, export_fmu(mdl, tmp_path_factory.mktemp("fmu") / "sp.fmu")


@pytest.fixture(scope="module")
def pendulum3(tmp_path_factory):
    mdl = load_model("stiff_pendulum")
    return mdl, export_fmu(mdl, tmp_path_factory.mktemp("fmu3") / "sp3.fmu", fmi_version=3)


def _mass_spring(dt):
    (x,), (xd,) = symgen.coordinates("x")
    F = symgen.inputs("F")
    k, m = sp.symbols("k m")
    return symgen.Model("forced_msd", [x], [[m]], [F - k * x], params={"k": K_SPRING, "m": MASS},
                        outputs={"work_rate": F * xd}, settings={"dt": dt, "t_end": 5.0})


def _held_exact(times, values, H):
    """x'' + (k/m) x = F_i/m with F_i held on [t_i, t_i + H], from rest: exact, interval by
    interval."""
    w = math.sqrt(K_SPRING / MASS)
    x, v, out = 0.0, 0.0, [0.0]
    for F in values[:-1]:
        a = x - F / K_SPRING
        x, v = (F / K_SPRING + a * math.cos(w * H) + v / w * math.sin(w * H),
                -a * w * math.sin(w * H) + v * math.cos(w * H))
        out.append(x)
    return np.array(out)


def test_model_description_validates_and_lists_the_variables(pendulum, capsys):
    mdl, path = pendulum
    assert validate_fmu(str(path)) == []
    md = fmpy.read_model_description(str(path))
    assert md.fmiVersion == "2.0" and md.coSimulation.modelIdentifier == mdl.name
    by = {v.name: v for v in md.modelVariables}
    for name, value in zip(mdl.param_names, mdl.param_values):
        assert by[name].causality == "parameter" and float(by[name].start) == value
    for name in mdl.output_names:
        assert by[name].causality == "output"
    for name, value in zip(mdl.coord_names, mdl.x0):
        assert by[name].causality == "local" and float(by[name].start) == value
    assert [u.variable.name for u in md.outputs] == (list(mdl.output_names)
                                                      + [f"reaction:{k}" for k in mdl.reactions])
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    assert f"binaries/linux64/{mdl.name}.so" in names
    assert {"sources/fmi2Functions.c", "sources/fmu_model.h", f"sources/{mdl.name}.c",
            "sources/symgen_runtime.c"} <= set(names)
    fmpy.dump(str(path))
    assert "stiff_pendulum" in capsys.readouterr().out


#: A C master over the FMU's sources (one translation unit with fmi2Functions.c): two instances
#: with T0 = 5 and 9, 50 steps of 0.1 each, then the first reset and run again, an FMU state
#: round trip, a fixed parameter (L) set after the initialization and a step that is not a
#: multiple of dt (both refused); prints theta of each run.
DRIVER = r"""
#include "fmi2Functions.c"

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env; (void)status; (void)category;
    fprintf(stderr, "[%s] %s\n", name, message);
}

static double run(fmi2Component c, double T0)
{
    const fmi2ValueReference vr_T0 = VR_PAR + 3, vr_theta = VR_OUT;   /* m L g T0 wbar */
    double theta = 0.0;
    int i;
    if (fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) != fmi2OK) return NAN;
    if (fmi2SetReal(c, &vr_T0, 1, &T0) != fmi2OK) return NAN;
    if (fmi2EnterInitializationMode(c) != fmi2OK || fmi2ExitInitializationMode(c) != fmi2OK)
        return NAN;
    for (i = 0; i < 50; ++i)
        if (fmi2DoStep(c, 0.1 * i, 0.1, fmi2True) != fmi2OK) return NAN;
    fmi2GetReal(c, &vr_theta, 1, &theta);
    return theta;
}

/* One FMU state round trip at t = 5: the state got, 5 steps, the state serialized, deserialized
 * and set, the same 5 steps again (equal bit for bit?); a corrupted copy refused; then the state
 * at t = 5 set back.  1 when all of it held. */
static int state_round_trip(fmi2Component c)
{
    const fmi2ValueReference vr_theta = VR_OUT;
    fmi2FMUstate s = NULL, s2 = NULL;
    fmi2Byte *bytes = NULL;
    double first[5], second[5];
    size_t size = 0;
    int i, ok;
    ok = fmi2GetFMUstate(c, &s) == fmi2OK;
    for (i = 0; i < 5; ++i)
        ok = ok && fmi2DoStep(c, 5.0 + 0.1 * i, 0.1, fmi2False) == fmi2OK
             && fmi2GetReal(c, &vr_theta, 1, &first[i]) == fmi2OK;
    ok = ok && fmi2SerializedFMUstateSize(c, s, &size) == fmi2OK && (bytes = malloc(size))
         && fmi2SerializeFMUstate(c, s, bytes, size) == fmi2OK
         && fmi2DeSerializeFMUstate(c, bytes, size, &s2) == fmi2OK
         && fmi2SetFMUstate(c, s2) == fmi2OK;
    for (i = 0; i < 5; ++i)
        ok = ok && fmi2DoStep(c, 5.0 + 0.1 * i, 0.1, fmi2False) == fmi2OK
             && fmi2GetReal(c, &vr_theta, 1, &second[i]) == fmi2OK && second[i] == first[i];
    if (bytes) bytes[size - 1] ^= 1;
    ok = ok && fmi2DeSerializeFMUstate(c, bytes, size, &s2) == fmi2Error
         && fmi2SetFMUstate(c, s) == fmi2OK;
    free(bytes);
    fmi2FreeFMUstate(c, &s);
    fmi2FreeFMUstate(c, &s2);
    return ok && s == NULL;
}

int fmi3_master(void);

int main(void)
{
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component a = fmi2Instantiate("a", fmi2CoSimulation, FMU_GUID, "", &cb, 0, 0);
    fmi2Component b = fmi2Instantiate("b", fmi2CoSimulation, FMU_GUID, "", &cb, 0, 0);
    const fmi2ValueReference vr_L = VR_PAR + 1, vr_T0 = VR_PAR + 3;
    const double L = 2.0, nan = NAN;
    double ta, tb, again;
    int odd, state;
    if (!a || !b || fmi2Instantiate("c", fmi2CoSimulation, "{wrong}", "", &cb, 0, 0)) return 2;
    ta = run(a, 5.0);
    tb = run(b, 9.0);
    fmi2Reset(a);
    again = run(a, 5.0);
    state = state_round_trip(a);
    odd = fmi2SetReal(a, &vr_T0, 1, &nan) == fmi2Error && fmi2DoStep(a, 5.0, 1e300, fmi2True)
          == fmi2Error && fmi2DoStep(a, 5.0, 0.1, fmi2True) == fmi2OK    /* (refused: unchanged) */
          && fmi2SetReal(a, &vr_L, 1, &L) == fmi2Error && fmi2DoStep(a, 5.1, 0.15, fmi2True)
          == fmi2Error && fmi2DoStep(a, 5.25, 0.1, 0) == fmi2Error;  /* not at the FMU's time */
    printf("%.17g %.17g %.17g %d %d\n", ta, tb, again, odd, state);
    fmi2Terminate(a);
    fmi2Terminate(b);
    fmi2FreeInstance(a);
    fmi2FreeInstance(b);
    return fmi3_master();
}
"""
#: The same through fmi3Functions.c (its own translation unit, linked with the one above), and a
#: tunable parameter set between steps: T0 = 5 until t = 2.5, then 9 (the step's outputs read).
DRIVER3 = r"""
#include "fmi3Functions.c"

static void log_message(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                        fmi3String message)
{
    fprintf(stderr, "[%s] %s\n", (const char *)env, message);
    (void)status; (void)category;
}

static double run3(fmi3Instance c, double T0, double T0_later)
{
    const fmi3ValueReference vr_T0 = VR_PAR + 3, vr_theta = VR_OUT;
    fmi3Boolean event = true, stop = true, early = true;
    double theta = 0.0, last = -1.0;
    int i;
    if (fmi3SetFloat64(c, &vr_T0, 1, &T0, 1) != fmi3OK) return NAN;
    if (fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0) != fmi3OK
        || fmi3ExitInitializationMode(c) != fmi3OK) return NAN;
    for (i = 0; i < 50; ++i) {
        if (i == 25 && fmi3SetFloat64(c, &vr_T0, 1, &T0_later, 1) != fmi3OK) return NAN;
        if (fmi3DoStep(c, 0.1 * i, 0.1, true, &event, &stop, &early, &last) != fmi3OK
            || event || stop || early || fabs(last - 0.1 * (i + 1)) > 1e-12) return NAN;
    }
    fmi3GetFloat64(c, &vr_theta, 1, &theta, 1);
    return theta;
}

int fmi3_master(void)
{
    static char na[] = "a3", nb[] = "b3";
    fmi3Instance a = fmi3InstantiateCoSimulation("a3", FMU_GUID, "", false, false, false, false,
                                                 NULL, 0, na, log_message, NULL);
    fmi3Instance b = fmi3InstantiateCoSimulation("b3", FMU_GUID, "", false, false, false, false,
                                                 NULL, 0, nb, log_message, NULL);
    const fmi3ValueReference vr_L = VR_PAR + 1;
    const double L = 2.0;
    double ta, tb, again;
    int refused;
    if (!a || !b) return 3;
    ta = run3(a, 5.0, 5.0);
    tb = run3(b, 5.0, 9.0);
    fmi3Reset(a);
    again = run3(a, 5.0, 5.0);
    refused = fmi3SetFloat64(a, &vr_L, 1, &L, 1) == fmi3Error
              && fmi3EnterConfigurationMode(a) == fmi3Error;
    printf("%.17g %.17g %.17g %d\n", ta, tb, again, refused);
    fmi3Terminate(a);
    fmi3Terminate(b);
    fmi3FreeInstance(a);
    fmi3FreeInstance(b);
    return 0;
}
"""
STRICT = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-g", "-O1"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def _sanitizers_work(tmp_path, env) -> bool:
    """cc builds and runs a program with -fsanitize=address,undefined here."""
    (tmp_path / "probe.c").write_text("#include <stdlib.h>\nint main(void) { char *p = "
                                      "malloc(4); p[0] = 0; free(p); return 0; }\n")
    build = subprocess.run(["cc", *SANITIZE, "-o", str(tmp_path / "probe"),
                            str(tmp_path / "probe.c")], capture_output=True, text=True)
    return build.returncode == 0 and subprocess.run(
        [str(tmp_path / "probe")], capture_output=True, env=env).returncode == 0


def _split_run(mdl, T0, T0_later, t_switch, t_end):
    """theta of simulate with T0 until t_switch, then a second run from its end state with
    T0_later (no projection: the state is on q = 0; xdd, lam solved anew): the oracle of a tunable
    parameter changed between communication steps."""
    first = symgen.simulate(mdl, t_end=t_switch, params={"T0": T0})
    second = symgen.simulate(mdl, t0=t_switch, t_end=t_end, params={"T0": T0_later},
                             x0=first.x[-1], xd0=first.xd[-1], consistent=False)
    assert first.status == second.status == "completed"
    return first, second


def test_c_master_warning_free_and_sanitizer_clean(pendulum, pendulum3, tmp_path):
    """The FMUs' sources compile with -Wall -Wextra -pedantic -Werror and a C master runs them
    (FMI 2 and 3: two instances, reset, a refused fixed parameter and step; FMI 2: an FMU state
    round trip; FMI 3: a tunable parameter changed mid-run) clean under ASan/UBSan where the
    sanitizers work."""
    mdl, path = pendulum
    for fmu in (path, pendulum3[1]):        # the same model: the shared files are the same
        with zipfile.ZipFile(fmu) as zf:
            zf.extractall(tmp_path)
    src = tmp_path / "sources"
    (src / "driver.c").write_text(DRIVER)
    (src / "driver3.c").write_text(DRIVER3)
    files = [str(src / f) for f in ("driver.c", "driver3.c", f"{mdl.name}.c", "symgen_runtime.c",
                                    "symgen_sparse.c")]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:exitcode=99",
               UBSAN_OPTIONS="halt_on_error=1")
    build = subprocess.run(["cc", *STRICT, "-o", str(tmp_path / "plain"), *files, "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0 and build.stderr == "", build.stderr
    exe = tmp_path / "plain"
    if _sanitizers_work(tmp_path, env):
        build = subprocess.run(["cc", *STRICT, *SANITIZE, "-o", str(tmp_path / "san"), *files,
                                "-lm"], capture_output=True, text=True)
        assert build.returncode == 0 and build.stderr == "", build.stderr
        exe = tmp_path / "san"
    out = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    fmi2, fmi3 = (line.split() for line in out.stdout.splitlines())
    refs = {T0: symgen.simulate(mdl, t_end=5.0, params={"T0": T0}).outputs[-1, 0]
            for T0 in (5.0, 9.0)}
    for T0, value in ((5.0, fmi2[0]), (9.0, fmi2[1]), (5.0, fmi3[0])):
        assert abs(float(value) - refs[T0]) <= 1e-9 * abs(refs[T0])
    _, second = _split_run(mdl, 5.0, 9.0, 2.5, 5.0)
    ref = second.outputs[-1, 0]
    assert abs(float(fmi3[1]) - ref) <= 1e-9 * abs(ref)
    assert abs(ref - refs[5.0]) > 1e-3 * abs(ref)         # the change took effect
    assert fmi2[2] == fmi2[0] and fmi2[3] == "1" and fmi3[2] == fmi3[0] and fmi3[3] == "1"
    assert fmi2[4] == "1"                                    # the FMU state round trip held
    assert "fmi2DeSerializeFMUstate: the state is corrupted" in out.stderr
    assert "not a whole number of the internal step" in out.stderr
    assert "[a] fmi2SetReal: parameter T0 (value reference 10) cannot be nan" in out.stderr
    assert "more than the 100000 one communication step may take" in out.stderr
    assert "[a] fmi2SetReal: parameter L (value reference 8) is a fixed parameter" in out.stderr
    assert "[a3] fmi3SetFloat64: parameter L (value reference 8) is a fixed parameter" \
        in out.stderr


@pytest.mark.parametrize("interval", [0.1, 1.0])        # 1 and 10 internal steps a call
def test_stiff_pendulum_equals_simulate_with_a_changed_parameter(pendulum, interval):
    mdl, path = pendulum
    r = fmpy.simulate_fmu(str(path), stop_time=20.0, output_interval=interval,
                          start_values={"T0": 5.0},
                          output=["theta", "pendulum.x", "pendulum.y_dot"])
    s = symgen.simulate(mdl, t_end=20.0, params={"T0": 5.0})
    assert s.status == "completed"
    rows = s.t[::round(interval / 0.1)]
    np.testing.assert_allclose(r["time"], rows, rtol=0, atol=1e-12)
    k = round(interval / 0.1)
    for col, ref in (("theta", s.outputs[::k, 0]), ("pendulum.x", s.x[::k, 0]),
                     ("pendulum.y_dot", s.xd[::k, 1])):
        assert np.abs(r[col] - ref).max() <= 1e-9 * np.abs(ref).max(), col
    assert np.abs(s.outputs[:, 0]).max() > 0.3             # T0 = 5 took effect


def _run(slave, T0, steps, h=0.1):
    slave.setupExperiment(startTime=0.0)
    slave.setReal([slave.vr["T0"]], [T0])
    slave.enterInitializationMode()
    slave.exitInitializationMode()
    for i in range(steps):
        slave.doStep(currentCommunicationPoint=i * h, communicationStepSize=h)
    return slave.getReal([slave.vr["theta"]])[0]


def test_two_instances_and_reset(pendulum, tmp_path):
    mdl, path = pendulum
    md = fmpy.read_model_description(str(path))
    unzipdir = fmpy.extract(str(path), str(tmp_path / "unzipped"))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    slaves = []
    for name in ("a", "b"):
        sl = FMU2Slave(guid=md.guid, unzipDirectory=unzipdir,
                       modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
        sl.instantiate()
        sl.vr = vr
        slaves.append(sl)
    got = [_run(slaves[0], 5.0, 50), _run(slaves[1], 9.0, 50)]
    slaves[0].reset()
    again = _run(slaves[0], 5.0, 50)
    for sl in slaves:
        sl.terminate()
        sl.freeInstance()
    for T0, value in zip((5.0, 9.0), got):
        ref = symgen.simulate(mdl, t_end=5.0, params={"T0": T0}).outputs[-1, 0]
        assert abs(value - ref) <= 1e-9 * abs(ref)
    assert again == got[0]


def test_input_held_over_communication_steps(tmp_path):
    H = 0.05
    tc = np.arange(0.0, 5.0 + H / 2, H)
    vals = F0 * np.sin(OMEGA * tc)
    sig = np.array(list(zip(tc, vals)), dtype=[("time", float), ("F", float)])
    exact = _held_exact(tc, vals, H)
    errors = []
    for dt in (H / 10, H / 20):
        mdl = _mass_spring(dt)
        path = export_fmu(mdl, tmp_path / f"msd{len(errors)}.fmu")
        assert validate_fmu(str(path)) == []
        r = fmpy.simulate_fmu(str(path), stop_time=5.0, output_interval=H, input=sig,
                              output=["x", "work_rate"])
        s = symgen.simulate(mdl, inputs={"F": (tc, vals, "hold")})
        k = round(H / dt)
        assert np.abs(r["x"] - s.x[::k, 0]).max() <= 1e-12 * np.abs(s.x).max()
        # the output F·xd at a communication point: FMPy samples it before it sets the next
        # input, so F is the one held over the step just taken
        held = np.r_[vals[0], vals[:-1]]
        np.testing.assert_allclose(r["work_rate"], held * s.xd[::k, 0], rtol=0, atol=1e-12)
        errors.append(np.abs(r["x"] - exact).max())
    # against the held input's exact response: the default step's order, fourth (the step
    # after each jump of the input starts from ẍ of the new input: sg_restart in the FMU and in
    # simulate's "hold" table; docs/fmu.md); before, first order (ratio 2.0, 3e-3 at dt = H/10)
    assert errors[0] < 1e-8 * np.abs(exact).max()
    assert math.log2(errors[0] / errors[1]) > 3.7, errors


def test_an_input_jump_survives_an_fmu_state_saved_before_the_step(tmp_path):
    """An input set between steps marks a restart (ẍ, λ of the new input) that the next DoStep
    takes; an FMU state got between the set and the step carries it: the steps after setting
    that state repeat the steps after the get bit for bit, and both equal simulate's "hold"
    table with the same values (the same rule, sg_restart) to round-off."""
    H, dt = 0.05, 0.005
    path = export_fmu(_mass_spring(dt), tmp_path / "msd_state.fmu")
    md = fmpy.read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    sl = FMU2Slave(guid=md.guid, unzipDirectory=fmpy.extract(str(path), str(tmp_path / "u")),
                   modelIdentifier=md.coSimulation.modelIdentifier, instanceName="s")
    sl.instantiate()
    sl.setupExperiment(startTime=0.0)
    sl.setReal([vr["F"]], [0.5])
    sl.enterInitializationMode()
    sl.exitInitializationMode()
    for i in range(4):
        sl.doStep(currentCommunicationPoint=i * H, communicationStepSize=H)
    sl.setReal([vr["F"]], [2.0])                  # the jump at t = 4 H, before the state
    state = sl.getFMUstate()
    runs = []
    for _ in range(2):
        xs = []
        for i in range(4, 8):
            sl.doStep(currentCommunicationPoint=i * H, communicationStepSize=H)
            xs.append(sl.getReal([vr["x"]])[0])
        runs.append(xs)
        sl.setFMUstate(state)
    sl.freeFMUstate(state)
    sl.terminate()
    sl.freeInstance()
    assert runs[0] == runs[1]
    r = symgen.simulate(_mass_spring(dt), t_end=8 * H, inputs={"F": ([0.0, 4 * H], [0.5, 2.0],
                                                                     "hold")})
    ref = r.x[np.searchsorted(r.t, np.arange(5, 9) * H - 1e-12), 0]
    assert np.abs(np.array(runs[0]) - ref).max() <= 1e-12 * np.abs(ref).max()


def test_communication_step_not_a_multiple_of_dt_is_an_error(tmp_path):
    path = export_fmu(_mass_spring(0.01), tmp_path / "msd.fmu")
    messages = []
    with pytest.raises(FMICallException):
        fmpy.simulate_fmu(str(path), stop_time=1.0, output_interval=0.015, output=["x"],
                          logger=lambda env, name, status, cat, msg: messages.append(msg.decode()))
    assert any("not a whole number of the internal step" in m for m in messages), messages


def test_failing_step_is_fmi2error_not_nan(tmp_path):
    (x,), _ = symgen.coordinates("x")
    mdl = symgen.Model("blowup", [x], [[1]], [x**2], x0=[1.0],       # x'' = x^2 blows up
                       settings={"dt": 1e-2, "t_end": 5.0, "preset": "paper"})   # (diverges; the
    # corrected step's Newton fails first, at t = 0.97: a failed step is the same fmi2Error)
    s = symgen.simulate(mdl)
    assert s.status == "diverged"
    path = export_fmu(mdl, tmp_path / "blowup.fmu")
    messages = []
    with pytest.raises(FMICallException) as info:
        fmpy.simulate_fmu(str(path), stop_time=5.0, output_interval=1e-2, output=["x"],
                          logger=lambda env, name, status, cat, msg: messages.append(msg.decode()))
    assert "error" in str(info.value)
    # the step that diverged is simulate's: from its last recorded row
    assert any("diverged" in m and f"from t = {s.t[-1]:.9g} to" in m for m in messages), messages


def test_error_controlled_fmu_lands_on_the_communication_points(tmp_path):
    mdl = load_model("stiff_pendulum", T0=5.0)
    path = export_fmu(mdl, tmp_path / "spa.fmu", dt="auto", rtol=1e-6)
    assert validate_fmu(str(path)) == []
    r = fmpy.simulate_fmu(str(path), stop_time=20.0, output_interval=0.5, output=["theta"])
    ref = symgen.simulate(mdl, t_end=20.0, dt=1e-3)                # fine fixed step (oracle)
    assert np.allclose(r["time"], ref.t[::500], rtol=0, atol=1e-12)
    err = np.abs(r["theta"] - ref.outputs[::500, 0]).max()
    auto = symgen.simulate(mdl, t_end=20.0, dt="auto", rtol=1e-6, t_eval=r["time"])
    err_auto = np.abs(auto.outputs[:, 0] - ref.outputs[::500, 0]).max()
    # as accurate as simulate's own error control at the same rtol (measured 1.7e-5 vs 1.8e-5),
    # far below the model's fixed step's error (1.4e-4)
    assert err <= 3 * err_auto and err < 5e-5


def test_bad_requests_are_one_line_errors(tmp_path, capsys):
    from symgen.cli import main

    (x,), _ = symgen.coordinates("x")
    clash = symgen.Model("clash", [x], [[1]], [-x], outputs={"x": 2 * x})
    with pytest.raises(ValueError, match="with dt='auto'"):
        export_fmu(clash, tmp_path / "clash.fmu", rtol=1e-3)
    assert not (tmp_path / "clash.fmu").exists()
    assert main(["fmu", "stiff_pendulum", "-o", str(tmp_path / "a.fmu"), "--rtol", "1e-3"]) == 2
    assert main(["export", "stiff_pendulum", "--fmi", "3", "-o", str(tmp_path / "a.fmu"),
                 "--dt", "-1"]) == 2
    with pytest.raises(ValueError, match="fmi_version must be 2 or 3"):
        export_fmu(clash, tmp_path / "c.fmu", fmi_version=4)
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: --rtol and --atol are the error control's: give them with --dt auto",
                   "error: --dt -1: give a step > 0 or auto"]
    assert main(["export", "stiff_pendulum", "-o", str(tmp_path / "a.fmu")]) == 2
    assert "the following arguments are required: --fmi" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.fmu"))


def test_fmi3_validates_and_equals_simulate(pendulum3):
    """FMI 3.0: a valid model description (time independent, T0 tunable, the length L fixed: the
    constraints contain it) and the results of simulate at the same step, T0 set as a start."""
    mdl, path = pendulum3
    assert validate_fmu(str(path)) == []
    md = fmpy.read_model_description(str(path))
    assert md.fmiVersion == "3.0" and md.coSimulation.modelIdentifier == mdl.name
    by = {v.name: v for v in md.modelVariables}
    assert by["time"].causality == "independent"
    assert by["T0"].variability == "tunable" and by["L"].variability == "fixed"
    assert [u.variable.name for u in md.outputs] == (list(mdl.output_names)
                                                      + [f"reaction:{k}" for k in mdl.reactions])
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    assert f"binaries/{fmpy.platform_tuple}/{mdl.name}.so" in names
    r = fmpy.simulate_fmu(str(path), stop_time=5.0, output_interval=0.1,
                          start_values={"T0": 5.0}, output=["theta", "pendulum.y_dot"])
    s = symgen.simulate(mdl, t_end=5.0, params={"T0": 5.0})
    np.testing.assert_allclose(r["time"], s.t, rtol=0, atol=1e-12)
    assert np.abs(r["theta"] - s.outputs[:, 0]).max() <= 1e-9 * np.abs(s.outputs[:, 0]).max()
    assert np.abs(r["pendulum.y_dot"] - s.xd[:, 1]).max() <= 1e-9 * np.abs(s.xd[:, 1]).max()


@pytest.mark.parametrize("fmi_version", [2, 3])
def test_tunable_parameter_changed_mid_run(pendulum, pendulum3, fmi_version):
    """T0 from 5 to 9 at t = 2.5 (FMPy sets a tunable parameter from its input table between
    steps): the FMU restarts there as a second simulate from the first's end state does."""
    mdl, path = pendulum if fmi_version == 2 else pendulum3
    sig = np.array([(0.0, 5.0), (2.5, 9.0)], dtype=[("time", float), ("T0", float)])
    r = fmpy.simulate_fmu(str(path), stop_time=5.0, output_interval=0.1, input=sig,
                          output=["theta"])
    first, second = _split_run(mdl, 5.0, 9.0, 2.5, 5.0)
    ref = np.r_[first.outputs[:, 0], second.outputs[1:, 0]]
    np.testing.assert_allclose(r["time"], np.r_[first.t, second.t[1:]], rtol=0, atol=1e-12)
    assert np.abs(r["theta"] - ref).max() <= 1e-9 * np.abs(ref).max()
    unchanged = symgen.simulate(mdl, t_end=5.0, params={"T0": 5.0}).outputs[:, 0]
    assert np.abs(unchanged - ref).max() > 0.01 * np.abs(ref).max()    # the change took effect


def test_fmi3_fixed_parameter_after_initialization_is_refused(pendulum3, tmp_path):
    mdl, path = pendulum3
    md = fmpy.read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    messages = []
    slave = FMU3Slave(guid=md.guid, unzipDirectory=fmpy.extract(str(path), str(tmp_path / "u")),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="s")
    slave.instantiate(logMessage=lambda env, status, cat, msg: messages.append(msg.decode()))
    slave.setFloat64([vr["L"]], [1.5])                            # before: allowed
    slave.enterInitializationMode(startTime=0.0)
    slave.exitInitializationMode()
    slave.setFloat64([vr["T0"]], [2.0])                           # tunable: allowed
    with pytest.raises(FMICallException):
        slave.setFloat64([vr["L"]], [2.0])
    with pytest.raises(FMICallException):
        slave.setFloat64([vr["time"]], [2.0])
    assert slave.getFloat64([vr["L"]]) == [1.5]
    slave.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.1)
    assert slave.getFloat64([vr["time"]]) == [pytest.approx(0.1, abs=1e-15)]
    slave.terminate()
    slave.freeInstance()
    assert messages[0].startswith("fmi3SetFloat64: parameter L (value reference 8) is a fixed "
                                  "parameter (the constraints contain it)"), messages
    assert "is the time" in messages[1]


def test_fmi3_input_table_equals_simulate(tmp_path):
    H = 0.05
    tc = np.arange(0.0, 2.0 + H / 2, H)
    vals = F0 * np.sin(OMEGA * tc)
    sig = np.array(list(zip(tc, vals)), dtype=[("time", float), ("F", float)])
    mdl = _mass_spring(H / 10)
    path = export_fmu(mdl, tmp_path / "msd3.fmu", fmi_version=3)
    assert validate_fmu(str(path)) == []
    r = fmpy.simulate_fmu(str(path), stop_time=2.0, output_interval=H, input=sig,
                          start_values={"k": 6.0}, output=["x"])
    s = symgen.simulate(mdl, t_end=2.0, params={"k": 6.0}, inputs={"F": (tc, vals, "hold")})
    assert np.abs(r["x"] - s.x[::10, 0]).max() <= 1e-12 * np.abs(s.x).max()



@pytest.mark.parametrize("fmi_version", [2, 3])
def test_names_every_other_command_accepts_are_exported(tmp_path, fmi_version):
    """Issue 35.6: outputs named like a coordinate (an output point beside a body's coordinates),
    a velocity, a parameter or FMI 3.0's time are exported; the name stays with the input,
    parameter or output, the other becomes ``<kind>[<name>]``.  Oracle: x = cos t (x'' = -k x,
    k = 1, from x = 1 at rest)."""
    (x,), (xd,) = symgen.coordinates("x")
    k = sp.Symbol("k")
    mdl = symgen.Model("clash", [x], [[1]], [-k * x], params={"k": 1.0}, x0=[1.0],
                       outputs={"x": 2 * x, "k": 3 * x, "x_dot": xd, "time": 5 * x},
                       settings={"dt": 1e-3, "t_end": 1.0})
    path = export_fmu(mdl, tmp_path / f"clash{fmi_version}.fmu", fmi_version=fmi_version)
    assert validate_fmu(str(path)) == []
    names = [v.name for v in fmpy.read_model_description(str(path)).modelVariables]
    time_out = "output[time]"
    assert sorted(names) == sorted(["x", "output[k]", "x_dot", time_out, "k", "coordinate[x]",
                                    "velocity[x_dot]"] + (["time"] if fmi_version == 3 else []))
    r = fmpy.simulate_fmu(str(path), stop_time=1.0, output_interval=0.5,
                          output=["x", "output[k]", "x_dot", time_out, "coordinate[x]"])
    t = r["time"]
    err = 1e-6          # the trapezoidal rule's error at dt = 1e-3 over 1 s (h²ω³t/12 ≈ 1e-7)
    np.testing.assert_allclose(r["coordinate[x]"], np.cos(t), atol=err)
    np.testing.assert_allclose(r["x"], 2 * np.cos(t), atol=2 * err)
    np.testing.assert_allclose(r["output[k]"], 3 * np.cos(t), atol=3 * err)
    np.testing.assert_allclose(r["x_dot"], -np.sin(t), atol=err)
    np.testing.assert_allclose(r[time_out], 5 * np.cos(t), atol=5 * err)


def _slave(path, tmp_path, name="a"):
    md = fmpy.read_model_description(str(path))
    sl = FMU2Slave(guid=md.guid, unzipDirectory=fmpy.extract(str(path), str(tmp_path / name)),
                   modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    sl.instantiate()
    sl.vr = {v.name: v.valueReference for v in md.modelVariables}
    return sl


def test_inputs_set_after_initialization_start_the_run_as_simulate(tmp_path):
    """Issue 35.6: an input set between ExitInitializationMode and the first DoStep is the
    start's input (the run restarts there, as after a tunable parameter), so the co-simulation
    equals simulate with that input; before, the start's acceleration was the input 0's.
    Oracle: simulate at the same steps; x'' + 4x = 1 from rest is (1 - cos 2t)/4."""
    H, F = 0.01, 1.0
    mdl = _mass_spring(H)
    path = export_fmu(mdl, tmp_path / "msd.fmu")
    sl = _slave(path, tmp_path)
    sl.setupExperiment(startTime=0.0)
    sl.enterInitializationMode()
    sl.exitInitializationMode()
    sl.setReal([sl.vr["F"]], [F])
    xs = []
    for i in range(200):
        sl.doStep(currentCommunicationPoint=i * H, communicationStepSize=H)
        xs.append(sl.getReal([sl.vr["x"]])[0])
    sl.terminate()
    sl.freeInstance()
    s = symgen.simulate(mdl, t_end=2.0, inputs={"F": F})
    assert np.abs(np.array(xs) - s.x[1:, 0]).max() <= 1e-12
    exact = (1 - np.cos(2 * s.t[1:])) / 4
    assert np.abs(np.array(xs) - exact).max() < 1e-4      # h² ω³ t / 12 · F/k ≈ 7e-6


def _internal_steps(path, H, t_end=20.0):
    """The stiff pendulum's FMU with dt auto run by FMPy over communication steps H: its θ and
    the internal steps it took (counted from the FMU's log, one line a DoStep)."""
    import re
    lines = []
    r = fmpy.simulate_fmu(str(path), stop_time=t_end, output_interval=H, output=["theta"],
                          debug_logging=True,
                          logger=lambda comp, name, status, cat, msg: lines.append(msg.decode()))
    steps = [int(k) for k in re.findall(r"in (\d+) internal steps", "\n".join(lines))]
    assert len(steps) == round(t_end / H)
    return r, sum(steps)


def test_error_control_goes_on_across_communication_points(tmp_path):
    """Issue 35.6: with dt auto the error control goes on over communication points (where no
    input changed) instead of starting afresh at each: over 200 communication points the FMU
    takes about simulate's steps plus the landings (measured 533 against 288 + 200; it took 1443
    when it restarted), and stays as accurate as simulate at the same rtol."""
    mdl = load_model("stiff_pendulum", T0=5.0)
    path = export_fmu(mdl, tmp_path / "spa.fmu", dt="auto", rtol=1e-6)
    ref = symgen.simulate(mdl, t_end=20.0, dt=1e-3)                # fine fixed step (oracle)
    auto = symgen.simulate(mdl, t_end=20.0, dt="auto", rtol=1e-6)
    n_auto = len(auto.t) - 1                                      # (every step recorded)
    for H in (0.5, 0.1):
        r, steps = _internal_steps(path, H)
        points = round(20.0 / H)
        assert steps <= n_auto + 2 * points, (H, steps, n_auto)
        k = round(H / 1e-3)
        err = np.abs(r["theta"] - ref.outputs[::k, 0]).max()
        err_auto = np.abs(auto.outputs[:, 0] - np.interp(auto.t, ref.t, ref.outputs[:, 0])).max()
        assert err <= 3 * err_auto, (H, err, err_auto)


def test_two_instances_interleaved(tmp_path):
    """Issue 35.6: two instances of one FMU stepped turn by turn (different parameters, one with an
    input) each give their own simulate's run, to round-off: no state is shared."""
    mdl = _mass_spring(0.01)
    path = export_fmu(mdl, tmp_path / "msd.fmu")
    a, b = _slave(path, tmp_path, "a"), _slave(path, tmp_path, "b")
    for sl, k in ((a, 4.0), (b, 9.0)):
        sl.setupExperiment(startTime=0.0)
        sl.setReal([sl.vr["k"]], [k])
        sl.enterInitializationMode()
        sl.exitInitializationMode()
    got = {"a": [], "b": []}
    H = 0.05
    for i in range(40):
        t = i * H
        for name, sl in (("a", a), ("b", b)):
            sl.setReal([sl.vr["F"]], [math.sin(3 * t) if name == "a" else 1.0])
            sl.doStep(currentCommunicationPoint=t, communicationStepSize=H)
            got[name].append(sl.getReal([sl.vr["x"]])[0])
    for sl in (a, b):
        sl.terminate()
        sl.freeInstance()
    tc = np.arange(41) * H
    sa = symgen.simulate(mdl, t_end=2.0, params={"k": 4.0},
                         inputs={"F": (tc, np.sin(3 * tc), "hold")})
    sb = symgen.simulate(mdl, t_end=2.0, params={"k": 9.0}, inputs={"F": 1.0})
    assert np.abs(np.array(got["a"]) - sa.x[5::5, 0]).max() <= 1e-12
    assert np.abs(np.array(got["b"]) - sb.x[5::5, 0]).max() <= 1e-12


def test_second_export_reuses_the_cached_runtime(tmp_path, monkeypatch):
    """The FMU's binary links the runtime library that symgen's cache keeps for the FMU's flags:
    the first export compiles it, the second does not; both FMUs are the same bytes (the other
    tests run such binaries against simulate)."""
    import symgen.jit as jit

    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "cache"))
    compiles, compile_child = [], jit._run_child

    def counting(script, spec, workdir, what):
        compiles.append(what)
        return compile_child(script, spec, workdir, what)
    monkeypatch.setattr(jit, "_run_child", counting)
    mdl = load_model("stiff_pendulum")
    first = export_fmu(mdl, tmp_path / "first.fmu")
    assert compiles == ["the steppers' C runtime"]
    second = export_fmu(mdl, tmp_path / "second.fmu")
    assert compiles == ["the steppers' C runtime"]
    assert first.read_bytes() == second.read_bytes()
    assert len(list((tmp_path / "cache" / "lib").glob("*/libsymgen_runtime.a"))) == 1


def test_export_cli_fmi3_source_only_builds_from_its_description(tmp_path, capsys):
    """`symgen export --fmi 3 --source-only`: no binary; the sources its buildDescription.xml
    lists compile into one that runs as the exported binary does."""
    from fmpy.model_description import read_build_description
    from symgen.cli import main

    out = tmp_path / "sp.fmu"
    assert main(["export", "stiff_pendulum", "--fmi", "3", "--source-only", "-o", str(out)]) == 0
    assert capsys.readouterr().out == (f"wrote {out} (FMI 3.0 co-simulation, model "
                                       "stiff_pendulum, sources only)\n")
    with zipfile.ZipFile(out) as zf:
        assert not [n for n in zf.namelist() if n.startswith("binaries/")]
        zf.extractall(tmp_path / "fmu")
    assert validate_fmu(str(out)) == []
    (config,) = read_build_description(str(out))
    sources = [f for s in config.sourceFileSets for f in s.sourceFiles]
    lib = tmp_path / "fmu" / "binaries" / fmpy.platform_tuple / "stiff_pendulum.so"
    lib.parent.mkdir(parents=True)
    src = tmp_path / "fmu" / "sources"
    build = subprocess.run(["cc", "-std=c99", "-O0", "-shared", "-fPIC", "-o", str(lib)]
                           + [str(src / f) for f in sources] + ["-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    r = fmpy.simulate_fmu(str(tmp_path / "fmu"), stop_time=2.0, output_interval=0.1,
                          start_values={"T0": 5.0}, output=["theta"])
    s = symgen.simulate(load_model("stiff_pendulum"), t_end=2.0, params={"T0": 5.0})
    assert np.abs(r["theta"] - s.outputs[:, 0]).max() <= 1e-9 * np.abs(s.outputs[:, 0]).max()


@pytest.mark.parametrize("fmi_version", [2, 3])
def test_double_four_bar_fmu_validates_and_equals_simulate(tmp_path, fmi_version):
    """Issue 23's acceptance on a mechanism with singular passages (t ≈ 0.71 s, 1.24 s): the FMU
    validates and gives simulate's B0 at the communication points (the same C step)."""
    mdl = load_model("double_four_bar")
    path = export_fmu(mdl, tmp_path / f"dfb{fmi_version}.fmu", fmi_version=fmi_version)
    assert validate_fmu(str(path)) == []
    r = fmpy.simulate_fmu(str(path), stop_time=2.0, output_interval=0.1, output=["B0.x", "B0.y"])
    s = symgen.simulate(mdl, t_end=2.0)                              # dt = 1e-2
    for name in ("B0.x", "B0.y"):
        assert np.abs(r[name] - s.output(name)[::10]).max() <= 1e-10, name


# ---- the FMU state (get, set, serialize, deserialize) ----

@pytest.fixture(scope="module")
def pendulum_auto(tmp_path_factory):
    """The stiff pendulum's FMUs with dt auto, FMI 2.0 and 3.0."""
    mdl, tmp = load_model("stiff_pendulum"), tmp_path_factory.mktemp("fmu_auto")
    return {v: export_fmu(mdl, tmp / f"spa{v}.fmu", fmi_version=v, dt="auto") for v in (2, 3)}


class _Slave:
    """One co-simulation instance of an FMI 2.0 or 3.0 FMU through FMPy's low-level API, its
    logged messages kept."""

    OUT = ("theta", "pendulum.x", "pendulum.y_dot")

    def __init__(self, path, name, unzipdir):
        md = fmpy.read_model_description(str(path))
        self.v3, self.messages = md.fmiVersion == "3.0", []
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        cls = FMU3Slave if self.v3 else FMU2Slave
        self.fmu = cls(guid=md.guid, unzipDirectory=unzipdir, instanceName=name,
                       modelIdentifier=md.coSimulation.modelIdentifier)
        if self.v3:
            self.fmu.instantiate(logMessage=lambda env, status, cat, msg:
                                 self.messages.append(msg.decode()))
        else:
            self._cb = fmi2CallbackFunctions()          # (kept: ctypes holds no reference)
            self._cb.logger = fmi2CallbackLoggerTYPE(
                lambda env, name, status, cat, msg: self.messages.append(msg.decode()))
            self._cb.allocateMemory = defaultCallbacks.allocateMemory
            self._cb.freeMemory = defaultCallbacks.freeMemory
            self.fmu.instantiate(callbacks=self._cb)

    def start(self, T0):
        if not self.v3:
            self.fmu.setupExperiment(startTime=0.0, stopTime=20.0)
        self.set("T0", T0)
        if self.v3:
            self.fmu.enterInitializationMode(startTime=0.0, stopTime=20.0)
        else:
            self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()

    def set(self, name, value):
        (self.fmu.setFloat64 if self.v3 else self.fmu.setReal)([self.vr[name]], [value])

    def get(self, names):
        return (self.fmu.getFloat64 if self.v3 else self.fmu.getReal)(
            [self.vr[n] for n in names])

    def steps(self, t, H, count):
        """`count` communication steps of H from t: the outputs and time after each."""
        rows = []
        for i in range(count):
            self.fmu.doStep(currentCommunicationPoint=t + i * H, communicationStepSize=H)
            rows.append(self.get(self.OUT + ("time",) if self.v3 else self.OUT))
        return np.array(rows)

    def deserialize(self, data, state=None):
        return (self.fmu.deserializeFMUState if self.v3 else self.fmu.deSerializeFMUstate)(
            data, state)


@pytest.mark.parametrize("fmi_version", [2, 3])
@pytest.mark.parametrize("auto", [False, True], ids=["dt_fixed", "dt_auto"])
def test_fmu_state_restores_the_run_bit_for_bit(pendulum, pendulum3, pendulum_auto, tmp_path,
                                                fmi_version, auto):
    """N steps, the state got (and serialized), M steps recorded; the state set back, M steps:
    the same outputs bit for bit; set back again with the tunable T0 changed after it: other
    outputs; the serialized state deserialized into this instance (T0 restored with it) and into
    a second one, just instantiated: the first M outputs bit for bit."""
    path = pendulum_auto[fmi_version] if auto else (pendulum, pendulum3)[fmi_version - 2][1]
    unzipdir = fmpy.extract(str(path), str(tmp_path / "u"))
    a = _Slave(path, "a", unzipdir)
    H, N, M = (0.25, 4, 6) if auto else (0.1, 7, 8)
    a.start(5.0)
    a.steps(0.0, H, N)
    state = a.fmu.getFMUState()
    data = a.fmu.serializeFMUState(state)
    first = a.steps(N * H, H, M)
    a.fmu.setFMUState(state)
    assert np.array_equal(a.steps(N * H, H, M), first)
    a.fmu.setFMUState(state)
    a.set("T0", 9.0)                                # tunable: the run restarts with it
    changed = a.steps(N * H, H, M)
    assert np.abs(changed[:, 0] - first[:, 0]).max() > 1e-3 * np.abs(first[:, 0]).max()
    copy = a.deserialize(data)
    a.fmu.setFMUState(copy)
    assert a.get(["T0"]) == [5.0]
    assert np.array_equal(a.steps(N * H, H, M), first)
    b = _Slave(path, "b", unzipdir)
    b.fmu.setFMUState(b.deserialize(data))
    assert np.array_equal(b.steps(N * H, H, M), first)
    for sl, states in ((a, (state, copy)), (b, ())):
        for st in states:
            sl.fmu.freeFMUState(st)
        sl.fmu.terminate()
        sl.fmu.freeInstance()
    assert a.messages == b.messages == []
    if not auto:        # the run restored is simulate's (the same steps: equal to round-off)
        s = symgen.simulate(load_model("stiff_pendulum"), t_end=(N + M) * H, params={"T0": 5.0})
        ref = s.outputs[N + 1:, 0]
        assert np.abs(first[:, 0] - ref).max() <= 1e-9 * np.abs(ref).max()


def _fnv1a(data: bytes) -> int:
    """fmu_instance.c.inc's fmu_checksum (FNV-1a's 32-bit constants in an unsigned long)."""
    h = 2166136261
    for c in data:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFFFFFFFFFF
    return h


def _crafted(data: bytes, at: int, value: int) -> bytes:
    """The serialized state with the int `at` bytes after its head set to ``value`` and its
    checksum made anew (the head's last 8 bytes, of the bytes after the head: found as the one
    place where they hold that checksum)."""
    ends = [end for end in range(24, 256, 8)
            if int.from_bytes(data[end - 8:end], "little") == _fnv1a(data[end:])]
    assert len(ends) == 1
    end = ends[0]
    out = bytearray(data)
    out[end + at:end + at + 4] = value.to_bytes(4, "little", signed=True)
    out[end - 8:end] = _fnv1a(bytes(out[end:])).to_bytes(8, "little")
    return bytes(out)


@pytest.mark.parametrize("fmi_version", [2, 3])
def test_fmu_state_of_another_fmu_or_corrupted_is_refused(pendulum, pendulum3, pendulum_auto,
                                                          tmp_path, fmi_version):
    """A serialized state of another FMU (the same model exported with dt auto: another GUID), a
    truncated, an empty or a corrupted one, and one crafted with its checksum made anew (the
    wrapper's restart flag 3: a checksum is not validation): fmiNError with one logged line,
    nothing changed."""
    path = (pendulum, pendulum3)[fmi_version - 2][1]
    other = pendulum_auto[fmi_version]
    a = _Slave(path, "a", fmpy.extract(str(path), str(tmp_path / "u")))
    o = _Slave(other, "o", fmpy.extract(str(other), str(tmp_path / "o")))
    for sl in (a, o):
        sl.start(5.0)
        sl.steps(0.0, 0.1, 3)
    states = [sl.fmu.getFMUState() for sl in (a, o)]
    data, foreign = (sl.fmu.serializeFMUState(st) for sl, st in zip((a, o), states))
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x10
    fn = "fmi3DeserializeFMUState" if fmi_version == 3 else "fmi2DeSerializeFMUstate"
    for bad, why in ((foreign, "the state is another FMU's (GUID "),
                     (data[:-8], f"the state is {len(data) - 8} bytes, not the {len(data)}"),
                     (b"", "the state is 0 bytes"),
                     (bytes(flipped), "the state is corrupted (its checksum does not match)"),
                     (_crafted(data, 4, 3), "the state is corrupted (its restart flag is 3, not "
                                            "0, 1 or 2)")):
        with pytest.raises(FMICallException):
            a.deserialize(bad)
        assert len(a.messages) == 1 and a.messages.pop().startswith(f"{fn}: {why}")
    after = a.steps(0.3, 0.1, 2)                 # the instance goes on as before
    states[0] = a.deserialize(data, states[0])    # (reuses the state it is given)
    a.fmu.setFMUState(states[0])
    assert np.array_equal(a.steps(0.3, 0.1, 2), after) and a.messages == []
    for sl, st in zip((a, o), states):
        sl.fmu.freeFMUState(st)
        sl.fmu.freeInstance()


# ---- crafted FMU states (issue 38): a fuzz under ASan/UBSan ----

#: The fuzzed FMUs: a dense step (slider_crank: pivoted QR, a redundant constraint row) and the
#: sparse step (n_four_bar with N = 6: 39 coordinates, the sparse LU; the model's "auto"), each as
#: FMI 2.0 with the fixed step and FMI 3.0 with dt auto (the error control's part of the state in
#: use, and the symmetric chart's).
FUZZED = {("slider_crank", 2): {}, ("slider_crank", 3): {"dt": "auto"},
          ("n_four_bar", 2): {}, ("n_four_bar", 3): {"dt": "auto"}}
FUZZ_MASTER = os.path.join(os.path.dirname(__file__), "fmu_state_fuzz.c")


@pytest.fixture(scope="module")
def fuzzers(tmp_path_factory):
    """{(model, FMI version): tests/fmu_state_fuzz.c built with that FMU's sources} under ASan and
    UBSan (plain where the sanitizers do not work here), and the environment to run them in.  The
    runtime is compiled once (its files are the same in every FMU), each model's C once."""
    tmp = tmp_path_factory.mktemp("fuzz")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:exitcode=99",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    flags = STRICT + (SANITIZE if _sanitizers_work(tmp, env) else [])

    def cc(*args, cwd):
        build = subprocess.run(["cc", *flags, *args], cwd=cwd, capture_output=True, text=True)
        assert build.returncode == 0 and build.stderr == "", build.stderr

    objects, exes = {}, {}
    for (name, version), options in FUZZED.items():
        mdl = load_model(name, N=6) if name == "n_four_bar" else load_model(name)
        folder = tmp / f"{name}{version}"
        with zipfile.ZipFile(export_fmu(mdl, tmp / f"{name}{version}.fmu", fmi_version=version,
                                        source_only=True, **options)) as zf:
            zf.extractall(folder)
        src = folder / "sources"
        if "runtime" not in objects:
            cc("-c", "symgen_runtime.c", "symgen_sparse.c", cwd=src)
            objects["runtime"] = [str(src / "symgen_runtime.o"), str(src / "symgen_sparse.o")]
        if name not in objects:
            cc("-c", f"{name}.c", cwd=src)
            objects[name] = str(src / f"{name}.o")
        define = ["-DFUZZ_FMI3"] if version == 3 else []
        cc(*define, f"-I{src}", "-o", "fuzz", FUZZ_MASTER, objects[name], *objects["runtime"],
           "-lm", cwd=folder)
        exes[name, version] = folder / "fuzz"
    return exes, env


def _fuzz(fuzzers, tries, seed):
    """Runs every fuzzer for ``tries`` crafted states; asserts no crash, hang or change and that
    both paths ran (states refused, states taken and stepped); the tries run in total."""
    exes, env = fuzzers
    total = 0
    for key, exe in sorted(exes.items()):
        run = subprocess.run([str(exe), str(tries), str(seed)], capture_output=True, text=True,
                             env=env, timeout=600)
        assert run.returncode == 0, (key, run.stderr[-4000:])
        counts = dict(zip(*[iter(run.stdout.splitlines()[-1].split())] * 2))
        counts = {k: int(v) for k, v in counts.items()}
        assert counts["tries"] == tries, (key, counts)
        assert counts["crashes"] == counts["hangs"] == 0, (key, counts, run.stderr[-4000:])
        assert counts["changed"] == 0, (key, counts)          # a refused state changes nothing
        refused = counts["refused_deserialize"] + counts["refused_set"]
        assert refused > 0 and counts["stepped"] > 0, (key, counts)
        total += counts["tries"]
    return total


def test_fmu_state_crafted_states_are_refused_or_run_clean(fuzzers):
    """A few hundred crafted FMU states (a byte's bit flipped, a 4-byte word replaced by an edge
    value or a random one; the checksum made anew: tests/fmu_state_fuzz.c) on a dense and a
    sparse-step FMU, FMI 2.0 and 3.0, under ASan/UBSan: each is refused (nothing changed) or
    taken and stepped without a crash.  Today's FMU (before issue 38) crashed the sparse one in
    the first 40 tries (a row index of the partition read from the state unchecked)."""
    assert _fuzz(fuzzers, 150, 1) == 600


@pytest.mark.slow
def test_fmu_state_fuzz_20000_crafted_states(fuzzers):
    """The same for 5000 states an FMU (20,000 in all; today's FMU: 466 crashes of the two
    sparse-step FMUs in these, none of the dense)."""
    assert _fuzz(fuzzers, 5000, 1) == 20000


# ---- communication steps a DoStep cannot take (issue 38.6) ----

#: One instance of each FMU (argv: its paths) started as _Slave does, then DoSteps of 1e300, inf
#: and NaN from t = 0 and one of 0.5: per FMU a line of JSON with each call's status (0 OK), the
#: messages, and the time, lastSuccessfulTime and theta after the 1e300 step.
HUGE_STEPS = r"""
import json, math, sys
import fmpy, fmpy.fmi2
sys.path.insert(0, sys.argv[1])
from test_fmu import _Slave, FMICallException

for path in sys.argv[2:]:
    sl = _Slave(path, "a", fmpy.extract(path))
    sl.start(5.0)
    status = {}
    for H in (math.inf, math.nan, 1e300, 0.5):
        try:
            sl.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=H)
            status[repr(H)] = 0
        except FMICallException as exc:
            status[repr(H)] = exc.status
        if H == 1e300:
            after = sl.get(["theta", "time"] if sl.v3 else ["theta"])
            last = after[1] if sl.v3 else sl.fmu.getRealStatus(2)   # fmi2LastSuccessfulTime
            # FMI 2: after a Discard the master may ask fmi2Terminated
            stop = None if sl.v3 else bool(sl.fmu.getBooleanStatus(fmpy.fmi2.fmi2Terminated))
    print(json.dumps(dict(status=status, messages=sl.messages, last=last, theta=after[0],
                          stop=stop)))
"""


def test_communication_step_of_1e300_returns(pendulum, pendulum3, pendulum_auto):
    """A DoStep of 1e300 (the stop time 20: the auto step's largest is 2) returns: refused before
    it starts with a fixed internal step (1e301 steps, more than the 100000 a DoStep takes) and
    nothing changed, a later 0.5 step taken; with dt auto fmiNDiscard after 100000 internal steps,
    the state there.  inf and NaN are refused.  In a child process under a time limit (the
    DoStep used to run forever on the auto FMU)."""
    paths = [pendulum[1], pendulum3[1], pendulum_auto[2], pendulum_auto[3]]
    out = subprocess.run([sys.executable, "-c", HUGE_STEPS, os.path.dirname(__file__),
                          *map(str, paths)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    for (v, auto), row in zip(((2, False), (3, False), (2, True), (3, True)), rows):
        fn = f"fmi{v}DoStep"
        st, msgs = row["status"], row["messages"]
        assert st["inf"] == st["nan"] == 3                     # fmiNError, nothing changed
        assert f"{fn}(0, inf): the communication step must be a finite number > 0" in msgs[0]
        if auto:
            assert st["1e+300"] == 2 and st["0.5"] == 3        # discarded; then a failed state
            assert "after 100000 internal steps, the most one communication step may take" \
                in msgs[2], msgs
            said = msgs[2].split("ended at t = ", 1)[1].split(" ", 1)[0]    # %.17g in the C
            assert float(said) == row["last"], (said, row["last"])
            assert 0 < row["last"] < 1e300 and math.isfinite(row["theta"])
            assert v == 3 or row["stop"] is False                # fmi2Terminated: go on
        else:
            assert st["1e+300"] == 3 and st["0.5"] == 0 and row["last"] == 0.0
            assert msgs[2] == (f"{fn}: the communication step 1e+300 takes 1e+301 internal steps "
                               "of 0.1, more than the 100000 one communication step may take; "
                               "use smaller communication steps"), msgs


# ---- values that are not finite (issue 38.9) ----

@pytest.mark.parametrize("fmi_version", [2, 3])
def test_nonfinite_inputs_parameters_and_starts_are_refused(tmp_path, fmi_version):
    """NaN and inf for an input, a parameter or a start value, before the initialization and
    between steps: fmiNError, a message naming the variable and the value, nothing changed (the
    run goes on with the values it had)."""
    path = export_fmu(_mass_spring(0.01), tmp_path / "msd.fmu", fmi_version=fmi_version)
    sl = _Slave(path, "a", fmpy.extract(str(path), str(tmp_path / "u")))
    fn = f"fmi{fmi_version}{'SetFloat64' if fmi_version == 3 else 'SetReal'}"

    def refused(name, value, what):
        with pytest.raises(FMICallException, match=r"status 3 \(error\)"):
            sl.set(name, value)
        assert sl.messages.pop() == (f"{fn}: {what} (value reference {sl.vr[name]}) cannot be "
                                     f"{value!r}: give a finite number")

    if fmi_version == 2:
        sl.fmu.setupExperiment(startTime=0.0, stopTime=1.0)
    refused("m", math.nan, "parameter m")
    refused("F", math.inf, "input F")
    refused("x", -math.inf, "coordinate x")
    refused("x_dot", math.nan, "velocity of x")
    sl.set("F", 2.0)
    if fmi_version == 3:
        sl.fmu.enterInitializationMode(startTime=0.0, stopTime=1.0)
    else:
        sl.fmu.enterInitializationMode()
    sl.fmu.exitInitializationMode()
    sl.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.1)
    refused("k", math.inf, "parameter k")                  # tunable: settable between steps
    refused("F", math.nan, "input F")
    sl.fmu.doStep(currentCommunicationPoint=0.1, communicationStepSize=0.1)
    assert sl.get(["m", "k", "F"]) == [MASS, K_SPRING, 2.0]
    x = sl.get(["x"])[0]
    # from rest under F = 2 held: x = F/k (1 − cos 2t) to the trapezoidal rule's error
    assert x == pytest.approx(2.0 / K_SPRING * (1 - math.cos(0.4)), rel=1e-3)
    assert sl.messages == []


# ---- the model description in modelDescription.xml (issue 38.8) ----

@pytest.mark.parametrize("fmi_version", [2, 3])
def test_description_with_control_characters_validates_or_is_refused(tmp_path, capsys,
                                                                      fmi_version):
    """Tab, newline, carriage return and a C1 control are written as character references: the
    FMU validates and FMPy reads the description as it was; a character XML 1.0 cannot carry
    (BEL) is refused in one line naming it, nothing written, by export_fmu and the CLI (exit 2)."""
    from symgen.cli import main

    (x,), _ = symgen.coordinates("x")
    text = 'two lines\n\tand "a tab"\r\n<&> \x85 \x7f done'
    mdl = symgen.Model("described", [x], [[1]], [-x], x0=[1.0], description=text)
    path = export_fmu(mdl, tmp_path / "ok.fmu", fmi_version=fmi_version, source_only=True)
    assert validate_fmu(str(path)) == []
    assert fmpy.read_model_description(str(path)).description == text

    bell = symgen.Model("bell", [x], [[1]], [-x], description="rings\x07 twice")
    with pytest.raises(ValueError, match=r"model 'bell': its description holds U\+0007 \(a "
                       r"control character, at character 6\), which XML 1.0 cannot carry"):
        export_fmu(bell, tmp_path / "bell.fmu", fmi_version=fmi_version)
    (tmp_path / "bell.py").write_text(
        "import symgen\n\n\ndef model():\n    (x,), _ = symgen.coordinates('x')\n"
        "    return symgen.Model('bell', [x], [[1]], [-x], description='rings\\x07 twice')\n")
    capsys.readouterr()
    assert main(["export", str(tmp_path / "bell.py"), "--fmi", str(fmi_version), "-o",
                 str(tmp_path / "bell.fmu")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: model 'bell': its description holds "
                                               "U+0007"), err
    assert not (tmp_path / "bell.fmu").exists()


def _fmu_options(path) -> dict:
    """The chart and metric fmu_model.h's fmu_options() sets (the options the FMU runs with)."""
    import re

    with zipfile.ZipFile(path) as zf:
        header = zf.read("sources/fmu_model.h").decode()
    return dict(re.findall(r"o\.(chart|metric) = (SG_\w+);", header))


def test_the_fmus_step_is_simulates_default_and_the_paper_preset_is_one_option_away(tmp_path):
    """The FMU takes simulate's default step (symmetric chart, mass metric), DT fixed or auto;
    export_fmu(preset="paper") (CLI --preset paper) takes the paper's, and runs as
    simulate(preset="paper") does."""
    from symgen.cli import main

    mdl = load_model("stiff_pendulum")
    default = {"chart": "SG_CHART_SYMMETRIC", "metric": "SG_METRIC_MASS"}
    paper = {"chart": "SG_CHART_END", "metric": "SG_METRIC_EUCLIDEAN"}
    for dt in (None, "auto"):
        p = export_fmu(mdl, tmp_path / f"d{dt}.fmu", dt=dt, source_only=True)
        assert _fmu_options(p) == default, dt
        p = export_fmu(mdl, tmp_path / f"p{dt}.fmu", dt=dt, source_only=True, preset="paper")
        assert _fmu_options(p) == paper, dt
    assert main(["export", "stiff_pendulum", "--fmi", "3", "--source-only", "--preset", "paper",
                 "-o", str(tmp_path / "cli.fmu")]) == 0
    assert _fmu_options(tmp_path / "cli.fmu") == paper
    with pytest.raises(ValueError, match="unknown preset 'pap'; known: paper"):
        export_fmu(mdl, tmp_path / "bad.fmu", source_only=True, preset="pap")
    path = export_fmu(mdl, tmp_path / "paper.fmu", preset="paper")
    r = fmpy.simulate_fmu(str(path), stop_time=5.0, output_interval=0.1,
                          start_values={"T0": 5.0}, output=["theta"])
    s = symgen.simulate(mdl, t_end=5.0, params={"T0": 5.0}, preset="paper")
    d = symgen.simulate(mdl, t_end=5.0, params={"T0": 5.0})
    ref = s.outputs[:, 0]
    assert np.abs(r["theta"] - ref).max() <= 1e-9 * np.abs(ref).max()
    assert np.abs(d.outputs[:, 0] - ref).max() > 1e3 * 1e-9 * np.abs(ref).max()   # another step
