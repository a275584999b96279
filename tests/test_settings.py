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
