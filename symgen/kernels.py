"""Numeric kernels: numpy in, numpy out, into buffers allocated once.

:class:`Kernels` is what :func:`symgen.build` returns (compiled C, loaded through cffi by
:mod:`symgen.jit`).
:class:`LambdifyKernels` evaluates the same derived terms through ``sympy.lambdify``: it is the
independent reference the tests compare the C against, and needs no compiler.

Both share one interface (the steppers rely on nothing else):

=================================  =====================================================
``dynamics(t, x, xd, xdd, lam)``   fills and returns ``(M, f, K, C)``   (n×n, n, n×n, n×n)
``constraints(t, x, xd, xdd)``     fills and returns ``(q, H, q_dot, H_dot, q_ddot, H_ddot)``
                                   (m, m×n, m, m×n, m, m×n)
``energy(t, x, xd)``               returns ``(T, V)`` as floats
``outputs(t, x, xd)``              fills and returns ``y`` (n_out)
``reactions(t, x, xd, xdd, lam)``  fills and returns ``r`` (the joints' reactions)
``events(t, x, xd)``               fills and returns ``g`` (the events' functions)
``impacts(t, x)``                  fills and returns ``G`` (the impacts' gap gradients ∂g/∂x)
=================================  =====================================================

Beside them, on the fixed CSR patterns of the generated code (issue 14; ``H_pattern`` shared by H,
Ḣ, Ḧ, ``M_pattern`` by M, K, C, each (row pointers, column indices); ``col_order`` a fill-reducing
order of the coordinates; :func:`symgen.derived.sparsity`):

=====================================  =================================================
``dynamics_csr(t, x, xd, xdd, lam)``   ``(M, f, K, C)`` with M, K, C ``scipy.sparse`` CSR
``constraints_csr(t, x, xd, xdd)``     ``(q, H, q_dot, H_dot, q_ddot, H_ddot)``, H, Ḣ, Ḧ CSR
=====================================  =================================================

The compiled kernels compute only the values on the patterns (``<name>_dynamics_csr``, …, in C);
the reference gathers them from its dense arrays.

The returned arrays are the object's own buffers: the next call overwrites them (the CSR
matrices are made once and share the value buffers).  Parameters live
in ``p`` (order ``param_names``); change them with :meth:`set_params` at any time, no rebuild.
The model's inputs live in ``u`` (order ``input_names``; 0 until set): dynamics and outputs use
the values there (:meth:`set_inputs`, or write ``u`` in place; docs/inputs.md).

Model and data apart (issue 37.5): a run (``simulate``, ``linearize``, ``equilibrium``, …) works
on :meth:`~KernelsBase.for_run`'s copy, with its own ``p``, ``u`` and buffers over the same
functions, so it never changes the object it was given, and threads can share one Kernels.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Mapping

import numpy as np

from .model import Model

__all__ = ["KernelsBase", "LambdifyKernels", "Kernels", "Drives", "for_run"]


class KernelsBase:
    """Shape information, parameters and output buffers shared by both kernel implementations."""

    def __init__(self, model: Model):
        # what a run only reads: names, shapes, patterns, the compiled or lambdified functions;
        # the data a run writes (p, u, the output buffers) is :meth:`_new_data`'s, one set per
        # object, and :meth:`for_run` gives each run its own
        self.model = model
        self.name = model.name
        self.model_hash = model.hash
        self.coord_names = model.coord_names
        self.param_names = model.param_names
        self.output_names = model.output_names
        self.input_names = model.input_names
        self.n_in = len(self.input_names)
        self.n, self.m, self.n_out = model.n, model.m, len(model.outputs)
        self.has_potential = model.V is not None
        self.f_t_is_zero = False        # set by the implementations
        self.reaction_names = tuple(model.reactions)   # Model.reactions (docs/reactions.md)
        self.event_names = tuple(model.events)          # Model.events (docs/events.md)
        self.impact_names = tuple(k for k, e in model.events.items()
                                  if e.restitution is not None)   # (docs/events.md, impacts)
        self._shared: dict = {}         # made on first use, shared with every for_run copy

    def _new_data(self, p) -> None:
        """This object's own parameters ``p`` (a copy of ``p``), inputs ``u`` (0) and output
        buffers (with the CSR matrices on them); the implementations end their ``__init__``
        with it (after the patterns)."""
        n, m = self.n, self.m
        self.p = np.array(p, dtype=float)
        self.u = np.zeros(self.n_in)
        self.M = np.zeros((n, n))
        self.f = np.zeros(n)
        self.K = np.zeros((n, n))
        self.C = np.zeros((n, n))
        self.q = np.zeros(m)
        self.H = np.zeros((m, n))
        self.q_dot = np.zeros(m)
        self.H_dot = np.zeros((m, n))
        self.q_ddot = np.zeros(m)
        self.H_ddot = np.zeros((m, n))
        self.E = np.zeros(2)
        self.y = np.zeros(self.n_out)
        self.f_t = np.zeros(n)
        self.r = np.zeros(len(self.reaction_names))
        self.g = np.zeros(len(self.event_names))
        self.G = np.zeros((len(self.impact_names), n))
        import scipy.sparse as sps

        def csr(pattern, rows):
            ptr, ind = pattern
            return sps.csr_matrix((np.zeros(ind.size), ind, ptr), shape=(rows, n), copy=False)
        self.H_csr, self.H_dot_csr, self.H_ddot_csr = (csr(self.H_pattern, m) for _ in range(3))
        self.M_csr, self.K_csr, self.C_csr = (csr(self.M_pattern, n) for _ in range(3))

    def for_run(self, params: Mapping[str, float] | None = None) -> "KernelsBase":
        """These kernels with data of their own (issue 37.5: model and data apart): the same
        compiled (or lambdified) functions and patterns, and their own parameters (this object's,
        then ``params`` by name), inputs (0) and output buffers.  A run writes only there, so
        this object is never changed by a run and two threads can run it at once."""
        run = copy.copy(self)
        run._new_data(self.p)
        if params:
            run.set_params(dict(params))
        return run

    def _set_patterns(self, H_indptr, H_indices, M_indptr, M_indices, col_order) -> None:
        """The CSR patterns (fixed; the CSR matrices on them are each object's own data)."""
        n, m = self.n, self.m
        i32 = lambda v: np.array(v, dtype=np.int32)  # noqa: E731
        self.H_pattern = (i32(H_indptr)[:m + 1], i32(H_indices)[:H_indptr[m]])
        self.M_pattern = (i32(M_indptr)[:n + 1], i32(M_indices)[:M_indptr[n]])
        self.col_order = i32(col_order)[:n]
        self.nnz_H, self.nnz_M = int(H_indptr[m]), int(M_indptr[n])
        # (row, column) of every pattern entry: the dense reference gathers its values there
        self._H_ij = (np.repeat(np.arange(m), np.diff(self.H_pattern[0])), self.H_pattern[1])
        self._M_ij = (np.repeat(np.arange(n), np.diff(self.M_pattern[0])), self.M_pattern[1])

    def dynamics_csr(self, t, x, xd, xdd, lam):
        """``(M, f, K, C)`` with M, K, C as CSR matrices on ``M_pattern`` (module docstring)."""
        M, f, K, C = self.dynamics(t, x, xd, xdd, lam)
        for dense, sp_ in ((M, self.M_csr), (K, self.K_csr), (C, self.C_csr)):
            sp_.data[:] = dense[self._M_ij]
        return self.M_csr, f, self.K_csr, self.C_csr

    def constraints_csr(self, t, x, xd, xdd):
        """``(q, H, q_dot, H_dot, q_ddot, H_ddot)`` with H, Ḣ, Ḧ as CSR matrices on
        ``H_pattern`` (module docstring)."""
        q, H, q_dot, H_dot, q_ddot, H_ddot = self.constraints(t, x, xd, xdd)
        for dense, sp_ in ((H, self.H_csr), (H_dot, self.H_dot_csr), (H_ddot, self.H_ddot_csr)):
            sp_.data[:] = dense[self._H_ij]
        return q, self.H_csr, q_dot, self.H_dot_csr, q_ddot, self.H_ddot_csr

    # -- parameters ------------------------------------------------------------------------------
    def set_params(self, values: Mapping[str, float] | None = None, **kw) -> None:
        """Set parameters by name: ``k.set_params(T0=9.0)``; unknown names raise KeyError."""
        values = dict(values or {}, **kw)
        for key, val in values.items():
            if key not in self.param_names:
                raise KeyError(f"model {self.name!r} has no parameter {key!r}; "
                               f"it has {list(self.param_names)}")
            val = float(val)
            if not np.isfinite(val):
                raise ValueError(f"parameter {key!r} must be finite, got {val}")
            self.p[self.param_names.index(key)] = val

    def share_inputs(self, u: np.ndarray) -> None:
        """Read the inputs from ``u``, another Kernels' buffer (a run's closed-contact model,
        symgen.contact: the run's InputValues write the first one's ``u``)."""
        self.u = u

    def params(self) -> dict[str, float]:
        return {k: float(v) for k, v in zip(self.param_names, self.p)}

    def set_inputs(self, values: Mapping[str, float] | None = None, **kw) -> None:
        """Set inputs by name (``k.set_inputs(T_motor=2.0)``), in place in ``u``."""
        for key, val in dict(values or {}, **kw).items():
            if key not in self.input_names:
                raise KeyError(f"model {self.name!r} has no input {key!r}; "
                               f"it has {list(self.input_names)}")
            self.u[self.input_names.index(key)] = float(val)

    # -- the interface ---------------------------------------------------------------------------
    def dynamics(self, t, x, xd, xdd, lam):
        raise NotImplementedError

    def constraints(self, t, x, xd, xdd):
        raise NotImplementedError

    def energy(self, t, x, xd):
        raise NotImplementedError

    def outputs(self, t, x, xd):
        raise NotImplementedError

    def dynamics_t(self, t, x, xd, lam):
        """f_t = ∂f/∂t + (∂H/∂t)ᵀλ at fixed x, ẋ, λ, u (``Derived.f_t``), into ``f_t``."""
        raise NotImplementedError

    def reactions(self, t, x, xd, xdd, lam):
        """The joints' reactions (``reaction_names``) into ``r``."""
        raise NotImplementedError

    def events(self, t, x, xd):
        """The events' functions g (``event_names``, Model.events) into ``g``."""
        raise NotImplementedError

    def impacts(self, t, x):
        """The impacts' gap gradients ∂g/∂x (a row per ``impact_names``) into ``G``."""
        raise NotImplementedError

    @property
    def drives(self) -> "Drives":
        """The driven joints' power (:class:`Drives`), made on first use."""
        d = self._shared.get("drives")
        if d is None:
            d = self._shared["drives"] = Drives(self.model)
        return d

    def drive_power(self, t, X, LAM) -> np.ndarray:
        """:meth:`Drives.power` with this object's parameters."""
        return self.drives.power(t, X, LAM, self.p)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, n={self.n}, m={self.m}, n_out={self.n_out})"


class Drives:
    """The work of the driven joints (rheonomic rows, ∂q/∂t ≠ 0) on the system: with
    M ẍ = f + Hᵀλ and H ẋ + ∂q/∂t = 0 the rows' power is ẋᵀHᵀλ = −λᵀ ∂q/∂t, summed per joint
    (rows grouped by :func:`~symgen.names.joint_of`; docs/energy-balance.md).  ``names``: the
    result's ``work:<joint>`` columns; calling it gives the powers of k states at once (numpy on
    ``∂q/∂t`` lambdified once: no per-row Python)."""

    def __init__(self, model: Model):
        import sympy as sp

        from .names import POWER_PREFIX, WORK_PREFIX, joint_of
        from .symbols import t as tsym

        rows = [i for i, e in enumerate(model.q) if sp.sympify(e).has(tsym)]
        groups: dict[str, list[int]] = {}
        for i in rows:
            groups.setdefault(joint_of(model.constraint_names[i]), []).append(i)
        taken = {o[len(POWER_PREFIX):] for o in model.output_names if o.startswith(POWER_PREFIX)}
        self.joints = tuple(j if j not in taken else f"{j}_drive" for j in groups)
        self.names = tuple(WORK_PREFIX + j for j in self.joints)
        self.rows = [np.asarray(g, dtype=np.intp) for g in groups.values()]
        self._rows = np.asarray(rows, dtype=np.intp)
        tr = sp.Dummy("t", real=True)        # (as derive: |t|, sign(t) differentiate as reals)
        q_t = [sp.diff(sp.sympify(model.q[i]).xreplace({tsym: tr}), tr).xreplace({tr: tsym})
               for i in rows]
        self._q_t = (sp.lambdify([tsym, list(model.coords), list(model.params)], q_t,
                                 modules="numpy", cse=True) if rows else None)
        self._p = model.param_values

    def __len__(self) -> int:
        return len(self.names)

    def power(self, t, X, LAM, p=None) -> np.ndarray:
        """(k × joints) powers −Σ λ_i ∂q_i/∂t at k states (t: k times, X: k × n, LAM: k × m;
        ``p``: the parameters, default the model's)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        X, LAM = np.atleast_2d(X), np.atleast_2d(LAM)
        k = len(t)
        P = np.zeros((k, len(self.names)))
        if not len(self.names) or not k:
            return P
        q_t = np.empty((k, self._rows.size))
        vals = self._q_t(t, list(X.T), list(self._p if p is None else p))
        for c, v in enumerate(vals):
            q_t[:, c] = np.broadcast_to(np.asarray(v, dtype=float), (k,))
        pos = {int(r): c for c, r in enumerate(self._rows)}
        for g, rows in enumerate(self.rows):
            cols = [pos[int(r)] for r in rows]
            P[:, g] = -np.einsum("ij,ij->i", LAM[:, rows], q_t[:, cols])
        return P


class LambdifyKernels(KernelsBase):
    """The derived terms evaluated by ``sympy.lambdify`` (reference; slow but independent of C)."""

    def __init__(self, model: Model, derived=None):
        import sympy as sp

        from .derived import derive, sparsity

        super().__init__(model)
        d = derived if derived is not None else derive(model)
        sp_ = sparsity(d)
        self._set_patterns(sp_.H_indptr, sp_.H_indices, sp_.M_indptr, sp_.M_indices,
                           sp_.col_order)
        xs, vs, xdd, lam = list(model.coords), list(model.velocities), list(d.xdd), list(d.lam)
        ps, us = list(model.params), list(model.inputs)
        from .model import t as tsym
        args = [tsym, xs, vs, xdd, lam, ps, us]

        def lam_(*exprs):
            return sp.lambdify(args, list(exprs), modules="numpy", cse=True)

        self._dyn = lam_(d.M, d.f, d.K, d.C)
        self._con = lam_(d.q, d.H, d.q_dot, d.H_dot, d.q_ddot, d.H_ddot)
        self._en = lam_(d.T, d.V)
        self._out = lam_(d.outputs)
        self._ft = lam_(d.f_t)
        self._lam_reactions = lambda: lam_(d.reactions)    # lambdified on first use
        self._ev = lam_(d.events)
        self._imp = lam_(d.impacts)
        self.f_t_is_zero = all(e == 0 for e in d.f_t)
        self._zero_m = np.zeros(self.m)
        self._zero_n = np.zeros(self.n)
        self._new_data(model.param_values)

    def _args(self, t, x, xd, xdd=None, lam=None):
        return (float(t), list(np.asarray(x, float)), list(np.asarray(xd, float)),
                list(self._zero_n if xdd is None else np.asarray(xdd, float)),
                list(self._zero_m if lam is None else np.asarray(lam, float)), list(self.p),
                list(self.u))

    @staticmethod
    def _fill(dst, value):
        dst[...] = np.asarray(value, dtype=float).reshape(dst.shape)

    def dynamics(self, t, x, xd, xdd, lam):
        M, f, K, C = self._dyn(*self._args(t, x, xd, xdd, lam))
        for dst, val in ((self.M, M), (self.f, f), (self.K, K), (self.C, C)):
            self._fill(dst, val)
        return self.M, self.f, self.K, self.C

    def constraints(self, t, x, xd, xdd):
        vals = self._con(*self._args(t, x, xd, xdd))
        bufs = (self.q, self.H, self.q_dot, self.H_dot, self.q_ddot, self.H_ddot)
        for dst, val in zip(bufs, vals):
            if dst.size:
                self._fill(dst, val)
        return bufs

    def energy(self, t, x, xd):
        T, V = self._en(*self._args(t, x, xd))
        return float(T), float(V)

    def outputs(self, t, x, xd):
        if self.n_out:
            (y,) = self._out(*self._args(t, x, xd))
            self._fill(self.y, y)
        return self.y

    def dynamics_t(self, t, x, xd, lam):
        if self.n:
            (f_t,) = self._ft(*self._args(t, x, xd, None, lam))
            self._fill(self.f_t, f_t)
        return self.f_t

    def reactions(self, t, x, xd, xdd, lam):
        if self.r.size:
            re = self._shared.get("reactions")
            if re is None:
                re = self._shared["reactions"] = self._lam_reactions()
            (r,) = re(*self._args(t, x, xd, xdd, lam))
            self._fill(self.r, r)
        return self.r

    def events(self, t, x, xd):
        if self.g.size:
            (g,) = self._ev(*self._args(t, x, xd))
            self._fill(self.g, g)
        return self.g

    def impacts(self, t, x):
        if self.G.size:
            (G,) = self._imp(*self._args(t, x, self._zero_n))
            self._fill(self.G, G)
        return self.G


class Kernels(KernelsBase):
    """The compiled kernels of one model, what :func:`symgen.build` returns: ``ffi``/``lib`` of the
    loaded cffi module.  ``set_params`` writes into ``p`` in place, so the C pointer stays valid;
    :meth:`for_run` gives a run its own ``p``, ``u``, buffers and pointers."""

    def __init__(self, model: Model, ffi, lib, path: Path | None = None):
        super().__init__(model)
        self.ffi, self.lib, self.path = ffi, lib, path
        prefix = model.name
        self._c_dynamics = getattr(lib, f"{prefix}_dynamics")
        self._c_constraints = getattr(lib, f"{prefix}_constraints")
        self._c_energy = getattr(lib, f"{prefix}_energy")
        self._c_outputs = getattr(lib, f"{prefix}_outputs")
        self._c_dynamics_t = getattr(lib, f"{prefix}_dynamics_t")
        self._c_reactions = getattr(lib, f"{prefix}_reactions")
        self._c_events = getattr(lib, f"{prefix}_events")
        self._c_impacts = getattr(lib, f"{prefix}_impacts")
        self.f_t_is_zero = bool(getattr(lib, f"{prefix.upper()}_F_T_IS_ZERO"))
        self._zeros_m = np.zeros(max(self.m, 1))
        n, m = self.n, self.m
        table = lambda what, size: list(ffi.unpack(getattr(lib, f"{prefix}_{what}"), size))  # noqa: E731
        H_indptr, M_indptr = table("H_indptr", m + 1), table("M_indptr", n + 1)
        self._set_patterns(H_indptr, table("H_indices", max(H_indptr[m], 1)), M_indptr,
                           table("M_indices", max(M_indptr[n], 1)), table("col_order", max(n, 1)))
        self._c_dynamics_csr = getattr(lib, f"{prefix}_dynamics_csr")
        self._c_constraints_csr = getattr(lib, f"{prefix}_constraints_csr")
        self._new_data(model.param_values)

    def _new_data(self, p) -> None:
        """The buffers (KernelsBase._new_data) and their C pointers, made once per object."""
        super()._new_data(p)
        buf = self._out_ptr
        self._ft_ptr = buf(self.f_t)
        self._dyn_out = tuple(buf(a) for a in (self.M, self.f, self.K, self.C))
        self._con_out = tuple(buf(a) for a in (self.q, self.H, self.q_dot, self.H_dot, self.q_ddot,
                                                 self.H_ddot))
        self._E_ptr = buf(self.E)
        self._y_ptr = buf(self.y)
        self._r_ptr = buf(self.r)
        self._g_ptr = buf(self.g)
        self._G_ptr = buf(self.G)
        self._p_ptr = buf(self.p)
        self._u_ptr = buf(self.u)
        self._ptr_cache: dict = {}
        self._dyn_csr_out = tuple(buf(a) for a in (self.M_csr.data, self.f, self.K_csr.data,
                                                   self.C_csr.data))
        self._con_csr_out = tuple(buf(a) for a in (self.q, self.H_csr.data, self.q_dot,
                                                   self.H_dot_csr.data, self.q_ddot,
                                                   self.H_ddot_csr.data))

    def share_inputs(self, u: np.ndarray) -> None:
        super().share_inputs(u)
        self._u_ptr = self._out_ptr(u)

    def _out_ptr(self, a: np.ndarray):
        # zero-size arrays still need a valid pointer; the C never touches them
        if a.size == 0:
            return self.ffi.new("double[1]")
        return self.ffi.from_buffer("double[]", a, require_writable=True)

    def _in(self, a, size: int, what: str):
        # A stepper passes the same state buffers on every call: reuse their C pointers (the cache
        # holds the array itself, so identity cannot be recycled), no allocation per call.
        cached = self._ptr_cache.get(what)
        if cached is not None and cached[0] is a:
            return cached[1]
        if type(a) is not np.ndarray or a.dtype != np.float64 or not a.flags.c_contiguous:
            a_c = np.ascontiguousarray(a, dtype=np.float64)
        else:
            a_c = a
        if a_c.size != size:
            raise ValueError(f"{what} has {a_c.size} entries; model {self.name!r} expects {size}")
        ptr = self.ffi.from_buffer("double[]", a_c if size else self._zeros_m)
        if a_c is a:
            self._ptr_cache[what] = (a, ptr)
        return ptr

    def dynamics(self, t, x, xd, xdd, lam):
        n = self.n
        self._c_dynamics(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"),
                         self._in(xdd, n, "xdd"), self._in(lam, self.m, "lam"), self._p_ptr,
                         self._u_ptr, *self._dyn_out)
        return self.M, self.f, self.K, self.C

    def constraints(self, t, x, xd, xdd):
        n = self.n
        self._c_constraints(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"),
                            self._in(xdd, n, "xdd"), self._p_ptr, *self._con_out)
        return self.q, self.H, self.q_dot, self.H_dot, self.q_ddot, self.H_ddot

    def dynamics_csr(self, t, x, xd, xdd, lam):
        n = self.n
        self._c_dynamics_csr(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"),
                             self._in(xdd, n, "xdd"), self._in(lam, self.m, "lam"), self._p_ptr,
                             self._u_ptr, *self._dyn_csr_out)
        return self.M_csr, self.f, self.K_csr, self.C_csr

    def constraints_csr(self, t, x, xd, xdd):
        n = self.n
        self._c_constraints_csr(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"),
                                self._in(xdd, n, "xdd"), self._p_ptr, *self._con_csr_out)
        return self.q, self.H_csr, self.q_dot, self.H_dot_csr, self.q_ddot, self.H_ddot_csr

    def energy(self, t, x, xd):
        n = self.n
        self._c_energy(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"), self._p_ptr,
                       self._E_ptr)
        return float(self.E[0]), float(self.E[1])

    def dynamics_t(self, t, x, xd, lam):
        n = self.n
        self._c_dynamics_t(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"),
                           self._in(lam, self.m, "lam"), self._p_ptr, self._u_ptr, self._ft_ptr)
        return self.f_t

    def reactions(self, t, x, xd, xdd, lam):
        n = self.n
        self._c_reactions(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"),
                          self._in(xdd, n, "xdd"), self._in(lam, self.m, "lam"), self._p_ptr,
                          self._u_ptr, self._r_ptr)
        return self.r

    def reaction_rows(self, T, X, XD, XDD, LAM, U=None) -> np.ndarray:
        """(N, n_r) reactions at N rows (``U``: each row's inputs, default this object's u): one
        C call a row on pointers into the arrays (no buffer conversion a row: a recorded run's
        columns cost about a microsecond a row)."""
        N, n, m = len(T), self.n, self.m
        out = np.zeros((N, len(self.reaction_names)))
        if not N or not out.shape[1]:
            return out
        c = lambda a, k: np.ascontiguousarray(np.reshape(a, (N, k)), dtype=np.float64)  # noqa: E731
        arrs = [c(X, n), c(XD, n), c(XDD, n), c(LAM, m)]
        ptr = self.ffi.from_buffer
        px, pxd, pxdd = (ptr("double[]", a) for a in arrs[:3])
        plam = ptr("double[]", arrs[3] if m else self._zeros_m)
        nu = self.u.size
        Uc = c(U, nu) if U is not None and nu else None
        pu = ptr("double[]", Uc) if Uc is not None else None
        pr, nr, T = ptr("double[]", out, require_writable=True), out.shape[1], np.asarray(T, float)
        f, pp, u0 = self._c_reactions, self._p_ptr, self._u_ptr
        for i in range(N):
            f(float(T[i]), px + i * n, pxd + i * n, pxdd + i * n, plam + i * m if m else plam,
              pp, pu + i * nu if pu is not None else u0, pr + i * nr)
        return out

    def outputs(self, t, x, xd):
        n = self.n
        self._c_outputs(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"), self._p_ptr,
                        self._u_ptr, self._y_ptr)
        return self.y

    def events(self, t, x, xd):
        n = self.n
        self._c_events(float(t), self._in(x, n, "x"), self._in(xd, n, "xd"), self._p_ptr,
                       self._u_ptr, self._g_ptr)
        return self.g

    def impacts(self, t, x):
        self._c_impacts(float(t), self._in(x, self.n, "x"), self._p_ptr, self._G_ptr)
        return self.G


def for_run(kernels, params: Mapping[str, float] | None = None):
    """``kernels.for_run(params)``: the run's own data (KernelsBase.for_run); a kernels-like
    object without it is used as it is, and then takes no ``params``."""
    if hasattr(kernels, "for_run"):
        return kernels.for_run(params)
    if params:
        raise TypeError(f"params= needs kernels with their own data ({type(kernels).__name__} "
                        "has no for_run): set the parameters on the object before the call")
    return kernels
