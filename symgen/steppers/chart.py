"""The symmetric chart (beyond the paper; the derivation and the measurements:
docs/symmetric-chart.md): the Newmark relations imposed on N_s, an orthonormal basis of the null
space of H_s = ½(H(t) + H(t+h)), instead of the tangent space at the end of the step, with the
constraints and the projected equilibrium kept at t + h.  With γ = ½ the step is symmetric and,
for f = f(x) and scleronomic q, reversible: no secular energy drift where the paper's chart has one.

Per Newton iteration, with the paper's particular solutions and M_R, C_R, K_R, r of Eq. 52 at the
estimate and T = N_sᵀN_H, the unknowns (α, hα̇, h²α̈) at t + h solve (scaled so that every block
is O(M_R); rows 2–3 are N_sᵀR_x = 0 and N_sᵀR_v = 0, the Newmark residuals in x-space)

    [ h²K_R                      h C_R                M_R  ] [α   ]   [ h² r  ]
    [ T − βh² N_sᵀẌ_p1          −βh N_sᵀX_p2         −β T ] [hα̇ ] = [ b_x   ]
    [ hN_sᵀẊ_p − γh² N_sᵀẌ_p1   T − γh N_sᵀX_p2      −γ T ] [h²α̈]   [ h b_v ]

with b_x = N_sᵀ(x(t) + hẋ(t) + h²(½ − β)ẍ(t) − x_p + βh²ẍ_p) and
b_v = N_sᵀ(ẋ(t) + h(1 − γ)ẍ(t) − ẋ_p + γhẍ_p).

With N_s = N_H this system is the paper's step (``NullspaceStepper`` keeps its own α-coordinate
code for ``chart="end"``; the tests check the two agree to 1e-12).  Rows 2–3 do not depend on which
particular solutions or which basis of null(H_s) are used, so with ``factorization="sparse"``
N_s comes from a second sparse LU, of H_s[R, D] on the step's partition
(:mod:`symgen.steppers.sparse`), and the step is the dense one's to round-off.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg.lapack import dgeqp3, dgesdd, dgesvd, dgetrf, dgetrs, dormqr

from ..runtime_constants import T_SINGULAR
from ..settings import CHARTS
from .base import StepFailure
from .outcome import Outcome, fail_code
from .linalg import solve_small

__all__ = ["CHARTS", "SymmetricChart", "solve_chart_step", "null_basis"]

# T_SINGULAR (symgen.runtime_constants, the C runtime's too): T = N_sᵀN_H with a singular value
# below it is treated as singular (the tangent spaces at t + h and mid-step nearly orthogonal: a
# rotation of about π per step).  Never seen: T is orthogonal up to O(h²).

def null_basis(A: np.ndarray, k: int, factorization: str) -> np.ndarray:
    """An orthonormal basis (n × k) of the k-dimensional numerical right null space of A (m × n):
    the k right singular vectors of smallest singular value (``"svd"``), or the last k columns of
    Q in a pivoted QR of Aᵀ (``"qr"``).  k is given (n − rank H(t + h)), not decided here."""
    m, n = A.shape
    if k == 0:
        return np.zeros((n, 0))
    if m == 0:
        return np.eye(n)[:, n - k:].copy()
    if factorization == "qr":
        qr, _, tau, _, info = dgeqp3(A.T)                     # Aᵀ Π = Q R
        if info != 0:
            raise np.linalg.LinAlgError(f"QR of H_sᵀ failed (LAPACK info = {info})")
        kmin = min(n, m)
        E = np.zeros((n, k), order="F")                       # the last k columns of I
        E[n - k:, :] = np.eye(k)
        Q2, _, info = dormqr("L", "N", qr[:, :kmin], tau[:kmin], E, max(1, 64 * k))
        if info != 0:
            raise np.linalg.LinAlgError(f"applying Q of H_sᵀ failed (LAPACK info = {info})")
        return Q2                                             # Q E: the last k columns of Q
    return _last_k_of_svd(A, k)


def _last_k_of_svd(A: np.ndarray, k: int) -> np.ndarray:
    n = A.shape[1]
    _, _, Vt, info = dgesdd(A, compute_uv=1, full_matrices=1)
    if info != 0:
        _, _, Vt, info = dgesvd(A, compute_uv=1, full_matrices=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"SVD of H_s did not converge (LAPACK info = {info})")
    return Vt[n - k:].T.copy()


def solve_chart_step(Ns, lin, x_p, r, x, xd, xdd, h, gamma, beta, alpha, alpha_dot, alpha_ddot,
                     *, t1: float = math.nan, iteration: int = 0, M=None,
                     jerk=None, newton=None) -> None:
    """Solve the 3k × 3k system of the module docstring for (α, α̇, α̈) at t + h (written into
    ``alpha``, ``alpha_dot``, ``alpha_ddot``).

    ``Ns``: the chart basis N_s (n × k); ``lin``: the :class:`~symgen.steppers.linalg.Linearization`
    of this iterate (N_H, ẋ_p, ẍ_p, Ẋ_p, Ẍ_p1, X_p2, M_R, C_R, K_R); ``x_p``: the position particular
    solution (absolute); ``r``: N_Hᵀ(f − K_L(x_p − x₀) − C_L(ẋ_p − ẋ₀) − M ẍ_p), the right-hand side
    of Eq. 52; ``x, xd, xdd``: the accepted state at t.  A singular T or system raises
    :class:`StepFailure` naming t + h and the iteration.  With ``M`` (the mass matrix, dense or
    CSR) rows 2–3 are N_sᵀM R_x = N_sᵀM R_v = 0 instead: the Newmark residuals' tangent part is
    taken M-orthogonally (``metric="mass"``, docs/spatial-accuracy.md).
    With ``M`` and ``jerk = (D, K, C_e, ẍ_it)`` (:meth:`SymmetricChart.jerk`; γ = ½; the
    corrected step for every force, docs/fourth-order-step.md) they are the two-point Hermite
    (Obreschkoff) relations N_sᵀ(M R_x(β = 1/6) + h³/24 D) = N_sᵀ(M R_v + h²/12 D) = 0,
    D ≈ M(x⃛₁ − x⃛₀), with D linearized about the iterate ẍ_it as D − K Δẋ − C_e Δẍ.
    ``newton = (lu, reuse, ẋ_it, ẍ_it)`` (m = 0 only: N_s = N_H = I, the iterate is
    z_it = (0, hẋ_it, h²ẍ_it)): modified Newton.  ``lu`` (a list [LU, pivots]) keeps the
    factorization; with ``reuse`` the system is not factored again but the step taken from the
    residual, z = z_it − LU⁻¹(A z_it − b), which has the same fixed point
    (docs/fourth-order-step.md, "Modified Newton").
    """
    N = lin.N
    k = N.shape[1]
    if k == 0:
        return
    NsT = Ns.T
    T = NsT @ N                                                   # T = N_sᵀ N_H
    if lin.m == 0:
        s_min = 1.0                        # no constraints: N_s = N_H = I, T = I exactly
    else:
        s_min = abs(T[0, 0]) if k == 1 else np.linalg.svd(T, compute_uv=False)[-1]
    if not (s_min > T_SINGULAR):
        raise StepFailure(
            f"symmetric chart: T = N_sᵀN_H is singular at t = {t1:.9g}, iteration {iteration} "
            f"(smallest singular value {s_min:.3e}): the null spaces of H at t + h and of "
            f"½(H(t) + H(t + h)) are nearly orthogonal; reduce the step", iteration=iteration,
            outcome=Outcome(fail_code("CHART_T_SINGULAR"), t1, h, iteration, value=s_min))
    if M is not None:
        # metric "mass": rows 2–3 taken with N_sᵀM (M symmetric), scaled to O(1) entries (a row
        # scale: same solution); a singular M_R then shows as a singular step matrix below
        NsT = np.asarray(M @ Ns).T
        scale = np.abs(NsT).max()
        NsT = NsT / scale
        T = NsT @ N
    else:
        scale = 1.0
    if jerk is not None:
        beta = 1.0 / 6.0                                          # R_x(1/6) + h³/24 D: β drops out
    NsXd = NsT @ lin.Xd_p                                         # N_sᵀ Ẋ_p
    NsXdd1 = NsT @ lin.Xdd_p1                                     # N_sᵀ Ẍ_p1
    NsX2 = NsT @ lin.X_p2                                         # N_sᵀ X_p2
    hh = h * h
    A = np.empty((3 * k, 3 * k))
    b = np.empty(3 * k)
    i1, i2 = slice(0, k), slice(k, 2 * k)
    i3 = slice(2 * k, 3 * k)
    # row 1: Eq. 52, M_R α̈ + C_R α̇ + K_R α = r, times h²
    A[i1, i1] = hh * lin.K_R
    A[i1, i2] = h * lin.C_R
    A[i1, i3] = lin.M_R
    b[i1] = hh * r
    # row 2: N_sᵀ R_x = 0
    A[i2, i1] = T - beta * hh * NsXdd1
    A[i2, i2] = -beta * h * NsX2
    A[i2, i3] = -beta * T
    b[i2] = NsT @ (x + h * xd + hh * (0.5 - beta) * xdd - x_p + beta * hh * lin.xdd_p)
    # row 3: N_sᵀ R_v = 0, times h
    A[i3, i1] = h * (NsXd - gamma * h * NsXdd1)
    A[i3, i2] = T - gamma * h * NsX2
    A[i3, i3] = -gamma * T
    b[i3] = h * (NsT @ (xd + h * (1.0 - gamma) * xdd - lin.xd_p + gamma * h * lin.xdd_p))
    if M is not None and jerk is not None:
        # the corrected step for every force: + h³/24 N_sᵀD in row 2 and h²/12 N_sᵀD in row 3,
        # D = D_it − K(ẋ − ẋ_it) − C_e(ẍ − ẍ_it) with ẋ, ẍ those of (α, α̇, α̈) (Eqs. 38, 45)
        D, K, C_e, xdd_it = jerk
        NsTs = Ns.T / scale
        D0 = D - np.asarray(K @ lin.dxd_p).ravel() - np.asarray(C_e @ (lin.xdd_p - xdd_it)).ravel()
        KN, KXd = np.asarray(K @ lin.N), np.asarray(K @ lin.Xd_p)
        CN, CX1, CX2 = (np.asarray(C_e @ lin.N), np.asarray(C_e @ lin.Xdd_p1),
                        np.asarray(C_e @ lin.X_p2))
        G1 = NsTs @ (-KXd - CX1)                                  # ∂(N_sᵀD)/∂α
        G2 = NsTs @ (-KN - CX2) / h                               # … /∂(hα̇)
        G3 = NsTs @ (-CN) / hh                                    # … /∂(h²α̈)
        g0 = NsTs @ D0
        c2, c3 = hh * h / 24.0, hh / 12.0 * h                     # row 3 is scaled by h
        A[i2, i1] += c2 * G1
        A[i2, i2] += c2 * G2
        A[i2, i3] += c2 * G3
        b[i2] -= c2 * g0
        A[i3, i1] += c3 * G1
        A[i3, i2] += c3 * G2
        A[i3, i3] += c3 * G3
        b[i3] -= c3 * g0
    z = np.empty(3 * k)
    try:
        if newton is None:
            solve_small(A, b, z)
        else:
            _modified_newton(A, b, z, h, *newton)
    except np.linalg.LinAlgError:
        raise StepFailure(f"symmetric chart: singular 3k × 3k step matrix at t = {t1:.9g}, "
                          f"iteration {iteration} (k = {k})", iteration=iteration,
                          outcome=Outcome(fail_code("CHART_SINGULAR"), t1, h, iteration, k=k)
                          ) from None
    alpha[:] = z[i1]
    np.multiply(z[i2], 1.0 / h, out=alpha_dot)
    np.multiply(z[i3], 1.0 / hh, out=alpha_ddot)


def _modified_newton(A, b, z, h, lu, reuse, xd_it, xdd_it) -> None:
    """z = A⁻¹b with A factored and kept in ``lu``, or, with ``reuse``, z = z_it − LU⁻¹(A z_it − b)
    with the kept factors (m = 0: z_it = (0, hẋ_it, h²ẍ_it)).  LinAlgError when A is singular."""
    if reuse:
        k = xd_it.size
        z_it = np.zeros(3 * k)
        z_it[k:2 * k] = h * xd_it
        z_it[2 * k:] = (h * h) * xdd_it
        d, info = dgetrs(lu[0], lu[1], A @ z_it - b)
        np.subtract(z_it, d, out=z)
        return
    lu[0], lu[1], info = dgetrf(A)
    if info != 0:
        raise np.linalg.LinAlgError(f"singular matrix (LAPACK dgetrf info = {info})")
    z[:], info = dgetrs(lu[0], lu[1], b)


class SymmetricChart:
    """State of the symmetric chart across steps: H_n and Ḣ_n, those of the accepted state at t.

    They are kept from the previous step's accepted state (:meth:`accept`); when a step starts
    from a state that is not the one last accepted (the first step, or a caller stepping from its
    own state) they are evaluated there, once (:meth:`H_at`).

    With the sparse step (``lin``, a :class:`~symgen.steppers.sparse.SparseLinearization`) H_n
    and H_s are the values on the kernels' CSR pattern of H (H(t) and H(t + h) share it) and N_s
    comes from the step's partition (``SparseLinearization.chart_basis``)."""

    def __init__(self, kernels, factorization: str, lin=None):
        self.kernels = kernels
        self.factorization = factorization
        n, m = kernels.n, kernels.m
        self._lin = lin if (lin is not None and lin.sparse) else None
        self._t_n = math.nan
        self._x_n, self._xd_n = np.full(n, math.nan), np.full(n, math.nan)
        self._dyn_key, self._M0, self._a0 = None, None, None     # start_dynamics
        if self._lin is not None:
            nnz = int(kernels.H_pattern[0][-1])
            self._constraints = kernels.constraints_csr
            self._H_n, self._H_s, self._Hd_n = np.zeros(nnz), np.zeros(nnz), np.zeros(nnz)
        else:
            self._constraints = kernels.constraints
            self._H_n, self._H_s = np.zeros((m, n)), np.zeros((m, n))
            self._Hd_n = np.zeros((m, n))

    def accept(self, t1: float, x1, xd1, H1, Hd1) -> None:
        """Keep H and Ḣ of the accepted state at t + h as the next step's H_n, Ḣ_n (copied: the
        kernels' CSR values are their buffers)."""
        self._t_n = t1
        self._x_n[:] = x1
        self._xd_n[:] = xd1
        self._H_n[...] = H1.data if self._lin is not None else H1
        self._Hd_n[...] = Hd1.data if self._lin is not None else Hd1

    def H_at(self, t: float, x, xd, xdd) -> np.ndarray:
        """H_n = H(x(t), t): the kept one if (t, x, ẋ) is the state last accepted (t up to
        round-off: the caller's t0 + i·h and the stepper's t + h differ in the last bits), else
        evaluated (with Ḣ_n)."""
        if not (abs(t - self._t_n) <= 1e-12 * max(1.0, abs(t)) and np.array_equal(x, self._x_n)
                and np.array_equal(xd, self._xd_n)):
            _, H, _, H_dot, *_ = self._constraints(t, x, xd, xdd)
            self.accept(t, x, xd, H, H_dot)
        return self._H_n

    def start_dynamics(self, dynamics, t: float, x, xd, xdd, lam) -> None:
        """M₀ and a₀ = −K_L ẋ₀ − C ẍ₀ + f_t at the step's start (t, x, ẋ, ẍ, λ), for
        :meth:`jerk`; evaluated once per start state (kept while the state is the same)."""
        key = (t, x.tobytes(), xd.tobytes(), xdd.tobytes(), lam.tobytes())
        if key == self._dyn_key:
            return
        M0, _, K0, C0 = dynamics(t, x, xd, xdd, lam)
        self._M0 = M0.copy()
        self._a0 = -np.asarray(K0 @ xd).ravel() - np.asarray(C0 @ xdd).ravel()
        if not self.kernels.f_t_is_zero:
            self._a0 += self.kernels.dynamics_t(t, x, xd, lam)
        self._dyn_key = key

    def metric(self, M1):
        """The metric of the corrected relations: ½(M₀ + M₁) (symmetric in the step's ends)."""
        return 0.5 * (self._M0 + M1)

    def jerk(self, t1, h, M1, K1, C1, x1, xd1, xdd1, xdd0, Hd1, lam0, lam1):
        """(D, K, C_e, ẍ₁) for :func:`solve_chart_step`: D ≈ W(x⃛₁ − x⃛₀), W = ½(M₀ + M₁), at the
        iterate (x₁, ẋ₁, ẍ₁, λ₁) of t + h, from M x⃛ = −K_L ẋ − C ẍ + f_t + Hᵀλ̇ (K_L holds
        ∂(Hᵀλ)/∂x, so −K_L ẋ carries Ḣᵀλ; f_t = ∂f/∂t + (∂H/∂t)ᵀλ, ``Derived.f_t``):
            D = a₁ − a₀ − (M₁ − M₀)(ẍ₁ − ẍ₀)/h + ½(Ḣ₀ + Ḣ₁)ᵀ(λ₁ − λ₀),   a = −K_L ẋ − C ẍ + f_t,
        the last term N_sᵀ(H₁ᵀλ̇₁ − H₀ᵀλ̇₀) to O(h³), the third W x⃛ vs M x⃛ at each end to O(h³);
        C_e = C + (M₁ − M₀)/h is D's derivative in ẍ₁ (with −K_L in ẋ₁) for Newton."""
        dM = M1 - self._M0
        dxdd = xdd1 - xdd0
        D = (-np.asarray(K1 @ xd1).ravel() - np.asarray(C1 @ xdd1).ravel() - self._a0
             - np.asarray(dM @ dxdd).ravel() / h)
        if not self.kernels.f_t_is_zero:
            D += self.kernels.dynamics_t(t1, x1, xd1, lam1)
        if lam1.size:
            Hd0 = self._Hd_n
            if self._lin is not None:                        # values on H's CSR pattern
                Hd0 = Hd1.__class__((Hd0, Hd1.indices, Hd1.indptr), shape=Hd1.shape)
            dlam = 0.5 * (lam1 - lam0)
            D = D + np.asarray(Hd1.T @ dlam).ravel() + np.asarray(Hd0.T @ dlam).ravel()
        return D, K1, C1 + dM / h, xdd1

    def basis(self, H_n, H1, k: int, *, t1: float = math.nan, iteration: int = 0) -> np.ndarray:
        """N_s: orthonormal basis of the k-dimensional null space of H_s = ½(H_n + H(x₀, t + h)).
        A singular H_s[R, D] of the sparse step raises :class:`StepFailure` naming t + h and the
        iteration."""
        n = self.kernels.n
        if k == 0 or self.kernels.m == 0:
            return np.eye(n)[:, n - k:].copy()           # null_basis's: no constraints, or k = 0
        if self._lin is None:
            np.add(H_n, H1, out=self._H_s)
            self._H_s *= 0.5
            return null_basis(self._H_s, k, self.factorization)
        np.add(H_n, H1.data, out=self._H_s)
        self._H_s *= 0.5
        try:
            return self._lin.chart_basis(self._H_s)
        except np.linalg.LinAlgError as exc:
            raise StepFailure(f"symmetric chart: factorization of H_s failed at t = {t1:.9g}, "
                              f"iteration {iteration}: {exc}", iteration=iteration,
                              outcome=Outcome(fail_code("CHART_SPARSE_SINGULAR"), t1, math.nan,
                                              iteration)) from None
