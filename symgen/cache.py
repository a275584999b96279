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

Entries (``lib/<key>/``: one built file, what it was built from, ``manifest.json`` with the key,
size and SHA-256 of the built file) are checked before use (:func:`_check_entry`) and built and
published by :func:`_publish_entry`: under a lock across processes, in a work folder, published
by one rename; a failed or interrupted build leaves no folder.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
import threading
import time
import warnings
from pathlib import Path

from ._io import atomic_open

__all__ = ["cache_dir", "UntrustedCacheWarning"]

log = logging.getLogger(__name__)

_ENV_CACHE = "SYMGEN_CACHE_DIR"
#: Folder and file modes of the cache, independent of the umask.
_DIR_MODE, _FILE_MODE, _MODULE_MODE = 0o700, 0o600, 0o700
#: The prefix of a running (or killed) build's work folder in ``lib/``.
_BUILD_PREFIX = ".build-"
_fallback_roots: dict[str, Path] = {}
_fallback_lock = threading.Lock()


class UntrustedCacheWarning(UserWarning):
    """The cache folder can be written by someone else; it is not used by this process."""


class _CacheEntryError(Exception):
    """A cache entry that must not be used (the message says why); it is rebuilt."""


class _LockTimeout(Exception):
    """Another process held an entry's lock longer than allowed (the message says which)."""


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


# -- entries: one built file with its manifest, published whole ---------------------------------
def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_entry(entry: Path, final: Path, key: str) -> bytes:
    """The bytes of a complete, private entry's built file ``final``, which match its manifest
    (key, size, SHA-256); raises _CacheEntryError (or OSError when absent) otherwise."""
    problem = _untrusted(os.lstat(entry), want_dir=True)
    if problem:
        raise _CacheEntryError(f"{entry} {problem}")
    try:
        info = json.loads(_read_private(entry / "manifest.json"))
        data = _read_private(final)
        ok = info["key"] == key and len(data) == info["size"] and _sha256(data) == info["sha256"]
    except FileNotFoundError:
        raise _CacheEntryError(f"{entry} is incomplete") from None
    except OSError as exc:
        raise _CacheEntryError(f"{entry} cannot be read safely ({exc.strerror or exc})") from None
    except (ValueError, KeyError, TypeError):
        raise _CacheEntryError(f"{entry}/manifest.json is unreadable") from None
    if not ok:
        raise _CacheEntryError(f"{final} does not match its manifest")
    return data


def _remove_work(work: Path) -> None:
    """Remove a work folder (again, briefly, if a killed compiler was still finishing a file)."""
    for _ in range(50):
        shutil.rmtree(work, ignore_errors=True)
        if not os.path.lexists(work):
            return
        time.sleep(0.02)
    log.warning("could not remove the build folder %s; the next build removes it", work)


def _sweep_stale(libs: Path, key: str, stale_after: float) -> None:
    """Remove work folders left by killed builds: this key's (its lock is held: none is running)
    and any older than ``stale_after`` seconds."""
    now = time.time()
    with os.scandir(libs) as it:
        for e in it:
            if not e.name.startswith(_BUILD_PREFIX) or not e.is_dir(follow_symlinks=False):
                continue
            if e.name.startswith(f"{_BUILD_PREFIX}{key[:16]}-") or \
                    now - e.stat(follow_symlinks=False).st_mtime > stale_after:
                shutil.rmtree(e.path, ignore_errors=True)


def _publish_entry(libs: Path, key: str, filename: str, make, files: dict, manifest: dict, *,
                   lock_timeout: float, stale_after: float, bad_sha: str | None = None) -> bytes:
    """Build and publish the entry ``libs/<key>/`` holding ``filename`` unless another process has
    (a valid entry whose file's SHA-256 is not ``bad_sha``, one that failed when used); returns
    the bytes of the entry's file.

    Under the lock ``libs/<key>.lock`` (_LockTimeout after ``lock_timeout`` s): ``make(work)``
    builds the file in a new work folder and returns its path; the entry gets it (mode 0700),
    ``files`` ({name: text}) and ``manifest.json`` (``manifest`` with the key, size and SHA-256),
    and is published by one rename.  The work folder is removed whatever happens."""
    from filelock import FileLock, Timeout

    entry, lock_path = libs / key, libs / f"{key}.lock"
    final = entry / filename
    with contextlib.suppress(FileNotFoundError):
        if _untrusted(os.lstat(lock_path), want_dir=False):
            _remove(lock_path)                       # never open a planted link
    try:
        held = FileLock(str(lock_path), timeout=lock_timeout, mode=_FILE_MODE).acquire()
    except Timeout:
        raise _LockTimeout(f"waited {lock_timeout:.0f} s for another process building the same "
                           f"entry (lock {lock_path}); remove the lock if no build is running") \
            from None
    with held:                                     # released when this block ends
        try:
            data = _check_entry(entry, final, key)
            if _sha256(data) != bad_sha:
                return data                        # another process has built it
            problem = f"{final} passes its manifest but failed when used"
        except FileNotFoundError:
            problem = None
        except _CacheEntryError as exc:
            problem = str(exc)
        if problem:
            log.warning("rebuilding cache entry: %s", problem)
        _sweep_stale(libs, key, stale_after)
        work = Path(tempfile.mkdtemp(dir=libs, prefix=f"{_BUILD_PREFIX}{key[:16]}-"))
        try:
            built = make(work)
            out = work / "entry"
            _private_dir(out)
            os.replace(built, out / filename)
            os.chmod(out / filename, _MODULE_MODE)
            for fname, text in files.items():
                _atomic_write(out / fname, text)
            data = _read_private(out / filename)
            _atomic_write(out / "manifest.json", json.dumps(
                {**manifest, "key": key, "size": len(data), "sha256": _sha256(data)}))
            _remove(entry)
            os.rename(out, entry)                  # publish the whole entry at once
        finally:
            _remove_work(work)
    return data
