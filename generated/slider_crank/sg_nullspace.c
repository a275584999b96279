/* sg_nullspace.c: one Newton-iterated step of the paper's null-space method
 * (symgen/steppers/nullspace.py NullspaceStepper.step, Eqs. 32-58) from the predictor at
 * (x, xd, xdd) at t to the accepted state at t + h; its retries and step-overs are the run's.
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"


/* nullspace.py _factor: factor H at the iterate, keep the run's range of ranks; -1 (and *fail
 * set) when H has non-finite entries. */
static int ns_factor(sg_stepper *s, double t1, int it, sg_failure *fail)
{
    int k = s->lin.pH ? sp_factor(s) : lin_factor(s, s->H);
    if (k < 0) {
        fail_set(fail, k == -1 ? SG_FAIL_FACTOR_NONFINITE
                       : k == -3 ? SG_FAIL_NO_MEMORY : SG_FAIL_SPARSE_SINGULAR, t1, it);
        return -1;
    }
    if (s->lin.rank < s->stats.min_rank) s->stats.min_rank = s->lin.rank;
    if (s->lin.rank > s->stats.max_rank) s->stats.max_rank = s->lin.rank;
    return k;
}

/* ---------------------------------------------------------------------------------------------
 * nullspace.py: NullspaceStepper.step, in the steps of its Newton iteration
 * ------------------------------------------------------------------------------------------- */

/* The kernels of the step's layout (dense, or the sparse step's CSR values) at the iterate. */
static void ns_constraints(sg_stepper *s, const double *p, double t1)
{
    (s->lin.pH ? s->mdl->constraints_csr : s->mdl->constraints)(
        t1, s->x, s->xd, s->xdd, p, s->q, s->H, s->qd, s->Hd, s->qdd, s->Hdd);
}

static void ns_dynamics(sg_stepper *s, const double *p, double t1)
{
    (s->lin.pM ? s->mdl->dynamics_csr : s->mdl->dynamics)(
        t1, s->x, s->xd, s->xdd, s->lam, p, s->M, s->f, s->K, s->C);
}

/* 1. Newton's test at iterate it > 0 (constraints evaluated there; upd the last update): SG_OK
 * when accepted (residuals, omega_max, the chart's next H_n), SG_FAILED or SG_DIVERGED with *fail
 * set, or -1 to iterate on (*factored: H is factored at this iterate already). */
static int ns_test(sg_stepper *s, const double *p, double t1, int it, double upd, int *factored,
                   sg_failure *fail)
{
    int m = s->m, ok;
    double h = s->o.h, rq, rqd, rqdd, resid;
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
        *factored = 1;
        sg_floor_at(s, s->x, s->xd, s->xdd);
        ok = resid <= s->o.constraint_tol && sg_at_floor(s, t1);
    }
    if (ok) {
        s->res[0] = rq;
        s->res[1] = rqd;
        s->res[2] = rqdd;
        if (s->o.estimate) {
            if (s->o.convergence && (*factored || it < 2)) {
                /* omega_max of the reduced system linearized at the accepted state; after two or
                 * more iterations, that of the last iteration (M_R, K_R as they are), whose
                 * iterate is within the Newton tolerance of the accepted one (nullspace.py's
                 * module doc) */
                if (!*factored && ns_factor(s, t1, it, fail) < 0) return SG_FAILED;
                lin_solve(s, NULL, NULL);
                ns_dynamics(s, p, t1);
                lin_reduce(s, 0);
            }
            s->omega = sg_omega_from(s->lin.k, s->lin.M_R, s->lin.K_R, s->lin.omega_work);
        }
        if (s->o.chart == SG_CHART_SYMMETRIC) chart_accept(s, t1);      /* the next H_n */
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
    return -1;
}

/* 2.-3. One factorization of H at the iterate (N_H, H^+, particular solutions) and the
 * linearized equilibrium there: M_R, C_R, K_R and rhs_R = N_H^T (f - M xdd_p - K dx_p - C dxd_p)
 * (Eqs. 51-52).  Returns k, or -1 with *fail set. */
static int ns_linearize(sg_stepper *s, const double *p, double t1, int it, int factored,
                        sg_failure *fail)
{
    int n = s->n, i, k;
    double *rhs = s->rhs, *w = s->work_n;
    const sg_csr *pM = s->lin.pM;
    k = factored ? s->lin.k : ns_factor(s, t1, it, fail);
    if (k < 0) return -1;
    lin_solve(s, s->xd, s->xdd);                                      /* Eqs. 33-48 */
    for (i = 0; i < n; ++i) s->lin.x_p[i] = s->x[i] + s->lin.dx_p[i];   /* Eq. 33 (corrected) */
    ns_dynamics(s, p, t1);
    lin_reduce(s, 1);                                                 /* M_R, C_R, K_R */
    kmv(pM, s->M, s->lin.xdd_p, rhs, n, n);
    for (i = 0; i < n; ++i) rhs[i] = s->f[i] - rhs[i];                /* Eq. 51: f_L - M ẍ_p */
    kmv(pM, s->K, s->lin.dx_p, w, n, n);
    for (i = 0; i < n; ++i) rhs[i] -= w[i];                           /* - K_L x_p */
    if (!s->mdl->C_is_zero) {
        kmv(pM, s->C, s->lin.dxd_p, w, n, n);
        for (i = 0; i < n; ++i) rhs[i] -= w[i];                       /* - C_L ẋ_p */
    }
    mtv(s->lin.N, rhs, s->rhs_R, n, k);                               /* Eq. 52: N_G^T(...) */
    if (s->o.chart == SG_CHART_SYMMETRIC) memcpy(s->ch.r_R, s->rhs_R, sizeof(double) * (size_t)k);
    return k;
}

/* 4. Re-project the state (x, xd, xdd) at t onto this linearization (Eqs. 56-58). */
static void ns_reproject(sg_stepper *s, const double *x, const double *xd, const double *xdd,
                         int k)
{
    int n = s->n, i;
    double *w = s->work_n, *w2 = s->work_n2;
    for (i = 0; i < n; ++i) w[i] = x[i] - s->lin.x_p[i];
    mtv(s->lin.N, w, s->alpha_n, n, k);                               /* Eq. 56 */
    mv(s->lin.Xd_p, s->alpha_n, w2, n, k);
    for (i = 0; i < n; ++i) w[i] = xd[i] - s->lin.xd_p[i] - w2[i];
    mtv(s->lin.N, w, s->alpha_d_n, n, k);                             /* Eq. 57 */
    mv(s->lin.Xdd_p1, s->alpha_n, w2, n, k);
    for (i = 0; i < n; ++i) w[i] = xdd[i] - s->lin.xdd_p[i] - w2[i];
    mv(s->lin.X_p2, s->alpha_d_n, w2, n, k);
    for (i = 0; i < n; ++i) w[i] -= w2[i];
    mtv(s->lin.N, w, s->alpha_dd_n, n, k);                            /* Eq. 58 */
}

/* 5. Newmark in alpha and the reduced Eq. 52 for alpha_dd(t+h): alpha, alpha_d, alpha_dd at
 * t + h.  Returns 0, or -1 with *fail set (singular M_R + gh C_R + bh^2 K_R). */
static int ns_newmark_alpha(sg_stepper *s, double t1, int it, int k, sg_failure *fail)
{
    int i;
    double h = s->o.h, gam = s->o.gamma, bet = s->o.beta;
    const double *M_R = s->lin.M_R, *C_R = s->lin.C_R, *K_R = s->lin.K_R;
    for (i = 0; i < k; ++i) {
        s->alpha[i] = s->alpha_dd_n[i] * (h * h * (0.5 - bet)) + s->alpha_n[i]
                      + s->alpha_d_n[i] * h;
        s->alpha_d[i] = s->alpha_dd_n[i] * (h * (1.0 - gam)) + s->alpha_d_n[i];
    }
    for (i = 0; i < k * k; ++i) s->S[i] = C_R[i] * (gam * h) + M_R[i] + K_R[i] * (bet * h * h);
    mv(C_R, s->alpha_d, s->work_k, k, k);
    for (i = 0; i < k; ++i) s->rhs_R[i] -= s->work_k[i];
    mv(K_R, s->alpha, s->work_k, k, k);
    for (i = 0; i < k; ++i) s->rhs_R[i] -= s->work_k[i];            /* Eq. 52 with predictors */
    if (k == 1) {
        double d = s->S[0];
        if (d == 0.0 || d != d) {
            fail_set(fail, SG_FAIL_SINGULAR_REDUCED, t1, it);
            fail->k = k;
            return -1;
        }
        s->alpha_dd[0] = s->rhs_R[0] / d;
    } else if (k > 1) {
        memcpy(s->alpha_dd, s->rhs_R, sizeof(double) * (size_t)k);
        if (lu_solve(s->S, s->alpha_dd, k, s->ipiv)) {
            fail_set(fail, SG_FAIL_SINGULAR_REDUCED, t1, it);
            fail->k = k;
            return -1;
        }
    }
    for (i = 0; i < k; ++i) {
        s->alpha[i] += s->alpha_dd[i] * (bet * h * h);                /* Newmark: alpha(t+h) */
        s->alpha_d[i] += s->alpha_dd[i] * (gam * h);
    }
    return 0;
}

/* 6. The next iterate: x, xd, xdd from alpha (Eqs. 34, 38, 45) and lambda (Eq. 51); the
 * previous one kept in x_old, xd_old, xdd_old. */
static void ns_recover(sg_stepper *s, int k)
{
    int n = s->n, i;
    double *x1 = s->x, *xd1 = s->xd, *xdd1 = s->xdd, *rhs = s->rhs;
    double *w = s->work_n, *w2 = s->work_n2;
    const sg_csr *pM = s->lin.pM;
    save_old(s);
    mv(s->lin.N, s->alpha, x1, n, k);
    for (i = 0; i < n; ++i) x1[i] += s->lin.x_p[i];                   /* Eq. 34 */
    mv(s->lin.N, s->alpha_d, xd1, n, k);
    mv(s->lin.Xd_p, s->alpha, w2, n, k);
    for (i = 0; i < n; ++i) xd1[i] = xd1[i] + s->lin.xd_p[i] + w2[i];   /* Eq. 38 */
    mv(s->lin.N, s->alpha_dd, xdd1, n, k);
    mv(s->lin.Xdd_p1, s->alpha, w2, n, k);
    for (i = 0; i < n; ++i) xdd1[i] = xdd1[i] + s->lin.xdd_p[i] + w2[i];
    mv(s->lin.X_p2, s->alpha_d, w2, n, k);
    for (i = 0; i < n; ++i) xdd1[i] += w2[i];                         /* Eq. 45 */
    if (!s->m) return;
    kmv(pM, s->M, xdd1, rhs, n, n);
    for (i = 0; i < n; ++i) rhs[i] -= s->f[i];
    if (!s->mdl->C_is_zero) {
        for (i = 0; i < n; ++i) w[i] = xd1[i] - s->xd_old[i];
        kmv(pM, s->C, w, w2, n, n);
        for (i = 0; i < n; ++i) rhs[i] += w2[i];
    }
    for (i = 0; i < n; ++i) w[i] = x1[i] - s->x_old[i];
    kmv(pM, s->K, w, w2, n, n);
    for (i = 0; i < n; ++i) rhs[i] += w2[i];
    hpT_apply(s, rhs, s->lam);                                        /* Eq. 51 */
}

/* One step from (x, xd, xdd) at t, Newton from the predictor already in s->x, s->xd, s->xdd,
 * s->lam (predict); the accepted state is left there.  SG_OK (*iters: the iterations),
 * SG_FAILED or SG_DIVERGED with *fail set. */
static int step_nullspace(sg_stepper *s, const double *p, double t, const double *x,
                          const double *xd, const double *xdd, int *iters, sg_failure *fail)
{
    int it, k, st;
    double t1 = t + s->o.h, upd = HUGE_VAL;
    int sym = s->o.chart == SG_CHART_SYMMETRIC;
    if (sym) chart_H_at(s, p, t, x, xd, xdd);                         /* symmetric chart: H_n */
    for (it = 0; it <= s->o.max_iter; ++it) {
        int factored = 0;
        ns_constraints(s, p, t1);                       /* 1. constraints at the estimate */
        if (it > 0 && (st = ns_test(s, p, t1, it, upd, &factored, fail)) >= 0) {
            if (st == SG_OK) *iters = it;
            return st;
        }
        k = ns_linearize(s, p, t1, it, factored, fail);                /* 2.-3. */
        if (k < 0) return SG_FAILED;
        ns_reproject(s, x, xd, xdd, k);                                /* 4. */
        if (ns_newmark_alpha(s, t1, it, k, fail) < 0) return SG_FAILED;    /* 5. */
        /* symmetric chart: (alpha, alpha_d, alpha_dd) at t + h from the 3k x 3k system on N_s
         * instead of steps 4-5, whose result it replaces (as nullspace.py: they still run, so
         * that a singular reduced matrix fails the step in both) */
        if (sym && (chart_basis(s, k, t1, it, fail) < 0
                    || chart_solve(s, x, xd, xdd, t1, it, fail) < 0))
            return SG_FAILED;
        ns_recover(s, k);                                               /* 6. */
        upd = update_norm(s);
        if (!sg_isfinite(upd)) {
            fail_set(fail, SG_FAIL_NONFINITE_UPDATE, t1, it + 1);
            return SG_DIVERGED;
        }
    }
    return SG_FAILED;   /* unreachable */
}
