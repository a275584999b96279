"""Sphinx configuration of the API reference: ``make docs`` or
``python -m sphinx -W -b html docs/api docs/_build/html`` (needs the ``docs`` extra)."""
from pathlib import Path

import symgen

ROOT = Path(__file__).resolve().parents[2]

project = "symgen"
author = "the symgen authors"
copyright = "the symgen authors"
version = release = symgen.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# one entry for parameters documented together ("x0, xd0:"), not a copy of the text for each
napoleon_use_param = False
autodoc_default_options = {"members": True, "undoc-members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = True

# the derivations and measurements the docstrings point to stay in docs/*.md; they are copied
# next to the pages, so that `method.md` links work wherever the HTML is opened
html_extra_path = sorted(str(p) for p in (ROOT / "docs").glob("*.md"))
html_theme = "alabaster"
exclude_patterns = ["_build"]
