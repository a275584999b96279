"""The named joints' reactions of a planar system (``Model.reactions``; docs/reactions.md)."""
from __future__ import annotations

import sympy as sp

from ..model import multipliers
from .planar_body import sub


def joint_reactions(q, joint_rows, sides) -> dict:
    """``<joint>.Fx, .Fy, .Mz``: body a's force on b and moment about the joint's point from
    Q = H_Rᵀλ_R on b's (x, y, θ): F = Q_xy, M = Q_θ − (r_P − p_b) × F (docs/reactions.md).
    ``joint_rows``: joint → its rows of q; ``sides``: joint → (body a, body b, b's point)."""
    lam = multipliers(len(q))
    out = {}
    for jname, rows in joint_rows.items():
        a, b, sb = sides[jname]
        sign, body = (1, b) if not b.is_ground else (-1, a)
        Q = [sign * sp.Add(*[sp.diff(q[i], c) * lam[i] for i in rows]) for c in body.coords]
        arm = b.arm(sb) if not b.is_ground else sub(b.position(sb), a.position((0, 0)))
        out[f"{jname}.Fx"], out[f"{jname}.Fy"] = Q[0], Q[1]
        out[f"{jname}.Mz"] = sp.expand(Q[2] - (arm[0] * Q[1] - arm[1] * Q[0]))  # pin: 0
    return out
