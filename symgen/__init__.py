"""symgen: symbolic constrained mechanisms → generated C → stable null-space Newmark simulation.

The pipeline, one stage a module (docs/ARCHITECTURE.md):

    Model (model) → derive (derived) → generate (codegen) → build (jit) → Kernels (kernels)
    → simulate (run, steppers) → Result (result)

No module is named like one of the functions below: ``symgen.build`` is always the function.
Every name is imported on first use: ``import symgen`` imports no sympy or numpy (so the
``symgen`` command's ``main`` catches a Ctrl-C during those imports) and needs no compiler.
"""
import importlib

from .version import __version__  # noqa: F401

#: public name → (module, attribute)
_LAZY = {
    "Model": ("model", "Model"), "ModelError": ("model", "ModelError"),
    "coordinates": ("model", "coordinates"), "t": ("model", "t"),
    "Input": ("symbols", "Input"), "inputs": ("symbols", "inputs"),
    "Derived": ("derived", "Derived"), "derive": ("derived", "derive"),
    "Kernels": ("kernels", "Kernels"), "LambdifyKernels": ("kernels", "LambdifyKernels"),
    "GeneratedSource": ("codegen", "GeneratedSource"), "generate": ("codegen", "generate"),
    "BuildError": ("jit", "BuildError"), "build": ("jit", "build"),
    "SimulationSettings": ("settings", "SimulationSettings"),
    "Assembly": ("assembly", "Assembly"), "AssemblyError": ("assembly", "AssemblyError"),
    "assemble": ("assembly", "assemble"), "consistent_state": ("assembly", "consistent_state"),
    "suggest_step": ("stability", "suggest_step"),
    "simulate": ("run", "simulate"),
    "Result": ("result", "Result"), "load_result": ("result", "load_result"),
    "load_model": ("loader", "load_model"),
    "sweep": ("study", "sweep"),        # the module is `study`: `symgen.sweep` stays the function
    "linearize": ("linear", "linearize"), "modes": ("linear", "modes"),
    "LinearSystem": ("linear", "LinearSystem"),
    "equilibrium": ("statics", "equilibrium"), "Equilibrium": ("statics", "Equilibrium"),
    "export_fmu": ("fmu", "export_fmu"),
}
#: The public API, as the reference (docs/api) documents it.
__all__ = list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    if not name.startswith("__"):         # a submodule not imported yet: symgen.steppers, …
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'symgen' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
