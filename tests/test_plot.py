"""Plots: valid PNGs whose Figures have labelled axes and one line per plotted series."""
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from symgen.plot import WHAT, Panel, Series, figure, panels_figure, plot_result  # noqa: E402
from symgen.result import Result, load_result  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def synthetic(n_out=2, m=2, energy=True):
    t = np.linspace(0.0, 1.0, 11)
    N = len(t)
    x = np.column_stack([np.sin(t), np.cos(t), t])
    return Result(
        t=t, x=x, xd=np.gradient(x, axis=0), xdd=np.zeros_like(x), lam=np.ones((N, m)) * [1, 2][:m],
        coords=("b.x", "b.y", "b.theta"), pos_err=np.full(N, 1e-16), vel_err=np.full(N, 1e-17),
        acc_err=np.zeros(N), omega_max=np.full(N, 3.13), h_max=np.full(N, 0.78),
        newton_iters=np.full(N, 3), energy=np.full(N, -9.8) if energy else None,
        energy_kinetic=np.zeros(N) if energy else None,
        energy_potential=np.full(N, -9.8) if energy else None,
        outputs=np.zeros((N, n_out)), output_names=tuple(f"y{i}" for i in range(n_out)),
        meta={"model": "toy", "method": "nullspace", "scheme": {"name": "fox-goodwin"}, "h": 0.1})


def lines(fig):
    return [len(ax.get_lines()) for ax in fig.axes]


def labels(fig):
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]


@pytest.mark.parametrize("what, expected", [
    ("coordinates", [3]), ("outputs", [2]), ("constraints", [3]), ("stability", [1, 2]),
    ("energy", [3, 1]), ("reactions", [2]),
])
def test_each_view_has_labelled_axes_and_one_line_per_series(what, expected, tmp_path):
    res = synthetic()
    path = tmp_path / f"{what}.png"
    fig = plot_result(res, what, path)
    assert lines(fig) == expected
    for xl, yl in labels(fig):
        assert xl == "t [s]" and yl
    assert path.read_bytes()[:8] == PNG
    assert path.stat().st_size > 1000


def test_coordinate_lines_carry_the_coordinate_names():
    fig = figure(synthetic(), "coordinates")
    ax = fig.axes[0]
    assert [ln.get_label() for ln in ax.get_lines()] == ["b.x", "b.y", "b.theta"]
    np.testing.assert_allclose(ax.get_lines()[2].get_ydata(), np.linspace(0, 1, 11))
    assert "toy" in ax.get_title() and "fox-goodwin" in ax.get_title()


def test_select_limits_the_series():
    fig = figure(synthetic(), "coordinates", select=["b.theta"])
    assert lines(fig) == [1]
    with pytest.raises(ValueError, match="no coordinates named"):
        figure(synthetic(), "coordinates", select=["nope"])


def test_views_without_data_raise_value_error():
    with pytest.raises(ValueError, match="no outputs"):
        figure(synthetic(n_out=0), "outputs")
    with pytest.raises(ValueError, match="no energy"):
        figure(synthetic(energy=False), "energy")
    with pytest.raises(ValueError, match="unknown plot"):
        figure(synthetic(), "nonsense")
    assert set(WHAT) == {"coordinates", "outputs", "constraints", "stability", "energy",
                         "reactions"}


def test_stability_view_draws_the_step_used():
    fig = figure(synthetic(), "stability")
    h_line = fig.axes[1].get_lines()[1]
    assert np.allclose(h_line.get_ydata(), 0.1)
    assert fig.axes[0].get_ylabel().startswith("ω_max")


def test_result_round_trip_then_plot(tmp_path):
    res = synthetic()
    res.save(tmp_path / "r.csv")
    back = load_result(tmp_path / "r.csv")
    fig = plot_result(back, "constraints", tmp_path / "c.png")
    assert lines(fig) == [3]
    assert (tmp_path / "c.png").read_bytes()[:8] == PNG


def test_panels_figure_for_comparisons(tmp_path):
    t = np.linspace(0, 1, 5)
    fig = panels_figure([Panel("a", "t [s]", "θ [rad]", [Series(t, t, "one"), Series(t, 2 * t, "two")]),
                         Panel("b", "t [s]", "norm", [Series(t, t + 1e-16, "err")], logy=True)],
                        ncols=2, suptitle="demo")
    assert lines(fig) == [2, 1]
    assert labels(fig) == [("t [s]", "θ [rad]"), ("t [s]", "norm")]
    assert fig.axes[1].get_yscale() == "log"


def test_core_import_needs_no_matplotlib():
    code = "import sys, symgen, symgen.cli; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
