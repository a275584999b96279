"""Files written whole or not at all, and the memory a result may take.

:func:`atomic_open` is the one way symgen writes a file: into a temporary file in the target's
folder, flushed and fsync'ed, then ``os.replace``'d over the target.  A write that fails part-way
(an exception, Ctrl-C, a full disk) leaves the previous file as it was and removes the temporary
file; a crash of the whole machine leaves either the old or the new file, never a mix.

:func:`memory_budget` is what a result may take in memory (half the physical memory), used to
refuse, before running, a run whose recorded steps would not fit and to refuse a result file that
declares more data than that.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_open", "atomic_write_text", "memory_budget", "MEMORY_FRACTION"]

#: The fraction of the physical memory one result may occupy.
MEMORY_FRACTION = 0.5


def _umask() -> int:
    """The process umask, read without changing it where /proc says (Linux), else set-and-reset."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(path, mode: str = "wb", *, private: bool = False, encoding: str | None = None,
                newline: str | None = None):
    """``with atomic_open(path, "w") as fh: ...`` writes ``path`` whole or not at all.

    The file object is a temporary file next to ``path``; when the block ends normally it is
    flushed, fsync'ed and renamed over ``path`` (``os.replace``, atomic on POSIX); when the block
    raises anything (KeyboardInterrupt included) the temporary file is removed and ``path`` is
    left untouched.  The new file gets the mode of the file it replaces, or 0666 less the umask
    (as ``open`` would), or 0600 with ``private=True``.
    """
    path = Path(path)
    if "w" not in mode or "+" in mode or "a" in mode:
        raise ValueError(f"atomic_open writes a new file: mode must be 'w' or 'wb', got {mode!r}")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if not private:
            try:
                perms = stat.S_IMODE(os.stat(path).st_mode)
            except OSError:
                perms = 0o666 & ~_umask()
            os.fchmod(fd, perms)
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as fh:
            fd = -1                                   # owned by fh now
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):              # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def atomic_write_text(path, text: str, *, private: bool = False, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` whole or not at all (see :func:`atomic_open`)."""
    with atomic_open(path, "w", private=private, encoding=encoding) as fh:
        fh.write(text)


def memory_budget() -> int:
    """Bytes one result may take: ``MEMORY_FRACTION`` of the physical memory (or, where the
    system does not say, 4 GiB).  ``SYMGEN_MEMORY_LIMIT`` (bytes) overrides it."""
    env = os.environ.get("SYMGEN_MEMORY_LIMIT")
    if env:
        try:
            return max(int(float(env)), 0)
        except ValueError:
            raise ValueError(f"SYMGEN_MEMORY_LIMIT={env!r} is not a number of bytes") from None
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    if total <= 0:
        total = 8 << 30
    return int(MEMORY_FRACTION * total)
