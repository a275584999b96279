"""Compile generated C through cffi into a content-addressed cache, and load it as :class:`Kernels`.

Cache layout (root: ``$SYMGEN_CACHE_DIR`` or the per-user cache directory)::

    src/<model hash>-<generator fingerprint>-<start>.json   generated text with its key and a SHA-256
                                                    (<start>: x0, xd0 and the recommended settings)
    lib/<runtime key>/libsymgen_runtime.a           the steppers' C runtime, compiled once
    lib/<runtime key>/manifest.json                 size and SHA-256 of the library, its key
    lib/<binary key>/<module><EXT_SUFFIX>           the compiled module
    lib/<binary key>/manifest.json                  size and SHA-256 of the module, its key
    lib/<key>.lock                                  cross-process lock while building an entry
    lib/.build-<key>-*/                             work folder of a running build

A second build of an unchanged model reads the source entry (no sympy derive or cse) and loads the
module whose manifest matches (no compiler).  The binary key hashes the C text, the runtime key
(with the runtime), the flags, the compiler's identity, Python's ABI tag and cffi's version.
Modules are compiled in a temporary folder by a child process (cffi changes directory while
compiling; the calling process never does); the finished entry folder is published with one
``rename`` and the module loaded by exact path.  A module that fails its manifest check or fails
to load is rebuilt, never used.

The runtime (``templates/runtime/``: ``symgen_runtime.c`` with its parts and ``symgen_sparse.c``)
reaches a model only through its ``sg_model`` descriptor, so it is compiled once per cache and
flags (:func:`runtime_library`): a static library of position-independent code (setuptools'
compiler configured as for cffi's modules, the caller's flags, ``-fvisibility=hidden``) under the
runtime key, which hashes the runtime's whole text, the flags, the compiler's identity and its
environment, and the platform.  A module with the runtime is the model's C and the cffi wrappers,
linked statically against a copy of the library's verified bytes: standalone at load time, its
``sg_*`` functions its own and not exported (two models in one process each call theirs).  A
library that fails its manifest is rebuilt; one that passes it but does not link, or whose
module does not load, is rebuilt once.  The FMU (:mod:`symgen.fmu`) keeps its own library for its
own flags the same way.

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
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from functools import lru_cache
from pathlib import Path

from .cache import (_DIR_MODE, _FILE_MODE, _MODULE_MODE, UntrustedCacheWarning,  # noqa: F401
                    _atomic_write, _CacheEntryError, _check_entry, _LockTimeout, _publish_entry,
                    _read_private, _sha256, _trusted_root, cache_dir)
from .kernels import Kernels
from .model import Model
from .version import __version__

__all__ = ["build", "as_kernels", "BuildError", "UntrustedCacheWarning", "cache_dir",
           "DEFAULT_CFLAGS", "compiler_command", "check_compiler", "runtime_library",
           "RUNTIME_SOURCES"]

log = logging.getLogger(__name__)

DEFAULT_CFLAGS = ("-O2", "-std=c99")
_ENV_NO_COMPILE = "SYMGEN_NO_COMPILE"
_loaded: dict[str, object] = {}
_loaded_lock = threading.Lock()
#: A generated file name from a cache entry: one plain component, no separators, no "..".
_FILE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.(c|h|md|c\.inc)")


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
    # the start and the recommended settings are printed into the C (x0, xd0; main.c's and the
    # FMU's defaults) but are not part of Model.hash: they key the entry too
    start = _sha256(repr((model.x0.tolist(), model.xd0.tolist(),
                          sorted((k, repr(v)) for k, v in model.settings.items()))).encode())
    key = {"model": model.name, "model_hash": model.hash, "generator": fingerprint,
           "start": start}
    entry = root / "src" / f"{model.hash}-{fingerprint[:16]}-{start[:16]}.json"
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


# -- the child process that runs the compiler ------------------------------------------------------
_BUILD_SCRIPT = r"""
import json, sys
import cffi
spec = json.load(open(sys.argv[1]))
ffi = cffi.FFI()
ffi.cdef(spec["cdef"])
ffi.set_source(spec["module"], spec["source"], include_dirs=["."],
               extra_compile_args=spec["cflags"], extra_objects=spec["objects"])
print(ffi.compile(tmpdir=".", verbose=True))
"""

#: Compiles the runtime's sources into a static library with setuptools' compiler: configured as
#: cffi's build_ext configures it ($CC or Python's CC, Python's CFLAGS and CCSHARED (-fPIC),
#: $CFLAGS, $CPPFLAGS, $AR), so the runtime gets exactly the flags it had inside the module, or
#: (spec "compiler") that command with the flags alone (the FMU's).
_ARCHIVE_SCRIPT = r"""
import json, sys
import setuptools  # noqa: F401  (first: its distutils, the one cffi builds with)
from distutils import log
from distutils.ccompiler import new_compiler
from distutils.sysconfig import customize_compiler
spec = json.load(open(sys.argv[1]))
log.set_verbosity(1)
cc = new_compiler()
if spec["compiler"]:
    cc.set_executables(compiler_so=spec["compiler"])
else:
    customize_compiler(cc)
objects = cc.compile(spec["sources"], output_dir=".", include_dirs=["."],
                     extra_postargs=spec["cflags"])
cc.create_static_lib(objects, spec["library"], output_dir=".")
print(cc.library_filename(spec["library"]))
"""


def _run_child(script: str, spec: dict, workdir: Path, what: str) -> str:
    """Run a build ``script`` on ``spec`` in ``workdir`` in a child process (cffi changes
    directory while compiling; this process never does); its output, or a BuildError naming
    ``what`` with the compiler's output."""
    if os.environ.get(_ENV_NO_COMPILE):
        raise BuildError(f"compiling {what} is needed but {_ENV_NO_COMPILE} is set")
    (workdir / "spec.json").write_text(json.dumps(spec))
    # its own process group: an interrupted build stops the compiler too (not only its driver),
    # so nothing writes into the work folder after it is removed
    proc = subprocess.Popen([sys.executable, "-c", script, "spec.json"], cwd=workdir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=COMPILE_TIMEOUT)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise BuildError(f"compiling {what} did not finish within {COMPILE_TIMEOUT:.0f} s") \
                from exc
        raise
    if proc.returncode != 0:
        raise BuildError(f"compiling {what} failed (exit {proc.returncode}).\n"
                         f"--- compiler output ---\n{stdout[-20000:]}\n{stderr[-20000:]}")
    return stdout + stderr


def _compile(src, module: str, cflags: tuple, workdir: Path, cdef: str | None = None,
             source: str | None = None, objects: dict | None = None) -> Path:
    """Compile ``cdef``/``source`` (default: ``src``'s; its files next to it) into ``workdir`` in
    a child process, linked with ``objects`` ({file name: bytes}); returns the module's path."""
    check_compiler(src.name)
    _check_file_names(src.files)
    for fname, text in src.files.items():
        (workdir / fname).write_text(text)
    for fname, data in (objects or {}).items():
        (workdir / fname).write_bytes(data)
    spec = {"cdef": src.cdef if cdef is None else cdef, "module": module,
            "source": src.source if source is None else source, "cflags": list(cflags),
            "objects": list(objects or ())}
    out = _run_child(_BUILD_SCRIPT, spec, workdir, f"the generated C of model {src.name!r}")
    built = [p for p in workdir.iterdir() if p.name.startswith(module) and p.suffix in (".so", ".pyd")]
    if not built:
        raise BuildError(f"the compiler reported success but produced no module for {src.name!r}:\n"
                         f"{out[-10000:]}")
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


def _publish(libs: Path, key: str, filename: str, make, files: dict, manifest: dict,
             bad_sha: str | None = None) -> bytes:
    """cache._publish_entry with this module's limits, SIGTERM and errors."""
    with _sigterm_raises():
        try:
            return _publish_entry(libs, key, filename, make, files, manifest, bad_sha=bad_sha,
                           lock_timeout=LOCK_TIMEOUT, stale_after=2 * COMPILE_TIMEOUT)
        except _LockTimeout as exc:
            raise BuildError(str(exc)) from None


# -- the steppers' C runtime, compiled once per cache ----------------------------------------------
#: The runtime's sources (symgen_runtime.c includes its sg_*.c.inc parts) and its static library.
RUNTIME_SOURCES = ("symgen_runtime.c", "symgen_sparse.c")
_RUNTIME_LIB = "symgen_runtime"
#: Flags of the runtime before the caller's: its sg_* functions are not exported from the module
#: that links it (two models in one process, even loaded RTLD_GLOBAL, each call their own).
_RUNTIME_FLAGS = () if sys.platform == "win32" else ("-fvisibility=hidden",)


def _runtime_key(files: dict, cflags: tuple, compiler: str | None) -> str:
    """The runtime library's key: its whole text, its flags, the compiler (``compiler``: that
    command alone, else setuptools' as configured for cffi) and what configures it, the
    platform."""
    from .codegen import RUNTIME_FILES

    archiver = [f"{k}={os.environ.get(k, '')}" for k in ("AR", "ARFLAGS")]
    material = [json.dumps([[f, files[f]] for f in RUNTIME_FILES]), " ".join(cflags),
                compiler or "setuptools", _compiler_identity(), _flags_identity(), *archiver,
                sysconfig.get_platform(), platform.machine(), __version__, _ARCHIVE_SCRIPT]
    return hashlib.sha256("\n".join(material).encode()).hexdigest()


def _runtime_flags(cflags: tuple, compiler: str | None) -> tuple:
    return (*_RUNTIME_FLAGS, *cflags) if compiler is None else tuple(cflags)


def runtime_library(files: dict, cflags=DEFAULT_CFLAGS, *, compiler: str | None = None,
                    root: Path | None = None, bad_sha: str | None = None) -> tuple[str, bytes]:
    """The steppers' C runtime (``files``: at least the runtime's files by name) compiled as a
    static library of position-independent code with ``cflags``, from the cache's entry
    ``lib/<runtime key>/`` (built and published there when missing, damaged or, by SHA-256,
    ``bad_sha``); returns its file name and its verified bytes.  ``compiler``: that command with
    ``cflags`` alone (the FMU's), else setuptools' compiler as cffi's modules are compiled.  The
    caller checks that there is a compiler (:func:`check_compiler` names its model)."""
    from .codegen import RUNTIME_FILES

    root = _trusted_root(cache_dir() if root is None else Path(root))
    flags = _runtime_flags(tuple(cflags), compiler)
    key = _runtime_key(files, flags, compiler)
    filename = f"{_RUNTIME_LIB}.lib" if sys.platform == "win32" else f"lib{_RUNTIME_LIB}.a"
    libs = root / "lib"
    text = {f: files[f] for f in RUNTIME_FILES}

    def make(work: Path) -> Path:
        log.info("compiling the steppers' C runtime (first run; cached afterwards)…",
                 extra={"symgen_note": True})
        for fname, body in text.items():
            (work / fname).write_text(body)
        _run_child(_ARCHIVE_SCRIPT, {"sources": list(RUNTIME_SOURCES), "cflags": list(flags),
                                     "library": _RUNTIME_LIB, "compiler": compiler},
                   work, "the steppers' C runtime")
        if not (work / filename).is_file():
            raise BuildError(f"the compiler reported success but produced no {filename}")
        return work / filename

    if bad_sha is None:
        with contextlib.suppress(OSError, _CacheEntryError):
            return filename, _check_entry(libs / key, libs / key / filename, key)
    return filename, _publish(libs, key, filename, make, text,
                              {"runtime": filename, "cflags": list(flags)}, bad_sha)


def _runtime_cdef(src) -> tuple[str, str]:
    """cdef and source of the module that adds the stepper runtime (templates/runtime/, linked
    from :func:`runtime_library`) to the model's kernels: the runtime's API (its shared
    constants, ``sg_constants.h``, first), and
    ``sg_module_model()`` returning the model's descriptor."""
    begin, end = "/* SG_CDEF_BEGIN */", "/* SG_CDEF_END */"
    cdef_rt = "\n".join(header[header.index(begin) + len(begin):header.index(end)]
                         for header in (src.files["sg_constants.h"], src.files["symgen_runtime.h"]))
    cdef = src.cdef + "\n" + cdef_rt + "\nconst sg_model *sg_module_model(void);\n"
    source = (src.source + f"\nstatic const sg_model *sg_module_model(void) "
                           f"{{ return &{src.name}_model; }}\n")
    return cdef, source


def _names_library(output: str, objects: dict | None) -> bool:
    """Whether the linker's diagnostics (not the echoed command line) name a linked library."""
    return any(name in line and " -o " not in line
               for name in objects or () for line in output.splitlines())


# -- the compiled module ---------------------------------------------------------------------------
def _build_entry(model: Model, src, module: str, cflags: tuple, key: str, libs: Path,
                 code: tuple[str, str], runtime: dict | None, bad_sha: str | None = None) -> None:
    """Compile and publish the module's entry ``libs/<key>`` (linked with ``runtime``, {file name:
    bytes} of the runtime library) unless another process did."""
    filename = module + importlib.machinery.EXTENSION_SUFFIXES[0]

    def make(work: Path) -> Path:
        log.info("compiling %s kernels (first run; cached afterwards)…", model.name,
                 extra={"symgen_note": True})
        return _compile(src, module, cflags, work, *code, objects=runtime)

    _publish(libs, key, filename, make, src.files,
             {"module": module, "model": model.name, "model_hash": model.hash}, bad_sha)


def _module_key(code: tuple[str, str], rt_key: str, cflags: tuple) -> str:
    """The module's key: its C and cdef, the runtime library it links (``rt_key``, which stands
    for the runtime's whole text, flags and compiler; "" for none), the flags, compiler, ABI."""
    material = [*code, rt_key, " ".join(cflags), _compiler_identity(), _flags_identity(),
                _abi_identity(), __version__]
    return hashlib.sha256("\n".join(material).encode()).hexdigest()


def build(model: Model, *, cflags=DEFAULT_CFLAGS, cache: str | os.PathLike | None = None,
          runtime: bool = True) -> "Kernels":
    """Compile (or load from the cache) the kernels of ``model``.

    With ``runtime`` (the default) the module also holds the steppers' C runtime
    (``templates/runtime/``; the ``sg_*`` functions of :mod:`symgen.steppers.compiled`), compiled
    once per cache and ``cflags`` (:func:`runtime_library`) and linked into the module;
    ``runtime=False`` builds the kernels alone.
    """
    if not isinstance(model, Model):
        raise TypeError(f"build() takes a symgen.Model, got {type(model).__name__}")
    root = _trusted_root(Path(cache) if cache is not None else cache_dir())
    src = generated_source(model, root)
    cflags = tuple(cflags)
    code = _runtime_cdef(src) if runtime else (src.cdef, src.source)
    rt_key = _runtime_key(src.files, _runtime_flags(cflags, None), None) if runtime else ""
    key = _module_key(code, rt_key, cflags)
    module = f"_symgen_{model.name}_{key[:16]}"
    libs = root / "lib"
    libdir = libs / key
    final = libdir / (module + importlib.machinery.EXTENSION_SUFFIXES[0])

    def compile_module(bad_module=None, suspect_runtime=False):
        """Build the module's entry (anew if its module is ``bad_module``), linked with the
        runtime library, which ``suspect_runtime`` builds anew first."""
        objects = None
        if runtime:
            check_compiler(model.name)              # before the runtime's: names the model
            name, lib = runtime_library(src.files, cflags, root=root)
            if suspect_runtime:
                name, lib = runtime_library(src.files, cflags, root=root, bad_sha=_sha256(lib))
            objects = {name: lib}
        try:
            _build_entry(model, src, module, cflags, key, libs, code, objects, bad_module)
        except BuildError as exc:
            if suspect_runtime or not _names_library(str(exc), objects):
                raise
            # it passed its manifest and does not link: build it again, once
            log.warning("the cached runtime library %s does not link; rebuilding it", name)
            compile_module(bad_module, suspect_runtime=True)

    if str(final) not in _loaded:
        try:
            _check_entry(libdir, final, key)
        except (OSError, _CacheEntryError):
            compile_module()
    try:
        mod = _load(module, final)
    except ImportError as exc:
        # it passed its manifest (or was just built) and does not load: build it again, once
        log.warning("the cached module %s does not load (%s); rebuilding it", final, exc)
        try:
            bad = _sha256(_read_private(final))
        except (OSError, _CacheEntryError):
            bad = None
        compile_module(bad, suspect_runtime=runtime)     # the runtime it links, too
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
