"""`python -m symgen …` is the `symgen` command."""
import sys

from .cli import main

sys.exit(main())
