/* sg_dense.c: the dense linear algebra of the runtime, written out (no BLAS/LAPACK) and shaped
 * so that the steps' numbers are those of the numpy/LAPACK calls of the Python reference:
 * numpy-semantics reductions (max with NaN propagation, norm2), row-major products, LU with
 * partial pivoting (dgesv), one-sided Jacobi SVD and the minimum-norm least squares on it
 * (numpy.linalg.lstsq), Householder QR with column pivoting (dgeqp3) and its Q.
 * Part of the unity build symgen_runtime.c (not compiled on its own).
 */
#include "sg_internal.h"

/* ---------------------------------------------------------------------------------------------
 * small helpers (numpy semantics where the Python code relies on them)
 * ------------------------------------------------------------------------------------------- */
static int sg_isfinite(double v) { return v - v == 0.0; }

/* Python's max(a, b, c): the first argument unless a later one compares greater. */
static double py_max3(double a, double b, double c)
{
    double r = a;
    if (b > r) r = b;
    if (c > r) r = c;
    return r;
}

/* base.py norm2: one dot product, rescaled only if the squares overflow. */
static double norm2(const double *v, int len)
{
    double s = 0.0, a = 0.0, u;
    int i;
    for (i = 0; i < len; ++i) s += v[i] * v[i];
    if (s < HUGE_VAL) return sqrt(s);
    for (i = 0; i < len; ++i) {
        u = fabs(v[i]);
        if (u != u) return u;
        if (u > a) a = u;
    }
    if (!sg_isfinite(a)) return a;
    s = 0.0;
    for (i = 0; i < len; ++i) s += (v[i] / a) * (v[i] / a);
    return a * sqrt(s);
}

/* y = A x, A rows x cols */
static void mv(const double *A, const double *x, double *y, int rows, int cols)
{
    int i, j;
    for (i = 0; i + 1 < rows; i += 2) {
        /* two rows at a time: two independent sums, each in the order of one (y is not x) */
        double s = 0.0, u = 0.0;
        const double *ai = A + (size_t)i * cols, *bi = ai + cols;
        for (j = 0; j < cols; ++j) {
            s += ai[j] * x[j];
            u += bi[j] * x[j];
        }
        y[i] = s;
        y[i + 1] = u;
    }
    for (; i < rows; ++i) {
        double s = 0.0;
        const double *ai = A + (size_t)i * cols;
        for (j = 0; j < cols; ++j) s += ai[j] * x[j];
        y[i] = s;
    }
}

/* y = A^T x, A rows x cols */
static void mtv(const double *A, const double *x, double *y, int rows, int cols)
{
    int i, j;
    if (cols == 1) {                      /* one column: the same sum, in a register */
        double s = 0.0;
        for (i = 0; i < rows; ++i) s += A[i] * x[i];
        y[0] = s;
        return;
    }
    for (j = 0; j < cols; ++j) y[j] = 0.0;
    for (i = 0; i < rows; ++i) {
        const double *ai = A + (size_t)i * cols;
        double xi = x[i];
        for (j = 0; j < cols; ++j) y[j] += ai[j] * xi;
    }
}

/* Out = A B, A r x c, B c x k */
static void mm(const double *A, const double *B, double *Out, int r, int c, int k)
{
    int i, j, l;
    if (k == 1) {
        /* one column (a one-dof null space): the same sums in the same order, in registers,
         * two rows at a time (Out is neither A nor B) */
        for (i = 0; i < r; i += 2) {
            const double *ai = A + (size_t)i * c, *bi = ai + c;
            double s = 0.0, u = 0.0;
            if (i + 1 < r) {
                for (l = 0; l < c; ++l) {
                    if (ai[l] != 0.0) s += ai[l] * B[l];
                    if (bi[l] != 0.0) u += bi[l] * B[l];
                }
                Out[i + 1] = u;
            } else {
                for (l = 0; l < c; ++l)
                    if (ai[l] != 0.0) s += ai[l] * B[l];
            }
            Out[i] = s;
        }
        return;
    }
    for (i = 0; i < r; ++i) {
        double *oi = Out + (size_t)i * k;
        for (j = 0; j < k; ++j) oi[j] = 0.0;
        for (l = 0; l < c; ++l) {
            double ail = A[(size_t)i * c + l];
            const double *bl = B + (size_t)l * k;
            if (ail == 0.0) continue;
            for (j = 0; j < k; ++j) oi[j] += ail * bl[j];
        }
    }
}

/* Out = A^T B, A r x c, B r x k (Out c x k) */
static void mtm(const double *A, const double *B, double *Out, int r, int c, int k)
{
    int i, j, l;
    if (c == 1 && k == 1) {               /* one by one: the same sum, in a register */
        double s = 0.0;
        for (l = 0; l < r; ++l)
            if (A[l] != 0.0) s += A[l] * B[l];
        Out[0] = s;
        return;
    }
    for (i = 0; i < c * k; ++i) Out[i] = 0.0;
    for (l = 0; l < r; ++l) {
        const double *al = A + (size_t)l * c;
        const double *bl = B + (size_t)l * k;
        for (i = 0; i < c; ++i) {
            double a = al[i];
            double *oi = Out + (size_t)i * k;
            if (a == 0.0) continue;
            for (j = 0; j < k; ++j) oi[j] += a * bl[j];
        }
    }
}


/* numpy's max(|d_i| / w_i) with NaN propagation (initial 0). */
static double wmax(const double *a, const double *b, const double *wt, int n)
{
    double r = 0.0, v;
    int i;
    for (i = 0; i < n; ++i) {
        v = fabs(a[i] - b[i]) / wt[i];
        if (v != v) return v;
        if (v > r) r = v;
    }
    return r;
}

/* LU with partial pivoting (LAPACK dgesv semantics): solves A x = b in place of b; A is
 * overwritten.  Returns 0, or 1 when a pivot is exactly zero (singular). */
static int lu_solve(double *A, double *b, int k, int *ipiv)
{
    int i, j, l, p;
    for (j = 0; j < k; ++j) {
        double big = fabs(A[(size_t)j * k + j]);
        p = j;
        for (i = j + 1; i < k; ++i) {
            double v = fabs(A[(size_t)i * k + j]);
            if (v > big) { big = v; p = i; }
        }
        ipiv[j] = p;
        if (A[(size_t)p * k + j] == 0.0) return 1;
        if (p != j) {
            for (l = 0; l < k; ++l) {
                double tmp = A[(size_t)j * k + l];
                A[(size_t)j * k + l] = A[(size_t)p * k + l];
                A[(size_t)p * k + l] = tmp;
            }
            { double tmp = b[j]; b[j] = b[p]; b[p] = tmp; }
        }
        for (i = j + 1; i < k; ++i) {
            double lij = A[(size_t)i * k + j] / A[(size_t)j * k + j];
            A[(size_t)i * k + j] = lij;
            if (lij == 0.0) continue;
            for (l = j + 1; l < k; ++l) A[(size_t)i * k + l] -= lij * A[(size_t)j * k + l];
            b[i] -= lij * b[j];
        }
    }
    for (i = k - 1; i >= 0; --i) {
        double s = b[i];
        for (l = i + 1; l < k; ++l) s -= A[(size_t)i * k + l] * b[l];
        b[i] = s / A[(size_t)i * k + i];
    }
    return 0;
}

/* One-sided Jacobi (Hestenes): rotate the N columns of U (N x N, column-major) until they are
 * orthogonal; the singular values are then the column norms of U.  V (N x N, column-major), when
 * not NULL, takes the same rotations (A = U V^T for V = I on entry). */
static void jacobi_rotate(double *U, double *V, int N)
{
    int i, j, l, sweep;
    for (sweep = 0; sweep < 100; ++sweep) {
        int rotated = 0;
        for (i = 0; i < N - 1; ++i)
            for (j = i + 1; j < N; ++j) {
                double *ui = U + (size_t)i * N, *uj = U + (size_t)j * N;
                double al = 0.0, be = 0.0, ga = 0.0, zeta, t, c, sn;
                for (l = 0; l < N; ++l) {
                    al += ui[l] * ui[l];
                    be += uj[l] * uj[l];
                    ga += ui[l] * uj[l];
                }
                if (al == 0.0 || be == 0.0 || fabs(ga) <= SG_EPS * sqrt(al * be)) continue;
                rotated = 1;
                zeta = (be - al) / (2.0 * ga);
                t = (zeta >= 0.0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                c = 1.0 / sqrt(1.0 + t * t);
                sn = c * t;
                for (l = 0; l < N; ++l) {
                    double a1 = ui[l], a2 = uj[l];
                    ui[l] = c * a1 - sn * a2;
                    uj[l] = sn * a1 + c * a2;
                }
                if (V) {
                    double *vi = V + (size_t)i * N, *vj = V + (size_t)j * N;
                    for (l = 0; l < N; ++l) {
                        double a1 = vi[l], a2 = vj[l];
                        vi[l] = c * a1 - sn * a2;
                        vj[l] = sn * a1 + c * a2;
                    }
                }
            }
        if (!rotated) break;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Householder QR (column-major A, rows x cols, column j at A + j*rows), optional column pivoting
 * by the largest remaining column norm (LAPACK dgeqp3's rule).  Reflector i: v = (1, A[i+1:, i]),
 * H_i = I - tau_i v v^T; R in the upper triangle.
 * ------------------------------------------------------------------------------------------- */
static void householder_qr(double *A, int rows, int cols, double *tau, int *piv, double *cn)
{
    /* cn: 2 cols doubles when pivoting: partial column norms (LAPACK's vn1) and the norms they
     * were last computed from (vn2), downdated after every reflector as dgeqp3 does */
    int kmin = rows < cols ? rows : cols;
    int i, j, l;
    double *vn1 = cn, *vn2 = cn ? cn + cols : (double *)0;
    const double tol3z = sqrt(SG_EPS);
    if (piv) {
        for (j = 0; j < cols; ++j) {
            double s = 0.0;
            const double *aj = A + (size_t)j * rows;
            piv[j] = j;
            for (l = 0; l < rows; ++l) s += aj[l] * aj[l];
            vn1[j] = vn2[j] = sqrt(s);
        }
    }
    for (i = 0; i < kmin; ++i) {
        double *ai;
        double alpha, xnorm, beta, t;
        if (piv) {
            int p = i;
            double big = vn1[i];
            for (j = i + 1; j < cols; ++j)
                if (vn1[j] > big) { big = vn1[j]; p = j; }
            if (p != i) {
                double *ap = A + (size_t)p * rows, *aq = A + (size_t)i * rows;
                for (l = 0; l < rows; ++l) { t = ap[l]; ap[l] = aq[l]; aq[l] = t; }
                l = piv[p]; piv[p] = piv[i]; piv[i] = l;
                vn1[p] = vn1[i];
                vn2[p] = vn2[i];
            }
        }
        ai = A + (size_t)i * rows;
        alpha = ai[i];
        xnorm = 0.0;
        for (l = i + 1; l < rows; ++l) xnorm += ai[l] * ai[l];
        xnorm = sqrt(xnorm);
        if (xnorm == 0.0) {
            tau[i] = 0.0;
        } else {
            beta = -copysign(hypot(alpha, xnorm), alpha);
            tau[i] = (beta - alpha) / beta;
            t = 1.0 / (alpha - beta);
            for (l = i + 1; l < rows; ++l) ai[l] *= t;
            ai[i] = beta;
            for (j = i + 1; j < cols; j += 2) {
                /* two columns at a time: two independent sums, each in the order of one */
                double *aj = A + (size_t)j * rows, *ak = aj + rows;
                double sum = aj[i], sk = 0.0;
                int two = j + 1 < cols;
                if (two) {
                    sk = ak[i];
                    for (l = i + 1; l < rows; ++l) {
                        sum += ai[l] * aj[l];
                        sk += ai[l] * ak[l];
                    }
                } else {
                    for (l = i + 1; l < rows; ++l) sum += ai[l] * aj[l];
                }
                sum *= tau[i];
                aj[i] -= sum;
                for (l = i + 1; l < rows; ++l) aj[l] -= sum * ai[l];
                if (two) {
                    sk *= tau[i];
                    ak[i] -= sk;
                    for (l = i + 1; l < rows; ++l) ak[l] -= sk * ai[l];
                }
            }
        }
        if (piv) {
            for (j = i + 1; j < cols; ++j) {
                double *aj = A + (size_t)j * rows, temp, temp2;
                if (vn1[j] == 0.0) continue;
                temp = fabs(aj[i]) / vn1[j];
                temp = 1.0 - temp * temp;
                if (temp < 0.0) temp = 0.0;
                temp2 = temp * (vn1[j] / vn2[j]) * (vn1[j] / vn2[j]);
                if (temp2 <= tol3z) {
                    double sum = 0.0;
                    for (l = i + 1; l < rows; ++l) sum += aj[l] * aj[l];
                    vn1[j] = vn2[j] = sqrt(sum);
                } else {
                    vn1[j] *= sqrt(temp);
                }
            }
        }
    }
}

/* Q (rows x rows, row-major) = H_0 H_1 ... H_{kmin-1} of householder_qr. */
static void householder_q(const double *A, int rows, int kmin, const double *tau, double *Q)
{
    int i, j, l;
    for (i = 0; i < rows * rows; ++i) Q[i] = 0.0;
    for (i = 0; i < rows; ++i) Q[(size_t)i * rows + i] = 1.0;
    for (i = kmin - 1; i >= 0; --i) {
        const double *v = A + (size_t)i * rows;
        if (tau[i] == 0.0) continue;
        for (j = 0; j < rows; ++j) {          /* column j of Q */
            double s = Q[(size_t)i * rows + j];
            for (l = i + 1; l < rows; ++l) s += v[l] * Q[(size_t)l * rows + j];
            s *= tau[i];
            Q[(size_t)i * rows + j] -= s;
            for (l = i + 1; l < rows; ++l) Q[(size_t)l * rows + j] -= s * v[l];
        }
    }
}

/* y = Q^T y for the reflectors of householder_qr (y of length rows). */
static void householder_qt(const double *A, int rows, int kmin, const double *tau, double *y)
{
    int i, l;
    for (i = 0; i < kmin; ++i) {
        const double *v = A + (size_t)i * rows;
        double s;
        if (tau[i] == 0.0) continue;
        s = y[i];
        for (l = i + 1; l < rows; ++l) s += v[l] * y[l];
        s *= tau[i];
        y[i] -= s;
        for (l = i + 1; l < rows; ++l) y[l] -= s * v[l];
    }
}

/* y = Q y = H_0 H_1 ... H_{kmin-1} y for the reflectors of householder_qr. */
static void q_apply(const double *A, int rows, int kmin, const double *tau, double *y)
{
    int i, l;
    for (i = kmin - 1; i >= 0; --i) {
        const double *v = A + (size_t)i * rows;
        double s;
        if (tau[i] == 0.0) continue;
        s = y[i];
        for (l = i + 1; l < rows; ++l) s += v[l] * y[l];
        s *= tau[i];
        y[i] -= s;
        for (l = i + 1; l < rows; ++l) y[l] -= s * v[l];
    }
}

/* numpy's max|a_i - b_i| with NaN propagation (initial 0). */
static double amax(const double *a, const double *b, int n)
{
    double r = 0.0, v;
    int i;
    for (i = 0; i < n; ++i) {
        v = fabs(a[i] - b[i]);
        if (v != v) return v;
        if (v > r) r = v;
    }
    return r;
}

static double absmax(const double *v, int n)
{
    double r = 0.0, a;
    int i;
    for (i = 0; i < n; ++i) {
        a = fabs(v[i]);
        if (a != a) return a;
        if (a > r) r = a;
    }
    return r;
}

/* numpy.linalg.lstsq(A, b, rcond=None): the minimum-norm least-squares solution, singular values
 * <= eps max(N) s_max counting as zero, from a one-sided Jacobi SVD (Hestenes, jacobi_rotate):
 * A = U V^T with the singular values the column norms of U.  A (N x N, row-major) is left alone;
 * the solution overwrites b.  Work: svd_UV 2 N^2, svd_work 2 N doubles. */
static void lstsq_min_norm(const double *A, double *b, int N, double *svd_UV, double *svd_work)
{
    double *U = svd_UV, *V = svd_UV + (size_t)N * N, *sv = svd_work, *y = svd_work + N;
    int i, j, l;
    double smax = 0.0, cut;
    /* column-major U = A, V = I */
    for (i = 0; i < N; ++i)
        for (j = 0; j < N; ++j) {
            U[(size_t)j * N + i] = A[(size_t)i * N + j];
            V[(size_t)j * N + i] = (i == j) ? 1.0 : 0.0;
        }
    jacobi_rotate(U, V, N);
    for (j = 0; j < N; ++j) {
        double v = 0.0;
        for (l = 0; l < N; ++l) v += U[(size_t)j * N + l] * U[(size_t)j * N + l];
        sv[j] = sqrt(v);
        if (sv[j] > smax) smax = sv[j];
    }
    cut = SG_EPS * N * smax;
    for (i = 0; i < N; ++i) y[i] = 0.0;
    for (j = 0; j < N; ++j) {
        double c = 0.0;
        if (!(sv[j] > cut)) continue;
        for (l = 0; l < N; ++l) c += U[(size_t)j * N + l] * b[l];
        c /= sv[j] * sv[j];
        for (l = 0; l < N; ++l) y[l] += c * V[(size_t)j * N + l];
    }
    memcpy(b, y, sizeof(double) * (size_t)N);
}
