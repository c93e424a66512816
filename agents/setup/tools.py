"""The setup agent's tools: look at the repo, run commands in the sandbox, ask for deps, propose a spec."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.chat import ToolCall, string_list_param, string_param, tool_schema
from agents.setup.shell import REPORT_FORMATS, SetupShell, spec_problem
from agents.tool_output import clean_output
from agents.trajectory import FormatError, Submitted
from sandboxes.base import PathOutsideWorkspace, resolve_in_workspace
from sandboxes.environment import EnvironmentError_
from sandboxes.envspec import BASE_TEST_DEPS, EnvironmentSpec

_VIEW_MAX = 150
_LIST_MAX = 300
#: A requirement the host may resolve: a name with optional extras, version and marker; no URL, path or option.
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*(\[[A-Za-z0-9._,\- ]*\])?\s*([<>=!~;].*)?$")
_SKIP_DIRS = {".git", ".reprobot", "node_modules", "__pycache__", ".venv", "venv", ".tox"}


class SpecAccepted(Submitted):
    """The proposed spec's tests ran; the loop ends with it."""

    def __init__(self, spec: EnvironmentSpec, summary: str) -> None:
        super().__init__(summary)
        self.spec = spec


class DeadEnd(Exception):
    """The model gave up on this attempt; the agent restarts with a fresh conversation."""


_s, _list = string_param, string_list_param


SETUP_TOOLS: list[dict[str, Any]] = [
    tool_schema(
        "list_files",
        "List the repository's files under a folder (the whole repository when empty).",
        {"path": _s("Folder relative to the repository root; empty for the root.")},
        [],
    ),
    tool_schema(
        "read_file",
        f"Show a window of a text file with line numbers (at most {_VIEW_MAX} lines).",
        {
            "path": _s("File path relative to the repository root."),
            "start_line": {"type": "integer", "description": "First line, 1-based (default 1)."},
        },
        ["path"],
    ),
    tool_schema(
        "run_command",
        "Run a shell command in the repository root inside the sandbox (no network). Python packages named "
        "with install_deps are importable there. Returns the exit code and the cleaned output.",
        {"command": _s("The shell command, run with sh -c.")},
        ["command"],
    ),
    tool_schema(
        "install_deps",
        "Install Python requirements (PyPI names with optional versions) into the environment the sandbox "
        "mounts. They are resolved outside the sandbox; this replaces the previous list.",
        {"packages": _list("Requirement strings such as 'pytest' or 'requests>=2'.")},
        ["packages"],
    ),
    tool_schema(
        "write_spec",
        "Propose the final setup. It is checked by running the test command once in a fresh sandbox; it is "
        "accepted only if tests ran and their results could be read.",
        {
            "test_command": _s("The command that runs the whole test suite from the repository root."),
            "report_format": _s(f"How results are read: one of {', '.join(REPORT_FORMATS)}."),
            "language": _s("The project's main language, e.g. python, shell, node."),
            "install_steps": _list("Commands run in the sandbox before the tests (no network)."),
            "deps": _list("Python requirements for the environment (default: those given to install_deps)."),
            "report_paths": _list("Files the test command writes its report to (globs), if not its stdout."),
            "per_test_template": _s("Command running one test, with {test_id} where its id goes."),
        },
        ["test_command", "report_format"],
    ),
    tool_schema(
        "give_up",
        "Declare this attempt a dead end. The setup starts over with a fresh conversation that is told why.",
        {"reason": _s("What was tried and why it cannot work.")},
        ["reason"],
    ),
]
SETUP_TOOL_NAMES = tuple(t["function"]["name"] for t in SETUP_TOOLS)


def repo_files(root: Path, under: str = "", limit: int = _LIST_MAX) -> list[str]:
    """Repo-relative files below `under`, sorted, skipping VCS and build clutter."""
    base = root / under if under else root
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            out.append((Path(dirpath) / name).relative_to(root).as_posix())
            if len(out) >= limit:
                return out
    return out


def _strings(args: dict[str, Any], key: str) -> tuple[str, ...]:
    value = args.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FormatError(f"`{key}` must be a list of strings")
    return tuple(v.strip() for v in value if v.strip())


def check_requirements(packages: tuple[str, ...]) -> tuple[str, ...]:
    """Requirement strings the host may resolve; FormatError names the first one that is not plain."""
    for pkg in packages:
        if not _REQUIREMENT.match(pkg) or "://" in pkg:
            raise FormatError(f"refused requirement {pkg!r}: give a PyPI name with an optional version, no URL or path")
    return packages


@dataclass
class SetupTools:
    """Tool state of one setup attempt: the shell, the deps asked for, and what was tried."""

    shell: SetupShell
    language: str = "shell"
    deps: tuple[str, ...] = ()
    tried: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path:
        """The workspace on the host (read only by these tools; commands run in the sandbox)."""
        return self.shell.workspace

    async def call(self, call: ToolCall) -> str:
        """Run one tool call; FormatError for unknown tools or bad arguments; SpecAccepted or DeadEnd to stop."""
        handler: Callable[[dict[str, Any]], Awaitable[str]] | None = getattr(self, f"tool_{call.name}", None)
        if call.name not in SETUP_TOOL_NAMES or handler is None:
            raise FormatError(f"unknown tool {call.name!r}; available: {', '.join(SETUP_TOOL_NAMES)}")
        return await handler(call.parsed())

    def _path(self, value: Any, *, allow_root: bool = False) -> Path:
        if not isinstance(value, str) or (not value.strip() and not allow_root):
            raise FormatError("`path` must be a non-empty string")
        try:
            return resolve_in_workspace(self.root, value.strip() or ".")
        except PathOutsideWorkspace as exc:
            raise FormatError(f"refused: {exc}") from None

    async def tool_list_files(self, args: dict[str, Any]) -> str:
        """Files under a folder."""
        folder = self._path(args.get("path") or "", allow_root=True)
        if not folder.is_dir():
            raise FormatError(f"{args.get('path')!r} is not a folder")
        rel = folder.relative_to(self.root.resolve()).as_posix()
        files = repo_files(self.root, "" if rel == "." else rel)
        more = "\n[… more files not shown]" if len(files) >= _LIST_MAX else ""
        return "\n".join(files) + more if files else "(no files)"

    async def tool_read_file(self, args: dict[str, Any]) -> str:
        """A numbered window of one file."""
        path = self._path(args.get("path"))
        try:
            lines = path.read_text(errors="replace").splitlines()
        except (FileNotFoundError, IsADirectoryError):
            raise FormatError(f"{args.get('path')} is not a file") from None
        try:
            start = max(1, int(args.get("start_line") or 1))
        except (TypeError, ValueError):
            raise FormatError("`start_line` must be an integer") from None
        end = min(len(lines), start + _VIEW_MAX - 1)
        body = "\n".join(f"{n:5d}  {lines[n - 1]}" for n in range(start, end + 1))
        return f"{args.get('path')} lines {start}-{end} of {len(lines)}\n{body}"

    async def tool_run_command(self, args: dict[str, Any]) -> str:
        """One command in the sandbox; the output is cleaned and cut."""
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise FormatError("`command` must be a non-empty string")
        try:
            result = await self.shell.run(command, self.deps)
        except EnvironmentError_ as exc:
            return f"the environment for {list(self.deps)} could not be built: {exc}"
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        self.tried.append(f"`{command[:200]}` -> {status}")
        return f"{status}\n{clean_output(result.output) or '(no output)'}"

    async def tool_install_deps(self, args: dict[str, Any]) -> str:
        """Build the host-side environment with these requirements and make it the one commands see."""
        packages = check_requirements(_strings(args, "packages"))
        probe = EnvironmentSpec(language="probe", deps=packages, test_command=(), report_format="exit-code")
        try:
            env = await self.shell.environment(probe)
        except EnvironmentError_ as exc:
            self.tried.append(f"install_deps {list(packages)} failed")
            return f"installing {list(packages)} failed: {clean_output(str(exc), head=10, tail=15)}"
        self.deps = packages
        return f"installed {len(packages)} requirement(s){' (cached)' if env.cache_hit else ''}: {', '.join(packages)}"

    def _spec(self, args: dict[str, Any]) -> EnvironmentSpec:
        command = args.get("test_command")
        if not isinstance(command, str) or not command.strip():
            raise FormatError("`test_command` must be a non-empty string")
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise FormatError(f"`test_command` is not valid shell syntax: {exc}") from None
        fmt = args.get("report_format")
        if fmt not in REPORT_FORMATS:
            raise FormatError(f"`report_format` must be one of {', '.join(REPORT_FORMATS)}, got {fmt!r}")
        deps = check_requirements(_strings(args, "deps")) if args.get("deps") is not None else self.deps
        if fmt == "junit-xml":
            deps = tuple(dict.fromkeys((*BASE_TEST_DEPS, *deps)))
        template = args.get("per_test_template") or command
        if not isinstance(template, str):
            raise FormatError("`per_test_template` must be a string")
        language = args.get("language") or self.language
        return EnvironmentSpec(
            language=str(language),
            deps=deps,
            install_steps=_strings(args, "install_steps"),
            test_command=argv,
            per_test_template=template,
            report_format=fmt,
            report_paths=_strings(args, "report_paths"),
            sources=("setup-agent",),
        )

    async def tool_write_spec(self, args: dict[str, Any]) -> str:
        """Validate a proposed spec by running its tests once; SpecAccepted when they ran."""
        spec = self._spec(args)
        try:
            run = await self.shell.try_spec(spec)
        except EnvironmentError_ as exc:
            self.tried.append(f"spec `{' '.join(spec.test_command)}` rejected: environment failed")
            return f"REJECTED: its environment could not be built: {clean_output(str(exc), head=10, tail=15)}"
        problem = spec_problem(run)
        if problem is not None:
            self.tried.append(f"spec `{' '.join(spec.test_command)}` ({spec.report_format}) rejected: {problem}")
            return f"REJECTED: {problem}.\n{clean_output(run.result.output) or '(no output)'}"
        counts = run.summary()
        raise SpecAccepted(spec, f"accepted: {len(run.tests)} test result(s) {counts}")

    async def tool_give_up(self, args: dict[str, Any]) -> str:
        """End this attempt."""
        reason = str(args.get("reason") or "").strip() or "no reason given"
        raise DeadEnd(reason[:500])
