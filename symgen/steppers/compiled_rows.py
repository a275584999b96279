"""The compiled stepper's ``t_eval`` rows: the C runtime (sg_interp.c.inc, ``sg_dense_output``)
writes each row — the step's quintic interpolant projected on the constraints, its residuals,
energy and outputs — into the Recorder's buffers in place as its steps pass the row's time; after
each chunk of steps :meth:`DenseOutput.fold` completes the rows with what their steps' scratch
rows hold (Newton iterations, ω_max, h_max, flags, the variable step's h and estimate) and the
work of the power outputs, all at once: no Python work per row (docs/variable-step.md, "Dense
output")."""
from __future__ import annotations

import numpy as np

__all__ = ["DenseOutput"]


class DenseOutput:
    """The t_eval rows te[k], … of one run of ``stepper`` (a CompiledStepper), into the Recorder
    ``rec`` (row i is te[i]'s; rec holds len(te) rows at least), from the next sg_run_chunk or
    sg_run_auto on, until :meth:`stop`; ``t_end``: where the run's last step ends (the rows
    left all go to it)."""

    def __init__(self, stepper, rec, te, k: int, t_end: float):
        if rec.T.shape[0] < len(te):
            raise ValueError(f"the recorder holds {rec.T.shape[0]} rows, not the {len(te)} of "
                             "t_eval")
        self.stepper, self.rec = stepper, rec
        ffi, ptr = stepper.ffi, stepper._ptr
        self.te = np.ascontiguousarray(te, dtype=float)
        self.step_row = np.zeros(len(te), dtype=np.int64)     # each row's step, a scratch row
        R = rec.T.shape[0]
        self._energy = (rec.EK if rec.EK is not None else np.empty(R),
                        rec.EP if rec.EP is not None else np.empty(R))
        self._ptrs = {"t_eval": ptr(self.te), "STEP": ptr(self.step_row, "long long[]")}
        for field, a in (("T", rec.T), ("X", rec.X), ("XD", rec.XD), ("XDD", rec.XDD),
                         ("LAM", rec.LAM), ("PE", rec.PE), ("VE", rec.VE), ("AE", rec.AE),
                         ("EK", self._energy[0]), ("EP", self._energy[1])):
            self._ptrs[field] = ptr(a)
        self._ptrs["OUT"] = ptr(rec.OUT) if stepper.kernels.n_out else ffi.NULL
        self.d = ffi.new("sg_dense *")
        for field, p in self._ptrs.items():
            setattr(self.d, field, p)
        self.d.count, self.d.next, self.d.ld_out = len(te), int(k), rec.OUT.shape[1]
        self.d.t_end = float(t_end)
        st = stepper.lib.sg_dense_output(stepper._s, self.d)
        if st:
            raise (MemoryError("the C runtime ran out of memory for the dense output") if st == 2
                   else ValueError("the C runtime refused the dense output's rows"))

    def stop(self) -> None:
        """No t_eval rows in the runs that follow; the time the C runtime's rows took is added to
        the Recorder's ``dense_seconds``."""
        self.rec.dense_seconds += float(self.stepper.lib.sg_dense_seconds(self.stepper._s))
        self.stepper.lib.sg_dense_output(self.stepper._s, self.stepper.ffi.NULL)

    def fold(self, step_of_row0: int, r0: int, r1: int, T, IT, OM, HM, info=None,
             flags=None) -> None:
        """Complete the rows rec.k, … that C wrote during the steps of scratch rows r0..r1 − 1
        (the steps ``step_of_row0`` + row; ``T``, ``IT``, ``OM``, ``HM``: the scratch rows'
        arrays; ``info``: the scratch rows' (h, error estimate, flags) of variable steps,
        ``flags`` their flags (sg_run_chunk's FL) of fixed steps): each
        row with its step's values and the work up to its time (Recorder.work_within: the steps'
        work integrated before, Recorder.integrate_rows)."""
        rec, te = self.rec, self.te
        k0 = rec.k
        w = self.step_row[k0:int(self.d.next)]
        w = w[:int(np.searchsorted(w, r1))]        # (not past r1: an interrupt within a chunk)
        k1 = k0 + len(w)
        if k1 == k0:
            return
        work = rec.work_within(np.minimum(te[k0:k1], T[w])) if rec.n_work else None
        rec.fill_rows(k1, step_of_row0 + w, IT[w], OM[w], HM[w], work,
                      None if info is None else tuple(a[w] for a in info),
                      None if flags is None else flags[w])
