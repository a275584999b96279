"""Result: attributes, save/load round trips (.npz and .csv), equality."""
import json

import numpy as np
import pytest

import symgen
import stepper_models as sm
from symgen.result import Result, load_result


@pytest.fixture(scope="module")
def results():
    k = symgen.build(sm.stiff_pendulum())
    ok = symgen.simulate(k, scheme="fox-goodwin", dt=0.1, t_end=3.0, preset="paper")   # finite h_max
    bad = symgen.simulate(k, method="index3", scheme="fox-goodwin", dt=0.1, t_end=100.0)
    km = symgen.build(sm.minimal_pendulum())
    mini = symgen.simulate(km, method="newmark", dt=0.1, t_end=1.0)
    return ok, bad, mini


ATTRS = ("t", "x", "xd", "xdd", "lam", "coords", "pos_err", "vel_err", "acc_err", "omega_max",
         "h_max", "newton_iters", "energy", "energy_kinetic", "energy_potential", "outputs",
         "output_names", "flags", "status", "reason", "meta")


def test_attributes(results):
    ok, bad, mini = results
    for r in results:
        for a in ATTRS:
            assert hasattr(r, a), a
        N = len(r.t)
        for a in ("x", "xd", "xdd"):
            assert getattr(r, a).shape == (N, len(r.coords))
        assert r.lam.shape[0] == N and r.outputs.shape == (N, len(r.output_names))
        for a in ("pos_err", "vel_err", "acc_err", "omega_max", "h_max", "newton_iters", "energy",
                  "flags"):
            assert getattr(r, a).shape == (N,)
    assert ok.status == "completed" and ok.reason == "" and ok.ok
    assert bad.status == "diverged" and bad.reason and not bad.ok
    assert mini.lam.shape == (len(mini.t), 0)
    assert np.isinf(ok.h_max).sum() == 0 and np.isinf(mini.h_max).sum() == 0
    assert "steps=30" in repr(ok)


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_round_trip(results, tmp_path, suffix):
    for i, r in enumerate(results):
        path = r.save(tmp_path / f"r{i}{suffix}")
        back = load_result(path)
        assert back == r
        assert symgen.load_result(path) == r
        for a in ("t", "x", "xd", "xdd", "lam", "pos_err", "omega_max", "h_max", "energy", "outputs"):
            np.testing.assert_array_equal(getattr(back, a), getattr(r, a))
        assert back.newton_iters.dtype.kind == "i"
        assert back.meta["model_hash"] == r.meta["model_hash"]
        assert back.meta["scheme"] == r.meta["scheme"]


def test_trapezoidal_inf_h_max_round_trips(tmp_path):
    k = symgen.build(sm.stiff_pendulum())
    r = symgen.simulate(k, scheme="trapezoidal", dt=0.1, t_end=0.5, estimate=True)  # every row
    assert np.isinf(r.h_max).all()
    for suffix in (".npz", ".csv"):
        assert load_result(r.save(tmp_path / f"t{suffix}")) == r


def test_csv_layout(results, tmp_path):
    ok = results[0]
    path = ok.save(tmp_path / "ok.csv")
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# symgen result:") and lines[1].startswith("# meta:")
    meta = json.loads(lines[1].split(":", 1)[1])
    assert meta["method"] == "nullspace" and meta["h"] == 0.1
    header = lines[2].split(",")
    assert header[:4] == ["t", "x:x", "x:y", "x:theta"]
    for col in ("xd:theta", "xdd:theta", "lam:0", "lam:1", "pos_err", "vel_err", "acc_err",
                "omega_max", "h_max", "newton_iters", "energy", "out:theta"):
        assert col in header
    assert len(lines) == 4 + len(ok.t)          # header, meta, names, rows, end line
    assert json.loads(lines[0].split(":", 1)[1])["rows"] == len(ok.t)
    assert lines[-1] == f"# end of symgen result: {len(ok.t)} rows"
    # readable by plain numpy too
    table = np.loadtxt(path, delimiter=",", skiprows=3)
    assert np.array_equal(table[:, 0], ok.t)


def test_npz_layout(results, tmp_path):
    ok = results[0]
    with np.load(ok.save(tmp_path / "ok.npz")) as z:
        for key in ("t", "x", "xd", "xdd", "lam", "coords", "pos_err", "vel_err", "acc_err",
                    "omega_max", "h_max", "newton_iters", "energy", "outputs", "output_names",
                    "flags", "status", "reason", "meta"):
            assert key in z.files
        assert json.loads(str(z["meta"]))["method"] == "nullspace"


def test_equality_detects_differences(results):
    ok = results[0]
    other = Result(**{a: getattr(ok, a) for a in ATTRS})
    assert other == ok
    other.x = ok.x.copy()
    other.x[3, 1] += 1e-15
    assert other != ok


def test_bad_paths_and_columns(results, tmp_path):
    with pytest.raises(ValueError, match="npz"):
        results[0].save(tmp_path / "r.txt")
    with pytest.raises(ValueError):
        load_result(tmp_path / "r.json")
    (tmp_path / "junk.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="symgen result"):
        load_result(tmp_path / "junk.csv")
    with pytest.raises(KeyError):
        results[0].coord("nope")
