"""symgen.quadrature.WorkIntegral against closed-form integrals: the corrected trapezoid with
node slopes from the powers is fourth order on uneven grids, exact on quadratics, the same
whatever the chunks, fourth order across jumps of the power, and the trapezoid when asked."""
import numpy as np
import pytest

from symgen.quadrature import WorkIntegral


def P(t):
    """Two columns: a smooth oscillation and a cubic."""
    return np.stack([np.sin(3 * t) * np.exp(t / 2), t ** 3], 1)


def W_exact(t):
    e = np.exp(t / 2) * (0.5 * np.sin(3 * t) - 3 * np.cos(3 * t)) / 9.25 + 3 / 9.25
    return np.stack([e, t ** 4 / 4], 1)


def grid(n, T=2.0):
    """n steps over [0, T], their lengths varying smoothly by a factor ~2."""
    u = np.linspace(0.0, 1.0, n + 1)
    return T * (u + 0.15 * np.sin(np.pi * u) ** 2)


def test_fourth_order_on_an_uneven_grid_and_inside_the_steps():
    errs, inside = [], []
    rng = np.random.default_rng(0)
    for n in (40, 80, 160):
        t = grid(n)
        q = WorkIntegral(2)
        W = q.add(t, P(t))
        errs.append(np.abs(W - W_exact(t)).max(0))
        tau = rng.uniform(t[0], t[-1], 40)
        inside.append(np.abs(q.within(tau) - W_exact(tau)).max(0))
        np.testing.assert_allclose(q.within(t[1:]), W[1:], rtol=0, atol=1e-14)
    for e in (errs, inside):
        orders = np.log2(np.array(e[:-1]) / np.array(e[1:]))
        assert (orders > 3.8).all(), e                  # measured 3.96–4.08


def test_exact_on_quadratics_whatever_the_grid():
    t = np.sort(np.random.default_rng(1).uniform(0, 3, 30))
    p = (1 + t - 2 * t ** 2)[:, None]
    W = WorkIntegral(1).add(t, p)[:, 0]
    f = lambda s: s + s ** 2 / 2 - 2 * s ** 3 / 3            # noqa: E731
    np.testing.assert_allclose(W, f(t) - f(t[0]), rtol=0, atol=1e-13)


@pytest.mark.parametrize("cuts", [[1, 2, 3, 17, 18], [5, 6, 40], [2, 4, 6, 8]])
def test_the_chunks_do_not_change_the_final_work(cuts):
    """Rows given in chunks: every row whose work is final equals the one-call value; the last
    row of a chunk may be provisional (only it, and revised is set for it at the next call)."""
    t = grid(60)
    whole = WorkIntegral(2).add(t, P(t))
    q, rows, bounds = WorkIntegral(2), [], [0, *cuts, len(t)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        W = q.add(t[a:b], P(t[a:b]))
        np.testing.assert_allclose(W[:-1], whole[a:b - 1], rtol=0, atol=1e-14)
        rows.append((b - 1, W[-1]))
        if q.revised is not None:                       # the previous chunk's last row
            i = rows[-2][0]
            assert q.revised[1] == t[i]
            np.testing.assert_allclose(q.within([t[i]])[0], whole[i], rtol=0, atol=1e-14)
    np.testing.assert_allclose(q.W, whole[-1], rtol=0, atol=1e-14)


def _pieces(t, width=0.25):
    """The power sin 3t + k on the k-th piece [k·width, (k + 1)·width): its left and right
    values at every node, and the work in closed form."""
    k = np.floor(t / width + 1e-9)
    on = (np.abs(t / width - np.round(t / width)) < 1e-9) & (t > 0)
    left = np.sin(3 * t) + np.where(on, k - 1, k)
    right = np.sin(3 * t) + k
    exact = (1 - np.cos(3 * t)) / 3 + np.array(
        [sum(min(max(s - width * j, 0.0), width) * j for j in range(40)) for s in t])
    return on, left, right, exact


def test_jumps_start_new_pieces_at_fourth_order():
    """A controller's samples: the power jumps at every 0.25 s; each step from a jump starts
    from the power after it and no slope is taken across it."""
    errs = []
    for n in (40, 80, 160):
        t = np.linspace(0.0, 2.0, n + 1)
        on, left, right, exact = _pieces(t)
        q = WorkIntegral(1)
        for ti, r in zip(t[on], right[on]):
            q.jump(ti, [r])
        errs.append(np.abs(q.add(t, left[:, None])[:, 0] - exact).max())
    assert (np.log2(np.array(errs[:-1]) / np.array(errs[1:])) > 3.7).all(), errs


def test_jumps_told_after_their_node_as_a_run_does():
    """The run tells the jump after the node was added (the sample comes before the next
    step): the same final work as when every jump is known in advance."""
    t = np.linspace(0.0, 2.0, 81)
    on, left, right, exact = _pieces(t)
    q0 = WorkIntegral(1)
    for ti, r in zip(t[on], right[on]):
        q0.jump(ti, [r])
    whole = q0.add(t, left[:, None])[:, 0]
    q, out = WorkIntegral(1), []
    for i in range(len(t)):
        out.append(q.add(t[i:i + 1], left[i:i + 1, None])[0, 0])
        if q.revised is not None:
            j = int(np.flatnonzero(t == q.revised[1])[0])
            out[j] = q.within([t[j]])[0, 0]
        if on[i]:
            q.jump(t[i], [right[i]])
    np.testing.assert_allclose(out, whole, rtol=0, atol=1e-13)
    assert np.abs(whole - exact).max() < 1e-6


def test_the_trapezoid_when_not_corrected():
    t = grid(30)
    p = P(t)
    W = WorkIntegral(2, corrected=False).add(t, p)
    trap = np.vstack([np.zeros(2), np.cumsum(0.5 * np.diff(t)[:, None] * (p[1:] + p[:-1]), 0)])
    np.testing.assert_allclose(W, trap, rtol=0, atol=1e-14)
