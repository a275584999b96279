"""Impacts by Newton's restitution law (issue 36.3; docs/events.md "Impacts"): the events with a
coefficient of restitution e (``Model.events``' ``restitution``: a gap g(x, p) ≥ 0, the builders'
``limit`` and ``contact``) change the velocity where they are located.

At an impact at τ (the state x, ẋ⁻ there on q = q̇ = 0: events.EventHit) the active rows are the
impacts approaching there (ġ = G ẋ⁻ < 0, G = ∂g/∂x the kernel ``impacts``) whose gap is closed:
the located one and any other with g ≤ |ġ|·IMPACT_TIME_TOL·max(|τ|, h).  The post-impact velocity
is the smallest change in the mass metric that keeps the bilateral constraints and restitutes the
active rows' normal velocity, one KKT solve for them all (simultaneous impacts):

    [M  Hᵀ  G_aᵀ] [Δ  ]   [0                ]
    [H  0   0   ] [μ  ] = [0                ],   ẋ⁺ = ẋ⁻ + Δ,  impulses ι = −ν (M Δ = … + G_aᵀ ι)
    [G_a 0  0   ] [ν  ]   [−(1 + e) G_a ẋ⁻  ]

by least squares (numpy lstsq, rcond = the run's rank_tol): with dependent active rows (two
contacts along one direction, a limit that duplicates a constraint) the minimum-norm solution,
unique in Δ where the rows agree.  The kinetic energy lost, ½ẋ⁻ᵀMẋ⁻ − ½ẋ⁺ᵀMẋ⁺, is recorded per
impact (``meta["impacts"]``, summed by symgen.summary.energy_balance).  A run with more than
IMPACT_MAX_BURST impacts in a row without an accepted step free of impacts (a contact that the
rules of symgen.contact did not close) ends as failed, its reason saying so.  A closing impact
(``closing``: contact.RunContacts.closing) is plastic: its rows get e = 0."""
from __future__ import annotations

import numpy as np

from .runtime_constants import IMPACT_MAX_BURST, IMPACT_TIME_TOL

__all__ = ["RunImpacts", "IMPACT_MAX_BURST", "IMPACT_TIME_TOL"]


class RunImpacts:
    """A run's impacts: the events that are impacts (index in the run's events, e), the burst
    counter, and the record of each impact (time, active events, impulses, energy lost)."""

    def __init__(self, kernels, names):
        model = kernels.model
        self.kernels = kernels
        self.names = tuple(kernels.impact_names)
        self.index = [list(names).index(k) for k in self.names]
        self.e = np.array([model.events[k].restitution for k in self.names], dtype=float)
        self.of_event = {i: k for k, i in enumerate(self.index)}
        self.burst = 0
        self.t, self.active, self.impulse, self.loss = [], [], [], []
        self.v_minus, self.v_plus = [], []
        self.closing = None             # contact.RunContacts.closing: the rows that close
        self.held: set = set()          # rows of closed contacts (symgen.contact)
        self.closed_now: list = []      # the rows the last impact closed

    def __bool__(self) -> bool:
        return bool(self.names)

    def apply(self, hit, h: float, rank_tol: float):
        """ẋ⁺ at the located impact ``hit`` (events.EventHit; ``h`` the step it cut), recorded;
        returns (ẋ⁺, the run's event indices of the active rows)."""
        kern, t, x, xm = self.kernels, hit.t, hit.x, hit.xd
        G = np.array(kern.impacts(t, x), dtype=float)
        gap = np.array(kern.events(t, x, xm), dtype=float)[self.index]
        vn = G @ xm
        tol = IMPACT_TIME_TOL * max(abs(t), h)
        first = self.of_event[hit.index]
        act = [k for k in range(len(self.names)) if k not in self.held
               and vn[k] < 0.0 and (k == first or gap[k] <= -vn[k] * tol)]
        self.burst += 1
        self.closed_now = self.closing(act, vn, G, hit, h) if self.closing and act else []
        if not act:                         # (grazing: nothing approaches at the located zero)
            return xm.copy(), []
        M, *_ = kern.dynamics(t, x, xm, hit.xdd, hit.lam)
        M = np.array(M.toarray() if hasattr(M, "toarray") else M, dtype=float)
        H = (np.array(kern.constraints(t, x, xm, hit.xdd)[1], dtype=float) if kern.m
             else np.zeros((0, kern.n)))
        Ga = G[act]
        n, m, a = kern.n, H.shape[0], len(act)
        K = np.zeros((n + m + a, n + m + a))
        K[:n, :n], K[:n, n:n + m], K[:n, n + m:] = M, H.T, Ga.T
        K[n:n + m, :n], K[n + m:, :n] = H, Ga
        rhs = np.zeros(n + m + a)
        e = np.array([0.0 if k in self.closed_now else self.e[k] for k in act])
        rhs[n + m:] = -(1.0 + e) * vn[act]
        sol = np.linalg.lstsq(K, rhs, rcond=rank_tol)[0]
        xp = xm + sol[:n]
        self.t.append(float(t))
        self.active.append([self.names[k] for k in act])
        self.impulse.append([float(-v) for v in sol[n + m:]])
        self.loss.append(float(0.5 * (xm @ M @ xm - xp @ M @ xp)))
        self.v_minus.append([float(vn[k]) for k in act])
        self.v_plus.append([float(v) for v in Ga @ xp])
        return xp, [self.index[k] for k in act]

    def free_step(self) -> None:
        """An accepted step without an impact: the burst starts again."""
        self.burst = 0

    def cascade(self) -> str:
        """The reason of a run ended by a cascade of impacts ('' while there is none)."""
        if self.burst <= IMPACT_MAX_BURST:
            return ""
        v = abs(self.v_minus[-1][0]) if self.v_minus and self.v_minus[-1] else 0.0
        who = ", ".join(self.active[-1]) if self.active and self.active[-1] else self.names[0]
        why = ("the contact did not close (its force would pull: symgen.contact)"
               if self.closing else "persistent contact needs the Python stepper (stepper='auto' "
               "or 'python')")
        return (f"impact cascade at t = {self.t[-1]:.12g} ({who}): {self.burst} impacts in a row, "
                f"approach speed {v:.3g}; {why}")

    def as_meta(self) -> dict:
        """The impacts as plain data (``meta["impacts"]``, saved with the Result's files)."""
        return {"names": list(self.names), "restitution": [float(v) for v in self.e],
                "t": list(self.t), "active": self.active, "impulse": self.impulse,
                "loss": list(self.loss), "v_minus": self.v_minus, "v_plus": self.v_plus}
