"""Joint reactions by name (issue 35, "Reactions as signals"): the force and moment body a exerts on
body b, against closed forms (a planar pendulum) and Newton–Euler on every body of a spatial RSSR
four-bar, computed independently from the run's x, ẋ, ẍ (docs/reactions.md)."""
import numpy as np
import pytest

import symgen
from symgen.mechanics import PlanarSystem, SpatialSystem

G = 9.81


# -- planar ----------------------------------------------------------------------------------------
def _pendulum(m=2.0, L=0.7, inertia=0.05, th0=0.9):
    s = PlanarSystem("pend")
    bob = s.body("bob", mass=m, inertia=inertia, points={"pivot": (0, L)},
                 x0=(L * np.sin(th0), -L * np.cos(th0), th0))
    s.revolute("ground", (0, 0), bob, "pivot", name="pin")
    s.gravity(G)
    return s.model()


def test_a_pendulums_pin_force_is_its_weight_plus_the_centripetal_and_tangential_terms():
    """The pin's force on a compound pendulum (mass m, inertia I about its centre of mass at L from
    the pin): F = m a_G − m g with a_G = L θ̈ e_t − L θ̇² e_r and θ̈ = −m g L sin θ / (I + m L²),
    from the run's θ, θ̇ only; a pin carries no moment about itself."""
    m, L, inertia = 2.0, 0.7, 0.05
    mdl = _pendulum(m, L, inertia)
    r = symgen.simulate(mdl, dt=1e-3, t_end=1.0, every=10)
    th, w = r.coord("bob.theta"), r.xd[:, mdl.coord_names.index("bob.theta")]
    acc = -m * G * L * np.sin(th) / (inertia + m * L ** 2)
    a_G = (L * acc[:, None] * np.stack([np.cos(th), np.sin(th)], 1)
           - L * w[:, None] ** 2 * np.stack([np.sin(th), -np.cos(th)], 1))
    want = m * a_G - m * np.array([0.0, -G])
    pin = r.reactions(mdl)["pin"]
    assert set(pin) == {"Fx", "Fy", "Mz"}
    got = np.stack([pin["Fx"], pin["Fy"]], 1)
    assert np.abs(got - want).max() < 1e-9 * m * G
    assert np.abs(pin["Mz"]).max() < 1e-9 * m * G * L
    # the radial part is m (g cos θ + L θ̇²): the weight plus the centripetal force
    radial = -(got[:, 0] * np.sin(th) - got[:, 1] * np.cos(th))
    assert np.abs(radial - m * (G * np.cos(th) + L * w ** 2)).max() < 1e-9 * m * G


def test_every_component_is_present_zeros_included():
    """A slider on a horizontal guide: the guide holds the weight (Fy = m g), Fx and the moment
    are zero and present; the rows' generalized forces name every coordinate (the old
    ``reactions()`` left out the identically zero ones: a KeyError on ``slider.x``)."""
    m = 1.5
    s = PlanarSystem("guide")
    sl = s.body("slider", mass=m, inertia=0.01, x0=(0.2, 0.0, 0.0), v0=(0.3, 0.0, 0.0))
    s.prismatic("ground", (0, 0), sl, (0, 0), axis=(1, 0), name="guide")
    s.gravity(G)
    mdl = s.model()
    r = symgen.simulate(mdl, dt=1e-2, t_end=0.2)
    R = r.reactions(mdl)["guide"]
    assert set(R) == {"Fx", "Fy", "Mz"}
    np.testing.assert_allclose(R["Fy"], m * G, rtol=1e-12)
    assert np.abs(R["Fx"]).max() == 0 and np.abs(R["Mz"]).max() < 1e-12
    Q = r.generalized_forces(mdl)["guide"]
    assert set(Q) == {"slider.x", "slider.y", "slider.theta"}
    assert np.abs(Q["slider.x"]).max() == 0


def test_default_joint_names_are_identifiers_shared_by_rows_and_reactions():
    s = PlanarSystem("two")
    a = s.body("a", mass=1, inertia=0.1, points={"p": (0, 0.5)}, x0=(0, -0.5, 0))
    s.revolute("ground", (0, 0), a, "p")
    mdl = s.model()
    assert mdl.constraint_names == ("revolute_ground_a.x", "revolute_ground_a.y")
    assert list(mdl.reactions) == ["revolute_ground_a.Fx", "revolute_ground_a.Fy",
                                   "revolute_ground_a.Mz"]


# -- spatial: an RSSR four-bar ---------------------------------------------------------------------
O1, O2 = np.array([0, 0, 0.0]), np.array([0.5, 0.3, 0.2])
A, B = np.array([0.2, 0, 0]), np.array([0.5, 0.3, 0.5])
EZ, EX = np.array([0, 0, 1.0]), np.array([1.0, 0, 0])
_d = (B - A) / np.linalg.norm(B - A)
U = np.cross(_d, EZ) / np.linalg.norm(np.cross(_d, EZ))
W = np.cross(_d, U)
#: name: mass, inertia about G (global axes at t = 0), G, three directions (points' differences or
#: vectors, by the names of the model's coordinates or the ground's)
BODIES = {
    "crank": (1.0, np.diag([0.002, 0.004, 0.004]), A / 2, [("O1", "A"), "ez", "cy"]),
    "coupler": (2.0, np.diag([0.01, 0.03, 0.02]), (A + B) / 2, [("A", "B"), "u", "w"]),
    "rocker": (0.5, np.diag([0.001, 0.003, 0.003]), (O2 + B) / 2, [("O2", "B"), "ex", "ry"]),
}
FIXED = {"O1": O1, "O2": O2, "ez": EZ, "ex": EX}


def rssr(named=True):
    """Crank (revolute about the ground z axis at O1), coupler (ball joints at A and B, a free
    spin about its axis), rocker (revolute about the ground x axis at O2); gravity −y."""
    s = SpatialSystem("rssr")
    s.ground_point("O1", O1)
    s.ground_vector("ez", EZ)
    s.ground_point("O2", O2)
    s.ground_vector("ex", EX)
    for name, where in (("O1c", O1), ("A", A), ("A2", A), ("B", B), ("B2", B), ("O2r", O2)):
        s.point(name, where)
    for name, d in (("ezc", EZ), ("cy", (0, 1, 0)), ("u", U), ("w", W), ("exr", EX),
                    ("ry", (0, 1, 0))):
        s.vector(name, d)
    for name, pts, vecs in (("crank", ["O1c", "A"], ["ezc", "cy"]),
                            ("coupler", ["A2", "B"], ["u", "w"]),
                            ("rocker", ["O2r", "B2"], ["exr", "ry"])):
        m, inertia, com, _ = BODIES[name]
        s.body(name, mass=m, inertia=inertia.tolist(), com=com, points=pts, vectors=vecs)
    s.revolute("ground", "O1", "ez", "crank", "O1c", "ezc", name="R1" if named else None)
    s.spherical("crank", "A", "coupler", "A2", name="ball_A" if named else None)
    s.spherical("coupler", "B", "rocker", "B2", name="ball_B" if named else None)
    s.revolute("ground", "O2", "ex", "rocker", "O2r", "exr", name="R2" if named else None)
    s.gravity(G)
    return s


def _skew_inv(S):
    return np.stack([S[:, 2, 1], S[:, 0, 2], S[:, 1, 0]], axis=1)


def _newton_euler(mdl, r, name, loads):
    """max |Σ F + m g − m a_G| and max |Σ M_G − d/dt(I_G ω)| of body ``name`` under ``loads``
    [(point, F, M)], its motion from the run's x, ẋ, ẍ: X = three directions, [ω]× = Ẋ X⁻¹,
    [α]× = Ẍ X⁻¹ − [ω]×², I_G = R I₀ Rᵀ with R = X X₀⁻¹."""
    N = len(r.t)

    def el(elem, arr):
        if elem in FIXED:
            return np.broadcast_to(FIXED[elem] if arr is r.x else 0 * FIXED[elem], (N, 3))
        return arr[:, [mdl.coord_names.index(f"{elem}.{c}") for c in "xyz"]]

    def dirs(arr):
        return np.stack([el(d[1], arr) - el(d[0], arr) if isinstance(d, tuple) else el(d, arr)
                         for d in spec], axis=2)
    m, I0, G0, spec = BODIES[name]
    X, Xd, Xdd = dirs(r.x), dirs(r.xd), dirs(r.xdd)
    Om = Xd @ np.linalg.inv(X)
    w, al = _skew_inv(Om), _skew_inv(Xdd @ np.linalg.inv(X) - Om @ Om)
    P0, P0dd = el(spec[0][0], r.x), el(spec[0][0], r.xdd)
    c = np.linalg.solve(X[0], G0 - P0[0])
    Gp, aG = P0 + X @ c, P0dd + Xdd @ c
    Rm = X @ np.linalg.inv(X[0])
    inertia = Rm @ I0 @ np.transpose(Rm, (0, 2, 1))
    dH = np.einsum("nij,nj->ni", inertia, al) + np.cross(w, np.einsum("nij,nj->ni", inertia, w))
    F = m * np.array([0, -G, 0]) + sum(Fl for _, Fl, _ in loads)
    M = sum(np.cross(P - Gp, Fl) + Ml for P, Fl, Ml in loads)
    return np.abs(F - m * aG).max(), np.abs(M - dH).max(), el


@pytest.fixture(scope="module")
def rssr_run():
    mdl = rssr().model()
    return mdl, symgen.simulate(mdl, dt=1e-3, t_end=0.5, every=5)


def test_rssr_reactions_satisfy_newton_euler_on_every_body(rssr_run):
    """The ball joints' and revolutes' forces and moments (read by name) with gravity move each
    body as Newton–Euler says, to round-off; measured ≤ 2e-13 N and 5e-14 N·m."""
    mdl, r = rssr_run
    R = r.reactions(mdl)
    assert set(R) == {"R1", "ball_A", "ball_B", "R2"}

    def vec(joint, kind):
        return np.stack([R[joint][f"{kind}{c}"] for c in "xyz"], axis=1)
    el = _newton_euler(mdl, r, "coupler", [])[2]
    Ap, Bp, O1p, O2p = el("A", r.x), el("B", r.x), el("O1", r.x), el("O2", r.x)
    for name, loads in (
            ("crank", [(O1p, vec("R1", "F"), vec("R1", "M")), (Ap, -vec("ball_A", "F"), 0)]),
            ("coupler", [(Ap, vec("ball_A", "F"), 0), (Bp, -vec("ball_B", "F"), 0)]),
            ("rocker", [(O2p, vec("R2", "F"), vec("R2", "M")), (Bp, vec("ball_B", "F"), 0)])):
        dF, dM, _ = _newton_euler(mdl, r, name, loads)
        assert dF < 1e-10 and dM < 1e-11, (name, dF, dM)
    # a ball joint carries no moment; a revolute none about its axis
    for comp in ("Mx", "My", "Mz"):
        assert np.abs(R["ball_A"][comp]).max() == 0
    assert np.abs(R["R1"]["Mz"]).max() < 1e-12 and np.abs(R["R2"]["Mx"]).max() < 1e-12
    assert np.abs(vec("ball_A", "F")).max() > 1.0       # not trivially zero


def test_spatial_default_joint_names():
    mdl = rssr(named=False).model()
    joints = {k.rpartition(".")[0] for k in mdl.reactions}
    assert joints == {"revolute_ground_crank", "spherical_crank_coupler",
                      "spherical_coupler_rocker", "revolute_ground_rocker"}


# -- reactions as signals: the Result's columns, main.c's CSV, the FMU's outputs ----------------------
SETTINGS = dict(dt=1e-3, t_end=0.2)


@pytest.fixture(scope="module")
def rssr_signals():
    mdl = rssr().model(settings=SETTINGS)
    return mdl, symgen.simulate(mdl)


def _python(mdl, r) -> dict:
    """{"reaction:<joint>.<component>": column} from Result.reactions (sympy.lambdify)."""
    return {f"reaction:{j}.{c}": v for j, d in r.reactions(mdl).items() for c, v in d.items()}


def test_result_columns_equal_the_python_reactions_and_the_summary_names_the_peaks(rssr_signals):
    mdl, r = rssr_signals
    want = _python(mdl, r)
    assert [o for o in r.output_names if o.startswith("reaction:")] == list(want)
    scale = max(np.abs(v).max() for v in want.values())
    assert max(np.abs(r.output(k) - v).max() for k, v in want.items()) < 1e-13 * scale
    assert r.units["outputs"]["reaction:ball_A.Fx"] == "N"
    assert r.units["outputs"]["reaction:R1.Mx"] == "N·m"
    line = next(ln for ln in r.summary() if "peak reaction" in ln)
    peak = np.sqrt(sum(want[f"reaction:ball_A.F{c}"] ** 2 for c in "xyz")).max()
    assert "ball_A" in line and f"ball_A {peak:.4g} N" in line


def test_main_c_prints_the_reactions_equal_to_pythons(rssr_signals, tmp_path):
    """main.c's reaction columns at its own steps against Result.reactions of simulate's (the same
    C step: x, ẋ, ẍ, λ agree to round-off over 200 steps; measured 7e-15 N of 42 N)."""
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    mdl, r = rssr_signals
    symgen.generate(mdl, tmp_path)
    proc = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2",
                           "-o", "sim", "main.c", f"{mdl.name}.c", "symgen_runtime.c",
                           "symgen_sparse.c", "-lm"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    out = subprocess.run([str(tmp_path / "sim")], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    header = lines[0].split(",")
    data = np.array([[float(v) for v in ln.split(",")] for ln in lines[1:]])
    assert len(data) == len(r.t)
    want = _python(mdl, r)
    scale = max(np.abs(v).max() for v in want.values())
    for name, ref in want.items():
        assert np.abs(data[:, header.index(name)] - ref).max() < 1e-11 * scale, name


def test_fmu_reports_the_ball_joints_force_by_name_equal_to_simulates(rssr_signals, tmp_path):
    fmpy = pytest.importorskip("fmpy")
    mdl, r = rssr_signals
    path = symgen.export_fmu(mdl, tmp_path / "rssr.fmu")
    names = [f"reaction:ball_A.F{c}" for c in "xyz"] + ["reaction:R2.My"]
    md = fmpy.read_model_description(str(path))
    units = {v.name: v.unit for v in md.modelVariables if v.causality == "output"}
    assert units["reaction:ball_A.Fx"] == "N" and units["reaction:R2.My"] == "N·m"
    got = fmpy.simulate_fmu(str(path), stop_time=SETTINGS["t_end"], output_interval=0.01,
                            output=names)
    rows = np.searchsorted(r.t, got["time"] - 1e-12)
    np.testing.assert_allclose(r.t[rows], got["time"], rtol=0, atol=1e-12)
    want = _python(mdl, r)
    for name in names:
        ref = want[name][rows]
        assert np.abs(got[name] - ref).max() < 1e-11 * np.abs(want[name]).max(), name


def test_reactions_can_be_left_out():
    """``model(reactions=False)``: no reactions, no columns, and the hash a model without them has
    (Model.reactions enters the hash only when present)."""
    s = PlanarSystem("pend")
    bob = s.body("bob", mass=1.0, inertia=0.1, points={"pivot": (0, 1.0)}, x0=(0, -1.0, 0))
    s.revolute("ground", (0, 0), bob, "pivot", name="pin")
    s.gravity(G)
    full, bare = s.model(), s.model(reactions=False)
    assert not bare.reactions and list(full.reactions) == ["pin.Fx", "pin.Fy", "pin.Mz"]
    assert full.replace(reactions=None).hash == bare.hash != full.hash
    r = symgen.simulate(symgen.LambdifyKernels(bare), dt=0.01, t_end=0.05, stepper="python")
    assert not any(o.startswith("reaction:") for o in r.output_names)


def test_universal_joints_moment_drives_the_output_shaft():
    """The Hooke joint of tests/test_spatial_joints.py: the cross's moment on the output shaft
    about its bearing axis b is s_out α₂, α₂ = b·(r × r̈) from the run's output arm r (the ground's
    bearing at O and along b gives no moment about b); measured 4e-16 N·m of 0.1 N·m."""
    from test_spatial_joints import _hooke

    s, a, b, w0, s_in, s_out = _hooke()
    mdl = s.model()
    r = symgen.simulate(symgen.LambdifyKernels(mdl), dt=1e-3, t_end=0.5, stepper="python",
                        every=10)
    cross = r.reactions(mdl)["cross"]
    M = np.stack([cross[f"M{c}"] for c in "xyz"], 1)
    i_r = [mdl.coord_names.index(f"r.{c}") for c in "xyz"]
    alpha2 = np.cross(r.x[:, i_r], r.xdd[:, i_r]) @ b
    assert np.abs(M @ b - s_out * alpha2).max() < 1e-10 * s_out * np.abs(alpha2).max()
    assert np.abs(alpha2).max() > 1.0                    # the output shaft does accelerate


def test_outputs_may_not_take_the_reactions_prefix():
    from symgen.model import ModelError
    x = symgen.Model("p", ["x"], [[1]], [0]).coords[0]
    with pytest.raises(ModelError, match="'reaction:pin.Fx' is reserved"):
        symgen.Model("p", ["x"], [[1]], [0], outputs={"reaction:pin.Fx": x})


def test_the_memory_check_counts_the_reaction_columns(monkeypatch):
    """The reaction columns are part of the result: the run's memory check counts them (3 a pin
    here), so a budget that holds the rows without them refuses the run, naming the `every` that
    fits (before, it passed and the columns were added past the budget)."""
    from symgen.recorder import MemoryBudgetError, bytes_per_record

    mdl = _pendulum()
    kern = symgen.build(mdl)
    assert len(kern.reaction_names) == 3
    steps = 1000
    n_out = len(mdl.output_names)            # (the pendulum declares no power outputs)
    without = (steps + 1) * bytes_per_record(mdl.n, mdl.m, n_out)
    monkeypatch.setenv("SYMGEN_MEMORY_LIMIT", str(without + 8))
    with pytest.raises(MemoryBudgetError, match="every"):
        symgen.simulate(kern, dt=1e-3, t_end=steps * 1e-3)
    lean = symgen.build(_pendulum().replace(reactions={}))
    assert symgen.simulate(lean, dt=1e-3, t_end=steps * 1e-3).status == "completed"


def test_each_rows_reactions_use_that_rows_inputs():
    """A pin whose force depends on an input torque varying along the run: the Result's
    reaction columns (the compiled kernel on each row's inputs, Kernels.reaction_rows) equal
    Result.reactions' sympy.lambdify on the recorded u, row by row."""
    s = PlanarSystem("pin_torque_input")
    b = s.body("bar", mass=1.5, inertia=0.08, com=(0.4, 0), x0=(0, 0, 0.3))
    s.revolute("ground", (0, 0), b, (0, 0), name="pin")
    s.gravity(9.81)
    s.torque(b, s.input("T"))
    mdl = s.model()
    r = symgen.simulate(mdl, dt=1e-3, t_end=1.0,
                        inputs={"T": ([0.0, 0.5, 1.0], [0.0, 6.0, -4.0])})
    assert np.ptp(r.u[:, 0]) > 9
    want = _python(mdl, r)
    scale = max(np.abs(v).max() for v in want.values())
    assert max(np.abs(r.output(k) - v).max() for k, v in want.items()) < 1e-13 * scale
