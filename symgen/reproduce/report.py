"""The report of ``symgen reproduce``: ``report.md`` (the claim table, the rules, figures, notes and
every run) and ``claims.json``, written whole from what the experiments recorded.
"""
from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import atomic_write_text
from .claims import Claim

__all__ = ["Report", "write_report"]


@dataclass
class Report:
    path: Path
    claims: list[Claim]
    quick: bool
    wall: float
    runs: list[dict] = field(default_factory=list)
    errors: dict = field(default_factory=dict)      # experiment → the exception that stopped it

    def table_lines(self) -> list[str]:
        lines = ["| claim | paper's value | ours | agree? |", "|---|---|---|---|"]
        for c in self.claims:
            cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
            text = c.text + (f" (derived from {c.derived_from})" if c.derived_from else "")
            lines.append(f"| {c.id}: {cell(text)} | {cell(c.paper)} | {cell(c.ours)} | "
                         f"{cell(c.agree)} |")
        return lines

    def tally(self) -> tuple[int, int, int, int]:
        """(agree, checked, not comparable, not checked) over the independent claims: a claim
        derived from another (P2, P3 are arithmetic on P1's ω_max) is shown, not counted."""
        independent = [c for c in self.claims if not c.derived_from]
        ran = sum(c.agree in ("yes", "no") for c in independent)
        return (sum(c.agree == "yes" for c in independent), ran,
                sum(c.agree.startswith("n/a") for c in independent), len(independent) - ran)


def write_report(report: Report, ctx, errors: dict) -> None:
    from ..version import __version__

    agree, ran, n_na, other = report.tally()
    not_counted = "; ".join(f"{c.id} is arithmetic on {c.derived_from}"
                            for c in report.claims if c.derived_from)
    lines = [
        "# Reproduction of Fernández de Bustos et al., Meccanica 57:371–399 (2022)",
        "",
        f"symgen {__version__}, Python {platform.python_version()}, numpy {np.__version__}; "
        f"{'quick (reduced) set' if report.quick else 'full set'}; wall time {report.wall:.1f} s; "
        f"generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} by "
        f"`symgen reproduce{' --quick' if report.quick else ''}`.",
        "",
        f"**{agree} of {ran} independent claims checked agree** "
        f"({other} more: {n_na} not comparable, {other - n_na} not run or broken; not counted: "
        f"{not_counted or 'none'}). "
        "Every value under *ours* was "
        "computed by this run; *agree?* follows the rule given for each claim below the table. "
        "The null-space runs take the paper's step (`preset=\"paper\"`: the end chart, the "
        "Euclidean metric), not symgen's default (the symmetric chart with the mass metric).",
        "",
        "## Claims",
        "",
        *report.table_lines(),
        "",
        "### Rules and figures",
        "",
    ]
    for c in report.claims:
        fig = f" Figure: [{c.figure}]({c.figure})." if c.figure else ""
        lines.append(f"- **{c.id}** ({c.experiment}): agree ⇔ {c.rule}.{fig}")
    for section in ("stiff pendulum", "double pendulum", "Andrews' squeezer", "beyond the paper",
                    "efficiency (Sec. 7)"):
        figs = [(f, cap) for s, f, cap in ctx.figures if s == section]
        notes = ctx.notes.get(section, [])
        if not figs and not notes and section not in errors:
            continue
        lines += ["", f"## {section[0].upper() + section[1:]}", ""]
        if section in errors:
            lines += [f"The experiment stopped with an error: `{errors[section]}`.", ""]
        for n in notes:
            lines += [n, ""]
        for f, cap in figs:
            lines += [f"![{cap}]({f})", "", f"*{cap}*", ""]
    lines += ["", "## Runs", "",
              "| model | method | scheme | h [s] | t_end [s] | parameters | status | reached t | "
              "steps | wall [s] |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report.runs:
        params = ", ".join(f"{k}={v:g}" for k, v in r["params"].items()) or "defaults"
        lines.append(f"| {r['model']} | {r['method']} | {r['scheme']} | {r['h']:g} | "
                     f"{r['t_end']:g} | {params} | {r['status']} | {r['t_last']:.4g} | "
                     f"{r['steps']} | {r['wall']:.2f} |")
    failed = [r for r in report.runs if r["status"] != "completed" and r["reason"]]
    if failed:
        lines += ["", "Reasons given by the runs that did not complete:", ""]
        for r in failed:
            lines.append(f"- {r['model']}, {r['method']}, {r['scheme']}, h = {r['h']:g}"
                         f"{', ' + ', '.join(f'{k}={v:g}' for k, v in r['params'].items()) if r['params'] else ''}"
                         f": {' '.join(r['reason'].split())}")
    atomic_write_text(report.path, "\n".join(lines) + "\n")
    atomic_write_text(report.path.parent / "claims.json", json.dumps(
        [dict(id=c.id, experiment=c.experiment, claim=c.text, paper=c.paper, ours=c.ours,
              agree=c.agree, rule=c.rule, figure=c.figure, derived_from=c.derived_from)
         for c in report.claims], indent=1),
        encoding="utf-8")
