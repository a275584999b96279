"""The ``symgen`` command's entry point, for the console script (``symgen.__main__:main``) and
``python -m symgen`` alike: the command's modules (and, through them, numpy and sympy) are
imported inside :func:`main`, so Ctrl-C during the imports is ``interrupted``, exit 130, as it is
later (``symgen.cli.main``), not a traceback.  ``import symgen`` itself imports nothing heavy."""
import sys

EXIT_SIGINT = 128 + 2


def shadowing_folder() -> str | None:
    """The folder that Python took for the ``symgen`` package instead of the installed one (a
    folder named symgen without ``__init__.py``, in the current directory or on sys.path: a clone
    of symgen's sources, say), or None.  The package itself is then an empty namespace package,
    and every command would fail on a missing attribute far from the cause."""
    top = sys.modules.get("symgen")
    if top is None or getattr(top, "__file__", None):
        return None
    return ", ".join(str(p) for p in getattr(top, "__path__", [])) or "?"


def main() -> int:
    shadow = shadowing_folder()
    if shadow is not None:
        print(f"error: the folder {shadow} shadows the symgen package (Python imports a folder "
              "named symgen from the current directory or sys.path first); run symgen from "
              "another directory, or rename that folder", file=sys.stderr)
        return 2
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_SIGINT
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
