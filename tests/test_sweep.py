"""Parameter studies (issue 13): symgen.sweep and `symgen sweep` on Dask, the table, resume."""
import math
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import symgen
from symgen.cli import main
from symgen.loader import load_model
from symgen.result import load_result
from symgen.study import parse_values, read_rows

GRID = {"T0": [5.0, 7.0, 9.0], "dt": [0.1, 0.05]}
T_END = 5.0


@pytest.fixture(scope="module")
def model():
    return load_model("stiff_pendulum")


@pytest.fixture(scope="module")
def serial(model):
    """The six runs by plain simulate: (T0, dt) → Result."""
    k = symgen.build(model)
    return {(T0, dt): symgen.simulate(k, params={"T0": T0}, dt=dt, t_end=T_END)
            for T0 in GRID["T0"] for dt in GRID["dt"]}


def _check_rows(rows, serial):
    assert len(rows) == 6
    for row in rows:
        ref = serial[(float(row["T0"]), float(row["dt"]))]
        assert row["status"] == "completed" == ref.status
        assert int(row["steps"]) == ref.n_steps
        # same kernels, same steps: identical numbers, not merely close
        assert float(row["final.theta"]) == ref.output("theta")[-1]
        assert float(row["max_abs.theta"]) == np.max(np.abs(ref.output("theta")))
        assert float(row["max_pos_err"]) == np.max(ref.pos_err)
        finite = ref.h_max[np.isfinite(ref.h_max)]
        assert float(row["min_h_max"]) == (np.min(finite) if finite.size else math.inf)


def test_parse_values():
    assert parse_values("5:9:5") == [5.0, 6.0, 7.0, 8.0, 9.0]
    assert parse_values("0.1,0.05") == [0.1, 0.05]
    assert parse_values("nullspace,index3") == ["nullspace", "index3"]
    with pytest.raises(ValueError, match="START:STOP:COUNT"):
        parse_values("5:9")


def test_local_cluster_rows_equal_serial_runs(model, serial, tmp_path):
    pytest.importorskip("distributed")
    study = symgen.sweep(model, GRID, out=tmp_path, workers=2, t_end=T_END)
    assert study.ran == 6 and study.skipped == 0
    _check_rows(study.rows, serial)
    _check_rows(read_rows(tmp_path), serial)            # the table says the same
    for row in study.rows:                              # and each .npz holds the run
        res = load_result(tmp_path / "runs" / f"{row['run']}.npz")
        ref = serial[(row["T0"], row["dt"])]
        np.testing.assert_array_equal(res.x, ref.x)
        assert res.meta["sweep_point"] == {"T0": row["T0"], "dt": row["dt"]}


def test_failing_points_are_rows(model, tmp_path):
    # max_iter = 1 cannot converge at h = 1 s, past the stability limit (0.78 s) where no
    # sub-steps rescue a step (a 'failed' run with its first step kept); an unknown scheme
    # raises inside the task: both are rows, the other runs complete.  The paper's step: its
    # Newton closes these steps with 50 iterations (the default step's does not past the
    # limit: docs/method.md, "The default step and the paper's claims")
    grid = {"max_iter": [1, 50], "scheme": ["fox-goodwin", "no-such-scheme"]}
    study = symgen.sweep(model, grid, out=tmp_path, workers=0, dt=1.0, t_end=2.0, preset="paper")
    by = {(r["max_iter"], r["scheme"]): r for r in study.rows}
    assert by[(50, "fox-goodwin")]["status"] == "completed"
    bad = by[(1, "fox-goodwin")]
    assert bad["status"] == "failed" and "Newton did not converge" in bad["reason"]
    assert (tmp_path / "runs" / f"{bad['run']}.npz").is_file()
    for it in (1, 50):
        r = by[(it, "no-such-scheme")]
        assert r["status"] == "failed" and r["reason"].startswith("ValueError")
        assert not (tmp_path / "runs" / f"{r['run']}.npz").exists()
    assert [r["status"] for r in read_rows(tmp_path)] == [r["status"] for r in study.rows]


def test_resume_skips_finished_runs(model, tmp_path):
    grid = {"T0": [5.0, 9.0], "dt": [0.1, 0.05]}
    first = symgen.sweep(model, grid, out=tmp_path, workers=0, t_end=1.0)
    assert first.ran == 4
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "runs").iterdir()}
    again = symgen.sweep(model, grid, out=tmp_path, workers=0, t_end=1.0)
    assert (again.ran, again.skipped) == (0, 4)
    assert again.rows == read_rows(tmp_path)
    lost = tmp_path / "runs" / f"{first.rows[2]['run']}.npz"
    lost.unlink()
    third = symgen.sweep(model, grid, out=tmp_path, workers=0, t_end=1.0)
    assert (third.ran, third.skipped) == (1, 3)
    assert lost.is_file()
    for p in (tmp_path / "runs").iterdir():
        if p.name != lost.name:
            assert p.stat().st_mtime_ns == stamps[p.name]
    # other options are other runs: nothing skipped, and the earlier rows stay in the table
    other = symgen.sweep(model, {"T0": [7.0]}, out=tmp_path, workers=0, t_end=0.5)
    assert (other.ran, other.skipped) == (1, 0)
    table = read_rows(tmp_path)
    assert [r["run"] for r in table] == [other.rows[0]["run"]] + [r["run"] for r in third.rows]
    assert list(table[0])[:4] == ["run", "T0", "dt", "status"]


def test_table_loads_with_pandas(model, tmp_path):
    pd = pytest.importorskip("pandas")
    from symgen.study import load_table
    study = symgen.sweep(model, {"T0": [5.0, 9.0]}, out=tmp_path, workers=0, t_end=1.0)
    df = load_table(tmp_path)
    assert list(df["T0"]) == [5.0, 9.0]
    assert df["max_abs.theta"].dtype == float
    np.testing.assert_array_equal(df["max_abs.theta"], [r["max_abs.theta"] for r in study.rows])
    assert list(df["status"]) == ["completed"] * 2
    assert pd.api.types.is_integer_dtype(df["steps"])


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_existing_cluster_through_scheduler(serial, tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ)
    log = open(tmp_path / "dask.log", "w")
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                               "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=log, stderr=subprocess.STDOUT, env=env)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", addr, "--nthreads", "1",
                 "--host", "127.0.0.1", "--no-dashboard", "--no-nanny", "--death-timeout", "60"],
                stdout=log, stderr=subprocess.STDOUT, env=env))
        marker = tmp_path / "killed"

        class KillOnce(distributed.WorkerPlugin):
            """The first worker to start a run dies (as a lost machine would); the scheduler
            gives its runs to the other worker."""

            def transition(self, key, start, finish, **kw):
                if finish == "executing" and "symgen-run-" in str(key):
                    try:
                        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                    except FileExistsError:
                        return
                    os._exit(1)

        with distributed.Client(addr, timeout="60s") as client:
            client.wait_for_workers(2, timeout=60)
            client.register_plugin(KillOnce(), name="kill-once")
        out = tmp_path / "study"
        rc = main(["sweep", "stiff_pendulum", "--param", "T0=5:9:3", "--param", "dt=0.1,0.05",
                   "--t-end", str(T_END), "--scheduler", addr, "--out", str(out), "--quiet"])
        text = capsys.readouterr()
        assert rc == 0, text.err
        assert "6 completed, 0 not" in text.out
        assert marker.exists()                  # a worker did die during the sweep
        _check_rows(read_rows(out), serial)
        png = tmp_path / "sweep.png"
        assert main(["plot", str(out), "--what", "sweep", "--x", "T0", "--y", "max_abs.theta",
                     "-o", str(png)]) == 0
        assert png.stat().st_size > 0
    finally:
        # workers first (no nannies: nothing is left behind), then the scheduler
        for group in (procs[1:], procs[:1]):
            for p in group:
                p.terminate()
            for p in group:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)
        log.close()


def test_bad_grid_is_a_usage_error(capsys):
    rc = main(["sweep", "stiff_pendulum", "--param", "nope=1,2", "--workers", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--param nope" in err
    rc = main(["sweep", "stiff_pendulum", "--param", "T0=5:9", "--workers", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "START:STOP:COUNT" in err


def test_a_word_for_a_model_parameter_names_the_option(capsys, tmp_path):
    # issue 38.12: said only "could not convert string to float: 'abc'"
    rc = main(["sweep", "stiff_pendulum", "--param", "T0=abc,1", "--workers", "0",
               "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--param T0" in err and "'abc'" in err


def test_sweep_figure_plots_the_table(model, tmp_path):
    pytest.importorskip("matplotlib")
    from symgen.plot import sweep_figure
    study = symgen.sweep(model, {"T0": [5.0, 9.0], "dt": [0.1, 0.05]}, out=tmp_path, workers=0,
                         t_end=1.0)
    fig = sweep_figure(tmp_path, "T0", "max_abs.theta")
    lines = fig.axes[0].get_lines()
    assert [ln.get_label() for ln in lines] == ["dt = 0.1", "dt = 0.05"]
    for ln, dt in zip(lines, (0.1, 0.05)):
        rows = [r for r in study.rows if r["dt"] == dt]
        np.testing.assert_array_equal(ln.get_xdata(), [r["T0"] for r in rows])
        np.testing.assert_array_equal(ln.get_ydata(), [r["max_abs.theta"] for r in rows])
    with pytest.raises(ValueError, match="not a column"):
        sweep_figure(tmp_path, "T0", "max_abs.nope")


def test_every_keeps_the_table_over_every_step(model, tmp_path):
    # every = 7 records rows 0, 7, 14, 20 of 20 steps; the table's steps and maxima are those of
    # every step taken (meta['run_stats']), equal to the run that records them all
    full = symgen.simulate(symgen.build(model), params={"T0": 9.0}, dt=0.05, t_end=1.0)
    study = symgen.sweep(model, {"T0": [9.0]}, out=tmp_path, workers=0, dt=0.05, t_end=1.0,
                         every=7)
    (row,) = study.rows
    res = load_result(tmp_path / "runs" / f"{row['run']}.npz")
    assert len(res.t) == 4 and row["steps"] == full.n_steps == 20
    assert row["max_pos_err"] == np.max(full.pos_err)
    assert row["max_acc_err"] == np.max(full.acc_err)
    finite = full.h_max[np.isfinite(full.h_max)]
    assert row["min_h_max"] == (np.min(finite) if finite.size else math.inf)
    assert row["final.theta"] == full.output("theta")[-1]


def test_tangent_chart_is_a_grid_key_and_not_the_figure(tmp_path, capsys):
    # --chart is the figure file of `symgen sweep`; the nullspace chart is swept with --param
    rc = main(["sweep", "stiff_pendulum", "--param", "T0=9", "--chart", "symmetric",
               "--workers", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--param chart=symmetric" in err
    out = tmp_path / "study"
    rc = main(["sweep", "stiff_pendulum", "--param", "chart=end,symmetric", "--t-end", "0.5",
               "--workers", "0", "--out", str(out), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    rows = read_rows(out)
    assert [r["chart"] for r in rows] == ["end", "symmetric"]
    assert all(r["status"] == "completed" for r in rows)
    for r in rows:
        assert load_result(out / "runs" / f"{r['run']}.npz").meta["chart"] == r["chart"]


def test_resume_redoes_a_damaged_run_file_and_rebuilds_a_damaged_table(model, tmp_path):
    """Issue 27 (3): a truncated runs/<id>.npz is not a finished run; a truncated table.csv is
    rebuilt from the run files (no internal TypeError), without running anything again."""
    grid = {"T0": [5.0, 9.0]}
    first = symgen.sweep(model, grid, out=tmp_path, workers=0, t_end=1.0)
    bad = tmp_path / "runs" / f"{first.rows[1]['run']}.npz"
    bad.write_bytes(bad.read_bytes()[:200])                 # truncated
    again = symgen.sweep(model, grid, out=tmp_path, workers=0, t_end=1.0)
    assert (again.ran, again.skipped) == (1, 1)
    ref = symgen.simulate(symgen.build(model), params={"T0": 9.0}, t_end=1.0)
    redone = load_result(bad)                               # the run file is whole again
    assert redone.status == "completed"
    np.testing.assert_array_equal(redone.x, ref.x)
    assert read_rows(tmp_path)[1]["final.theta"] == ref.output("theta")[-1]

    table = tmp_path / "table.csv"
    text = table.read_text()
    table.write_text(text[:len(text) - len(text.splitlines()[-1]) // 2 - 1])   # last row cut
    with pytest.raises(ValueError, match="line 3 has .* fields"):
        read_rows(tmp_path)
    third = symgen.sweep(model, grid, out=tmp_path, workers=0, t_end=1.0)
    assert (third.ran, third.skipped) == (0, 2)
    assert read_rows(tmp_path) == third.rows
    assert read_rows(tmp_path)[1]["final.theta"] == ref.output("theta")[-1]


def test_a_scheduler_without_workers_is_reported_and_the_timeout_honoured(tmp_path, capsys,
                                                                          monkeypatch):
    """Issue 27 (5): a sweep on a scheduler without workers waited forever, silently."""
    distributed = pytest.importorskip("distributed")
    from symgen import study
    monkeypatch.setattr(study, "NO_WORKER_WARNING", 0.5)        # 5 s in use
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cl:
        addr = cl.scheduler_address
        t0 = time.monotonic()
        rc = main(["sweep", "stiff_pendulum", "--param", "T0=5,9", "--t-end", "0.5",
                   "--scheduler", addr, "--timeout", "1.5", "--out", str(tmp_path), "--quiet"])
        waited = time.monotonic() - t0
    err = capsys.readouterr().err.splitlines()
    assert rc == 2, err
    assert err[0] == (f"note: the Dask scheduler {addr} has no workers: 2 runs are waiting "
                      f"(start workers: dask worker {addr}; or give a timeout)")
    assert err[1].startswith("error: gave up after the timeout of 1.5 s: 0 of 2 runs finished")
    assert len(err) == 2 and waited >= 1.5
    assert main(["sweep", "stiff_pendulum", "--param", "T0=5", "--timeout", "0"]) == 2
    assert "--timeout must be a positive number" in capsys.readouterr().err


def test_a_tolerance_study_with_dt_auto(model, tmp_path):
    """--dt auto with --param rtol=…: one row per tolerance, fewer steps for the looser one."""
    from symgen.cli import main
    assert main(["sweep", "stiff_pendulum", "--dt", "auto", "--t-end", "5", "--param",
                 "rtol=1e-4,1e-7", "--workers", "0", "--out", str(tmp_path), "--quiet"]) == 0
    rows = {float(r["rtol"]): r for r in read_rows(tmp_path)}
    assert [rows[k]["status"] for k in (1e-4, 1e-7)] == ["completed", "completed"]
    assert int(rows[1e-4]["steps"]) < int(rows[1e-7]["steps"])


def test_a_step_size_study_plots_an_error_on_log_axes():
    """issue 25 §5: with dt a key spanning more than a decade, x is logarithmic and the default y
    is an error column (the energy drift here), logarithmic too when it spans decades; a key
    within a decade stays linear."""
    pytest.importorskip("matplotlib")
    from symgen.plot import sweep_figure
    rows = [{"run": f"r{i}", "dt": dt, "status": "completed", "reason": "", "steps": 10,
             "energy_drift": 3.0 * dt ** 2, "max_pos_err": 1e-16, "max_abs.theta": 0.5}
            for i, dt in enumerate((1e-3, 1e-2, 1e-1))]
    ax = sweep_figure(rows, "dt").axes[0]
    assert (ax.get_xscale(), ax.get_yscale(), ax.get_ylabel()) == ("log", "log", "energy_drift")
    narrow = [dict(r, dt=v) for r, v in zip(rows, (0.1, 0.2, 0.3))]
    for r in narrow:
        r["energy_drift"] = 1.0 + r["dt"]
    ax = sweep_figure(narrow, "dt").axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("linear", "linear")


def test_the_default_step_the_paper_preset_and_a_study_of_the_old_default(model, tmp_path,
                                                                          capsys):
    """A sweep's runs take simulate's default step (symmetric chart, mass metric); preset="paper"
    (CLI --preset paper, or --param preset=paper) the paper's, bit for bit simulate's; a run file
    made with another chart and metric (a study from when the paper's step was the default) is
    run again on resume, not taken as finished."""
    k = symgen.build(model)

    def meta(out, row):
        m = load_result(out / "runs" / f"{row['run']}.npz").meta
        return m["chart"], m["metric"], m["preset"]

    a = symgen.sweep(model, {"T0": [5.0]}, out=tmp_path / "a", workers=0, t_end=0.5)
    assert meta(tmp_path / "a", a.rows[0]) == ("symmetric", "mass", None)
    b = symgen.sweep(model, {"T0": [5.0]}, out=tmp_path / "b", workers=0, t_end=0.5,
                     preset="paper")
    assert meta(tmp_path / "b", b.rows[0]) == ("end", "euclidean", "paper")
    ref = symgen.simulate(k, params={"T0": 5.0}, t_end=0.5, preset="paper")
    assert b.rows[0]["final.theta"] == ref.output("theta")[-1]
    assert a.rows[0]["final.theta"] != ref.output("theta")[-1]
    for args in (["--preset", "paper"], ["--param", "preset=paper"]):
        out = tmp_path / args[0].strip("-")
        rc = main(["sweep", "stiff_pendulum", "--param", "T0=5", *args, "--t-end", "0.5",
                   "--workers", "0", "--out", str(out), "--quiet"])
        assert rc == 0, capsys.readouterr().err
        assert meta(out, read_rows(out)[0]) == ("end", "euclidean", "paper")
    rc = main(["sweep", "stiff_pendulum", "--param", "preset=paper", "--preset", "paper",
               "--workers", "0"])
    assert rc == 2 and "--preset and --param preset=… both given" in capsys.readouterr().err
    # the old default's run under this run's id: run again
    old = symgen.simulate(k, params={"T0": 5.0}, t_end=0.5, chart="end", metric="euclidean")
    old.save(tmp_path / "a" / "runs" / f"{a.rows[0]['run']}.npz")
    again = symgen.sweep(model, {"T0": [5.0]}, out=tmp_path / "a", workers=0, t_end=0.5)
    assert (again.ran, again.skipped) == (1, 0)
    assert meta(tmp_path / "a", again.rows[0]) == ("symmetric", "mass", None)
    assert again.rows[0]["final.theta"] == a.rows[0]["final.theta"]
