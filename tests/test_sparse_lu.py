"""templates/runtime/symgen_sparse.c, the C sparse LU of issue 14 (Gilbert–Peierls with partial
pivoting, refactorization on a fixed pattern): solves against numpy on matrices that need row
pivoting and on the square blocks H[R, D] of the sparse step, refactorization, singularity."""
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse as sps

import symgen
from symgen import jit as _jit
from symgen.codegen import GeneratedSource
from symgen.codegen.render import runtime_sources, template_dir
from symgen.loader import load_model
from symgen.steppers.sparse import SparseLinearization

CC = shutil.which("cc") or shutil.which("gcc")
RUNTIME = template_dir() / "runtime"
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")


@pytest.fixture(scope="module")
def lu(tmp_path_factory):
    header = (RUNTIME / "symgen_sparse.h").read_text()
    cdef = header[header.index("/* SG_CDEF_BEGIN */") + 19:header.index("/* SG_CDEF_END */")]
    files = {name: runtime_sources()[name]
             for name in ("symgen_sparse.h", "symgen_sparse.c", "sg_constants.h")}
    src = GeneratedSource(name="sparse_lu", model_hash="", files=files, cdef=cdef)
    work = tmp_path_factory.mktemp("splu")
    path = _jit._compile(src, "_symgen_test_splu", ("-O1", "-std=c99"), work,
                         source=files["symgen_sparse.c"])
    return _jit._load("_symgen_test_splu", path)


class LU:
    """The C LU of one CSC pattern."""

    def __init__(self, mod, A: sps.csc_matrix):
        self.ffi, self.lib, self.n = mod.ffi, mod.lib, A.shape[0]
        self._ptr = np.ascontiguousarray(A.indptr, dtype=np.int32)
        self._ind = np.ascontiguousarray(A.indices, dtype=np.int32)
        f = self.lib.sg_splu_new(self.n, self.ffi.from_buffer("int[]", self._ptr),
                                 self.ffi.from_buffer("int[]", self._ind))
        assert f != self.ffi.NULL
        self.f = self.ffi.gc(f, self.lib.sg_splu_free)

    def _vals(self, A):
        self._v = np.ascontiguousarray(A.data, dtype=float)
        return self.ffi.from_buffer("double[]", self._v)

    def factor(self, A):
        return self.lib.sg_splu_factor(self.f, self._vals(A))

    def refactor(self, A, tol=0.1):
        return self.lib.sg_splu_refactor(self.f, self._vals(A), tol)

    def solve(self, b, trans=False):
        x = np.array(b, dtype=float)
        (self.lib.sg_splu_solve_t if trans else self.lib.sg_splu_solve)(
            self.f, self.ffi.from_buffer("double[]", x))
        return x


def _random(n, rng, density=0.15):
    A = sps.random(n, n, density=density, random_state=rng, format="csc")
    P = sps.csc_matrix((np.ones(n), (rng.permutation(n), np.arange(n))), shape=(n, n))
    # a permuted, non-dominant diagonal: the LU must pivot by rows to stay stable
    return (A + 0.5 * P @ sps.diags(rng.uniform(0.5, 1.5, n)) + 1e-3 * sps.identity(n)).tocsc()


def _check(lu, A, tol=1e-10):
    Ad = A.toarray()
    rng = np.random.default_rng(3)
    b = rng.normal(size=A.shape[0])
    for trans, M in ((False, Ad), (True, Ad.T)):
        x = lu.solve(b, trans)
        np.testing.assert_allclose(M @ x, b, rtol=0, atol=tol * np.linalg.norm(b) * np.linalg.cond(Ad))
        np.testing.assert_allclose(x, np.linalg.solve(M, b), rtol=0,
                                   atol=tol * np.linalg.cond(Ad) * np.abs(np.linalg.solve(M, b)).max())


def test_lu_solves_random_matrices_that_need_pivoting(lu):
    rng = np.random.default_rng(14)
    for n in (1, 2, 7, 40, 150):
        A = _random(n, rng)
        f = LU(lu, A)
        assert f.factor(A) == lu.lib.SG_LU_OK
        _check(f, A)
        assert lu.lib.sg_splu_nnz_U(f.f) >= n
        # new values on the same pattern: refactorization in the same pivot order
        A2 = A.copy()
        A2.data = A.data * rng.uniform(0.9, 1.1, A.data.size)
        status = f.refactor(A2, tol=1e-3)
        if status == lu.lib.SG_LU_REPIVOT:
            assert f.factor(A2) == lu.lib.SG_LU_OK
        _check(f, A2)


def test_refactorization_reports_a_pivot_that_became_small(lu):
    A = sps.csc_matrix(np.array([[1.0, 2.0], [0.5, 3.0]]))
    f = LU(lu, A)
    assert f.factor(A) == lu.lib.SG_LU_OK
    B = sps.csc_matrix(np.array([[1e-9, 2.0], [0.5, 3.0]]))     # the first pivot is now tiny
    B.data = np.array([1e-9, 0.5, 2.0, 3.0])
    assert f.refactor(B, tol=0.1) == lu.lib.SG_LU_REPIVOT
    assert f.factor(B) == lu.lib.SG_LU_OK                        # fresh pivots: row 1 first
    _check(f, B)


def test_singular_matrix_is_reported_with_its_column(lu):
    A = sps.csc_matrix(np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 1.0, 1.0]]))
    f = LU(lu, A)
    assert f.factor(A) == lu.lib.SG_LU_SINGULAR
    # rows 0 and 1 are dependent: columns 0 and 1 take rows 1 and 2 as pivots, column 2 finds none
    assert lu.lib.sg_splu_singular_column(f.f) == 2


def test_lu_of_the_sparse_steps_block_in_the_generated_column_order(lu):
    k = symgen.build(load_model("n_four_bar", N=10))
    lin = SparseLinearization(k)
    x = np.asarray(k.model.x0, float)
    _, H, *_ = k.constraints_csr(0.0, x, np.zeros(k.n), np.zeros(k.n))
    lin.factor(H)
    B = lin._blk.copy()                     # H[R, D], columns in the generated col_order
    f = LU(lu, B)
    assert f.factor(B) == lu.lib.SG_LU_OK
    _check(f, B)
    fill = (lu.lib.sg_splu_nnz_L(f.f) + lu.lib.sg_splu_nnz_U(f.f)) / B.nnz
    assert fill < 4.0, fill                 # a band one loop wide: little fill-in
    x2 = x + 0.01
    _, H2, *_ = k.constraints_csr(0.0, x2, np.zeros(k.n), np.zeros(k.n))
    B2 = B.copy()
    B2.data = H2.data[lin._blk_map]
    assert f.refactor(B2) == lu.lib.SG_LU_OK
    _check(f, B2)


def test_sparse_lu_compiles_strictly(tmp_path):
    for name in ("symgen_sparse.h", "symgen_sparse.c", "sg_constants.h"):
        (tmp_path / name).write_text(runtime_sources()[name])
    proc = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                           str(tmp_path / "symgen_sparse.c"), "-o", str(tmp_path / "s.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("name, opts", [("bricard", {}), ("n_four_bar", {"N": 10})])
def test_spnull_operations_equal_the_python_sparse_step(lu, name, opts):
    """sg_spnull (the C of SparseLinearization's operations on one partition) against the Python
    reference: the null-space projector NNᵀ, H̃⁺b (Bricard: one redundant row) and H̃⁺ᵀy."""
    k = symgen.build(load_model(name, **opts))
    lin = SparseLinearization(k)
    rng = np.random.default_rng(5)
    x = np.asarray(k.model.x0, float)
    ffi, lib = lu.ffi, lu.lib
    keep = []

    def ints(a):
        a = np.ascontiguousarray(a, dtype=np.int32)
        keep.append(a)
        return ffi.from_buffer("int[]", a) if a.size else ffi.new("int[1]")
    _, H, *_ = k.constraints_csr(0.0, x, np.zeros(k.n), np.zeros(k.n))
    lin.factor(H)
    assert lin.Z.size == (1 if name == "bricard" else 0)
    s = lib.sg_spnull_new(k.n, k.m, ints(k.H_pattern[0]), ints(k.H_pattern[1]),
                          ints(k.col_order), lin.R.size, ints(lin.R), lin.k, ints(lin.I))
    assert s != ffi.NULL
    s = ffi.gc(s, lib.sg_spnull_free)
    run = symgen.simulate(k, t_end=0.3, dt=0.01, stepper="python")
    for xs in run.x[::10]:                # the first factors, the next refactor in its pivot order
        _, H, *_ = k.constraints_csr(0.0, xs, np.zeros(k.n), np.zeros(k.n))
        lin.factor(H)
        assert lin.partitions == 1 and lin.column_changes == 0       # the same partition as C's
        vals = np.ascontiguousarray(H.data)
        assert lib.sg_spnull_factor(s, ffi.from_buffer("double[]", vals), 0.1) == lib.SG_LU_OK
        N = np.frombuffer(ffi.buffer(lib.sg_spnull_basis(s), 8 * k.n * lin.k)).reshape(k.n, lin.k)
        np.testing.assert_allclose(N.T @ N, np.eye(lin.k), atol=1e-13)
        np.testing.assert_allclose(N @ N.T, lin.N @ lin.N.T, atol=1e-11)
        b = rng.normal(size=(k.m, 3))
        out = np.zeros((k.n, 3))
        lib.sg_spnull_pinv(s, ffi.from_buffer("double[]", b), 3, ffi.from_buffer("double[]", out))
        ref = np.zeros((k.n, 3))
        lin._pinv(b, ref)
        np.testing.assert_allclose(out, ref, atol=1e-10 * np.abs(ref).max())
        y = rng.normal(size=k.n)
        lam = np.zeros(k.m)
        lib.sg_spnull_pinv_t(s, ffi.from_buffer("double[]", y), ffi.from_buffer("double[]", lam))
        lam_ref = np.zeros(k.m)
        lin.lam_from(y, lam_ref)
        np.testing.assert_allclose(lam, lam_ref, atol=1e-10 * np.abs(lam_ref).max())
