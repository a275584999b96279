"""Issue 35's smaller items (7), each against an independent oracle or the message a user needs."""
from __future__ import annotations

import math

import numpy as np
import pytest

import symgen
from symgen.names import joint_of
from symgen.mechanics import SpatialSystem


def test_spherical_joint_to_the_ground():
    """SpatialSystem.spherical("ground", O, body, P) as prismatic takes the ground (before:
    "unknown body 'ground'").  Oracle: a point mass m on a massless rod of length L swinging about
    a ball joint has two pendulum modes of ω = √(g/L)."""
    s = SpatialSystem("ball_pendulum")
    s.ground_point("O", (0, 0, 0))
    s.point("P", (0, 0, 0))
    s.point("Q", (0, -1.5, 0))
    s.body("rod", mass=2.0, inertia=0, com=(0, -1.5, 0), points=["P", "Q"])
    assert s.spherical("ground", "O", "rod", "P") == "spherical_ground_rod"
    s.gravity(9.81)
    mdl = s.model()
    assert mdl.coord_names == ("Q.x", "Q.y", "Q.z")
    np.testing.assert_allclose(symgen.modes(mdl).omega, math.sqrt(9.81 / 1.5), rtol=1e-9)


def test_model_replace_q_names_follow_the_new_rows():
    """Model.replace(q=...) keeps the names of the rows it keeps and names the new ones q[i]
    (before: "constraint_names has 2 names for 3 constraint rows")."""
    mdl = symgen.load_model("double_pendulum")
    names = mdl.constraint_names
    extra = mdl.coords[2] - mdl.x0[2]           # hold bar1's angle where it starts
    more = mdl.replace(q=list(mdl.q) + [extra])
    assert more.constraint_names == (*names, f"q[{len(names)}]")
    fewer = mdl.replace(q=list(mdl.q)[1:])
    assert fewer.constraint_names == names[1:]
    named = mdl.replace(q=list(mdl.q) + [extra], constraint_names=[*names, "hold"])
    assert named.constraint_names[-1] == "hold"
    # the joints' reactions follow their rows' multipliers: λ_i renamed to the kept row's new
    # index, a joint whose row is gone left out (its reaction would be another row's force)
    lam = symgen.symbols.multipliers(mdl.m)
    first = joint_of(names[0])
    assert set(more.reactions) == set(mdl.reactions)
    assert all(more.reactions[k] == e for k, e in mdl.reactions.items())
    assert not any(joint_of(k) == first for k in fewer.reactions)
    for k in fewer.reactions:                   # every other row moved up by one
        want = mdl.reactions[k].xreplace({lam[i]: symgen.symbols.multipliers(mdl.m - 1)[i - 1]
                           for i in range(1, mdl.m)})
        assert fewer.reactions[k] == want, k
    assert fewer.reactions and all(s.name != f"lambda_{mdl.m - 1}"
                                   for e in fewer.reactions.values() for s in e.free_symbols)


def test_fully_driven_model_under_auto_says_why_its_steps_are_h_max():
    """The slider-crank (crank driven: 0 degrees of freedom) under dt="auto": the error estimate
    has nothing to measure, so the steps are h_max = span/10; meta and summary say so, a model with
    a free motion does not."""
    res = symgen.simulate(symgen.load_model("slider_crank"), dt="auto", t_end=2.0)
    control = res.meta["step_control"]
    assert control["degrees_of_freedom"] == 0
    assert max(np.diff(res.t)) == pytest.approx(0.2)
    text = "\n".join(res.summary())
    assert "0 dof" in text and "h_max = 0.2 s" in text
    free = symgen.simulate(symgen.load_model("double_pendulum"), dt="auto", t_end=0.3)
    assert free.meta["step_control"]["degrees_of_freedom"] == 2
    assert "0 dof" not in "\n".join(free.summary())


def _ball_pendulum_run():
    s = SpatialSystem("ball_pendulum")
    s.ground_point("O", (0, 0, 0))
    s.point("P", (0, 0, 0))
    s.point("Q", (0, -1.5, 0))
    s.body("rod", mass=2.0, inertia=0, com=(0, -1.5, 0), points=["P", "Q"],
           velocity=(0.5, 0, 0.3))
    s.spherical("ground", "O", "rod", "P")
    s.gravity(9.81)
    s.output_point("rod", "Q", name="tip")
    mdl = s.model()
    return mdl, symgen.simulate(mdl, dt=0.01, t_end=0.5)


def test_trace_takes_an_output_point_or_names_both_lists():
    pytest.importorskip("matplotlib")
    from symgen.animation import DrawingError, evaluate, trace_path

    mdl, res = _ball_pendulum_run()
    frames = evaluate(mdl, res)
    # the output point tip is the drawn point Q: the same path, from the outputs
    np.testing.assert_allclose(trace_path(frames, res, "tip"), frames.point("Q"), atol=1e-12)
    with pytest.raises(DrawingError, match="drawn points: O, Q; output points: tip"):
        trace_path(frames, res, "nope")


@pytest.mark.parametrize("up", ["y", "z"])
def test_spatial_drawing_draws_the_gravity_axis_vertical(up):
    """The 3-D drawing's vertical is y by default (SpatialSystem.gravity()'s default −y; before:
    z), or the axis named: a step along it projects onto the screen's vertical."""
    pytest.importorskip("matplotlib")
    from mpl_toolkits.mplot3d import proj3d

    from symgen.animation import strobe_figure

    mdl, res = _ball_pendulum_run()
    fig = strobe_figure(res, mdl, **({} if up == "y" else {"up": up}))
    P = fig.axes[0].get_proj()
    o = np.array(proj3d.proj_transform(0, 0, 0, P)[:2])
    d = np.array(proj3d.proj_transform(*(np.eye(3)["xyz".index(up)]), P)[:2]) - o
    assert d[1] > 0 and abs(d[0]) < 0.05 * d[1], d


def test_a_folder_named_symgen_that_shadows_the_package_is_named(tmp_path):
    """`python -m symgen` in a directory holding a folder named symgen (a clone of the sources)
    that Python takes for the package: one line naming the folder and what to do, exit 2 (before:
    "module 'symgen' has no attribute 'Model'" from inside a model file).  Only where the folder
    does shadow the package (an editable install; a regular one wins over a namespace folder)."""
    import subprocess
    import sys

    (tmp_path / "symgen" / "examples").mkdir(parents=True)
    probe = subprocess.run([sys.executable, "-c", "import symgen; print(symgen.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True)
    if probe.stdout.strip() != "None":
        pytest.skip("here a folder named symgen does not shadow the installed package")
    out = subprocess.run([sys.executable, "-m", "symgen", "show", "slider_crank"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"error: the folder {tmp_path / 'symgen'} shadows the symgen package (Python imports a "
        "folder named symgen from the current directory or sys.path first); run symgen from "
        "another directory, or rename that folder"]


def _show(capsys, *args) -> str:
    from symgen.cli import main
    capsys.readouterr()
    assert main(["show", *map(str, args)]) == 0
    return capsys.readouterr().out


def test_show_wraps_long_lines_and_prints_numbers_short(capsys, monkeypatch):
    """`show` in 100 columns (before: a 1,600-character M line, a 3,900-character energy line):
    a matrix too wide is listed entry by entry, each entry and each list wrapped; every body's
    subscript the same way (x_u1 as x_P1, before xᵤ₁ beside x_P1); a parameter's value as the
    number it is (ω = 2π, before 6.28319) and a root as a root (5/√2, before 3.5355339059327378)."""
    monkeypatch.setenv("COLUMNS", "100")
    for args in (["slider_crank_3d"], ["slider_crank_3d", "--term", "energy"], ["bricard"]):
        out = _show(capsys, *args)
        assert max(len(ln) for ln in out.splitlines()) <= 100, args
    q = _show(capsys, "bricard", "--term", "q")
    assert "x_P1⋅x_u1" in q and not any(ch in q for ch in "ᵤₑₓ")
    assert "omega = 2⋅π" in _show(capsys, "slider_crank")
    q3 = _show(capsys, "slider_crank_3d", "--term", "q")
    # (2-D when the matrix fits, else entry by entry, one line when an entry is too wide: which
    # depends on the width of q's round-off constants, which vary from process to process)
    assert ("5⋅√2⋅x_B" in q3 or "5*sqrt(2)*x_B" in q3) and "3.5355339059327378" not in q3


@pytest.mark.parametrize("stepper", ["compiled", "python"])
@pytest.mark.parametrize("dt", [1e-2, "auto"])
def test_steps_per_second_leave_the_t_eval_rows_out(stepper, dt):
    """With t_eval the summary's steps/s divides by the stepping time: the wall time less the
    time the rows' interpolation and projection took (meta t_eval_seconds; the C runtime's by
    clock(), sg_dense_seconds), which a run without t_eval does not have."""
    import re

    kern = symgen.build(symgen.load_model("double_pendulum"))
    plain = symgen.simulate(kern, dt=dt, t_end=0.5, stepper=stepper)
    assert plain.meta["t_eval_seconds"] == 0.0
    res = symgen.simulate(kern, dt=dt, t_end=0.5, stepper=stepper, t_eval=np.linspace(0, 0.5, 400))
    meta = res.meta
    assert 0 < meta["t_eval_seconds"] < meta["wall_time"]
    line = res.summary()[-1]
    stepping = meta["wall_time"] - meta["t_eval_seconds"]
    rate = int(re.search(r"\((\d+) steps/s over the", line).group(1))
    assert rate == round(meta["steps_done"] / stepping)
