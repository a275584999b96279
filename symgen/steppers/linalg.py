"""The linear algebra of one linearization of the constraints (paper Sec. 5, Eqs. 32–52).

One SVD of H per Newton iteration gives

* the numerical rank r (singular values above ``rank_tol`` × the largest one; relative, default
  1e-10: it must stay below the closest approach to a singular configuration that the steps make,
  see docs/method.md),
* an orthonormal null-space basis N_H (n × k, k = n − r), the last k right singular vectors,
* the pseudo-inverse H⁺ = V_r S_r⁻¹ U_rᵀ (n × m), used for every minimum-norm (least-squares when
  rank-deficient, i.e. for redundant constraints) particular solution.

The position particular solution is written as a correction of the current estimate x₀ (the
paper's notation below; the code calls the estimate ``x1, xd1, xdd1``, the state at t + h; the
form is settled in docs/method.md), so that α stays of the size of one step; the velocity and
acceleration particular solutions are the minimum-norm solutions of Eqs. 39 and 46 as printed:

    x_p  = x₀ − H⁺ q                                          (Eq. 33, corrected form)
    ẋ_p  = H⁺(H ẋ₀ − q̇ − Ḣ (x_p − x₀))                        (Eq. 39, minimum norm)
    Ẋ_p  = −H⁺ Ḣ N_H                                           (Eq. 40)
    ẍ_p  = H⁺(H ẍ₀ − q̈ − Ḧ (x_p − x₀) − 2Ḣ (ẋ_p − ẋ₀))         (Eq. 46, minimum norm)
    Ẍ_p1 = H⁺(−2Ḣ Ẋ_p − Ḧ N_H)                                 (Eq. 47)
    X_p2 = 2 Ẋ_p                                               (Eqs. 48–49)

Why not the corrected form ẋ_p = ẋ₀ + H⁺(…) for velocities too: a null-space component c of ẋ_p
shifts α̇ at t and at t + h by the same constant −Nᵀc while α itself is unshifted (x_p does not move
with time inside the step), and Newmark (α₁ = α₀ + hα̇₀ + …) is not invariant under that: the
iteration then converges to x(t + h) ≈ x(t) for a moving mechanism.  A constant shift of α (the
position correction) is harmless because Eq. 56 shifts α(t) by the same constant
(docs/method.md, "Singular configurations", records the choice).

Stored: dx_p = x_p − x₀ and the absolute ẋ_p, ẍ_p together with dxd_p = ẋ_p − ẋ₀ (the
linearized equilibrium is written about the estimate).
Plain array code on preallocated buffers (re-allocated only when the rank changes), so that it can
be mirrored line by line in C.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg.lapack import dgeqp3, dgesdd, dgesv, dgesvd, dorgqr, dtrtrs

from ..settings import FACTORIZATIONS, SimulationSettings

__all__ = ["Linearization", "omega_from", "solve_small", "dot_into", "DEFAULT_RANK_TOL"]

#: Relative rank tolerance: singular values ≤ rank_tol · s_max count as zero.
DEFAULT_RANK_TOL = SimulationSettings.rank_tol

#: A Linearization made with "auto" (the one-off linearizations of assembly, stability, linear;
#: the steppers resolve the setting first, settings.resolve_factorization) factors H by SVD below
#: this many coordinates and by pivoted QR from it on (measured with one BLAS thread: SVD 14 µs vs
#: QR 44 µs at n = 3, 91 vs 64 µs at n = 21, 14.2 vs 3.9 ms at 243).
QR_FROM_N = 20


class Linearization:
    """Null-space basis, pseudo-inverse, particular solutions and reduced matrices of one iterate."""

    def __init__(self, n: int, m: int, rank_tol: float = DEFAULT_RANK_TOL,
                 factorization: str = "auto"):
        if not (0.0 <= rank_tol < 1.0):
            raise ValueError(f"rank_tol must lie in [0, 1), got {rank_tol}")
        if factorization not in FACTORIZATIONS:
            raise ValueError(f"unknown factorization {factorization!r}; known: {FACTORIZATIONS}")
        self.n, self.m, self.rank_tol = n, m, float(rank_tol)
        if factorization == "auto":
            factorization = "qr" if n >= QR_FROM_N else "svd"
        if factorization == "sparse" and not self.sparse:
            raise ValueError("factorization 'sparse' is SparseLinearization's "
                             "(symgen.steppers.sparse), not this dense one")
        self.factorization = factorization
        self.rank = 0
        self.k = -1
        self.s = np.zeros(min(n, m))            # singular values of H (QR: |R_ii|); the floor of
                                                # the Newton convergence test reads κ from them
        self.Hpinv = np.zeros((n, m))           # H⁺
        self.dx_p = np.zeros(n)                 # x_p − x₀
        self.xd_p = np.zeros(n)                 # ẋ_p
        self.xdd_p = np.zeros(n)                # ẍ_p
        self.dxd_p = np.zeros(n)                # ẋ_p − ẋ₀
        self._wm = np.zeros(m)                  # work vectors (constraint space)
        self._wm2 = np.zeros(m)
        self._set_k(n - min(n, m) if m else n)

    # -- buffers that depend on k = n − rank ---------------------------------------------------
    def _set_k(self, k: int) -> None:
        if k == self.k:
            return
        n, m = self.n, self.m
        self.k = k
        self.N = np.zeros((n, k))               # N_H
        self.Xd_p = np.zeros((n, k))            # Ẋ_p
        self.Xdd_p1 = np.zeros((n, k))          # Ẍ_p1
        self.X_p2 = np.zeros((n, k))            # X_p2 = 2 Ẋ_p
        self._Wmk = np.zeros((m, k))            # work: constraint rows × k
        self._Wmk2 = np.zeros((m, k))
        self.MN = np.zeros((n, k))
        self.CN = np.zeros((n, k))
        self.KN = np.zeros((n, k))
        self.MXd = np.zeros((n, k))
        self.CXd = np.zeros((n, k))
        self.MXdd = np.zeros((n, k))
        self.M_R = np.zeros((k, k))
        self.C_R = np.zeros((k, k))
        self.K_R = np.zeros((k, k))
        self._Wkk = np.zeros((k, k))

    # -- one rank-revealing factorization --------------------------------------------------------
    def factor(self, H: np.ndarray) -> int:
        """SVD (or pivoted QR) of H: rank, N_H and H⁺.  Returns k = n − rank, the size of α."""
        n, m = self.n, self.m
        if m == 0:
            self.rank = 0
            self._set_k(n)
            self.N[...] = np.eye(n)
            return n
        if not np.isfinite(H).all():
            raise np.linalg.LinAlgError("H has non-finite entries")
        if self.factorization == "qr":
            return self._factor_qr(H)
        # H = U S Vᵀ by divide and conquer (LAPACK dgesdd: as fast as dgesvd for small H, many
        # times faster for large H since it needs the full V); dgesvd if it does not converge
        U, s, Vt, info = dgesdd(H, compute_uv=1, full_matrices=1)
        if info != 0:
            U, s, Vt, info = dgesvd(H, compute_uv=1, full_matrices=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"SVD of H did not converge (LAPACK info = {info})")
        self.s[...] = s
        smax = s[0] if s.size else 0.0
        if smax > 0.0 and s[-1] > self.rank_tol * smax:
            r = s.size                                                           # full rank
        else:
            r = int(np.count_nonzero(s > self.rank_tol * smax)) if smax > 0.0 else 0
        self.rank = r
        self._set_k(n - r)
        self.N[...] = Vt[r:].T                                                   # N_H
        # H⁺ = V_r S_r⁻¹ U_rᵀ  (minimum-norm least squares for every solve below)
        if r == m:
            np.dot(Vt[:r].T, (U / s).T, out=self.Hpinv)
        else:
            np.dot(Vt[:r].T, (U[:, :r] / s[:r]).T, out=self.Hpinv)
        return self.k

    def _factor_qr(self, H: np.ndarray) -> int:
        """Rank-revealing QR of Hᵀ (LAPACK dgeqp3): Hᵀ Π = Q R, |R_ii| decreasing.

        With r the numerical rank (|R_ii| > rank_tol·|R_00|), Q = [Q₁ Q₂] and R₁ = R[:r, :]:
        H = Πᵀ R₁ᵀ Q₁ᵀ, so N_H = Q₂ (orthonormal) and H⁺ = Q₁ (R₁ᵀ)⁺ Πᵀ, the same minimum-norm
        (least-squares for redundant rows) pseudo-inverse as the SVD's.  |R_ii| stand in for the
        singular values in ``s``.
        """
        n, m = self.n, self.m
        kmin = min(n, m)
        qr, jpvt, tau, _, info = dgeqp3(H.T)                  # Hᵀ[:, piv] = Q R
        if info != 0:
            raise np.linalg.LinAlgError(f"QR of Hᵀ failed (LAPACK info = {info})")
        d = np.abs(np.diagonal(qr)[:kmin])
        self.s[...] = d
        dmax = d[0] if kmin else 0.0
        r = int(np.count_nonzero(d > self.rank_tol * dmax)) if dmax > 0.0 else 0
        self.rank = r
        self._set_k(n - r)
        Qf = np.zeros((n, n), order="F")
        Qf[:, :kmin] = qr[:, :kmin]
        Q, _, info = dorgqr(Qf, tau[:kmin], overwrite_a=1)    # the full n × n Q
        if info != 0:
            raise np.linalg.LinAlgError(f"forming Q failed (LAPACK info = {info})")
        self.N[...] = Q[:, r:]                                                   # N_H = Q₂
        R1 = np.triu(qr[:r, :])                                                  # r × m
        if r == m:
            Y, info = dtrtrs(R1, np.eye(m), trans=1)          # R₁ᵀ Y = I: Y = R₁⁻ᵀ
            if info != 0:
                raise np.linalg.LinAlgError(f"singular R in the QR of Hᵀ (LAPACK info = {info})")
        else:
            Y = np.linalg.pinv(R1.T)                          # (R₁ᵀ)⁺, r × m, redundant rows
        piv = jpvt - 1
        self.Hpinv[:, piv] = Q[:, :r] @ Y                      # H⁺ = Q₁ (R₁ᵀ)⁺ Πᵀ
        return self.k

    # -- the operations of the step on this factorization (the sparse one overrides them) ------
    sparse = False      # the step feeds it the kernels' dense arrays (True: their CSR matrices)

    def _pinv(self, b: np.ndarray, out: np.ndarray) -> None:
        """out = H⁺ b (b: m or m × k)."""
        np.dot(self.Hpinv, b, out=out)

    def lam_from(self, y: np.ndarray, out: np.ndarray) -> None:
        """out = H⁺ᵀ y: λ from Gᵀλ = y by least squares (Eq. 51)."""
        np.dot(self.Hpinv.T, y, out=out)

    def s_range(self) -> tuple[float, float]:
        """(s_max, s_min) of the kept singular values (QR: |R_ii|) of the last factorization, the
        rank decision's and the round-off floor's; (0, 0) without constraints."""
        s = self.s[:self.rank]
        return (float(s[0]), float(s[-1])) if s.size else (0.0, 0.0)

    # -- particular solutions ----------------------------------------------------------------
    def particular(self, q, q_dot, q_ddot, H, H_dot, H_ddot, xd1, xdd1) -> None:
        """Fill dx_p, ẋ_p, Ẋ_p, ẍ_p, Ẍ_p1, X_p2 (Eqs. 33, 39, 40, 46, 47, 48) and dxd_p."""
        pinv, wm, wm2 = self._pinv, self._wm, self._wm2
        if self.m == 0:
            self.dx_p[:] = 0.0
            self.xd_p[:] = 0.0
            self.xdd_p[:] = 0.0
            np.negative(xd1, out=self.dxd_p)
            self.Xd_p[...] = 0.0
            self.Xdd_p1[...] = 0.0
            self.X_p2[...] = 0.0
            return
        pinv(q, self.dx_p)
        np.negative(self.dx_p, out=self.dx_p)                                  # Eq. 33: x_p − x₀ = −H⁺q
        dot_into(H_dot, self.dx_p, wm)
        wm += q_dot
        dot_into(H, xd1, wm2)
        wm2 -= wm
        pinv(wm2, self.xd_p)                                      # Eq. 39
        np.subtract(self.xd_p, xd1, out=self.dxd_p)
        dot_into(H_dot, self.N, self._Wmk)
        pinv(self._Wmk, self.Xd_p)
        np.negative(self.Xd_p, out=self.Xd_p)                                  # Eq. 40
        dot_into(H_ddot, self.dx_p, wm)
        dot_into(H_dot, self.dxd_p, wm2)
        wm2 *= 2.0
        wm += wm2
        wm += q_ddot
        dot_into(H, xdd1, wm2)
        wm2 -= wm
        pinv(wm2, self.xdd_p)                                     # Eq. 46
        dot_into(H_dot, self.Xd_p, self._Wmk)
        self._Wmk *= 2.0
        dot_into(H_ddot, self.N, self._Wmk2)
        self._Wmk += self._Wmk2
        np.negative(self._Wmk, out=self._Wmk)
        pinv(self._Wmk, self.Xdd_p1)                              # Eq. 47
        np.multiply(self.Xd_p, 2.0, out=self.X_p2)                             # Eqs. 48–49

    # -- reduced matrices of Eq. 52 (N_G = N_H) -----------------------------------------------
    def reduce(self, M, C, K) -> None:
        """M_R = NᵀMN, C_R = NᵀCN + 2NᵀMẊ_p, K_R = NᵀKN + NᵀCẊ_p + NᵀMẌ_p1 (Eq. 52)."""
        N, NT, W = self.N, self.N.T, self._Wkk
        dot_into(M, N, self.MN)
        dot_into(C, N, self.CN)
        dot_into(K, N, self.KN)
        dot_into(M, self.Xd_p, self.MXd)
        dot_into(C, self.Xd_p, self.CXd)
        dot_into(M, self.Xdd_p1, self.MXdd)
        np.dot(NT, self.MN, out=self.M_R)                                   # Eq. 52: N_Gᵀ M_L N_H
        np.dot(NT, self.CN, out=self.C_R)
        np.dot(NT, self.MXd, out=W)
        W *= 2.0
        self.C_R += W                                                          # Eq. 52: + 2 N_Gᵀ M_L Ẋ_p
        np.dot(NT, self.KN, out=self.K_R)
        np.dot(NT, self.CXd, out=W)
        self.K_R += W                                                          # Eq. 52: + N_Gᵀ C_L Ẋ_p
        np.dot(NT, self.MXdd, out=W)
        self.K_R += W                                                          # Eq. 52: + N_Gᵀ M_L Ẍ_p1

    def omega_at(self, kernels, t, x, xd, xdd, lam, constraints=None) -> float:
        """ω_max of the reduced system linearized at a state (end of Sec. 5): factor H, the
        particular solutions, M_R and K_R.  ``constraints`` = the kernels' constraint outputs at
        that state when the caller has them already."""
        q, H, q_dot, H_dot, q_ddot, H_ddot = (constraints if constraints is not None
                                               else kernels.constraints(t, x, xd, xdd))
        self.factor(H)
        self.particular(q, q_dot, q_ddot, H, H_dot, H_ddot, xd, xdd)
        M, _, K, C = kernels.dynamics(t, x, xd, xdd, lam)
        self.reduce(M, C, K)
        return self.omega_max()

    def omega_max(self) -> float:
        """Highest frequency of the reduced system (K_R, M_R) of the last :meth:`reduce`."""
        return omega_from(self.M_R, self.K_R)


def dot_into(A, B: np.ndarray, out: np.ndarray) -> None:
    """out = A B for a dense ndarray A (BLAS, into ``out``) or a scipy.sparse matrix A."""
    if type(A) is np.ndarray:
        np.dot(A, B, out=out)
    else:
        out[...] = A @ B


def solve_small(S: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = S⁻¹ b for a small dense S (LU with partial pivoting, LAPACK dgesv; a scalar division
    for k = 1).  Raises ``numpy.linalg.LinAlgError`` when S is singular; a NaN in S gives NaN in
    out (as dgesv does for k > 1), which the caller's non-finite check reports."""
    k = S.shape[0]
    if k == 1:
        d = S[0, 0]
        if d == 0.0:
            raise np.linalg.LinAlgError("singular 1x1 matrix")
        out[0] = b[0] / d
        return
    if k == 0:
        return
    _, _, x, info = dgesv(S, b)
    if info != 0:
        raise np.linalg.LinAlgError(f"singular matrix (LAPACK dgesv info = {info})")
    out[:] = x


def omega_from(M_R: np.ndarray, K_R: np.ndarray) -> float:
    """ω_max = √ of the largest modulus of the generalized eigenvalues of (K_R, M_R).

    Negative or complex eigenvalues (an unstable or gyroscopic linearization: K_R need not be
    symmetric) count by their modulus, so the Eq. 11 limit drawn from ω_max stays conservative
    instead of claiming unconditional stability; a massless mode gives inf, non-finite input NaN.
    """
    k = M_R.shape[0]
    if k == 0:
        return 0.0
    if not (np.isfinite(M_R).all() and np.isfinite(K_R).all()):
        return math.nan
    if k == 1:
        mr, kr = float(M_R[0, 0]), float(K_R[0, 0])
        if mr == 0.0:
            return math.inf if kr != 0.0 else math.nan
        w2 = abs(kr / mr)
    else:
        try:
            ev = np.linalg.eigvals(np.linalg.solve(M_R, K_R))
        except np.linalg.LinAlgError:
            import scipy.linalg

            ev = scipy.linalg.eigvals(K_R, M_R)
            ev = ev[~np.isnan(ev)]
            if ev.size == 0:
                return math.nan
        w2 = float(np.max(np.abs(ev)))
    if math.isnan(w2):
        return math.nan
    return math.sqrt(w2)
