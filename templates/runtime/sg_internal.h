/* sg_internal.h: what the parts of the C runtime (sg_*.c) share and nothing else: the limits,
 * the stepper struct and the forward declarations between parts.  Internal: neither Python nor a
 * user's C includes it (the API is symgen_runtime.h).
 */
#ifndef SG_INTERNAL_H
#define SG_INTERNAL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symgen_runtime.h"
#include "symgen_sparse.h"

/* An update within this factor of the tolerance that no longer shrinks is accepted (round-off). */
#define SG_EPS 2.220446049250313e-16
/* The thresholds the steps share with the Python steppers (SG_T_SINGULAR: chart.py's;
 * SG_LANDING_RATIO, SG_LANDING_DROP: a landing, nullspace.py "Landings"; the error control's
 * SG_CTL_*, the sub-steps' SG_SUBSTEP_*, a crossing's SG_CROSS_FIRST, ...) are in sg_constants.h,
 * generated from symgen/runtime_constants.py. */

/* The operations of one factorization of H behind the linearization (SUNDIALS' SUNLinearSolver
 * is the model): a dense instance (pivoted QR of H^T, sg_lin_dense) and a sparse one (sg_splin of
 * symgen_sparse.c, sg_lin_sparse), chosen once by sg_stepper_new (sg_linearization.c.inc). */
typedef struct sg_lin_ops {
    /* factor H (the kernels' values in s->H): the rank, k = n - rank and N_H (n x k) into s->lin;
     * returns k, or -1 (H not finite), -2 (singular block or degenerate basis), -3 (no memory) */
    int (*factor)(sg_stepper *s);
    /* with the last factorization: out = H^+ v (v: m, out: n); out = H^+T v (v: n, out: m);
     * Out = H^+ W (W: m x k, Out: n x k) and, unless v is NULL, out = H^+ v */
    void (*pinv)(sg_stepper *s, const double *v, double *out);
    void (*pinv_t)(sg_stepper *s, const double *v, double *out);
    void (*pinv_pair)(sg_stepper *s, const double *W, int k, const double *v, double *Out,
                      double *out);
    /* the scale (s_max, s_min) of H's kept singular values at the last factorization (0, 0: rank
     * 0): the landing test's ratio and the round-off floor's condition number */
    void (*s_range)(const sg_stepper *s, double *s_max, double *s_min);
    /* N_s (n x k) of H_s (in s->ch.H_s, the layout of H) for the symmetric chart, k > 0: 0, or -1
     * (a singular block of the sparse step) */
    int (*chart_basis)(sg_stepper *s, int k);
    /* the next factorization as the first of a run (sg_start) */
    void (*restart)(sg_stepper *s);
} sg_lin_ops;

/* The linearization at the iterate (sg_linearization.c.inc; symgen/steppers/linalg.py, sparse.py):
 * one factorization of H, its null space and H^+, the particular solutions, the reduced
 * matrices. */
typedef struct sg_lin {
    const sg_lin_ops *ops;                        /* &sg_lin_dense or &sg_lin_sparse */
    sg_constraints_fn constraints;                /* the kernels writing this layout: dense, */
    sg_dynamics_fn dynamics;                      /* or the sparse step's CSR values */
    size_t H_entries;                             /* entries of H, H_dot, H_ddot: m n, or nnz_H */
    int rank, k;
    int implicit;       /* 1: full row rank, 2: redundant rows (H^+ applied through the reflectors,
                           not formed), 0: H^+ formed in Hp */
    double *A;          /* QR of H^T, column-major n x m (= H row-major) */
    double *tau;        /* [min(n, m)] its reflectors */
    int *piv;           /* [m] its column order */
    double *cn;         /* [2 m] column norms (householder_qr's vn1, vn2) */
    double *Q;          /* n x n */
    double *N;          /* N_H, n x k */
    double *Hp;         /* H^+, n x m */
    double *B, *Z, *Y;  /* m x m: QR of R_1^T (redundant rows), its solve, (R_1^T)^+ */
    double *tauB;       /* [m] reflectors of the QR of R_1^T */
    double *work_n, *work_n2;                     /* n: H^+ applied column by column */
    double *work_m, *work_m2;                     /* m: right-hand sides of H^+ */
    /* particular solutions (Eqs. 33, 39, 46): x_p - x0, xd_p, xdd_p, xd_p - xd0, x_p */
    double *dx_p, *xd_p, *xdd_p, *dxd_p, *x_p;
    double *Xd_p, *Xdd_p1, *X_p2;                 /* n x k (Eqs. 40, 47, 48-49) */
    double *work_mk, *work_mk2;                   /* m x k: H_dot N_H, .. before H^+ */
    double *pair_in, *pair_out;                   /* m x (k + 1), n x (k + 1): hp_apply_pair */
    double *MN, *CN, *KN, *MXd, *CXd, *MXdd;      /* n x k products of Eq. 52 */
    double *M_R, *C_R, *K_R, *work_kk;            /* k x k (Eq. 52) */
    double *omega_work;                           /* 3 k^2 (sg_omega_from) */
    /* the buffers sized by k (k_alloc) hold k <= kcap; the dense factorization has kcap = n,
     * the sparse step's grows with k */
    double *k_blk;
    int kcap;
    /* the sparse step (o.factorization == SG_SPARSE, nullspace): the kernels write the values on
     * the CSR patterns into H, H_dot, H_ddot (nnz_H entries) and M, K, C (nnz_M), and the dense
     * factorization's buffers (A, Q, Hp, B, Z, Y) are not allocated; pH, pM are those patterns
     * (NULL: dense); the factorization is sp's, its N copied into N */
    sg_splin *sp;
    sg_csr cH, cM;
    const sg_csr *pH, *pM;
} sg_lin;

/* The symmetric chart (sg_chart.c.inc; chart.py; allocated for SG_CHART_SYMMETRIC or
 * SG_METRIC_MASS only: the mass metric takes the end chart through the same 3k x 3k system). */
typedef struct sg_chart {
    int system;                                   /* 1: (alpha, ..) from the 3k x 3k system */
    double *blk;
    int *ib;
    double t_n;                                   /* time of x_n (NaN: none kept) */
    double *H_n, *x_n;                            /* H of the accepted state x_n at t_n */
    double *Hd_n, *xd_n, *lam_n;                  /* its H_dot, xd; lambda at the step's start */
    double *g_k;                                  /* max(n, m): work of the corrected step */
    /* the corrected step (SG_CORRECTED_STEP): M_0, a_0 at the step's start (chart_start_dynamics),
     * kept for the start state key (t, x, xd, xdd, lambda); W = (M_0 + M_1)/2, C_e, M_1 - M_0 (M's
     * entries); D, D2 (n); n x k and k x k work */
    int key_ok;
    double key_t, *key, *M0, *a0, *Wm, *Ce, *dM, *D, *D2, *ft1, *Vnk, *Vnk2, *G3;
    double *H_s, *tau_s, *cn_s;                   /* pivoted QR of H_s^T (as lin.A, tau, cn) */
    int *piv_s, *ipiv3;                           /* [m], [3n] */
    double *N_s;                                  /* n x k (the symmetric chart's) */
    double *MNs;                                  /* n x k: M N_s / max|M N_s| (SG_METRIC_MASS) */
    double *T, *NsXd, *NsXdd1, *NsX2, *jacobi_work;   /* k x k: N_s^T N_H, N_s^T Xd_p, .. */
    double *A3, *b3;                              /* the 3k x 3k system (m = 0: its LU, kept) */
    double *A3i;                                  /* m = 0: the system at a later iterate */
    int reuse;                                    /* m = 0: solve with A3's kept LU */
    double *r_R, *work_n;                         /* k: N_H^T rhs of Eq. 52; n */
} sg_chart;

/* The index-3 step (sg_index3.c.inc; index3.py). */
typedef struct sg_i3 {
    int redundant;                                /* rank H < m: least-squares Newton solves */
    double s_max, s_min;                          /* kept |R_ii| of H at the step's predictor */
    double *A, *r, *d;                           /* the bordered matrix (n+m)^2, residual, update */
    double *g_n;                                  /* n: (f + H^T lam)(t) for HHT */
    double *svd_UV, *svd_work;                    /* least squares: 2 (n+m)^2, 4 (n+m) */
    double *A_lu;                                 /* LU copy of A */
} sg_i3;

/* What one null-space step leaves to the next (nullspace.py "Landings", "Crossings"): the start of
 * the current step, the start of the step onto a pending landing (pending = 1), s_min/s_max of H
 * at the last accepted state; after a crossed grid point (ahead = 1) the state one step past it,
 * its residuals and s_min/s_max; the interpolant's (x, xd) at the crossed point (cx, cxd); the
 * grid point a test forces to be crossed (sg_cross_at). */
typedef struct sg_step_over {
    int pending;
    double t, *x, *xd, *xdd, *lam;
    double *start_x, *start_xd, *start_xdd, *start_lam;
    double ratio;
    int ahead;
    double *ax, *axd, *axdd, *alam, ares[3], aratio;
    double *cx, *cxd;
    int forced;                                   /* sg_cross_at (a test's): the fixed step */
    double forced_t;                              /* with t < forced_t <= t + h is crossed */
} sg_step_over;

/* The error control of dt = "auto" (sg_control.c.inc; symgen/steppers/control.py): the run's
 * tolerances and bounds, the controller's memory, the start of the step being tried, counts.
 * on = 0 until sg_control_start; one block `blk` holds the doubles. */
/* control.py corrected_step: the corrected (two-point Hermite, fourth-order) step applies
 * (null-space method, symmetric chart, mass metric, gamma = 1/2; sg_chart.c.inc); its error
 * estimate is the history one (sg_control.c.inc). */
#define SG_CORRECTED_STEP(s) ((s)->o.method == SG_NULLSPACE && (s)->o.chart == SG_CHART_SYMMETRIC \
                              && (s)->o.metric == SG_METRIC_MASS && (s)->o.gamma == 0.5)

/* The beta whose Eq. 11 limit the step has (schemes.py Scheme.a_stable): the corrected step's
 * relations do not depend on beta and are A-stable, as trapezoidal's (beta = 1/4: no limit). */
#define SG_STABILITY_BETA(s) (SG_CORRECTED_STEP(s) ? 0.25 : (s)->o.beta)

/* Whether the step has a stability limit h_max(omega_max) (Eq. 11 finite: not A-stable, beta <
 * gamma/2; schemes.py Scheme.h_max).  omega_max is computed at every accepted state when it is
 * asked for (o.estimate: the rows' diagnostic) or when the error control's bound needs it (a
 * step with a limit under dt = "auto"); else never (the caller's start value serves the first h). */
#define SG_LIMITED(s) (SG_STABILITY_BETA(s) < 0.5 * (s)->o.gamma)
#define SG_OMEGA_EACH_STEP(s) ((s)->o.estimate || ((s)->ctl.on && SG_LIMITED(s)))

/* SG_HIST_DEGREE, SG_HHT_DEGREE (sg_constants.h): the degrees of the corrected step's and the
 * index-3 step's acceleration polynomials (control.py HISTORY_DEGREE, HHT_DEGREE). */

typedef struct sg_ctl {
    int on;
    double rtol, h_init, h_min, h_cap, t_end;
    double *atol;                                 /* n */
    double *d0, h0;                               /* the last accepted step's xdd1 - xdd0 and h */
    int hist_on, n_hist;                          /* 1: the corrected step's estimate (control.py */
    double *hist_tau, *hist_xdd;                  /* history), 2: the index-3 step's (b~ for xdd):
                                                     SG_HIST_DEGREE times, x n xdd */
    int hist_states, n_c;                         /* how many last kept points have their x, xd
                                                     and first their c = xdd - the index-1 xdd */
    double *hist_x, *hist_xd, *hist_c;            /* (a sample's jump: sg_sampler.c.inc) */
    double *b1, *a0, *me, *mr;                    /* index-3 (else empty): n b~1, n the rescaled
                                                     xdd0, n M e, 2 n x n N^T M N, its LU */
    double err_prev;                              /* its error norm (NaN: none yet) */
    int no_grow;                                  /* the step after a rejection may not grow */
    double h;                                     /* the next try's h (the controller's) */
    double omega;                                 /* omega_max of the state the step starts from */
    int stability;                                /* bound every try by 0.9 h_max(omega) */
    double *x0, *xd0, *xdd0, *lam0;               /* that state (tries start from it) */
    double *ex, *ev, *work_k;                     /* n, n, k: the estimate and its projection */
    double *g0;                                   /* n: index-3 HHT's (f + G^T lam) at the start */
    long rejected_error, rejected_newton;
    long euclidean_fallbacks;                     /* estimates projected by N N^T: N^T M N
                                                     singular (ctl_project_m) */
    double h_lo, h_hi, err_max;                   /* accepted steps: range of h, largest norm */
    sg_failure last;                              /* the last Newton failure of the tries */
    double *blk;
} sg_ctl;

/* The dense output (sg_interp.c.inc: t_eval rows from each step's interpolant, projected on the
 * constraints): the caller's rows and a workspace of its own — a dense pivoted QR of H (lin's
 * dense buffers, whatever the step's factorization), the dense kernels' outputs — so that the
 * steps' buffers, and with them the steps, are the same with or without it.  Allocated by the
 * first sg_dense_output or sg_dense_state (blk NULL before). */
typedef struct sg_dout {
    sg_dense *d;                                  /* the rows (NULL: none) */
    sg_lin lin;                                   /* A tau piv cn Q N Hp B Z Y tauB work_* */
    double *q, *H, *qd, *Hd, *qdd, *Hdd;          /* the dense constraint kernel's outputs */
    double *M, *f, *K, *C;                        /* the dense dynamics kernel's */
    double *xi, *xdi, *xddi;                      /* n: the interpolant at the row's time */
    double *zero, *w, *r, *xdd_p, *lam, *E;       /* n, n, n, n, m, 2 */
    double *MN, *S;                               /* n x n: M N_H, N_H^T M N_H */
    int *ipiv;                                    /* [n] */
    double *blk;
    int *ib;
    double seconds;                               /* clock() time the rows took (sg_dense_seconds) */
} sg_dout;

/* A controller sampled and held (sg_set_sampler; sg_sampler.c.inc): the caller's function and
 * buffers, the sample times t0 + k period (fixed steps: every `steps` steps), the run's end under
 * the error control (ctl.t_end is the next stop), the accelerations and multipliers the step
 * from a sample starts from (xdd[n], lam[m]), the inputs before it (u_old[n_inputs]) and two
 * accelerations of the history's conversion (a[2 n]: sample_history); one block `blk`. */
typedef struct sg_sampler {
    sg_sample_fn fn;
    void *ctx;
    double t0, period, t_end;
    long steps, next;
    double *x, *xd, *U;
    const double *u;
    double *xdd, *lam, *u_old, *a, *blk;
} sg_sampler;

/* The model's events (sg_set_events; sg_events.c.inc): the caller's buffers (EI, ET, EX, EXD:
 * cap rows, count held), g at the last accepted state (g0) and at the step's end (g1), scratch
 * (ga, tau: ne; the interpolant xi, xdi, xddi: n) and a located event's projected state (x, xd,
 * xdd: n, lam: m, res); one block blk. */
typedef struct sg_events {
    int on;
    long cap, count;
    int *EI;
    double *ET, *EX, *EXD;
    double *g0, *g1, *ga, *tau, *xi, *xdi, *xddi, *x, *xd, *xdd, *lam, res[3];
    double *blk;
    /* the impacts (sg_set_impacts): the caller's records IR, their count, the impacts in a row
     * (burst); scratch: G, the normal velocities, the KKT system and its SVD, the dense M, H
     * (and the kernels' other outputs), the start of a step's rest (sx .. slam); one block iblk */
    int imp_on, burst;
    long n_imp;
    double *IR, *G, *vn, *Kk, *rhs, *UV, *svw, *Md, *fd, *Kd, *Cd, *qd, *Hd, *sx, *sxd, *sxdd;
    double *slam, *iblk;
    int *act;
} sg_events;

struct sg_stepper {
    const sg_model *mdl;
    sg_options o;
    int n, m;
    /* kernel outputs */
    double *M, *f, *K, *C, *q, *H, *qd, *Hd, *qdd, *Hdd;
    /* the Newton iterate (the accepted new state), the previous iterate, the weights */
    double *x, *xd, *xdd, *lam, *x_old, *xd_old, *xdd_old, *wt;
    double upd_last, upd_prev;
    /* convergence rule 1 (the round-off floor) */
    double upd_abs[3], upd_lvl[3], floor[3];
    double res[3];                                /* |q|, |q_dot|, |q_ddot| at the accepted state */
    double omega;
    double E[2];
    double *u;                                    /* the inputs [n_inputs] (sg_set_inputs) */
    /* the null-space step in alpha (Eq. 52; k buffers, k_alloc) */
    double *rhs;                                  /* n: the right-hand side of Eq. 51 */
    double *work_n, *work_n2;                     /* n */
    double *rhs_R, *work_k;                       /* k: N_H^T rhs, then with the predictors */
    double *alpha_n, *alpha_d_n, *alpha_dd_n;     /* k: the state at t re-projected (Eqs. 56-58) */
    double *alpha, *alpha_d, *alpha_dd;           /* k: at t + h */
    double *S;                                    /* k x k: M_R + gh C_R + bh^2 K_R */
    int *ipiv;                                    /* LU pivots [n + m] */
    sg_lin lin;
    sg_chart ch;
    sg_i3 i3;
    sg_step_over ov;
    sg_stats stats;                               /* the counts the steps keep (sg_stats_get
                                                     fills in the others' from lin, ctl, sp) */
    sg_ctl ctl;                                   /* dt = "auto" (sg_control_start) */
    sg_ctl sub;                                   /* a fixed step's sub-steps (substeps) */
    sg_failure sub_first;                         /* the failure of the step they replaced */
    sg_dout dout;                                 /* t_eval rows (sg_dense_output) */
    sg_sampler smp;                               /* a sampled controller (sg_set_sampler) */
    sg_events ev;                                 /* the model's events (sg_set_events) */
    long row_every;                               /* sg_set_rows: energy on the rows of steps */
    int row_out_kept;                             /* j % row_every == 0 (<= 1: every row); */
};                                                /* 1: the outputs on those rows only */

/* sg_alloc.c.inc: the buffers sized by the null space's dimension (grown by the sparse step). */
static int k_alloc(sg_stepper *s, int kcap);
/* sg_chart.c.inc: N_s of the dense and the sparse linearization (sg_lin_ops.chart_basis). */
static int chart_basis_dense(sg_stepper *s, int k);
static int chart_basis_sparse(sg_stepper *s, int k);
/* sg_control.c.inc: a fixed step Newton could not close, as sub-steps under the error control;
 * span (NULL: the step's own) for a crossing (sg_run.c.inc cross): the end, the largest sub-step,
 * the first as a fraction of h, the time whose sub-step's interpolant is kept. */
typedef struct sg_span {
    double t_end, h_cap, first, cross;
} sg_span;
static int substeps(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
                    const double *xdd, const double *lam, const sg_span *span, int *iterations,
                    sg_failure *fail);

#endif /* SG_INTERNAL_H */
