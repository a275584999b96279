"""The build cache: reuse without compiler or cse, corrupt entries rebuilt, compiler errors reported
with the compiler's output, the C runtime compiled once per cache and linked into every module
(concurrent builds and planted faults: tests/test_faults_cache.py)."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
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


# -- the C runtime, compiled once per cache (issue 34, item 3) --------------------------------------
RUNTIME_CHILD = r"""
import json, sys
sys.path.insert(0, {tests!r})
import symgen
import symgen.jit as b
import pipeline_models
compiles = []
orig = b._run_child
def counting(script, spec, workdir, what):
    compiles.append("runtime" if script == b._ARCHIVE_SCRIPT else "module")
    return orig(script, spec, workdir, what)
b._run_child = counting
out = {{}}
for name in {models!r}:
    model = getattr(pipeline_models, name)().replace(name="rt_" + name)
    k = symgen.build(model)
    desc = k.lib.sg_module_model()
    x = [0.1 * (i + 1) for i in range(model.n)]
    out[name] = {{"n": desc.n, "m": desc.m, "path": str(k.path),
                 "f": k.dynamics(0.3, x, [0.0] * model.n, [0.0] * model.n, [0.0] * model.m)[1].tolist()}}
print(json.dumps({{"compiles": compiles, "models": out}}))
"""


def _runtime_child(cache, *models):
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(cache))
    script = RUNTIME_CHILD.format(tests=str(TESTS), models=list(models))
    return _result(subprocess.Popen([sys.executable, "-c", script], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))


def _f_reference(name):
    """f of pipeline_models.<name> at the children's state, through sympy.lambdify."""
    import pipeline_models

    model = getattr(pipeline_models, name)()
    k = symgen.LambdifyKernels(model)
    x = [0.1 * (i + 1) for i in range(model.n)]
    return k.dynamics(0.3, x, [0.0] * model.n, [0.0] * model.n, [0.0] * model.m)[1].copy()


def _runtime_libraries(cache):
    return sorted((cache / "lib").glob("*/libsymgen_runtime.a"))


@pytest.mark.slow
def test_two_models_compile_the_runtime_once(tmp_path):
    first = _runtime_child(tmp_path, "pendulum", "four_bar")
    assert first["compiles"] == ["runtime", "module", "module"]
    for name, (n, m) in (("pendulum", (3, 2)), ("four_bar", (9, 8))):
        got = first["models"][name]
        assert (got["n"], got["m"]) == (n, m)               # each module's own descriptor
        np.testing.assert_allclose(got["f"], _f_reference(name), rtol=1e-14, atol=1e-14)
    (library,) = _runtime_libraries(tmp_path)
    # a third model in another process: the runtime library from the cache, the module compiled
    third = _runtime_child(tmp_path, "rheonomic")
    assert third["compiles"] == ["module"]
    np.testing.assert_allclose(third["models"]["rheonomic"]["f"], _f_reference("rheonomic"),
                               rtol=1e-14, atol=1e-14)
    assert _runtime_libraries(tmp_path) == [library]
    # the modules do not export the runtime's functions (a static link of hidden symbols)
    nm = shutil.which("nm")
    if nm and sys.platform.startswith("linux"):
        exported = subprocess.run([nm, "-D", "--defined-only", first["models"]["pendulum"]["path"]],
                                  capture_output=True, text=True, check=True).stdout
        assert "PyInit_" in exported and " sg_" not in exported


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "changed"])
def test_damaged_runtime_library_is_detected_and_rebuilt(tmp_path, damage):
    first = _runtime_child(tmp_path, "pendulum")
    assert first["compiles"] == ["runtime", "module"]
    (library,) = _runtime_libraries(tmp_path)
    data = library.read_bytes()
    if damage == "truncated":
        library.write_bytes(data[: len(data) // 3])             # a partial write
    else:
        middle = len(data) // 2
        library.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:])
    again = _runtime_child(tmp_path, "four_bar")               # a module not yet built
    assert again["compiles"] == ["runtime", "module"]
    np.testing.assert_allclose(again["models"]["four_bar"]["f"], _f_reference("four_bar"),
                               rtol=1e-14, atol=1e-14)
    assert library.stat().st_size == len(data)


def test_runtime_key_follows_its_text_flags_and_environment(monkeypatch):
    """The runtime library's key changes with any runtime file, the flags, the compiler's
    environment (CFLAGS) and the compiler (setuptools' or the FMU's plain command); the module's
    key with the runtime library's key."""
    from symgen.codegen import RUNTIME_FILES, runtime_sources
    from symgen.jit import DEFAULT_CFLAGS, _module_key, _runtime_flags, _runtime_key

    monkeypatch.delenv("CFLAGS", raising=False)
    files = runtime_sources()
    flags = _runtime_flags(DEFAULT_CFLAGS, None)
    assert "-fvisibility=hidden" in flags and flags[-2:] == DEFAULT_CFLAGS
    base = _runtime_key(files, flags, None)
    assert _runtime_key(dict(files), flags, None) == base
    keys = {base}
    for fname in RUNTIME_FILES:                  # each file, the headers and parts included
        keys.add(_runtime_key({**files, fname: files[fname] + "\n/* changed */\n"}, flags, None))
    keys.add(_runtime_key(files, _runtime_flags(("-O3", "-std=c99"), None), None))
    keys.add(_runtime_key(files, flags, "cc"))
    monkeypatch.setenv("CFLAGS", "-ffast-math")
    keys.add(_runtime_key(files, flags, None))
    assert len(keys) == len(RUNTIME_FILES) + 4
    code = ("cdef", "source")
    assert _module_key(code, base, DEFAULT_CFLAGS) != _module_key(code, "0" * 64, DEFAULT_CFLAGS)
    assert _module_key(code, "", DEFAULT_CFLAGS) != _module_key(code, base, DEFAULT_CFLAGS)


TWO_MODELS = r"""
import json, os, sys
sys.path.insert(0, {tests!r})
if {rtld_global!r}:
    sys.setdlopenflags(os.RTLD_NOW | os.RTLD_GLOBAL)
import symgen
import stepper_models
out = []
for model in (stepper_models.stiff_pendulum().replace(name="rt_two_pendulum"),
              stepper_models.four_bar().replace(name="rt_two_four_bar")):
    k = symgen.build(model)
    r = symgen.simulate(k, dt=0.01, t_end=1.0, stepper="compiled")
    out.append({{"n": k.lib.sg_module_model().n, "ok": r.ok, "x": r.x.tolist()}})
print(json.dumps(out))
"""


@pytest.mark.parametrize("rtld", ["local", "global"])
def test_two_models_in_one_process_step_correctly(rtld):
    """Two models' modules loaded in one process (Python's RTLD_LOCAL; and RTLD_GLOBAL, where
    the modules' symbols share one namespace) each step their own model: the compiled stepper's
    run of each equals the Python stepper's."""
    from stepper_models import four_bar, stiff_pendulum

    script = TWO_MODELS.format(tests=str(TESTS), rtld_global=rtld == "global")
    runs = _result(subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True))
    for model, run in zip((stiff_pendulum(), four_bar()), runs):
        ref = symgen.simulate(symgen.LambdifyKernels(model), dt=0.01, t_end=1.0, stepper="python")
        assert run["ok"] and ref.ok and run["n"] == model.n
        np.testing.assert_allclose(run["x"], ref.x, rtol=1e-10, atol=1e-12)


def test_a_changed_start_or_setting_is_not_served_stale_c(tmp_path):
    # x0, xd0 and the recommended settings are printed into the C but are not part of Model.hash:
    # the generated-source entry of a model differing only there must be generated anew
    from pipeline_models import pendulum

    from symgen.jit import generated_source

    a = pendulum()
    b = a.replace(x0=[1.0, 0.0, np.pi / 2])
    c = a.replace(settings={"dt": 0.0125})
    assert a.hash == b.hash == c.hash
    texts = [generated_source(m, tmp_path) for m in (a, b, c, a)]
    start = re.compile(r"pendulum_x0\[3\] = \{ (.*) \};")
    assert start.search(texts[0].source).group(1) == "0.0, -1.0, 0.0"
    assert [float(v) for v in start.search(texts[1].source).group(1).split(",")] == [1.0, 0.0,
                                                                                      np.pi / 2]
    assert "0.0125" in texts[2].files["main.c"] and "0.0125" not in texts[0].files["main.c"]
    assert texts[3].files == texts[0].files
