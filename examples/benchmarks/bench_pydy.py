"""Work–precision against PyDy: PyDy's generated Cython right-hand side integrated by SciPy's
LSODA (``odeint``) and DOP853 (``solve_ivp``) beside symgen with its defaults (compiled stepper;
no chart, metric or scheme given), fixed steps and ``dt="auto"``.

Cases (``--cases``, comma-separated):

- ``chain5``, ``chain20``: the open N-link planar pendulum chain (uniform rods 1 m, 1 kg,
  I = mL²/12, g = 9.81 along −y, pinned at the origin, released horizontal along +x at rest);
  error: the tip's position error at t_end, 5 s for N = 5 and 2 s for N = 20 (its references
  agree to 2e-11 up to 6 s and part after, the motion is chaotic; 2 s because symgen's N = 20
  steps cost 0.2–0.5 ms: the full run takes about 5 min of CPU).  ONE
  ``sympy.physics.mechanics.KanesMethod`` (absolute link angles, kd_eqs q̇ − u) is the source of
  PyDy's ``System(...).generate_ode_function(generator="cython")`` and of symgen's minimal
  model (``symgen.mechanics.from_sympy``: N coordinates, no constraints); symgen also runs the
  same chain from the planar builder (``PlanarSystem``: (x, y, θ) per rod, 2N revolute rows).
- ``dfb``: the double four-bar over 10 s; error: B0's position error at 10 s against the
  exact one-dof motion (the energy integral a_T θ̇²/2 + a_V g sin θ = E, t(θ) by mpmath
  quadrature at 30 digits).  PyDy runs the hand-reduced one-angle KanesMethod (the vertical bars
  turn by θ, the couplers translate); symgen the closed-loop ``examples/double_four_bar.py``
  (15 coordinates, 14 constraint rows; its recommended settings).

References: PyDy's rhs integrated by DOP853 and LSODA at rtol = atol = 1e-12 and 1e-13 (the
chains' reference is DOP853 at 1e-13; the double four-bar's the exact motion, the four runs a
check).  Their largest disagreement at t_end is printed; errors below max(1e-9, it) are not read
(marked ``*``, left out of the envelopes), and a family's tighter settings are not run after one
that gets below it or takes more than ``--max-run`` CPU seconds.

Per run: CPU seconds (``time.process_time``, the smallest of ``--repeat`` after a short warm-up
run of the setting; one BLAS thread), the error, the energy drift max|E − E0| and the steps
(symgen: ``steps_done``, the drift over every step from its Result; DOP853: accepted steps, the
drift over every step with E the KanesMethod's kinetic + potential energy lambdified; LSODA:
``nst``, the drift at 2001 output times of a second, untimed call at the same tolerance: odeint's
output times change its steps, so the timed call asks for t_end only).  symgen's time is its
whole ``simulate`` (consistent start, recording every step, energy, outputs, ω_max at the start).
PyDy's Cython rhs returns a buffer it reuses: ``solve_ivp`` gets
``lambda t, x: np.array(rhs(x, t, p))``.

Ratios: symgen's CPU over LSODA's (and DOP853's) at the same error, 1e-6 unless ``--at``, each
family's CPU read on its lower envelope (the runs no other of the family beats in both error and
CPU), log CPU linear in log error; "extrapolated" along its two nearest envelope points when a
family stops at most two decades short, else "not reached".  "symgen best" is the cheaper of its
fixed and auto families.  Below 1: symgen is faster.

Needs pydy and cython (``pip install -e ".[bench]"``); the models themselves (``chain_kane``,
``chain_from_sympy``, ``chain_planar``, ``four_bar_exact``) need only symgen
(tests/test_bench_pydy.py).

Run:  python examples/benchmarks/bench_pydy.py [--cases chain5,chain20,dfb] [--repeat 3] [--quick]
                                                [--at 1e-6] [-o docs/figures/bench_pydy.png]
      python examples/benchmarks/bench_pydy.py --from LOG --at 1e-4,1e-6   (no runs: re-read)
      python examples/benchmarks/bench_pydy.py --cases chain20 --agreement 8  (the references)
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import time
from pathlib import Path

import numpy as np
import sympy as sp

HERE = Path(__file__).resolve().parent
FIGURE = HERE.parents[1] / "docs" / "figures" / "bench_pydy.png"
G, MASS, LENGTH = 9.81, 1.0, 1.0
#: case → (links N or None for the double four-bar, t_end)
CASES = {"chain5": (5, 5.0), "chain20": (20, 2.0), "dfb": (None, 10.0)}
#: errors below max(READ_FLOOR, the references' spread) are not read
READ_FLOOR = 1e-9
TOLS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12)
DTS = (1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4)
RTOLS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12)
#: a family's extrapolation to the error the ratios are read at goes at most this many decades
EXTRAPOLATE_DECADES = 2.0


# -- models (symgen and sympy only) ----------------------------------------------------------------
def chain_kane(N: int):
    """The N-link chain as one KanesMethod: absolute link angles q_i about z from +x, speeds
    u_i = q̇_i.  Returns (kane, {name: symbol}, q, u, tip Point, origin Point, frame, T, V)."""
    import sympy.physics.mechanics as me

    q = me.dynamicsymbols(f"q1:{N + 1}")
    u = me.dynamicsymbols(f"u1:{N + 1}")
    m, L, g = sp.symbols("m L g")
    frame = me.ReferenceFrame("N")
    origin = me.Point("O")
    origin.set_vel(frame, 0)
    bodies, loads, joint = [], [], origin
    for i in range(N):
        B = frame.orientnew(f"B{i + 1}", "Axis", (q[i], frame.z))
        B.set_ang_vel(frame, u[i] * frame.z)
        C = joint.locatenew(f"C{i + 1}", L / 2 * B.x)
        C.v2pt_theory(joint, frame, B)
        nxt = joint.locatenew(f"P{i + 1}", L * B.x)
        nxt.v2pt_theory(joint, frame, B)
        bodies.append(me.RigidBody(f"link{i + 1}", C, B, m,
                                   (me.inertia(B, 0, 0, m * L ** 2 / 12), C)))
        loads.append((C, -m * g * frame.y))
        joint = nxt
    kane = me.KanesMethod(frame, q_ind=q, u_ind=u, kd_eqs=[qi.diff() - ui for qi, ui in zip(q, u)])
    kane.kanes_equations(bodies, loads)
    T = sum(b.kinetic_energy(frame) for b in bodies)
    V = sum(m * g * b.masscenter.pos_from(origin).dot(frame.y) for b in bodies)
    return kane, dict(m=m, L=L, g=g), q, u, joint, origin, frame, T, V


def chain_from_sympy(N: int, kane_parts=None):
    """symgen's minimal model of the chain from the KanesMethod (N coordinates q1…qN, m = 0);
    outputs ``tip.x``, ``tip.y``; V for the energy."""
    from symgen.mechanics import from_sympy

    kane, s, q, u, tip, origin, frame, T, V = kane_parts or chain_kane(N)
    return from_sympy(kane, params={s["m"]: MASS, s["L"]: LENGTH, s["g"]: G},
                      outputs={"tip": tip}, origin=origin, V=V, name=f"chain{N}_kane")


def chain_planar(N: int):
    """The same chain from the planar builder: rod i has (x, y, θ) of its centre, ends A, B at
    ∓L/2 on its x axis; revolute joints ground–A₁ and Bᵢ–Aᵢ₊₁; output ``tip`` (B_N)."""
    from symgen.mechanics import PlanarSystem

    sys_ = PlanarSystem(f"chain{N}_planar")
    ends = {"A": (-LENGTH / 2, 0), "B": (LENGTH / 2, 0)}
    rods = [sys_.body(f"rod{i + 1}", mass=MASS, inertia=MASS * LENGTH ** 2 / 12, points=ends,
                      x0=((i + 0.5) * LENGTH, 0, 0)) for i in range(N)]
    sys_.revolute("ground", (0, 0), rods[0], "A", name="O")
    for a, b in zip(rods, rods[1:]):
        sys_.revolute(a, "B", b, "A", name=f"{a.name}_{b.name}")
    sys_.gravity(G)
    sys_.output_point(rods[-1], "B", name="tip", velocity=False)
    return sys_.model()


def four_bar_kane(N: int = 2):
    """The N four-bar's hand-reduced one-angle KanesMethod: vertical bars (pivots at x = i) at
    the absolute angle θ from +x, couplers translating with their tops.  Returns (kane,
    {name: symbol}, [θ], [ω], B0 Point, origin, frame, T, V)."""
    import sympy.physics.mechanics as me

    th, w = me.dynamicsymbols("theta omega")
    m, L, g = sp.symbols("m L g")
    frame = me.ReferenceFrame("N")
    origin = me.Point("O")
    origin.set_vel(frame, 0)
    B = frame.orientnew("B", "Axis", (th, frame.z))
    B.set_ang_vel(frame, w * frame.z)
    bodies, tops = [], []
    for i in range(N + 1):
        pivot = origin.locatenew(f"O{i}", i * L * frame.x)
        pivot.set_vel(frame, 0)
        C = pivot.locatenew(f"V{i}c", L / 2 * B.x)
        C.v2pt_theory(pivot, frame, B)
        top = pivot.locatenew(f"B{i}", L * B.x)
        top.v2pt_theory(pivot, frame, B)
        tops.append(top)
        bodies.append(me.RigidBody(f"V{i}", C, B, m, (me.inertia(B, 0, 0, m * L ** 2 / 12), C)))
    for i in range(1, N + 1):
        C = tops[i - 1].locatenew(f"C{i}c", L / 2 * frame.x)
        C.set_vel(frame, tops[i - 1].vel(frame))
        bodies.append(me.RigidBody(f"C{i}", C, frame, m,
                                   (me.inertia(frame, 0, 0, m * L ** 2 / 12), C)))
    loads = [(b.masscenter, -m * g * frame.y) for b in bodies]
    kane = me.KanesMethod(frame, q_ind=[th], u_ind=[w], kd_eqs=[th.diff() - w])
    kane.kanes_equations(bodies, loads)
    T = sum(b.kinetic_energy(frame) for b in bodies)
    V = sum(m * g * b.masscenter.pos_from(origin).dot(frame.y) for b in bodies)
    return kane, dict(m=m, L=L, g=g), [th], [w], tops[0], origin, frame, T, V


def four_bar_exact(t_end: float, N: int = 2, v0: float = 1.0, dps: int = 30):
    """B0 = (cos θ, sin θ) L at t_end of the N four-bar from θ = π/2, θ̇ = −v0/L: the energy
    integral ½ a_T θ̇² + a_V g sin θ = E gives t(θ) = ∫_θ^{π/2} dφ / √(2 (E − a_V g sin φ)/a_T)
    (θ̇ < 0 throughout: E − a_V g ≥ ½ a_T (v0/L)² > 0), solved for θ(t_end) with mpmath."""
    import mpmath as mp

    mp.mp.dps = dps
    a_T = mp.mpf(N + 1) / 3 * MASS * LENGTH ** 2 + N * MASS * LENGTH ** 2
    a_V = mp.mpf(N + 1) / 2 * MASS * LENGTH + N * MASS * LENGTH
    E = a_T * (mp.mpf(v0) / LENGTH) ** 2 / 2 + a_V * G

    def rate(phi):
        return 1 / mp.sqrt(2 * (E - a_V * G * mp.sin(phi)) / a_T)

    turn = mp.quad(rate, [0, mp.pi / 2, mp.pi, 3 * mp.pi / 2, 2 * mp.pi])   # one revolution
    laps = int(mp.floor(t_end / turn))
    left = t_end - laps * turn

    def t_of(delta):           # time to turn by delta from θ = π/2 (θ falls)
        return mp.quad(rate, [mp.pi / 2 - delta, mp.pi / 2])

    guess = left / turn * 2 * mp.pi
    delta = mp.findroot(lambda d: t_of(d) - left, guess)
    theta = mp.pi / 2 - delta - laps * 2 * mp.pi
    return np.array([float(LENGTH * mp.cos(theta)), float(LENGTH * mp.sin(theta))])


# -- PyDy -----------------------------------------------------------------------------------------
def have_pydy() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("pydy", "Cython"))


class PyDySide:
    """PyDy's Cython rhs of one KanesMethod, the energy and the tip, and the two integrators."""

    def __init__(self, parts, x0, tip_of):
        from pydy.system import System

        kane, s, q, u, _tip, _origin, _frame, T, V = parts
        consts = {s["m"]: MASS, s["L"]: LENGTH, s["g"]: G}
        self.system = System(kane, constants=consts,
                             initial_conditions=dict(zip(list(q) + list(u), x0)))
        self.rhs = self.system.generate_ode_function(generator="cython")
        # the constants in the order the generated function takes them (its set's order)
        self.p = np.array([consts[c] for c in self.system.constants_symbols], float)
        probe = np.linspace(0.1, 0.9, len(x0))
        if not np.array_equal(np.array(self.rhs(probe, 0.0, self.p)),
                              np.array(self.rhs(probe, 0.0, dict(consts)))):
            raise RuntimeError("bench_pydy: PyDy's constants are not in the expected order")
        self.x0 = np.asarray(x0, float)
        n = len(q)
        plain = sp.symbols(f"_x0:{2 * n}")
        sub = dict(zip(list(q) + list(u), plain))
        energy = sp.sympify(T + V).subs(consts).xreplace(sub)
        self._energy = sp.lambdify([plain], energy, "numpy")
        self.tip_of = tip_of

    def energy(self, X):
        """E at the states X (rows)."""
        return np.array([self._energy(x) for x in X], float)

    def lsoda(self, t_end, tol, times=None):
        from scipy.integrate import odeint

        ts = np.array([0.0, t_end]) if times is None else times
        X, info = odeint(self.rhs, self.x0, ts, args=(self.p,), rtol=tol, atol=tol,
                         mxstep=10 ** 8, full_output=True)
        if info["message"] != "Integration successful.":
            raise RuntimeError(f"odeint: {info['message']}")
        return X, int(info["nst"][-1])

    def dop853(self, t_end, tol, times=None):
        from scipy.integrate import solve_ivp

        rhs, p = self.rhs, self.p
        sol = solve_ivp(lambda t, x: np.array(rhs(x, t, p)), (0.0, t_end), self.x0,
                        method="DOP853", rtol=tol, atol=tol, t_eval=times)
        if not sol.success:
            raise RuntimeError(f"solve_ivp DOP853: {sol.message}")
        return sol.y.T, len(sol.t) - 1


# -- cases ----------------------------------------------------------------------------------------
class Case:
    """One panel: the KanesMethod for PyDy (made on first use), symgen's models, the reference."""

    def __init__(self, name: str):
        N, self.t_end = CASES[name]
        self.name, self.N = name, N
        if N is None:
            self.title = f"double four-bar (B0 at {self.t_end:g} s)"
            self.x0 = [np.pi / 2, -1.0]
            self.tip = lambda X: LENGTH * np.array([np.cos(X[:, 0]), np.sin(X[:, 0])])
            self.models = {"closed loop": ("double_four_bar", "B0")}
        else:
            self.title = f"{N}-link chain (tip at {self.t_end:g} s)"
            self.x0 = np.zeros(2 * N)
            self.tip = lambda X: LENGTH * np.array([np.cos(X[:, :N]).sum(1),
                                                    np.sin(X[:, :N]).sum(1)])
            self.models = {"from_sympy": (lambda: chain_from_sympy(N, self.parts), "tip"),
                           "builder": (lambda: chain_planar(N), "tip")}

    @functools.cached_property
    def parts(self):
        return four_bar_kane(2) if self.N is None else chain_kane(self.N)

    def reference(self, pydy: PyDySide) -> tuple[np.ndarray, float, dict]:
        """The end point, the references' spread and their end points by name."""
        ends = {}
        for tol in (1e-12, 1e-13):
            ends[f"DOP853 {tol:g}"] = self.tip(pydy.dop853(self.t_end, tol)[0][-1:])[:, 0]
            ends[f"LSODA {tol:g}"] = self.tip(pydy.lsoda(self.t_end, tol)[0][-1:])[:, 0]
        if self.N is None:
            ends["exact (mpmath)"] = four_bar_exact(self.t_end)
            ref = ends["exact (mpmath)"]
        else:
            ref = ends["DOP853 1e-13"]
        spread = max(float(np.hypot(*(a - b))) for a in ends.values() for b in ends.values())
        return ref, spread, ends


def agreement(case: Case, t_max: float, every: float = 0.5) -> None:
    """The references' largest disagreement (DOP853, LSODA at 1e-12, 1e-13) from 0 to t_max."""
    pydy = PyDySide(case.parts, case.x0, case.tip)
    times = np.linspace(0.0, t_max, int(round(t_max / every)) + 1)
    tips = [case.tip(run(t_max, tol, times)[0]) for tol in (1e-12, 1e-13)
            for run in (pydy.dop853, pydy.lsoda)]
    spread = np.max([np.hypot(*(a - b)) for a in tips for b in tips], axis=0)
    print(f"\n{case.title}: the references' largest disagreement")
    for t, d in zip(times, spread):
        print(f"  t = {t:5.2f} s  {d:.1e}")


def _cpu(fn, repeat: int):
    """The smallest process time of ``repeat`` calls, and the last call's value."""
    best, out = np.inf, None
    for _ in range(repeat):
        tic = time.process_time()
        out = fn()
        best = min(best, time.process_time() - tic)
    return best, out


def run_symgen(kern, point: str, t_end: float, ref, repeat: int, dt=None, rtol=None, tol=None):
    """One symgen setting: (steps, CPU, error, drift, status).  No chart, metric or scheme given:
    the model's recommended settings and symgen's defaults decide them (``tol``: Newton's, when
    given)."""
    import symgen

    kw = dict(stepper="compiled", dt=dt) if rtol is None else \
        dict(stepper="compiled", dt="auto", rtol=rtol, atol=rtol)
    if tol is not None:
        kw["tol"] = tol
    symgen.simulate(kern, t_end=10 * dt if rtol is None else 1e-2, **kw)      # warm-up
    cpu, r = _cpu(lambda: symgen.simulate(kern, t_end=t_end, **kw), repeat)
    if r.status != "completed" or abs(r.t[-1] - t_end) > 1e-9 * t_end:
        return r.meta.get("steps_done", 0), cpu, np.nan, np.nan, f"{r.status} at t = {r.t[-1]:g}"
    tip = np.array([r.output(f"{point}.x")[-1], r.output(f"{point}.y")[-1]])
    drift = float(np.max(np.abs(r.energy - r.energy[0])))
    meta = f"{r.meta.get('chart')}/{r.meta.get('metric')}/{r.meta['scheme']['name']}"
    return r.meta["steps_done"], cpu, float(np.hypot(*(tip - ref))), drift, meta


def run_pydy(case: Case, pydy: PyDySide, method: str, tol: float, ref, repeat: int):
    """One PyDy setting: (steps, CPU, error, drift, status)."""
    if method == "LSODA":
        pydy.lsoda(1e-2, tol)                                                  # warm-up
        cpu, (X, steps) = _cpu(lambda: pydy.lsoda(case.t_end, tol), repeat)
        # the drift from a second call at 2001 output times (odeint's output times change its
        # steps, so the timed call asks for t_end only)
        E = pydy.energy(pydy.lsoda(case.t_end, tol, np.linspace(0.0, case.t_end, 2001))[0])
    else:
        pydy.dop853(1e-2, tol)
        cpu, (X, steps) = _cpu(lambda: pydy.dop853(case.t_end, tol), repeat)
        E = pydy.energy(X)
    err = float(np.hypot(*(case.tip(X[-1:])[:, 0] - ref)))
    return steps, cpu, err, float(np.max(np.abs(E - E[0]))), "completed"


# -- reading the figures ---------------------------------------------------------------------------
def envelope(points):
    """The lower envelope of (error, CPU) points: those no other point beats in both, by error."""
    pts = sorted((e, c) for e, c in points if np.isfinite(e) and e > 0)
    out = []
    for e, c in pts:
        if not out or c < out[-1][1]:
            out.append((e, c))
    return out


def cpu_at(points, err: float):
    """CPU at ``err`` on the envelope, log CPU linear in log error: (CPU, how) with how "" when
    interpolated, "extrapolated" along the two envelope points nearest ``err`` when the family
    stops short of it by at most EXTRAPOLATE_DECADES, else (nan, "not reached")."""
    env = envelope(points)
    if len(env) < 2:
        return np.nan, "not reached"
    le, lc = np.log(np.array(env)).T
    x = np.log(err)
    if le[0] <= x <= le[-1]:
        return float(np.exp(np.interp(x, le, lc))), ""
    if min(abs(x - le[0]), abs(x - le[-1])) > EXTRAPOLATE_DECADES * np.log(10):
        return np.nan, "not reached"
    (e0, c0), (e1, c1) = ((le[0], lc[0]), (le[1], lc[1])) if x < le[0] else \
        ((le[-2], lc[-2]), (le[-1], lc[-1]))
    return float(np.exp(c0 + (x - e0) * (c1 - c0) / (e1 - e0))), "extrapolated"


def drift_at(points, err: float) -> float:
    """Energy drift at ``err``: log drift linear in log error over the runs, by error."""
    pts = sorted((e, d) for e, d in points if np.isfinite(e) and e > 0 and d > 0)
    if len(pts) < 2 or not pts[0][0] <= err <= pts[-1][0]:
        return np.nan
    le, ld = np.log(np.array(pts)).T
    return float(np.exp(np.interp(np.log(err), le, ld)))


# -- main ------------------------------------------------------------------------------------------
def sweep(case: Case, args) -> tuple[list, float]:
    """Every run of a case: rows (family, model, setting, steps, CPU, error, drift, status)."""
    import symgen

    pick = (lambda v: v[::2]) if args.quick else (lambda v: v)
    pydy = PyDySide(case.parts, case.x0, case.tip)
    ref, spread, ends = case.reference(pydy)
    floor = max(READ_FLOOR, spread)
    print(f"\n{case.title}: references at t = {case.t_end:g}")
    for k, v in ends.items():
        print(f"  {k:16} ({v[0]: .12f}, {v[1]: .12f})")
    print(f"  largest disagreement {spread:.1e}; errors below {floor:.0e} are not read (*)",
          flush=True)
    rows = []

    def family(fam, model, settings, run):
        """The settings in order, until a run's CPU passes --max-run or its error the floor."""
        for key, value in settings:
            row = (fam, model, f"{key}={value:g}", *run(value))
            rows.append(row)
            if row[4] > args.max_run or row[5] < floor:
                left = settings[settings.index((key, value)) + 1:]
                if left:
                    why = (f"took {row[4]:.1f} s > --max-run" if row[4] > args.max_run
                           else "is below the reference's floor")
                    print(f"  ({fam}, {model}: {', '.join(f'{k}={v:g}' for k, v in left)} not "
                          f"run: {key}={value:g} {why})", flush=True)
                return

    for model, (make, point) in case.models.items():
        kern = symgen.build(symgen.load_model(make) if isinstance(make, str) else make())
        family("symgen fixed", model, [("dt", dt) for dt in pick(args.dts)],
               lambda dt: run_symgen(kern, point, case.t_end, ref, args.repeat, dt=dt,
                                     tol=args.tol))
        family("symgen auto", model, [("rtol", r) for r in pick(args.rtols)],
               lambda r: run_symgen(kern, point, case.t_end, ref, args.repeat, rtol=r,
                                    tol=args.tol))
    for method in ("LSODA", "DOP853"):
        family(method, "PyDy", [("tol", tol) for tol in pick(args.tols)],
               lambda tol: run_pydy(case, pydy, method, tol, ref, args.repeat))
    return rows, floor


def report(case: Case, rows, floor: float, at: list[float]) -> None:
    print(f"  {'family':13} {'model':12} {'setting':11} {'steps':>7} {'CPU s':>9} "
          f"{'tip error':>10} {'max|E-E0|':>10}  status")
    for fam, model, setting, steps, cpu, err, drift, status in rows:
        mark = "*" if err < floor else " "
        print(f"  {fam:13} {model:12} {setting:11} {steps:7d} {cpu:9.4g} {err:10.2e}{mark}"
              f"{drift:10.2e}  {status}")
    read = [r for r in rows if r[5] >= floor]
    fams = {(f, m): [(r[5], r[4]) for r in read if (r[0], r[1]) == (f, m)]
            for f, m in dict.fromkeys((r[0], r[1]) for r in rows)}
    drifts = {(f, m): [(r[5], r[6]) for r in read if (r[0], r[1]) == (f, m)]
              for f, m in fams}
    for err in at:
        read_at = {k: (*cpu_at(pts, err), drift_at(drifts[k], err)) for k, pts in fams.items()}
        for model in case.models:       # symgen: the cheaper of its fixed and auto runs
            read_at["symgen best", model] = min(
                (read_at[f, model] for f in ("symgen fixed", "symgen auto")),
                key=lambda v: v[0] if np.isfinite(v[0]) else np.inf)
        peers = {p: read_at[p, "PyDy"][0] for p in ("LSODA", "DOP853")}
        print(f"  at error {err:g}: {'CPU s':>9} {'read':13} {'/ LSODA':>9} {'/ DOP853':>9} "
              f"{'max|E-E0|':>10}")
        for (fam, model), (cpu, how, drift) in read_at.items():
            ratios = "".join(f" {cpu / peers[p]:9.3g}" for p in peers) \
                if fam.startswith("symgen") else " " * 20
            print(f"    {fam:13} {model:12} {cpu:9.3g} {how:13}{ratios} {drift:10.2e}")


def read_log(path: Path) -> list:
    """The panels (case, rows, floor) of a previous run's printed output (``--from``)."""
    by_title = {Case(name).title: name for name in CASES}
    panels, fams = [], ("symgen fixed", "symgen auto", "LSODA", "DOP853")
    for line in path.read_text().splitlines():
        if ": references at t =" in line and not line.startswith(" "):
            title = line.split(": references")[0]
            if title not in by_title:
                raise SystemExit(f"bench_pydy: {path}: unknown case {title!r}; try a log this "
                                 "script printed")
            panels.append((Case(by_title[title]), [], READ_FLOOR))
        elif "are not read" in line and panels:
            panels[-1] = (*panels[-1][:2], float(line.split("errors below ")[1].split()[0]))
        elif panels and line[2:15].strip() in fams and line.startswith("  ") \
                and not line.startswith("   "):
            setting, steps, cpu, err, drift, *status = line[29:].split()
            panels[-1][1].append((line[2:15].strip(), line[16:28].strip(), setting, int(steps),
                                  float(cpu), float(err.rstrip("*")), float(drift),
                                  " ".join(status)))
    if not panels:
        raise SystemExit(f"bench_pydy: {path} has no table of this script: try its printed "
                         "output (python bench_pydy.py > run.log)")
    return panels


def figure(panels, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib not installed: no figure)")
        return
    fig, axes = plt.subplots(2, len(panels), figsize=(5.5 * len(panels), 8), squeeze=False)
    marker = {"symgen fixed": "o", "symgen auto": "s", "LSODA": "^", "DOP853": "v"}
    color = {"symgen fixed": "C0", "symgen auto": "C3", "LSODA": "C2", "DOP853": "C4"}
    line = {"from_sympy": "-", "builder": "--", "closed loop": "--", "PyDy": ":"}
    for col, (case, rows, floor) in enumerate(panels):
        top, bottom = axes[0, col], axes[1, col]
        for fam, model in dict.fromkeys((r[0], r[1]) for r in rows):
            pts = [(r[5], r[4], r[6]) for r in rows            # in the sweep's order
                   if (r[0], r[1]) == (fam, model) and r[5] >= floor]
            if not pts:
                continue
            e, c, d = zip(*pts)
            label = f"{fam} ({model})" if fam.startswith("symgen") else f"PyDy {fam}"
            kw = dict(marker=marker[fam], ls=line[model], color=color[fam], label=label, ms=4,
                      mfc="none" if model in ("builder", "closed loop") else color[fam])
            top.loglog(c, e, **kw)
            bottom.loglog(e, d, **kw)
        top.axhspan(1e-20, floor, color="0.9")
        top.set_ylim(bottom=floor / 3)
        top.set_title(case.title, fontsize=10)
        top.set_xlabel("CPU time [s]")
        top.set_ylabel("tip error [m]" if case.N else "B0 error [m]")
        bottom.set_xlabel("tip error [m]" if case.N else "B0 error [m]")
        bottom.set_ylabel("max|E − E0| [J]")
        for ax in (top, bottom):
            ax.grid(True, which="both", alpha=0.3)
        top.legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    print(f"\nfigure: {out}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per setting, the smallest counts (default 3; --quick: 1)")
    ap.add_argument("--max-run", type=float, default=10.0,
                    help="CPU seconds: a family's tighter settings are not run after a longer run")
    ap.add_argument("--quick", action="store_true",
                    help="every other step, tolerance and rtol, one timed run (a smoke test)")
    ap.add_argument("--tol", type=float, default=None,
                    help="symgen's Newton tolerance (default: symgen's, 1e-10); not a default run")
    ap.add_argument("--at", default="1e-6", help="comma-separated errors to read the ratios at")
    ap.add_argument("-o", "--out", default=str(FIGURE), help="the figure (.png)")
    ap.add_argument("--from", dest="log", default=None, metavar="LOG",
                    help="read the runs from this script's printed output instead of running "
                         "them: the tables, the ratios at --at and the figure again")
    ap.add_argument("--agreement", type=float, default=None, metavar="T_MAX",
                    help="print where the references agree (every 0.5 s up to T_MAX) and stop")
    args = ap.parse_args(argv)
    at = [float(a) for a in args.at.split(",")]
    if args.log is not None:
        panels = read_log(Path(args.log))
        for case, rows, floor in panels:
            print(f"\n{case.title}: from {args.log}; errors below {floor:.0e} are not read (*)")
            report(case, rows, floor, at)
        figure(panels, Path(args.out))
        return 0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}: try one of {', '.join(CASES)}")
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    if not have_pydy():
        raise SystemExit('bench_pydy: needs pydy and cython: pip install -e ".[bench]"')
    args.dts, args.rtols, args.tols = DTS, RTOLS, TOLS
    if args.agreement is not None:
        for name in cases:
            agreement(Case(name), args.agreement)
        return 0
    from threadpoolctl import threadpool_limits

    panels = []
    start = time.process_time()
    with threadpool_limits(1):                 # one BLAS thread, as symgen's runs have
        for name in cases:
            case = Case(name)
            rows, floor = sweep(case, args)
            report(case, rows, floor, at)
            panels.append((case, rows, floor))
    print(f"\nCPU of this process: {time.process_time() - start:.0f} s")
    figure(panels, Path(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
