"""Reference models and independent solutions shared by ``symgen reproduce`` and the tests
(``tests/oracles.py``, ``tests/stepper_models.py`` import from here): the minimal-coordinate
pendulum and double pendulum, a tight SciPy integration of any unconstrained model, the Test Set's
solution of Andrews' squeezer, and the period-2 amplitude that measures the classical index-3
Newmark's spurious oscillation.  Specifications: docs/benchmarks.md.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["minimal_pendulum", "minimal_double_pendulum", "scipy_reference", "period2",
           "ANDREWS_REF", "ANDREWS_REF_T", "ANDREWS_ANGLES"]

#: Test Set for IVP Solvers (Mazzia & Magherini), problem `andrews`: reference angles at t = 0.03
#: (β, Θ, γ, Φ, δ, Ω, ε), as published with the problem (computed with RADAU5, tight tolerances).
ANDREWS_REF_T = 0.03
ANDREWS_REF = np.array([
    0.1581077119629904e+02, -0.1575637105984298e+02, 0.4082224013073101e-01,
    -0.5347301163226948e+00, 0.5244099658805304e+00, 0.5347301163226948e+00,
    0.1048080741042263e+01,
])

ANDREWS_ANGLES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def minimal_pendulum(T0: float = 0.1):
    """The stiff pendulum in its one minimal coordinate θ: m L² θ̈ = T0 sin(ω̄ t) − m g L sin θ,
    V = −m g L cos θ (Eqs. 12–13; docs/benchmarks.md §1)."""
    import sympy as sp

    from ..model import Model, coordinates, t

    (th,), (thd,) = coordinates("theta")
    m, L, g, T0s, wbar = sp.symbols("m L g T0 wbar")
    return Model(
        "stiff_pendulum_minimal", [th], M=[[m * L ** 2]],
        f=[T0s * sp.sin(wbar * t) - m * g * L * sp.sin(th)],
        V=-m * g * L * sp.cos(th),                                              # Eq. 13
        params={m: 1.0, L: 1.0, g: 9.8, T0s: T0, wbar: 0.1},
        outputs={"theta": th},
        settings=dict(method="newmark", scheme="fox-goodwin", dt=0.1, t_end=100.0),
        description="The stiff pendulum in the minimal coordinate θ (reference for Sec. 3).",
    )


def minimal_double_pendulum():
    """The double pendulum of ``examples/double_pendulum.py`` in its absolute angles θ1, θ2
    (θ = 0 hanging down, as the example's body angles), by Lagrange's equations."""
    import sympy as sp

    from ..model import Model, coordinates

    (a, b), (ad, bd) = coordinates("theta1 theta2")
    L, m, g, k, c = sp.symbols("L m g k c")
    I = m * L ** 2 / 12
    c1 = sp.Matrix([L / 2 * sp.sin(a), -L / 2 * sp.cos(a)])
    e1 = sp.Matrix([L * sp.sin(a), -L * sp.cos(a)])
    c2 = e1 + sp.Matrix([L / 2 * sp.sin(b), -L / 2 * sp.cos(b)])
    q, qd = [a, b], [ad, bd]
    J1, J2 = c1.jacobian(q), c2.jacobian(q)
    M = sp.simplify(m * J1.T * J1 + m * J2.T * J2 + sp.diag(I, I))
    T = (sp.Matrix(qd).T * M * sp.Matrix(qd))[0] / 2
    V = m * g * (c1[1] + c2[1]) + k * a ** 2 / 2 + k * (b - a) ** 2 / 2
    D = c * ad ** 2 / 2 + c * (bd - ad) ** 2 / 2
    f = []
    for i, qi in enumerate(q):
        # d/dt(∂T/∂q̇) = M q̈ + Σ_j ∂(∂T/∂q̇_i)/∂q_j q̇_j
        dTdqd = sp.diff(T, qd[i])
        conv = sum(sp.diff(dTdqd, q[j]) * qd[j] for j in range(2))
        f.append(sp.diff(T, qi) - conv - sp.diff(V, qi) - sp.diff(D, qd[i]))
    return Model(
        "double_pendulum_minimal", [a, b], M=M, f=f, V=V,
        params={L: 1.0, m: 1.0, g: 9.81, k: 1000.0, c: 1.0},
        x0=[math.pi / 2, math.pi / 2],
        description="Double pendulum in absolute angles (reference for Sec. 6).",
    )


def scipy_reference(model, t_eval, rtol=1e-11, atol=1e-11):
    """A tight DOP853 integration of an unconstrained Model, sampled at ``t_eval``: (x, xd)."""
    import sympy as sp
    from scipy.integrate import solve_ivp

    from ..model import t as tsym

    subs = dict(model.params)
    M = sp.lambdify([tsym, list(model.coords), list(model.velocities)], model.M.subs(subs),
                    "numpy")
    f = sp.lambdify([tsym, list(model.coords), list(model.velocities)], model.f.subs(subs),
                    "numpy")
    n = model.n

    def rhs(tt, y):
        x, xd = y[:n], y[n:]
        acc = np.linalg.solve(np.asarray(M(tt, x, xd), float), np.asarray(f(tt, x, xd), float).ravel())
        return np.concatenate([xd, acc])

    y0 = np.concatenate([model.x0, model.xd0])
    t_eval = np.asarray(t_eval, float)
    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), y0, method="DOP853", t_eval=t_eval,
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"reference integration failed: {sol.message}")
    return sol.y[:n].T, sol.y[n:].T


def period2(lam) -> np.ndarray:
    """Per-step amplitude of the period-2 (sawtooth) component of each column: |Δ²λ|/4."""
    lam = np.asarray(lam, float)
    if lam.ndim == 1:
        lam = lam[:, None]
    if lam.shape[0] < 3:
        return np.zeros((0,))
    d2 = np.abs(lam[2:] - 2 * lam[1:-1] + lam[:-2]) / 4
    return np.max(d2, axis=1) if d2.size else np.zeros(0)
