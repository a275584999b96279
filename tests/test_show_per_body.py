"""`symgen show`'s per-body form of M (issue 25 §6): the blocks put back together are the model's
own M, a planar body's block is diag(m, m, I), and the command prints them."""
import pytest
import sympy as sp

import symgen
from symgen.cli import main
from symgen.derived import mass_blocks


#: bodies a and b coupled through M (one block), c alone with a full 2 × 2 block, d a coordinate of
#: no body
COUPLED = """
import symgen, sympy as sp
def model():
    xs, _ = symgen.coordinates(["a.x", "c.x", "b.x", "c.theta", "d", "a.y"])
    m, e = sp.symbols("m e")
    M = sp.zeros(6, 6)
    for i in range(6):
        M[i, i] = m * (i + 1)
    M[0, 2] = M[2, 0] = e                 # a.x - b.x
    M[1, 3] = M[3, 1] = m * e             # c.x - c.theta
    return symgen.Model("coupled", xs, M, [0] * 6, params={m: 2.0, e: 0.5})
"""


@pytest.fixture
def coupled(tmp_path):
    path = tmp_path / "coupled.py"
    path.write_text(COUPLED)
    return path


def _reassembled(model):
    """M from its blocks alone: each block's entries at its indices, zero elsewhere."""
    M, n = sp.ImmutableMatrix(model.M), model.n
    out = sp.zeros(n, n)
    for _, idx in mass_blocks(model):
        for a, i in enumerate(idx):
            for b, j in enumerate(idx):
                out[i, j] = M.extract(list(idx), list(idx))[a, b]
    return out


@pytest.mark.parametrize("spec", ["slider_crank", "andrews_squeezer", "double_four_bar",
                                  "slider_crank_3d", "bricard", "coupled"])
def test_blocks_partition_the_coordinates_and_rebuild_M(spec, coupled):
    model = symgen.load_model(coupled if spec == "coupled" else spec)
    blocks = mass_blocks(model)
    indices = sorted(i for _, idx in blocks for i in idx)
    assert indices == list(range(model.n))
    assert _reassembled(model) == sp.ImmutableMatrix(model.M)


def test_blocks_follow_the_bodies_and_merge_where_M_couples_them(coupled):
    assert mass_blocks(symgen.load_model(coupled)) == [("a, b", (0, 2, 5)), ("c", (1, 3)),
                                                       ("d", (4,))]
    blocks = mass_blocks(symgen.load_model("slider_crank"))
    assert blocks == [("crank", (0, 1, 2)), ("rod", (3, 4, 5)), ("slider", (6, 7, 8))]


def _show(capsys, *args):
    capsys.readouterr()
    rc = main(["show", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_the_summary_prints_a_planar_body_as_diag_m_m_I(capsys):
    """Andrews' squeezer: seven bodies K1..K7 with masses m_k and inertias I_k about their centres
    of mass, so M is diag(m_k, m_k, I_k) body by body; the 21 × 21 matrix printed 7 lines."""
    rc, out, _ = _show(capsys, "andrews_squeezer")
    assert rc == 0
    assert "M  per body (rows and columns: each body's x, y, theta;" in out
    for k in range(1, 8):
        sub = str(k).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
        assert f"M[K{k}] = diag(m{sub}, m{sub}, I{sub})" in out
    rc, out, _ = _show(capsys, "andrews_squeezer", "--latex")
    assert rc == 0
    assert "% M  per body" in out
    assert r"M_{\mathrm{K7}} = \operatorname{diag}{\left(m_{7},m_{7},I_{7} \right)}" in out


def test_per_body_option_prints_coupled_blocks_whole(capsys, coupled):
    rc, out, _ = _show(capsys, "stiff_pendulum")          # one body: M printed whole
    assert rc == 0 and "⎡m  0  0⎤" in out and "per body" not in out
    rc, out, _ = _show(capsys, "stiff_pendulum", "--term", "M", "--per-body")
    assert rc == 0 and "M[pendulum] = diag(m, m, 0)" in out
    rc, _, err = _show(capsys, "stiff_pendulum", "--term", "K", "--per-body")
    assert rc == 2 and "--per-body prints M only" in err and len(err.strip().splitlines()) == 1
    rc, out, _ = _show(capsys, str(coupled))              # d is no body's: M printed whole
    assert rc == 0 and "per body" not in out
    rc, out, _ = _show(capsys, str(coupled), "--term", "M", "--per-body")
    assert rc == 0, out
    assert "each block's coordinates in the model's order" in out
    assert "M[d] = 5⋅m" in out and "diag" not in out
    lines = [ln.strip() for ln in out.splitlines()]
    # a, b over (a.x, b.x, a.y): diag(m, 3m, 6m) with e between a.x and b.x; c over (c.x, c.theta)
    assert lines[1:6] == ["⎡m   e    0 ⎤", "⎢           ⎥", "M[a, b] = ⎢e  3⋅m   0 ⎥",
                          "⎢           ⎥", "⎣0   0   6⋅m⎦"]
    assert lines[6:9] == ["⎡2⋅m  e⋅m⎤", "M[c] = ⎢        ⎥", "⎣e⋅m  4⋅m⎦"]


def test_a_wide_coupled_block_is_listed_entry_by_entry(tmp_path, capsys):
    """One body of 13 coordinates, M = m·I with e between the first and the last: wider than a
    2-D matrix is printed, so its non-zero entries one a line, by coordinate name."""
    (tmp_path / "wide.py").write_text(
        "import symgen, sympy as sp\n"
        "def model():\n"
        "    xs, _ = symgen.coordinates([f'w.q{i}' for i in range(13)])\n"
        "    m, e = sp.symbols('m e')\n"
        "    M = m * sp.eye(13)\n"
        "    M[0, 12] = M[12, 0] = e\n"
        "    return symgen.Model('wide', xs, M, [0] * 13, params={m: 2.0, e: 0.5})\n")
    rc, out, _ = _show(capsys, str(tmp_path / "wide.py"), "--term", "M", "--per-body")
    assert rc == 0
    expected = [f"M[w.q{i}, w.q{i}] = m" for i in range(13)] + ["M[w.q0, w.q12] = e",
                                                               "M[w.q12, w.q0] = e"]
    assert sorted(out.splitlines()[1:]) == sorted(expected)
