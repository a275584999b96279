"""A Result's located events (docs/events.md), SciPy's ``t_events``/``y_events`` as
``Result.t_events``, ``x_events``, ``xd_events``: one array per event (the model's events, then
the callables of ``simulate(events=)``), read from ``meta["events"]``, which the Result's files
keep (JSON floats: exact)."""
from __future__ import annotations

import numpy as np

__all__ = ["EventResults"]


class EventResults:
    """The event properties of :class:`~symgen.Result` (a mixin; ``meta``, ``coords``)."""

    def _events_meta(self) -> dict:
        return (getattr(self, "meta", None) or {}).get("events") or {}

    @property
    def event_names(self) -> tuple:
        """The run's events in the order of ``t_events`` (the model's, then the callables')."""
        return tuple(self._events_meta().get("names", ()))

    @property
    def t_events(self) -> list:
        """Each event's times, an array per event (empty where it did not occur)."""
        return [np.array(ts, dtype=float) for ts in self._events_meta().get("t", ())]

    @property
    def x_events(self) -> list:
        """Each event's coordinates there, an (k, n) array per event (on the constraints)."""
        return self._states("x")

    @property
    def xd_events(self) -> list:
        """Each event's velocities there, an (k, n) array per event."""
        return self._states("xd")

    def _states(self, key: str) -> list:
        n = len(self.coords)
        return [np.array(v, dtype=float).reshape(-1, n) for v in self._events_meta().get(key, ())]

    # -- impacts (docs/events.md "Impacts"): meta["impacts"] --------------------------------
    def _impacts_meta(self) -> dict:
        return (getattr(self, "meta", None) or {}).get("impacts") or {}

    @property
    def t_impacts(self) -> np.ndarray:
        """The times of the run's impacts (each may close several contacts at once)."""
        return np.array(self._impacts_meta().get("t", ()), dtype=float)

    @property
    def impulses(self) -> list:
        """Each impact's normal impulses, {event name: impulse} (≥ 0 pushing the gap open)."""
        m = self._impacts_meta()
        return [dict(zip(a, p)) for a, p in zip(m.get("active", ()), m.get("impulse", ()))]

    @property
    def impact_losses(self) -> np.ndarray:
        """The kinetic energy each impact took, ½ẋ⁻ᵀMẋ⁻ − ½ẋ⁺ᵀMẋ⁺ (≥ 0 for e ≤ 1)."""
        return np.array(self._impacts_meta().get("loss", ()), dtype=float)

    @property
    def contacts(self) -> list:
        """The persistent contacts' transitions in time order (docs/events.md "Persistent
        contact"): dicts with ``t``, ``name``, ``kind`` ("closed"/"opened"), ``force`` (the
        normal force there, > 0 compressive) and, for a closing, the force's range over the
        steps it stayed closed (``force_min``, ``force_max``, ``force_last`` at ``t_last``)."""
        return [dict(r) for r in (getattr(self, "meta", None) or {}).get("contacts") or ()]
