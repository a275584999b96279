"""The ``symgen sweep`` command: a parameter or step-size study (:func:`symgen.sweep`) from
``--param NAME=VALUES`` grids, its one-line-a-run report, and its parser.
"""
from __future__ import annotations

import contextlib
import logging
import math
import numbers
import sys
from pathlib import Path

from ..settings import METHODS, SimulationSettings
from .terminal import (EXIT_OK, UsageError, _check_memory, _check_output_dir, _check_output_file,
                       _dt_value, _need_matplotlib, add_chart_options, progress_enabled)

__all__ = ["add_parser", "cmd_sweep"]


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
    from ..study import SweepError, parse_values
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
    """The simulate options of every run: --method, --scheme, --dt, --t-end, --preset (else the
    model's recommendation) unless the grid has them; the memory of the longest run checked."""
    from ..study import RUN_KEYS
    unknown = [k for k in grid if k not in RUN_KEYS and k not in mdl.param_names]
    if unknown:
        raise UsageError(f"--param {unknown[0]}: not a parameter of model {mdl.name!r} "
                         f"({', '.join(mdl.param_names) or 'none'}) nor one of "
                         f"{', '.join(RUN_KEYS)}")
    for key, values in grid.items():        # a model parameter takes numbers (study: float(v))
        if key in mdl.param_names:
            bad = [v for v in values if isinstance(v, bool) or not isinstance(v, numbers.Real)
                   or not math.isfinite(v)]
            if bad:
                raise UsageError(f"--param {key}: {bad[0]!r} is not a finite number (a model "
                                 f"parameter takes numbers, e.g. --param {key}=5:9:5 or "
                                 f"--param {key}=5,7)")
    if args.scheme is not None:                 # a bad --scheme is a usage error (exit 2)
        try:
            SimulationSettings(scheme=args.scheme)
        except ValueError as exc:
            raise UsageError(f"--scheme {args.scheme}: {exc}") from None
    options = {}
    for key in ("method", "scheme", "dt", "t_end", "preset"):
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
    from ..loader import load_model
    from ..study import sweep

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
        from ..plot import save, sweep_figure
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


# -- parser ---------------------------------------------------------------------------------------
def add_parser(sub, model_help: str, scheme_help: str) -> None:
    """The ``sweep`` sub-command."""
    s = sub.add_parser("sweep", help="a parameter/step-size study on Dask (one task per run)")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--param", action="append", metavar="NAME=VALUES",
                   help="a grid axis (repeatable): START:STOP:COUNT or V1,V2,…; a model "
                   "parameter or a setting (method, scheme, dt, t_end, tol, max_iter, rank_tol, "
                   "constraint_tol, factorization, divergence_bound, chart, metric, preset)")
    s.add_argument("--method", choices=METHODS, help="for every run (default: the model's)")
    s.add_argument("--scheme", metavar="SCHEME", help=scheme_help)
    s.add_argument("--dt", type=_dt_value, metavar="H", help="step size [s] of every run, or "
                   "'auto' (error-controlled; sweep --param rtol=… for a tolerance study)")
    s.add_argument("--t-end", type=float, metavar="T", help="end time [s] of every run")
    add_chart_options(s, chart=False)     # --preset (--chart names the figure here)
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
                   "figure; the runs' tangent chart is --param chart=symmetric,end, default "
                   "symmetric with metric mass, or --preset paper)")
    s.add_argument("--x", metavar="COLUMN", help="--chart: x axis (default: the first --param)")
    s.add_argument("--y", metavar="COLUMN", help="--chart: column (default: max_abs of the "
                   "first output)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_sweep)
