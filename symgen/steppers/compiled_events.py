"""The compiled stepper's events (docs/events.md): the model's events located by the C loops
(``sg_set_events``, sg_events.c.inc: the arithmetic of :mod:`symgen.events`), the events each
chunk located taken into the run's :class:`~symgen.events.RunEvents` (``sg_events_take``); the
impacts applied by C (``sg_set_impacts``: :mod:`symgen.impacts`' arithmetic) recorded into its
:class:`~symgen.impacts.RunImpacts` (``sg_impacts_take``).
Methods of :class:`~symgen.steppers.compiled.CompiledStepper` (``self``: the stepper; its
``events``: the run's RunEvents or None)."""
from __future__ import annotations

import numpy as np

from ..runtime_constants import IMPACT_MAX_BURST

__all__ = ["events_on", "events_take"]


def events_on(self, t0: float, x0, xd0) -> None:
    """Hand the run's model events to the C loops from the start (t0, x0, ẋ0), with buffers
    for the events located between two :func:`events_take`."""
    ev = getattr(self, "events", None)
    if not ev:
        return
    imp = ev.impacts
    cap = max(64, 4 * ev.n_model * (IMPACT_MAX_BURST + 2 if imp else 1))
    self._ev_bufs = (np.zeros(cap, dtype=np.intc), np.zeros(cap), np.zeros((cap, self.n)),
                     np.zeros((cap, self.n)))
    self._imp_buf = np.zeros((cap, 3 + 4 * len(imp.names))) if imp else None
    EI, ET, EX, EXD = self._ev_bufs
    x0, xd0 = (np.ascontiguousarray(v, dtype=float) for v in (x0, xd0))
    self._set_inputs()
    st = self.lib.sg_set_events(self._s, self._ptr(self.kernels.p), 1, float(t0),
                                self._ptr(x0), self._ptr(xd0), cap, self._ptr(EI, "int[]"),
                                self._ptr(ET), self._ptr(EX), self._ptr(EXD))
    if not st and imp:
        st = self.lib.sg_set_impacts(self._s, self._ptr(self._imp_buf))
    if st:
        raise (MemoryError("the C runtime ran out of memory for the events") if st == 2
               else ValueError("the C runtime refused the model's events"))


def events_take(self, terminal: bool = False) -> None:
    """The events the last C call located, into the run's RunEvents (``terminal``: it ended with
    SG_EVENT, at the last one)."""
    ev = getattr(self, "events", None)
    if not ev:
        return
    count = int(self.lib.sg_events_take(self._s))
    EI, ET, EX, EXD = self._ev_bufs
    for k in range(count):
        ev.located(int(EI[k]), float(ET[k]), EX[k].copy(), EXD[k].copy())
    if terminal and count:
        ev.end = (int(EI[count - 1]), float(ET[count - 1]))
    if ev.impacts:
        _impacts_take(ev.impacts, self._imp_buf, int(self.lib.sg_impacts_take(self._s)))


def _impacts_take(imp, IR, count: int) -> None:
    """The impact records C appended (sg_set_impacts' layout) into ``imp`` (RunImpacts)."""
    ni = len(imp.names)
    for rec in IR[:count]:
        a = int(rec[2])
        act = [int(k) for k in rec[3:3 + a]]
        imp.t.append(float(rec[0]))
        imp.loss.append(float(rec[1]))
        imp.active.append([imp.names[k] for k in act])
        imp.impulse.append([float(v) for v in rec[3 + ni:3 + ni + a]])
        imp.v_minus.append([float(v) for v in rec[3 + 2 * ni:3 + 2 * ni + a]])
        imp.v_plus.append([float(v) for v in rec[3 + 3 * ni:3 + 3 * ni + a]])
