/* sg_internal.h: what the parts of the C runtime (sg_*.c) share and nothing else: the limits,
 * the stepper struct and the forward declarations between parts.  Internal: neither Python nor a
 * user's C includes it (the API is symgen_runtime.h).
 */
#ifndef SG_INTERNAL_H
#define SG_INTERNAL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "symgen_runtime.h"
#include "symgen_sparse.h"

/* An update within this factor of the tolerance that no longer shrinks is accepted (round-off). */
#define SG_STALL_FACTOR 1e3
#define SG_EPS 2.220446049250313e-16
/* How many times of steps accepted at the round-off floor a stepper keeps (the count is exact). */
#define SG_FLOOR_TIMES_KEPT 100
/* chart.py T_SINGULAR: T = N_s^T N_H with a singular value below this is treated as singular. */
#define SG_T_SINGULAR 1e-6
/* nullspace.py LANDING_RATIO, LANDING_DROP: a landing next to a singular configuration ("Landings"
 * in that module's docstring) has s_min/s_max of H below the first and below the second times its
 * value at the start of the step. */
#define SG_LANDING_RATIO 1e-4
#define SG_LANDING_DROP 0.5

struct sg_stepper {
    const sg_model *mdl;
    sg_options o;
    int n, m;
    /* kernel outputs */
    double *M, *f, *K, *C, *q, *H, *qd, *Hd, *qdd, *Hdd;
    /* the iterate / accepted new state, the previous iterate, weights */
    double *x, *xd, *xdd, *lam, *x_old, *xd_old, *xdd_old, *wt, *wn;
    double upd_last, upd_prev;
    long stalled;
    /* convergence rule 1 (the round-off floor) */
    double upd_abs[3], upd_lvl[3], floor[3];
    long floor_steps, redundant_steps;
    double floor_times[SG_FLOOR_TIMES_KEPT], floor_t_last;
    double i3_smax, i3_smin;
    double res[3];
    double omega;
    /* the linearization (symgen/steppers/linalg.py) */
    int rank, k, min_rank, max_rank;
    int implicit;       /* full row rank: H^+ applied through the reflectors, not formed */
    double *hw, *hw2;   /* n work for the implicit H^+ */
    double *tauB;       /* [m] reflectors of the QR of R_1^T (redundant rows) */
    double *A;          /* QR of H^T, column-major n x m (= H row-major) */
    double *tau;        /* [min(n, m)] */
    int *piv;           /* [m] */
    double *cn;         /* column norms [m] */
    double *Q;          /* n x n */
    double *N;          /* n x k */
    double *Hp;         /* H^+, n x m */
    double *B, *Z, *Y;  /* m x m work (pinv of R1^T for redundant rows) */
    double *dx_p, *xd_p, *xdd_p, *dxd_p, *dxdd_p, *x_p;
    double *Xd_p, *Xdd_p1, *X_p2;                 /* n x k */
    double *Wmk, *Wmk2;                           /* m x k */
    double *Wp, *Tp;                              /* m x (k + 1), n x (k + 1): hp_apply_pair */
    double *MN, *CN, *KN, *MXd, *CXd, *MXdd;      /* n x k */
    double *M_R, *C_R, *K_R, *Wkk, *S;            /* k x k */
    double *wm, *wm2;                             /* m */
    double *rhs, *w, *w2;                         /* n */
    double *a_n, *ad_n, *add_n, *a, *ad, *add, *rk, *rk2;   /* k */
    double *om_work;                              /* 3 k^2 */
    int *ipiv;                                    /* LU pivots [n + m] */
    /* index3 */
    int redundant;
    double *Ab, *bb, *db, *g_n, *Wnn;             /* (n+m)^2, n+m, n+m, n, n x n */
    double *Ls, *Lw, *Wb;                         /* least squares work: 2 (n+m)^2 + 4 (n+m);
                                                     LU copy (n+m)^2 */
    double E[2];
    /* the symmetric chart (chart.py; allocated for SG_CHART_SYMMETRIC only, chart_alloc) */
    double *ch_blk;
    int *ch_ib;
    double t_n;                                   /* time of x_n (NaN: none kept) */
    double *H_n, *x_n;                            /* H of the accepted state x_n at t_n */
    double *Hs, *tau_s, *cn_s;                    /* pivoted QR of H_s^T (as A, tau, cn) */
    int *piv_s, *ipiv3;                           /* [m], [3n] */
    double *Ns;                                   /* N_s, n x k */
    double *Tm, *NsXd, *NsXdd1, *NsX2, *Jw;       /* k x k: T, N_s^T Xd_p, .., Jacobi work */
    double *A3, *b3;                              /* the 3k x 3k system */
    double *r_R, *cw;                             /* k: N_H^T rhs of Eq. 52; n work */
    /* landings (nullspace.py NullspaceStepper.step): the start of the current step, the start of
     * the step onto a pending landing (over = 1), s_min/s_max of H at the last accepted state */
    double *st_x, *st_xd, *st_xdd, *st_lam, *ov_x, *ov_xd, *ov_xdd, *ov_lam;
    double ov_t, ratio;
    int over;
    int init_iters;            /* Gauss-Newton iterations of the last initial-state projection */
    long landing_steps;
    double landing_times[SG_FLOOR_TIMES_KEPT];
    /* the buffers sized by k (k_alloc): for k <= kcap; the dense factorizations have kcap = n,
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
};

/* sg_alloc.c: the buffers sized by the null space's dimension (grown by the sparse step). */
static int k_alloc(sg_stepper *s, int kcap);

#endif /* SG_INTERNAL_H */
