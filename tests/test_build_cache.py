"""The build cache: reuse without compiler or cse, corrupt entries rebuilt, compiler errors reported
with the compiler's output (concurrent builds and planted faults: tests/test_faults_cache.py)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import symgen
from symgen.jit import BuildError

TESTS = Path(__file__).resolve().parent

CHILD = r"""
import json, sys
sys.path.insert(0, {tests!r})
import sympy
import symgen
import symgen.jit as b, symgen.derived as d
count = 0
orig = b._compile
def counting(*a, **k):
    global count
    count += 1
    return orig(*a, **k)
b._compile = counting
if {forbid_sympy!r}:
    def boom(*a, **k):
        raise RuntimeError("sympy work was done on a cached build")
    sympy.cse = boom
    d.derive = boom
    import symgen.codegen.render as c
    c.derive = boom
import os, time, pipeline_models
model = pipeline_models.pendulum().replace(name={name!r})
model.hash
go = {go!r}
while go and not os.path.exists(go):          # start together (barrier)
    time.sleep(0.005)
k = symgen.build(model, runtime=False)
M, f, K, C = k.dynamics(0.0, [0.1, -1.0, 0.1], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0])
print(json.dumps({{"compiles": count, "f": f.tolist(), "path": str(k.path)}}))
"""


def _build(model, **kw):
    """symgen.build of the kernels alone: the cache keeps and checks a module with the steppers'
    runtime (build's default) by the same code (jit.build), and the kernels alone compile in a
    quarter of the time."""
    return symgen.build(model, runtime=False, **kw)


def _child(cache, name, forbid_sympy=False, extra_env=None, go=""):
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(cache), **(extra_env or {}))
    script = CHILD.format(tests=str(TESTS), forbid_sympy=forbid_sympy, name=name, go=str(go))
    return subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_second_build_in_fresh_process_runs_neither_compiler_nor_sympy(tmp_path):
    first = _result(_child(tmp_path, "cache_reuse"))
    assert first["compiles"] == 1
    second = _result(_child(tmp_path, "cache_reuse", forbid_sympy=True,
                            extra_env={"SYMGEN_NO_COMPILE": "1"}))
    assert second["compiles"] == 0
    assert second["f"] == first["f"]
    assert second["path"] == first["path"]


def test_truncated_module_is_detected_and_rebuilt(tmp_path):
    first = _result(_child(tmp_path, "cache_corrupt"))
    path = Path(first["path"])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])            # a partial write
    again = _result(_child(tmp_path, "cache_corrupt"))
    assert again["compiles"] == 1
    assert again["f"] == first["f"]
    assert path.stat().st_size == len(data)


def test_compiler_failure_carries_compiler_output(tmp_path, monkeypatch):
    import sympy as sp

    from pipeline_models import pendulum

    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    model = pendulum().replace(name="cache_badflags")
    with pytest.raises(BuildError) as info:
        _build(model, cflags=("-O2", "-fthis-flag-does-not-exist"))
    msg = str(info.value)
    assert "compiler output" in msg
    # the compiler's own diagnostic, not just the echoed command line
    assert "unrecognized command-line option" in msg or "unknown argument" in msg, msg[-2000:]
    # a failed build leaves nothing that a later build would load
    k = _build(model)
    assert k.dynamics(0.0, [0, -1, 0], [0, 0, 0], [0, 0, 0], [0, 0])[1][1] == pytest.approx(-9.8)
    del sp


def test_cwd_and_sys_path_untouched(tmp_path, monkeypatch):
    from pipeline_models import four_bar

    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    cwd, path = os.getcwd(), list(sys.path)
    _build(four_bar().replace(name="cache_cwd"))
    assert os.getcwd() == cwd
    assert sys.path == path


def test_cache_dir_override(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "here"))
    assert symgen.build.__module__ == "symgen.jit"
    from symgen.jit import cache_dir
    assert cache_dir() == tmp_path / "here"
    monkeypatch.delenv("SYMGEN_CACHE_DIR")
    assert "symgen" in str(cache_dir())


def test_compiler_environment_flags_are_part_of_the_key(tmp_path, monkeypatch):
    """CFLAGS and friends reach the compiler, so a module built without them is not reused."""
    from pipeline_models import pendulum
    from symgen.jit import _flags_identity

    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CFLAGS", raising=False)
    model = pendulum().replace(name="cache_envflags")
    first = _build(model)
    plain = _flags_identity()
    monkeypatch.setenv("CFLAGS", "-fno-such-flag-xyz")
    assert _flags_identity() != plain
    with pytest.raises(BuildError, match="fno-such-flag-xyz"):
        _build(model)                         # not the cached module: a new compile
    monkeypatch.delenv("CFLAGS")
    assert _build(model).path == first.path


def test_lock_is_released_after_a_build(tmp_path, monkeypatch):
    from filelock import FileLock

    from pipeline_models import pendulum

    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    k = _build(pendulum().replace(name="cache_lock"))
    lock = FileLock(str(k.path.parent) + ".lock", timeout=0)
    lock.acquire()                                  # would raise Timeout if still held
    lock.release()


def _no_compiler_message(exc_info, exe):
    msg = str(exc_info.value)
    assert "no C compiler found" in msg and repr(exe) in msg, msg
    # how to go on: a compiler, or the kernels that need none
    assert "LambdifyKernels(model)" in msg and "--backend lambdify" in msg, msg
    assert "\n" not in msg


def test_no_compiler_says_how_to_go_on(tmp_path, monkeypatch):
    """CC naming no program: build() and simulate(model) raise a BuildError that names the
    missing compiler and the way on without one (the LambdifyKernels fallback that simulate used
    to have could never trigger); the kernels it points to work without a compiler."""
    from pipeline_models import pendulum

    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "/nonexistent/cc -pthread")
    model = pendulum().replace(name="cache_nocc")
    with pytest.raises(BuildError) as info:
        _build(model)
    _no_compiler_message(info, "/nonexistent/cc")
    with pytest.raises(BuildError) as info:
        symgen.simulate(model, method="nullspace", dt=0.01, t_end=0.05)
    _no_compiler_message(info, "/nonexistent/cc")
    res = symgen.simulate(symgen.LambdifyKernels(model), method="nullspace", dt=0.01, t_end=0.05)
    assert res.ok and len(res.t) == 6


def test_no_compiler_on_path(tmp_path, monkeypatch):
    """CC unset and Python's configured compiler not on PATH: the same message."""
    import shlex
    import sysconfig

    from pipeline_models import pendulum

    exe = shlex.split(sysconfig.get_config_var("CC") or "cc")[0]
    if os.path.isabs(exe):
        pytest.skip(f"Python's configured compiler is an absolute path ({exe})")
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BuildError) as info:
        _build(pendulum().replace(name="cache_nopath"))
    _no_compiler_message(info, exe)
