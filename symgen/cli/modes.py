"""The ``symgen modes`` command (issue 24): the natural modes of a model at a state, a table.

    symgen modes MODEL [--param NAME=VALUE]... [--set NAME=VALUE]... [--set-velocity NAME=VALUE]...
                       [--from RESULT --at T | --at-equilibrium] [--out modes.csv]
                       [--animate K -o mode.gif]
    symgen equilibrium MODEL [--param NAME=VALUE]... [--set NAME=VALUE]... [--t T]

The state is the model's initial state (with ``--set`` held as ``simulate`` does), the recorded
row of RESULT nearest to T, or (``--at-equilibrium``) the state at rest that Newton's method finds
from there (:func:`symgen.equilibrium`; the ``equilibrium`` command prints it: coordinates, λ,
residuals, stability).  The linearization and modes are :mod:`symgen.linear`'s.
``--animate K`` draws mode K oscillating about the state (:mod:`symgen.animation`), each frame's
x* + a·sin(2πs)·shape projected back onto the constraints q = 0.
"""
from __future__ import annotations

import csv
import functools
import io
import math
from pathlib import Path

from .terminal import (EXIT_FAILED, EXIT_OK, UsageError, _check_output_file, _need_matplotlib, _one_line,
                       _result_path,
                       add_assembly_options, parse_params)

__all__ = ["add_parser", "cmd_modes", "cmd_equilibrium"]

#: Coordinates (or outputs) named per mode in the table.
SHOWN = 3


def _row_at(result, at: float) -> int:
    """The recorded row nearest to ``at``; a UsageError if ``at`` is outside the result."""
    import numpy as np    # on use: `import symgen.cli` imports no numpy
    t = np.asarray(result.t, float)
    if not t.size:
        raise UsageError("the result has no recorded rows")
    half = 0.5 * float(np.min(np.diff(t))) if t.size > 1 else 0.0
    if not (math.isfinite(at) and t[0] - half <= at <= t[-1] + half):
        raise UsageError(f"--at {at:g} is outside the result (t = {t[0]:g} … {t[-1]:g} s); "
                         "give a time within it")
    return int(np.argmin(np.abs(t - at)))


def _state(args, mdl, numeric):
    """(linearize keyword arguments, words for the state) of the command's options."""
    held = parse_params(args.set, "--set")
    held_v = parse_params(args.set_velocity, "--set-velocity")
    if args.source is None:
        if args.at is not None:
            raise UsageError("--at needs --from RESULT")
        if not (held or held_v):
            return {}, "the initial state (t = 0)"
        from ..assembly import assemble
        x0, xd0 = assemble(mdl, fix=held, xd_fix=held_v, params=numeric)
        what = ", ".join(f"{k} = {v:g}" for k, v in {**held, **held_v}.items())
        return {"x": x0, "xd": xd0}, f"the assembled state with {what} (t = 0)"
    if held or held_v:
        raise UsageError("--set/--set-velocity and --from exclude each other (the state is the "
                         "result's)")
    if args.at is None:
        raise UsageError("--from needs --at T (the time of the recorded state)")
    from ..result import load_result
    result = load_result(_result_path(args.source))
    row = _row_at(result, args.at)
    return ({"source": result, "row": row},
            f"t = {result.t[row]:.9g} s of {args.source} (row {row})")


def cmd_modes(args, load, kernels_for) -> int:
    """``load(spec, params)`` → (model, numeric parameters) and ``kernels_for(model, backend,
    params)`` → kernels are the CLI's (:mod:`symgen.cli`), passed in to keep the imports one way."""
    from ..linear import linearize

    if args.out:
        if Path(args.out).suffix.lower() != ".csv":
            raise UsageError(f"--out {args.out}: the table must end in .csv")
        _check_output_file(args.out, "--out")
    _check_animation(args)
    mdl, numeric = load(args.model, parse_params(args.param))
    kw, where = _state(args, mdl, numeric)
    kernels = kernels_for(mdl, args.backend, {})
    if args.at_equilibrium:
        if "source" in kw:
            raise UsageError("--at-equilibrium and --from exclude each other")
        eq = _equilibrium(kernels, kw.get("x"), 0.0, numeric)
        kw = {"x": eq.x, "xd": [0.0] * len(eq.x)}
        where = (f"the equilibrium found from {where} ({eq.iterations} Newton step"
                 f"{'s' if eq.iterations != 1 else ''})")
    if "source" in kw:
        ls = linearize(kw.pop("source"), model=kernels, params=numeric or None, **kw)
    else:
        ls = linearize(kernels, params=numeric or None, **kw)
    md = ls.modes()
    for line in _table(mdl, ls, md, where):
        print(line)
    if args.out:
        from .._io import atomic_write_text
        atomic_write_text(args.out, _csv_text(ls, md))
        print(f"  table           {args.out}")
    if args.animate is not None:
        _animate_mode(args, mdl, kernels, ls, md)
    return EXIT_OK


def _equilibrium(kernels, x0, t, numeric):
    """:func:`symgen.equilibrium` from ``x0`` (None: the model's x0) with the command's parameters."""
    from ..statics import equilibrium
    return equilibrium(kernels, x0=x0, t=t, params=numeric or None)


def cmd_equilibrium(args, load, kernels_for) -> int:
    """The ``equilibrium`` command: the state at rest from the model's start (``--set`` held while
    assembling it), its coordinates, λ, residuals and stability; exit 3 when Newton's method does
    not converge."""
    import math as _math
    from ..statics import EquilibriumError

    if not _math.isfinite(args.t):
        raise UsageError(f"--t must be a finite time, got {args.t}")
    mdl, numeric = load(args.model, parse_params(args.param))
    kw, where = _state(args, mdl, numeric)
    kernels = kernels_for(mdl, args.backend, {})
    try:
        eq = _equilibrium(kernels, kw.get("x"), args.t, numeric)
    except EquilibriumError as exc:
        import sys
        print(f"error: {mdl.name}: {_one_line(exc, 400)}", file=sys.stderr)
        return EXIT_FAILED
    width = max([len(c) for c in eq.coord_names] + [len(c) for c in eq.constraint_names] + [8])
    lines = [f"{mdl.name}: equilibrium at t = {eq.t:g} s, found from {where.split(' (t =')[0]} "
             f"in {eq.iterations} Newton step{'s' if eq.iterations != 1 else ''}",
             "  coordinates"]
    lines += [f"    {c:<{width}}  {v:.12g}" for c, v in zip(eq.coord_names, eq.x)]
    if len(eq.lam):
        lines.append("  λ (the constraint forces Hᵀλ balance f)")
        names = eq.constraint_names or tuple(f"row {i}" for i in range(len(eq.lam)))
        lines += [f"    {c:<{width}}  {v:.12g}" for c, v in zip(names, eq.lam)]
    lines.append(f"  residuals       max |f + Hᵀλ| = {eq.force_residual:.3g}, max |q| = "
                 f"{eq.constraint_residual:.3g}")
    md = eq.modes
    if len(md):
        lines.append("  modes           ω = " + ", ".join(f"{w:.7g}" for w in md.omega[:6])
                     + (" …" if len(md) > 6 else "") + " rad/s"
                     + ("" if all(_math.isfinite(float(w)) for w in md.omega2.real) and
                        min(md.omega2.real) >= 0 else " (ω² < 0 counted by modulus)"))
    lines.append(f"  stability       {eq.verdict}")
    for line in lines:
        print(line)
    return EXIT_OK


def _check_animation(args) -> None:
    """--animate K needs -o FILE.gif|.mp4, a positive --amplitude and matplotlib (before work)."""
    if args.animate is None:
        if args.output:
            raise UsageError("-o names the animation of --animate K; the table is --out")
        return
    if not args.output or Path(args.output).suffix.lower() not in (".gif", ".mp4"):
        raise UsageError("--animate K needs -o FILE.gif (or .mp4)")
    if not (args.amplitude > 0 and math.isfinite(args.amplitude)):
        raise UsageError(f"--amplitude must be a positive number, got {args.amplitude}")
    _check_output_file(args.output, "-o")
    _need_matplotlib()


def mode_motion(kernels, ls, md, mode: int, amplitude: float, frames: int = 40):
    """One period of mode ``mode`` (0-based) as a Result: x* + a·sin(2πs)·shape (the largest
    coordinate moves by a), each frame projected onto q = 0 at t*; t runs over one period 2π/ω
    (1 s for a mode that does not oscillate)."""
    import numpy as np    # on use: `import symgen.cli` imports no numpy
    from ..assembly import consistent_state
    from ..result import Result

    w, oscillates = float(md.omega[mode]), float(np.real(md.omega2[mode])) > 0
    period = 2 * math.pi / w if oscillates and w > 0 else 1.0
    s = np.arange(frames + 1) / frames
    shape = np.real(md.x_shapes[mode])
    n, m, rows = len(ls.x), len(ls.lam), len(s)
    x = np.empty((rows, n))
    zeros = np.zeros(n)
    fix = ("give a smaller --amplitude (the coordinate that moves most moves by it, in its "
           "unit; default 0.1)")
    scale = float(np.max(np.abs(ls.x))) if n else 1.0
    with np.errstate(all="ignore"):          # an overflow is refused below, not a note
        for r, sr in enumerate(s):
            guess = ls.x + amplitude * math.sin(2 * math.pi * sr) * shape
            try:
                x[r] = (consistent_state(kernels, ls.t, guess, zeros, rank_tol=ls.rank_tol).x
                        if m else guess)
            except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
                raise UsageError(f"--amplitude {amplitude:g}: mode {mode + 1} cannot be drawn "
                                 f"there ({_one_line(exc, 160)}); {fix}") from None
            # the projection's tolerance is relative to |x|: a frame far out "meets" it
            rq = (float(np.max(np.abs(kernels.constraints(ls.t, x[r], zeros, zeros)[0])))
                  if m else 0.0)
            if not (np.all(np.isfinite(x[r])) and rq <= 1e-8 * max(1.0, scale)):
                raise UsageError(f"--amplitude {amplitude:g}: mode {mode + 1}'s frames overflow "
                                 f"or leave the constraints (|q| = {rq:.3g} at phase {sr:g}); "
                                 f"{fix}")
    z = np.zeros(rows)
    meta = {"model": ls.name, "model_hash": getattr(getattr(kernels, "model", None), "hash", None),
            "parameters": dict(ls.params)}
    return Result(t=ls.t + s * period, x=x, xd=np.zeros_like(x), xdd=np.zeros_like(x),
                  lam=np.zeros((rows, m)), coords=ls.coord_names, pos_err=z, vel_err=z,
                  acc_err=z, omega_max=z, h_max=z, newton_iters=np.zeros(rows, int), meta=meta), \
        period


def _animate_mode(args, mdl, kernels, ls, md) -> None:
    from ..animation import animate, model_for

    if not 1 <= args.animate <= len(md):
        raise UsageError(f"--animate {args.animate}: the state has {len(md)} mode"
                         f"{'s' if len(md) != 1 else ''} (1 … {len(md)})")
    res, period = mode_motion(kernels, ls, md, args.animate - 1, args.amplitude)
    import numpy as np
    from ..animation import evaluate
    with np.errstate(all="ignore"):
        lines = evaluate(model_for(res, mdl), res).lines
    if not all(np.all(np.isfinite(a)) for a in lines):
        raise UsageError(f"--amplitude {args.amplitude:g}: the drawing of mode {args.animate} "
                         "overflows; give a smaller --amplitude (default 0.1)")
    fps = 20.0
    animate(res, model_for(res, mdl), args.output, fps=fps, speed=period / 2.0)
    print(f"  animation       {args.output}: mode {args.animate}, amplitude {args.amplitude:g}, "
          f"one period ({period:.4g} s) in 2 s")


def _table(mdl, ls, md, where: str) -> list[str]:
    """The printed table: one line a mode, then the stability verdict."""
    import numpy as np    # on use: `import symgen.cli` imports no numpy
    lines = [f"{mdl.name}: {ls.k} mode{'s' if ls.k != 1 else ''} at {where}",
             f"  n = {len(ls.x)} coordinates, rank H = {ls.rank}, k = {ls.k} degree"
             f"{'s' if ls.k != 1 else ''} of freedom; "
             f"ω_max = {ls.omega_max:.10g} rad/s (the stepper's)",
             f"  {'mode':>4}  {'ω [rad/s]':>13}  {'f [Hz]':>12}  {'ζ':>9}  largest in x"]
    for i in range(len(md)):
        sign = "" if np.real(md.omega2[i]) >= 0 else " (ω² < 0)"
        big = ", ".join(f"{n} {v:+.3g}" for n, v in md.largest(i, SHOWN))
        moved = md.largest(i, SHOWN, outputs=True)
        if moved:
            big += "; outputs: " + ", ".join(f"{n} {v:.3g}" for n, v in moved)
        lines.append(f"  {i + 1:>4}  {md.omega[i]:>13.7g}  {md.f[i]:>12.6g}  "
                     f"{md.zeta[i]:>9.3g}  {big}{sign}")
    lines.append(f"  stability       {md.verdict}")
    return lines


def _csv_text(ls, md) -> str:
    """mode, ω, f, ζ, ω² (real part) and the x shape and output shape moduli, one row a mode."""
    import numpy as np    # on use: `import symgen.cli` imports no numpy
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["mode", "omega", "f", "zeta", "omega2"] + [f"x.{n}" for n in ls.coord_names]
               + [f"|y|.{n}" for n in ls.output_names])
    for i in range(len(md)):
        w.writerow([i + 1] + [repr(float(v)) for v in (md.omega[i], md.f[i], md.zeta[i],
                                                       np.real(md.omega2[i]))]
                   + [repr(float(np.real(v))) for v in md.x_shapes[i]]
                   + [repr(float(abs(v))) for v in md.output_shapes[i]])
    return buf.getvalue()


def add_parser(sub, model_help: str, param_help: str, load, kernels_for) -> None:
    """The ``modes`` sub-command (``load``, ``kernels_for``: see :func:`cmd_modes`)."""
    s = sub.add_parser("modes", help="natural frequencies, damping ratios and mode shapes of the "
                       "model linearized at a state")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    add_assembly_options(s, "state", "bar1.theta=0")
    s.add_argument("--from", dest="source", metavar="RESULT",
                   help="take the state from a result file (.npz or .csv of simulate --out)")
    s.add_argument("--at", type=float, metavar="T", help="with --from: the time of the state "
                   "(the recorded row nearest to T)")
    s.add_argument("--at-equilibrium", action="store_true", help="at the state at rest found "
                   "from the initial (or --set assembled) state, as `symgen equilibrium`")
    s.add_argument("--out", metavar="FILE.csv", help="also write the table with the mode shapes")
    s.add_argument("--animate", type=int, metavar="K", help="draw mode K (1 = the slowest) "
                   "oscillating about the state into -o FILE.gif or .mp4")
    s.add_argument("-o", "--output", metavar="FILE", help="with --animate: mode.gif or .mp4")
    s.add_argument("--amplitude", type=float, default=0.1, metavar="A", help="with --animate: "
                   "how far the coordinate that moves most moves, in its unit (default 0.1)")
    s.add_argument("--backend", choices=("c", "lambdify"), default="c",
                   help="kernels: compiled C (default) or sympy.lambdify (slow, no compiler)")
    s.set_defaults(func=functools.partial(cmd_modes, load=load, kernels_for=kernels_for))

    s = sub.add_parser("equilibrium", help="the state at rest (ẋ = ẍ = 0, constraints held) "
                       "nearest the initial state, its λ and stability")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    add_assembly_options(s, "start of the search", "bar1.theta=0.5")
    s.add_argument("--t", type=float, default=0.0, metavar="T",
                   help="the time (of rheonomic constraints and forces of t; default 0)")
    s.add_argument("--backend", choices=("c", "lambdify"), default="c",
                   help="kernels: compiled C (default) or sympy.lambdify (slow, no compiler)")
    s.set_defaults(func=functools.partial(cmd_equilibrium, load=load, kernels_for=kernels_for),
                   source=None, at=None)
