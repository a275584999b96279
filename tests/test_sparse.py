"""Issue 14: the sparse kernel outputs (values on fixed CSR patterns) and the sparse null-space step
(Python reference, ``factorization="sparse"``) against the dense ones."""
import functools

import numpy as np
import pytest
import scipy.sparse as sps

import symgen
from symgen.derived import derive, sparsity
from symgen.kernels import LambdifyKernels
from symgen.loader import known_examples, load_model

#: kernels compared with sympy.lambdify (small) / with the compiled dense kernels only (N = 10: its
#: lambdify takes ~10 s; the dense C kernels are checked against lambdify in test_kernels)
CASES = [("double_four_bar", {}), ("bricard", {}), ("stiff_pendulum", {}), ("n_four_bar", {"N": 10})]


@functools.lru_cache(maxsize=None)
def _derived(name):
    return derive(load_model(name))


def _dense(values):
    return [v.toarray() if sps.issparse(v) else np.array(v, float) for v in values]


@pytest.mark.parametrize("name, opts", CASES, ids=[c[0] for c in CASES])
def test_sparse_kernels_equal_the_dense_ones_entry_by_entry(name, opts):
    model = load_model(name, **opts)
    k = symgen.build(model)
    ref = k
    if not opts:                    # (deriving N = 10 again costs seconds: compared with C only)
        d = _derived(name)
        ref = LambdifyKernels(model, derived=d)
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
        if name in ("andrews_squeezer", "n_four_bar", "sympy_four_bar"):
            continue        # (slow to derive; the others have the same kinds of joints)
        assert sparsity(_derived(name)).H_only, name


# -- the sparse step against the dense one ---------------------------------------------------------
#: (model, options, simulate options): short spans through motion that changes the partition's
#: quality; N = 10 at h = 1e-3 over 1 s passes the first horizontal passage
STEP_CASES = [
    ("n_four_bar", {"N": 10}, dict(dt=1e-3, t_end=1.0)),
    ("double_four_bar", {}, dict(t_end=2.0)),
    ("bricard", {}, dict(t_end=1.0)),                 # one redundant row
    ("slider_crank", {}, dict(t_end=0.3)),            # k = 0
    ("andrews_squeezer", {}, dict(t_end=0.002)),
]


def _pair(name, opts, sim):
    k = symgen.build(load_model(name, **opts))
    dense = symgen.simulate(k, stepper="python", **sim)
    sparse = symgen.simulate(k, stepper="python", factorization="sparse", **sim)
    return k, dense, sparse


@pytest.mark.parametrize("name, opts, sim", STEP_CASES, ids=[c[0] for c in STEP_CASES])
def test_sparse_step_gives_the_dense_steps_trajectory(name, opts, sim):
    k, dense, sparse = _pair(name, opts, sim)
    assert sparse.meta["factorization"] == "sparse" and dense.meta["factorization"] != "sparse"
    stats = sparse.meta["sparse_step"]
    assert stats["partitions"] >= 1 and len(stats["rows"]) == sparse.meta["rank_H"][0]
    assert sparse.status == dense.status == "completed"
    assert sparse.x.shape == dense.x.shape
    assert np.max(np.abs(sparse.x - dense.x)) <= 1e-8
    assert np.mean(sparse.newton_iters == dense.newton_iters) >= 0.99
    assert sparse.meta["rank_H"] == dense.meta["rank_H"]


def test_forced_rank_drop_repartitions_and_matches_pivoted_qr():
    # rank_tol 1e-2 drops rows of the double four-bar's H near t = 0.7 s (s_min/s_max ≈ 1e-2); the
    # dropped rows' residual (≈ 7e-6) is accepted with constraint_tol 1e-4
    sim = dict(t_end=1.5, rank_tol=1e-2, constraint_tol=1e-4, stepper="python")
    k = symgen.build(load_model("double_four_bar"))
    qr = symgen.simulate(k, factorization="qr", **sim)
    sparse = symgen.simulate(k, factorization="sparse", **sim)
    assert qr.status == sparse.status == "completed"
    assert qr.meta["rank_H"][0] < qr.meta["rank_H"][1] == k.m          # the rank did drop
    assert sparse.meta["rank_H"] == qr.meta["rank_H"]
    assert sparse.meta["sparse_step"]["partitions"] >= 2                 # and came back
    assert np.max(np.abs(sparse.x - qr.x)) <= 1e-9


def test_sparse_factorization_is_refused_where_it_does_not_apply():
    k = symgen.build(load_model("double_four_bar"))
    with pytest.raises(ValueError, match="no sparse step yet"):
        symgen.simulate(k, t_end=0.02, factorization="sparse", stepper="compiled")
    for bad in (dict(method="index3"), dict(chart="symmetric")):
        with pytest.raises(ValueError, match="factorization 'sparse' is the nullspace"):
            symgen.simulate(k, t_end=0.02, factorization="sparse", **bad)
    r = symgen.simulate(k, t_end=0.02, factorization="sparse")         # auto: the Python stepper
    assert r.meta["stepper"] == "python" and r.meta["factorization"] == "sparse"


def test_cli_factorization_sparse(capsys, tmp_path):
    from symgen.cli import main
    from symgen.result import load_result

    out = tmp_path / "r.npz"
    rc = main(["simulate", "double_four_bar", "--t-end", "0.05", "--factorization", "sparse",
               "--quiet", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    r = load_result(out)
    assert r.meta["factorization"] == "sparse" and r.meta["sparse_step"]["partitions"] == 1
    rc = main(["simulate", "double_four_bar", "--t-end", "0.05", "--factorization", "sparse",
               "--stepper", "compiled", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "no sparse step yet" in err and "Traceback" not in err
