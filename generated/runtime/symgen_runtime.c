/* symgen_runtime.c: the model-independent steppers (see symgen_runtime.h), one translation unit.
 *
 * A line-by-line transcription of the Python reference steppers:
 *   symgen/steppers/base.py       predictor, convergence weights and test (sg_converged)
 *   symgen/steppers/linalg.py     factorization="qr": pivoted QR of H^T, N_H, H^+, particular
 *                                 solutions (Eqs. 33-48), reduced matrices (Eq. 52), omega_max
 *   symgen/steppers/sparse.py     factorization="sparse": sg_splin (symgen_sparse.c) and the
 *                                 kernels' CSR values (kmv, kmm) in the same step
 *   symgen/steppers/nullspace.py  the paper's Newton step (Eqs. 32-58), the step-over after a
 *                                 landing, a failed step as sub-steps
 *   symgen/steppers/chart.py      the symmetric chart: N_s from a pivoted QR of H_s^T (the
 *                                 sparse step: sg_splin_chart_basis) and the 3k x 3k solve for
 *                                 (alpha, alpha_dot, alpha_ddot)
 *   symgen/steppers/index3.py     classical index-3 Newmark / HHT-alpha (Eq. 29)
 *   symgen/steppers/control.py    dt = "auto": the error estimate, its norm, the controller;
 *                                 the dense output's interpolant (dense_output)
 *   symgen/fixed_step.py          the fixed-step loop (run_fixed), the divergence checks
 *   symgen/steploop.py            (stop_reason) and the step's row (eval_rows.py StepRows: the
 *                                 Recorder in Python keeps every K-th row and the maxima)
 * Dense linear algebra written out (no BLAS/LAPACK): row-major matrices like numpy's.
 * Standard C99; only <math.h>, <string.h> and <stdlib.h>.
 *
 * A unity build: this file includes the runtime's parts, each owning one thing, so that the build
 * line stays `cc ... symgen_runtime.c symgen_sparse.c` and the parts share static functions
 * without exporting any symbol but the API's:
 *   sg_dense.c.inc          dense linear algebra (products, LU, Jacobi SVD, least squares, pivoted QR)
 *   sg_linearization.c.inc  factor H (dense QR or the sparse step), H^+, N_H, particular solutions,
 *                       reduced matrices, omega_max
 *   sg_convergence.c.inc    predictor, update norm, convergence rule, round-off floor, failure records
 *   sg_chart.c.inc          the symmetric chart
 *   sg_nullspace.c.inc      the null-space Newton step
 *   sg_index3.c.inc         the index-3 / HHT Newton step
 *   sg_start.c.inc          the consistent initial state, sg_start, sg_omega_at
 *   sg_interp.c.inc         the dense output: t_eval rows from each step's interpolant, projected
 *   sg_run.c.inc            sg_step (a failed step as sub-steps), sg_run_chunk
 *   sg_control.c.inc        error-controlled variable steps (dt = "auto"): sg_step_auto, sg_run_auto
 *   sg_state.c.inc          the run's statistics (sg_stats_get), the sparse step's partition
 *   sg_alloc.c.inc          sg_stepper_new / sg_stepper_free
 *   sg_internal.h       the stepper struct and the limits the parts share
 */
#include "sg_internal.h"

#include "sg_dense.c.inc"
#include "sg_linearization.c.inc"
#include "sg_convergence.c.inc"
#include "sg_chart.c.inc"
#include "sg_nullspace.c.inc"
#include "sg_index3.c.inc"
#include "sg_start.c.inc"
#include "sg_interp.c.inc"
#include "sg_events.c.inc"
#include "sg_sampler.c.inc"
#include "sg_run.c.inc"
#include "sg_control.c.inc"
#include "sg_state.c.inc"
#include "sg_alloc.c.inc"

/* ---------------------------------------------------------------------------------------------
 * the public API's defaults and names
 * ------------------------------------------------------------------------------------------- */
sg_options sg_options_default(int method)
{
    sg_options o;
    memset(&o, 0, sizeof o);
    o.method = method;
    o.gamma = 0.5;                   /* "trapezoidal" */
    o.beta = 0.25;
    o.alpha = 0.0;
    o.h = 0.0;                       /* no default: the caller sets the step */
    o.tol = 1e-12;                   /* settings.NEWTON_TOL_FIXED: a fixed step's */
    o.constraint_tol = 1e-8;
    o.max_iter = 25;
    o.rank_tol = 1e-10;
    o.estimate = 0;
    o.divergence_bound = 1e8;
    o.chart = SG_CHART_END;
    o.factorization = SG_DENSE_QR;
    o.metric = SG_METRIC_EUCLIDEAN;
    return o;
}

static const char *const sg_failure_messages[] = {
    /* SG_FAIL_NONE */                  "no failure",
    /* SG_FAIL_NONFINITE_ITERATE */     "non-finite Newton iterate",
    /* SG_FAIL_NOT_CONVERGED */         "Newton did not converge within max_iter iterations",
    /* SG_FAIL_FACTOR_NONFINITE */      "H has non-finite entries",
    /* SG_FAIL_SINGULAR_REDUCED */      "singular reduced matrix M_R + gh C_R + bh^2 K_R",
    /* SG_FAIL_NONFINITE_UPDATE */      "non-finite Newton update",
    /* SG_FAIL_I3_NONFINITE */          "index3: non-finite state or constraint residual",
    /* SG_FAIL_RUN_NONFINITE */         "the accepted state or its residuals are not finite",
    /* SG_FAIL_RUN_BOUND */             "the state exceeds the divergence bound",
    /* SG_FAIL_CHART_T_SINGULAR */      "symmetric chart: T = N_s^T N_H is singular",
    /* SG_FAIL_CHART_SINGULAR */        "symmetric chart: singular 3k x 3k step matrix",
    /* SG_FAIL_SPARSE_SINGULAR */       "sparse step: singular block H[R, D]",
    /* SG_FAIL_CHART_SPARSE_SINGULAR */ "symmetric chart on the sparse step: singular block "
                                        "H_s[R, D]",
    /* SG_FAIL_NO_MEMORY */             "out of memory for a larger null space or partition",
    /* SG_FAIL_NO_STEP */               "no step met the error tolerance (or converged) down to "
                                        "h_min or round-off",
    /* SG_FAIL_DENSE_ROW */             "dense output: a t_eval row could not be projected onto "
                                        "the constraints",
    /* SG_FAIL_SAMPLE */                "the sampled controller stopped the run",
    /* SG_FAIL_IMPACT_CASCADE */        "an impact cascade (persistent contact is not there yet)"
};
/* one message per kind (a compile error otherwise) */
typedef char sg_failure_messages_complete[
    sizeof sg_failure_messages / sizeof sg_failure_messages[0] == SG_FAIL_KINDS ? 1 : -1];

const char *sg_failure_message(int kind)
{
    if (kind < 0 || kind >= SG_FAIL_KINDS) return "unknown failure kind";
    return sg_failure_messages[kind];
}
