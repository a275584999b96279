"""The ``symgen`` commands of issue 13: ``animate``, ``sweep`` and ``plot --what mechanism|sweep``
(the drawing in :mod:`symgen.draw`, the study in :mod:`symgen.study`).  :mod:`symgen.cli` adds
their parsers (:func:`add_parsers`, :func:`add_plot_arguments`) and dispatches to them.
"""
from __future__ import annotations

import contextlib
import logging
import math
import sys
from pathlib import Path

from .settings import METHODS, SimulationSettings
from .terminal import (EXIT_OK, UsageError, _check_memory, _check_output_dir, _check_output_file,
                       _dt_value, _need_matplotlib, _result_path, parse_params,
                       progress_enabled)

__all__ = ["add_parsers", "add_plot_arguments", "cmd_animate", "cmd_sweep", "cmd_plot_extra"]


def _drawing_model(args, result):
    """The model whose drawing fits ``result``: --model (with --param model() options), else the
    shipped example the result names (symgen.draw.model_for)."""
    from .draw import model_for
    model = None
    if args.model:
        from .loader import load_model, load_module, model_options
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
    from .result import load_result
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
    from .draw import animate
    anim = animate(result, model, out, fps=args.fps, speed=args.speed, trace=args.trace,
                   every=args.every)
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
    from .plot import save
    if args.what == "sweep":
        from .plot import sweep_figure
        from .study import TABLE
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
    from .draw import strobe_figure
    fig = strobe_figure(result, model, snapshots=args.snapshots)
    save(fig, args.output)
    print(f"wrote {args.output}: mechanism, {args.snapshots} snapshots of {model.name}")
    return EXIT_OK


def _quiet_dask_logs() -> None:
    """Keep the Dask cluster's start/stop chatter (INFO records of the `distributed` loggers,
    whose levels distributed sets when imported) out of the terminal."""
    try:
        import distributed  # noqa: F401  (sets its loggers' levels; do it before we change them)
    except ImportError:
        return
    for name in ["distributed"] + [n for n in logging.root.manager.loggerDict
                                   if n.startswith("distributed.")]:
        logging.getLogger(name).setLevel(logging.ERROR)


@contextlib.contextmanager
def _study_notes():
    """The sweep's warnings (a scheduler without workers, a damaged run file run again) as
    ``note: …`` lines on stderr when they happen: a waiting sweep says so at once."""
    log = logging.getLogger("symgen.study")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("note: %(message)s"))
    handler.setLevel(logging.WARNING)
    level, propagate = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.WARNING)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate


def _grid(items) -> dict:
    """``--param NAME=VALUES`` items → the grid (UsageError naming a malformed item)."""
    from .study import SweepError, parse_values
    grid = {}
    for item in items or []:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise UsageError(f"malformed --param {item!r}: expected NAME=VALUES, e.g. "
                             "--param T0=5:9:5 or --param dt=0.1,0.05")
        if name in grid:
            raise UsageError(f"--param {name} is given twice")
        try:
            grid[name] = parse_values(values)
        except SweepError as exc:
            raise UsageError(f"--param {item}: {exc}") from None
    if not grid:
        raise UsageError("give at least one --param NAME=VALUES to sweep")
    return grid


def _sweep_options(args, mdl, grid: dict) -> dict:
    """The simulate options of every run: --method, --scheme, --dt, --t-end (else the model's
    recommendation) unless the grid has them; the memory of the longest run checked."""
    from .study import RUN_KEYS
    unknown = [k for k in grid if k not in RUN_KEYS and k not in mdl.param_names]
    if unknown:
        raise UsageError(f"--param {unknown[0]}: not a parameter of model {mdl.name!r} "
                         f"({', '.join(mdl.param_names) or 'none'}) nor one of "
                         f"{', '.join(RUN_KEYS)}")
    if args.scheme is not None:                 # a bad --scheme is a usage error (exit 2)
        try:
            SimulationSettings(scheme=args.scheme)
        except ValueError as exc:
            raise UsageError(f"--scheme {args.scheme}: {exc}") from None
    options = {}
    for key in ("method", "scheme", "dt", "t_end"):
        given = getattr(args, key)
        if key in grid:
            if given is not None:
                raise UsageError(f"--{key.replace('_', '-')} and --param {key}=… both given")
            continue
        options[key] = given if given is not None else mdl.settings.get(key)
    for key in ("dt", "t_end"):
        if key in options and options[key] is None:
            raise UsageError(f"model {mdl.name!r} recommends no {key}; give "
                             f"--{key.replace('_', '-')}")
    if "auto" in grid.get("dt", [options.get("dt")]):       # variable steps: rows as they come
        options["every"] = args.every
        return options
    try:
        dts = [float(v) for v in grid.get("dt", [options.get("dt")])]
        ends = [float(v) for v in grid.get("t_end", [options.get("t_end")])]
    except (TypeError, ValueError):
        raise UsageError("--param dt and t_end take numbers") from None
    if min(dts) > 0 and all(math.isfinite(v) for v in dts + ends):
        _check_memory(min(dts), max(ends), args.every, mdl)     # the longest run of the grid
    options["every"] = args.every
    return options


def cmd_sweep(args) -> int:
    from .loader import load_model
    from .study import sweep

    grid = _grid(args.param)
    if args.workers < 0:
        raise UsageError(f"--workers must be ≥ 0, got {args.workers}")
    if args.every < 1:
        raise UsageError(f"--every must be a positive integer, got {args.every}")
    if args.out:
        _check_output_dir(args.out, "--out")
    if args.chart:
        if args.chart in ("end", "symmetric"):
            raise UsageError(f"--chart names the figure file (FILE.png); for the tangent chart "
                             f"give --param chart={args.chart}")
        if Path(args.chart).suffix.lower() != ".png":
            raise UsageError(f"--chart {args.chart}: the chart must end in .png")
        _check_output_file(args.chart, "--chart")
        _need_matplotlib()
    mdl = load_model(args.model)
    options = _sweep_options(args, mdl, grid)
    if args.timeout is not None and not (args.timeout > 0 and math.isfinite(args.timeout)):
        raise UsageError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    _quiet_dask_logs()
    with _study_notes():
        study = sweep(mdl, grid, out=args.out, workers=args.workers, scheduler=args.scheduler,
                      retries=args.retries, progress=progress_enabled(args.quiet),
                      timeout=args.timeout, **options)
    _print_study(mdl, grid, study, args.out)
    if args.chart:
        from .plot import save, sweep_figure
        save(sweep_figure(study.rows, args.x, args.y), args.chart)
        print(f"  chart           {args.chart}")
    return EXIT_OK


def _print_study(mdl, grid: dict, study, out) -> None:
    """One line for the study, one a run (up to 50 runs; else the first 10 not completed)."""
    bad = study.failed()
    where = f", {study.skipped} found in {out}" if out else ""
    print(f"{mdl.name}: {len(study.rows)} runs ({study.ran} run now{where}), "
          f"{len(study.rows) - len(bad)} completed, {len(bad)} not, {study.wall_time:.2f} s")
    show = [c for c in study.columns if c.startswith("max_abs.")][:2]
    if len(study.rows) <= 50:
        for r in study.rows:
            point = ", ".join(f"{k} = {r[k]:g}" if isinstance(r[k], float) else f"{k} = {r[k]}"
                              for k in grid)
            figures = ", ".join(f"{c} = {r[c]:.6g}" for c in show
                                if isinstance(r.get(c), (int, float)))
            print(f"  {r['status']:9s} {point}: {figures or r['reason']}"
                  + (f" ({r['reason'][:100]} …)" if r["status"] != "completed" and figures
                     else ""))
    else:
        for r in bad[:10]:
            point = ", ".join(f"{k} = {r[k]}" for k in grid)
            print(f"  {r['status']:9s} {point}: {r['reason']}")
    if study.table_path is not None:
        print(f"  table           {study.table_path}")


# -- parsers --------------------------------------------------------------------------------------
def add_plot_arguments(s) -> None:
    """The options of ``symgen plot`` for ``--what mechanism`` and ``--what sweep``."""
    s.add_argument("--model", metavar="MODEL", help="--what mechanism: the model that made the "
                   "result (default: the shipped example the result names)")
    s.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="--what mechanism: a model() option of --model (e.g. N=40)")
    s.add_argument("--snapshots", type=int, default=6, help="--what mechanism: positions drawn")
    s.add_argument("--x", metavar="COLUMN", help="--what sweep: the grid key on the x axis")
    s.add_argument("--y", metavar="COLUMN", help="--what sweep: the table column plotted "
                   "(e.g. max_abs.theta)")


def add_parsers(sub, model_help: str, scheme_help: str) -> None:
    """The ``animate`` and ``sweep`` sub-commands."""
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
    s.add_argument("--trace", metavar="POINT", help="draw the path of a point (e.g. V0.B)")
    s.set_defaults(func=cmd_animate)

    s = sub.add_parser("sweep", help="a parameter/step-size study on Dask (one task per run)")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--param", action="append", metavar="NAME=VALUES",
                   help="a grid axis (repeatable): START:STOP:COUNT or V1,V2,…; a model "
                   "parameter or a setting (method, scheme, dt, t_end, tol, max_iter, rank_tol, "
                   "constraint_tol, factorization, divergence_bound, chart)")
    s.add_argument("--method", choices=METHODS, help="for every run (default: the model's)")
    s.add_argument("--scheme", metavar="SCHEME", help=scheme_help)
    s.add_argument("--dt", type=_dt_value, metavar="H", help="step size [s] of every run, or "
                   "'auto' (error-controlled; sweep --param rtol=… for a tolerance study)")
    s.add_argument("--t-end", type=float, metavar="T", help="end time [s] of every run")
    s.add_argument("--every", type=int, default=1, metavar="K",
                   help="record every K-th step of each run (the table's maxima still cover "
                   "every step)")
    s.add_argument("--out", metavar="DIR", help="study folder: runs/*.npz and table.csv; "
                   "re-running skips the runs already there")
    s.add_argument("--workers", type=int, default=2, help="local Dask worker processes "
                   "(default 2; 0: serial, no Dask)")
    s.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask cluster, e.g. "
                   "tcp://HOST:8786 (instead of a local one)")
    s.add_argument("--retries", type=int, default=2, help="retries of a run whose worker was "
                   "lost (default 2)")
    s.add_argument("--timeout", type=float, metavar="SECONDS", help="give up waiting for the "
                   "Dask runs after SECONDS (the finished runs stay in --out; re-running resumes)")
    s.add_argument("--chart", metavar="FILE.png", help="also plot --y against --x (the "
                   "figure; the tangent chart of the runs is --param chart=end,symmetric)")
    s.add_argument("--x", metavar="COLUMN", help="--chart: x axis (default: the first --param)")
    s.add_argument("--y", metavar="COLUMN", help="--chart: column (default: max_abs of the "
                   "first output)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_sweep)
