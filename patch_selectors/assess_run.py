"""Patch-correctness assessment, the sandboxed part: run the trace/probe harness before and after each fix.

For every group of candidates sharing a test part, the harness runs once on the base commit with that test
part (the "original"), and once per distinct fix with the whole patch, each in a fresh sandbox. All runs of a
group trace the same functions (the union of what its fixes touch), so their near-input probes line up and
candidates can be compared with each other. The host reads only the harness's JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents.reproduce import CHANGED_ONLY
from patch_selectors.assessment import (
    Assessment,
    Shape,
    Target,
    TraceRun,
    changed_lines,
    departures,
    disagreements,
    documented_examples,
    fix_shape,
    judge,
    literal_only,
    not_assessed,
    semantic_size,
    table_entry_lines,
    touched_targets,
)
from patch_selectors.records import PatchRecord
from patch_selectors.reviewers import ReviewEnv
from sandboxes.base import WORKSPACE_MOUNT
from sandboxes.workspace import SCRATCH_DIR, GitError, apply_patch

log = logging.getLogger(__name__)

HARNESS = Path(__file__).with_name("probe_harness.py")
_HARNESS_REL = f"{SCRATCH_DIR}/probe_harness.py"
_CONFIG_REL = f"{SCRATCH_DIR}/probe_config.json"
_OUT_REL = f"{SCRATCH_DIR}/probe_out.json"


def _brt_path(record: PatchRecord) -> str:
    for f in record.test_part.files:
        if f.new_path and f.new_path.endswith(".py") and not f.is_deleted:
            return f.new_path
    return ""


def _read_sources(root: Path, paths: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for rel in paths:
        path = root / rel
        if path.is_file():
            out[rel] = path.read_text(errors="replace")
    return out


async def _harness_run(
    env: ReviewEnv,
    workspace: Path,
    targets: Sequence[Target],
    brt: str,
    lines: dict[str, list[int]],
    examples: Sequence[dict[str, str]] = (),
) -> TraceRun:
    """Run the harness over the whole suite plus the BRT in a sandbox on `workspace`; parse its JSON."""
    runner = env.runner
    (workspace / SCRATCH_DIR).mkdir(exist_ok=True)
    (workspace / _HARNESS_REL).write_text(HARNESS.read_text())
    config = {
        "targets": [t.to_json() for t in targets],
        "seed_prefix": brt,
        "root": f"{WORKSPACE_MOUNT}/",
        "lines": lines,
        "examples": list(examples),
    }
    (workspace / _CONFIG_REL).write_text(json.dumps(config))
    argv = [
        runner.env.python,
        f"{WORKSPACE_MOUNT}/{_HARNESS_REL}",
        f"{WORKSPACE_MOUNT}/{_CONFIG_REL}",
        f"{WORKSPACE_MOUNT}/{_OUT_REL}",
        "--",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--timeout={runner.per_test_timeout}",
        # The harness adds the BRT itself when the suite's paths do not cover it.
        *runner.suite_args(),
    ]
    # A fixed hash seed keeps set and dict reprs comparable between the two runs.
    env_vars = {**runner.env_vars(), "PYTHONHASHSEED": "0"}
    async with env.open_sandbox(workspace) as sb:
        result = await sb.run(argv, timeout=runner.timeout * 2, env=env_vars)
    out = workspace / _OUT_REL
    if result.timed_out or not out.is_file():
        why = "timed out" if result.timed_out else f"exit {result.exit_code}: {result.output[-300:]}"
        return TraceRun(error=f"the trace run {why}")
    try:
        data = json.loads(out.read_text(errors="replace"))
    except ValueError as exc:
        return TraceRun(error=f"unreadable trace: {exc}")
    return TraceRun.from_json(data if isinstance(data, dict) else {})


async def assess_records(
    records: Sequence[PatchRecord], env: ReviewEnv, peers: Sequence[PatchRecord] = ()
) -> dict[str, Assessment]:
    """An assessment per accepted record id (identical fixes share one); rejected records are skipped.

    `peers` are further validated fixes (alternatives a search found after its submitted fix): they are run
    and compared like candidates, so a clean peer that disagrees casts doubt, but they get no verdict here.
    """
    if env.runner.env.spec.report_format != "junit-xml":
        reason = "not assessed: the suite is not run by pytest, so calls cannot be traced"
        return {r.id: not_assessed(reason) for r in records if r.accepted}
    by_fix: dict[str, PatchRecord] = {}
    for record in [*records, *peers]:
        if record.accepted and not record.fix_part.is_empty:
            by_fix.setdefault(f"{_brt_path(record)}\0{record.fix_hash}", record)
    groups: dict[str, list[PatchRecord]] = {}
    for record in by_fix.values():
        groups.setdefault(_brt_path(record), []).append(record)
    verdicts: dict[str, Assessment] = {}
    for brt, members in groups.items():
        verdicts.update(await _assess_group(env, brt, members))
    out: dict[str, Assessment] = {}
    for record in records:
        if not record.accepted:
            continue
        if record.fix_part.is_empty:
            out[record.id] = not_assessed("the patch has no fix part")
            continue
        rep = by_fix[f"{_brt_path(record)}\0{record.fix_hash}"]
        out[record.id] = verdicts[rep.id]
    return out


@dataclass
class _Prepared:
    """Each candidate of a group applied in a workspace of its own, with what its patch changes."""

    workspaces: dict[str, Path] = field(default_factory=dict)
    targets: dict[str, list[Target]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    literal: set[str] = field(default_factory=set)  # candidates that only change literal values
    shapes: dict[str, Shape] = field(default_factory=dict)
    failed: dict[str, Assessment] = field(default_factory=dict)
    new_lines: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    old_lines: dict[str, set[int]] = field(default_factory=dict)


async def _prepare(env: ReviewEnv, members: list[PatchRecord]) -> _Prepared:
    """Apply each candidate to a fresh copy; a patch that does not apply is not assessed."""
    prep = _Prepared()
    for record in members:
        workspace = await env.fresh_copy("assess")
        try:
            await apply_patch(workspace, record.patch.render())
        except GitError as exc:
            prep.failed[record.id] = not_assessed(f"not assessed: the patch does not apply: {exc}")
            continue
        paths = [f.path for f in record.fix_part.files]
        old = _read_sources(env.base, paths)
        new = _read_sources(workspace, paths)
        prep.targets[record.id] = touched_targets(record.fix_part, old, new)
        # A changed entry of a literal table is not evidence by being run: the whole table runs on every call.
        prep.new_lines[record.id] = {
            fp.new_path: sorted(changed_lines(fp)[1] - table_entry_lines(new.get(fp.new_path, "")))
            for fp in record.fix_part.files
            if fp.new_path
        }
        for fp in record.fix_part.files:
            if fp.old_path:
                removed = changed_lines(fp)[0] - table_entry_lines(old.get(fp.old_path, ""))
                prep.old_lines.setdefault(fp.old_path, set()).update(removed)
        # Whole-module token diffs: CPU work, off the event loop.
        prep.sizes[record.id] = await asyncio.to_thread(semantic_size, old, new)
        prep.shapes[record.id] = await asyncio.to_thread(fix_shape, old, new)
        if await asyncio.to_thread(literal_only, old, new):
            prep.literal.add(record.id)
        prep.workspaces[record.id] = workspace
    return prep


async def _assess_group(env: ReviewEnv, brt: str, members: list[PatchRecord]) -> dict[str, Assessment]:
    """Verdicts for the candidates that share one BRT: each traced against the original, then compared."""
    prep = await _prepare(env, members)
    workspaces, targets, sizes, shapes = prep.workspaces, prep.targets, prep.sizes, prep.shapes
    failed, new_lines, old_lines = prep.failed, prep.new_lines, prep.old_lines
    union = sorted({t for ts in targets.values() for t in ts}, key=lambda t: (t.file, t.qualname))
    if not workspaces:
        return failed
    # The code's own documented examples of the touched functions, read from the base version, and the
    # report's working calls (the only examples a repo without tests may have).
    base_sources = _read_sources(env.base, sorted({t.file for t in union}))
    examples = [
        {"file": path, **example}
        for path, text in base_sources.items()
        for example in documented_examples(text, {t.qualname for t in union if t.file == path})
    ] + list(env.report_examples)
    original_ws = await env.fresh_copy("assess-original")

    async def run_original() -> TraceRun:
        try:
            await apply_patch(original_ws, members[0].test_part.render())
        except GitError as exc:
            return TraceRun(error=f"the test part does not apply: {exc}")
        old_by_file = {f: sorted(ls) for f, ls in old_lines.items()}
        return await _harness_run(env, original_ws, union, brt, old_by_file, examples)

    # The original and every candidate run in their own workspaces: all at once, as the sandbox slots allow.
    before, *runs = await asyncio.gather(
        run_original(),
        *(_harness_run(env, ws, union, brt, new_lines[rid], examples) for rid, ws in workspaces.items()),
    )
    after = dict(zip(workspaces, runs, strict=True))
    # A test that only checks that the reported result changed passes with any change (see CHANGED_ONLY).
    changed_only = CHANGED_ONLY in members[0].test_part.render()
    own = {
        rid: judge(
            before,
            after[rid],
            brt_prefix=brt,
            targets=targets[rid],
            size=sizes[rid],
            changed_only=changed_only,
            **shapes[rid]._asdict(),
        )
        for rid in after
    }
    # A candidate flagged by its own checks is withheld anyway; only the clean ones must agree with each other.
    disagree = disagreements({rid: run for rid, run in after.items() if own[rid].confident}, sizes, prep.literal)
    departs = departures(before, after)
    out = dict(failed)
    for rid in workspaces:
        out[rid] = own[rid]
        if disagree.get(rid) or departs.get(rid):
            out[rid] = judge(
                before,
                after[rid],
                brt_prefix=brt,
                targets=targets[rid],
                others_disagree=disagree.get(rid, []),
                size=sizes[rid],
                changed_only=changed_only,
                **shapes[rid]._asdict(),
                departs=departs.get(rid, []),
            )
        log.info("assessment of %s: %s (%s)", rid, out[rid].verdict, "; ".join(out[rid].reasons))
    return out
