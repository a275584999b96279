/* sg_constants.h: the codes and constants the C runtime shares with symgen's Python steppers.
 * Generated from the one table in symgen/runtime_constants.py by
 * templates/runtime/sg_constants.h.j2; do not edit: change the table and regenerate.
 * tests/test_runtime_constants.py reads every entry back from a compiled runtime and compares it
 * with the table.
 *
 * The enums are part of the API (symgen_runtime.h includes this file); the doubles are the
 * numbers both steppers decide with (landings, sub-steps, crossings, the projection of an
 * interpolated row, the error control, the sparse step), not options.  Everything between
 * SG_CDEF_BEGIN and SG_CDEF_END is also read by Python's cffi (keep it free of preprocessor
 * directives).
 */
#ifndef SG_CONSTANTS_H
#define SG_CONSTANTS_H

/* SG_CDEF_BEGIN */

/* Methods (sg_options.method). */
enum {
    SG_NULLSPACE = 0,                   /* the null-space Newmark step (steppers/nullspace.py) */
    SG_INDEX3 = 1                       /* the index-3 Newmark / HHT-alpha step
                                           (steppers/index3.py) */
};

/* Tangent charts of the null-space step (sg_options.chart). */
enum {
    SG_CHART_END = 0,                   /* the paper's: the tangent space at the end of the step */
    SG_CHART_SYMMETRIC = 1              /* the null space of H_s = (H(t) + H(t+h))/2 (chart.py) */
};

/* sg_options.metric: how the null-space step takes the Newmark relations' tangent part
 * (symgen/steppers/nullspace.py; SG_METRIC_MASS beyond the paper, docs/spatial-accuracy.md). */
enum {
    SG_METRIC_EUCLIDEAN = 0,            /* N_s^T R = 0 (the paper's) */
    SG_METRIC_MASS = 1                  /* N_s^T M R = 0 */
};

/* sg_options.factorization. */
enum {
    SG_DENSE_QR = 0,                    /* pivoted Householder QR of H^T */
    SG_SPARSE = 1                       /* the sparse step (symgen_sparse.h) */
};

/* Status of a step or a chunk of steps. */
enum {
    SG_OK = 0,
    SG_FAILED = 1,
    SG_DIVERGED = 2,
    SG_EVENT = 3,                       /* a terminal event ended the chunk (sg_events_take) */
    SG_IMPACT = 4                       /* sg_run_auto: an impact ended the chunk, its last row
                                           the state after it (sg_impacts_take) */
};

/* What went wrong (sg_failure.kind); the Python side words each kind as its steppers do. */
enum {
    SG_FAIL_NONE = 0,
    SG_FAIL_NONFINITE_ITERATE = 1,      /* nullspace: non-finite Newton iterate (iteration) */
    SG_FAIL_NOT_CONVERGED = 2,          /* Newton ran out of iterations (value0 = update, value1
                                           = max(|q|, h|q_dot|, h^2|q_ddot|) or |q|, value2 =
                                           max|lambda| for index3) */
    SG_FAIL_FACTOR_NONFINITE = 3,       /* H has non-finite entries (iteration) */
    SG_FAIL_SINGULAR_REDUCED = 4,       /* singular M_R + gh C_R + bh^2 K_R (iteration, k) */
    SG_FAIL_NONFINITE_UPDATE = 5,       /* non-finite Newton update (iteration = it + 1) */
    SG_FAIL_I3_NONFINITE = 6,           /* index3: non-finite state or |q| (iteration) */
    SG_FAIL_RUN_NONFINITE = 7,          /* the accepted state or residuals are not finite
                                           (iteration = Newton iterations of the step) */
    SG_FAIL_RUN_BOUND = 8,              /* value0 = the size, which = 0 |x|, 1 h|xd|, 2 h^2|xdd| */
    SG_FAIL_CHART_T_SINGULAR = 9,       /* symmetric chart: T = N_s^T N_H singular (iteration,
                                           value0 = its smallest singular value) */
    SG_FAIL_CHART_SINGULAR = 10,        /* symmetric chart: singular 3k x 3k step matrix
                                           (iteration, k) */
    SG_FAIL_SPARSE_SINGULAR = 11,       /* sparse step: singular LU of H[R, D] (iteration) */
    SG_FAIL_CHART_SPARSE_SINGULAR = 12, /* symmetric chart on the sparse step: singular LU of
                                           H_s[R, D] (iteration) */
    SG_FAIL_NO_MEMORY = 13,             /* out of memory for the buffers of a larger null space
                                           or a new partition (iteration, k) */
    SG_FAIL_NO_STEP = 14,               /* error control: no try from t was accepted down to
                                           value0 = h (value1 = h_min, 0: round-off); k = the
                                           kind of the last Newton failure (0: the error test
                                           rejected every try), iteration its iteration, s_ratio.
                                           A fixed step's sub-steps: t and iteration the step's
                                           own, value2 = where they stopped (sg_stats.substep_*) */
    SG_FAIL_DENSE_ROW = 15,             /* dense output: the t_eval row at t could not be
                                           projected onto the constraints (value0 = 1: the
                                           positions, 2: a singular reduced mass) */
    SG_FAIL_SAMPLE = 16,                /* the sampled controller (sg_set_sampler) stopped the
                                           run at t */
    SG_FAIL_IMPACT_CASCADE = 17,        /* more than SG_IMPACT_MAX_BURST impacts in a row at t
                                           (value0 = the impacts in the burst) */
    SG_FAIL_KINDS = 18                  /* how many kinds there are (sg_failure_message) */
};

/* The bits of sg_step_info.flags and sg_run_chunk's FL (symgen's Result.flags;
 * steppers/control.py Flag). */
enum {
    SG_FLAG_REJECTED_ERROR = 1,         /* a try of this step was rejected by the error test */
    SG_FLAG_REJECTED_NEWTON = 2,        /* a try of this step was rejected: Newton did not
                                           converge */
    SG_FLAG_FLOOR = 4,                  /* accepted at Newton's round-off floor */
    SG_FLAG_STABILITY = 8,              /* h was cut to SG_STABILITY_FRACTION h_max(omega_max) */
    SG_FLAG_SUBSTEPPED = 16,            /* a fixed step covered by sub-steps (sg_run_chunk's FL) */
    SG_FLAG_NO_ESTIMATE = 32            /* no error estimate (the first step) */
};

/* Integer limits. */
enum {
    SG_TIMES_KEPT = 100,                /* times kept of the first events a counter counts
                                           (sg_stats) */
    SG_HIST_DEGREE = 5,                 /* the corrected step's estimate: degree of its
                                           acceleration polynomial */
    SG_HHT_DEGREE = 2,                  /* the index-3 step's: degree of the polynomial through
                                           its true accelerations (at most SG_HIST_DEGREE) */
    SG_CONSISTENT_MAX_ITER = 50,        /* Gauss-Newton iterations of a projection onto q = 0 */
    SG_EVENT_MAX_ITER = 100,            /* an event's Illinois iterations at most */
    SG_IMPACT_MAX_BURST = 20,           /* impacts in a row without a free step before a run ends
                                           (a cascade) */
    SG_SP_SIGMA_STEPS_NEW = 6           /* the sparse step: inverse-iteration steps for sigma_min
                                           after a new partition */
};

/* The numbers both steppers decide with (symgen/runtime_constants.py says what each decides). */
static const double SG_LANDING_RATIO = 0.0001;                  /* a landing: s_min/s_max of H
                                                                   below this ... */
static const double SG_LANDING_DROP = 0.5;                      /* ... and below this times its
                                                                   value at the step's start */
static const double SG_T_SINGULAR = 1e-06;                      /* symmetric chart: T = N_s^T N_H
                                                                   singular below this */
static const double SG_REUSE_RATE = 0.25;                       /* m = 0: the chart system's LU
                                                                   kept while an update is at
                                                                   most this times the one before */
static const double SG_SUBSTEP_RTOL = 1e-06;                    /* a failed fixed step's
                                                                   sub-steps: their rtol, */
static const double SG_SUBSTEP_ATOL = 1e-08;                    /* their atol, */
static const double SG_SUBSTEP_FIRST = 0.25;                    /* the first sub-step (a fraction
                                                                   of h) */
static const double SG_CROSS_FIRST = 0.3;                       /* a crossing's first sub-step (a
                                                                   fraction of h) */
static const double SG_ROW_TOL = 1e-15;                         /* an interpolated row's
                                                                   projection: max|q| <= this
                                                                   max(1, max|x|), */
static const double SG_CONSISTENT_TOL = 1e-13;                  /* else this (the consistent
                                                                   start's) */
static const double SG_ROW_TIME_SLACK = 1e-14;                  /* a step to t + h takes the
                                                                   t_eval rows <= t + h (1 +
                                                                   this) */
static const double SG_CTL_SAFETY = 0.9;                        /* the PI controller: safety
                                                                   factor, */
static const double SG_CTL_GROW_MAX = 5.0;                      /* largest growth, */
static const double SG_CTL_SHRINK_MIN = 0.2;                    /* smallest shrink, */
static const double SG_CTL_NEWTON_SHRINK = 0.25;                /* the shrink after a Newton
                                                                   failure, */
static const double SG_CTL_ORDER = 3.0;                         /* the estimate's order, */
static const double SG_CTL_ERR_FLOOR = 1e-10;                   /* the error norm's floor in its
                                                                   powers */
static const double SG_CTL_ROUNDOFF = 1.4210854715202004e-14;   /* the corrected step's estimate:
                                                                   its round-off (64 eps) */
static const double SG_CTL_H_ROUNDOFF = 1.4210854715202004e-14; /* no try shorter than this
                                                                   max(1, |t|) (64 eps; the
                                                                   sub-steps' too) */
static const double SG_STABILITY_FRACTION = 0.9;                /* a try is cut to this times
                                                                   h_max(omega_max) */
static const double SG_SLIVER = 0.01;                           /* a try leaving less than this
                                                                   times itself takes the whole
                                                                   rest */
static const double SG_EVENT_XTOL = 1e-13;                      /* an event's time to this max(|t
                                                                   + h|, h) */
static const double SG_IMPACT_TIME_TOL = 1e-09;                 /* another impact is simultaneous
                                                                   when its gap is within |g_dot|
                                                                   this max(|tau|, h) */
static const double SG_SP_CONFIRM = 100.0;                      /* the sparse step: a rank within
                                                                   this factor of the threshold
                                                                   is confirmed by the dense QR */
static const double SG_SP_VOLUME_DROP = 0.5;                    /* new independent coordinates
                                                                   below this fraction of the
                                                                   best |det N_I| */
/* SG_CDEF_END */

#endif /* SG_CONSTANTS_H */
