"""What the command line needs around the library: one-line errors (a build failure trimmed to the
compiler's diagnostics), output paths checked before any work, warnings turned into notes, the
progress bar, ``--param NAME=VALUE`` parsed, and the exit codes.  Only the commands of
:mod:`symgen.cli` use it; the library itself does not print.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import sys
import threading
import warnings
from pathlib import Path

from ..signals import held_signals

__all__ = ["UsageError", "MATPLOTLIB_HINT", "parse_params", "progress_enabled"]

MATPLOTLIB_HINT = "plotting needs matplotlib: pip install 'symgen[plot]'"
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        pass
    value = float(text)  # ValueError for garbage
    return value


def parse_params(items, flag: str = "--param") -> dict:
    """``["T0=9", "L=2"]`` → ``{"T0": 9, "L": 2}``; malformed items raise UsageError."""
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise UsageError(f"malformed {flag} {item!r}: expected NAME=VALUE, e.g. {flag} T0=9")
        try:
            num = _number(value)
        except ValueError:
            raise UsageError(f"malformed {flag} {item!r}: {value!r} is not a number") from None
        if isinstance(num, float) and not math.isfinite(num):
            raise UsageError(f"malformed {flag} {item!r}: the value must be finite")
        if name in out:
            raise UsageError(f"{flag} {name} is given twice")
        out[name] = num
    return out


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


def _result_path(text) -> Path:
    """The path of a result file given on the command line (UsageError if it is not a file)."""
    path = Path(text)
    if not path.exists():
        raise UsageError(f"result file not found: {path}")
    if not path.is_file():
        raise UsageError(f"{path} is not a file; give a .npz or .csv written by simulate --out")
    return path


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
def _warnings_as_notes(quiet: bool = False):
    """Warnings raised inside become one ``note: ...`` line each on stderr when the block ends
    (dropped when it raises: the error's one line is what matters then; dropped with quiet)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default", RuntimeWarning)   # each distinct warning once
        yield caught
    if quiet:
        caught.clear()
    _print_notes(caught)


def _print_notes(caught) -> None:
    seen = set()
    for w in caught:
        text = " ".join(str(w.message).split())
        if text and text not in seen:
            seen.add(text)
            print(f"note: {text}", file=sys.stderr)
    caught.clear()


def progress_enabled(quiet: bool) -> bool:
    """A progress bar only for a person watching: stdout and stderr are terminals, no --quiet."""
    return not quiet and sys.stdout.isatty() and sys.stderr.isatty()


class _Progress:
    """tqdm progress bar, shown only after ~1 s (tqdm's ``delay``) and only on a terminal.

    Ctrl-C and SIGTERM are held back while tqdm draws (``pthread_sigmask``) and delivered right
    after: an interrupt raised inside tqdm's refresh leaves its write lock taken (tqdm releases it
    without ``finally``).  tqdm's monitor thread is off; the bar is redrawn from the step loop."""

    def __init__(self, enabled: bool, desc: str):
        self.enabled, self.desc, self.bar = enabled, desc, None
        self._next = 0                      # redraw at most ~2000 times a run

    def _guarded(self, fn, *args):
        with held_signals():
            return fn(*args)

    def _update(self, step, n_steps):
        if self.bar is None:
            import shutil

            from tqdm import tqdm
            tqdm.monitor_interval = 0
            # get_terminal_size falls back to 80×24 where a terminal reports 0×0 (tqdm then
            # computes nrows = -1 and draws nothing)
            size = shutil.get_terminal_size((80, 24))
            self.bar = tqdm(total=int(n_steps), desc=self.desc, unit="step", delay=1.0,
                            file=sys.stderr, leave=False, ncols=size.columns, nrows=size.lines)
        self.bar.update(int(step) - self.bar.n)

    def __call__(self, step, n_steps):
        if self.enabled and (step >= self._next or step >= n_steps):
            self._next = step + max(1, n_steps // 2000)
            self._guarded(self._update, step, n_steps)

    def close(self):
        if self.bar is not None:
            self._guarded(self.bar.close)


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


# -- signals: SIGTERM stops a run as Ctrl-C does -------------------------------------------------
#: Exit codes of a run stopped by Ctrl-C (SIGINT) or SIGTERM: 128 + the signal number.
EXIT_SIGINT, EXIT_SIGTERM = 128 + 2, 128 + 15


class Terminated(KeyboardInterrupt):
    """Raised by the SIGTERM handler :func:`main` installs: a run stops as on Ctrl-C (the partial
    result is kept with status ``interrupted``), and the exit code is 143."""


_terminated = [False]          # set by the SIGTERM handler: exit 143 rather than 130


def _on_sigterm(signum, frame):
    _terminated[0] = True
    raise Terminated("SIGTERM")


def _interrupt_exit_code() -> int:
    return EXIT_SIGTERM if _terminated[0] else EXIT_SIGINT


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM raises :class:`Terminated` while the block runs (main thread only)."""
    _terminated[0] = False
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError, AttributeError):      # not the main thread, or no SIGTERM
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- the library's progress notes (first-run compile) --------------------------------------------
class _NoteHandler(logging.Handler):
    """Prints the library's progress notes (log records with ``symgen_note``) as ``note: ...``
    lines on stderr, e.g. that a first run is compiling."""

    def __init__(self):
        super().__init__(logging.INFO)

    def emit(self, record):
        if getattr(record, "symgen_note", False):
            print(f"note: {record.getMessage()}", file=sys.stderr, flush=True)


class _DelayedNoteHandler(_NoteHandler):
    """The first note only, and only if the build is still running ``delay`` seconds later
    (``--quiet``: a first compile that takes a while should not look like a hang)."""

    def __init__(self, delay: float):
        super().__init__()
        self.delay, self.timer = delay, None

    def emit(self, record):
        if getattr(record, "symgen_note", False) and self.timer is None:
            text = f"note: {record.getMessage()}"
            self.timer = threading.Timer(self.delay, print, (text,),
                                         {"file": sys.stderr, "flush": True})
            self.timer.daemon = True
            self.timer.start()

    def close(self):
        if self.timer is not None:
            self.timer.cancel()
        super().close()


#: --quiet: the compile note appears if the build is still running after this many seconds
#: (SYMGEN_QUIET_NOTE_DELAY overrides it)
QUIET_NOTE_DELAY = float(os.environ.get("SYMGEN_QUIET_NOTE_DELAY", "2") or 2)


@contextlib.contextmanager
def _build_notes(enabled: bool, delay: float = 0.0):
    """While building: say when the C is generated or compiled (cache misses only); with
    ``delay`` > 0 only the first note, and only if the build takes longer than that."""
    if not enabled:
        yield
        return
    logger = logging.getLogger("symgen.jit")
    handler = _DelayedNoteHandler(delay) if delay > 0 else _NoteHandler()
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(level)


# -- simulate's options checked before any work -------------------------------------------------
def _check_memory(dt: float, t_end: float, every: int, mdl) -> None:
    """Before building: the run's recorded rows fit in memory (UsageError naming --every)."""
    from ..recorder import MemoryBudgetError, check_memory, recorded_outputs

    steps = max(int(round(t_end / dt)), 1)
    try:
        check_memory(steps, every, mdl.n, mdl.m, recorded_outputs(mdl.output_names, mdl.reactions))
    except MemoryBudgetError as exc:
        raise UsageError(f"--dt {dt:g} with --t-end {t_end:g}: {exc}") from None


def _dt_value(text: str):
    """--dt: a number, or 'auto'."""
    import argparse

    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None


def add_chart_options(s, chart: bool = True) -> None:
    """--chart, --metric (unless ``chart`` is False) and --preset on the parser ``s``: the
    null-space step, by default the symmetric chart with the mass metric (settings.chart_metric)."""
    from ..settings import CHARTS, METRICS, PRESETS

    if chart:
        s.add_argument("--chart", choices=CHARTS, default=None,
                       help="nullspace only: 'symmetric' (Newmark on the null space of "
                       "(H(t) + H(t+h))/2: no energy drift at large rotations per step; beyond "
                       "the paper) or 'end' (the paper's); default: the model's, else symmetric "
                       "(with --metric mass), or the paper's when only --metric is given")
        s.add_argument("--metric", choices=METRICS, default=None,
                       help="nullspace only: the Newmark relations' tangent part 'mass' "
                       "(M-orthogonal, units-independent, with the reaction correction) or "
                       "'euclidean' (the paper's); default: the model's, else mass (with the "
                       "symmetric chart), or the paper's when only --chart is given")
    s.add_argument("--preset", choices=tuple(PRESETS), default=None,
                   help="'paper': the paper's step (chart end, metric euclidean) instead of the "
                   "default symmetric chart with the mass metric; a --chart or --metric given "
                   "beside it wins")


def add_step_options(s) -> None:
    """--dt (a number or 'auto'), --t-end and the variable step's --rtol, --atol, --h-init,
    --h-max on the parser ``s``."""
    s.add_argument("--dt", type=_dt_value, metavar="H", help="step size [s], or 'auto': "
                   "steps chosen by the local error estimate (--rtol, --atol) within the "
                   "stability limit (docs/variable-step.md)")
    s.add_argument("--t-end", type=float, metavar="T", help="end time [s]")
    s.add_argument("--rtol", type=float, metavar="R", help="--dt auto: relative tolerance of "
                   "the local error (default 1e-6)")
    s.add_argument("--atol", type=float, metavar="A", help="--dt auto: absolute tolerance of "
                   "the local error, in the coordinates' units (default 1e-8)")
    s.add_argument("--h-init", type=float, metavar="H", help="--dt auto: the first step "
                   "(default: from ω_max and --rtol)")
    s.add_argument("--h-max", type=float, metavar="H", help="--dt auto: the largest step "
                   "(default: a tenth of the span)")
    s.add_argument("--t-eval", type=_t_eval, metavar="START:STOP:COUNT", help="record COUNT "
                   "states evenly spaced from START to STOP (each step's quintic interpolant "
                   "projected onto the constraints) instead of the steps")


def _t_eval(text: str):
    """--t-eval START:STOP:COUNT → (START, STOP, COUNT, text), checked; the times are made by
    :func:`_t_eval_times` once the memory they and their rows take is known to fit."""
    import argparse

    try:
        start, stop, count = text.split(":")
        start, stop, count = float(start), float(stop), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:STOP:COUNT (e.g. 0:10:101), got "
                                         f"{text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"COUNT must be at least 1 in {text!r}")
    if not (math.isfinite(start) and math.isfinite(stop)):
        raise argparse.ArgumentTypeError(f"START and STOP must be finite in {text!r}")
    return start, stop, count, text


def _t_eval_times(spec, mdl):
    """The times of --t-eval (None without it), after the check that its COUNT rows fit in the
    memory a result may take (UsageError naming --t-eval and the COUNT that fits)."""
    if spec is None:
        return None
    import numpy as np

    from .._io import memory_budget
    from ..recorder import bytes_per_record, recorded_outputs

    start, stop, count, text = spec
    per = bytes_per_record(mdl.n, mdl.m, recorded_outputs(mdl.output_names, mdl.reactions))
    budget = memory_budget()
    need = (count + 1) * (per + 8)           # the rows (and the last state) and the times
    if need > budget:
        fits = max(budget // (per + 8) - 1, 1)
        raise UsageError(f"--t-eval {text}: {count:.3g} rows would need {need / 1e9:.3g} GB, more "
                         f"than the {budget / 1e9:.3g} GB a result may take (half the physical "
                         f"memory): give a COUNT of at most {fits}")
    return np.linspace(start, stop, count)


def add_assembly_options(s, what: str = "start", example: str = "crank.theta=0.3") -> None:
    """--set and --set-velocity on the parser ``s``: coordinates, outputs or velocities held
    while ``what`` (the run's start, a state to linearize at) is assembled."""
    s.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help=f"assemble the {what} with this coordinate or output held (repeatable), "
                   f"e.g. --set {example}")
    s.add_argument("--set-velocity", action="append", metavar="NAME=VALUE",
                   help=f"hold this velocity when assembling the {what} (repeatable)")


def check_step_options(args) -> None:
    """The options of :func:`add_step_options` checked (UsageError naming the flag)."""
    if args.dt is not None and args.dt != "auto" and not (args.dt > 0 and math.isfinite(args.dt)):
        raise UsageError(f"--dt must be a positive number or 'auto', got {args.dt}")
    for flag in ("rtol", "atol", "h_init", "h_max"):
        v = getattr(args, flag)
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise UsageError(f"--{flag.replace('_', '-')} must be a positive number, got {v:g}")


def _newton_options(args) -> dict:
    """--tol, --max-iter, --rank-tol checked (UsageError naming the flag) for simulate()."""
    out = {}
    if args.tol is not None:
        if not (args.tol > 0 and math.isfinite(args.tol)):
            raise UsageError(f"--tol must be a positive number, got {args.tol:g}")
        out["tol"] = args.tol
    if args.max_iter is not None:
        if not (math.isfinite(args.max_iter) and args.max_iter.is_integer() and args.max_iter >= 1):
            raise UsageError(f"--max-iter must be an integer >= 1, got {args.max_iter:g}")
        out["max_iter"] = int(args.max_iter)
    if args.rank_tol is not None:
        from ..settings import RANK_TOL_MAX, RANK_TOL_WHY
        if not (0 <= args.rank_tol <= RANK_TOL_MAX):
            raise UsageError(f"--rank-tol must lie in [0, {RANK_TOL_MAX:g}], got "
                             f"{args.rank_tol:g} ({RANK_TOL_WHY})")
        out["rank_tol"] = args.rank_tol
    return out


def report_error(exc: BaseException) -> int:
    """Print ``exc`` as one line on stderr; returns the exit code (2 for bad input, model, build
    and file errors; 1 for anything else, an internal error)."""
    from ..names import ModelError
    try:
        from ..jit import BuildError
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


def _load(spec: str, params: dict):
    """The model and the numeric parameter overrides: a --param naming an option of ``model()``
    (``N`` of n_four_bar) goes to ``model()``; every other must be a model parameter."""
    from ..loader import load_model, load_module, model_options

    module = load_module(spec)
    opts = model_options(module)
    structural = {k: v for k, v in params.items() if k in opts}
    mdl = load_model(spec, **structural)
    # an option named like a parameter: the parameter, on the default model (its hash kept),
    # unless the option changes which parameters there are (issue 35; docs/cli.md)
    clash = [k for k in structural if k in mdl.param_names]
    if clash:
        alt = load_model(spec, **{k: v for k, v in structural.items() if k not in clash})
        if all(k in alt.param_names for k in clash):
            mdl = alt
            structural = {k: v for k, v in structural.items() if k not in clash}
            print(f"note: --param {', '.join(clash)} sets the parameter (model()'s option of the "
                  "same name keeps its default: rename it to set it)", file=sys.stderr)
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
