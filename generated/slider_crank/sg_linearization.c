/* sg_linearization.c: the linearization of the null-space step (symgen/steppers/linalg.py and,
 * with factorization = SG_SPARSE, sparse.py): one factorization of H at the iterate gives its
 * rank, N_H and H^+ (dense: pivoted QR of H^T; sparse: sg_splin of symgen_sparse.c), the
 * particular solutions (Eqs. 33-48), the reduced matrices M_R, C_R, K_R (Eq. 52) and omega_max.
 * The kernel outputs are dense or values on CSR patterns (kmv/kmm choose).
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"

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

/* ---------------------------------------------------------------------------------------------
 * linalg.py: Linearization
 * ------------------------------------------------------------------------------------------- */

/* _factor_qr: H^T Pi = Q R; rank r = #{|R_ii| > rank_tol |R_00|}; N_H = Q[:, r:];
 * H^+ = Q_1 (R_1^T)^+ Pi^T.  Returns k = n - r, or -1 when H has non-finite entries. */
static int lin_factor(sg_stepper *s, const double *H)
{
    sg_lin *L = &s->lin;
    int n = s->n, m = s->m, kmin = n < m ? n : m;
    int i, j, l, r, k;
    double d0;
    if (m == 0) {
        L->rank = 0;
        L->k = n;
        for (i = 0; i < n * n; ++i) L->N[i] = 0.0;
        for (i = 0; i < n; ++i) L->N[(size_t)i * n + i] = 1.0;
        return n;
    }
    for (i = 0; i < n * m; ++i)
        if (!sg_isfinite(H[i])) return -1;
    memcpy(L->A, H, sizeof(double) * (size_t)n * m);   /* column-major H^T = row-major H */
    householder_qr(L->A, n, m, L->tau, L->piv, L->cn);
    d0 = kmin ? fabs(L->A[0]) : 0.0;
    r = 0;
    if (d0 > 0.0)
        for (i = 0; i < kmin; ++i)
            if (fabs(L->A[(size_t)i * n + i]) > s->o.rank_tol * d0) ++r;
    L->rank = r;
    k = n - r;
    L->k = k;
    L->implicit = (r == m) ? 1 : (r > 0 ? 2 : 0);
    if (L->implicit == 2) {
        /* redundant rows: R_1^T (m x r) = Q' R', (R_1^T)^+ = R'^-1 Q'^T[:r, :] (hp_apply) */
        double *B = L->B;
        for (j = 0; j < r; ++j)                 /* column j of R_1^T = row j of R_1 */
            for (l = 0; l < m; ++l) B[(size_t)j * m + l] = (l >= j) ? L->A[(size_t)l * n + j] : 0.0;
        householder_qr(B, m, r, L->tauB, NULL, NULL);
    }
    if (L->implicit) {
        /* N_H = Q[:, r:] = H_0 ... H_{kmin-1} e_{r+j}; H^+ stays implicit (hp_apply) */
        double *v = L->work_n;
        for (j = 0; j < k; ++j) {
            for (l = 0; l < n; ++l) v[l] = (l == r + j) ? 1.0 : 0.0;
            q_apply(L->A, n, kmin, L->tau, v);
            for (i = 0; i < n; ++i) L->N[(size_t)i * k + j] = v[i];
        }
        return k;
    }
    householder_q(L->A, n, kmin, L->tau, L->Q);
    for (i = 0; i < n; ++i)
        for (j = 0; j < k; ++j) L->N[(size_t)i * k + j] = L->Q[(size_t)i * n + r + j];   /* N_H */
    /* Y = (R_1^T)^+ (r x m), R_1 = R[:r, :] in pivoted column order: R[i][j] = A[j*n + i] */
    if (r == m) {
        /* R_1^T Y = I by forward substitution */
        for (j = 0; j < m; ++j)
            for (l = 0; l < m; ++l) {
                double v = (l == j) ? 1.0 : 0.0;
                for (i = 0; i < l; ++i) v -= L->A[(size_t)l * n + i] * L->Y[(size_t)i * m + j];
                L->Y[(size_t)l * m + j] = v / L->A[(size_t)l * n + l];
            }
    } else if (r > 0) {
        /* R_1^T (m x r) = Q' R': (R_1^T)^+ = R'^-1 Q'^T[:r, :] (full column rank r) */
        double *B = L->B, *z = L->Z;
        for (j = 0; j < r; ++j)                 /* column j of R_1^T = row j of R_1 */
            for (l = 0; l < m; ++l) B[(size_t)j * m + l] = (l >= j) ? L->A[(size_t)l * n + j] : 0.0;
        householder_qr(B, m, r, L->work_m, NULL, NULL);
        for (j = 0; j < m; ++j) {
            for (l = 0; l < m; ++l) z[l] = (l == j) ? 1.0 : 0.0;
            householder_qt(B, m, r, L->work_m, z);
            for (i = r - 1; i >= 0; --i) {
                double v = z[i];
                for (l = i + 1; l < r; ++l) v -= B[(size_t)l * m + i] * z[l];
                z[i] = v / B[(size_t)i * m + i];
            }
            for (i = 0; i < r; ++i) L->Y[(size_t)i * m + j] = z[i];
        }
    }
    /* H^+[:, piv[j]] = Q_1 Y[:, j] */
    for (i = 0; i < n; ++i)
        for (j = 0; j < m; ++j) {
            double v = 0.0;
            for (l = 0; l < r; ++l) v += L->Q[(size_t)i * n + l] * L->Y[(size_t)l * m + j];
            L->Hp[(size_t)i * m + L->piv[j]] = v;
        }
    return k;
}

/* out = H^+ v (v: m, out: n), applied through the reflectors: full row rank H^+ = Q_1 R_1^-T Pi^T,
 * redundant rows H^+ = Q_1 R'^-1 Q'^T Pi^T (R_1^T = Q' R'); rank 0: the H^+ = 0 of lin_factor. */
static void hp_apply(sg_stepper *s, const double *v, double *out)
{
    sg_lin *L = &s->lin;
    int n = s->n, m = s->m, i, l;
    const double *A = L->A;
    if (L->pH) {
        sg_splin_pinv(L->sp, v, 1, out);                 /* the sparse step's H~^+ */
        return;
    }
    if (!L->implicit) {
        mv(L->Hp, v, out, n, m);
        return;
    }
    if (L->implicit == 2) {
        int r = L->rank, kmin = n < m ? n : m;
        double *z = L->Z;
        for (l = 0; l < m; ++l) z[l] = v[L->piv[l]];
        householder_qt(L->B, m, r, L->tauB, z);
        for (i = r - 1; i >= 0; --i) {        /* R' y = (Q'^T Pi^T v)[:r] */
            double u = z[i];
            for (l = i + 1; l < r; ++l) u -= L->B[(size_t)l * m + i] * z[l];
            z[i] = u / L->B[(size_t)i * m + i];
        }
        for (l = 0; l < n; ++l) out[l] = l < r ? z[l] : 0.0;
        q_apply(A, n, kmin, L->tau, out);
        return;
    }
    for (l = 0; l < m; ++l) {                 /* R_1^T z = Pi^T v (R[i][l] = A[l*n + i]) */
        double z = v[L->piv[l]];
        for (i = 0; i < l; ++i) z -= A[(size_t)l * n + i] * out[i];
        out[l] = z / A[(size_t)l * n + l];
    }
    for (l = m; l < n; ++l) out[l] = 0.0;
    q_apply(A, n, m, L->tau, out);
}

/* out = H^+T v (v: n, out: m) = Pi R_1^-1 Q_1^T v. */
static void hpT_apply(sg_stepper *s, const double *v, double *out)
{
    sg_lin *L = &s->lin;
    int n = s->n, m = s->m, i, l;
    const double *A = L->A;
    double *y = L->work_n;
    if (L->pH) {
        sg_splin_pinv_t(L->sp, v, out);                  /* the sparse step's H~^+T */
        return;
    }
    if (!L->implicit) {
        mtv(L->Hp, v, out, n, m);
        return;
    }
    if (L->implicit == 2) {
        int r = L->rank, kmin = n < m ? n : m;
        double *w = L->Z;
        memcpy(y, v, sizeof(double) * (size_t)n);
        householder_qt(A, n, kmin, L->tau, y);
        for (i = 0; i < r; ++i) {             /* R'^T u = (Q^T v)[:r] */
            double u = y[i];
            for (l = 0; l < i; ++l) u -= L->B[(size_t)i * m + l] * w[l];
            w[i] = u / L->B[(size_t)i * m + i];
        }
        for (l = r; l < m; ++l) w[l] = 0.0;
        q_apply(L->B, m, r, L->tauB, w);
        for (l = 0; l < m; ++l) out[L->piv[l]] = w[l];
        return;
    }
    memcpy(y, v, sizeof(double) * (size_t)n);
    householder_qt(A, n, m, L->tau, y);
    for (l = m - 1; l >= 0; --l) {            /* R_1 u = y[:m] */
        double u = y[l];
        for (i = l + 1; i < m; ++i) u -= A[(size_t)i * n + l] * y[i];
        y[l] = u / A[(size_t)l * n + l];
    }
    for (l = 0; l < m; ++l) out[L->piv[l]] = y[l];
}

/* Out = H^+ W for W m x k (row-major), Out n x k. */
static void hp_apply_mat(sg_stepper *s, const double *W, double *Out, int k)
{
    sg_lin *L = &s->lin;
    int n = s->n, m = s->m, i, j;
    double *col = L->work_m2, *res = L->work_n2;
    if (L->pH) {
        sg_splin_pinv(L->sp, W, k, Out);
        return;
    }
    if (!L->implicit) {
        mm(L->Hp, W, Out, n, m, k);
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
    sg_lin *L = &s->lin;
    int n = s->n, m = s->m, i, j, c = k + 1;
    if (!v) {
        hp_apply_mat(s, W, Out, k);
        return;
    }
    if (!L->pH) {
        hp_apply(s, v, out);                  /* before hp_apply_mat (uses work_m2, maybe v) */
        hp_apply_mat(s, W, Out, k);
        return;
    }
    for (i = 0; i < m; ++i) {
        for (j = 0; j < k; ++j) L->pair_in[(size_t)i * c + j] = W[(size_t)i * k + j];
        L->pair_in[(size_t)i * c + k] = v[i];
    }
    sg_splin_pinv(L->sp, L->pair_in, c, L->pair_out);
    for (i = 0; i < n; ++i) {
        for (j = 0; j < k; ++j) Out[(size_t)i * k + j] = L->pair_out[(size_t)i * c + j];
        out[i] = L->pair_out[(size_t)i * c + k];
    }
}

/* particular(): Xd_p, Xdd_p1, X_p2 (Eqs. 40, 47, 48-49) and, unless xd0 is NULL, dx_p, xd_p, xdd_p
 * (Eqs. 33, 39, 46) with dxd_p.  The tangent part alone (xd0 NULL) is all that omega_max
 * needs (K_R of Eq. 52).  Xd_p with dx_p and Xdd_p1 with xd_p are independent: one H^+ pass
 * each. */
static void lin_solve(sg_stepper *s, const double *xd0, const double *xdd0)
{
    sg_lin *L = &s->lin;
    int n = s->n, m = s->m, k = L->k, i, p = xd0 != NULL;
    double *wm = L->work_m, *wm2 = L->work_m2;
    if (m == 0) {
        for (i = 0; i < n * k; ++i) L->Xd_p[i] = L->Xdd_p1[i] = L->X_p2[i] = 0.0;
        for (i = 0; p && i < n; ++i) {
            L->dx_p[i] = 0.0;
            L->xd_p[i] = 0.0;
            L->xdd_p[i] = 0.0;
            L->dxd_p[i] = -xd0[i];
        }
        return;
    }
    kmm(L->pH, s->Hd, L->N, L->work_mk, m, n, k);
    hp_apply_pair(s, L->work_mk, k, p ? s->q : NULL, L->Xd_p, L->dx_p);
    for (i = 0; i < n * k; ++i) L->Xd_p[i] = -L->Xd_p[i];           /* Eq. 40 */
    for (i = 0; p && i < n; ++i) L->dx_p[i] = -L->dx_p[i];   /* Eq. 33: x_p - x0 = -H^+ q */
    kmm(L->pH, s->Hd, L->Xd_p, L->work_mk, m, n, k);
    kmm(L->pH, s->Hdd, L->N, L->work_mk2, m, n, k);
    for (i = 0; i < m * k; ++i) L->work_mk[i] = -(2.0 * L->work_mk[i] + L->work_mk2[i]);
    if (p) {
        kmv(L->pH, s->Hd, L->dx_p, wm, m, n);
        for (i = 0; i < m; ++i) wm[i] += s->qd[i];
        kmv(L->pH, s->H, xd0, wm2, m, n);
        for (i = 0; i < m; ++i) wm2[i] -= wm[i];
    }
    hp_apply_pair(s, L->work_mk, k, p ? wm2 : NULL, L->Xdd_p1, L->xd_p);   /* Eqs. 47, 39 */
    for (i = 0; i < n * k; ++i) L->X_p2[i] = 2.0 * L->Xd_p[i];      /* Eqs. 48-49 */
    if (!p) return;
    for (i = 0; i < n; ++i) L->dxd_p[i] = L->xd_p[i] - xd0[i];
    kmv(L->pH, s->Hdd, L->dx_p, wm, m, n);
    kmv(L->pH, s->Hd, L->dxd_p, wm2, m, n);
    for (i = 0; i < m; ++i) wm[i] = wm[i] + 2.0 * wm2[i] + s->qdd[i];
    kmv(L->pH, s->H, xdd0, wm2, m, n);
    for (i = 0; i < m; ++i) wm2[i] -= wm[i];
    hp_apply(s, wm2, L->xdd_p);                                 /* Eq. 46 */
}

/* reduce(): M_R = N^T M N, C_R = N^T C N + 2 N^T M Xd_p, K_R = N^T K N + N^T C Xd_p
 * + N^T M Xdd_p1 (Eq. 52, N_G = N_H).  C = 0 (model flag) skips the C products; full = 0 (for
 * omega_max alone) skips C_R.  M_R and K_R are the same either way. */
static void lin_reduce(sg_stepper *s, int full)
{
    sg_lin *L = &s->lin;
    int n = s->n, k = L->k, i, cz = s->mdl->C_is_zero;
    kmm(L->pM, s->M, L->N, L->MN, n, n, k);
    kmm(L->pM, s->K, L->N, L->KN, n, n, k);
    kmm(L->pM, s->M, L->Xdd_p1, L->MXdd, n, n, k);
    mtm(L->N, L->MN, L->M_R, n, k, k);                       /* Eq. 52: N_G^T M_L N_H */
    if (full) {
        kmm(L->pM, s->M, L->Xd_p, L->MXd, n, n, k);
        mtm(L->N, L->MXd, L->work_kk, n, k, k);
        if (cz) {
            for (i = 0; i < k * k; ++i) L->C_R[i] = 2.0 * L->work_kk[i];
        } else {
            kmm(L->pM, s->C, L->N, L->CN, n, n, k);
            mtm(L->N, L->CN, L->C_R, n, k, k);
            for (i = 0; i < k * k; ++i) L->C_R[i] += 2.0 * L->work_kk[i];   /* + 2 N_G^T M_L Xd_p */
        }
    }
    mtm(L->N, L->KN, L->K_R, n, k, k);
    if (!cz) {
        kmm(L->pM, s->C, L->Xd_p, L->CXd, n, n, k);
        mtm(L->N, L->CXd, L->work_kk, n, k, k);
        for (i = 0; i < k * k; ++i) L->K_R[i] += L->work_kk[i];       /* + N_G^T C_L Xd_p */
    }
    mtm(L->N, L->MXdd, L->work_kk, n, k, k);
    for (i = 0; i < k * k; ++i) L->K_R[i] += L->work_kk[i];         /* + N_G^T M_L Xdd_p1 */
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


/* The sparse step's factorization (symgen_sparse.c sg_splin) of the values of H: rank, k and N
 * copied into the stepper (its k buffers grown when k exceeds them); -1 (non-finite H), -2
 * (singular block or degenerate basis) or -3 (out of memory). */
static int sp_factor(sg_stepper *s)
{
    sg_lin *L = &s->lin;
    int k = sg_splin_factor(L->sp, s->H);
    if (k < 0) return k;
    if (k > L->kcap && k_alloc(s, k < 2 * L->kcap ? 2 * L->kcap : k)) return -3;
    L->k = k;
    L->rank = sg_splin_rank(L->sp);
    memcpy(L->N, sg_splin_basis(L->sp), sizeof(double) * (size_t)s->n * (size_t)k);
    return k;
}
/* nullspace.py _s_ratio: s_min/s_max of the kept singular values of the last factorization
 * (QR: |R_rr| / |R_11|); NaN without constraints or rank. */
static double kept_ratio(const sg_stepper *s)
{
    const sg_lin *L = &s->lin;
    int r = L->rank;
    double d0;
    if (L->sp) {                /* the sparse step: its (s_max, s_min), as sparse.py s_range */
        double smax, smin;
        sg_splin_s_range(L->sp, &smax, &smin);
        return smax > 0.0 ? smin / smax : NAN;
    }
    if (s->m == 0 || r <= 0) return NAN;
    d0 = fabs(L->A[0]);
    return d0 > 0.0 ? fabs(L->A[(size_t)(r - 1) * s->n + (r - 1)]) / d0 : NAN;
}

/* The constraint kernels at a state and one factorization of H, in the step's layout (dense, or
 * the CSR values of the sparse step); the factorization's k, or < 0 when it failed. */
static void at_constraints(sg_stepper *s, const double *p, double t, const double *x,
                           const double *xd, const double *xdd)
{
    sg_lin *L = &s->lin;
    (L->pH ? s->mdl->constraints_csr : s->mdl->constraints)(t, x, xd, xdd, p, s->q, s->H, s->qd,
                                                            s->Hd, s->qdd, s->Hdd);
}

static int any_factor(sg_stepper *s)
{
    sg_lin *L = &s->lin;
    return L->pH ? sp_factor(s) : lin_factor(s, s->H);
}
