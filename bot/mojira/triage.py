"""Triage of game reports: is there enough to reproduce it in the game (version, steps, crash), or abstain?"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agents.reading import Crash, crash_signature, find_crashes, parse_crash
from agents.triage import DEFAULT_THRESHOLD, AbstentionDecision
from bot.mojira.fields import MojiraReport

__all__ = ["GAME_JOB_KIND", "GameTriage", "is_crash_attachment", "triage_report"]

#: The job a reproducible game report is routed to; its runner comes with a later issue, so for now such
#: reports are recorded with this route (planned), not queued for a worker that cannot run them.
GAME_JOB_KIND = "reproduce.game"

#: What each feature adds to the score: a version and steps, or a version and a crash, are enough.
WEIGHTS: Mapping[str, float] = {"version": 0.3, "steps": 0.4, "crash": 0.3}
#: Caps: reports nobody should reproduce whatever they contain.
CAP_RESOLVED = 0.0
CAP_MODDED = 0.2

#: Game versions as players write them: 1.20.4, 1.21, 24w14a, 1.20.5-pre1, 1.20-rc1, Bedrock 1.21.2.
_VERSION = re.compile(r"(?<![\w.])(?:1\.\d{1,2}(?:\.\d{1,2})?(?:[- ]?(?:pre|rc)[- ]?\d+)?|\d{2}w\d{2}[a-z])(?![\w.])")
_STEPS_HEADING = re.compile(r"(?im)^\W*(?:steps?\s+to\s+reproduce|how\s+to\s+reproduce|reproduction\s+steps)\b")
_NUMBERED = re.compile(r"(?m)^\s*(?:#|\d+[.)]|\*|-)\s+\S")
#: File names the game, the launcher and the JVM give crash reports and fatal-error logs.
_CRASH_FILE = re.compile(r"(?i)^(?:crash-.*\.txt|hs_err_pid\d+\.(?:log|txt)|.*crash.*\.(?:txt|log))$")


def is_crash_attachment(filename: str) -> bool:
    """True for a crash report's or hs_err log's usual file name."""
    return bool(_CRASH_FILE.match(filename))


@dataclass(frozen=True)
class GameTriage:
    """The decision (AbstentionDecision of agents.triage.abstention), the route it gives, and the crashes found."""

    decision: AbstentionDecision
    route: str | None
    crashes: tuple[Crash, ...]

    @property
    def signatures(self) -> list[str]:
        """Keys of the crashes' signatures, in the order found (for grouping likely duplicates)."""
        return list(dict.fromkeys(crash_signature(c).key for c in self.crashes))

    def to_json(self) -> dict[str, object]:
        """The triage as JSON: route, act, score, reasons, features and crash signatures."""
        d = self.decision
        return {
            "route": self.route,
            "act": d.act,
            "score": d.score,
            "threshold": d.threshold,
            "reasons": list(d.reasons),
            "features": dict(d.features),
            "crashes": [crash_signature(c).to_json() | {"kind": c.to_json()["kind"]} for c in self.crashes],
        }


def _has_steps(text: str) -> bool:
    if _STEPS_HEADING.search(text):
        return True
    return len(_NUMBERED.findall(text)) >= 2


def triage_report(
    report: MojiraReport,
    attachment_texts: Mapping[str, str] | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> GameTriage:
    """Score a report for a game reproduction; `attachment_texts` are fetched crash-like attachments (name -> text)."""
    texts: Sequence[str] = [report.description, *report.comments]
    crashes: list[Crash] = [c for text in texts for c in find_crashes(text)]
    for text in (attachment_texts or {}).values():
        crash = parse_crash(text)
        crashes.extend([crash] if crash is not None else find_crashes(text))
    crash_files = [a.filename for a in report.attachments if is_crash_attachment(a.filename)]
    body = "\n".join(texts)
    versions_in_text = sorted(set(_VERSION.findall(body + "\n" + report.summary)))
    version_named = (
        bool(report.versions) or bool(versions_in_text) or any(getattr(c, "minecraft_version", None) for c in crashes)
    )
    features: dict[str, bool | float] = {
        "version_named": version_named,
        "steps_to_reproduce": _has_steps(body),
        "crash_attached": bool(crashes) or bool(crash_files),
        "crash_parsed": bool(crashes),
        "modded": any(getattr(c, "modded", False) or getattr(c, "is_modded", False) for c in crashes),
        "resolved": report.resolution is not None,
    }
    reasons: list[str] = []
    score = 0.0
    named = ", ".join(report.versions or tuple(versions_in_text)) or "in the crash report"
    for key, feature, yes, no in (
        ("version", "version_named", f"names the affected version ({named})", "names no game version"),
        ("steps", "steps_to_reproduce", "has steps to reproduce", "no steps to reproduce"),
        ("crash", "crash_attached", _crash_reason(crashes, crash_files), "no crash report attached"),
    ):
        if features[feature]:
            score += WEIGHTS[key]
            reasons.append(yes)
        else:
            reasons.append(no)
    if features["resolved"]:
        score = min(score, CAP_RESOLVED)
        reasons.append(f"already resolved ({report.resolution})")
    if features["modded"]:
        score = min(score, CAP_MODDED)
        reasons.append("the crash comes from a modded game")
    score = round(min(max(score, 0.0), 1.0), 3)
    act = score >= threshold
    verdict = (
        f"{'routing to ' + GAME_JOB_KIND if act else 'abstaining'}: score {score:.2f} "
        f"{'≥' if act else '<'} threshold {threshold:.2f}"
    )
    decision = AbstentionDecision(act, score, threshold, [verdict, *reasons], features)
    return GameTriage(decision, GAME_JOB_KIND if act else None, tuple(crashes))


def _crash_reason(crashes: Sequence[Crash], files: Sequence[str]) -> str:
    if crashes:
        kinds = sorted({crash_signature(c).exception_type for c in crashes})
        return f"has a crash report ({', '.join(kinds)})"
    return f"attaches a crash file ({', '.join(files)}) that could not be read"
