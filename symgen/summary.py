"""The run summary ``symgen simulate`` prints (:meth:`symgen.Result.summary`), and the figures it
is made of: the run's maxima over every step (:func:`run_stats`) and the energy drift, or the
energy balance of a model with non-conservative elements (:func:`energy_balance`).  It reads a
Result's attributes only, so it works on a loaded result file as on a fresh run.
"""
from __future__ import annotations

import math

import numpy as np

from .names import REACTION_PREFIX, WORK_PREFIX

__all__ = ["summary_lines", "run_stats", "energy_drift", "energy_balance", "event_lines",
           "table_row"]


def _max_or_nan(a) -> float:
    a = np.asarray(a, dtype=float)
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a))) if np.isfinite(a).all() else math.nan


def run_stats(result) -> dict:
    """The maxima of the run over every step it took: ``meta['run_stats']`` as
    :func:`symgen.simulate` records it (exact also when only every K-th step was kept), else
    computed from the recorded rows (a result written before run_stats existed).

    Keys: ``states`` (initial state + steps), ``max_pos_err``, ``max_vel_err``, ``max_acc_err``
    (NaN if any was not finite), ``newton_iters_total``, ``newton_iters_max``, ``omega_max``
    (largest finite ω_max), ``h_max_min`` (smallest finite h_max, inf if none) and
    ``t_h_max_min`` (where), ``steps_h_over_h_max`` (states whose finite h_max is below h).
    """
    stats = (getattr(result, "meta", None) or {}).get("run_stats")
    if isinstance(stats, dict):
        return dict(stats)
    t = np.asarray(result.t, dtype=float)
    it = np.asarray(result.newton_iters, dtype=float)
    om = np.asarray(result.omega_max, dtype=float)
    hm = np.asarray(result.h_max, dtype=float)
    fin = np.isfinite(hm)
    h = (getattr(result, "meta", None) or {}).get("h")
    om_f = om[np.isfinite(om)]
    i = int(np.argmin(np.where(fin, hm, np.inf))) if fin.any() else None
    return {"states": int(t.size), "max_pos_err": _max_or_nan(result.pos_err),
            "max_vel_err": _max_or_nan(result.vel_err), "max_acc_err": _max_or_nan(result.acc_err),
            "newton_iters_total": int(it.sum()) if it.size else 0,
            "newton_iters_max": int(it.max()) if it.size else 0,
            "omega_max": float(om_f.max()) if om_f.size else math.nan,
            "h_max_min": float(hm[i]) if i is not None else math.inf,
            "t_h_max_min": float(t[i]) if i is not None else math.nan,
            "steps_h_over_h_max": int(np.sum(hm[fin] < h)) if isinstance(h, (int, float)) else 0}


# -- the run summary (what `symgen simulate` prints) ---------------------------------------------
def _fmt(value, unit=""):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a" if value is None else f"{value}"
    return f"{value:.3g}{unit}"


def energy_drift(result):
    """(max |E − E(0)|, E(0)) from a Result's total energy, or (None, None) without one."""
    e = getattr(result, "energy", None)
    if e is None:
        return None, None
    e = np.asarray(e, dtype=float)
    if e.size == 0:
        return None, None
    E = e.reshape(-1)
    E = E[np.isfinite(E)]
    if E.size == 0:
        return None, None
    return float(np.max(np.abs(E - E[0]))), float(E[0])


def energy_balance(result) -> dict | None:
    """The energy balance of a run whose model declares ``power:<element>`` outputs (so the
    result has their ``work:<element>``) or has impacts: E − E(0) − W_ext + L with W_ext = Σ
    work, E = T + V (V = 0 without a potential), L(t) the kinetic energy the impacts before t
    took (``Result.impact_losses``, docs/events.md).  None without work outputs, impacts or
    energy.  Keys: ``max`` (max |E − E(0) − W_ext + L| over the recorded rows), ``E0``,
    ``works`` {element: work at the last row; "impacts": −L there when there are impacts},
    ``t_end`` (that row's time)."""
    names = list(getattr(result, "output_names", ()) or ())
    cols = [i for i, s in enumerate(names) if s.startswith(WORK_PREFIX)]
    e = getattr(result, "energy", None)
    if e is None and getattr(result, "energy_kinetic", None) is not None:
        V = getattr(result, "energy_potential", None)
        e = np.asarray(result.energy_kinetic, float) + (0.0 if V is None else np.asarray(V, float))
    impacts = ((getattr(result, "meta", None) or {}).get("impacts") or {})
    if (not cols and not impacts) or e is None or np.size(e) == 0:
        return None
    E = np.asarray(e, dtype=float).reshape(-1)
    t = np.asarray(result.t, float)
    W = np.asarray(result.outputs, dtype=float)[:, cols] if cols else np.zeros((len(E), 0))
    ti, loss = (np.asarray(impacts.get(k, ()), dtype=float) for k in ("t", "loss"))
    L = (np.concatenate([[0.0], np.cumsum(loss)])[np.searchsorted(ti, t, side="left")]
         if impacts else np.zeros(len(E)))
    bal = E - E[0] - W.sum(axis=1) + L
    ok = np.isfinite(bal)
    last = int(np.flatnonzero(ok)[-1]) if ok.any() else len(E) - 1
    works = {names[i][len(WORK_PREFIX):]: float(W[last, k]) for k, i in enumerate(cols)}
    if impacts:
        works["impacts"] = -float(L[last])
    return {"max": float(np.max(np.abs(bal[ok]))) if ok.any() else math.nan, "E0": float(E[0]),
            "works": works, "t_end": float(t[last])}


def _energy_line(result) -> str:
    """The summary's energy line: the balance when the model declares powers, else the drift."""
    bal = energy_balance(result)
    if bal is not None:
        works = [f"{k} {v:.4g} J" for k, v in bal["works"].items()]
        more = f", … ({len(works)} elements)" if len(works) > 4 else ""
        lhs = "E − E(0) − W_ext + L" if "impacts" in bal["works"] else "E − E(0) − W_ext"
        return (f"  energy balance  max |{lhs}| = {bal['max']:.3g} J (E(0) = "
                f"{bal['E0']:.6g} J; W_ext at t = {bal['t_end']:g} s: {', '.join(works[:4])}{more})")
    drift, e0 = energy_drift(result)
    if drift is None:
        return "  energy drift    n/a (no potential V)"
    return f"  energy drift    max |E − E(0)| = {drift:.3g} J (E(0) = {e0:.6g} J)"


def peak_forces(result) -> dict:
    """{joint: max |F|} over the recorded rows, from the ``reaction:<joint>.F*`` columns."""
    names = list(getattr(result, "output_names", ()) or ())
    squares: dict[str, np.ndarray] = {}
    for i, name in enumerate(names):
        if name.startswith(REACTION_PREFIX) and name[-2:-1] == "F":
            joint = name[len(REACTION_PREFIX):].rpartition(".")[0]
            col = np.asarray(result.outputs[:, i], dtype=float)
            squares[joint] = squares.get(joint, 0.0) + col * col
    return {j: float(np.sqrt(v.max())) if v.size else math.nan for j, v in squares.items()}


def reaction_line(result) -> str:
    """The summary's reactions line: the four largest peak forces (:func:`peak_forces`); "" when
    the result has no reactions."""
    top = sorted(((f, j) for j, f in peak_forces(result).items()), reverse=True)
    if not top:
        return ""
    more = f", … ({len(top)} joints)" if len(top) > 4 else ""
    return "  peak reaction   |F| " + ", ".join(f"{j} {f:.4g} N" for f, j in top[:4]) + more


def _pad(label: str, width: int) -> str:
    """Left-justify by displayed width (combining dots such as q̇ take no column)."""
    import unicodedata
    shown = sum(0 if unicodedata.combining(ch) else 1 for ch in label)
    return label + " " * max(width - shown, 0)


def _control_lines(control: dict) -> list[str]:
    """The variable step's lines: step range, rejected tries, largest error estimate."""
    rng = control.get("h_range")
    lines = [f"  step size       {float(rng[0]):.3g} … {float(rng[1]):.3g} s (rtol "
             f"{float(control['rtol']):.0e}, atol {control['atol'] if isinstance(control['atol'], list) else format(float(control['atol']), '.0e')})"
             if rng else "  step size       no step accepted"]
    rej = int(control.get("rejected_steps") or 0)
    lines.append(f"  rejected        {rej} tries ({int(control.get('rejected_error') or 0)} by the "
                 f"error test, {int(control.get('rejected_newton') or 0)} Newton failures)")
    lines.append(f"  error estimate  max {float(control.get('err_est_max') or 0.0):.3g} of the "
                 "tolerance (WRMS, local)")
    if control.get("degrees_of_freedom") == 0:      # a fully driven model (issue 35)
        cap = control.get("h_max_step")
        cap = f" = {float(cap):.3g} s" if cap is not None else ""
        pad = " " * 18
        lines += ["  0 dof           the drives prescribe the whole motion: the error estimate has "
                  "nothing", f"{pad}to measure, so the steps go up to h_max{cap} (h_max=, "
                  "--h-max: finer", f"{pad}steps; t_eval=, --t-eval: rows between them)"]
    return lines


def _stability_lines(result, meta: dict, stats: dict, h) -> list[str]:
    """The summary's stability line: the smallest h_max over the run against the step used, or
    the scheme's words when no step was estimated (an A-stable step estimates at the start only)."""
    hmax = getattr(result, "h_max", None)
    if hmax is None or not np.size(hmax):
        return []
    hm = np.asarray(hmax, dtype=float)
    if not np.isfinite(hm).any():
        from .stability import run_stability_words

        sch = meta.get("scheme") if isinstance(meta.get("scheme"), dict) else {}
        gamma = float(meta.get("gamma", sch.get("gamma", math.nan)))
        beta = float(meta.get("beta", sch.get("beta", math.nan)))
        om = np.asarray(getattr(result, "omega_max", np.full(hm.shape, np.nan)), dtype=float)
        words = run_stability_words(om, hm, gamma, beta, bool(sch.get("a_stable", False)))
        note = ""
        if meta.get("estimate") == "start" and om.size and math.isfinite(float(om[0])):
            note = f"; ω_max {float(om[0]):.4g} rad/s at the start (per step: --estimate)"
        return [f"  stability       {words}; h used {h if h == 'auto' else _fmt(h, ' s')}{note}"]
    t_min = float(stats["t_h_max_min"])
    when = f" at t = {t_min:.4g} s" if math.isfinite(t_min) else ""
    verdict = ""
    if h == "auto":
        verdict = "  (every step within 0.9 h_max)" if int(stats["steps_h_over_h_max"]) \
            == 0 else f"  (h exceeds h_max on {int(stats['steps_h_over_h_max'])} steps)"
    elif isinstance(h, (int, float)):
        over = int(stats["steps_h_over_h_max"])
        verdict = ("  (within the limit)" if over == 0
                   else f"  (h exceeds h_max on {over} steps)")
    return [f"  stability       smallest h_max = {float(stats['h_max_min']):.6g} s"
            f"{when}; h used = {h if h == 'auto' else _fmt(h, ' s')}{verdict}"]


def _times(ts, shown: int = 3) -> str:
    """'t = a, b, c … s': the first ``shown`` of the times ``ts`` (6 digits)."""
    more = " …" if len(ts) > shown else ""
    return "t = " + ", ".join(f"{float(v):.6g}" for v in ts[:shown]) + f"{more} s"


def event_lines(result) -> list[str]:
    """The summary's events and impacts lines (docs/events.md), from ``meta["events"]`` and
    ``meta["impacts"]``: each event's count and first times (a terminal one marked), up to four
    events; the impacts' count, the largest impulse (its event and time), the kinetic energy
    they took, and the cascade that ended the run if one did.  [] for a run without events."""
    meta = getattr(result, "meta", None) or {}
    ev, imp = meta.get("events") or {}, meta.get("impacts") or {}
    lines = []
    names = list(ev.get("names") or ())
    if names:
        terminal = list(ev.get("terminal") or [False] * len(names))
        parts = [f"{name}{' (terminal)' if term else ''}: {len(ts)}"
                 + (f", {_times(ts)}" if len(ts) else "")
                 for name, ts, term in zip(names, ev.get("t") or [()] * len(names), terminal)]
        more = f"; … ({len(parts)} events)" if len(parts) > 4 else ""
        lines.append(f"  {_pad('events', 15)} " + "; ".join(parts[:4]) + more)
    if imp.get("names"):
        t = list(imp.get("t") or ())
        text = f"{len(t)} ({', '.join(imp['names'])})"
        rows = [(abs(float(v)), float(v), a, float(ti))
                for ti, act, iv in zip(t, imp.get("active") or (), imp.get("impulse") or ())
                for a, v in zip(act, iv)]
        if rows:
            _, big, who, when = max(rows)
            text += (f", largest impulse {big:.4g} at t = {when:.6g} s ({who}), kinetic energy "
                     f"lost {float(np.sum(imp.get('loss') or ())):.4g} J")
        if t and getattr(result, "status", "") == "failed" and \
                str(getattr(result, "reason", "")).startswith("impact cascade"):
            text += f"; a cascade ended the run at t = {float(t[-1]):.6g} s (the reason above)"
        lines.append(f"  {_pad('impacts', 15)} {text}")
    return lines


def summary_lines(result, name: str, wall: float, h: float | None = None) -> list[str]:
    """The one-screen summary ``symgen simulate`` prints; its maxima cover every step taken
    (``meta['run_stats']``), also those not recorded."""
    meta = dict(getattr(result, "meta", None) or {})
    t = np.asarray(result.t, dtype=float)
    steps = int(meta.get("steps_done", max(len(t) - 1, 0)))
    stats = run_stats(result)
    h = h if h is not None else meta.get("h", meta.get("dt"))
    lines = [f"{name}: {result.status}"]
    reason = getattr(result, "reason", "")
    if result.status != "completed" and reason:
        lines.append(f"  reason          {reason}")
    scheme = meta.get("scheme", "")
    if isinstance(scheme, dict):
        name = str(scheme.get("name") or "")
        gb = f"γ = {float(scheme.get('gamma', math.nan)):.8g}, β = {float(scheme.get('beta', math.nan)):.8g}"
        scheme = f"{name} ({gb})" if name and not name.startswith("newmark(") else f"({gb})"
    t0 = float(t[0]) if len(t) else 0.0
    t1 = float(t[-1]) if len(t) else 0.0
    chart = f" ({meta['chart']} chart)" if meta.get("chart") else ""
    for extra in ([f"{meta['metric']} metric"] if meta.get("metric") not in (None, "euclidean")
                  else []) + ([f"preset {meta['preset']}"] if meta.get("preset") else []):
        chart = f"{chart[:-1]}, {extra})" if chart else f" ({extra})"
    control = meta.get("step_control")
    if isinstance(control, dict):                 # dt="auto" (adaptive.py)
        h = "auto"
    lines.append(f"  method          {meta.get('method', '?')}{chart}, scheme {scheme or '?'}, "
                 f"h = {h if h == 'auto' else _fmt(h, ' s')}, t = {t0:g} … {t1:g} s")
    every = int(meta.get("every", 1) or 1)
    lines.append(f"  steps           {steps}" + (f" ({len(t)} recorded: every {every}-th and the "
                                                 "last)" if every > 1 else ""))
    if isinstance(control, dict):
        lines += _control_lines(control)
    if steps:
        total = int(stats["newton_iters_total"])
        lines.append(f"  Newton iters    {total} total, {total / steps:.2f} per step "
                     f"(max {int(stats['newton_iters_max'])})")
    floor = int(meta.get("floor_steps") or 0)
    if floor > 0:
        times = list(meta.get("floor_times") or [])
        first = f" (first at t = {float(times[0]):.6g} s" if times else " ("
        last = meta.get("floor_t_last")
        more = f", last at t = {float(last):.6g} s)" if last is not None and floor > 1 else ")"
        lines.append(f"  at floor        {floor} steps accepted at the round-off floor"
                     f"{first}{more}".replace(" ()", ""))
    count = int(meta.get("substepped_steps") or 0)
    if count > 0:                           # nullspace: steps Newton could not close (issue 21)
        times = ", ".join(f"{float(v):.6g}" for v in (meta.get("substepped_times") or [])[:5])
        lines.append(f"  {_pad('substepped', 15)} {count} steps Newton could not close, taken as "
                     "sub-steps under error control"
                     + (f" (t = {times}{' …' if count > 5 else ''} s)" if times else ""))
    count = int(meta.get("landing_steps") or 0)
    if count > 0:                           # nullspace: landings stepped over (issue 8 §2)
        times = ", ".join(f"{float(v):.6g}" for v in (meta.get("landing_times") or [])[:5])
        lines.append(f"  {_pad('landings', 15)} {count} steps landed next to a singular "
                     f"configuration (t = {times}{' …' if count > 5 else ''} s): recorded, and "
                     "the run went on from the step before in steps of h/2, h, h/2")
    count = int(meta.get("crossed_steps") or 0)
    if count > 0:                           # nullspace: grid points crossed (issue 21)
        times = ", ".join(f"{float(v):.6g}" for v in (meta.get("crossed_times") or [])[:5])
        what = "grid points" if count > 1 else "grid point"
        lines.append(f"  {_pad('crossed', 15)} {count} {what} no step could end on (a singular "
                     f"configuration; t = {times}{' …' if count > 5 else ''} s): recorded from "
                     "the interpolant of a sub-step across")
    for text in meta.get("fallbacks") or ():  # what the run took instead (issue 37.7)
        lines.append(f"  {_pad('fallback', 15)} {text}")
    for key, label in (("max_pos_err", "max ‖q‖"), ("max_vel_err", "max ‖q̇‖"),
                       ("max_acc_err", "max ‖q̈‖")):
        lines.append(f"  {_pad(label, 15)} {_fmt(float(stats[key]))}")
    lines += event_lines(result)
    lines.append(_energy_line(result))
    react = reaction_line(result)
    if react:
        lines.append(react)
    lines += _stability_lines(result, meta, stats, h)
    dense = float(meta.get("t_eval_seconds") or 0.0)        # the t_eval rows: not stepping
    stepping = wall - dense if 0 < dense < wall else wall
    rate = f"{steps / stepping:.0f} steps/s" if stepping > 0 and steps else ""
    if rate and stepping < wall:
        rate = f"{rate} over the {stepping:.2f} s of stepping; the t_eval rows took {dense:.2f} s"
    lines.append(f"  wall time       {wall:.2f} s" + (f" ({rate})" if rate else ""))
    return lines


def _finite_max(a) -> float:
    a = np.asarray(a, float)
    if a.size == 0:
        return 0.0
    f = a[np.isfinite(a)]
    return float(np.max(np.abs(f))) if f.size == a.size else math.nan


def table_row(result) -> dict:
    """A sweep's table columns of one Result (without the run id and grid keys; symgen.study)."""
    drift, _ = energy_drift(result)
    balance = energy_balance(result)        # a driven or damped model: its balance, not drift
    if balance is not None:
        drift = balance["max"]
    stats = run_stats(result)               # over every step taken, not only the recorded rows
    meta = result.meta or {}
    row = {
        "status": result.status, "reason": result.reason,
        "steps": int(meta.get("steps_done", result.n_steps)),
        "wall_time": float(meta.get("wall_time", math.nan)),
        "max_pos_err": float(stats["max_pos_err"]), "max_vel_err": float(stats["max_vel_err"]),
        "max_acc_err": float(stats["max_acc_err"]),
        "energy_drift": math.nan if drift is None else drift,
        "min_h_max": float(stats["h_max_min"]),
    }
    keep = [i for i, o in enumerate(result.output_names) if not o.startswith(REACTION_PREFIX)]
    names, data = (([result.output_names[i] for i in keep], result.outputs[:, keep]) if keep
                   else (result.coords, result.x))
    for i, name in enumerate(names):
        col = data[:, i]
        row[f"final.{name}"] = float(col[-1]) if col.size else math.nan
        row[f"max_abs.{name}"] = _finite_max(col)
    row.update({f"peak_force.{j}": f for j, f in peak_forces(result).items()})  # the reactions
    return row
