"""The spatial slider-crank's error at equal h and its energy drift (docs/spatial-accuracy.md).

symgen's null-space step (Python stepper, trapezoidal) with both charts and both metrics of the
Newmark relations' tangent part (``metric="euclidean"``, the paper's; ``"mass"``, M-orthogonal),
and Exudyn 1.13.6 (when installed: generalized-α as Newmark with index-2 constraints, ρ∞ = 0.5,
the settings of its ``slidercrank3Dbenchmark``) on the same mechanism.  Error: the slider
position at t = 1 s against a Richardson reference from symgen at h = 2e-5 and 1e-5 (compiled).
Energy: E(T) − E(0) and max|E − E(0)| over T seconds, and the drift split into the terms of the
step's exact energy balance (``energy_terms``).

Run:  python examples/benchmarks/spatial_accuracy.py [--T 5] [--no-exudyn]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import symgen  # noqa: E402
from symgen.examples import slider_crank_3d  # noqa: E402
from symgen.steppers.nullspace import NullspaceStepper  # noqa: E402

STEPS = (1e-3, 5e-4, 2.5e-4)


def simulate(k, h, t_end, chart, metric):
    """simulate() with the Python stepper and the given metric; (Result, CPU seconds)."""
    t0 = time.process_time()
    r = symgen.simulate(k, dt=h, t_end=t_end, chart=chart, stepper="python", metric=metric)
    return r, time.process_time() - t0


def reference(k) -> float:
    x = [symgen.simulate(k, dt=h, t_end=1.0, chart="symmetric", metric="euclidean")
         .output("slider.C.x")[-1] for h in (2e-5, 1e-5)]
    return x[1] + (x[1] - x[0]) / 3


def exudyn_x1(h):
    """Exudyn's slider x at t = 1 and its CPU time (None without Exudyn)."""
    try:
        import exudyn as exu
        from exudyn.utilities import (GenericJoint, MarkerBodyRigid, RigidBodyInertia,
                                      SensorNode)
    except ImportError:
        return None
    A, B, C = slider_crank_3d.A, slider_crank_3d.B, slider_crank_3d.C
    R = slider_crank_3d.rod_axes()
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    g, nt = [0, 0, -9.81], exu.NodeType.RotationEulerParameters
    crank = mbs.CreateRigidBody(referencePosition=A, initialAngularVelocity=[6, 0, 0],
                                inertia=RigidBodyInertia(0.12, np.diag([1e-4, 1e-5, 1e-4])),
                                gravity=g, nodeType=nt, returnDict=True)
    rod = mbs.CreateRigidBody(referencePosition=(B + C) / 2, referenceRotationMatrix=R,
                              initialVelocity=[0.12, -0.24, 0],
                              initialAngularVelocity=slider_crank_3d.OMEGA_ROD,
                              inertia=RigidBodyInertia(0.5, np.diag([4e-4, 4e-3, 4e-3])),
                              gravity=g, nodeType=nt, returnDict=True)
    slider = mbs.CreateRigidBody(referencePosition=C, initialVelocity=[0.24, 0, 0],
                                 inertia=RigidBodyInertia(2.0, np.diag([1e-4] * 3)),
                                 nodeType=nt, returnDict=True)
    ground = mbs.CreateGround()

    def mk(body, p=(0, 0, 0)):
        return mbs.AddMarker(MarkerBodyRigid(bodyNumber=body, localPosition=list(p)))

    b0, b1, b2 = crank["bodyNumber"], rod["bodyNumber"], slider["bodyNumber"]
    for pair, axes in (((mk(ground, A), mk(b0)), [1, 1, 1, 0, 1, 1]),
                       ((mk(ground), mk(b2)), [0, 1, 1, 1, 1, 1]),
                       ((mk(b0, (0, 0, 0.08)), mk(b1, (-0.15, 0, 0))), [1, 1, 1, 0, 0, 0]),
                       ((mk(b2), mk(b1, (0.15, 0, 0))), [1, 1, 1, 0, 0, 1])):
        mbs.AddObject(GenericJoint(markerNumbers=list(pair), constrainedAxes=axes))
    sens = mbs.AddSensor(SensorNode(nodeNumber=slider["nodeNumber"], storeInternal=True,
                                    outputVariableType=exu.OutputVariableType.Position))
    mbs.Assemble()
    s = exu.SimulationSettings()
    ti = s.timeIntegration
    ti.numberOfSteps, ti.endTime, ti.verboseMode = int(round(1 / h)), 1.0, 0
    ti.generalizedAlpha.spectralRadius = 0.5
    ti.generalizedAlpha.useNewmark = ti.generalizedAlpha.useIndex2Constraints = True
    ti.newton.useModifiedNewton = False
    s.solution.file.write = False
    s.solution.sensors.writePeriod = h
    t0 = time.process_time()
    mbs.SolveDynamic(s)
    return mbs.GetSensorStoredData(sens)[-1, 1], time.process_time() - t0


def energy_terms(k, model, h, t_end, metric):
    """The exact per-step energy balance of the trapezoidal step (docs/spatial-accuracy.md):
    ΔE = h/4 (ẋ₀+ẋ₁)ᵀ(H₀ᵀλ₀ + H₁ᵀλ₁) + ½(ẋ₀+ẋ₁)ᵀM R_v − fᵀ(R_x − h/2 R_v) for a constant M and
    a constant (gravity) force f; returns the drift rate (J/s, slope of a line fitted to the sums)
    of ΔE and of the three terms, and the largest mismatch of the identity."""
    r, _ = simulate(k, h, t_end, "symmetric", metric)
    X, V, A, L = r.x, r.xd, r.xdd, r.lam
    M = np.array(model.M, float)
    f = np.array(k.dynamics(0.0, X[0], V[0], A[0], L[0])[1])
    H = [np.array(k.constraints(t, x, v, a)[1]) for t, x, v, a in zip(r.t, X, V, A)]
    terms = np.zeros((len(r.t) - 1, 4))
    for i in range(len(r.t) - 1):
        v = V[i] + V[i + 1]
        Rx = X[i + 1] - X[i] - h * V[i] - h * h / 4 * (A[i] + A[i + 1])
        Rv = V[i + 1] - V[i] - h / 2 * (A[i] + A[i + 1])
        work = h / 4 * v @ (H[i].T @ L[i] + H[i + 1].T @ L[i + 1])
        terms[i] = (r.energy[i + 1] - r.energy[i], work, 0.5 * v @ M @ Rv, -f @ (Rx - h / 2 * Rv))
    rates = [np.polyfit(r.t[1:], np.cumsum(c), 1)[0] for c in terms.T]
    return rates, float(np.abs(terms[:, 1:].sum(axis=1) - terms[:, 0]).max())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", type=float, default=5.0, help="energy horizon (s)")
    ap.add_argument("--no-exudyn", action="store_true")
    args = ap.parse_args(argv)
    k = symgen.build(slider_crank_3d.model())
    x_ref = reference(k)
    print(f"reference x(1) = {x_ref:.10f}")
    print(f"{'runner':28s} {'h':>8s} {'|x(1) − ref|':>13s} {'E(T) − E0':>11s} "
          f"{'max|E − E0|':>11s} {'CPU s (1 s)':>11s}")
    for metric in ("euclidean", "mass"):
        for chart in ("end", "symmetric"):
            for h in STEPS:
                r, _ = simulate(k, h, args.T, chart, metric)
                r1, cpu = simulate(k, h, 1.0, chart, metric)
                E = r.energy
                err = abs(r1.output("slider.C.x")[-1] - x_ref)
                print(f"symgen {metric:9s} {chart:9s}   {h:8.2e} {err:13.3e} {E[-1] - E[0]:11.3e} "
                      f"{np.abs(E - E[0]).max():11.3e} {cpu:11.2f}")
    print("energy drift (J/s) at h = 1e-3 over T, symmetric chart: total = constraint work + "
          "M R_v + gravity on R_x − h/2 R_v")
    for metric in ("euclidean", "mass"):
        rates, mismatch = energy_terms(k, slider_crank_3d.model(), 1e-3, args.T, metric)
        print(f"  {metric:9s} " + "  ".join(f"{v:10.3e}" for v in rates)
              + f"   (identity to {mismatch:.1e})")
    if not args.no_exudyn:
        for h in STEPS + (1e-5,):
            got = exudyn_x1(h)
            if got is None:
                print("Exudyn not installed")
                break
            print(f"exudyn gen-α (ρ∞ 0.5)        {h:8.2e} {abs(got[0] - x_ref):13.3e} "
                  f"{'':11s} {'':11s} {got[1]:11.2f}")


if __name__ == "__main__":
    main()
