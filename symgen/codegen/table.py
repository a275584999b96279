"""The kernel table: which kernels the C exports, their inputs and outputs in ABI order, and the
one-line documentation of each array.  The single source of the C layout: the header, the cffi
``cdef`` and the kernels' buffers all follow it.
"""
from __future__ import annotations

from typing import Mapping

import sympy as sp

from ..derived import Derived, Sparsity

__all__ = ["kernel_terms", "INPUT_DECL", "KERNEL_DOC", "OUTPUT_DOC"]

INPUT_DECL = {
    "t": "double t",
    "x": "const double *x",
    "xd": "const double *xd",
    "xdd": "const double *xdd",
    "lam": "const double *lam",
    "p": "const double *p",
    "u": "const double *u",
}

KERNEL_DOC = {
    "dynamics": "mass matrix, forces and their linearization",
    "constraints": "constraints and their derivatives",
    "energy": "kinetic and potential energy",
    "outputs": "the model's named outputs",
    "dynamics_t": "explicit time derivative of the forces (the corrected step's jerk)",
    "reactions": "the joints' reactions (force and moment of body a on body b)",
    "events": "the events' functions g, whose zeros the run locates",
    "impacts": "the impacts' gap gradients G = dg/dx (the events with a restitution)",
}

OUTPUT_DOC = {
    "M": "mass matrix M(x)",
    "f": "forces f(x, xd, t, u)",
    "K": "d(M xdd - f - H^T lam)/dx",
    "C": "-df/dxd",
    "q": "constraints q(x, t)",
    "H": "dq/dx",
    "q_dot": "dq/dt = H xd + q_t",
    "H_dot": "d(q_dot)/dx",
    "q_ddot": "d2q/dt2 = H xdd + H_dot xd + q_dot_t",
    "H_ddot": "d(q_ddot)/dx at fixed xd, xdd",
    "E": "[kinetic T, potential V]",
    "y": "outputs",
    "f_t": "df/dt + (dH/dt)^T lam at fixed x, xd, lam, u",
    "r": "reactions, in the order of reaction_names",
    "g": "event functions, in the order of event_names",
    "G": "gap gradients dg/dx, a row per impact (impact_names), n columns",
}


def kernel_terms(d: Derived, sparsity: Sparsity | None = None) -> Mapping[str, list]:
    """The kernels and what each computes, in ABI order: the single source of the C layout.
    The inputs u (after p) enter the kernels whose expressions may use them: dynamics, outputs,
    reactions, events.

    Each kernel lists (inputs, outputs); an output is (name, sympy matrix or scalar), or with
    ``sparsity`` for M, K, C and H, Ḣ, Ḧ (name, matrix, the (i, j) of its CSR pattern): then the
    kernel computes the values on the pattern (``<name>_<kernel>_csr`` in C) and the dense kernel
    scatters them.
    """
    pm = sparsity.positions("M") if sparsity is not None else None
    ph = sparsity.positions("H") if sparsity is not None else None

    def csr(name, mat, pattern):
        return (name, mat) if pattern is None else (name, mat, pattern)
    return {
        "dynamics": (["t", "x", "xd", "xdd", "lam", "p", "u"],
                     [csr("M", d.M, pm), ("f", d.f), csr("K", d.K, pm), csr("C", d.C, pm)]),
        "constraints": (["t", "x", "xd", "xdd", "p"],
                        [("q", d.q), csr("H", d.H, ph), ("q_dot", d.q_dot),
                         csr("H_dot", d.H_dot, ph), ("q_ddot", d.q_ddot),
                         csr("H_ddot", d.H_ddot, ph)]),
        "energy": (["t", "x", "xd", "p"], [("E", sp.ImmutableMatrix([d.T, d.V]))]),
        "outputs": (["t", "x", "xd", "p", "u"], [("y", d.outputs)]),
        "dynamics_t": (["t", "x", "xd", "lam", "p", "u"], [("f_t", d.f_t)]),
        "reactions": (["t", "x", "xd", "xdd", "lam", "p", "u"], [("r", d.reactions)]),
        "events": (["t", "x", "xd", "p", "u"], [("g", d.events)]),
        "impacts": (["t", "x", "p"], [("G", d.impacts)]),
    }
