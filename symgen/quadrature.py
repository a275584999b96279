"""The work of the power outputs and driven joints: ∫ P dt over the steps' own times, fourth order.

Each step from t_k to t_(k+1) = t_k + h adds the corrected trapezoid (the Hermite rule)

    h/2 (P_k + P_(k+1)) + h²/12 (Ṗ_k − Ṗ_(k+1)),

the same two-point rule the corrected step applies to x (docs/fourth-order-step.md), with Ṗ at
each node estimated from the powers alone: the derivative of the quadratic through three
neighbouring nodes (backward differences where the node has two predecessors, the quadratic
through the node's neighbours at the first nodes after a start).  Every node has one estimate,
used by both steps around it, so the estimates' O(h²) errors cancel step by step and the sum is
fourth order (docs/energy-balance.md, "The work's quadrature", for the measured orders); the
power outputs need no derivative kernel and the driven joints' power no λ̇.

A jump of the inputs at a node (a controller's sample: :meth:`WorkIntegral.jump`) starts a new
piece there: the steps before it end with the old power, the steps after it start from the power
just after it, and no derivative is taken across it.  A node whose estimate needs the next node
(the second node of a piece) has a provisional work until that node comes (``revised`` then names
the times whose rows the caller rewrites with :meth:`WorkIntegral.within`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["WorkIntegral"]

#: the nodes kept between calls: the last node whose work is final and the two before it
#: (backward differences), and at most one node after it (provisional)
_KEEP = 4


def _slope(ta, tb, tc, fa, fb, fc, at):
    """The derivative at ``at`` (0, 1, 2: ta, tb, tc) of the quadratic through three nodes
    (arrays of rows; f: rows × columns)."""
    h1, h2 = (tb - ta)[:, None], (tc - tb)[:, None]
    s = h1 + h2
    if at == 0:
        return -(2 * h1 + h2) / (h1 * s) * fa + s / (h1 * h2) * fb - h1 / (h2 * s) * fc
    if at == 1:
        return -h2 / (h1 * s) * fa + (h2 - h1) / (h1 * h2) * fb + h1 / (h2 * s) * fc
    return h2 / (h1 * s) * fa - s / (h1 * h2) * fb + (h1 + 2 * h2) / (h2 * s) * fc


class WorkIntegral:
    """∫ P dt of ``c`` columns over nodes given in time order: the module docstring's rule, or
    with ``corrected=False`` the trapezoid, which is the paper's step's own rule (its x update is
    the trapezoid on ẋ, so a constant force's work is F·Δx to round-off, as the step's)."""

    def __init__(self, c: int, corrected: bool = True):
        self.c, self.corrected = int(c), bool(corrected)
        self.W = np.zeros(self.c)           # the work at the last node (provisional or final)
        self._t = np.zeros(0)               # the kept nodes: times, powers (the left limits),
        self._P = np.zeros((0, self.c))     # whether a piece starts there, the work at each
        self._S = np.zeros(0, dtype=bool)
        self._W = np.zeros((0, self.c))
        self._final = 0                     # how many kept nodes have a final work
        self._jumps: dict = {}              # t → the power just after it
        self.revised = None                 # (see add)
        self._steps = (np.zeros(0),) * 2 + (np.zeros((0, self.c)),) * 5
        self._D = None                      # the kept nodes' slopes (corrected)

    def jump(self, t: float, P) -> None:
        """The power just after the node at ``t`` (the next node or a kept one) is ``P``."""
        self._jumps[float(t)] = np.asarray(P, dtype=float).reshape(self.c).copy()

    def last(self):
        """(t, the power the next step starts from) at the last node, or None before any."""
        if not self._t.size:
            return None
        t = float(self._t[-1])
        return t, self._jumps.get(t, self._P[-1])

    def within(self, tau) -> np.ndarray:
        """The work at times ``tau`` (k) inside the steps of the last :meth:`add` (rows between
        the nodes: ``t_eval``): the same rule's cubic Hermite of P over the step, integrated to
        τ (it meets the nodes' work at both ends)."""
        tau = np.asarray(tau, dtype=float).reshape(-1)
        t0, h, W0, P0, P1, D0, D1 = self._steps
        j = np.clip(np.searchsorted(t0, tau, side="left") - 1, 0, len(t0) - 1)
        th = np.clip((tau - t0[j]) / h[j], 0.0, 1.0)[:, None]
        hj = h[j][:, None]
        th2, th3, th4 = th * th, th ** 3, th ** 4
        return (W0[j] + hj * (P0[j] * (th4 / 2 - th3 + th) + P1[j] * (th3 - th4 / 2))
                + hj * hj * (D0[j] * (th4 / 4 - 2 * th3 / 3 + th2 / 2) + D1[j] * (th4 / 4 - th3 / 3)))

    def add(self, t, P) -> np.ndarray:
        """The nodes at times ``t`` (k, after the last) with powers ``P`` (k × c, the left limits
        at jumps); returns the work at each (k × c)."""
        t = np.asarray(t, dtype=float).reshape(-1)
        P = np.asarray(P, dtype=float).reshape(len(t), self.c)
        if self._t.size and len(t) and t[0] <= self._t[-1]:     # (the last node again)
            t, P = t[1:], P[1:]
            return np.vstack((self.W[None], self.add(t, P))) if len(t) else self.W[None].copy()
        k = len(t)
        if not k:
            return np.zeros((0, self.c))
        if k == 1 and self._simple():
            return self._add_one(float(t[0]), P[0])
        first = not self._t.size
        T = np.concatenate((self._t, t))
        PL = np.vstack((self._P, P))
        S = np.concatenate((self._S, np.zeros(k, dtype=bool)))
        if first:
            S[0] = True                     # the run's start starts the first piece
        W = np.vstack((self._W, np.zeros((k, self.c))))
        jumps = self._jumps
        PR = PL.copy()                      # the right limits (only kept and new nodes jump)
        if jumps:
            for i in np.flatnonzero(np.isin(T, list(jumps))):
                S[i], PR[i] = True, jumps[float(T[i])]
        N = len(T)
        a = max(self._final - 1, 0)         # the first node whose step is (re)computed
        # a provisional last node gets its final work now: the rows (t_a, t_last] to revise
        self.revised = ((float(T[a]), float(self._t[-1])) if 0 < self._final < len(self._t)
                        else None)
        h = np.diff(T[a:])[:, None]
        if self.corrected:
            DL, DR, last_ok = _slopes(T, PL, PR, S)
            D0, D1 = DR[a:-1], DL[a + 1:]
        else:                           # the trapezoid: P linear over each step
            D0 = D1 = (PL[a + 1:] - PR[a:-1]) / h
            last_ok = True
        inc = h / 2 * (PR[a:-1] + PL[a + 1:]) + h * h / 12 * (D0 - D1)
        W[a + 1:] = W[a] + np.cumsum(inc, axis=0)
        # the steps just computed, for rows inside them (within)
        self._steps = (T[a:-1], h[:, 0], W[a:-1], PR[a:-1], PL[a + 1:], D0, D1)
        final = N if last_ok else N - 1     # nodes with a final work
        keep = max(0, min(final - 3, N - _KEEP))
        self._t, self._P, self._S, self._W = T[keep:], PL[keep:], S[keep:], W[keep:]
        self._D = DL[keep:] if self.corrected else None
        self._final = final - keep
        for key in [key for key in jumps if key < float(self._t[0])]:
            del jumps[key]
        self.W = W[-1].copy()
        return W[-k:].copy()


    def _simple(self) -> bool:
        """Whether the next node's step is the plain case (the step loop's, node by node): every
        kept node final, no piece starting at the last two (so the new node's slope is the
        backward one and the last node's is the one it kept)."""
        n = len(self._t)
        return (n >= 3 and self._final == n and not self._S[-2:].any()
                and float(self._t[-1]) not in self._jumps)

    def _add_one(self, t: float, P) -> np.ndarray:
        """:meth:`add` of one node in the plain case (:meth:`_simple`): the same arithmetic as the
        general path, without rebuilding the kept nodes' slopes."""
        T0, P0, W0 = self._t[-1], self._P[-1], self._W[-1]
        h = t - T0
        if self.corrected:
            D1 = _slope(self._t[-2:-1], self._t[-1:], np.array([t]), self._P[-2:-1],
                        self._P[-1:], P[None], 2)
            D0 = self._D[-1:]
        else:
            D0 = D1 = ((P - P0) / h)[None]
        W = W0 + (h / 2 * (P0 + P) + h * h / 12 * (D0[0] - D1[0]))
        self.revised = None
        self._steps = (np.array([T0]), np.array([h]), W0[None], P0[None], P[None], D0, D1)
        keep = slice(-(_KEEP - 1), None)
        self._t = np.append(self._t[keep], t)
        self._P = np.vstack((self._P[keep], P))
        self._S = np.append(self._S[keep], False)
        self._W = np.vstack((self._W[keep], W))
        if self.corrected:
            self._D = np.vstack((self._D[keep], D1))
        self._final = len(self._t)
        self.W = W.copy()
        return W[None].copy()


def _slopes(T, PL, PR, S):
    """(Ṗ at each node from the left, from the right, whether the last node's work is final):
    the quadratic's derivative through three nodes of one piece — backward at a node with two
    predecessors in its piece, through its neighbours at the second node of a piece, forward at
    a piece's start — and the secant where a piece has two nodes (or the next node has not come:
    then provisional).  Vectorized over the nodes (a chunk of the C runtime's rows)."""
    N = len(T)
    idx = np.arange(N)
    start = np.maximum.accumulate(np.where(S, idx, -N))             # the last start ≤ i
    prev = np.concatenate(([-N], start[:-1]))                       # … ≤ i − 1
    pos = np.where(prev >= 0, idx - prev, idx + 3)                  # nodes since it (left)
    im2, im1 = np.maximum(idx - 2, 0), np.maximum(idx - 1, 0)
    ip1, ip2 = np.minimum(idx + 1, N - 1), np.minimum(idx + 2, N - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        back = _slope(T[im2], T[im1], T, PR[im2], PR[im1], PL, 2)
        mid = _slope(T[im1], T, T[ip1], PR[im1], PL, PL[ip1], 1)
        fwd = _slope(T, T[ip1], T[ip2], PR, PL[ip1], PL[ip2], 0)
        sec_l = (PL - PR[im1]) / (T - T[im1])[:, None]
        sec_r = (PL[ip1] - PR) / (T[ip1] - T)[:, None]
    has1, has2 = idx + 1 < N, idx + 2 < N
    Sn = np.append(S[1:], False)                                    # a start at i + 1
    c = lambda m: m[:, None]                                        # noqa: E731
    DL = np.where(c((pos >= 2) & (idx >= 2)), back,
                  np.where(c((pos == 1) & ~S & has1), mid, sec_l))
    DL[0] = 0.0
    DR = np.where(c(~S), DL, np.where(c(has2 & ~Sn), fwd, sec_r))
    DR[-1] = 0.0
    i = N - 1                       # the last node: its slope may need the next node
    last_ok = not (i >= 1 and pos[i] == 1 and not S[i]) and not (
        i >= 1 and S[i - 1] and not S[i])
    return _finite(DL), _finite(DR), last_ok


def _finite(D):
    """np.nan_to_num(D), without its cost when every entry is finite (the common case)."""
    return D if np.isfinite(D).all() else np.nan_to_num(D)
