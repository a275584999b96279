"""Plots of a :class:`symgen.Result` (matplotlib, Agg backend, no pyplot state).

matplotlib is imported only when a function here is called, so the core of symgen does not need it
(``pip install "symgen[plot]"``).  Every function returns the :class:`matplotlib.figure.Figure`
it drew, so callers (and tests) can inspect axes, labels and lines; :func:`save` writes a PNG.

What :func:`figure` draws for each ``what``:

==============  ===========================================================================
coordinates     x(t), one line per coordinate; a panel per unit (m, rad …) when the result has units
outputs         the model's outputs y(t), one line per output (the joints' `reaction:` columns only
                when selected); a panel per unit likewise
constraints     ‖q‖, ‖q̇‖, ‖q̈‖ per step (log scale)
stability       ω_max per step (the start's alone where the run computed no more: the default
                A-stable step without estimate=True); h_max per step against the h used (two panels)
energy          kinetic T, potential V and total E per step; E − E(0) below (with the work
                W_ext of the ``power:`` outputs and the balance E − E(0) − W_ext)
reactions       the Lagrange multipliers λ(t), one line per constraint
==============  ===========================================================================

:func:`sweep_figure` draws a column of a study table (:mod:`symgen.study`) against a grid key.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .names import REACTION_PREFIX

__all__ = ["WHAT", "figure", "save", "plot_result", "panels_figure", "Series", "Panel",
           "sweep_figure"]

#: The views ``symgen plot --what`` offers.
WHAT = ("coordinates", "outputs", "constraints", "stability", "energy", "reactions")


def _mpl():
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'symgen[plot]'") from exc
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    return matplotlib, Figure, FigureCanvasAgg


def _new_figure(nrows: int = 1, height: float = 3.6, width: float = 8.0):
    _, Figure, FigureCanvasAgg = _mpl()
    fig = Figure(figsize=(width, height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(nrows, 1, i + 1) for i in range(nrows)]
    return fig, axes


def _arr(result, name):
    value = getattr(result, name, None)
    if value is None:
        return None
    return np.asarray(value)


def _names(values, n, prefix):
    values = list(values) if values is not None else []
    return [str(v) for v in values] if len(values) == n else [f"{prefix}{i}" for i in range(n)]


def _title(result, what):
    meta = getattr(result, "meta", None) or {}
    bits = []
    for key in ("model", "method", "scheme"):
        val = meta.get(key)
        if isinstance(val, dict):
            val = val.get("name")
        if val:
            bits.append(str(val))
    h = meta.get("h", meta.get("dt"))
    if h is not None:
        bits.append(f"h = {h:g}" if isinstance(h, (int, float)) else f"h = {h}")
    status = getattr(result, "status", None)
    if status and status != "completed":
        bits.append(str(status))
    head = what
    return f"{head}: " + ", ".join(bits) if bits else head


def _positive(y):
    """y with non-positive values masked (log axes); all-zero series stay visible at 1e-300."""
    y = np.asarray(y, dtype=float)
    out = np.where(y > 0, y, np.nan)
    if np.all(np.isnan(out)):
        out = np.full_like(y, 1e-300)
    return out


def figure(result, what: str = "coordinates", select: Sequence[str] | None = None):
    """A Figure showing one view of ``result`` (see the module docstring); ``select`` limits the
    plotted coordinates/outputs to those names.  Raises ValueError when the view has no data."""
    if what not in WHAT:
        raise ValueError(f"unknown plot {what!r}; choose one of: {', '.join(WHAT)}")
    t = _arr(result, "t")
    if t is None or t.size == 0:
        raise ValueError("the result has no time steps to plot")

    if what in ("coordinates", "outputs", "reactions"):
        return _series_figure(result, what, t, select)
    return {"constraints": _constraints_figure, "stability": _stability_figure,
            "energy": _energy_figure}[what](result, what, t)


def _series_figure(result, what, t, select):
    """Coordinates, outputs or multipliers against time, one line per (selected) column; with
    units (``result.meta["units"]``), one panel per unit, its axis labelled with the unit."""
    units = {}
    if what == "coordinates":
        data = _arr(result, "x")
        names = _names(getattr(result, "coords", None), 0 if data is None else data.shape[1], "x")
        units, ylabel = _units(result, "x"), "coordinate value"
    elif what == "outputs":
        data = _arr(result, "outputs")
        names = _names(getattr(result, "output_names", None),
                       0 if data is None or data.ndim < 2 else data.shape[1], "y")
        units, ylabel = _units(result, "outputs"), "output value"
    else:
        data = _arr(result, "lam")
        k = 0 if data is None or data.ndim < 2 else data.shape[1]
        rows = list((getattr(result, "meta", None) or {}).get("constraint_names") or [])
        names = [f"λ {rows[i]}" if len(rows) == k else f"λ{i}" for i in range(k)]
        ylabel = "Lagrange multiplier λ [N or N m]"
    if data is None or data.ndim < 2 or data.shape[1] == 0:
        raise ValueError(f"the result has no {what} to plot")
    idx = list(range(data.shape[1]))
    if what == "outputs":        # the joints' reactions only when selected (docs/reactions.md)
        idx = [i for i in idx if not names[i].startswith(REACTION_PREFIX)] or idx
    if select:
        missing = [s for s in select if s not in names]
        if missing:
            raise ValueError(f"no {what} named {missing}; the result has {names}")
        idx = [names.index(s) for s in select]
    groups: dict[str, list] = {}                 # unit → columns, in the order of first use
    for i in idx:
        groups.setdefault(units.get(names[i], ""), []).append(i)
    fig, axes = _new_figure(len(groups), height=3.6 if len(groups) == 1 else 2.6)
    k = min(len(t), data.shape[0])
    for ax, (unit, cols) in zip(axes, groups.items()):
        for i in cols:
            ax.plot(t[:k], data[:k, i], label=names[i])
        shown = [names[i] for i in cols]
        text = ", ".join(shown) if len(shown) <= 3 else f"{ylabel.split()[0]}s"
        ax.set_ylabel(f"{text} [{unit}]" if unit else (ylabel if len(groups) == 1 else
                                                       f"{text} (no unit)"))
        ax.grid(True, alpha=0.3)
        if len(cols) <= 12:
            ax.legend(loc="best", fontsize="small")
    axes[-1].set_xlabel("t [s]")
    axes[0].set_title(_title(result, what))
    return fig


def _units(result, array: str) -> dict:
    """{name: unit} of a result's array (``x``, ``outputs``) from ``meta["units"]``."""
    units = ((getattr(result, "meta", None) or {}).get("units") or {})
    got = units.get(array) if isinstance(units, dict) else None
    return dict(got) if isinstance(got, dict) else {}


def _constraints_figure(result, what, t):
    """‖q‖, ‖q̇‖, ‖q̈‖ against time (log scale)."""
    series = [("pos_err", "‖q‖ (position)"), ("vel_err", "‖q̇‖ (velocity)"),
              ("acc_err", "‖q̈‖ (acceleration)")]
    fig, (ax,) = _new_figure()
    for attr, label in series:
        y = _arr(result, attr)
        if y is None:
            raise ValueError(f"the result has no {attr}")
        k = min(len(t), len(y))
        ax.semilogy(t[:k], _positive(y[:k]), label=label)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("constraint error norm")
    ax.set_title(_title(result, what))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig


def _stability_figure(result, what, t):
    """ω_max and the Eq. 11 step limit against time, with the step used."""
    om = _arr(result, "omega_max")
    hm = _arr(result, "h_max")
    if om is None or hm is None:
        raise ValueError("the result has no omega_max/h_max")
    start_only = np.isfinite(om[1:]).sum() == 0 and len(om) > 1 and np.isfinite(om[0])
    fig, (ax1, ax2) = _new_figure(2, height=3.0)
    k = min(len(t), len(om))
    ax1.plot(t[:k], om[:k], "o-" if start_only else "-",
             label="ω_max at the start (per step: estimate=True)" if start_only else "ω_max")
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("ω_max [rad/s]")
    ax1.set_title(_title(result, what))
    ax1.grid(True, alpha=0.3)
    ax1.legend(loc="best", fontsize="small")
    k = min(len(t), len(hm))
    hm_plot = np.where(np.isfinite(hm[:k]), hm[:k], np.nan)
    ax2.plot(t[:k], hm_plot, label="h_max (Eq. 11)")
    h = _step_used(result)
    if h is not None:
        ax2.plot([t[0], t[k - 1]], [h, h], "--", label=f"h used = {h:g}")
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("step size [s]")
    ax2.grid(True, alpha=0.3)
    ax2.legend(loc="best", fontsize="small")
    return fig


def _energy_figure(result, what, t):
    """T, V and E = T + V, and the drift E − E(0)."""
    e = _arr(result, "energy")
    T = _arr(result, "energy_kinetic")
    V = _arr(result, "energy_potential")
    if e is None or e.size == 0:
        raise ValueError("the result has no energy (the model defines no potential V)")
    fig, (ax1, ax2) = _new_figure(2, height=3.0)
    if e.ndim == 2 and e.shape[1] >= 2:          # (T, V) columns
        T, V, e = e[:, 0], e[:, 1], e[:, 0] + e[:, 1]
    k = min(len(t), e.shape[0])
    E = e[:k].reshape(-1)
    if T is not None and V is not None and T.size >= k and V.size >= k:
        ax1.plot(t[:k], T[:k], label="kinetic T")
        ax1.plot(t[:k], V[:k], label="potential V")
    ax1.plot(t[:k], E, label="total E = T + V")
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("energy [J]")
    ax1.set_title(_title(result, what))
    ax1.grid(True, alpha=0.3)
    ax1.legend(loc="best", fontsize="small")
    ax2.plot(t[:k], E - E[0], label="E − E(0)")
    names = list(getattr(result, "output_names", ()) or ())
    work = [i for i, s in enumerate(names) if s.startswith("work:")]
    if work:                                    # the non-conservative elements' work
        W = np.asarray(result.outputs)[:k, work].sum(axis=1)
        ax2.plot(t[:k], W, label="W_ext (Σ work:…)")
        ax2.plot(t[:k], E - E[0] - W, label="E − E(0) − W_ext (balance)")
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("energy change [J]" if work else "energy drift [J]")
    ax2.grid(True, alpha=0.3)
    ax2.legend(loc="best", fontsize="small")
    return fig


def _step_used(result):
    meta = getattr(result, "meta", None) or {}
    for key in ("h", "dt"):
        val = meta.get(key)
        if isinstance(val, (int, float)):
            return float(val)
    t = _arr(result, "t")
    if t is not None and len(t) > 1:
        return float(t[1] - t[0])
    return None


def save(fig, path) -> None:
    """Write ``fig`` as a PNG (the format follows the file name; PNG is what symgen documents)."""
    from ._io import atomic_open

    with atomic_open(path, "wb") as fh:          # a PNG written whole or not at all
        fig.savefig(fh, format="png", dpi=110)


def plot_result(result, what: str = "coordinates", path=None, select=None):
    """:func:`figure` and, when ``path`` is given, :func:`save`; returns the Figure."""
    fig = figure(result, what, select=select)
    if path is not None:
        save(fig, path)
    return fig


# -- comparison figures (used by symgen reproduce) -----------------------------------------------
class Series:
    """One line of a panel: x, y and a legend label (``style`` a matplotlib format string)."""

    def __init__(self, x, y, label: str, style: str = "-"):
        self.x, self.y, self.label, self.style = np.asarray(x), np.asarray(y), label, style


class Panel:
    """One axes of a comparison figure."""

    def __init__(self, title: str, xlabel: str, ylabel: str, series: Iterable[Series],
                 logy: bool = False, ylim=None):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.series = list(series)
        self.logy, self.ylim = logy, ylim


def panels_figure(panels: Sequence[Panel], ncols: int = 1, suptitle: str | None = None):
    """A grid of panels, one line per Series; returns the Figure."""
    _, Figure, FigureCanvasAgg = _mpl()
    nrows = (len(panels) + ncols - 1) // ncols
    fig = Figure(figsize=(5.2 * ncols if ncols > 1 else 8.0, 2.9 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    for i, panel in enumerate(panels):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        for s in panel.series:
            y = _positive(s.y) if panel.logy else s.y
            if panel.logy:
                ax.semilogy(s.x, y, s.style, label=s.label)
            else:
                ax.plot(s.x, y, s.style, label=s.label)
        ax.set_title(panel.title, fontsize="medium")
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        if panel.ylim is not None:
            ax.set_ylim(*panel.ylim)
        ax.grid(True, alpha=0.3)
        if panel.series and len(panel.series) <= 10:
            ax.legend(loc="best", fontsize="x-small")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _spans_decades(values) -> bool:
    """All finite values positive, and the largest more than ten times the smallest."""
    vals = [float(v) for v in values if _finite(v)]
    return bool(vals) and min(vals) > 0 and max(vals) > 10 * min(vals)


def sweep_figure(study, x: str | None = None, y: str | None = None):
    """A column ``y`` of a study table against the grid key ``x``, one line per combination of
    the other grid keys (failed and diverged runs as crosses at their value, if finite).
    ``study``: a folder, a table path or a list of rows.  Default ``y``: for a step-size or
    tolerance study (a key ``dt``, ``rtol`` or ``atol``) an error column (``energy_drift`` where
    the table has it, else ``max_pos_err``), otherwise the first output's largest value.  An axis
    whose positive values span more than a decade is logarithmic.  Returns the Figure."""
    from .study import SweepError, grid_keys, read_rows
    rows = read_rows(study) if isinstance(study, (str, Path)) else list(study)
    if not rows:
        raise SweepError("the study table has no rows")
    keys = grid_keys(rows)
    x = x or keys[0]
    if y is None and set(keys) & {"dt", "rtol", "atol"}:
        y = "energy_drift" if any(_finite(r.get("energy_drift")) for r in rows) else "max_pos_err"
    if y is None:
        y = next((c for c in rows[0] if c.startswith("max_abs.")), "max_pos_err")
    for name, what in ((x, "--x"), (y, "--y")):
        if name not in rows[0]:
            raise SweepError(f"{what} {name!r} is not a column of the study table; columns: "
                             f"{', '.join(rows[0])}")
    others = [k for k in keys if k != x]
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in others), []).append(r)
    fig, (ax,) = _new_figure()
    for gkey, grows in groups.items():
        grows = sorted(grows, key=lambda r: r[x])
        label = ", ".join(f"{k} = {v}" for k, v in zip(others, gkey)) or y
        ok = [r for r in grows if r["status"] in ("completed", "event")]
        line = ax.plot([r[x] for r in ok], [r[y] for r in ok], "o-", label=label)[0]
        bad = [r for r in grows if r not in ok and isinstance(r[y], float)
               and math.isfinite(r[y])]
        if bad:
            ax.plot([r[x] for r in bad], [r[y] for r in bad], "x", color=line.get_color(),
                    ms=9, label=f"{label} (not completed)")
    for name, set_scale in ((x, ax.set_xscale), (y, ax.set_yscale)):
        if _spans_decades([r[name] for r in rows]):
            set_scale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"sweep: {y} against {x} ({len(rows)} runs)")
    ax.grid(True, alpha=0.3)
    if len(groups) <= 12:
        ax.legend(loc="best", fontsize="small")
    return fig
