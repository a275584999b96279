/* sg_start.c: the start of a run: the consistent initial state (symgen/assembly.py
 * consistent_state), omega_max at a given state, and sg_start (the null-space step's first landing
 * reference; index3's rank and HHT's (f + H^T lam)(t0)).
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"

void sg_start(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
              const double *xdd, const double *lam)
{
    int n = s->n, m = s->m, i;
    if (s->o.method != SG_INDEX3) {
        /* nullspace.py start: s_min/s_max of H at the initial state (the first landing test) */
        s->ov.pending = 0;
        if (m) {
            sg_failure ignored;
            /* as a fresh partition (sg_consistent_state) */
            if (s->lin.pH) sg_splin_restart(s->lin.sp);
            (s->lin.pH ? s->mdl->constraints_csr : s->mdl->constraints)(
                t, x, xd, xdd, p, s->q, s->H, s->qd, s->Hd, s->qdd, s->Hdd);
            s->ov.ratio = ns_factor(s, t, 0, &ignored) < 0 ? NAN : kept_ratio(s);
        }
        return;
    }
    s->i3.redundant = 0;
    s->stats.redundant_steps = 0;
    if (m) {
        s->mdl->constraints(t, x, xd, xdd, p, s->q, s->H, s->qd, s->Hd, s->qdd, s->Hdd);
        if (s->o.convergence)
            i3_decide_rank(s);
        else if (lin_factor(s, s->H) >= 0)
            s->i3.redundant = s->lin.rank < m;
    }
    if (s->o.alpha != 0.0) {
        s->mdl->dynamics(t, x, xd, xdd, lam, p, s->M, s->f, s->K, s->C);
        s->mdl->constraints(t, x, xd, xdd, p, s->q, s->H, s->qd, s->Hd, s->qdd, s->Hdd);
        for (i = 0; i < n; ++i) s->i3.g_n[i] = s->f[i];
        if (m) {
            mtv(s->H, lam, s->work_n, m, n);
            for (i = 0; i < n; ++i) s->i3.g_n[i] += s->work_n[i];
        }
    }
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
    s->stats.init_iters = 0;
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
            hp_apply(s, s->q, s->work_n);
            for (i = 0; i < n; ++i) x[i] -= s->work_n[i];              /* minimum-norm correction */
        }
        s->stats.init_iters = it;
        at_constraints(s, p, t, x, xd, xdd);
        if (any_factor(s) < 0) return 1;
        hp_apply(s, s->qd, s->work_n);
        for (i = 0; i < n; ++i) xd[i] -= s->work_n[i];                    /* velocity correction */
    }
    if (m) {
        at_constraints(s, p, t, x, xd, xdd);
        if (any_factor(s) < 0) return 1;
        hp_apply(s, s->qdd, s->lin.xdd_p);
        for (i = 0; i < n; ++i) s->lin.xdd_p[i] = -s->lin.xdd_p[i];   /* H xdd = -q_ddot(xdd = 0) */
    } else {
        lin_factor(s, s->H);
        for (i = 0; i < n; ++i) s->lin.xdd_p[i] = 0.0;
    }
    k = s->lin.k;
    (s->lin.pM ? mdl->dynamics_csr : mdl->dynamics)(t, x, xd, xdd, lam, p, s->M, s->f, s->K, s->C);
    kmm(s->lin.pM, s->M, s->lin.N, s->lin.MN, n, n, k);
    mtm(s->lin.N, s->lin.MN, s->S, n, k, k);                                 /* M_R */
    kmv(s->lin.pM, s->M, s->lin.xdd_p, s->work_n, n, n);
    for (i = 0; i < n; ++i) s->work_n[i] = s->f[i] - s->work_n[i];
    mtv(s->lin.N, s->work_n, s->rhs_R, n, k);
    if (k && lu_solve(s->S, s->rhs_R, k, s->ipiv)) return 2;
    mv(s->lin.N, s->rhs_R, xdd, n, k);
    for (i = 0; i < n; ++i) xdd[i] += s->lin.xdd_p[i];
    if (m) {
        kmv(s->lin.pM, s->M, xdd, s->work_n, n, n);
        for (i = 0; i < n; ++i) s->work_n[i] -= s->f[i];
        hpT_apply(s, s->work_n, lam);                                 /* H^T lam = M xdd - f */
    }
    return 0;
}

int sg_initial_state(sg_stepper *s, const double *p, double t, double *x, double *xd,
                     double *xdd, double *lam)
{
    return sg_consistent_state(s, p, t, x, xd, xdd, lam, 1);
}

int sg_initial_iterations(const sg_stepper *s) { return s->stats.init_iters; }
int sg_rank(const sg_stepper *s) { return s->lin.rank; }

/* linalg.py omega_at: omega_max of the reduced system linearized at a state (NaN when H cannot
 * be factored), with the step's factorization. */
double sg_omega_at(sg_stepper *s, const double *p, double t, const double *x, const double *xd,
                   const double *xdd, const double *lam)
{
    at_constraints(s, p, t, x, xd, xdd);
    if (any_factor(s) < 0) return NAN;
    lin_solve(s, NULL, NULL);
    (s->lin.pM ? s->mdl->dynamics_csr : s->mdl->dynamics)(t, x, xd, xdd, lam, p, s->M, s->f, s->K,
                                                      s->C);
    lin_reduce(s, 0);
    return sg_omega_from(s->lin.k, s->lin.M_R, s->lin.K_R, s->lin.omega_work);
}
