"""What the step loop records: preallocated rows (every K-th step and the last), the run's maxima
over all steps, and the memory check made before a run starts.

:class:`Recorder` owns one buffer per Result array, allocated once for the rows the run can
record, and hands them to the Result without copying the full arrays (a run that stopped early
hands over views, or a copy when the rows are at most half of the buffer).  Every step, recorded
or not, goes through :meth:`Recorder.observe`, so ``meta['run_stats']`` (max ‖q‖, ‖q̇‖, ‖q̈‖,
Newton iterations, ω_max, the smallest h_max and where it occurred, the steps with h > h_max)
is exact over the whole run also when only every K-th step is kept.

The ``power:<element>`` outputs (``power``: their columns) are integrated over every step, by
the steps' own rule on the steps' own times (:meth:`Recorder.integrate`; :mod:`symgen.quadrature`:
the corrected trapezoid, fourth order, for the corrected step; the trapezoid for the paper's
second-order steps, whose x update it is), into the work columns
``work:<element>`` appended to the outputs (docs/energy-balance.md).  The driven joints'
work (``drive``: the rheonomic rows' power −λᵀ ∂q/∂t, :class:`~symgen.kernels.Drives`) is
integrated the same way, after the power outputs' columns, as ``work:<joint>``.
"""
from __future__ import annotations

import math

import numpy as np

from ._io import memory_budget
from .names import power_columns
from .quadrature import WorkIntegral

__all__ = ["Recorder", "n_records", "bytes_per_record", "check_memory", "MemoryBudgetError",
           "recorded_outputs", "drive_of", "t_eval_times"]


class MemoryBudgetError(ValueError):
    """A run whose recorded steps would not fit in the memory a result may take."""


def recorded_outputs(output_names, reactions=(), drives=()) -> int:
    """The output columns a result holds: the outputs, a work column per power output, and
    (added at the end of the run) a column per joint reaction and per driven joint's work."""
    return len(output_names) + len(power_columns(output_names)) + len(reactions) + len(drives)


def drive_of(kernels) -> tuple:
    """(the kernels' driven joints' power function, its ``work:<joint>`` names), or (None, ())
    for a model without driven joints (or kernels without :class:`~symgen.kernels.Drives`)."""
    drives = getattr(kernels, "drives", None)
    if drives is None or not len(drives):
        return None, ()
    return kernels.drive_power, tuple(drives.names)


def n_records(n_steps: int, every: int) -> int:
    """Rows a run of ``n_steps`` keeps: the initial state, every ``every``-th step, the last."""
    return min(n_steps // every + 2, n_steps + 1)


def bytes_per_record(n: int, m: int, n_out: int) -> int:
    """Bytes of one recorded row: t, x, ẋ, ẍ, λ, 3 residuals, ω_max, h_max, iterations, flags,
    T, V, E = T + V and the outputs, all 8-byte numbers."""
    return 8 * (3 * n + m + n_out + 11)


def check_memory(n_steps: int, every: int, n: int, m: int, n_out: int,
                 budget: int | None = None, t_eval=None) -> int:
    """The bytes the run's result will take; :class:`MemoryBudgetError` (naming the ``every``
    that would fit, or with ``t_eval``, whose times are the rows, how many fit) when that exceeds
    ``budget`` (default :func:`symgen._io.memory_budget`)."""
    budget = memory_budget() if budget is None else int(budget)
    per = bytes_per_record(n, m, n_out)
    if t_eval is not None:
        need = (len(t_eval) + 1) * per               # (and the last state, if the run stops)
        if need > budget:
            raise MemoryBudgetError(
                f"{len(t_eval):.3g} t_eval rows would need {need / 1e9:.3g} GB for the result, "
                f"more than the {budget / 1e9:.3g} GB it may take (half the physical memory): "
                f"give at most {max(budget // per - 1, 1)} times")
        return need
    need = n_records(n_steps, every) * per
    if need <= budget:
        return need
    rows = budget // per - 2                   # rows left for the every-K-th steps
    if rows < 1:
        raise MemoryBudgetError(f"{n_steps} steps: not even the first and last state "
                                f"({2 * per} bytes) fit in the {budget} bytes a result may take")
    k_min = max(every + 1, -(-n_steps // rows))
    while n_records(n_steps, k_min) * per > budget:       # integer rounding at the edge
        k_min += 1
    raise MemoryBudgetError(
        f"{n_steps:.3g} steps recorded every {every} would need {need / 1e9:.3g} GB for the result, "
        f"more than the {budget / 1e9:.3g} GB it may take (half the physical memory): record "
        f"every K-th step with K ≥ {k_min} (--every {k_min}; simulate(..., every={k_min})), or "
        "use a larger step or a shorter span")


def _max(cur: float, v: float) -> float:
    """Running maximum in which a NaN, once seen, stays (as the summary reports a NaN)."""
    return v if (v > cur or v != v) and cur == cur else cur


class Recorder:
    """Preallocated rows of one run (see the module docstring)."""

    def __init__(self, n: int, m: int, n_out: int, n_steps: int, every: int, h: float, *,
                 energy: bool, outputs: bool, variable: bool = False, power=(), inputs=None,
                 drive=None, drive_names=(), corrected: bool = False, lam_at=None):
        """``power``: the columns of the power outputs (integrated, see :meth:`integrate`);
        ``inputs``: the array the model's inputs are set in (Kernels.u), copied into ``U`` with
        every row (None: the model has none); ``drive``, ``drive_names``: :func:`drive_of`'s
        (the driven joints' power at k states, integrated after the power outputs);
        ``corrected``: the run takes the corrected step, whose work rule is the corrected
        trapezoid (fourth order), else the trapezoid (symgen/quadrature.py); ``lam_at(t, x, ẋ)``:
        the multipliers with the inputs just set (the driven joints' power after a jump)."""
        if int(every) != every or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}")
        self.every, self.h = int(every), float(h)
        # the power outputs' columns (integrated every step, see integrate), the work so far
        self.power = np.asarray(power if outputs else (), dtype=np.intp)
        self.drive = drive if drive_names else None
        self.drive_names = tuple(drive_names) if drive is not None else ()
        self.n_work = len(self.power) + len(self.drive_names)
        self.n_out = n_out
        self._work = WorkIntegral(self.n_work, corrected)
        self.lam_at, self._pending = lam_at, []
        n_out += self.n_work
        R = n_records(n_steps, self.every)
        # the flags of each row's step (steppers.control.Flag); variable steps (dt="auto"): its
        # step and error estimate too, and the rows grow (doubling) since the number of steps
        # is not known in advance
        self.variable = bool(variable)
        self.STEP_H = np.empty(R) if variable else None
        self.ERR = np.empty(R) if variable else None
        self.FLG = np.empty(R, dtype=np.int64)
        self.T = np.empty(R)
        self.X, self.XD, self.XDD = np.empty((R, n)), np.empty((R, n)), np.empty((R, n))
        self.LAM = np.empty((R, m))
        self.PE, self.VE, self.AE = np.empty(R), np.empty(R), np.empty(R)
        self.OM, self.HM = np.empty(R), np.empty(R)
        self.IT = np.empty(R, dtype=int)
        self.EK = np.empty(R) if energy else None
        self.EP = np.empty(R) if energy else None
        self.OUT = np.empty((R, n_out)) if outputs else np.zeros((R, n_out))
        self.u_ref = inputs if inputs is not None and len(inputs) else None
        self.U = np.empty((R, len(self.u_ref))) if self.u_ref is not None else None
        self.k = 0                 # rows filled
        self.last_step = -1        # step index of the last row
        # maxima over every step (not only the recorded ones)
        self.max_res = [0.0, 0.0, 0.0]
        self.iters_total = 0
        self.iters_max = 0
        self.omega_max = math.nan
        self.h_max_min = math.inf
        self.t_h_max_min = math.nan
        self.over = 0              # steps whose h_max is below the h used
        self.observed = 0
        self.dense_seconds = 0.0   # the t_eval rows' time (eval_rows.dense_rows, the C runtime's)

    def powers(self, t, Y, X=None, LAM=None) -> np.ndarray:
        """(k × n_work) powers of k states: their power outputs (``Y``: k × n_out outputs) and
        the driven joints' (from ``X``, ``LAM``)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        P = (np.asarray(Y, dtype=float).reshape(len(t), -1)[:, self.power] if self.power.size
             else np.zeros((len(t), 0)))
        if self.drive is None:
            return P
        LAM = np.atleast_2d(LAM)[:, :self.LAM.shape[1]]     # (the model's own rows)
        return np.hstack((P, self.drive(t, np.atleast_2d(X), LAM)))

    def jump(self, t: float, y, x=None, xd=None, lam=None) -> None:
        """The inputs jumped at ``t`` (a controller's sample): the power just after it, from the
        outputs ``y`` with the new inputs (and at ``x``, ``xd`` the multipliers ``lam`` re-solved
        with them, by ``lam_at`` when not given), starts the step from ``t`` in place of the
        power the state at ``t`` was recorded with.  Without it the step spans the jump with the
        old power and the work is first order in h (1.3 J on the 3R arm of
        examples/benchmarks/controller.py at h = 1 ms).  Kept until the next integration, which
        takes the powers of all of them at once."""
        if not self.n_work:
            return
        if lam is None and self.drive is not None:
            lam = self.lam_at(t, x, xd)
        self._pending.append((float(t), None if y is None else np.array(y, dtype=float),
                              None if x is None else np.array(x, dtype=float),
                              None if lam is None
                              else np.array(lam, dtype=float)[:self.LAM.shape[1]]))

    def _jumps(self) -> None:
        """The pending jumps' powers, at once, handed to the work (WorkIntegral.jump)."""
        if not self._pending:
            return
        t, Y, X, LAM = zip(*self._pending)
        self._pending = []
        stack = lambda a: None if a[0] is None else np.array(a)        # noqa: E731
        for ti, P in zip(t, self.powers(np.array(t), stack(Y), stack(X), stack(LAM))):
            self._work.jump(ti, P)

    @property
    def W(self) -> np.ndarray:
        """The work at the last state integrated."""
        return self._work.W

    def integrate(self, t: float, y, x=None, lam=None) -> None:
        """Advance the work to the state at ``t`` whose outputs are ``y`` (and coordinates ``x``,
        multipliers ``lam``: the driven joints' power; the first call starts it at 0)."""
        if self.n_work:
            self._jumps()
            self._work.add([t], self.powers(t, y, x, lam))
            self._revise()

    def _revise(self) -> None:
        """Rows already kept whose work was provisional (WorkIntegral.revised): their final
        work, so that a row's work does not depend on where a chunk ended."""
        span = self._work.revised
        if span is None:
            return
        j = self.k
        hi = span[1] + 1e-12 * max(1.0, abs(span[1]))     # (a t_eval row's slack)
        while j > 0 and span[0] < self.T[j - 1] <= hi:
            j -= 1
        if j < self.k:
            self.OUT[j:self.k, self.n_out:] = self._work.within(self.T[j:self.k])

    def work_to(self, t: float) -> np.ndarray:
        """The work at ``t`` inside the last step integrated (a ``t_eval`` row: integrate the
        step's end first), from the rule's cubic of the power over the step (fourth order, equal
        to the work at the step's ends); nothing is advanced."""
        if not self.n_work or self._work.last() is None:
            return self.W.copy()
        return self._work.within([t])[0]

    def integrate_rows(self, t, Y, X=None, LAM=None) -> np.ndarray | None:
        """:meth:`integrate` of k states at once (``Y``: their k × n_out outputs, ``X``, ``LAM``
        their coordinates and multipliers); returns the work after each of them (k × n_work),
        None without power outputs or driven joints."""
        if not self.n_work or len(t) == 0:
            return None
        t = np.asarray(t, dtype=float)
        self._jumps()
        W = self._work.add(t, self.powers(t, Y, X, LAM))
        self._revise()
        return W

    def work_within(self, tau) -> np.ndarray:
        """:meth:`work_to` of k rows at once, each at ``tau`` inside one of the steps of the last
        :meth:`integrate_rows` (the C runtime's t_eval rows)."""
        return self._work.within(tau)

    def fill_rows(self, k1: int, steps, iters, omega, h_max, work=None, step_info=None,
                  flags=None) -> None:
        """Rows k..k1 − 1 whose t, x, ẋ, ẍ, λ, residuals, energy and outputs were written in place
        (the C runtime's t_eval rows, steppers/compiled_rows.py), completed: their steps'
        indices, Newton iterations, ω_max, h_max (arrays of k1 − k), ``work`` (rows of the power
        outputs' work), ``step_info`` (variable steps: arrays of h, error estimate, flags),
        ``flags`` (fixed steps; None: 0) and the inputs."""
        sl = slice(self.k, k1)
        if k1 <= self.k:
            return
        self.IT[sl], self.OM[sl], self.HM[sl] = iters, omega, h_max
        if self.variable:
            self.STEP_H[sl], self.ERR[sl], self.FLG[sl] = step_info
        else:
            self.FLG[sl] = 0 if flags is None else flags
        if work is not None:
            self.OUT[sl, self.n_out:] = work
        if self.U is not None:
            self.U[sl] = self.u_ref
        self.k, self.last_step = k1, int(steps[-1])

    def observe(self, t: float, res, iters: int, omega: float, h_max: float) -> None:
        """Fold one state (the initial one with ``iters = 0``, then every step) into the maxima."""
        r = self.max_res
        r[0], r[1], r[2] = _max(r[0], float(res[0])), _max(r[1], float(res[1])), \
            _max(r[2], float(res[2]))
        self.iters_total += int(iters)
        if iters > self.iters_max:
            self.iters_max = int(iters)
        if omega == omega and not (omega <= self.omega_max):
            self.omega_max = float(omega)
        if h_max == h_max and h_max != math.inf:
            if h_max < self.h_max_min:
                self.h_max_min, self.t_h_max_min = float(h_max), float(t)
            if h_max < self.h:
                self.over += 1
        self.observed += 1

    def observe_rows(self, t, res, iters, omega, h_max, h=None) -> None:
        """:meth:`observe` of k states at once (arrays of k; ``res`` k × 3), in order: the same
        maxima, the first smallest h_max, NaN kept once seen; ``h``: each state's step (variable
        steps; default the run's h)."""
        if len(t) == 0:
            return
        r = self.max_res
        for c in range(3):
            col = res[:, c]
            r[c] = math.nan if (r[c] != r[c] or np.isnan(col).any()) else max(r[c], float(col.max()))
        self.iters_total += int(iters.sum())
        self.iters_max = max(self.iters_max, int(iters.max()))
        ok = omega[omega == omega]
        if ok.size and not (float(ok.max()) <= self.omega_max):
            self.omega_max = float(ok.max())
        mask = (h_max == h_max) & (h_max != math.inf)
        if mask.any():
            hv = h_max[mask]
            j = int(np.argmin(hv))
            if hv[j] < self.h_max_min:
                self.h_max_min, self.t_h_max_min = float(hv[j]), float(t[mask][j])
            self.over += int((hv < (self.h if h is None else np.asarray(h)[mask])).sum())
        self.observed += len(t)

    def add_rows(self, steps, t, x, xd, xdd, lam, res, iters, omega, h_max, energy=None,
                 out=None, work=None, step_info=None, flags=None) -> None:
        """:meth:`add` of k rows at once (``steps``: their step indices, increasing; ``energy``
        a pair of arrays of k; ``work`` their rows of :meth:`integrate_rows`; ``step_info``
        the arrays (h, error estimate, flags) of variable steps; ``flags`` those of fixed
        steps, None: 0)."""
        k, K = self.k, len(steps)
        if K == 0:
            return
        sl = slice(k, k + K)
        if self.variable:
            while k + K > self.T.shape[0]:
                self._grow()
            self.STEP_H[sl], self.ERR[sl], self.FLG[sl] = step_info
        else:
            self.FLG[sl] = 0 if flags is None else flags
        self.T[sl] = t
        self.X[sl], self.XD[sl], self.XDD[sl] = x, xd, xdd
        self.LAM[sl] = lam
        self.PE[sl], self.VE[sl], self.AE[sl] = res[:, 0], res[:, 1], res[:, 2]
        self.OM[sl], self.HM[sl] = omega, h_max
        self.IT[sl] = iters
        if self.EK is not None:
            self.EK[sl], self.EP[sl] = energy
        if out is not None:
            self.OUT[sl, :self.n_out] = out
        if work is not None:
            self.OUT[sl, self.n_out:] = work
        if self.U is not None:
            self.U[sl] = self.u_ref
        self.k, self.last_step = k + K, int(steps[-1])

    def _grow(self) -> None:
        """Double the rows (variable steps only): each buffer copied into one twice as long;
        :class:`MemoryBudgetError` when the doubled rows would pass the memory a result may take
        (the rows recorded so far are kept)."""
        rows = self.T.shape[0]          # a row (with its flags), its step and error estimate
        per = bytes_per_record(self.X.shape[1], self.LAM.shape[1], self.OUT.shape[1]) + 2 * 8
        if (2 * rows + 2) * per > memory_budget():
            raise MemoryBudgetError(
                f"{rows} rows fill the memory a result may take: record every K-th step "
                "(every=K, --every K) or at given times (t_eval=, --t-eval)")
        for attr in ("T", "X", "XD", "XDD", "LAM", "PE", "VE", "AE", "OM", "HM", "IT", "EK",
                     "EP", "OUT", "STEP_H", "ERR", "FLG", "U"):
            a = getattr(self, attr)
            if a is not None:
                b = np.empty((2 * a.shape[0] + 2,) + a.shape[1:], dtype=a.dtype)
                b[:a.shape[0]] = a
                setattr(self, attr, b)

    def add(self, step: int, t, x, xd, xdd, lam, res, iters, omega, h_max, energy=None,
            out=None, step_info=None, work=None, flags: int = 0) -> None:
        """Write one row (the row counts only once it is complete); ``step_info``: (h, error
        estimate, flags) of the step that produced it (variable steps), ``flags`` its flags
        (fixed steps); ``work``: default the work integrated so far (the row is the last state
        integrated)."""
        k = self.k
        if self.variable:
            if k == self.T.shape[0]:
                self._grow()
            self.STEP_H[k], self.ERR[k], self.FLG[k] = step_info or (math.nan, math.nan, 0)
        else:
            self.FLG[k] = flags
        self.T[k] = t
        self.X[k], self.XD[k], self.XDD[k] = x, xd, xdd
        self.LAM[k] = lam[:self.LAM.shape[1]]      # (a closed contact's rows after: contact.py)
        self.PE[k], self.VE[k], self.AE[k] = res
        self.OM[k], self.HM[k] = omega, h_max
        self.IT[k] = iters
        if self.EK is not None:
            self.EK[k], self.EP[k] = energy
        if out is not None:
            self.OUT[k, :self.n_out] = out
        if self.n_work:
            self.OUT[k, self.n_out:] = self.W if work is None else work
        if self.U is not None:
            self.U[k] = self.u_ref
        self.k, self.last_step = k + 1, step

    def stats(self) -> dict:
        """The run's maxima over all steps, for ``meta['run_stats']``."""
        return {"states": self.observed, "max_pos_err": self.max_res[0],
                "max_vel_err": self.max_res[1], "max_acc_err": self.max_res[2],
                "newton_iters_total": self.iters_total, "newton_iters_max": self.iters_max,
                "omega_max": self.omega_max, "h_max_min": self.h_max_min,
                "t_h_max_min": self.t_h_max_min, "steps_h_over_h_max": self.over}

    def arrays(self) -> dict:
        """The filled rows as the Result's arrays: the buffers themselves when full, else views
        (or copies when at most half the rows were filled; the rest is then freed)."""
        K, R = self.k, self.T.shape[0]

        def trim(a):
            if a is None or K == R:
                return a
            return a[:K].copy() if 2 * K <= R else a[:K]

        out = {name: trim(getattr(self, attr)) for name, attr in (
            ("t", "T"), ("x", "X"), ("xd", "XD"), ("xdd", "XDD"), ("lam", "LAM"),
            ("pos_err", "PE"), ("vel_err", "VE"), ("acc_err", "AE"), ("omega_max", "OM"),
            ("h_max", "HM"), ("newton_iters", "IT"), ("energy_kinetic", "EK"),
            ("energy_potential", "EP"), ("outputs", "OUT"))}
        out["flags"] = trim(self.FLG)
        if self.variable:
            out.update(h=trim(self.STEP_H), err_est=trim(self.ERR))
        out["u"] = trim(self.U)
        return out


def t_eval_times(t_eval, t0: float, t_end: float):
    """The requested output times, checked: increasing, within [t0, t_end] (None: none)."""
    if t_eval is None:
        return None
    te = np.asarray(t_eval, dtype=float).ravel()
    if te.size == 0 or not np.all(np.isfinite(te)):
        raise ValueError("t_eval must be a non-empty sequence of finite times")
    if np.any(np.diff(te) <= 0) or te[0] < t0 or te[-1] > t_end:
        raise ValueError(f"t_eval must increase strictly and lie within [t0, t_end] = [{t0:g}, "
                         f"{t_end:g}]; got {te[0]:g} … {te[-1]:g}")
    return te
