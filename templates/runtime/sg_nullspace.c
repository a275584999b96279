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
        (s->lin.pH ? mdl->constraints_csr : mdl->constraints)(t1, x0, xd0, xdd0, p, s->q, s->H, s->qd,
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
                        (s->lin.pM ? mdl->dynamics_csr : mdl->dynamics)(t1, x0, xd0, xdd0, lam0, p,
                                                                    s->M, s->f, s->K, s->C);
                        lin_reduce(s, 0);
                    }
                    s->omega = sg_omega_from(s->lin.k, s->lin.M_R, s->lin.K_R, s->lin.omega_work);
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
        k = factored ? s->lin.k : ns_factor(s, t1, it, fail);
        if (k < 0) return SG_FAILED;
        lin_solve(s, xd0, xdd0);                                          /* Eqs. 33-48 */
        for (i = 0; i < n; ++i) s->lin.x_p[i] = x0[i] + s->lin.dx_p[i];            /* Eq. 33 (corrected) */

        /* 3. linearized equilibrium at the estimate */
        (s->lin.pM ? mdl->dynamics_csr : mdl->dynamics)(t1, x0, xd0, xdd0, lam0, p, s->M, s->f, s->K,
                                                    s->C);
        lin_reduce(s, 1);                                                 /* M_R, C_R, K_R */
        kmv(s->lin.pM, s->M, s->lin.xdd_p, s->rhs, n, n);
        for (i = 0; i < n; ++i) s->rhs[i] = s->f[i] - s->rhs[i];          /* Eq. 51: f_L - M ẍ_p */
        kmv(s->lin.pM, s->K, s->lin.dx_p, s->work_n, n, n);
        for (i = 0; i < n; ++i) s->rhs[i] -= s->work_n[i];                     /* - K_L x_p */
        if (!mdl->C_is_zero) {
            kmv(s->lin.pM, s->C, s->lin.dxd_p, s->work_n, n, n);
            for (i = 0; i < n; ++i) s->rhs[i] -= s->work_n[i];                 /* - C_L ẋ_p */
        }
        mtv(s->lin.N, s->rhs, s->rhs_R, n, k);                                   /* Eq. 52: N_G^T(...) */
        if (sym) memcpy(s->ch.r_R, s->rhs_R, sizeof(double) * (size_t)k);

        /* 4. re-project the state at t onto this linearization (Eqs. 56-58) */
        for (i = 0; i < n; ++i) s->work_n[i] = x[i] - s->lin.x_p[i];
        mtv(s->lin.N, s->work_n, s->alpha_n, n, k);                                    /* Eq. 56 */
        mv(s->lin.Xd_p, s->alpha_n, s->work_n2, n, k);
        for (i = 0; i < n; ++i) s->work_n[i] = xd[i] - s->lin.xd_p[i] - s->work_n2[i];
        mtv(s->lin.N, s->work_n, s->alpha_d_n, n, k);                                   /* Eq. 57 */
        mv(s->lin.Xdd_p1, s->alpha_n, s->work_n2, n, k);
        for (i = 0; i < n; ++i) s->work_n[i] = xdd[i] - s->lin.xdd_p[i] - s->work_n2[i];
        mv(s->lin.X_p2, s->alpha_d_n, s->work_n2, n, k);
        for (i = 0; i < n; ++i) s->work_n[i] -= s->work_n2[i];
        mtv(s->lin.N, s->work_n, s->alpha_dd_n, n, k);                                  /* Eq. 58 */

        /* 5. Newmark in alpha, reduced Eq. 52 for alpha_dd(t+h) */
        for (i = 0; i < k; ++i) {
            s->alpha[i] = s->alpha_dd_n[i] * (h * h * (0.5 - bet)) + s->alpha_n[i] + s->alpha_d_n[i] * h;
            s->alpha_d[i] = s->alpha_dd_n[i] * (h * (1.0 - gam)) + s->alpha_d_n[i];
        }
        for (i = 0; i < k * k; ++i)
            s->S[i] = s->lin.C_R[i] * (gam * h) + s->lin.M_R[i] + s->lin.K_R[i] * (bet * h * h);
        mv(s->lin.C_R, s->alpha_d, s->work_k, k, k);
        for (i = 0; i < k; ++i) s->rhs_R[i] -= s->work_k[i];
        mv(s->lin.K_R, s->alpha, s->work_k, k, k);
        for (i = 0; i < k; ++i) s->rhs_R[i] -= s->work_k[i];                    /* Eq. 52 with predictors */
        if (k == 1) {
            double d = s->S[0];
            if (d == 0.0 || d != d) {
                fail_set(fail, SG_FAIL_SINGULAR_REDUCED, t1, it);
                fail->k = k;
                return SG_FAILED;
            }
            s->alpha_dd[0] = s->rhs_R[0] / d;
        } else if (k > 1) {
            memcpy(s->alpha_dd, s->rhs_R, sizeof(double) * (size_t)k);
            if (lu_solve(s->S, s->alpha_dd, k, s->ipiv)) {
                fail_set(fail, SG_FAIL_SINGULAR_REDUCED, t1, it);
                fail->k = k;
                return SG_FAILED;
            }
        }
        for (i = 0; i < k; ++i) {
            s->alpha[i] += s->alpha_dd[i] * (bet * h * h);                         /* Newmark: alpha(t+h) */
            s->alpha_d[i] += s->alpha_dd[i] * (gam * h);
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
        mv(s->lin.N, s->alpha, x0, n, k);
        for (i = 0; i < n; ++i) x0[i] += s->lin.x_p[i];                        /* Eq. 34 */
        mv(s->lin.N, s->alpha_d, xd0, n, k);
        mv(s->lin.Xd_p, s->alpha, s->work_n2, n, k);
        for (i = 0; i < n; ++i) xd0[i] = xd0[i] + s->lin.xd_p[i] + s->work_n2[i];   /* Eq. 38 */
        mv(s->lin.N, s->alpha_dd, xdd0, n, k);
        mv(s->lin.Xdd_p1, s->alpha, s->work_n2, n, k);
        for (i = 0; i < n; ++i) xdd0[i] = xdd0[i] + s->lin.xdd_p[i] + s->work_n2[i];
        mv(s->lin.X_p2, s->alpha_d, s->work_n2, n, k);
        for (i = 0; i < n; ++i) xdd0[i] += s->work_n2[i];                      /* Eq. 45 */
        if (m) {
            kmv(s->lin.pM, s->M, xdd0, s->rhs, n, n);
            for (i = 0; i < n; ++i) s->rhs[i] -= s->f[i];
            if (!mdl->C_is_zero) {
                for (i = 0; i < n; ++i) s->work_n[i] = xd0[i] - s->xd_old[i];
                kmv(s->lin.pM, s->C, s->work_n, s->work_n2, n, n);
                for (i = 0; i < n; ++i) s->rhs[i] += s->work_n2[i];
            }
            for (i = 0; i < n; ++i) s->work_n[i] = x0[i] - s->x_old[i];
            kmv(s->lin.pM, s->K, s->work_n, s->work_n2, n, n);
            for (i = 0; i < n; ++i) s->rhs[i] += s->work_n2[i];
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
