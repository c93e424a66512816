"""BRTs for reports that reproduce the bug by running a command: the project's own tool, or the user's script.

The pattern: a shell block shows the user running the project's command (`$ tool args`, `$ python -m pkg
args`, or `$ python script.py args` with the script given in the report) and what it printed: the error
("tool: error: AttributeError: ...") or wrong output. The test writes the files the report gives by name
(the script, the files `cat` showed), runs the same command with the same arguments in a scratch folder,
and fails while it still shows the reported exception, or prints exactly the reported output. Both are weak
tests: they assert the reported failure is gone, not what the command prints instead.

A command is the project's when its name is one of the project's console scripts (pyproject's
[project.scripts], setup.cfg's or setup.py's console_scripts), a package of the repo with a __main__.py, or
the repo's only such package. A console script runs through its entry point (`module:attr`), so an
installed script is not needed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from pathlib import PurePosixPath

from agents.reading import IssueFacts, console_runs, is_elision
from agents.reproduce.types import BrtCandidate, Symptom

#: Shell syntax a plain argv cannot express: substitution, pipes, redirection, chaining, variables.
_SHELL_SYNTAX = re.compile(r"\$\(|`|\||[<>]|&&|;|\$\{?\w")
_PYTHON = re.compile(r"^python(?:\d(?:\.\d+)?)?$")
#: Tools that are not the project under test even when a report runs them.
_OTHER_TOOLS = frozenset({"pip", "pip3", "git", "cd", "ls", "cat", "echo", "export", "source", "sudo", "curl"})
TIMEOUT = 30


def console_brts(
    facts: IssueFacts, repo_files: Sequence[str], path: str, scripts: Mapping[str, str] | None = None
) -> list[BrtCandidate]:
    """Weak BRTs that rerun each reported command of the project and fail while it shows the reported symptom.

    `scripts` maps the project's console script names to their entry points (`module:attr`).
    """
    exc = facts.exception_type.rsplit(".", 1)[-1] if facts.exception_type else None
    files = dict(facts.named_files)
    out: list[BrtCandidate] = []
    seen: set[tuple[str, ...]] = set()
    commands = project_commands(facts, repo_files, scripts)
    corrected = None if exc else _corrected_output(facts.expected, [output for _, _, output in commands])
    for n, (command, argv, output) in enumerate(commands):
        if tuple(argv) in seen:
            continue
        seen.add(tuple(argv))
        needed = {name: files[name] for name in _named_in(argv, files)}
        if exc:
            out.append(_render(facts, command, argv, needed, path, exc=exc))
        elif output.strip():
            if n == corrected and facts.expected is not None:
                out.append(_render(facts, command, argv, needed, path, reported=output, expected=facts.expected))
            out.append(_render(facts, command, argv, needed, path, reported=output))
    return out


def _corrected_output(expected: str | None, outputs: Sequence[str]) -> int | None:
    """Which command's output the expected text corrects, if one clearly does (its index).

    The pattern: a shell session shows a command and its output, and the prose says what part of it should
    read instead (`alt="dogs &amp; cats"` for the shown `alt="dogs &amp;amp; cats"`). The expected text is
    absent from that output, yet most of it is found there, in order.
    """
    if not expected or "\n" in expected.strip() or len(expected.strip()) < 3:
        return None
    best, best_cover = None, 0.8
    for n, output in enumerate(outputs):
        if not output.strip() or expected in output:
            continue
        blocks = SequenceMatcher(None, expected, output, autojunk=False).get_matching_blocks()
        cover = sum(b.size for b in blocks) / len(expected)
        if cover > best_cover:
            best, best_cover = n, cover
    return best


def project_commands(
    facts: IssueFacts, repo_files: Sequence[str], scripts: Mapping[str, str] | None = None, *, guess: bool = True
) -> list[tuple[str, list[str], str]]:
    """(command as typed, argv after `python`, what it printed) for each command of the report's shell
    sessions that runs the project's code (see command_argv), in order. Without `guess`, an unknown command
    name is never taken for the repo's only runnable package."""
    packages = _runnable_packages(repo_files)
    modules = _top_modules(repo_files)
    reported = {name for name, _ in facts.named_files if name.endswith(".py")}
    found: list[tuple[str, list[str], str]] = []
    for block in facts.code_blocks:
        if block.kind != "console":
            continue
        for command, lines in console_runs(block.code):
            argv = command_argv(command, packages, scripts, reported, modules, guess=guess) if command else None
            if command and argv is not None:
                found.append((command.strip(), argv, "\n".join(lines)))
    return found


def commands_with_args(facts: IssueFacts) -> set[str]:
    """Scripts the report runs with arguments (`python tool.py sync --help`): the names of those scripts."""
    found: set[str] = set()
    for block in facts.code_blocks:
        if block.kind != "console":
            continue
        for command, _ in console_runs(block.code):
            try:
                words = shlex.split(command or "")
            except ValueError:
                continue
            if len(words) >= 3 and _PYTHON.match(PurePosixPath(words[0]).name) and words[1].endswith(".py"):
                found.add(words[1].lstrip("./"))
    return found


def command_argv(
    command: str,
    packages: Sequence[str],
    scripts: Mapping[str, str] | None = None,
    reported_scripts: Sequence[str] | set[str] = (),
    modules: Sequence[str] = (),
    *,
    guess: bool = True,
) -> list[str] | None:
    """The argv after `python` that runs a reported command in-tree, or None when it cannot be run as is.

    `python -m pkg ...` runs as written when pkg is a package or module of the repo; `python script.py ...`
    when the report gives script.py; `tool ...` through its console script entry point when the project
    declares one named `tool`, else as `python -m tool` when the repo has a package `tool` with a
    __main__.py, else (with `guess`) as the repo's only such package.
    """
    if _SHELL_SYNTAX.search(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words:
        return None
    head, args = PurePosixPath(words[0]).name, words[1:]
    if _PYTHON.match(head):
        if len(args) >= 2 and args[0] == "-m" and args[1].split(".")[0] in (*packages, *modules):
            return args
        if args and args[0] in reported_scripts:
            return args
        return None
    if head in _OTHER_TOOLS or not re.fullmatch(r"[\w.-]+", head):
        return None
    if scripts and head in scripts:
        return ["-c", entry_point_launcher(head, scripts[head]), *args]
    module = head.replace("-", "_")
    if module in packages:
        return ["-m", module, *args]
    if guess and len(packages) == 1 and not scripts:
        return ["-m", packages[0], *args]
    return None


def entry_point_launcher(name: str, target: str) -> str:
    """`python -c` code that runs a console script's entry point (`module:attr.sub`) as `name` would."""
    module, _, attr = target.partition(":")
    first, _, rest = attr.partition(".")
    call = f"_entry.{rest}()" if rest else "_entry()"
    return f"import sys; sys.argv[0] = {name!r}; from {module} import {first} as _entry; sys.exit({call})"


def _named_in(argv: Sequence[str], files: Mapping[str, str]) -> list[str]:
    """Report files a command uses: named as an argument (also as `--opt=name`)."""
    words = {w.split("=", 1)[-1] for w in argv} | set(argv)
    return [name for name in files if name in words]


def _runnable_packages(repo_files: Sequence[str]) -> list[str]:
    """Top-level packages (also under src/) that `python -m` can run: they have a __main__.py."""
    found: list[str] = []
    for f in repo_files:
        parts = PurePosixPath(f).parts
        if parts and parts[0] == "src":
            parts = parts[1:]
        if len(parts) == 2 and parts[1] == "__main__.py" and parts[0].isidentifier() and parts[0] not in found:
            found.append(parts[0])
    return sorted(found)


def _top_modules(repo_files: Sequence[str]) -> list[str]:
    """Top-level single-file modules (also under src/): `python -m mod` runs one the user names."""
    out: list[str] = []
    for f in repo_files:
        parts = PurePosixPath(f).parts
        parts = parts[1:] if parts and parts[0] == "src" else parts
        if len(parts) == 1 and parts[0].endswith(".py") and parts[0][:-3].isidentifier():
            out.append(parts[0][:-3])
    return out


def output_pattern(reported: str) -> str:
    """A regular expression for printed output as the report shows it: lines compared without trailing
    spaces, and a line the user cut to "..." standing for any lines."""
    lines = [line.rstrip() for line in reported.strip("\n").split("\n")]
    return "\n".join("(?:.*)" if is_elision(line) else re.escape(line) for line in lines)


def _render(
    facts: IssueFacts,
    command: str,
    argv: list[str],
    files: Mapping[str, str],
    path: str,
    *,
    exc: str | None = None,
    reported: str | None = None,
    expected: str | None = None,
) -> BrtCandidate:
    module = argv[1] if argv[:1] == ["-m"] else PurePosixPath(argv[0]).stem if argv[0] != "-c" else command.split()[0]
    func = "test_" + re.sub(r"\W+", "_", PurePosixPath(module).name).strip("_").lower() + "_command_reported_bug"
    shown = command.replace("`", "'").replace("\\", "/")
    title = (facts.title or "untitled issue").replace("\\", "\\\\").replace('"""', "'''")
    symptom = f"fail with {exc}" if exc else "print what the report shows"
    lines = [
        f'"""Reproduces the reported bug: {title}',
        "",
        "Generated by reprobot from the issue text; it fails while the bug is present.",
        '"""',
        "",
        "import os",
        "import re",
        "import subprocess",
        "import sys",
        "",
        "import pytest",
        "",
        "",
        f"@pytest.mark.timeout({TIMEOUT + 5})",
        f"def {func}(tmp_path):",
        f'    """`{shown}` should not {symptom}, as the report shows it does."""',
        "    # Run in a scratch folder with a scratch HOME: the command may write files or read user config.",
        '    env = {**os.environ, "HOME": str(tmp_path)}',
    ]
    if files:
        lines += [
            "    # The files the report gives by name (its script, what `cat` showed), as the command reads them.",
            f"    for name, text in {dict(files)!r}.items():",
            "        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)",
            "        (tmp_path / name).write_text(text)",
        ]
    lines += [
        "    proc = subprocess.run(",
        f"        [sys.executable, *{argv!r}],",
        "        cwd=tmp_path,",
        "        env=env,",
        "        capture_output=True,",
        "        text=True,",
        f"        timeout={TIMEOUT},",
        "    )",
        "    output = proc.stdout + proc.stderr",
    ]
    if exc:
        lines += [f"    if {exc!r} in output:", f'        pytest.fail(f"still raises {exc}: {{output[-2000:]}}")', ""]
        what = f"no longer fails with {exc}"
    else:
        assert reported is not None
        lines += [
            f"    reported = {reported.strip(chr(10))!r}",
            "    runs = (proc.stdout, output, proc.stderr + proc.stdout)",
            "    shown = ['\\n'.join(x.rstrip() for x in run.strip('\\n').split('\\n')) for run in runs]",
            f"    same = any(re.fullmatch({output_pattern(reported)!r}, run, re.S) for run in shown)",
            '    assert not same, f"still {reported!r}, as in the report"',
        ]
        if expected is not None:
            lines += [
                f"    wanted = {expected!r}",
                '    assert wanted in output, f"expected {wanted!r} in {output[-2000:]!r}"',
            ]
        lines += [""]
        what = "no longer prints the reported output"
        what += f" and prints {expected!r}" if expected is not None else ""
    description = f"the reported command: asserts `{shown}` {what}" + ("" if expected is not None else " (weak)")
    symptom_kind: Symptom = "exception" if exc else "wrong_value"
    return BrtCandidate(path, "\n".join(lines), symptom_kind, None, func, description, reported_actual=reported)
