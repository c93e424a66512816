"""Pure renderers: PR body, reproduction comment, progress comment. No I/O here."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.trajectory import BrtEvidence
from bot.render.inert import md_block, md_cell, md_inline
from sandboxes.text import clean_title

#: Hidden marker so a retried job can find and edit what it already posted.
MARKER = "<!-- reprobot:{kind}:{ref} -->"
_MAX_OUTPUT = 3000


@dataclass(frozen=True)
class ReviewLine:
    """One reviewer's verdict on the selected patch."""

    reviewer: str
    accepted: bool
    reason: str


@dataclass(frozen=True)
class PrContext:
    """Everything a PR body shows; built by the pipeline, rendered here."""

    issue_ref: str
    issue_title: str
    brt: BrtEvidence
    fix_files: Sequence[str]
    test_files: Sequence[str]
    selector: str
    selection_explanation: str
    reviews: Sequence[ReviewLine] = ()
    trajectories: Sequence[dict[str, Any]] = ()
    agent: str = "classic"
    cost: str = "no model used (classic agent): $0.00"
    #: Budgets that stopped a trajectory or a model call, one line each.
    budget_stops: Sequence[str] = ()
    closes_issue: bool = True
    seconds: float = 0.0
    fix_summary: str = ""
    rerun_command: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    #: The correctness assessment of this patch (its JSON form), when one ran.
    assessment: Mapping[str, Any] | None = None
    #: What the request builder clamped to the deployment's caps (render_notes).
    notes: Sequence[str] = ()
    #: Why the repo has no test to keep passing ("" when it has tests): render_no_tests.
    no_tests: str = ""
    #: The selected patch's name (its record id, `1-t1`), the same on the dashboard and in result.json.
    patch_id: str = ""


def render_notes(notes: Sequence[str]) -> str:
    """The request builder's notes (a knob clamped to a deployment cap) as a section to append; "" when none.

    The person who asked for 32 trajectories learns that the job ran 8, and which setting decided it.
    """
    if not notes:
        return ""
    return "\n".join(["", "### Adjusted to this deployment's limits", "", *(f"- {n}" for n in notes)]) + "\n"


def clip_output(text: str, limit: int = _MAX_OUTPUT) -> str:
    """Keep the tail of test output (where pytest puts the verdict), stripped of ANSI codes."""
    text = re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]", "", text).strip()
    if len(text) <= limit:
        return text
    return "[... earlier output omitted ...]\n" + text[-limit:]


def fence(text: str, lang: str = "") -> str:
    """`text` as a fenced code block; a body containing ``` cannot break out of it (the fence is longer)."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{lang}\n{text}\n{marks}"


def job_page_url(public_url: str | None, job_id: int) -> str | None:
    """The job's page on the dashboard under REPROBOT_PUBLIC_URL; None when it is unset or not http(s)."""
    base = (public_url or "").strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        return None
    return f"{base}/dashboard/jobs/{int(job_id)}"


def render_job_link(url: str | None) -> str:
    """The line that links a PR body or a comment to the job's page ("" without a public URL)."""
    if not url:
        return ""
    return f"\n[How reprobot got here: the job's page on its dashboard]({url}) (maintainers log in to see it)\n"


def render_pr_body(ctx: PrContext) -> str:
    """The pull request description: BRT evidence, why this patch, reviews, cost, and the closing line."""
    brt = ctx.brt
    lines = [
        MARKER.format(kind="pr", ref=ctx.issue_ref),
        # The reporter's title, quoted: no mention, link or closing keyword (`Fixes #9`) of theirs comes alive.
        f"## Fix for {ctx.issue_ref}: {md_inline(clean_title(ctx.issue_title)) or 'reported bug'}",
        "",
        "This pull request carries a **fix** and a **bug reproduction test (BRT)** that proves it.",
        "",
        "| | files |",
        "|---|---|",
        f"| fix | {', '.join(f'`{f}`' for f in ctx.fix_files) or '—'} |",
        f"| test | {', '.join(f'`{f}`' for f in ctx.test_files) or '—'} |",
        "",
    ]
    if ctx.fix_summary:
        # A model or the repo's own code wrote it: inert like every other text from another party (DESIGN §8).
        lines += [f"**Change:** {md_inline(ctx.fix_summary)}", ""]
    before = "fails ✅" if brt.fails_before else "does NOT fail ⚠️"
    after = {True: "passes ✅", False: "fails ⚠️", None: "not run"}[brt.passes_after]
    lines += [
        "### Evidence",
        f"The BRT `{brt.path}` reproduces the reported symptom ({brt.symptom.replace('_', ' ')}).",
        "",
        f"- on the buggy code it **{before}**",
        f"- with the fix it **{after}**",
        "",
        "<details><summary>BRT output before the fix</summary>",
        "",
        fence(clip_output(brt.before_output)),
        "",
        "</details>",
        "",
        "<details><summary>BRT output after the fix</summary>",
        "",
        fence(clip_output(brt.after_output) or "(not run)"),
        "",
        "</details>",
        "",
        "### Why this patch",
        f"Selector: `{ctx.selector}`." + (f" Selected patch: `{md_inline(ctx.patch_id)}`." if ctx.patch_id else ""),
        "",
        md_block(ctx.selection_explanation.strip()) or "(no explanation recorded)",
        "",
    ]
    lines += render_no_tests(ctx.no_tests, ctx.assessment)
    lines += render_assessment(ctx.assessment)
    if ctx.reviews:
        lines += ["### Reviews", "", "| reviewer | verdict | reason |", "|---|---|---|"]
        for rv in ctx.reviews:
            verdict = "accepted" if rv.accepted else "rejected"
            lines.append(f"| {rv.reviewer} | {verdict} | {_cell(rv.reason)} |")
        lines.append("")
    lines += _cost_lines(ctx)
    if ctx.rerun_command:
        lines += ["### Run the BRT yourself", fence(ctx.rerun_command, "sh"), ""]
    for title, text in ctx.extra.items():
        lines += [f"### {title}", text, ""]
    if ctx.notes:
        lines += [render_notes(ctx.notes).strip(), ""]
    if ctx.closes_issue:
        lines += [f"Fixes {ctx.issue_ref}", ""]
    lines.append("<sub>Generated by reprobot. Review before merging.</sub>")
    return "\n".join(lines) + "\n"


def _cost_lines(ctx: PrContext) -> list[str]:
    """The PR body's cost section: trajectories, steps, wall time, and each model trajectory's usage."""
    if not ctx.trajectories:
        return []
    lines: list[str] = []
    done = sum(1 for t in ctx.trajectories if t.get("status") == "fixed")
    steps = sum(int(t.get("steps", 0)) for t in ctx.trajectories)
    lines += [
        "### Cost",
        f"- agent: `{ctx.agent}`; trajectories: {len(ctx.trajectories)} ({done} found a validated fix)",
        f"- steps: {steps}; wall time: {ctx.seconds:.1f} s",
        f"- {ctx.cost}",
    ]
    for t in ctx.trajectories:
        usage = t.get("usage")
        if usage:
            lines.append(
                f"- `{t.get('id')}` ({t.get('strategy', '')}): {t.get('status')}, {usage.get('steps', 0)} steps, "
                f"{usage.get('prompt_tokens', 0):,}+{usage.get('completion_tokens', 0):,} tokens, "
                f"${usage.get('cost_usd', 0.0):.4f}"
            )
    lines += [f"- stopped by budget: {_cell(s)}" for s in ctx.budget_stops]
    lines.append("")
    return lines


def render_no_tests(reason: str, assessment: Mapping[str, Any] | None = None, *, delivers: str = "pr") -> list[str]:
    """The "no tests" section: the repo has no test suite, so say what the fix was validated on instead.

    `delivers` is what carries the section: "pr", "suggestion" or "reproduction" (no fix to validate).
    """
    if not reason:
        return []
    lines = ["### This repository has no tests", f"reprobot found no test in this repository ({_cell(reason)}).", ""]
    if delivers == "reproduction":
        return [*lines, "The reproduction test above can be the project's first test.", ""]
    probes = int((assessment or {}).get("probes_compared", 0))
    examples = int((assessment or {}).get("examples_run", 0))
    lines += [
        "No existing test could show a regression, so the fix was validated only on:",
        "",
        "- the bug reproduction test, built from the report's example: it fails before the fix and passes after;",
        f"- {probes} input(s) near the report's example, compared with the original code (correctness assessment);",
        f"- {examples} working example(s) the report shows or the code documents, run before and after the fix.",
        "",
    ]
    if delivers == "pr":
        lines += ["The BRT this pull request adds is the project's first test.", ""]
    return lines


def render_assessment(assessment: Mapping[str, Any] | None) -> list[str]:
    """The "Correctness assessment" section: verdict, the checks' numbers, and every reason."""
    if not assessment:
        return []
    verdict = str(assessment.get("verdict", "not_assessed"))
    lines = [
        "### Correctness assessment",
        f"Verdict: **{verdict.replace('_', ' ')}**.",
        "",
        f"- passing tests compared before/after: {assessment.get('tests_compared', 0)} "
        f"({assessment.get('calls_compared', 0)} call(s) of the changed code traced)",
        f"- inputs near the report's example compared with the original: {assessment.get('probes_compared', 0)}",
        f"- semantic size of the change (AST tokens): {assessment.get('semantic_size', 0)}",
    ]
    lines += [f"- {_cell(str(r))}" for r in assessment.get("reasons", ())]
    return [*lines, ""]


def _cell(text: str) -> str:
    """A reviewer's or assessment's reason (model text that may echo the report) for a cell or a list item."""
    return md_cell(text[:300])


@dataclass(frozen=True)
class ReproductionContext:
    """Everything a reproduction comment shows."""

    issue_ref: str
    brt: BrtEvidence
    rerun_command: str
    steps: Sequence[str] = ()
    #: Why the repo has no tests ("" when it has some): render_no_tests.
    no_tests: str = ""


def _brt_failing(brt: BrtEvidence) -> list[str]:
    """The BRT's path and source, then its output on the unfixed code: shared by reproduction and suggestion."""
    return [
        f"**`{brt.path}`**",
        "",
        fence(brt.source.rstrip(), "python"),
        "",
        "**Output on the current code:**",
        "",
        fence(clip_output(brt.before_output)),
        "",
    ]


def render_reproduction_comment(ctx: ReproductionContext) -> str:
    """The reproduction comment: the BRT, its failing output, and how to run it locally."""
    brt = ctx.brt
    lines = [
        MARKER.format(kind="reproduction", ref=ctx.issue_ref),
        "## Reproduced ✅" if brt.fails_before else "## Not reproduced",
        "",
        f"reprobot wrote a test that reproduces this report ({brt.symptom.replace('_', ' ')}).",
        "",
        *_brt_failing(brt),
        "**Run it yourself:**",
        "",
        fence(ctx.rerun_command, "sh"),
        "",
        *render_no_tests(ctx.no_tests, delivers="reproduction"),
    ]
    if ctx.steps:
        lines += ["<details><summary>What reprobot did</summary>", ""]
        lines += [f"{i}. {s}" for i, s in enumerate(ctx.steps, 1)]
        lines += ["", "</details>", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class SuggestionContext:
    """A reproduction plus a candidate fix the bot would not open a PR for, and why."""

    issue_ref: str
    brt: BrtEvidence
    patch: str
    reasons: Sequence[str]
    rerun_command: str
    assessment: Mapping[str, Any] | None = None
    #: Why the repo has no tests ("" when it has some): render_no_tests.
    no_tests: str = ""


def render_suggestion(ctx: SuggestionContext) -> str:
    """The comment for status `suggested`: the BRT and its failure, the best candidate fix, and the doubts."""
    brt = ctx.brt
    lines = [
        MARKER.format(kind="reproduction", ref=ctx.issue_ref),
        "## Reproduced; a candidate fix, not verified enough for a pull request",
        "",
        f"reprobot wrote a test that reproduces this report ({brt.symptom.replace('_', ' ')}) and found a patch "
        "that makes it pass without breaking the existing tests, but its correctness assessment is unsure, "
        "so it suggests the patch here instead of opening a pull request.",
        "",
        "**Why no pull request:**",
        "",
    ]
    lines += [f"- {md_inline(r)}" for r in ctx.reasons] or ["- (no reason recorded)"]
    lines += [
        "",
        *_brt_failing(brt),
        "**Suggested patch (fix and test):**",
        "",
        fence(ctx.patch.rstrip(), "diff"),
        "",
    ]
    lines += render_no_tests(ctx.no_tests, ctx.assessment, delivers="suggestion")
    lines += render_assessment(ctx.assessment)
    lines += ["**Run the test yourself:**", "", fence(ctx.rerun_command, "sh"), ""]
    return "\n".join(lines)


def render_abstention(issue_ref: str, reasons: Sequence[str], score: float, threshold: float) -> str:
    """The answer to a person's command when the bot decides not to act."""
    lines = [
        MARKER.format(kind="abstain", ref=issue_ref),
        "reprobot is not acting on this report: it is not confident it can reproduce it.",
        "",
        f"Score {score:.2f} is below the threshold {threshold:.2f}. Reasons:",
        "",
    ]
    lines += [f"- {md_inline(r)}" for r in reasons] or ["- (none recorded)"]
    lines += [
        "",
        "A minimal code snippet, the exact output or traceback, and the expected result help it act.",
    ]
    return "\n".join(lines) + "\n"


def render_progress(issue_ref: str, stage: str, done: Sequence[str]) -> str:
    """The single progress comment, edited in place as the job moves through its stages."""
    lines = [MARKER.format(kind="progress", ref=issue_ref), f"⏳ reprobot is working: **{stage}**", ""]
    lines += [f"- ✅ {d}" for d in done]
    return "\n".join(lines) + "\n"


def render_policy_error(issue_ref: str, source: str, key: str, problem: str) -> str:
    """The one comment explaining why the repo's policy file stops reprobot, naming the bad key."""
    return (
        "\n".join(
            [
                MARKER.format(kind="policy", ref=issue_ref),
                "⚠️ reprobot cannot act: its policy file is invalid.",
                "",
                f"- file: `{source}`",
                f"- key: `{key}`",
                f"- problem: {problem}",
                "",
                "Fix the file on the default branch and ask again. docs/policy.md lists every key and its default.",
            ]
        )
        + "\n"
    )


def render_final_status(
    issue_ref: str, summary: str, url: str = "", reasons: Sequence[str] = (), evidence: BrtEvidence | None = None
) -> str:
    """The progress comment's last state: what came of the job, with a link when there is one.

    With `evidence` (a fix was proposed), the issue itself shows why: the BRT fails before the fix and passes after
    it, with its output on the current code (a tracker's readers may never open the pull request).
    """
    lines = [MARKER.format(kind="progress", ref=issue_ref), f"reprobot finished: **{summary}**", ""]
    if url:
        lines += [url, ""]
    # Reasons may quote the report (a step, a file name, an error message): quoted inert, like every quote.
    lines += [f"- {md_inline(r)}" for r in reasons]
    if evidence is not None:
        after = "passes after it" if evidence.passes_after else "was not confirmed to pass after it"
        lines += [
            *([""] if reasons else []),
            f"Evidence: the test `{evidence.path}` fails before the fix and {after}.",
            "",
            "**Output on the current code:**",
            "",
            fence(clip_output(evidence.before_output, 1500)),
        ]
    return "\n".join(lines) + "\n"
