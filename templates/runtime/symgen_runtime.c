/* symgen_runtime.c: the model-independent steppers (see symgen_runtime.h), one translation unit.
 *
 * A line-by-line transcription of the Python reference steppers:
 *   symgen/steppers/base.py       predictor, convergence weights and test (sg_converged)
 *   symgen/steppers/linalg.py     factorization="qr": pivoted QR of H^T, N_H, H^+, particular
 *                                 solutions (Eqs. 33-48), reduced matrices (Eq. 52), omega_max
 *   symgen/steppers/sparse.py     factorization="sparse": sg_splin (symgen_sparse.c) and the
 *                                 kernels' CSR values (kmv, kmm) in the same step
 *   symgen/steppers/nullspace.py  the paper's Newton step (Eqs. 32-58); its retries of a failed
 *                                 step stay in Python (steppers/compiled.py)
 *   symgen/steppers/chart.py      the symmetric chart: N_s from a pivoted QR of H_s^T (the
 *                                 sparse step: sg_splin_chart_basis) and the 3k x 3k solve for
 *                                 (alpha, alpha_dot, alpha_ddot)
 *   symgen/steppers/index3.py     classical index-3 Newmark / HHT-alpha (Eq. 29)
 *   symgen/run.py (_run)          the divergence checks and the step's row (the Recorder
 *                                 in Python keeps every K-th row and the maxima)
 * Dense linear algebra written out (no BLAS/LAPACK): row-major matrices like numpy's.
 * Standard C99; only <math.h>, <string.h> and <stdlib.h>.
 *
 * A unity build: this file includes the runtime's parts, each owning one thing, so that the build
 * line stays `cc ... symgen_runtime.c symgen_sparse.c` and the parts share static functions
 * without exporting any symbol but the API's:
 *   sg_dense.c          dense linear algebra (products, LU, Jacobi SVD, least squares, pivoted QR)
 *   sg_linearization.c  factor H (dense QR or the sparse step), H^+, N_H, particular solutions,
 *                       reduced matrices, omega_max
 *   sg_convergence.c    predictor, update norm, convergence rule, round-off floor, failure records
 *   sg_chart.c          the symmetric chart
 *   sg_nullspace.c      the null-space Newton step
 *   sg_index3.c         the index-3 / HHT Newton step
 *   sg_start.c          the consistent initial state, sg_start, sg_omega_at
 *   sg_run.c            sg_step, sg_run_chunk, the hand-back, run statistics
 *   sg_alloc.c          sg_stepper_new / sg_stepper_free
 *   sg_internal.h       the stepper struct and the limits the parts share
 */
#include "sg_internal.h"

#include "sg_dense.c"
#include "sg_linearization.c"
#include "sg_convergence.c"
#include "sg_chart.c"
#include "sg_nullspace.c"
#include "sg_index3.c"
#include "sg_start.c"
#include "sg_run.c"
#include "sg_alloc.c"
