"""Server-rendered SVG charts of a job: the stage and trajectory timeline, the fault-localization ranking, and the
candidates each trajectory tried over time. Pure: data in, SVG text out; no script, no inline style (the
dashboard's CSP allows neither), every label escaped (file names and descriptions come from the repo).

Each chart is an `<svg role="img">` with a `<title>` and a `<desc>` (its text alternative), and every data point
carries its own `<title>` and a visible `<text>` label. The dashboard's job page and `reprobot eval`'s report
use the same functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["CandidatePoint", "candidates_svg", "ranking_svg", "timeline_svg"]

_WIDTH = 760
_LEFT = 200
_ROW = 22
_PALETTE = ("#0969da", "#1a7f37", "#9a6700", "#8250df", "#cf222e", "#1b7c83", "#bc4c00", "#57606a")


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _open(kind: str, height: int, title: str, desc: str) -> list[str]:
    """The chart's opening tags with its text alternative (aria-labelledby the title and the description)."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" id="chart-{kind}" role="img" '
        f'width="{_WIDTH}" height="{height}" viewBox="0 0 {_WIDTH} {height}" '
        f'aria-labelledby="chart-{kind}-title chart-{kind}-desc">',
        f'<title id="chart-{kind}-title">{_e(title)}</title>',
        f'<desc id="chart-{kind}-desc">{_e(desc)}</desc>',
    ]


def _scale(span: float) -> float:
    """Pixels per unit of a span drawn across the plot's width."""
    return (_WIDTH - _LEFT - 60) / span if span > 0 else 0.0


def _clip(text: str, size: int = 28) -> str:
    return text if len(text) <= size else "…" + text[-(size - 1) :]


def timeline_svg(stages: Sequence[Mapping[str, object]], trajectories: Sequence[Mapping[str, object]]) -> str:
    """Stages, then trajectories, as bars on one time axis (seconds since the job started); overlapping bars
    are what ran in parallel. Each entry: name/id, start, end (seconds); a trajectory also has its status."""
    rows = [(str(s.get("name")), _num(s.get("start")), _num(s.get("end")), "stage") for s in stages]
    rows += [
        (f"trajectory {t.get('id')}", _num(t.get("start")), _num(t.get("end")), str(t.get("status") or ""))
        for t in trajectories
    ]
    if not rows:
        return ""
    span = max(end for _, _, end, _ in rows) or 1.0
    k = _scale(span)
    height = 30 + _ROW * len(rows) + 20
    desc = "; ".join(f"{name}: {a:.1f}s to {b:.1f}s" + (f" ({st})" if st != "stage" else "") for name, a, b, st in rows)
    out = _open("timeline", height, f"Timeline of the job's stages and trajectories over {span:.1f} s", desc)
    for i, (name, start, end, status) in enumerate(rows):
        y = 20 + i * _ROW
        x, w = _LEFT + start * k, max((end - start) * k, 2.0)
        color = "#57606a" if status == "stage" else ("#1a7f37" if status == "fixed" else "#0969da")
        label = f"{name}: {start:.1f}–{end:.1f} s ({end - start:.1f} s)" + (f", {status}" if status != "stage" else "")
        out.append(f'<g class="point" data-label="{_e(label)}"><title>{_e(label)}</title>')
        out.append(f'<text x="4" y="{y + 14}" font-size="12">{_e(_clip(name))}</text>')
        out.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{_ROW - 6}" fill="{color}"/>')
        out.append(f'<text x="{x + w + 4:.1f}" y="{y + 14}" font-size="11">{end - start:.1f} s</text></g>')
    out.append(f'<text x="{_LEFT}" y="{height - 4}" font-size="11">0 s</text>')
    out.append(f'<text x="{_WIDTH - 60}" y="{height - 4}" font-size="11" text-anchor="end">{span:.1f} s</text>')
    out.append("</svg>")
    return "\n".join(out)


def ranking_svg(locations: Sequence[Mapping[str, object]], limit: int = 10) -> str:
    """The fault localization's most suspicious statements as horizontal bars, best first (file:line, score)."""
    rows = [(f"{loc.get('file')}:{loc.get('line')}", _num(loc.get("score"))) for loc in locations[:limit]]
    if not rows:
        return ""
    top = max(score for _, score in rows) or 1.0
    k = _scale(top)
    height = 20 + _ROW * len(rows) + 10
    desc = "; ".join(f"{i + 1}. {name} score {score:.3f}" for i, (name, score) in enumerate(rows))
    out = _open("ranking", height, f"Fault localization: the {len(rows)} most suspicious statements", desc)
    for i, (name, score) in enumerate(rows):
        y = 10 + i * _ROW
        w = max(score * k, 2.0)
        label = f"{i + 1}. {name}: score {score:.3f}"
        out.append(f'<g class="point" data-label="{_e(label)}"><title>{_e(label)}</title>')
        out.append(f'<text x="4" y="{y + 14}" font-size="12">{_e(_clip(name))}</text>')
        out.append(f'<rect x="{_LEFT}" y="{y + 3}" width="{w:.1f}" height="{_ROW - 6}" fill="#bc4c00"/>')
        out.append(f'<text x="{_LEFT + w + 4:.1f}" y="{y + 14}" font-size="11">{score:.3f}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


@dataclass(frozen=True)
class CandidatePoint:
    """One candidate a trajectory tried: when (seconds since the job started), its place in the trajectory's
    count, and whether it validated (its BRT passed and the regression tests still pass)."""

    seconds: float
    count: int
    validated: bool
    label: str = ""


def candidates_svg(series: Mapping[str, Sequence[CandidatePoint]]) -> str:
    """Candidates tried per trajectory over time: one line each, validated candidates as labelled dots."""
    series = {name: pts for name, pts in series.items() if pts}
    if not series:
        return ""
    # The axis starts at the first candidate: the stages before the search would squeeze the lines to the right.
    first = min(p.seconds for pts in series.values() for p in pts)
    last = max(p.seconds for pts in series.values() for p in pts)
    span = max(last - first, 1e-3)
    most = max(p.count for pts in series.values() for p in pts) or 1
    plot_h = 200
    height = plot_h + 46 + 16 * len(series)
    kx, ky = _scale(span), plot_h / most
    validated = sum(1 for pts in series.values() for p in pts if p.validated)
    desc = "; ".join(
        f"trajectory {name}: {len(pts)} candidates, {sum(p.validated for p in pts)} validated"
        for name, pts in series.items()
    )
    out = _open(
        "candidates",
        height,
        f"Candidates tried per trajectory from {first:.1f} s to {last:.1f} s ({validated} validated)",
        desc,
    )
    out.append(f'<text x="4" y="14" font-size="11">{most} tried</text>')
    out.append(f'<line x1="{_LEFT}" y1="{plot_h + 10}" x2="{_WIDTH - 60}" y2="{plot_h + 10}" stroke="#d0d7de"/>')
    out.append(f'<text x="{_LEFT}" y="{plot_h + 24}" font-size="11">{first:.1f} s</text>')
    out.append(f'<text x="{_WIDTH - 60}" y="{plot_h + 24}" font-size="11" text-anchor="end">{last:.1f} s</text>')
    for i, (name, pts) in enumerate(series.items()):
        color = _PALETTE[i % len(_PALETTE)]

        def xy(p: CandidatePoint) -> tuple[float, float]:
            return _LEFT + (p.seconds - first) * kx, plot_h + 10 - p.count * ky

        line = " ".join(f"{x:.1f},{y:.1f}" for x, y in map(xy, pts))
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        tip = pts[-1]
        lx, ly = xy(tip)
        end_label = f"trajectory {name}: {tip.count} candidates by {tip.seconds:.1f} s"
        out.append(f'<g class="point" data-label="{_e(end_label)}"><title>{_e(end_label)}</title>')
        out.append(f'<text x="{lx + 3:.1f}" y="{ly:.1f}" font-size="10" fill="{color}">{_e(name)}</text></g>')
        for p in pts:
            if p.validated:
                x, y = xy(p)
                label = f"trajectory {name}: candidate {p.count} validated at {p.seconds:.1f} s" + (
                    f" ({p.label})" if p.label else ""
                )
                out.append(f'<g class="point validated" data-label="{_e(label)}"><title>{_e(label)}</title>')
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}" stroke="#000"/>')
                out.append(f'<text x="{x + 5:.1f}" y="{y - 5:.1f}" font-size="10">✓ {p.count}</text></g>')
        legend_y = plot_h + 44 + 16 * i
        legend = f"{name}: {len(pts)} tried, {sum(p.validated for p in pts)} validated"
        out.append(f'<rect x="{_LEFT}" y="{legend_y - 9}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{_LEFT + 14}" y="{legend_y}" font-size="11">{_e(legend)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _num(value: object) -> float:
    """A number from a record's JSON (0.0 for anything else)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
