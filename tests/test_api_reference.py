"""The API reference (docs/api, issue 25 §8): every public name has a docstring and an entry, every
entry names something that exists, the configuration loads; with Sphinx installed (the ``docs``
extra), the reference builds without a warning."""
import inspect
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

import symgen
import symgen.mechanics

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
#: autodoc's and the Python domain's directives, by the full name they document
DIRECTIVE = re.compile(r"^\.\. (?:auto(?:function|class|exception|data|module)|py:data)::\s+(\S+)",
                       re.M)


def _documented() -> set[str]:
    return {m for page in API.glob("*.rst") for m in DIRECTIVE.findall(page.read_text("utf-8"))}


def _public():
    """(full name, object) of every name in symgen.__all__ and symgen.mechanics.__all__."""
    for module in (symgen, symgen.mechanics):
        for name in module.__all__:
            yield f"{module.__name__}.{name}", getattr(module, name)


def test_all_lists_the_public_api():
    names = set(symgen.__all__)
    assert len(names) == len(symgen.__all__)
    assert set(symgen._LAZY) <= names                       # Result, sweep, linearize, …
    public = {n for n, v in vars(symgen).items() if not n.startswith("_")
              and not inspect.ismodule(v)}
    assert public - names == set()


def test_every_public_name_has_its_own_docstring_and_an_entry():
    documented = _documented()
    missing = [full for full, _ in _public() if full not in documented]
    assert not missing, f"not in docs/api/*.rst: {missing}"
    undocumented = []
    for full, obj in _public():
        if inspect.isclass(obj):
            doc = vars(obj).get("__doc__")                 # its own, not a base class's
        elif inspect.isroutine(obj):
            doc = obj.__doc__
        else:
            continue                                       # data (t, GROUND): a py:data text
        if not (doc or "").strip():
            undocumented.append(full)
    assert not undocumented, f"no docstring: {undocumented}"


def test_every_entry_names_something_that_exists():
    import importlib

    for full in sorted(_documented()):
        module, _, attr = full.rpartition(".")
        try:
            found = importlib.import_module(full)
        except ImportError:
            found = getattr(importlib.import_module(module), attr, None)
        assert found is not None, f"docs/api names {full}, which does not exist"


def test_data_entries_have_a_text():
    """Data (``symgen.t``, ``GROUND``) has no docstring of its own: its entry carries the text."""
    for page in API.glob("*.rst"):
        text = page.read_text("utf-8")
        entries = re.findall(r"^\.\. py:data:: (\S+)$", text, re.M)
        described = re.findall(r"^\.\. py:data:: (\S+)\n\n {3}\S", text, re.M)
        assert entries == described, page.name


def test_the_configuration_loads_and_its_links_exist():
    conf = runpy.run_path(str(API / "conf.py"))
    assert "sphinx.ext.autodoc" in conf["extensions"] and "sphinx.ext.napoleon" in conf["extensions"]
    assert conf["release"] == symgen.__version__
    extra = {Path(p).name for p in conf["html_extra_path"]}
    for page in API.glob("*.rst"):
        for target in re.findall(r"<([\w.-]+\.md)>`_", page.read_text("utf-8")):
            assert target in extra, f"{page.name} links {target}, not copied next to the pages"


def test_the_reference_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(API),
                           str(tmp_path / "html")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ""
    html = (tmp_path / "html" / "simulation.html").read_text("utf-8")
    assert 'id="symgen.simulate"' in html and 'id="symgen.Result.reactions"' in html
