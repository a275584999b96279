"""``symgen reproduce``: the stiff pendulum (paper Sec. 3; claims P1–P14)."""
from __future__ import annotations

import math

import numpy as np

from .claims import ROUND_OFF, STABLE_RATIO, _failed_in_step, _maxabs, _ok, _saw_growth, _steps
from .context import Context, _col, _g, _status, _tlast
from .references import scipy_reference

__all__ = ["experiment"]


def experiment(ctx: Context) -> None:
    """The stiff pendulum experiment, top to bottom in the order of the paper's figures: the
    stability estimate, the step-size studies (Figs. 3–7, 12, 13), the torque-amplitude study
    (Figs. 8–10).  Each block runs, then sets the claim it decides, then draws its figure; the
    rules live in :mod:`.claims`."""
    from ..plot import Panel, Series, panels_figure

    S = "stiff pendulum"
    c = ctx.claims
    quick = ctx.quick
    t_end = 60.0 if quick else 300.0
    ex, mn = "stiff_pendulum", "stiff_pendulum_minimal"

    _stability_estimate(ctx, ex)

    # reference θ(t) on a fine grid (its amplitude scales the stability verdicts)
    grid = np.linspace(0.0, t_end, int(t_end / 0.01) + 1)
    xr, _ = scipy_reference(ctx.model(mn), grid)
    ref_amp = float(np.max(np.abs(xr[:, 0])))

    def ratio(res, name):
        th = _col(res, name)
        th = th - th[0]
        return _maxabs(th) / ref_amp if np.all(np.isfinite(th)) else math.inf

    def stable(res, name):
        """(True, False, or None for a run that took no step: no evidence either way; ratio)"""
        r = ratio(res, name)
        if _ok(res) and r < STABLE_RATIO:
            return True, r
        return (False if _steps(res) >= 1 else None), r

    def word(st):
        return {True: "stable", False: "unstable", None: "no step taken"}[st]

    def study(key, method, scheme, steps, name):
        rows = []
        for h in steps:
            res = ctx.sim(key, method, scheme, h, t_end, T0=0.1)
            st, r = stable(res, name)
            rows.append((h, res, st, r))
        return rows

    def describe(rows):
        return "; ".join(f"{h:g} s: {word(st)} (ratio {_g(r)}"
                         f"{'' if _ok(res) else ', ' + _status(res)})" for h, res, st, r in rows)

    def fig(rows, name, title, fname):
        panels = []
        for h, res, st, r in rows:
            tt = np.asarray(res.t)
            th = _col(res, name)
            th = th - th[0]
            panels.append(Panel(f"h = {h:g} s ({word(st)}; {_status(res)})",
                                "t [s]", "θ [rad]",
                                [Series(grid, xr[:, 0], "reference (SciPy)", "-"),
                                 Series(tt, th, f"h = {h:g} s", ".-")]))
        return ctx.figure(S, fname, panels_figure(panels, ncols=2, suptitle=title), title)

    theta_ex = ".theta"
    # minimal coordinates (P4–P6)
    cd_steps = [0.1, 0.6, 0.7]
    fg_steps = [0.1, 0.6, 0.7, 0.78, 0.79]
    tr_steps = [0.1, 0.7, 0.79, 6.0]
    rows = study(mn, "central-difference", "central-difference", cd_steps, "theta")
    f = fig(rows, "theta", "Minimal coordinates, central differences (Fig. 3)",
            "pendulum_minimal_central_difference.png")
    want = {0.1: True, 0.6: True, 0.7: False}
    c["P4"].set(describe(rows), all(st == want[h] for h, _, st, _ in rows), f)
    rows = study(mn, "newmark", "fox-goodwin", fg_steps, "theta")
    f = fig(rows, "theta", "Minimal coordinates, Fox–Goodwin (Fig. 4)",
            "pendulum_minimal_fox_goodwin.png")
    c["P5"].set(describe(rows), all(st == (h <= 0.78) for h, _, st, _ in rows), f)
    rows = study(mn, "newmark", "trapezoidal", tr_steps, "theta")
    f = fig(rows, "theta", "Minimal coordinates, trapezoidal rule (Fig. 5)",
            "pendulum_minimal_trapezoidal.png")
    c["P6"].set(describe(rows), all(st is True for _, _, st, _ in rows), f)

    # classical index-3 (P7, P8)
    rows = study(ex, "index3", "trapezoidal", [0.1, 0.7, 0.79, 6.0], theta_ex)
    f = fig(rows, theta_ex, "Classical index-3 Newmark, trapezoidal rule (Fig. 6)",
            "pendulum_classical_trapezoidal.png")
    c["P7"].set(describe(rows), all(st is True for _, _, st, _ in rows), f)
    fg_cl = [0.1, 0.6, 0.78, 0.79]
    rows = study(ex, "index3", "fox-goodwin", fg_cl, theta_ex)
    f = fig(rows, theta_ex, "Classical index-3 Newmark, Fox–Goodwin (Fig. 7)",
            "pendulum_classical_fox_goodwin.png")
    c["P8"].set("; ".join(f"{h:g} s: {_status(res)}" for h, res, _, _ in rows),
                all(_failed_in_step(res) for _, res, _, _ in rows), f)

    # new method (P12, P13)
    ns_fg = [0.1, 0.6, 0.78, 0.79]
    rows = study(ex, "nullspace", "fox-goodwin", ns_fg, theta_ex)
    f = fig(rows, theta_ex, "New method (null space), Fox–Goodwin (Fig. 12)",
            "pendulum_nullspace_fox_goodwin.png")
    cerr = max(max(_maxabs(r.pos_err), _maxabs(r.vel_err), _maxabs(r.acc_err)) for _, r, _, _ in rows)
    c["P12"].set(describe(rows) + f"; max constraint error {_g(cerr)}",
                 all(st == (h <= 0.78) for h, _, st, _ in rows), f)
    rows = study(ex, "nullspace", "trapezoidal", [0.1, 0.7, 0.79, 6.0], theta_ex)
    f = fig(rows, theta_ex, "New method (null space), trapezoidal rule (Fig. 13)",
            "pendulum_nullspace_trapezoidal.png")
    c["P13"].set(describe(rows), all(st is True for _, _, st, _ in rows), f)

    _torque_study(ctx, S, ex, mn, theta_ex)
    ctx.note(S, f"Reference: SciPy DOP853 (rtol = atol = 1e-11) on m L² θ̈ + m g L sin θ = "
                f"T0 sin(ω̄ t); its amplitude over {t_end:g} s is {ref_amp:.4g} rad. The "
                f"amplitude ratio is max |θ − θ(0)| of a run over that value.")


def _stability_estimate(ctx: Context, ex: str) -> None:
    """P1–P3: ω_max at rest and the step limits of central differences and Fox–Goodwin (Eq. 11)."""
    from ..stability import suggest_step
    from ..steppers import parse_scheme

    c = ctx.claims
    k = ctx.kernels(ex)
    k.set_params(T0=0.1)
    omega, h_fg = suggest_step(k, "fox-goodwin", preset="paper")          # the paper's step
    h_cd = parse_scheme("central-difference").h_max(omega)
    c["P1"].set(f"{omega:.10g} rad/s", abs(omega - 3.1304951) < 1e-6)
    c["P2"].set(f"{h_cd:.10g} s", abs(h_cd - 0.6388765) < 1e-6)
    c["P3"].set(f"{h_fg:.8g} s", abs(h_fg - 0.78246) < 1e-5)


def _torque_study(ctx: Context, S: str, ex: str, mn: str, theta_ex: str) -> None:
    """P9–P11, P14: large torque amplitudes at h = 0.1 s, trapezoidal (Figs. 8–10): classical
    index-3, the new method and minimal coordinates."""
    from ..plot import Panel, Series, panels_figure

    c, quick = ctx.claims, ctx.quick
    k = ctx.kernels(ex)
    T0s = [9.0] if quick else [5.0, 6.0, 7.0, 8.0, 9.0]
    t_T = 300.0
    h = 0.1
    classical, minimal, new = {}, {}, {}
    for T0 in T0s:
        classical[T0] = ctx.sim(ex, "index3", "trapezoidal", h, t_T, T0=T0)
        new[T0] = ctx.sim(ex, "nullspace", "trapezoidal", h, t_T, T0=T0)
    for T0 in [5.0, 6.0, 7.0, 8.0, 9.0]:
        minimal[T0] = ctx.sim(mn, "newmark", "trapezoidal", h, t_T, T0=T0)
    k.set_params(T0=0.1)
    ctx.kernels(mn).set_params(T0=0.1)

    panels = []
    for T0 in T0s:
        series = [Series(new[T0].t, _col(new[T0], theta_ex) - _col(new[T0], theta_ex)[0],
                         "new method"),
                  Series(classical[T0].t, _col(classical[T0], theta_ex)
                         - _col(classical[T0], theta_ex)[0], "classical index-3", "--")]
        if T0 in minimal:
            series.append(Series(minimal[T0].t, _col(minimal[T0], "theta"), "minimal", ":"))
        panels.append(Panel(f"T0 = {T0:g} N m; classical {_status(classical[T0])}", "t [s]",
                            "θ [rad]", series))
    f8 = ctx.figure(S, "pendulum_torque_theta.png",
                    panels_figure(panels, ncols=min(2, len(panels)),
                                  suptitle="Trapezoidal rule, h = 0.1 s: θ for "
                                  "large torque amplitudes (Figs. 8–9)"),
                    "θ(t) for T0 = 5–9 N m, trapezoidal, h = 0.1 s")
    panels = []
    for T0 in T0s:
        cl = np.asarray(classical[T0].lam)
        series = []
        if cl.ndim == 2 and cl.shape[1]:
            series.append(Series(classical[T0].t, np.abs(cl[:, 0]), "classical |λ0|"))
        series.append(Series(new[T0].t, np.abs(np.asarray(new[T0].lam)[:, 0]), "new method |λ0|"))
        panels.append(Panel(f"T0 = {T0:g} N m", "t [s]", "|λ0| (x reaction) [N]", series,
                            logy=True))
    f10 = ctx.figure(S, "pendulum_torque_reactions.png",
                     panels_figure(panels, ncols=min(2, len(panels)),
                                   suptitle="Reaction force (x component) for large torque "
                                   "amplitudes, log scale (Fig. 10)"),
                     "x reaction λ0(t), classical index-3 vs new method, trapezoidal, h = 0.1 s")
    r9 = classical[9.0]
    c["P9"].set("; ".join(f"T0 = {T0:g}: {_status(classical[T0])}" for T0 in T0s)
                + f" (runs of {t_T:g} s)", _failed_in_step(r9), f8)
    first, last = _saw_growth(r9, new[9.0])
    c["P10"].set(f"T0 = 9: period-2 amplitude of λ_classical − λ_new grows from {_g(first)} N "
                 f"(first sixth of the run) to {_g(last)} N (last sixth, up to t = "
                 f"{_tlast(r9):.4g} s)", last >= 10 * max(first, 1e-300), f10)
    if minimal:
        c["P11"].set("; ".join(f"T0 = {T0:g}: {_status(minimal[T0])}, max |θ| "
                               f"{_g(_maxabs(_col(minimal[T0], 'theta')))} rad" for T0 in T0s),
                     all(_ok(r) for r in minimal.values()), f8)
    worst = max(max(_maxabs(r.pos_err), _maxabs(r.vel_err), _maxabs(r.acc_err))
                for r in new.values())
    c["P14"].set("; ".join(f"T0 = {T0:g}: {_status(new[T0])}" for T0 in T0s)
                 + f"; max constraint error {_g(worst)}",
                 all(_ok(r) for r in new.values()) and worst <= ROUND_OFF, f8)
