"""The layout docs/ARCHITECTURE.md describes: no import cycle, no module named like a public function
of symgen, every module listed with the symgen modules it may import (lazy imports included)."""
import ast
import inspect
import re
from pathlib import Path

import symgen

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "symgen"


def _modules() -> dict[str, Path]:
    """Dotted name (``symgen.codegen.table``; a package is its ``__init__``) → file."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules) -> set[str]:
    """The symgen modules ``name`` imports anywhere in its file (module level or inside functions).
    ``from . import x`` names the submodule x when there is one, else the package."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "symgen")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module and node.module.split(".")[0] == "symgen":
                    base = node.module
                else:
                    continue
            else:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    found.discard(name)
    # "symgen.examples" is the shipped examples folder (a package only in the wheel)
    return {m for m in found if m in modules or m == "symgen.examples"}


def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_no_module_named_like_a_public_function():
    functions = {n for n in symgen.__all__                 # imported on first use
                 if not n.startswith("_") and inspect.isfunction(getattr(symgen, n))}
    assert {"build", "simulate", "derive", "generate"} <= functions
    clashes = sorted(f"symgen.{n}" for n in functions if f"symgen.{n}" in _modules())
    assert not clashes, f"modules named like a public function of symgen: {clashes}"


def _documented() -> dict[str, set[str]]:
    """docs/ARCHITECTURE.md's module table: module → the symgen modules it may import."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| `(symgen/[\w/]+\.py)` \|[^|]+\| ([^|]+) \|$", line)
        if not m:
            continue
        parts = list(Path(m.group(1)).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        allowed = {w.strip() for w in m.group(2).split(",") if w.strip() not in ("", "—")}
        rows[".".join(parts)] = {"symgen" if a == "symgen" else f"symgen.{a}" for a in allowed}
    return rows


def test_architecture_lists_every_module_and_only_existing_ones():
    documented, modules = _documented(), _modules()
    assert documented, "no module table found in docs/ARCHITECTURE.md"
    missing = sorted(set(modules) - set(documented))
    stale = sorted(set(documented) - set(modules))
    assert not missing, f"modules not in docs/ARCHITECTURE.md: {missing}"
    assert not stale, f"docs/ARCHITECTURE.md lists modules that do not exist: {stale}"


def test_modules_import_only_what_the_architecture_allows():
    documented = _documented()
    wrong = []
    for name, deps in _graph().items():
        allowed = documented.get(name, set())
        for dep in deps:
            # "steppers" allows the package and every module in it
            if not any(dep == a or dep.startswith(a + ".") for a in allowed):
                wrong.append(f"{name} imports {dep}")
    assert not wrong, "imports docs/ARCHITECTURE.md does not allow: " + "; ".join(sorted(wrong))


#: "About 500 lines" a module and "about 100" a function (issue 9), with a tenth of slack.  A
#: function's length is its code: its docstring is not counted (a parameter per entry is asked for;
#: simulate's is 68 lines).
MODULE_LINES, FUNCTION_LINES = 550, 110
#: The functions allowed to be longer, each with why (an entry goes when its function is split,
#: and the test says when one is stale).
LONG_FUNCTIONS = {}


def _function_lengths(name: str, src: str) -> dict[str, int]:
    """Qualified name (``symgen.fixed_step.run_fixed``, ``symgen.model.Model.__init__``) → lines
    of code of every function in ``src`` (from its first statement after the docstring to its
    end)."""
    out = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    body = child.body[1:] if ast.get_docstring(child) is not None else child.body
                    out[qual] = child.end_lineno - body[0].lineno + 1 if body else 1
                visit(child, qual)
    visit(ast.parse(src), name)
    return out


def test_function_lengths_count_code_not_docstrings():
    src = 'def f():\n    """Doc.\n\n    more doc\n    """\n    a = 1\n    return a\n\n' \
          'class C:\n    def g(self):\n        return 1\n'
    assert _function_lengths("m", src) == {"m.f": 2, "m.C.g": 1}


def test_modules_and_functions_stay_readable_in_one_sitting():
    too_long, lengths = [], {}
    for name, path in _modules().items():
        src = path.read_text(encoding="utf-8")
        if len(src.splitlines()) > MODULE_LINES:
            too_long.append(f"{name}: {len(src.splitlines())} lines")
        lengths.update(_function_lengths(name, src))
    too_long += [f"{f}: {size} lines" for f, size in sorted(lengths.items())
                 if size > FUNCTION_LINES and f not in LONG_FUNCTIONS]
    assert not too_long, "too long to read in one sitting: " + "; ".join(too_long)
    stale = [f for f in LONG_FUNCTIONS if lengths.get(f, 0) <= FUNCTION_LINES]
    assert not stale, f"LONG_FUNCTIONS lists functions that are gone or short now: {stale}"


RUNTIME = ROOT / "templates" / "runtime"
#: C runtime files allowed over MODULE_LINES, with the reason
C_LONG_FILES = {"symgen_sparse.c": "the sparse step's LU and null space (issue 14), one "
                                   "algorithm; its split is still to do (issue 26)"}


def _c_functions(text: str) -> list[tuple[str, int]]:
    """(name, lines) of each function definition of a runtime file: from the line with its name to
    its closing brace (the runtime's style puts a definition's braces at column 0)."""
    lines, out, start = text.splitlines(), [], None
    for i, line in enumerate(lines):
        if line == "{" and start is None:
            j = i - 1
            while j > 0 and not re.match(r"^[A-Za-z_].*\(", lines[j]):
                j -= 1
            start = (re.search(r"([A-Za-z_]\w*)\s*\(", lines[j]).group(1), j)
        elif line == "}" and start is not None:
            out.append((start[0], i - start[1] + 1))
            start = None
    return out


def test_c_function_lengths_are_measured():
    text = "static int f(int a,\n              int b)\n{\n    return a + b;\n}\n"
    assert _c_functions(text) == [("f", 5)]


def test_c_runtime_files_and_functions_stay_readable_in_one_sitting():
    too_long = []
    for path in sorted([*RUNTIME.glob("*.[ch]"), *RUNTIME.glob("*.c.inc")]):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MODULE_LINES and path.name not in C_LONG_FILES:
            too_long.append(f"{path.name}: {len(text.splitlines())} lines")
        too_long += [f"{path.name} {name}: {size} lines" for name, size in _c_functions(text)
                     if size > FUNCTION_LINES]
    assert not too_long, "too long to read in one sitting: " + "; ".join(too_long)
