"""The cache's trust layer: a folder of code that symgen loads is used only when nobody else can
write it (see :mod:`symgen.jit` for the layout).  Folders are created 0700 and files 0600/0700
whatever the umask; a root, ``src/`` or ``lib/`` not owned by the current user or writable by
group or others is refused for this process (one :class:`UntrustedCacheWarning`; builds go to a
private temporary folder, as pip does for its cache); entries are opened without following links.

Assumed, not checked: the folders *above* the root are trusted.  Ownership is checked for the
root, ``src/`` and ``lib/``, not for their parents, and a compiled module is checked by path and
then loaded by path (``dlopen`` takes a name), so whoever can rename a parent folder could swap
the module between the check and the load.  The default root (the per-user cache folder in the
home folder) meets the assumption; set ``SYMGEN_CACHE_DIR`` only to a folder whose parents no one
else can write.
"""
from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
import warnings
from pathlib import Path

from ._io import atomic_open

__all__ = ["cache_dir", "UntrustedCacheWarning"]

_ENV_CACHE = "SYMGEN_CACHE_DIR"
#: Folder and file modes of the cache, independent of the umask.
_DIR_MODE, _FILE_MODE, _MODULE_MODE = 0o700, 0o600, 0o700
_fallback_roots: dict[str, Path] = {}
_fallback_lock = threading.Lock()


class UntrustedCacheWarning(UserWarning):
    """The cache folder can be written by someone else; it is not used by this process."""


class _CacheEntryError(Exception):
    """A cache entry that must not be used (the message says why); it is rebuilt."""


def cache_dir() -> Path:
    """The cache root: ``$SYMGEN_CACHE_DIR`` if set, else the per-user cache directory."""
    env = os.environ.get(_ENV_CACHE)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("symgen"))


# -- a private cache: ownership, permissions, no symbolic links ---------------------------------
def _untrusted(st: os.stat_result, want_dir: bool) -> str | None:
    """Why a (l)stat result is not a private entry of the current user, or None."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if want_dir and not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if not want_dir and not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by the current user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _private_dir(path: Path, follow: bool = False) -> str | None:
    """Create ``path`` mode 0700 when absent; why it cannot be trusted, or None."""
    try:
        os.mkdir(path, _DIR_MODE)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, _DIR_MODE)                # mkdir's mode is masked by the umask
        finally:
            os.close(fd)
    except FileExistsError:
        pass
    return _untrusted(os.stat(path) if follow else os.lstat(path), want_dir=True)


def _trusted_root(root: Path) -> Path:
    """``root`` when it and its ``src/`` and ``lib/`` are private to the current user; otherwise a
    private temporary folder for the rest of this process (with one warning per root)."""
    with _fallback_lock:
        if str(root) in _fallback_roots:
            return _fallback_roots[str(root)]
        try:
            root.parent.mkdir(parents=True, exist_ok=True)
            # the configured root may be a link its owner made: what it points to must be private
            problem = _private_dir(root, follow=True)
            where = root
            subs = [root / "src", root / "lib"]
            # the existing sub-folders first: nothing is created in a cache that is refused
            for where in sorted(subs, key=lambda p: not os.path.lexists(p)):
                if problem is not None:
                    break
                problem = _private_dir(where)
        except OSError as exc:
            where, problem = root, f"cannot be used ({exc.strerror or exc})"
        if problem is None:
            return root
        private = Path(tempfile.mkdtemp(prefix="symgen-cache-"))
        for sub in ("src", "lib"):
            _private_dir(private / sub)
        atexit.register(shutil.rmtree, private, ignore_errors=True)
        _fallback_roots[str(root)] = private
    warnings.warn(
        f"symgen's cache {where} {problem}; it is not used (someone else could plant code that "
        f"symgen would load). This process builds in the private folder {private}. Make the cache "
        f"yours and private ({root}, {root}/src and {root}/lib owned by you, mode 700) or set "
        f"{_ENV_CACHE}.", UntrustedCacheWarning, stacklevel=3)
    return private


def _remove(path: Path) -> None:
    """Remove a cache entry without following links (a link itself is unlinked)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _read_private(path: Path) -> bytes:
    """The bytes of a regular file of ours, opened without following a link."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        problem = _untrusted(os.fstat(fd), want_dir=False)
        if problem:
            raise _CacheEntryError(f"{path} {problem}")
        return fh.read()


def _atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``path`` whole or not at all, mode 0600 (a link already at ``path`` is replaced, not
    followed)."""
    with atomic_open(path, "wb", private=True) as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
