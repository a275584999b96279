"""dt="auto" on both steppers (issue 21 §5): the C runtime's error control (sg_control.c.inc) takes
the Python reference's decisions (steppers/control.py, adaptive.py) — the same accepted steps, the
same rejections, the same states — to within the round-off spread of each run, measured here by
perturbing the start (x, ẋ) by 1e-15 (the error norm divides small differences of ẍ, so the
step sizes, and with them the states, move with round-off)."""
import numpy as np
import pytest

import symgen
from symgen.steppers.control import Flag

#: the C error control against the Python one: run again under another BLAS kernel
pytestmark = pytest.mark.roundoff

#: C against Python: within this many times the larger of the two steppers' own round-off spreads
SPREAD_FACTOR = 10

CASES = {
    # name: (model, model options, simulate options) — windows of 150–800 steps that cross
    # a singular passage where the mechanism has one (chart="end": the paper's chart and metric,
    # not dt="auto"'s default symmetric chart and mass metric)
    "pendulum-fox-goodwin": ("stiff_pendulum", {}, dict(t_end=5.0, rtol=1e-6, chart="end",
                                                        scheme="fox-goodwin", params={"T0": 5.0})),
    "four-bar-end": ("double_four_bar", {}, dict(t_end=1.5, rtol=1e-6, chart="end")),
    "four-bar-symmetric": ("double_four_bar", {}, dict(t_end=8.0, rtol=1e-4, atol=1e-4,
                                                       chart="symmetric")),
    "andrews": ("andrews_squeezer", {}, dict(t_end=0.01, rtol=1e-6, scheme="fox-goodwin",
                                             chart="end")),
    "n-four-bar-sparse": ("n_four_bar", {"N": 4}, dict(t_end=4.0, rtol=1e-5, atol=1e-5,
                                                       chart="end", factorization="sparse")),
    # the mass metric (SG_METRIC_MASS, issue 22): both charts, both factorizations
    # (γ > ½: no reaction correction, the Newmark estimate)
    "crank3d-mass-symmetric": ("slider_crank_3d", {}, dict(t_end=0.4, rtol=1e-5, chart="symmetric",
                                                           metric="mass", scheme="0.55,0.275625")),
    # the corrected step's estimate (γ = ½: control.py history), across a singular passage
    "four-bar-mass-symmetric": ("double_four_bar", {}, dict(t_end=3.0, rtol=1e-8,
                                                            chart="symmetric", metric="mass")),
    "crank3d-mass-end-sparse": ("slider_crank_3d", {}, dict(t_end=0.4, rtol=1e-6, metric="mass",
                                                            chart="end", factorization="sparse")),
    # the index-3 HHT step's own estimate (control.py index3: b̃ history, projection along M⁻¹Hᵀ,
    # the start's lag rescaled): 339 steps, 5 rejected, unchanged by the 1e-15 perturbations
    "andrews-index3-hht": ("andrews_squeezer", {}, dict(t_end=0.01, rtol=1e-6, method="index3",
                                                        scheme="hht:-0.1")),
}


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-300)


@pytest.fixture(scope="module")
def build():
    cache = {}

    def get(name, opts):
        key = (name, tuple(sorted(opts.items())))
        if key not in cache:
            cache[key] = symgen.build(symgen.load_model(name, **opts))
        return cache[key]
    return get


#: relative changes of the start (positions and velocities together: a change of the velocities
#: alone can be rounded away by the start's projection) that measure each run's round-off spread
PERTURBATIONS = (0.0, 1e-15, -1e-15, 2e-15, -2e-15)


def _runs(k, stepper, kw):
    """One run of ``stepper`` from each perturbed start."""
    x0, xd0 = np.asarray(k.model.x0, float), np.asarray(k.model.xd0, float)
    runs = [symgen.simulate(k, dt="auto", stepper=stepper, x0=x0 * (1 + e), xd0=xd0 * (1 + e),
                            **kw) for e in PERTURBATIONS]
    for r in runs:
        assert r.status == "completed", r.reason
    return runs


def _path(r):
    """What a run decided, step by step: the accepted steps, the rejected tries of each kind, the
    flags (but FLOOR: whether Newton stopped at its round-off floor is a knife edge of
    round-off).  Runs from starts 1e-15 apart can take different paths where a decision sits on a
    knife edge (an error norm at 1, a Newton count); runs on one path are compared."""
    sc = r.meta["step_control"]
    return (len(r.t), sc["rejected_error"], sc["rejected_newton"],
            (r.flags & ~Flag.FLOOR).tobytes())


def _spread(runs):
    """(|Δt|, relative Δx, relative Δẋ, |Δ error estimate| per row) among runs of one stepper on
    one path (floors 1e-13; the last an array over the rows, floor 1e-9)."""
    base, rest = runs[0], runs[1:]
    return (max(1e-13, *(np.abs(r.t - base.t).max() for r in rest)),
            max(1e-13, *(_rel(r.x, base.x) for r in rest)),
            max(1e-13, *(_rel(r.xd, base.xd) for r in rest)),
            np.fmax(1e-9, np.max([np.nan_to_num(np.abs(r.err_est - base.err_est))
                                  for r in rest], 0)))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_c_control_takes_the_python_controls_steps(build, case):
    """The C control takes a path the Python control takes from the same perturbed starts, and on
    that path the same steps, rejections, flags, states and error estimates, to within
    SPREAD_FACTOR times the round-off spread measured among each stepper's runs on that path.
    Which path a given start takes is not asserted (another BLAS kernel rounds differently)."""
    name, opts, kw = CASES[case]
    k = build(name, opts)
    runs = {st: _runs(k, st, kw) for st in ("python", "compiled")}
    assert all(r.meta["stepper"] == st for st in runs for r in runs[st])
    assert 150 <= int(np.median([len(r.t) for r in runs["python"]])) <= 800   # the window's size
    for st in runs:
        for r in runs[st]:
            assert r.pos_err.max() < 1e-12
            assert kw.get("method") == "index3" or r.vel_err.max() < 1e-10   # (index-3: q, not q̇)
    by_path = {}
    for st in runs:
        for r in runs[st]:
            by_path.setdefault(_path(r), {"python": [], "compiled": []})[st].append(r)
    shared = [g for g in by_path.values() if g["python"] and g["compiled"]
              and max(len(g["python"]), len(g["compiled"])) >= 2]
    paths = [(p[:3], len(g["python"]), len(g["compiled"])) for p, g in by_path.items()]
    assert shared, ("the C control took none of the paths the Python control took (or each "
                    f"shared path once only): (steps, rejections, Newton) and runs {paths}")
    for g in shared:
        measured = [_spread(g[st]) for st in ("python", "compiled") if len(g[st]) >= 2]
        spread = [np.maximum.reduce([m[i] for m in measured]) for i in range(4)]
        c, py = g["compiled"][0], g["python"][0]
        assert np.abs(c.t - py.t).max() <= SPREAD_FACTOR * spread[0]
        assert _rel(c.x, py.x) <= SPREAD_FACTOR * spread[1]
        assert _rel(c.xd, py.xd) <= SPREAD_FACTOR * spread[2]
        # the error estimates too (near a singular passage they move by tens of % with round-off)
        both = ~np.isnan(py.err_est)
        np.testing.assert_array_equal(np.isnan(c.err_est), ~both)
        assert np.all(np.abs(c.err_est - py.err_est)[both] <= SPREAD_FACTOR * spread[3][both])


def test_the_c_control_fails_as_the_python_control_does(build):
    """No try accepted above h_min: both steppers stop 'failed' at the same time with the same
    one-line reason (the C failure's fields worded as adaptive.py words its own)."""
    k = build("stiff_pendulum", {})
    kw = dict(dt="auto", t_end=5.0, rtol=1e-10, atol=1e-10, h_min=0.05, scheme="fox-goodwin",
              params={"T0": 5.0})
    r = {s: symgen.simulate(k, stepper=s, **kw) for s in ("python", "compiled")}
    assert r["python"].status == r["compiled"].status == "failed"
    assert r["python"].reason == r["compiled"].reason
    assert "no step from t = " in r["compiled"].reason and "h_min = 0.05 s" in r["compiled"].reason
    # the failure as data (issue 37.2): the same kind, time, last try and h_min in both
    fp, fc = r["python"].meta["failure"], r["compiled"].meta["failure"]
    assert fp["kind"] == fc["kind"] == "SG_FAIL_NO_STEP" and fp["t"] == fc["t"] == r["python"].t[-1]
    assert fp["value"] == fc["value"] == 0.05 and fp["h"] == fc["h"] < 0.05
    assert fp.get("last") == fc.get("last")
