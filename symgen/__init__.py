"""symgen: symbolic constrained mechanisms → generated C → stable null-space Newmark simulation.

The pipeline, one stage a module:  Model → derive → generate → build → Kernels → simulate → Result.
"""
__version__ = "0.1.0"

from .model import Model, ModelError, coordinates, t  # noqa: F401
from .derive import Derived, derive  # noqa: F401
from .kernels import LambdifyKernels  # noqa: F401

# `build` and `simulate` are both a module and a function: bind the functions eagerly, so that the
# package attribute is the function whatever is imported later.
from .build import BuildError, Kernels, build  # noqa: F401,E402
from .codegen import GeneratedSource, generate  # noqa: F401,E402

from .simulate import consistent_state, simulate, suggest_step  # noqa: F401,E402
from .assemble import Assembly, AssemblyError, assemble  # noqa: F401,E402

# Later stages are imported lazily: `import symgen` stays cheap and needs no compiler.
_LAZY = {
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
