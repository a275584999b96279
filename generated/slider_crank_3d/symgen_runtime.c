/* symgen_runtime.c: the model-independent steppers (see symgen_runtime.h).
 *
 * A line-by-line transcription of the Python reference steppers:
 *   symgen/steppers/base.py       predictor, convergence weights and test (sg_converged)
 *   symgen/steppers/linalg.py     factorization="qr": pivoted QR of H^T, N_H, H^+, particular
 *                                 solutions (Eqs. 33-48), reduced matrices (Eq. 52), omega_max
 *   symgen/steppers/sparse.py     factorization="sparse": sg_splin (symgen_sparse.c) and the
 *                                 kernels' CSR values (kmv, kmm) in the same step
 *   symgen/steppers/nullspace.py  the paper's Newton step (Eqs. 32-58); its retries of a failed
 *                                 step stay in Python (steppers/compiled.py)
 *   symgen/steppers/chart.py      the symmetric chart: N_s from a pivoted QR of H_s^T (the
 *                                 sparse step: sg_splin_chart_basis) and the 3k x 3k solve for
 *                                 (alpha, alpha_dot, alpha_ddot)
 *   symgen/steppers/index3.py     classical index-3 Newmark / HHT-alpha (Eq. 29)
 *   symgen/run.py (_run)          the divergence checks and the step's row (the Recorder
 *                                 in Python keeps every K-th row and the maxima)
 * Dense linear algebra written out (no BLAS/LAPACK): row-major matrices like numpy's.
 * Standard C99; only <math.h>, <string.h> and <stdlib.h>.
 */
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

/* ---------------------------------------------------------------------------------------------
 * small helpers (numpy semantics where the Python code relies on them)
 * ------------------------------------------------------------------------------------------- */
static int sg_isfinite(double v) { return v - v == 0.0; }

/* Python's max(a, b, c): the first argument unless a later one compares greater. */
static double py_max3(double a, double b, double c)
{
    double r = a;
    if (b > r) r = b;
    if (c > r) r = c;
    return r;
}

/* base.py norm2: one dot product, rescaled only if the squares overflow. */
static double norm2(const double *v, int len)
{
    double s = 0.0, a = 0.0, u;
    int i;
    for (i = 0; i < len; ++i) s += v[i] * v[i];
    if (s < HUGE_VAL) return sqrt(s);
    for (i = 0; i < len; ++i) {
        u = fabs(v[i]);
        if (u != u) return u;
        if (u > a) a = u;
    }
    if (!sg_isfinite(a)) return a;
    s = 0.0;
    for (i = 0; i < len; ++i) s += (v[i] / a) * (v[i] / a);
    return a * sqrt(s);
}

/* y = A x, A rows x cols */
static void mv(const double *A, const double *x, double *y, int rows, int cols)
{
    int i, j;
    for (i = 0; i + 1 < rows; i += 2) {
        /* two rows at a time: two independent sums, each in the order of one (y is not x) */
        double s = 0.0, u = 0.0;
        const double *ai = A + (size_t)i * cols, *bi = ai + cols;
        for (j = 0; j < cols; ++j) {
            s += ai[j] * x[j];
            u += bi[j] * x[j];
        }
        y[i] = s;
        y[i + 1] = u;
    }
    for (; i < rows; ++i) {
        double s = 0.0;
        const double *ai = A + (size_t)i * cols;
        for (j = 0; j < cols; ++j) s += ai[j] * x[j];
        y[i] = s;
    }
}

/* y = A^T x, A rows x cols */
static void mtv(const double *A, const double *x, double *y, int rows, int cols)
{
    int i, j;
    if (cols == 1) {                      /* one column: the same sum, in a register */
        double s = 0.0;
        for (i = 0; i < rows; ++i) s += A[i] * x[i];
        y[0] = s;
        return;
    }
    for (j = 0; j < cols; ++j) y[j] = 0.0;
    for (i = 0; i < rows; ++i) {
        const double *ai = A + (size_t)i * cols;
        double xi = x[i];
        for (j = 0; j < cols; ++j) y[j] += ai[j] * xi;
    }
}

/* Out = A B, A r x c, B c x k */
static void mm(const double *A, const double *B, double *Out, int r, int c, int k)
{
    int i, j, l;
    if (k == 1) {
        /* one column (a one-dof null space): the same sums in the same order, in registers,
         * two rows at a time (Out is neither A nor B) */
        for (i = 0; i < r; i += 2) {
            const double *ai = A + (size_t)i * c, *bi = ai + c;
            double s = 0.0, u = 0.0;
            if (i + 1 < r) {
                for (l = 0; l < c; ++l) {
                    if (ai[l] != 0.0) s += ai[l] * B[l];
                    if (bi[l] != 0.0) u += bi[l] * B[l];
                }
                Out[i + 1] = u;
            } else {
                for (l = 0; l < c; ++l)
                    if (ai[l] != 0.0) s += ai[l] * B[l];
            }
            Out[i] = s;
        }
        return;
    }
    for (i = 0; i < r; ++i) {
        double *oi = Out + (size_t)i * k;
        for (j = 0; j < k; ++j) oi[j] = 0.0;
        for (l = 0; l < c; ++l) {
            double ail = A[(size_t)i * c + l];
            const double *bl = B + (size_t)l * k;
            if (ail == 0.0) continue;
            for (j = 0; j < k; ++j) oi[j] += ail * bl[j];
        }
    }
}

/* Out = A^T B, A r x c, B r x k (Out c x k) */
static void mtm(const double *A, const double *B, double *Out, int r, int c, int k)
{
    int i, j, l;
    if (c == 1 && k == 1) {               /* one by one: the same sum, in a register */
        double s = 0.0;
        for (l = 0; l < r; ++l)
            if (A[l] != 0.0) s += A[l] * B[l];
        Out[0] = s;
        return;
    }
    for (i = 0; i < c * k; ++i) Out[i] = 0.0;
    for (l = 0; l < r; ++l) {
        const double *al = A + (size_t)l * c;
        const double *bl = B + (size_t)l * k;
        for (i = 0; i < c; ++i) {
            double a = al[i];
            double *oi = Out + (size_t)i * k;
            if (a == 0.0) continue;
            for (j = 0; j < k; ++j) oi[j] += a * bl[j];
        }
    }
}

/* y = A x and Out = A B for a kernel output A: dense (P = NULL), or values on the CSR pattern P. */
static void kmv(const sg_csr *P, const double *A, const double *x, double *y, int rows, int cols)
{
    if (P) sg_csr_mv(P, A, x, y);
    else mv(A, x, y, rows, cols);
}

static void kmm(const sg_csr *P, const double *A, const double *B, double *Out, int r, int c, int k)
{
    if (P) sg_csr_mm(P, A, B, Out, k);
    else mm(A, B, Out, r, c, k);
}

/* numpy's max(|d_i| / w_i) with NaN propagation (initial 0). */
static double wmax(const double *a, const double *b, const double *wt, int n)
{
    double r = 0.0, v;
    int i;
    for (i = 0; i < n; ++i) {
        v = fabs(a[i] - b[i]) / wt[i];
        if (v != v) return v;
        if (v > r) r = v;
    }
    return r;
}

/* LU with partial pivoting (LAPACK dgesv semantics): solves A x = b in place of b; A is
 * overwritten.  Returns 0, or 1 when a pivot is exactly zero (singular). */
static int lu_solve(double *A, double *b, int k, int *ipiv)
{
    int i, j, l, p;
    for (j = 0; j < k; ++j) {
        double big = fabs(A[(size_t)j * k + j]);
        p = j;
        for (i = j + 1; i < k; ++i) {
            double v = fabs(A[(size_t)i * k + j]);
            if (v > big) { big = v; p = i; }
        }
        ipiv[j] = p;
        if (A[(size_t)p * k + j] == 0.0) return 1;
        if (p != j) {
            for (l = 0; l < k; ++l) {
                double tmp = A[(size_t)j * k + l];
                A[(size_t)j * k + l] = A[(size_t)p * k + l];
                A[(size_t)p * k + l] = tmp;
            }
            { double tmp = b[j]; b[j] = b[p]; b[p] = tmp; }
        }
        for (i = j + 1; i < k; ++i) {
            double lij = A[(size_t)i * k + j] / A[(size_t)j * k + j];
            A[(size_t)i * k + j] = lij;
            if (lij == 0.0) continue;
            for (l = j + 1; l < k; ++l) A[(size_t)i * k + l] -= lij * A[(size_t)j * k + l];
            b[i] -= lij * b[j];
        }
    }
    for (i = k - 1; i >= 0; --i) {
        double s = b[i];
        for (l = i + 1; l < k; ++l) s -= A[(size_t)i * k + l] * b[l];
        b[i] = s / A[(size_t)i * k + i];
    }
    return 0;
}

/* One-sided Jacobi (Hestenes): rotate the N columns of U (N x N, column-major) until they are
 * orthogonal; the singular values are then the column norms of U.  V (N x N, column-major), when
 * not NULL, takes the same rotations (A = U V^T for V = I on entry). */
static void jacobi_rotate(double *U, double *V, int N)
{
    int i, j, l, sweep;
    for (sweep = 0; sweep < 100; ++sweep) {
        int rotated = 0;
        for (i = 0; i < N - 1; ++i)
            for (j = i + 1; j < N; ++j) {
                double *ui = U + (size_t)i * N, *uj = U + (size_t)j * N;
                double al = 0.0, be = 0.0, ga = 0.0, zeta, t, c, sn;
                for (l = 0; l < N; ++l) {
                    al += ui[l] * ui[l];
                    be += uj[l] * uj[l];
                    ga += ui[l] * uj[l];
                }
                if (al == 0.0 || be == 0.0 || fabs(ga) <= SG_EPS * sqrt(al * be)) continue;
                rotated = 1;
                zeta = (be - al) / (2.0 * ga);
                t = (zeta >= 0.0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                c = 1.0 / sqrt(1.0 + t * t);
                sn = c * t;
                for (l = 0; l < N; ++l) {
                    double a1 = ui[l], a2 = uj[l];
                    ui[l] = c * a1 - sn * a2;
                    uj[l] = sn * a1 + c * a2;
                }
                if (V) {
                    double *vi = V + (size_t)i * N, *vj = V + (size_t)j * N;
                    for (l = 0; l < N; ++l) {
                        double a1 = vi[l], a2 = vj[l];
                        vi[l] = c * a1 - sn * a2;
                        vj[l] = sn * a1 + c * a2;
                    }
                }
            }
        if (!rotated) break;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Householder QR (column-major A, rows x cols, column j at A + j*rows), optional column pivoting
 * by the largest remaining column norm (LAPACK dgeqp3's rule).  Reflector i: v = (1, A[i+1:, i]),
 * H_i = I - tau_i v v^T; R in the upper triangle.
 * ------------------------------------------------------------------------------------------- */
static void householder_qr(double *A, int rows, int cols, double *tau, int *piv, double *cn)
{
    /* cn: 2 cols doubles when pivoting: partial column norms (LAPACK's vn1) and the norms they
     * were last computed from (vn2), downdated after every reflector as dgeqp3 does */
    int kmin = rows < cols ? rows : cols;
    int i, j, l;
    double *vn1 = cn, *vn2 = cn ? cn + cols : (double *)0;
    const double tol3z = sqrt(SG_EPS);
    if (piv) {
        for (j = 0; j < cols; ++j) {
            double s = 0.0;
            const double *aj = A + (size_t)j * rows;
            piv[j] = j;
            for (l = 0; l < rows; ++l) s += aj[l] * aj[l];
            vn1[j] = vn2[j] = sqrt(s);
        }
    }
    for (i = 0; i < kmin; ++i) {
        double *ai;
        double alpha, xnorm, beta, t;
        if (piv) {
            int p = i;
            double big = vn1[i];
            for (j = i + 1; j < cols; ++j)
                if (vn1[j] > big) { big = vn1[j]; p = j; }
            if (p != i) {
                double *ap = A + (size_t)p * rows, *aq = A + (size_t)i * rows;
                for (l = 0; l < rows; ++l) { t = ap[l]; ap[l] = aq[l]; aq[l] = t; }
                l = piv[p]; piv[p] = piv[i]; piv[i] = l;
                vn1[p] = vn1[i];
                vn2[p] = vn2[i];
            }
        }
        ai = A + (size_t)i * rows;
        alpha = ai[i];
        xnorm = 0.0;
        for (l = i + 1; l < rows; ++l) xnorm += ai[l] * ai[l];
        xnorm = sqrt(xnorm);
        if (xnorm == 0.0) {
            tau[i] = 0.0;
        } else {
            beta = -copysign(hypot(alpha, xnorm), alpha);
            tau[i] = (beta - alpha) / beta;
            t = 1.0 / (alpha - beta);
            for (l = i + 1; l < rows; ++l) ai[l] *= t;
            ai[i] = beta;
            for (j = i + 1; j < cols; j += 2) {
                /* two columns at a time: two independent sums, each in the order of one */
                double *aj = A + (size_t)j * rows, *ak = aj + rows;
                double sum = aj[i], sk = 0.0;
                int two = j + 1 < cols;
                if (two) {
                    sk = ak[i];
                    for (l = i + 1; l < rows; ++l) {
                        sum += ai[l] * aj[l];
                        sk += ai[l] * ak[l];
                    }
                } else {
                    for (l = i + 1; l < rows; ++l) sum += ai[l] * aj[l];
                }
                sum *= tau[i];
                aj[i] -= sum;
                for (l = i + 1; l < rows; ++l) aj[l] -= sum * ai[l];
                if (two) {
                    sk *= tau[i];
                    ak[i] -= sk;
                    for (l = i + 1; l < rows; ++l) ak[l] -= sk * ai[l];
                }
            }
        }
        if (piv) {
            for (j = i + 1; j < cols; ++j) {
                double *aj = A + (size_t)j * rows, temp, temp2;
                if (vn1[j] == 0.0) continue;
                temp = fabs(aj[i]) / vn1[j];
                temp = 1.0 - temp * temp;
                if (temp < 0.0) temp = 0.0;
                temp2 = temp * (vn1[j] / vn2[j]) * (vn1[j] / vn2[j]);
                if (temp2 <= tol3z) {
                    double sum = 0.0;
                    for (l = i + 1; l < rows; ++l) sum += aj[l] * aj[l];
                    vn1[j] = vn2[j] = sqrt(sum);
                } else {
                    vn1[j] *= sqrt(temp);
                }
            }
        }
    }
}

/* Q (rows x rows, row-major) = H_0 H_1 ... H_{kmin-1} of householder_qr. */
static void householder_q(const double *A, int rows, int kmin, const double *tau, double *Q)
{
    int i, j, l;
    for (i = 0; i < rows * rows; ++i) Q[i] = 0.0;
    for (i = 0; i < rows; ++i) Q[(size_t)i * rows + i] = 1.0;
    for (i = kmin - 1; i >= 0; --i) {
        const double *v = A + (size_t)i * rows;
        if (tau[i] == 0.0) continue;
        for (j = 0; j < rows; ++j) {          /* column j of Q */
            double s = Q[(size_t)i * rows + j];
            for (l = i + 1; l < rows; ++l) s += v[l] * Q[(size_t)l * rows + j];
            s *= tau[i];
            Q[(size_t)i * rows + j] -= s;
            for (l = i + 1; l < rows; ++l) Q[(size_t)l * rows + j] -= s * v[l];
        }
    }
}

/* y = Q^T y for the reflectors of householder_qr (y of length rows). */
static void householder_qt(const double *A, int rows, int kmin, const double *tau, double *y)
{
    int i, l;
    for (i = 0; i < kmin; ++i) {
        const double *v = A + (size_t)i * rows;
        double s;
        if (tau[i] == 0.0) continue;
        s = y[i];
        for (l = i + 1; l < rows; ++l) s += v[l] * y[l];
        s *= tau[i];
        y[i] -= s;
        for (l = i + 1; l < rows; ++l) y[l] -= s * v[l];
    }
}

/* y = Q y = H_0 H_1 ... H_{kmin-1} y for the reflectors of householder_qr. */
static void q_apply(const double *A, int rows, int kmin, const double *tau, double *y)
{
    int i, l;
    for (i = kmin - 1; i >= 0; --i) {
        const double *v = A + (size_t)i * rows;
        double s;
        if (tau[i] == 0.0) continue;
        s = y[i];
        for (l = i + 1; l < rows; ++l) s += v[l] * y[l];
        s *= tau[i];
        y[i] -= s;
        for (l = i + 1; l < rows; ++l) y[l] -= s * v[l];
    }
}

/* ---------------------------------------------------------------------------------------------
 * linalg.py: Linearization
 * ------------------------------------------------------------------------------------------- */

/* _factor_qr: H^T Pi = Q R; rank r = #{|R_ii| > rank_tol |R_00|}; N_H = Q[:, r:];
 * H^+ = Q_1 (R_1^T)^+ Pi^T.  Returns k = n - r, or -1 when H has non-finite entries. */
static int lin_factor(sg_stepper *s, const double *H)
{
    int n = s->n, m = s->m, kmin = n < m ? n : m;
    int i, j, l, r, k;
    double d0;
    if (m == 0) {
        s->rank = 0;
        s->k = n;
        for (i = 0; i < n * n; ++i) s->N[i] = 0.0;
        for (i = 0; i < n; ++i) s->N[(size_t)i * n + i] = 1.0;
        return n;
    }
    for (i = 0; i < n * m; ++i)
        if (!sg_isfinite(H[i])) return -1;
    memcpy(s->A, H, sizeof(double) * (size_t)n * m);   /* column-major H^T = row-major H */
    householder_qr(s->A, n, m, s->tau, s->piv, s->cn);
    d0 = kmin ? fabs(s->A[0]) : 0.0;
    r = 0;
    if (d0 > 0.0)
        for (i = 0; i < kmin; ++i)
            if (fabs(s->A[(size_t)i * n + i]) > s->o.rank_tol * d0) ++r;
    s->rank = r;
    k = n - r;
    s->k = k;
    s->implicit = (r == m) ? 1 : (r > 0 ? 2 : 0);
    if (s->implicit == 2) {
        /* redundant rows: R_1^T (m x r) = Q' R', (R_1^T)^+ = R'^-1 Q'^T[:r, :] (hp_apply) */
        double *B = s->B;
        for (j = 0; j < r; ++j)                 /* column j of R_1^T = row j of R_1 */
            for (l = 0; l < m; ++l) B[(size_t)j * m + l] = (l >= j) ? s->A[(size_t)l * n + j] : 0.0;
        householder_qr(B, m, r, s->tauB, NULL, NULL);
    }
    if (s->implicit) {
        /* N_H = Q[:, r:] = H_0 ... H_{kmin-1} e_{r+j}; H^+ stays implicit (hp_apply) */
        double *v = s->hw;
        for (j = 0; j < k; ++j) {
            for (l = 0; l < n; ++l) v[l] = (l == r + j) ? 1.0 : 0.0;
            q_apply(s->A, n, kmin, s->tau, v);
            for (i = 0; i < n; ++i) s->N[(size_t)i * k + j] = v[i];
        }
        return k;
    }
    householder_q(s->A, n, kmin, s->tau, s->Q);
    for (i = 0; i < n; ++i)
        for (j = 0; j < k; ++j) s->N[(size_t)i * k + j] = s->Q[(size_t)i * n + r + j];   /* N_H */
    /* Y = (R_1^T)^+ (r x m), R_1 = R[:r, :] in pivoted column order: R[i][j] = A[j*n + i] */
    if (r == m) {
        /* R_1^T Y = I by forward substitution */
        for (j = 0; j < m; ++j)
            for (l = 0; l < m; ++l) {
                double v = (l == j) ? 1.0 : 0.0;
                for (i = 0; i < l; ++i) v -= s->A[(size_t)l * n + i] * s->Y[(size_t)i * m + j];
                s->Y[(size_t)l * m + j] = v / s->A[(size_t)l * n + l];
            }
    } else if (r > 0) {
        /* R_1^T (m x r) = Q' R': (R_1^T)^+ = R'^-1 Q'^T[:r, :] (full column rank r) */
        double *B = s->B, *z = s->Z;
        for (j = 0; j < r; ++j)                 /* column j of R_1^T = row j of R_1 */
            for (l = 0; l < m; ++l) B[(size_t)j * m + l] = (l >= j) ? s->A[(size_t)l * n + j] : 0.0;
        householder_qr(B, m, r, s->wm, NULL, NULL);
        for (j = 0; j < m; ++j) {
            for (l = 0; l < m; ++l) z[l] = (l == j) ? 1.0 : 0.0;
            householder_qt(B, m, r, s->wm, z);
            for (i = r - 1; i >= 0; --i) {
                double v = z[i];
                for (l = i + 1; l < r; ++l) v -= B[(size_t)l * m + i] * z[l];
                z[i] = v / B[(size_t)i * m + i];
            }
            for (i = 0; i < r; ++i) s->Y[(size_t)i * m + j] = z[i];
        }
    }
    /* H^+[:, piv[j]] = Q_1 Y[:, j] */
    for (i = 0; i < n; ++i)
        for (j = 0; j < m; ++j) {
            double v = 0.0;
            for (l = 0; l < r; ++l) v += s->Q[(size_t)i * n + l] * s->Y[(size_t)l * m + j];
            s->Hp[(size_t)i * m + s->piv[j]] = v;
        }
    return k;
}

/* out = H^+ v (v: m, out: n), applied through the reflectors: full row rank H^+ = Q_1 R_1^-T Pi^T,
 * redundant rows H^+ = Q_1 R'^-1 Q'^T Pi^T (R_1^T = Q' R'); rank 0: the H^+ = 0 of lin_factor. */
static void hp_apply(sg_stepper *s, const double *v, double *out)
{
    int n = s->n, m = s->m, i, l;
    const double *A = s->A;
    if (s->pH) {
        sg_splin_pinv(s->sp, v, 1, out);                 /* the sparse step's H~^+ */
        return;
    }
    if (!s->implicit) {
        mv(s->Hp, v, out, n, m);
        return;
    }
    if (s->implicit == 2) {
        int r = s->rank, kmin = n < m ? n : m;
        double *z = s->Z;
        for (l = 0; l < m; ++l) z[l] = v[s->piv[l]];
        householder_qt(s->B, m, r, s->tauB, z);
        for (i = r - 1; i >= 0; --i) {        /* R' y = (Q'^T Pi^T v)[:r] */
            double u = z[i];
            for (l = i + 1; l < r; ++l) u -= s->B[(size_t)l * m + i] * z[l];
            z[i] = u / s->B[(size_t)i * m + i];
        }
        for (l = 0; l < n; ++l) out[l] = l < r ? z[l] : 0.0;
        q_apply(A, n, kmin, s->tau, out);
        return;
    }
    for (l = 0; l < m; ++l) {                 /* R_1^T z = Pi^T v (R[i][l] = A[l*n + i]) */
        double z = v[s->piv[l]];
        for (i = 0; i < l; ++i) z -= A[(size_t)l * n + i] * out[i];
        out[l] = z / A[(size_t)l * n + l];
    }
    for (l = m; l < n; ++l) out[l] = 0.0;
    q_apply(A, n, m, s->tau, out);
}

/* out = H^+T v (v: n, out: m) = Pi R_1^-1 Q_1^T v. */
static void hpT_apply(sg_stepper *s, const double *v, double *out)
{
    int n = s->n, m = s->m, i, l;
    const double *A = s->A;
    double *y = s->hw;
    if (s->pH) {
        sg_splin_pinv_t(s->sp, v, out);                  /* the sparse step's H~^+T */
        return;
    }
    if (!s->implicit) {
        mtv(s->Hp, v, out, n, m);
        return;
    }
    if (s->implicit == 2) {
        int r = s->rank, kmin = n < m ? n : m;
        double *w = s->Z;
        memcpy(y, v, sizeof(double) * (size_t)n);
        householder_qt(A, n, kmin, s->tau, y);
        for (i = 0; i < r; ++i) {             /* R'^T u = (Q^T v)[:r] */
            double u = y[i];
            for (l = 0; l < i; ++l) u -= s->B[(size_t)i * m + l] * w[l];
            w[i] = u / s->B[(size_t)i * m + i];
        }
        for (l = r; l < m; ++l) w[l] = 0.0;
        q_apply(s->B, m, r, s->tauB, w);
        for (l = 0; l < m; ++l) out[s->piv[l]] = w[l];
        return;
    }
    memcpy(y, v, sizeof(double) * (size_t)n);
    householder_qt(A, n, m, s->tau, y);
    for (l = m - 1; l >= 0; --l) {            /* R_1 u = y[:m] */
        double u = y[l];
        for (i = l + 1; i < m; ++i) u -= A[(size_t)i * n + l] * y[i];
        y[l] = u / A[(size_t)l * n + l];
    }
    for (l = 0; l < m; ++l) out[s->piv[l]] = y[l];
}

/* Out = H^+ W for W m x k (row-major), Out n x k. */
static void hp_apply_mat(sg_stepper *s, const double *W, double *Out, int k)
{
    int n = s->n, m = s->m, i, j;
    double *col = s->wm2, *res = s->hw2;
    if (s->pH) {
        sg_splin_pinv(s->sp, W, k, Out);
        return;
    }
    if (!s->implicit) {
        mm(s->Hp, W, Out, n, m, k);
        return;
    }
    for (j = 0; j < k; ++j) {
        for (i = 0; i < m; ++i) col[i] = W[(size_t)i * k + j];
        hp_apply(s, col, res);
        for (i = 0; i < n; ++i) Out[(size_t)i * k + j] = res[i];
    }
}

/* Out = H^+ W (W m x k, Out n x k) and out = H^+ v (v, out: m, n; none when v is NULL).  The sparse
 * step takes both through one sg_splin_pinv of the k + 1 columns [W | v], whose LU solves go two
 * columns at a time; the numbers are those of the two separate calls either way. */
static void hp_apply_pair(sg_stepper *s, const double *W, int k, const double *v, double *Out,
                          double *out)
{
    int n = s->n, m = s->m, i, j, c = k + 1;
    if (!v) {
        hp_apply_mat(s, W, Out, k);
        return;
    }
    if (!s->pH) {
        hp_apply(s, v, out);                  /* before hp_apply_mat, which uses wm2 (v may be) */
        hp_apply_mat(s, W, Out, k);
        return;
    }
    for (i = 0; i < m; ++i) {
        for (j = 0; j < k; ++j) s->Wp[(size_t)i * c + j] = W[(size_t)i * k + j];
        s->Wp[(size_t)i * c + k] = v[i];
    }
    sg_splin_pinv(s->sp, s->Wp, c, s->Tp);
    for (i = 0; i < n; ++i) {
        for (j = 0; j < k; ++j) Out[(size_t)i * k + j] = s->Tp[(size_t)i * c + j];
        out[i] = s->Tp[(size_t)i * c + k];
    }
}

/* particular(): Xd_p, Xdd_p1, X_p2 (Eqs. 40, 47, 48-49) and, unless xd0 is NULL, dx_p, xd_p, xdd_p
 * (Eqs. 33, 39, 46) with dxd_p, dxdd_p.  The tangent part alone (xd0 NULL) is all that omega_max
 * needs (K_R of Eq. 52).  Xd_p with dx_p and Xdd_p1 with xd_p are independent: one H^+ pass each. */
static void lin_solve(sg_stepper *s, const double *xd0, const double *xdd0)
{
    int n = s->n, m = s->m, k = s->k, i, p = xd0 != NULL;
    double *wm = s->wm, *wm2 = s->wm2;
    if (m == 0) {
        for (i = 0; i < n * k; ++i) s->Xd_p[i] = s->Xdd_p1[i] = s->X_p2[i] = 0.0;
        for (i = 0; p && i < n; ++i) {
            s->dx_p[i] = 0.0;
            s->xd_p[i] = 0.0;
            s->xdd_p[i] = 0.0;
            s->dxd_p[i] = -xd0[i];
            s->dxdd_p[i] = -xdd0[i];
        }
        return;
    }
    kmm(s->pH, s->Hd, s->N, s->Wmk, m, n, k);
    hp_apply_pair(s, s->Wmk, k, p ? s->q : NULL, s->Xd_p, s->dx_p);
    for (i = 0; i < n * k; ++i) s->Xd_p[i] = -s->Xd_p[i];           /* Eq. 40 */
    for (i = 0; p && i < n; ++i) s->dx_p[i] = -s->dx_p[i];          /* Eq. 33: x_p - x0 = -H^+ q */
    kmm(s->pH, s->Hd, s->Xd_p, s->Wmk, m, n, k);
    kmm(s->pH, s->Hdd, s->N, s->Wmk2, m, n, k);
    for (i = 0; i < m * k; ++i) s->Wmk[i] = -(2.0 * s->Wmk[i] + s->Wmk2[i]);
    if (p) {
        kmv(s->pH, s->Hd, s->dx_p, wm, m, n);
        for (i = 0; i < m; ++i) wm[i] += s->qd[i];
        kmv(s->pH, s->H, xd0, wm2, m, n);
        for (i = 0; i < m; ++i) wm2[i] -= wm[i];
    }
    hp_apply_pair(s, s->Wmk, k, p ? wm2 : NULL, s->Xdd_p1, s->xd_p);   /* Eqs. 47, 39 */
    for (i = 0; i < n * k; ++i) s->X_p2[i] = 2.0 * s->Xd_p[i];      /* Eqs. 48-49 */
    if (!p) return;
    for (i = 0; i < n; ++i) s->dxd_p[i] = s->xd_p[i] - xd0[i];
    kmv(s->pH, s->Hdd, s->dx_p, wm, m, n);
    kmv(s->pH, s->Hd, s->dxd_p, wm2, m, n);
    for (i = 0; i < m; ++i) wm[i] = wm[i] + 2.0 * wm2[i] + s->qdd[i];
    kmv(s->pH, s->H, xdd0, wm2, m, n);
    for (i = 0; i < m; ++i) wm2[i] -= wm[i];
    hp_apply(s, wm2, s->xdd_p);                                 /* Eq. 46 */
    for (i = 0; i < n; ++i) s->dxdd_p[i] = s->xdd_p[i] - xdd0[i];
}

/* reduce(): M_R = N^T M N, C_R = N^T C N + 2 N^T M Xd_p, K_R = N^T K N + N^T C Xd_p
 * + N^T M Xdd_p1 (Eq. 52, N_G = N_H).  C = 0 (model flag) skips the C products; full = 0 (for
 * omega_max alone) skips C_R.  M_R and K_R are the same either way. */
static void lin_reduce(sg_stepper *s, int full)
{
    int n = s->n, k = s->k, i, cz = s->mdl->C_is_zero;
    kmm(s->pM, s->M, s->N, s->MN, n, n, k);
    kmm(s->pM, s->K, s->N, s->KN, n, n, k);
    kmm(s->pM, s->M, s->Xdd_p1, s->MXdd, n, n, k);
    mtm(s->N, s->MN, s->M_R, n, k, k);                              /* Eq. 52: N_G^T M_L N_H */
    if (full) {
        kmm(s->pM, s->M, s->Xd_p, s->MXd, n, n, k);
        mtm(s->N, s->MXd, s->Wkk, n, k, k);
        if (cz) {
            for (i = 0; i < k * k; ++i) s->C_R[i] = 2.0 * s->Wkk[i];
        } else {
            kmm(s->pM, s->C, s->N, s->CN, n, n, k);
            mtm(s->N, s->CN, s->C_R, n, k, k);
            for (i = 0; i < k * k; ++i) s->C_R[i] += 2.0 * s->Wkk[i];   /* + 2 N_G^T M_L Xd_p */
        }
    }
    mtm(s->N, s->KN, s->K_R, n, k, k);
    if (!cz) {
        kmm(s->pM, s->C, s->Xd_p, s->CXd, n, n, k);
        mtm(s->N, s->CXd, s->Wkk, n, k, k);
        for (i = 0; i < k * k; ++i) s->K_R[i] += s->Wkk[i];         /* + N_G^T C_L Xd_p */
    }
    mtm(s->N, s->MXdd, s->Wkk, n, k, k);
    for (i = 0; i < k * k; ++i) s->K_R[i] += s->Wkk[i];             /* + N_G^T M_L Xdd_p1 */
}

/* linalg.py omega_from: sqrt of the largest modulus of the eigenvalues of M_R^-1 K_R.
 * k = 1, 2 in closed form; k >= 3 by repeated squaring of A = M_R^-1 K_R:
 * |A^(2^j)|^(1/2^j) -> spectral radius (Gelfand), stopped when a squaring changes the
 * logarithm by less than 1e-13 (the remaining error is of that size). */
double sg_omega_from(int k, const double *M_R, const double *K_R, double *work)
{
    int i, j, l;
    double w2;
    if (k == 0) return 0.0;
    for (i = 0; i < k * k; ++i)
        if (!sg_isfinite(M_R[i]) || !sg_isfinite(K_R[i])) return NAN;
    if (k == 1) {
        double mr = M_R[0], kr = K_R[0];
        if (mr == 0.0) return kr != 0.0 ? HUGE_VAL : NAN;
        w2 = fabs(kr / mr);
    } else if (k == 2) {
        double det = M_R[0] * M_R[3] - M_R[1] * M_R[2];
        double a, b, c, d, tr, dt, disc;
        if (det == 0.0) return HUGE_VAL;
        /* A = M_R^-1 K_R */
        a = (M_R[3] * K_R[0] - M_R[1] * K_R[2]) / det;
        b = (M_R[3] * K_R[1] - M_R[1] * K_R[3]) / det;
        c = (M_R[0] * K_R[2] - M_R[2] * K_R[0]) / det;
        d = (M_R[0] * K_R[3] - M_R[2] * K_R[1]) / det;
        tr = 0.5 * (a + d);
        dt = a * d - b * c;
        disc = 0.25 * (a - d) * (a - d) + b * c;      /* tr^2 - det without cancellation */
        if (disc >= 0.0)
            w2 = fabs(tr) + sqrt(disc);
        else
            w2 = sqrt(fabs(dt));
    } else {
        double *Ac = work, *Bm = work + (size_t)k * k, *Cm = work + 2 * (size_t)k * k;
        double logr, nrm, *tmp;
        int it;
        /* A = M_R^-1 K_R: Gauss-Jordan on [M_R | K_R] with partial pivoting */
        for (i = 0; i < k * k; ++i) { Cm[i] = M_R[i]; Ac[i] = K_R[i]; }
        for (j = 0; j < k; ++j) {
            int p = j;
            double big = fabs(Cm[(size_t)j * k + j]), piv;
            for (i = j + 1; i < k; ++i)
                if (fabs(Cm[(size_t)i * k + j]) > big) { big = fabs(Cm[(size_t)i * k + j]); p = i; }
            if (Cm[(size_t)p * k + j] == 0.0) return HUGE_VAL;       /* singular M_R */
            if (p != j)
                for (l = 0; l < k; ++l) {
                    double t = Cm[(size_t)j * k + l];
                    Cm[(size_t)j * k + l] = Cm[(size_t)p * k + l]; Cm[(size_t)p * k + l] = t;
                    t = Ac[(size_t)j * k + l];
                    Ac[(size_t)j * k + l] = Ac[(size_t)p * k + l]; Ac[(size_t)p * k + l] = t;
                }
            piv = Cm[(size_t)j * k + j];
            for (i = 0; i < k; ++i) {
                double f;
                if (i == j) continue;
                f = Cm[(size_t)i * k + j] / piv;
                if (f == 0.0) continue;
                for (l = 0; l < k; ++l) {
                    Cm[(size_t)i * k + l] -= f * Cm[(size_t)j * k + l];
                    Ac[(size_t)i * k + l] -= f * Ac[(size_t)j * k + l];
                }
            }
        }
        for (j = 0; j < k; ++j)
            for (l = 0; l < k; ++l) Ac[(size_t)j * k + l] /= Cm[(size_t)j * k + j];
        /* |A^(2^j)|_F^(1/2^j), normalized at every squaring */
        nrm = 0.0;
        for (i = 0; i < k * k; ++i) nrm += Ac[i] * Ac[i];
        nrm = sqrt(nrm);
        if (nrm == 0.0) return 0.0;
        if (!sg_isfinite(nrm)) return HUGE_VAL;
        for (i = 0; i < k * k; ++i) Ac[i] /= nrm;
        logr = log(nrm);
        for (it = 1; it <= 60; ++it) {
            double scale = ldexp(1.0, -it), inc;
            mm(Ac, Ac, Bm, k, k, k);
            nrm = 0.0;
            for (i = 0; i < k * k; ++i) nrm += Bm[i] * Bm[i];
            nrm = sqrt(nrm);
            if (nrm == 0.0) return 0.0;                  /* nilpotent */
            for (i = 0; i < k * k; ++i) Bm[i] /= nrm;
            inc = log(nrm) * scale;
            logr += inc;
            tmp = Ac; Ac = Bm; Bm = tmp;
            if (fabs(inc) <= 1e-13) break;
        }
        w2 = exp(logr);
    }
    if (w2 != w2) return NAN;
    return sqrt(w2);
}

double sg_h_max(double gamma, double beta, double omega_max)
{
    double d;
    if (omega_max != omega_max) return NAN;
    d = 0.5 * gamma - beta;
    if (d <= 0.0 || omega_max <= 0.0) return HUGE_VAL;
    return sqrt(1.0 / d) / omega_max;                                   /* Eq. 11 */
}

/* ---------------------------------------------------------------------------------------------
 * base.py: predictor, update norm, convergence test
 * ------------------------------------------------------------------------------------------- */
static void predict(sg_stepper *s, const double *x, const double *xd, const double *xdd,
                    const double *lam)
{
    int i, n = s->n;
    double h = s->o.h;
    for (i = 0; i < n; ++i) {
        s->wt[i] = (fabs(x[i]) + 1.0) * s->o.tol;
        s->xdd[i] = xdd[i];
        s->xd[i] = xdd[i] * h + xd[i];
        s->x[i] = xdd[i] * (0.5 * h * h) + x[i] + xd[i] * h;
    }
    s->upd_last = s->upd_prev = HUGE_VAL;
    s->upd_lvl[0] = s->upd_lvl[1] = s->upd_lvl[2] = HUGE_VAL;
    s->floor[0] = s->floor[1] = s->floor[2] = NAN;
    if (s->m) memcpy(s->lam, lam, sizeof(double) * (size_t)s->m);
}

static void save_old(sg_stepper *s)
{
    size_t b = sizeof(double) * (size_t)s->n;
    memcpy(s->x_old, s->x, b);
    memcpy(s->xd_old, s->xd, b);
    memcpy(s->xdd_old, s->xdd, b);
}

/* numpy's max|a_i - b_i| with NaN propagation (initial 0). */
static double amax(const double *a, const double *b, int n)
{
    double r = 0.0, v;
    int i;
    for (i = 0; i < n; ++i) {
        v = fabs(a[i] - b[i]);
        if (v != v) return v;
        if (v > r) r = v;
    }
    return r;
}

static double update_norm(sg_stepper *s)
{
    double h = s->o.h;
    s->upd_lvl[0] = wmax(s->x, s->x_old, s->wt, s->n);
    s->upd_lvl[1] = h * wmax(s->xd, s->xd_old, s->wt, s->n);
    s->upd_lvl[2] = h * h * wmax(s->xdd, s->xdd_old, s->wt, s->n);
    if (s->o.convergence) {
        s->upd_abs[0] = amax(s->x, s->x_old, s->n);
        s->upd_abs[1] = h * amax(s->xd, s->xd_old, s->n);
        s->upd_abs[2] = h * h * amax(s->xdd, s->xdd_old, s->n);
    }
    s->upd_prev = s->upd_last;
    s->upd_last = py_max3(s->upd_lvl[0], s->upd_lvl[1], s->upd_lvl[2]);
    return s->upd_last;
}

/* The convergence rule of base.py (_converged), one function so that it can be swapped:
 * upd <= 1, or Newton stalled at its round-off floor (within SG_STALL_FACTOR of the tolerance
 * and no longer shrinking). */
static int sg_converged(sg_stepper *s, double upd)
{
    if (upd <= 1.0) return 1;
    if (s->o.convergence) return 0;         /* rule 1: see sg_at_floor */
    if (upd <= SG_STALL_FACTOR && upd >= 0.5 * s->upd_prev) {
        s->stalled += 1;
        return 1;
    }
    return 0;
}

/* Rule 1 (the conv branch's base.py): an update above the tolerance may be accepted only if it is
 * not larger than the one before (a growing update never is) ... */
static int sg_may_be_at_floor(const sg_stepper *s, double upd)
{
    return 1.0 < upd && upd <= s->upd_prev;
}

static double absmax(const double *v, int n)
{
    double r = 0.0, a;
    int i;
    for (i = 0; i < n; ++i) {
        a = fabs(v[i]);
        if (a != a) return a;
        if (a > r) r = a;
    }
    return r;
}

/* ... and it is, on each level, within w_i or within the attainable accuracy of the iterate:
 *   dx = eps k (1 + |x|inf), dv = eps k h|xd|inf + r1 dx, da = eps k h^2|xdd|inf + r1 dv + r2 dx,
 *   k = s_max/s_min of H, r1 = h |H_dot|_F / s_min, r2 = h^2 |H_ddot|_F / s_min. */
static void sg_floor(sg_stepper *s, const double *x, const double *xd, const double *xdd,
                     double s_max, double s_min, double hd_norm, double hdd_norm)
{
    double h = s->o.h, kappa, rho1, rho2, ek, dx, dv, da;
    int n = s->n;
    if (s_min > 0.0 && s_max > 0.0) {
        kappa = s_max / s_min;
        rho1 = h * hd_norm / s_min;
        rho2 = h * h * hdd_norm / s_min;
    } else if (s_max > 0.0) {
        s->floor[0] = s->floor[1] = s->floor[2] = HUGE_VAL;
        return;
    } else {
        kappa = 1.0;
        rho1 = rho2 = 0.0;
    }
    ek = SG_EPS * kappa;
    dx = ek * (1.0 + absmax(x, n));
    dv = ek * h * absmax(xd, n) + rho1 * dx;
    da = ek * h * h * absmax(xdd, n) + rho1 * dv + rho2 * dx;
    s->floor[0] = dx;
    s->floor[1] = dv;
    s->floor[2] = da;
}

static int sg_at_floor(sg_stepper *s, double t1)
{
    int l;
    if (!sg_may_be_at_floor(s, s->upd_last)) return 0;
    for (l = 0; l < 3; ++l)
        if (s->upd_lvl[l] > 1.0 && s->upd_abs[l] > s->floor[l]) return 0;
    if (s->floor_steps < SG_FLOOR_TIMES_KEPT) s->floor_times[s->floor_steps] = t1;
    s->floor_t_last = t1;
    s->floor_steps += 1;
    return 1;
}

/* the floor at a nullspace iterate from the factorization of H there (kept |R_ii|) */
static void sg_floor_at(sg_stepper *s, const double *x, const double *xd, const double *xdd)
{
    int n = s->n, m = s->m, r = s->rank;
    if (s->pH) {                                        /* sparse: (max row norm, sigma_min) */
        double smax, smin;
        sg_splin_s_range(s->sp, &smax, &smin);
        if (!(smax > 0.0)) sg_floor(s, x, xd, xdd, 0.0, 0.0, 0.0, 0.0);
        else sg_floor(s, x, xd, xdd, smax, smin, norm2(s->Hd, s->mdl->nnz_H),
                      norm2(s->Hdd, s->mdl->nnz_H));
        return;
    }
    if (r == 0) {
        sg_floor(s, x, xd, xdd, 0.0, 0.0, 0.0, 0.0);
        return;
    }
    sg_floor(s, x, xd, xdd, fabs(s->A[0]), fabs(s->A[(size_t)(r - 1) * n + (r - 1)]),
             norm2(s->Hd, m * n), norm2(s->Hdd, m * n));
}

static void fail_set(sg_failure *f, int kind, double t1, int it)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->t = t1;
    f->iteration = it;
}

static void fail_floor(const sg_stepper *s, sg_failure *fail)
{
    int l;
    for (l = 0; l < 3; ++l) {
        fail->floor[l] = s->floor[l];
        fail->upd_abs[l] = s->upd_abs[l];
    }
}

/* The sparse step's factorization (symgen_sparse.c sg_splin) of the values of H: rank, k and N
 * copied into the stepper (its k buffers grown when k exceeds them); -1 (non-finite H), -2
 * (singular block or degenerate basis) or -3 (out of memory). */
static int k_alloc(sg_stepper *s, int kcap);

static int sp_factor(sg_stepper *s)
{
    int k = sg_splin_factor(s->sp, s->H);
    if (k < 0) return k;
    if (k > s->kcap && k_alloc(s, k < 2 * s->kcap ? 2 * s->kcap : k)) return -3;
    s->k = k;
    s->rank = sg_splin_rank(s->sp);
    memcpy(s->N, sg_splin_basis(s->sp), sizeof(double) * (size_t)s->n * (size_t)k);
    return k;
}

/* nullspace.py _factor: factor H at the iterate, keep the run's range of ranks; -1 (and *fail
 * set) when H has non-finite entries. */
static int ns_factor(sg_stepper *s, double t1, int it, sg_failure *fail)
{
    int k = s->pH ? sp_factor(s) : lin_factor(s, s->H);
    if (k < 0) {
        fail_set(fail, k == -1 ? SG_FAIL_FACTOR_NONFINITE
                       : k == -3 ? SG_FAIL_NO_MEMORY : SG_FAIL_SPARSE_SINGULAR, t1, it);
        return -1;
    }
    if (s->rank < s->min_rank) s->min_rank = s->rank;
    if (s->rank > s->max_rank) s->max_rank = s->rank;
    return k;
}

/* nullspace.py _s_ratio: s_min/s_max of the kept singular values of the last factorization
 * (QR: |R_rr| / |R_11|); NaN without constraints or rank. */
static double kept_ratio(const sg_stepper *s)
{
    int r = s->rank;
    double d0;
    if (s->sp) {                /* the sparse step: its (s_max, s_min), as sparse.py s_range */
        double smax, smin;
        sg_splin_s_range(s->sp, &smax, &smin);
        return smax > 0.0 ? smin / smax : NAN;
    }
    if (s->m == 0 || r <= 0) return NAN;
    d0 = fabs(s->A[0]);
    return d0 > 0.0 ? fabs(s->A[(size_t)(r - 1) * s->n + (r - 1)]) / d0 : NAN;
}

/* ---------------------------------------------------------------------------------------------
 * chart.py: the symmetric chart (beyond the paper; docs/symmetric-chart.md)
 * ------------------------------------------------------------------------------------------- */

/* SymmetricChart.H_at: H_n = H(x(t), t), kept from the state last accepted (t up to round-off),
 * else evaluated there once (the first step, or a step after one the Python fallback took). */
static void chart_H_at(sg_stepper *s, const double *p, double t, const double *x,
                       const double *xd, const double *xdd)
{
    int n = s->n, i, same = fabs(t - s->t_n) <= 1e-12 * (fabs(t) > 1.0 ? fabs(t) : 1.0);
    for (i = 0; same && i < n; ++i) same = x[i] == s->x_n[i];
    if (same) return;
    (s->pH ? s->mdl->constraints_csr : s->mdl->constraints)(t, x, xd, xdd, p, s->q, s->H_n, s->qd,
                                                           s->Hd, s->qdd, s->Hdd);
    s->t_n = t;
    memcpy(s->x_n, x, sizeof(double) * (size_t)n);
}

/* The entries of H the kernels write: m n, or nnz on the sparse step's CSR pattern. */
static size_t H_entries(const sg_stepper *s)
{
    return s->pH ? (size_t)s->pH->indptr[s->m] : (size_t)s->n * (size_t)s->m;
}

/* SymmetricChart.accept: H of the accepted state (in s->H) is the next step's H_n. */
static void chart_accept(sg_stepper *s, double t1)
{
    s->t_n = t1;
    memcpy(s->x_n, s->x, sizeof(double) * (size_t)s->n);
    memcpy(s->H_n, s->H, sizeof(double) * H_entries(s));
}

/* SymmetricChart.basis, null_basis(.., "qr"): N_s (n x k), the last k columns of Q in the pivoted
 * QR of H_s^T, H_s = (H_n + H(x, t + h)) / 2; k = n - rank H(x, t + h) is given.  The sparse
 * step: H_s on H's pattern, N_s from sg_splin_chart_basis on the step's partition.  Returns 0, or
 * -1 with *fail set (H_s[R, D] singular). */
static int chart_basis(sg_stepper *s, int k, double t1, int it, sg_failure *fail)
{
    int n = s->n, m = s->m, kmin = n < m ? n : m, i, j, l;
    double *v = s->cw;
    if (k == 0) return 0;
    if (s->pH) {
        size_t e, nnz = H_entries(s);
        for (e = 0; e < nnz; ++e) s->Hs[e] = (s->H_n[e] + s->H[e]) * 0.5;
        if (sg_splin_chart_basis(s->sp, s->Hs, s->Ns) < 0) {
            fail_set(fail, SG_FAIL_CHART_SPARSE_SINGULAR, t1, it);
            return -1;
        }
        return 0;
    }
    if (m == 0) {
        for (i = 0; i < n; ++i)
            for (j = 0; j < k; ++j) s->Ns[(size_t)i * k + j] = (i == n - k + j) ? 1.0 : 0.0;
        return 0;
    }
    for (i = 0; i < m * n; ++i) s->Hs[i] = (s->H_n[i] + s->H[i]) * 0.5;
    householder_qr(s->Hs, n, m, s->tau_s, s->piv_s, s->cn_s);   /* column-major H_s^T = H_s */
    for (j = 0; j < k; ++j) {
        for (l = 0; l < n; ++l) v[l] = (l == n - k + j) ? 1.0 : 0.0;
        q_apply(s->Hs, n, kmin, s->tau_s, v);
        for (i = 0; i < n; ++i) s->Ns[(size_t)i * k + j] = v[i];
    }
    return 0;
}

/* solve_chart_step: (alpha, alpha_dot, alpha_ddot) at t + h into s->a, s->ad, s->add from the
 * 3k x 3k system in the scaled unknowns (alpha, h alpha_dot, h^2 alpha_ddot), T = N_s^T N_H:
 *   [ h^2 K_R                    h C_R              M_R    ]   [ h^2 r ]
 *   [ T - bh^2 N_s^T Xdd_p1      -bh N_s^T X_p2     -b T   ] = [ b_x   ]   (N_s^T R_x = 0)
 *   [ hN_s^T Xd_p - gh^2 ..Xdd_p1  T - gh N_s^T X_p2  -g T   ]   [ h b_v ]   (N_s^T R_v = 0)
 * with r = N_H^T rhs of Eq. 52 (s->r_R) and x, xd, xdd the state at t.  Returns 0, or -1 with
 * *fail set (T or the system singular). */
static int chart_solve(sg_stepper *s, const double *x, const double *xd, const double *xdd,
                       double t1, int it, sg_failure *fail)
{
    int n = s->n, k = s->k, K3 = 3 * s->k, i, j;
    double h = s->o.h, gam = s->o.gamma, bet = s->o.beta, hh = h * h, smin;
    double *T = s->Tm, *A = s->A3, *b = s->b3, *w = s->cw;
    if (k == 0) return 0;
    mtm(s->Ns, s->N, T, n, k, k);                                     /* T = N_s^T N_H */
    if (k == 1) {
        smin = fabs(T[0]);
    } else {
        double *U = s->Jw;
        for (i = 0; i < k; ++i)
            for (j = 0; j < k; ++j) U[(size_t)j * k + i] = T[(size_t)i * k + j];
        jacobi_rotate(U, NULL, k);
        smin = HUGE_VAL;
        for (j = 0; j < k; ++j) {
            double v = norm2(U + (size_t)j * k, k);
            if (v < smin || v != v) smin = v;
        }
    }
    if (!(smin > SG_T_SINGULAR)) {
        fail_set(fail, SG_FAIL_CHART_T_SINGULAR, t1, it);
        fail->value0 = smin;
        return -1;
    }
    mtm(s->Ns, s->Xd_p, s->NsXd, n, k, k);                            /* N_s^T Xd_p */
    mtm(s->Ns, s->Xdd_p1, s->NsXdd1, n, k, k);                        /* N_s^T Xdd_p1 */
    mtm(s->Ns, s->X_p2, s->NsX2, n, k, k);                            /* N_s^T X_p2 */
    for (i = 0; i < k; ++i)
        for (j = 0; j < k; ++j) {
            size_t e = (size_t)i * k + j;
            double *r1 = A + (size_t)i * K3 + j, *r2 = A + (size_t)(k + i) * K3 + j;
            double *r3 = A + (size_t)(2 * k + i) * K3 + j;
            /* row 1: Eq. 52, M_R alpha_dd + C_R alpha_d + K_R alpha = r, times h^2 */
            r1[0] = hh * s->K_R[e];
            r1[k] = h * s->C_R[e];
            r1[2 * k] = s->M_R[e];
            /* row 2: N_s^T R_x = 0 */
            r2[0] = T[e] - bet * hh * s->NsXdd1[e];
            r2[k] = -bet * h * s->NsX2[e];
            r2[2 * k] = -bet * T[e];
            /* row 3: N_s^T R_v = 0, times h */
            r3[0] = h * (s->NsXd[e] - gam * h * s->NsXdd1[e]);
            r3[k] = T[e] - gam * h * s->NsX2[e];
            r3[2 * k] = -gam * T[e];
        }
    for (i = 0; i < k; ++i) b[i] = hh * s->r_R[i];
    for (i = 0; i < n; ++i)
        w[i] = x[i] + h * xd[i] + hh * (0.5 - bet) * xdd[i] - s->x_p[i] + bet * hh * s->xdd_p[i];
    mtv(s->Ns, w, b + k, n, k);
    for (i = 0; i < n; ++i)
        w[i] = xd[i] + h * (1.0 - gam) * xdd[i] - s->xd_p[i] + gam * h * s->xdd_p[i];
    mtv(s->Ns, w, b + 2 * k, n, k);
    for (i = 0; i < k; ++i) b[2 * k + i] *= h;
    if (lu_solve(A, b, K3, s->ipiv3)) {
        fail_set(fail, SG_FAIL_CHART_SINGULAR, t1, it);
        fail->k = k;
        return -1;
    }
    for (i = 0; i < k; ++i) {
        s->a[i] = b[i];
        s->ad[i] = b[k + i] * (1.0 / h);
        s->add[i] = b[2 * k + i] * (1.0 / hh);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * nullspace.py: NullspaceStepper.step
 * ------------------------------------------------------------------------------------------- */
static int step_nullspace(sg_stepper *s, const double *p, double t, const double *x,
                          const double *xd, const double *xdd, int *iters, sg_failure *fail)
{
    const sg_model *mdl = s->mdl;
    int n = s->n, m = s->m, it, i, k;
    double h = s->o.h, gam = s->o.gamma, bet = s->o.beta, t1 = t + h, upd = HUGE_VAL;
    double *x0 = s->x, *xd0 = s->xd, *xdd0 = s->xdd, *lam0 = s->lam;
    int sym = s->o.chart == SG_CHART_SYMMETRIC;
    if (sym) chart_H_at(s, p, t, x, xd, xdd);                         /* symmetric chart: H_n */
    for (it = 0; it <= s->o.max_iter; ++it) {
        int factored = 0;
        /* 1. constraints at the estimate */
        (s->pH ? mdl->constraints_csr : mdl->constraints)(t1, x0, xd0, xdd0, p, s->q, s->H, s->qd,
                                                          s->Hd, s->qdd, s->Hdd);
        if (it > 0) {
            double rq, rqd, rqdd, resid;
            int ok;
            if (!sg_isfinite(upd)) {
                fail_set(fail, SG_FAIL_NONFINITE_ITERATE, t1, it);
                return SG_DIVERGED;
            }
            rq = norm2(s->q, m);
            rqd = norm2(s->qd, m);
            rqdd = norm2(s->qdd, m);
            resid = py_max3(rq, h * rqd, h * h * rqdd);
            ok = resid <= s->o.constraint_tol && sg_converged(s, upd);
            if (s->o.convergence && !ok && (sg_may_be_at_floor(s, upd) || it == s->o.max_iter)) {
                /* above tol: is the update at the round-off floor of this iterate? */
                if (ns_factor(s, t1, it, fail) < 0) return SG_FAILED;
                factored = 1;
                sg_floor_at(s, x0, xd0, xdd0);
                ok = resid <= s->o.constraint_tol && sg_at_floor(s, t1);
            }
            if (ok) {
                s->res[0] = rq;
                s->res[1] = rqd;
                s->res[2] = rqdd;
                if (s->o.estimate) {
                    if (s->o.convergence && (factored || it < 2)) {
                        /* omega_max of the reduced system linearized at the accepted state; after
                         * two or more iterations, that of the last iteration (M_R, K_R as they
                         * are), whose iterate is within the Newton tolerance of the accepted one
                         * (nullspace.py's module doc) */
                        if (!factored && ns_factor(s, t1, it, fail) < 0) return SG_FAILED;
                        lin_solve(s, NULL, NULL);
                        (s->pM ? mdl->dynamics_csr : mdl->dynamics)(t1, x0, xd0, xdd0, lam0, p,
                                                                    s->M, s->f, s->K, s->C);
                        lin_reduce(s, 0);
                    }
                    s->omega = sg_omega_from(s->k, s->M_R, s->K_R, s->om_work);
                }
                if (sym) chart_accept(s, t1);                             /* the next H_n */
                *iters = it;
                return SG_OK;
            }
            if (it == s->o.max_iter) {
                fail_set(fail, SG_FAIL_NOT_CONVERGED, t1, it);
                fail->value0 = upd;
                fail->value1 = resid;
                fail_floor(s, fail);
                fail->s_ratio = kept_ratio(s);
                return SG_FAILED;
            }
        }
        /* 2. one factorization of H: N_H, H^+, particular solutions */
        k = factored ? s->k : ns_factor(s, t1, it, fail);
        if (k < 0) return SG_FAILED;
        lin_solve(s, xd0, xdd0);                                          /* Eqs. 33-48 */
        for (i = 0; i < n; ++i) s->x_p[i] = x0[i] + s->dx_p[i];            /* Eq. 33 (corrected) */

        /* 3. linearized equilibrium at the estimate */
        (s->pM ? mdl->dynamics_csr : mdl->dynamics)(t1, x0, xd0, xdd0, lam0, p, s->M, s->f, s->K,
                                                    s->C);
        lin_reduce(s, 1);                                                 /* M_R, C_R, K_R */
        kmv(s->pM, s->M, s->xdd_p, s->rhs, n, n);
        for (i = 0; i < n; ++i) s->rhs[i] = s->f[i] - s->rhs[i];          /* Eq. 51: f_L - M ẍ_p */
        kmv(s->pM, s->K, s->dx_p, s->w, n, n);
        for (i = 0; i < n; ++i) s->rhs[i] -= s->w[i];                     /* - K_L x_p */
        if (!mdl->C_is_zero) {
            kmv(s->pM, s->C, s->dxd_p, s->w, n, n);
            for (i = 0; i < n; ++i) s->rhs[i] -= s->w[i];                 /* - C_L ẋ_p */
        }
        mtv(s->N, s->rhs, s->rk, n, k);                                   /* Eq. 52: N_G^T(...) */
        if (sym) memcpy(s->r_R, s->rk, sizeof(double) * (size_t)k);

        /* 4. re-project the state at t onto this linearization (Eqs. 56-58) */
        for (i = 0; i < n; ++i) s->w[i] = x[i] - s->x_p[i];
        mtv(s->N, s->w, s->a_n, n, k);                                    /* Eq. 56 */
        mv(s->Xd_p, s->a_n, s->w2, n, k);
        for (i = 0; i < n; ++i) s->w[i] = xd[i] - s->xd_p[i] - s->w2[i];
        mtv(s->N, s->w, s->ad_n, n, k);                                   /* Eq. 57 */
        mv(s->Xdd_p1, s->a_n, s->w2, n, k);
        for (i = 0; i < n; ++i) s->w[i] = xdd[i] - s->xdd_p[i] - s->w2[i];
        mv(s->X_p2, s->ad_n, s->w2, n, k);
        for (i = 0; i < n; ++i) s->w[i] -= s->w2[i];
        mtv(s->N, s->w, s->add_n, n, k);                                  /* Eq. 58 */

        /* 5. Newmark in alpha, reduced Eq. 52 for alpha_dd(t+h) */
        for (i = 0; i < k; ++i) {
            s->a[i] = s->add_n[i] * (h * h * (0.5 - bet)) + s->a_n[i] + s->ad_n[i] * h;
            s->ad[i] = s->add_n[i] * (h * (1.0 - gam)) + s->ad_n[i];
        }
        for (i = 0; i < k * k; ++i)
            s->S[i] = s->C_R[i] * (gam * h) + s->M_R[i] + s->K_R[i] * (bet * h * h);
        mv(s->C_R, s->ad, s->rk2, k, k);
        for (i = 0; i < k; ++i) s->rk[i] -= s->rk2[i];
        mv(s->K_R, s->a, s->rk2, k, k);
        for (i = 0; i < k; ++i) s->rk[i] -= s->rk2[i];                    /* Eq. 52 with predictors */
        if (k == 1) {
            double d = s->S[0];
            if (d == 0.0 || d != d) {
                fail_set(fail, SG_FAIL_SINGULAR_REDUCED, t1, it);
                fail->k = k;
                return SG_FAILED;
            }
            s->add[0] = s->rk[0] / d;
        } else if (k > 1) {
            memcpy(s->add, s->rk, sizeof(double) * (size_t)k);
            if (lu_solve(s->S, s->add, k, s->ipiv)) {
                fail_set(fail, SG_FAIL_SINGULAR_REDUCED, t1, it);
                fail->k = k;
                return SG_FAILED;
            }
        }
        for (i = 0; i < k; ++i) {
            s->a[i] += s->add[i] * (bet * h * h);                         /* Newmark: alpha(t+h) */
            s->ad[i] += s->add[i] * (gam * h);
        }
        if (sym) {
            /* symmetric chart: (alpha, alpha_d, alpha_dd) at t + h from the 3k x 3k system on N_s
             * instead of steps 4-5, whose result it replaces (as nullspace.py: they still run, so
             * that a singular reduced matrix fails the step in both) */
            if (chart_basis(s, k, t1, it, fail) < 0 || chart_solve(s, x, xd, xdd, t1, it, fail) < 0)
                return SG_FAILED;
        }

        /* 6. recover x, xd, xdd (Eqs. 34, 38, 45) and lambda (Eq. 51) */
        save_old(s);
        mv(s->N, s->a, x0, n, k);
        for (i = 0; i < n; ++i) x0[i] += s->x_p[i];                        /* Eq. 34 */
        mv(s->N, s->ad, xd0, n, k);
        mv(s->Xd_p, s->a, s->w2, n, k);
        for (i = 0; i < n; ++i) xd0[i] = xd0[i] + s->xd_p[i] + s->w2[i];   /* Eq. 38 */
        mv(s->N, s->add, xdd0, n, k);
        mv(s->Xdd_p1, s->a, s->w2, n, k);
        for (i = 0; i < n; ++i) xdd0[i] = xdd0[i] + s->xdd_p[i] + s->w2[i];
        mv(s->X_p2, s->ad, s->w2, n, k);
        for (i = 0; i < n; ++i) xdd0[i] += s->w2[i];                      /* Eq. 45 */
        if (m) {
            kmv(s->pM, s->M, xdd0, s->rhs, n, n);
            for (i = 0; i < n; ++i) s->rhs[i] -= s->f[i];
            if (!mdl->C_is_zero) {
                for (i = 0; i < n; ++i) s->w[i] = xd0[i] - s->xd_old[i];
                kmv(s->pM, s->C, s->w, s->w2, n, n);
                for (i = 0; i < n; ++i) s->rhs[i] += s->w2[i];
            }
            for (i = 0; i < n; ++i) s->w[i] = x0[i] - s->x_old[i];
            kmv(s->pM, s->K, s->w, s->w2, n, n);
            for (i = 0; i < n; ++i) s->rhs[i] += s->w2[i];
            hpT_apply(s, s->rhs, lam0);                                    /* Eq. 51 */
        }
        upd = update_norm(s);
        if (!sg_isfinite(upd)) {
            fail_set(fail, SG_FAIL_NONFINITE_UPDATE, t1, it + 1);
            return SG_DIVERGED;
        }
    }
    return SG_FAILED;   /* unreachable */
}

/* ---------------------------------------------------------------------------------------------
 * index3.py: Index3Stepper
 * ------------------------------------------------------------------------------------------- */

/* numpy.linalg.lstsq(A, b, rcond=None): the minimum-norm least-squares solution, singular values
 * <= eps max(N) s_max counting as zero, from a one-sided Jacobi SVD (Hestenes, jacobi_rotate):
 * A = U V^T with the singular values the column norms of U.  A (N x N, row-major) is left alone;
 * the solution overwrites b. */
static void lstsq_min_norm(sg_stepper *s, const double *A, double *b, int N)
{
    double *U = s->Ls, *V = s->Ls + (size_t)N * N, *sv = s->Lw, *y = s->Lw + N;
    int i, j, l;
    double smax = 0.0, cut;
    /* column-major U = A, V = I */
    for (i = 0; i < N; ++i)
        for (j = 0; j < N; ++j) {
            U[(size_t)j * N + i] = A[(size_t)i * N + j];
            V[(size_t)j * N + i] = (i == j) ? 1.0 : 0.0;
        }
    jacobi_rotate(U, V, N);
    for (j = 0; j < N; ++j) {
        double v = 0.0;
        for (l = 0; l < N; ++l) v += U[(size_t)j * N + l] * U[(size_t)j * N + l];
        sv[j] = sqrt(v);
        if (sv[j] > smax) smax = sv[j];
    }
    cut = SG_EPS * N * smax;
    for (i = 0; i < N; ++i) y[i] = 0.0;
    for (j = 0; j < N; ++j) {
        double c = 0.0;
        if (!(sv[j] > cut)) continue;
        for (l = 0; l < N; ++l) c += U[(size_t)j * N + l] * b[l];
        c /= sv[j] * sv[j];
        for (l = 0; l < N; ++l) y[l] += c * V[(size_t)j * N + l];
    }
    memcpy(b, y, sizeof(double) * (size_t)N);
}

static double omega_at(sg_stepper *s, const double *p, double t1)
{
    /* linalg.py omega_at with the constraint outputs of the accepted state already in s->q.. */
    if (lin_factor(s, s->H) < 0) return NAN;
    lin_solve(s, NULL, NULL);
    s->mdl->dynamics(t1, s->x, s->xd, s->xdd, s->lam, p, s->M, s->f, s->K, s->C);
    lin_reduce(s, 0);
    return sg_omega_from(s->k, s->M_R, s->K_R, s->om_work);
}

/* index3.py _decide_rank: redundant (rank < m) rows make the bordered matrix singular, so the
 * Newton steps become least-squares solves; a failed factorization counts as redundant. */
static void i3_decide_rank(sg_stepper *s)
{
    if (lin_factor(s, s->H) < 0) {
        s->redundant = 1;
        return;
    }
    s->redundant = s->rank < s->m;
    if (s->rank < s->min_rank) s->min_rank = s->rank;
    if (s->rank > s->max_rank) s->max_rank = s->rank;
}

static int step_index3(sg_stepper *s, const double *p, double t, int *iters, sg_failure *fail)
{
    const sg_model *mdl = s->mdl;
    int n = s->n, m = s->m, N = n + m, it, i, j;
    double h = s->o.h, gam = s->o.gamma, bet = s->o.beta, alH = s->o.alpha, t1 = t + h;
    double upd = HUGE_VAL;
    double *A = s->Ab, *b = s->bb, *d = s->db;
    for (it = 0; it <= s->o.max_iter; ++it) {
        double rq;
        int ok;
        mdl->constraints(t1, s->x, s->xd, s->xdd, p, s->q, s->H, s->qd, s->Hd, s->qdd, s->Hdd);
        if (s->o.convergence && it == 0 && m) {
            i3_decide_rank(s);                               /* rank at this step's predictor */
            s->redundant_steps += s->redundant;
            if (s->rank > 0) {
                s->i3_smax = fabs(s->A[0]);
                s->i3_smin = fabs(s->A[(size_t)(s->rank - 1) * n + (s->rank - 1)]);
            } else {
                s->i3_smax = s->i3_smin = 0.0;
            }
        }
        rq = m ? norm2(s->q, m) : 0.0;
        if (!(sg_isfinite(rq) && sg_isfinite(it ? upd : 0.0))) {
            fail_set(fail, SG_FAIL_I3_NONFINITE, t1, it);
            return SG_DIVERGED;
        }
        ok = it > 0 && rq <= s->o.constraint_tol && sg_converged(s, upd);
        if (s->o.convergence && !ok && it > 0 && rq <= s->o.constraint_tol
                && (sg_may_be_at_floor(s, upd) || it == s->o.max_iter)) {
            /* kappa of H at the predictor, H_dot and H_ddot at the iterate */
            if (m)
                sg_floor(s, s->x, s->xd, s->xdd, s->i3_smax, s->i3_smin, norm2(s->Hd, m * n),
                         norm2(s->Hdd, m * n));
            else
                sg_floor(s, s->x, s->xd, s->xdd, 0.0, 0.0, 0.0, 0.0);
            ok = sg_at_floor(s, t1);
        }
        if (ok) {
            if (m) {
                s->res[0] = norm2(s->q, m);
                s->res[1] = norm2(s->qd, m);
                s->res[2] = norm2(s->qdd, m);
            }
            if (alH != 0.0) {
                /* (f + H^T lam)(t+h) from the equilibrium just solved */
                mv(s->M, s->xdd, s->w, n, n);
                for (i = 0; i < n; ++i) s->g_n[i] = (s->g_n[i] * alH + s->w[i]) / (1.0 + alH);
            }
            if (s->o.estimate) s->omega = omega_at(s, p, t1);
            *iters = it;
            return SG_OK;
        }
        if (it == s->o.max_iter) {
            double lm = 0.0;
            for (i = 0; i < m; ++i) {
                double v = fabs(s->lam[i]);
                if (v != v) { lm = v; break; }
                if (v > lm) lm = v;
            }
            fail_set(fail, SG_FAIL_NOT_CONVERGED, t1, it);
            fail->value0 = upd;
            fail->value1 = rq;
            fail->value2 = lm;
            fail_floor(s, fail);
            return SG_FAILED;
        }
        mdl->dynamics(t1, s->x, s->xd, s->xdd, s->lam, p, s->M, s->f, s->K, s->C);
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) {
                double c = mdl->C_is_zero ? 0.0 : s->C[(size_t)i * n + j] * (gam * h);
                double v = c + s->K[(size_t)i * n + j] * (bet * h * h);
                if (alH != 0.0) v *= 1.0 + alH;
                A[(size_t)i * N + j] = v + s->M[(size_t)i * n + j];     /* M + gh C + bh^2 K */
            }
        mv(s->M, s->xdd, b, n, n);                                      /* r1 */
        if (m) {
            for (i = 0; i < n; ++i)
                for (j = 0; j < m; ++j)
                    A[(size_t)i * N + n + j] = s->H[(size_t)j * n + i] * -(1.0 + alH);   /* -G^T */
            for (i = 0; i < m; ++i) {
                for (j = 0; j < n; ++j) A[(size_t)(n + i) * N + j] = s->H[(size_t)i * n + j];
                for (j = 0; j < m; ++j) A[(size_t)(n + i) * N + n + j] = 0.0;
            }
            mtv(s->H, s->lam, s->w, m, n);
            for (i = 0; i < n; ++i) s->w[i] += s->f[i];
        } else {
            for (i = 0; i < n; ++i) s->w[i] = s->f[i];
        }
        if (alH != 0.0) {
            for (i = 0; i < n; ++i) {
                b[i] -= s->w[i] * (1.0 + alH);                            /* M xdd - (1+a)(f + G^T lam) */
                b[i] += s->g_n[i] * alH;                                  /*   + a (f + G^T lam)(t) */
            }
        } else {
            for (i = 0; i < n; ++i) b[i] -= s->w[i];                      /* M xdd - (f + G^T lam) */
        }
        for (i = 0; i < m; ++i) b[n + i] = s->q[i] * (1.0 / (bet * h * h));   /* q / (bh^2) */
        for (i = 0; i < N; ++i) d[i] = -b[i];
        if (s->redundant) {
            lstsq_min_norm(s, A, d, N);                                  /* redundant constraints */
        } else {
            memcpy(s->Wb, A, sizeof(double) * (size_t)N * N);
            if (lu_solve(s->Wb, d, N, s->ipiv)) {                        /* Eq. 29 */
                for (i = 0; i < N; ++i) d[i] = -b[i];
                lstsq_min_norm(s, A, d, N);
            }
        }
        save_old(s);
        for (i = 0; i < n; ++i) {
            s->xdd[i] += d[i];
            s->xd[i] += d[i] * (gam * h);                                 /* Newmark velocity */
            s->x[i] += d[i] * (bet * h * h);                              /* Newmark position */
        }
        for (i = 0; i < m; ++i) s->lam[i] += d[n + i];
        upd = update_norm(s);
        {
            double ls = 0.0;
            for (i = 0; i < m; ++i) ls += s->lam[i];
            if (!(sg_isfinite(upd) && sg_isfinite(ls))) {
                fail_set(fail, SG_FAIL_NONFINITE_UPDATE, t1, it + 1);
                return SG_DIVERGED;
            }
        }
    }
    return SG_FAILED;   /* unreachable */
}

void sg_start(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
              const double *xdd, const double *lam)
{
    int n = s->n, m = s->m, i;
    if (s->o.method != SG_INDEX3) {
        /* nullspace.py start: s_min/s_max of H at the initial state (the first landing test) */
        s->over = 0;
        if (m) {
            sg_failure ignored;
            if (s->pH) sg_splin_restart(s->sp);      /* as a fresh partition (sg_consistent_state) */
            (s->pH ? s->mdl->constraints_csr : s->mdl->constraints)(t, x, xd, xdd, p, s->q, s->H,
                                                                   s->qd, s->Hd, s->qdd, s->Hdd);
            s->ratio = ns_factor(s, t, 0, &ignored) < 0 ? NAN : kept_ratio(s);
        }
        return;
    }
    s->redundant = 0;
    s->redundant_steps = 0;
    if (m) {
        s->mdl->constraints(t, x, xd, xdd, p, s->q, s->H, s->qd, s->Hd, s->qdd, s->Hdd);
        if (s->o.convergence)
            i3_decide_rank(s);
        else if (lin_factor(s, s->H) >= 0)
            s->redundant = s->rank < m;
    }
    if (s->o.alpha != 0.0) {
        s->mdl->dynamics(t, x, xd, xdd, lam, p, s->M, s->f, s->K, s->C);
        s->mdl->constraints(t, x, xd, xdd, p, s->q, s->H, s->qd, s->Hd, s->qdd, s->Hdd);
        for (i = 0; i < n; ++i) s->g_n[i] = s->f[i];
        if (m) {
            mtv(s->H, lam, s->w, m, n);
            for (i = 0; i < n; ++i) s->g_n[i] += s->w[i];
        }
    }
}

/* The constraint kernels at a state and one factorization of H, in the step's layout (dense, or
 * the CSR values of the sparse step); the factorization's k, or < 0 when it failed. */
static void at_constraints(sg_stepper *s, const double *p, double t, const double *x,
                           const double *xd, const double *xdd)
{
    (s->pH ? s->mdl->constraints_csr : s->mdl->constraints)(t, x, xd, xdd, p, s->q, s->H, s->qd,
                                                            s->Hd, s->qdd, s->Hdd);
}

static int any_factor(sg_stepper *s)
{
    return s->pH ? sp_factor(s) : lin_factor(s, s->H);
}

/* assembly.py consistent_state: project (x, xd) onto q = 0 (Gauss-Newton, minimum-norm
 * corrections, until max|q| <= 1e-13 max(1, max|x|), at most 50 iterations) and q_dot = 0, then
 * the index-1 solve xdd = xdd_p + N_H z, N_H^T M N_H z = N_H^T (f - M xdd_p), lam from
 * H^T lam = M xdd - f (least squares); project = 0 keeps x, xd.  With the step's factorization
 * (dense QR, or the sparse step's, whose partition the run then starts from: sg_start).
 * Returns 0, 1 (the positions cannot be projected) or 2 (singular reduced mass: a massless
 * degree of freedom). */
int sg_consistent_state(sg_stepper *s, const double *p, double t, double *x, double *xd,
                        double *xdd, double *lam, int project)
{
    const sg_model *mdl = s->mdl;
    int n = s->n, m = s->m, i, k, it = 0;
    for (i = 0; i < n; ++i) xdd[i] = 0.0;
    for (i = 0; i < m; ++i) lam[i] = 0.0;
    s->init_iters = 0;
    if (m && project) {
        for (it = 0; it <= 50; ++it) {
            double rq = 0.0, xm = 1.0;
            at_constraints(s, p, t, x, xd, xdd);
            for (i = 0; i < m; ++i) {
                double v = fabs(s->q[i]);
                if (v != v) { rq = v; break; }
                if (v > rq) rq = v;
            }
            if (!sg_isfinite(rq)) return 1;
            for (i = 0; i < n; ++i) if (fabs(x[i]) > xm) xm = fabs(x[i]);
            if (rq <= 1e-13 * xm) break;
            if (it == 50 || any_factor(s) < 0) return 1;
            hp_apply(s, s->q, s->w);
            for (i = 0; i < n; ++i) x[i] -= s->w[i];                 /* minimum-norm correction */
        }
        s->init_iters = it;
        at_constraints(s, p, t, x, xd, xdd);
        if (any_factor(s) < 0) return 1;
        hp_apply(s, s->qd, s->w);
        for (i = 0; i < n; ++i) xd[i] -= s->w[i];                    /* velocity correction */
    }
    if (m) {
        at_constraints(s, p, t, x, xd, xdd);
        if (any_factor(s) < 0) return 1;
        hp_apply(s, s->qdd, s->xdd_p);
        for (i = 0; i < n; ++i) s->xdd_p[i] = -s->xdd_p[i];          /* H xdd = -q_ddot(xdd = 0) */
    } else {
        lin_factor(s, s->H);
        for (i = 0; i < n; ++i) s->xdd_p[i] = 0.0;
    }
    k = s->k;
    (s->pM ? mdl->dynamics_csr : mdl->dynamics)(t, x, xd, xdd, lam, p, s->M, s->f, s->K, s->C);
    kmm(s->pM, s->M, s->N, s->MN, n, n, k);
    mtm(s->N, s->MN, s->S, n, k, k);                                 /* M_R */
    kmv(s->pM, s->M, s->xdd_p, s->w, n, n);
    for (i = 0; i < n; ++i) s->w[i] = s->f[i] - s->w[i];
    mtv(s->N, s->w, s->rk, n, k);
    if (k && lu_solve(s->S, s->rk, k, s->ipiv)) return 2;
    mv(s->N, s->rk, xdd, n, k);
    for (i = 0; i < n; ++i) xdd[i] += s->xdd_p[i];
    if (m) {
        kmv(s->pM, s->M, xdd, s->w, n, n);
        for (i = 0; i < n; ++i) s->w[i] -= s->f[i];
        hpT_apply(s, s->w, lam);                                 /* H^T lam = M xdd - f */
    }
    return 0;
}

int sg_initial_state(sg_stepper *s, const double *p, double t, double *x, double *xd,
                     double *xdd, double *lam)
{
    return sg_consistent_state(s, p, t, x, xd, xdd, lam, 1);
}

int sg_initial_iterations(const sg_stepper *s) { return s->init_iters; }
int sg_rank(const sg_stepper *s) { return s->rank; }

/* linalg.py omega_at: omega_max of the reduced system linearized at a state (NaN when H cannot
 * be factored), with the step's factorization. */
double sg_omega_at(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
                   const double *xdd, const double *lam)
{
    at_constraints(s, p, t, x, xd, xdd);
    if (any_factor(s) < 0) return NAN;
    lin_solve(s, NULL, NULL);
    (s->pM ? s->mdl->dynamics_csr : s->mdl->dynamics)(t, x, xd, xdd, lam, p, s->M, s->f, s->K,
                                                      s->C);
    lin_reduce(s, 0);
    return sg_omega_from(s->k, s->M_R, s->K_R, s->om_work);
}

/* nullspace.py NullspaceStepper.step: one step; after a landing, the steps of h/2, h, h/2 from the
 * start of the step onto it instead (_step_over; "Landings" in that module's docstring). */
int sg_step(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
            const double *xdd, const double *lam, int *iterations, sg_failure *fail)
{
    static const double frac[3] = {0.5, 1.0, 0.5};
    int n = s->n, m = s->m, over = 0, st = SG_OK, l, it;
    double h = s->o.h, ratio, *sw;
    *iterations = 0;
    if (s->o.method == SG_INDEX3) {
        predict(s, x, xd, xdd, lam);
        return step_index3(s, p, t, iterations, fail);
    }
    if (s->over) {
        s->over = 0;
        over = 1;
        t = s->ov_t;
        x = s->ov_x;
        xd = s->ov_xd;
        xdd = s->ov_xdd;
        lam = s->ov_lam;
        for (l = 0; l < 3 && st == SG_OK; ++l) {
            s->o.h = frac[l] * h;
            predict(s, x, xd, xdd, lam);
            it = 0;
            st = step_nullspace(s, p, t, x, xd, xdd, &it, fail);
            *iterations += it;
            t += s->o.h;
            memcpy(s->st_x, s->x, sizeof(double) * (size_t)n);
            memcpy(s->st_xd, s->xd, sizeof(double) * (size_t)n);
            memcpy(s->st_xdd, s->xdd, sizeof(double) * (size_t)n);
            if (m) memcpy(s->st_lam, s->lam, sizeof(double) * (size_t)m);
            x = s->st_x;
            xd = s->st_xd;
            xdd = s->st_xdd;
            lam = s->st_lam;
        }
        s->o.h = h;
    } else {        /* keep the start: the inputs may be the stepper's own state (sg_state) */
        memcpy(s->st_x, x, sizeof(double) * (size_t)n);
        memcpy(s->st_xd, xd, sizeof(double) * (size_t)n);
        memcpy(s->st_xdd, xdd, sizeof(double) * (size_t)n);
        if (m) memcpy(s->st_lam, lam, sizeof(double) * (size_t)m);
        predict(s, x, xd, xdd, lam);
        st = step_nullspace(s, p, t, x, xd, xdd, iterations, fail);
    }
    if (st != SG_OK) return st;
    ratio = kept_ratio(s);
    if (!over && ratio < SG_LANDING_RATIO && ratio < SG_LANDING_DROP * s->ratio) {
        s->over = 1;
        s->ov_t = t;
        sw = s->ov_x; s->ov_x = s->st_x; s->st_x = sw;
        sw = s->ov_xd; s->ov_xd = s->st_xd; s->st_xd = sw;
        sw = s->ov_xdd; s->ov_xdd = s->st_xdd; s->st_xdd = sw;
        sw = s->ov_lam; s->ov_lam = s->st_lam; s->st_lam = sw;
        if (s->landing_steps < SG_FLOOR_TIMES_KEPT) s->landing_times[s->landing_steps] = t + h;
        ++s->landing_steps;
    }
    s->ratio = ratio;
    return SG_OK;
}

void sg_state(const sg_stepper *s, const double **x, const double **xd, const double **xdd,
              const double **lam, const double **residuals, double *omega_max)
{
    *x = s->x;
    *xd = s->xd;
    *xdd = s->xdd;
    *lam = s->lam;
    *residuals = s->res;
    *omega_max = s->omega;
}

/* run.py _run: one step per row, the divergence checks, the recording. */
int sg_run_chunk(sg_stepper *s, const double *p, double t0, long i_start, long i_stop,
                 long row0, double *T, double *X, double *XD, double *XDD, double *LAM,
                 double *PE, double *VE, double *AE, double *OM, double *HM, long long *IT,
                 double *EK, double *EP, double *OUT, long *last, sg_failure *fail)
{
    const sg_model *mdl = s->mdl;
    int n = s->n, m = s->m, no = mdl->n_out, l;
    double h = s->o.h;
    long i;
    memset(fail, 0, sizeof *fail);
    *last = i_start;
    for (i = i_start; i < i_stop; ++i) {
        double t = t0 + (double)i * h, t1 = t0 + (double)(i + 1) * h;
        long j = i + 1;
        int iters = 0, st;
        double sum, sizes[3], big;
        int which;
        size_t r = (size_t)(i - row0), w = r + 1;      /* rows read and written */
        st = sg_step(s, p, t, X + r * n, XD + r * n, XDD + r * n, LAM + r * m, &iters, fail);
        if (st != SG_OK) {
            fail->step = j;             /* fail->t stays the stepper's t + h */
            return st;
        }
        /* divergence: non-finite values (a sum is NaN/inf if any entry is) */
        sum = 0.0;
        for (l = 0; l < n; ++l) sum += s->x[l];
        for (l = 0; l < n; ++l) sum += s->xd[l];
        for (l = 0; l < n; ++l) sum += s->xdd[l];
        for (l = 0; l < m; ++l) sum += s->lam[l];
        sum += s->res[0] + s->res[1] + s->res[2];
        if (!sg_isfinite(sum)) {
            fail_set(fail, SG_FAIL_RUN_NONFINITE, t1, iters);
            fail->step = j;
            return SG_DIVERGED;
        }
        sizes[0] = norm2(s->x, n);
        sizes[1] = h * norm2(s->xd, n);
        sizes[2] = h * h * norm2(s->xdd, n);
        big = py_max3(sizes[0], sizes[1], sizes[2]);
        if (big > s->o.divergence_bound) {
            which = sizes[0] == big ? 0 : (sizes[1] == big ? 1 : 2);
            fail_set(fail, SG_FAIL_RUN_BOUND, t1, iters);
            fail->step = j;
            fail->which = which;
            fail->value0 = big;
            return SG_DIVERGED;
        }
        T[w] = t1;
        memcpy(X + w * n, s->x, sizeof(double) * (size_t)n);
        memcpy(XD + w * n, s->xd, sizeof(double) * (size_t)n);
        memcpy(XDD + w * n, s->xdd, sizeof(double) * (size_t)n);
        if (m) memcpy(LAM + w * m, s->lam, sizeof(double) * (size_t)m);
        PE[w] = s->res[0];
        VE[w] = s->res[1];
        AE[w] = s->res[2];
        IT[w] = iters;
        if (s->o.estimate) {
            OM[w] = s->omega;
            HM[w] = sg_h_max(s->o.gamma, s->o.beta, s->omega);
        }
        mdl->energy(t1, s->x, s->xd, p, s->E);
        EK[w] = s->E[0];
        EP[w] = s->E[1];
        if (no && OUT) mdl->outputs(t1, s->x, s->xd, p, OUT + w * no);
        *last = j;
    }
    return SG_OK;
}

long sg_stalled_steps(const sg_stepper *s) { return s->stalled; }
long sg_floor_steps(const sg_stepper *s) { return s->floor_steps; }
double sg_floor_t_last(const sg_stepper *s) { return s->floor_t_last; }
long sg_redundant_steps(const sg_stepper *s) { return s->redundant_steps; }
long sg_landing_steps(const sg_stepper *s) { return s->landing_steps; }
double sg_landing_ratio(const sg_stepper *s) { return s->ratio; }

void sg_hand_back(sg_stepper *s, double ratio, double t, const double *x, const double *xd,
                  const double *xdd, const double *lam)
{
    s->ratio = ratio;
    s->over = x != NULL;
    if (!x) return;
    s->ov_t = t;
    memcpy(s->ov_x, x, sizeof(double) * (size_t)s->n);
    memcpy(s->ov_xd, xd, sizeof(double) * (size_t)s->n);
    memcpy(s->ov_xdd, xdd, sizeof(double) * (size_t)s->n);
    if (s->m) memcpy(s->ov_lam, lam, sizeof(double) * (size_t)s->m);
}

int sg_landing_times(const sg_stepper *s, double *out, int max)
{
    int i, k = s->landing_steps < max ? (int)s->landing_steps : max;
    for (i = 0; i < k && i < SG_FLOOR_TIMES_KEPT; ++i) out[i] = s->landing_times[i];
    return i;
}

int sg_floor_times(const sg_stepper *s, double *out, int max)
{
    int i, cnt = s->floor_steps < SG_FLOOR_TIMES_KEPT ? (int)s->floor_steps : SG_FLOOR_TIMES_KEPT;
    if (cnt > max) cnt = max;
    for (i = 0; i < cnt; ++i) out[i] = s->floor_times[i];
    return cnt;
}
int sg_min_rank(const sg_stepper *s) { return s->min_rank; }
int sg_max_rank(const sg_stepper *s) { return s->max_rank; }

int sg_sparse_info(const sg_stepper *s, long *counts, int *rows, int *indep, int *k)
{
    counts[0] = counts[1] = counts[2] = 0;
    *k = -1;
    return s->sp ? sg_splin_info(s->sp, counts, rows, indep, k) : -1;
}

/* ---------------------------------------------------------------------------------------------
 * allocation
 * ------------------------------------------------------------------------------------------- */
void sg_stepper_free(sg_stepper *s)
{
    if (!s) return;
    sg_splin_free(s->sp);
    free(s->M);      /* one block holds every double buffer */
    free(s->piv);    /* one block holds every int buffer */
    free(s->ch_blk); /* the symmetric chart's (chart_alloc) */
    free(s->ch_ib);
    free(s->k_blk);
    free(s);
}

/* The buffers sized by the null space's dimension k, for k <= kcap (all of them, whatever their
 * contents: the factorization that needs more fills them anew): one block, replacing the last.
 * Returns 0, or 1 when out of memory (the old block is kept). */
static int k_alloc(sg_stepper *s, int kcap)
{
    size_t n = (size_t)s->n, mm1 = s->m > 0 ? (size_t)s->m : 1, K, nK, KK, total, nb = 0;
    size_t sym = s->o.chart == SG_CHART_SYMMETRIC;
    double *blk;
    if (kcap > s->n) kcap = s->n;
    K = kcap > 0 ? (size_t)kcap : 1;
    nK = n * K;
    KK = K * K;
    total = 4 * nK + 2 * mm1 * K + (mm1 + n) * (K + 1)    /* N Xd_p Xdd_p1 X_p2, Wmk Wmk2, Wp Tp */
          + 6 * nK + 5 * KK + 8 * K + 3 * KK              /* MN.., M_R.., a_n.., om_work */
          + sym * (nK + 5 * KK + 9 * KK + 4 * K);         /* Ns, Tm NsXd NsXdd1 NsX2 Jw, A3, b3 r_R */
    blk = (double *)calloc(total, sizeof(double));
    if (!blk) return 1;
    free(s->k_blk);
    s->k_blk = blk;
    s->kcap = kcap;
#define TAKE(ptr, cnt) do { (ptr) = blk + nb; nb += (cnt); } while (0)
    TAKE(s->N, nK); TAKE(s->Xd_p, nK); TAKE(s->Xdd_p1, nK); TAKE(s->X_p2, nK);
    TAKE(s->Wmk, mm1 * K); TAKE(s->Wmk2, mm1 * K);
    TAKE(s->Wp, mm1 * (K + 1)); TAKE(s->Tp, n * (K + 1));
    TAKE(s->MN, nK); TAKE(s->CN, nK); TAKE(s->KN, nK); TAKE(s->MXd, nK); TAKE(s->CXd, nK);
    TAKE(s->MXdd, nK);
    TAKE(s->M_R, KK); TAKE(s->C_R, KK); TAKE(s->K_R, KK); TAKE(s->Wkk, KK); TAKE(s->S, KK);
    TAKE(s->a_n, K); TAKE(s->ad_n, K); TAKE(s->add_n, K); TAKE(s->a, K); TAKE(s->ad, K);
    TAKE(s->add, K); TAKE(s->rk, K); TAKE(s->rk2, K);
    TAKE(s->om_work, 3 * KK);
    if (sym) {
        TAKE(s->Ns, nK);
        TAKE(s->Tm, KK); TAKE(s->NsXd, KK); TAKE(s->NsXdd1, KK); TAKE(s->NsX2, KK);
        TAKE(s->Jw, KK); TAKE(s->A3, 9 * KK); TAKE(s->b3, 3 * K); TAKE(s->r_R, K);
    }
#undef TAKE
    return 0;
}

/* The symmetric chart's buffers that k does not size (n coordinates, m constraints; H's entries
 * e: m n, or nnz_H on the sparse step; the pivoted QR of H_s for the dense step only).  Returns 0,
 * or 1 when out of memory. */
static int chart_alloc(sg_stepper *s, size_t e, int dense)
{
    int n = s->n, mm1 = s->m > 0 ? s->m : 1;
    size_t total, nb = 0, qr = dense ? (size_t)mm1 : 0;
    double *blk;
    total = 2 * e + n + 3 * qr + (size_t)n;             /* H_n Hs x_n tau_s cn_s cw */
    blk = s->ch_blk = (double *)calloc(total + 1, sizeof(double));
    s->ch_ib = (int *)calloc((size_t)mm1 + 3 * (size_t)n + 1, sizeof(int));
    if (!s->ch_blk || !s->ch_ib) return 1;
#define TAKE(ptr, cnt) do { (ptr) = blk + nb; nb += (cnt); } while (0)
    TAKE(s->H_n, e); TAKE(s->Hs, e); TAKE(s->x_n, n);
    TAKE(s->tau_s, qr); TAKE(s->cn_s, 2 * qr); TAKE(s->cw, n);
#undef TAKE
    s->piv_s = s->ch_ib;
    s->ipiv3 = s->ch_ib + mm1;
    s->t_n = NAN;
    return 0;
}

sg_stepper *sg_stepper_new(const sg_model *model, const sg_options *o)
{
    sg_stepper *s;
    int n, m, N, mm1;
    size_t nn, total, nb, i3, sp, eH, eM, dq, dm;
    double *blk;
    int *ib;
    if (!model || !o || model->n < 0 || model->m < 0) return NULL;
    if (!(o->h > 0.0) || !(o->tol > 0.0) || !(o->constraint_tol > 0.0) || o->max_iter < 1)
        return NULL;
    if (o->method != SG_NULLSPACE && o->method != SG_INDEX3) return NULL;
    if (o->chart != SG_CHART_END && (o->chart != SG_CHART_SYMMETRIC || o->method != SG_NULLSPACE))
        return NULL;
    if (o->factorization != SG_DENSE_QR && o->factorization != SG_SPARSE) return NULL;
    s = (sg_stepper *)calloc(1, sizeof *s);
    if (!s) return NULL;
    s->mdl = model;
    s->o = *o;
    n = s->n = model->n;
    m = s->m = model->m;
    N = n + m;
    mm1 = m > 0 ? m : 1;
    nn = (size_t)n * n;
    i3 = o->method == SG_INDEX3;          /* the bordered (n + m)^2 solves of index-3 only */
    /* the sparse step: kernel outputs on the CSR patterns, none of the dense QR's buffers */
    sp = o->factorization == SG_SPARSE && o->method == SG_NULLSPACE && m > 0;
    eH = sp ? (size_t)model->nnz_H : (size_t)mm1 * n;
    eM = sp ? (size_t)model->nnz_M : nn;
    dq = !sp;                             /* the dense QR's buffers: A Q Hp B Z Y */
    dm = dq * (size_t)mm1;
    /* doubles: kernel outputs; state; the dense factorization; particular solutions; work */
    total = 3 * eM + n + 3 * (size_t)mm1 + 3 * eH                /* M f K C q H qd Hd qdd Hdd */
          + 9 * (size_t)n + mm1                                   /* x .. wn, lam */
          + dm * n + mm1 + 2 * (size_t)mm1 + dq * nn + dm * n     /* A tau cn Q Hp */
          + 3 * dm * mm1                                          /* B Z Y */
          + 6 * (size_t)n                                         /* dx_p .. x_p */
          + 2 * (size_t)mm1 + 3 * (size_t)n                       /* wm wm2 rhs w w2 */
          + i3 * ((size_t)N * N + 2 * (size_t)N + n + nn)         /* Ab bb db g_n Wnn */
          + i3 * (3 * (size_t)N * N + 4 * (size_t)N)              /* Ls Lw Wb */
          + 2 * (size_t)n + mm1                                   /* hw hw2 tauB */
          + 6 * (size_t)n + 2 * (size_t)mm1;                      /* st_* ov_* */
    blk = (double *)calloc(total + 1, sizeof(double));
    ib = (int *)calloc((size_t)mm1 + (size_t)N + 1, sizeof(int));
    if (!blk || !ib) {
        free(blk);
        free(ib);
        free(s);
        return NULL;
    }
    nb = 0;
#define TAKE(ptr, cnt) do { (ptr) = blk + nb; nb += (cnt); } while (0)
    TAKE(s->M, eM); TAKE(s->f, n); TAKE(s->K, eM); TAKE(s->C, eM);
    TAKE(s->q, mm1); TAKE(s->H, eH); TAKE(s->qd, mm1); TAKE(s->Hd, eH);
    TAKE(s->qdd, mm1); TAKE(s->Hdd, eH);
    TAKE(s->x, n); TAKE(s->xd, n); TAKE(s->xdd, n); TAKE(s->lam, mm1);
    TAKE(s->x_old, n); TAKE(s->xd_old, n); TAKE(s->xdd_old, n); TAKE(s->wt, n); TAKE(s->wn, n);
    TAKE(s->A, dm * n); TAKE(s->tau, mm1); TAKE(s->cn, 2 * (size_t)mm1); TAKE(s->Q, dq * nn);
    TAKE(s->Hp, dm * n);
    TAKE(s->B, dm * mm1); TAKE(s->Z, dm * mm1); TAKE(s->Y, dm * mm1);
    TAKE(s->dx_p, n); TAKE(s->xd_p, n); TAKE(s->xdd_p, n); TAKE(s->dxd_p, n); TAKE(s->dxdd_p, n);
    TAKE(s->x_p, n);
    TAKE(s->wm, mm1); TAKE(s->wm2, mm1); TAKE(s->rhs, n); TAKE(s->w, n); TAKE(s->w2, n);
    TAKE(s->Ab, i3 * N * N); TAKE(s->bb, i3 * N); TAKE(s->db, i3 * N); TAKE(s->g_n, i3 * n);
    TAKE(s->Wnn, i3 * nn);
    TAKE(s->Ls, i3 * 2 * N * N); TAKE(s->Lw, i3 * 4 * N); TAKE(s->Wb, i3 * N * N);
    TAKE(s->hw, n); TAKE(s->hw2, n); TAKE(s->tauB, mm1);
    TAKE(s->st_x, n); TAKE(s->st_xd, n); TAKE(s->st_xdd, n); TAKE(s->st_lam, mm1);
    TAKE(s->ov_x, n); TAKE(s->ov_xd, n); TAKE(s->ov_xdd, n); TAKE(s->ov_lam, mm1);
#undef TAKE
    s->piv = ib;
    s->ipiv = ib + mm1;
    s->upd_last = s->upd_prev = HUGE_VAL;
    s->omega = NAN;
    s->floor_t_last = NAN;
    s->ratio = NAN;
    s->floor[0] = s->floor[1] = s->floor[2] = NAN;
    s->min_rank = m;
    s->max_rank = 0;
    s->k = -1;
    /* the sparse step's k buffers first hold k = n - m (H of full row rank), and grow when a
     * factorization needs more (sp_factor) */
    if (k_alloc(s, sp ? (n > m ? n - m : 1) : n)
        || (o->chart == SG_CHART_SYMMETRIC && chart_alloc(s, eH, !sp))) {
        sg_stepper_free(s);
        return NULL;
    }
    if (sp) {
        /* the sparse step: values on the CSR patterns, sg_splin's factorization */
        s->cH.rows = m; s->cH.cols = n;
        s->cH.indptr = model->H_indptr; s->cH.indices = model->H_indices;
        s->cM.rows = n; s->cM.cols = n;
        s->cM.indptr = model->M_indptr; s->cM.indices = model->M_indices;
        s->pH = &s->cH;
        s->pM = &s->cM;
        s->sp = sg_splin_new(n, m, model->H_indptr, model->H_indices, model->col_order,
                             o->rank_tol);
        if (!s->sp) {
            sg_stepper_free(s);
            return NULL;
        }
    }
    return s;
}
