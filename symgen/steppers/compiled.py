"""The compiled stepper: the whole Newton step in C (``templates/runtime/symgen_runtime.c``).

The C runtime transcribes the Python steppers of this package line by line — ``nullspace``
(factorization ``"qr"``: a pivoted Householder QR of Hᵀ) and ``index3`` (Newmark / HHT-α with the
bordered solve) — and :func:`symgen.simulate`'s per-step checks and recording.  Python calls C once
per chunk of steps; C writes straight into the run's preallocated arrays, so the progress callback,
Ctrl-C between chunks (the run ends ``interrupted`` with what was computed) and failure as data work
as in the Python loop.  Statuses and reasons are worded as the Python steppers word them.

What it does not do (``simulate`` then uses the Python stepper): Kernels that are not compiled
(:class:`~symgen.LambdifyKernels`), the minimal-coordinate methods, ``factorization="svd"``.
"""
from __future__ import annotations

import logging
import math
import time

import numpy as np

from .base import Stepper

__all__ = ["CompiledStepper", "unsupported", "COMPILED_METHODS"]

log = logging.getLogger(__name__)

#: method name → the runtime's method code
COMPILED_METHODS = {"nullspace": 0, "index3": 1}
_SG_OK, _SG_FAILED, _SG_DIVERGED = 0, 1, 2
#: the convergence rule of the Python steppers present (base.py): 1 = the round-off floor rule of
#: issue 8 (``Stepper._floor``: conditioning-aware floor, ω_max at the accepted state, index3's
#: rank at every step), 0 = the earlier "stalled within 1e3 × tol" rule; the C runtime has both
CONVERGENCE_RULE = 1 if hasattr(Stepper, "_floor") else 0
#: wall time one chunk of C steps aims at (progress and Ctrl-C are handled between chunks)
CHUNK_SECONDS = 0.05


def unsupported(kernels, method: str, scheme, factorization: str) -> str | None:
    """Why the compiled stepper cannot run this case (``None`` when it can)."""
    from ..build import Kernels

    if not isinstance(kernels, Kernels):
        return f"the kernels are {type(kernels).__name__}, not compiled Kernels"
    if method not in COMPILED_METHODS:
        return f"method {method!r} has no compiled stepper (compiled: {', '.join(COMPILED_METHODS)})"
    if factorization not in ("auto", "qr"):
        return f"factorization {factorization!r}: the compiled stepper factors H by pivoted QR only"
    if method == "nullspace" and scheme.is_hht:
        return "HHT-α is a variant of the classical index-3 stepper"
    return None


class CompiledStepper:
    """Drives the C runtime's stepper chunk by chunk over :func:`symgen.simulate`'s arrays."""

    compiled = True
    factorization = "qr"

    def __init__(self, kernels, method: str, scheme, h: float, *, tol: float,
                 constraint_tol: float, max_iter: int, rank_tol: float, estimate: bool,
                 divergence_bound: float):
        from ..build import build

        why = unsupported(kernels, method, scheme, "qr")
        if why:
            raise ValueError(f"stepper='compiled': {why}")
        if method == "index3" and scheme.beta == 0.0:
            raise ValueError("the index-3 stepper needs beta > 0 (with beta = 0 the position "
                             "constraints do not involve the new accelerations)")
        if not (h > 0.0 and math.isfinite(h)):
            raise ValueError(f"step size must be positive and finite, got {h}")
        if not (0.0 <= rank_tol < 1.0):
            raise ValueError(f"rank_tol must lie in [0, 1), got {rank_tol}")
        self.method, self.scheme, self.h = method, scheme, float(h)
        self.tol, self.constraint_tol, self.max_iter = float(tol), float(constraint_tol), int(max_iter)
        self.estimate = bool(estimate)
        self.kernels = kernels
        self.n, self.m = kernels.n, kernels.m
        # kernels built with the runtime (build's default) carry it; others get a second module
        rt = kernels if hasattr(kernels.lib, "sg_stepper_new") else build(kernels.model, runtime=True)
        self.ffi, self.lib = rt.ffi, rt.lib
        opts = self.ffi.new("sg_options *")
        opts.method = COMPILED_METHODS[method]
        opts.gamma, opts.beta, opts.alpha = scheme.gamma, scheme.beta, scheme.alpha
        opts.h, opts.tol, opts.constraint_tol = self.h, self.tol, self.constraint_tol
        opts.max_iter, opts.rank_tol = self.max_iter, float(rank_tol)
        opts.estimate, opts.divergence_bound = int(self.estimate), float(divergence_bound)
        opts.convergence = CONVERGENCE_RULE
        ptr = self.lib.sg_stepper_new(self.lib.sg_module_model(), opts)
        if ptr == self.ffi.NULL:
            raise ValueError(f"the C runtime refused the options {dict(method=method, h=h, tol=tol)}"
                             " (or is out of memory)")
        self._s = self.ffi.gc(ptr, self.lib.sg_stepper_free)
        self._fail = self.ffi.new("sg_failure *")
        self._last = self.ffi.new("long *")
        self.stalled_steps = 0
        self.floor_steps, self.floor_times, self.floor_t_last = 0, [], math.nan
        self.floor = (math.nan, math.nan, math.nan)
        self._upd_abs = [0.0, 0.0, 0.0]
        if method == "nullspace" or CONVERGENCE_RULE:
            self.min_rank, self.max_rank = self.m, 0
        if method == "index3" and CONVERGENCE_RULE:
            self.redundant_steps = 0

    # -- helpers ----------------------------------------------------------------------------------
    def _ptr(self, a: np.ndarray, ctype: str = "double[]"):
        if a.size == 0:
            return self.ffi.new(ctype.replace("[]", "[1]"))
        return self.ffi.from_buffer(ctype, a, require_writable=True)

    def start(self, t, x, xd, xdd, lam) -> None:
        p = self._ptr(self.kernels.p)
        self.lib.sg_start(self._s, p, float(t), *(self._ptr(np.ascontiguousarray(v, dtype=float))
                                                  for v in (x, xd, xdd, lam)))

    def _reason(self, fail, t0: float, dt: float) -> tuple[str, str]:
        """(status, reason) worded as the Python steppers and simulate's loop word them."""
        kind, it, t1 = fail.kind, fail.iteration, fail.t
        step = int(fail.step)
        prefix = f"step {step} (t = {t0 + step * dt:.9g}): "
        diverged = True
        if kind == 1:
            msg = f"non-finite Newton iterate at t = {t1:.9g}, iteration {it}"
        elif kind == 2:
            diverged = False
            if self.method == "index3":
                extra = (f"; |q| {fail.value1:.3e} (tolerance {self.constraint_tol:.1e}); "
                         f"max|lambda| {fail.value2:.3e}")
            else:
                extra = (f"; max(|q|, h|q_dot|, h²|q_ddot|) {fail.value1:.3e} (tolerance "
                         f"{self.constraint_tol:.1e})")
                if CONVERGENCE_RULE:
                    extra += f"; s_min/s_max of H {fail.s_ratio:.2e}"
            self.floor = tuple(fail.floor)
            self._upd_abs = list(fail.upd_abs)
            msg = str(Stepper._not_converged(self, t1, it, fail.value0, extra))
        elif kind == 3:
            diverged = False
            msg = f"factorization of H failed at t = {t1:.9g}, iteration {it}: H has non-finite entries"
        elif kind == 4:
            diverged = False
            msg = (f"singular reduced step matrix M_R + γh C_R + βh² K_R at t = {t1:.9g}, "
                   f"iteration {it} (k = {fail.k})")
        elif kind == 5:
            msg = f"non-finite Newton update at t = {t1:.9g}, iteration {it}"
        elif kind == 6:
            msg = f"non-finite state or constraint residual at t = {t1:.9g}, Newton iteration {it}"
        elif kind == 7:
            msg = (f"non-finite values in the state or its constraint residuals (Newton iterations "
                   f"{it})")
        elif kind == 8:
            which = ("|x|", "h|xd|", "h²|xdd|")[fail.which]
            msg = (f"{which} = {fail.value0:.3e} exceeds the divergence bound "
                   f"{self._bound:.3e}")
        else:
            diverged = False
            msg = f"the C runtime stopped with an unknown failure kind {kind}"
        return ("diverged" if diverged else "failed"), prefix + msg

    # -- the run -----------------------------------------------------------------------------------
    def run(self, T, X, XD, XDD, LAM, PE, VE, AE, OM, HM, IT, EK, EP, OUT, t0: float, dt: float,
            n_steps: int, progress=None, bound: float = math.inf):
        """Steps 1..n_steps into the arrays (row 0 holds the initial state).  Returns
        (status, reason, last row written)."""
        self._bound = bound
        ffi, lib = self.ffi, self.lib
        it_buf = IT if IT.dtype == np.int64 else np.zeros(IT.shape, dtype=np.int64)
        ptrs = [self._ptr(a) for a in (T, X, XD, XDD, LAM, PE, VE, AE, OM, HM)]
        ptrs.append(self._ptr(it_buf, "long long[]"))
        ptrs += [self._ptr(EK), self._ptr(EP)]
        ptrs.append(self._ptr(OUT) if OUT.size else ffi.NULL)
        p = self._ptr(self.kernels.p)
        last, fail = self._last, self._fail
        last[0] = 0
        status, reason = "completed", ""
        i, chunk = 0, 8
        try:
            while i < n_steps:
                stop = min(n_steps, i + chunk)
                tic = time.perf_counter()
                st = lib.sg_run_chunk(self._s, p, float(t0), i, stop, *ptrs, last, fail)
                elapsed = time.perf_counter() - tic
                if progress is not None:
                    for j in range(i + 1, int(last[0]) + 1):     # after every step, as the loop
                        progress(j, n_steps)
                if st != _SG_OK:
                    status, reason = self._reason(fail, t0, dt)
                    log.warning("simulation of %s stopped: %s", self.kernels.name, reason)
                    break
                i = stop
                # aim at CHUNK_SECONDS per chunk (grow at most 4× at a time)
                chunk = max(1, min(4 * chunk, int(CHUNK_SECONDS * chunk / max(elapsed, 1e-9))))
        except KeyboardInterrupt:
            j = int(last[0])
            status = "interrupted"
            reason = (f"interrupted (KeyboardInterrupt) after step {j} (t = {t0 + j * dt:.9g}); "
                      "the steps up to there are kept")
            log.warning("simulation of %s stopped: %s", self.kernels.name, reason)
        finally:
            self.stalled_steps = int(lib.sg_stalled_steps(self._s))
            self.floor_steps = int(lib.sg_floor_steps(self._s))
            buf = ffi.new("double[100]")
            self.floor_times = list(buf[0:int(lib.sg_floor_times(self._s, buf, 100))])
            self.floor_t_last = float(lib.sg_floor_t_last(self._s))
            if hasattr(self, "min_rank"):
                self.min_rank = int(lib.sg_min_rank(self._s))
                self.max_rank = int(lib.sg_max_rank(self._s))
            if hasattr(self, "redundant_steps"):
                self.redundant_steps = int(lib.sg_redundant_steps(self._s))
            if it_buf is not IT:
                IT[:] = it_buf
        return status, reason, int(last[0])
