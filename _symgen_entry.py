"""The ``symgen`` console command's entry point, outside the package on purpose: importing symgen
(sympy, numpy; about a second) then happens inside :func:`main`, so Ctrl-C during the imports
prints ``interrupted`` and exits 130, as Ctrl-C later does (``symgen.cli.main``), instead of a
Python traceback.  ``python -m symgen`` gets the same from ``symgen/__init__.py``."""
import sys

EXIT_SIGINT = 128 + 2


def main() -> int:
    try:
        from symgen.cli import main as cli_main
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_SIGINT
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
