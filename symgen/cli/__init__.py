"""The ``symgen`` command line.

    symgen show MODEL [--term NAME] [--latex] [--per-body]
    symgen generate MODEL [-o DIR] [--runtime-dir DIR]
    symgen export MODEL --fmi 2|3 [-o MODEL.fmu] [--source-only] [--dt H|auto] [--rtol R]
                  [--atol A] [--preset paper]    (symgen fmu MODEL ...: export --fmi 2)
    symgen simulate MODEL [--method M] [--scheme S] [--dt H] [--t-end T] [--preset paper]
                          [--chart C] [--metric M] [--param NAME=VALUE]...
                          [--set NAME=VALUE]... [--set-velocity NAME=VALUE]...
                          [--out FILE.npz|FILE.csv] [--plot FILE.png] [--every K] [--estimate]
                          [--quiet]
    symgen plot RESULT [--what VIEW] -o FILE.png
    symgen plot RESULT --what mechanism [--model MODEL] -o FILE.png
    symgen plot STUDY/ --what sweep --x KEY --y COLUMN -o FILE.png
    symgen animate RESULT -o motion.gif|.mp4 [--model MODEL] [--fps F] [--speed S] [--every K]
                          [--trace POINT]
    symgen sweep MODEL --param NAME=START:STOP:COUNT|V1,V2... [--preset paper] [--out DIR]
                       [--workers N] [--scheduler tcp://HOST:8786]
                       [--chart FILE.png --x KEY --y COLUMN]
    symgen stability MODEL [--scheme S]
    symgen modes MODEL [--param NAME=VALUE]... [--set NAME=VALUE]...
                       [--from RESULT --at T | --at-equilibrium] [--out modes.csv]
    symgen equilibrium MODEL [--param NAME=VALUE]... [--set NAME=VALUE]... [--t T]
    symgen reproduce [--out DIR] [--quick]

MODEL is the name of a shipped example (``stiff_pendulum``) or a path to a Python file that
defines ``model()``.  Exit codes: 0 success; 2 bad usage, a model error, a file that cannot be
read or written, a compiler failure, or a ``--plot`` that could not be drawn (one line on stderr,
no traceback); 3 a simulation that diverged or failed (its result file is still written), an equilibrium
Newton's method did not find; 130
(Ctrl-C) or 143 (SIGTERM): interrupted (a simulation interrupted while stepping still writes the
steps it took, status ``interrupted``); 1 an internal error (one line).  ``simulate --quiet``
prints nothing but errors (a failed or interrupted run: one line on stderr).  The first run of a
model says on stderr that it is generating and compiling its C (later runs hit the cache).
Set ``SYMGEN_DEBUG=1`` to get the traceback instead of the one-line message.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from pathlib import Path

from ..settings import FACTORIZATIONS, METHODS, PRESETS, SimulationSettings
from .fmu import add_parser as add_fmu_parser
from .modes import add_parser as add_modes_parser
from .pictures import add_parser as add_animate_parser
from .pictures import add_plot_arguments, cmd_plot_extra
from .show import add_parser as add_show_parser
from .sweep import add_parser as add_sweep_parser
from .terminal import (EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_SIGINT,  # noqa: F401
                       EXIT_SIGTERM, EXIT_USAGE, MATPLOTLIB_HINT, QUIET_NOTE_DELAY,
                       Terminated, UsageError, _build_failure, _build_notes, _check_memory,
                       _check_output_dir, _t_eval_times,
                       _check_output_file, _interrupt_exit_code, _need_matplotlib,
                       _load, _newton_options, _one_line, _Progress, _result_path,
                       _sigterm_as_interrupt, _warnings_as_notes, _with_defaults,
                       add_assembly_options, add_chart_options, add_step_options,
                       check_step_options, parse_params,
                       progress_enabled, report_error)

__all__ = ["main", "UsageError", "parse_params", "summary_lines"]

SCHEME_HELP = "trapezoidal, fox-goodwin, linear-acceleration, or GAMMA,BETA (e.g. 0.5001,0.2507)"
MODEL_HELP = "a shipped example name (e.g. stiff_pendulum) or a .py file defining model()"
PARAM_HELP = ("set a model parameter (repeatable), e.g. --param T0=9 (show and generate take it "
              "as the new default); a name that model() accepts as an option (e.g. N) rebuilds "
              "the model with it")


def summary_lines(result, name: str, wall: float, h: float | None = None) -> list[str]:
    """Result.summary's lines (symgen.summary; imported on use: this module imports no numpy)."""
    from ..summary import summary_lines as lines
    return lines(result, name, wall, h=h)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``symgen simulate: error: ...``) and exit code 2."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


# -- helpers --------------------------------------------------------------------------------------
def _kernels(model, backend: str, params: dict, quiet: int = 0):
    if backend == "lambdify":
        from ..kernels import LambdifyKernels
        k = LambdifyKernels(model)
    else:
        from .. import build
        with _build_notes(quiet < 2, delay=QUIET_NOTE_DELAY if quiet == 1 else 0.0):
            k = build(model)
    if params:
        k.set_params(params)
    return k


def _scheme(spec):
    if spec is None:
        return None
    from ..steppers import parse_scheme
    parse_scheme(spec)  # ValueError on unknown names: exit 2 before any work
    return spec


# -- commands -------------------------------------------------------------------------------------
def cmd_generate(args) -> int:
    from .. import generate

    outdir = Path(args.output) if args.output else None
    if outdir is not None:
        _check_output_dir(outdir, "-o")
    runtime_dir = Path(args.runtime_dir) if args.runtime_dir else None
    if runtime_dir is not None:
        _check_output_dir(runtime_dir, "--runtime-dir")
    mdl, numeric = _load(args.model, parse_params(args.param))
    mdl = _with_defaults(mdl, numeric)
    if outdir is None:
        outdir = Path("generated") / mdl.name
        _check_output_dir(outdir, "the output folder")
    src = generate(mdl)
    paths = src.write(outdir, runtime_dir)
    also = f" (the runtime's to {runtime_dir}/)" if runtime_dir is not None else ""
    print(f"wrote {len(paths)} files for model {mdl.name} to {outdir}/{also}:")
    for path in paths:
        print(f"  {path}")
    return EXIT_OK


def cmd_simulate(args) -> int:
    params = parse_params(args.param)
    held = parse_params(args.set, "--set")
    held_v = parse_params(args.set_velocity, "--set-velocity")
    if args.out and Path(args.out).suffix.lower() not in (".npz", ".csv"):
        raise UsageError(f"--out {args.out}: the result file must end in .npz or .csv")
    if args.plot and Path(args.plot).suffix.lower() != ".png":
        raise UsageError(f"--plot {args.plot}: the plot file must end in .png")
    if args.every < 1:
        raise UsageError(f"--every must be a positive integer, got {args.every}")
    if args.out:
        _check_output_file(args.out, "--out")
    if args.plot:
        _check_output_file(args.plot, "--plot")
        _need_matplotlib()
    check_step_options(args)
    if args.t_end is not None and not (args.t_end > 0 and math.isfinite(args.t_end)):
        raise UsageError(f"--t-end must be a positive number, got {args.t_end}")
    _scheme(args.scheme)
    newton = _newton_options(args)
    mdl, numeric = _load(args.model, params)
    options = {k: v for k, v in params.items() if k not in numeric}   # went to model()
    settings = SimulationSettings.merged(mdl.settings, method=args.method, scheme=args.scheme,
                                         dt=args.dt, t_end=args.t_end, chart=args.chart,
                                         metric=args.metric, preset=args.preset,
                                         stepper=args.stepper, factorization=args.factorization,
                                         rtol=args.rtol, atol=args.atol, h_init=args.h_init,
                                         h_max=args.h_max, **newton)
    if settings.dt is None or settings.t_end is None:
        missing = "--dt" if settings.dt is None else "--t-end"
        raise UsageError(f"model {mdl.name!r} recommends no {missing.lstrip('-').replace('-', '_')}; "
                         f"give {missing}")
    dt = math.nan if settings.auto else float(settings.dt)
    if not settings.auto:
        given = [f"--{f.replace('_', '-')}" for f in ("rtol", "atol", "h_init", "h_max")
                 if getattr(args, f) is not None]
        if given:       # (export refuses them as well: a fixed step has no error control)
            raise UsageError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} the "
                             f"error control's, which a fixed step (--dt {dt:g}) does not use: "
                             "give --dt auto, or leave them out")
        _check_memory(dt, float(settings.t_end), args.every, mdl)
    from ..input_values import check_names, parse_input_options
    law = _controller_law(args)
    try:
        inputs = parse_input_options(args.input, args.input_interpolation)
        check_names(mdl.name, mdl.input_names,              # before a build
                    {**{n: 0.0 for n in (mdl.input_names if law else ())}, **inputs})
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    t_eval = _t_eval_times(args.t_eval, mdl)                # before a build
    kernels = _kernels(mdl, args.backend, numeric, quiet=args.quiet)
    x0 = xd0 = None
    if held or held_v:
        from .. import assemble
        x0, xd0 = assemble(mdl, fix=held, xd_fix=held_v, params=numeric)

    from .. import simulate

    progress = _Progress(progress_enabled(args.quiet), mdl.name)
    start = time.perf_counter()
    try:
        with _warnings_as_notes(quiet=args.quiet):
            result = simulate(kernels, settings, params=numeric or None, progress=progress,
                              every=args.every, x0=x0, xd0=xd0, t_eval=t_eval,
                              inputs=inputs, controller=law, period=args.period,
                              estimate=True if args.estimate or args.what == "stability" else None,
                              meta={"model_spec": str(args.model), "model_options": options})
    finally:
        progress.close()
    wall = time.perf_counter() - start

    written, plot_error = [], None
    if args.out:
        result.save(args.out)
        written.append(f"result          {args.out}")
    if args.plot:
        from ..plot import plot_result
        what = args.what or ("outputs" if result.outputs.shape[1] else "coordinates")
        try:
            plot_result(result, what, args.plot)
            written.append(f"plot            {args.plot} ({what})")
        except (ValueError, OSError) as exc:
            plot_error = f"--plot {args.plot} not written: {_one_line(exc)}"
            written.append(f"plot            not written: {_one_line(exc)}")
    if not args.quiet:
        for line in result.summary(mdl.name, wall, h=None if settings.auto else dt):
            print(line)
        for line in written:
            print(f"  {line}")
    if result.status == "interrupted":
        kept = f"; the steps taken are in {args.out}" if args.out else ""
        print(f"{mdl.name}: {result.reason}{kept}", file=sys.stderr)
        return _interrupt_exit_code()
    if args.quiet and not result.ok:
        kept = f" (the steps taken are in {args.out})" if args.out else ""
        print(f"error: {mdl.name}: {result.status}: {_one_line(result.reason)}{kept}",
              file=sys.stderr)
    if not result.ok:                       # (a terminal event is an end as asked: exit 0)
        return EXIT_FAILED
    if plot_error:
        print(f"error: {plot_error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _controller_law(args):
    """``--controller NAME``: the function law(t, x, xd) of that name in the model's file, with
    ``--period TS`` (simulate's controller=, period=; docs/inputs.md), or None."""
    if args.controller is None and args.period is None:
        return None
    if args.controller is None or args.period is None:
        raise UsageError("--controller NAME and --period TS go together: a function law(t, x, xd) "
                         "of the model's file, sampled every TS s (docs/inputs.md)")
    from ..loader import load_module

    law = getattr(load_module(args.model), args.controller, None)
    if not callable(law):
        raise UsageError(f"the file of model {args.model!r} defines no function "
                         f"{args.controller!r} (a controller law(t, x, xd) returning the inputs' "
                         "values)")
    return law


def cmd_plot(args) -> int:
    if args.what in ("mechanism", "sweep"):
        return cmd_plot_extra(args)
    from ..result import load_result

    path = _result_path(args.result)
    if Path(args.output).suffix.lower() != ".png":
        raise UsageError(f"-o {args.output}: the plot file must end in .png")
    _check_output_file(args.output, "-o")
    _need_matplotlib()
    from ..plot import plot_result

    result = load_result(path)
    fig = plot_result(result, args.what, args.output, select=args.select)
    nlines = sum(len(ax.get_lines()) for ax in fig.axes)
    print(f"wrote {args.output}: {args.what}, {nlines} series, {len(result.t)} points")
    return EXIT_OK


def cmd_stability(args) -> int:
    from ..stability import stability_words, suggest_step

    params = parse_params(args.param)
    _scheme(args.scheme)
    args.tol = args.max_iter = None
    mdl, numeric = _load(args.model, params)
    settings = SimulationSettings.merged(mdl.settings, scheme=args.scheme, preset=args.preset,
                                         **_newton_options(args))
    scheme, sch = settings.scheme, settings.parsed_scheme()
    kernels = _kernels(mdl, args.backend, numeric)
    omega, h_max = suggest_step(kernels, args.scheme, rank_tol=settings.rank_tol,
                                preset=args.preset)
    omega, h_max = float(omega), float(h_max)
    print(f"{mdl.name}: stability at the initial state (t = 0)")
    print(f"  scheme          {scheme} (γ = {sch.gamma:g}, β = {sch.beta:g})")
    print(f"  ω_max           {omega:.10g} rad/s")
    if math.isfinite(h_max):
        print(f"  safe step       h ≤ {h_max:.6g} s (Eq. 11: h ≤ (1/ω_max)·√(1/(γ/2 − β)))")
    else:
        print(f"  safe step       "
              f"{stability_words(omega, h_max, sch.gamma, sch.beta, sch.a_stable)}")
    h = mdl.settings.get("dt")
    if isinstance(h, (int, float)):
        if math.isnan(h_max):
            verdict = "not checked"
        else:
            verdict = f"{'within' if h <= h_max else 'ABOVE'} the limit"
        print(f"  recommended h   {h:g} s ({verdict})")
    return EXIT_OK


def cmd_reproduce(args) -> int:
    _check_output_dir(args.out, "--out")
    _need_matplotlib()
    from ..reproduce import run

    say = None if args.quiet else (lambda msg: print(msg, flush=True))
    report = run(out=Path(args.out), quick=args.quick, progress=say)
    print(f"wrote {report.path}")
    for line in report.table_lines():
        print(line)
    for name, err in report.errors.items():
        print(f"experiment {name!r} stopped with an error: {err}", file=sys.stderr)
    # disagreements with the paper are findings (exit 0); a broken experiment is not
    return EXIT_FAILED if report.errors else EXIT_OK


# -- parser ---------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from ..version import __version__

    p = _Parser(prog="symgen", description="Symbolic constrained mechanisms → generated C → "
                "stable null-space Newmark simulation (Fernández de Bustos et al., 2022).")
    p.add_argument("--version", action="version", version=f"symgen {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add_show_parser(sub, MODEL_HELP, PARAM_HELP)
    model_help, param_help = MODEL_HELP, PARAM_HELP
    s = sub.add_parser("generate", help="write the standalone C")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("-o", "--output", metavar="DIR", help="output folder (default generated/<model>/)")
    s.add_argument("--runtime-dir", metavar="DIR",
                   help="write the C runtime's files to DIR instead of the output folder (one "
                        "copy for several models; compile with -IDIR)")
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    s.set_defaults(func=cmd_generate)
    add_fmu_parser(sub, model_help, param_help)       # export, fmu (cli_fmu)

    s = sub.add_parser("simulate", help="simulate a model and print a summary")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--method", choices=METHODS, help="nullspace (the paper's method), index3 "
                   "(classical), newmark or central-difference (unconstrained models); "
                   "default: the model's recommendation")
    s.add_argument("--scheme", metavar="SCHEME", help=SCHEME_HELP)
    add_chart_options(s)
    add_step_options(s)
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    add_assembly_options(s)
    s.add_argument("--input", action="append", metavar="NAME=NUMBER|FILE.csv",
                   help="a value of the model's input NAME (repeatable): a number, or a CSV of "
                   "two columns, time and value (docs/inputs.md)")
    s.add_argument("--input-interpolation", choices=("linear", "hold"), default="linear",
                   help="between the times of an --input CSV: 'linear' (default) or 'hold' (a "
                   "value applies after its time)")
    s.add_argument("--controller", metavar="NAME", help="a controller: the function NAME(t, x, "
                   "xd) of the model's file, returning the inputs --input does not give; "
                   "sampled every --period and held (docs/inputs.md)")
    s.add_argument("--period", type=float, metavar="TS", help="the --controller's sample period (s)")
    s.add_argument("--out", metavar="FILE", help="write the result (.npz or .csv)")
    s.add_argument("--plot", metavar="FILE.png", help="plot the result to a PNG")
    s.add_argument("--what", choices=_what(), default=None,
                   help="what --plot draws (default: the outputs, or the coordinates of a model "
                   "without outputs)")
    s.add_argument("--every", type=int, default=1, metavar="K",
                   help="record every K-th step and the last (default 1: every step); the "
                   "summary's maxima (‖q‖, iterations, h_max) still cover every step")
    s.add_argument("--estimate", action="store_true", help="compute and record ω_max and h_max at "
                   "every step (default: at the start, and every step only where the step has a "
                   "stability limit; --what stability turns it on)")
    s.add_argument("--quiet", "-q", action="count", default=0, help="print nothing but errors: no "
                   "summary, no progress bar, no notes but one when a first compile takes more "
                   "than 2 s (-qq: not that either); a failed or interrupted run still says so on "
                   "stderr")
    s.add_argument("--tol", type=float, metavar="TOL", help="Newton tolerance, relative update "
                   "of (x, h·xd, h²·xdd) (default: the model's, else 1e-10)")
    s.add_argument("--max-iter", type=float, metavar="N", help="Newton iterations per step "
                   "(default: the model's, else 25)")
    s.add_argument("--rank-tol", type=float, metavar="R", help="relative rank tolerance of H, "
                   "0 <= R <= 1e-2 (default: the model's, else 1e-10)")
    s.add_argument("--backend", choices=("c", "lambdify"), default="c",
                   help="kernels: compiled C (default) or sympy.lambdify (slow, no compiler)")
    s.add_argument("--stepper", choices=("auto", "compiled", "python"), default=None,
                   help="compiled: the whole step in C; python: the reference steppers; auto "
                   "(default): compiled with C kernels where the runtime has the case")
    s.add_argument("--factorization", choices=FACTORIZATIONS, default=None,
                   help="factorization of H each Newton iteration: svd, qr (pivoted), sparse "
                   "(a sparse LU of a square block of H, for large mechanisms; either chart) "
                   "or auto (default: the model's, else the sparse step for a nullspace run "
                   "from 10 coordinates on with a sparse H, QR otherwise; both steppers alike)")
    s.set_defaults(func=cmd_simulate)

    s = sub.add_parser("plot", help="plot a result file")
    s.add_argument("result", metavar="RESULT", help="a .npz or .csv written by simulate --out")
    s.add_argument("--what", choices=_what() + ["mechanism", "sweep"], default="coordinates",
                   help="what to plot (mechanism: a strobe figure of the mechanism; sweep: a "
                   "study folder's table)")
    s.add_argument("--select", nargs="+", metavar="NAME",
                   help="only these coordinates or outputs")
    s.add_argument("-o", "--output", required=True, metavar="FILE.png", help="the PNG to write")
    add_plot_arguments(s)                 # --what mechanism|sweep (cli.pictures)
    s.set_defaults(func=cmd_plot)

    add_animate_parser(sub)                       # animate (cli.pictures)
    add_sweep_parser(sub, model_help, SCHEME_HELP)     # sweep (cli.sweep)

    s = sub.add_parser("stability", help="ω_max and the safe step at the initial state")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--scheme", metavar="SCHEME", help=SCHEME_HELP)
    s.add_argument("--preset", choices=tuple(PRESETS), default=None,
                   help="'paper': the paper's step's Eq. 11 limit (the default corrected step is "
                   "A-stable: no limit)")
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    s.add_argument("--rank-tol", type=float, metavar="R", help="relative rank tolerance of H, "
                   "0 <= R <= 1e-2 (default: the model's, else 1e-10)")
    s.add_argument("--backend", choices=("c", "lambdify"), default="c", help=argparse.SUPPRESS)
    s.set_defaults(func=cmd_stability)

    add_modes_parser(sub, model_help, param_help, _load, _kernels)    # modes (cli.modes)

    s = sub.add_parser("reproduce", help="rerun the paper's experiments and write a report "
                       "(exit 3 if an experiment broke)")
    s.add_argument("--out", default="reproduction", metavar="DIR",
                   help="report folder (default reproduction/)")
    s.add_argument("--quick", action="store_true", help="a reduced set, under a minute (CI)")
    s.add_argument("--quiet", action="store_true", help="no progress messages")
    s.set_defaults(func=cmd_reproduce)
    return p


def _what():
    return ["coordinates", "outputs", "constraints", "stability", "energy", "reactions"]


def main(argv=None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 usage/model/file error, 3 failed run,
    1 internal error)."""
    root = logging.getLogger()
    if not root.handlers:
        # the summary reports failures; keep the library's warnings (and its INFO notes, which
        # the CLI prints itself) out of the terminal
        logging.basicConfig(level=logging.ERROR, format="symgen: %(message)s")
        for handler in root.handlers:
            handler.setLevel(logging.ERROR)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        quiet = args.command == "simulate" and args.quiet
        with _sigterm_as_interrupt(), _warnings_as_notes(quiet=quiet):
            return args.func(args)
    except UsageError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        print("interrupted" + (" (SIGTERM)" if isinstance(exc, Terminated) else ""),
              file=sys.stderr)
        return EXIT_SIGTERM if isinstance(exc, Terminated) else EXIT_SIGINT
    except BrokenPipeError:
        # the reader went away (`symgen show ... | head`): silence the final flush
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_OK
    except Exception as exc:  # one line, no traceback (SYMGEN_DEBUG=1 shows it)
        if os.environ.get("SYMGEN_DEBUG"):
            raise
        return report_error(exc)

