"""The repair agent's tools: schemas the model sees, and their implementations acting through the sandbox."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.chat import ToolCall, int_param, string_param, tool_schema
from agents.localize import is_test_file, localize_in_sandbox, parse_traceback_frames
from agents.reading import IssueFacts
from agents.reproduce import BrtCandidate, synthesize_brts
from agents.tool_output import clean_output
from agents.trajectory import BrtEvidence, FormatError, Submitted, Trajectory
from sandboxes.base import PathOutsideWorkspace, Sandbox, resolve_in_workspace
from sandboxes.environment import TestRun, TestSuite
from sandboxes.pathpolicy import DEFAULT_DENIED, is_denied
from sandboxes.workspace import SCRATCH_DIR, git, tracked_files, workspace_diff

STRATEGIES = ("freeform", "tdd", "tld", "fix-only", "brt-only")
#: Strategies whose patch must carry a test; their `finish` refuses once when the diff has none.
NEEDS_TEST = frozenset({"freeform", "tdd", "tld", "brt-only"})
_VIEW_MAX = 120


_s, _i = string_param, int_param


TOOL_SCHEMAS: list[dict[str, Any]] = [
    tool_schema(
        "search_code",
        "Search the repository's text files for a string or regular expression; returns file:line: text matches.",
        {
            "pattern": _s("Text to look for (a Python regular expression when regex is true)."),
            "path": _s("Optional folder or file to search under, relative to the repository root."),
            "regex": {"type": "boolean", "description": "Treat pattern as a regular expression."},
        },
        ["pattern"],
    ),
    tool_schema(
        "view_file",
        f"Show a window of a file with line numbers (at most {_VIEW_MAX} lines).",
        {
            "path": _s("File path relative to the repository root."),
            "start_line": _i("First line to show, 1-based (default 1)."),
            "end_line": _i("Last line to show, inclusive (default start_line + 80)."),
        },
        ["path"],
    ),
    tool_schema(
        "edit_file",
        "Replace one exact occurrence of old_text with new_text. An empty old_text creates a new file. "
        "Edits that do not match exactly once, or that leave a Python file unparsable, are refused.",
        {
            "path": _s("File path relative to the repository root."),
            "old_text": _s("The exact text to replace, including indentation; empty to create a new file."),
            "new_text": _s("The replacement text."),
        },
        ["path", "old_text", "new_text"],
    ),
    tool_schema(
        "run_tests",
        "Run pytest on a selection of test files or node ids (the whole suite when empty).",
        {"tests": {"type": "array", "items": {"type": "string"}, "description": "Test files or node ids to run."}},
        [],
    ),
    tool_schema(
        "finish",
        "Stop and submit the current changes as the patch.",
        {"summary": _s("One or two sentences: the root cause and what the patch changes.")},
        ["summary"],
    ),
    tool_schema(
        "fault_localization",
        "Rank suspicious statements by spectrum-based fault localization (Ochiai over coverage) using a failing test.",
        {"test": _s("A test file or node id that fails because of the bug.")},
        ["test"],
    ),
    tool_schema(
        "extract_test",
        "Propose a pytest reproduction test built from the code, session or traceback in the bug report. "
        "It is not written to disk; create it with edit_file if it fits.",
        {"index": _i("Which proposal to show, 0 for the best (default 0).")},
        [],
    ),
    tool_schema(
        "express_hypothesis",
        "State a hypothesis about the bug's cause that the next steps will test.",
        {"hypothesis": _s("What you believe is wrong and where.")},
        ["hypothesis"],
    ),
    tool_schema(
        "discard_hypothesis",
        "Drop the current hypothesis because the evidence contradicts it.",
        {"reason": _s("What evidence ruled it out.")},
        ["reason"],
    ),
]
TOOL_NAMES = tuple(t["function"]["name"] for t in TOOL_SCHEMAS)


def _int(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise FormatError(f"`{key}` must be an integer, got {value!r}") from None


def changed_paths(diff: str) -> list[str]:
    """Paths a git diff touches (new side)."""
    return [m.group(1) for m in re.finditer(r"^diff --git a/\S+ b/(\S+)$", diff, re.MULTILINE)]


@dataclass
class Toolbox:
    """Tool state for one trajectory: the sandbox, test runner, policy and the agent's hypotheses."""

    sandbox: Sandbox
    runner: TestSuite
    trajectory: Trajectory
    facts: IssueFacts
    strategy: str = "freeform"
    denied_paths: tuple[str, ...] = DEFAULT_DENIED
    fallback_brt: BrtCandidate | None = None
    test_timeout: float = 120.0
    hypotheses: list[dict[str, str]] = field(default_factory=list)
    guard_fired: bool = False

    @property
    def workspace_files(self) -> list[str]:
        """Repo-relative files in the workspace right now."""
        return tracked_files(self.sandbox.spec.workspace)

    def _path(self, path: Any, *, writing: bool = False) -> str:
        if not isinstance(path, str) or not path.strip():
            raise FormatError("`path` must be a non-empty string")
        try:
            host = resolve_in_workspace(self.sandbox.spec.workspace, path.strip())
        except PathOutsideWorkspace as exc:
            raise FormatError(f"refused: {exc}") from None
        rel = host.relative_to(self.sandbox.spec.workspace.resolve()).as_posix()
        if rel.split("/")[0] in (".git", SCRATCH_DIR):
            raise FormatError(f"refused: {rel} is internal to the bot and git")
        # Both the path as written and where it lands: an edit through a symlink must not reach a workflow.
        if writing and is_denied(path.strip(), self.denied_paths):
            raise FormatError(
                f"refused by policy: {path.strip()} matches a denied path ({', '.join(self.denied_paths)})"
            )
        if writing and is_denied(rel, self.denied_paths):
            raise FormatError(
                f"refused by policy: {path.strip()} resolves to {rel}, a denied path ({', '.join(self.denied_paths)})"
            )
        return rel

    async def call(self, call: ToolCall) -> str:
        """Run one tool call; FormatError for unknown tools or bad arguments; Submitted from finish."""
        handler: Callable[[dict[str, Any]], Awaitable[str]] | None = getattr(self, f"tool_{call.name}", None)
        if call.name not in TOOL_NAMES or handler is None:
            raise FormatError(f"unknown tool {call.name!r}; available: {', '.join(TOOL_NAMES)}")
        return await handler(call.parsed())

    async def tool_search_code(self, args: dict[str, Any]) -> str:
        """Grep-like search over the workspace's text files."""
        pattern, under = args.get("pattern"), str(args.get("path") or "")
        if not isinstance(pattern, str) or not pattern:
            raise FormatError("`pattern` must be a non-empty string")
        try:
            rx = re.compile(pattern if args.get("regex") else re.escape(pattern))
        except re.error as exc:
            raise FormatError(f"bad regular expression: {exc}") from None
        prefix = self._path(under) if under else ""
        hits: list[str] = []
        for rel in self.workspace_files:
            if prefix and rel != prefix and not rel.startswith(prefix.rstrip("/") + "/"):
                continue
            try:
                text = self.sandbox.read_file(rel)
            except (OSError, UnicodeDecodeError):
                continue
            hits += [
                f"{rel}:{n}: {line.strip()[:200]}" for n, line in enumerate(text.splitlines(), 1) if rx.search(line)
            ]
        if not hits:
            return f"no matches for {pattern!r}"
        more = f"\n[… {len(hits) - 40} more matches]" if len(hits) > 40 else ""
        return "\n".join(hits[:40]) + more

    async def tool_view_file(self, args: dict[str, Any]) -> str:
        """A numbered window of one file."""
        rel = self._path(args.get("path"))
        try:
            lines = self.sandbox.read_file(rel).splitlines()
        except FileNotFoundError:
            raise FormatError(f"{rel} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise FormatError(f"cannot read {rel}: {exc}") from None
        start = max(1, _int(args, "start_line", 1))
        end = min(len(lines), _int(args, "end_line", start + 80), start + _VIEW_MAX - 1)
        body = "\n".join(f"{n:5d}  {lines[n - 1]}" for n in range(start, end + 1))
        return f"{rel} lines {start}-{end} of {len(lines)}\n{body}"

    async def tool_edit_file(self, args: dict[str, Any]) -> str:
        """Exact-match replace (or create); refuses ambiguous, missing or syntax-breaking edits."""
        rel = self._path(args.get("path"), writing=True)
        old, new = args.get("old_text"), args.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str):
            raise FormatError("`old_text` and `new_text` must be strings")
        try:
            current: str | None = self.sandbox.read_file(rel)
        except FileNotFoundError:
            current = None
        except (OSError, UnicodeDecodeError) as exc:
            raise FormatError(f"refused: cannot edit {rel} as text ({type(exc).__name__})") from None
        if old == "":
            if current is not None and current.strip():
                raise FormatError(f"refused: {rel} exists; give the exact old_text to replace")
            updated = new
        else:
            if current is None:
                raise FormatError(f"refused: {rel} does not exist (use an empty old_text to create it)")
            count = current.count(old)
            if count != 1:
                where = "does not occur" if count == 0 else f"occurs {count} times"
                raise FormatError(f"refused: old_text {where} in {rel}; view the file and copy the exact text")
            updated = current.replace(old, new, 1)
        if rel.endswith(".py"):
            try:
                ast.parse(updated, filename=rel)
            except SyntaxError as exc:
                raise FormatError(
                    f"refused: the edit breaks Python syntax in {rel} line {exc.lineno}: {exc.msg}"
                ) from None
        self.sandbox.write_file(rel, updated)
        return f"edited {rel}: {old.count(chr(10)) + 1 if old else 0} line(s) replaced by {new.count(chr(10)) + 1}"

    async def _run(self, selection: Sequence[str]) -> TestRun:
        return await self.runner.run(self.sandbox, list(selection), timeout=self.test_timeout)

    async def tool_run_tests(self, args: dict[str, Any]) -> str:
        """Run a test selection; the verdict is remembered for the smell reviewer."""
        tests = args.get("tests") or []
        if isinstance(tests, str):
            tests = [tests]
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise FormatError("`tests` must be a list of strings")
        for t in tests:
            self._path(t.split("::")[0])
        run = await self._run(tests)
        self.trajectory.last_test_passed = run.all_passed
        s = run.summary()
        verdict = "ALL PASSED" if run.all_passed else ("NOT COLLECTED" if not run.collected else "FAILURES")
        head = f"{verdict}: {s['passed']} passed, {s['failed']} failed, {s['error']} errors"
        return head + ("  (timed out)" if run.result.timed_out else "") + "\n" + clean_output(run.result.output)

    async def tool_fault_localization(self, args: dict[str, Any]) -> str:
        """SBFL with the classic agent's Ochiai ranking, merged with traceback frames."""
        test = args.get("test")
        if not isinstance(test, str) or not test:
            raise FormatError("`test` must name a failing test file or node id")
        self._path(test.split("::")[0])
        before = await self._run([test])
        frames = parse_traceback_frames(before.result.output)
        locs = await localize_in_sandbox(self.sandbox, self.runner, test.split("::")[0], self.workspace_files, frames)
        if not locs:
            return "no suspicious statements found (does the test fail, and does it execute repository code?)"
        lines = []
        for loc in locs[:10]:
            try:
                code = self.sandbox.read_file(loc.file).splitlines()[loc.line - 1].strip()
            except (OSError, IndexError, UnicodeDecodeError):
                code = ""
            lines.append(f"{loc.score:.3f}  {loc.file}:{loc.line}  {code[:120]}")
        return "most suspicious first (score, location, code):\n" + "\n".join(lines)

    async def tool_extract_test(self, args: dict[str, Any]) -> str:
        """A reproduction test synthesized from the report (not written)."""
        cands = synthesize_brts(self.facts, self.workspace_files)
        if not cands:
            return "the report has no code, session or traceback a test can be built from; write one by hand"
        idx = min(max(0, _int(args, "index", 0)), len(cands) - 1)
        cand = cands[idx]
        return f"proposal {idx + 1} of {len(cands)} for {cand.path} ({cand.description}):\n{cand.source}"

    async def tool_express_hypothesis(self, args: dict[str, Any]) -> str:
        """Record a hypothesis; the newest one is current."""
        text = args.get("hypothesis")
        if not isinstance(text, str) or not text.strip():
            raise FormatError("`hypothesis` must be a non-empty string")
        self.hypotheses.append({"hypothesis": text.strip(), "status": "open"})
        return f"hypothesis {len(self.hypotheses)} recorded; test it, then fix or discard it"

    async def tool_discard_hypothesis(self, args: dict[str, Any]) -> str:
        """Mark the current hypothesis as ruled out."""
        open_ = [h for h in self.hypotheses if h["status"] == "open"]
        if not open_:
            raise FormatError("there is no open hypothesis to discard")
        open_[-1].update(status="discarded", reason=str(args.get("reason") or ""))
        ruled_out = "; ".join(h["hypothesis"][:80] for h in self.hypotheses if h["status"] == "discarded")
        return f"discarded. Ruled out so far: {ruled_out}. Look for a different cause."

    async def tool_finish(self, args: dict[str, Any]) -> str:
        """Submit, after the cleanup guard: a strategy that needs a test is reminded once if the diff has none."""
        summary = str(args.get("summary") or "").strip()[:500]
        diff = await workspace_diff(self.sandbox.spec.workspace)
        paths = changed_paths(diff)
        tests = [p for p in paths if p.endswith(".py") and is_test_file(p) and self._defines_test(p)]
        if self.strategy in NEEDS_TEST and not tests and not self.guard_fired:
            self.guard_fired = True
            await self.trajectory.step("cleanup_guard", changed=paths)
            return (
                "Not finished: your changes contain no test. The reproduction test is part of the deliverable, "
                "not a temporary file: restore or write it (it must fail without the fix and pass with it), "
                "then call finish again."
            )
        if not tests and self.fallback_brt is not None and self.strategy == "fix-only":
            self.sandbox.write_file(self.fallback_brt.path, self.fallback_brt.source)
            await self.trajectory.step("attach_synthesized_brt", path=self.fallback_brt.path)
            tests = [self.fallback_brt.path]
            diff = await workspace_diff(self.sandbox.spec.workspace)
        if not diff.strip():
            raise Submitted("finished with no changes")
        self.trajectory.diff = diff
        self.trajectory.brt = await self._evidence(tests, paths) if tests else None
        self.trajectory.status = "fixed" if self.trajectory.brt and self.trajectory.brt.passes_after else "not_fixed"
        raise Submitted(summary or "finished")

    def _defines_test(self, rel: str) -> bool:
        """An emptied or deleted test file does not count as a test in the patch."""
        try:
            return "def test" in self.sandbox.read_file(rel)
        except (OSError, UnicodeDecodeError):
            return False

    async def _evidence(self, tests: list[str], paths: list[str]) -> BrtEvidence:
        """Run the patch's tests with the fix files reverted (before) and restored (after)."""
        ws = self.sandbox.spec.workspace
        fixes = {p: self.sandbox.read_file(p) for p in paths if p not in tests and (ws / p).is_file()}
        for p in fixes:
            shown = await git(ws, "show", f"HEAD:{p}", check=False)
            if shown.code == 0:
                self.sandbox.write_file(p, shown.stdout)
            else:
                (ws / p).unlink(missing_ok=True)  # a file the patch adds does not exist before it
        try:
            before = await self._run(tests)
        finally:
            for p, text in fixes.items():
                self.sandbox.write_file(p, text)
        after = await self._run(tests)
        if self.trajectory.last_test_passed is None:
            self.trajectory.last_test_passed = after.all_passed
        return BrtEvidence(
            path=tests[0],
            source=self.sandbox.read_file(tests[0]),
            symptom="reported failure",
            fails_before=bool(before.failed_ids) or not before.collected,
            before_output=clean_output(before.result.output),
            passes_after=after.all_passed,
            after_output=clean_output(after.result.output),
            description=json.dumps(tests),
        )
