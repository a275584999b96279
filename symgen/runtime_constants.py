"""The codes and constants the Python steppers and the C runtime share, defined once (issue 37.1).

This table is the one definition: ``templates/runtime/sg_constants.h.j2`` renders it into the
runtime's ``sg_constants.h`` (:func:`symgen.codegen.render.runtime_sources`), which
``symgen_runtime.h`` and ``symgen_sparse.c`` include; the Python steppers use the names below.
``tests/test_runtime_constants.py`` reads every entry back from a compiled runtime through cffi
(``lib.SG_*``) and compares it with the value here.

- :data:`ENUMS`: the integer codes (C enums; the API's methods, charts, metrics, factorizations,
  statuses, failure kinds, flags, and the integer limits);
- :data:`DOUBLES`: the numbers both steppers decide with (``static const double`` in C): the
  landing test, the sub-steps and the crossing of a fixed step, the projection of an
  interpolated row, the error control, the sparse step's rank confirmation.

Changing a value here changes both steppers (and the C every model ships: regenerate
``generated/``); the runtime identity script (examples/benchmarks/runtime_identity.py) shows
which numbers move.
"""
from __future__ import annotations

__all__ = ["ENUMS", "DOUBLES", "CODES", "C_METHODS", "C_CHARTS", "C_METRICS", "C_FACTORIZATIONS",
           "METHOD_CODES", "CHART_CODES", "METRIC_CODES",
           "FACTORIZATION_CODES", "LANDING_RATIO", "LANDING_DROP", "T_SINGULAR", "REUSE_RATE",
           "SUBSTEP_RTOL", "SUBSTEP_ATOL", "SUBSTEP_FIRST", "CROSS_FIRST", "ROW_TOL",
           "CONSISTENT_TOL", "CONSISTENT_MAX_ITER", "ROW_TIME_SLACK", "CTL_SAFETY", "CTL_GROW_MAX",
           "CTL_SHRINK_MIN", "CTL_NEWTON_SHRINK", "CTL_ORDER", "CTL_ERR_FLOOR", "CTL_ROUNDOFF",
           "CTL_H_ROUNDOFF",
           "STABILITY_FRACTION", "SLIVER", "HIST_DEGREE", "HHT_DEGREE", "TIMES_KEPT",
           "SPARSE_CONFIRM", "SPARSE_VOLUME_DROP", "SPARSE_SIGMA_STEPS_NEW", "EVENT_XTOL",
           "EVENT_MAX_ITER", "IMPACT_MAX_BURST", "IMPACT_TIME_TOL"]

# -- the numbers (Python names; DOUBLES and ENUMS below give their C names and what they decide) --
#: a landing next to a singular configuration (nullspace.py "Landings"): s_min/s_max of H below
#: LANDING_RATIO and below LANDING_DROP times its value at the start of the step
LANDING_RATIO = 1e-4
LANDING_DROP = 0.5
#: the symmetric chart: T = N_sᵀN_H with a singular value below this is singular (chart.py)
T_SINGULAR = 1e-6
#: without constraints (m = 0) the chart system's LU is kept across Newton iterations (modified
#: Newton, docs/fourth-order-step.md) while each update is at most REUSE_RATE times the one before
REUSE_RATE = 0.25
#: a fixed step Newton could not close, taken as sub-steps under the error control
#: (control.py substeps): its tolerances and its first sub-step as a fraction of h
SUBSTEP_RTOL = 1e-6
SUBSTEP_ATOL = 1e-8
SUBSTEP_FIRST = 0.25
#: a crossed grid point (nullspace.py "Crossings"): the crossing's first sub-step, a fraction of h
CROSS_FIRST = 0.3
#: an interpolated row (a crossed grid point, a t_eval row) projected onto q = 0 until
#: max|q| ≤ ROW_TOL·max(1, max|x|) (a step's own states), else CONSISTENT_TOL (the consistent
#: start's: assembly.consistent_state), in at most CONSISTENT_MAX_ITER Gauss–Newton iterations
ROW_TOL = 1e-15
CONSISTENT_TOL = 1e-13
CONSISTENT_MAX_ITER = 50
#: a step from t to t + h takes the t_eval rows at or before t + h·(1 + ROW_TIME_SLACK)
ROW_TIME_SLACK = 1e-14
#: the PI controller of the error control (control.py StepController): safety factor, largest
#: growth, smallest shrink, the shrink after a Newton failure, the estimate's order, the error
#: norm's floor in its powers
CTL_SAFETY = 0.9
CTL_GROW_MAX = 5.0
CTL_SHRINK_MIN = 0.2
CTL_NEWTON_SHRINK = 0.25
CTL_ORDER = 3.0
CTL_ERR_FLOOR = 1e-10
#: the corrected step's estimate is never below this times its terms (64 ε; control.py ROUNDOFF)
CTL_ROUNDOFF = 64 * 2.220446049250313e-16
#: no try is shorter than this times max(1, |t|) (64 ε: it could not advance t): the error
#: control's and the sub-steps' (a failed fixed step's, a crossing's) floor on h
CTL_H_ROUNDOFF = 64 * 2.220446049250313e-16
#: a try of a conditionally stable scheme is cut to this fraction of h_max(ω_max)
STABILITY_FRACTION = 0.9
#: a try that would leave less than this fraction of itself before the end takes the whole rest
SLIVER = 0.01
#: degrees of the acceleration polynomials of the corrected step's and the index-3 step's error
#: estimates (control.py HISTORY_DEGREE, HHT_DEGREE)
HIST_DEGREE = 5
HHT_DEGREE = 2
#: times kept of the first events each counter counts (floor, landing, sub-stepped, crossed)
TIMES_KEPT = 100
#: an event (events.py, sg_events.c.inc): its time located to EVENT_XTOL·max(|t + h|, h) (the
#: Illinois bracket's width) in at most EVENT_MAX_ITER iterations
EVENT_XTOL = 1e-13
EVENT_MAX_ITER = 100
#: impacts (impacts.py, sg_impacts.c.inc): a run with more than IMPACT_MAX_BURST impacts in a row
#: without an accepted step free of impacts ends (a cascade); another impact is simultaneous
#: when its gap is within |ġ|·IMPACT_TIME_TOL·max(|τ|, h)
IMPACT_MAX_BURST = 20
IMPACT_TIME_TOL = 1e-9
#: the sparse step (sparse.py): a rank within SPARSE_CONFIRM of the threshold is confirmed by the
#: dense QR; new independent coordinates below SPARSE_VOLUME_DROP of the best |det N_I|; inverse
#: iteration steps for σ_min after a new partition
SPARSE_CONFIRM = 100.0
SPARSE_VOLUME_DROP = 0.5
SPARSE_SIGMA_STEPS_NEW = 6

#: The integer codes, one C enum a group: (the group's comment, ((C name, value, comment), …)).
ENUMS = (
    ("Methods (sg_options.method).", (
        ("SG_NULLSPACE", 0, "the null-space Newmark step (steppers/nullspace.py)"),
        ("SG_INDEX3", 1, "the index-3 Newmark / HHT-alpha step (steppers/index3.py)"))),
    ("Tangent charts of the null-space step (sg_options.chart).", (
        ("SG_CHART_END", 0, "the paper's: the tangent space at the end of the step"),
        ("SG_CHART_SYMMETRIC", 1, "the null space of H_s = (H(t) + H(t+h))/2 (chart.py)"))),
    ("sg_options.metric: how the null-space step takes the Newmark relations' tangent part "
     "(symgen/steppers/nullspace.py; SG_METRIC_MASS beyond the paper, "
     "docs/spatial-accuracy.md).", (
        ("SG_METRIC_EUCLIDEAN", 0, "N_s^T R = 0 (the paper's)"),
        ("SG_METRIC_MASS", 1, "N_s^T M R = 0"))),
    ("sg_options.factorization.", (
        ("SG_DENSE_QR", 0, "pivoted Householder QR of H^T"),
        ("SG_SPARSE", 1, "the sparse step (symgen_sparse.h)"))),
    ("Status of a step or a chunk of steps.", (
        ("SG_OK", 0, ""), ("SG_FAILED", 1, ""), ("SG_DIVERGED", 2, ""),
        ("SG_EVENT", 3, "a terminal event ended the chunk (sg_events_take)"),
        ("SG_IMPACT", 4, "sg_run_auto: an impact ended the chunk, its last row the state "
                         "after it (sg_impacts_take)"))),
    ("What went wrong (sg_failure.kind); the Python side words each kind as its steppers do.", (
        ("SG_FAIL_NONE", 0, ""),
        ("SG_FAIL_NONFINITE_ITERATE", 1, "nullspace: non-finite Newton iterate (iteration)"),
        ("SG_FAIL_NOT_CONVERGED", 2, "Newton ran out of iterations (value0 = update, value1 = "
                                     "max(|q|, h|q_dot|, h^2|q_ddot|) or |q|, value2 = "
                                     "max|lambda| for index3)"),
        ("SG_FAIL_FACTOR_NONFINITE", 3, "H has non-finite entries (iteration)"),
        ("SG_FAIL_SINGULAR_REDUCED", 4, "singular M_R + gh C_R + bh^2 K_R (iteration, k)"),
        ("SG_FAIL_NONFINITE_UPDATE", 5, "non-finite Newton update (iteration = it + 1)"),
        ("SG_FAIL_I3_NONFINITE", 6, "index3: non-finite state or |q| (iteration)"),
        ("SG_FAIL_RUN_NONFINITE", 7, "the accepted state or residuals are not finite "
                                     "(iteration = Newton iterations of the step)"),
        ("SG_FAIL_RUN_BOUND", 8, "value0 = the size, which = 0 |x|, 1 h|xd|, 2 h^2|xdd|"),
        ("SG_FAIL_CHART_T_SINGULAR", 9, "symmetric chart: T = N_s^T N_H singular (iteration, "
                                        "value0 = its smallest singular value)"),
        ("SG_FAIL_CHART_SINGULAR", 10, "symmetric chart: singular 3k x 3k step matrix "
                                       "(iteration, k)"),
        ("SG_FAIL_SPARSE_SINGULAR", 11, "sparse step: singular LU of H[R, D] (iteration)"),
        ("SG_FAIL_CHART_SPARSE_SINGULAR", 12, "symmetric chart on the sparse step: singular LU "
                                              "of H_s[R, D] (iteration)"),
        ("SG_FAIL_NO_MEMORY", 13, "out of memory for the buffers of a larger null space or a "
                                  "new partition (iteration, k)"),
        ("SG_FAIL_NO_STEP", 14, "error control: no try from t was accepted down to value0 = h "
                                "(value1 = h_min, 0: round-off); k = the kind of the last Newton "
                                "failure (0: the error test rejected every try), iteration its "
                                "iteration, s_ratio.  A fixed step's sub-steps: t and iteration "
                                "the step's own, value2 = where they stopped "
                                "(sg_stats.substep_*)"),
        ("SG_FAIL_DENSE_ROW", 15, "dense output: the t_eval row at t could not be projected "
                                  "onto the constraints (value0 = 1: the positions, 2: a "
                                  "singular reduced mass)"),
        ("SG_FAIL_SAMPLE", 16, "the sampled controller (sg_set_sampler) stopped the run at t"),
        ("SG_FAIL_IMPACT_CASCADE", 17, "more than SG_IMPACT_MAX_BURST impacts in a row at t "
                                       "(value0 = the impacts in the burst)"),
        ("SG_FAIL_KINDS", 18, "how many kinds there are (sg_failure_message)"))),
    ("The bits of sg_step_info.flags and sg_run_chunk's FL (symgen's Result.flags; "
     "steppers/control.py Flag).", (
        ("SG_FLAG_REJECTED_ERROR", 1, "a try of this step was rejected by the error test"),
        ("SG_FLAG_REJECTED_NEWTON", 2, "a try of this step was rejected: Newton did not "
                                       "converge"),
        ("SG_FLAG_FLOOR", 4, "accepted at Newton's round-off floor"),
        ("SG_FLAG_STABILITY", 8, "h was cut to SG_STABILITY_FRACTION h_max(omega_max)"),
        ("SG_FLAG_SUBSTEPPED", 16, "a fixed step covered by sub-steps (sg_run_chunk's FL)"),
        ("SG_FLAG_NO_ESTIMATE", 32, "no error estimate (the first step)"))),
    ("Integer limits.", (
        ("SG_TIMES_KEPT", TIMES_KEPT, "times kept of the first events a counter counts "
                                      "(sg_stats)"),
        ("SG_HIST_DEGREE", HIST_DEGREE, "the corrected step's estimate: degree of its "
                                        "acceleration polynomial"),
        ("SG_HHT_DEGREE", HHT_DEGREE, "the index-3 step's: degree of the polynomial through its "
                                      "true accelerations (at most SG_HIST_DEGREE)"),
        ("SG_CONSISTENT_MAX_ITER", CONSISTENT_MAX_ITER, "Gauss-Newton iterations of a "
                                                        "projection onto q = 0"),
        ("SG_EVENT_MAX_ITER", EVENT_MAX_ITER, "an event's Illinois iterations at most"),
        ("SG_IMPACT_MAX_BURST", IMPACT_MAX_BURST, "impacts in a row without a free step before "
                                                  "a run ends (a cascade)"),
        ("SG_SP_SIGMA_STEPS_NEW", SPARSE_SIGMA_STEPS_NEW, "the sparse step: inverse-iteration "
                                                          "steps for sigma_min after a new "
                                                          "partition"))),
)

#: The numbers both steppers decide with: (C name, value, comment); ``static const double``.
DOUBLES = (
    ("SG_LANDING_RATIO", LANDING_RATIO, "a landing: s_min/s_max of H below this ..."),
    ("SG_LANDING_DROP", LANDING_DROP, "... and below this times its value at the step's start"),
    ("SG_T_SINGULAR", T_SINGULAR, "symmetric chart: T = N_s^T N_H singular below this"),
    ("SG_REUSE_RATE", REUSE_RATE, "m = 0: the chart system's LU kept while an update is at most "
                                  "this times the one before"),
    ("SG_SUBSTEP_RTOL", SUBSTEP_RTOL, "a failed fixed step's sub-steps: their rtol,"),
    ("SG_SUBSTEP_ATOL", SUBSTEP_ATOL, "their atol,"),
    ("SG_SUBSTEP_FIRST", SUBSTEP_FIRST, "the first sub-step (a fraction of h)"),
    ("SG_CROSS_FIRST", CROSS_FIRST, "a crossing's first sub-step (a fraction of h)"),
    ("SG_ROW_TOL", ROW_TOL, "an interpolated row's projection: max|q| <= this max(1, max|x|),"),
    ("SG_CONSISTENT_TOL", CONSISTENT_TOL, "else this (the consistent start's)"),
    ("SG_ROW_TIME_SLACK", ROW_TIME_SLACK, "a step to t + h takes the t_eval rows <= t + h (1 + "
                                          "this)"),
    ("SG_CTL_SAFETY", CTL_SAFETY, "the PI controller: safety factor,"),
    ("SG_CTL_GROW_MAX", CTL_GROW_MAX, "largest growth,"),
    ("SG_CTL_SHRINK_MIN", CTL_SHRINK_MIN, "smallest shrink,"),
    ("SG_CTL_NEWTON_SHRINK", CTL_NEWTON_SHRINK, "the shrink after a Newton failure,"),
    ("SG_CTL_ORDER", CTL_ORDER, "the estimate's order,"),
    ("SG_CTL_ERR_FLOOR", CTL_ERR_FLOOR, "the error norm's floor in its powers"),
    ("SG_CTL_ROUNDOFF", CTL_ROUNDOFF, "the corrected step's estimate: its round-off (64 eps)"),
    ("SG_CTL_H_ROUNDOFF", CTL_H_ROUNDOFF, "no try shorter than this max(1, |t|) (64 eps; the "
                                          "sub-steps' too)"),
    ("SG_STABILITY_FRACTION", STABILITY_FRACTION, "a try is cut to this times h_max(omega_max)"),
    ("SG_SLIVER", SLIVER, "a try leaving less than this times itself takes the whole rest"),
    ("SG_EVENT_XTOL", EVENT_XTOL, "an event's time to this max(|t + h|, h)"),
    ("SG_IMPACT_TIME_TOL", IMPACT_TIME_TOL, "another impact is simultaneous when its gap is "
                                            "within |g_dot| this max(|tau|, h)"),
    ("SG_SP_CONFIRM", SPARSE_CONFIRM, "the sparse step: a rank within this factor of the "
                                      "threshold is confirmed by the dense QR"),
    ("SG_SP_VOLUME_DROP", SPARSE_VOLUME_DROP, "new independent coordinates below this fraction "
                                              "of the best |det N_I|"),
)

#: C name → value of every integer code
CODES = {name: value for _, group in ENUMS for name, value, _ in group}
#: the settings' names → the runtime's C names (main.c's and the FMU's literals) …
C_METHODS = {"nullspace": "SG_NULLSPACE", "index3": "SG_INDEX3"}
C_CHARTS = {"end": "SG_CHART_END", "symmetric": "SG_CHART_SYMMETRIC"}
C_METRICS = {"euclidean": "SG_METRIC_EUCLIDEAN", "mass": "SG_METRIC_MASS"}
C_FACTORIZATIONS = {"qr": "SG_DENSE_QR", "sparse": "SG_SPARSE"}
#: … and codes (sg_options' fields)
METHOD_CODES = {name: CODES[c] for name, c in C_METHODS.items()}
CHART_CODES = {name: CODES[c] for name, c in C_CHARTS.items()}
METRIC_CODES = {name: CODES[c] for name, c in C_METRICS.items()}
FACTORIZATION_CODES = {name: CODES[c] for name, c in C_FACTORIZATIONS.items()}
