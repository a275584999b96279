"""Linearization at a state and its modes (issue 24; derivation in docs/linearization.md).

:func:`linearize` takes the reduced matrices of the paper's Eq. 52 from the null-space stepper's
own :class:`~symgen.steppers.linalg.Linearization` at one state (same N_H, ẋ_p, ẍ_p, Ẋ_p, Ẍ_p1
and M_R, C_R, K_R as a Newton iteration there, so the largest frequency is the run's ω_max):

    M_R δα̈ + C_R δα̇ + K_R δα = 0,        δx = N_H δα,   δẋ = Ẋ_p δα + N_H δα̇

for deviations δα of α = N_Hᵀ(x − x*) from the state x*, and the first-order form
ż = A z + B u, y = C z + D u with z = (δα, δα̇).  :func:`modes` (or :meth:`LinearSystem.modes`)
solves K_R φ = ω² M_R φ.  At a state that is not an equilibrium the frequencies are those of this
chart (coordinate dependent, see the docs) and no stability verdict is given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from .assembly import consistent_state
from .input_values import InputValues
from .jit import as_kernels
from .kernels import for_run
from .settings import SimulationSettings
from .steppers.linalg import Linearization

__all__ = ["LinearSystem", "Modes", "linearize", "modes", "EQUILIBRIUM_TOL"]

#: A state is an equilibrium when |ẋ|∞ ≤ tol·L·W and |ẍ|∞ ≤ tol·L·W², L = max(1, |x|∞),
#: W = max(1, ω_max) (velocities and accelerations on the scale of the fastest mode).
EQUILIBRIUM_TOL = 1e-8
#: A stiffness eigenvalue ω² below −STIFFNESS_TOL·max|ω²| is negative (unstable), within ± of
#: it zero (a neutral mode); round-off of the reduced matrices stays far below.
STIFFNESS_TOL = 1e-9
#: Central-difference step of the outputs' Jacobian, relative to max(1, |x_j|) (no analytic
#: output Jacobian is generated): error ~ h² · y''' ≈ 1e-10 relative, round-off ~ ε/h.
OUTPUT_FD_STEP = 1e-5


def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=complex if np.iscomplexobj(a) else float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Modes:
    """Natural modes of a :class:`LinearSystem`, sorted by ω (mode i is row i of the shapes).

    omega (rad/s), f (Hz):  √|ω²| and ω/2π of the eigenvalues ω² of (K_R, M_R) (a negative or
        complex ω² counts by its modulus, as ω_max does);  omega2: ω² itself (complex if K_R is
        not symmetric);  zeta: modal damping ratios φᵀC_Rφ / (2ω φᵀM_Rφ) (exact for classical
        damping, an estimate otherwise; nan where ω² ≤ 0: no oscillation);  alpha_shapes (k × k):
        φ with φᵀM_Rφ = 1;  x_shapes (k × n): N_H φ scaled to make its first largest entry +1;
        output_shapes (k × n_out): the outputs' phasor C·(φ, sφ) on the same scale (s = √(−ω²):
        iω for an oscillating mode);
        eigenvalues: of A (2k, by real part, then imaginary);  stable: True/False at an
        equilibrium (None with a zero-stiffness mode), None elsewhere;  verdict: that in words.
    """

    omega: np.ndarray
    f: np.ndarray
    omega2: np.ndarray
    zeta: np.ndarray
    alpha_shapes: np.ndarray
    x_shapes: np.ndarray
    output_shapes: np.ndarray
    eigenvalues: np.ndarray
    stable: bool | None
    verdict: str
    coord_names: tuple = ()
    output_names: tuple = ()

    def __len__(self) -> int:
        return len(self.omega)

    def largest(self, i: int, count: int = 3, outputs: bool = False) -> list[tuple[str, float]]:
        """The ``count`` coordinates (or outputs, by modulus) that move most in mode ``i``;
        entries below 1e-9 of the largest (round-off) are left out."""
        names = self.output_names if outputs else self.coord_names
        row = np.abs(self.output_shapes[i]) if outputs else np.real(self.x_shapes[i])
        size = np.abs(row)
        order = np.argsort(-size, kind="stable")[:count]
        return [(names[j], float(row[j])) for j in order if size[j] > 1e-9 * size.max()]


@dataclass(frozen=True)
class LinearSystem:
    """The linearization of a model at one state (module docstring); arrays are read-only.

    t, x, xd, xdd, lam: the state (consistent);  N (n × k): N_H, orthonormal basis of the tangent
    space;  xd_p, xdd_p, Xd_p, Xdd_p1, X_p2: the stepper's particular terms (Eqs. 39–49; x_p = x
    at a consistent state);  M_R, C_R, K_R (k × k): Eq. 52;  A (2k × 2k), B (2k × n_u),
    C (n_out × 2k), D (n_out × n_u): ż = Az + Bu, y − y* = Cz + Du for z = (δα, δα̇) and
    deviations u of the inputs from the state's (B = (0, M_R⁻¹ N_Hᵀ ∂f/∂u); ∂f/∂u, C and D from
    central differences of the dynamics and outputs kernels);  omega_max: the stepper's
    ω_max here;  equilibrium: ẋ = ẍ = 0 (EQUILIBRIUM_TOL);  rank: rank of H (relative
    tolerance rank_tol).
    """

    t: float
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    lam: np.ndarray
    N: np.ndarray
    xd_p: np.ndarray
    xdd_p: np.ndarray
    Xd_p: np.ndarray
    Xdd_p1: np.ndarray
    X_p2: np.ndarray
    M_R: np.ndarray
    C_R: np.ndarray
    K_R: np.ndarray
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    omega_max: float
    equilibrium: bool
    rank: int
    rank_tol: float
    coord_names: tuple = ()
    output_names: tuple = ()
    input_names: tuple = ()
    name: str = ""
    params: Mapping = field(default_factory=dict)

    @property
    def k(self) -> int:
        """Degrees of freedom (size of α)."""
        return self.N.shape[1]

    def to_x(self, alpha) -> np.ndarray:
        """x* + N_H δα: coordinates of a deviation δα (first order; Eq. 34)."""
        return self.x + self.N @ np.asarray(alpha, float)

    def to_xd(self, alpha, alpha_dot) -> np.ndarray:
        """ẋ* + Ẋ_p δα + N_H δα̇: velocities of a deviation (δα, δα̇) (first order; Eq. 38)."""
        alpha, alpha_dot = np.asarray(alpha, float), np.asarray(alpha_dot, float)
        return self.xd + self.Xd_p @ alpha + self.N @ alpha_dot

    def to_state(self, z) -> tuple[np.ndarray, np.ndarray]:
        """(x, ẋ) of a first-order state z = (δα, δα̇)."""
        z = np.asarray(z, float)
        return self.to_x(z[:self.k]), self.to_xd(z[:self.k], z[self.k:])

    def modes(self) -> Modes:
        """Natural frequencies, damping ratios, mode shapes and (at an equilibrium) stability."""
        return _modes(self)


# -- linearize ------------------------------------------------------------------------------------
def linearize(source, t: float = 0.0, x=None, xd=None, inputs=None, params: Mapping | None = None,
              *, row: int | None = None, model=None, rank_tol: float | None = None) -> LinearSystem:
    """The :class:`LinearSystem` of a model (a Model or Kernels) at a state, or of a Result's row.

    Model/Kernels: the state (t, x, ẋ) (default: the model's x0, ẋ0) is made consistent as
    ``simulate`` does (projected onto q = q̇ = 0, ẍ and λ solved).  Result: the recorded state of
    ``row`` (default the last) as the stepper accepted it, with the run's parameters; the model is
    ``model`` if given, else the shipped example the result names (its hash must match).
    ``params`` override parameters (on its own copy, ``Kernels.for_run``); ``rank_tol``
    defaults to the model's.
    ``inputs``: the inputs' values at the state, as ``simulate``'s (a Result's row: those it
    recorded, unless given).
    """
    from .result import Result
    if isinstance(source, Result):
        if x is not None or xd is not None:
            raise ValueError("the state of linearize(result, row=...) is the result's; give x, "
                             "xd with a model instead")
        kernels, state, run_params = _result_state(source, -1 if row is None else row, model)
        if inputs is None and source.input_names:
            inputs = dict(zip(source.input_names, source.u[-1 if row is None else row]))
        t = state[0]
        params = dict(run_params, **(params or {}))
    else:
        if row is not None or model is not None:
            raise ValueError("row= and model= go with a Result; for a model give t, x, xd")
        kernels, state = as_kernels(source), None
    mdl = getattr(kernels, "model", None)
    if rank_tol is None:
        rank_tol = SimulationSettings.merged(getattr(mdl, "settings", None)).rank_tol
    kernels = for_run(kernels, params)      # its own p, u: the kernels given stay as they are
    values = InputValues(kernels, inputs)
    if state is None:
        x = np.array(mdl.x0 if x is None else x, dtype=float)
        xd = np.array(mdl.xd0 if xd is None else xd, dtype=float)
        values.set(float(t), x, xd)
        cs = consistent_state(kernels, float(t), x, xd, rank_tol=rank_tol)
        state = (float(t), cs.x, cs.xd, cs.xdd, cs.lam)
    else:
        values.set(state[0], state[1], state[2])
    return _linearize_at(kernels, state, rank_tol)


def _linearize_at(kernels, state, rank_tol: float) -> LinearSystem:
    """The stepper's Linearization at a consistent state (end of Sec. 5), plus A, B, C, D."""
    t, x, xd, xdd, lam = state
    n = kernels.n
    lin = Linearization(n, kernels.m, rank_tol)
    w = lin.omega_at(kernels, t, x, xd, xdd, lam)      # factor H, Eqs. 33–49, M_R, C_R, K_R (52)
    k = lin.k
    M_R, C_R, K_R = lin.M_R.copy(), lin.C_R.copy(), lin.K_R.copy()
    A = np.zeros((2 * k, 2 * k))
    A[:k, k:] = np.eye(k)
    if k:
        try:
            A[k:, :k] = -np.linalg.solve(M_R, K_R)
            A[k:, k:] = -np.linalg.solve(M_R, C_R)
        except np.linalg.LinAlgError:
            raise ValueError(f"the reduced mass matrix M_R = N_Hᵀ M N_H is singular at t = {t:g} "
                             f"(a massless degree of freedom): no first-order form") from None
    Y_x, Y_v = _output_jacobians(kernels, t, x, xd)
    C = np.hstack([Y_x @ lin.N + Y_v @ lin.Xd_p, Y_v @ lin.N])   # δy = Y_x δx + Y_v δẋ
    F_u, D = _input_jacobians(kernels, state)
    B = np.zeros((2 * k, F_u.shape[1]))
    if k:
        B[k:] = np.linalg.solve(M_R, lin.N.T @ F_u)     # M_R δα̈ + … = N_Hᵀ (∂f/∂u) δu
    L = max(1.0, float(np.max(np.abs(x)))) if n else 1.0
    W = max(1.0, w) if math.isfinite(w) else 1.0
    eq = (float(np.max(np.abs(xd), initial=0.0)) <= EQUILIBRIUM_TOL * L * W
          and float(np.max(np.abs(xdd), initial=0.0)) <= EQUILIBRIUM_TOL * L * W * W)
    mdl = getattr(kernels, "model", None)
    return LinearSystem(
        t=float(t), x=_frozen(x), xd=_frozen(xd), xdd=_frozen(xdd), lam=_frozen(lam),
        N=_frozen(lin.N), xd_p=_frozen(lin.xd_p), xdd_p=_frozen(lin.xdd_p),
        Xd_p=_frozen(lin.Xd_p), Xdd_p1=_frozen(lin.Xdd_p1), X_p2=_frozen(lin.X_p2),
        M_R=_frozen(M_R), C_R=_frozen(C_R), K_R=_frozen(K_R), A=_frozen(A),
        B=_frozen(B), C=_frozen(C), D=_frozen(D), input_names=tuple(kernels.input_names),
        omega_max=float(w), equilibrium=bool(eq), rank=int(lin.rank), rank_tol=float(rank_tol),
        coord_names=tuple(kernels.coord_names), output_names=tuple(kernels.output_names),
        name=getattr(mdl, "name", getattr(kernels, "name", "")), params=kernels.params())


def _output_jacobians(kernels, t, x, xd) -> tuple[np.ndarray, np.ndarray]:
    """∂y/∂x, ∂y/∂ẋ by central differences of the outputs kernel (OUTPUT_FD_STEP)."""
    n, n_out = kernels.n, getattr(kernels, "n_out", 0)
    Y_x, Y_v = np.zeros((n_out, n)), np.zeros((n_out, n))
    if not n_out:
        return Y_x, Y_v
    for J, base, other, first in ((Y_x, x, xd, True), (Y_v, xd, x, False)):
        for j in range(n):
            h = OUTPUT_FD_STEP * max(1.0, abs(base[j]))
            plus, minus = base.copy(), base.copy()
            plus[j] += h
            minus[j] -= h
            args_p = (plus, other) if first else (other, plus)
            args_m = (minus, other) if first else (other, minus)
            y_p = np.array(kernels.outputs(t, *args_p), dtype=float)
            y_m = np.array(kernels.outputs(t, *args_m), dtype=float)
            J[:, j] = (y_p - y_m) / (2.0 * h)
    return Y_x, Y_v


def _input_jacobians(kernels, state) -> tuple[np.ndarray, np.ndarray]:
    """∂f/∂u (n × n_u) and ∂y/∂u (n_out × n_u) by central differences of the dynamics and
    outputs kernels in u (OUTPUT_FD_STEP relative to max(1, |u_j|)); u is restored."""
    t, x, xd, xdd, lam = state
    u = getattr(kernels, "u", np.zeros(0))
    n_out = getattr(kernels, "n_out", 0)
    F_u, Y_u = np.zeros((kernels.n, u.size)), np.zeros((n_out, u.size))
    for j in range(u.size):
        u0, h = u[j], OUTPUT_FD_STEP * max(1.0, abs(u[j]))
        try:
            vals = []
            for uj in (u0 + h, u0 - h):
                u[j] = uj
                f = np.array(kernels.dynamics(t, x, xd, xdd, lam)[1], dtype=float)
                y = np.array(kernels.outputs(t, x, xd), dtype=float) if n_out else np.zeros(0)
                vals.append((f, y))
        finally:
            u[j] = u0
        F_u[:, j] = (vals[0][0] - vals[1][0]) / (2.0 * h)
        Y_u[:, j] = (vals[0][1] - vals[1][1]) / (2.0 * h)
    return F_u, Y_u


def _result_state(result, row: int, model):
    """Kernels, (t, x, ẋ, ẍ, λ) of ``row`` and the run's parameters, for a Result."""
    nrows = len(result.t)
    if not -nrows <= row < nrows:
        raise ValueError(f"row {row} is outside the result ({nrows} rows: 0 … {nrows - 1}, or "
                         "negative from the end)")
    meta = result.meta or {}
    if model is None or getattr(model, "hash", None):        # a Model (not kernels): checked
        from .loader import model_of
        model = model_of(result, model, hint="pass the model that made it: "
                                             "linearize(result, model=...)")
    kernels = as_kernels(model)
    want = meta.get("model_hash")
    have = getattr(getattr(kernels, "model", None), "hash", None)
    if want and have and want != have:
        raise ValueError(f"model {kernels.name!r} is not the one that made the result (hash "
                         f"{have[:12]} ≠ {str(want)[:12]}); pass the right model and options")
    if tuple(result.coords) != tuple(kernels.coord_names):
        raise ValueError(f"the result's coordinates {list(result.coords)[:4]}… are not those of "
                         f"model {kernels.name!r}")
    state = (float(result.t[row]), result.x[row].copy(), result.xd[row].copy(),
             result.xdd[row].copy(), result.lam[row].copy())
    run_params = {k: float(v) for k, v in (meta.get("parameters") or {}).items()
                  if k in kernels.param_names}
    return kernels, state, run_params


# -- modes ----------------------------------------------------------------------------------------
def modes(source, **kw) -> Modes:
    """``linearize(source, **kw).modes()``: frequencies, damping ratios, mode shapes."""
    return linearize(source, **kw).modes()


def _modes(ls: LinearSystem) -> Modes:
    """K_R φ = ω² M_R φ, sorted by |ω²|; shapes, modal damping, A's eigenvalues, the verdict."""
    import scipy.linalg

    k = ls.k
    if k:
        mu, phi = scipy.linalg.eig(ls.K_R, ls.M_R)
    else:
        mu, phi = np.zeros(0, complex), np.zeros((0, 0), complex)
    order = np.argsort(np.abs(mu), kind="stable")
    mu, phi = mu[order], phi[:, order]
    scale = float(np.max(np.abs(mu), initial=0.0))
    if np.all(np.abs(mu.imag) <= 1e-12 * max(scale, 1e-300)):
        mu, phi = mu.real, phi.real
    omega = np.sqrt(np.abs(mu))
    mass = np.einsum("ij,ik,kj->j", phi.conj(), ls.M_R, phi).real
    damp = np.einsum("ij,ik,kj->j", phi.conj(), ls.C_R, phi).real
    phi = phi / np.sqrt(np.abs(mass))                               # φᵀ M_R φ = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        zeta = np.where(np.real(mu) > 0, damp / np.abs(mass) / (2.0 * omega), math.nan)
    x_sh = (ls.N @ phi).T
    s = np.sqrt(-mu.astype(complex))                                # iω, or the growth rate
    y_sh = (ls.C @ np.vstack([phi, phi * s])).T if k else np.zeros((0, len(ls.output_names)))
    for i in range(k):                          # the first largest x entry (ties: 1e-9) → +1
        a = np.abs(x_sh[i])
        j = int(np.argmax(a >= (1.0 - 1e-9) * a.max())) if a.size else 0
        c = x_sh[i, j]
        if c != 0:
            x_sh[i] /= c
            y_sh[i] /= c
    if np.iscomplexobj(x_sh) and np.all(np.abs(x_sh.imag) <= 1e-12):
        x_sh = x_sh.real
    ev = np.linalg.eigvals(ls.A) if k else np.zeros(0, complex)
    ev = ev[np.lexsort((ev.imag, ev.real))]
    stable, verdict = _verdict(ls, np.asarray(mu), ev, scale)
    return Modes(omega=_frozen(omega), f=_frozen(omega / (2 * math.pi)), omega2=_frozen(mu),
                 zeta=_frozen(zeta), alpha_shapes=_frozen(phi.T), x_shapes=_frozen(x_sh),
                 output_shapes=_frozen(y_sh), eigenvalues=_frozen(ev), stable=stable,
                 verdict=verdict, coord_names=ls.coord_names, output_names=ls.output_names)


def _verdict(ls: LinearSystem, mu: np.ndarray, ev: np.ndarray, scale: float):
    """Stability at an equilibrium: a negative stiffness eigenvalue (or an eigenvalue of A in the
    right half plane) is unstable; none elsewhere (the frozen matrices say nothing there)."""
    if not ls.equilibrium:
        return None, ("not an equilibrium (ẋ or ẍ ≠ 0): the frequencies are those of the "
                      "linearization at this state; no stability verdict")
    if ls.k == 0:
        return True, "stable (no degrees of freedom)"
    tol = STIFFNESS_TOL * max(scale, 1e-300)
    neg = [i + 1 for i, v in enumerate(mu.real) if v < -tol]
    if neg:
        return False, (f"unstable: negative stiffness in mode{'s' if len(neg) > 1 else ''} "
                       f"{', '.join(map(str, neg))} (ω² < 0, A has a real eigenvalue > 0)")
    w = math.sqrt(scale)
    growing = ev[ev.real > 1e-9 * max(w, 1e-300)]
    if growing.size:
        return False, (f"unstable: A has {growing.size} eigenvalue(s) with positive real part "
                       f"(largest {growing.real.max():.3g} 1/s)")
    zero = [i + 1 for i, v in enumerate(mu.real) if abs(v) <= tol]
    if zero:
        return None, (f"neutral: zero stiffness in mode{'s' if len(zero) > 1 else ''} "
                      f"{', '.join(map(str, zero))}; the linearization does not decide")
    if np.all(np.abs(ev.real) <= 1e-9 * max(w, 1e-300)):
        return True, "stable (undamped: A's eigenvalues on the imaginary axis)"
    return True, "stable (every stiffness eigenvalue positive)"
