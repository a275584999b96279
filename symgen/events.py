"""Events with SciPy's conventions (issue 36 item 1; docs/events.md): the zeros of functions
g(t, x, ẋ) located in every accepted step of both loops.

The run's events are the model's (``Model.events``, compiled into the kernel ``<name>_events``)
then the Python callables of ``simulate(events=[...])`` (attributes ``terminal``, ``direction``
as ``scipy.integrate.solve_ivp``'s).  After each accepted step from t to t + h, g at the step's
end is compared with g at its start: a sign change in the event's direction (g₀ < 0 ≤ g₁ rising,
g₀ > 0 ≥ g₁ falling: a zero exactly at a step's end counts in that step, a zero at the start of
the run does not) is located by the Illinois method on g along the step's quintic Hermite
interpolant (:func:`~symgen.steppers.control.dense_output`) to EVENT_XTOL relative in t; the state
there is the interpolant's projected onto q = q̇ = 0 with ẍ, λ solved
(:func:`~symgen.eval_rows.dense_state`).  Events in one step are taken in time order up to the
first terminal one, which ends the run there (status "event").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .eval_rows import dense_state
from .impacts import RunImpacts
from .input_values import InputError
from .model_events import check_direction, check_terminal
from .runtime_constants import EVENT_MAX_ITER, EVENT_XTOL
from .steppers.control import dense_output

__all__ = ["RunEvents", "EventHit", "illinois"]


def illinois(phi, a: float, fa: float, b: float, fb: float, xtol: float) -> float:
    """A zero of ``phi`` in [a, b] (fa = phi(a), fb = phi(b) of opposite signs, neither 0) by the
    Illinois method (regula falsi with the retained end's value halved): the last point taken
    once the bracket is narrower than ``xtol``, phi is 0 there or no new point fits between."""
    c = b
    for _ in range(EVENT_MAX_ITER):
        c = b - fb * (b - a) / (fb - fa)
        if not (min(a, b) < c < max(a, b)):
            c = 0.5 * (a + b)               # (rounding put the secant's point on an end)
            if not (min(a, b) < c < max(a, b)):
                return b
        fc = phi(c)
        if fc == 0.0:
            return c
        if (fc < 0.0) != (fb < 0.0):        # the zero is between c and b: b is kept as a
            a, fa = b, fb
        else:                               # a is kept again: its value halved (Illinois)
            fa = 0.5 * fa
        b, fb = c, fc
        if abs(b - a) <= xtol:
            return b
    return c


@dataclass
class EventHit:
    """A located event: its index in the run's events, time, projected state (x, ẋ, ẍ, λ,
    residual norms)."""
    index: int
    t: float
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    lam: np.ndarray
    res: np.ndarray


class RunEvents:
    """A run's events: names, directions, terminal flags, g at the last accepted state, and the
    located events (``times``, ``states``: one list per event)."""

    def __init__(self, kernels, callables=()):
        model = getattr(kernels, "model", None)
        spec = getattr(model, "events", {}) or {}
        self.kernels = kernels
        self.n_model = len(getattr(kernels, "event_names", ()))
        self.names = list(getattr(kernels, "event_names", ()))
        self.direction = [spec[k].direction if k in spec else 0 for k in self.names]
        self.terminal = [bool(spec[k].terminal) if k in spec else False for k in self.names]
        self.restitution = [spec[k].restitution if k in spec else None for k in self.names]
        self.callables = list(_checked(callables))
        for i, fn in enumerate(self.callables):
            name = getattr(fn, "__name__", None) or f"event[{i}]"
            self.names.append(name if name not in self.names else f"{name}[{i}]")
            self.direction.append(check_direction(getattr(fn, "direction", 0),
                                                  f"event {name!r}"))
            self.terminal.append(check_terminal(getattr(fn, "terminal", False),
                                                f"event {name!r}"))
            self.restitution.append(None)
        self.sign = np.array(self.direction, dtype=float)
        self.times = [[] for _ in self.names]
        self.states = [[] for _ in self.names]
        self.g = np.zeros(len(self.names))
        self.end = None                 # (index, time) of the terminal event that ended the run
        self.impacts = (RunImpacts(kernels, self.names)
                        if getattr(kernels, "impact_names", ()) else None)
        self.held: set = set()          # events of closed contacts: not located (symgen.contact)
        self.contacts = None            # the run's contact.RunContacts (run.py)

    def __bool__(self) -> bool:
        return bool(self.names)

    def values(self, t: float, x, xd) -> np.ndarray:
        """g of every event at (t, x, ẋ)."""
        g = np.empty(len(self.names))
        if self.n_model:
            g[:self.n_model] = self.kernels.events(t, x, xd)
        for i, fn in enumerate(self.callables):
            g[self.n_model + i] = self._call(i, fn, t, x, xd)
        return g

    def _call(self, i: int, fn, t: float, x, xd) -> float:
        """Callable i's g (the caller's code: what it raises or a value that is no finite number
        is an InputError, which ends the run as failed with its steps kept)."""
        name = self.names[self.n_model + i]
        try:
            v = fn(float(t), np.array(x, dtype=float), np.array(xd, dtype=float))
        except Exception as exc:
            raise InputError(f"event {name!r} raised {type(exc).__name__} at t = {t:.9g}: "
                             f"{exc}") from exc
        try:
            v = float(v)
        except (TypeError, ValueError):
            v = None
        if v is None or not np.isfinite(v):
            raise InputError(f"event {name!r} returned {v!r} at t = {t:.9g}, not a finite number")
        return v

    def start(self, t: float, x, xd) -> None:
        """g at the run's start (a zero there is not an event)."""
        if self:
            self.g = self.values(t, x, xd)

    def step(self, t: float, h: float, start, end, rank_tol: float) -> EventHit | None:
        """The events in the accepted step from t (``start`` = x, ẋ, ẍ) to t + h (``end``),
        located and recorded in time order up to the first terminal one or impact, which is
        returned (the run ends there, or the step is cut there for the impact; None when there
        is none)."""
        if not self:
            return None
        t1 = t + h
        g0, g1 = self.g, self.values(t1, end[0], end[1])
        rising, falling = (g0 < 0.0) & (g1 >= 0.0), (g0 > 0.0) & (g1 <= 0.0)
        active = np.flatnonzero((rising & (self.sign >= 0)) | (falling & (self.sign <= 0)))
        if self.held:
            active = np.array([i for i in active if i not in self.held], dtype=int)
        self.g = g1
        if not active.size:
            return None
        found = sorted((self._locate(int(i), t, h, start, end, g0[i], g1[i]), int(i))
                       for i in active)
        for tau, i in found:
            hit = EventHit(i, tau, *dense_state(self.kernels, tau, t, h, start, end, rank_tol))
            self.located(i, tau, hit.x.copy(), hit.xd.copy())
            if self.terminal[i]:
                self.end = (i, tau)
                return hit
            if self.restitution[i] is not None:
                return hit
        return None

    def restarted(self, t: float, x, xd, closed=()) -> None:
        """g at a restart after an impact (t, x, ẋ⁺); the impacts just applied (``closed``) are
        taken as just closed (g = +0 when g ≤ 0), so that one that does not separate (e = 0, a
        grazing contact) is located again as soon as its gap goes negative."""
        self.g = self.values(t, x, xd)
        for i in closed:
            self.g[i] = max(self.g[i], 5e-324)

    def located(self, i: int, tau: float, x, xd) -> None:
        """Event i at tau with the state (x, ẋ) there (also the C loops', compiled_events)."""
        self.times[i].append(tau)
        self.states[i].append((x, xd))

    def _locate(self, i: int, t: float, h: float, start, end, g0: float, g1: float) -> float:
        """The zero of event i's g along the step's interpolant (g1 = 0: the step's end)."""
        t1 = t + h
        if g1 == 0.0:
            return t1

        def phi(tau):
            x, xd, _ = dense_output(tau, t, h, *start, *end)
            if i < self.n_model:
                return float(self.kernels.events(tau, x, xd)[i])
            return self._call(i - self.n_model, self.callables[i - self.n_model], tau, x, xd)
        return illinois(phi, t, g0, t1, g1, EVENT_XTOL * max(abs(t1), h))

    def reason(self) -> str:
        """The one-line reason of a run the terminal event ``end`` ended."""
        i, tau = self.end
        return f"terminal event {self.names[i]!r} at t = {tau:.12g}"

    def as_meta(self) -> dict:
        """The located events as plain data (``meta["events"]``: saved with the Result's
        files; ``Result.t_events`` … read it)."""
        return {"names": list(self.names), "direction": list(self.direction),
                "terminal": list(self.terminal),
                "t": [[float(v) for v in ts] for ts in self.times],
                "x": [[s[0].tolist() for s in st] for st in self.states],
                "xd": [[s[1].tolist() for s in st] for st in self.states]}


def _checked(callables):
    """``simulate(events=)``: a callable or a sequence of callables g(t, x, xd)."""
    if callables is None:
        return ()
    if callable(callables):
        return (callables,)
    try:
        items = list(callables)
    except TypeError:
        raise ValueError(f"events= must be a callable g(t, x, xd) or a list of them, got "
                         f"{type(callables).__name__}") from None
    for k, fn in enumerate(items):
        if not callable(fn):
            raise ValueError(f"events[{k}] is not callable ({type(fn).__name__}): give "
                             "functions g(t, x, xd) with attributes terminal and direction")
    return items
