"""Drawings of the mechanism: an animation (``symgen animate``) and a strobe figure
(``symgen plot RESULT --what mechanism``).

What is drawn comes from :attr:`symgen.Model.drawing` (polylines of named points, expressions of
x, t and parameters; the planar and spatial builders fill it), evaluated numerically with
``sympy.lambdify`` at the recorded states of a :class:`~symgen.Result`, with the parameter values
the run used (``result.meta['parameters']``).  Planar drawings get equal axes, spatial ones a 3-D
view; the limits come from the whole motion, so the view does not jump.

The result file does not hold the drawing.  :func:`model_for` finds the model: the one passed in,
else the shipped example named by ``result.meta['model']``; its hash must equal
``result.meta['model_hash']``.  A model file given by path is loaded only when the caller names it
(``symgen animate --model FILE``): no code is loaded from a path read out of a data file.

matplotlib's animation machinery writes the files (PillowWriter for ``.gif``; FFMpegWriter for
``.mp4`` when ffmpeg is on PATH or ``imageio-ffmpeg`` is installed: ``pip install 'symgen[video]'``).
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy as sp

__all__ = ["DrawingError", "Frames", "model_for", "evaluate", "animate", "strobe_figure",
           "frame_rows", "max_frames", "MAX_FRAMES", "trace_path", "UP"]

#: Colours: bodies, joint markers, trace.
BODY_COLOUR, JOINT_COLOUR, TRACE_COLOUR = "#1f3b73", "#d62728", "#2ca02c"


class DrawingError(ValueError):
    """The mechanism cannot be drawn (no drawing data, an unknown point, a mismatched model)."""


@dataclass
class Frames:
    """Numeric drawing: ``lines[k]`` is an (N, P_k, d) array (N recorded rows, P_k points of
    polyline k, d = 2 or 3), ``names[k]`` the point names of polyline k, ``t`` (N,) the times."""

    t: np.ndarray
    lines: list
    names: list
    dim: int

    def point(self, name: str) -> np.ndarray:
        """(N, d): the path of the named point."""
        for pts, arr in zip(self.names, self.lines):
            if name in pts:
                return arr[:, pts.index(name), :]
        known = sorted({p for pts in self.names for p in pts})
        raise DrawingError(f"no drawn point {name!r}; points: {', '.join(known)}")

    def limits(self, margin: float = 0.05) -> np.ndarray:
        """(d, 2): lower and upper bound of every axis over the whole motion, with a margin; all
        axes get the same span (equal scales)."""
        allpts = np.concatenate([a.reshape(-1, self.dim) for a in self.lines], axis=0)
        allpts = allpts[np.all(np.isfinite(allpts), axis=1)]
        if allpts.size == 0:
            raise DrawingError("the drawn points are not finite at any recorded step")
        lo, hi = allpts.min(axis=0), allpts.max(axis=0)
        centre, span = 0.5 * (lo + hi), float(np.max(hi - lo))
        half = 0.5 * (span if span > 0 else 1.0) * (1 + 2 * margin)
        return np.stack([centre - half, centre + half], axis=1)


def trace_path(frames: Frames, result, name: str) -> np.ndarray:
    """(N, d): the path of ``name``, a drawn point or an output point of ``result`` (its outputs
    ``<name>.x``, ``<name>.y`` and, in 3-D, ``<name>.z``); DrawingError naming both lists."""
    try:
        return frames.point(name)
    except DrawingError:
        pass
    axes = "xyz"[:frames.dim]
    outs = list(getattr(result, "output_names", ()) or ())
    if all(f"{name}.{a}" in outs for a in axes):
        cols = [outs.index(f"{name}.{a}") for a in axes]
        return np.asarray(result.outputs, dtype=float)[:, cols]
    drawn = sorted({p for pts in frames.names for p in pts})
    points = sorted({o[:-2] for o in outs if o.endswith(".x")
                     and all(f"{o[:-2]}.{a}" in outs for a in axes)})
    raise DrawingError(f"no drawn point or output point {name!r}; drawn points: "
                       f"{', '.join(drawn)}; output points: {', '.join(points) or 'none'}")


#: The axis drawn vertical in 3-D (spatial drawings): y, as SpatialSystem.gravity()'s default
#: direction (0, −1, 0) and the planar drawings (docs/guide.md, "Which way is up")
UP = "y"


def _check_up(up: str) -> str:
    if up not in ("x", "y", "z"):
        raise DrawingError(f"up must be x, y or z (the axis drawn vertical), got {up!r}")
    return up


def model_for(result, model=None):
    """The model whose drawing belongs to ``result`` (see the module docstring).  Raises
    DrawingError naming what is missing."""
    from .loader import LoadError, model_of
    try:
        model = model_of(result, model, hint="give the model: --model MODEL")
    except LoadError as exc:
        raise DrawingError(str(exc)) from None
    if not model.drawing:
        raise DrawingError(f"model {model.name!r} has no drawing data (pass Model(drawing=...) or "
                           "build it with PlanarSystem/SpatialSystem)")
    return model


def evaluate(model, result) -> Frames:
    """The drawing of ``model`` at every recorded row of ``result``."""
    if not model.drawing:
        raise DrawingError(f"model {model.name!r} has no drawing data (pass Model(drawing=...) or "
                           "build it with PlanarSystem/SpatialSystem)")
    if tuple(result.coords) != model.coord_names:
        raise DrawingError(f"the result's coordinates {list(result.coords)[:4]}… are not those of "
                           f"model {model.name!r}")
    from .model import t as tsym
    values = dict(zip(model.param_names, model.param_values))
    values.update({k: float(v) for k, v in (result.meta.get("parameters") or {}).items()
                   if k in values})
    plain = [sp.Symbol(f"_x{i}") for i in range(model.n)]
    ren = dict(zip(model.coords, plain))
    ren.update({p: sp.Float(values[p.name]) for p in model.params})
    exprs = [sp.sympify(e).xreplace(ren) for line in model.drawing for _, xyz in line for e in xyz]
    fn = sp.lambdify([tsym, plain], exprs, modules="numpy", cse=True)
    T = np.asarray(result.t, float)
    cols = fn(T, [result.x[:, i] for i in range(model.n)])
    N = T.shape[0]
    flat = np.stack([np.broadcast_to(np.asarray(c, float), (N,)) for c in cols], axis=1)
    dim = len(model.drawing[0][0][1])
    lines, names, k = [], [], 0
    for line in model.drawing:
        P = len(line)
        lines.append(flat[:, k:k + P * dim].reshape(N, P, dim))
        names.append([name for name, _ in line])
        k += P * dim
    return Frames(T, lines, names, dim)


#: The most frames an animation may have (8 minutes at 20 fps); a GIF also keeps every frame in
#: memory until it is written, so it may take no more than :func:`symgen._io.memory_budget`.
MAX_FRAMES = 10_000


def max_frames(path=None, size: float = 5.0, dpi: float = 80.0) -> int:
    """The frame limit of an animation written to ``path`` (see :data:`MAX_FRAMES`)."""
    if path is None or Path(path).suffix.lower() != ".gif":
        return MAX_FRAMES
    from ._io import memory_budget
    frame_bytes = 4 * max(int(size * dpi), 1) ** 2          # one RGBA frame held by PillowWriter
    return max(1, min(MAX_FRAMES, memory_budget() // frame_bytes))


def _round(x: float, how) -> float:
    """``x`` to 4 significant digits, rounded by ``how`` (math.floor or math.ceil)."""
    scale = 10.0 ** (math.floor(math.log10(x)) - 3)
    return how(x / scale) * scale


def frame_rows(t, fps: float = 20.0, speed: float = 1.0, every: int | None = None,
               limit: int = MAX_FRAMES) -> np.ndarray:
    """The recorded rows shown as frames: every ``every``-th row, or else one row per 1/fps real
    seconds at ``speed`` simulated seconds per real second (the nearest recorded row).  More than
    ``limit`` frames raise DrawingError naming an --fps, --speed and --every that fit."""
    t = np.asarray(t, float)
    if every is not None:
        if every < 1:
            raise DrawingError(f"--every must be a positive integer, got {every}")
        n = -(-len(t) // int(every))
        if n > limit:
            raise DrawingError(f"--every {every} gives {n} frames, more than the {limit} an "
                               f"animation may have: try --every {-(-len(t) // limit)}")
        return np.arange(0, len(t), int(every))
    if not (fps > 0 and speed > 0):
        raise DrawingError(f"fps and speed must be positive (got fps={fps}, speed={speed})")
    span = float(t[-1] - t[0])
    n = np.floor(span / speed * fps + 1e-9) + 1          # a float: 1e300 frames stay countable
    if not n <= limit:
        fit = max(limit - 1, 1)
        raise DrawingError(
            f"{n:.4g} frames ({span:g} simulated s at --speed {speed:g} and --fps {fps:g}) is "
            f"more than the {limit} an animation may have: try --fps "
            f"{_round(fit * speed / span, math.floor):g} or --speed "
            f"{_round(span * fps / fit, math.ceil):g} (or --every {-(-len(t) // limit)})")
    n = int(n)
    want = t[0] + np.arange(n) * speed / fps
    rows = np.clip(np.searchsorted(t, want), 0, len(t) - 1)
    prev = np.clip(rows - 1, 0, len(t) - 1)
    rows = np.where(np.abs(t[prev] - want) <= np.abs(t[rows] - want), prev, rows)
    return rows


def _figure(frames: Frames, size: float, dpi: float, up: str = UP):
    from .plot import _mpl
    _, Figure, FigureCanvasAgg = _mpl()
    fig = Figure(figsize=(size, size), dpi=dpi)
    FigureCanvasAgg(fig)
    lim = frames.limits()
    if frames.dim == 3:
        ax = fig.add_subplot(1, 1, 1, projection="3d")
        ax.set_xlim(*lim[0])
        ax.set_ylim(*lim[1])
        ax.set_zlim(*lim[2])
        ax.set_box_aspect((1, 1, 1))
        ax.set_zlabel("z [m]")
        ax.view_init(elev=30, azim=-60, vertical_axis=_check_up(up))
    else:
        ax = fig.add_subplot(1, 1, 1)
        ax.set_xlim(*lim[0])
        ax.set_ylim(*lim[1])
        ax.set_aspect("equal", adjustable="box")
        ax.grid(True, alpha=0.3)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    return fig, ax


def _plot(ax, pts, dim, **kw):
    if dim == 3:
        return ax.plot(pts[:, 0], pts[:, 1], pts[:, 2], **kw)[0]
    return ax.plot(pts[:, 0], pts[:, 1], **kw)[0]


def _set(artist, pts, dim):
    if dim == 3:
        artist.set_data_3d(pts[:, 0], pts[:, 1], pts[:, 2])
    else:
        artist.set_data(pts[:, 0], pts[:, 1])


def _writer(path: Path, fps: float):
    from matplotlib import animation
    suffix = path.suffix.lower()
    if suffix == ".gif":
        return animation.PillowWriter(fps=fps)
    if suffix == ".mp4":
        if not animation.writers.is_available("ffmpeg"):
            try:
                import imageio_ffmpeg
                import matplotlib
                matplotlib.rcParams["animation.ffmpeg_path"] = imageio_ffmpeg.get_ffmpeg_exe()
            except (ImportError, RuntimeError):
                raise DrawingError("writing .mp4 needs ffmpeg: install it, or pip install "
                                   "'symgen[video]' (imageio-ffmpeg); or write a .gif") from None
        return animation.FFMpegWriter(fps=fps)
    raise DrawingError(f"cannot write an animation as {path.name!r}: use .gif or .mp4")


@dataclass
class Animation:
    """What :func:`animate` wrote: the file, the rows shown, the figure (left at the last frame)
    and its axes."""

    path: Path
    rows: np.ndarray
    fig: object
    ax: object
    frames: Frames


def animate(result, model, path, *, fps: float = 20.0, speed: float = 1.0,
            trace: str | None = None, every: int | None = None, size: float = 5.0,
            dpi: float = 80.0, up: str = UP) -> Animation:
    """Write an animation of ``result`` (a ``.gif``, or ``.mp4`` with ffmpeg) to ``path``.

    ``speed`` simulated seconds per real second, ``fps`` frames per real second, or ``every``:
    one frame per ``every`` recorded rows (then ``speed`` is not used).  ``trace``: the name of a
    drawn point or an output point whose path is drawn up to the current time.  ``up``: the axis
    drawn vertical in 3-D (default y, as the default gravity, 0, −1, 0).  Joints and points are red markers,
    bodies dark blue lines, the time is in the upper left corner."""
    from matplotlib import animation

    path = Path(path)
    writer = _writer(path, fps)
    rows = frame_rows(result.t, fps, speed, every, limit=max_frames(path, size, dpi))
    frames = evaluate(model, result)
    path_of_trace = trace_path(frames, result, trace) if trace else None
    fig, ax = _figure(frames, size, dpi, up)
    dim = frames.dim
    arts = []
    for arr in frames.lines:
        pts = arr[rows[0]]
        line = _plot(ax, pts, dim, color=BODY_COLOUR, lw=2.5, solid_capstyle="round",
                     marker="o", ms=6, mfc=JOINT_COLOUR, mec=JOINT_COLOUR)
        arts.append(line)
    tr = _plot(ax, path_of_trace[:1], dim, color=TRACE_COLOUR, lw=1.2) if trace else None
    if dim == 3:
        label = ax.text2D(0.02, 0.95, "", transform=ax.transAxes)
    else:
        label = ax.text(0.02, 0.95, "", transform=ax.transAxes, va="top")

    def update(k):
        r = rows[k]
        for art, arr in zip(arts, frames.lines):
            _set(art, arr[r], dim)
        if tr is not None:
            _set(tr, path_of_trace[:r + 1], dim)
        label.set_text(f"t = {frames.t[r]:.3f} s")
        return arts + [label] + ([tr] if tr is not None else [])

    update(0)
    anim = animation.FuncAnimation(fig, update, frames=len(rows), blit=False, repeat=False)
    _save_whole(anim, path, writer, dpi)
    return Animation(path, rows, fig, ax, frames)


def _save_whole(anim, path: Path, writer, dpi: float) -> None:
    """``anim.save`` into a fresh temporary file next to ``path`` (the writers want a file name,
    so :func:`symgen._io.atomic_open` cannot be used), renamed over ``path``: whole or not at all."""
    import os
    import tempfile

    from ._io import _umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        anim.save(tmp, writer=writer, dpi=dpi)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def snapshot_rows(n_rows: int, snapshots: int) -> np.ndarray:
    """The rows a strobe figure draws: ``snapshots`` (at least 2) evenly spaced over ``n_rows``,
    and never more than the rows there are (a count past them takes no memory or time)."""
    count = min(max(2, int(snapshots)), max(int(n_rows), 1))
    return np.unique(np.linspace(0, n_rows - 1, count).round().astype(int))


def strobe_figure(result, model, snapshots: int = 6, trace: str | None = None, up: str = UP):
    """One figure with ``snapshots`` positions of the mechanism over the run (light → dark with
    time; ``up``: the axis drawn vertical in 3-D); returns the Figure."""
    frames = evaluate(model, result)
    rows = snapshot_rows(len(frames.t), snapshots)
    fig, ax = _figure(frames, 6.0, 110, up)
    import matplotlib
    cmap = matplotlib.colormaps["Blues"]
    for j, r in enumerate(rows):
        c = cmap(0.35 + 0.65 * j / max(len(rows) - 1, 1))
        for arr in frames.lines:
            _plot(ax, arr[r], frames.dim, color=c, lw=2, marker="o", ms=4,
                  label=f"t = {frames.t[r]:.3g} s" if arr is frames.lines[0] else None)
    if trace:
        _plot(ax, trace_path(frames, result, trace), frames.dim, color=TRACE_COLOUR, lw=1,
              label=trace)
    ax.legend(loc="upper right", fontsize="x-small")
    meta = result.meta or {}
    ax.set_title(f"{meta.get('model', model.name)}: {len(rows)} snapshots")
    return fig
