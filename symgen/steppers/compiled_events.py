"""The compiled stepper's events (docs/events.md): the model's events located by the C loops
(``sg_set_events``, sg_events.c.inc: the arithmetic of :mod:`symgen.events`), the events each
chunk located taken into the run's :class:`~symgen.events.RunEvents` (``sg_events_take``).
Methods of :class:`~symgen.steppers.compiled.CompiledStepper` (``self``: the stepper; its
``events``: the run's RunEvents or None)."""
from __future__ import annotations

import numpy as np

__all__ = ["events_on", "events_take"]


def events_on(self, t0: float, x0, xd0) -> None:
    """Hand the run's model events to the C loops from the start (t0, x0, ẋ0), with buffers
    for the events located between two :func:`events_take`."""
    ev = getattr(self, "events", None)
    if not ev:
        return
    cap = max(64, 4 * ev.n_model)
    self._ev_bufs = (np.zeros(cap, dtype=np.intc), np.zeros(cap), np.zeros((cap, self.n)),
                     np.zeros((cap, self.n)))
    EI, ET, EX, EXD = self._ev_bufs
    x0, xd0 = (np.ascontiguousarray(v, dtype=float) for v in (x0, xd0))
    self._set_inputs()
    st = self.lib.sg_set_events(self._s, self._ptr(self.kernels.p), 1, float(t0),
                                self._ptr(x0), self._ptr(xd0), cap, self._ptr(EI, "int[]"),
                                self._ptr(ET), self._ptr(EX), self._ptr(EXD))
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
