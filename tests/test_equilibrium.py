"""``symgen.equilibrium`` and ``symgen equilibrium`` / ``modes --at-equilibrium`` (issue 35).

Oracles: a pendulum held by a torsional spring toward θ0, at rest where m g L sin θ = k (θ0 − θ)
(solved by brentq), with small-oscillation frequency ω² = (m g L cos θ + k)/(m L²) and a pin
that carries the weight (λ = (0, m g)); the inverted pendulum (ω² = −g/L, unstable); a slider
held by a spring on an incline (k s = m g sin α).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import symgen
from symgen.cli import main
from symgen.mechanics import PlanarSystem
from symgen.statics import EquilibriumError

M, L, G, TH0 = 1.3, 0.9, 9.81, 1.5

MODEL_FILE = '''
from symgen.mechanics import PlanarSystem

def model():
    s = PlanarSystem("spring_pendulum")
    bob = s.body("bob", mass={m}, inertia=0, points={{"pivot": (0, {L})}}, x0=(0, -{L}, 0))
    s.revolute("ground", (0, 0), bob, "pivot", name="hinge")
    s.gravity({g})
    s.torsional_spring("ground", bob, s.parameter("k", 5.0), angle={th0}, name="spring")
    return s.model()
'''.format(m=M, L=L, g=G, th0=TH0)


def _spring_pendulum(duplicate=False):
    s = PlanarSystem("spring_pendulum")
    bob = s.body("bob", mass=M, inertia=0, points={"pivot": (0, L)}, x0=(0, -L, 0))
    s.revolute("ground", (0, 0), bob, "pivot", name="hinge")
    if duplicate:                                       # two more rows, rank unchanged
        s.revolute("ground", (0, 0), bob, "pivot", name="hinge2")
    s.gravity(G)
    s.torsional_spring("ground", bob, s.parameter("k", 5.0), angle=TH0, name="spring")
    return s.model()


def _closed_form(k):
    th = brentq(lambda th: M * G * L * math.sin(th) - k * (TH0 - th), 0.0, TH0, xtol=1e-15)
    return th, math.sqrt((M * G * L * math.cos(th) + k) / (M * L * L))


@pytest.mark.parametrize("k", [5.0, 40.0])
def test_spring_pendulum_rest_angle_frequency_and_pin_force(k):
    eq = symgen.equilibrium(_spring_pendulum(), params={"k": k})
    th, w = _closed_form(k)
    assert eq.coord("bob.theta") == pytest.approx(th, abs=1e-12)
    assert eq.coord("bob.x") == pytest.approx(L * math.sin(th), abs=1e-12)
    np.testing.assert_allclose(eq.lam, [0.0, M * G], atol=1e-9)   # the pin holds the weight
    assert eq.modes.omega[0] == pytest.approx(w, rel=1e-9)
    assert eq.stable is True and "stable" in eq.verdict
    assert eq.force_residual < 1e-9 and eq.constraint_residual < 1e-12


def test_redundant_rows_take_least_squares_steps():
    """A second pin at the same place (rank H = 2 of 4 rows): the same rest angle and ω."""
    eq = symgen.equilibrium(_spring_pendulum(duplicate=True))
    th, w = _closed_form(5.0)
    assert eq.coord("bob.theta") == pytest.approx(th, abs=1e-12)
    assert eq.modes.omega[0] == pytest.approx(w, rel=1e-9)


def test_inverted_pendulum_is_unstable():
    eq = symgen.equilibrium(_spring_pendulum(), params={"k": 0.0}, x0=[0.1, L, 3.0])
    assert eq.coord("bob.theta") == pytest.approx(math.pi, abs=1e-12)
    assert np.real(eq.modes.omega2[0]) == pytest.approx(-G / L, rel=1e-9)
    assert eq.stable is False and "unstable" in eq.verdict


def test_slider_on_an_incline_held_by_a_spring():
    """k s = m g sin α along a prismatic guide (s from the anchor at the origin)."""
    alpha, k, m = 0.5, 30.0, 2.0
    e = (math.cos(alpha), -math.sin(alpha))
    s = PlanarSystem("incline_spring")
    block = s.body("block", mass=m, inertia=0.1, x0=(0.1 * e[0], 0.1 * e[1], 0))
    s.prismatic("ground", (0, 0), block, (0, 0), axis=e, name="guide")
    s.spring("ground", (0, 0), block, (0, 0), k)
    s.gravity(G)
    eq = symgen.equilibrium(s.model())
    s_eq = m * G * math.sin(alpha) / k
    assert eq.coord("block.x") == pytest.approx(s_eq * e[0], abs=1e-12)
    assert eq.modes.omega[0] == pytest.approx(math.sqrt(k / m), rel=1e-9)


def test_no_rest_state_names_the_residual():
    """A rotor under a constant torque has no equilibrium."""
    s = PlanarSystem("spun")
    rotor = s.body("rotor", mass=1.0, inertia=0.2)
    s.revolute("ground", (0, 0), rotor, (0, 0))
    s.torque(rotor, 2.0)
    with pytest.raises(EquilibriumError, match=r"max \|f \+ Hᵀλ\| = 2 \(coordinate 'rotor.theta'\)"):
        symgen.equilibrium(s.model())


def test_cli_equilibrium_and_modes_at_equilibrium(tmp_path, capsys):
    path = tmp_path / "spring_pendulum.py"
    path.write_text(MODEL_FILE)
    th, w = _closed_form(12.0)
    assert main(["equilibrium", str(path), "--param", "k=12", "--backend", "lambdify"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("bob.theta"))
    assert float(line.split()[1]) == pytest.approx(th, abs=1e-11)
    assert "hinge.y" in out and "stable" in out
    assert main(["modes", str(path), "--param", "k=12", "--at-equilibrium",
                 "--backend", "lambdify"]) == 0
    out = capsys.readouterr().out
    assert "the equilibrium found from the initial state" in out
    row = next(x for x in out.splitlines() if x.split()[:1] == ["1"])
    assert float(row.split()[1]) == pytest.approx(w, rel=1e-6)


def test_cli_equilibrium_that_does_not_converge_exits_3(tmp_path, capsys):
    path = tmp_path / "spun.py"
    path.write_text("from symgen.mechanics import PlanarSystem\n\ndef model():\n"
                    "    s = PlanarSystem('spun')\n    r = s.body('rotor', mass=1.0, inertia=0.2)\n"
                    "    s.revolute('ground', (0, 0), r, (0, 0))\n    s.torque(r, 2.0)\n"
                    "    return s.model()\n")
    assert main(["equilibrium", str(path), "--backend", "lambdify"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rotor.theta" in err
