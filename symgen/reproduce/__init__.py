"""``symgen reproduce``: rerun the experiments of Fernández de Bustos et al. (Meccanica 2022),
Secs. 3, 6 and 7 (with the cost claim of Sec. 8), and write a Markdown report with PNG figures and
a table

    claim | the paper's value | ours | agree?

Every number in "ours" is computed by the runs of this invocation; "agree?" is decided by a rule
stated next to each claim (for instance "stable" means the run completed and its amplitude stays
within 3× the physical one).  Nothing is hard-coded as agreeing.

Experiments (``--quick`` runs a reduced set, under a minute, for CI; the claims it does not run
stay in the table as "not run (--quick)"):

* stiff pendulum: minimal coordinates (central differences, Fox–Goodwin, trapezoidal) against the
  classical constrained index-3 Newmark and the null-space method, the step-size study, the
  torque-amplitude study with reaction forces; the reference is a tight SciPy integration of
  m L² θ̈ + m g L sin θ = T0 sin(ω̄ t).
* double pendulum (this project's parameters, see ``examples/double_pendulum.py``): classical
  index-3 with (0.5000005, 0.2500006), (0.5, 0.25) and (0.5001, 0.2507) against the null-space
  method with Fox–Goodwin; constraint-error histories; the ω_max history and the step it allows;
  the reference is a tight SciPy integration of the same pendulum in its two absolute angles.
* Andrews' squeezer: classical (0.5, 0.25) and (0.5001, 0.2507) against the null-space method with
  Fox–Goodwin at h = 2e-6; the ω_max history; runs at 5e-4 and 6e-4; the reference is the Test Set
  for IVP Solvers' solution at t = 0.03.
* efficiency (Sec. 7 and the cost claim of Sec. 8): the IFToMM double four-bar and Bricard
  benchmarks (energy drift limits, CPU time beside the paper's and Table 3/4's, measured on other
  processors) and the CPU time per Newton iteration of the null-space against the index-3 step.

The package: :mod:`.claims` (the table and the rules of "agree?"), :mod:`.references` (reference
models and SciPy oracles, shared with the tests), :mod:`.context` (runs, figures, notes), one
module per experiment (:mod:`.pendulum`, :mod:`.double_pendulum`, :mod:`.andrews`) and
:mod:`.report` (the one report writer).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

from . import andrews, beyond, double_pendulum, efficiency, pendulum
from .claims import CLAIMS, GROWTH, STABLE_RATIO, Claim, _p2_growth  # noqa: F401
from .context import Context, Failed
from .references import (ANDREWS_REF, ANDREWS_REF_T, minimal_double_pendulum,  # noqa: F401
                         minimal_pendulum)
from .report import Report, write_report

__all__ = ["run", "Report", "Claim", "CLAIMS", "Context", "Failed", "minimal_pendulum",
           "minimal_double_pendulum"]

log = logging.getLogger(__name__)


EXPERIMENTS = (("stiff pendulum", pendulum.experiment, ("P",)),
               ("double pendulum", double_pendulum.experiment, ("D",)),
               ("Andrews' squeezer", andrews.experiment, ("A",)),
               ("beyond the paper", beyond.experiment, ("B",)),
               (efficiency.SECTION, efficiency.experiment, ("E",)))


def run(out="reproduction", quick: bool = False, experiments=None,
        progress: Callable[[str], None] | None = None) -> Report:
    """Run the experiments (all, or those named in ``experiments``) and write ``out/report.md``.

    Progress messages go to the ``symgen.reproduce`` logger and, when given, to ``progress``
    (the command line passes ``print``).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def say(msg):
        log.info(msg)
        if progress is not None:
            progress(msg)

    ctx = Context(out, quick, say)
    start = time.perf_counter()
    errors = {}
    for name, fn, prefixes in EXPERIMENTS:
        if experiments is not None and name not in experiments:
            for cl in ctx.claims.values():
                if cl.id.startswith(prefixes) and cl.agree.startswith("not run"):
                    cl.agree = "not run"
            continue
        say(f"{name}:")
        t0 = time.perf_counter()
        try:
            fn(ctx)
        except Exception as exc:  # an experiment that breaks is reported, the rest still runs
            log.exception("experiment %s failed", name)
            errors[name] = f"{type(exc).__name__}: {exc}"
            for cl in ctx.claims.values():
                if cl.id.startswith(prefixes) and cl.agree.startswith("not run"):
                    cl.ours = f"experiment failed: {errors[name]}"
                    cl.agree = "error"
        say(f"  {name} done in {time.perf_counter() - t0:.1f} s")
    wall = time.perf_counter() - start
    claims = list(ctx.claims.values())
    report = Report(out / "report.md", claims, quick, wall, ctx.runs, errors)
    write_report(report, ctx, errors)
    return report
