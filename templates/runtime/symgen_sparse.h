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
 * Standard C99; needs only <stdlib.h> (malloc) and <string.h>.  Between SG_CDEF_BEGIN and
 * SG_CDEF_END: what Python's cffi reads (no preprocessor directives).
 */
#ifndef SYMGEN_SPARSE_H
#define SYMGEN_SPARSE_H

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
/* SG_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* SYMGEN_SPARSE_H */
