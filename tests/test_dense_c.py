"""templates/runtime/sg_dense.c.inc, the C runtime's hand-written dense linear algebra, against
numpy/LAPACK: Householder QR with column pivoting (LAPACK dgeqp3's rule, scipy.linalg.qr), its Q
and Q^T, LU with partial pivoting (numpy.linalg.solve), one-sided Jacobi SVD (numpy.linalg.svd)
and the minimum-norm least squares on it (numpy.linalg.lstsq), on random and rank-deficient
matrices.  The static functions are reached through a small test driver compiled with cffi."""
import shutil

import numpy as np
import pytest
import scipy.linalg

from symgen import jit as _jit
from symgen.codegen import GeneratedSource
from symgen.codegen.render import runtime_sources

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")

CDEF = """
void t_qr(double *A, int rows, int cols, double *tau, int *piv, double *cn);
void t_q(const double *A, int rows, int kmin, const double *tau, double *Q);
void t_qt(const double *A, int rows, int kmin, const double *tau, double *y);
void t_q_apply(const double *A, int rows, int kmin, const double *tau, double *y);
int t_lu_solve(double *A, double *b, int k, int *ipiv);
void t_jacobi(double *U, double *V, int N);
void t_lstsq(const double *A, double *b, int N, double *UV, double *work);
void t_mm(const double *A, const double *B, double *Out, int r, int c, int k);
void t_mtm(const double *A, const double *B, double *Out, int r, int c, int k);
"""
DRIVER = """
#include "sg_dense.c.inc"
void t_qr(double *A, int rows, int cols, double *tau, int *piv, double *cn)
{ householder_qr(A, rows, cols, tau, piv, cn); }
void t_q(const double *A, int rows, int kmin, const double *tau, double *Q)
{ householder_q(A, rows, kmin, tau, Q); }
void t_qt(const double *A, int rows, int kmin, const double *tau, double *y)
{ householder_qt(A, rows, kmin, tau, y); }
void t_q_apply(const double *A, int rows, int kmin, const double *tau, double *y)
{ q_apply(A, rows, kmin, tau, y); }
int t_lu_solve(double *A, double *b, int k, int *ipiv) { return lu_solve(A, b, k, ipiv); }
void t_jacobi(double *U, double *V, int N) { jacobi_rotate(U, V, N); }
void t_lstsq(const double *A, double *b, int N, double *UV, double *work)
{ lstsq_min_norm(A, b, N, UV, work); }
void t_mm(const double *A, const double *B, double *Out, int r, int c, int k)
{ mm(A, B, Out, r, c, k); }
void t_mtm(const double *A, const double *B, double *Out, int r, int c, int k)
{ mtm(A, B, Out, r, c, k); }
"""


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    files = runtime_sources()
    src = GeneratedSource(name="dense", model_hash="", files=files, cdef=CDEF)
    work = tmp_path_factory.mktemp("dense")
    path = _jit._compile(src, "_symgen_test_dense", ("-O1", "-std=c99"), work, source=DRIVER)
    return _jit._load("_symgen_test_dense", path)


def _ptr(mod, a, ctype="double *"):
    return mod.ffi.cast(ctype, a.ctypes.data)


def _qr(mod, A, pivot=True):
    """The C pivoted QR of A (rows x cols): (R, piv, Q) with A[:, piv] = Q R."""
    rows, cols = A.shape
    a = A.T.copy()                                      # column-major A (a copy: C writes it)
    kmin = min(rows, cols)
    tau = np.zeros(max(kmin, 1))
    piv = np.zeros(cols, dtype=np.intc)
    cn = np.zeros(2 * cols)
    mod.lib.t_qr(_ptr(mod, a), rows, cols, _ptr(mod, tau), _ptr(mod, piv, "int *") if pivot
                 else mod.ffi.NULL, _ptr(mod, cn) if pivot else mod.ffi.NULL)
    Q = np.zeros((rows, rows))
    mod.lib.t_q(_ptr(mod, a), rows, kmin, _ptr(mod, tau), _ptr(mod, Q))
    R = np.triu(a.T[:kmin, :]) if rows >= cols else np.triu(a.T)
    return R, piv if pivot else np.arange(cols), Q, (a, tau, kmin)


def _rank_deficient(rng, rows, cols, rank):
    return rng.standard_normal((rows, rank)) @ rng.standard_normal((rank, cols))


@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (6, 6), (1, 3), (9, 1)])
def test_pivoted_qr_is_lapacks_on_random_matrices(dense, shape):
    rng = np.random.default_rng(sum(shape))
    A = rng.standard_normal(shape)
    R, piv, Q, _ = _qr(dense, A)
    _, R_ref, piv_ref = scipy.linalg.qr(A, pivoting=True)
    np.testing.assert_array_equal(piv, piv_ref)          # dgeqp3's column order
    k = min(shape)
    np.testing.assert_allclose(np.abs(np.diag(R)[:k]), np.abs(np.diag(R_ref)[:k]), rtol=1e-12)
    np.testing.assert_allclose(Q.T @ Q, np.eye(shape[0]), atol=1e-14 * shape[0])
    np.testing.assert_allclose(Q[:, :k] @ R[:k], A[:, piv], atol=1e-13 * np.abs(A).max())


@pytest.mark.parametrize("rows, cols, rank", [(8, 6, 3), (6, 8, 2), (5, 5, 4), (6, 3, 1)])
def test_pivoted_qr_reveals_the_rank_of_rank_deficient_matrices(dense, rows, cols, rank):
    rng = np.random.default_rng(rows * 10 + cols)
    A = _rank_deficient(rng, rows, cols, rank)
    R, piv, Q, _ = _qr(dense, A)
    d = np.abs(np.diag(R))
    assert np.all(d[:rank] > 1e-8 * d[0])
    assert np.all(d[rank:] <= 1e-13 * d[0])               # the rank tolerance the steps use
    assert int(np.sum(d > 1e-10 * d[0])) == np.linalg.matrix_rank(A)
    np.testing.assert_allclose(Q[:, :min(rows, cols)] @ R[:min(rows, cols)], A[:, piv],
                               atol=1e-13 * np.abs(A).max())
    # the null space of A^T from the trailing columns of Q (as lin_factor's N_H of H^T)
    N = Q[:, rank:]
    np.testing.assert_allclose(A.T @ N, 0.0, atol=1e-13 * np.abs(A).max() * rows)


def test_q_transpose_and_q_apply_are_the_reflectors(dense):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((7, 4))
    _, _, Q, (a, tau, kmin) = _qr(dense, A)
    y = rng.standard_normal(7)
    qt, qy = y.copy(), y.copy()
    dense.lib.t_qt(_ptr(dense, a), 7, kmin, _ptr(dense, tau), _ptr(dense, qt))
    dense.lib.t_q_apply(_ptr(dense, a), 7, kmin, _ptr(dense, tau), _ptr(dense, qy))
    np.testing.assert_allclose(qt, Q.T @ y, atol=1e-14 * 7)
    np.testing.assert_allclose(qy, Q @ y, atol=1e-14 * 7)


@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_lu_solve_is_numpys_solve(dense, k):
    rng = np.random.default_rng(k)
    A = rng.standard_normal((k, k))
    if k > 1:
        A[0, 0] = 0.0                                     # row pivoting needed
    b = rng.standard_normal(k)
    x, a = b.copy(), A.copy()
    ipiv = np.zeros(k, dtype=np.intc)
    assert dense.lib.t_lu_solve(_ptr(dense, a), _ptr(dense, x), k, _ptr(dense, ipiv, "int *")) == 0
    ref = np.linalg.solve(A, b)
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-12 * np.linalg.cond(A) * np.abs(ref).max())


def test_lu_solve_reports_an_exactly_singular_matrix(dense):
    A = np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 0.0], [5.0, 6.0, 0.0]])
    b, ipiv = np.ones(3), np.zeros(3, dtype=np.intc)
    assert dense.lib.t_lu_solve(_ptr(dense, A), _ptr(dense, b), 3, _ptr(dense, ipiv, "int *")) == 1


@pytest.mark.parametrize("N, rank", [(4, 4), (6, 6), (6, 3), (7, 1)])
def test_jacobi_svd_gives_the_singular_values(dense, N, rank):
    rng = np.random.default_rng(N + rank)
    A = _rank_deficient(rng, N, N, rank)
    U = A.T.copy()                                       # column-major A
    V = np.eye(N)                                        # column-major identity
    dense.lib.t_jacobi(_ptr(dense, U), _ptr(dense, V), N)
    sv = np.sort(np.linalg.norm(U, axis=1))[::-1]        # column norms of U (rows of U.T)
    ref = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(sv[:rank], ref[:rank], rtol=1e-12)
    assert np.all(sv[rank:] <= 1e-13 * ref[0])
    Ucm, Vcm = U.T, V.T                                  # back to ordinary (row-major) arrays
    np.testing.assert_allclose(Vcm.T @ Vcm, np.eye(N), atol=1e-13 * N)
    np.testing.assert_allclose(Ucm @ Vcm.T, A, atol=1e-13 * np.abs(A).max() * N)


@pytest.mark.parametrize("N, rank", [(5, 5), (6, 4), (8, 2)])
def test_min_norm_least_squares_is_numpys_lstsq(dense, N, rank):
    rng = np.random.default_rng(10 * N + rank)
    A = _rank_deficient(rng, N, N, rank)
    b = rng.standard_normal(N)
    x = b.copy()
    UV, work = np.zeros(2 * N * N), np.zeros(2 * N)
    dense.lib.t_lstsq(_ptr(dense, A), _ptr(dense, x), N, _ptr(dense, UV), _ptr(dense, work))
    ref = np.linalg.lstsq(A, b, rcond=None)[0]
    s = np.linalg.svd(A, compute_uv=False)
    cond = s[0] / s[rank - 1]
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-12 * cond * np.abs(ref).max())


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_products_propagate_nan_and_inf_as_numpy(dense, k, bad):
    # the products skip zero entries of A (for speed); 0 * NaN and 0 * inf must still be NaN, as
    # numpy's A @ B (issue 26): a NaN in a step's input may not vanish into a finite result
    rng = np.random.default_rng(3)
    r, c = 5, 4
    A = rng.standard_normal((r, c))
    A[:, 1] = 0.0                                   # B's row 1 meets only zeros of A
    B = rng.standard_normal((c, k))
    for Bx, label in ((B, "finite"), (np.where(np.arange(c)[:, None] == 1, bad, B), "bad")):
        out = np.zeros((r, k))
        dense.lib.t_mm(_ptr(dense, A), _ptr(dense, Bx), _ptr(dense, out), r, c, k)
        np.testing.assert_allclose(out, A @ Bx, rtol=1e-14, atol=0, err_msg=label)
        At = np.ascontiguousarray(A.T)              # c x r, so At^T Bx = A Bx
        out2 = np.zeros((r, k))
        dense.lib.t_mtm(_ptr(dense, At), _ptr(dense, Bx), _ptr(dense, out2), c, r, k)
        np.testing.assert_allclose(out2, At.T @ Bx, rtol=1e-14, atol=0, err_msg=label)
    assert np.isnan(out).all() and np.isnan(out2).all()
