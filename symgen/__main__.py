"""The ``symgen`` command's entry point, for the console script (``symgen.__main__:main``) and
``python -m symgen`` alike: the command's modules (and, through them, numpy and sympy) are
imported inside :func:`main`, so Ctrl-C during the imports is ``interrupted``, exit 130, as it is
later (``symgen.cli.main``), not a traceback.  ``import symgen`` itself imports nothing heavy."""
import sys

EXIT_SIGINT = 128 + 2


def main() -> int:
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_SIGINT
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
