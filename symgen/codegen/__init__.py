"""Code generation: the derived terms → standalone C99 (the ABI table, the printer, the templates).

* :mod:`.table` — which kernels exist, their inputs and outputs in ABI order (the C layout);
* :mod:`.printer` — sympy → C99 after one ``cse`` per kernel, symbols → array slots;
* :mod:`.render` — the templates filled in: :func:`generate` → :class:`GeneratedSource`.
"""
from .render import (RUNTIME_FILES, GeneratedSource, generate, generator_fingerprint,
                     runtime_files, runtime_sources, template_dir)
from .table import kernel_terms

__all__ = ["generate", "GeneratedSource", "template_dir", "generator_fingerprint", "kernel_terms",
           "RUNTIME_FILES", "runtime_files", "runtime_sources"]
