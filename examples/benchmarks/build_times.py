"""How long a model's first build and `symgen export` take, and how much of it is compiling
(issue 34, item 3: the steppers' C runtime compiled once per cache; docs/build-cache.md).

Each case runs in a new process with its own cache (SYMGEN_CACHE_DIR in a temporary folder):

* ``empty``: ``symgen.build(symgen.load_model(MODEL))`` with an empty cache;
* ``runtime cached``: the same with only the runtime library in the cache (the generated source
  and the module removed after an ``empty`` build);
* ``runtime alone``: the runtime library's compile within the ``empty`` build;
* ``export 1``, ``export 2``: ``symgen export MODEL --fmi 2`` twice in a row (one cache).

``build`` is the time of the ``symgen.build`` call (generating the C included, imports and
loading the model not); ``compile`` the compiler child processes' wall time and, in brackets,
their CPU time (user + system: what a busy machine does not stretch); ``export`` the whole
command.  Medians over ``--repeat`` runs.  Also runs on symgen before the runtime was compiled
once (no ``runtime cached`` case there), for the comparison::

    python examples/benchmarks/build_times.py --repeat 5
    cd /tmp && PYTHONPATH=/path/to/old/checkout python /path/to/build_times.py --repeat 5
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: one build in this child process: the build's time and each compiler child's wall and CPU time
CHILD = r"""
import json, resource, sys, time
import symgen, symgen.jit as jit
child = getattr(jit, "_run_child", None)
name = "_run_child" if child else "_compile"          # before the change: _compile only
orig = getattr(jit, name)
compiles = []
def timed(*a, **k):
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    try:
        return orig(*a, **k)
    finally:
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        what = ("runtime" if a[0] == jit._ARCHIVE_SCRIPT else "module") if child else "module"
        compiles.append([what, time.perf_counter() - t0,
                         r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime])
setattr(jit, name, timed)
model = symgen.load_model(sys.argv[1])
t0 = time.perf_counter()
symgen.build(model)
print(json.dumps({"build": time.perf_counter() - t0, "compiles": compiles}))
"""


def _build(model: str, cache: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, model], capture_output=True, text=True,
                         env=dict(os.environ, SYMGEN_CACHE_DIR=str(cache)), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _keep_runtime_only(cache: Path) -> bool:
    """Remove all but the runtime library from the cache; whether there was one."""
    shutil.rmtree(cache / "src")
    kept = False
    for entry in (cache / "lib").iterdir():
        if entry.is_dir() and (entry / "libsymgen_runtime.a").is_file():
            kept = True
        elif entry.is_dir():
            shutil.rmtree(entry)
    return kept


def _export(model: str, cache: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU time of one `symgen export` command."""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-m", "symgen", "export", model, "--fmi", "2", "-o", str(out)],
                   capture_output=True, check=True, env=dict(os.environ, SYMGEN_CACHE_DIR=str(cache)))
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - t0, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime


def _sum(compiles, what=None):
    rows = [c for c in compiles if what is None or c[0] == what]
    return (sum(c[1] for c in rows), sum(c[2] for c in rows)) if rows else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="stiff_pendulum")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import symgen

    rows: dict[str, list] = {}
    load0 = os.getloadavg()[0]
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="symgen-bt-") as tmp:
            cache = Path(tmp) / "cache"
            first = _build(args.model, cache)
            rows.setdefault("empty: build", []).append((first["build"], None))
            rows.setdefault("empty: compile", []).append(_sum(first["compiles"]))
            if _sum(first["compiles"], "runtime"):
                rows.setdefault("runtime alone: compile", []).append(
                    _sum(first["compiles"], "runtime"))
            if _keep_runtime_only(cache):
                again = _build(args.model, cache)
                rows.setdefault("runtime cached: build", []).append((again["build"], None))
                rows.setdefault("runtime cached: compile", []).append(_sum(again["compiles"]))
        with tempfile.TemporaryDirectory(prefix="symgen-bt-") as tmp:
            for i in (1, 2):
                rows.setdefault(f"export {i}", []).append(
                    _export(args.model, Path(tmp) / "cache", Path(tmp) / f"{i}.fmu"))
    print(f"symgen {symgen.__version__} from {Path(symgen.__file__).parent}; model "
          f"{args.model}; medians of {args.repeat}; load average {load0:.1f} → "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for case, values in rows.items():
        wall = statistics.median(v[0] for v in values)
        cpus = [v[1] for v in values if v[1] is not None]
        cpu = f" (CPU {statistics.median(cpus):.2f} s)" if cpus else ""
        print(f"  {case:26s} {wall:6.2f} s{cpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
