"""``python -m symgen.cli``: the ``symgen`` command (as ``python -m symgen``)."""
import sys

from . import main

sys.exit(main())
