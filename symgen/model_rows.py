"""What a model's constraint rows carry when ``Model.replace(q=...)`` changes them: the rows'
names and the joints' reactions, whose multipliers λ_i are the rows' (docs/reactions.md)."""
from __future__ import annotations

import sympy as sp

from .names import joint_of
from .symbols import multipliers

__all__ = ["row_map", "names_for", "reactions_for"]


def row_map(old_q, new_rows) -> list:
    """For each new row, the index of an equal old row (each old row used once), or None."""
    old: dict = {}
    for i, e in enumerate(old_q):
        old.setdefault(sp.sympify(e), []).append(i)
    return [old[e].pop(0) if old.get(e) else None for e in map(sp.sympify, new_rows)]


def names_for(model, new_rows) -> tuple:
    """The new rows' names: a row equal to one of ``model``'s keeps its name, any other is
    ``q[i]`` (i its index in the new rows)."""
    names = [None if i is None else model.constraint_names[i]
             for i in row_map(model.q, new_rows)]
    taken = {n for n in names if n is not None}
    for i, n in enumerate(names):
        if n is None:
            n = f"q[{i}]"
            while n in taken:
                n += "'"
            names[i] = n
            taken.add(n)
    return tuple(names)


def reactions_for(model, new_rows) -> dict:
    """``model.reactions`` on the new rows: each λ_i of a kept row renamed to its new index; a
    joint whose reaction uses a row that is gone is left out (all its components)."""
    where = {old: new for new, old in enumerate(row_map(model.q, new_rows)) if old is not None}
    lam_old, lam_new = multipliers(model.m), multipliers(len(new_rows))
    sub = {lam_old[i]: lam_new[j] for i, j in where.items()}
    gone = {joint_of(k) for k, e in model.reactions.items()
            if any(s in set(lam_old) and s not in sub for s in e.free_symbols)}
    return {k: e.xreplace(sub) for k, e in model.reactions.items() if joint_of(k) not in gone}
