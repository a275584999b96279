"""Numeric kernels: numpy in, numpy out, into buffers allocated once.

:class:`Kernels` is what :func:`symgen.build` returns (compiled C through cffi).
:class:`LambdifyKernels` evaluates the same derived terms through ``sympy.lambdify``: it is the
independent reference the tests compare the C against, and needs no compiler.

Both share one interface (the steppers rely on nothing else):

=================================  =====================================================
``dynamics(t, x, xd, xdd, lam)``   fills and returns ``(M, f, K, C)``   (n×n, n, n×n, n×n)
``constraints(t, x, xd, xdd)``     fills and returns ``(q, H, q_dot, H_dot, q_ddot, H_ddot)``
                                   (m, m×n, m, m×n, m, m×n)
``energy(t, x, xd)``               returns ``(T, V)`` as floats
``outputs(t, x, xd)``              fills and returns ``y`` (n_out)
=================================  =====================================================

The returned arrays are the object's own buffers: the next call overwrites them.  Parameters live
in ``p`` (order ``param_names``); change them with :meth:`set_params` at any time, no rebuild.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .model import Model

__all__ = ["KernelsBase", "LambdifyKernels", "Kernels"]


class KernelsBase:
    """Shape information, parameters and output buffers shared by both kernel implementations."""

    def __init__(self, model: Model):
        self.model = model
        self.name = model.name
        self.model_hash = model.hash
        self.coord_names = model.coord_names
        self.param_names = model.param_names
        self.output_names = model.output_names
        self.n, self.m, self.n_out = model.n, model.m, len(model.outputs)
        self.has_potential = model.V is not None
        self.p = model.param_values.copy()
        n, m = self.n, self.m
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

    def params(self) -> dict[str, float]:
        return {k: float(v) for k, v in zip(self.param_names, self.p)}

    # -- the interface ---------------------------------------------------------------------------
    def dynamics(self, t, x, xd, xdd, lam):
        raise NotImplementedError

    def constraints(self, t, x, xd, xdd):
        raise NotImplementedError

    def energy(self, t, x, xd):
        raise NotImplementedError

    def outputs(self, t, x, xd):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, n={self.n}, m={self.m}, n_out={self.n_out})"


class LambdifyKernels(KernelsBase):
    """The derived terms evaluated by ``sympy.lambdify`` (reference; slow but independent of C)."""

    def __init__(self, model: Model, derived=None):
        import sympy as sp

        from .derive import derive

        super().__init__(model)
        d = derived if derived is not None else derive(model)
        xs, vs, xdd, lam = list(model.coords), list(model.velocities), list(d.xdd), list(d.lam)
        ps = list(model.params)
        from .model import t as tsym
        args = [tsym, xs, vs, xdd, lam, ps]

        def lam_(*exprs):
            return sp.lambdify(args, list(exprs), modules="numpy", cse=True)

        self._dyn = lam_(d.M, d.f, d.K, d.C)
        self._con = lam_(d.q, d.H, d.q_dot, d.H_dot, d.q_ddot, d.H_ddot)
        self._en = lam_(d.T, d.V)
        self._out = lam_(d.outputs)
        self._zero_m = np.zeros(self.m)
        self._zero_n = np.zeros(self.n)

    def _args(self, t, x, xd, xdd=None, lam=None):
        return (float(t), list(np.asarray(x, float)), list(np.asarray(xd, float)),
                list(self._zero_n if xdd is None else np.asarray(xdd, float)),
                list(self._zero_m if lam is None else np.asarray(lam, float)), list(self.p))

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


# The compiled implementation lives in build.py (it needs cffi); re-exported here for typing.
def __getattr__(name):
    if name == "Kernels":
        from .build import Kernels
        return Kernels
    raise AttributeError(name)
