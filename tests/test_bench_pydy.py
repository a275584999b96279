"""examples/benchmarks/bench_pydy.py without PyDy: its two chain models describe one mechanism,
its exact four-bar reference is right, and without pydy it stops in one line naming the extra."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import oracles

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "benchmarks" / "bench_pydy.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_pydy", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _numeric(model, exprs):
    """``exprs`` (a Matrix) as a function of (x, ẋ) with the model's parameters."""
    f = sp.lambdify([list(model.coords), list(model.velocities)],
                    sp.Matrix(exprs).xreplace(dict(model.params)), "numpy")
    return lambda x, xd: np.array(f(x, xd), float)


def test_chain_models_agree(bench):
    """At a random state the KanesMethod's minimal model (from_sympy) and the planar builder's
    (x, y, θ) model have the same energy, tip and angular accelerations (the builder's from the
    index-1 system [M Hᵀ; H 0] [ẍ; λ] = [f; −Ḣ ẋ])."""
    N = 4
    kin, planar = bench.chain_from_sympy(N), bench.chain_planar(N)
    assert len(kin.coords) == N and len(kin.q) == 0
    assert len(planar.coords) == 3 * N and len(planar.q) == 2 * N
    rng = np.random.default_rng(3)
    th, om = rng.uniform(-np.pi, np.pi, N), rng.uniform(-2.0, 2.0, N)
    # the builder's state from the angles: rod centres and their velocities (L = 1)
    ends = np.concatenate([[0.0], np.cumsum(np.exp(1j * th))])
    cen = ends[:-1] + 0.5 * np.exp(1j * th)
    vend = np.concatenate([[0.0], np.cumsum(1j * om * np.exp(1j * th))])
    vcen = vend[:-1] + 0.5j * om * np.exp(1j * th)
    x = np.ravel(np.column_stack([cen.real, cen.imag, th]))
    xd = np.ravel(np.column_stack([vcen.real, vcen.imag, om]))

    Hx = sp.Matrix(planar.q).jacobian(planar.coords)
    Hdot_xd = (Hx * sp.Matrix(planar.velocities)).jacobian(planar.coords) * \
        sp.Matrix(planar.velocities)
    q, H, Hd = (_numeric(planar, e)(x, xd) for e in (planar.q, Hx, Hdot_xd))
    assert np.max(np.abs(q)) < 1e-14                # the state is on the constraints
    assert np.max(np.abs(H @ xd)) < 1e-14
    M, f = (_numeric(planar, e)(x, xd) for e in (planar.M, planar.f))
    m = len(planar.q)
    K = np.block([[M, H.T], [H, np.zeros((m, m))]])
    xdd = np.linalg.solve(K, np.concatenate([f.ravel(), -Hd.ravel()]))[:3 * N]

    Mk, fk = (_numeric(kin, e)(th, om) for e in (kin.M, kin.f))
    qdd = np.linalg.solve(Mk, fk.ravel())
    np.testing.assert_allclose(qdd, xdd[2::3], rtol=1e-12, atol=1e-12 * np.max(np.abs(qdd)))

    E_kin = 0.5 * om @ Mk @ om + _numeric(kin, [kin.V])(th, om).item()
    E_pl = 0.5 * xd @ M @ xd + _numeric(planar, [planar.V])(x, xd).item()
    assert E_kin == pytest.approx(E_pl, rel=1e-13, abs=1e-12)
    tip = [_numeric(mod, [mod.outputs[f"tip.{a}"]])(*s).item() for a in "xy"
           for mod, s in ((kin, (th, om)), (planar, (x, xd)))]
    np.testing.assert_allclose(tip[::2], tip[1::2], atol=1e-14)
    np.testing.assert_allclose(tip[::2], [ends[-1].real, ends[-1].imag], atol=1e-14)


def test_four_bar_exact_is_the_one_dof_motion(bench):
    """The quadrature reference against a tight DOP853 integration of a_T θ̈ = −a_V g cos θ
    (tests/oracles.py); the two agree to the integration's error."""
    B0, _ = oracles.four_bar_reference(2, np.array([0.0, 10.0]), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(bench.four_bar_exact(10.0), B0[:2, -1], atol=1e-10)


def test_without_pydy_one_line(bench, monkeypatch, capsys):
    monkeypatch.setattr(bench, "have_pydy", lambda: False)
    with pytest.raises(SystemExit) as exc:
        bench.main(["--quick", "--cases", "chain5"])
    msg = str(exc.value)
    assert "\n" not in msg and 'pip install -e ".[bench]"' in msg and "pydy" in msg


def test_unknown_case_named(bench, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--cases", "chain7"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "chain7" in err and "chain5" in err


def test_ratios_read_on_the_envelope(bench):
    """On a power law CPU = a·err^(−1/4) log-linear interpolation is exact, between the runs and
    extrapolated up to two decades; a dominated run (more CPU for more error) is not read."""
    errs = np.array([1e-2, 1e-3, 1e-4])
    pts = [(e, 0.3 * e ** -0.25) for e in errs] + [(5e-3, 10.0)]
    assert (5e-3, 10.0) not in bench.envelope(pts)
    for err, how in ((3e-4, ""), (1e-6, "extrapolated"), (1e-1, "extrapolated")):
        cpu, read = bench.cpu_at(pts, err)
        assert read == how and cpu == pytest.approx(0.3 * err ** -0.25, rel=1e-12)
    assert bench.cpu_at(pts, 1e-7) == (pytest.approx(np.nan, nan_ok=True), "not reached")


def test_from_reads_a_printed_log(bench, tmp_path, capsys):
    """--from re-reads the committed run's log: every case, its rows and its floor."""
    log = SCRIPT.parents[2] / "docs" / "figures" / "bench_pydy.log"
    panels = bench.read_log(log)
    assert [c.name for c, _, _ in panels] == ["chain5", "chain20", "dfb"]
    for case, rows, floor in panels:
        assert floor == 1e-9
        fams = {(r[0], r[1]) for r in rows}
        assert {("LSODA", "PyDy"), ("DOP853", "PyDy")} <= fams
        assert all(r[4] > 0 and r[3] > 0 for r in rows)
    assert bench.main(["--from", str(log), "--at", "1e-6", "-o", str(tmp_path / "f.png")]) == 0
    assert "symgen best" in capsys.readouterr().out
