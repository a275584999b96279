"""The sparse factorization of the null-space step (issue 14; ``factorization="sparse"``): the same
operations as the dense :class:`~symgen.steppers.linalg.Linearization` — N_H, H⁺ b, H⁺ᵀ y, the
rank and the singular-value range of H — from one sparse LU of a square block of H per Newton
iteration, so the step costs O(nnz) instead of O(n³).  The step itself (predictor, particular
solutions, Eq. 52, recovery, λ, convergence) is the dense step's code, run on the kernels' CSR
matrices (:meth:`~symgen.kernels.KernelsBase.constraints_csr`).

The design (its costs and measurements: docs/sparse-step.md):

* **Partition** (at the first factorization, and again on a rank change): the independent rows R
  of H are the first r pivots of the pivoted QR of Hᵀ (the dense QR path's rows and rank, so a
  redundant or dropped row is the one it drops), the redundant rows Z the rest; the k = n − r
  independent coordinates I maximize the volume |det N_I| of an orthonormal null-space basis
  (pivoted QR of Nᵀ; k = 1: argmax |N_i|), D the other r, in the generated fill-reducing
  ``col_order``.  This needs one dense QR, once.
* **Per iteration**: the LU with partial pivoting of H_RD (SuperLU, natural column order = the
  generated one), N_c = P[−H_RD⁻¹H_RI; I] orthonormalized (thin QR) to N, and with N orthonormal
  the minimum-norm operators H_R⁺b = (I − NNᵀ) scatter_D(H_RD⁻¹ b) and
  H_R⁺ᵀy = H_RD⁻ᵀ gather_D((I − NNᵀ) y).
* **Redundant rows Z**: with E = H_Z H_R⁺ the step uses H̃ = [H_R; E H_R] — the rank-r matrix whose
  pseudo-inverse the dense pivoted-QR path forms when it drops the rows Z — through
  H̃⁺ = H_R⁺ (I + EᵀE)⁻¹ [I  Eᵀ] (Woodbury: a d × d solve, d = |Z|), H̃⁺ᵀ = [I; E](I + EᵀE)⁻¹H_R⁺ᵀ.
* **Rank check** every iteration: σ_min(H_R) by one warm-started step of inverse iteration on
  (H_R H_Rᵀ)⁻¹ (two solves) and σ_max(H_Z N) (what the dropped rows add outside the row space of
  H_R), against ``rank_tol`` × the largest row norm of H (the dense QR's |R₀₀|).  Within a factor
  :data:`CONFIRM` of that threshold the decision is the dense QR's (a pivoted QR of Hᵀ, counted in
  ``rank_confirmations``): a different rank or a different set of rows repartitions.  With the
  default tolerance this never happens on the shipped mechanisms (σ_min/σ_max ≥ 1e-5 at their
  singular passages), so no dense O(n³) work is done after the first partition.
* **Column quality**: when |det N_I| falls below :data:`VOLUME_DROP` of its value when I was
  chosen, I is chosen anew (from the current N) for the next iteration (``column_changes``).

The converged step does not depend on the basis N (the re-projection of Eqs. 56–58 is a least-
squares projection and the particular solutions are minimum-norm), so the trajectory is the dense
step's to round-off.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sps
from scipy.linalg.lapack import dgeqp3
from scipy.sparse.linalg import splu

from ..runtime_constants import SPARSE_CONFIRM, SPARSE_SIGMA_STEPS_NEW, SPARSE_VOLUME_DROP
from .linalg import DEFAULT_RANK_TOL, Linearization

__all__ = ["SparseLinearization", "make_linearization", "CONFIRM", "VOLUME_DROP"]

#: a rank estimate within this factor of the threshold is decided by the dense pivoted QR of Hᵀ
CONFIRM = SPARSE_CONFIRM
#: choose new independent coordinates when |det N_I| falls below this fraction of its best
VOLUME_DROP = SPARSE_VOLUME_DROP
#: inverse-iteration steps for σ_min(H_R) after a new partition (then one per iteration, warm)
SIGMA_STEPS_NEW = SPARSE_SIGMA_STEPS_NEW


def make_linearization(kernels, rank_tol: float | None, factorization: str) -> Linearization:
    """The dense :class:`Linearization` or, for ``"sparse"``, a :class:`SparseLinearization`."""
    tol = DEFAULT_RANK_TOL if rank_tol is None else rank_tol
    if factorization == "sparse":
        return SparseLinearization(kernels, tol)
    return Linearization(kernels.n, kernels.m, tol, factorization)


class SparseLinearization(Linearization):
    """N_H, H⁺, H⁺ᵀ, rank and s-range of H (CSR, on the kernels' ``H_pattern``) from a sparse LU
    of H[R, D] (module docstring); the particular solutions and M_R, C_R, K_R are the dense code's."""

    sparse = True

    def __init__(self, kernels, rank_tol: float = DEFAULT_RANK_TOL):
        if not hasattr(kernels, "H_pattern"):
            raise ValueError(f"factorization 'sparse' needs kernels with CSR patterns "
                             f"(symgen.build or LambdifyKernels), not {type(kernels).__name__}")
        super().__init__(kernels.n, kernels.m, rank_tol, "sparse")
        self.Hpinv = None                              # never formed
        indptr, self._indices = kernels.H_pattern
        self._rows_of = np.repeat(np.arange(self.m), np.diff(indptr))   # row of each entry
        self._order = np.asarray(kernels.col_order, dtype=np.intp)
        self.R = None                                  # independent rows (sorted)
        self.Z = np.zeros(0, dtype=np.intp)            # redundant rows
        self.I = self.D = None                         # independent coordinates; the rest
        self._vol = 0.0                                # |det N_I| when I was chosen
        self._new_I = False
        self._v = None                                 # inverse-iteration vector (r)
        self.scale = self.sigma_min = math.nan         # max row norm of H; σ_min(H_R) estimate
        self.g_max = 0.0                               # σ_max(H_Z N)
        self.partitions = 0                            # partitions made (the first included)
        self.column_changes = 0                        # new I for volume
        self.rank_confirmations = 0                    # rank decisions by the dense QR

    def stats(self) -> dict:
        """What the run's meta records about the sparse factorization."""
        return {"partitions": self.partitions, "column_changes": self.column_changes,
                "rank_confirmations": self.rank_confirmations,
                "rows": [int(i) for i in self.R] if self.R is not None else None,
                "independent": [int(j) for j in self.I] if self.I is not None else None}

    # -- the factorization -------------------------------------------------------------------
    def factor(self, H) -> int:
        """LU of H[R, D], N, the rank check (module docstring).  Returns k = n − rank."""
        n, m = self.n, self.m
        if m == 0:
            return super().factor(H)
        data = H.data
        if not np.isfinite(data).all():
            raise np.linalg.LinAlgError("H has non-finite entries")
        self.scale = math.sqrt(float(np.max(np.bincount(self._rows_of, weights=data * data,
                                                        minlength=m))))
        if self.R is None:
            self._partition(H, self._qr_rows(H))
        elif self._new_I:
            self._choose_columns(self.N.copy())
            self.column_changes += 1
        self._factor_block(data)
        self._sigma(1)
        thr = self.rank_tol * self.scale
        if self.sigma_min <= CONFIRM * thr or self.g_max * CONFIRM > thr:
            self.rank_confirmations += 1                   # near the threshold: QR decides
            rows = self._qr_rows(H)
            if not np.array_equal(rows, self.R):
                self._partition(H, rows)
                self._factor_block(data)
                self._sigma(SIGMA_STEPS_NEW)
        k = self.k
        vol = abs(np.linalg.det(self.N[self.I])) if k else 1.0
        self._new_I = vol < VOLUME_DROP * self._vol
        return k

    def _qr_rows(self, H) -> np.ndarray:
        """The independent rows by the dense path's rule: pivoted QR of Hᵀ, |R_ii| > rank_tol·|R₀₀|."""
        qr, jpvt, _, _, info = dgeqp3(H.toarray().T)
        if info != 0:
            raise np.linalg.LinAlgError(f"QR of Hᵀ failed (LAPACK info = {info})")
        d = np.abs(np.diagonal(qr)[:min(self.n, self.m)])
        r = int(np.count_nonzero(d > self.rank_tol * d[0])) if d.size and d[0] > 0.0 else 0
        return np.sort(jpvt[:r] - 1)

    def _partition(self, H, rows: np.ndarray) -> None:
        """Rows R = ``rows``, Z the rest; I by maximum volume of an orthonormal basis of null(H_R)
        (from a complete QR of H_Rᵀ, dense: once per partition)."""
        n, m = self.n, self.m
        self.R = rows
        self.Z = np.setdiff1d(np.arange(m), rows)
        self.rank = r = rows.size
        self._set_k(n - r)
        Q, _ = np.linalg.qr(H[rows].toarray().T, mode="complete")
        self._choose_columns(Q[:, r:])
        self._v = None
        self.partitions += 1

    def _choose_columns(self, N: np.ndarray) -> None:
        """I: the first k column pivots of a pivoted QR of Nᵀ (greedy maximum volume); D the rest in
        the generated order; the maps from H's pattern into H[R, D], H[R, I] and H[Z, :]."""
        n, k = self.n, self.k
        if k:
            _, _, piv = scipy.linalg.qr(N.T, mode="economic", pivoting=True)
            I = np.sort(piv[:k])
            self._vol = abs(np.linalg.det(N[I]))
        else:
            I = np.zeros(0, dtype=np.intp)
            self._vol = 1.0
        in_I = np.zeros(n, bool)
        in_I[I] = True
        self.I, self.D = I, self._order[~in_I[self._order]]
        row_pos = np.full(self.m, -1)
        row_pos[self.R] = np.arange(self.R.size)
        d_pos = np.full(n, -1)
        d_pos[self.D] = np.arange(self.D.size)
        i_pos = np.full(n, -1)
        i_pos[I] = np.arange(k)
        rr, cc = row_pos[self._rows_of], self._indices
        sel = (rr >= 0) & (d_pos[cc] >= 0)
        r = self.R.size
        entries = np.flatnonzero(sel)
        blk = sps.coo_matrix((entries + 1.0, (rr[sel], d_pos[cc[sel]])), shape=(r, r)).tocsc()
        self._blk = blk
        self._blk_map = blk.data.astype(np.intp) - 1         # block entry → entry of H's pattern
        sel_I = (rr >= 0) & (i_pos[cc] >= 0)
        self._ri, self._ci, self._pi = rr[sel_I], i_pos[cc[sel_I]], np.flatnonzero(sel_I)
        z_pos = np.full(self.m, -1)
        z_pos[self.Z] = np.arange(self.Z.size)
        sel_Z = z_pos[self._rows_of] >= 0
        self._zi, self._zc, self._zp = z_pos[self._rows_of[sel_Z]], cc[sel_Z], np.flatnonzero(sel_Z)

    def _factor_block(self, data: np.ndarray) -> None:
        """LU of H[R, D]; N (orthonormal); E and (I + EEᵀ)⁻¹ for the redundant rows."""
        n, k = self.n, self.k
        self._lu = self._block_lu(data, "H[R, D]")
        if k:
            self.N[...] = self._null_of(self._lu, data)
        if self.Z.size:
            HZ = np.zeros((self.Z.size, n))
            HZ[self._zi, self._zc] = data[self._zp]
            G = HZ @ self.N                                    # what Z adds outside rowspace(H_R)
            self.g_max = float(np.linalg.norm(G, 2)) if G.size else 0.0
            W = HZ.T - self.N @ (self.N.T @ HZ.T)
            self._Et = self._lu.solve(np.ascontiguousarray(W[self.D]), trans="T")   # Eᵀ, r × d
            self._Winv = np.linalg.inv(np.eye(self.Z.size) + self._Et.T @ self._Et)
        else:
            self.g_max = 0.0

    def _null_of(self, lu, data: np.ndarray) -> np.ndarray:
        """The orthonormal basis (n × k) of null(A_R) from the LU ``lu`` of A[R, D], A the values
        ``data`` on H's pattern: N_c = P[−A_RD⁻¹A_RI; I] orthonormalized (thin QR)."""
        n, k, r = self.n, self.k, self.R.size
        ARI = np.zeros((r, k))
        ARI[self._ri, self._ci] = data[self._pi]
        Nc = np.zeros((n, k))
        Nc[self.D] = -lu.solve(ARI) if r else 0.0                  # N_c = P[−A_RD⁻¹A_RI; I]
        Nc[self.I, np.arange(k)] = 1.0
        return np.linalg.qr(Nc)[0]

    def chart_basis(self, data: np.ndarray) -> np.ndarray:
        """The symmetric chart's N_s (:mod:`~symgen.steppers.chart`): an orthonormal basis
        (n × k) of the null space of H_s[R], ``data`` the values of H_s = ½(H(t) + H(t + h)) on
        H's pattern, on the step's current partition (its rows R, coordinates I and k: H_s has
        the rank of H away from singular passages, and near them the step's decision is
        reused).  Its own LU of H_s[R, D] (the step's factorization is left as it is), then
        N_s = orth(P[−H_s,RD⁻¹ H_s,RI; I]).  The redundant rows Z are left out, as the dense
        path's pivoted QR of H_sᵀ leaves out the rows it does not pivot.  Raises
        ``LinAlgError`` when H_s[R, D] is singular."""
        if self.k == 0:
            return np.zeros((self.n, 0))
        return self._null_of(self._block_lu(data, "H_s[R, D]"), data)

    def _block_lu(self, data: np.ndarray, what: str):
        """SuperLU of A[R, D] (natural column order = the generated one), A the values ``data`` on
        H's pattern; ``LinAlgError`` naming ``what`` when it is singular."""
        blk = self._blk                                   # splu copies: a scratch of the values
        blk.data[:] = data[self._blk_map]
        try:
            return splu(blk, permc_spec="NATURAL")
        except RuntimeError as exc:                       # "Factor is exactly singular"
            raise np.linalg.LinAlgError(f"sparse LU of {what} failed: {exc}") from None

    def _sigma(self, steps: int) -> None:
        """σ_min(H_R) by ``steps`` of inverse iteration on (H_R H_Rᵀ)⁻¹, warm-started."""
        r = self.R.size
        if r == 0:
            self.sigma_min = 0.0
            return
        if self._v is None or self._v.size != r:
            # a fixed start (an LCG, reproduced by the C runtime's sg_splin bit for bit)
            v = (1103515245 * np.arange(r, dtype=np.int64) + 12345) % 2**31 / 2.0**31 - 0.5
            self._v, steps = v / np.linalg.norm(v), max(steps, SIGMA_STEPS_NEW)
        v, w = self._v, np.zeros(self.n)
        rq = 0.0
        for _ in range(steps):
            self._row_pinv(v, w)                               # w = H_R⁺ v
            z = self._lu.solve(w[self.D], trans="T")            # H_R⁺ᵀ w = (H_R H_Rᵀ)⁻¹ v
            rq = float(v @ z)
            nz = float(np.linalg.norm(z))
            if not (nz > 0.0 and math.isfinite(nz)):
                break
            v = z / nz
        self._v = v
        self.sigma_min = 1.0 / math.sqrt(rq) if rq > 0.0 else 0.0

    # -- the operations of the step ----------------------------------------------------------
    def _row_pinv(self, b: np.ndarray, out: np.ndarray) -> None:
        """out = H_R⁺ b = (I − NNᵀ) scatter_D(H_RD⁻¹ b) (b: r or r × k)."""
        out[...] = 0.0
        out[self.D] = self._lu.solve(np.ascontiguousarray(b))
        out -= self.N @ (self.N.T @ out)

    def _pinv(self, b: np.ndarray, out: np.ndarray) -> None:
        """out = H̃⁺ b (module docstring; H⁺ when no row is redundant)."""
        bR = b[self.R]
        if self.Z.size:
            Et = self._Et
            bR = bR + Et @ b[self.Z]                                  # [I  Eᵀ] b
            bR = bR - Et @ (self._Winv @ (Et.T @ bR))                 # (I + EᵀE)⁻¹ (Woodbury)
        self._row_pinv(bR, out)

    def lam_from(self, y: np.ndarray, out: np.ndarray) -> None:
        """out = H̃⁺ᵀ y = [I; E](I + EᵀE)⁻¹ H_RD⁻ᵀ gather_D((I − NNᵀ) y)."""
        w = y - self.N @ (self.N.T @ y)
        u = self._lu.solve(np.ascontiguousarray(w[self.D]), trans="T")
        if self.Z.size:
            Et = self._Et
            u = u - Et @ (self._Winv @ (Et.T @ u))
            out[self.Z] = Et.T @ u
        out[self.R] = u

    def s_range(self) -> tuple[float, float]:
        """(max row norm of H, σ_min(H_R) estimate): the dense QR's |R₀₀| and the rank decision's
        smallest kept singular value."""
        if self.m == 0 or self.R is None:
            return (0.0, 0.0)
        return (self.scale, self.sigma_min)
