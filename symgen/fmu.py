"""FMI 2.0 and 3.0 co-simulation FMUs of a model (``symgen export``, :func:`export_fmu`;
docs/fmu.md).

The FMU is the model's generated C, the C runtime and a generic FMI wrapper
(``templates/fmu/fmi2Functions.c`` or ``fmi3Functions.c``, both over ``fmu_instance.c.inc``)
over a small generated part (``fmu_model.h``: the model's descriptor, start, settings, internal
step and which parameters are tunable), compiled with the system C compiler into
``binaries/<platform>/<name>.so`` (none with ``source_only``) and zipped with
``modelDescription.xml`` and ``sources/``.  The runtime is compiled once per cache: a static
library for the FMU's flags in symgen's cache (:func:`symgen.jit.runtime_library`), linked into
every FMU's binary; an export compiles only the wrapper and the model's C.
"""
from __future__ import annotations

import hashlib
import math
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

from ._io import atomic_open
from .version import __version__
from .codegen import generate
from .codegen.render import template_environment, c_settings, template_dir
from .derived import derive, sparsity
from .jit import RUNTIME_SOURCES, BuildError, check_compiler, compiler_command, runtime_library
from .model import Model
from .names import REACTION_PREFIX
from .settings import SimulationSettings, newton_tol

__all__ = ["export_fmu", "tunable_parameters", "FMU_CFLAGS"]

#: How the FMU's binary is compiled (with -shared, -lm and the sources).
FMU_CFLAGS = ("-std=c99", "-O2", "-fPIC", "-fvisibility=hidden")
#: the internal step's error control with dt "auto" (sg_control_default's)
DEFAULT_RTOL, DEFAULT_ATOL = 1e-6, 1e-8
#: the shared part of the two wrappers (included by fmiNFunctions.c, not compiled on its own)
_SHARED = "fmu_instance.c.inc"


#: characters XML 1.0 cannot carry, not even as character references (outside its Char
#: production: the C0 controls but tab, newline and carriage return; lone surrogates; U+FFFE,
#: U+FFFF)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: characters written as character references: tab, newline and carriage return (an attribute
#: value's normalization would make them spaces) and DEL and the C1 controls (allowed, invisible)
_XML_REFERENCES = re.compile("[\t\n\r\x7f-\x9f]")


def _xml(text) -> str:
    """``text`` for an XML 1.0 attribute value: markup and quotes escaped, the characters of
    :data:`_XML_REFERENCES` as character references; a ValueError for one XML cannot carry
    (:func:`_check_xml_text` names the field first)."""
    text = str(text)
    bad = _NOT_XML.search(text)
    if bad:
        raise ValueError(f"{text!r} holds U+{ord(bad.group()):04X}, which XML 1.0 cannot carry")
    return _XML_REFERENCES.sub(lambda m: f"&#{ord(m.group())};",
                               escape(text, {'"': "&quot;"}))


def _check_xml_text(model: Model) -> None:
    """The model's free text that goes into modelDescription.xml (its description) holds no
    character XML 1.0 cannot carry: else a one-line ValueError naming the character."""
    bad = _NOT_XML.search(model.description or "")
    if bad:
        raise ValueError(f"model {model.name!r}: its description holds U+{ord(bad.group()):04X} "
                         f"(a control character, at character {bad.start() + 1}), which XML 1.0 "
                         "cannot carry in modelDescription.xml; remove it from the description")


def _platform(fmi_version: int) -> tuple[str, str]:
    """The binaries folder of this machine (FMI 2.0: ``linux64``; FMI 3.0: ``x86_64-linux``) and
    its library suffix."""
    if sys.platform.startswith("linux"):
        system, suffix = "linux", ".so"
    elif sys.platform == "darwin":
        system, suffix = "darwin", ".dylib"
    else:
        raise BuildError(f"symgen export compiles FMUs on Linux and macOS, not on {sys.platform}; "
                         "export with --source-only and build the FMU's sources/ there")
    if fmi_version == 2:
        return system + ("64" if sys.maxsize > 2**32 else "32"), suffix
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if arch == "x86_64" and sys.maxsize <= 2**32:
        arch = "x86"
    return f"{arch}-{system}", suffix


def _fmi_version(value) -> int:
    """2 or 3 (also "2", "2.0", "3", "3.0")."""
    text = str(value).strip()
    if text in ("2", "2.0"):
        return 2
    if text in ("3", "3.0"):
        return 3
    raise ValueError(f"fmi_version must be 2 or 3 (FMI 2.0 or 3.0), got {value!r}")


def tunable_parameters(model: Model) -> tuple[bool, ...]:
    """Per parameter: True where the constraints q do not contain it, so that it may change
    between communication steps (the run restarts there with ẍ, λ solved anew: the state stays
    on q = 0); False where q contains it (a change would move the constraint manifold away from
    the state: set only before the initialization ends).  docs/fmu.md."""
    in_q = model.q.free_symbols
    return tuple(p not in in_q for p in model.params)


def _step(model: Model, dt, rtol, atol) -> tuple:
    """(auto, dt, rtol, atol) checked: dt a number > 0, "auto" or None (the model's: "auto" when
    it recommends so)."""
    if dt is None:
        try:
            recommended = SimulationSettings.merged(model.settings)
        except (TypeError, ValueError):
            recommended = None
        dt = "auto" if recommended is not None and recommended.auto else None
    auto = isinstance(dt, str) and dt == "auto"
    if not auto and dt is not None:
        try:
            dt = float(dt)
        except (TypeError, ValueError):
            raise ValueError(f"dt must be a number > 0 or 'auto', got {dt!r}") from None
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be a number > 0 or 'auto', got {dt!r}")
    if not auto and (rtol is not None or atol is not None):
        raise ValueError("rtol and atol are the error control's: give them with dt='auto'")
    rtol = DEFAULT_RTOL if rtol is None else float(rtol)
    atol = DEFAULT_ATOL if atol is None else float(atol)
    if not (rtol > 0 and atol > 0 and math.isfinite(rtol) and math.isfinite(atol)):
        raise ValueError(f"rtol and atol must be numbers > 0, got {rtol!r}, {atol!r}")
    return auto, (None if auto else dt), rtol, atol


#: Which variable keeps a name two kinds share, first first: an FMU has one flat namespace where
#: symgen has one per kind (an output may be named like a coordinate, an output point ``slider``
#: gives outputs ``slider.x``, ``slider.y`` beside the body's coordinates of the same names).
_NAME_PRIORITY = ("independent", "input", "parameter", "output", "coordinate", "velocity")


def _distinct_names(rows: list[dict]) -> None:
    """Give every variable a name of its own: where kinds share one, the kind first in
    :data:`_NAME_PRIORITY` keeps it and the others become ``<kind>[<name>]`` (no symgen name holds
    '[', so these are new); the description says so.  ``time`` is the independent variable's in
    both standards (FMI 3.0 lists it; FMI 2.0 importers such as FMPy name their time column so)."""
    def kind(row):
        c = row["causality"]
        return row["kind"] if c == "local" else c
    taken: set[str] = set() if any(r["causality"] == "independent" for r in rows) else {"time"}
    for k in _NAME_PRIORITY:
        for row in rows:
            if kind(row) != k:
                continue
            if row["name"] in taken:
                plain = row["name"]
                row["name"] = f"{k}[{plain}]"
                row["description"] += f" (named {plain!r} in symgen; that name is another variable's)"
            taken.add(row["name"])


def _variables(model: Model, units, fmi_version: int) -> tuple[list[dict], list[int]]:
    """The variables in value-reference order (inputs, outputs, parameters, coordinates,
    velocities; FMI 3.0 also the time, first in the list, last in value references:
    fmu_instance.c.inc) and the outputs (FMI 2.0: their 1-based indices in the list; FMI 3.0:
    their value references)."""
    u = units or {}
    cu, vu = u.get("coords", {}), u.get("velocities", {})
    ou, pu = u.get("outputs", {}), u.get("params", {})
    rows = [dict(name=n, causality="input", variability="continuous", initial=None, start=0.0,
                 unit="", description="input, held constant over each communication step "
                                      "(zero-order hold)") for n in model.input_names]
    rows += [dict(name=n, causality="output", variability="continuous", initial="calculated",
                  start=None, unit=ou.get(n, ""), description="output")
             for n in model.output_names]
    rows += [dict(name=REACTION_PREFIX + n, causality="output", variability="continuous",
                  initial="calculated", start=None, unit="N" if n[-2] == "F" else "N·m",
                  description="joint reaction: force or moment of body a on body b "
                              "(docs/reactions.md)") for n in model.reactions]
    rows += [dict(name=n, causality="parameter", variability="tunable" if tun else "fixed",
                  initial="exact", start=repr(float(v)), unit=pu.get(n, ""),
                  description="parameter (tunable: may change between communication steps)"
                  if tun else "parameter (fixed: the constraints contain it)")
             for n, v, tun in zip(model.param_names, model.param_values,
                                  tunable_parameters(model))]
    for kind, names, values, un in (
            ("coordinate", model.coord_names, model.x0, cu),
            ("velocity", [v.name for v in model.velocities], model.xd0, vu)):
        rows += [dict(name=n, causality="local", variability="continuous", initial="approx",
                      start=repr(float(x)), unit=un.get(n, ""), kind=kind,
                      description=f"{kind} (start projected onto the constraints at "
                                  "initialization)") for n, x in zip(names, values)]
    for vr, row in enumerate(rows):
        row["vr"] = vr
    nu, ny = len(model.input_names), len(model.output_names) + len(model.reactions)
    if fmi_version == 3:
        rows.insert(0, dict(name="time", causality="independent", variability="continuous",
                            initial=None, start=None, unit="", description="simulation time",
                            vr=len(rows)))
    _distinct_names(rows)
    if fmi_version == 3:
        return rows, [nu + i for i in range(ny)]
    return rows, [nu + 1 + i for i in range(ny)]


def _render(model: Model, fmi_version: int, auto: bool, dt: float, rtol: float,
            atol: float, step: dict | None = None) -> tuple[dict, list[str]]:
    """The FMU's files {archive path: text} besides the binary, and the C files its binary is
    compiled from (in sources/); ``step``: chart, metric, preset on the model's settings."""
    _check_xml_text(model)
    d = derive(model)
    src = generate(d)
    settings = c_settings(model, sparsity(d).nnz_H, **(step or {}))
    for text in settings["fallbacks"]:          # (recorded: issue 37.7)
        warnings.warn(f"the FMU of {model.name!r} does not take the model's settings as they "
                      f"are: {text}", RuntimeWarning, stacklevel=3)
    if auto and settings["method"] != "nullspace":
        raise ValueError(f"dt='auto' needs the null-space method; model {model.name!r} "
                         f"recommends {settings['method']!r}: export it with a fixed dt")
    chart = settings["chart"]
    env = template_environment()
    env.filters["xml"] = _xml
    wrapper = f"fmi{fmi_version}Functions.c"
    compiled = [wrapper, f"{model.name}.c", "symgen_runtime.c", "symgen_sparse.c"]
    ctx = {**settings, "name": model.name, "prefix": model.name, "version": __version__,
           "model_hash": model.hash, "n": model.n, "m": model.m, "np_": len(model.params),
           "ny": len(model.outputs), "nu": len(model.inputs), "auto": int(auto),
           "nr": len(model.reactions),
           "dt": repr(float(dt) if dt else float(settings["dt"])),  # (auto: the stepper's h)
           "rtol": repr(rtol), "atol": repr(atol),
           # Newton's tolerance: the model's, else settings.newton_tol's for this step
           "tol": repr(newton_tol(auto, rtol, settings["tol_named"])),
           "factorization_code": settings[f"auto_{chart}_code"],
           "tunable": [str(int(x)) for x in tunable_parameters(model)] or ["0"],
           "guid": "", "description": model.description or "", "source_files": compiled}
    header = env.get_template("fmu/fmu_model.h.j2").render(ctx)
    ctx["guid"] = "{%s}" % uuid.UUID(bytes=hashlib.sha256(header.encode()).digest()[:16])
    header = env.get_template("fmu/fmu_model.h.j2").render(ctx)
    ctx["variables"], ctx["outputs"] = _variables(model, model.units or {}, fmi_version)
    ctx["units"] = sorted({v["unit"] for v in ctx["variables"] if v["unit"]})
    ctx["t_end"] = settings["t_end"]
    files = {"modelDescription.xml":
             env.get_template(f"fmu/modelDescription{fmi_version}.xml.j2").render(ctx)}
    for fname, text in src.files.items():
        if fname not in ("main.c", "README.md"):
            files["sources/" + fname] = text
    files["sources/fmu_model.h"] = header
    for fname in (wrapper, _SHARED):
        files["sources/" + fname] = (template_dir() / "fmu" / fname).read_text()
    if fmi_version == 3:
        files["sources/buildDescription.xml"] = env.get_template(
            "fmu/buildDescription.xml.j2").render(ctx)
    return files, compiled


def _compile(files: dict, compiled: list[str], name: str, work: Path, suffix: str) -> bytes:
    """The FMU's shared library compiled from its sources/ in ``work``: the runtime's sources
    as the static library :func:`~symgen.jit.runtime_library` keeps in symgen's cache for these
    flags (compiled once), the FMI wrapper and the model's C compiled here."""
    check_compiler(name)
    srcdir = work / "sources"
    srcdir.mkdir()
    sources = {path[len("sources/"):]: text for path, text in files.items()
               if path.startswith("sources/")}
    for fname, text in sources.items():
        (srcdir / fname).write_text(text)
    lib_name, runtime = runtime_library(sources, FMU_CFLAGS, compiler=compiler_command())
    (work / lib_name).write_bytes(runtime)
    lib = work / (name + suffix)
    cmd = (shlex.split(compiler_command()) + list(FMU_CFLAGS) + ["-shared", "-I", str(srcdir),
           "-o", str(lib)] + [str(srcdir / f) for f in compiled if f not in RUNTIME_SOURCES]
           + [str(work / lib_name), "-lm"])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"compiling the FMU of model {name!r} failed: {exc}") from None
    if out.returncode != 0:
        raise BuildError(f"compiling the FMU of model {name!r} failed ({' '.join(cmd)}):\n"
                         f"{out.stderr.strip()}")
    return lib.read_bytes()


def export_fmu(model: Model, path=None, *, fmi_version=2, dt=None, rtol=None, atol=None,
               source_only: bool = False, chart: str | None = None, metric: str | None = None,
               preset: str | None = None) -> Path:
    """Write ``model`` as an FMI 2.0 or 3.0 (``fmi_version`` 2 or 3) co-simulation FMU (a zip;
    default ``<name>.fmu``) and return its path.

    ``dt``: the internal step (default: the model's recommended dt; every communication step must
    be a whole number of it) or ``"auto"`` (error-controlled steps within ``rtol``, ``atol``,
    defaults 1e-6, 1e-8, ending on each communication point).  The inputs are held constant over
    each communication step; parameters that the constraints do not contain are tunable
    (:func:`tunable_parameters`).  ``chart``, ``metric``, ``preset``: the null-space step, as
    :func:`symgen.simulate` takes them (default: the model's, else the symmetric chart with the
    mass metric; ``preset="paper"``: the paper's step).  ``source_only``: no binary, only
    ``sources/`` (the importer builds it; nothing is compiled here).  Written whole or not at all.
    """
    if not isinstance(model, Model):
        raise TypeError(f"export_fmu takes a symgen.Model, got {type(model).__name__}")
    version = _fmi_version(fmi_version)
    auto, dt, rtol, atol = _step(model, dt, rtol, atol)
    step = {k: v for k, v in (("chart", chart), ("metric", metric), ("preset", preset))
            if v is not None}
    files, compiled = _render(model, version, auto, dt, rtol, atol, step)
    name = model.name
    target = Path(path) if path is not None else Path(f"{name}.fmu")
    entries = [(arc, text.encode(), 0o644) for arc, text in files.items()]
    if not source_only:
        folder, suffix = _platform(version)
        with tempfile.TemporaryDirectory(prefix="symgen-fmu-") as tmp:
            binary = _compile(files, compiled, name, Path(tmp), suffix)
        entries.append((f"binaries/{folder}/{name}{suffix}", binary, 0o755))
    with atomic_open(target, "wb") as fh:
        with zipfile.ZipFile(fh, "w") as zf:
            for arc, data, mode in entries:         # fixed dates: the same model, the same text
                info = zipfile.ZipInfo(arc, (1980, 1, 1, 0, 0, 0))
                info.external_attr = mode << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
    return target
