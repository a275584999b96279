"""Fault injection, cache part (issue 8 §3-§5): a cache nobody else can poison.

Each test plants what an attacker or an accident could leave in the cache (a foreign or
world-writable folder, a symbolic link, a ``../`` name, an edited source entry, a module that
passes its manifest but does not load, a killed build) and checks that ``build()`` neither uses
nor follows it and still returns kernels whose numbers match ``sympy.lambdify``.
"""
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import symgen
import symgen.jit
from symgen import Model, ModelError, coordinates

B = sys.modules["symgen.jit"]
TESTS = Path(__file__).resolve().parent

# -- helpers ---------------------------------------------------------------------------------------
CHILD = r"""
import json, sys
sys.path.insert(0, {tests!r})
import symgen, symgen.jit, pipeline_models
b = sys.modules["symgen.jit"]
count = 0
orig = b._compile
def counting(*a, **k):
    global count
    count += 1
    return orig(*a, **k)
b._compile = counting
model = pipeline_models.{model}().replace(name={name!r})
go = {go!r}
import os, time
while go and not os.path.exists(go):          # start together (barrier)
    time.sleep(0.005)
k = symgen.build(model, runtime=False)
x, xd = {x!r}, {xd!r}
M, f, K, C = k.dynamics(0.3, x, xd, [0.0] * len(x), [0.0] * k.m)
print(json.dumps({{"compiles": count, "M": M.tolist(), "f": f.tolist(), "path": str(k.path)}}))
"""

X_PEND, XD_PEND = [0.4, -0.9, 0.41], [0.3, 0.1, -0.2]


def _build(model, **kw):
    """symgen.build of the kernels alone: the cache keeps and checks a module with the steppers'
    runtime (build's default) by the same code (jit.build), and the kernels alone compile in a
    quarter of the time (1.3 s against 5.2 s for the pendulum)."""
    return symgen.build(model, runtime=False, **kw)


def _child(cache, name, model="pendulum", go="", x=X_PEND, xd=XD_PEND):
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(cache))
    script = CHILD.format(tests=str(TESTS), model=model, name=name, go=str(go), x=x, xd=xd)
    return subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _reference_pendulum(name="pendulum"):
    """M and f of the pendulum through sympy.lambdify (independent of the C)."""
    from pipeline_models import pendulum

    from symgen.kernels import LambdifyKernels

    k = LambdifyKernels(pendulum().replace(name=name))
    M, f, _, _ = k.dynamics(0.3, X_PEND, XD_PEND, [0.0] * 3, [0.0] * 2)
    return M.copy(), f.copy()


def _assert_pendulum(res):
    M, f = _reference_pendulum()
    np.testing.assert_allclose(res["M"], M, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(res["f"], f, rtol=1e-14, atol=1e-14)


def _osc(k_value=1.0, name="osc"):
    """f = −k x: the model of the issue's poisoning report."""
    (x,), _ = coordinates("x")
    k = sp.Symbol("k")
    return Model(name, [x], [[1]], [-k * x], params={k: k_value})


def _osc_f(model, xval):
    """f(x) of a model through sympy.lambdify of its own expressions."""
    fn = sp.lambdify([list(model.coords), list(model.params)], list(model.f), modules="numpy")
    return np.array(fn([xval], list(model.param_values)), dtype=float)


def _kernel_f(kernels, xval):
    return kernels.dynamics(0.0, [xval], [0.0], [0.0], [])[1].copy()


def _tree(root: Path):
    """Every path below root (links not followed)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        out += [Path(dirpath) / d for d in dirnames] + [Path(dirpath) / f for f in filenames]
    return out


def _entry_dir(k) -> Path:
    return Path(k.path).parent


# -- §3: Model is read-only ------------------------------------------------------------------------
def test_mutating_a_model_after_its_hash_cannot_poison_the_cache(tmp_path, monkeypatch):
    """The issue's report: f = −x changed to −4x after the hash was read, built, and every fresh
    f = −x model then evaluated f(1) = −4."""
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    m = _osc(name="osc_poison")
    m.hash
    x = m.coords[0]
    try:
        m.f = sp.ImmutableMatrix([-4 * m.param("k") * x])     # the attack; must be refused
    except AttributeError:
        pass
    _build(m)
    fresh = _osc(name="osc_poison")
    np.testing.assert_allclose(_kernel_f(_build(fresh), 1.0), _osc_f(fresh, 1.0))
    assert _osc_f(fresh, 1.0)[0] == -1.0


def test_model_attributes_and_arrays_are_read_only():
    m = _osc(name="osc_ro")
    for attr, value in (("f", sp.ImmutableMatrix([0])), ("name", "other"), ("x0", np.ones(1)),
                        ("_hash", "0" * 64), ("brand_new", 1)):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(m, attr, value)
    with pytest.raises(AttributeError, match="immutable"):
        del m.f
    for arr in (m.x0, m.xd0, m.param_values):
        with pytest.raises(ValueError):
            arr[0] = 5.0                                   # in-place numpy write
        with pytest.raises(ValueError):
            arr.setflags(write=True)
    for mapping in (m.params, m.outputs, m.settings):
        with pytest.raises(TypeError):
            mapping[sp.Symbol("k")] = 2.0
    assert isinstance(m.M, sp.ImmutableMatrix) and isinstance(m.f, sp.ImmutableMatrix)
    changed = m.replace(x0=[2.0], params={"k": 3.0})
    assert changed.x0[0] == 2.0 and changed.param_values[0] == 3.0
    assert m.x0[0] == 0.0 and m.param_values[0] == 1.0 and changed.hash != m.hash


# -- §3: an edited source entry --------------------------------------------------------------------
def test_edited_source_entry_is_detected_and_regenerated(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    model = _osc(name="osc_edit")
    _build(model)
    (entry,) = (tmp_path / "src").glob("*.json")
    text = entry.read_text()
    assert text.count("f[0] = -p[0]*x[0];") >= 1
    entry.write_text(text.replace("f[0] = -p[0]*x[0];", "f[0] = -4*p[0]*x[0];"))
    fresh = _osc(name="osc_edit")
    with caplog.at_level("WARNING", logger="symgen.jit"):
        k = _build(fresh)
    np.testing.assert_allclose(_kernel_f(k, 1.0), _osc_f(fresh, 1.0))
    assert "SHA-256" in caplog.text
    assert "-4*p[0]" not in entry.read_text()              # overwritten with the right text


# -- §3: trust of the cache folder -----------------------------------------------------------------
def _assert_cache_disabled(cache, model_name):
    model = _osc(name=model_name)
    before = sorted(map(str, _tree(cache)))
    with pytest.warns(B.UntrustedCacheWarning, match=str(cache)):
        k = _build(model, cache=cache)
    np.testing.assert_allclose(_kernel_f(k, 0.7), _osc_f(model, 0.7))
    assert cache not in Path(k.path).parents
    assert sorted(map(str, _tree(cache))) == before       # nothing written into it


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_foreign_owned_cache_is_not_used(tmp_path):
    cache = tmp_path / "foreign"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    _assert_cache_disabled(cache, "osc_foreign")


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_foreign_owned_subfolder_is_not_used(tmp_path):
    cache = tmp_path / "foreign_sub"
    (cache / "lib").mkdir(parents=True, mode=0o700)
    os.chmod(cache, 0o700)
    os.chown(cache / "lib", 65534, 65534)
    _assert_cache_disabled(cache, "osc_foreign_sub")


def test_world_writable_cache_is_not_used_and_warned_once(tmp_path):
    cache = tmp_path / "open"
    cache.mkdir()
    os.chmod(cache, 0o777)
    _assert_cache_disabled(cache, "osc_open")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", B.UntrustedCacheWarning)   # one warning per process
        _build(_osc(name="osc_open"), cache=cache)


def test_cache_is_private_under_umask_000(tmp_path):
    cache = tmp_path / "umask"
    old = os.umask(0)
    try:
        k = _build(_osc(name="osc_umask"), cache=cache)
    finally:
        os.umask(old)
    paths = _tree(cache) + [cache]
    assert any(p.suffix == ".so" for p in paths)
    for p in paths:
        st = os.lstat(p)
        assert not stat.S_ISLNK(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            assert stat.S_IMODE(st.st_mode) == 0o700, p
        else:
            assert st.st_mode & 0o022 == 0, (p, oct(st.st_mode))
    assert stat.S_IMODE(os.stat(k.path).st_mode) & 0o077 == 0


# -- §3: links and names planted in the cache ------------------------------------------------------
@pytest.mark.parametrize("what", ["folder", "module", "manifest"])
def test_planted_symlink_is_not_followed(tmp_path, what):
    """A link to a (valid-looking) copy elsewhere: the cache entry is rebuilt, the link target is
    neither loaded nor written."""
    cache = tmp_path / "cache"
    name = f"pend_link_{what}"
    first = _result(_child(cache, name))
    entry = Path(first["path"]).parent
    elsewhere = tmp_path / "elsewhere"
    import shutil
    shutil.copytree(entry, elsewhere)
    if what == "folder":
        shutil.rmtree(entry)
        entry.symlink_to(elsewhere, target_is_directory=True)
    else:
        target = Path(first["path"]) if what == "module" else entry / "manifest.json"
        target.unlink()
        target.symlink_to(elsewhere / target.name)
    snapshot = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    again = _result(_child(cache, name))
    assert again["compiles"] == 1                 # not loaded through the link
    assert not any(p.is_symlink() for p in _tree(cache))
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == snapshot
    _assert_pendulum(again)


def test_write_through_planted_symlink_is_refused(tmp_path):
    """An incomplete entry (no manifest) with a generated file name linked to a victim file: the
    rebuild must not write through the link."""
    cache = tmp_path / "cache"
    first = _result(_child(cache, "pend_victim"))
    entry = Path(first["path"]).parent
    (entry / "manifest.json").unlink()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (entry / "pend_victim.c").unlink()
    (entry / "pend_victim.c").symlink_to(victim)
    again = _result(_child(cache, "pend_victim"))
    assert again["compiles"] == 1
    assert victim.read_text() == "precious"
    _assert_pendulum(again)


def test_dotdot_file_name_in_cached_json_is_not_used_as_a_path(tmp_path, monkeypatch, caplog):
    cache = tmp_path / "a" / "b"
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(cache))
    model = _osc(name="osc_dotdot")
    B.generated_source(model, cache)
    (entry,) = (cache / "src").glob("*.json")
    data = json.loads(entry.read_text())
    files = data["source"]["files"] if "source" in data else data["files"]
    files["../../../../../escaped.c"] = "int escaped;\n"
    if "sha256" in data:                                     # a consistent digest: only the name
        data["sha256"] = B._source_digest(data["key"], data["source"])   # is wrong
    entry.write_text(json.dumps(data))
    with caplog.at_level("WARNING", logger="symgen.jit"):
        k = _build(model)
    assert not any(p.name == "escaped.c" for p in _tree(tmp_path))
    assert "file name" in caplog.text
    np.testing.assert_allclose(_kernel_f(k, -0.4), _osc_f(model, -0.4))


# -- §3: a module that passes its manifest but does not load --------------------------------------
def test_module_passing_its_manifest_but_not_loading_is_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    first = _result(_child(cache, "pend_garbage"))
    path = Path(first["path"])
    garbage = b"\x7fELF garbage, not a shared object" * 100
    path.write_bytes(garbage)
    manifest = path.parent / "manifest.json"
    info = json.loads(manifest.read_text())
    import hashlib
    info.update(size=len(garbage), sha256=hashlib.sha256(garbage).hexdigest())
    manifest.write_text(json.dumps(info))
    again = _result(_child(cache, "pend_garbage"))
    assert again["compiles"] == 1
    assert again["path"] == first["path"] and path.read_bytes() != garbage
    _assert_pendulum(again)
    third = _result(_child(cache, "pend_garbage"))       # and the rebuilt entry is reused
    assert third["compiles"] == 0


# -- §3: concurrency -------------------------------------------------------------------------------
def test_four_concurrent_builds_compile_once_and_load_correct_kernels(tmp_path):
    cache = tmp_path / "cache"
    go = tmp_path / "go"
    procs = [_child(cache, "pendulum", go=go) for _ in range(4)]
    time.sleep(2.0)                                     # let all four import symgen and wait
    go.write_text("go")
    results = [_result(p) for p in procs]
    assert sum(r["compiles"] for r in results) == 1
    assert len({r["path"] for r in results}) == 1
    for r in results:
        _assert_pendulum(r)
    assert not [p for p in (cache / "lib").iterdir() if p.name.startswith(".build-")]


# -- §4: interrupted and failed builds -------------------------------------------------------------
def _wait_for_work_folder(proc, libs: Path, timeout=120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if libs.is_dir() and any(p.name.startswith(".build-") for p in libs.iterdir()):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    return False


def test_sigterm_during_a_build_leaves_no_work_folder(tmp_path):
    cache = tmp_path / "cache"
    proc = _child(cache, "four_bar_term", model="four_bar", x=[0.0] * 9, xd=[0.0] * 9)
    try:
        assert _wait_for_work_folder(proc, cache / "lib"), proc.communicate()[1][-2000:]
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM           # terminated as SIGTERM asks
    assert [p.name for p in (cache / "lib").iterdir() if p.is_dir()] == []


def test_work_folder_of_a_killed_build_is_swept_by_the_next(tmp_path):
    cache = tmp_path / "cache"
    proc = _child(cache, "pend_killed")
    try:
        assert _wait_for_work_folder(proc, cache / "lib"), proc.communicate()[1][-2000:]
        proc.kill()                                     # SIGKILL: nothing can clean up
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    again = _result(_child(cache, "pend_killed"))
    _assert_pendulum(again)
    assert [p.name for p in (cache / "lib").iterdir() if p.name.startswith(".build-")] == []


@pytest.mark.parametrize("runtime", [False, True])
def test_failed_build_leaves_no_folder(tmp_path, runtime):
    """With the runtime the compile that fails is the runtime library's (the same flags): it
    too reports the compiler's output and publishes nothing."""
    cache = tmp_path / "cache"
    with pytest.raises(symgen.BuildError, match="(?s)compiler output.*fno-such-flag-at-all"):
        symgen.build(_osc(name="osc_fail"), cflags=("-fno-such-flag-at-all",), cache=cache,
                     runtime=runtime)
    assert [p for p in _tree(cache) if p.is_dir()] == [cache / "src", cache / "lib"]


@pytest.mark.slow
# -- §3: the runtime library (compiled once per cache, linked into every module) ------------------
@pytest.mark.parametrize("garbage, failure", [
    (b"!<arch>\n" + b"not an object file " * 50, "does not load"),
    (b"\x7fELF garbage, not an archive " * 50, "does not link")])
def test_runtime_library_passing_its_manifest_but_unusable_is_rebuilt(tmp_path, monkeypatch,
                                                                      caplog, garbage, failure):
    """A runtime library replaced together with its manifest: an empty archive links (a shared
    module may leave symbols undefined) and the module then does not load; anything else does
    not link.  Either way the library is rebuilt once and the module works."""
    import hashlib

    from pipeline_models import pendulum

    cache = tmp_path / "cache"
    symgen.build(pendulum().replace(name="pend_rt_first"), cache=cache)
    (library,) = (cache / "lib").glob("*/libsymgen_runtime.a")
    library.write_bytes(garbage)
    manifest = library.parent / "manifest.json"
    info = json.loads(manifest.read_text())
    info.update(size=len(garbage), sha256=hashlib.sha256(garbage).hexdigest())
    manifest.write_text(json.dumps(info))
    compiles, compile_child = [], B._run_child

    def counting(script, spec, workdir, what):
        compiles.append("runtime" if script == B._ARCHIVE_SCRIPT else "module")
        return compile_child(script, spec, workdir, what)
    monkeypatch.setattr(B, "_run_child", counting)
    with caplog.at_level("WARNING", logger="symgen.jit"):
        k = symgen.build(pendulum().replace(name="pend_rt_second"), cache=cache)
    assert failure in caplog.text
    assert compiles.count("runtime") == 1 and library.read_bytes() != garbage
    assert k.lib.sg_module_model().n == 3
    M, f = _reference_pendulum()
    got = k.dynamics(0.3, X_PEND, XD_PEND, [0.0] * 3, [0.0] * 2)
    np.testing.assert_allclose(got[1], f, rtol=1e-14, atol=1e-14)
    run = symgen.simulate(k, dt=0.01, t_end=0.2, stepper="compiled")
    ref = symgen.simulate(k, dt=0.01, t_end=0.2, stepper="python")
    assert run.ok and run.meta["stepper"] == "compiled"
    np.testing.assert_allclose(run.x, ref.x, rtol=1e-10, atol=1e-12)


# -- §5: names, constants, masses ------------------------------------------------------------------
@pytest.mark.parametrize("field", ["model", "coordinate", "parameter", "output"])
@pytest.mark.parametrize("bad", ["a\n", "a\r\n"])
def test_names_with_white_space_or_control_characters_are_refused(field, bad):
    (x,), _ = coordinates("x")
    k = sp.Symbol("k")
    args = dict(name="osc", coords=[x], M=[[1]], f=[-k * x], params={k: 1.0})
    if field == "model":
        args["name"] = bad
    elif field == "coordinate":
        y = sp.Symbol(bad)
        args.update(coords=[y], f=[-k * y])
    elif field == "parameter":
        args["params"] = {k: 1.0, sp.Symbol(bad): 2.0}
    else:
        args["outputs"] = {bad: x}
    with pytest.raises(ModelError, match=f"{field} name {bad!r}".replace("\\", "\\\\")):
        Model(**args)


def test_planar_body_name_with_newline_is_refused():
    from symgen.mechanics import PlanarSystem

    sys_ = PlanarSystem("nl")
    with pytest.raises(ModelError, match=r"body name 'bob\\n'"):
        sys_.body("bob\n", mass=1, inertia=0)


def test_long_model_name_is_a_model_error_and_the_longest_allowed_builds(tmp_path):
    with pytest.raises(ModelError, match="65 characters long; at most 64"):
        _osc(name="m" * 65)
    with pytest.raises(ModelError, match="characters long"):
        _osc(name="m" * 300)
    longest = _osc(name="m" * 64)
    k = _build(longest, cache=tmp_path)
    np.testing.assert_allclose(_kernel_f(k, 0.5), _osc_f(longest, 0.5))


@pytest.mark.parametrize("const", [sp.Integer(10) ** 400, -sp.Integer(10) ** 400,
                                   sp.Rational(10 ** 400 + 1, 10 ** 400), sp.Float("1e400"),
                                   sp.Float("1e-400")])
def test_constant_that_is_not_a_finite_double_is_a_model_error(const):
    (x,), _ = coordinates("x")
    with pytest.raises(ModelError, match=r"f\[0\] contains the constant"):
        Model("big", [x], [[1]], [const * x])


def test_large_but_finite_constant_is_kept():
    (x,), _ = coordinates("x")
    Model("big_ok", [x], [[1]], [sp.Integer(10) ** 300 * x])


def test_negative_mass_is_a_model_error():
    (x, y), _ = coordinates("x y")
    m = sp.Symbol("m")
    with pytest.raises(ModelError, match=r"M\[1,1\] .*coordinate y.* is -2"):
        Model("neg", [x, y], sp.diag(1, -2), [0, 0])
    with pytest.raises(ModelError, match=r"M\[0,0\] = m .* is -1"):
        Model("neg", [x, y], sp.diag(m, m), [0, 0], params={m: -1.0})
    with pytest.raises(ModelError, match=r"M\[0,0\]"):                   # negative at x0 only
        Model("neg", [x, y], sp.diag(sp.cos(x), 1), [0, 0], x0=[3.0, 0.0])
    Model("pos", [x, y], sp.diag(m, 0), [0, 0], params={m: 1.0})        # massless is allowed


def test_negative_body_mass_or_inertia_names_the_body():
    from symgen.mechanics import PlanarSystem, SpatialSystem

    for mass, inertia, what in ((-1.0, 0.1, "mass"), (1.0, "-I", "inertia")):
        s = PlanarSystem("negbody")
        s.parameter("I", 0.2)
        s.body("crank", mass=mass, inertia=sp.Symbol("I") if inertia == "-I" else inertia)
        with pytest.raises(ModelError, match=f"body 'crank' has {what}"):
            s.model(params={"I": -0.2} if inertia == "-I" else None)

    s = SpatialSystem("negspatial")
    s.point("O", (0, 0, 0))
    s.point("P", (1, 0, 0))
    s.vector("u", (0, 1, 0))
    s.vector("w", (0, 0, 1))
    s.body("rod", mass=1.0, inertia=(0.1, -0.1, 0.1), com=(0.5, 0, 0), points=["O", "P"],
           vectors=["u", "w"])
    with pytest.raises(ModelError, match="body 'rod' has an inertia tensor with eigenvalue -0.1"):
        s.model(check=False)


def test_zero_constants_are_kept():
    (x,), _ = coordinates("x")
    Model("zeros_ok", [x], [[1]], [sp.Float(0.0) * x + sp.Float(-0.0) + sp.Float(1e-300) * x])


def test_source_entry_symlink_is_not_followed(tmp_path, monkeypatch, caplog):
    """The source entry replaced by a link to a file elsewhere holding other physics (with a
    consistent SHA-256): symgen must not read through the link."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(cache))
    model = _osc(name="osc_srclink")
    B.generated_source(model, cache)
    (entry,) = (cache / "src").glob("*.json")
    data = json.loads(entry.read_text().replace("f[0] = -p[0]*x[0];", "f[0] = -4*p[0]*x[0];"))
    if "sha256" in data:
        data["sha256"] = B._source_digest(data["key"], data["source"])
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps(data))
    entry.unlink()
    entry.symlink_to(planted)
    with caplog.at_level("WARNING", logger="symgen.jit"):
        k = _build(model)
    np.testing.assert_allclose(_kernel_f(k, 1.0), _osc_f(model, 1.0))
    assert not entry.is_symlink() and "-4*p[0]" in planted.read_text()
