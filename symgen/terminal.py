"""What the command line needs around the library: one-line errors (a build failure trimmed to the
compiler's diagnostics), output paths checked before any work, warnings turned into notes, and the
progress bar.  Only :mod:`symgen.cli` uses it; the library itself does not print.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path

__all__ = ["UsageError", "MATPLOTLIB_HINT", "progress_enabled"]

MATPLOTLIB_HINT = "plotting needs matplotlib: pip install 'symgen[plot]'"


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


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
