"""Long compiled runs (issue 27, finding 1): the chunk loop of the compiled stepper over more than a
million steps, and a run interrupted inside the step loop keeps the steps it took (a bug there
propagates)."""
import math

import numpy as np
import pytest

import symgen

WARM = ["stiff_pendulum"]


@pytest.fixture(scope="module")
def pendulum():
    return symgen.build(symgen.load_model("stiff_pendulum"))


def _on_the_circle(res, L=1.0):
    """The stiff pendulum's mass is on the circle of radius L about the pivot in every row."""
    return np.abs(np.hypot(res.x[:, 0], res.x[:, 1]) - L).max()


def test_a_two_million_step_compiled_run_completes_and_keeps_every_row(pendulum):
    # more than the ~1.05 million steps (≈ 512 chunk calls) after which the chunk size overflowed
    res = symgen.simulate(pendulum, dt=1e-4, t_end=200.0, every=1000, stepper="compiled")
    assert res.status == "completed", res.reason
    assert res.meta["steps_done"] == 2_000_000
    np.testing.assert_allclose(res.t, np.arange(2001) * 0.1, rtol=0, atol=1e-9)
    assert _on_the_circle(res) < 1e-12
    assert res.pos_err.max() < 1e-12


def test_a_billion_step_run_interrupted_after_its_first_million_steps_keeps_them(pendulum):
    stop_at = 1_300_000                           # past where the chunk size overflowed

    def progress(j, n):
        assert n == 1_000_000_000
        if j == stop_at:
            raise KeyboardInterrupt

    res = symgen.simulate(pendulum, dt=1e-7, t_end=100.0, every=100_000, stepper="compiled",
                          progress=progress)
    assert res.status == "interrupted"
    assert res.meta["steps_done"] == stop_at
    assert res.t[-1] == pytest.approx(stop_at * 1e-7, rel=1e-12)
    assert len(res.t) == stop_at // 100_000 + 1
    assert _on_the_circle(res) < 1e-12


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("stepper", ["compiled", "python"])
def test_a_bug_inside_the_step_loop_propagates_and_an_interrupt_keeps_the_steps(pendulum, stepper):
    """Only numerical failures and interrupts end a run as data (issue 37.3): an exception that is
    neither (here a fault of the progress callback at step 37) propagates from simulate as it was
    raised; a KeyboardInterrupt at the same step ends the run as 'interrupted' with every step
    before it recorded, the steps of an uninterrupted run."""
    def progress(j, n):
        if j == 37:
            raise Boom("a fault inside the loop")

    with pytest.raises(Boom, match="a fault inside the loop"):
        symgen.simulate(pendulum, dt=0.01, t_end=1.0, stepper=stepper, progress=progress)

    def stop(j, n):
        if j == 37:
            raise KeyboardInterrupt("stop at step 37")

    res = symgen.simulate(pendulum, dt=0.01, t_end=1.0, stepper=stepper, progress=stop)
    assert res.status == "interrupted" and "stop at step 37" in res.reason
    assert 36 <= res.meta["steps_done"] <= 37
    assert len(res.t) == res.meta["steps_done"] + 1
    assert res.t[-1] == pytest.approx(0.01 * res.meta["steps_done"])
    assert _on_the_circle(res) < 1e-12
    full = symgen.simulate(pendulum, dt=0.01, t_end=1.0, stepper=stepper)
    np.testing.assert_array_equal(res.x, full.x[: len(res.t)])
    assert math.isfinite(res.x[-1, 2])
