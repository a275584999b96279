"""`symgen simulate --tol/--max-iter/--rank-tol` and `symgen stability --rank-tol` (issue 8 §2)."""
import pytest

from symgen.result import load_result
from test_cli import assert_one_line_error, call, run


@pytest.mark.parametrize("flag, value, words", [
    ("--tol", "0", "--tol"), ("--tol", "-0.5", "--tol"), ("--tol", "nan", "--tol"),
    ("--tol", "inf", "--tol"), ("--max-iter", "0", "--max-iter"),
    ("--max-iter", "2.5", "--max-iter"), ("--max-iter", "inf", "--max-iter"),
    ("--rank-tol", "1", "--rank-tol"), ("--rank-tol", "-0.1", "--rank-tol"),
    ("--rank-tol", "nan", "--rank-tol")])
def test_bad_newton_options_are_one_line_errors(capsys, flag, value, words):
    proc = call(capsys, "simulate", "stiff_pendulum", "--t-end", "1", f"{flag}={value}")
    assert_one_line_error(proc, words, value)


@pytest.mark.parametrize("stepper", ["compiled", "python"])
@pytest.mark.parametrize("value", ["0.9", "0.999999", "0.011"])
def test_rank_tol_that_drops_independent_rows_is_refused(stepper, value):
    # issue 38.3: a rank tolerance near 1 dropped one of the pendulum's two revolute rows (s_min/
    # s_max = 0.7); the failed step then crept on in sub-steps of 1e-13 s and the run never ended.
    # The guard is a subprocess timeout (the stuck C loop ignores SIGTERM; run() kills it).
    p = run("simulate", "stiff_pendulum", "--t-end", "0.1", "--rank-tol", value,
            "--stepper", stepper, "--quiet", timeout=120)
    assert_one_line_error(p, "--rank-tol", value, "[0, 0.01]")


def test_rank_tol_range_in_the_library():
    from symgen import SimulationSettings
    with pytest.raises(ValueError, match=r"rank_tol must lie in \[0, 0.01\]"):
        SimulationSettings(rank_tol=0.5)
    assert SimulationSettings(rank_tol=1e-2).rank_tol == 1e-2      # the forced drop still allowed


def test_bad_rank_tol_for_stability(capsys):
    assert_one_line_error(call(capsys, "stability", "stiff_pendulum", "--rank-tol", "2"),
                          "--rank-tol")


def test_newton_options_reach_the_run(tmp_path, capsys):
    out = tmp_path / "r.npz"
    p = call(capsys, "simulate", "stiff_pendulum", "--t-end", "1", "--tol", "1e-8",
             "--max-iter", "7", "--rank-tol", "1e-9", "--out", out)
    assert p.returncode == 0, p.stderr
    meta = load_result(out).meta
    assert (meta["tol"], meta["max_iter"], meta["rank_tol"]) == (1e-8, 7, 1e-9)
    # one Newton iteration cannot converge from the predictor at h = 0.1 s: every step is
    # rescued by sub-steps under error control (within the stability limit) and says so
    p = call(capsys, "simulate", "stiff_pendulum", "--t-end", "1", "--max-iter", "1")
    assert p.returncode == 0 and "10 steps Newton could not close, taken as sub-steps" in p.stdout
    # past the paper's step's stability limit (0.78 s) no rescue: the run fails (exit 3)
    p = call(capsys, "simulate", "stiff_pendulum", "--t-end", "2", "--dt", "1", "--max-iter", "1",
             "--preset", "paper")
    assert p.returncode == 3 and "after 1 iterations" in p.stdout


def test_stability_rank_tol_reaches_the_estimate(capsys):
    p = call(capsys, "stability", "stiff_pendulum", "--rank-tol", "1e-9")
    assert p.returncode == 0 and "ω_max" in p.stdout
