"""The values of a model's inputs over a run: ``simulate(..., inputs={"T_motor": value})``.

A value is a number (held over the run), a callable ``u(t, x, xd)`` or a table ``(times, values)``
or ``(times, values, interpolation)`` with interpolation ``"linear"`` (the default; the end values
held outside the table) or ``"hold"`` (the value given at ``times[i]`` applies after it, up to and
including ``times[i + 1]``; the step whose value differs from the step's before starts after the
jump: ẍ, λ re-solved with it, as at a controller's sample).  The rule of the run (docs/inputs.md): the step from t to t + h uses
the inputs at its end time t + h, callables with the state at its start (x, ẋ at t): a zero-order
hold of the state, as co-simulation masters couple; the start uses u(t0, x0, ẋ0).
:class:`InputValues` writes them into the kernels' ``u`` before each step.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

__all__ = ["InputValues", "InputError", "Table", "INTERPOLATIONS", "read_table", "parse_input_options",
           "check_names", "SampledController"]

INTERPOLATIONS = ("linear", "hold")
#: a table time within this fraction of max(1, |t|) of t counts as t (t0 + j·h carries round-off)
_TIME_EPS = 1e-12
HINT = "a number, a callable u(t, x, xd) or a table (times, values[, 'linear' | 'hold'])"


def raised(exc: BaseException) -> str:
    """``TypeError: the first line of its message`` (an exception of the caller's callable, for
    the run's one-line reason; the traceback stays on the InputError's ``__cause__``)."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"[:200]


class InputError(ValueError):
    """An input's value during a run is not a finite number, or the caller's callable (an input,
    a controller) raised: the run stops with status 'failed' and its steps kept (the caller's
    exception is the ``__cause__``); not a bug of symgen, which would propagate."""


class Table:
    """An input as a table of (time, value): ``"linear"`` or ``"hold"`` (module docstring)."""

    def __init__(self, name: str, times, values, interpolation: str = "linear"):
        try:
            tt = np.array(times, dtype=float)
            vv = np.array(values, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"input {name!r}: a table's times and values must be "
                             "numbers") from None
        if tt.ndim != 1 or vv.shape != tt.shape or tt.size == 0:
            raise ValueError(f"input {name!r}: a table needs as many times as values (1-D, at "
                             f"least one), got shapes {tt.shape} and {vv.shape}")
        if not (np.isfinite(tt).all() and np.isfinite(vv).all()):
            raise ValueError(f"input {name!r}: the table has non-finite times or values")
        if (np.diff(tt) <= 0).any():
            raise ValueError(f"input {name!r}: the table's times must increase strictly")
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"input {name!r}: interpolation {interpolation!r} is not one of "
                             f"{list(INTERPOLATIONS)}")
        self.name, self.times, self.values, self.interpolation = name, tt, vv, interpolation

    def __call__(self, t):
        """The value(s) at time(s) t."""
        t = np.asarray(t, dtype=float)
        if self.interpolation == "linear":
            return np.interp(t, self.times, self.values)
        eps = _TIME_EPS * np.maximum(1.0, np.abs(t))
        i = np.searchsorted(self.times, t - eps, side="left") - 1
        return self.values[np.clip(i, 0, self.times.size - 1)]

    def describe(self) -> dict:
        return {"table": int(self.times.size), "interpolation": self.interpolation,
                "t_first": float(self.times[0]), "t_last": float(self.times[-1])}


def _value(name: str, value):
    """A number (float), a callable or a :class:`Table` from what the user gave for ``name``."""
    if isinstance(value, Table):
        return value
    if callable(value):
        return value
    if isinstance(value, (tuple, list)) and len(value) in (2, 3) and not isinstance(value[0], str):
        if len(value) == 3 and not isinstance(value[2], str):
            raise ValueError(f"input {name!r}: a table is (times, values) or (times, values, "
                             f"interpolation), interpolation one of {list(INTERPOLATIONS)}")
        return Table(name, *value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"input {name!r}: {value!r} is not {HINT}") from None
    if not math.isfinite(v):
        raise ValueError(f"input {name!r} must be finite, got {v}")
    return v


def check_names(model: str, names, values: Mapping) -> None:
    """One-line ValueError for a value of an input the model does not have, or a missing one."""
    unknown = sorted(set(values) - set(names))
    if unknown:
        has = f"its inputs are {list(names)}" if names else "it has no inputs"
        raise ValueError(f"model {model!r} has no input(s) {unknown}; {has}")
    for name in names:
        if name not in values:
            raise ValueError(f"input {name!r} has no value: give simulate(..., inputs="
                             f"{{{name!r}: ...}}) ({HINT}) or --input {name}=NUMBER|FILE.csv")


class InputValues:
    """The inputs of one run, written into ``kernels.u`` (module docstring): :meth:`set` before a
    step, :meth:`accept` after it, :meth:`rewind` to the last accepted step's values."""

    def __init__(self, kernels, values: Mapping | None):
        names = tuple(getattr(kernels, "input_names", ()))
        values = dict(values or {})
        check_names(kernels.name, names, values)
        self.names = names
        self.u = getattr(kernels, "u", np.zeros(0))
        self.sources = {name: _value(name, values[name]) for name in names}
        self.varying = any(not isinstance(v, float) for v in self.sources.values())
        #: the "hold" tables' inputs: a change of one between steps is a jump (:meth:`jumped`)
        self.holds = np.array([i for i, name in enumerate(names)
                               if isinstance(self.sources[name], Table)
                               and self.sources[name].interpolation == "hold"], dtype=np.intp)
        self._acc = np.zeros(len(names))

    def set(self, t: float, x, xd) -> None:
        """Write the inputs at time t (callables with the state x, ẋ) into ``kernels.u``."""
        for i, name in enumerate(self.names):
            src = self.sources[name]
            if isinstance(src, float):
                self.u[i] = src
            elif isinstance(src, Table):
                self.u[i] = src(t)
            else:
                try:
                    v = src(float(t), np.array(x, dtype=float), np.array(xd, dtype=float))
                except Exception as exc:            # the caller's code: the run's data is kept
                    raise InputError(f"input {name!r}: u(t, x, xd) at t = {t:.9g} raised "
                                     f"{raised(exc)}") from exc
                try:
                    v = float(v)
                except (TypeError, ValueError):
                    v = math.nan
                if not math.isfinite(v):
                    raise InputError(f"input {name!r}: u(t, x, xd) at t = {t:.9g} did not "
                                     "return a finite number")
                self.u[i] = v

    def jumped(self) -> bool:
        """A "hold" table's value set for this step differs from the last accepted step's: the
        step starts after a jump of the inputs (ẍ, λ re-solved with the new values, as at a
        controller's sample; docs/inputs.md)."""
        return bool(self.holds.size) and bool((self.u[self.holds] != self._acc[self.holds]).any())

    def accept(self) -> None:
        """The values in ``kernels.u`` are those of an accepted step."""
        if self.varying:
            self._acc[:] = self.u

    def rewind(self) -> None:
        """Back to the last accepted step's values (a run that stopped records them)."""
        if self.varying:
            self.u[:] = self._acc

    def describe(self) -> dict:
        """``meta['inputs']``: each input's kind (the number, "callable", or the table)."""
        out = {}
        for name, src in self.sources.items():
            out[name] = (src if isinstance(src, float) else src.describe()
                         if isinstance(src, Table) else "callable")
        return out


class SampledController:
    """A controller sampled and held (``simulate(..., controller=law, period=Ts)``; docs/inputs.md):
    ``law(t, x, xd)`` returns the values of the model's inputs that ``inputs=`` does not give (a
    sequence in the model's order of those inputs, a number when there is one, or a dict by
    name), called at t_k = t0 + k·Ts with the state there and held on [t_k, t_(k+1)).
    :meth:`sample` writes them into the kernels' ``u``; the others stay the numbers given."""

    def __init__(self, kernels, law, period, given: Mapping | None):
        names = tuple(getattr(kernels, "input_names", ()))
        given = dict(given or {})
        if not callable(law):
            raise ValueError(f"controller must be a callable law(t, x, xd) returning the inputs' "
                             f"values, got {type(law).__name__}")
        if not names:
            raise ValueError(f"model {kernels.name!r} has no inputs for a controller to drive "
                             "(declare them with symgen.inputs and use them in f)")
        check_names(kernels.name, names, {**{n: 0.0 for n in names}, **given})
        for name, value in given.items():
            if not isinstance(_value(name, value), float):
                raise ValueError(f"input {name!r}: beside a controller the other inputs must be "
                                 "numbers; return its value from the controller instead")
        self.names = tuple(n for n in names if n not in given)
        if not self.names:
            raise ValueError("controller= has no input to drive: inputs= gives every input "
                             f"({list(names)}); leave out those the controller sets")
        try:
            ts = float(period)
        except (TypeError, ValueError):
            raise ValueError(f"period must be a positive number of seconds (the controller's "
                             f"sample period), got {period!r}") from None
        if not (math.isfinite(ts) and ts > 0):
            raise ValueError(f"period must be positive and finite (the controller's sample "
                             f"period in s), got {ts}")
        self.period, self.law, self.u = ts, law, getattr(kernels, "u", np.zeros(0))
        index = [names.index(n) for n in self.names]
        # (a slice when the law sets a contiguous run of inputs: the common case, all of them)
        self.index = (slice(index[0], index[-1] + 1) if index == list(range(index[0], index[-1] + 1))
                      else np.array(index, dtype=np.intp))
        self.samples, self.meta = 0, {}

    def sample(self, t: float, x, xd) -> None:
        """The law at (t, x, ẋ) (copies: the caller's buffers are not the law's) into ``u``;
        :class:`InputError` in one line for a wrong count, name or a non-finite value."""
        try:
            out = self.law(float(t), np.array(x, dtype=float), np.array(xd, dtype=float))
        except Exception as exc:                    # the caller's code: the run's data is kept
            raise InputError(f"controller at t = {t:.9g} raised {raised(exc)}") from exc
        self.samples += 1
        self.meta["samples"] = self.samples
        k = len(self.names)
        if isinstance(out, dict):
            unknown, missing = set(out) - set(self.names), [n for n in self.names if n not in out]
            if unknown or missing:
                raise InputError(f"controller at t = {t:.9g} returned names {sorted(map(str, out))}"
                                 f"; expected exactly {list(self.names)}")
            out = [out[n] for n in self.names]
        try:
            v = np.asarray(out, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"controller at t = {t:.9g} returned {type(out).__name__}, not "
                             f"numbers for inputs {list(self.names)}") from None
        if v.size != k:
            raise InputError(f"controller at t = {t:.9g} returned {v.size} values; expected {k} "
                             f"(inputs {list(self.names)}, in this order, or a dict by name)")
        if not math.isfinite(v.sum()):          # (the one check per sample; the names below)
            bad = [n for n, ok in zip(self.names, np.isfinite(v)) if not ok]
            if bad:
                raise InputError(f"controller at t = {t:.9g} returned non-finite values for "
                                 f"{bad}: {v.tolist()}")
        self.u[self.index] = v

    def describe(self, steps: int | None) -> dict:
        """``meta['controller']`` (kept up to date as the run samples): what was sampled and
        held, and how the steps met it."""
        self.meta = {"inputs": list(self.names), "period": self.period, "hold": "zero-order",
                "samples": self.samples,
                "steps_per_period": steps,      # None: dt="auto" (each sample a stop time)
                "restart": "ẍ, λ from the index-1 equations with the new inputs at each sample"
                           + ("" if steps else "; the error estimate's ẍ history moved by the jump's "
                                                "effect at each kept point")}
        return self.meta


def read_table(path, name: str, interpolation: str = "linear") -> Table:
    """An input's table from a CSV file of two columns, time and value (a first line that is
    not numbers is a header; '#' lines are comments)."""
    rows = []
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [ln.strip() for ln in fh]
    except OSError as exc:
        raise ValueError(f"input {name!r}: cannot read {path}: {exc.strerror or exc}") from None
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    for k, line in enumerate(lines):
        cells = [c.strip() for c in line.split(",")]
        try:
            row = [float(c) for c in cells]
        except ValueError:
            if k == 0:
                continue                        # a header
            raise ValueError(f"input {name!r}: {path}: line {k + 1} is not two numbers: "
                             f"{line[:60]!r}") from None
        if len(row) != 2:
            raise ValueError(f"input {name!r}: {path}: line {k + 1} has {len(row)} columns; "
                             "expected two (time, value)")
        rows.append(row)
    if not rows:
        raise ValueError(f"input {name!r}: {path} has no rows of (time, value)")
    arr = np.array(rows)
    return Table(name, arr[:, 0], arr[:, 1], interpolation)


def parse_input_options(specs, interpolation: str = "linear") -> dict:
    """The command line's ``--input NAME=NUMBER|FILE.csv`` (repeatable) as simulate's inputs."""
    out = {}
    for spec in specs or ():
        name, eq, text = spec.partition("=")
        name, text = name.strip(), text.strip()
        if not eq or not name or not text:
            raise ValueError(f"--input {spec!r}: expected NAME=NUMBER or NAME=FILE.csv")
        if name in out:
            raise ValueError(f"--input {name} is given twice")
        try:
            out[name] = float(text)
        except ValueError:
            out[name] = read_table(text, name, interpolation)
        if isinstance(out[name], float) and not math.isfinite(out[name]):
            raise ValueError(f"--input {name}: the value must be finite, got {text}")
    return out
