"""Persistent contact (issue 36 item 4; docs/events.md "Persistent contact"): an impact whose
rebound would not leave the plane for a meaningful time closes the contact instead, and the run
goes on with the gap as one more (bilateral) constraint row while its force is compressive.

**Closing.**  At an impact (:class:`~symgen.impacts.RunImpacts`) an active row k closes when its
rebound speed e|ġ⁻| is at most the event's ``rest_speed`` (0 by default: a plastic e = 0 impact
always closes), or the free flight after the rebound, 2e|ġ⁻|/|g̈| (g̈ = G ẍ⁻ + ẋ⁻ᵀ(∂G/∂x)ẋ⁻,
the gap's acceleration without the contact; the curvature term by central differences of G along
ẋ⁻), is shorter than the run's fixed step h (under dt="auto" the step is the error control's
choice, not a resolution: that rule is off), or CONTACT_BURST impacts came in a row without an
accepted step free of impacts.  The closing impact is plastic (e = 0 in the same KKT
solve), and the row stays open when the contact's force at the new state would be tensile.

**Closed.**  The run's model is the Model with the closed gaps appended to its rows
(``Model.replace(q=[*q, g_k…])``; the kernels of each set of closed contacts made once per run:
``LambdifyKernels`` for lambdified kernels, :func:`symgen.jit.build` for compiled ones, sharing
the run's p and u) and a stepper made for them by the run; the step holds g = ġ = g̈ = 0.  The
contact's multiplier λ_c (the row after the model's own) is its normal force: M ẍ = f + Hᵀλ, and
the gap grows along G = ∂g/∂x, so λ_c > 0 pushes the bodies apart (compressive).  The recorded
λ columns are the model's own rows'; the contact's forces are in ``meta["contacts"]``.

**Opening.**  After each accepted step with a closed contact, λ_c at the step's end; when it is
negative, its zero inside the step is located by the Illinois method on λ_c of the step's
interpolant projected onto the closed model's rows (:func:`~symgen.eval_rows.dense_state`), the
step is cut there and the run goes on from that state without the row (not an impact: the
velocity does not jump)."""
from __future__ import annotations

import math

import numpy as np

from .assembly import consistent_state
from .eval_rows import dense_state
from .events import EventHit, illinois
from .runtime_constants import EVENT_XTOL

__all__ = ["RunContacts", "CONTACT_BURST"]

#: impacts in a row (without an accepted step free of impacts) at which an impact closes
CONTACT_BURST = 10


class RunContacts:
    """A run's persistent contacts: the impacts that may close, the closed set and its model's
    kernels and stepper (``kernels``, ``stepper``), the transitions (``as_meta``)."""

    def __init__(self, kernels, events, make_stepper, rank_tol: float, h_fixed=None):
        imp = events.impacts
        self.base, self.events, self.imp, self.make = kernels, events, imp, make_stepper
        self.rank_tol, self.m0 = rank_tol, kernels.m
        self.h_fixed = h_fixed          # the run's fixed step (None: dt="auto")
        model = kernels.model
        self.rest = [float(model.events[k].rest_speed or 0.0) for k in imp.names]
        self.closed: tuple = ()
        self._variants: dict = {}
        self.kernels, self.stepper = kernels, None
        self.log: list = []
        imp.closing = self.closing

    # -- the rule ----------------------------------------------------------------------------
    def closing(self, act, vn, G, hit, h: float) -> list:
        """The active rows (impact indices ``act``, normal velocities ``vn``, gradients ``G``)
        that close at the impact ``hit`` (module docstring; ``h``: the step it cut, unused: the
        flight is compared with the run's fixed step, a cut step's rest is shorter)."""
        out = []
        curv = self._curvature(hit) if act else None
        for k in act:
            v_out = self.imp.e[k] * -vn[k]
            gdd = float(G[k] @ hit.xdd + curv[k])
            flight = 2.0 * v_out / -gdd if gdd < 0.0 else math.inf
            if (v_out <= self.rest[k] or (self.h_fixed is not None and flight < self.h_fixed)
                    or self.imp.burst >= CONTACT_BURST):
                out.append(k)
        return out

    def _curvature(self, hit) -> np.ndarray:
        """ẋᵀ(∂G/∂x)ẋ of every impact row at the hit (central differences of G along ẋ)."""
        x, v = hit.x, hit.xd
        speed = float(np.max(np.abs(v))) if v.size else 0.0
        if speed == 0.0:
            return np.zeros(len(self.imp.names))
        d = 1e-6 * max(1.0, float(np.max(np.abs(x)))) / speed
        kern = self.kernels
        Gp = np.array(kern.impacts(hit.t, x + d * v), dtype=float)
        Gm = np.array(kern.impacts(hit.t, x - d * v), dtype=float)
        return (Gp - Gm) @ v / (2.0 * d)

    # -- the closed model --------------------------------------------------------------------
    def _variant(self, closed: tuple):
        """(kernels, stepper) of the model with the closed gaps as rows, made once."""
        if not closed:
            return self.base, None
        if closed not in self._variants:
            model = self.base.model
            gaps = [model.events[self.imp.names[k]].expr for k in closed]
            variant = model.replace(q=[*model.q, *gaps])
            kern = _kernels_like(self.base, variant)
            self._variants[closed] = (kern, self.make(kern))
        return self._variants[closed]

    def switch(self, closed, base_stepper, t: float, x, xd, rows, project: bool):
        """Make ``closed`` the closed set at (t, x, ẋ): its kernels (also the run's ``rows``',
        events' and impacts') and stepper, the state projected on its rows when ``project``;
        returns (stepper, x, ẋ, ẍ, λ).  Rows whose force would be tensile there stay open."""
        closed = tuple(sorted(closed))
        while True:
            kern, stepper = self._variant(closed)
            cs = consistent_state(kern, t, x, xd, rank_tol=self.rank_tol, project=project)
            lam_c = cs.lam[self.m0:]
            pull = [k for k, v in zip(closed, lam_c) if v <= 0.0 and k not in self.closed]
            if not pull:
                break
            closed = tuple(k for k in closed if k not in pull)
        for k in closed:
            if k not in self.closed:
                self._record(t, k, "closed", cs.lam[self.m0 + closed.index(k)])
        for k in self.closed:
            if k not in closed:
                self._record(t, k, "opened", 0.0)
        self.closed = closed
        self.kernels = rows.kernels = self.events.kernels = self.imp.kernels = kern
        rec = rows.rec
        self.stepper = stepper if stepper is not None else base_stepper
        self.events.held = {self.imp.index[k] for k in closed}
        self.imp.held = set(closed)
        if stepper is not None:
            stepper.start(t, cs.x, cs.xd, cs.xdd, cs.lam)
        self.stepper.restart(t, cs.x, cs.xd, cs.xdd, cs.lam)
        if rec.n_work:
            y = kern.outputs(t, cs.x, cs.xd) if kern.n_out else None
            rec.jump(t, y, cs.x, cs.xd, cs.lam[:self.m0])
        return self.stepper, cs.x, cs.xd, cs.xdd, cs.lam

    def observe(self, t: float, lam) -> None:
        """An accepted step's end with the closed set's λ: the contacts' forces noted."""
        for j, k in enumerate(self.closed):
            rec = self._open_record(k)
            v = float(lam[self.m0 + j])
            rec["force_min"] = min(rec["force_min"], v)
            rec["force_max"] = max(rec["force_max"], v)
            rec["force_last"], rec["t_last"] = v, float(t)

    def opening(self, t: float, h: float, start, end, lam_end, lam_start) -> EventHit | None:
        """The first zero of a closed contact's force in the accepted step from t (``start`` =
        x, ẋ, ẍ; λ ``lam_start``) to t + h (``end``; λ ``lam_end``) where it turns tensile: the
        state there (an EventHit of the first opening row, index = its impact index)."""
        found = []
        for j, k in enumerate(self.closed):
            i = self.m0 + j
            if lam_end[i] >= 0.0:
                continue
            l0 = float(lam_start[i])
            if not l0 > 0.0:
                found.append((t, k))
                continue

            def phi(tau, i=i):
                return float(dense_state(self.kernels, tau, t, h, start, end,
                                         self.rank_tol)[3][i])
            found.append((illinois(phi, t, l0, t + h, float(lam_end[i]),
                                   EVENT_XTOL * max(abs(t + h), h)), k))
        if not found:
            return None
        tau, k = min(found)
        if tau <= t:
            return EventHit(k, t, start[0].copy(), start[1].copy(), start[2].copy(),
                            np.array(lam_start, dtype=float), np.zeros(3))
        return EventHit(k, tau, *dense_state(self.kernels, tau, t, h, start, end,
                                             self.rank_tol))

    # -- the record --------------------------------------------------------------------------
    def _record(self, t: float, k: int, kind: str, force: float) -> None:
        self.log.append({"t": float(t), "name": self.imp.names[k], "kind": kind,
                         "force": float(force)})
        if kind == "closed":
            self.log[-1].update(force_min=float(force), force_max=float(force),
                                force_last=float(force), t_last=float(t))

    def _open_record(self, k: int) -> dict:
        name = self.imp.names[k]
        return next(r for r in reversed(self.log) if r["name"] == name and r["kind"] == "closed")

    def as_meta(self) -> list:
        """The transitions as plain data (``meta["contacts"]``, saved with the Result's files):
        time, contact, "closed"/"opened", the force there; a closing's force range after it."""
        return [dict(r) for r in self.log]


def _kernels_like(base, model):
    """Kernels of ``model`` of the same kind as ``base`` (lambdified or compiled), sharing its
    parameters and inputs (the run's InputValues write ``base.u``)."""
    from .kernels import LambdifyKernels

    if isinstance(base, LambdifyKernels):
        kern = LambdifyKernels(model)
    else:
        from .jit import build

        kern = build(model).for_run()
    kern.p[:] = base.p
    kern.share_inputs(base.u)
    return kern
