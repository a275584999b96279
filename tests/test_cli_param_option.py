"""A model() option named like one of the model's parameters (issue 35, item 5): --param sets the
parameter on the model built with the option at its default, so the model's hash stays the one a
result records, and `modes --from RESULT` finds it (before: the option rebuilt the model, and the
result's model no longer matched)."""
import math
import subprocess

MODEL = '''"""A pendulum with a torsional damper; model()'s option c (the damping's default) shares the
parameter c's name."""
from symgen.mechanics import PlanarSystem


def model(c=0.0, **params):
    s = PlanarSystem("clash_damped")
    cp = s.parameter("c", c)
    bob = s.body("bob", mass=1.0, inertia=0.1, points={"pivot": (0, 1.0)}, x0=(0.0, -1.0, 0.0))
    s.revolute("ground", (0, 0), bob, "pivot", name="pivot")
    s.gravity(9.81)
    s.torsional_spring("ground", bob, 0, cp, name="damper")
    s.output("theta", bob.theta)
    return s.model(params=params, settings=dict(dt=0.01, t_end=2.0))
'''


def _symgen(*args, cwd):
    return subprocess.run(["symgen", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_param_named_like_an_option_sets_the_parameter_and_keeps_the_model(tmp_path):
    path = tmp_path / "clash.py"
    path.write_text(MODEL)
    run = _symgen("simulate", path, "--param", "c=0.5", "--out", tmp_path / "r.npz", "--quiet",
                  cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "--param c sets the parameter" in run.stderr
    # the damped run's end state linearized with the model as model() builds it by default
    modes = _symgen("modes", path, "--from", tmp_path / "r.npz", "--at", 2, cwd=tmp_path)
    assert modes.returncode == 0, modes.stderr
    row = next(ln for ln in modes.stdout.splitlines() if ln.split()[:1] == ["1"]).split()
    # oracle: a compound pendulum about its pivot, I_O = I + m L² = 1.1, k = m g L = 9.81, with
    # the run's damper c = 0.5: ω = √(k / I_O), ζ = c / (2 I_O ω)
    omega = math.sqrt(9.81 / 1.1)
    assert abs(float(row[1]) - omega) < 1e-4 * omega
    assert abs(float(row[3]) - 0.5 / (2 * 1.1 * omega)) < 1e-3
