"""Find a model by name or path: what ``symgen <command> MODEL`` and :func:`symgen.load_model` do.

``MODEL`` is either

* the name of a shipped example (``stiff_pendulum``): the file ``examples/<name>.py`` of a source
  checkout, or the module ``symgen.examples.<name>`` of an installed wheel (the wheel maps the
  top-level ``examples/`` folder to that subpackage); or
* a path to a Python file that defines ``model(**kwargs) -> symgen.Model``.

Every failure raises :class:`LoadError` (a :class:`symgen.ModelError`) whose message says what
went wrong in one line: an unknown name (listing the known examples), a missing file, a file
without ``model()``, an exception inside the file, a call of ``sys.exit()`` while importing it
or inside ``model()`` (which would otherwise end symgen silently), or ``model()`` not returning a
Model.  Ctrl-C (KeyboardInterrupt) is not caught.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import numbers
import os
import stat
import sys
from pathlib import Path
from types import ModuleType

from .model import Model, ModelError

__all__ = ["load_model", "load_module", "model_of", "known_examples", "examples_dir", "model_options",
           "integer_option", "LoadError"]


class LoadError(ModelError):
    """A model that could not be found or loaded; the message says why, in one line."""


def examples_dir() -> Path | None:
    """The folder holding the shipped examples, or None when there is none.

    The ``symgen.examples`` subpackage (an editable install maps it to the checkout's top-level
    ``examples/``); failing that, the ``examples/`` folder next to this package in a checkout.
    """
    try:
        spec = importlib.util.find_spec("symgen.examples")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            if Path(loc).is_dir():
                return Path(loc)
    # a source checkout used without installing: <repo>/symgen/.. holds examples/ and pyproject
    repo = Path(__file__).resolve().parent.parent
    if (repo / "examples" / "__init__.py").is_file() and (repo / "pyproject.toml").is_file():
        return repo / "examples"
    return None


def known_examples() -> list[str]:
    """Names of the shipped examples (files ``<name>.py`` defining ``model``), sorted."""
    folder = examples_dir()
    if folder is None:
        return []
    names = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if "def model(" in text:
            names.append(path.stem)
    return names


def _looks_like_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec or spec.startswith(".")


def _resolve(spec) -> tuple[Path, str]:
    """(file, module name) for a model spec; raises LoadError."""
    if isinstance(spec, Path) or _looks_like_path(str(spec)):
        path = Path(spec).expanduser()
        if not path.exists():
            raise LoadError(f"model file not found: {path}")
        if path.is_dir():
            raise LoadError(f"{path} is a directory; give a Python file that defines model()")
        if path.suffix != ".py":
            raise LoadError(f"model file {path} is not a Python (.py) file")
        path = path.resolve()
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
        return path, f"symgen_user_model_{path.stem}_{digest}"
    name = str(spec)
    folder = examples_dir()
    if folder is not None and name.isidentifier():
        path = folder / f"{name}.py"
        if path.is_file():
            return path.resolve(), f"symgen.examples.{name}"
    known = known_examples()
    listing = ", ".join(known) if known else "none found"
    raise LoadError(f"unknown model {name!r}: not a shipped example (known: {listing}) "
                    "and not a .py file")


def load_module(spec) -> ModuleType:
    """Import the example or file named by ``spec`` and return the module (not yet calling model).

    The module is reused while the file's content is unchanged and imported again when it has
    changed (an edit made in the same session takes effect).  The source is compiled from the
    file every time it changes, never from a cached ``.pyc`` (whose check, by modification time in
    whole seconds and size, misses an edit of the same length within the same second).
    """
    path, modname = _resolve(spec)
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise LoadError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    digest = hashlib.sha256(source).hexdigest()
    existing = sys.modules.get(modname)
    if (existing is not None
            and Path(getattr(existing, "__file__", "") or "").resolve() == path
            and getattr(existing, "__symgen_source_digest__", None) == digest):
        module = existing
    else:
        if modname.startswith("symgen.examples."):
            # make the parent package importable so examples can import their siblings
            try:
                import symgen.examples  # noqa: F401
            except ImportError:
                pass
        ispec = importlib.util.spec_from_file_location(modname, path)
        if ispec is None or ispec.loader is None:
            raise LoadError(f"cannot import {path} as a Python module")
        module = importlib.util.module_from_spec(ispec)
        module.__symgen_source_digest__ = digest
        sys.modules[modname] = module
        try:
            code = compile(source, str(path), "exec", dont_inherit=True)
            with _importable(path, modname.startswith("symgen.examples.")):
                exec(code, module.__dict__)  # noqa: S102 - importing the user's model file
        except ModelError as exc:
            sys.modules.pop(modname, None)
            raise LoadError(f"{path.name}: {exc}") from exc
        except SyntaxError as exc:
            sys.modules.pop(modname, None)
            raise LoadError(f"{path.name}:{exc.lineno}: syntax error: {exc.msg}") from exc
        except Exception as exc:  # the user's file failed while importing
            sys.modules.pop(modname, None)
            hint = ""
            if isinstance(exc, ImportError) and not _private_folder(path.parent):
                hint = (f" ({path.parent} can be written by other users, so symgen does not "
                        "import the model file's neighbours from it)")
            raise LoadError(f"importing {path} failed: {type(exc).__name__}: {exc}{hint}") from exc
        except SystemExit as exc:  # sys.exit() would end symgen silently with the file's code
            sys.modules.pop(modname, None)
            raise LoadError(_exit_message(path, exc, "while loading")) from exc
    if not callable(getattr(module, "model", None)):
        raise LoadError(f"{path} does not define a function model() returning a symgen.Model")
    return module


@contextlib.contextmanager
def _importable(path: Path, shipped: bool):
    """A model file's folder first on ``sys.path`` while the file is imported and its model()
    runs, so that it can import its neighbours; taken out again afterwards.  Not for a shipped
    example (a package), nor for a folder that another user may write (group- or
    world-writable without the sticky bit, or owned by someone else): nothing is imported from a
    place another user can write."""
    folder = str(path.parent)
    if shipped or folder in sys.path or not _private_folder(path.parent):
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:
            pass


def _private_folder(folder: Path) -> bool:
    """Only this user (or root) can write ``folder``."""
    try:
        st = folder.stat()
    except OSError:
        return False
    owner_ok = st.st_uid in (os.getuid(), 0) if hasattr(os, "getuid") else True
    return owner_ok and not (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _exit_message(where, exc: SystemExit, when: str) -> str:
    """The one line for a model file that called ``sys.exit``/``exit()`` (Ctrl-C is let through)."""
    code = exc.code if exc.code is not None else 0
    return (f"model file {where} called sys.exit({code!r}) {when}; a model file must define "
            "model() and return a symgen.Model, not exit")


def integer_option(name: str, value, minimum: int | None = None) -> int:
    """``value`` as the int an integer option ``name`` of a ``model()`` needs (``N`` of n_four_bar).

    An int, or a float with an integral value (the command line reads ``N=3.0`` as a float), is
    accepted; anything else (``N=1.5``, which ``int()`` would silently make 1), a bool, or a value
    below ``minimum`` is a ValueError naming the option and the value.
    """
    at_least = f" ≥ {minimum}" if minimum is not None else ""
    bad = ValueError(f"option {name} must be an integer{at_least}, got {value!r}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise bad
    if isinstance(value, numbers.Integral):
        n = int(value)
    else:
        f = float(value)
        if not f.is_integer():
            raise bad
        n = int(f)
    if minimum is not None and n < minimum:
        raise bad
    return n


def _integer_options(func) -> set[str]:
    """The options of ``func`` annotated ``int`` (also as the string of postponed annotations)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.annotation is int or p.annotation == "int"}


def model_options(module: ModuleType) -> list[str]:
    """The keyword arguments ``module.model`` accepts by name (``N`` for ``n_four_bar``)."""
    try:
        sig = inspect.signature(module.model)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def model_of(result, model=None, *, hint: str = "give the model") -> Model:
    """The model that made ``result``: ``model`` when given, else the shipped example the result
    names, built with the ``model()`` options it was run with; its hash must be the result's.
    :class:`LoadError` naming what is missing (``hint``: how to give the model)."""
    meta = getattr(result, "meta", None) or {}
    if model is None:
        name = meta.get("model")
        if not name or name not in known_examples():
            raise LoadError(f"the result does not name a shipped example (model {name!r}); {hint}")
        model = load_model(name, **(meta.get("model_options") or {}))
    want = meta.get("model_hash")
    if want and model.hash != want:
        raise LoadError(f"model {model.name!r} is not the one that made the result (hash "
                        f"{model.hash[:12]} ≠ {str(want)[:12]}); {hint} and its options")
    return model


def load_model(spec, **kwargs) -> Model:
    """The :class:`symgen.Model` of a shipped example name or a ``.py`` file: ``model(**kwargs)``.

    >>> load_model("stiff_pendulum")                      # doctest: +SKIP
    >>> load_model("path/to/my_mechanism.py", N=3)        # doctest: +SKIP
    """
    module = load_module(spec)
    where = getattr(module, "__file__", str(spec))
    if kwargs:
        opts = model_options(module)
        sig_has_var_kw = False
        try:
            sig_has_var_kw = any(p.kind is p.VAR_KEYWORD
                                 for p in inspect.signature(module.model).parameters.values())
        except (TypeError, ValueError):
            pass
        unknown = [k for k in kwargs if k not in opts]
        if unknown and not sig_has_var_kw:
            raise LoadError(f"model() in {where} has no option(s) {unknown}; "
                            f"it accepts {opts if opts else 'no options'}")
        kwargs = dict(kwargs)
        for name in _integer_options(module.model) & kwargs.keys():
            try:
                kwargs[name] = integer_option(name, kwargs[name])
            except ValueError as exc:
                raise LoadError(f"model() in {Path(where).name}: {exc}") from None
    try:
        with _importable(Path(where), getattr(module, "__name__", "").startswith("symgen.examples.")):
            mdl = module.model(**kwargs)
    except ModelError as exc:
        raise LoadError(f"{Path(where).name}: {exc}") from exc
    except Exception as exc:
        raise LoadError(f"model() in {where} failed: {type(exc).__name__}: {exc}") from exc
    except SystemExit as exc:
        raise LoadError(_exit_message(where, exc, "in model()")) from exc
    if not isinstance(mdl, Model):
        raise LoadError(f"model() in {where} returned {type(mdl).__name__}, not a symgen.Model")
    return mdl
