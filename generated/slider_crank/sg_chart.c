/* sg_chart.c: the symmetric chart (symgen/steppers/chart.py; beyond the paper,
 * docs/symmetric-chart.md): H_n of the last accepted state, N_s of H_s = (H_n + H(t + h)) / 2 and
 * the 3k x 3k solve for (alpha, alpha_dot, alpha_ddot) that replaces the paper's Newmark in alpha.
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"

/* ---------------------------------------------------------------------------------------------
 * chart.py: the symmetric chart (beyond the paper; docs/symmetric-chart.md)
 * ------------------------------------------------------------------------------------------- */

/* SymmetricChart.H_at: H_n = H(x(t), t), kept from the state last accepted (t up to round-off),
 * else evaluated there once (the first step, or a step after one the Python fallback took). */
static void chart_H_at(sg_stepper *s, const double *p, double t, const double *x,
                       const double *xd, const double *xdd)
{
    int n = s->n, i, same = fabs(t - s->ch.t_n) <= 1e-12 * (fabs(t) > 1.0 ? fabs(t) : 1.0);
    for (i = 0; same && i < n; ++i) same = x[i] == s->ch.x_n[i];
    if (same) return;
    (s->lin.pH ? s->mdl->constraints_csr : s->mdl->constraints)(t, x, xd, xdd, p, s->q, s->ch.H_n,
                                                               s->qd,
                                                           s->Hd, s->qdd, s->Hdd);
    s->ch.t_n = t;
    memcpy(s->ch.x_n, x, sizeof(double) * (size_t)n);
}

/* The entries of H the kernels write: m n, or nnz on the sparse step's CSR pattern. */
static size_t H_entries(const sg_stepper *s)
{
    return s->lin.pH ? (size_t)s->lin.pH->indptr[s->m] : (size_t)s->n * (size_t)s->m;
}

/* SymmetricChart.accept: H of the accepted state (in s->H) is the next step's H_n. */
static void chart_accept(sg_stepper *s, double t1)
{
    s->ch.t_n = t1;
    memcpy(s->ch.x_n, s->x, sizeof(double) * (size_t)s->n);
    memcpy(s->ch.H_n, s->H, sizeof(double) * H_entries(s));
}

/* SymmetricChart.basis, null_basis(.., "qr"): N_s (n x k), the last k columns of Q in the pivoted
 * QR of H_s^T, H_s = (H_n + H(x, t + h)) / 2; k = n - rank H(x, t + h) is given.  The sparse
 * step: H_s on H's pattern, N_s from sg_splin_chart_basis on the step's partition.  Returns 0, or
 * -1 with *fail set (H_s[R, D] singular). */
static int chart_basis(sg_stepper *s, int k, double t1, int it, sg_failure *fail)
{
    int n = s->n, m = s->m, kmin = n < m ? n : m, i, j, l;
    double *v = s->ch.work_n;
    if (k == 0) return 0;
    if (s->lin.pH) {
        size_t e, nnz = H_entries(s);
        for (e = 0; e < nnz; ++e) s->ch.H_s[e] = (s->ch.H_n[e] + s->H[e]) * 0.5;
        if (sg_splin_chart_basis(s->lin.sp, s->ch.H_s, s->ch.N_s) < 0) {
            fail_set(fail, SG_FAIL_CHART_SPARSE_SINGULAR, t1, it);
            return -1;
        }
        return 0;
    }
    if (m == 0) {
        for (i = 0; i < n; ++i)
            for (j = 0; j < k; ++j) s->ch.N_s[(size_t)i * k + j] = (i == n - k + j) ? 1.0 : 0.0;
        return 0;
    }
    for (i = 0; i < m * n; ++i) s->ch.H_s[i] = (s->ch.H_n[i] + s->H[i]) * 0.5;
    /* column-major H_s^T = H_s */
    householder_qr(s->ch.H_s, n, m, s->ch.tau_s, s->ch.piv_s, s->ch.cn_s);
    for (j = 0; j < k; ++j) {
        for (l = 0; l < n; ++l) v[l] = (l == n - k + j) ? 1.0 : 0.0;
        q_apply(s->ch.H_s, n, kmin, s->ch.tau_s, v);
        for (i = 0; i < n; ++i) s->ch.N_s[(size_t)i * k + j] = v[i];
    }
    return 0;
}

/* solve_chart_step: (alpha, alpha_dot, alpha_ddot) at t + h into s->alpha, s->alpha_d, s->alpha_dd
 * from the 3k x 3k system in the scaled unknowns (alpha, h alpha_dot, h^2 alpha_ddot), T = N_s^T N_H:
 *   [ h^2 K_R                    h C_R              M_R    ]   [ h^2 r ]
 *   [ T - bh^2 N_s^T Xdd_p1      -bh N_s^T X_p2     -b T   ] = [ b_x   ]   (N_s^T R_x = 0)
 *   [ hN_s^T Xd_p - gh^2 ..Xdd_p1  T - gh N_s^T X_p2  -g T   ]   [ h b_v ]   (N_s^T R_v = 0)
 * with r = N_H^T rhs of Eq. 52 (s->ch.r_R) and x, xd, xdd the state at t.  Returns 0, or -1 with
 * *fail set (T or the system singular). */
static int chart_solve(sg_stepper *s, const double *x, const double *xd, const double *xdd,
                       double t1, int it, sg_failure *fail)
{
    int n = s->n, k = s->lin.k, K3 = 3 * s->lin.k, i, j;
    double h = s->o.h, gam = s->o.gamma, bet = s->o.beta, hh = h * h, smin;
    double *T = s->ch.T, *A = s->ch.A3, *b = s->ch.b3, *w = s->ch.work_n;
    if (k == 0) return 0;
    mtm(s->ch.N_s, s->lin.N, T, n, k, k);                                     /* T = N_s^T N_H */
    if (k == 1) {
        smin = fabs(T[0]);
    } else {
        double *U = s->ch.jacobi_work;
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
    mtm(s->ch.N_s, s->lin.Xd_p, s->ch.NsXd, n, k, k);                            /* N_s^T Xd_p */
    mtm(s->ch.N_s, s->lin.Xdd_p1, s->ch.NsXdd1, n, k, k);                        /* N_s^T Xdd_p1 */
    mtm(s->ch.N_s, s->lin.X_p2, s->ch.NsX2, n, k, k);                            /* N_s^T X_p2 */
    for (i = 0; i < k; ++i)
        for (j = 0; j < k; ++j) {
            size_t e = (size_t)i * k + j;
            double *r1 = A + (size_t)i * K3 + j, *r2 = A + (size_t)(k + i) * K3 + j;
            double *r3 = A + (size_t)(2 * k + i) * K3 + j;
            /* row 1: Eq. 52, M_R alpha_dd + C_R alpha_d + K_R alpha = r, times h^2 */
            r1[0] = hh * s->lin.K_R[e];
            r1[k] = h * s->lin.C_R[e];
            r1[2 * k] = s->lin.M_R[e];
            /* row 2: N_s^T R_x = 0 */
            r2[0] = T[e] - bet * hh * s->ch.NsXdd1[e];
            r2[k] = -bet * h * s->ch.NsX2[e];
            r2[2 * k] = -bet * T[e];
            /* row 3: N_s^T R_v = 0, times h */
            r3[0] = h * (s->ch.NsXd[e] - gam * h * s->ch.NsXdd1[e]);
            r3[k] = T[e] - gam * h * s->ch.NsX2[e];
            r3[2 * k] = -gam * T[e];
        }
    for (i = 0; i < k; ++i) b[i] = hh * s->ch.r_R[i];
    for (i = 0; i < n; ++i)
        w[i] = x[i] + h * xd[i] + hh * (0.5 - bet) * xdd[i] - s->lin.x_p[i]
               + bet * hh * s->lin.xdd_p[i];
    mtv(s->ch.N_s, w, b + k, n, k);
    for (i = 0; i < n; ++i)
        w[i] = xd[i] + h * (1.0 - gam) * xdd[i] - s->lin.xd_p[i] + gam * h * s->lin.xdd_p[i];
    mtv(s->ch.N_s, w, b + 2 * k, n, k);
    for (i = 0; i < k; ++i) b[2 * k + i] *= h;
    if (lu_solve(A, b, K3, s->ch.ipiv3)) {
        fail_set(fail, SG_FAIL_CHART_SINGULAR, t1, it);
        fail->k = k;
        return -1;
    }
    for (i = 0; i < k; ++i) {
        s->alpha[i] = b[i];
        s->alpha_d[i] = b[k + i] * (1.0 / h);
        s->alpha_dd[i] = b[2 * k + i] * (1.0 / hh);
    }
    return 0;
}
