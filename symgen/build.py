"""Compile generated C through cffi into a content-addressed cache, and load it as :class:`Kernels`.

Cache layout (root: ``$SYMGEN_CACHE_DIR`` or the per-user cache directory)::

    src/<model hash>-<generator fingerprint>.json   generated text, keyed by symbolic content
    lib/<binary key>/<module><EXT_SUFFIX>           the compiled module
    lib/<binary key>/manifest.json                  written last: size and SHA-256 of the module
    lib/<binary key>.lock                           cross-process lock while building

A second build of an unchanged model reads the source entry (no sympy derive or cse) and loads the
module whose manifest matches (no compiler).  The binary key hashes the C text, the flags, the
compiler's identity, Python's ABI tag and cffi's version.  Modules are compiled in a temporary
folder by a child process (cffi changes directory while compiling; the calling process never
does), published with ``os.replace`` and loaded by exact path.  A module that fails its manifest
check or fails to load is rebuilt, never used.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import __version__
from .kernels import KernelsBase
from .model import Model

__all__ = ["build", "Kernels", "BuildError", "cache_dir", "DEFAULT_CFLAGS"]

log = logging.getLogger(__name__)

DEFAULT_CFLAGS = ("-O2", "-std=c99")
_ENV_CACHE = "SYMGEN_CACHE_DIR"
_ENV_NO_COMPILE = "SYMGEN_NO_COMPILE"
_loaded: dict[str, object] = {}
_loaded_lock = threading.Lock()


class BuildError(RuntimeError):
    """Compiling the generated C failed; the message carries the compiler's output."""


def cache_dir() -> Path:
    """The cache root: ``$SYMGEN_CACHE_DIR`` if set, else the per-user cache directory."""
    env = os.environ.get(_ENV_CACHE)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("symgen"))


@lru_cache(maxsize=None)
def _compiler_identity() -> str:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    try:
        out = subprocess.run(cc.split() + ["--version"], capture_output=True, text=True, timeout=30)
        version = out.stdout.splitlines()[0] if out.stdout else out.stderr.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        version = f"unavailable ({exc})"
    return f"{cc} | {version}"


#: Environment variables the compiler driver reads (distutils/setuptools pass them to gcc).
_ENV_FLAGS = ("CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "LDSHARED", "ARCHFLAGS")
#: Limits of one build: the compiler run, and waiting for another process's build of the same key.
COMPILE_TIMEOUT = 1800.0
LOCK_TIMEOUT = 3600.0


def _flags_identity() -> str:
    env = [f"{k}={os.environ.get(k, '')}" for k in _ENV_FLAGS]
    cfg = [f"{k}={sysconfig.get_config_var(k) or ''}" for k in ("CFLAGS", "LDSHARED", "CCSHARED")]
    return "|".join(env + cfg)


def _abi_identity() -> str:
    import cffi

    return "|".join([sys.implementation.cache_tag, sysconfig.get_config_var("EXT_SUFFIX") or "",
                     sys.platform, f"cffi {cffi.__version__}"])


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def generated_source(model: Model, root: Path | None = None):
    """The model's :class:`~symgen.codegen.GeneratedSource`, from the cache when it is there."""
    from .codegen import GeneratedSource, generate, generator_fingerprint

    root = cache_dir() if root is None else root
    entry = root / "src" / f"{model.hash}-{generator_fingerprint()[:16]}.json"
    if entry.is_file():
        try:
            return GeneratedSource.from_dict(json.loads(entry.read_text()))
        except (ValueError, KeyError, TypeError):
            log.warning("discarding unreadable generated-source cache entry %s", entry)
    src = generate(model)
    _atomic_write(entry, json.dumps(src.to_dict()))
    return src


_BUILD_SCRIPT = r"""
import json, sys
import cffi
spec = json.load(open(sys.argv[1]))
ffi = cffi.FFI()
ffi.cdef(spec["cdef"])
ffi.set_source(spec["module"], spec["source"], include_dirs=["."],
               extra_compile_args=spec["cflags"])
print(ffi.compile(tmpdir=".", verbose=True))
"""


def _compile(src, module: str, cflags: tuple, workdir: Path, cdef: str | None = None,
             source: str | None = None) -> Path:
    """Compile ``src`` (or the given cdef/source text) into ``workdir`` in a child process;
    returns the module's path."""
    if os.environ.get(_ENV_NO_COMPILE):
        raise BuildError(f"compiling {module} is needed but {_ENV_NO_COMPILE} is set")
    for fname, text in src.files.items():
        (workdir / fname).write_text(text)
    spec = {"cdef": src.cdef if cdef is None else cdef, "module": module,
            "source": src.source if source is None else source, "cflags": list(cflags)}
    (workdir / "spec.json").write_text(json.dumps(spec))
    try:
        proc = subprocess.run([sys.executable, "-c", _BUILD_SCRIPT, "spec.json"], cwd=workdir,
                              capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise BuildError(f"compiling the generated C of model {src.name!r} did not finish within "
                         f"{COMPILE_TIMEOUT:.0f} s (work folder {workdir})") from exc
    if proc.returncode != 0:
        raise BuildError(
            f"compiling the generated C of model {src.name!r} failed (exit {proc.returncode}).\n"
            f"--- compiler output ---\n{proc.stdout[-20000:]}\n{proc.stderr[-20000:]}"
        )
    built = [p for p in workdir.iterdir() if p.name.startswith(module) and p.suffix in (".so", ".pyd")]
    if not built:
        raise BuildError(f"the compiler reported success but produced no module for {src.name!r}:\n"
                         f"{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}")
    return built[0]


def _load(module: str, path: Path):
    with _loaded_lock:
        key = str(path)
        if key in _loaded:
            return _loaded[key]
        loader = importlib.machinery.ExtensionFileLoader(module, str(path))
        spec = importlib.util.spec_from_file_location(module, str(path), loader=loader)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _loaded[key] = mod
        return mod


def _valid(final: Path, manifest: Path) -> bool:
    try:
        info = json.loads(manifest.read_text())
        return final.stat().st_size == info["size"] and _sha256(final) == info["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _runtime_cdef(src) -> tuple[str, str]:
    """cdef and source of the module that adds the stepper runtime (templates/runtime/) to the
    model's kernels: one translation unit, plus ``sg_module_model()`` returning the descriptor."""
    header = src.files["symgen_runtime.h"]
    begin, end = "/* SG_CDEF_BEGIN */", "/* SG_CDEF_END */"
    cdef_rt = header[header.index(begin) + len(begin):header.index(end)]
    cdef = src.cdef + "\n" + cdef_rt + "\nconst sg_model *sg_module_model(void);\n"
    source = (src.source + "\n" + src.files["symgen_runtime.c"]
              + f"\nconst sg_model *sg_module_model(void) {{ return &{src.name}_model; }}\n")
    return cdef, source


def build(model: Model, *, cflags=DEFAULT_CFLAGS, cache: str | os.PathLike | None = None,
          runtime: bool = True) -> "Kernels":
    """Compile (or load from the cache) the kernels of ``model``.

    With ``runtime`` (the default) the module also holds the steppers' C runtime
    (``templates/runtime/``; the ``sg_*`` functions of :mod:`symgen.steppers.compiled`), compiled
    with the kernels into one translation unit; ``runtime=False`` builds the kernels alone.
    """
    from filelock import FileLock, Timeout

    if not isinstance(model, Model):
        raise TypeError(f"build() takes a symgen.Model, got {type(model).__name__}")
    root = Path(cache) if cache is not None else cache_dir()
    src = generated_source(model, root)
    cflags = tuple(cflags)
    cdef, source = _runtime_cdef(src) if runtime else (src.cdef, src.source)
    key_material = "\n".join([cdef, source, " ".join(cflags), _compiler_identity(),
                              _flags_identity(), _abi_identity(), __version__])
    key = hashlib.sha256(key_material.encode()).hexdigest()
    module = f"_symgen_{model.name}_{key[:16]}"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    libdir = root / "lib" / key
    final = libdir / f"{module}{suffix}"
    manifest = libdir / "manifest.json"

    if str(final) not in _loaded and not _valid(final, manifest):
        libdir.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(libdir) + ".lock", timeout=LOCK_TIMEOUT)
        try:
            held = lock.acquire()                 # released when the `with` below ends
        except Timeout:
            raise BuildError(f"waited {LOCK_TIMEOUT:.0f} s for another process building model "
                             f"{model.name!r} (lock {libdir}.lock); remove the lock if no build "
                             "is running") from None
        with held:
            if not _valid(final, manifest):               # another process may have built it
                if libdir.exists():
                    log.warning("rebuilding corrupt or partial cache entry %s", libdir)
                    manifest.unlink(missing_ok=True)
                libdir.mkdir(parents=True, exist_ok=True)
                work = Path(tempfile.mkdtemp(dir=libdir.parent, prefix=f".build-{key[:8]}-"))
                try:
                    built = _compile(src, module, cflags, work, cdef, source)
                    os.replace(built, final)                      # atomic publish
                    for fname, text in src.files.items():
                        (libdir / fname).write_text(text)
                    _atomic_write(manifest, json.dumps(
                        {"size": final.stat().st_size, "sha256": _sha256(final), "module": module,
                         "model": model.name, "model_hash": model.hash}))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    try:
        mod = _load(module, final)
    except ImportError as exc:
        raise BuildError(f"the compiled module {final} failed to load: {exc}; delete {libdir} "
                         "and build again") from exc
    return Kernels(model, mod.ffi, mod.lib, path=final)


class Kernels(KernelsBase):
    """The compiled kernels of one model (see :mod:`symgen.kernels` for the interface)."""

    def __init__(self, model: Model, ffi, lib, path: Path | None = None):
        super().__init__(model)
        self.ffi, self.lib, self.path = ffi, lib, path
        prefix = model.name
        self._c_dynamics = getattr(lib, f"{prefix}_dynamics")
        self._c_constraints = getattr(lib, f"{prefix}_constraints")
        self._c_energy = getattr(lib, f"{prefix}_energy")
        self._c_outputs = getattr(lib, f"{prefix}_outputs")
        buf = self._out_ptr
        self._dyn_out = tuple(buf(a) for a in (self.M, self.f, self.K, self.C))
        self._con_out = tuple(buf(a) for a in (self.q, self.H, self.q_dot, self.H_dot, self.q_ddot,
                                                 self.H_ddot))
        self._E_ptr = buf(self.E)
        self._y_ptr = buf(self.y)
        self._p_ptr = buf(self.p)
        self._zeros_m = np.zeros(max(self.m, 1))
        self._ptr_cache: dict = {}

    def _out_ptr(self, a: np.ndarray):
        # zero-size arrays still need a valid pointer; the C never touches them
        if a.size == 0:
            return self.ffi.new("double[1]")
        return self.ffi.from_buffer("double[]", a, require_writable=True)

    def _in(self, a, size: int, what: str):
        # A stepper passes the same state buffers on every call: reuse their C pointers (the cache
        # holds the array itself, so identity cannot be recycled), no allocation per call.
        cached = self._ptr_cache.get(what)
        if cached is not None and cached[0] is a:
            return cached[1]
        if type(a) is not np.ndarray or a.dtype != np.float64 or not a.flags.c_contiguous:
            a_c = np.ascontiguousarray(a, dtype=np.float64)
        else:
            a_c = a
        if a_c.size != size:
            raise ValueError(f"{what} has {a_c.size} entries; model {self.name!r} expects {size}")
        ptr = self.ffi.from_buffer("double[]", a_c if size else self._zeros_m)
        if a_c is a:
            self._ptr_cache[what] = (a, ptr)
        return ptr

    def set_params(self, values=None, **kw) -> None:
        super().set_params(values, **kw)          # writes into self.p in place: pointer stays valid

    def dynamics(self, t, x, xd, xdd, lam):
        n = self.n
        self._c_dynamics(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"),
                         self._in(xdd, n, "xdd"), self._in(lam, self.m, "lam"), self._p_ptr,
                         *self._dyn_out)
        return self.M, self.f, self.K, self.C

    def constraints(self, t, x, xd, xdd):
        n = self.n
        self._c_constraints(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"),
                            self._in(xdd, n, "xdd"), self._p_ptr, *self._con_out)
        return self.q, self.H, self.q_dot, self.H_dot, self.q_ddot, self.H_ddot

    def energy(self, t, x, xd):
        n = self.n
        self._c_energy(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"), self._p_ptr,
                       self._E_ptr)
        return float(self.E[0]), float(self.E[1])

    def outputs(self, t, x, xd):
        n = self.n
        self._c_outputs(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"), self._p_ptr,
                        self._y_ptr)
        return self.y
