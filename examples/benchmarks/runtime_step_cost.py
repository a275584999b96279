"""The C runtime's step cost before and after a change, side by side in one run.

Builds each example's generated ``main.c`` (from ``generated/``, with its CSV printing turned into
a no-op) twice, once against the runtime of git revision BASE and once against the working
tree's ``templates/runtime/``, and times the two binaries alternately (ROUNDS rounds, the fastest
of each, in CPU time) for both charts and both factorizations.  Prints the seconds per step and the ratio
new/base::

    python examples/benchmarks/runtime_step_cost.py BASE [ROUNDS [EXAMPLE]]

Each binary is built with its own revision's ``main.c`` (BASE's, and the working tree's
``generated/``): their step loops are the same, and the summary line at the end reads the API of
its own runtime (issue 26 replaced the statistics getters by ``sg_stats_get``).
"""
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: (example, DT, T_END): runs of 0.5–2 s, through singular passages where the example has them
CASES = [("double_four_bar", "1e-2", "200"), ("n_four_bar", "1e-2", "1"),
         ("bricard", "1e-2", "100"), ("andrews_squeezer", "1e-5", "0.03")]
CHARTS, FACTORIZATIONS = ("end", "symmetric"), ("qr", "sparse")


def _git(rev: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout


def _quiet(main_c: str) -> str:
    """main.c without its CSV output (stdout), so that the run times the steps."""
    main_c = re.sub(r"\bprintf\(", "sg_quiet(", main_c)
    return main_c.replace('#include <string.h>\n', '#include <string.h>\n\nstatic void sg_quiet('
                          'const char *f, ...) { (void)f; }\n', 1)


def _build(folder: Path, name: str, runtime: dict, main_c: str) -> Path:
    folder.mkdir()
    for fname in (f"{name}.c", f"{name}.h"):
        shutil.copy(ROOT / "generated" / name / fname, folder / fname)
    for fname, text in runtime.items():
        (folder / fname).write_text(text)
    (folder / "main.c").write_text(main_c)
    subprocess.run(["cc", "-std=c99", "-O2", "-o", "prog", "main.c", f"{name}.c",
                    "symgen_runtime.c", "symgen_sparse.c", "-lm"], cwd=folder, check=True)
    return folder / "prog"


def _time(prog: Path, args) -> float:
    """CPU seconds of one run (user + system: less disturbed than wall time by other load)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([str(prog), *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    base, rounds = argv[1], int(argv[2]) if len(argv) > 2 else 5
    cases = [c for c in CASES if len(argv) < 4 or c[0] == argv[3]]
    listing = subprocess.run(["git", "ls-tree", "--name-only", f"{base}:templates/runtime"],
                             cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    old_rt = {f: _git(base, f"templates/runtime/{f}") for f in listing}
    new_rt = {p.name: p.read_text() for p in (ROOT / "templates" / "runtime").iterdir()}
    ratios = []
    print(f"{'case':44s} {'base s/step':>12s} {'new s/step':>12s} {'new/base':>9s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, dt, t_end in cases:
            old = _build(Path(tmp) / f"{name}-base", name, old_rt,
                         _quiet(_git(base, f"generated/{name}/main.c")))
            new = _build(Path(tmp) / f"{name}-new", name, new_rt,
                         _quiet((ROOT / "generated" / name / "main.c").read_text()))
            steps = round(float(t_end) / float(dt))
            for chart in CHARTS:
                for fac in FACTORIZATIONS:
                    args = [dt, t_end, chart, fac]
                    t_old, t_new = [], []
                    for _ in range(rounds):
                        t_old.append(_time(old, args))
                        t_new.append(_time(new, args))
                    a, b = min(t_old) / steps, min(t_new) / steps
                    ratios.append(b / a)
                    print(f"{name + ' ' + chart + ' ' + fac:44s} {a:12.3e} {b:12.3e} {b / a:9.3f}")
    geo = 1.0
    for r in ratios:
        geo *= r
    print(f"geometric mean of new/base over {len(ratios)} cases: {geo ** (1 / len(ratios)):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
