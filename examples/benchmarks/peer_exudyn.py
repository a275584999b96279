"""Exudyn (measured with 1.13.6) models of bench_peers.py's cases: the same problems as symgen's
examples (docs/benchmarks.md, /work/shared/benchmarks/problems.md), run by ``bench_peers.py``.

Every run is index-3 generalized-α, fixed step, full Newton (no modified Newton), no solution
file.  The time is ``SolveDynamic``'s CPU time (and wall time) of a run without sensors; the
accuracy comes from a second, identical run of a fresh system with a sensor on every node
(Exudyn is deterministic: the same trajectory), so the sensors cost the timed run nothing.

Linear solvers: ``exu-dense`` is Eigen's dense partial-pivot LU (``EigenDense``; faster here than
Exudyn's own ``EXUdense``, run too as ``exu-exudense`` for the double four-bar, whose earlier
figures used it), ``exu-sparse`` Eigen's ``SparseLU`` (``EigenSparse``).

Models:
- double four-bar: five ``RigidBody2D`` bars, seven ``RevoluteJoint2D``; ρ∞ = 0.8 (with ρ∞ = 1
  and the adaptive step its Newton fails at the singular passage near t = 7.5 s);
- N four-bar (issue 14): the same code with 2N + 1 bars and 3N + 1 joints (N = 2 is the double
  four-bar), the geometry and initial state of ``examples/n_four_bar.py``; ρ∞ = 0.8 (with ρ∞ = 1
  and the fixed step h = 1e-2, N = 10, Newton fails at the singular passage at t = 5.03 s);
- Bricard: five ``RigidBody`` rods (Euler parameters, brick inertia), six revolute joints made by
  ``CreateRevoluteJoint``; ρ∞ = 1.  With all six joints (30 equations, rank 29: the redundant
  joint kept) Exudyn's Newton does not converge with any of its solvers (EigenDense with
  ``ignoreSingularJacobian``, i.e. a full-pivot LU: Newton diverges at t = 0.19 s; EXUdense with
  it and EigenSparse: singular Jacobian at the first step; also with ρ∞ = 0.9…0.6 and
  ``pivotThreshold`` 1e-10…1e-6): the runner ``exu-dense-kept`` reports that failure.  The
  runners ``exu-dense`` / ``exu-sparse`` drop the one redundant equation instead: the joint at P5
  is a ``GenericJoint`` that keeps the three translations and the rotation about global z but
  not the one about global y (29 independent equations; dropping the one about z instead gives
  the same speed and 3.6× the energy drift at h = 1e-2) — less work for Exudyn than the problem
  symgen solves;
- spatial slider-crank (issue 22): three ``RigidBody`` (Euler parameters) with
  ``examples/slider_crank_3d.py``'s (default) data and rod axes, ``GenericJoint``s in the bodies'
  frames as in Exudyn's ``sliderCrank3Dtest`` (crank: revolute about x; slider: prismatic along
  x; crank–rod: spherical; slider–rod: constrained axes [1,1,1,0,0,1]); the settings of Exudyn's
  slider-crank models: generalized-α as Newmark with index-2 constraints, ρ∞ = 0.5 (the index-3
  default does not converge at h = 1e-3); the joint gap is that of the three joint points;
- stiff pendulum: one ``RigidBody2D`` with mass 1 and rotational inertia 0 (M = diag(1, 1, 0) as
  symgen's model), a ``RevoluteJoint2D`` pinning its local point (0, L) to the origin, gravity as
  ``LoadMassProportional``, the torque T0 sin(ω̄ t) as ``LoadTorqueVector`` with a *symbolic* user
  function (evaluated in C++; a Python one costs ~3.5 µs more per step); ρ∞ = 1 (trapezoidal
  rule, the generalized-α closest to symgen's Fox–Goodwin: Exudyn's Newmark option with
  β = 1/12, γ = 1/2 stops with a Newton failure at h = 0.1, as the classical index-3 Newmark
  does).

Accuracy, from the sensor run: the energy drift max|E − E0| (E = Σ ½ m v² + ½ ωᵀ I ω + m g y),
the largest joint gap max‖x_a + R_a p_a − x_b − R_b p_b‖ over all joints and steps (metres: the
position-level constraint residual; symgen's max|q| is the norm of its constraint vector), and
the case's own figure (B0 error at t_end, θ error against the minimal-coordinate reference; the
slider-crank's slider x, Bricard's rod 2 midpoint x at t_end against the reference ``run`` is
given).
"""
from __future__ import annotations

import time

import numpy as np

#: runner → (linear solver, keep the redundant Bricard joint, step divisor)
RUNNERS = {
    "exu-dense": ("EigenDense", False, 1),
    "exu-exudense": ("EXUdense", False, 1),
    "exu-sparse": ("EigenSparse", False, 1),
    "exu-dense-kept": ("EigenDense-fullpiv", True, 1),
    "exu-dense-h/16": ("EigenDense", False, 16),
}
#: case's example → (runners, spectral radius)
CASE_RUNNERS = {
    "double_four_bar": (("exu-dense", "exu-exudense", "exu-sparse"), 0.8),
    "n_four_bar": (("exu-dense", "exu-sparse"), 0.8),
    "bricard": (("exu-dense-kept", "exu-dense", "exu-sparse"), 1.0),
    "stiff_pendulum": (("exu-dense", "exu-dense-h/16"), 1.0),
    "slider_crank_3d": (("exu-dense",), 0.5),
}
#: examples run as Newmark with index-2 constraints (Exudyn's own settings for them)
NEWMARK_INDEX2 = ("slider_crank_3d",)


class _Model:
    """An Exudyn system plus what the accuracy needs: bodies (node, mass, inertia diagonal) and
    joints ((node or None for ground, local point or the ground point), twice)."""

    def __init__(self, exu):
        self.exu = exu
        self.SC = exu.SystemContainer()
        self.mbs = self.SC.AddSystem()
        self.bodies, self.joints, self.g = [], [], 0.0
        self.up = 1                      # the axis gravity acts against (y)


def _four_bar(exu, ei, N=2, v0=1.0, L=1.0, m=1.0, g=9.81) -> _Model:
    md = _Model(exu)
    mbs, md.g = md.mbs, g
    ground = mbs.AddObject(ei.ObjectGround())

    def body(x, y, th, vx, vy, w):
        n = mbs.AddNode(ei.NodeRigidBody2D(referenceCoordinates=[x, y, th],
                                           initialVelocities=[vx, vy, w]))
        b = mbs.AddObject(ei.ObjectRigidBody2D(mass=m, inertia=m * L * L / 12, nodeNumber=n))
        mm = mbs.AddMarker(ei.MarkerBodyMass(bodyNumber=b))
        mbs.AddLoad(ei.LoadMassProportional(markerNumber=mm, loadVector=[0, -g, 0]))
        md.bodies.append((n, m, np.array([0.0, 0.0, m * L * L / 12])))
        return n, b

    def joint(a, pa, b, pb):
        """a, b: (node, body) or None (ground, then pa/pb is the global point)"""
        mk = [mbs.AddMarker(ei.MarkerBodyPosition(bodyNumber=ground if o is None else o[1],
                                                  localPosition=[p[0], p[1], 0]))
              for o, p in ((a, pa), (b, pb))]
        mbs.AddObject(ei.ObjectJointRevolute2D(markerNumbers=mk))
        md.joints.append((None if a is None else a[0], np.r_[pa, 0.0],
                          None if b is None else b[0], np.r_[pb, 0.0]))

    V = [body(i * L, L / 2, np.pi / 2, v0 / 2, 0, -v0 / L) for i in range(N + 1)]
    C = [body((i - 0.5) * L, L, 0, v0, 0, 0) for i in range(1, N + 1)]
    A, B = (-L / 2, 0.0), (L / 2, 0.0)
    for i in range(N + 1):
        joint(None, (i * L, 0.0), V[i], A)
    for i in range(1, N + 1):
        joint(V[i - 1], B, C[i - 1], A)
        joint(C[i - 1], B, V[i], B)
    md.B0, md.N = (V[0][0], L / 2), N
    return md


def _bricard(exu, ei, keep: bool, L=1.0, a=0.1, m=1.0, g=9.81) -> _Model:
    from exudyn.rigidBodyUtilities import InertiaCuboid

    md = _Model(exu)
    mbs, md.g = md.mbs, g
    ground = mbs.CreateGround(referencePosition=[0, 0, 0])
    P = np.array([(0, 0, 0), (1, 0, 0), (1, -1, 0), (1, -1, 1), (0, -1, 1), (0, 0, 1)], float)
    AX = np.array([(0, 1, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0)], float)
    items, mids = [ground], [None]
    for i in range(1, 6):
        sides = [L if d else a for d in np.abs(P[i] - P[i - 1])]
        inertia = InertiaCuboid(density=m / (L * a * a), sideLengths=sides)
        mid = (P[i] + P[i - 1]) / 2
        b = mbs.CreateRigidBody(inertia=inertia, referencePosition=mid, gravity=[0, -g, 0],
                                nodeType=exu.NodeType.RotationEulerParameters, returnDict=True)
        items.append(b["bodyNumber"])
        mids.append(mid)
        I = m * (np.sum(np.square(sides)) - np.square(sides)) / 12
        md.bodies.append((b["nodeNumber"], m, I))
    items.append(ground)
    mids.append(None)
    nodes = [None] + [bd[0] for bd in md.bodies] + [None]
    for j in range(6):
        if j == 5 and not keep:
            # joint axes x, y, z = global y, z, x (the hinge); constrained: the translations and
            # the rotation about joint y = global z; the one about global y is redundant
            R = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]], float)
            mbs.CreateGenericJoint(itemNumbers=[items[j], items[j + 1]], position=P[j],
                                   rotationMatrixAxes=R, constrainedAxes=[1, 1, 1, 0, 1, 0],
                                   useGlobalFrame=True, show=False)
        else:
            mbs.CreateRevoluteJoint(itemNumbers=[items[j], items[j + 1]], position=P[j],
                                    axis=AX[j], useGlobalFrame=True, show=False)
        md.joints.append((nodes[j], P[j] if mids[j] is None else P[j] - mids[j],
                          nodes[j + 1], P[j] if mids[j + 1] is None else P[j] - mids[j + 1]))
    return md


def _stiff_pendulum(exu, ei, m=1.0, L=1.0, g=9.8, T0=0.1, wbar=0.1) -> _Model:
    from exudyn.advancedUtilities import CreateSymbolicUserFunction

    md = _Model(exu)
    mbs, md.g = md.mbs, g
    ground = mbs.AddObject(ei.ObjectGround())
    n = mbs.AddNode(ei.NodeRigidBody2D(referenceCoordinates=[0, -L, 0]))
    b = mbs.AddObject(ei.ObjectRigidBody2D(mass=m, inertia=0.0, nodeNumber=n))
    mbs.AddLoad(ei.LoadMassProportional(markerNumber=mbs.AddMarker(ei.MarkerBodyMass(bodyNumber=b)),
                                        loadVector=[0, -g, 0]))
    mk = [mbs.AddMarker(ei.MarkerBodyPosition(bodyNumber=ground, localPosition=[0, 0, 0])),
          mbs.AddMarker(ei.MarkerBodyPosition(bodyNumber=b, localPosition=[0, L, 0]))]
    mbs.AddObject(ei.ObjectJointRevolute2D(markerNumbers=mk))

    def torque(mbs, t, load):
        return [0, 0, load[2] * exu.symbolic.sin(wbar * t)]

    md.keep = CreateSymbolicUserFunction(mbs, torque, "loadVectorUserFunction",
                                         itemTypeName="LoadTorqueVector")
    mbs.AddLoad(ei.LoadTorqueVector(markerNumber=mbs.AddMarker(ei.MarkerBodyRigid(bodyNumber=b)),
                                    loadVector=[0, 0, T0], loadVectorUserFunction=md.keep))
    md.bodies.append((n, m, np.zeros(3)))
    md.joints.append((None, np.zeros(3), n, np.array([0.0, L, 0.0])))
    md.theta = n
    return md


def _slider_crank_3d(exu, ei) -> _Model:
    from exudyn.utilities import GenericJoint, MarkerBodyRigid, RigidBodyInertia

    from symgen.examples import slider_crank_3d as sc

    md = _Model(exu)
    mbs, md.g, md.up = md.mbs, 9.81, 2
    g, nt = [0, 0, -9.81], exu.NodeType.RotationEulerParameters
    bodies = [((0.12, [1e-4, 1e-5, 1e-4]), dict(referencePosition=sc.A,
                                                initialAngularVelocity=sc.OMEGA_CRANK)),
              ((0.5, [4e-4, 4e-3, 4e-3]), dict(
                  referencePosition=(sc.B + sc.C) / 2, referenceRotationMatrix=sc.rod_axes(),
                  initialVelocity=np.cross(sc.OMEGA_CRANK, sc.B - sc.A) / 2 + [0.12, 0, 0],
                  initialAngularVelocity=sc.OMEGA_ROD)),
              ((2.0, [1e-4] * 3), dict(referencePosition=sc.C, initialVelocity=[0.24, 0, 0]))]
    nums = []
    for (m, I), kw in bodies:
        b = mbs.CreateRigidBody(inertia=RigidBodyInertia(m, np.diag(I)), nodeType=nt,
                                gravity=g, returnDict=True, **kw)
        nums.append(b["bodyNumber"])
        md.bodies.append((b["nodeNumber"], m, np.array(I)))
    ground = mbs.CreateGround()

    def mk(body, p=(0, 0, 0)):
        return mbs.AddMarker(MarkerBodyRigid(bodyNumber=body, localPosition=list(p)))

    crank, rod, slider = nums
    nodes = [bd[0] for bd in md.bodies]
    for pair, axes in (((mk(ground, sc.A), mk(crank)), [1, 1, 1, 0, 1, 1]),
                       ((mk(ground), mk(slider)), [0, 1, 1, 1, 1, 1]),
                       ((mk(crank, (0, 0, 0.08)), mk(rod, (-0.15, 0, 0))), [1, 1, 1, 0, 0, 0]),
                       ((mk(slider), mk(rod, (0.15, 0, 0))), [1, 1, 1, 0, 0, 1])):
        mbs.AddObject(GenericJoint(markerNumbers=list(pair), constrainedAxes=axes))
    md.joints = [(None, sc.A, nodes[0], np.zeros(3)),
                 (nodes[0], np.array([0, 0, 0.08]), nodes[1], np.array([-0.15, 0, 0])),
                 (nodes[2], np.zeros(3), nodes[1], np.array([0.15, 0, 0]))]
    md.slider = nodes[2]
    return md


def _build(example: str, runner: str, N: int = 2):
    import exudyn as exu
    import exudyn.itemInterface as ei

    if example in ("double_four_bar", "n_four_bar"):
        return _four_bar(exu, ei, N=2 if example == "double_four_bar" else N)
    if example == "bricard":
        return _bricard(exu, ei, keep=RUNNERS[runner][1])
    if example == "slider_crank_3d":
        return _slider_crank_3d(exu, ei)
    return _stiff_pendulum(exu, ei)


def _settings(exu, solver: str, rho: float, h: float, steps: int, index2: bool = False):
    s = exu.SimulationSettings()
    ti = s.timeIntegration
    ti.numberOfSteps, ti.endTime = steps, steps * h
    ti.verboseMode, ti.adaptiveStep = 0, False
    ti.newton.useModifiedNewton = False
    ti.generalizedAlpha.spectralRadius = rho
    ti.generalizedAlpha.useNewmark = ti.generalizedAlpha.useIndex2Constraints = index2
    s.solution.file.write = False
    s.solution.sensors.writePeriod = h
    if solver == "EigenDense-fullpiv":
        s.linearSolver.solverType = exu.LinearSolverType.EigenDense
        s.linearSolver.ignoreSingularJacobian = True
    else:
        s.linearSolver.solverType = getattr(exu.LinearSolverType, solver)
    return s


def _solve(md: _Model, s) -> tuple[float, float, str, float, int]:
    """(CPU time, wall time, status, time reached, Newton iterations)"""
    tic, cpu = time.perf_counter(), time.process_time()
    try:
        md.mbs.SolveDynamic(s)
        status = "completed"
    except Exception as exc:             # noqa: BLE001 - Exudyn raises SolverError / RuntimeError
        status = f"failed ({type(exc).__name__})"
    cpu, wall = time.process_time() - cpu, time.perf_counter() - tic
    it = md.mbs.sys["dynamicSolver"].it
    return cpu, wall, status, float(it.currentTime), int(it.newtonStepsCount)


def _accuracy(md: _Model, example: str, t_end: float, oracles) -> dict:
    """Energy drift, largest joint gap and the case's figure from a run with sensors."""
    mbs = md.mbs
    rec = {n: [mbs.GetSensorStoredData(sn)[:, 1:] for sn in sns] for n, sns in md.sensors.items()}
    t = mbs.GetSensorStoredData(next(iter(md.sensors.values()))[0])[:, 0]
    E = 0.0
    for n, m, I in md.bodies:
        pos, vel, om, _ = rec[n]
        E = E + 0.5 * m * np.sum(vel ** 2, 1) + 0.5 * np.sum(I * om ** 2, 1) \
            + m * md.g * pos[:, md.up]

    def point(n, p):
        if n is None:
            return p[None, :]
        pos, _, _, R = rec[n]
        return pos + np.einsum("kij,j->ki", R.reshape(-1, 3, 3), p)

    gap = max(float(np.max(np.linalg.norm(point(na, pa) - point(nb, pb), axis=1)))
              for na, pa, nb, pb in md.joints)
    out = {"energy_drift": float(np.max(np.abs(E - E[0]))), "max_q": gap, "t_rec": t}
    if example in ("double_four_bar", "n_four_bar") and oracles is not None:
        B = point(md.B0[0], np.array([md.B0[1], 0.0, 0.0]))[-1]
        B_ref, _ = oracles.four_bar_reference(md.N, np.array([0.0, t_end]))
        out["err"] = float(np.hypot(B[0] - B_ref[0, -1], B[1] - B_ref[1, -1]))
        Bx = point(md.B0[0], np.array([md.B0[1], 0.0, 0.0]))[:, 0]        # (work_precision.py)
        out["err_Bx_max"] = float(np.max(np.abs(Bx - oracles.four_bar_reference(md.N, t)[0][0])))
    if example == "stiff_pendulum":
        from symgen.reproduce.references import minimal_pendulum, scipy_reference

        th = mbs.GetSensorStoredData(md.th_sensor)[:, -1]
        x, _ = scipy_reference(minimal_pendulum(), t)
        out["err"] = float(np.max(np.abs(th - x[:, 0])))
    if example == "slider_crank_3d" and md.x_ref is not None:
        out["err"] = float(abs(rec[md.slider][0][-1, 0] - md.x_ref))
    if example == "bricard" and md.x_ref is not None:        # rod 2's centre: its midpoint
        out["err"] = float(abs(rec[md.bodies[1][0]][0][-1, 0] - md.x_ref))
    del out["t_rec"]
    return out


def run(example: str, runner: str, h: float, t_end: float, oracles=None, N: int = 2,
        x_ref: float | None = None) -> dict:
    """One Exudyn run of ``example`` (timed, then the sensor run for the accuracy); ``N``: the
    N four-bar's N; ``x_ref``: the reference of the slider-crank's slider x or Bricard's rod 2
    midpoint x at t_end."""
    import exudyn as exu
    import exudyn.itemInterface as ei

    solver, _, div = RUNNERS[runner]
    rho = CASE_RUNNERS[example][1]
    h = h / div
    steps = int(round(t_end / h))
    md = _build(example, runner, N)
    md.mbs.Assemble()
    index2 = example in NEWMARK_INDEX2
    cpu, wall, status, t_reached, iters = _solve(md, _settings(exu, solver, rho, h, steps, index2))
    done = status == "completed"
    out = {"runner": runner, "status": status if done else f"{status} at t = {t_reached:.4g}",
           "steps": steps, "h": h, "us_per_step": 1e6 * cpu / steps if done else float("nan"),
           "cpu": cpu if done else float("nan"), "wall": wall if done else float("nan"),
           "iters_per_step": iters / steps, "solver": solver, "rho": rho}
    if status != "completed":
        return out
    md = _build(example, runner, N)
    ov = exu.OutputVariableType
    md.sensors = {n: [md.mbs.AddSensor(ei.SensorNode(nodeNumber=n, outputVariableType=o,
                                                     storeInternal=True, writeToFile=False))
                      for o in (ov.Position, ov.Velocity, ov.AngularVelocityLocal,
                                ov.RotationMatrix)]
                  for n, _, _ in md.bodies}
    if example == "stiff_pendulum":
        md.th_sensor = md.mbs.AddSensor(ei.SensorNode(nodeNumber=md.theta, storeInternal=True,
                                                      outputVariableType=ov.Rotation,
                                                      writeToFile=False))
    md.mbs.Assemble()
    md.x_ref = x_ref
    _solve(md, _settings(exu, solver, rho, h, steps, index2))
    out.update(_accuracy(md, example, t_end, oracles))
    return out
