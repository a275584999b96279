"""The wheel carries the templates (and the examples), and an installed symgen finds them."""
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    # build from a copy: setuptools leaves build/ behind, which must not land in the checkout
    src = tmp_path_factory.mktemp("src") / "symgen"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "generated"))
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out),
         str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (whl,) = out.glob("symgen-*.whl")
    return whl


def test_wheel_contains_templates_and_examples(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for tpl in (ROOT / "templates").glob("*.j2"):
        assert f"symgen/templates/{tpl.name}" in names
    for tpl in (ROOT / "templates" / "fmu").iterdir():        # symgen fmu's
        assert f"symgen/templates/fmu/{tpl.name}" in names
    assert "symgen/examples/__init__.py" in names
    (ep,) = [n for n in names if n.startswith("symgen-") and n.endswith("entry_points.txt")]
    # no top-level module besides the package: the console script is symgen.__main__:main
    assert {n.split("/")[0] for n in names if not n.startswith("symgen-")} == {"symgen"}
    assert "symgen = symgen.__main__:main" in zipfile.ZipFile(wheel).read(ep).decode()


def test_installed_wheel_generates_c_from_elsewhere(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True)
    if proc.returncode != 0:      # pip older than 22.3 has no --python
        proc = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index",
                               str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    script = (
        "import symgen, sympy as sp, pathlib\n"
        "from symgen.codegen import template_dir\n"
        "(x,), _ = symgen.coordinates('x')\n"
        "m = symgen.Model('spring', [x], [[1]], [-x])\n"
        "src = symgen.generate(m, 'out')\n"
        "print(symgen.__file__)\n"
        "print(template_dir())\n"
        "print(sorted(p.name for p in pathlib.Path('out').iterdir()))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([str(py), "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         env=env)
    assert run.returncode == 0, run.stderr
    module_file, tdir, files = run.stdout.strip().splitlines()
    assert str(env_dir) in module_file               # the installed copy, not the checkout
    assert Path(tdir) == Path(module_file).parent / "templates"
    from symgen.codegen import RUNTIME_FILES

    assert files == str(sorted(["README.md", "main.c", "spring.c", "spring.h", *RUNTIME_FILES]))
