"""SimulationSettings: one default and one check per setting, read by simulate, the steppers, the
model's recommended settings and the command line."""
import dataclasses

import numpy as np
import pytest

import symgen
import stepper_models as sm
from symgen import SimulationSettings
from symgen.steppers import METHODS as STEPPER_CLASSES
from symgen.steppers.base import Stepper
from symgen.steppers.linalg import Linearization


def test_every_field_has_a_default_and_one_line_of_doc():
    import inspect

    lines = inspect.getsource(SimulationSettings).splitlines()
    for f in dataclasses.fields(SimulationSettings):
        assert f.default is not dataclasses.MISSING, f.name
        i = next(i for i, ln in enumerate(lines) if ln.strip().startswith(f"{f.name}:"))
        assert lines[i - 1].strip().startswith("#: "), f.name


def test_frozen_and_validated_in_one_place():
    s = SimulationSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.dt = 0.1
    for bad, match in [(dict(method="rk4"), "unknown method"), (dict(scheme="euler"), "scheme"),
                       (dict(dt=0.0), "dt"), (dict(dt=float("nan")), "dt"),
                       (dict(t_end=float("inf")), "t_end"), (dict(tol=0), "tol"),
                       (dict(max_iter=0), "max_iter"), (dict(rank_tol=1.5), "rank_tol"),
                       (dict(factorization="lu"), "factorization"),
                       (dict(divergence_bound=-1), "divergence_bound")]:
        with pytest.raises(ValueError, match=match):
            SimulationSettings(**bad)


def test_merged_layers_skip_none_and_reject_unknown_names():
    s = SimulationSettings.merged({"dt": 0.1, "t_end": 5.0, "scheme": "fox-goodwin"}, None,
                                  SimulationSettings(method="index3"), dt=None, t_end=2.0)
    assert (s.method, s.scheme, s.dt, s.t_end) == ("index3", "trapezoidal", 0.1, 2.0)
    with pytest.raises(ValueError, match="unknown setting"):
        SimulationSettings.merged({"stepsize": 0.1})


def test_the_stages_share_the_defaults_and_names():
    d = SimulationSettings()
    assert set(STEPPER_CLASSES) == set(symgen.settings.METHODS)
    import inspect

    sig = inspect.signature(Stepper.__init__).parameters
    assert sig["tol"].default == d.tol and sig["max_iter"].default == d.max_iter
    assert sig["constraint_tol"].default == d.constraint_tol
    assert inspect.signature(Linearization.__init__).parameters["rank_tol"].default == d.rank_tol
    assert set(symgen.model.SETTING_KEYS) <= set(SimulationSettings.names())


def test_model_settings_are_checked_when_the_model_is_made():
    with pytest.raises(symgen.ModelError, match="unknown method"):
        sm.stiff_pendulum(method="rk4")


def test_simulate_layers_model_settings_object_and_keywords():
    k = symgen.LambdifyKernels(sm.stiff_pendulum())         # model: fox-goodwin, dt 0.1, t_end 10
    r = symgen.simulate(k, SimulationSettings(scheme="trapezoidal", t_end=0.5), dt=0.05)
    assert r.meta["scheme"]["name"] == "trapezoidal"
    assert r.meta["h"] == 0.05 and r.t[-1] == pytest.approx(0.5)
    r2 = symgen.simulate(k, scheme="trapezoidal", t_end=0.5, dt=0.05)
    assert np.array_equal(r.x, r2.x)
    with pytest.raises(TypeError):
        symgen.simulate(k, "nullspace")                      # settings, not a method name


def test_result_summary_is_what_the_cli_prints():
    from symgen.cli import summary_lines

    k = symgen.LambdifyKernels(sm.stiff_pendulum())
    r = symgen.simulate(k, dt=0.1, t_end=0.5)
    assert r.summary("p", 1.0, h=0.1) == summary_lines(r, "p", 1.0, h=0.1)
    assert r.summary()[0] == "stiff_pendulum: completed"


def test_a_models_nullspace_options_give_way_to_another_method():
    """slider_crank_3d recommends chart="symmetric", metric="mass": choosing method="index3"
    drops them (they would refuse it), while the same options given with the method still
    refuse in one line."""
    model = dict(method="nullspace", chart="symmetric", metric="mass", factorization="sparse",
                 dt=1e-3)
    s = SimulationSettings.merged(model, method="index3")
    assert (s.method, s.chart, s.metric, s.factorization) == ("index3", "end", "euclidean", "auto")
    assert SimulationSettings.merged(model).chart == "symmetric"
    with pytest.raises(ValueError, match="nullspace method only"):
        SimulationSettings.merged(model, method="index3", chart="symmetric")


# -- the default step and the paper's preset -----------------------------------------------------
def test_the_default_null_space_step_is_the_symmetric_chart_with_the_mass_metric():
    """Fixed step and dt="auto" alike, where no layer names a chart or metric (one rule,
    settings.chart_metric); naming one takes the other from the paper's pair; other methods are
    not refused by the default."""
    for dt in (None, 0.1, "auto"):
        s = SimulationSettings.merged({"dt": dt})
        assert (s.chart, s.metric, s.preset) == ("symmetric", "mass", None)
        assert (s.chart, s.metric) == symgen.settings.DEFAULT_CHART_METRIC
    assert (SimulationSettings(chart="symmetric").metric, SimulationSettings(metric="mass").chart
            ) == ("euclidean", "end")
    assert (SimulationSettings(chart="end").metric, SimulationSettings(metric="euclidean").chart
            ) == ("euclidean", "end")
    for method in ("index3", "newmark", "central-difference"):
        s = SimulationSettings(method=method)                    # not refused
        assert (s.chart, s.metric) == ("end", "euclidean")
        assert SimulationSettings.merged({"chart": "symmetric", "metric": "mass"},
                                         method=method).method == method
    # a settings object passes on what it was given, not what the rule chose for its method
    s = SimulationSettings.merged(SimulationSettings(method="index3"), method="nullspace")
    assert (s.chart, s.metric) == ("symmetric", "mass")
    s = SimulationSettings(method="index3").replace(method="nullspace")
    assert (s.chart, s.metric) == ("symmetric", "mass")
    assert SimulationSettings(chart="end").replace(dt=0.1).metric == "euclidean"


def test_the_paper_preset_and_what_wins_over_it():
    """preset="paper" is chart "end", metric "euclidean"; a chart or metric named beside it, or
    in a later layer, wins; a later preset wins over an earlier layer's chart and metric (the
    call's over the model's)."""
    assert symgen.settings.PRESETS["paper"] == {"chart": "end", "metric": "euclidean"}
    s = SimulationSettings(preset="paper")
    assert (s.chart, s.metric, s.preset) == ("end", "euclidean", "paper")
    s = SimulationSettings(preset="paper", metric="mass")
    assert (s.chart, s.metric) == ("end", "mass")
    s = SimulationSettings.merged({"preset": "paper"}, chart="symmetric")
    assert (s.chart, s.metric) == ("symmetric", "euclidean")
    model = {"chart": "symmetric", "metric": "mass", "dt": 1e-3}      # slider_crank_3d's
    s = SimulationSettings.merged(model, preset="paper")
    assert (s.chart, s.metric) == ("end", "euclidean")
    s = SimulationSettings.merged(model, {"preset": "paper", "metric": "mass"})
    assert (s.chart, s.metric) == ("end", "mass")
    s = SimulationSettings.merged({"preset": "paper"}, SimulationSettings(dt=0.1))
    assert (s.chart, s.metric) == ("end", "euclidean")   # the object names no chart or metric
    assert SimulationSettings(method="index3", preset="paper").chart == "end"


def test_a_bad_preset_is_one_line_naming_the_known_ones():
    for make in (lambda: SimulationSettings(preset="papers"),
                 lambda: SimulationSettings.merged({"dt": 0.1}, preset="Paper")):
        with pytest.raises(ValueError) as exc:
            make()
        msg = str(exc.value)
        assert msg.startswith("unknown preset ") and msg.endswith("known: paper")
        assert "\n" not in msg
    with pytest.raises(symgen.ModelError, match="bad recommended setting: unknown preset 'x'; "
                                                "known: paper"):
        sm.stiff_pendulum(preset="x")
    k = symgen.LambdifyKernels(sm.stiff_pendulum())
    with pytest.raises(ValueError, match="unknown preset 'fast'; known: paper"):
        symgen.simulate(k, dt=0.1, t_end=0.2, preset="fast")


@pytest.mark.parametrize("stepper", ["python", "compiled"])
def test_simulate_defaults_and_the_paper_preset_bit_for_bit(stepper):
    """simulate without a chart or metric runs the symmetric chart with the mass metric, fixed
    step and dt="auto"; preset="paper" is bit for bit the run with chart="end",
    metric="euclidean" named (the old default), and meta records chart, metric and preset."""
    k = symgen.build(sm.stiff_pendulum())
    kw = dict(scheme="trapezoidal", t_end=1.0, stepper=stepper)
    for dt in (0.05, "auto"):
        r = symgen.simulate(k, dt=dt, **kw)
        assert (r.meta["chart"], r.meta["metric"], r.meta["preset"]) == ("symmetric", "mass", None)
        assert r.meta["stepper"] == stepper
    paper = symgen.simulate(k, dt=0.05, preset="paper", **kw)
    named = symgen.simulate(k, dt=0.05, chart="end", metric="euclidean", **kw)
    assert (paper.meta["chart"], paper.meta["metric"], paper.meta["preset"]) == ("end",
                                                                                 "euclidean",
                                                                                 "paper")
    for name in ("t", "x", "xd", "xdd", "lam", "newton_iters", "pos_err", "vel_err", "acc_err"):
        assert np.array_equal(getattr(paper, name), getattr(named, name)), name
    default = symgen.simulate(k, dt=0.05, **kw)
    assert not np.array_equal(default.x, paper.x)
    # index3 runs with the default (no chart, no metric) and with the preset
    r = symgen.simulate(k, method="index3", dt=0.05, **kw)
    assert r.status == "completed" and (r.meta["chart"], r.meta["metric"]) == (None, None)
    r = symgen.simulate(k, method="index3", dt=0.05, preset="paper", **kw)
    assert r.status == "completed" and r.meta["preset"] == "paper"


def test_a_model_may_recommend_the_paper_preset():
    k = symgen.LambdifyKernels(sm.stiff_pendulum(preset="paper"))
    r = symgen.simulate(k, dt=0.1, t_end=0.3)
    assert (r.meta["chart"], r.meta["metric"], r.meta["preset"]) == ("end", "euclidean", "paper")
    r = symgen.simulate(k, dt=0.1, t_end=0.3, chart="symmetric", metric="mass")   # the call wins
    assert (r.meta["chart"], r.meta["metric"]) == ("symmetric", "mass")
