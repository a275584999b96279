"""The ``symgen`` command line.

    symgen show MODEL [--term NAME] [--latex]
    symgen generate MODEL [-o DIR]
    symgen simulate MODEL [--method M] [--scheme S] [--dt H] [--t-end T] [--param NAME=VALUE]...
                          [--out FILE.npz|FILE.csv] [--plot FILE.png] [--quiet]
    symgen plot RESULT [--what VIEW] -o FILE.png
    symgen stability MODEL [--scheme S]
    symgen reproduce [--out DIR] [--quick]

MODEL is the name of a shipped example (``stiff_pendulum``) or a path to a Python file that
defines ``model()``.  Exit codes: 0 success; 2 bad usage, a model error, a file that cannot be
read or written, a compiler failure, or a ``--plot`` that could not be drawn (one line on stderr,
no traceback); 3 a simulation that diverged or failed (its result file is still written); 1 an
internal error (one line).
Set ``SYMGEN_DEBUG=1`` to get the traceback instead of the one-line message.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

__all__ = ["main", "UsageError", "parse_params", "summary_lines"]

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3
#: The most steps `symgen simulate` agrees to take (the result alone holds several arrays of
#: this length: 1e8 steps of a 3-coordinate model are already ~10 GB).
MAX_STEPS = 10 ** 8
MATPLOTLIB_HINT = "plotting needs matplotlib: pip install 'symgen[plot]'"
SCHEME_HELP = "trapezoidal, fox-goodwin, linear-acceleration, or GAMMA,BETA (e.g. 0.5001,0.2507)"
METHODS = ("nullspace", "index3", "newmark", "central-difference")


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``symgen simulate: error: ...``) and exit code 2."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


# -- helpers --------------------------------------------------------------------------------------
def _number(text: str):
    try:
        return int(text)
    except ValueError:
        pass
    value = float(text)  # ValueError for garbage
    return value


def parse_params(items) -> dict:
    """``["T0=9", "L=2"]`` → ``{"T0": 9, "L": 2}``; malformed items raise UsageError."""
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise UsageError(f"malformed --param {item!r}: expected NAME=VALUE, e.g. --param T0=9")
        try:
            num = _number(value)
        except ValueError:
            raise UsageError(f"malformed --param {item!r}: {value!r} is not a number") from None
        if isinstance(num, float) and not math.isfinite(num):
            raise UsageError(f"malformed --param {item!r}: the value must be finite")
        if name in out:
            raise UsageError(f"--param {name} is given twice")
        out[name] = num
    return out


def _load(spec: str, params: dict):
    """The model and the numeric parameter overrides: a --param naming an option of ``model()``
    (like ``N`` of n_four_bar) goes to ``model()``; every other must be a model parameter."""
    from .loader import load_model, load_module, model_options

    module = load_module(spec)
    opts = model_options(module)
    structural = {k: v for k, v in params.items() if k in opts}
    mdl = load_model(spec, **structural)
    numeric = {k: float(v) for k, v in params.items() if k not in structural}
    unknown = [k for k in numeric if k not in mdl.param_names]
    if unknown:
        known = ", ".join(mdl.param_names) or "none"
        extra = f"; model() options: {', '.join(opts)}" if opts else ""
        raise UsageError(f"unknown parameter {unknown[0]!r} for model {mdl.name!r}; "
                         f"known parameters: {known}{extra}")
    return mdl, numeric


def _with_defaults(model, numeric: dict):
    """The model with new parameter defaults (what `show` lists and `generate` bakes into the C)."""
    if not numeric:
        return model
    return model.replace(params={sym: float(numeric.get(sym.name, val))
                                 for sym, val in model.params.items()})


def _kernels(model, backend: str, params: dict):
    if backend == "lambdify":
        from .kernels import LambdifyKernels
        k = LambdifyKernels(model)
    else:
        from . import build
        k = build(model)
    if params:
        k.set_params(params)
    return k


def _scheme(spec):
    if spec is None:
        return None
    from .steppers import parse_scheme
    parse_scheme(spec)  # ValueError on unknown names: exit 2 before any work
    return spec


def _fmt(value, unit=""):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a" if value is None else f"{value}"
    return f"{value:.3g}{unit}"


def _maxabs(a):
    if a is None:
        return None
    a = np.asarray(a, dtype=float)
    if a.size == 0:
        return 0.0
    finite = a[np.isfinite(a)]
    if finite.size < a.size:
        return float("nan")
    return float(np.max(np.abs(finite)))


def _check_output_file(path, flag: str) -> None:
    """Before any work: ``path`` can be written as a file (its folder exists, it is not a folder,
    and both are writable).  Raises UsageError."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{flag} {p}: is a folder; give a file name")
    parent = p.parent
    if not parent.exists():
        raise UsageError(f"{flag} {p}: the folder {parent} does not exist")
    if not parent.is_dir():
        raise UsageError(f"{flag} {p}: {parent} is not a folder")
    if p.exists():
        if not os.access(p, os.W_OK):
            raise UsageError(f"{flag} {p}: the file is not writable")
        return
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {p}: the folder {parent} is not writable")
    try:  # os.access cannot tell for every file system (and says yes to root): try it
        with open(p, "xb"):
            pass
        p.unlink()
    except FileExistsError:
        pass
    except OSError as exc:
        raise UsageError(f"{flag} {p}: cannot write there: {exc.strerror or exc}") from None


def _check_output_dir(path, flag: str) -> None:
    """Before any work: ``path`` is a folder or can be created as one.  Raises UsageError."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise UsageError(f"{flag} {p}: exists and is not a folder")
        if not os.access(p, os.W_OK | os.X_OK):
            raise UsageError(f"{flag} {p}: the folder is not writable")
        return
    anc = p.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if anc.exists() and not anc.is_dir():
        raise UsageError(f"{flag} {p}: cannot create the folder, {anc} is not a folder")
    if anc.exists() and not os.access(anc, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {p}: cannot create the folder, {anc} is not writable")


def _need_matplotlib() -> None:
    """UsageError (before any work) when matplotlib is not installed."""
    import importlib.util
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise UsageError(MATPLOTLIB_HINT)


@contextlib.contextmanager
def _warnings_as_notes():
    """Warnings raised inside become one ``note: ...`` line each on stderr when the block ends
    (dropped when it raises: the error's one line is what matters then)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default", RuntimeWarning)   # each distinct warning once
        yield caught
    _print_notes(caught)


def _print_notes(caught) -> None:
    seen = set()
    for w in caught:
        text = " ".join(str(w.message).split())
        if text and text not in seen:
            seen.add(text)
            print(f"note: {text}", file=sys.stderr)
    caught.clear()


def _stability_words(omega, h_max, gamma, beta) -> str:
    """What an infinite or missing h_max means, in words."""
    if h_max is not None and math.isfinite(h_max):
        return ""
    if h_max is None or math.isnan(h_max) or omega is None or math.isnan(omega):
        return "not estimated (ω_max unknown)"
    if beta >= 0.5 * gamma:
        return "unbounded: β ≥ γ/2, unconditionally stable (Eq. 11)"
    return ("ω_max = 0 here (no positive stiffness or no degrees of freedom): "
            "Eq. 11 gives no bound")


def energy_drift(result):
    """(max |E − E(0)|, E(0)) from a Result's energy (T, V columns or a total), or (None, None)."""
    e = getattr(result, "energy", None)
    if e is None:
        return None, None
    e = np.asarray(e, dtype=float)
    if e.size == 0:
        return None, None
    E = e.sum(axis=1) if e.ndim == 2 else e.reshape(-1)
    E = E[np.isfinite(E)]
    if E.size == 0:
        return None, None
    return float(np.max(np.abs(E - E[0]))), float(E[0])


def _pad(label: str, width: int) -> str:
    """Left-justify by displayed width (combining dots such as q̇ take no column)."""
    import unicodedata
    shown = sum(0 if unicodedata.combining(ch) else 1 for ch in label)
    return label + " " * max(width - shown, 0)


def summary_lines(result, name: str, wall: float, h: float | None = None) -> list[str]:
    """The one-screen summary ``symgen simulate`` prints."""
    meta = dict(getattr(result, "meta", None) or {})
    t = np.asarray(result.t, dtype=float)
    steps = max(len(t) - 1, 0)
    h = h if h is not None else meta.get("h", meta.get("dt"))
    lines = [f"{name}: {result.status}"]
    reason = getattr(result, "reason", "")
    if result.status != "completed" and reason:
        lines.append(f"  reason          {reason}")
    scheme = meta.get("scheme", "")
    if isinstance(scheme, dict):
        name = str(scheme.get("name") or "")
        gb = f"γ = {float(scheme.get('gamma', math.nan)):.8g}, β = {float(scheme.get('beta', math.nan)):.8g}"
        scheme = f"{name} ({gb})" if name and not name.startswith("newmark(") else f"({gb})"
    t0 = float(t[0]) if len(t) else 0.0
    t1 = float(t[-1]) if len(t) else 0.0
    lines.append(f"  method          {meta.get('method', '?')}, scheme {scheme or '?'}, "
                 f"h = {_fmt(h, ' s')}, t = {t0:g} … {t1:g} s")
    lines.append(f"  steps           {steps}")
    iters = getattr(result, "newton_iters", None)
    if iters is not None and np.size(iters):
        it = np.asarray(iters, dtype=float)
        it = it[1:] if len(it) == len(t) and len(it) > 1 else it
        lines.append(f"  Newton iters    {int(np.sum(it))} total, {np.mean(it):.2f} per step "
                     f"(max {int(np.max(it))})")
    for attr, label in (("pos_err", "max ‖q‖"), ("vel_err", "max ‖q̇‖"), ("acc_err", "max ‖q̈‖")):
        lines.append(f"  {_pad(label, 15)} {_fmt(_maxabs(getattr(result, attr, None)))}")
    drift, e0 = energy_drift(result)
    if drift is None:
        lines.append("  energy drift    n/a (no potential V)")
    else:
        lines.append(f"  energy drift    max |E − E(0)| = {drift:.3g} J (E(0) = {e0:.6g} J)")
    hmax = getattr(result, "h_max", None)
    if hmax is not None and np.size(hmax):
        hm = np.asarray(hmax, dtype=float)
        finite = hm[np.isfinite(hm)]
        if finite.size == 0:
            sch = meta.get("scheme") if isinstance(meta.get("scheme"), dict) else {}
            gamma = float(meta.get("gamma", sch.get("gamma", math.nan)))
            beta = float(meta.get("beta", sch.get("beta", math.nan)))
            om = np.asarray(getattr(result, "omega_max", np.full(hm.shape, np.nan)), dtype=float)
            if np.isnan(hm).all():
                words = "h_max not estimated"
            elif beta >= 0.5 * gamma:
                words = "h_max unbounded (unconditionally stable scheme)"
            elif np.all(om[np.isfinite(om)] <= 0) and np.isfinite(om).any():
                words = ("ω_max = 0 here (no positive stiffness or no degrees of freedom): "
                         "Eq. 11 gives no bound")
            else:
                words = "h_max unbounded (Eq. 11 gives no bound)"
            lines.append(f"  stability       {words}; h used {_fmt(h, ' s')}")
        else:
            i = int(np.nanargmin(np.where(np.isfinite(hm), hm, np.inf)))
            when = f" at t = {t[i]:.4g} s" if i < len(t) else ""
            verdict = ""
            if isinstance(h, (int, float)):
                over = int(np.sum(finite < h))
                verdict = ("  (within the limit)" if over == 0
                           else f"  (h exceeds h_max on {over} steps)")
            lines.append(f"  stability       smallest h_max = {finite.min():.6g} s{when}; "
                         f"h used = {_fmt(h, ' s')}{verdict}")
    lines.append(f"  wall time       {wall:.2f} s"
                 + (f" ({steps / wall:.0f} steps/s)" if wall > 0 and steps else ""))
    return lines


def progress_enabled(quiet: bool) -> bool:
    """A progress bar only for a person watching: stdout and stderr are terminals, no --quiet."""
    return not quiet and sys.stdout.isatty() and sys.stderr.isatty()


class _Progress:
    """tqdm progress bar, shown only after ~1 s (tqdm's ``delay``) and only on a terminal."""

    def __init__(self, enabled: bool, desc: str):
        self.enabled, self.desc, self.bar = enabled, desc, None

    def __call__(self, step, n_steps):
        if not self.enabled:
            return
        if self.bar is None:
            import shutil

            from tqdm import tqdm
            # get_terminal_size falls back to 80×24 where a terminal reports 0×0 (tqdm then
            # computes nrows = -1 and draws nothing)
            size = shutil.get_terminal_size((80, 24))
            self.bar = tqdm(total=int(n_steps), desc=self.desc, unit="step", delay=1.0,
                            file=sys.stderr, leave=False, ncols=size.columns, nrows=size.lines)
        self.bar.update(int(step) - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# -- commands -------------------------------------------------------------------------------------
#: A matrix wider than this, or with more entries, is listed entry by entry (2-D pretty printing
#: of a 243 × 243 matrix takes minutes); the summary of `show` prints only matrices within
#: SUMMARY_ROWS × MAX_COLS and gives the size and non-zero count of the others.
MAX_COLS, MAX_ENTRIES, SUMMARY_ROWS = 12, 300, 20


def _nonzeros(A):
    return [(i, j, A[i, j]) for i in range(A.rows) for j in range(A.cols) if A[i, j] != 0]


def _size_line(name, A, model_spec) -> str:
    nnz = len(_nonzeros(A))
    return (f"{name}  {A.rows}×{A.cols}, {nnz} non-zero entr{'y' if nnz == 1 else 'ies'}  "
            f"(symgen show {model_spec} --term {name})")


def _print_term(name, A, latex: bool) -> None:
    """A small matrix in 2-D; a large one as ``name[i, j] = expr``, one non-zero entry a line."""
    import sympy as sp

    if A.cols <= MAX_COLS and A.rows * A.cols <= MAX_ENTRIES:
        print(sp.latex(A) if latex else sp.pretty(A, use_unicode=True, wrap_line=False))
        return
    entries = _nonzeros(A)
    print(f"{A.rows}×{A.cols}, {len(entries)} non-zero entries (the others are 0):")
    for i, j, e in entries:
        if latex:
            print(f"{name}[{i}, {j}] = {sp.latex(e)}")
            continue
        text = sp.pretty(e, use_unicode=True, wrap_line=False)
        if "\n" in text:
            print(f"{name}[{i}, {j}] =")
            print("\n".join("    " + ln for ln in text.splitlines()))
        else:
            print(f"{name}[{i}, {j}] = {text}")


def cmd_show(args) -> int:
    from .derive import TERMS

    mdl, numeric = _load(args.model, parse_params(args.param))
    mdl = _with_defaults(mdl, numeric)
    if args.term is None:
        import sympy as sp

        print(f"model {mdl.name}: n = {mdl.n} coordinates, m = {mdl.m} constraints")
        if mdl.description:
            print("  " + mdl.description.strip().splitlines()[0])
        print("  coordinates: " + ", ".join(mdl.coord_names))
        print("  parameters:  " + (", ".join(f"{k} = {v:g}" for k, v in
                                              zip(mdl.param_names, mdl.param_values)) or "none"))
        print("  outputs:     " + (", ".join(mdl.output_names) or "none"))
        print("  settings:    " + (", ".join(f"{k} = {v}" for k, v in mdl.settings.items())
                                   or "none"))
        print(f"  terms:       {', '.join(TERMS)}  (symgen show MODEL --term NAME)")
        # M, f, q are the model's own (no derivation needed); large ones by size only
        for name in (["M", "f", "q"] if mdl.m else ["M", "f"]):
            A = sp.ImmutableMatrix(getattr(mdl, name))
            print()
            if A.rows > SUMMARY_ROWS or A.cols > MAX_COLS:
                print(_size_line(name, A, args.model))
                continue
            print(f"{name}  ({_labels(mdl, name)})")
            print(sp.latex(A) if args.latex else sp.pretty(A, use_unicode=True, wrap_line=False))
        return EXIT_OK
    from .derive import derive

    d = derive(mdl)
    name = args.term
    print(f"{name}  ({d.labels(name)})")
    _print_term(name, d.term(name), args.latex)
    return EXIT_OK


def _labels(mdl, name) -> str:
    coords = ", ".join(mdl.coord_names)
    return {"M": f"rows and columns: {coords}", "f": f"rows: {coords}"}.get(
        name, f"rows: constraints 0..{mdl.m - 1}")


def cmd_generate(args) -> int:
    from . import generate

    outdir = Path(args.output) if args.output else None
    if outdir is not None:
        _check_output_dir(outdir, "-o")
    mdl, numeric = _load(args.model, parse_params(args.param))
    mdl = _with_defaults(mdl, numeric)
    if outdir is None:
        outdir = Path("generated") / mdl.name
        _check_output_dir(outdir, "the output folder")
    src = generate(mdl)
    src.write(outdir)
    print(f"wrote {len(src.files)} files for model {mdl.name} to {outdir}/:")
    for fname in src.files:
        print(f"  {outdir / fname}")
    return EXIT_OK


def _check_steps(dt: float, t_end: float, n: int) -> None:
    steps = round(t_end / dt)
    if steps > MAX_STEPS:
        gb = steps * (4 * n + 16) * 8 / 1e9
        raise UsageError(f"--dt {dt:g} with --t-end {t_end:g} is {steps:.3g} steps (the result "
                         f"alone would need about {gb:.3g} GB); symgen takes at most 1e8 steps: "
                         "use a larger --dt or a smaller --t-end")


def cmd_simulate(args) -> int:
    params = parse_params(args.param)
    if args.out and Path(args.out).suffix.lower() not in (".npz", ".csv"):
        raise UsageError(f"--out {args.out}: the result file must end in .npz or .csv")
    if args.plot and Path(args.plot).suffix.lower() != ".png":
        raise UsageError(f"--plot {args.plot}: the plot file must end in .png")
    if args.out:
        _check_output_file(args.out, "--out")
    if args.plot:
        _check_output_file(args.plot, "--plot")
        _need_matplotlib()
    if args.dt is not None and not (args.dt > 0 and math.isfinite(args.dt)):
        raise UsageError(f"--dt must be a positive number, got {args.dt}")
    if args.t_end is not None and not (args.t_end > 0 and math.isfinite(args.t_end)):
        raise UsageError(f"--t-end must be a positive number, got {args.t_end}")
    _scheme(args.scheme)
    mdl, numeric = _load(args.model, params)
    settings = dict(mdl.settings)
    method = args.method or settings.get("method", "nullspace")
    scheme = args.scheme or settings.get("scheme", "trapezoidal")
    dt = args.dt if args.dt is not None else settings.get("dt")
    t_end = args.t_end if args.t_end is not None else settings.get("t_end")
    if dt is None or t_end is None:
        missing = "--dt" if dt is None else "--t-end"
        raise UsageError(f"model {mdl.name!r} recommends no {missing.lstrip('-').replace('-', '_')}; "
                         f"give {missing}")
    _check_steps(float(dt), float(t_end), mdl.n)
    if isinstance(scheme, str):
        _scheme(scheme)
    kernels = _kernels(mdl, args.backend, numeric)

    from . import simulate

    progress = _Progress(progress_enabled(args.quiet), mdl.name)
    start = time.perf_counter()
    try:
        with _warnings_as_notes():
            result = simulate(kernels, method=method, scheme=scheme, dt=float(dt),
                              t_end=float(t_end), params=numeric or None, progress=progress,
                              stepper=args.stepper)
    finally:
        progress.close()
    wall = time.perf_counter() - start

    written, plot_error = [], None
    if args.out:
        result.save(args.out)
        written.append(f"result          {args.out}")
    if args.plot:
        from .plot import plot_result
        what = args.what or ("outputs" if result.outputs.shape[1] else "coordinates")
        try:
            plot_result(result, what, args.plot)
            written.append(f"plot            {args.plot} ({what})")
        except (ValueError, OSError) as exc:
            plot_error = f"--plot {args.plot} not written: {_one_line(exc)}"
            written.append(f"plot            not written: {_one_line(exc)}")
    for line in summary_lines(result, mdl.name, wall, h=float(dt)):
        print(line)
    for line in written:
        print(f"  {line}")
    if result.status != "completed":
        return EXIT_FAILED
    if plot_error:
        print(f"error: {plot_error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_plot(args) -> int:
    from .result import load_result

    path = Path(args.result)
    if not path.exists():
        raise UsageError(f"result file not found: {path}")
    if not path.is_file():
        raise UsageError(f"{path} is not a file; give a .npz or .csv written by simulate --out")
    if Path(args.output).suffix.lower() != ".png":
        raise UsageError(f"-o {args.output}: the plot file must end in .png")
    _check_output_file(args.output, "-o")
    _need_matplotlib()
    from .plot import plot_result

    result = load_result(path)
    fig = plot_result(result, args.what, args.output, select=args.select)
    nlines = sum(len(ax.get_lines()) for ax in fig.axes)
    print(f"wrote {args.output}: {args.what}, {nlines} series, {len(result.t)} points")
    return EXIT_OK


def cmd_stability(args) -> int:
    from . import suggest_step
    from .steppers import parse_scheme

    params = parse_params(args.param)
    _scheme(args.scheme)
    mdl, numeric = _load(args.model, params)
    scheme = args.scheme or mdl.settings.get("scheme", "trapezoidal")
    sch = parse_scheme(scheme)
    kernels = _kernels(mdl, args.backend, numeric)
    omega, h_max = suggest_step(kernels, sch)
    omega, h_max = float(omega), float(h_max)
    print(f"{mdl.name}: stability at the initial state (t = 0)")
    print(f"  scheme          {scheme} (γ = {sch.gamma:g}, β = {sch.beta:g})")
    print(f"  ω_max           {omega:.10g} rad/s")
    if math.isfinite(h_max):
        print(f"  safe step       h ≤ {h_max:.6g} s (Eq. 11: h ≤ (1/ω_max)·√(1/(γ/2 − β)))")
    else:
        print(f"  safe step       {_stability_words(omega, h_max, sch.gamma, sch.beta)}")
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
    from .reproduce import run

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
    from . import __version__

    p = _Parser(prog="symgen", description="Symbolic constrained mechanisms → generated C → "
                "stable null-space Newmark simulation (Fernández de Bustos et al., 2022).")
    p.add_argument("--version", action="version", version=f"symgen {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    model_help = "a shipped example name (e.g. stiff_pendulum) or a .py file defining model()"
    param_help = ("set a model parameter (repeatable), e.g. --param T0=9 (show and generate "
                  "take it as the new default); a name that model() accepts as an option "
                  "(e.g. N) rebuilds the model with it")

    s = sub.add_parser("show", help="print derived terms")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--term", choices=_terms(), help="the term to print (default: a summary "
                   "with M, f, q)")
    s.add_argument("--latex", action="store_true", help="print LaTeX instead of Unicode")
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("generate", help="write the standalone C")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("-o", "--output", metavar="DIR", help="output folder (default generated/<model>/)")
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    s.set_defaults(func=cmd_generate)

    s = sub.add_parser("simulate", help="simulate a model and print a summary")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--method", choices=METHODS, help="nullspace (the paper's method), index3 "
                   "(classical), newmark or central-difference (unconstrained models); "
                   "default: the model's recommendation")
    s.add_argument("--scheme", metavar="SCHEME", help=SCHEME_HELP)
    s.add_argument("--dt", type=float, metavar="H", help="step size [s]")
    s.add_argument("--t-end", type=float, metavar="T", help="end time [s]")
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    s.add_argument("--out", metavar="FILE", help="write the result (.npz or .csv)")
    s.add_argument("--plot", metavar="FILE.png", help="plot the result to a PNG")
    s.add_argument("--what", choices=_what(), default=None,
                   help="what --plot draws (default: the outputs, or the coordinates of a model "
                   "without outputs)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--backend", choices=("c", "lambdify"), default="c",
                   help="kernels: compiled C (default) or sympy.lambdify (slow, no compiler)")
    s.add_argument("--stepper", choices=("compiled", "python"), default=None,
                   help="compiled: the whole step in C (default with C kernels); python: the "
                   "reference steppers (default with --backend lambdify)")
    s.set_defaults(func=cmd_simulate)

    s = sub.add_parser("plot", help="plot a result file")
    s.add_argument("result", metavar="RESULT", help="a .npz or .csv written by simulate --out")
    s.add_argument("--what", choices=_what(), default="coordinates", help="what to plot")
    s.add_argument("--select", nargs="+", metavar="NAME",
                   help="only these coordinates or outputs")
    s.add_argument("-o", "--output", required=True, metavar="FILE.png", help="the PNG to write")
    s.set_defaults(func=cmd_plot)

    s = sub.add_parser("stability", help="ω_max and the safe step at the initial state")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--scheme", metavar="SCHEME", help=SCHEME_HELP)
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    s.add_argument("--backend", choices=("c", "lambdify"), default="c", help=argparse.SUPPRESS)
    s.set_defaults(func=cmd_stability)

    s = sub.add_parser("reproduce", help="rerun the paper's experiments and write a report "
                       "(exit 3 if an experiment broke)")
    s.add_argument("--out", default="reproduction", metavar="DIR",
                   help="report folder (default reproduction/)")
    s.add_argument("--quick", action="store_true", help="a reduced set, under a minute (CI)")
    s.add_argument("--quiet", action="store_true", help="no progress messages")
    s.set_defaults(func=cmd_reproduce)
    return p


def _terms():
    from .derive import TERMS
    return list(TERMS)


def _what():
    return ["coordinates", "outputs", "constraints", "stability", "energy", "reactions"]


def _one_line(exc: BaseException, limit: int = 400) -> str:
    """The message of ``exc`` on one line, cut at ``limit`` characters."""
    msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    msg = " ".join(str(msg).split())
    if len(msg) > limit:
        msg = msg[:limit].rstrip() + " …"
    return msg or type(exc).__name__


def _build_failure(exc: BaseException, max_lines: int = 3, limit: int = 600) -> str:
    """One line for a BuildError: its first line, then the compiler's diagnostics (the lines
    naming an error, else the last lines of its output) rather than the echoed command lines,
    and where the full log is."""
    text = str(exc)
    head, _, rest = text.partition("\n")
    lines = [ln.strip() for ln in rest.splitlines()
             if ln.strip() and not ln.startswith("--- compiler output")]
    import re
    # the diagnostics, not the echoed command lines (long, and no help)
    short = [ln for ln in lines if len(ln) <= 300] or lines
    errors = [ln for ln in short if re.search(r"\berror\b", ln, re.I)]
    picked = errors[:max_lines] if errors else short[-max_lines:]
    diag = " | ".join(_cut(" ".join(ln.split()), 200) for ln in picked)
    if len(diag) > limit:
        diag = diag[:limit].rstrip() + " …"
    log = getattr(exc, "log_path", None) or getattr(exc, "log", None)
    if not (isinstance(log, (str, Path)) and Path(log).is_file()) and rest.strip():
        log = _save_log(text)
    msg = " ".join(head.split())
    if diag:
        msg += f" {diag}"
    if log:
        msg += f" (full log: {log})"
    return msg


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def _save_log(text: str):
    """Write a compiler log to a temporary file; its path, or None if that failed."""
    import tempfile
    try:
        fd, name = tempfile.mkstemp(prefix="symgen-build-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return name
    except OSError:
        return None


def _report(exc: BaseException) -> int:
    """Print ``exc`` as one line on stderr; returns the exit code (2 for bad input, model, build
    and file errors; 1 for anything else, an internal error)."""
    from .model import ModelError
    try:
        from .build import BuildError
    except ImportError:  # pragma: no cover - build needs cffi
        BuildError = ()  # noqa: N806
    if isinstance(exc, ModelError):
        print(f"model error: {_one_line(exc)}", file=sys.stderr)
    elif BuildError and isinstance(exc, BuildError):
        print(f"build failed: {_build_failure(exc)}", file=sys.stderr)
    elif isinstance(exc, ImportError) and "matplotlib" in str(exc):
        print(f"error: {MATPLOTLIB_HINT}", file=sys.stderr)
    elif isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else None
        why = exc.strerror or _one_line(exc)
        if where is not None:
            print(f"error: cannot read/write {where}: {why}", file=sys.stderr)
        else:
            print(f"error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
    elif isinstance(exc, (ValueError, KeyError)):
        print(f"error: {_one_line(exc)}", file=sys.stderr)
    else:
        print(f"internal error: {type(exc).__name__}: {_one_line(exc)} "
              "(set SYMGEN_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    return EXIT_USAGE


def main(argv=None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 usage/model/file error, 3 failed run,
    1 internal error)."""
    import logging
    if not logging.getLogger().handlers:
        # the summary reports failures; keep the library's warnings out of the terminal
        logging.basicConfig(level=logging.ERROR, format="symgen: %(message)s")
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        with _warnings_as_notes():
            return args.func(args)
    except UsageError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
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
        return _report(exc)


if __name__ == "__main__":
    sys.exit(main())
