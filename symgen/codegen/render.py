"""Rendering: the printed kernels into the Jinja templates, giving ``<name>.h``, ``<name>.c`` and
``README.md`` (:func:`generate`), and the fingerprint of everything besides the model that shapes
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
from typing import Mapping

import jinja2
import sympy as sp

from .._io import atomic_write_text
from ..version import __version__
from .. import derived as _derived_module
from ..derived import Derived, derive
from ..model import Model, c_name
from .printer import Printer, print_kernel, slot_map
from .table import kernel_terms

__all__ = ["generate", "GeneratedSource", "template_dir", "generator_fingerprint"]


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


def generator_fingerprint() -> str:
    """Hash of everything besides the model that shapes the generated text."""
    h = hashlib.sha256(__version__.encode())
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):     # this package
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(Path(_derived_module.__file__).read_bytes())      # derive shapes every expression
    for path in sorted(template_dir().glob("*.j2")):
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


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def generate(model_or_derived: Model | Derived, outdir=None) -> GeneratedSource:
    """The standalone C99 source (``<name>.h``, ``<name>.c``, ``README.md``) of a model.

    With ``outdir`` the files are also written there.
    """
    d = model_or_derived if isinstance(model_or_derived, Derived) else derive(model_or_derived)
    model = d.model
    mapping = slot_map(model, d)
    printer = Printer()
    kernels = [print_kernel(kname, inputs, outputs, mapping, printer)
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
    }
    env = _environment()
    declarations = env.get_template("declarations.h.j2").render(ctx).strip() + "\n"
    ctx["declarations"] = declarations
    files = {
        f"{prefix}.h": env.get_template("header.h.j2").render(ctx),
        f"{prefix}.c": env.get_template("source.c.j2").render(ctx),
        "README.md": env.get_template("README.md.j2").render(ctx),
    }
    src = GeneratedSource(name=prefix, model_hash=model.hash, files=files, cdef=declarations)
    if outdir is not None:
        src.write(outdir)
    return src
