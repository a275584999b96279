/* sg_index3.c: one Newton-iterated step of the classical index-3 Newmark / HHT-alpha method with
 * Lagrange multipliers (symgen/steppers/index3.py; bordered Newton matrix, Eq. 29), least squares
 * when the constraints are redundant.
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"

/* ---------------------------------------------------------------------------------------------
 * index3.py: Index3Stepper
 * ------------------------------------------------------------------------------------------- */


static double omega_at(sg_stepper *s, const double *p, double t1)
{
    /* linalg.py omega_at with the constraint outputs of the accepted state already in s->q.. */
    if (lin_factor(s, s->H) < 0) return NAN;
    lin_solve(s, NULL, NULL);
    s->mdl->dynamics(t1, s->x, s->xd, s->xdd, s->lam, p, s->M, s->f, s->K, s->C);
    lin_reduce(s, 0);
    return sg_omega_from(s->lin.k, s->lin.M_R, s->lin.K_R, s->lin.omega_work);
}

/* index3.py _decide_rank: redundant (rank < m) rows make the bordered matrix singular, so the
 * Newton steps become least-squares solves; a failed factorization counts as redundant. */
static void i3_decide_rank(sg_stepper *s)
{
    if (lin_factor(s, s->H) < 0) {
        s->i3.redundant = 1;
        return;
    }
    s->i3.redundant = s->lin.rank < s->m;
    if (s->lin.rank < s->stats.min_rank) s->stats.min_rank = s->lin.rank;
    if (s->lin.rank > s->stats.max_rank) s->stats.max_rank = s->lin.rank;
}

/* The rank of H at the step's predictor and its kept |R_ii| (rule 1's kappa). */
static void i3_predictor_rank(sg_stepper *s)
{
    int n = s->n, r;
    i3_decide_rank(s);
    s->stats.redundant_steps += s->i3.redundant;
    r = s->lin.rank;
    if (r > 0) {
        s->i3.s_max = fabs(s->lin.A[0]);
        s->i3.s_min = fabs(s->lin.A[(size_t)(r - 1) * n + (r - 1)]);
    } else {
        s->i3.s_max = s->i3.s_min = 0.0;
    }
}

/* Newton's test at iterate it (constraints evaluated there; upd the last update, rq = |q|):
 * SG_OK when accepted (residuals, HHT's (f + H^T lam)(t+h), omega_max), SG_FAILED or SG_DIVERGED
 * with *fail set, or -1 to iterate on. */
static int i3_test(sg_stepper *s, const double *p, double t1, int it, double upd, double rq,
                   sg_failure *fail)
{
    int n = s->n, m = s->m, i, ok;
    double alH = s->o.alpha;
    ok = it > 0 && rq <= s->o.constraint_tol && sg_converged(s, upd);
    if (s->o.convergence && !ok && it > 0 && rq <= s->o.constraint_tol
            && (sg_may_be_at_floor(s, upd) || it == s->o.max_iter)) {
        /* kappa of H at the predictor, H_dot and H_ddot at the iterate */
        if (m)
            sg_floor(s, s->x, s->xd, s->xdd, s->i3.s_max, s->i3.s_min, norm2(s->Hd, m * n),
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
            mv(s->M, s->xdd, s->work_n, n, n);
            for (i = 0; i < n; ++i)
                s->i3.g_n[i] = (s->i3.g_n[i] * alH + s->work_n[i]) / (1.0 + alH);
        }
        if (s->o.estimate) s->omega = omega_at(s, p, t1);
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
    return -1;
}

/* The bordered Newton system at the iterate (Eq. 29): i3.A = [(1+a)(gh C + bh^2 K) + M, -(1+a) G^T;
 * G, 0] and the residual i3.r = (M xdd - (1+a)(f + G^T lam) + a (f + G^T lam)(t), q / (bh^2)). */
static void i3_assemble(sg_stepper *s, const double *p, double t1)
{
    const sg_model *mdl = s->mdl;
    int n = s->n, m = s->m, N = n + m, i, j;
    double h = s->o.h, gam = s->o.gamma, bet = s->o.beta, alH = s->o.alpha;
    double *A = s->i3.A, *b = s->i3.r, *w = s->work_n;
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
        mtv(s->H, s->lam, w, m, n);
        for (i = 0; i < n; ++i) w[i] += s->f[i];
    } else {
        for (i = 0; i < n; ++i) w[i] = s->f[i];
    }
    if (alH != 0.0) {
        for (i = 0; i < n; ++i) {
            b[i] -= w[i] * (1.0 + alH);                 /* M xdd - (1+a)(f + G^T lam) */
            b[i] += s->i3.g_n[i] * alH;                 /*   + a (f + G^T lam)(t) */
        }
    } else {
        for (i = 0; i < n; ++i) b[i] -= w[i];           /* M xdd - (f + G^T lam) */
    }
    for (i = 0; i < m; ++i) b[n + i] = s->q[i] * (1.0 / (bet * h * h));   /* q / (bh^2) */
}

/* Solve A d = -r (least squares when the constraints are redundant or the LU is singular) and
 * take the Newmark update of (x, xd, xdd, lam); returns the update norm, or NaN when it or lam is
 * not finite. */
static double i3_update(sg_stepper *s)
{
    int n = s->n, m = s->m, N = n + m, i;
    double h = s->o.h, gam = s->o.gamma, bet = s->o.beta, upd, ls = 0.0;
    double *A = s->i3.A, *b = s->i3.r, *d = s->i3.d;
    for (i = 0; i < N; ++i) d[i] = -b[i];
    if (s->i3.redundant) {
        lstsq_min_norm(A, d, N, s->i3.svd_UV, s->i3.svd_work);     /* redundant constraints */
    } else {
        memcpy(s->i3.A_lu, A, sizeof(double) * (size_t)N * N);
        if (lu_solve(s->i3.A_lu, d, N, s->ipiv)) {                  /* Eq. 29 */
            for (i = 0; i < N; ++i) d[i] = -b[i];
            lstsq_min_norm(A, d, N, s->i3.svd_UV, s->i3.svd_work);
        }
    }
    save_old(s);
    for (i = 0; i < n; ++i) {
        s->xdd[i] += d[i];
        s->xd[i] += d[i] * (gam * h);                               /* Newmark velocity */
        s->x[i] += d[i] * (bet * h * h);                            /* Newmark position */
    }
    for (i = 0; i < m; ++i) s->lam[i] += d[n + i];
    upd = update_norm(s);
    for (i = 0; i < m; ++i) ls += s->lam[i];
    return sg_isfinite(upd) && sg_isfinite(ls) ? upd : NAN;
}

/* One step from the predictor already in s->x, s->xd, s->xdd, s->lam (predict) at t; the
 * accepted state is left there.  SG_OK (*iters: the iterations), SG_FAILED or SG_DIVERGED with
 * *fail set. */
static int step_index3(sg_stepper *s, const double *p, double t, int *iters, sg_failure *fail)
{
    int m = s->m, it, st;
    double t1 = t + s->o.h, upd = HUGE_VAL, rq;
    for (it = 0; it <= s->o.max_iter; ++it) {
        s->mdl->constraints(t1, s->x, s->xd, s->xdd, p, s->q, s->H, s->qd, s->Hd, s->qdd, s->Hdd);
        if (s->o.convergence && it == 0 && m) i3_predictor_rank(s);
        rq = m ? norm2(s->q, m) : 0.0;
        if (!(sg_isfinite(rq) && sg_isfinite(it ? upd : 0.0))) {
            fail_set(fail, SG_FAIL_I3_NONFINITE, t1, it);
            return SG_DIVERGED;
        }
        if ((st = i3_test(s, p, t1, it, upd, rq, fail)) >= 0) {
            if (st == SG_OK) *iters = it;
            return st;
        }
        i3_assemble(s, p, t1);
        upd = i3_update(s);
        if (upd != upd) {
            fail_set(fail, SG_FAIL_NONFINITE_UPDATE, t1, it + 1);
            return SG_DIVERGED;
        }
    }
    return SG_FAILED;   /* unreachable */
}
