"""The joint reactions of a run (:meth:`symgen.Result.reactions`) and the constraint rows'
generalized forces (:meth:`symgen.Result.generalized_forces`).

With M ẍ = f + Hᵀλ, the rows R of one joint exert the generalized force H_Rᵀ λ_R on the
coordinates.  Rows are grouped by their name (``Model.constraint_names``: the builders name them
``<joint>.<component>``, so the rows ``pin.x`` and ``pin.y`` are the joint ``pin``); unnamed rows
``q[i]`` are each their own group.

A model from the builders also carries each named joint's reaction in engineering terms
(``Model.reactions``: ``<joint>.Fx`` …, expressions of t, x, ẋ, ẍ and λ): the force and moment
that body a (the joint's first body) exerts on body b, in global axes, the moment about the
joint's point; docs/reactions.md derives them.  They are evaluated here at every recorded row.
"""
from __future__ import annotations

import numpy as np

from .names import REACTION_PREFIX, joint_of

__all__ = ["reactions", "generalized_forces", "joint_of", "reaction_values", "reaction_columns",
           "REACTION_PREFIX"]


def _context(result, model):
    """The model that made ``result`` (checked by hash) and the run's parameter values."""
    from .loader import model_of

    model = model_of(result, model, hint="give the model: result.reactions(model)")
    params = dict(model.params)
    given = (result.meta or {}).get("parameters") or {}
    by_name = {p.name: p for p in params}
    for k, v in dict(given).items():
        if k in by_name:
            params[by_name[k]] = float(v)
    return model, params


def reaction_values(model, params, t, x, xd, xdd, lam, u=None) -> dict:
    """{name: (N,) array} of ``model.reactions`` at the rows (t: (N,), x, xd, xdd: (N, n),
    lam: (N, m), u: (N, n_u) or None), by ``sympy.lambdify`` (one CSE over all of them)."""
    import sympy as sp

    from .model import multipliers, t as t_sym

    names = list(model.reactions)
    if not names:
        return {}
    syms = [t_sym, *model.coords, *model.velocities, *model.accelerations,
            *multipliers(model.m), *model.inputs]
    exprs = [model.reactions[k].xreplace(dict(params)) for k in names]
    fn = sp.lambdify(syms, exprs, modules="numpy", cse=True)
    N = len(t)
    u = np.zeros((N, len(model.inputs))) if u is None or not len(model.inputs) else u
    cols = [np.asarray(t, float), *np.asarray(x, float).T, *np.asarray(xd, float).T,
            *np.asarray(xdd, float).T, *np.asarray(lam, float).reshape(N, model.m).T,
            *np.asarray(u, float).reshape(N, len(model.inputs)).T]
    vals = fn(*cols)
    return {k: np.broadcast_to(np.asarray(v, float), (N,)).copy() for k, v in zip(names, vals)}


def reaction_columns(kernels, arrays: dict) -> tuple:
    """(names ``reaction:<joint>.<component>``, (N, n_r) values) of the kernels' reactions at the
    recorded rows ``arrays`` (t, x, xd, xdd, lam, u: a Recorder's): one kernel call a row, with
    the row's inputs."""
    names = tuple(REACTION_PREFIX + k for k in getattr(kernels, "reaction_names", ()))
    t = arrays["t"]
    vals = np.zeros((len(t), len(names)))
    if not names:
        return names, vals
    u = arrays.get("u")
    if hasattr(kernels, "reaction_rows"):           # (compiled: pointers into the rows)
        return names, kernels.reaction_rows(t, arrays["x"], arrays["xd"], arrays["xdd"],
                                            arrays["lam"], u if u is not None and np.size(u)
                                            else None)
    from .kernels import for_run

    kernels = for_run(kernels) if u is not None else kernels   # (its own u, written a row)
    for i in range(len(t)):
        if u is not None and kernels.u.size:
            kernels.u[:] = u[i]
        vals[i] = kernels.reactions(t[i], arrays["x"][i], arrays["xd"][i], arrays["xdd"][i],
                                    arrays["lam"][i])
    return names, vals


def reactions(result, model=None) -> dict:
    """{joint: {component: (N,) array}} at every recorded row.  For a model with
    ``Model.reactions`` (the builders'): the force and moment body a exerts on body b, global
    axes, moment about the joint's point (planar ``Fx``, ``Fy``, ``Mz``; spatial ``Fx`` … ``Mz``;
    N and N·m).  For a model without: the rows' generalized forces (:func:`generalized_forces`).
    ``model``: the model that made the result (default: the shipped example the result names;
    its hash must match)."""
    model, params = _context(result, model)
    if not model.reactions:
        return generalized_forces(result, model)
    u = getattr(result, "u", None)
    vals = reaction_values(model, params, result.t, result.x, result.xd, result.xdd, result.lam,
                           u if u is not None and np.size(u) else None)
    out: dict[str, dict] = {}
    for name, v in vals.items():
        out.setdefault(joint_of(name), {})[name[len(joint_of(name)) + 1:]] = v
    return out


def generalized_forces(result, model=None) -> dict:
    """{joint: {coordinate: (N,) array}}: H_Rᵀ λ_R of each joint's rows R at every recorded row,
    on every coordinate (zeros included).  ``model`` as for :func:`reactions`."""
    from .jit import as_kernels
    from .kernels import for_run

    meta = result.meta or {}
    model, params = _context(result, model)
    kernels = as_kernels(model)
    names = list(meta.get("constraint_names") or model.constraint_names)
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(names):
        groups.setdefault(joint_of(row), []).append(i)
    N, n = result.x.shape
    G = {j: np.zeros((N, n)) for j in groups}
    kernels = for_run(kernels, {p.name: v for p, v in params.items()})  # the run's parameters
    for r in range(N):
        _, H, *_ = kernels.constraints(result.t[r], result.x[r], result.xd[r], result.xdd[r])
        H = np.asarray(H)
        for j, rows in groups.items():
            G[j][r] = H[rows].T @ result.lam[r, rows]
    coords = list(result.coords)
    return {j: {coords[c]: G[j][:, c] for c in range(n)} for j in groups}
