"""symgen: symbolic constrained mechanisms → generated C → stable null-space Newmark simulation.

The pipeline, one stage a module:  Model → derive → generate → build → Kernels → simulate → Result.
"""
__version__ = "0.1.0"

from .model import Model, ModelError, coordinates, t  # noqa: F401
from .derive import Derived, derive  # noqa: F401
from .kernels import LambdifyKernels  # noqa: F401

# Later stages are imported lazily: `import symgen` stays cheap and needs no compiler.
_LAZY = {
    "generate": ("codegen", "generate"),
    "GeneratedSource": ("codegen", "GeneratedSource"),
    "build": ("build", "build"),
    "Kernels": ("build", "Kernels"),
    "BuildError": ("build", "BuildError"),
    "simulate": ("simulate", "simulate"),
    "suggest_step": ("simulate", "suggest_step"),
    "consistent_state": ("simulate", "consistent_state"),
    "Result": ("result", "Result"),
    "load_result": ("result", "load_result"),
    "load_model": ("loader", "load_model"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module 'symgen' has no attribute {name!r}")
