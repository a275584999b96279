"""Newmark schemes: names, explicit (gamma, beta), HHT, the Eq. 11 limit."""
import math

import pytest

from symgen.steppers import PRESETS, Scheme, parse_scheme


@pytest.mark.parametrize("name, gb", [("trapezoidal", (0.5, 0.25)), ("fox-goodwin", (0.5, 1 / 12)),
                                      ("linear-acceleration", (0.5, 1 / 6)),
                                      ("Fox-Goodwin", (0.5, 1 / 12))])
def test_presets(name, gb):
    s = parse_scheme(name)
    assert (s.gamma, s.beta) == gb
    assert s.name == name.lower()


def test_explicit_forms():
    s = parse_scheme("0.5001,0.2507")
    assert (s.gamma, s.beta) == (0.5001, 0.2507)
    assert parse_scheme((0.5000005, 0.2500006)).beta == 0.2500006
    assert parse_scheme((0.5, 0.25)).name == "trapezoidal"
    s2 = Scheme(0.6, 0.3, "mine")
    assert parse_scheme(s2) is s2


def test_hht():
    s = parse_scheme("hht:-0.05")
    assert s.alpha == -0.05
    assert s.gamma == pytest.approx(0.55)
    assert s.beta == pytest.approx(1.05**2 / 4)
    assert s.h_max(1e6) == math.inf
    with pytest.raises(ValueError, match="alpha"):
        parse_scheme("hht:-0.5")


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError) as exc:
        parse_scheme("runge-kutta")
    for name in PRESETS:
        assert name in str(exc.value)
    with pytest.raises(ValueError):
        parse_scheme((0.5,))
    with pytest.raises(ValueError):
        parse_scheme(("a", "b"))
    with pytest.raises(ValueError, match="gamma"):
        parse_scheme((0.4, 0.25))


def test_h_max_eq11():
    w = math.sqrt(9.8)
    assert parse_scheme("fox-goodwin").h_max(w) == pytest.approx(0.782461, abs=1e-6)
    assert parse_scheme("central-difference").h_max(w) == pytest.approx(2 / w, rel=1e-14)
    assert parse_scheme("linear-acceleration").h_max(w) == pytest.approx(2 * math.sqrt(3) / w)
    assert parse_scheme("trapezoidal").h_max(w) == math.inf
    assert parse_scheme("0.6,0.3025").h_max(w) == math.inf
    assert parse_scheme("fox-goodwin").h_max(0.0) == math.inf
    assert math.isnan(parse_scheme("fox-goodwin").h_max(math.nan))
