"""The compiled stepper's failures (steppers/compiled.py): the C runtime's ``sg_failure`` as the
Python steppers' :class:`~symgen.steppers.outcome.Outcome` (``_outcome``) and in their words (the
long text, ``_words``), so that a run stops with the same status, reason and meta["failure"] in
either stepper."""
from __future__ import annotations

import math

from .base import Stepper
from .control import dense_row_reason
from .outcome import Outcome, one_line

__all__ = ["CompiledFailures"]


class CompiledFailures:
    """The failure half of :class:`~symgen.steppers.compiled.CompiledStepper` (a mixin: it reads
    the stepper's ``lib``, ``ffi``, ``method``, ``scheme``, ``h``, ``constraint_tol``)."""

    def _failed(self, fail, t0: float, dt: float) -> tuple[str, str]:
        """(status, one-line reason) of a fixed-step chunk that stopped on ``fail``; its outcome
        (its long text with the step, as the Python loop's) in ``self.outcome``."""
        status, reason = self._reason(fail, t0, dt)
        self.outcome = self._outcome(fail, reason)
        if self.outcome is not None:        # the one line from the data (outcome.py)
            reason = one_line(self.outcome, reason.split("): ", 1)[0] + "): ")
        return status, reason

    def _reason(self, fail, t0: float, dt: float) -> tuple[str, str]:
        """(status, reason) worded as the Python steppers and simulate's loop word them (a run
        the sampled controller stopped: its exception raised)."""
        lib = self.lib
        if fail.kind == lib.SG_FAIL_SAMPLE:
            self.sample_failure(fail)
        if fail.kind == lib.SG_FAIL_DENSE_ROW:              # (eval_rows.dense_rows)
            return "failed", dense_row_reason(fail.t)
        if fail.kind == lib.SG_FAIL_IMPACT_CASCADE:         # (impacts.py RunImpacts.cascade)
            self.events.impacts.burst = int(fail.value0)
            return "failed", self.events.impacts.cascade()
        step = int(fail.step)
        prefix = f"step {step} (t = {t0 + step * dt:.9g}): "
        if fail.kind == lib.SG_FAIL_NO_STEP:                # (dt="auto"'s is auto_failure's)
            diverged, msg = self._substeps_failed(fail)
        else:
            diverged, msg = self._words(fail)
            if self.method == "nullspace" and fail.kind not in (
                    lib.SG_FAIL_RUN_NONFINITE, lib.SG_FAIL_RUN_BOUND, lib.SG_FAIL_NO_MEMORY):
                msg += self._not_substepped()   # (a failed step is sub-stepped unless past h_max)
        return ("diverged" if diverged else "failed"), prefix + msg

    def _outcome(self, fail, detail: str = "", top: bool = True) -> Outcome | None:
        """The C's failure ``fail`` as the Python steppers' :class:`Outcome` (None for the kinds
        that are no failed step: a state past the divergence bound or not finite, a dense row, the
        sampled controller); ``detail``: the long text."""
        lib, kind = self.lib, int(fail.kind)
        if kind in (lib.SG_FAIL_NONE, lib.SG_FAIL_RUN_NONFINITE, lib.SG_FAIL_RUN_BOUND,
                    lib.SG_FAIL_DENSE_ROW, lib.SG_FAIL_SAMPLE, lib.SG_FAIL_IMPACT_CASCADE):
            return None
        at = dict(t=float(fail.t), h=self.h, iteration=int(fail.iteration), detail=detail)
        if kind == lib.SG_FAIL_NO_STEP:                     # a fixed step's sub-steps failed
            stats = self.stats()
            return Outcome(kind, first=self._outcome(stats.substep_first, top=False),
                           last=self._outcome(stats.substep_last, top=False), **at)
        if kind == lib.SG_FAIL_NOT_CONVERGED:
            at.update(update=float(fail.value0), residual=float(fail.value1),
                      floor=tuple(fail.floor), upd_abs=tuple(fail.upd_abs),
                      s_ratio=float(fail.s_ratio) if self.method == "nullspace" else math.nan)
        elif kind in (lib.SG_FAIL_SINGULAR_REDUCED, lib.SG_FAIL_CHART_SINGULAR,
                      lib.SG_FAIL_NO_MEMORY):
            at["k"] = int(fail.k)
        elif kind == lib.SG_FAIL_CHART_T_SINGULAR:
            at["value"] = float(fail.value0)
        if top and self.method == "nullspace" and kind != lib.SG_FAIL_NO_MEMORY:
            at["h_max"] = self._h_max()     # (not sub-stepped: h past the stability limit)
        return Outcome(kind, **at)

    def _substeps_failed(self, fail) -> tuple[bool, str]:
        """A fixed step and then its sub-steps failed: nullspace.py's words for both."""
        stats = self.stats()
        first, last = stats.substep_first, stats.substep_last
        msg = self._words(first)[1]
        if last.kind:
            diverged, tail = self._words(last)
        else:
            diverged, tail = False, (f"no sub-step from t = {fail.value2:.9g} met the error "
                                     "tolerance (rtol 1e-06) down to round-off")
        return diverged, f"{msg}; retried as sub-steps under error control: {tail}"

    def _words(self, fail) -> tuple[bool, str]:
        """(non-finite, message) of one step's failure, as the Python steppers word it."""
        kind, it, t1, lib = fail.kind, fail.iteration, fail.t, self.lib
        diverged = True
        if kind == lib.SG_FAIL_NONFINITE_ITERATE:
            msg = f"non-finite Newton iterate at t = {t1:.9g}, iteration {it}"
        elif kind == lib.SG_FAIL_NOT_CONVERGED:
            diverged = False
            if self.method == "index3":
                extra = (f"; |q| {fail.value1:.3e} (tolerance {self.constraint_tol:.1e}); "
                         f"max|lambda| {fail.value2:.3e}")
            else:
                extra = (f"; max(|q|, h|q_dot|, h²|q_ddot|) {fail.value1:.3e} (tolerance "
                         f"{self.constraint_tol:.1e}); s_min/s_max of H {fail.s_ratio:.2e}")
            self.floor = tuple(fail.floor)
            self._upd_abs = list(fail.upd_abs)
            msg = str(Stepper._not_converged(self, t1, it, fail.value0, extra))
        elif kind == lib.SG_FAIL_FACTOR_NONFINITE:
            diverged = False
            msg = f"factorization of H failed at t = {t1:.9g}, iteration {it}: H has non-finite entries"
        elif kind == lib.SG_FAIL_SINGULAR_REDUCED:
            diverged = False
            msg = (f"singular reduced step matrix M_R + γh C_R + βh² K_R at t = {t1:.9g}, "
                   f"iteration {it} (k = {fail.k})")
        elif kind == lib.SG_FAIL_NONFINITE_UPDATE:
            msg = f"non-finite Newton update at t = {t1:.9g}, iteration {it}"
        elif kind == lib.SG_FAIL_I3_NONFINITE:
            msg = f"non-finite state or constraint residual at t = {t1:.9g}, Newton iteration {it}"
        elif kind == lib.SG_FAIL_RUN_NONFINITE:
            msg = (f"non-finite values in the state or its constraint residuals (Newton iterations "
                   f"{it})")
        elif kind in (lib.SG_FAIL_CHART_T_SINGULAR, lib.SG_FAIL_CHART_SINGULAR,
                      lib.SG_FAIL_SPARSE_SINGULAR, lib.SG_FAIL_CHART_SPARSE_SINGULAR):
            diverged = False
            msg = {lib.SG_FAIL_CHART_T_SINGULAR:
                       f"symmetric chart: T = N_sᵀN_H is singular at t = {t1:.9g}, iteration "
                       f"{it} (smallest singular value {fail.value0:.3e})",
                   lib.SG_FAIL_CHART_SINGULAR:
                       f"symmetric chart: singular 3k × 3k step matrix at t = {t1:.9g}, "
                       f"iteration {it} (k = {fail.k})",
                   lib.SG_FAIL_SPARSE_SINGULAR:
                       f"factorization of H failed at t = {t1:.9g}, iteration {it}: sparse LU of "
                       "H[R, D] failed: singular",
                   lib.SG_FAIL_CHART_SPARSE_SINGULAR:
                       f"symmetric chart: factorization of H_s failed at t = {t1:.9g}, iteration "
                       f"{it}: sparse LU of H_s[R, D] failed: singular"}[kind]
        elif kind == lib.SG_FAIL_NO_MEMORY:
            diverged = False
            msg = (f"the C runtime ran out of memory at t = {t1:.9g}, iteration {it}, for the "
                   "buffers of a larger null space or a new partition of H")
        elif kind == lib.SG_FAIL_RUN_BOUND:
            which = ("|x|", "h|xd|", "h²|xdd|")[fail.which]
            msg = (f"{which} = {fail.value0:.3e} exceeds the divergence bound "
                   f"{self._bound:.3e}")
        elif kind == lib.SG_FAIL_SAMPLE:        # (_reason raises the law's own failure first)
            diverged = False
            msg = f"the sampled controller stopped the run at t = {t1:.9g}"
        elif kind == lib.SG_FAIL_IMPACT_CASCADE:  # (_reason words it as impacts.py first)
            diverged = False
            msg = f"impact cascade at t = {t1:.12g}: {int(fail.value0)} impacts in a row"
        else:
            diverged = False
            msg = f"the C runtime stopped with an unknown failure kind {kind}"
        return diverged, msg

    def _h_max(self) -> float:
        """The stability limit h_max(ω_max) of the last accepted state."""
        ptrs = [self.ffi.new("double **") for _ in range(5)]
        omega = self.ffi.new("double *")
        self.lib.sg_state(self._s, *ptrs, omega)
        return self.scheme.h_max(float(omega[0]))

    def _not_substepped(self) -> str:
        """Why a failed fixed step was not taken as sub-steps, as nullspace.py words it: h past
        the stability limit h_max(ω_max) of the last accepted state."""
        return (f"; not retried as sub-steps: h = {self.h:g} s exceeds the stability limit "
                f"h_max = {self._h_max():.3g} s")
