"""What every experiment of ``symgen reproduce`` shares: the claims being filled in, the models and
kernels (built once per invocation), one run (:meth:`Context.sim`, failure as data), figures,
notes, and small readers of results.
"""
from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

from .claims import _ok, make_claims
from .references import minimal_double_pendulum, minimal_pendulum

__all__ = ["Context", "Failed"]


class Context:
    def __init__(self, out: Path, quick: bool, say: Callable[[str], None]):
        self.out, self.quick, self.say = out, quick, say
        self.claims = {c.id: c for c in make_claims()}
        self._kernels: dict[str, object] = {}
        self._models: dict[str, object] = {}
        self.runs: list[dict] = []
        self.figures: list[tuple[str, str, str]] = []   # (section, file, caption)
        self.notes: dict[str, list[str]] = {}

    # models and kernels are built once per invocation (compiled C, cached on disk)
    def model(self, key):
        if key not in self._models:
            if key == "stiff_pendulum_minimal":
                self._models[key] = minimal_pendulum()
            elif key == "double_pendulum_minimal":
                self._models[key] = minimal_double_pendulum()
            else:
                from ..loader import load_model
                self._models[key] = load_model(key)
        return self._models[key]

    def kernels(self, key):
        if key not in self._kernels:
            from ..jit import build
            t0 = time.perf_counter()
            self._kernels[key] = build(self.model(key))
            self.say(f"  built {key} kernels in {time.perf_counter() - t0:.1f} s")
        return self._kernels[key]

    def sim(self, key, method, scheme, dt, t_end, **params):
        """One run of the paper's step (``preset="paper"``: the end chart, the Euclidean metric;
        symgen's default step is another).  A numerical failure is the Result's status; the
        ValueError or KeyError that
        simulate raises for a start it cannot make (e.g. an initial state it cannot make
        consistent) is recorded as a failed run (a Result-like stand-in).  Any other exception is
        a bug, not a finding: it propagates, and the experiment is reported as broken."""
        from .. import simulate          # the package attribute (tests replace it)

        k = self.kernels(key)
        t_end = math.ceil(t_end / dt - 1e-9) * dt      # a whole number of steps of exactly dt
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                res = simulate(k, method=method, scheme=scheme, dt=dt, t_end=t_end,
                               params=params or None, preset="paper")
        except (ValueError, KeyError) as exc:   # what simulate documents for a bad start
            res = Failed(f"{type(exc).__name__}: {exc}")
        wall = time.perf_counter() - t0
        t_last = float(np.asarray(res.t)[-1]) if np.size(res.t) else 0.0
        self.runs.append(dict(model=key, method=method, scheme=str(scheme), h=dt, t_end=t_end,
                              params=params, status=res.status, t_last=t_last,
                              steps=max(int(np.size(res.t)) - 1, 0), wall=wall,
                              reason=str(getattr(res, "reason", "") or "")))
        self.say(f"  {key:<24} {method:<18} {str(scheme):<18} h={dt:<8g} → {res.status}"
                 f" (t = {t_last:g}, {wall:.1f} s)")
        return res

    def figure(self, section, name, fig, caption):
        from ..plot import save
        path = self.out / name
        save(fig, path)
        self.figures.append((section, name, caption))
        return name

    def note(self, section, text):
        self.notes.setdefault(section, []).append(text)


class Failed:
    """Stand-in for a run that raised before producing a Result."""

    def __init__(self, reason):
        self.status, self.reason = "failed", reason
        self.t = np.zeros(1)
        self.x = self.xd = self.xdd = np.zeros((1, 0))
        self.lam = np.zeros((1, 0))
        self.pos_err = self.vel_err = self.acc_err = np.zeros(1)
        self.omega_max = self.h_max = np.full(1, np.nan)
        self.coords, self.output_names, self.outputs = (), (), np.zeros((1, 0))


# -- readers of results ---------------------------------------------------------------------------
def _col(res, name):
    """A coordinate or output column of a Result by name (or by suffix, e.g. '.theta')."""
    coords = list(getattr(res, "coords", ()) or ())
    outs = list(getattr(res, "output_names", ()) or ())
    if name in outs:
        return np.asarray(res.outputs)[:, outs.index(name)]
    if name in coords:
        return np.asarray(res.x)[:, coords.index(name)]
    for i, c in enumerate(coords):
        if c.endswith(name):
            return np.asarray(res.x)[:, i]
    raise KeyError(f"result has no coordinate or output {name!r} (coords {coords}, outputs {outs})")


def _tlast(res) -> float:
    return float(np.asarray(res.t)[-1]) if np.size(res.t) else 0.0


def _g(x, digits=3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}g}"


def _status(res) -> str:
    if _ok(res):
        return "completed"
    return f"{res.status} at t = {_tlast(res):.4g} s"
