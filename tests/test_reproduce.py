"""`symgen reproduce --quick`: runs in CI, writes a report whose table has one row per claim."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from symgen import reproduce  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def _symgen():
    here = Path(sys.executable).parent / "symgen"
    return [str(here)] if here.is_file() else [sys.executable, "-m", "symgen.cli"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    # exactly the README's command, run in a fresh folder
    cwd = tmp_path_factory.mktemp("repro")
    proc = subprocess.run(_symgen() + ["reproduce", "--quick", "--out", "reproduction"],
                          capture_output=True, text=True, timeout=600, cwd=cwd)
    return cwd / "reproduction", proc


def table_rows(text):
    """Rows of the claims table (between its header and the first blank line)."""
    lines = text.splitlines()
    start = lines.index("| claim | paper's value | ours | agree? |")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_quick_reproduction_runs_and_reports_every_claim(quick):
    out, proc = quick
    assert proc.returncode == 0, proc.stderr
    report = (out / "report.md").read_text()
    rows = table_rows(report)
    assert len(rows) == len(reproduce.CLAIMS)
    ids = [re.match(r"\| (\w+): ", r).group(1) for r in rows]
    assert ids == list(reproduce.CLAIMS)
    for r in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", r)[1:-1]]
        assert len(cells) == 4, r
        assert cells[3] in ("yes", "no", "not run (--quick)", "n/a (parameters differ)", "error")
    # the table is printed by the command as well
    assert proc.stdout.count("\n| ") >= len(reproduce.CLAIMS)


def test_quick_reproduction_checks_the_core_claims(quick):
    """The claims the quick set must check (not skip), with what the paper says."""
    out, _ = quick
    claims = {c["id"]: c for c in json.loads((out / "claims.json").read_text())}
    checked = {k for k, c in claims.items() if c["agree"] in ("yes", "no")}
    assert {"P1", "P2", "P3", "P4", "P5", "P8", "P12", "D4", "D5", "A6"} <= checked
    # values under "ours" are computed: ω_max at rest is √(g/L) of the example
    m = re.search(r"([\d.]+) rad/s", claims["P1"]["ours"])
    assert m and abs(float(m.group(1)) - np.sqrt(9.8)) < 1e-8
    # the paper's central stability claims on the stiff pendulum (Sec. 3 and 6)
    for cid in ("P1", "P3", "P5", "P8", "P12"):
        assert claims[cid]["agree"] == "yes", claims[cid]


def test_quick_reproduction_writes_valid_figures(quick):
    out, _ = quick
    report = (out / "report.md").read_text()
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", report)
    assert len(figures) >= 10
    for name in figures:
        assert (out / name).read_bytes()[:8] == PNG, name


def test_report_object_and_claim_rules(tmp_path):
    """run() with no experiments: every claim still has a row, marked not run."""
    rep = reproduce.run(out=tmp_path, quick=True, experiments=())
    assert [c.id for c in rep.claims] == list(reproduce.CLAIMS)
    assert all(c.agree == "not run" for c in rep.claims)
    assert len(rep.table_lines()) == 2 + len(reproduce.CLAIMS)
    assert all(c.rule for c in rep.claims)
    assert (tmp_path / "report.md").is_file()


def test_minimal_reference_models_match_the_examples():
    """The minimal-coordinate references describe the same mechanisms as the examples."""
    import symgen

    mp = reproduce.minimal_pendulum()
    sp_ = symgen.load_model("stiff_pendulum")
    assert mp.param_names == sp_.param_names
    md = reproduce.minimal_double_pendulum()
    ex = symgen.load_model("double_pendulum")
    # same initial accelerations of the two bar angles from the same (horizontal, at rest) start
    k_ex, k_md = symgen.LambdifyKernels(ex), symgen.LambdifyKernels(md)
    a_ex = symgen.consistent_state(k_ex, 0.0, ex.x0, ex.xd0).xdd
    a_md = symgen.consistent_state(k_md, 0.0, md.x0, md.xd0).xdd
    i1, i2 = ex.coord_names.index("bar1.theta"), ex.coord_names.index("bar2.theta")
    np.testing.assert_allclose([a_ex[i1], a_ex[i2]], a_md, rtol=1e-10)
    # and the same energy
    assert np.isclose(sum(k_ex.energy(0, ex.x0, ex.xd0)), sum(k_md.energy(0, md.x0, md.xd0)))


def test_a_broken_experiment_is_reported_and_exits_3(tmp_path, monkeypatch, capsys):
    """An experiment that raises marks its claims as errors; the others still run."""
    from symgen.cli import main

    def boom(ctx):
        raise RuntimeError("simulated breakage")

    monkeypatch.setattr(reproduce, "EXPERIMENTS", (("stiff pendulum", boom, ("P",)),))
    rep = reproduce.run(out=tmp_path / "a", quick=True)
    assert rep.errors == {"stiff pendulum": "RuntimeError: simulated breakage"}
    pend = [c for c in rep.claims if c.id.startswith("P")]
    assert pend and all(c.agree == "error" for c in pend)
    assert "simulated breakage" in (tmp_path / "a" / "report.md").read_text()
    code = main(["reproduce", "--quick", "--quiet", "--out", str(tmp_path / "b")])
    assert code == 3
    assert "simulated breakage" in capsys.readouterr().err


def test_sim_records_bad_starts_and_lets_crashes_through(tmp_path, monkeypatch):
    """simulate's documented ValueError/KeyError become a failed run; any other exception is a bug
    and reaches the experiment (which is then reported broken, exit 3), not a 'failure' that
    would agree with claims such as "classical fails"."""
    import symgen

    ctx = reproduce.Context(tmp_path, True, lambda msg: None)
    ctx._kernels["toy"] = object()

    def bad_start(*a, **k):
        raise ValueError("cannot project x0 onto the constraints")

    monkeypatch.setattr(symgen, "simulate", bad_start)
    res = ctx.sim("toy", "index3", "trapezoidal", 0.1, 1.0)
    assert res.status == "failed" and "cannot project" in res.reason

    def crash(*a, **k):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(symgen, "simulate", crash)
    with pytest.raises(ZeroDivisionError):
        ctx.sim("toy", "index3", "trapezoidal", 0.1, 1.0)


def test_period_2_growth_rule():
    """D1/D2 agree only when the classical λ's period-2 amplitude grows, not on any failure."""
    class R:
        def __init__(self, lam):
            self.lam = np.asarray(lam, float)[:, None]

    n = 200
    saw = (-1.0) ** np.arange(n)
    _, _, grow = reproduce._p2_growth(R(saw * np.exp(np.arange(n) / 20)))
    assert grow >= reproduce.GROWTH
    _, _, grow = reproduce._p2_growth(R(saw))                # steady sawtooth: no growth
    assert grow < reproduce.GROWTH
    assert reproduce._p2_growth(reproduce.Failed("crash"))[2] == 0.0   # nothing recorded


def test_a_failure_without_growth_does_not_agree_with_d1_d2(tmp_path, monkeypatch):
    """A classical run that stops at once (no λ history) is no evidence for D1/D2."""
    real = reproduce.Context.sim

    def sim(self, key, method, scheme, dt, t_end, **params):
        if method == "index3":
            return reproduce.Failed("stopped at once")
        return real(self, key, method, scheme, dt, t_end, **params)

    monkeypatch.setattr(reproduce.Context, "sim", sim)
    rep = reproduce.run(out=tmp_path, quick=True, experiments=("double pendulum",))
    claims = {c.id: c for c in rep.claims}
    assert not rep.errors
    assert claims["D1"].agree == "no" and claims["D2"].agree == "no", claims["D1"].ours


def test_reproduce_does_not_depend_on_the_cli():
    import inspect

    from symgen import cli

    assert ".cli" not in inspect.getsource(reproduce)
    assert not hasattr(cli, "_omega_h") and not hasattr(cli, "_gamma_beta")
    assert "if True" not in inspect.getsource(reproduce)
