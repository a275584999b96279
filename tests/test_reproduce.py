"""`symgen reproduce --quick`: runs in CI, writes a report whose table has one row per claim."""
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from symgen import reproduce


def _has_matplotlib() -> bool:
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except ImportError:
        return False


#: the experiments draw their figures: the tests that run one need matplotlib (the rules, the
#: reference models and the report object do not)
needs_matplotlib = pytest.mark.skipif(
    not _has_matplotlib(), reason="the reproduction's experiments draw figures: matplotlib is not "
                                  "installed (pip install -e '.[plot]')")

PNG = b"\x89PNG\r\n\x1a\n"


def _symgen():
    here = Path(sys.executable).parent / "symgen"
    return [str(here)] if here.is_file() else [sys.executable, "-m", "symgen.cli"]


#: the quick reproduction's models that no earlier test builds (the minimal pendulum and double
#: four-bar): built from the session's start by another process (conftest.py)
WARM = ["symgen.reproduce.references:minimal_pendulum",
        "symgen.reproduce.beyond:minimal_four_bar:N=2"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    # exactly the command of docs/reproduce.md, run in a fresh folder
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


@needs_matplotlib
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


@needs_matplotlib
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


@needs_matplotlib
def test_quick_reproduction_beyond_the_paper(quick):
    """The section "beyond the paper" (symgen/reproduce/beyond.py): the rows the quick set runs are checked
    and agree (the end chart's energy loss, the symmetric chart's conservation and reversibility);
    B8 (Bricard over 10 s) is left to the full run."""
    out, _ = quick
    claims = {c["id"]: c for c in json.loads((out / "claims.json").read_text())}
    for cid in ("B1", "B2", "B3", "B4", "B5", "B6", "B7"):
        assert claims[cid]["agree"] == "yes", claims[cid]
    assert claims["B8"]["agree"] == "not run (--quick)"
    assert "## Beyond the paper" in (out / "report.md").read_text()
    assert (out / "beyond_energy.png").read_bytes()[:8] == PNG


@needs_matplotlib
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


@needs_matplotlib
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


@needs_matplotlib
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


# -- the claim rules, fed fake runs (no simulation, no compiler) -----------------------------------
class _FakeRun:
    """A Result-like run of ``steps`` steps of ``dt`` ending ``status``; θ ≡ 0 (so "stable" when
    completed), λ ≡ 0 (no period-2 growth), constraint residuals ``residual``."""

    def __init__(self, model, status, steps, dt, residual=0.0):
        n = steps + 1
        self.status, self.reason = status, "" if status == "completed" else "fake"
        self.t = np.arange(n) * dt
        self.coords = tuple(model.coord_names)
        self.output_names = tuple(model.output_names)
        self.x = self.xd = self.xdd = np.zeros((n, len(self.coords)))
        self.outputs = np.zeros((n, len(self.output_names)))
        self.lam = np.zeros((n, max(model.m, 1)))
        self.pos_err = self.vel_err = self.acc_err = np.full(n, residual)
        self.omega_max = self.h_max = np.full(n, np.nan)


def _fake_runs(monkeypatch, outcome):
    """Every run of the experiments is ``outcome(method, scheme, dt, params)`` → (status, steps,
    residual) on a _FakeRun; kernels are LambdifyKernels (ω_max for P1–P3 needs no compiler);
    figures are not drawn."""
    import symgen

    def kernels(self, key):
        if key not in self._kernels:
            self._kernels[key] = symgen.LambdifyKernels(self.model(key))
        return self._kernels[key]

    def sim(self, key, method, scheme, dt, t_end, **params):
        status, steps, residual = outcome(method, scheme, dt, params)
        if status == "completed":
            steps = max(int(round(t_end / dt)), 1)
        return _FakeRun(self.model(key), status, steps, dt, residual)

    monkeypatch.setattr(reproduce.Context, "kernels", kernels)
    monkeypatch.setattr(reproduce.Context, "sim", sim)
    # the figures are not what these tests check (the --quick run above draws them)
    monkeypatch.setattr(reproduce.Context, "figure", lambda self, section, name, fig, cap: name)


def _pendulum_outcome(took_steps, residual):
    """The classical Fox–Goodwin runs, the classical T0 = 9 run and the h = 0.79 Fox–Goodwin runs
    stop: after 5 steps (``took_steps``) or before the first; all else completes."""
    def outcome(method, scheme, dt, params):
        stops = ((method == "index3" and scheme == "fox-goodwin")
                 or (method == "index3" and params.get("T0") == 9.0)
                 or (scheme == "fox-goodwin" and dt == 0.79))
        if stops:
            return "diverged", (5 if took_steps else 0), 0.0
        return "completed", 0, (residual if method == "nullspace" else 0.0)
    return outcome


@needs_matplotlib
def test_pendulum_failure_claims_need_a_run_that_took_steps(tmp_path, monkeypatch):
    """P8, P9 ("fails") and the "unstable at 0.79 s" of P5, P12 count only a run that took steps
    and then failed; one that never took a step is no evidence.  P14 is a round-off claim: a
    constraint residual of 1e-12 disagrees (the old rule, ≤ 1e-10, let it agree)."""
    ids = ("P5", "P8", "P9", "P12", "P14")
    _fake_runs(monkeypatch, _pendulum_outcome(took_steps=False, residual=1e-12))
    rep = reproduce.run(out=tmp_path / "a", quick=True, experiments=("stiff pendulum",))
    claims = {c.id: c for c in rep.claims}
    assert not rep.errors
    assert {i: claims[i].agree for i in ids} == dict.fromkeys(ids, "no")
    assert "no step taken" in claims["P5"].ours
    # the same runs having taken steps (and residuals at round-off) do agree: the rules can pass
    _fake_runs(monkeypatch, _pendulum_outcome(took_steps=True, residual=2e-16))
    rep = reproduce.run(out=tmp_path / "b", quick=True, experiments=("stiff pendulum",))
    claims = {c.id: c for c in rep.claims}
    assert {i: claims[i].agree for i in ids} == dict.fromkeys(ids, "yes")


@needs_matplotlib
def test_andrews_a1_needs_a_classical_run_that_took_steps(tmp_path, monkeypatch):
    def outcome(steps):
        def f(method, scheme, dt, params):
            if method == "index3" and scheme == "trapezoidal":
                return "failed", steps, 0.0
            return "completed", 0, 0.0
        return f

    for steps, agree in ((0, "no"), (7, "yes")):
        _fake_runs(monkeypatch, outcome(steps))
        rep = reproduce.run(out=tmp_path / str(steps), quick=False,
                            experiments=("Andrews' squeezer",))
        a1 = next(c for c in rep.claims if c.id == "A1")
        assert not rep.errors and a1.agree == agree, (steps, a1.ours)


def test_p2_p3_are_marked_derived_and_not_counted(tmp_path, monkeypatch):
    """P2 and P3 are arithmetic on P1's ω_max: shown as derived, not counted in the totals."""
    _fake_runs(monkeypatch, _pendulum_outcome(took_steps=True, residual=0.0))
    rep = reproduce.run(out=tmp_path, quick=True, experiments=("stiff pendulum",))
    claims = {c.id: c for c in rep.claims}
    assert claims["P2"].derived_from == claims["P3"].derived_from == "P1"
    assert all(claims[i].agree == "yes" for i in ("P1", "P2", "P3"))
    independent = [c for c in rep.claims if c.id not in ("P2", "P3")]
    agree = sum(c.agree == "yes" for c in independent)
    checked = sum(c.agree in ("yes", "no") for c in independent)
    assert rep.tally()[:2] == (agree, checked)
    text = (tmp_path / "report.md").read_text()
    assert f"**{agree} of {checked} independent claims checked agree**" in text
    assert "| P2: central-difference stability limit 2/ω_max (Eq. 18) (derived from P1) |" in text
    saved = {c["id"]: c for c in json.loads((tmp_path / "claims.json").read_text())}
    assert saved["P3"]["derived_from"] == "P1" and saved["P1"]["derived_from"] == ""


EFFICIENCY = "efficiency (Sec. 7)"


@pytest.fixture(scope="module")
def efficiency_quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("efficiency")
    return out, reproduce.run(out=out, quick=True, experiments=(EFFICIENCY,))


@needs_matplotlib
def test_efficiency_rows_after_a_quick_run(efficiency_quick):
    """Sec. 7 (symgen/reproduce/efficiency.py): one row per claim E1–E3, checked on the 2 s runs
    (the span is said in the row); the energy limits of the IFToMM benchmarks hold on them; the
    other experiments are marked not run."""
    out, rep = efficiency_quick
    claims = {c.id: c for c in rep.claims}
    assert not rep.errors
    assert [i for i in reproduce.CLAIMS if i.startswith("E")] == ["E1", "E2", "E3"]
    for cid in ("E1", "E2", "E3"):
        assert claims[cid].agree in ("yes", "no"), claims[cid]
        assert claims[cid].ours.startswith("(2 s run, --quick)"), claims[cid].ours
    # the drift the row reports is the limit's quantity, below 0.1 J and 1e-3 J
    d = float(re.search(r"max \|E − E₀\| = ([\d.e+-]+) J", claims["E1"].ours).group(1))
    assert 0 < d <= 0.1
    assert claims["E1"].agree == "yes" and claims["E2"].agree == "yes"
    assert re.search(r"\(\w+ stepper\)", claims["E3"].ours) and "per iteration" in claims["E3"].ours
    assert "not like-for-like" in claims["E1"].paper and "0.4 s" in claims["E1"].paper
    assert all(c.agree == "not run" for c in rep.claims if not c.id.startswith("E"))
    report = (out / "report.md").read_text()
    assert "## Efficiency (Sec. 7)" in report
    for name in ("efficiency_four_bar.png", "efficiency_bricard.png"):
        assert (out / name).read_bytes()[:8] == PNG


@needs_matplotlib
def test_efficiency_rules_can_fail(tmp_path, monkeypatch):
    """A drift limit no run can meet flips E1 and E2 (Bricard then tries every step), and a
    cost ratio of 1 (exactly equal costs) flips E3."""
    from symgen.reproduce import claims as rules

    monkeypatch.setattr(rules, "FOUR_BAR_DRIFT", 1e-9)
    monkeypatch.setattr(rules, "BRICARD_DRIFT", 1e-12)
    monkeypatch.setattr(rules, "COST_RATIO", 1.0 - 1e-12)
    rep = reproduce.run(out=tmp_path, quick=True, experiments=(EFFICIENCY,))
    claims = {c.id: c for c in rep.claims}
    assert not rep.errors
    assert claims["E1"].agree == "no", claims["E1"].ours
    assert claims["E2"].agree == "no" and "no step meets the limit" in claims["E2"].ours
    assert all(f"h = {h:g}" in claims["E2"].ours for h in (1e-2, 5e-3, 2.5e-3))
    assert claims["E3"].agree == "no", claims["E3"].ours
