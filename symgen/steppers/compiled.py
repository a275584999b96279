"""The compiled stepper: the whole Newton step in C (``templates/runtime/symgen_runtime.c``).

The C runtime transcribes the Python steppers of this package line by line — ``nullspace``
(a pivoted Householder QR of Hᵀ; both charts, the symmetric one of ``chart.py`` with a pivoted QR
of H_sᵀ; both metrics, ``"mass"`` through the chart system of ``chart.py``; landings stepped over
as in ``nullspace.py``) and ``index3`` (Newmark / HHT-α with the
bordered solve) — with the convergence rule of ``base.py`` (the round-off floor of issue 8), and
:func:`symgen.simulate`'s per-step checks.  Python calls C once per chunk of steps into a small
scratch buffer and folds each step into the run's :class:`~symgen.recorder.Recorder` (every K-th
row, the maxima over all steps), so progress, Ctrl-C between chunks (status ``interrupted``) and
failure as data work as in the Python loop, with the same statuses and reasons.

A null-space step whose Newton iteration fails is taken as sub-steps under the error control, in
C as in the Python stepper (``meta['substepped_*']``); ``dt="auto"`` runs the C runtime's error
control (:mod:`symgen.adaptive` drives it chunk by chunk).  C never hands a step back to Python.

``factorization="sparse"`` (issue 14) runs the sparse null-space step of
:mod:`symgen.steppers.sparse` in C (``symgen_sparse.c``: the kernels' CSR values, a sparse LU of
H[R, D]; with the symmetric chart N_s from a second LU, of H_s[R, D] on the same partition:
``sg_splin_chart_basis``); ``"auto"`` chooses it for null-space runs (either chart) from
:data:`SPARSE_FROM_N` coordinates on (:func:`compiled_factorization`).

What it does not do (``stepper="auto"`` then uses the Python stepper): Kernels that are not
compiled (:class:`~symgen.LambdifyKernels`), the minimal-coordinate methods, ``factorization=
"svd"``.
"""
from __future__ import annotations

import logging
import math
import time

import numpy as np

from ..runtime_constants import (C_CHARTS, C_FACTORIZATIONS, C_METHODS, C_METRICS, CHART_CODES,
                                 METHOD_CODES, METRIC_CODES)
from ..signals import held_signals
# "auto"'s rule is the settings' (the generated main.c reads it too); re-exported here
from ..settings import SPARSE_FROM_N, SPARSE_MAX_DENSITY, compiled_factorization
from .base import FLOOR_TIMES_KEPT, Stepper
from .compiled_rows import DenseOutput
from .compiled_events import events_on, events_take
from .compiled_sampler import hold_jump, sample_failure, sampler_off, sampler_on
from .compiled_failure import CompiledFailures
from .outcome import Outcome, no_step, one_line

__all__ = ["CompiledStepper", "unsupported", "compiled_factorization", "COMPILED_METHODS",
           "COMPILED_CHARTS", "COMPILED_METRICS", "SPARSE_FROM_N", "SPARSE_MAX_DENSITY"]

log = logging.getLogger(__name__)

#: method, chart, metric name → the runtime's code (SG_NULLSPACE, SG_CHART_*, SG_METRIC_*: the one
#: table, symgen.runtime_constants)
COMPILED_METHODS, COMPILED_CHARTS, COMPILED_METRICS = METHOD_CODES, CHART_CODES, METRIC_CODES
#: wall time one chunk of C steps aims at (progress and Ctrl-C are handled between chunks), and
#: the most steps a chunk takes (the rows of the scratch buffer)
CHUNK_SECONDS = 0.05
CHUNK_MAX = 2048
#: the first chunk takes this many coordinate-steps (n × steps, at least 8 steps): a whole short
#: run of a small model in one call (each chunk costs ~40 µs of Python around it, ~10 % of a
#: 1000-step run of the stiff pendulum in 8, 32, 128, … step chunks), a few steps of a large one
FIRST_CHUNK_WORK = 2048


def unsupported(kernels, method: str, scheme, factorization: str,
                metric: str = "euclidean") -> str | None:
    """Why the compiled stepper cannot run this case (``None`` when it can)."""
    from ..kernels import Kernels

    if not isinstance(kernels, Kernels):
        return f"the kernels are {type(kernels).__name__}, not compiled Kernels"
    if method not in COMPILED_METHODS:
        return f"method {method!r} has no compiled stepper (compiled: {', '.join(COMPILED_METHODS)})"
    if factorization == "sparse" and method != "nullspace":
        return "factorization 'sparse' is the null-space step's"
    if factorization not in ("auto", "qr", "sparse"):
        return (f"factorization {factorization!r}: the compiled stepper factors H by pivoted QR or "
                "by the sparse step")
    if method == "nullspace" and scheme.is_hht:
        return "HHT-α is a variant of the classical index-3 stepper"
    if metric not in COMPILED_METRICS:
        return f"metric {metric!r} (compiled: {', '.join(COMPILED_METRICS)})"
    return None


class CompiledStepper(CompiledFailures):
    """Drives the C runtime's stepper chunk by chunk (see the module docstring); ``fallback`` is
    the Python stepper of the same case (made first, so that both validate the options alike)."""

    compiled = True
    #: for tests: the fixed step with t < cross_at <= t + h is crossed without a step tried first
    #: (NullspaceStepper.cross_at; set before the run's start: sg_cross_at)
    cross_at: float | None = None

    def __init__(self, kernels, method: str, scheme, h: float, *, tol: float,
                 constraint_tol: float, max_iter: int, rank_tol: float, estimate: bool,
                 divergence_bound: float, fallback: Stepper, chart: str = "end",
                 factorization: str = "qr", metric: str = "euclidean"):
        from ..jit import build

        why = unsupported(kernels, method, scheme, factorization, metric)
        if why:
            raise ValueError(f"stepper='compiled': {why}")
        self.factorization = compiled_factorization(kernels, method, factorization, chart)
        self.method, self.scheme, self.h = method, scheme, float(h)
        self.tol, self.constraint_tol, self.max_iter = float(tol), float(constraint_tol), int(max_iter)
        self.estimate, self.rank_tol = bool(estimate), float(rank_tol)
        self.kernels, self.py = kernels, fallback
        self.chart = chart if method == "nullspace" else None
        self.metric = metric if method == "nullspace" else "euclidean"
        self.n, self.m = kernels.n, kernels.m
        # kernels built with the runtime (build's default) carry it; others get a second module
        rt = kernels if hasattr(kernels.lib, "sg_stepper_new") else build(kernels.model, runtime=True)
        self.ffi, self.lib = rt.ffi, rt.lib

        def code(c_names: dict, name: str) -> int:         # the compiled runtime's lib.SG_*
            return getattr(self.lib, c_names[name])
        opts = self.ffi.new("sg_options *", self.lib.sg_options_default(code(C_METHODS, method)))
        opts.gamma, opts.beta, opts.alpha = scheme.gamma, scheme.beta, scheme.alpha
        opts.h, opts.tol, opts.constraint_tol = self.h, self.tol, self.constraint_tol
        opts.max_iter, opts.rank_tol = self.max_iter, float(rank_tol)
        opts.estimate, opts.divergence_bound = int(self.estimate), float(divergence_bound)
        # convergence: the default, base.py's rule (the round-off floor, issue 8)
        opts.chart = code(C_CHARTS, self.chart or "end")
        opts.factorization = code(C_FACTORIZATIONS, self.factorization)
        opts.metric = code(C_METRICS, self.metric)
        ptr = self.lib.sg_stepper_new(self.lib.sg_module_model(), opts)
        if ptr == self.ffi.NULL:
            why = self.lib.sg_options_check(self.lib.sg_module_model(), opts)
            raise (ValueError(f"the C runtime refused the options: {self.ffi.string(why).decode()}")
                   if why != self.ffi.NULL else MemoryError("the C runtime is out of memory for "
                                                            "the stepper"))
        self._s = self.ffi.gc(ptr, self.lib.sg_stepper_free)
        #: the run's InputValues (simulate sets it): time-varying inputs step one step a chunk
        self.inputs = None
        #: a sampled controller (simulate sets it): (SampledController, t0, steps per period; 0
        #: under dt="auto"), called from the C loop at every sample (sg_set_sampler)
        self.controller = None
        self._sampler = None
        self._fail = self.ffi.new("sg_failure *")
        self._last = self.ffi.new("long *")
        self.floor = (math.nan, math.nan, math.nan)
        self._upd_abs = [0.0, 0.0, 0.0]
        self.done, self.it_last, self.fl_last, self.w, self.hm = 0, 0, 0, math.nan, math.nan
        self.t_row = math.nan
        self.outcome = None     # the failed step of the last advance (steppers.outcome)
        self.floor_steps, self.floor_times, self.floor_t_last = 0, [], math.nan
        self.min_rank, self.max_rank = self.m, 0
        if method == "nullspace":
            self.substepped_steps, self.substepped_times = 0, []
            self.landing_steps, self.landing_times = 0, []
            self.crossed_steps, self.crossed_times = 0, []
        else:
            self.redundant_steps = 0

    def _ptr(self, a: np.ndarray, ctype: str = "double[]"):
        if a.size == 0:
            return self.ffi.new(ctype.replace("[]", "[1]"))
        return self.ffi.from_buffer(ctype, a, require_writable=True)

    def _set_inputs(self) -> None:
        """The C stepper's inputs from the kernels' ``u`` (Kernels.u, set by the run)."""
        if self.kernels.n_in:
            self.lib.sg_set_inputs(self._s, self._ptr(self.kernels.u))

    def consistent_state(self, t, x0, xd0, project: bool = True):
        """assembly.consistent_state's (x, ẋ, ẍ, λ, iterations, rank), computed in C with this
        run's factorization (a sparse run then starts from the partition made here), or None
        when C cannot project the state (the Python function then says why)."""
        x, xd = (np.array(v, dtype=float).reshape(self.n) for v in (x0, xd0))
        xdd, lam = np.zeros(self.n), np.zeros(self.m)
        self._set_inputs()
        st = self.lib.sg_consistent_state(self._s, self._ptr(self.kernels.p), float(t),
                                          *map(self._ptr, (x, xd, xdd, lam)), int(bool(project)))
        if st != 0:
            return None
        stats = self.stats()
        return x, xd, xdd, lam, int(stats.initial_iterations), int(stats.rank)

    def omega_at(self, t, x, xd, xdd, lam) -> float:
        """ω_max of the reduced system linearized at a state (linalg.py omega_at), in C."""
        self._set_inputs()
        return float(self.lib.sg_omega_at(self._s, self._ptr(self.kernels.p), float(t),
                                          *(self._ptr(np.ascontiguousarray(v, dtype=float))
                                            for v in (x, xd, xdd, lam))))

    def start(self, t, x, xd, xdd, lam) -> None:
        self._set_inputs()
        p = self._ptr(self.kernels.p)
        self.lib.sg_start(self._s, p, float(t), *(self._ptr(np.ascontiguousarray(v, dtype=float))
                                                  for v in (x, xd, xdd, lam)))
        if self.cross_at is not None and self.method == "nullspace":
            self.lib.sg_cross_at(self._s, float(self.cross_at))

    # a controller sampled and held, called from the C loop, and a "hold" table's jumps
    # (compiled_sampler.py)
    sampler_on, sampler_off, sample_failure, hold_jump = (sampler_on, sampler_off, sample_failure,
                                                          hold_jump)
    # the model's events, located by the C loops (compiled_events.py)
    events, events_on, events_take = None, events_on, events_take

    # -- the run -----------------------------------------------------------------------------------
    def advance(self, t0: float, n_steps: int, state, rec, progress, bound: float, te=None,
                k_eval: int = 0) -> tuple[str, str]:
        """Steps 1..n_steps from ``state`` = (x, ẋ, ẍ, λ, residuals) of step 0, each folded into
        ``rec`` as :func:`symgen.simulate`'s loop does (with ``te``, the t_eval rows te[k_eval], …
        instead of the steps, written by C: :class:`DenseOutput`); returns (status, reason).  On
        return (also by KeyboardInterrupt) ``state`` holds the last accepted step ``self.done``
        (its Newton iterations ``self.it_last``, flags ``self.fl_last``, ω_max ``self.w``, h_max
        ``self.hm``).  Long on purpose: the chunk loop and its rows read as one piece."""
        self._bound = bound
        n, m, dt = self.n, self.m, self.h
        ffi, lib, kern = self.ffi, self.lib, self.kernels
        R = min(CHUNK_MAX, n_steps) + 1
        T, PE, VE, AE, OM, HM, EK, EP = (np.full(R, math.nan) for _ in range(8))
        X, XD, XDD, LAM = np.zeros((R, n)), np.zeros((R, n)), np.zeros((R, n)), np.zeros((R, m))
        OUT = np.zeros((R, kern.n_out))
        IT, FL = np.zeros(R, dtype=np.int64), np.zeros(R, dtype=np.int64)
        bufs = (X, XD, XDD, LAM)
        for buf, v in zip(bufs, state):
            buf[0] = v
        PE[0], VE[0], AE[0], T[0] = (*state[4], t0)
        ptrs = [self._ptr(a) for a in (T, X, XD, XDD, LAM, PE, VE, AE, OM, HM)]
        ptrs += [self._ptr(IT, "long long[]"), self._ptr(EK), self._ptr(EP),
                 self._ptr(OUT) if OUT.size else ffi.NULL, self._ptr(FL, "long long[]")]
        p = self._ptr(kern.p)
        energy, outputs = rec.EK is not None, bool(rec.OUT.size)
        every, row = rec.every, 0                 # row: the scratch row of step self.done
        last, fail, status, reason = self._last, self._fail, "completed", ""
        chunk = min(CHUNK_MAX, max(8, FIRST_CHUNK_WORK // max(n, 1)))
        RES, NAN = np.empty((R, 3)), np.full(R, math.nan)

        def take(r0: int, r1: int, step0: int) -> None:
            """Fold scratch rows r0..r1 - 1 (steps step0, …) into rec, as the loop's
            observe/record/progress of each step.  An exception from ``progress`` after step j
            (a KeyboardInterrupt, or any other) keeps the steps up to j, as the Python loop does,
            and is re-raised."""
            nonlocal row
            if r1 <= r0:
                return
            stop, interrupt = r1, None
            if progress is not None:
                j = step0 - 1
                try:            # (the for statement too: a SIGINT can land between two calls)
                    for j in range(step0, step0 + r1 - r0):     # after every step, as the loop
                        progress(j, n_steps)
                except BaseException as exc:                # noqa: B036 (re-raised below)
                    stop, interrupt = r0 + (j - step0) + 1, exc
            fold(r0, stop, step0)
            if interrupt is not None:
                self.done, row = j, stop - 1
                raise interrupt

        def fold(r0: int, r1: int, step0: int) -> None:
            if r1 <= r0:
                return
            sl = slice(r0, r1)
            RES[sl, 0], RES[sl, 1], RES[sl, 2] = PE[sl], VE[sl], AE[sl]
            om, hm = (OM[sl], HM[sl]) if self.estimate else (NAN[sl], NAN[sl])
            W = rec.integrate_rows(T[sl], OUT[sl], X[sl], LAM[sl])   # the work, every step
            rec.observe_rows(T[sl], RES[sl], IT[sl], om, hm)
            if dense is not None:                           # the t_eval rows of these steps
                est = (OM, HM) if self.estimate else (NAN, NAN)
                dense.fold(step0 - r0, r0, r1, T, IT, *est, flags=FL)
                return
            steps = np.arange(step0, step0 + r1 - r0)
            keep = np.flatnonzero(steps % every == 0)
            if keep.size:
                rows = keep + r0
                rec.add_rows(steps[keep], T[rows], X[rows], XD[rows], XDD[rows], LAM[rows],
                             RES[rows], IT[rows], om[keep], hm[keep],
                             (EK[rows], EP[rows]) if energy else None,
                             OUT[rows] if outputs else None,
                             W[keep] if W is not None else None, flags=FL[rows])
                if self._sampler is not None and rec.U is not None:  # the inputs each
                    rec.U[rec.k - keep.size:rec.k] = U[rows]          # row's step used
        dense = None if te is None else DenseOutput(self, rec, te, k_eval, t0 + n_steps * dt)
        self._rows_on(rec, every if dense is None else 1, U := np.zeros((R, kern.n_in)))
        try:
            while self.done < n_steps:
                if row:                                        # the next chunk starts at row 0
                    for a in (T, X, XD, XDD, LAM, PE, VE, AE, OM, HM, IT, EK, EP, OUT, FL):
                        a[0] = a[row]
                    row = 0
                i = self.done
                stop = self._inputs_at(i, min(n_steps, i + chunk, i + R - 1), t0, X[row], XD[row])
                # a chunk's steps are kept whole: a Ctrl-C in the C call is delivered after them
                with held_signals():
                    kept = self.hold_jump(t0 + i * dt, X[row], XD[row], XDD[row], LAM[row], rec)
                    tic = time.perf_counter()
                    st = lib.sg_run_chunk(self._s, p, float(t0), i, stop, i, *ptrs, last, fail)
                    elapsed = time.perf_counter() - tic
                    k = int(last[0]) - i                     # rows 1..k written
                    if kept is not None and not k:           # (the row as its step ended)
                        XDD[row], LAM[row] = kept
                    if k:
                        take(1, k + 1, i + 1)
                        self.done, row = i + k, k
                        self._accept_inputs()
                    self.events_take(st == lib.SG_EVENT)       # (the model's events: C's)
                if st == lib.SG_OK:
                    # aim at CHUNK_SECONDS per chunk (grow at most 4× at a time, never past
                    # the scratch rows: unbounded, 4× per call overflowed after ~512 calls)
                    aim = CHUNK_SECONDS * chunk / max(elapsed, 1e-9)
                    chunk = max(1, min(4 * chunk, CHUNK_MAX, int(min(aim, CHUNK_MAX))))
                    continue
                status, reason = (("event", self.events.reason()) if st == lib.SG_EVENT
                                  else self._failed(fail, t0, dt))
                break
        finally:
            self.sampler_off()
            for buf, v in zip(state[:4], bufs):
                buf[:] = v[row]
            state[4][:] = (PE[row], VE[row], AE[row])
            self.it_last, self.fl_last, self.t_row = int(IT[row]), int(FL[row]), float(T[row])
            self.w, self.hm = map(float, (OM[row], HM[row]) if self.estimate else (math.nan,) * 2)
            self._collect()
            if dense is not None:
                dense.stop()
        return status or "completed", reason

    def _rows_on(self, rec, every: int, U) -> None:
        """The C chunks' rows: the energy on those kept only (every ``every``-th step), the
        outputs too unless the work needs every step's (sg_set_rows); the controller handed to
        the C loop (sampler_on; ``U``: the inputs each row's step used)."""
        self.lib.sg_set_rows(self._s, every, int(not rec.n_work))
        self.sampler_on(U, rec)

    # -- dt="auto" (sg_control.c.inc; adaptive.py drives it) --------------------------------------
    def control_start(self, cfg, t0: float, t_end: float, omega0: float) -> None:
        """Start the C runtime's error control with the run's tolerances and bounds (the same
        first step as the Python loop's for the same ω_max of the start)."""
        ctl = self.ffi.new("sg_control *", self.lib.sg_control_default())
        self._atol = np.ascontiguousarray(cfg.atol_vector(self.n), dtype=float)
        ctl.rtol, ctl.atol_vec = float(cfg.rtol), self._ptr(self._atol)
        ctl.h_init = float(cfg.h_init) if cfg.h_init is not None else 0.0
        ctl.h_min = float(cfg.h_min) if cfg.h_min is not None else 0.0
        ctl.h_max = float(cfg.h_max) if cfg.h_max is not None else 0.0
        self._bound = float(cfg.divergence_bound)
        st = self.lib.sg_control_start(self._s, ctl, float(t0), float(t_end), float(omega0))
        if st:
            raise (MemoryError("the C runtime ran out of memory for the error control") if st == 2
                   else ValueError(f"the C runtime refused the error control's settings "
                                   f"(rtol {cfg.rtol!r}, atol {cfg.atol!r}, h_init "
                                   f"{cfg.h_init!r}, h_min {cfg.h_min!r}, h_max {cfg.h_max!r})"))

    def auto_buffers(self, rows: int) -> dict:
        """Scratch rows for :meth:`run_auto` (row 0: the state the next chunk starts from)."""
        n, m, no = self.n, self.m, self.kernels.n_out
        b = {k: np.full(rows, math.nan) for k in ("T", "PE", "VE", "AE", "OM", "HM", "EK", "EP",
                                                   "HS", "ERR")}
        b.update(X=np.zeros((rows, n)), XD=np.zeros((rows, n)), XDD=np.zeros((rows, n)),
                 LAM=np.zeros((rows, m)), OUT=np.zeros((rows, no)),
                 U=np.zeros((rows, self.kernels.n_in)),
                 IT=np.zeros(rows, dtype=np.int64), FL=np.zeros(rows, dtype=np.int64))
        order = ("T", "X", "XD", "XDD", "LAM", "PE", "VE", "AE", "OM", "HM")
        b["_ptrs"] = ([self._ptr(b[k]) for k in order] + [self._ptr(b["IT"], "long long[]")]
                      + [self._ptr(b["EK"]), self._ptr(b["EP"]),
                         self._ptr(b["OUT"]) if b["OUT"].size else self.ffi.NULL,
                         self._ptr(b["HS"]), self._ptr(b["ERR"]), self._ptr(b["FL"], "long long[]")])
        return b

    def run_auto(self, t: float, b: dict, rows: int) -> tuple[int, float, int]:
        """Accepted steps from row 0 of ``b`` (at t) into rows 1, 2, … (sg_run_auto): (status
        code, the time of the last row, the rows written); signals are held during the call so
        that the steps it took are kept."""
        tp, k = self.ffi.new("double *", float(t)), self.ffi.new("long *")
        with held_signals():
            st = self.lib.sg_run_auto(self._s, self._ptr(self.kernels.p), tp, int(rows),
                                      *b["_ptrs"], k, self._fail)
        return int(st), float(tp[0]), int(k[0])

    def impact_cut(self, st: int) -> bool:
        """Whether run_auto's chunk (status ``st``) ended at an impact: its last row the state
        after it (SG_IMPACT, or a cascade of them)."""
        lib = self.lib
        return st == lib.SG_IMPACT or (st == lib.SG_FAILED
                                       and self._fail.kind == lib.SG_FAIL_IMPACT_CASCADE)

    def control_info(self) -> dict:
        """The C error control's counts (rejected tries, h range, largest norm, next h, the
        estimates projected by N Nᵀ: ErrorEstimate.euclidean_fallbacks)."""
        st = self.stats()
        return {"rejected_error": int(st.rejected_error),
                "rejected_newton": int(st.rejected_newton),
                "h_range": [float(st.h_smallest), float(st.h_largest)],
                "err_max": float(st.err_max), "h_next": float(st.h_next),
                "euclidean_fallbacks": int(st.euclidean_fallbacks)}

    def no_step_reason(self, t: float) -> tuple[str, str]:
        """(one-line reason, detail) of SG_FAIL_NO_STEP, worded as adaptive.py's _no_step."""
        f = self._fail
        self.outcome = no_step(t, float(f.value0), float(f.value1),
                               float(f.s_ratio) if self.m else math.nan,
                               Outcome(int(f.k), float(f.t), iteration=int(f.iteration))
                               if f.k else None)
        reason = one_line(self.outcome, auto=True)
        detail = (f"{reason}\nlast Newton failure: "
                  f"{self.ffi.string(self.lib.sg_failure_message(f.k)).decode()} "
                  f"(iteration {f.iteration})" if f.k else reason)
        return reason, detail

    def auto_failure(self, t: float, j0: int) -> tuple[str, str, str | None]:
        """(status, reason, detail) of a run_auto that did not return SG_OK (``j0``: the steps
        accepted before its chunk)."""
        f = self._fail
        if f.kind == self.lib.SG_FAIL_NO_STEP:
            return ("failed", *self.no_step_reason(t))
        status, reason = self._reason(f, 0.0, 0.0)
        if f.kind in (self.lib.SG_FAIL_DENSE_ROW, self.lib.SG_FAIL_IMPACT_CASCADE):
            return status, reason, None
        return status, f"step {j0 + int(f.step)} (t = {f.t:.9g}): {reason.split('): ', 1)[1]}", None

    def _inputs_at(self, i: int, stop: int, t0: float, x, xd) -> int:
        """The last step of the chunk from step i: ``stop``, or with time-varying inputs i + 1,
        its inputs set at t + h (callables with the state x, ẋ at t)."""
        if self.inputs is None or not self.inputs.varying:
            return stop
        self.inputs.set(t0 + (i + 1) * self.h, x, xd)
        self._set_inputs()
        return i + 1

    def _accept_inputs(self) -> None:
        if self.inputs is not None:
            self.inputs.accept()

    def sparse_stats(self) -> dict | None:
        """meta['sparse_step'] of the C sparse step (sparse.py SparseLinearization.stats), with
        the Python fallback's partitions and counts added; None for the dense step."""
        if self.factorization != "sparse":
            return None
        if self.m == 0:                           # no constraints: the dense step (as in Python)
            return self.py.lin.stats()
        ffi, lib = self.ffi, self.lib
        k, stats = ffi.new("int *"), self.stats()
        rows, indep = ffi.new(f"int[{max(self.m, 1)}]"), ffi.new(f"int[{max(self.n, 1)}]")
        r = int(lib.sg_sparse_partition(self._s, rows, indep, k))
        names = ("partitions", "column_changes", "rank_confirmations")
        out = {name: int(getattr(stats, f"sparse_{name}")) for name in names}
        out["rows"] = [int(v) for v in rows[0:r]] if r >= 0 else None
        out["independent"] = [int(v) for v in indep[0:int(k[0])]] if r >= 0 else None
        return out

    def stats(self):
        """The C stepper's statistics (an ``sg_stats``; sg_stats_get)."""
        out = self.ffi.new("sg_stats *")
        self.lib.sg_stats_get(self._s, out)
        return out

    def _collect(self) -> None:
        """The run's counters, from the C stepper."""
        st = self.stats()
        kept = min(FLOOR_TIMES_KEPT, int(self.lib.SG_TIMES_KEPT))
        self.floor_steps = int(st.floor_steps)
        self.floor_times = list(st.floor_times[0:min(self.floor_steps, kept)])
        self.floor_t_last = float(st.floor_t_last)
        self.min_rank = int(st.min_rank)
        self.max_rank = int(st.max_rank)
        if self.method == "nullspace":
            for what in ("landing", "substepped", "crossed"):
                count = int(getattr(st, f"{what}_steps"))
                times = getattr(st, f"{what}_times")[0:min(count, kept)]
                setattr(self, f"{what}_steps", count)
                setattr(self, f"{what}_times", list(times))
        else:
            self.redundant_steps = int(st.redundant_steps)
