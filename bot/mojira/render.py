"""Pure renderers of a Mojira report and its triage, for the sinks that publish text (GitHub, Jira).

Everything a Mojira author wrote (summary, custom fields, description, the crash text the triage read) is shown
as inert text through bot/render/inert.py: no mention, markup, link to another host or invisible character of
theirs comes alive on GitHub, nor, through markdown_to_jira, on Jira. Only links to Mojira stay links.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from agents.reading import crash_signature
from bot.mojira.fields import MojiraReport
from bot.mojira.triage import GameTriage
from bot.render.inert import md_block, md_cell, md_code, md_inline, one_line

#: Marks a published report, so a reader (or a later tool) can tell which Mojira key it mirrors.
MARKER = "<!-- reprobot:mojira {key} -->"
#: The same mark on Jira, where HTML comments are not kept: an anchor, as on the bot's Jira comments.
JIRA_ANCHOR = "reprobot-mojira-{key}"
#: How much of a description is quoted.
DESCRIPTION_LIMIT = 6000


def _hosts(report: MojiraReport) -> tuple[str, ...]:
    """Links to these hosts stay links: Mojira's own."""
    host = urlsplit(report.url).hostname
    return (host,) if host else ()


def report_title(report: MojiraReport) -> str:
    """`[MC-123] summary`, on one line, cleaned, cut to a length every forge accepts (titles are not markup)."""
    return one_line(f"[{report.key}] {report.summary}", 240)


def report_heading(report: MojiraReport) -> str:
    """The title as one line of markdown (the heading of a comment on a tracking issue)."""
    return f"\\[{report.key}\\] {md_inline(report.summary, _hosts(report))}"


def _fields(report: MojiraReport) -> list[tuple[str, str | None]]:
    return [
        ("Status", report.status),
        ("Resolution", report.resolution),
        ("Confirmation", report.confirmation_status),
        ("Mojang priority", report.mojang_priority),
        ("Category", ", ".join(report.categories) or None),
        ("Area", report.area),
        ("Platform", report.platform),
        ("OS version", report.os_version),
        ("Realms platform", report.realms_platform),
        ("Affects versions", ", ".join(report.versions) or None),
        ("Fix versions", ", ".join(report.fix_versions) or None),
        ("Votes", None if report.votes is None else str(report.votes)),
    ]


def _triage(triage: GameTriage, hosts: Sequence[str]) -> list[str]:
    """The triage's decision and its reasons, then the crash signatures (read from the report's crash text)."""
    reasons = triage.decision.reasons
    lines = ["", f"**Triage:** {md_inline(reasons[0], hosts) if reasons else '(no reason recorded)'}", ""]
    lines += [f"- {md_inline(reason, hosts)}" for reason in reasons[1:]]
    if triage.crashes:
        lines += ["", "**Crash signatures:**", ""]
        for crash in triage.crashes:
            sig = crash_signature(crash)
            frames = " ← ".join(md_code(f) for f in sig.frames) or "(no frames)"
            lines.append(f"- {md_code(sig.key)} {md_inline(sig.exception_type)}: {frames}")
    return lines


def report_body(report: MojiraReport, triage: GameTriage, duplicates: Sequence[str] = ()) -> str:
    """Markdown: where the report is, its typed fields, the triage's route and reasons, crash signatures."""
    hosts = _hosts(report)
    lines = [MARKER.format(key=report.key), f"Mirrored from [{report.key}]({report.url}).", ""]
    lines += ["| field | value |", "|---|---|"]
    lines += [f"| {name} | {md_cell(value, hosts)} |" for name, value in _fields(report) if value and value.strip()]
    lines += _triage(triage, hosts)
    if duplicates:
        lines += ["", "**Likely duplicates (same crash signature):** " + md_inline(", ".join(duplicates))]
    description = md_block(report.description.strip()[:DESCRIPTION_LIMIT], hosts).strip("\n")
    if description:
        quoted = "\n".join("> " + line if line else ">" for line in description.split("\n"))
        lines += ["", "**Description:**", "", quoted]
    return "\n".join(lines) + "\n"
