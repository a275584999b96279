"""symgen: symbolic constrained mechanisms → generated C → stable null-space Newmark simulation.

The pipeline, one stage a module (docs/ARCHITECTURE.md):

    Model (model) → derive (derived) → generate (codegen) → build (jit) → Kernels (kernels)
    → simulate (run, steppers) → Result (result)

No module is named like one of the functions below: ``symgen.build`` is always the function.
"""
import sys as _sys

try:
    from .version import __version__  # noqa: E402,F401

    from .model import Model, ModelError, coordinates, t  # noqa: F401,E402
    from .symbols import Input, inputs  # noqa: F401,E402
    from .derived import Derived, derive  # noqa: F401,E402
    from .kernels import Kernels, LambdifyKernels  # noqa: F401,E402
    from .codegen import GeneratedSource, generate  # noqa: F401,E402
    from .jit import BuildError, build  # noqa: F401,E402
    from .settings import SimulationSettings  # noqa: F401,E402
    from .assembly import Assembly, AssemblyError, assemble, consistent_state  # noqa: F401,E402
    from .stability import suggest_step  # noqa: F401,E402
    from .run import simulate  # noqa: F401,E402
except KeyboardInterrupt:
    # Ctrl-C while `python -m symgen` imports the package (runpy sets sys.argv[0] to "-m" until
    # the module is found): the command's "interrupted", exit 130, not a traceback
    if _sys.argv[:1] == ["-m"]:
        print("interrupted", file=_sys.stderr)
        raise SystemExit(130) from None
    raise

# Later stages are imported lazily: `import symgen` stays cheap and needs no compiler.
_LAZY = {
    "Result": ("result", "Result"),
    "load_result": ("result", "load_result"),
    "load_model": ("loader", "load_model"),
    "sweep": ("study", "sweep"),        # the module is `study`: `symgen.sweep` stays the function
    "linearize": ("linear", "linearize"),
    "modes": ("linear", "modes"),
    "LinearSystem": ("linear", "LinearSystem"),
}

#: The public API, as the reference (docs/api) documents it.
__all__ = ["Model", "ModelError", "coordinates", "t", "derive", "Derived", "generate",
           "GeneratedSource", "build", "BuildError", "Kernels", "LambdifyKernels",
           "SimulationSettings", "simulate", "Result", "load_result", "assemble", "Assembly",
           "AssemblyError", "consistent_state", "suggest_step", "load_model", "sweep", "linearize",
           "modes", "LinearSystem"]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module 'symgen' has no attribute {name!r}")
