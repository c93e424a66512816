"""Renders `reprobot eval` results: report.md with seed-style tables, and the success@k plot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bot.render.charts import ranking_svg, timeline_svg

#: Folder of report.md's per-case charts (the dashboard's SVG charts), beside it.
CHARTS_DIR = "charts"


def render_report(summary: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    """Markdown tables: success@k, selector precision/recall, per-case outcomes."""
    ks = sorted({int(k) for row in summary["success_at_k"].values() for k in row})
    lines = [f"# reprobot eval: {summary['cases']} cases, M = {summary['trajectories']}"]
    lines += render_projects_section(summary.get("selection"), summary.get("projects"))
    lines += [
        "",
        "## success@k (unbiased estimator 1 − C(n−c,k)/C(n,k))",
        "",
        "| metric | " + " | ".join(f"k={k}" for k in ks) + " |",
        "|---|" + "---|" * len(ks),
    ]
    for metric, row in summary["success_at_k"].items():
        lines.append(f"| {metric}@k | " + " | ".join(f"{row[str(k)]:.3f}" for k in ks) + " |")
    lines += [
        "",
        "## Selectors (precision = correct / selected; recall = correct / cases with a correct candidate)",
        "",
        "| selector | fix P | fix R | BRT P | BRT R | both P | both R "
        "| selected plausible fix | selected plausible BRT |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, table in summary["selectors"].items():
        fix, brt, both = table["plausible fix"], table["plausible BRT"], table["both"]
        counts = summary["selected_counts"][name]
        lines.append(
            f"| {name} | {fix['precision']:.2f} | {fix['recall']:.2f} | {brt['precision']:.2f} | "
            f"{brt['recall']:.2f} | {both['precision']:.2f} | {both['recall']:.2f} | "
            f"{counts['plausible_fix']}/{summary['cases']} | {counts['plausible_brt']}/{summary['cases']} |"
        )
    lines += [
        "",
        "## BRT signals (seed Table 4: how well a signal in a patch predicts a plausible fix; * needs the oracle)",
        "",
        "| signal | patches | of them plausible fixes | P(plausible fix given signal) | recall | F |",
        "|---|---|---|---|---|---|",
    ]
    for row in summary.get("brt_signals", []):
        lines.append(
            f"| {row['signal']} | {row['with_signal']} | {row['plausible_with_signal']} | {row['precision']:.3f} | "
            f"{row['recall']:.3f} | {row['f_score']:.3f} |"
        )
    lines += render_assessment_section(summary.get("assessment"))
    lines += ["", "## Cogeneration (trajectories that finished on their own)", ""]
    lines += [f"- {name}: {value:.3f}" for name, value in summary.get("cogeneration", {}).items()]
    lines += [
        "",
        "## Cases",
        "",
        "| case | status | seconds | plausible fixes | plausible BRTs | ranked pick: fix / BRT | confident |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in cases:
        trajs = case["trajectories"]
        pf = sum(1 for t in trajs if t.get("plausible_fix"))
        pb = sum(1 for t in trajs if t.get("plausible_brt"))
        ranked = case["selections"].get("ranked", {})
        pick = f"{'✓' if ranked.get('plausible_fix') else '✗'} / {'✓' if ranked.get('plausible_brt') else '✗'}"
        sure = sum(1 for t in trajs if (t.get("assessment") or {}).get("verdict") == "confident")
        lines.append(
            f"| {case['name']} | {case['status']} | {case['seconds']:.1f} | {pf}/{len(trajs)} | "
            f"{pb}/{len(trajs)} | {pick} | {sure}/{len(trajs)} |"
        )
    lines += [
        "",
        f"Statuses: {summary['statuses']}. Median seconds per case: {summary['median_seconds_per_case']:.1f}.",
    ]
    return "\n".join(lines) + "\n"


def case_charts(case: dict[str, Any]) -> dict[str, str]:
    """The case's charts as SVG, by name (timeline, ranking); the ones with nothing to draw are left out."""
    data = case.get("charts") or {}
    charts = {
        "timeline": timeline_svg(data.get("stages") or [], data.get("trajectories") or []),
        "ranking": ranking_svg(data.get("localization") or []),
    }
    return {name: svg for name, svg in charts.items() if svg}


def _chart_file(case: str, name: str) -> str:
    """A chart's file name: the case name made safe for a path, then the chart's name."""
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', case)}-{name}.svg"


def write_charts(out: Path, cases: list[dict[str, Any]]) -> list[Path]:
    """Write every case's charts under out/charts and link them from report.md; returns the files written."""
    written, links = [], []
    for case in cases:
        for name, svg in case_charts(case).items():
            path = out / CHARTS_DIR / _chart_file(str(case["name"]), name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(svg + "\n")
            written.append(path)
            links.append(f"- {case['name']}: [{name}]({CHARTS_DIR}/{path.name})")
    report = out / "report.md"
    if links and report.exists():
        section = "\n## Charts (the dashboard's: stages and trajectories over time, fault localization)\n\n"
        report.write_text(report.read_text() + section + "\n".join(links) + "\n")
    return written


def write_report(path: Path, summary: dict[str, Any], cases: list[dict[str, Any]]) -> None:
    """Write report.md."""
    path.write_text(render_report(summary, cases))


def render_projects_section(selection: dict[str, Any] | None, projects: dict[str, Any] | None) -> list[str]:
    """Which projects the run covered (a held-out check says so first), and one row per project with a total."""
    lines: list[str] = []
    selection = selection or {}
    if selection.get("held_out") is not None:
        lines += ["", f"**Held-out project: {selection['held_out']}.** This run covers {selection['runs']}."]
    if not projects:
        return lines
    lines += [
        "",
        "## Per project (plausible: the oracle's verdict on what the job delivered; published wrong: status "
        "fixed, yet not a plausible fix)",
        "",
        "| project | cases | plausible fix | plausible BRT | published | published wrong |",
        "|---|---|---|---|---|---|",
    ]
    total = {"cases": 0, "plausible_fix": 0, "plausible_brt": 0, "published": 0, "published_wrong": []}
    for name, row in projects.items():
        lines.append(_project_line(name, row))
        for key, value in row.items():
            total[key] += value
    if len(projects) > 1:
        lines.append(_project_line("**all**", total))
    return lines


def _project_line(name: str, row: dict[str, Any]) -> str:
    wrong = row["published_wrong"]
    named = f" ({', '.join(wrong)})" if wrong else ""
    n = row["cases"]
    return (
        f"| {name} | {n} | {row['plausible_fix']}/{n} | {row['plausible_brt']}/{n} | {row['published']} | "
        f"{len(wrong)}{named} |"
    )


def render_assessment_section(assessment: dict[str, Any] | None) -> list[str]:
    """The correctness assessment's precision and recall, and the cases it got wrong either way."""
    if not assessment:
        return []
    p = assessment["patches"]
    return [
        "",
        "## Correctness assessment (precision before recall)",
        "",
        f"- published as a PR (status fixed): {assessment['published']}; of them NOT a plausible fix: "
        f"{len(assessment['published_wrong'])} {assessment['published_wrong'] or ''}",
        f"- withheld as a suggestion (status suggested): {assessment['withheld']}; of them in fact plausible: "
        f"{len(assessment['withheld_plausible'])} {assessment['withheld_plausible'] or ''}",
        f"- per patch: precision P(plausible | confident) = {assessment['precision']:.3f}, "
        f"recall P(confident | plausible) = {assessment['recall']:.3f}",
        f"- patches: {p['confident_plausible']} confident & plausible, {p['confident_wrong']} confident & wrong, "
        f"{p['unsure_plausible']} unsure & plausible, {p['unsure_wrong']} unsure & wrong",
    ]


#: Curves often coincide (every plausible fix carrying a plausible BRT, say): distinct dashes keep each visible.
_STYLES = [("o", "-", 9), ("s", "--", 7), ("^", ":", 6), ("x", "-.", 5)]


def write_plot(path: Path, summary: dict[str, Any]) -> bool:
    """Plot success@k curves for every k to a PNG; False when matplotlib (extra `eval`) is not installed."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    curves = summary.get("success_curves") or summary["success_at_k"]
    for (metric, row), (marker, dash, size) in zip(curves.items(), _STYLES, strict=False):
        ks = sorted(int(k) for k in row)
        ax.plot(ks, [row[str(k)] for k in ks], marker=marker, linestyle=dash, markersize=size, label=f"{metric}@k")
    ax.set_xlabel("k (trajectories sampled)")
    ax.set_ylabel("fraction of cases")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"success@k over {summary['cases']} cases (M = {summary['trajectories']})")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True
