"""The constraint forces of a run, joint by joint (:meth:`symgen.Result.reactions`).

With M ẍ = f + Hᵀλ, the force the constraint rows R of one joint exert on the coordinates is
H_Rᵀ λ_R.  Rows are grouped by their name (``Model.constraint_names``: the builders name them
``<joint>.<component>``, so the rows ``pin.x`` and ``pin.y`` are the joint ``pin``); unnamed rows
``q[i]`` are each their own group.  The forces are generalized forces on the model's coordinates:
for a planar body in (x, y, θ) the force components and the moment about the body's reference
point (N, N, N·m); for spatial natural coordinates the forces on its points and unit vectors.
H is evaluated at every recorded state with the model's kernels (compiled if cached, else
lambdified).
"""
from __future__ import annotations

import numpy as np

from .names import joint_of

__all__ = ["reactions", "joint_of"]


def reactions(result, model=None, *, tol: float = 0.0) -> dict:
    """{joint: {coordinate: (N,) array}}: H_Rᵀ λ_R of each joint's rows R at every recorded row,
    for the coordinates the joint acts on (a column of H_R not identically zero over the run, or
    above ``tol``).  ``model``: the model that made the result (default: the shipped example the
    result names; its hash must match)."""
    from .jit import as_kernels
    from .loader import model_of

    meta = result.meta or {}
    model = model_of(result, model, hint="give the model: result.reactions(model)")
    kernels = as_kernels(model)
    names = list(meta.get("constraint_names") or model.constraint_names)
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(names):
        groups.setdefault(joint_of(row), []).append(i)
    N, n = result.x.shape
    G = {j: np.zeros((N, n)) for j in groups}
    acts = {j: np.zeros(n, dtype=bool) for j in groups}
    saved = kernels.p.copy()
    try:
        if meta.get("parameters"):                  # the run's parameters
            kernels.set_params(dict(meta["parameters"]))
        for r in range(N):
            _, H, *_ = kernels.constraints(result.t[r], result.x[r], result.xd[r], result.xdd[r])
            H = np.asarray(H)
            for j, rows in groups.items():
                G[j][r] = H[rows].T @ result.lam[r, rows]
                acts[j] |= np.abs(H[rows]).max(axis=0) > tol
    finally:
        kernels.p[:] = saved
    coords = list(result.coords)
    return {j: {coords[c]: G[j][:, c] for c in np.flatnonzero(acts[j])} for j in groups}
