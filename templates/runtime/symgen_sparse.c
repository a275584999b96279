/* symgen_sparse.c: the sparse LU of the C runtime's sparse null-space step (see symgen_sparse.h).
 * Standard C99; no printing, failures are returned as status codes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "symgen_sparse.h"

struct sg_splu {
    int n;
    int *Ap, *Ai;          /* the pattern of A (compressed columns) */
    long capL, capU;       /* allocated entries of L and U */
    int *Lp, *Li;          /* L by columns, rows in A's numbering, unit diagonal first */
    double *Lx;
    int *Up, *Ui;          /* U by columns, rows as pivot numbers, diagonal last */
    double *Ux;
    int *pinv;             /* row of A -> its pivot number (-1: not yet a pivot row) */
    int *prow;             /* pivot number -> row of A */
    int *xi;               /* 2n: depth-first stack, then the reach in topological order */
    int *pstack;           /* n: where each row's depth-first search resumes in L */
    int *mark;             /* n: visited stamps */
    int stamp;
    double *x, *w;         /* n: dense work (by row of A; by pivot number) */
    int factored;          /* L, U hold a complete factorization */
    int singular_col;
};

void sg_splu_free(sg_splu *f)
{
    if (!f) return;
    free(f->Ap); free(f->Ai);
    free(f->Lp); free(f->Li); free(f->Lx);
    free(f->Up); free(f->Ui); free(f->Ux);
    free(f->pinv); free(f->prow); free(f->xi); free(f->pstack); free(f->mark);
    free(f->x); free(f->w);
    free(f);
}

sg_splu *sg_splu_new(int n, const int *colptr, const int *rowind)
{
    sg_splu *f;
    size_t N, nnz;
    if (n < 0) return NULL;
    f = (sg_splu *)calloc(1, sizeof(sg_splu));
    if (!f) return NULL;
    N = (size_t)n + 1;
    nnz = (size_t)colptr[n];
    f->n = n;
    f->capL = f->capU = 2 * (long)nnz + n + 1;
    f->Ap = (int *)malloc(N * sizeof(int));
    f->Ai = (int *)malloc((nnz + 1) * sizeof(int));
    f->Lp = (int *)malloc(N * sizeof(int));
    f->Up = (int *)malloc(N * sizeof(int));
    f->Li = (int *)malloc((size_t)f->capL * sizeof(int));
    f->Lx = (double *)malloc((size_t)f->capL * sizeof(double));
    f->Ui = (int *)malloc((size_t)f->capU * sizeof(int));
    f->Ux = (double *)malloc((size_t)f->capU * sizeof(double));
    f->pinv = (int *)malloc(N * sizeof(int));
    f->prow = (int *)malloc(N * sizeof(int));
    f->xi = (int *)malloc(2 * N * sizeof(int));
    f->pstack = (int *)malloc(N * sizeof(int));
    f->mark = (int *)calloc(N, sizeof(int));
    f->x = (double *)calloc(N, sizeof(double));
    f->w = (double *)calloc(N, sizeof(double));
    if (!f->Ap || !f->Ai || !f->Lp || !f->Up || !f->Li || !f->Lx || !f->Ui || !f->Ux || !f->pinv
        || !f->prow || !f->xi || !f->pstack || !f->mark || !f->x || !f->w) {
        sg_splu_free(f);
        return NULL;
    }
    memcpy(f->Ap, colptr, N * sizeof(int));
    if (nnz) memcpy(f->Ai, rowind, nnz * sizeof(int));
    f->singular_col = -1;
    return f;
}

/* Room for `need` more entries of L (which = 0) or U (which = 1). */
static int grow(sg_splu *f, int which, long used, long need)
{
    long *cap = which ? &f->capU : &f->capL;
    int **idx = which ? &f->Ui : &f->Li;
    double **val = which ? &f->Ux : &f->Lx;
    long c = *cap;
    int *i2;
    double *v2;
    if (used + need <= c) return 0;
    while (c < used + need) c *= 2;
    i2 = (int *)realloc(*idx, (size_t)c * sizeof(int));
    if (!i2) return 1;
    *idx = i2;
    v2 = (double *)realloc(*val, (size_t)c * sizeof(double));
    if (!v2) return 1;
    *val = v2;
    *cap = c;
    return 0;
}

/* The rows reachable from the rows of A(:, k) in the graph of L (row i -> the rows of L's column
 * pinv[i]), in topological order in xi[n + top .. 2n - 1]; returns top. */
static int reach(sg_splu *f, int k)
{
    const int n = f->n;
    int *stack = f->xi, *out = f->xi + n;
    int top = n, p;
    ++f->stamp;
    for (p = f->Ap[k]; p < f->Ap[k + 1]; ++p) {
        int head = 0, i = f->Ai[p];
        if (f->mark[i] == f->stamp) continue;
        stack[0] = i;
        f->mark[i] = f->stamp;
        f->pstack[i] = f->pinv[i] >= 0 ? f->Lp[f->pinv[i]] + 1 : 0;
        while (head >= 0) {
            int j, q, done = 1;
            i = stack[head];
            j = f->pinv[i];
            if (j >= 0) {
                for (q = f->pstack[i]; q < f->Lp[j + 1]; ++q) {
                    int r = f->Li[q];
                    if (f->mark[r] == f->stamp) continue;
                    f->pstack[i] = q + 1;
                    f->mark[r] = f->stamp;
                    f->pstack[r] = f->pinv[r] >= 0 ? f->Lp[f->pinv[r]] + 1 : 0;
                    stack[++head] = r;
                    done = 0;
                    break;
                }
            }
            if (done) {
                --head;
                out[--top] = i;
            }
        }
    }
    return top;
}

int sg_splu_factor(sg_splu *f, const double *values)
{
    const int n = f->n;
    long lnz = 0, unz = 0;
    int k, i;
    f->factored = 0;
    f->singular_col = -1;
    for (i = 0; i < n; ++i) { f->pinv[i] = -1; f->mark[i] = 0; }
    f->stamp = 0;
    f->Lp[0] = f->Up[0] = 0;
    for (k = 0; k < n; ++k) {
        const int *out = f->xi + n;
        int top = reach(f, k), t, p, ipiv = -1;
        double amax = 0.0, piv;
        if (grow(f, 0, lnz, n - top) || grow(f, 1, unz, n - top + 1)) return SG_LU_NOMEM;
        for (t = top; t < n; ++t) f->x[out[t]] = 0.0;
        for (p = f->Ap[k]; p < f->Ap[k + 1]; ++p) f->x[f->Ai[p]] = values[p];
        for (t = top; t < n; ++t) {                    /* x = L^-1 A(:, k), topological order */
            int j = f->pinv[out[t]], q;
            double xj;
            if (j < 0) continue;
            xj = f->x[out[t]];
            for (q = f->Lp[j] + 1; q < f->Lp[j + 1]; ++q) f->x[f->Li[q]] -= f->Lx[q] * xj;
        }
        for (t = top; t < n; ++t) {                    /* U(:, k) above the diagonal; the pivot */
            i = out[t];
            if (f->pinv[i] >= 0) {
                f->Ui[unz] = f->pinv[i];
                f->Ux[unz++] = f->x[i];
            } else if (fabs(f->x[i]) > amax) {
                amax = fabs(f->x[i]);
                ipiv = i;
            }
        }
        if (ipiv < 0 || !(amax > 0.0)) {
            f->singular_col = k;
            return SG_LU_SINGULAR;
        }
        piv = f->x[ipiv];
        f->Ui[unz] = k;
        f->Ux[unz++] = piv;
        f->Up[k + 1] = (int)unz;
        f->Li[lnz] = ipiv;
        f->Lx[lnz++] = 1.0;
        for (t = top; t < n; ++t) {
            i = out[t];
            if (f->pinv[i] < 0 && i != ipiv) {
                f->Li[lnz] = i;
                f->Lx[lnz++] = f->x[i] / piv;
            }
        }
        f->Lp[k + 1] = (int)lnz;
        f->pinv[ipiv] = k;
        f->prow[k] = ipiv;
    }
    f->factored = 1;
    return SG_LU_OK;
}

int sg_splu_refactor(sg_splu *f, const double *values, double pivot_tol)
{
    const int n = f->n;
    int k;
    if (!f->factored) return SG_LU_REPIVOT;
    for (k = 0; k < n; ++k) {
        int p, q;
        double piv, amax;
        for (p = f->Up[k]; p < f->Up[k + 1]; ++p) f->x[f->prow[f->Ui[p]]] = 0.0;
        for (q = f->Lp[k]; q < f->Lp[k + 1]; ++q) f->x[f->Li[q]] = 0.0;
        for (p = f->Ap[k]; p < f->Ap[k + 1]; ++p) f->x[f->Ai[p]] = values[p];
        for (p = f->Up[k]; p < f->Up[k + 1] - 1; ++p) {   /* stored in topological order */
            int j = f->Ui[p];
            double u = f->x[f->prow[j]];
            f->Ux[p] = u;
            for (q = f->Lp[j] + 1; q < f->Lp[j + 1]; ++q) f->x[f->Li[q]] -= f->Lx[q] * u;
        }
        piv = f->x[f->prow[k]];
        amax = fabs(piv);
        for (q = f->Lp[k] + 1; q < f->Lp[k + 1]; ++q)
            if (fabs(f->x[f->Li[q]]) > amax) amax = fabs(f->x[f->Li[q]]);
        if (!(fabs(piv) > 0.0) || fabs(piv) < pivot_tol * amax) {
            f->factored = 0;                                  /* L, U half overwritten */
            return SG_LU_REPIVOT;
        }
        f->Ux[f->Up[k + 1] - 1] = piv;
        for (q = f->Lp[k] + 1; q < f->Lp[k + 1]; ++q) f->Lx[q] = f->x[f->Li[q]] / piv;
    }
    return SG_LU_OK;
}

void sg_splu_solve(sg_splu *f, double *b)
{
    const int n = f->n;
    double *w = f->w;
    int j, k, q, p;
    for (j = 0; j < n; ++j) {                    /* L' z = P b (L' = L with rows in pivot order) */
        double z = b[f->prow[j]];
        w[j] = z;
        for (q = f->Lp[j] + 1; q < f->Lp[j + 1]; ++q) b[f->Li[q]] -= f->Lx[q] * z;
    }
    for (k = n - 1; k >= 0; --k) {               /* U x = z, by columns */
        double xk = w[k] / f->Ux[f->Up[k + 1] - 1];
        w[k] = xk;
        for (p = f->Up[k]; p < f->Up[k + 1] - 1; ++p) w[f->Ui[p]] -= f->Ux[p] * xk;
    }
    if (n) memcpy(b, w, (size_t)n * sizeof(double));
}

void sg_splu_solve_t(sg_splu *f, double *b)
{
    const int n = f->n;
    double *w = f->w;
    int j, k, q, p;
    for (k = 0; k < n; ++k) {                    /* U^T w = b */
        double s = b[k];
        for (p = f->Up[k]; p < f->Up[k + 1] - 1; ++p) s -= f->Ux[p] * w[f->Ui[p]];
        w[k] = s / f->Ux[f->Up[k + 1] - 1];
    }
    for (j = n - 1; j >= 0; --j) {               /* L'^T v = w (in place) */
        double s = w[j];
        for (q = f->Lp[j] + 1; q < f->Lp[j + 1]; ++q) s -= f->Lx[q] * w[f->pinv[f->Li[q]]];
        w[j] = s;
    }
    for (j = 0; j < n; ++j) b[f->prow[j]] = w[j];   /* x = P^T v */
}

long sg_splu_nnz_L(const sg_splu *f) { return f->n ? (long)f->Lp[f->n] : 0; }
long sg_splu_nnz_U(const sg_splu *f) { return f->n ? (long)f->Up[f->n] : 0; }
int sg_splu_singular_column(const sg_splu *f) { return f->singular_col; }

/* ---- the operations of the sparse null-space step on one partition ---------------------------- */
struct sg_spnull {
    int n, m, r, k, d;
    int *R, *Z, *I, *D;        /* rows, redundant rows, independent coordinates, the others */
    int *bp, *bi, *bmap;       /* H[R, D] in compressed columns; entry -> entry of H's pattern */
    int nRI, *ri, *ci, *pi;    /* the entries of H[R, I]: block row, column of I, entry of H */
    int nZ, *zi, *zc, *zp;     /* the entries of H[Z, :]: row of Z, coordinate, entry of H */
    sg_splu *lu;
    int have_lu;
    double *bval;              /* values of H[R, D] */
    double *N;                 /* n x k, row-major */
    double *Et;                /* r x d: E^T */
    double *Lw;                /* d x d: Cholesky factor of I + E E^T (lower, row-major) */
    double *wr, *wn, *wn2, *wd, *wk;   /* work: r, n, n, d (and n x d for W), k */
    double *W;                 /* n x d */
};

void sg_spnull_free(sg_spnull *s)
{
    if (!s) return;
    free(s->R); free(s->Z); free(s->I); free(s->D);
    free(s->bp); free(s->bi); free(s->bmap);
    free(s->ri); free(s->ci); free(s->pi); free(s->zi); free(s->zc); free(s->zp);
    sg_splu_free(s->lu);
    free(s->bval); free(s->N); free(s->Et); free(s->Lw);
    free(s->wr); free(s->wn); free(s->wn2); free(s->wd); free(s->wk); free(s->W);
    free(s);
}

static void *alloc0(size_t count, size_t size) { return calloc(count ? count : 1, size); }

sg_spnull *sg_spnull_new(int n, int m, const int *H_indptr, const int *H_indices,
                         const int *col_order, int r, const int *rows, int k, const int *indep)
{
    sg_spnull *s;
    int *row_pos = NULL, *d_pos = NULL, *i_pos = NULL, *z_pos = NULL;
    int i, j, p, t, nd = 0, nz = 0, ok = 1;
    const int nnz = H_indptr[m];
    if (n < 0 || m < 0 || r < 0 || k < 0 || r + k != n || r > m) return NULL;
    s = (sg_spnull *)calloc(1, sizeof(sg_spnull));
    if (!s) return NULL;
    s->n = n; s->m = m; s->r = r; s->k = k; s->d = m - r;
    s->R = (int *)alloc0((size_t)r, sizeof(int));
    s->Z = (int *)alloc0((size_t)s->d, sizeof(int));
    s->I = (int *)alloc0((size_t)k, sizeof(int));
    s->D = (int *)alloc0((size_t)r, sizeof(int));
    s->bp = (int *)alloc0((size_t)r + 1, sizeof(int));
    s->bi = (int *)alloc0((size_t)nnz, sizeof(int));
    s->bmap = (int *)alloc0((size_t)nnz, sizeof(int));
    s->ri = (int *)alloc0((size_t)nnz, sizeof(int));
    s->ci = (int *)alloc0((size_t)nnz, sizeof(int));
    s->pi = (int *)alloc0((size_t)nnz, sizeof(int));
    s->zi = (int *)alloc0((size_t)nnz, sizeof(int));
    s->zc = (int *)alloc0((size_t)nnz, sizeof(int));
    s->zp = (int *)alloc0((size_t)nnz, sizeof(int));
    s->bval = (double *)alloc0((size_t)nnz, sizeof(double));
    s->N = (double *)alloc0((size_t)n * (size_t)k, sizeof(double));
    s->Et = (double *)alloc0((size_t)r * (size_t)s->d, sizeof(double));
    s->Lw = (double *)alloc0((size_t)s->d * (size_t)s->d, sizeof(double));
    s->wr = (double *)alloc0((size_t)r, sizeof(double));
    s->wn = (double *)alloc0((size_t)n, sizeof(double));
    s->wn2 = (double *)alloc0((size_t)n, sizeof(double));
    s->wd = (double *)alloc0((size_t)s->d, sizeof(double));
    s->wk = (double *)alloc0((size_t)k, sizeof(double));
    s->W = (double *)alloc0((size_t)n * (size_t)s->d, sizeof(double));
    row_pos = (int *)alloc0((size_t)m, sizeof(int));
    z_pos = (int *)alloc0((size_t)m, sizeof(int));
    d_pos = (int *)alloc0((size_t)n, sizeof(int));
    i_pos = (int *)alloc0((size_t)n, sizeof(int));
    if (!s->R || !s->Z || !s->I || !s->D || !s->bp || !s->bi || !s->bmap || !s->ri || !s->ci
        || !s->pi || !s->zi || !s->zc || !s->zp || !s->bval || !s->N || !s->Et || !s->Lw
        || !s->wr || !s->wn || !s->wn2 || !s->wd || !s->wk || !s->W || !row_pos || !z_pos
        || !d_pos || !i_pos)
        ok = 0;
    if (ok) {
        for (i = 0; i < m; ++i) row_pos[i] = z_pos[i] = -1;
        for (j = 0; j < n; ++j) d_pos[j] = i_pos[j] = -1;
        for (t = 0; t < r; ++t) { s->R[t] = rows[t]; row_pos[rows[t]] = t; }
        for (i = 0; i < m; ++i) if (row_pos[i] < 0) { s->Z[nz] = i; z_pos[i] = nz++; }
        for (t = 0; t < k; ++t) { s->I[t] = indep[t]; i_pos[indep[t]] = t; }
        for (t = 0; t < n; ++t) {
            j = col_order[t];
            if (i_pos[j] < 0) { s->D[nd] = j; d_pos[j] = nd++; }
        }
        ok = nz == s->d && nd == r;
    }
    if (ok) {                  /* H[R, D] by columns: count, then place */
        for (i = 0; i < m; ++i)
            for (p = H_indptr[i]; p < H_indptr[i + 1]; ++p) {
                j = H_indices[p];
                if (row_pos[i] >= 0 && d_pos[j] >= 0) ++s->bp[d_pos[j] + 1];
                else if (row_pos[i] >= 0 && i_pos[j] >= 0) {
                    s->ri[s->nRI] = row_pos[i]; s->ci[s->nRI] = i_pos[j]; s->pi[s->nRI++] = p;
                } else if (z_pos[i] >= 0) {
                    s->zi[s->nZ] = z_pos[i]; s->zc[s->nZ] = j; s->zp[s->nZ++] = p;
                }
            }
        for (t = 0; t < r; ++t) s->bp[t + 1] += s->bp[t];
    }
    if (ok) {
        int *next = (int *)alloc0((size_t)r + 1, sizeof(int));
        if (!next) ok = 0;
        else {
            for (t = 0; t < r; ++t) next[t] = s->bp[t];
            for (i = 0; i < m; ++i) {
                if (row_pos[i] < 0) continue;
                for (p = H_indptr[i]; p < H_indptr[i + 1]; ++p) {
                    j = H_indices[p];
                    if (d_pos[j] >= 0) {
                        int q = next[d_pos[j]]++;
                        s->bi[q] = row_pos[i];
                        s->bmap[q] = p;
                    }
                }
            }
            free(next);
            s->lu = sg_splu_new(r, s->bp, s->bi);
            if (!s->lu) ok = 0;
        }
    }
    free(row_pos); free(z_pos); free(d_pos); free(i_pos);
    if (!ok) {
        sg_spnull_free(s);
        return NULL;
    }
    return s;
}

/* x = H_R^+ b for one right-hand side b (r): (I - N N^T) scatter_D(H_RD^-1 b), into out (n). */
static void row_pinv(sg_spnull *s, const double *b, double *out)
{
    const int n = s->n, r = s->r, k = s->k;
    int t, c, j;
    for (t = 0; t < r; ++t) s->wr[t] = b[t];
    if (r) sg_splu_solve(s->lu, s->wr);
    for (j = 0; j < n; ++j) out[j] = 0.0;
    for (t = 0; t < r; ++t) out[s->D[t]] = s->wr[t];
    for (c = 0; c < k; ++c) {                      /* out -= N (N^T out) */
        double a = 0.0;
        for (j = 0; j < n; ++j) a += s->N[j * k + c] * out[j];
        s->wk[c] = a;
    }
    for (j = 0; j < n; ++j) {
        double a = 0.0;
        for (c = 0; c < k; ++c) a += s->N[j * k + c] * s->wk[c];
        out[j] -= a;
    }
}

/* y = (I + E E^T)^-1 y (d) by the Cholesky factor Lw. */
static void chol_solve(const sg_spnull *s, double *y)
{
    const int d = s->d;
    int i, j;
    for (i = 0; i < d; ++i) {
        double a = y[i];
        for (j = 0; j < i; ++j) a -= s->Lw[i * d + j] * y[j];
        y[i] = a / s->Lw[i * d + i];
    }
    for (i = d - 1; i >= 0; --i) {
        double a = y[i];
        for (j = i + 1; j < d; ++j) a -= s->Lw[j * d + i] * y[j];
        y[i] = a / s->Lw[i * d + i];
    }
}

/* u = (I + E^T E)^-1 u (r) = u - E^T (I + E E^T)^-1 E u (Woodbury). */
static void woodbury(sg_spnull *s, double *u)
{
    const int r = s->r, d = s->d;
    int t, z;
    for (z = 0; z < d; ++z) {
        double a = 0.0;
        for (t = 0; t < r; ++t) a += s->Et[t * d + z] * u[t];
        s->wd[z] = a;
    }
    chol_solve(s, s->wd);
    for (t = 0; t < r; ++t) {
        double a = 0.0;
        for (z = 0; z < d; ++z) a += s->Et[t * d + z] * s->wd[z];
        u[t] -= a;
    }
}

int sg_spnull_factor(sg_spnull *s, const double *H_values, double pivot_tol)
{
    const int n = s->n, r = s->r, k = s->k, d = s->d;
    int q, c, j, t, z, pass, status = SG_LU_OK;
    double *Nc = s->N;
    for (q = 0; q < s->bp[r]; ++q) s->bval[q] = H_values[s->bmap[q]];
    if (r) {
        if (s->have_lu) status = sg_splu_refactor(s->lu, s->bval, pivot_tol);
        if (!s->have_lu || status == SG_LU_REPIVOT) status = sg_splu_factor(s->lu, s->bval);
        s->have_lu = status == SG_LU_OK;
        if (status != SG_LU_OK) return status;
    }
    for (j = 0; j < n * k; ++j) Nc[j] = 0.0;       /* N_c = P[-H_RD^-1 H_RI; I], by columns */
    for (c = 0; c < k; ++c) {
        for (t = 0; t < r; ++t) s->wr[t] = 0.0;
        for (q = 0; q < s->nRI; ++q) if (s->ci[q] == c) s->wr[s->ri[q]] = H_values[s->pi[q]];
        if (r) sg_splu_solve(s->lu, s->wr);
        for (t = 0; t < r; ++t) Nc[s->D[t] * k + c] = -s->wr[t];
        Nc[s->I[c] * k + c] = 1.0;
    }
    for (pass = 0; pass < 2; ++pass)               /* modified Gram-Schmidt, twice */
        for (c = 0; c < k; ++c) {
            double nrm = 0.0;
            int c2;
            for (c2 = 0; c2 < c; ++c2) {
                double a = 0.0;
                for (j = 0; j < n; ++j) a += Nc[j * k + c2] * Nc[j * k + c];
                for (j = 0; j < n; ++j) Nc[j * k + c] -= a * Nc[j * k + c2];
            }
            for (j = 0; j < n; ++j) nrm += Nc[j * k + c] * Nc[j * k + c];
            nrm = sqrt(nrm);
            if (!(nrm > 0.0)) return SG_LU_SINGULAR;
            for (j = 0; j < n; ++j) Nc[j * k + c] /= nrm;
        }
    if (d) {                                       /* E^T = H_R^+T H_Z^T; I + E E^T = Lw Lw^T */
        for (j = 0; j < n * d; ++j) s->W[j] = 0.0;
        for (q = 0; q < s->nZ; ++q) s->W[s->zc[q] * d + s->zi[q]] = H_values[s->zp[q]];
        for (z = 0; z < d; ++z) {
            for (j = 0; j < n; ++j) s->wn[j] = s->W[j * d + z];
            for (c = 0; c < k; ++c) {              /* (I - N N^T) H_Z^T[:, z] */
                double a = 0.0;
                for (j = 0; j < n; ++j) a += s->N[j * k + c] * s->wn[j];
                s->wk[c] = a;
            }
            for (j = 0; j < n; ++j) {
                double a = 0.0;
                for (c = 0; c < k; ++c) a += s->N[j * k + c] * s->wk[c];
                s->wn[j] -= a;
            }
            for (t = 0; t < r; ++t) s->wr[t] = s->wn[s->D[t]];
            if (r) sg_splu_solve_t(s->lu, s->wr);
            for (t = 0; t < r; ++t) s->Et[t * d + z] = s->wr[t];
        }
        for (z = 0; z < d; ++z)
            for (c = 0; c <= z; ++c) {             /* Cholesky of I + E E^T (row z, column c) */
                double a = z == c ? 1.0 : 0.0;
                int e;
                for (t = 0; t < r; ++t) a += s->Et[t * d + z] * s->Et[t * d + c];
                for (e = 0; e < c; ++e) a -= s->Lw[z * d + e] * s->Lw[c * d + e];
                if (z == c) s->Lw[z * d + z] = sqrt(a);
                else s->Lw[z * d + c] = a / s->Lw[c * d + c];
            }
    }
    return SG_LU_OK;
}

const double *sg_spnull_basis(const sg_spnull *s) { return s->N; }

void sg_spnull_pinv(sg_spnull *s, const double *b, int c, double *out)
{
    const int n = s->n, r = s->r, d = s->d;
    int col, t, z, j;
    double *bR = s->wn2;                           /* (r <= n) */
    for (col = 0; col < c; ++col) {
        for (t = 0; t < r; ++t) bR[t] = b[s->R[t] * c + col];
        if (d) {
            for (t = 0; t < r; ++t) {              /* [I  E^T] b */
                double a = 0.0;
                for (z = 0; z < d; ++z) a += s->Et[t * d + z] * b[s->Z[z] * c + col];
                bR[t] += a;
            }
            woodbury(s, bR);
        }
        row_pinv(s, bR, s->wn);
        for (j = 0; j < n; ++j) out[j * c + col] = s->wn[j];
    }
}

void sg_spnull_pinv_t(sg_spnull *s, const double *y, double *out)
{
    const int n = s->n, r = s->r, k = s->k, d = s->d;
    int c, j, t, z;
    for (c = 0; c < k; ++c) {                      /* w = (I - N N^T) y */
        double a = 0.0;
        for (j = 0; j < n; ++j) a += s->N[j * k + c] * y[j];
        s->wk[c] = a;
    }
    for (t = 0; t < r; ++t) {
        double a = 0.0;
        j = s->D[t];
        for (c = 0; c < k; ++c) a += s->N[j * k + c] * s->wk[c];
        s->wr[t] = y[j] - a;
    }
    if (r) sg_splu_solve_t(s->lu, s->wr);
    if (d) {
        woodbury(s, s->wr);
        for (z = 0; z < d; ++z) {
            double a = 0.0;
            for (t = 0; t < r; ++t) a += s->Et[t * d + z] * s->wr[t];
            out[s->Z[z]] = a;
        }
    }
    for (t = 0; t < r; ++t) out[s->R[t]] = s->wr[t];
}
