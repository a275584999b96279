/* sg_alloc.c: creating and freeing a stepper: the options' check, one block of doubles and one
 * of ints for the buffers every step uses, the buffers sized by the null space's dimension
 * (k_alloc; grown by the sparse step) and the symmetric chart's (chart_alloc).
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"

/* ---------------------------------------------------------------------------------------------
 * allocation
 * ------------------------------------------------------------------------------------------- */
void sg_stepper_free(sg_stepper *s)
{
    if (!s) return;
    sg_splin_free(s->lin.sp);
    free(s->M);      /* one block holds every double buffer */
    free(s->lin.piv);    /* one block holds every int buffer */
    free(s->ch.blk); /* the symmetric chart's (chart_alloc) */
    free(s->ch.ib);
    free(s->lin.k_blk);
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
    total = 4 * nK + 2 * mm1 * K + (mm1 + n) * (K + 1)    /* N Xd_p Xdd_p1 X_p2, work_mk*, pair_* */
          + 6 * nK + 5 * KK + 8 * K + 3 * KK              /* MN.., M_R.., a_n.., om_work */
          + sym * (nK + 5 * KK + 9 * KK + 4 * K);       /* Ns, Tm NsXd NsXdd1 NsX2 Jw, A3, b3 r_R */
    blk = (double *)calloc(total, sizeof(double));
    if (!blk) return 1;
    free(s->lin.k_blk);
    s->lin.k_blk = blk;
    s->lin.kcap = kcap;
#define TAKE(ptr, cnt) do { (ptr) = blk + nb; nb += (cnt); } while (0)
    TAKE(s->lin.N, nK); TAKE(s->lin.Xd_p, nK); TAKE(s->lin.Xdd_p1, nK); TAKE(s->lin.X_p2, nK);
    TAKE(s->lin.work_mk, mm1 * K); TAKE(s->lin.work_mk2, mm1 * K);
    TAKE(s->lin.pair_in, mm1 * (K + 1)); TAKE(s->lin.pair_out, n * (K + 1));
    TAKE(s->lin.MN, nK); TAKE(s->lin.CN, nK); TAKE(s->lin.KN, nK); TAKE(s->lin.MXd, nK);
    TAKE(s->lin.CXd, nK);
    TAKE(s->lin.MXdd, nK);
    TAKE(s->lin.M_R, KK); TAKE(s->lin.C_R, KK); TAKE(s->lin.K_R, KK); TAKE(s->lin.work_kk, KK);
    TAKE(s->S, KK);
    TAKE(s->alpha_n, K); TAKE(s->alpha_d_n, K); TAKE(s->alpha_dd_n, K);
    TAKE(s->alpha, K); TAKE(s->alpha_d, K);
    TAKE(s->alpha_dd, K); TAKE(s->rhs_R, K); TAKE(s->work_k, K);
    TAKE(s->lin.omega_work, 3 * KK);
    if (sym) {
        TAKE(s->ch.N_s, nK);
        TAKE(s->ch.T, KK); TAKE(s->ch.NsXd, KK); TAKE(s->ch.NsXdd1, KK); TAKE(s->ch.NsX2, KK);
        TAKE(s->ch.jacobi_work, KK); TAKE(s->ch.A3, 9 * KK); TAKE(s->ch.b3, 3 * K);
        TAKE(s->ch.r_R, K);
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
    blk = s->ch.blk = (double *)calloc(total + 1, sizeof(double));
    s->ch.ib = (int *)calloc((size_t)mm1 + 3 * (size_t)n + 1, sizeof(int));
    if (!s->ch.blk || !s->ch.ib) return 1;
#define TAKE(ptr, cnt) do { (ptr) = blk + nb; nb += (cnt); } while (0)
    TAKE(s->ch.H_n, e); TAKE(s->ch.H_s, e); TAKE(s->ch.x_n, n);
    TAKE(s->ch.tau_s, qr); TAKE(s->ch.cn_s, 2 * qr); TAKE(s->ch.work_n, n);
#undef TAKE
    s->ch.piv_s = s->ch.ib;
    s->ch.ipiv3 = s->ch.ib + mm1;
    s->ch.t_n = NAN;
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
          + 7 * (size_t)n + mm1                                   /* x .. wt, lam */
          + dm * n + mm1 + 2 * (size_t)mm1 + dq * nn + dm * n     /* A tau cn Q Hp */
          + 3 * dm * mm1                                          /* B Z Y */
          + 5 * (size_t)n                                         /* lin: dx_p .. x_p */
          + 2 * (size_t)mm1 + 3 * (size_t)n                      /* lin.work_m(2), rhs, work_n(2) */
          + i3 * ((size_t)N * N + 2 * (size_t)N + n)              /* i3: A r d g_n */
          + i3 * (3 * (size_t)N * N + 4 * (size_t)N)              /* i3: svd_UV svd_work A_lu */
          + 2 * (size_t)n + mm1                                   /* lin: work_n work_n2 tauB */
          + 6 * (size_t)n + 2 * (size_t)mm1;                      /* ov: start_*, x .. lam */
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
    TAKE(s->x_old, n); TAKE(s->xd_old, n); TAKE(s->xdd_old, n); TAKE(s->wt, n);
    TAKE(s->lin.A, dm * n); TAKE(s->lin.tau, mm1); TAKE(s->lin.cn, 2 * (size_t)mm1);
    TAKE(s->lin.Q, dq * nn);
    TAKE(s->lin.Hp, dm * n);
    TAKE(s->lin.B, dm * mm1); TAKE(s->lin.Z, dm * mm1); TAKE(s->lin.Y, dm * mm1);
    TAKE(s->lin.dx_p, n); TAKE(s->lin.xd_p, n); TAKE(s->lin.xdd_p, n); TAKE(s->lin.dxd_p, n);
    TAKE(s->lin.x_p, n);
    TAKE(s->lin.work_m, mm1); TAKE(s->lin.work_m2, mm1);
    TAKE(s->rhs, n); TAKE(s->work_n, n); TAKE(s->work_n2, n);
    TAKE(s->i3.A, i3 * N * N); TAKE(s->i3.r, i3 * N); TAKE(s->i3.d, i3 * N);
    TAKE(s->i3.g_n, i3 * n);
    TAKE(s->i3.svd_UV, i3 * 2 * N * N); TAKE(s->i3.svd_work, i3 * 4 * N);
    TAKE(s->i3.A_lu, i3 * N * N);
    TAKE(s->lin.work_n, n); TAKE(s->lin.work_n2, n); TAKE(s->lin.tauB, mm1);
    TAKE(s->ov.start_x, n); TAKE(s->ov.start_xd, n); TAKE(s->ov.start_xdd, n);
    TAKE(s->ov.start_lam, mm1);
    TAKE(s->ov.x, n); TAKE(s->ov.xd, n); TAKE(s->ov.xdd, n); TAKE(s->ov.lam, mm1);
#undef TAKE
    s->lin.piv = ib;
    s->ipiv = ib + mm1;
    s->upd_last = s->upd_prev = HUGE_VAL;
    s->omega = NAN;
    s->stats.floor_t_last = NAN;
    s->ov.ratio = NAN;
    s->floor[0] = s->floor[1] = s->floor[2] = NAN;
    s->stats.min_rank = m;
    s->stats.max_rank = 0;
    s->lin.k = -1;
    /* the sparse step's k buffers first hold k = n - m (H of full row rank), and grow when a
     * factorization needs more (sp_factor) */
    if (k_alloc(s, sp ? (n > m ? n - m : 1) : n)
        || (o->chart == SG_CHART_SYMMETRIC && chart_alloc(s, eH, !sp))) {
        sg_stepper_free(s);
        return NULL;
    }
    if (sp) {
        /* the sparse step: values on the CSR patterns, sg_splin's factorization */
        s->lin.cH.rows = m; s->lin.cH.cols = n;
        s->lin.cH.indptr = model->H_indptr; s->lin.cH.indices = model->H_indices;
        s->lin.cM.rows = n; s->lin.cM.cols = n;
        s->lin.cM.indptr = model->M_indptr; s->lin.cM.indices = model->M_indices;
        s->lin.pH = &s->lin.cH;
        s->lin.pM = &s->lin.cM;
        s->lin.sp = sg_splin_new(n, m, model->H_indptr, model->H_indices, model->col_order,
                             o->rank_tol);
        if (!s->lin.sp) {
            sg_stepper_free(s);
            return NULL;
        }
    }
    return s;
}
