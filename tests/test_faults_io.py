"""Fault injection, I/O part: saves that fail or are interrupted part-way, truncated and
bomb-like result files, SIGINT/SIGTERM during a real run, the recording of every K-th step, the
memory refusal, and what the CLI prints (--quiet, build notes, model() options in meta)."""
import os
import re
import select
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import symgen
import stepper_models as sm
from symgen import _io, signals
from symgen.result import Result, load_result, run_stats
from test_cli import SYMGEN, call, run


@pytest.fixture(scope="module")
def pend():
    return symgen.build(sm.stiff_pendulum())


@pytest.fixture(scope="module")
def res(pend):
    return symgen.simulate(pend, scheme="fox-goodwin", dt=0.1, t_end=3.0)


def _leftovers(folder, keep):
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


# -- saves are whole or nothing -----------------------------------------------------------------
def _fail_csv_after(monkeypatch, values: int, exc):
    """The CSV writer formats each value with repr(): raise ``exc`` at the ``values``-th."""
    import symgen.result as result_mod
    calls = []

    def fake_repr(v):
        calls.append(1)
        if len(calls) == values:
            raise exc
        return repr(v)
    monkeypatch.setattr(result_mod, "repr", fake_repr, raising=False)


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_save_that_fails_part_way_keeps_the_previous_file(res, pend, tmp_path, monkeypatch,
                                                            suffix, exc):
    path = tmp_path / f"r{suffix}"
    res.save(path)
    before = path.read_bytes()
    longer = symgen.simulate(pend, scheme="fox-goodwin", dt=0.1, t_end=30.0)
    if suffix == ".npz":
        real = np.savez_compressed

        def savez(fh, **data):               # writes part of the archive, then fails
            real(fh, t=data["t"])
            raise exc
        monkeypatch.setattr(np, "savez_compressed", savez)
    else:
        _fail_csv_after(monkeypatch, 100 * 22, exc)          # at row ~100 of 301
    with pytest.raises(type(exc)):
        longer.save(path)
    assert path.read_bytes() == before
    assert _leftovers(tmp_path, {path.name}) == []        # no temporary file left
    monkeypatch.undo()
    assert load_result(path) == res


def test_an_interrupted_first_save_leaves_nothing(res, tmp_path, monkeypatch):
    _fail_csv_after(monkeypatch, 200, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        res.save(tmp_path / "new.csv")
    assert list(tmp_path.iterdir()) == []


def test_atomic_open_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "f.txt"
    _io.atomic_write_text(path, "one")
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask      # as open() would
    path.chmod(0o640)
    _io.atomic_write_text(path, "two")
    assert path.read_text() == "two" and stat.S_IMODE(path.stat().st_mode) == 0o640
    _io.atomic_write_text(tmp_path / "p.txt", "x", private=True)
    assert stat.S_IMODE((tmp_path / "p.txt").stat().st_mode) == 0o600


# -- loaders check what a file declares -----------------------------------------------------------
def test_a_truncated_csv_is_rejected_with_its_row_counts(res, tmp_path):
    path = res.save(tmp_path / "r.csv")
    lines = path.read_text().splitlines(keepends=True)
    assert len(res.t) == 31
    cut = tmp_path / "cut.csv"
    cut.write_text("".join(lines[:3 + 10]))                      # header + 10 of 31 rows
    with pytest.raises(ValueError, match=r"cut\.csv.*declares 31 rows, found 10"):
        load_result(cut)
    # cut inside the last number: every row is there, the end line is not
    cut.write_text("".join(lines[:-1])[:-4])
    with pytest.raises(ValueError, match=r"cut\.csv.*31 rows, found 31 and no end line"):
        load_result(cut)


def _write_npz(path, members):
    """An .npz whose members are given as name -> (shape, dtype, chunk iterator of bytes)."""
    fmt = np.lib.format
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for name, (shape, dtype, chunks) in members.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                fmt.write_array_header_1_0(fh, {"descr": fmt.dtype_to_descr(np.dtype(dtype)),
                                                "fortran_order": False, "shape": shape})
                for chunk in chunks:
                    fh.write(chunk)


def _members_of(path):
    out = {}
    with np.load(path) as z:
        for name in z.files:
            a = z[name]
            out[name] = (a.shape, a.dtype, [a.tobytes()])
    return out


def test_a_small_npz_declaring_huge_arrays_is_rejected_before_allocating(res, tmp_path):
    members = _members_of(res.save(tmp_path / "r.npz"))
    rows = 16 << 20                                   # 16 Mi rows of t: 128 MB of zeros
    zeros = bytes(1 << 20)
    members["t"] = ((rows,), np.float64, (zeros for _ in range(rows * 8 >> 20)))
    bomb = tmp_path / "bomb.npz"
    _write_npz(bomb, members)
    assert bomb.stat().st_size < 2 << 20              # < 2 MB on disk
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"bomb\.npz.*'x' has shape \(31, 3\).*16777216"):
            load_result(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak                      # nothing near 128 MB was allocated


@pytest.mark.parametrize("member", ["status", "meta", "coords", "outputs"])
def test_a_small_npz_with_a_huge_text_or_misfit_member_is_rejected_before_allocating(
        res, tmp_path, member):
    """Issue 27 (8): the headers of the per-step arrays were checked, not those of the text
    members nor the width of 'outputs': a status of 32 MB (1 MB zipped → 1 GB in the report) was
    read before the status itself was refused."""
    members = _members_of(res.save(tmp_path / "r.npz"))
    size = 32 << 20                                   # 32 MB of zeros (NUL characters)
    zeros = bytes(1 << 20)
    chunks = (zeros for _ in range(size >> 20))
    n_names = members["output_names"][0][0]
    members[member] = {
        "status": ((), f"<U{size // 4}", chunks),
        "meta": ((), f"<U{size // 4}", chunks),
        "coords": ((3,), f"<U{size // 12}", chunks),
        "outputs": ((31, size // (31 * 8)), np.float64, (bytes(31 * 8 * (size // 248)),)),
    }[member]
    assert n_names != size // 248
    bomb = tmp_path / "bomb.npz"
    _write_npz(bomb, members)
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"bomb\.npz: member '{member}' (is not|has shape)"):
            load_result(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak                      # nothing near 32 MB was allocated


def test_save_refuses_text_that_load_would_refuse(res, tmp_path):
    big = Result(**{k: getattr(res, k) for k in ("t", "x", "xd", "xdd", "lam", "coords",
                                                 "pos_err", "vel_err", "acc_err", "omega_max",
                                                 "h_max", "newton_iters")},
                 meta={"note": "x" * (1 << 20)})
    with pytest.raises(ValueError, match="meta has an entry longer than the 1048576 characters"):
        big.save(tmp_path / "big.npz")
    assert not (tmp_path / "big.npz").exists()


def test_a_header_larger_than_its_data_is_rejected(res, tmp_path):
    members = _members_of(res.save(tmp_path / "r.npz"))
    members["t"] = ((10 ** 12,), np.float64, [bytes(64)])    # claims 8 TB, holds 64 bytes
    lie = tmp_path / "lie.npz"
    _write_npz(lie, members)
    with pytest.raises(ValueError, match=r"lie\.npz.*'t' declares shape \(1000000000000,\)"):
        load_result(lie)


def test_a_result_larger_than_the_memory_limit_is_refused(res, tmp_path, monkeypatch):
    for suffix in (".npz", ".csv"):
        path = res.save(tmp_path / f"r{suffix}")
        assert load_result(path) == res
        monkeypatch.setenv("SYMGEN_MEMORY_LIMIT", "2000")           # bytes
        with pytest.raises(ValueError, match="more than the 0.002 MB a result may take"):
            load_result(path)
        monkeypatch.delenv("SYMGEN_MEMORY_LIMIT")
        assert load_result(path, max_bytes=10 ** 6) == res


# -- interrupted runs keep their steps ------------------------------------------------------------
def _interrupt_at(step):
    def progress(j, n):
        if j == step:
            raise KeyboardInterrupt
    return progress


@pytest.mark.parametrize("every", [1, 7])
def test_simulate_returns_the_steps_taken_when_interrupted(pend, every):
    full = symgen.simulate(pend, scheme="fox-goodwin", dt=0.1, t_end=10.0)
    r = symgen.simulate(pend, scheme="fox-goodwin", dt=0.1, t_end=10.0, progress=_interrupt_at(50),
                        **({"every": every} if every > 1 else {}))
    assert r.status == "interrupted" and "after step 50 of 100" in r.reason
    assert r.meta["steps_done"] == 50 and r.t[-1] == full.t[50]
    np.testing.assert_array_equal(r.x[-1], full.x[50])       # the last step taken is kept
    rows = list(range(0, 51, every)) + ([] if 50 % every == 0 else [50])
    np.testing.assert_array_equal(r.x, full.x[rows])


# -- held_signals: a signal that another thread receives is held back too ------------------------
class _Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise _Stop(signum)


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX threads")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_held_signals_hold_back_a_signal_another_thread_receives(sig):
    # the OS delivers a process's Ctrl-C to any thread that does not block it (a BLAS worker);
    # Python then runs the handler in the main thread between two bytecodes: a signal mask of
    # the main thread did not hold it back (a chunk of steps was computed but not kept)
    old = signal.signal(sig, _raise_stop)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    lines = []
    try:
        with pytest.raises(_Stop):
            with signals.held_signals():
                signal.pthread_kill(other.ident, sig)
                end = time.monotonic() + 0.3
                while time.monotonic() < end:        # bytecodes, where a handler would run
                    lines.append(len(lines))
                lines.append("end")
        assert signal.getsignal(sig) is _raise_stop  # the handler it met is the one it had
    finally:
        stop.set()
        other.join()
        signal.signal(sig, old)
    assert lines[-1] == "end"


def test_held_signals_keep_ignored_signals_ignored_and_work_off_the_main_thread():
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with signals.held_signals():
            signal.raise_signal(signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, old)
    errors = []

    def worker():
        try:
            with signals.held_signals():         # Python runs no handler here: nothing to hold
                errors.append(None)
        except BaseException as exc:         # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert errors == [None]


def _default_sigint():
    """In the child: Ctrl-C acts as it does for a program started from a terminal.  A test run
    started in the background of a non-interactive shell has SIGINT ignored, the child inherits
    that, and Python then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _spawn_on_a_terminal(args, cwd):
    """Run ``symgen ARGS`` on a pseudo-terminal (so its progress bar shows); returns the process
    and the terminal's reading end."""
    import pty
    master, slave = pty.openpty()
    proc = subprocess.Popen(SYMGEN + [str(a) for a in args], cwd=cwd, stdin=slave, stdout=slave,
                            stderr=slave, close_fds=True, preexec_fn=_default_sigint)
    os.close(slave)
    return proc, master


def _read_until(master, marker: bytes, timeout: float) -> bytes:
    seen, end = b"", time.monotonic() + timeout
    while marker not in seen and time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                seen += os.read(master, 4096)
            except OSError:
                break
    return seen


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and a pseudo-terminal")
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_run_keeps_the_steps_taken(tmp_path, sig, code):
    warm = run("simulate", "stiff_pendulum", "--t-end", "0.2", cwd=tmp_path)   # compiled, cached
    assert warm.returncode == 0, warm.stderr
    # 1e6 steps, far more than the test waits for; the progress bar says the steps have begun
    proc, master = _spawn_on_a_terminal(["simulate", "stiff_pendulum", "--t-end", "1e5",
                                         "--out", "r.npz"], tmp_path)
    try:
        seen = _read_until(master, b"/1000000", timeout=120)
        assert b"/1000000" in seen, seen
        proc.send_signal(sig)
        seen += _read_until(master, b"\x00never", timeout=60)        # until the process closes
        assert proc.wait(timeout=60) == code, seen
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    out = seen.decode("utf-8", "replace")
    assert "stiff_pendulum: interrupted" in out and "Traceback" not in out
    r = load_result(tmp_path / "r.npz")
    assert r.status == "interrupted"
    assert ("SIGTERM" in r.reason) == (sig == signal.SIGTERM)
    steps = r.meta["steps_done"]
    assert 0 < steps < 10 ** 6 and f"after step {steps} of 1000000" in r.reason
    assert r.t[-1] == pytest.approx(0.1 * steps, rel=1e-12)     # the last step taken is the last row
    assert len(r.t) == steps + 1
    assert abs(r.meta["run_stats"]["states"] - (steps + 1)) <= 1    # a signal between two updates
    assert max(r.pos_err) < 1e-12
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# -- every K-th step, maxima over all -------------------------------------------------------------
def test_every_keeps_every_kth_row_and_the_exact_maxima(pend):
    kw = dict(scheme="fox-goodwin", dt=0.1, t_end=10.05, params={"T0": 9.0},
              preset="paper")          # the paper's step: a finite h_max at every step
    with pytest.warns(RuntimeWarning, match="not an integer"):
        full = symgen.simulate(pend, **kw)                          # 101 steps
    with pytest.warns(RuntimeWarning, match="not an integer"):
        some = symgen.simulate(pend, every=7, **kw)
    assert full.n_steps == 101 and some.meta["every"] == 7
    rows = list(range(0, 101, 7)) + [101]
    assert len(some.t) == len(rows)
    for a in ("t", "x", "xd", "xdd", "lam", "pos_err", "vel_err", "acc_err", "omega_max",
              "h_max", "newton_iters", "energy", "outputs"):
        np.testing.assert_array_equal(getattr(some, a), getattr(full, a)[rows])
    stats = run_stats(some)
    # the maxima over every step, computed from the full run's rows
    assert stats == run_stats(Result(**{a: getattr(full, a) for a in (
        "t", "x", "xd", "xdd", "lam", "coords", "pos_err", "vel_err", "acc_err", "omega_max",
        "h_max", "newton_iters", "status")}, meta={"h": 0.1}))
    assert stats["max_vel_err"] == max(full.vel_err)
    assert stats["newton_iters_total"] == full.newton_iters.sum()
    assert stats["h_max_min"] == min(full.h_max)
    # the summary states the maxima over all steps, not over the rows kept
    from symgen.cli import summary_lines
    a, b = summary_lines(some, "p", 1.0), summary_lines(full, "p", 1.0)
    assert a[3:7] == b[3:7] and a[8] == b[8] and "smallest h_max" in a[8]


def test_a_run_that_would_not_fit_in_memory_is_refused_naming_every(pend, monkeypatch):
    import re
    per = 8 * (3 * 3 + 2 + 1 + 11)                 # bytes per recorded row of the stiff pendulum
    monkeypatch.setenv("SYMGEN_MEMORY_LIMIT", str(40 * per))
    with pytest.raises(ValueError, match=r"every=\d+") as info:
        symgen.simulate(pend, dt=0.1, t_end=30.0)                # 301 rows > 40
    k = int(re.search(r"every=(\d+)", str(info.value)).group(1))
    r = symgen.simulate(pend, dt=0.1, t_end=30.0, every=k)
    assert r.ok and len(r.t) <= 40
    with pytest.raises(ValueError, match="every="):
        symgen.simulate(pend, dt=0.1, t_end=30.0, every=k - 1)
    monkeypatch.delenv("SYMGEN_MEMORY_LIMIT")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="GB"):                  # 1e9 steps: ~180 GB
        symgen.simulate(pend, dt=1e-6, t_end=1e3)
    assert time.perf_counter() - t0 < 30                         # refused, not started


# -- what the CLI prints ----------------------------------------------------------------------------
def test_quiet_prints_nothing_on_success(tmp_path):
    assert run("simulate", "stiff_pendulum", "--t-end", "0.2", cwd=tmp_path).returncode == 0
    # --t-end 0.25 makes a note (not an integer number of steps); --quiet drops it too
    proc = run("simulate", "stiff_pendulum", "--t-end", "0.25", "--quiet", "--out", "r.npz",
               cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert load_result(tmp_path / "r.npz").ok
    # a failed run still says so, in one line on stderr
    proc = run("simulate", "stiff_pendulum", "--method", "index3", "--scheme", "fox-goodwin",
               "--t-end", "60", "--quiet", cwd=tmp_path)
    assert proc.returncode == 3 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "stiff_pendulum: " in proc.stderr


CHAIN = ("import symgen\n"
         "def model(n=1, angle=0.0):\n"
         "    xs, _ = symgen.coordinates([f'x{i}' for i in range(n)])\n"
         "    import sympy as sp\n"
         "    return symgen.Model('chain', xs, M=sp.eye(n), f=[-x for x in xs],\n"
         "        x0=[angle] * n, settings=dict(method='newmark', scheme='trapezoidal',\n"
         "        dt=0.1, t_end=0.5))\n")


def test_model_options_given_by_param_are_recorded_in_meta(tmp_path, capsys):
    (tmp_path / "chain.py").write_text(CHAIN)
    proc = call(capsys, "simulate", tmp_path / "chain.py", "--param", "n=2", "--param",
                "angle=0.3", "--out", tmp_path / "c.npz", "--backend", "lambdify")
    assert proc.returncode == 0, proc.stderr
    r = load_result(tmp_path / "c.npz")
    assert r.meta["model_options"] == {"n": 2, "angle": 0.3}
    assert r.x.shape == (6, 2) and r.x[0, 0] == 0.3


def test_the_first_run_says_it_is_compiling(tmp_path):
    (tmp_path / "osc.py").write_text(
        "import symgen\n"
        "def model():\n"
        "    (x,), _ = symgen.coordinates('x')\n"
        "    return symgen.Model('osc_note', [x], M=[[1]], f=[-x], x0=[1.0],\n"
        "        settings=dict(method='newmark', dt=0.1, t_end=0.3))\n")
    env = {"SYMGEN_CACHE_DIR": str(tmp_path / "cache")}
    # the first runs (each a compile, in its own cache) at the same time: noted; --quiet with a
    # compile longer than the note's delay (0 s here): one note; -qq: nothing
    first, quiet, qq = _run_together([
        ("simulate", tmp_path / "osc.py", env),
        ("simulate", tmp_path / "osc.py", "--quiet",
         {"SYMGEN_CACHE_DIR": str(tmp_path / "cache2"), "SYMGEN_QUIET_NOTE_DELAY": "1e-9"}),
        ("simulate", tmp_path / "osc.py", "-qq", {"SYMGEN_CACHE_DIR": str(tmp_path / "cache3")})])
    assert first.returncode == 0, first.stderr
    assert "note: compiling osc_note kernels (first run; cached afterwards)…" in first.stderr
    again = run("simulate", tmp_path / "osc.py", env=env)
    assert again.returncode == 0 and again.stderr == ""           # a cache hit is silent
    assert (quiet.returncode, quiet.stdout) == (0, "")
    assert len(quiet.stderr.splitlines()) == 1 and quiet.stderr.startswith("note: ")
    assert (qq.returncode, qq.stdout, qq.stderr) == (0, "", "")


def _run_together(calls):
    """``run(*args, env=env)`` of every (*args, env) of ``calls``, started together; their
    CompletedProcesses in that order."""
    procs = [(args, subprocess.Popen(SYMGEN + [str(a) for a in args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **env)))
             for *args, env in calls]
    done = []
    for args, proc in procs:
        try:
            out, err = proc.communicate(timeout=300)
        finally:
            proc.kill()
        done.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
    return done


# -- zip bombs: what a member inflates to is bounded by what the zip directory declares -----------
def _declare_size(path, member, size):
    """Patch the uncompressed size the zip declares for ``member`` (local header and central
    directory) to ``size``: a member whose data inflates to more than its directory says."""
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo(member).header_offset
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, offset + 22, size)
    i = data.find(b"PK\x01\x02")
    while data[i + 46:i + 46 + len(member)] != member.encode():
        i = data.find(b"PK\x01\x02", i + 4)
    struct.pack_into("<I", data, i + 24, size)
    path.write_bytes(bytes(data))


BOMB_MB = 512                                        # what the bomb member inflates to


def _bomb(res, tmp_path, kind):
    """A result .npz whose member 't' is ~0.5 MB of deflated zeros that inflate to BOMB_MB MB.
    "header-honest": a .npy 2.0 header whose length field says 4 GiB (numpy reads the header's
    bytes in one read, and zipfile inflates all it is asked for before it checks anything);
    "header": the same with the zip directory's size a lie of 1 MiB (zipfile inflates the whole
    member before it cuts it to the declared size); "data": an honest header of the 31 rows and the zip
    directory declaring just those, the stream going on for BOMB_MB MB; "declared": the zip
    directory honest about BOMB_MB MB (refused by the memory budget)."""
    members = _members_of(res.save(tmp_path / "r.npz"))
    zeros = bytes(1 << 20)
    path = tmp_path / f"bomb-{kind}.npz"
    if kind.startswith("header"):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, (shape, dtype, chunks) in members.items():
                with zf.open(name + ".npy", "w") as fh:
                    if name == "t":
                        fh.write(np.lib.format.MAGIC_PREFIX + b"\x02\x00" + b"\xff\xff\xff\xff")
                        for _ in range(BOMB_MB):
                            fh.write(zeros)
                    else:
                        np.lib.format.write_array(fh, np.zeros(shape, dtype) if dtype.kind != "U"
                                                  else np.frombuffer(chunks[0], dtype).reshape(shape))
        if kind == "header":
            _declare_size(path, "t.npy", 1 << 20)
    else:
        t_shape, t_dtype, t_chunks = members["t"]
        members["t"] = (t_shape, t_dtype, t_chunks + [zeros] * BOMB_MB)
        _write_npz(path, members)
        if kind == "data":
            with zipfile.ZipFile(path) as zf:
                _declare_size(path, "t.npy", zf.getinfo("t.npy").file_size - BOMB_MB * len(zeros))
    assert path.stat().st_size < 1 << 20             # < 1 MB on disk
    return path


@pytest.mark.parametrize("kind, message", [
    ("header-honest", r"member 't' has a \.npy header of 4294967295 bytes"),
    ("header", r"member 't' has a \.npy header of 4294967295 bytes"),
    ("data", r"member 't' inflates to more than the \d+ bytes its zip directory declares"),
    ("declared", r"would take 5\d\d\.?\d* MB in memory, more than the 256 MB"),
])
def test_a_zip_bomb_is_refused_before_it_is_inflated(res, tmp_path, kind, message):
    """Issue 38 (14): a 1 MB zip bomb took 1.05 GB before it was refused.  The load runs in a
    child process whose peak resident memory (VmHWM) is measured: it must stay far below what
    the bomb inflates to (BOMB_MB MB)."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("the peak is read from /proc/self/status (VmHWM, Linux)")
    path = _bomb(res, tmp_path, kind)
    code = ("import resource, sys\n"
            "from symgen.result import load_result\n"
            "try:\n"
            f"    load_result({str(path)!r})\n"
            "    print('loaded')\n"
            "except ValueError as exc:\n"
            "    print(exc)\n"
            # VmHWM: this process's own peak (ru_maxrss keeps the peak of the process that
            # forked it across exec: an xdist worker's hundreds of MB)
            "print(int(next(ln.split()[1] for ln in open('/proc/self/status')\n"
            "                if ln.startswith('VmHWM:'))) // 1024)\n")
    budget = 4 * 10 ** 9 if kind == "header-honest" else 256 * 10 ** 6    # above, below the bomb
    env = dict(os.environ, SYMGEN_MEMORY_LIMIT=str(budget))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout.splitlines()
    line, peak_mb = out[0], int(out[-1])
    assert len(out) == 2 and line.startswith(str(path) + ":"), out
    assert re.search(message, line), line
    assert peak_mb < BOMB_MB // 3, f"peak {peak_mb} MB for a bomb of {BOMB_MB} MB: {line}"


@pytest.mark.parametrize("member, value, message", [
    ("status", "done", r"status 'done' is not one of"),
    ("meta", "{not json", r"member 'meta' is not a JSON object: not JSON"),
])
def test_the_text_of_a_result_is_checked_before_its_arrays_are_read(res, tmp_path, member,
                                                                   value, message):
    """A file whose arrays fit the budget but whose status or meta is wrong is refused before
    the arrays (here 1 Mi rows, ~150 MB) are inflated."""
    from symgen.result import _PER_STEP
    members = _members_of(res.save(tmp_path / "r.npz"))
    rows, zeros = 1 << 20, bytes(1 << 20)
    for name, (shape, dtype, _) in list(members.items()):
        if name in _PER_STEP:
            size = rows * int(np.prod(shape[1:])) * np.dtype(dtype).itemsize
            members[name] = ((rows,) + shape[1:], dtype,
                             [zeros] * (size >> 20) + [bytes(size & ((1 << 20) - 1))])
    text = np.array(value)
    members[member] = (text.shape, text.dtype, [text.tobytes()])
    path = tmp_path / "bad.npz"
    _write_npz(path, members)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"bad\.npz: {message}"):
            load_result(path, max_bytes=1 << 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
