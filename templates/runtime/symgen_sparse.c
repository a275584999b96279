/* symgen_sparse.c: the sparse LU of the C runtime's sparse null-space step (see symgen_sparse.h).
 * Standard C99; no printing, failures are returned as status codes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sg_constants.h"
#include "symgen_sparse.h"

struct sg_splu {
    int n;                 /* columns */
    int nr;                /* rows (n, but for the rectangular factorization of sp_lu_partition) */
    int *Ap, *Ai;          /* the pattern of A (compressed columns) */
    long capL, capU;       /* allocated entries of L and U */
    int *Lp, *Li;          /* L by columns, rows in A's numbering, unit diagonal first */
    double *Lx;
    int *Up, *Ui;          /* U by columns, rows as pivot numbers, diagonal last */
    double *Ux;
    double *Udi;           /* 1 / the diagonal of U (the solves multiply) */
    int *pinv;             /* row of A -> its pivot number (-1: not yet a pivot row) */
    int *prow;             /* pivot number -> row of A */
    int *xi;               /* 2n: depth-first stack, then the reach in topological order */
    int *pstack;           /* n: where each row's depth-first search resumes in L */
    int *mark;             /* n: visited stamps */
    int stamp;
    double *x, *w, *w2;    /* n: dense work (by row of A; by pivot number; sg_splu_solve2's) */
    int factored;          /* L, U hold a complete factorization */
    int singular_col;
};

void sg_splu_free(sg_splu *f)
{
    if (!f) return;
    free(f->Ap); free(f->Ai);
    free(f->Lp); free(f->Li); free(f->Lx);
    free(f->Up); free(f->Ui); free(f->Ux); free(f->Udi);
    free(f->pinv); free(f->prow); free(f->xi); free(f->pstack); free(f->mark);
    free(f->x); free(f->w); free(f->w2);
    free(f);
}

/* An LU for nr x n matrices (nr >= n; sg_splu_factor only, unless square). */
static sg_splu *splu_new(int nr, int n, const int *colptr, const int *rowind)
{
    sg_splu *f;
    size_t N, R, nnz;
    if (n < 0 || nr < n) return NULL;
    f = (sg_splu *)calloc(1, sizeof(sg_splu));
    if (!f) return NULL;
    N = (size_t)n + 1;
    R = (size_t)nr + 1;
    nnz = (size_t)colptr[n];
    f->n = n;
    f->nr = nr;
    f->capL = f->capU = 2 * (long)nnz + nr + 1;
    f->Ap = (int *)malloc(N * sizeof(int));
    f->Ai = (int *)malloc((nnz + 1) * sizeof(int));
    f->Lp = (int *)malloc(N * sizeof(int));
    f->Up = (int *)malloc(N * sizeof(int));
    f->Li = (int *)malloc((size_t)f->capL * sizeof(int));
    f->Lx = (double *)malloc((size_t)f->capL * sizeof(double));
    f->Ui = (int *)malloc((size_t)f->capU * sizeof(int));
    f->Ux = (double *)malloc((size_t)f->capU * sizeof(double));
    f->Udi = (double *)malloc(N * sizeof(double));
    f->pinv = (int *)malloc(R * sizeof(int));
    f->prow = (int *)malloc(N * sizeof(int));
    f->xi = (int *)malloc(2 * R * sizeof(int));
    f->pstack = (int *)malloc(R * sizeof(int));
    f->mark = (int *)calloc(R, sizeof(int));
    f->x = (double *)calloc(R, sizeof(double));
    f->w = (double *)calloc(N, sizeof(double));
    f->w2 = (double *)calloc(N, sizeof(double));
    if (!f->Ap || !f->Ai || !f->Lp || !f->Up || !f->Li || !f->Lx || !f->Ui || !f->Ux || !f->Udi
        || !f->pinv || !f->prow || !f->xi || !f->pstack || !f->mark || !f->x || !f->w || !f->w2) {
        sg_splu_free(f);
        return NULL;
    }
    memcpy(f->Ap, colptr, N * sizeof(int));
    if (nnz) memcpy(f->Ai, rowind, nnz * sizeof(int));
    f->singular_col = -1;
    return f;
}

sg_splu *sg_splu_new(int n, const int *colptr, const int *rowind)
{
    return splu_new(n, n, colptr, rowind);
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
    const int n = f->nr;
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
    const int n = f->n, nr = f->nr;                    /* columns, rows */
    long lnz = 0, unz = 0;
    int k, i;
    f->factored = 0;
    f->singular_col = -1;
    for (i = 0; i < nr; ++i) { f->pinv[i] = -1; f->mark[i] = 0; }
    f->stamp = 0;
    f->Lp[0] = f->Up[0] = 0;
    for (k = 0; k < n; ++k) {
        const int *out = f->xi + nr;
        int top = reach(f, k), t, p, ipiv = -1;
        double amax = 0.0, piv;
        if (grow(f, 0, lnz, nr - top) || grow(f, 1, unz, nr - top + 1)) return SG_LU_NOMEM;
        for (t = top; t < nr; ++t) f->x[out[t]] = 0.0;
        for (p = f->Ap[k]; p < f->Ap[k + 1]; ++p) f->x[f->Ai[p]] = values[p];
        for (t = top; t < nr; ++t) {                   /* x = L^-1 A(:, k), topological order */
            int j = f->pinv[out[t]], q;
            double xj;
            if (j < 0) continue;
            xj = f->x[out[t]];
            for (q = f->Lp[j] + 1; q < f->Lp[j + 1]; ++q) f->x[f->Li[q]] -= f->Lx[q] * xj;
        }
        for (t = top; t < nr; ++t) {                   /* U(:, k) above the diagonal; the pivot */
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
        f->Udi[k] = 1.0 / piv;
        f->Up[k + 1] = (int)unz;
        f->Li[lnz] = ipiv;
        f->Lx[lnz++] = 1.0;
        for (t = top; t < nr; ++t) {
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
        f->Udi[k] = 1.0 / piv;
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
        if (z != 0.0)                            /* (right-hand sides are often sparse) */
            for (q = f->Lp[j] + 1; q < f->Lp[j + 1]; ++q) b[f->Li[q]] -= f->Lx[q] * z;
    }
    for (k = n - 1; k >= 0; --k) {               /* U x = z, by columns */
        double xk = w[k] * f->Udi[k];
        w[k] = xk;
        if (xk != 0.0)
            for (p = f->Up[k]; p < f->Up[k + 1] - 1; ++p) w[f->Ui[p]] -= f->Ux[p] * xk;
    }
    if (n) memcpy(b, w, (size_t)n * sizeof(double));
}

void sg_splu_solve2(sg_splu *f, double *b, double *c)
{
    /* sg_splu_solve for b and for c in one pass over L and U: each right-hand side gets exactly
     * the operations of its own solve (a zero multiplier skips its column, as there), and the
     * two chains of dependent updates overlap */
    const int n = f->n;
    double *w = f->w, *v = f->w2;
    int j, k, q, p;
    for (j = 0; j < n; ++j) {
        const int pj = f->prow[j], e = f->Lp[j + 1];
        double z = b[pj], y = c[pj];
        w[j] = z;
        v[j] = y;
        if (z != 0.0 && y != 0.0)
            for (q = f->Lp[j] + 1; q < e; ++q) {
                const int i = f->Li[q];
                const double l = f->Lx[q];
                b[i] -= l * z;
                c[i] -= l * y;
            }
        else if (z != 0.0)
            for (q = f->Lp[j] + 1; q < e; ++q) b[f->Li[q]] -= f->Lx[q] * z;
        else if (y != 0.0)
            for (q = f->Lp[j] + 1; q < e; ++q) c[f->Li[q]] -= f->Lx[q] * y;
    }
    for (k = n - 1; k >= 0; --k) {
        const int e = f->Up[k + 1] - 1;
        double xk = w[k] * f->Udi[k], yk = v[k] * f->Udi[k];
        w[k] = xk;
        v[k] = yk;
        if (xk != 0.0 && yk != 0.0)
            for (p = f->Up[k]; p < e; ++p) {
                const int i = f->Ui[p];
                const double u = f->Ux[p];
                w[i] -= u * xk;
                v[i] -= u * yk;
            }
        else if (xk != 0.0)
            for (p = f->Up[k]; p < e; ++p) w[f->Ui[p]] -= f->Ux[p] * xk;
        else if (yk != 0.0)
            for (p = f->Up[k]; p < e; ++p) v[f->Ui[p]] -= f->Ux[p] * yk;
    }
    if (n) {
        memcpy(b, w, (size_t)n * sizeof(double));
        memcpy(c, v, (size_t)n * sizeof(double));
    }
}

void sg_splu_solve_t(sg_splu *f, double *b)
{
    const int n = f->n;
    double *w = f->w;
    int j, k, q, p;
    for (k = 0; k < n; ++k) {                    /* U^T w = b */
        double s = b[k];
        for (p = f->Up[k]; p < f->Up[k + 1] - 1; ++p) s -= f->Ux[p] * w[f->Ui[p]];
        w[k] = s * f->Udi[k];
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
    double *bval0;             /* those of the last sg_splu_factor (its pivot order: splin_image) */
    double *N;                 /* n x k, row-major */
    double *Et;                /* r x d: E^T */
    double *Lw;                /* d x d: Cholesky factor of I + E E^T (lower, row-major) */
    double *wr, *wn, *wn2, *wd, *wk;   /* work: r, n, n, d (and n x d for W), k */
    double *wr2, *wn3, *wn4;           /* work of the second column of a pair: r, n, n */
    double *W;                 /* n x d */
};

void sg_spnull_free(sg_spnull *s)
{
    if (!s) return;
    free(s->R); free(s->Z); free(s->I); free(s->D);
    free(s->bp); free(s->bi); free(s->bmap);
    free(s->ri); free(s->ci); free(s->pi); free(s->zi); free(s->zc); free(s->zp);
    sg_splu_free(s->lu);
    free(s->bval); free(s->bval0); free(s->N); free(s->Et); free(s->Lw);
    free(s->wr); free(s->wn); free(s->wn2); free(s->wd); free(s->wk); free(s->W);
    free(s->wr2); free(s->wn3); free(s->wn4);
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
    s->bval0 = (double *)alloc0((size_t)nnz, sizeof(double));
    s->N = (double *)alloc0((size_t)n * (size_t)k, sizeof(double));
    s->Et = (double *)alloc0((size_t)r * (size_t)s->d, sizeof(double));
    s->Lw = (double *)alloc0((size_t)s->d * (size_t)s->d, sizeof(double));
    s->wr = (double *)alloc0((size_t)r, sizeof(double));
    s->wn = (double *)alloc0((size_t)n, sizeof(double));
    s->wn2 = (double *)alloc0((size_t)n, sizeof(double));
    s->wd = (double *)alloc0((size_t)s->d, sizeof(double));
    s->wk = (double *)alloc0((size_t)k, sizeof(double));
    s->W = (double *)alloc0((size_t)n * (size_t)s->d, sizeof(double));
    s->wr2 = (double *)alloc0((size_t)r, sizeof(double));
    s->wn3 = (double *)alloc0((size_t)n, sizeof(double));
    s->wn4 = (double *)alloc0((size_t)n, sizeof(double));
    row_pos = (int *)alloc0((size_t)m, sizeof(int));
    z_pos = (int *)alloc0((size_t)m, sizeof(int));
    d_pos = (int *)alloc0((size_t)n, sizeof(int));
    i_pos = (int *)alloc0((size_t)n, sizeof(int));
    if (!s->R || !s->Z || !s->I || !s->D || !s->bp || !s->bi || !s->bmap || !s->ri || !s->ci
        || !s->pi || !s->zi || !s->zc || !s->zp || !s->bval || !s->bval0 || !s->N || !s->Et || !s->Lw
        || !s->wr || !s->wn || !s->wn2 || !s->wd || !s->wk || !s->W || !s->wr2 || !s->wn3
        || !s->wn4 || !row_pos || !z_pos || !d_pos || !i_pos)
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

/* out -= N (N^T out): the projection of H_R^+ (out: n). */
static void project_out_N(sg_spnull *s, double *out)
{
    const int n = s->n, k = s->k;
    int c, j;
    for (c = 0; c < k; ++c) {
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

/* x = H_R^+ b for one right-hand side b (r): (I - N N^T) scatter_D(H_RD^-1 b), into out (n). */
static void row_pinv(sg_spnull *s, const double *b, double *out)
{
    const int n = s->n, r = s->r;
    int t, j;
    for (t = 0; t < r; ++t) s->wr[t] = b[t];
    if (r) sg_splu_solve(s->lu, s->wr);
    for (j = 0; j < n; ++j) out[j] = 0.0;
    for (t = 0; t < r; ++t) out[s->D[t]] = s->wr[t];
    project_out_N(s, out);
}

/* row_pinv for two right-hand sides b (into out) and b2 (into out2), with one pass of the LU
 * solve for both (the same numbers as two row_pinv). */
static void row_pinv2(sg_spnull *s, const double *b, const double *b2, double *out, double *out2)
{
    const int n = s->n, r = s->r;
    int t, j;
    for (t = 0; t < r; ++t) {
        s->wr[t] = b[t];
        s->wr2[t] = b2[t];
    }
    if (r) sg_splu_solve2(s->lu, s->wr, s->wr2);
    for (j = 0; j < n; ++j) out[j] = out2[j] = 0.0;
    for (t = 0; t < r; ++t) {
        out[s->D[t]] = s->wr[t];
        out2[s->D[t]] = s->wr2[t];
    }
    project_out_N(s, out);
    project_out_N(s, out2);
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

/* sg_spnull_factor; with_E = 0 leaves out E and its Cholesky factor (only N is wanted). */
static int spnull_factor(sg_spnull *s, const double *H_values, double pivot_tol, int with_E)
{
    const int n = s->n, r = s->r, k = s->k, d = with_E ? s->d : 0;
    int q, c, j, t, z, pass, status = SG_LU_OK;
    double *Nc = s->N;
    for (q = 0; q < s->bp[r]; ++q) s->bval[q] = H_values[s->bmap[q]];
    if (r) {
        if (s->have_lu) status = sg_splu_refactor(s->lu, s->bval, pivot_tol);
        if (!s->have_lu || status == SG_LU_REPIVOT) {
            status = sg_splu_factor(s->lu, s->bval);
            if (status == SG_LU_OK) memcpy(s->bval0, s->bval, sizeof(double) * (size_t)s->bp[r]);
        }
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

int sg_spnull_factor(sg_spnull *s, const double *H_values, double pivot_tol)
{
    return spnull_factor(s, H_values, pivot_tol, 1);
}

const double *sg_spnull_basis(const sg_spnull *s) { return s->N; }

/* [I  E^T] b[:, col] through (I + E^T E)^-1 (Woodbury) into bR (r): the right-hand side of H_R^+
 * for column col of b (m x c). */
static void pinv_rhs(sg_spnull *s, const double *b, int c, int col, double *bR)
{
    const int r = s->r, d = s->d;
    int t, z;
    for (t = 0; t < r; ++t) bR[t] = b[s->R[t] * c + col];
    if (d) {
        for (t = 0; t < r; ++t) {
            double a = 0.0;
            for (z = 0; z < d; ++z) a += s->Et[t * d + z] * b[s->Z[z] * c + col];
            bR[t] += a;
        }
        woodbury(s, bR);
    }
}

void sg_spnull_pinv(sg_spnull *s, const double *b, int c, double *out)
{
    const int n = s->n;
    int col, j;
    for (col = 0; col + 1 < c; col += 2) {         /* two columns per pass of the LU solve */
        pinv_rhs(s, b, c, col, s->wn2);
        pinv_rhs(s, b, c, col + 1, s->wn4);
        row_pinv2(s, s->wn2, s->wn4, s->wn, s->wn3);
        for (j = 0; j < n; ++j) {
            out[j * c + col] = s->wn[j];
            out[j * c + col + 1] = s->wn3[j];
        }
    }
    if (col < c) {
        pinv_rhs(s, b, c, col, s->wn2);
        row_pinv(s, s->wn2, s->wn);
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

/* ---- CSR products ------------------------------------------------------------------------------ */
void sg_csr_mv(const sg_csr *A, const double *a, const double *x, double *y)
{
    int i, p;
    for (i = 0; i + 1 < A->rows; i += 2) {
        /* two rows at a time: two independent sums, each in the order of one (y is not x) */
        double v = 0.0, u = 0.0;
        const int e = A->indptr[i + 1], f = A->indptr[i + 2];
        for (p = A->indptr[i]; p < e; ++p) v += a[p] * x[A->indices[p]];
        for (p = e; p < f; ++p) u += a[p] * x[A->indices[p]];
        y[i] = v;
        y[i + 1] = u;
    }
    for (; i < A->rows; ++i) {
        double v = 0.0;
        for (p = A->indptr[i]; p < A->indptr[i + 1]; ++p) v += a[p] * x[A->indices[p]];
        y[i] = v;
    }
}

void sg_csr_mm(const sg_csr *A, const double *a, const double *B, double *Out, int k)
{
    int i, p, c;
    if (k == 1) {                                  /* one column (one degree of freedom) */
        sg_csr_mv(A, a, B, Out);
        return;
    }
    for (i = 0; i < A->rows; ++i) {
        double *o = Out + (size_t)i * k;
        for (c = 0; c < k; ++c) o[c] = 0.0;
        for (p = A->indptr[i]; p < A->indptr[i + 1]; ++p) {
            const double *b = B + (size_t)A->indices[p] * k;
            double v = a[p];
            for (c = 0; c < k; ++c) o[c] += v * b[c];
        }
    }
}

/* ---- the sparse linearization (symgen/steppers/sparse.py: SparseLinearization) ----------------- */
/* SG_SP_CONFIRM, SG_SP_VOLUME_DROP, SG_SP_SIGMA_STEPS_NEW: sg_constants.h (sparse.py's
 * CONFIRM, VOLUME_DROP, SIGMA_STEPS_NEW; symgen/runtime_constants.py) */
#define SG_SP_PIVOT_TOL 0.1      /* refactorize while every pivot is >= 0.1 of its column's largest */

struct sg_splin {
    int n, m, r, k;
    const int *Hp, *Hi, *order;
    double rank_tol;
    sg_spnull *sn;             /* the current partition (NULL before the first) */
    sg_splu *lu0;              /* n x m: the LU of H^T that picks the first partition */
    int *Iold;                 /* [n]: I before sp_lu_partition's choice by volume */
    sg_spnull *sc;             /* the symmetric chart's, on the same partition (NULL: not yet) */
    int *R, *I, *rows;         /* [m], [n], [m] (rows of a QR decision) */
    int *sel;                  /* [m] */
    double *A;                 /* m x n: H dense, rows orthogonalized in place (partition) */
    double *Q;                 /* m x n: orthonormal rows of H_R in the order chosen */
    int *qs, *qn;              /* m x n, m: the non-zeros of each row of Q (ascending) */
    double *Lc;                /* n x n: pivoted Cholesky columns (choice of I) */
    double *dg, *nrm;          /* n, m */
    double *v, *w, *z;         /* inverse iteration: m, n, m */
    double *G, *Gw;            /* H_Z N (d x k) and its Gram matrix */
    double vol, scale, sigma_min, g_max;
    int new_I, have_v;
    long partitions, column_changes, rank_confirmations;
};

void sg_splin_free(sg_splin *L)
{
    if (!L) return;
    sg_spnull_free(L->sn);
    sg_spnull_free(L->sc);
    sg_splu_free(L->lu0);
    free(L->R); free(L->I); free(L->Iold); free(L->rows); free(L->sel);
    free(L->A); free(L->Q); free(L->qs); free(L->qn); free(L->Lc); free(L->dg); free(L->nrm);
    free(L->v); free(L->w); free(L->z); free(L->G); free(L->Gw);
    free(L);
}

sg_splin *sg_splin_new(int n, int m, const int *H_indptr, const int *H_indices,
                       const int *col_order, double rank_tol)
{
    sg_splin *L;
    size_t nn = (size_t)n, mm = (size_t)m;
    if (n < 0 || m < 0) return NULL;
    L = (sg_splin *)calloc(1, sizeof(sg_splin));
    if (!L) return NULL;
    L->n = n; L->m = m; L->Hp = H_indptr; L->Hi = H_indices; L->order = col_order;
    L->rank_tol = rank_tol;
    L->R = (int *)alloc0(mm, sizeof(int));
    L->I = (int *)alloc0(nn, sizeof(int));
    L->Iold = (int *)alloc0(nn, sizeof(int));
    L->rows = (int *)alloc0(mm, sizeof(int));
    L->sel = (int *)alloc0(mm, sizeof(int));
    L->A = (double *)alloc0(mm * nn, sizeof(double));
    L->Q = (double *)alloc0(mm * nn, sizeof(double));
    L->qs = (int *)alloc0(mm * nn, sizeof(int));
    L->qn = (int *)alloc0(mm, sizeof(int));
    L->Lc = (double *)alloc0(nn * nn, sizeof(double));
    L->dg = (double *)alloc0(nn, sizeof(double));
    L->nrm = (double *)alloc0(mm, sizeof(double));
    L->v = (double *)alloc0(mm, sizeof(double));
    L->w = (double *)alloc0(nn, sizeof(double));
    L->z = (double *)alloc0(mm, sizeof(double));
    L->G = (double *)alloc0((mm > nn ? mm : nn) * nn, sizeof(double));   /* H_Z N; a copy of N */
    L->Gw = (double *)alloc0(nn * nn, sizeof(double));
    if (!L->R || !L->I || !L->Iold || !L->rows || !L->sel || !L->A || !L->Q || !L->qs || !L->qn
        || !L->Lc || !L->dg || !L->nrm || !L->v || !L->w || !L->z || !L->G || !L->Gw) {
        sg_splin_free(L);
        return NULL;
    }
    L->sigma_min = NAN;
    L->scale = NAN;
    return L;
}

static int sp_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The independent rows by the dense path's rule (sparse.py _qr_rows): the pivots of a pivoted
 * QR of H^T (here Gram-Schmidt on the rows of H, largest remaining norm first, each pivot row
 * orthogonalized twice), |R_jj| > rank_tol |R_00|.  Rows into L->rows (sorted), the orthonormal
 * rows into L->Q (in the order chosen); returns r.  Every product runs over the non-zeros of one
 * factor only (the support lists L->qs of the rows of Q, the support of the pivot row), in
 * ascending index order: the sums are those of the dense loops term for term (the skipped terms
 * are exact zeros), so the result is the dense Gram-Schmidt's, at a cost that follows the fill
 * of Q (for a one-dof chain of loops the rows of Q fill in completely after about half the
 * pivots: O(m^2 n) all the same, which is why a run's first partition comes from
 * sp_lu_partition when it can). */
static int sp_qr_rows(sg_splin *L, const double *Hv)
{
    const int n = L->n, m = L->m;
    double *A = L->A, d0 = 0.0;
    int i, j, p, t, u, r = 0, nq;
    int *qs;
    for (i = 0; i < m * n; ++i) A[i] = 0.0;
    for (i = 0; i < m; ++i) {
        double s = 0.0;
        for (p = L->Hp[i]; p < L->Hp[i + 1]; ++p) A[(size_t)i * n + L->Hi[p]] = Hv[p];
        for (t = 0; t < n; ++t) s += A[(size_t)i * n + t] * A[(size_t)i * n + t];
        L->nrm[i] = s;
        L->sel[i] = 0;
    }
    for (j = 0; j < m && j < n; ++j) {
        int piv = -1;
        double big = -1.0, dj;
        double *q = L->Q + (size_t)j * n;
        for (i = 0; i < m; ++i)
            if (!L->sel[i] && L->nrm[i] > big) { big = L->nrm[i]; piv = i; }
        if (piv < 0) break;
        memcpy(q, A + (size_t)piv * n, (size_t)n * sizeof(double));
        for (t = 0; t < j; ++t) {                  /* second pass against the chosen rows */
            const double *qt = L->Q + (size_t)t * n;
            const int *st = L->qs + (size_t)t * n;
            double c = 0.0;
            for (u = 0; u < L->qn[t]; ++u) c += qt[st[u]] * q[st[u]];
            if (c != 0.0)
                for (u = 0; u < L->qn[t]; ++u) q[st[u]] -= c * qt[st[u]];
        }
        dj = 0.0;
        for (i = 0; i < n; ++i) dj += q[i] * q[i];
        dj = sqrt(dj);
        if (j == 0) d0 = dj;
        if (!(d0 > 0.0) || !(dj > L->rank_tol * d0)) break;
        qs = L->qs + (size_t)j * n;
        nq = 0;
        for (i = 0; i < n; ++i) {
            q[i] /= dj;
            if (q[i] != 0.0) qs[nq++] = i;
        }
        L->qn[j] = nq;
        L->sel[piv] = 1;
        L->rows[r++] = piv;
        for (i = 0; i < m; ++i) {                  /* orthogonalize the other rows */
            double *a = A + (size_t)i * n, c = 0.0, s = 0.0;
            if (L->sel[i]) continue;
            for (u = 0; u < nq; ++u) c += q[qs[u]] * a[qs[u]];
            if (c == 0.0) continue;                /* a and its norm stay as they are */
            for (u = 0; u < nq; ++u) a[qs[u]] -= c * q[qs[u]];
            for (t = 0; t < n; ++t) s += a[t] * a[t];
            L->nrm[i] = s;
        }
    }
    qsort(L->rows, (size_t)r, sizeof(int), sp_cmp_int);
    return r;
}

/* I: greedy maximum volume of the null-space basis (sparse.py _choose_columns: the pivots of a
 * pivoted QR of N^T), as the pivots of a pivoted Cholesky of the projector P = N N^T onto
 * null(H_R), from the orthonormal rows Q of H_R (from_N = 0: P = I - Q^T Q) or from a basis N
 * (from_N = 1).  L->vol = |det N_I| = sqrt of the product of the pivots. */
static void sp_choose_columns(sg_splin *L, int from_N, const double *N)
{
    const int n = L->n, k = L->k, r = L->r;
    double *Lc = L->Lc, *dg = L->dg, vol2 = 1.0;
    int i, j, l, t;
    for (i = 0; i < n; ++i) {
        double s = 0.0;
        if (from_N) for (t = 0; t < k; ++t) s += N[(size_t)i * k + t] * N[(size_t)i * k + t];
        else {
            s = 1.0;
            for (t = 0; t < r; ++t) s -= L->Q[(size_t)t * n + i] * L->Q[(size_t)t * n + i];
        }
        dg[i] = s;
    }
    for (j = 0; j < k; ++j) {
        int p = -1;
        double big = -HUGE_VAL, piv;
        for (i = 0; i < n; ++i) {
            int chosen = 0;
            for (l = 0; l < j; ++l) if (L->I[l] == i) chosen = 1;
            if (!chosen && dg[i] > big) { big = dg[i]; p = i; }
        }
        L->I[j] = p;
        piv = big > 0.0 ? big : 0.0;
        vol2 *= piv;
        for (i = 0; i < n; ++i) {                   /* column p of P, minus the chosen part */
            double s = 0.0;
            if (from_N) for (t = 0; t < k; ++t) s += N[(size_t)i * k + t] * N[(size_t)p * k + t];
            else {
                s = i == p ? 1.0 : 0.0;
                for (t = 0; t < r; ++t) s -= L->Q[(size_t)t * n + i] * L->Q[(size_t)t * n + p];
            }
            for (l = 0; l < j; ++l) s -= Lc[(size_t)i * n + l] * Lc[(size_t)p * n + l];
            Lc[(size_t)i * n + j] = piv > 0.0 ? s / sqrt(piv) : 0.0;
        }
        for (i = 0; i < n; ++i) dg[i] -= Lc[(size_t)i * n + j] * Lc[(size_t)i * n + j];
    }
    qsort(L->I, (size_t)k, sizeof(int), sp_cmp_int);
    L->vol = sqrt(vol2);
}

/* A new sg_spnull on the rows L->R and the coordinates L->I; 0, or -3 out of memory. */
static int sp_new_partition(sg_splin *L)
{
    sg_spnull_free(L->sc);                   /* the chart's follows (sg_splin_chart_basis) */
    L->sc = NULL;
    sg_spnull_free(L->sn);
    L->sn = sg_spnull_new(L->n, L->m, L->Hp, L->Hi, L->order, L->r, L->R, L->k, L->I);
    return L->sn ? 0 : -3;
}

/* sparse.py _partition: rows R = the rows of the last sp_qr_rows (r of them), I from Q. */
static int sp_partition(sg_splin *L, int r)
{
    memcpy(L->R, L->rows, (size_t)r * sizeof(int));
    L->r = r;
    L->k = L->n - r;
    sp_choose_columns(L, 0, NULL);
    L->have_v = 0;
    L->partitions += 1;
    return sp_new_partition(L);
}

static int sp_factor_block(sg_splin *L, const double *Hv);

/* The first partition without sp_qr_rows' Gram-Schmidt (O(m^2 n): the rows of Q fill in), for H
 * of full row rank: a sparse LU with partial pivoting of H^T (its columns are the rows of H, so
 * H's CSR pattern is H^T's compressed columns) picks m coordinates D with H[:, D] nonsingular;
 * R = every row, and I, the other coordinates, is then chosen anew by volume from the basis N of
 * that partition (sp_choose_columns from N: the pivots of a pivoted Cholesky of N N^T, the
 * projector I - Q^T Q of the QR path).  Returns 0 (the partition is made), 1 (m > n, or a pivot of
 * the LU at or below CONFIRM rank_tol times the largest row norm: the QR path decides) or < 0
 * (out of memory).  The rank check of every factorization (sp_sigma, the QR confirmation) then
 * holds this partition to the same rule as the QR path's. */
static int sp_lu_partition(sg_splin *L, const double *Hv)
{
    const int n = L->n, m = L->m;
    int i, t, st, same;
    double small = HUGE_VAL;
    if (m == 0 || m > n) return 1;
    if (!L->lu0 && !(L->lu0 = splu_new(n, m, L->Hp, L->Hi))) return -3;
    st = sg_splu_factor(L->lu0, Hv);
    if (st == SG_LU_NOMEM) return -3;
    if (st != SG_LU_OK) return 1;
    for (i = 0; i < m; ++i) {
        double u = fabs(1.0 / L->lu0->Udi[i]);
        if (u < small) small = u;
    }
    if (!(small > SG_SP_CONFIRM * L->rank_tol * L->scale)) return 1;
    for (i = 0; i < m; ++i) L->R[i] = i;
    L->r = m;
    L->k = n - m;
    for (i = 0, t = 0; i < n; ++i)
        if (L->lu0->pinv[i] < 0) L->I[t++] = i;
    L->have_v = 0;
    if ((st = sp_new_partition(L)) < 0) return st;
    if (L->k) {
        if ((st = sp_factor_block(L, Hv)) < 0) return st == -3 ? st : 1;
        memcpy(L->G, L->sn->N, (size_t)n * (size_t)L->k * sizeof(double));
        memcpy(L->Iold, L->I, (size_t)L->k * sizeof(int));
        sp_choose_columns(L, 1, L->G);
        for (i = 0, same = 1; same && i < L->k; ++i) same = L->Iold[i] == L->I[i];
        if (!same && (st = sp_new_partition(L)) < 0) return st;
    } else {
        L->vol = 1.0;
    }
    L->partitions += 1;
    return 0;
}

/* sparse.py _factor_block: the LU of H[R, D], N, E; and g_max = sigma_max(H_Z N). */
static int sp_factor_block(sg_splin *L, const double *Hv)
{
    sg_spnull *s = L->sn;
    const int k = s->k, d = s->d, n = s->n;
    const double *N = s->N;
    int st = sg_spnull_factor(s, Hv, SG_SP_PIVOT_TOL), q, i, j, c, it;
    if (st == SG_LU_NOMEM) return -3;
    if (st != SG_LU_OK) return -2;
    L->g_max = 0.0;
    if (d && k) {
        /* G = H_Z N (d x k); sigma_max^2 = largest eigenvalue of G^T G (power iteration) */
        double *G = L->G, *Gw = L->Gw, *x = L->w, *y = L->dg, lam = 0.0;
        for (i = 0; i < d * k; ++i) G[i] = 0.0;
        for (q = 0; q < s->nZ; ++q)
            for (c = 0; c < k; ++c)
                G[(size_t)s->zi[q] * k + c] += Hv[s->zp[q]] * N[(size_t)s->zc[q] * k + c];
        for (i = 0; i < k; ++i)
            for (j = 0; j < k; ++j) {
                double a = 0.0;
                for (q = 0; q < d; ++q) a += G[(size_t)q * k + i] * G[(size_t)q * k + j];
                Gw[(size_t)i * k + j] = a;
            }
        for (i = 0; i < k; ++i) x[i] = 1.0 + 0.1 * i;
        for (it = 0; it < 200; ++it) {
            double nx = 0.0, prev = lam;
            for (i = 0; i < k; ++i) {
                double a = 0.0;
                for (j = 0; j < k; ++j) a += Gw[(size_t)i * k + j] * x[j];
                y[i] = a;
            }
            for (i = 0; i < k; ++i) nx += y[i] * y[i];
            nx = sqrt(nx);
            if (!(nx > 0.0)) { lam = 0.0; break; }
            lam = 0.0;
            for (i = 0; i < k; ++i) lam += x[i] * y[i];
            {
                double nxx = 0.0;
                for (i = 0; i < k; ++i) nxx += x[i] * x[i];
                lam /= nxx;
            }
            for (i = 0; i < k; ++i) x[i] = y[i] / nx;
            if (fabs(lam - prev) <= 1e-12 * fabs(lam)) break;
        }
        L->g_max = lam > 0.0 ? sqrt(lam) : 0.0;
    }
    (void)n;
    return 0;
}

/* sparse.py _sigma: sigma_min(H_R) by `steps` of inverse iteration on (H_R H_R^T)^-1, warm. */
static void sp_sigma(sg_splin *L, int steps)
{
    sg_spnull *s = L->sn;
    const int r = s->r;
    double rq = 0.0;
    int i, st;
    if (r == 0) {
        L->sigma_min = 0.0;
        return;
    }
    if (!L->have_v) {                       /* the start vector of sparse.py (an LCG) */
        double nv = 0.0;
        for (i = 0; i < r; ++i) {
            unsigned long long u = (1103515245ULL * (unsigned long long)i + 12345ULL)
                                   % 2147483648ULL;
            L->v[i] = (double)u / 2147483648.0 - 0.5;
            nv += L->v[i] * L->v[i];
        }
        nv = sqrt(nv);
        for (i = 0; i < r; ++i) L->v[i] /= nv;
        if (steps < SG_SP_SIGMA_STEPS_NEW) steps = SG_SP_SIGMA_STEPS_NEW;
        L->have_v = 1;
    }
    for (st = 0; st < steps; ++st) {
        double nz = 0.0;
        row_pinv(s, L->v, L->w);                     /* w = H_R^+ v */
        for (i = 0; i < r; ++i) L->z[i] = L->w[s->D[i]];
        sg_splu_solve_t(s->lu, L->z);                /* H_R^+T w = (H_R H_R^T)^-1 v */
        rq = 0.0;
        for (i = 0; i < r; ++i) { rq += L->v[i] * L->z[i]; nz += L->z[i] * L->z[i]; }
        nz = sqrt(nz);
        if (!(nz > 0.0 && nz - nz == 0.0)) break;
        for (i = 0; i < r; ++i) L->v[i] = L->z[i] / nz;
    }
    L->sigma_min = rq > 0.0 ? 1.0 / sqrt(rq) : 0.0;
}

/* |det N_I| (k x k, Gaussian elimination with partial pivoting). */
static double sp_volume(sg_splin *L)
{
    const int k = L->k;
    const double *N = L->sn->N;
    double *A = L->Gw, det = 1.0;
    int i, j, l;
    for (i = 0; i < k; ++i)
        for (j = 0; j < k; ++j) A[(size_t)i * k + j] = N[(size_t)L->I[i] * k + j];
    for (j = 0; j < k; ++j) {
        int p = j;
        for (i = j + 1; i < k; ++i)
            if (fabs(A[(size_t)i * k + j]) > fabs(A[(size_t)p * k + j])) p = i;
        if (A[(size_t)p * k + j] == 0.0) return 0.0;
        if (p != j)
            for (l = 0; l < k; ++l) {
                double t = A[(size_t)j * k + l];
                A[(size_t)j * k + l] = A[(size_t)p * k + l];
                A[(size_t)p * k + l] = t;
            }
        det *= A[(size_t)j * k + j];
        for (i = j + 1; i < k; ++i) {
            double f = A[(size_t)i * k + j] / A[(size_t)j * k + j];
            for (l = j; l < k; ++l) A[(size_t)i * k + l] -= f * A[(size_t)j * k + l];
        }
    }
    return fabs(det);
}

int sg_splin_factor(sg_splin *L, const double *Hv)
{
    const int m = L->m, nnz = L->Hp[L->m];
    int i, p, st;
    double big = 0.0, thr;
    for (p = 0; p < nnz; ++p)
        if (Hv[p] - Hv[p] != 0.0) return -1;
    for (i = 0; i < m; ++i) {
        double s = 0.0;
        for (p = L->Hp[i]; p < L->Hp[i + 1]; ++p) s += Hv[p] * Hv[p];
        if (s > big) big = s;
    }
    L->scale = sqrt(big);
    if (!L->sn) {
        if ((st = sp_lu_partition(L, Hv)) < 0) return st;
        if (st == 1 && (st = sp_partition(L, sp_qr_rows(L, Hv))) < 0) return st;
    } else if (L->new_I) {
        /* choose I anew from the current N (copied: the partition's N goes with it) */
        memcpy(L->G, L->sn->N, (size_t)L->n * (size_t)L->k * sizeof(double));
        sp_choose_columns(L, 1, L->G);
        L->column_changes += 1;
        if ((st = sp_new_partition(L)) < 0) return st;
    }
    if ((st = sp_factor_block(L, Hv)) < 0) return st;
    sp_sigma(L, 1);
    thr = L->rank_tol * L->scale;
    if (L->sigma_min <= SG_SP_CONFIRM * thr || L->g_max * SG_SP_CONFIRM > thr) {
        int r = sp_qr_rows(L, Hv), same = r == L->r;
        L->rank_confirmations += 1;                  /* near the threshold: QR decides */
        for (i = 0; same && i < r; ++i) same = L->rows[i] == L->R[i];
        if (!same) {
            if ((st = sp_partition(L, r)) < 0) return st;
            if ((st = sp_factor_block(L, Hv)) < 0) return st;
            sp_sigma(L, SG_SP_SIGMA_STEPS_NEW);
        }
    }
    L->new_I = L->k ? sp_volume(L) < SG_SP_VOLUME_DROP * L->vol : 0;
    return L->k;
}

void sg_splin_restart(sg_splin *L)
{
    if (!L->sn) return;
    L->sn->have_lu = 0;
    L->have_v = 0;
    L->new_I = 0;
    L->partitions = 1;
    L->column_changes = 0;
    L->rank_confirmations = 0;
}

const double *sg_splin_basis(const sg_splin *L) { return L->sn->N; }
int sg_splin_rank(const sg_splin *L) { return L->r; }
void sg_splin_pinv(sg_splin *L, const double *b, int c, double *out)
{
    sg_spnull_pinv(L->sn, b, c, out);
}
void sg_splin_pinv_t(sg_splin *L, const double *y, double *out) { sg_spnull_pinv_t(L->sn, y, out); }

void sg_splin_s_range(const sg_splin *L, double *s_max, double *s_min)
{
    *s_max = L->sn ? L->scale : 0.0;
    *s_min = L->sn ? L->sigma_min : 0.0;
}

int sg_splin_info(const sg_splin *L, long *counts, int *rows, int *indep, int *k)
{
    counts[0] = L->partitions;
    counts[1] = L->column_changes;
    counts[2] = L->rank_confirmations;
    *k = L->sn ? L->k : -1;
    if (!L->sn) return -1;
    if (rows) memcpy(rows, L->R, (size_t)L->r * sizeof(int));
    if (indep) memcpy(indep, L->I, (size_t)L->k * sizeof(int));
    return L->r;
}

/* sparse.py SparseLinearization.chart_basis: N_s of null(H_s[R]) on the current partition, from
 * its own sg_spnull (created on the partition's rows and coordinates when the partition changes;
 * the step's factorization is not touched), without E. */
int sg_splin_chart_basis(sg_splin *L, const double *Hs_values, double *Ns)
{
    int st;
    if (!L->sn) return -2;
    if (L->k == 0) return 0;
    if (!L->sc) {
        L->sc = sg_spnull_new(L->n, L->m, L->Hp, L->Hi, L->order, L->r, L->R, L->k, L->I);
        if (!L->sc) return -3;
    }
    st = spnull_factor(L->sc, Hs_values, SG_SP_PIVOT_TOL, 0);
    if (st == SG_LU_NOMEM) return -3;
    if (st != SG_LU_OK) return -2;
    memcpy(Ns, L->sc->N, sizeof(double) * (size_t)L->n * (size_t)L->k);
    return 0;
}

/* ---- the state a stepper carries between steps (sg_state_get, sg_state_set) ------------------ */
void sg_image_io(sg_image *im, void *data, size_t bytes)
{
    if (im->p && im->set == 1 && data) memcpy(data, im->p + im->at, bytes);
    else if (im->p && !im->set) {
        if (data) memcpy(im->p + im->at, data, bytes);
        else memset(im->p + im->at, 0, bytes);
    }
    im->at += bytes;
}

void sg_image_val(sg_image *im, void *value, size_t bytes)
{
    if (im->p && im->set) memcpy(value, im->p + im->at, bytes);
    else if (im->p) memcpy(im->p + im->at, value, bytes);
    im->at += bytes;
}

void sg_image_refuse(sg_image *im, const char *what)
{
    if (im->p && im->set && !im->bad) im->bad = what;
}

int sg_image_int(sg_image *im, int *v, int lo, int hi, const char *what)
{
    int x = *v;
    sg_image_val(im, &x, sizeof x);
    if (x < lo || x > hi) sg_image_refuse(im, what);
    if (im->p && im->set == 1 && !im->bad) *v = x;
    return x;
}

long sg_image_count(sg_image *im, long *v, const char *what)
{
    long x = *v;
    sg_image_val(im, &x, sizeof x);
    if (x < 0 || x > SG_COUNT_MAX) sg_image_refuse(im, what);
    if (im->p && im->set == 1 && !im->bad) *v = x;
    return x;
}

/* One partition's sg_spnull: N (n x k; n^2 doubles reserved: a change of I starts from it) and the
 * values of its LU's last fresh factorization (nnz reserved), whose pivot order and L, U patterns
 * the refactorizations keep: setting replays that factorization (values that do not factor, which
 * no image of a run holds, leave no LU: the next step factors afresh).  Returns 0, or -3 (out of
 * memory). */
static int spnull_image(sg_spnull *s, int have_lu, size_t n, size_t nnz, sg_image *im)
{
    size_t nk = s ? (size_t)s->n * (size_t)s->k : 0, nb = s ? (size_t)s->bp[s->r] : 0;
    int st;
    sg_image_io(im, s ? s->N : NULL, nk * sizeof(double));
    sg_image_io(im, NULL, (n * n - nk) * sizeof(double));
    sg_image_io(im, s ? s->bval0 : NULL, nb * sizeof(double));
    sg_image_io(im, NULL, (nnz - nb) * sizeof(double));
    if (im->set != 1 || !s) return 0;
    s->have_lu = 0;
    if (have_lu && s->r) {
        memcpy(s->bval, s->bval0, nb * sizeof(double));
        st = sg_splu_factor(s->lu, s->bval);
        if (st == SG_LU_NOMEM) return -3;
        s->have_lu = st == SG_LU_OK;
    }
    return 0;
}

/* A list of `count` indices of `bound` things that must increase (in [0, bound)); the `total`
 * ints the image reserves for it are read into `list` (set 1) when the image has no problem. */
static void index_image(sg_image *im, int *list, int count, int total, int bound,
                        const char *what)
{
    int t, v, prev = -1;
    if (count < 0 || count > total) {
        sg_image_refuse(im, what);
        count = 0;
    }
    if (im->p && im->set)
        for (t = 0; t < count; ++t) {
            memcpy(&v, im->p + im->at + (size_t)t * sizeof(int), sizeof v);
            if (v <= prev || v >= bound) {
                sg_image_refuse(im, what);
                break;
            }
            prev = v;
        }
    sg_image_io(im, im->bad ? NULL : list, (size_t)total * sizeof(int));
}

int sg_splin_image(sg_splin *L, sg_image *im)
{
    const size_t n = (size_t)L->n, m = (size_t)L->m, nnz = (size_t)L->Hp[L->m];
    const int rmax = L->m < L->n ? L->m : L->n;
    int has[4], r, k, j;               /* a partition, its LU; the chart's sg_spnull, its LU */
    has[0] = L->sn != NULL;
    has[1] = has[0] && L->sn->have_lu;
    has[2] = L->sc != NULL;
    has[3] = has[2] && L->sc->have_lu;
    sg_image_val(im, has, sizeof has);
    for (j = 0; j < 4; ++j)
        if (has[j] != 0 && has[j] != 1) has[0] = -1;
    if (has[0] < 0 || has[1] > has[0] || has[2] > has[0] || has[3] > has[2])
        sg_image_refuse(im, "the sparse step's flags of its factorizations are not 0 or 1, or "
                        "an LU or the chart's partition is there without the partition");
    r = sg_image_int(im, &L->r, 0, rmax, "the sparse step's rank r is not within 0 ... min(m, n)");
    k = sg_image_int(im, &L->k, 0, L->n, "the sparse step's k is not within 0 ... n");
    if (has[0] == 1 && !im->bad && k != L->n - r)         /* (r, k in range: no overflow) */
        sg_image_refuse(im, "the sparse step's k is not n - r");
    if (has[0] != 1 || im->bad) r = k = 0;   /* (no partition, or refused: the lists unread) */
    sg_image_int(im, &L->new_I, 0, 1, "the sparse step's new_I is not 0 or 1");
    sg_image_int(im, &L->have_v, 0, 1, "the sparse step's have_v is not 0 or 1");
    sg_image_io(im, &L->vol, sizeof L->vol);
    sg_image_io(im, &L->scale, sizeof L->scale);
    sg_image_io(im, &L->sigma_min, sizeof L->sigma_min);
    sg_image_io(im, &L->g_max, sizeof L->g_max);
    sg_image_count(im, &L->partitions, "the sparse step's count of partitions is out of range");
    sg_image_count(im, &L->column_changes, "the sparse step's count of column changes is out of "
                   "range");
    sg_image_count(im, &L->rank_confirmations, "the sparse step's count of rank confirmations "
                   "is out of range");
    index_image(im, L->R, r, L->m, L->m, "the sparse step's rows R are not increasing rows of H "
                "(0 ... m - 1)");
    index_image(im, L->I, k, L->n, L->n, "the sparse step's coordinates I are not increasing "
                "coordinates (0 ... n - 1)");
    sg_image_io(im, L->v, m * sizeof(double));                  /* the inverse iteration's start */
    if (im->set == 1) {                /* the partition's operations made anew on (R, I) */
        sg_spnull_free(L->sc);
        sg_spnull_free(L->sn);
        L->sc = L->sn = NULL;
        if (has[0] && !(L->sn = sg_spnull_new(L->n, L->m, L->Hp, L->Hi, L->order, L->r, L->R,
                                              L->k, L->I)))
            return -3;
        if (has[2] && !(L->sc = sg_spnull_new(L->n, L->m, L->Hp, L->Hi, L->order, L->r, L->R,
                                              L->k, L->I)))
            return -3;
    }
    if (spnull_image(L->sn, has[1], n, nnz, im) < 0) return -3;
    return spnull_image(L->sc, has[3], n, nnz, im);
}
