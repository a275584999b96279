"""The compiled stepper's controller sampled and held (``simulate(..., controller=, period=)``;
docs/inputs.md): the law handed to the C loop as a callback (``sg_set_sampler``), so that between
samples the run stays in C and each sample costs one call into Python; the law's failure raised
again once the chunk's steps are kept; a "hold" input table's jump restarted the same way
(``hold_jump``: sg_restart).  Methods of :class:`~symgen.steppers.compiled.CompiledStepper`
(``self``: the stepper)."""
from __future__ import annotations

import numpy as np

from ..input_values import InputError

__all__ = ["sampler_on", "sampler_off", "sample_failure", "hold_jump"]


def sampler_on(self, U: np.ndarray, rec=None) -> None:
    """Hand the run's controller to the C loop: at each sample C copies the state into our
    buffers and calls back here (the law writes ``kernels.u``); ``U``: the scratch rows the
    C run writes each row's inputs into; ``rec``: the run's Recorder, told the power just after
    each sample (:meth:`~symgen.recorder.Recorder.jump`).  An exception of the law is kept
    (``_sample_exc``) and the run stops there (SG_FAIL_SAMPLE): :meth:`sample_failure` raises
    it."""
    if self.controller is None:
        return
    ctl, t0, steps = self.controller
    xs, xds = np.zeros(self.n), np.zeros(self.n)
    self._sample_exc = None
    kern = self.kernels
    work = rec is not None and rec.n_work
    outputs = work and kern.n_out > 0 and hasattr(kern, "outputs")

    def call(_ctx, t):
        try:
            ctl.sample(t, xs, xds)
            if work:                            # (λ after it: Recorder.lam_at, in Python)
                rec.jump(t, kern.outputs(t, xs, xds) if outputs else None, xs, xds)
            return 0
        except BaseException as exc:        # noqa: B036 (raised again after the chunk)
            self._sample_exc = exc
            return 1
    cb = self.ffi.callback("sg_sample_fn", call)
    st = self.lib.sg_set_sampler(self._s, cb, self.ffi.NULL, float(t0), ctl.period,
                                 int(steps), self._ptr(xs), self._ptr(xds),
                                 self._ptr(self.kernels.u), self._ptr(U))
    if st:
        raise (MemoryError("the C runtime ran out of memory for the controller") if st == 2
               else ValueError("the C runtime refused the controller's sample period"))
    self._sampler = (cb, xs, xds, U)        # (alive while C holds the pointers)


def sampler_off(self) -> None:
    """The C loop without the controller (after the run, also when it stopped)."""
    if self._sampler is not None:
        self.lib.sg_set_sampler(self._s, self.ffi.NULL, self.ffi.NULL, 0.0, 0.0, 0,
                                self.ffi.NULL, self.ffi.NULL, self.ffi.NULL, self.ffi.NULL)
        self._sampler = None


def sample_failure(self, fail) -> None:
    """A run the controller stopped (SG_FAIL_SAMPLE): the law's exception, or the index-1
    solve that failed with its values, as an InputError."""
    exc, self._sample_exc = self._sample_exc, None
    if exc is not None:
        raise exc
    what = ("the positions" if fail.value0 == 1 else "a singular reduced mass")
    raise InputError(f"controller at t = {fail.t:.9g}: the accelerations with its inputs "
                     f"could not be solved for ({what})")


def hold_jump(self, t: float, x, xd, xdd, lam, rec):
    """A "hold" table's value jumped for the step from t (InputValues.jumped): ẍ, λ of the
    new inputs at (t, x, ẋ) written into ``xdd``, ``lam`` (the chunk's row the step starts
    from) by sg_restart, the power after the jump told to ``rec`` (Recorder.jump); returns
    the values they held (None: no jump)."""
    if self.inputs is None or not self.inputs.varying or not self.inputs.jumped():
        return None
    kept = (xdd.copy(), lam.copy())
    st = self.lib.sg_restart(self._s, self._ptr(self.kernels.p), float(t),
                             *(self._ptr(v) for v in (x, xd, xdd, lam)))
    if st:
        xdd[:], lam[:] = kept
        what = "the positions" if st == 1 else "a singular reduced mass"
        raise InputError(f"inputs at t = {t:.9g}: the accelerations with the held inputs' "
                         f"next values could not be solved for ({what})")
    if rec.n_work:
        kern = self.kernels
        y = kern.outputs(t, x, xd) if kern.n_out > 0 and hasattr(kern, "outputs") else None
        rec.jump(t, y, x, xd, lam)
    return kept
