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
from scipy.linalg.lapack import dgeqp3, dgesdd, dgesvd, dormqr

from ..settings import CHARTS
from .base import StepFailure
from .linalg import solve_small

__all__ = ["CHARTS", "SymmetricChart", "solve_chart_step", "null_basis"]

#: T = N_sᵀN_H with a singular value below this is treated as singular (the tangent spaces at
#: t + h and mid-step nearly orthogonal: a rotation of about π per step).  Never seen: T is
#: orthogonal up to O(h²).
T_SINGULAR = 1e-6


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
                     *, t1: float = math.nan, iteration: int = 0, M=None, reaction=None) -> None:
    """Solve the 3k × 3k system of the module docstring for (α, α̇, α̈) at t + h (written into
    ``alpha``, ``alpha_dot``, ``alpha_ddot``).

    ``Ns``: the chart basis N_s (n × k); ``lin``: the :class:`~symgen.steppers.linalg.Linearization`
    of this iterate (N_H, ẋ_p, ẍ_p, Ẋ_p, Ẍ_p1, X_p2, M_R, C_R, K_R); ``x_p``: the position particular
    solution (absolute); ``r``: N_Hᵀ(f − K_L(x_p − x₀) − C_L(ẋ_p − ẋ₀) − M ẍ_p), the right-hand side
    of Eq. 52; ``x, xd, xdd``: the accepted state at t.  A singular T or system raises
    :class:`StepFailure` naming t + h and the iteration.  With ``M`` (the mass matrix, dense or
    CSR) rows 2–3 are N_sᵀM R_x = N_sᵀM R_v = 0 instead: the Newmark residuals' tangent part is
    taken M-orthogonally (``metric="mass"``, docs/spatial-accuracy.md).  With ``M`` and
    ``reaction = (g_x, g_v)`` (:meth:`SymmetricChart.reaction`; γ = ½) they are the corrected
    relations N_sᵀ(M R_x + (β − 1/6)h²/2 g_x + h³/24 g_v) = N_sᵀ(M R_v + h²/12 g_v) = 0: the
    reaction Hᵀλ's part of R_x, R_v's Taylor terms cancelled to O(h⁵) (the symmetric chart's
    reaction correction, docs/spatial-accuracy.md; trapezoidal: h²/24 g_x, Euler–Maclaurin).
    """
    N = lin.N
    k = N.shape[1]
    if k == 0:
        return
    NsT = Ns.T
    T = NsT @ N                                                   # T = N_sᵀ N_H
    s_min = abs(T[0, 0]) if k == 1 else np.linalg.svd(T, compute_uv=False)[-1]
    if not (s_min > T_SINGULAR):
        raise StepFailure(
            f"symmetric chart: T = N_sᵀN_H is singular at t = {t1:.9g}, iteration {iteration} "
            f"(smallest singular value {s_min:.3e}): the null spaces of H at t + h and of "
            f"½(H(t) + H(t + h)) are nearly orthogonal; reduce the step", iteration=iteration)
    if M is not None:
        # metric "mass": rows 2–3 taken with N_sᵀM (M symmetric), scaled to O(1) entries (a row
        # scale: same solution); a singular M_R then shows as a singular step matrix below
        NsT = np.asarray(M @ Ns).T
        scale = np.abs(NsT).max()
        NsT = NsT / scale
        T = NsT @ N
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
    if M is not None and reaction is not None:
        # the reaction correction (γ = ½): N_sᵀM R_x + N_sᵀ((β − 1/6)h²/2 g_x + h³/24 g_v) = 0 and
        # N_sᵀM R_v + h²/12 N_sᵀg_v = 0 (rows scaled as NsT: N_sᵀ/scale)
        g_x, g_v = reaction
        b[i2] -= Ns.T @ ((beta - 1.0 / 6.0) * hh / 2.0 * g_x + hh * h / 24.0 * g_v) / scale
        b[i3] -= h * (Ns.T @ (hh / 12.0 * g_v)) / scale
    z = np.empty(3 * k)
    try:
        solve_small(A, b, z)
    except np.linalg.LinAlgError:
        raise StepFailure(f"symmetric chart: singular 3k × 3k step matrix at t = {t1:.9g}, "
                          f"iteration {iteration} (k = {k})", iteration=iteration) from None
    alpha[:] = z[i1]
    np.multiply(z[i2], 1.0 / h, out=alpha_dot)
    np.multiply(z[i3], 1.0 / hh, out=alpha_ddot)


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

    def reaction(self, H1, Hd1, lam0, lam1):
        """(g_x, g_v) of the reaction correction (docs/spatial-accuracy.md) from H, Ḣ, λ at the
        start (kept: H_n, Ḣ_n; ``lam0``) and at the iterate of t + h (``H1``, ``Hd1``, ``lam1``):
        g_x = (H₁ − H₀)ᵀ(λ₀ + λ₁), g_v = Ḣ₁ᵀλ₁ − Ḣ₀ᵀλ₀ + ½(Ḣ₀ + Ḣ₁)ᵀ(λ₁ − λ₀) (≈ h d²/dt²(Hᵀλ)
        without its Hᵀλ̈ part, which N_s annihilates to O(h))."""
        H0, Hd0 = self._H_n, self._Hd_n
        if self._lin is not None:                        # values on H's CSR pattern
            H0 = H1.__class__((H0, H1.indices, H1.indptr), shape=H1.shape)
            Hd0 = H1.__class__((Hd0, H1.indices, H1.indptr), shape=H1.shape)
        s = lam0 + lam1
        g_x = H1.T @ s - H0.T @ s
        g_v = Hd1.T @ (1.5 * lam1 - 0.5 * lam0) - Hd0.T @ (1.5 * lam0 - 0.5 * lam1)
        return np.asarray(g_x).ravel(), np.asarray(g_v).ravel()

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
                              f"iteration {iteration}: {exc}", iteration=iteration) from None
