"""Constraint rows carry their joint's name (issue 25 §2): Model.constraint_names, the builders'
names, show, assembly errors, the result's meta and CSV columns, the reaction plot's labels."""
import pickle

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen.mechanics import PlanarSystem
from symgen.model import ModelError

WARM = ["stiff_pendulum"]


def _two_rows(**kw):
    (x, y), _ = symgen.coordinates("x y")
    return symgen.Model("two_rows", [x, y], M=sp.eye(2), f=[0, 0], q=[x - 1, y - 2],
                        x0=[1, 2], **kw)


def test_default_and_given_names_and_what_is_refused():
    assert _two_rows().constraint_names == ("q[0]", "q[1]")
    named = _two_rows(constraint_names=["pin.x", "pin.y"])
    assert named.constraint_names == ("pin.x", "pin.y")
    assert named.hash == _two_rows().hash                     # names are not in the C
    assert pickle.loads(pickle.dumps(named)).constraint_names == ("pin.x", "pin.y")
    assert named.replace(description="d").constraint_names == ("pin.x", "pin.y")
    for bad, said in ((["a"], "1 names for 2"), (["a", "a"], "given twice"), (["a", " "], "empty")):
        with pytest.raises(ModelError, match=said):
            _two_rows(constraint_names=bad)


def test_builders_name_every_row_by_its_joint():
    mech = PlanarSystem("named")
    crank = mech.body("crank", mass=1.0, inertia=0.1, points={"O": (-0.5, 0)}, x0=(0.5, 0, 0))
    mech.revolute("ground", (0, 0), crank, "O", name="bearing")
    mdl = mech.model()
    assert mdl.constraint_names == ("bearing.x", "bearing.y")
    sc = symgen.load_model("slider_crank_3d")
    assert sc.m == len(sc.constraint_names) == len(set(sc.constraint_names))
    assert {"C.cross", "slide.line_1", "slide.line_2"} <= set(sc.constraint_names)
    assert all("," not in v and " " not in v for v in sc.constraint_names)   # CSV-safe


def test_assembly_errors_and_show_name_the_rows(capsys):
    mdl = symgen.load_model("double_four_bar")
    with pytest.raises(ModelError, match=r"row O1\.x \(q\[2\]\)"):
        symgen.assemble(mdl, fix={"V1.theta": 0.3, "V2.theta": 2.5})
    from symgen.cli import main
    assert main(["show", "stiff_pendulum"]) == 0
    assert "q  (rows: pivot.x, pivot.y)" in capsys.readouterr().out


def test_results_carry_the_names_into_meta_csv_and_plots(tmp_path):
    r = symgen.simulate(symgen.load_model("stiff_pendulum"), t_end=0.5)
    assert r.meta["constraint_names"] == ["pivot.x", "pivot.y"]
    path = r.save(tmp_path / "r.csv")
    header = path.read_text().splitlines()[2].split(",")
    assert "lam:pivot.x" in header and "lam:pivot.y" in header
    back = symgen.load_result(path)
    np.testing.assert_array_equal(back.lam, r.lam)
    pytest.importorskip("matplotlib")
    from symgen.plot import plot_result
    plot_result(r, "reactions", tmp_path / "lam.png", select=["λ pivot.y"])
    assert (tmp_path / "lam.png").stat().st_size > 0


def test_reactions_of_a_pendulum_hanging_at_rest_hold_up_its_weight():
    """Result.reactions(): the pivot's force on the bob is m·g up (m = 1 kg, g = 9.8) and nothing
    sideways, at every row of a run that stays at rest."""
    r = symgen.simulate(symgen.load_model("stiff_pendulum"), t_end=0.5, params={"T0": 0.0})
    forces = r.reactions()
    assert set(forces) == {"pivot"}
    np.testing.assert_allclose(forces["pivot"]["Fy"], 9.8, rtol=1e-12)
    np.testing.assert_allclose(forces["pivot"]["Fx"], 0.0, atol=1e-12)
    G = r.generalized_forces()["pivot"]
    np.testing.assert_allclose(G["pendulum.y"], 9.8, rtol=1e-12)
    np.testing.assert_allclose(G["pendulum.x"], 0.0, atol=1e-12)


def test_the_joints_reactions_add_up_to_the_equations_of_motion():
    """Σ over joints of H_Rᵀλ_R = M ẍ − f at every row (the double four-bar through 1 s)."""
    mdl = symgen.load_model("double_four_bar")
    r = symgen.simulate(mdl, t_end=1.0, every=50)
    forces = r.generalized_forces()
    assert {"O0", "O1", "O2", "B0_left"} <= set(forces)
    k = symgen.LambdifyKernels(mdl)
    total = np.zeros_like(r.x)
    for per_coord in forces.values():
        for c, F in per_coord.items():
            total[:, r.coords.index(c)] += F
    for i in range(len(r.t)):
        M, f, _, _ = k.dynamics(r.t[i], r.x[i], r.xd[i], r.xdd[i], r.lam[i])
        want = M @ r.xdd[i] - f
        np.testing.assert_allclose(total[i], want, atol=1e-8 * (1 + np.abs(want).max()))
