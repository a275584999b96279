"""`python -m symgen …` is the `symgen` command (Ctrl-C while the package is imported:
symgen/__init__.py; while the command's modules are: here)."""
import sys

try:
    from .cli import main
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
