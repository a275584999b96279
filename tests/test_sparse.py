"""Issue 14: the sparse kernel outputs (values on fixed CSR patterns) and the sparse null-space step
(Python reference, ``factorization="sparse"``) against the dense ones."""
import numpy as np
import pytest
import scipy.sparse as sps

import symgen
from symgen.derived import derive, sparsity
from symgen.kernels import LambdifyKernels
from symgen.loader import known_examples, load_model

CASES = [("double_four_bar", {}), ("bricard", {}), ("slider_crank", {}),
         ("andrews_squeezer", {}), ("n_four_bar", {"N": 10}), ("stiff_pendulum", {})]


def _dense(values):
    return [v.toarray() if sps.issparse(v) else np.array(v, float) for v in values]


@pytest.mark.parametrize("name, opts", CASES, ids=[c[0] for c in CASES])
def test_sparse_kernels_equal_the_dense_ones_entry_by_entry(name, opts):
    model = load_model(name, **opts)
    d = derive(model)
    ref = LambdifyKernels(model, derived=d)
    k = symgen.build(model)
    sp_ = sparsity(d)
    # the compiled module's tables are the generator's patterns and order
    assert [list(a) for a in (*k.H_pattern, *k.M_pattern, k.col_order)] == \
        [list(a) for a in (sp_.H_indptr, sp_.H_indices, sp_.M_indptr, sp_.M_indices,
                           sp_.col_order)]
    assert sorted(k.col_order) == list(range(model.n))
    assert k.nnz_H < max(model.m * model.n, 1) or model.n <= 3
    rng = np.random.default_rng(14)
    n, m = model.n, model.m
    for _ in range(3):
        t = rng.uniform(-1, 1)
        x = np.asarray(model.x0, float) + rng.normal(scale=0.3, size=n)
        xd, xdd, lam = rng.normal(size=n), rng.normal(size=n), rng.normal(size=m)
        for dense_of, csr_of, which in ((lambda kk: kk.constraints(t, x, xd, xdd),
                                         lambda kk: kk.constraints_csr(t, x, xd, xdd), (1, 3, 5)),
                                        (lambda kk: kk.dynamics(t, x, xd, xdd, lam),
                                         lambda kk: kk.dynamics_csr(t, x, xd, xdd, lam), (0, 2, 3))):
            expected = _dense(dense_of(ref))                     # sympy.lambdify, dense
            for kern in (k, ref):
                got = csr_of(kern)
                assert all(sps.issparse(got[i]) and got[i].format == "csr" for i in which)
                for a, b in zip(_dense(got), expected):
                    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale)
            # C's values on the pattern are bit for bit what its dense kernel scatters
            dense_c = _dense(dense_of(k))
            for a, b in zip(_dense(csr_of(k)), dense_c):
                np.testing.assert_array_equal(a, b)


def test_H_dot_and_H_ddot_lie_in_the_pattern_of_H():
    for name in known_examples():
        opts = {"N": 3} if name == "n_four_bar" else {}
        assert sparsity(derive(load_model(name, **opts))).H_only, name
