/* symgen_sparse.h: the sparse LU of the C runtime's sparse null-space step (issue 14).
 *
 * A left-looking LU with partial pivoting of a square sparse matrix in compressed-column form
 * (Gilbert and Peierls, SIAM J. Sci. Stat. Comput. 9 (1988): for each column a depth-first
 * search in the graph of L gives the non-zeros of L^-1 A(:, k) in topological order, a sparse
 * triangular solve computes them, the largest candidate is the pivot), and the numeric
 * refactorization of a matrix with the same pattern in the same pivot order (the patterns of L and
 * U stay those of the first factorization), which reports a pivot that fell below a fraction of its
 * column's largest candidate so the caller can factor again with fresh pivots.  The columns are
 * factored in the order given: pass them in a fill-reducing order (the generated
 * <name>_col_order).
 *
 * P A = L U with L unit lower triangular, stored by columns in A's row numbering, and U upper
 * triangular, stored by columns with its diagonal last.
 *
 * Standard C99; needs only <stdlib.h> (malloc), <string.h> and <limits.h>.  Between
 * SG_CDEF_BEGIN and SG_CDEF_END: what Python's cffi reads (no preprocessor directives).
 */
#ifndef SYMGEN_SPARSE_H
#define SYMGEN_SPARSE_H

#include <limits.h>

#ifdef __cplusplus
extern "C" {
#endif

/* SG_CDEF_BEGIN */
typedef struct sg_splu sg_splu;

/* Status of a factorization. */
enum { SG_LU_OK = 0, SG_LU_SINGULAR = 1, SG_LU_REPIVOT = 2, SG_LU_NOMEM = 3 };

/* An LU for n x n matrices of the pattern colptr[n + 1], rowind[colptr[n]] (row indices of each
 * column, any order, no duplicates); the arrays are copied.  NULL when out of memory or n < 0. */
sg_splu *sg_splu_new(int n, const int *colptr, const int *rowind);
void sg_splu_free(sg_splu *f);

/* Factor the matrix with the values `values` on the pattern (with fresh pivots).  Returns SG_LU_OK,
 * SG_LU_SINGULAR (a column without a non-zero candidate: `sg_splu_singular_column`) or
 * SG_LU_NOMEM. */
int sg_splu_factor(sg_splu *f, const double *values);

/* Factor again in the pivot order and on the L, U patterns of the last sg_splu_factor.  Returns
 * SG_LU_OK, or SG_LU_REPIVOT when some pivot is below pivot_tol times the largest candidate of its
 * column (or zero), or when there is no factorization yet: then call sg_splu_factor. */
int sg_splu_refactor(sg_splu *f, const double *values, double pivot_tol);

/* x = A^-1 b and x = A^-T b in place (b: n values), with the last successful factorization. */
void sg_splu_solve(sg_splu *f, double *b);
void sg_splu_solve_t(sg_splu *f, double *b);

/* Non-zeros of L (unit diagonal included) and U of the last factorization; the column that had
 * no pivot when sg_splu_factor returned SG_LU_SINGULAR (-1 otherwise). */
long sg_splu_nnz_L(const sg_splu *f);
long sg_splu_nnz_U(const sg_splu *f);
int sg_splu_singular_column(const sg_splu *f);

/* The operations of the sparse null-space step on one partition of H (m x n, CSR pattern
 * H_indptr[m + 1], H_indices; symgen/steppers/sparse.py is the reference): independent rows
 * rows[r] (sorted; the other d = m - r rows are redundant), independent coordinates indep[k]
 * (k = n - r), the others D in the order of col_order[n].  NULL when out of memory or r != n - k. */
typedef struct sg_spnull sg_spnull;
sg_spnull *sg_spnull_new(int n, int m, const int *H_indptr, const int *H_indices,
                         const int *col_order, int r, const int *rows, int k, const int *indep);
void sg_spnull_free(sg_spnull *s);
/* With the values of H on its pattern: the LU of H[R, D] (refactorization in the last pivot order
 * while its pivots stay above pivot_tol of their column, else fresh pivots), the orthonormal basis
 * N of null(H_R) from N_c = P[-H_RD^-1 H_RI; I] (modified Gram-Schmidt, twice), and for redundant
 * rows E = H_Z H_R^+ and the Cholesky factor of I + E E^T.  Returns an SG_LU_* status. */
int sg_spnull_factor(sg_spnull *s, const double *H_values, double pivot_tol);
/* N (n x k, row-major) of the last sg_spnull_factor. */
const double *sg_spnull_basis(const sg_spnull *s);
/* out = H~^+ b for c right-hand sides: b is m x c, out n x c (row-major); H~ = [H_R; E H_R], the
 * minimum-norm (least-squares in the redundant rows) inverse of the dense pivoted-QR path. */
void sg_spnull_pinv(sg_spnull *s, const double *b, int c, double *out);
/* out (m) = H~^+T y (y: n): the multipliers of Eq. 51. */
void sg_spnull_pinv_t(sg_spnull *s, const double *y, double *out);
/* SG_CDEF_END */

/* The runtime's use of the above (not read by cffi).  A CSR matrix pattern (values apart): */
typedef struct sg_csr {
    int rows, cols;
    const int *indptr, *indices;
} sg_csr;
/* y = A x (x: cols, y: rows) and Out = A B (B: cols x k, Out: rows x k, row-major) for the values
 * `a` on the pattern A. */
void sg_csr_mv(const sg_csr *A, const double *a, const double *x, double *y);
/* sg_splu_solve of b and of c (n values each) in one pass over L and U (the same numbers). */
void sg_splu_solve2(sg_splu *f, double *b, double *c);
void sg_csr_mm(const sg_csr *A, const double *a, const double *B, double *Out, int k);

/* The sparse linearization of the null-space step (symgen/steppers/sparse.py:
 * SparseLinearization): the partition of H (rows R by the dense pivoted QR rule of H^T, the k
 * independent coordinates I by maximum volume of the null-space basis), an sg_spnull per partition,
 * the per-iteration rank check (sigma_min(H_R) by warm inverse iteration, sigma_max(H_Z N), the QR
 * decision within SG_SP_CONFIRM of the threshold), the volume check of I.  The pattern and order
 * arrays are not copied (the model's constant tables). */
typedef struct sg_splin sg_splin;
sg_splin *sg_splin_new(int n, int m, const int *H_indptr, const int *H_indices,
                       const int *col_order, double rank_tol);
void sg_splin_free(sg_splin *L);
/* The next sg_splin_factor as the first one of a run: the current partition (rows R, coordinates
 * I) is kept, everything else (LU, the inverse iteration's start vector, the counters, with the
 * partition counted once) starts afresh.  For a run whose partition was made while computing
 * its initial state at the same configuration. */
void sg_splin_restart(sg_splin *L);
/* Factor H (its values on the pattern): returns k = n - rank, -1 when H has non-finite entries,
 * -2 when the LU of H[R, D] is singular or the basis degenerate, -3 out of memory. */
int sg_splin_factor(sg_splin *L, const double *H_values);
const double *sg_splin_basis(const sg_splin *L);      /* N, n x k (row-major) */
int sg_splin_rank(const sg_splin *L);
/* out = H~^+ b (b: m x c, out: n x c) and out = H~^+T y (y: n, out: m) */
void sg_splin_pinv(sg_splin *L, const double *b, int c, double *out);
void sg_splin_pinv_t(sg_splin *L, const double *y, double *out);
/* (max row norm of H, sigma_min(H_R) estimate): the scale of the rank decision and the floor's. */
void sg_splin_s_range(const sg_splin *L, double *s_max, double *s_min);
/* counts[3] = partitions, column changes, rank confirmations; rows (m) and indep (n) receive R and
 * I; returns r (the number of rows) and *k. */
int sg_splin_info(const sg_splin *L, long *counts, int *rows, int *indep, int *k);
/* The symmetric chart's N_s (n x k, row-major, into Ns): an orthonormal basis of the null space of
 * H_s[R] for the values Hs_values of H_s = (H(t) + H(t + h)) / 2 on H's pattern, on the partition
 * (R, I, k) of the last sg_splin_factor, from a second LU (of H_s[R, D]; the step's is left as it
 * is).  Returns 0, -2 (H_s[R, D] singular, or no partition yet) or -3 (out of memory). */
int sg_splin_chart_basis(sg_splin *L, const double *Hs_values, double *Ns);

/* A byte image of a stepper's state (sg_state_get, sg_state_check, sg_state_set): sg_image_io
 * appends `bytes` of `data` at p + at (set = 0; data NULL: zeros), reads them from there into data
 * (set = 1; data NULL: skips them) or only steps over them (set = 2: a check, nothing is read into
 * the stepper); p NULL only counts (at: the image's size).  Nothing read from an image is used
 * before it is checked: sg_image_val reads a value (set 1 or 2; set 0 writes it) for the caller to
 * check, sg_image_refuse records the first problem in `bad` (NULL: none), sg_image_int and
 * sg_image_count read and check an int in [lo, hi] or a count in [0, SG_COUNT_MAX] and store it
 * (set 1) when the image has no problem.  sg_state_set checks the whole image (set 2) before it
 * reads any of it (set 1). */
typedef struct sg_image {
    unsigned char *p;
    size_t at;
    int set;
    const char *bad;
} sg_image;
void sg_image_io(sg_image *im, void *data, size_t bytes);
void sg_image_val(sg_image *im, void *value, size_t bytes);
void sg_image_refuse(sg_image *im, const char *what);
int sg_image_int(sg_image *im, int *v, int lo, int hi, const char *what);
long sg_image_count(sg_image *im, long *v, const char *what);
/* The largest count an image may hold (no run counts that far: a count set from an image cannot
 * overflow). */
#define SG_COUNT_MAX (LONG_MAX / 2)
/* The sparse step's part of the image, always of the same size for L: the partition (its rows R
 * and coordinates I checked against H's m rows and n coordinates: r <= min(m, n), k = n - r, each
 * list increasing), the counts, the inverse iteration's start and what each LU keeps (its pivot
 * order: the values of its last fresh factorization, replayed when set; values that no longer
 * factor leave the next step a fresh factorization).  Returns 0, or -3 (out of memory). */
int sg_splin_image(sg_splin *L, sg_image *im);

#ifdef __cplusplus
}
#endif

#endif /* SYMGEN_SPARSE_H */
