"""Shared test set-up: one symgen cache per test session, so tests never touch the user's cache
and never depend on what an earlier run left behind (set SYMGEN_TEST_CACHE to reuse one)."""
import os
import tempfile

_cache = os.environ.get("SYMGEN_TEST_CACHE") or tempfile.mkdtemp(prefix="symgen-test-cache-")
os.environ["SYMGEN_CACHE_DIR"] = _cache
