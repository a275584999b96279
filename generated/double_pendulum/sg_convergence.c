/* sg_convergence.c: what both Newton steps share (symgen/steppers/base.py): the predictor, the
 * update norm, the convergence rule and its round-off floor (rule 1), and the failure records.
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"

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
    if (s->stats.floor_steps < SG_FLOOR_TIMES_KEPT) s->stats.floor_times[s->stats.floor_steps] = t1;
    s->stats.floor_t_last = t1;
    s->stats.floor_steps += 1;
    return 1;
}

/* the floor at a nullspace iterate from the factorization of H there (kept |R_ii|) */
static void sg_floor_at(sg_stepper *s, const double *x, const double *xd, const double *xdd)
{
    int n = s->n, m = s->m, r = s->lin.rank;
    if (s->lin.pH) {                                        /* sparse: (max row norm, sigma_min) */
        double smax, smin;
        sg_splin_s_range(s->lin.sp, &smax, &smin);
        if (!(smax > 0.0)) sg_floor(s, x, xd, xdd, 0.0, 0.0, 0.0, 0.0);
        else sg_floor(s, x, xd, xdd, smax, smin, norm2(s->Hd, s->mdl->nnz_H),
                      norm2(s->Hdd, s->mdl->nnz_H));
        return;
    }
    if (r == 0) {
        sg_floor(s, x, xd, xdd, 0.0, 0.0, 0.0, 0.0);
        return;
    }
    sg_floor(s, x, xd, xdd, fabs(s->lin.A[0]), fabs(s->lin.A[(size_t)(r - 1) * n + (r - 1)]),
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
