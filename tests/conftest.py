"""Shared test set-up: one symgen cache per test session, so tests never touch the user's cache
and never depend on what an earlier run left behind (set SYMGEN_TEST_CACHE to reuse one); and
``warm_build``, which compiles models the tests will need into that cache in another process,
started at the session's start for the models the session's test modules list in a
module-level ``WARM`` (SYMGEN_TEST_WARM=0 turns that off)."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

_cache = os.environ.get("SYMGEN_TEST_CACHE") or tempfile.mkdtemp(prefix="symgen-test-cache-")
os.environ["SYMGEN_CACHE_DIR"] = _cache
# pytest-xdist's workers start from this process's environment: they share the session's cache
os.environ["SYMGEN_TEST_CACHE"] = _cache

#: the child of warm_build: builds the model of each of its arguments, "module:function" with
#: options ":NAME=VALUE" (a Python literal), or else a name or path for symgen.load_model
_WARM = r"""
import ast, importlib, sys
sys.path.insert(0, sys.argv[1])
import symgen
for spec in sys.argv[2:]:
    if ":" not in spec:
        symgen.build(symgen.load_model(spec))
        continue
    module, function, *opts = spec.split(":")
    kw = dict((k, ast.literal_eval(v)) for k, v in (o.split("=") for o in opts))
    symgen.build(getattr(importlib.import_module(module), function)(**kw))
"""


@pytest.fixture(scope="session")
def warm_build():
    """``warm_build(spec, ...)`` starts one process that builds (compiles with the runtime, as
    ``symgen.build`` does by default) the models ``spec`` names, in order, into this session's
    cache, while the tests run on the other core: a test that needs one finds it built,
    or waits on the build's lock, or builds it itself if the child has not got there yet (the
    child then finds it built).  A spec is ``"module:function"`` (``"stepper_models:four_bar"``,
    ``"symgen.examples.bricard:model"``), with options as ``":N=10"``, or what
    ``symgen.load_model`` takes (an example's name, a model file's path).  Only the time changes:
    what a test builds and checks is its own.  Returns the child (a Popen); at the session's end
    it is ended if it is still running (so a module may warm what a later one needs)."""
    procs = []

    def start(*specs):
        procs.append(subprocess.Popen([sys.executable, "-c", _WARM, str(Path(__file__).parent),
                                       *map(str, specs)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        return procs[-1]
    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.fixture(scope="session", autouse=True)
def _warm_declared(request, warm_build):
    """At the session's start, one warm_build of the models that the session's test modules list
    in a module-level ``WARM``, in the order the modules run (each model once)."""
    if os.environ.get("SYMGEN_TEST_WARM", "1") == "0":
        return
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return                          # (under pytest-xdist one worker warms the shared cache)
    specs = []
    for item in request.session.items:
        for spec in getattr(getattr(item, "module", None), "WARM", ()):
            if spec not in specs:
                specs.append(spec)
    if specs:
        warm_build(*specs)


@pytest.fixture(scope="module")
def kernels():
    """``kernels(name)``: a shipped example built once per test module (symgen.build of
    symgen.load_model(name)); a module that needs options or models of its own defines its own."""
    import symgen

    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = symgen.build(symgen.load_model(name))
        return cache[name]
    return get
