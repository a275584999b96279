"""symgen.load_model: shipped example names, .py paths, and one-line errors for everything else."""
import textwrap

import pytest

import symgen
from symgen.loader import LoadError, examples_dir, known_examples, load_model

GOOD = """
import symgen

def model(L=1.0):
    (x,), (xd,) = symgen.coordinates("x")
    return symgen.Model("spring", [x], M=[[1]], f=[-x * L], x0=[0.1],
                        settings=dict(method="newmark", scheme="trapezoidal", dt=0.1, t_end=1))
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_shipped_example_by_name():
    mdl = load_model("stiff_pendulum")
    assert isinstance(mdl, symgen.Model)
    assert mdl.name == "stiff_pendulum"
    assert [c for c in mdl.coord_names if c.endswith(".theta")]
    assert "T0" in mdl.param_names


def test_public_alias_and_kwargs_reach_model():
    mdl = symgen.load_model("stiff_pendulum", T0=9.0)
    assert dict(zip(mdl.param_names, mdl.param_values))["T0"] == 9.0


def test_known_examples_are_listed_from_the_examples_folder():
    folder = examples_dir()
    assert folder is not None and (folder / "stiff_pendulum.py").is_file()
    names = known_examples()
    assert "stiff_pendulum" in names
    assert all(not n.startswith("_") for n in names)


def test_unknown_name_lists_known_examples():
    with pytest.raises(LoadError) as err:
        load_model("no_such_mechanism")
    msg = str(err.value)
    assert "no_such_mechanism" in msg and "stiff_pendulum" in msg
    assert "\n" not in msg
    assert isinstance(err.value, symgen.ModelError)


def test_path_to_a_file(tmp_path):
    path = write(tmp_path, "spring.py", GOOD)
    mdl = load_model(str(path))
    assert mdl.name == "spring" and mdl.n == 1
    mdl2 = load_model(path, L=3.0)          # a Path works too; options go to model()
    assert mdl2.f[0].subs({mdl2.coords[0]: 1}) == -3.0


def test_unknown_option_of_a_fixed_signature_model(tmp_path):
    path = write(tmp_path, "spring.py", GOOD)
    with pytest.raises(LoadError, match="no option"):
        load_model(path, N=3)


def test_missing_file(tmp_path):
    with pytest.raises(LoadError, match="not found"):
        load_model(str(tmp_path / "nowhere.py"))


def test_file_without_model(tmp_path):
    path = write(tmp_path, "empty.py", "x = 1\n")
    with pytest.raises(LoadError, match="model\\(\\)"):
        load_model(path)


def test_model_returning_something_else(tmp_path):
    path = write(tmp_path, "bad.py", "def model():\n    return 42\n")
    with pytest.raises(LoadError, match="not a symgen.Model"):
        load_model(path)


def test_file_raising_on_import(tmp_path):
    path = write(tmp_path, "boom.py", "raise RuntimeError('kaboom')\n")
    with pytest.raises(LoadError, match="RuntimeError: kaboom"):
        load_model(path)


def test_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path, "syn.py", "def model(:\n    pass\n")
    with pytest.raises(LoadError, match="syn.py:1"):
        load_model(path)


def test_model_error_inside_model_is_a_load_error(tmp_path):
    path = write(tmp_path, "bad_model.py", """
        import symgen
        def model():
            return symgen.Model("bad", ["a"], M=[[1, 0], [0, 1]], f=[0])
        """)
    with pytest.raises(LoadError, match="M has shape"):
        load_model(path)


def test_non_python_file(tmp_path):
    path = write(tmp_path, "model.txt", "def model(): pass\n")
    with pytest.raises(LoadError, match="not a Python"):
        load_model(path)


def test_an_edited_file_is_imported_again(tmp_path):
    """An edit in the same session takes effect, even one of the same length within the same
    second (which a .pyc check by mtime and size would miss); an unchanged file is reused."""
    path = write(tmp_path, "edit.py", GOOD.replace('"spring"', '"aaaaaa"'))
    assert load_model(path).name == "aaaaaa"
    from symgen.loader import load_module
    assert load_module(path) is load_module(path)
    path.write_text(textwrap.dedent(GOOD.replace('"spring"', '"bbbbbb"')))
    assert load_model(path).name == "bbbbbb"
    path.write_text("def model(:\n")
    with pytest.raises(LoadError, match="syntax error"):
        load_model(path)


@pytest.mark.parametrize("where, text, said", [
    ("import", "import sys\nsys.exit(0)\n", "sys.exit(0) while loading"),
    ("model()", "import sys\ndef model():\n    sys.exit(3)\n", "sys.exit(3) in model()"),
    ("exit()", "def model():\n    raise SystemExit\n", "sys.exit(0) in model()"),
])
def test_a_model_file_calling_sys_exit_is_a_load_error(tmp_path, where, text, said):
    """sys.exit() in a model file would end symgen silently with the file's exit code (0: as if
    all went well); it is a LoadError naming the file."""
    path = write(tmp_path, "quits.py", text)
    with pytest.raises(LoadError) as err:
        load_model(path)
    assert said in str(err.value) and "quits.py" in str(err.value)


def test_ctrl_c_while_loading_is_not_caught(tmp_path):
    path = write(tmp_path, "ctrl_c.py", "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        load_model(path)


def test_integer_options_are_not_truncated(tmp_path):
    """An option annotated int (N of n_four_bar) given 1.5 is an error naming it, not N = 1; an
    integral float (the command line reads N=2.0 as a float) is that integer."""
    with pytest.raises(LoadError, match=r"option N must be an integer, got 1\.5"):
        load_model("n_four_bar", N=1.5)
    assert load_model("n_four_bar", N=2.0).n == 3 * (2 * 2 + 1)
    path = write(tmp_path, "chain.py", """
        from __future__ import annotations       # the annotation is then the string "int"
        import symgen

        def model(k: int = 1, scale=1.0):
            assert isinstance(k, int)
            (x,), _ = symgen.coordinates("x")
            return symgen.Model(f"chain{k}", [x], M=[[1]], f=[-k * scale * x], x0=[0.1])
        """)
    with pytest.raises(LoadError, match=r"chain\.py: option k must be an integer, got 2\.5"):
        load_model(path, k=2.5)
    with pytest.raises(LoadError, match="option k must be an integer, got True"):
        load_model(path, k=True)
    assert load_model(path, k=3.0).name == "chain3"
    assert load_model(path, scale=1.5).f[0] == -1.5 * load_model(path).coords[0]  # not an int


def test_n_four_bar_checks_n_itself():
    """Called directly (not through load_model), the example rejects N = 1.5 and N = 0."""
    from symgen.loader import integer_option, load_module

    mod = load_module("n_four_bar")
    for bad in (1.5, 0, "3"):
        with pytest.raises(ValueError, match=f"option N must be an integer ≥ 1, got {bad!r}"):
            mod.model(N=bad)
    assert integer_option("N", 4.0) == 4 and type(integer_option("N", 4.0)) is int


_USER = '''
import {name}_parts as parts
import symgen

def model():
    import {name}_late                       # imported while model() runs, too
    (x,), (xd,) = symgen.coordinates("x")
    return symgen.Model("{name}", [x], M=[[1]], f=[-{name}_late.K * parts.K * x], x0=[0.1],
                        settings=dict(method="newmark", scheme="trapezoidal", dt=0.1, t_end=1))
'''


@pytest.mark.parametrize("name", ["sib_a"])
def test_a_model_file_imports_its_neighbours_and_leaves_sys_path_as_it_was(tmp_path, name):
    """issue 25 §1: the model file's folder is importable while it loads and model() runs."""
    import sys
    (tmp_path / f"{name}_parts.py").write_text("K = 2.0\n")
    (tmp_path / f"{name}_late.py").write_text("K = 4.0\n")
    (tmp_path / f"{name}.py").write_text(_USER.format(name=name))
    before = list(sys.path)
    try:
        mdl = load_model(tmp_path / f"{name}.py")
        assert mdl.name == name and str(mdl.f[0]) == "-8.0*x"
        assert sys.path == before
    finally:
        for mod in (f"{name}_parts", f"{name}_late"):
            sys.modules.pop(mod, None)


def test_no_neighbours_from_a_folder_others_can_write(tmp_path):
    import os
    import sys
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "sib_b_parts.py").write_text("K = 2.0\n")
    (shared / "sib_b.py").write_text(_USER.format(name="sib_b"))
    os.chmod(shared, 0o777)
    try:
        with pytest.raises(LoadError, match="can be written by other users"):
            load_model(shared / "sib_b.py")
        assert "sib_b_parts" not in sys.modules
    finally:
        os.chmod(shared, 0o700)
