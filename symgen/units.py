"""Units of a model's quantities as plain strings ("m", "rad/s", "N·m"; "" when not given).

:attr:`symgen.Model.units` maps each kind of quantity to {name: unit}: ``coords``,
``velocities`` (by velocity name; a coordinate's unit u gives ``u/s`` unless given), ``outputs``
and ``params``, each holding only the names that have a unit.  A model takes them flat, name →
unit (a name of several kinds gets the unit in each), or by kind; the builders fill them in SI.
A run's result carries them by its arrays (:func:`result_units`: ``x``, ``xd``, ``xdd``,
``outputs`` with the ``work:`` outputs, ``params``) in ``meta["units"]``, the CSV header and the
plots.  No unit algebra: a unit is a label.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from .names import POWER_PREFIX, WORK_PREFIX, ModelError, check_name

__all__ = ["KINDS", "KeptUnits", "normalize_units", "rate", "result_units", "work_unit", "label"]

#: The kinds of named quantities a model gives units for (a dict per kind: more kinds can come).
KINDS = ("coords", "velocities", "outputs", "params")


def rate(unit: str) -> str:
    """The unit of a quantity's time derivative: m → m/s, m/s → m/s², "" → ""."""
    if not unit:
        return ""
    return unit + "²" if unit.endswith("/s") else f"{unit}/s"


def work_unit(power_unit: str) -> str:
    """The unit of the work integrated from a power in ``power_unit`` (W → J)."""
    return {"W": "J", "": ""}.get(power_unit, f"{power_unit}·s")


def label(name: str, unit: str) -> str:
    """``name [unit]``, or the name alone without a unit."""
    return f"{name} [{unit}]" if unit else name


class KeptUnits(dict):
    """{kind: {name: unit}} carried over from a model (``Model.replace``, pickling): the names
    the new model no longer has are dropped instead of refused."""


def _check_unit(name: str, unit) -> str:
    if not isinstance(unit, str):
        raise ModelError(f"the unit of {name!r} must be a string, got {unit!r}")
    if unit:
        check_name(unit, f"unit of {name!r}", max_len=64)
    if any(ch in unit for ch in "[],"):
        raise ModelError(f"the unit {unit!r} of {name!r} may not hold '[', ']' or ','")
    return unit


def normalize_units(units, names: Mapping[str, tuple]) -> Mapping:
    """The read-only {kind: {name: unit}} of ``units`` (flat name → unit, or by kind) for the
    model's ``names`` {kind: names}; a name the model does not have is a ModelError (dropped
    from :class:`KeptUnits`)."""
    have = {kind: set(v) for kind, v in names.items()}
    kept = isinstance(units, KeptUnits)
    units = dict(units or {})
    if units and all(isinstance(v, Mapping) for v in units.values()):       # by kind
        unknown = sorted(set(units) - set(names))
        if unknown and not kept:
            raise ModelError(f"units: unknown kind(s) {unknown}; kinds are {list(names)}")
        items = [(kind, k, v) for kind, sub in units.items() if kind in names
                 for k, v in sub.items()]
    else:                                                                    # flat
        items = [(kind, k, v) for k, v in units.items() for kind in names if k in have[kind]]
        missing = [k for k in units if not any(k in h for h in have.values())]
        if missing:
            raise ModelError(f"units: {missing[0]!r} is not a coordinate, velocity, output or "
                             "parameter of the model")
    out: dict[str, dict] = {kind: {} for kind in names}
    for kind, k, v in items:
        if k not in have[kind]:
            if kept:
                continue
            raise ModelError(f"units: the model has no {kind} name {k!r}")
        if _check_unit(k, v):
            out[kind][k] = v
    if "coords" in names and "velocities" in names:    # a coordinate's unit per second
        for c, v in zip(names["coords"], names["velocities"]):
            if c in out["coords"] and v not in out["velocities"]:
                out["velocities"][v] = rate(out["coords"][c])
    return MappingProxyType({kind: MappingProxyType(d) for kind, d in out.items()})


def result_units(model, output_names) -> dict:
    """The units of a result's columns by array (``x``, ``xd``, ``xdd``, ``outputs``,
    ``params``), for ``meta["units"]``; {} without a model or units."""
    units = getattr(model, "units", None)
    if not units:
        return {}
    cu, vu, ou = units.get("coords", {}), units.get("velocities", {}), units.get("outputs", {})
    out = {
        "x": {c: cu[c] for c in model.coord_names if c in cu},
        "xd": {c: vu[v.name] for c, v in zip(model.coord_names, model.velocities)
               if v.name in vu},
        "xdd": {c: rate(vu[v.name]) for c, v in zip(model.coord_names, model.velocities)
                if v.name in vu},
        "outputs": {o: ou[o] for o in output_names if o in ou},
        "params": dict(units.get("params", {})),
    }
    for o in output_names:
        if o.startswith(WORK_PREFIX):
            unit = work_unit(ou.get(POWER_PREFIX + o[len(WORK_PREFIX):], ""))
            if unit:
                out["outputs"][o] = unit
    return {k: v for k, v in out.items() if v}
