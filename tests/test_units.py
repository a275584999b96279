"""Units (issue 25 §4): plain strings on the Model (builders fill them in SI), carried by the
result's meta and CSV header, one plot panel per unit, and old files without units still load."""
from __future__ import annotations

import json
import pickle
import re

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen import Model, ModelError, coordinates
from symgen.mechanics import PlanarSystem, SpatialSystem
from symgen.result import load_result


def _pendulum(**model_kw):
    s = PlanarSystem("unit_pend")
    m, L, k = s.parameter("m", 1.0), s.parameter("L", 1.0), s.parameter("k", 5.0)
    T0 = s.parameter("T0", 0.5, unit="N·m")
    bob = s.body("bob", mass=m, inertia=0.1, points={"pivot": (0, L)}, x0=(0, -1.0, 0))
    s.revolute("ground", (0, 0), bob, "pivot")
    s.gravity(9.81)
    s.torque(bob, T0 * sp.sin(symgen.t), name="motor")
    s.torsional_spring("ground", bob, k, 0.2, name="damper")
    s.output_point(bob, "pivot", name="tip")
    s.output("angle", bob.theta, unit="rad")
    return s.model(**model_kw)


def test_builders_fill_units():
    mdl = _pendulum()
    u = mdl.units
    assert dict(u["coords"]) == {"bob.x": "m", "bob.y": "m", "bob.theta": "rad"}
    assert dict(u["velocities"]) == {"bob.x_dot": "m/s", "bob.y_dot": "m/s",
                                     "bob.theta_dot": "rad/s"}
    assert dict(u["outputs"]) == {"tip.x": "m", "tip.y": "m", "tip.vx": "m/s", "tip.vy": "m/s",
                                  "angle": "rad", "power:motor": "W", "power:damper": "W",
                                  "revolute.ground.bob.angle": "rad",
                                  "revolute.ground.bob.angle_dot": "rad/s"}
    # m: a mass (kg); L: a point coordinate (m); k: a torsional stiffness; T0: declared
    assert dict(u["params"]) == {"m": "kg", "L": "m", "k": "N·m/rad", "T0": "N·m"}
    assert _pendulum(units={"L": "mm"}).units["params"]["L"] == "mm"     # model() overrides

    s = SpatialSystem("unit_sph")
    s.ground_point("O", (0, 0, 0))
    s.point("P", (1, 0, 0))
    s.vector("u", (0, 0, 1))
    s.vector("w", (0, 1, 0))
    g = s.parameter("g", 9.81)
    s.body("bob", mass=2.0, inertia=0.1, com=(1, 0, 0), points=["O", "P"], vectors=["u", "w"])
    s.gravity(g)
    s.output_point("bob", "com", name="c")
    sph = s.model()
    assert {sph.units["coords"][f"P.{a}"] for a in "xyz"} == {"m"}
    assert {sph.units["coords"][f"u.{a}"] for a in "xyz"} == {"1"}
    assert sph.units["velocities"]["u.x_dot"] == "1/s"
    assert sph.units["outputs"]["c.vz"] == "m/s" and sph.units["params"]["g"] == "m/s²"


def test_a_parameter_used_with_two_units_gets_none():
    s = PlanarSystem("amb")
    a = s.parameter("a", 1.0)
    b = s.body("b", mass=a, inertia=a, x0=(0, 0, 0))          # kg and kg·m²: no unit
    s.force(b, (0, 0), (1, 0))
    assert "a" not in s.model().units["params"]


def test_raw_model_units_flat_or_by_kind_and_kept_by_replace_and_pickle():
    (x, th), (xd, thd) = coordinates("x th")
    base = dict(name="raw_u", coords=[x, th], M=sp.eye(2), f=[0, 0], params={"k": 1.0},
                outputs={"e": x * xd})
    mdl = Model(**base, units={"x": "m", "th": "rad", "k": "N/m", "e": "m²/s"})
    assert dict(mdl.units["velocities"]) == {"x_dot": "m/s", "th_dot": "rad/s"}
    same = Model(**base, units={"coords": {"x": "m", "th": "rad"}, "params": {"k": "N/m"},
                                "outputs": {"e": "m²/s"}})
    assert same.units == mdl.units
    assert mdl.hash == Model(**base).hash                      # units are not in the C
    assert Model(**base).units["coords"] == {}
    assert pickle.loads(pickle.dumps(mdl)).units == mdl.units
    fewer = mdl.replace(outputs={})                            # the output's unit goes with it
    assert dict(fewer.units["outputs"]) == {} and fewer.units["coords"] == mdl.units["coords"]
    with pytest.raises(ModelError, match="'y' is not a coordinate"):
        Model(**base, units={"y": "m"})
    with pytest.raises(ModelError, match="unknown kind"):
        Model(**base, units={"coordinates": {"x": "m"}})
    with pytest.raises(ModelError, match="may not hold"):
        Model(**base, units={"x": "m]"})


@pytest.fixture(scope="module")
def run():
    return symgen.simulate(_pendulum(), method="nullspace", scheme="fox-goodwin", dt=1e-2,
                           t_end=1.0)


def test_result_meta_csv_header_and_round_trip(run, tmp_path):
    u = run.units
    assert u["x"]["bob.theta"] == "rad" and u["xd"]["bob.theta"] == "rad/s"
    assert u["xdd"]["bob.x"] == "m/s²"
    assert u["outputs"]["work:motor"] == "J" and u["outputs"]["power:motor"] == "W"
    path = run.save(tmp_path / "r.csv")
    cols = [ln for ln in path.read_text(encoding="utf-8").splitlines()
            if not ln.startswith("#")][0].split(",")
    for col in ("x:bob.theta [rad]", "xd:bob.y [m/s]", "xdd:bob.x [m/s²]", "out:tip.vx [m/s]",
                "out:work:damper [J]", "out:power:motor [W]"):
        assert col in cols
    back = load_result(path)
    assert back == run and back.units == run.units
    assert load_result(run.save(tmp_path / "r.npz")) == run


def test_a_result_file_written_before_units_still_loads(run, tmp_path):
    """The CSV as the code before units wrote it: plain column names, no units in the header
    or the meta."""
    text = run.save(tmp_path / "new.csv").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    old = []
    for ln in lines:
        if ln.startswith("# symgen result:") or ln.startswith("# meta:"):
            tag, blob = ln.split(":", 1)
            data = json.loads(blob)
            data.pop("units")
            ln = f"{tag}: {json.dumps(data)}\n"
        elif not ln.startswith("#"):
            ln = re.sub(r" \[[^\]]*\]", "", ln)
        old.append(ln)
    (tmp_path / "old.csv").write_text("".join(old), encoding="utf-8")
    back = load_result(tmp_path / "old.csv")
    assert back.units == {} and back.output_names == run.output_names
    np.testing.assert_array_equal(back.x, run.x)
    np.testing.assert_array_equal(back.outputs, run.outputs)


def test_plots_have_a_panel_per_unit(run):
    from symgen.plot import figure

    labels = [ax.get_ylabel() for ax in figure(run, "outputs").axes]
    assert labels == ["tip.x, tip.y [m]", "tip.vx, tip.vy [m/s]",
                      "angle, revolute.ground.bob.angle [rad]",
                      "revolute.ground.bob.angle_dot [rad/s]", "power:motor, power:damper [W]",
                      "work:motor, work:damper [J]"]
    fig = figure(run, "coordinates")
    assert [ax.get_ylabel() for ax in fig.axes] == ["bob.x, bob.y [m]", "bob.theta [rad]"]
    assert [len(ax.get_lines()) for ax in fig.axes] == [2, 1]
    assert fig.axes[-1].get_xlabel() == "t [s]"
    no_units = symgen.Result(**{k: getattr(run, k) for k in (
        "t", "x", "xd", "xdd", "lam", "coords", "pos_err", "vel_err", "acc_err", "omega_max",
        "h_max", "newton_iters", "outputs", "output_names")}, meta={})
    assert [ax.get_ylabel() for ax in figure(no_units, "outputs").axes] == ["output value"]


def test_show_prints_units(capsys):
    from symgen.cli import main

    assert main(["show", "double_pendulum"]) == 0
    out = capsys.readouterr().out
    assert "coordinates: bar1.x [m], bar1.y [m], bar1.theta [rad]," in out
    assert "m = 1 kg" in out and "k = 1000 N·m/rad" in out
    assert "tip.vx [m/s]" in out and "power:spring1 [W]" in out
