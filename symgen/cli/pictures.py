"""The ``symgen`` commands that draw the mechanism or a study: ``animate`` and
``plot --what mechanism|sweep`` (the drawing in :mod:`symgen.animation`, the figure in
:mod:`symgen.plot`).  :mod:`symgen.cli` adds their parsers (:func:`add_parser`,
:func:`add_plot_arguments`) and dispatches to them.
"""
from __future__ import annotations

import math
from pathlib import Path

from .terminal import (EXIT_OK, UsageError, _check_output_file, _need_matplotlib, _result_path,
                       parse_params)

__all__ = ["add_parser", "add_plot_arguments", "cmd_animate", "cmd_plot_extra"]


def _drawing_model(args, result):
    """The model whose drawing fits ``result``: --model (with --param model() options), else the
    shipped example the result names (symgen.animation.model_for)."""
    from ..animation import model_for
    model = None
    if args.model:
        from ..loader import load_model, load_module, model_options
        opts = parse_params(args.param)
        allowed = model_options(load_module(args.model))
        unknown = [k for k in opts if k not in allowed]
        if unknown:
            raise UsageError(f"--param {unknown[0]}: only model() options "
                             f"({', '.join(allowed) or 'none'}) rebuild the model to draw; the "
                             "parameter values come from the result")
        model = load_model(args.model, **opts)
    elif args.param:
        raise UsageError("--param needs --model")
    return model_for(result, model)


def _load_result_arg(text):
    from ..result import load_result
    return load_result(_result_path(text))


def cmd_animate(args) -> int:
    out = Path(args.output)
    if out.suffix.lower() not in (".gif", ".mp4"):
        raise UsageError(f"-o {out}: the animation must end in .gif or .mp4")
    _check_output_file(out, "-o")
    for flag, v in (("--fps", args.fps), ("--speed", args.speed)):
        if not (v > 0 and math.isfinite(v)):
            raise UsageError(f"{flag} must be a positive number, got {v}")
    if args.every is not None and args.every < 1:
        raise UsageError(f"--every must be a positive integer, got {args.every}")
    _need_matplotlib()
    result = _load_result_arg(args.result)
    model = _drawing_model(args, result)
    from ..animation import animate
    anim = animate(result, model, out, fps=args.fps, speed=args.speed, trace=args.trace,
                   every=args.every, up=args.up)
    span = anim.frames.t[anim.rows[-1]] - anim.frames.t[anim.rows[0]]
    print(f"wrote {out}: {len(anim.rows)} frames at {args.fps:g} fps, t = "
          f"{anim.frames.t[anim.rows[0]]:g} … {anim.frames.t[anim.rows[-1]]:g} s "
          f"({span * args.fps / max(len(anim.rows) - 1, 1):.3g} simulated s per real s)")
    return EXIT_OK


def cmd_plot_extra(args) -> int:
    """`symgen plot RESULT --what mechanism` and `symgen plot STUDY/ --what sweep`."""
    if Path(args.output).suffix.lower() != ".png":
        raise UsageError(f"-o {args.output}: the plot file must end in .png")
    _check_output_file(args.output, "-o")
    _need_matplotlib()
    from ..plot import save
    if args.what == "sweep":
        from ..plot import sweep_figure
        from ..study import TABLE
        path = Path(args.result)
        table = path / TABLE if path.is_dir() else path
        if not table.is_file():
            raise UsageError(f"{path}: no study table (expected {table}, written by symgen sweep)")
        fig = sweep_figure(table, args.x, args.y)
        save(fig, args.output)
        ax = fig.axes[0]
        print(f"wrote {args.output}: {ax.get_ylabel()} against {ax.get_xlabel()}, "
              f"{len(ax.get_lines())} series")
        return EXIT_OK
    if args.snapshots < 1:
        raise UsageError(f"--snapshots must be at least 1, got {args.snapshots}")
    result = _load_result_arg(args.result)
    model = _drawing_model(args, result)
    from ..animation import snapshot_rows, strobe_figure
    fig = strobe_figure(result, model, snapshots=args.snapshots, up=args.up)
    save(fig, args.output)
    drawn = len(snapshot_rows(len(result.t), args.snapshots))
    print(f"wrote {args.output}: mechanism, {drawn} snapshots of {model.name}"
          + (f" (--snapshots {args.snapshots}: the result has {len(result.t)} rows)"
             if drawn < args.snapshots else ""))
    return EXIT_OK


# -- parsers --------------------------------------------------------------------------------------
def add_plot_arguments(s) -> None:
    """The options of ``symgen plot`` for ``--what mechanism`` and ``--what sweep``."""
    s.add_argument("--model", metavar="MODEL", help="--what mechanism: the model that made the "
                   "result (default: the shipped example the result names)")
    s.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="--what mechanism: a model() option of --model (e.g. N=40)")
    s.add_argument("--snapshots", type=int, default=6, help="--what mechanism: positions drawn")
    s.add_argument("--up", choices=("x", "y", "z"), default="y", help="--what mechanism, 3-D: "
                   "the axis drawn vertical (default y, as the default gravity along -y)")
    s.add_argument("--x", metavar="COLUMN", help="--what sweep: the grid key on the x axis")
    s.add_argument("--y", metavar="COLUMN", help="--what sweep: the table column plotted "
                   "(e.g. max_abs.theta)")


def add_parser(sub) -> None:
    """The ``animate`` sub-command."""
    s = sub.add_parser("animate", help="animate the mechanism of a result (.gif, or .mp4 with "
                       "ffmpeg)")
    s.add_argument("result", metavar="RESULT", help="a .npz or .csv written by simulate --out")
    s.add_argument("-o", "--output", required=True, metavar="FILE", help="motion.gif or .mp4")
    s.add_argument("--model", metavar="MODEL", help="the model that made the result (default: "
                   "the shipped example the result names; its hash must match)")
    s.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a model() option of --model (e.g. N=40)")
    s.add_argument("--fps", type=float, default=20.0, help="frames per second (default 20)")
    s.add_argument("--speed", type=float, default=1.0,
                   help="simulated seconds per real second (default 1)")
    s.add_argument("--every", type=int, metavar="K", help="one frame every K recorded steps "
                   "(instead of --speed)")
    s.add_argument("--trace", metavar="POINT", help="draw the path of a point (e.g. V0.B): a "
                   "drawn point or an output point")
    s.add_argument("--up", choices=("x", "y", "z"), default="y", help="3-D: the axis drawn "
                   "vertical (default y, as the default gravity along -y)")
    s.set_defaults(func=cmd_animate)
