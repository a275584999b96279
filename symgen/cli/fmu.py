"""The ``symgen export`` command (issue 23, item 3): a model as an FMI 2.0 or 3.0 co-simulation
FMU, and ``symgen fmu``, its alias for ``export --fmi 2``.

    symgen export MODEL --fmi 2|3 [-o MODEL.fmu] [--source-only] [--dt H|auto] [--rtol R]
                  [--atol A] [--chart C] [--metric M] [--preset paper] [--param NAME=VALUE]...
    symgen fmu MODEL [-o MODEL.fmu] [--source-only] [--dt H|auto] ...     (= export --fmi 2)

The FMU is :func:`symgen.fmu.export_fmu`'s (docs/fmu.md).
"""
from __future__ import annotations

from pathlib import Path

from .terminal import (EXIT_OK, UsageError, _check_output_file, _load, _with_defaults,
                       add_chart_options, parse_params)

__all__ = ["add_parser", "cmd_export"]


def _dt(text: str):
    """--dt: a number > 0 or auto (argparse type)."""
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--dt {text}: give a step > 0 or auto") from None
    if not value > 0 or value == float("inf"):
        raise UsageError(f"--dt {text}: give a step > 0 or auto")
    return value


def cmd_export(args) -> int:
    from ..fmu import export_fmu

    dt = _dt(args.dt) if args.dt is not None else None
    if (args.rtol is not None or args.atol is not None) and dt not in ("auto", None):
        raise UsageError("--rtol and --atol are the error control's: give them with --dt auto")
    if args.output:
        _check_output_file(args.output, "-o")
    mdl, numeric = _load(args.model, parse_params(args.param))
    mdl = _with_defaults(mdl, numeric)
    auto = dt == "auto" or (dt is None and str(mdl.settings.get("dt")).strip().lower() == "auto")
    if (args.rtol is not None or args.atol is not None) and not auto:   # (the model's dt: auto)
        raise UsageError("--rtol and --atol are the error control's: give them with --dt auto")
    out = Path(args.output) if args.output else Path(f"{mdl.name}.fmu")
    if not args.output:
        _check_output_file(out, "the FMU")
    path = export_fmu(mdl, out, fmi_version=args.fmi, dt=dt, rtol=args.rtol, atol=args.atol,
                      source_only=args.source_only, chart=args.chart, metric=args.metric,
                      preset=args.preset)
    step = "error-controlled steps" if auto else "a fixed internal step"
    what = "sources only" if args.source_only else step
    print(f"wrote {path} (FMI {args.fmi}.0 co-simulation, model {mdl.name}, {what})")
    return EXIT_OK


def _arguments(s, model_help: str, param_help: str) -> None:
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("-o", "--output", metavar="FILE.fmu", help="the FMU (default <model>.fmu)")
    s.add_argument("--source-only", action="store_true", help="no binary: the FMU carries only "
                   "its C sources (the importer builds them; nothing is compiled here)")
    s.add_argument("--dt", metavar="H|auto", help="the internal step (default: the model's "
                   "recommended dt; every communication step must be a multiple of it) or auto "
                   "(error-controlled steps ending on each communication point)")
    s.add_argument("--rtol", type=float, metavar="R", help="with --dt auto: relative tolerance "
                   "(default 1e-6)")
    s.add_argument("--atol", type=float, metavar="A", help="with --dt auto: absolute tolerance "
                   "(default 1e-8)")
    add_chart_options(s)
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    s.set_defaults(func=cmd_export)


def add_parser(sub, model_help: str, param_help: str) -> None:
    """The ``export`` sub-command and its alias ``fmu`` (FMI 2.0)."""
    s = sub.add_parser("export", help="export an FMI 2.0 or 3.0 co-simulation FMU (a binary for "
                       "this platform and the C sources)")
    s.add_argument("--fmi", type=int, choices=(2, 3), required=True, metavar="2|3",
                   help="the FMI version: 2 (FMI 2.0) or 3 (FMI 3.0)")
    _arguments(s, model_help, param_help)
    s = sub.add_parser("fmu", help="the same as `export --fmi 2` (an FMI 2.0 co-simulation FMU; "
                       "kept as an alias)")
    _arguments(s, model_help, param_help)
    s.set_defaults(fmi=2)
