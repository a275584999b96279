"""Compile generated C through cffi into a content-addressed cache, and load it as :class:`Kernels`.

Cache layout (root: ``$SYMGEN_CACHE_DIR`` or the per-user cache directory)::

    src/<model hash>-<generator fingerprint>.json   generated text with its key and a SHA-256
    lib/<binary key>/<module><EXT_SUFFIX>           the compiled module
    lib/<binary key>/manifest.json                  size and SHA-256 of the module, its key
    lib/<binary key>.lock                           cross-process lock while building
    lib/.build-<binary key>-*/                      work folder of a running build

A second build of an unchanged model reads the source entry (no sympy derive or cse) and loads the
module whose manifest matches (no compiler).  The binary key hashes the C text, the flags, the
compiler's identity, Python's ABI tag and cffi's version.  Modules are compiled in a temporary
folder by a child process (cffi changes directory while compiling; the calling process never
does); the finished entry folder is published with one ``rename`` and the module loaded by exact
path.  A module that fails its manifest check or fails to load is rebuilt, never used.

Trust: the cache holds code that symgen loads, so only a cache nobody else can write is used.
Folders are created 0700 and files 0600/0700 whatever the umask; a root, ``src/`` or ``lib/`` that
is not owned by the current user or is writable by group or others disables the cache for this
process (one :class:`UntrustedCacheWarning`; builds go to a private temporary folder, as pip does
for its cache).  Entries are opened with ``O_NOFOLLOW`` and must be regular files (folders) owned
by the user; a symbolic link or a foreign entry is removed and rebuilt.  Every path is derived from
symgen's own keys: a file name read from a cache entry is checked against a strict pattern, never
joined unchecked.  A source entry whose SHA-256 or key does not match is regenerated (a warning).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path

from .cache import (_DIR_MODE, _FILE_MODE, _MODULE_MODE, UntrustedCacheWarning,  # noqa: F401
                    _atomic_write, _CacheEntryError, _private_dir, _read_private, _remove,
                    _trusted_root, _untrusted, cache_dir)
from .kernels import Kernels
from .model import Model
from .version import __version__

__all__ = ["build", "as_kernels", "BuildError", "UntrustedCacheWarning", "cache_dir",
           "DEFAULT_CFLAGS", "compiler_command", "check_compiler"]

log = logging.getLogger(__name__)

DEFAULT_CFLAGS = ("-O2", "-std=c99")
_ENV_NO_COMPILE = "SYMGEN_NO_COMPILE"
_loaded: dict[str, object] = {}
_loaded_lock = threading.Lock()
#: A generated file name from a cache entry: one plain component, no separators, no "..".
_FILE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.(c|h|md|c\.inc)")
_BUILD_PREFIX = ".build-"


class BuildError(RuntimeError):
    """Compiling the generated C failed; the message carries the compiler's output."""


class _Terminated(BaseException):
    """SIGTERM arrived during a build (raised so that the work folder is removed)."""


def compiler_command() -> str:
    """The C compiler command setuptools runs for cffi: ``$CC``, else Python's build-time CC."""
    return os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"


#: How to go on without a C compiler (in the BuildError of a build that needs one).
NO_COMPILER_HINT = ("install a C compiler (e.g. `apt install gcc`, `dnf install gcc` or "
                    "`xcode-select --install`) or point CC at one; or run without compiling "
                    "(much slower): kernels = symgen.LambdifyKernels(model) in Python, "
                    "`symgen simulate MODEL --backend lambdify` on the command line")


def check_compiler(name: str) -> None:
    """A BuildError saying how to proceed when the compiler command is not there (rather than
    the compiler driver's 'command ... failed: No such file or directory' deep in cffi's output)."""
    if sys.platform == "win32":       # MSVC is found by setuptools, not by a command name
        return
    cc = compiler_command()
    try:
        exe = shlex.split(cc)[0]
    except (ValueError, IndexError):
        exe = cc
    if not shutil.which(exe):
        origin = "$CC" if os.environ.get("CC") else "Python's build configuration"
        raise BuildError(f"no C compiler found to build model {name!r}: {exe!r} (from {origin}) "
                         f"is not an executable file or a command on PATH; {NO_COMPILER_HINT}")


@lru_cache(maxsize=None)
def _compiler_identity() -> str:
    cc = compiler_command()
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


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_file_names(files) -> None:
    for fname in files:
        if not isinstance(fname, str) or not _FILE_NAME.fullmatch(fname):
            raise _CacheEntryError(f"file name {fname!r} is not a plain generated file name")


# -- generated source -----------------------------------------------------------------------------
def _source_digest(key: dict, source: dict) -> str:
    return _sha256(json.dumps([key, source], sort_keys=True).encode())


def _read_source_entry(entry: Path, key: dict):
    """The cached :class:`GeneratedSource` for ``key``; raises _CacheEntryError when it must not be
    used, FileNotFoundError when there is none."""
    from .codegen import GeneratedSource

    try:
        raw = _read_private(entry)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise _CacheEntryError(f"{entry} cannot be opened safely ({exc.strerror or exc})") from None
    try:
        data = json.loads(raw)
        source = data["source"]
        if data["key"] != key:
            raise _CacheEntryError(f"{entry} belongs to another model or generator")
        if data["sha256"] != _source_digest(data["key"], source):
            raise _CacheEntryError(f"{entry} was changed after it was written (SHA-256 mismatch)")
        src = GeneratedSource.from_dict(source)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise _CacheEntryError(f"{entry} is unreadable") from None
    _check_file_names(src.files)
    if (src.name, src.model_hash) != (key["model"], key["model_hash"]) \
            or f"{src.name}.c" not in src.files or f"{src.name}.h" not in src.files:
        raise _CacheEntryError(f"{entry} does not hold the source of model {key['model']!r}")
    return src


def generated_source(model: Model, root: Path | None = None):
    """The model's :class:`~symgen.codegen.GeneratedSource`, from the cache when it is there."""
    from .codegen import generate, generator_fingerprint

    root = _trusted_root(cache_dir() if root is None else Path(root))
    fingerprint = generator_fingerprint()
    key = {"model": model.name, "model_hash": model.hash, "generator": fingerprint}
    entry = root / "src" / f"{model.hash}-{fingerprint[:16]}.json"
    try:
        return _read_source_entry(entry, key)
    except FileNotFoundError:
        pass
    except _CacheEntryError as exc:
        log.warning("discarding generated-source cache entry: %s; regenerating it", exc)
    log.info("generating the C of %s (first run; cached afterwards)…", model.name,
             extra={"symgen_note": True})
    src = generate(model)
    _check_file_names(src.files)
    body = src.to_dict()
    _atomic_write(entry, json.dumps({"key": key, "source": body,
                                     "sha256": _source_digest(key, body)}))
    return src


# -- compiled module ------------------------------------------------------------------------------
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
    """Compile ``cdef``/``source`` (default: ``src``'s; its files next to it) into ``workdir`` in
    a child process; returns the module's path."""
    if os.environ.get(_ENV_NO_COMPILE):
        raise BuildError(f"compiling {module} is needed but {_ENV_NO_COMPILE} is set")
    check_compiler(src.name)
    _check_file_names(src.files)
    for fname, text in src.files.items():
        (workdir / fname).write_text(text)
    spec = {"cdef": src.cdef if cdef is None else cdef, "module": module,
            "source": src.source if source is None else source, "cflags": list(cflags)}
    (workdir / "spec.json").write_text(json.dumps(spec))
    # its own process group: an interrupted build stops the compiler too (not only its driver),
    # so nothing writes into the work folder after it is removed
    proc = subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, "spec.json"], cwd=workdir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=COMPILE_TIMEOUT)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise BuildError(f"compiling the generated C of model {src.name!r} did not finish "
                             f"within {COMPILE_TIMEOUT:.0f} s") from exc
        raise
    if proc.returncode != 0:
        raise BuildError(
            f"compiling the generated C of model {src.name!r} failed (exit {proc.returncode}).\n"
            f"--- compiler output ---\n{stdout[-20000:]}\n{stderr[-20000:]}"
        )
    built = [p for p in workdir.iterdir() if p.name.startswith(module) and p.suffix in (".so", ".pyd")]
    if not built:
        raise BuildError(f"the compiler reported success but produced no module for {src.name!r}:\n"
                         f"{stdout[-5000:]}\n{stderr[-5000:]}")
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


def _check_entry(libdir: Path, final: Path, key: str) -> str:
    """The SHA-256 of a complete, private entry's module; raises _CacheEntryError (or OSError when
    absent) otherwise."""
    problem = _untrusted(os.lstat(libdir), want_dir=True)
    if problem:
        raise _CacheEntryError(f"{libdir} {problem}")
    try:
        info = json.loads(_read_private(libdir / "manifest.json"))
        data = _read_private(final)
        ok = info["key"] == key and len(data) == info["size"] and _sha256(data) == info["sha256"]
    except FileNotFoundError:
        raise _CacheEntryError(f"{libdir} is incomplete") from None
    except OSError as exc:
        raise _CacheEntryError(f"{libdir} cannot be read safely ({exc.strerror or exc})") from None
    except (ValueError, KeyError, TypeError):
        raise _CacheEntryError(f"{libdir}/manifest.json is unreadable") from None
    if not ok:
        raise _CacheEntryError(f"{final} does not match its manifest")
    return info["sha256"]


@contextlib.contextmanager
def _sigterm_raises():
    """In the main thread, turn SIGTERM into an exception while building, so that the work folder
    is removed; then the signal is delivered again to whatever handled it before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous in (signal.SIG_IGN, None):
        yield
        return

    def handler(signum, frame):
        raise _Terminated(signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, previous)
        signal.raise_signal(signal.SIGTERM)      # default: terminate; a handler: it runs now
        raise BuildError("the build was interrupted by SIGTERM") from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _remove_work(work: Path) -> None:
    """Remove a work folder (again, briefly, if a killed compiler was still finishing a file)."""
    for _ in range(50):
        shutil.rmtree(work, ignore_errors=True)
        if not os.path.lexists(work):
            return
        time.sleep(0.02)
    log.warning("could not remove the build folder %s; the next build removes it", work)


def _sweep_stale(libs: Path, key: str) -> None:
    """Remove work folders left by killed builds: this key's (its lock is held: none is running)
    and any older than the compile time limit."""
    now = time.time()
    with os.scandir(libs) as it:
        for e in it:
            if not e.name.startswith(_BUILD_PREFIX) or not e.is_dir(follow_symlinks=False):
                continue
            if e.name.startswith(f"{_BUILD_PREFIX}{key[:16]}-") or \
                    now - e.stat(follow_symlinks=False).st_mtime > 2 * COMPILE_TIMEOUT:
                shutil.rmtree(e.path, ignore_errors=True)


def _build_entry(model: Model, src, module: str, cflags: tuple, key: str, libs: Path,
                 code: tuple[str, str], bad_sha: str | None = None) -> None:
    """Compile and publish ``libs/<key>`` unless another process did (a valid entry whose module
    is not ``bad_sha``, the one that failed to load)."""
    from filelock import FileLock, Timeout

    libdir = libs / key
    final = libdir / (module + importlib.machinery.EXTENSION_SUFFIXES[0])
    lock_path = libs / f"{key}.lock"
    with contextlib.suppress(FileNotFoundError):
        if _untrusted(os.lstat(lock_path), want_dir=False):
            _remove(lock_path)                       # never open a planted link
    lock = FileLock(str(lock_path), timeout=LOCK_TIMEOUT, mode=_FILE_MODE)
    with _sigterm_raises():
        try:
            held = lock.acquire()                 # released when the `with` below ends
        except Timeout:
            raise BuildError(f"waited {LOCK_TIMEOUT:.0f} s for another process building model "
                             f"{model.name!r} (lock {lock_path}); remove the lock if no build "
                             "is running") from None
        with held:
            try:
                if _check_entry(libdir, final, key) != bad_sha:
                    return                        # another process has built it
                problem = f"{final} passes its manifest but does not load"
            except FileNotFoundError:
                problem = None
            except _CacheEntryError as exc:
                problem = str(exc)
            if problem:
                log.warning("rebuilding cache entry: %s", problem)
            _sweep_stale(libs, key)
            work = Path(tempfile.mkdtemp(dir=libs, prefix=f"{_BUILD_PREFIX}{key[:16]}-"))
            try:
                log.info("compiling %s kernels (first run; cached afterwards)…", model.name,
                         extra={"symgen_note": True})
                built = _compile(src, module, cflags, work, *code)
                out = work / "entry"
                _private_dir(out)
                os.replace(built, out / final.name)
                os.chmod(out / final.name, _MODULE_MODE)
                for fname, text in src.files.items():
                    _atomic_write(out / fname, text)
                data = _read_private(out / final.name)
                _atomic_write(out / "manifest.json", json.dumps(
                    {"key": key, "size": len(data), "sha256": _sha256(data), "module": module,
                     "model": model.name, "model_hash": model.hash}))
                _remove(libdir)
                os.rename(out, libdir)                # publish the whole entry at once
            finally:
                _remove_work(work)


def _runtime_cdef(src) -> tuple[str, str]:
    """cdef and source of the module that adds the stepper runtime (templates/runtime/) to the
    model's kernels: one translation unit, plus ``sg_module_model()`` returning the descriptor."""
    header = src.files["symgen_runtime.h"]
    begin, end = "/* SG_CDEF_BEGIN */", "/* SG_CDEF_END */"
    cdef_rt = header[header.index(begin) + len(begin):header.index(end)]
    cdef = src.cdef + "\n" + cdef_rt + "\nconst sg_model *sg_module_model(void);\n"
    source = (src.source + "\n" + src.files["symgen_runtime.c"] + "\n" + src.files["symgen_sparse.c"]
              + f"\nconst sg_model *sg_module_model(void) {{ return &{src.name}_model; }}\n")
    return cdef, source


def build(model: Model, *, cflags=DEFAULT_CFLAGS, cache: str | os.PathLike | None = None,
          runtime: bool = True) -> "Kernels":
    """Compile (or load from the cache) the kernels of ``model``.

    With ``runtime`` (the default) the module also holds the steppers' C runtime
    (``templates/runtime/``; the ``sg_*`` functions of :mod:`symgen.steppers.compiled`), compiled
    with the kernels into one translation unit; ``runtime=False`` builds the kernels alone.
    """
    if not isinstance(model, Model):
        raise TypeError(f"build() takes a symgen.Model, got {type(model).__name__}")
    root = _trusted_root(Path(cache) if cache is not None else cache_dir())
    src = generated_source(model, root)
    cflags = tuple(cflags)
    code = _runtime_cdef(src) if runtime else (src.cdef, src.source)
    from .codegen import RUNTIME_FILES

    # the runtime's whole text: the headers and the parts symgen_runtime.c includes are not in code
    runtime_text = [src.files[f] for f in RUNTIME_FILES if runtime and f in src.files]
    key_material = "\n".join([*code, *runtime_text, " ".join(cflags), _compiler_identity(),
                              _flags_identity(), _abi_identity(), __version__])
    key = hashlib.sha256(key_material.encode()).hexdigest()
    module = f"_symgen_{model.name}_{key[:16]}"
    libs = root / "lib"
    libdir = libs / key
    final = libdir / (module + importlib.machinery.EXTENSION_SUFFIXES[0])

    if str(final) not in _loaded:
        try:
            _check_entry(libdir, final, key)
        except (OSError, _CacheEntryError):
            _build_entry(model, src, module, cflags, key, libs, code)
    try:
        mod = _load(module, final)
    except ImportError as exc:
        # it passed its manifest (or was just built) and does not load: build it again, once
        log.warning("the cached module %s does not load (%s); rebuilding it", final, exc)
        try:
            bad = hashlib.sha256(_read_private(final)).hexdigest()
        except (OSError, _CacheEntryError):
            bad = None
        _build_entry(model, src, module, cflags, key, libs, code, bad_sha=bad)
        try:
            mod = _load(module, final)
        except ImportError as exc2:
            raise BuildError(f"the compiled module {final} failed to load: {exc2}") from exc2
    return Kernels(model, mod.ffi, mod.lib, path=final)


def as_kernels(model_or_kernels):
    """Kernels for a Model (:func:`build`, cached) or the Kernels object itself."""
    if isinstance(model_or_kernels, Model):
        return build(model_or_kernels)
    needed = ("dynamics", "constraints", "n", "m")
    if all(hasattr(model_or_kernels, a) for a in needed):
        return model_or_kernels
    raise TypeError(f"simulate needs a symgen.Model or a Kernels object, got {type(model_or_kernels).__name__}")
