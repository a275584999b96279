"""Every fallback a run takes is recorded (issue 37.7): ``meta["fallbacks"]``, one line each, and
a ``fallback`` line of the summary; a run that takes none records an empty list.  The settings
main.c and the FMU do not take from the model are named (the README, a warning of export_fmu)."""
import re
import warnings

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen.assembly import consistent_state
from symgen.steppers.compiled import CompiledStepper

WARM = ["stiff_pendulum"]


@pytest.fixture(scope="module")
def forced():
    (x,), _ = symgen.coordinates("x")
    F = symgen.inputs("F")
    k = sp.Symbol("k")
    return symgen.build(symgen.Model("forced", [x], [[1]], [F - k * x], params={"k": 4.0},
                                     x0=[1.0]))


def test_auto_with_time_varying_inputs_records_the_python_stepper(forced, tmp_path):
    r = symgen.simulate(forced, dt="auto", t_end=1.0, inputs={"F": lambda t, x, xd: t})
    assert r.status == "completed" and r.meta["stepper"] == "python"
    assert len(r.meta["fallbacks"]) == 1
    assert r.meta["fallbacks"][0].startswith("stepper: python, not compiled (dt='auto' with "
                                             "time-varying inputs")
    assert f"  fallback        {r.meta['fallbacks'][0]}" in r.summary()
    r.save(tmp_path / "r.npz")
    assert symgen.load_result(tmp_path / "r.npz").meta["fallbacks"] == r.meta["fallbacks"]
    # none taken: constant inputs (the compiled control), a fixed step, or the Python stepper asked
    for kw in (dict(dt="auto", inputs={"F": 1.0}), dict(dt=0.01, inputs={"F": lambda t, x, xd: t}),
               dict(dt="auto", inputs={"F": lambda t, x, xd: t}, stepper="python")):
        r = symgen.simulate(forced, t_end=1.0, **kw)
        assert r.meta["fallbacks"] == [], kw
        assert not any("fallback" in line for line in r.summary())


def test_a_failed_compiled_sparse_start_records_the_dense_projection(monkeypatch):
    k = symgen.build(symgen.load_model("stiff_pendulum"))
    kw = dict(dt=0.01, t_end=0.1, stepper="compiled", factorization="sparse")
    r = symgen.simulate(k, **kw)
    assert r.meta["factorization"] == "sparse" and r.meta["fallbacks"] == []
    monkeypatch.setattr(CompiledStepper, "consistent_state", lambda self, *a, **kw: None)
    r = symgen.simulate(k, **kw)
    assert r.status == "completed"
    assert r.meta["fallbacks"] == ["start: the compiled sparse projection failed; the dense "
                                   "Python one (assembly.consistent_state) made the start"]
    assert f"  fallback        {r.meta['fallbacks'][0]}" in r.summary()      # (its lines)
    cs = consistent_state(k, 0.0, k.model.x0, k.model.xd0)          # the start it took
    np.testing.assert_array_equal(r.x[0], cs.x)
    np.testing.assert_array_equal(r.xdd[0], cs.xdd)


@pytest.mark.parametrize("settings, words", [
    (dict(method="newmark"), "method 'newmark' has no compiled stepper: the nullspace method"),
    (dict(scheme="hht:-0.1"), "scheme 'hht:-0.1' (HHT-α) is the index-3 method's: the null-space "
                              "step takes 'trapezoidal'")])
def test_main_c_and_the_fmu_name_the_settings_they_do_not_take(tmp_path, settings, words):
    (x,), _ = symgen.coordinates("x")
    mdl = symgen.Model("osc", [x], [[1]], [-4 * x], x0=[1.0],
                       settings=dict(dt=0.1, t_end=1.0, **settings))
    src = symgen.generate(mdl)
    assert f"(not all of them: {words})" in src.files["README.md"]
    assert "o = sg_options_default(SG_NULLSPACE);" in src.files["main.c"]
    with pytest.warns(RuntimeWarning, match=re.escape(words)):
        symgen.export_fmu(mdl, tmp_path / "osc.fmu", source_only=True)
    plain = symgen.Model("osc", [x], [[1]], [-4 * x], x0=[1.0], settings=dict(dt=0.1, t_end=1.0))
    assert "not all of them" not in symgen.generate(plain).files["README.md"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        symgen.export_fmu(plain, tmp_path / "plain.fmu", source_only=True)


@pytest.mark.parametrize("stepper", ["python", "compiled"])
def test_the_error_estimates_euclidean_projection_is_recorded_on_both_steppers(stepper):
    """Issue 37.7: the index-3 estimate's projection along M⁻¹Hᵀ needs NᵀMN; a coordinate whose
    mass max(0, 1 − t) vanishes from t = 1 on makes it exactly singular at every try that ends at
    t ≥ 1, where the estimate takes N Nᵀ e instead.  Both steppers count those tries (the C
    loop's sg_stats.euclidean_fallbacks) in meta["fallbacks"]: at least the accepted steps ending
    at t ≥ 1, at most those and every rejected try (measured on both: 91 tries, 179 steps, 3
    rejected); the run before t = 1 takes none."""
    (a, c, b), _ = symgen.coordinates("a c b")
    mdl = symgen.Model("massless_b", [a, c, b], sp.diag(1, 1, sp.Max(0, 1 - symgen.symbols.t)),
                       [-a, -c, -b], q=[c - a], x0=[1.0, 1.0, 0.0])
    kern = symgen.build(mdl)
    run = dict(dt="auto", rtol=1e-6, method="index3", scheme="hht:-0.1", stepper=stepper)
    r = symgen.simulate(kern, t_end=2.0, **run)
    assert r.status == "completed" and r.meta["stepper"] == stepper, r.reason
    np.testing.assert_allclose(r.x[:, 0], np.cos(r.t), atol=1e-4)    # a = c: ω = 1 (3e-5)
    [line] = [f for f in r.meta["fallbacks"] if f.startswith("error estimate:")]
    tries = int(re.search(r"singular on (\d+) tries", line).group(1))
    accepted_past = int((r.t[1:] >= 1.0).sum())
    assert accepted_past <= tries <= accepted_past + r.meta["step_control"]["rejected_steps"]
    assert accepted_past > 10
    before = symgen.simulate(kern, t_end=0.9, **run)
    assert before.status == "completed" and before.meta["fallbacks"] == []
