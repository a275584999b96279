"""The run summary's events and impacts lines (symgen.summary.event_lines, docs/events.md
"Results"), read back and checked against the Result's own arrays: each event's count and first
times, a terminal one marked, the impacts' count, largest impulse, its event and time, the
kinetic energy lost, simultaneous impacts, the cascade that ended a run; the same lines from a
saved and loaded result; no line for a run without events."""
import math
import re

import numpy as np
import pytest
import sympy as sp

import symgen
from symgen import Model, coordinates
from symgen.result import load_result
from symgen.summary import event_lines

from test_events import minimal_pendulum
from test_impacts import ball

EVENTS = re.compile(r"^  events {10}(.*)$")
IMPACTS = re.compile(r"^  impacts {9}(\d+) \(([^)]*)\)(?:, largest impulse (\S+) at t = (\S+) s "
                     r"\((\S+)\), kinetic energy lost (\S+) J)?(; a cascade ended the run at "
                     r"t = (\S+) s \(the reason above\))?$")


def _line(lines, label):
    found = [ln for ln in lines if ln.startswith(f"  {label} ")]
    assert len(found) <= 1, lines
    return found[0] if found else None


def _events(line) -> dict:
    """name → (terminal, count, the times shown, more?) of the summary's events line."""
    out = {}
    for part in EVENTS.match(line).group(1).split("; "):
        if part.startswith("… ("):
            out["…"] = int(re.fullmatch(r"… \((\d+) events\)", part).group(1))
            continue
        m = re.fullmatch(r"(\S+?)( \(terminal\))?: (\d+)(?:, t = ([^…]*?)( …)? s)?", part)
        assert m, part
        times = [float(v) for v in m.group(4).split(", ")] if m.group(4) else []
        out[m.group(1)] = (bool(m.group(2)), int(m.group(3)), times, bool(m.group(5)))
    return out


def _check_events(res, line):
    """The events line against res.t_events: every event (up to four), its count, its first
    three times to the 6 digits shown, '…' when there are more, the terminal flags."""
    got = _events(line)
    names = res.event_names
    assert list(got)[:min(len(names), 4)] == list(names[:4])
    if len(names) > 4:
        assert got["…"] == len(names)
    for name, ts, term in zip(names[:4], res.t_events, res.meta["events"]["terminal"]):
        g_term, count, shown, more = got[name]
        assert (g_term, count, more) == (term, len(ts), len(ts) > 3)
        np.testing.assert_allclose(shown, ts[:3], rtol=5e-6, atol=0)


def _check_impacts(res, line):
    m = IMPACTS.match(line)
    assert m, line
    assert int(m.group(1)) == len(res.t_impacts)
    assert m.group(2).split(", ") == list(res.meta["impacts"]["names"])
    if not len(res.t_impacts):
        assert m.group(3) is None
        return m
    rows = [(abs(v), v, name, t) for t, p in zip(res.t_impacts, res.impulses)
            for name, v in p.items()]
    _, big, who, when = max(rows)
    assert float(m.group(3)) == pytest.approx(big, rel=5e-4)
    assert float(m.group(4)) == pytest.approx(when, rel=5e-6) and m.group(5) == who
    assert float(m.group(6)) == pytest.approx(res.impact_losses.sum(), rel=5e-4)
    return m


def test_events_line_counts_and_times():
    """A pendulum's three crossings of θ = 0 falling and an event that never occurs."""
    th = sp.Symbol("th")
    mdl = minimal_pendulum()
    mdl = mdl.replace(events={**mdl.events, "never": {"expr": th - 3.0, "direction": 1}})
    res = symgen.simulate(symgen.LambdifyKernels(mdl), dt=0.01, t_end=5.0)
    lines = res.summary("pend", 1.0)
    assert [len(ts) for ts in res.t_events] == [3, 0]
    _check_events(res, _line(lines, "events"))
    assert "never: 0" in _line(lines, "events") and _line(lines, "impacts") is None
    assert lines.index(_line(lines, "events")) < lines.index(_line(lines, "energy drift"))


def test_terminal_event_and_more_than_three_times_and_four_events(tmp_path):
    """A terminal event marked; more than three occurrences ('…'); five events listed as four
    and the count; the saved and loaded result gives the same lines."""
    (x,), _ = coordinates(["x"])
    # ẍ = −4x from x = 1: x = cos 2t crosses 0 at π/4 + kπ/2, 0.5 rising, −0.5 falling twice
    # before "stop" ends it at t = 7
    t = symgen.t
    events = {"zero": x, "up": {"expr": x - 0.5, "direction": 1},
              "down": {"expr": x + 0.5, "direction": -1}, "none": x - 2.0,
              "stop": {"expr": t - 7.0, "direction": 1, "terminal": True}}
    mdl = Model("ev_osc", [x], [[1]], [-4 * x], x0=[1.0], V=2 * x ** 2, events=events)
    res = symgen.simulate(symgen.LambdifyKernels(mdl), dt=0.01, t_end=10.0)
    assert res.status == "event" and [len(ts) for ts in res.t_events] == [4, 2, 2, 0, 1]
    lines = res.summary("osc", 1.0)
    _check_events(res, _line(lines, "events"))
    assert _events(_line(lines, "events"))["zero"][3]                  # '…': 4 shown as 3
    res.save(tmp_path / "r.npz")
    assert load_result(tmp_path / "r.npz").summary("osc", 1.0) == lines
    # the terminal event itself among the first four
    mdl2 = mdl.replace(events={k: events[k] for k in ("stop", "zero")})
    res2 = symgen.simulate(symgen.LambdifyKernels(mdl2), dt=0.01, t_end=10.0)
    line = _line(res2.summary("osc", 1.0), "events")
    _check_events(res2, line)
    assert line.startswith("  events          stop (terminal): 1, t = 7 s; zero: 4")


def test_impacts_line_and_cascade(tmp_path):
    """The bouncing ball's cascade on the compiled stepper (which has no persistent contact): the
    impacts' count, largest impulse (the first: (1 + e) m v0), the energy lost (all of it:
    E(0) = m g h0) and the cascade at the run's last impact."""
    res = symgen.simulate(symgen.build(ball()), dt=0.01, t_end=2.0, stepper="compiled")
    assert res.status == "failed" and res.reason.startswith("impact cascade")
    lines = res.summary("ball", 1.0)
    m = _check_impacts(res, _line(lines, "impacts"))
    assert float(m.group(8)) == pytest.approx(res.t_impacts[-1], rel=5e-6)
    assert float(m.group(3)) == pytest.approx(1.5 * math.sqrt(2 * 9.81), rel=5e-4)
    assert float(m.group(6)) == pytest.approx(9.81, rel=5e-4)
    _check_events(res, _line(lines, "events"))
    res.save(tmp_path / "b.npz")
    assert load_result(tmp_path / "b.npz").summary("ball", 1.0) == lines


def test_impacts_line_simultaneous_and_none():
    """A mass into a corner: one impact closing both rows (the larger impulse the floor's,
    m(1 + e2)v); the same mass never reaching them: 0 impacts, no impulse."""
    (x, y), _ = coordinates(["x", "y"])
    ev = {"wall": {"expr": x, "restitution": 0.3}, "floor": {"expr": y, "restitution": 0.8}}
    mdl = Model("imp_corner", [x, y], [[2.0, 0], [0, 2.0]], [0, 0], x0=[1.0, 1.0],
                xd0=[-1.0, -1.0], events=ev)
    res = symgen.simulate(symgen.LambdifyKernels(mdl), dt=0.1, t_end=1.5, stepper="python")
    m = _check_impacts(res, _line(res.summary("c", 1.0), "impacts"))
    assert (m.group(1), m.group(5), float(m.group(3))) == ("1", "floor", pytest.approx(3.6))
    res = symgen.simulate(symgen.LambdifyKernels(mdl), dt=0.1, t_end=0.5, stepper="python")
    line = _line(res.summary("c", 1.0), "impacts")
    _check_impacts(res, line)
    assert line == "  impacts         0 (wall, floor)"


def test_no_events_no_lines():
    (x,), _ = coordinates(["x"])
    res = symgen.simulate(symgen.LambdifyKernels(Model("osc", [x], [[1]], [-x], x0=[1.0])),
                          dt=0.01, t_end=0.1)
    assert event_lines(res) == []
    assert not any(ln.startswith(("  events ", "  impacts ")) for ln in res.summary("o", 1.0))
