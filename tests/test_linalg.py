"""The two factorizations of H agree: rank, null-space projector, pseudo-inverse (vs numpy.pinv)."""
import numpy as np
import pytest

from symgen.steppers.linalg import Linearization


@pytest.mark.parametrize("m, n, dup", [(2, 3, 0), (8, 9, 0), (10, 9, 2), (24, 24, 1), (9, 9, 0),
                                       (40, 60, 0), (30, 31, 5)])
@pytest.mark.parametrize("factorization", ["svd", "qr"])
def test_factorization(m, n, dup, factorization):
    rng = np.random.default_rng(m * n + dup)
    H = rng.normal(size=(m, n))
    if dup:
        H[-dup:] = 1.5 * H[:dup]                  # redundant rows
    lin = Linearization(n, m, factorization=factorization)
    k = lin.factor(H)
    rank = np.linalg.matrix_rank(H)
    assert lin.rank == rank and k == n - rank
    N = lin.N
    np.testing.assert_allclose(N.T @ N, np.eye(k), atol=1e-13)          # orthonormal
    np.testing.assert_allclose(H @ N, 0.0, atol=1e-13)                  # null space of H
    np.testing.assert_allclose(lin.Hpinv, np.linalg.pinv(H), atol=1e-11)


def test_unknown_factorization_is_named():
    with pytest.raises(ValueError, match="unknown factorization 'lu'"):
        Linearization(3, 2, factorization="lu")
