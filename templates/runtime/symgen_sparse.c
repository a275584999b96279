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
