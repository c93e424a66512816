"""Pure renderers of a Mojira report and its triage, for the sinks that publish text (GitHub, Jira)."""

from __future__ import annotations

from collections.abc import Sequence

from agents.reading import crash_signature
from bot.mojira.fields import MojiraReport
from bot.mojira.triage import GameTriage

#: Marks a published report, so a reader (or a later tool) can tell which Mojira key it mirrors.
MARKER = "<!-- reprobot:mojira {key} -->"


def report_title(report: MojiraReport) -> str:
    """`[MC-123] summary`, cut to a length every forge accepts."""
    title = f"[{report.key}] {report.summary}".strip()
    return title if len(title) <= 240 else title[:239] + "…"


def report_body(report: MojiraReport, triage: GameTriage, duplicates: Sequence[str] = ()) -> str:
    """Markdown: where the report is, its typed fields, the triage's route and reasons, crash signatures."""
    fields = [
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
    lines = [MARKER.format(key=report.key), f"Mirrored from [{report.key}]({report.url}).", ""]
    lines += ["| field | value |", "|---|---|"]
    lines += [f"| {name} | {value.replace('|', '/')} |" for name, value in fields if value]
    decision = triage.decision
    lines += ["", f"**Triage:** {decision.reasons[0]}", ""]
    lines += [f"- {reason}" for reason in decision.reasons[1:]]
    if triage.crashes:
        lines += ["", "**Crash signatures:**", ""]
        for crash in triage.crashes:
            sig = crash_signature(crash)
            frames = " ← ".join(f"`{f}`" for f in sig.frames) or "(no frames)"
            lines.append(f"- `{sig.key}` {sig.exception_type}: {frames}")
    if duplicates:
        lines += ["", "**Likely duplicates (same crash signature):** " + ", ".join(duplicates)]
    description = report.description.strip()
    if description:
        quoted = "\n".join("> " + line for line in description[:6000].split("\n"))
        lines += ["", "**Description:**", "", quoted]
    return "\n".join(lines) + "\n"
