"""C99 source from the derived terms: templates hold the layout, sympy prints the expressions.

Each kernel (see :func:`symgen.derive.kernel_terms`) is printed after one ``cse`` over all its
outputs' non-zero entries.  Symbols are mapped to array slots (``x[i]``, ``xd[i]``, ``p[k]``…) with
``xreplace``, so user names never reach C.  The Jinja templates in ``templates/`` hold includes,
signatures, loops and the ABI documentation; no math lives there and no C is assembled here
beyond single expressions.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import jinja2
import sympy as sp
from sympy.printing.c import C99CodePrinter

from . import __version__
from .derive import Derived, derive, kernel_terms
from .model import Model, ModelError, c_name, t

__all__ = ["generate", "GeneratedSource", "template_dir", "generator_fingerprint"]

_INPUT_DECL = {
    "t": "double t",
    "x": "const double *x",
    "xd": "const double *xd",
    "xdd": "const double *xdd",
    "lam": "const double *lam",
    "p": "const double *p",
}

_KERNEL_DOC = {
    "dynamics": "mass matrix, forces and their linearization",
    "constraints": "constraints and their derivatives",
    "energy": "kinetic and potential energy",
    "outputs": "the model's named outputs",
}

_OUTPUT_DOC = {
    "M": "mass matrix M(x)",
    "f": "forces f(x, xd, t)",
    "K": "d(M xdd - f - H^T lam)/dx",
    "C": "-df/dxd",
    "q": "constraints q(x, t)",
    "H": "dq/dx",
    "q_dot": "dq/dt = H xd + q_t",
    "H_dot": "d(q_dot)/dx",
    "q_ddot": "d2q/dt2 = H xdd + H_dot xd + q_dot_t",
    "H_ddot": "d(q_ddot)/dx at fixed xd, xdd",
    "E": "[kinetic T, potential V]",
    "y": "outputs",
}


def template_dir() -> Path:
    """Where the Jinja templates are: inside the installed package, or the checkout's templates/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "source.c.j2").is_file():
            return candidate
    raise FileNotFoundError(
        f"symgen's C templates were not found next to {here} (looked in symgen/templates and "
        "../templates); reinstall symgen"
    )


#: The model-independent C runtime of the steppers (templates/runtime/), copied verbatim next to
#: every model's generated C.
RUNTIME_FILES = ("symgen_runtime.h", "symgen_runtime.c")


def runtime_files() -> list[Path]:
    """Paths of the C runtime's files (``templates/runtime/``), in :data:`RUNTIME_FILES` order."""
    return [template_dir() / "runtime" / name for name in RUNTIME_FILES]


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


def generator_fingerprint() -> str:
    """Hash of everything besides the model that shapes the generated text."""
    h = hashlib.sha256(__version__.encode())
    h.update(Path(__file__).read_bytes())
    h.update(Path(__file__).with_name("derive.py").read_bytes())
    for path in sorted(template_dir().glob("*.j2")) + runtime_files():
        h.update(path.name.encode())
        h.update(path.read_bytes())
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

    def write(self, outdir) -> list[Path]:
        """Write every file into ``outdir`` (created if needed); returns the paths."""
        out = Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for fname, text in self.files.items():
            path = out / fname
            path.write_text(text)
            paths.append(path)
        return paths

    def to_dict(self) -> dict:
        return {"name": self.name, "model_hash": self.model_hash, "files": self.files,
                "cdef": self.cdef}

    @classmethod
    def from_dict(cls, data: Mapping) -> "GeneratedSource":
        return cls(name=data["name"], model_hash=data["model_hash"], files=dict(data["files"]),
                   cdef=data["cdef"])


class _Printer(C99CodePrinter):
    """C99 printer; integer powers up to 3 as products (exact and faster than pow); constants such
    as π as 17-digit literals (M_PI is not standard C99)."""

    def __init__(self):
        super().__init__({"math_macros": {}})

    def _print_Integer(self, expr):
        # beyond 32 bits an integer constant may not fit C's int: print it as a double
        if abs(int(expr)) > 2**31 - 1:
            return repr(float(expr))
        return super()._print_Integer(expr)

    def _print_NumberSymbol(self, expr):
        return self._print(sp.Float(expr.evalf(20), 17))

    _print_Pi = _print_Exp1 = _print_EulerGamma = _print_GoldenRatio = _print_Catalan = \
        _print_NumberSymbol

    def _print_Pow(self, expr):
        if expr.exp.is_Integer and 2 <= int(expr.exp) <= 3:
            base = self.parenthesize(expr.base, 100)
            return "*".join([base] * int(expr.exp))
        return super()._print_Pow(expr)


def _slot_map(model: Model, d: Derived) -> dict:
    """xreplace map from model symbols to C array slots."""
    n, m, npar = model.n, model.m, len(model.params)
    bases = {
        "x": sp.IndexedBase("x", shape=(n,)),
        "xd": sp.IndexedBase("xd", shape=(n,)),
        "xdd": sp.IndexedBase("xdd", shape=(n,)),
        "lam": sp.IndexedBase("lam", shape=(max(m, 1),)),
        "p": sp.IndexedBase("p", shape=(max(npar, 1),)),
    }
    mapping = {t: sp.Symbol("t")}
    for i in range(n):
        mapping[model.coords[i]] = bases["x"][i]
        mapping[model.velocities[i]] = bases["xd"][i]
        mapping[d.xdd[i]] = bases["xdd"][i]
    for i in range(m):
        mapping[d.lam[i]] = bases["lam"][i]
    for k, sym in enumerate(model.params):
        mapping[sym] = bases["p"][k]
    return mapping


def _print_kernel(name: str, inputs: list, outputs: list, mapping: dict, printer) -> dict:
    entries = []       # (target, expression)
    out_info = []
    for oname, mat in outputs:
        mat = sp.ImmutableMatrix(mat)
        rows, cols = mat.shape
        nonzero = 0
        for (i, j), e in sorted(mat.todok().items()):      # the non-zero entries, row-major
            if e != 0:
                entries.append((f"{oname}[{i * cols + j}]", e.xreplace(mapping)))
                nonzero += 1
        out_info.append({
            "name": oname, "rows": rows, "cols": cols, "size": rows * cols,
            "zero_fill": nonzero < rows * cols, "nnz": nonzero, "doc": _OUTPUT_DOC.get(oname, ""),
        })
    temporaries, assignments = [], []
    if entries:
        reps, reduced = sp.cse([e for _, e in entries], symbols=sp.numbered_symbols("w"),
                               order="none")
        try:
            temporaries = [(str(s), printer.doprint(v)) for s, v in reps]
            assignments = [(target, printer.doprint(v)) for (target, _), v in zip(entries, reduced)]
        except NotImplementedError as exc:      # sympy's PrintMethodNotImplementedError
            what = str(exc).splitlines()[0].rsplit(":", 1)[-1].strip()
            raise ModelError(f"the {name} kernel uses {what}, which has no C99 translation; "
                             "rewrite it with functions of <math.h> (sin, exp, sqrt, fabs, "
                             "floor, Piecewise, …)") from None
    signature = ", ".join([_INPUT_DECL[a] for a in inputs] + [f"double *{o['name']}" for o in out_info])
    return {"name": name, "inputs": inputs, "outputs": out_info, "signature": signature,
            "doc": _KERNEL_DOC[name], "temporaries": temporaries, "assignments": assignments}


def _main_settings(model: Model) -> dict:
    """The recommended settings of ``model`` as C literals for main.c (simulate's defaults)."""
    from .simulate import DEFAULT_METHOD, DEFAULT_SCHEME
    from .steppers.compiled import CONVERGENCE_RULE
    from .steppers import (DEFAULT_CONSTRAINT_TOL, DEFAULT_MAX_ITER, DEFAULT_RANK_TOL,
                           DEFAULT_TOL, parse_scheme)

    st = dict(model.settings or {})
    method = st.get("method", DEFAULT_METHOD)
    if method not in ("nullspace", "index3"):
        method = DEFAULT_METHOD
    sch = parse_scheme(st.get("scheme", DEFAULT_SCHEME))
    if method == "nullspace" and sch.is_hht:
        sch = parse_scheme(DEFAULT_SCHEME)

    def lit(v) -> str:
        return repr(float(v))
    return {
        "method": method, "method_code": "SG_NULLSPACE" if method == "nullspace" else "SG_INDEX3",
        "gamma": lit(sch.gamma), "beta": lit(sch.beta), "hht_alpha": lit(sch.alpha),
        "dt": lit(st.get("dt", 1e-3)), "t_end": lit(st.get("t_end", 1.0)),
        "tol": lit(st.get("tol", DEFAULT_TOL)), "constraint_tol": lit(DEFAULT_CONSTRAINT_TOL),
        "max_iter": int(st.get("max_iter", DEFAULT_MAX_ITER)),
        "rank_tol": lit(st.get("rank_tol", DEFAULT_RANK_TOL)),
        "x0": ", ".join(lit(v) for v in model.x0), "xd0": ", ".join(lit(v) for v in model.xd0),
        "convergence": CONVERGENCE_RULE,
    }


def _environment() -> jinja2.Environment:
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
    mapping = _slot_map(model, d)
    printer = _Printer()
    kernels = [_print_kernel(kname, inputs, outputs, mapping, printer)
               for kname, (inputs, outputs) in kernel_terms(d).items()]
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
        "output_cnames": [c_name(o) for o in model.output_names],
        "kernels": kernels,
        "has_potential": int(model.V is not None),
        "C_is_zero": int(next(o["nnz"] for k in kernels if k["name"] == "dynamics"
                              for o in k["outputs"] if o["name"] == "C") == 0),
    }
    env = _environment()
    declarations = env.get_template("declarations.h.j2").render(ctx).strip() + "\n"
    ctx["declarations"] = declarations
    files = {
        f"{prefix}.h": env.get_template("header.h.j2").render(ctx),
        f"{prefix}.c": env.get_template("source.c.j2").render(ctx),
        "README.md": env.get_template("README.md.j2").render(ctx),
    }
    for path in runtime_files():
        files[path.name] = path.read_text()
    files["main.c"] = env.get_template("main.c.j2").render({**ctx, **_main_settings(model)})
    src = GeneratedSource(name=prefix, model_hash=model.hash, files=files, cdef=declarations)
    if outdir is not None:
        src.write(outdir)
    return src
