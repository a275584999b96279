"""Every command in README.md runs, in order, in a fresh folder, and prints what the README says.

Files the README shows (code blocks whose first line names them, e.g. ``# cart_pendulum.py`` or
``/* main.c: ... */``) are written first; every ``$ `` line of a console block is then run.  The
install and test commands are what ``.ci/run`` executes; ``symgen reproduce --quick`` is run by
tests/test_reproduce.py with exactly the README's arguments.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

README = Path(__file__).resolve().parent.parent / "README.md"
PNG = b"\x89PNG\r\n\x1a\n"
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
# the console commands covered elsewhere (see the module docstring)
DEMO = 'python -m pip install -e ".[plot]" && symgen simulate stiff_pendulum --plot stiff_pendulum.png'
TEST = 'python -m pip install -e ".[test,plot]" && python -m pytest -q'
ELSEWHERE = {
    DEMO: "the install is .ci/run's (a superset); the run is the main-job block's own command",
    TEST: ".ci/run",
    "symgen reproduce --quick --out reproduction": "tests/test_reproduce.py",
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
        if abs(x) < 1e-9 and abs(y) < 1e-9:
            continue
        if abs(x - y) > 2e-3 * max(abs(x), abs(y)):
            return False
    return True


@pytest.fixture(scope="module")
def bindir(tmp_path_factory):
    """`symgen` and `python` of this interpreter first on PATH."""
    d = tmp_path_factory.mktemp("bin")
    script = Path(sys.executable).parent / "symgen"
    wrapper = d / "symgen"
    if script.is_file():
        wrapper.symlink_to(script)
    else:
        wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m symgen.cli \"$@\"\n")
        wrapper.chmod(0o755)
    (d / "python").symlink_to(sys.executable)
    return d


def test_readme_lists_every_command_kind():
    cmds = [c for c, _, _ in commands_of(README.read_text())]
    for sub in ("show", "generate", "simulate", "plot", "stability", "reproduce"):
        assert any(c.startswith(f"symgen {sub}") for c in cmds) or \
            f"symgen {sub}" in README.read_text(), sub
    # the two set-up commands, and the main job again on its own with its output
    assert cmds[:2] == [DEMO, TEST]
    assert "symgen simulate stiff_pendulum --plot stiff_pendulum.png" in cmds


def test_every_readme_command_runs_as_documented(tmp_path, bindir):
    text = README.read_text()
    for name, body in files_of(text).items():
        (tmp_path / name).write_text(body)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    have_cc = shutil.which("cc") is not None
    ran = 0
    for cmd, code, expected in commands_of(text):
        if cmd in ELSEWHERE:
            continue
        if not have_cc and (cmd.startswith("cc ") or cmd.startswith("./")):
            continue
        proc = subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, capture_output=True,
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
    assert ran >= 8
    # what the commands promise to leave behind
    for png in ("stiff_pendulum.png", "classical_reactions.png"):
        assert (tmp_path / png).read_bytes()[:8] == PNG
    assert (tmp_path / "classical.npz").is_file() and (tmp_path / "cart.csv").is_file()
    assert (tmp_path / "generated" / "stiff_pendulum" / "stiff_pendulum.h").is_file()


def test_commands_run_elsewhere_are_run_there():
    here = Path(__file__).resolve().parent
    ci = (here.parent / ".ci" / "run").read_text()
    assert TEST in ci.splitlines()                   # exactly the README's test command
    make = (here.parent / "Makefile").read_text()
    assert f"\t{DEMO}" in make and f"\t{TEST}" in make
    repro = (here / "test_reproduce.py").read_text()
    assert '"reproduce", "--quick", "--out", "reproduction"' in repro
