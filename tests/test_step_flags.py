"""Each fixed-step row carries the flags of the step that produced it (issue 37.2), as a dt="auto"
row does: FLOOR (4) when Newton accepted the step at its round-off floor, SUBSTEPPED (16) when
Newton could not close it and sub-steps under the error control covered it.  The Python steppers
take them from their Outcome, the C runtime from sg_run_chunk's FL; the oracle is each run's own
record of those events (meta's floor_times and substepped_times, kept independently of the rows),
and the two steppers must agree row by row."""
import numpy as np
import pytest

import symgen
from symgen.steppers.control import Flag

STEPPERS = ("compiled", "python")


#: runs whose steps are accepted at the round-off floor or covered by sub-steps:
#: the double four-bar through its first singular passage (t ≈ 0.714 s) at the fixed step's
#: default Newton tolerance 1e-12 (one step at the floor, at 0.715 s, in both steppers and
#: unchanged when the start is perturbed by 1e-14); Newton's tolerance below round-off (every
#: step ends exactly converged or at the floor, tests/test_convergence.py);
#: the stiff pendulum with at most 2 Newton iterations a step (most steps need 3 at h = 0.1 s:
#: those are sub-stepped, the rest not) or 1 (none closes: every step sub-stepped)
RUNS = {
    "passage": ("double_four_bar", dict(dt=5e-3, t_end=0.75)),
    "below-roundoff": ("double_four_bar", dict(dt=1e-2, t_end=0.3, tol=1e-17)),
    "max-iter-2": ("stiff_pendulum", dict(dt=0.1, t_end=5.0, max_iter=2, scheme="fox-goodwin")),
    "max-iter-1": ("stiff_pendulum", dict(dt=0.1, t_end=5.0, max_iter=1, scheme="fox-goodwin")),
}


def _run(kernels, case, stepper, **kw):
    name, settings = RUNS[case]
    r = symgen.simulate(kernels(name), stepper=stepper, progress=None, factorization="qr",
                        **settings, **kw)
    assert r.status == "completed", r.reason
    return r


def _times(r, flag):
    return r.t[(r.flags & flag) != 0]


@pytest.mark.parametrize("stepper", STEPPERS)
@pytest.mark.parametrize("case", list(RUNS))
def test_fixed_step_flags_say_which_steps_were_at_the_floor_or_sub_stepped(kernels, case,
                                                                           stepper):
    r = _run(kernels, case, stepper)
    assert r.flags is not None and r.flags.shape == r.t.shape and r.flags.dtype == np.int64
    assert r.flags[0] == 0                                   # the start: no step
    assert not (r.flags & ~(Flag.FLOOR | Flag.SUBSTEPPED)).any()   # no error-control bits
    # every step is a row: the FLOOR rows are the steps meta counted at the floor (one floor
    # acceptance per step here: no sub-steps in the floor runs), the SUBSTEPPED rows the steps
    # meta counted as sub-stepped, at the same times
    floor, sub = r.meta["floor_times"], r.meta.get("substepped_times", [])
    assert len(floor) == r.meta["floor_steps"] and len(sub) == r.meta.get("substepped_steps", 0)
    np.testing.assert_allclose(_times(r, Flag.FLOOR), floor, rtol=0, atol=1e-12)
    np.testing.assert_allclose(_times(r, Flag.SUBSTEPPED), sub, rtol=0, atol=1e-12)
    steps = len(r.t) - 1
    if case == "passage":
        assert r.meta["floor_steps"] >= 1 and not sub
    elif case == "below-roundoff":
        assert 0 < r.meta["floor_steps"] <= steps and not sub
    elif case == "max-iter-2":                               # a mix: some sub-stepped, some not
        assert 0 < len(sub) < steps and r.meta["floor_steps"] == 0
    else:
        assert len(sub) == steps


@pytest.mark.parametrize("case", list(RUNS))
def test_both_steppers_flag_the_same_rows(kernels, case):
    c, p = (_run(kernels, case, st) for st in STEPPERS)
    assert np.array_equal(c.t, p.t)
    assert c.flags is not None and c.flags.any()             # (each run has flagged steps)
    np.testing.assert_array_equal(c.flags, p.flags)


@pytest.mark.parametrize("stepper", STEPPERS)
@pytest.mark.parametrize("case", ["passage", "max-iter-2"])
def test_rows_kept_every_k_and_t_eval_rows_carry_their_steps_flags(kernels, case, stepper):
    """Every 3rd step's row, and a t_eval row, has the flags of the step that produced it (the
    t_eval row: the step from t_j to t_j + h it lies in, te ∈ (t_j, t_j + h]); the steps are
    the same in the three runs (the rows are recorded beside them)."""
    full = _run(kernels, case, stepper)
    h, n = RUNS[case][1]["dt"], len(full.t) - 1
    some = _run(kernels, case, stepper, every=3)
    rows = np.r_[np.arange(0, n + 1, 3), n] if n % 3 else np.arange(0, n + 1, 3)
    np.testing.assert_array_equal(some.t, full.t[rows])
    np.testing.assert_array_equal(some.flags, full.flags[rows])
    t0 = full.t[0]
    te = t0 + h * np.r_[0.0, np.arange(0.5, n, 1.0), n]      # the start, mid-steps, the end
    dense = _run(kernels, case, stepper, t_eval=te)
    step = np.ceil((te - t0) / h - 1e-9).astype(int)         # te in (t_{j-1}, t_j]: step j
    np.testing.assert_array_equal(dense.flags, full.flags[step])
    assert dense.flags.any()                                 # (a flagged step is among them)


def test_flags_are_saved_and_loaded_with_a_fixed_step_result(kernels, tmp_path):
    r = _run(kernels, "max-iter-2", "compiled")
    for suffix in (".npz", ".csv"):
        back = symgen.load_result(r.save(tmp_path / f"r{suffix}"))
        np.testing.assert_array_equal(back.flags, r.flags)
        assert back.flags.dtype == np.int64
