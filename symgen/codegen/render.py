"""Rendering: the printed kernels into the Jinja templates, giving ``<name>.h``, ``<name>.c`` and
``README.md`` (:func:`generate`) with the steppers' C runtime (``templates/runtime/``, copied
verbatim) and a standalone ``main.c``, and the fingerprint of everything besides the model that shapes
that text.

Each kernel of :func:`~symgen.codegen.table.kernel_terms` is printed by
:func:`~symgen.codegen.printer.print_kernel`.  The Jinja templates in ``templates/`` hold includes,
signatures, loops and the ABI documentation; no math lives there and no C is assembled here
beyond single expressions.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Mapping

import sympy as sp

from .._io import atomic_write_text
from ..version import __version__
from .. import derived as _derived_module
from .. import settings as _settings_module
from ..derived import Derived, derive, sparsity
from ..model import Model, c_name
from .. import runtime_constants as rc
from .printer import Printer, print_kernel, slot_map
from .table import kernel_terms

__all__ = ["generate", "GeneratedSource", "template_dir", "generator_fingerprint", "RUNTIME_FILES",
           "runtime_files", "runtime_sources", "c_settings", "template_environment"]

#: The model-independent C runtime of the steppers (templates/runtime/), copied verbatim next to
#: every model's generated C.  symgen_runtime.c is a unity build: it includes the sg_*.c.inc parts
#: and sg_internal.h, so the build line names only symgen_runtime.c and symgen_sparse.c (the parts
#: are not .c files, so `cc *.c` in a generated folder does not compile them twice).
RUNTIME_PARTS = ("sg_internal.h", "sg_dense.c.inc", "sg_linearization.c.inc",
                 "sg_convergence.c.inc", "sg_chart.c.inc", "sg_nullspace.c.inc", "sg_index3.c.inc",
                 "sg_start.c.inc", "sg_interp.c.inc", "sg_events.c.inc", "sg_sampler.c.inc",
                 "sg_run.c.inc", "sg_control.c.inc", "sg_state.c.inc", "sg_alloc.c.inc")
#: The runtime's file rendered from a table, not copied: the codes and constants it shares with the
#: Python steppers (``sg_constants.h`` from :mod:`symgen.runtime_constants`; issue 37.1).
RUNTIME_RENDERED = ("sg_constants.h",)
RUNTIME_FILES = ("symgen_runtime.h", "symgen_runtime.c", "symgen_sparse.h", "symgen_sparse.c",
                 *RUNTIME_PARTS, *RUNTIME_RENDERED)
#: main.c's FACTORIZATION, CHART, METRIC → the runtime's constants (the one table's names)
_FACTORIZATION_C, _CHART_C, _METRIC_C = rc.C_FACTORIZATIONS, rc.C_CHARTS, rc.C_METRICS


def template_dir() -> Path:
    """Where the Jinja templates are: inside the installed package, or the checkout's templates/."""
    here = Path(__file__).resolve().parent.parent          # the symgen package
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "source.c.j2").is_file():
            return candidate
    raise FileNotFoundError(
        f"symgen's C templates were not found next to {here} (looked in symgen/templates and "
        "../templates); reinstall symgen"
    )


def runtime_files() -> list[Path]:
    """Paths of the C runtime's templates (``templates/runtime/``): the files copied verbatim, in
    :data:`RUNTIME_FILES` order, then the Jinja template of each rendered one (``.j2``)."""
    return [template_dir() / "runtime" / (name if name not in RUNTIME_RENDERED else name + ".j2")
            for name in RUNTIME_FILES]


def runtime_sources() -> dict[str, str]:
    """The C runtime's files by name, in :data:`RUNTIME_FILES` order: ``templates/runtime/``
    copied, ``sg_constants.h`` rendered from :mod:`symgen.runtime_constants`."""
    out = {name: (template_dir() / "runtime" / name).read_text()
           for name in RUNTIME_FILES if name not in RUNTIME_RENDERED}
    out["sg_constants.h"] = _constants_header()
    return out


def _constants_header() -> str:
    """``sg_constants.h``: every entry of :mod:`symgen.runtime_constants` (its comments wrapped)."""
    import textwrap

    width = 100                                   # the runtime's line length

    def entries(rows, fmt, indent):
        codes = [fmt(name, value, i == len(rows) - 1) for i, (name, value, _) in enumerate(rows)]
        return [{"code": code, "doc": textwrap.wrap(doc, width - indent - 3,
                                                    break_on_hyphens=False)}
                for code, (_, _, doc) in zip(codes, rows)]

    def enum_code(name, value, last):
        return f"{name} = {int(value)}{'' if last else ','}"

    code_width = 1 + max(len(enum_code(n, v, False)) for _, g in rc.ENUMS for n, v, _ in g)
    double_width = 1 + max(len(f"{n} = {float(v)!r};") for n, v, _ in rc.DOUBLES)
    enums = [{"lines": textwrap.wrap(comment, width - 6),
              "entries": entries(group, enum_code, 4 + code_width + 3)}
             for comment, group in rc.ENUMS]
    doubles = entries(rc.DOUBLES, lambda n, v, last: f"{n} = {float(v)!r};", 20 + double_width + 3)
    return template_environment().get_template("runtime/sg_constants.h.j2").render(
        enums=enums, doubles=doubles, code_width=code_width, double_width=double_width)


def _c_string(value: str) -> str:
    """A C string literal for ``value`` (non-ASCII bytes as octal escapes)."""
    out = []
    for byte in str(value).encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127 and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _ints(values) -> list[str]:
    """A constant int table's initializer as lines of at most 16 numbers (``0`` for an empty table:
    C99 has no zero-length arrays; the sizes in the header say how many are meant)."""
    values = list(values) or [0]
    return [", ".join(str(v) for v in values[i:i + 16]) for i in range(0, len(values), 16)]


def generator_fingerprint() -> str:
    """Hash of everything besides the model that shapes the generated text."""
    h = hashlib.sha256(__version__.encode())
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):     # this package
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(Path(_derived_module.__file__).read_bytes())      # derive shapes every expression
    h.update(Path(_settings_module.__file__).read_bytes())     # main.c's defaults (factorization)
    for path in sorted(template_dir().glob("*.j2")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    for name, text in runtime_sources().items():
        h.update(name.encode())
        h.update(text.encode())
    h.update(sp.__version__.encode())
    return h.hexdigest()


@dataclass
class GeneratedSource:
    """The standalone C of one model: ``files`` maps file name to text."""

    name: str
    model_hash: str
    files: dict = field(default_factory=dict)
    cdef: str = ""

    @property
    def header(self) -> str:
        return self.files[f"{self.name}.h"]

    @property
    def source(self) -> str:
        return self.files[f"{self.name}.c"]

    def write(self, outdir, runtime_dir=None) -> list[Path]:
        """Write every file into ``outdir`` (created if needed); returns the paths.

        With ``runtime_dir`` the runtime's files (:data:`RUNTIME_FILES`) go there instead: one
        copy shared by several models' folders (the repository's ``generated/runtime/``), whose
        build line adds ``-I<runtime_dir>`` and names its ``symgen_runtime.c`` and
        ``symgen_sparse.c``."""
        out = Path(outdir)
        runtime = Path(runtime_dir) if runtime_dir is not None else out
        paths = []
        for fname, text in self.files.items():
            path = (runtime if fname in RUNTIME_FILES else out) / fname
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
            paths.append(path)
        return paths

    def to_dict(self) -> dict:
        return {"name": self.name, "model_hash": self.model_hash, "files": self.files,
                "cdef": self.cdef}

    @classmethod
    def from_dict(cls, data: Mapping) -> "GeneratedSource":
        return cls(name=data["name"], model_hash=data["model_hash"], files=dict(data["files"]),
                   cdef=data["cdef"])


#: main.c's start: entries below this fraction of the vector's largest are round-off of zero
START_ZERO = 1e-15


def _start_literal(values) -> str:
    """A start vector as C literals without round-off noise: an entry below :data:`START_ZERO` of
    the vector's largest is printed as 0.0 (an assembled start carries e.g. -7.7e-29 for an exact
    zero, a different one on every machine); the others print exactly (``repr``: shortest
    round-trip), as main.c must start where ``simulate`` starts."""
    vals = [float(v) for v in values]
    scale = max((abs(v) for v in vals), default=0.0)
    return ", ".join(repr(0.0 if abs(v) <= START_ZERO * scale else v) for v in vals)


def c_settings(model: Model, nnz_H: int, **chosen) -> dict:
    """The recommended settings of ``model`` as C literals for main.c and the FMU's
    ``fmu_model.h`` (simulate's defaults; the compiled stepper's methods only, nullspace with its
    default scheme otherwise).  ``chosen``: chart, metric or preset on top of them (the FMU's
    export options).  The chart and metric are simulate's, for a fixed step and DT auto alike
    (:func:`~symgen.settings.chart_metric`: the symmetric chart with the mass metric unless the
    model or ``chosen`` names them); ``named_metric_<chart>``: the metric when main.c's caller
    names that CHART.  FACTORIZATION "auto" is, per chart, what simulate's is for this model
    (``compiled_factorization``; "svd", which the C runtime does not have, becomes QR); H has
    ``nnz_H`` symbolic non-zeros.  ``fallbacks``: one line for each of the model's settings the C
    does not take (issue 37.7; the README names them, export_fmu warns)."""
    from ..settings import (NEWTON_TOL_AUTO_MAX, NEWTON_TOL_MIN, NEWTON_TOL_RTOL,
                            SimulationSettings, compiled_factorization, newton_tol)

    default, fallbacks = SimulationSettings(), []
    try:
        base = SimulationSettings.merged(model.settings).given()
    except (TypeError, ValueError) as exc:
        base = {}
        fallbacks.append(f"the model's settings do not validate ({exc}): symgen's defaults")
    st = SimulationSettings.merged(base, **chosen)
    method = st.method if st.method in ("nullspace", "index3") else default.method
    if method != st.method:                 # the chart and metric of the null-space step it takes
        fallbacks.append(f"method {st.method!r} has no compiled stepper: the {method} method")
        st = SimulationSettings.merged(base, **chosen, method=method)
    chart = st.chart if method == "nullspace" else "end"
    metric = st.metric if method == "nullspace" else "euclidean"
    named = {c: SimulationSettings.merged(st, chart=c).metric if method == "nullspace"
             else "euclidean" for c in ("end", "symmetric")}
    sch = st.parsed_scheme()
    if method == "nullspace" and sch.is_hht:
        fallbacks.append(f"scheme {st.scheme!r} (HHT-α) is the index-3 method's: the null-space "
                         f"step takes {default.scheme!r}")
        sch = default.parsed_scheme()

    def lit(v) -> str:
        return repr(float(v))

    # dt "auto" (a model's recommended settings name no rtol or atol: the defaults, as simulate's)
    auto_step = st.auto and method == "nullspace"

    named_tol = st.given()["tol"]             # Newton's tolerance if the model names one
    shape = SimpleNamespace(n=model.n, m=model.m, nnz_H=nnz_H)
    auto = {}
    for c in ("end", "symmetric"):
        fac = compiled_factorization(shape, method, st.factorization, c)
        auto[c] = fac if fac == "sparse" else "qr"
    return {
        "method": method, "method_code": rc.C_METHODS[method],
        "gamma": lit(sch.gamma), "beta": lit(sch.beta), "hht_alpha": lit(sch.alpha),
        # (under auto o.h is only the stepper's first h, which the error control replaces)
        "dt": lit(st.dt if st.dt is not None and not st.auto else 1e-3),
        "dt_auto": int(auto_step), "model_dt_auto": st.auto,
        "t_end": lit(st.t_end if st.t_end is not None else 1.0),
        # Newton's tolerance (settings.newton_tol): the model's if it names one, else a fixed
        # step's; under DT auto main.c takes newton_tol_rtol · RTOL within [min, auto_max]
        "tol": lit(newton_tol(False, 0.0, named_tol)), "tol_named": named_tol,
        "newton_tol_rtol": lit(NEWTON_TOL_RTOL), "newton_tol_min": lit(NEWTON_TOL_MIN),
        "newton_tol_auto_max": lit(NEWTON_TOL_AUTO_MAX),
        "constraint_tol": lit(st.constraint_tol),
        "max_iter": int(st.max_iter), "rank_tol": lit(st.rank_tol),
        "chart": chart, "chart_code": _CHART_C[chart],
        "metric": metric, "metric_code": _METRIC_C[metric], "preset": st.preset,
        "named_metric_end": named["end"], "named_metric_symmetric": named["symmetric"],
        "named_metric_end_code": _METRIC_C[named["end"]],
        "named_metric_symmetric_code": _METRIC_C[named["symmetric"]],
        "auto_end": auto["end"], "auto_symmetric": auto["symmetric"],
        "auto_end_code": _FACTORIZATION_C[auto["end"]],
        "auto_symmetric_code": _FACTORIZATION_C[auto["symmetric"]],
        "fallbacks": fallbacks,
    }


def template_environment():
    """The Jinja environment of ``templates/`` (strict undefined, the ``c_string`` filter)."""
    import jinja2                       # only to generate: a cached build does not need it

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["c_string"] = _c_string
    return env


def generate(model_or_derived: Model | Derived, outdir=None) -> GeneratedSource:
    """The standalone C99 source (``<name>.h``, ``<name>.c``, ``README.md``) of a model, with the
    steppers' C runtime (``symgen_runtime.h``, ``symgen_runtime.c``) its descriptor refers to and a
    ``main.c`` that simulates the model with its recommended settings and prints CSV.

    With ``outdir`` the files are also written there.
    """
    d = model_or_derived if isinstance(model_or_derived, Derived) else derive(model_or_derived)
    model = d.model
    mapping = slot_map(model, d)
    printer = Printer()
    sparse = sparsity(d)
    kernels = [print_kernel(kname, inputs, outputs, mapping, printer)
               for kname, (inputs, outputs) in kernel_terms(d, sparse).items()]
    prefix = model.name
    ctx = {
        "name": model.name,
        "prefix": prefix,
        "P": prefix.upper(),
        "version": __version__,
        "model_hash": model.hash,
        "n": model.n,
        "m": model.m,
        "np_": len(model.params),
        "ny": len(model.outputs),
        "coords": list(model.coord_names),
        "coord_cnames": [c_name(c) for c in model.coord_names],
        "param_names": list(model.param_names),
        "params": [(k, repr(float(v))) for k, v in zip(model.param_names, model.param_values)],
        "outputs": list(model.output_names),
        "nu": len(model.inputs), "inputs": list(model.input_names),
        "output_cnames": [c_name(o) for o in model.output_names],
        "nr": len(model.reactions), "reaction_names": list(model.reactions),
        "ne": len(model.events),
        "event_direction": [e.direction for e in model.events.values()],
        "event_terminal": [int(e.terminal) for e in model.events.values()],
        "impact_event": [i for i, e in enumerate(model.events.values())
                         if e.restitution is not None],
        "impact_restitution": [repr(float(e.restitution)) for e in model.events.values()
                               if e.restitution is not None],
        "kernels": kernels,
        "nnz_H": sparse.nnz_H, "nnz_M": sparse.nnz_M,
        "H_indptr": _ints(sparse.H_indptr), "H_indices": _ints(sparse.H_indices),
        "M_indptr": _ints(sparse.M_indptr), "M_indices": _ints(sparse.M_indices),
        "col_order": _ints(sparse.col_order),
        "x0": _start_literal(model.x0), "xd0": _start_literal(model.xd0),
        "has_potential": int(model.V is not None),
        "C_is_zero": int(next(o["nnz"] for k in kernels if k["name"] == "dynamics"
                              for o in k["outputs"] if o["name"] == "C") == 0),
        "f_t_is_zero": int(next(o["nnz"] for k in kernels if k["name"] == "dynamics_t"
                                for o in k["outputs"] if o["name"] == "f_t") == 0),
    }
    env = template_environment()
    declarations = env.get_template("declarations.h.j2").render(ctx).strip() + "\n"
    ctx["declarations"] = declarations
    main = {**ctx, **c_settings(model, sparse.nnz_H)}
    files = {
        f"{prefix}.h": env.get_template("header.h.j2").render(ctx),
        f"{prefix}.c": env.get_template("source.c.j2").render(ctx),
        "README.md": env.get_template("README.md.j2").render(main),
    }
    files.update(runtime_sources())
    files["main.c"] = env.get_template("main.c.j2").render(main)
    src = GeneratedSource(name=prefix, model_hash=model.hash, files=files, cdef=declarations)
    if outdir is not None:
        src.write(outdir)
    return src
