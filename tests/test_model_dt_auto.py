"""A model that recommends dt="auto" (issue 35, item 1): it builds, `symgen simulate` runs it under
the error control, the generated main.c runs the error control by default, and its FMU exported without --dt has error-controlled steps."""
import shutil
import subprocess
import zipfile

import numpy as np
import pytest

import symgen
from symgen.loader import examples_dir
from symgen.result import load_result

CC = shutil.which("cc") or shutil.which("gcc")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """The stiff pendulum as a model file whose recommended settings say dt "auto"."""
    text = (examples_dir() / "stiff_pendulum.py").read_text()
    old = 'dt=0.1, t_end=100.0'
    assert old in text
    text = text.replace(old, 'dt="auto", t_end=5.0')
    text = text.replace('PlanarSystem("stiff_pendulum")', 'PlanarSystem("pend_auto")')
    path = tmp_path_factory.mktemp("auto_model") / "pend_auto.py"
    path.write_text(text)
    return path


def test_cli_simulate_runs_the_models_auto(model_file, tmp_path):
    out = tmp_path / "run.npz"
    proc = subprocess.run(["symgen", "simulate", str(model_file), "--out", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "h = auto" in proc.stdout and "rtol 1e-06" in proc.stdout, proc.stdout
    res = load_result(out)
    steps = np.diff(res.t)
    assert res.status == "completed" and res.t[-1] == 5.0
    assert steps.max() > 2 * steps.min()          # a variable step, not one fixed h


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_main_c_runs_the_models_auto_by_default(model_file, tmp_path):
    model = symgen.load_model(str(model_file))
    symgen.generate(model, tmp_path)
    main_c = (tmp_path / "main.c").read_text()
    assert "the model's recommended auto" in main_c
    assert "DT and T_END default to `auto`" in (tmp_path / "README.md").read_text()
    proc = subprocess.run([CC, *STRICT, "-O2", "-o", "sim", "main.c", f"{model.name}.c",
                           "symgen_runtime.c", "symgen_sparse.c", "-lm"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    out = subprocess.run([str(tmp_path / "sim")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "DT auto, RTOL 1e-06" in out.stderr, out.stderr
    data = np.array([[float(v) for v in ln.split(",")] for ln in out.stdout.splitlines()[1:]])
    res = symgen.simulate(model, stepper="compiled")           # the model's auto, in Python
    # the same control from the same start: the same steps (to round-off of the step times)
    # (t, x, ẋ, then the joints' reactions: docs/reactions.md)
    assert data.shape == (len(res.t), 1 + 2 * model.n + len(model.reactions))
    assert np.abs(data[:, 0] - res.t).max() < 1e-9
    assert np.abs(data[:, 1:1 + model.n] - res.x).max() < 1e-9
    # a number for DT is still a fixed step
    fixed = subprocess.run([str(tmp_path / "sim"), "0.01", "1"], capture_output=True, text=True)
    assert fixed.returncode == 0 and "100 of 100 steps of h = 0.01" in fixed.stderr


def test_fmu_without_dt_takes_the_models_auto(model_file, tmp_path):
    from symgen.fmu import export_fmu

    model = symgen.load_model(str(model_file))
    path = export_fmu(model, tmp_path / "pa.fmu", source_only=True)
    with zipfile.ZipFile(path) as zf:
        header = zf.read("sources/fmu_model.h").decode()
        description = zf.read("modelDescription.xml").decode()
    assert "#define FMU_AUTO 1" in header
    assert "stepSize" not in description
    # a fixed dt named still wins
    path = export_fmu(model, tmp_path / "pf.fmu", source_only=True, dt=0.01)
    with zipfile.ZipFile(path) as zf:
        assert "#define FMU_AUTO 0" in zf.read("sources/fmu_model.h").decode()
