"""Every command in README.md and in the docs/ pages with console examples (PAGES) runs, in
order, in a fresh folder for each page, and prints what the page says.

Files a page shows (code blocks whose first line names them, e.g. ``# cart_pendulum.py`` or
``/* main.c: ... */``) are written first; every ``$ `` line of its console blocks is then run.
The install and test commands are what ``.ci/run`` executes; ``symgen reproduce --quick``
(docs/reproduce.md) is run by tests/test_reproduce.py with exactly the page's arguments.
"""
import importlib.util
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PNG = b"\x89PNG\r\n\x1a\n"
ROUND_OFF = 1e-9     # below this a printed figure is compared by its decade only
TINY = 1e-300
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
# the console commands covered elsewhere (see the module docstring)
DEMO = 'python -m pip install -e ".[plot]" && symgen simulate stiff_pendulum --plot stiff_pendulum.png'
TEST = ('python -m pip install -e ".[test,plot]" && python -m pytest -q -n auto --dist loadfile'
        ' && OPENBLAS_CORETYPE=Prescott python -m pytest -q -n auto --dist loadfile -m roundoff')
ELSEWHERE = {
    DEMO: "the install is .ci/run's (a superset); the run is the main-job block's own command",
    TEST: ".ci/run",
    "symgen reproduce --quick --out reproduction": "tests/test_reproduce.py",
}


class Page(NamedTuple):
    """A page with console examples: how many of its commands run here at least, the files they
    leave behind, and the models of its later commands that conftest.py's warm_build compiles
    while the commands before them run (model files the page shows, shipped examples)."""
    runs: int
    leaves: tuple
    warm: tuple = ()


#: every page (relative to the repository's top folder) whose console examples are checked here
PAGES = {
    "README.md": Page(4, ("stiff_pendulum.png", "classical_reactions.png", "classical.npz"),
                      warm=("my_pendulum.py",)),
    "docs/guide.md": Page(7, ("cart_pendulum.png", "cart.csv", "sympy_pendulum.npz",
                              "slider_crank_3d.npz"),
                          warm=("sympy_pendulum.py", "slider_crank_3d", "sympy_four_bar",
                                "double_four_bar", "double_pendulum")),
    "docs/generated-c.md": Page(3, ("generated/stiff_pendulum/stiff_pendulum.h", "main")),
    "docs/fmu.md": Page(1, ("stiff_pendulum.fmu",)),
    "docs/reproduce.md": Page(0, ()),            # its one command is run by test_reproduce.py
    "docs/events.md": Page(3, ("stop.npz", "slider_crank_stop.png", "stop.gif"),
                           warm=("slider_crank_stop",)),
}


def blocks(text):
    return re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)


def files_of(text):
    out = {}
    for lang, body in blocks(text):
        first = body.splitlines()[0] if body.strip() else ""
        m = re.match(r"^(?:#|/\*)\s*([\w.]+\.(?:py|c))\b", first)
        if m and lang in ("python", "c"):
            out[m.group(1)] = body
    return out


def commands_of(text):
    """[(command, expected exit code, expected output lines)] of every console block."""
    cmds = []
    for lang, body in blocks(text):
        if lang != "console":
            continue
        for line in body.splitlines():
            if line.startswith("$ "):
                cmd = line[2:]
                code = 0
                m = re.search(r"#\s*exit code (\d+)\s*$", cmd)
                if m:
                    code = int(m.group(1))
                    cmd = cmd[:m.start()].rstrip()
                cmds.append([cmd, code, []])
            elif cmds:
                cmds[-1][2].append(line)
    return cmds


def same_line(expected: str, actual: str) -> bool:
    """Equal text, and numbers equal to the printed precision (round-off values both tiny)."""
    if NUMBER.sub("#", expected).rstrip() != NUMBER.sub("#", actual).rstrip():
        return False
    for a, b in zip(NUMBER.findall(expected), NUMBER.findall(actual)):
        if re.fullmatch(r"[-+]?\d+", a) and re.fullmatch(r"[-+]?\d+", b):
            if int(a) != int(b):            # counts (steps, iterations, files) are exact
                return False
            continue
        x, y = float(a), float(b)
        if min(abs(x), abs(y)) < ROUND_OFF:
            # Round-off figures: their digits depend on the machine (FMA, BLAS summation order),
            # their order of magnitude does not.  Both must agree within one decade, so a README
            # that says 1e-16 fails against a run that gives 1e-10 (or 1e-5, or 0).
            if abs(math.log10(max(abs(x), TINY)) - math.log10(max(abs(y), TINY))) > 1.0:
                return False
            continue
        if abs(x - y) > 2e-3 * max(abs(x), abs(y)):
            return False
    return True


@pytest.fixture(scope="module")
def bindir(tmp_path_factory):
    """`symgen` and `python` of this interpreter first on PATH.

    Both are small shell scripts that exec this interpreter by its own path: a venv's interpreter
    finds its ``pyvenv.cfg`` (and so its site-packages) only when started from the venv's bin
    folder, so a symlink to it in another folder would run the base interpreter without symgen.
    This holds for a symlinked venv, a ``--copies`` venv and the system interpreter alike."""
    d = tmp_path_factory.mktemp("bin")
    exe = shlex.quote(sys.executable)
    for name, body in (("python", f'exec {exe} "$@"'),
                       ("symgen", f'exec {exe} -m symgen.cli "$@"')):
        (d / name).write_text(f"#!/bin/sh\n{body}\n")
        (d / name).chmod(0o755)
    return d


def test_bindir_runs_this_interpreter_with_symgen(bindir):
    """The `python` and `symgen` the README commands find are this interpreter's (with symgen)."""
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run("python -c 'import sys, symgen; print(sys.prefix)' && symgen --help",
                          shell=True, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == sys.prefix


def test_readme_lists_every_command_kind():
    texts = [(ROOT / page).read_text() for page in PAGES] + [(DOCS / "cli.md").read_text()]
    cmds = [c for text in texts for c, _, _ in commands_of(text)]
    for sub in ("show", "generate", "simulate", "plot", "stability", "reproduce", "export",
                "modes"):
        assert any(c.startswith(f"symgen {sub}") for c in cmds) or \
            any(f"symgen {sub}" in text for text in texts), sub
    # the two set-up commands, and the main job again on its own with its output
    readme = [c for c, _, _ in commands_of(README.read_text())]
    assert readme[:2] == [DEMO, TEST]
    assert "symgen simulate stiff_pendulum --plot stiff_pendulum.png" in readme


def test_every_page_with_console_examples_is_checked():
    """A console example moved into a page of docs/ stays run: every page that has one is in
    PAGES, and every command of a page either runs here or is one of those run ELSEWHERE."""
    pages = ["README.md"] + [f"docs/{p.relative_to(DOCS)}" for p in sorted(DOCS.rglob("*.md"))]
    with_console = {page for page in pages if commands_of((ROOT / page).read_text())}
    assert with_console == set(PAGES)
    for page, spec in PAGES.items():
        cmds = [c for c, _, _ in commands_of((ROOT / page).read_text())]
        assert len([c for c in cmds if c not in ELSEWHERE]) >= spec.runs, page
    everywhere = [c for page in PAGES for c, _, _ in commands_of((ROOT / page).read_text())]
    assert set(ELSEWHERE) <= set(everywhere)


def test_the_maps_name_every_page_of_docs():
    """README's map and docs/index.md link every page of docs/ (and the API reference)."""
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md") + ["api/"]
    readme, index = README.read_text(), (DOCS / "index.md").read_text()
    for page in pages:
        assert f"](docs/{page}" in readme, f"README's map does not link docs/{page}"
        assert f"]({page}" in index, f"docs/index.md does not link {page}"
    assert "](docs/index.md)" in readme


def _has_matplotlib() -> bool:
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except ImportError:
        return False


@pytest.mark.skipif(not _has_matplotlib(), reason="the pages' commands draw plots: matplotlib "
                                                  "is not installed (pip install -e '.[plot]')")
@pytest.mark.parametrize("page", list(PAGES))
def test_every_command_runs_as_documented(page, tmp_path, bindir, warm_build):
    spec = PAGES[page]
    text = (ROOT / page).read_text()
    for name, body in files_of(text).items():
        (tmp_path / name).write_text(body)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    if shutil.which("cc") is None:
        # symgen itself compiles through cffi, and the pages compile main.c with `cc`: without
        # a C compiler they cannot run as documented, so say so instead of skipping lines
        pytest.skip(f"no C compiler `cc` on PATH: the commands of {page} need one")
    # the models of the later commands are compiled meanwhile into the same cache, by one other
    # process (the commands themselves run in order and find them built, or wait for the build)
    warm = warm_build(*(tmp_path / f if f.endswith(".py") else f for f in spec.warm)) \
        if spec.warm else None
    assert _run_commands(text, tmp_path, env) >= spec.runs
    if warm is not None:
        warm.wait(timeout=300)                  # (done by now: its models were needed)
    # what the commands promise to leave behind
    for name in spec.leaves:
        assert (tmp_path / name).is_file(), (page, name)
        if name.endswith(".png"):
            assert (tmp_path / name).read_bytes()[:8] == PNG, (page, name)


def _run_commands(text, cwd, env) -> int:
    """Run every console command of a page not run ELSEWHERE, in order, in ``cwd``; check its
    exit code and output lines; return how many ran."""
    ran = 0
    for cmd, code, expected in commands_of(text):
        if cmd in ELSEWHERE:
            continue
        proc = subprocess.run(cmd, shell=True, cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == code, (cmd, proc.returncode, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, (cmd, proc.stderr)
        actual = proc.stdout.splitlines()
        for i, line in enumerate(expected):
            if line.strip() in ("...", "") or "wall time" in line:
                continue
            assert i < len(actual), (cmd, "missing line", line, proc.stdout)
            assert same_line(line, actual[i]), (cmd, line, actual[i])
        ran += 1
    return ran


def test_commands_run_elsewhere_are_run_there():
    here = Path(__file__).resolve().parent
    ci = (here.parent / ".ci" / "run").read_text()
    assert TEST in ci.splitlines()                   # exactly the README's test command
    make = (here.parent / "Makefile").read_text()
    assert f"\t{DEMO}" in make and f"\t{TEST}" in make
    assert TEST in (DOCS / "testing.md").read_text()
    repro = (here / "test_reproduce.py").read_text()
    assert '"reproduce", "--quick", "--out", "reproduction"' in repro


def test_same_line_compares_numbers_to_the_printed_precision_and_round_off_by_decade():
    assert same_line("  max ‖q‖         1.11e-16", "  max ‖q‖         3.4e-16")
    assert same_line("max ‖q‖ = 1.57e-16", "max ‖q‖ = 2.2e-17")
    assert not same_line("  max ‖q‖         1.11e-16", "  max ‖q‖         1.0e-10")
    assert not same_line("max ‖q‖ = 1e-16", "max ‖q‖ = 0")
    assert not same_line("max ‖q‖ = 1e-16", "max ‖q‖ = 2e-9")
    assert same_line("B0.x = 0.12345", "B0.x = 0.12346")
    assert not same_line("B0.x = 0.12345", "B0.x = 0.1240")
    assert not same_line("500 steps", "501 steps")
