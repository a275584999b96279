"""symgen.linearize / symgen.modes / `symgen modes` (issue 24) against independent oracles:
closed-form frequencies (pendulum, double pendulum, spring chain with Rayleigh damping), sympy's
KanesMethod in minimal coordinates, the double four-bar's exact one-dof equation (finite
differences), Bricard's redundant rows, and the stepper's own ω_max."""
import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen import Model, coordinates
from symgen.kernels import LambdifyKernels
from symgen.linear import linearize, modes

import oracles
import stepper_models

WARM = ["double_pendulum"]


# -- closed forms ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pendulum():
    return LambdifyKernels(stepper_models.stiff_pendulum())


def test_pendulum_frequency_shape_and_inverted_is_unstable(pendulum):
    g, L = stepper_models.G, 1.0
    md = modes(pendulum)                                    # hanging at rest: x0 = (0, −L, 0)
    assert len(md) == 1 and md.stable is True
    assert md.omega[0] == pytest.approx(math.sqrt(g / L), rel=1e-12)
    assert md.f[0] == pytest.approx(math.sqrt(g / L) / (2 * math.pi), rel=1e-12)
    # δx = L δθ, δy = 0 at the bottom (x = L sin θ, y = −L cos θ); the output is θ
    np.testing.assert_allclose(md.x_shapes[0], [1.0, 0.0, 1.0 / L], atol=1e-12)
    assert abs(md.output_shapes[0, 0]) == pytest.approx(1.0 / L, rel=1e-9)

    up = linearize(pendulum, x=[0.0, L, math.pi], xd=[0.0, 0.0, 0.0])
    assert up.equilibrium
    mu = up.modes()
    assert mu.stable is False and "unstable" in mu.verdict and math.isnan(mu.zeta[0])
    ev = np.sort_complex(np.linalg.eigvals(up.A))
    np.testing.assert_allclose(ev, [-math.sqrt(g / L), math.sqrt(g / L)], rtol=1e-12, atol=1e-12)


def _point_double_pendulum() -> Model:
    """Two point masses m on massless rods l, in Cartesian coordinates (n = 4, m = 2)."""
    (x1, y1, x2, y2), _ = coordinates("x1 y1 x2 y2")
    m, l, g = sp.symbols("m l g")
    return Model("point_double_pendulum", [x1, y1, x2, y2], sp.diag(m, m, m, m),
                 [0, -m * g, 0, -m * g],
                 q=[x1 ** 2 + y1 ** 2 - l ** 2, (x2 - x1) ** 2 + (y2 - y1) ** 2 - l ** 2],
                 params={m: 1.3, l: 0.7, g: 9.81}, x0=[0.0, -0.7, 0.0, -1.4],
                 outputs={"x2": x2})


def test_double_pendulum_at_the_bottom_closed_form():
    k = LambdifyKernels(_point_double_pendulum())
    g, l = 9.81, 0.7
    md = modes(k)
    assert md.stable is True
    np.testing.assert_allclose(md.omega ** 2, [(g / l) * (2 - math.sqrt(2)),
                                               (g / l) * (2 + math.sqrt(2))], rtol=1e-12)
    # angles (1, ±√2) for ω² = (g/l)(2 ∓ √2): δx1 = l δθ1, δx2 = l(δθ1 + δθ2)
    r = math.sqrt(2)
    np.testing.assert_allclose(md.x_shapes[0], [1 / (1 + r), 0, 1, 0], atol=1e-10)
    np.testing.assert_allclose(md.x_shapes[1], [1, 0, 1 - r, 0], atol=1e-10)


def _chain(n_mass: int, planar: bool) -> Model:
    """n_mass masses m between two walls, springs k and parallel dashpots c = β k; ``planar``:
    in (x_i, y_i) with y_i = 0 as constraints (n = 2 n_mass, m = n_mass), else x_i only."""
    names = [f"x{i}" for i in range(n_mass)] + ([f"y{i}" for i in range(n_mass)] if planar else [])
    xs, vs = coordinates(" ".join(names))
    m, kk, beta = sp.symbols("m k beta")
    f = [0] * len(xs)
    for i in range(n_mass):
        left = xs[i - 1] if i else 0
        right = xs[i + 1] if i + 1 < n_mass else 0
        vl = vs[i - 1] if i else 0
        vr = vs[i + 1] if i + 1 < n_mass else 0
        f[i] = -kk * (2 * xs[i] - left - right) - beta * kk * (2 * vs[i] - vl - vr)
    q = list(xs[n_mass:]) if planar else []
    return Model(f"chain{'_planar' if planar else ''}", xs, sp.eye(len(xs)) * m, f, q=q,
                 params={m: 2.0, kk: 50.0, beta: 0.01})


@pytest.mark.parametrize("planar", [False, True])
def test_spring_chain_analytic_eigenvalues_and_rayleigh_damping(planar):
    n_mass, m, kk, beta = 5, 2.0, 50.0, 0.01
    ls = linearize(LambdifyKernels(_chain(n_mass, planar)))
    md = ls.modes()
    j = np.arange(1, n_mass + 1)
    w = 2 * np.sqrt(kk / m) * np.sin(j * np.pi / (2 * (n_mass + 1)))
    np.testing.assert_allclose(md.omega, w, rtol=1e-12)
    np.testing.assert_allclose(md.zeta, beta * w / 2, rtol=1e-10)        # C = βK: ζ = βω/2
    ev = md.eigenvalues
    z = beta * w / 2
    wd = w * np.sqrt(1 - z ** 2)                             # λ = −ζω ± iω√(1 − ζ²)
    want = np.concatenate([-z * w + 1j * wd, -z * w - 1j * wd])
    np.testing.assert_allclose(np.sort_complex(ev), np.sort_complex(want), rtol=1e-10)
    for i in range(n_mass):                                  # sin(i j π / (N + 1)), largest → +1
        shape = np.sin((np.arange(n_mass) + 1) * (i + 1) * np.pi / (n_mass + 1))
        shape = shape / shape[np.argmax(np.abs(shape) >= (1 - 1e-9) * np.abs(shape).max())]
        np.testing.assert_allclose(md.x_shapes[i][:n_mass], shape, atol=1e-10)
        assert np.all(np.abs(md.x_shapes[i][n_mass:]) < 1e-12)
    assert md.stable is True and ls.B.shape == (2 * n_mass, 0) and ls.D.shape == (0, 0)


def test_a_free_mass_is_neutral_not_stable():
    (x,), _ = coordinates("x")
    md = modes(LambdifyKernels(Model("free_mass", [x], sp.Matrix([[2.0]]), [0])))
    assert md.omega[0] == 0.0 and math.isnan(md.zeta[0])
    assert md.stable is None and "neutral" in md.verdict


# -- sympy.physics.mechanics in minimal coordinates -----------------------------------------------
def _kane_four_bar_equilibria():
    """The sympy four-bar's equilibria at rest from its own expressions (V' = 0 on the closed
    loop, by brentq), and the eigenvalues of KanesMethod.linearize's A in (q_crank, u_crank).
    M and A are evaluated at the operating point and solved numerically: ``A_and_B=True`` with a
    float op_point gave A[1, 0] = −64 instead of −61.474 here (float round-off in the symbolic
    solve; sympy issue #9506 warns against floats in op_point)."""
    import sympy.physics.mechanics as me
    from scipy.optimize import brentq

    from symgen.examples import sympy_four_bar as ex

    system, S, q, _, V = ex.system()
    vals = {S[key]: v for key, v in ex.DEFAULTS.items()}
    plain = sp.symbols("p0:3")
    rep = dict(zip(q, plain))
    c = sp.Matrix(system.holonomic_constraints).subs(vals).xreplace(rep)
    f_c = sp.lambdify(plain, c)
    f_cdep = sp.lambdify(plain, c.jacobian(plain[1:]))
    f_cind = sp.lambdify(plain, c.jacobian(plain[:1]))
    f_dV = sp.lambdify(plain, sp.Matrix([V]).subs(vals).xreplace(rep).jacobian(plain))
    dep = [np.array([1.0, 2.0])]                              # the branch of the model's x0

    def close(th):
        d = dep[0]
        for _ in range(30):
            d = d - np.linalg.solve(np.array(f_cdep(th, *d), float),
                                    np.array(f_c(th, *d), float).ravel())
        dep[0] = d
        return d

    def dV(th):                                              # dV/dθ along the loop
        d = close(th)
        dd = np.linalg.solve(np.array(f_cdep(th, *d), float),
                             -np.array(f_cind(th, *d), float)).ravel()
        gV = np.array(f_dV(th, *d), float).ravel()
        return gV[0] + gV[1:] @ dd

    grid = np.linspace(-np.pi, np.pi, 73)
    signs = np.sign([dV(th) for th in grid])
    system.form_eoms()
    kane, t = system.eom_method, me.dynamicsymbols._t
    Mk, Ak = kane.linearize(simplify=False)[:2]             # M [q̇; u̇] = A [q_ind; u_ind]
    out = []
    for i in np.nonzero(np.diff(signs))[0]:
        dep[0] = np.array([1.0, 2.0])
        for th in grid[:i + 1]:                              # follow the branch to the bracket
            close(th)
        th = brentq(dV, grid[i], grid[i + 1], xtol=1e-15, rtol=1e-15)
        xq = np.r_[th, close(th)]
        op = [dict(zip(q, xq)), {u: 0 for u in system.u}, {u.diff(t): 0 for u in system.u}, vals]
        Mn, An = Mk, Ak
        for d in op:
            Mn, An = me.msubs(Mn, d), me.msubs(An, d)
        full = np.linalg.solve(np.array(sp.N(Mn), float), np.array(sp.N(An), float))
        A = full[[0, 3]]                                     # rows q̇_crank, u̇_crank
        out.append((xq, np.linalg.eigvals(A)))
    return out


def test_sympy_four_bar_matches_kanes_linearize_at_its_equilibria():
    """At an equilibrium the eigenvalues do not depend on the coordinates (docs/linearization.md);
    the bottom one is stable, the top one unstable."""
    from symgen.examples import sympy_four_bar as ex

    k = LambdifyKernels(ex.model())
    found = _kane_four_bar_equilibria()
    assert len(found) == 2
    verdicts = []
    for xq, ev_kane in found:
        ls = linearize(k, x=xq, xd=np.zeros(3))
        assert ls.equilibrium and ls.k == 1
        np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(ls.A)),
                                   np.sort_complex(ev_kane), rtol=1e-8)
        verdicts.append(ls.modes().stable)
    assert sorted(verdicts) == [False, True]


# -- the double four-bar's exact one-dof equation -------------------------------------------------
def _double_four_bar_positions(th):
    """φ(θ) and its derivatives: vertical bars V_i centred at (i + ½cos θ, ½sin θ), angle θ;
    couplers C_j at (j − ½ + cos θ, sin θ), angle 0 (L = 1; coordinate order of the model)."""
    c, s = math.cos(th), math.sin(th)
    x, d1, d2 = [], [], []
    for i in range(3):
        x += [i + 0.5 * c, 0.5 * s, th]
        d1 += [-0.5 * s, 0.5 * c, 1.0]
        d2 += [-0.5 * c, -0.5 * s, 0.0]
    for j in (1, 2):
        x += [j - 0.5 + c, s, 0.0]
        d1 += [-s, c, 0.0]
        d2 += [-c, -s, 0.0]
    return np.array(x), np.array(d1), np.array(d2)


@pytest.mark.parametrize("th0,w0", [(-math.pi / 2, 0.0), (1.0, 0.7)])
def test_double_four_bar_against_its_one_dof_equation(th0, w0):
    """a_T θ̈ = −a_V g cos θ (tests/oracles.py) written in the chart α = N_Hᵀ(x − x*) and
    differentiated by central differences: −∂α̈/∂α = K_R/M_R, −∂α̈/∂α̇ = C_R/M_R.  At the bottom
    (an equilibrium) that is ω² = a_V g / a_T; at (θ, θ̇) = (1, 0.7) the chart's own terms count."""
    a_T, a_V = oracles.four_bar_coefficients(2)
    g = 9.81
    k = LambdifyKernels(symgen.load_model("double_four_bar"))
    x, d1, _ = _double_four_bar_positions(th0)
    ls = linearize(k, x=x, xd=d1 * w0)
    np.testing.assert_allclose(ls.x, x, atol=1e-13)
    assert ls.k == 1 and ls.equilibrium == (w0 == 0.0 and abs(math.cos(th0)) < 1e-15)
    N = ls.N[:, 0]

    def alpha_ddot(alpha, alpha_dot):
        th = th0
        for _ in range(50):                                  # θ = ψ⁻¹(α), ψ = Nᵀ(φ(θ) − x*)
            xs, ds, _ = _double_four_bar_positions(th)
            th -= (N @ (xs - x) - alpha) / (N @ ds)
        _, ds, dds = _double_four_bar_positions(th)
        thd = alpha_dot / (N @ ds)
        return (N @ ds) * (-a_V * g * math.cos(th) / a_T) + (N @ dds) * thd ** 2

    a0, ad0, h = 0.0, N @ (d1 * w0), 1e-5
    dA = (alpha_ddot(a0 + h, ad0) - alpha_ddot(a0 - h, ad0)) / (2 * h)
    dV = (alpha_ddot(a0, ad0 + h) - alpha_ddot(a0, ad0 - h)) / (2 * h)
    M_R, C_R, K_R = ls.M_R[0, 0], ls.C_R[0, 0], ls.K_R[0, 0]
    assert K_R / M_R == pytest.approx(-dA, rel=1e-7, abs=1e-7)
    assert C_R / M_R == pytest.approx(-dV, rel=1e-7, abs=1e-7)
    md = ls.modes()
    assert md.omega[0] == pytest.approx(math.sqrt(abs(dA)), rel=1e-7)
    if ls.equilibrium:
        assert md.omega[0] == pytest.approx(math.sqrt(a_V * g / a_T), rel=1e-12)
        assert md.stable is True
    else:
        assert md.stable is None and "not an equilibrium" in md.verdict


# -- redundant constraints ------------------------------------------------------------------------
class _RowsDropped:
    """The kernels without constraint row ``i`` (λ_i = 0 in the dynamics kernel's Hᵀλ)."""

    def __init__(self, kernels, i):
        self.k, self.i, self.m = kernels, i, kernels.m - 1
        self.keep = np.delete(np.arange(kernels.m), i)

    def __getattr__(self, name):
        return getattr(self.k, name)

    def constraints(self, t, x, xd, xdd):
        return tuple(a[self.keep] for a in self.k.constraints(t, x, xd, xdd))

    def dynamics(self, t, x, xd, xdd, lam):
        full = np.zeros(self.k.m)
        full[self.keep] = lam
        return self.k.dynamics(t, x, xd, xdd, full)


def test_bricard_one_mode_whatever_rows_are_redundant():
    """All 24 rows (rank 23) against each 23-row subset without redundancy: the same mode."""
    k = LambdifyKernels(symgen.load_model("bricard"))
    ref = linearize(k)
    assert ref.rank == 23 and ref.k == 1 and not ref.equilibrium
    w = ref.modes().omega[0]
    assert math.isfinite(w) and w > 0
    H = k.constraints(ref.t, ref.x, ref.xd, ref.xdd)[1].copy()
    droppable = [i for i in range(k.m) if np.linalg.matrix_rank(np.delete(H, i, 0), 1e-8) == 23]
    assert len(droppable) >= 4
    for i in droppable[::max(1, len(droppable) // 4)]:
        other = linearize(_RowsDropped(k, i), x=ref.x, xd=ref.xd)
        assert other.k == 1 and other.rank == 23
        assert other.modes().omega[0] == pytest.approx(w, rel=1e-8)
        assert other.C_R[0, 0] / other.M_R[0, 0] == pytest.approx(ref.C_R[0, 0] / ref.M_R[0, 0],
                                                                   rel=1e-8, abs=1e-10)


def test_a_duplicated_joint_changes_no_frequency():
    a = linearize(LambdifyKernels(stepper_models.four_bar()))
    b = linearize(LambdifyKernels(stepper_models.four_bar(duplicate=True)))
    assert (a.rank, b.rank, b.k) == (8, 8, 1)
    assert b.modes().omega[0] == pytest.approx(a.modes().omega[0], rel=1e-10)


# -- the stepper's ω_max --------------------------------------------------------------------------
def test_largest_omega_is_the_runs_omega_max_python_stepper():
    k = LambdifyKernels(stepper_models.four_bar())
    res = symgen.simulate(k, dt=1e-2, t_end=0.05, stepper="python", estimate=True)
    for row in range(len(res.t)):
        ls = linearize(res, row=row, model=k)
        assert ls.t == res.t[row]
        if row == 0 or res.newton_iters[row] < 2:       # ω_max of the accepted state itself
            assert ls.modes().omega.max() == pytest.approx(res.omega_max[row], rel=1e-8)
        else:   # the last Newton iterate's: measured within 1.5e-7 of the state's (nullspace.py)
            assert ls.modes().omega.max() == pytest.approx(res.omega_max[row], rel=1e-6)


@pytest.fixture(scope="module")
def dp_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("modes") / "dp.npz"
    proc = _cli("simulate", "double_pendulum", "--t-end", "0.02", "--quiet", "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_largest_omega_is_the_compiled_runs_omega_max(dp_result):
    res = symgen.load_result(dp_result)
    ls = linearize(res, row=0)                      # the shipped example the result names
    assert ls.modes().omega.max() == pytest.approx(res.omega_max[0], rel=1e-8)
    x, xd = ls.to_state(np.zeros(2 * ls.k))
    np.testing.assert_array_equal(x, res.x[0])
    np.testing.assert_array_equal(xd, res.xd[0])


# -- command line ---------------------------------------------------------------------------------
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "symgen", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def test_cli_modes_double_pendulum_at_the_bottom_against_minimal_coordinates(tmp_path):
    """Bars hanging straight down: M, K, C in the absolute angles of two uniform bars with
    torsional spring-dampers on the relative angles (examples/double_pendulum.py)."""
    out = tmp_path / "modes.csv"
    proc = _cli("modes", "double_pendulum", "--set", "bar1.theta=0", "--set", "bar2.theta=0",
                "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "stable" in proc.stdout and "2 modes" in proc.stdout
    m, L, g, ks, c = 1.0, 1.0, 9.81, 1000.0, 1.0
    M = np.array([[m * L ** 2 / 3 + m * L ** 2, m * L ** 2 / 2], [m * L ** 2 / 2, m * L ** 2 / 3]])
    K = np.array([[2 * ks + 1.5 * m * g * L, -ks], [-ks, ks + 0.5 * m * g * L]])
    C = np.array([[2 * c, -c], [-c, c]])
    import scipy.linalg
    w2, phi = scipy.linalg.eigh(K, M)
    zeta = np.einsum("ij,ik,kj->j", phi, C, phi) / (2 * np.sqrt(w2))
    table = np.genfromtxt(out, delimiter=",", names=True)
    np.testing.assert_allclose(table["omega"], np.sqrt(w2), rtol=1e-9)
    np.testing.assert_allclose(table["zeta"], zeta, rtol=1e-9)


def test_cli_modes_exit_codes(dp_result, tmp_path, capsys):
    from symgen.cli import main

    assert main(["modes", "double_pendulum"]) == 0
    assert "not an equilibrium" in capsys.readouterr().out          # horizontal bars at rest
    assert main(["modes", "double_pendulum", "--from", str(dp_result), "--at", "0.02"]) == 0
    assert "t = 0.02 s" in capsys.readouterr().out
    for bad, words in ((["--from", str(dp_result), "--at", "5"], "outside the result"),
                       (["--at", "0.01"], "--at needs --from"),
                       (["--from", str(dp_result)], "--from needs --at"),
                       (["--animate", "3", "-o", str(tmp_path / "m.gif")], "2 modes"),
                       (["--animate", "1"], "needs -o")):
        assert main(["modes", "double_pendulum", *bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err


def test_mode_animation_frames_stay_on_the_constraints(tmp_path, capsys):
    """--animate: x* + a sin(2πs) shape projected onto q = 0; to first order in a the frames
    move along the mode shape, and the GIF has one period of frames."""
    pytest.importorskip("matplotlib")
    Image = pytest.importorskip("PIL.Image")
    from symgen.cli import main
    from symgen.cli.modes import mode_motion

    k = LambdifyKernels(symgen.load_model("double_pendulum"))
    x0, xd0 = symgen.assemble(k.model, fix={"bar1.theta": 0.0, "bar2.theta": 0.0})
    ls = linearize(k, x=x0, xd=xd0)
    md = ls.modes()
    for a in (1e-2, 1e-3):
        res, period = mode_motion(k, ls, md, 1, a)
        assert period == pytest.approx(2 * math.pi / md.omega[1], rel=1e-14)
        for x in res.x:
            assert np.max(np.abs(k.constraints(0.0, x, np.zeros(6), np.zeros(6))[0])) < 1e-12
        quarter = (res.x[10] - ls.x) / a                       # s = 1/4: sin = 1
        np.testing.assert_allclose(quarter, md.x_shapes[1], atol=3 * a)
    gif = tmp_path / "mode.gif"
    assert main(["modes", "double_pendulum", "--backend", "lambdify", "--set", "bar1.theta=0",
                 "--set", "bar2.theta=0", "--animate", "2", "-o", str(gif)]) == 0
    assert "animation" in capsys.readouterr().out
    with Image.open(gif) as im:
        assert im.n_frames == 41


@pytest.mark.parametrize("amplitude", ["1e300", "1e10"])
def test_an_absurd_amplitude_is_refused_and_writes_nothing(tmp_path, capsys, amplitude):
    # issue 38.13: --amplitude 1e300 wrote a GIF of overflowed coordinates and exited 0 (the
    # projection's tolerance is relative to |x|, so a frame far out "met" the constraints)
    pytest.importorskip("matplotlib")
    from symgen.cli import main

    gif = tmp_path / "m.gif"
    assert main(["modes", "double_pendulum", "--animate", "1", "-o", str(gif),
                 "--amplitude", amplitude]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--amplitude {float(amplitude):g}" in err, err
    assert "smaller --amplitude" in err and not gif.exists()
    assert main(["modes", "stiff_pendulum", "--animate", "1", "-o", str(gif),
                 "--amplitude", "1"]) == 0                    # a large but sound swing
    assert gif.stat().st_size > 0
