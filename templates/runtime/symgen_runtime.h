/* symgen_runtime.h: the model-independent C runtime of symgen's steppers.
 *
 * One runtime serves every generated model: a model describes itself through one `sg_model`
 * descriptor (sizes, names, parameter defaults and pointers to its four generated kernels, with
 * exactly the signatures the generated `<name>.h` declares); the generated `<name>.c` defines
 * the instance `<name>_model`.
 *
 * Steppers (fixed step h, Newton at every step; see symgen/steppers/ for the readable Python
 * reference they mirror line by line):
 *   SG_NULLSPACE  the null-space (tangent-space) Newmark method of Fernandez de Bustos et al.,
 *                 Meccanica 57 (2022), Sec. 5, Eqs. 32-58, with a pivoted Householder QR of H^T
 *                 or (sg_options.factorization = SG_SPARSE) the sparse step of symgen_sparse.h;
 *                 the Newmark relations on the tangent space at the end of the step (the paper's
 *                 chart, SG_CHART_END) or on the null space of H_s = (H(t) + H(t+h))/2
 *                 (SG_CHART_SYMMETRIC, beyond the paper: symgen/steppers/chart.py), either
 *                 taken Euclidean (the paper's) or M-orthogonally (sg_options.metric =
 *                 SG_METRIC_MASS, beyond the paper: docs/spatial-accuracy.md);
 *   SG_INDEX3     the classical index-3 Newmark / HHT-alpha step with Lagrange multipliers
 *                 (bordered Newton matrix, Eq. 29).
 *
 * Standard C99; the implementation (symgen_runtime.c with symgen_sparse.c) needs only <math.h>,
 * <string.h>, <stdlib.h> (malloc) and <stddef.h> (size_t).
 * Failures are returned as data (`sg_failure`); the runtime never prints.
 *
 * Everything between SG_CDEF_BEGIN and SG_CDEF_END is also read by Python's cffi (keep it free of
 * preprocessor directives).
 */
#ifndef SYMGEN_RUNTIME_H
#define SYMGEN_RUNTIME_H

#include <stddef.h>

#include "sg_constants.h"   /* the enums (methods, charts, metrics, factorizations, statuses,
                               failure kinds, flags): generated from symgen/runtime_constants.py */

#ifdef __cplusplus
extern "C" {
#endif

/* SG_CDEF_BEGIN */
/* The generated kernels (row-major arrays; see the generated <name>.h for the layout). */
typedef void (*sg_dynamics_fn)(double t, const double *x, const double *xd, const double *xdd,
                               const double *lam, const double *p, const double *u,
                               double *M, double *f, double *K, double *C);
typedef void (*sg_constraints_fn)(double t, const double *x, const double *xd, const double *xdd,
                                  const double *p, double *q, double *H, double *q_dot,
                                  double *H_dot, double *q_ddot, double *H_ddot);
typedef void (*sg_energy_fn)(double t, const double *x, const double *xd, const double *p,
                             double *E);
typedef void (*sg_outputs_fn)(double t, const double *x, const double *xd, const double *p,
                              const double *u, double *y);
typedef void (*sg_dynamics_t_fn)(double t, const double *x, const double *xd, const double *lam,
                                 const double *p, const double *u, double *f_t);
typedef void (*sg_impacts_fn)(double t, const double *x, const double *p, double *G);

/* One model: what the runtime needs to know about it. */
typedef struct sg_model {
    const char *name;
    const char *model_hash;
    int n;                             /* coordinates */
    int m;                             /* constraints */
    int n_params;
    int n_out;                         /* named outputs */
    const char *const *coord_names;    /* [n] (NULL when n = 0) */
    const char *const *param_names;    /* [n_params] (NULL when 0) */
    const char *const *output_names;   /* [n_out] (NULL when 0) */
    const double *param_defaults;      /* [n_params] (NULL when 0) */
    int has_potential;                 /* the model defines V */
    int C_is_zero;                     /* C = -df/dxd vanishes identically: the steps skip it */
    sg_dynamics_fn dynamics;
    sg_constraints_fn constraints;
    sg_energy_fn energy;
    sg_outputs_fn outputs;
    /* the sparse layout (symgen_sparse.h; the sparse null-space step): the same kernels writing
     * only the values on H's CSR pattern (H, H_dot, H_ddot) and on M's (M, K, C), the patterns and
     * a fill-reducing column order */
    sg_dynamics_fn dynamics_csr;
    sg_constraints_fn constraints_csr;
    int nnz_H, nnz_M;
    const int *H_indptr, *H_indices;   /* [m + 1], [nnz_H] */
    const int *M_indptr, *M_indices;   /* [n + 1], [nnz_M] */
    const int *col_order;              /* [n] */
    int n_inputs;                      /* inputs u, set at run time (sg_set_inputs) */
    const char *const *input_names;    /* [n_inputs] (NULL when 0) */
    /* f_t = df/dt + (dH/dt)^T lambda at fixed x, xd, lambda, u (the corrected step's jerk) */
    sg_dynamics_t_fn dynamics_t;
    int f_t_is_zero;                   /* f_t vanishes identically: the steps skip it */
    /* the model's events (docs/events.md; sg_set_events): g[n_events] = events(t, x, xd, p, u, g),
     * each one's direction (-1 falling, 0 either, +1 rising) and terminal flag (0, 1) */
    int n_events;
    sg_outputs_fn events;
    const int *event_direction;        /* [n_events] (NULL when 0) */
    const int *event_terminal;         /* [n_events] (NULL when 0) */
    /* the impacts (docs/events.md "Impacts"): G[n_impacts][n] = dg/dx of the events
     * impact_event[k] with the coefficients of restitution impact_restitution[k] */
    int n_impacts;
    sg_impacts_fn impacts;
    const int *impact_event;           /* [n_impacts] (NULL when 0) */
    const double *impact_restitution;  /* [n_impacts] (NULL when 0) */
} sg_model;

typedef struct sg_failure {
    int kind;            /* SG_FAIL_* */
    long step;           /* the step that failed (1-based: the state it would have produced) */
    double t;            /* t + h of that step */
    int iteration;
    int k;               /* size of alpha (SG_FAIL_SINGULAR_REDUCED) */
    int which;           /* SG_FAIL_RUN_BOUND */
    double value0, value1, value2;
    double floor[3];     /* the round-off floor of (x, h xd, h^2 xdd) at the last iterate (rule 1) */
    double upd_abs[3];   /* the last update: max|dx|, h max|dxd|, h^2 max|dxdd| */
    double s_ratio;      /* s_min/s_max of the kept |R_ii| of H (nullspace, rule 1) */
} sg_failure;

/* The options of a run (the same names and meaning as symgen.simulate's). */
typedef struct sg_options {
    int method;                  /* SG_NULLSPACE or SG_INDEX3 */
    double gamma, beta;          /* Newmark */
    double alpha;                /* HHT-alpha (index3 only; 0 for plain Newmark) */
    double h;                    /* step */
    double tol;                  /* relative Newton tolerance on (x, h xd, h^2 xdd) */
    double constraint_tol;       /* absolute tolerance on |q|, h|q_dot|, h^2|q_ddot| */
    int max_iter;
    double rank_tol;             /* relative rank tolerance of H (|R_ii| <= rank_tol |R_00|) */
    int estimate;                /* compute and record omega_max and h_max every step (a
                                    diagnostic: ~15-40 % of a step; dt = "auto" computes it
                                    anyway where it bounds the step) */
    double divergence_bound;     /* |x|, h|xd| or h^2|xdd| beyond it: diverged */
    int chart;                   /* nullspace: SG_CHART_END (the paper's method) or
                                    SG_CHART_SYMMETRIC; index3: SG_CHART_END */
    int factorization;           /* SG_DENSE_QR or SG_SPARSE (nullspace: the sparse step) */
    int metric;                  /* nullspace: SG_METRIC_EUCLIDEAN (the paper's N_s^T R = 0) or
                                    SG_METRIC_MASS (N_s^T M R = 0); index3: SG_METRIC_EUCLIDEAN */
} sg_options;

/* The options symgen.SimulationSettings defaults to, for `method`: the trapezoidal rule, tol 1e-12,
 * constraint_tol 1e-8, max_iter 25, rank_tol 1e-10, divergence_bound 1e8, SG_DENSE_QR, no
 * estimate; h = 0: the step has no default (sg_stepper_new refuses it until it is set).  The
 * chart and metric are the paper's, SG_CHART_END and SG_METRIC_EUCLIDEAN: symgen.simulate's
 * default null-space step is SG_CHART_SYMMETRIC with SG_METRIC_MASS (symgen.settings.chart_metric),
 * which the generated main.c and FMU set themselves. */
sg_options sg_options_default(int method);

/* A one-line description of a failure kind (SG_FAIL_*); "unknown failure kind" for others. */
const char *sg_failure_message(int kind);

typedef struct sg_stepper sg_stepper;

/* Why `options` cannot run `model` (one line), or NULL when they can. */
const char *sg_options_check(const sg_model *model, const sg_options *options);

/* A stepper for `model` (NULL when out of memory or the options are invalid: sg_options_check). */
sg_stepper *sg_stepper_new(const sg_model *model, const sg_options *options);
void sg_stepper_free(sg_stepper *s);

/* The model's inputs u[n_inputs] (copied; NULL sets them to 0), used by every later kernel call
 * of the stepper: they are held over each step until set again (0 when never set).  Settable
 * between steps (sg_step, sg_run_chunk: a chunk holds them over all its steps). */
void sg_set_inputs(sg_stepper *s, const double *u);

/* For tests (the crossing compared between the steppers, tests/test_crossing.py): the fixed
 * null-space step from t0 to T = t0 + h with t0 < t <= T is crossed (nullspace.py _cross, the
 * Python stepper's `cross_at`) without Newton or its sub-steps tried first; once. */
void sg_cross_at(sg_stepper *s, double t);

/* Called once with the consistent initial state before the first step (index3: redundancy of
 * the constraints, HHT's (f + H^T lam)(t0)). */
void sg_start(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
              const double *xdd, const double *lam);

/* The consistent initial state (as symgen.simulate's consistent_state): x, xd projected onto
 * q = 0, q_dot = 0 in place; xdd, lam from the index-1 equations.  Returns 0, 1 (positions cannot
 * be projected onto q = 0) or 2 (singular reduced mass). */
int sg_initial_state(sg_stepper *s, const double *p, double t, double *x, double *xd,
                     double *xdd, double *lam);

/* sg_initial_state with project = 0: x, xd kept as given, only xdd, lam solved for (project = 1
 * is sg_initial_state).  The step's factorization (dense QR or the sparse step's) serves; a
 * sparse run then starts (sg_start) from the partition made here.  The Gauss-Newton iterations
 * of the projection and the rank of H: sg_stats_get (initial_iterations, rank). */
int sg_consistent_state(sg_stepper *s, const double *p, double t, double *x, double *xd,
                        double *xdd, double *lam, int project);

/* The inputs jumped at t (set them first: sg_set_inputs): xdd, lam re-solved from the index-1
 * equations with the new inputs at the state (x, xd), which is kept as given, and what the step
 * carries restarted there (a pending landing step-over dropped; HHT's (f + H^T lam)(t)), so that
 * the step from t starts after the jump, as at a sample of sg_set_sampler.  The rule for every
 * jump of the inputs at a communication point (a "hold" input table, an FMU's input set between
 * steps; docs/inputs.md).  Returns 0, 1 or 2 (sg_consistent_state's codes). */
int sg_restart(sg_stepper *s, const double *p, double t, double *x, double *xd, double *xdd,
               double *lam);

/* omega_max of the reduced system linearized at a state (as the steps record it; NaN when H
 * cannot be factored). */
double sg_omega_at(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
                   const double *xdd, const double *lam);

/* One step from (x, xd, xdd, lam) at t; the new state is left in the stepper (sg_state).  A
 * null-space step Newton cannot close is taken as sub-steps under the error control
 * (sg_stats.substepped_steps).  Returns SG_OK, SG_FAILED or SG_DIVERGED (then *fail says why), and the
 * Newton iterations in *iterations. */
int sg_step(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
            const double *xdd, const double *lam, int *iterations, sg_failure *fail);

/* Pointers to the stepper's accepted state and its diagnostics after sg_step. */
void sg_state(const sg_stepper *s, const double **x, const double **xd, const double **xdd,
              const double **lam, const double **residuals, double *omega_max);

/* The stepper's whole state between steps, as one byte image of sg_state_size(s) bytes (the same
 * for the stepper's life): the accepted state (sg_state), the inputs, the step-over pending after
 * a landing, the symmetric chart's H of the last state, HHT's force term, the statistics, the
 * error control's memory and the sparse step's partition and pivot orders.  Setting an image
 * that sg_state_get wrote (from this stepper or another of the same model and options; h is the
 * image's) makes the steps that follow give the numbers that followed the get, bit for bit.  The
 * image holds raw doubles: for this build, not an exchange format.  An image is not trusted:
 * sg_state_check says what is wrong with one (NULL: nothing), its size and head (model, sizes,
 * options) and every flag, index, count and size in it checked against this stepper (n, m, the
 * sparse step's rows and coordinates, ranks), and h (finite, > 0); the other doubles are taken as
 * they are (a step from values no run holds fails or diverges).  sg_state_set checks the image
 * first and returns 0; 1 when sg_state_check refuses it (nothing is changed); 2 out of memory
 * (the stepper must then be set again or freed). */
size_t sg_state_size(const sg_stepper *s);
void sg_state_get(const sg_stepper *s, void *image);
const char *sg_state_check(const sg_stepper *s, const void *image, size_t size);
int sg_state_set(sg_stepper *s, const void *image, size_t size);

/* Steps i = i_start .. i_stop - 1 of a run with times t_i = t0 + i h, reading row i - row0 and
 * writing row i + 1 - row0 of the caller's arrays (row-major, one row per step; row0 = i_start
 * lets a buffer of i_stop - i_start + 1 rows take one chunk):
 *   T[N], X/XD/XDD[N][n], LAM[N][m], PE/VE/AE[N] (|q|, |q_dot|, |q_ddot|), OM/HM[N] (omega_max,
 *   h_max; written only when estimating), IT[N] (Newton iterations), EK/EP[N] (energy),
 *   OUT[N][n_out] (outputs; may be NULL when n_out = 0), FL[N] (the step's SG_FLAG_* bits:
 *   SG_FLAG_FLOOR accepted at Newton's round-off floor, SG_FLAG_SUBSTEPPED covered by sub-steps;
 *   may be NULL).
 * Returns SG_OK with *last = i_stop when every step succeeded; otherwise the status, *last = the
 * step of the last row written and *fail describing the failed step (nothing of it is recorded). */
int sg_run_chunk(sg_stepper *s, const double *p, double t0, long i_start, long i_stop,
                 long row0, double *T, double *X, double *XD, double *XDD, double *LAM,
                 double *PE, double *VE, double *AE, double *OM, double *HM, long long *IT,
                 double *EK, double *EP, double *OUT, long long *FL, long *last,
                 sg_failure *fail);

/* Which rows sg_run_chunk evaluates in full (a caller that keeps every K-th step): the energy
 * only on the row of step j with j % every == 0 (every <= 1: every row, the default), the
 * outputs too when outputs_kept_only (else on every row: a work integral needs the power
 * outputs at every step).  The other entries of every row are written as before; the values of
 * the rows evaluated do not change. */
void sg_set_rows(sg_stepper *s, long every, int outputs_kept_only);

/* Error-controlled variable steps (dt = "auto"; symgen/steppers/control.py, whose estimate,
 * norm and controller these transcribe; docs/variable-step.md).  The null-space method, and the
 * index-3 method with a damped scheme (gamma > 1/2; its estimate on x alone).  Every
 * try is one Newton step (no landing step-over); a try whose Newton iteration fails or whose
 * local error estimate (Newmark's, projected on the tangent space; WRMS norm) is above 1 is
 * retried from the same state with a smaller h. */
typedef struct sg_control {
    double rtol;                 /* relative tolerance (weights atol_i + rtol max(|y0_i|, |y1_i|)) */
    double atol;                 /* absolute tolerance of every coordinate (atol_vec NULL) */
    const double *atol_vec;      /* [n]: one per coordinate (copied), or NULL */
    double h_init;               /* the first try; 0: sg_initial_step's */
    double h_min;                /* a try below it fails the run (SG_FAIL_NO_STEP); 0: none */
    double h_max;                /* the largest step; 0: a tenth of the span */
} sg_control;

/* What an accepted step was (sg_step_auto) and the bits of flags (symgen's Result.flags). */
typedef struct sg_step_info {
    double h;                    /* the step taken */
    double err;                  /* its error norm (NaN: no estimate, the first step) */
    int flags;                   /* SG_FLAG_* */
    int iterations;              /* Newton iterations of the accepted try */
} sg_step_info;

/* rtol 1e-6, atol 1e-8, no atol_vec, h_init, h_min, h_max 0 (their defaults). */
sg_control sg_control_default(void);

/* The first step of the error control: 1 % of the period 2 pi/omega_max scaled by
 * (rtol/1e-6)^(1/3), at most 0.9 h_max(omega_max) and h_cap; without a frequency (omega_max NaN
 * or 0) 1e-3 of the span scaled the same way. */
double sg_initial_step(double gamma, double beta, double omega_max, double span, double rtol,
                       double h_cap);

/* Starts the error control of a run over [t0, t_end] (after sg_start); omega0 = omega_max of the
 * start (sg_omega_at; NaN: none), which sets the first h.  A conditionally stable scheme then
 * computes omega_max at every accepted state (it bounds every step) whatever the options'
 * estimate; an A-stable step (the corrected step, beta >= gamma/2) has no bound and computes it
 * only with estimate on.  Returns 0; 1 for invalid tolerances or bounds, the index-3
 * method or t_end <= t0; 2 out of memory. */
int sg_control_start(sg_stepper *s, const sg_control *c, double t0, double t_end, double omega0);

/* The running error control goes on past its end: to t_end (> t, the time it reached), its
 * history, last error and bounds kept, its next try h_next when > 0 (else its own).  For a caller
 * that stops at points of its own while nothing jumps there (an FMU's communication points).
 * Returns 0; 1 when no control runs or t_end is not after t. */
int sg_control_extend(sg_stepper *s, double t, double t_end, double h_next);

/* One accepted step from (x, xd, xdd, lam) at *t (to *t + info->h, within t_end; *t advanced,
 * the new state in sg_state).  Returns SG_OK, or SG_FAILED with fail->kind SG_FAIL_NO_STEP (or
 * SG_FAIL_NO_MEMORY). */
int sg_step_auto(sg_stepper *s, const double *p, double *t, const double *x, const double *xd,
                 const double *xdd, const double *lam, sg_step_info *info, sg_failure *fail);

/* sg_run_chunk under the error control: from row 0 (the state at *t) accepted steps into rows
 * 1, 2, ... until t_end or max_rows - 1 rows, with HS[N] (h), ERR[N] (error norm) and FL[N]
 * (flags) besides sg_run_chunk's arrays; *rows = the rows written, *t the time of the last.
 * The divergence checks are sg_run_chunk's (with the step's h). */
int sg_run_auto(sg_stepper *s, const double *p, double *t, long max_rows, double *T, double *X,
                double *XD, double *XDD, double *LAM, double *PE, double *VE, double *AE,
                double *OM, double *HM, long long *IT, double *EK, double *EP, double *OUT,
                double *HS, double *ERR, long long *FL, long *rows, sg_failure *fail);

/* A controller sampled and held (symgen.simulate(controller=, period=); docs/inputs.md).  In the
 * sg_run_chunk and sg_run_auto calls that follow, at each sample time t_k = t0 + k period
 * (k = 1, 2, ...; the caller sets the inputs of [t0, t0 + period)) the state there is copied
 * into x[n], xd[n] and fn(ctx, t_k) is called: it writes the model's inputs into u[n_inputs]
 * (nonzero: the run stops before the step from t_k, SG_FAILED with fail->kind SG_FAIL_SAMPLE,
 * fail->t = t_k); they are set (sg_set_inputs) and held until the next sample.  The jump of the
 * inputs at t_k is a discontinuity: the step from t_k starts from the accelerations and
 * multipliers the index-1 equations give with the new inputs at the state of t_k (the row at
 * t_k keeps those its step ended with), a pending landing step-over is dropped, and under the
 * error control t_k is a stop time (no step crosses it; after the step cut to reach it the
 * controller's next step and memory are those from before the cut) where the estimate's
 * acceleration history is moved by the jump's effect at each kept point (the corrected step's:
 * the index-1 accelerations with the new inputs at the state the new piece had there less those
 * with the old; else by xdd+ - xdd-; so the jump is not read as error and
 * the estimate keeps its order).  Fixed steps: period = steps h (steps >= 1: a sample every
 * `steps` steps of the run from t0; the period is then not read).  Under the error control
 * (steps = 0) call it after sg_control_start (the run's end is the control's).  U (may be NULL): row w of the
 * run's arrays of sg_run_chunk and sg_run_auto gets the inputs its step used (n_inputs a row).
 * fn NULL removes the sampler.  Not part of sg_state_get's image.  Returns 0; 1 for invalid
 * arguments; 2 out of memory. */
typedef int (*sg_sample_fn)(void *ctx, double t);
int sg_set_sampler(sg_stepper *s, sg_sample_fn fn, void *ctx, double t0, double period,
                   long steps, double *x, double *xd, const double *u, double *U);

/* Dense output (t_eval; symgen/eval_rows.py dense_state): rows at given times, each from the step
 * across it, a step from t to t + h taking the times t_eval[next] <= t + h (1 + 1e-14): the
 * quintic Hermite interpolant through (x, xd, xdd) at both ends of the step (sg_dense_interpolant)
 * at tau = min(t_eval[i], t + h), projected onto q = 0 (Gauss-Newton with minimum-norm
 * corrections until max|q| <= 1e-15 max(1, max|x|), else 1e-13, at most 50 iterations) and
 * q_dot = 0, with xdd and lam from the equations of motion there (xdd from M xdd = f without
 * constraints).  On buffers of its own (a dense pivoted QR of H, the dense kernels): the steps
 * are the same with or without it.  Row i (its arrays are indexed as t_eval) holds t_eval[i],
 * the projected state, |q|, |q_dot|, |q_ddot|, the energy at t_eval[i], the outputs at tau and
 * STEP[i]: the row of the run's arrays (sg_run_chunk's, sg_run_auto's) that holds its step. */
typedef struct sg_dense {
    const double *t_eval;        /* [count], increasing (the caller's; kept while set) */
    long count;
    long next;                   /* the next row to write (the caller sets it; the runs advance
                                    it) */
    long ld_out;                 /* the length of a row of OUT (>= n_out) */
    double t_end;                /* the run's end (dt = "auto": its t_end; fixed steps:
                                    t0 + n_steps h): the step that ends there takes every time
                                    left, whatever the rounding of its t + h */
    double *T, *X, *XD, *XDD, *LAM, *PE, *VE, *AE, *EK, *EP, *OUT;   /* [count] rows (OUT may
                                    be NULL when n_out = 0, LAM when m = 0) */
    long long *STEP;             /* [count] */
} sg_dense;

/* The dense output of the sg_run_chunk and sg_run_auto calls that follow (d NULL: none): each
 * writes the rows its steps pass, after the step's own row; a row that cannot be projected stops
 * the run (SG_FAILED, fail->kind SG_FAIL_DENSE_ROW, fail->t its time; the step is kept).  d is the
 * caller's.  Returns 0; 1 when d's sizes or arrays are invalid (nothing set); 2 out of memory. */
int sg_dense_output(sg_stepper *s, sg_dense *d);

/* The processor time (C's clock(), in seconds) the rows of the dense output took since the last
 * sg_dense_output that set rows: what a run's stepping rate leaves out. */
double sg_dense_seconds(const sg_stepper *s);

/* The quintic Hermite interpolant at tau of a step from t to t + h through (x0, xd0, xdd0) and
 * (x1, xd1, xdd1), and its first and second derivatives (n each; symgen's
 * steppers.control.dense_output, operation for operation). */
void sg_dense_interpolant(int n, double tau, double t, double h, const double *x0,
                          const double *xd0, const double *xdd0, const double *x1,
                          const double *xd1, const double *xdd1, double *x, double *xd,
                          double *xdd);

/* One row of the dense output (sg_dense): the interpolant at tau of the step from (x0, xd0, xdd0)
 * at t to (x1, xd1, xdd1) at t + h, projected: x, xd, xdd, lam and res = |q|, |q_dot|, |q_ddot|.
 * Returns 0, 1 (the positions cannot be projected), 2 (singular reduced mass), 3 out of memory. */
int sg_dense_state(sg_stepper *s, const double *p, double tau, double t, double h,
                   const double *x0, const double *xd0, const double *xdd0, const double *x1,
                   const double *xd1, const double *xdd1, double *x, double *xd, double *xdd,
                   double *lam, double *res);

/* The model's events (docs/events.md; symgen/events.py, transcribed): with on = 1, after every
 * accepted step of sg_run_chunk and sg_run_auto, g at the step's end against g at its start (the
 * first: g at (t0, x0, xd0), the run's start, where a zero is no event); a crossing in the event's
 * direction (g0 < 0 <= g1 rising, g0 > 0 >= g1 falling) located by the Illinois method on g along
 * the step's interpolant (sg_dense_interpolant) to SG_EVENT_XTOL max(|t + h|, h), the state there
 * projected (sg_dense_state).  Each event located is appended to the caller's EI (its index), ET
 * (its time), EX, EXD ([cap][n]: x, xd there); a run stops before a step whose events might not
 * fit (SG_OK, its *last or *rows the steps taken) until sg_events_take empties them.  The events
 * of one step are taken in time order up to the first terminal one, which cuts the step: its row
 * holds the event's state at the event's time (no t_eval row after it), the run returns SG_EVENT
 * (sg_run_auto: *t the event's time).  A state that cannot be projected fails the run
 * (SG_FAIL_DENSE_ROW at the event's time).  on = 0: no events.  Returns 0; 1 invalid arguments
 * (cap < n_events, a model without events); 2 out of memory. */
int sg_set_events(sg_stepper *s, const double *p, int on, double t0, const double *x0,
                  const double *xd0, long cap, int *EI, double *ET, double *EX, double *EXD);
/* The number of events appended to the buffers since the last call, which empties them. */
long sg_events_take(sg_stepper *s);

/* The impacts (docs/events.md "Impacts"; symgen/impacts.py, transcribed), after sg_set_events:
 * an impact located in a step of sg_run_chunk or sg_run_auto cuts it there and changes the
 * velocity by Newton's restitution law (the active rows: the located one and the others
 * approaching with their gap closed to |g_dot| SG_IMPACT_TIME_TOL max(|tau|, h); one KKT solve
 * with M, H and their gradients G, least squares with singular values <= rank_tol s_max as zero),
 * xdd and lam solved there and the stepper restarted (sg_restart).  sg_run_chunk takes the rest
 * of the fixed step from the impact; sg_run_auto returns SG_IMPACT, its last row the state after
 * the impact at its time.  More than SG_IMPACT_MAX_BURST impacts in a row without a step free of
 * them: SG_FAILED, SG_FAIL_IMPACT_CASCADE.  Each impact with active rows appends a record to IR
 * ([cap][3 + 4 n_impacts], cap sg_set_events'): t, the kinetic energy lost, the count a, then
 * blocks of n_impacts: the active rows (impact indices), their impulses, normal velocities before
 * and after.  IR NULL: impacts off (plain events).  Returns 0; 1 invalid (events not set, a model
 * without impacts, cap < (SG_IMPACT_MAX_BURST + 2) n_events: the events of a fixed step cut by a
 * cascade must fit); 2 out of memory. */
int sg_set_impacts(sg_stepper *s, double *IR);
/* The number of impact records appended since the last call, which empties them. */
long sg_impacts_take(sg_stepper *s);

/* Run statistics (sg_stats_get): what a stepper has counted since sg_stepper_new (the error
 * control's since sg_control_start).  Times are kept of the first SG_TIMES_KEPT events a counter
 * counts (min(count, SG_TIMES_KEPT) entries are valid). */
typedef struct sg_stats {
    long steps;                  /* steps accepted by sg_step and sg_step_auto (a step-over after
                                    a landing or a fixed step's sub-steps count as the one step) */
    long newton_iterations;      /* their Newton iterations (sg_step's *iterations, sg_step_info's;
                                    the rejected tries' of dt = "auto" not counted) */
    long floor_steps;            /* Newton steps accepted at the round-off floor (rule 1) ... */
    double floor_times[SG_TIMES_KEPT];  /* ... their times (t + h) */
    double floor_t_last;         /* ... the time of the last (NaN: none) */
    long landing_steps;          /* nullspace: steps that landed next to a singular configuration
                                    and were stepped over (the next steps of h/2, h, h/2 from the
                                    start of the step onto the landing) ... */
    double landing_times[SG_TIMES_KEPT];     /* ... the landings' times */
    long substepped_steps;       /* nullspace: fixed steps Newton could not close, taken as
                                    sub-steps under the error control (rtol 1e-6, atol 1e-8; not
                                    for a step past h_max(omega_max) of the last accepted state)
                                    ... */
    double substepped_times[SG_TIMES_KEPT];  /* ... their ends */
    long crossed_steps;          /* nullspace: grid points no step could end on (Newton and the
                                    sub-steps failed there: a singular configuration to
                                    round-off), crossed by sub-steps to one step past them and
                                    recorded from the interpolant of the sub-step across them,
                                    projected on the constraints ... */
    double crossed_times[SG_TIMES_KEPT];     /* ... their times */
    sg_failure substep_first;    /* after a fixed step failed with SG_FAIL_NO_STEP: the failure
                                    of the step's own Newton iteration ... */
    sg_failure substep_last;     /* ... and the last Newton failure of its sub-steps' tries
                                    (kind 0: the error test rejected them) */
    long redundant_steps;        /* index3: steps with a rank-deficient H at the predictor */
    int rank;                    /* the rank of H at the last factorization */
    int min_rank, max_rank;      /* the smallest and largest rank of H the steps factored */
    int initial_iterations;      /* Gauss-Newton iterations of the last sg_consistent_state */
    long rejected_error;         /* dt = "auto": tries rejected by the error test, */
    long rejected_newton;        /* by Newton */
    long euclidean_fallbacks;    /* dt = "auto", index3: error estimates projected by N N^T, as
                                    N^T M N was singular (control.py ErrorEstimate._project) */
    double h_smallest, h_largest;   /* dt = "auto": the range of accepted h (inf, 0: none yet) */
    double err_max;              /* dt = "auto": the largest error norm of an accepted step */
    double h_next;               /* dt = "auto": the controller's next try */
    long sparse_partitions;      /* the sparse step: partitions of H made, */
    long sparse_column_changes;  /* changes of the independent coordinates, */
    long sparse_rank_confirmations;   /* rank decisions confirmed by the QR of H */
} sg_stats;

/* Copies the stepper's statistics into *stats. */
void sg_stats_get(const sg_stepper *s, sg_stats *stats);

/* The sparse step's partition of H: rows[m] and indep[n] receive the rows R and independent
 * coordinates I in use (either may be NULL); returns their number r (-1 before the first
 * factorization or without the sparse step) and *k. */
int sg_sparse_partition(const sg_stepper *s, int *rows, int *indep, int *k);

/* Eq. 11: the largest stable step for omega_max (inf when unconditionally stable or
 * omega_max = 0, NaN when omega_max is NaN). */
double sg_h_max(double gamma, double beta, double omega_max);

/* omega_max = sqrt of the largest modulus of the eigenvalues of (K_R, M_R), k x k row-major
 * (0 for k = 0, NaN for non-finite input, inf for a singular M_R).  Needs 3 k^2 doubles of work. */
double sg_omega_from(int k, const double *M_R, const double *K_R, double *work);
/* SG_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* SYMGEN_RUNTIME_H */
