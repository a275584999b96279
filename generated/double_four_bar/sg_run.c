/* sg_run.c: the run loop above the steps: sg_step (one step of the chosen method; the null-space
 * step's step-over after a landing, nullspace.py "Landings"), sg_run_chunk (run.py _run: steps,
 * divergence checks, the rows), the hand-back from a step the Python driver took, and the run's
 * statistics.  A step control would sit here, above sg_step.
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"

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
    if (s->ov.pending) {
        s->ov.pending = 0;
        over = 1;
        t = s->ov.t;
        x = s->ov.x;
        xd = s->ov.xd;
        xdd = s->ov.xdd;
        lam = s->ov.lam;
        for (l = 0; l < 3 && st == SG_OK; ++l) {
            s->o.h = frac[l] * h;
            predict(s, x, xd, xdd, lam);
            it = 0;
            st = step_nullspace(s, p, t, x, xd, xdd, &it, fail);
            *iterations += it;
            t += s->o.h;
            memcpy(s->ov.start_x, s->x, sizeof(double) * (size_t)n);
            memcpy(s->ov.start_xd, s->xd, sizeof(double) * (size_t)n);
            memcpy(s->ov.start_xdd, s->xdd, sizeof(double) * (size_t)n);
            if (m) memcpy(s->ov.start_lam, s->lam, sizeof(double) * (size_t)m);
            x = s->ov.start_x;
            xd = s->ov.start_xd;
            xdd = s->ov.start_xdd;
            lam = s->ov.start_lam;
        }
        s->o.h = h;
    } else {        /* keep the start: the inputs may be the stepper's own state (sg_state) */
        memcpy(s->ov.start_x, x, sizeof(double) * (size_t)n);
        memcpy(s->ov.start_xd, xd, sizeof(double) * (size_t)n);
        memcpy(s->ov.start_xdd, xdd, sizeof(double) * (size_t)n);
        if (m) memcpy(s->ov.start_lam, lam, sizeof(double) * (size_t)m);
        predict(s, x, xd, xdd, lam);
        st = step_nullspace(s, p, t, x, xd, xdd, iterations, fail);
    }
    if (st != SG_OK) return st;
    ratio = kept_ratio(s);
    if (!over && ratio < SG_LANDING_RATIO && ratio < SG_LANDING_DROP * s->ov.ratio) {
        s->ov.pending = 1;
        s->ov.t = t;
        sw = s->ov.x; s->ov.x = s->ov.start_x; s->ov.start_x = sw;
        sw = s->ov.xd; s->ov.xd = s->ov.start_xd; s->ov.start_xd = sw;
        sw = s->ov.xdd; s->ov.xdd = s->ov.start_xdd; s->ov.start_xdd = sw;
        sw = s->ov.lam; s->ov.lam = s->ov.start_lam; s->ov.start_lam = sw;
        if (s->stats.landing_steps < SG_FLOOR_TIMES_KEPT)
            s->stats.landing_times[s->stats.landing_steps] = t + h;
        ++s->stats.landing_steps;
    }
    s->ov.ratio = ratio;
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

long sg_floor_steps(const sg_stepper *s) { return s->stats.floor_steps; }
double sg_floor_t_last(const sg_stepper *s) { return s->stats.floor_t_last; }
long sg_redundant_steps(const sg_stepper *s) { return s->stats.redundant_steps; }
long sg_landing_steps(const sg_stepper *s) { return s->stats.landing_steps; }
double sg_landing_ratio(const sg_stepper *s) { return s->ov.ratio; }

void sg_hand_back(sg_stepper *s, double ratio, double t, const double *x, const double *xd,
                  const double *xdd, const double *lam)
{
    s->ov.ratio = ratio;
    s->ov.pending = x != NULL;
    if (!x) return;
    s->ov.t = t;
    memcpy(s->ov.x, x, sizeof(double) * (size_t)s->n);
    memcpy(s->ov.xd, xd, sizeof(double) * (size_t)s->n);
    memcpy(s->ov.xdd, xdd, sizeof(double) * (size_t)s->n);
    if (s->m) memcpy(s->ov.lam, lam, sizeof(double) * (size_t)s->m);
}

int sg_landing_times(const sg_stepper *s, double *out, int max)
{
    int i, k = s->stats.landing_steps < max ? (int)s->stats.landing_steps : max;
    for (i = 0; i < k && i < SG_FLOOR_TIMES_KEPT; ++i) out[i] = s->stats.landing_times[i];
    return i;
}

int sg_floor_times(const sg_stepper *s, double *out, int max)
{
    int i, cnt = s->stats.floor_steps < SG_FLOOR_TIMES_KEPT ? (int)s->stats.floor_steps
                                                            : SG_FLOOR_TIMES_KEPT;
    if (cnt > max) cnt = max;
    for (i = 0; i < cnt; ++i) out[i] = s->stats.floor_times[i];
    return cnt;
}
int sg_min_rank(const sg_stepper *s) { return s->stats.min_rank; }
int sg_max_rank(const sg_stepper *s) { return s->stats.max_rank; }

int sg_sparse_info(const sg_stepper *s, long *counts, int *rows, int *indep, int *k)
{
    counts[0] = counts[1] = counts[2] = 0;
    *k = -1;
    return s->lin.sp ? sg_splin_info(s->lin.sp, counts, rows, indep, k) : -1;
}
